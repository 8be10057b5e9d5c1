#!/usr/bin/env bash
# A node that keeps its chain on disk, for the evm-rpc source's restart test:
# geth in developer mode (a block for each transaction, a funded account),
# built from the Go module proxy by scripts/install-test.sh into .cache/bin.
#   eval "$(scripts/geth.sh start DIR)"   # prints SEDIMENT_TEST_GETH_URL; the chain is in DIR/data
#   scripts/geth.sh stop DIR              # SIGTERM: geth writes its state and exits
# Start again with the same DIR and the chain goes on from where it stopped.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cmd="${1:?usage: geth.sh start DIR | stop DIR}"
dir="${2:?usage: geth.sh start DIR | stop DIR}"
geth="$ROOT/.cache/bin/geth"

# A free port below the ephemeral range (so no client's outgoing socket takes it while geth is down),
# other than $1.
free_port() {
  "$ROOT/.venv/bin/python" - "${1:-0}" <<'PY'
import random, socket, sys
for _ in range(200):
    p = random.randint(20000, 32000)
    if p == int(sys.argv[1]):
        continue
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            continue
    print(p)
    break
else:
    sys.exit("no free port")
PY
}

case "$cmd" in
  start)
    if [ ! -x "$geth" ]; then echo "no $geth: run scripts/install-test.sh" >&2; exit 1; fi
    mkdir -p "$dir"
    if [ -f "$dir/geth.pid" ] && kill -0 "$(cat "$dir/geth.pid")" 2>/dev/null; then
      echo "geth already runs in $dir (pid $(cat "$dir/geth.pid"))" >&2
      exit 1
    fi
    # The same port across restarts, so a client's URL stays right.
    port="$(cat "$dir/port" 2>/dev/null || free_port)"
    echo "$port" >"$dir/port"
    "$geth" --dev --dev.period 0 --datadir "$dir/data" --ipcdisable --nodiscover --maxpeers 0 --port 0 \
      --authrpc.port "$(free_port "$port")" --http --http.addr 127.0.0.1 --http.port "$port" --http.api eth,net,web3 \
      --verbosity 2 >>"$dir/geth.log" 2>&1 &
    pid=$!
    echo $pid >"$dir/geth.pid"
    for _ in $(seq 1 300); do
      if ! kill -0 "$pid" 2>/dev/null; then break; fi  # it exited: say why below
      if curl -sf -X POST -H 'content-type: application/json' \
        --data '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}' "http://127.0.0.1:$port" >/dev/null; then
        echo "export SEDIMENT_TEST_GETH_URL=http://127.0.0.1:$port"
        exit 0
      fi
      sleep 0.1
    done
    tail -20 "$dir/geth.log" >&2
    exit 1
    ;;
  stop)
    if [ -f "$dir/geth.pid" ]; then
      pid="$(cat "$dir/geth.pid")"
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      if kill -0 "$pid" 2>/dev/null; then
        echo "geth (pid $pid) did not stop in 30 s: killing it" >&2
        kill -9 "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      fi
      rm -f "$dir/geth.pid"
    fi
    ;;
  *)
    echo "usage: geth.sh start DIR | stop DIR" >&2
    exit 2
    ;;
esac
