"""A fuzzer of the tables API (/api/v1/tables, /api/v1/datasets/{ds}/tables/{t}/...): creates with Arrow IPC
bodies of odd schemas or broken bytes, appends with mutated query parameters and IPC bodies (valid
continuations and reorgs too, so that the chain moves), scans with mutated ranges, columns, filters,
limits and formats, and the paging parameters of files, history, histogram, passes and gc; as the admin
mostly, and without or with wrong credentials.

The rules: no 5xx, no scan stream cut short, the server alive at the end, and a refused request changes
nothing (every table's description and live files, and its history, compared before and after each batch
of refused requests). Appends that must be refused (a reorg whose parent hash is not the stored one, rows
outside the range, a body that is not Arrow IPC, a missing parameter) never get a 2xx.

SEDIMENT_FUZZ_TABLES_CASES (default 2000), SEDIMENT_FUZZ_TABLES_SEED (or SEDIMENT_FUZZ_SEED). Findings go
to build/test-artifacts/security/fuzz-tables-findings.txt."""
import random
import time
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field

import pyarrow as pa
import pytest
import requests

from security.util import ADMIN, artifact, died, env_int, fuzz_seed, record_line, set_up_admin
from tables_util import SCHEMA, block_hash, ipc, rows

CASES = env_int("SEDIMENT_FUZZ_TABLES_CASES", 2000)
SEED = fuzz_seed("SEDIMENT_FUZZ_TABLES_SEED", 25)
MAX_CRASHES = 5  # restarts after a crash, so that one crash does not hide the next
BLOCKS_SCHEMA = pa.schema([pa.field("block_num", pa.uint64(), nullable=False), pa.field("hash", pa.binary(32)),
                           pa.field("gas_used", pa.uint64())])
NEW_TABLES = ["fz/t1", "fz/t2", "fz/t3", "fz2/t1"]
ODD_NAMES = ["..", ".", "a b", "UPPER", "\u00e9", "x" * 300, "-", "a.b", "%2F", "_", "a%00b", "0", "a-b",
             "con", "a;b", "\u202e", "%", "a%2Fb"]
FILTERS = ["log_index < 3", "log_index = 1", "value >= 5000", "address = 0x" + "ab" * 20, "data != 0x00",
           "block_num <= 3", "log_index <", "< 3", "nope = 1", "log index = 1", "value > 99999999999999999999",
           "data = 0xzz", "address = 0x12", "value = abc", "log_index = 1.5", "value < -1", "block_num = -1",
           "log_index <> 1", "log_index == 1", "", "=", "\u00e9 = 1", "log_index = \u00e9", "value > 1e309",
           "address > 0x", "block_num > 18446744073709551615", "block_num > 18446744073709551616",
           "log_index = 2147483648", "data = " + "0x" + "00" * 5000]
NUMBERS = ["0", "1", "2", "-1", "abc", "", " 1", "1 ", "1.5", "1e3", "0x10", "18446744073709551615",
           "18446744073709551616", "9223372036854775807", "9223372036854775808", "+1", "\u0661", "99999999999999999999"]


@dataclass
class Req:
    method: str
    path: str
    params: list = field(default_factory=list)
    body: bytes = None
    auth: object = ADMIN
    headers: dict = field(default_factory=dict)

    def describe(self):
        q = urllib.parse.urlencode(self.params)
        auth = "admin" if self.auth == ADMIN else repr(self.auth)
        body = "" if self.body is None else f"\nbody ({len(self.body)} bytes): {self.body[:300]!r}"
        return f"{self.method} {self.path}{'?' + q if q else ''}  [auth {auth}] {self.headers or ''}{body}"


def schema_bytes(schema):
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema):
        pass
    return sink.getvalue().to_pybytes()


class TablesFuzzer:
    def __init__(self, rng):
        self.rng = rng
        self.head = 0        # eth.logs's last block
        self.forks = {}      # block -> fork whose hash is stored
        self.created = set()

    def hash_of(self, b):
        return block_hash(b, self.forks.get(b, 0))

    def flip(self, data, n=1):
        data = bytearray(data)
        for _ in range(n):
            if data:
                i = self.rng.randrange(len(data))
                data[i] ^= 1 << self.rng.randrange(8)
        return bytes(data)

    # --- bodies -------------------------------------------------------------------------------------------

    def odd_schema_body(self):
        """(body, is it a usable table schema?)"""
        rng = self.rng
        options = [
            (lambda: schema_bytes(SCHEMA), True),
            (lambda: schema_bytes(BLOCKS_SCHEMA), True),
            (lambda: schema_bytes(pa.schema([pa.field("x", pa.int32())])), False),
            (lambda: schema_bytes(pa.schema([pa.field("block_num", pa.int64())])), None),
            (lambda: schema_bytes(pa.schema([pa.field("block_num", pa.uint64(), nullable=True)])), None),
            (lambda: schema_bytes(pa.schema([pa.field("block_num", pa.string())])), False),
            (lambda: schema_bytes(pa.schema([pa.field("block_num", pa.uint64(), nullable=False)] +
                                            [pa.field(f"c{i}", pa.int8()) for i in range(2000)])), None),
            (lambda: schema_bytes(pa.schema([pa.field("block_num", pa.uint64(), nullable=False),
                                             pa.field("n", pa.struct([("a", pa.list_(pa.int32()))])),
                                             pa.field("m", pa.map_(pa.string(), pa.int64())),
                                             pa.field("d", pa.dictionary(pa.int8(), pa.string()))])), None),
            (lambda: schema_bytes(pa.schema([pa.field("block_num", pa.uint64(), nullable=False),
                                             pa.field("block_num", pa.uint64())])), None),
            (lambda: schema_bytes(pa.schema([pa.field("block_num", pa.uint64(), nullable=False),
                                             pa.field("", pa.int32()), pa.field("\u00e9 x", pa.int32())])), None),
            (lambda: schema_bytes(SCHEMA.with_metadata({"k": "v" * 100_000})), None),
            (lambda: b"", False),
            (lambda: b"not arrow", False),
            (lambda: b'{"fields": []}', False),
            (lambda: schema_bytes(SCHEMA)[:rng.randrange(1, 40)], False),
            (lambda: self.flip(schema_bytes(SCHEMA), rng.randrange(1, 5)), None),
            (lambda: b"\xff\xff\xff\xff" + rng.randbytes(rng.randrange(0, 64)), False),
            (lambda: b"\xff\xff\xff\xff\xff\xff\xff\x7f" + b"\x00" * 16, False),
            (lambda: self.ipc_file(), None),
        ]
        make, ok = rng.choice(options)
        return make(), ok

    def ipc_file(self):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_file(sink, SCHEMA) as w:
            w.write_batch(rows(1, 1))
        return sink.getvalue().to_pybytes()

    def segment_body(self, start, end, fork):
        """(body, must it be refused?): mostly right, sometimes wrong in one way."""
        rng = self.rng
        hashes = [block_hash(b, fork) for b in range(start, end + 1)] if end - start < 5000 else None
        if start > end or end - start > 5000:
            return ipc(rows(1, 1)), None
        good = ipc(rows(start, end, rng.choice([1, 2, 3]), fork), block_hashes=hashes)
        r = rng.random()
        if r < 0.6:
            return good, False
        variants = [
            (lambda: ipc(rows(start, end + 1, 1, fork)), True),                          # a row past the end
            (lambda: ipc(rows(max(start - 1, 0), end, 1, fork)) if start > 0 else good, start > 0),
            (lambda: ipc(rows(start, end, 1, fork), schema=SCHEMA), False),              # no block hashes
            (lambda: ipc(schema=SCHEMA), None),                                         # no rows
            (lambda: b"", True),
            (lambda: good[:rng.randrange(1, len(good))], None),  # a stream may end at a message boundary
            (lambda: self.flip(good, rng.randrange(1, 8)), None),
            (lambda: rng.randbytes(200), True),
            (lambda: ipc(pa.record_batch([pa.array(list(range(end, start - 1, -1)), pa.uint64())],
                                         schema=pa.schema([pa.field("block_num", pa.uint64(), nullable=False)])),
                         schema=pa.schema([pa.field("block_num", pa.uint64(), nullable=False)])), None),
            (lambda: ipc(rows(start, end, 1, fork), block_hashes=["zz"] * (end - start + 1)), None),
            (lambda: ipc(rows(start, end, 1, fork), block_hashes=["ab"]), None),
            (lambda: ipc(rows(start, end, 1, fork), block_hashes=[block_hash(b, fork + 7)
                                                                  for b in range(start, end + 1)]), None),
            (lambda: ipc(rows(start, end, 1, fork), rows(start, end, 1, fork)), None),   # two batches: rows twice
            (lambda: ipc(pa.record_batch([pa.array([start], pa.uint64())], schema=pa.schema(
                [pa.field("block_num", pa.uint64(), nullable=False)])),
                schema=pa.schema([pa.field("block_num", pa.uint64(), nullable=False)])), True),  # other schema
            (lambda: self.ipc_file(), True),
        ]
        make, refuse = rng.choice(variants)
        return make(), refuse

    # --- cases ----------------------------------------------------------------------------------------------

    def table_path(self):
        rng = self.rng
        r = rng.random()
        if r < 0.7:
            return "eth", "logs"
        if r < 0.8:
            return "eth", "blocks"
        if r < 0.9:
            return tuple(rng.choice(NEW_TABLES).split("/"))
        return rng.choice(["eth", "nope"] + ODD_NAMES), rng.choice(["logs", "nope"] + ODD_NAMES)

    @staticmethod
    def url(ds, t, rest=""):
        q = urllib.parse.quote
        return f"/api/v1/datasets/{q(ds, safe='')}/tables/{q(t, safe='')}{rest}"

    def case_create(self):
        rng = self.rng
        ds, t = self.table_path() if rng.random() < 0.7 else tuple(rng.choice(NEW_TABLES).split("/"))
        body, usable = self.odd_schema_body()
        refuse = usable is False
        return Req("PUT", self.url(ds, t), body=body), True, refuse, "create"

    def case_append(self):
        """An append; must_refuse is True only where the request is wrong whatever the server's choices."""
        rng = self.rng
        ds, t = ("eth", "logs") if rng.random() < 0.85 else self.table_path()
        kind = rng.choice(["next", "next", "next", "reorg", "bad-reorg", "gap", "params"])
        fork = 0
        if kind in ("reorg", "bad-reorg") and (ds, t) == ("eth", "logs"):
            start = max(1, self.head - rng.randrange(0, 4))
            end = self.head + rng.choice([0, 1])
            fork = rng.randrange(1, 1000)
            parent = self.hash_of(start - 1) if kind == "reorg" else block_hash(start - 1, 999_999)
            must = kind == "bad-reorg"
        elif kind == "gap":
            start = self.head + rng.choice([2, 10, 10**6])
            end = start + 1
            parent = block_hash(start - 1, 0)
            must = False  # the server decides whether a gap is allowed
        else:
            start = self.head + 1
            end = start + rng.choice([0, 0, 1, 4])
            parent = self.hash_of(start - 1)
            must = False
        body, body_must = self.segment_body(start, end, fork)
        must = must or bool(body_must)
        params = {"start_block": str(start), "end_block": str(end), "end_hash": block_hash(end, fork),
                  "parent_hash": parent}
        if kind == "params" or rng.random() < 0.2:
            name = rng.choice(list(params) + ["force"])
            how = rng.choice(["drop", "value"])
            if how == "drop" and name != "force":
                del params[name]
                must = True
            elif name in ("start_block", "end_block"):
                params[name] = rng.choice(NUMBERS)
                must = params[name] in ("abc", "", "-1", "1.5", "1e3", "+1", "\u0661", "0x10")
            elif name == "force":
                params[name] = rng.choice(["true", "false", "maybe", "", "1"])
                must = must and params[name] not in ("true", "1")
            else:
                params[name] = rng.choice(["", "zz", "ab", "AB" * 32, "ab" * 33, "\u00e9" * 32, "0x" + "ab" * 32,
                                           "x" * 10000])
                must = bool(body_must)
        req = Req("POST", self.url(ds, t, "/segments"), list(params.items()), body)
        req.meta = (ds, t, start, end, fork)
        return req, True, must, f"append:{kind}"

    def case_scan(self):
        rng = self.rng
        ds, t = self.table_path()
        params = []
        for name, values in [("from_block", NUMBERS + [str(self.head)]), ("to_block", NUMBERS + [str(self.head)]),
                             ("limit", NUMBERS), ("columns", ["log_index", "log_index,value", "", ",", "nope",
                                                              "block_num,block_num", "value,,data", "\u00e9",
                                                              ",".join(["value"] * 1000)]),
                             ("filter", FILTERS), ("format", ["arrow", "jsonl", "parquet", "", "JSONL"])]:
            if rng.random() < 0.4:
                params.append((name, rng.choice(values)))
        if rng.random() < 0.05:
            params.append(("filter", rng.choice(FILTERS)))  # twice
        return Req("GET", self.url(ds, t, "/scan"), params), False, False, "scan"

    def case_listing(self):
        rng = self.rng
        ds, t = self.table_path()
        which = rng.choice(["tables", "dataset", "files", "history", "histogram", "passes", "gc", "table"])
        params = []
        for name, values in [("amount", NUMBERS + ["10000", "10001"]), ("after", NUMBERS + ["eth/logs", "\u00e9", "x" * 3000,
                                                                                            "eth/", "/", "%"]),
                             ("since_us", NUMBERS), ("bucket_s", NUMBERS)]:
            if rng.random() < 0.35:
                params.append((name, rng.choice(values)))
        path = {"tables": "/api/v1/tables",
                "dataset": f"/api/v1/datasets/{urllib.parse.quote(ds, safe='')}/tables",
                "table": self.url(ds, t)}.get(which) or self.url(ds, t, "/" + which)
        return Req("GET", path, params), False, False, f"list:{which}"

    def case_other(self):
        rng = self.rng
        ds, t = self.table_path()
        which = rng.choice(["compact", "compact-stream", "jobs", "job-start", "job-stop", "odd-method", "odd-route"])
        if which == "compact":
            return Req("POST", self.url(ds, t, "/compact")), True, False, which
        if which == "compact-stream":
            return Req("POST", self.url(ds, t, "/compact"), [("stream", "true")]), True, False, which
        if which == "jobs":
            return Req("GET", "/api/v1/jobs"), False, False, which
        if which in ("job-start", "job-stop"):
            return Req("POST", f"/api/v1/jobs/{urllib.parse.quote(rng.choice(['eth', 'nope', '..']), safe='')}/"
                               f"{which[4:]}"), True, False, which
        if which == "odd-method":
            return Req(rng.choice(["DELETE", "PATCH", "OPTIONS", "HEAD"]), self.url(ds, t, rng.choice(["", "/segments",
                                                                                                        "/files"]))), \
                True, False, which
        return Req(rng.choice(["GET", "POST"]), self.url(ds, t, rng.choice(["/x", "/segments/1", "/files/0", "//",
                                                                            "/scan/x"]))), True, False, which

    def case(self):
        rng = self.rng
        kind = rng.choices(["create", "append", "scan", "listing", "other"], weights=[12, 35, 25, 20, 8])[0]
        req, write, refuse, label = getattr(self, "case_" + kind)()
        if rng.random() < 0.08:
            req.auth = rng.choice([None, ("AKIANOSUCHKEY", "x"), (ADMIN[0], "wrong")])
            refuse = True
            label += ":unauthenticated"
        if req.body is not None and rng.random() < 0.05:
            req.headers["Content-Type"] = rng.choice(["application/json", "text/plain", "application/x-www-form-urlencoded",
                                                      "application/vnd.apache.arrow.stream"])
        return req, write, refuse, label

    def learn(self, req, reply):
        meta = getattr(req, "meta", None)
        if meta and reply.status_code == 201:
            ds, t, start, end, fork = meta
            if (ds, t) == ("eth", "logs"):
                for b in list(self.forks):
                    if b > end:
                        del self.forks[b]  # a reorg ends the chain at its end
                for b in range(start, end + 1):
                    self.forks[b] = fork
                self.head = end


def tables_state(server):
    """Every table's description and live files, and the number of appends in its history."""
    def get(path, **params):
        r = requests.get(server.url + path, params=params, auth=ADMIN, timeout=60)
        assert r.status_code == 200, (path, r.status_code, r.text[:300])
        return r.json()

    state = {}
    after = ""
    tables = []
    while True:
        page = get("/api/v1/tables", after=after)
        tables += page["tables"]
        if not page["pagination"]["has_more"]:
            break
        after = page["pagination"]["next_offset"]
    for t in tables:
        name = t.get("name") or f"{t.get('dataset')}.{t.get('table')}"
        ds, _, tb = name.partition(".")
        files, after = [], None
        while True:
            page = get(f"/api/v1/datasets/{ds}/tables/{tb}/files", **({"after": after} if after is not None else {}))
            files += page.get("files", page.get("results", []))
            if not page["pagination"]["has_more"]:
                break
            after = page["pagination"]["next_offset"]
        history = get(f"/api/v1/datasets/{ds}/tables/{tb}/history")
        appends = history.get("appends", history.get("results", history.get("history", [])))
        state[name] = (stable(t), tuple(sorted(repr(stable(f)) for f in files)), len(appends))
    return state


VOLATILE = {"age_s", "age_seconds", "now_us", "elapsed", "updated_us", "last_pass", "next_pass", "lease",
            "lease_until_us", "due", "backlog"}


def stable(obj):
    if isinstance(obj, dict):
        return tuple(sorted((k, stable(v)) for k, v in obj.items() if k not in VOLATILE))
    if isinstance(obj, list):
        return tuple(stable(v) for v in obj)
    return obj


def send(server, req):
    kw = dict(params=req.params, headers=req.headers, timeout=60, stream=True)
    if req.auth is not None:
        kw["auth"] = req.auth
    if req.body is not None:
        kw["data"] = req.body
    r = requests.request(req.method, server.url + req.path, **kw)
    try:
        r.content  # noqa: B018 - reads the (maybe streamed) body, which may end short
        r.cut = None
    except requests.exceptions.RequestException as e:
        r.cut = repr(e)
    return r


@pytest.fixture
def tables_server(start_server, tmp_path):
    env = {"SEDIMENT_WRITER_COMPACTOR_ACTIVE": "false"}
    server = start_server(env=env)
    set_up_admin(server)

    def restart():
        again = start_server(env=env, data_dir=server.data_dir, listen=f"127.0.0.1:{server.port}")
        again.restart = restart
        return again

    server.restart = restart
    return server


def test_fuzz_tables_api(tables_server):
    server = tables_server
    rng = random.Random(SEED)
    fz = TablesFuzzer(rng)
    for name, schema in [("logs", SCHEMA), ("blocks", BLOCKS_SCHEMA)]:
        r = requests.put(server.url + f"/api/v1/datasets/eth/tables/{name}", data=schema_bytes(schema), auth=ADMIN,
                         timeout=60)
        assert r.status_code == 201, r.text
    for start in range(1, 30, 3):
        r = requests.post(server.url + "/api/v1/datasets/eth/tables/logs/segments", auth=ADMIN, timeout=60, params={
            "start_block": start, "end_block": start + 2, "end_hash": block_hash(start + 2),
            "parent_hash": block_hash(start - 1)},
            data=ipc(rows(start, start + 2), block_hashes=[block_hash(b) for b in range(start, start + 3)]))
        assert r.status_code == 201, r.text
        fz.head = start + 2
    stats, findings = Counter(), []
    started = time.monotonic()
    baseline = tables_state(server)
    pending = []
    checks = 0

    def check():
        nonlocal baseline, pending, checks
        checks += 1
        now = tables_state(server)
        if now != baseline:
            changed = [k for k in set(now) | set(baseline) if now.get(k) != baseline.get(k)]
            findings.append((f"state of {sorted(changed)} changed by refused requests",
                             "\n".join(f"[{label}] -> {status}\n{req.describe()}" for req, label, status in pending[-20:])))
        baseline, pending = now, []

    sent, crashes, last = 0, 0, None
    for _ in range(CASES):
        req, write, refuse, label = fz.case()
        if write and not refuse and pending:
            check()
        log_mark = len(server.lines)
        sent += 1
        try:
            r = send(server, req)
            failure = r.cut
        except requests.exceptions.RequestException as e:
            r, failure = None, repr(e)
        if failure and died(server):
            crashes += 1
            findings.append(("crash", f"exit code {server.proc.wait()} at case {sent}: [{label}]\n{req.describe()}\n"
                                      f"(the request before: {last})\nthe server's last lines:\n"
                                      + "\n".join(server.lines[-5:])))
            if crashes > MAX_CRASHES:
                break
            server = server.restart()  # and go on: one crash should not hide what comes after it
            baseline, pending = tables_state(server), []
            continue
        if r is None:
            findings.append((f"no reply: {failure}"[:300], f"[{label}]\n{req.describe()}"))
            continue
        stats[r.status_code // 100 * 100] += 1
        stats[label.split(":")[0]] += 1
        log = "\n".join(line for line in server.lines[log_mark:] if " info " not in line)[-1500:]
        if r.status_code >= 500:
            findings.append((f"{r.status_code} {r.text[:300]}", f"[{label}]\n{req.describe()}\nserver log: {log}"))
        if r.cut:
            findings.append((f"{r.status_code}, then the body was cut short: {r.cut}"[:400],
                             f"[{label}]\n{req.describe()}\nserver log: {log}"))
        ok = 200 <= r.status_code < 300
        if ok and refuse:
            findings.append((f"accepted ({r.status_code}) a request that must be refused",
                             f"[{label}]\n{req.describe()}\n-> {r.text[:300]}"))
        last = f"[{label}] {req.describe()[:500]} -> {r.status_code}"
        fz.learn(req, r)
        if ok and write:
            pending = []
            baseline = tables_state(server)
        else:
            pending.append((req, label, r.status_code))
            if len(pending) >= 40:
                check()
    if server.proc.poll() is None:
        check()
    elapsed = time.monotonic() - started
    alive = server.proc.poll() is None
    summary = (f"{sent} cases in {elapsed:.1f} s (seed {SEED}; {checks} state checks; {crashes} crashes; 2xx {stats[200]}, "
               f"4xx {stats[400]}, 5xx {stats[500]}; appends {stats['append']}, scans {stats['scan']}; "
               f"chain head {fz.head}; findings {len(findings)}; server {'alive' if alive else 'DEAD'})")
    print("tables API fuzzer:", summary)
    record_line("fuzz-counts.txt", "tables-api", summary)
    report = artifact("fuzz-tables-findings.txt")
    report.write_text(summary + "\n\n" + "\n\n".join(f"### {a}\n{b}" for a, b in findings))
    assert alive and not crashes, f"the server died {crashes} time(s): see {report}"
    assert not findings, f"{len(findings)} findings (all in {report}); the first:\n" + \
        "\n\n".join(f"### {a}\n{b}" for a, b in findings[:5])
