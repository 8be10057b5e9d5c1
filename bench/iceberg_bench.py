#!/usr/bin/env python3
"""The Iceberg REST catalog (issue 27): what a snapshot costs and what reading through the catalog costs.

A real `sediment serve` (compaction off, so the live set only grows) gets one-block segments of chain
logs appended over HTTP until the table has each checkpoint's number of live files (default 1k and
10k); every append is published as a snapshot by the server. At each checkpoint:

  * loadTable latency over HTTP: right after an append (it includes publishing that change) and
    when nothing changed (the metadata is served again);
  * bytes of metadata (manifests and manifest list) written per snapshot, from the server's
    iceberg_metadata_bytes_written_total over the last `--samples` appends;
  * files planned for a 10-block range: PyIceberg's plan_files and DuckDB's "Total Files Read";
  * DuckDB (1.4.4 with its iceberg extension) running a 10-block range query and an `address =`
    query through the catalog, and the same queries over read_parquet() of an explicit list of the
    live files, alternated in one process: the ratio is the catalog's overhead.

Run with the engines' venv (DuckDB 1.4.4, PyIceberg; scripts/install-test.sh makes it):
    .venv-engines/bin/python bench/iceberg_bench.py [--checkpoints 1000 10000] [--samples 20] [--runs 7]
"""
import argparse
import glob
import hashlib
import io
import json
import os
import re
import signal
import site
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc
import requests

ROOT = Path(__file__).resolve().parent.parent
SEDIMENT = ROOT / "build" / "sediment"
SCHEMA = pa.schema([pa.field("block_num", pa.uint64(), False), pa.field("log_index", pa.uint32(), False),
                    pa.field("address", pa.binary(20), False), pa.field("topic0", pa.binary(32)),
                    pa.field("data", pa.binary(), False)])
TABLE = "/api/v1/datasets/eth/tables/logs"
ADDRESSES = [hashlib.sha1(f"a{i}".encode()).digest() for i in range(1000)]


def block_hash(b):
    return hashlib.sha256(f"{b}".encode()).hexdigest()


def ipc(batch=None, schema=SCHEMA, hashes=None):
    if hashes:
        schema = schema.with_metadata({"sediment.block_hashes": ",".join(hashes)})
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, schema) as w:
        if batch is not None:
            w.write_batch(batch.replace_schema_metadata(schema.metadata))
    return sink.getvalue()


def rows(b, per_block=8):
    n = range(per_block)
    return pa.record_batch([
        pa.array([b] * per_block, pa.uint64()), pa.array(list(n), pa.uint32()),
        pa.array([ADDRESSES[(b * 7 + i) % len(ADDRESSES)] for i in n], pa.binary(20)),
        pa.array([hashlib.sha256(f"{b}/{i}".encode()).digest() for i in n], pa.binary(32)),
        pa.array([os.urandom(64) for _ in n], pa.binary())], schema=SCHEMA)


class Server:
    def __init__(self, work, data_dir=None):
        cfg = work / "sediment.toml"
        cfg.write_text("[writer.compactor]\nactive = false\n")
        # The log goes to a file: a pipe nobody reads would block the server once full.
        self.log = open(work / "server.log", "w+")
        self.proc = subprocess.Popen([str(SEDIMENT), "serve", "--config", str(cfg), "--data-dir", str(data_dir or work / "data"),
                                      "--listen", "127.0.0.1:0"], stdout=self.log, stderr=subprocess.STDOUT, text=True)
        deadline = time.time() + 60
        while time.time() < deadline:
            m = re.search(r"listening on http://([^\s:]+):(\d+)", (work / "server.log").read_text())
            if m:
                self.url = f"http://{m.group(1)}:{m.group(2)}"
                break
            time.sleep(0.05)
        else:
            raise RuntimeError("the server did not start: " + (work / "server.log").read_text()[-2000:])
        self.session = requests.Session()

    def append(self, b):
        params = {"start_block": b, "end_block": b, "end_hash": block_hash(b), "parent_hash": block_hash(b - 1)}
        r = self.session.post(self.url + TABLE + "/segments", params=params,
                              data=ipc(rows(b), hashes=[block_hash(b)]))
        assert r.status_code == 201, r.text

    def metric(self, name):
        m = re.search(rf"^{name} (\S+)$", self.session.get(self.url + "/metrics").text, re.M)
        return float(m.group(1)) if m else 0.0

    def load(self):
        t0 = time.perf_counter()
        r = self.session.get(self.url + "/iceberg/v1/namespaces/eth/tables/logs")
        assert r.status_code == 200, r.text
        return (time.perf_counter() - t0) * 1000, r.json()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(60)


def duckdb_con(url, threads=1):
    import duckdb
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    root = site.getsitepackages()[0]
    for name in ("httpfs", "avro", "iceberg"):
        con.execute(f"LOAD '{glob.glob(f'{root}/duckdb_ext/extensions/*/*/{name}.duckdb_extension')[0]}'")
    con.execute(f"CREATE SECRET s (TYPE iceberg, CLIENT_ID 'x', CLIENT_SECRET 'y', "
                f"OAUTH2_SERVER_URI '{url}/iceberg/v1/oauth/tokens')")
    con.execute(f"ATTACH 'sediment' AS sed (TYPE iceberg, SECRET s, ENDPOINT '{url}/iceberg', READ_ONLY)")
    return con


def timed(con, sql, runs):
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        con.execute(sql).fetchall()
        out.append((time.perf_counter() - t0) * 1000)
    return statistics.median(out)


def checkpoint(server, n, samples, runs):
    # loadTable right after an append (publishing included), then with nothing changed.
    after_append, unchanged = [], []
    bytes0, snaps0 = server.metric("iceberg_metadata_bytes_written_total"), server.metric(
        "iceberg_snapshots_published_total")
    for i in range(samples):
        server.append(n + i)
        ms, _ = server.load()
        after_append.append(ms)
        unchanged.append(server.load()[0])
    n += samples
    bytes1, snaps1 = server.metric("iceberg_metadata_bytes_written_total"), server.metric(
        "iceberg_snapshots_published_total")
    _, loaded = server.load()
    from pyiceberg.catalog import load_catalog
    table = load_catalog("sed", type="rest", uri=server.url + "/iceberg").load_table("eth.logs")
    lo = n // 2
    planned = len(list(table.scan(row_filter=f"block_num >= {lo} and block_num <= {lo + 9}").plan_files()))
    files, params = [], {"amount": 1000}
    while True:  # the live files, a page at a time
        page = server.session.get(server.url + TABLE + "/files", params=params).json()
        files += [f["path"] for f in page["files"]]
        if not page["pagination"]["has_more"]:
            break
        params["after"] = page["pagination"]["next_offset"]
    root = Path(loaded["metadata"]["location"].removeprefix("file://")).parents[2]  # <objects>/tables/eth/logs
    paths = [str(root / p) for p in files]
    con = duckdb_con(server.url)
    con.execute(f"CREATE VIEW direct AS SELECT * FROM read_parquet({paths!r})")
    addr = ADDRESSES[3].hex()
    queries = {"range": f"SELECT count(*), sum(log_index) FROM {{}} WHERE block_num BETWEEN {lo} AND {lo + 9}",
               "address": f"SELECT count(*) FROM {{}} WHERE address = from_hex('{addr}')"}
    explain = con.execute("EXPLAIN ANALYZE " + queries["range"].format("sed.eth.logs")).fetchall()[0][1]
    duck_files = int(re.search(r"Total Files Read: (\d+)", explain).group(1))
    out = {"live_files": n, "load_after_append_ms": statistics.median(after_append),
           "load_unchanged_ms": statistics.median(unchanged),
           "metadata_bytes_per_snapshot": (bytes1 - bytes0) / max(1.0, snaps1 - snaps0),
           "snapshots": snaps1 - snaps0, "pyiceberg_files_planned_10_blocks": planned,
           "duckdb_files_read_10_blocks": duck_files}
    for name, q in queries.items():
        via, direct_rows = con.execute(q.format("sed.eth.logs")).fetchall(), con.execute(q.format("direct")).fetchall()
        assert via == direct_rows, f"{name}: the catalog read {via}, the files {direct_rows}"
        cat, direct = [], []
        for _ in range(3):  # alternate, so drift hits both
            cat.append(timed(con, q.format("sed.eth.logs"), runs))
            direct.append(timed(con, q.format("direct"), runs))
        out[f"duckdb_{name}_catalog_ms"] = statistics.median(cat)
        out[f"duckdb_{name}_files_ms"] = statistics.median(direct)
        out[f"duckdb_{name}_ratio"] = statistics.median(cat) / statistics.median(direct)
    return out, n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoints", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="iceberg-bench-") as d:
        server = Server(Path(d))
        try:
            schema = ipc()
            assert server.session.put(server.url + TABLE, data=schema).status_code in (200, 201)
            n = 0
            for cp in args.checkpoints:
                while n < cp - args.samples:
                    server.append(n)
                    n += 1
                res, n = checkpoint(server, n, args.samples, args.runs)
                print(json.dumps(res), flush=True)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
