#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The end-to-end allreduce with the module backend: xina.ko loaded, xinactl
# picks it by itself, the ports run xina_kf.bpf.o, the slots are module
# memory.  Runs the host's selftests/xina_e2e.sh unchanged inside the VM,
# with smaller tensors (TCG is slow), then checks that xina.ko let go of
# everything.  The same under netem loss is xina_loss_module.sh (each test
# has its own time bound in run.sh).  Then selftests/xina_rounds.sh: the
# open rounds of a stalled job, read from the module (XINA_CMD_ROUNDS_GET),
# name the rank that did not contribute.  Then selftests/xina_trains.sh:
# GSO trains through generic-mode ports, each datagram into module memory.
. ./lib.sh

export XINA_ROOT=/xina/root O=/xina/o
export XINA_E2E_MAX_BYTES=${XINA_E2E_MAX_BYTES:-$((64 << 10))}

insmod /xina/modules/xina.ko || exit 1
xinactl backend | grep -qx "backend: module"
log_test $? "xinactl picks the module backend"

# Each host test's own TAP, indented.
host_test() {
	local t=$1 rc

	bash "$XINA_ROOT/selftests/$t" > "/tmp/$t.out" 2>&1
	rc=$?
	sed 's/^/  /' "/tmp/$t.out"
	[ $rc -eq 4 ] && grep -q "SKIP" "/tmp/$t.out" && return 4
	return $rc
}

host_test xina_e2e.sh
log_test $? "selftests/xina_e2e.sh on the module backend"
# A host test that says which backend it ran on ("# backend: module").
module_test() {
	local t=$1 rc

	host_test "$t"
	rc=$?
	if [ $rc -eq 0 ] && ! grep -q "# backend: module$" "/tmp/$t.out"; then
		echo "  $t did not run on the module backend"
		rc=1
	fi
	log_test $rc "selftests/$t on the module backend"
}

module_test xina_rounds.sh
# GSO trains on generic ports, each datagram taken by xina_kf_train()
export XINA_TRAINS_BYTES=${XINA_TRAINS_BYTES:-$((512 << 10))}
module_test xina_trains.sh
# Jobs lived in the racks' switch namespaces and went with them: the
# kernel destroys a deleted namespace later, in a work queue (cleanup_net),
# which TCG on a busy host can delay by seconds.
jobs_left() { ls /sys/kernel/xina/jobs | wc -l; }
no_jobs() { [ "$(jobs_left)" = 0 ]; }
wait_until 300 no_jobs
check_eq "$(jobs_left)" 0
log_test $? "no job left after the racks are gone"
check_eq "$(cat /sys/kernel/xina/mem_used)" 0
log_test $? "no slot memory left"
exit $RET
