#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Every (type, op) pair of xina_allreduce() end to end, with several
# workers, through xina-swagg and then through the XDP switch on the same
# rack: int8, int16, int32, int64 with sum, min, max, avg, and, or, xor;
# float16, bfloat16, float32 with sum, min, max, avg, and float16 sum and
# avg in INT32 lanes as well (--f16-wide).  Every worker checks
# its result against a reference it computes itself from all workers'
# inputs (xina-allreduce): bit-exact for the integer types and for float
# MIN and MAX (inputs with -0, infinities and NaNs), float SUM and AVG
# bitwise equal to the block floating point scheme recomputed there and
# within the error bound of libxina.h.  Each float pair runs twice: all
# workers of both runs must hold the same bits (reproducibility; integer
# results are exact, so their second run would only repeat the first's
# check), and every pair gets the same bits through xina-swagg as through
# the XDP switch (both backends).  The workers' stats name the vector paths
# of libxina's float loops that this CPU has.
#
# Tensors of an odd number of elements: the last 32-bit word of the 8 and
# 16-bit types is padded, the int64 tensor ends in a short block, and the
# last block of every type is partial.

. "$(dirname "$0")/lib.sh"
require_root
require_cmd jq ss "$O/xinactl" "$O/xina-allreduce" "$O/xina-swagg"
. "$XINA_ROOT/scripts/rack.sh"

rack_test_init xt
N=3
ELEMS=64
SLOTS=16
ITERS=2
TIMEOUT_MS=2000
# Until its first result a call waits this long for peers: on a loaded
# machine the N processes of a run may start seconds apart (and wait out
# the switch's busy time after the previous run).  A stall after that is
# still given up after TIMEOUT_MS.
JOIN_TIMEOUT_MS=10000
XINA_UDP_PORT=9277
SW=$RACK_SWITCH_IP:$XINA_UDP_PORT
JOB=31
swagg_pid=""

INT_OPS="sum min max avg and or xor"
FLOAT_OPS="sum min max avg"
declare -A SIZE=([int8]=1 [int16]=2 [int32]=4 [int64]=8 [float16]=2
		 [float16-wide]=2 [bfloat16]=2 [float32]=4)

pairs()
{
	local t o

	for t in int8 int16 int32 int64; do
		for o in $INT_OPS; do echo "$t $o"; done
	done
	for t in float16 bfloat16 float32; do
		for o in $FLOAT_OPS; do echo "$t $o"; done
	done
	echo "float16-wide sum"
	echo "float16-wide avg"
}
NPAIRS=$(pairs | wc -l)

swagg_listening()
{
	ip netns exec "$RACK-sw" ss -Hlun "sport = :$XINA_UDP_PORT" | grep -q .
}

start_swagg()
{
	local members="" i

	for ((i = 0; i < N; i++)); do
		members="$members --member $i=$(rack_worker_ip "$i"):$RACK_WORKER_PORT"
	done
	# shellcheck disable=SC2086
	ip netns exec "$RACK-sw" "$O/xina-swagg" --port "$XINA_UDP_PORT" \
		--job "$JOB" --key-file "$KEYFILE" --workers "$N" --slots "$SLOTS" \
		--elems "$ELEMS" --json $members >"$TMP/swagg.out" 2>"$TMP/swagg.err" &
	swagg_pid=$!
	busywait 5 swagg_listening
}

stop_swagg()
{
	[ -n "$swagg_pid" ] || return 0
	kill -INT "$swagg_pid"
	wait "$swagg_pid"
	swagg_pid=""
}

# run_pair AGG TYPE OP RUN: the N workers of one run, in TMP/AGG/TYPE-OP-RUN.
run_pair()
{
	local agg=$1 t=$2 op=$3 run=$4 count wide=""

	# an odd count: 9 blocks of int32 words and 3 more elements
	count=$((ELEMS * 4 * 9 / SIZE[$t] + 3))
	[ "$t" = float16-wide ] && wide=--f16-wide
	# shellcheck disable=SC2086
	rack_allreduce "$RACK" "$N" "$TMP/$agg/$t-$op-$run" --switch "$SW" \
		--job "$JOB" --key-file "$KEYFILE" --slots "$SLOTS" \
		--elems "$ELEMS" --type "${t%-wide}" --op "$op" $wide \
		--bytes $((count * SIZE[$t])) --iters "$ITERS" \
		--timeout-ms "$TIMEOUT_MS" --join-timeout-ms "$JOIN_TIMEOUT_MS"
}

# runs TYPE: the runs of a pair: two of a float type, one of an integer.
runs()
{
	case $1 in
	float*|bfloat*) echo 1 2 ;;
	*) echo 1 ;;
	esac
}

# check_pair AGG TYPE OP: its runs verified, the same bits everywhere.
check_pair()
{
	local agg=$1 t=$2 op=$3 d=$TMP/$1 run i sums ratio

	for run in $(runs "$t"); do
		check_workers "$N" "$d/$t-$op-$run"
		[ "$ret" -ne 0 ] && return
	done
	sums=$(for run in $(runs "$t"); do
		       for ((i = 0; i < N; i++)); do
			       jq -r .checksum "$d/$t-$op-$run/w$i.json"
		       done
	       done | sort -u | wc -l)
	[ "$sums" -eq 1 ]
	check_err $? "$t $op: the two runs differ ($sums different checksums)"
	ratio=$(jq -r .worst_err_over_bound "$d/$t-$op-1/w0.json")
	case $t-$op in
	*float*-sum | *float*-avg)
		log_info "$agg $t $op: max_abs_err $(jq -r .max_abs_err "$d/$t-$op-1/w0.json"), worst error / bound $ratio" ;;
	esac
}

test_agg()
{
	local agg=$1 t op run ok=0 failed="" dropped

	mkdir -p "$TMP/$agg"
	while read -r t op; do
		ret=0
		for run in $(runs "$t"); do
			run_pair "$agg" "$t" "$op" "$run"
		done
		check_pair "$agg" "$t" "$op"
		if [ "$ret" -eq 0 ]; then
			ok=$((ok + 1))
		else
			failed="$failed $t/$op"
			log_info "$agg $t $op: ${retmsg:0:240}"
		fi
	done < <(pairs)
	ret=0
	[ -z "$failed" ]
	check_err $? "$((NPAIRS - ok)) of $NPAIRS pairs failed:$failed"
	log_test "$agg: $ok of $NPAIRS (type, op) pairs verified against the workers' reference, floats twice with identical bits"
}

tap_begin 6

rack_up "$RACK" "$N" >/dev/null
check_err $? "rack of $N workers could not be set up"
[ "$ret" -ne 0 ] && { log_test "rack"; tap_end; }

start_swagg
check_err $? "xina-swagg did not start: $(tail -n1 "$TMP/swagg.out")"
[ "$ret" -ne 0 ] && { log_test "xina-swagg"; tap_end; }
test_agg swagg
stop_swagg
# no_drops WHAT FILE FILTER COUNTER...: the counters that the jq FILTER
# finds in FILE are all there and 0, and contributions were taken.
no_drops()
{
	local what=$1 file=$2 filter=$3 c v

	shift 3
	for c in "$@" contrib; do
		v=$(jq -r "$filter | .$c // \"missing\"" "$file" 2>/dev/null | head -n1)
		if [ $c = contrib ]; then
			[ "${v:-0}" != missing ] && [ "${v:-0}" -gt 0 ] 2>/dev/null
			check_err $? "$what took ${v:-no} contributions"
		else
			[ "${v:-missing}" = 0 ]
			check_err $? "$what counted ${v:-nothing} $c"
		fi
	done
}

# Nothing the workers sent was refused: every pair is one the switch
# takes, and the packing is the wire's.
ret=0
no_drops xina-swagg "$TMP/swagg.out" . drop_op drop_range malformed
log_test "swagg: no contribution dropped as drop_op, drop_range or malformed"

ret=0
rack_xdp "$RACK" "$N" "$PIN"
check_err $? "XDP switch could not be attached"
rack_job_add "$RACK" "$N" "$JOB" "$KEYFILE" "$SLOTS" "$ELEMS" "$PIN"
check_err $? "job $JOB could not be set up on the XDP switch"
[ "$ret" -ne 0 ] && { log_test "xdp"; tap_end; }
test_agg xdp
ret=0
xctl -j stats >"$TMP/xdp.stats" 2>&1
jq -e . "$TMP/xdp.stats" >/dev/null 2>&1
check_err $? "xinactl -j stats: $(head -c 200 "$TMP/xdp.stats")"
no_drops "the XDP switch" "$TMP/xdp.stats" ".jobs[] | select(.id == $JOB)" \
	drop_op drop_range
v=$(jq -r '.. | objects | select(has("malformed")) | .malformed' "$TMP/xdp.stats" 2>/dev/null | head -n1)
[ "${v:-missing}" = 0 ]
check_err $? "the XDP switch counted ${v:-no} malformed packets"
log_test "xdp: no contribution dropped as drop_op, drop_range or malformed"

# The same inputs, the same bits, whichever aggregator added them.
ret=0
same=0
while read -r t op; do
	a=$(jq -r .checksum "$TMP/swagg/$t-$op-1/w0.json" 2>/dev/null)
	b=$(jq -r .checksum "$TMP/xdp/$t-$op-1/w0.json" 2>/dev/null)
	if [ -n "$a" ] && [ "$a" != null ] && [ "$a" = "$b" ]; then
		same=$((same + 1))
	else
		check_err 1 "$t $op: xina-swagg gave ${a:-nothing}, the XDP switch ${b:-nothing}"
	fi
done < <(pairs)
log_test "$same of $NPAIRS pairs: the same bits through xina-swagg and the XDP switch"

# Each worker's stats name the vector paths its float loops took (vec in
# the JSON, struct xina_worker_stats.vec): those /proc/cpuinfo lists.
ret=0
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
has() { [[ $flags == *" $1 "* ]]; }
want=""
want_add() { want="${want:+$want+}$1"; }
has avx2 && want_add avx2
has avx2 && has f16c && want_add f16c
if has avx512f && has avx512bw; then
	want_add avx512
	has avx512_bf16 && want_add avx512_bf16
	has avx512_fp16 && want_add avx512_fp16
fi
want=${want:-portable}
for ((i = 0; i < N; i++)); do
	got=$(jq -r .vec "$TMP/xdp/float16-sum-1/w$i.json" 2>/dev/null)
	[ "$got" = "$want" ]
	check_err $? "worker $i says its float loops took '$got', this CPU has '$want'"
done
log_test "the workers' stats name the float loops' vector paths this CPU has: $want"
tap_end
