#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# Goodput per element type through the XDP switch: one worker of a xina
# job, through the Python package (user/python: xina_allreduce() by type,
# numpy arrays and torch tensors), one process per worker namespace.
#
#   /usr/bin/python3 types_allreduce.py --rank R --workers N --switch IP \
#       --job J --key-file F --slots S --elems E --bind IP:PORT \
#       --bytes 64M --types int8,int16,int32,int64,float16,bfloat16,float32 \
#       [--op sum] [--iters 3] [--warmup 1]
#
# One JSON line per type, in one handle (the join and torch's start are
# paid once), every rank the same calls in the same order: each iteration
# runs every type once, in turn, so that load from elsewhere on the
# machine weighs on every type alike.  Each timed call has the same tensor
# bytes whatever the type (one buffer, viewed as each), so a 16-bit type
# has twice the elements of int32 (and, packed two to a 32-bit word, the
# same packets).  Timing as the other drivers: a barrier (an int32 call of one
# element through the switch), then the call, its time on this rank; the
# caller takes the slowest rank's per iteration.  The input is restored
# before each call and the result checked after it against a closed form,
# neither timed: rank r's element i is (r + 1) * (i % 12 + 1), whose sum
# over the ranks is exact in every type at 4 workers (int8 included:
# 12 * 10 < 128; the floats hold these small integers exactly, and block
# floating point sums them exactly).

import argparse
import json
import os
import resource
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "user", "python"))
import xina  # noqa: E402  (from the tree, before an installed one)

SIZE = {"int8": 1, "int16": 2, "int32": 4, "int64": 8, "float16": 2,
        "bfloat16": 2, "float32": 4}


def parse_size(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = s.rstrip("iB")
    if t and t[-1].upper() in mult:
        return int(t[:-1]) * mult[t[-1].upper()]
    return int(t)


def self_cpu():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def pattern(n, factor, dtype):
    """Element i: (i % 12 + 1) * factor, as @dtype (a tile repeated)."""
    tile = ((torch.arange(12, dtype=torch.int64) + 1) * factor).to(dtype)
    return tile.repeat(-(-n // 12))[:n]


def measure(x, a, raw, types, one):
    """Every type once per iteration, in turn, so that what the shared
    machine does meanwhile weighs on all of them alike; one buffer of
    --bytes bytes, viewed as each type.  Each timed call sits between two
    one-element allreduces (barriers), as in xina-bench-xina and the
    peers' drivers, so that no rank's check of its result runs while a
    peer is still in the timed call.  Returns the JSON records."""
    recs = {t: {"bench": "types", "dtype": t, "op": a.op,
                "workers": a.workers, "rank": a.rank, "bytes": a.bytes,
                "elems": a.bytes // SIZE[t], "iters": a.iters, "t": [],
                "cpu_s": 0.0} for t in types}
    factor = a.workers * (a.workers + 1) // 2 if a.op == "sum" else \
        a.workers
    # Each type's input and expected result, built once (torch takes
    # seconds for a 64 MiB pattern on a loaded machine; a copy and a
    # comparison take milliseconds), so that a launch is the calls.
    inp, want = {}, {}
    for t in types:
        dt = getattr(torch, t)
        n = a.bytes // SIZE[t]
        inp[t], want[t] = pattern(n, a.rank + 1, dt), pattern(n, factor, dt)
    for it in range(a.warmup + a.iters):
        for t in types:
            buf = raw.view(getattr(torch, t))
            n = buf.numel()
            buf.copy_(inp[t])
            x.allreduce(one)                     # barrier
            c0, t0 = self_cpu(), time.perf_counter()
            x.allreduce(buf, a.op)
            el = time.perf_counter() - t0
            c = self_cpu() - c0
            x.allreduce(one)                     # barrier: no peer's check
            bad = 0 if torch.equal(buf, want[t]) else \
                int((buf != want[t]).sum())
            if bad:
                raise SystemExit(f"types_allreduce: rank {a.rank}: {t} "
                                 f"{a.op}: {bad} of {n} elements wrong")
            if it >= a.warmup:
                recs[t]["t"].append(el)
                recs[t]["cpu_s"] += c
    return [recs[t] for t in types]


def main():
    ap = argparse.ArgumentParser(description="xina goodput per type")
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--workers", type=int, required=True)
    ap.add_argument("--switch", required=True)
    ap.add_argument("--job", type=int, required=True)
    ap.add_argument("--key-file", required=True)
    ap.add_argument("--slots", type=int, required=True)
    ap.add_argument("--elems", type=int, required=True)
    ap.add_argument("--bind", required=True)
    ap.add_argument("--bytes", type=parse_size, default=64 << 20)
    ap.add_argument("--types", default=",".join(SIZE))
    ap.add_argument("--op", default="sum", choices=["sum", "max"])
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--timeout-ms", type=int, default=20000)
    ap.add_argument("--run", type=int, default=0,
                    help="this run of the job, the same on every rank")
    a = ap.parse_args()
    types = a.types.split(",")
    for t in types:
        if t not in SIZE:
            ap.error(f"type '{t}' is none of {', '.join(SIZE)}")
    if a.bytes % 8:
        ap.error("--bytes must be a multiple of 8 (whole int64 elements)")
    torch.set_num_threads(1)
    one = np.zeros(1, dtype=np.int32)
    raw = torch.empty(a.bytes, dtype=torch.uint8)
    with xina.Xina(a.switch, a.job, a.rank, a.workers, a.slots, a.elems,
                   key_file=a.key_file, bind=a.bind,
                   timeout_ms=a.timeout_ms, run=a.run) as x:
        for rec in measure(x, a, raw, types, one):
            print(json.dumps(rec), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
