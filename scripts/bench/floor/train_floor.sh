#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The transport floor of an in-network allreduce on the veth rack: what
# moving each worker's tensor to the switch once and a result back to
# every worker costs the host, with no aggregation and no authentication,
# in three shapes (train_floor.bpf.c):
#
#   frame  an XDP program on the switch's ports, as xina's XDP switch has:
#          veth turns GSO off towards them, so the workers' GSO trains are
#          segmented in software and every frame is copied for XDP; the
#          switch's TC program then sees one frame at a time.
#   train  TC only: a worker's GSO train (NSEG datagrams in one skb)
#          crosses veth whole, the switch sees it once, and its clones
#          reach the workers' UDP_GRO sockets as one receive.
#   gtrain the same with an XDP program in generic mode on the ports: veth
#          keeps GSO, the train crosses whole, and the stack copies it
#          into XDP's pages once before the program (a socket's skb is
#          nonlinear); a switch running xina's fast path over whole
#          trains in generic XDP would pay that.
#
# READ=1: the switch's program also reads every payload byte once; READ=2:
# and does xina's arithmetic on it, scalar (swap, NH, add), writing a result
# into what it fans out (train_floor.bpf.c).
# A result is sent when the last worker's datagram (or train) of its number
# arrived, so the workers move in step as in an allreduce, each at most
# WINDOW trains ahead of its results; nothing is resent.
#
# Prints one line per run, "key=value" words: shape, read, run, cpu_s_per_gib
# (the host's busy CPU seconds, all CPUs, per GiB of one worker's bytes;
# the machine is shared: other work shows in it), goodput_Bps (one worker's
# bytes over the slowest worker's time), worker_cpu_s (user+system of all
# workers), receives (their receive calls), lost_bytes (results that never
# came: a run with loss measured less than it should).
#
# Usage: scripts/bench/floor/train_floor.sh [WORKERS [MIB [RUNS]]]
# (as root; SHAPES="frame train gtrain", READS="0 1 2", SEG, NSEG, WINDOW, TF_RACK)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
O=${O:-$ROOT/build}
N=${1:-4}
MIB=${2:-256}
RUNS=${3:-3}
SEG=${SEG:-8240}	# a 2048-int32 xina packet's UDP payload
NSEG=${NSEG:-7}		# datagrams per train (under 64 KiB)
WINDOW=${WINDOW:-5}	# trains in flight (xina: 32 slots of 2048)
RACK=${TF_RACK:-tf}
BIN=$O/bench/floor/train_floor
OBJ=$O/bench/floor/train_floor.bpf.o

. "$ROOT/scripts/rack.sh"

mkdir -p "$(dirname "$BIN")"
clang -O2 -g -target bpf -mcpu=v3 -Wall -Werror \
	-I/usr/include/x86_64-linux-gnu -c "$HERE/train_floor.bpf.c" -o "$OBJ" &&
	cc -O2 -Wall -Werror -o "$BIN" "$HERE/train_floor.c" -lbpf ||
	{ echo "train_floor: build failed" >&2; exit 1; }

[ "$(id -u)" = 0 ] || { echo "train_floor: run as root" >&2; exit 1; }
TMP=$(mktemp -d) || exit 1
trap 'rack_down "$RACK"; rm -rf "$TMP"' EXIT

busy_jiffies()
{
	awk '/^cpu /{print $2+$3+$4+$7+$8; exit}' /proc/stat
}

# run_one SHAPE READ RUN: a rack with the switch's programs, one run, down.
run_one()
{
	local shape=$1 read=$2 r=$3 ports="" i t0 t1 slow gib start
	local -a pids

	rack_up "$RACK" "$N" mtu 9000 >/dev/null || exit 1
	for ((i = 0; i < N; i++)); do
		ports+=" p$i=$(rack_worker_ip "$i"),$(ip -n "$RACK-w$i" -j link show eth0 |
			sed -n 's/.*"address":"\([^"]*\)".*/\1/p')"
	done
	# shellcheck disable=SC2086
	ip netns exec "$RACK-sw" "$BIN" switch "$OBJ" "$shape" "$read" \
		"$RACK_SWITCH_IP" $ports || exit 1
	# every worker bound before the first result: they start together
	start=$(($(date +%s%3N) + 1000))
	for ((i = 0; i < N; i++)); do
		ip netns exec "$RACK-w$i" "$BIN" worker "$RACK_SWITCH_IP" \
			$((MIB << 20)) "$SEG" "$NSEG" "$WINDOW" "$start" \
			>"$TMP/tf.$i" &
		pids+=($!)
	done
	sleep "$(awk -v d=$((start - 20 - $(date +%s%3N))) 'BEGIN{print (d > 0 ? d : 0)/1000}')"
	t0=$(busy_jiffies)
	for i in "${pids[@]}"; do
		wait "$i" || { echo "train_floor: a worker failed" >&2; exit 1; }
	done
	t1=$(busy_jiffies)
	slow=$(cat "$TMP"/tf.[0-9]* | sort -n | tail -1 | awk '{print $1}')
	gib=$(awk -v m="$MIB" -v s="$SEG" -v n="$NSEG" \
		'BEGIN{t=s*n; print int(m*1048576/t)*t/1073741824}')
	cat "$TMP"/tf.[0-9]* | awk -v sh="$shape" -v rd="$read" -v r="$r" \
		-v j=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" -v g="$gib" -v s="$slow" \
		'{w += $2 + $3; c += $4; l += $5}
		END{printf "floor shape=%s read=%s run=%d cpu_s_per_gib=%.3f goodput_Bps=%.0f worker_cpu_s=%.3f receives=%d lost_bytes=%d\n",
			sh, rd, r, j/hz/g, g*1073741824/s, w, c, l}'
	rm -f "$TMP"/tf.[0-9]*
	rack_down "$RACK"
}

echo "# train_floor: $N workers, $MIB MiB each, trains of $NSEG x $SEG bytes, window $WINDOW"
# runs outermost: the machine's speed drifts, and each run has every kind
for ((r = 1; r <= RUNS; r++)); do
	for shape in ${SHAPES:-frame train gtrain}; do
		for read in ${READS:-0 1 2}; do
			run_one "$shape" "$read" "$r"
		done
	done
done
