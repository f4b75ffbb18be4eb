# SPDX-License-Identifier: GPL-2.0
#
# Shared helpers of the shell selftests (selftests/net manner): TAP output,
# one log_test line per check, skip with a reason, cleanup by trap.
#
#   . "$(dirname "$0")/lib.sh"
#   tap_begin N
#   check_err $? "what went wrong"; log_test "name"
#   tap_end          (exits 0 all passed, 1 some failed, 4 all skipped)

ksft_pass=0
ksft_fail=0
ksft_skip=4
XINA_ROOT=${XINA_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
O=${O:-$XINA_ROOT/build}
case "$O" in /*) ;; *) O=$XINA_ROOT/$O ;; esac
export XINA_ROOT O

tap_n=0
tap_pass=0
tap_failed=0
tap_skipped=0
ret=0
retmsg=""

tap_begin()
{
	echo "TAP version 13"
	echo "1..$1"
}

# check_err RC MSG: remember the first failure of the current test.
check_err()
{
	if [ "$ret" -eq 0 ] && [ "$1" -ne 0 ]; then
		ret=$1
		retmsg=$2
	fi
}

# check_fail RC MSG: the command was expected to fail.
check_fail()
{
	if [ "$ret" -eq 0 ] && [ "$1" -eq 0 ]; then
		ret=1
		retmsg=$2
	fi
}

# log_test NAME: report the current test and start a new one.
log_test()
{
	tap_n=$((tap_n + 1))
	if [ "$ret" -eq 0 ]; then
		echo "ok $tap_n - $1"
		tap_pass=$((tap_pass + 1))
	else
		echo "not ok $tap_n - $1"
		echo "#   $retmsg"
		tap_failed=$((tap_failed + 1))
	fi
	ret=0
	retmsg=""
}

log_skip()
{
	tap_n=$((tap_n + 1))
	echo "ok $tap_n - $1 # SKIP $2"
	tap_skipped=$((tap_skipped + 1))
	ret=0
	retmsg=""
}

log_info()
{
	echo "# $*"
}

tap_end()
{
	echo "# $tap_pass passed, $tap_failed failed, $tap_skipped skipped"
	[ "$tap_failed" -gt 0 ] && exit 1
	[ "$tap_pass" -eq 0 ] && [ "$tap_skipped" -gt 0 ] && exit $ksft_skip
	exit 0
}

# require_root / require_cmd: skip the whole test with the reason.
require_root()
{
	if [ "$(id -u)" -ne 0 ]; then
		echo "1..0 # SKIP needs root"
		exit $ksft_skip
	fi
}

require_cmd()
{
	local c

	for c in "$@"; do
		if ! command -v "$c" >/dev/null 2>&1 && [ ! -e "$c" ]; then
			echo "1..0 # SKIP $c not found"
			exit $ksft_skip
		fi
	done
}

# busywait SECONDS CMD...: poll CMD until it succeeds or time runs out.
busywait()
{
	local deadline=$((SECONDS + $1))

	shift
	until "$@"; do
		[ "$SECONDS" -ge "$deadline" ] && return 1
		sleep 0.05
	done
}

# A name no other test (or a concurrent run) uses.
unique_name()
{
	echo "$1$$$(printf '%04x' $((RANDOM)))"
}

# rack_test_init PREFIX: the rack of a test (scripts/rack.sh must be
# sourced): RACK, its pin directory PIN, a scratch directory TMP, all
# removed on exit, also when interrupted, and the key file KEYFILE of its
# jobs in TMP (exported as XINA_KEY_FILE).
rack_test_init()
{
	RACK=$(unique_name "$1")
	PIN=$(rack_pin_dir "$RACK")
	TMP=$(mktemp -d)
	trap 'rack_down "$RACK"; rm -rf "$TMP"' EXIT
	trap 'exit 1' INT TERM
	# The secret of the test's jobs, in the test's own directory: given
	# to "job add ... keyfile" and read by the workers (XINA_KEY_FILE).
	KEYFILE=$TMP/job.key
	"$O/xinactl" genkey "$KEYFILE" || exit 1
	export XINA_KEY_FILE=$KEYFILE
}

# xctl ARGS...: xinactl in the rack's switch namespace.
xctl()
{
	ip netns exec "$RACK-sw" "$O/xinactl" -P "$PIN" "$@"
}

# check_workers N DIR [PREFIX]: every one of N workers verified its result
# (DIR/PREFIXi.json from xina-allreduce --json, PREFIX "w" by default; its
# stderr in DIR/PREFIXi.err), and all got the same bits.
check_workers()
{
	local n=$1 dir=$2 p=${3:-w} i sums

	for ((i = 0; i < n; i++)); do
		if [ "$(jq -r .verified "$dir/$p$i.json" 2>/dev/null)" != true ]; then
			check_err 1 "worker $p$i: $(tail -n2 "$dir/$p$i.err" | tr '\n' ' ')"
			return
		fi
	done
	sums=$(for ((i = 0; i < n; i++)); do jq -r .checksum "$dir/$p$i.json"; done |
	       sort -u | wc -l)
	[ "$sums" -eq 1 ]
	check_err $? "workers disagree on the result ($sums different checksums)"
}
