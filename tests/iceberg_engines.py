"""Runs one read through an engine attached to Sediment's Iceberg REST catalog and prints the result as
JSON. Run with .venv-engines/bin/python (DuckDB 1.4.4 with its iceberg extension, PyIceberg), which the
tests call as a subprocess: `iceberg_engines.py '<request json>'`.

Requests:
  {"engine": "pyiceberg", "uri": ..., "credential": "key:secret"|null, "table": "demo.blocks",
   "columns": [...], "filter": "block_num >= 3"|null, "snapshot_id": id|null, "as_of_ms": ms|null}
    -> {"snapshot_id", "columns": {name: [values]}, "files": n (files planned), "summary": {...},
        "snapshots": [{"snapshot_id", "timestamp_ms", "operation"}]}
  {"engine": "duckdb", "uri": ..., "credential": ..., "sql": ["SELECT ... FROM sed.demo.blocks", ...]}
    -> {"results": [[row, ...], ...]} (the catalog is attached as `sed`, read-only; nothing is downloaded)
  {"engine": "spark", "uri": ..., "credential": ..., "jars": [paths], "sql": [...]}
    -> {"results": [[row, ...], ...]} (PySpark in local mode, Iceberg's Spark runtime from the given jars,
       the catalog as `sed`; on loopback, no UI)
"""
import glob
import json
import site
import sys


def pyiceberg(req):
    from pyiceberg.catalog import load_catalog
    props = {"type": "rest", "uri": req["uri"]}
    if req.get("credential"):
        props["credential"] = req["credential"]
    table = load_catalog("sed", **props).load_table(req["table"])
    snapshot_id = req.get("snapshot_id")
    if req.get("as_of_ms") is not None:
        snapshot_id = table.snapshot_as_of_timestamp(req["as_of_ms"]).snapshot_id
    kw = {"selected_fields": tuple(req.get("columns") or ["*"])}
    if req.get("filter"):
        kw["row_filter"] = req["filter"]
    if snapshot_id is not None:
        kw["snapshot_id"] = snapshot_id
    scan = table.scan(**kw)
    files = len(list(scan.plan_files()))
    data = scan.to_arrow()
    snap = table.snapshot_by_id(snapshot_id) if snapshot_id is not None else table.current_snapshot()
    return {"snapshot_id": snap.snapshot_id if snap else None,
            "columns": {n: [v if not isinstance(v, bytes) else v.hex() for v in data[n].to_pylist()]
                        for n in data.column_names},
            "files": files,
            "summary": dict(snap.summary.additional_properties, operation=snap.summary.operation.value) if snap else {},
            "snapshots": [{"snapshot_id": s.snapshot_id, "timestamp_ms": s.timestamp_ms,
                           "operation": s.summary.operation.value} for s in table.snapshots()]}


def duckdb_read(req):
    import duckdb
    con = duckdb.connect()
    root = site.getsitepackages()[0]
    for name in ("httpfs", "avro", "iceberg"):
        path = glob.glob(f"{root}/duckdb_ext/extensions/*/*/{name}.duckdb_extension")[0]
        con.execute(f"LOAD '{path}'")
    key, _, secret = (req.get("credential") or "anonymous:anonymous").partition(":")
    con.execute(f"CREATE SECRET sed_secret (TYPE iceberg, CLIENT_ID '{key}', CLIENT_SECRET '{secret}', "
                f"OAUTH2_SERVER_URI '{req['uri']}/v1/oauth/tokens')")
    con.execute(f"ATTACH 'sediment' AS sed (TYPE iceberg, SECRET sed_secret, ENDPOINT '{req['uri']}', READ_ONLY)")
    for stmt in req.get("setup", []):
        con.execute(stmt)
    return {"results": [[list(r) for r in con.execute(q).fetchall()] for q in req["sql"]]}


def spark_read(req):
    from pyspark.sql import SparkSession
    b = (SparkSession.builder.master("local[2]").appName("sediment-iceberg-test")
         .config("spark.jars", ",".join(req["jars"]))
         .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
         .config("spark.sql.catalog.sed", "org.apache.iceberg.spark.SparkCatalog")
         .config("spark.sql.catalog.sed.type", "rest")
         .config("spark.sql.catalog.sed.uri", req["uri"]))
    if req.get("credential"):
        b = b.config("spark.sql.catalog.sed.credential", req["credential"])
    spark = b.getOrCreate()
    try:
        return {"results": [[list(r) for r in spark.sql(q).collect()] for q in req["sql"]]}
    finally:
        spark.stop()


def main():
    req = json.loads(sys.argv[1])
    run = {"pyiceberg": pyiceberg, "duckdb": duckdb_read, "spark": spark_read}[req["engine"]]
    out = run(req)
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
