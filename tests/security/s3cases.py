"""Requests for every operation of the S3 gateway, signed one of the ways clients sign them, for the
fuzzer (test_fuzz_s3.py): what each touches (seeded keys, keys it created, odd keys), the operation's
own odd inputs (ranges, conditions, XML bodies, aws-chunked framing, multipart sequences), and for each
whether it must be refused whatever the server's choices."""
import datetime
import time
from collections import Counter
from dataclasses import dataclass
from email.utils import formatdate
from xml.sax.saxutils import escape

from security.s3wire import Request, Signer, checksum_b64, crc32_b64, encode_path, md5_b64
from security.util import ADMIN_KEY, ADMIN_SECRET, MIB

BUCKETS = ["fuzz", "fuzz2"]
SEEDED = ["main/seed/a.txt", "main/seed/b.bin", "main/seed/dir/c.txt", "main/seed/é 日本.txt", "main/seed/sp ace+plus",
          "dev/seed/a.txt", "dev/seed/only-dev"]

ODD_PATHS = [
    "..", "../x", "a/../b", "./a", "a/./b", "//", "a//b", "/lead", "trail/", "a/b/", ".", "...", "a\\b", "..\\x",
    "%", "%2e%2e/x", "%zz", "?", "#frag", "a?b=c", "sp ace", "tab\tx", "nul\x00x", "nl\nx", "cr\rx", "del\x7f",
    "é", "日本語/キー", "🙂/🚀", "e\u0301", "\u202eevil", "\ufeffbom", "\uffff", "a\u0000b", "x" * 1024, "y" * 1025,
    "z/" * 400, "é" * 600, "-", "_lakefs/dummy", "data/x", "main", "seed/a.txt/..", "seed/a.txt/",
]
ODD_BYTES = [b"\xff\xfe", b"\xc3\x28", b"\xed\xa0\x80", b"\xe2\x82", b"\xf0\x9f\x98", b"ok\x80\x80"]
REFS = ["main", "main", "main", "dev", "nope", "main~1", "main@", "HEAD", "..", "", "v1.0", "a" * 300, "日本"]
RANGES = ["bytes=0-0", "bytes=0-4", "bytes=5-2", "bytes=-0", "bytes=-5", "bytes=0-", "bytes=3-", "bytes=999999999-",
          "bytes=-99999999999999999999", "bytes=a-b", "bytes=0-1,2-3", "bytes=", "bytes=-", "items=0-1",
          "bytes=18446744073709551615-18446744073709551616", "bytes= 1 - 2", "bytes=1-2 ", "bytes=--1", "bytes=0--1",
          "bytes=9223372036854775807-", "bytes=0-9223372036854775807", "bytes=1-0", "", "bytes=0x1-0x2"]
DATES = ["", "garbage", "20240101", "20240101T000000", "2024-01-01T00:00:00Z", "99999999T999999Z",
         "20241345T256161Z", "19700101T000000Z", "30000101T000000Z", "20240101T000000Zjunk", "\u00e9" * 8]
AMZ_HEADERS = [("x-amz-copy-source", "fuzz2/main/seed/x"), ("x-amz-meta-owner", "mallory"), ("x-amz-acl", "public-read"),
               ("x-amz-tagging", "a=b"), ("x-amz-server-side-encryption", "AES256"),
               ("x-amz-website-redirect-location", "/elsewhere"), ("x-amz-metadata-directive", "REPLACE"),
               ("X-Amz-Copy-Source", "/fuzz/main/seed/a.txt")]
PLAIN_HEADERS = [("X-Fuzz", "1"), ("User-Agent", "fuzzer"), ("Accept", "*/*"), ("Cache-Control", "no-cache"),
                 ("Accept-Encoding", "identity")]
METHODS = ["GET", "HEAD", "PUT", "POST", "DELETE"]
SUBRESOURCES = ["acl", "tagging", "policy", "lifecycle", "cors", "versions", "select", "restore", "website",
                "uploads", "delete", "location", "versioning", "attributes", "object-lock", "notification"]


@dataclass
class Case:
    label: str
    wired: object
    write: bool
    must_refuse: bool


def flip_char(s, rng, alphabet="0123456789abcdef"):
    if not s:
        return "0"
    i = rng.randrange(len(s))
    c = rng.choice([a for a in alphabet if a != s[i]])
    return s[:i] + c + s[i + 1:]


class S3Fuzzer:
    def __init__(self, server, nobody, rng):
        self.server, self.rng = server, rng
        host = f"127.0.0.1:{server.port}"
        self.admin = Signer(host, ADMIN_KEY, ADMIN_SECRET)
        self.nobody = Signer(host, *nobody)
        self.stranger = Signer(host, "AKIAUNKNOWNFUZZKEY00", "not-a-secret-of-anyone")
        self.created = []          # keys (bucket, key) written by accepted requests
        self.uploads = []          # live multipart uploads: [bucket, key, upload id, {part: etag}]
        self.ended_uploads = []    # completed or aborted
        self.findings = []
        self.stats = Counter()

    # --- what to touch ------------------------------------------------------------------------------------

    def odd_path(self):
        rng = self.rng
        r = rng.random()
        if r < 0.45:
            return rng.choice(ODD_PATHS)
        if r < 0.6:
            return rng.choice(ODD_BYTES) + rng.choice([b"", b"/x", b".txt"])
        if r < 0.8:
            return "".join(chr(rng.choice([rng.randrange(0x20, 0x7f), rng.randrange(0xa0, 0x2fff),
                                            rng.randrange(0x1f300, 0x1f6ff)])) for _ in range(rng.randrange(1, 40)))
        return "/".join(rng.choice(["a", "..", ".", "", "b", "%2F"]) for _ in range(rng.randrange(1, 8)))

    def key(self, for_write=False):
        """(bucket, key as str or bytes)."""
        rng = self.rng
        r = rng.random()
        if not for_write and r < 0.45:
            return "fuzz", rng.choice(SEEDED)
        if r < 0.6 and self.created:
            return rng.choice(self.created)
        if r < 0.8:
            return "fuzz", f"{rng.choice(['main', 'dev'])}/fz/{rng.randrange(50)}"
        ref, path = rng.choice(REFS), self.odd_path()
        if isinstance(path, bytes):
            return rng.choice(BUCKETS), ref.encode() + b"/" + path
        return rng.choice(BUCKETS + ["nosuchbucket", "UPPER", "..", "a", "x" * 70]), f"{ref}/{path}"

    def path(self, bucket, key):
        return encode_path(bucket, key)

    # --- operations ---------------------------------------------------------------------------------------

    def op_get(self):
        rng = self.rng
        b, k = self.key()
        headers, query = {}, []
        if rng.random() < 0.5:
            headers["Range"] = rng.choice(RANGES)
        if rng.random() < 0.2:
            headers[rng.choice(["If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since"])] = \
                rng.choice(['"abc"', "*", "garbage", formatdate(usegmt=True), "Thu, 01 Jan 1970 00:00:00 GMT",
                            "Fri, 31 Dec 9999 23:59:59 GMT", ""])
        if rng.random() < 0.2:
            query.append((rng.choice(["response-content-type", "response-content-disposition",
                                      "response-cache-control", "response-expires", "partNumber", "versionId"]),
                          rng.choice(["text/html", "attachment; filename=\"x\"", "1", "0", "-1", "\u00e9", ""])))
        return Request(rng.choice(["GET", "GET", "HEAD"]), self.path(b, k), query, headers), False, False

    def op_put(self):
        rng = self.rng
        b, k = self.key(for_write=True)
        body = rng.randbytes(rng.choice([0, 1, 10, 100, 5000]))
        headers, refuse = {}, False
        r = rng.random()
        if r < 0.15:
            headers["Content-MD5"] = md5_b64(body)
        elif r < 0.25:
            headers["Content-MD5"] = rng.choice([md5_b64(body + b"x"), "garbage", "", "AAAA", "=" * 24])
            refuse = headers["Content-MD5"] != ""  # empty: as if there were none
        elif r < 0.35:
            algo = rng.choice(["crc32", "crc32c", "sha1", "sha256", "md5", "crc64nvme", "xxx"])
            value = headers[f"x-amz-checksum-{algo}"] = rng.choice([checksum_b64(algo, body) or "x", crc32_b64(body),
                                                                   "AAAAAA==", "", "garbage"])
            refuse = value != "" and value != checksum_b64(algo, body)  # empty: as if there were none
        if rng.random() < 0.2:
            headers["x-amz-meta-" + rng.choice(["a", "owner", "é", "x" * 200, "with space", "UPPER"])] = \
                rng.choice(["v", "\u00e9t\u00e9", "=?utf-8?b?w6k=?=", "=?bogus?q?x?=", "y" * 3000, ""])
        if rng.random() < 0.1:
            headers["Content-Type"] = rng.choice(["text/plain", "", "a/b/c", "\u00e9/x", "multipart/form-data"])
        if rng.random() < 0.1:
            headers["If-None-Match"] = rng.choice(["*", '"abc"', "garbage"])
        if rng.random() < 0.05:
            headers["x-amz-decoded-content-length"] = rng.choice(["5", "-1", "abc"])
        return Request("PUT", self.path(b, k), [], headers, body), True, refuse

    def op_copy(self):
        rng = self.rng
        b, k = self.key(for_write=True)
        src = rng.choice(["fuzz/main/seed/a.txt", "/fuzz/main/seed/b.bin", "fuzz2/main/seed/x", "fuzz/dev/seed/a.txt",
                          "fuzz/main/nope", "nosuchbucket/main/x", "fuzz", "fuzz/main", "", "%zz", "fuzz/main/seed/a.txt"
                          "?versionId=1", "fuzz/main/../seed/a.txt", "fuzz//main/seed/a.txt", "x" * 3000,
                          "fuzz/main/seed/%C3%A9%20%E6%97%A5%E6%9C%AC.txt", "fuzz/main/seed/\u00e9 日本.txt"])
        headers = {"x-amz-copy-source": src}
        if rng.random() < 0.3:
            headers["x-amz-metadata-directive"] = rng.choice(["COPY", "REPLACE", "garbage", ""])
        if rng.random() < 0.2:
            headers[rng.choice(["x-amz-copy-source-if-match", "x-amz-copy-source-if-none-match",
                                "x-amz-copy-source-range"])] = rng.choice(['"abc"', "*", "bytes=0-1", "garbage"])
        return Request("PUT", self.path(b, k), [], headers), True, False

    def op_delete(self):
        b, k = self.key(for_write=True)
        return Request("DELETE", self.path(b, k)), True, False

    def delete_xml(self):
        rng = self.rng
        keys = [self.key()[1] for _ in range(rng.randrange(0, 6))]

        def k(x):
            return escape(x.decode("utf-8", "replace") if isinstance(x, bytes) else x)
        objects = "".join(f"<Object><Key>{k(x)}</Key></Object>" for x in keys)
        quiet = rng.choice(["", "<Quiet>true</Quiet>", "<Quiet>false</Quiet>", "<Quiet>maybe</Quiet>"])
        doc = ('<?xml version="1.0" encoding="UTF-8"?>'
               f'<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/">{objects}{quiet}</Delete>')
        return self.mutate_xml(doc, "Delete", "<Object><Key>main/seed/a.txt</Key></Object>", 1001)

    def mutate_xml(self, doc, root, item, too_many):
        rng = self.rng
        r = rng.random()
        if r < 0.5:
            return doc.encode()
        variants = [
            lambda: doc[:rng.randrange(len(doc))],
            lambda: doc.replace(f"</{root}>", ""),
            lambda: f"<{root}></{root}>",
            lambda: f"<{root}/>",
            lambda: "",
            lambda: "not xml at all",
            lambda: "\ufeff" + doc,
            lambda: f"<{root}>" + item * too_many + f"</{root}>",
            lambda: ('<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;'
                     '&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;'
                     f'&c;">]><{root}><Object><Key>&d;</Key></Object></{root}>'),
            lambda: ('<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
                     f'<{root}><Object><Key>&x;</Key></Object></{root}>'),
            lambda: f"<{root}>" + "<a>" * 5000 + "</a>" * 5000 + f"</{root}>",
            lambda: f"<{root}>" + item.replace("main/seed/a.txt", "k" * 20000) + f"</{root}>",
            lambda: doc.replace("<Key>", "<Key><![CDATA[").replace("</Key>", "]]></Key>"),
            lambda: doc.replace("<Object>", "<Object><VersionId>1</VersionId>"),
            lambda: doc.replace("UTF-8", "UTF-16"),
            lambda: f"<Other>{item}</Other>",
            lambda: f"<{root}>{item}</{root}>junk<{root}>{item}</{root}>",
        ]
        out = rng.choice(variants)()
        if rng.random() < 0.1:
            return out.encode() + rng.choice(ODD_BYTES)
        return out.encode()

    def op_delete_objects(self):
        rng = self.rng
        body = self.delete_xml()
        headers, refuse = {}, False
        r = rng.random()
        if r < 0.6:
            headers["Content-MD5"] = md5_b64(body)
        elif r < 0.7:
            headers["Content-MD5"] = md5_b64(body + b"x")
            refuse = True
        elif r < 0.8:
            headers["x-amz-checksum-crc32"] = crc32_b64(body)
        bucket = rng.choice(["fuzz", "fuzz", "fuzz2", "nosuchbucket"])
        return Request("POST", encode_path(bucket), [("delete", None)], headers, body), True, refuse

    def op_list(self):
        rng = self.rng
        q = []
        v2 = rng.random() < 0.6
        if v2:
            q.append(("list-type", rng.choice(["2", "2", "2", "1", "3", "abc", ""])))
        for name, values in [("prefix", ["main/", "main/seed/", "dev/", "", "nope/", "..", "main/seed/\u00e9", "m"]),
                             ("delimiter", ["/", "", "//", "a", "\u00e9", "x" * 500]),
                             ("max-keys", ["0", "1", "2", "1000", "1001", "-1", "abc", "99999999999999999999", ""]),
                             ("encoding-type", ["url", "xyz", ""]),
                             ("continuation-token" if v2 else "marker",
                              ["", "garbage", "main/seed/a.txt", "bWFpbi9zZWVk", "%%%", "x" * 5000]),
                             ("start-after", ["main/seed/a.txt", "", "\u00e9"]),
                             ("fetch-owner", ["true", "false", "x"])]:
            if rng.random() < 0.4:
                q.append((name, rng.choice(values)))
        bucket = rng.choice(["fuzz", "fuzz", "fuzz2", "nosuchbucket", "UPPER"])
        return Request("GET", encode_path(bucket), q), False, False

    def op_bucket(self):
        rng = self.rng
        bucket = rng.choice(["fuzz", "fuzz2", "nosuchbucket", "new-bucket", "", "x" * 70])
        choice = rng.choice(["head", "location", "versioning", "uploads", "service", "create", "delete", "sub"])
        path = encode_path(bucket) if bucket else "/"
        if choice == "head":
            return Request("HEAD", path), False, False
        if choice in ("location", "versioning", "uploads"):
            q = [(choice, None)]
            if choice == "uploads" and rng.random() < 0.5:
                q.append((rng.choice(["prefix", "delimiter", "max-uploads", "key-marker", "upload-id-marker"]),
                          rng.choice(["", "x", "-1", "1000000"])))
            return Request("GET", path, q), False, False
        if choice == "service":
            return Request("GET", "/", [("prefix", "f")] if rng.random() < 0.3 else []), False, False
        if choice == "create":
            body = rng.choice([b"", b"<CreateBucketConfiguration><LocationConstraint>eu-west-1</LocationConstraint>"
                                    b"</CreateBucketConfiguration>"])
            return Request("PUT", path, [], {}, body), True, False
        if choice == "delete":
            return Request("DELETE", path), True, False
        sub = rng.choice(SUBRESOURCES)
        method = rng.choice(METHODS)
        return Request(method, path, [(sub, None)], {}, b"<x/>" if method in ("PUT", "POST") else b""), \
            method not in ("GET", "HEAD"), False

    def op_odd_method(self):
        rng = self.rng
        b, k = self.key()
        method = rng.choice(["PATCH", "OPTIONS", "TRACE", "CONNECT", "FOO", "get", "PROPFIND"])
        return Request(method, self.path(b, k)), True, False

    def op_object_sub(self):
        rng = self.rng
        b, k = self.key()
        sub = rng.choice(SUBRESOURCES)
        method = rng.choice(METHODS)
        return Request(method, self.path(b, k), [(sub, None)], {}, b"<x/>" if method in ("PUT", "POST") else b""), \
            method not in ("GET", "HEAD"), False

    # --- multipart ----------------------------------------------------------------------------------------

    def upload_ref(self):
        """A live upload mostly; an ended one, a foreign one, or garbage sometimes."""
        rng = self.rng
        r = rng.random()
        if r < 0.7 and self.uploads:
            return rng.choice(self.uploads)
        if r < 0.85 and self.ended_uploads:
            return rng.choice(self.ended_uploads)
        b, k = self.key(for_write=True)
        return [b, k, rng.choice(["", "garbage", "0" * 32, "../x", "x" * 2000, "\u00e9"]), {}]

    def op_mp_create(self):
        rng = self.rng
        if len(self.uploads) >= 6:  # keep the snapshot small: end one first
            return self.op_mp_abort()
        b, k = self.key(for_write=True)
        headers = {}
        if rng.random() < 0.2:
            headers["Content-Type"] = "application/x-fuzz"
        if rng.random() < 0.2:
            headers["x-amz-meta-k"] = rng.choice(["v", "\u00e9"])
        return Request("POST", self.path(b, k), [("uploads", None)], headers), True, False

    def op_mp_part(self):
        rng = self.rng
        b, k, uid, _ = self.upload_ref()
        part = rng.choice(["1", "2", "3", "1", "2", "0", "10000", "10001", "-1", "abc", "1.5", "", "99999999999999999999"])
        body = rng.randbytes(rng.choice([0, 1, 100, 1000])) if rng.random() < 0.97 else rng.randbytes(5 * MIB)
        headers, refuse = {}, False
        if rng.random() < 0.1:
            headers["Content-MD5"] = md5_b64(body + b"!")
            refuse = True
        query = [("partNumber", part), ("uploadId", uid)]
        rng.shuffle(query)
        if rng.random() < 0.15:  # UploadPartCopy: no body, so no digest of one
            headers.pop("Content-MD5", None)
            refuse = False
            headers["x-amz-copy-source"] = rng.choice(["fuzz/main/seed/b.bin", "fuzz2/main/seed/x", "fuzz/main/nope"])
            headers["x-amz-copy-source-range"] = rng.choice(["bytes=0-1", "bytes=0-99999", "bytes=5-1", "garbage",
                                                             "bytes=-1", ""])
            body = b""
        return Request("PUT", self.path(b, k), query, headers, body), True, refuse

    def op_mp_complete(self):
        rng = self.rng
        b, k, uid, parts = self.upload_ref()
        numbers = sorted(parts)
        r = rng.random()
        if r < 0.3:
            chosen = numbers
        elif r < 0.4:
            chosen = []
        elif r < 0.55:
            chosen = list(reversed(numbers))
        elif r < 0.7:
            chosen = numbers + numbers
        else:
            chosen = rng.sample(numbers, rng.randrange(len(numbers) + 1)) + \
                rng.sample([0, -1, 7, 10001], rng.randrange(3))
        items = []
        for n in chosen:
            etag = parts.get(n, '"' + "0" * 32 + '"')
            if rng.random() < 0.1:
                etag = rng.choice(['"beef"', etag.strip('"'), "", '"' + "f" * 32 + '"', "\u00e9"])
            items.append(f"<Part><PartNumber>{n}</PartNumber><ETag>{escape(etag)}</ETag></Part>")
        doc = f'<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">{"".join(items)}' \
              f'</CompleteMultipartUpload>'
        body = self.mutate_xml(doc, "CompleteMultipartUpload",
                               '<Part><PartNumber>1</PartNumber><ETag>"00"</ETag></Part>', 10001)
        return Request("POST", self.path(b, k), [("uploadId", uid)], {}, body), True, False

    def op_mp_abort(self):
        b, k, uid, _ = self.upload_ref()
        return Request("DELETE", self.path(b, k), [("uploadId", uid)]), True, False

    def op_mp_list_parts(self):
        rng = self.rng
        b, k, uid, _ = self.upload_ref()
        q = [("uploadId", uid)]
        if rng.random() < 0.3:
            q.append((rng.choice(["max-parts", "part-number-marker"]), rng.choice(["0", "1", "-1", "abc", "10001"])))
        return Request("GET", self.path(b, k), q), False, False

    # --- aws-chunked --------------------------------------------------------------------------------------

    FRAMINGS = {
        # name: must it be refused?
        "valid": False, "size+1": True, "size-1": True, "size-not-hex": True, "size-huge": True,
        "size-negative": True, "no-final-chunk": True, "bad-chunk-signature": True, "swapped-signatures": True,
        "no-signature": True, "decoded-length-wrong": True, "data-crlf-missing": True, "truncated": True,
        "no-decoded-length": False, "final-without-crlf": False, "after-final": False,
    }

    def op_chunked(self):
        rng = self.rng
        b, k = self.key(for_write=True)
        chunks = [rng.randbytes(rng.choice([1, 10, 100, 8192])) for _ in range(rng.randrange(1, 4))]
        framing = rng.choice(list(self.FRAMINGS)) if rng.random() < 0.8 else "valid"
        query = []
        if self.uploads and rng.random() < 0.2:
            ub, uk, uid, _ = rng.choice(self.uploads)
            b, k, query = ub, uk, [("partNumber", str(rng.randrange(1, 4))), ("uploadId", uid)]
        req = Request("PUT", self.path(b, k), query)
        if framing == "decoded-length-wrong":
            wired, signed = self.admin.chunked_signed(req, chunks + [b"!"])
            signed = signed[:len(chunks)] + signed[-1:]  # chain over other data: also refused
            wired.set_header("x-amz-decoded-content-length", str(sum(map(len, chunks)) + 1))
        else:
            wired, signed = self.admin.chunked_signed(req, chunks, decoded_length=framing != "no-decoded-length")
        pieces = []
        for i, (data, sig) in enumerate(signed):
            size = f"{len(data):x}"
            ext = f";chunk-signature={sig}"
            last = i == len(signed) - 1
            if not last and i == 0:
                if framing == "size+1":
                    size = f"{len(data) + 1:x}"
                elif framing == "size-1":
                    size = f"{max(len(data) - 1, 0):x}"
                elif framing == "size-not-hex":
                    size = "zz"
                elif framing == "size-huge":
                    size = "ffffffffffffffff"
                elif framing == "size-negative":
                    size = "-1"
                elif framing == "bad-chunk-signature":
                    ext = ";chunk-signature=" + flip_char(sig, rng)
                elif framing == "swapped-signatures":
                    ext = f";chunk-signature={signed[-1][1]}"
                elif framing == "no-signature":
                    ext = ""
            crlf = b"" if framing == "data-crlf-missing" and i == 0 else b"\r\n"
            if last:
                if framing == "no-final-chunk":
                    break
                pieces.append(f"0{ext}\r\n".encode() + (b"" if framing == "final-without-crlf" else b"\r\n"))
            else:
                pieces.append(f"{size}{ext}\r\n".encode() + data + crlf)
        body = b"".join(pieces)
        if framing == "truncated":
            body = body[:max(1, len(body) // 2)]
        if framing == "after-final":
            body += b"trailing garbage"
        wired.body = body
        return wired, True, self.FRAMINGS[framing], f"chunked:{framing}"

    def op_trailer(self):
        rng = self.rng
        b, k = self.key(for_write=True)
        data = rng.randbytes(rng.choice([1, 100, 3000]))
        variant = rng.choice(["valid", "bad-checksum", "no-trailer", "other-trailer", "malformed", "signed-chunks"])
        wired = self.admin.chunked_trailer(Request("PUT", self.path(b, k)), [data])
        trailer = {"valid": f"x-amz-checksum-crc32:{crc32_b64(data)}\r\n",
                   "bad-checksum": "x-amz-checksum-crc32:AAAAAA==\r\n",
                   "no-trailer": "",
                   "other-trailer": f"x-amz-checksum-sha1:{crc32_b64(data)}\r\n",
                   "malformed": "x-amz-checksum-crc32\r\n",
                   "signed-chunks": f"x-amz-checksum-crc32:{crc32_b64(data)}\r\n"}[variant]
        ext = ";chunk-signature=" + "0" * 64 if variant == "signed-chunks" else ""
        wired.body = f"{len(data):x}{ext}\r\n".encode() + data + b"\r\n0\r\n" + trailer.encode() + b"\r\n"
        return wired, True, variant in ("bad-checksum", "no-trailer", "other-trailer", "malformed"), \
            f"trailer:{variant}"

    # --- signing and mutations of signed requests ----------------------------------------------------

    def sign(self, req, write, refuse):
        """Signs `req` one of the ways a client does, sometimes from a skewed clock or as another user.
        Returns (wired, must it be refused, label)."""
        rng = self.rng
        mode = rng.choices(["v4", "presigned", "v2", "v2-presigned", "basic", "unsigned-payload", "anonymous",
                            "nobody", "stranger"], weights=[50, 15, 10, 5, 5, 5, 4, 3, 3])[0]
        now = datetime.datetime.now(datetime.timezone.utc)
        if mode in ("v4", "unsigned-payload", "presigned") and rng.random() < 0.15:
            skew = rng.choice([-600, -60, 60, 600, -1200, 1200, -86400, 86400, -10 * 365 * 86400])
            when = now + datetime.timedelta(seconds=skew)
            label = f"{mode}:skew{skew}"
            if mode == "presigned":
                refuse = refuse or skew < -300  # signed for 300 s: expired
            else:
                refuse = refuse or abs(skew) > 15 * 60
        else:
            when, label = None, mode
        if mode == "v4":
            return self.admin.v4(req, when=when), refuse, label
        if mode == "unsigned-payload":
            return self.admin.v4(req, payload="UNSIGNED-PAYLOAD", when=when), refuse, label
        if mode == "presigned":
            return self.admin.v4_presigned(req, expires=300, when=when), refuse, label
        if mode == "v2":
            if rng.random() < 0.1:
                return self.admin.v2(req, date=formatdate(time.time() - 86400, usegmt=True)), True, "v2:old-date"
            return self.admin.v2(req), refuse, label
        if mode == "v2-presigned":
            if rng.random() < 0.2:
                return self.admin.v2_presigned(req, int(time.time()) - 60), True, "v2-presigned:expired"
            return self.admin.v2_presigned(req, int(time.time()) + 300), refuse, label
        if mode == "basic":
            return self.admin.basic(req), refuse, label
        if mode == "nobody":  # a valid key of a user without any policy
            return self.nobody.v4(req), not (req.method in ("GET", "HEAD") and req.path == "/"), label
        if mode == "stranger":
            return self.stranger.v4(req), True, label
        return self.admin.anonymous(req), True, label

    def mutate(self, wired):
        from security.s3mutations import mutate
        return mutate(wired, self.rng)

    # --- a case -------------------------------------------------------------------------------------------

    OPS = [("get", 14), ("put", 12), ("copy", 4), ("delete", 4), ("delete_objects", 6), ("list", 8), ("bucket", 5),
           ("odd_method", 1), ("object_sub", 2), ("mp_create", 4), ("mp_part", 6), ("mp_complete", 5),
           ("mp_abort", 2), ("mp_list_parts", 2), ("chunked", 7), ("trailer", 3)]

    def case(self):
        rng = self.rng
        name = rng.choices([o for o, _ in self.OPS], weights=[w for _, w in self.OPS])[0]
        made = getattr(self, "op_" + name)()
        if name in ("chunked", "trailer"):
            wired, write, refuse, label = made
            return Case(f"{name}/{label}", wired, write, refuse)
        req, write, refuse = made
        wired, refuse, label = self.sign(req, write, refuse)
        if rng.random() < 0.35:
            wired, must, m = self.mutate(wired)
            write = write or wired.method not in ("GET", "HEAD")  # the mutation may have changed the method
            return Case(f"{name}/{label}/{m}", wired, write, refuse or must)
        return Case(f"{name}/{label}", wired, write, refuse)

    def learn(self, case, reply):
        """Keeps track of what accepted requests created (uploads, their parts, keys)."""
        if not 200 <= reply.status < 300:
            return
        w = case.wired
        path, _, query = w.target.partition("?")
        if case.label.startswith("mp_create") and b"<UploadId>" in reply.body:
            uid = reply.body.split(b"<UploadId>")[1].split(b"</UploadId>")[0].decode()
            bucket, key = self.split(path)
            self.uploads.append([bucket, key, uid, {}])
        elif "uploadId=" in query:
            uid = [p.split("=", 1)[1] for p in query.split("&") if p.startswith("uploadId=")]
            for u in self.uploads:
                if uid and u[2] == uid[0]:
                    if w.method == "PUT" and "etag" in reply.headers:
                        n = [p.split("=", 1)[1] for p in query.split("&") if p.startswith("partNumber=")]
                        if n and n[0].isdigit():
                            u[3][int(n[0])] = reply.headers["etag"]
                    elif w.method in ("POST", "DELETE"):
                        self.uploads.remove(u)
                        self.ended_uploads = (self.ended_uploads + [u])[-10:]
                    break
        elif w.method == "PUT" and not query:
            bucket, key = self.split(path)
            if (bucket, key) not in self.created:
                self.created = (self.created + [(bucket, key)])[-50:]

    @staticmethod
    def split(path):
        from urllib.parse import unquote_to_bytes
        raw = unquote_to_bytes(path[1:])
        bucket, _, key = raw.partition(b"/")
        try:
            return bucket.decode(), key.decode()
        except UnicodeDecodeError:
            return bucket.decode("latin-1"), key
