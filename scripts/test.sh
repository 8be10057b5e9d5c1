#!/usr/bin/env bash
# Installs, builds and runs every test: C++ unit tests (CTest/GoogleTest) and
# black-box tests (pytest) that start the built binary.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
scripts/install-test.sh --no-go
# The Go programs (MinIO, lakectl, esti, geth) build beside the C++ build: neither needs the other.
mkdir -p .cache
scripts/install-go-tools.sh >.cache/install-go-tools.log 2>&1 &
go_tools=$!
if ! scripts/build.sh --tests; then
  wait "$go_tools" || true
  exit 1
fi
if ! wait "$go_tools"; then
  cat .cache/install-go-tools.log >&2
  echo "test: building the Go programs failed (log above, in .cache/install-go-tools.log)" >&2
  exit 1
fi

# Servers the tests use, on loopback, thrown away at exit.
services="$(mktemp -d /tmp/sediment-test-services.XXXXXX)"
chmod 755 "$services"  # PostgreSQL runs as its own user when we are root
trap 'scripts/minio.sh stop "$services/minio"; scripts/postgres.sh stop "$services/postgres"; rm -rf "$services"' EXIT
eval "$(scripts/minio.sh start "$services/minio")"
eval "$(scripts/postgres.sh start "$services/postgres")"

ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 600
.venv/bin/python -m pytest -q tests "$@"
echo "Console screenshots (the browser tests' artifacts): build/test-artifacts/console/"
