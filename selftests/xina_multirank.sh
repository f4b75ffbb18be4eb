#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Several members behind one switch port: 8 ranks on 2 worker namespaces,
# 4 processes in each, every rank with a UDP socket of its own (its own
# port), allreduce int32 and float32 through the XDP switch.
#
# - every rank checks every element itself (int32 bit-exact, float32 within
#   the bound), and all ranks' results are bitwise identical;
# - every rank accepted exactly one result per slot round the switch
#   completed (its own copy of every result), and the switch sent exactly
#   one copy per member per result: tx = 8 x complete + retransmissions
#   answered + join replies, tx_unknown = 0, contrib = 8 x complete;
# - each rank's copies reached its own namespace and no other (nftables
#   counters per destination port on the ingress of each namespace's
#   eth0); with the maps backend, xinactl job show also says the switch
#   learned each member behind its namespace's port, with that
#   namespace's MAC and the rank's own UDP port.
#
# XINA_MR_BYTES sets the tensor size.

. "$(dirname "$0")/lib.sh"
require_root
require_cmd jq nft "$O/xinactl" "$O/xina-allreduce"
. "$XINA_ROOT/scripts/rack.sh"

rack_test_init xmr
HOSTS=2
PER_HOST=4
RANKS=$((HOSTS * PER_HOST))
KEY=$KEYFILE		# the jobs' key file (made by rack_test_init)
ELEMS=${XINA_MR_ELEMS:-256}
SLOTS=${XINA_MR_SLOTS:-32}
BYTES=${XINA_MR_BYTES:-$((4 << 20))}
PORT0=7000		# rank r sends from PORT0 + r
XPORT=${XINA_PORT:-9277}
JOB=300
TX_TOTAL=0		# copies the switch sent, all jobs

host_of()	# the worker namespace of rank $1
{
	echo $(($1 % HOSTS))
}

stat_of()	# stat_of JOB NAME
{
	xctl -j stats job "$1" | jq -r ".jobs[0].$2 // empty"
}

job_add()
{
	local job=$1 members="" r

	for ((r = 0; r < RANKS; r++)); do
		members="$members member $r $(rack_worker_ip "$(host_of $r)"):$((PORT0 + r))"
	done
	# shellcheck disable=SC2086
	xctl job add "$job" workers "$RANKS" slots "$SLOTS" elems "$ELEMS" \
		keyfile "$KEY" $members
}

# allreduce DIR ARGS...: every rank at once, each pinned to a CPU in turn.
# Returns how many ranks failed.
allreduce()
{
	local dir=$1 cpus r h fails=0
	local -a pids

	shift
	cpus=$(nproc)
	mkdir -p "$dir"
	for ((r = 0; r < RANKS; r++)); do
		h=$(host_of $r)
		ip netns exec "$RACK-w$h" taskset -c $((r % cpus)) \
			"$O/xina-allreduce" --switch "$RACK_SWITCH_IP" \
			--bind "$(rack_worker_ip "$h"):$((PORT0 + r))" \
			--rank "$r" --workers "$RANKS" --key-file "$KEY" \
			--slots "$SLOTS" --elems "$ELEMS" --io udp --json "$@" \
			>"$dir/r$r.json" 2>"$dir/r$r.err" &
		pids[r]=$!
	done
	for ((r = 0; r < RANKS; r++)); do
		wait "${pids[r]}" || fails=$((fails + 1))
	done
	return $fails
}

# One copy of every result for every rank: what each rank accepted and
# what the switch sent.
check_copies()
{
	local dir=$1 job=$2 complete contrib tx unknown answered joins r res

	complete=$(stat_of "$job" complete)
	contrib=$(stat_of "$job" contrib)
	tx=$(stat_of "$job" tx)
	unknown=$(stat_of "$job" tx_unknown)
	answered=$(stat_of "$job" retrans_answered)
	# each join's reply is one copy, to its rank
	joins=$(( $(stat_of "$job" join) + $(stat_of "$job" join_refused) ))
	log_info "job $job: complete $complete contrib $contrib tx $tx tx_unknown $unknown retrans_answered $answered join replies $joins"
	[ "${complete:-0}" -gt 0 ] 2>/dev/null
	check_err $? "switch completed nothing (complete='$complete')"
	[ "$contrib" = $((RANKS * complete)) ]
	check_err $? "contrib $contrib, want $RANKS x complete = $((RANKS * complete))"
	TX_TOTAL=$((TX_TOTAL + tx))
	[ "$tx" = $((RANKS * complete + answered + joins)) ]
	check_err $? "tx $tx, want $RANKS x complete + retrans_answered + join replies = $((RANKS * complete + answered + joins))"
	[ "$unknown" = 0 ]
	check_err $? "tx_unknown $unknown, want 0"
	for ((r = 0; r < RANKS; r++)); do
		res=$(jq -r .results "$dir/r$r.json" 2>/dev/null)
		[ "$res" = "$complete" ]
		check_err $? "rank $r accepted $res results, want one per completed round ($complete)"
	done
}

# Count, on the ingress of each worker namespace's eth0, the results
# (UDP from the xina port) to each rank's port.
rank_counters_add()
{
	local h=$1 r rules="" counters=""

	for ((r = 0; r < RANKS; r++)); do
		counters="$counters
		counter r$r { }"
		rules="$rules
		udp sport $XPORT udp dport $((PORT0 + r)) counter name r$r"
	done
	ip netns exec "$RACK-w$h" nft -f - <<-EOF
	table netdev xina_mr {
		$counters
		chain in {
			type filter hook ingress device eth0 priority 0; policy accept;
			$rules
		}
	}
	EOF
}

rank_count()	# rank_count HOST RANK: results to RANK seen in HOST's namespace
{
	ip netns exec "$RACK-w$1" nft -j list counters |
		jq -r ".nftables[].counter? // empty | select(.table == \"xina_mr\" and .name == \"r$2\") | .packets"
}

# veth drops of port $1 and of its worker's eth0 (a full backlog queue):
# copies sent that no counter of the worker saw.
veth_drops()
{
	local a b

	a=$(ip -n "$RACK-sw" -s -j link show "p$1" | jq '.[0].stats64.tx.dropped')
	b=$(ip -n "$RACK-w$1" -s -j link show eth0 | jq '.[0].stats64.rx.dropped')
	echo $((a + b))
}

# Each rank's copies reached its own namespace, and none the other; and
# every copy the switch counted reached a namespace (or a veth dropped it).
check_ports()
{
	local r h o n own other sum=0 drops=0

	for ((h = 0; h < HOSTS; h++)); do
		drops=$((drops + $(veth_drops "$h")))
	done
	for ((r = 0; r < RANKS; r++)); do
		h=$(host_of $r)
		own=0
		other=0
		for ((o = 0; o < HOSTS; o++)); do
			n=$(rank_count "$o" "$r")
			if ! [[ "$n" =~ ^[0-9]+$ ]]; then
				check_err 1 "no counter of rank $r in worker namespace $o ('$n')"
				return
			fi
			if [ "$o" -eq "$h" ]; then
				own=$n
			else
				other=$((other + n))
			fi
		done
		log_info "rank $r: $own results through port p$h, $other through the others"
		[ "$own" -gt 0 ] && [ "$other" -eq 0 ]
		check_err $? "rank $r: $own results in its namespace, $other in others"
		sum=$((sum + own + other))
	done
	log_info "copies seen in the namespaces: $sum, dropped by veth: $drops; sent by the switch: $TX_TOTAL"
	[ $((sum + drops)) -eq "$TX_TOTAL" ]
	check_err $? "the switch sent $TX_TOTAL copies, the namespaces saw $sum (veth dropped $drops)"
}

# Where the switch learned each member: behind the port of its namespace,
# with that namespace's MAC, from the rank's own UDP port.  Only the maps
# backend shows it (xinactl job show); xina.ko keeps it to itself.
check_learned()
{
	local job=$1 r h ifindex mac want

	if ! xctl backend | grep -qx "backend: maps"; then
		log_info "$(xctl backend | head -n1): learned locations not shown; the counters above are the check"
		return 0
	fi

	for ((r = 0; r < RANKS; r++)); do
		h=$(host_of $r)
		ifindex=$(ip -n "$RACK-sw" -j link show "p$h" | jq -r '.[0].ifindex')
		mac=$(ip -n "$RACK-w$h" -j link show eth0 | jq -r '.[0].address')
		want="$ifindex $mac $((PORT0 + r))"
		got=$(xctl -j job show "$job" |
		      jq -r ".jobs[0].members[$r] | \"\(.ifindex) \(.mac) \(.rport)\"")
		[ "$got" = "$want" ]
		check_err $? "member $r learned as '$got' (ifindex mac rport), want '$want'"
	done
}

tap_begin 3

rack_up "$RACK" "$HOSTS" >/dev/null && rack_xdp "$RACK" "$HOSTS" "$PIN"
if [ $? -ne 0 ]; then
	check_err 1 "rack of $HOSTS worker namespaces could not be set up"
	log_test "rack"
	tap_end
fi
for ((h = 0; h < HOSTS; h++)); do
	rank_counters_add "$h" || check_err 1 "nft counters in worker namespace $h"
done
log_info "$RANKS ranks, $PER_HOST per worker namespace, $BYTES bytes"

for dtype in i32 f32; do
	JOB=$((JOB + 1))
	dir=$TMP/$dtype
	job_add "$JOB"
	check_err $? "job add $JOB failed"
	allreduce "$dir" --job "$JOB" --dtype "$dtype" --bytes "$BYTES" \
		--iters 2 --timeout-ms 5000
	check_err $? "$? of $RANKS ranks failed: $(for f in "$dir"/r*.err; do
		[ -s "$f" ] && echo "[$(basename "$f" .err)] $(tail -n1 "$f")"; done | tr '\n' ' ')"
	check_workers "$RANKS" "$dir" r
	check_copies "$dir" "$JOB"
	log_info "$(jq -r '"goodput \(.goodput_Bps // 0 | . / 1e6 | floor) MB/s per rank"' "$dir/r0.json" 2>/dev/null)"
	[ "$dtype" = i32 ] && check_learned "$JOB"
	log_test "$RANKS ranks on $HOSTS ports, $dtype: each rank its own copy of every result"
	xctl job del "$JOB"
done

check_ports
log_test "each rank's copies reached it through its own namespace's port alone"

tap_end
