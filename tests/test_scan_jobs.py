"""The ingest job, scans, and `sediment query` / `sediment job` against a running server."""
import io
import json

import pyarrow as pa
import pyarrow.ipc
import pytest

from conftest import eventually, run_sediment

CONFIG = """
[writer]
bytes = 2000000
[writer.compactor]
cooldown_duration = 2.0
max_eager_bytes = 100000
min_interval = 0.5
skip_latest_segments = 1
[worker]
poll_interval_secs = 0.2
[[jobs]]
dataset = "demo"
history_blocks = 50
block_time = 0.2
txs_per_block = 20
logs_per_tx = 2.0
reorg_probability = 0.1
max_reorg_depth = 3
"""

LOGS = "/api/v1/datasets/demo/tables/logs"


@pytest.fixture
def server(start_server, tmp_path):
    cfg = tmp_path / "sediment.toml"
    cfg.write_text(CONFIG)
    s = start_server("--config", str(cfg))
    eventually(lambda: head_of(s, "logs") >= 60, timeout=20, what="the job to write 60 blocks")
    return s


def head_of(server, table):
    jobs = server.get("/api/v1/jobs").json()["jobs"]
    return (jobs[0]["last_block"].get(table) or 0) if jobs else 0


def scan(server, fmt="jsonl", **params):
    return server.get(LOGS + "/scan", params={"format": fmt, **params})


def test_job_writes_and_compacts(server):
    jobs = server.get("/api/v1/jobs").json()["jobs"]
    assert [j["dataset"] for j in jobs] == ["demo"] and jobs[0]["running"]
    tables = {t["name"]: t for t in server.get("/api/v1/tables").json()["tables"]}
    assert set(tables) == {"demo.blocks", "demo.transactions", "demo.logs"}
    eventually(lambda: "successful_compactions{dataset=\"demo\",table=\"logs\"}" in server.get("/metrics").text,
               timeout=20, what="a compaction of demo.logs")


def test_scan_formats_agree(server):
    r = scan(server, "arrow", from_block=10, to_block=29, columns="block_num,log_index,address")
    assert r.status_code == 200
    table = pa.ipc.open_stream(io.BytesIO(r.content)).read_all()
    assert table.schema.names == ["block_num", "log_index", "address"]
    blocks = table.column("block_num").to_pylist()
    assert blocks == sorted(blocks) and blocks[0] == 10 and blocks[-1] == 29
    r = scan(server, from_block=10, to_block=29, columns="block_num,log_index,address")
    rows = [json.loads(line) for line in r.text.splitlines()]
    assert len(rows) == table.num_rows
    assert rows[0]["address"] == "0x" + table.column("address")[0].as_py().hex()
    assert list(rows[0]) == ["block_num", "log_index", "address"]


def test_scan_filter_and_limit(server):
    rows = [json.loads(x) for x in scan(server, filter="log_index < 2", limit=15).text.splitlines()]
    assert len(rows) == 15 and all(r["log_index"] < 2 for r in rows)
    first = rows[0]["address"]
    same = [json.loads(x) for x in scan(server, filter=f"address = {first}", to_block=40).text.splitlines()]
    assert same and all(r["address"] == first for r in same)


@pytest.mark.parametrize("params,code,message", [
    ({"from_block": 10, "to_block": 5}, 400, "from_block 10 is after to_block 5"),
    ({"columns": "block_num,nope"}, 400, "has no column \"nope\""),
    ({"filter": "log_index ~ 3"}, 400, "is not of the form"),
    ({"filter": "log_index < abc"}, 400, "not a valid value"),
    ({"format": "csv"}, 400, "format \"csv\""),
    ({"limit": "-1"}, 400, "limit"),
    ({"from": 10, "to": 20}, 400, "unknown query parameter \"from\""),
    ([("limit", 1), ("limit", 2)], 400, "\"limit\" is given more than once"),
])
def test_scan_bad_input(server, params, code, message):
    r = server.get(LOGS + "/scan", params=params)
    assert r.status_code == code and message in r.json()["message"], r.text


def test_scan_unknown_table(server):
    r = server.get("/api/v1/datasets/demo/tables/nope/scan")
    assert r.status_code == 404 and "table demo.nope not found" in r.json()["message"]


def test_query_and_job_cli(server):
    code, out = server.cli("query", "demo.blocks", "--from", "3", "--to", "4", "--columns", "block_num,tx_count")
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0].split() == ["block_num", "tx_count"] and lines[1].split()[0] == "3" and "(2 rows)" in out
    code, out = server.cli("query", "demo.logs", "--limit", "2", "--json")
    assert code == 0 and len(out.splitlines()) == 2 and json.loads(out.splitlines()[0])["block_num"] == 0
    code, out = server.cli("query", "demo.logs", "--where", "bad filter")
    assert code == 1 and "is not of the form" in out

    code, out = server.cli("job", "list")
    assert code == 0 and out.startswith("demo") and "running" in out
    code, out = server.cli("job", "stop", "demo")
    assert code == 0 and "stopped" in out
    job = server.get("/api/v1/jobs").json()["jobs"][0]
    written = job["last_block"]["logs"]
    # The chain goes on (its head passes what the job wrote by three blocks) and the job does not follow.
    job = eventually(lambda: (j := server.get("/api/v1/jobs").json()["jobs"][0])["head"] >= written + 3 and j,
                     what="the synthetic chain to move on")
    assert job["last_block"]["logs"] == written and not job["running"], "a stopped job writes nothing"
    assert job["lag"] >= 3, "a stopped job falls behind"
    # Its tables are still compacted.
    assert server.post(LOGS + "/compact").status_code == 200
    code, out = server.cli("job", "start", "demo")
    assert code == 0 and "running" in out
    code, out = server.cli("job", "stop", "nope")
    assert code == 1 and "job nope not found" in out


def test_job_resumes_after_restart(start_server, tmp_path):
    cfg = tmp_path / "sediment.toml"
    cfg.write_text(CONFIG.replace("reorg_probability = 0.1", "reorg_probability = 0.0"))
    s = start_server("--config", str(cfg))
    eventually(lambda: head_of(s, "blocks") > 50, timeout=20, what="the job to write 50 blocks")
    first = head_of(s, "blocks")
    assert s.stop() == 0
    s2 = start_server("--config", str(cfg))
    eventually(lambda: head_of(s2, "blocks") > first, timeout=20, what="the job to go on after the restart")
    rows = [json.loads(x) for x in s2.get("/api/v1/datasets/demo/tables/blocks/scan",
                                          params={"columns": "block_num"}).text.splitlines()]
    blocks = [r["block_num"] for r in rows]
    assert blocks == list(range(len(blocks))), "no block missing or written twice"
    assert len(blocks) > 50


def test_bad_job_config_names_the_setting(tmp_path):
    cfg = tmp_path / "sediment.toml"
    cfg.write_text('[[jobs]]\ndataset = "d"\nblok_time = 1\n')
    code, out = run_sediment("serve", "--config", str(cfg), "--data-dir", str(tmp_path / "data"))
    assert code == 2 and "sediment.toml:3: jobs.blok_time: unknown job setting" in out
    assert not (tmp_path / "data").exists()


def test_simulate_replays_a_tables_appends(server):
    history = server.get(LOGS + "/history").json()["appends"]
    assert len(history) >= 2
    assert all(a["bytes"] > 0 for a in history[1:])
    assert [a["t_us"] for a in history] == sorted(a["t_us"] for a in history)
    code, out = server.cli("table", "simulate", "--from", "demo.logs", "--policy", "tiered")
    assert code == 0, out
    assert out.startswith("tiered policy, demo.logs: its ") and " appends over " in out
    code, out = server.cli("table", "simulate", "--from", "demo.nope")
    assert code == 1 and "table demo.nope not found" in out
    # Without --config the replay runs with the server's settings (issue 47), not the built-in ones.
    assert server.get(LOGS + "/history").json()["settings"]["writer.compactor.cooldown_duration"] == 2.0
    code, out = server.cli("table", "simulate", "--from", "demo.logs")
    assert code == 0 and "adjacent policy" in out and "cooldown 2s, max_eager_bytes 97.7 KiB" in out, out
