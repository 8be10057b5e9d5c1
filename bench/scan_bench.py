#!/usr/bin/env python3
"""Query latency before and after compaction: Sediment's scan vs DuckDB.

A `logs` table of 2,000 head-written segments (`sediment-bench ingest`: the
real ingest job, one segment per table per poll, two blocks each, compaction
off) is queried through Sediment's scan API and by DuckDB reading the same
live Parquet files, then compacted (POST .../compact until nothing merges) and
queried again: "after" is the head merge's output (the target is far, so its
row groups are the head files' pages, copied: small pages, no dictionaries);
"final" is the same table compacted by a server whose target is the table's
size, so the one merge is final (encoded fully). Two queries:

  * range: every column of the logs of 10 blocks (block_num BETWEEN x AND x+9)
  * aggregate: count(*) and sum(log_index) over the whole table (Sediment:
    scan of log_index as Arrow, summed by the client)

Latency is the median of --runs runs, each end to end (HTTP for Sediment).
Prints a Markdown table; read the ratios.

Usage: .venv/bin/python bench/scan_bench.py [--segments 2000] [--runs 7]
"""
import argparse
import io
import json
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc
import requests

from timing import median_ms

ROOT = Path(__file__).resolve().parent.parent
SEDIMENT = ROOT / "build" / "sediment"
BENCH = ROOT / "build" / "sediment-bench"
T = "/api/v1/datasets/bench/tables/logs"

CONFIG = """
[writer.compactor]
min_interval = 1000000000.0   # no background passes: the bench compacts when it wants
cooldown_duration = 0.0
skip_latest_segments = 0
gc_manifest_grace_period = 1000000000.0
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--segments", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="sediment-scan-bench-"))
    ingested = work / "ingested"
    data = work / "data"
    server = None

    def serve(directory, extra=""):
        cfg = work / "bench.toml"
        cfg.write_text(CONFIG + extra)
        proc = subprocess.Popen([str(SEDIMENT), "serve", "--config", str(cfg), "--data-dir", str(directory),
                                 "--listen", "127.0.0.1:0"], stderr=subprocess.PIPE, text=True)
        line = proc.stderr.readline()
        while "listening on" not in line:
            line = proc.stderr.readline()
            if not line:
                raise RuntimeError("server did not start")
        # Keep draining the server's log so it never blocks on a full pipe.
        threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
        return proc, line.split("listening on ")[1].split()[0]

    try:
        if not (ingested / "kv").exists():
            subprocess.run([str(BENCH), "ingest", "--data-dir", str(ingested), "--segments",
                            str(args.segments)], check=True, stdout=subprocess.DEVNULL)
        if data.exists():
            shutil.rmtree(data)
        shutil.copytree(ingested, data)  # every run starts from the same head-written table
        server, url = serve(data)
        session = requests.Session()
        con = duckdb.connect()
        con.execute("SET threads = 2")

        def live_files():
            files, after = [], None
            while True:  # pages of the live set
                page = session.get(url + T + "/files", params={"after": after} if after else {}).json()
                files += page["files"]
                if not page["pagination"]["has_more"]:
                    return [str(data / "objects" / f["path"]) for f in files]
                after = page["pagination"]["next_offset"]

        info = session.get(url + T).json()
        x = (info["first_block"] + info["last_block"]) // 2

        def sediment_range():
            r = session.get(url + T + "/scan", params={"format": "arrow", "from_block": x, "to_block": x + 9})
            return pa.ipc.open_stream(io.BytesIO(r.content)).read_all()

        def sediment_aggregate():
            r = session.get(url + T + "/scan", params={"format": "arrow", "columns": "log_index"})
            t = pa.ipc.open_stream(io.BytesIO(r.content)).read_all()
            return t.num_rows, pc.sum(t.column(0)).as_py()

        def measure(state):
            files = live_files()
            duck_range = lambda: con.sql(  # noqa: E731
                f"SELECT * FROM read_parquet({files!r}) WHERE block_num BETWEEN {x} AND {x + 9}").to_arrow_table()
            duck_agg = lambda: con.execute(  # noqa: E731
                f"SELECT count(*), sum(log_index) FROM read_parquet({files!r})").fetchall()
            # Both engines see the same rows.
            assert sediment_range().num_rows == duck_range().num_rows
            n, s = sediment_aggregate()
            assert [n, s] == list(duck_agg()[0])
            return {"state": state, "files": len(files),
                    "sediment_range": median_ms(sediment_range, args.runs),
                    "duckdb_range": median_ms(duck_range, args.runs),
                    "sediment_agg": median_ms(sediment_aggregate, args.runs),
                    "duckdb_agg": median_ms(duck_agg, args.runs)}

        def compact():
            while True:
                merged = session.post(url + T + "/compact").json()["merges"]
                if not merged:
                    break

        before = measure("before")
        compact()
        after = measure("after")
        server.terminate()
        server.wait()
        # The same table, compacted by a server whose target it reaches: one final merge.
        shutil.rmtree(data)
        shutil.copytree(ingested, data)
        server, url = serve(data, f"\n[writer]\nbytes = {info['bytes']}\n")
        compact()
        final = measure("final")

        print(f"\nbench.logs: {info['rows']:,} rows in {before['files']} head-written files "
              f"({info['bytes'] / 2**20:.0f} MiB uncompressed); after compaction {after['files']} file(s). "
              f"Median of {args.runs} runs, ms.\n")
        print("| query | engine | before | after (head merge) | final | before / after | after / final |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for q, name in (("range", "10-block range, all columns"), ("agg", "count + sum over the table")):
            for engine in ("sediment", "duckdb"):
                b, a, f = before[f"{engine}_{q}"], after[f"{engine}_{q}"], final[f"{engine}_{q}"]
                print(f"| {name} | {engine} | {b:.1f} | {a:.1f} | {f:.1f} | {b / a:.1f}x | {a / f:.2f}x |")
        print()
        for q in ("range", "agg"):
            print(f"compacted, {q}: Sediment / DuckDB latency = {after[f'sediment_{q}'] / after[f'duckdb_{q}']:.2f} "
                  f"(head merge), {final[f'sediment_{q}'] / final[f'duckdb_{q}']:.2f} (final)")
    finally:
        if server:
            server.terminate()
            server.wait()
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
