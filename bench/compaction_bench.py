#!/usr/bin/env python3
"""Merge throughput and peak memory: Sediment's compactor vs DuckDB.

2,000 small zstd Parquet files (about 10M rows, 5 columns of mixed int and
binary) are imported as segments of one table. Then, on the same files and
with the same output settings (zstd level 1, target-size files):

  * Sediment runs one compaction pass (`sediment bench compact`), with
    write_concurrency = metadata_concurrency = threads;
  * DuckDB runs COPY (SELECT * FROM read_parquet([...])) TO ... (COMPRESSION zstd)
    with SET threads = threads.

Each engine runs in its own process so its peak RSS (from wait4) is its own.
Times are the operation alone (no process start-up). Prints a Markdown table;
report ratios, not absolute times (the machine is shared and noisy).

Usage: .venv/bin/python bench/compaction_bench.py [--files 2000] [--rows 10000000] [--threads 1 2]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
SEDIMENT = ROOT / "build" / "sediment"

DUCKDB_SCRIPT = r"""
import duckdb, json, sys, time
files = json.load(open(sys.argv[1]))
out, threads, file_size, row_group_rows = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
con = duckdb.connect()
con.execute(f"SET threads = {threads}")
con.execute("SET preserve_insertion_order = true")
t = time.perf_counter()
con.execute(f"COPY (SELECT * FROM read_parquet({files!r})) TO '{out}' "
             f"(FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 1, FILE_SIZE_BYTES {file_size}, "
             f"ROW_GROUP_SIZE {row_group_rows})")
print(json.dumps({"seconds": time.perf_counter() - t}))
"""


def generate(directory, files, rows):
    """Contiguous block ranges; skewed binary sizes, like logs tables."""
    rng = np.random.default_rng(42)
    per_file = rows // files
    schema = pa.schema([pa.field("block_num", pa.uint64(), nullable=False), ("log_index", pa.int32()),
                        ("address", pa.binary(20)), ("data", pa.binary()), ("value", pa.int64())])
    block = 0
    for i in range(files):
        blocks_in_file = 5
        bn = np.sort(rng.integers(block, block + blocks_in_file, per_file)).astype(np.uint64)
        block += blocks_in_file
        lens = np.minimum(rng.pareto(1.5, per_file) * 16, 2048).astype(np.int64)
        offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
        payload = rng.integers(0, 256, int(offsets[-1]), dtype=np.uint8).tobytes()
        data = pa.Array.from_buffers(pa.binary(), per_file, [None, pa.py_buffer(offsets.tobytes()),
                                                             pa.py_buffer(payload)])
        addr_pool = rng.integers(0, 256, (64, 20), dtype=np.uint8)
        addr = pa.array([addr_pool[j].tobytes() for j in rng.integers(0, 64, per_file)], pa.binary(20))
        table = pa.Table.from_arrays([pa.array(bn), pa.array(np.arange(per_file, dtype=np.int32)), addr, data,
                                      pa.array(rng.integers(0, 1 << 40, per_file))], schema=schema)
        pq.write_table(table, directory / f"{i:06d}.parquet", compression="zstd", compression_level=1)


def run(cmd):
    """Runs cmd in a child process; returns (JSON of its last stdout line, its peak RSS in MiB)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.dup2(w, 1)
        os.execv(cmd[0], cmd)
    os.close(w)
    with os.fdopen(r) as f:
        out = f.read()
    _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{cmd[:3]} failed:\n{out[-2000:]}")
    return json.loads(out.strip().splitlines()[-1]), usage.ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--target-mib", type=int, default=256, help="[writer] bytes, uncompressed")
    ap.add_argument("--row-group-mib", type=int, nargs="+", default=[128],
                    help="[writer] max_row_group_mb; DuckDB gets ROW_GROUP_SIZE rows of the same size")
    ap.add_argument("--work", default=None, help="work directory (default: a temp dir, removed)")
    args = ap.parse_args()

    work = Path(args.work or tempfile.mkdtemp(prefix="sediment-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        inputs = work / "inputs"
        if not inputs.exists():
            inputs.mkdir()
            t = time.perf_counter()
            generate(inputs, args.files, args.rows)
            print(f"generated {args.files} files in {time.perf_counter() - t:.1f}s", file=sys.stderr)
        base = work / "imported"
        if base.exists():
            shutil.rmtree(base)
        imported, _ = run([str(SEDIMENT), "bench", "import", "--input-dir", str(inputs), "--data-dir", str(base)])
        files = imported["files"]
        files_json = work / "files.json"
        files_json.write_text(json.dumps(files))
        ratio = imported["stored_bytes"] / imported["bytes"]
        print(f"imported: {len(files)} segments, {imported['rows']:,} rows, "
              f"{imported['bytes'] / 2**20:.0f} MiB uncompressed, {imported['stored_bytes'] / 2**20:.0f} MiB stored",
              file=sys.stderr)
        target = args.target_mib << 20
        row_width = imported["bytes"] / imported["rows"]
        rows_out = []
        for rg_mib in args.row_group_mib:
            # Sediment also caps row groups at 32,768 rows: give DuckDB the same cap.
            rg_rows = min(1 << 15, int((rg_mib << 20) / row_width))
            for threads in args.threads:
                copy = work / f"run-{threads}"
                if copy.exists():
                    shutil.rmtree(copy)
                shutil.copytree(base, copy)
                sed, sed_rss = run([str(SEDIMENT), "bench", "compact", "--data-dir", str(copy), "--threads",
                                    str(threads), "--bytes", str(target), "--max-row-group-mb", str(rg_mib)])
                out = work / f"duckdb-{threads}"
                if out.exists():
                    shutil.rmtree(out)
                duck, duck_rss = run([sys.executable, "-c", DUCKDB_SCRIPT, str(files_json), str(out), str(threads),
                                      str(int(target * ratio)), str(rg_rows)])
                duck_files = len(list(out.glob("*.parquet"))) if out.is_dir() else 1
                rows_out.append((rg_mib, rg_rows, threads, sed, sed_rss, duck, duck_rss, duck_files))
                shutil.rmtree(copy)
        print()
        print(f"{len(files)} files, {imported['rows']:,} rows, {imported['bytes'] / 2**20:.0f} MiB uncompressed "
              f"({imported['stored_bytes'] / 2**20:.0f} MiB zstd); target {args.target_mib} MiB uncompressed")
        print()
        print("| row groups | threads | Sediment s | DuckDB s | Sediment speed vs DuckDB | Sediment peak RSS MiB | "
              "DuckDB peak RSS MiB | output files (Sediment / DuckDB) |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for rg_mib, rg_rows, threads, sed, sed_rss, duck, duck_rss, duck_files in rows_out:
            print(f"| {rg_mib} MiB / {rg_rows:,} rows | {threads} | {sed['seconds']:.2f} | {duck['seconds']:.2f} | "
                  f"{duck['seconds'] / sed['seconds']:.2f}x | {sed_rss:.0f} | {duck_rss:.0f} | "
                  f"{sed['output_files']} / {duck_files} |")
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
