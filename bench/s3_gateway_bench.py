#!/usr/bin/env python3
"""The S3 gateway side by side with MinIO, in one run, through boto3 (the same client, settings and
threads for both): small-object PUT and GET per second, and ListObjectsV2 pages per second over a branch
of --keys objects, before and after staging compaction. Both servers run on this machine's local disk
(Sediment on its embedded defaults: RocksDB + local files).

    .venv/bin/python bench/s3_gateway_bench.py [--keys 1000000] [--objects 2000] [--threads 8] [--binary PATH]

The branch is loaded with the lakeFS API's staging/backing link (entries only, like an import) and MinIO
with zero-byte PUTs of the same keys; only the listing is timed."""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import boto3
import requests
from botocore.config import Config

ROOT = Path(__file__).resolve().parent.parent
KEY, SECRET = "AKIABENCHGATEWAY00", "bench-gateway-secret-key-0123456789"


def client(endpoint, key, secret):
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key, aws_secret_access_key=secret,
                        region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, max_pool_connections=64,
                                      retries={"max_attempts": 2}))


def rate(n, fn, threads):
    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(fn, range(n)))
    return n / (time.perf_counter() - t0)


def list_pages(s3, bucket, prefix):
    """Pages per second walking every ListObjectsV2 page (1,000 keys each) under `prefix`."""
    t0, pages, keys, token = time.perf_counter(), 0, 0, None
    while True:
        kw = {"Bucket": bucket, "Prefix": prefix, "MaxKeys": 1000}
        if token:
            kw["ContinuationToken"] = token
        r = s3.list_objects_v2(**kw)
        pages += 1
        keys += r.get("KeyCount", 0)
        if not r.get("IsTruncated"):
            break
        token = r["NextContinuationToken"]
    return pages / (time.perf_counter() - t0), keys


def start_sediment(tmp, binary):
    cfg = tmp / "sediment.toml"
    cfg.write_text(f'[catalog]\nlocal_namespace_roots = ["{tmp}"]\n')
    log = open(tmp / "sediment.log", "w")  # a pipe nobody reads would block the server's logging
    proc = subprocess.Popen([str(binary), "serve", "--listen", "127.0.0.1:0", "--data-dir",
                             str(tmp / "data"), "--config", str(cfg)], stdout=log, stderr=subprocess.STDOUT)
    url = None
    for _ in range(300):
        text = (tmp / "sediment.log").read_text()
        if "listening on http://" in text:
            url = text.split("listening on ")[1].split()[0]
            break
        time.sleep(0.1)
    if url is None:
        sys.exit("sediment did not start:\n" + (tmp / "sediment.log").read_text())
    r = requests.post(url + "/api/v1/setup_lakefs", json={
        "username": "bench", "key": {"access_key_id": KEY, "secret_access_key": SECRET}}, timeout=30)
    r.raise_for_status()
    r = requests.post(url + "/api/v1/repositories", auth=(KEY, SECRET), timeout=30, json={
        "name": "bench", "storage_namespace": f"local://{tmp}/ns-bench", "default_branch": "main"})
    r.raise_for_status()
    return proc, url


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", type=int, default=100_000, help="objects on the listed branch")
    ap.add_argument("--objects", type=int, default=2000, help="small objects PUT and GET")
    ap.add_argument("--size", type=int, default=1024, help="bytes per small object")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--binary", default=str(ROOT / "build" / "sediment"),
                    help="the sediment binary to measure (an older build, for a before/after)")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="s3-gateway-bench-"))
    env = subprocess.run([str(ROOT / "scripts" / "minio.sh"), "start", str(tmp / "minio")], capture_output=True,
                         text=True, check=True).stdout
    m = dict(line.replace("export ", "").split("=", 1) for line in env.split("\n") if line.startswith("export"))
    sed_proc, sed_url = start_sediment(tmp, a.binary)
    try:
        sed = client(sed_url, KEY, SECRET)
        minio = client("http://" + m["SEDIMENT_TEST_S3_ENDPOINT"], m["SEDIMENT_TEST_S3_ACCESS_KEY"],
                       m["SEDIMENT_TEST_S3_SECRET_KEY"])
        mb = m["SEDIMENT_TEST_S3_BUCKET"]
        body = os.urandom(a.size)
        out = {}
        for name, s3, bucket, prefix in [("minio", minio, mb, "main/small/"), ("sediment", sed, "bench", "main/small/")]:
            out[f"{name}_put_per_s"] = rate(a.objects, lambda i: s3.put_object(
                Bucket=bucket, Key=f"{prefix}o{i:07d}", Body=body), a.threads)
            out[f"{name}_get_per_s"] = rate(a.objects, lambda i: s3.get_object(
                Bucket=bucket, Key=f"{prefix}o{i:07d}")["Body"].read(), a.threads)

        # The listed branch: a.keys entries under main/big/ (Sediment: linked, staged; MinIO: empty objects).
        sess = requests.Session()
        sess.auth = (KEY, SECRET)
        addr_url = sed_url + "/api/v1/repositories/bench/branches/main/staging/backing"

        def link(i):
            path = f"big/p{i % 100:02d}/k{i:08d}"
            pa = sess.get(addr_url, params={"path": path}, timeout=60).json()["physical_address"]
            r = sess.put(addr_url, params={"path": path}, timeout=60, json={
                "staging": {"physical_address": pa}, "checksum": "0" * 32, "size_bytes": 0})
            r.raise_for_status()

        t0 = time.perf_counter()
        with ThreadPoolExecutor(a.threads) as pool:
            list(pool.map(link, range(a.keys)))
            list(pool.map(lambda i: minio.put_object(Bucket=mb, Key=f"main/big/p{i % 100:02d}/k{i:08d}", Body=b""),
                          range(a.keys)))
        out["load_seconds"] = time.perf_counter() - t0
        out["minio_list_pages_per_s"], n_minio = list_pages(minio, mb, "main/big/")
        out["sediment_staged_list_pages_per_s"], n_staged = list_pages(sed, "bench", "main/big/")
        r = requests.post(sed_url + "/api/v1/repositories/bench/branches/main/compact", auth=(KEY, SECRET),
                          timeout=3600)
        r.raise_for_status()
        for _ in range(3600):
            st = requests.get(sed_url + "/api/v1/repositories/bench/branches/main/compact", auth=(KEY, SECRET),
                              timeout=60).json()
            if st["compacted"]:
                break
            time.sleep(0.5)
        else:
            sys.exit(f"staging compaction did not finish: {st}")
        out["sediment_compacted_list_pages_per_s"], n_compacted = list_pages(sed, "bench", "main/big/")
        assert n_minio == n_staged == n_compacted == a.keys, (n_minio, n_staged, n_compacted)
        out["keys"], out["objects"], out["threads"], out["size"] = a.keys, a.objects, a.threads, a.size
        print(json.dumps(out, indent=2))
        print(f"PUT {a.size} B: sediment/minio = {out['sediment_put_per_s'] / out['minio_put_per_s']:.2f}x")
        print(f"GET {a.size} B: sediment/minio = {out['sediment_get_per_s'] / out['minio_get_per_s']:.2f}x")
        print(f"ListObjectsV2 pages, {a.keys} keys: staged/minio = "
              f"{out['sediment_staged_list_pages_per_s'] / out['minio_list_pages_per_s']:.2f}x, "
              f"compacted/minio = {out['sediment_compacted_list_pages_per_s'] / out['minio_list_pages_per_s']:.2f}x")
    finally:
        sed_proc.send_signal(signal.SIGTERM)
        sed_proc.wait(30)
        subprocess.run([str(ROOT / "scripts" / "minio.sh"), "stop", str(tmp / "minio")], check=False)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
