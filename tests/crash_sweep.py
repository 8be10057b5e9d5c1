"""The crash sweep: for every failpoint, kill a real `sediment serve` there (SIGKILL, from inside, at
the failpoint), crash it again while it recovers, restart it, and check the invariants.

Each run starts a fresh server with SEDIMENT_FAILPOINTS="<failpoint>=crash@<n>", drives a workload
that reaches every failpoint (table appends, a reorg into a merged file, compaction passes and GC with
no grace; catalog uploads, deletes, commits, a staging compaction, dead-token drops), and remembers
what the server acknowledged. When the server dies it is restarted with
SEDIMENT_FAILPOINTS="server.start.after_sweep=crash" (a second crash, during recovery), then once more
without failpoints, and the invariants are checked:

  * tables: every acknowledged block is there exactly once with its acknowledged version (the one
    append in flight at the crash may or may not have landed); the live files are contiguous;
    no file is left in storage beyond the live set once GC has run (no orphans after the start-up
    sweep);
  * catalog: every acknowledged object reads back with its content, acknowledged deletes stay
    deleted, acknowledged commits are in the log; the branch lists exactly what it should.

Run as a command for the full form (every failpoint at its 1st, 2nd and 3rd hit, both back-ends when
scripts/test.sh's MinIO and PostgreSQL are in the environment):

    .venv/bin/python tests/crash_sweep.py [--hits 3] [--backend rocksdb|postgres] [--only NAME]

tests/test_crash_sweep.py runs the short form (1st hit) in CI. Both print a table: failpoint,
back-end, runs, runs where the failpoint fired, invariant violations.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import uuid
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import ADMIN, eventually  # noqa: E402
from tables_util import SCHEMA, block_hash, ipc, rows  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BINARY = Path(os.environ.get("SEDIMENT_BINARY", ROOT / "build" / "sediment"))
LISTENING = re.compile(r"listening on http://([^\s:]+):(\d+)")
TABLE = "/api/v1/datasets/crash/tables/logs"
REPO = "/api/v1/repositories/repo"


def all_failpoints():
    """Every failpoint name, from src/base/failpoint.h (kAll)."""
    text = (ROOT / "src" / "base" / "failpoint.h").read_text()
    body = text[text.index("kAll = {"):text.index("};", text.index("kAll = {"))]
    return re.findall(r'"([a-z][a-z._]+)"', body)


CONFIG = """
[writer]
bytes = 4000
[writer.compactor]
skip_latest_segments = 0
max_eager_bytes = 100000
cooldown_duration = 0
min_interval = 0
gc_manifest_grace_period = 0
[catalog]
dropped_token_grace = 0
"""


class Died(Exception):
    """The server is gone (the failpoint fired)."""


class Proc:
    """A `sediment serve` that may die at any moment."""

    def __init__(self, workdir, config, failpoints=""):
        env = {k: v for k, v in os.environ.items() if not k.startswith("SEDIMENT_")}
        env.update(SEDIMENT_QUERY_FLIGHT_LISTEN="127.0.0.1:0", SEDIMENT_QUERY_JSONL_LISTEN="127.0.0.1:0")
        if failpoints:
            env["SEDIMENT_FAILPOINTS"] = failpoints
        self.lines = []
        self.proc = subprocess.Popen(
            [str(BINARY), "serve", "--listen", "127.0.0.1:0", "--config", str(config),
             "--data-dir", str(workdir / "data")],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        self.port = None
        ready = threading.Event()

        def read():
            for line in self.proc.stdout:
                self.lines.append(line.rstrip("\n"))
                m = LISTENING.search(line)
                if m and self.port is None:
                    self.port = int(m.group(2))
                    ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        ready.wait(60)
        self.url = f"http://127.0.0.1:{self.port}" if self.port else None

    def killed(self):
        """True once the process died by SIGKILL (the failpoint)."""
        try:
            return self.proc.wait(timeout=2) == -signal.SIGKILL
        except subprocess.TimeoutExpired:
            return False

    def call(self, method, path, **kw):
        if self.url is None:
            raise Died()
        kw.setdefault("auth", ADMIN)  # the tables API needs it once the catalog is set up
        try:
            return requests.request(method, self.url + path, timeout=60, **kw)
        except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError):
            if self.proc.poll() is not None or self.killed():
                raise Died()
            raise

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)


class Model:
    """What the server acknowledged, and the one operation in flight."""

    def __init__(self):
        self.blocks = {}        # block -> fork, acknowledged
        self.in_flight = None   # ("blocks", {block: fork}) or ("object", path, content|None)
        self.objects = {}       # path -> content (bytes) on main, acknowledged
        self.commits = []       # acknowledged commit ids
        self.table = None       # the Iceberg table's acknowledged property "n" ("" once created)
        self.violations = []


def append(p, model, start, end, fork, parent_fork):
    body = ipc(rows(start, end, per_block=2, fork=fork),
               block_hashes=[block_hash(b, fork) for b in range(start, end + 1)])
    params = {"start_block": start, "end_block": end, "end_hash": block_hash(end, fork),
              "parent_hash": block_hash(start - 1, parent_fork)}
    after = {b: f for b, f in model.blocks.items() if b < start}
    after.update({b: fork for b in range(start, end + 1)})
    model.in_flight = ("blocks", after)
    r = p.call("POST", TABLE + "/segments", params=params, data=body)
    if r.status_code != 201:
        model.violations.append(f"append [{start}, {end}]: {r.status_code} {r.text[:200]}")
        return
    model.blocks = after
    model.in_flight = None


def put_object(p, model, path, content):
    model.in_flight = ("object", path, content)
    r = p.call("POST", REPO + "/branches/main/objects", params={"path": path}, data=content, auth=ADMIN)
    if r.status_code != 201:
        model.violations.append(f"upload {path}: {r.status_code} {r.text[:200]}")
        return
    model.objects[path] = content
    model.in_flight = None


def delete_object(p, model, path):
    model.in_flight = ("object", path, None)
    r = p.call("DELETE", REPO + "/branches/main/objects", params={"path": path}, auth=ADMIN)
    if r.status_code != 204:
        model.violations.append(f"delete {path}: {r.status_code} {r.text[:200]}")
        return
    model.objects.pop(path, None)
    model.in_flight = None


def commit(p, model, message):
    r = p.call("POST", REPO + "/branches/main/commits", json={"message": message}, auth=ADMIN)
    if r.status_code == 201:
        model.commits.append(r.json()["id"])
    elif r.status_code != 400:  # 400: nothing to commit
        model.violations.append(f"commit {message}: {r.status_code} {r.text[:200]}")


def workload(p, model, namespace):
    """Reaches every failpoint; raises Died when the server dies."""
    # Tables: one-block appends, passes (merge, swap, GC without grace), a reorg into a merged file.
    assert p.call("PUT", TABLE, data=ipc()).status_code in (200, 201)
    for b in range(0, 16):
        append(p, model, b, b, 0, 0)
        if b % 5 == 4:
            p.call("POST", TABLE + "/compact")
    append(p, model, 9, 17, 1, 0)  # reorg from block 9: into the merged file, rewriting it
    for b in range(18, 24):
        append(p, model, b, b, 1, 1)
    p.call("POST", TABLE + "/compact")
    # Catalog: setup, a repository, uploads, deletes, commits, a staging compaction, token drops.
    r = p.call("POST", "/api/v1/setup_lakefs",
               json={"username": "admin", "key": {"access_key_id": ADMIN[0], "secret_access_key": ADMIN[1]}})
    if r.status_code not in (200, 409):
        model.violations.append(f"setup: {r.status_code} {r.text[:200]}")
    r = p.call("POST", "/api/v1/repositories", auth=ADMIN,
               json={"name": "repo", "storage_namespace": namespace, "default_branch": "main"})
    if r.status_code != 201:
        model.violations.append(f"create repository: {r.status_code} {r.text[:200]}")
        return
    for i in range(12):
        put_object(p, model, f"a/{i:03d}", f"first {i}".encode())
    commit(p, model, "first")
    for i in range(12, 20):
        put_object(p, model, f"b/{i:03d}", f"second {i}".encode())
    for i in range(0, 4):
        delete_object(p, model, f"a/{i:03d}")
    r = p.call("POST", REPO + "/branches/main/compact", auth=ADMIN)
    if r.status_code == 202:
        def compaction_done():
            j = p.call("GET", REPO + "/branches/main/compact", auth=ADMIN).json()
            return j.get("last_compaction", {}).get("state") not in ("", "running")
        waited(model, compaction_done, 20, "the staging compaction ends")
    put_object(p, model, "c/after-compaction", b"third")
    commit(p, model, "second")
    iceberg_commits(p, model)
    # Catalog GC, no grace: the superseded compaction and anything orphaned go; nothing reachable may.
    r = p.call("POST", REPO + "/gc", params={"grace_seconds": 0})
    if r.status_code != 200:
        model.violations.append(f"catalog gc: {r.status_code} {r.text[:200]}")
    # Two passes of the dead-token dropper: the second began after the GC, so every drop failpoint was reached.
    first = drop_passes(p)
    waited(model, lambda: drop_passes(p) >= first + 2, 15, "two passes of the staging-token dropper")
    p.call("GET", "/api/v1/healthcheck")


ICEBERG = "/iceberg/api/v1/lakefs"
ICE_TABLE = ICEBERG + "/namespaces/repo%1Fmain%1Fice/tables/t"


def iceberg_commits(p, model):
    """A table in the repository (docs/iceberg-repositories.md), then Iceberg commits that set property n."""
    r = p.call("POST", ICEBERG + "/namespaces", json={"namespace": ["repo", "main", "ice"]})
    if r.status_code != 200:
        model.violations.append(f"create namespace: {r.status_code} {r.text[:200]}")
        return
    schema = {"type": "struct", "fields": [{"id": 1, "name": "id", "required": False, "type": "long"}]}
    r = p.call("POST", ICEBERG + "/namespaces/repo%1Fmain%1Fice/tables", json={"name": "t", "schema": schema})
    if r.status_code != 200:
        model.violations.append(f"create table: {r.status_code} {r.text[:200]}")
        return
    model.table = ""
    for n in range(3):
        model.in_flight = ("table", str(n))
        r = p.call("POST", ICE_TABLE, json={"requirements": [], "updates": [
            {"action": "set-properties", "updates": {"n": str(n)}}]})
        if r.status_code != 200:
            model.violations.append(f"table commit {n}: {r.status_code} {r.text[:200]}")
            return
        model.table = str(n)
        model.in_flight = None


def check_iceberg(p, model):
    if model.table is None:
        return
    r = p.call("GET", ICE_TABLE)
    if r.status_code != 200:
        model.violations.append(f"the Iceberg table does not load: {r.status_code} {r.text[:200]}")
        return
    n = r.json()["metadata"].get("properties", {}).get("n", "")
    flight = model.in_flight[1] if model.in_flight and model.in_flight[0] == "table" else None
    if n not in (model.table, flight):
        model.violations.append(f"the Iceberg table's property n is {n!r}, acknowledged {model.table!r}")


def drop_passes(p):
    m = re.search(r"^catalog_token_drop_passes_total (\S+)$", p.call("GET", "/metrics").text, re.M)
    return float(m.group(1)) if m else 0.0


def waited(model, condition, timeout, what):
    """Waits for `condition` (a Died from the server passes through); a timeout is a violation."""
    try:
        eventually(condition, timeout=timeout, what=what)
    except AssertionError as e:
        model.violations.append(str(e))


def stored_table_files(workdir, s3):
    if s3 is None:
        root = workdir / "data" / "objects" / "tables"
        return sorted(x.name for x in root.rglob("*.parquet")) if root.exists() else []
    from pyarrow import fs
    infos = s3["fs"].get_file_info(fs.FileSelector(s3["uri"] + "/tables", recursive=True, allow_not_found=True))
    return sorted(i.base_name for i in infos if i.base_name.endswith(".parquet"))


def check(p, model, workdir, s3):
    """The invariants, on a clean restart after the crash(es)."""
    check_table(p, model, workdir, s3)
    check_catalog(p, model)
    check_iceberg(p, model)


def check_table(p, model, workdir, s3):
    v = model.violations
    r = p.call("GET", TABLE + "/files")
    if r.status_code == 404:
        if model.blocks:
            v.append("table lost")
        return
    files = r.json()["files"]
    # The incremental state (totals and ends, written in the same batch as the segments) equals the live set.
    t = p.call("GET", TABLE).json()
    summed = {"files": len(files), "rows": sum(f["rows"] for f in files), "bytes": sum(f["bytes"] for f in files),
              "first_block": files[0]["start_block"] if files else None,
              "last_block": files[-1]["end_block"] if files else None}
    if {k: t.get(k) for k in summed} != summed:
        v.append(f"table state {({k: t.get(k) for k in summed})} differs from its files {summed}")
    for a, b in zip(files, files[1:]):
        if b["start_block"] != a["end_block"] + 1:
            v.append(f"files not contiguous: [{a['start_block']}, {a['end_block']}] then "
                     f"[{b['start_block']}, {b['end_block']}]")
    scan = p.call("GET", TABLE + "/scan", params={"columns": "block_num,value", "format": "jsonl"})
    got = {}
    for line in scan.text.splitlines():
        if line:
            row = json.loads(line)
            got.setdefault(row["block_num"], []).append(row["value"])

    def as_rows(blocks):
        return {b: sorted(b * 1000 + i + f * 1_000_000 for i in range(2)) for b, f in blocks.items()}

    actual = {b: sorted(vals) for b, vals in got.items()}
    ok = [as_rows(model.blocks)]
    if model.in_flight and model.in_flight[0] == "blocks":
        ok.append(as_rows(model.in_flight[1]))
    if actual not in ok:
        missing = sorted(set(ok[0]) - set(actual))
        doubled = sorted(b for b, vals in actual.items() if len(vals) > 2)
        v.append(f"table rows differ from the acknowledged ones (missing blocks {missing[:10]}, "
                 f"doubled {doubled[:10]})")
    # No orphans: once GC (no grace) has run, storage holds exactly the live files.
    seen = {}

    def no_orphans():
        p.call("POST", TABLE + "/compact")
        seen["live"] = sorted(Path(f["path"]).name for f in p.call("GET", TABLE + "/files").json()["files"])
        seen["stored"] = stored_table_files(workdir, s3)
        return seen["stored"] == seen["live"]

    try:
        eventually(no_orphans, timeout=15, interval=0.5, what="storage holds exactly the live files")
    except AssertionError:
        v.append(f"orphan table files: {sorted(set(seen['stored']) - set(seen['live']))[:5]}")


def check_catalog(p, model):
    v = model.violations
    r = p.call("GET", REPO, auth=ADMIN)
    if r.status_code != 200:
        if model.objects or model.commits:
            v.append(f"repository lost: {r.status_code}")
        return
    listed, after = set(), ""
    while True:
        page = p.call("GET", REPO + "/refs/main/objects/ls", params={"after": after, "amount": 1000},
                      auth=ADMIN).json()
        listed |= {o["path"] for o in page["results"]}
        if not page["pagination"]["has_more"]:
            break
        after = page["pagination"]["next_offset"]
    listed = {path for path in listed if not path.startswith("_lakefs_tables/")}  # check_iceberg's
    expected = set(model.objects)
    flight_path = model.in_flight[1] if model.in_flight and model.in_flight[0] == "object" else None
    if listed - {flight_path} != expected - {flight_path}:
        v.append(f"catalog lists {sorted(listed ^ expected)[:5]} wrongly")
    for path, content in model.objects.items():
        if path == flight_path:
            continue
        r = p.call("GET", REPO + "/refs/main/objects", params={"path": path}, auth=ADMIN)
        if r.status_code != 200 or r.content != content:
            v.append(f"object {path}: {r.status_code}, {r.content[:40]!r} instead of {content!r}")
    log = p.call("GET", REPO + "/refs/main/commits", params={"amount": 1000}, auth=ADMIN).json()
    ids = {c["id"] for c in log.get("results", [])}
    for c in model.commits:
        if c not in ids:
            v.append(f"acknowledged commit {c} not in the log")


def backends():
    out = [("rocksdb", None)]
    dsn = os.environ.get("SEDIMENT_TEST_POSTGRES_DSN")
    endpoint = os.environ.get("SEDIMENT_TEST_S3_ENDPOINT")
    if dsn and endpoint:
        out.append(("postgres", dsn))
    return out


def backend_config(kind, dsn, workdir):
    """Config text, the repository's storage namespace, and the S3 view for orphan checks."""
    if kind == "rocksdb":
        return CONFIG, f"local://{workdir}/data/namespaces/ns", None  # under the default root
    from pyarrow import fs
    bucket = os.environ["SEDIMENT_TEST_S3_BUCKET"]
    prefix = f"crash-{uuid.uuid4().hex[:10]}"
    text = CONFIG + (
        f'[storage]\nobjects = "s3://{bucket}/{prefix}"\n'
        f'[storage.s3]\nendpoint = "{os.environ["SEDIMENT_TEST_S3_ENDPOINT"]}"\nscheme = "http"\n'
        f'access_key_id = "{os.environ["SEDIMENT_TEST_S3_ACCESS_KEY"]}"\n'
        f'secret_access_key = "{os.environ["SEDIMENT_TEST_S3_SECRET_KEY"]}"\n'
        f'[database]\ntype = "postgres"\npostgres_dsn = "{dsn}"\npostgres_schema = "c_{uuid.uuid4().hex[:12]}"\n')
    s3 = {"fs": fs.S3FileSystem(access_key=os.environ["SEDIMENT_TEST_S3_ACCESS_KEY"],
                                secret_key=os.environ["SEDIMENT_TEST_S3_SECRET_KEY"], scheme="http",
                                endpoint_override=os.environ["SEDIMENT_TEST_S3_ENDPOINT"]),
          "uri": f"{bucket}/{prefix}"}
    return text, f"s3://{bucket}/{prefix}/ns", s3


def run_one(failpoint, hit, kind, dsn):
    """One run; returns (fired, violations)."""
    workdir = Path(tempfile.mkdtemp(prefix="sediment-crash-"))
    try:
        text, namespace, s3 = backend_config(kind, dsn, workdir)
        config = workdir / "sediment.toml"
        config.write_text(text)
        model = Model()
        p = Proc(workdir, config, f"{failpoint}=crash@{hit}")
        fired = False
        if p.url is None:
            fired = p.killed()  # a start-up failpoint
            if not fired:
                return False, [f"server did not start: {' | '.join(p.lines[-3:])}"]
        else:
            try:
                workload(p, model, namespace)
            except Died:
                fired = True
            p.stop()
        # A second crash, during recovery; then a clean start.
        again = Proc(workdir, config, "server.start.after_sweep=crash")
        if again.url is not None or not again.killed():
            model.violations.append("the recovery crash did not happen")
        again.stop()
        clean = Proc(workdir, config)
        if clean.url is None:
            return fired, [f"no restart after the crash: {' | '.join(clean.lines[-3:])}"]
        try:
            check(clean, model, workdir, s3)
        except Exception as e:  # a broken answer is a violation too, not a crash of the sweep
            model.violations.append(f"checking failed: {type(e).__name__}: {str(e)[:200]}")
        finally:
            clean.stop()
        return fired, model.violations
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def sweep(hits=1, only=None, kinds=None, out=sys.stdout):
    """Runs the sweep; returns rows (failpoint, backend, runs, fired, violations, first violation)."""
    results = []
    for kind, dsn in backends():
        if kinds and kind not in kinds:
            continue
        for fp in all_failpoints():
            if only and fp not in only:
                continue
            runs = fired = 0
            problems = []
            for hit in range(1, hits + 1):
                f, v = run_one(fp, hit, kind, dsn)
                runs += 1
                fired += f
                problems += v
            results.append((fp, kind, runs, fired, len(problems), problems[0] if problems else ""))
            print(f"{fp:28} {kind:9} runs {runs}  fired {fired}  violations {len(problems)}"
                  + (f"  ({problems[0]})" if problems else ""), file=out, flush=True)
    return results


def table(results):
    lines = ["| failpoint | back-end | runs | fired | violations |", "| --- | --- | --- | --- | --- |"]
    for fp, kind, runs, fired, n, _ in results:
        lines.append(f"| `{fp}` | {kind} | {runs} | {fired} | {n} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hits", type=int, default=3, help="crash at the 1st..Nth hit of each failpoint")
    ap.add_argument("--backend", action="append", choices=["rocksdb", "postgres"])
    ap.add_argument("--only", action="append", help="only this failpoint (repeatable)")
    args = ap.parse_args()
    results = sweep(args.hits, args.only, args.backend)
    print()
    print(table(results))
    return 1 if any(r[4] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
