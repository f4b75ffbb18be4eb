#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# End-to-end allreduce through the XDP switch, in a rack of network
# namespaces: 2, 4 and 8 workers, int32 and float32, from one element to
# 64 MiB, including sizes that leave the last packet part-full.  Every worker
# checks every element itself (int32 bit-exact, float32 within the bound and
# bitwise identical on every worker); the switch's counters must add up.
# At 4 workers, also as 8 calls in flight at once (xina-allreduce
# --inflight 8: libxina's non-blocking calls, waited for on the completion
# fd), checked the same way; and at 2 workers with the ports in generic
# XDP mode, one datagram per packet and in GSO trains.
#
# XINA_E2E_MAX_BYTES caps the sizes (the VM run uses a smaller cap).

. "$(dirname "$0")/lib.sh"
require_root
require_cmd jq "$O/xinactl" "$O/xina-allreduce"
. "$XINA_ROOT/scripts/rack.sh"

rack_test_init xe
ELEMS=${XINA_E2E_ELEMS:-256}
SLOTS=${XINA_E2E_SLOTS:-128}
MAX_BYTES=${XINA_E2E_MAX_BYTES:-$((64 << 20))}
JOB=100

stat_of()	# stat_of JOB NAME
{
	xctl -j stats job "$1" | jq -r ".jobs[0].$2 // empty"
}

# sample_jobs FILE STOPFILE JOB1 JOB2: until STOPFILE exists, append lines
# "A B A2" to FILE: JOB1's complete counter, then JOB2's, then JOB1's again.
# A line with A > 0, 0 < B < JOB2's final count and A2 < JOB1's final count
# shows both jobs running when B was read.
sample_jobs()
{
	local file=$1 stop=$2 j1=$3 j2=$4 a b a2

	while [ ! -e "$stop" ]; do
		complete_get a "$j1"
		complete_get b "$j2"
		complete_get a2 "$j1"
		echo "$a $b $a2"
		sleep 0.02
	done > "$file"
}

# complete_get VAR JOB: VAR := the job's complete counter; read from sysfs
# without a fork when xina.ko holds the job (a sample through xinactl takes
# too long in the VM), else through xinactl.
complete_get()
{
	local f=/sys/kernel/xina/jobs/$2@$RACK_NS_INO/completions

	if [ -r "$f" ]; then
		read -r "$1" < "$f"
	else
		printf -v "$1" %s "$(stat_of "$2" complete)"
	fi
}

# run_case N DTYPE BYTES [XINA-ALLREDUCE ARGS...]
run_case()
{
	local n=$1 dtype=$2 bytes=$3 dir contrib complete

	shift 3
	JOB=$((JOB + 1))
	dir=$TMP/$JOB
	rack_job_add "$RACK" "$n" "$JOB" "$KEYFILE" "$SLOTS" "$ELEMS" "$PIN"
	check_err $? "job add $JOB failed"
	rack_allreduce "$RACK" "$n" "$dir" --job "$JOB" --key-file "$KEYFILE" \
		--slots "$SLOTS" --elems "$ELEMS" --dtype "$dtype" \
		--bytes "$bytes" --iters 2 --timeout-ms 5000 "$@"
	check_err $? "$? of $n workers failed: $(for f in "$dir"/w*.err; do
		[ -s "$f" ] && echo "[$(basename "$f" .err)] $(tail -n1 "$f")"; done | tr '\n' ' ')"
	[ "$ret" -ne 0 ] && log_info "switch: $(xctl -j stats job "$JOB")"
	check_workers "$n" "$dir"

	# Without loss every completion is made of exactly n contributions,
	# nothing is answered twice and nothing is dropped.
	contrib=$(stat_of "$JOB" contrib)
	complete=$(stat_of "$JOB" complete)
	[ -n "$contrib" ] && [ "$complete" -gt 0 ] 2>/dev/null &&
		[ "$contrib" -eq $((n * complete)) ]
	check_err $? "switch counters: contrib=$contrib complete=$complete, want contrib = $n x complete"
	log_info "$(jq -r '"\(.workers // "") goodput \(.goodput_Bps // 0 | . / 1e6 | floor) MB/s per worker"' "$dir/w0.json" 2>/dev/null)"
	if [ "${1:-}" = --inflight ]; then
		[ "$(jq -r .inflight "$dir/w0.json" 2>/dev/null)" = "$2" ]
		check_err $? "worker 0 did not run $2 calls in flight"
	fi
	xctl job del "$JOB"
	log_test "allreduce $n workers $dtype $bytes bytes${1:+ $*}"
}

sizes="4 1020 1028 $(((1 << 20) + 12)) $((64 << 20))"
ncases=0
for n in 2 4 8; do
	for s in $sizes; do
		[ "$s" -le "$MAX_BYTES" ] && ncases=$((ncases + 2))
	done
done
# 4 workers, 8 calls in flight: 64 blocks of 256 elements, the last one
# part-full (within the VM's cap too)
INFLIGHT_BYTES=$((64 * 256 * 4 - 4))
[ "$INFLIGHT_BYTES" -le "$MAX_BYTES" ] && ncases=$((ncases + 2))
tap_begin $((ncases + 6))

for n in 2 4 8; do
	rack_up "$RACK" "$n" >/dev/null && rack_xdp "$RACK" "$n" "$PIN"
	if [ $? -ne 0 ]; then
		check_err 1 "rack of $n workers could not be set up"
		log_test "rack $n workers"
		tap_end
	fi
	for s in $sizes; do
		[ "$s" -le "$MAX_BYTES" ] || continue
		for dtype in i32 f32; do
			run_case "$n" "$dtype" "$s"
		done
	done
	if [ "$n" -eq 4 ] && [ "$INFLIGHT_BYTES" -le "$MAX_BYTES" ]; then
		for dtype in i32 f32; do
			run_case "$n" "$dtype" "$INFLIGHT_BYTES" --inflight 8
		done
	fi

	if [ "$n" -eq 2 ]; then
		# The box keeps routing: non-xina traffic crosses the switch
		# with the fast path attached, and is counted as passed.
		ip netns exec "$RACK-w0" ping -c 3 -i 0.2 -q "$(rack_worker_ip 1)" >/dev/null
		check_err $? "ping between workers through the switch failed"
		pass=$(xctl -j stats | jq -r '.switch.pass // empty')
		[ -n "$pass" ] && [ "$pass" -gt 0 ]
		check_err $? "switch counted no passed packets (pass='$pass')"
		log_test "non-xina traffic passes the attached switch"

		# Two jobs at once on one switch (ATP): each worker runs in
		# both, results stay apart, and they did run at the same time:
		# while they ran, a sample of the switch's counters shows both
		# part-way (each completed some slots, neither all of its own).
		rack_job_add "$RACK" 2 901 "$KEYFILE" 64 "$ELEMS" "$PIN" &&
		RACK_WORKER_PORT=7100 rack_job_add "$RACK" 2 902 "$KEYFILE" 64 "$ELEMS" "$PIN"
		check_err $? "two jobs could not be added"
		# Long enough to overlap for many samples; less under TCG.
		ob=$((MAX_BYTES < (32 << 20) ? (1 << 20) : (32 << 20)))
		RACK_NS_INO=$(stat -L -c %i "/run/netns/$RACK-sw")
		sample_jobs "$TMP/samples" "$TMP/stop" 901 902 &
		sampler=$!
		rack_allreduce "$RACK" 2 "$TMP/j901" --job 901 --key-file "$KEYFILE" --slots 64 \
			--elems "$ELEMS" --dtype i32 --bytes "$ob" --iters 2 &
		p1=$!
		RACK_WORKER_PORT=7100 rack_allreduce "$RACK" 2 "$TMP/j902" --job 902 \
			--key-file "$KEYFILE" --slots 64 --elems "$ELEMS" --dtype f32 \
			--bytes "$ob" --iters 2
		check_err $? "job 902 workers failed"
		wait $p1
		check_err $? "job 901 workers failed"
		touch "$TMP/stop"
		wait $sampler
		check_workers 2 "$TMP/j901"
		check_workers 2 "$TMP/j902"
		c1=$(stat_of 901 complete)
		c2=$(stat_of 902 complete)
		both=$(awk -v c1="$c1" -v c2="$c2" \
			'$1 > 0 && $3 < c1 && $2 > 0 && $2 < c2 { n++ } END { print n + 0 }' \
			"$TMP/samples")
		[ "$both" -gt 0 ]
		check_err $? "no sample of $(wc -l < "$TMP/samples") shows both jobs part-way (final complete: $c1, $c2)"
		log_info "jobs 901 and 902 both part-way in $both of $(wc -l < "$TMP/samples") samples"
		xctl job del 901
		xctl job del 902
		log_test "two concurrent jobs on one switch"
	fi
done

# Contributions to the same slots from both CPUs: the workers above are
# pinned to alternate CPUs; here it is made explicit with 2 workers, one per
# CPU, and checked against the per-CPU receive counters of the switch.
if [ "$(nproc)" -ge 2 ]; then
	rack_up "$RACK" 2 >/dev/null && rack_xdp "$RACK" 2 "$PIN"
	check_err $? "rack of 2 could not be set up"
	run_case_dir=$TMP/cpu
	rack_job_add "$RACK" 2 999 "$KEYFILE" 32 "$ELEMS" "$PIN"
	rack_allreduce "$RACK" 2 "$run_case_dir" --job 999 --key-file "$KEYFILE" --slots 32 \
		--elems "$ELEMS" --dtype i32 --bytes $((4 << 20)) --iters 3
	check_err $? "workers on different CPUs failed"
	check_workers 2 "$run_case_dir"
	cpus=$(xctl -j stats job 999 | jq -r '[.jobs[0].rx_cpu // [] | .[] | select(. > 0)] | length')
	[ "${cpus:-0}" -ge 2 ]
	check_err $? "contributions reached the switch on $cpus CPU(s), want 2"
	log_test "contributions to one slot from both CPUs"
else
	log_skip "contributions to one slot from both CPUs" "one CPU"
fi

# Generic XDP (dev attach ... mode generic), for ports without native XDP:
# TC sees the frame from its IPv4 header on (6.12, 6.18), so xina_fanout
# finds the mark xina_xdp wrote over a result's Ethernet header at the MAC
# header and gives the frame its 14 bytes back.  First one datagram per
# packet (--no-gso), as a NIC hands them to XDP.
rack_up "$RACK" 2 >/dev/null && rack_pin_mount "$PIN" &&
	xctl dev attach p0 mode generic && xctl dev attach p1 mode generic
check_err $? "rack of 2 in generic mode could not be set up"
[ "$(xctl -j dev show | jq -r '[.devs[].mode] | unique | join(",")')" = generic ]
check_err $? "the ports are not in generic mode: $(xctl -j dev show)"
run_case 2 i32 $((256 << 10)) --no-gso

# The same rack, the workers sending GSO trains (as they do by default):
# a port in generic mode takes each train as one frame.  The map backend
# takes every datagram of it as if it came alone and sends a train of
# results on whole (bpf/xina.bpf.c, "trains"): the switch counts the
# trains.  xina.ko's backend takes them the same way, each datagram by its
# kfunc xina_kf_train().
gstat()
{
	xctl -j stats | jq -r ".switch.$1 // empty"
}
train0=$(gstat train)
refused0=$(gstat train_refused)
mal0=$(gstat malformed)
run_case 2 i32 $((256 << 10))
[ "$(gstat train)" -gt "$train0" ] 2>/dev/null &&
	[ "$(gstat train_refused)" = "$refused0" ] &&
	[ "$(gstat malformed)" = "$mal0" ]
check_err $? "switch: train $train0 -> $(gstat train) (want more), train_refused $refused0 -> $(gstat train_refused), malformed $mal0 -> $(gstat malformed) (want the same)"
log_info "switch: $(($(gstat train) - train0)) trains, $(gstat train_part) sent with fillers"
log_test "GSO trains on generic ports: every datagram taken, results sent on as trains"

tap_end
