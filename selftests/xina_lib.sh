#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# libxina's failure semantics, as libxina.h states them:
#  - results of other jobs, slots and rounds, duplicates, misplaced and
#    malformed results are ignored, counted exactly (stats ignored and
#    malformed) and never placed: against a fake switch (xina-libtest
#    fakesw) that answers every contribution with a volley of them first;
#  - a handle whose allreduce failed mid-way refuses every further call
#    with -ENOTRECOVERABLE and says why;
#  - a peer that reaches the call late, but within the join timeout, is
#    waited for: the job completes and verifies; without the longer join
#    timeout the others give up after timeout_ms, saying why;
#  - a worker that was off its CPU reads the results queued for it before
#    its timers resend anything (XDP switch).
# The last two run against both aggregators: xina-swagg in the switch
# namespace of a rack, then the XDP switch on the same rack.

. "$(dirname "$0")/lib.sh"
require_root
require_cmd jq ss "$O/xinactl" "$O/xina-allreduce" "$O/xina-swagg" \
	"$O/xina-libtest"
. "$XINA_ROOT/scripts/rack.sh"

rack_test_init xl
N=3
ELEMS=256
SLOTS=64
TIMEOUT_MS=1000
LATE_MS=1500
JOIN_MS=4000
XINA_UDP_PORT=9277
SW=$RACK_SWITCH_IP:$XINA_UDP_PORT
swagg_pid=""

now()
{
	date +%s.%N
}

# The first failing line of a libtest output, for the TAP comment.
first_not_ok()
{
	grep -m1 '^not ok' "$1" || tail -n1 "$1"
}

# start_swagg WORKERS JOB KEYFILE: xina-swagg in the switch namespace, the
# members where the rack's workers are.
start_swagg()
{
	local n=$1 job=$2 keyfile=$3 members="" i

	for ((i = 0; i < n; i++)); do
		members="$members --member $i=$(rack_worker_ip "$i"):$RACK_WORKER_PORT"
	done
	# shellcheck disable=SC2086
	ip netns exec "$RACK-sw" "$O/xina-swagg" --port "$XINA_UDP_PORT" \
		--job "$job" --key-file "$keyfile" --workers "$n" --slots "$SLOTS" \
		--elems "$ELEMS" $members >"$TMP/swagg.out" 2>&1 &
	swagg_pid=$!
	busywait 5 swagg_listening
}

swagg_listening()
{
	ip netns exec "$RACK-sw" ss -Hlun "sport = :$XINA_UDP_PORT" | grep -q .
}

stop_swagg()
{
	[ -n "$swagg_pid" ] || return 0
	kill -INT "$swagg_pid"
	wait "$swagg_pid"
	swagg_pid=""
}

# job_up AGG WORKERS JOB KEYFILE / job_down AGG JOB: the job on xina-swagg or
# on the XDP switch.
job_up()
{
	if [ "$1" = swagg ]; then
		start_swagg "$2" "$3" "$4"
	else
		rack_job_add "$RACK" "$2" "$3" "$4" "$SLOTS" "$ELEMS" "$PIN"
	fi
}

job_down()
{
	if [ "$1" = swagg ]; then
		stop_swagg
	else
		xctl job del "$2"
	fi
}

# worker RANK OUT ARGS...: xina-allreduce of rank RANK of N, in the
# background, its JSON in OUT.json and its errors in OUT.err.
worker()
{
	local r=$1 out=$2

	shift 2
	ip netns exec "$RACK-w$r" "$O/xina-allreduce" --switch "$SW" \
		--bind "$(rack_worker_ip "$r"):$RACK_WORKER_PORT" --rank "$r" \
		--workers "$N" --slots "$SLOTS" --elems "$ELEMS" --json "$@" \
		>"$out.json" 2>"$out.err" &
}

# Rank 1 contributes 4 blocks, rank 0 a tensor of 64: rank 0's call gets
# 4 results and then none (libtest call ... broken).
test_broken_handle()
{
	local agg=$1 p0

	job_up "$agg" 2 7 "$KEYFILE"
	check_err $? "job 7 could not be set up on $agg"
	ip netns exec "$RACK-w0" "$O/xina-libtest" call "$SW" \
		"$(rack_worker_ip 0):$RACK_WORKER_PORT" 0 2 "$ELEMS" 64 broken \
		>"$TMP/broken0.out" 2>&1 &
	p0=$!
	ip netns exec "$RACK-w1" "$O/xina-libtest" call "$SW" \
		"$(rack_worker_ip 1):$RACK_WORKER_PORT" 1 2 "$ELEMS" 4 ok \
		>"$TMP/broken1.out" 2>&1
	check_err $? "rank 1 (4 blocks): $(first_not_ok "$TMP/broken1.out")"
	wait $p0
	check_err $? "rank 0: $(first_not_ok "$TMP/broken0.out")"
	job_down "$agg" 7
	grep -q "^ok refused calls sent nothing" "$TMP/broken0.out"
	check_err $? "rank 0 did not get to check the refusal: $(tail -n1 "$TMP/broken0.out")"
	[ "$ret" -ne 0 ] && sed 's/^/# /' "$TMP/broken0.out"
	log_test "$agg: a handle whose call failed mid-way refuses further calls"
}

# worker_ok OUT: the worker exited 0 and verified every element.
worker_ok()
{
	[ "$(jq -r .verified "$1.json" 2>/dev/null)" = true ]
}

# Ranks 0 and 1 start together, rank 2 LATE_MS later.  With a join
# timeout above that, the first two wait in their first call (the
# barrier) for longer than timeout_ms and all three verify.
test_late_peer()
{
	local agg=$1 job=$2 t0 t1 r wp="" p waited waited0

	job_up "$agg" "$N" "$job" "$KEYFILE"
	check_err $? "job $job could not be set up on $agg"
	t0=$(now)
	for r in 0 1; do
		worker $r "$TMP/late$r" --job "$job" --key-file "$KEYFILE" --dtype f32 \
			--bytes $((4 * ELEMS * 10 + 12)) --iters 2 \
			--timeout-ms $TIMEOUT_MS --join-timeout-ms $JOIN_MS
		wp="$wp $!"
	done
	sleep "$(awk -v ms=$LATE_MS 'BEGIN { print ms / 1000 }')"
	t1=$(now)
	worker 2 "$TMP/late2" --job "$job" --key-file "$KEYFILE" --dtype f32 \
		--bytes $((4 * ELEMS * 10 + 12)) --iters 2 \
		--timeout-ms $TIMEOUT_MS --join-timeout-ms $JOIN_MS
	wp="$wp $!"
	for p in $wp; do
		wait "$p"
	done
	job_down "$agg" "$job"
	for r in 0 1 2; do
		worker_ok "$TMP/late$r"
		check_err $? "rank $r: $(tail -n1 "$TMP/late$r.err")"
	done
	# The early ranks' first timed call began only after the late one
	# was started: they did wait for it, longer than timeout_ms.
	for r in 0 1; do
		waited=$(jq -r --argjson t0 "$t0" \
			 'if .t_start > 0 then (.t_start - $t0) * 1000 | floor else empty end' \
			 "$TMP/late$r.json" 2>/dev/null)
		awk -v s="$(jq -r .t_start "$TMP/late$r.json" 2>/dev/null)" \
		    -v t1="$t1" -v w="${waited:-0}" -v to=$TIMEOUT_MS \
		    'BEGIN { exit !(s > t1 && w > to) }'
		check_err $? "rank $r began its timed calls ${waited:-?} ms after its start, before the late peer ($(awk -v a="$t1" -v b="$t0" 'BEGIN { printf "%d", (a - b) * 1000 }') ms)"
		[ $r -eq 0 ] && waited0=$waited
	done
	log_test "$agg: a peer ${LATE_MS} ms late, inside the join timeout ($JOIN_MS ms, timeout $TIMEOUT_MS ms): all verify (rank 0 waited ${waited0:-?} ms)"
}

# The same early ranks without --join-timeout-ms and no third one: the
# default join timeout of a first call is about timeout_ms, so they give
# up after it, not before and not much later, and say why.
test_join_timeout()
{
	local agg=$1 job=$2 r t0 t1 took wp="" p

	job_up "$agg" "$N" "$job" "$KEYFILE"
	check_err $? "job $job could not be set up on $agg"
	t0=$(now)
	for r in 0 1; do
		worker $r "$TMP/join$r" --job "$job" --key-file "$KEYFILE" --dtype i32 \
			--bytes 4096 --iters 1 --timeout-ms $TIMEOUT_MS
		wp="$wp $!"
	done
	for p in $wp; do
		wait "$p"
		check_fail $? "an early rank succeeded without its peer"
	done
	t1=$(now)
	job_down "$agg" "$job"
	took=$(awk -v a="$t1" -v b="$t0" 'BEGIN { printf "%d", (a - b) * 1000 }')
	# The library says which timeout it applied: timeout_ms plus twice
	# the microseconds between xina_open() and the call, so 1000 ms.
	for r in 0 1; do
		grep -q "for $TIMEOUT_MS ms (join timeout" "$TMP/join$r.err"
		check_err $? "rank $r does not name a join timeout of $TIMEOUT_MS ms: $(tail -n1 "$TMP/join$r.err")"
	done
	# Wall clock: not before it, and up to 1 s more for starting the
	# processes on a loaded machine.
	[ "$took" -ge $TIMEOUT_MS ] && [ "$took" -le $((TIMEOUT_MS + 1000)) ]
	check_err $? "the early ranks gave up after $took ms, want $TIMEOUT_MS..$((TIMEOUT_MS + 1000))"
	log_test "$agg: without it, the early ranks give up after timeout_ms ($took ms), naming the join timeout"
}

# job_stat JOB KEY: counter KEY of JOB on the XDP switch.
job_stat()
{
	xctl -j stats | jq -r --argjson j "$1" ".jobs[] | select(.id == \$j) | .$2"
}

# window_sent JOB N: the switch has N contributions of JOB.
window_sent()
{
	[ "$(job_stat "$1" contrib)" -ge "$2" ]
}

# Rank 0 sends its whole window (64 blocks, 64 slots), is stopped, rank 1
# completes every slot, and rank 0 stays stopped well past its timers
# (RTO at most 200 ms): on SIGCONT its socket holds a window of results,
# more than one bounded receive reads, for slots whose timers expired.  It
# must read them all before its timers judge the slots: a slot resent
# with its result unread reaches the switch as a retransmission of a
# completed version, answered from the kept result (retrans_answered).
test_queued_results()
{
	local blocks=64 p0 got answered

	job_up xdp 2 7 "$KEYFILE"
	check_err $? "job 7 could not be set up"
	ip netns exec "$RACK-w0" "$O/xina-libtest" call "$SW" \
		"$(rack_worker_ip 0):$RACK_WORKER_PORT" 0 2 "$ELEMS" $blocks ok \
		>"$TMP/queued0.out" 2>&1 &
	p0=$!
	busywait 5 window_sent 7 $blocks
	check_err $? "rank 0 did not send its window ($(job_stat 7 contrib) of $blocks)"
	kill -STOP $p0
	ip netns exec "$RACK-w1" "$O/xina-libtest" call "$SW" \
		"$(rack_worker_ip 1):$RACK_WORKER_PORT" 1 2 "$ELEMS" $blocks ok \
		>"$TMP/queued1.out" 2>&1
	check_err $? "rank 1: $(first_not_ok "$TMP/queued1.out")"
	[ "$(job_stat 7 complete)" -eq $blocks ]
	check_err $? "$(job_stat 7 complete) of $blocks slots completed"
	sleep 1.5
	answered=$(job_stat 7 retrans_answered)
	kill -CONT $p0
	wait $p0
	check_err $? "rank 0: $(first_not_ok "$TMP/queued0.out")"
	got=$(job_stat 7 retrans_answered)
	job_down xdp 7
	# both reads numbers: a missing counter is no pass
	[[ "$answered" =~ ^[0-9]+$ && "$got" =~ ^[0-9]+$ ]] &&
		got=$((got - answered)) && [ "$got" -eq 0 ]
	check_err $? "rank 0 resent $got slots whose results were queued in its socket"
	log_test "xdp: a worker back on its CPU reads a window of queued results before its timers ($got resends answered)"
}

tap_begin 8

rack_up "$RACK" "$N" >/dev/null
check_err $? "rack of $N workers could not be set up"
[ "$ret" -ne 0 ] && { log_test "rack"; tap_end; }

ip netns exec "$RACK-w0" "$O/xina-libtest" fakesw 127.0.0.1 >"$TMP/fakesw.out" 2>&1
check_err $? "$(first_not_ok "$TMP/fakesw.out")"
[ "$ret" -ne 0 ] && sed 's/^/# /' "$TMP/fakesw.out"
log_test "fake switch: foreign, duplicate, misplaced and malformed results ignored and counted, never placed ($(grep -c '^ok' "$TMP/fakesw.out") checks)"

for agg in swagg xdp; do
	if [ $agg = xdp ]; then
		rack_xdp "$RACK" "$N" "$PIN"
		check_err $? "XDP switch could not be attached"
	fi
	test_broken_handle $agg
	test_late_peer $agg 21
	test_join_timeout $agg 22
done
test_queued_results
tap_end
