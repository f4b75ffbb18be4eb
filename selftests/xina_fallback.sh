#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The host fallback (libxina's opts.fallback, xina-allreduce --fallback),
# end to end on a rack whose XDP switch holds two jobs:
#
#  1. Three jobs on a switch that holds two: the map backend's slot memory
#     holds 512 slots; jobs of 200 slots each, so the third "job add"
#     fails, naming what is missing.  Jobs 1 and 2 run through the switch
#     while job 3 (not on the switch) runs on the host ring, all three at
#     once, with the same input: the same bits (checksums) for int32,
#     float32 (block floating point) and int16; job 3's workers say so in
#     their stats (fallback 1, fallback_calls), jobs 1 and 2's do not.
#  2. A switch that stops answering mid-allreduce: job 2 is deleted from
#     the switch while its workers are inside a 32 MiB call; the call
#     completes on the ring with the same bits as job 1's through the
#     switch.  Some of its blocks came from the switch before (results >
#     0), the rest from the ring.
#  3. Without --fallback the same deletion is an error that names the
#     switch (the behaviour the fallback replaces).

. "$(dirname "$0")/lib.sh"
require_root
require_cmd jq "$O/xinactl" "$O/xina-allreduce"
. "$XINA_ROOT/scripts/rack.sh"

rack_test_init xf
N=3
SLOTS=200
ELEMS=256
# The default call timeout: shorter ones time out on a loaded machine
# (2 CPUs, the ring's workers beside the switch's).
TIMEOUT=3000

ring_addrs()	# ring_addrs PORT: every worker's ring address
{
	rack_ring_addrs "$N" "$1"
}

# run JOB PORT OUT ARGS...: the job's workers, on worker UDP port PORT
# (ring port PORT + 100 where --fallback is given as "ring").
run()
{
	local job=$1 port=$2 out=$3

	shift 3
	RACK_WORKER_PORT=$port rack_allreduce "$RACK" "$N" "$out" \
		--job "$job" --slots "$SLOTS" --elems "$ELEMS" \
		--timeout-ms "$TIMEOUT" --join-timeout-ms $((2 * TIMEOUT)) "$@"
}

# same_bits DIR1 DIR2: every worker of both runs verified, one checksum.
same_bits()
{
	check_workers "$N" "$1"
	check_workers "$N" "$2"
	[ "$(jq -r .checksum "$1/w0.json")" = "$(jq -r .checksum "$2/w0.json")" ]
	check_err $? "switch and ring results differ: $(jq -r .checksum "$1/w0.json") vs $(jq -r .checksum "$2/w0.json")"
}

# fell_back DIR EXPECT: every worker's stats say fallback EXPECT (0 or 1).
fell_back()
{
	local i f

	for ((i = 0; i < N; i++)); do
		f=$(jq -r '.fallback // "missing"' "$1/w$i.json")
		[ "$f" = "$2" ]
		check_err $? "worker $i of $1: fallback $f, expected $2"
	done
}

tap_begin 7
rack_up "$RACK" "$N" >/dev/null && rack_xdp "$RACK" "$N" "$PIN"
check_err $? "rack could not be set up"
for j in 1 2; do
	RACK_WORKER_PORT=$((7000 + j)) rack_job_add "$RACK" "$N" "$j" \
		"$KEYFILE" "$SLOTS" "$ELEMS" "$PIN" >/dev/null
	check_err $? "job $j does not fit"
done
RACK_WORKER_PORT=7003 rack_job_add "$RACK" "$N" 3 "$KEYFILE" "$SLOTS" \
	"$ELEMS" "$PIN" 2>"$TMP/add3.err"
check_fail $? "a third job of $SLOTS slots fit in slot memory for two"
log_info "job add 3: $(cat "$TMP/add3.err")"
grep -q "no room for slots $SLOTS" "$TMP/add3.err"
check_err $? "the refusal does not say what is missing"
log_test "a switch that holds two jobs of $SLOTS slots refuses the third"

for t in int32 float32 int16; do
	run 1 7001 "$TMP/$t.1" --type "$t" --bytes $((8 << 20)) --iters 2 &
	p1=$!
	run 3 7003 "$TMP/$t.3" --type "$t" --bytes $((8 << 20)) --iters 2 \
		--fallback "$(ring_addrs 7103)" &
	p3=$!
	wait $p1
	check_err $? "job 1 ($t, switch) failed: $(head -c 300 "$TMP/$t.1/w0.err")"
	wait $p3
	check_err $? "job 3 ($t, ring) failed: $(head -c 300 "$TMP/$t.3/w0.err")"
	same_bits "$TMP/$t.1" "$TMP/$t.3"
	fell_back "$TMP/$t.1" 0
	fell_back "$TMP/$t.3" 1
	log_info "$t: switch $(jq -r .seconds_median "$TMP/$t.1/w0.json") s, ring $(jq -r .seconds_median "$TMP/$t.3/w0.json") s per call; ring bytes out of rank 0: $(jq -r .fallback_tx_bytes "$TMP/$t.3/w0.json")"
	log_test "$t: the job the switch has no room for completes on the host ring, same bits as the switch"
done

# 2. Job 2's switch state goes away inside a 32 MiB call.
run 1 7001 "$TMP/ref" --type float32 --bytes $((32 << 20)) --iters 1
check_err $? "the reference run through the switch failed"
complete()
{
	xctl -j stats job 2 2>/dev/null | jq -r '.jobs[0].complete // 0'
}
progressed()	# progressed N: job 2 completed more than N rounds
{
	[ "$(complete)" -gt "$1" ]
}
c0=$(complete)
run 2 7002 "$TMP/cut" --type float32 --bytes $((32 << 20)) --iters 1 \
	--fallback "$(ring_addrs 7102)" &
pid=$!
# Inside the timed call: a barrier of one slot, then the blocks.
busywait 30 progressed $((c0 + 1000))
check_err $? "job 2 never got going through the switch"
xctl job del 2
check_err $? "job del 2"
wait $pid
check_err $? "job 2 failed after its switch state went away: $(head -c 400 "$TMP/cut/w0.err")"
same_bits "$TMP/ref" "$TMP/cut"
fell_back "$TMP/cut" 1
for ((i = 0; i < N; i++)); do
	r=$(jq -r .results "$TMP/cut/w$i.json")
	[ "${r:-0}" -gt 0 ]
	check_err $? "worker $i had no result from the switch before the cut ($r)"
done
log_info "results from the switch before the cut: $(jq -r .results "$TMP/cut/w0.json") (worker 0)"
log_test "a switch that stops answering mid-allreduce: the call completes on the ring, same bits"

# 2b. Workers one call apart: single-element calls, and from some point
# on every result to worker 0 is dropped (nftables, in its namespace).
# The round of the call in progress still completes (worker 0's
# contribution gets through): workers 1 and 2 have its result and go on to
# the next call, worker 0 never gets it.  Worker 0 falls back in call k,
# workers 1 and 2 in call k + 1; one of them serves call k on the ring.
RACK_WORKER_PORT=7002 rack_job_add "$RACK" "$N" 2 "$KEYFILE" "$SLOTS" \
	"$ELEMS" "$PIN" >/dev/null
check_err $? "job 2 could not be added again"
c0=$(complete)
run 2 7002 "$TMP/apart" --type int32 --bytes 4 --iters 3000 \
	--fallback "$(ring_addrs 7102)" &
pid=$!
busywait 30 progressed $((c0 + 100))
check_err $? "job 2 never got going through the switch"
printf 'table inet xina_fb {\n\tchain in {\n\t\ttype filter hook input priority 0;\n\t\tudp sport 9277 counter drop\n\t}\n}\n' |
	ip netns exec "$RACK-w0" nft -f -
check_err $? "nft"
wait $pid
check_err $? "job 2 failed with results to worker 0 cut: $(head -c 400 "$TMP/apart/w0.err")"
dropped=$(ip netns exec "$RACK-w0" nft -j list table inet xina_fb |
	  jq '[.nftables[].rule? | select(.) | .expr[] | .counter? | select(.) | .packets] | add')
log_info "results dropped at worker 0: $dropped"
[ "${dropped:-0}" -gt 0 ]
check_err $? "nothing was dropped"
check_workers "$N" "$TMP/apart"
fell_back "$TMP/apart" 1
served=$(jq -s 'map(.fallback_served) | add' "$TMP"/apart/w*.json)
log_info "calls served by the workers ahead: $served; calls on the ring: $(jq -r .fallback_calls "$TMP/apart/w0.json") (worker 0)"
[ "${served:-0}" -ge 1 ]
check_err $? "no worker served a call to a peer one call behind"
ip netns exec "$RACK-w0" nft delete table inet xina_fb
log_test "workers one call apart: the one ahead serves its last call, all get the same bits"

# 3. The same without --fallback: an error naming the switch.
c0=$(complete)
run 2 7002 "$TMP/nofb" --type float32 --bytes $((32 << 20)) --iters 1 &
pid=$!
busywait 30 progressed $((c0 + 1000))
xctl job del 2
wait $pid
check_fail $? "job 2 succeeded without its switch and without a fallback"
grep -q "no result from switch" "$TMP/nofb/w0.err"
check_err $? "the error does not name the switch: $(head -c 300 "$TMP/nofb/w0.err")"
log_test "without --fallback the same cut is an error naming the switch"

tap_end
