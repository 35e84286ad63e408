#!/usr/bin/env bash
# compare.sh: examples/redis against redis-server and a gnet v2 server with
# a mutex-guarded map (examples/redis/gnetpeer), driven by redis-benchmark.
# examples/redis runs twice, once on each of netio's Linux backends:
# "spindle" on epoll, "spindle-uring" on io_uring (SPINDLE_NETIO=uring;
# where the kernel refuses io_uring it is epoll again). BACKENDS=epoll or
# BACKENDS=uring keeps one.
#
# Starts the three servers on free loopback ports and runs the same
# redis-benchmark runs against each, interleaved (round 1: every server,
# round 2: every server, ...), so that a noisy machine hurts them alike.
# Then measures the memory of 10,000 idle clients and of 1M keys with
# 16-byte values on each.
#
#	examples/redis/compare.sh            # ROUNDS=2 by default
#	ROUNDS=3 N=300000 examples/redis/compare.sh
#	SKIP_MEMORY=1 examples/redis/compare.sh   # throughput only
#	SKIP_BENCH=1 examples/redis/compare.sh    # memory only
#	BACKENDS=uring TESTS=get examples/redis/compare.sh
#
# Without redis-server or redis-benchmark (apt-get install redis-server
# redis-tools) it says what is missing and exits 0.
set -euo pipefail
cd "$(dirname "$0")"

missing=()
for cmd in go redis-server redis-benchmark redis-cli; do
	command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "compare.sh: missing ${missing[*]}; install redis-server and redis-tools to compare. Nothing run."
	exit 0
fi

ROUNDS=${ROUNDS:-2}
N=${N:-300000}
CLIENTS=${CLIENTS:-50}
IDLE=${IDLE:-10000}
KEYS=${KEYS:-1000000}
BACKENDS=${BACKENDS:-epoll uring}

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

echo "== building"
go build -o "$work/spindle-redis" .
(cd gnetpeer && go build -o "$work/gnet-redis" .)

# free_port prints a loopback port nobody uses, below the ephemeral range
# (where the local ends of client connections would collide).
free_port() {
	local p
	while :; do
		p=$((10000 + RANDOM % 20000))
		if [ -z "$(ss -Htan "( sport = :$p )" 2>/dev/null)" ] && ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
}

wait_up() {
	for _ in $(seq 300); do
		redis-cli -p "$1" ping >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "server on port $1 did not start:" >&2
	cat "$work"/*.log >&2
	exit 1
}

ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

declare -A port pid
port[redis]=$(free_port)
redis-server --port "${port[redis]}" --bind 127.0.0.1 --save "" --appendonly no --maxclients 20000 --logfile "$work/redis.log" &
pid[redis]=$!
pids+=("${pid[redis]}")
spindles=()
for b in $BACKENDS; do
	case $b in
	epoll) s=spindle netio= ;;
	uring) s=spindle-uring netio=uring ;;
	*) echo "compare.sh: unknown backend $b (want epoll or uring)" >&2; exit 1 ;;
	esac
	port[$s]=$(free_port)
	SPINDLE_NETIO=$netio "$work/spindle-redis" -addr "127.0.0.1:${port[$s]}" 2>"$work/$s.log" &
	pid[$s]=$!
	pids+=("${pid[$s]}")
	spindles+=("$s")
done
port[gnet]=$(free_port)
"$work/gnet-redis" -addr "127.0.0.1:${port[gnet]}" >"$work/gnet.log" 2>&1 &
pid[gnet]=$!
pids+=("${pid[gnet]}")
servers=(redis "${spindles[@]}" gnet)
for s in "${servers[@]}"; do wait_up "${port[$s]}"; done
echo "redis-server $(redis-server --version | awk '{print $3}') on ${port[redis]}, $(for s in "${spindles[@]}"; do printf 'examples/redis (%s) on %s, ' "$s" "${port[$s]}"; done)gnetpeer on ${port[gnet]}; $(nproc) cores"

# cpu_ms PID prints the CPU time (user and system) the process has used,
# in milliseconds.
cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{print int(($14 + $15) * 1000 / hz)}' "/proc/$1/stat"; }

# bench ARGS... runs redis-benchmark against every server, ROUNDS times,
# interleaved, and prints one line per server, test and round: the
# client's figures, and the server's CPU time per request over the run
# (user and system, all threads), which the machine's noise moves less.
bench() {
	echo
	echo "== redis-benchmark -c $CLIENTS -n $N -t $TESTS $*"
	printf '%-6s %-13s %-5s %12s %9s %9s %12s\n' round server test 'req/s' 'p50 ms' 'p99 ms' 'server us/req'
	for r in $(seq "$ROUNDS"); do
		for s in "${servers[@]}"; do
			redis-cli -p "${port[$s]}" flushall >/dev/null
			for t in $(echo "$TESTS" | tr , ' '); do
				c0=$(cpu_ms "${pid[$s]}")
				line=$(redis-benchmark -p "${port[$s]}" -c "$CLIENTS" -n "$N" -t "$t" "$@" --csv 2>/dev/null | tail -n +2 | tr -d '"')
				c1=$(cpu_ms "${pid[$s]}")
				IFS=, read -r test rps avg min p50 p95 p99 max <<<"$line"
				printf '%-6s %-13s %-5s %12s %9s %9s %12s\n' "$r" "$s" "$test" "$rps" "$p50" "$p99" \
					"$(awk -v c=$((c1 - c0)) -v n="$N" 'BEGIN {printf "%.2f", c * 1000 / n}')"
			done
		done
	done
}

TESTS=${TESTS:-set,get}

if [ -z "${SKIP_BENCH:-}" ]; then
	bench -r 1000000 -P 16
	bench -r 1000000 -P 1
fi

if [ -n "${SKIP_MEMORY:-}" ]; then
	exit 0
fi

rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
info_field() { redis-cli -p "$1" info "$2" | tr -d '\r' | awk -F: -v k="$3" '$1 == k {print $2}'; }

echo
echo "== $IDLE idle clients (redis-benchmark -I): RSS growth per connection"
printf '%-13s %10s %10s %10s\n' server 'clients' 'RSS KB' 'B/conn'
# gnetpeer is left out: it cannot be asked to return the memory of the
# runs before to the system, so its RSS growth would read near zero.
for s in redis "${spindles[@]}"; do
	redis-cli -p "${port[$s]}" flushall >/dev/null
	[ "$s" != redis ] && redis-cli -p "${port[$s]}" memory purge >/dev/null
	before=$(rss_kb "${pid[$s]}")
	redis-benchmark -p "${port[$s]}" -c "$IDLE" -I >/dev/null 2>&1 &
	idle=$!
	for _ in $(seq 300); do
		n=$(info_field "${port[$s]}" clients connected_clients)
		[ "${n:-0}" -ge "$IDLE" ] && break
		sleep 0.1
	done
	[ "$s" != redis ] && redis-cli -p "${port[$s]}" memory purge >/dev/null
	after=$(rss_kb "${pid[$s]}")
	printf '%-13s %10s %10s %10s\n' "$s" "$n" "$after" $(((after - before) * 1024 / IDLE))
	kill "$idle" 2>/dev/null || true
	wait "$idle" 2>/dev/null || true
	sleep 1
done

echo
echo "== $KEYS keys of 16-byte values (SET key:N v, through redis-cli --pipe)"
printf '%-13s %14s %14s %12s %12s\n' server 'used_memory B' 'RSS growth KB' 'used B/key' 'RSS B/key'
for s in redis "${spindles[@]}"; do
	redis-cli -p "${port[$s]}" flushall >/dev/null
	[ "$s" != redis ] && redis-cli -p "${port[$s]}" memory purge >/dev/null
	before=$(rss_kb "${pid[$s]}")
	used0=$(info_field "${port[$s]}" memory used_memory)
	awk -v n="$KEYS" 'BEGIN { for (i = 0; i < n; i++) printf "*3\r\n$3\r\nSET\r\n$%d\r\nkey:%d\r\n$16\r\nvalue-0123456789\r\n", length("key:" i), i }' |
		redis-cli -p "${port[$s]}" --pipe >/dev/null
	[ "$s" != redis ] && redis-cli -p "${port[$s]}" memory purge >/dev/null
	after=$(rss_kb "${pid[$s]}")
	used=$(info_field "${port[$s]}" memory used_memory)
	printf '%-13s %14s %14s %12s %12s\n' "$s" "$used" $((after - before)) $(((used - used0) / KEYS)) $(((after - before) * 1024 / KEYS))
done
