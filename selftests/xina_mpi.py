#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""An mpi4py program for selftests/xina_mpi.sh: plain comm.Allreduce (and
comm.Iallreduce) calls of Debian's python3-mpi4py, each result checked
against numpy's reduction of every rank's input (each rank computes all
inputs itself).  It knows nothing of xina; the test runs it with
libxina-mpi.so in LD_PRELOAD.

    xina_mpi.py ELEMS [single]

ELEMS: the job's elements per packet; "single": MPI_THREAD_SINGLE instead
of mpi4py's default MPI_THREAD_MULTIPLE.

Prints "xina_calls N", "pmpi_calls N" and "switch_slots N": the calls that
libxina-mpi must take and pass on, and the slots the taken ones cost the
switch, then "PASS".  A wrong result raises (mpi4py aborts the job).
"""

import sys

import mpi4py
import numpy as np

if sys.argv[2:] == ["single"]:
    mpi4py.rc.thread_level = "single"
from mpi4py import MPI  # noqa: E402  (after the thread level is set)

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
size = comm.Get_size()
elems = int(sys.argv[1])
counts = {"xina_calls": 0, "pmpi_calls": 0, "switch_slots": 0}


def data(r, n, dtype):
    i = np.arange(n, dtype=np.int64)
    v = (i * 7919 + r * 104729) % 2001 - 1000
    if dtype == np.int32:
        v[::97] = [np.iinfo(np.int32).min, np.iinfo(np.int32).max][r % 2]
        return v.astype(np.int32)
    return (v / 8).astype(dtype)    # exact in float32: the sum is exact


def blocks(n):
    return -(-n // elems)


def case(what, dtype, n, op, npop, via, in_place=False, c=comm):
    src = data(rank, n, dtype)
    want = npop([data(r, n, dtype) for r in range(size)], axis=0)
    if in_place:
        buf = src.copy()
        c.Allreduce(MPI.IN_PLACE, buf, op=op)
    else:
        buf = np.full(n, -7, dtype=dtype)
        c.Allreduce(src, buf, op=op)
        if not np.array_equal(src, data(rank, n, dtype)):
            raise SystemExit(f"FAIL: {what}: the send buffer changed")
    if not np.array_equal(buf, want.astype(dtype)):
        bad = np.flatnonzero(buf != want)
        raise SystemExit(f"FAIL: {what}: {bad.size} of {n} elements wrong, "
                         f"first {bad[0]}: {buf[bad[0]]} != {want[bad[0]]}")
    print(f"ok: {what} ({via})", flush=True)
    counts[via + "_calls"] += 1
    if via == "xina":
        b = blocks(n)
        counts["switch_slots"] += b + (blocks(b) if dtype == np.float32 else 0)


def wrapping_sum(arrs, axis):
    s = np.sum(np.array(arrs, dtype=np.int64), axis=axis)
    return ((s + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)


# through the switch
case("int32 sum", np.int32, 3000, MPI.SUM, wrapping_sum, "xina")
case("int32 sum in place", np.int32, 1, MPI.SUM, wrapping_sum, "xina", True)
case("int32 max", np.int32, 3000, MPI.MAX, np.max, "xina")
case("int32 min, INT_MIN and INT_MAX in it", np.int32, 3000, MPI.MIN, np.min,
     "xina", True)
case("float32 sum", np.float32, 3000, MPI.SUM, np.sum, "xina")
# to PMPI_Allreduce: what xina does not take, results right all the same
case("float64 sum", np.float64, 3000, MPI.SUM, np.sum, "pmpi")
case("float32 max", np.float32, 3000, MPI.MAX, np.max, "pmpi")
case("int32 prod", np.int32, 10, MPI.PROD,
     lambda a, axis: np.prod(np.array(a, dtype=np.int64), axis=axis), "pmpi")
case("int64 sum", np.int64, 3000, MPI.SUM, np.sum, "pmpi")
half = comm.Split(rank % 2, rank)
members = [r for r in range(size) if r % 2 == rank % 2]
src = data(rank, 500, np.int32)
buf = np.empty_like(src)
half.Allreduce(src, buf, op=MPI.SUM)
if not np.array_equal(buf, wrapping_sum([data(r, 500, np.int32)
                                         for r in members], 0)):
    raise SystemExit("FAIL: int32 sum on a split communicator")
print("ok: int32 sum on half of the ranks (pmpi)")
counts["pmpi_calls"] += 1
half.Free()
# a duplicate of COMM_WORLD: the job's ranks, but under
# MPI_THREAD_MULTIPLE (mpi4py's default) two such communicators may be
# used at once, so only COMM_WORLD itself goes to the switch
dup = comm.Dup()
case("int32 sum on a duplicate of COMM_WORLD", np.int32, 700, MPI.SUM,
     wrapping_sum,
     "pmpi" if MPI.Query_thread() == MPI.THREAD_MULTIPLE else "xina", c=dup)
dup.Free()
# and the switch again, after the fallbacks
case("int32 sum again", np.int32, 5000, MPI.SUM, wrapping_sum, "xina")


def icases():
    """comm.Iallreduce: three calls in flight at once, waited for
    together; through the switch under MPI_THREAD_MULTIPLE only (the
    interposer completes MPI's request from a thread of its own)."""
    via = "xina" if MPI.Query_thread() == MPI.THREAD_MULTIPLE else "pmpi"
    specs = [("int32 sum", np.int32, 3000, MPI.SUM, wrapping_sum, False),
             ("float32 sum", np.float32, 2500, MPI.SUM, np.sum, False),
             ("int32 min in place", np.int32, 1000, MPI.MIN, np.min, True)]
    reqs, bufs, srcs = [], [], []
    for what, dtype, n, op, npop, in_place in specs:
        src = data(rank, n, dtype)
        if in_place:
            buf = src.copy()
            reqs.append(comm.Iallreduce(MPI.IN_PLACE, buf, op=op))
        else:
            buf = np.full(n, -7, dtype=dtype)
            reqs.append(comm.Iallreduce(src, buf, op=op))
        srcs.append(src)
        bufs.append(buf)
    MPI.Request.Waitall(reqs)
    for (what, dtype, n, op, npop, in_place), buf, src in zip(specs, bufs,
                                                              srcs):
        want = npop([data(r, n, dtype) for r in range(size)], axis=0)
        if not np.array_equal(buf, want.astype(dtype)):
            raise SystemExit(f"FAIL: Iallreduce {what}: "
                             f"{np.count_nonzero(buf != want)} of {n} wrong")
        if not in_place and not np.array_equal(src, data(rank, n, dtype)):
            raise SystemExit(f"FAIL: Iallreduce {what}: the send buffer "
                             "changed")
        counts[via + "_calls"] += 1
        if via == "xina":
            b = blocks(n)
            counts["switch_slots"] += b + (blocks(b) if dtype == np.float32
                                           else 0)
    print(f"ok: 3 Iallreduce calls in flight at once: int32 sum, float32 "
          f"sum, int32 min in place ({via})", flush=True)


icases()

for k, v in counts.items():
    print(f"{k} {v}")
print("PASS", flush=True)
