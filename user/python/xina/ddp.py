# SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause)
"""A PyTorch DDP communication hook that allreduces through a xina switch.

    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    import xina.ddp

    dist.init_process_group("gloo")        # DDP's start-up broadcast
    model = DDP(net)
    xina.ddp.register(model)               # gradients through the switch

Each gradient bucket (on the CPU) is averaged by the switch with
libxina's float path and handed back to DDP through a
torch.futures.Future, as the built-in allreduce hook does.  A float32
bucket is summed, then divided by the world size; a float16 or bfloat16
one (a model in half precision) is averaged by libxina ("avg": the sum
divided before it is rounded to 16 bits, so that a sum beyond the 16-bit
range does not overflow where the average would not).  (DDP itself
needs a process group that can broadcast the model's dtype at its start:
torch 1.13's Gloo has float16 but no bfloat16.)  The
process group still carries what DDP does besides gradients (the
parameters' broadcast at construction, buffers): only the buckets take
the switch.

Overlap: DDP calls the hook when a bucket is ready, in the middle of the
backward pass.  The hook starts the bucket's allreduce with libxina's
non-blocking call (Xina.allreduce_async over xina_allreduce_start)
and returns at once; no Python thread runs per bucket.  libxina's
progress thread of the handle moves the packets while Python computes the
next buckets, so a bucket's call completes during the backward pass
without anyone polling; the handle's one waiter thread, woken by the
completion fd, divides a float32 bucket and completes DDP's future.  Several
buckets are in flight at once (up to XINA_MAX_REQUESTS, 64 by default);
they go through the switch one after the other, in DDP's bucket order,
the same on every rank.

Stragglers: a bucket's call waits for peers that have not reached it yet
as long as torch.distributed's own collectives wait for them
(dist.default_pg_timeout, 30 minutes), not libxina's default (its
timeout plus twice this rank's own time since its last call, which
assumes every rank does the same work between calls).  Rank 0 saving a
checkpoint between steps while the others go on is a wait, not a
failure.  XINA_JOIN_TIMEOUT_MS sets another bound; a peer that stops in
the middle of a call is still found after XINA_TIMEOUT_MS.

The run: every join names this run of the job (libxina's opts.run), and
the switch takes a join naming another run than its current epoch's for
a new run of the workers.  Without it, a rank that never joined a run
that died (the job restarted before that rank got to join), joining
first in the next run, is taken into the dead run's epoch and completes
the dead run's open rounds with its own gradients: a wrong result, or a
timeout.  So every run needs a number of its own, the same on all its
ranks: XINA_RUN_ID if the launcher sets it (on every rank), else
register() has rank 0 draw a random non-zero 32-bit number and broadcasts
it over the process group before the handle opens (register() is then a
collective call: every rank makes it).
"""

import collections
import os
import secrets
from typing import Deque, Optional

import torch
import torch.distributed as dist

from . import AVG, SUM, Xina, open_from_env

__all__ = ["XinaHookState", "agree_run", "allreduce_hook", "register"]

# bucket dtype -> the op, and whether the hook divides by the world size
_BUCKET_OPS = {torch.float32: (SUM, True), torch.float16: (AVG, False),
               torch.bfloat16: (AVG, False)}


class XinaHookState:
    """What the hook needs: the handle and the number to divide by."""

    def __init__(self, handle: Xina):
        self.handle = handle
        self.world_size = handle.world_size
        self.buckets = 0        # buckets reduced, for tests and logs
        self.elements = 0       # their elements
        # elements of the latest buckets, one entry per hook call
        self.bucket_elems: Deque[int] = collections.deque(maxlen=1024)
        self.max_in_flight = 0  # most calls of the handle in flight at once

    def __getstate__(self):
        raise TypeError("a xina handle cannot be pickled")


def allreduce_hook(state: XinaHookState, bucket: dist.GradBucket
                   ) -> torch.futures.Future[torch.Tensor]:
    """Average the bucket through the switch, return a future."""
    buf = bucket.buffer()
    if buf.dtype not in _BUCKET_OPS or buf.device.type != "cpu":
        raise TypeError(f"xina hook: bucket of {buf.dtype} on {buf.device}: "
                        "libxina reduces float32, float16 and bfloat16 "
                        "gradients in host memory")
    op, divide = _BUCKET_OPS[buf.dtype]
    arr = buf.detach()     # the bucket's own memory, no copy
    # holds the call's concurrent.futures.Future once it is done
    call: torch.futures.Future = torch.futures.Future()
    world = state.world_size

    def bucket_of(f):
        # Raises the call's XinaError, which DDP raises in backward as
        # "Got the following error when running the callback: XinaError:
        # ...".  A future completed with set_exception() instead reads
        # "Unable to cast <the message> to Tensor" in torch 1.13.
        f.value().result()
        if divide:
            buf.div_(world)
        return buf

    fut = call.then(bucket_of)
    state.buckets += 1
    state.elements += arr.numel()
    state.bucket_elems.append(arr.numel())
    state.handle.allreduce_async(arr, op).add_done_callback(call.set_result)
    state.max_in_flight = max(state.max_in_flight, state.handle.in_flight())
    return fut


def agree_run() -> int:
    """A run number for this run of the job, the same on every rank: rank
    0 draws a random non-zero 32-bit number and broadcasts it over the
    default process group (a collective call: every rank makes it)."""
    run = [0]
    if dist.get_rank() == 0:
        while not run[0]:
            run[0] = secrets.randbits(32)
    dist.broadcast_object_list(run, src=0)
    return int(run[0])


def register(model: torch.nn.parallel.DistributedDataParallel,
             handle: Optional[Xina] = None) -> XinaHookState:
    """Route @model's gradient buckets through xina.

    Without @handle, one is opened from the XINA_* environment, its rank
    and world size defaulting to the process group's, and its join
    timeout to the process group's default timeout, and its run to
    XINA_RUN_ID, else to one that rank 0 draws and broadcasts (see above:
    then every rank must call register()).
    """
    if handle is None:
        defaults = {}
        if not os.environ.get("XINA_RUN_ID"):
            defaults["run"] = agree_run()
        if "XINA_RANK" not in os.environ:
            defaults["rank"] = dist.get_rank()
        if "XINA_WORLD_SIZE" not in os.environ:
            defaults["world_size"] = dist.get_world_size()
        if not os.environ.get("XINA_JOIN_TIMEOUT_MS"):
            defaults["join_timeout_ms"] = int(
                dist.default_pg_timeout.total_seconds() * 1000)
        handle = open_from_env(**defaults)
    state = XinaHookState(handle)
    model.register_comm_hook(state, allreduce_hook)
    return state
