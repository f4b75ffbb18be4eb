#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Racks of racks: R racks of N workers (each a rack of scripts/rack.sh, a
# subnet of its own), their switch namespaces joined by one inter-rack
# link each to a spine namespace that routes between the racks.
#
#                          $NAME-spine
#            10.79.0.1 r0    10.79.1.1 r1    10.79.2.1 r2      (inter-rack
#                  |               |               |            links)
#            10.79.0.2 up0   10.79.1.2 up0   10.79.2.2 up0
#            ${NAME}r0-sw    ${NAME}r1-sw    ${NAME}r2-sw      (routers)
#          br0 10.78.0.254   br0 10.78.1.254  br0 10.78.2.254
#           /   |   \         /   |   \         /   |   \
#          w0   w1   w2      w0   w1   w2      w0   w1   w2
#       10.78.0.1..3      10.78.1.1..3      10.78.2.1..3
#
# A rack's switch namespace forwards between its bridge and its uplink;
# each worker's default route is its rack's switch.  Whether a rack runs
# xina (XDP on its ports and uplink) is the caller's choice: racks_xdp
# attaches it to one rack, and a rack left without it only forwards.
# Global rank of worker i of rack r: r x N + i.  The inter-rack link of
# rack r is the veth pair up0 (in the rack's switch) and rR (in the spine):
# its counters are the inter-rack bytes (racks_uplink_bytes), frame by
# frame (no GSO on these links: every frame counts its headers).  Nothing
# leaves these namespaces.
#
# Two levels (issue 12), with the upper job on an XDP switch: either at
# the spine (racks_spine_xdp attaches xina to the spine's ends of the
# inter-rack links, the upper switch at racks_spine_ip R for rack R), or on
# a rack's switch; or with the upper job at the spine in user space
# (racks_spine_swagg: xina-swagg in the spine namespace, an agent in every
# rack as its members).  A rack with an XDP switch hands its partial up itself
# ("xinactl job add ... up": its rack job's uplink leaves by up0, from
# racks_uplink_ip R); racks_agent runs xina-swagg --up in the switch
# namespace of a rack without one, at the rack's switch address: the
# rack's workers send to it, and it is one member of the upper job,
# standing for them (incremental deployment).  With the upper job at the
# spine every inter-rack link carries one partial up and one result down
# per round: ~1 byte per tensor byte each way.  racks_allreduce runs the workers of all racks with global
# ranks, each sending to the switch "SWFN G" names (racks_flat_switch: all
# to rack 0; racks_hier_switch: each to its own rack's).  racks_loss drops
# xina packets at random where the racks meet, in the spine.
#
# With "wire", each inter-rack link is two veth pairs and a bridge in a
# namespace of its own, $NAME-wire, between up0 and rR: a place where
# racks_loss can drop whatever crosses a link, the frames an XDP switch
# redirects to up0 and those xina_fanout clones out of the spine included
# (neither passes the netfilter hooks of a switch's namespace).  The bridge
# end facing the rack has GRO on, which gives its veth the NAPI context an
# XDP redirect into up0 needs (no XDP program there).
#
# Use as a command:
#   scripts/racks.sh up NAME R N [mtu M] [wire]   create (tearing down a stale one)
#   scripts/racks.sh down NAME R           delete everything of NAME
# or source it and call the racks_* functions.

RACKS_SH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$RACKS_SH_DIR/rack.sh"

RACKS_NET=${RACKS_NET:-10.78}		# rack r: $RACKS_NET.r.0/24
RACKS_LINK_NET=${RACKS_LINK_NET:-10.79}	# its uplink: $RACKS_LINK_NET.r.0/30
RACKS_MAX=16
RACKS_N=${RACKS_N:-3}			# workers per rack (racks_up sets it)

racks_name()		# racks_name NAME R: the rack.sh name of rack R
{
	echo "${1}r$2"
}

racks_worker_ip()	# racks_worker_ip R I
{
	echo "$RACKS_NET.$1.$(($2 + 1))"
}

racks_switch_ip()	# racks_switch_ip R: the switch (bridge) of rack R
{
	echo "$RACKS_NET.$1.254"
}

racks_worker_ns()	# racks_worker_ns NAME R I
{
	echo "$(racks_name "$1" "$2")-w$3"
}

racks_switch_ns()	# racks_switch_ns NAME R
{
	echo "$(racks_name "$1" "$2")-sw"
}

# racks_up NAME R N [ mtu M ] [ wire ]
racks_up()
{
	local name=$1 nr=$2 n=$3 mtu=1500 wire="" r i sw sp rack wn

	shift 3
	while [ $# -gt 0 ]; do
		case "$1" in
		mtu) mtu=$2; shift 2 ;;
		wire) wire=1; shift ;;
		*) rack_die "racks_up: unknown argument '$1'"; return 1 ;;
		esac
	done
	[ -n "$name" ] && [ -n "$nr" ] && [ -n "$n" ] ||
		{ rack_die "usage: racks_up NAME R N [ mtu M ]"; return 1; }
	[ "$nr" -ge 2 ] && [ "$nr" -le $RACKS_MAX ] 2>/dev/null ||
		{ rack_die "racks '$nr' out of range 2..$RACKS_MAX"; return 1; }
	racks_down "$name" "$nr"
	RACKS_N=$n
	sp=$name-spine
	wn=$name-wire
	rack_ns_setup "$sp" || return 1
	if [ -n "$wire" ]; then
		rack_ns_setup "$wn" || return 1
	fi
	ip netns exec "$sp" sysctl -qw net.ipv4.ip_forward=1 || return 1
	for ((r = 0; r < nr; r++)); do
		rack=$(racks_name "$name" "$r")
		sw=$rack-sw
		RACK_NET=$RACKS_NET.$r RACK_SWITCH_IP=$(racks_switch_ip "$r") \
			rack_up "$rack" "$n" mtu "$mtu" >/dev/null || return 1
		ip netns exec "$sw" sysctl -qw net.ipv4.ip_forward=1 || return 1
		if [ -n "$wire" ]; then
			ip link add up0 netns "$sw" mtu "$mtu" type veth \
				peer name "a$r" netns "$wn" mtu "$mtu" &&
			ip link add "b$r" netns "$wn" mtu "$mtu" type veth \
				peer name "r$r" netns "$sp" mtu "$mtu" &&
			ip -n "$wn" link add "br$r" mtu "$mtu" type bridge &&
			ip -n "$wn" link set "a$r" master "br$r" up &&
			ip -n "$wn" link set "b$r" master "br$r" up &&
			ip -n "$wn" link set "br$r" up &&
			ip netns exec "$wn" ethtool -K "a$r" gro on >/dev/null ||
				return 1
		else
			ip link add up0 netns "$sw" mtu "$mtu" type veth \
				peer name "r$r" netns "$sp" mtu "$mtu" || return 1
		fi
		# Counters count frames as a wire would: no GSO train
		# crosses an inter-rack link as one packet (its headers
		# would be counted once).
		ip -n "$sw" link set up0 gso_max_segs 1 || return 1
		ip -n "$sp" link set "r$r" gso_max_segs 1 || return 1
		ip -n "$sw" addr add "$RACKS_LINK_NET.$r.2/30" dev up0
		ip -n "$sw" link set up0 up
		ip -n "$sp" addr add "$RACKS_LINK_NET.$r.1/30" dev "r$r"
		ip -n "$sp" link set "r$r" up
		ip -n "$sw" route add default via "$RACKS_LINK_NET.$r.1" ||
			return 1
		ip -n "$sp" route add "$RACKS_NET.$r.0/24" \
			via "$RACKS_LINK_NET.$r.2" || return 1
		for ((i = 0; i < n; i++)); do
			ip -n "$rack-w$i" route add default \
				via "$(racks_switch_ip "$r")" || return 1
		done
	done
	# every rack's first worker reaches the next rack's last one
	for ((r = 0; r < nr; r++)); do
		rack_wait 5 ip netns exec "$(racks_worker_ns "$name" "$r" 0)" \
			ping -c1 -W1 -q \
			"$(racks_worker_ip $(((r + 1) % nr)) $((n - 1)))" \
			>/dev/null ||
			{ rack_die "rack $r cannot reach rack $(((r + 1) % nr))"; return 1; }
	done
}

racks_down()		# racks_down NAME R
{
	local name=$1 nr=$2 r

	[ -n "$name" ] && [ -n "$nr" ] ||
		{ rack_die "usage: racks_down NAME R"; return 1; }
	for ((r = 0; r < nr; r++)); do
		rack_down "$(racks_name "$name" "$r")"
	done
	ip netns pids "$name-spine" 2>/dev/null | xargs -r kill -9 2>/dev/null
	ip netns del "$name-spine" 2>/dev/null
	ip netns del "$name-wire" 2>/dev/null
	if [ -d "$(rack_pin_dir "$name-spine")" ]; then	# racks_spine_xdp's
		umount "$(rack_pin_dir "$name-spine")" 2>/dev/null
		rm -rf "$(rack_pin_dir "$name-spine")"
	fi
	return 0
}

# racks_xdp NAME R N [PINDIR]: xina on rack R: XDP on its ports and on its
# uplink (workers of other racks reach it through the spine).
racks_xdp()
{
	local rack pin

	rack=$(racks_name "$1" "$2")
	pin=${4:-$(rack_pin_dir "$rack")}
	rack_xdp "$rack" "$3" "$pin" || return 1
	ip netns exec "$rack-sw" "$XINACTL" -P "$pin" dev attach up0
}

racks_spine_ip()		# racks_spine_ip R: the spine's end of rack R's link
{
	echo "$RACKS_LINK_NET.$1.1"
}

racks_uplink_ip()	# racks_uplink_ip R: rack R's end of its link (up0)
{
	echo "$RACKS_LINK_NET.$1.2"
}

# racks_spine_xdp NAME R [PINDIR]: xina on the spine, the upper switch:
# XDP and TC on its end of every one of the R inter-rack links (packets
# that only cross the spine, to another rack, pass).
racks_spine_xdp()
{
	local sp=$1-spine pin=${3:-$(rack_pin_dir "$1-spine")} r

	rack_pin_mount "$pin" || return 1
	for ((r = 0; r < $2; r++)); do
		ip netns exec "$sp" "$XINACTL" -P "$pin" dev attach "r$r" ||
			return 1
	done
}

# racks_bound NS PORT PID: true once PID lives and something in NS
# listens on UDP PORT.
racks_bound()
{
	kill -0 "$3" 2>/dev/null || return 1
	[ -n "$(ip netns exec "$1" ss -Hunl "sport = :$2")" ]
}

# racks_spine_member R XDP_RACKS: "IP:PORT", where rack R's partials reach
# an upper job at the spine from: its uplink's address if R is in
# XDP_RACKS (its XDP switch hands up), else its switch's (its agent's).
racks_spine_member()
{
	local a

	a=$(racks_switch_ip "$1")
	[[ " $2 " == *" $1 "* ]] && a=$(racks_uplink_ip "$1")
	echo "$a:${XINA_PORT:-9277}"
}

# racks_spine_swagg NAME R OUT UPJOB UPKEY [ARGS...]: the upper switch at
# the spine in user space: xina-swagg in the spine namespace, listening on
# every inter-rack link, the upper job UPJOB of R members, member r the
# agent of rack r at its switch's address, or, for the racks listed in
# RACKS_SPINE_XDP (e.g. "0 2"), rack r's XDP switch handing up from its
# uplink's address.  An XDP uplink redirects into up0, which on veth needs
# NAPI at the link's far end: the wire's bridge gives it (racks_up ...
# wire), else the spine's end needs GRO on.  ARGS go to xina-swagg
# (--slots, --elems, ...); its counters go to OUT at exit, its log to
# OUT.err; its pid in RACKS_SPINE_PID once its socket is bound.
racks_spine_swagg()
{
	local name=$1 nr=$2 out=$3 upjob=$4 upkey=$5 r port=${XINA_PORT:-9277}
	local -a members

	shift 5
	for ((r = 0; r < nr; r++)); do
		members+=(--member "$r=$(racks_spine_member "$r" "${RACKS_SPINE_XDP:-}")")
	done
	ip netns exec "$name-spine" "$XINA_O/xina-swagg" --port "$port" \
		--job "$upjob" --key-file "$upkey" --workers "$nr" --json \
		"${members[@]}" "$@" >"$out" 2>"$out.err" &
	RACKS_SPINE_PID=$!
	rack_wait 10 racks_bound "$name-spine" "$port" "$RACKS_SPINE_PID" ||
		{ rack_die "the spine's xina-swagg did not come up: $(cat "$out.err")"; return 1; }
}

# racks_uplink_bytes NAME R: "UP DOWN", the bytes rack R's inter-rack link
# carried so far: out of the rack (up0 transmitted) and into it (up0
# received).
racks_uplink_bytes()
{
	ip -n "$(racks_switch_ns "$1" "$2")" -s -j link show up0 |
		jq -r '.[0].stats64 | "\(.tx.bytes) \(.rx.bytes)"'
}

# Global rank G is worker G mod RACKS_N of rack G / RACKS_N.
racks_g_ns()		# racks_g_ns NAME G
{
	racks_worker_ns "$1" $(($2 / RACKS_N)) $(($2 % RACKS_N))
}

racks_g_ip()		# racks_g_ip G
{
	racks_worker_ip $(($1 / RACKS_N)) $(($1 % RACKS_N))
}

racks_flat_switch()	# racks_flat_switch G: every worker sends to rack 0
{
	racks_switch_ip 0
}

racks_hier_switch()	# racks_hier_switch G: each to its own rack's switch
{
	racks_switch_ip $(($1 / RACKS_N))
}

# racks_allreduce NAME R SWFN OUTDIR ARGS...: the R x RACKS_N workers at
# once (rack_allreduce_at), global rank G sending to "SWFN G".  Returns how
# many failed.
racks_allreduce()
{
	local name=$1 nr=$2 swfn=$3 out=$4

	shift 4
	rack_allreduce_at racks_g_ns racks_g_ip "$swfn" "$name" \
		$((nr * RACKS_N)) "$out" "$@"
}

# racks_agent NAME R OUT UPRANK UPKEY UPJOB ARGS...: xina-swagg as rack R's
# agent, in its switch namespace at its switch address: the rack job (ARGS:
# --job, --key-file, --workers (the world size), --slots, --elems) of the
# rack's workers (global ranks, port RACK_WORKER_PORT), its partials to
# the upper switch at RACKS_UP_ADDR (default rack 0's switch) as rank
# UPRANK of job UPJOB (secret UPKEY).  Its counters
# go to OUT (JSON) when it is sent SIGINT, its messages to OUT.err.  The
# pid is in RACKS_AGENT_PID; returns once it joined the upper job (or
# failed).
racks_agent()
{
	local name=$1 r=$2 out=$3 uprank=$4 upkey=$5 upjob=$6 i g ns
	local -a members

	shift 6
	for ((i = 0; i < RACKS_N; i++)); do
		g=$((r * RACKS_N + i))
		members+=(--member "$g=$(racks_worker_ip "$r" "$i"):$RACK_WORKER_PORT")
	done
	ns=$(racks_switch_ns "$name" "$r")
	ip netns exec "$ns" "$XINA_O/xina-swagg" --bind "$(racks_switch_ip "$r")" \
		--up "${RACKS_UP_ADDR:-$(racks_switch_ip 0)}" --up-rank "$uprank" \
		--up-key-file "$upkey" --up-job "$upjob" --verbose --json \
		"${members[@]}" "$@" >"$out" 2>"$out.err" &
	RACKS_AGENT_PID=$!
	# joined: it says so (--verbose) before it serves the rack
	rack_wait 10 grep -qs "of upper job" "$out.err" ||
		{ rack_die "rack $r's agent did not join: $(cat "$out.err")"; return 1; }
}

# racks_loss NAME PERMILLE: PERMILLE/1000 of the xina packets (to or from
# the xina port) crossing the inter-rack links are dropped, in each
# direction: nftables' random numbers (the host has no netem).  With a
# wire (racks_up ... wire) the wire's bridges drop them, whatever sends
# them; else the spine drops those it forwards between racks (not those
# to or from an upper switch at the spine).  A GSO train is one packet
# here.
racks_wire()		# racks_wire NAME: true if the links have a wire
{
	[ -e "/run/netns/$1-wire" ]
}

racks_loss_where()	# racks_loss_where NAME: "NS FAMILY HOOK"
{
	if racks_wire "$1"; then
		echo "$1-wire bridge forward"
	else
		echo "$1-spine inet forward"
	fi
}

racks_loss()
{
	local port=${XINA_PORT:-9277} ns fam hook

	read -r ns fam hook <<<"$(racks_loss_where "$1")"
	ip netns exec "$ns" nft -f - <<-EOF
	table $fam xina_spine {
		counter seen { }
		counter dropped { }
		chain forward_loss {
			type filter hook $hook priority 0; policy accept;
			udp dport $port counter name seen
			udp sport $port udp dport != $port counter name seen
			udp dport $port numgen random mod 1000 < $2 counter name dropped drop
			udp sport $port udp dport != $port numgen random mod 1000 < $2 counter name dropped drop
		}
	}
	EOF
}

# racks_loss_counts NAME: "SEEN DROPPED", xina packets racks_loss judged.
racks_loss_counts()
{
	local ns fam hook

	read -r ns fam hook <<<"$(racks_loss_where "$1")"
	ip netns exec "$ns" nft -j list counters 2>/dev/null |
		jq -r '[.nftables[].counter? // empty |
			select(.table == "xina_spine") | {(.name): .packets}] |
		       add // {} | "\(.seen // 0) \(.dropped // 0)"'
}

racks_loss_off()	# racks_loss_off NAME
{
	local ns fam hook

	read -r ns fam hook <<<"$(racks_loss_where "$1")"
	ip netns exec "$ns" nft delete table "$fam" xina_spine 2>/dev/null
	return 0
}

racks_main()
{
	local cmd=$1

	shift
	case "$cmd" in
	up) racks_up "$@" ;;
	down) racks_down "$@" ;;
	*) rack_die "unknown command '$cmd' (up, down)"; return 1 ;;
	esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -u
	racks_main "$@"
fi
