#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# libxina's AF_XDP path (xina-allreduce --io xsk) in a rack of network
# namespaces, copy mode on veth (the only mode these machines have; zero-copy
# needs a NIC whose driver supports it and is not tested here):
# - allreduces verified bit for bit (i32) and against the bound (f32), with
#   jumbo frames in several buffers (MTU 9000, 2048 elements) and in one
#   buffer (MTU 1500, 256 elements), the switch's counters adding up;
# - the same as 8 calls in flight at once (xina-allreduce --inflight 8,
#   libxina's non-blocking calls on its progress thread);
# - a first flush while the kernel does not know the switch's MAC yet;
# - results that reach the stack instead (program detached) read from the
#   UDP socket the handle keeps;
# - the worker's other traffic (ping, a UDP flow from the switch's xina
#   port to another port, a jumbo datagram) untouched while the program is
#   attached; the program gone when the handle's process ends or is killed;
# - the fallbacks to UDP, each verified and saying why: another XDP program
#   on the interface, a second handle on the same interface, no privileges,
#   and XINA_IO_AUTO on veth (no zero-copy).

. "$(dirname "$0")/lib.sh"
require_root
require_cmd jq python3 setpriv bpftool "$O/xinactl" "$O/xina-allreduce" \
	"$O/selftests/xdp_pass.bpf.o"
. "$XINA_ROOT/scripts/rack.sh"

rack_test_init xx
JOB=300

# The xina-allreduce JSON of worker $2 in $1, field $3.
wj()
{
	jq -r ".$3" "$1/w$2.json" 2>/dev/null
}

# check_run N DIR IO [some]: every worker verified, used IO; for xsk,
# frames went both ways through the AF_XDP socket, every result (or, with
# "some", at least one) came through it.
check_run()
{
	local n=$1 dir=$2 io=$3 want i sums

	for ((i = 0; i < n; i++)); do
		if [ "$(wj "$dir" "$i" verified)" != true ]; then
			check_err 1 "worker $i: $(tail -n2 "$dir/w$i.err" | tr '\n' ' ')"
			return
		fi
		[ "$(wj "$dir" "$i" io)" = "$io" ]
		check_err $? "worker $i used io '$(wj "$dir" "$i" io)', want $io: $(wj "$dir" "$i" io_reason)"
		[ "$io" = xsk ] || continue
		want=$(wj "$dir" "$i" results)
		[ "${4:-}" = some ] && want=1
		[ "$(wj "$dir" "$i" xsk_tx_frames)" -gt 0 ] &&
			[ "$(wj "$dir" "$i" xsk_rx_frames)" -ge "$want" ]
		check_err $? "worker $i: xsk_tx_frames $(wj "$dir" "$i" xsk_tx_frames), xsk_rx_frames $(wj "$dir" "$i" xsk_rx_frames) for $(wj "$dir" "$i" results) results"
	done
	sums=$(for ((i = 0; i < n; i++)); do wj "$dir" "$i" checksum; done | sort -u | wc -l)
	[ "$sums" -eq 1 ]
	check_err $? "workers disagree on the result ($sums different checksums)"
}

# Without loss every completion is made of exactly n contributions.
check_switch()
{
	local n=$1 job=$2 contrib complete

	contrib=$(xctl -j stats job "$job" | jq -r '.jobs[0].contrib // empty')
	complete=$(xctl -j stats job "$job" | jq -r '.jobs[0].complete // empty')
	[ -n "$contrib" ] && [ "${complete:-0}" -gt 0 ] &&
		[ "$contrib" -eq $((n * complete)) ]
	check_err $? "switch counters: contrib=$contrib complete=$complete, want contrib = $n x complete"
}

# run N SLOTS ELEMS DTYPE BYTES IO [ARGS...]: one allreduce on a new job;
# DIR is where the workers' output is.
run()
{
	local n=$1 slots=$2 elems=$3 dtype=$4 bytes=$5 io=$6

	shift 6
	JOB=$((JOB + 1))
	DIR=$TMP/$JOB
	rack_job_add "$RACK" "$n" "$JOB" "$KEYFILE" "$slots" "$elems" "$PIN" ||
		{ check_err 1 "job add $JOB failed"; return 1; }
	rack_allreduce "$RACK" "$n" "$DIR" --job "$JOB" --key-file "$KEYFILE" \
		--slots "$slots" --elems "$elems" --dtype "$dtype" \
		--bytes "$bytes" --iters 2 --timeout-ms 5000 --io "$io" "$@"
	check_err $? "$? of $n workers failed: $(for f in "$DIR"/w*.err; do
		[ -s "$f" ] && echo "[$(basename "$f" .err)] $(tail -n1 "$f")"; done | tr '\n' ' ')"
}

rack()
{
	local n=$1 mtu=$2

	rack_up "$RACK" "$n" mtu "$mtu" >/dev/null && rack_xdp "$RACK" "$n" "$PIN"
	check_err $? "rack of $n workers (MTU $mtu) could not be set up"
}

# The XDP program id on worker $1's eth0, empty when there is none.
xdp_id()
{
	ip -n "$RACK-w$1" -j link show dev eth0 | jq -r '.[0].xdp.prog.id // empty'
}

xdp_on()
{
	[ -n "$(xdp_id "$1")" ]
}

xdp_off()
{
	[ -z "$(xdp_id "$1")" ]
}

tap_begin 12

# ---- the AF_XDP path --------------------------------------------------------
N=4
rack "$N" 9000
for dtype in i32 f32; do
	for bytes in 4 8196 $(((4 << 20) + 12)); do
		run "$N" 32 2048 "$dtype" "$bytes" xsk
		check_run "$N" "$DIR" xsk
		check_switch "$N" "$JOB"
	done
	log_info "$dtype: $(wj "$DIR" 0 io_reason), $(wj "$DIR" 0 goodput_Bps | awk '{ printf "%d", $1 / 1e6 }') MB/s per worker"
	log_test "AF_XDP, MTU 9000, 2048 elements (multi-buffer), $N workers, $dtype"
done
for dtype in i32 f32; do
	run "$N" 32 2048 "$dtype" $(((4 << 20) + 12)) xsk --inflight 8
	check_run "$N" "$DIR" xsk
	check_switch "$N" "$JOB"
	[ "$(wj "$DIR" 0 inflight)" = 8 ]
	check_err $? "worker 0 did not run 8 calls in flight"
done
log_test "AF_XDP, 8 calls in flight at once (non-blocking API), $N workers, i32 and f32"

# ---- other traffic while the program is attached ----------------------------
# A long allreduce in the background; ping and a UDP flow from the switch's
# xina port to another port of worker 0 (the closest miss of the program's
# filter), small datagrams and a jumbo one, meanwhile.
udp_bound()
{
	ip netns exec "$RACK-w0" ss -Hlun "sport = :7001" | grep -q 7001
}

JOB=$((JOB + 1))
rack_job_add "$RACK" "$N" "$JOB" "$KEYFILE" 32 2048 "$PIN"
rack_allreduce "$RACK" "$N" "$TMP/bg" --job "$JOB" --key-file "$KEYFILE" --slots 32 \
	--elems 2048 --dtype i32 --bytes $((1 << 20)) --iters 100000 \
	--timeout-ms 5000 --io xsk 2>/dev/null &
bg=$!
busywait 20 xdp_on 0 && busywait 20 xdp_on 1
check_err $? "the AF_XDP program never appeared on the workers' eth0"
for dst in "$RACK_SWITCH_IP" "$(rack_worker_ip 1)"; do
	got=$(ip netns exec "$RACK-w0" ping -c 20 -i 0.05 -W 2 -q "$dst" |
	      sed -n 's/.* \([0-9]*\) received.*/\1/p')
	[ "${got:-0}" -eq 20 ]
	check_err $? "ping from worker 0 to $dst: ${got:-0} of 20 replies"
done
ip netns exec "$RACK-w0" python3 - "$(rack_worker_ip 0)" 7001 >"$TMP/udp.rx" <<'EOF' &
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
s.settimeout(5)
n = 0
try:
    while n < 101:
        d, a = s.recvfrom(9000)
        n += 1
except socket.timeout:
    pass
print(n)
EOF
rx=$!
busywait 10 udp_bound
check_err $? "the UDP receiver on worker 0 did not start"
ip netns exec "$RACK-sw" python3 - "$RACK_SWITCH_IP" "${XINA_PORT:-9277}" \
	"$(rack_worker_ip 0)" 7001 <<'EOF'
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], int(sys.argv[2])))
for i in range(100):
    s.sendto(bytes(1000), (sys.argv[3], int(sys.argv[4])))
    time.sleep(0.002)
s.sendto(bytes(8000), (sys.argv[3], int(sys.argv[4])))
EOF
wait $rx
[ "$(cat "$TMP/udp.rx")" = 101 ]
check_err $? "worker 0 received $(cat "$TMP/udp.rx") of 101 datagrams of another UDP flow"
xdp_on 0
check_err $? "the program left eth0 before the traffic was over"
log_test "the worker's other traffic is untouched while the AF_XDP program is attached"

# Killed: the bpf_link goes with the process, and the program with it.
ip netns pids "$RACK-w0" | xargs -r kill -9
busywait 10 xdp_off 0
check_err $? "program $(xdp_id 0) still on worker 0's eth0 after its process was killed"
wait $bg
for ((i = 1; i < N; i++)); do
	busywait 20 xdp_off "$i"
	check_err $? "program $(xdp_id "$i") still on worker $i's eth0 after its process ended"
done
log_test "the AF_XDP program leaves with the process, killed or not"

N=2
rack "$N" 1500
run "$N" 64 256 i32 $(((1 << 20) + 12)) xsk
check_run "$N" "$DIR" xsk
check_switch "$N" "$JOB"
log_test "AF_XDP, MTU 1500, 256 elements (one buffer per frame)"

# The kernel resolves the switch's MAC when the UDP socket sends; until
# then the handle sends through it, then through AF_XDP.
ip -n "$RACK-w0" neigh flush dev eth0
run "$N" 64 256 i32 $((1 << 20)) xsk
check_run "$N" "$DIR" xsk
[ "$(wj "$DIR" 0 tx_syscalls)" -gt 0 ]
check_err $? "worker 0 sent nothing through its UDP socket with an empty neighbour table"
ip -n "$RACK-w0" neigh show to "$RACK_SWITCH_IP" dev eth0 | grep -q lladdr
check_err $? "the kernel did not resolve the switch's MAC"
log_test "AF_XDP with the switch's MAC not yet known: UDP first, then AF_XDP"

# Results that reach the stack (here: worker 0's program detached mid-run)
# are read from the UDP socket the handle keeps.
JOB=$((JOB + 1))
DIR=$TMP/$JOB
rack_job_add "$RACK" "$N" "$JOB" "$KEYFILE" 32 256 "$PIN"
rack_allreduce "$RACK" "$N" "$DIR" --job "$JOB" --key-file "$KEYFILE" --slots 32 \
	--elems 256 --dtype i32 --bytes 1000000 --iters 400 --timeout-ms 5000 \
	--io xsk &
bg=$!
busywait 20 xdp_on 0
check_err $? "worker 0's program never appeared"
sleep 0.5	# some results through AF_XDP first
prog=$(xdp_id 0)
link=$(bpftool -j link show | jq -r ".[] | select(.prog_id == ${prog:-0}) | .id")
bpftool link detach id "${link:-0}"
check_err $? "could not detach link '$link' of program '$prog'"
xdp_off 0
check_err $? "program $(xdp_id 0) still on worker 0's eth0"
wait $bg
check_err $? "workers failed: $(tail -qn1 "$DIR"/w*.err | tr '\n' ' ')"
check_run "$N" "$DIR" xsk some
[ "$(wj "$DIR" 0 xsk_rx_frames)" -lt "$(wj "$DIR" 0 results)" ]
check_err $? "worker 0 took all its results from AF_XDP ($(wj "$DIR" 0 xsk_rx_frames) of $(wj "$DIR" 0 results)): was the program detached?"
log_info "worker 0: $(wj "$DIR" 0 xsk_rx_frames) of $(wj "$DIR" 0 results) results through AF_XDP"
log_test "results that reach the stack are read from the UDP socket"

# ---- fallbacks ----------------------------------------------------------------
# Another XDP program on worker 0's interface.
ip -n "$RACK-w0" link set dev eth0 xdp obj "$O/selftests/xdp_pass.bpf.o" sec xdp
check_err $? "could not attach xdp_pass to worker 0"
other=$(xdp_id 0)
run "$N" 64 256 i32 $((1 << 20)) xsk
[ "$(wj "$DIR" 0 io)" = udp ] && [ "$(wj "$DIR" 1 io)" = xsk ]
check_err $? "io of workers 0 and 1: $(wj "$DIR" 0 io), $(wj "$DIR" 1 io); want udp, xsk"
[ "$(wj "$DIR" 0 verified)" = true ] && [ "$(wj "$DIR" 1 verified)" = true ]
check_err $? "not verified: $(tail -qn1 "$DIR"/w*.err | tr '\n' ' ')"
wj "$DIR" 0 io_reason | grep -q "already runs XDP program $other"
check_err $? "worker 0 does not say why: '$(wj "$DIR" 0 io_reason)'"
grep -q "using UDP sockets, not AF_XDP: .*XDP program $other" "$DIR/w0.err"
check_err $? "worker 0 did not log why: $(cat "$DIR/w0.err")"
[ "$(xdp_id 0)" = "$other" ]
check_err $? "the other XDP program was replaced (now '$(xdp_id 0)', was $other)"
log_info "worker 0: $(wj "$DIR" 0 io_reason)"
log_test "fallback to UDP: another XDP program on the interface"
ip -n "$RACK-w0" link set dev eth0 xdp off

# Two handles on the same interfaces: the first one's program is there, the
# second one uses UDP, its results pass that program untouched.
JOB=$((JOB + 1))
first=$JOB
rack_job_add "$RACK" "$N" "$first" "$KEYFILE" 64 256 "$PIN"
rack_allreduce "$RACK" "$N" "$TMP/first" --job "$first" --key-file "$KEYFILE" \
	--slots 64 --elems 256 --dtype i32 --bytes $((1 << 20)) --iters 300 \
	--timeout-ms 5000 --io xsk &
bg=$!
busywait 20 xdp_on 0 && busywait 20 xdp_on 1
check_err $? "the first handle's program never appeared"
RACK_WORKER_PORT=7100 run "$N" 64 256 i32 $((1 << 20)) xsk
second=$DIR
xdp_on 0 && xdp_on 1
check_err $? "the first handle ended before the second one ran: make it run longer"
wait $bg
check_err $? "the first handle's workers failed"
check_run "$N" "$TMP/first" xsk
check_run "$N" "$second" udp
wj "$second" 0 io_reason | grep -q "already runs XDP program"
check_err $? "the second handle does not say why: '$(wj "$second" 0 io_reason)'"
log_test "fallback to UDP: a second handle on the same interface"

# No privileges: the UDP socket needs none, AF_XDP needs CAP_NET_RAW.
JOB=$((JOB + 1))
rack_job_add "$RACK" "$N" "$JOB" "$KEYFILE" 64 256 "$PIN"
DIR=$TMP/$JOB
mkdir -p "$DIR"
# The unprivileged workers' own copy of the key file (0600, theirs).
chmod 711 "$TMP"
install -d -o 65534 -g 65534 -m 700 "$TMP/nobody"
install -o 65534 -g 65534 -m 600 "$KEYFILE" "$TMP/nobody/job.key"
for ((i = 0; i < N; i++)); do
	ip netns exec "$RACK-w$i" setpriv --reuid=65534 --regid=65534 \
		--clear-groups --inh-caps=-all --bounding-set=-all \
		"$O/xina-allreduce" --switch "$RACK_SWITCH_IP" \
		--bind "$(rack_worker_ip "$i"):$RACK_WORKER_PORT" --rank "$i" \
		--workers "$N" --job "$JOB" --key-file "$TMP/nobody/job.key" \
		--slots 64 --elems 256 \
		--dtype i32 --bytes $((1 << 20)) --iters 2 --timeout-ms 5000 \
		--io xsk --json >"$DIR/w$i.json" 2>"$DIR/w$i.err" &
done
wait
check_run "$N" "$DIR" udp
wj "$DIR" 0 io_reason | grep -q "CAP_NET_RAW"
check_err $? "the unprivileged worker does not say why: '$(wj "$DIR" 0 io_reason)'"
log_test "fallback to UDP: no privileges"

# XINA_IO_AUTO on veth: copy mode only, where UDP measured faster.
run "$N" 64 256 i32 $((1 << 20)) auto
check_run "$N" "$DIR" udp
wj "$DIR" 0 io_reason | grep -q "zero-copy"
check_err $? "auto does not say why it chose UDP: '$(wj "$DIR" 0 io_reason)'"
xdp_off 0
check_err $? "auto left a program on eth0"
log_test "auto on veth: UDP, saying why"

tap_end
