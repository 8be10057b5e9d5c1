#!/usr/bin/env bash
# Configures and builds Sediment into build/ with Ninja and ccache.
#   scripts/build.sh           the `sediment` binary only (what the run command needs)
#   scripts/build.sh --tests   everything, with the GoogleTest binaries
# Configures once, and again only to turn the tests on.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD_TYPE="${SEDIMENT_BUILD_TYPE:-RelWithDebInfo}"
export CCACHE_DIR="${CCACHE_DIR:-$ROOT/.cache/ccache}"
# Paths relative to the clone, so another clone (or a worktree) hits the same cache.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(dirname "$ROOT")}" CCACHE_NOHASHDIR=1
tests=OFF
if [ "${1:-}" = "--tests" ]; then tests=ON; fi
configured="$(sed -n 's/^SEDIMENT_TESTS:BOOL=//p' build/CMakeCache.txt 2>/dev/null || true)"
if [ ! -f build/build.ninja ] || { [ "$tests" = ON ] && [ "$configured" != ON ]; }; then
  cmake -S . -B build -G Ninja \
    -DCMAKE_BUILD_TYPE="$BUILD_TYPE" \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DSEDIMENT_PYTHON="$ROOT/.venv/bin/python" \
    -DSEDIMENT_TESTS="$tests"
fi
if [ "$tests" = ON ]; then
  cmake --build build -j"$(nproc)"
else
  cmake --build build -j"$(nproc)" --target sediment
fi
