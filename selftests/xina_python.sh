#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The Python package xina (user/python) in a rack of 4 workers with the XDP
# fast path: its mirror of libxina's structs and constants against the C
# header, int32 and float32 allreduce, sync and async, every dtype by every
# op (numpy arrays and torch tensors) against numpy's and torch's
# reduction, every error path with its message, and the PyTorch DDP
# communication hook against Gloo on a few steps, in float32 and bfloat16;
# the run the switch records (XINA_RUN_ID, else the hook's broadcast one).
# Every rank checks its own result (selftests/xina_python.py); the switch's
# counters must show exactly the packets the calls imply.

. "$(dirname "$0")/lib.sh"
require_root
require_cmd jq gcc /usr/bin/python3 "$O/xinactl" "$O/libxina.so.0"
. "$XINA_ROOT/scripts/rack.sh"

PY=/usr/bin/python3	# Debian's numpy and torch are built for it
for m in numpy torch; do
	if ! $PY -c "import $m" 2>/dev/null; then
		echo "1..0 # SKIP python3-$m not installed (scripts/deps.sh python)"
		exit "$ksft_skip"
	fi
done

rack_test_init xpy
N=4
SLOTS=32
ELEMS=256
KEY=$KEYFILE		# the jobs' key file (made by rack_test_init)
export PYTHONPATH=$XINA_ROOT/user/python:$XINA_ROOT/selftests
export XINA_LIBXINA=$O/libxina.so.0

stat_of()	# stat_of JOB NAME
{
	xctl -j stats job "$1" | jq -r ".jobs[0].$2 // empty"
}

run_of()	# run_of JOB: the run its current epoch's first joiner named
{
	xctl -j job show "$1" | jq -r '.jobs[0].run // empty'
}

# py_ranks JOB N DIR ARGS...: xina_python.py ARGS on ranks 0..N-1 at once,
# rank i in worker namespace i with the XINA_* environment of job JOB;
# DIR/wI.out gets its output.  Returns how many ranks failed.
py_ranks()
{
	local job=$1 n=$2 dir=$3 i fails=0
	local -a pids

	shift 3
	mkdir -p "$dir"
	for ((i = 0; i < n; i++)); do
		ip netns exec "$RACK-w$i" env XINA_SWITCH="$RACK_SWITCH_IP" \
			XINA_JOB="$job" XINA_RANK="$i" XINA_WORLD_SIZE="$n" \
			XINA_KEY_FILE="$KEY" XINA_SLOTS="$SLOTS" XINA_ELEMS="$ELEMS" \
			XINA_BIND="$(rack_worker_ip "$i"):$RACK_WORKER_PORT" \
			XINA_TIMEOUT_MS=5000 ${PY_ENV:-} \
			timeout 120 $PY "$XINA_ROOT/selftests/xina_python.py" "$@" \
			>"$dir/w$i.out" 2>&1 &
		pids[i]=$!
	done
	for ((i = 0; i < n; i++)); do
		wait "${pids[i]}" || fails=$((fails + 1))
	done
	return $fails
}

# ranks_ok N DIR: every rank printed PASS; its failure otherwise.
ranks_ok()
{
	local n=$1 dir=$2 i

	for ((i = 0; i < n; i++)); do
		if [ "$(tail -n1 "$dir/w$i.out")" != PASS ]; then
			check_err 1 "rank $i: $(grep -v '^ok:' "$dir/w$i.out" | tail -n4 | tr '\n' ' ')"
			return 1
		fi
	done
	return 0
}

# same_digests N DIR: the float32 results are bitwise identical on all ranks.
same_digests()
{
	local d

	d=$(cat "$1"/w*.out | grep -o 'digest [0-9a-f]*' | sort | uniq -c |
	    awk '{ print $1 }' | sort -u | tr '\n' ' ')
	[ "$d" = "$N " ]
	check_err $? "float32 digests differ between ranks (counts per digest: $d)"
}

# switch_completes JOB WANT: the switch completed WANT slots of JOB, each of
# N contributions: the calls went through the switch, nothing else did.
switch_completes()
{
	local job=$1 want=$2 complete contrib

	complete=$(stat_of "$job" complete)
	contrib=$(stat_of "$job" contrib)
	[ "$complete" = "$want" ] && [ "$contrib" = $((N * want)) ]
	check_err $? "switch: job $job complete=$complete contrib=$contrib, want $want and $((N * want))"
}

blocks()	# blocks ELEMENTS: packets of one int32 call
{
	echo $((($1 + ELEMS - 1) / ELEMS))
}

tap_begin 10

out=$($PY "$XINA_ROOT/selftests/xina_python.py" layout "${CC:-gcc}" "$XINA_ROOT" 2>&1)
check_err $? "$out"
log_info "$(grep '^ok:' <<<"$out")"
log_test "ctypes mirror of struct xina_opts, xina_worker_stats and the enums"

if ! { rack_up "$RACK" "$N" mtu "$RACK_FAST_MTU" >/dev/null &&
       rack_xdp "$RACK" "$N" "$PIN"; }; then
	check_err 1 "rack of $N workers could not be set up"
	log_test "rack"
	tap_end
fi

# sync: int32 sum, int32 max, float32 sum (its exponents agreed on in one
# int32 max call of its own) of n elements, and a block-sparse int32 sum;
# the ranks name the run XINA_RUN_ID (open_from_env), which the switch
# records for the epoch.
n=5000
run=3141592653
rack_job_add "$RACK" "$N" 1 "$KEY" "$SLOTS" "$ELEMS" "$PIN" >/dev/null
PY_ENV=XINA_RUN_ID=$run py_ranks 1 "$N" "$TMP/sync" sync "$n"
rc=$?
ranks_ok "$N" "$TMP/sync" && same_digests "$TMP/sync"
check_err $rc "$rc of $N ranks failed"
[ "$(run_of 1)" = "$run" ]
check_err $? "switch: job 1's epoch has run '$(run_of 1)', want XINA_RUN_ID=$run"
b=$(blocks "$n")
# and a sparse int32 sum: one call of its bitmap (a bit a block), then the
# blocks some rank holds non-zeros in (rank r in blocks b % 7 == r); then
# a dense float32 sum and a sparse one of the same arrays: the sparse one
# agrees on its union in the exponents' call (an exponent a block), and
# makes no bitmap call and no exponents' call of the union's own; then
# the int32 sparse sum again from the ranks' maps: its bitmap call and
# the same union.
union=0
for ((k = 0; k < b; k++)); do
	[ $((k % 7)) -lt "$N" ] && union=$((union + 1))
done
switch_completes 1 $((3 * b + $(blocks "$b") + $(blocks $(((b + 31) / 32))) + union +
		      b + $(blocks "$b") + $(blocks "$b") + union +
		      $(blocks $(((b + 31) / 32))) + union))
log_info "$(grep -h '^ok: float32' "$TMP/sync/w0.out")"
log_info "$(grep -h '^ok: sparse int32' "$TMP/sync/w0.out")"
log_info "$(grep -h '^ok: sparse float32' "$TMP/sync/w0.out")"
log_info "$(grep -h '^ok: sparse int32 sum with' "$TMP/sync/w0.out")"
log_test "sync: int32 sum and max exact, float32 sum within the bound, sparse int32 sum exact, sparse float32 sum bitwise the dense one's, the ranks' maps of their blocks, $N workers, run XINA_RUN_ID"

# async: four asyncio calls in flight, then four futures and a sync call
# that must wait for them.
rack_job_add "$RACK" "$N" 2 "$KEY" "$SLOTS" "$ELEMS" "$PIN" >/dev/null
py_ranks 2 "$N" "$TMP/async" async "$n"
rc=$?
ranks_ok "$N" "$TMP/async" && same_digests "$TMP/async"
check_err $rc "$rc of $N ranks failed"
grep -q '^ok: allreduce_async returned before the result existed' "$TMP/async/w0.out"
check_err $? "rank 0 did not show the async call returning early"
grep -q '^ok: allreduce_aio: 4 calls in flight at once' "$TMP/async/w0.out"
check_err $? "rank 0 did not show the asyncio calls in flight together"
switch_completes 2 $((2 * (b + b + $(blocks "$b") + $(blocks $((n + 1))) + 1) + 1))
log_test "async: asyncio and futures in flight, in order with a sync call, results right"

# types: every dtype by every op, numpy and torch, sync, then the torch
# calls again in flight through futures and asyncio; the switch must
# have completed exactly the slots they imply (16-bit elements two to a
# word, int8 four).
rack_job_add "$RACK" "$N" 6 "$KEY" "$SLOTS" "$ELEMS" "$PIN" >/dev/null
py_ranks 6 "$N" "$TMP/types" types 3001
rc=$?
ranks_ok "$N" "$TMP/types" && same_digests "$TMP/types"
check_err $rc "$rc of $N ranks failed"
while read -r line; do log_info "$line"; done < <(grep '^ok:' "$TMP/types/w0.out")
want=$(awk '$1 == "switch_slots" { print $2 }' "$TMP/types/w0.out")
[ -n "$want" ] && switch_completes 6 "$want"
log_test "types: every dtype x op, numpy and torch, sync and in flight: integers and float min/max bit-exact, float sum/avg within the bound, $N workers"

# The same for float16 alone with XINA_F16_WIDE=1 (f16_wide): its sums
# in 32-bit lanes, half the elements a packet, so the slots the switch
# completed say which lanes travelled; results within that bound.
rack_job_add "$RACK" "$N" 9 "$KEY" "$SLOTS" "$ELEMS" "$PIN" >/dev/null
PY_ENV=XINA_F16_WIDE=1 py_ranks 9 "$N" "$TMP/wide" types 3001
rc=$?
ranks_ok "$N" "$TMP/wide" && same_digests "$TMP/wide"
check_err $rc "$rc of $N ranks failed"
want=$(awk '$1 == "switch_slots" { print $2 }' "$TMP/wide/w0.out")
[ -n "$want" ] && switch_completes 9 "$want"
log_test "float16 with XINA_F16_WIDE=1: sums in 32-bit lanes (the switch's slots), within their bound, $N workers"

# errors: one worker alone in job 3 (argument errors, then a call that
# works), job 103, which the switch does not have (no answer to the
# join), another job's key file (bad key), more slots than the job's
# (mismatch), a second run of job 3 (a new epoch), and job 4 of two
# workers whose rank 1 never comes (timeouts).
N=1 rack_job_add "$RACK" 1 3 "$KEY" "$SLOTS" "$ELEMS" "$PIN" >/dev/null
N=2 rack_job_add "$RACK" 2 4 "$KEY" "$SLOTS" "$ELEMS" "$PIN" >/dev/null
"$O/xinactl" genkey "$(dirname "$KEY")/other.key" >/dev/null
py_ranks 3 1 "$TMP/errors" errors
check_err $? "the error checks failed"
ranks_ok 1 "$TMP/errors"
while read -r line; do log_info "$line"; done < <(grep '^ok:' "$TMP/errors/w0.out")
[ "$(stat_of 3 complete)" = 3 ] && [ "$(stat_of 3 epoch_new)" = 1 ]
check_err $? "switch: job 3 complete=$(stat_of 3 complete) epoch_new=$(stat_of 3 epoch_new), want 3 and 1 (two calls in the first run, one in the second)"
[ "$(stat_of 3 drop_auth)" = 1 ] && [ "$(stat_of 3 join_refused)" -ge 1 ]
check_err $? "switch: job 3 drop_auth=$(stat_of 3 drop_auth) join_refused=$(stat_of 3 join_refused), want 1 (the bad key) and at least 1 (the mismatch)"
[ "$(stat_of 4 complete)" = 0 ] && [ "$(stat_of 4 epoch_new)" = 1 ]
check_err $? "switch: job 4 complete=$(stat_of 4 complete) epoch_new=$(stat_of 4 epoch_new), want 0 and 1"
log_test "errors: each raises with libxina's message or names the bad argument"

# The DDP hook: each step's gradients through xina and through Gloo.
rack_job_add "$RACK" "$N" 5 "$KEY" "$SLOTS" "$ELEMS" "$PIN" >/dev/null
py_ranks 5 "$N" "$TMP/ddp" ddp --master "$(rack_worker_ip 0):29511" --steps 4
rc=$?
ranks_ok "$N" "$TMP/ddp"
check_err $rc "$rc of $N ranks failed"
while read -r line; do log_info "$line"; done < <(grep '^ok:' "$TMP/ddp/w0.out")
want=$(awk '$1 == "switch_slots" { print $2 }' "$TMP/ddp/w0.out")
[ -n "$want" ] && switch_completes 5 "$want"
grep -h '^ok: rank 0 stalled' "$TMP"/ddp/w[1-9]*.out >"$TMP/ddp/stall"
[ "$(wc -l <"$TMP/ddp/stall")" -eq $((N - 1)) ]
check_err $? "not every other rank waited out rank 0's stall: $(cat "$TMP/ddp/stall")"
log_info "$(head -n1 "$TMP/ddp/stall")"
# No XINA_RUN_ID: register() had rank 0 draw the run and broadcast it.
runs=$(awk '$1 == "run" { print $2 }' "$TMP"/ddp/w*.out | sort -u | tr '\n' ' ')
r=$(run_of 5)
[ -n "$r" ] && [ "$r" != 0 ] && [ "$runs" = "$r " ]
check_err $? "DDP: the ranks' runs '$runs', the switch's '$r': want one, non-zero, the same"
log_info "DDP: every rank's run and the switch's epoch's: $r"
log_test "DDP hook: gradients as Gloo's within the float bound, a few steps; rank 0's 8 s stall (a checkpoint) waited for; one run drawn by rank 0"

# The DDP hook with 16-bit gradients: a float16 model under DDP, and
# bfloat16 buckets through the hook as DDP calls it (torch 1.13's Gloo
# has no bfloat16: DDP cannot broadcast such a model at its start).
for dt in float16 bfloat16; do
	job=7; [ "$dt" = bfloat16 ] && job=8
	rack_job_add "$RACK" "$N" "$job" "$KEY" "$SLOTS" "$ELEMS" "$PIN" >/dev/null
	py_ranks "$job" "$N" "$TMP/ddp-$dt" ddp --master "$(rack_worker_ip 0):$((29511 + job))" \
		--steps 4 --dtype "$dt"
	rc=$?
	ranks_ok "$N" "$TMP/ddp-$dt"
	check_err $rc "$rc of $N ranks failed"
	while read -r line; do log_info "$line"; done < <(grep '^ok:' "$TMP/ddp-$dt/w0.out")
	want=$(awk '$1 == "switch_slots" { print $2 }' "$TMP/ddp-$dt/w0.out")
	[ -n "$want" ] && switch_completes "$job" "$want"
	log_test "DDP hook: $dt gradients (avg by libxina) within the bound of the exact average"
done

# A rank of a DDP run dies after two steps: the others' next backward fails
# within the timeouts, and its error names the XinaError and libxina's
# reason (torch 1.13 reads a future's set_exception() as "Unable to cast
# ... to Tensor").
rack_job_add "$RACK" "$N" 10 "$KEY" "$SLOTS" "$ELEMS" "$PIN" >/dev/null
PY_ENV="XINA_JOIN_TIMEOUT_MS=1500" py_ranks 10 "$N" "$TMP/dies" ddp \
	--master "$(rack_worker_ip 0):29521" --dies $((N - 1))
rc=$?
ranks_ok "$N" "$TMP/dies"
check_err $rc "$rc of $N ranks failed"
grep -h '^ok: rank' "$TMP"/dies/w*.out >"$TMP/dies/ok"
[ "$(wc -l <"$TMP/dies/ok")" -eq $((N - 1)) ]
check_err $? "not every other rank's backward failed with a XinaError: $(cat "$TMP/dies/ok")"
log_info "$(head -n1 "$TMP/dies/ok")"
log_test "DDP hook: a rank dies; the others' backward raises, naming the XinaError and libxina's reason"

tap_end
