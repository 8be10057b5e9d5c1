#!/usr/bin/env python3
"""Uploads per second through one server vs two sharing PostgreSQL and MinIO.

Starts a throwaway PostgreSQL and MinIO (scripts/postgres.sh, scripts/minio.sh),
then `sediment serve` processes configured as a cluster (docs/deploy.md). Client
processes upload 1 KiB objects to one repository (namespace on MinIO) for
--seconds, spread evenly over the servers under test. Run 1: one server, all
clients on it. Run 2: two servers, half the clients on each. Prints JSON.

Usage: .venv/bin/python bench/cluster_bench.py [--clients 4] [--seconds 10]
"""
import argparse
import json
import multiprocessing as mp
import os
import re
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
SEDIMENT = ROOT / "build" / "sediment"
KEY, SECRET = "AKIABENCH", "bench-secret-key"


def start_service(script, d):
    out = subprocess.run([str(ROOT / "scripts" / script), "start", d], capture_output=True, text=True,
                         check=True).stdout
    return dict(re.findall(r"export (\w+)='?([^'\n]*)'?", out))


def start_server(config, data_dir):
    log = Path(data_dir + ".log")
    with open(log, "w") as out:
        # Several servers at once: the query server's ports are free ones, not 1602 and 1603.
        env = dict(os.environ, SEDIMENT_QUERY_FLIGHT_LISTEN="127.0.0.1:0", SEDIMENT_QUERY_JSONL_LISTEN="127.0.0.1:0")
        p = subprocess.Popen([str(SEDIMENT), "serve", "--config", config, "--listen", "127.0.0.1:0",
                              "--data-dir", data_dir], stdout=out, stderr=subprocess.STDOUT, env=env)
    for _ in range(300):
        m = re.search(r"listening on (http://[\d.]+:\d+)", log.read_text())
        if m:
            return p, m.group(1)
        if p.poll() is not None:
            break
        time.sleep(0.1)
    raise RuntimeError("server did not start: " + log.read_text())


def client(args):
    url, seconds, tag = args
    s = requests.Session()
    n, deadline, i = 0, time.time() + seconds, 0
    while time.time() < deadline:
        r = s.post(f"{url}/api/v1/repositories/bench/branches/main/objects", params={"path": f"{tag}/o{i:07d}"},
                   data=b"x" * 1024, auth=(KEY, SECRET), timeout=60)
        if r.status_code != 201:
            raise RuntimeError(r.text)
        n += 1
        i += 1
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=10)
    a = ap.parse_args()
    base = tempfile.mkdtemp(prefix="sediment-cluster-bench-")
    os.chmod(base, 0o755)
    procs = []
    try:
        env = start_service("postgres.sh", base + "/pg")
        env.update(start_service("minio.sh", base + "/minio"))
        config = Path(base) / "cluster.toml"
        config.write_text(
            f'[storage]\nobjects = "s3://{env["SEDIMENT_TEST_S3_BUCKET"]}/objects"\n'
            f'[storage.s3]\nendpoint = "{env["SEDIMENT_TEST_S3_ENDPOINT"]}"\nscheme = "http"\n'
            f'access_key_id = "{env["SEDIMENT_TEST_S3_ACCESS_KEY"]}"\n'
            f'secret_access_key = "{env["SEDIMENT_TEST_S3_SECRET_KEY"]}"\n'
            f'[database]\ntype = "postgres"\npostgres_dsn = "{env["SEDIMENT_TEST_POSTGRES_DSN"]}"\n')
        p1, url1 = start_server(str(config), base + "/s1")
        p2, url2 = start_server(str(config), base + "/s2")
        procs += [p1, p2]
        requests.post(url1 + "/api/v1/setup_lakefs", timeout=10, json={
            "username": "admin", "key": {"access_key_id": KEY, "secret_access_key": SECRET}}).raise_for_status()
        requests.post(url1 + "/api/v1/repositories", auth=(KEY, SECRET), timeout=10, json={
            "name": "bench", "storage_namespace": f"s3://{env['SEDIMENT_TEST_S3_BUCKET']}/repo-bench"}
        ).raise_for_status()
        results = {"clients": a.clients, "seconds": a.seconds}
        with mp.Pool(a.clients) as pool:
            for label, urls in (("one_server", [url1]), ("two_servers", [url1, url2])):
                jobs = [(urls[i % len(urls)], a.seconds, f"{label}-{i}-{uuid.uuid4().hex[:6]}")
                        for i in range(a.clients)]
                t0 = time.time()
                n = sum(pool.map(client, jobs))
                results[f"{label}_uploads_per_s"] = n / (time.time() - t0)
        results["two_vs_one"] = results["two_servers_uploads_per_s"] / results["one_server_uploads_per_s"]
        print(json.dumps(results))
    finally:
        for p in procs:
            p.terminate()
            p.wait(30)
        subprocess.run([str(ROOT / "scripts" / "minio.sh"), "stop", base + "/minio"], check=False)
        subprocess.run([str(ROOT / "scripts" / "postgres.sh"), "stop", base + "/pg"], check=False)
        subprocess.run(["rm", "-rf", base], check=False)


if __name__ == "__main__":
    main()
