#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of "make check-vm": run the module selftests as a kselftest
# style TAP plan.  Started by scripts/vm/init inside the VM, from the
# directory that holds the tests; arguments restrict the run to some tests.
# Exit status: 0 nothing failed, 1 a test failed.
#
# Each test is a program of its own; its output (TAP of its subtests) is
# shown indented with "# " and judged as on the host (selftests/
# tap_judge.sh): exit status 0 or 4, no "not ok", and no skip at any depth
# that selftests/expected-skips does not list.  A test missing from the
# initramfs fails, and so does one that runs out of time.  The last line, "XINA-VM-COUNTS: tests passed, failed,
# skipped, checks passed, failed, skipped", is what scripts/vm.sh reports.

# Seconds a test may take (scripts/vm.sh bounds the whole run).
TEST_TIMEOUT=${XINA_VM_TEST_TIMEOUT:-600}
ALL="xina_module.sh xina_nl xina_kfunc xina_xinactl.sh xina_conf_module.sh xina_attached.sh xina_netns_addrs.sh xina_e2e_module.sh xina_loss_module.sh xina_netem_maps.sh xina_trains_maps.sh xina_dmesg.sh"
tests=${*:-$ALL}

XINA_ROOT=${XINA_ROOT:-/xina/root}
if ! . "$XINA_ROOT/selftests/tap_judge.sh"; then
	echo "run.sh: no $XINA_ROOT/selftests/tap_judge.sh in the initramfs"
	exit 1
fi

n=0
for t in $tests; do n=$((n + 1)); done
echo "TAP version 13"
echo "1..$n"
# Which kernel these results are of (scripts/vm.sh checks it).
echo "# kernel: $(uname -r)"

i=0
pass=0
fail=0
skip=0
checks_pass=0
checks_fail=0
checks_skip=0
for t in $tests; do
	i=$((i + 1))
	# Every test starts without the module.  A BPF program that used
	# its kfunc holds it until the program is freed, after a grace period.
	n=0
	while grep -q '^xina ' /proc/modules && [ $n -lt 50 ]; do
		rmmod xina 2>/dev/null || sleep 0.1
		n=$((n + 1))
	done
	if [ -x "/xina/bin/$t" ]; then
		# C tests expect xina.ko loaded; shell tests load it themselves.
		insmod /xina/modules/xina.ko || {
			echo "not ok $i $t # insmod xina.ko failed"
			fail=$((fail + 1))
			continue
		}
		cmd="/xina/bin/$t"
	elif [ -f "./$t" ]; then
		cmd="bash ./$t"
	else
		echo "not ok $i $t # not in the initramfs"
		fail=$((fail + 1))
		continue
	fi
	# Shown as it runs, so that the console holds what a test that
	# hangs had done; bounded, so that the tests after it still run.
	out=/tmp/$t.out
	start=$(date +%s)
	timeout "$TEST_TIMEOUT" $cmd 2>&1 | tee "$out" | sed 's/^/# /'
	rc=${PIPESTATUS[0]}
	took=$(($(date +%s) - start))
	if [ "$took" -ge "$TEST_TIMEOUT" ]; then
		echo "not ok $i $t # TIMEOUT after ${took}s"
		fail=$((fail + 1))
		continue
	fi
	tap_judge "$t" "$rc" "$out"
	tap_tally "$i" "$t" "$took"
done
echo "# vm: tests: $pass passed, $fail failed, $skip skipped;" \
     "checks: $checks_pass passed, $checks_fail failed, $checks_skip skipped"
echo "XINA-VM-COUNTS: $pass $fail $skip $checks_pass $checks_fail $checks_skip"
[ "$fail" -eq 0 ]
