#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Racks of racks (scripts/racks.sh): 3 racks of 3 workers, a subnet each,
# joined through a spine by one inter-rack link per rack, MTU 9000 and
# 2048 int32 per packet everywhere; xina (the XDP switch) on rack 0 only,
# racks 1 and 2 without an XDP program.
#
# Flat: one job of all 9 workers, every one of them sending to rack 0's
# switch: the baseline, each of racks 1 and 2 moves its 3 workers'
# tensors over its link each way (at least 3 bytes per tensor byte).
#
# Two levels (issue 12): racks 1 and 2 each run a rack agent (xina-swagg
# --up) in their switch namespace, a user-space aggregator for a rack
# without an XDP switch.  Rack 0's XDP switch holds the upper job, of 5
# members: rack 0's 3 workers (that switch is their top of rack too, so
# they need no job of their own) and the 2 agents, each standing for its
# rack.  A rack job per agent (its own secret) holds the rack's 3 workers
# under their global ranks; every worker is opened for the world size 9
# (the float headroom is that of 9).
#
# - int32 and float32 through the two levels are bit-exact on every
#   worker (each checks against the reference it recomputes) and the same
#   bits as the flat job; the upper job's counters add up (5 contributions
#   per round);
# - each of racks 1 and 2 carries at most 1.05 bytes per tensor byte over
#   its link in each direction (and at least 1: the partial and the result
#   cross it once each);
# - 1% of the xina packets crossing the spine dropped (nftables): still
#   bit-exact, the drop counter rose, the agents resent;
# - the agents stay up across the runs: a new run of the workers opens new
#   epochs on both levels, and every partial got its result.

. "$(dirname "$0")/lib.sh"
require_root
require_cmd jq nft "$O/xinactl" "$O/xina-allreduce" "$O/xina-swagg"
. "$XINA_ROOT/scripts/racks.sh"

NR=3
N=3
W=$((NR * N))
UPW=$((N + NR - 1))	# the upper job: rack 0's workers and the agents
RACK=$(unique_name xrk)
R0=$(racks_name "$RACK" 0)
PIN=$(rack_pin_dir "$R0")
TMP=$(mktemp -d)
declare -a AGENT
stop_agents()
{
	local r

	for ((r = 1; r < NR; r++)); do
		[ -n "${AGENT[r]:-}" ] || continue
		kill -INT "${AGENT[r]}" 2>/dev/null
		wait "${AGENT[r]}" 2>/dev/null
		AGENT[r]=""
	done
}
trap 'stop_agents; racks_down "$RACK" "$NR"; rm -rf "$TMP"' EXIT
trap 'exit 1' INT TERM
KEY=$TMP/job.key
"$O/xinactl" genkey "$KEY" >/dev/null || exit 1
SLOTS=$RACK_FAST_SLOTS
ELEMS=$RACK_FAST_ELEMS
BYTES=${XINA_RACKS_BYTES:-$((1 << 20))}
LOSS_BYTES=$((4 << 20))
LOSS_PERMILLE=10
ITERS=2
JOB=500
HJOB=600

# xctl ARGS...: xinactl in rack 0's switch namespace.
xctl()
{
	ip netns exec "$R0-sw" "$O/xinactl" -P "$PIN" "$@"
}

stat_of()	# stat_of JOB NAME
{
	xctl -j stats job "$1" | jq -r ".jobs[0].$2 // empty"
}

failed_workers()	# failed_workers DIR: the last word of each that failed
{
	local f

	for f in "$1"/w*.err; do
		[ -s "$f" ] && echo "[$(basename "$f" .err)] $(tail -n1 "$f")"
	done | tr '\n' ' '
}

# check_switch JOB MEMBERS: every completed round of JOB took one
# contribution of each member, and each result went to each member once
# (plus retransmission answers and join replies), nobody unaddressable.
check_switch()
{
	local job=$1 m=$2 complete contrib tx answered unknown

	complete=$(stat_of "$job" complete)
	contrib=$(stat_of "$job" contrib)
	tx=$(stat_of "$job" tx)
	unknown=$(stat_of "$job" tx_unknown)
	answered=$(($(stat_of "$job" retrans_answered) + $(stat_of "$job" join) +
		    $(stat_of "$job" join_refused)))
	[ "$complete" -gt 0 ] && [ "$contrib" = $((m * complete)) ] &&
		[ "$tx" = $((m * complete + answered)) ] && [ "$unknown" = 0 ]
	check_err $? "job $job: complete $complete contrib $contrib tx $tx answered $answered unknown $unknown ($m members)"
}

uplink_snap()	# uplink_snap: the links' counters into UP0[r], DOWN0[r]
{
	local r

	for ((r = 1; r < NR; r++)); do
		read -r "UP0[r]" "DOWN0[r]" <<<"$(racks_uplink_bytes "$RACK" "$r")"
	done
}

# uplink_check LABEL TENSOR MIN MAX: bytes over each of racks 1 and 2's
# links since uplink_snap, per tensor byte, logged; with MIN and MAX (in
# hundredths) both directions are checked to lie within them.
uplink_check()
{
	local label=$1 tensor=$2 min=$3 max=$4 r up down

	for ((r = 1; r < NR; r++)); do
		read -r up down <<<"$(racks_uplink_bytes "$RACK" "$r")"
		up=$((up - UP0[r]))
		down=$((down - DOWN0[r]))
		log_info "$label: rack $r's inter-rack link: $(awk -v u="$up" -v d="$down" -v t="$tensor" \
			'BEGIN { printf "%.4f up, %.4f down", u / t, d / t }') bytes per tensor byte"
		[ -z "$max" ] && continue
		[ $((up * 100)) -ge $((min * tensor)) ] &&
			[ $((up * 100)) -le $((max * tensor)) ] &&
			[ $((down * 100)) -ge $((min * tensor)) ] &&
			[ $((down * 100)) -le $((max * tensor)) ]
		check_err $? "rack $r's link carried $up up, $down down for $tensor tensor bytes: want $min/100..$max/100 each way"
	done
}

# Each worker's key file: the upper job's in rack 0, its rack job's else.
rack_key()
{
	if [ $(($1 / N)) -eq 0 ]; then
		echo "--key-file $TMP/up.key"
	else
		echo "--key-file $TMP/rack$(($1 / N)).key"
	fi
}

tap_begin 10

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
for ((g = 0; g < W; g++)); do
	members+=(member "$g" "$(racks_g_ip "$g"):$RACK_WORKER_PORT")
done
xctl job add "$JOB" workers "$W" slots "$SLOTS" elems "$ELEMS" \
	keyfile "$KEY" "${members[@]}" >/dev/null
check_err $? "job add $JOB of $W members failed"
log_test "racks 1 and 2 without xina; a job of all $W workers on rack 0's switch"

declare -A FLAT
for dtype in i32 f32; do
	if [ "$dtype" != i32 ]; then	# a job per run of the workers
		xctl job del "$JOB" && JOB=$((JOB + 1)) &&
		xctl job add "$JOB" workers "$W" slots "$SLOTS" elems "$ELEMS" \
			keyfile "$KEY" "${members[@]}" >/dev/null
		check_err $? "job $JOB of $W members could not replace the last"
	fi
	dir=$TMP/flat-$dtype
	uplink_snap
	racks_allreduce "$RACK" "$NR" racks_flat_switch "$dir" --job "$JOB" \
		--key-file "$KEY" --slots "$SLOTS" --elems "$ELEMS" \
		--dtype "$dtype" --bytes "$BYTES" --iters "$ITERS" --timeout-ms 5000
	check_err $? "$? of $W workers failed: $(failed_workers "$dir")"
	check_workers "$W" "$dir"
	FLAT[$dtype]=$(jq -r .checksum "$dir/w0.json")
	check_switch "$JOB" "$W"
	# the flat layout: each rack's N tensors and N results over its link
	uplink_check "flat $dtype" $((BYTES * ITERS)) "" ""
	for ((r = 1; r < NR; r++)); do
		read -r up down <<<"$(racks_uplink_bytes "$RACK" "$r")"
		[ $((up - UP0[r])) -ge $((N * BYTES * ITERS)) ] &&
			[ $((down - DOWN0[r])) -ge $((N * BYTES * ITERS)) ]
		check_err $? "rack $r's link: want at least $N x $((BYTES * ITERS)) each way"
	done
	log_test "flat $dtype: $W workers in $NR racks bit-exact through rack 0's switch, each rack's $N tensors over its link"
done
xctl job del "$JOB"

# ---- two levels ----------------------------------------------------------
for ((r = 0; r < NR; r++)); do
	f=$TMP/rack$r.key
	[ "$r" -eq 0 ] && f=$TMP/up.key
	"$O/xinactl" genkey "$f" >/dev/null || exit 1
done
upm=()
for ((i = 0; i < N; i++)); do
	upm+=(member "$i" "$(racks_worker_ip 0 "$i"):$RACK_WORKER_PORT")
done
for ((r = 1; r < NR; r++)); do
	upm+=(member $((N + r - 1)) "$(racks_switch_ip "$r"):${XINA_PORT:-9277}")
done
xctl job add "$HJOB" workers "$UPW" slots "$SLOTS" elems "$ELEMS" \
	keyfile "$TMP/up.key" "${upm[@]}" >/dev/null
check_err $? "upper job $HJOB of $UPW members could not be added"
for ((r = 1; r < NR; r++)); do
	racks_agent "$RACK" "$r" "$TMP/agent$r.json" $((N + r - 1)) \
		"$TMP/up.key" "$HJOB" --job "$HJOB" --key-file "$TMP/rack$r.key" \
		--workers "$W" --slots "$SLOTS" --elems "$ELEMS"
	check_err $? "rack $r's agent did not come up"
	AGENT[r]=$RACKS_AGENT_PID
done
joined=$(xctl -j job show "$HJOB" | jq -r '.jobs[0].joined')
[ "$joined" = $((NR - 1)) ]
check_err $? "upper job: $joined joined, want the $((NR - 1)) agents"
log_test "two levels: an agent (xina-swagg --up) in racks 1 and 2 joined the upper job on rack 0's switch"

# hier DTYPE BYTES LABEL [MIN MAX]: the 9 workers through the two levels.
hier()
{
	local dtype=$1 bytes=$2 label=$3 min=${4:-} max=${5:-} dir

	dir=$TMP/hier-$label
	uplink_snap
	RACK_ARGS_FN=rack_key racks_allreduce "$RACK" "$NR" racks_hier_switch \
		"$dir" --job "$HJOB" --slots "$SLOTS" --elems "$ELEMS" \
		--dtype "$dtype" --bytes "$bytes" --iters "$ITERS" \
		--timeout-ms 10000 --join-timeout-ms 10000
	check_err $? "$? of $W workers failed: $(failed_workers "$dir")"
	check_workers "$W" "$dir"
	check_switch "$HJOB" "$UPW"
	uplink_check "two levels $label" $((bytes * ITERS)) "$min" "$max"
	HIER_SUM=$(jq -r .checksum "$dir/w0.json")
}

for dtype in i32 f32; do
	hier "$dtype" "$BYTES" "$dtype" 100 105
	[ "$HIER_SUM" = "${FLAT[$dtype]}" ]
	check_err $? "two levels: checksum $HIER_SUM, the flat job's ${FLAT[$dtype]}"
	log_test "two levels $dtype: $W workers bit-exact, the flat job's bits, at most 1.05 bytes per tensor byte each way on racks 1 and 2's links"
done

racks_loss "$RACK" "$LOSS_PERMILLE"
check_err $? "nftables loss on the spine could not be set up"
for dtype in i32 f32; do
	read -r seen0 drop0 <<<"$(racks_loss_counts "$RACK")"
	hier "$dtype" "$LOSS_BYTES" "$dtype-loss"
	read -r seen drop <<<"$(racks_loss_counts "$RACK")"
	log_info "$dtype: the spine judged $((seen - seen0)) xina packets, dropped $((drop - drop0))"
	[ "$drop" -gt "$drop0" ]
	check_err $? "the spine dropped nothing ($drop0 before, $drop after)"
	log_test "two levels $dtype, $((LOSS_PERMILLE / 10))% loss between the racks: bit-exact, drops recovered"
done
racks_loss_off "$RACK"

# The agents' own counts: every partial got its result, some were resent
# (the loss), no result was forged or stale beyond the resends' answers.
stop_agents
for ((r = 1; r < NR; r++)); do
	a=$TMP/agent$r.json
	read -r sent results resent bad epochs contrib complete <<<"$(jq -r \
		'"\(.up.sent) \(.up.results) \(.up.resent) \(.up.bad_tag) \(.up.epochs) \(.contrib) \(.complete)"' "$a")"
	log_info "rack $r's agent: $(jq -c '.up' "$a")"
	[ "$sent" -gt 0 ] && [ "$results" = "$sent" ] && [ "$complete" = "$sent" ] &&
		[ "$contrib" = $((N * complete)) ] && [ "$resent" -gt 0 ] &&
		[ "$bad" = 0 ] && [ "$epochs" -ge 4 ]
	check_err $? "rack $r's agent: sent $sent results $results resent $resent bad_tag $bad epochs $epochs contrib $contrib complete $complete"
done
log_test "agents: a result for every partial, resends under loss, a new epoch per run of the workers"

tap_end
