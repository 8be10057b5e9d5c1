#!/usr/bin/env bash
# The second demo: a local Ethereum node (Hardhat Network, scripts/hardhat.sh)
# with a block of traffic every second, and `sediment serve` following it with
# config/evm-demo.toml. Installs and builds first, as scripts/run.sh does.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
scripts/install.sh
scripts/build.sh
scripts/hardhat.sh install
work="$(mktemp -d /tmp/sediment-evm-demo.XXXXXX)"
HARDHAT_PORT=8545 scripts/hardhat.sh start "$work/node" >/dev/null
trap 'kill $(jobs -p) 2>/dev/null; scripts/hardhat.sh stop "$work/node"; rm -rf "$work"' EXIT
.venv/bin/python tools/evm_traffic.py --url http://127.0.0.1:8545 --every 1.0 >"$work/traffic.log" 2>&1 &
cat <<MSG
Sediment following a local Ethereum node (http://127.0.0.1:8545, a block of traffic a second).
In another terminal:

  build/sediment job list                        # head, node head, lag, retries, last error
  build/sediment table list                      # eth.blocks, eth.transactions, eth.logs
  build/sediment query eth.logs --limit 5
  build/sediment table histogram eth.logs

Server: http://127.0.0.1:8000. Ctrl-C stops it and the node.

MSG
build/sediment serve --config config/evm-demo.toml --data-dir "$work/data" "$@"
