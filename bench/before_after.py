"""Before/after: the same benchmark commands run by two builds, alternating, on this
machine; prints each measured figure side by side with the ratio new/old (lower is faster).

    .venv/bin/python bench/before_after.py OLD_BINARY NEW_BINARY   # build/sediment-bench (or an older build/sediment) [--rounds 2] [--postgres-dsn DSN]

Measures: catalog uploads, gets, listings and commit (`sediment-bench catalog`, RocksDB and, with a
DSN, PostgreSQL) and head-of-chain appends (`sediment-bench ingest`, the job's append path with
compaction off).
"""
import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def run(binary, args):
    # `sediment-bench CMD`, or `sediment bench CMD` for builds from before it was a binary of its own.
    cmd = [binary, *args[1:]] if binary.endswith("sediment-bench") else [binary, *args]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if out.returncode != 0:
        raise RuntimeError(f"{binary} {' '.join(args)}: {out.stderr[-500:]}")
    return out.stdout


def flatten(prefix, obj, into):
    if isinstance(obj, dict):
        for k, v in obj.items():
            flatten(f"{prefix}.{k}" if prefix else k, v, into)
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        into[prefix] = float(obj)


def catalog(binary, dsn):
    d = tempfile.mkdtemp(prefix="ba-cat-")
    try:
        args = ["bench", "catalog", "--data-dir", d, "--entries", "100000", "--uploads", "3000", "--no-walk"]
        if dsn:
            args += ["--postgres-dsn", dsn]
        figures = {}
        for line in run(binary, args).splitlines():
            if line.startswith("{"):
                j = json.loads(line)
                flatten(f"{'pg' if dsn else 'rocksdb'}.{j.get('entries', '')}", j, figures)
        return figures
    finally:
        shutil.rmtree(d, ignore_errors=True)


def ingest(binary):
    d = tempfile.mkdtemp(prefix="ba-ing-")
    try:
        t0 = time.monotonic()
        out = run(binary, ["bench", "ingest", "--data-dir", d + "/data", "--segments", "400",
                           "--blocks-per-segment", "1"])
        figures = {"ingest.wall_seconds": time.monotonic() - t0}
        for line in out.splitlines():
            if line.startswith("{"):
                flatten("ingest", json.loads(line), figures)
        return figures
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--postgres-dsn")
    a = ap.parse_args()
    results = {"old": [], "new": []}
    for _ in range(a.rounds):
        for which in ("old", "new"):
            b = getattr(a, which)
            f = {}
            f.update(catalog(b, None))
            if a.postgres_dsn:
                f.update(catalog(b, a.postgres_dsn))
            f.update(ingest(b))
            results[which].append(f)
    keys = sorted(set(results["old"][0]) & set(results["new"][0]))
    print("| figure | old (median) | new (median) | new/old |")
    print("| --- | --- | --- | --- |")
    for k in keys:
        o = statistics.median(r[k] for r in results["old"] if k in r)
        n = statistics.median(r[k] for r in results["new"] if k in r)
        ratio = n / o if o else float("nan")
        print(f"| `{k}` | {o:.4g} | {n:.4g} | {ratio:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
