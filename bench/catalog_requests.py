#!/usr/bin/env python3
"""What the Iceberg REST catalog costs a query, per server build (issue 46).

For each `sediment` binary given, in turn (--rounds times, so a noisy machine hits each alike), a
`sediment serve` on a copy-free data dir (compaction off) answers:
  * the catalog's routes on one keep-alive connection (Python's http.client; median of --requests):
    HEAD namespace, HEAD table, GET table (loadTable), GET config;
  * DuckDB 1.4.4 through ATTACH ... (TYPE iceberg): `SELECT * ... LIMIT 0` (the catalog's three
    requests and the table's metadata, no data) and a 100-block range; and the same two through
    iceberg_scan() of the metadata file the catalog served (no requests): the difference is what the
    catalog adds.
Prints one Markdown table of medians over the rounds.

Run with the engines' venv, on a data dir holding the table bench.logs (compaction_bench's tiny shape,
or `sediment-bench import` + `compact`):
    .venv-engines/bin/python bench/catalog_requests.py --data-dir D [--binary build/sediment ...]
"""
import argparse
import http.client
import statistics
import tempfile
import time
from pathlib import Path

import iceberg_bench
from iceberg_bench import Server, duckdb_con

ROUTES = (("HEAD", "/iceberg/v1/namespaces/bench"), ("HEAD", "/iceberg/v1/namespaces/bench/tables/logs"),
          ("GET", "/iceberg/v1/namespaces/bench/tables/logs"), ("GET", "/iceberg/v1/config"))


def route_times(server, requests):
    host, port = server.url[len("http://"):].split(":")
    token = server.session.post(server.url + "/iceberg/v1/oauth/tokens",
                                data={"grant_type": "client_credentials", "client_id": "x", "client_secret": "y"})
    headers = {"Authorization": "Bearer " + token.json()["access_token"]}
    conn = http.client.HTTPConnection(host, int(port))
    out = {}
    for method, path in ROUTES:
        times = []
        for _ in range(requests):
            t = time.perf_counter()
            conn.request(method, path, headers=headers)
            r = conn.getresponse()
            r.read()
            if r.status != 200:
                raise RuntimeError(f"{method} {path}: {r.status}")
            times.append((time.perf_counter() - t) * 1e6)
        out[f"{method} {path.split('/v1/')[1]} (µs)"] = statistics.median(times)
    conn.close()
    return out, server.session.get(server.url + "/iceberg/v1/namespaces/bench/tables/logs",
                                   headers=headers).json()["metadata-location"]


def query_times(server, metadata, lo, queries):
    con = duckdb_con(server.url, threads=2)
    sql = {"LIMIT 0": "SELECT * FROM {t} LIMIT 0",
           "range": f"SELECT count(*), sum(value) FROM {{t}} WHERE block_num BETWEEN {lo} AND {lo + 99}"}
    out = {}
    for name, q in sql.items():
        for via, table in (("catalog", "sed.bench.logs"), ("metadata file", f"iceberg_scan('{metadata}')")):
            con.execute(q.format(t=table)).fetchall()
            times = []
            for _ in range(queries):
                t = time.perf_counter()
                con.execute(q.format(t=table)).fetchall()
                times.append((time.perf_counter() - t) * 1000)
            out[f"DuckDB {name} via {via} (ms)"] = statistics.median(times)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--binary", action="append", help="a sediment binary (repeatable; default: build/sediment)")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--lo", type=int, default=5000, help="first block of the range query")
    args = ap.parse_args()
    binaries = [Path(b).resolve() for b in (args.binary or [iceberg_bench.SEDIMENT])]
    results = {b: {} for b in binaries}
    for _ in range(args.rounds):
        for binary in binaries:
            iceberg_bench.SEDIMENT = binary  # Server starts this one (its sediment-lua beside it)
            with tempfile.TemporaryDirectory(prefix="sediment-catalog-") as tmp:
                server = Server(Path(tmp), Path(args.data_dir))
                try:
                    routes, metadata = route_times(server, args.requests)
                    for k, v in {**routes, **query_times(server, metadata, args.lo, args.queries)}.items():
                        results[binary].setdefault(k, []).append(v)
                finally:
                    server.stop()
    names = list(results[binaries[0]])
    print("| measure | " + " | ".join(str(b) for b in binaries) + " |")
    print("| --- |" + " --- |" * len(binaries))
    for n in names:
        print(f"| {n} | " + " | ".join(f"{statistics.median(results[b][n]):.2f}" for b in binaries) + " |")


if __name__ == "__main__":
    main()
