#!/usr/bin/env bash
# Installs, builds and runs Sediment on embedded defaults (RocksDB under
# ./data/kv, objects under ./data/objects, http://127.0.0.1:8000) with the
# demo: a synthetic chain written at its head while the compactor merges.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
scripts/install.sh
scripts/build.sh
cat <<'MSG'

Sediment demo: a synthetic chain ("demo": blocks, transactions, logs) written as small
Parquet files at its head, merged in the background. In another terminal:

  build/sediment job list                       # the ingest job's progress
  build/sediment table list                     # tables, files, sizes
  build/sediment table histogram demo.logs      # small files appear, then merge (watch it for a minute)
  build/sediment table passes demo.logs         # the last passes and the GC backlog
  build/sediment table files demo.logs
  build/sediment query demo.blocks --limit 5 --columns block_num,hash,tx_count
  build/sediment query demo.logs --from 100 --to 101 --where 'log_index < 3'
  curl -s http://127.0.0.1:8000/metrics | grep compaction_

API: http://127.0.0.1:8000/api/v1 (health: /api/v1/healthcheck). Ctrl-C stops it.
Console: http://127.0.0.1:8000/

MSG
exec build/sediment serve --config config/demo.toml "$@"
