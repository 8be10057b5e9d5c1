"""Attacks through actions (`_lakefs_actions/*` files that run hooks on repository events): a hook acts
with the rights of the user whose operation fired it and only on its own repository; a script cannot leave
its sandbox, hold the server's memory or a thread for ever; a webhook's answer cannot fill memory; a
broken action file stops the operation and changes nothing; the runs are read only with ci:ReadAction."""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from security.conftest import SECRET_X, SECRET_Y, make_victim
from security.util import ADMIN, catalog_state, create_branch, create_repo, create_user, upload

# Webhooks reach no loopback address unless the operator allows it; the receivers of these tests listen
# on 127.0.0.1. A line of the [actions] table.
LOOPBACK_WEBHOOKS = 'webhook_allowed_hosts = ["127.0.0.1/32"]\n'
TIMEOUT_TOML = "[actions]\nhook_timeout_secs = 2\nlua_memory_mib = 16\n" + LOOPBACK_WEBHOOKS


def lua_action(event, script, name="Guard", branches=None):
    on = {event: {"branches": branches} if branches else None}
    return json.dumps({"name": name, "on": on,
                       "hooks": [{"id": "script", "type": "lua", "properties": {"script": script}}]}).encode()


def runs(api, repo, **params):
    r = api("GET", f"/repositories/{repo}/actions/runs", params=params)
    assert r.status_code == 200, r.text
    return r.json()["results"]


def output(api, repo, run_id, hook="0000_0000"):
    r = api("GET", f"/repositories/{repo}/actions/runs/{run_id}/hooks/{hook}/output")
    assert r.status_code == 200, r.text
    return r.text


def commit(api, repo, branch, message="c"):
    return api("POST", f"/repositories/{repo}/branches/{branch}/commits", json={"message": message})


def test_a_lua_hook_reads_only_what_its_user_may_and_only_its_own_repository(catalog_server):
    v = make_victim(catalog_server())
    api = v.api
    # bob may write public/* on lake; he plants an action that tries to read what he may not.
    mallory = api.as_user(create_user(api, "mallory", [
        {"effect": "allow", "action": ["fs:*", "ci:*"], "resource": "arn:lakefs:fs:::repository/lake*"},
        {"effect": "deny", "action": ["fs:ReadObject"], "resource": "arn:lakefs:fs:::repository/lake/object/secret/*"},
    ]))
    script = """
local lakefs = require("lakefs")
local c1, own = lakefs.get_object("lake", "main", "secret/x")
local c2, other = lakefs.get_object("other", "main", "secret/y")
print(c1, c2)
print(own, other)
"""
    assert upload(mallory, "lake", "dev", "_lakefs_actions/leak.yaml", lua_action("pre-commit", script)).status_code == 201
    assert upload(mallory, "lake", "dev", "public/b", b"b").status_code == 201
    r = commit(mallory, "lake", "dev")
    assert r.status_code == 201, r.text
    [run] = runs(mallory, "lake", branch="dev")
    out = output(mallory, "lake", run["run_id"])
    assert out.splitlines()[0] == "401\t403", out
    assert SECRET_X.decode() not in out and SECRET_Y.decode() not in out
    # The admin's commit on dev runs the same action as the admin: it reads lake (the admin may) but
    # still not another repository.
    assert upload(api, "lake", "dev", "public/c", b"c").status_code == 201
    assert commit(api, "lake", "dev").status_code == 201
    newest = runs(api, "lake", branch="dev")[0]
    out = output(api, "lake", newest["run_id"])
    assert out.splitlines()[0].startswith("200\t403"), out
    assert SECRET_Y.decode() not in out


def test_the_runs_need_ci_read_action(catalog_server):
    v = make_victim(catalog_server())
    api = v.api
    assert upload(api, "lake", "main", "_lakefs_actions/a.yaml", lua_action("pre-commit", "print('x')")).status_code == 201
    assert commit(api, "lake", "main").status_code == 201
    run_id = runs(api, "lake")[0]["run_id"]
    bob = v.bob_api  # may list lake and read/write public/*, no ci:ReadAction
    for path in ["/actions/runs", f"/actions/runs/{run_id}", f"/actions/runs/{run_id}/hooks",
                 f"/actions/runs/{run_id}/hooks/0000_0000/output"]:
        r = bob("GET", "/repositories/lake" + path)
        assert r.status_code == 401 and "insufficient permissions" in r.json()["message"], (path, r.text)
        r = api("GET", "/repositories/lake" + path, auth=None)
        assert r.status_code == 401, (path, r.text)
    # Names that are not run ids never reach the store.
    for bad in ["x" * 20, run_id[:19], run_id + "0", "%2e%2e"]:
        assert api("GET", f"/repositories/lake/actions/runs/{bad}").status_code == 404
        assert api("GET", f"/repositories/lake/actions/runs/{run_id}/hooks/{bad}/output").status_code == 404
    r = api("GET", "/repositories/lake/actions/runs", params={"branch": "main", "commit": "abc"})
    assert r.status_code == 400, r.text
    assert api("GET", "/repositories/nowhere/actions/runs").status_code == 404


def test_a_script_cannot_escape_its_sandbox_or_exhaust_the_server(catalog_server):
    server = catalog_server(extra_toml=TIMEOUT_TOML)
    api = server.api
    create_repo(api, "hooked", server.namespace("hooked"))
    escapes = """
print(io, os, debug, package, dofile, loadfile, string.dump)
print(pcall(require, "io"), pcall(require, "os"))
print(load("\\27Lua"))
"""
    assert upload(api, "hooked", "main", "_lakefs_actions/a.yaml", lua_action("pre-commit", escapes)).status_code == 201
    assert commit(api, "hooked", "main").status_code == 201
    out = output(api, "hooked", runs(api, "hooked")[0]["run_id"])
    assert out.startswith("nil\tnil\tnil\tnil\tnil\tnil\tnil\nfalse\t"), out
    assert "attempt to load a binary chunk" in out, out

    for script, says in [("local t = {} for i = 1, 1000 do t[i] = string.rep('x', 1 << 20) .. i end",
                          "more than its memory limit"),
                         ("while true do pcall(function() while true do end end) end", "longer than its timeout")]:
        assert upload(api, "hooked", "main", "_lakefs_actions/a.yaml", lua_action("pre-commit", script)).status_code == 201
        before = catalog_state(api)
        started = time.monotonic()
        r = commit(api, "hooked", "main")
        assert r.status_code == 412 and says in r.json()["message"], r.text
        assert time.monotonic() - started < 20
        assert catalog_state(api) == before
    assert api("GET", "/repositories/hooked").status_code == 200


class Hostile(BaseHTTPRequestHandler):
    """A webhook receiver that answers with an endless body."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Length", str(1 << 34))
        self.end_headers()
        chunk = b"z" * (1 << 16)
        try:
            for _ in range(1 << 18):
                self.wfile.write(chunk)
        except OSError:
            pass

    def log_message(self, *args):
        pass


def test_a_webhooks_answer_cannot_fill_the_servers_memory(catalog_server):
    from security.util import vm_hwm_bytes
    server = catalog_server(extra_toml=TIMEOUT_TOML)
    api = server.api
    create_repo(api, "hooked", server.namespace("hooked"))
    hostile = ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    threading.Thread(target=hostile.serve_forever, daemon=True).start()
    try:
        action = json.dumps({"name": "Hook", "on": {"pre-commit": None}, "hooks": [
            {"id": "hk", "type": "webhook",
             "properties": {"url": f"http://127.0.0.1:{hostile.server_port}/x"}}]}).encode()
        assert upload(api, "hooked", "main", "_lakefs_actions/h.yaml", action).status_code == 201
        before = vm_hwm_bytes(server.proc.pid)
        r = commit(api, "hooked", "main")
        assert r.status_code == 201, r.text
        assert vm_hwm_bytes(server.proc.pid) - before < 64 << 20
        out = output(api, "hooked", runs(api, "hooked")[0]["run_id"])
        assert "[response body cut]" in out and len(out) < 1 << 17
    finally:
        hostile.shutdown()


def test_a_broken_or_oversized_action_file_stops_the_operation_and_changes_nothing(catalog_server):
    server = catalog_server()
    api = server.api
    create_repo(api, "hooked", server.namespace("hooked"))
    create_branch(api, "hooked", "dev")
    assert upload(api, "hooked", "main", "data/a", b"a").status_code == 201
    for name, content, says in [
        ("broken.yaml", b"name: act\non: {pre-commit: }\nhooks: [{id: hk, type: lua}]", "parsing file _lakefs_actions/broken.yaml"),
        ("yaml.yaml", b"name: [unclosed", "parsing file _lakefs_actions/yaml.yaml: yaml: line"),
        ("big.yaml", b"#" * (1 << 20), "more than the 65536 an action file may have"),
    ]:
        assert upload(api, "hooked", "main", f"_lakefs_actions/{name}", content).status_code == 201
        before = catalog_state(api)
        r = commit(api, "hooked", "main")
        assert r.status_code == 412 and says in r.json()["message"], r.text
        assert catalog_state(api) == before
        assert api("DELETE", "/repositories/hooked/branches/main/objects", params={"path": f"_lakefs_actions/{name}"}).status_code == 204
    # A failing pre-merge hook leaves the destination where it was.
    assert upload(api, "hooked", "dev", "_lakefs_actions/m.yaml",
                  lua_action("pre-merge", "error('not on main')", branches=["main"])).status_code == 201
    assert commit(api, "hooked", "dev").status_code == 201
    assert commit(api, "hooked", "main").status_code == 201
    head = api("GET", "/repositories/hooked/branches/main").json()["commit_id"]
    r = api("POST", "/repositories/hooked/refs/dev/merge/main", json={})
    assert r.status_code == 412 and "not on main" in r.json()["message"], r.text
    assert api("GET", "/repositories/hooked/branches/main").json()["commit_id"] == head
    [failed] = runs(api, "hooked", branch="main")
    assert failed["status"] == "failed" and failed["event_type"] == "pre-merge"


def test_secrets_in_a_webhook_are_masked_and_other_environment_is_unreadable(catalog_server):
    received = []

    class Recorder(BaseHTTPRequestHandler):
        def do_POST(self):
            received.append((self.path, dict(self.headers)))
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    rx = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=rx.serve_forever, daemon=True).start()
    try:
        server = catalog_server(env={"LAKEFSACTION_TOKEN": "tok-123", "SEDIMENT_PRIVATE": "do-not-send"},
                                extra_toml="[actions]\n" + LOOPBACK_WEBHOOKS)
        api = server.api
        create_repo(api, "hooked", server.namespace("hooked"))
        action = json.dumps({"name": "Hook", "on": {"pre-commit": None}, "hooks": [
            {"id": "hk", "type": "webhook", "properties": {
                "url": f"http://127.0.0.1:{rx.server_port}/hook",
                "headers": {"Authorization": "Bearer {{ ENV.LAKEFSACTION_TOKEN }}",
                            "X-Other": "{{ ENV.SEDIMENT_PRIVATE }}"}}}]}).encode()
        assert upload(api, "hooked", "main", "_lakefs_actions/h.yaml", action).status_code == 201
        assert commit(api, "hooked", "main").status_code == 201
        [(path, headers)] = received
        assert headers["Authorization"] == "Bearer tok-123"
        assert headers.get("X-Other", "") == ""
        out = output(api, "hooked", runs(api, "hooked")[0]["run_id"])
        assert "Authorization: *******" in out and "tok-123" not in out and "do-not-send" not in out, out
    finally:
        rx.shutdown()


def test_a_hook_cannot_fire_itself(catalog_server):
    """Operations a hook performs through the `lakefs` module fire no hooks: a pre-create-tag hook that
    creates a tag would otherwise recurse until the server's stack is gone."""
    server = catalog_server(extra_toml=TIMEOUT_TOML)
    api = server.api
    create_repo(api, "hooked", server.namespace("hooked"))
    script = """
local lakefs = require("lakefs")
local code = lakefs.create_tag(action.repository_id, action.source_ref, "by-hook-" .. action.run_id)
print(code)
"""
    assert upload(api, "hooked", "main", "_lakefs_actions/t.yaml", lua_action("pre-create-tag", script)).status_code == 201
    assert commit(api, "hooked", "main").status_code == 201
    head = api("GET", "/repositories/hooked/branches/main").json()["commit_id"]
    r = api("POST", "/repositories/hooked/tags", json={"id": "v1", "ref": head})
    assert r.status_code == 201, r.text
    tags = sorted(t["id"] for t in api("GET", "/repositories/hooked/tags").json()["results"])
    assert len(tags) == 2 and tags[1] == "v1" and tags[0].startswith("by-hook-"), tags
    assert [x["event_type"] for x in runs(api, "hooked")] == ["pre-create-tag"]
    assert output(api, "hooked", runs(api, "hooked")[0]["run_id"]) == "201\n"
