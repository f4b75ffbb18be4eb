#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Turn $O/bench/results.json into PNG plots (gnuplot) and
Documentation/benchmarks.md: tables of ratios against each peer, the
targets and how far each is from being met, and the method and analysis
prose (scripts/bench/method.md, scripts/bench/analysis.md).

  report.py RESULTS.json --plots DIR --doc Documentation/benchmarks.md
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MIB = 1 << 20
SYSTEMS = ["xina-xdp", "xina-swagg", "openmpi", "gloo"]
PEERS = ["openmpi", "gloo"]
TITLES = {"xina-xdp": "xina (XDP switch)", "xina-swagg": "xina-swagg (user space)",
          "openmpi": "OpenMPI MPI_Allreduce", "gloo": "Gloo (torch.distributed)"}


def mb(bps):
    return f"{bps / 1e6:.1f}"


def size_str(b):
    return f"{b // MIB} MiB" if b >= MIB else f"{b // 1024} KiB"


class Report:
    def __init__(self, data):
        self.meta = data["meta"]
        self.res = data["results"]
        self.runs = [r for r in self.res if "system" in r]
        self.micro = [r for r in self.res if "bench" in r]

    def get(self, system, workers, dtype, nbytes, loss=0.0):
        for r in self.runs:
            if (r["system"], r["workers"], r["dtype"], r["bytes"]) == \
               (system, workers, dtype, nbytes) and abs(r["loss"] - loss) < 1e-9:
                return r
        return None

    def values(self, key, **f):
        return sorted({r[key] for r in self.runs if r["loss"] == 0 and
                       all(r[k] == v for k, v in f.items())})

    def bench(self, name, k=None, elems=None):
        for r in self.micro:
            if r["bench"] == name and (k is None or r.get("k") == k) and \
               (elems is None or r["elems"] == elems):
                return r
        return None

    # ---- tables -------------------------------------------------------

    def goodput_table(self, dtype):
        out = ["| workers | size | " + " | ".join(TITLES[s] for s in SYSTEMS) +
               " | xina / best peer | xina / OpenMPI | xina / Gloo | xina / swagg |",
               "|---:|---:|" + "---:|" * (len(SYSTEMS) + 4)]
        for n in self.values("workers", dtype=dtype):
            for b in self.values("bytes", dtype=dtype, workers=n):
                row = [str(n), size_str(b)]
                rs = {s: self.get(s, n, dtype, b) for s in SYSTEMS}
                for s in SYSTEMS:
                    r = rs[s]
                    row.append(f"{mb(r['goodput_Bps'])} ±{r['spread_pct'] / 2:.0f}%"
                               if r else "–")
                x = rs["xina-xdp"]
                peers = [rs[p] for p in PEERS if rs[p]]
                best = max(peers, key=lambda r: r["goodput_Bps"]) if peers else None
                for ref in [best, rs["openmpi"], rs["gloo"], rs["xina-swagg"]]:
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

    def link_table(self):
        ws = self.values("workers")
        out = ["| system | " + " | ".join(f"{n} workers" for n in ws) + " |",
               "|---|" + "---:|" * len(ws)]
        for s in SYSTEMS:
            row = []
            for n in ws:
                r = [r for r in self.runs if r["system"] == s and r["workers"] == n
                     and r["loss"] == 0 and "port_rx_per_tensor_byte" in r]
                row.append(f"{r[0]['port_rx_per_tensor_byte']:.2f}" if r else "–")
            out.append(f"| {TITLES[s]} | " + " | ".join(row) + " |")
        return "\n".join(out)

    def loss_table(self):
        out = ["| workers | dtype | size | loss | goodput MB/s | of lossless | "
               "retransmissions | sent | dropped batches (both dtypes) |",
               "|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
        for r in sorted((r for r in self.runs if r["loss"] > 0),
                        key=lambda r: (r["dtype"], r["loss"])):
            base = self.get(r["system"], r["workers"], r["dtype"], r["bytes"])
            frac = f"{100 * r['goodput_Bps'] / base['goodput_Bps']:.0f}%" if base else "–"
            out.append(f"| {r['workers']} | {r['dtype']} | {size_str(r['bytes'])} | "
                       f"{r['loss'] * 100:.1f}% | {mb(r['goodput_Bps'])} | {frac} | "
                       f"{r.get('retrans', 0)} | {r.get('sent', 0)} | "
                       f"{r.get('impair_drops', '–')} |")
        return "\n".join(out)

    def cpu_table(self, workers, nbytes):
        out = ["| system | dtype | workers CPU s/GiB | switch CPU s/GiB | "
               "host busy s/GiB | switch CPU measured as |",
               "|---|---|---:|---:|---:|---|"]
        for dtype in ("f32", "i32"):
            for s in SYSTEMS:
                r = self.get(s, workers, dtype, nbytes)
                if not r:
                    continue
                out.append(f"| {TITLES[s]} | {dtype} | {r['worker_cpu_s_per_gib']:.2f} | "
                           f"{r['switch_cpu_s_per_gib']:.2f} | "
                           f"{r['host_busy_s'] / r['reduced_gib']:.2f} | "
                           f"{r['switch_cpu_method']} |")
        return "\n".join(out)

    def fastpath_table(self):
        out = ["| elements | nop (timer) | K=inf | K=4 | K=1 | C loop scalar | "
               "C loop SIMD | K=inf / scalar | K=inf / SIMD |",
               "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        nop = self.bench("fastpath", "nop")
        for e in sorted({r["elems"] for r in self.micro if r["bench"] == "fastpath"
                         and r["k"] != "nop"}):
            ki, k4, k1 = (self.bench("fastpath", k, e) for k in ("inf", "4", "1"))
            sc, sm = self.bench("addloop", elems=e), self.bench("addloop_simd", elems=e)
            row = [str(e), f"{nop['ns_median']:.0f}" if nop else "–"]
            row += [f"{r['ns_net']:.0f}" if r else "–" for r in (ki, k4, k1)]
            row += [f"{r['ns_median']:.1f}" if r else "–" for r in (sc, sm)]
            row += [f"{ki['ns_net'] / r['ns_median']:.1f}x" if ki and r else "–"
                    for r in (sc, sm)]
            out.append("| " + " | ".join(row) + " |")
        return "\n".join(out)

    # ---- targets ------------------------------------------------------

    def targets(self):
        rows = ["| target | measured | verdict |", "|---|---|---|"]
        ws = self.values("workers")
        big = 64 * MIB if 64 * MIB in self.values("bytes") else max(self.values("bytes"))
        for dtype in ("f32", "i32"):
            x = self.get("xina-xdp", 4, dtype, big)
            peers = [self.get(p, 4, dtype, big) for p in PEERS]
            peers = [p for p in peers if p]
            if x and peers:
                best = max(peers, key=lambda r: r["goodput_Bps"])
                ratio = x["goodput_Bps"] / best["goodput_Bps"]
                rows.append(f"| xina ≥ 2x the best peer, 4 workers, {size_str(big)} {dtype} | "
                            f"{ratio:.2f}x ({mb(x['goodput_Bps'])} vs {best['system']} "
                            f"{mb(best['goodput_Bps'])} MB/s) | "
                            f"{'met' if ratio >= 2 else f'missed by {2 / ratio:.1f}x'} |")
            g = [self.get("xina-xdp", n, dtype, big) for n in ws]
            if all(g) and len(g) > 1:
                v = [r["goodput_Bps"] for r in g]
                spread = (max(v) - min(v)) / max(v)
                rows.append(f"| per-worker goodput within 10% from {ws[0]} to {ws[-1]} "
                            f"workers, {size_str(big)} {dtype} | {100 * spread:.0f}% "
                            f"({' / '.join(mb(a) for a in v)} MB/s) | "
                            f"{'met' if spread <= 0.10 else 'missed'} |")
        ki = self.bench("fastpath", "inf", 256)
        sc = self.bench("addloop", elems=256)
        if ki and sc:
            ratio = ki["ns_net"] / sc["ns_median"]
            rows.append(f"| switch cost per 256-int32 packet at K=inf within 1.1x of "
                        f"the C loop | {ki['ns_net']:.0f} ns vs {sc['ns_median']:.0f} ns "
                        f"(scalar C): {ratio:.1f}x | "
                        f"{'met' if ratio <= 1.1 else f'missed by {ratio / 1.1:.1f}x'} |")
        for r in (r for r in self.runs if r["loss"] >= 0.01):
            base = self.get(r["system"], r["workers"], r["dtype"], r["bytes"])
            if base:
                f = r["goodput_Bps"] / base["goodput_Bps"]
                rows.append(f"| at 1% loss ≥ 70% of lossless, {r['workers']} workers "
                            f"{size_str(r['bytes'])} {r['dtype']} | {100 * f:.0f}% | "
                            f"{'met' if f >= 0.7 else 'missed'} |")
        return "\n".join(rows)

    # ---- plots --------------------------------------------------------

    def plots(self, outdir):
        made = []
        ws = self.values("workers")
        n_ref = 4 if 4 in ws else ws[-1]
        big = 64 * MIB if 64 * MIB in self.values("bytes") else max(self.values("bytes"))
        for dtype in ("f32", "i32"):
            made.append(self.plot(outdir, f"goodput_size_{dtype}",
                                  f"Per-worker goodput vs tensor size, {n_ref} workers, {dtype}",
                                  "tensor size (MiB)", True,
                                  {s: [(b / MIB, r["goodput_Bps"] / 1e6)
                                       for b in self.values("bytes", workers=n_ref)
                                       for r in [self.get(s, n_ref, dtype, b)] if r]
                                   for s in SYSTEMS}))
            made.append(self.plot(outdir, f"goodput_workers_{dtype}",
                                  f"Per-worker goodput vs workers, {size_str(big)} {dtype}",
                                  "workers", False,
                                  {s: [(n, r["goodput_Bps"] / 1e6) for n in ws
                                       for r in [self.get(s, n, dtype, big)] if r]
                                   for s in SYSTEMS}))
        return made

    @staticmethod
    def plot(outdir, name, title, xlabel, logx, series):
        png = os.path.join(outdir, name + ".png")
        lines, data = [], []
        for i, (s, pts) in enumerate(series.items()):
            if not pts:
                continue
            dat = os.path.join(outdir, f"{name}.{s}.dat")
            with open(dat, "w") as f:
                for x, y in pts:
                    f.write(f"{x} {y}\n")
            lines.append(f"'{dat}' using 1:2 with linespoints lw 2 pt {i + 5} "
                         f"title '{TITLES[s]}'")
            data.append(dat)
        script = "\n".join([
            "set terminal pngcairo size 900,560 font 'sans,11' noenhanced",
            f"set output '{png}'",
            f"set title '{title}'",
            f"set xlabel '{xlabel}'",
            "set ylabel 'goodput per worker (MB/s)'",
            "set grid", "set key outside right top", "set yrange [0:*]",
            "set logscale x 2" if logx else "set xtics 1",
            "plot " + ", \\\n     ".join(lines), ""])
        subprocess.run(["gnuplot"], input=script, text=True, check=True)
        return png

    # ---- the page -----------------------------------------------------

    def page(self, plots, plotdir):
        m = self.meta
        ws = self.values("workers")
        big = 64 * MIB if 64 * MIB in self.values("bytes") else max(self.values("bytes"))
        n_ref = 4 if 4 in ws else ws[-1]
        loss_runs = [r for r in self.runs if r["loss"] > 0]
        with open(os.path.join(HERE, "method.md")) as f:
            method = f.read().strip()
        with open(os.path.join(HERE, "analysis.md")) as f:
            analysis = f.read().strip()
        rel = os.path.relpath(plotdir, os.path.join(os.path.dirname(HERE), ".."))
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
            "Goodput is tensor bytes per second per worker (median over the "
            "iterations, each the slowest worker's time; ± is half the "
            "interquartile range in percent of the median).",
            "",
            "## Targets",
            "",
            self.targets(),
            "",
            analysis,
            "",
            "## Goodput per worker (MB/s)",
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
            "(headers, warm-up and barriers included).  A ring or "
            "Rabenseifner allreduce sends 2(N-1)/N of the tensor; xina sends "
            "it once, whatever the number of workers.", "",
            self.link_table(), "",
        ]
        if loss_runs:
            parts += ["## xina under loss", "", self.loss_table(), ""]
        parts += [
            f"## CPU per reduced GiB ({n_ref} workers, {size_str(big)})", "",
            self.cpu_table(n_ref, big), "",
            "## Fast path per packet (BPF_PROG_TEST_RUN, ns)", "",
            "K=inf, K=4, K=1 are the program's time with the timer overhead "
            "(the nop column: a two-instruction program) taken out; K=4 and "
            "K=1 are means over all packets, completions included.", "",
            self.fastpath_table(), "",
            "## Plots", "",
            f"`make bench` writes them to `{rel}/`:", "",
        ]
        parts += [f"- `{rel}/{os.path.basename(p)}`" for p in plots]
        parts += ["", method, ""]
        return "\n".join(parts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--plots", required=True)
    ap.add_argument("--doc", required=True)
    a = ap.parse_args()
    with open(a.results) as f:
        rep = Report(json.load(f))
    if not rep.runs:
        print("report: no measurements in " + a.results, file=sys.stderr)
        return 1
    os.makedirs(a.plots, exist_ok=True)
    plots = rep.plots(a.plots)
    text = rep.page(plots, a.plots)
    with open(a.doc, "w") as f:
        f.write(text)
    print(f"report: {a.doc}, {len(plots)} plots in {a.plots}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
