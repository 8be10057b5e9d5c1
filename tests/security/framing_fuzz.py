"""A differential fuzzer of HTTP/1.1 request framing (RFC 9112; issue 41 item 8, "one way to frame a
request"). The same byte stream goes to Sediment's HTTP server (build/http_echo_server) and to Node's request
parser, the one its http server runs (tests/security/framing/echo_server.js), each on a fresh connection. Both
echo every request they frame as {"method", "path", "body_len", "body_sha256"}, so the answers show where each
thinks every request and its body end. A stream passes if Sediment framed it as Node did (the same 2xx echoes,
in the same order), or refused it: echoed a prefix of Node's requests, then answered 4xx and closed the
connection, with nothing after. Anything else is a place where a proxy built like Node and Sediment behind it
would disagree on where a request ends: request smuggling. Node's strictness is the bar: what it refuses,
Sediment must refuse too, including the few forms RFC 9112 allows that Node refuses (HTAB after a
Content-Length value, BWS in a chunk extension).

A stream is one first request with varied framing (TEMPLATES: Content-Length and Transfer-Encoding variants,
chunk sizes and extensions, trailers, line endings, odd header lines, HTTP/1.0, request lines) and a
well-formed `GET /echo/second` (with Connection: close); past the templates, seeded random mutations
(insert, delete, replace, duplicate a line, splice in a framing header line, at framing-relevant bytes) on
top of them. A client that has had no answer for a moment half-closes (exchange()), so that a server
waiting for more of a body sees the end of the stream instead of making the fuzzer wait.

Importable (make_cases, exchange, judge, run); as a script, for manual runs against running servers:
    python3 tests/security/framing_fuzz.py NODE_PORT SEDIMENT_PORT [CASES [SEED]]
(CASES also from SEDIMENT_FRAMING_CASES, default 2000; SEED from SEDIMENT_FRAMING_SEED, default 41). Give the
same port twice to check the fuzzer itself: Node against Node has no failures."""
import concurrent.futures
import json
import os
import random
import select
import socket
import sys
import time

HOST = b"localhost"  # the same bytes go to both servers: neither checks the Host's name
SECOND = b"GET /echo/second HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
# A body that is itself a request: a server that takes it for one echoes /echo/smuggled.
SMUGGLED = b"GET /echo/smuggled HTTP/1.1\r\nHost: localhost\r\n\r\n"
BODIES = [b"", b"hello", b"0123456789abcdefXYZ", SMUGGLED, b"0\r\n\r\n"]
METHODS = [b"POST"] * 4 + [b"PUT"] * 2 + [b"GET"] * 2 + [b"DELETE", b"PATCH"]


# --- the streams ---------------------------------------------------------------------------------------

def head(method, target, headers, version=b"HTTP/1.1", line=None, eol=b"\r\n"):
    """A request head: request line, Host, `headers` (lines without their ending), blank line."""
    start = line if line is not None else method + b" " + target + b" " + version
    return start + eol + b"".join(h + eol for h in [b"Host: " + HOST, *headers]) + eol


def chunked(body, size=b"%x", ext=b"", last=b"0\r\n\r\n", eol=b"\r\n", data_end=b"\r\n"):
    """`body` as one chunk (none if empty) and the last chunk; `size` formats the chunk's size."""
    one = (size % len(body) if b"%" in size else size) + ext + eol + body + data_end if body else b""
    return one + last


def cl(n):
    return b"Content-Length: %d" % n


TE = b"Transfer-Encoding: chunked"

# Content-Length variants: name -> f(body length) -> header lines.
CONTENT_LENGTHS = {
    "cl": lambda n: [cl(n)],
    "cl-no-space": lambda n: [b"Content-Length:%d" % n],
    "cl-ows": lambda n: [b"Content-Length: \t%d \t" % n],
    "cl-lower-name": lambda n: [b"content-length: %d" % n],
    "cl-dup-equal": lambda n: [cl(n), cl(n)],
    "cl-dup-unequal": lambda n: [cl(n), cl(n + 1)],
    "cl-zero-then-n": lambda n: [cl(0), cl(n)],
    "cl-leading-zeros": lambda n: [b"Content-Length: 000%d" % n],
    "cl-plus": lambda n: [b"Content-Length: +%d" % n],
    "cl-minus": lambda n: [b"Content-Length: -%d" % n],
    "cl-minus-zero": lambda n: [b"Content-Length: -0"],
    "cl-inner-space": lambda n: [b"Content-Length: %d %d" % (n // 10, n % 10)],
    "cl-comma-equal": lambda n: [b"Content-Length: %d, %d" % (n, n)],
    "cl-comma-unequal": lambda n: [b"Content-Length: %d, %d" % (n, n + 1)],
    "cl-comma-trailing": lambda n: [b"Content-Length: %d," % n],
    "cl-huge": lambda n: [b"Content-Length: 99999999999999999999999"],
    "cl-2^64": lambda n: [b"Content-Length: %d" % (2 ** 64 + n)],
    "cl-over-limit": lambda n: [cl((1 << 20) + 1)],
    "cl-hex": lambda n: [b"Content-Length: 0x%x" % n],
    "cl-decimal-point": lambda n: [b"Content-Length: %d.0" % n],
    "cl-suffix": lambda n: [b"Content-Length: %da" % n],
    "cl-empty": lambda n: [b"Content-Length: "],
    "cl-short": lambda n: [cl(max(n - 1, 0))],
    "cl-long": lambda n: [cl(n + len(SECOND) // 2)],
    "cl-space-before-colon": lambda n: [b"Content-Length : %d" % n],
    "cl-tab-before-colon": lambda n: [b"Content-Length\t: %d" % n],
    "cl-obs-fold": lambda n: [b"Content-Length:", b" %d" % n],
    "cl-bare-cr-value": lambda n: [b"Content-Length: %d\r%d" % (n, n)],
    "cl-nul-value": lambda n: [b"Content-Length: %d\x00" % n],
}

# Transfer-Encoding variants (the body chunked as it should be): name -> f(body length) -> header lines.
TRANSFER_ENCODINGS = {
    "te": lambda n: [TE],
    "te-Chunked": lambda n: [b"Transfer-Encoding: Chunked"],
    "te-CHUNKED": lambda n: [b"TRANSFER-ENCODING: CHUNKED"],
    "te-no-space": lambda n: [b"Transfer-Encoding:chunked"],
    "te-chunked-chunked": lambda n: [b"Transfer-Encoding: chunked, chunked"],
    "te-gzip-chunked": lambda n: [b"Transfer-Encoding: gzip, chunked"],
    "te-chunked-gzip": lambda n: [b"Transfer-Encoding: chunked, gzip"],
    "te-identity-chunked": lambda n: [b"Transfer-Encoding: identity, chunked"],
    "te-two-lines": lambda n: [TE, TE],
    "te-gzip-line-then-chunked": lambda n: [b"Transfer-Encoding: gzip", TE],
    "te-trailing-space": lambda n: [b"Transfer-Encoding: chunked "],
    "te-trailing-tab": lambda n: [b"Transfer-Encoding: chunked\t"],
    "te-leading-ows": lambda n: [b"Transfer-Encoding: \t chunked"],
    "te-obs-fold": lambda n: [b"Transfer-Encoding:", b" chunked"],
    "te-tab-fold": lambda n: [b"Transfer-Encoding:", b"\tchunked"],
    "te-fold-after": lambda n: [TE, b" identity"],
    "te-xchunked": lambda n: [b"Transfer-Encoding: xchunked"],
    "te-chunkedx": lambda n: [b"Transfer-Encoding: chunkedx"],
    "te-chunked-param": lambda n: [b"Transfer-Encoding: chunked;q=1"],
    "te-quoted": lambda n: [b'Transfer-Encoding: "chunked"'],
    "te-empty": lambda n: [b"Transfer-Encoding: "],
    "te-vtab": lambda n: [b"Transfer-Encoding: chunked\x0b"],
    "te-nul": lambda n: [b"Transfer-Encoding: chunked\x00"],
    "te-space-before-colon": lambda n: [b"Transfer-Encoding : chunked"],
    "te-underscore-name": lambda n: [b"Transfer_Encoding: chunked"],
    "te-then-cl": lambda n: [TE, cl(n)],
    "cl-then-te": lambda n: [cl(n), TE],
    "te-cl-zero": lambda n: [TE, cl(0)],
    "te-obs-fold-cl": lambda n: [b"Transfer-Encoding:", b" chunked", cl(n)],
    "te-tab-fold-cl": lambda n: [cl(n), b"Transfer-Encoding:", b"\tchunked"],
    "te-gzip-cl": lambda n: [b"Transfer-Encoding: gzip", cl(n)],
}

# Chunked bodies (with Transfer-Encoding: chunked): name -> f(body) -> bytes.
CHUNKS = {
    "chunk": lambda b: chunked(b),
    "chunk-two": lambda b: chunked(b[:len(b) // 2], last=b"") + chunked(b[len(b) // 2:]),
    "chunk-0x": lambda b: chunked(b, size=b"0x%x"),
    "chunk-plus": lambda b: chunked(b, size=b"+%x"),
    "chunk-minus-zero-last": lambda b: chunked(b, last=b"-0\r\n\r\n"),
    "chunk-leading-space": lambda b: chunked(b, size=b" %x"),
    "chunk-trailing-space": lambda b: chunked(b, size=b"%x "),
    "chunk-trailing-tab": lambda b: chunked(b, size=b"%x\t"),
    "chunk-ext": lambda b: chunked(b, ext=b";a=b"),
    "chunk-ext-bws": lambda b: chunked(b, ext=b" ; a = b"),
    "chunk-ext-quoted": lambda b: chunked(b, ext=b';a="b c"'),
    "chunk-ext-name-only": lambda b: chunked(b, ext=b";a"),
    "chunk-ext-empty": lambda b: chunked(b, ext=b";"),
    "chunk-ext-lf-inside": lambda b: chunked(b, ext=b';a="\n"'),
    "chunk-ext-last": lambda b: chunked(b, last=b"0;a=b\r\n\r\n"),
    "chunk-ext-long": lambda b: chunked(b, ext=b";" + b"a" * 20000),
    "chunk-trailer": lambda b: chunked(b, last=b"0\r\nX-Trailer: t\r\n\r\n"),
    "chunk-trailer-cl": lambda b: chunked(b, last=b"0\r\nContent-Length: 5\r\n\r\n"),
    "chunk-trailer-bad-name": lambda b: chunked(b, last=b"0\r\nX Trailer: t\r\n\r\n"),
    "chunk-trailer-obs-fold": lambda b: chunked(b, last=b"0\r\nX-Trailer: t\r\n u\r\n\r\n"),
    "chunk-trailer-no-colon": lambda b: chunked(b, last=b"0\r\nXTrailer\r\n\r\n"),
    "chunk-bare-lf": lambda b: chunked(b, eol=b"\n", data_end=b"\n", last=b"0\n\n"),
    "chunk-bare-lf-after-size": lambda b: chunked(b, eol=b"\n"),
    "chunk-bare-lf-after-data": lambda b: chunked(b, data_end=b"\n"),
    "chunk-bare-lf-last": lambda b: chunked(b, last=b"0\r\n\n"),
    "chunk-bare-cr-after-size": lambda b: chunked(b, eol=b"\r"),
    "chunk-no-crlf-after-data": lambda b: chunked(b, data_end=b""),
    "chunk-junk-after-data": lambda b: chunked(b, data_end=b"XX\r\n"),
    "chunk-size-too-small": lambda b: chunked(b, size=b"%x" % max(len(b) - 1, 0)),
    "chunk-size-too-large": lambda b: chunked(b, size=b"%x" % (len(b) + 2)),
    "chunk-leading-zeros": lambda b: chunked(b, size=b"000%x"),
    "chunk-overlong-zeros": lambda b: chunked(b, size=b"0" * 40 + b"%x"),
    "chunk-overflow": lambda b: chunked(b, size=b"1" + b"0" * 16 + b"%x"),
    "chunk-overflow-f": lambda b: chunked(b, size=b"f" * 17),
    "chunk-huge": lambda b: chunked(b, size=b"fffffff"),
    "chunk-uppercase": lambda b: chunked(b + b"-upper-case-hex", size=b"%X"),
    "chunk-uppercase-X": lambda b: chunked(b, size=b"0X%x"),
    "chunk-non-hex": lambda b: chunked(b, size=b"%xg"),
    "chunk-empty-size": lambda b: chunked(b, size=b""),
    "chunk-no-last": lambda b: chunked(b, last=b""),
    "chunk-last-without-crlf": lambda b: chunked(b, last=b"0\r\n"),
}

# Header lines beside a valid Content-Length: name -> header lines.
HEADER_LINES = {
    "hdr-space-before-colon": [b"X-A : b"],
    "hdr-nul-value": [b"X-A: a\x00b"],
    "hdr-cr-value": [b"X-A: a\rb"],
    "hdr-ctl-value": [b"X-A: a\x01b"],
    "hdr-del-value": [b"X-A: a\x7fb"],
    "hdr-tab-value": [b"X-A: a\tb"],
    "hdr-obs-text-value": [b"X-A: a\xffb"],
    "hdr-name-space": [b"X A: b"],
    "hdr-name-paren": [b"X(A): b"],
    "hdr-name-at": [b"X@A: b"],
    "hdr-name-del": [b"X\x7fA: b"],
    "hdr-name-non-ascii": [b"X\xc3\xa9: b"],
    "hdr-name-empty": [b": b"],
    "hdr-no-colon": [b"XA"],
    "hdr-obs-fold": [b"X-A: a", b" b"],
    "hdr-tab-fold": [b"X-A: a", b"\tb"],
    "hdr-many": [b"X-%d: v" % i for i in range(60)],
    "hdr-expect-continue": [b"Expect: 100-continue"],
    "hdr-connection-close": [b"Connection: close"],
    "hdr-connection-te": [b"Connection: Transfer-Encoding"],
}


def cl_request(headers):
    return lambda m, t, b: head(m, t, [*headers, cl(len(b))]) + b


# Every template: name -> f(method, target, body) -> the first request's bytes.
TEMPLATES = {}
TEMPLATES.update({k: (lambda f: lambda m, t, b: head(m, t, f(len(b))) + b)(f) for k, f in CONTENT_LENGTHS.items()})
TEMPLATES.update({k: (lambda f: lambda m, t, b: head(m, t, f(len(b))) + chunked(b))(f)
                  for k, f in TRANSFER_ENCODINGS.items()})
TEMPLATES.update({k: (lambda f: lambda m, t, b: head(m, t, [TE]) + f(b))(f) for k, f in CHUNKS.items()})
TEMPLATES.update({k: cl_request(h) for k, h in HEADER_LINES.items()})
TEMPLATES.update({
    "fold-before-first-header": lambda m, t, b: m + b" " + t + b" HTTP/1.1\r\n Host: localhost\r\n" +
    cl(len(b)) + b"\r\n\r\n" + b,
    "bare-lf-head": lambda m, t, b: head(m, t, [cl(len(b))], eol=b"\n") + b,
    "bare-lf-one-header": lambda m, t, b: head(m, t, [b"X-A: a\nX-B: b", cl(len(b))]) + b,
    "bare-cr-head-end": lambda m, t, b: head(m, t, [cl(len(b))])[:-2] + b"\r\r\n" + b,
    "bare-lf-head-end": lambda m, t, b: head(m, t, [cl(len(b))])[:-2] + b"\n" + b,
    "http10-cl": lambda m, t, b: head(m, t, [cl(len(b))], version=b"HTTP/1.0") + b,
    "http10-keep-alive-cl": lambda m, t, b: head(m, t, [b"Connection: keep-alive", cl(len(b))],
                                                 version=b"HTTP/1.0") + b,
    "http10-te": lambda m, t, b: head(m, t, [TE], version=b"HTTP/1.0") + chunked(b),
    "http10-keep-alive-te": lambda m, t, b: head(m, t, [b"Connection: keep-alive", TE], version=b"HTTP/1.0") +
    chunked(b),
    "http10-te-cl": lambda m, t, b: head(m, t, [b"Connection: keep-alive", TE, cl(len(b))],
                                         version=b"HTTP/1.0") + chunked(b),
    "line-absolute-form": lambda m, t, b: head(m, b"http://localhost" + t, [cl(len(b))]) + b,
    "line-absolute-form-te": lambda m, t, b: head(m, b"http://localhost" + t, [TE]) + chunked(b),
    "line-double-space-method": lambda m, t, b: head(m, t, [cl(len(b))], line=m + b"  " + t + b" HTTP/1.1") + b,
    "line-double-space-version": lambda m, t, b: head(m, t, [cl(len(b))], line=m + b" " + t + b"  HTTP/1.1") + b,
    "line-trailing-space": lambda m, t, b: head(m, t, [cl(len(b))], line=m + b" " + t + b" HTTP/1.1 ") + b,
    "line-tabs": lambda m, t, b: head(m, t, [cl(len(b))], line=m + b"\t" + t + b"\tHTTP/1.1") + b,
    "line-leading-space": lambda m, t, b: head(m, t, [cl(len(b))], line=b" " + m + b" " + t + b" HTTP/1.1") + b,
    "line-lower-version": lambda m, t, b: head(m, t, [cl(len(b))], version=b"http/1.1") + b,
    "line-version-1.2": lambda m, t, b: head(m, t, [cl(len(b))], version=b"HTTP/1.2") + b,
    "line-version-2": lambda m, t, b: head(m, t, [cl(len(b))], version=b"HTTP/2.0") + b,
    "line-no-version": lambda m, t, b: head(m, t, [cl(len(b))], line=m + b" " + t) + b,
    "line-space-in-target": lambda m, t, b: head(m, t + b" x", [cl(len(b))]) + b,
    "line-leading-crlf": lambda m, t, b: b"\r\n" + head(m, t, [cl(len(b))]) + b,
    "line-leading-lf": lambda m, t, b: b"\n" + head(m, t, [cl(len(b))]) + b,
    "line-lower-method": lambda m, t, b: head(m.lower(), t, [cl(len(b))]) + b,
})

# What a mutation may insert or put in place of a byte.
ALPHABET = b"\r\n \t:;,=\"0123456789aAfFxX+-\x00\x0b\x7f\xff"


def framing_positions(data):
    """Indices of the bytes framing rests on: line ends, separators, and every byte of the Content-Length
    and Transfer-Encoding lines and of the first request's body (chunk sizes among them)."""
    positions = [i for i, c in enumerate(data) if c in b"\r\n :;,\t"]
    lower = data.lower()
    for name in (b"content-length", b"transfer-encoding"):
        start = lower.find(name)
        while start >= 0:
            end = data.find(b"\n", start)
            positions += range(start, end if end >= 0 else len(data))
            start = lower.find(name, start + 1)
    end_of_head = data.find(b"\r\n\r\n")
    second = data.rfind(SECOND)
    if end_of_head >= 0 and second > end_of_head:
        positions += range(end_of_head, second + 1)
    return positions or list(range(len(data)))


def framing_lines(n):
    """Every header line of the Content-Length, Transfer-Encoding and header-line variants."""
    framing = [line for f in [*CONTENT_LENGTHS.values(), *TRANSFER_ENCODINGS.values()] for line in f(n)]
    return framing + [line for variant in HEADER_LINES.values() for line in variant[:2]]


def mutate(data, rng):
    """One random mutation at a framing-relevant byte, or a framing header line from the variants spliced
    into the first head: (new bytes, what was done)."""
    op = rng.choice(["insert", "delete", "replace", "flip-case", "dup-line", "digit", "splice", "splice"])
    end_of_head = data.find(b"\r\n\r\n")
    starts = [i + 2 for i in range(max(end_of_head, 0)) if data[i:i + 2] == b"\r\n"]
    if op == "splice" and starts:
        at = rng.choice(starts)
        line = rng.choice(framing_lines(rng.choice([0, 5, 48])))
        return data[:at] + line + b"\r\n" + data[at:], f"splice {line!r} at {at}"
    i = rng.choice(framing_positions(data))
    if op == "insert":
        c = bytes([rng.choice(ALPHABET)])
        return data[:i] + c + data[i:], f"insert {c!r} at {i}"
    if op == "delete":
        return data[:i] + data[i + 1:], f"delete {data[i:i + 1]!r} at {i}"
    if op == "flip-case" and chr(data[i]).isalpha():
        return data[:i] + bytes([data[i] ^ 0x20]) + data[i + 1:], f"flip case at {i}"
    if op == "dup-line":
        start = data.rfind(b"\n", 0, i) + 1
        end = data.find(b"\n", i)
        if end > start:
            return data[:end + 1] + data[start:end + 1] + data[end + 1:], f"duplicate the line at {start}"
    if op == "digit" and chr(data[i]).isdigit():
        c = bytes([rng.choice(b"0123456789")])
        return data[:i] + c + data[i + 1:], f"digit {c!r} at {i}"
    c = bytes([rng.choice(ALPHABET)])
    return data[:i] + c + data[i + 1:], f"replace {data[i:i + 1]!r} with {c!r} at {i}"


def make_case(index, rng):
    """Case `index`: every template in turn, unmutated, twice (first a POST of "hello" to /echo/, then a random
    method, body and /echo/ or /stream/ target), then random templates with one to three mutations. Returns
    (name, bytes)."""
    names = list(TEMPLATES)
    name = names[index % len(names)] if index < 2 * len(names) else rng.choice(names)
    method = b"POST" if index < len(names) else rng.choice(METHODS)
    streamed = method in (b"POST", b"PUT") and rng.random() < 0.3 and index >= len(names)
    target = b"/%s/%s" % (b"stream" if streamed else b"echo", name.encode())
    body = rng.choice(BODIES) if index >= len(names) else b"hello"
    data = TEMPLATES[name](method, target, body) + SECOND
    label = f"{name} {method.decode()} {target.decode()} body {len(body)}"
    if index >= 2 * len(names):
        for _ in range(rng.choice([1, 1, 2, 3])):
            data, what = mutate(data, rng)
            label += "; " + what
    return label, data


def make_cases(n, seed):
    rng = random.Random(seed)
    return [make_case(i, rng) for i in range(n)]


# --- one connection ------------------------------------------------------------------------------------

def exchange(port, data, idle=0.25, after_refusal=2.0, timeout=2.0):
    """Sends `data` on a fresh connection and reads every answer until the server closes. When nothing
    arrives for `idle` seconds (`after_refusal` once a 4xx came), the client half-closes, as a client with
    nothing more to send, and waits up to `timeout` more for the rest. Returns (bytes read, whether the
    server closed, how many of the bytes came before the client half-closed: None if it did not)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    out, half_closed_at = b"", None
    try:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError, TimeoutError):
            pass  # the server stopped reading (a refusal); its answer may still be there
        last = time.monotonic()
        while True:
            if half_closed_at is not None:
                wait = timeout
            else:
                wait = after_refusal if refused_last(out) else idle
            left = last + wait - time.monotonic()
            ready = select.select([s], [], [], left)[0] if left > 0 else []
            if ready:
                try:
                    chunk = s.recv(65536)
                except (ConnectionResetError, BrokenPipeError):
                    chunk = b""
                if not chunk:
                    return out, True, half_closed_at
                out += chunk
                last = time.monotonic()
            elif half_closed_at is not None:
                return out, False, half_closed_at  # still open, the client long gone quiet
            else:
                try:
                    s.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                half_closed_at, last = len(out), time.monotonic()
    finally:
        s.close()


def refused_last(data):
    responses, rest = parse_responses(data)
    return not rest and responses and 400 <= responses[-1][0] < 500


def parse_responses(data):
    """The responses in `data` as [(status, {lower-case name: value}, body)], and what is left that is not a
    whole response. 1xx answers are skipped."""
    out, pos = [], 0
    while pos < len(data):
        end = data.find(b"\r\n\r\n", pos)
        if end < 0:
            break
        lines = data[pos:end].split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            break
        status = int(parts[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            headers[name.strip().lower().decode("latin-1")] = value.strip()
        body_start = end + 4
        if 100 <= status < 200:
            pos = body_start
            continue
        if "content-length" in headers:
            n = int(headers["content-length"]) if headers["content-length"].isdigit() else -1
            if n < 0 or len(data) < body_start + n:
                break
            body, pos = data[body_start:body_start + n], body_start + n
        elif headers.get("transfer-encoding", b"").lower() == b"chunked":
            body, after = dechunk(data, body_start)
            if after is None:
                break
            pos = after
        else:
            body, pos = data[body_start:], len(data)
        out.append((status, headers, body))
    return out, data[pos:]


def dechunk(data, pos):
    """A chunked response body from `pos`: (body, where it ends), or (b"", None) if incomplete."""
    body = b""
    while True:
        eol = data.find(b"\r\n", pos)
        if eol < 0:
            return b"", None
        try:
            size = int(data[pos:eol].split(b";")[0].strip() or b"0", 16)
        except ValueError:
            return b"", None
        pos = eol + 2
        if size == 0:
            end = data.find(b"\r\n\r\n", pos - 2)
            return (body, end + 4) if end >= 0 else (b"", None)
        if len(data) < pos + size + 2:
            return b"", None
        body += data[pos:pos + size]
        pos += size + 2


def outcome(data, closed, half_closed_at=None):
    """What a server made of a stream (from exchange()): {"answers": [(status, echo or None)], "rest" (bytes
    that are not a whole response), "closed", "early" (how many answers came before the client half-closed),
    "closed_early" (whether the server closed before that)}; an echo is (method, path, body_len,
    body_sha256)."""
    responses, rest = parse_responses(data)
    early = len(responses) if half_closed_at is None else len(parse_responses(data[:half_closed_at])[0])
    answers = []
    # Whether the last answer said the connection ends with it (the server declines to read more).
    last_closes = bool(responses) and responses[-1][1].get("connection", b"").lower() == b"close"
    for status, _, body in responses:
        echo = None
        if 200 <= status < 300:
            try:
                j = json.loads(body)
                echo = (j["method"], j["path"], j["body_len"], j["body_sha256"])
            except (ValueError, KeyError, TypeError):
                echo = ("not an echo", body[:200])
        answers.append((status, echo))
    return {"answers": answers, "rest": rest, "closed": closed, "early": early,
            "closed_early": closed and half_closed_at is None, "last_closes": last_closes}


def echoes(result):
    return [echo for status, echo in result["answers"] if 200 <= status < 300]


# --- the verdict ---------------------------------------------------------------------------------------

def judge(node, sediment):
    """("same", "") if Sediment framed the stream as Node did; ("refused", "") if it echoed a prefix of Node's
    requests, then answered 4xx and closed the connection with nothing after; else ("fail", why)."""
    answers = sediment["answers"]
    if sediment["rest"]:
        return "fail", f"Sediment sent bytes that are not a whole HTTP response: {sediment['rest'][:200]!r}"
    refusal = next((i for i, (status, _) in enumerate(answers) if not 200 <= status < 300), None)
    if refusal is None:
        if echoes(sediment) == echoes(node):
            return "same", ""
        # Framed the same as far as it read, then it said "Connection: close" and closed: it declined to read
        # the rest (an HTTP/1.0 keep-alive it does not keep), which is a refusal of what follows, not another
        # framing of it.
        mine = echoes(sediment)
        if mine and mine == echoes(node)[:len(mine)] and sediment["last_closes"] and sediment["closed"]:
            return "refused", ""
        return "fail", "Sediment framed the stream differently from Node: " + first_difference(node, sediment)
    status = answers[refusal][0]
    if not 400 <= status < 500:
        return "fail", f"Sediment answered {status}, neither a 2xx echo nor a 4xx refusal"
    if refusal + 1 < len(answers):
        return "fail", f"Sediment answered {[s for s, _ in answers[refusal + 1:]]} after its refusal ({status})"
    # A refusal that came before the client's half-close must close the connection by itself; one that
    # answers the half-close (a request cut short) must close it too.
    if not sediment["closed"] or (refusal < sediment["early"] and not sediment["closed_early"]):
        return "fail", f"Sediment answered {status} but did not close the connection"
    before = echoes(sediment)
    if before != echoes(node)[:len(before)]:
        return "fail", (f"before its refusal ({status}) Sediment framed the stream differently from Node: "
                        + first_difference(node, sediment))
    return "refused", ""


def first_difference(node, sediment):
    n, s = echoes(node), echoes(sediment)
    i = next((i for i, (a, b) in enumerate(zip(n, s)) if a != b), min(len(n), len(s)))
    return (f"request {i + 1}: Sediment {s[i][:3] if i < len(s) else 'nothing'}, "
            f"Node {n[i][:3] if i < len(n) else 'nothing'}")


def run(cases, node_port, sediment_port, workers=8):
    """Sends every case to both servers ((name, data) pairs; 8 at a time). Returns {"same", "refused",
    "failures": [(name, data, why, node outcome, Sediment outcome)], "seconds"}."""
    def one(case):
        name, data = case
        node = outcome(*exchange(node_port, data))
        sediment = outcome(*exchange(sediment_port, data))
        verdict, why = judge(node, sediment)
        return name, data, verdict, why, node, sediment

    started = time.monotonic()
    summary = {"same": 0, "refused": 0, "failures": []}
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for name, data, verdict, why, node, sediment in pool.map(one, cases):
            if verdict == "fail":
                summary["failures"].append((name, data, why, node, sediment))
            else:
                summary[verdict] += 1
    summary["seconds"] = time.monotonic() - started
    return summary


def describe(failure):
    name, data, why, node, sediment = failure
    return (f"### {name}: {why}\n    stream:   {data!r}\n    node:     {node['answers']} closed={node['closed']}\n"
            f"    sediment: {sediment['answers']} closed={sediment['closed']} rest={sediment['rest'][:200]!r}")


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    n = int(argv[3]) if len(argv) > 3 else int(os.environ.get("SEDIMENT_FRAMING_CASES") or 2000)
    seed = int(argv[4]) if len(argv) > 4 else int(os.environ.get("SEDIMENT_FRAMING_SEED") or 41)
    result = run(make_cases(n, seed), int(argv[1]), int(argv[2]))
    for failure in result["failures"]:
        print(describe(failure), end="\n\n")
    print(f"{n} cases (seed {seed}) in {result['seconds']:.1f} s: {result['same']} framed the same, "
          f"{result['refused']} refused by Sediment, {len(result['failures'])} failures")
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
