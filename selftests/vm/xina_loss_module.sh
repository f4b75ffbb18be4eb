#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The host's selftests/xina_loss.sh on the module backend, inside the VM,
# where the impairment is netem (loss, duplication, reordering): it must
# have run on netem, so its probe shows the duplicates and reordering.
# Then checks that xina.ko let go of everything.
. ./lib.sh

export XINA_ROOT=/xina/root O=/xina/o
export XINA_LOSS_BYTES=${XINA_LOSS_BYTES:-$((256 << 10))}

if ! grep -q "^xina " /proc/modules; then
	insmod /xina/modules/xina.ko || exit 1
fi
xinactl backend | grep -qx "backend: module"
log_test $? "xinactl picks the module backend"

bash "$XINA_ROOT/selftests/xina_loss.sh" > /tmp/xina_loss.sh.out 2>&1
rc=$?
sed 's/^/  /' /tmp/xina_loss.sh.out
if [ $rc -eq 0 ] && ! grep -q "^ok [0-9]* - netem loses, duplicates and reorders" \
	/tmp/xina_loss.sh.out; then
	echo "  the impairment was not netem: no duplicates or reordering shown"
	rc=1
fi
log_test $rc "selftests/xina_loss.sh (netem) on the module backend"

check_eq "$(ls /sys/kernel/xina/jobs | wc -l)" 0
log_test $? "no job left after the racks are gone"
check_eq "$(cat /sys/kernel/xina/mem_used)" 0
log_test $? "no slot memory left"
exit $RET
