#!/usr/bin/env python3
"""Queries through Iceberg catalogs (issue 46): Sediment's table, served by its Iceberg REST catalog,
against DuckDB's own compaction of the same rows registered in a local catalog, read by the same engine
through the same kind of catalog.

compaction_bench.py runs it (with --iceberg) on the tiny shape's final merge:
  * Sediment: `sediment serve` on the final merge's data dir (compaction off), the table `bench.logs`
    through /iceberg (DuckDB ATTACH ... TYPE iceberg; PyIceberg's REST catalog);
  * the peer: DuckDB's `COPY` output (block_num cast to BIGINT: Iceberg has no unsigned types; Sediment
    stores it as a signed 64-bit integer too) added to a PyIceberg SQL catalog (SQLite), read by DuckDB's
    iceberg_scan of its metadata and by PyIceberg's scan.
  * the peer again, through Iceberg's reference REST catalog (RESTCatalogAdapter behind Jetty over a JDBC catalog
    on SQLite; bench/iceberg_rest_fixture/, needs Maven and a JDK): the same kind of catalog as Sediment's, so
    what a REST catalog costs a query is on both sides.
Each query (the bench's block range, `address =`, `topic0 =`, `topic0 =` within 5,000 blocks, and the
full-scan aggregate) loads the table and reads through the catalog every time; median of --repeat runs.

Run with the engines' venv (DuckDB 1.4.4 with its iceberg extension, PyIceberg):
    .venv-engines/bin/python bench/iceberg_query_probe.py --data-dir D --duck-file F --lo N --addr HEX \
        --topic HEX --sediment-file P [--repeat 9]
Prints one JSON object: {engine: {query: {pair: [sediment ms, peer ms]}}}, engine "duckdb" or "pyiceberg";
pairs: "catalogs" (Sediment's REST catalog; the peer's metadata file in DuckDB, its SQL catalog in PyIceberg),
"rest" (both through REST catalogs: the peer in the reference one), and in DuckDB "direct" (both files read
directly) and "metadata" (both through their metadata files, iceberg_scan). DuckDB's ATTACH makes three catalog requests per query (HEAD namespace,
HEAD table, GET table); the metadata-file pair shows the files through Iceberg without them.
"""
import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow.compute as pc

from iceberg_bench import Server, duckdb_con

QUERIES = ("range", "address", "topic0", "topic0_range", "aggregate")


def peer_table(duck_file, work):
    """DuckDB's file, block_num as BIGINT, in a PyIceberg SQL catalog; returns (table, metadata path)."""
    import duckdb
    from pyiceberg.catalog.sql import SqlCatalog
    data = work / "peer-data"
    data.mkdir()
    path = data / "peer.parquet"
    con = duckdb.connect()
    con.execute("SET threads = 2")
    con.execute("SET preserve_insertion_order = true")
    con.execute(f"COPY (SELECT * REPLACE (CAST(block_num AS BIGINT) AS block_num) FROM read_parquet('{duck_file}')) "
                f"TO '{path}' (FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 1, ROW_GROUP_SIZE 131072)")
    import pyarrow.parquet as pq
    catalog = SqlCatalog("peer", uri=f"sqlite:///{work}/peer.db", warehouse=f"file://{work}/peer-warehouse")
    catalog.create_namespace("bench")
    table = catalog.create_table("bench.logs", schema=pq.read_schema(path))
    table.add_files([str(path)])
    table = catalog.load_table("bench.logs")
    return catalog, table.metadata_location, path


def java_peer(work, peer_file):
    """The peer's file in Iceberg's reference REST catalog; returns (url, process, PyIceberg catalog)."""
    import pyarrow.parquet as pq
    from pyiceberg.catalog.rest import RestCatalog
    from iceberg_repos_bench import java_rest_server
    url, proc = java_rest_server(work, f"jdbc:sqlite:{work}/java-catalog.db", warehouse=str(work / "java-warehouse"))
    catalog = RestCatalog("java", uri=url)
    catalog.create_namespace("bench")
    catalog.create_table("bench.logs", schema=pq.read_schema(peer_file)).add_files([str(peer_file)])
    return url, proc, catalog


def sediment_metadata(url):
    """The metadata file Sediment's catalog serves for bench.logs now."""
    import requests
    token = requests.post(f"{url}/iceberg/v1/oauth/tokens", data={"grant_type": "client_credentials",
                                                                  "client_id": "x", "client_secret": "y"})
    r = requests.get(f"{url}/iceberg/v1/namespaces/bench/tables/logs",
                     headers={"Authorization": "Bearer " + token.json()["access_token"]})
    r.raise_for_status()
    return r.json()["metadata-location"]


def duckdb_times(url, java_url, peer_metadata, sediment_file, peer_file, lo, addr, topic, repeat):
    con = duckdb_con(url, threads=2)
    con.execute(f"CREATE SECRET j (TYPE iceberg, CLIENT_ID 'x', CLIENT_SECRET 'y', "
                f"OAUTH2_SERVER_URI '{java_url}/v1/oauth/tokens')")
    con.execute(f"ATTACH 'java' AS jav (TYPE iceberg, SECRET j, ENDPOINT '{java_url}', READ_ONLY)")
    agg = "count(*), sum(value)"
    sql = {"range": f"SELECT {agg} FROM {{t}} WHERE block_num BETWEEN {lo} AND {lo + 99}",
           "address": f"SELECT {agg} FROM {{t}} WHERE address = from_hex('{addr}')",
           "topic0": f"SELECT {agg} FROM {{t}} WHERE topic0 = from_hex('{topic}')",
           "topic0_range": f"SELECT {agg} FROM {{t}} WHERE topic0 = from_hex('{topic}') "
                           f"AND block_num BETWEEN {lo} AND {lo + 4999}",
           "aggregate": f"SELECT address, {agg} FROM {{t}} GROUP BY address ORDER BY 2 DESC, 1 LIMIT 10"}
    tables = {"sediment": "sed.bench.logs", "peer": f"iceberg_scan('{peer_metadata}')"}
    # The same files read directly, in the same process: what the catalogs add, apart from the files.
    direct = {"sediment": f"read_parquet('{sediment_file}')", "peer": f"read_parquet('{peer_file}')"}
    # Both tables through their metadata files (the peer's path): the files through Iceberg, without
    # the REST catalog's requests.
    by_metadata = {"sediment": f"iceberg_scan('{sediment_metadata(url)}')", "peer": tables["peer"]}
    # Both tables through REST catalogs: Sediment's, and the peer in Iceberg's reference one.
    by_rest = {"sediment": tables["sediment"], "peer": "jav.bench.logs"}
    out = {}
    for q in QUERIES:
        results = {name: con.execute(sql[q].format(t=t)).fetchall()
                   for name, t in (*tables.items(), ("java", by_rest["peer"]))}
        if not results["sediment"] == results["peer"] == results["java"]:
            raise RuntimeError(f"duckdb {q}: the tables disagree: {results}")
        out[q] = {pair: alternate({name: (lambda t=t: con.execute(sql[q].format(t=t)).fetchall())
                                   for name, t in pair_tables.items()}, repeat)
                  for pair, pair_tables in (("catalogs", tables), ("direct", direct), ("metadata", by_metadata),
                                            ("rest", by_rest))}
    return out


def pyiceberg_times(url, peer_catalog, java_catalog, lo, addr, topic, repeat):
    from pyiceberg.catalog import load_catalog
    from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, LessThanOrEqual
    catalogs = {"sediment": load_catalog("sed", type="rest", uri=f"{url}/iceberg", credential="x:y"),
                "peer": peer_catalog}
    addr, topic = bytes.fromhex(addr), bytes.fromhex(topic)
    between = lambda a, b: And(GreaterThanOrEqual("block_num", a), LessThanOrEqual("block_num", b))
    filters = {"range": between(lo, lo + 99), "address": EqualTo("address", addr),
               "topic0": EqualTo("topic0", topic), "topic0_range": And(EqualTo("topic0", topic), between(lo, lo + 4999))}

    def run(catalog, q):
        table = catalog.load_table("bench.logs")
        if q == "aggregate":
            data = table.scan(selected_fields=("address", "value")).to_arrow()
            g = data.group_by("address").aggregate([("value", "count"), ("value", "sum")])
            return sorted(g.to_pylist(), key=lambda r: (-r["value_count"], r["address"]))[:10]
        data = table.scan(row_filter=filters[q], selected_fields=("value",)).to_arrow()
        return data.num_rows, pc.sum(data["value"]).as_py()

    out = {}
    for q in QUERIES:
        results = {name: run(c, q) for name, c in (*catalogs.items(), ("java", java_catalog))}
        if not results["sediment"] == results["peer"] == results["java"]:
            raise RuntimeError(f"pyiceberg {q}: the tables disagree")
        out[q] = {"catalogs": alternate({name: (lambda c=c: run(c, q)) for name, c in catalogs.items()}, repeat),
                  "rest": alternate({"sediment": lambda: run(catalogs["sediment"], q),
                                     "peer": lambda: run(java_catalog, q)}, repeat)}
    return out


def alternate(fns, repeat):
    """Median ms of each function, the two run in turn."""
    times = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - t) * 1000)
    return [statistics.median(times["sediment"]), statistics.median(times["peer"])]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--duck-file", required=True)
    ap.add_argument("--sediment-file", required=True, help="the table's live file, read directly beside the catalog")
    ap.add_argument("--lo", type=int, required=True)
    ap.add_argument("--addr", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--repeat", type=int, default=9)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sediment-iceberg-probe-") as tmp:
        work = Path(tmp)
        server = Server(work, args.data_dir)  # compaction off: the final file stays as it is
        url = server.url
        java = None
        try:
            catalog, metadata, peer_file = peer_table(args.duck_file, work)
            java_url, java, java_catalog = java_peer(work, peer_file)
            out = {"duckdb": duckdb_times(url, java_url, metadata, args.sediment_file, peer_file, args.lo, args.addr,
                                          args.topic, args.repeat),
                   "pyiceberg": pyiceberg_times(url, catalog, java_catalog, args.lo, args.addr, args.topic,
                                                args.repeat)}
        finally:
            server.stop()
            if java:
                java.kill()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
