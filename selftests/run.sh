#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kselftest-style runner: runs each test, indents its TAP output, and prints
# one "ok N selftests: xina: TEST" line per test and a closing
# "N passed, N failed, N skipped" line.  Exit 0 when nothing failed.
#
#   selftests/run.sh [TEST...]       (default: the host list below)
#
# XINA_TEST_TIMEOUT bounds each test (seconds, default 900).

here=$(cd "$(dirname "$0")" && pwd)
O=${O:-$here/../build}
case "$O" in /*) ;; *) O=$(cd "$here/.." && pwd)/$O ;; esac
export O

host_tests="xina_fastpath xinactl_args.sh swagg_e2e.sh xina_e2e.sh
	    xina_loss.sh xina_dead_worker.sh xina_lib.sh"
[ $# -gt 0 ] || set -- $host_tests

pass=0
fail=0
skip=0
n=0
echo "TAP version 13"
echo "1..$#"
for t in "$@"; do
	n=$((n + 1))
	if [ -x "$O/selftests/$t" ]; then
		cmd=$O/selftests/$t
	elif [ -x "$here/$t" ]; then
		cmd=$here/$t
	else
		echo "not ok $n selftests: xina: $t # test not built"
		fail=$((fail + 1))
		continue
	fi
	echo "# selftests: xina: $t"
	start=$SECONDS
	timeout --foreground -k 10 "${XINA_TEST_TIMEOUT:-900}" "$cmd" 2>&1 | sed -u 's/^/# /'
	rc=${PIPESTATUS[0]}
	took=$((SECONDS - start))
	case $rc in
	0) echo "ok $n selftests: xina: $t (${took}s)"; pass=$((pass + 1)) ;;
	4) echo "ok $n selftests: xina: $t # SKIP"; skip=$((skip + 1)) ;;
	124) echo "not ok $n selftests: xina: $t # TIMEOUT after ${took}s"; fail=$((fail + 1)) ;;
	*) echo "not ok $n selftests: xina: $t # exit=$rc (${took}s)"; fail=$((fail + 1)) ;;
	esac
done
echo "$pass passed, $fail failed, $skip skipped"
[ -d "$O" ] && echo "$pass $fail $skip" > "$O/check-host.result"
[ "$fail" -eq 0 ]
