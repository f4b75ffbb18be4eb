# SPDX-License-Identifier: GPL-2.0
"""Every dtype by every op through the switch (xina_python.py types N).

Each rank reduces, in order, with the same calls on every rank:

  1. sync, numpy arrays: int8, int16, int32, int64, float16, float32, each
     by every op it takes (sum, min, max, avg; band, bor, bxor for the
     integers);
  2. sync, torch tensors: the same dtypes and bfloat16, every op;
  3. the torch matrix again, all its calls in flight at once through
     allreduce_async(), then again through allreduce_aio();

and checks every result against a reference computed here from every
rank's input (each rank makes all inputs itself):

  integers           bit-exact: sums wrapping modulo 2^bits, min and max
                     signed, bitwise and, or, xor; avg as libxina defines
                     it (int_avg())
  float min, max     bit-exact (one of the inputs)
  float sum, avg     within libxina's bound of the exact value (float64)
  async, aio         bitwise the results of the same calls made sync

The inputs take every value of the integer types, the extremes included
(so that the sums wrap), and floats of mixed signs and magnitudes.  It
prints "switch_slots N": the slots all these calls cost the switch, which
the shell test compares with the switch's counters (16-bit types two and
int8 four to a 32-bit word), and the digest of its float results, which
must be the same on every rank.
"""

import asyncio
import hashlib
import os

import numpy as np
import torch

import xina

INTS = ["int8", "int16", "int32", "int64"]
FLOATS = ["float16", "bfloat16", "float32"]
SIZE = {"int8": 1, "int16": 2, "int32": 4, "int64": 8, "float16": 2,
        "bfloat16": 2, "float32": 4}
# the integer dtype a float's min and max travel as (its width)
SAME_WIDTH = {"float16": "int16", "bfloat16": "int16", "float32": "int32"}


def fail(msg):
    raise SystemExit(f"FAIL: {msg}")


def ops_of(name):
    if name in INTS:
        return list(xina.OPS)
    return [xina.SUM, xina.MIN, xina.MAX, xina.AVG]


def source(rank, n, name):
    """Rank @rank's input of @n elements of @name, as a float64 or int64
    numpy array holding the exact values (bfloat16 rounded already)."""
    rng = np.random.default_rng([rank, SIZE[name], name in INTS])
    if name in INTS:
        info = np.iinfo(name)
        a = rng.integers(info.min, info.max, n, dtype=name, endpoint=True)
        a[::53] = info.max if rank % 2 else info.min
        a[1::61] = -1
        return a
    x = rng.standard_normal(n) * 2.0 ** rng.integers(-6, 7, n)
    x[x == 0] = 1.0
    # as the dtype holds it
    return torch.from_numpy(x).to(getattr(torch, name)).double().numpy()


def make(rank, n, name, kind):
    """The input as a numpy array or a torch tensor of dtype @name."""
    v = source(rank, n, name)
    if kind == "torch":
        return torch.from_numpy(v).to(getattr(torch, name)).contiguous()
    return v.astype(name)


def bits(buf):
    """The result's bytes, whatever it is."""
    if isinstance(buf, torch.Tensor):
        return buf.view(torch.uint8).numpy().tobytes()
    return buf.tobytes()


def values(buf):
    """The result's values: int64 (integers) or float64 (floats)."""
    if isinstance(buf, torch.Tensor):
        buf = buf.double() if buf.is_floating_point() else buf.long()
        return buf.numpy()
    return buf.astype(np.float64 if buf.dtype.kind == "f" else np.int64)


def int_avg(total, world):
    """libxina's avg of integers: the exact sum (it travels in lanes twice
    as wide, so it never wraps) divided by the workers, rounded towards
    minus infinity."""
    return total // world


def reference(name, op, ins, world):
    """The exact result of @op over the rank inputs @ins (int64 or
    float64 arrays): wrapped to the dtype for the integers, float64 for
    the floats."""
    stack = np.stack(ins)
    if op == xina.MIN:
        return stack.min(axis=0)
    if op == xina.MAX:
        return stack.max(axis=0)
    if op == xina.BAND:
        return np.bitwise_and.reduce(stack, axis=0)
    if op == xina.BOR:
        return np.bitwise_or.reduce(stack, axis=0)
    if op == xina.BXOR:
        return np.bitwise_xor.reduce(stack, axis=0)
    if name in FLOATS:
        s = stack.sum(axis=0)     # exact: few addends of few bits
        return s / world if op == xina.AVG else s
    if op == xina.AVG:
        # exact, in Python's integers (an int64 sum may not fit int64)
        exact = stack.astype(object).sum(axis=0)
        return np.array(int_avg(exact, world).tolist(), dtype=np.int64)
    # wrapping: modulo 2^64 through uint64, then to the dtype's width
    s = stack.astype(np.int64).view(np.uint64).sum(axis=0,
                                                   dtype=np.uint64)
    return s.view(np.int64).astype(name).astype(np.int64)


# Block floating point as libxina.h describes it, per float type: the
# integer lane's bits of its sum (float32: 32; float16 and bfloat16:
# 16, for density), the float's significand bits and its smallest quantum
# (subnormal step).
# With XINA_F16_WIDE=1 (xina.Xina(f16_wide=True)) only float16 runs, and
# its sums travel in 32-bit lanes.
WIDE = os.environ.get("XINA_F16_WIDE", "0") not in ("", "0")
BFP = {"float32": (32, 24, -149), "float16": (32 if WIDE else 16, 11, -24),
       "bfloat16": (16, 8, -133)}


def per_packet(name, op, elems):
    """Elements of one call in a packet of @elems 32-bit words: integers
    as themselves (int8 four to a word, int16 two, int64 two words), but
    avg in lanes twice as wide; floats' min and max in integer lanes of
    their width, their sum and avg in the lanes of BFP."""
    bits = 8 * SIZE[name]
    if name in INTS and op == xina.AVG:
        bits *= 2
    if name in FLOATS and op in (xina.SUM, xina.AVG):
        bits = BFP[name][0]
    if bits >= 64:
        return elems // (bits // 32)
    return elems * (32 // bits)


def blocks(name, op, n, elems):
    return -(-n // per_packet(name, op, elems))


def slots(name, op, n, elems):
    """Slots one call costs the switch: a packet of each block; a float
    sum or avg first agrees on the blocks' exponents (one int32 max call
    of an exponent per block)."""
    b = blocks(name, op, n, elems)
    if name in FLOATS and op in (xina.SUM, xina.AVG):
        return b + -(-b // elems)
    return b


def float_bound(name, op, res, ins, world, elems):
    """Per element: how far libxina's float sum (avg) may be from the
    exact one, derived here from the scheme rather than taken from the
    library.  Per block of a packet: E the largest frexp exponent of any
    worker's block, L = ceil(log2 W), the scale 2^s with s = B - 1 - L -
    E for B-bit lanes, q = rint(x 2^s) off by at most 1/2 (no clamp for
    W <= 128: an element of the top binade, M 2^(E - p) with |M| < 2^p,
    is a whole multiple of the quantum for p <= B - 1 - L, and at most
    2^(B-1-L) - 2^(B-1-L-p) <= 2^(B-1-L) - 1 of them): the sum of W is
    off by W/2 2^-s, the average by 1/2 2^-s.  Then one rounding to the
    type: 2^-p |r| for a p-bit significand, or half the smallest quantum;
    the average's division in double adds 2^-52 |r|.  (libxina.h states
    looser bounds, 2^(1-p) |r| and, for bfloat16, W 2^-s, valid for
    every W.)"""
    bits_, p, qmin = BFP[name]
    L = (world - 1).bit_length()
    if p > bits_ - 1 - L:
        fail(f"the bound of {name} is derived for W <= {2 ** (bits_ - 1 - p)}"
             f" only, not {world}")
    per = per_packet(name, op, elems)
    div = world if op == xina.AVG else 1
    absmax = np.max(np.abs(np.stack(ins)), axis=0)
    bound = np.empty(res.size)
    for off in range(0, res.size, per):
        m = float(np.max(absmax[off:off + per]))
        if m == 0:
            bound[off:off + per] = 0.0
            continue
        E = int(np.frexp(m)[1])
        s = bits_ - 1 - L - E
        bound[off:off + per] = world / 2 * 2.0 ** -s / div
    bound += 2.0 ** -p * np.abs(res) + 2.0 ** (qmin - 1)
    if div > 1:
        bound += 2.0 ** -52 * np.abs(res)
    return bound * (1 + 2.0 ** -40)


class Matrix:
    def __init__(self, x, world, elems, n):
        self.x, self.world, self.elems, self.n = x, world, elems, n
        self.slots = 0
        self.calls = 0
        self.worst = {}          # dtype -> worst error / bound of sum, avg
        self.results = {}        # (kind, dtype, op) -> result bytes

    def pairs(self, kind):
        names = ["float16"] if WIDE else INTS + FLOATS
        if kind == "numpy":
            names = [d for d in names if d != "bfloat16"]
        return [(d, op) for d in names for op in ops_of(d)]

    def check(self, kind, name, op, buf):
        ins = [values(make(r, self.n, name, kind))
               for r in range(self.world)]
        want = reference(name, op, ins, self.world)
        got = values(buf)
        what = f"{kind} {name} {op} of {self.n}"
        if name in INTS or op in (xina.MIN, xina.MAX):
            if not np.array_equal(got, want):
                k = int(np.flatnonzero(got != want)[0])
                fail(f"{what}: {np.count_nonzero(got != want)} elements "
                     f"off, first [{k}] {got[k]!r}, want {want[k]!r}")
            return
        b = float_bound(name, op, got, ins, self.world, self.elems)
        err = np.abs(got - want)
        if np.any(err > b):
            k = int(np.argmax(err - b))
            fail(f"{what}: [{k}] {got[k]!r}, exact {want[k]!r}, error "
                 f"{err[k]:.3g} over the bound {b[k]:.3g}")
        if not np.any(got != ins[self.x.rank]):
            fail(f"{what}: the result is this rank's input")
        w = float(np.max(err / np.maximum(b, 1e-300)))
        self.worst[name] = max(self.worst.get(name, 0.0), w)

    def account(self, name, op):
        self.calls += 1
        self.slots += slots(name, op, self.n, self.elems)

    def sync(self, kind):
        for name, op in self.pairs(kind):
            buf = make(self.x.rank, self.n, name, kind)
            if self.x.allreduce(buf, op) is not buf:
                fail(f"{kind} {name} {op}: the result is not the buffer")
            self.check(kind, name, op, buf)
            self.results[(kind, name, op)] = bits(buf)
            self.account(name, op)
        print(f"ok: sync, {kind}: {len(self.pairs(kind))} dtype x op pairs "
              f"of {self.n} elements as the reference", flush=True)

    def same_as_sync(self, how, bufs):
        for (name, op), buf in zip(self.pairs("torch"), bufs):
            if bits(buf) != self.results[("torch", name, op)]:
                fail(f"{how} torch {name} {op}: not bitwise the result of "
                     "the same call made sync")
            self.account(name, op)

    def futures(self):
        pairs = self.pairs("torch")
        bufs = [make(self.x.rank, self.n, d, "torch") for d, _ in pairs]
        futs = [self.x.allreduce_async(b, op)
                for b, (_, op) in zip(bufs, pairs)]
        for f, b in zip(futs, bufs):
            if f.result() is not b:
                fail("a future's result is not its tensor")
        self.same_as_sync("allreduce_async", bufs)
        print(f"ok: allreduce_async: {len(pairs)} calls in flight, every "
              "result bitwise that of the sync call", flush=True)

    def aio(self):
        pairs = self.pairs("torch")
        bufs = [make(self.x.rank, self.n, d, "torch") for d, _ in pairs]

        async def run():
            return await asyncio.gather(*(self.x.allreduce_aio(b, op)
                                          for b, (_, op) in zip(bufs,
                                                                pairs)))
        res = asyncio.run(run())
        if any(r is not b for r, b in zip(res, bufs)):
            fail("an awaited result is not its tensor")
        self.same_as_sync("allreduce_aio", bufs)
        print(f"ok: allreduce_aio: {len(pairs)} calls in flight, every "
              "result bitwise that of the sync call", flush=True)

    def digest(self):
        h = hashlib.sha256()
        for key in sorted(self.results):
            if key[1] in FLOATS:
                h.update(self.results[key])
        return h.hexdigest()[:16]


def main(argv):
    n = int(argv[0])
    world = int(os.environ["XINA_WORLD_SIZE"])
    elems = int(os.environ["XINA_ELEMS"])
    torch.set_num_threads(1)
    with xina.open_from_env() as x:
        m = Matrix(x, world, elems, n)
        m.sync("numpy")
        m.sync("torch")
        m.futures()
        m.aio()
    worst = ", ".join(f"{d} {w:.3f}" for d, w in sorted(m.worst.items()))
    print(f"ok: float sum and avg within the bound (worst error/bound: "
          f"{worst}) digest {m.digest()}", flush=True)
    print(f"calls {m.calls}", flush=True)
    print(f"switch_slots {m.slots}", flush=True)
