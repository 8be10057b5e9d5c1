#!/usr/bin/env bash
# Times the README's two commands as a newcomer meets them: a fresh clone of
# this repository with empty caches (.cache/ and build/ are new in the clone;
# Go's build and module caches are the clone's own, so Go programs build from
# nothing), Go removed from PATH (the test command must fetch its own), PATH
# the system directories only. Debian packages already installed are not
# downloaded again: their time is the network's and is not measured here.
#   bench/time_setup.sh [WORKDIR]          (default /tmp/sediment-fresh; emptied)
#   bench/time_setup.sh --run-only [WORKDIR]
# Prints, in seconds: the run command until the demo's first healthcheck (and
# its parts: install, build), the test command cold (and the Go programs'
# build beside it), the test command again after touching one file of
# src/table, and the incremental build alone.
set -u
run_only=0
if [ "${1:-}" = "--run-only" ]; then run_only=1; shift; fi
SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${1:-/tmp/sediment-fresh}"
rm -rf "$WORK"
git clone -q "$SRC" "$WORK"
cd "$WORK"
export PATH=/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin
export GOCACHE="$WORK/.gocache" GOMODCACHE="$WORK/.gomodcache" GOPATH="$WORK/.gopath"
export PIP_CACHE_DIR="$WORK/.pipcache" npm_config_cache="$WORK/.npmcache"
if command -v go >/dev/null; then echo "go still on PATH: $(command -v go)"; else echo "no go on PATH"; fi
now() { date +%s.%N; }
secs() { printf "%.0f" "$(echo "$2 - $1" | bc)"; }

start=$(now)
scripts/run.sh >run.log 2>&1 &
run_pid=$!
for _ in $(seq 1 3600); do
  curl -s -o /dev/null -w "%{http_code}" http://127.0.0.1:8000/api/v1/healthcheck 2>/dev/null | grep -q 204 && break
  kill -0 "$run_pid" 2>/dev/null || break
  sleep 1
done
served=$(now)
echo "run.sh: first healthcheck after $(secs "$start" "$served") s"
# Its parts, from the build log's own clock: configure and the binary's steps.
[ -f build/.ninja_log ] && awk 'NR > 1 && $2 > max {max = $2} END {printf "  of which compiling and linking (ninja): %.0f s\n", max / 1000}' build/.ninja_log
pkill -INT -f "build/sediment serve --config config/demo.toml"
wait "$run_pid" 2>/dev/null
[ "$run_only" = 1 ] && exit 0

start=$(now)
scripts/test.sh >test.log 2>&1
rc=$?
echo "test.sh cold: exit $rc after $(secs "$start" "$(now)") s"
grep -E "^install" .cache/install-go-tools.log 2>/dev/null | sed 's/^/  /'
tail -3 test.log

touch src/table/merge.cc
start=$(now)
scripts/build.sh --tests >rebuild.log 2>&1
echo "incremental build after touching src/table/merge.cc: $(secs "$start" "$(now)") s"
touch src/table/merge.cc
start=$(now)
scripts/test.sh >test2.log 2>&1
echo "test.sh warm after touching src/table/merge.cc: exit $? after $(secs "$start" "$(now)") s"
