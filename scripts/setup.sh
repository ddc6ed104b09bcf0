#!/usr/bin/env bash
# setup.sh installs what dragonx needs and is missing: Debian packages, Go
# modules and the gotch compatibility copy. It is idempotent and takes well
# under a second when everything is present.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the project needs (tests and `make run`).
#   libtorch-dev, libopenblas0-openmp: the little dragon (gotch on libtorch, fast BLAS)
#   g++: cgo compiles gotch's C++ bindings and dragonx's libtorch shim
#   nginx: the remote-cache tests run a real WebDAV server on 127.0.0.1
#   gcc: the numerical gate (kernels/numeric) compiles kernels with cc
pkgs=(libtorch-dev libopenblas0-openmp g++ nginx gcc)

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
  # The tests start their own nginx (127.0.0.1, a free port, their own
  # configuration, stopped by its PID); a system nginx is not wanted.
  # Debian's package starts one on port 80 when installed (and fails to
  # install if the port is taken), so the install runs with a policy-rc.d
  # that forbids starting services (unless the machine has one already), and
  # the service is disabled and stopped afterwards.
  new_nginx=
  [[ " ${missing[*]} " == *" nginx "* ]] && new_nginx=1
  policy=/usr/sbin/policy-rc.d
  if [ -n "$new_nginx" ] && [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# written by dragonx scripts/setup.sh for the time of one install\nexit 101\n' > "$policy"
    chmod 755 "$policy"
    trap 'rm -f "$policy"' EXIT
  fi
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  if [ -n "$new_nginx" ]; then
    if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
      systemctl disable --now nginx >/dev/null 2>&1 || true
    else
      update-rc.d nginx disable >/dev/null 2>&1 || true
      [ -s /run/nginx.pid ] && nginx -s quit >/dev/null 2>&1 || true
    fi
  fi
fi

# Slurm and munge for the Slurm executor's tests (never fails setup: where
# they cannot be installed, those tests skip).
scripts/slurm-packages.sh

# Chromium for the browser check of the HTML report (internal/browsercheck;
# never fails setup: where it cannot be installed, that test skips).
scripts/chromium.sh

# The gotch compatibility copy that go.mod's replace points to. It comes
# first: until it exists, go.mod's replace names a missing directory and
# `go mod download` fails.
if [ -x scripts/gotch-compat.sh ]; then
  scripts/gotch-compat.sh
fi

# Go modules (the proxy is the only network here).
go mod download
