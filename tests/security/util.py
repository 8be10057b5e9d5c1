"""Helpers of the adversarial suite: setting up users and repositories, raw HTTP, snapshots of stored
state, and the files the suite leaves in build/test-artifacts/security/."""
import base64
import json
import os
import re
import select
import socket
import time
import urllib.parse

import boto3
import requests
from botocore.config import Config

# The admin, its set-up and the one wait of the tests (tests/conftest.py), re-exported for the suite.
from conftest import ADMIN, ADMIN_KEY, ADMIN_SECRET, ROOT, eventually, set_up_admin  # noqa: F401

ARTIFACTS = ROOT / "build" / "test-artifacts" / "security"
MIB = 1 << 20


# --- results ----------------------------------------------------------------------------------------

def artifact(name):
    """A path in build/test-artifacts/security/ (created)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS / name


def record_line(filename, key, text):
    """Writes `key: text` into an artifact file, replacing an earlier line for the same key."""
    path = artifact(filename)
    lines = path.read_text().splitlines() if path.exists() else []
    lines = [line for line in lines if not line.startswith(key + ":")]
    lines.append(f"{key}: {text}")
    path.write_text("\n".join(sorted(lines)) + "\n")


def env_int(name, default):
    value = os.environ.get(name, "")
    return int(value) if value.strip() else default


def fuzz_seed(name, default):
    """The fuzzer's own seed variable, else SEDIMENT_FUZZ_SEED, else `default`."""
    return env_int(name, env_int("SEDIMENT_FUZZ_SEED", default))


# --- set-up -------------------------------------------------------------------------------------------

def write_config(tmp_path, extra=""):
    """A configuration whose local namespaces may live anywhere under the test's directory."""
    cfg = tmp_path / "sediment.toml"
    cfg.write_text(f'[catalog]\nlocal_namespace_roots = ["{tmp_path}"]\n' + extra)
    return cfg


class Api:
    """The lakeFS API of one server as one user (admin by default)."""

    def __init__(self, server, auth=ADMIN):
        self.server, self.auth = server, auth

    def __call__(self, method, path, **kw):
        kw.setdefault("timeout", 60)
        kw.setdefault("auth", self.auth)
        return requests.request(method, self.server.url + "/api/v1" + path, **kw)

    def as_user(self, auth):
        return Api(self.server, auth)


def create_repo(api, name, namespace, default_branch="main"):
    r = api("POST", "/repositories", json={"name": name, "storage_namespace": namespace,
                                           "default_branch": default_branch})
    assert r.status_code == 201, r.text


def create_branch(api, repo, name, source="main"):
    r = api("POST", f"/repositories/{repo}/branches", json={"name": name, "source": source})
    assert r.status_code == 201, r.text


def upload(api, repo, branch, path, data):
    return api("POST", f"/repositories/{repo}/branches/{branch}/objects", params={"path": path}, data=data,
               headers={"Content-Type": "application/octet-stream"})


def stat(api, repo, ref, path):
    return api("GET", f"/repositories/{repo}/refs/{ref}/objects/stat", params={"path": path})


def create_user(api, user, statements=None):
    """A user with one policy of `statements` (none: no policy at all); returns (key id, secret)."""
    r = api("POST", "/auth/users", json={"id": user})
    assert r.status_code == 201, r.text
    if statements:
        pid = f"{user}-policy"
        r = api("POST", "/auth/policies", json={"id": pid, "statement": statements})
        assert r.status_code == 201, r.text
        r = api("PUT", f"/auth/users/{user}/policies/{pid}")
        assert r.status_code in (200, 201, 204), r.text
    r = api("POST", f"/auth/users/{user}/credentials")
    assert r.status_code == 201, r.text
    return r.json()["access_key_id"], r.json()["secret_access_key"]


def s3_client(server, key=ADMIN_KEY, secret=ADMIN_SECRET, **cfg):
    return boto3.client("s3", endpoint_url=server.url, aws_access_key_id=key, aws_secret_access_key=secret,
                        region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}, **cfg))


def basic(key, secret):
    return "Basic " + base64.b64encode(f"{key}:{secret}".encode()).decode()


# --- stored state -------------------------------------------------------------------------------------

class ListingFailed(Exception):
    pass


def pages(api, path, params=None, key="results"):
    """Every result of a paged lakeFS listing."""
    out, after = [], ""
    for _ in range(10_000):
        r = api("GET", path, params={**(params or {}), "after": after, "amount": 1000})
        if r.status_code != 200:
            raise ListingFailed(f"GET {path}: {r.status_code} {r.text[:300]}")
        try:
            j = r.json()
        except ValueError as e:
            raise ListingFailed(f"GET {path}: not JSON ({e}): {r.content[:300]!r}") from e
        out += j[key]
        if not j["pagination"]["has_more"]:
            return out
        after = j["pagination"]["next_offset"]
    raise ListingFailed(f"{path}: paging does not end")


def catalog_state(api, strict=True):
    """Every repository's branches (head commit) and every object on each branch with its checksum and
    size: what a refused request must leave as it was. Not strict: a listing that fails is recorded in
    the state (as ("error", ...)) instead of raising."""
    state = {}
    try:
        repos = sorted(r["id"] for r in pages(api, "/repositories"))
    except ListingFailed as e:
        if strict:
            raise
        return {("error", "repositories"): ("", (str(e),))}
    for repo in repos:
        try:
            branches = pages(api, f"/repositories/{repo}/branches")
        except ListingFailed as e:
            if strict:
                raise
            state[("error", repo)] = ("", (str(e),))
            continue
        for b in branches:
            try:
                objects = pages(api, f"/repositories/{repo}/refs/{urllib.parse.quote(b['id'], safe='')}/objects/ls")
            except ListingFailed as e:
                if strict:
                    raise
                state[("error", repo, b["id"])] = (b["commit_id"], (str(e),))
                continue
            state[(repo, b["id"])] = (b["commit_id"], tuple(sorted(
                (o["path"], o.get("checksum"), o.get("size_bytes")) for o in objects)))
    return state


def diff_states(before, after, limit=10):
    """A short description of what differs between two catalog_state() results."""
    out = []
    for k in sorted(set(before) | set(after), key=str):
        if before.get(k) == after.get(k):
            continue
        if k not in before or k not in after:
            out.append(f"{k}: {'appeared' if k not in before else 'vanished'}")
            continue
        (c0, o0), (c1, o1) = before[k], after[k]
        if c0 != c1:
            out.append(f"{k}: head {c0} -> {c1}")
        s0, s1 = set(o0), set(o1)
        out += [f"{k}: + {o}" for o in sorted(s1 - s0)][:limit]
        out += [f"{k}: - {o}" for o in sorted(s0 - s1)][:limit]
    return out[:limit * 3]


# --- raw HTTP and the process -------------------------------------------------------------------------

def connect(server, timeout=10):
    s = socket.create_connection(("127.0.0.1", server.port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_reply(sock, timeout=10.0):
    """Reads what the server sends until it closes, the reply is complete, or `timeout` passes.
    Returns the bytes (b"" if the server closed without answering; None if nothing came in time)."""
    deadline = time.monotonic() + timeout
    data = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return data if data else None
        ready, _, _ = select.select([sock], [], [], left)
        if not ready:
            continue
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, BrokenPipeError):
            return data
        if not chunk:
            return data
        data += chunk
        if reply_complete(data):
            return data


def reply_complete(data):
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        return False
    headers = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    if b"content-length" in headers:
        return len(body) >= int(headers[b"content-length"])
    if headers.get(b"transfer-encoding", b"").lower() == b"chunked":
        return body.endswith(b"0\r\n\r\n")
    return False


def status_of(reply):
    """The status code of a raw HTTP reply, or None."""
    if not reply or not reply.startswith(b"HTTP/"):
        return None
    try:
        return int(reply.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return None


def vm_hwm_bytes(pid):
    """The process's peak resident set size."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc/<pid>/status")


def vm_rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/<pid>/status")


def died(server, wait=2.0):
    """Whether the server process has ended (waiting a little for one that is ending)."""
    import subprocess
    try:
        server.proc.wait(timeout=wait)
        return True
    except subprocess.TimeoutExpired:
        return False


# --- the route table -------------------------------------------------------------------------------

def route_table():
    """The server's route table as `sediment routes` prints it: {"routes": [...], "s3_operations": [...]}."""
    from conftest import run_sediment
    code, out = run_sediment("routes")
    assert code == 0, out
    return json.loads(out)


def fill_template(template, params, query=None, body=None):
    """A path template ({name} or {name:regex}) or ARN template ({name}, {?q}, {body.f}, {@d}) with sample values."""
    def one(m):
        name = m.group(1).split(":", 1)[0]
        if name.startswith("?"):
            return (query or {}).get(name[1:], "")
        if name.startswith("body."):
            return (body or {}).get(name[5:], "")
        if name.startswith("@"):  # derived from the request by the server (an Iceberg identifier's parts): any
            return "*"
        return params[name]
    return re.sub(r"\{((?:[^{}]|\{[^{}]*\})*)\}", one, template)
