#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# End-to-end test of libxina (through xina-allreduce) against xina-swagg,
# the user-space aggregator, on the loopback device of a network namespace
# this test creates: 2, 4 and 8 workers, int32 and float32, 1 element to
# 64 MiB including non-full last packets, loss (netem on the namespace's
# lo), a worker killed mid-allreduce, a missing switch; the join
# handshake: a wrong key, slots or elements the job does not have, a
# restart of the workers right after a round (busy, then a new epoch), a
# job the switch does not have, each with its error; two levels: two rack
# agents (xina-swagg --up) under an upper xina-swagg, int32 sum and max and
# float32 bitwise equal to the flat job's, under loss too, and an agent
# with the wrong upper key refused; aux, the side word reduced by MAX,
# with packets made by hand (xina_swagg_peer.py), flat and through an
# agent.
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
PEER=$(dirname "$0")/xina_swagg_peer.py
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

# loss_drops: datagrams the rules of add_loss dropped so far.
loss_drops()
{
	ip netns exec "$ns" nft list table inet xina_loss |
		sed -n 's/.*counter packets \([0-9]*\).*/\1/p' |
		awk '{ n += $1 } END { print n + 0 }'
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
	# One datagram a packet both ways (no GSO trains): nftables judges
	# an skb, and a train of results dropped or kept whole left runs in
	# which no result was lost, so nothing needed the kept copy.
	start_swagg 4 --no-gso || { log_test 1 "$name"; return; }
	start_workers 4 f32 $((1 << 20)) 3 --rto-us 2000 --no-gso
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
	local rc=0 r t0 t1 dead p open u0

	start_swagg 3 || { log_test 1 "dead peer"; return; }
	# The namespace's counter includes the earlier cases' datagrams.
	u0=$(udp_in)
	start_workers 3 i32 $((16 << 20)) 1000 --timeout-ms 1000
	# Kill rank 2 once the job is under way (datagrams are flowing).
	for r in $(seq 200); do
		[ "$(udp_in)" -gt $((u0 + 2000)) ] && break
		sleep 0.05
	done
	echo "# rank 2 killed after $(($(udp_in) - u0)) datagrams in the namespace"
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
	# SIGUSR1: the aggregator prints its open rounds and goes on.  Every
	# one waits for rank 2 alone: the survivors sent a slot's next block
	# as soon as its result came.
	kill -USR1 "$swagg_pid"
	for r in $(seq 100); do
		grep -q "missing from" "$tmp/swagg.out" && break
		sleep 0.05
	done
	open=$(sed -n 's/^rounds: \([0-9]*\) open$/\1/p' "$tmp/swagg.out")
	if ! [ "${open:-0}" -ge 1 ] ||
	   [ "$(grep -c ' of 3 in, waiting for rank 2$' "$tmp/swagg.out")" != "$open" ] ||
	   ! grep -q "^	rank 2 127.0.1.3:[0-9]* missing from $open of $open open rounds*$" "$tmp/swagg.out"; then
		why "SIGUSR1's rounds do not all wait for rank 2: $(grep -v '^	slot' "$tmp/swagg.out" | tail -n4 | tr '\n' ' ')"
		rc=1
	fi
	kill -0 "$swagg_pid" 2>/dev/null || { why "xina-swagg exited on SIGUSR1"; rc=1; }
	stop_swagg
	# timeout 1 s; allow the peer's rounds in flight and slow scheduling
	[ $(((t1 - t0) / 1000000)) -lt 4000 ] ||
		{ why "survivors took $(((t1 - t0) / 1000000)) ms to give up"; rc=1; }
	log_test $rc "dead peer: survivors fail with a clear error within the timeout; SIGUSR1 names rank 2 as what ${open:-no} open rounds wait for"
}

test_no_switch()
{
	local rc=0

	start_workers 1 i32 4096 1 --timeout-ms 500
	check_workers 1 2>/dev/null && { why "succeeded without a switch"; rc=1; }
	grep -q "no answer to the join" "$tmp/w0.err" &&
		grep -q "ICMP port unreachable" "$tmp/w0.err" ||
		{ why "error does not say unreachable: $(cat "$tmp/w0.err")"; rc=1; }
	log_test $rc "no switch: ICMP port unreachable reported"
}

# ms_of CMD...: run CMD, print how long it took in ms.
ms_of()
{
	local t0 t1

	t0=$(date +%s%N)
	"$@"
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
}

# one_worker KEYFILE SLOTS ELEMS TIMEOUT_MS: rank 0 of 1, 4 KiB once;
# its exit status in $tmp/w0.rc.
one_worker()
{
	ip netns exec "$ns" "$AR" --switch 127.0.0.1:$PORT --bind 127.0.1.1 \
		--job "${JOIN_JOB:-$JOB}" --key-file "$1" --rank 0 --workers 1 \
		--slots "$2" --elems "$3" --bytes 4096 --iters 1 \
		--timeout-ms "$4" > "$tmp/w0.json" 2> "$tmp/w0.err"
	echo $? > "$tmp/w0.rc"
}

# A worker with another job's secret: the join's tag does not verify, the
# switch says so (bad key) at once, nothing is added.
test_bad_key()
{
	local rc=0 ms

	"$XINACTL" genkey "$tmp/other.key" || { log_test 1 "bad key"; return; }
	start_swagg 1 || { log_test 1 "bad key"; return; }
	ms=$(ms_of one_worker "$tmp/other.key" $SLOTS $ELEMS 3000)
	stop_swagg
	[ "$(cat "$tmp/w0.rc")" != 0 ] || { why "bad key accepted"; rc=1; }
	grep -q "job $JOB rank 0: the switch 127.0.0.1:$PORT says the key file $tmp/other.key is not the job's (bad key)" "$tmp/w0.err" ||
		{ why "unclear error: $(cat "$tmp/w0.err")"; rc=1; }
	# one round trip, not the 3 s join timeout (1 s for starting it)
	[ "$ms" -lt 1000 ] || { why "took $ms ms"; rc=1; }
	[ "$(swagg_stat drop_auth)" = 1 ] && [ "$(swagg_stat join_refused)" = 0 ] ||
		{ why "drop_auth $(swagg_stat drop_auth) join_refused $(swagg_stat join_refused), want 1 0"; rc=1; }
	[ "$(swagg_stat contrib)" = 0 ] && [ "$(swagg_stat joined)" = 0 ] ||
		{ why "a wrong-key worker joined or was added"; rc=1; }
	log_test $rc "wrong secret: the join is refused (bad key) in $ms ms, counted (drop_auth), nothing added"
}

# More slots, or more elements per slot, than the job has: mismatch, with
# both sides' numbers, at once.
test_mismatch()
{
	local rc=0 ms s e

	start_swagg 1 || { log_test 1 "mismatch"; return; }
	for s in "$((SLOTS * 2)) $ELEMS" "$SLOTS $((ELEMS * 2))"; do
		# shellcheck disable=SC2086
		set -- $s
		ms=$(ms_of one_worker "$KEYFILE" "$1" "$2" 3000)
		[ "$(cat "$tmp/w0.rc")" != 0 ] || { why "$1 x $2 accepted"; rc=1; }
		grep -q "(mismatch): the job has $SLOTS slots of $ELEMS elements, this worker asked for $1 slots of $2 elements" "$tmp/w0.err" ||
			{ why "unclear error: $(cat "$tmp/w0.err")"; rc=1; }
		[ "$ms" -lt 1000 ] || { why "$1 x $2: took $ms ms"; rc=1; }
	done
	# fewer is fine: a worker may use part of the job's window
	one_worker "$KEYFILE" $((SLOTS / 2)) $((ELEMS / 2)) 3000
	[ "$(cat "$tmp/w0.rc")" = 0 ] || { why "a smaller worker failed: $(cat "$tmp/w0.err")"; rc=1; }
	stop_swagg
	[ "$(swagg_stat join_refused)" = 2 ] && [ "$(swagg_stat join)" = 1 ] ||
		{ why "join_refused $(swagg_stat join_refused) join $(swagg_stat join), want 2 1"; rc=1; }
	log_test $rc "slots or elements above the job's: refused (mismatch) with both sides' numbers, at once"
}

# A job the switch does not have: no answer, and a message that says what
# can cause that and where to look.
test_no_job()
{
	local rc=0 ms

	start_swagg 1 || { log_test 1 "no job"; return; }
	ms=$(JOIN_JOB=$((JOB + 1)) ms_of one_worker "$KEYFILE" $SLOTS $ELEMS 500)
	stop_swagg
	[ "$(cat "$tmp/w0.rc")" != 0 ] || { why "joined a job that does not exist"; rc=1; }
	for w in "no answer to the join from switch 127.0.0.1:$PORT in 500 ms" \
		 "no job $((JOB + 1)) there" \
		 "rank 0 not configured for this host's address 127.0.1.1" \
		 "predates the join handshake" "no_job" "drop_member"; do
		grep -qF "$w" "$tmp/w0.err" || { why "the error does not say '$w': $(cat "$tmp/w0.err")"; rc=1; }
	done
	[ "$ms" -ge 500 ] && [ "$ms" -lt 1500 ] || { why "took $ms ms (timeout 500)"; rc=1; }
	[ "$(swagg_stat no_job)" -gt 0 ] || { why "no_job not counted"; rc=1; }
	log_test $rc "a job the switch does not have: no answer; the error lists the causes and names no_job, drop_member"
}

# The workers of a job restarted right after a run: the switch says busy
# until XINA_JOIN_BUSY_MS (500 ms) after the last round, then the first
# join opens a new epoch, the others join it, and the run completes.
test_restart()
{
	local rc=0 busy=0 r ep0 ep1

	start_swagg 2 || { log_test 1 "restart"; return; }
	start_workers 2 i32 $((4 * ELEMS * 4)) 2
	check_workers 2 || rc=1
	start_workers 2 i32 $((4 * ELEMS * 4)) 2
	check_workers 2 || rc=1
	stop_swagg
	for r in 0 1; do
		grep -q "the switch says the job is busy" "$tmp/w$r.err" && busy=$((busy + 1))
	done
	[ "$busy" -gt 0 ] || { why "no worker was told busy"; rc=1; }
	[ "$(swagg_stat epoch_new)" = 1 ] && [ "$(swagg_stat join)" = 4 ] ||
		{ why "epoch_new $(swagg_stat epoch_new) join $(swagg_stat join), want 1 4"; rc=1; }
	[ "$(swagg_stat join_refused)" -gt 0 ] || { why "no busy refusal counted"; rc=1; }
	ep0=$(jfield "$tmp/w0.json" epoch)
	ep1=$(jfield "$tmp/w1.json" epoch)
	[ "$ep0" = "$ep1" ] && [ "$ep0" = "$(swagg_stat epoch)" ] ||
		{ why "workers in epochs $ep0 and $ep1, the switch in $(swagg_stat epoch)"; rc=1; }
	log_test $rc "workers restarted right after a run: busy, then a new epoch ($ep0), completed; no job del/add"
}

# A run died before rank 2 of 3 ever joined: ranks 0 and 1 (run 1) left
# their first round open and gave up.  Rank 2 of the next run (2) joins
# first; its join names another run, so it opens a new epoch instead of
# completing the dead run's round with its data, and ranks 0 and 1 of run
# 2 join it: all three complete, with no busy refusal on the way.
test_run_first()
{
	local rc=0 r pids=""

	start_swagg 3 || { log_test 1 "run first"; return; }
	for r in 0 1; do
		ip netns exec "$ns" "$AR" --switch 127.0.0.1:$PORT \
			--bind 127.0.1.$((r + 1)) --job $JOB --key-file "$KEYFILE" \
			--rank "$r" --workers 3 --slots $SLOTS --elems $ELEMS \
			--dtype i32 --bytes 1024 --iters 1 --run 1 --timeout-ms 500 \
			--join-timeout-ms 800 --json > "$tmp/d$r.json" 2> "$tmp/d$r.err" &
		pids="$pids $!"
	done
	for p in $pids; do
		wait "$p" && { why "a rank of the dead run completed without rank 2"; rc=1; }
	done
	wpids=""
	for r in 2 0 1; do
		ip netns exec "$ns" "$AR" --switch 127.0.0.1:$PORT \
			--bind 127.0.1.$((r + 1)) --job $JOB --key-file "$KEYFILE" \
			--rank "$r" --workers 3 --slots $SLOTS --elems $ELEMS \
			--dtype i32 --bytes $((16 * ELEMS * 4)) --iters 2 --run 2 \
			--json > "$tmp/w$r.json" 2> "$tmp/w$r.err" &
		wpids="$wpids $!"
		[ "$r" = 2 ] && sleep 1	# its join first
	done
	# check_workers reads the pids in rank order
	wpids=$(echo "$wpids" | awk '{ print $2, $3, $1 }')
	check_workers 3 || rc=1
	stop_swagg
	[ "$(swagg_stat epoch_new)" = 1 ] && [ "$(swagg_stat join_refused)" = 0 ] ||
		{ why "epoch_new $(swagg_stat epoch_new) join_refused $(swagg_stat join_refused), want 1 0"; rc=1; }
	log_test $rc "rank 2, never in a run that died, joins the next run first: a new epoch, all 3 complete"
}

test_api()
{
	local rc=0

	ip netns exec "$ns" "$LIBTEST" api > "$tmp/api.out" 2>&1 || rc=1
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
	# the libtest's join, then the worker's: a restart, a new epoch
	for c in malformed=9 no_job=1 drop_key=0 drop_auth=2 drop_epoch=1 \
		 drop_member=2 drop_range=2 drop_op=4 join=2 epoch_new=1 \
		 join_refused=0 join_stale=0; do
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

# Numbers out of range on the command lines, each named with its range
# (xina-swagg said "0 is not valid there", or nothing for --up-*), and an
# --elems too few for one element of xina-allreduce's type and op (it
# divided by zero after the open): usage errors, refused before anything
# runs.
test_cli_ranges()
{
	local rc=0 base="--port $PORT --job $JOB --key-file $KEYFILE --workers 1 --slots 4 --elems 8 --member 0=10.0.0.1"
	local opt val want st type op elems words

	while read -r opt val want; do
		# shellcheck disable=SC2086 # the options, split
		"$SWAGG" $base "$opt" "$val" > /dev/null 2> "$tmp/range.err"
		st=$?
		[ "$st" -eq 2 ] || { why "xina-swagg $opt $val: exit $st (want 2)"; rc=1; }
		grep -qF -- "xina-swagg: $opt '$val' is not a number in $want" "$tmp/range.err" ||
			{ why "xina-swagg $opt $val: said '$(head -n1 "$tmp/range.err")'"; rc=1; }
	done <<-END
	--job 0 1..4294967295
	--job abc 1..4294967295
	--workers 0 1..256
	--slots 0 1..1048576
	--elems 0 1..2048
	--up-job 0 1..4294967295
	--up-rto-us 50 100..10000000
	--up-timeout-ms 0 1..3600000
	END
	while read -r type op elems words; do
		"$AR" --switch 127.0.0.1:$PORT --job "$JOB" --workers 1 --rank 0 \
			--slots 4 --elems "$elems" --type "$type" --op "$op" \
			> /dev/null 2> "$tmp/range.err"
		st=$?
		[ "$st" -ne 0 ] && [ "$st" -lt 128 ] ||
			{ why "xina-allreduce --type $type --op $op --elems $elems: exit $st"; rc=1; }
		grep -qF "xina-allreduce: --elems $elems is too few: one $type $op element takes $words words of 32 bits" "$tmp/range.err" ||
			{ why "xina-allreduce --type $type --op $op --elems $elems: said '$(head -n1 "$tmp/range.err")'"; rc=1; }
	done <<-END
	int64 sum 1 2
	int32 avg 1 2
	int64 avg 3 4
	END
	log_test $rc "numbers out of range, and --elems too few for one element: named, refused"
}

# ---- two levels -------------------------------------------------------------
# 4 workers in 2 racks of 2: rack a (ranks 0, 1) behind the agent at
# 127.0.2.1, rack b (2, 3) behind 127.0.2.2; the agents are ranks 0 and 1 of
# the upper job on the xina-swagg at 127.0.0.1.  Each job has its secret.
# The agents and the upper switch send one datagram a packet (--no-gso),
# as test_loss's switch does: nftables judges an skb, and with GSO trains
# of upper results dropped or kept whole, a lossy run could lose no upper
# result at all, leaving nothing for the upper switch's kept copies to
# answer (check "answered no resent partial" failed so once in CI).
# xina_racks.sh runs an agent with GSO.
agent_pids=""

# start_agent RACK UPRANK UPKEY MEMBERS...: an agent, its output in
# $tmp/agentRACK.{out,err}; waits until it joined the upper job or exited.
start_agent()
{
	local rack=$1 uprank=$2 upkey=$3 i pid

	shift 3
	# shellcheck disable=SC2046
	ip netns exec "$ns" "$SWAGG" --bind "127.0.2.$((uprank + 1))" --port $PORT \
		--job $JOB --key-file "$tmp/rack$rack.key" --workers 4 \
		--slots $SLOTS --elems $ELEMS $(printf -- '--member %s ' "$@") \
		--up 127.0.0.1:$PORT --up-rank "$uprank" --up-key-file "$upkey" \
		--up-timeout-ms 2000 --verbose --no-gso \
		> "$tmp/agent$rack.out" 2> "$tmp/agent$rack.err" &
	pid=$!
	for i in $(seq 100); do
		grep -qs "of upper job" "$tmp/agent$rack.err" && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	agent_pids="$agent_pids $pid"
}

stop_agents()
{
	local p

	for p in $agent_pids; do
		kill -INT "$p" 2>/dev/null
		wait "$p"
	done
	agent_pids=""
}

# agent_stat RACK NAME: counter NAME of the agent's uplink ("up:" line).
agent_stat()
{
	sed -n "s/^up:.* $2 \([0-9]*\).*/\1/p" "$tmp/agent$1.out"
}

# hier_workers DTYPE BYTES ITERS [args]: the 4 workers, each to its agent.
hier_workers()
{
	local dtype=$1 bytes=$2 iters=$3 r rack

	shift 3
	wpids=""
	for r in 0 1 2 3; do
		rack=a
		[ "$r" -ge 2 ] && rack=b
		ip netns exec "$ns" "$AR" --switch "127.0.2.$((r / 2 + 1)):$PORT" \
			--bind 127.0.1.$((r + 1)) --job $JOB \
			--key-file "$tmp/rack$rack.key" --rank "$r" --workers 4 \
			--slots $SLOTS --elems $ELEMS --dtype "$dtype" \
			--bytes "$bytes" --iters "$iters" --json "$@" \
			> "$tmp/w$r.json" 2> "$tmp/w$r.err" &
		wpids="$wpids $!"
	done
}

# The upper job's xina-swagg at 127.0.0.1: the two agents are its members.
start_upper()
{
	ip netns exec "$ns" "$SWAGG" --bind 127.0.0.1 --port $PORT --job $JOB \
		--key-file "$tmp/up.key" --workers 2 --slots $SLOTS --elems $ELEMS \
		--member 0=127.0.2.1:$PORT --member 1=127.0.2.2:$PORT --no-gso \
		> "$tmp/swagg.out" 2> "$tmp/swagg.err" &
	swagg_pid=$!
	wait_swagg || { why "upper xina-swagg: $(cat "$tmp/swagg.err")"; return 1; }
}

test_agents()
{
	local rc=0 name what flat r a sent results bad epochs drops=0
	local -a cases=("i32 $((1 << 20)) 3" "i32 $((1 << 20)) 3 --op max"
			"f32 $(((1 << 20) + 12)) 3")
	local -A flat

	"$XINACTL" genkey "$tmp/up.key" >/dev/null &&
		"$XINACTL" genkey "$tmp/racka.key" >/dev/null &&
		"$XINACTL" genkey "$tmp/rackb.key" >/dev/null ||
		{ log_test 1 "two levels: key files"; return; }
	# the flat job's results, to compare with
	for what in "${cases[@]}"; do
		start_swagg 4 || { log_test 1 "two levels: flat job"; return; }
		# shellcheck disable=SC2086
		start_workers 4 $what
		check_workers 4 || rc=1
		stop_swagg
		flat[$what]=$(jfield "$tmp/w0.json" checksum)
	done
	log_test $rc "two levels: the flat job of 4 workers, for reference"

	rc=0
	name="two levels: 2 racks of 2 through agents, i32 sum and max and f32 as the flat job"
	start_upper || { log_test 1 "$name"; return; }
	start_agent a 0 "$tmp/up.key" 0=127.0.1.1 1=127.0.1.2
	start_agent b 1 "$tmp/up.key" 2=127.0.1.3 3=127.0.1.4
	for what in "${cases[@]}"; do
		# shellcheck disable=SC2086
		hier_workers $what
		check_workers 4 || rc=1
		[ "$(jfield "$tmp/w0.json" checksum)" = "${flat[$what]}" ] ||
			{ why "$what: checksum $(jfield "$tmp/w0.json" checksum), flat ${flat[$what]}"; rc=1; }
	done
	log_test $rc "$name"

	rc=0
	name="two levels under 2% loss: f32 bitwise as the flat job, partials resent"
	if ! add_loss 2; then
		ntest=$((ntest + 1))
		echo "ok $ntest $name # SKIP nftables numgen unavailable"
	else
		what=${cases[2]}
		# shellcheck disable=SC2086
		hier_workers $what --rto-us 2000 --no-gso
		check_workers 4 || rc=1
		drops=$(loss_drops)
		ip netns exec "$ns" nft delete table inet xina_loss
		[ "$drops" -gt 0 ] || { why "the loss rules dropped nothing"; rc=1; }
		[ "$(jfield "$tmp/w0.json" checksum)" = "${flat[$what]}" ] ||
			{ why "checksum $(jfield "$tmp/w0.json" checksum), flat ${flat[$what]}"; rc=1; }
	fi
	stop_agents
	stop_swagg
	for a in a b; do
		sent=$(agent_stat $a sent)
		results=$(agent_stat $a results)
		bad=$(agent_stat $a bad_tag)
		epochs=$(agent_stat $a epochs)
		[ -n "$sent" ] && [ "$sent" -gt 0 ] && [ "$results" = "$sent" ] &&
			[ "$bad" = 0 ] && [ "$epochs" -ge 4 ] ||
			{ why "agent $a: $(grep '^up:' "$tmp/agent$a.out") $(tail -n2 "$tmp/agent$a.err")"; rc=1; }
	done
	resent=$(($(agent_stat a resent) + $(agent_stat b resent)))
	echo "# upper switch: $(grep -o ' \(contrib\|complete\|retrans_answered\|dup\|stale\|drop_range\) [0-9]*' "$tmp/swagg.out" | tr -d '\n')"
	for a in a b; do
		echo "# agent $a: $(grep '^up:' "$tmp/agent$a.out")"
	done
	[ "$resent" -gt 0 ] || { why "2% loss but no partial resent"; rc=1; }
	[ "$(swagg_stat retrans_answered)" -gt 0 ] ||
		{ why "the upper switch answered no resent partial"; rc=1; }
	log_test $rc "$name ($drops datagrams dropped, $resent partials resent; every partial answered, a new epoch per run)"

	# an agent whose upper key is not the upper job's: refused, and says so
	rc=0
	start_upper || { log_test 1 "two levels: bad upper key"; return; }
	ip netns exec "$ns" "$SWAGG" --bind 127.0.2.1 --port $PORT --job $JOB \
		--key-file "$tmp/racka.key" --workers 4 --slots $SLOTS --elems $ELEMS \
		--member 0=127.0.1.1 --up 127.0.0.1:$PORT --up-rank 0 \
		--up-key-file "$tmp/rackb.key" --up-timeout-ms 2000 \
		> "$tmp/agent.out" 2> "$tmp/agent.err"
	r=$?
	stop_swagg
	[ "$r" -eq 1 ] && grep -q "bad key" "$tmp/agent.err" ||
		{ why "agent with the wrong upper key: exit $r, said $(cat "$tmp/agent.err")"; rc=1; }
	[ "$(swagg_stat drop_auth)" -gt 0 ] || { why "upper switch: no drop_auth"; rc=1; }
	log_test $rc "two levels: an agent with the wrong upper key is refused (bad key) and exits"
}

# ---- aux --------------------------------------------------------------------
# A contribution's aux is reduced by MAX over the round's accepted
# contributions, signed, ZERO blocks included, and the result (and every
# answer from the kept result) carries it (include/uapi/linux/xina.h).
# libxina sends what its block floating point needs, not chosen values, so
# xina_swagg_peer.py makes the packets, tags included, and checks what
# comes back: one TAP line per check of its.

# peer_checks NAME STATUS: the checks in $tmp/peer.out as TAP lines.
peer_checks()
{
	local name=$1 st=$2 tag rc what n=0 bad=0

	while read -r tag rc what; do
		case "$tag" in
		check)
			n=$((n + 1))
			[ "$rc" = 0 ] || bad=1
			log_test "$rc" "$name: $what"
			;;
		why)
			why "$rc $what"
			;;
		esac
	done < "$tmp/peer.out"
	# a crash, or a usage error, after (or before) the last check
	if [ "$st" -ne 0 ] && [ "$bad" = 0 ] || [ "$n" = 0 ]; then
		why "xina_swagg_peer.py exited $st: $(grep -v '^check \|^why \|^# ' "$tmp/peer.out" | tail -n5)"
		log_test 1 "$name: xina_swagg_peer.py ran its checks"
	fi
}

# peer_skip NAME: python3 is missing
peer_skip()
{
	ntest=$((ntest + 1))
	echo "ok $ntest $1 # SKIP python3 not installed"
}

# Three ranks of the flat job: aux -5, 7 (a ZERO block) and -150 give 7;
# a forged, a wrong-op and a duplicate contribution of aux 1000 between
# them change nothing; resends are answered with the kept result, the
# ZERO block sent again is a duplicate and unanswered.
test_aux()
{
	local rc=0 st c want name="aux"

	command -v python3 >/dev/null || { peer_skip "$name"; return; }
	start_swagg 3 || { log_test 1 "$name"; return; }
	ip netns exec "$ns" python3 "$PEER" flat "$KEYFILE" 127.0.0.1:$PORT $JOB \
		127.0.1.1 127.0.1.2 127.0.1.3 > "$tmp/peer.out" 2>&1
	st=$?
	stop_swagg
	peer_checks "$name" $st
	for c in contrib=6 complete=2 drop_auth=1 drop_op=1 dup=2 \
		 retrans_answered=2 malformed=0; do
		want=${c#*=}
		[ "$(swagg_stat "${c%=*}")" = "$want" ] ||
			{ why "${c%=*} is $(swagg_stat "${c%=*}"), want $want"; rc=1; }
	done
	log_test $rc "$name: the forged, wrong-op and duplicate packets are counted, and no aux is malformed"
}

# An aggregator's members start at its start less XINA_JOIN_SKEW_MS (60
# s): rank 0's join made 120 s before (what a capture from an earlier
# run of the job's aggregator replays) is join_stale and unanswered; one
# made 30 s before (a worker's clock a little behind) joins.
test_old_join()
{
	local rc=0 got name="join older than the aggregator"

	command -v python3 >/dev/null || { peer_skip "$name"; return; }
	start_swagg 2 || { log_test 1 "$name"; return; }
	got=$(ip netns exec "$ns" python3 "$PEER" join "$KEYFILE" \
		127.0.0.1:$PORT $JOB 0 127.0.1.1:0 120)
	[ "$got" = none ] || { why "a join made 120 s before: '$got', want none"; rc=1; }
	got=$(ip netns exec "$ns" python3 "$PEER" join "$KEYFILE" \
		127.0.0.1:$PORT $JOB 1 127.0.1.2:0 30) ||
		{ why "the peer exited $?: $got"; rc=1; }
	[[ $got =~ ^reply\ 0\ [1-9][0-9]*$ ]] ||
		{ why "a join made 30 s before: '$got', want 'reply 0 EPOCH' (its tag verified)"; rc=1; }
	stop_swagg
	for c in join_stale=3 join=1 join_refused=0; do
		[ "$(swagg_stat "${c%=*}")" = "${c#*=}" ] ||
			{ why "${c%=*} is $(swagg_stat "${c%=*}"), want ${c#*=}"; rc=1; }
	done
	log_test $rc "$name: one made 120 s before is join_stale x3 and unanswered, one made 30 s before joins"
}

# A rack agent between xina_swagg_peer.py's three rack members and
# xina_swagg_peer.py as the upper switch: the partial (and its resend)
# carries the rack's MAX, the members get the upper result's aux.
test_aux_agent()
{
	local rc=0 st peer name="aux through an agent"

	command -v python3 >/dev/null || { peer_skip "$name"; return; }
	"$XINACTL" genkey "$tmp/aux-up.key" >/dev/null &&
		"$XINACTL" genkey "$tmp/aux-rack.key" >/dev/null ||
		{ log_test 1 "$name: key files"; return; }
	ip netns exec "$ns" python3 "$PEER" agent "$tmp/aux-rack.key" \
		"$tmp/aux-up.key" 127.0.2.1:$PORT $JOB 127.0.0.1:$PORT 0 \
		127.0.1.1 127.0.1.2 127.0.1.3 > "$tmp/peer.out" 2>&1 &
	peer=$!
	# the upper switch's socket first: the agent joins as it starts
	for _ in $(seq 100); do
		grep -qs "^# ready" "$tmp/peer.out" && break
		sleep 0.05
	done
	ip netns exec "$ns" "$SWAGG" --bind 127.0.2.1 --port $PORT --job $JOB \
		--key-file "$tmp/aux-rack.key" --workers 4 --slots $SLOTS \
		--elems $ELEMS --member 0=127.0.1.1 --member 1=127.0.1.2 \
		--member 2=127.0.1.3 --up 127.0.0.1:$PORT --up-rank 0 \
		--up-key-file "$tmp/aux-up.key" --up-timeout-ms 5000 \
		> "$tmp/agentx.out" 2> "$tmp/agentx.err" &
	agent_pids=$!
	wait "$peer"
	st=$?
	stop_agents
	peer_checks "$name" $st
	[ "$(agent_stat x sent)" = 1 ] && [ "$(agent_stat x results)" = 1 ] &&
		[ "$(agent_stat x resent)" -ge 1 ] && [ "$(agent_stat x bad_tag)" = 0 ] ||
		{ why "agent: $(grep '^up:' "$tmp/agentx.out") $(tail -n2 "$tmp/agentx.err")"; rc=1; }
	log_test $rc "$name: the agent sent one partial, resent it, took one result"
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
test_cli_ranges
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
test_mismatch
test_no_job
test_restart
test_run_first
test_agents
test_aux
test_aux_agent
test_old_join

echo "1..$ntest"
[ $nfail -eq 0 ] && exit 0
exit 1
