#!/usr/bin/env bash
# compare_tls.sh: examples/redis against redis-server over TLS, driven by
# redis-benchmark --tls.
#
# Makes a throwaway CA and server certificate with openssl (in a temporary
# directory, removed at exit: nothing is kept), starts redis-server with
# --tls-port and examples/redis with -tls-addr on free loopback ports, and
# runs the same redis-benchmark runs against each, interleaved (round 1:
# both servers, round 2: both, ...), at -P 1 and -P 16. Each line gives the
# client's figures and the server's CPU time per request; the closing lines
# give the ratio examples/redis / redis-server of requests per second, per
# test and depth, over the rounds' medians.
#
#	examples/redis/compare_tls.sh            # ROUNDS=3 by default
#	ROUNDS=5 N=200000 examples/redis/compare_tls.sh
#
# Without redis-server, redis-benchmark, redis-cli or openssl (apt-get
# install redis-server redis-tools openssl), or with a redis-server built
# without TLS, it says what is missing and exits 0.
set -euo pipefail
cd "$(dirname "$0")"

missing=()
for cmd in go redis-server redis-benchmark redis-cli openssl; do
	command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "compare_tls.sh: missing ${missing[*]}; install redis-server, redis-tools and openssl to compare. Nothing run."
	exit 0
fi

ROUNDS=${ROUNDS:-3}
N=${N:-100000}
CLIENTS=${CLIENTS:-50}
TESTS=${TESTS:-set,get}

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

echo "== certificates (throwaway, in $work)"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-keyout "$work/ca.key" -out "$work/ca.crt" -days 1 -subj "/CN=compare_tls CA" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
	-keyout "$work/server.key" -out "$work/server.csr" -subj "/CN=localhost" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$work/ext.cnf"
openssl x509 -req -in "$work/server.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" -CAcreateserial \
	-out "$work/server.crt" -days 1 -extfile "$work/ext.cnf" 2>/dev/null

echo "== building"
go build -o "$work/spindle-redis" .

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

tlscli=(--tls --cacert "$work/ca.crt")

wait_up() {
	for _ in $(seq 300); do
		redis-cli -p "$1" "${tlscli[@]}" ping >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

declare -A port pid
port[redis]=$(free_port)
redis-server --port 0 --tls-port "${port[redis]}" --bind 127.0.0.1 --save "" --appendonly no \
	--tls-cert-file "$work/server.crt" --tls-key-file "$work/server.key" --tls-ca-cert-file "$work/ca.crt" \
	--tls-auth-clients no --logfile "$work/redis.log" &
pid[redis]=$!
pids+=("${pid[redis]}")
if ! wait_up "${port[redis]}"; then
	echo "compare_tls.sh: redis-server did not serve TLS (built without it?); its log:"
	cat "$work/redis.log" 2>/dev/null || true
	echo "Nothing compared."
	exit 0
fi
port[spindle]=$(free_port)
plain=$(free_port)
"$work/spindle-redis" -addr "127.0.0.1:$plain" -tls-addr "127.0.0.1:${port[spindle]}" \
	-tls-cert-file "$work/server.crt" -tls-key-file "$work/server.key" 2>"$work/spindle.log" &
pid[spindle]=$!
pids+=("${pid[spindle]}")
if ! wait_up "${port[spindle]}"; then
	echo "examples/redis did not start:" >&2
	cat "$work/spindle.log" >&2
	exit 1
fi
servers=(redis spindle)
echo "redis-server $(redis-server --version | awk '{print $3}') (TLS on ${port[redis]}), examples/redis (TLS on ${port[spindle]}); $(nproc) cores"

cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{print int(($14 + $15) * 1000 / hz)}' "/proc/$1/stat"; }

results="$work/results"
: >"$results"
bench() {
	local depth=$1
	echo
	echo "== redis-benchmark --tls -c $CLIENTS -n $N -r 1000000 -t $TESTS -P $depth"
	printf '%-6s %-8s %-5s %12s %9s %9s %12s\n' round server test 'req/s' 'p50 ms' 'p99 ms' 'server us/req'
	for r in $(seq "$ROUNDS"); do
		for s in "${servers[@]}"; do
			redis-cli -p "${port[$s]}" "${tlscli[@]}" flushall >/dev/null
			for t in $(echo "$TESTS" | tr , ' '); do
				c0=$(cpu_ms "${pid[$s]}")
				line=$(redis-benchmark -p "${port[$s]}" "${tlscli[@]}" -c "$CLIENTS" -n "$N" -r 1000000 -t "$t" -P "$depth" --csv 2>/dev/null | tail -n +2 | tr -d '"')
				c1=$(cpu_ms "${pid[$s]}")
				IFS=, read -r test rps avg min p50 p95 p99 max <<<"$line"
				printf '%-6s %-8s %-5s %12s %9s %9s %12s\n' "$r" "$s" "$test" "$rps" "$p50" "$p99" \
					"$(awk -v c=$((c1 - c0)) -v n="$N" 'BEGIN {printf "%.2f", c * 1000 / n}')"
				echo "$depth $s $test $rps" >>"$results"
			done
		done
	done
}

bench 1
bench 16

echo
echo "== examples/redis / redis-server, requests per second (medians over $ROUNDS rounds)"
for depth in 1 16; do
	for t in $(echo "$TESTS" | tr , ' ' | tr a-z A-Z); do
		med() { awk -v d="$depth" -v s="$1" -v t="$t" '$1 == d && $2 == s && $3 == t {print $4}' "$results" | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
		r=$(med redis)
		sp=$(med spindle)
		printf -- '-P %-3s %-4s redis-server %10s  examples/redis %10s  ratio %s\n' "$depth" "$t" "$r" "$sp" \
			"$(awk -v a="$sp" -v b="$r" 'BEGIN {if (b > 0) printf "%.2fx", a / b; else print "?"}')"
	done
done
