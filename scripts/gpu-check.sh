#!/usr/bin/env bash
# gpu-check.sh: on a machine with an NVIDIA GPU (H100/H200), measure ~30
# sampled traces of 5 families (GMM, C2D, DEP, NRM, SFM; 6 each) with the
# CUDA harness (kernels/cudabench: numerics checked against the CPU
# reference before timing), set the analytic model's estimate of each beside
# it (bin/dragonx kernel apply -target h100-model|h200-model, where this
# dragonx has it), print the rank correlation, and write
# kernels/testdata/gpu-check/measured-DEVICE-DATE.csv (the format `dragonx
# kernel calibrate -measured` reads) with the workloads and traces measured
# beside it, and a .about file (date, nvcc, nvidia-smi's device line, the
# correlation). docs/cuda.md describes it.
#
#   scripts/gpu-check.sh            measure (needs a GPU, nvcc, go, cc)
#   scripts/gpu-check.sh --dry-run  everything but the GPU run: draw, lower,
#                                   generate, compile with nvcc, CPU reference,
#                                   model estimates; written under
#                                   ${TMPDIR:-/tmp}/dragonx-gpu-check, not the tree
#
# Other flags go to the gpucheck program (-per N, -families A,B, -repeats N).
set -euo pipefail
cd "$(dirname "$0")/.."

dry=
args=()
for a in "$@"; do
  case "$a" in
    --dry-run|-dry-run) dry=1; args+=(-dry-run) ;;
    *) args+=("$a") ;;
  esac
done

command -v nvcc >/dev/null || { echo "gpu-check: nvcc not found (scripts/cuda-toolkit.sh installs Debian's)" >&2; exit 1; }
command -v go >/dev/null || { echo "gpu-check: go not found" >&2; exit 1; }
if [ -z "$dry" ]; then
  ls /dev/nvidia[0-9]* >/dev/null 2>&1 || { echo "gpu-check: no GPU here (no /dev/nvidia*); use --dry-run to check the script" >&2; exit 1; }
  nvidia-smi -L || { echo "gpu-check: nvidia-smi fails: no usable GPU" >&2; exit 1; }
fi

mkdir -p bin
CGO_ENABLED=0 go build -o bin/dragonx ./cmd/dragonx
go build -o bin/gpucheck ./scripts/gpucheck

if [ -n "$dry" ]; then
  out=${TMPDIR:-/tmp}/dragonx-gpu-check
  rm -rf "$out"
else
  out=kernels/testdata/gpu-check
fi
mkdir -p "$out"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
bin/gpucheck -out "$out" -model bin/dragonx "${args[@]}" | tee "$log"

if [ -n "$dry" ]; then
  csv="$out/dry-run.csv"
else
  device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr -c 'A-Za-z0-9\n' '-' | tr -s '-' | sed 's/-$//')
  csv="$out/measured-$device-$(date -u +%Y-%m-%d).csv"
  mv "$out/measured.csv" "$csv"
fi
{
  echo "# $(basename "$csv"): $(date -u +%Y-%m-%dT%H:%MZ), nvcc $(nvcc --version | tail -1)"
  if [ -z "$dry" ]; then nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader | sed 's/^/# device: /'; fi
  sed 's/^/# /' "$log"
} > "$csv.about"
echo "gpu-check: wrote $csv ($(($(wc -l < "$csv") - 1)) traces) and $csv.about"
