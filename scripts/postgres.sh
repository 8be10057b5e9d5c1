#!/usr/bin/env bash
# Starts a throwaway PostgreSQL cluster on a free loopback port for tests and
# prints the environment that points tests at it
# (eval "$(scripts/postgres.sh start DIR)"); `stop DIR` stops it. `halt DIR` and
# `resume DIR` stop and restart it on the same port with its data (the outage
# test). Uses Debian's postgresql package; no system service is involved.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cmd="${1:?usage: postgres.sh start|stop|halt|resume DIR}"
dir="${2:?usage: postgres.sh start|stop|halt|resume DIR}"
bin="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)"

as_owner() {
  # PostgreSQL refuses to run as root: use the postgres account then.
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

case "$cmd" in
  start)
    mkdir -p "$dir"
    if [ "$(id -u)" -eq 0 ]; then chown postgres "$dir"; chmod 700 "$dir"; fi
    port="$("$ROOT/.venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    echo "$port" >"$dir/port"
    as_owner "$bin/initdb" -D "$dir/data" -U sediment --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1
    "$0" resume "$dir"
    echo "export SEDIMENT_TEST_POSTGRES_DSN='host=127.0.0.1 port=$port user=sediment dbname=postgres'"
    ;;
  resume)
    port="$(cat "$dir/port")"
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w \
      -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null
    ;;
  halt)
    as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    ;;
  stop)
    if [ -d "$dir/data" ]; then as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true; fi
    ;;
esac
