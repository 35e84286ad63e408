#!/usr/bin/env bash
# syscalls.sh counts the system calls a Net benchmark server makes per
# request, apart from its clients: the server runs alone in one process
# (netcase's ServerEnv mode of the bench test binary), strace -c -f counts
# every thread of it over a fixed run, and the load comes from the same
# child client the benchmarks use, in a process of its own.
#
# usage: bench/netcase/syscalls.sh [spindle|go_net] [depth] [requests]
#
# depth is the requests per write (1: echo, 16: pipeline); requests
# defaults to 100000. spindle is measured on each of netio's Linux
# backends in turn, epoll and io_uring (SPINDLE_NETIO=uring; where the
# kernel refuses io_uring that run is epoll again, and says so);
# BACKENDS="epoll" or BACKENDS="uring" picks one. strace slows every system call down, so the server
# finds more connections ready per wait than it would untraced: the count
# per request is, if anything, lower than untraced for a server that waits
# in epoll itself. Needs strace (and ptrace permission); without it the
# script says so and exits 0.
set -euo pipefail
cd "$(dirname "$0")/../.."

server=${1:-spindle}
depth=${2:-1}
requests=${3:-100000}
backends=${BACKENDS:-epoll uring}
[ "$server" = spindle ] || backends=-
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

# measure BACKEND: one traced run of the server on BACKEND (- for go_net).
measure() {
	local backend=$1 netio= label=$server
	if [ "$backend" = uring ]; then netio=uring; fi
	if [ "$backend" != - ]; then label="$server ($backend)"; fi
	rm -f "$dir/srvin" "$dir/addr" "$dir/strace" "$dir/attach"
	mkfifo "$dir/srvin"
	SPINDLE_NETIO=$netio SPINDLE_NETCASE_SERVER=$server "$dir/bench.test" <"$dir/srvin" >"$dir/addr" &
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
	exec 3>&-
	wait "$srvpid" 2>/dev/null || true
	srvpid=

	made=$((rounds * depth))
	echo "server $label, depth $depth: $made requests in $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }') s under strace"
	if [ "$backend" = uring ] && ! grep -q io_uring_enter "$dir/strace"; then
		echo "  (the kernel refused io_uring: this run was served by epoll)"
	fi
	awk -v n="$made" '
		$1 ~ /^[0-9.]+$/ && $NF != "total" { printf "  %-16s %.4f per request\n", $NF, $4 / n }
		$NF == "total" { printf "%.3f system calls per request (%d in all)\n", $4 / n, $4 }
	' "$dir/strace"
}

for b in $backends; do
	measure "$b"
done
