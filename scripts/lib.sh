# Helpers shared by the install scripts (sourced, not run).

# apt_install PKG...: installs the packages that are missing (with sudo when not root).
apt_install() {
  local missing=() pkg
  for pkg in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$pkg")
    fi
  done
  if ((${#missing[@]})); then
    echo "install: apt-get install ${missing[*]}"
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

# pip_install_once FILE [VENV]: installs FILE's pins into VENV (default .venv,
# created if missing) unless that exact file was installed already; succeeds
# (0) only when it installed something.
pip_install_once() {
  local file="$1" venv="${2:-.venv}" stamp want
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  stamp="$venv/.$(basename "$file").sha256"
  want="$(sha256sum "$file" | cut -d' ' -f1)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return 1; fi
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$file"
  echo "$want" >"$stamp"
}

# fetch_duckdb: DuckDB's static library, C header and built-in extensions (parquet, json, icu, ...)
# as duckdb-go's bindings module ships them on the Go module proxy, pinned by version and SHA-256,
# unpacked into .cache/duckdb/<version> (once). No Go toolchain needed: the proxy serves the zip.
DUCKDB_BINDINGS_VERSION="v0.10506.0"  # DuckDB 1.5 (github.com/duckdb/duckdb-go/v2 v2.10506.0)
DUCKDB_BINDINGS_SHA256="8d3a7324cdffa921b836b28d51198c3e4bc5f430d2f87adae206d94c23b2d23a"
fetch_duckdb() {
  local dir=".cache/duckdb/$DUCKDB_BINDINGS_VERSION" module="github.com/duckdb/duckdb-go-bindings/lib/linux-amd64"
  [ -f "$dir/.complete" ] && return 0
  local proxy="${SEDIMENT_GOPROXY:-https://proxy.golang.org}" zip
  zip="$(mktemp /tmp/sediment-duckdb.XXXXXX.zip)"
  echo "install: DuckDB $DUCKDB_BINDINGS_VERSION static library from $proxy (32 MB, once)"
  curl -fsSL --retry 3 -o "$zip" "$proxy/$module/@v/$DUCKDB_BINDINGS_VERSION.zip"
  if [ "$(sha256sum "$zip" | cut -d' ' -f1)" != "$DUCKDB_BINDINGS_SHA256" ]; then
    echo "install: $module@$DUCKDB_BINDINGS_VERSION does not have the pinned SHA-256; refusing it" >&2
    rm -f "$zip"
    return 1
  fi
  rm -rf "$dir" && mkdir -p "$dir"
  unzip -q -j "$zip" "$module@$DUCKDB_BINDINGS_VERSION/*" -d "$dir"
  rm -f "$zip"
  touch "$dir/.complete"
}
