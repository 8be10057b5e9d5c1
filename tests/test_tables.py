"""Tables over HTTP and the CLI: create, append, reorg, compact, GC, histogram."""
import json
import os
import signal
import uuid

import pyarrow as pa
import pytest

from conftest import eventually, run_sediment
from tables_util import SCHEMA, append, block_hash, ipc, rows

T = "/api/v1/datasets/eth/tables/logs"

CONFIG = """
[writer]
bytes = 200000
[writer.compactor]
skip_latest_segments = 0
max_eager_bytes = 20000
cooldown_duration = 3600
min_interval = 3600
gc_manifest_grace_period = 3600
"""


@pytest.fixture
def server(start_server, tmp_path, backend):
    cfg = tmp_path / "sediment.toml"
    cfg.write_text(CONFIG + backend)
    s = start_server("--config", str(cfg))
    s.backend = backend
    return s


def create(server, schema=SCHEMA, path=T):
    return server.put(path, data=ipc(schema=schema))


def object_files(server, tmp_path):
    """Names of the Parquet files stored for tables, wherever objects live."""
    if not server.backend:
        root = tmp_path / "data" / "objects" / "tables"
        return sorted(p.name for p in root.rglob("*.parquet")) if root.exists() else []
    from pyarrow import fs
    s3 = fs.S3FileSystem(access_key=os.environ["SEDIMENT_TEST_S3_ACCESS_KEY"],
                         secret_key=os.environ["SEDIMENT_TEST_S3_SECRET_KEY"], scheme="http",
                         endpoint_override=os.environ["SEDIMENT_TEST_S3_ENDPOINT"])
    uri = server.backend.split('"')[1][len("s3://"):]
    infos = s3.get_file_info(fs.FileSelector(uri + "/tables", recursive=True, allow_not_found=True))
    return sorted(i.base_name for i in infos if i.base_name.endswith(".parquet"))


def test_create_table(server):
    r = create(server)
    assert r.status_code == 201, r.text
    assert r.json()["name"] == "eth.logs"
    assert [f["name"] for f in r.json()["schema"]] == SCHEMA.names
    assert create(server).status_code == 200, "same schema again"
    other = pa.schema([pa.field("block_num", pa.uint64())])
    r = create(server, other)
    assert r.status_code == 409 and "exists with another schema" in r.json()["message"]
    assert 'column "block_num" changes from uint64 not null to uint64' in r.json()["message"]
    r = create(server, pa.schema([pa.field("x", pa.int32())]), "/api/v1/datasets/eth/tables/bad")
    assert r.status_code == 400 and "block_num" in r.json()["message"]
    r = create(server, path="/api/v1/datasets/Eth/tables/logs")
    assert r.status_code == 400 and "dataset name \"Eth\" is not allowed" in r.json()["message"]
    r = server.put("/api/v1/datasets/eth/tables/junk", data=b"not arrow at all")
    assert r.status_code == 400 and "not an Arrow IPC stream" in r.json()["message"]
    tables = server.get("/api/v1/datasets/eth/tables").json()["tables"]
    assert [t["name"] for t in tables] == ["eth.logs"]


def test_a_table_gains_nullable_columns_and_nothing_else(server):
    """PUT with the table's columns and new nullable ones after them is a new schema version: rows
    written before read with nulls in the new columns; any other change is refused, naming it, and
    changes nothing."""
    assert create(server).status_code == 201
    assert append(server, "logs", 0, 4).status_code == 201
    wider = SCHEMA.append(pa.field("note", pa.string())).append(pa.field("at", pa.timestamp("ns", tz="UTC")))
    for bad, says in ((pa.schema(list(SCHEMA)[:3]), 'drops column "data"'),
                      (SCHEMA.append(pa.field("note", pa.string(), nullable=False)), 'new column "note" must be nullable'),
                      (SCHEMA.set(4, pa.field("value", pa.int32())), 'column "value" changes from int64 to int32'),
                      (SCHEMA.append(pa.field("data", pa.string())), 'column "data" appears twice')):
        r = create(server, bad)
        assert r.status_code == 409 and says in r.json()["message"], (says, r.text)
    assert server.get("/api/v1/datasets/eth/tables/logs").json()["schema_version"] == 1
    r = create(server, wider)
    assert r.status_code == 200 and r.json()["schema_version"] == 2, r.text
    assert [f["name"] for f in r.json()["schema"]] == wider.names
    # Appends now carry the new columns; the old schema is refused.
    assert append(server, "logs", 5, 6).status_code == 400
    batch = rows(5, 6)
    new = pa.record_batch(batch.columns + [pa.array([f"n{i}" for i in range(batch.num_rows)]),
                                           pa.array([1_700_000_000_000_000_000 + i * 1000 for i in range(batch.num_rows)],
                                                    pa.timestamp("ns", tz="UTC"))], schema=wider)
    r = append(server, "logs", 5, 6, body=ipc(new, schema=wider, block_hashes=[block_hash(b) for b in (5, 6)]))
    assert r.status_code == 201, r.text
    got = pa.ipc.open_stream(server.get("/api/v1/datasets/eth/tables/logs/scan",
                                        params={"format": "arrow"}).content).read_all()
    assert got.schema.names == wider.names and got.schema.field("at").type == pa.timestamp("ns", tz="UTC")
    assert got.column("note").to_pylist() == [None] * 15 + [f"n{i}" for i in range(6)]
    lines = server.get("/api/v1/datasets/eth/tables/logs/scan", params={"format": "jsonl", "from_block": 5}).text
    first = json.loads(lines.splitlines()[0])
    assert first["at"] == "2023-11-14T22:13:20Z" and first["note"] == "n0", first


def test_append_describe_and_files(server):
    create(server)
    r = append(server, "logs", 0, 9)
    assert r.status_code == 201, r.text
    seg = r.json()
    assert (seg["start_block"], seg["end_block"], seg["rows"], seg["generation"]) == (0, 9, 30, 0)
    assert seg["id"].startswith("000000000-") and len(seg["id"]) == 26
    assert append(server, "logs", 10, 19).status_code == 201
    d = server.get(T).json()
    assert (d["files"], d["rows"], d["first_block"], d["last_block"]) == (2, 60, 0, 19)
    files = server.get(T + "/files").json()["files"]
    assert [f["start_block"] for f in files] == [0, 10]
    assert files[1]["parent_hash"] == files[0]["end_hash"]


def test_bad_appends_change_nothing(server, tmp_path):
    create(server)
    assert append(server, "logs", 0, 9).status_code == 201
    before = server.get(T + "/files").json()
    before_objects = object_files(server, tmp_path)
    body = ipc(rows(10, 12))
    cases = [
        (append(server, "logs", 10, 11, body=body), 400, "outside the segment's range"),
        (append(server, "logs", 10, 12, body=ipc(rows(12, 12), rows(10, 11))), 400, "goes backwards"),
        (append(server, "logs", 10, 12, body=body[: len(body) // 2]), 400, "Arrow IPC stream"),
        (append(server, "logs", 10, 12, body=b"garbage"), 400, "not an Arrow IPC stream"),
        (append(server, "logs", 12, 10, body=body), 400, "before start_block"),
        (append(server, "logs", 20, 22, body=ipc(rows(20, 22))), 409, "(gap)"),
        (append(server, "logs", 10, 12, parent_fork=5, body=body), 409, "does not match the hash"),
        (append(server, "nope", 10, 12, body=body), 404, "table eth.nope not found"),
        (server.post(T + "/segments", params={"start_block": "x"}, data=body), 400, "start_block"),
        (server.post(T + "/segments", params={"start_block": 10, "end_block": 12, "end_hash": "zz",
                                              "parent_hash": "00"}, data=body), 400, "end_hash"),
    ]
    other = pa.schema([pa.field("block_num", pa.uint64(), nullable=False)])
    cases.append((append(server, "logs", 10, 12, body=ipc(pa.record_batch([pa.array([10], pa.uint64())],
                                                                          schema=other), schema=other)),
                  400, "does not match table eth.logs"))
    for r, code, message in cases:
        assert r.status_code == code, (r.status_code, r.text, message)
        assert message in r.json()["message"], (r.json(), message)
    assert server.get(T + "/files").json() == before
    assert object_files(server, tmp_path) == before_objects, "no file left behind"


def test_reorg_over_http(server):
    create(server)
    for start in range(0, 20, 5):
        assert append(server, "logs", start, start + 4).status_code == 201
    r = append(server, "logs", 12, 22, fork=1, parent_fork=0)
    assert r.status_code == 201, r.text
    j = r.json()
    assert j["reorg"] is True and len(j["replaced"]) == 2
    assert j["rewritten"]["end_block"] == 11
    files = server.get(T + "/files").json()["files"]
    assert [(f["start_block"], f["end_block"]) for f in files] == [(0, 4), (5, 9), (10, 11), (12, 22)]
    assert "table_reorgs_total{dataset=\"eth\",table=\"logs\"} 1" in server.get("/metrics").text


def test_unproven_reorg_is_refused_and_changes_nothing(server, tmp_path):
    """Seen by trying: 40 one-block segments (80 rows), a compaction, then one
    append at block 10 whose parent hash matches nothing: 201, and 21 rows left."""
    create(server)
    for b in range(40):
        assert append(server, "logs", b, b, per_block=2).status_code == 201
    assert server.post(T + "/compact").status_code == 200
    before = server.get(T + "/files").json()
    before_objects = object_files(server, tmp_path)
    bogus = "ee" * 32
    r = append(server, "logs", 10, 10, fork=1, parent_hash=bogus, per_block=2)
    assert r.status_code == 409, r.text
    message = r.json()["message"]
    assert "block 9" in message and bogus in message and block_hash(9) in message, message
    assert server.get(T + "/files").json() == before
    assert object_files(server, tmp_path) == before_objects, "no file left behind"
    assert sum(f["rows"] for f in before["files"]) == 80
    r = append(server, "logs", 10, 10, fork=1, parent_hash=bogus, per_block=2, force="maybe")
    assert r.status_code == 400 and "force must be true or false" in r.json()["message"], r.text
    # force=true: the operator takes responsibility; logged and counted.
    r = append(server, "logs", 10, 10, fork=1, parent_hash=bogus, per_block=2, force="true")
    assert r.status_code == 201, r.text
    assert r.json()["reorg"] is True
    assert "table_forced_reorgs_total{dataset=\"eth\",table=\"logs\"} 1" in server.get("/metrics").text


def test_a_restarted_server_compacts_at_once(start_server, tmp_path, backend):
    """Seen by trying: a server restarted after a SIGKILL waited for its own dead
    predecessor's table leases to expire (lease_ttl, 60 s) before it compacted."""
    cfg = tmp_path / "sediment.toml"
    cfg.write_text(CONFIG + backend)
    s = start_server("--config", str(cfg))
    create(s)
    for start in range(0, 20, 4):
        assert append(s, "logs", start, start + 3).status_code == 201
    assert s.post(T + "/compact").status_code == 200  # takes the table's lease (60 s)
    for start in range(20, 40, 4):
        assert append(s, "logs", start, start + 3).status_code == 201
    s.stop(signal.SIGKILL)
    s2 = start_server("--config", str(cfg))  # same data directory: same server
    r = s2.post(T + "/compact")
    assert r.status_code == 200, r.text
    assert any(m.get("output") for m in r.json()["merges"]), r.json()


def test_compact_histogram_and_cli(server, tmp_path):
    create(server)
    for start in range(0, 40, 4):
        assert append(server, "logs", start, start + 3).status_code == 201
    code, out = server.cli("table", "histogram", "eth.logs")
    assert code == 0, out
    assert "eth.logs: 10 files" in out and "(eager)" in out
    assert "files below max_eager_bytes (19.5 KiB): 10" in out

    code, out = server.cli("table", "compact", "eth.logs")
    assert code == 0, out
    assert "1 group(s) to merge" in out and "merged 10 files" in out and "1 merged, 0 failed" in out
    files = server.get(T + "/files").json()["files"]
    assert len(files) == 1 and files[0]["generation"] == 1 and files[0]["rows"] == 120
    # The ten inputs wait in storage for the grace period, next to the merged file.
    assert len(object_files(server, tmp_path)) == 11

    h = server.get(T + "/histogram").json()
    assert h["summary"]["files"] == 1 and h["summary"]["rows"] == 120
    assert sum(b["files"] for b in h["buckets"]) == 1

    code, out = server.cli("table", "list")
    assert code == 0 and "eth.logs" in out and "0..39" in out
    code, out = server.cli("table", "list", "--json")
    assert json.loads(out)["tables"][0]["files"] == 1

    metrics = server.get("/metrics").text
    labels = '{dataset="eth",table="logs"}'
    assert f"successful_compactions{labels} 1" in metrics
    assert f"compaction_files_read_total{labels} 10" in metrics
    assert f"table_files{labels} 1" in metrics

    # Nothing left to merge: a pass finds no group.
    r = server.post(T + "/compact")
    assert r.status_code == 200 and r.json()["merges"] == []

    # The pass history keeps the one that merged (not the empty one), and the GC backlog.
    passes = server.get(T + "/passes").json()["passes"]
    assert len(passes) == 1 and passes[0]["files_considered"] == 10 and passes[0]["files_after"] == 1
    assert passes[0]["merges"][0]["inputs"] == 10 and passes[0]["merges"][0]["bytes_out"] == files[0]["stored_bytes"]
    assert server.get(T + "/gc").json()["files"] == 10
    code, out = server.cli("table", "passes", "eth.logs")
    assert code == 0, out
    assert "GC backlog: 10 files (0 past the" in out
    row = out.splitlines()[1].split()
    assert row[2:6] == ["10", "1", "0", "0"], out  # seen, merged, failed, discarded
    code, out = server.cli("table", "passes", "eth.logs", "--json")
    assert json.loads(out)["passes"][0]["merges_total"] == 1
    code, out = server.cli("table", "passes", "eth.logs", "--limit", "0")
    assert code == 1 and "--limit 0 is not in 1..10000" in out


def test_cli_errors(server):
    code, out = server.cli("table", "histogram", "eth.nope")
    assert code == 1 and out == "sediment: HTTP 404: table eth.nope not found"
    code, out = server.cli("table", "histogram", "nodot")
    assert code == 1 and "is not <dataset>.<table>" in out
    code, out = run_sediment("table", "list", "--server", "http://127.0.0.1:1")
    assert code == 1 and "cannot reach http://127.0.0.1:1" in out


def test_data_survives_restart(start_server, tmp_path):
    cfg = tmp_path / "sediment.toml"
    cfg.write_text(CONFIG)
    s = start_server("--config", str(cfg))
    create(s)
    assert append(s, "logs", 0, 9).status_code == 201
    assert s.stop() == 0
    s2 = start_server("--config", str(cfg))
    assert s2.get(T).json()["rows"] == 30
    assert append(s2, "logs", 10, 19).status_code == 201


def test_background_compaction_without_writes(start_server, tmp_path):
    cfg = tmp_path / "sediment.toml"
    cfg.write_text(CONFIG.replace("min_interval = 3600", "min_interval = 1"))
    s = start_server("--config", str(cfg))
    create(s)
    for start in range(0, 30, 3):
        assert append(s, "logs", start, start + 2).status_code == 201
    eventually(lambda: len(s.get(T + "/files").json()["files"]) == 1, timeout=20, interval=0.3,
               what="the timer compacts the table")


def test_simulate_cli():
    code, out = run_sediment("table", "simulate", "--days", "1", "--report-every", "12", "--policy", "tiered")
    assert code == 0, out
    assert out.startswith("tiered policy, one 58.6 KiB file every 12")
    rows = [line.split()[0] for line in out.splitlines()[3:] if line.strip()]
    assert rows == ["12h", "1d"], out
    code, out = run_sediment("table", "simulate", "--days", "1", "--json")
    points = json.loads(out)["points"]
    assert points[-1]["t"] == 86400 and points[-1]["bytes_ingested"] in (7199 * 60000, 7200 * 60000)


@pytest.mark.parametrize("args,message", [
    (["--file-every", "-3"], "--file-every must be positive"),
    (["--reorg-rate", "2"], "reorg rate must be from 0 to 1"),
    (["--file-bytes", "-5"], "file size must be a positive"),
    (["--policy", "leveled"], "writer.compactor.policy: must be one of adjacent, tiered"),
    (["--set", "writer.bytes=abc"], "flag --set: writer.bytes: must be an integer"),
    (["--plot", "x.png"], "only SVG charts"),
])
def test_simulate_bad_input(args, message, tmp_path):
    code, out = run_sediment("table", "simulate", "--days", "0.1", *args, cwd=str(tmp_path))
    assert code != 0 and message in out, out


def test_listings_page_and_resume(server):
    """files, tables and history page with amount/after; the pages join to the whole listing;
    the table's totals (kept incrementally) equal the sum over its files."""
    create(server)
    for b in range(0, 25):
        assert append(server, "logs", b, b).status_code == 201
    for name in ("a", "b", "c"):
        assert create(server, path=f"/api/v1/datasets/eth/tables/{name}").status_code == 201

    def pages(path, key, amount):
        got, after, n = [], None, 0
        while n < 200:
            params = {"amount": amount}
            if after is not None:
                params["after"] = after
            r = server.get(path, params=params)
            assert r.status_code == 200, r.text
            j = r.json()
            assert j["pagination"]["results"] == len(j[key]) <= amount
            got += j[key]
            n += 1
            if not j["pagination"]["has_more"]:
                return got, n
            after = j["pagination"]["next_offset"]
        raise AssertionError(f"{path}: paging does not end")

    whole = server.get(T + "/files").json()["files"]
    assert len(whole) == 25
    for amount in (1, 7, 25, 1000):
        files, n = pages(T + "/files", "files", amount)
        assert files == whole
        assert n == -(-25 // amount), "no empty last page"
    files, _ = pages(T + "/files", "files", 7)
    assert [f["start_block"] for f in files] == list(range(25))

    tables, _ = pages("/api/v1/tables", "tables", 2)
    assert [t["name"] for t in tables] == ["eth.a", "eth.b", "eth.c", "eth.logs"]
    logs = server.get(T).json()
    assert logs["files"] == 25 and logs["rows"] == sum(f["rows"] for f in whole)
    assert logs["bytes"] == sum(f["bytes"] for f in whole)
    assert (logs["first_block"], logs["last_block"]) == (0, 24)

    history, _ = pages(T + "/history", "appends", 4)
    assert [a["start_block"] for a in history] == list(range(25))
    assert all(a["stored_bytes"] == f["stored_bytes"] for a, f in zip(history, whole))
    # Summed per bucket (the console's charts): the same totals, whatever the width.
    for width in (1, 60, 86400):
        b = server.get(T + "/history", params={"bucket_s": width}).json()["buckets"]
        assert sum(x["appends"] for x in b) == 25 and sum(x["rows"] for x in b) == logs["rows"], width
        assert sum(x["stored_bytes"] for x in b) == sum(f["stored_bytes"] for f in whole)
        assert all(x["t_us"] % (width * 1_000_000) == 0 for x in b)
        assert [x["t_us"] for x in b] == sorted({x["t_us"] for x in b})
    since = history[10]["t_us"]
    b = server.get(T + "/history", params={"bucket_s": 1, "since_us": since}).json()["buckets"]
    assert sum(x["appends"] for x in b) == sum(1 for a in history if a["t_us"] >= since)
    for bad in ({"bucket_s": 0}, {"bucket_s": 86401}, {"bucket_s": "x"}):
        r = server.get(T + "/history", params=bad)
        assert r.status_code == 400 and "bucket_s" in r.json()["message"], (bad, r.text)

    for bad in ({"amount": 0}, {"amount": 10001}, {"amount": "x"}, {"after": "-1"}):
        r = server.get(T + "/files", params=bad)
        assert r.status_code == 400, (bad, r.text)
        assert "amount" in r.json()["message"] or "after" in r.json()["message"]
    r = server.get("/api/v1/datasets/eth/tables/nope/files")
    assert r.status_code == 404
