# SPDX-License-Identifier: GPL-2.0
"""The DDP hook against Gloo, a few steps (xina_python.py ddp ...).

--dtype float16: a float16 model (float16 buckets, averaged by libxina),
each step against the exact average; --dtype bfloat16: bfloat16 buckets
through the hook as DDP calls it (see main_bfloat16()).  The rest of
this describes the float32 run:

Every rank builds one small model three times from the same seed: plain
(its local gradients), DDP with the xina hook, DDP with DDP's default
allreduce over Gloo.  Each step starts all three from the same
parameters (the Gloo model's, after its optimiser step) and the same
per-rank batch; after backward each rank gathers the local gradients of
all ranks (Gloo all_gather) and checks, element by element:

  xina's average against the exact one (float64) within libxina's bound
  divided by the world size (libxina.h, with the block exponent taken as
  the largest of the whole gradient: a block's is never larger), plus the
  rounding of the division;
  Gloo's average against the exact one within the rounding of a sum of W
  floats, (W - 1) * 2^-24 * sum |x| / W, plus the division's;

so that the two differ by at most the sum of both.  It also counts the
packets the hook's calls must have cost the switch (printed for the
shell test to compare with the switch's counters).

The xina model is cut into buckets of 8 KiB (the Gloo model keeps DDP's
default, one bucket): from the second step on (DDP's first iteration
uses one bucket, then rebuilds them in the order gradients became ready)
several hook calls a step.  In the second step the other ranks start
their backward pass 0.5 s after rank 0, so rank 0's buckets cannot
complete before its backward pass has started all of them: all of them
are in flight at once, each started without a thread.
"""

import argparse
import os
import sys
import threading
import time

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import xina
import xina.ddp


def net():
    return torch.nn.Sequential(
        torch.nn.Linear(64, 96), torch.nn.ReLU(),
        torch.nn.Linear(96, 48), torch.nn.ReLU(),
        torch.nn.Linear(48, 10))


def flat_grads(m):
    return torch.cat([p.grad.reshape(-1) for p in m.parameters()])


class Poly(torch.nn.Module):
    """A model CPU float16 can train in torch 1.13 (no matmul, no relu:
    "addmm" and "clamp_min" have no Half kernel on the CPU there)."""

    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.w1 = torch.nn.Parameter(torch.randn(3000, generator=g) / 4)
        self.b1 = torch.nn.Parameter(torch.randn(3000, generator=g) / 4)
        self.w2 = torch.nn.Parameter(torch.randn(3000, generator=g) / 4)

    def forward(self, x):
        h = x * self.w1 + self.b1
        return (h * h * self.w2).sum(dim=1)


# libxina's block floating point of the 16-bit floats: lane bits (16 for
# both by default), significand bits, smallest quantum.
HALF = {"float16": (16, 11, -24), "bfloat16": (16, 8, -133)}


def half_bound(name, world, stack, r):
    """libxina's 16-bit avg (block floating point into B-bit lanes, then
    one rounding to a p-bit significand), with the block exponent taken as
    the largest of the whole gradient (a block's is never larger): half a
    quantum 2^-(B - 1 - L - E) for the average (no clamp while W <= 128,
    see xina_python_types.float_bound()), 2^-p |r| for the rounding, half
    the smallest quantum 2^qmin, 2^-52 |r| for the division."""
    lane, p, qmin = HALF[name]
    L = (world - 1).bit_length()
    e = int(np.frexp(np.max(np.abs(stack)))[1])
    return (2.0 ** (e - lane + 1 + L) / 2 + 2.0 ** -p * np.abs(r) +
            2.0 ** (qmin - 1) + 2.0 ** -52 * np.abs(r)) * (1 + 2.0 ** -40)


def half_check(name, what, stack, got):
    """A 16-bit average got (float64) against the exact average of the
    rows of stack (every rank's input, float64) within half_bound():
    exits with the first element beyond it named, else returns the exact
    average, the bound and the worst error/bound."""
    world = stack.shape[0]
    exact = stack.sum(axis=0) / world
    b = half_bound(name, world, stack, got)
    err = np.abs(got - exact)
    if np.any(err > b):
        k = int(np.argmax(err - b))
        raise SystemExit(f"FAIL: {name} {what} {k}: {got[k]!r}, exact "
                         f"{exact[k]!r}, off by {err[k]:.3g} > bound "
                         f"{b[k]:.3g}")
    return exact, b, float(np.max(err / b))


def half_slots(name, sizes, elems):
    """Slots of 16-bit avg calls: elems 32-bit words a packet, an element
    a lane, and the int32 max call of their blocks' exponents."""
    per = elems * 32 // HALF[name][0]
    slots = 0
    for n in sizes:
        b = -(-n // per)
        slots += b + -(-b // elems)
    return slots


def main_float16(a, rank, world, elems):
    """A float16 model under DDP with the xina hook: its gradient buckets
    are float16; each step's averaged gradient against the exact average
    of every rank's local one (Gloo all_gather)."""
    torch.manual_seed(0)
    ref = Poly().half()
    mx = Poly().half()
    mx.load_state_dict(ref.state_dict())
    dx = DDP(mx, bucket_cap_mb=8192 / 2 ** 20)
    state = xina.ddp.register(dx)
    opt = torch.optim.SGD(dx.parameters(), lr=1e-3)
    worst = 0.0
    for step in range(a.steps):
        ref.load_state_dict(mx.state_dict())
        g = torch.Generator().manual_seed(100 * step + rank)
        x = torch.randn(16, 3000, generator=g).half()
        y = torch.randn(16, generator=g)
        for m in (ref, dx):
            m.zero_grad(set_to_none=True)
            ((m(x).float() - y) ** 2).mean().backward()
        local = flat_grads(ref)
        if local.dtype != torch.float16 or flat_grads(mx).dtype != \
                torch.float16:
            raise SystemExit("FAIL: the gradients are not float16")
        every = [torch.empty_like(local) for _ in range(world)]
        dist.all_gather(every, local)
        stack = torch.stack(every).double().numpy()
        exact, b, w = half_check("float16", f"step {step}: gradient",
                                 stack, flat_grads(mx).double().numpy())
        if not np.any(np.abs(exact - local.double().numpy()) > b):
            raise SystemExit(f"FAIL: float16 step {step}: the average is "
                             "the local gradient: nothing was reduced")
        worst = max(worst, w)
        opt.step()
    params = torch.cat([p.detach().reshape(-1) for p in mx.parameters()])
    every = [torch.empty_like(params) for _ in range(world)]
    dist.all_gather(every, params)
    if any(not torch.equal(e, params) for e in every):
        raise SystemExit("FAIL: float16 replicas differ after the steps")
    sizes = list(state.bucket_elems)
    print(f"ok: float16 model, {a.steps} steps, {state.buckets} float16 "
          f"buckets through xina (avg): every gradient within the bound of "
          f"the exact average (worst error/bound {worst:.3f}), replicas "
          "identical", flush=True)
    print(f"switch_slots {half_slots('float16', sizes, elems)}", flush=True)
    state.handle.close()


class Bucket:
    """What the hook uses of a dist.GradBucket: its buffer."""

    def __init__(self, t):
        self.t = t

    def buffer(self):
        return self.t


def main_bfloat16(a, rank, world, elems):
    """bfloat16 buckets through the hook, called as DDP calls it (torch
    1.13's Gloo has no bfloat16, so DDP cannot even broadcast a bfloat16
    model at construction): several in flight, each against the exact
    average of every rank's bucket."""
    state = xina.ddp.XinaHookState(xina.open_from_env())
    sizes = [3000, 5000, 700]
    ins = {}
    futs = []
    for k, n in enumerate(sizes):
        ins[k] = [torch.randn(n, generator=torch.Generator().manual_seed(
            1000 * k + r)).to(torch.bfloat16) for r in range(world)]
        futs.append(xina.ddp.allreduce_hook(state,
                                            Bucket(ins[k][rank].clone())))
    worst = 0.0
    for k, f in enumerate(futs):
        got = f.wait()
        if got.dtype != torch.bfloat16:
            raise SystemExit(f"FAIL: bucket {k} came back as {got.dtype}")
        _, _, w = half_check("bfloat16", f"bucket {k} element",
                             torch.stack(ins[k]).double().numpy(),
                             got.double().numpy())
        worst = max(worst, w)
    print(f"ok: bfloat16: {len(sizes)} buckets through the hook "
          f"({state.max_in_flight} in flight at once) within the bound of "
          f"the exact average (worst error/bound {worst:.3f})", flush=True)
    print(f"switch_slots {half_slots('bfloat16', sizes, elems)}",
          flush=True)
    state.handle.close()


def main_dies(a, rank, world):
    """Rank a.dies leaves after two steps (DDP's second forward broadcasts
    its rebuilt buckets over Gloo, which a dead rank fails on its own
    terms).  The others' next backward fails
    with libxina's reason, named as a XinaError: the hook's future raises
    it from a callback (torch 1.13 shows a future completed with
    set_exception() as "Unable to cast <message> to Tensor")."""
    torch.manual_seed(0)
    m = DDP(net())
    xina.ddp.register(m)
    x = torch.randn(8, 64)
    y = torch.randint(0, 10, (8,))
    loss_fn = torch.nn.CrossEntropyLoss()
    for _ in range(2):
        m.zero_grad()
        loss_fn(m(x), y).backward()
    if rank == a.dies:
        print("PASS", flush=True)
        os._exit(0)
    m.zero_grad()
    t0 = time.monotonic()
    try:
        loss_fn(m(x), y).backward()
    except RuntimeError as e:
        msg = str(e)
        first = msg.splitlines()[0] if msg else ""
        if ("XinaError: " not in first or "no result from switch" not in first
                or "Unable to cast" in msg):
            raise SystemExit(f"rank {rank}: backward's error does not name "
                             f"the XinaError and its reason: {msg[:400]}")
        print(f"ok: rank {rank}: backward failed after "
              f"{time.monotonic() - t0:.1f} s: {first[:300]}", flush=True)
        return
    raise SystemExit(f"rank {rank}: backward succeeded without rank {a.dies}")


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--master", required=True)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--dtype", default="float32",
                    choices=["float32", "float16", "bfloat16"])
    ap.add_argument("--dies", type=int, default=-1,
                    help="this rank leaves after one step (main_dies())")
    a = ap.parse_args(argv)

    torch.set_num_threads(1)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "eth0")
    rank = int(os.environ["XINA_RANK"])
    world = int(os.environ["XINA_WORLD_SIZE"])
    elems = int(os.environ["XINA_ELEMS"])
    dist.init_process_group("gloo", init_method=f"tcp://{a.master}",
                            rank=rank, world_size=world)
    if a.dies >= 0:
        main_dies(a, rank, world)
        print("PASS", flush=True)
        sys.stderr.flush()
        os._exit(0)
    if a.dtype != "float32":
        (main_float16 if a.dtype == "float16" else main_bfloat16)(
            a, rank, world, elems)
        print("PASS", flush=True)
        sys.stderr.flush()
        os._exit(0)

    torch.manual_seed(0)
    ref = net()
    mx = net()
    mg = net()
    mx.load_state_dict(ref.state_dict())
    mg.load_state_dict(ref.state_dict())
    dg = DDP(mg)
    # "User can set dist._DEFAULT_FIRST_BUCKET_BYTES to tune DDP first
    # bucket" (torch 1.13's DDP): small buckets, several a step
    first = dist._DEFAULT_FIRST_BUCKET_BYTES
    dist._DEFAULT_FIRST_BUCKET_BYTES = 8192
    dx = DDP(mx, bucket_cap_mb=8192 / 2 ** 20)
    dist._DEFAULT_FIRST_BUCKET_BYTES = first
    state = xina.ddp.register(dx)
    # no XINA_RUN_ID: rank 0's draw, the same on every rank (the test
    # compares them with the switch's)
    print(f"run {state.handle.run}", flush=True)
    sizes = []
    threads = threading.active_count()
    opt = torch.optim.SGD(dg.parameters(), lr=0.1)
    loss_fn = torch.nn.CrossEntropyLoss()
    L = xina.headroom_bits(world)
    u = 2.0 ** -24
    worst_x = worst_g = worst_d = 0.0

    # The hook's join timeout is the process group's (30 min): rank 0
    # "saving a checkpoint" for longer than libxina's default join timeout
    # (XINA_TIMEOUT_MS plus twice the time since the previous call, about
    # 5 s here) before step 2 is waited for by the others' bucket calls.
    pg_ms = int(dist.default_pg_timeout.total_seconds() * 1000)
    if state.handle._opts.join_timeout_ms != pg_ms:
        raise SystemExit(f"FAIL: the hook's join timeout is "
                         f"{state.handle._opts.join_timeout_ms} ms, want the "
                         f"process group's {pg_ms}")
    stall_s = 8.0

    for step in range(a.steps):
        if step == 2 and rank == 0:
            time.sleep(stall_s)
        t_step = time.monotonic()
        mx.load_state_dict(mg.state_dict())
        ref.load_state_dict(mg.state_dict())
        g = torch.Generator().manual_seed(100 * step + rank)
        x = torch.randn(32, 64, generator=g)
        y = torch.randint(0, 10, (32,), generator=g)
        calls, elements = state.buckets, state.elements
        for m in (ref, dx, dg):
            m.zero_grad(set_to_none=True)
            out = loss_fn(m(x), y)
            if m is dx and step == 1 and rank != 0:
                time.sleep(0.5)
            out.backward()
        nb = state.buckets - calls
        if nb < (2 if step else 1):
            raise SystemExit(f"FAIL: step {step}: {nb} hook calls, want "
                             "several (8 KiB buckets)")
        if sum(list(state.bucket_elems)[-nb:]) != state.elements - elements:
            raise SystemExit(f"FAIL: step {step}: bucket sizes do not add up")
        sizes += list(state.bucket_elems)[-nb:]
        if step == 1 and rank == 0:
            if state.max_in_flight != nb:
                raise SystemExit(f"FAIL: step 1: {state.max_in_flight} of "
                                 f"{nb} buckets in flight at once, want all")
            if threading.active_count() > threads + 1:
                raise SystemExit(f"FAIL: {threading.active_count()} threads "
                                 f"after {nb} buckets, {threads} before: "
                                 "more than the handle's one waiter")
            print(f"ok: step 1: all {nb} buckets of rank 0 in flight at "
                  f"once, {threading.active_count() - threads} Python "
                  "thread started for them", flush=True)

        if step == 2 and rank != 0:
            waited = time.monotonic() - t_step
            if waited < stall_s / 2:
                raise SystemExit(f"FAIL: step 2 took {waited:.1f} s on rank "
                                 f"{rank}: rank 0's {stall_s} s stall was not "
                                 "waited for in its bucket calls")
            print(f"ok: rank 0 stalled {stall_s:.0f} s before step 2 (a "
                  f"checkpoint): rank {rank}'s bucket calls waited "
                  f"{waited:.1f} s (join timeout {pg_ms} ms, the process "
                  "group's)", flush=True)
        local = flat_grads(ref)
        every = [torch.empty_like(local) for _ in range(world)]
        dist.all_gather(every, local)
        stack = torch.stack(every).double().numpy()
        exact = stack.sum(axis=0) / world
        absum = np.abs(stack).sum(axis=0)
        gx = flat_grads(mx).double().numpy()
        gg = flat_grads(mg).double().numpy()

        e = int(np.frexp(np.max(np.abs(stack)))[1])
        r = np.abs(gx) * world
        bx = (world * 2.0 ** (e - 32 + L) + 2.0 ** -23 * r + 2.0 ** -149) \
            / world + u * np.abs(gx)
        bg = (world - 1) * u * absum * 1.01 / world + u * np.abs(gg)
        ex = np.abs(gx - exact)
        eg = np.abs(gg - exact)
        if np.any(ex > bx):
            k = int(np.argmax(ex - bx))
            raise SystemExit(f"FAIL: step {step}: xina gradient {k} "
                             f"{gx[k]!r}, exact {exact[k]!r}, off by "
                             f"{ex[k]:.3g} > bound {bx[k]:.3g}")
        if np.any(eg > bg):
            k = int(np.argmax(eg - bg))
            raise SystemExit(f"FAIL: step {step}: Gloo gradient {k} "
                             f"{gg[k]!r}, exact {exact[k]!r}, off by "
                             f"{eg[k]:.3g} > bound {bg[k]:.3g}")
        d = np.abs(gx - gg)
        if np.any(d > bx + bg):
            raise SystemExit(f"FAIL: step {step}: xina and Gloo differ "
                             "beyond both bounds")
        if not np.any(np.abs(exact - local.double().numpy()) > bx):
            raise SystemExit(f"FAIL: step {step}: the average is the local "
                             "gradient: nothing was reduced")
        worst_x = max(worst_x, float(np.max(ex / bx)))
        worst_g = max(worst_g, float(np.max(eg / np.maximum(bg, 2.0 ** -149))))
        worst_d = max(worst_d, float(np.max(d)))
        opt.step()

    # every hook call (bucket) is one float32 call: its blocks plus one
    # int32 max call of their exponents
    slots = 0
    for n in sizes:
        b = -(-n // elems)
        slots += b + -(-b // elems)
    print(f"ok: {a.steps} steps, {sum(p.numel() for p in mx.parameters())} "
          f"parameters, {state.buckets} buckets through xina: every gradient "
          f"within the bound of the exact average (worst error/bound xina "
          f"{worst_x:.3f}, Gloo {worst_g:.3f}); largest |xina - Gloo| "
          f"{worst_d:.3g}", flush=True)
    print(f"switch_slots {slots}", flush=True)
    if state.buckets < a.steps:
        raise SystemExit(f"FAIL: the hook ran {state.buckets} times in "
                         f"{a.steps} steps")
    state.handle.close()
    # Out without tearing torch down: Debian's torch 1.13 can deadlock when
    # a DDP reducer's Gloo process group is destroyed at exit (its
    # destructor joins a Gloo thread waiting for the GIL it holds).
    print("PASS", flush=True)
    sys.stderr.flush()
    os._exit(0)
