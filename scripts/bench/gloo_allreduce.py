#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# The Gloo peer of the benchmarks: torch.distributed allreduce (SUM) over
# the gloo backend, one process per worker namespace.  Rank 0 prints one
# JSON line in the same shape as xina-bench-mpi.
#
#   GLOO_SOCKET_IFNAME=eth0 /usr/bin/python3 gloo_allreduce.py \
#       --rank R --workers N --master 10.77.0.1:29500 --bytes 1M,64M \
#       [--dtype f32,i32] [--iters 5[,3]] [--warmup 1]
#
# One JSON line per size and dtype, in one process group (torch's start is
# paid once).
#
# Debian's torch is built for /usr/bin/python3 only: call it explicitly.
# Gloo binds 127.0.0.1 unless GLOO_SOCKET_IFNAME names the worker's port.

import argparse
import json
import os
import resource
import sys
import time

import torch
import torch.distributed as dist


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = s.rstrip("iB")
    try:
        if t and t[-1].upper() in mult:
            return int(t[:-1]) * mult[t[-1].upper()]
        return int(t)
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad size '{s}'")


def host_cpu():
    """Busy and softirq seconds of the whole host, from /proc/stat."""
    hz = os.sysconf("SC_CLK_TCK")
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    user, nice, sys_, idle, iowait, irq, softirq, steal = v
    return (user + nice + sys_ + irq + softirq + steal) / hz, softirq / hz


def self_cpu():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def quantile(v, q):
    v = sorted(v)
    pos = q * (len(v) - 1)
    i = int(pos)
    if i + 1 >= len(v):
        return v[-1]
    return v[i] + (pos - i) * (v[i + 1] - v[i])


def measure(a, nbytes, iters, dtype):
    """One size and dtype; returns the number of wrong elements (all ranks).

    Every call starts from the restored input and its result is checked
    after it; neither is timed or charged: the CPU windows span the barrier
    before each call to a barrier after it.
    """
    n = nbytes // 4
    dt = torch.float32 if dtype == "f32" else torch.int32
    # Input of rank r at element i: (r + 1) * (i % 251 + 1), exact in f32.
    src = ((torch.arange(n, dtype=torch.int32) % 251 + 1) * (a.rank + 1)).to(dt)
    want = ((torch.arange(n, dtype=torch.int32) % 251 + 1) *
            (a.workers * (a.workers + 1) // 2)).to(dt)
    buf = src.clone()

    def wrong():
        w = buf != want
        bad = int(w.sum())
        if bad:
            i = int(w.nonzero()[0])
            print(f"gloo_allreduce: rank {a.rank}: element {i} is {buf[i].item()}, "
                  f"expected {want[i].item()}", file=sys.stderr)
        return bad

    bad = 0
    for _ in range(a.warmup):
        buf.copy_(src)
        dist.all_reduce(buf)
        bad += wrong()

    t = []
    cpu = busy = softirq = window = 0.0
    for _ in range(iters):
        buf.copy_(src)          # in place: restore the input, not timed
        dist.barrier()
        h0 = host_cpu()
        w0 = time.perf_counter()
        c0 = self_cpu()
        t0 = time.perf_counter()
        dist.all_reduce(buf)
        t.append(time.perf_counter() - t0)
        dist.barrier()
        cpu += self_cpu() - c0
        window += time.perf_counter() - w0
        h1 = host_cpu()
        busy += h1[0] - h0[0]
        softirq += h1[1] - h0[1]
        bad += wrong()
    del src, want, buf
    ok = torch.tensor([bad], dtype=torch.int64)
    dist.all_reduce(ok)
    # The allreduce ends for the slowest rank: take the max per iteration.
    tt = torch.tensor(t, dtype=torch.float64)
    dist.all_reduce(tt, op=dist.ReduceOp.MAX)
    cc = torch.tensor([cpu], dtype=torch.float64)
    dist.all_reduce(cc)
    if a.rank == 0 and int(ok) == 0:
        t = tt.tolist()
        med = quantile(t, 0.5)
        print(json.dumps({
            "system": "gloo", "t": t, "workers": a.workers, "dtype": dtype,
            "bytes": nbytes, "iters": iters, "warmup": a.warmup,
            "t_median_s": med, "t_p25_s": quantile(t, 0.25),
            "t_p75_s": quantile(t, 0.75), "t_min_s": min(t),
            "t_max_s": max(t), "timed_s": sum(t),
            "goodput_Bps": nbytes / med, "worker_cpu_s": float(cc[0]),
            "host_busy_s": busy, "host_softirq_s": softirq,
            # rank 0's CPU windows: busy / (window_s * CPUs) = busy fraction
            "window_s": window,
        }), flush=True)
    return int(ok)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--workers", type=int, required=True)
    ap.add_argument("--master", required=True, help="IP:PORT of rank 0")
    ap.add_argument("--bytes", required=True, help="SIZE[,SIZE...]")
    ap.add_argument("--dtype", default="f32", help="i32|f32[,...]")
    ap.add_argument("--iters", default="5", help="N, or one N per size")
    ap.add_argument("--warmup", type=int, default=1)
    a = ap.parse_args()
    sizes = [parse_size(x) for x in a.bytes.split(",")]
    iters = [int(x) for x in a.iters.split(",")]
    dtypes = a.dtype.split(",")
    for b in sizes:
        if b <= 0 or b % 4:
            sys.exit(f"gloo_allreduce: bad --bytes {b} (a positive multiple of 4)")
    if len(iters) == 1:
        iters = iters * len(sizes)
    if len(iters) != len(sizes) or min(iters) < 1:
        sys.exit(f"gloo_allreduce: bad --iters '{a.iters}' (one count >= 1, or one per size)")
    for d in dtypes:
        if d not in ("i32", "f32"):
            sys.exit(f"gloo_allreduce: bad --dtype '{d}' (i32 or f32)")
    if not os.environ.get("GLOO_SOCKET_IFNAME"):
        sys.exit("gloo_allreduce: GLOO_SOCKET_IFNAME is not set (gloo would use 127.0.0.1)")

    dist.init_process_group("gloo", init_method=f"tcp://{a.master}",
                            rank=a.rank, world_size=a.workers)
    bad = 0
    for d in sorted(dtypes):
        for b, it in zip(sizes, iters):
            bad = measure(a, b, it, d)
            if bad:
                break
        if bad:
            break
    dist.destroy_process_group()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
