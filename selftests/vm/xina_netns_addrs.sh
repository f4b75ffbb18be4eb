#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Two switches in two network namespaces, on the module backend, attached
# through one pin dir (as "ip netns exec NS xinactl dev attach" with the
# default pin dir does for every namespace): each takes only xina packets
# addressed to its own namespace's addresses.  Jobs live in xina.ko per
# namespace; the switch's addresses belong to each port's programs
# (xina_addrs is not pinned), written by "dev attach" from the namespace
# the port is in.  When the map was pinned, the last attach's addresses
# were every port's: switch A took a packet to B's address (with a job of
# the same id) and let packets to its own address pass.
#
# Rack A: 10.77.0.0/24, switch 10.77.0.254, port p0.  Rack B: 10.78.0.0/24,
# switch 10.78.0.254, port q0 (pins are named by device: B's p0 renamed).
# Each worker routes the other rack's subnet through its own switch, so a
# packet to the other switch's address enters its own switch's port.
. ./lib.sh

export XINA_ROOT=/xina/root O=/xina/o
. "$XINA_ROOT/scripts/rack.sh"

A=xna$$
B=xnb$$
JOB=5
PIN=/run/xina-shared$$
TMP=$(mktemp -d)
KEYFILE=$TMP/job.key

cleanup() {
	rack_down "$A"
	rack_down "$B"
	umount "$PIN" 2>/dev/null
	rm -rf "$PIN" "$TMP"
}
trap cleanup EXIT

# Rack B's addresses for the rack.sh helpers.
in_b() {
	RACK_NET=10.78.0 RACK_SWITCH_IP=10.78.0.254 "$@"
}

xctl() {	# xctl RACK ARGS...
	local rack=$1

	shift
	ip netns exec "$rack-sw" xinactl -P "$PIN" "$@"
}

job_rx() {	# job_rx RACK: packets job $JOB of RACK's switch saw
	xctl "$1" -j stats job "$JOB" | jq -r '.jobs[0].rx'
}

# allreduce RACK OUTDIR SWFN [env...]: the rack's one worker, rank 0 of its
# job, sending to "SWFN 0".
allreduce() {
	local rack=$1 out=$2 swfn=$3

	shift 3
	"$@" rack_allreduce_at rack_worker_ns rack_worker_ip "$swfn" "$rack" 1 "$out" \
		--job "$JOB" --key-file "$KEYFILE" --slots 8 --elems 256 \
		--dtype i32 --bytes 16384 --iters 2 --timeout-ms "${TIMEOUT_MS:-3000}"
}

a_sw() { echo 10.77.0.254; }
b_sw() { echo 10.78.0.254; }

insmod /xina/modules/xina.ko || exit 1
rc=0
rack_up "$A" 1 || rc=1
in_b rack_up "$B" 1 || rc=1
if [ $rc -eq 0 ]; then
	ip -n "$B-sw" link set p0 down &&
	ip -n "$B-sw" link set p0 name q0 &&
	ip -n "$B-sw" link set q0 up || rc=1
	ip -n "$A-w0" route add 10.78.0.0/24 via 10.77.0.254 || rc=1
	ip -n "$B-w0" route add 10.77.0.0/24 via 10.78.0.254 || rc=1
	rack_pin_mount "$PIN" || rc=1
	# A first, B last: a pinned list would hold B's address only.
	xctl "$A" dev attach p0 || rc=1
	xctl "$B" dev attach q0 || rc=1
	rack_job_add "$A" 1 "$JOB" "$KEYFILE" 8 256 "$PIN" || rc=1
	in_b rack_job_add "$B" 1 "$JOB" "$KEYFILE" 8 256 "$PIN" || rc=1
fi
log_test $rc "two racks in two namespaces, one pin dir, job $JOB in each"
[ $rc -eq 0 ] || exit 1
echo "  pinned under $PIN: $(ls "$PIN" | tr '\n' ' ')"

# Each switch takes the packets to its own address.
for r in A B; do
	rc=0
	if [ $r = A ]; then
		allreduce "$A" "$TMP/own$r" a_sw || rc=1
	else
		allreduce "$B" "$TMP/own$r" b_sw in_b || rc=1
	fi
	grep -q '"verified":true' "$TMP/own$r/w0.json" || rc=1
	[ $rc -eq 0 ] || echo "  worker: $(tail -n1 "$TMP/own$r/w0.err")"
	rx=$(job_rx "${!r}")
	echo "  switch $r: job $JOB rx $rx"
	[ "${rx:-0}" -gt 0 ] 2>/dev/null || rc=1
	log_test $rc "switch $r aggregates what is sent to its own address"
done

# A packet to the other switch's address, entering this switch's port
# (with the right key and a job of that id here): not taken, not
# answered: the worker hears nothing back to its join, this switch's job
# sees nothing.
for r in A B; do
	rc=0
	before=$(job_rx "${!r}")
	if [ $r = A ]; then
		TIMEOUT_MS=300 allreduce "$A" "$TMP/x$r" b_sw && rc=1
	else
		TIMEOUT_MS=300 allreduce "$B" "$TMP/x$r" a_sw in_b && rc=1
	fi
	echo "  worker: $(tail -n1 "$TMP/x$r/w0.err")"
	grep -q 'no answer to the join' "$TMP/x$r/w0.err" || rc=1
	after=$(job_rx "${!r}")
	echo "  switch $r: job $JOB rx $before -> $after"
	# both reads numbers: two failed reads are no pass
	[[ "$before" =~ ^[0-9]+$ ]] || rc=1
	check_eq "$after" "$before" || rc=1
	log_test $rc "switch $r leaves a packet to the other switch's address alone"
done
exit $RET
