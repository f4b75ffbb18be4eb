#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kselftest-style runner: runs each test, indents its TAP output, judges it
# (selftests/tap_judge.sh: exit status, "not ok" and skips at any depth
# against selftests/expected-skips) and prints one
# "ok N selftests: xina: TEST" line per test and a closing line with the
# tests and the checks (leaf TAP points) passed, failed and skipped.
# Exit 0 when nothing failed.
#
#   selftests/run.sh [TEST...]       (default: the host list below)
#
# XINA_TEST_TIMEOUT bounds each test (seconds, default 900).  The counts
# go to $O/check-host.result for the closing line of "make check".

here=$(cd "$(dirname "$0")" && pwd)
O=${O:-$here/../build}
case "$O" in /*) ;; *) O=$(cd "$here/.." && pwd)/$O ;; esac
export O
. "$here/tap_judge.sh"

host_tests="xina_auth xina_fastpath xina_bpf_stack.sh xina_pack xina_rtt xinactl_args.sh xinactl_conf.sh swagg_e2e.sh
	    xina_e2e.sh xina_trains.sh xina_config.sh xina_job_life.sh xina_join.sh xina_loss.sh
	    xina_dead_worker.sh xina_lib.sh xina_types.sh xina_xsk.sh xina_rogue.sh
	    xina_multirank.sh xina_routed.sh xina_racks.sh xina_python.sh
	    xina_mpi.sh xina_pkg.sh xina_ring.sh xina_fallback.sh xina_sparse.sh
	    xina_rounds.sh"
[ $# -gt 0 ] || set -- $host_tests

pass=0
fail=0
skip=0
checks_pass=0
checks_fail=0
checks_skip=0
n=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT
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
	timeout --foreground -k 10 "${XINA_TEST_TIMEOUT:-900}" "$cmd" 2>&1 |
		tee "$out" | sed -u 's/^/# /'
	rc=${PIPESTATUS[0]}
	took=$((SECONDS - start))
	if [ "$rc" -eq 124 ]; then
		echo "not ok $n selftests: xina: $t # TIMEOUT after ${took}s"
		fail=$((fail + 1))
		continue
	fi
	tap_judge "$t" "$rc" "$out"
	tap_tally "$n" "selftests: xina: $t" "$took"
done
echo "host: tests: $pass passed, $fail failed, $skip skipped;" \
     "checks: $checks_pass passed, $checks_fail failed, $checks_skip skipped"
[ -d "$O" ] && echo "$pass $fail $skip $checks_pass $checks_fail $checks_skip" \
	> "$O/check-host.result"
[ "$fail" -eq 0 ]
