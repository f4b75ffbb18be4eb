#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make bench [QUICK=1] [LINK_RATE=BITS/S]: xina against its peers on a rack
# of network namespaces, in two regimes (CPU-bound: the rack as it is;
# link-bound: every worker's link shaped to LINK_RATE both ways), then the
# report.
#
#   QUICK=1 scripts/bench/run.sh    cpu: 2 and 4 workers, 1 and 64 MiB;
#                                   link: 4 workers, 64 MiB (< 6 min)
#   scripts/bench/run.sh            cpu: 2, 4 and 8 workers, 1..256 MiB;
#                                   link: 2, 4 and 8 workers, 64 MiB
#
# Both also run OpenMPI's benchmark through the switch with libxina-mpi.so
# preloaded (CPU-bound sizes), and PyTorch DDP training through the switch
# and on Gloo (scripts/train.py: the digits MLP and a 34M-parameter model).
#
# SECTIONS=racks (or rack; bench.py --sections) runs only those: 3 racks
# of 3 workers (scripts/racks.sh; xina in four two-level layouts and
# flat, Gloo and OpenMPI flat, both regimes; 14.5 min, 11-12 with QUICK=1
# before the fourth layout), or everything else; SECTIONS=types, sparse,
# fallback or loss (any of them, comma-separated) only those runs of the
# rack's, at 4 workers through the XDP switch, in 1-5 minutes each, to
# measure a change to libxina; SECTIONS=generic only the XDP switch at
# 64 MiB with its ports in native and in generic mode by turns (3 launches
# of each); SECTIONS=floor only the transport alone,
# frames against GSO trains (scripts/bench/floor/train_floor.sh, also
# part of the rack's run); SECTIONS=targets only the CPU-bound target
# rows: every system of the rounds at 64 MiB, 4 and 8 workers, three
# launches each by turns (its page: the CPU-bound verdicts and every
# launch, as SECTIONS=generic's gives its launches).  Such a partial run writes
# $O/bench/results-SECTIONS.json and $O/bench/benchmarks.md, and leaves
# Documentation/benchmarks.md to the full run.
#
# Writes $O/bench/results.json, $O/bench/*.png and Documentation/benchmarks.md.
# The racks are torn down on exit, also when interrupted.  Timings are
# reported, never asserted: this is not part of "make check".

set -u
XINA_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
O=${O:-build}
case "$O" in /*) ;; *) O=$XINA_ROOT/$O ;; esac
export O
. "$XINA_ROOT/scripts/racks.sh"

RACK=xbench$$
OUT=$O/bench
STATS_WAS=

cleanup()
{
	rack_down "$RACK"
	racks_down "${RACK}k" "$RACKS_MAX"	# bench.py's racks of racks
	[ -n "$STATS_WAS" ] && sysctl -qw kernel.bpf_stats_enabled="$STATS_WAS"
}
trap cleanup EXIT
trap 'echo "bench: interrupted, tearing the rack down" >&2; exit 130' INT TERM

if [ "$(id -u)" -ne 0 ]; then
	echo "bench: must run as root (network namespaces, XDP, BPF_PROG_TEST_RUN)" >&2
	exit 1
fi
for f in xinactl xina-swagg libxina-mpi.so bench/bin/xina-bench-xina \
	 bench/bin/xina-bench-mpi bench/bin/xina-bench-fastpath \
	 bench/bin/xina-bench-packloop; do
	[ -e "$O/$f" ] || { echo "bench: $O/$f is missing: run make bench" >&2; exit 1; }
done
mkdir -p "$OUT"

# The switch's CPU on the XDP path is the run time of its programs: the
# kernel only counts it while bpf_stats_enabled is set (restored on exit).
STATS_WAS=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -qw kernel.bpf_stats_enabled=1

opts=()
[ -n "${QUICK:-}" ] && [ "${QUICK}" != 0 ] && opts+=(--quick)
[ -n "${LINK_RATE:-}" ] && opts+=(--link-rate "$LINK_RATE")
results=$OUT/results.json
doc=$XINA_ROOT/Documentation/benchmarks.md
if [ -n "${SECTIONS:-}" ]; then
	opts+=(--sections "$SECTIONS")
	results=$OUT/results-${SECTIONS//,/-}.json
	doc=$OUT/benchmarks.md
fi
start=$SECONDS
/usr/bin/python3 "$XINA_ROOT/scripts/bench/bench.py" "${opts[@]}" \
	--rack "$RACK" --o "$O" --out "$results" || exit 1
/usr/bin/python3 "$XINA_ROOT/scripts/bench/report.py" "$results" \
	--plots "$OUT" --doc "$doc" || exit 1
echo "bench: done in $((SECONDS - start)) s: $results, $OUT/*.png, $doc"
