"""Answers to requests that go wrong, as the docs promise them (issue 47): each in the format of the API
the request was for, saying what to do, and counted and logged under the route it reached."""
import re
import socket

import requests

from conftest import ADMIN, ADMIN_KEY, ADMIN_SECRET, run_sediment, set_up_admin


def raw(port, head):
    """Sends `head` as it is; returns the answer's status line and body."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head.encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    status, _, rest = data.decode(errors="replace").partition("\r\n")
    return status, rest.partition("\r\n\r\n")[2]


def test_a_post_without_a_body_reaches_its_route(start_server):
    """`curl -X POST` sends neither Content-Length nor a body: the README's commands must still work."""
    s = start_server()
    status, body = raw(s.port, "POST /api/v1/datasets/demo/tables/logs/compact HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                               "Connection: close\r\n\r\n")
    assert " 404 " in status and "table demo.logs" in body, (status, body)
    metrics = s.get("/metrics").text
    counted = [m for m in metrics.splitlines() if "http_requests_total{" in m]
    assert any('route="tables Compact"' in m and '"404"' in m for m in counted), counted
    assert "/api/v1/datasets/demo/tables/logs/compact" in s.output()  # the request log has it


def test_iceberg_answers_say_what_to_do(start_server):
    s = start_server()
    r = s.get("/iceberg/v1/no/such/route")
    assert r.status_code == 404 and r.json()["error"]["type"] == "NotFoundException", r.text
    r = s.post("/iceberg/v1/oauth/tokens", json={"grant_type": "client_credentials"})
    assert r.status_code == 400 and r.json()["error"] == "invalid_request", r.text
    assert "application/x-www-form-urlencoded" in r.json()["error_description"]
    set_up_admin(s)
    r = s.get("/iceberg/v1/namespaces")
    assert r.status_code == 401 and "oauth/tokens" in r.json()["error"]["message"], r.text
    r = s.post("/iceberg/v1/oauth/tokens", data={"grant_type": "client_credentials", "client_id": ADMIN_KEY,
                                                 "client_secret": ADMIN_SECRET})
    assert r.status_code == 200, r.text


def test_refusals_before_routing_are_s3_errors_on_gateway_paths(start_server):
    s = start_server()
    r = requests.get(s.url + "/my-bucket/key", headers={"Host": "attacker.example"}, timeout=10)
    assert r.status_code == 421 and r.headers["Content-Type"].startswith("application/xml"), r.text
    assert "<Code>MisdirectedRequest</Code>" in r.text
    assert f"<RequestId>{r.headers['x-amz-request-id']}</RequestId>" in r.text
    r = requests.get(s.url + "/api/v1/repositories", headers={"Host": "attacker.example"}, timeout=10)
    assert r.status_code == 421 and "allowed_hosts" in r.json()["message"], r.text


def test_an_s3_error_names_one_request_id(start_server):
    s = start_server()
    set_up_admin(s)
    r = requests.get(s.url + "/no-such-repo/main/x", auth=ADMIN, timeout=10)  # basic auth: refused as S3 does
    ids = re.findall(r"<RequestId>([^<]*)</RequestId>", r.text)
    assert r.status_code >= 400 and ids == [r.headers["x-amz-request-id"]], (r.status_code, r.headers, r.text)


def test_a_cookie_write_without_x_requested_with_is_told_why(start_server):
    s = start_server()
    set_up_admin(s)
    session = requests.Session()
    r = session.post(s.url + "/api/v1/auth/login", json={"access_key_id": ADMIN_KEY, "secret_access_key": ADMIN_SECRET},
                     timeout=10)
    assert r.status_code in (200, 204), r.text
    r = session.post(s.url + "/api/v1/repositories", json={"name": "r1", "storage_namespace": "local://x"}, timeout=10)
    assert r.status_code == 401 and "X-Requested-With" in r.json()["message"], r.text
    r = session.get(s.url + "/api/v1/repositories", timeout=10)
    assert r.status_code == 200, r.text  # reads need no header


def test_the_cli_says_which_variables_hold_the_key(start_server):
    s = start_server()
    set_up_admin(s)
    code, out = run_sediment("repo", "list", env={"SEDIMENT_URL": s.url})
    assert code != 0 and "SEDIMENT_ACCESS_KEY_ID" in out and "SEDIMENT_SECRET_ACCESS_KEY" in out, out
