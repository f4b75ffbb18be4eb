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
#     Workers one call apart: results to worker 0 dropped from some point
#     on, so that workers 1 and 2 complete a call worker 0 does not; they
#     serve it on the ring from the result words they kept, first with
#     single-element calls, then with calls of 64 packets (int32, float32:
#     only the multi-packet calls' results are dropped, so the call served
#     is one of them), then float32 calls of 256 packets, past the window
#     (their exponents go with the data: the ring agrees on those worker 0
#     missed, the workers ahead serve theirs), the same bits as the same
#     run through the switch.
#     A block-sparse call (float32, 30% density per worker) whose switch
#     state is deleted mid-call completes on the ring with the same bits
#     and the same blocks skipped as through the switch, and a sparse job
#     not on the switch runs on the ring alone.
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

# secs DIR: worker 0's run, first timed call to the last one's end.
secs()
{
	jq -r '.t_end - .t_start | . * 100 | round / 100' "$1/w0.json"
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

tap_begin 13
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

# drop_at_w0 MATCH BYTES: once BYTES bytes of the switch's results to
# worker 0 that the nft MATCH (may be empty) selects got through, the rest
# dropped and counted, in table inet xina_fb.  A quota, not a rule added
# after some progress: on a fast host a short run can end before such a
# rule is in place, and then nothing is dropped.
drop_at_w0()
{
	printf 'table inet xina_fb {\n\tchain in {\n\t\ttype filter hook input priority 0;\n\t\tudp sport 9277 %s quota over %s bytes counter drop\n\t}\n}\n' "$1" "$2" |
		ip netns exec "$RACK-w0" nft -f -
}

# dropped_at_w0: how many drop_at_w0 dropped.
dropped_at_w0()
{
	ip netns exec "$RACK-w0" nft -j list table inet xina_fb |
		jq '[.nftables[].rule? | select(.) | .expr[] | .counter? | select(.) | .packets] | add'
}

# run_cut DIR WHAT AFTER ARGS...: job 2's workers (xina-allreduce ARGS,
# with the fallback ring) into DIR; once the switch completed AFTER more
# rounds, job 2 is deleted from the switch (its state goes away).  Waits
# for them; every worker must succeed.  WHAT prefixes the messages.
run_cut()
{
	local dir=$1 what=$2 after=$3 c0 pid

	shift 3
	c0=$(complete)
	run 2 7002 "$dir" "$@" --fallback "$(ring_addrs 7102)" &
	pid=$!
	busywait 30 progressed $((c0 + after))
	check_err $? "${what}job 2 never got going through the switch"
	xctl job del 2
	check_err $? "${what}job del 2"
	wait $pid
	check_err $? "${what}job 2 failed after its deletion: $(head -c 400 "$dir/w0.err")"
}

# run_drop DIR WHAT MATCH BYTES ARGS...: job 2's workers (xina-allreduce
# ARGS, with the fallback ring) into DIR, with drop_at_w0 MATCH BYTES in
# place from the start.  Waits for them; every worker must succeed.
run_drop()
{
	local dir=$1 what=$2 match=$3 bytes=$4

	shift 4
	drop_at_w0 "$match" "$bytes"
	check_err $? "${what}the drop at worker 0 could not be set up"
	run 2 7002 "$dir" "$@" --fallback "$(ring_addrs 7102)"
	check_err $? "${what}job 2 failed with results to worker 0 dropped: $(head -c 400 "$dir/w0.err")"
}

# Inside the timed call: a barrier of one slot, then the blocks.
run_cut "$TMP/cut" "" 1000 --type float32 --bytes $((32 << 20)) \
	--iters 1
same_bits "$TMP/ref" "$TMP/cut"
fell_back "$TMP/cut" 1
for ((i = 0; i < N; i++)); do
	r=$(jq -r .results "$TMP/cut/w$i.json")
	[ "${r:-0}" -gt 0 ]
	check_err $? "worker $i had no result from the switch before the cut ($r)"
done
log_info "results from the switch before the cut: $(jq -r .results "$TMP/cut/w0.json") (worker 0)"
log_test "a switch that stops answering mid-allreduce: the call completes on the ring, same bits"

# 2b. Workers one call apart: single-element calls, and after about 100
# results every result to worker 0 is dropped (nftables, in its namespace).
# The round of the call in progress still completes (worker 0's
# contribution gets through): workers 1 and 2 have its result and go on to
# the next call, worker 0 never gets it.  Worker 0 falls back in call k,
# workers 1 and 2 in call k + 1; one of them serves call k on the ring.
RACK_WORKER_PORT=7002 rack_job_add "$RACK" "$N" 2 "$KEYFILE" "$SLOTS" \
	"$ELEMS" "$PIN" >/dev/null
check_err $? "job 2 could not be added again"
# 8000 bytes are about 100 results of one element (80 bytes in IPv4).
run_drop "$TMP/apart" "" "" 8000 --type int32 --bytes 4 --iters 3000
dropped=$(dropped_at_w0)
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

# 2c. The same with calls of 64 packets (64 KiB of int32 or float32, 256
# elements a packet, in one window of the job's 200 slots), each after a
# barrier of one element.  Only results longer than 700 bytes are dropped
# at worker 0 (a packet of 256 elements is 1100 bytes; a barrier's result
# or float32's exponents, 64 words, at most 332): worker 0 misses results
# of a 64-block call only, workers 1 and 2 complete that call and time out
# in the next barrier.  Worker 0's rescue then says "of 64 blocks done",
# and workers 1 and 2 each serve that call, exactly once, on the ring.
# Its results were all verified by every worker (bit-exact for int32, the
# block floating point bits for float32) and the checksum over every
# iteration is the one of the same run through the switch (job 1).
# apart_multi TYPE [BLOCKS MATCH QUOTA AHEAD]: AHEAD 1 (default): workers
# 1 and 2 complete the call worker 0 falls back in and serve it, once
# each; 0: they fall back in that call too, and nobody serves.
apart_multi()
{
	local t=$1 blocks=${2:-64} match=${3:-"meta length > 700"}
	local quota=${4:-220000} ahead=${5:-1} dropped i sv want
	local tag=$1-${2:-64}-${4:-220000}

	run 1 7001 "$TMP/ref-$tag" --type "$t" --bytes $((blocks * 1024)) \
		--iters 150
	check_err $? "$t: the reference run through the switch failed: $(head -c 300 "$TMP/ref-$tag/w0.err")"
	run_drop "$TMP/apart-$tag" "$t: " "$match" "$quota" \
		--type "$t" --bytes $((blocks * 1024)) --iters 150
	dropped=$(dropped_at_w0)
	ip netns exec "$RACK-w0" nft delete table inet xina_fb
	[ "${dropped:-0}" -gt 0 ]
	check_err $? "$t: nothing was dropped"
	same_bits "$TMP/ref-$tag" "$TMP/apart-$tag"
	fell_back "$TMP/apart-$tag" 1
	grep -q "of $blocks blocks done" "$TMP/apart-$tag/w0.err"
	check_err $? "$t: worker 0 did not fall back inside a call of $blocks blocks: $(grep -m1 'no result' "$TMP/apart-$tag/w0.err" | head -c 300)"
	for ((i = 0; i < N; i++)); do
		sv=$(jq -r .fallback_served "$TMP/apart-$tag/w$i.json")
		want=$((i && ahead ? 1 : 0))
		[ "$sv" = "$want" ]
		check_err $? "$t: worker $i served $sv calls, expected $want"
	done
	log_info "$t, $blocks blocks: results dropped at worker 0: $dropped; $(grep -o "[0-9]* of $blocks blocks done" "$TMP/apart-$tag/w0.err" | head -1) at worker 0 when it fell back; served by workers 1, 2: $(jq -s -c 'map(.fallback_served)' "$TMP"/apart-$tag/w*.json); calls on the ring: $(jq -r .fallback_calls "$TMP/apart-$tag/w0.json") (worker 0); $(secs "$TMP/ref-$tag") s through the switch, $(secs "$TMP/apart-$tag") s cut"
}
# about 200 results of 256 elements (1100 bytes) get through
for t in int32 float32; do
	apart_multi "$t"
	log_test "$t, calls of 64 packets one call apart: the workers ahead serve the call, the same bits as the switch"
done
# float32 calls of 256 blocks, past the window of 200 slots: the first
# 200 blocks' exponents in a call of their own (200 words, 876 bytes a
# result: not dropped), the last 56 blocks' with the results of blocks
# 0..55.  With about 45 results of 1100 bytes let through, worker 0
# misses some of those: it cannot send the blocks after the window whose
# slots wait on them, so nobody completes the call, and worker 0 falls
# back in it not knowing their exponents; the ring agrees on them first
# (an int32 MAX of every block's, the agreed one where a worker has it,
# else its own).  With about 100 let through, worker 0 misses results of
# the last window only, which hold nothing back: workers 1 and 2 complete
# the call and serve it, agreeing first on the exponents they kept.  The
# same bits as through the switch, both ways.
apart_multi float32 256 "meta length > 1000" 50000 0
log_test "float32, calls of 256 packets (exponents with the data): worker 0 falls back missing exponents, the ring agrees on them, the same bits as the switch"
apart_multi float32 256 "meta length > 1000" 110000
log_test "float32, calls of 256 packets one call apart: the workers ahead serve the call with the exponents they kept, the same bits as the switch"

# 2d. A sparse call whose switch state goes away mid-call: float32 SUM,
# 32 MiB, each worker's blocks non-zero at 30% (the union of 3, 66%):
# a bitmap OR call, the exponents' MAX call, the values' call; after 1000
# completed rounds of job 2 the values' call is under way.  The cut run's
# workers hand libxina their maps of their blocks (--sparse-map): the
# union's blocks, where they are in the tensor and those a worker holds
# none of as zeros, go to the ring as they went to the switch; the
# reference found its blocks by the pass over the tensor.
sparse_same_skips()	# sparse_same_skips DIR REF
{
	local i

	for ((i = 0; i < N; i++)); do
		jq -e '.sparse_skipped == .sparse_expect_skipped and
		       .sparse_blocks + .sparse_skipped == .sparse_expect_blocks and
		       .sparse_skipped > 0' "$1/w$i.json" >/dev/null
		check_err $? "worker $i of $1: $(jq -c '{sparse_blocks, sparse_skipped, sparse_expect_blocks, sparse_expect_skipped}' "$1/w$i.json" 2>&1)"
	done
	[ "$(jq -r .sparse_skipped "$1/w0.json")" = "$(jq -r .sparse_skipped "$2/w0.json")" ]
	check_err $? "$1 skipped $(jq -r .sparse_skipped "$1/w0.json") blocks, $2 $(jq -r .sparse_skipped "$2/w0.json")"
}
run 1 7001 "$TMP/sref" --type float32 --sparse 300 --bytes $((32 << 20)) --iters 1
check_err $? "the sparse reference run through the switch failed: $(head -c 300 "$TMP/sref/w0.err")"
run_cut "$TMP/scut" "sparse: " 1000 --type float32 --sparse 300 \
	--sparse-map --bytes $((32 << 20)) --iters 1
same_bits "$TMP/sref" "$TMP/scut"
fell_back "$TMP/scut" 1
sparse_same_skips "$TMP/scut" "$TMP/sref"
grep -q "float32 sum: [0-9]* of [0-9]* blocks done" "$TMP/scut/w0.err"
check_err $? "the cut was not in the values' call: $(grep -m1 'no result' "$TMP/scut/w0.err" | head -c 300)"
for ((i = 0; i < N; i++)); do
	r=$(jq -r .results "$TMP/scut/w$i.json")
	[ "${r:-0}" -gt 0 ]
	check_err $? "worker $i had no result from the switch before the cut ($r)"
done
log_info "sparse cut: $(grep -o 'float32 sum: [0-9]* of [0-9]* blocks done' "$TMP/scut/w0.err" | head -1) (worker 0); $(jq -r .sparse_skipped "$TMP/scut/w0.json") of $(jq -r .sparse_expect_blocks "$TMP/scut/w0.json") blocks skipped; $(secs "$TMP/sref") s through the switch, $(secs "$TMP/scut") s cut"
log_test "a sparse call whose switch stops answering completes on the ring, same bits and blocks skipped"

# 2e. A sparse job the switch has no room for (job 3) runs on the ring,
# its workers with their maps (the reference without).
run 1 7001 "$TMP/sref3" --type int32 --sparse 100 --bytes $((8 << 20)) --iters 2
check_err $? "the sparse int32 run through the switch failed: $(head -c 300 "$TMP/sref3/w0.err")"
run 3 7003 "$TMP/sring" --type int32 --sparse 100 --sparse-map \
	--bytes $((8 << 20)) --iters 2 --fallback "$(ring_addrs 7103)"
check_err $? "the sparse job on the ring failed: $(head -c 300 "$TMP/sring/w0.err")"
same_bits "$TMP/sref3" "$TMP/sring"
fell_back "$TMP/sref3" 0
fell_back "$TMP/sring" 1
sparse_same_skips "$TMP/sring" "$TMP/sref3"
log_test "a sparse job not on the switch: on the ring, same bits and blocks skipped"

RACK_WORKER_PORT=7002 rack_job_add "$RACK" "$N" 2 "$KEYFILE" "$SLOTS" \
	"$ELEMS" "$PIN" >/dev/null
check_err $? "job 2 could not be added again"

# 3. The same without --fallback: an error naming the switch.
c0=$(complete)
run 2 7002 "$TMP/nofb" --type float32 --bytes $((32 << 20)) --iters 1 &
pid=$!
busywait 30 progressed $((c0 + 1000))
check_err $? "job 2 never got going (complete $(complete), from $c0)"
xctl job del 2
check_err $? "job del 2"
wait $pid
check_fail $? "job 2 succeeded without its switch and without a fallback"
grep -q "no result from switch" "$TMP/nofb/w0.err"
check_err $? "the error does not name the switch: $(head -c 300 "$TMP/nofb/w0.err")"
log_test "without --fallback the same cut is an error naming the switch"

tap_end
