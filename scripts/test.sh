#!/usr/bin/env bash
# Checks the house rules, then installs, builds and runs every test: C++ unit
# tests (CTest/GoogleTest) and black-box tests (pytest) that start the built binary.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# The house rules (docs/building.md): file and function sizes, KV keys in key files, the paths
# docs/architecture.md names. A second, so before anything is installed or built (on a machine
# without python3 yet, right after the install brings it).
rules_checked=
if command -v python3 >/dev/null; then
  python3 tools/house_rules.py
  rules_checked=1
fi
scripts/install-test.sh --no-go
[ -n "$rules_checked" ] || python3 tools/house_rules.py
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
