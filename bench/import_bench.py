#!/usr/bin/env python3
"""How long an import of esti's tree takes (29,400 small files in 14 directories, as esti's
TestImport writes them): start to `completed`, polled every 10 ms, three imports into one repository.
Explains why esti's TestImportCancel (which cancels after 1 s) meets a completed import here.

Usage: .venv/bin/python bench/import_bench.py   (after scripts/build.sh)"""
import os
import subprocess
import tempfile
import time
from pathlib import Path

import requests

ROOT_DIR = Path(__file__).resolve().parent.parent
root = tempfile.mkdtemp(prefix="sediment-import-bench-")
src = f"{root}/src"
for i in range(1, 8):
    for d in (f"prefix-{i}", f"nested/prefix-{i}"):
        os.makedirs(f"{src}/{d}", exist_ok=True)
        for n in range(1, 2101):
            p = f"{src}/{d}/file{n:06d}"
            with open(p, "w") as f: f.write(p)
open(f"{root}/cfg.toml", "w").write(f'[catalog]\nlocal_namespace_roots = ["{root}"]\n')
srv = subprocess.Popen([str(ROOT_DIR / "build" / "sediment"), "serve", "--listen", "127.0.0.1:8799", "--config", f"{root}/cfg.toml", "--data-dir", f"{root}/data"], stdout=open(f"{root}/srv.log", "w"), stderr=subprocess.STDOUT)
url = "http://127.0.0.1:8799/api/v1"
for _ in range(100):
    try:
        requests.get(url + "/healthcheck", timeout=1); break
    except Exception: time.sleep(0.1)
auth = ("AKIAIMPORTBENCH00001", "import-bench-secret-0001")
requests.post(url + "/setup_lakefs", json={"username": "admin", "key": {"access_key_id": auth[0], "secret_access_key": auth[1]}})
r0 = requests.post(url + "/repositories", auth=auth, json={"name": "repo", "storage_namespace": f"local://{root}/ns", "default_branch": "main"}); assert r0.status_code == 201, r0.text
times = []
for k in range(3):
    t0 = time.time()
    r = requests.post(url + "/repositories/repo/branches/main/import", auth=auth, json={"paths": [{"type": "common_prefix", "path": f"local://{src}/", "destination": f"in{k}/"}], "commit": {"message": "m"}})
    iid = r.json()["id"]
    while True:
        s = requests.get(url + "/repositories/repo/branches/main/import", params={"id": iid}, auth=auth).json()
        if s.get("completed") or s.get("error"): break
        time.sleep(0.01)
    times.append(time.time() - t0)
print("import of 29,400 files, seconds:", [round(t, 2) for t in times], s.get("ingested_objects"))
srv.terminate(); srv.wait()
