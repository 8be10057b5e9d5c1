"""Attacks on the Iceberg REST catalog (/iceberg/v1, docs/iceberg.md): every route needs a token or
credentials after set-up, reads only what a policy allows, refuses every write, caps its bodies, and
answers in the protocol's ErrorModel without revealing a table's metadata."""
import pytest
import requests

from security.util import (ADMIN_KEY, ADMIN_SECRET, Api, create_user, fill_template, route_table, set_up_admin,
                           write_config)
from tables_util import SCHEMA, append, ipc


def iceberg_routes():
    """The catalog's routes that need credentials, from the route table (src/server/http/route.h): the reads
    (GET, and HEAD where a GET names one thing) with /v1/config first, and the writes."""
    rows = [r for r in route_table()["routes"] if r["protocol"] == "iceberg" and r["access"] != "public"
            and not r["operation"].endswith(" NotFound")]
    sample = {"namespace": "eth", "table": "blocks"}
    paths = [(r["method"], fill_template(r["path"], sample).removeprefix("/iceberg")) for r in rows]
    reads = sorted({p for p in paths if p[0] == "GET"}, key=lambda p: (p[1] != "/v1/config", p[1]))
    reads += [("HEAD", path) for _, path in reads if path.count("/") >= 3]
    writes = [p for p in paths if p[0] != "GET"]
    assert reads[0] == ("GET", "/v1/config") and len(writes) >= 9, (reads, writes)
    return reads, writes


ROUTES, WRITES = iceberg_routes()


def make_table(server, table):
    """A table eth.<table> with blocks 0..9 (before set-up, while the tables API is open)."""
    assert server.put(f"/api/v1/datasets/eth/tables/{table}", data=ipc(schema=SCHEMA)).status_code in (200, 201)
    r = append(server, table, 0, 9)
    assert r.status_code == 201, r.text


def token(server, key, secret):
    r = requests.post(server.url + "/iceberg/v1/oauth/tokens", timeout=10,
                      data={"grant_type": "client_credentials", "client_id": key, "client_secret": secret})
    assert r.status_code == 200, r.text
    return {"Authorization": "Bearer " + r.json()["access_token"]}


@pytest.fixture
def lake(start_server, tmp_path):
    server = start_server("--config", str(write_config(tmp_path)))
    make_table(server, "blocks")
    make_table(server, "secret")
    set_up_admin(server)
    api = Api(server)
    server.reader = create_user(api, "reader", [{"effect": "allow", "action": ["tables:ReadTable"],
                                                 "resource": "arn:sediment:tables:::eth/blocks"}])
    server.nobody = create_user(api, "nobody")
    return server


def call(server, method, path, **kw):
    return requests.request(method, server.url + "/iceberg" + path, timeout=10, **kw)


def test_every_route_needs_credentials_and_reveals_nothing(lake):
    for method, path in ROUTES + WRITES:
        # A body only where one belongs: a GET with a body is refused before anything else (test_http_framing).
        r = call(lake, method, path, **({} if method in ("GET", "HEAD") else {"json": {}}))
        assert r.status_code == 401, (method, path, r.status_code, r.text)
        if method != "HEAD":
            assert r.json()["error"]["type"] == "NotAuthorizedException", (method, path)
            assert "block_num" not in r.text and "metadata" not in r.text
    forged = call(lake, "GET", "/v1/namespaces/eth/tables/blocks", headers={"Authorization": "Bearer " + "ab" * 40})
    assert forged.status_code == 401


def test_a_policy_decides_which_tables_a_token_reads(lake):
    reader = token(lake, *lake.reader)
    assert call(lake, "GET", "/v1/config", headers=reader).status_code == 200, "engines read the config first"
    assert call(lake, "GET", "/v1/namespaces/eth/tables/blocks", headers=reader).status_code == 200
    denied = call(lake, "GET", "/v1/namespaces/eth/tables/secret", headers=reader)
    assert denied.status_code == 403 and denied.json()["error"]["type"] == "ForbiddenException"
    assert "v" not in denied.json()["error"]["message"].split(), "the denial does not describe the table"
    assert call(lake, "GET", "/v1/namespaces", headers=reader).status_code == 403, "listing needs eth/* and more"
    nobody = token(lake, *lake.nobody)
    for method, path in ROUTES[1:]:
        assert call(lake, method, path, headers=nobody).status_code == 403, (method, path)


def test_writes_are_refused_for_everyone(lake):
    admin = token(lake, ADMIN_KEY, ADMIN_SECRET)
    before = call(lake, "GET", "/v1/namespaces/eth/tables/blocks", headers=admin).json()["metadata"]
    for method, path in WRITES:
        r = call(lake, method, path, headers=admin, json={"identifier": {"namespace": ["eth"], "name": "blocks"},
                                                         "requirements": [], "updates": []})
        assert r.status_code == 403 and r.json()["error"]["type"] == "ForbiddenException", (method, path, r.text)
    after = call(lake, "GET", "/v1/namespaces/eth/tables/blocks", headers=admin).json()["metadata"]
    assert after["current-snapshot-id"] == before["current-snapshot-id"]
    assert after["snapshots"] == before["snapshots"]


def test_the_token_endpoint_checks_what_it_is_given(lake):
    url = lake.url + "/iceberg/v1/oauth/tokens"
    wrong = requests.post(url, timeout=10, data={"grant_type": "client_credentials", "client_id": ADMIN_KEY,
                                                 "client_secret": ADMIN_SECRET + "x"})
    assert wrong.status_code == 401 and wrong.json()["error"] == "invalid_client"
    assert "access_token" not in wrong.text
    grant = requests.post(url, timeout=10, data={"grant_type": "password", "username": "admin", "password": "x"})
    assert grant.status_code == 400 and grant.json()["error"] == "unsupported_grant_type"
    empty = requests.post(url, timeout=10, data={"grant_type": "client_credentials"})
    assert empty.status_code == 401
    # HTTP Basic, as DuckDB sends it.
    basic = requests.post(url, timeout=10, auth=(ADMIN_KEY, ADMIN_SECRET), data={"grant_type": "client_credentials"})
    assert basic.status_code == 200 and basic.json()["token_type"] == "bearer"
    # A body past [server] max_body_bytes is refused before it is read.
    big = requests.post(url, timeout=30, data=b"grant_type=client_credentials&x=" + b"a" * (2 << 20),
                        headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert big.status_code == 413


def test_names_that_are_no_table_are_not_found(lake):
    admin = token(lake, ADMIN_KEY, ADMIN_SECRET)
    for path in ["/v1/namespaces/eth/tables/..", "/v1/namespaces/eth%1Fblocks/tables/snapshots",
                 "/v1/namespaces/eth/tables/blocks%00", "/v1/namespaces/../tables/blocks",
                 "/v1/namespaces/eth/tables/nope"]:
        r = call(lake, "GET", path, headers=admin)
        assert r.status_code in (404, 400), (path, r.status_code, r.text)
        if r.status_code == 404 and r.headers.get("Content-Type", "").startswith("application/json"):
            error = r.json()["error"]
            no_route = error["type"] == "NotFoundException" and error["message"].startswith("no route for ")
            assert no_route or error["type"] in ("NoSuchTableException", "NoSuchNamespaceException"), path
