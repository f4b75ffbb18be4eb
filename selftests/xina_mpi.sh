#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# libxina-mpi.so under MPI programs that know nothing of xina, 4 ranks in
# the worker namespaces of a rack with the XDP fast path, started by
# mpirun (one rank per namespace through xina-nsrun, as the benchmarks do)
# with the interposer in LD_PRELOAD:
#
#   - an mpi4py program (Debian's python3-mpi4py, comm.Allreduce) checking
#     every result against numpy, through the switch (int8, int16, int32,
#     int64 under each of their MPI names by sum, min, max, band, bor,
#     bxor; float32 sum, min, max; MPI_IN_PLACE) and through PMPI
#     (float64, int32 prod, unsigned types, a split communicator);
#   - xina-bench-mpi (the OpenMPI peer of the benchmarks), which checks
#     every element of every call itself.
#
# The switch's counters must have moved by exactly the slots of the calls
# the interposer takes, and its own count (XINA_MPI_VERBOSE) must match
# the calls taken and passed on: what fell back to PMPI never reached the
# switch, and its results were right.  Every rank names one run in its
# joins, the one the switch records: XINA_RUN_ID if set, else rank 0's,
# broadcast.  Without XINA_SWITCH nothing reaches the switch and the
# results stay right.

. "$(dirname "$0")/lib.sh"
require_root
require_cmd jq mpirun /usr/bin/python3 "$O/xinactl" "$O/libxina-mpi.so" \
	"$O/bench/bin/xina-nsrun" "$O/bench/bin/xina-bench-mpi"
. "$XINA_ROOT/scripts/rack.sh"

if ! /usr/bin/python3 -c "import mpi4py, numpy" 2>/dev/null; then
	echo "1..0 # SKIP python3-mpi4py not installed (scripts/deps.sh python)"
	exit "$ksft_skip"
fi

rack_test_init xmpi
N=4
SLOTS=32
ELEMS=256
KEY=$KEYFILE		# the jobs' key file (made by rack_test_init)

stat_of()	# stat_of JOB NAME
{
	xctl -j stats job "$1" | jq -r ".jobs[0].$2 // empty"
}

# mpi_run JOB OUT CMD...: CMD as N ranks, rank i in worker namespace i,
# with libxina-mpi.so preloaded and configured for JOB (no XINA_SWITCH
# when JOB is "none"); the ranks' output to OUT, one rank after the other
# (mpirun writes each rank's to its own file: forwarded, the ranks' lines
# run into each other), mpirun's own to OUT.mpirun.  Without OpenMPI's op/avx
# component: it saturates 8- and 16-bit sums that overflow
# (open-mpi/ompi#8045, "wontfix"), where xina and OpenMPI's C loops wrap,
# and the checks of what goes to PMPI expect wrapping.
mpi_run()
{
	local job=$1 out=$2 rc
	local -a xenv=(LD_PRELOAD="$O/libxina-mpi.so" XINA_MPI_VERBOSE=1)

	shift 2
	[ "$job" != none ] && xenv+=(XINA_SWITCH="$RACK_SWITCH_IP"
		XINA_JOB="$job" XINA_KEY_FILE="$KEY" XINA_SLOTS="$SLOTS"
		XINA_ELEMS="$ELEMS" XINA_BIND=":$RACK_WORKER_PORT"
		XINA_TIMEOUT_MS=5000 ${MPI_ENV:-})
	rm -rf "$out.d"
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
	OMPI_MCA_plm_rsh_agent="" timeout 180 \
	mpirun --allow-run-as-root -np "$N" --oversubscribe --bind-to none \
		--mca btl tcp,self --mca btl_tcp_if_include "$RACK_NET.0/24" \
		--mca coll "^sm,han,adapt" --mca op "^avx" --output-filename "$out.d" \
		"$O/bench/bin/xina-nsrun" -p "$RACK-w%d" \
		env "${xenv[@]}" "$@" >"$out.mpirun" 2>&1
	rc=$?
	cat "$out.d"/1/rank.*/stdout "$out.d"/1/rank.*/stderr >"$out" 2>/dev/null
	return $rc
}

# runs_agree JOB OUT [RUN]: every rank opened its handle naming one run
# (XINA_MPI_VERBOSE), the run JOB's epoch on the switch records: RUN if
# given, else not 0 (rank 0's, broadcast).
runs_agree()
{
	local r runs

	r=$(xctl -j job show "$1" | jq -r '.jobs[0].run // empty')
	runs=$(grep -o 'xina handle open: job [0-9]*, run [0-9]*' "$2" |
	       awk '{ print $NF }' | sort | uniq -c | awk '{ print $1, $2 }')
	[ "$runs" = "$N $r" ] && [ "$r" != 0 ] && [ "$r" = "${3:-$r}" ]
	check_err $? "runs: the ranks' (count, run) '$runs', the switch's '$r', want $N ranks with ${3:-a non-zero one}"
	[ "$ret" -eq 0 ] && log_info "run: $r on every rank and on the switch"
}

# value KEY FILE: the number after KEY on the first line starting with it
value()
{
	awk -v k="$1" '$1 == k { print $2; exit }' "$2"
}

# interposer_count OUT: "TAKEN PASSED" summed over the ranks' final lines
interposer_count()
{
	awk '/libxina-mpi: rank [0-9]+: [0-9]+ MPI_Allreduce calls through xina/ {
		t += $4; p += $(NF - 2); n++ }
	     END { printf "%d %d %d\n", t, p, n }' "$1"
}

# switch_moved JOB WANT: JOB completed WANT slots, each of N contributions.
switch_moved()
{
	local complete contrib

	complete=$(stat_of "$1" complete)
	contrib=$(stat_of "$1" contrib)
	[ "$complete" = "$2" ] && [ "$contrib" = $((N * $2)) ]
	check_err $? "switch: job $1 complete=$complete contrib=$contrib, want $2 and $((N * $2))"
}

tap_begin 6

if ! { rack_up "$RACK" "$N" mtu "$RACK_FAST_MTU" >/dev/null &&
       rack_xdp "$RACK" "$N" "$PIN"; }; then
	check_err 1 "rack of $N workers could not be set up"
	log_test "rack"
	tap_end
fi

# mpi4py_case JOB [single]: xina_mpi.py through the interposer on JOB,
# with XINA_RUN_ID=$RUN if RUN is set
mpi4py_case()
{
	local job=$1 out=$TMP/py$1.out taken passed ranks want_t want_p

	rack_job_add "$RACK" "$N" "$job" "$KEY" "$SLOTS" "$ELEMS" "$PIN" >/dev/null
	MPI_ENV=${RUN:+XINA_RUN_ID=$RUN} mpi_run "$job" "$out" /usr/bin/python3 \
		"$XINA_ROOT/selftests/xina_mpi.py" "$ELEMS" "${@:2}"
	check_err $? "mpirun failed: $(cat "$out.mpirun" "$out" | grep -v '^ok:' | tail -n5 | tr '\n' ' ')"
	[ "$(grep -c '^PASS$' "$out")" -eq "$N" ]
	check_err $? "not every rank passed its checks"
	while read -r line; do log_info "$line"; done < <(grep '^ok:' "$out" | sort -u)
	[ "$ret" -eq 0 ] && switch_moved "$job" "$(value switch_slots "$out")"
	read -r taken passed ranks <<<"$(interposer_count "$out")"
	want_t=$((N * $(value xina_calls "$out")))
	want_p=$((N * $(value pmpi_calls "$out")))
	[ "$ranks" -eq "$N" ] && [ "$taken" -eq "$want_t" ] && [ "$passed" -eq "$want_p" ]
	check_err $? "interposer: $ranks ranks took $taken and passed $passed calls, want $N ranks, $want_t and $want_p"
	log_info "switch: job $job completed $(stat_of "$job" complete) slots; interposer: $taken calls taken, $passed to PMPI (all ranks)"
	runs_agree "$job" "$out" "${RUN:-}"
}

mpi4py_case 1
log_test "mpi4py comm.Allreduce and Iallreduce: int8/16/32/64 by sum/min/max/band/bor/bxor, float32 by sum/min/max through the switch, the rest through PMPI, all right; rank 0's run"

# MPI_THREAD_SINGLE: the duplicate of COMM_WORLD goes through the switch
# too; the run is XINA_RUN_ID
RUN=2718281828 mpi4py_case 3 single
log_test "mpi4py, MPI_THREAD_SINGLE: a communicator congruent to COMM_WORLD through the switch; run XINA_RUN_ID"

# A call that fails in libxina (rank 1 has a NaN in a float sum; its
# peers time out): every rank's error handler gets MPI_ERR_OTHER, and so
# does every later eligible call, blocking or not, without reaching the
# switch; what goes to PMPI still works.
rack_job_add "$RACK" "$N" 5 "$KEY" "$SLOTS" "$ELEMS" "$PIN" >/dev/null
out=$TMP/fail.out
MPI_ENV=XINA_JOIN_TIMEOUT_MS=2500 mpi_run 5 "$out" /usr/bin/python3 \
	"$XINA_ROOT/selftests/xina_mpi.py" "$ELEMS" fail
check_err $? "mpirun failed: $(cat "$out.mpirun" "$out" | grep -v '^ok:' | tail -n5 | tr '\n' ' ')"
[ "$(grep -c '^PASS$' "$out")" -eq "$N" ]
check_err $? "not every rank passed its checks"
while read -r line; do log_info "$line"; done < <(grep '^ok:' "$out" | sort -u)
grep -q 'rank 1: MPI_Allreduce of 1000 float32 elements through xina: element 5 is NaN' "$out"
check_err $? "rank 1 did not say why its call failed"
# Its peers wait for it at most XINA_JOIN_TIMEOUT_MS: it never comes.
[ "$(grep -c 'no result from switch .* for 2500 ms (join timeout' "$out")" -eq $((N - 1)) ]
check_err $? "not every peer of rank 1 gave up after XINA_JOIN_TIMEOUT_MS=2500: $(grep 'no result from switch' "$out" | head -n2 | tr '\n' ' ')"
[ "$(grep -c 'MPI_Allreduce after a failed one: the xina handle is unusable' "$out")" -eq "$N" ] &&
	[ "$(grep -c 'MPI_Iallreduce after a failed call: the xina handle is unusable' "$out")" -eq "$N" ]
check_err $? "not every rank refused the calls after the failure"
[ "$(stat_of 5 complete)" = "$(value switch_slots "$out")" ]
check_err $? "switch: job 5 completed $(stat_of 5 complete) slots, want $(value switch_slots "$out") (the call before the failure)"
read -r taken passed ranks <<<"$(interposer_count "$out")"
[ "$taken" -eq $((N * $(value xina_calls "$out"))) ] && [ "$passed" -eq $((N * $(value pmpi_calls "$out"))) ]
check_err $? "interposer: took $taken and passed $passed calls"
log_test "a call failing in libxina: MPI_ERR_OTHER on every rank (the others after XINA_JOIN_TIMEOUT_MS), then for every eligible call; PMPI calls still right"

# xina-bench-mpi: i32 and f32 sums of 64 KiB, 1 warm-up and 2 timed calls
# each, then one int MAX of its error flag (MPI_IN_PLACE), per dtype.
rack_job_add "$RACK" "$N" 2 "$KEY" "$SLOTS" "$ELEMS" "$PIN" >/dev/null
mpi_run 2 "$TMP/bench.out" "$O/bench/bin/xina-bench-mpi" --bytes 64K \
	--dtype i32,f32 --iters 2 --warmup 1
check_err $? "xina-bench-mpi failed: $(cat "$TMP/bench.out.mpirun" "$TMP/bench.out" | tail -n5 | tr '\n' ' ')"
[ "$(grep -c '^{' "$TMP/bench.out")" -eq 2 ]
check_err $? "xina-bench-mpi printed no result for both dtypes (it prints none when a check failed)"
b=$(((65536 / 4 + ELEMS - 1) / ELEMS))
switch_moved 2 $((3 * b + 1 + 3 * (b + (b + ELEMS - 1) / ELEMS) + 1))
read -r taken passed ranks <<<"$(interposer_count "$TMP/bench.out")"
[ "$taken" -eq $((N * 8)) ] && [ "$passed" -eq 0 ]
check_err $? "interposer: took $taken and passed $passed calls, want $((N * 8)) and 0"
log_info "$(grep '^{' "$TMP/bench.out" | jq -r '"\(.dtype) \(.bytes) bytes: median \(.seconds_median // .t[0]) s"' 2>/dev/null | tr '\n' ';')"
log_test "xina-bench-mpi: its own checks pass with every call through the switch"

# XINA_WORLD_SIZE that is not the job's on rank 0 only: rank 0 cannot
# open its handle, so no rank uses the switch (they agree first).
rack_job_add "$RACK" "$N" 4 "$KEY" "$SLOTS" "$ELEMS" "$PIN" >/dev/null
# shellcheck disable=SC2016 # expanded by the rank's shell
mpi_run 4 "$TMP/bad.out" sh -c \
	'[ "$OMPI_COMM_WORLD_RANK" = 0 ] && export XINA_WORLD_SIZE=3; exec "$@"' - \
	"$O/bench/bin/xina-bench-mpi" --bytes 4K --dtype i32,f32 --iters 1 --warmup 0
check_err $? "xina-bench-mpi failed: $(cat "$TMP/bad.out.mpirun" "$TMP/bad.out" | tail -n5 | tr '\n' ' ')"
[ "$(grep -c '^{' "$TMP/bad.out")" -eq 2 ]
check_err $? "xina-bench-mpi printed no result for both dtypes"
grep -q 'rank 0: XINA_WORLD_SIZE=3, but MPI_COMM_WORLD has 4 ranks' "$TMP/bad.out"
check_err $? "rank 0 did not say why it could not open"
[ "$(grep -c 'another rank could not open its xina handle' "$TMP/bad.out")" -eq $((N - 1)) ]
check_err $? "the other ranks did not say that they fall back"
read -r taken passed ranks <<<"$(interposer_count "$TMP/bad.out")"
[ "$taken" -eq 0 ] && [ "$passed" -eq $((N * 4)) ]
check_err $? "interposer: took $taken and passed $passed calls, want 0 and $((N * 4))"
# the other ranks' handles joined (and were closed): nothing else came
[ "$(stat_of 4 contrib)" = 0 ] &&
	[ "$(stat_of 4 rx)" = $(( $(stat_of 4 join) + $(stat_of 4 join_refused) )) ]
check_err $? "the switch received $(stat_of 4 rx) packets of job 4, $(stat_of 4 contrib) contributions, $(stat_of 4 join) joins: want joins only"
log_test "a rank that cannot open its handle: every rank falls back to PMPI, results right"

# not configured: the interposer passes everything on
before=$(xctl -j stats | jq '[.jobs[].rx] | add')
mpi_run none "$TMP/none.out" /usr/bin/python3 "$XINA_ROOT/selftests/xina_mpi.py" "$ELEMS"
check_err $? "mpirun failed: $(cat "$TMP/none.out.mpirun" "$TMP/none.out" | grep -v '^ok:' | tail -n5 | tr '\n' ' ')"
[ "$(grep -c '^PASS$' "$TMP/none.out")" -eq "$N" ]
check_err $? "not every rank passed its checks"
read -r taken passed ranks <<<"$(interposer_count "$TMP/none.out")"
want_p=$((N * ($(value xina_calls "$TMP/none.out") + $(value pmpi_calls "$TMP/none.out"))))
[ "$taken" -eq 0 ] && [ "$passed" -eq "$want_p" ]
check_err $? "interposer: took $taken and passed $passed calls, want 0 and $want_p"
after=$(xctl -j stats | jq '[.jobs[].rx] | add')
[ "$before" = "$after" ]
check_err $? "the switch received packets ($before -> $after) without XINA_SWITCH"
log_test "without XINA_SWITCH every call goes to PMPI, results right"

tap_end
