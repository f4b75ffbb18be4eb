#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Last test of the VM run: the kernel log holds no splat from any of the
# tests before (lockdep, KASAN-less UAF symptoms, WARN_ON, refcount,
# soft lockups), and, when the guest boots with slub_debug
# (XINA_VM_APPEND, scripts/vm.sh), no write into freed or out of
# allocated slab objects ("BUG kmalloc-cg-64 (...): Poison overwritten").
. ./lib.sh

rc=0
if dmesg | grep -E 'BUG:|BUG [a-z]|WARNING:|Oops|general protection|refcount_t:|list_del corruption|RCU stall|sleeping function|soft lockup|Poison overwritten|Redzone overwritten|Object padding overwritten'; then
	rc=1
fi
log_test $rc "no kernel splat in dmesg"
exit $RET
