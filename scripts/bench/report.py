#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Turn $O/bench/results.json into PNG plots (gnuplot) and
Documentation/benchmarks.md: tables of both regimes (CPU-bound, link-bound)
with ratios against the best peer of the same run, each system's goodput
against its physical limit, CPU per GiB, the targets and how far each is
from being met, a projection to real hardware from the measured per-packet
and per-element costs, and the prose kept apart from the generated tables
(scripts/bench/analysis.md, projection.md, method.md).

  report.py RESULTS.json --plots DIR --doc Documentation/benchmarks.md
"""

import argparse
import itertools
import json
import os
import shutil
import subprocess
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MIB = 1 << 20
GIB = 1 << 30
SYSTEMS = ["xina-xdp", "xina-gxdp", "xina-swagg", "openmpi", "gloo"]
PEERS = ["openmpi", "gloo"]
# xina through the XDP switch: its ports in native mode, and in generic mode
# (the fast path takes the workers' GSO trains whole)
XDP_SYSTEMS = ["xina-xdp", "xina-gxdp"]
TITLES = {"xina-xdp": "xina (XDP switch)",
          "xina-gxdp": "xina (XDP switch, generic mode, GSO trains)",
          "xina-swagg": "xina-swagg (user space)",
          "openmpi": "OpenMPI MPI_Allreduce", "gloo": "Gloo (torch.distributed)"}
SHORT = {"xina-xdp": "xina", "xina-gxdp": "xina generic", "xina-swagg": "swagg",
         "openmpi": "OpenMPI", "gloo": "Gloo"}
# The racks of racks (issue 12): xina in two levels and flat, the peers flat.
RACKS_SYSTEMS = ["xina-hier", "xina-spine", "xina-spine-agents",
                 "xina-spine-swagg", "xina-flat", "openmpi", "gloo"]
TITLES.update({"xina-hier": "xina, two levels (rack agents)",
               "xina-spine": "xina two-level, upper switch at the spine",
               "xina-spine-agents": "xina, spine switch, agent in every rack",
               "xina-spine-swagg": "xina, xina-swagg at the spine, agent in every rack",
               "xina-flat": "xina, flat (one job on rack 0's switch)"})
SHORT.update({"xina-hier": "xina 2 levels", "xina-spine": "xina spine",
              "xina-spine-agents": "xina spine+agents",
              "xina-spine-swagg": "xina swagg spine+agents",
              "xina-flat": "xina flat"})
REGIMES = {"cpu": "CPU-bound", "link": "link-bound"}
# The projection: a 100 Gbit/s port, frames of the largest element count
# each MTU carries (2048 is XINA_MAX_ELEMS of the jumbo configuration).
PORT_BPS = 100e9
PROJ_MTUS = [(9000, 2048), (1500, (1500 - 20 - 8 - 48) // 4)]
# The projection assumes jobs of this many workers (the K=4 fast path cost).
PROJ_K = "4"
# Element types, in the order of the Types table; 16-bit ones have a target.
TYPES = ["int8", "int16", "int32", "int64", "float16", "bfloat16", "float32"]
TYPE_BYTES = {"int8": 1, "int16": 2, "int32": 4, "int64": 8, "float16": 2,
              "bfloat16": 2, "float32": 4}
# Bits of the lane a SUM of the type takes on the wire (libxina.h, "Types
# and operators": float16 and bfloat16 sums in INT16 lanes by default).
SUM_LANE_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64,
                 "float16": 16, "bfloat16": 16, "float32": 32}


def verdict(got, need):
    """A target's verdict: met when @got reaches @need, else by how much not."""
    if got >= need:
        return "met"
    short = need / got
    # a miss under 1% would print as "by 1.00x": say it in percent
    return (f"missed by {short:.2f}x" if short >= 1.01 else
            f"missed by {100 * (1 - got / need):.2f}%")


def mb(bps):
    return f"{bps / 1e6:.1f}"


def pct(x):
    return f"{100 * x:.0f}%"


def size_str(b):
    return f"{b // MIB} MiB" if b >= MIB else f"{b // 1024} KiB"


def gq(s):
    """A gnuplot single-quoted string."""
    return "'" + s.replace("'", "''") + "'"


def ring_factor(n):
    """What a ring sends (and receives) per worker, per tensor byte."""
    return 2 * (n - 1) / n


def fit(points):
    """Least squares y = a + b x over (x, y) points; (a, b)."""
    n = len(points)
    sx = sum(x for x, _ in points)
    sy = sum(y for _, y in points)
    sxx = sum(x * x for x, _ in points)
    sxy = sum(x * y for x, y in points)
    d = n * sxx - sx * sx
    if n < 2 or d == 0:
        return None
    b = (n * sxy - sx * sy) / d
    return (sy - b * sx) / n, b


def medians(g):
    """(median of @g or None when empty, @g)."""
    return (statistics.median(g) if g else None), g


def median_of(rs, fn):
    """The median of @fn over the records @rs (None entries skipped), or
    None if @fn gives None for every one."""
    vals = [v for v in (fn(r) for r in rs if r) if v is not None]
    return statistics.median(vals) if vals else None


def vs_best(x, peers):
    """xina's (median, launches) @x against the best of @peers, (name,
    (median, launches)) each: (ratio, the table cell), or None without
    xina or a peer.  The cell names the launches' ranges where there was
    more than one."""
    peers = [(name, m, g) for name, (m, g) in peers if m]
    if not (x[0] and peers):
        return None
    (xm, xg), (name, bm, bg) = x, max(peers, key=lambda p: p[1])
    more = ""
    if len(xg) > 1 or len(bg) > 1:
        more = (f", medians of {len(xg)} and {len(bg)} launches: xina "
                f"{mb(min(xg))}-{mb(max(xg))}, {name} "
                f"{mb(min(bg))}-{mb(max(bg))}")
    return xm / bm, f"{xm / bm:.2f}x ({mb(xm)} vs {name} {mb(bm)} MB/s{more})"



# How xina-bench-packloop's paths are shown.
PACK_PATH = {("float32", "vector"): "AVX2", ("bfloat16", "vector"): "AVX2",
             ("float16", "vector"): "F16C and AVX2",
             ("float32", "avx512"): "AVX-512", ("float16", "avx512"): "AVX-512",
             ("bfloat16", "avx512"): "AVX-512 (AVX512_BF16 to unpack)"}

class Report:
    def __init__(self, data):
        self.meta = data["meta"]
        self.res = data["results"]
        self.runs = [r for r in self.res if "system" in r and "bench" not in r]
        for r in self.runs:
            r.setdefault("regime", "cpu")
        self.racks_rows = [r for r in self.res if r.get("bench") == "racks"]
        self.micro = [r for r in self.res if "bench" in r and
                      r["bench"] != "racks"]
        self.trains = data.get("train", [])
        self.floors = data.get("floor", [])
        ov = self.meta.get("frame_overhead", {})
        self.xina_hdr = ov.get("xina_hdr", 82)
        self.wire_extra = ov.get("wire_extra", 24)
        self.rate = self.meta.get("regimes", {}).get("link", {}).get("rate_bps")

    def loss_base(self, r):
        """The lossless run a loss run @r is measured against: the
        lossless launch of its round of the loss runs ("loss_ref", the same
        "loss_round"), else the main run of the same system, workers, dtype
        and size."""
        for q in self.res:
            if q.get("bench") == "loss_ref" and \
               (q["system"], q["workers"], q["dtype"], q["bytes"],
                q.get("loss_round")) == \
               (r["system"], r["workers"], r["dtype"], r["bytes"],
                r.get("loss_round")):
                return q
        return self.get(r["system"], r["workers"], r["dtype"], r["bytes"],
                        regime=r["regime"])

    def loss_groups(self):
        """The loss runs by (system, workers, dtype, size, loss rate), each
        as [(run, its lossless reference or None)] in round order."""
        groups = {}
        order = {s: i for i, s in enumerate(SYSTEMS)}
        for r in sorted((r for r in self.runs if r["loss"] > 0),
                        key=lambda r: (order.get(r["system"], 99),
                                       r["dtype"], r["loss"],
                                       r.get("loss_round", 0))):
            key = (r["system"], r["workers"], r["dtype"], r["bytes"],
                   r["loss"])
            groups.setdefault(key, []).append((r, self.loss_base(r)))
        return groups

    @staticmethod
    def loss_ratio(pairs):
        """(the median over the rounds of each loss run's goodput over its
        reference's, the rounds' ratios); (None, []) without references."""
        fs = [r["goodput_Bps"] / b["goodput_Bps"] for r, b in pairs if b]
        return (statistics.median(fs) if fs else None), fs

    def get(self, system, workers, dtype, nbytes, loss=0.0, regime="cpu"):
        for r in self.runs:
            if (r["system"], r["workers"], r["dtype"], r["bytes"], r["regime"]) == \
               (system, workers, dtype, nbytes, regime) and abs(r["loss"] - loss) < 1e-9:
                return r
        return None

    def launches(self, system, workers, dtype, nbytes):
        """A CPU-bound size's lossless launches: the sweep's row and those
        of bench.py's rounds()."""
        main = self.get(system, workers, dtype, nbytes)
        return [main] * bool(main) + [
            r for r in self.res if r.get("bench") == "round" and
            (r["system"], r["workers"], r["dtype"], r["bytes"]) ==
            (system, workers, dtype, nbytes)]

    def median_launch(self, system, workers, dtype, nbytes):
        """A CPU-bound row's median goodput over its lossless launches (the
        sweep's, then those of bench.py's rounds()), and their goodputs in
        the order they ran."""
        return medians([r["goodput_Bps"] for r in
                        self.launches(system, workers, dtype, nbytes)])

    def values(self, key, regime="cpu", **f):
        return sorted({r[key] for r in self.runs if r["loss"] == 0 and
                       r["regime"] == regime and
                       all(r[k] == v for k, v in f.items())})

    def best_peer(self, n, dtype, b, regime="cpu"):
        peers = [self.get(p, n, dtype, b, regime=regime) for p in PEERS]
        peers = [p for p in peers if p]
        return max(peers, key=lambda r: r["goodput_Bps"]) if peers else None

    def big(self, regime="cpu"):
        sizes = self.values("bytes", regime)
        if not sizes:
            return None
        return 64 * MIB if 64 * MIB in sizes else max(sizes)

    def n_ref(self, regime="cpu"):
        ws = self.values("workers", regime)
        return 4 if 4 in ws else (ws[-1] if ws else None)

    @staticmethod
    def untyped(r):
        """A record of the int32 microbenchmarks (not the per-type run)."""
        return not r.get("types_run")

    def bench(self, name, k=None, elems=None):
        for r in self.micro:
            if r["bench"] == name and (k is None or r.get("k") == k) and \
               (elems is None or r["elems"] == elems) and self.untyped(r):
                return r
        return None

    def fast_elems(self):
        return sorted({r["elems"] for r in self.micro if r["bench"] == "fastpath"
                       and r["k"] != "nop" and self.untyped(r)})

    # ---- tables: CPU-bound regime --------------------------------------

    def goodput_table(self, dtype, regime="cpu"):
        out = ["| workers | size | " + " | ".join(TITLES[s] for s in SYSTEMS) +
               " | xina / best peer | xina / OpenMPI | xina / Gloo | xina / swagg "
               "| xina generic / best peer |",
               "|---:|---:|" + "---:|" * (len(SYSTEMS) + 5)]
        for n in self.values("workers", regime, dtype=dtype):
            for b in self.values("bytes", regime, dtype=dtype, workers=n):
                row = [str(n), size_str(b)]
                rs = {s: self.get(s, n, dtype, b, regime=regime) for s in SYSTEMS}
                for s in SYSTEMS:
                    r = rs[s]
                    row.append(f"{mb(r['goodput_Bps'])} ±{r['spread_pct'] / 2:.0f}%"
                               if r else "–")
                x = rs["xina-xdp"]
                best = self.best_peer(n, dtype, b, regime)
                for x, ref in [(x, best), (x, rs["openmpi"]), (x, rs["gloo"]),
                               (x, rs["xina-swagg"]), (rs["xina-gxdp"], best)]:
                    row.append(f"{x['goodput_Bps'] / ref['goodput_Bps']:.2f}x"
                               if x and ref else "–")
                out.append("| " + " | ".join(row) + " |")
        return "\n".join(out)

    def elems_table(self, dtype, nbytes):
        out = ["| workers | " + " | ".join(TITLES[s] for s in SYSTEMS) + " |",
               "|---:|" + "---:|" * len(SYSTEMS)]
        for n in self.values("workers", dtype=dtype, bytes=nbytes):
            row = [str(n)]
            for s in SYSTEMS:
                r = self.get(s, n, dtype, nbytes)
                row.append(f"{r['agg_elems_per_s'] / 1e6:.1f}" if r else "–")
            out.append("| " + " | ".join(row) + " |")
        return "\n".join(out)

    def scaling_table(self, dtype, nbytes):
        ws = self.values("workers", dtype=dtype, bytes=nbytes)
        out = ["| system | " + " | ".join(f"{n} workers" for n in ws) +
               " | spread (max-min)/max |", "|---|" + "---:|" * (len(ws) + 1)]
        for s in SYSTEMS:
            g = [self.get(s, n, dtype, nbytes) for n in ws]
            if not all(g):
                continue
            v = [r["goodput_Bps"] for r in g]
            out.append(f"| {TITLES[s]} | " + " | ".join(mb(x) for x in v) +
                       f" | {100 * (max(v) - min(v)) / max(v):.0f}% |")
        return "\n".join(out)

    def port_table(self, regime="cpu", busiest=False):
        """Bytes per tensor byte a worker sent (switch port counters, mean
        over workers); with @busiest also the busiest direction of the
        busiest link."""
        ws = self.values("workers", regime)
        out = ["| system | " + " | ".join(f"{n} workers" for n in ws) + " |",
               "|---|" + "---:|" * len(ws)]
        for s in SYSTEMS:
            row = []
            for n in ws:
                r = [r for r in self.runs if r["system"] == s and r["workers"] == n
                     and r["loss"] == 0 and r["regime"] == regime and
                     "port_rx_per_tensor_byte" in r]
                cell = f"{r[0]['port_rx_per_tensor_byte']:.2f}" if r else "–"
                if r and busiest and "busiest_link_per_tensor_byte" in r[0]:
                    cell += f" / {r[0]['busiest_link_per_tensor_byte']:.2f}"
                row.append(cell)
            out.append(f"| {TITLES[s]} | " + " | ".join(row) + " |")
        return "\n".join(out)

    # ---- tables: link-bound regime -------------------------------------

    def limit_table(self):
        ws = self.values("workers", "link")
        out = ["| system | limit per worker | " +
               " | ".join(f"{n} workers" for n in ws) + " |",
               "|---|---|" + "---:|" * len(ws)]
        for s in SYSTEMS:
            rs = [next((r for r in self.runs if r["system"] == s and
                        r["workers"] == n and r["regime"] == "link"), None)
                  for n in ws]
            how = next((r["link_limit_method"] for r in rs if r), None)
            if not how:
                continue
            out.append(f"| {TITLES[s]} | {how} | " +
                       " | ".join(f"{mb(r['link_limit_Bps'])} MB/s" if r else "–"
                                  for r in rs) + " |")
        return "\n".join(out)

    def link_table(self):
        out = ["| workers | dtype | " + " | ".join(TITLES[s] for s in SYSTEMS) +
               " | xina / best peer | xina generic / best peer | "
               "target 0.9 x 2(N-1)/N |",
               "|---:|---|" + "---:|" * (len(SYSTEMS) + 3)]
        for n in self.values("workers", "link"):
            for b in self.values("bytes", "link", workers=n):
                for dtype in ("f32", "i32"):
                    row = [str(n) if b == 64 * MIB else f"{n} ({size_str(b)})", dtype]
                    rs = {s: self.get(s, n, dtype, b, regime="link") for s in SYSTEMS}
                    for s in SYSTEMS:
                        r = rs[s]
                        row.append(f"{mb(r['goodput_Bps'])} ({pct(r['of_limit'])})"
                                   if r else "–")
                    best = self.best_peer(n, dtype, b, "link")
                    for x in (rs["xina-xdp"], rs["xina-gxdp"]):
                        row.append(f"{x['goodput_Bps'] / best['goodput_Bps']:.2f}x"
                                   if x and best else "–")
                    row.append(f"{0.9 * ring_factor(n):.2f}x")
                    out.append("| " + " | ".join(row) + " |")
        return "\n".join(out)

    def busy_table(self):
        """Host busy fraction of each run, both regimes, at the size the
        link regime runs (and the CPU regime's largest common one)."""
        out = ["| regime | workers | dtype | " +
               " | ".join(SHORT[s] for s in SYSTEMS) + " |",
               "|---|---:|---|" + "---|" * len(SYSTEMS)]
        for regime in REGIMES:
            b = self.big(regime)
            if b is None:
                continue
            for n in self.values("workers", regime, bytes=b):
                for dtype in ("f32", "i32"):
                    row = [REGIMES[regime], str(n), dtype]
                    for s in SYSTEMS:
                        r = self.get(s, n, dtype, b, regime=regime)
                        if not r or r.get("busy_frac") is None:
                            row.append("–")
                            continue
                        cpus = self.meta["cpus"]
                        rs = self.row_launches(s, n, dtype, b, regime)
                        busy = median_of(rs, lambda r: r["busy_frac"])
                        own = median_of(
                            rs, lambda r: (r["worker_cpu_s"] + (
                                r["switch_cpu_s"] if s.startswith("xina")
                                else 0)) / (r["window_s"] * cpus))
                        bg = median_of(rs, lambda r: r.get("bg_busy_frac"))
                        row.append(f"{pct(busy)} (own {pct(own)}"
                                   + (f", before {pct(bg)})" if bg is not None else ")"))
                    out.append("| " + " | ".join(row) + " |")
        return "\n".join(out)

    # ---- tables: CPU, loss, fast path -----------------------------------

    def loss_table(self):
        groups = self.loss_groups()
        if not groups:
            return ""
        out = ["| system | workers | dtype | size | loss | rounds | "
               "goodput MB/s | "
               "lossless MB/s (the same rounds) | of lossless | each round | "
               "retransmissions | of them on timeout | by tail probe | sent | "
               "dropped batches (both dtypes) |",
               "|---|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|"]
        for (system, n, dtype, nbytes, loss), pairs in groups.items():
            runs = [r for r, _ in pairs]
            bases = [b for _, b in pairs if b]
            f, fs = self.loss_ratio(pairs)
            ref = "–"
            if bases:
                ref = mb(statistics.median(b["goodput_Bps"] for b in bases))
                if any(b.get("bench") != "loss_ref" for b in bases):
                    ref += " (main row)"
            drops = [r["impair_drops"] for r in runs
                     if r.get("impair_drops") is not None]
            out.append(
                f"| {SHORT.get(system, system)} | {n} | {dtype} | "
                f"{size_str(nbytes)} | {loss * 100:.1f}% | "
                f"{len(runs)} | "
                f"{mb(statistics.median(r['goodput_Bps'] for r in runs))} | "
                f"{ref} | {pct(f) if f is not None else '–'} | "
                f"{', '.join(pct(x) for x in fs) or '–'} | "
                f"{sum(r.get('retrans', 0) for r in runs)} | "
                f"{sum(r.get('timeouts', 0) for r in runs)} | "
                f"{sum(r['probes'] for r in runs) if all('probes' in r for r in runs) else '–'} | "
                f"{sum(r.get('sent', 0) for r in runs)} | "
                f"{sum(drops) if drops else '–'} |")
        return "\n".join(out)

    def loss_targets(self):
        rows = []
        for (system, n, dtype, nbytes, loss), pairs in \
                self.loss_groups().items():
            f, fs = self.loss_ratio(pairs)
            if loss < 0.01 or f is None:
                continue
            how = ""
            if len(fs) > 1:
                how = (f", the median of {len(fs)} rounds' ratios, each a "
                       f"loss launch against its round's lossless one: "
                       f"{', '.join(pct(x) for x in fs)}")
            rows.append(f"| at 1% loss ≥ 80% of lossless, {SHORT.get(system, system)}, "
                        f"{n} workers "
                        f"{size_str(nbytes)} {dtype} | {pct(f)}{how} | "
                        f"{'met' if f >= 0.8 else 'missed'} |")
        return rows

    def cpu_table(self):
        out = ["| regime | workers | system | host-wide f32 | host-wide i32 | "
               "workers f32 | workers i32 | switch f32 | switch i32 | "
               "switch measured as |",
               "|---|---:|---|" + "---:|" * 6 + "---|"]
        for regime in REGIMES:
            b = self.big(regime)
            if b is None:
                continue
            for n in self.values("workers", regime, bytes=b):
                for s in SYSTEMS:
                    rs = [self.get(s, n, d, b, regime=regime) for d in ("f32", "i32")]
                    if not any(rs):
                        continue
                    row = [REGIMES[regime], str(n), TITLES[s]]
                    for key in ("host_busy_s", "worker_cpu_s", "switch_cpu_s"):
                        row += [f"{self.per_gib(s, n, d, b, regime, key):.2f}"
                                if r else "–"
                                for d, r in zip(("f32", "i32"), rs)]
                    row.append(next(r["switch_cpu_method"] for r in rs if r))
                    out.append("| " + " | ".join(row) + " |")
        return "\n".join(out)

    def row_launches(self, system, workers, dtype, nbytes, regime):
        """A row's launches: CPU-bound, its lossless launches, those its
        goodput is the median of (launches()); link-bound, its one
        launch (or None)."""
        return (self.launches(system, workers, dtype, nbytes)
                if regime == "cpu" else
                [self.get(system, workers, dtype, nbytes, regime=regime)])

    def per_gib(self, system, workers, dtype, nbytes, regime, key):
        """@key (CPU seconds) per GiB allreduced: the median over the row's
        launches (row_launches())."""
        return median_of(self.row_launches(system, workers, dtype, nbytes,
                                           regime),
                         lambda r: r[key] / r["reduced_gib"])

    FLOOR_SHAPES = {
        "frame": "frames: an XDP program on the switch's ports (xina's "
                 "shape), each frame through TC",
        "train": "GSO trains through TC alone, no XDP program",
        "gtrain": "GSO trains through an XDP program in generic mode, "
                  "then TC"}

    def floor_table(self):
        """scripts/bench/floor: the transport without xina's work, per
        shape, against what xina and Gloo spent in this run's CPU-bound
        launches at the same worker count (4, 64 MiB)."""
        if not self.floors:
            return None
        work = {0: "none", 1: "reads every byte",
                2: "reads, swaps, hashes (NH), adds; writes the result"}
        out = ["| transport | the switch's work on the payload | runs | host CPU s "
               "per GiB (median, range) | workers' CPU s per GiB | MB/s per "
               "worker | result bytes lost |",
               "|---|---|---:|---:|---:|---:|---:|"]
        for shape in self.FLOOR_SHAPES:
            for rd in work:
                rs = [r for r in self.floors
                      if r["shape"] == shape and r["read"] == rd]
                if not rs:
                    continue
                c = sorted(r["cpu_s_per_gib"] for r in rs)
                gib = rs[0]["mib"] / 1024
                out.append(
                    f"| {self.FLOOR_SHAPES[shape]} | {work[rd]} "
                    f"| {len(rs)} | {statistics.median(c):.2f} "
                    f"({c[0]:.2f}-{c[-1]:.2f}) | "
                    f"{statistics.median(r['worker_cpu_s'] for r in rs) / gib:.2f} | "
                    f"{mb(statistics.median(r['goodput_Bps'] for r in rs))} | "
                    f"{sum(r['lost_bytes'] for r in rs):.0f} |")
        for sy in ("xina-xdp", "xina-gxdp", "gloo"):
            runs = [self.launches(sy, 4, d, 64 * MIB) for d in ("f32", "i32")]
            if not any(runs):
                continue

            def cell(value, fmt):
                return " / ".join(fmt(statistics.median(map(value, rs)))
                                  if rs else "–" for rs in runs)

            per_gib = "{:.2f}".format
            out.append(
                f"| this run's {TITLES[sy]}, 4 workers, 64 MiB f32 / i32, "
                "the whole allreduce (medians over its launches) | | | "
                f"{cell(lambda r: r['host_busy_s'] / r['reduced_gib'], per_gib)} | "
                f"{cell(lambda r: r['worker_cpu_s'] / r['reduced_gib'], per_gib)} | "
                f"{cell(lambda r: r['goodput_Bps'], mb)} | |")
        return "\n".join(out)

    def floor_section(self):
        f = self.floors[0]
        return [
            "## The transport alone: frames against GSO trains", "",
            "scripts/bench/floor/train_floor.sh, on a rack of its own: 4 "
            f"workers each send {f['mib']:.0f} MiB to the switch in GSO "
            "trains of 7 datagrams of 8240 bytes (a 2048-int32 xina packet's "
            "UDP payload), at most 5 trains ahead of their results; the "
            "switch's TC program sends the last worker's datagram (or train) "
            "of each number back to every worker as the result, the others "
            "end there.  No tags checked and no packing on the workers: "
            "with no work on the payload, what the transport alone costs; "
            "with the arithmetic, a scalar stand-in for the fast path's "
            "(each 8-byte pair byte-swapped, hashed with NH and added into "
            "per-CPU words, the result written over the payload that "
            "completes a number before its clones), for its cost, not its "
            "function.  **frames**: an XDP program on the "
            "switch's ports, as xina's XDP switch has, so veth segments the "
            "workers' trains in software and copies every frame for XDP.  "
            "**trains**: TC alone, so a train crosses veth as one skb and "
            "reaches the workers' UDP_GRO sockets as one receive.  "
            "**gtrain**: the same with an XDP program in generic mode on the "
            "ports: veth keeps GSO, a train crosses whole, and the stack "
            "copies it into XDP's pages once before the program (a socket's "
            "skb is nonlinear), as a switch running the fast path over whole "
            "trains in generic XDP would pay.  Host CPU "
            "per GiB of one worker's bytes (the busy time of all CPUs over the run; "
            "the machine is shared); the runs alternate the kinds.", "",
            self.floor_table(), ""]

    def fastpath_table(self):
        out = ["| elements | nop (timer) | K=inf | K=4 | K=1 | C loop scalar | "
               "C loop SIMD | C scalar, tag first | C SIMD, tag first | "
               "K=inf / scalar | K=inf / SIMD | K=inf / scalar, tag first | "
               "int32/s per core at K=inf |",
               "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        nop = self.bench("fastpath", "nop")
        for e in self.fast_elems():
            ki, k4, k1 = (self.bench("fastpath", k, e) for k in ("inf", "4", "1"))
            sc, sm, sca, sma = (self.bench(n, elems=e) for n in (
                "addloop", "addloop_simd", "addloop_auth", "addloop_simd_auth"))
            row = [str(e), f"{nop['ns_median']:.0f}" if nop else "–"]
            row += [f"{r['ns_net']:.0f}" if r else "–" for r in (ki, k4, k1)]
            row += [f"{r['ns_median']:.1f}" if r else "–"
                    for r in (sc, sm, sca, sma)]
            row += [f"{ki['ns_net'] / r['ns_median']:.1f}x" if ki and r else "–"
                    for r in (sc, sm, sca)]
            row.append(f"{e / ki['ns_net']:.2f} G" if ki and ki["ns_net"] > 0 else "–")
            out.append("| " + " | ".join(row) + " |")
        return "\n".join(out)

    # ---- element types ------------------------------------------------

    def type_runs(self):
        """dtype -> its goodput record through the XDP switch."""
        return {r["dtype"]: r for r in self.micro if r["bench"] == "types_xdp"}

    @staticmethod
    def paired(r, ref):
        """@r's elements per second against @ref's (int32's, same launch)
        as the median of the per-iteration ratios: each iteration ran every
        type in turn, so load from elsewhere on the machine, which comes
        and goes over seconds, weighs on a type and on int32 alike within
        one iteration (the ratio of the medians pairs calls minutes
        apart).  None if the two are not of the same iterations."""
        if len(r.get("t", [])) != len(ref.get("t", [])) or not r.get("t"):
            return None
        k = r["elems"] / ref["elems"]
        return statistics.median(k * a / b for a, b in zip(ref["t"], r["t"]))

    def types_table(self):
        """Elements per second of each type through the XDP switch, and
        against int32's of the same launch."""
        runs = self.type_runs()
        if not runs:
            return None
        ref = runs.get("int32")
        out = ["| type | bytes per element | SUM elements per packet | "
               "elements/s (millions) | goodput MB/s per worker | "
               "elements/s / int32's | / int32's, paired | "
               "worker CPU s per GiB |",
               "|---|---:|---:|---:|---:|---:|---:|---:|"]
        epp = self.meta.get("xina", {}).get("elems_per_packet")
        for t in TYPES:
            r = runs.get(t)
            if not r:
                continue
            size = TYPE_BYTES[t]
            per_pkt = f"{epp * 32 // SUM_LANE_BITS[t]}" if epp else "–"
            gib = r["iters"] * r["bytes"] / GIB
            paired = self.paired(r, ref) if ref else None
            out.append(
                f"| {t} | {size} | {per_pkt} | {r['eps'] / 1e6:.1f} | "
                f"{mb(r['goodput_Bps'])} | " +
                (f"{r['eps'] / ref['eps']:.2f}x" if ref else "–") + " | " +
                (f"{paired:.2f}x" if paired else "–") +
                f" | {r['worker_cpu_s'] / r['workers'] / gib:.2f} |")
        return "\n".join(out)

    def packloop_table(self):
        """The worker's element loops per type (xina-bench-packloop): ns
        per packet of 2048 32-bit words' worth of elements, in cache."""
        rows = {(r["dtype"], r["loop"], r["path"]): r for r in self.micro
                if r["bench"] == "packloop"}
        if not rows:
            return None
        out = ["| type | path | pack, ns per packet | unpack | scan for the "
               "block's exponent | together | / int32's |",
               "|---|---|---:|---:|---:|---:|---:|"]
        ref = None
        for t in ("int32", "int16", "float32", "float16", "bfloat16"):
            for path in ("compiler", "avx512", "vector", "portable"):
                pk, up = rows.get((t, "pack", path)), rows.get((t, "unpack", path))
                if not (pk and up):
                    continue
                sc = rows.get((t, "scan", "compiler"))
                tot = pk["ns_median"] + up["ns_median"] + \
                    (sc["ns_median"] if sc else 0)
                if t == "int32":
                    ref = tot
                scan = f"{sc['ns_median']:.0f}" if sc else "–"
                out.append(
                    f"| {t} | {PACK_PATH.get((t, path), path)} | "
                    f"{pk['ns_median']:.0f} | {up['ns_median']:.0f} | "
                    f"{scan} | {tot:.0f} | " +
                    (f"{tot / ref:.2f}x |" if ref else "– |"))
        return "\n".join(out)

    def fast_types(self):
        """(dtype, k) -> the per-type fast path record, largest elems."""
        best = {}
        for r in self.micro:
            if r["bench"] != "fastpath" or not r.get("types_run"):
                continue
            key = (r.get("dtype"), r.get("k"))
            if key not in best or r["elems"] > best[key]["elems"]:
                best[key] = r
        return best

    def fast_types_table(self):
        """The fast path's elements per second per core by wire type
        (BPF_PROG_TEST_RUN), against int32's of the same run."""
        f = self.fast_types()
        if not f:
            return None
        ks = [k for k in ("inf", "4", "1") if any(key[1] == k for key in f)]
        out = ["| type | " + " | ".join(
                   f"K={k}: ns per packet | K={k}: elements/s per core | "
                   f"K={k}: / int32's" for k in ks) + " |",
               "|---|" + "---:|---:|---:|" * len(ks)]
        for t in TYPES:
            row = []
            for k in ks:
                r, ref = f.get((t, k)), f.get(("int32", k))
                if not r:
                    row += ["–", "–", "–"]
                    continue
                row += [f"{r['ns_net']:.0f}" if "ns_net" in r else "–",
                        f"{r['eps'] / 1e9:.2f} G",
                        f"{r['eps'] / ref['eps']:.2f}x" if ref else "–"]
            if any(c != "–" for c in row):
                out.append(f"| {t} | " + " | ".join(row) + " |")
        return "\n".join(out)

    # how a sparse run's workers found their blocks (--sparse-map or not)
    SPARSE_BY = {True: "each worker's map of its blocks",
                 False: "libxina's pass over the tensor"}

    def sparse_runs(self):
        """(density, same blocks, caller's map) -> its record ((0, False,
        False): the same tensor dense)."""
        return {(r["density"], r.get("same_blocks", False),
                 r.get("caller_map", False)): r
                for r in self.micro if r["bench"] == "sparse_xdp"}

    def sparse_paired(self):
        """Whether this run's sparse launches are of pairs (--sparse-paired:
        runs since 2026-12-06)."""
        return any("paired_ratio" in r for r in self.sparse_runs().values())

    def sparse_gloo(self, r):
        """Gloo's dense float32 allreduce of the sparse runs' size and
        workers, CPU-bound, in this run."""
        return self.get("gloo", r["workers"], "f32", r["bytes"])

    @staticmethod
    def sparse_counts(r):
        """Blocks sent / skipped per call, rank 0's (its handle's counts
        over the timed calls, which are all its calls), and of those sent
        how many went as their header alone (XINA_F_ZERO: zeros on rank 0;
        runs before it have no such count)."""
        out = (f"{r.get('sparse_blocks', 0) / r['iters']:.1f} / "
               f"{r.get('sparse_skipped', 0) / r['iters']:.1f}")
        if "zero_sent" in r:
            out += f" ({r['zero_sent'] / r['iters']:.1f} as headers)"
        return out

    @staticmethod
    def sparse_vs_dense(r, dense):
        """A sparse run's ratio to dense xina: the median of its launch's
        pairs (a dense call, then the sparse one; runs since 2026-12-06
        have them), else against the dense launch; and how it was got."""
        if "paired_ratio" in r:
            return r["paired_ratio"], "paired"
        if dense:
            return r["goodput_Bps"] / dense["goodput_Bps"], "launches"
        return None, None

    def sparse_table(self):
        runs = self.sparse_runs()
        dense = runs.get((0.0, False, False))
        if not runs:
            return None
        paired = self.sparse_paired()
        out = ["| density per worker | blocks | found by | blocks sent / "
               "skipped per call (rank 0) | dense-equivalent MB/s per worker | "
               + ("dense calls of the launch, MB/s | / dense xina "
                  "(median of the pairs) | " if paired else "/ dense xina | ") +
               "/ Gloo dense |",
               "|---|---|---|---:|---:|---:|" + ("---:|" if paired else "") +
               "---:|"]
        for d, same, known in sorted(runs):
            r = runs[(d, same, known)]
            g = self.sparse_gloo(r)
            ratio = self.sparse_vs_dense(r, dense)[0] if d else 1.0
            out.append(
                f"| {'dense' if not d else pct(d)} | "
                f"{'–' if not d else 'the same on every worker' if same else 'independent per worker'} | "
                f"{'–' if not d else self.SPARSE_BY[known]} | "
                f"{self.sparse_counts(r) if d else '–'} | "
                f"{mb(r['goodput_Bps'])} | " +
                ((f"{mb(r['bytes'] / r['dense_t_median_s'])} | "
                  if "dense_t_median_s" in r else "– | ") if paired else "") +
                (f"{ratio:.2f}x" if ratio else "–") + " | " +
                (f"{r['goodput_Bps'] / g['goodput_Bps']:.2f}x" if g else
                 "not in this run") + " |")
        return "\n".join(out)

    def fallback_run(self):
        return next((r for r in self.micro if r["bench"] == "fallback_ring"),
                    None)

    def fallback_table(self):
        r = self.fallback_run()
        if not r:
            return None
        return "\n".join([
            "| system | MB/s per worker | / Gloo |", "|---|---:|---:|",
            f"| xina's host fallback ring (TCP, authenticated) | "
            f"{mb(r['goodput_Bps'])} | "
            f"{r['goodput_Bps'] / r['gloo_goodput_Bps']:.2f}x |",
            f"| Gloo (same launch) | {mb(r['gloo_goodput_Bps'])} | 1.00x |"])

    def fallback_targets(self):
        r = self.fallback_run()
        what = ("fallback: results identical to the switch path "
                "(selftests/xina_fallback.sh), its goodput shown against "
                "Gloo's")
        if not r:
            return [f"| {what} | not in this run | – |"]
        return [f"| {what} | {mb(r['goodput_Bps'])} vs Gloo "
                f"{mb(r['gloo_goodput_Bps'])} MB/s per worker "
                f"({r['goodput_Bps'] / r['gloo_goodput_Bps']:.2f}x) | shown |"]

    def sparse_targets(self):
        runs = self.sparse_runs()
        dense = runs.get((0.0, False, False))
        rows = []
        for d, need, same, known in (
                (0.01, 10.0, True, True), (0.1, 3.0, True, True),
                (0.01, 10.0, False, True), (0.1, 3.0, False, True),
                (0.01, 10.0, True, False), (0.1, 3.0, True, False),
                (0.01, 10.0, False, False), (0.1, 3.0, False, False)):
            what = (f"sparse at {pct(d)} density "
                    f"({'the same blocks on every worker' if same else 'blocks independent per worker: the union is 1 - (1 - d)^N of them'}; "
                    f"{self.SPARSE_BY[known]}): "
                    f"≥ {need:g}x the dense-equivalent goodput of dense xina")
            r = runs.get((d, same, known))
            ratio, how = self.sparse_vs_dense(r, dense) if r else (None, None)
            if not ratio:
                rows.append(f"| {what} | not in this run | – |")
                continue
            if how == "paired":
                rs = r["paired_ratios"]
                got = (f"{ratio:.2f}x, the median of {len(rs)} pairs' "
                       "ratios, each a dense call of the tensor and the "
                       "sparse call right after it in one launch "
                       f"({', '.join(f'{x:.2f}' for x in sorted(rs))}; "
                       f"medians {mb(r['goodput_Bps'])} vs "
                       f"{mb(r['bytes'] / r['dense_t_median_s'])} MB/s)")
            else:
                got = (f"{ratio:.1f}x ({mb(r['goodput_Bps'])} vs "
                       f"{mb(dense['goodput_Bps'])} MB/s)")
            rows.append(f"| {what} | {got} | {verdict(ratio, need)} |")
        return rows

    def types_targets(self):
        """Rows of the targets table: 16-bit types >= 1.8x int32's
        elements per second, through the switch and in the fast path."""
        rows = []
        runs = self.type_runs()
        ref = runs.get("int32")
        for t in ("int16", "float16", "bfloat16"):
            r = runs.get(t)
            what = (f"16-bit types: {t} ≥ 1.8x the elements per second of "
                    "int32 through the XDP switch (4 workers, same launch)" +
                    (": its sums travel in 32-bit lanes (libxina.h)"
                     if SUM_LANE_BITS[t] == 32 else ""))
            if not (r and ref):
                rows.append(f"| {what} | not in this run | – |")
                continue
            ratio, paired = r["eps"] / ref["eps"], self.paired(r, ref)
            if paired is None:
                rows.append(f"| {what} | {ratio:.2f}x ({r['eps'] / 1e6:.0f} M "
                            f"vs {ref['eps'] / 1e6:.0f} M elements/s) | "
                            f"{verdict(ratio, 1.8)} |")
                continue
            rows.append(f"| {what} | {paired:.2f}x, the median of the "
                        f"{len(r['t'])} iterations' ratios (ratio of the "
                        f"medians {ratio:.2f}x: {r['eps'] / 1e6:.0f} M vs "
                        f"{ref['eps'] / 1e6:.0f} M elements/s) | "
                        f"{verdict(paired, 1.8)} |")
        f = self.fast_types()
        r, ref = f.get(("int16", "inf")), f.get(("int32", "inf"))
        if r and ref:
            ratio = r["eps"] / ref["eps"]
            rows.append("| 16-bit types: int16 ≥ 1.8x the elements per "
                        "second of int32 in the fast path (K=inf, "
                        "BPF_PROG_TEST_RUN) | "
                        f"{ratio:.2f}x ({r['eps'] / 1e9:.2f} G vs "
                        f"{ref['eps'] / 1e9:.2f} G) | "
                        f"{verdict(ratio, 1.8)} |")
        return rows

    # ---- projection to real hardware ------------------------------------

    def cost_fit(self, name, k=None):
        """ns per packet = a + b x elements, fitted over the measured counts."""
        key = "ns_net" if name == "fastpath" else "ns_median"
        pts = [(r["elems"], r[key]) for r in self.micro
               if r["bench"] == name and (k is None or r.get("k") == k) and
               self.untyped(r)]
        return fit(pts), max((e for e, _ in pts), default=0)

    def per_elem(self, name):
        """(elements, ns) of the C loop at its largest element count: its
        cost per element, where a fixed cost per packet weighs least."""
        r = max((r for r in self.micro if r["bench"] == name and
                 self.untyped(r)),
                key=lambda r: r["elems"], default=None)
        return (r["elems"], r["ns_median"]) if r else None

    def projection(self):
        out = []
        bpf, emax = self.cost_fit("fastpath", PROJ_K)
        inf, _ = self.cost_fit("fastpath", "inf")
        simd, scal = self.per_elem("addloop_simd"), self.per_elem("addloop")
        simd_a, scal_a = (self.per_elem("addloop_simd_auth"),
                          self.per_elem("addloop_auth"))
        if not bpf:
            return "No fast path measurements in this run."
        a, b = bpf
        out += [
            f"Per-packet cost of the fast path, fitted over the measured element "
            f"counts ({', '.join(map(str, self.fast_elems()))}; least squares, "
            f"ns = fixed + per-element x elements):", "",
            "| cost model | fixed ns per packet | ns per element |",
            "|---|---:|---:|",
            f"| XDP fast path, K={PROJ_K} (mean over packets, completions "
            f"included) | {a:.0f} | {b:.3f} |",
        ]
        if inf:
            out.append(f"| XDP fast path, K=inf (adds only) | {inf[0]:.0f} | "
                       f"{inf[1]:.3f} |")
        for name, c in (("scalar", scal), ("SIMD", simd),
                        ("scalar, tag verified first", scal_a),
                        ("SIMD, tag verified first", simd_a)):
            if c:
                out.append(f"| C loop, {name} ({c[1]:.0f} ns for {c[0]} elements) "
                           f"| – | {c[1] / c[0]:.3f} |")
        out += ["",
                f"Switch cores per {PORT_BPS / 1e9:.0f} Gbit/s port, receiving "
                "contributions at line rate (the K=" + PROJ_K + " cost per packet; "
                "the last column keeps the fast path's fixed cost but verifies "
                "and adds at the SIMD C loop's rate per element" +
                ("" if simd_a else " (adds only: no tag-first run)") + "):", "",
                "| MTU | elements per packet | bytes on the wire per packet | "
                "packets/s per port | ns per packet | cores per port | "
                "cores, SIMD adds |",
                "|---:|---:|---|---:|---:|---:|---:|"]
        for mtu, e in PROJ_MTUS:
            wire = 4 * e + self.xina_hdr + self.wire_extra
            pps = PORT_BPS / 8 / wire
            ns = a + b * e
            cores = pps * ns / 1e9
            vec = simd_a or simd
            simd_c = pps * (a + vec[1] / vec[0] * e) / 1e9 if vec else None
            extra = " (extrapolated)" if e > emax else ""
            out.append(
                f"| {mtu} | {e} | {4 * e} + {self.xina_hdr} + {self.wire_extra} "
                f"= {wire} | {pps / 1e6:.2f} M | {a:.0f} + {b:.3f} x {e} = "
                f"{ns:.0f}{extra} | {pps / 1e6:.2f} M x {ns:.0f} ns = "
                f"**{cores:.1f}** | " +
                (f"{simd_c:.1f}" if simd_c is not None else "–") + " |")
        out += ["", self.worker_projection()]
        return "\n".join(out)

    def worker_projection(self):
        """CPU a worker spends per GiB of tensor (its own process, measured),
        and the cores that would keep a 100 Gbit/s port at each system's
        limit."""
        regime = "link" if self.values("workers", "link") else "cpu"
        n = self.n_ref(regime)
        b = self.big(regime)
        if n is None:
            return ""
        out = [f"What a worker spends per GiB of tensor, measured in the "
               f"{REGIMES[regime]} regime ({n} workers, {size_str(b)}): its own "
               "process's CPU (workers' total / workers / GiB), and the cores it "
               f"would need to keep a {PORT_BPS / 1e9:.0f} Gbit/s port at its "
               f"system's limit ({n} workers; jumbo frames):", "",
               "| system | dtype | worker CPU s per GiB | goodput at the limit "
               "| worker cores at the limit |",
               "|---|---|---:|---:|---:|"]
        mtu = 9000
        e = PROJ_MTUS[0][1]
        for s in SYSTEMS:
            for dtype in ("f32", "i32"):
                r = self.get(s, n, dtype, b, regime=regime)
                if not r:
                    continue
                per = r["worker_cpu_s"] / n / r["reduced_gib"]
                if s.startswith("xina"):
                    lim = PORT_BPS / 8 * 4 * e / (4 * e + self.xina_hdr + self.wire_extra)
                else:
                    # TCP segments of MTU - 52 payload, 14 + 24 around each
                    lim = PORT_BPS / 8 / ring_factor(n) * (mtu - 52) / (mtu + 14 + 24)
                out.append(f"| {TITLES[s]} | {dtype} | {per:.2f} | "
                           f"{lim / GIB:.2f} GiB/s | {per:.2f} x {lim / GIB:.2f} = "
                           f"**{per * lim / GIB:.1f}** |")
        return "\n".join(out)

    # ---- targets ------------------------------------------------------

    def absent(self):
        return "not in this run" + (" (QUICK)" if self.meta.get("quick")
                                    else "")

    def cpu_targets(self):
        """The CPU-bound target rows: each XDP system's median over its
        64 MiB launches against the best peer's."""
        rows, big, absent = [], 64 * MIB, self.absent()
        for sy, n, dtype in itertools.product(XDP_SYSTEMS, (4, 8), ("f32", "i32")):
            who = "xina" if sy == "xina-xdp" else "xina, ports in generic mode,"
            what = (f"CPU-bound, {n} workers, 64 MiB {dtype}: {who} ≥ 1.0x the "
                    "best of OpenMPI and Gloo (must), 1.5x (aim)")
            got = vs_best(self.median_launch(sy, n, dtype, big),
                          [(p, self.median_launch(p, n, dtype, big))
                           for p in PEERS])
            if not got:
                rows.append(f"| {what} | {absent} | – |")
                continue
            ratio, cell = got
            if ratio >= 1.5:
                v = "met, aim met"
            elif ratio >= 1.0:
                v = f"met; aim missed by {1.5 / ratio:.2f}x"
            else:
                v = verdict(ratio, 1.0)
            rows.append(f"| {what} | {cell} | {v} |")
        return rows

    def targets(self):
        rows = ["| target | measured | verdict |", "|---|---|---|"]
        rows += self.cpu_targets()
        big, absent = 64 * MIB, self.absent()
        for sy, n, dtype in itertools.product(XDP_SYSTEMS, (4, 8), ("f32", "i32")):
            who = "xina" if sy == "xina-xdp" else "xina, ports in generic mode,"
            what = (f"link-bound, {n} workers, 64 MiB {dtype}: {who} ≥ 0.9 of "
                    "the link rate")
            x = self.get(sy, n, dtype, big, regime="link")
            if not x:
                rows.append(f"| {what} | {absent} | – |")
            else:
                f = x["goodput_Bps"] * 8 / x["link_rate_bps"]
                rows.append(f"| {what} | {f:.2f} ({mb(x['goodput_Bps'])} MB/s at "
                            f"{x['link_rate_bps'] / 1e6:.0f} Mbit/s; "
                            f"{pct(x['of_limit'])} of its limit) | "
                            f"{verdict(f, 0.9)} |")
            need = 0.9 * ring_factor(n)
            what = (f"link-bound, {n} workers, 64 MiB {dtype}: {who} / best peer "
                    f"≥ 0.9 x 2(N-1)/N = {need:.2f}")
            best = self.best_peer(n, dtype, big, "link")
            if not (x and best):
                rows.append(f"| {what} | {absent} | – |")
                continue
            ratio = x["goodput_Bps"] / best["goodput_Bps"]
            rows.append(f"| {what} | {ratio:.2f}x (vs {best['system']} "
                        f"{mb(best['goodput_Bps'])} MB/s) | "
                        f"{verdict(ratio, need)} |")
        es = self.fast_elems()
        if es:
            e = es[-1]
            ki, sc = self.bench("fastpath", "inf", e), self.bench("addloop", elems=e)
            sca = self.bench("addloop_auth", elems=e)
            if ki and sc:
                ratio = ki["ns_net"] / sc["ns_median"]
                same = (f"; against C doing the fast path's work, the tag "
                        f"verified before the adds: {sca['ns_median']:.0f} ns, "
                        f"{ki['ns_net'] / sca['ns_median']:.2f}x" if sca else "")
                rows.append(f"| fast path per {e}-int32 packet (the largest frame "
                            f"measured) at K=inf within 1.1x of the C loop | "
                            f"{ki['ns_net']:.0f} ns vs {sc['ns_median']:.0f} ns "
                            f"(scalar C, adds only): {ratio:.2f}x{same} | "
                            f"{'met' if ratio <= 1.1 else f'missed by {ratio / 1.1:.2f}x'} |")
            if ki:
                eps = e / ki["ns_net"] * 1e9
                rows.append(f"| fast path ≥ 2e9 int32 per second per core at K=inf | "
                            f"{eps / 1e9:.2f}e9 ({e} elements per packet) | "
                            f"{verdict(eps, 2e9)} |")
        rows += self.loss_targets()
        rows += self.types_targets()
        rows += self.sparse_targets()
        rows += self.fallback_targets()
        rows += self.racks_targets()
        return "\n".join(rows)

    # ---- racks of racks (issue 12) --------------------------------------

    def racks_get(self, system, dtype, regime):
        return next((r for r in self.racks_rows if r["system"] == system and
                     r["dtype"] == dtype and r["regime"] == regime), None)

    def racks_median(self, system, dtype, regime):
        """A racks row's median goodput over its launches (the first pass's
        and the rounds'), and those launches' goodputs."""
        return medians([r["goodput_Bps"] for r in self.racks_rows
                        if r["system"] == system and r["dtype"] == dtype and
                        r["regime"] == regime])

    def racks_best_peer(self, dtype, regime):
        peers = [self.racks_get(p, dtype, regime) for p in PEERS]
        peers = [p for p in peers if p]
        return max(peers, key=lambda r: r["goodput_Bps"]) if peers else None

    def racks_shape(self):
        r = self.racks_rows[0]
        return r["racks"], r["rack_workers"], r["bytes"]

    def racks_table(self, regime):
        """Per system and dtype: goodput, against the best flat peer and
        (link-bound) the system's limit, each inter-rack link's bytes per
        tensor byte out of its rack / into it, host busy and CPU per GiB."""
        nr = self.racks_shape()[0]
        out = ["| dtype | system | goodput per worker (MB/s) | x best flat peer | " +
               ("of its limit | " if regime == "link" else "") +
               " | ".join(f"rack {r} link out / in" for r in range(nr)) +
               " | host busy (before) | CPU s per GiB: host / workers / "
               "switch / agents |",
               "|---|---|---:|---:|" + ("---:|" if regime == "link" else "") +
               "---:|" * nr + "---:|---:|"]
        rows = 0
        for dtype in ("f32", "i32"):
            best = self.racks_best_peer(dtype, regime)
            for s in RACKS_SYSTEMS:
                r = self.racks_get(s, dtype, regime)
                if not r:
                    continue
                ratio = (f"{r['goodput_Bps'] / best['goodput_Bps']:.2f}x"
                         if best else "–")
                row = [dtype, TITLES[s],
                       f"{mb(r['goodput_Bps'])} ±{r['spread_pct'] / 2:.0f}%", ratio]
                if regime == "link":
                    row.append(pct(r["of_limit"]) if r.get("of_limit") else "–")
                row += [f"{u:.2f} / {d:.2f}" for u, d in
                        zip(r["uplink_out_per_tensor_byte"],
                            r["uplink_in_per_tensor_byte"])]
                bg = r.get("bg_busy_frac")
                row.append((pct(r["busy_frac"]) if r.get("busy_frac") is not None
                            else "–") + (f" ({pct(bg)})" if bg is not None else ""))
                gib = r["reduced_gib"]
                sw = (f"{r['switch_cpu_s'] / gib:.1f}"
                      if s.startswith("xina") else "–")
                ag = (f"{r['agent_cpu_s_per_gib']:.1f}"
                      if "agent_cpu_s_per_gib" in r else "–")
                row.append(f"{r['host_busy_s'] / gib:.1f} / "
                           f"{r['worker_cpu_s'] / gib:.1f} / {sw} / {ag}")
                out.append("| " + " | ".join(row) + " |")
                rows += 1
        return "\n".join(out) if rows else None

    def racks_agents(self):
        """The agents' CPU in each regime, of each layout with agents:
        two levels on rack 0's switch, and at the spine with an agent in
        every rack (the upper switch XDP or xina-swagg)."""
        out = []
        for system, what in (("xina-hier", "rack 0's XDP programs"),
                             ("xina-spine-agents", "the spine's XDP and "
                              "TC programs"),
                             ("xina-spine-swagg", "the spine's xina-swagg")):
            for regime in REGIMES:
                r = self.racks_get(system, "f32", regime) or \
                    self.racks_get(system, "i32", regime)
                if not r or "agent_cpu_s" not in r:
                    continue
                out.append(f"- {TITLES[system]}, {REGIMES[regime]}: the "
                           "agents spent "
                           + ", ".join(f"{c:.1f}" for c in r["agent_cpu_s"]) +
                           " CPU seconds over a launch of "
                           f"{r['agent_launch_s']:.1f} s (the busiest "
                           f"{pct(r['agent_busy_frac'])} of one CPU), "
                           f"{r['agent_cpu_s_per_gib']:.2f} s per GiB of "
                           f"tensor together; {what} "
                           f"{r['switch_cpu_s'] / r['reduced_gib']:.2f} s "
                           "per GiB.")
        return "\n".join(out)

    def racks_targets(self):
        """Issue 12's targets, from the racks rows: for each two-level
        layout in the run (the upper job at the spine, or on rack 0's
        switch with agents in racks 1 and 2)."""
        if not self.racks_rows:
            return []
        nr, n, b = self.racks_shape()
        rows = []
        for system, how in (("xina-spine", "upper switch at the spine"),
                            ("xina-spine-agents", "upper switch at the "
                             "spine, an agent in every rack"),
                            ("xina-spine-swagg", "xina-swagg at the spine, "
                             "an agent in every rack"),
                            ("xina-hier", "upper job on rack 0's switch")):
            for regime in REGIMES:
                for dtype in ("f32", "i32"):
                    x = self.racks_get(system, dtype, regime)
                    if not x:
                        continue
                    if regime == "cpu" and dtype == "f32":
                        rows.append(self.racks_bytes_target(x, how, nr, n,
                                                            b, dtype))
                    what = (f"racks {nr}x{n}, {REGIMES[regime]}, "
                            f"{size_str(b)} {dtype}: xina (two levels, "
                            f"{how}) ≥ the best flat peer")
                    got = vs_best(self.racks_median(system, dtype, regime),
                                  [(p, self.racks_median(p, dtype, regime))
                                   for p in PEERS])
                    if not got:
                        rows.append(f"| {what} | no peer in this run | – |")
                        continue
                    ratio, cell = got
                    rows.append(f"| {what} | {cell} | {verdict(ratio, 1.0)} |")
        return rows

    @staticmethod
    def racks_bytes_target(x, how, nr, n, b, dtype):
        """The row of the bytes on every inter-rack link, of row @x."""
        links = list(zip(x["uplink_out_per_tensor_byte"],
                         x["uplink_in_per_tensor_byte"]))
        worst = max(max(u, d) for u, d in links)
        cells = ", ".join(f"rack {i} {u:.3f} / {d:.3f}"
                          for i, (u, d) in enumerate(links))
        over = [f"rack {i}'s" for i, (u, d) in enumerate(links)
                if max(u, d) > 1.05]
        v = "met" if not over else \
            f"missed by {worst / 1.05:.2f}x on {', '.join(over)} link"
        if over and len(over) < len(links):
            v += ", met on the others"
        return (f"| racks: bytes on each inter-rack link per tensor byte "
                f"≤ 1.05 each way (xina, two levels, {how}, {nr}x{n}, "
                f"{size_str(b)} {dtype}) | out / in: {cells} | {v} |")

    def racks_section(self, plots=()):
        if not self.racks_rows:
            return []
        nr, n, b = self.racks_shape()
        parts = [
            f"## Racks of racks: {nr} racks of {n} workers", "",
            f"`scripts/racks.sh`: {nr} racks of {n} worker namespaces, each "
            "rack's switch namespace joined to a spine namespace by one "
            "inter-rack link (veth, MTU as above), the layout of "
            "`selftests/xina_racks.sh`.  **xina two-level, upper switch at "
            "the spine**: the upper job (one member per rack) on an XDP "
            "switch in the spine namespace; racks 0 and 2 hand their "
            "partials up from their own XDP switches (a rack job with an "
            "uplink, `xinactl job add ... up`), rack 1, without xina, "
            "through an agent.  " + (
                "**xina two-level, upper switch at the spine, an agent in "
                "every rack**: the same upper job, every rack handing up "
                "through its agent (`xina-swagg --up` in the rack's switch "
                "namespace) and no XDP program in any rack: in-network "
                "aggregation at the spine only, the racks as they are.  "
                if "xina-spine-agents" in self.racks_systems() else "") + (
                "**xina, xina-swagg at the spine, agent in every rack**: "
                "the same, with the upper job held by `xina-swagg` (the "
                "user-space xina switch, AVX2 adds and tags) in the spine "
                "namespace instead of XDP on its ports: aggregation in user "
                "space on both levels, no XDP program anywhere.  "
                if "xina-spine-swagg" in self.racks_systems() else "") +
            "For the other two xina rows, xina runs on "
            "rack 0's switch only (XDP on its ports and its uplink); racks 1 "
            "and 2 have no XDP program.  **xina, two levels**: the upper job on rack 0's "
            f"switch has {n + nr - 1} members, rack 0's {n} workers and one "
            "agent per other rack (`xina-swagg --up` in that rack's switch "
            "namespace, a user-space aggregator standing for its rack's "
            "workers).  **xina, flat**: one job of all "
            f"{nr * n} workers on rack 0's switch.  **OpenMPI and Gloo**: "
            f"flat over the {nr * n} workers (global rank order, rack by "
            "rack), before any XDP program is attached, their traffic "
            "routed across the spine.  In the link-bound regime every "
            "worker's link is shaped as on the rack above; the inter-rack "
            "links are not.", "",
            f"Goodput per worker of {size_str(b)} tensors; ratios against the "
            "best of OpenMPI and Gloo in the same regime.  *Link out / in*: "
            "bytes the inter-rack link of each rack carried out of the rack "
            "and into it per tensor byte (its veth counters over the whole "
            "launch: warm-up, barriers, headers and retransmissions "
            "included; a ring over all workers crosses each link with "
            "2(N-1)/N = "
            f"{ring_factor(nr * n):.2f} of the tensor each way).  Host busy: "
            "as in the table of that name below, and in brackets the host's "
            "busy fraction just before the launch (the machine is shared: "
            "other work there competes for the same CPUs).  CPU seconds per "
            "GiB of tensor: host-wide busy time, the worker processes' time, "
            "for xina the switch's (the XDP and TC programs' run time, "
            "rack 0's or the spine's, or the spine's xina-swagg process "
            "time) and the agents' (their processes' "
            "time over the launch, warm-up and barriers included, per GiB "
            "of the launch's calls).  The columns are not to be added: "
            "a switch's programs run in the softirq of whoever sent to it, "
            "so part of them is in the workers' or the agents' time too.  "
            "The peers' switches are bridges and routers in "
            "softirq, charged to whatever ran.", "",
        ]
        for regime in REGIMES:
            t = self.racks_table(regime)
            if t:
                extra = (f", every worker link at "
                         f"{self.racks_link_rate() / 1e6:.0f} Mbit/s each way"
                         if regime == "link" else "")
                parts += [f"### {REGIMES[regime]}{extra}", "", t, ""]
        agents = self.racks_agents()
        if agents:
            parts += ["The rack agents:", "", agents, ""]
        for p in plots:
            name = os.path.basename(p)
            if name.startswith("racks_"):
                parts += [f"![{name}](bench/{name})", ""]
        return parts

    def racks_systems(self):
        """The racks systems this run has rows of."""
        have = {r["system"] for r in self.racks_rows}
        return [s for s in RACKS_SYSTEMS if s in have]

    def racks_link_rate(self):
        return next((r["link_rate_bps"] for r in self.racks_rows
                     if r.get("link_rate_bps")), 0)

    def racks_plots(self, outdir):
        if not self.racks_rows:
            return []
        nr, n, b = self.racks_shape()
        systems = self.racks_systems()
        rows = [(f"{regime} {d}", [r["goodput_Bps"] / 1e6 if r else None
                                    for r in (self.racks_get(s, d, regime)
                                              for s in systems)])
                for regime in REGIMES for d in ("f32", "i32")
                if any(self.racks_get(s, d, regime) for s in systems)]
        made = [self.histogram(
            outdir, "racks_goodput",
            f"{nr} racks of {n} workers: per-worker goodput, {size_str(b)}",
            "goodput per worker (MB/s)", [TITLES[s] for s in systems],
            rows)]
        rows = []
        for s in RACKS_SYSTEMS:
            r = self.racks_get(s, "f32", "cpu") or self.racks_get(s, "f32", "link")
            if r:
                rows.append((SHORT[s], [v for i in range(nr) for v in
                                        (r["uplink_out_per_tensor_byte"][i],
                                         r["uplink_in_per_tensor_byte"][i])]))
        made.append(self.histogram(
            outdir, "racks_links",
            f"{nr} racks of {n} workers: bytes on each inter-rack link per "
            "tensor byte (f32)", "bytes per tensor byte",
            [f"rack {i} {d}" for i in range(nr) for d in ("out", "in")], rows,
            hline=1.05))
        return made

    # ---- plots --------------------------------------------------------

    def plots(self, outdir):
        made = self.racks_plots(outdir)
        if self.partial():
            return made
        ws = self.values("workers")
        n_ref = self.n_ref()
        big = self.big()
        for dtype in ("f32", "i32"):
            made.append(self.plot(outdir, f"goodput_size_{dtype}",
                                  f"CPU-bound: per-worker goodput vs tensor size, "
                                  f"{n_ref} workers, {dtype}",
                                  "tensor size (MiB)", True,
                                  {s: [(b / MIB, r["goodput_Bps"] / 1e6)
                                       for b in self.values("bytes", workers=n_ref)
                                       for r in [self.get(s, n_ref, dtype, b)] if r]
                                   for s in SYSTEMS}))
            made.append(self.plot(outdir, f"goodput_workers_{dtype}",
                                  f"CPU-bound: per-worker goodput vs workers, "
                                  f"{size_str(big)} {dtype}",
                                  "workers", False,
                                  {s: [(n, r["goodput_Bps"] / 1e6) for n in ws
                                       for r in [self.get(s, n, dtype, big)] if r]
                                   for s in SYSTEMS}))
        lb = self.big("link")
        if lb:
            clusters = [(n, d) for n in self.values("workers", "link", bytes=lb)
                        for d in ("f32", "i32")]
            rows = []
            for n, d in clusters:
                rs = [self.get(s, n, d, lb, regime="link") for s in SYSTEMS]
                xs = [r for s, r in zip(SYSTEMS, rs) if r and s.startswith("xina")]
                rings = [r for s, r in zip(SYSTEMS, rs) if r and s in PEERS]
                rows.append((f"{n} workers {d}",
                             [r["goodput_Bps"] / 1e6 if r else None for r in rs] +
                             [xs[0]["link_limit_Bps"] / 1e6 if xs else None,
                              rings[0]["link_limit_Bps"] / 1e6 if rings else None]))
            made.append(self.histogram(
                outdir, "link_goodput",
                f"Link-bound ({self.rate / 1e6:.0f} Mbit/s per worker link each way): "
                f"per-worker goodput, {size_str(lb)}",
                "goodput per worker (MB/s)",
                [TITLES[s] for s in SYSTEMS] + ["limit: xina", "limit: ring"], rows))
            rows = [(f"{n} workers {d}",
                     [100 * r["of_limit"] if r else None
                      for r in (self.get(s, n, d, lb, regime="link") for s in SYSTEMS)])
                    for n, d in clusters]
            made.append(self.histogram(
                outdir, "link_of_limit",
                "Link-bound: goodput as a share of each system's physical limit",
                "% of the limit", [TITLES[s] for s in SYSTEMS], rows, ymax=110,
                hline=100))
        rows = []
        for regime in REGIMES:
            b, n = self.big(regime), self.n_ref(regime)
            if b is None:
                continue
            for d in ("f32", "i32"):
                rows.append((f"{regime} {n}w {d}",
                             [self.per_gib(s, n, d, b, regime, "host_busy_s")
                              if self.get(s, n, d, b, regime=regime) else None
                              for s in SYSTEMS]))
        made.append(self.histogram(
            outdir, "cpu_per_gib",
            f"Host CPU seconds per GiB of tensor allreduced ({size_str(self.big())})",
            "CPU s per GiB", [TITLES[s] for s in SYSTEMS], rows))
        return made

    @staticmethod
    def plot(outdir, name, title, xlabel, logx, series):
        png = os.path.join(outdir, name + ".png")
        lines = []
        for i, (s, pts) in enumerate(series.items()):
            if not pts:
                continue
            dat = os.path.join(outdir, f"{name}.{s}.dat")
            with open(dat, "w") as f:
                for x, y in pts:
                    f.write(f"{x} {y}\n")
            lines.append(f"'{dat}' using 1:2 with linespoints lw 2 pt {i + 5} "
                         f"title {gq(TITLES[s])}")
        script = "\n".join([
            "set terminal pngcairo size 900,560 font 'sans,11' noenhanced",
            f"set output '{png}'",
            f"set title {gq(title)}",
            f"set xlabel {gq(xlabel)}",
            "set ylabel 'goodput per worker (MB/s)'",
            "set grid", "set key outside right top", "set yrange [0:*]",
            "set logscale x 2" if logx else "set xtics 1",
            "plot " + ", \\\n     ".join(lines), ""])
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
        return png

    @staticmethod
    def histogram(outdir, name, title, ylabel, series, rows, ymax=None,
                  hline=None):
        """Clustered bars: one cluster per row (label, values), one bar per
        series; a missing value leaves its bar out.  hline: a dashed line
        at that value."""
        png = os.path.join(outdir, name + ".png")
        dat = os.path.join(outdir, name + ".dat")
        with open(dat, "w") as f:
            for label, vals in rows:
                f.write(f'"{label}" ' + " ".join("?" if v is None else f"{v:.4g}"
                                                 for v in vals) + "\n")
        plots = [f"'{dat}' using {i + 2}:xtic(1) title {gq(s)}" +
                 (" fs pattern 4" if s.startswith("limit") else "")
                 for i, s in enumerate(series)]
        script = "\n".join([
            "set terminal pngcairo size 900,560 font 'sans,11' noenhanced",
            f"set output '{png}'",
            f"set title {gq(title)}",
            f"set ylabel {gq(ylabel)}",
            "set datafile missing '?'",
            "set style data histogram",
            "set style histogram clustered gap 1",
            "set style fill solid 0.8 border -1",
            "set grid ytics", "set key outside right top",
            f"set yrange [0:{ymax if ymax else '*'}]",
            f"set arrow from graph 0, first {hline} to graph 1, first {hline} "
            "nohead dt 2 lw 2" if hline is not None else "",
            "plot " + ", \\\n     ".join(plots), ""])
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
        return png

    # ---- MPI through the interposer, training ---------------------------

    def mpi_xina_table(self):
        """xina-bench-mpi alone and with libxina-mpi.so preloaded."""
        out = ["| workers | dtype | size | OpenMPI | OpenMPI + libxina-mpi.so "
               "| x OpenMPI | xina (libxina) |", "|---:|---|---:|---:|---:|---:|---:|"]
        rows = 0
        for n in self.values("workers"):
            for dtype in ("f32", "i32"):
                for b in self.values("bytes", workers=n):
                    mx = self.get("openmpi-xina", n, dtype, b)
                    if not mx:
                        continue
                    mo = self.get("openmpi", n, dtype, b)
                    xd = self.get("xina-xdp", n, dtype, b)
                    ratio = (f"{mx['goodput_Bps'] / mo['goodput_Bps']:.2f}"
                             if mo else "-")
                    out.append(f"| {n} | {dtype} | {size_str(b)} | "
                               f"{mb(mo['goodput_Bps']) if mo else '-'} | "
                               f"{mb(mx['goodput_Bps'])} | {ratio} | "
                               f"{mb(xd['goodput_Bps']) if xd else '-'} |")
                    rows += 1
        return "\n".join(out) if rows else None

    def train_table(self):
        out = ["| model | parameters | workers | batch | steps | "
               "step ms xina | step ms Gloo | Gloo / xina | accuracy xina "
               "/ Gloo | checks |",
               "|---|---:|---:|---:|---:|---:|---:|---:|---|---|"]
        for t in self.trains:
            x, g = t["xina"], t["gloo"]
            acc = (f"{x['accuracy']:.4f} / {g['accuracy']:.4f}"
                   if t["model"] == "digits" else "- (random labels)")
            out.append(
                f"| {t['model']} | {x['params']:,} | {t['workers']} | "
                f"{t['batch']} | {x['steps']} | {x['step_ms_median']:.1f} | "
                f"{g['step_ms_median']:.1f} | "
                f"{g['step_ms_median'] / x['step_ms_median']:.2f} | {acc} | "
                f"{'passed' if t['ok'] else 'FAILED'} |")
        return "\n".join(out)

    # ---- the page -----------------------------------------------------

    def partial(self):
        """A run of some sections only, without the rack's whole run (its
        parts' runs, SECTIONS=loss's included, have no main rows)."""
        return not self.runs or \
            "rack" not in self.meta.get("sections", ["rack"])

    def launches_table(self):
        """The 64 MiB CPU-bound launches of every system at 4 and 8
        workers (SECTIONS=targets, generic): their median, then each
        launch's goodput in the order they ran."""
        out = ["| workers | dtype | " + " | ".join(SHORT[s] for s in SYSTEMS)
               + " |", "|---:|---|" + "---|" * len(SYSTEMS)]
        for n, dtype in itertools.product((4, 8), ("f32", "i32")):
            row = [str(n), dtype]
            for sy in SYSTEMS:
                med, g = self.median_launch(sy, n, dtype, 64 * MIB)
                row.append(f"{mb(med)} ({', '.join(mb(x) for x in g)})"
                           if med else "–")
            out.append("| " + " | ".join(row) + " |")
        return "\n".join(out)

    def partial_page(self, plots):
        """The page of a run of some sections only (make bench
        SECTIONS=...): its tables and targets, for the terminal and
        $O/bench; Documentation/benchmarks.md is the full run's."""
        m = self.meta
        secs = m.get("sections", [])
        targets = list(self.racks_targets())
        tables = []
        if "targets" in secs:
            targets = self.cpu_targets() + targets
        if "targets" in secs or "generic" in secs:
            tables += ["## CPU-bound, 64 MiB: every launch (MB/s per "
                       "worker)", "", self.launches_table(), ""]
        # the rack's parts (SECTIONS=types,sparse,fallback): each its own
        for sec, rows, title, table in (
                ("types", self.types_targets, "Element types through the "
                 "XDP switch", self.types_table),
                ("sparse", self.sparse_targets, "Sparse", self.sparse_table),
                ("fallback", self.fallback_targets, "Fallback",
                 self.fallback_table),
                ("loss", self.loss_targets, "xina under loss",
                 self.loss_table)):
            if sec in secs:
                targets += rows()
                tables += [f"## {title}", "", table() or "not in this run",
                           ""]
        if self.floors:
            tables += self.floor_section()
        return "\n".join([
            f"# Benchmarks: sections {', '.join(secs)} only",
            "", f"Run of {m['date']} ({m['elapsed_s']:.0f} s): {m['cpus']} CPUs "
            f"({m['cpu_model']}), kernel {m['kernel']}, MTU {m['mtu']}, "
            f"{m['openmpi']}, {m['torch']}, 1-minute load average "
            f"{' -> '.join(str(x) for x in m.get('loadavg_1min', []))}.", "",
            "## Targets", "", "| target | measured | verdict |", "|---|---|---|",
            *targets, "", *tables, *self.racks_section(plots), ""])

    def page(self, plots, plotdir):
        if self.partial():
            return self.partial_page(plots)
        m = self.meta
        big = self.big()
        loss_runs = [r for r in self.runs if r["loss"] > 0]
        prose = {}
        for name in ("method", "analysis", "projection"):
            with open(os.path.join(HERE, f"{name}.md")) as f:
                prose[name] = f.read().strip()
        rel = os.path.relpath(plotdir, os.path.join(os.path.dirname(HERE), ".."))
        link = m.get("regimes", {}).get("link", {})
        parts = [
            "# Benchmarks: xina against what users would pick instead",
            "",
            "<!-- Generated by scripts/bench/report.py from results.json "
            "(make bench); edit scripts/bench/*.md for the prose. -->",
            "",
            f"Run of {m['date']} ({'make bench QUICK=1' if m['quick'] else 'make bench'}, "
            f"{m['elapsed_s']:.0f} s): {m['cpus']} CPUs ({m['cpu_model']}), "
            f"kernel {m['kernel']}, rack of network namespaces with a bridge, "
            f"MTU {m['mtu']}, {m['openmpi']}, {m['torch']}, xina with "
            f"{m['xina']['slots']} slots of {m['xina']['elems_per_packet']} elements; "
            f"1-minute load average {' -> '.join(str(x) for x in m.get('loadavg_1min', []))} "
            "(start -> end; the machine is shared, and other work shows in the "
            "host-wide CPU figures). "
            "Two regimes, every system in each: **CPU-bound**, the rack as it "
            "is, every process sharing the CPUs; **link-bound**, every "
            "worker's link limited to "
            + (f"{self.rate / 1e6:.0f} Mbit/s in both directions "
               f"({link.get('shaper', 'tbf')})" if self.rate else "(not run)") +
            ". Goodput is tensor bytes per second per worker (median over the "
            "iterations, each the slowest worker's time; ± is half the "
            "interquartile range in percent of the median).",
            "",
            "## Targets",
            "",
            self.targets(),
            "",
            prose["analysis"],
            "",
            "## CPU-bound: goodput per worker (MB/s)",
            "",
            "The rack as it is: veth links, every worker, the switch and the "
            "kernel's network processing on the same CPUs.  Ratios are "
            "against the peers of the same run.",
            "",
        ]
        for dtype in ("f32", "i32"):
            parts += [f"### {dtype}", "", self.goodput_table(dtype), ""]
        parts += [
            f"### Scaling with the number of workers ({size_str(big)})", "",
        ]
        for dtype in ("f32", "i32"):
            parts += [f"{dtype}:", "", self.scaling_table(dtype, big), ""]
        parts += [
            f"### Aggregated elements per second ({size_str(big)} f32, millions)", "",
            "Workers times tensor elements per second: for xina the elements "
            "the switch adds, for the peers the same count of reduced "
            "inputs, for comparison.", "",
            self.elems_table("f32", big), "",
        ]
        parts += [
            "### Bytes each worker puts on its link, per tensor byte", "",
            "From the switch ports' receive counters over each launch "
            "(headers, warm-up, barriers and retransmissions included).  A "
            "ring or Rabenseifner allreduce sends 2(N-1)/N of the tensor; "
            "xina sends it once, whatever the number of workers.", "",
            self.port_table(), "",
        ]
        if self.values("workers", "link"):
            lb = self.big("link")
            parts += [
                f"## Link-bound: every worker link at {self.rate / 1e6:.0f} Mbit/s "
                "each way", "",
                "Each system's limit is the most tensor bytes per second per "
                "worker that such links carry, with the framing each system "
                "puts around its payload taken out as the shaper counts it "
                "(Ethernet header to the end of the payload).  xina sends its "
                "tensor once and receives the result once; a ring sends and "
                "receives 2(N-1)/N of it:", "",
                self.limit_table(), "",
                f"Goodput per worker in MB/s ({size_str(lb)}), and in brackets as "
                "a share of the system's limit.  The ratio target of issue 8 is "
                "xina / best peer ≥ 0.9 x 2(N-1)/N: what the ring's extra "
                "traffic leaves to a system that is at 90% of the link.", "",
                self.link_table(), "",
                "Bytes each worker put on its link per tensor byte (switch port "
                "counters, mean over the workers; retransmissions included), "
                "and after the slash those of the busiest direction of the "
                "busiest link (each worker's eth0 counters for what it "
                "received): a system whose busiest link carries more than "
                "its mean is bound by that link, below its limit.", "",
                self.port_table("link", busiest=True), "",
            ]
        parts += self.racks_section(plots)
        parts += [
            "## Host CPU busy during the timed calls", "",
            "Busy time of all CPUs over the timed windows (/proc/stat, from "
            "the barrier before each call to the barrier after it) divided "
            f"by the windows' length times {m['cpus']} CPUs.  In brackets: "
            "\"own\", the CPU time charged to the benchmark's own processes "
            "(workers, and for xina the switch: the XDP programs' run time or "
            "the aggregator process) in the same windows; \"before\", the "
            "host's busy fraction over half a second before the launch with "
            "nothing of the benchmark running (the machine is shared).  "
            "CPU-bound: each the median over the row's launches, as its "
            "goodput is.  A "
            "link-bound run whose host is busy well below 100% is limited "
            "by its links, not by the CPUs.", "",
            self.busy_table(), "",
        ]
        parts += [
            "## CPU seconds per GiB of tensor allreduced", "",
            "Per GiB of tensor: the tensor's size times the timed calls (each "
            "call allreduces one tensor of that size on every worker).  "
            "**Host-wide**: the busy time of all CPUs over the timed windows "
            "(every worker, the switch, the kernel's network processing, and "
            "whatever else ran on the machine then) per GiB.  **Workers**: the "
            "worker processes' user+system time, summed over all workers, "
            "per GiB.  **Switch**: as the last column says (see Method for "
            "what each measure leaves out).  CPU-bound: the median over a "
            "row's launches, as its goodput is.", "",
            self.cpu_table(), "",
        ]
        if self.floors:
            parts += self.floor_section()
        if loss_runs:
            parts += ["## xina under loss", "",
                      "In rounds: each round, with the switch's ports in "
                      "each mode (xina: native, xina generic: generic, the "
                      "workers' GSO trains taken whole), one lossless "
                      "launch and one "
                      "at each loss rate, of the same size, iterations and "
                      "dtypes, the order turned by one each round (the "
                      "machine is shared, and its speed drifts over "
                      "minutes).  Each loss launch is measured against the "
                      "lossless launch of its own round and mode; \"of "
                      "lossless\" is "
                      "the median of the rounds' ratios, the goodputs are "
                      "medians over the rounds, the counts sums over them.  "
                      "Runs of earlier versions of bench.py took one round, "
                      "the lossless launch first; runs without a lossless "
                      "launch use the main row.", "", self.loss_table(), ""]
        types, fast_types = self.types_table(), self.fast_types_table()
        if types or fast_types or self.packloop_table():
            parts += ["## Types", ""]
        if types:
            r0 = next(iter(self.type_runs().values()))
            parts += [
                f"SUM of {size_str(r0['bytes'])} tensors of each element type "
                f"through the XDP switch, {r0['workers']} workers, CPU-bound "
                "(`scripts/bench/types_allreduce.py`: the Python package, "
                "xina_allreduce() by type; the same bytes for every type, so "
                "a 16-bit type has twice the elements of int32).  int16 "
                "travels two to a 32-bit word, int8 four, int64 in two "
                "words; the floats' sums are quantised to integers by "
                "libxina (block floating point): bfloat16 and float16 into "
                "16-bit lanes (float16 into 32-bit ones with "
                "XINA_OPT_F_F16_WIDE, libxina.h), float32 into 32-bit "
                "lanes, each block under the MAX of the workers' "
                "exponents of it: the first window's agreed by an int32 "
                "max call, every later block's carried in the aux word "
                "of the contribution before it in its slot (SwitchML's "
                "piggybacked exponent).  Ratios are against int32 "
                "of the same launch.", "", types, ""]
        packloop = self.packloop_table()
        if packloop:
            parts += [
                "The worker's own work on the elements, per packet "
                "(`xina-bench-packloop`: libxina's loops on 2048 32-bit "
                "words' worth of elements, 4096 of a 16-bit type, in "
                "cache, one CPU): pack into the packet's lanes in network "
                "order (for floats the block floating point quantisation), "
                "unpack the result, and for floats the scan of the block "
                "for its largest magnitude (a window before it is packed, "
                "its exponent going with the data).  "
                "Each path of libxina's the CPU has, first the one libxina "
                "takes: AVX-512 (with AVX512_FP16 for float16's pack and "
                "AVX512_BF16 for bfloat16's unpack where the CPU has them; "
                "float32's unpack stays AVX2), AVX2 (float16 by F16C), "
                "and the portable loops every path falls back to; the "
                "integer loops and the scans are the compiler's (the "
                "scans' AVX-512 clone where the CPU has it).", "",
                packloop, ""]
        if fast_types:
            parts += [
                "The fast path alone per wire type (`xina-bench-fastpath -T`, "
                "BPF_PROG_TEST_RUN, the largest packet measured), against "
                "int32 of the same run:", "", fast_types, ""]
        sparse = self.sparse_table()
        if sparse:
            r0 = next(iter(self.sparse_runs().values()))
            parts += [
                "## Sparse", "",
                f"Block-sparse float32 SUM of {size_str(r0['bytes'])} through "
                f"the XDP switch, {r0['workers']} workers, CPU-bound "
                "(`xina-allreduce --sparse`: each worker's blocks, one "
                "packet's elements each, non-zero with the given probability, "
                "independently per worker, so the union the workers send is "
                "1 - (1 - d)^N of the blocks; `xina_allreduce_sparse()`: "
                "the block exponents' call over the whole tensor, which "
                "agrees on the union too, then the union's blocks; a block "
                "of the union that is zeros on a worker goes as its header "
                "alone, `XINA_F_ZERO`, counted \"as headers\").  "
                "Found by \"libxina's pass over the tensor\": the call reads "
                "the whole tensor for its blocks' exponents; \"each worker's "
                "map of its blocks\" (`--sparse-map`, "
                "`xina_allreduce_sparse_map()`): the worker hands libxina "
                "the map of its non-zero blocks, as a sparse gradient knows "
                "the rows it touched (xina-allreduce records it while it "
                "fills the tensor, before the timed call), and libxina reads "
                "only those blocks.  Goodput counts "
                "the whole tensor (dense-equivalent) over the call's time; "
                "the results are checked element by element, bitwise the "
                "dense scheme's.  Gloo is its dense allreduce of the same "
                "size in this run." +
                (("  Each sparse launch is of pairs (`--sparse-paired`): "
                  "every iteration a dense call of the tensor without the "
                  "sparse zeros, then the sparse call; \"/ dense xina\" is "
                  "the median over the pairs of the slowest worker's dense "
                  "time over its sparse time, so it compares calls a "
                  "moment apart on one machine, not two launches minutes "
                  "apart on a host whose speed drifts; the dense row is "
                  "its own launch, for the comparison with Gloo.")
                 if self.sparse_paired() else ""),
                "", sparse, ""]
        fb = self.fallback_table()
        if fb:
            r = self.fallback_run()
            parts += [
                "## The host fallback", "",
                f"float32 SUM of {size_str(r['bytes'])}, {r['workers']} "
                "workers, CPU-bound, on a job the switch does not have: "
                "every call on libxina's ring over TCP between the workers "
                "(`xina-allreduce --fallback`; connections and messages "
                "authenticated), and Gloo's allreduce of the same size right "
                "after it in the same launch.  Each ring worker sent "
                f"{r['ring_tx_bytes'] / r['iters'] / r['bytes']:.3f} "
                "bytes per tensor byte and call (2(N-1)/N = "
                f"{2 * (r['workers'] - 1) / r['workers']:.3f} for a ring; "
                "the one-element barrier calls, the exponents' calls, "
                "framing and tags included).", "", fb, ""]
        mpi = self.mpi_xina_table()
        if mpi:
            parts += [
                "## MPI programs through the switch (libxina-mpi.so)", "",
                "OpenMPI's benchmark program (`xina-bench-mpi`, "
                "MPI_Allreduce, unmodified) on its own and with "
                "`LD_PRELOAD=libxina-mpi.so` configured for the XDP switch's "
                "job: every call it times goes through the switch.  Goodput "
                "per worker in MB/s, CPU-bound; the last column is "
                "`xina-bench-xina` (libxina called directly) of the same run.",
                "", mpi, ""]
        if self.trains:
            parts += [
                "## Training with PyTorch DDP (scripts/train.py)", "",
                "4 ranks in the rack's worker namespaces, one thread each, "
                "gradient buckets through the switch by the DDP hook "
                "(`xina.ddp`), then the same run with DDP's own allreduce on "
                "Gloo.  Step time: median on rank 0 of forward, backward "
                "(with the buckets' allreduce overlapping it) and the "
                "optimiser step.  *digits*: scikit-learn's digits and the MLP "
                "of `make train`; *large*: an MLP of 34 million parameters "
                "(134 MB of gradients a step) on synthetic data, where the "
                "allreduce is most of the step.  Checks: the replicas end "
                "identical, every gradient element of every step went "
                "through the switch, and (digits) the accuracies agree "
                "within 0.02.", "", self.train_table(), ""]
        parts += [
            "## Fast path per packet (BPF_PROG_TEST_RUN, ns)", "",
            "K=inf, K=4, K=1 are the program's time with the timer overhead "
            "(the nop column: a two-instruction program) taken out; K=4 and "
            "K=1 are means over all packets, completions included.", "",
            self.fastpath_table(), "",
            "## On real hardware (projection)", "",
            prose["projection"], "",
            self.projection(), "",
            "## Plots", "",
            f"`make bench` writes them to `{rel}/`; the ones of this run "
            "are copied next to this page:", "",
        ]
        for p in plots:
            name = os.path.basename(p)
            if not name.startswith("racks_"):
                parts += [f"![{name}](bench/{name})", ""]
        parts += ["", prose["method"], ""]
        return "\n".join(parts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--plots", required=True)
    ap.add_argument("--doc", required=True)
    a = ap.parse_args()
    with open(a.results) as f:
        rep = Report(json.load(f))
    if not rep.runs and not rep.racks_rows and not rep.micro and \
       not rep.floors:
        print("report: no measurements in " + a.results, file=sys.stderr)
        return 1
    os.makedirs(a.plots, exist_ok=True)
    plots = rep.plots(a.plots)
    text = rep.page(plots, a.plots)
    # The page embeds the plots of its own run: copy them next to it, so
    # that the page and its pictures are always of the same run.
    imgdir = os.path.join(os.path.dirname(os.path.abspath(a.doc)), "bench")
    os.makedirs(imgdir, exist_ok=True)
    for old in os.listdir(imgdir):
        if old.endswith(".png"):
            os.unlink(os.path.join(imgdir, old))
    for p in plots:
        shutil.copyfile(p, os.path.join(imgdir, os.path.basename(p)))
    with open(a.doc, "w") as f:
        f.write(text)
    # the per-type rows on the terminal too: a QUICK run's page is not kept
    for table in (rep.types_table(), rep.fast_types_table(),
                  rep.packloop_table()):
        if table:
            print("report: types:\n" + table, file=sys.stderr)
    for regime in REGIMES:
        table = rep.racks_table(regime) if rep.racks_rows else None
        if table:
            print(f"report: racks, {REGIMES[regime]}:\n" + table, file=sys.stderr)
    print(f"report: {a.doc}, {len(plots)} plots in {a.plots}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
