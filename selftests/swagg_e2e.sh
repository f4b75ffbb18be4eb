#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# End-to-end test of libxina (through xina-allreduce) against xina-swagg,
# the user-space aggregator, on the loopback device of a network namespace
# this test creates: 2, 4 and 8 workers, int32 and float32, 1 element to
# 64 MiB including non-full last packets, loss (netem on the namespace's
# lo), a worker killed mid-allreduce, a missing switch and a wrong key.
#
#   selftests/swagg_e2e.sh [-q]	(-q: skip the 64 MiB cases)
#
# TAP output; exit 0 pass, 1 fail, 4 skip.

set -u

ksft_skip=4
O=${O:-build}
SWAGG=$O/xina-swagg
AR=$O/xina-allreduce
LIBTEST=$O/xina-libtest
SWAGG_ASAN=$O/selftests/xina-swagg-asan
XINACTL=$O/xinactl
PORT=9277
JOB=7
SLOTS=64
ELEMS=1024
QUICK=0
[ "${1:-}" = "-q" ] && QUICK=1

ns=""
tmp=""
swagg_pid=""
ntest=0
nfail=0

skip_all()
{
	echo "1..0 # SKIP $*"
	exit $ksft_skip
}

cleanup()
{
	[ -n "$swagg_pid" ] && kill "$swagg_pid" 2>/dev/null
	[ -n "$ns" ] && ip netns pids "$ns" 2>/dev/null | xargs -r kill 2>/dev/null
	[ -n "$ns" ] && ip netns del "$ns" 2>/dev/null
	[ -n "$tmp" ] && rm -rf "$tmp"
}

log_test()
{
	local rc=$1 name=$2

	ntest=$((ntest + 1))
	if [ "$rc" -eq 0 ]; then
		echo "ok $ntest $name"
	else
		nfail=$((nfail + 1))
		echo "not ok $ntest $name"
		[ -s "$tmp/why" ] && sed 's/^/# /' "$tmp/why"
	fi
	: > "$tmp/why"
}

why()
{
	echo "$*" >> "$tmp/why"
}

# Busy-wait (up to ~5 s) until the aggregator's socket is bound.
wait_swagg()
{
	local i

	for i in $(seq 100); do
		ip netns exec "$ns" ss -Hlun "sport = :$PORT" | grep -q . && return 0
		kill -0 "$swagg_pid" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

# start_swagg WORKERS [extra args]
start_swagg()
{
	local w=$1 r members=""

	shift
	for r in $(seq 0 $((w - 1))); do
		members="$members --member $r=127.0.1.$((r + 1))"
	done
	# shellcheck disable=SC2086
	ip netns exec "$ns" "$SWAGG" --port $PORT --job $JOB --key-file "$KEYFILE" \
		--workers "$w" --slots $SLOTS --elems $ELEMS $members "$@" \
		> "$tmp/swagg.out" 2> "$tmp/swagg.err" &
	swagg_pid=$!
	wait_swagg || { why "xina-swagg did not come up: $(cat "$tmp/swagg.err")"; return 1; }
}

stop_swagg()
{
	[ -z "$swagg_pid" ] && return
	kill -INT "$swagg_pid"
	wait "$swagg_pid"
	swagg_pid=""
}

# Counter @1 from the aggregator's printout.
swagg_stat()
{
	sed -n "s/.* $1 \([0-9]*\).*/\1/p" "$tmp/swagg.out" | head -n1
}

# JSON field @2 of worker output file @1 (numbers and strings).
jfield()
{
	sed -n "s/.*\"$2\":\"\{0,1\}\([^,\"}]*\).*/\1/p" "$1"
}

# start_workers WORKERS DTYPE BYTES ITERS [extra args]: pids in $wpids
start_workers()
{
	local w=$1 dtype=$2 bytes=$3 iters=$4 r

	shift 4
	wpids=""
	for r in $(seq 0 $((w - 1))); do
		ip netns exec "$ns" "$AR" --switch 127.0.0.1:$PORT \
			--bind 127.0.1.$((r + 1)) --job $JOB --key-file "$KEYFILE" \
			--rank "$r" --workers "$w" --slots $SLOTS --elems $ELEMS \
			--dtype "$dtype" --bytes "$bytes" --iters "$iters" \
			--json "$@" > "$tmp/w$r.json" 2> "$tmp/w$r.err" &
		wpids="$wpids $!"
	done
}

# Wait for all workers; 0 if all verified and got identical bits.
check_workers()
{
	local w=$1 r rc=0 sum first=""

	r=0
	for p in $wpids; do
		if ! wait "$p"; then
			why "rank $r failed: $(cat "$tmp/w$r.err")"
			rc=1
		fi
		r=$((r + 1))
	done
	for r in $(seq 0 $((w - 1))); do
		[ "$(jfield "$tmp/w$r.json" verified)" = true ] ||
			{ why "rank $r: not verified"; rc=1; }
		sum=$(jfield "$tmp/w$r.json" checksum)
		[ -z "$first" ] && first=$sum
		[ "$sum" = "$first" ] ||
			{ why "rank $r checksum $sum != rank 0 checksum $first"; rc=1; }
	done
	return $rc
}

# run_job NAME WORKERS DTYPE BYTES ITERS [worker args]
run_job()
{
	local name=$1 w=$2 rc=0

	shift
	start_swagg "$w" || { log_test 1 "$name"; return; }
	start_workers "$@"
	check_workers "$w" || rc=1
	stop_swagg
	[ "$(swagg_stat drop_member)" = 0 ] && [ "$(swagg_stat malformed)" = 0 ] ||
		{ why "swagg dropped packets: $(cat "$tmp/swagg.out")"; rc=1; }
	log_test $rc "$name"
}

# Drop @1 percent of xina datagrams both ways, in the namespace only.
# (netem is not built into the host kernel; nftables is.)
add_loss()
{
	ip netns exec "$ns" nft -f - <<-EOF
	table inet xina_loss {
		chain out {
			type filter hook output priority 0; policy accept;
			udp dport $PORT numgen random mod 100 < $1 counter drop
			udp sport $PORT numgen random mod 100 < $1 counter drop
		}
	}
	EOF
}

# The same job with and without loss: the float results must be the same
# bits, whatever order and how often contributions reached the switch.
test_loss()
{
	local rc=0 retrans=0 r clean lossy name="loss 2%: 4 workers f32 recover by retransmission"

	start_swagg 4 || { log_test 1 "$name"; return; }
	start_workers 4 f32 $((1 << 20)) 3
	check_workers 4 || rc=1
	stop_swagg
	clean=$(jfield "$tmp/w0.json" checksum)
	if ! add_loss 2; then
		ntest=$((ntest + 1))
		echo "ok $ntest $name # SKIP nftables numgen unavailable"
		return
	fi
	start_swagg 4 || { log_test 1 "$name"; return; }
	start_workers 4 f32 $((1 << 20)) 3 --rto-us 2000
	check_workers 4 || rc=1
	stop_swagg
	ip netns exec "$ns" nft delete table inet xina_loss
	for r in 0 1 2 3; do
		retrans=$((retrans + $(jfield "$tmp/w$r.json" retrans)))
	done
	[ "$retrans" -gt 0 ] || { why "2% loss but no retransmission"; rc=1; }
	[ "$(swagg_stat retrans_answered)" -gt 0 ] ||
		{ why "no retransmission answered with the kept result"; rc=1; }
	lossy=$(jfield "$tmp/w0.json" checksum)
	[ "$clean" = "$lossy" ] ||
		{ why "f32 results differ with loss: checksum $lossy, without $clean"; rc=1; }
	log_test $rc "$name ($retrans resends), bitwise the same result as without loss"
}

# UDP datagrams received in the namespace so far.
udp_in()
{
	ip netns exec "$ns" awk '/^Udp:/ { if (n++) print $2 }' /proc/net/snmp
}

test_dead_peer()
{
	local rc=0 r t0 t1 dead p

	start_swagg 3 || { log_test 1 "dead peer"; return; }
	start_workers 3 i32 $((16 << 20)) 1000 --timeout-ms 1000
	# Kill rank 2 once the job is under way (datagrams are flowing).
	for r in $(seq 200); do
		[ "$(udp_in)" -gt 2000 ] && break
		sleep 0.05
	done
	dead=$(echo "$wpids" | awk '{print $3}')
	kill -9 "$dead"
	t0=$(date +%s%N)
	for r in 0 1; do
		p=$(echo "$wpids" | awk -v i=$((r + 1)) '{print $i}')
		if wait "$p"; then
			why "rank $r succeeded although rank 2 is dead"
			rc=1
		fi
		grep -q "no result from switch" "$tmp/w$r.err" ||
			{ why "rank $r: unclear error: $(cat "$tmp/w$r.err")"; rc=1; }
	done
	t1=$(date +%s%N)
	wait "$dead" 2>/dev/null
	stop_swagg
	# timeout 1 s; allow the peer's rounds in flight and slow scheduling
	[ $(((t1 - t0) / 1000000)) -lt 4000 ] ||
		{ why "survivors took $(((t1 - t0) / 1000000)) ms to give up"; rc=1; }
	log_test $rc "dead peer: survivors fail with a clear error within the timeout"
}

test_no_switch()
{
	local rc=0

	start_workers 1 i32 4096 1 --timeout-ms 500
	check_workers 1 2>/dev/null && { why "succeeded without a switch"; rc=1; }
	grep -q "unreachable" "$tmp/w0.err" ||
		{ why "error does not say unreachable: $(cat "$tmp/w0.err")"; rc=1; }
	log_test $rc "no switch: ICMP port unreachable reported"
}

# A worker with another job's secret: its tags do not verify.
test_bad_key()
{
	local rc=0

	"$XINACTL" genkey "$tmp/other.key" || { log_test 1 "bad key"; return; }
	start_swagg 1 || { log_test 1 "bad key"; return; }
	ip netns exec "$ns" "$AR" --switch 127.0.0.1:$PORT --bind 127.0.1.1 \
		--job $JOB --key-file "$tmp/other.key" --rank 0 --workers 1 \
		--slots $SLOTS --elems $ELEMS --bytes 4096 --iters 1 \
		--timeout-ms 300 \
		> "$tmp/w0.json" 2> "$tmp/w0.err" && { why "bad key accepted"; rc=1; }
	stop_swagg
	[ "$(swagg_stat drop_auth)" -gt 0 ] || { why "drop_auth not counted"; rc=1; }
	[ "$(swagg_stat contrib)" = 0 ] || { why "a wrong-key packet was added"; rc=1; }
	log_test $rc "wrong secret: dropped and counted (drop_auth), never added"
}

test_api()
{
	local rc=0

	"$LIBTEST" api > "$tmp/api.out" 2>&1 || rc=1
	grep "^not ok" "$tmp/api.out" >> "$tmp/why"
	log_test $rc "libxina API: options and input validation ($(grep -c '^ok' "$tmp/api.out") checks)"
}

# One malformed or foreign packet of each kind: each counted, none added.
test_bad_packets()
{
	local rc=0 c want

	start_swagg 1 || { log_test 1 "bad packets"; return; }
	ip -n "$ns" addr add 127.0.2.1/8 dev lo 2>/dev/null
	ip netns exec "$ns" "$LIBTEST" packets 127.0.0.1:$PORT 127.0.1.1 127.0.2.1 \
		> "$tmp/pkt.out" 2>&1 || { why "$(cat "$tmp/pkt.out")"; rc=1; }
	# then a real allreduce: the bad packets left every slot clean
	start_workers 1 i32 $((4 * ELEMS * 2)) 2
	check_workers 1 || rc=1
	stop_swagg
	for c in malformed=9 no_job=1 drop_key=0 drop_auth=2 drop_epoch=1 \
		 drop_member=2 drop_range=2 drop_op=2; do
		want=${c#*=}
		[ "$(swagg_stat "${c%=*}")" = "$want" ] ||
			{ why "${c%=*} is $(swagg_stat "${c%=*}"), want $want"; rc=1; }
	done
	log_test $rc "bad packets: each dropped into its counter, slots untouched"
}

# xina-swagg with a --member rank not below --workers: refused before the
# rank is used (under AddressSanitizer: a write past the members is caught).
test_member_rank()
{
	local rc=0 args="--port $PORT --job $JOB --key-file $KEYFILE --slots 4 --elems 8"
	local bad w st

	for bad in "2 200=10.0.0.1 0=10.0.0.2" "2 2=10.0.0.1 0=10.0.0.2" \
		   "1 255=10.0.0.1"; do
		# shellcheck disable=SC2086 # WORKERS and the members, split
		set -- $bad
		w=$1
		shift
		# shellcheck disable=SC2046,SC2086
		ASAN_OPTIONS=detect_leaks=0 "$SWAGG_ASAN" $args --workers "$w" \
			$(printf -- '--member %s ' "$@") \
			> "$tmp/rank.out" 2> "$tmp/rank.err"
		st=$?
		[ "$st" -eq 2 ] || { why "workers $w, members $*: exit $st (want 2: usage)"; rc=1; }
		grep -q "AddressSanitizer" "$tmp/rank.err" &&
			{ why "workers $w, members $*: $(grep -m1 ERROR "$tmp/rank.err")"; rc=1; }
		grep -q -- "--member '$1': rank ${1%%=*} not below --workers $w" "$tmp/rank.err" ||
			{ why "workers $w, members $*: said $(head -n1 "$tmp/rank.err")"; rc=1; }
	done
	log_test $rc "--member with a rank not below --workers refused before it is written"
}

[ "$(id -u)" -eq 0 ] || skip_all "needs root for network namespaces"
for t in ip ss nft; do
	command -v $t >/dev/null || skip_all "$t not installed"
done
for t in "$SWAGG" "$SWAGG_ASAN" "$AR" "$LIBTEST" "$XINACTL"; do
	[ -x "$t" ] || skip_all "$t not built (make user)"
done

tmp=$(mktemp -d)
# The job's secret, in the test's own directory.
KEYFILE=$tmp/job.key
"$XINACTL" genkey "$KEYFILE" || exit 1
export XINA_KEY_FILE=$KEYFILE
ns=xina-swagg-$$-$RANDOM
trap cleanup EXIT
trap 'exit 1' INT TERM
ip netns add "$ns" || skip_all "cannot create a network namespace"
ip -n "$ns" link set lo up
: > "$tmp/why"

echo "TAP version 13"
test_api
test_member_rank
test_bad_packets
run_job "2 workers i32, 1 element" 2 i32 4 2
run_job "2 workers i32, last packet partial" 2 i32 $((4 * (ELEMS * 3 + 5))) 3
run_job "2 workers f32, last packet partial" 2 f32 $((4 * (ELEMS * 5 + 77))) 3
run_job "4 workers i32 max, 1 MiB" 4 i32 $((1 << 20)) 3 --op max
run_job "4 workers f32, 4 MiB + 12 bytes" 4 f32 $(((4 << 20) + 12)) 3
run_job "8 workers i32, 4 MiB" 8 i32 $((4 << 20)) 2
run_job "8 workers f32, 1 MiB + 4 bytes" 8 f32 $(((1 << 20) + 4)) 2
run_job "4 workers f32, window 1 slot past the tensor end" 4 f32 $((4 * (ELEMS * SLOTS + 1))) 2
if [ $QUICK -eq 0 ]; then
	run_job "2 workers i32, 64 MiB" 2 i32 $((64 << 20)) 2
	run_job "4 workers f32, 64 MiB" 4 f32 $((64 << 20)) 2
fi
test_loss
test_dead_peer
test_no_switch
test_bad_key

echo "1..$ntest"
[ $nfail -eq 0 ] && exit 0
exit 1
