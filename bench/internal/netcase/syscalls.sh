#!/usr/bin/env bash
# syscalls.sh counts the system calls a Net benchmark server makes per
# request, apart from its clients: the server runs alone in one process
# (netcase's ServerEnv mode of the bench test binary), strace -c -f counts
# every thread of it over a fixed run, and the load comes from the same
# child client the benchmarks use, in a process of its own.
#
# usage: bench/internal/netcase/syscalls.sh [spindle|go_net] [depth] [requests]
#
# depth is the requests per write (1: echo, 16: pipeline); requests
# defaults to 100000. strace slows every system call down, so the server
# finds more connections ready per wait than it would untraced: the count
# per request is, if anything, lower than untraced for a server that waits
# in epoll itself. Needs strace (and ptrace permission); without it the
# script says so and exits 0.
set -euo pipefail
cd "$(dirname "$0")/../../.."

server=${1:-spindle}
depth=${2:-1}
requests=${3:-100000}
if ! command -v strace >/dev/null 2>&1; then
	echo "syscalls.sh: strace is not installed; nothing measured"
	exit 0
fi

dir=$(mktemp -d)
srvpid=
cleanup() {
	exec 3>&- 2>/dev/null || true
	[ -n "$srvpid" ] && wait "$srvpid" 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT

go test -c -o "$dir/bench.test" ./bench
mkfifo "$dir/srvin"
SPINDLE_NETCASE_SERVER=$server "$dir/bench.test" <"$dir/srvin" >"$dir/addr" &
srvpid=$!
exec 3>"$dir/srvin" # the server serves until this closes
for _ in $(seq 100); do
	[ -s "$dir/addr" ] && break
	sleep 0.05
done
addr=$(head -n1 "$dir/addr")
[ -n "$addr" ] || { echo "syscalls.sh: the server printed no address"; exit 1; }

coproc CLIENT { SPINDLE_NETCASE_CLIENT=1 "$dir/bench.test"; }
clientpid=$CLIENT_PID
clientin=${CLIENT[1]}
cmd() {
	echo "$1" >&"${CLIENT[1]}"
	local reply
	read -r reply <&"${CLIENT[0]}"
	[ "$reply" = ok ] || { echo "syscalls.sh: client: $reply"; exit 1; }
}
rounds=$(((requests + depth - 1) / depth))
cmd "dial $addr 64"
cmd "run $((64 * 8)) $depth" # warm-up

strace -c -f -o "$dir/strace" -p "$srvpid" 2>"$dir/attach" &
tracer=$!
for _ in $(seq 100); do
	grep -q attached "$dir/attach" 2>/dev/null && break
	sleep 0.05
done
sleep 0.2 # let strace attach to every thread
start=$(date +%s.%N)
cmd "run $rounds $depth"
end=$(date +%s.%N)
kill -INT "$tracer"
wait "$tracer" || true
eval "exec $clientin>&-"
wait "$clientpid" 2>/dev/null || true

made=$((rounds * depth))
echo "server $server, depth $depth: $made requests in $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }') s under strace"
awk -v n="$made" '
	$1 ~ /^[0-9.]+$/ && $NF != "total" { printf "  %-16s %.4f per request\n", $NF, $4 / n }
	$NF == "total" { printf "%.3f system calls per request (%d in all)\n", $4 / n, $4 }
' "$dir/strace"
