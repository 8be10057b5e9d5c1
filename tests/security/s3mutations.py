"""Changes of a request after it was signed, each with whether it must now be refused: signatures,
credentials, scopes, signed-header lists, dates, methods, paths, query strings, Host, bodies, unsigned
x-amz-* headers (refused, as AWS does), harmless changes (header-name case, unsigned ordinary headers)."""
import time
from email.utils import formatdate

from botocore.auth import HmacV1Auth

from security.s3cases import AMZ_HEADERS, DATES, METHODS, PLAIN_HEADERS, flip_char
from security.s3wire import STREAMING_SIGNED
from security.util import ADMIN_KEY

V2_SIGNED = set(HmacV1Auth.QSAOfInterest)  # the query parameters Signature V2 signs


def mutate(wired, rng):
    """A change of a signed request. Returns (wired, must it now be refused, name)."""
    auth = wired.header("Authorization") or ""
    presigned = "X-Amz-Signature=" in wired.target or "Signature=" in wired.target
    v4 = auth.startswith("AWS4-") or "X-Amz-Signature=" in wired.target
    options = ["unsigned-amz-header", "unsigned-plain-header", "header-case", "method", "path", "query-add",
               "host"]
    if auth.startswith("AWS4-"):
        options += ["sig-flip", "sig-truncate", "sig-empty", "key-unknown", "scope-region", "scope-date",
                    "scope-end", "signed-headers-drop", "signed-headers-add", "algorithm", "auth-garbage",
                    "date-malformed", "date-shift", "drop-date", "drop-content-sha", "content-sha-change",
                    "query-drop", "body", "dup-auth"]
    elif auth.startswith("AWS "):
        options += ["v2-sig-flip", "v2-key-unknown", "v2-garbage", "v2-date", "body"]
    elif auth.startswith("Basic "):
        options += ["basic-wrong"]
    if presigned:
        options += ["q-sig-flip", "q-sig-drop", "q-expires", "q-date", "q-credential", "q-algorithm",
                    "q-signed-headers", "query-drop", "body"]
    m = rng.choice(options)
    w = type(wired)(wired.method, wired.target, list(wired.headers), wired.body, wired.signed_payload)
    refuse = True
    path, _, query = w.target.partition("?")
    params = query.split("&") if query else []

    def set_param(name, value):
        nonlocal params
        params = [p for p in params if p.split("=")[0] != name] + ([f"{name}={value}"] if value is not None
                                                                     else [])

    if m == "unsigned-amz-header":
        w.headers.append(rng.choice(AMZ_HEADERS))
        refuse = not auth.startswith("Basic ")
    elif m == "unsigned-plain-header":
        w.headers.append(rng.choice(PLAIN_HEADERS))
        refuse = False
    elif m == "header-case":
        w.headers = [(k.upper() if rng.random() < 0.5 else k.lower(), v) for k, v in w.headers]
        refuse = False
    elif m == "method":
        w.method = rng.choice([x for x in METHODS if x != w.method])
        refuse = not auth.startswith("Basic ")
    elif m == "path":
        path = path + rng.choice(["x", "/", "%20", "/..", "/../fuzz2"])
        refuse = not auth.startswith("Basic ")
    elif m == "query-add":
        added = rng.choice(["x-id=GetObject", "foo=bar", "versionId=1", "acl", "uploads", "delete", "tagging",
                            "list-type=2"])
        params.append(added)
        if auth.startswith("Basic "):
            refuse = False
        elif v4:
            refuse = True
        else:  # V2 signs only its sub-resources
            refuse = added.split("=")[0] in V2_SIGNED
    elif m == "host":
        w.set_header("Host", rng.choice(["attacker.example", "localhost:1", "fuzz.s3.local.lakefs.io", ""]))
        refuse = v4
    elif m == "sig-flip":
        w.set_header("Authorization", auth.replace(auth[-64:], flip_char(auth[-64:], rng)))
    elif m == "sig-truncate":
        w.set_header("Authorization", auth[:-rng.randrange(1, 64)])
    elif m == "sig-empty":
        w.set_header("Authorization", auth[:-64])
    elif m == "key-unknown":
        w.set_header("Authorization", auth.replace(ADMIN_KEY, rng.choice(["AKIAUNKNOWN", "", "A" * 500, "\u00e9"])))
    elif m == "scope-region":
        w.set_header("Authorization", auth.replace("/us-east-1/", rng.choice(["/eu-west-1/", "//", "/\u00e9/"])))
    elif m == "scope-date":
        w.set_header("Authorization", auth.replace("Credential=" + ADMIN_KEY + "/",
                                                   "Credential=" + ADMIN_KEY + "/1" if rng.random() < 0.5
                                                   else "Credential=" + ADMIN_KEY + "/2000"))
    elif m == "scope-end":
        w.set_header("Authorization", auth.replace("/aws4_request", rng.choice(["/aws4", "", "/x"])))
    elif m == "signed-headers-drop":
        w.set_header("Authorization", auth.replace("SignedHeaders=host;", "SignedHeaders=")
                     .replace(";x-amz-date", ""))
        refuse = "SignedHeaders=host;" in auth or ";x-amz-date" in auth
    elif m == "signed-headers-add":
        w.set_header("Authorization", auth.replace("SignedHeaders=", "SignedHeaders=a-missing-header;"))
    elif m == "algorithm":
        w.set_header("Authorization", auth.replace("AWS4-HMAC-SHA256", rng.choice(["AWS4-HMAC-SHA512", "AWS4",
                                                                                 "", "aws4-hmac-sha256"]), 1))
    elif m == "auth-garbage":
        w.set_header("Authorization", rng.choice(["AWS4-HMAC-SHA256", "AWS4-HMAC-SHA256 Credential=",
                                                  "AWS4-HMAC-SHA256 Credential=a/b/c/d/e, SignedHeaders=, "
                                                  "Signature=", "AWS4-HMAC-SHA256 " + "x" * 10000,
                                                  "AWS4-HMAC-SHA256 Credential=,,,,,", "Bearer x", "\u00e9"]))
    elif m == "date-malformed":
        w.set_header("X-Amz-Date", rng.choice(DATES))
    elif m == "date-shift":
        d = w.header("X-Amz-Date") or ""
        w.set_header("X-Amz-Date", d[:-3] + ("00Z" if not d.endswith("00Z") else "01Z"))
    elif m == "drop-date":
        w.drop_header("X-Amz-Date")
    elif m == "drop-content-sha":
        w.drop_header("X-Amz-Content-SHA256")
    elif m == "content-sha-change":
        current = w.header("X-Amz-Content-SHA256")
        w.set_header("X-Amz-Content-SHA256", rng.choice([x for x in ["UNSIGNED-PAYLOAD", STREAMING_SIGNED,
                                                                      "0" * 64, "garbage", ""] if x != current]))
    elif m == "query-drop":
        if params:
            dropped = params.pop(rng.randrange(len(params))).split("=")[0]
            if not v4:  # V2 signs its sub-resources and, presigned, its own parameters: nothing else
                refuse = dropped in V2_SIGNED or dropped in ("AWSAccessKeyId", "Signature", "Expires")
        else:
            refuse = False
    elif m == "body":
        # (not b"x" for an empty body: the case may carry the digest of b"x" as its wrong Content-MD5)
        w.body = (w.body[:-1] + bytes([w.body[-1] ^ 1])) if w.body else b"\x00a body added after signing"
        # Only a body the operation reads must match its signed hash: PutObject, UploadPart, DeleteObjects,
        # CompleteMultipartUpload. The others ignore one (GET, HEAD, DELETE, CreateMultipartUpload, copies).
        names = [p.split("=")[0] for p in params]
        reads_body = (w.method == "PUT" and w.header("x-amz-copy-source") is None) or \
            (w.method == "POST" and ("delete" in names or "uploadId" in names))
        refuse = w.signed_payload and reads_body
    elif m == "dup-auth":
        w.headers.append(("Authorization", "AWS4-HMAC-SHA256 Credential=x/y, SignedHeaders=host, Signature=00"))
        refuse = False
    elif m == "v2-sig-flip":
        sig = auth.split(":", 1)[1]
        w.set_header("Authorization", auth.split(":", 1)[0] + ":" + flip_char(sig, rng, "ABCDEFabcdef0123+/"))
    elif m == "v2-key-unknown":
        w.set_header("Authorization", auth.replace(ADMIN_KEY, "AKIAUNKNOWN"))
    elif m == "v2-garbage":
        w.set_header("Authorization", rng.choice(["AWS ", "AWS " + ADMIN_KEY, "AWS :x", "AWS " + ADMIN_KEY + ":"]))
    elif m == "v2-date":
        w.set_header("Date", rng.choice([formatdate(time.time() - 5, usegmt=True), "garbage", ""]))
    elif m == "basic-wrong":
        w.set_header("Authorization", rng.choice(["Basic " + "QUtJQTp3cm9uZw==", "Basic !!!", "Basic "]))
    elif m == "q-sig-flip":
        for p in params:
            if p.startswith("X-Amz-Signature=") or p.startswith("Signature="):
                name, _, v = p.partition("=")
                set_param(name, flip_char(v, rng, "0123456789abcdefABCDEF%"))
                break
    elif m == "q-sig-drop":
        params = [p for p in params if not p.startswith(("X-Amz-Signature=", "Signature="))]
    elif m == "q-expires":
        if "X-Amz-Expires=" in query:
            set_param("X-Amz-Expires", rng.choice(["0", "-1", "604801", "abc", "99999999999999999999", ""]))
        else:
            set_param("Expires", rng.choice([str(int(time.time()) - 10), "abc", "-1"]))
    elif m == "q-date":
        set_param("X-Amz-Date", rng.choice(DATES))
        refuse = v4  # V2 signs Expires, not X-Amz-Date
    elif m == "q-credential":
        set_param("X-Amz-Credential" if "X-Amz-Credential=" in query else "AWSAccessKeyId",
                  rng.choice(["AKIAUNKNOWN%2F20240101%2Fus-east-1%2Fs3%2Faws4_request", "", "x"]))
    elif m == "q-algorithm":
        set_param("X-Amz-Algorithm", rng.choice(["AWS4-HMAC-SHA512", "", "x"]))
        refuse = "X-Amz-Algorithm=" in query
    elif m == "q-signed-headers":
        set_param("X-Amz-SignedHeaders", rng.choice(["", "host%3Bx-amz-date", "x"]))
        refuse = "X-Amz-SignedHeaders=" in query
    w.target = path + ("?" + "&".join(params) if params else "")
    return w, refuse, m
