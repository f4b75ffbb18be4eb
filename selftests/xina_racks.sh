#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Racks of racks (scripts/racks.sh): 3 racks of 3 workers, a subnet each,
# joined through a spine by one inter-rack link per rack, MTU 9000 and
# 2048 int32 per packet everywhere.
#
# Flat: xina (the XDP switch) on rack 0 only, racks 1 and 2 without an
# XDP program; one job of all 9 workers, every one of them sending to rack
# 0's switch: the baseline, each of racks 1 and 2 moves its 3 workers'
# tensors over its link each way (at least 3 bytes per tensor byte).
#
# Two levels (issue 12), the upper switch at the spine: xina on the
# spine's ends of the three inter-rack links holds the upper job, of 3
# members, one per rack.  Racks 0 and 2 have XDP switches that hand their
# rack's partial up themselves (a rack job with an uplink, "xinactl job
# add ... up"); rack 1 has none and runs a rack agent (xina-swagg --up) in
# its switch namespace (incremental deployment).  Each rack job holds its
# rack's 3 workers under their global ranks; every worker is opened for
# the world size 9 (the float headroom is that of 9).
#
# - a bad uplink on the command line is refused and changes nothing;
# - int32 and float32 through the two levels are bit-exact on every
#   worker (each checks against the reference it recomputes) and the same
#   bits as the flat job; the upper job's counters add up (3 contributions
#   per round), and so do the uplinks' (a partial up and a result down per
#   round of each rack);
# - every one of the 3 inter-rack links carries at most 1.05 bytes per
#   tensor byte in each direction (and at least 1);
# - an uplink whose next hop lost its neighbour entry (flushed) sends
#   through the kernel's neighbour resolution and makes it again;
# - forged and foreign results and join replies sent to a rack's uplink
#   are dropped and counted, and change nothing;
# - 1% of the xina packets crossing the spine dropped (nftables): still
#   bit-exact, the drop counter rose, the XDP racks and the agent resent;
# - the agent and the XDP racks stay up across the runs: a new run of the
#   workers opens new epochs on both levels, and every partial got its
#   result;
# - the upper secret rotated in place;
# - every rack through an agent: racks 0 and 2 give up their XDP switches
#   (jobs deleted, programs detached) for agents, the spine's upper job is
#   made again with the three agents as its members: bit-exact, the flat
#   job's bits, 1..1.05 bytes per tensor byte on every link, a result for
#   every partial of every agent;
# - the spine's XDP switch given up for xina-swagg (the upper switch in
#   user space): bit-exact with and without 1% loss on the wire, a
#   completed round at the spine for every partial;
# - rack 0's XDP switch handing up to that xina-swagg, racks 1 and 2
#   through agents: bit-exact, the flat job's bits.

. "$(dirname "$0")/lib.sh"
require_root
require_cmd jq nft "$O/xinactl" "$O/xina-allreduce" "$O/xina-swagg"
. "$XINA_ROOT/scripts/racks.sh"

NR=3
N=3
W=$((NR * N))
AR=1		# the rack without an XDP switch in two levels: an agent
RACK=$(unique_name xrk)
R0=$(racks_name "$RACK" 0)
PIN=$(rack_pin_dir "$R0")
SPIN=$(rack_pin_dir "$RACK-spine")
TMP=$(mktemp -d)
AGENT=""	# the agents' pids
stop_agents()
{
	local p

	for p in $AGENT; do
		kill -INT "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	AGENT=""
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
UJOB=600	# the upper job, at the spine
RJOB=700	# rack R's job: RJOB + R

# rctl R ARGS...: xinactl in rack R's switch namespace; sctl: the spine's.
rctl()
{
	local r=$1

	shift
	ip netns exec "$(racks_switch_ns "$RACK" "$r")" "$O/xinactl" \
		-P "$(rack_pin_dir "$(racks_name "$RACK" "$r")")" "$@"
}

sctl()
{
	ip netns exec "$RACK-spine" "$O/xinactl" -P "$SPIN" "$@"
}

xctl()
{
	rctl 0 "$@"
}

CTL=xctl	# whose switch stat_of and check_switch ask

stat_of()	# stat_of JOB NAME
{
	$CTL -j stats job "$1" | jq -r ".jobs[0].$2 // empty"
}

xdp_devs()	# xdp_devs R: rack R's switch's interfaces that run XDP
{
	local links

	links=$(ip -n "$(racks_switch_ns "$RACK" "$1")" -j link show) &&
		jq -r '.[] | select(.xdp != null) | .ifname' <<<"$links"
}

xdp_count()	# xdp_count R: how many; nothing if they cannot be listed
{
	local devs

	devs=$(xdp_devs "$1") || return 1
	[ -z "$devs" ] && echo 0 || wc -l <<<"$devs"
}

up_of()		# up_of R NAME: rack R's uplink, "job show" JSON key NAME
{
	rctl "$1" -j job show $((RJOB + $1)) | jq -r ".jobs[0].up.$2 // empty"
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
# (plus retransmission answers, join replies and the BAD_KEY answers of
# BADKEY_TX[JOB]), nobody unaddressable.
declare -A BADKEY_TX
check_switch()
{
	local job=$1 m=$2 complete contrib tx answered unknown

	complete=$(stat_of "$job" complete)
	contrib=$(stat_of "$job" contrib)
	tx=$(stat_of "$job" tx)
	unknown=$(stat_of "$job" tx_unknown)
	answered=$(($(stat_of "$job" retrans_answered) + $(stat_of "$job" join) +
		    $(stat_of "$job" join_refused) + ${BADKEY_TX[$job]:-0}))
	[ "$complete" -gt 0 ] && [ "$contrib" = $((m * complete)) ] &&
		[ "$tx" = $((m * complete + answered)) ] && [ "$unknown" = 0 ]
	check_err $? "job $job: complete $complete contrib $contrib tx $tx answered $answered unknown $unknown ($m members)"
}

UL_FIRST=1	# the links uplink_snap and uplink_check look at: UL_FIRST..NR-1

uplink_snap()	# uplink_snap: the links' counters into UP0[r], DOWN0[r]
{
	local r

	for ((r = UL_FIRST; r < NR; r++)); do
		read -r "UP0[r]" "DOWN0[r]" <<<"$(racks_uplink_bytes "$RACK" "$r")"
	done
}

# uplink_check LABEL TENSOR MIN MAX: bytes over each link since
# uplink_snap, per tensor byte, logged; with MIN and MAX (in hundredths)
# both directions are checked to lie within them.
uplink_check()
{
	local label=$1 tensor=$2 min=$3 max=$4 r up down

	for ((r = UL_FIRST; r < NR; r++)); do
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

# Each worker's rack job and its key file.
rack_key()
{
	echo "--job $((RJOB + $1 / N)) --key-file $TMP/rack$(($1 / N)).key"
}

tap_begin 17

racks_up "$RACK" "$NR" "$N" mtu "$RACK_FAST_MTU" wire && racks_xdp "$RACK" 0 "$N" "$PIN"
check_err $? "racks of racks could not be set up"
log_test "$NR racks of $N workers routed through a spine (links through a wire), xina on rack 0"
[ "$tap_failed" -gt 0 ] && tap_end

# Racks 1 and 2 have no XDP program anywhere: they only route.
for ((r = 1; r < NR; r++)); do
	progs=$(xdp_count "$r")
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
	# the flat layout: each rack's N tensors and N results over its link,
	# less up the blocks of zeros its workers sent as their header alone
	# (XINA_F_ZERO: the float input has blocks of zeros), at most a
	# block's words each
	uplink_check "flat $dtype" $((BYTES * ITERS)) "" ""
	for ((r = 1; r < NR; r++)); do
		read -r up down <<<"$(racks_uplink_bytes "$RACK" "$r")"
		zero=0
		for ((i = r * N; i < (r + 1) * N; i++)); do
			zero=$((zero + $(jq -r '.zero_sent // 0' "$dir/w$i.json")))
		done
		[ $((up - UP0[r])) -ge $((N * BYTES * ITERS - zero * ELEMS * 4)) ] &&
			[ $((down - DOWN0[r])) -ge $((N * BYTES * ITERS)) ]
		check_err $? "rack $r's link: want at least $N x $((BYTES * ITERS)) each way ($zero blocks of zeros up as headers alone)"
	done
	log_test "flat $dtype: $W workers in $NR racks bit-exact through rack 0's switch, each rack's $N tensors over its link"
done
xctl job del "$JOB"


# ---- two levels, the upper switch at the spine ---------------------------
UL_FIRST=0
for f in up rack0 rack1 rack2; do
	"$O/xinactl" genkey "$TMP/$f.key" >/dev/null || exit 1
done
racks_spine_xdp "$RACK" "$NR" "$SPIN" && racks_xdp "$RACK" 2 "$N"
check_err $? "xina could not be attached to the spine and to rack 2"
# upper_job KEYFILE XDP_RACKS: the spine's upper job UJOB, a member per
# rack where its partials come from (racks_spine_member): its uplink's
# address for a rack in XDP_RACKS, its agent's (the rack switch's) for the
# others.
upper_job()
{
	local key=$1 r upm=()

	for ((r = 0; r < NR; r++)); do
		upm+=(member "$r" "$(racks_spine_member "$r" "$2")")
	done
	sctl job add "$UJOB" workers "$NR" slots "$SLOTS" elems "$ELEMS" \
		keyfile "$key" "${upm[@]}" >/dev/null
}

UP_RACKS="0 2"	# the racks that hand up from an XDP switch
upper_job "$TMP/up.key" "$UP_RACKS"
check_err $? "upper job $UJOB of $NR members could not be added at the spine"

# rack_job R ID ARGS...: rack R's job ID of its N workers (global ranks).
rack_job()
{
	local r=$1 id=$2 i
	local -a m

	shift 2
	for ((i = 0; i < N; i++)); do
		m+=(member $((r * N + i)) "$(racks_worker_ip "$r" "$i"):$RACK_WORKER_PORT")
	done
	rctl "$r" job add "$id" workers "$W" slots "$SLOTS" elems "$ELEMS" \
		keyfile "$TMP/rack$r.key" "${m[@]}" "$@"
}

uplink()	# uplink R [UPKEY]: the UPLINK arguments of rack R
{
	echo "up $(racks_spine_ip "$1") upjob $UJOB uprank $1 upkeyfile ${2:-$TMP/up.key}"
}

# bad_uplink WANT ARGS...: rack 0's job add ARGS... fails saying WANT.
# nhkeys_set R: how many entries of rack R's xina_nhkeys are not all zero
# (a job's NH key: none may stay behind a refused add).
nhkeys_set()
{
	bpftool -j map dump pinned \
		"$(rack_pin_dir "$(racks_name "$RACK" "$1")")/xina_nhkeys" |
		jq '[.[] | select([.value[] | select(. != "0x00")] | length > 0)] | length'
}

bad_uplink()
{
	local want=$1

	shift
	rack_job 0 $((RJOB + 90)) "$@" >/dev/null 2>"$TMP/bad.err" && return 1
	grep -q -- "$want" "$TMP/bad.err" ||
		{ log_info "said: $(cat "$TMP/bad.err")"; return 1; }
}

# shellcheck disable=SC2046 # word splitting of $(uplink) is the point
{
	bad_uplink "needs 'upkeyfile' too" up "$(racks_spine_ip 0)" upjob "$UJOB" uprank 0
	check_err $? "an uplink without upkeyfile was not refused"
	bad_uplink "upkeyfile: key file $TMP/none.key: No such file" $(uplink 0 "$TMP/none.key")
	check_err $? "an uplink with a missing upper key file was not refused"
	bad_uplink "upper rank '256' out of range" up "$(racks_spine_ip 0)" \
		upjob "$UJOB" uprank 256 upkeyfile "$TMP/up.key"
	check_err $? "upper rank 256 was not refused"
	bad_uplink "which is the upper switch itself" up 127.0.0.1 upjob "$UJOB" \
		uprank 0 upkeyfile "$TMP/up.key"
	check_err $? "an upper switch on this box's loopback was not refused"
	n=$(rctl 0 -j job show | jq '.jobs | length')
	[ "$n" = 0 ]
	check_err $? "rack 0 holds $n jobs after the refusals, want none"
	n=$(nhkeys_set 0)
	[ "$n" = 0 ]
	check_err $? "rack 0 keeps '$n' NH keys after the refusals, want none"
	for r in 0 2; do
		rack_job "$r" $((RJOB + r)) $(uplink "$r") >/dev/null
		check_err $? "rack $r's job with its uplink could not be added"
	done
	bad_uplink "upper job $UJOB is the uplink of job $RJOB already" $(uplink 0)
	check_err $? "a second uplink to upper job $UJOB was not refused"
	n=$(rctl 0 -j job show | jq -c '[.jobs[].id]')
	[ "$n" = "[$RJOB]" ]
	check_err $? "rack 0 holds jobs $n, want [$RJOB]"
	n=$(nhkeys_set 0)
	[ "$n" = 1 ]
	check_err $? "rack 0 keeps '$n' NH keys, want its job's only"
}
log_test "uplinks: incomplete, unreadable, out of range and looping uplinks refused, nothing left behind"

RACKS_UP_ADDR=$(racks_spine_ip "$AR") racks_agent "$RACK" "$AR" "$TMP/agent.json" \
	"$AR" "$TMP/up.key" "$UJOB" --job $((RJOB + AR)) \
	--key-file "$TMP/rack$AR.key" --workers "$W" --slots "$SLOTS" --elems "$ELEMS"
check_err $? "rack $AR's agent did not come up"
AGENT=$RACKS_AGENT_PID
progs=$(xdp_count "$AR")
[ "$progs" = 0 ]
check_err $? "rack $AR's switch has $progs XDP programs, want none"
log_test "two levels: the upper job on the spine's XDP switch; racks 0 and 2 hand up from theirs, rack $AR through an agent (xina-swagg --up)"

# check_uplinks: each XDP rack's uplink sent a partial per round its job
# completed, had a result for every one (more with resends), and dropped
# nothing of the upper switch's (beyond BAD0[r], the forged packets).
declare -A BAD0=([0]=0 [2]=0)
check_uplinks()
{
	local r sent results complete bad

	for r in $UP_RACKS; do
		sent=$(up_of "$r" sent)
		results=$(up_of "$r" results)
		complete=$(CTL="rctl $r" stat_of $((RJOB + r)) complete)
		bad=$(($(up_of "$r" drop_auth) + $(up_of "$r" drop_foreign) +
		       $(up_of "$r" no_route)))
		[ "$sent" -gt 0 ] && [ "$sent" = "$complete" ] &&
			[ "$results" -ge "$sent" ] && [ "$bad" = "${BAD0[$r]}" ]
		check_err $? "rack $r's uplink: sent $sent for $complete rounds, results $results, dropped or unroutable $bad"
	done
}

# uplinks_brief: the XDP racks' uplinks in a line, for a failure's message
# (the test's summary keeps that line alone): joins sent, answered OK and
# refused, the rack epoch waiting for an upper one, partials and results,
# frames sent through the neighbour resolution and without a route.
uplinks_brief()
{
	local r

	for r in $UP_RACKS; do
		rctl "$r" -j job show $((RJOB + r)) | jq -r --arg r "$r" '.jobs[0].up |
			"rack \($r): joins \(.join_sent)/\(.join_ok)/\(.join_refused) want \(.want) epoch \(.epoch) sent \(.sent) results \(.results) no_neigh \(.no_neigh) no_route \(.no_route);"'
	done | tr '\n' ' '
}

# hier DTYPE BYTES LABEL [MIN MAX]: the 9 workers through the two levels.
hier()
{
	local dtype=$1 bytes=$2 label=$3 min=${4:-} max=${5:-} dir rc

	dir=$TMP/hier-$label
	uplink_snap
	# No fixed --join-timeout-ms: the barrier before a worker's second
	# call waits for the slowest peer's check of the first, which grows
	# with the tensor (about 27 s for float32 at XINA_RACKS_BYTES=64 MiB
	# on 2 CPUs) and differs by seconds between the CPUs the workers are
	# pinned to.  A 10 s cap made the first ranks at the barrier give up
	# on its open round (their resends counted dup) while the last ones
	# completed it and waited in call 2 for them, a "hang" at slot 0
	# round 258; libxina's default, timeout_ms plus twice the worker's
	# own time since its last call, scales with that check.
	RACK_ARGS_FN=rack_key racks_allreduce "$RACK" "$NR" racks_hier_switch \
		"$dir" --slots "$SLOTS" --elems "$ELEMS" \
		--dtype "$dtype" --bytes "$bytes" --iters "$ITERS" \
		--timeout-ms 10000
	rc=$?
	check_err $rc "$rc of $W workers failed: $(failed_workers "$dir") uplinks: $(uplinks_brief)"
	check_workers "$W" "$dir"
	check_uplinks
	uplink_check "two levels $label" $((bytes * ITERS)) "$min" "$max"
	HIER_SUM=$(jq -r .checksum "$dir/w0.json")
	# xina-swagg at the spine: its counters are read when it stops
	[ -n "${SPINE_SWAGG:-}" ] && return
	CTL=sctl check_switch "$UJOB" "$NR"
	# the racks' joins of the upper job name the workers' run; with
	# UPPER_RUN0, none did: agents alone, the first run since they
	# joined at start naming none (bpf/xina_join.h), an epoch they keep
	run=$(jq -r .run "$dir/w0.json")
	urun=$(sctl -j job show "$UJOB" | jq -r '.jobs[0].run')
	want=$run
	[ -n "${UPPER_RUN0:-}" ] && want=0
	[ "$run" != 0 ] && [ "$urun" = "$want" ]
	check_err $? "the upper job's epoch has run $urun, want $want (the workers' run is $run)"
}

for dtype in i32 f32; do
	hier "$dtype" "$BYTES" "$dtype" 100 105
	[ "$HIER_SUM" = "${FLAT[$dtype]}" ]
	check_err $? "two levels: checksum $HIER_SUM, the flat job's ${FLAT[$dtype]}"
	log_test "two levels $dtype: $W workers bit-exact, the flat job's bits, 1..1.05 bytes per tensor byte each way on all $NR inter-rack links"
done

# The uplinks' next hops lose their neighbour entries (an expiry, a
# flush, an upper switch that came back with another MAC address):
# bpf_fib_lookup() cannot make one, so the partials that find none go
# through the kernel's neighbour resolution (TC, bpf_redirect_neigh()),
# which makes it again; nothing is lost and nothing waits for a timeout.
declare -A NN0
for r in 0 2; do
	NN0[$r]=$(up_of "$r" no_neigh)
	ip -n "$(racks_switch_ns "$RACK" "$r")" neigh flush dev up0
done
hier i32 "$BYTES" i32-neigh 100 105
[ "$HIER_SUM" = "${FLAT[i32]}" ]
check_err $? "after the flush: checksum $HIER_SUM, the flat job's ${FLAT[i32]}"
for r in 0 2; do
	nn=$(up_of "$r" no_neigh)
	neigh=$(ip -n "$(racks_switch_ns "$RACK" "$r")" neigh show dev up0 \
		"$(racks_spine_ip "$r")")
	[ "$nn" -gt "${NN0[$r]}" ] && [ -n "$neigh" ]
	check_err $? "rack $r's uplink after the flush: no_neigh $nn (${NN0[$r]} before), neighbour entry '$neigh'"
done
log_test "uplinks whose neighbour entries were flushed: partials sent through the kernel's neighbour resolution (no_neigh), entries made again, bit-exact"

# forge R TYPE SPORT [STATUS]: from the spine, a TYPE (2 result, 4 join
# reply) of the upper job to rack R's uplink, from the spine's address and
# port SPORT, with a tag nobody computed; a join reply says STATUS (0 OK,
# 1 BAD_KEY: epoch 0, the tag meant as the echo of the rack's join).
forge()
{
	ip netns exec "$RACK-spine" python3 - "$(racks_spine_ip "$1")" "$3" \
		"$(racks_uplink_ip "$1")" "${XINA_PORT:-9277}" "$2" "$UJOB" "$1" \
		"$(up_of "$1" epoch)" "${4:-0}" <<-'PY'
	import os, socket, struct, sys
	src, sport, dst, dport, typ, job, rank, epoch, status = sys.argv[1:]
	typ, status = int(typ), int(status)
	count = 0 if typ == 4 else 1
	# version type dtype op flags exp count job rank weight slot round
	# epoch aux offset tag: a result of slot 0 round 0, or a reply
	hdr = struct.pack("!BBBBBbHIHHIIIIQ8s", 2, typ, 1, 1 if count else 0,
			  0, 0, count, int(job), int(rank) if typ == 4 else 0,
			  0, 0, status, 0 if status else int(epoch), 0, 0,
			  os.urandom(8))
	s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
	s.bind((src, int(sport)))
	s.sendto(hdr + b"\0" * (4 * count), (dst, int(dport)))
	PY
}

declare -A B4
for k in drop_auth drop_foreign results epoch join_ok join_refused; do
	B4[$k]=$(up_of 0 "$k")
done
forge 0 2 "${XINA_PORT:-9277}" && forge 0 4 "${XINA_PORT:-9277}" &&
	forge 0 4 "${XINA_PORT:-9277}" 1 &&
	forge 0 2 $((${XINA_PORT:-9277} + 1))
check_err $? "the forged packets could not be sent"
foreign_is()	# foreign_is N: rack 0's uplink dropped N foreign packets
{
	[ "$(up_of 0 drop_foreign)" = "$1" ]
}
busywait 5 foreign_is $((B4[drop_foreign] + 1))
[ "$(up_of 0 drop_auth)" = $((B4[drop_auth] + 3)) ] &&
	[ "$(up_of 0 drop_foreign)" = $((B4[drop_foreign] + 1)) ]
check_err $? "rack 0's uplink: drop_auth $(up_of 0 drop_auth) (was ${B4[drop_auth]}), drop_foreign $(up_of 0 drop_foreign) (was ${B4[drop_foreign]}): want +3, +1"
for k in results epoch join_ok join_refused; do
	[ "$(up_of 0 "$k")" = "${B4[$k]}" ]
	check_err $? "rack 0's uplink: $k $(up_of 0 "$k") after the forged packets, ${B4[$k]} before"
done
log_test "forged results and join replies (OK, BAD_KEY) on rack 0's uplink dropped and counted (drop_auth, drop_foreign), nothing changed"
BAD0[0]=$((B4[drop_auth] + B4[drop_foreign] + 4))

racks_loss "$RACK" "$LOSS_PERMILLE"
check_err $? "nftables loss on the wire could not be set up"
declare -A RS0
for r in 0 2; do RS0[$r]=$(up_of "$r" resent); done
for dtype in i32 f32; do
	read -r seen0 drop0 <<<"$(racks_loss_counts "$RACK")"
	hier "$dtype" "$LOSS_BYTES" "$dtype-loss"
	read -r seen drop <<<"$(racks_loss_counts "$RACK")"
	log_info "$dtype: the wire judged $((seen - seen0)) xina packets, dropped $((drop - drop0))"
	[ "$drop" -gt "$drop0" ]
	check_err $? "the wire dropped nothing ($drop0 before, $drop after)"
	log_test "two levels $dtype, $((LOSS_PERMILLE / 10))% loss on the inter-rack links: bit-exact, drops recovered"
done
racks_loss_off "$RACK"
for r in 0 2; do
	rs=$(up_of "$r" resent)
	log_info "rack $r's uplink: $(rctl "$r" -j job show $((RJOB + r)) | jq -c '.jobs[0].up')"
	[ "$rs" -gt "${RS0[$r]}" ] && [ "$(up_of "$r" join_ok)" -ge 4 ]
	check_err $? "rack $r's uplink: resent $rs (${RS0[$r]} before the loss), join_ok $(up_of "$r" join_ok): want resends and an upper epoch per run"
done

# The agent's own counts: every partial got its result, some were resent
# (the loss), no result was forged or stale beyond the resends' answers.
stop_agents
a=$TMP/agent.json
read -r sent results resent bad epochs contrib complete <<<"$(jq -r \
	'"\(.up.sent) \(.up.results) \(.up.resent) \(.up.bad_tag) \(.up.epochs) \(.contrib) \(.complete)"' "$a")"
log_info "rack $AR's agent: $(jq -c '.up' "$a")"
[ "$sent" -gt 0 ] && [ "$results" = "$sent" ] && [ "$complete" = "$sent" ] &&
	[ "$contrib" = $((N * complete)) ] && [ "$resent" -gt 0 ] &&
	[ "$bad" = 0 ] && [ "$epochs" -ge 4 ]
check_err $? "rack $AR's agent: sent $sent results $results resent $resent bad_tag $bad epochs $epochs contrib $contrib complete $complete"
log_test "agent and XDP uplinks: a result for every partial, resends under loss, a new upper epoch per run of the workers"

# The upper job's secret rotated in place: the spine's job gets a new key
# file (job set keyfile), the XDP racks' uplinks the same one (job set
# upkeyfile), the agent is restarted with it.  Nothing is added again:
# the jobs keep their slots and counters, and the two levels give the
# flat job's bits with the new keys only (a partial tagged with the old
# upper secret fails the spine's check, drop_auth).
"$O/xinactl" genkey "$TMP/up2.key" >/dev/null &&
	sctl job set "$UJOB" keyfile "$TMP/up2.key"
check_err $? "the upper secret could not be set at the spine"
# Between the two: rack 0's uplink still has the old upper key.  A worker
# of a new run joins rack 0; the uplink's upper join fails the spine's
# check and is answered BAD_KEY with the join's own tag echoed, which the
# uplink counts as a refusal (a BAD_KEY that echoes another tag is
# drop_auth, check 10).  The worker gets no epoch and gives up.
REF0=$(up_of 0 join_refused) AUTH0=$(up_of 0 drop_auth)
SAUTH0=$(CTL=sctl stat_of "$UJOB" drop_auth)
ip netns exec "$(racks_worker_ns "$RACK" 0 0)" "$O/xina-allreduce" \
	--switch "$(racks_switch_ip 0)" \
	--bind "$(racks_worker_ip 0 0):$RACK_WORKER_PORT" $(rack_key 0) \
	--rank 0 --workers "$W" --slots "$SLOTS" --elems "$ELEMS" \
	--bytes 4096 --iters 1 --run $((RANDOM + 1)) --join-timeout-ms 1000 \
	--json >"$TMP/oldkey.json" 2>"$TMP/oldkey.err"
[ "$(up_of 0 join_refused)" -gt "$REF0" ] &&
	[ "$(up_of 0 drop_auth)" = "$AUTH0" ]
check_err $? "rack 0's uplink with the old upper key: join_refused $REF0 -> $(up_of 0 join_refused), drop_auth $AUTH0 -> $(up_of 0 drop_auth): want more refusals, no drop_auth"
# the spine answered each of those joins BAD_KEY (drop_auth there)
BADKEY_TX[$UJOB]=$(($(CTL=sctl stat_of "$UJOB" drop_auth) - SAUTH0))
rctl 0 job set "$RJOB" upkeyfile "$TMP/up2.key" &&
	rctl 2 job set $((RJOB + 2)) upkeyfile "$TMP/up2.key"
check_err $? "the upper secret could not be set at the racks"
RACKS_UP_ADDR=$(racks_spine_ip "$AR") racks_agent "$RACK" "$AR" "$TMP/agent2.json" \
	"$AR" "$TMP/up2.key" "$UJOB" --job $((RJOB + AR)) \
	--key-file "$TMP/rack$AR.key" --workers "$W" --slots "$SLOTS" --elems "$ELEMS"
check_err $? "rack $AR's agent did not come up with the new upper key"
AGENT=$RACKS_AGENT_PID
sent0=$(up_of 0 sent)
# No bound on the links' bytes here (checks 7 and 8 have it): the new
# agent's joins and first resends weigh on 2 MiB (1.08 seen once).
hier i32 "$BYTES" i32-rekey
[ "$HIER_SUM" = "${FLAT[i32]}" ] && [ "$(up_of 0 sent)" -gt "$sent0" ]
check_err $? "after the new upper secret: checksum $HIER_SUM (the flat job's ${FLAT[i32]}), rack 0 sent $(up_of 0 sent) partials up ($sent0 before)"
log_test "upper secret rotated in place (job set keyfile at the spine, upkeyfile at the racks): a rack on the old key refused (BAD_KEY echoing its join, join_refused), then bit-exact through the two levels"

# agents_up PREFIX WHAT [RACKS]: an agent in each of RACKS (default every
# rack), each joined to the spine's upper job UJOB (key up2.key) at its
# end of the rack's link; agent r's counters in $TMP/PREFIX$r.json.  A
# failure says which racks' agents WHAT.
agents_up()
{
	local r bad=""

	for r in ${3:-$(seq 0 $((NR - 1)))}; do
		if RACKS_UP_ADDR=$(racks_spine_ip "$r") racks_agent "$RACK" "$r" \
			"$TMP/$1$r.json" "$r" "$TMP/up2.key" "$UJOB" \
			--job $((RJOB + r)) --key-file "$TMP/rack$r.key" \
			--workers "$W" --slots "$SLOTS" --elems "$ELEMS"; then
			AGENT="$AGENT $RACKS_AGENT_PID"
		else
			bad="$bad $r"
		fi
	done
	[ -z "$bad" ]
	check_err $? "the agents of racks$bad $2"
}

# ---- the upper switch at the spine, an agent in every rack ---------------
# Racks 0 and 2 give their XDP switches up for agents (README, "Racks of
# racks"): no XDP program in any rack, the spine's upper job made again
# with each rack's agent at its switch address.
stop_agents
sctl job del "$UJOB" && UJOB=$((UJOB + 1)) && UP_RACKS=""
check_err $? "the upper job could not be deleted at the spine"
bad=""
for r in 0 2; do
	rctl "$r" job del $((RJOB + r)) || bad="$bad job-del-$r"
	for dev in $(xdp_devs "$r"); do
		rctl "$r" dev detach "$dev" || bad="$bad detach-$r-$dev"
	done
done
[ -z "$bad" ]
check_err $? "racks 0 and 2 could not give up their XDP switches:$bad"
upper_job "$TMP/up2.key" ""
check_err $? "upper job $UJOB of $NR agents could not be added at the spine"
agents_up agents- "did not come up"
progs=0
for ((r = 0; r < NR; r++)); do
	progs=$((progs + $(xdp_count "$r")))
done
[ "$progs" = 0 ]
check_err $? "the racks' switches have $progs XDP programs, want none"
# The first run after the agents' joins unbounded (check 14's reason);
# in the epoch of the agents' joins at start, which named no run.  The
# second run of the workers opens new rack epochs, and with them an upper
# epoch of that run.
UPPER_RUN0=1 hier i32 "$BYTES" i32-agents
[ "$HIER_SUM" = "${FLAT[i32]}" ]
check_err $? "every rack through an agent, i32: checksum $HIER_SUM, the flat job's ${FLAT[i32]}"
hier f32 "$BYTES" f32-agents 100 105
[ "$HIER_SUM" = "${FLAT[f32]}" ]
check_err $? "every rack through an agent, f32: checksum $HIER_SUM, the flat job's ${FLAT[f32]}"
stop_agents
for ((r = 0; r < NR; r++)); do
	a=$TMP/agents-$r.json
	read -r sent results bad contrib complete <<<"$(jq -r \
		'"\(.up.sent) \(.up.results) \(.up.bad_tag) \(.contrib) \(.complete)"' "$a")"
	[ "$sent" -gt 0 ] && [ "$results" = "$sent" ] &&
		[ "$complete" = "$sent" ] && [ "$contrib" = $((N * complete)) ] &&
		[ "$bad" = 0 ]
	check_err $? "rack $r's agent: sent $sent results $results bad_tag $bad contrib $contrib complete $complete"
done
log_test "every rack through an agent (racks 0 and 2 gave up their XDP switches), the upper switch at the spine: i32 and f32 bit-exact, the flat job's bits, 1..1.05 bytes per tensor byte on every link, a result for every partial"

# ---- the upper switch at the spine in user space -------------------------
# The spine gives its XDP switch up for xina-swagg (racks_spine_swagg):
# aggregation in user space on both levels, no XDP program anywhere.  The
# same bits as the flat job, with and without 1% loss on the wire, and the
# spine's own counts: a round completed for every partial of every agent
# (a contribution from each), resends answered from the kept results.
sctl job del "$UJOB"
check_err $? "the upper job could not be deleted at the spine"
bad=""
for ((r = 0; r < NR; r++)); do
	sctl dev detach "r$r" || bad="$bad r$r"
done
[ -z "$bad" ]
check_err $? "the spine's XDP switch could not be detached from:$bad"
UJOB=$((UJOB + 1))
racks_spine_swagg "$RACK" "$NR" "$TMP/spine.json" "$UJOB" "$TMP/up2.key" \
	--slots "$SLOTS" --elems "$ELEMS"
check_err $? "xina-swagg did not come up at the spine"
SPINE=$RACKS_SPINE_PID
agents_up swagg-agent "did not join the spine's xina-swagg"
progs=$(ip -n "$RACK-spine" -j link show | jq '[.[] | select(.xdp)] | length')
[ "$progs" = 0 ]
check_err $? "the spine has $progs interfaces with XDP, want none"
SPINE_SWAGG=1 hier i32 "$BYTES" i32-swagg
[ "$HIER_SUM" = "${FLAT[i32]}" ]
check_err $? "xina-swagg at the spine, i32: checksum $HIER_SUM, the flat job's ${FLAT[i32]}"
SPINE_SWAGG=1 hier f32 "$BYTES" f32-swagg 100 105
[ "$HIER_SUM" = "${FLAT[f32]}" ]
check_err $? "xina-swagg at the spine, f32: checksum $HIER_SUM, the flat job's ${FLAT[f32]}"
racks_loss "$RACK" "$LOSS_PERMILLE"
check_err $? "nftables loss on the wire could not be set up"
read -r seen0 drop0 <<<"$(racks_loss_counts "$RACK")"
SPINE_SWAGG=1 hier i32 "$LOSS_BYTES" i32-swagg-loss
read -r seen drop <<<"$(racks_loss_counts "$RACK")"
racks_loss_off "$RACK"
log_info "xina-swagg at the spine, i32: the wire judged $((seen - seen0)) xina packets, dropped $((drop - drop0))"
[ "$drop" -gt "$drop0" ]
check_err $? "under loss: the wire dropped nothing ($drop0 before, $drop after)"
stop_agents
kill -INT "$SPINE" && wait "$SPINE"
check_err $? "the spine's xina-swagg did not stop cleanly: $(cat "$TMP/spine.json.err")"
log_info "the spine's xina-swagg: $(jq -c . "$TMP/spine.json")"
ups=0 resent=0
for ((r = 0; r < NR; r++)); do
	a=$TMP/swagg-agent$r.json
	read -r sent results rs bad <<<"$(jq -r \
		'"\(.up.sent) \(.up.results) \(.up.resent) \(.up.bad_tag)"' "$a")"
	[ "$sent" -gt 0 ] && [ "$results" = "$sent" ] && [ "$bad" = 0 ]
	check_err $? "rack $r's agent: sent $sent results $results bad_tag $bad"
	ups=$((ups + sent)) resent=$((resent + rs))
done
read -r contrib complete dup answered bad <<<"$(jq -r \
	'"\(.contrib) \(.complete) \(.dup) \(.retrans_answered) \(.drop_auth + .malformed + .drop_member)"' \
	"$TMP/spine.json")"
[ "$contrib" = "$ups" ] && [ "$contrib" = $((NR * complete)) ] &&
	[ "$resent" -gt 0 ] && [ $((dup + answered)) -gt 0 ] && [ "$bad" = 0 ]
check_err $? "the spine's xina-swagg: contrib $contrib (the agents sent $ups partials), complete $complete, dup $dup, answered $answered, dropped $bad; the agents resent $resent"
log_test "xina-swagg at the spine, an agent in every rack (no XDP anywhere): i32 and f32 bit-exact, the flat job's bits, 1..1.05 bytes per tensor byte on every link; under 1% loss on the wire bit-exact, resends answered; a completed round for every partial"

# ---- an XDP rack handing up to xina-swagg at the spine -------------------
# Rack 0 gets its XDP switch back, its rack job with an uplink to a new
# upper job at the spine's xina-swagg (member 0 its uplink's address);
# racks 1 and 2 keep their agents.  The wire's bridge gives the uplink's
# redirect into up0 the NAPI context veth needs.
UJOB=$((UJOB + 1))
racks_xdp "$RACK" 0 "$N" "$PIN" &&
	rack_job 0 "$RJOB" $(uplink 0 "$TMP/up2.key")
check_err $? "rack 0's XDP switch and its uplink could not be set up again"
RACKS_SPINE_XDP=0 racks_spine_swagg "$RACK" "$NR" "$TMP/spine-x.json" \
	"$UJOB" "$TMP/up2.key" --slots "$SLOTS" --elems "$ELEMS"
check_err $? "xina-swagg did not come up at the spine"
SPINE=$RACKS_SPINE_PID
agents_up mixed-agent "did not join the spine's xina-swagg" "1 2"
UP_RACKS=0 BAD0[0]=0
# the first run after the joins unbounded, as in check 15
for dtype in i32 f32; do
	bound=""
	[ "$dtype" = f32 ] && bound="100 105"
	# shellcheck disable=SC2086 # bound: none, or MIN MAX
	SPINE_SWAGG=1 hier "$dtype" "$BYTES" "$dtype-xdp-swagg" $bound
	[ "$HIER_SUM" = "${FLAT[$dtype]}" ]
	check_err $? "rack 0's XDP switch under xina-swagg, $dtype: checksum $HIER_SUM, the flat job's ${FLAT[$dtype]}"
done
stop_agents
kill -INT "$SPINE" && wait "$SPINE"
check_err $? "the spine's xina-swagg did not stop cleanly: $(cat "$TMP/spine-x.json.err")"
read -r contrib complete bad <<<"$(jq -r \
	'"\(.contrib) \(.complete) \(.drop_auth + .malformed + .drop_member)"' \
	"$TMP/spine-x.json")"
sent=$(up_of 0 sent)
[ "$complete" -gt 0 ] && [ "$contrib" = $((NR * complete)) ] &&
	[ "$sent" = "$complete" ] && [ "$bad" = 0 ]
check_err $? "the spine's xina-swagg: contrib $contrib, complete $complete, dropped $bad; rack 0's uplink sent $sent partials"
log_test "rack 0's XDP switch hands up to xina-swagg at the spine, racks 1 and 2 through agents: i32 and f32 bit-exact, the flat job's bits (f32: 1..1.05 bytes per tensor byte on every link), a completed round for every partial of the uplink"

tap_end
