"""Which bloom filters pay (issue 46): the final merge of the tiny shape with each choice of
`writer.bloom_filter_columns`, its time and size, and point lookups on its output in DuckDB and DataFusion
(bloom filters on read) — a hot address (in every row group), a rare one (in a few), a hot topic0, and one
topic1 value (unique, as a transaction hash is).

Usage: .venv/bin/python bench/bloom_probe.py [--work DIR] [--threads 1] [--repeat 5]
(makes the tiny shape's 3,000 head files in DIR the first time, as bench/compaction_bench.py does)."""
import argparse
import json
import shutil
import sys
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compaction_bench as cb  # noqa: E402

CHOICES = {"none": "", "address": "address", "topic0": "topic0", "topic1": "topic1",
           "all three (today's default)": "address,topic0,topic1"}

QUERY = r"""
import json, sys
sys.path.insert(0, sys.argv[4])
from timing import median_ms
engine, path, probes, repeat = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[5])
if engine == "duckdb":
    import duckdb
    con = duckdb.connect()
    con.execute("SET threads = 2")
    q = lambda col, v: con.execute(f"SELECT count(*) FROM read_parquet('{path}') WHERE {col} = ?",
                                   [bytes.fromhex(v)]).fetchall()
else:
    from datafusion import SessionContext, SessionConfig
    ctx = SessionContext(SessionConfig().with_target_partitions(2)
                         .set("datafusion.execution.parquet.pushdown_filters", "true")
                         .set("datafusion.execution.parquet.bloom_filter_on_read", "true"))
    ctx.register_parquet("t", path)
    q = lambda col, v: ctx.sql(f"SELECT count(*) FROM t WHERE {col} = X'{v}'").collect()
print(json.dumps({name: median_ms(lambda: q(col, v), repeat) for name, (col, v) in probes.items()}))
"""


def probes_of(path):
    """Values to look up: hot and rare addresses, a hot topic0, one topic1 (from the middle row group)."""
    t = pq.read_table(path, columns=["address", "topic0", "topic1"])
    counts = pc.value_counts(t["address"]).to_pylist()
    counts.sort(key=lambda c: c["counts"])
    mid = t.num_rows // 2
    return {"address hot": ("address", counts[-1]["values"].hex()),
            "address rare": ("address", counts[0]["values"].hex()),
            "topic0 hot": ("topic0", t["topic0"][mid].as_py().hex()),
            "topic1 one": ("topic1", t["topic1"][mid].as_py().hex())}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, default=Path("/tmp/bloom-probe"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    inputs = args.work / "tiny-inputs"
    if not inputs.exists():
        inputs.mkdir()
        cb.generate(inputs, 3000, 7_500_000, 5, 1)
    base, imported = cb.import_shape(args.work, "tiny", inputs, 131072)
    rows, probes = [], None
    for label, columns in CHOICES.items():
        copy = args.work / "final"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(base, copy)
        out, rss = cb.run([cb.BENCH, "compact", "--data-dir", copy, "--threads", args.threads, "--bytes",
                           imported["bytes"], "--max-row-group-rows", 131072,
                           "--set", f"writer.bloom_filter_columns={columns}"])
        final = next(f for f in cb.sediment_live(copy) if pq.ParquetFile(f).metadata.num_rows == imported["rows"])
        probes = probes or probes_of(final)
        times = {}
        for engine in ("duckdb", "datafusion"):
            t, _ = cb.run([sys.executable, "-c", QUERY, engine, final, json.dumps(probes),
                           Path(__file__).resolve().parent, args.repeat])
            times.update({f"{engine} {k}": v for k, v in t.items()})
        rows.append((label, out["seconds"], final.stat().st_size, times))
        shutil.rmtree(copy, ignore_errors=True)
    base_s = rows[0][1]
    names = list(rows[0][3])
    print(f"Final merge of the tiny shape ({imported['rows']:,} rows), {args.threads} thread(s); lookups: median "
          f"of {args.repeat}, ms")
    print("| bloom filters on | merge s | vs none | file MiB | " + " | ".join(names) + " |")
    print("| --- | --- | --- | --- | " + " | ".join("---" for _ in names) + " |")
    for label, secs, size, times in rows:
        print(f"| {label} | {secs:.2f} | {secs / base_s:.2f}x | {size / 2**20:.0f} | "
              + " | ".join(f"{times[n]:.1f}" for n in names) + " |")


if __name__ == "__main__":
    main()
