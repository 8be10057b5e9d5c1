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
