#!/usr/bin/env bash
# bench.sh: the project's benchmarks. Figures are ratios measured in one run
# (these machines are noisy), printed for the issues' closing notes.
#   make bench                 # everything
#   scripts/bench.sh engine    # one section
set -euo pipefail
cd "$(dirname "$0")/.."
sections=("$@")
[ ${#sections[@]} -gt 0 ] || sections=(engine cache remote kernels dragon)
echo "bench: $(nproc) cores, OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset}, $(date -u +%FT%TZ)"
for s in "${sections[@]}"; do
  if [ -x "scripts/bench-$s.sh" ]; then
    "scripts/bench-$s.sh"
  else
    echo "bench: no section $s" >&2
    exit 2
  fi
done
