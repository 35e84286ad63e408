#!/bin/sh
# compare.sh: wrk on GET /kv/KEY of webkv (default shards and -shards 1)
# and of its net/http twin, runs interleaved, with requests/s, p99 and the
# server's CPU time per request (utime+stime from /proc/PID/stat).
# Not part of CI; exits 0 naming what is missing.
#   RUNS=3 DUR=10s sh examples/webkv/compare.sh
set -u
cd "$(dirname "$0")" || exit 0
command -v wrk >/dev/null 2>&1 || { echo "compare.sh: wrk is missing (apt-get install wrk); nothing measured"; exit 0; }
command -v go >/dev/null 2>&1 || { echo "compare.sh: go is missing; nothing measured"; exit 0; }
RUNS=${RUNS:-3}; DUR=${DUR:-10s}
tmp=$(mktemp -d); trap 'kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
go build -o "$tmp/webkv" . && (cd twin && go build -o "$tmp/twin" .) || { echo "compare.sh: build failed"; exit 0; }
tck=$(getconf CLK_TCK)
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
one() { # name cmd... ; conns from $c
	name=$1; shift
	"$@" >/dev/null 2>&1 & pid=$!
	for i in 1 2 3 4 5 6 7 8 9 10; do curl -s -o /dev/null -X PUT --data-binary vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv "http://$addr/kv/key1" && break; sleep 0.3; done
	c0=$(cpu $pid)
	wrk -t1 -c"$c" -d"$DUR" --latency "http://$addr/kv/key1" >"$tmp/out"
	c1=$(cpu $pid)
	kill $pid; wait $pid 2>/dev/null
	rps=$(awk '/^Requests\/sec/{print $2}' "$tmp/out")
	p99=$(awk '$1=="99%"{print $2}' "$tmp/out")
	reqs=$(awk '/requests in/{print $1}' "$tmp/out")
	us=$(awk -v a="$c0" -v b="$c1" -v t="$tck" -v n="$reqs" 'BEGIN{printf "%.2f", (b-a)/t*1e6/n}')
	bad=$(awk '/Non-2xx/{print $NF}' "$tmp/out"); echo "c=$c run=$r $name non2xx=${bad:-0} req/s=$rps p99=$p99 cpu-us/req=$us load=$(cut -d' ' -f1 /proc/loadavg)"
}
for c in 50 256; do
	for r in $(seq "$RUNS"); do
		addr=127.0.0.1:18080; one webkv "$tmp/webkv" -addr $addr
		addr=127.0.0.1:18081; one webkv-shards1 "$tmp/webkv" -addr $addr -shards 1
		addr=127.0.0.1:18082; one twin "$tmp/twin" -addr $addr
	done
done
