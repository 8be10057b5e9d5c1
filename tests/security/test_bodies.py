"""Attack 4: one request must not fill the server's memory, and slow clients must not hold its workers.
Bodies over [server] max_body_bytes (default 1 MiB) get 413 before they are read; uploads, which
stream, are exempt; headers that arrive slower than [server] header_timeout_secs are cut off."""
import errno
import select
import socket
import threading
import time

import requests

from security.util import (ADMIN, MIB, artifact, basic, connect, eventually, read_reply, status_of,
                           vm_hwm_bytes, vm_rss_bytes)
from tables_util import block_hash, ipc, rows

GIB = 1 << 30


def head(server, target, extra=b""):
    return (b"POST " + target + b" HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
            % server.port + extra)


def test_a_declared_oversized_body_is_refused_before_it_is_sent(catalog_server):
    server = catalog_server()
    for target, extra in [(b"/api/v1/auth/login", b""),
                          (b"/api/v1/repositories", b"Authorization: " + basic(*ADMIN).encode() + b"\r\n"),
                          (b"/api/v1/auth/groups", b"Authorization: " + basic(*ADMIN).encode() + b"\r\n"),
                          (b"/api/v1/setup_lakefs", b"")]:
        s = connect(server)
        s.sendall(head(server, target, extra) + b"Content-Length: %d\r\n\r\n" % (2 * MIB))
        reply = read_reply(s, timeout=5)  # the body is never sent: the answer may not wait for it
        s.close()
        assert status_of(reply) == 413, (target, reply[:300] if reply else reply)
    assert requests.get(server.url + "/api/v1/healthcheck", timeout=10).status_code == 204


def test_the_body_limit_is_configurable(catalog_server):
    server = catalog_server(env={"SEDIMENT_SERVER_MAX_BODY_BYTES": "4096"})
    big = b'{"access_key_id": "' + b"a" * 5000 + b'", "secret_access_key": "x"}'
    r = requests.post(server.url + "/api/v1/auth/login", data=big, headers={"Content-Type": "application/json"},
                      timeout=30)
    assert r.status_code == 413, r.text
    small = b'{"access_key_id": "nope", "secret_access_key": "x"}'
    r = requests.post(server.url + "/api/v1/auth/login", data=small, headers={"Content-Type": "application/json"},
                      timeout=30)
    assert r.status_code == 401, r.text


def test_a_huge_chunked_body_gets_413_and_memory_stays_bounded(catalog_server):
    server = catalog_server()
    pid = server.proc.pid
    before = vm_rss_bytes(pid)
    s = connect(server, timeout=60)
    s.sendall(head(server, b"/api/v1/auth/login") + b"Transfer-Encoding: chunked\r\n\r\n")
    chunk = b"%x\r\n" % MIB + b"{" * MIB + b"\r\n"
    total, sent, stopped = 3 * GIB // 2, 0, "sent everything"
    started = time.monotonic()
    while sent < total:
        readable, _, _ = select.select([s], [], [], 0)
        if readable:
            stopped = "the server answered"
            break
        try:
            s.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            stopped = "the server closed the connection"
            break
        except socket.timeout:
            stopped = "the server stopped reading"
            break
        sent += MIB
    else:
        s.sendall(b"0\r\n\r\n")
    reply = read_reply(s, timeout=60)
    s.close()
    elapsed = time.monotonic() - started
    peak = vm_hwm_bytes(pid)
    line = (f"peak RSS (VmHWM) {peak / MIB:.0f} MiB (before the request {before / MIB:.0f} MiB) under a chunked "
            f"1.5 GiB POST /api/v1/auth/login; {sent / MIB:.0f} MiB sent in {elapsed:.1f} s, then {stopped}; "
            f"reply {status_of(reply)}")
    print(line)
    artifact("rss.txt").write_text(line + "\n")
    assert server.proc.poll() is None, "the server died"
    assert status_of(reply) == 413 and peak < 300 * MIB, (line, reply[:300] if reply else reply)


def test_uploads_are_not_limited(catalog_server, tmp_path):
    from security.util import create_repo, s3_client
    server = catalog_server()
    create_repo(server.api, "big", server.namespace("big"))
    data = bytes(range(256)) * (3 * MIB // 256)
    s3 = s3_client(server)
    s3.put_object(Bucket="big", Key="main/s3.bin", Body=data)
    assert s3.get_object(Bucket="big", Key="main/s3.bin")["Body"].read() == data
    r = server.api("POST", "/repositories/big/branches/main/objects", params={"path": "raw.bin"}, data=data,
                   headers={"Content-Type": "application/octet-stream"})
    assert r.status_code == 201 and r.json()["size_bytes"] == len(data), r.text
    r = server.api("POST", "/repositories/big/branches/main/objects", params={"path": "form.bin"},
                   files={"content": ("form.bin", data, "application/octet-stream")})
    assert r.status_code == 201 and r.json()["size_bytes"] == len(data), r.text
    # A multipart upload's parts, and a table segment over the limit, too.
    uid = s3.create_multipart_upload(Bucket="big", Key="main/mp.bin")["UploadId"]
    part = data + data  # 6 MiB: parts but the last are at least 5 MiB
    e1 = s3.upload_part(Bucket="big", Key="main/mp.bin", UploadId=uid, PartNumber=1, Body=part)["ETag"]
    e2 = s3.upload_part(Bucket="big", Key="main/mp.bin", UploadId=uid, PartNumber=2, Body=b"end")["ETag"]
    s3.complete_multipart_upload(Bucket="big", Key="main/mp.bin", UploadId=uid, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
    assert s3.head_object(Bucket="big", Key="main/mp.bin")["ContentLength"] == len(part) + 3
    t = "/api/v1/datasets/eth/tables/big"
    assert requests.put(server.url + t, data=ipc(), auth=ADMIN, timeout=60).status_code == 201
    batch = rows(1, 2000, per_block=30)
    body = ipc(batch, block_hashes=[block_hash(b) for b in range(1, 2001)])
    assert len(body) > 1 * MIB
    r = requests.post(server.url + t + "/segments", data=body, auth=ADMIN, timeout=120, params={
        "start_block": 1, "end_block": 2000, "end_hash": block_hash(2000), "parent_hash": block_hash(0)})
    assert r.status_code == 201, r.text


# --- slow headers ----------------------------------------------------------------------------------------

SLOW_REQUEST = b"GET /api/v1/healthcheck HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 100_000


class Drip:
    """Sockets that send a request a byte at a time and never finish it."""

    def __init__(self, server, n):
        self.socks = [connect(server) for _ in range(n)]
        self.closed = [False] * n
        self.sent = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.opened = time.monotonic()
        self.thread.start()

    def _run(self):
        while not self.stop.is_set() and self.sent < len(SLOW_REQUEST):
            for i, s in enumerate(self.socks):
                if self.closed[i]:
                    continue
                try:
                    s.send(SLOW_REQUEST[self.sent:self.sent + 1])
                except OSError:
                    self.closed[i] = True
            self.sent += 1
            self.stop.wait(0.2)

    def check_closed(self):
        """Marks the sockets the server closed (or answered, 408, before closing)."""
        for i, s in enumerate(self.socks):
            if self.closed[i]:
                continue
            try:
                data = s.recv(4096, socket.MSG_DONTWAIT)
            except BlockingIOError:
                continue
            except OSError as e:
                if e.errno in (errno.ECONNRESET, errno.EPIPE):
                    self.closed[i] = True
                continue
            if data == b"" or status_of(data) == 408:
                self.closed[i] = True
        return sum(self.closed)

    def close(self):
        self.stop.set()
        self.thread.join(5)
        for s in self.socks:
            s.close()


def test_slow_headers_do_not_stop_a_healthcheck(catalog_server):
    server = catalog_server()
    drip = Drip(server, 50)
    try:
        eventually(lambda: drip.sent >= 5, timeout=10, what="slow clients started")
        for _ in range(3):
            started = time.monotonic()
            r = requests.get(server.url + "/api/v1/healthcheck", timeout=(2, 2))
            assert r.status_code == 204 and time.monotonic() - started < 2
    finally:
        drip.close()


def test_headers_slower_than_the_timeout_are_cut_off(catalog_server):
    server = catalog_server(env={"SEDIMENT_SERVER_HEADER_TIMEOUT_SECS": "2"})
    drip = Drip(server, 50)
    try:
        eventually(lambda: drip.check_closed() == 50, timeout=6, interval=0.1,
                   what="the server closed every slow connection")
        assert time.monotonic() - drip.opened >= 1.5, "closed before the timeout"
        assert requests.get(server.url + "/api/v1/healthcheck", timeout=5).status_code == 204
    finally:
        drip.close()
