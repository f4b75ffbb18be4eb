#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# xina on a router: the routed rack (scripts/rack.sh rack_routed_up), one
# subnet per switch port, no bridge, the switch namespace forwarding IPv4.
# Worker k sends to the address of its own port, 10.77.k.254.  For int32
# and float32:
#
# - results bit-exact (every worker checks every element; all agree), and
#   the switch's counters add up (contrib = N x complete, one copy per
#   member per result, none unaddressable);
# - every result reaching worker k left the switch with port k's MAC and
#   address as source: nftables counters on the ingress of each worker's
#   eth0 count the results (UDP from port 9277), and those from any other
#   MAC or address; together they saw every copy the switch counted as
#   sent (but for those a veth dropped, counted too);
# - while the allreduce runs, a flow of UDP datagrams to port 9277 goes
#   from worker 0 to worker N-1, across the switch (another subnet); among
#   random ones, some are well-formed contributions of the running job in
#   member 0's name.  None is the switch's: the receiver gets every
#   datagram, byte for byte, and the switch counts them as passed (none
#   malformed, none for a job).

. "$(dirname "$0")/lib.sh"
require_root
require_cmd jq nft python3 "$O/xinactl" "$O/xina-allreduce"
. "$XINA_ROOT/scripts/rack.sh"

rack_test_init xro
N=4
KEY=$KEYFILE		# the jobs' key file (made by rack_test_init)
ELEMS=${XINA_RO_ELEMS:-256}
SLOTS=${XINA_RO_SLOTS:-64}
BYTES=${XINA_RO_BYTES:-$((4 << 20))}
XPORT=${XINA_PORT:-9277}
FLOW_SPORT=9300		# the flow's source port (not the xina port)
JOB=400

stat_of()	# stat_of JOB NAME
{
	xctl -j stats job "$1" | jq -r ".jobs[0].$2 // empty"
}

gstat_of()	# gstat_of NAME: a switch-wide counter
{
	xctl -j stats | jq -r ".switch.$1 // empty"
}

# res_count W NAME: counter NAME of worker W's result counters.
res_count()
{
	ip netns exec "$RACK-w$1" nft -j list counters |
		jq -r ".nftables[].counter? // empty | select(.table == \"xina_routed\" and .name == \"$2\") | .packets"
}

# Count the results reaching worker $1, and those whose source MAC or
# address is not its switch port's.
res_counters_add()
{
	local w=$1 mac ip

	mac=$(ip -n "$RACK-sw" -j link show "p$w" | jq -r '.[0].address')
	ip=$(rack_routed_switch_ip "$w")
	ip netns exec "$RACK-w$w" nft delete table netdev xina_routed 2>/dev/null
	ip netns exec "$RACK-w$w" nft -f - <<-EOF
	table netdev xina_routed {
		counter results { }
		counter bad_mac { }
		counter bad_ip { }
		chain in {
			type filter hook ingress device eth0 priority 0; policy accept;
			udp sport $XPORT counter name results
			udp sport $XPORT ether saddr != $mac counter name bad_mac
			udp sport $XPORT ip saddr != $ip counter name bad_ip
		}
	}
	EOF
}

# flow_recv W OUT READY: receive the flow on worker W's address, port
# XPORT; one line per datagram (hex) into OUT; touches READY once bound;
# ends 3 s after the last datagram (20 s if none comes).
flow_recv()
{
	ip netns exec "$RACK-w$1" python3 - "$(rack_routed_worker_ip "$1")" \
		"$XPORT" "$2" "$3" <<-'EOF'
	import socket, sys
	ip, port, out, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
	s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
	s.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)	# SO_RCVBUFFORCE
	s.bind((ip, port))
	open(ready, "w").close()
	s.settimeout(20)
	with open(out, "w") as f:
	    while True:
	        try:
	            d = s.recv(65536)
	        except socket.timeout:
	            break
	        f.write(d.hex() + "\n")
	        s.settimeout(3)
	EOF
}

# flow_send FROM TO OUT STOP JOB: from worker FROM (source port FLOW_SPORT)
# to worker TO's port XPORT, one datagram a millisecond until STOP exists
# (at most 20000); one line "TIME HEX" per datagram into OUT.  Every
# fourth is a well-formed contribution of job JOB from rank 0 (the wire
# format of struct xina_hdr, wire version 2, with a random tag), the others
# random bytes of random length.
flow_send()
{
	ip netns exec "$RACK-w$1" python3 - "$(rack_routed_worker_ip "$1")" \
		"$(rack_routed_worker_ip "$2")" "$XPORT" "$FLOW_SPORT" "$3" "$4" \
		"$5" <<-'EOF'
	import os, random, socket, struct, sys, time
	src, dst, port, sport, out, stop = sys.argv[1:7]
	job = int(sys.argv[7])
	s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
	s.bind((src, int(sport)))
	with open(out, "w") as f:
	    seq = 0
	    while seq < 20000 and not os.path.exists(stop):
	        r = random.Random(seq)
	        if seq % 4 == 0:
	            n = r.randint(1, 64)
	            d = struct.pack("!BBBBBbHIHHIIIIQQ", 2, 1, 1, 1, 0, 0, n, job,
	                            0, 0, seq % 8, 0, 0, 0, 0,
	                            r.getrandbits(64)) + r.randbytes(4 * n)
	        else:
	            d = seq.to_bytes(4, "big") + r.randbytes(r.randint(0, 1400))
	        s.sendto(d, (dst, int(port)))
	        f.write("%.6f %s\n" % (time.time(), d.hex()))
	        seq += 1
	        time.sleep(0.001)
	EOF
}

# veth drops of port $1 and of its worker's eth0 (a full backlog queue):
# results sent that the worker's counters did not see.  Zeroed with the
# counters: read as a difference.
veth_drops()
{
	local a b

	a=$(ip -n "$RACK-sw" -s -j link show "p$1" | jq '.[0].stats64.tx.dropped')
	b=$(ip -n "$RACK-w$1" -s -j link show eth0 | jq '.[0].stats64.rx.dropped')
	echo $((a + b - ${DROPS0[$1]:-0}))
}

tap_begin 7

rack_routed_up "$RACK" "$N" >/dev/null && rack_xdp "$RACK" "$N" "$PIN"
check_err $? "routed rack of $N could not be set up"
log_test "routed rack: $N subnets, one per switch port, workers reach each other through the switch"
[ "$tap_failed" -gt 0 ] && tap_end

for dtype in i32 f32; do
	JOB=$((JOB + 1))
	dir=$TMP/$dtype
	mkdir -p "$dir"
	for ((i = 0; i < N; i++)); do
		res_counters_add "$i" || check_err 1 "nft counters on worker $i"
		DROPS0[i]=0
		DROPS0[i]=$(veth_drops "$i")
	done
	pass0=$(gstat_of pass)
	malformed0=$(gstat_of malformed)
	nojob0=$(gstat_of no_job)

	rack_routed_job_add "$RACK" "$N" "$JOB" "$KEY" "$SLOTS" "$ELEMS" "$PIN"
	check_err $? "job add $JOB failed"
	flow_recv $((N - 1)) "$dir/flow.rx" "$dir/flow.ready" &
	rx_pid=$!
	busywait 10 test -e "$dir/flow.ready"
	flow_up=$?
	# The flow first: its Python takes a second to start when the
	# workers hold both CPUs, longer than their calls (0.4 s).
	flow_send 0 $((N - 1)) "$dir/flow.tx" "$dir/flow.stop" "$JOB" &
	tx_pid=$!
	busywait 10 test -s "$dir/flow.tx"
	check_err $? "the flow's sender did not start"
	rack_routed_allreduce "$RACK" "$N" "$dir" --job "$JOB" --key-file "$KEY" \
		--slots "$SLOTS" --elems "$ELEMS" --dtype "$dtype" \
		--bytes "$BYTES" --iters 3 --timeout-ms 5000 &
	ar_pid=$!
	wait $ar_pid
	check_err $? "$? of $N workers failed: $(for f in "$dir"/w*.err; do
		[ -s "$f" ] && echo "[$(basename "$f" .err)] $(tail -n1 "$f")"; done | tr '\n' ' ')"
	touch "$dir/flow.stop"
	wait $tx_pid
	wait $rx_pid

	# results bit-exact, the switch's counters add up
	check_workers "$N" "$dir"
	complete=$(stat_of "$JOB" complete)
	contrib=$(stat_of "$JOB" contrib)
	tx=$(stat_of "$JOB" tx)
	answered=$(stat_of "$JOB" retrans_answered)
	unknown=$(stat_of "$JOB" tx_unknown)
	# each join's reply is one copy, to its rank
	joins=$(( $(stat_of "$JOB" join) + $(stat_of "$JOB" join_refused) ))
	log_info "job $JOB: complete $complete contrib $contrib tx $tx retrans_answered $answered tx_unknown $unknown join replies $joins"
	[ "${complete:-0}" -gt 0 ] 2>/dev/null && [ "$contrib" = $((N * complete)) ]
	check_err $? "contrib $contrib, want $N x complete ($complete)"
	[ "$tx" = $((N * complete + answered + joins)) ] && [ "$unknown" = 0 ]
	check_err $? "tx $tx tx_unknown $unknown, want $N x complete + retrans_answered + join replies = $((N * complete + answered + joins)) and 0"
	log_test "routed rack, $dtype: results bit-exact, one copy per member"

	# results with each port's own source MAC and address; every copy the
	# switch sent reached its worker (or a veth dropped it)
	seen=0
	drops=0
	for ((i = 0; i < N; i++)); do
		got=$(res_count "$i" results)
		if ! [[ "$got" =~ ^[0-9]+$ ]]; then
			check_err 1 "worker $i: no result counter ('$got')"
			got=0
		fi
		seen=$((seen + got))
		drops=$((drops + $(veth_drops "$i")))
		bad_mac=$(res_count "$i" bad_mac)
		bad_ip=$(res_count "$i" bad_ip)
		log_info "worker $i: $got results, $bad_mac from another MAC, $bad_ip from another address than $(rack_routed_switch_ip "$i")"
		[ "$got" -gt 0 ]
		check_err $? "worker $i: no result seen on eth0"
		[ "$bad_mac" = 0 ] && [ "$bad_ip" = 0 ]
		check_err $? "worker $i: $bad_mac results from another MAC than p$i's, $bad_ip from another address than $(rack_routed_switch_ip "$i")"
	done
	log_info "results seen by the workers: $seen, dropped by veth: $drops, sent by the switch: $tx"
	[ $((seen + drops)) -eq "$tx" ]
	check_err $? "the switch sent $tx results, the workers saw $seen (veth dropped $drops)"
	log_test "routed rack, $dtype: results leave each port with its own MAC and address"

	# the flow: all of it delivered, byte for byte, passed by the switch
	sent=$(wc -l < "$dir/flow.tx")
	rcvd=$(cat "$dir/flow.rx" 2>/dev/null | wc -l)
	t0=$(jq -s 'map(.t_start) | max' "$dir"/w*.json)
	t1=$(jq -s 'map(.t_end) | min' "$dir"/w*.json)
	during=$(awk -v a="$t0" -v b="$t1" '$1 >= a && $1 <= b { n++ } END { print n + 0 }' \
		"$dir/flow.tx")
	pass=$(($(gstat_of pass) - pass0))
	malformed=$(($(gstat_of malformed) - malformed0))
	nojob=$(($(gstat_of no_job) - nojob0))
	log_info "flow: $sent sent ($during while every worker was in its timed calls), $rcvd received; switch: pass +$pass malformed +$malformed no_job +$nojob"
	[ "$flow_up" -eq 0 ]
	check_err $? "the flow's receiver did not start"
	cmp -s <(cut -d' ' -f2 "$dir/flow.tx" | sort) <(sort "$dir/flow.rx")
	check_err $? "the flow's receiver did not get what was sent: $sent sent, $rcvd received"
	[ "$during" -ge 10 ]
	check_err $? "only $during datagrams crossed while the allreduce ran"
	[ "$pass" -ge "$sent" ] && [ "$malformed" -eq 0 ] && [ "$nojob" -eq 0 ]
	check_err $? "switch counted pass +$pass (want >= $sent), malformed +$malformed, no_job +$nojob (want 0)"
	for s in rx drop_key drop_member drop_range drop_op; do
		v=$(stat_of "$JOB" "$s")
		case $s in
		rx) [ "$v" = $((contrib + $(stat_of "$JOB" dup) + $(stat_of "$JOB" stale) + answered + joins + $(stat_of "$JOB" join_stale))) ] ;;
		*) [ "$v" = 0 ] ;;
		esac
		check_err $? "job $JOB counted $s = $v: the flow reached the job"
	done
	log_test "routed rack, $dtype: a UDP $XPORT flow between subnets crosses the switch untouched"
	xctl job del "$JOB"
done

tap_end
