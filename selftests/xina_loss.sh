#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Allreduce through the XDP switch with packets lost (and, where the kernel
# has netem, duplicated and reordered) in both directions at every worker:
# results stay bit-exact, the workers retransmit and the switch answers
# retransmissions of completed slots from the kept shadow copy.
#
# What shows that the loss happened:
# - the impairment's own counters: of the xina packets it saw in each
#   direction, it dropped PERMILLE/1000 within a factor of 3;
# - the switch's retrans_answered: a result lost on its way to a worker
#   is delivered again only as the answer to a retransmission of that
#   worker (the switch sends a completed slot's result once per member),
#   so there are at least as many answers as results the impairment
#   dropped;
# - with netem, a probe of numbered datagrams through the same qdiscs
#   (netem counts its drops, but not its duplicates and reorderings).

. "$(dirname "$0")/lib.sh"
require_root
require_cmd jq nft "$O/xinactl" "$O/xina-allreduce"
. "$XINA_ROOT/scripts/rack.sh"

rack_test_init xl
N=4
PERMILLE=${XINA_LOSS_PERMILLE:-10}
BYTES=${XINA_LOSS_BYTES:-$((8 << 20))}
PROBE_COUNT=${XINA_PROBE_COUNT:-4000}
PROBE_PORT=9400
# The guest has the probe on its PATH, the host in $O/selftests.
PROBE=$O/selftests/xina_probe
[ -x "$PROBE" ] || PROBE=$(command -v xina_probe)

rack_up "$RACK" "$N" >/dev/null && rack_xdp "$RACK" "$N" "$PIN"
setup=$?
netem=0
[ $setup -eq 0 ] && rack_have_netem "$RACK-w0" && netem=1
# The tail probe; per dtype: the allreduce, the answers; then the rate;
# the netem probe.
tap_begin $((1 + 2 * 2 + 1 + netem))
if [ $setup -ne 0 ]; then
	check_err 1 "rack could not be set up"
	log_test "rack"
	tap_end
fi

# The drop of one packet, on worker namespace $1's egress: the first
# transmission (flags 0) of slot 3's round 0 at offset 768, a contribution
# (type 1) to the switch's port: the last block of the job's first call of
# 4 blocks of 256 elements, and no other packet.  nftables where the
# kernel has it (the host), else tc's u32 and gact (the guests, which have
# no nf_tables); "tail_drop_add" prints which.
tail_drop_add()
{
	local w=$1 port=${XINA_PORT:-9277}

	if ip netns exec "$w" nft -f - 2>/dev/null <<-EOF
	table netdev xina_tail {
		counter tail_drop { }
		chain out {
			type filter hook egress device eth0 priority 0; policy accept;
			udp dport $port @th,72,8 1 @th,96,8 0 @th,192,32 3 @th,224,32 0 @th,352,32 768 counter name tail_drop drop
		}
	}
	EOF
	then
		echo nft
		return 0
	fi
	# IPv4 without options: UDP at 20, the xina header at 28.
	ip netns exec "$w" tc qdisc add dev eth0 clsact &&
		ip netns exec "$w" tc filter add dev eth0 egress protocol ip u32 \
			match u8 17 0xff at 9 match u16 "$port" 0xffff at 22 \
			match u8 1 0xff at 29 match u8 0 0xff at 32 \
			match u32 3 0xffffffff at 44 match u32 0 0xffffffff at 48 \
			match u32 768 0xffffffff at 64 action drop &&
		echo tc
}

# tail_drop_count NS HOW: packets the drop of tail_drop_add dropped.
tail_drop_count()
{
	if [ "$2" = nft ]; then
		ip netns exec "$1" nft -j list counter netdev xina_tail tail_drop |
			jq '[.nftables[] | select(.counter) | .counter.packets] | add // 0'
	else
		ip netns exec "$1" tc -s -j filter show dev eth0 egress |
			jq '[.. | objects | select(.kind? == "gact") | .stats.packets] | add // 0'
	fi
}

tail_drop_del()
{
	if [ "$2" = nft ]; then
		ip netns exec "$1" nft delete table netdev xina_tail
	else
		ip netns exec "$1" tc qdisc del dev eth0 clsact
	fi
}

# tail_probe: the last block of a call lost once, on the otherwise
# lossless rack.  No later result can fast-retransmit it; the retransmission
# timer's floor is set far above the call's time (--rto-us), so the
# resend that completes the call must be the tail probe's (libxina.c,
# xina_probe()), after two round trips without a result.  One datagram
# per skb (--no-gso), so that the drop sees each block's own header.
tail_probe()
{
	local dir=$TMP/tail job=1 w0=$RACK-w0 how drops i st

	how=$(tail_drop_add "$w0")
	check_err $? "the drop of the last block could not be set up (nft, or tc u32 with gact)"
	rack_job_add "$RACK" "$N" "$job" "$KEYFILE" 64 256 "$PIN"
	check_err $? "job add failed"
	rack_allreduce "$RACK" "$N" "$dir" --job "$job" --key-file "$KEYFILE" --slots 64 \
		--elems 256 --dtype i32 --bytes 4096 --iters 3 --no-gso --no-gro \
		--rto-us 5000000 --timeout-ms 20000
	check_err $? "workers failed: $(cat "$dir"/w*.err | sort -u | head -n3 | tr '\n' ' ')"
	drops=$(tail_drop_count "$w0" "$how")
	[ "$drops" = 1 ]
	check_err $? "the drop ($how) took ${drops:-no} packets, want the one last block"
	for ((i = 0; i < N; i++)); do
		st=$(jq -c '{verified, timeouts, probes, retrans}' "$dir/w$i.json" 2>&1)
		jq -e '.verified == true and .timeouts == 0' "$dir/w$i.json" >/dev/null
		check_err $? "worker $i: $st (want verified, no timer expiry)"
		log_info "worker $i: $st"
	done
	jq -e '.probes >= 1' "$dir/w0.json" >/dev/null
	check_err $? "worker 0 lost its last block and sent no tail probe: $(jq -c '{probes, retrans}' "$dir/w0.json" 2>&1)"
	tail_drop_del "$w0" "$how"
	xctl job del "$job"
	log_test "a call's lost last block ($how drop) resent by the tail probe, not the timer"
}
tail_probe

if ! rack_impair "$RACK" "$N" "$PERMILLE"; then
	check_err 1 "impairment could not be set up"
	log_test "impairment"
	tap_end
fi
if [ $netem -eq 1 ]; then
	log_info "impairment: netem loss/duplicate/reorder $PERMILLE permille each way"
else
	log_info "impairment: nftables random drop $PERMILLE permille each way (no netem in this kernel)"
fi

# The impairment's counters summed over the workers:
# "OUT_SEEN OUT_DROPPED IN_SEEN IN_DROPPED".
impair_totals()
{
	local i c os=0 od=0 is=0 id=0

	for ((i = 0; i < N; i++)); do
		read -ra c <<<"$(rack_impair_counts "$RACK" "$i")"
		os=$((os + ${c[0]:-0}))
		od=$((od + ${c[1]:-0}))
		is=$((is + ${c[2]:-0}))
		id=$((id + ${c[3]:-0}))
	done
	echo "$os $od $is $id"
}

# rate_ok WHAT DROPPED SEEN: DROPPED/SEEN within a factor of 3 of
# PERMILLE/1000, on at least 10 expected drops.  Drops are binomial:
# at the expected count e the standard deviation is about sqrt(e), and
# e/3 lies (2/3) sqrt(e) below it: at e = 10 2.1 sigma (Poisson
# P(X <= 3) = 0.01), at the guest's e of about 50 4.7 sigma (P < 1e-7),
# at the host's e of about 1500 26 sigma; 3e is further above still.  A
# factor of 3 also covers netem counting its own duplicates as seen (1 + p).
rate_ok()
{
	local what=$1 dropped=$2 seen=$3

	if [ $((seen * PERMILLE)) -lt 10000 ]; then
		check_err 1 "$what: $seen packets at $PERMILLE permille expect fewer than 10 drops: too few to check the rate"
		return
	fi
	[ $((3 * dropped * 1000)) -ge $((seen * PERMILLE)) ] &&
		[ $((dropped * 1000)) -le $((3 * seen * PERMILLE)) ]
	check_err $? "$what: $dropped of $seen dropped, want $PERMILLE permille within 3x"
}

permille()
{
	awk -v d="$1" -v s="$2" 'BEGIN { printf "%.2f", s ? 1000 * d / s : 0 }'
}

# --no-gso --no-gro: one datagram per skb, so that the impairment drops
# packets, not whole GSO/GRO batches, and "1%" means 1% of the packets.
job=1
read -r os0 od0 is0 id0 <<<"$(impair_totals)"
read -r os od is id <<<"$os0 $od0 $is0 $id0"
for dtype in i32 f32; do
	job=$((job + 1))
	dir=$TMP/$dtype
	rack_job_add "$RACK" "$N" "$job" "$KEYFILE" 64 256 "$PIN"
	check_err $? "job add failed"
	rack_allreduce "$RACK" "$N" "$dir" --job "$job" --key-file "$KEYFILE" --slots 64 \
		--elems 256 --dtype "$dtype" --bytes "$BYTES" --iters 2 --no-gso --no-gro \
		--timeout-ms 10000
	check_err $? "workers failed: $(cat "$dir"/w*.err | sort -u | head -n3 | tr '\n' ' ')"
	for ((i = 0; i < N; i++)); do
		[ "$(jq -r .verified "$dir/w$i.json" 2>/dev/null)" = true ]
		check_err $? "worker $i result not verified"
	done
	sums=$(cat "$dir"/w*.json | jq -r .checksum | sort -u | wc -l)
	[ "$sums" -eq 1 ]
	check_err $? "workers disagree on the result"
	retrans=$(cat "$dir"/w*.json | jq -s 'map(.retrans // 0) | add')
	[ "${retrans:-0}" -gt 0 ]
	check_err $? "no retransmission counted under $PERMILLE permille loss"
	log_test "allreduce $dtype under loss: bit-exact, retransmissions counted"

	answered=$(xctl -j stats job "$job" | jq -r '.jobs[0].retrans_answered // 0')
	read -r os1 od1 is1 id1 <<<"$(impair_totals)"
	out_drop=$((od1 - od)) in_seen=$((is1 - is)) in_drop=$((id1 - id))
	log_info "$dtype: workers retransmitted $retrans, switch answered $answered from kept results;" \
		 "impairment dropped $out_drop contributions of $((os1 - os)), $in_drop results of $in_seen"
	[ "$in_drop" -gt 0 ]
	check_err $? "no result was lost on the way to the workers: the kept copy was never needed"
	[ "$answered" -gt 0 ]
	check_err $? "switch answered no retransmission from a kept result"
	if [ $netem -eq 1 ]; then
		# netem drops duplicates it made too (a fraction of about p of
		# its drops): such a drop loses no result.  3 + 3p of the drops
		# is 4 at the guest's 20 to 40 drops per job, where 5 or more
		# duplicate drops have a probability below 1e-4.
		slack=$((3 + (3 * in_drop * PERMILLE + 999) / 1000))
	else
		slack=0
	fi
	[ "$answered" -ge $((in_drop - slack)) ]
	check_err $? "switch answered $answered retransmissions, but $in_drop results were lost (allowance $slack)"
	# Only a retransmission finds its bit set in a completed slot; netem's
	# duplicates of contributions do as well, so this bound is nft's.
	if [ $netem -eq 0 ]; then
		[ "$answered" -le "$retrans" ]
		check_err $? "switch answered $answered retransmissions, more than the $retrans sent"
	fi
	xctl job del "$job"
	log_test "allreduce $dtype under loss: the switch answered every lost result from the kept copy"
	read -r os od is id <<<"$os1 $od1 $is1 $id1"
done

os=$((os - os0)) od=$((od - od0)) is=$((is - is0)) id=$((id - id0))
log_info "impairment: contributions $od of $os dropped ($(permille "$od" "$os") permille)," \
	 "results $id of $is ($(permille "$id" "$is") permille), configured $PERMILLE"
rate_ok "contributions" "$od" "$os"
rate_ok "results" "$id" "$is"
log_test "impairment dropped $PERMILLE permille each way (within 3x)"

[ $netem -eq 1 ] || tap_end

# probe NAME FROM_NS TO_NS TO_IP ID QDISC_DEV: numbered datagrams from
# FROM_NS to TO_IP:PROBE_PORT in TO_NS; the receiver's JSON in
# $TMP/probe-NAME.json, and what netem (on QDISC_DEV of worker 0) and the
# veth pair dropped meanwhile in $TMP/probe-NAME.drops.
probe_bound()
{
	ip netns exec "$1" cat /proc/net/udp |
		grep -qi ":$(printf '%04X' "$PROBE_PORT") 00000000:0000"
}

veth_drops()
{
	local a b

	a=$(ip -n "$RACK-w0" -s -j link show dev eth0 |
	    jq '.[0].stats64 | .rx.dropped + .tx.dropped')
	b=$(ip -n "$RACK-sw" -s -j link show dev p0 |
	    jq '.[0].stats64 | .rx.dropped + .tx.dropped')
	echo $((${a:-0} + ${b:-0}))
}

probe()
{
	local name=$1 from=$2 to=$3 ip=$4 id=$5 dev=$6 pid nd0 nd1 vd0 c

	read -ra c <<<"$(rack_netem_counts "$RACK-w0" "$dev")"
	nd0=${c[1]:-0}
	vd0=$(veth_drops)
	ip netns exec "$to" "$PROBE" --recv "$ip:$PROBE_PORT" --id "$id" \
		>"$TMP/probe-$name.json" 2>"$TMP/probe-$name.err" &
	pid=$!
	busywait 10 probe_bound "$to" || { kill "$pid"; return 1; }
	# Bursts of 4 a millisecond apart: a delayed datagram is overtaken
	# within its burst, and a stall of the receiving side of up to 64 ms
	# (a guest under TCG on a loaded host) fills neither the veth ring
	# (256) nor netem's queue (1000), which would add losses of their own.
	# Should it happen, the log shows the probe lost more than netem
	# dropped.
	ip netns exec "$from" "$PROBE" --send "$ip:$PROBE_PORT" --id "$id" \
		--count "$PROBE_COUNT" --burst 4 --gap-us 1000 >/dev/null ||
		{ kill "$pid"; return 1; }
	wait "$pid" || return 1
	read -ra c <<<"$(rack_netem_counts "$RACK-w0" "$dev")"
	nd1=${c[1]:-0}
	echo "$((nd1 - nd0)) $(($(veth_drops) - vd0))" >"$TMP/probe-$name.drops"
}

# probe_ok NAME: lost within 3x of the rate (as rate_ok), some duplicated,
# some reordered.
probe_ok()
{
	local name=$1 f=$TMP/probe-$1.json lost dup reo

	lost=$(jq -r .lost "$f" 2>/dev/null)
	dup=$(jq -r .duplicated "$f" 2>/dev/null)
	reo=$(jq -r .reordered "$f" 2>/dev/null)
	{ read -r nd vd <"$TMP/probe-$name.drops"; } 2>/dev/null
	log_info "probe $name: $(cat "$f" 2>/dev/null); netem dropped $nd, veth $vd"
	if [ -z "$lost" ] || [ -z "$dup" ] || [ -z "$reo" ]; then
		check_err 1 "probe $name gave no result: $(cat "$TMP/probe-$name.err")"
		return
	fi
	rate_ok "probe $name" "$lost" "$PROBE_COUNT"
	[ "$dup" -gt 0 ]
	check_err $? "probe $name: no datagram duplicated"
	[ "$reo" -gt 0 ]
	check_err $? "probe $name: no datagram reordered"
}

if [ -z "$PROBE" ] || [ ! -x "$PROBE" ]; then
	check_err 1 "no xina_probe (make selftests, or vm-progs in the guest)"
else
	probe out "$RACK-w0" "$RACK-sw" "$RACK_SWITCH_IP" 1 eth0
	check_err $? "probe worker 0 -> switch failed: $(cat "$TMP/probe-out.err")"
	probe_ok out
	probe in "$RACK-sw" "$RACK-w0" "$(rack_worker_ip 0)" 2 ifb0
	check_err $? "probe switch -> worker 0 failed: $(cat "$TMP/probe-in.err")"
	probe_ok in
fi
log_test "netem loses, duplicates and reorders datagrams each way (probe of $PROBE_COUNT)"
tap_end
