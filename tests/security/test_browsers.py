"""What a web page in the user's browser could make the browser do to a server on 127.0.0.1: reach it
through DNS rebinding (5: Host names are checked), post a cross-site form with cached credentials
(6: JSON writes need application/json; 7: no 401 carries a Basic challenge that makes a browser cache
credentials in the first place)."""
import requests

from security.util import ADMIN, ADMIN_KEY, ADMIN_SECRET, create_repo, s3_client, set_up_admin, write_config

SETUP = {"username": "admin", "key": {"access_key_id": ADMIN_KEY, "secret_access_key": ADMIN_SECRET}}


def setup_state(server):
    r = requests.get(server.url + "/api/v1/setup_lakefs", timeout=30)
    assert r.status_code == 200, r.text
    return r.json()["state"]


# --- 5. Host ---------------------------------------------------------------------------------------------

def test_an_unknown_host_name_is_refused_before_anything_is_done(start_server, tmp_path):
    server = start_server("--config", str(write_config(tmp_path)))
    for host in ["attacker.example", f"attacker.example:{server.port}", "127.0.0.1.attacker.example",
                 "localhost.attacker.example"]:
        r = requests.post(server.url + "/api/v1/setup_lakefs", json=SETUP, headers={"Host": host}, timeout=30)
        assert r.status_code == 421, (host, r.status_code, r.text)
        assert setup_state(server) == "not_initialized"
        r = requests.get(server.url + "/api/v1/healthcheck", headers={"Host": host}, timeout=30)
        assert r.status_code == 421, (host, r.status_code)
    r = requests.put(server.url + "/api/v1/datasets/eth/tables/t", data=b"x", headers={"Host": "attacker.example"},
                     timeout=30)
    assert r.status_code == 421
    # The names of this machine's loopback work, with and without the port.
    for host in [f"127.0.0.1:{server.port}", f"localhost:{server.port}", "localhost", "127.0.0.1",
                 f"LOCALHOST:{server.port}", f"[::1]:{server.port}"]:
        r = requests.get(server.url + "/api/v1/setup_lakefs", headers={"Host": host}, timeout=30)
        assert r.status_code == 200, (host, r.status_code, r.text)
    r = requests.post(server.url + "/api/v1/setup_lakefs", json=SETUP, headers={"Host": f"localhost:{server.port}"},
                      timeout=30)
    assert r.status_code == 200, r.text


def test_the_gateway_checks_host_names_too(start_server, tmp_path):
    from botocore.exceptions import ClientError
    server = start_server("--config", str(write_config(tmp_path)))
    set_up_admin(server)
    api = lambda m, p, **kw: requests.request(m, server.url + "/api/v1" + p, auth=ADMIN, timeout=30, **kw)  # noqa: E731
    create_repo(api, "site", f"local://{tmp_path}/ns-site")
    s3 = s3_client(server)
    s3.put_object(Bucket="site", Key="main/a", Body=b"a")

    def addressed(host, path=None):
        """Signs (validly) for another Host, and virtual-host style when `path` is given."""
        def hook(request, **_):
            request.headers["Host"] = host
            if path is not None:
                request.url = server.url + path
        return hook

    evil = s3_client(server)
    evil.meta.events.register("before-sign.s3.GetObject", addressed("attacker.example"))
    try:
        evil.get_object(Bucket="site", Key="main/a")
        raise AssertionError("a request for attacker.example was served")
    except ClientError as e:
        assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 421, e.response
    # Virtual-host addressing under the configured gateway domain still works.
    vhost = s3_client(server)
    vhost.meta.events.register("before-sign.s3.GetObject",
                               addressed(f"site.s3.local.lakefs.io:{server.port}", "/main/a"))
    assert vhost.get_object(Bucket="site", Key="main/a")["Body"].read() == b"a"


def test_configured_host_names_are_allowed(start_server, tmp_path):
    server = start_server("--config", str(write_config(tmp_path)),
                          env={"SEDIMENT_SERVER_ALLOWED_HOSTS": "sediment.example,other.example"})
    for host in ["sediment.example", f"sediment.example:{server.port}", "other.example",
                 f"127.0.0.1:{server.port}", f"localhost:{server.port}"]:
        r = requests.get(server.url + "/api/v1/setup_lakefs", headers={"Host": host}, timeout=30)
        assert r.status_code == 200, (host, r.status_code, r.text)
    for host in ["attacker.example", "sediment.example.attacker.example", "xsediment.example"]:
        r = requests.get(server.url + "/api/v1/setup_lakefs", headers={"Host": host}, timeout=30)
        assert r.status_code == 421, (host, r.status_code, r.text)


# --- 6. Content-Type of JSON writes ---------------------------------------------------------------------

def test_json_writes_need_the_json_content_type(catalog_server):
    server = catalog_server()
    body = '{"name": "formed", "storage_namespace": "%s", "default_branch": "main"}' % server.namespace("formed")
    multipart = f'--x\r\nContent-Disposition: form-data; name="{body}"\r\n\r\n1\r\n--x--\r\n'
    for ctype, data in [("text/plain", body), ("application/x-www-form-urlencoded", body),
                        ("multipart/form-data; boundary=x", multipart), ("text/plain; charset=utf-8", body)]:
        r = requests.post(server.url + "/api/v1/repositories", data=data, headers={"Content-Type": ctype},
                          auth=ADMIN, timeout=30)
        # A multipart body never reaches the handler as a body: refused before it, 400 or 415.
        assert r.status_code == 415 or (ctype.startswith("multipart/") and r.status_code == 400), \
            (ctype, r.status_code, r.text)
        assert server.api("GET", "/repositories/formed").status_code == 404
    for path, payload in [("/auth/users", '{"id": "mallory"}'),
                          ("/auth/users/admin/credentials", "{}"),
                          ("/auth/policies", '{"id": "all", "statement": [{"effect": "allow", "action": ["*"],'
                                             ' "resource": "*"}]}')]:
        r = requests.post(server.url + "/api/v1" + path, data=payload, auth=ADMIN, timeout=30,
                          headers={"Content-Type": "text/plain"})
        assert r.status_code == 415, (path, r.status_code, r.text)
    assert server.api("GET", "/auth/users/mallory").status_code == 404
    assert server.api("GET", "/auth/policies/all").status_code == 404
    assert len(server.api("GET", "/auth/users/admin/credentials").json()["results"]) == 1
    r = requests.post(server.url + "/api/v1/auth/login", data='{"access_key_id": "%s", "secret_access_key": "%s"}'
                      % ADMIN, headers={"Content-Type": "application/x-www-form-urlencoded"}, timeout=30)
    assert r.status_code == 415 and "Set-Cookie" not in r.headers, (r.status_code, r.text)
    # JSON (with a charset, too) works; requests without a body are not affected.
    r = requests.post(server.url + "/api/v1/repositories", data=body, auth=ADMIN, timeout=30,
                      headers={"Content-Type": "application/json; charset=utf-8"})
    assert r.status_code == 201, r.text
    r = requests.post(server.url + "/api/v1/repositories/formed/branches/main/compact", auth=ADMIN, timeout=30)
    assert r.status_code in (200, 202), r.text
    r = requests.delete(server.url + "/api/v1/repositories/formed", auth=ADMIN, timeout=30)
    assert r.status_code == 204, r.text


def test_setup_needs_the_json_content_type(start_server, tmp_path):
    import json
    server = start_server("--config", str(write_config(tmp_path)))
    r = requests.post(server.url + "/api/v1/setup_lakefs", data=json.dumps(SETUP), timeout=30,
                      headers={"Content-Type": "text/plain"})
    assert r.status_code == 415, r.text
    assert setup_state(server) == "not_initialized"


# --- 7. no Basic challenge -------------------------------------------------------------------------------

def test_no_401_carries_a_basic_challenge(catalog_server):
    server = catalog_server()
    create_repo(server.api, "rrr", server.namespace("rrr"))
    u = server.url
    bad = ("AKIANOSUCHKEY", "nope")
    replies = {
        "no credentials": requests.get(u + "/api/v1/repositories", timeout=30),
        "wrong secret": requests.get(u + "/api/v1/user", auth=(ADMIN_KEY, "wrong"), timeout=30),
        "unknown key": requests.get(u + "/api/v1/repositories/rrr", auth=bad, timeout=30),
        "bad bearer": requests.get(u + "/api/v1/user", headers={"Authorization": "Bearer 00.00"}, timeout=30),
        "write": requests.post(u + "/api/v1/repositories", json={"name": "x"}, timeout=30),
        "upload": requests.post(u + "/api/v1/repositories/rrr/branches/main/objects", params={"path": "a"}, data=b"x",
                                timeout=30),
        "table": requests.get(u + "/api/v1/datasets/eth/tables/logs", timeout=30),
        "tables": requests.get(u + "/api/v1/tables", auth=bad, timeout=30),
        "jobs": requests.get(u + "/api/v1/jobs", timeout=30),
    }
    for name, r in replies.items():
        assert r.status_code == 401, (name, r.status_code, r.text)
        challenge = r.headers.get("WWW-Authenticate", "")
        assert "basic" not in challenge.lower(), (name, challenge)
