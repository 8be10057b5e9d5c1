#!/usr/bin/env python3
"""The query server (issue 45) against DuckDB reading the same files, in one run.

1. Latency of three queries over ~10M demo log rows (the synthetic chain's `demo.logs` and
   `demo.transactions`, written by the real ingest job and compacted): through the Flight SQL server
   (ADBC's driver, one connection) against DuckDB (Python) over the same snapshot's live files, each
   with one thread. Median of --runs runs; read the ratio.
     range    every column of the logs of 10 blocks
     address  the logs of one address (an `address =` filter) in the last 2,000 blocks
     join     logs joined to their transactions over 1,000 blocks, counted by sender
2. Streaming: a table appended at 4 blocks a second (one segment per block, through the tables API);
   a Flight SQL stream (`SETTINGS stream = true`) open on it; the time from each append's
   acknowledgement to its rows reaching the client (median, p99).
3. Memory: the server's RSS with 50 idle streams open on a quiet table, against none.

Usage: .venv/bin/python bench/query_bench.py [--blocks 34000] [--runs 7] [--stream-secs 60]
"""
import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import duckdb
import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from query_util import FlightStream, adbc  # noqa: E402
from tables_util import SCHEMA, append, ipc  # noqa: E402
from timing import median_ms  # noqa: E402

SEDIMENT = ROOT / "build" / "sediment"

CONFIG = """
[writer]
bytes = 268435456
[writer.compactor]
gc_manifest_grace_period = 3600
[worker]
poll_interval_secs = 0.25
[query]
flight_listen = "127.0.0.1:0"
jsonl_listen = "127.0.0.1:0"
threads = 1
max_streams = 1000
keep_alive_secs = 30
poll_interval_secs = 1
[[jobs]]
dataset = "demo"
history_blocks = {blocks}
block_time = 1000000
txs_per_block = 150
logs_per_tx = 2.0
"""


class Server:
    def __init__(self, work, blocks):
        cfg = work / "cfg.toml"
        cfg.write_text(CONFIG.format(blocks=blocks))
        self.log = work / "server.log"
        self.proc = subprocess.Popen([str(SEDIMENT), "serve", "--listen", "127.0.0.1:0", "--config", str(cfg),
                                      "--data-dir", str(work / "data")], stdout=open(self.log, "w"),
                                     stderr=subprocess.STDOUT)
        self.data_dir = work / "data"
        self.query_ports = {}
        for _ in range(600):
            text = self.log.read_text()
            m = re.search(r"listening on http://[\d.]+:(\d+)", text)
            f = re.search(r"Flight SQL at grpc://[\d.]+:(\d+)", text)
            j = re.search(r"JSON lines at http://[\d.]+:(\d+)/", text)
            if m and f and j:
                self.url = f"http://127.0.0.1:{m.group(1)}"
                self.query_ports = {"flight": int(f.group(1)), "jsonl": int(j.group(1))}
                return
            time.sleep(0.1)
        raise RuntimeError("the server did not start:\n" + self.log.read_text())

    def get(self, path, **kw):
        return requests.get(self.url + path, timeout=60, **kw)

    def post(self, path, **kw):
        return requests.post(self.url + path, timeout=60, **kw)

    def rss_mib(self):
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)


def wait_loaded(server, blocks):
    """Until the job wrote its history and compaction has nothing left to merge."""
    def state(t):
        return server.get(f"/api/v1/datasets/demo/tables/{t}").json()
    while min(state(t).get("last_block") or 0 for t in ("logs", "transactions")) < blocks - 1:
        time.sleep(1)
    for t in ("logs", "transactions"):
        while True:
            r = server.post(f"/api/v1/datasets/demo/tables/{t}/compact")
            if r.status_code == 200 and not r.json().get("merges"):
                break
            time.sleep(1)
    return state("logs")


def query_latencies(server, runs, last_block):
    files = {t: [str(server.data_dir / "objects" / f["path"]) for f in
                 server.get(f"/api/v1/datasets/demo/tables/{t}/files").json()["files"]]
             for t in ("logs", "transactions")}
    peer = duckdb.connect(config={"threads": 1})
    peer.execute("CREATE SCHEMA demo")
    for t, paths in files.items():
        peer.execute(f"CREATE VIEW demo.{t} AS SELECT * FROM read_parquet({paths!r})")
    x = last_block // 2
    address = peer.sql(f"SELECT hex(address) FROM demo.logs WHERE block_num = {x} LIMIT 1").fetchall()[0][0]
    queries = {
        "range (10 blocks, every column)": f"SELECT * FROM demo.logs WHERE block_num BETWEEN {x} AND {x + 9}",
        "address = (2,000 blocks)": f"SELECT block_num, log_index FROM demo.logs WHERE address = from_hex('{address}') "
                                    f"AND block_num BETWEEN {x - 1000} AND {x + 999}",
        "join logs-transactions (1,000 blocks)": 'SELECT t."from", count(*) AS n FROM demo.logs l JOIN '
                                                 "demo.transactions t USING (block_num, tx_index) WHERE l.block_num "
                                                 f"BETWEEN {x} AND {x + 999} GROUP BY 1 ORDER BY n DESC LIMIT 10",
    }
    conn = adbc(server)
    rows = []
    for name, sql in queries.items():
        def ours():
            with conn.cursor() as cur:
                cur.execute(sql)
                return cur.fetch_arrow_table()
        def theirs():
            return peer.sql(sql).to_arrow_table()
        assert ours().num_rows == theirs().num_rows, name
        rows.append((name, ours().num_rows, median_ms(ours, runs), median_ms(theirs, runs)))
    conn.close()
    return rows, sum(len(p) for p in files.values())


def create_table(server, name):
    r = requests.put(f"{server.url}/api/v1/datasets/bench/tables/{name}", data=ipc(schema=SCHEMA), timeout=60)
    assert r.status_code in (200, 201), r.text


def streaming_latency(server, secs, rate=4.0):
    create_table(server, "live")
    assert append(server, "live", 0, 0, ds="bench").status_code in (200, 201)
    arrived = {}
    stream = FlightStream(server, "SELECT block_num FROM bench.live")
    ready = threading.Event()

    def read():
        try:
            for table, meta in stream.chunks():
                now = time.perf_counter()
                ready.set()
                if table is not None:
                    for b in table.column("block_num").to_pylist():
                        arrived.setdefault(b, now)
        except Exception:  # noqa: BLE001 (the stream is cancelled at the end)
            pass
    t = threading.Thread(target=read, daemon=True)
    t.start()
    ready.wait(30)
    acked = {}
    block, start = 1, time.perf_counter()
    while time.perf_counter() - start < secs:
        r = append(server, "live", block, block, ds="bench")
        assert r.status_code in (200, 201), r.text
        acked[block] = time.perf_counter()
        block += 1
        time.sleep(max(0.0, start + block / rate - time.perf_counter()))
    time.sleep(3)
    stream.close()
    lat = sorted((arrived[b] - acked[b]) * 1000 for b in acked if b in arrived)
    missing = len(acked) - len(lat)
    return statistics.median(lat), lat[min(len(lat) - 1, int(len(lat) * 0.99))], len(lat), missing


def idle_streams_memory(server, n=50):
    create_table(server, "quiet")
    assert append(server, "quiet", 0, 9, ds="bench").status_code in (200, 201)
    time.sleep(1)
    before = server.rss_mib()
    streams = []
    for _ in range(n):
        s = FlightStream(server, "SELECT * FROM bench.quiet")
        first = threading.Event()

        def drain(s=s, first=first):
            try:
                for _ in s.chunks():
                    first.set()
            except Exception:  # noqa: BLE001 (closed at the end)
                pass
        threading.Thread(target=drain, daemon=True).start()
        first.wait(30)
        streams.append(s)
    time.sleep(3)
    after = server.rss_mib()
    for s in streams:
        s.close()
    return before, after


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, default=34000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--stream-secs", type=float, default=60)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sediment-query-bench-") as tmp:
        server = Server(Path(tmp), args.blocks)
        try:
            t0 = time.perf_counter()
            logs = wait_loaded(server, args.blocks)
            print(f"demo.logs: {logs['rows']:,} rows in {logs['files']} files "
                  f"(written and compacted in {time.perf_counter() - t0:.0f} s)\n")
            rows, nfiles = query_latencies(server, args.runs, logs["last_block"])
            print("| query | rows | Sediment Flight SQL ms | DuckDB (Python) ms | Sediment / DuckDB |")
            print("| --- | --- | --- | --- | --- |")
            for name, n, ours, theirs in rows:
                print(f"| {name} | {n:,} | {ours:.1f} | {theirs:.1f} | {ours / theirs:.2f}x |")
            med, p99, n, missing = streaming_latency(server, args.stream_secs)
            print(f"\nstreaming at 4 blocks/s: append acknowledged -> rows at the client: median {med:.0f} ms, "
                  f"p99 {p99:.0f} ms ({n} blocks, {missing} missing)")
            before, after = idle_streams_memory(server)
            print(f"server RSS: {before:.0f} MiB before, {after:.0f} MiB with 50 idle streams "
                  f"(+{after - before:.1f} MiB, {(after - before) / 50 * 1024:.0f} KiB per stream)")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
