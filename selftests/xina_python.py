#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Worker side of selftests/xina_python.sh: one subcommand per check.

    xina_python.py layout CC           struct mirror against the C header
    xina_python.py sync|async|errors   one rank, configured by XINA_* env
    xina_python.py types N             every dtype x op (xina_python_types)
    xina_python.py ddp                 the DDP hook against Gloo

Each prints "ok: ..." lines and a last line "PASS" (or raises): the shell
test judges the exit status and greps what it needs.  Data of rank r is a
function of (r, element), so every rank checks the whole result itself.
"""

import hashlib
import os
import subprocess
import sys
import tempfile
import threading
import time

import xina
from xina import _capi


def fail(msg):
    print(f"FAIL: {msg}", flush=True)
    sys.exit(1)


def layout(cc, root):
    """offsetof/sizeof of every mirrored field, from C, against ctypes."""
    lines = ["#include <stddef.h>", "#include <stdio.h>",
             '#include "libxina.h"', "int main(void)", "{"]
    for cname, cls in _capi.MIRRORED.items():
        lines.append(f'\tprintf("{cname} sizeof %zu\\n", '
                     f"sizeof(struct {cname}));")
        for f, _ in cls._fields_:
            lines.append(f'\tprintf("{cname} {f} %zu\\n", '
                         f"offsetof(struct {cname}, {f}));")
    for name in _capi.MIRRORED_CONSTS:
        lines.append(f'\tprintf("const {name} %lld\\n", (long long){name});')
    lines += ["\treturn 0;", "}"]
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "layout.c")
        exe = os.path.join(d, "layout")
        with open(src, "w") as f:
            f.write("\n".join(lines) + "\n")
        cp = subprocess.run([cc, f"-I{root}/user/lib", f"-I{root}/include/uapi",
                             f"-I{root}/include", "-o", exe, src],
                            capture_output=True, text=True)
        if cp.returncode:
            fail("the mirror names a field the header lacks:\n" + cp.stderr)
        out = subprocess.run([exe], capture_output=True, text=True,
                             check=True).stdout
    c = {}
    for line in out.splitlines():
        s, f, v = line.split()
        c[(s, f)] = int(v)
    n = 0
    for cname, cls in _capi.MIRRORED.items():
        py = _capi.ctypes.sizeof(cls)
        if c[(cname, "sizeof")] != py:
            fail(f"sizeof(struct {cname}) is {c[(cname, 'sizeof')]} in C, "
                 f"{py} in the mirror")
        for f, _ in cls._fields_:
            off = getattr(cls, f).offset
            if c[(cname, f)] != off:
                fail(f"{cname}.{f} at offset {c[(cname, f)]} in C, {off} "
                     "in the mirror")
            n += 1
    for name in _capi.MIRRORED_CONSTS:
        if c[("const", name)] != getattr(_capi, name):
            fail(f"{name} is {c[('const', name)]} in C, "
                 f"{getattr(_capi, name)} in the mirror")
    print(f"ok: {n} fields of {len(_capi.MIRRORED)} structs at the same "
          f"offsets, same sizes; {len(_capi.MIRRORED_CONSTS)} constants "
          "the same")


def inputs(rank, n, kind):
    """Rank @rank's input of @n elements."""
    np = xina._np()
    i = np.arange(n, dtype=np.int64)
    if kind == "i32":
        return ((i * 7919 + rank * 104729) % 200003 - 100001).astype(np.int32)
    # floats of mixed magnitudes, no zeros, exactly reproducible
    rng = np.random.default_rng(1000 + rank)
    x = rng.standard_normal(n).astype(np.float32)
    x *= np.float32(2.0) ** rng.integers(-6, 7, n).astype(np.float32)
    x[x == 0] = 1.0
    return x


def check_f32(res, world, elems):
    """@res against the exact sum, within libxina's bound per element."""
    np = xina._np()
    ins = [inputs(r, res.size, "f32") for r in range(world)]
    exact = np.sum([a.astype(np.float64) for a in ins], axis=0)
    worst = 0.0
    for off in range(0, res.size, elems):
        e = max(int(np.frexp(np.max(np.abs(a[off:off + elems])))[1])
                for a in ins)
        for k in range(off, min(off + elems, res.size)):
            b = xina.f32_bound(float(res[k]), e, world)
            err = abs(float(res[k]) - exact[k])
            if err > b:
                fail(f"f32 element {k}: {res[k]!r}, exact {exact[k]!r}, "
                     f"error {err:.3g} over the bound {b:.3g}")
            worst = max(worst, err / b)
    return worst


def digest(a):
    return hashlib.sha256(a.tobytes()).hexdigest()[:16]


def sync_checks(x, world, elems, n):
    np = xina._np()
    a = inputs(x.rank, n, "i32")
    want = np.sum([inputs(r, n, "i32").astype(np.int64)
                   for r in range(world)], axis=0)
    want = ((want + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)
    if x.allreduce(a) is not a or not np.array_equal(a, want):
        fail(f"int32 sum of {n}: {np.count_nonzero(a != want)} elements off")
    print(f"ok: int32 sum of {n} elements exact")

    a = inputs(x.rank, n, "i32")
    want = np.max([inputs(r, n, "i32") for r in range(world)], axis=0)
    x.allreduce(a, xina.MAX)
    if not np.array_equal(a, want):
        fail(f"int32 max of {n}: {np.count_nonzero(a != want)} elements off")
    print(f"ok: int32 max of {n} elements exact")

    f = inputs(x.rank, n, "f32")
    x.allreduce(f)
    worst = check_f32(f, world, elems)
    print(f"ok: float32 sum of {n} elements within the bound "
          f"(worst error/bound {worst:.3f}) digest {digest(f)}")

    # Block-sparse: rank r's non-zeros in blocks b with b % 7 == r only,
    # the rest zero; the same sum as a dense call of the same arrays.
    def sparse_in(r):
        v = inputs(r, n, "i32")
        blk = np.arange(n) // elems
        v[blk % 7 != r] = 0
        return v
    a = sparse_in(x.rank)
    want = np.sum([sparse_in(r).astype(np.int64) for r in range(world)],
                  axis=0)
    want = ((want + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)
    st0 = x.stats()
    if x.allreduce(a, sparse=True) is not a or not np.array_equal(a, want):
        fail(f"sparse int32 sum of {n}: {np.count_nonzero(a != want)} "
             "elements off")
    skipped = x.stats()["sparse_skipped"] - st0.get("sparse_skipped", 0)
    nblk = (n + elems - 1) // elems
    if nblk > 7 and not skipped:
        fail(f"sparse int32 sum of {n}: no block of {nblk} skipped")
    print(f"ok: sparse int32 sum of {n} elements exact, {skipped} of "
          f"{nblk} blocks skipped")

    # Block-sparse float32 SUM (its union is agreed by the exponents'
    # call): bitwise the dense call of the same arrays.  Blocks b with
    # b % 7 == 6 hold -0.0 on rank 0 and +0 elsewhere: zeros everywhere,
    # so skipped, and +0 in the result, as the dense call gives them.
    def sparse_f32(r):
        v = inputs(r, n, "f32")
        blk = np.arange(n) // elems
        v[blk % 7 != r] = 0.0
        if r == 0:
            v[blk % 7 == 6] = -0.0
        return v
    dense = sparse_f32(x.rank)
    x.allreduce(dense)
    a = sparse_f32(x.rank)
    st0 = x.stats()
    x.allreduce(a, sparse=True)
    skipped = x.stats()["sparse_skipped"] - st0.get("sparse_skipped", 0)
    want = sum(1 for b in range(nblk) if b % 7 >= min(world, 7))
    negz = np.signbit(a[(np.arange(n) // elems) % 7 == 6]).sum()
    off = np.count_nonzero(a.view(np.uint32) != dense.view(np.uint32))
    if off or skipped != want or negz:
        fail(f"sparse float32 sum of {n}: {off} elements' bits differ from "
             f"the dense call's, {skipped} blocks skipped (want {want}), "
             f"{negz} -0 left")
    print(f"ok: sparse float32 sum of {n} elements bitwise the dense call's, "
          f"{skipped} of {nblk} blocks skipped (-0 blocks included)")

    # The caller's map (blocks=, xina_allreduce_sparse_map()): each rank
    # names its blocks (b % 7 == rank) and libxina reads no other.  Rank 0
    # writes 7s under its clear bits: in blocks rank 1 sends (b % 7 == 1),
    # which come back as the ranks' sum without the 7s, and in blocks no
    # rank sends (b % 7 == 6), which keep them.  The other ranks must get
    # the sum of the first sparse call above, bit for bit.
    bs = x.sparse_block(a)
    blk = np.arange(n) // bs
    mine = np.arange(-(-n // bs)) % 7 == x.rank
    a = sparse_in(x.rank)
    want = np.sum([sparse_in(r).astype(np.int64) for r in range(world)],
                  axis=0)
    want = ((want + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)
    hidden = (blk % 7 == 1) | (blk % 7 == 6) if x.rank == 0 else blk < 0
    a[hidden] = 7
    kept = hidden & (blk % 7 == 6)
    want[kept] = 7
    st0 = x.stats()
    x.allreduce(a, blocks=mine)
    skipped = x.stats()["sparse_skipped"] - st0.get("sparse_skipped", 0)
    if not np.array_equal(a, want) or (nblk > 7 and not skipped):
        fail(f"sparse int32 sum with the ranks' maps: "
             f"{np.count_nonzero(a != want)} elements off, {skipped} blocks "
             "skipped")
    try:
        x.allreduce(a, blocks=mine[:-1])
        fail("a map one block short was taken")
    except ValueError as e:
        if "blocks has" not in str(e):
            fail(f"the short map's refusal does not say why: {e}")
    print(f"ok: sparse int32 sum with the ranks' maps of their blocks exact, "
          f"{skipped} of {nblk} blocks skipped, {np.count_nonzero(hidden)} "
          f"elements under clear bits not read")


def check_results(bufs, world, elems, n):
    """The four calls of async_checks(): int32 sum, float32 sum, int32
    max, int32 sum of 7 (a call of one partial block)."""
    np = xina._np()
    want = np.sum([inputs(r, n, "i32").astype(np.int64)
                   for r in range(world)], axis=0)
    want = ((want + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)
    if not np.array_equal(bufs[0], want):
        fail("async int32 sum wrong")
    wmax = np.max([inputs(r, n + 1, "i32") for r in range(world)], axis=0)
    if not np.array_equal(bufs[2], wmax):
        fail("async int32 max wrong")
    w7 = np.sum([inputs(r, 7, "i32") for r in range(world)], axis=0)
    if not np.array_equal(bufs[3], w7.astype(np.int32)):
        fail("async int32 sum of 7 wrong")
    return check_f32(bufs[1], world, elems)


def async_aio(x, world, elems, n):
    """asyncio: four calls in flight, awaited together; the loop keeps
    running other work meanwhile, and Python starts no thread for them."""
    import asyncio
    threads = threading.active_count()
    bufs = [inputs(x.rank, n, "i32"), inputs(x.rank, n, "f32"),
            inputs(x.rank, n + 1, "i32"), inputs(x.rank, 7, "i32")]
    ticks = [0]

    async def ticker(stop):
        while not stop.is_set():
            ticks[0] += 1
            await asyncio.sleep(0.01)

    async def run():
        stop = asyncio.Event()
        t = asyncio.create_task(ticker(stop))
        futs = [x.allreduce_aio(bufs[0]), x.allreduce_aio(bufs[1]),
                x.allreduce_aio(bufs[2], xina.MAX),
                x.allreduce_aio(bufs[3])]
        early = [f.done() for f in futs]
        inflight = x.in_flight()
        res = await asyncio.gather(*futs)
        stop.set()
        await t
        return futs, res, early, inflight

    # Rank 0 starts while its peers still sleep: nothing can be done yet.
    if x.rank != 0:
        time.sleep(1.0)
    futs, res, early, inflight = asyncio.run(run())
    if any(r is not b for r, b in zip(res, bufs)):
        fail("an awaited result is not the array it was given")
    worst = check_results(bufs, world, elems, n)
    if threading.active_count() != threads:
        fail("allreduce_aio started a Python thread")
    if x.rank == 0:
        if any(early) or inflight != 4:
            fail(f"asyncio calls done before the peers had joined: {early}, "
                 f"{inflight} in flight")
        if ticks[0] < 20:
            fail(f"the event loop ran {ticks[0]} times while the calls were "
                 "in flight: it was blocked")
        print(f"ok: allreduce_aio: 4 calls in flight at once, the loop ran "
              f"{ticks[0]} ticks of 10 ms meanwhile, no Python thread "
              f"started ({threads} before and after)")
    print(f"ok: 4 asyncio calls: results exact / within the bound "
          f"(worst {worst:.3f})")
    return digest(bufs[1])


def async_checks(x, world, elems, n):
    aio_digest = async_aio(x, world, elems, n)
    # Rank 0 starts while its peers still sleep: the call cannot have
    # finished when allreduce_async() returns.
    if x.rank != 0:
        time.sleep(1.0)
    bufs = [inputs(x.rank, n, "i32"), inputs(x.rank, n, "f32"),
            inputs(x.rank, n + 1, "i32"), inputs(x.rank, 7, "i32")]
    futs = [x.allreduce_async(bufs[0]), x.allreduce_async(bufs[1]),
            x.allreduce_async(bufs[2], xina.MAX), x.allreduce_async(bufs[3])]
    threads = threading.active_count()
    if x.rank == 0:
        if any(f.done() for f in futs):
            fail("an async call was done before its peers had joined")
        print("ok: allreduce_async returned before the result existed")
    # One waiter thread per handle, not one per call.
    if threads > 2:
        fail(f"{threads} Python threads with 4 calls in flight (want the "
             "main thread and the handle's one waiter)")
    # A sync call made meanwhile runs after them, in submission order.
    s = inputs(x.rank, 3, "i32")
    x.allreduce(s)
    if not all(f.done() for f in futs):
        fail("a sync call overtook async calls made before it")
    for f, b in zip(futs, bufs):
        if f.result() is not b:
            fail("a future's result is not the array it was given")
    worst = check_results(bufs, world, elems, n)
    if digest(bufs[1]) != aio_digest:
        fail("float32 sum through allreduce_async differs from the same "
             "sum through allreduce_aio")
    print(f"ok: 4 async calls in flight ({threads} Python threads) and a "
          f"sync one after them: "
          f"results exact / within the bound (worst {worst:.3f}) "
          f"digest {digest(bufs[1])}")


def expect(exc_type, frag, fn, what, err=None):
    try:
        fn()
    except exc_type as e:
        if frag not in str(e):
            fail(f"{what}: message '{e}' lacks '{frag}'")
        if err is not None and getattr(e, "errno", None) != err:
            fail(f"{what}: errno {getattr(e, 'errno', None)}, want {err}")
        print(f"ok: {what}: {type(e).__name__}: {e}")
        return
    fail(f"{what}: no {exc_type.__name__} raised")


def error_checks(env):
    """Every error path, on the job of one worker (XINA_JOB) and an
    absent one (XINA_JOB + 1)."""
    import errno
    np = xina._np()

    expect(xina.XinaError, "is not an IPv4 dotted quad",
           lambda: xina.open_from_env(switch="10.77.0.300"),
           "bad switch address", errno.EINVAL)
    expect(xina.XinaError, "rank 1 out of range 0..0",
           lambda: xina.open_from_env(rank=1), "rank out of range",
           errno.EINVAL)
    expect(ValueError, "run 4294967296 out of range 0..4294967295",
           lambda: xina.open_from_env(run=1 << 32), "run out of range")
    expect(ValueError, "XINA_JOB not set",
           lambda: xina.open_from_env({k: v for k, v in env.items()
                                       if k != "XINA_JOB"}),
           "job not configured")

    x = xina.open_from_env()
    expect(TypeError, "dtype float64 not supported",
           lambda: x.allreduce(np.ones(8)), "wrong dtype")
    expect(TypeError, "dtype uint8 not supported: int8, int16, int32, "
           "int64, float16, bfloat16, float32",
           lambda: x.allreduce(np.ones(8, dtype=np.uint8)), "unsigned dtype")
    expect(TypeError, "dtype int32 in non-native byte order (>i4)",
           lambda: x.allreduce(np.ones(8, dtype=">i4")),
           "non-native byte order")
    expect(TypeError, "expected a numpy.ndarray or a torch.Tensor",
           lambda: x.allreduce([1, 2, 3]), "not an array")
    expect(ValueError, "not contiguous",
           lambda: x.allreduce(np.ones(16, dtype=np.int32)[::2]),
           "non-contiguous array")
    ro = np.ones(4, dtype=np.int32)
    ro.flags.writeable = False
    expect(ValueError, "read-only", lambda: x.allreduce(ro),
           "read-only array")
    expect(ValueError, "op 'band' is bitwise: for integer dtypes, not "
           "float32",
           lambda: x.allreduce(np.ones(4, dtype=np.float32), xina.BAND),
           "bitwise op on floats")
    expect(ValueError, "op 'prod' is none of sum, min, max, avg, band, bor, "
           "bxor", lambda: x.allreduce(np.ones(4, dtype=np.int32), "prod"),
           "unknown op")
    import torch
    expect(ValueError, "op 'bxor' is bitwise: for integer dtypes, not "
           "bfloat16",
           lambda: x.allreduce_async(torch.ones(4, dtype=torch.bfloat16),
                                     xina.BXOR),
           "torch: bitwise op on bfloat16, async")
    expect(TypeError, "dtype float64 not supported",
           lambda: x.allreduce(torch.ones(4, dtype=torch.float64)),
           "torch: float64")
    expect(ValueError, "tensor is not contiguous",
           lambda: x.allreduce(torch.ones(4, 4, dtype=torch.int16).t()),
           "torch: non-contiguous tensor")
    expect(ValueError, "tensor on meta: libxina reduces host memory",
           lambda: x.allreduce(torch.ones(4, device="meta")),
           "torch: tensor not in host memory")
    if x.in_flight():
        fail("an argument error left a call in flight")
    # argument errors left the handle usable: one worker, the sum is itself
    a = np.arange(5, dtype=np.int32)
    x.allreduce(a)
    if not np.array_equal(a, np.arange(5)):
        fail("one-worker sum is not the input")
    t = torch.arange(-3, 4, dtype=torch.int16)
    x.allreduce(t, xina.MIN)
    if not torch.equal(t, torch.arange(-3, 4, dtype=torch.int16)):
        fail("one-worker int16 min is not the input")
    print("ok: the handle works after the argument errors")
    x.close()

    absent = int(env["XINA_JOB"]) + 100
    t0 = time.monotonic()
    expect(xina.XinaError,
           f"job {absent} rank 0: no answer to the join from switch",
           lambda: xina.open_from_env(job=absent, timeout_ms=300),
           "job absent: the open's join is not answered", errno.ETIMEDOUT)
    took = time.monotonic() - t0
    if not 0.25 <= took < 10:
        fail(f"join timeout of 300 ms took {took:.2f} s")
    other = os.path.join(os.path.dirname(env["XINA_KEY_FILE"]), "other.key")
    expect(xina.XinaError, "(bad key)",
           lambda: xina.open_from_env(key_file=other),
           "another job's key file: refused", errno.EKEYREJECTED)
    expect(xina.XinaError, "(mismatch): the job has",
           lambda: xina.open_from_env(slots=int(env["XINA_SLOTS"]) * 2),
           "more slots than the job's: refused", errno.EMSGSIZE)

    # A second run of the job's one worker, right after the first: the
    # switch says busy for up to 500 ms, then it opens a new epoch.
    x = xina.open_from_env(timeout_ms=1500)
    a = np.arange(5, dtype=np.int32)
    x.allreduce(a)
    st = x.stats()
    if not np.array_equal(a, np.arange(5)):
        fail("one-worker sum is not the input in the new epoch")
    print(f"ok: a new run of the job opened epoch {st['epoch']} "
          f"({st['join_busy']} busy replies first), its call works")
    x.close()

    # job XINA_JOB + 1 has two workers, and rank 1 never comes
    lonely = int(env["XINA_JOB"]) + 1
    x = xina.open_from_env(job=lonely, timeout_ms=300, join_timeout_ms=300)
    t0 = time.monotonic()
    expect(xina.XinaError, f"job {lonely} rank 0: no result from switch",
           lambda: x.allreduce(np.ones(4, dtype=np.int32)),
           "a peer that never comes: timeout", errno.ETIMEDOUT)
    took = time.monotonic() - t0
    if not 0.25 <= took < 10:
        fail(f"timeout of 300 ms took {took:.2f} s")
    expect(xina.XinaError, "handle unusable after an earlier failure",
           lambda: x.allreduce(np.ones(4, dtype=np.int32)),
           "after a failure", errno.ENOTRECOVERABLE)
    x.close()

    # One call in flight at most: the second waits (futures) or raises
    # (asyncio, which must not block its loop).
    import asyncio
    x = xina.open_from_env(job=lonely, timeout_ms=1000, join_timeout_ms=1000,
                           max_requests=1)
    fut = x.allreduce_async(np.ones(4, dtype=np.float32))

    async def aio_one():
        return await x.allreduce_aio(np.ones(4, dtype=np.int32))
    expect(xina.XinaError, "requests in flight already (opts.max_requests)",
           lambda: asyncio.run(aio_one()),
           "max_requests 1: allreduce_aio with a call in flight raises",
           errno.EAGAIN)
    t0 = time.monotonic()
    fut2 = x.allreduce_async(np.ones(4, dtype=np.int32))
    took = time.monotonic() - t0
    if not fut.done() or took < 0.3:
        fail(f"max_requests 1: a second allreduce_async returned after "
             f"{took:.2f} s, the first {'' if fut.done() else 'not '}done")
    print(f"ok: max_requests 1: a second allreduce_async waited {took:.2f} s "
          "for the first to end")
    expect(xina.XinaError, "no result from switch", fut.result,
           "a peer that never comes: async timeout through the future",
           errno.ETIMEDOUT)
    expect(xina.XinaError, "handle unusable after an earlier failure",
           fut2.result, "the call queued behind it: its own error",
           errno.ENOTRECOVERABLE)
    expect(xina.XinaError, "handle unusable after an earlier failure",
           lambda: asyncio.run(aio_one()),
           "allreduce_aio after a failure raises from the await",
           errno.ENOTRECOVERABLE)
    x.close()
    expect(xina.XinaError, "handle is closed",
           lambda: x.allreduce(np.ones(4, dtype=np.int32)), "closed handle")


def main():
    cmd = sys.argv[1]
    if cmd == "layout":
        layout(sys.argv[2], sys.argv[3])
    elif cmd in ("sync", "async"):
        n = int(sys.argv[2])
        world = int(os.environ["XINA_WORLD_SIZE"])
        elems = int(os.environ["XINA_ELEMS"])
        with xina.open_from_env() as x:
            (sync_checks if cmd == "sync" else async_checks)(x, world, elems,
                                                             n)
    elif cmd == "errors":
        error_checks(os.environ)
    elif cmd == "types":
        import xina_python_types
        xina_python_types.main(sys.argv[2:])
    elif cmd == "ddp":
        import xina_python_ddp
        xina_python_ddp.main(sys.argv[2:])
    else:
        fail(f"unknown command {cmd}")
    print("PASS", flush=True)


if __name__ == "__main__":
    main()
