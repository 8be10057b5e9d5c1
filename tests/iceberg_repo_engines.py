"""Runs steps against the repositories' Iceberg catalog (/iceberg/api, docs/iceberg-repositories.md) with
PyIceberg or DuckDB, and prints each step's outcome as JSON. Run with .venv-engines/bin/python:
`iceberg_repo_engines.py '<request json>'` (tests/test_iceberg_repos.py calls it as a subprocess).

Request: {"catalog": {PyIceberg RestCatalog properties}, "steps": [[name, args...], ...]}
Steps (each answers {"ok": value} or {"error": exception class name, "message": ...}):
  ["create_namespace", [parts]]                  -> null
  ["list_namespaces", [parts]]                   -> [[parts], ...]
  ["create_table", "a.b.c.t", {col: type}]       -> {"location", "metadata_location"}   (type: long|string)
  ["append", "a.b.c.t", {"id": [...], ...}]      -> snapshot id
  ["add_column", "a.b.c.t", name, type]          -> null
  ["read", "a.b.c.t"]                            -> rows sorted by id
  ["load", "a.b.c.t"]                            -> {"snapshot_id", "metadata_location", "location", "io": {keys}}
  ["drop_table", "a.b.c.t"], ["rename_table", from, to], ["list_tables", [parts]]
  ["appends", "a.b.c.t", writers, rows_each]     -> {"retries": n} (writers append at once; a 409 reloads, retries)
  ["duckdb", endpoint, [sql...]]                 -> [[rows], ...] (DuckDB 1.4.4 attached to `endpoint` as `lake`)
  ["spark", [jars], [sql...]]                    -> [[rows], ...] (PySpark local, Iceberg's runtime; catalog `sed`)
  ["spark_writers", [jars], table, writers, n]   -> [[count, distinct ids]] after each writer inserted n rows at once
"""
import glob
import json
import site
import sys
import threading

import pyarrow as pa

TYPES = {"long": pa.int64(), "string": pa.string()}


def arrow(cols):
    return pa.table({k: pa.array(v, TYPES["string"] if v and isinstance(v[0], str) else TYPES["long"])
                     for k, v in cols.items()})


def schema_of(cols):
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType
    kinds = {"long": LongType(), "string": StringType()}
    return Schema(*[NestedField(i + 1, n, kinds[t], required=False) for i, (n, t) in enumerate(cols.items())])


def appends(catalog, ident, writers, rows_each):
    from pyiceberg.exceptions import CommitFailedException
    retries = [0]
    lock = threading.Lock()
    errors = []

    barrier = threading.Barrier(writers)

    def writer(w):
        try:
            for i in range(rows_each):
                data = arrow({"id": [w * 1000 + i]})
                table = catalog.load_table(ident)
                if i == 0:
                    barrier.wait()  # the first appends all start from one state: all but one must retry
                while True:
                    try:
                        table.append(data)
                        break
                    except CommitFailedException:
                        with lock:
                            retries[0] += 1
                        table = catalog.load_table(ident)
        except Exception as e:  # noqa: BLE001 - reported to the test
            errors.append(repr(e))

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError("; ".join(errors))
    return {"retries": retries[0]}


def duckdb_steps(props, endpoint, sql):
    import duckdb
    con = duckdb.connect()
    root = site.getsitepackages()[0]
    for name in ("httpfs", "avro", "iceberg"):
        con.execute(f"LOAD '{glob.glob(f'{root}/duckdb_ext/extensions/*/*/{name}.duckdb_extension')[0]}'")
    key, _, secret = props["credential"].partition(":")
    con.execute(f"CREATE SECRET lake_secret (TYPE iceberg, CLIENT_ID '{key}', CLIENT_SECRET '{secret}', "
                f"OAUTH2_SERVER_URI '{props['oauth2-server-uri']}')")
    s3 = {k: v for k, v in props.items() if k.startswith("s3.")}
    if s3:
        con.execute(f"CREATE SECRET lake_s3 (TYPE s3, KEY_ID '{s3['s3.access-key-id']}', "
                    f"SECRET '{s3['s3.secret-access-key']}', ENDPOINT '{s3['s3.endpoint'].split('://')[-1]}', "
                    f"URL_STYLE 'path', USE_SSL false, REGION 'us-east-1')")
    con.execute(f"ATTACH '' AS lake (TYPE iceberg, SECRET lake_secret, ENDPOINT '{endpoint}')")
    return [[list(r) for r in con.execute(q).fetchall()] for q in sql]


def spark_session(props, jars):
    from pyspark.sql import SparkSession
    b = (SparkSession.builder.master("local[2]").appName("sediment-iceberg-repos")
         .config("spark.jars", ",".join(jars))
         .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
         .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
         .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
         .config("spark.sql.catalog.sed", "org.apache.iceberg.spark.SparkCatalog")
         .config("spark.sql.catalog.sed.type", "rest"))
    for key in ("uri", "credential", "oauth2-server-uri", "prefix"):
        b = b.config(f"spark.sql.catalog.sed.{key}", props[key])
    # Each writer sees the table as the catalog has it (no cached copy between statements).
    return b.config("spark.sql.catalog.sed.cache-enabled", "false").getOrCreate()


def spark_steps(props, jars, sql):
    spark = spark_session(props, jars)
    try:
        return [[list(r) for r in spark.sql(q).collect()] for q in sql]
    finally:
        spark.stop()


def spark_writers(props, jars, table, writers, each):
    """`writers` threads of one Spark session, each inserting `each` rows one statement at a time."""
    spark = spark_session(props, jars)
    errors = []

    def write(w):
        try:
            for i in range(each):
                spark.sql(f"INSERT INTO {table} VALUES ({w * 1000 + i}, 'w{w}')")
        except Exception as e:  # noqa: BLE001 - reported to the test
            errors.append(str(e)[:500])
    try:
        threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise RuntimeError("; ".join(errors))
        return [list(r) for r in spark.sql(f"SELECT count(*), count(DISTINCT id) FROM {table}").collect()]
    finally:
        spark.stop()


def step(catalog, props, name, *args):
    if name == "create_namespace":
        return catalog.create_namespace(tuple(args[0]))
    if name == "list_namespaces":
        return [list(n) for n in catalog.list_namespaces(tuple(args[0]))]
    if name == "list_tables":
        return [list(n) for n in catalog.list_tables(tuple(args[0]))]
    if name == "create_table":
        t = catalog.create_table(args[0], schema=schema_of(args[1]))
        return {"location": t.location(), "metadata_location": t.metadata_location}
    if name == "append":
        t = catalog.load_table(args[0])
        t.append(arrow(args[1]))
        return catalog.load_table(args[0]).current_snapshot().snapshot_id
    if name == "add_column":
        from pyiceberg.types import LongType, StringType
        with catalog.load_table(args[0]).update_schema() as u:
            u.add_column(args[1], {"long": LongType(), "string": StringType()}[args[2]])
        return None
    if name == "read":
        rows = catalog.load_table(args[0]).scan().to_arrow().to_pylist()
        return sorted(rows, key=lambda r: r.get("id") or 0)
    if name == "load":
        t = catalog.load_table(args[0])
        snap = t.current_snapshot()
        return {"snapshot_id": snap.snapshot_id if snap else None, "metadata_location": t.metadata_location,
                "location": t.location(), "io": sorted(t.io.properties)}
    if name == "drop_table":
        return catalog.drop_table(args[0])
    if name == "rename_table":
        catalog.rename_table(args[0], args[1])
        return None
    if name == "appends":
        return appends(catalog, *args)
    if name == "duckdb":
        return duckdb_steps(props, *args)
    if name == "spark":
        return spark_steps(props, *args)
    if name == "spark_writers":
        return spark_writers(props, *args)
    raise ValueError(f"unknown step {name}")


def main():
    req = json.loads(sys.argv[1])
    from pyiceberg.catalog.rest import RestCatalog
    catalog = RestCatalog(name="lake", **req["catalog"])
    out = []
    for s in req["steps"]:
        try:
            out.append({"ok": step(catalog, req["catalog"], *s)})
        except Exception as e:  # noqa: BLE001 - each step's outcome is the test's to judge
            # Java's stack frames say little: the exceptions' own lines are what a test reports.
            text = "\n".join(line for line in str(e).splitlines() if not line.lstrip().startswith("at "))
            out.append({"error": type(e).__name__, "message": text[:2000]})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
