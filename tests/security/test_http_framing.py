"""Request smuggling: a request whose framing is ambiguous or broken (Content-Length and Transfer-Encoding
together, two different Content-Lengths, whitespace before a header's colon, an unknown method with a
body) must be refused and its connection closed, so that nothing after it on the connection is taken
as a request of its own. Behind a load balancer (docs/deploy.md) the balancer and Sediment would
otherwise disagree on where a request ends, and the rest would run unseen by the balancer: here a
smuggled set-up of the first admin. (Found while fuzzing the gateway; not in issue 25's list.)"""
import json
import re

import pytest
import requests

from security.util import ADMIN_KEY, ADMIN_SECRET, connect, write_config

SETUP = json.dumps({"username": "smuggled", "key": {"access_key_id": ADMIN_KEY, "secret_access_key": ADMIN_SECRET}})


def smuggled(host):
    return (f"POST /api/v1/setup_lakefs HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(SETUP)}\r\n\r\n{SETUP}")


CASES = {
    "content-length and chunked": lambda h, inner: (
        f"POST /api/v1/auth/login HTTP/1.1\r\nHost: {h}\r\nContent-Type: application/json\r\n"
        f"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n{inner}"),
    "chunked and content-length": lambda h, inner: (
        f"POST /api/v1/auth/login HTTP/1.1\r\nHost: {h}\r\nContent-Type: application/json\r\n"
        f"Transfer-Encoding: chunked\r\nContent-Length: {len(inner) + 5}\r\n\r\n0\r\n\r\n{inner}"),
    "two content-lengths": lambda h, inner: (
        f"POST /api/v1/auth/login HTTP/1.1\r\nHost: {h}\r\nContent-Type: application/json\r\n"
        f"Content-Length: 0\r\nContent-Length: {len(inner)}\r\n\r\n{inner}"),
    "space before the colon": lambda h, inner: (
        f"POST /api/v1/auth/login HTTP/1.1\r\nHost: {h}\r\nContent-Type: application/json\r\n"
        f"Content-Length : {len(inner)}\r\n\r\n{inner}"),
    "unknown method with a body": lambda h, inner: (
        f"FOO /api/v1/healthcheck HTTP/1.1\r\nHost: {h}\r\nContent-Length: {len(inner)}\r\n\r\n{inner}"),
    "lower-case method with a body": lambda h, inner: (
        f"post /api/v1/auth/login HTTP/1.1\r\nHost: {h}\r\nContent-Length: {len(inner)}\r\n\r\n{inner}"),
    "unknown transfer-coding": lambda h, inner: (
        f"POST /api/v1/auth/login HTTP/1.1\r\nHost: {h}\r\nContent-Type: application/json\r\n"
        f"Transfer-Encoding: xchunked\r\nContent-Length: {len(inner)}\r\n\r\n{inner}"),
    # Issue 41: a header folded onto the next line (obs-fold, RFC 9112 5.2) hides Transfer-Encoding
    # from a reader that drops the fold, beside a Content-Length that frames the request otherwise.
    "transfer-encoding folded with a space": lambda h, inner: (
        f"POST /api/v1/auth/login HTTP/1.1\r\nHost: {h}\r\nContent-Type: application/json\r\n"
        f"Content-Length: 5\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n{inner}"),
    "transfer-encoding folded with a tab": lambda h, inner: (
        f"POST /api/v1/auth/login HTTP/1.1\r\nHost: {h}\r\nContent-Type: application/json\r\n"
        f"Content-Length: 5\r\nTransfer-Encoding:\r\n\tchunked\r\n\r\n0\r\n\r\n{inner}"),
    # A chunk size is bare hex: "0x2" is not 2 (strtol's reading) but a broken chunk.
    "chunk size with 0x": lambda h, inner: (
        f"POST /api/v1/auth/login HTTP/1.1\r\nHost: {h}\r\nContent-Type: application/json\r\n"
        f"Transfer-Encoding: chunked\r\n\r\n0x2\r\n{{}}\r\n0\r\n\r\n{inner}"),
}


def read_all(sock, timeout=8.0):
    """Everything the server sends until it closes the connection (None if it stays open)."""
    sock.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return data
            data += chunk
    except TimeoutError:
        return None
    except ConnectionResetError:
        return data


def send_case(server, case):
    """Sends CASES[case], with the smuggled set-up after it, on a connection of its own; what came back
    (None if the server kept the connection open)."""
    host = f"127.0.0.1:{server.port}"
    s = connect(server)
    s.sendall(CASES[case](host, smuggled(host)).encode())
    data = read_all(s)
    s.close()
    return data


@pytest.mark.parametrize("case", list(CASES))
def test_a_request_with_broken_framing_is_refused_and_nothing_after_it_runs(start_server, tmp_path, case):
    server = start_server("--config", str(write_config(tmp_path)))
    data = send_case(server, case)
    state = requests.get(server.url + "/api/v1/setup_lakefs", timeout=30).json()["state"]
    assert state == "not_initialized", f"{case}: the smuggled set-up ran"
    assert data is not None, f"{case}: the connection stayed open after the refusal"
    statuses = [int(x) for x in re.findall(rb"HTTP/1\.1 (\d\d\d) ", data)]
    assert len(statuses) == 1 and 400 <= statuses[0] < 600 and statuses[0] != 500, (case, statuses, data[:400])


def test_well_framed_requests_on_one_connection_still_work(start_server, tmp_path):
    """Keep-alive and pipelining of well-framed requests are unaffected."""
    server = start_server("--config", str(write_config(tmp_path)))
    host = f"127.0.0.1:{server.port}"
    body = '{"access_key_id": "nope", "secret_access_key": "nope"}'
    one = (f"POST /api/v1/auth/login HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
           f"Content-Length: {len(body)}\r\n\r\n{body}")
    chunked = (f"POST /api/v1/auth/login HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
               f"Transfer-Encoding: chunked\r\n\r\n{len(body):x}\r\n{body}\r\n0\r\n\r\n")
    last = f"GET /api/v1/healthcheck HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    s = connect(server)
    s.sendall((one + chunked + last).encode())
    data = read_all(s)
    s.close()
    assert data is not None
    assert [int(x) for x in re.findall(rb"HTTP/1\.1 (\d\d\d) ", data)] == [401, 401, 204], data[:600]
