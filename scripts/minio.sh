#!/usr/bin/env bash
# Starts a throwaway MinIO on loopback for tests and prints the environment
# that points tests at it (eval "$(scripts/minio.sh start DIR)"); `stop DIR`
# kills it. The binary is built by scripts/install.sh into .cache/bin.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cmd="${1:?usage: minio.sh start|stop DIR}"
dir="${2:?usage: minio.sh start|stop DIR}"

free_port() { "$ROOT/.venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

case "$cmd" in
  start)
    mkdir -p "$dir/data"
    port="$(free_port)"
    console="$(free_port)"
    export MINIO_ROOT_USER=sediment-test MINIO_ROOT_PASSWORD=sediment-test-secret
    export MINIO_BROWSER=off MINIO_UPDATE=off
    "$ROOT/.cache/bin/minio" server "$dir/data" --quiet --address "127.0.0.1:$port" \
      --console-address "127.0.0.1:$console" >"$dir/minio.log" 2>&1 &
    echo $! >"$dir/minio.pid"
    for _ in $(seq 1 100); do
      if curl -sf "http://127.0.0.1:$port/minio/health/live" >/dev/null; then break; fi
      sleep 0.1
    done
    curl -sf "http://127.0.0.1:$port/minio/health/live" >/dev/null || { cat "$dir/minio.log" >&2; exit 1; }
    "$ROOT/.venv/bin/python" - "$port" <<'PY'
import sys
from pyarrow import fs
s3 = fs.S3FileSystem(access_key="sediment-test", secret_key="sediment-test-secret", scheme="http",
                     endpoint_override=f"127.0.0.1:{sys.argv[1]}", allow_bucket_creation=True)
s3.create_dir("sediment-test")
PY
    echo "export SEDIMENT_TEST_S3_ENDPOINT=127.0.0.1:$port"
    echo "export SEDIMENT_TEST_S3_ACCESS_KEY=sediment-test"
    echo "export SEDIMENT_TEST_S3_SECRET_KEY=sediment-test-secret"
    echo "export SEDIMENT_TEST_S3_BUCKET=sediment-test"
    ;;
  stop)
    if [ -f "$dir/minio.pid" ]; then kill "$(cat "$dir/minio.pid")" 2>/dev/null || true; fi
    ;;
esac
