#!/usr/bin/env bash
# bench-kernels.sh (issue 3): IR clone/hash (every trace replay clones and
# hashes), the reference interpreter, trace parse + replay (replays per
# second per core = 1e9 / ns/op of BenchmarkReplayDense at -cpu 1), and the
# heavy checks the regular tests skip: the interpreter on the larger TVM
# traces and a long run of random schedules.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== kernels: clone, hash, interpreter"
go test -run '^$' -bench 'Clone|Hash|NewIndex' -benchmem ./kernels/ir/
go test -run '^$' -bench . -benchtime 3x ./kernels/interp/
echo "== kernels: trace parse + replay"
go test -run '^$' -bench 'Replay|Parse' -benchmem -cpu 1 ./kernels/trace/
echo "== kernels: heavy checks"
DRAGONX_HEAVY_TESTS=1 go test -run 'TVMTracesNumeric' -timeout 60m ./kernels/trace/
DRAGONX_SCHEDULE_SEQUENCES=20000 go test -run 'RandomSchedules' -timeout 30m ./kernels/schedule/
DRAGONX_HEAVY_TESTS=1 go test -count=1 -run '^TestWalkDecisions$' -v ./stages/bench/ | grep -E 'walks:|^(ok|FAIL|---)'
