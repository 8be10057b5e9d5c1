"""Requests to the S3 gateway built byte by byte: signed with a real key by botocore's signers (SigV4
header, SigV4 presigned, V2 header, V2 presigned), aws-chunked bodies signed chunk by chunk, and a raw
HTTP client that sends exactly what it is given (no path normalization, any header), so that a fuzzer
can change any part of a signed request."""
import base64
import datetime
import hashlib
import hmac
import re
import socket
import zlib
from dataclasses import dataclass, field
from unittest import mock
from urllib.parse import quote

import botocore.auth
from botocore.auth import HmacV1Auth, HmacV1QueryAuth, S3SigV4Auth, S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

REGION = "us-east-1"
STREAMING_SIGNED = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
STREAMING_TRAILER = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def encode_path(*parts):
    """'/' + the parts joined by '/', each percent-encoded as S3 clients do (bytes are taken as they are)."""
    out = []
    for p in parts:
        out.append(quote(p if isinstance(p, bytes) else p.encode("utf-8", "surrogatepass"), safe="/~"))
    return "/" + "/".join(out)


def encode_query(query):
    """[(name, value or None)] -> a query string; None is a bare sub-resource (`?delete`)."""
    items = []
    for k, v in query:
        k = quote(k, safe="-_.~")
        items.append(k if v is None else f"{k}={quote(str(v), safe='-_.~')}")
    return "&".join(items)


@dataclass
class Request:
    method: str
    path: str                       # encoded
    query: list = field(default_factory=list)
    headers: dict = field(default_factory=dict)
    body: bytes = b""

    def target(self):
        qs = encode_query(self.query)
        return self.path + ("?" + qs if qs else "")


@dataclass
class Wired:
    """A request as it goes on the wire."""
    method: str
    target: str
    headers: list                   # [(name, value)], in order, str or bytes
    body: bytes
    signed_payload: bool = False    # the body's SHA-256 is signed (a change of it must be refused)

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def set_header(self, name, value):
        self.headers = [(k, v) for k, v in self.headers if k.lower() != name.lower()] + [(name, value)]

    def drop_header(self, name):
        self.headers = [(k, v) for k, v in self.headers if k.lower() != name.lower()]

    def describe(self, limit=400):
        def s(x):
            return x.decode("utf-8", "backslashreplace") if isinstance(x, bytes) else str(x)
        lines = [f"{self.method} {self.target}"] + [f"{s(k)}: {s(v)}" for k, v in self.headers]
        body = self.body[:limit]
        more = f" ... ({len(self.body)} bytes)" if len(self.body) > limit else ""
        return "\n".join(lines) + ("\n\n" + repr(body) + more if self.body else "")


class FixedPayloadV4(S3SigV4Auth):
    """SigV4 with a given x-amz-content-sha256 (UNSIGNED-PAYLOAD, a streaming kind, or a stated hash)."""

    def __init__(self, credentials, payload):
        super().__init__(credentials, "s3", REGION)
        self.fixed = payload

    def payload(self, request):
        return self.fixed


class DatedV1(HmacV1Auth):
    def __init__(self, credentials, date):
        super().__init__(credentials)
        self.date = date

    def _get_date(self):
        return self.date


class DatedV1Query(HmacV1QueryAuth):
    def __init__(self, credentials, expires_at):
        super().__init__(credentials, expires=0)
        self.expires_at = expires_at

    def _get_date(self):
        return str(self.expires_at)


class Signer:
    def __init__(self, host, key, secret):
        self.host = host
        self.credentials = Credentials(key, secret)

    def _aws(self, req, with_body=True):
        r = AWSRequest(method=req.method, url=f"http://{self.host}{req.target()}", headers=dict(req.headers),
                       data=req.body if with_body else None)
        return r

    def _wired(self, aws_request, req, signed_payload=False):
        url = aws_request.url
        target = url[len(f"http://{self.host}"):]
        headers = [("Host", self.host)] + [(k, v) for k, v in aws_request.headers.items() if k.lower() != "host"]
        return Wired(req.method, target, headers, req.body, signed_payload)

    def v4(self, req, payload=None, when=None):
        """Header-signed; the payload hash is the body's SHA-256 unless `payload` says otherwise."""
        signer = S3SigV4Auth(self.credentials, "s3", REGION) if payload is None else \
            FixedPayloadV4(self.credentials, payload)
        r = self._aws(req)
        with mock.patch.object(botocore.auth, "get_current_datetime",
                               return_value=when or datetime.datetime.now(datetime.timezone.utc)):
            signer.add_auth(r)
        return self._wired(r, req, signed_payload=payload is None)

    def v4_presigned(self, req, expires=300, when=None):
        r = self._aws(req, with_body=False)
        with mock.patch.object(botocore.auth, "get_current_datetime",
                               return_value=when or datetime.datetime.now(datetime.timezone.utc)):
            S3SigV4QueryAuth(self.credentials, "s3", REGION, expires=expires).add_auth(r)
        return self._wired(r, req)

    def v2(self, req, date=None):
        from email.utils import formatdate
        r = self._aws(req)
        DatedV1(self.credentials, date or formatdate(usegmt=True)).add_auth(r)
        return self._wired(r, req)

    def v2_presigned(self, req, expires_at):
        r = self._aws(req, with_body=False)
        DatedV1Query(self.credentials, expires_at).add_auth(r)
        w = self._wired(r, req)
        w.drop_header("Date")
        return w

    def basic(self, req):
        token = base64.b64encode(f"{self.credentials.access_key}:{self.credentials.secret_key}".encode()).decode()
        return Wired(req.method, req.target(), [("Host", self.host), *req.headers.items(),
                                                ("Authorization", "Basic " + token)], req.body)

    def anonymous(self, req):
        return Wired(req.method, req.target(), [("Host", self.host), *req.headers.items()], req.body)

    # --- aws-chunked -----------------------------------------------------------------------------------

    def signing_key(self, date):
        def h(key, msg):
            return hmac.new(key, msg.encode(), hashlib.sha256).digest()
        k = h(("AWS4" + self.credentials.secret_key).encode(), date)
        return h(h(h(k, REGION), "s3"), "aws4_request")

    def chunked_signed(self, req, chunks, decoded_length=True):
        """A SigV4 streaming upload. Returns (Wired with no body yet, chunk signer): sign_chunks(datas)
        gives [(data, signature)] chained from the request's seed signature."""
        req.headers = {**req.headers, "Content-Encoding": "aws-chunked"}
        if decoded_length:
            req.headers["x-amz-decoded-content-length"] = str(sum(len(c) for c in chunks))
        w = self.v4(req, payload=STREAMING_SIGNED)
        auth = w.header("Authorization")
        seed = re.search(r"Signature=([0-9a-f]+)", auth).group(1)
        ts = w.header("X-Amz-Date")
        scope = f"{ts[:8]}/{REGION}/s3/aws4_request"
        key = self.signing_key(ts[:8])
        signed, prev = [], seed
        for data in list(chunks) + [b""]:
            sts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", ts, scope, prev, EMPTY_SHA256,
                             hashlib.sha256(data).hexdigest()])
            prev = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
            signed.append((data, prev))
        return w, signed

    def chunked_trailer(self, req, chunks):
        req.headers = {**req.headers, "Content-Encoding": "aws-chunked", "x-amz-trailer": "x-amz-checksum-crc32",
                       "x-amz-decoded-content-length": str(sum(len(c) for c in chunks))}
        return self.v4(req, payload=STREAMING_TRAILER)


def crc32_b64(data):
    return base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def checksum_b64(algorithm, data):
    """The x-amz-checksum-<algorithm> value of `data`; None for an algorithm the gateway does not know."""
    if algorithm == "crc32":
        return crc32_b64(data)
    if algorithm == "crc32c":
        return base64.b64encode(crc32c(data).to_bytes(4, "big")).decode()
    if algorithm in ("sha1", "sha256"):
        return base64.b64encode(hashlib.new(algorithm, data).digest()).decode()
    return None


def md5_b64(data):
    return base64.b64encode(hashlib.md5(data).digest()).decode()


# --- the wire -----------------------------------------------------------------------------------------

@dataclass
class Reply:
    status: int
    headers: dict
    body: bytes

    def code(self):
        m = re.search(rb"<Code>([^<]*)</Code>", self.body)
        return m.group(1).decode() if m else ""


class NoReply(Exception):
    pass


def _b(x):
    return x if isinstance(x, bytes) else str(x).encode("utf-8", "surrogateescape")


def send(port, wired, timeout=30):
    """Sends the request as it is (plus Content-Length and Connection: close) and reads the reply."""
    head = [_b(wired.method) + b" " + _b(wired.target) + b" HTTP/1.1"]
    for k, v in wired.headers:
        head.append(_b(k) + b": " + _b(v))
    head.append(b"Content-Length: %d" % len(wired.body))
    head.append(b"Connection: close")
    data = b"\r\n".join(head) + b"\r\n\r\n" + wired.body
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    except OSError as e:
        raise NoReply(f"cannot connect: {e}") from e
    with s:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # answered (and closed) before the whole body was read: the reply is still there
        raw = b""
        try:
            while not _complete(raw, wired.method):
                chunk = s.recv(65536)
                if not chunk:
                    break
                raw += chunk
        except socket.timeout as e:
            if not raw:
                raise NoReply(f"no reply in {timeout} s") from e
        except ConnectionResetError as e:
            if not raw:
                raise NoReply("connection reset without a reply") from e
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    try:
        status = int(lines[0].split(b" ", 2)[1])
    except (IndexError, ValueError) as e:
        raise NoReply(f"not an HTTP reply: {raw[:200]!r}") from e
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(b":")
        headers[k.strip().decode("latin-1").lower()] = v.strip().decode("latin-1")
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = dechunk(body)
    return Reply(status, headers, body)


def _complete(raw, method):
    """Whether `raw` holds a whole reply (the server may keep the connection open after it)."""
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        return False
    lines = head.split(b"\r\n")
    try:
        status = int(lines[0].split(b" ", 2)[1])
    except (IndexError, ValueError):
        return False
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        return True
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            try:
                return len(body) >= int(value.strip())
            except ValueError:
                return False
        if name == b"transfer-encoding" and b"chunked" in value.lower():
            return body.endswith(b"0\r\n\r\n")
    return False


def dechunk(body):
    out = b""
    while body:
        size, _, rest = body.partition(b"\r\n")
        try:
            n = int(size.split(b";")[0], 16)
        except ValueError:
            return out + body
        if n == 0:
            break
        out += rest[:n]
        body = rest[n + 2:]
    return out
