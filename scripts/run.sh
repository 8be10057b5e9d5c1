#!/usr/bin/env bash
# Installs, builds and runs Sediment on embedded defaults (RocksDB under
# ./data/kv, objects under ./data/objects, http://127.0.0.1:8000).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
scripts/install.sh
scripts/build.sh
echo "sediment: serving on http://127.0.0.1:8000 (health: /api/v1/healthcheck, metrics: /metrics); Ctrl-C stops it"
exec build/sediment serve "$@"
