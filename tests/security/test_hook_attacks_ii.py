"""Issue 41, hooks and framing: a hook cannot hold the server (its time is enforced from outside it, the
operator's timeout is a ceiling, hook runs have a bounded pool with a share per repository), a webhook
reaches only what the operator allows and its answer cannot fill memory, an action's secrets stay
masked wherever its values end up, and a request has one framing (a folded header or a 0x chunk size is
a 400). The imports of the server's own files are in test_import_attacks.py."""
import json
import os
import re
import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from conftest import free_port
from security.test_action_attacks import commit, lua_action, output, runs
from security.test_http_framing import read_all, send_case
from security.util import (catalog_state, connect, create_branch, create_repo, eventually, upload, vm_hwm_bytes,
                           write_config)

MIB = 1 << 20
MASK = "*******"


# --- set-up -------------------------------------------------------------------------------------------

def actions_toml(hook_timeout_secs=2, lua_memory_mib=16, allow_loopback=False, **more):
    """The [actions] table of a test's server; allow_loopback lets webhooks reach 127.0.0.1."""
    lines = ["[actions]", f"hook_timeout_secs = {hook_timeout_secs}", f"lua_memory_mib = {lua_memory_mib}"]
    if allow_loopback:
        lines.append('webhook_allowed_hosts = ["127.0.0.1/32"]')
    lines += [f"{k} = {json.dumps(v)}" for k, v in more.items()]
    return "\n".join(lines) + "\n"


def hook_action(event, hook_type, properties, branches=None, name="Hook"):
    """An action of one hook of `hook_type` with `properties` on `event` (of `branches`, else all)."""
    on = {event: {"branches": branches} if branches else None}
    return json.dumps({"name": name, "on": on,
                       "hooks": [{"id": "hk", "type": hook_type, "properties": properties}]}).encode()


def webhook_action(event, url, branches=None, **properties):
    return hook_action(event, "webhook", {"url": url, **properties}, branches)


def hooked_server(catalog_server, env=None, extra_toml=""):
    server = catalog_server(env=env, extra_toml=extra_toml)
    create_repo(server.api, "hooked", server.namespace("hooked"))
    return server


def message_of(r):
    try:
        return r.json().get("message", r.text)
    except ValueError:
        return r.text


def timed_commit(api, repo, branch, timeout):
    """(status or None, message, seconds) of one commit; None when no answer came within `timeout`."""
    started = time.monotonic()
    try:
        r = api("POST", f"/repositories/{repo}/branches/{branch}/commits", json={"message": "c"}, timeout=timeout)
    except requests.RequestException as e:
        return None, f"{type(e).__name__}: {e}", time.monotonic() - started
    return r.status_code, message_of(r), time.monotonic() - started


def healthcheck_secs(server, timeout=5):
    """How long the healthcheck takes to answer 204."""
    started = time.monotonic()
    r = requests.get(server.url + "/api/v1/healthcheck", timeout=timeout)
    assert r.status_code == 204, r.text
    return time.monotonic() - started


def listing_secs(server, timeout=5):
    """How long the admin's repository listing takes to answer 200."""
    started = time.monotonic()
    r = server.api("GET", "/repositories", timeout=timeout)
    assert r.status_code == 200, r.text
    return time.monotonic() - started


def only(state, repo):
    return {k: v for k, v in state.items() if k[0] == repo}


class Receiver:
    """A webhook receiver (ThreadingHTTPServer on `host`, port 0, in a daemon thread). It records every
    request (path, headers, body) and answers with `answer`: (status, headers, body); "hang" (read the
    request, never answer); or a function given the handler, which writes what it likes."""

    def __init__(self, answer=(204, {}, b""), host="127.0.0.1"):
        self.answer = answer
        self.requests = []
        self.released = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
                receiver.requests.append((self.path, dict(self.headers), body))
                answer = receiver.answer
                if answer == "hang":
                    receiver.released.wait(120)
                    self.close_connection = True
                    return
                if callable(answer):
                    answer(self)
                    return
                status, headers, content = answer
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            do_GET = do_POST

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer((host, 0), Handler)
        self.host, self.port = host, self.httpd.server_port
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, path="/hook"):
        return f"http://{self.host}:{self.port}{path}"

    def close(self):
        self.released.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# --- CPU of the server's processes --------------------------------------------------------------------

def tree_cpu_secs(pid):
    """CPU time used so far by process `pid` and every process below it that still runs (a hook's
    sandbox child among them)."""
    children, used = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                text = f.read()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()  # from field 3 (state) on
        children.setdefault(int(fields[1]), []).append(int(entry))
        used[int(entry)] = int(fields[11]) + int(fields[12])  # utime + stime
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += used.get(p, 0)
        todo += children.get(p, [])
    return total / os.sysconf("SC_CLK_TCK")


def cores_busy(pid, window=0.5):
    """The cores the server's process tree keeps busy, measured over `window` seconds (a measurement's
    width, not a wait for a condition)."""
    before, started = tree_cpu_secs(pid), time.monotonic()
    time.sleep(window)
    return (tree_cpu_secs(pid) - before) / (time.monotonic() - started)


def assert_stops_at_the_deadline(server, script, ceiling, **properties):
    """A pre-commit Lua hook running `script` fails its run once it has run for `ceiling` seconds
    (plus a little): 412 "longer than its timeout", nothing changed, the healthcheck quick throughout,
    and no process of the server left spinning."""
    api = server.api
    action = (hook_action("pre-commit", "lua", {"script": script, **properties}) if properties
              else lua_action("pre-commit", script))
    assert upload(api, "hooked", "main", "_lakefs_actions/a.yaml", action).status_code == 201
    assert upload(api, "hooked", "main", "data/x", b"x").status_code == 201
    before = catalog_state(api)
    pool = ThreadPoolExecutor(1)
    try:
        pending = pool.submit(timed_commit, api, "hooked", "main", ceiling + 15)
        latencies = []
        while not pending.done():
            latencies.append(healthcheck_secs(server))
            wait([pending], timeout=0.2)
        status, message, secs = pending.result()
    finally:
        pool.shutdown(wait=False)
    assert status == 412 and "longer than its timeout" in message, (status, message)
    assert secs < ceiling + 2.5, f"the hook stopped after {secs:.1f} s, its ceiling is {ceiling} s"
    assert latencies and max(latencies) < 0.5, latencies
    assert catalog_state(api) == before
    run = runs(api, "hooked")[0]
    assert run["status"] == "failed" and run["event_type"] == "pre-commit", run
    assert "longer than its timeout" in output(api, "hooked", run["run_id"])
    eventually(lambda: cores_busy(server.proc.pid) < 0.3, timeout=10,
               what="the server's processes stop spinning once the hook is stopped")
    assert healthcheck_secs(server) < 0.5
    return secs


# --- 1, 2: hooks that never end, and who sets the timeout ---------------------------------------------

def test_a_lua_hook_that_loops_in_its_error_handler_is_stopped_at_the_deadline(catalog_server):
    server = hooked_server(catalog_server, extra_toml=actions_toml(hook_timeout_secs=2))
    assert_stops_at_the_deadline(server, "xpcall(function() while true do end end, function() while true do end end)", 2)
    # And from a handler that calls back into a protected loop.
    assert_stops_at_the_deadline(server, """
local function spin() while true do end end
while true do xpcall(spin, function() pcall(spin) while true do end end) end
""", 2)


def test_a_lua_pattern_that_backtracks_for_ever_is_stopped_at_the_deadline(catalog_server):
    server = hooked_server(catalog_server, extra_toml=actions_toml(hook_timeout_secs=2))
    assert_stops_at_the_deadline(server, "string.find(('a'):rep(60), ('a*'):rep(30)..'b')", 2)
    # The same matcher through gsub, under pcall.
    assert_stops_at_the_deadline(server, "pcall(string.gsub, ('a'):rep(60), ('a*'):rep(30)..'b', 'x')", 2)


def test_a_hooks_timeout_only_lowers_the_operators_ceiling(catalog_server):
    ceiling = 4
    with Receiver("hang") as rx:
        server = hooked_server(catalog_server, extra_toml=actions_toml(hook_timeout_secs=ceiling, allow_loopback=True))
        api = server.api
        # Lua: 24 h asked, the ceiling given.
        secs = assert_stops_at_the_deadline(server, "while true do end", ceiling, timeout="24h")
        assert secs > ceiling - 0.5, f"stopped after {secs:.1f} s, before the ceiling"
        # Lua: a lower timeout still holds.
        secs = assert_stops_at_the_deadline(server, "while true do end", ceiling, timeout="1s")
        assert secs < ceiling - 1, f"a 1s timeout stopped the hook after {secs:.1f} s"
        # A webhook that never answers, 24 h asked.
        action = webhook_action("pre-commit", rx.url(), timeout="24h")
        assert upload(api, "hooked", "main", "_lakefs_actions/a.yaml", action).status_code == 201
        before = catalog_state(api)
        status, message, secs = timed_commit(api, "hooked", "main", ceiling + 15)
        assert status == 412 and "timeout" in message, (status, message)
        assert secs < ceiling + 2.5, f"the webhook stopped after {secs:.1f} s, its ceiling is {ceiling} s"
        assert len(rx.requests) == 1
        assert catalog_state(api) == before


# --- 3: slow hooks hold their own pool, not the server ------------------------------------------------

def test_a_hook_run_without_a_free_slot_is_refused_at_once_and_the_rest_of_the_server_answers(catalog_server):
    timeout = 6
    with Receiver("hang") as rx:
        server = catalog_server(extra_toml=actions_toml(hook_timeout_secs=timeout, allow_loopback=True,
                                                        hook_runs_per_repository=1, hook_workers=2))
        api = server.api
        create_repo(api, "lake", server.namespace("lake"))
        create_repo(api, "calm", server.namespace("calm"))
        action = webhook_action("pre-commit", rx.url(), branches=["w-*"])
        assert upload(api, "lake", "main", "_lakefs_actions/h.yaml", action).status_code == 201
        assert commit(api, "lake", "main").status_code == 201  # main runs no hook
        branches = [f"w-{i}" for i in range(10)]
        for b in branches:
            create_branch(api, "lake", b)
            assert upload(api, "lake", b, "data/x", b.encode()).status_code == 201
        assert upload(api, "calm", "main", "data/x", b"calm").status_code == 201
        before = only(catalog_state(api), "lake")
        pool = ThreadPoolExecutor(len(branches))
        try:
            futures = [pool.submit(timed_commit, api, "lake", b, timeout + 15) for b in branches]
            # All but the one that got the repository's slot answer at once.

            def answered():
                done = [f for f in futures if f.done()]
                return done if len(done) >= len(branches) - 1 else None

            done = eventually(answered, timeout=timeout - 2, what="9 of the 10 commits answer")
            refused = [f.result() for f in done]
            assert all(s == 503 and "hook runs in progress" in m for s, m, _ in refused), refused
            assert max(secs for _, _, secs in refused) < 2, refused
            slow = [f for f in futures if f not in done]
            assert len(slow) <= 1
            # While the slow one runs: the healthcheck and another repository's commit answer.
            if slow and not slow[0].done():
                assert healthcheck_secs(server) < 0.5
                status, message, secs = timed_commit(api, "calm", "main", 10)
                assert status == 201 and secs < 2, (status, message, secs)
                assert not slow[0].done(), "the measurements outlasted the slow hook; lengthen its timeout"
            for f in slow:
                status, message, secs = f.result()
                assert status == 412 and "timeout" in message, (status, message)
        finally:
            pool.shutdown(wait=False)
        assert len(rx.requests) == 1, "a refused run reached the webhook"
        assert only(catalog_state(api), "lake") == before
        # Once the slow run has ended, the repository's hooks run again.
        rx.answer = (204, {}, b"")

        def works_again():
            status, message, _ = timed_commit(api, "lake", branches[0], 30)
            assert status == 201, (status, message)
            return True

        eventually(works_again, timeout=10, interval=0.2, what="a commit in the repository passes its hook")


def test_forty_never_answering_webhooks_leave_the_server_answering(catalog_server):
    timeout, workers = 5, 4  # hook_workers' default
    with Receiver("hang") as rx:
        server = catalog_server(extra_toml=actions_toml(hook_timeout_secs=timeout, allow_loopback=True))
        api = server.api
        repos, branches = [f"repo-{i}" for i in range(4)], [f"w-{i}" for i in range(10)]
        for repo in repos:
            create_repo(api, repo, server.namespace(repo))
            action = webhook_action("pre-commit", rx.url(), branches=["w-*"], timeout="24h")
            assert upload(api, repo, "main", "_lakefs_actions/h.yaml", action).status_code == 201
            assert commit(api, repo, "main").status_code == 201
            for b in branches:
                create_branch(api, repo, b)
                assert upload(api, repo, b, "data/x", b.encode()).status_code == 201
        before = catalog_state(api)
        pool = ThreadPoolExecutor(len(repos) * len(branches))
        try:
            started = time.monotonic()
            futures = [pool.submit(timed_commit, api, repo, b, timeout + 20) for repo in repos for b in branches]
            eventually(lambda: rx.requests, timeout=10, what="a webhook reaches the receiver")
            latencies = []
            while not all(f.done() for f in futures):
                latencies.append(("healthcheck", healthcheck_secs(server)))
                latencies.append(("repositories", listing_secs(server)))
                wait(futures, timeout=0.2)
            took = time.monotonic() - started
            results = [f.result() for f in futures]
        finally:
            pool.shutdown(wait=False)
        slow = [r for r in results if r[0] != 503]
        refused = [r for r in results if r[0] == 503]
        assert latencies and max(secs for _, secs in latencies) < 1, latencies
        assert all(s == 412 and "timeout" in m for s, m, _ in slow), slow
        assert 1 <= len(slow) <= workers, [r[:2] for r in results]
        assert all("hook runs in progress" in m and secs < 2 for _, m, secs in refused), refused
        assert took < timeout + 5, f"the runs asked for 24 h took {took:.1f} s, the ceiling is {timeout} s"
        assert len(rx.requests) == len(slow)
        assert catalog_state(api) == before
        assert healthcheck_secs(server) < 0.5


# --- 4: a webhook's answer cannot fill memory ---------------------------------------------------------

def test_a_webhook_answer_of_endless_headers_cannot_fill_the_servers_memory(catalog_server):
    line = b"X-a: b\r\n"
    chunk = line * (MIB // len(line))
    stop = threading.Event()

    def flood(handler):
        sent = 0
        try:
            handler.wfile.write(b"HTTP/1.1 200 OK\r\n")
            while sent < 1536 * MIB and not stop.is_set():
                handler.wfile.write(chunk)
                sent += len(chunk)
            handler.wfile.write(b"\r\n")
        except OSError:
            pass
        handler.close_connection = True

    with Receiver(flood) as rx:
        try:
            server = hooked_server(catalog_server, extra_toml=actions_toml(hook_timeout_secs=8, allow_loopback=True))
            api = server.api
            action = webhook_action("pre-commit", rx.url())
            assert upload(api, "hooked", "main", "_lakefs_actions/h.yaml", action).status_code == 201
            before, peak = catalog_state(api), vm_hwm_bytes(server.proc.pid)
            status, message, _ = timed_commit(api, "hooked", "main", 60)
            assert status == 412, (status, message)
            grown = vm_hwm_bytes(server.proc.pid) - peak
            assert grown < 64 * MIB, f"peak RSS grew {grown / MIB:.0f} MiB"
            run = runs(api, "hooked")[0]
            assert run["status"] == "failed", run
            out = output(api, "hooked", run["run_id"])
            assert len(out) < 64 << 10, len(out)
            assert catalog_state(api) == before
            assert healthcheck_secs(server) < 0.5
        finally:
            stop.set()


# --- 5: server-side request forgery -------------------------------------------------------------------

def refused_urls(port):
    """Addresses a webhook may not reach by default: loopback in every spelling, unspecified,
    link-local (the cloud's metadata service), private, CGNAT and multicast."""
    return {
        "loopback": f"http://127.0.0.1:{port}/hook",
        "localhost": f"http://localhost:{port}/hook",
        "decimal": f"http://2130706433:{port}/hook",
        "hex": f"http://0x7f000001:{port}/hook",
        "short": f"http://127.1:{port}/hook",
        "unspecified": f"http://0.0.0.0:{port}/hook",
        "ipv6 loopback": f"http://[::1]:{port}/hook",
        "ipv4-mapped loopback": f"http://[::ffff:127.0.0.1]:{port}/hook",
        "metadata": "http://169.254.169.254/latest/meta-data/",
        "private 10/8": "http://10.0.0.1/hook",
        "private 172.16/12": "http://172.16.0.1/hook",
        "private 192.168/16": "http://192.168.0.1/hook",
        "cgnat": "http://100.64.0.1/hook",
        "multicast": "http://224.0.0.1/hook",
    }


def refused_run(api, url):
    """Commits with a pre-commit webhook to `url`: returns (message, output) of the failed run, having
    checked 412, "refused by policy" in both, and nothing changed."""
    assert upload(api, "hooked", "main", "_lakefs_actions/h.yaml", webhook_action("pre-commit", url)).status_code == 201
    before = catalog_state(api)
    status, message, _ = timed_commit(api, "hooked", "main", 30)
    assert status == 412 and "refused by policy" in message, (url, status, message)
    assert catalog_state(api) == before
    run = runs(api, "hooked")[0]
    assert run["status"] == "failed", (url, run)
    out = output(api, "hooked", run["run_id"])
    assert "refused by policy" in out, (url, out)
    return message, out


def test_a_webhook_reaches_no_loopback_link_local_or_private_address_by_default(catalog_server):
    canary = secrets.token_hex(12)
    with Receiver((200, {"X-Canary": canary}, f"the loopback service says {canary}".encode())) as rx:
        server = hooked_server(catalog_server, extra_toml=actions_toml(hook_timeout_secs=3))
        api = server.api
        messages = {}
        for what, url in refused_urls(rx.port).items():
            message, out = refused_run(api, url)
            assert canary not in out and canary not in message, (what, out)
            messages[what] = message
        assert rx.requests == [], "a refused webhook reached the receiver"
        # A closed port and an open one read the same: the hook is no port scanner.
        closed = free_port()
        message, _ = refused_run(api, f"http://127.0.0.1:{closed}/hook")

        def same(m, port):
            return re.sub(r"run id '[0-9a-v]+'", "run id", m).replace(str(port), "PORT")

        assert same(message, closed) == same(messages["loopback"], rx.port), (message, messages["loopback"])
        assert rx.requests == []


def test_a_redirect_from_an_allowed_receiver_to_a_refused_address_is_not_followed(catalog_server):
    with Receiver(host="127.0.0.2") as target:
        with Receiver() as rx:
            server = hooked_server(catalog_server, extra_toml=actions_toml(hook_timeout_secs=3, allow_loopback=True))
            api = server.api
            for location in [target.url("/stolen"), "http://169.254.169.254/latest/meta-data/"]:
                rx.answer = (302, {"Location": location}, b"")
                action = webhook_action("pre-commit", rx.url())
                assert upload(api, "hooked", "main", "_lakefs_actions/h.yaml", action).status_code == 201
                before = catalog_state(api)
                status, message, _ = timed_commit(api, "hooked", "main", 30)
                assert status == 412, (location, status, message)
                assert catalog_state(api) == before
                assert runs(api, "hooked")[0]["status"] == "failed"
            assert len(rx.requests) == 2
            assert target.requests == [], "the redirect was followed"


# --- 6: secrets stay masked ---------------------------------------------------------------------------

def test_a_secret_given_to_a_lua_hook_is_masked_in_its_output_its_error_and_the_log(catalog_server):
    token = "tok-" + secrets.token_hex(16)
    server = hooked_server(catalog_server, env={"LAKEFSACTION_TOKEN": token},
                           extra_toml=actions_toml(hook_timeout_secs=5) + '[log]\nlevel = "trace"\n')
    api = server.api
    script = "print(args.t)\nprint('t=' .. args.t)\nerror(args.t)\n"
    action = hook_action("pre-commit", "lua", {"script": script, "args": {"t": "{{ ENV.LAKEFSACTION_TOKEN }}"}})
    assert upload(api, "hooked", "main", "_lakefs_actions/s.yaml", action).status_code == 201
    before = catalog_state(api)
    status, message, _ = timed_commit(api, "hooked", "main", 30)
    assert status == 412, (status, message)
    assert token not in message and MASK in message, message
    assert catalog_state(api) == before
    run = runs(api, "hooked")[0]
    assert run["status"] == "failed", run
    out = output(api, "hooked", run["run_id"])
    assert token not in out and MASK in out, out
    assert MASK in out.splitlines() and "t=" + MASK in out.splitlines(), out
    r = api("GET", f"/repositories/hooked/actions/runs/{run['run_id']}/hooks")
    assert r.status_code == 200 and token not in r.text, r.text
    assert token not in server.output(), "the token is in the server's log"
    # The hook did get the value: a script may compare against it.
    check = f"if args.t ~= '{token}' then error('wrong value') end print('ok')"
    action = hook_action("pre-commit", "lua", {"script": check, "args": {"t": "{{ ENV.LAKEFSACTION_TOKEN }}"}})
    assert upload(api, "hooked", "main", "_lakefs_actions/s.yaml", action).status_code == 201
    status, message, _ = timed_commit(api, "hooked", "main", 30)
    assert status == 201, (status, message)


# --- 8: one way to frame a request --------------------------------------------------------------------

FOLDED = ["transfer-encoding folded with a space", "transfer-encoding folded with a tab", "chunk size with 0x"]


@pytest.mark.parametrize("case", FOLDED)
def test_a_folded_transfer_encoding_or_a_0x_chunk_size_is_a_400_that_closes(start_server, tmp_path, case):
    server = start_server("--config", str(write_config(tmp_path)))
    data = send_case(server, case)
    assert data is not None, f"{case}: the connection stayed open"
    statuses = [int(x) for x in re.findall(rb"HTTP/1\.1 (\d\d\d) ", data)]
    assert statuses == [400], (case, data[:400])
    state = requests.get(server.url + "/api/v1/setup_lakefs", timeout=30).json()["state"]
    assert state == "not_initialized", f"{case}: the smuggled set-up ran"


@pytest.mark.parametrize("fold", [" ", "\t"])
def test_any_folded_header_is_a_400_that_closes(start_server, tmp_path, fold):
    server = start_server("--config", str(write_config(tmp_path)))
    host = f"127.0.0.1:{server.port}"
    s = connect(server)
    s.sendall((f"GET /api/v1/healthcheck HTTP/1.1\r\nHost: {host}\r\nX-Note: a\r\n{fold}b\r\n\r\n"
               f"GET /api/v1/healthcheck HTTP/1.1\r\nHost: {host}\r\n\r\n").encode())
    data = read_all(s)
    s.close()
    assert data is not None, "the connection stayed open"
    assert [int(x) for x in re.findall(rb"HTTP/1\.1 (\d\d\d) ", data)] == [400], data[:400]
