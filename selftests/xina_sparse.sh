#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Block-sparse allreduce (xina_allreduce_sparse(), xina-allreduce --sparse
# P) through the XDP switch, 3 workers: each worker's blocks are non-zero
# with probability P/1000 (independently per worker), and only the union
# of the non-zero blocks travels.  Every worker checks every element
# against its own reference (xina-allreduce: integers and float MIN/MAX
# bit-exact, float32 SUM bitwise the dense block floating point scheme),
# all workers hold the same bits, and the stats show what was skipped: at
# 1% density most blocks, at full density none (the call runs in place, as
# a dense one).  The blocks skipped are exactly the blocks zero on every
# worker, as xina-allreduce works them out from every worker's input
# (sparse_expect_*).  Calls in flight: xina_allreduce_sparse_start() calls
# queued at once on one handle (--inflight), and sparse and dense calls
# queued together (--sparse-mixed), with the same bits as the blocking
# call.  The caller's map of its blocks (xina_allreduce_sparse_map()) in
# place of the scan: the same bits and skips.  The goodput against a
# dense call of the same tensor is logged
# (the benchmark has the ratios: make bench).

. "$(dirname "$0")/lib.sh"
require_root
require_cmd jq "$O/xinactl" "$O/xina-allreduce"
. "$XINA_ROOT/scripts/rack.sh"

rack_test_init xs
N=3
JOB=41
SLOTS=64
ELEMS=256
BYTES=$((16 << 20))

run()	# run OUT ARGS...
{
	local out=$1

	shift
	rack_allreduce "$RACK" "$N" "$TMP/$out" --job "$JOB" --slots "$SLOTS" \
		--elems "$ELEMS" --bytes "$BYTES" --iters 2 "$@"
	check_err $? "$out: $(head -c 300 "$TMP/$out/w0.err")"
	check_workers "$N" "$TMP/$out"
}

# skipped OUT: the blocks worker 0 did not send, of all its blocks.
skipped()
{
	jq -r '"\(.sparse_skipped) \(.sparse_blocks + .sparse_skipped)"' "$TMP/$1/w0.json"
}

# exact_skips OUT: on every worker, the blocks skipped are the blocks zero
# on every worker, and the blocks counted are those of the sparse calls.
exact_skips()
{
	local i

	for ((i = 0; i < N; i++)); do
		jq -e '.sparse_skipped == .sparse_expect_skipped and
		       .sparse_blocks + .sparse_skipped == .sparse_expect_blocks and
		       .sparse_expect_blocks > 0' "$TMP/$1/w$i.json" >/dev/null
		check_err $? "$1 worker $i: $(jq -c '{sparse_blocks, sparse_skipped, sparse_expect_blocks, sparse_expect_skipped}' "$TMP/$1/w$i.json" 2>&1)"
	done
}

# same_sum OUT1 OUT2: both runs got the same bits.
same_sum()
{
	local a b

	a=$(jq -r .checksum "$TMP/$1/w0.json")
	b=$(jq -r .checksum "$TMP/$2/w0.json")
	[ -n "$a" ] && [ "$a" = "$b" ]
	check_err $? "$1 and $2 differ: checksums $a and $b"
}

# like OUT REF: OUT got REF's bits, skipped the blocks zero everywhere,
# and as many as REF (the union depends neither on how the tensor is cut
# into calls nor on how a worker finds its blocks).
like()
{
	local a b

	same_sum "$1" "$2"
	exact_skips "$1"
	a=$(jq -r .sparse_skipped "$TMP/$1/w0.json")
	b=$(jq -r .sparse_skipped "$TMP/$2/w0.json")
	[ "$a" = "$b" ]
	check_err $? "$1 skipped $a blocks, $2 $b"
}

tap_begin 7
rack_up "$RACK" "$N" >/dev/null && rack_xdp "$RACK" "$N" "$PIN" &&
	rack_job_add "$RACK" "$N" "$JOB" "$KEYFILE" "$SLOTS" "$ELEMS" "$PIN" >/dev/null
check_err $? "rack could not be set up"
log_test "rack of $N workers, XDP switch, job $JOB"

for c in "int32 sum 10" "float32 sum 10" "int16 max 100" "int64 xor 100"; do
	read -r t op p <<<"$c"
	run "$t-$op-$p" --type "$t" --op "$op" --sparse "$p"
	read -r sk all <<<"$(skipped "$t-$op-$p")"
	# the union of 3 workers' blocks at density d is 1 - (1 - d)^3
	# of them: 3% at 1%, 27% at 10%; half that skipped is far off
	awk -v s="$sk" -v a="$all" -v d="$p" \
		'BEGIN { u = 1 - (1 - d / 1000) ^ 3; exit !(s > (1 - u) * a / 2) }'
	check_err $? "$t $op at $p/1000: $sk of $all blocks skipped"
	exact_skips "$t-$op-$p"
	log_info "$t $op at density $p/1000: $sk of $all blocks skipped, $(jq -r .goodput_Bps "$TMP/$t-$op-$p/w0.json" | awk '{ printf "%.0f", $1 / 1e6 }') MB/s dense-equivalent"
done
log_test "sparse calls at 1% and 10% density: exact, the zero blocks skipped"

# Workers send only the blocks they hold non-zeros in: a block of the
# union that is zero on a worker goes as its header alone (XINA_F_ZERO,
# which the XDP switch offers), for the ops whose identity is zero; the
# round often completes on such a header, and xina_fanout writes the
# result into it (the results above are exact).  Every such block
# (sparse_expect_zero, from every worker's input) is in zero_sent, which
# may hold more: blocks of the union agreement's bitmap, and float blocks
# that quantise to zeros.  MAX has no zero identity: its blocks carry
# their words.
for i in $(seq 0 $((N - 1))); do
	for c in int32-sum-10 float32-sum-10; do
		jq -e '.sparse_expect_zero > 0 and
		       .zero_sent >= .sparse_expect_zero' "$TMP/$c/w$i.json" >/dev/null
		check_err $? "$c worker $i: $(jq -c '{zero_sent, sparse_expect_zero, sparse_blocks}' "$TMP/$c/w$i.json" 2>&1)"
	done
	jq -e '.sparse_expect_zero > 0 and
	       .zero_sent * 10 < .sparse_expect_zero' "$TMP/int16-max-100/w$i.json" >/dev/null
	check_err $? "int16 max worker $i: $(jq -c '{zero_sent, sparse_expect_zero}' "$TMP/int16-max-100/w$i.json" 2>&1)"
done
log_info "$(jq -r '"int32 sum at 1%, worker 0: \(.sparse_blocks) blocks of the union, \(.zero_sent) of them sent as their header alone"' "$TMP/int32-sum-10/w0.json")"
log_test "blocks of the union that are zeros on a worker go as XINA_F_ZERO headers (SUM), not for MAX"

# Full density: int32 inputs have no zero block, nothing is skipped;
# float32 inputs have blocks of zeros on every worker (one in 16, by
# design of xina-allreduce's input), and those are skipped.
run full-i32 --type int32 --op sum --sparse 1000
read -r sk all <<<"$(skipped full-i32)"
[ "$sk" = 0 ] && [ "$all" -gt 0 ]
check_err $? "int32 at full density: $sk of $all blocks were skipped"
exact_skips full-i32
run dense-f32 --type float32 --op sum
run full-f32 --type float32 --op sum --sparse 1000
read -r sk all <<<"$(skipped full-f32)"
[ "$sk" -gt 0 ] && [ "$sk" -lt $((all / 8)) ]
check_err $? "float32 at full density: $sk of $all blocks skipped, expected the one in 16 zero everywhere"
exact_skips full-f32
same_sum full-f32 dense-f32
log_info "float32 at full density: $sk of $all blocks skipped (zero on every worker)"
log_test "at full density only blocks zero everywhere are skipped, results exact"

# Calls in flight: the same tensors as the blocking calls above, cut at
# whole blocks into calls started at once (xina_allreduce_sparse_start()),
# give the same bits and skip the same blocks (a block's union does not
# depend on the cut); with --sparse-mixed the odd calls are dense
# (xina_allreduce_start()) on the same handle, and only the sparse ones
# count blocks.
run async-i32 --type int32 --op sum --sparse 10 --inflight 3
like async-i32 int32-sum-10
run mixed-f32 --type float32 --op sum --sparse 10 --inflight 2 --sparse-mixed
same_sum mixed-f32 float32-sum-10
exact_skips mixed-f32
a=$(jq -r .sparse_skipped "$TMP/mixed-f32/w0.json")
b=$(jq -r .sparse_skipped "$TMP/float32-sum-10/w0.json")
[ "$a" -gt 0 ] && [ "$a" -lt "$b" ]
check_err $? "a sparse call beside a dense one skipped $a blocks, the blocking sparse call of both halves $b"
log_info "in flight: 3 sparse int32 calls skipped $(jq -r .sparse_skipped "$TMP/async-i32/w0.json") blocks; float32 sparse + dense: $a of $(jq -r .sparse_expect_blocks "$TMP/mixed-f32/w0.json") blocks of the sparse halves skipped"
log_test "sparse calls in flight (xina_allreduce_sparse_start), alone and beside dense ones: same bits, the same blocks skipped"

# The caller's map (xina_allreduce_sparse_map(), --sparse-map): each
# worker hands libxina the map of its non-zero blocks that its fill of the
# tensor recorded, and libxina reads no other block.  The same tensors as
# the scanning calls above give the same bits and skip the same blocks:
# blocking, in flight (each call's map starts at its own first block), by
# the bitmap's OR (int16 MAX) and by the exponents (float32 SUM).
for c in "int32 sum 10" "int16 max 100"; do
	read -r t op p <<<"$c"
	run "map-$t-$op-$p" --type "$t" --op "$op" --sparse "$p" --sparse-map
	like "map-$t-$op-$p" "$t-$op-$p"
done
run map-f32 --type float32 --op sum --sparse 10 --inflight 3 --sparse-map
like map-f32 float32-sum-10
log_info "the caller's map: float32 1% $(jq -r .seconds_median "$TMP/map-f32/w0.json") s per call (3 in flight), scanning $(jq -r .seconds_median "$TMP/float32-sum-10/w0.json") s"
log_test "sparse calls with the caller's maps (xina_allreduce_sparse_map): the scanning calls' bits and skips"

# Goodput: the same bytes dense and at 1%, for the log (make bench has
# the ratios against dense xina and Gloo).
log_info "float32 16 MiB: dense $(jq -r .seconds_median "$TMP/dense-f32/w0.json") s, 1% $(jq -r .seconds_median "$TMP/float32-sum-10/w0.json") s per call"
# refused ARGS -- WORDS: xina-allreduce refuses ARGS, saying WORDS.
refused()
{
	local args=()

	while [ "$1" != -- ]; do args+=("$1"); shift; done
	shift
	"$O/xina-allreduce" "${args[@]}" --switch 1.2.3.4 --job 1 --rank 0 \
		--workers 1 --slots 1 --elems 1 2>"$TMP/bad.err"
	check_fail $? "${args[*]} was taken"
	grep -q -- "$*" "$TMP/bad.err"
	check_err $? "the refusal of ${args[*]} does not say '$*': $(head -c 200 "$TMP/bad.err")"
}
refused --sparse 0 -- --sparse
refused --sparse 10 --sparse-mixed -- --sparse-mixed needs
refused --sparse-map -- --sparse-map without --sparse
log_test "a density out of range, --sparse-mixed or --sparse-map alone are refused, naming the option"

tap_end
