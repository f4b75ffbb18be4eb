#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# libxina's host fallback ring (user/lib/libxina_ring.c) between the
# workers of a rack of network namespaces, over TCP, without a switch:
# every (dtype, op) pair of the wire against a reference each rank
# computes element by element (selftests/xina_ringtest.c), with and without
# blocks a switch had answered before it went away ("done" blocks that the
# others hold garbage for), with steps of one message and of several (a
# segment travels in messages of up to 256 KiB), and what a ring must
# cost: each rank sends 2 (W - 1) / W of each tensor, framing and tags at
# most 2% on top.
#
# Attack surface: a rogue with another key that connects first, claiming
# the previous rank, is refused at both ends (its own error names the key)
# and the ring still completes; so does a connection that never speaks.
# An attacker on the path (selftests/xina_tamper.py, relaying rank 0's
# connection to rank 1) that flips one bit of a message's words fails the
# call at rank 1 with the message named; the same relay flipping nothing
# changes nothing.

. "$(dirname "$0")/lib.sh"
require_root
require_cmd "$O/xinactl" "$O/selftests/xina_ringtest" python3
. "$XINA_ROOT/scripts/rack.sh"

rack_test_init xr
N=3
PORT=7301
RT=$O/selftests/xina_ringtest

peers()
{
	rack_ring_addrs "$N" "$PORT"
}

# ring RUN ARGS...: ranks 0..N-1 at once, each in its namespace; outputs in
# $TMP/RUN.rI.out, exit statuses in $TMP/RUN.rI.rc.
ring()
{
	local run=$1 i

	shift
	for ((i = 0; i < N; i++)); do
		( ip netns exec "$RACK-w$i" "$RT" -r "$i" -w "$N" -p "$(peers)" \
			-k "$KEYFILE" -j 7 "$@" >"$TMP/$run.r$i.out" 2>&1
		  echo $? >"$TMP/$run.r$i.rc" ) &
	done
	wait
}

# ring_ok RUN: every rank passed every pair (25 checks each).
ring_ok()
{
	local run=$1 i n

	for ((i = 0; i < N; i++)); do
		n=$(grep -c '^ok ' "$TMP/$run.r$i.out")
		if [ "$(cat "$TMP/$run.r$i.rc")" != 0 ] || [ "$n" -ne 25 ] ||
		   grep -q '^not ok' "$TMP/$run.r$i.out"; then
			check_err 1 "$run rank $i: $n of 25 ok; $(grep -m1 -E '^not ok|Bail' "$TMP/$run.r$i.out")"
			return
		fi
	done
}

# stat_of RUN RANK FIELD: from the "# ring tx ..." line.
stat_of()
{
	awk -v f="$3" '/^# ring tx/ { for (i = 3; i < NF; i++) if ($i == f) print $(i + 1) }' \
		"$TMP/$1.r$2.out"
}

tap_begin 8
rack_up "$RACK" "$N" >/dev/null
check_err $? "rack could not be set up"
log_test "rack of $N namespaces"

ring plain -n 10001 -b 256
ring_ok plain
log_test "every (dtype, op) pair: $N ranks, 10001 words in blocks of 256, exact"

ring done -n 20002 -b 512 -d
ring_ok done
log_test "blocks a switch answered before it went away are taken as they are"

# 196 blocks of 2048 words, the last one short: 65-66 blocks a segment,
# three messages of at most 32 blocks in every step
ring multi -n 400003 -b 2048 -d
ring_ok multi
log_test "segments of several messages, done blocks among them: every pair exact"

for ((i = 0; i < N; i++)); do
	tx=$(stat_of plain "$i" tx)
	ideal=$(stat_of plain "$i" ideal)
	if ! awk -v t="$tx" -v i="$ideal" 'BEGIN { exit !(t >= i && t <= 1.02 * i) }'; then
		check_err 1 "rank $i sent $tx bytes, a ring's share is $ideal"
	fi
	log_info "rank $i: sent $tx bytes, a ring's share $ideal ($(awk -v t="$tx" -v i="$ideal" 'BEGIN { printf "%.4f", t / i }')x)"
done
log_test "each rank sends a ring's share of the data, at most 2% on top"

# The rogue takes worker 1's place as rank 0 towards rank 1: another key
# file, its own address.  It starts first, with rank 1 only, so that its
# connection is in rank 1's queue before the real rank 0's; a silent
# connection (bash's /dev/tcp) waits there too.
rack_up "$RACK" 4 >/dev/null
check_err $? "rack could not be set up again with a fourth namespace"
"$O/xinactl" genkey "$TMP/rogue.key" || check_err 1 "genkey"
rogue_peers="$(rack_worker_ip 3):$PORT,$(peers | cut -d, -f2-)"
( ip netns exec "$RACK-w1" "$RT" -r 1 -w "$N" -p "$(peers)" -k "$KEYFILE" \
	-j 7 -n 4096 >"$TMP/rogue.r1.out" 2>&1; echo $? >"$TMP/rogue.r1.rc" ) &
rank1_listens()
{
	ip netns exec "$RACK-w1" ss -Hltn "sport = :$PORT" | grep -q LISTEN
}
busywait 5 rank1_listens
check_err $? "rank 1 never listened"
ip netns exec "$RACK-w3" bash -c "exec 3<>/dev/tcp/$(rack_worker_ip 1)/$PORT; sleep 30" &
silent=$!
ip netns exec "$RACK-w3" "$RT" -r 0 -w "$N" -p "$rogue_peers" \
	-k "$TMP/rogue.key" -j 7 -n 4096 -t 3000 >"$TMP/rogue.out" 2>&1 &
rogue=$!
sleep 0.5
for i in 0 2; do
	( ip netns exec "$RACK-w$i" "$RT" -r "$i" -w "$N" -p "$(peers)" \
		-k "$KEYFILE" -j 7 -n 4096 >"$TMP/rogue.r$i.out" 2>&1
	  echo $? >"$TMP/rogue.r$i.rc" ) &
done
wait $rogue
rogue_rc=$?
kill "$silent" 2>/dev/null
wait
sed -i 's/^/#   /' "$TMP/rogue.out"
cat "$TMP/rogue.out"
[ "$rogue_rc" -ne 0 ] && grep -q "does not hold job 7's key" "$TMP/rogue.out"
check_err $? "the rogue was not refused with the key named (exit $rogue_rc)"
ring_ok rogue
rej=$(stat_of rogue 1 rejected)
log_info "rank 1 refused $rej connections"
[ "${rej:-0}" -ge 2 ]
check_err $? "rank 1 refused ${rej:-0} connections, expected the rogue's and the silent one"
log_test "a rogue without the key and a silent connection are refused, the ring completes"

# relay_listening PORT: xina_tamper.py listens on PORT in the fourth
# namespace.
relay_listening()
{
	ip netns exec "$RACK-w3" ss -Hltn "sport = :$1" | grep -q LISTEN
}

# ring_relayed RUN FLIP_AT: the ring of 400003 words, rank 0's connection
# to rank 1 through xina_tamper.py in the fourth namespace; its report in
# $TMP/RUN.relay.
ring_relayed()
{
	local run=$1 relay=$(rack_worker_ip 3):$((PORT + 1)) pid i

	ip netns exec "$RACK-w3" python3 "$XINA_ROOT/selftests/xina_tamper.py" \
		"$relay" "$(rack_worker_ip 1):$PORT" "$2" >"$TMP/$run.relay" 2>&1 &
	pid=$!
	busywait 5 relay_listening "$((PORT + 1))"
	check_err $? "$run: the relay is not listening after 5 s"
	for ((i = 0; i < N; i++)); do
		local p=$(peers)

		[ "$i" = 0 ] && p="$(rack_worker_ip 0):$PORT,$relay,$(rack_worker_ip 2):$PORT"
		( ip netns exec "$RACK-w$i" "$RT" -r "$i" -w "$N" -p "$p" \
			-k "$KEYFILE" -j 7 -n 400003 -b 2048 -t 3000 \
			>"$TMP/$run.r$i.out" 2>&1
		  echo $? >"$TMP/$run.r$i.rc" ) &
	done
	wait
	log_info "$(cat "$TMP/$run.relay")"
}

ring_relayed relay -1
ring_ok relay
grep -q 'flipped 0' "$TMP/relay.relay"
check_err $? "the relay did not run: $(cat "$TMP/relay.relay")"
log_test "through a relay on the path that changes nothing: every pair exact"

# 200000 bytes into rank 0's stream: in the words of its first message
# (the handshake is 64 bytes, a message 262,200)
ring_relayed flip 200000
grep -q 'flipped 1' "$TMP/flip.relay"
check_err $? "the relay flipped nothing: $(cat "$TMP/flip.relay")"
[ "$(cat "$TMP/flip.r1.rc")" != 0 ] &&
	grep -q 'message 0 from rank 0 does not verify' "$TMP/flip.r1.out"
check_err $? "rank 1 took the altered message (exit $(cat "$TMP/flip.r1.rc")): $(grep -m1 -E '^not ok|^ok' "$TMP/flip.r1.out")"
log_info "rank 1: $(grep -m1 '^not ok' "$TMP/flip.r1.out")"
log_test "one bit flipped on the path: rank 1 refuses the message and the call fails"

tap_end
