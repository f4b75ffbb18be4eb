#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# xinactl with xina.ko: it finds the module backend by itself, configures
# jobs through netlink (seen in sysfs), reports the kernel's reasons for
# rejections, and falls back to the maps backend once the module is gone.
. ./lib.sh

KO=/xina/modules/xina.ko
# The jobs' secret ("job add ... keyfile" creates it if it does not exist).
K="keyfile /tmp/xinactl.key"
command -v xinactl >/dev/null || { echo "xinactl not in the initramfs"; exit 4; }

test_backend() {
	local rc=0

	check_eq "$(xinactl -j backend)" '{"backend":"module","module":true}' || rc=1
	xinactl backend | grep -qx "backend: module" || rc=1
	log_test $rc "xinactl backend: module while xina.ko is loaded"
}

test_job_add_show_del() {
	local rc=0 out

	xinactl job add 5 $K workers 3 slots 16 elems 128 \
		member 0 10.1.0.1 member 1 10.1.0.2:4000 member 2 10.1.0.3 || rc=1
	check_eq "$(cat /sys/kernel/xina/jobs/5/workers)" 3 || rc=1
	check_eq "$(cat /sys/kernel/xina/jobs/5/slots)" 16 || rc=1
	check_eq "$(cat /sys/kernel/xina/jobs/5/elems)" 128 || rc=1
	check_eq "$(cat /sys/kernel/xina/jobs/5/members)" 3 || rc=1
	out=$(xinactl -j job show 5) || rc=1
	echo "$out" | grep -q '"backend":"module"' || { echo "  $out"; rc=1; }
	echo "$out" | grep -q '"slots":16' || { echo "  $out"; rc=1; }
	echo "$out" | grep -q '10.1.0.2' || { echo "  $out"; rc=1; }
	# The run the epoch's first joiner named (none joined: 0), as sysfs.
	echo "$out" | grep -q "\"run\":$(cat /sys/kernel/xina/jobs/5/run)[,}]" ||
		{ echo "  $out"; rc=1; }
	out=$(xinactl -j stats job 5) || rc=1
	echo "$out" | grep -q '"backend":"module"' || { echo "  $out"; rc=1; }
	xinactl job del 5 || rc=1
	[ ! -e /sys/kernel/xina/jobs/5 ] || rc=1
	check_eq "$(cat /sys/kernel/xina/mem_used)" 0 || rc=1
	log_test $rc "xinactl job add/show/stats/del through netlink"
}

test_errors() {
	local rc=0 out

	xinactl job add 6 $K workers 2 member 0 10.1.0.1 member 1 10.1.0.2 || rc=1
	out=$(xinactl job add 6 $K workers 2 member 0 10.1.0.1 member 1 10.1.0.2 2>&1) && rc=1
	echo "$out" | grep -q "job 6: job exists" || { echo "  $out"; rc=1; }
	out=$(xinactl job del 99 2>&1) && rc=1
	echo "$out" | grep -q "job 99 does not exist" || { echo "  $out"; rc=1; }
	echo 1000 > /sys/module/xina/parameters/mem_limit
	out=$(xinactl job add 7 $K workers 2 member 0 10.1.0.1 member 1 10.1.0.2 2>&1) && rc=1
	echo "$out" | grep -q "slot memory would exceed mem_limit: $(cat /sys/kernel/xina/mem_used) of 1000 bytes already in use" ||
		{ echo "  $out"; rc=1; }
	echo 268435456 > /sys/module/xina/parameters/mem_limit
	xinactl job del 6 || rc=1
	log_test $rc "xinactl shows the module's reasons for rejections"
}

test_unload_with_jobs() {
	local rc=0

	xinactl job add 8 $K workers 1 member 0 10.1.0.1 || rc=1
	xinactl job add 9 $K workers 1 member 0 10.1.0.1 || rc=1
	rmmod xina || rc=1
	[ ! -e /sys/kernel/xina ] || rc=1
	xinactl backend | grep -qx "backend: maps" || rc=1
	log_test $rc "unload with jobs configured; xinactl falls back to maps"
}

insmod "$KO" || exit 1
test_backend
test_job_add_show_del
test_errors
test_unload_with_jobs
exit $RET
