# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash disable=SC2034	# tap_* are set for the caller
#
# Judge one test by its exit status and its TAP output, at every nesting
# depth: shared by selftests/run.sh (host) and selftests/vm/run.sh (guest).
#
#   . tap_judge.sh
#   tap_judge TEST RC OUTPUT_FILE
#   tap_tally N LABEL TOOK      the runner's line and counts (below)
#
# A test fails when its exit status is neither 0 nor 4, when any of its TAP
# points says "not ok" (a nested test's too), when it reports no point at
# all, or when anything in it is skipped that selftests/expected-skips does
# not list: a skipped point ("ok N name # SKIP reason"), a skipped file
# ("1..0 # SKIP reason"), or an exit status 4 without either.  A test whose
# every point was skipped, as listed, is skipped; else it passed.
#
# Nested TAP is what a test prints of another test it runs, indented by
# "# " or two spaces per level (selftests/vm/xina_e2e_module.sh runs the
# host's tests).  Only leaves are counted: a point that wraps a nested
# test's output stands for that output, not for a check of its own.
#
# Sets tap_verdict (pass, fail, skip), tap_why (the reason of a failure or
# of a skip) and tap_checks ("PASSED FAILED SKIPPED" of the leaf points);
# prints one diagnostic line per skip and per failed point.
#
# XINA_EXPECTED_SKIPS names the list (default: expected-skips beside this
# file).

TAP_JUDGE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
XINA_EXPECTED_SKIPS=${XINA_EXPECTED_SKIPS:-$TAP_JUDGE_DIR/expected-skips}

# Reads a test's output; prints one line per finding, fields split by tabs:
#   skip  expected|unexpected  POINT  REASON   (POINT "-": the whole file)
#   fail  POINT  WHY   (WHY: the comment line right after the "not ok",
#                      where log_test puts check_err's message; may be "")
#   count PASSED FAILED SKIPPED
#   badlist LINE                               (a malformed list line)
# POSIX awk: mawk on the host, busybox awk in the guest.
# shellcheck disable=SC2016	# an awk program, not shell
TAP_JUDGE_AWK='
function trim(s)
{
	sub(/^[ \t]+/, "", s)
	sub(/[ \t]+$/, "", s)
	return s
}

# A shell glob as an anchored extended regular expression.
function globre(g,   r, i, c)
{
	r = "^"
	for (i = 1; i <= length(g); i++) {
		c = substr(g, i, 1)
		if (c == "*")
			r = r ".*"
		else if (c == "?")
			r = r "."
		else if (index("\\^$.[]|()+{}", c))
			r = r "\\" c
		else
			r = r c
	}
	return r "$"
}

function listed(point, reason,   i)
{
	for (i = 1; i <= nlist; i++)
		if (test ~ lt[i] && point ~ lp[i] && reason ~ lr[i])
			return 1
	return 0
}

function skip(point, reason)
{
	if (point == "")
		point = "(unnamed)"
	if (reason == "")
		reason = "(no reason given)"
	print "skip\t" (listed(point, reason) ? "expected" : "unexpected") \
	      "\t" point "\t" reason
	nskip++
}

# A TAP line at depth d: the points above it wrap nested output.
function nested(d, isskip, isfail,   k)
{
	for (k = 0; k < d; k++) {
		child[k] = 1
		if (isskip)
			cskip[k] = 1
		if (isfail)
			cfail[k] = 1
	}
	if (d > maxd)
		maxd = d
}

BEGIN {
	while ((getline line < list) > 0) {
		if (line ~ /^[ \t]*(#|$)/)
			continue
		if (split(line, f, "|") != 3) {
			print "badlist\t" line
			continue
		}
		nlist++
		lt[nlist] = globre(trim(f[1]))
		lp[nlist] = globre(trim(f[2]))
		lr[nlist] = globre(trim(f[3]))
	}
}

{
	s = $0
	sub(/\r$/, "", s)
	if (pend != "") {
		# the failed point'"'"'s first diagnostic, if it has one
		why = s
		sub(/^[# \t]+/, "", why)
		if (s !~ /^[# \t]*#/ || why ~ /^((not )?ok|1\.\.|TAP version)/)
			why = ""
		if (length(why) > 400)
			why = substr(why, 1, 400) "..."
		print "fail\t" pend "\t" why
		pend = ""
	}
	d = 0
	while (s ~ /^(# |#\t|  )/) {
		s = substr(s, 3)
		d++
	}
	if (s ~ /^1\.\.0([^0-9]|$)/) {
		# A whole (nested) file skipped: "1..0 # SKIP reason".
		r = s
		sub(/^1\.\.0[ \t]*#?[ \t]*/, "", r)
		if (tolower(r) ~ /^skip/)
			sub(/^[^ \t]*[ \t]*/, "", r)
		skip("-", trim(r))
		nested(d, 1, 0)
		next
	}
	if (s ~ /^TAP version/ || s ~ /^1\.\.[0-9]/) {
		nested(d, 0, 0)
		next
	}
	if (s !~ /^(not )?ok([ \t]|$)/)
		next

	notok = s ~ /^not /
	sub(/^(not )?ok[ \t]*/, "", s)
	sub(/^[0-9]+[ \t]*/, "", s)
	sub(/^-[ \t]*/, "", s)
	desc = s
	dir = ""
	i = index(s, "#")
	if (i) {
		desc = substr(s, 1, i - 1)
		dir = trim(substr(s, i + 1))
	}
	desc = trim(desc)
	isskip = !notok && tolower(dir) ~ /^skip/
	reason = dir
	sub(/^[^ \t]*[ \t]*/, "", reason)

	# A wrapper stands for its nested points, unless they do not show
	# what it says (a skip or a failure of its own).
	wrapper = child[d]
	leaf = !wrapper || (isskip && !cskip[d]) || (notok && !cfail[d])
	for (k = d; k <= maxd; k++)
		child[k] = cskip[k] = cfail[k] = 0
	if (!leaf)
		next
	nested(d, isskip, notok)
	if (notok) {
		pend = desc == "" ? "(unnamed)" : desc
		nfail++
	} else if (isskip) {
		skip(desc, reason)
	} else {
		npass++
	}
}

END {
	if (pend != "")
		print "fail\t" pend "\t"
	print "count\t" npass + 0 "\t" nfail + 0 "\t" nskip + 0
}'

tap_judge()
{
	local test=$1 rc=$2 out=$3 kind a b c d unexpected=0 last findings
	local p=0 f=0 s=0

	tap_verdict=pass
	tap_why=""
	if [ ! -r "$XINA_EXPECTED_SKIPS" ]; then
		echo "# FAIL: no list of expected skips ($XINA_EXPECTED_SKIPS)"
		unexpected=1
	fi
	# No process substitution: the guest has no /dev/fd.
	findings=$(awk -v test="$test" -v list="$XINA_EXPECTED_SKIPS" \
		       "$TAP_JUDGE_AWK" "$out")
	while IFS=$'\t' read -r kind a b c d; do
		case $kind in
		skip)
			c=$c${d:+ $d}
			if [ "$a" = expected ]; then
				echo "# skip (expected): $test: $b: $c"
			else
				echo "# SKIP NOT EXPECTED: $test: $b: $c"
				unexpected=$((unexpected + 1))
			fi
			;;
		fail) echo "# FAIL: $test: $a${b:+ -- $b}" ;;
		count) p=$a f=$b s=$c ;;
		badlist)
			echo "# FAIL: malformed line in $XINA_EXPECTED_SKIPS: $a"
			unexpected=$((unexpected + 1))
			;;
		esac
	done <<< "$findings"

	# Exit status 4 says "skipped": the output must say why.
	if [ "$rc" -eq 4 ] && [ "$s" -eq 0 ]; then
		last=$(grep -v '^[[:space:]]*$' "$out" | tail -n1)
		echo "# SKIP NOT EXPECTED: $test: -: exit 4 without a SKIP line (last output: ${last:-none})"
		unexpected=$((unexpected + 1))
	fi
	tap_checks="$p $f $s"

	if [ "$rc" -ne 0 ] && [ "$rc" -ne 4 ]; then
		tap_verdict=fail
		tap_why="exit $rc"
	elif [ "$unexpected" -gt 0 ]; then
		tap_verdict=fail
		tap_why="$unexpected skip(s) not in $(basename "$XINA_EXPECTED_SKIPS")"
	elif [ "$f" -gt 0 ]; then
		tap_verdict=fail
		tap_why="$f point(s) not ok, exit $rc"
	elif [ "$p" -eq 0 ] && [ "$s" -eq 0 ]; then
		tap_verdict=fail
		tap_why="no TAP point in the output"
	elif [ "$p" -eq 0 ]; then
		tap_verdict=skip
		tap_why="every point skipped, as expected"
	fi
}

# tap_tally N LABEL TOOK: after tap_judge, the runner's TAP line for the
# test (point N, LABEL, TOOK seconds) and its counts: adds to the caller's
# pass, fail, skip and checks_pass, checks_fail, checks_skip.
tap_tally()
{
	local n=$1 label=$2 took=$3 p f s skipped=""

	read -r p f s <<< "$tap_checks"
	checks_pass=$((checks_pass + p))
	checks_fail=$((checks_fail + f))
	checks_skip=$((checks_skip + s))
	case $tap_verdict in
	pass)
		[ "$s" -gt 0 ] && skipped=", $s skipped"
		echo "ok $n $label (${took}s: $p checks passed$skipped)"
		pass=$((pass + 1))
		;;
	skip)
		echo "ok $n $label # SKIP $tap_why"
		skip=$((skip + 1))
		;;
	*)
		echo "not ok $n $label # $tap_why (${took}s)"
		fail=$((fail + 1))
		;;
	esac
}
