"""The query server (docs/query.md) as an Amp user meets it: SQL over the chain tables through Flight SQL
(ADBC's driver) and JSON lines (requests), batch answers equal to DuckDB's over the same files while the
tables ingest and compact, streaming queries that follow the chain through reorgs and resume from a
cursor, who may query what, and the limits."""
import json
import threading
import time

import duckdb
import pytest
import requests

from conftest import ADMIN, eventually, set_up_admin
from query_util import FlightStream, StreamClient, adbc_query, jsonl, jsonl_rows
from security.util import create_user
from test_evm_rpc import node, start as start_evm, traffic, wait_for  # noqa: F401 (node is a fixture)

DEMO = """
[writer]
bytes = 1048576
[writer.compactor]
min_interval = 0.5
cooldown_duration = 2.0
max_eager_bytes = 65536
gc_manifest_grace_period = 3600
[worker]
poll_interval_secs = 0.25
[query]
keep_alive_secs = 1
poll_interval_secs = 0.1
{query}
[[jobs]]
dataset = "demo"
history_blocks = 200
block_time = 0.25
txs_per_block = 30
logs_per_tx = 2.0
reorg_probability = 0.05
max_reorg_depth = 3
"""


@pytest.fixture
def demo(start_server, tmp_path):
    """A server ingesting the demo chain at 4 blocks a second, compacting as it goes; not set up (open)."""
    def start(query=""):
        cfg = tmp_path / "demo.toml"
        cfg.write_text(DEMO.format(query=query))
        server = start_server("--config", str(cfg))
        eventually(lambda: all(end(server, t) >= 200 for t in ("blocks", "transactions", "logs")), timeout=60,
                   what="the history to be ingested")
        return server
    return start


def end(server, table, auth=None):
    r = server.get(f"/api/v1/datasets/demo/tables/{table}", auth=auth)
    return (r.json().get("last_block") or 0) if r.status_code == 200 else 0


def live_files(server, table):
    r = server.get(f"/api/v1/datasets/demo/tables/{table}/files")
    assert r.status_code == 200, r.text
    return [str(server.data_dir / "objects" / f["path"]) for f in r.json()["files"]]


def duckdb_over_files(server):
    """DuckDB (Python) over the files the tables' live sets hold now, as views named as the server's."""
    con = duckdb.connect()
    con.execute("CREATE SCHEMA demo")
    for table in ("blocks", "transactions", "logs"):
        con.execute(f"CREATE VIEW demo.{table} AS SELECT * FROM read_parquet({live_files(server, table)!r})")
    return con


def amp_queries(e):
    """20 queries an Amp user writes, over blocks up to `e` (final: below any reorg the demo makes)."""
    a = e - 60
    return [
        # top emitters and senders
        f"SELECT address, count(*) AS logs FROM demo.logs WHERE block_num BETWEEN {a} AND {e} "
        "GROUP BY address ORDER BY logs DESC, address LIMIT 10",
        f'SELECT "from", count(*) AS txs, sum(value) AS total FROM demo.transactions WHERE block_num <= {e} '
        "GROUP BY 1 ORDER BY txs DESC, 1 LIMIT 10",
        # top senders by log count: logs joined to their transactions
        f'SELECT t."from", count(*) AS logs FROM demo.logs l JOIN demo.transactions t '
        f"ON l.block_num = t.block_num AND l.tx_index = t.tx_index WHERE l.block_num BETWEEN {a} AND {e} "
        "GROUP BY 1 ORDER BY logs DESC, 1 LIMIT 10",
        f"SELECT l.block_num, l.log_index, t.hash FROM demo.logs l JOIN demo.transactions t "
        f"USING (block_num, tx_index) WHERE l.block_num BETWEEN {e - 5} AND {e} ORDER BY 1, 2",
        # Transfer-style decoding of the most frequent event: addresses from topics, an amount from data
        f"WITH top AS (SELECT topic0 FROM demo.logs WHERE block_num <= {e} AND topic0 IS NOT NULL "
        "GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1) "
        "SELECT l.block_num, l.log_index, lower(right(hex(l.topic1), 40)) AS sender, "
        "lower(right(hex(l.topic2), 40)) AS receiver, CASE WHEN octet_length(l.data) >= 8 THEN CAST('0x' || right(hex(l.data), 15) AS UBIGINT) END AS amount "
        f"FROM demo.logs l JOIN top USING (topic0) WHERE l.block_num BETWEEN {a} AND {e} ORDER BY 1, 2",
        # block time series
        f"SELECT timestamp // 10 AS bucket, count(*) AS blocks, sum(tx_count) AS txs FROM demo.blocks "
        f"WHERE block_num <= {e} GROUP BY 1 ORDER BY 1",
        f"SELECT count(*), count(DISTINCT address), min(block_num), max(block_num) FROM demo.logs "
        f"WHERE block_num <= {e}",
        f"SELECT * FROM demo.blocks WHERE block_num BETWEEN {a} AND {a + 5} ORDER BY block_num",
        f"SELECT block_num, log_index, topic0 FROM demo.logs WHERE address = (SELECT address FROM demo.logs "
        f"WHERE block_num = {a} ORDER BY log_index LIMIT 1) AND block_num <= {e} ORDER BY 1, 2",
        f"SELECT block_num, CAST(avg(gas_price) AS BIGINT) AS avg_price, max(gas) FROM demo.transactions "
        f"WHERE block_num BETWEEN {a} AND {e} GROUP BY 1 ORDER BY 1",
        f'SELECT count(*) FROM demo.transactions WHERE "to" IS NULL AND block_num <= {e}',
        f"SELECT n, count(*) FROM (SELECT block_num, tx_index, count(*) AS n FROM demo.logs WHERE block_num <= {e} "
        "GROUP BY 1, 2) GROUP BY n ORDER BY n",
        f"SELECT block_num, tx_count, sum(tx_count) OVER (ORDER BY block_num) AS running FROM demo.blocks "
        f"WHERE block_num BETWEEN {a} AND {e} ORDER BY block_num",
        f"SELECT b.block_num, b.hash, count(l.log_index) FROM demo.blocks b LEFT JOIN demo.logs l USING (block_num) "
        f"WHERE b.block_num BETWEEN {a} AND {e} GROUP BY 1, 2 ORDER BY 1",
        f"SELECT miner, count(*) FROM demo.blocks WHERE block_num <= {e} GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 5",
        f"SELECT topic0, count(*) FROM demo.logs WHERE block_num BETWEEN {a} AND {e} GROUP BY 1 "
        "ORDER BY 2 DESC, 1 NULLS FIRST LIMIT 5",
        f"SELECT quantile_disc(value, 0.5), max(value), min(gas) FROM demo.transactions WHERE block_num <= {e}",
        f"SELECT left(hex(input), 8) AS selector, count(*) FROM demo.transactions WHERE block_num <= {e} "
        "AND octet_length(input) >= 4 GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 10",
        f"SELECT block_num, parent_hash = lag(hash) OVER (ORDER BY block_num) AS linked FROM demo.blocks "
        f"WHERE block_num BETWEEN {a} AND {e} ORDER BY 1",
        f'SELECT block_num, count(DISTINCT "from") FROM demo.transactions WHERE block_num BETWEEN {a} AND {e} '
        "GROUP BY 1 ORDER BY 1",
    ]


def plain(table):
    """Rows as tuples of plain values (the server's unsigned integers and DuckDB's signed ones compare equal)."""
    return [tuple(row.values()) for row in table.to_pylist()]


def test_twenty_amp_queries_answer_as_duckdb_over_the_same_files_while_ingesting(demo):
    server = demo()
    passes = lambda: server.get("/api/v1/datasets/demo/tables/logs/passes").json()  # noqa: E731
    e = min(end(server, t) for t in ("blocks", "transactions", "logs")) - 10
    queries = amp_queries(e)
    assert len(queries) == 20
    for sql in queries:
        ours = adbc_query(server, sql)
        theirs = duckdb_over_files(server).sql(sql).to_arrow_table()
        assert ours.num_rows > 0, sql
        assert plain(ours) == plain(theirs), sql
        assert ours.column_names == theirs.column_names, sql
    # The same rows over JSON lines, in Amp's encoding: hex without 0x, numbers, nulls left out.
    rows = jsonl_rows(server, queries[3])
    assert rows == [{"block_num": b, "log_index": i, "hash": h.hex()} for b, i, h in plain(adbc_query(server,
                                                                                                     queries[3]))]
    eventually(lambda: end(server, "logs") > e + 10, timeout=60, what="the tables kept ingesting")
    eventually(lambda: passes()["passes"], timeout=60, what="and compacting")


def test_json_lines_answers_and_fails_as_amp(demo):
    server = demo()
    rows = jsonl_rows(server, "SELECT block_num, topic3, address, CAST(1 AS DECIMAL(38,0)) AS d FROM demo.logs "
                              "WHERE topic3 IS NULL LIMIT 1")
    assert set(rows[0]) == {"block_num", "address", "d"}, "a null column is left out of its row"
    assert len(rows[0]["address"]) == 40 and int(rows[0]["address"], 16) >= 0
    assert rows[0]["d"] == 1
    assert jsonl_rows(server, "SELECT 1 AS one", api_port=True) == [{"one": 1}], "the API port too"
    for sql, status, code in [("", 400, "INVALID_SQL_STRING"), ("SELEC 1", 400, "SQL_PARSE_ERROR"),
                              ("SELECT 1; SELECT 2", 400, "SQL_PARSE_ERROR"),
                              ("SELECT * FROM demo.nope", 404, "TABLE_NOT_FOUND_ERROR"),
                              ("SELECT nope FROM demo.logs", 400, "INVALID_PLAN"),
                              ("DELETE FROM demo.logs", 400, "SQL_PARSE_ERROR"),
                              ("SELECT count(*) FROM demo.logs SETTINGS stream = true", 400, "INVALID_QUERY")]:
        for api_port in (False, True):
            r = jsonl(server, sql, api_port=api_port)
            assert r.status_code == status, (sql, r.text)
            assert r.json()["error_code"] == code, (sql, r.text)
            assert r.json()["error_message"], sql
    r = jsonl(server, "SELECT 1", headers={"amp-stream": "maybe"})
    assert r.status_code == 400 and "amp-stream" in r.json()["error_message"]
    r = jsonl(server, "SELECT block_num FROM demo.logs", headers={"amp-stream": "true", "amp-resume": "{nope"})
    assert r.status_code == 400 and "amp-resume" in r.json()["error_message"]
    assert requests.get(f"http://127.0.0.1:{server.query_ports['jsonl']}/health", timeout=10).status_code == 200


def follow(chunks, client, until, timeout=60):
    """Applies a stream's chunks to `client` until `until(client)` (keep-alives come every second)."""
    deadline = time.monotonic() + timeout
    for table, meta in chunks:
        client.apply(table.to_pylist() if table is not None else [], meta)
        if until(client):
            return
        assert time.monotonic() < deadline, f"not within {timeout} s; the client is at {client.cursor}"


def test_a_stream_over_flight_delivers_every_canonical_row_once_and_resumes(demo):
    server = demo()
    sql = "SELECT block_num, tx_index, log_index, address FROM demo.logs WHERE log_index % 7 = 0"
    stream = FlightStream(server, sql)
    client = StreamClient("demo")
    start_end = end(server, "logs")
    follow(stream.chunks(), client, lambda c: c.cursor and c.cursor["number"] >= start_end + 40)
    stream.close()
    assert len(client.ranges) >= 10, "microbatches as blocks arrive"
    # Resume from the cursor on a new connection: the rows go on where they stopped.
    resumed = FlightStream(server, sql, resume={"demo": client.cursor})
    target = client.cursor["number"] + 20
    follow(resumed.chunks(), client, lambda c: c.cursor["number"] >= target)
    resumed.close()
    upto = client.cursor["number"] - 10  # below any reorg the demo makes
    batch = adbc_query(server, f"{sql} AND block_num <= {upto}").to_pylist()
    assert client.sorted_rows(upto) == sorted(batch, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def test_a_stream_over_json_lines_has_marker_lines_and_keep_alives(demo):
    server = demo()
    r = jsonl(server, "SELECT block_num, log_index FROM demo.logs WHERE log_index = 0 SETTINGS stream = true",
              stream=True)
    assert r.status_code == 200
    client = StreamClient("demo")
    lines = r.iter_lines()
    pending = []
    markers = 0
    for line in lines:
        obj = json.loads(line)
        if "@metadata" in obj:
            markers += 1
            meta = obj["@metadata"]
            client.apply(pending, meta)
            pending = []
            if client.cursor and len(client.ranges) >= 5:
                break
        else:
            pending.append(obj)
    r.close()
    assert markers >= 10 and client.rows
    assert all(len(rows) == 1 for rows in client.rows.values()), "one row per block, each once"
    # Refused, before any row, with Amp's words: a plan that cannot run incrementally.
    r = jsonl(server, "SELECT block_num FROM demo.logs ORDER BY block_num", headers={"amp-stream": "1"})
    assert r.status_code == 400 and "non-incremental operation: Sort" in r.json()["error_message"]


def test_who_may_query_what(demo):
    server = demo()
    assert jsonl(server, "SELECT count(*) FROM demo.logs").status_code == 200, "before set-up, anyone"
    set_up_admin(server)
    r = jsonl(server, "SELECT count(*) FROM demo.logs")
    assert r.status_code == 401 and r.json()["error_code"] == "UNAUTHENTICATED"
    logs_only = create_user(server_api(server), "logs-reader", [
        {"effect": "allow", "action": ["tables:ReadTable"], "resource": "arn:sediment:tables:::demo/logs"}])
    assert jsonl(server, "SELECT count(*) FROM demo.logs", auth=logs_only).status_code == 200
    for sql in ("SELECT * FROM demo.logs l JOIN demo.transactions t USING (block_num)", "SELECT 1"):
        r = jsonl(server, sql, auth=logs_only)
        assert r.status_code == 403 and "tables:ReadTable" in r.json()["error_message"], (sql, r.text)
    assert adbc_query(server, "SELECT count(*) AS n FROM demo.logs", auth=logs_only).num_rows == 1
    with pytest.raises(Exception, match="tables:ReadTable"):
        adbc_query(server, "SELECT count(*) FROM demo.transactions", auth=logs_only)
    with pytest.raises(Exception, match="(?i)unauthenticated|invalid access key"):
        adbc_query(server, "SELECT 1", auth=(logs_only[0], "wrong"))
    with pytest.raises(Exception):
        FlightStream(server, "SELECT block_num FROM demo.transactions", auth=logs_only)
    assert adbc_query(server, "SELECT 1 AS one", auth=ADMIN).to_pylist() == [{"one": 1}]


def server_api(server):
    from security.util import Api
    return Api(server)


def test_a_hostile_query_is_stopped_and_slows_neither_health_nor_compaction(demo):
    server = demo("timeout_secs = 3\nmax_concurrent = 1")
    hostile = "SELECT count(*) FROM demo.logs a, demo.logs b, demo.transactions c"
    results = {}

    def run():
        r = jsonl(server, hostile, stream=True, timeout=120)
        results["status"] = r.status_code
        try:
            results["text"] = b"".join(r.iter_content(None)).decode()
        except requests.exceptions.ChunkedEncodingError:
            results["cut"] = True
    t = threading.Thread(target=run)
    t.start()
    eventually(lambda: "\nquery_running 1" in server.get("/metrics").text, what="the query to run")
    busy = jsonl(server, "SELECT 1")
    assert busy.status_code == 503 and "max_concurrent" in busy.json()["error_message"]
    worst = 0.0
    while t.is_alive():
        t0 = time.monotonic()
        assert server.get("/api/v1/healthcheck").status_code == 204
        worst = max(worst, time.monotonic() - t0)
        time.sleep(0.1)
    t.join()
    assert worst < 1.0, f"the healthcheck took {worst:.2f} s while a cross join ran"
    # The status line went before the time limit: the error is the last line, and the stream ends short.
    assert results["status"] == 200
    assert results.get("cut") or "time limit" in results.get("text", ""), results
    assert "\nquery_running 0" in server.get("/metrics").text


def test_a_stream_follows_a_hardhat_reorg_and_a_cursor_on_the_abandoned_fork_is_told(start_server, tmp_path, node):
    """The revert reorg of the evm tests: blocks after `fork` replaced by a longer branch."""
    traffic(node, 6)
    server = start_evm(start_server, tmp_path, node.url, extra="[query]\nkeep_alive_secs = 0.5\npoll_interval_secs = 0.1")
    wait_for(server, node)
    sql = "SELECT block_num, hash FROM eth.blocks"
    stream = FlightStream(server, sql)
    client = StreamClient("eth")
    chunks = stream.chunks()
    at_head = lambda c: c.cursor and c.cursor["hash"] == head_hash(node)  # noqa: E731
    follow(chunks, client, at_head)
    fork = node.latest()
    before_fork = dict(client.cursor)
    snap = node.rpc("evm_snapshot")
    traffic(node, 4, salt=2)  # blocks after the fork, on the branch that will be dropped
    wait_for(server, node)
    follow(chunks, client, at_head)
    abandoned = dict(client.cursor)
    assert abandoned["number"] > fork
    assert node.rpc("evm_revert", snap) is True
    for _ in range(3):
        node.rpc("evm_mine")
    traffic(node, 5, salt=3)
    wait_for(server, node, "the tables to follow the new branch")
    follow(chunks, client, at_head)
    stream.close()
    assert client.reorgs >= 1, "the client was told of the reorg"
    head = node.latest()
    canonical = sorted(adbc_query(server, sql).to_pylist(), key=lambda r: r["block_num"])
    assert [r["hash"].hex() for r in canonical] == [
        node.rpc("eth_getBlockByNumber", hex(b), False)["hash"][2:] for b in range(head + 1)]
    assert client.sorted_rows(head) == sorted(canonical, key=lambda r: json.dumps(r, sort_keys=True, default=str))
    # A client that disconnected before the fork resumes from its cursor: every block after it, once.
    resumed = StreamClient("eth")
    resumed.cursor = before_fork
    again = FlightStream(server, sql, resume={"eth": before_fork})
    follow(again.chunks(), resumed, at_head)
    again.close()
    assert resumed.reorgs == 0
    assert sorted(resumed.rows) == list(range(before_fork["number"] + 1, head + 1))
    assert [r[0]["hash"].hex() for _, r in sorted(resumed.rows.items())] == [
        c["hash"].hex() for c in canonical[before_fork["number"] + 1:]]
    # A cursor on the abandoned branch is told: its first range starts where the chains part.
    told = StreamClient("eth")
    told.cursor = abandoned
    lost = FlightStream(server, sql, resume={"eth": abandoned})
    follow(lost.chunks(), told, lambda c: c.ranges)
    lost.close()
    assert told.reorgs == 1
    assert told.ranges[0]["numbers"]["start"] == fork + 1
    assert told.ranges[0]["prev_hash"] == node.rpc("eth_getBlockByNumber", hex(fork), False)["hash"]


def head_hash(node):
    return node.rpc("eth_getBlockByNumber", "latest", False)["hash"]
