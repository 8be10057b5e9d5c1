"""The Iceberg REST catalog (docs/iceberg.md) read by real engines: PyIceberg and DuckDB's iceberg
extension (from .venv-engines, run as subprocesses: tests/iceberg_engines.py) attach to a server whose
demo job ingests, compacts and reorgs while they read."""
import json
import os
import subprocess
import uuid

import pytest
import requests

from conftest import ROOT, eventually, s3_settings, set_up_admin
from test_scan_jobs import CONFIG

ENGINES = ROOT / ".venv-engines" / "bin" / "python"
RUNNER = ROOT / "tests" / "iceberg_engines.py"
ADMIN = ("AKIAICEBERGADMIN0001", "iceberg-admin-secret-0001")
# Iceberg's Spark runtime and S3 client (scripts/install-test.sh fetches them from Maven Central).
JARS = [str(ROOT / ".cache" / "jars" / j)
        for j in ("iceberg-spark-runtime-4.0_2.13-1.10.0.jar", "iceberg-aws-bundle-1.10.0.jar")]


def engine(req, timeout=120):
    p = subprocess.run([str(ENGINES), str(RUNNER), json.dumps(req)], capture_output=True, text=True,
                       timeout=timeout)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout)


@pytest.fixture
def server(start_server, tmp_path):
    if not ENGINES.exists():
        pytest.fail("no .venv-engines: run scripts/install-test.sh")
    cfg = tmp_path / "sediment.toml"
    cfg.write_text(CONFIG)
    s = start_server("--config", str(cfg))
    s.iceberg = s.url + "/iceberg"
    eventually(lambda: (s.get("/api/v1/jobs").json()["jobs"][0]["last_block"].get("blocks") or 0) >= 60, timeout=30,
               what="the demo job to write 60 blocks")
    return s


def spark_agrees_with_pyiceberg(uri, credential=None):
    """Spark runs aggregates over one snapshot of demo.logs and gets what PyIceberg reads from it."""
    for jar in JARS:
        assert os.path.exists(jar), f"{jar} missing: run scripts/install-test.sh"
    r = engine({"engine": "pyiceberg", "uri": uri, "credential": credential, "table": "demo.logs",
                "columns": ["block_num", "tx_index", "log_index", "address"]})
    snap, cols = r["snapshot_id"], r["columns"]
    # Addresses are stored as BYTE_ARRAY and typed binary in Iceberg (table/stored_types.h): 20 bytes each.
    assert {len(a) for a in cols["address"]} == {40}
    address = max(set(cols["address"]), key=cols["address"].count)
    keys = list(zip(cols["block_num"], cols["tx_index"], cols["log_index"]))
    per_block = {}
    for b in cols["block_num"]:
        if 10 <= b <= 14:
            per_block[b] = per_block.get(b, 0) + 1
    sp = engine({"engine": "spark", "uri": uri, "credential": credential, "jars": JARS, "sql": [
        "SELECT count(*), count(DISTINCT block_num, tx_index, log_index), min(block_num), max(block_num), "
        f"sum(tx_index), sum(log_index) FROM sed.demo.logs VERSION AS OF {snap}",
        f"SELECT block_num, count(*) FROM sed.demo.logs VERSION AS OF {snap} WHERE block_num BETWEEN 10 AND 14 "
        "GROUP BY block_num ORDER BY block_num",
        f"SELECT count(*) FROM sed.demo.logs VERSION AS OF {snap} WHERE address = X'{address}'",
    ]}, timeout=300)["results"]
    assert sp[0] == [[len(keys), len(set(keys)), min(cols["block_num"]), max(cols["block_num"]),
                      sum(cols["tx_index"]), sum(cols["log_index"])]], "Spark and PyIceberg read the same rows"
    assert sp[1] == [[b, n] for b, n in sorted(per_block.items())]
    assert sp[2] == [[cols["address"].count(address)]], "an address filter in Spark finds PyIceberg's rows"
    return snap


def published(s):
    """Iceberg snapshots the server has published so far."""
    for line in s.get("/metrics").text.splitlines():
        if line.startswith("iceberg_snapshots_published_total "):
            return float(line.split()[1])
    return 0.0


def test_pyiceberg_reads_every_block_once_while_the_table_changes(server):
    seen_ops, first = set(), None
    for _ in range(12):
        r = engine({"engine": "pyiceberg", "uri": server.iceberg, "table": "demo.blocks",
                    "columns": ["block_num", "hash"]})
        blocks = r["columns"]["block_num"]
        assert len(blocks) == len(set(blocks)), "no block twice"
        assert sorted(blocks) == list(range(len(blocks))), "no block missing"
        assert int(r["summary"]["total-records"]) == len(blocks), "the snapshot's rows, as its summary says"
        seen_ops |= {s["operation"] for s in r["snapshots"]}
        first = first or r
        if {"append", "replace"} <= seen_ops and r["snapshot_id"] != first["snapshot_id"]:
            break
        before = published(server)
        eventually(lambda: published(server) > before, timeout=10, what="the next snapshot")
    assert {"append", "replace"} <= seen_ops, f"appends and compaction swaps are snapshots: {seen_ops}"
    # The first snapshot still reads the same rows after later swaps.
    again = engine({"engine": "pyiceberg", "uri": server.iceberg, "table": "demo.blocks",
                    "columns": ["block_num", "hash"], "snapshot_id": first["snapshot_id"]})
    assert again["columns"] == first["columns"]
    # By time, as engines travel: the snapshot current at the first one's timestamp is the first one.
    ts = next(x["timestamp_ms"] for x in again["snapshots"] if x["snapshot_id"] == first["snapshot_id"])
    by_time = engine({"engine": "pyiceberg", "uri": server.iceberg, "table": "demo.blocks",
                      "columns": ["block_num", "hash"], "as_of_ms": ts})
    assert by_time["snapshot_id"] == first["snapshot_id"] and by_time["columns"] == first["columns"]


def test_engines_prune_by_block_range_and_agree(server):
    logs = engine({"engine": "pyiceberg", "uri": server.iceberg, "table": "demo.logs",
                   "columns": ["block_num", "tx_index", "log_index", "topic0"]})
    snap = logs["snapshot_id"]
    topics = [t for t in logs["columns"]["topic0"] if t is not None]
    topic = max(set(topics), key=topics.count)
    keys = list(zip(*(logs["columns"][c] for c in ("block_num", "tx_index", "log_index"))))
    assert len(keys) == len(set(keys)), "no log twice"
    all_files = logs["files"]
    ranged = engine({"engine": "pyiceberg", "uri": server.iceberg, "table": "demo.logs", "snapshot_id": snap,
                     "columns": ["block_num"], "filter": "block_num >= 10 and block_num <= 19"})
    assert 1 <= ranged["files"] < all_files, "a block range plans only the files that hold it"
    want = sorted(b for b in logs["columns"]["block_num"] if 10 <= b <= 19)
    assert sorted(b for b in ranged["columns"]["block_num"] if 10 <= b <= 19) == want
    d = engine({"engine": "duckdb", "uri": server.iceberg, "sql": [
        f"SELECT count(*), count(DISTINCT (block_num, tx_index, log_index)) FROM sed.demo.logs AT (VERSION => {snap})",
        f"SELECT count(*) FROM sed.demo.logs AT (VERSION => {snap}) WHERE block_num BETWEEN 10 AND 19",
        "SELECT count(*), count(DISTINCT block_num), max(block_num) FROM sed.demo.blocks",
        "SELECT count(*) FROM sed.demo.transactions WHERE block_num BETWEEN 10 AND 19",
        f"SELECT count(*) FROM sed.demo.logs AT (VERSION => {snap}) WHERE topic0 = from_hex('{topic}')",
    ]})["results"]
    assert d[0] == [[len(keys), len(keys)]], "DuckDB reads the same snapshot: every log once"
    assert d[1] == [[len(want)]]
    count, distinct, top = d[2][0]
    assert count == distinct == top + 1, "DuckDB's current snapshot: every block once, none missing"
    scanned = server.get("/api/v1/datasets/demo/tables/transactions/scan",
                         params={"format": "jsonl", "from_block": 10, "to_block": 19, "columns": "block_num"}).text.split()
    assert d[3][0][0] == len(scanned), "DuckDB and the scan API agree on settled blocks"
    assert d[4] == [[topics.count(topic)]], "a topic filter in DuckDB finds PyIceberg's rows"
    schema = server.get("/iceberg/v1/namespaces/demo/tables/logs").json()["metadata"]
    types = {f["name"]: f["type"] for f in next(x for x in schema["schemas"]
                                                if x["schema-id"] == schema["current-schema-id"])["fields"]}
    assert types["address"] == types["topic0"] == "binary", "Iceberg's type is what the files store"


def test_spark_reads_the_tables_and_agrees_with_pyiceberg(server):
    # Enough changes that the snapshot holds merged files (compaction swaps) beside appended ones.
    before = published(server)
    eventually(lambda: published(server) >= before + 3, timeout=20, what="three more snapshots")
    spark_agrees_with_pyiceberg(server.iceberg)


def test_writes_are_refused_and_reads_need_credentials_after_set_up(server):
    r = requests.post(server.iceberg + "/v1/namespaces/demo/tables", json={"name": "x", "schema": {}}, timeout=10)
    assert r.status_code == 403 and r.json()["error"]["type"] == "ForbiddenException"
    set_up_admin(server, *ADMIN)
    r = requests.get(server.iceberg + "/v1/namespaces/demo/tables/blocks", timeout=10)
    assert r.status_code == 401 and r.json()["error"]["type"] == "NotAuthorizedException"
    bad = requests.post(server.iceberg + "/v1/oauth/tokens", timeout=10, data={
        "grant_type": "client_credentials", "client_id": ADMIN[0], "client_secret": "wrong"})
    assert bad.status_code == 401 and bad.json()["error"] == "invalid_client"
    tok = requests.post(server.iceberg + "/v1/oauth/tokens", timeout=10, auth=ADMIN,
                        data={"grant_type": "client_credentials", "scope": "PRINCIPAL_ROLE:ALL"}).json()
    assert tok["token_type"] == "bearer" and "expires_in" not in tok
    r = requests.get(server.iceberg + "/v1/namespaces/demo/tables/blocks", timeout=10,
                     headers={"Authorization": "Bearer " + tok["access_token"]})
    assert r.status_code == 200 and r.json()["metadata"]["format-version"] == 2
    missing = requests.get(server.iceberg + "/v1/namespaces/demo.blocks/tables/snapshots", timeout=10,
                           headers={"Authorization": "Bearer " + tok["access_token"]})
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "NoSuchTableException"
    cred = f"{ADMIN[0]}:{ADMIN[1]}"
    r = engine({"engine": "pyiceberg", "uri": server.iceberg, "credential": cred, "table": "demo.blocks",
                "columns": ["block_num"]})
    assert len(r["columns"]["block_num"]) > 0
    d = engine({"engine": "duckdb", "uri": server.iceberg, "credential": cred,
                "sql": ["SELECT count(*) > 0 FROM sed.demo.blocks"]})
    assert d["results"] == [[[True]]]


def test_engines_read_tables_on_object_storage(start_server, tmp_path):
    """On S3 storage (the test MinIO) loadTable tells engines the endpoint and vends the configured
    read credentials; both engines read the same rows from the bucket."""
    settings = s3_settings(f"ice-{uuid.uuid4().hex[:10]}")
    if settings is None:
        pytest.skip("no S3 configured (scripts/test.sh starts MinIO)")
    cfg = tmp_path / "sediment.toml"
    cfg.write_text(CONFIG + settings + "[iceberg]\n"
                   f's3_access_key_id = "{os.environ["SEDIMENT_TEST_S3_ACCESS_KEY"]}"\n'
                   f's3_secret_access_key = "{os.environ["SEDIMENT_TEST_S3_SECRET_KEY"]}"\n')
    s = start_server("--config", str(cfg))
    eventually(lambda: (s.get("/api/v1/jobs").json()["jobs"][0]["last_block"].get("blocks") or 0) >= 60, timeout=30,
               what="the demo job to write 60 blocks")
    loaded = s.get("/iceberg/v1/namespaces/demo/tables/blocks").json()
    assert loaded["metadata"]["location"].startswith("s3://")
    assert loaded["config"]["s3.endpoint"].startswith("http://") and loaded["config"]["s3.path-style-access"] == "true"
    r = engine({"engine": "pyiceberg", "uri": s.url + "/iceberg", "table": "demo.blocks", "columns": ["block_num"]})
    blocks = r["columns"]["block_num"]
    assert sorted(blocks) == list(range(len(blocks))) and len(blocks) >= 60
    d = engine({"engine": "duckdb", "uri": s.url + "/iceberg", "sql": [
        "SELECT count(*) FROM sed.demo.blocks",
        f"SELECT count(*), count(DISTINCT block_num) FROM sed.demo.blocks AT (VERSION => {r['snapshot_id']})"]})
    assert d["results"][1] == [[len(blocks), len(blocks)]], "the same snapshot, the same blocks"
    assert d["results"][0][0][0] >= len(blocks), "the current snapshot has them and what came since"
    spark_agrees_with_pyiceberg(s.url + "/iceberg")
