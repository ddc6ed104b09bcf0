#!/usr/bin/env bash
# chromium.sh installs Debian's chromium for the browser check of the HTML
# report (internal/browsercheck: chromedp drives it headless on a file://
# URL), and fonts-liberation: the report's SVG figures (gonum/plot) name
# "Liberation Sans" and were laid out with its metrics; without it chromium
# draws them in a wider fallback font and legends run past the figure's
# edge. Called by scripts/setup.sh.
#
# Idempotent and instant when a chromium (chromium, chromium-browser or
# google-chrome on PATH) and fonts-liberation are present. First install:
# ~124 MB download, ~413 MB on disk (17 packages with
# --no-install-recommends on bookworm), ~15 s. It never fails `make setup`:
# where they cannot be installed (not root, no apt, no network) it says so
# and exits 0, and the browser tests skip with "chromium not installed: run
# make setup". DRAGONX_NO_CHROMIUM=1 skips this script.
set -uo pipefail

[ "${DRAGONX_NO_CHROMIUM:-}" = 1 ] && exit 0

missing=(chromium)
for b in chromium chromium-browser google-chrome google-chrome-stable; do
  if command -v "$b" >/dev/null 2>&1; then
    missing=()
    break
  fi
done
if ! dpkg-query -W -f='${Status}' fonts-liberation 2>/dev/null | grep -q '^install ok installed$'; then
  missing+=(fonts-liberation)
fi
[ ${#missing[@]} -eq 0 ] && exit 0

skip() {
  echo "setup: cannot install ${missing[*]} ($1); the browser check of the report will skip" >&2
  exit 0
}
command -v apt-get >/dev/null 2>&1 || skip "no apt-get"
[ "$(id -u)" -eq 0 ] || skip "need root"

echo "setup: installing Debian packages: ${missing[*]} (chromium: ~123 MB download, ~411 MB on disk)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null 2>&1 || skip "apt-get update failed"
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
  skip "apt-get install failed"
exit 0
