#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A worker that dies mid-allreduce: every other worker gives up with a clear
# error within its timeout instead of hanging, and the switch names the
# worker its open rounds wait for (xinactl job rounds).  A switch that is
# not there at all ends the same way.
#
# Which timeout applies (user/lib/libxina.c): a call that has had a result
# gives up after --timeout-ms without one (xina_call_timeout_ns); before
# its first result it waits the join timeout, timeout plus twice the time
# the worker spent since its previous call (xina_join_ns).  So worker 3 is
# killed inside the timed call, after the switch completed a block of it:
# not in xina-allreduce's one-element barrier before it, nor while the
# workers fill or verify their buffers between calls.
#
# Times are the kernel's: the modification time of a survivor's stdout
# (its report, flushed as it exits) against the time of the kill, so
# this shell's own scheduling does not count (the time of its stderr,
# the error line printed as the failed call returns, is logged).  The
# margin on top of the timeout: a survivor's last result may come a
# little after the kill (slots worker 3 had contributed to complete when
# the others' contributions arrive, a round trip later), its poll wakes up
# to 1 ms late (rounded up), it frees its 64 MiB buffer before it exits,
# and the file times come from the coarse clock (one 4 ms tick at
# HZ=250).  Each is at most a few milliseconds on an idle machine, but
# every step waits for a CPU: on the test machines (2 CPUs shared with
# other runs) tens of milliseconds.  250 ms covers them and is still an
# eighth of the timeout.

. "$(dirname "$0")/lib.sh"
require_root
require_cmd jq "$O/xinactl" "$O/xina-allreduce"
. "$XINA_ROOT/scripts/rack.sh"

rack_test_init xd
N=4
JOB=5
TIMEOUT_MS=2000
NOSWITCH_TIMEOUT_MS=1000
MARGIN_MS=${XINA_DEAD_MARGIN_MS:-250}
ELEMS=256
# Long enough (0.3 to 3 s on the rack) for the kill to land inside it.
BYTES=$((64 << 20))
NBLOCKS=$((BYTES / 4 / ELEMS))

tap_begin 3
rack_up "$RACK" "$N" >/dev/null && rack_xdp "$RACK" "$N" "$PIN" &&
	rack_job_add "$RACK" "$N" "$JOB" "$KEYFILE" 64 "$ELEMS" "$PIN"
check_err $? "rack could not be set up"

# ms_since T0 FILE: milliseconds from T0 ($EPOCHREALTIME) to the last
# write to FILE.
ms_since()
{
	awk -v a="$1" -v b="$(stat -c %.9Y "$2")" 'BEGIN { printf "%d", (b - a) * 1000 }'
}

# Worker i: its exit status in $TMP/run/wI.rc.
mkdir -p "$TMP/run"
cpus=$(nproc)
for ((i = 0; i < N; i++)); do
	(
		ip netns exec "$RACK-w$i" taskset -c $((i % cpus)) \
			"$O/xina-allreduce" --switch "$RACK_SWITCH_IP" \
			--bind "$(rack_worker_ip "$i"):$RACK_WORKER_PORT" \
			--rank "$i" --workers "$N" --job "$JOB" --key-file "$KEYFILE" \
			--slots 64 --elems "$ELEMS" --dtype i32 --bytes "$BYTES" \
			--iters 1 --timeout-ms "$TIMEOUT_MS" --json \
			>"$TMP/run/w$i.json" 2>"$TMP/run/w$i.err"
		echo $? >"$TMP/run/w$i.rc"
	) &
done

complete()
{
	xctl -j stats job "$JOB" | jq -r '.jobs[0].complete // 0'
}

# The first block of the timed call is complete 2: the barrier is 1.
in_big_call()
{
	[ "$(complete)" -ge 2 ]
}

busywait 120 in_big_call
check_err $? "the allreduce never got past its barrier (complete $(complete))"
before=$(complete)
# Worker 3 is whatever runs in its namespace (and nothing else on the box).
# The time is taken right before the kill builtin, nothing forked between.
pids=$(ip netns pids "$RACK-w3")
t_kill=$EPOCHREALTIME
# shellcheck disable=SC2086
kill -9 $pids
wait 2>/dev/null
after=$(complete)
log_info "killed worker 3 at $before of $((NBLOCKS + 1)) completions, $after completed in all"
[ "$after" -lt $((NBLOCKS + 1)) ]
check_err $? "the timed call completed ($after of $((NBLOCKS + 1))): worker 3 died after it"

for i in 0 1 2; do
	rc=$(cat "$TMP/run/w$i.rc")
	err_ms=$(ms_since "$t_kill" "$TMP/run/w$i.err")
	exit_ms=$(ms_since "$t_kill" "$TMP/run/w$i.json")
	log_info "worker $i: error ${err_ms} ms after the kill, exit $rc at ${exit_ms} ms:" \
		 "$(tail -n1 "$TMP/run/w$i.err")"
	[ "$rc" -eq 1 ]
	check_err $? "worker $i: exit $rc, want 1"
	# An empty file was never written: its time is the worker's start.
	[ -n "$(jq -r '.error // empty' "$TMP/run/w$i.json" 2>/dev/null)" ]
	check_err $? "worker $i: no report with an error on its way out"
	# The stated timeout, not the join timeout, is what applied.
	grep -q "no result from switch .* for $TIMEOUT_MS ms;" "$TMP/run/w$i.err"
	check_err $? "worker $i: no timeout error of $TIMEOUT_MS ms: $(tail -n1 "$TMP/run/w$i.err")"
	[ "$exit_ms" -le $((TIMEOUT_MS + MARGIN_MS)) ]
	check_err $? "worker $i exited ${exit_ms} ms after the kill, timeout ${TIMEOUT_MS} ms + ${MARGIN_MS} ms"
done
rc=$(cat "$TMP/run/w3.rc")
[ "$rc" -ne 0 ]
check_err $? "the killed worker exited 0"
log_test "dead worker: the others fail with a timeout error within ${TIMEOUT_MS} + ${MARGIN_MS} ms of the kill"

# What the operator sees on the switch: every round still open has ranks
# 0-2 in and waits for rank 3 alone.  A survivor sends a slot's next block
# as soon as the slot's result arrives, so none of them is missing from
# an open round (there is no loss on this rack).
xctl -j job rounds "$JOB" >"$TMP/rounds.json"
check_err $? "job rounds failed: $(cat "$TMP/rounds.json")"
xctl job rounds "$JOB" >"$TMP/rounds.txt"
log_info "job rounds: $(head -n2 "$TMP/rounds.txt" | tr '\t\n' '  ')... $(tail -n1 "$TMP/rounds.txt")"
open=$(jq -r '.open' "$TMP/rounds.json")
[ "$open" -ge 1 ] && [ "$(jq '.rounds | length' "$TMP/rounds.json")" -eq "$open" ]
check_err $? "no open round listed after the kill (open $open)"
[ "$(jq -c '[.missing[] | [.rank, .rounds]]' "$TMP/rounds.json")" = "[[3,$open]]" ]
check_err $? "open rounds do not all wait for rank 3 alone: $(jq -c .missing "$TMP/rounds.json")"
[ "$(jq -c '[.rounds[].waiting] | unique' "$TMP/rounds.json")" = "[[3]]" ]
check_err $? "a round waits for other ranks than 3: $(jq -c '[.rounds[].waiting] | unique' "$TMP/rounds.json")"
grep -q "waiting for rank 3\$" "$TMP/rounds.txt" &&
	grep -q "rank 3 $(rack_worker_ip 3):$RACK_WORKER_PORT missing from $open of $open open round" "$TMP/rounds.txt"
check_err $? "the text does not name rank 3: $(cat "$TMP/rounds.txt")"
# Stuck: open, unchanged, 300 ms apart: every one of them.
xctl -j job rounds "$JOB" stuck 300 >"$TMP/stuck.json"
[ "$(jq -c '[.open, .stuck_ms, [.missing[] | [.rank, .rounds]]]' "$TMP/stuck.json")" = "[$open,300,[[3,$open]]]" ]
check_err $? "job rounds stuck 300: $(jq -c '[.open, .stuck_ms, .missing]' "$TMP/stuck.json"), want all $open rounds stuck on rank 3"
log_test "dead worker: job rounds names rank 3 as what $open open rounds wait for, all of them stuck"

# No switch at all: nothing answers on 10.77.0.254's xina port.  The
# handshake in xina_open() waits the stated timeout for an answer to its
# join, then says what can cause the silence.
xctl dev detach p0
t0=$EPOCHREALTIME
ip netns exec "$RACK-w0" timeout 30 "$O/xina-allreduce" --switch "$RACK_SWITCH_IP" \
	--rank 0 --workers 1 --job 77 --key-file "$KEYFILE" --slots 8 --elems 256 --dtype i32 \
	--bytes 4096 --timeout-ms "$NOSWITCH_TIMEOUT_MS" --json \
	>"$TMP/noswitch.json" 2>"$TMP/noswitch.err"
rc=$?
err_ms=$(ms_since "$t0" "$TMP/noswitch.err")
exit_ms=$(ms_since "$t0" "$TMP/noswitch.json")
log_info "without a switch: error after ${err_ms} ms, exit $rc at ${exit_ms} ms:" \
	 "$(tail -n1 "$TMP/noswitch.err")"
[ "$rc" -eq 1 ]
check_err $? "allreduce without a switch: exit $rc, want 1"
[ -n "$(jq -r '.error // empty' "$TMP/noswitch.json" 2>/dev/null)" ]
check_err $? "no report with an error without a switch"
grep -q "no answer to the join from switch .* in $NOSWITCH_TIMEOUT_MS ms" "$TMP/noswitch.err"
check_err $? "no join timeout error of $NOSWITCH_TIMEOUT_MS ms without a switch: $(tail -n1 "$TMP/noswitch.err")"
grep -q "ICMP port unreachable" "$TMP/noswitch.err"
check_err $? "the error does not name the unreachable port: $(tail -n1 "$TMP/noswitch.err")"
# From the start of the process, its start-up included.
[ "$exit_ms" -le $((NOSWITCH_TIMEOUT_MS + MARGIN_MS)) ]
check_err $? "exited ${exit_ms} ms after its start, timeout ${NOSWITCH_TIMEOUT_MS} ms + ${MARGIN_MS} ms"
log_test "no switch: a timeout error within ${NOSWITCH_TIMEOUT_MS} + ${MARGIN_MS} ms"
tap_end
