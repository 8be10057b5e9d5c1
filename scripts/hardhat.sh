#!/usr/bin/env bash
# An Ethereum node on loopback for the evm-rpc source's tests and demo:
# Hardhat Network, pinned, installed from npm into .cache/hardhat (once).
#   eval "$(scripts/hardhat.sh start DIR)"   # prints SEDIMENT_TEST_EVM_URL
#   scripts/hardhat.sh stop DIR
# Why Hardhat: it installs from npm in seconds (no compile on 2 cores, which
# geth from the Go module proxy would need), mines a block per transaction
# (or on demand: evm_mine), and rewinds the chain (evm_snapshot/evm_revert),
# which is how the tests make reorgs.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
HARDHAT_VERSION="2.22.19"
cmd="${1:?usage: hardhat.sh install | start DIR | stop DIR}"
dir="${2:-}"
if [ "$cmd" != install ] && [ -z "$dir" ]; then echo "usage: hardhat.sh install | start DIR | stop DIR" >&2; exit 2; fi
home="$ROOT/.cache/hardhat"

free_port() { "$ROOT/.venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

install() {
  if [ "$(cat "$home/version" 2>/dev/null)" = "$HARDHAT_VERSION" ]; then return; fi
  if ! command -v npm >/dev/null; then
    source "$ROOT/scripts/lib.sh"
    apt_install nodejs npm >&2
  fi
  mkdir -p "$home"
  (cd "$home" && npm install --no-audit --no-fund --silent "hardhat@$HARDHAT_VERSION" >&2)
  echo 'module.exports = { networks: { hardhat: { chainId: 31337 } } };' >"$home/hardhat.config.js"
  echo "$HARDHAT_VERSION" >"$home/version"
}

case "$cmd" in
  install)
    install
    ;;
  start)
    install
    mkdir -p "$dir"
    port="${HARDHAT_PORT:-$(free_port)}"
    # HARDHAT_HARDFORK (e.g. berlin): a chain of that fork (the tests' pre-London chain).
    config=hardhat.config.js
    if [ -n "${HARDHAT_HARDFORK:-}" ]; then
      case "$HARDHAT_HARDFORK" in *[!a-zA-Z]*) echo "HARDHAT_HARDFORK: letters only" >&2; exit 2 ;; esac
      config="hardhat.$HARDHAT_HARDFORK.config.js"
      echo "module.exports = { networks: { hardhat: { chainId: 31337, hardfork: \"$HARDHAT_HARDFORK\" } } };" >"$home/$config"
    fi
    (cd "$home" && exec node node_modules/.bin/hardhat --config "$config" node --hostname 127.0.0.1 --port "$port") >"$dir/hardhat.log" 2>&1 &
    echo $! >"$dir/hardhat.pid"
    for _ in $(seq 1 200); do
      if curl -sf -X POST -H 'content-type: application/json' \
        --data '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}' "http://127.0.0.1:$port" >/dev/null; then
        break
      fi
      sleep 0.1
    done
    curl -sf -X POST -H 'content-type: application/json' \
      --data '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}' "http://127.0.0.1:$port" >/dev/null ||
      { cat "$dir/hardhat.log" >&2; exit 1; }
    echo "export SEDIMENT_TEST_EVM_URL=http://127.0.0.1:$port"
    ;;
  stop)
    if [ -f "$dir/hardhat.pid" ]; then kill "$(cat "$dir/hardhat.pid")" 2>/dev/null || true; fi
    ;;
esac
