#!/usr/bin/env python3
"""Traffic for a local Ethereum node (Hardhat Network): transfers, and calls to a small contract that emits
an event with the call's data. Used by scripts/evm-demo.sh (a block of traffic every --every seconds) and
bench/evm_bench.py (--blocks N blocks, as fast as the node mines them)."""
import argparse
import time

import requests

TOPIC = "ab" * 32
# Runtime: copy the calldata to memory, LOG2(memory, topic0 = TOPIC, topic1 = caller), stop.
RUNTIME = "36600060003733" + "7f" + TOPIC + "366000a200"
INIT = "602d80600b6000396000f3"  # copy the 45-byte runtime after these 11 bytes, return it


class Node:
    def __init__(self, url):
        self.url, self.s = url, requests.Session()

    def rpc(self, method, *params):
        j = self.s.post(self.url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": list(params)},
                        timeout=60).json()
        if "error" in j:
            raise RuntimeError(f"{method}: {j['error']}")
        return j["result"]

    def send(self, frm, to=None, value=0, data="0x"):
        tx = {"from": frm, "value": hex(value), "data": data, "gas": hex(300000)}
        if to:
            tx["to"] = to
        return self.rpc("eth_sendTransaction", tx)


def deploy(node):
    accounts = node.rpc("eth_accounts")
    h = node.send(accounts[0], data="0x" + INIT + RUNTIME)
    return accounts, node.rpc("eth_getTransactionReceipt", h)["contractAddress"]


def block_of_traffic(node, accounts, contract, i, txs=6):
    """One block holding `txs` transactions (half of them emit two events' worth of data)."""
    node.rpc("evm_setAutomine", False)
    for k in range(txs):
        frm = accounts[1 + (i + k) % 8]
        if k % 2 == 0:
            node.send(frm, to=contract, data="0x" + format(i * 100 + k, "064x") + "beef" * 8)
        else:
            node.send(frm, to=accounts[9], value=10**15 * (k + 1) + i)
    node.rpc("evm_mine")
    node.rpc("evm_setAutomine", True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8545")
    ap.add_argument("--every", type=float, default=1.0, help="seconds between blocks (with --blocks 0: forever)")
    ap.add_argument("--blocks", type=int, default=0, help="this many blocks, then stop")
    ap.add_argument("--txs", type=int, default=6, help="transactions per block")
    a = ap.parse_args()
    node = Node(a.url)
    accounts, contract = deploy(node)
    i = 0
    while a.blocks == 0 or i < a.blocks:
        block_of_traffic(node, accounts, contract, i, a.txs)
        i += 1
        if a.blocks == 0:
            time.sleep(a.every)


if __name__ == "__main__":
    main()
