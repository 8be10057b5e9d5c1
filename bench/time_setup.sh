#!/usr/bin/env bash
# Times the README's two commands from a fresh clone of this repository, with
# Go removed from PATH (so the test command must fetch its own): run.sh until
# the demo serves, then test.sh, then test.sh again. Prints seconds.
#   bench/time_setup.sh [WORKDIR]   (default /tmp/sediment-fresh; emptied)
set -u
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${1:-/tmp/sediment-fresh}"
rm -rf "$WORK"
git clone -q "$SRC" "$WORK"
cd "$WORK"
PATH="$(echo "$PATH" | tr ':' '\n' | grep -v '/go/bin' | grep -v '^/usr/local/go' | paste -sd:)"
export PATH
if command -v go >/dev/null; then echo "go still on PATH: $(command -v go)"; else echo "no go on PATH"; fi
start=$(date +%s)
scripts/run.sh >run.log 2>&1 &
for _ in $(seq 1 3600); do
  grep -q "listening on" run.log && break
  sleep 1
done
echo "run.sh: serving after $(($(date +%s) - start)) s"
curl -s -o /dev/null -w "healthcheck %{http_code}\n" http://127.0.0.1:8000/api/v1/healthcheck
pkill -INT -f "build/sediment serve --config config/demo.toml"
wait
start=$(date +%s)
scripts/test.sh >test.log 2>&1
echo "test.sh: exit $? after $(($(date +%s) - start)) s"
start=$(date +%s)
scripts/test.sh >test2.log 2>&1
echo "test.sh again: exit $? after $(($(date +%s) - start)) s"
