#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The join handshake through the XDP switch (map backend), as a worker
# sees it (include/uapi/linux/xina.h, "Join handshake"; libxina.h):
# - each refusal fails xina_open() with its error, naming the reason, at
#   once (the switch answers within a round trip; the join timeout is far
#   longer): another job's key file (bad key; before the switch ever saw
#   the member, the reply goes back out of the port the join came in on,
#   and after it, to where the member was learned), more slots or elements
#   than the job's (mismatch: both sides' numbers).  The first bad key's
#   reply leaves by XDP_TX, which a veth delivers only to a peer that runs
#   an XDP program itself (as on a NIC, where no such thing is needed):
#   worker 0's end gets xdp_pass for it;
# - a job the switch does not have, and a rank sent from another address
#   than its own, get no answer at all: the error says what can cause
#   that and where to look (no_job, drop_member rise);
# - all workers killed in the middle of an allreduce and a new run started
#   at once, without "xinactl job del" and "job add": told busy first (a
#   round completed within XINA_JOIN_BUSY_MS), then the new run opens a
#   new epoch and completes;
# - the old run's packets, captured on a member's interface and replayed
#   byte for byte afterwards, are all dropped as drop_epoch, its join as
#   join_stale; a replay of the new run's join is answered again
#   (join) and changes nothing: epoch, joined, epoch_new, completions;
# - the job deleted and added again with the same key file: a join made
#   two minutes before (what a capture from the earlier job replays) is
#   join_stale in the new one, unanswered, and changes nothing; one made
#   30 s before (a worker's clock a little behind the switch's) joins,
#   and a run completes.

. "$(dirname "$0")/lib.sh"
require_root
require_cmd jq python3 "$O/xinactl" "$O/xina-allreduce" \
	"$O/selftests/xdp_pass.bpf.o"
. "$XINA_ROOT/scripts/rack.sh"

rack_test_init xjn
ROGUE_PY=$XINA_ROOT/selftests/xina_rogue.py
PEER_PY=$XINA_ROOT/selftests/xina_swagg_peer.py
N=3
SLOTS=32
ELEMS=256
JOB=41
TIMEOUT_MS=4000		# the join timeout of the refused workers
REFUSED_MS=2000		# they fail well before it (process start included)
SILENT_MS=1000		# the join timeout where no answer comes
T_CONTRIB=1		# xina packet types in a capture
T_JOIN=3

jstat()		# jstat JOB NAME
{
	xctl -j stats job "$1" | jq -r ".jobs[0].$2 // empty"
}

gstat()
{
	xctl -j stats | jq -r ".switch.$1 // empty"
}

jshow()		# jshow JOB FIELD: of "job show"
{
	xctl -j job show "$1" | jq -r ".jobs[0].$2 // empty"
}

# one RANK NS OUT ARGS...: one xina-allreduce as rank RANK of job JOB in
# worker namespace NS (its own address), 4 KiB once; its exit status in
# OUT.rc, how long it ran in OUT.ms.
one()
{
	local r=$1 ns=$2 out=$3 t0 t1

	shift 3
	t0=$(date +%s%N)
	ip netns exec "$RACK-w$ns" "$O/xina-allreduce" --switch "$RACK_SWITCH_IP" \
		--bind "$(rack_worker_ip "$ns"):$RACK_WORKER_PORT" --rank "$r" \
		--workers "$N" --job "$JOB" --slots "$SLOTS" --elems "$ELEMS" \
		--dtype i32 --bytes 4096 --iters 1 --json "$@" \
		>"$out.json" 2>"$out.err"
	echo $? >"$out.rc"
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000)) >"$out.ms"
}

# refused OUT WHAT: the worker failed, at once, saying WHAT.
refused()
{
	local out=$1 what=$2

	[ "$(cat "$out.rc")" != 0 ]
	check_err $? "the worker did not fail: $(tail -n1 "$out.err")"
	grep -qF -- "$what" "$out.err"
	check_err $? "the error does not say '$what': $(tail -n1 "$out.err")"
	[ "$(cat "$out.ms")" -lt "$REFUSED_MS" ]
	check_err $? "refused after $(cat "$out.ms") ms, want less than $REFUSED_MS (join timeout $TIMEOUT_MS ms)"
}

# xina_running NS: pids of the xina-allreduce processes in worker NS.
xina_running()
{
	local p

	for p in $(ip netns pids "$RACK-w$1"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = xina-allreduce ] && echo "$p"
	done
}

# gone PID...: none of these processes runs (exited, or a zombie: its
# sockets are closed either way).
gone()
{
	local p

	for p in "$@"; do
		[ -e "/proc/$p" ] && ! grep -q '^State:.*zombie' "/proc/$p/status" 2>/dev/null &&
			return 1
	done
	return 0
}

job_completes()
{
	[ "$(jstat "$JOB" complete)" -ge "$1" ] 2>/dev/null
}

rx_at_least()
{
	[ "$(jstat "$JOB" rx)" -ge "$1" ] 2>/dev/null
}

# capture NS NAME / capture_stop NAME: xina frames member NS sends, into
# $TMP/NAME.frames (xina_rogue.py capture).
capture()
{
	ip netns exec "$RACK-w$1" python3 "$ROGUE_PY" capture eth0 \
		"$TMP/$2.frames" "$TMP/$2.stop" >"$TMP/$2.captured" &
	eval "cap_$2=$!"
	busywait 10 test -e "$TMP/$2.frames"
}

capture_stop()
{
	touch "$TMP/$1.stop"
	eval "wait \$cap_$1"
}

replay()	# replay NS NAME TYPE: frames of TYPE, byte for byte
{
	ip netns exec "$RACK-w$1" python3 "$ROGUE_PY" replay eth0 \
		"$TMP/$2.frames" "$3"
}

count()		# count NAME TYPE: frames of TYPE in the capture
{
	python3 "$ROGUE_PY" count "$TMP/$1.frames" "$2"
}

tap_begin 10
rack_up "$RACK" "$N" >/dev/null && rack_xdp "$RACK" "$N" "$PIN" &&
	rack_job_add "$RACK" "$N" "$JOB" "$KEYFILE" "$SLOTS" "$ELEMS" "$PIN"
if [ $? -ne 0 ]; then
	check_err 1 "rack could not be set up"
	log_test "rack"
	tap_end
fi
"$O/xinactl" genkey "$TMP/other.key" >/dev/null
EPOCH0=$(jshow "$JOB" epoch)
[ -n "$EPOCH0" ] && [ "$EPOCH0" != 0 ] && [ "$(jshow "$JOB" joined)" = 0 ]
check_err $? "job $JOB: epoch '$EPOCH0', joined $(jshow "$JOB" joined): want a random one, nobody"
log_test "job $JOB: a fresh epoch ($EPOCH0) nobody joined"

# ---- bad key, mismatch -------------------------------------------------------
SW="$RACK_SWITCH_IP:9277"
ip -n "$RACK-w0" link set dev eth0 xdp obj "$O/selftests/xdp_pass.bpf.o" sec xdp
check_err $? "could not attach xdp_pass to worker 0's end"
one 0 0 "$TMP/badkey" --key-file "$TMP/other.key" --timeout-ms $TIMEOUT_MS
ip -n "$RACK-w0" link set dev eth0 xdp off
refused "$TMP/badkey" "job $JOB rank 0: the switch $SW says the key file $TMP/other.key is not the job's (bad key)"
[ "$(jstat "$JOB" drop_auth)" -ge 1 ] && [ "$(jstat "$JOB" join)" = 0 ] &&
	[ "$(jshow "$JOB" joined)" = 0 ] &&
	[ "$(jshow "$JOB" 'members[0].ifindex')" = 0 ]
check_err $? "drop_auth $(jstat "$JOB" drop_auth), join $(jstat "$JOB" join), joined $(jshow "$JOB" joined), member 0 at ifindex $(jshow "$JOB" 'members[0].ifindex'): want >= 1, 0, 0, 0"
log_test "bad key, member never seen: refused in $(cat "$TMP/badkey.ms") ms (the reply back out of its port), counted drop_auth, nothing learned"

one 0 0 "$TMP/slots" --slots $((SLOTS * 2)) --timeout-ms $TIMEOUT_MS
refused "$TMP/slots" "job $JOB rank 0: the switch $SW refuses this worker's shape (mismatch): the job has $SLOTS slots of $ELEMS elements, this worker asked for $((SLOTS * 2)) slots of $ELEMS elements"
one 1 1 "$TMP/elems" --elems $((ELEMS * 2)) --timeout-ms $TIMEOUT_MS
refused "$TMP/elems" "job $JOB rank 1: the switch $SW refuses this worker's shape (mismatch): the job has $SLOTS slots of $ELEMS elements, this worker asked for $SLOTS slots of $((ELEMS * 2)) elements"
[ "$(jstat "$JOB" join_refused)" -ge 2 ] && [ "$(jshow "$JOB" joined)" = 0 ]
check_err $? "join_refused $(jstat "$JOB" join_refused), joined $(jshow "$JOB" joined): want >= 2, 0"
log_test "mismatch: more slots ($(cat "$TMP/slots.ms") ms), more elements ($(cat "$TMP/elems.ms") ms): refused with both sides' numbers"

# ---- no answer -----------------------------------------------------------------
no_job0=$(gstat no_job)
member0=$(jstat "$JOB" drop_member)
JOB=$((JOB + 100)) one 0 0 "$TMP/nojob" --timeout-ms $SILENT_MS
# rank 2 from member 0's address: not the rank's
one 2 0 "$TMP/notme" --timeout-ms $SILENT_MS
for w in nojob notme; do
	[ "$(cat "$TMP/$w.rc")" != 0 ]
	check_err $? "$w: the worker did not fail"
	[ "$(cat "$TMP/$w.ms")" -ge $SILENT_MS ] && [ "$(cat "$TMP/$w.ms")" -lt $((SILENT_MS + 1500)) ]
	check_err $? "$w: gave up after $(cat "$TMP/$w.ms") ms, join timeout $SILENT_MS ms"
	for what in "no answer to the join from switch $SW in $SILENT_MS ms" \
		    "the switch unreachable" "predates the join handshake" \
		    "no_job counts joins for a job it does not have" \
		    "drop_member those from an address the rank is not configured for"; do
		grep -qF -- "$what" "$TMP/$w.err"
		check_err $? "$w: the error does not say '$what': $(tail -n1 "$TMP/$w.err")"
	done
done
grep -qF "no job $((JOB + 100)) there" "$TMP/nojob.err" &&
	grep -qF "rank 2 not configured for this host's address $(rack_worker_ip 0) (port $RACK_WORKER_PORT)" "$TMP/notme.err"
check_err $? "the errors do not name the job and the address: $(tail -n1 "$TMP/nojob.err") / $(tail -n1 "$TMP/notme.err")"
[ "$(gstat no_job)" -gt "$no_job0" ] && [ "$(jstat "$JOB" drop_member)" -gt "$member0" ]
check_err $? "no_job $no_job0 -> $(gstat no_job), drop_member $member0 -> $(jstat "$JOB" drop_member): want both to rise"
log_test "no answer: no such job, a rank from another address: the error lists the causes and names no_job, drop_member"

# ---- a run, then a bad key where the member was learned -------------------------
rack_allreduce "$RACK" "$N" "$TMP/run0" --job "$JOB" --slots "$SLOTS" \
	--elems "$ELEMS" --dtype i32 --bytes $((1 << 20)) --iters 2 --timeout-ms 5000
check_err $? "the first run failed"
check_workers "$N" "$TMP/run0"
[ "$(jshow "$JOB" epoch)" = "$EPOCH0" ] && [ "$(jshow "$JOB" joined)" = "$N" ] &&
	[ "$(jq -r .epoch "$TMP/run0/w0.json")" = "$EPOCH0" ]
check_err $? "after the first run: epoch $(jshow "$JOB" epoch), joined $(jshow "$JOB" joined), the workers' $(jq -r .epoch "$TMP/run0/w0.json"): want $EPOCH0, $N"
one 0 0 "$TMP/badkey2" --key-file "$TMP/other.key" --timeout-ms $TIMEOUT_MS
refused "$TMP/badkey2" "job $JOB rank 0: the switch $SW says the key file $TMP/other.key is not the job's (bad key)"
[ "$(jshow "$JOB" epoch)" = "$EPOCH0" ] && [ "$(jshow "$JOB" joined)" = "$N" ]
check_err $? "the bad key changed the job: epoch $(jshow "$JOB" epoch), joined $(jshow "$JOB" joined)"
log_test "a run in epoch $EPOCH0, joined $N; then a bad key, member learned: refused in $(cat "$TMP/badkey2.ms") ms, nothing changed"

# ---- all workers restarted mid-job -----------------------------------------------
# run A, captured on member 0 (one datagram per packet: a GSO train is one
# frame on the tap), killed in the middle of its allreduce
capture 0 a
check_err $? "the capture of run A did not start"
complete0=$(jstat "$JOB" complete)
rack_allreduce "$RACK" "$N" "$TMP/a" --job "$JOB" --slots "$SLOTS" \
	--elems "$ELEMS" --dtype i32 --bytes $((16 << 20)) --iters 50 \
	--timeout-ms 5000 --no-gso &
runner=$!
busywait 60 job_completes $((complete0 + 200))
check_err $? "run A never got going (complete $(jstat "$JOB" complete))"
# run A is a new run of the job's workers too: it opened an epoch
EPOCH_A=$(jshow "$JOB" epoch)
epoch_new_a=$(jstat "$JOB" epoch_new)
[ -n "$EPOCH_A" ] && [ "$EPOCH_A" != "$EPOCH0" ]
check_err $? "run A is in epoch $EPOCH_A, the first run was in $EPOCH0"
# B's capture from here (A's join is long past), A's until here
capture 0 b
check_err $? "the capture of run B did not start"
capture_stop a
# Run B on the same job, no xinactl between the runs: its processes
# started now, held at a gate, and released as soon as A's are gone, so
# that B's joins come within XINA_JOIN_BUSY_MS of A's last round however
# long a process takes to start on a loaded host.
RACK_GATE=$TMP/b.go rack_allreduce "$RACK" "$N" "$TMP/b" --job "$JOB" \
	--slots "$SLOTS" --elems "$ELEMS" --dtype i32 --bytes $((1 << 20)) \
	--iters 3 --timeout-ms 5000 &
runner_b=$!
a_pids=()
for ((i = 0; i < N; i++)); do
	# shellcheck disable=SC2207
	a_pids+=($(xina_running $i))
done
kill -9 "${a_pids[@]}" 2>/dev/null
# gone, their ports with them: then B
busywait 10 gone "${a_pids[@]}"
touch "$TMP/b.go"
wait "$runner"
[ $? -eq "$N" ]
check_err $? "not all of run A's workers were killed"
[ "$(grep -c '"verified":true' "$TMP"/a/w*.json 2>/dev/null | awk -F: '{ s += $2 } END { print s + 0 }')" = 0 ]
check_err $? "a worker of run A finished: it was not killed mid-job"

wait "$runner_b"
check_err $? "run B failed"
check_workers "$N" "$TMP/b"
capture_stop b
EPOCH1=$(jshow "$JOB" epoch)
busy=$(grep -l "the switch says the job is busy" "$TMP"/b/w*.err | wc -l)
[ "$EPOCH1" != "$EPOCH_A" ] && [ "$(jshow "$JOB" joined)" = "$N" ] &&
	[ "$(jstat "$JOB" epoch_new)" = $((epoch_new_a + 1)) ]
check_err $? "run B: epoch $EPOCH_A -> $EPOCH1, joined $(jshow "$JOB" joined), epoch_new $epoch_new_a -> $(jstat "$JOB" epoch_new): want a new one, $N, one more"
for ((i = 0; i < N; i++)); do
	[ "$(jq -r .epoch "$TMP/b/w$i.json")" = "$EPOCH1" ]
	check_err $? "run B's worker $i is in epoch $(jq -r .epoch "$TMP/b/w$i.json"), the job in $EPOCH1"
done
[ "$busy" -gt 0 ] && [ "$(jstat "$JOB" join_refused)" -gt 2 ]
check_err $? "run B was never told busy ($busy workers said so, join_refused $(jstat "$JOB" join_refused))"
log_test "all workers killed mid-allreduce (epoch $EPOCH_A), a new run at once: busy ($busy workers told), then epoch $EPOCH1, completed; no job del/add"

# ---- the old run's packets, replayed -----------------------------------------------
K_A=$(count a $T_CONTRIB)
J_A=$(count a $T_JOIN)
# Rank 0 of run A joined once, but may have sent its join again (the
# same nonce) when the reply was late: every copy must be join_stale.
[ "$K_A" -gt 0 ] && [ "$J_A" -ge 1 ]
check_err $? "run A: $K_A contributions and $J_A joins captured, want some and at least 1"
declare -A before
for s in rx contrib complete drop_epoch join join_stale epoch_new stale \
	 retrans_answered drop_auth; do
	before[$s]=$(jstat "$JOB" "$s")
done
sent=$(replay 0 a $T_CONTRIB)
sent_j=$(replay 0 a $T_JOIN)
busywait 10 rx_at_least $((before[rx] + K_A + J_A))
check_err $? "the switch saw $(( $(jstat "$JOB" rx) - before[rx] )) of $((K_A + J_A)) replayed packets"
for c in drop_epoch=$K_A join_stale=$J_A contrib=0 complete=0 join=0 \
	 epoch_new=0 stale=0 retrans_answered=0 drop_auth=0; do
	got=$(( $(jstat "$JOB" "${c%=*}") - before[${c%=*}] ))
	[ "$got" = "${c#*=}" ]
	check_err $? "${c%=*} rose by $got, want ${c#*=}"
done
[ "$sent" = "$K_A" ] && [ "$sent_j" = "$J_A" ]
check_err $? "replayed $sent and $sent_j frames, want $K_A and $J_A"
[ "$(jshow "$JOB" epoch)" = "$EPOCH1" ] && [ "$(jshow "$JOB" joined)" = "$N" ]
check_err $? "the replay changed the job: epoch $(jshow "$JOB" epoch), joined $(jshow "$JOB" joined)"
log_test "run A's $K_A contributions replayed after run B: all drop_epoch; its join join_stale; nothing changed"

# ---- the new run's join, replayed ------------------------------------------------
# Rank 0 of run B may have sent several joins (a new one after each busy
# reply, and retransmissions): those with its latest nonce are answered
# again, the older ones are stale.
J_B=$(count b $T_JOIN)
L_B=$(python3 "$ROGUE_PY" latest "$TMP/b.frames")
[ "$J_B" -ge 1 ] && [ "$L_B" -ge 1 ] && [ "$L_B" -le "$J_B" ]
check_err $? "run B: $J_B joins of rank 0 captured, $L_B with its latest nonce, want at least 1 of each"
for s in rx join join_stale join_refused epoch_new complete; do
	before[$s]=$(jstat "$JOB" "$s")
done
loc0=$(xctl -j job show "$JOB" | jq -c '.jobs[0].members[0] | [.mac, .ifindex, .rport]')
replay 0 b $T_JOIN >/dev/null
busywait 10 rx_at_least $((before[rx] + J_B))
check_err $? "the switch saw $(( $(jstat "$JOB" rx) - before[rx] )) of $J_B replayed joins"
for c in join=$L_B join_stale=$((J_B - L_B)) join_refused=0 epoch_new=0 \
	 complete=0; do
	got=$(( $(jstat "$JOB" "${c%=*}") - before[${c%=*}] ))
	[ "$got" = "${c#*=}" ]
	check_err $? "${c%=*} rose by $got, want ${c#*=}"
done
[ "$(jshow "$JOB" epoch)" = "$EPOCH1" ] && [ "$(jshow "$JOB" joined)" = "$N" ]
check_err $? "the replayed join changed the job: epoch $(jshow "$JOB" epoch), joined $(jshow "$JOB" joined)"
[ "$(xctl -j job show "$JOB" | jq -c '.jobs[0].members[0] | [.mac, .ifindex, .rport]')" = "$loc0" ]
check_err $? "the replayed join moved member 0"
log_test "run B's $J_B join(s) of rank 0 replayed: the $L_B with its latest nonce answered again (join), the others join_stale; epoch, joined, location unchanged"

# ---- the job deleted and added again, the same key file ----------------------------
# aged_join AGE: rank 0's join, its nonce the clock AGE seconds ago, from
# member 0's address: "reply STATUS EPOCH" or "none" (sent 3 times).
aged_join()
{
	ip netns exec "$RACK-w0" python3 "$PEER_PY" join "$KEYFILE" \
		"$RACK_SWITCH_IP:9277" "$JOB" 0 \
		"$(rack_worker_ip 0):$RACK_WORKER_PORT" "$1"
}

xctl job del "$JOB" >/dev/null &&
	rack_job_add "$RACK" "$N" "$JOB" "$KEYFILE" "$SLOTS" "$ELEMS" "$PIN"
check_err $? "could not delete and add job $JOB again"
EPOCH2=$(jshow "$JOB" epoch)
got=$(aged_join 120)
[ "$got" = none ] && [ "$(jstat "$JOB" join_stale)" = 3 ] &&
	[ "$(jstat "$JOB" join)" = 0 ] && [ "$(jstat "$JOB" join_refused)" = 0 ] &&
	[ "$(jshow "$JOB" joined)" = 0 ] && [ "$(jshow "$JOB" epoch)" = "$EPOCH2" ] &&
	[ "$(jshow "$JOB" 'members[0].ifindex')" = 0 ]
check_err $? "a join 120 s older than the job: '$got', join_stale $(jstat "$JOB" join_stale), join $(jstat "$JOB" join), joined $(jshow "$JOB" joined), member 0 at ifindex $(jshow "$JOB" 'members[0].ifindex'): want none, 3, 0, 0, 0"
log_test "job $JOB deleted and added again with the same key: a join made 120 s before (a capture's replay) is join_stale x3, unanswered, nothing learned"

got=$(aged_join 30)
[ "$got" = "reply 0 $EPOCH2" ] && [ "$(jshow "$JOB" joined)" = 1 ] &&
	[ "$(jstat "$JOB" join_stale)" = 3 ]
check_err $? "a join 30 s older than the job: '$got', joined $(jshow "$JOB" joined), join_stale $(jstat "$JOB" join_stale): want 'reply 0 $EPOCH2', 1, 3"
# The workers' run on a job added afresh: rank 0 joined the epoch above
# naming no run, and its worker's join (naming the run) could, depending
# on the order the three joins arrive, open a new epoch under the others.
xctl job del "$JOB" >/dev/null &&
	rack_job_add "$RACK" "$N" "$JOB" "$KEYFILE" "$SLOTS" "$ELEMS" "$PIN"
check_err $? "could not delete and add job $JOB once more"
rack_allreduce "$RACK" "$N" "$TMP/c" --job "$JOB" --slots "$SLOTS" \
	--elems "$ELEMS" --dtype i32 --bytes $((1 << 20)) --iters 2 --timeout-ms 5000
check_err $? "the run after the re-add failed"
check_workers "$N" "$TMP/c"
log_test "a join 30 s older than the job (a clock a little behind) joins epoch $EPOCH2; the workers' run on the job added afresh completes"

tap_end
