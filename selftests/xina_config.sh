#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The configurations the README documents, end to end through the XDP
# switch in a rack of network namespaces:
# - the demo's (scripts/demo.sh, RACK_FAST_* in scripts/rack.sh), which is
#   the largest slot the fast path takes: XINA_MAX_ELEMS (2048) elements
#   per packet at MTU 9000, frames that veth hands to XDP in three buffers;
# - the largest frame that still fits XDP's first buffer on veth: MTU 3506
#   here (PAGE_SIZE less the XDP headroom and skb_shared_info, less the
#   Ethernet header), 857 elements (857 x 4 + 76 = 3504 bytes);
# - a xina UDP port other than the default ("dev attach DEV port P"): the
#   fast path takes that port, and the default one is then not xina's.
# Every worker checks every element; the switch's counters must add up.

. "$(dirname "$0")/lib.sh"
require_root
require_cmd jq "$O/xinactl" "$O/xina-allreduce"
. "$XINA_ROOT/scripts/rack.sh"

rack_test_init xc

# jstat JOB NAME / gstat NAME: a counter of a job, of the whole switch.
jstat()
{
	xctl -j stats job "$1" | jq -r ".jobs[0].$2 // empty"
}

gstat()
{
	xctl -j stats | jq -r ".switch.$1 // empty"
}

# check_run N DIR JOB: every worker verified the same result, and the
# switch made every completion of exactly N contributions.
check_run()
{
	local n=$1 dir=$2 job=$3 i sums contrib complete

	for ((i = 0; i < n; i++)); do
		[ "$(jq -r .verified "$dir/w$i.json" 2>/dev/null)" = true ]
		check_err $? "worker $i: $(tail -n2 "$dir/w$i.err" | tr '\n' ' ')"
	done
	sums=$(cat "$dir"/w*.json 2>/dev/null | jq -r .checksum | sort -u | wc -l)
	[ "$sums" -eq 1 ]
	check_err $? "workers disagree on the result ($sums different checksums)"
	contrib=$(jstat "$job" contrib)
	complete=$(jstat "$job" complete)
	[ -n "$contrib" ] && [ "${complete:-0}" -gt 0 ] &&
		[ "$contrib" -eq $((n * complete)) ]
	check_err $? "switch counters: contrib=$contrib complete=$complete, want contrib = $n x complete"
}

# allreduce_case N JOB SLOTS ELEMS DTYPE BYTES [XINA-ALLREDUCE ARGS...]
allreduce_case()
{
	local n=$1 job=$2 slots=$3 elems=$4 dtype=$5 bytes=$6 dir=$TMP/$2

	shift 6
	rack_job_add "$RACK" "$n" "$job" "$KEYFILE" "$slots" "$elems" "$PIN"
	check_err $? "job add $job failed"
	rack_allreduce "$RACK" "$n" "$dir" --job "$job" --key-file "$KEYFILE" \
		--slots "$slots" --elems "$elems" --dtype "$dtype" \
		--bytes "$bytes" --iters 2 --timeout-ms 5000 "$@"
	check_err $? "$? of $n workers failed"
	check_run "$n" "$dir" "$job"
	# Full packets: an int32 call of E elements completes ceil(E / elems)
	# slots, and one more for xina-allreduce's barrier.
	if [ "$dtype" = i32 ]; then
		complete=$(jstat "$job" complete)
		max=$((2 * ((bytes / 4 + elems - 1) / elems + 1)))
		[ "${complete:-0}" -le "$max" ]
		check_err $? "$complete slots completed, want at most $max with $elems elements a packet"
	fi
	log_info "$(jq -r '"goodput \(.goodput_Bps // 0 | . / 1e6 | floor) MB/s per worker"' "$dir/w0.json" 2>/dev/null)"
	xctl job del "$job"
}

# rack_mtu N MTU [PORT]: a fresh rack at MTU, the fast path on its ports
# (on xina UDP port PORT when given).
rack_mtu()
{
	local n=$1 mtu=$2 port=$3 i

	rack_up "$RACK" "$n" mtu "$mtu" >/dev/null || return 1
	if [ -z "$port" ]; then
		rack_xdp "$RACK" "$n" "$PIN"
		return
	fi
	rack_pin_mount "$PIN" || return 1
	for ((i = 0; i < n; i++)); do
		xctl dev attach "p$i" port "$port" || return 1
	done
}

tap_begin 6

# The demo's configuration, both dtypes, the last packet part-full.
rack_mtu 4 "$RACK_FAST_MTU"
check_err $? "rack of 4 at MTU $RACK_FAST_MTU could not be set up"
E=$RACK_FAST_ELEMS
S=$RACK_FAST_SLOTS
allreduce_case 4 11 "$S" "$E" i32 $((4 * (E * S * 3 + 5)))
log_test "demo configuration (MTU $RACK_FAST_MTU, $E elements, $S slots): 4 workers i32"
allreduce_case 4 12 "$S" "$E" f32 $((8 << 20))
log_test "demo configuration (MTU $RACK_FAST_MTU, $E elements, $S slots): 4 workers f32 8 MiB"

# The largest frame XDP on veth takes in one buffer: 857 elements.
rack_mtu 2 3506
check_err $? "rack of 2 at MTU 3506 could not be set up"
allreduce_case 2 13 32 857 i32 $((4 * (857 * 32 * 2 + 7)))
log_test "largest one-buffer frame on veth (MTU 3506, 857 elements): 2 workers i32"
allreduce_case 2 14 32 857 f32 $((4 << 20))
log_test "largest one-buffer frame on veth (MTU 3506, 857 elements): 2 workers f32 4 MiB"

# Another xina port: the workers send to it and get their results from it.
PORT=9300
rack_mtu 2 1500 "$PORT"
check_err $? "rack with the fast path on port $PORT could not be set up"
ports=$(xctl -j dev show | jq -r '[.devs[].port] | unique | join(" ")')
[ "$ports" = "$PORT" ]
check_err $? "dev show says the ports run xina on UDP port(s) '$ports', want $PORT"
allreduce_case 2 15 64 256 i32 $((1 << 20)) --switch "$RACK_SWITCH_IP:$PORT"
log_test "dev attach port $PORT: allreduce through the non-default port"

# ... and the default port is then not xina's: passed to the stack (no
# listener there: ICMP port unreachable), never taken by the fast path.
rack_job_add "$RACK" 2 16 "$KEYFILE" 64 256 "$PIN"
check_err $? "job add 16 failed"
pass0=$(gstat pass)
ip netns exec "$RACK-w0" timeout 30 "$O/xina-allreduce" \
	--switch "$RACK_SWITCH_IP" --bind "$(rack_worker_ip 0):7000" \
	--rank 0 --workers 2 --job 16 --key-file "$KEYFILE" --slots 64 --elems 256 \
	--dtype i32 --bytes 4096 --timeout-ms 1000 >/dev/null 2>"$TMP/default.err"
rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]
check_err $? "allreduce to the default port: exit $rc, want a clean failure"
rx=$(jstat 16 rx)
[ "$rx" = 0 ]
check_err $? "the fast path took $rx packets on the default port, want 0"
pass1=$(gstat pass)
[ "${pass1:-0}" -gt "${pass0:-0}" ] 2>/dev/null
check_err $? "switch pass counter went from '$pass0' to '$pass1', want it to rise"
grep -q "ICMP port unreachable" "$TMP/default.err"
check_err $? "no ICMP port unreachable reported: $(tail -n1 "$TMP/default.err")"
xctl job del 16
log_test "dev attach port $PORT: the default port 9277 passes to the stack"

tap_end
