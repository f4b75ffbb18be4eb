#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# xina.ko while the fast path is attached: the module cannot go while a
# program that calls its kfunc exists, jobs can be deleted and re-created
# under traffic without a splat or a stuck worker, and once the ports are
# detached the module unloads with its jobs still configured.
. ./lib.sh

export XINA_ROOT=/xina/root O=/xina/o
. "$XINA_ROOT/scripts/rack.sh"

RACK=xat$$
N=2
JOB=3
DJOB=4		# the job deleted under traffic, then re-created
PIN=$(rack_pin_dir "$RACK")
TMP=$(mktemp -d)
# The jobs' secret ("job add ... keyfile" creates it, the workers read it).
KEYFILE=$TMP/job.key

cleanup() {
	rack_down "$RACK"
	rm -rf "$TMP"
}
trap cleanup EXIT

xctl() {
	ip netns exec "$RACK-sw" xinactl -P "$PIN" "$@"
}

job_completes() {	# job_completes ID: the job completed a slot
	xctl -j stats job "$1" 2>/dev/null | jq -e '.jobs[0].complete > 0' >/dev/null
}

# The switch's no_job counter, read along with job $JOB's (which stays).
no_job() {
	xctl -j stats job "$JOB" | jq -r '.switch.no_job'
}

allreduce() {	# allreduce JOB OUTDIR BYTES TIMEOUT_MS [ITERS]
	rack_allreduce "$RACK" "$N" "$2" --job "$1" --key-file "$KEYFILE" \
		--slots 32 --elems 256 --dtype i32 --bytes "$3" \
		--iters "${5:-2}" --timeout-ms "$4"
}

insmod /xina/modules/xina.ko || exit 1
rack_up "$RACK" "$N" || exit 1
rack_xdp "$RACK" "$N" "$PIN"
log_test $? "attach the module-backend fast path to the rack's ports"
rack_job_add "$RACK" "$N" "$JOB" "$KEYFILE" 32 256 "$PIN"
allreduce "$JOB" "$TMP/a" 65536 5000
log_test $? "allreduce through the attached ports"

# A loaded program holds the module (the kfunc's BTF references it).
rc=0
rmmod xina 2>/dev/null && rc=1
grep -q '^xina ' /proc/modules || rc=1
log_test $rc "rmmod refused while the fast path is attached"

# Delete a job while its workers run: from then on the switch drops the
# job's packets as no_job, the workers give up with a timeout, the job's
# sysfs entry is gone, the kernel stays clean.  A fresh job (a second run
# on job $JOB would time out anyway, on stale rounds) and far more rounds
# than it can finish before the delete.
bg_done() {
	! kill -0 "$bg" 2>/dev/null
}
rc=0
rack_job_add "$RACK" "$N" "$DJOB" "$KEYFILE" 32 256 "$PIN" || rc=1
sysfs_job=/sys/kernel/xina/jobs/$DJOB@$(stat -L -c %i "/run/netns/$RACK-sw")
[ -d "$sysfs_job" ] || { echo "  $sysfs_job missing before the delete"; rc=1; }
allreduce "$DJOB" "$TMP/b" $((4 << 20)) 1500 50 &
bg=$!
wait_until 300 job_completes "$DJOB" ||
	{ echo "  job $DJOB completed no slot in 30 s"; rc=1; }
before=$(no_job)
xctl job del "$DJOB" || rc=1
[ -e "$sysfs_job" ] && { echo "  $sysfs_job still there after the delete"; rc=1; }
# They give up within their join timeout (4 x 1.5 s); if the job went on
# aggregating, they would run for minutes: stop them.
if ! wait_until 300 bg_done; then
	echo "  workers still running 30 s after the delete"
	rc=1
	for ((i = 0; i < N; i++)); do
		ip netns pids "$RACK-w$i" | xargs -r kill -9
	done
fi
wait $bg
fails=$?
[ "$fails" -eq "$N" ] || { echo "  $fails of $N workers failed, want all"; rc=1; }
for ((i = 0; i < N; i++)); do
	grep -q 'timed out' "$TMP/b/w$i.err" ||
		{ echo "  worker $i: $(tail -n1 "$TMP/b/w$i.err")"; rc=1; }
done
after=$(no_job)
echo "  after the delete: no_job $before -> $after"
[ "${after:-0}" -gt "${before:-0}" ] 2>/dev/null ||
	{ echo "  no_job went from '$before' to '$after', want it to rise"; rc=1; }
log_test $rc "job deleted under traffic"

# The same id again: a fresh job, the same workers, a correct result.
rack_job_add "$RACK" "$N" "$DJOB" "$KEYFILE" 32 256 "$PIN"
allreduce "$DJOB" "$TMP/c" 65536 5000
rc=$?
for i in 0 1; do
	grep -q '"verified":true' "$TMP/c/w$i.json" || rc=1
done
log_test $rc "job re-created after the delete works"

# Detach, then the module goes with its job still configured.
rc=0
for ((i = 0; i < N; i++)); do
	xctl dev detach "p$i" || { echo "  detach p$i failed"; rc=1; }
done
rm -rf "$PIN"/* 2>/dev/null
gone=0
for i in $(seq 50); do
	rmmod xina 2>/dev/null && { gone=1; break; }
	sleep 0.1
done
[ "$gone" = 1 ] || { echo "  rmmod xina refused 5 s after the detach"; rc=1; }
log_test $rc "rmmod once detached, with a job configured"
exit $RET
