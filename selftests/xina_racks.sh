#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Racks of racks (scripts/racks.sh): 3 racks of 3 workers, a subnet each,
# joined through a spine by one inter-rack link per rack; xina (the XDP
# switch) on rack 0 only, racks 1 and 2 plain routers.  One job of all 9
# workers, every one of them sending to rack 0's switch: the flat layout
# that hierarchical aggregation (issue 12) is to improve on.
#
# - the racks route to each other, and a rack without xina passes xina
#   traffic on untouched (its switch has no XDP program);
# - int32 and float32 allreduces of all 9 workers are bit-exact on every
#   worker, and the switch's counters add up (contrib = 9 x complete, one
#   copy per member per result, none unaddressable);
# - the inter-rack links carried what the flat layout must carry: each of
#   racks 1 and 2 sends its 3 workers' tensors up and receives their 3
#   results down, so at least 3 bytes per tensor byte cross its link each
#   way (the figure is logged: the baseline of the hierarchy's 1.05).

. "$(dirname "$0")/lib.sh"
require_root
require_cmd jq "$O/xinactl" "$O/xina-allreduce"
. "$XINA_ROOT/scripts/racks.sh"

NR=3
N=3
W=$((NR * N))
RACK=$(unique_name xrk)
R0=$(racks_name "$RACK" 0)
PIN=$(rack_pin_dir "$R0")
TMP=$(mktemp -d)
trap 'racks_down "$RACK" "$NR"; rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM
KEY=$TMP/job.key
"$O/xinactl" genkey "$KEY" >/dev/null || exit 1
SLOTS=$RACK_FAST_SLOTS
ELEMS=$RACK_FAST_ELEMS
BYTES=${XINA_RACKS_BYTES:-$((1 << 20))}
ITERS=2
JOB=500

# xctl ARGS...: xinactl in rack 0's switch namespace.
xctl()
{
	ip netns exec "$R0-sw" "$O/xinactl" -P "$PIN" "$@"
}

stat_of()	# stat_of JOB NAME
{
	xctl -j stats job "$1" | jq -r ".jobs[0].$2 // empty"
}

# run_all DIR ARGS...: the 9 workers at once, global rank r x N + i.
run_all()
{
	local dir=$1 r i g fails=0
	local -a pids

	shift
	mkdir -p "$dir"
	for ((r = 0; r < NR; r++)); do
		for ((i = 0; i < N; i++)); do
			g=$((r * N + i))
			ip netns exec "$(racks_worker_ns "$RACK" "$r" "$i")" \
				taskset -c $((g % $(nproc))) "$O/xina-allreduce" \
				--switch "$(racks_switch_ip 0)" \
				--bind "$(racks_worker_ip "$r" "$i"):$RACK_WORKER_PORT" \
				--rank "$g" --workers "$W" --json "$@" \
				>"$dir/w$g.json" 2>"$dir/w$g.err" &
			pids[g]=$!
		done
	done
	for ((g = 0; g < W; g++)); do
		wait "${pids[g]}" || fails=$((fails + 1))
	done
	return $fails
}

tap_begin 4

racks_up "$RACK" "$NR" "$N" mtu "$RACK_FAST_MTU" && racks_xdp "$RACK" 0 "$N" "$PIN"
check_err $? "racks of racks could not be set up"
log_test "$NR racks of $N workers routed through a spine, xina on rack 0"
[ "$tap_failed" -gt 0 ] && tap_end

# Racks 1 and 2 have no XDP program anywhere: they only route.
for ((r = 1; r < NR; r++)); do
	progs=$(ip -n "$(racks_switch_ns "$RACK" "$r")" -j link show |
		jq '[.[] | select(.xdp != null)] | length')
	[ "$progs" = 0 ]
	check_err $? "rack $r's switch has $progs XDP programs, want none"
done
members=()
for ((r = 0; r < NR; r++)); do
	for ((i = 0; i < N; i++)); do
		members+=(member $((r * N + i)) "$(racks_worker_ip "$r" "$i"):$RACK_WORKER_PORT")
	done
done
xctl job add "$JOB" workers "$W" slots "$SLOTS" elems "$ELEMS" \
	keyfile "$KEY" "${members[@]}" >/dev/null
check_err $? "job add $JOB of $W members failed"
log_test "racks 1 and 2 without xina; a job of all $W workers on rack 0's switch"

for dtype in i32 f32; do
	if [ "$dtype" != i32 ]; then	# a job per run of the workers
		xctl job del "$JOB" && JOB=$((JOB + 1)) &&
		xctl job add "$JOB" workers "$W" slots "$SLOTS" elems "$ELEMS" \
			keyfile "$KEY" "${members[@]}" >/dev/null
		check_err $? "job $JOB of $W members could not replace the last"
	fi
	dir=$TMP/$dtype
	for ((r = 1; r < NR; r++)); do
		read -r up0[r] down0[r] <<<"$(racks_uplink_bytes "$RACK" "$r")"
	done
	complete0=$(stat_of "$JOB" complete)
	run_all "$dir" --job "$JOB" --key-file "$KEY" --slots "$SLOTS" \
		--elems "$ELEMS" --dtype "$dtype" --bytes "$BYTES" \
		--iters "$ITERS" --timeout-ms 5000
	check_err $? "$? of $W workers failed: $(for f in "$dir"/w*.err; do
		[ -s "$f" ] && echo "[$(basename "$f" .err)] $(tail -n1 "$f")"; done | tr '\n' ' ')"
	check_workers "$W" "$dir"
	complete=$(($(stat_of "$JOB" complete) - complete0))
	contrib=$(stat_of "$JOB" contrib)
	tx=$(stat_of "$JOB" tx)
	answered=$(stat_of "$JOB" retrans_answered)
	unknown=$(stat_of "$JOB" tx_unknown)
	# each join's reply is one copy, to its rank
	answered=$((answered + $(stat_of "$JOB" join) + $(stat_of "$JOB" join_refused)))
	[ "$complete" -gt 0 ] && [ "$contrib" = $((W * $(stat_of "$JOB" complete))) ] &&
		[ "$tx" = $((W * $(stat_of "$JOB" complete) + answered)) ] &&
		[ "$unknown" = 0 ]
	check_err $? "switch counters: complete $complete contrib $contrib tx $tx answered $answered unknown $unknown"

	# ITERS calls, each a tensor of BYTES per worker
	tensor=$((BYTES * ITERS))
	for ((r = 1; r < NR; r++)); do
		read -r up down <<<"$(racks_uplink_bytes "$RACK" "$r")"
		up=$((up - up0[r]))
		down=$((down - down0[r]))
		log_info "$dtype: rack $r's inter-rack link: $(awk -v u="$up" -v d="$down" -v t="$tensor" \
			'BEGIN { printf "%.2f up, %.2f down", u / t, d / t }') bytes per tensor byte"
		[ "$up" -ge $((N * tensor)) ] && [ "$down" -ge $((N * tensor)) ]
		check_err $? "rack $r's link carried $up up, $down down: want at least $N x $tensor each way"
	done
	log_test "$dtype: $W workers in $NR racks bit-exact through rack 0's switch, each rack's $N tensors over its link"
done

tap_end
