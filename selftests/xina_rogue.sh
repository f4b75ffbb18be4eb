#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A rogue on a switch port of its own (Documentation/security.md): the
# rack's third namespace, w2, attached like the members' ports but no
# member of any job.  While workers w0 and w1 run an allreduce of job B,
# the rogue
#   - sprays contributions with random tags to both jobs, claiming rank 0
#     and rank 1 from the members' own addresses, UDP port and MAC
#     (spoofed), and claiming rank 0 from its own address;
#   - replays, byte for byte, every packet member 0 sent in an earlier
#     allreduce of job A (captured on w0's interface): its join and its
#     contributions.
# Then: job B's results are bit-exact; the rogue received no frame from
# the xina port (nftables counts on its interface); every rogue packet is
# counted under its reason with the exact number sent (drop_auth,
# drop_member, and for the replays of job A's completed rounds
# retrans_answered or stale, answered to member 0 where it was learned;
# the replayed join, member 0's latest, is answered again, to member 0);
# no rogue packet was added, completed a round, or moved a member.

. "$(dirname "$0")/lib.sh"
require_root
require_cmd jq nft python3 "$O/xinactl" "$O/xina-allreduce"
. "$XINA_ROOT/scripts/rack.sh"

rack_test_init xr
ROGUE_PY=$XINA_ROOT/selftests/xina_rogue.py
N=2			# members; w2 is the rogue
ELEMS=256
SLOTS=32
JOB_A=31		# captured, then replayed
JOB_B=32		# runs under attack
FORGED=400		# per job and claimed rank, with a member's address
OWN=100			# per job, with the rogue's own address

jstat()
{
	xctl -j stats job "$1" | jq -r ".jobs[0].$2 // empty"
}

# member_loc JOB RANK: what the switch learned of the member
member_loc()
{
	xctl -j job show "$1" |
		jq -c ".jobs[0].members[$2] | [.mac, .ifindex, .rport]"
}

# Frames from the xina port that reach the rogue's interface, whoever
# they are addressed to (netdev ingress: before any address check).
rogue_count_init()
{
	ip netns exec "$RACK-w2" nft -f - <<-EOF
	table netdev xina_rogue {
		chain in {
			type filter hook ingress device eth0 priority 0;
			udp sport 9277 counter
		}
	}
	EOF
}

rogue_received()
{
	ip netns exec "$RACK-w2" nft -j list table netdev xina_rogue |
		jq '[.nftables[].rule? // empty | .expr[] | .counter? // empty | .packets] | add'
}

mac_of()	# mac_of NS DEV
{
	ip -n "$1" -j link show "$2" | jq -r '.[0].address'
}

rx_at_least()	# rx_at_least JOB N
{
	[ "$(jstat "$1" rx)" -ge "$2" ] 2>/dev/null
}

tap_begin 5
rack_up "$RACK" 3 >/dev/null && rack_xdp "$RACK" 3 "$PIN" &&
	rogue_count_init &&
	rack_job_add "$RACK" "$N" "$JOB_A" "$KEYFILE" "$SLOTS" "$ELEMS" "$PIN" &&
	rack_job_add "$RACK" "$N" "$JOB_B" "$KEYFILE" "$SLOTS" "$ELEMS" "$PIN"
if [ $? -ne 0 ]; then
	check_err 1 "rack with a rogue port could not be set up"
	log_test "rack"
	tap_end
fi
SW_MAC=$(mac_of "$RACK-sw" br0)
W0_MAC=$(mac_of "$RACK-w0" eth0)
W1_MAC=$(mac_of "$RACK-w1" eth0)
ROGUE_MAC=$(mac_of "$RACK-w2" eth0)

# ---- job A, captured from member 0 -------------------------------------------
# One datagram per packet (--no-gso): a GSO train is one frame on the tap.
ip netns exec "$RACK-w0" python3 "$ROGUE_PY" capture eth0 "$TMP/a.frames" \
	"$TMP/a.stop" > "$TMP/a.captured" &
cap=$!
# the socket is bound (and the file made) before the first frame
busywait 10 test -e "$TMP/a.frames"
check_err $? "the capture did not start"
rack_allreduce "$RACK" "$N" "$TMP/a" --job "$JOB_A" --slots "$SLOTS" \
	--elems "$ELEMS" --dtype i32 --bytes $((1 << 20)) --iters 2 \
	--timeout-ms 5000 --no-gso
check_err $? "job A: workers failed"
check_workers "$N" "$TMP/a"
touch "$TMP/a.stop"
wait "$cap"
CAPTURED=$(cat "$TMP/a.captured")
JOINS=$(python3 "$ROGUE_PY" count "$TMP/a.frames" 3)
LATEST=$(python3 "$ROGUE_PY" latest "$TMP/a.frames")
[ "${CAPTURED:-0}" -gt 0 ] 2>/dev/null && [ "${JOINS:-0}" -ge 1 ] 2>/dev/null
check_err $? "nothing captured from member 0 ($CAPTURED packets, $JOINS joins)"
log_test "job A: allreduce, $CAPTURED packets of member 0 captured ($JOINS join)"

# ---- job B under attack ---------------------------------------------------------
declare -A before
for s in rx contrib complete retrans_answered stale dup tx drop_auth \
	 drop_member drop_epoch drop_range drop_op join join_stale join_refused \
	 epoch_new; do
	before[A_$s]=$(jstat "$JOB_A" "$s")
done
loc0=$(member_loc "$JOB_A" 0)

rack_allreduce "$RACK" "$N" "$TMP/b" --job "$JOB_B" --slots "$SLOTS" \
	--elems "$ELEMS" --dtype f32 --bytes $((8 << 20)) --iters 3 \
	--timeout-ms 5000 &
runner=$!
rogue()
{
	ip netns exec "$RACK-w2" python3 "$ROGUE_PY" "$@"
}
{
	for job in "$JOB_B" "$JOB_A"; do
		rogue forge eth0 "$SW_MAC" "$W0_MAC" "$(rack_worker_ip 0)" \
			"$job" 0 "$FORGED" "$job"
		rogue forge eth0 "$SW_MAC" "$W1_MAC" "$(rack_worker_ip 1)" \
			"$job" 1 "$FORGED" $((job + 1))
		rogue forge eth0 "$SW_MAC" "$ROGUE_MAC" "$(rack_worker_ip 2)" \
			"$job" 0 "$OWN" $((job + 2))
	done
	rogue replay eth0 "$TMP/a.frames"
} > "$TMP/rogue.out" 2>&1
rogue_rc=$?
wait "$runner"
check_err $? "job B: workers failed under attack"
check_workers "$N" "$TMP/b"
check_err "$rogue_rc" "the rogue could not send: $(tail -n2 "$TMP/rogue.out")"
log_test "job B: allreduce bit-exact while a rogue sprays and replays"

# The rogue's packets are all in once job A saw every one of its own.
want_rx=$((before[A_rx] + 2 * FORGED + OWN + CAPTURED))
busywait 10 rx_at_least "$JOB_A" "$want_rx"
check_err $? "job A: rx $(jstat "$JOB_A" rx), want $want_rx"
[ "$(jstat "$JOB_A" rx)" -eq "$want_rx" ]
check_err $? "job A: rx $(jstat "$JOB_A" rx), want exactly $want_rx"

# ---- every rogue packet under its reason ---------------------------------------------
for c in drop_auth=$((2 * FORGED)) drop_member=$OWN drop_epoch=0 \
	 drop_range=0 drop_op=0; do
	got=$(jstat "$JOB_B" "${c%=*}")
	[ "$got" = "${c#*=}" ]
	check_err $? "job B: ${c%=*} is $got, want ${c#*=}"
done
log_test "job B: forged tags counted as drop_auth ($((2 * FORGED))), the rogue's own address as drop_member ($OWN)"

A_answered=$(( $(jstat "$JOB_A" retrans_answered) - before[A_retrans_answered] ))
A_stale=$(( $(jstat "$JOB_A" stale) - before[A_stale] ))
# member 0's join with its latest nonce is answered again (join), any
# older one is stale
for c in drop_auth=$((2 * FORGED)) drop_member=$OWN contrib=0 complete=0 \
	 dup=0 drop_epoch=0 drop_range=0 drop_op=0 join=$LATEST \
	 join_stale=$((JOINS - LATEST)) join_refused=0 epoch_new=0; do
	name=${c%=*}
	now=$(jstat "$JOB_A" "$name")
	was=${before[A_$name]}
	got=$((now - was))
	[ "$got" = "${c#*=}" ]
	check_err $? "job A: $name rose by $got, want ${c#*=}"
done
[ $((A_answered + A_stale)) -eq $((CAPTURED - JOINS)) ]
check_err $? "job A: $((CAPTURED - JOINS)) contributions replayed, $A_answered answered + $A_stale stale"
# each answer and each join reply is one copy, to member 0 (where it was
# learned)
A_tx=$(( $(jstat "$JOB_A" tx) - before[A_tx] ))
[ "$A_tx" -eq $((A_answered + LATEST)) ]
check_err $? "job A: tx rose by $A_tx, want $((A_answered + LATEST))"
[ "$(member_loc "$JOB_A" 0)" = "$loc0" ]
check_err $? "job A: member 0 moved: $loc0 -> $(member_loc "$JOB_A" 0)"
log_test "job A: $CAPTURED exact replays never added ($A_answered answered to member 0, $A_stale stale, $LATEST join answered again), member 0 not moved"

got=$(rogue_received)
# a number: no counter found (null) is no pass
[[ "$got" =~ ^[0-9]+$ ]] && [ "$got" -eq 0 ]
check_err $? "the rogue received '$got' frames from the xina port"
log_test "the rogue received nothing from the xina port"

tap_end
