"""The evm-rpc source against a real Ethereum node: Hardhat Network, started by scripts/hardhat.sh.

Real transactions (transfers, a contract deployed from its bytecode, calls that emit events); the
tables must equal what the node answers for every block (eth_getBlockByNumber, eth_getLogs,
receipts), through a reorg made by evm_snapshot / evm_revert, and through a node that is down,
busy or slow for a while (a proxy in front of it)."""
import collections
import http.server
import json
import os
import socketserver
import subprocess
import threading
import time
from pathlib import Path

import decimal

import pyarrow as pa
import pytest
import requests

from conftest import eventually

ROOT = Path(__file__).resolve().parent.parent

# Runtime: copy the calldata to memory, LOG2(memory, topic0 = TOPIC, topic1 = caller), stop.
TOPIC = "ab" * 32
RUNTIME = "36600060003733" + "7f" + TOPIC + "366000a200"
INIT = "602d80600b6000396000f3"  # copy the 45-byte runtime after these 11 bytes, return it
assert len(RUNTIME) // 2 == 0x2d


class Node:
    def __init__(self, url):
        self.url = url
        self.s = requests.Session()

    def rpc(self, method, *params):
        r = self.s.post(self.url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)},
                        timeout=30)
        j = r.json()
        assert "error" not in j, (method, j)
        return j["result"]

    def latest(self):
        return int(self.rpc("eth_blockNumber"), 16)

    def send(self, frm, to=None, value=0, data="0x", **fees):
        """fees: gasPrice (a legacy transaction), with accessList (EIP-2930), or maxFeePerGas and
        maxPriorityFeePerGas (EIP-1559, the default after London)."""
        tx = {"from": frm, "value": hex(value), "data": data, "gas": hex(300000), **fees}
        if to:
            tx["to"] = to
        h = self.rpc("eth_sendTransaction", tx)
        return self.rpc("eth_getTransactionReceipt", h)


class Proxy:
    """Forwards JSON-RPC to the node; `mode` makes it answer as a node in trouble does."""

    def __init__(self, target, tls=None, require=None, logs_limit=None):
        """tls: an ssl.SSLContext to serve https with; require: headers every request must carry
        (else 401), as a hosted provider checks its API key; logs_limit: the most blocks an eth_getLogs
        may span (more is answered with Infura's error), as providers limit it."""
        self.target = target
        self.mode = "ok"
        self.requests = 0
        self.refused = 0
        self.require = require or {}
        self.logs_limit = logs_limit
        self.calls = collections.Counter()  # JSON-RPC calls by method
        self.too_many = 0
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                proxy.requests += 1
                if any(self.headers.get(k) != v for k, v in proxy.require.items()):
                    proxy.refused += 1
                    self.send_response(401)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                mode = proxy.mode
                if mode == "down":
                    self.close_connection = True
                    self.connection.close()
                    return
                if mode in ("503", "429"):
                    self.send_response(int(mode))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if mode == "slow":
                    time.sleep(1.5)
                calls = json.loads(body)
                calls = calls if isinstance(calls, list) else [calls]
                proxy.calls.update(c["method"] for c in calls)
                refused = {}
                if proxy.logs_limit is not None:
                    for c in calls:
                        if c["method"] == "eth_getLogs":
                            f = c["params"][0]
                            if int(f["toBlock"], 16) - int(f["fromBlock"], 16) + 1 > proxy.logs_limit:
                                refused[c["id"]] = {"code": -32005, "message": "query returned more than 10000 results"}
                    proxy.too_many += len(refused)
                r = requests.post(proxy.target, data=body, headers={"content-type": "application/json"}, timeout=30)
                content = r.content
                if refused:
                    answers = json.loads(content)
                    for a in (answers if isinstance(answers, list) else [answers]):
                        if a.get("id") in refused:
                            a.pop("result", None)
                            a["error"] = refused[a["id"]]
                    content = json.dumps(answers).encode()
                if mode == "no_logs":
                    # A provider whose log index lags its blocks: eth_getLogs answers [] for blocks it has.
                    answers = json.loads(content)
                    methods = {c["id"]: c["method"] for c in calls}
                    for a in (answers if isinstance(answers, list) else [answers]):
                        if methods.get(a.get("id")) == "eth_getLogs" and "result" in a:
                            a["result"] = []
                    content = json.dumps(answers).encode()
                if mode == "null":
                    # A node that has not got the blocks yet (behind its own head, or catching up after a restart).
                    calls = json.loads(body)
                    answers = json.loads(content)
                    methods = {c["id"]: c["method"] for c in (calls if isinstance(calls, list) else [calls])}
                    for a in (answers if isinstance(answers, list) else [answers]):
                        if methods.get(a.get("id")) == "eth_getBlockByNumber":
                            a["result"] = None
                    content = json.dumps(answers).encode()
                self.send_response(r.status_code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

        self.server = Server(("127.0.0.1", 0), Handler)
        scheme = "http"
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


def start_node(d, hardfork=None):
    env = dict(os.environ, **({"HARDHAT_HARDFORK": hardfork} if hardfork else {}))
    out = subprocess.run([str(ROOT / "scripts" / "hardhat.sh"), "start", str(d)], capture_output=True, text=True,
                         check=True, timeout=300, env=env).stdout
    return Node(out.strip().splitlines()[-1].split("=", 1)[1])


@pytest.fixture
def node(tmp_path):
    d = tmp_path / "hardhat"
    yield start_node(d)
    subprocess.run([str(ROOT / "scripts" / "hardhat.sh"), "stop", str(d)], check=False)


@pytest.fixture
def berlin_node(tmp_path):
    """A chain before London: no base fee, legacy and access-list transactions only."""
    d = tmp_path / "hardhat-berlin"
    yield start_node(d, "berlin")
    subprocess.run([str(ROOT / "scripts" / "hardhat.sh"), "stop", str(d)], check=False)


def start(start_server, tmp_path, url, extra=""):
    cfg = tmp_path / "sediment.toml"
    cfg.write_text(f"""
[worker]
poll_interval_secs = 0.2
[writer]
max_reorg_depth = 64
[writer.compactor]
min_interval = 0.5
cooldown_duration = 1.0
[[jobs]]
dataset = "eth"
source = "evm-rpc"
url = "{url}"
batch_size = 3
concurrency = 2
max_reorg_depth = 16
timeout = 1.0
{extra}
""")
    return start_server("--config", str(cfg))


def job(server):
    return server.get("/api/v1/jobs").json()["jobs"][0]


def wait_for(server, node, what="the tables to reach the node's head", timeout=60):
    def at_head():
        j = job(server)
        head = node.latest()
        hashes = scan(server, "blocks")
        if (all(v == head for v in j["last_block"].values()) and len(j["last_block"]) == 3 and hashes
                and hashes[-1]["hash"] == node.rpc("eth_getBlockByNumber", hex(head), False)["hash"]):
            return j
        return None
    return eventually(at_head, timeout=timeout, interval=0.2, what=what)


def scan(server, table):
    r = server.get(f"/api/v1/datasets/eth/tables/{table}/scan", params={"format": "jsonl"})
    if r.status_code == 404:
        return []
    assert r.status_code == 200, r.text
    return [json.loads(x) for x in r.text.splitlines() if x]


def q(hexstr):
    return int(hexstr, 16)


def u256(hexstr):
    return "0x" + format(int(hexstr, 16), "064x")


def plain(v):
    """Arrow values as the node writes them: bytes as 0x-hex, decimals as ints."""
    if isinstance(v, bytes):
        return "0x" + v.hex()
    if isinstance(v, decimal.Decimal):
        return int(v)
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    return v


def arrow_scan(server, table):
    """The table's schema and rows through the scan API's Arrow stream (timestamps as integers)."""
    r = server.get(f"/api/v1/datasets/eth/tables/{table}/scan", params={"format": "arrow"})
    assert r.status_code == 200, r.text
    t = pa.ipc.open_stream(r.content).read_all()
    cols = {}
    for f in t.schema:
        c = t.column(f.name)
        if pa.types.is_timestamp(f.type):
            c = c.cast(pa.int64())
        cols[f.name] = [plain(v) for v in c.to_pylist()]
    return t.schema, [dict(zip(cols, vals)) for vals in zip(*cols.values())]


def opt(v, conv=q):
    return None if v is None else conv(v)


def want_block(nb):
    """A block's row as Amp's evm-rpc dataset has it (docs/chain.md), from the node's answer."""
    return {"block_num": q(nb["number"]), "timestamp": q(nb["timestamp"]) * 10**9, "hash": nb["hash"],
            "parent_hash": nb["parentHash"], "ommers_hash": nb["sha3Uncles"], "miner": nb["miner"],
            "state_root": nb["stateRoot"], "transactions_root": nb["transactionsRoot"],
            "receipt_root": nb["receiptsRoot"], "logs_bloom": nb["logsBloom"], "difficulty": q(nb["difficulty"]),
            "total_difficulty": opt(nb.get("totalDifficulty")), "gas_limit": q(nb["gasLimit"]),
            "gas_used": q(nb["gasUsed"]), "extra_data": nb["extraData"],
            "mix_hash": nb.get("mixHash", "0x" + "00" * 32), "nonce": q(nb.get("nonce", "0x0")),
            "base_fee_per_gas": opt(nb.get("baseFeePerGas")), "withdrawals_root": nb.get("withdrawalsRoot"),
            "blob_gas_used": opt(nb.get("blobGasUsed")), "excess_blob_gas": opt(nb.get("excessBlobGas")),
            "parent_beacon_root": nb.get("parentBeaconBlockRoot")}


def want_tx(nb, i, tx, rc):
    t = q(tx.get("type", "0x0"))
    v = q(tx["v"])
    if t == 0:
        parity, chain = ((v - 35) % 2 == 1, (v - 35) // 2) if v >= 35 else (v == 28, None)
    else:
        if "yParity" in tx:
            parity = q(tx["yParity"]) == 1
        else:
            parity = v == 1 if v <= 1 else v == 28 if v in (27, 28) else (v - 35) % 2 == 1
        chain = q(tx["chainId"])
    fee_cap = q(tx["gasPrice"]) if t < 2 else q(tx["maxFeePerGas"])
    return {"block_hash": nb["hash"], "block_num": q(nb["number"]), "timestamp": q(nb["timestamp"]) * 10**9,
            "tx_index": i, "tx_hash": tx["hash"], "to": tx.get("to"), "nonce": q(tx["nonce"]),
            "gas_price": q(tx["gasPrice"]) if t < 2 else None, "gas_limit": q(tx["gas"]),
            "value": str(q(tx["value"])), "input": tx["input"], "r": u256(tx["r"]), "s": u256(tx["s"]),
            "v_parity": parity, "chain_id": chain, "gas_used": q(rc["cumulativeGasUsed"]), "type": t,
            "max_fee_per_gas": fee_cap,
            "max_priority_fee_per_gas": q(tx["maxPriorityFeePerGas"]) if t >= 2 else None,
            "max_fee_per_blob_gas": q(tx["maxFeePerBlobGas"]) if t == 3 else None, "from": tx["from"],
            "status": q(rc["status"]) == 1,
            "access_list": None if t == 0 or t > 4 else [{"address": a["address"], "storage_keys": a["storageKeys"]}
                                                for a in tx.get("accessList", [])],
            "blob_versioned_hashes": tx.get("blobVersionedHashes") if t == 3 else None}


def want_log(lg, timestamp):
    topics = lg["topics"] + [None] * (4 - len(lg["topics"]))
    return {"block_hash": lg["blockHash"], "block_num": q(lg["blockNumber"]), "timestamp": timestamp * 10**9,
            "tx_hash": lg["transactionHash"], "tx_index": q(lg["transactionIndex"]), "log_index": q(lg["logIndex"]),
            "address": lg["address"], "topic0": topics[0], "topic1": topics[1], "topic2": topics[2],
            "topic3": topics[3], "data": lg["data"]}


# Amp's evm-rpc schema (docs/schemas/evm-rpc.md in edgeandnode/amp), less _block_num.
AMP_TYPES = {
    "blocks": ["uint64", "timestamp[ns, tz=+00:00]", "fixed_size_binary[32]", "fixed_size_binary[32]",
               "fixed_size_binary[32]", "fixed_size_binary[20]", "fixed_size_binary[32]", "fixed_size_binary[32]",
               "fixed_size_binary[32]", "binary", "decimal128(38, 0)", "decimal128(38, 0)", "uint64", "uint64",
               "binary", "fixed_size_binary[32]", "uint64", "decimal128(38, 0)", "fixed_size_binary[32]", "uint64",
               "uint64", "fixed_size_binary[32]"],
    "transactions": ["fixed_size_binary[32]", "uint64", "timestamp[ns, tz=+00:00]", "uint32", "fixed_size_binary[32]",
                     "fixed_size_binary[20]", "uint64", "decimal128(38, 0)", "uint64", "string", "binary",
                     "fixed_size_binary[32]", "fixed_size_binary[32]", "bool", "uint64", "uint64", "int32",
                     "decimal128(38, 0)", "decimal128(38, 0)", "decimal128(38, 0)", "fixed_size_binary[20]", "bool",
                     "list<item: struct<address: fixed_size_binary[20], storage_keys: list<item: "
                     "fixed_size_binary[32]>>>", "list<item: fixed_size_binary[32]>"],
    "logs": ["fixed_size_binary[32]", "uint64", "timestamp[ns, tz=+00:00]", "fixed_size_binary[32]", "uint32",
             "uint32", "fixed_size_binary[20]", "fixed_size_binary[32]", "fixed_size_binary[32]",
             "fixed_size_binary[32]", "fixed_size_binary[32]", "binary"],
}


# The columns Amp's schema lets be null.
AMP_NULLABLE = {"total_difficulty", "base_fee_per_gas", "withdrawals_root", "blob_gas_used", "excess_blob_gas",
                "parent_beacon_root", "to", "gas_price", "chain_id", "max_fee_per_gas", "max_priority_fee_per_gas",
                "max_fee_per_blob_gas", "access_list", "blob_versioned_hashes", "topic0", "topic1", "topic2",
                "topic3"}


def expect_tables_equal_the_node(server, node, blocks_from=0, project=None):
    """Every column of every row equals what the node answers. `project`: row -> the part of it to
    compare (the columns an upgraded table's new rows have with Amp's meaning)."""
    project = project or (lambda table, row: row)
    head = node.latest()
    _, blocks = arrow_scan(server, "blocks")
    assert [b["block_num"] for b in blocks] == list(range(head + 1)), "every block once, none missing"
    want_blocks, want_txs, want_logs, times = [], [], [], {}
    for n in range(head + 1):
        nb = node.rpc("eth_getBlockByNumber", hex(n), True)
        times[n] = q(nb["timestamp"])
        want_blocks.append(want_block(nb))
        for i, tx in enumerate(nb["transactions"]):
            want_txs.append(want_tx(nb, i, tx, node.rpc("eth_getTransactionReceipt", tx["hash"])))
    for lg in node.rpc("eth_getLogs", {"fromBlock": "0x0", "toBlock": hex(head)}):
        want_logs.append(want_log(lg, times[q(lg["blockNumber"])]))
    _, txs = arrow_scan(server, "transactions")
    _, logs = arrow_scan(server, "logs")
    for table, got, want in (("blocks", blocks, want_blocks), ("transactions", txs, want_txs),
                             ("logs", logs, want_logs)):
        got = [project(table, g) for g in got if g["block_num"] >= blocks_from]
        want = [project(table, w) for w in want if w["block_num"] >= blocks_from]
        assert len(got) == len(want), table
        for g, w in zip(got, want):
            assert g == w, (table, {k: (g.get(k), w.get(k)) for k in w if g.get(k) != w.get(k)})
    return len(blocks), len(txs), len(logs)


def traffic(node, n, salt=0):
    """n blocks of transactions (automine: one block each): transfers and calls that emit events."""
    accounts = node.rpc("eth_accounts")
    created = node.send(accounts[0], data="0x" + INIT + RUNTIME)
    contract = created["contractAddress"]
    for i in range(n):
        if i % 2 == 0:
            node.send(accounts[1 + i % 5], to=contract, data="0x" + format(salt * 1000 + i, "064x") + "beef")
        else:
            node.send(accounts[1 + i % 5], to=accounts[9], value=10**18 + i + salt)
    return contract


def every_type(node, london=True):
    """A legacy, an access-list and (after London) a fee-cap transaction, to a contract and to an account."""
    a = node.rpc("eth_accounts")
    price = hex(3 * 10**9)
    access = [{"address": a[7], "storageKeys": ["0x" + "00" * 31 + "01", "0x" + "ab" * 32]}]
    kinds = [dict(gasPrice=price), dict(gasPrice=price, accessList=access)]
    if london:
        kinds.append(dict(maxFeePerGas=hex(4 * 10**9), maxPriorityFeePerGas=hex(10**9), accessList=access))
    for k, fees in enumerate(kinds):
        node.send(a[6], to=a[8], value=k + 1, **fees)


def test_the_tables_equal_what_the_node_answers(start_server, tmp_path, node):
    traffic(node, 12)
    every_type(node)
    server = start(start_server, tmp_path, node.url)
    wait_for(server, node)
    blocks, txs, logs = expect_tables_equal_the_node(server, node)
    assert blocks == node.latest() + 1 and txs == 16 and logs == 6
    for table, types in AMP_TYPES.items():
        schema, rows = arrow_scan(server, table)
        assert [str(f.type) for f in schema] == types, table
    assert {t["type"] for t in arrow_scan(server, "transactions")[1]} == {0, 1, 2}
    # At the head: new blocks arrive as segments.
    traffic(node, 4, salt=1)
    j = wait_for(server, node)
    expect_tables_equal_the_node(server, node)
    assert j["source"] == "evm-rpc" and j["last_error"] == "" and j["lag"] == 0 and j["node_head"] == node.latest()
    out = server.cli("job", "list")
    assert out[0] == 0 and "evm-rpc" in out[1], out


def test_a_reorg_is_followed_exactly(start_server, tmp_path, node):
    traffic(node, 6)
    server = start(start_server, tmp_path, node.url)
    wait_for(server, node)
    fork = node.latest()
    snap = node.rpc("evm_snapshot")
    traffic(node, 4, salt=2)  # blocks fork+1 .. fork+5 on the branch that will be dropped
    wait_for(server, node)
    dropped = node.rpc("eth_getBlockByNumber", hex(fork + 1), False)["hash"]
    assert node.rpc("evm_revert", snap) is True
    assert node.latest() == fork
    for _ in range(3):
        node.rpc("evm_mine")  # empty blocks on the new branch (it is shorter than the dropped one)
    traffic(node, 5, salt=3)  # and longer now
    j = wait_for(server, node, "the tables to follow the new branch")
    assert j["reorgs"] >= 1
    assert node.rpc("eth_getBlockByNumber", hex(fork + 1), False)["hash"] != dropped
    expect_tables_equal_the_node(server, node)


def test_a_node_in_trouble_is_retried_and_nothing_partial_is_written(start_server, tmp_path, node):
    proxy = Proxy(node.url)
    try:
        traffic(node, 4)
        server = start(start_server, tmp_path, proxy.url)
        wait_for(server, node)
        for mode in ("down", "503", "429", "slow"):
            before = job(server)["retries"]
            proxy.mode = mode
            traffic(node, 2, salt=ord(mode[0]))
            eventually(lambda: job(server)["retries"] > before and job(server)["last_error"], timeout=30,
                       what=f"a retry and an error while the node is '{mode}'")
            j = job(server)
            assert j["retries"] > before and j["last_error"], (mode, j)
            proxy.mode = "ok"
            wait_for(server, node, f"the job to recover after '{mode}'")
            assert job(server)["last_error"] == ""
        # A node that answers null for blocks it has not got: the poll fails naming the block, writes nothing.
        written = job(server)["last_block"]
        proxy.mode = "null"
        traffic(node, 2, salt=9)
        eventually(lambda: "no such block" in job(server)["last_error"], timeout=30, what="the null block's error")
        j = job(server)
        assert "no such block" in j["last_error"] and "block " in j["last_error"], j
        assert j["last_block"] == written, "nothing written while the node has no blocks"
        proxy.mode = "ok"
        wait_for(server, node, "the job to recover after null blocks")
        expect_tables_equal_the_node(server, node)
    finally:
        proxy.close()


def make_ca_and_cert(d):
    """A CA of the test's own and a certificate it issued for 127.0.0.1; returns (ca.pem, cert, key)."""
    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=d)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=sediment test CA")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "node.key", "-out", "node.csr", "-subj",
            "/CN=127.0.0.1")
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out",
            "node.pem", "-days", "2", "-extfile", "ext.cnf")
    return d / "ca.pem", d / "node.pem", d / "node.key"


def test_an_https_node_with_its_own_ca_basic_auth_and_an_api_key(start_server, tmp_path, node):
    import base64
    import ssl
    ca, cert, key = make_ca_and_cert(tmp_path)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    auth = "Basic " + base64.b64encode(b"indexer:s3cret").decode()
    proxy = Proxy(node.url, tls=ctx, require={"Authorization": auth, "x-api-key": "k-123"})
    try:
        traffic(node, 4)
        url = proxy.url.replace("https://", "https://indexer:s3cret@")
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        # Without the CA, the node's certificate is not trusted: the job says so and writes nothing.
        untrusted = start(start_server, tmp_path / "a", url, 'headers = ["x-api-key: k-123"]')
        err = eventually(lambda: job(untrusted)["last_error"], timeout=30, what="the certificate error")
        assert "certificate" in err and "s3cret" not in err, err
        assert scan(untrusted, "blocks") == [] and proxy.requests == 0
        untrusted.stop()
        # With it (and the credentials the provider wants), the tables follow the node over TLS.
        server = start(start_server, tmp_path / "b", url, f'headers = ["x-api-key: k-123"]\nca_file = "{ca}"')
        wait_for(server, node)
        expect_tables_equal_the_node(server, node)
        assert proxy.requests > 0 and proxy.refused == 0
        assert "s3cret" not in server.get("/api/v1/jobs").text
    finally:
        proxy.close()


def test_bad_job_settings_are_refused_naming_them(tmp_path):
    from conftest import run_sediment
    for bad, says in ((' url = "ftp://x"', "jobs.url"), (' finality = "soon"', "jobs.finality"),
                      (' url = "https://x"\n ca_file = "/nope.pem"', "jobs.ca_file"),
                      (' url = "https://x"\n headers = ["no colon"]', "jobs.headers"),
                      (' batch_size = 0', "jobs.batch_size"), ('', "needs the node's url"),
                      (' url = "http://x"\n tables = ["blocks", "receipts"]', '"receipts" is not a table'),
                      (' url = "http://x"\n tables = []', "jobs.tables"),
                      (' url = "http://x"\n logs_from = "bloom"', "jobs.logs_from"),
                      (' url = "http://x"\n logs_range = 0', "jobs.logs_range")):
        cfg = tmp_path / "bad.toml"
        cfg.write_text(f'[[jobs]]\ndataset = "eth"\nsource = "evm-rpc"\n{bad}\n')
        code, out = run_sediment("serve", "--config", str(cfg), "--data-dir", str(tmp_path / "d"))
        assert code != 0 and says in out, (bad, out)


def test_finality_keeps_the_tables_behind_the_head(start_server, tmp_path, node):
    traffic(node, 8)
    server = start(start_server, tmp_path, node.url, extra='finality = "3"')
    head = node.latest()
    eventually(lambda: set(job(server)["last_block"].values()) == {head - 3} and len(job(server)["last_block"]) == 3,
               timeout=30, what="the tables to reach the head less 3")
    j = job(server)
    assert j["head"] == head - 3 and j["node_head"] == head and j["lag"] == 3, j
    assert [b["block_num"] for b in scan(server, "blocks")] == list(range(head - 2))


def test_a_chain_before_london(start_server, tmp_path, berlin_node):
    """No base fee and no withdrawals or blob fields in the blocks; legacy and access-list transactions."""
    node = berlin_node
    traffic(node, 4)
    every_type(node, london=False)
    server = start(start_server, tmp_path, node.url)
    wait_for(server, node)
    expect_tables_equal_the_node(server, node)
    _, blocks = arrow_scan(server, "blocks")
    assert all(b["base_fee_per_gas"] is None and b["withdrawals_root"] is None for b in blocks)
    assert {t["type"] for t in arrow_scan(server, "transactions")[1]} == {0, 1}


# The tables as Sediment's first evm-rpc source made them (schema version 1).
LEGACY = {
    "blocks": pa.schema([("block_num", pa.uint64(), False), ("hash", pa.binary(32), False),
                         ("parent_hash", pa.binary(32), False), ("timestamp", pa.uint64(), False),
                         ("miner", pa.binary(20), False), ("gas_used", pa.uint64(), False),
                         ("gas_limit", pa.uint64(), False), ("base_fee_per_gas", pa.uint64()),
                         ("tx_count", pa.uint32(), False)]),
    "transactions": pa.schema([("block_num", pa.uint64(), False), ("tx_index", pa.uint32(), False),
                               ("hash", pa.binary(32), False), ("from", pa.binary(20), False), ("to", pa.binary(20)),
                               ("value", pa.binary(32), False), ("input", pa.binary(), False),
                               ("gas", pa.uint64(), False), ("gas_price", pa.uint64()), ("type", pa.uint8(), False),
                               ("nonce", pa.uint64(), False), ("status", pa.uint8()), ("gas_used", pa.uint64(), False),
                               ("contract_address", pa.binary(20))]),
    "logs": pa.schema([("block_num", pa.uint64(), False), ("tx_index", pa.uint32(), False),
                       ("log_index", pa.uint32(), False), ("tx_hash", pa.binary(32), False),
                       ("address", pa.binary(20), False), ("topic0", pa.binary(32)), ("topic1", pa.binary(32)),
                       ("topic2", pa.binary(32)), ("topic3", pa.binary(32)), ("data", pa.binary(), False)]),
}


def legacy_rows(node, head):
    """Blocks 0..head as the first source wrote them, from the node's answers."""
    b = lambda h: None if h is None else bytes.fromhex(h[2:])  # noqa: E731
    rows = {"blocks": [], "transactions": [], "logs": []}
    for n in range(head + 1):
        nb = node.rpc("eth_getBlockByNumber", hex(n), True)
        rows["blocks"].append([n, b(nb["hash"]), b(nb["parentHash"]), q(nb["timestamp"]), b(nb["miner"]),
                               q(nb["gasUsed"]), q(nb["gasLimit"]), opt(nb.get("baseFeePerGas")),
                               len(nb["transactions"])])
        for i, tx in enumerate(nb["transactions"]):
            rc = node.rpc("eth_getTransactionReceipt", tx["hash"])
            rows["transactions"].append([n, i, b(tx["hash"]), b(tx["from"]), b(tx.get("to")), b(u256(tx["value"])),
                                         b(tx["input"]), q(tx["gas"]), opt(tx.get("gasPrice")),
                                         q(tx.get("type", "0x0")), q(tx["nonce"]), q(rc["status"]),
                                         q(rc["gasUsed"]), b(rc.get("contractAddress"))])
            for lg in rc["logs"]:
                topics = [b(t) for t in lg["topics"]] + [None] * (4 - len(lg["topics"]))
                rows["logs"].append([n, i, q(lg["logIndex"]), b(tx["hash"]), b(lg["address"]), *topics,
                                     b(lg["data"])])
    return rows


def test_a_table_of_the_first_schema_is_upgraded_in_place(start_server, tmp_path, node):
    """Tables written by the first evm-rpc source keep their columns and rows; they gain Amp's columns
    as nullable ones (a recorded schema change, seen by Iceberg readers as a schema update), the old
    rows read with nulls in them, and the source goes on from where the tables end."""
    from tables_util import ipc
    traffic(node, 4)
    head = node.latest()
    (tmp_path / "no-jobs.toml").write_text("")
    old = start_server("--config", str(tmp_path / "no-jobs.toml"))
    legacy = legacy_rows(node, head)
    hashes = [node.rpc("eth_getBlockByNumber", hex(n), False)["hash"][2:] for n in range(head + 1)]
    for table, schema in LEGACY.items():
        assert old.put(f"/api/v1/datasets/eth/tables/{table}", data=ipc(schema=schema)).status_code in (200, 201)
        batch = pa.RecordBatch.from_pylist([dict(zip(schema.names, r)) for r in legacy[table]], schema=schema)
        r = old.post(f"/api/v1/datasets/eth/tables/{table}/segments",
                     params={"start_block": 0, "end_block": head, "end_hash": hashes[-1], "parent_hash": "00" * 32},
                     data=ipc(batch, schema=schema, block_hashes=hashes))
        assert r.status_code in (200, 201), r.text
    before = {t: arrow_scan(old, t)[1] for t in LEGACY}
    old.stop()

    traffic(node, 3, salt=5)
    every_type(node)
    server = start(start_server, tmp_path, node.url)
    wait_for(server, node)
    for table, schema in LEGACY.items():
        got_schema, rows = arrow_scan(server, table)
        assert got_schema.names[:len(schema)] == schema.names and got_schema.field("block_num").type == pa.uint64()
        assert all(got_schema.field(n).type == schema.field(n).type for n in schema.names), table
        added = [f for f in got_schema if f.name not in schema.names]
        assert added and all(f.nullable for f in added), table
        # Nothing lost: the old rows as they were, with nulls in the new columns.
        old_rows = [r for r in rows if r["block_num"] <= head]
        assert [{k: r[k] for k in schema.names} for r in old_rows] == before[table], table
        assert all(r[f.name] is None for r in old_rows for f in added), table
        # The new rows have every column.
        new_rows = [r for r in rows if r["block_num"] > head]
        assert new_rows and all(r[f.name] is not None for r in new_rows for f in added
                                if f.name not in AMP_NULLABLE), table

    # Amp's columns of the new rows equal the node (those the first schema had keep their meaning).
    def amp_part(table, row):
        return {k: v for k, v in row.items() if k not in LEGACY[table].names}
    expect_tables_equal_the_node(server, node, blocks_from=head + 1, project=amp_part)
    # The schema change is recorded: Iceberg readers see a second schema, the first one's ids unchanged.
    r = server.get("/iceberg/v1/namespaces/eth/tables/blocks")
    assert r.status_code == 200, r.text
    meta = r.json()["metadata"]
    assert meta["current-schema-id"] == 1 and [s["schema-id"] for s in meta["schemas"]] == [0, 1]
    first, now = meta["schemas"]
    assert now["fields"][:len(first["fields"])] == first["fields"]
    assert [f["name"] for f in now["fields"]][len(first["fields"]):] == [
        f.name for f in arrow_scan(server, "blocks")[0] if f.name not in LEGACY["blocks"].names]
    # Engines read the old files through the new schema, with nulls in the new columns.
    from test_iceberg import engine
    got = engine({"engine": "pyiceberg", "uri": server.url + "/iceberg", "table": "eth.transactions",
                  "columns": ["block_num", "hash", "tx_hash", "v_parity"]})["columns"]
    assert len(got["block_num"]) == len(arrow_scan(server, "transactions")[1])
    for n, h, th, p in zip(got["block_num"], got["hash"], got["tx_hash"], got["v_parity"]):
        assert (th is None and p is None) if n <= head else (th == h and p is not None), (n, h, th, p)
    counts = engine({"engine": "duckdb", "uri": server.url + "/iceberg",
                     "sql": [f"SELECT count(*), count(state_root), count(*) FILTER (block_num > {head}) "
                             "FROM sed.eth.blocks"]})["results"][0][0]
    assert counts[0] == node.latest() + 1 and counts[1] == counts[2] == node.latest() - head, counts


def test_logs_by_range_with_eth_getlogs_and_no_receipts(start_server, tmp_path, node):
    """A job that writes blocks and logs only reads the logs with eth_getLogs over block ranges (split
    when the provider says a range holds too many results) and asks for no receipt at all."""
    proxy = Proxy(node.url, logs_limit=3)
    try:
        traffic(node, 12)
        server = start(start_server, tmp_path, proxy.url, 'tables = ["blocks", "logs"]\nlogs_range = 8')
        head = node.latest()
        eventually(lambda: job(server)["last_block"] == {"blocks": head, "logs": head}, timeout=60,
                   what="blocks and logs at the node's head")
        assert scan(server, "transactions") == []
        _, blocks = arrow_scan(server, "blocks")
        times = {b["block_num"]: b["timestamp"] // 10**9 for b in blocks}
        assert [b["block_num"] for b in blocks] == list(range(head + 1))
        want = [want_log(lg, times[q(lg["blockNumber"])])
                for lg in node.rpc("eth_getLogs", {"fromBlock": "0x0", "toBlock": hex(head)})]
        assert arrow_scan(server, "logs")[1] == want and len(want) == 6
        assert proxy.calls["eth_getLogs"] > 0 and proxy.too_many > 0, proxy.calls
        assert proxy.calls["eth_getBlockReceipts"] == 0 and proxy.calls["eth_getTransactionReceipt"] == 0, proxy.calls
        # eth_getLogs answers nothing for blocks that have logs (their logsBloom says so): those logs
        # are read from the receipts, and nothing is lost.
        proxy.mode = "no_logs"
        traffic(node, 4, salt=3)
        head = node.latest()
        eventually(lambda: job(server)["last_block"] == {"blocks": head, "logs": head}, timeout=60,
                   what="blocks and logs at the head again")
        times = {b["block_num"]: b["timestamp"] // 10**9 for b in arrow_scan(server, "blocks")[1]}
        want = [want_log(lg, times[q(lg["blockNumber"])])
                for lg in node.rpc("eth_getLogs", {"fromBlock": "0x0", "toBlock": hex(head)})]
        assert arrow_scan(server, "logs")[1] == want and len(want) == 8
        assert proxy.calls["eth_getBlockReceipts"] + proxy.calls["eth_getTransactionReceipt"] > 0, proxy.calls
    finally:
        proxy.close()


def test_logs_from_receipts_when_asked(start_server, tmp_path, node):
    proxy = Proxy(node.url)
    try:
        traffic(node, 4)
        server = start(start_server, tmp_path, proxy.url, 'tables = ["logs"]\nlogs_from = "receipts"')
        head = node.latest()
        eventually(lambda: job(server)["last_block"] == {"logs": head}, timeout=60, what="logs at the head")
        times = {n: q(node.rpc("eth_getBlockByNumber", hex(n), False)["timestamp"]) for n in range(head + 1)}
        want = [want_log(lg, times[q(lg["blockNumber"])])
                for lg in node.rpc("eth_getLogs", {"fromBlock": "0x0", "toBlock": hex(head)})]
        assert arrow_scan(server, "logs")[1] == want
        assert proxy.calls["eth_getLogs"] == 0 and proxy.calls["eth_getBlockReceipts"] > 0, proxy.calls
    finally:
        proxy.close()


@pytest.fixture
def geth(tmp_path):
    """geth in developer mode with its chain in a data directory: (start, stop); start again after
    stop and the chain goes on from where it stopped (scripts/geth.sh)."""
    d = tmp_path / "geth"

    def start_geth():
        out = subprocess.run([str(ROOT / "scripts" / "geth.sh"), "start", str(d)], capture_output=True, text=True,
                             check=True, timeout=120).stdout
        return Node(out.strip().splitlines()[-1].split("=", 1)[1])

    def stop_geth():
        subprocess.run([str(ROOT / "scripts" / "geth.sh"), "stop", str(d)], check=False, timeout=60)

    yield start_geth, stop_geth
    stop_geth()


def geth_traffic(node, n, salt=0):
    """n blocks of traffic from geth's developer account: calls that emit events, and transfers."""
    dev = node.rpc("eth_accounts")[0]

    def sent(tx):
        h = node.rpc("eth_sendTransaction", {"from": dev, "gas": hex(300000), **tx})
        return eventually(lambda: node.rpc("eth_getTransactionReceipt", h), timeout=30, interval=0.05,
                          what="the transaction's block")
    contract = sent({"data": "0x" + INIT + RUNTIME})["contractAddress"]
    for i in range(n):
        if i % 2 == 0:
            sent({"to": contract, "data": "0x" + format(salt * 1000 + i, "064x")})
        else:
            sent({"to": "0x" + format(0xabc0 + i, "040x"), "value": hex(10**15 + i + salt)})


def test_a_node_stopped_and_started_mid_ingest(start_server, tmp_path, geth):
    """A node with its chain on disk (geth) stopped while the job is catching up, and started again:
    the job reports the node down, writes nothing partial, goes on when the node is back, and the
    tables equal the node, field by field."""
    start_geth, stop_geth = geth
    node = start_geth()
    geth_traffic(node, 40)
    head = node.latest()
    server = start(start_server, tmp_path, node.url, "rate_limit = 15")
    eventually(lambda: 0 < min(job(server)["last_block"].values() or [0]) < head - 10, timeout=60,
               what="the job to be part of the way")
    stop_geth()
    eventually(lambda: job(server)["last_error"], timeout=30, what="the job to see the node down")
    stopped_at = job(server)["last_block"]
    assert min(stopped_at.values()) < head
    node = start_geth()
    assert node.latest() == head, "the node kept its chain"
    geth_traffic(node, 4, salt=1)
    wait_for(server, node, timeout=120)
    assert job(server)["last_error"] == ""
    expect_tables_equal_the_node(server, node)
