"""Attacks on the repositories' Iceberg catalog (/iceberg/api and /iceberg/relative_to/, docs/iceberg-repositories.md):
a user reaches only the repositories and tables a policy gives, through any crafted identifier, scope, body or
location; a table's files stay inside its repository's storage namespace; tags and commits stay read-only; and
every refusal changes nothing."""
import json

import pytest
import requests

from security.util import ADMIN, Api, create_repo, create_user, set_up_admin, upload, write_config

SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}]}


def call(server, method, path, auth=ADMIN, base="/iceberg/api/v1/lakefs", **kw):
    kw.setdefault("timeout", 30)
    return requests.request(method, server.url + base + path, auth=auth, **kw)


def make_table(server, repo, table="t", auth=ADMIN):
    r = call(server, "POST", "/namespaces", auth=auth, json={"namespace": [repo, "main", "ns"]})
    assert r.status_code in (200, 409), r.text
    r = call(server, "POST", f"/namespaces/{repo}%1Fmain%1Fns/tables", auth=auth, json={"name": table, "schema": SCHEMA})
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture
def lake(start_server, tmp_path):
    server = start_server("--config", str(write_config(tmp_path)))
    set_up_admin(server)
    api = Api(server)
    server.tmp = tmp_path
    create_repo(api, "lake", f"local://{tmp_path}/ns-lake")
    create_repo(api, "other", f"local://{tmp_path}/ns-other")
    server.other_table = make_table(server, "other", "secret")
    # alice may do anything to the catalog and objects of `lake`, nothing to `other`.
    server.alice = create_user(api, "alice", [
        {"effect": "allow", "action": ["catalog:*"], "resource": "arn:lakefs:catalog:::*/lake/*"},
        {"effect": "allow", "action": ["fs:*"], "resource": "arn:lakefs:fs:::repository/lake"},
        {"effect": "allow", "action": ["fs:*"], "resource": "arn:lakefs:fs:::repository/lake/*"}])
    server.api = api
    return server


def pointer_of(server, repo, table):
    r = server.api("GET", f"/repositories/{repo}/refs/main/objects/stat",
                   params={"path": f"_lakefs_tables/iceberg/namespaces/ns/tables/{table}"})
    return r.json().get("physical_address") if r.status_code == 200 else None


def test_another_repositorys_table_is_out_of_reach_whatever_the_identifier(lake):
    alice = lake.alice
    make_table(lake, "lake", "mine", auth=alice)
    before = pointer_of(lake, "other", "secret")
    attempts = [
        ("GET", "/iceberg/api/v1/lakefs", "/namespaces/other%1Fmain%1Fns/tables/secret", None),
        ("GET", "/iceberg/api/v1", "/namespaces/other%1Fmain%1Fns/tables/secret", None),
        ("GET", "/iceberg/api/v1/lakefs", "/namespaces/other.main.ns/tables/secret", None),
        ("GET", "/iceberg/relative_to/other.main/api/v1", "/namespaces/ns/tables/secret", None),
        ("GET", "/iceberg/relative_to/other/api/v1", "/namespaces/main%1Fns/tables/secret", None),
        ("POST", "/iceberg/api/v1/lakefs", "/namespaces/other%1Fmain%1Fns/tables/secret",
         {"requirements": [], "updates": [{"action": "set-properties", "updates": {"owned": "alice"}}]}),
        ("DELETE", "/iceberg/api/v1/lakefs", "/namespaces/other%1Fmain%1Fns/tables/secret", None),
        ("POST", "/iceberg/api/v1/lakefs", "/tables/rename",
         {"source": {"namespace": ["other", "main", "ns"], "name": "secret"},
          "destination": {"namespace": ["lake", "main", "ns"], "name": "stolen"}}),
        ("POST", "/iceberg/api/v1/lakefs", "/transactions/commit",
         {"table-changes": [{"identifier": {"namespace": ["lake", "main", "ns"], "name": "mine"},
                             "requirements": [], "updates": []},
                            {"identifier": {"namespace": ["other", "main", "ns"], "name": "secret"},
                             "requirements": [], "updates": [{"action": "set-properties", "updates": {"x": "y"}}]}]}),
        ("GET", "/iceberg/api/v1/lakefs", "/namespaces/other%1Fmain%1Fns/tables/secret/credentials", None),
        ("POST", "/iceberg/api/v1/lakefs", "/namespaces/other%1Fmain%1Fns/register",
         {"name": "x", "metadata-location": lake.other_table["metadata-location"]}),
    ]
    for method, base, path, body in attempts:
        r = call(lake, method, path, auth=alice, base=base, json=body)
        assert r.status_code in (400, 403), (method, base, path, r.status_code, r.text)
        assert "metadata" not in r.text and "location" not in r.text, r.text  # nothing of the table
        assert r.json()["error"]["code"] == r.status_code, r.text
    # A scope on `lake` cannot climb out of it: `other` becomes a ref of lake, which does not exist.
    r = call(lake, "GET", "/namespaces/other%1Fmain%1Fns/tables/secret", auth=alice,
             base="/iceberg/relative_to/lake/api/v1")
    assert r.status_code in (400, 404) and "metadata" not in r.text, r.text
    assert pointer_of(lake, "other", "secret") == before, "nothing changed"
    # Listing shows alice only her repository.
    r = call(lake, "GET", "/namespaces", auth=alice)
    assert r.json()["namespaces"] == [["lake"]], r.text


@pytest.mark.parametrize("ns", ["..%1Fmain%1Fns", "lake%1F..%1Fns", "lake%1Fmain%1F..", "lake%1Fmain%1Fa%2Fb",
                                "lake%1Fmain%1F", "lake%1Fmain%1F%00", "lake%1Fmain%1F" + "a" * 300])
def test_a_malformed_namespace_is_a_400_naming_it(lake, ns):
    r = call(lake, "POST", f"/namespaces/{ns}/tables", json={"name": "t", "schema": SCHEMA})
    assert r.status_code in (400, 404), r.text
    error = r.json()["error"]
    no_route = error["type"] == "NotFoundException" and error["message"].startswith("no route for ")  # a/b: a path
    assert no_route or error["type"] in ("BadRequestException", "NoSuchTableException"), r.text
    assert lake.api("GET", "/repositories/lake/branches/main/diff").json()["results"] == []


def test_a_tables_files_stay_inside_its_repositorys_namespace(lake):
    t = make_table(lake, "lake", "books")
    elsewhere = ["file:///etc", f"file://{lake.tmp}/ns-other/_managed/iceberg/x", "s3://bucket/x",
                 # the directory of every table (what would be vended for it), or another table's
                 f"file://{lake.tmp}/ns-lake/_managed/iceberg", f"file://{lake.tmp}/ns-lake/_managed",
                 t["metadata"]["location"],
                 f"file://{lake.tmp}/ns-lake/data/x", f"file://{lake.tmp}/ns-lake/_managed/../../ns-other/x"]
    for where in elsewhere:
        r = call(lake, "POST", "/namespaces/lake%1Fmain%1Fns/tables",
                 json={"name": "evil", "schema": SCHEMA, "location": where})
        assert r.status_code == 400, (where, r.text)
    # A commit cannot move the table, nor adopt another repository's manifest list.
    uuid = t["metadata"]["table-uuid"]
    path = "/namespaces/lake%1Fmain%1Fns/tables/books"
    r = call(lake, "POST", path, json={"requirements": [], "updates": [
        {"action": "set-location", "location": f"file://{lake.tmp}/ns-other/_managed/iceberg/x"}]})
    assert r.status_code == 400, r.text
    snap = {"snapshot-id": 1, "sequence-number": 1, "timestamp-ms": 1, "summary": {"operation": "append"},
            "manifest-list": lake.other_table["metadata-location"]}
    r = call(lake, "POST", path, json={"requirements": [{"type": "assert-table-uuid", "uuid": uuid}],
                                       "updates": [{"action": "add-snapshot", "snapshot": snap}]})
    assert r.status_code == 400, r.text
    # Register adopts only metadata inside the repository's namespace.
    r = call(lake, "POST", "/namespaces/lake%1Fmain%1Fns/register",
             json={"name": "adopted", "metadata-location": lake.other_table["metadata-location"]})
    assert r.status_code == 400, r.text
    assert call(lake, "GET", "/namespaces/lake%1Fmain%1Fns/tables/evil").status_code == 404


def test_a_pointer_planted_through_the_objects_api_reads_nothing_elsewhere(lake):
    make_table(lake, "lake", "books")
    forged = {"format-version": 2, "table-uuid": "x", "location": f"file://{lake.tmp}/ns-other/_managed/iceberg/y",
              "schemas": [], "current-schema-id": 0}
    r = upload(lake.api, "lake", "main", "_lakefs_tables/iceberg/namespaces/ns/tables/forged",
               json.dumps(forged).encode())
    assert r.status_code == 201, r.text
    r = call(lake, "GET", "/namespaces/lake%1Fmain%1Fns/tables/forged")
    assert r.status_code == 400 and "outside" in r.text, r.text


def test_tags_commits_and_protected_branches_are_read_only(lake):
    make_table(lake, "lake", "books")
    r = lake.api("POST", "/repositories/lake/branches/main/commits", json={"message": "books"})
    assert r.status_code == 201, r.text
    commit_id = r.json()["id"]
    assert lake.api("POST", "/repositories/lake/tags", json={"id": "v1", "ref": "main"}).status_code == 201
    update = {"requirements": [], "updates": [{"action": "set-properties", "updates": {"k": "v"}}]}
    for ref in ("v1", commit_id):
        assert call(lake, "GET", f"/namespaces/lake%1F{ref}%1Fns/tables/books").status_code == 200
        r = call(lake, "POST", f"/namespaces/lake%1F{ref}%1Fns/tables/books", json=update)
        assert r.status_code == 403 and "read-only" in r.text, r.text
    r = lake.api("POST", "/repositories/lake/branch_protection", json={"pattern": "main"})
    assert r.status_code in (201, 204), r.text
    r = call(lake, "POST", "/namespaces/lake%1Fmain%1Fns/tables/books", json=update)
    assert r.status_code == 403, r.text


def test_object_permissions_alone_do_not_reach_the_catalog(lake):
    """As lakeFS Enterprise: catalog actions are needed besides fs ones (and fs ones besides catalog ones)."""
    make_table(lake, "lake", "books")
    fs_only = create_user(lake.api, "fs-only", [{"effect": "allow", "action": ["fs:*"], "resource": "*"}])
    catalog_only = create_user(lake.api, "catalog-only", [{"effect": "allow", "action": ["catalog:*"], "resource": "*"}])
    for who in (fs_only, catalog_only):
        r = call(lake, "GET", "/namespaces/lake%1Fmain%1Fns/tables/books", auth=who)
        assert r.status_code == 403, r.text


def test_the_token_endpoint_and_bodies(lake):
    url = lake.url + "/iceberg/api/v1/oauth/tokens"
    r = requests.post(url, data={"grant_type": "client_credentials", "client_id": ADMIN[0], "client_secret": "wrong"},
                      timeout=30)
    assert r.status_code == 401 and r.json()["error"] == "invalid_client", r.text
    r = requests.post(url, data={"grant_type": "client_credentials", "client_id": ADMIN[0],
                                 "client_secret": ADMIN[1]}, timeout=30)
    token = r.json()["access_token"]
    r = call(lake, "GET", "/namespaces", auth=None, headers={"Authorization": "Bearer " + token})
    assert r.status_code == 200, r.text
    assert call(lake, "GET", "/namespaces", auth=None).status_code == 401
    # A body past the server's limit is refused before it is read, and nothing is created.
    r = call(lake, "POST", "/namespaces", data=b"{" + b" " * (2 << 20) + b"}",
             headers={"Content-Type": "application/json"})
    assert r.status_code == 413, r.text
    for bad in (b"not json", b"[]", b'{"namespace": "lake.main.x"}', b'{"namespace": ["lake", "main", 7]}'):
        r = call(lake, "POST", "/namespaces", data=bad, headers={"Content-Type": "application/json"})
        assert r.status_code == 400 and r.json()["error"]["type"] == "BadRequestException", (bad, r.text)
    assert lake.api("GET", "/repositories/lake/branches/main/diff").json()["results"] == []
