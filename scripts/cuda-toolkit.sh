#!/usr/bin/env bash
# cuda-toolkit.sh installs Debian's CUDA compiler (nvidia-cuda-toolkit, CUDA
# 11.8, from the non-free component of the machine's own Debian archive) when
# nvcc is missing, so that `make test` compiles the generated CUDA for sm_90
# (H100/H200) and reads ptxas's registers, shared memory and spills. No GPU is
# needed: nothing built here runs. `make test` calls it; `make run` does not.
#
# Idempotent and fast when present: it returns at once when nvcc is on PATH.
# First install: ~1.6 GB download, ~5.5 GB on disk, ~1.5 min. Set
# DRAGONX_NO_CUDA=1 to skip it (the CUDA tests then skip, saying why).
set -euo pipefail

if [ -n "${DRAGONX_NO_CUDA:-}" ]; then
  echo "cuda-toolkit: DRAGONX_NO_CUDA set: not installing nvcc (CUDA compile tests will skip)"
  exit 0
fi
if command -v nvcc >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "cuda-toolkit: need root to install nvidia-cuda-toolkit (run as root, install it yourself, or set DRAGONX_NO_CUDA=1)" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "cuda-toolkit: no apt-get: install the CUDA toolkit (nvcc) yourself, or set DRAGONX_NO_CUDA=1" >&2
  exit 1
fi

# The non-free component of the archive the machine already uses: take the
# URI of the main Debian entry (deb822 or one-line format).
list=/etc/apt/sources.list.d/dragonx-cuda.sources
if [ ! -e "$list" ]; then
  uri=
  if [ -r /etc/apt/sources.list.d/debian.sources ]; then
    uri=$(awk '/^URIs:/ && $2 ~ /debian\/?$/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
  fi
  if [ -z "$uri" ] && [ -r /etc/apt/sources.list ]; then
    uri=$(awk '$1=="deb" && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list)
  fi
  [ -n "$uri" ] || uri=http://deb.debian.org/debian
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
  tmp=$(mktemp "$list.XXXXXX")
  printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: contrib non-free\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$uri" "$codename" > "$tmp"
  chmod 644 "$tmp"
  mv "$tmp" "$list"
fi

echo "cuda-toolkit: installing nvidia-cuda-toolkit (CUDA compiler; ~1.6 GB download, ~1.5 min)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends nvidia-cuda-toolkit >/dev/null
command -v nvcc >/dev/null 2>&1 || { echo "cuda-toolkit: installed, but nvcc is not on PATH" >&2; exit 1; }
echo "cuda-toolkit: $(nvcc --version | tail -1)"
