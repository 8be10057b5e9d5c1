#!/usr/bin/env python3
"""The bench's five queries in Spark (issue 46): Sediment's final file against DuckDB's `COPY` of the same
rows, both read directly with `spark.read.parquet` by one local Spark session (PySpark from .venv-engines,
`local[2]`, the JRE scripts/install-test.sh installs).

compaction_bench.py runs it with --spark. The files alternate run by run within each query (each first in
turn), so the machine's drift falls on both alike. Spark reads DuckDB's UINT64 `block_num` as
DECIMAL(20,0) and Sediment's (stored as a signed 64-bit integer, docs/formats.md) as BIGINT; the
queries compare it with integer literals either way, as a user would write them.

    .venv-engines/bin/python bench/spark_query_probe.py --lo N --addr HEX --topic HEX [--repeat 9] FILE...
Prints one JSON list: per file, {query: median ms}.
"""
import argparse
import json
import os
import statistics
import time

QUERIES = ("range", "address", "topic0", "topic0_range", "aggregate")


def sql_for(view, lo, addr, topic):
    """The bench's queries (as compaction_bench.py's QUERY_SCRIPT words them) over one view."""
    agg = f"SELECT count(*), sum(value) FROM {view} WHERE"
    return {"range": f"{agg} block_num BETWEEN {lo} AND {lo + 99}",
            "address": f"{agg} address = X'{addr}'",
            "topic0": f"{agg} topic0 = X'{topic}'",
            "topic0_range": f"{agg} topic0 = X'{topic}' AND block_num BETWEEN {lo} AND {lo + 4999}",
            "aggregate": f"SELECT address, count(*), sum(value) FROM {view} GROUP BY address "
                         "ORDER BY 2 DESC LIMIT 10"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lo", type=int, required=True, help="first block of the ranges")
    ap.add_argument("--addr", required=True, help="an address, hex")
    ap.add_argument("--topic", required=True, help="a topic0, hex")
    ap.add_argument("--repeat", type=int, default=9, help="runs of each query on each file")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # loopback only, and no warning about it
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").appName("sediment-spark-query-probe")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.memory", "4g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        per_file = []
        for i, path in enumerate(args.files):
            spark.read.parquet(path).createOrReplaceTempView(f"f{i}")
            per_file.append(sql_for(f"f{i}", args.lo, args.addr, args.topic))
        out = [{} for _ in args.files]
        for q in QUERIES:
            # Every file answers alike (the same rows), and a first run each warms the JVM's code.
            answers = [[tuple(r) for r in spark.sql(sqls[q]).collect()] for sqls in per_file]
            if any(a != answers[0] for a in answers):
                raise SystemExit(f"{q}: the files answer differently: {answers}")
            times = [[] for _ in args.files]
            for r in range(args.repeat):
                for i in [(r + k) % len(args.files) for k in range(len(args.files))]:
                    t = time.perf_counter()
                    spark.sql(per_file[i][q]).collect()
                    times[i].append((time.perf_counter() - t) * 1000)
            for i, ts in enumerate(times):
                out[i][q] = statistics.median(ts)
        print(json.dumps(out))
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
