#!/usr/bin/env bash
# Installs everything Sediment needs to build, test and run on Debian 12.
# Idempotent: apt-get runs only for packages that are missing, pip only when
# requirements.txt changed since the last successful install.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

APT_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git clang-format
  python3 python3-venv python3-pip
  librocksdb-dev libcpp-httplib-dev libssl-dev zlib1g-dev libbrotli-dev
  nlohmann-json3-dev libtomlplusplus-dev libspdlog-dev libfmt-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libpq-dev postgresql
)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if ((${#missing[@]})); then
  echo "install: apt-get install ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Project-local Python environment: pyarrow (the Arrow C++ SDK) and test tools.
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
stamp=".venv/.requirements.sha256"
want="$(sha256sum requirements.txt | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  .venv/bin/pip install -q --disable-pip-version-check -r requirements.txt
  # pyarrow ships versioned libraries (libarrow.so.2600); the linker wants the
  # unversioned names. This is the documented way to create them.
  .venv/bin/python -c "import pyarrow; pyarrow.create_library_symlinks()"
  echo "$want" >"$stamp"
fi

# MinIO for the S3 tests, built from the Go module proxy (pinned) into .cache/bin.
MINIO_VERSION="v0.0.0-20260212201848-7aac2a2c5b7c"
if [ ! -x .cache/bin/minio ] || [ "$(cat .cache/bin/minio.version 2>/dev/null)" != "$MINIO_VERSION" ]; then
  if ! command -v go >/dev/null; then
    echo "install: Go (1.24 or newer) is needed to build MinIO for the S3 tests" >&2
    exit 1
  fi
  echo "install: building MinIO $MINIO_VERSION (a few minutes, once)"
  mkdir -p .cache/bin
  GOBIN="$ROOT/.cache/bin" go install "github.com/minio/minio@$MINIO_VERSION"
  echo "$MINIO_VERSION" >.cache/bin/minio.version
fi
