#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""An mpi4py program for selftests/xina_mpi.sh: plain comm.Allreduce (and
comm.Iallreduce) calls of Debian's python3-mpi4py, each result checked
against numpy's reduction of every rank's input (each rank computes all
inputs itself), for every integer type (int8, int16, int32, int64 under
each of their MPI names) by every op the interposer takes (sum, min, max,
band, bor, bxor), float32 by sum, min and max, and what it passes on.  It
knows nothing of xina; the test runs it with libxina-mpi.so in LD_PRELOAD.

    xina_mpi.py ELEMS [single|fail]

ELEMS: the job's elements per packet; "single": MPI_THREAD_SINGLE instead
of mpi4py's default MPI_THREAD_MULTIPLE; "fail": a call that fails in
libxina (a NaN in a float sum on rank 1), and what every later call does
(see failing()).

Prints "xina_calls N", "pmpi_calls N" and "switch_slots N": the calls that
libxina-mpi must take and pass on, and the slots the taken ones cost the
switch, then "PASS".  A wrong result raises (mpi4py aborts the job).
"""

import sys

import mpi4py
import numpy as np

if sys.argv[2:] == ["single"]:
    mpi4py.rc.thread_level = "single"
FAILING = sys.argv[2:] == ["fail"]
from mpi4py import MPI  # noqa: E402  (after the thread level is set)

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
size = comm.Get_size()
elems = int(sys.argv[1])
counts = {"xina_calls": 0, "pmpi_calls": 0, "switch_slots": 0}


def data(r, n, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "i" and dtype != np.int32:
        # every value of the type, its extremes on every 97th element
        info = np.iinfo(dtype)
        rng = np.random.default_rng([r, dtype.itemsize])
        v = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        v[::97] = [info.min, info.max][r % 2]
        return v
    i = np.arange(n, dtype=np.int64)
    v = (i * 7919 + r * 104729) % 2001 - 1000
    if dtype == np.int32:
        v[::97] = [np.iinfo(np.int32).min, np.iinfo(np.int32).max][r % 2]
        return v.astype(np.int32)
    return (v / 8).astype(dtype)    # exact in float32: the sum is exact


def blocks(n):
    return -(-n // elems)


def slots(dtype, n, op):
    """Slots a call through the switch costs: its elements in 32-bit words
    (int8 four to a word, int16 two, int64 two words each), elems words a
    packet; a float32 sum also agrees on its blocks' exponents (one int32
    max call of a word per block)."""
    dtype = np.dtype(dtype)
    b = blocks(-(-n * dtype.itemsize // 4))
    if dtype == np.float32 and op == MPI.SUM:
        return b + blocks(b)
    return b


def case(what, dtype, n, op, npop, via, in_place=False, c=comm,
         mpitype=None):
    """@npop over every rank's input against comm.Allreduce; @mpitype: the
    MPI datatype to name instead of the one mpi4py derives from @dtype."""
    src = data(rank, n, dtype)
    want = npop([data(r, n, dtype) for r in range(size)], axis=0)
    if in_place:
        buf = src.copy()
        c.Allreduce(MPI.IN_PLACE, buf if mpitype is None else [buf, mpitype],
                    op=op)
    else:
        buf = np.full(n, -7, dtype=dtype)
        if mpitype is None:
            c.Allreduce(src, buf, op=op)
        else:
            c.Allreduce([src, mpitype], [buf, mpitype], op=op)
        if not np.array_equal(src, data(rank, n, dtype)):
            raise SystemExit(f"FAIL: {what}: the send buffer changed")
    if not np.array_equal(buf, want.astype(dtype)):
        bad = np.flatnonzero(buf != want)
        raise SystemExit(f"FAIL: {what}: {bad.size} of {n} elements wrong, "
                         f"first {bad[0]}: {buf[bad[0]]} != {want[bad[0]]}")
    print(f"ok: {what} ({via})", flush=True)
    counts[via + "_calls"] += 1
    if via == "xina":
        counts["switch_slots"] += slots(dtype, n, op)


def wrapping_sum(arrs, axis):
    """The sum modulo 2^bits of the arrays' integer type."""
    dtype = np.asarray(arrs[0]).dtype
    s = np.array(arrs, dtype=np.int64).view(np.uint64).sum(axis=axis,
                                                           dtype=np.uint64)
    return s.view(np.int64).astype(dtype)


def band(a, axis):
    return np.bitwise_and.reduce(np.array(a), axis=axis)


def bor(a, axis):
    return np.bitwise_or.reduce(np.array(a), axis=axis)


def bxor(a, axis):
    return np.bitwise_xor.reduce(np.array(a), axis=axis)


INT_OPS = [("sum", MPI.SUM, wrapping_sum), ("min", MPI.MIN, np.min),
           ("max", MPI.MAX, np.max), ("band", MPI.BAND, band),
           ("bor", MPI.BOR, bor), ("bxor", MPI.BXOR, bxor)]


def expect_fail(what, fn):
    """@fn must raise MPI's ERR_OTHER (mpi4py's COMM_WORLD returns errors:
    MPI_ERRORS_RETURN, raised as MPI.Exception)."""
    try:
        fn()
    except MPI.Exception as e:
        if e.Get_error_class() != MPI.ERR_OTHER:
            raise SystemExit(f"FAIL: {what}: error class "
                             f"{e.Get_error_class()}, want MPI_ERR_OTHER")
        print(f"ok: {what}: MPI_ERR_OTHER", flush=True)
        return
    raise SystemExit(f"FAIL: {what}: no error")


def failing():
    """A call through the switch, then a float sum that rank 1 cannot
    quantise (a NaN: libxina refuses it there, its peers time out), then
    an Allreduce and an Iallreduce that must fail on every rank without
    reaching the switch (the handle is unusable), and a call the
    interposer passes on, which still works."""
    case("int32 sum before the failure", np.int32, 3000, MPI.SUM,
         wrapping_sum, "xina")
    bad = data(rank, 1000, np.float32)
    if rank == 1:
        bad[5] = np.nan
    expect_fail("float32 sum with a NaN on rank 1",
                lambda: comm.Allreduce(MPI.IN_PLACE, bad, op=MPI.SUM))
    expect_fail("int32 sum after the failure",
                lambda: comm.Allreduce(MPI.IN_PLACE,
                                       np.ones(10, dtype=np.int32),
                                       op=MPI.SUM))
    expect_fail("int8 Iallreduce after the failure",
                lambda: comm.Iallreduce(MPI.IN_PLACE,
                                        np.ones(10, dtype=np.int8),
                                        op=MPI.BXOR).Wait())
    case("float64 sum after the failure", np.float64, 3000, MPI.SUM, np.sum,
         "pmpi")
    for k, v in counts.items():
        print(f"{k} {v}")
    print("PASS", flush=True)
    sys.exit(0)


if FAILING:
    failing()

# through the switch
case("int32 sum", np.int32, 3000, MPI.SUM, wrapping_sum, "xina")
case("int32 sum in place", np.int32, 1, MPI.SUM, wrapping_sum, "xina", True)
case("int32 max", np.int32, 3000, MPI.MAX, np.max, "xina")
case("int32 min, INT_MIN and INT_MAX in it", np.int32, 3000, MPI.MIN, np.min,
     "xina", True)
case("float32 sum", np.float32, 3000, MPI.SUM, np.sum, "xina")
case("float32 min", np.float32, 3000, MPI.MIN, np.min, "xina")
case("float32 max in place", np.float32, 3000, MPI.MAX, np.max, "xina", True)
# every integer type by every op, under each MPI name of it (mpi4py names
# int8 MPI_SIGNED_CHAR, int16 MPI_SHORT, int64 MPI_LONG)
for tname, dtype, mpitypes in (
        ("int8", np.int8, [None, MPI.INT8_T]),
        ("int16", np.int16, [None, MPI.INT16_T]),
        ("int32", np.int32, [MPI.INT32_T]),
        ("int64", np.int64, [None, MPI.INT64_T, MPI.LONG_LONG])):
    for mt in mpitypes:
        mname = (mt or MPI._typedict[np.dtype(dtype).char]).Get_name()
        for oname, op, npop in INT_OPS:
            if tname == "int32" and oname in ("sum", "min", "max"):
                continue    # above, as MPI_INT
            case(f"{tname} {oname} as {mname}", dtype, 1001, op, npop,
                 "xina", in_place=oname == "bxor", mpitype=mt)
# to PMPI_Allreduce: what xina does not take, results right all the same
case("float64 sum", np.float64, 3000, MPI.SUM, np.sum, "pmpi")
case("int32 prod", np.int32, 10, MPI.PROD,
     lambda a, axis: np.prod(np.array(a, dtype=np.int64), axis=axis), "pmpi")
case("uint8 max", np.uint8, 300, MPI.MAX, np.max, "pmpi")
case("uint32 bxor", np.uint32, 300, MPI.BXOR, bxor, "pmpi")
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
             ("int32 min in place", np.int32, 1000, MPI.MIN, np.min, True),
             ("int16 bxor", np.int16, 1500, MPI.BXOR, bxor, False),
             ("int8 sum", np.int8, 999, MPI.SUM, wrapping_sum, False),
             ("int64 max in place", np.int64, 700, MPI.MAX, np.max, True),
             ("float32 min", np.float32, 800, MPI.MIN, np.min, False)]
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
            counts["switch_slots"] += slots(dtype, n, op)
    print(f"ok: {len(specs)} Iallreduce calls in flight at once: "
          f"{', '.join(s[0] for s in specs)} ({via})", flush=True)


icases()

for k, v in counts.items():
    print(f"{k} {v}")
print("PASS", flush=True)
