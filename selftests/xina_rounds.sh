#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# "xinactl job rounds": which ranks a stalled job waits for.  A job of 3
# workers in which only ranks 0 and 1 run an allreduce: they give up
# (their join and call time out), and the round they left open on the
# switch names rank 2 as missing, in text and JSON.  After a complete
# allreduce of all 3 no round is open.  A job that does not exist fails
# with its reason.  "stuck MS" keeps the rounds open and unchanged MS ms
# apart: all of them with nothing moving, none across a complete run.
# Runs on the map backend here and on the module backend
# in the VM (selftests/vm/xina_e2e_module.sh), where xinactl reads the
# rounds through XINA_CMD_ROUNDS_GET.

. "$(dirname "$0")/lib.sh"
require_root
require_cmd jq "$O/xinactl" "$O/xina-allreduce"
. "$XINA_ROOT/scripts/rack.sh"

rack_test_init rounds
N=3
JOB=7
SLOTS=16
ELEMS=256

tap_begin 4
rack_up "$RACK" "$N" >/dev/null && rack_xdp "$RACK" "$N" "$PIN" &&
	rack_job_add "$RACK" "$N" "$JOB" "$KEYFILE" "$SLOTS" "$ELEMS" "$PIN"
check_err $? "rack could not be set up"
backend=$(xctl -j job rounds "$JOB" | jq -r .backend)
log_info "backend: $backend"

out=$(xctl job rounds 99 2>&1)
check_fail $? "job rounds of a job that does not exist succeeded: $out"
echo "$out" | grep -q "job 99 does not exist"
check_err $? "job rounds 99: '$out', want 'job 99 does not exist'"
log_test "job rounds of a job that does not exist fails with its reason"

out=$(xctl job rounds "$JOB" 2>&1)
check_err $? "job rounds $JOB failed: $out"
echo "$out" | grep -q "^job $JOB epoch [0-9]*: 0 rounds open$"
check_err $? "a fresh job: '$out', want '0 rounds open'"
log_test "a job without traffic has no round open"

# worker I RUN DIR ARGS...: rank I of run RUN in the background, its
# output in DIR/wI.json and DIR/wI.err; its pid in pids[I].
worker()
{
	local i=$1 run=$2 dir=$3

	shift 3
	mkdir -p "$dir"
	ip netns exec "$RACK-w$i" "$O/xina-allreduce" --switch "$RACK_SWITCH_IP" \
		--bind "$(rack_worker_ip "$i"):$RACK_WORKER_PORT" \
		--rank "$i" --workers "$N" --job "$JOB" --key-file "$KEYFILE" \
		--slots "$SLOTS" --elems "$ELEMS" --dtype i32 --run "$run" \
		--json "$@" >"$dir/w$i.json" 2>"$dir/w$i.err" &
	pids[i]=$!
}

# Ranks 0 and 1 of 3: the first round (xina-allreduce's barrier) gets
# their contributions and never rank 2's; both give up.
for i in 0 1; do
	worker "$i" 1 "$TMP/part" --bytes 1024 --iters 1 --timeout-ms 1000 \
		--join-timeout-ms 1500
done
fails=0
for i in 0 1; do
	wait "${pids[i]}" || fails=$((fails + 1))
done
[ "$fails" -eq 2 ]
check_err $? "$((2 - fails)) of ranks 0 and 1 succeeded without rank 2"
out=$(xctl job rounds "$JOB" 2>&1)
check_err $? "job rounds $JOB failed: $out"
log_info "${out//$'\n'/$'\n'# }"
echo "$out" | grep -q "^job $JOB epoch [0-9]*: [1-9][0-9]* rounds\? open$"
check_err $? "no round open: '$out'"
echo "$out" | grep -q "2 of 3 in, waiting for rank 2$"
check_err $? "no round waiting for rank 2: '$out'"
echo "$out" | grep -q "rank 2 $(rack_worker_ip 2):$RACK_WORKER_PORT missing from [1-9]"
check_err $? "rank 2 not shown as missing: '$out'"
json=$(xctl -j job rounds "$JOB" 2>&1)
check_err $? "job rounds -j $JOB failed: $json"
echo "$json" | jq -e --argjson job "$JOB" '.job == $job and .expected == 3 and
	.open >= 1 and .open == (.rounds | length) and
	all(.rounds[]; .waiting == [2] and .in == 2) and
	(.missing | length == 1) and .missing[0].rank == 2 and
	.missing[0].rounds == .open' >/dev/null
check_err $? "JSON: $json"
run=$(xctl -j job show "$JOB" | jq -r '.jobs[0].run')
[ "$run" = 1 ]
check_err $? "the dead run's epoch has run '$run', want 1"
# Nothing moves: every open round is also stuck (open and unchanged 300
# ms apart).
stuck=$(xctl -j job rounds "$JOB" stuck 300 2>&1)
echo "$stuck" | jq -e --argjson open "$(echo "$json" | jq .open)" \
	'.open == $open and .stuck_ms == 300 and .missing[0].rank == 2' >/dev/null
check_err $? "stuck 300 with nothing moving: $stuck, want all of $json"
log_test "ranks 0 and 1 of 3 gave up: their round waits for rank 2 (text, JSON), stuck"

# A look across the complete run: the old round did not stay (the run's
# joins opened a new epoch), so nothing is stuck.
#
# Rank 2, which never joined the dead run, joins first: ranks 0 and 1
# start once the epoch changed.  Its join names another run (--run) than
# the dead run's, so it opens a new epoch.  Were it taken into the old
# one, its first contribution would complete the round ranks 0 and 1 left
# open with its own data, and it would wait there until it timed out: no
# new epoch, and this check fails.
E_OLD=$(xctl -j job show "$JOB" | jq -r '.jobs[0].epoch')
new_epoch()
{
	[ "$(xctl -j job show "$JOB" | jq -r '.jobs[0].epoch')" != "$E_OLD" ]
}
xctl -j job rounds "$JOB" stuck 2000 >"$TMP/stuck.json" 2>&1 &
spid=$!
sleep 0.5	# its first look before the run starts
worker 2 2 "$TMP/all" --bytes $((64 << 10)) --iters 2 --timeout-ms 5000
busywait 10 new_epoch
check_err $? "rank 2 of a new run did not open a new epoch (still $E_OLD)"
for i in 0 1; do
	worker "$i" 2 "$TMP/all" --bytes $((64 << 10)) --iters 2 --timeout-ms 5000
done
fails=0
for i in 0 1 2; do
	wait "${pids[i]}" || fails=$((fails + 1))
done
check_err "$fails" "$fails of $N workers failed: $(cat "$TMP"/all/w*.err | tr '\n' ' ')"
check_workers "$N" "$TMP/all"
run=$(xctl -j job show "$JOB" | jq -r '.jobs[0].run')
[ "$run" = 2 ] && [ "$(cat "$TMP"/all/w*.json | jq -r .run | sort -u)" = 2 ]
check_err $? "the epoch's run $run, the workers' $(cat "$TMP"/all/w*.json | jq -r .run | tr '\n' ' '): want 2"
wait "$spid"
check_err $? "job rounds stuck 2000 failed: $(cat "$TMP/stuck.json")"
jq -e '.open == 0 and .missing == []' "$TMP/stuck.json" >/dev/null
check_err $? "a round counted stuck across a complete run: $(cat "$TMP/stuck.json")"
out=$(xctl job rounds "$JOB" 2>&1)
check_err $? "job rounds $JOB failed: $out"
echo "$out" | grep -q "^job $JOB epoch [0-9]*: 0 rounds open$"
check_err $? "after a complete allreduce: '$out', want '0 rounds open'"
json=$(xctl -j job rounds "$JOB" 2>&1)
echo "$json" | jq -e '.open == 0 and .rounds == [] and .missing == []' >/dev/null
check_err $? "JSON after a complete allreduce: $json"
log_test "a new run whose rank 2 (never in the dead run) joins first: new epoch, all $N complete, no round open or stuck"

tap_end
