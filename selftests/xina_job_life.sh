#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A job's life under traffic, on the map backend, as the README documents
# it:
# - "xinactl job del" while the workers run: the job stops aggregating at
#   once.  Its packets are counted as no_job by the switch, no result
#   reaches a worker any more, and the workers fail with a timeout.
# - A new run of workers on an old job, without "job del" and "job add":
#   the new workers' joins open a new epoch (the first one right after
#   the old run is told busy until the switch has seen no round for
#   XINA_JOIN_BUSY_MS), their slots start afresh at round 0, and the run
#   completes.

. "$(dirname "$0")/lib.sh"
require_root
require_cmd jq nft "$O/xinactl" "$O/xina-allreduce"
. "$XINA_ROOT/scripts/rack.sh"

rack_test_init xj
N=2
TIMEOUT_MS=2000

jstat()
{
	xctl -j stats job "$1" | jq -r ".jobs[0].$2 // empty"
}

gstat()
{
	xctl -j stats | jq -r ".switch.$1 // empty"
}

# Results (UDP from the xina port) received by all workers so far, counted
# by an nftables rule in each worker namespace.
count_results_init()
{
	local i

	for ((i = 0; i < N; i++)); do
		ip netns exec "$RACK-w$i" nft -f - <<-EOF || return 1
		table inet xina_results {
			chain in {
				type filter hook input priority 0; policy accept;
				udp sport 9277 counter
			}
		}
		EOF
	done
}

results()
{
	local i n=0 c

	for ((i = 0; i < N; i++)); do
		c=$(ip netns exec "$RACK-w$i" nft -j list table inet xina_results |
		    jq '[.nftables[].rule? // empty | .expr[] | .counter? // empty | .packets] | add')
		# no number (nft or jq failed, no counter): "?", which no
		# comparison below takes
		[[ "$c" =~ ^[0-9]+$ ]] || { echo "?"; return 1; }
		n=$((n + c))
	done
	echo "$n"
}

# all_timed_out DIR: every worker failed, each with a timeout.
all_timed_out()
{
	local dir=$1 i

	for ((i = 0; i < N; i++)); do
		grep -q 'timed out' "$dir/w$i.err"
		check_err $? "worker $i did not fail with a timeout: $(tail -n1 "$dir/w$i.err")"
	done
}

runner_done()
{
	! kill -0 "$runner" 2>/dev/null
}

job_completes()
{
	[ "$(jstat "$1" complete)" -ge "$2" ] 2>/dev/null
}

tap_begin 2
rack_up "$RACK" "$N" >/dev/null && rack_xdp "$RACK" "$N" "$PIN" &&
	count_results_init
if [ $? -ne 0 ]; then
	check_err 1 "rack could not be set up"
	log_test "rack"
	tap_end
fi

# ---- job deleted under traffic ---------------------------------------------
JOB=21
rack_job_add "$RACK" "$N" "$JOB" "$KEYFILE" 32 256 "$PIN"
check_err $? "job add $JOB failed"
# Far more than can finish before the delete.
rack_allreduce "$RACK" "$N" "$TMP/del" --job "$JOB" --key-file "$KEYFILE" --slots 32 \
	--elems 256 --dtype i32 --bytes $((64 << 20)) --iters 50 \
	--timeout-ms "$TIMEOUT_MS" &
runner=$!
busywait 30 job_completes "$JOB" 100
check_err $? "job $JOB never aggregated (complete=$(jstat "$JOB" complete))"
no_job0=$(gstat no_job)
xctl job del "$JOB"
check_err $? "job del $JOB failed"
xctl -j job show | jq -e --argjson j "$JOB" 'all(.jobs[]; .id != $j)' >/dev/null
check_err $? "job $JOB still listed after the delete"
# Results already on their way when the job went may still land; from
# here on the workers' retransmissions must go unanswered.
sleep 0.5
results0=$(results)
# They give up within their join timeout (4 x TIMEOUT_MS); if the job went
# on aggregating, they would run for minutes: stop them.
if ! busywait 30 runner_done; then
	check_err 1 "workers still running 30 s after the delete"
	for ((i = 0; i < N; i++)); do
		ip netns pids "$RACK-w$i" | xargs -r kill -9
	done
fi
wait $runner
fails=$?
results1=$(results)
no_job1=$(gstat no_job)
[ "$fails" -eq "$N" ]
check_err $? "$fails of $N workers failed, want all"
all_timed_out "$TMP/del"
# the counters count: the results of the 100 completions and more
[ "$results0" -ge "$((100 * N))" ] 2>/dev/null
check_err $? "only '$results0' results counted at the workers before the delete, want at least $((100 * N))"
[ "$results1" -eq "$results0" ] 2>/dev/null
check_err $? "$((results1 - results0)) results reached the workers after the delete"
[ "$((no_job1 - no_job0))" -ge "$N" ] 2>/dev/null
check_err $? "no_job went from '$no_job0' to '$no_job1', want at least $N more"
log_info "after the delete: $((no_job1 - no_job0)) packets counted as no_job, $((results1 - results0)) results received"
log_test "job deleted under traffic: no_job counted, no more results, workers time out"

# ---- a new run on an old job -------------------------------------------------
JOB=22
SLOTS=8
rack_job_add "$RACK" "$N" "$JOB" "$KEYFILE" "$SLOTS" 256 "$PIN"
check_err $? "job add $JOB failed"
epoch0=$(xctl -j job show "$JOB" | jq -r '.jobs[0].epoch')
# Three rounds of every slot per call, two calls: every slot is past round
# 4 (xina-allreduce adds a one-element barrier call per iteration).
rack_allreduce "$RACK" "$N" "$TMP/old" --job "$JOB" --key-file "$KEYFILE" \
	--slots "$SLOTS" --elems 256 --dtype i32 --bytes $((4 * 256 * SLOTS * 3)) \
	--iters 2 --timeout-ms 5000
check_err $? "the first run on job $JOB failed"
check_workers "$N" "$TMP/old"
complete0=$(jstat "$JOB" complete)
[ "$complete0" -ge $((SLOTS * 3 * 2)) ] 2>/dev/null
check_err $? "first run: $complete0 completions, want at least $((SLOTS * 3 * 2))"
epoch1=$(xctl -j job show "$JOB" | jq -r '.jobs[0].epoch')
[ "$epoch1" = "$epoch0" ] && [ "$(jq -r .epoch "$TMP/old/w0.json")" = "$epoch0" ]
check_err $? "the first run was in epoch $(jq -r .epoch "$TMP/old/w0.json"), the job's went from $epoch0 to $epoch1"
# A new run starts again at round 0, at once.
rack_allreduce "$RACK" "$N" "$TMP/new" --job "$JOB" --key-file "$KEYFILE" \
	--slots "$SLOTS" --elems 256 --dtype i32 --bytes $((4 * 256 * SLOTS)) \
	--iters 2 --timeout-ms 5000
check_err $? "the new run on job $JOB failed"
check_workers "$N" "$TMP/new"
complete1=$(jstat "$JOB" complete)
epoch2=$(xctl -j job show "$JOB" | jq -r '.jobs[0].epoch')
joined=$(xctl -j job show "$JOB" | jq -r '.jobs[0].joined')
# 2 iterations of a barrier and SLOTS blocks
[ "$complete1" -eq $((complete0 + 2 * (SLOTS + 1))) ] 2>/dev/null
check_err $? "the new run completed $((complete1 - complete0)) slot rounds, want $((2 * (SLOTS + 1)))"
[ "$epoch2" != "$epoch1" ] && [ "$(jq -r .epoch "$TMP/new/w0.json")" = "$epoch2" ] &&
	[ "$(jq -r .epoch "$TMP/new/w1.json")" = "$epoch2" ] && [ "$joined" = "$N" ]
check_err $? "new run: the job's epoch $epoch1 -> $epoch2 ($joined joined), the workers': $(jq -r .epoch "$TMP/new/w0.json") $(jq -r .epoch "$TMP/new/w1.json")"
# (join counts a lost reply's resend as well)
[ "$(jstat "$JOB" epoch_new)" = 1 ] && [ "$(jstat "$JOB" join)" -ge $((2 * N)) ]
check_err $? "epoch_new $(jstat "$JOB" epoch_new), join $(jstat "$JOB" join): want 1 and at least $((2 * N))"
log_info "new run: epoch $epoch1 -> $epoch2, complete $complete0 -> $complete1, busy replies: $(jstat "$JOB" join_refused)"
xctl job del "$JOB"
log_test "new run on an old job, no job del/add: a new epoch, the run completes"

tap_end
