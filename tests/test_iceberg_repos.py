"""Iceberg tables in repositories (docs/iceberg-repositories.md) written and read by real engines: PyIceberg and
DuckDB 1.4.4 (from .venv-engines, run as subprocesses: tests/iceberg_repo_engines.py) through the lakeFS
Enterprise-form catalog at /iceberg/api, while lakeFS operations (commit, branch, tag, reset) version them."""
import json
import os
import subprocess
import uuid

import pytest
import requests

from conftest import ROOT, s3_settings
from security.util import ADMIN, Api, create_branch, create_repo, create_user, set_up_admin, write_config

ENGINES = ROOT / ".venv-engines" / "bin" / "python"
RUNNER = ROOT / "tests" / "iceberg_repo_engines.py"


def run(server, steps, credential=ADMIN, extra=None, timeout=300):
    """The outcome of each step, as the runner reports it."""
    props = {"prefix": "lakefs", "uri": server.url + "/iceberg/api",
             "oauth2-server-uri": server.url + "/iceberg/api/v1/oauth/tokens",
             "credential": f"{credential[0]}:{credential[1]}"}
    props.update(extra or {})
    p = subprocess.run([str(ENGINES), str(RUNNER), json.dumps({"catalog": props, "steps": steps})],
                       capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout)


def ok(outcomes):
    """The steps' values; every step must have succeeded."""
    for o in outcomes:
        assert "ok" in o, o
    return [o["ok"] for o in outcomes]


@pytest.fixture
def lake(start_server, tmp_path):
    if not ENGINES.exists():
        pytest.fail("no .venv-engines: run scripts/install-test.sh")
    server = start_server("--config", str(write_config(tmp_path)))
    set_up_admin(server)
    server.api = Api(server)
    create_repo(server.api, "lake", f"local://{tmp_path}/ns-lake")
    return server


def commit(api, repo, branch, message):
    r = api("POST", f"/repositories/{repo}/branches/{branch}/commits", json={"message": message})
    assert r.status_code == 201, r.text
    return r.json()["id"]


def test_pyiceberg_writes_a_table_that_lakefs_commits_branches_and_tags(lake):
    api = lake.api
    _, created, _, _, rows = ok(run(lake, [
        ["create_namespace", ["lake", "main", "inventory"]],
        ["create_table", "lake.main.inventory.books", {"id": "long", "name": "string"}],
        ["append", "lake.main.inventory.books", {"id": [1, 2], "name": ["a", "b"]}],
        ["add_column", "lake.main.inventory.books", "year", "long"],
        ["read", "lake.main.inventory.books"],
    ]))
    assert created["location"].startswith(f"file://{lake.data_dir.parent}/ns-lake/_managed/iceberg/"), created
    assert rows == [{"id": 1, "name": "a", "year": None}, {"id": 2, "name": "b", "year": None}]
    # Each Iceberg commit is an uncommitted change of the branch.
    diff = api("GET", "/repositories/lake/branches/main/diff").json()["results"]
    assert sorted(d["path"] for d in diff) == ["_lakefs_tables/iceberg/namespaces/inventory/.namespace",
                                               "_lakefs_tables/iceberg/namespaces/inventory/tables/books"]
    commit(api, "lake", "main", "books")
    create_branch(api, "lake", "dev")
    r = api("POST", "/repositories/lake/tags", json={"id": "v1", "ref": "main"})
    assert r.status_code == 201, r.text
    out = run(lake, [
        ["append", "lake.dev.inventory.books", {"id": [3], "name": ["c"], "year": [2001]}],
        ["read", "lake.dev.inventory.books"],
        ["read", "lake.main.inventory.books"],
        ["read", "lake.v1.inventory.books"],
        ["append", "lake.v1.inventory.books", {"id": [9], "name": ["z"], "year": [1]}],
        ["create_namespace", ["lake", "v1", "other"]],
    ])
    assert [r["id"] for r in out[1]["ok"]] == [1, 2, 3], "dev sees its append"
    assert [r["id"] for r in out[2]["ok"]] == [1, 2], "main does not"
    assert [r["id"] for r in out[3]["ok"]] == [1, 2], "the tag reads the table as it was"
    assert out[4]["error"] == "ForbiddenError" and "read-only" in out[4]["message"], out[4]
    assert out[5]["error"] == "ForbiddenError", out[5]
    # A reset drops the branch's Iceberg commits like any uncommitted change.
    r = api("PUT", "/repositories/lake/branches/dev", json={"type": "reset"})
    assert r.status_code == 204, r.text
    assert [r["id"] for r in ok(run(lake, [["read", "lake.dev.inventory.books"]]))[0]] == [1, 2]


def test_concurrent_appends_each_land_once_the_losers_retrying_after_409(lake):
    out = ok(run(lake, [
        ["create_namespace", ["lake", "main", "events"]],
        ["create_table", "lake.main.events.clicks", {"id": "long"}],
        ["appends", "lake.main.events.clicks", 8, 3],
        ["read", "lake.main.events.clicks"],
    ]))
    ids = [r["id"] for r in out[3]]
    assert sorted(ids) == sorted(w * 1000 + i for w in range(8) for i in range(3)), "each append exactly once"
    # PyIceberg retries a 409 itself (commit.retry.num-retries): the server's count shows the races lost.
    metrics = requests.get(lake.url + "/metrics", timeout=30).text
    lost = sum(int(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
               if line.startswith('http_requests_total{method="POST",route="lakefs-iceberg UpdateTable",code="409"}'))
    assert lost + out[2]["retries"] > 0, "eight writers from one state: all but one lost the compare-and-set"


def test_duckdb_reads_and_writes_through_the_relative_to_endpoints(lake):
    ok(run(lake, [
        ["create_namespace", ["lake", "main", "inventory"]],
        ["create_table", "lake.main.inventory.books", {"id": "long", "name": "string"}],
        ["append", "lake.main.inventory.books", {"id": [1, 2], "name": ["a", "b"]}],
    ]))
    branch_scope = lake.url + "/iceberg/relative_to/lake.main/api"
    repo_scope = lake.url + "/iceberg/relative_to/lake/api"
    (results,) = ok(run(lake, [["duckdb", branch_scope, [
        "SELECT count(*), sum(id) FROM lake.inventory.books",
        "INSERT INTO lake.inventory.books VALUES (3, 'c')",
        "SELECT count(*), sum(id) FROM lake.inventory.books",
    ]]]))
    assert results[0] == [[2, 3]] and results[2] == [[3, 6]], results
    rows = ok(run(lake, [["read", "lake.main.inventory.books"]]))[0]
    assert [r["id"] for r in rows] == [1, 2, 3], "DuckDB's insert is a commit PyIceberg reads"
    # Scoped to the repository, each ref is a schema prefix (main.inventory), as Starburst's integration uses it.
    (scoped,) = ok(run(lake, [["list_namespaces", ["main"]]],
                       extra={"uri": repo_scope}))
    assert scoped == [["main", "inventory"]], scoped


def merge(api, source, dest):
    return api("POST", f"/repositories/lake/refs/{source}/merge/{dest}", json={})


def test_appends_on_both_branches_merge_into_one_table_holding_every_row(lake):
    api = lake.api
    ok(run(lake, [
        ["create_namespace", ["lake", "main", "sales"]],
        ["create_table", "lake.main.sales.orders", {"id": "long", "who": "string"}],
        ["append", "lake.main.sales.orders", {"id": [1, 2], "who": ["a", "b"]}],
    ]))
    commit(api, "lake", "main", "orders")
    create_branch(api, "lake", "dev")
    ok(run(lake, [
        ["append", "lake.dev.sales.orders", {"id": [10, 11], "who": ["dev", "dev"]}],
        ["append", "lake.dev.sales.orders", {"id": [12], "who": ["dev"]}],
        ["append", "lake.main.sales.orders", {"id": [3], "who": ["c"]}],
    ]))
    commit(api, "lake", "dev", "dev appends")
    commit(api, "lake", "main", "main appends")
    r = merge(api, "dev", "main")
    assert r.status_code == 200, r.text
    before_reads = ok(run(lake, [["load", "lake.main.sales.orders"], ["read", "lake.main.sales.orders"]]))
    assert [row["id"] for row in before_reads[1]] == [1, 2, 3, 10, 11, 12], "every row of both sides, once"
    # The merged table is an ordinary table: engines read it, and it takes further appends.
    (results,) = ok(run(lake, [["duckdb", lake.url + "/iceberg/relative_to/lake.main/api",
                                ["SELECT count(*), count(DISTINCT id) FROM lake.sales.orders"]]]))
    assert results == [[[6, 6]]], results
    after = ok(run(lake, [["append", "lake.main.sales.orders", {"id": [4], "who": ["d"]}],
                          ["read", "lake.main.sales.orders"]]))
    assert [row["id"] for row in after[1]] == [1, 2, 3, 4, 10, 11, 12]
    # Merging again later: the base is now the branch's head of the first merge, which main's history
    # never held; the rule still applies from where both sides last agreed.
    commit(api, "lake", "main", "one more")
    ok(run(lake, [["append", "lake.dev.sales.orders", {"id": [13], "who": ["dev"]}],
                  ["append", "lake.main.sales.orders", {"id": [5], "who": ["e"]}]]))
    commit(api, "lake", "dev", "dev again")
    commit(api, "lake", "main", "main again")
    r = merge(api, "dev", "main")
    assert r.status_code == 200, r.text
    rows = ok(run(lake, [["read", "lake.main.sales.orders"]]))[0]
    assert [row["id"] for row in rows] == [1, 2, 3, 4, 5, 10, 11, 12, 13], rows


def test_anything_but_appends_on_both_sides_is_a_conflict_naming_the_table_and_why(lake):
    api = lake.api
    ok(run(lake, [
        ["create_namespace", ["lake", "main", "sales"]],
        ["create_table", "lake.main.sales.orders", {"id": "long"}],
        ["append", "lake.main.sales.orders", {"id": [1]}],
    ]))
    commit(api, "lake", "main", "orders")
    create_branch(api, "lake", "dev")
    ok(run(lake, [
        ["add_column", "lake.dev.sales.orders", "extra", "long"],
        ["append", "lake.main.sales.orders", {"id": [2]}],
    ]))
    commit(api, "lake", "dev", "schema")
    head = commit(api, "lake", "main", "append")
    r = merge(api, "dev", "main")
    assert r.status_code == 409, r.text
    assert "_lakefs_tables/iceberg/namespaces/sales/tables/orders" in r.text and "schema" in r.text, r.text
    assert api("GET", "/repositories/lake/branches/main").json()["commit_id"] == head, "nothing merged"
    # One side only: lakeFS's own rule, the changed side's table.
    create_branch(api, "lake", "solo", source="main")
    ok(run(lake, [["append", "lake.solo.sales.orders", {"id": [7]}]]))
    commit(api, "lake", "solo", "solo append")
    assert merge(api, "solo", "main").status_code == 200
    assert [row["id"] for row in ok(run(lake, [["read", "lake.main.sales.orders"]]))[0]] == [1, 2, 7]


def table_files(lake):
    root = lake.data_dir.parent / "ns-lake" / "_managed" / "iceberg"
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_catalog_gc_takes_a_deleted_branchs_table_files_and_keeps_mains(lake):
    api = lake.api
    ok(run(lake, [
        ["create_namespace", ["lake", "main", "sales"]],
        ["create_table", "lake.main.sales.orders", {"id": "long"}],
        ["append", "lake.main.sales.orders", {"id": [1, 2]}],
    ]))
    commit(api, "lake", "main", "orders")
    mains = table_files(lake)
    create_branch(api, "lake", "dev")
    ok(run(lake, [["append", "lake.dev.sales.orders", {"id": [10]}],
                  ["append", "lake.dev.sales.orders", {"id": [11]}]]))
    devs = table_files(lake) - mains
    assert any(p.endswith(".parquet") for p in devs) and any(p.endswith(".avro") for p in devs), devs
    assert api("DELETE", "/repositories/lake/branches/dev").status_code == 204
    r = api("POST", "/repositories/lake/gc", params={"grace_seconds": 0})
    assert r.status_code == 200, r.text
    left = table_files(lake)
    assert left & devs == set(), f"the deleted branch's files stay: {sorted(left & devs)}"
    assert mains <= left, f"main's files went: {sorted(mains - left)}"
    assert [row["id"] for row in ok(run(lake, [["read", "lake.main.sales.orders"]]))[0]] == [1, 2]
    # A table dropped on main (and committed) keeps its files while a commit within retention names them.
    ok(run(lake, [["drop_table", "lake.main.sales.orders"]]))
    commit(api, "lake", "main", "drop")
    assert api("POST", "/repositories/lake/gc", params={"grace_seconds": 0}).status_code == 200
    assert mains <= table_files(lake), "the commit before the drop still names them"


def test_on_object_storage_engines_get_credentials_for_the_table_and_nothing_else(start_server, tmp_path):
    """MinIO: PyIceberg and DuckDB bring no storage keys; loadTable vends STS credentials limited to the
    table's location (read-only to a user who may only read it)."""
    settings = s3_settings(f"t-{uuid.uuid4().hex[:12]}")
    if settings is None:
        pytest.skip("no S3 configured (scripts/test.sh starts MinIO)")
    if not ENGINES.exists():
        pytest.fail("no .venv-engines: run scripts/install-test.sh")
    cfg = write_config(tmp_path, settings)
    server = start_server("--config", str(cfg))
    set_up_admin(server)
    server.api = Api(server)
    bucket = os.environ["SEDIMENT_TEST_S3_BUCKET"]
    prefix = f"repos-{uuid.uuid4().hex[:8]}"
    create_repo(server.api, "lake", f"s3://{bucket}/{prefix}/lake")
    out = ok(run(server, [
        ["create_namespace", ["lake", "main", "inventory"]],
        ["create_table", "lake.main.inventory.books", {"id": "long", "name": "string"}],
        ["append", "lake.main.inventory.books", {"id": [1, 2], "name": ["a", "b"]}],
        ["create_table", "lake.main.inventory.other", {"id": "long"}],
        ["append", "lake.main.inventory.other", {"id": [7]}],
        ["read", "lake.main.inventory.books"],
        ["duckdb", server.url + "/iceberg/relative_to/lake.main/api",
         ["SELECT count(*) FROM lake.inventory.books", "INSERT INTO lake.inventory.books VALUES (3, 'c')",
          "SELECT sum(id) FROM lake.inventory.books"]],
    ]))
    assert out[1]["location"].startswith(f"s3://{bucket}/{prefix}/lake/_managed/iceberg/"), out[1]
    assert [r["id"] for r in out[5]] == [1, 2]
    assert out[6][0] == [[2]] and out[6][2] == [[6]], out[6]
    # The vended keys reach this table's files, not the other table's nor anything else.
    from pyarrow import fs
    reader = create_user(server.api, "reader", [
        {"effect": "allow", "action": ["catalog:ReadTable"], "resource": "*"},
        {"effect": "allow", "action": ["fs:ReadObject"], "resource": "*"}])
    for who, can_write in ((ADMIN, True), (reader, False)):
        loaded = requests.get(server.url + "/iceberg/api/v1/lakefs/namespaces/lake%1Fmain%1Finventory/tables/books",
                              auth=who, timeout=30).json()
        (creds,) = loaded["storage-credentials"]
        assert creds["prefix"] == out[1]["location"]
        c = creds["config"]
        s3 = fs.S3FileSystem(access_key=c["s3.access-key-id"], secret_key=c["s3.secret-access-key"],
                             session_token=c["s3.session-token"], endpoint_override=c["s3.endpoint"].split("://")[1],
                             scheme="http", region="us-east-1")
        table_dir = out[1]["location"].removeprefix("s3://")
        assert s3.get_file_info(fs.FileSelector(table_dir, recursive=True)), "its own files are listed"
        other_dir = out[3]["location"].removeprefix("s3://")
        for forbidden in (other_dir, f"{bucket}/{prefix}", bucket):
            with pytest.raises(OSError):
                s3.get_file_info(fs.FileSelector(forbidden, recursive=True))
        probe = f"{table_dir}/data/probe-{who[0]}.txt"
        if can_write:
            with s3.open_output_stream(probe) as f:
                f.write(b"x")
            with pytest.raises(OSError):  # files may be shared with other branches and commits: never deleted
                s3.delete_file(probe)
            with pytest.raises(OSError):  # only data/ and metadata/
                with s3.open_output_stream(f"{table_dir}/elsewhere.txt") as f:
                    f.write(b"x")
        else:
            with pytest.raises(OSError):
                with s3.open_output_stream(probe) as f:
                    f.write(b"x")


SPARK_JARS = [str(ROOT / ".cache" / "jars" / j)
              for j in ("iceberg-spark-runtime-4.0_2.13-1.10.0.jar", "iceberg-aws-bundle-1.10.0.jar")]


def spark(lake, sql, timeout=600):
    for jar in SPARK_JARS:
        assert os.path.exists(jar), f"{jar} missing: run scripts/install-test.sh"
    return ok(run(lake, [["spark", SPARK_JARS, sql]], timeout=timeout))[0]


def test_spark_writes_updates_deletes_and_merges_on_a_branch_and_lakefs_merges_it(lake):
    """Spark as lakeFS Enterprise's docs configure it: row-level changes with position deletes on a branch,
    main unchanged until the lakeFS merge; time travel by snapshot id and by tag."""
    api = lake.api
    t = "sed.lake.main.sp.events"
    results = spark(lake, [
        "CREATE NAMESPACE sed.lake.main.sp",
        f"CREATE TABLE {t} (id bigint, kind string) USING iceberg TBLPROPERTIES ('format-version'='2', "
        "'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read')",
        f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b'), (3, 'c')",
        "SHOW NAMESPACES IN sed.lake.main",
        f"SELECT snapshot_id FROM {t}.snapshots",
    ])
    assert results[3] in ([["lake.main.sp"]], [["sp"]]), results[3]
    first_snapshot = results[4][0][0]
    commit(api, "lake", "main", "spark's table")
    assert api("POST", "/repositories/lake/tags", json={"id": "v1", "ref": "main"}).status_code == 201
    create_branch(api, "lake", "exp")
    b = "sed.lake.exp.sp.events"
    results = spark(lake, [
        f"INSERT INTO {b} VALUES (10, 'x')",
        f"UPDATE {b} SET kind = 'B' WHERE id = 2",
        f"DELETE FROM {b} WHERE id = 1",
        f"MERGE INTO {b} t USING (SELECT 3 AS id, 'C' AS kind UNION ALL SELECT 11, 'y') s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET kind = s.kind WHEN NOT MATCHED THEN INSERT *",
        f"SELECT id, kind FROM {b} ORDER BY id",
        f"SELECT count(*) FROM {b}.delete_files",
        f"SELECT id FROM {t} ORDER BY id",
    ])
    assert results[4] == [[2, "B"], [3, "C"], [10, "x"], [11, "y"]], results[4]
    assert results[5][0][0] > 0, "merge-on-read wrote position deletes"
    assert results[6] == [[1], [2], [3]], "main is unchanged"
    commit(api, "lake", "exp", "row-level changes")
    r = api("POST", "/repositories/lake/refs/exp/merge/main", json={})
    assert r.status_code == 200, r.text
    results = spark(lake, [
        f"SELECT id, kind FROM {t} ORDER BY id",
        f"SELECT id FROM {t} VERSION AS OF {first_snapshot} ORDER BY id",
        "SELECT id FROM sed.lake.v1.sp.events ORDER BY id",
    ])
    assert results[0] == [[2, "B"], [3, "C"], [10, "x"], [11, "y"]], "main after the lakeFS merge"
    assert results[1] == [[1], [2], [3]] and results[2] == [[1], [2], [3]], "time travel: snapshot id and tag"
    # PyIceberg reads what Spark wrote, deletes applied.
    assert [r["id"] for r in ok(run(lake, [["read", "lake.main.sp.events"]]))[0]] == [2, 3, 10, 11]


def test_two_spark_writers_on_one_table_each_append_lands_once(lake):
    spark(lake, ["CREATE NAMESPACE sed.lake.main.conc",
                 "CREATE TABLE sed.lake.main.conc.t (id bigint, who string) USING iceberg "
                 "TBLPROPERTIES ('commit.retry.num-retries'='50')"])
    ((count, distinct),) = ok(run(lake, [["spark_writers", SPARK_JARS, "sed.lake.main.conc.t", 2, 50]],
                                  timeout=900))[0]
    assert count == distinct == 100, (count, distinct)
    metrics = requests.get(lake.url + "/metrics", timeout=30).text
    lost = sum(int(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
               if line.startswith('http_requests_total{method="POST",route="lakefs-iceberg UpdateTable",code="409"}'))
    print(f"two Spark writers, 100 appends: {lost} commits refused (409) and retried")