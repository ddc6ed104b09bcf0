#!/usr/bin/env bash
# bench-cache.sh: the cache's throughput figures (issue 2): SHA-256 hashing
# of a large file (goal >= 1 GB/s), PutBlob/OpenBlob on Badger, the cache work
# of a 7-stage no-op run, and a 2 GiB blob streamed in bounded memory.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "bench-cache: hashing, blob throughput, no-op cache work"
go test -run XXX -bench 'HashFile|PutBlob|OpenBlob|NoopRerun' -benchtime 5x ./cache/ | grep -E '^(Benchmark|ok)'
echo "bench-cache: a 2 GiB blob, streamed"
DRAGONX_CACHE_HEAVY=1 go test -count=1 -run LargeBlob -v ./cache/ | grep -vE '^(=== RUN|--- PASS|PASS)'
