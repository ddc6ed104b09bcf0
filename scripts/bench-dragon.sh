#!/usr/bin/env bash
# bench-dragon.sh (issue 4): training throughput and MFU against the sgemm
# peak of the same run, sampling throughput with and without the KV cache;
# then the memory soak (RSS growth per 1,000 training steps and per 100,000
# sampled tokens, with the default two libtorch threads).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== dragon: dragonx dragon bench"
bin/dragonx dragon bench
echo "== dragon: memory soak"
go test -tags=torch -count=1 -timeout 60m -run '^TestSoak$' -v ./dragon -args -dragon.soak -dragon.threads=2 |
  grep -E '^(=== RUN|--- |ok|FAIL|PASS)|RSS|heap|runtime:'
