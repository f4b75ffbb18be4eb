#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of "make check-vm": run the module selftests as a kselftest
# style TAP plan.  Started by scripts/vm/init inside the VM, from the
# directory that holds the tests; arguments restrict the run to some tests.
# Exit status: 0 all passed (or skipped), 1 a test failed.
#
# Each test is a program of its own; its output (TAP of its subtests) is
# shown indented with "# ".  Exit status of a test: 0 pass, 4 skip, else fail.

ALL="xina_module.sh xina_nl xina_kfunc xina_xinactl.sh xina_attached.sh xina_e2e_module.sh xina_netem_maps.sh xina_dmesg.sh"
tests=${*:-$ALL}

n=0
for t in $tests; do n=$((n + 1)); done
echo "TAP version 13"
echo "1..$n"

i=0
failed=0
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
			failed=1
			continue
		}
		cmd="/xina/bin/$t"
	elif [ -f "./$t" ]; then
		cmd="bash ./$t"
	else
		echo "ok $i $t # SKIP not in the initramfs"
		continue
	fi
	out=/tmp/$t.out
	$cmd > "$out" 2>&1
	rc=$?
	sed 's/^/# /' "$out"
	case $rc in
	0) echo "ok $i $t" ;;
	4) echo "ok $i $t # SKIP" ;;
	*) echo "not ok $i $t # exit $rc"; failed=1 ;;
	esac
done
exit $failed
