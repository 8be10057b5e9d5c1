#!/usr/bin/env bash
# Configures (once) and builds Sediment into build/ with Ninja and ccache.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BUILD_TYPE="${SEDIMENT_BUILD_TYPE:-RelWithDebInfo}"
export CCACHE_DIR="${CCACHE_DIR:-$ROOT/.cache/ccache}"
if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja \
    -DCMAKE_BUILD_TYPE="$BUILD_TYPE" \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DSEDIMENT_PYTHON="$ROOT/.venv/bin/python"
fi
cmake --build build -j"$(nproc)"
