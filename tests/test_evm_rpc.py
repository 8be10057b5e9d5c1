"""The evm-rpc source against a real Ethereum node: Hardhat Network, started by scripts/hardhat.sh.

Real transactions (transfers, a contract deployed from its bytecode, calls that emit events); the
tables must equal what the node answers for every block (eth_getBlockByNumber, eth_getLogs,
receipts), through a reorg made by evm_snapshot / evm_revert, and through a node that is down,
busy or slow for a while (a proxy in front of it)."""
import http.server
import json
import socketserver
import subprocess
import threading
import time
from pathlib import Path

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

    def send(self, frm, to=None, value=0, data="0x"):
        tx = {"from": frm, "value": hex(value), "data": data, "gas": hex(300000)}
        if to:
            tx["to"] = to
        h = self.rpc("eth_sendTransaction", tx)
        return self.rpc("eth_getTransactionReceipt", h)


class Proxy:
    """Forwards JSON-RPC to the node; `mode` makes it answer as a node in trouble does."""

    def __init__(self, target, tls=None, require=None):
        """tls: an ssl.SSLContext to serve https with; require: headers every request must carry
        (else 401), as a hosted provider checks its API key."""
        self.target = target
        self.mode = "ok"
        self.requests = 0
        self.refused = 0
        self.require = require or {}
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
                r = requests.post(proxy.target, data=body, headers={"content-type": "application/json"}, timeout=30)
                content = r.content
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


@pytest.fixture
def node(tmp_path):
    d = tmp_path / "hardhat"
    out = subprocess.run([str(ROOT / "scripts" / "hardhat.sh"), "start", str(d)], capture_output=True, text=True,
                         check=True, timeout=300).stdout
    url = out.strip().splitlines()[-1].split("=", 1)[1]
    yield Node(url)
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


def expect_tables_equal_the_node(server, node):
    head = node.latest()
    blocks = scan(server, "blocks")
    assert [b["block_num"] for b in blocks] == list(range(head + 1)), "every block once, none missing"
    want_txs, want_logs = [], []
    for b in blocks:
        nb = node.rpc("eth_getBlockByNumber", hex(b["block_num"]), True)
        assert (b["hash"], b["parent_hash"], b["timestamp"], b["miner"], b["gas_used"], b["gas_limit"],
                b["tx_count"]) == (nb["hash"], nb["parentHash"], q(nb["timestamp"]), nb["miner"], q(nb["gasUsed"]),
                                   q(nb["gasLimit"]), len(nb["transactions"])), b["block_num"]
        assert b["base_fee_per_gas"] == q(nb["baseFeePerGas"])
        for i, tx in enumerate(nb["transactions"]):
            rc = node.rpc("eth_getTransactionReceipt", tx["hash"])
            want_txs.append((b["block_num"], i, tx["hash"], tx["from"], tx["to"], u256(tx["value"]), tx["input"],
                             q(tx["nonce"]), q(rc["status"]), q(rc["gasUsed"]), rc["contractAddress"]))
    got_txs = [(t["block_num"], t["tx_index"], t["hash"], t["from"], t["to"], t["value"], t["input"], t["nonce"],
                t["status"], t["gas_used"], t["contract_address"]) for t in scan(server, "transactions")]
    assert got_txs == want_txs
    for lg in node.rpc("eth_getLogs", {"fromBlock": "0x0", "toBlock": hex(head)}):
        topics = lg["topics"] + [None] * (4 - len(lg["topics"]))
        want_logs.append((q(lg["blockNumber"]), q(lg["transactionIndex"]), q(lg["logIndex"]), lg["transactionHash"],
                          lg["address"], *topics, lg["data"]))
    got_logs = [(x["block_num"], x["tx_index"], x["log_index"], x["tx_hash"], x["address"], x["topic0"], x["topic1"],
                 x["topic2"], x["topic3"], x["data"]) for x in scan(server, "logs")]
    assert got_logs == want_logs
    return len(blocks), len(got_txs), len(got_logs)


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


def test_the_tables_equal_what_the_node_answers(start_server, tmp_path, node):
    traffic(node, 12)
    server = start(start_server, tmp_path, node.url)
    wait_for(server, node)
    blocks, txs, logs = expect_tables_equal_the_node(server, node)
    assert blocks == node.latest() + 1 and txs == 13 and logs == 6
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
                      (' batch_size = 0', "jobs.batch_size"), ('', "needs the node's url")):
        cfg = tmp_path / "bad.toml"
        cfg.write_text(f'[[jobs]]\ndataset = "eth"\nsource = "evm-rpc"\n{bad}\n')
        code, out = run_sediment("serve", "--config", str(cfg), "--data-dir", str(tmp_path / "d"))
        assert code != 0 and says in out, (bad, out)


def test_finality_keeps_the_tables_behind_the_head(start_server, tmp_path, node):
    traffic(node, 8)
    server = start(start_server, tmp_path, node.url, extra='finality = "3"')
    head = node.latest()
    eventually(lambda: job(server)["last_block"].get("blocks") == head - 3, timeout=30,
               what="the tables to reach the head less 3")
    j = job(server)
    assert j["head"] == head - 3 and j["node_head"] == head and j["lag"] == 3, j
    assert [b["block_num"] for b in scan(server, "blocks")] == list(range(head - 2))
