#!/usr/bin/env bash
# bench-engine.sh: the engine's speed targets (issue 2), measured in one run:
#  1. a no-op rerun of the 7-stage example experiment, process start to exit,
#     side by side with Snakemake on the equivalent pipeline (goal: <= 0.05 s
#     and >= 30x faster than Snakemake);
#  2. a no-op rerun of an experiment with an unchanged 1 GB local input
#     (goal: <= 0.1 s; the stat cache must spare the re-hash);
#  3. recording the run in the run log (goal: < 10 ms, issue 30).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${DRAGONX_BIN:-bin/dragonx}
[ -x "$bin" ] || { echo "bench-engine: build $bin first (make build)" >&2; exit 1; }
bin=$(readlink -f "$bin")
for tool in snakemake hyperfine; do
  if ! command -v $tool >/dev/null; then
    echo "bench-engine: installing $tool (Debian package)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $tool >/dev/null
  fi
done

work=$(mktemp -d /tmp/dragonx-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
runs=${BENCH_RUNS:-30}

# 1. Seven stages, dragonx vs Snakemake.
mkdir -p "$work/dx/data" "$work/sm"
cp experiments/examples/pipeline.hcl "$work/dx/"
cp experiments/examples/data/labels.txt "$work/dx/data/"
cp scripts/bench/Snakefile "$work/sm/"
cp experiments/examples/data/labels.txt "$work/sm/"
"$bin" run -j 2 "$work/dx/pipeline.hcl" 2>/dev/null
(cd "$work/sm" && snakemake --cores 2 --quiet >/dev/null 2>&1)
echo "bench-engine: no-op rerun of the 7-stage example ($runs runs each)"
hyperfine -N --warmup 3 --runs "$runs" --export-json "$work/noop.json" \
  -n dragonx "$bin run $work/dx/pipeline.hcl" \
  -n snakemake "snakemake --cores 1 --quiet -s $work/sm/Snakefile -d $work/sm" >/dev/null 2>&1 || \
  hyperfine --warmup 3 --runs "$runs" --export-json "$work/noop.json" \
  -n dragonx "$bin run $work/dx/pipeline.hcl" \
  -n snakemake "snakemake --cores 1 --quiet -s $work/sm/Snakefile -d $work/sm" >/dev/null
python3 - "$work/noop.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
d, s = r["dragonx"], r["snakemake"]
print(f"  dragonx   no-op: mean {d['mean']*1e3:7.1f} ms  median {d['median']*1e3:7.1f} ms  (goal <= 50 ms)")
print(f"  snakemake no-op: mean {s['mean']*1e3:7.1f} ms  median {s['median']*1e3:7.1f} ms")
print(f"  ratio snakemake/dragonx (median): {s['median']/d['median']:.1f}x  (goal >= 30x)")
PY

# 2. A no-op with an unchanged 1 GB local input.
mkdir -p "$work/big"
head -c $((1<<30)) /dev/urandom > "$work/big/big.bin"
cat > "$work/big/big.hcl" <<'HCL'
stage "size" {
  kind    = "exec"
  inputs  = { "big.bin" = "big.bin" }
  command = "wc -c < big.bin > size.txt"
  outputs = { size = "size.txt" }
}
HCL
sleep 2.1 # past the stat cache's racy window
start=$(date +%s.%N)
"$bin" run "$work/big/big.hcl" 2>/dev/null
end=$(date +%s.%N)
echo "bench-engine: first run with a 1 GB input (hash + copy + run): $(python3 -c "print(f'{$end-$start:.2f}')") s"
hyperfine -N --warmup 2 --runs "$runs" --export-json "$work/big.json" -n noop-1g "$bin run $work/big/big.hcl" >/dev/null 2>&1 || \
  hyperfine --warmup 2 --runs "$runs" --export-json "$work/big.json" -n noop-1g "$bin run $work/big/big.hcl" >/dev/null
python3 - "$work/big.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print(f"  no-op rerun with an unchanged 1 GB input: mean {r['mean']*1e3:.1f} ms  median {r['median']*1e3:.1f} ms  (goal <= 100 ms)")
PY

# 3. Recording the run in the run log on a no-op rerun of paper.hcl (issue 30):
#    NewEntry (metrics read from the cached results.json) and the entry file.
echo "bench-engine: recording a run on a no-op rerun of paper.hcl (goal < 10 ms)"
go test -run '^$' -bench BenchmarkRecordNoopPaper -benchtime 200x -count 3 ./stages/runlog |
  awk '/^BenchmarkRecordNoopPaper/ { printf "  record: %.2f ms/op (%s entry bytes)\n", $3/1e6, $5 }'
