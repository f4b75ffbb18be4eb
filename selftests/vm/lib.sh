#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Helpers of the guest shell tests: one TAP line per check (log_test),
# the overall result in $RET (0 pass, 1 fail, 4 skip).
RET=0
NTEST=0

# log_test RC NAME [REASON]: RC 0 pass, 4 skip (for REASON), else fail.
log_test() {
	local rc=$1 name=$2

	NTEST=$((NTEST + 1))
	if [ "$rc" -eq 0 ]; then
		echo "ok $NTEST $name"
	elif [ "$rc" -eq 4 ]; then
		echo "ok $NTEST $name # SKIP ${3:-(the output above says why)}"
	else
		echo "not ok $NTEST $name"
		RET=1
	fi
}

check_eq() {
	[ "$1" = "$2" ] && return 0
	echo "  expected '$2', got '$1'"
	return 1
}

# Busy-wait (at most $1 tenths of a second) until "$2..." succeeds.
wait_until() {
	local n=$1

	shift
	while [ "$n" -gt 0 ]; do
		"$@" && return 0
		sleep 0.1
		n=$((n - 1))
	done
	return 1
}

# The host's selftests run against the map backend (xina.ko not loaded),
# with the paths the initramfs gives them; exits if the module is loaded.
maps_host_test_env() {
	export XINA_ROOT=/xina/root O=/xina/o
	if grep -q '^xina ' /proc/modules; then
		echo "xina.ko is loaded: cannot test the map backend"
		exit 1
	fi
}
