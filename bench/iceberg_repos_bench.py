#!/usr/bin/env python3
"""Iceberg tables in repositories (issue 44): what a catalog operation costs, against the catalogs engines use.

Three catalogs, each driven by the same client (PyIceberg 0.12) in one run:
  * sediment   - /iceberg/api of a real `sediment serve` (tables on a branch of a repository, local storage);
  * java-rest  - Apache Iceberg's reference REST catalog (RESTCatalogAdapter behind Jetty, what the
                 iceberg-rest-fixture image serves; bench/iceberg_rest_fixture/) over a JDBC catalog on PostgreSQL;
  * pyiceberg-sql - PyIceberg's SQL catalog on PostgreSQL (no server: the client commits in SQL).
Figures, as medians over `--samples` calls:
  * loadTable and an append's commit (the catalog call alone: PyIceberg's commit_table, timed around it)
    with 1, 100 and `--tables` tables in the namespace, and on one table with `--history` snapshots;
  * 8 writers appending to one table at once: appends per second and the commits refused (409) and retried;
  * sediment only: creating a branch from a commit holding 1 table and one holding `--tables` tables.
Ratios are peer / sediment (above 1: sediment is faster).

Needs PostgreSQL (scripts/postgres.sh; SEDIMENT_TEST_POSTGRES_DSN), Maven and a JDK (the first run resolves the
reference server's class path into .cache/iceberg-rest-fixture from Maven Central).
    .venv-engines/bin/python bench/iceberg_repos_bench.py [--tables 10000] [--history 1000] [--samples 30]
"""
import argparse
import logging
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pyarrow as pa
import requests
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField

ROOT = Path(__file__).resolve().parent.parent
SEDIMENT = ROOT / "build" / "sediment"
FIXTURE = ROOT / ".cache" / "iceberg-rest-fixture"
ADMIN = ("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
SCHEMA = Schema(NestedField(1, "id", LongType(), required=False))
ROW = pa.table({"id": pa.array([1], pa.int64())})


class Timed:
    """Times (and counts refusals of) a catalog's commit_table."""

    def __init__(self, catalog):
        self.catalog, self.times, self.refused = catalog, [], 0
        inner = catalog.commit_table

        def commit_table(*a, **kw):
            t = time.perf_counter()
            try:
                return inner(*a, **kw)
            except CommitFailedException:
                self.refused += 1
                raise
            finally:
                self.times.append(time.perf_counter() - t)
        catalog.commit_table = commit_table


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def pg_params():
    dsn = os.environ.get("SEDIMENT_TEST_POSTGRES_DSN")
    if not dsn:
        raise SystemExit("no PostgreSQL: eval \"$(scripts/postgres.sh start DIR)\" first")
    return dict(kv.split("=", 1) for kv in dsn.split())


def fresh_database(pg):
    import psycopg2
    name = "bench_" + uuid.uuid4().hex[:10]
    con = psycopg2.connect(host=pg["host"], port=pg["port"], user=pg["user"], dbname=pg.get("dbname", "postgres"))
    con.autocommit = True
    con.cursor().execute(f"CREATE DATABASE {name}")
    con.close()
    return name


class Peer:
    def __init__(self, name, make_catalog, ns, stop):
        self.name, self.make_catalog, self.ns, self.stop = name, make_catalog, ns, stop


def start_sediment(work):
    cfg = work / "sediment.toml"
    cfg.write_text(f'[catalog]\nlocal_namespace_roots = ["{work}"]\n[log]\nlevel = "warn"\n')
    port = free_port()
    proc = subprocess.Popen([str(SEDIMENT), "serve", "--listen", f"127.0.0.1:{port}", "--config", str(cfg),
                             "--data-dir", str(work / "data")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            if requests.get(url + "/api/v1/healthcheck", timeout=1).status_code == 204:
                break
        except requests.ConnectionError:
            time.sleep(0.05)
    requests.post(url + "/api/v1/setup_lakefs", json={"username": "admin", "key": {
        "access_key_id": ADMIN[0], "secret_access_key": ADMIN[1]}}, timeout=30).raise_for_status()
    requests.post(url + "/api/v1/repositories", auth=ADMIN, timeout=30, json={
        "name": "bench", "storage_namespace": f"local://{work}/ns", "default_branch": "main"}).raise_for_status()

    def make():
        from pyiceberg.catalog.rest import RestCatalog
        return RestCatalog("sediment", uri=url + "/iceberg/api", prefix="lakefs", credential=f"{ADMIN[0]}:{ADMIN[1]}",
                           **{"oauth2-server-uri": url + "/iceberg/api/v1/oauth/tokens"})
    peer = Peer("sediment", make, ("bench", "main", "ns"), lambda: proc.kill())
    peer.url = url
    return peer


def java_rest_server(work, jdbc_uri, jdbc_user=None, warehouse=None):
    """Iceberg's reference REST catalog over a JDBC catalog at `jdbc_uri`, on a free loopback port; returns
    (url, process). The first call resolves its class path into FIXTURE from Maven Central."""
    if not (FIXTURE.exists() and list(FIXTURE.glob("sqlite-jdbc-*.jar"))):
        subprocess.run(["mvn", "-q", "-f", str(ROOT / "bench" / "iceberg_rest_fixture" / "pom.xml"),
                        "dependency:copy-dependencies", f"-DoutputDirectory={FIXTURE}"], check=True)
    classes = work / "java"
    classes.mkdir(exist_ok=True)
    src = ROOT / "bench" / "iceberg_rest_fixture" / "LoopbackRestServer.java"
    subprocess.run(["javac", "-d", str(classes), "-cp", f"{FIXTURE}/*", str(src)], check=True)
    port = free_port()
    env = dict(os.environ, REST_PORT=str(port), CATALOG_CATALOG__IMPL="org.apache.iceberg.jdbc.JdbcCatalog",
               CATALOG_URI=jdbc_uri, CATALOG_WAREHOUSE=warehouse or f"file://{work}/java-warehouse")
    if jdbc_user:
        env["CATALOG_JDBC_USER"] = jdbc_user
    proc = subprocess.Popen(["java", "-cp", f"{classes}:{FIXTURE}/*", "LoopbackRestServer"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            requests.get(url + "/v1/config", timeout=1)
            return url, proc
        except requests.ConnectionError:
            if proc.poll() is not None:
                raise RuntimeError("Iceberg's REST catalog server exited at start")
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("Iceberg's REST catalog server did not answer within 60 s")


def start_java(work, pg):
    url, proc = java_rest_server(work, f"jdbc:postgresql://{pg['host']}:{pg['port']}/{fresh_database(pg)}",
                                 pg["user"])

    def make():
        from pyiceberg.catalog.rest import RestCatalog
        return RestCatalog("java", uri=url)
    return Peer("java-rest", make, ("ns",), lambda: proc.kill())


def start_sql(work, pg):
    uri = f"postgresql+psycopg2://{pg['user']}@{pg['host']}:{pg['port']}/{fresh_database(pg)}"

    def make():
        from pyiceberg.catalog.sql import SqlCatalog
        return SqlCatalog("sql", uri=uri, warehouse=f"file://{work}/sql-warehouse")
    return Peer("pyiceberg-sql", make, ("ns",), lambda: None)


def median_ms(xs):
    return statistics.median(xs) * 1000


def measure(peer, catalog, ident, samples):
    """Medians (ms) of loadTable and of an append's commit on `ident`."""
    loads = []
    for _ in range(samples):
        t = time.perf_counter()
        catalog.load_table(ident)
        loads.append(time.perf_counter() - t)
    timed = Timed(catalog)
    for _ in range(samples):
        catalog.load_table(ident).append(ROW)
    return median_ms(loads), median_ms(timed.times[-samples:])


def writers(peer, ident, n=8, each=10):
    catalogs = [peer.make_catalog() for _ in range(n)]
    timed = [Timed(c) for c in catalogs]
    start = threading.Barrier(n)

    def write(c):
        start.wait()
        for _ in range(each):
            c.load_table(ident).append(ROW)
    threads = [threading.Thread(target=write, args=(c,)) for c in catalogs]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return n * each / (time.perf_counter() - t), sum(x.refused for x in timed)


def run_peer(peer, args, out):
    catalog = peer.make_catalog()
    catalog.create_namespace(peer.ns)
    made = 0
    for count in (1, 100, args.tables):
        t = time.perf_counter()
        while made < count:
            catalog.create_table(peer.ns + (f"t{made:05d}",), schema=SCHEMA)
            made += 1
        create_s = time.perf_counter() - t
        load, commit = measure(peer, catalog, peer.ns + ("t00000",), args.samples)
        out[(peer.name, f"loadTable, {count} tables")] = load
        out[(peer.name, f"append commit, {count} tables")] = commit
        print(f"  {peer.name}: {count} tables (made in {create_s:.1f} s): load {load:.2f} ms, commit {commit:.2f} ms",
              flush=True)
    hist = peer.ns + ("history",)
    catalog.create_table(hist, schema=SCHEMA)
    for _ in range(args.history):
        catalog.load_table(hist).append(ROW)
    load, commit = measure(peer, catalog, hist, args.samples)
    out[(peer.name, f"loadTable, {args.history} snapshots")] = load
    out[(peer.name, f"append commit, {args.history} snapshots")] = commit
    conc = peer.ns + ("concurrent",)
    catalog.create_table(conc, schema=SCHEMA)
    rate, refused = writers(peer, conc)
    out[(peer.name, "8 writers: appends/s")] = rate
    out[(peer.name, "8 writers: commits refused (409)")] = refused
    print(f"  {peer.name}: history {args.history}: load {load:.2f} ms, commit {commit:.2f} ms; "
          f"8 writers {rate:.1f} appends/s, {refused} refused", flush=True)


def branch_creation(peer, args, out):
    """Sediment: a branch from a commit with 1 table and from one with --tables tables (the pointers are ordinary
    objects: a branch copies nothing)."""
    api = peer.url + "/api/v1/repositories/bench"
    requests.post(api + "/branches/main/commits", json={"message": "tables"}, auth=ADMIN, timeout=600).raise_for_status()
    small = start_branch_repo(peer, "small")
    for label, repo in (("1 table", small), (f"{args.tables} tables", "bench")):
        times = []
        for i in range(args.samples):
            t = time.perf_counter()
            requests.post(peer.url + f"/api/v1/repositories/{repo}/branches", auth=ADMIN, timeout=60,
                          json={"name": f"b{i}", "source": "main"}).raise_for_status()
            times.append(time.perf_counter() - t)
        out[("sediment", f"create branch, {label}")] = median_ms(times)


def start_branch_repo(peer, name):
    ns = re.sub(r"/ns$", "", requests.get(peer.url + "/api/v1/repositories/bench", auth=ADMIN, timeout=30)
                .json()["storage_namespace"]) + "/ns-" + name
    requests.post(peer.url + "/api/v1/repositories", auth=ADMIN, timeout=30, json={
        "name": name, "storage_namespace": ns, "default_branch": "main"}).raise_for_status()
    c = peer.make_catalog()
    c.create_namespace((name, "main", "ns"))
    c.create_table((name, "main", "ns", "t"), schema=SCHEMA)
    requests.post(peer.url + f"/api/v1/repositories/{name}/branches/main/commits", json={"message": "one"},
                  auth=ADMIN, timeout=60).raise_for_status()
    return name


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", type=int, default=10000)
    ap.add_argument("--history", type=int, default=1000)
    ap.add_argument("--samples", type=int, default=30)
    args = ap.parse_args()
    logging.disable(logging.WARNING)  # PyIceberg logs each refused commit it retries: the counts say it
    pg = pg_params()
    work = Path(tempfile.mkdtemp(prefix="iceberg-repos-bench-"))
    out = {}
    peers = []
    try:
        for start in (lambda: start_sediment(work), lambda: start_java(work, pg), lambda: start_sql(work, pg)):
            peer = start()
            peers.append(peer)
            print(f"{peer.name}:", flush=True)
            run_peer(peer, args, out)
        branch_creation(peers[0], args, out)
    finally:
        for p in peers:
            p.stop()
        shutil.rmtree(work, ignore_errors=True)
    report(out)


def report(out):
    metrics = sorted({m for _, m in out}, key=lambda m: (m.split(",")[0], m))
    print("\n| measure | sediment | java-rest | pyiceberg-sql | java-rest / sediment | pyiceberg-sql / sediment |")
    print("| --- | --- | --- | --- | --- | --- |")
    for m in metrics:
        s, j, q = (out.get((p, m)) for p in ("sediment", "java-rest", "pyiceberg-sql"))
        higher_better = m.endswith("appends/s")
        unit = "" if "refused" in m or higher_better else " ms"

        def cell(v):
            return "-" if v is None else (f"{v:.0f}" if "refused" in m else f"{v:.2f}{unit}")

        def ratio(v):
            if v is None or s is None or "refused" in m or s == 0:
                return "-"
            return f"{(s / v if higher_better else v / s):.2f}x"
        print(f"| {m} | {cell(s)} | {cell(j)} | {cell(q)} | {ratio(j)} | {ratio(q)} |")


if __name__ == "__main__":
    main()
