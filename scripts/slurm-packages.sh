#!/usr/bin/env bash
# slurm-packages.sh installs the Debian packages of a one-node Slurm cluster
# for the Slurm executor's tests (stages/cluster/slurmtest): slurmctld,
# slurmd, slurm-client and munge. Called by scripts/setup.sh.
#
# Idempotent and instant when the packages are present. It never fails
# `make setup`: where the packages cannot be installed (not root, no apt, no
# network) it says so and exits 0, and the Slurm tests skip with a message
# naming the missing programs.
#
# Nothing is started: the packages' postinst scripts try to start the
# daemons, which a policy-rc.d written for the time of the install forbids
# (the tests start their own daemons, under their own PIDs, in a temporary
# directory). DRAGONX_NO_SLURM=1 skips this script.
set -uo pipefail

[ "${DRAGONX_NO_SLURM:-}" = 1 ] && exit 0

pkgs=(slurmctld slurmd slurm-client munge)
missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

skip() {
  echo "setup: cannot install ${missing[*]} ($1); the Slurm tests will skip" >&2
  exit 0
}
command -v apt-get >/dev/null 2>&1 || skip "no apt-get"
[ "$(id -u)" -eq 0 ] || skip "need root"

echo "setup: installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\n# written by dragonx scripts/slurm-packages.sh for the time of one install\nexit 101\n' > "$policy"
  chmod 755 "$policy"
  trap 'rm -f "$policy"' EXIT
fi
apt-get update -qq >/dev/null 2>&1 || skip "apt-get update failed"
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
  skip "apt-get install failed"
# Debian enables the services; on a machine with systemd, keep them off
# (the tests run their own daemons).
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  systemctl disable --now slurmctld slurmd munge >/dev/null 2>&1 || true
fi
exit 0
