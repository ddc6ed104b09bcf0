#!/usr/bin/env bash
# bench-remote.sh: the remote cache's figures (issue 5), measured in one run
# over loopback against a real nginx (WebDAV) and a shared directory:
#  1. push and pull throughput of a 1 GiB experiment (cache push into an
#     empty remote, cache pull into an empty cache);
#  2. a fully cached teammate run of experiments/examples/pipeline.hcl (an
#     empty local cache, every stage pulled), process start to exit, beside
#     a from-scratch run and a local no-op; and a local no-op with a remote
#     configured (it must not contact the remote, nor cost more: on a busy
#     machine compare the CPU time, user + system, more than the wall time);
#  3. the 2 GiB artifact of the fault tests: run -push, then a teammate's
#     run pulls it, with the heap bounded (make test uses 128 MiB).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${DRAGONX_BIN:-bin/dragonx}
[ -x "$bin" ] || { echo "bench-remote: build $bin first (make build)" >&2; exit 1; }
bin=$(readlink -f "$bin")
for tool in nginx hyperfine; do
  if ! command -v $tool >/dev/null && [ ! -x /usr/sbin/$tool ]; then
    echo "bench-remote: $tool is missing (make setup installs nginx; apt-get install hyperfine)" >&2
    exit 1
  fi
done
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)
runs=${BENCH_RUNS:-20}

work=$(mktemp -d /tmp/dragonx-bench-remote.XXXXXX)
ngx_pid=
cleanup() {
  [ -n "$ngx_pid" ] && kill "$ngx_pid" 2>/dev/null && wait "$ngx_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# nginx on a free port, one process, its own configuration (as the tests run it).
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$work/ngx/data/.tmp" "$work/ngx/temp"
user=; [ "$(id -u)" -eq 0 ] && user="user root;"
cat > "$work/ngx/nginx.conf" <<EOF
$user
master_process off;
pid $work/ngx/nginx.pid;
error_log $work/ngx/error.log;
events { worker_connections 512; }
http {
    access_log off;
    client_body_temp_path $work/ngx/data/.tmp;
    proxy_temp_path $work/ngx/temp/proxy;
    fastcgi_temp_path $work/ngx/temp/fastcgi;
    uwsgi_temp_path $work/ngx/temp/uwsgi;
    scgi_temp_path $work/ngx/temp/scgi;
    sendfile on;
    server {
        listen 127.0.0.1:$port;
        root $work/ngx/data;
        location / {
            dav_methods PUT DELETE;
            create_full_put_path on;
            client_max_body_size 0;
        }
    }
}
EOF
"$nginx_bin" -p "$work/ngx" -c "$work/ngx/nginx.conf" -e "$work/ngx/error.log" -g 'daemon off;' &
ngx_pid=$!
for _ in $(seq 100); do
  (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break
  sleep 0.05
done
url=http://127.0.0.1:$port
echo "bench-remote: nginx $($nginx_bin -v 2>&1 | sed 's/.*\///') on $url (pid $ngx_pid); shared directory $work/share"

now() { date +%s.%N; }
rate() { python3 -c "import sys; b, s = float(sys.argv[1]), float(sys.argv[2]); print(f'{s:6.2f} s  {b/s/1e9:5.2f} GB/s')" "$@"; }

# 1. A 1 GiB experiment: four 256 MiB files in a directory output, and a
#    stage that reads them.
mkdir -p "$work/big" "$work/share"
cat > "$work/big/big.hcl" <<'HCL'
stage "data" {
  kind    = "exec"
  command = "mkdir shards && for i in 0 1 2 3; do head -c 268435456 /dev/urandom > shards/$i.bin; done"
  outputs = { shards = "shards" }
}
stage "count" {
  kind    = "exec"
  inputs  = { "shards" = stage.data.out.shards }
  command = "cat shards/*.bin | wc -c > n.txt"
  outputs = { n = "n.txt" }
}
HCL
bytes=$((1 << 30))
DRAGONX_CACHE=$work/big/cacheA "$bin" run -out - "$work/big/big.hcl" 2>/dev/null
echo "bench-remote: push and pull of a 1 GiB experiment (2 stages, 6 blobs), loopback"
for remote in "$url" "file://$work/share"; do
  name=nginx; [[ $remote == file://* ]] && name=dir
  sync
  t0=$(now)
  DRAGONX_CACHE=$work/big/cacheA "$bin" cache push -remote "$remote" "$work/big/big.hcl" >/dev/null 2>&1
  t1=$(now)
  echo "  $name  push  $(rate $bytes "$(python3 -c "print($t1-$t0)")")"
  rm -rf "$work/big/cacheB"
  sync
  t0=$(now)
  DRAGONX_CACHE=$work/big/cacheB "$bin" cache pull -remote "$remote" "$work/big/big.hcl" >/dev/null 2>&1
  t1=$(now)
  echo "  $name  pull  $(rate $bytes "$(python3 -c "print($t1-$t0)")")"
  rm -rf "$work/big/cacheC" "$work/big/outC"
  sync
  t0=$(now)
  DRAGONX_CACHE=$work/big/cacheC "$bin" run -remote "$remote" -out "$work/big/outC" "$work/big/big.hcl" 2>/dev/null
  t1=$(now)
  echo "  $name  teammate run (pull + copy to out/)  $(rate $bytes "$(python3 -c "print($t1-$t0)")")"
done
rm -rf "$work/big"

# 2. The 7-stage example: a teammate's fully cached run.
mkdir -p "$work/ex/data"
cp experiments/examples/pipeline.hcl "$work/ex/"
cp experiments/examples/data/labels.txt "$work/ex/data/"
DRAGONX_CACHE=$work/ex/cacheA "$bin" run -remote "$url" -push -out "$work/ex/outA" "$work/ex/pipeline.hcl" 2>/dev/null
echo "bench-remote: experiments/examples/pipeline.hcl (7 stages), $runs runs each"
hyperfine -N --warmup 2 --runs "$runs" --export-json "$work/ex.json" \
  --prepare "rm -rf $work/ex/cacheB $work/ex/outB" \
  -n teammate "$bin run -remote $url -cache $work/ex/cacheB -out $work/ex/outB $work/ex/pipeline.hcl" \
  -n scratch-local "$bin run -remote off -cache $work/ex/cacheB -out $work/ex/outB $work/ex/pipeline.hcl" >/dev/null 2>&1 || {
  echo "bench-remote: hyperfine failed" >&2; exit 1; }
DRAGONX_CACHE=$work/ex/cacheB "$bin" run -remote off -out "$work/ex/outB" "$work/ex/pipeline.hcl" 2>/dev/null
hyperfine -N --warmup 3 --runs "$runs" --export-json "$work/noop.json" \
  -n noop-local "$bin run -remote off -cache $work/ex/cacheB -out $work/ex/outB $work/ex/pipeline.hcl" \
  -n noop-with-remote "$bin run -remote $url -cache $work/ex/cacheB -out $work/ex/outB $work/ex/pipeline.hcl" >/dev/null 2>&1
python3 - "$work/ex.json" "$work/noop.json" <<'PY'
import json, sys
r = {}
for f in sys.argv[1:]:
    r.update({x["command"]: x for x in json.load(open(f))["results"]})
def line(name, what):
    x = r[name]
    cpu = (x["user"] + x["system"]) * 1e3
    print(f"  {what:<52} mean {x['mean']*1e3:7.1f} ms  median {x['median']*1e3:7.1f} ms  cpu {cpu:6.1f} ms")
line("teammate", "fully cached teammate run (empty cache, all pulled)")
line("scratch-local", "from scratch, no remote (every stage runs)")
line("noop-local", "local no-op, no remote")
line("noop-with-remote", "local no-op, remote configured (not contacted)")
PY
DRAGONX_CACHE=$work/ex/cacheB "$bin" run -remote "$url" -json -out "$work/ex/outB" "$work/ex/pipeline.hcl" 2>/dev/null | grep -c '"status": "cached"' | sed 's/^/  check: stages cached in the last teammate run: /'

# 3. The 2 GiB artifact, streamed through nginx with the heap measured.
echo "bench-remote: a 2 GiB artifact pushed and pulled (heap peak in the log)"
DRAGONX_REMOTE_HEAVY=1 go test -count=1 -run 'TestRemoteLargeArtifact$' -v -timeout 30m ./cmd/dragonx/ | grep -E 'remote_test|^(ok|FAIL|---)'
