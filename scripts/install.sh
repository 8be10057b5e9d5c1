#!/usr/bin/env bash
# Installs what Sediment needs to build and run on Debian 12 — nothing the
# tests alone need (scripts/install-test.sh adds those). Idempotent: apt-get
# runs only for packages that are missing, pip only when requirements.txt
# changed since the last successful install.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
source scripts/lib.sh

apt_install \
  build-essential cmake ninja-build ccache mold pkg-config git \
  python3 python3-venv python3-pip \
  librocksdb-dev libcpp-httplib-dev libpugixml-dev libssl-dev zlib1g-dev libbrotli-dev \
  nlohmann-json3-dev libtomlplusplus-dev libspdlog-dev libfmt-dev libcli11-dev \
  libpq-dev libjs-chart.js libavro-dev libzstd-dev liblua5.4-dev libyaml-cpp-dev curl unzip

# Project-local Python environment: pyarrow (the Arrow C++ SDK).
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
if pip_install_once requirements.txt; then
  # pyarrow ships versioned libraries (libarrow.so.2600); the linker wants the
  # unversioned names. This is the documented way to create them.
  .venv/bin/python -c "import pyarrow; pyarrow.create_library_symlinks()"
fi
# The embedded SQL engine of the query server (docs/query.md).
fetch_duckdb
