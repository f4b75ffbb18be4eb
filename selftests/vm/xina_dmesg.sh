#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Last test of the VM run: the kernel log holds no splat from any of the
# tests before (lockdep, KASAN-less UAF symptoms, WARN_ON, refcount).
. ./lib.sh

rc=0
if dmesg | grep -E 'BUG:|WARNING:|Oops|general protection|refcount_t:|list_del corruption|RCU stall|sleeping function'; then
	rc=1
fi
log_test $rc "no kernel splat in dmesg"
exit $RET
