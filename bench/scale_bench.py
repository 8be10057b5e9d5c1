#!/usr/bin/env python3
"""Scale (issue 17): no operation's cost grows with what it does not touch.

Tables, on embedded RocksDB and on PostgreSQL (a throwaway one started by
scripts/postgres.sh): one table, compaction off, one-block segments appended
until it has each checkpoint's number of live files (default 1k, 10k, 100k);
at each, `--samples` timed appends, 10-block scans at random places, pages of
1,000 files (in process and over HTTP) and reads of the table's state
(`sediment-bench scale-tables`). Ratios are to the figure at the first
checkpoint: the goal is append and scan at 100k within 1.5x of 1k.

Catalog, on RocksDB: a merge of a branch that differs from main in N entries
(default 100k and 1M), in a process of its own, whose peak RSS comes from
wait4 (`sediment-bench scale-merge`): the goal is memory flat in N. And a log
of `--commits` commits paged through over HTTP, 1,000 a page: the last pages
against the first (`sediment-bench scale-log`).

Usage: .venv/bin/python bench/scale_bench.py [--checkpoints 1000 10000 100000] [--samples 100]
                                             [--merge-entries 100000 1000000] [--commits 100000]
                                             [--skip-postgres]
"""
import argparse
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEDIMENT = ROOT / "build" / "sediment"
BENCH = ROOT / "build" / "sediment-bench"


def start_postgres(directory):
    out = subprocess.run([str(ROOT / "scripts" / "postgres.sh"), "start", directory], check=True,
                         capture_output=True, text=True).stdout
    env = {}
    for line in out.splitlines():
        if line.startswith("export "):
            k, v = line[len("export "):].split("=", 1)
            env[k] = v.strip("'\"")
    return env["SEDIMENT_TEST_POSTGRES_DSN"]


def run(args):
    """Runs a sediment-bench command; returns its JSON lines and its peak RSS (MiB)."""
    p = subprocess.Popen([str(BENCH), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{args}: {err}")
    return [json.loads(l) for l in out.splitlines() if l.startswith("{")], usage.ru_maxrss / 1024


def tables(work, checkpoints, samples, dsn):
    args = ["scale-tables", "--data-dir", str(work / "tables"), "--checkpoints",
            ",".join(map(str, checkpoints)), "--samples", str(samples)]
    if dsn:
        args += ["--postgres-dsn", dsn]
    rows, _ = run(args)
    shutil.rmtree(work / "tables", ignore_errors=True)
    base = rows[0]
    kv = base["kv"]
    print(f"\n## Tables on {kv}: latency (ms, p50) by live files, ratio to {base['live_files']:,} files\n")
    print("| live files | append | scan 10 blocks | files page (1,000) | files page over HTTP | table state |"
          " append ratio | scan ratio |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(f"| {r['live_files']:,} | {r['append_ms_p50']:.2f} | {r['scan10_ms_p50']:.2f} | "
              f"{r['files_page1000_ms_p50']:.2f} | {r['files_page1000_http_ms_p50']:.2f} | "
              f"{r['table_state_ms_p50']:.3f} | {r['append_ms_p50'] / base['append_ms_p50']:.2f}x | "
              f"{r['scan10_ms_p50'] / base['scan10_ms_p50']:.2f}x |")
    return rows


def merges(work, sizes):
    out = []
    for n in sizes:
        d = work / f"merge{n}"
        prep, _ = run(["scale-merge", "--prepare", "--data-dir", str(d), "--entries", str(n)])
        merged, rss = run(["scale-merge", "--data-dir", str(d), "--entries", str(n)])
        out.append({"entries": n, "prepare_s": prep[0]["seconds"], "merge_s": merged[0]["seconds"], "rss_mib": rss})
        shutil.rmtree(d, ignore_errors=True)
    print("\n## Catalog merge of a branch differing in N entries (RocksDB; peak RSS of the merging process)\n")
    print("| entries | merge (s) | peak RSS (MiB) | RSS ratio to the smallest |")
    print("| ---: | ---: | ---: | ---: |")
    for r in out:
        print(f"| {r['entries']:,} | {r['merge_s']:.2f} | {r['rss_mib']:.0f} | {r['rss_mib'] / out[0]['rss_mib']:.2f}x |")
    return out


def log(work, commits):
    rows, _ = run(["scale-log", "--data-dir", str(work / "log"), "--commits", str(commits)])
    shutil.rmtree(work / "log", ignore_errors=True)
    r = rows[0]
    print(f"\n## Log of {r['commits']:,} commits paged over HTTP, 1,000 a page (RocksDB)\n")
    print("| pages | total (s) | first tenth, p50 (ms) | last tenth, p50 (ms) | last / first |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    print(f"| {r['pages']} | {r['total_s']:.2f} | {r['page_ms_first_tenth_p50']:.1f} | "
          f"{r['page_ms_last_tenth_p50']:.1f} | {r['page_ms_last_tenth_p50'] / r['page_ms_first_tenth_p50']:.2f}x |")
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoints", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--merge-entries", type=int, nargs="+", default=[100000, 1000000])
    ap.add_argument("--commits", type=int, default=100000)
    ap.add_argument("--skip-postgres", action="store_true")
    ap.add_argument("--parts", nargs="+", default=["tables", "merge", "log"])
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sediment-scale-bench-"))
    os.chmod(work, 0o755)
    results = {}
    try:
        if "tables" in a.parts:
            results["tables_rocksdb"] = tables(work, a.checkpoints, a.samples, None)
            if not a.skip_postgres:
                dsn = start_postgres(str(work / "pg"))
                try:
                    results["tables_postgres"] = tables(work, a.checkpoints, a.samples, dsn)
                finally:
                    subprocess.run([str(ROOT / "scripts" / "postgres.sh"), "stop", str(work / "pg")], check=False)
        if "merge" in a.parts:
            results["merge"] = merges(work, a.merge_entries)
        if "log" in a.parts:
            results["log"] = log(work, a.commits)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n" + json.dumps(results))


if __name__ == "__main__":
    main()
