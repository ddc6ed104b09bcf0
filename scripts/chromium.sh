#!/usr/bin/env bash
# chromium.sh installs Debian's chromium for the browser check of the HTML
# report (internal/browsercheck: chromedp drives it headless on a file://
# URL). Called by scripts/setup.sh.
#
# Idempotent and instant when a chromium (chromium, chromium-browser or
# google-chrome on PATH) is present. First install: ~123 MB download,
# ~411 MB on disk (16 packages with --no-install-recommends on bookworm).
# It never fails `make setup`: where chromium cannot be installed (not root,
# no apt, no network) it says so and exits 0, and the browser tests skip
# with "chromium not installed: run make setup". DRAGONX_NO_CHROMIUM=1 skips
# this script.
set -uo pipefail

[ "${DRAGONX_NO_CHROMIUM:-}" = 1 ] && exit 0

for b in chromium chromium-browser google-chrome google-chrome-stable; do
  command -v "$b" >/dev/null 2>&1 && exit 0
done

skip() {
  echo "setup: cannot install chromium ($1); the browser check of the report will skip" >&2
  exit 0
}
command -v apt-get >/dev/null 2>&1 || skip "no apt-get"
[ "$(id -u)" -eq 0 ] || skip "need root"

echo "setup: installing Debian package: chromium (~123 MB download, ~411 MB on disk)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null 2>&1 || skip "apt-get update failed"
apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1 ||
  skip "apt-get install failed"
command -v chromium >/dev/null 2>&1 || skip "installed, but chromium is not on PATH"
exit 0
