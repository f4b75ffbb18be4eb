#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# xina.ko load and unload: bare, with jobs configured, and what the module
# shows in sysfs right after loading.  Runs in the VM (as root).
. ./lib.sh

KO=/xina/modules/xina.ko

test_load_unload() {
	local rc=0

	insmod "$KO" || rc=1
	[ -d /sys/kernel/xina/jobs ] || rc=1
	grep -q '^xina ' /proc/modules || rc=1
	rmmod xina || rc=1
	[ ! -e /sys/kernel/xina ] || rc=1
	log_test $rc "load and unload"
}

test_sysfs_defaults() {
	local rc=0

	insmod "$KO" mem_limit=12345678 || rc=1
	check_eq "$(cat /sys/kernel/xina/version)" "$(cat /sys/module/xina/version)" || rc=1
	check_eq "$(cat /sys/kernel/xina/mem_limit)" 12345678 || rc=1
	check_eq "$(cat /sys/kernel/xina/mem_used)" 0 || rc=1
	check_eq "$(ls /sys/kernel/xina/jobs | wc -l)" 0 || rc=1
	rmmod xina || rc=1
	log_test $rc "sysfs after load (version, mem_limit parameter, mem_used)"
}

test_repeat() {
	local rc=0 i

	for i in 1 2 3 4 5; do
		insmod "$KO" || rc=1
		rmmod xina || rc=1
	done
	log_test $rc "load and unload five times"
}

test_dmesg_clean() {
	local rc=0

	if dmesg | grep -E 'BUG|WARNING|Oops|leak|refcount_t' | grep -v 'xina.*taint'; then
		rc=1
	fi
	log_test $rc "no kernel warnings"
}

test_load_unload
test_sysfs_defaults
test_repeat
test_dmesg_clean
exit $RET
