#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The main job (make demo): a rack of 4 worker namespaces and one switch
# namespace, xina's XDP fast path on the switch ports, and an allreduce of a
# 64 MiB float32 tensor and a 64 MiB int32 tensor through it.  Every worker
# checks every element of its result; the demo prints what was verified,
# the goodput and the switch's counters, and tears the rack down (also when
# interrupted).
#
#   scripts/demo.sh [ workers N ] [ mib M ]

set -u
XINA_ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$XINA_ROOT/scripts/rack.sh"

N=4
MIB=64
while [ $# -gt 0 ]; do
	case "$1" in
	workers) N=$2; shift 2 ;;
	mib) MIB=$2; shift 2 ;;
	*) echo "usage: demo.sh [ workers N ] [ mib M ]" >&2; exit 2 ;;
	esac
done

RACK=xdemo$$
PIN=$(rack_pin_dir "$RACK")
# The fastest configuration the rack supports (scripts/rack.sh): jumbo
# frames at MTU 9000 carrying 2048 int32 each, the ports in generic XDP
# mode so that the workers' GSO trains reach the fast path whole.
MTU=$RACK_FAST_MTU
SLOTS=$RACK_FAST_SLOTS
ELEMS=$RACK_FAST_ELEMS
TMP=$(mktemp -d)
# The jobs' secret: "job add ... keyfile" creates it, the workers read it.
KEYFILE=$TMP/demo.key
fail=0

cleanup()
{
	rack_down "$RACK"
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "demo: interrupted, tearing the rack down" >&2; exit 130' INT TERM

say()
{
	printf '\n== %s\n' "$*"
}

xctl()
{
	ip netns exec "$RACK-sw" "$XINACTL" -P "$PIN" "$@"
}

if [ "$(id -u)" -ne 0 ]; then
	echo "demo: must run as root (it creates network namespaces and attaches XDP)" >&2
	exit 1
fi

say "rack: switch namespace $RACK-sw (bridge br0 $RACK_SWITCH_IP), $N workers on veth ports, MTU $MTU, XDP in $RACK_FAST_MODE mode"
rack_up "$RACK" "$N" mtu "$MTU" || exit 1
rack_xdp "$RACK" "$N" "$PIN" "$RACK_FAST_MODE" || exit 1
# One job per run: a job's slot rounds continue where its last worker
# process left them, so a new training run gets a fresh job (as SwitchML's
# controller resets the switch for each job).
rack_job_add "$RACK" "$N" 1 "$KEYFILE" "$SLOTS" "$ELEMS" "$PIN" || exit 1
rack_job_add "$RACK" "$N" 2 "$KEYFILE" "$SLOTS" "$ELEMS" "$PIN" || exit 1
xctl backend
xctl job show
xctl dev show

JOB=0
for dtype in f32 i32; do
	JOB=$((JOB + 1))
	say "allreduce: $MIB MiB $dtype on each of $N workers, through the XDP switch"
	rack_allreduce "$RACK" "$N" "$TMP/$dtype" --job "$JOB" --key-file "$KEYFILE" \
		--slots "$SLOTS" --elems "$ELEMS" --dtype "$dtype" \
		--bytes $((MIB << 20)) --iters 3 --timeout-ms 5000
	failed=$?
	for ((i = 0; i < N; i++)); do
		if [ ! -s "$TMP/$dtype/w$i.json" ]; then
			echo "worker $i: FAILED: $(tail -n2 "$TMP/$dtype/w$i.err")"
			continue
		fi
		jq -r --arg w "$i" '"worker \($w): verified=\(.verified) " +
			"elements=\(.bytes / 4 | floor) max_abs_err=\(.max_abs_err) bound=\(.bound) " +
			"checksum=\(.checksum) goodput=\(.goodput_Bps / 1e6 * 10 | floor / 10) MB/s " +
			"sent=\(.sent) retrans=\(.retrans)"' "$TMP/$dtype/w$i.json"
	done
	sums=$(cat "$TMP/$dtype"/w*.json 2>/dev/null | jq -r .checksum | sort -u | wc -l)
	verified=$(cat "$TMP/$dtype"/w*.json 2>/dev/null | jq -s 'map(select(.verified == true)) | length')
	if [ "$failed" -eq 0 ] && [ "$verified" -eq "$N" ] && [ "$sums" -eq 1 ]; then
		case $dtype in
		i32) echo "VERIFIED: int32, every element on every worker bit-exact against the sum each worker computed itself" ;;
		f32) echo "VERIFIED: float32, every element within the block floating point bound of the exact sum, bitwise identical on all $N workers" ;;
		esac
	else
		echo "FAILED: $dtype: $failed workers failed, $verified verified, $sums distinct results"
		fail=1
	fi
done

say "switch counters (xinactl stats)"
xctl stats

say "tearing the rack down"
exit $fail
