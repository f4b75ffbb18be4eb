#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A rack of network namespaces: one switch namespace with a bridge and one
# veth port per worker namespace.
#
#          $RACK-w0            $RACK-w1                 $RACK-wN-1
#        eth0 10.77.0.1     eth0 10.77.0.2    ...     eth0 10.77.0.N
#            |                  |                         |
#   +--------p0-----------------p1----------- ... --------pN-1----+
#   |  $RACK-sw   br0 10.77.0.254/24 (the switch; ports enslaved)  |
#   +-------------------------------------------------------------+
#
# Non-xina traffic between workers crosses the bridge (that is what the
# peers of the benchmarks use); xina traffic to 10.77.0.254:9277 is taken by
# the XDP program on each port.  Nothing leaves these namespaces.
# rack_routed_up (at the end) builds the other shape: a subnet per port,
# routed by the switch namespace, no bridge.
#
# Use as a command:
#   scripts/rack.sh up RACK N [mtu M]      create (and tear down a stale one)
#   scripts/rack.sh xdp RACK N [PINDIR]    attach xina: XDP and the TC
#                                          fan-out on the switch's ports
#   scripts/rack.sh impair RACK N PERMILLE add loss in both directions
#   scripts/rack.sh down RACK              delete everything of RACK
# or source it and call the rack_* functions.

XINA_ROOT=${XINA_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
XINA_O=${O:-$XINA_ROOT/build}
case "$XINA_O" in /*) ;; *) XINA_O=$XINA_ROOT/$XINA_O ;; esac
XINACTL=${XINACTL:-$XINA_O/xinactl}
RACK_NET=${RACK_NET:-10.77.0}
# The fastest configuration the rack supports (make demo, tests; the
# benchmarks keep theirs in scripts/bench/bench.py): jumbo frames, as
# training clusters run, with XINA_MAX_ELEMS int32 per packet, and the
# ports in generic XDP mode, where veth keeps the workers' GSO and the
# fast path takes whole trains (Documentation/benchmarks.md: xina generic).
RACK_FAST_MTU=9000
RACK_FAST_ELEMS=2048
RACK_FAST_SLOTS=32
RACK_FAST_MODE=generic
RACK_SWITCH_IP=$RACK_NET.254

rack_worker_ip()
{
	echo "$RACK_NET.$(($1 + 1))"
}

# rack_ring_addrs N PORT: the workers' "IP:PORT,..." in rank order, the
# host fallback ring's addresses (libxina's opts.fallback).
rack_ring_addrs()
{
	local i s=""

	for ((i = 0; i < $1; i++)); do
		s+="${s:+,}$(rack_worker_ip "$i"):$2"
	done
	echo "$s"
}

rack_die()
{
	echo "rack: $*" >&2
	return 1
}

# Every namespace whose name starts with "$1-".
rack_namespaces()
{
	ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$1-(sw|w[0-9]+)\$"
}

rack_down()
{
	local rack=$1 ns

	[ -n "$rack" ] || { rack_die "down: no rack name"; return 1; }
	for ns in $(rack_namespaces "$rack"); do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	if [ -d "/run/xina-$rack" ]; then
		umount "/run/xina-$rack" 2>/dev/null
		rm -rf "/run/xina-$rack"
	fi
	return 0
}

rack_ns_setup()
{
	local ns=$1

	ip netns add "$ns" || return 1
	ip -n "$ns" link set lo up
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
	ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
}

# rack_up RACK N [ mtu M ]
rack_up()
{
	local rack=$1 n=$2 mtu=1500 sw i w

	[ "${3:-}" = mtu ] && mtu=$4

	[ -n "$rack" ] && [ -n "$n" ] || { rack_die "usage: up RACK N [ mtu M ]"; return 1; }
	[ "$n" -ge 1 ] && [ "$n" -le 200 ] 2>/dev/null ||
		{ rack_die "workers '$n' out of range 1..200"; return 1; }
	rack_down "$rack"
	sw=$rack-sw
	rack_ns_setup "$sw" || return 1
	ip -n "$sw" link add br0 type bridge || return 1
	ip -n "$sw" link set br0 mtu "$mtu" up
	ip -n "$sw" addr add "$RACK_SWITCH_IP/24" dev br0
	for ((i = 0; i < n; i++)); do
		w=$rack-w$i
		rack_ns_setup "$w" || return 1
		ip link add "p$i" netns "$sw" mtu "$mtu" type veth \
			peer name eth0 netns "$w" mtu "$mtu" || return 1
		ip -n "$sw" link set "p$i" master br0 up
		ip -n "$w" addr add "$(rack_worker_ip "$i")/24" dev eth0
		ip -n "$w" link set eth0 up
	done
	# Wait until every port forwards (the bridge starts them in
	# "forwarding" without STP, but the links come up asynchronously).
	for ((i = 0; i < n; i++)); do
		rack_wait 5 ip netns exec "$rack-w$i" \
			ping -c1 -W1 -q "$RACK_SWITCH_IP" >/dev/null ||
			{ rack_die "worker $i cannot reach the switch"; return 1; }
	done
}

# rack_wait SECONDS CMD...: busy-wait until CMD succeeds.
rack_wait()
{
	local deadline=$((SECONDS + $1))

	shift
	until "$@"; do
		[ "$SECONDS" -ge "$deadline" ] && return 1
		sleep 0.1
	done
}

rack_pin_dir()
{
	echo "/run/xina-$1"
}

# The pin directory must be a bpffs mounted in the root mount namespace:
# one mounted inside "ip netns exec" vanishes when that command ends.
rack_pin_mount()
{
	local pin=$1

	mkdir -p "$pin" || return 1
	[ "$(stat -f -c %T "$pin")" = bpf_fs ] && return 0
	mount -t bpf bpf "$pin"
}

# rack_xdp RACK N [PIN [MODE]]: attach xina, the fast path on every switch
# port (XDP for contributions, TC for the results it sends back), in XDP
# MODE (native, the default, or generic).  The worker ends need nothing:
# results reach them as ordinary frames.
rack_xdp()
{
	local rack=$1 n=$2 pin=${3:-$(rack_pin_dir "$1")} mode=${4:-native} i

	[ -x "$XINACTL" ] || { rack_die "no $XINACTL: run make"; return 1; }
	rack_pin_mount "$pin" || return 1
	for ((i = 0; i < n; i++)); do
		ip netns exec "$rack-sw" "$XINACTL" -P "$pin" dev attach "p$i" \
			mode "$mode" || return 1
	done
}

# rack_impair RACK N PERMILLE: drop PERMILLE/1000 of the xina packets in each
# direction at every worker.  Uses netem (loss, duplication, reordering)
# where the kernel has it, else nftables' random number generator (loss
# only): the host kernel of the test machines is built without netem.
rack_impair()
{
	local rack=$1 n=$2 pm=$3 i w pct

	pct=$(awk -v p="$pm" 'BEGIN { printf "%.2f", p / 10 }')
	for ((i = 0; i < n; i++)); do
		w=$rack-w$i
		if rack_have_netem "$w"; then
			rack_netem "$w" "$pct" || return 1
		else
			rack_nft_loss "$w" "$pm" || return 1
		fi
	done
}

rack_have_netem()
{
	ip netns exec "$1" tc qdisc add dev lo root netem delay 0 2>/dev/null || return 1
	ip netns exec "$1" tc qdisc del dev lo root 2>/dev/null
	return 0
}

# netem on the worker's egress (contributions) and, through an ifb, on its
# ingress (results): loss, duplication and reordering both ways.
rack_netem()
{
	local w=$1 pct=$2

	ip netns exec "$w" tc qdisc add dev eth0 root netem loss "$pct%" \
		duplicate "$pct%" delay 200us reorder 90% || return 1
	ip -n "$w" link add ifb0 type ifb || return 1
	ip -n "$w" link set ifb0 up
	ip netns exec "$w" tc qdisc add dev ifb0 root netem loss "$pct%" \
		duplicate "$pct%" delay 200us reorder 90% || return 1
	ip netns exec "$w" tc qdisc add dev eth0 handle ffff: ingress || return 1
	ip netns exec "$w" tc filter add dev eth0 parent ffff: protocol ip \
		u32 match u32 0 0 action mirred egress redirect dev ifb0
}

rack_nft_loss()
{
	local w=$1 pm=$2 port=${XINA_PORT:-9277}

	# Contributions are dropped at the device (netdev egress), where the
	# sender does not see it (an output-hook drop fails sendmsg with
	# EPERM); results in the input hook.  Both hooks see GSO/GRO batches
	# whole: per-packet loss needs the workers' --no-gso --no-gro.  The
	# "seen" counters count every xina packet the drop rule judged.
	ip netns exec "$w" nft -f - <<-EOF
	table netdev xina_impair {
		counter out_seen { }
		counter out_drop { }
		chain out {
			type filter hook egress device eth0 priority 0; policy accept;
			udp dport $port counter name out_seen
			udp dport $port numgen random mod 1000 < $pm counter name out_drop drop
		}
	}
	table inet xina_impair {
		counter in_seen { }
		counter in_drop { }
		chain in {
			type filter hook input priority 0; policy accept;
			udp sport $port counter name in_seen
			udp sport $port numgen random mod 1000 < $pm counter name in_drop drop
		}
	}
	EOF
}

# The netem qdisc of device $2 in namespace $1 as "SEEN DROPPED": what it
# was given (sent + dropped; a packet it duplicated counts twice) and what
# it dropped.  Nothing when the device has no netem.
rack_netem_counts()
{
	ip netns exec "$1" tc -s -j qdisc show dev "$2" 2>/dev/null |
		jq -r '.[] | select(.kind == "netem") |
		       "\(.packets + .drops) \(.drops)"'
}

# rack_impair_counts RACK I: what the impairment at worker I saw and
# dropped, as "OUT_SEEN OUT_DROPPED IN_SEEN IN_DROPPED": contributions
# leaving the worker, results arriving.  nftables counts exactly the xina
# packets its drop rules judged.  netem counts every packet of its qdisc
# (eth0 out, ifb0 in), its own duplicates and a few non-xina ones (ARP on
# eth0) included: read it before other traffic (a probe) crosses it.
rack_impair_counts()
{
	local w=$1-w$2 out in

	out=$(rack_netem_counts "$w" eth0)
	if [ -n "$out" ]; then
		in=$(rack_netem_counts "$w" ifb0)
		echo "$out ${in:-0 0}"
		return 0
	fi
	ip netns exec "$w" nft -j list counters 2>/dev/null |
		jq -r '[.nftables[].counter? // empty |
			select(.table == "xina_impair") | {(.name): .packets}] |
		       add // {} |
		       "\(.out_seen // 0) \(.out_drop // 0) \(.in_seen // 0) \(.in_drop // 0)"'
}

# Packets the impairment dropped at worker $2, both directions.
rack_impair_drops()
{
	local c

	read -ra c <<<"$(rack_impair_counts "$1" "$2")"
	echo $((${c[1]:-0} + ${c[3]:-0}))
}

# rack_job_add RACK N JOB KEYFILE SLOTS ELEMS [PINDIR]: the job of the
# rack's workers, rank i at 10.77.0.(i+1) port RACK_WORKER_PORT, with the
# secret of KEYFILE (created if it does not exist; the workers need it).
RACK_WORKER_PORT=${RACK_WORKER_PORT:-7000}
rack_job_add()
{
	rack_job_add_at rack_worker_ip "$@"
}

# rack_job_add_at IPFN RACK N JOB KEYFILE SLOTS ELEMS [PIN]: rack_job_add
# with member i at "IPFN i" (the bridged or the routed rack's address).
rack_job_add_at()
{
	local ipfn=$1 rack=$2 n=$3 job=$4 keyfile=$5 slots=$6 elems=$7
	local pin=${8:-$(rack_pin_dir "$2")} members="" i

	for ((i = 0; i < n; i++)); do
		members="$members member $i $("$ipfn" "$i"):$RACK_WORKER_PORT"
	done
	# shellcheck disable=SC2086
	ip netns exec "$rack-sw" "$XINACTL" -P "$pin" job add "$job" \
		workers "$n" slots "$slots" elems "$elems" keyfile "$keyfile" \
		$members
}

# rack_allreduce RACK N OUTDIR ARGS...: one xina-allreduce per worker, all
# at once, each pinned to CPU (rank mod CPUs) so that contributions to one
# slot reach the switch on different CPUs.  Worker i writes OUTDIR/wI.json
# (its --json line) and OUTDIR/wI.err.  The workers of one call are one
# run of the job (--run: $XINA_RUN_ID if set, else a number drawn for the
# call), as a launcher would give them.  Returns how many workers failed.
rack_allreduce()
{
	rack_allreduce_at rack_worker_ns rack_worker_ip rack_switch_ip "$@"
}

# rack_worker_ns RACK I: the namespace of worker I.
rack_worker_ns()
{
	echo "$1-w$2"
}

# The switch address every worker of the bridged rack sends to.
rack_switch_ip()
{
	echo "$RACK_SWITCH_IP"
}

# rack_allreduce_at NSFN IPFN SWFN RACK N OUTDIR ARGS...: rack_allreduce
# with worker i (rank i of N) in namespace "NSFN RACK i", at "IPFN i",
# sending to "SWFN i".  If RACK_ARGS_FN names a function, worker i also
# gets the words "RACK_ARGS_FN i" prints (e.g. its rack's key file).  If
# RACK_GATE names a file, every worker, started and in its namespace,
# waits for that file to exist before it runs xina-allreduce: the caller
# starts the run in the background and releases it at a moment of its
# choosing, within 10 ms, with no process to start then.
rack_allreduce_at()
{
	local nsfn=$1 ipfn=$2 swfn=$3 rack=$4 n=$5 out=$6 cpus i pid fails=0
	local run=${XINA_RUN_ID:-$(((RANDOM << 15 | RANDOM) + 1))}
	local -a pids more gate=()

	shift 6
	cpus=$(nproc)
	mkdir -p "$out"
	# shellcheck disable=SC2016
	[ -n "${RACK_GATE:-}" ] &&
		gate=(bash -c 'while [ ! -e "$0" ]; do sleep 0.01; done; exec "$@"' "$RACK_GATE")
	for ((i = 0; i < n; i++)); do
		more=()
		[ -n "${RACK_ARGS_FN:-}" ] && read -ra more <<<"$("$RACK_ARGS_FN" "$i")"
		ip netns exec "$("$nsfn" "$rack" "$i")" taskset -c $((i % cpus)) \
			"${gate[@]}" \
			"$XINA_O/xina-allreduce" --switch "$("$swfn" "$i")" \
			--bind "$("$ipfn" "$i"):$RACK_WORKER_PORT" \
			--rank "$i" --workers "$n" --run "$run" --json \
			"$@" "${more[@]}" \
			>"$out/w$i.json" 2>"$out/w$i.err" &
		pids[i]=$!
	done
	for ((i = 0; i < n; i++)); do
		wait "${pids[i]}" || fails=$((fails + 1))
	done
	return $fails
}

rack_main()
{
	local cmd=$1

	shift
	case "$cmd" in
	up) rack_up "$@" ;;
	xdp) rack_xdp "$@" ;;
	impair) rack_impair "$@" ;;
	down) rack_down "$@" ;;
	*)
		echo "usage: rack.sh { up RACK N [ mtu M ] | xdp RACK N [ PINDIR ] |" \
		     "impair RACK N PERMILLE | down RACK }" >&2
		return 2
		;;
	esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	rack_main "$@"
fi

# rack_shape RACK N RATE: limit every worker's link to RATE (tc units:
# 800mbit, 1gbit) in both directions, the same for every system: a TBF on
# the worker's eth0 (what it sends) and, through an IFB that eth0's ingress
# redirects to, the same TBF on what it receives (the host kernel has TBF,
# IFB, act_mirred and u32, but no netem and no matchall).  TBF counts the
# frame from the Ethernet header to the end of the payload: no preamble,
# inter-frame gap or FCS.
RACK_SHAPE_IFB=ifb-shape
rack_shape()
{
	local rack=$1 n=$2 rate=$3 i w

	[ -n "$rack" ] && [ -n "$n" ] && [ -n "$rate" ] ||
		{ rack_die "usage: shape RACK N RATE"; return 1; }
	for ((i = 0; i < n; i++)); do
		w=$rack-w$i
		ip netns exec "$w" tc qdisc replace dev eth0 root tbf rate "$rate" \
			burst 256k latency 50ms || return 1
		ip -n "$w" link add "$RACK_SHAPE_IFB" type ifb || return 1
		ip -n "$w" link set "$RACK_SHAPE_IFB" up
		ip netns exec "$w" tc qdisc add dev "$RACK_SHAPE_IFB" root tbf \
			rate "$rate" burst 256k latency 50ms || return 1
		ip netns exec "$w" tc qdisc add dev eth0 handle ffff: ingress ||
			return 1
		ip netns exec "$w" tc filter add dev eth0 parent ffff: protocol ip \
			u32 match u32 0 0 action mirred egress redirect \
			dev "$RACK_SHAPE_IFB" || return 1
	done
}

# rack_unshape RACK N: the links of rack_shape back to full speed.
rack_unshape()
{
	local rack=$1 n=$2 i w

	for ((i = 0; i < n; i++)); do
		w=$rack-w$i
		ip netns exec "$w" tc qdisc del dev eth0 ingress 2>/dev/null
		ip netns exec "$w" tc qdisc del dev eth0 root 2>/dev/null
		ip -n "$w" link del "$RACK_SHAPE_IFB" 2>/dev/null
	done
	return 0
}

# ---- the routed rack ---------------------------------------------------------
#
# The rack as a router sees it: no bridge, one subnet per switch port, the
# switch namespace forwards IPv4 between them.
#
#          $RACK-w0               $RACK-w1                 $RACK-wN-1
#      eth0 10.77.0.1/24      eth0 10.77.1.1/24   ...   eth0 10.77.N-1.1/24
#      via 10.77.0.254        via 10.77.1.254           via 10.77.N-1.254
#            |                      |                         |
#   +--------p0 10.77.0.254/24------p1 10.77.1.254/24-- ... --pN-1----------+
#   |  $RACK-sw   ip_forward=1, no bridge                                  |
#   +----------------------------------------------------------------------+
#
# Worker k sends its contributions to its own port's address; the switch
# must answer from that port, with that port's MAC and address.  Traffic
# between workers is routed through the switch namespace.  The namespaces
# are named as those of rack_up, so rack_xdp, rack_impair, rack_shape and
# rack_down work on this rack too.
RACK_ROUTED_NET=${RACK_ROUTED_NET:-10.77}

rack_routed_worker_ip()
{
	echo "$RACK_ROUTED_NET.$1.1"
}

# The address of the switch port worker $1 is behind.
rack_routed_switch_ip()
{
	echo "$RACK_ROUTED_NET.$1.254"
}

# rack_routed_up RACK N [ mtu M ]
rack_routed_up()
{
	local rack=$1 n=$2 mtu=1500 sw i w

	[ "${3:-}" = mtu ] && mtu=$4

	[ -n "$rack" ] && [ -n "$n" ] ||
		{ rack_die "usage: rack_routed_up RACK N [ mtu M ]"; return 1; }
	[ "$n" -ge 1 ] && [ "$n" -le 200 ] 2>/dev/null ||
		{ rack_die "workers '$n' out of range 1..200"; return 1; }
	rack_down "$rack"
	sw=$rack-sw
	rack_ns_setup "$sw" || return 1
	ip netns exec "$sw" sysctl -qw net.ipv4.ip_forward=1 || return 1
	for ((i = 0; i < n; i++)); do
		w=$rack-w$i
		rack_ns_setup "$w" || return 1
		ip link add "p$i" netns "$sw" mtu "$mtu" type veth \
			peer name eth0 netns "$w" mtu "$mtu" || return 1
		ip -n "$sw" addr add "$(rack_routed_switch_ip "$i")/24" dev "p$i" ||
			return 1
		ip -n "$sw" link set "p$i" up
		ip -n "$w" addr add "$(rack_routed_worker_ip "$i")/24" dev eth0 ||
			return 1
		ip -n "$w" link set eth0 up
		ip -n "$w" route add default via "$(rack_routed_switch_ip "$i")" ||
			return 1
	done
	# Every worker reaches its own port, and through the switch the
	# next worker's subnet.
	for ((i = 0; i < n; i++)); do
		rack_wait 5 ip netns exec "$rack-w$i" \
			ping -c1 -W1 -q "$(rack_routed_switch_ip "$i")" >/dev/null ||
			{ rack_die "worker $i cannot reach its switch port"; return 1; }
	done
	for ((i = 0; i < n; i++)); do
		rack_wait 5 ip netns exec "$rack-w$i" ping -c1 -W1 -q \
			"$(rack_routed_worker_ip $(((i + 1) % n)))" >/dev/null ||
			{ rack_die "worker $i cannot reach worker $(((i + 1) % n)) through the switch"; return 1; }
	done
}

# rack_routed_job_add RACK N JOB KEYFILE SLOTS ELEMS [PINDIR]: the job of the
# routed rack's workers, rank i at 10.77.i.1 port RACK_WORKER_PORT, with the
# secret of KEYFILE (created if it does not exist; the workers need it).
rack_routed_job_add()
{
	rack_job_add_at rack_routed_worker_ip "$@"
}

# rack_routed_allreduce RACK N OUTDIR ARGS...: rack_allreduce on the routed
# rack: worker i sends to the address of its own switch port.
rack_routed_allreduce()
{
	rack_allreduce_at rack_worker_ns rack_routed_worker_ip \
		rack_routed_switch_ip "$@"
}
