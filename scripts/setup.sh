#!/usr/bin/env bash
# setup.sh installs what dragonx needs and is missing: Debian packages, Go
# modules and the gotch compatibility copy. It is idempotent and takes well
# under a second when everything is present.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the project needs (tests and `make run`).
#   libtorch-dev, libopenblas0-openmp: the little dragon (gotch on libtorch, fast BLAS)
#   nginx: the remote-cache tests run a real WebDAV server on 127.0.0.1
pkgs=(libtorch-dev libopenblas0-openmp nginx)

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: need root to install ${missing[*]} (run as root or install them yourself)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Go modules (the proxy is the only network here).
go mod download

# The gotch compatibility copy that go.mod's replace points to.
if [ -x scripts/gotch-compat.sh ]; then
  scripts/gotch-compat.sh
fi
