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
KEY=0x77
PIN=$(rack_pin_dir "$RACK")
TMP=$(mktemp -d)

cleanup() {
	rack_down "$RACK"
	rm -rf "$TMP"
}
trap cleanup EXIT

xctl() {
	ip netns exec "$RACK-sw" xinactl -P "$PIN" "$@"
}

job_has_rx() {
	xctl -j stats job "$JOB" 2>/dev/null | grep -q '"rx":[1-9]'
}

allreduce() {	# allreduce OUTDIR BYTES TIMEOUT_MS
	rack_allreduce "$RACK" "$N" "$1" --job "$JOB" --key "$KEY" \
		--slots 32 --elems 256 --dtype i32 --bytes "$2" --iters 2 \
		--timeout-ms "$3"
}

insmod /xina/modules/xina.ko || exit 1
rack_up "$RACK" "$N" || exit 1
rack_xdp "$RACK" "$N" "$PIN"
log_test $? "attach the module-backend fast path to the rack's ports"
rack_job_add "$RACK" "$N" "$JOB" "$KEY" 32 256 "$PIN"
allreduce "$TMP/a" 65536 5000
log_test $? "allreduce through the attached ports"

# A loaded program holds the module (the kfunc's BTF references it).
rc=0
rmmod xina 2>/dev/null && rc=1
grep -q '^xina ' /proc/modules || rc=1
log_test $rc "rmmod refused while the fast path is attached"

# Delete the job while packets are in flight; workers then time out (the
# switch drops a job's packets once it is gone), the kernel stays clean.
allreduce "$TMP/b" $((4 << 20)) 1500 &
bg=$!
rc=0
wait_until 100 job_has_rx || { echo "  no packet of job $JOB seen"; rc=1; }
xctl job del "$JOB" || rc=1
wait $bg
[ -e "/sys/kernel/xina/jobs/3@$(stat -L -c %i /run/netns/$RACK-sw)" ] && rc=1
log_test $rc "job deleted under traffic"

# The same id again: a fresh job, the same workers, a correct result.
rack_job_add "$RACK" "$N" "$JOB" "$KEY" 32 256 "$PIN"
allreduce "$TMP/c" 65536 5000
rc=$?
for i in 0 1; do
	grep -q '"verified":true' "$TMP/c/w$i.json" || rc=1
done
log_test $rc "job re-created after the delete works"

# Detach, then the module goes with its job still configured.
for ((i = 0; i < N; i++)); do
	xctl dev detach "p$i" || rc=1
done
rm -rf "$PIN"/* 2>/dev/null
rc=1
for i in $(seq 50); do
	rmmod xina 2>/dev/null && { rc=0; break; }
	sleep 0.1
done
log_test $rc "rmmod once detached, with a job configured"
exit $RET
