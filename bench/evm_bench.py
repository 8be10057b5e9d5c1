#!/usr/bin/env python3
"""Catch-up throughput of the evm-rpc source (issue 16): blocks and logs per second from a node into the
tables, at several `concurrency` settings, and where the time goes.

A Hardhat Network node (scripts/hardhat.sh) gets --blocks blocks of traffic (tools/evm_traffic.py: 6
transactions a block, half of them emitting an event). Then, for each concurrency, a fresh `sediment serve`
with an evm-rpc job (batch_size 50) catches up from block 0; the time is from the job's first poll to every
table holding the node's head. The CPU seconds the node and the server used during the catch-up are read
from /proc: the busier one is the bottleneck. "Node alone" is the same reads (blocks with transactions,
then receipts) made by a plain client with the same concurrency, without decoding or writing: what the
node can serve.

Each concurrency runs each --modes job: `all` (the three tables: blocks with full transactions and their
receipts, logs from the receipts), `logs-receipts` (blocks and logs only, the logs still from the receipts:
how the source read them before eth_getLogs) and `logs-getlogs` (blocks and logs only, headers without
transactions and the logs from eth_getLogs over block ranges: no receipt is asked for). The ratio column
is each mode's throughput over `logs-receipts` at the same concurrency.

Usage: .venv/bin/python bench/evm_bench.py [--blocks 1000] [--concurrency 1 4 16] [--modes all logs-receipts ...]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
SEDIMENT = ROOT / "build" / "sediment"
sys.path.insert(0, str(ROOT / "tools"))
import evm_traffic  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def node_pid(work):
    return int((work / "node" / "hardhat.pid").read_text())


def raw_fetch(url, head, concurrency, batch=50):
    """The node alone: blocks with full transactions, then their receipts, batch by batch."""
    def one(start):
        s = requests.Session()
        end = min(head, start + batch - 1)
        calls = [{"jsonrpc": "2.0", "id": b, "method": "eth_getBlockByNumber", "params": [hex(b), True]}
                 for b in range(start, end + 1)]
        blocks = s.post(url, json=calls, timeout=120).json()
        calls = [{"jsonrpc": "2.0", "id": i, "method": "eth_getTransactionReceipt", "params": [tx["hash"]]}
                 for i, tx in enumerate(t for b in blocks for t in b["result"]["transactions"])]
        if calls:
            s.post(url, json=calls, timeout=120).json()
    t0 = time.time()
    with ThreadPoolExecutor(concurrency) as ex:
        list(ex.map(one, range(0, head + 1, batch)))
    return time.time() - t0


MODES = {
    "all": ("", 3),
    "logs-receipts": ('tables = ["blocks", "logs"]\nlogs_from = "receipts"\n', 2),
    "logs-getlogs": ('tables = ["blocks", "logs"]\nlogs_from = "eth_getLogs"\n', 2),
}


def catch_up(work, url, head, logs, concurrency, npid, mode="all"):
    data = work / f"data{concurrency}"
    cfg = work / f"c{concurrency}.toml"
    extra, tables = MODES[mode]
    cfg.write_text(f'[worker]\npoll_interval_secs = 0.05\n[writer.compactor]\nmin_interval = 3600\n'
                   f'[[jobs]]\ndataset = "eth"\nsource = "evm-rpc"\nurl = "{url}"\nbatch_size = 50\n'
                   f'concurrency = {concurrency}\nmax_reorg_depth = 64\n{extra}')
    log = open(work / f"serve{concurrency}.log", "w")
    p = subprocess.Popen([str(SEDIMENT), "serve", "--config", str(cfg), "--listen", "127.0.0.1:0",
                          "--data-dir", str(data)], stdout=log, stderr=subprocess.STDOUT)
    try:
        for _ in range(300):
            m = re.search(r"listening on (http://[\d.]+:\d+)", (work / f"serve{concurrency}.log").read_text())
            if m:
                break
            time.sleep(0.05)
        base = m.group(1)
        n0, s0, t0 = cpu_seconds(npid), cpu_seconds(p.pid), time.time()
        while True:
            j = requests.get(base + "/api/v1/jobs", auth=None, timeout=30).json()["jobs"][0]
            if len(j["last_block"]) == tables and all(v == head for v in j["last_block"].values()):
                break
            if time.time() - t0 > 900:
                raise RuntimeError(f"no catch-up: {j}")
            time.sleep(0.05)
        seconds = time.time() - t0
        node_cpu, server_cpu = cpu_seconds(npid) - n0, cpu_seconds(p.pid) - s0
    finally:
        p.terminate()
        p.wait(30)
        shutil.rmtree(data, ignore_errors=True)
    return {"mode": mode, "concurrency": concurrency, "seconds": seconds, "blocks_per_s": (head + 1) / seconds,
            "logs_per_s": logs / seconds, "node_cpu_s": node_cpu, "server_cpu_s": server_cpu}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sediment-evm-bench-"))
    try:
        out = subprocess.run([str(ROOT / "scripts" / "hardhat.sh"), "start", str(work / "node")],
                             capture_output=True, text=True, check=True).stdout
        url = out.strip().splitlines()[-1].split("=", 1)[1]
        node = evm_traffic.Node(url)
        accounts, contract = evm_traffic.deploy(node)
        t0 = time.time()
        for i in range(a.blocks):
            evm_traffic.block_of_traffic(node, accounts, contract, i)
        head = int(node.rpc("eth_blockNumber"), 16)
        logs = len(node.rpc("eth_getLogs", {"fromBlock": "0x0", "toBlock": hex(head)}))
        print(f"node: {head + 1} blocks, {logs} logs (traffic took {time.time() - t0:.0f} s)\n")
        npid = node_pid(work)
        rows = []
        for c in a.concurrency:
            alone = raw_fetch(url, head, c)
            for mode in a.modes:
                r = catch_up(work, url, head, logs, c, npid, mode)
                r["node_alone_s"] = alone
                rows.append(r)
        base = {r["concurrency"]: r["seconds"] for r in rows if r["mode"] == "logs-receipts"}
        print("| mode | concurrency | catch-up s | blocks/s | logs/s | vs logs-receipts | node alone s | node CPU s |"
              " server CPU s | bound by |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
        for r in rows:
            bound = "node" if r["node_cpu_s"] > r["server_cpu_s"] else "server"
            ratio = f"{base[r['concurrency']] / r['seconds']:.2f}x" if r["concurrency"] in base else "-"
            print(f"| {r['mode']} | {r['concurrency']} | {r['seconds']:.2f} | {r['blocks_per_s']:.0f} | "
                  f"{r['logs_per_s']:.0f} | {ratio} | {r['node_alone_s']:.2f} | {r['node_cpu_s']:.1f} | "
                  f"{r['server_cpu_s']:.1f} | {bound} |")
        print("\n" + json.dumps(rows))
    finally:
        subprocess.run([str(ROOT / "scripts" / "hardhat.sh"), "stop", str(work / "node")], check=False)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
