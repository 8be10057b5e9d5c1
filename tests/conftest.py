"""Black-box test helpers: start the built `sediment` binary and talk HTTP to it."""
import os
import re
import signal
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parent.parent
BINARY = ROOT / "build" / "sediment"
LISTENING = re.compile(r"listening on http://([^\s:]+):(\d+)")
# The query server's ports (docs/query.md), from its start-up lines.
QUERY_PORTS = {"jsonl": re.compile(r"query server: JSON lines at http://[^\s:]+:(\d+)/"),
               "flight": re.compile(r"query server: Flight SQL at grpc://[^\s:]+:(\d+)")}
# Servers the tests start take free ports for the query server, not Amp's 1602 and 1603 (a test may run
# several servers at once); a test's own `env` or config says otherwise.
QUERY_ENV = {"SEDIMENT_QUERY_FLIGHT_LISTEN": "127.0.0.1:0", "SEDIMENT_QUERY_JSONL_LISTEN": "127.0.0.1:0"}
# The admin of the tests' servers (AWS's documented example key pair).
ADMIN_KEY = "AKIAIOSFODNN7EXAMPLE"
ADMIN_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
ADMIN = (ADMIN_KEY, ADMIN_SECRET)


class Server:
    """A `sediment serve` process on a free port, with its stderr captured."""

    def __init__(self, args, env=None, cwd=None, listen="127.0.0.1:0"):
        self.lines = []
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
        full_env.update(QUERY_ENV)
        full_env.update(env or {})
        self.query_ports = {}
        self.proc = subprocess.Popen(
            [str(BINARY), "serve", "--listen", listen, *args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="backslashreplace", env=full_env,
            cwd=cwd)
        self.port = None
        self._ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self._ready.wait(30):
            self.stop()
            raise RuntimeError("sediment did not start:\n" + self.output())
        if self.port is None:
            raise RuntimeError("sediment exited during start-up:\n" + self.output())
        self.url = f"http://127.0.0.1:{self.port}"

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            for name, pattern in QUERY_PORTS.items():
                q = pattern.search(line)
                if q and name not in self.query_ports:
                    self.query_ports[name] = int(q.group(1))
            m = LISTENING.search(line)
            if m and self.port is None:
                self.port = int(m.group(2))
                self._ready.set()
        self._ready.set()

    def output(self):
        return "\n".join(self.lines)

    def get(self, path, **kw):
        return requests.get(self.url + path, timeout=60, **kw)

    def post(self, path, **kw):
        return requests.post(self.url + path, timeout=60, **kw)

    def put(self, path, **kw):
        return requests.put(self.url + path, timeout=60, **kw)

    def cli(self, *args, timeout=60):
        """Runs a `sediment` client command against this server."""
        return run_sediment(*args, env={"SEDIMENT_URL": self.url}, timeout=timeout)

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        code = self.proc.wait(timeout)
        self._reader.join(5)
        return code


def eventually(fn, timeout=10.0, interval=0.05, what=None, retry_on=(AssertionError,)):
    """Calls `fn` until it returns something truthy (and raises none of `retry_on`); returns that.
    Fails with the last reason once `timeout` seconds have passed. The one wait of the tests: they wait
    for a condition, never for a duration."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            value = fn()
            if value:
                return value
            last = f"returned {value!r}"
        except retry_on as e:
            last = f"{type(e).__name__}: {e}"
        if time.monotonic() >= deadline:
            raise AssertionError(f"not within {timeout} s: {what or getattr(fn, '__name__', fn)}; last: {last}")
        time.sleep(interval)


def set_up_admin(server, key=ADMIN_KEY, secret=ADMIN_SECRET):
    """Sets a new server up (lakeFS's POST /api/v1/setup_lakefs) with an admin named "admin" holding this
    key pair; returns the credentials the server answered with. The one admin set-up of the tests: a
    test whose subject is the set-up itself (refused, raced, through the CLI or the console) makes its
    own request."""
    r = requests.post(server.url + "/api/v1/setup_lakefs", timeout=30, json={
        "username": "admin", "key": {"access_key_id": key, "secret_access_key": secret}})
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture
def start_server(tmp_path):
    servers = []

    def start(*args, env=None, data_dir=None, cwd=None, listen="127.0.0.1:0"):
        args = list(args)
        if "--data-dir" not in args:
            args += ["--data-dir", str(data_dir or tmp_path / "data")]
        s = Server(args, env=env, cwd=cwd, listen=listen)
        s.data_dir = Path(args[args.index("--data-dir") + 1])
        servers.append(s)
        return s

    yield start
    for s in servers:
        if s.proc.poll() is None:
            s.stop(signal.SIGKILL)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_sediment(*args, env=None, cwd=None, timeout=30):
    """Runs the binary to completion; returns (exit code, combined output)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
    full_env.update(QUERY_ENV)
    full_env.update(env or {})
    p = subprocess.run([str(BINARY), *args], capture_output=True, text=True, env=full_env, cwd=cwd,
                       timeout=timeout)
    return p.returncode, (p.stdout + p.stderr).strip()


def s3_settings(prefix):
    """[storage] settings for the test MinIO, or None when none runs."""
    endpoint = os.environ.get("SEDIMENT_TEST_S3_ENDPOINT")
    if not endpoint:
        return None
    return (f'[storage]\nobjects = "s3://{os.environ["SEDIMENT_TEST_S3_BUCKET"]}/{prefix}"\n'
            f'[storage.s3]\nendpoint = "{endpoint}"\nscheme = "http"\n'
            f'access_key_id = "{os.environ["SEDIMENT_TEST_S3_ACCESS_KEY"]}"\n'
            f'secret_access_key = "{os.environ["SEDIMENT_TEST_S3_SECRET_KEY"]}"\n')


@pytest.fixture(params=["local", "s3", "s3+postgres"])
def backend(request, tmp_path):
    """Where objects and metadata live: the data dir; a fresh prefix of the test
    bucket; or that and a fresh schema of the test PostgreSQL (as many servers share them)."""
    if request.param == "local":
        return ""
    settings = s3_settings(f"t-{uuid.uuid4().hex[:12]}")
    if settings is None:
        pytest.skip("no S3 configured (scripts/test.sh starts MinIO)")
    if request.param == "s3+postgres":
        dsn = os.environ.get("SEDIMENT_TEST_POSTGRES_DSN")
        if not dsn:
            pytest.skip("no PostgreSQL configured (scripts/test.sh starts one)")
        settings += (f'[database]\ntype = "postgres"\npostgres_dsn = "{dsn}"\n'
                     f'postgres_schema = "t_{uuid.uuid4().hex[:12]}"\n')
    return settings
