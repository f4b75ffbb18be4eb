# SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause)
"""xina: in-network allreduce from Python, over libxina.so (ctypes).

    import numpy as np
    import xina

    with xina.open_from_env() as x:       # XINA_SWITCH, XINA_JOB, ...
        a = np.arange(1000, dtype=np.float32)
        x.allreduce(a)                     # in place: the sum over workers
        fut = x.allreduce_async(b, "max")  # concurrent.futures.Future
        fut.result()
        x.allreduce(torch.ones(8, dtype=torch.bfloat16), "avg")

    async def step(x, grads):              # asyncio: awaitable calls
        await asyncio.gather(*(x.allreduce_aio(g) for g in grads))

A handle is one worker's membership of one job on the switch (see
"xinactl job add").  Every worker of the job makes the same calls in the
same order; each returns the element-wise reduction over all workers,
through libxina's xina_allreduce():

    buffers  numpy arrays and torch tensors (on the CPU, contiguous) of
             int8, int16, int32, int64, float16, bfloat16 (torch only:
             numpy has no such dtype) and float32, native byte order
    ops      "sum", "min", "max", "avg" (the sum divided by the workers)
             for every dtype; "band", "bor", "bxor" (bitwise and, or,
             exclusive or, as torch.distributed.ReduceOp names them) for
             the integer dtypes

Integer results are exact: two's complement, sums wrapping modulo 2^bits
as numpy and torch wrap, min and max signed.  Floats never travel as
floats: min and max are exact (an order-preserving map to integers),
sums and averages go through libxina's block floating point, within the
bounds documented in libxina.h (xina_f32_bound() for float32), bitwise
identical on every worker.  16-bit types travel two elements to a 32-bit
word (twice the elements per packet of int32), int8 four.

Errors of libxina raise XinaError (an OSError: .errno is the errno value,
the message is libxina's own, xina_last_error()).  After a failure in the
middle of an allreduce the handle refuses further calls (ENOTRECOVERABLE)
and the workers have to be restarted, as libxina.h says (nothing needs to
be done on the switch: their joins open a new epoch).  Opening a handle
joins the job; the switch's refusals raise XinaError with libxina's
message, which names the reason: EKEYREJECTED (bad key), EMSGSIZE
(mismatch: both sides' slots and elements), EBUSY (another run of the job
is still at work), ETIMEDOUT (no answer: no such job, rank not configured
for this address, switch unreachable).  Wrong arguments raise
TypeError or ValueError before anything is sent and leave the handle
usable.

The environment (open_from_env()):

    XINA_SWITCH      switch address, IPv4[:PORT] (port 9277 by default)
    XINA_JOB         job id
    XINA_RANK        this worker's rank, 0..XINA_WORLD_SIZE-1
    XINA_WORLD_SIZE  the job's workers
    XINA_KEY_FILE    the job's key file (0600, 32 hex digits; see _apply_key())
    XINA_SLOTS       the job's slots (its window)
    XINA_ELEMS       elements per packet, as the job was added with
    XINA_BIND        local IPv4[:PORT] the switch knows this rank by
    XINA_TIMEOUT_MS  optional: give up without progress after this long
    XINA_JOIN_TIMEOUT_MS optional: how long a call waits for peers that
                     have not reached it yet (libxina's join_timeout_ms;
                     xina.ddp's default is the process group's 30 min)
    XINA_IO          optional: auto, udp or xsk (see libxina.h)
    XINA_MAX_REQUESTS optional: calls in flight at most (default 64)
    XINA_FALLBACK    optional: every rank's ring address, IPV4:PORT,...
                     in rank order: the host fallback (libxina.h), calls
                     the switch does not take complete on a TCP ring
    XINA_F16_WIDE    optional: 1 puts float16 sums and averages in 32-bit
                     lanes (correctly rounded; half the elements a packet)
    XINA_RUN_ID      optional: this run of the job (libxina's opts.run),
                     the same number on every worker of the run and
                     another in the next run (a launcher's job or restart
                     id); 0 or unset: none.  The switch takes a join naming
                     another run than its epoch's for a new run, so that a
                     rank that never joined a run that died does not
                     complete its open rounds.  xina.ddp draws one on rank
                     0 and broadcasts it when it is not set.
"""

import asyncio
import concurrent.futures
import ctypes
import errno as _errno
import os
import select
import sys
import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from . import _capi

__all__ = ["Xina", "XinaError", "open_from_env", "f32_bound",
           "headroom_bits", "DTYPES", "OPS", "SUM", "MIN", "MAX", "AVG",
           "BAND", "BOR", "BXOR"]

SUM = "sum"
MIN = "min"
MAX = "max"
AVG = "avg"
BAND = "band"
BOR = "bor"
BXOR = "bxor"
_OPS = {SUM: _capi.XINA_OP_SUM, MIN: _capi.XINA_OP_MIN,
        MAX: _capi.XINA_OP_MAX, AVG: _capi.XINA_OP_AVG,
        BAND: _capi.XINA_OP_AND, BOR: _capi.XINA_OP_OR,
        BXOR: _capi.XINA_OP_XOR}
_BITWISE = (BAND, BOR, BXOR)
OPS = tuple(_OPS)
# dtype name (numpy's and torch's alike) -> (enum xina_type, bytes, integer)
_TYPES = {
    "int8": (_capi.XINA_TYPE_INT8, 1, True),
    "int16": (_capi.XINA_TYPE_INT16, 2, True),
    "int32": (_capi.XINA_TYPE_INT32, 4, True),
    "int64": (_capi.XINA_TYPE_INT64, 8, True),
    "float16": (_capi.XINA_TYPE_FLOAT16, 2, False),
    "bfloat16": (_capi.XINA_TYPE_BFLOAT16, 2, False),
    "float32": (_capi.XINA_TYPE_FLOAT32, 4, False),
}
DTYPES = tuple(_TYPES)
_IOS = {"auto": _capi.XINA_IO_AUTO, "udp": _capi.XINA_IO_UDP,
        "xsk": _capi.XINA_IO_XSK}


class XinaError(OSError):
    """A failure reported by libxina: errno and libxina's message."""

    def __init__(self, err: int, message: str):
        super().__init__(err, message)


def _np():
    import numpy  # imported on first use: the module loads without it
    return numpy


# A numpy.ndarray or a torch.Tensor (neither is imported to load the module).
Buffer = Any


def _buffer(buf) -> Tuple[int, int, str]:
    """(address, elements, dtype name) of an array or tensor the
    allreduce may work on in place, or TypeError/ValueError saying why
    not.  torch is looked for only if the program imported it."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(buf, torch.Tensor):
        if buf.device.type != "cpu":
            raise ValueError(f"tensor on {buf.device}: libxina reduces "
                             "host memory (tensor.cpu() makes a copy)")
        if not buf.is_contiguous():
            raise ValueError("tensor is not contiguous: the allreduce works "
                             "in place on one block of memory "
                             "(tensor.contiguous() makes a copy)")
        name = str(buf.dtype).replace("torch.", "")
        return buf.data_ptr(), buf.numel(), name
    np = _np()
    if not isinstance(buf, np.ndarray):
        raise TypeError("expected a numpy.ndarray or a torch.Tensor, got "
                        f"{type(buf).__name__}")
    if not buf.dtype.isnative:
        raise TypeError(f"dtype {buf.dtype.name} in non-native byte order "
                        f"({buf.dtype.str}) not supported "
                        "(numpy.ndarray.astype() converts)")
    if not buf.flags.c_contiguous:
        raise ValueError("array is not contiguous: the allreduce works "
                         "in place on one block of memory "
                         "(numpy.ascontiguousarray() makes a copy)")
    if not buf.flags.writeable:
        raise ValueError("array is read-only: the allreduce writes its "
                         "result in place")
    return buf.ctypes.data, buf.size, buf.dtype.name


def _call_args(buf, op: str) -> Tuple[int, int, int, int]:
    """(address, elements, enum xina_type, enum xina_op) of an allreduce
    of @buf by @op, or TypeError/ValueError naming what is wrong."""
    addr, n, name = _buffer(buf)
    if name not in _TYPES:
        raise TypeError(f"dtype {name} not supported: "
                        f"{', '.join(DTYPES)} (bfloat16: torch only)")
    xtype, _, integer = _TYPES[name]
    if not isinstance(op, str) or op not in _OPS:
        raise ValueError(f"op {op!r} is none of {', '.join(OPS)}")
    if op in _BITWISE and not integer:
        raise ValueError(f"op '{op}' is bitwise: for integer dtypes, "
                         f"not {name}")
    return addr, n, xtype, _OPS[op]


def _addr_port(what: str, s: str, default_port: int):
    addr, sep, port = s.partition(":")
    if not sep:
        return addr, default_port
    try:
        p = int(port, 10)
    except ValueError:
        p = -1
    if not 0 <= p <= 65535:
        raise ValueError(f"{what}: bad port '{port}' in '{s}' (0..65535)")
    return addr, p


def _apply_key(opts: _capi.XinaOpts, key_file: Optional[str]) -> None:
    """Put the job's key file into @opts: the one place that knows how.

    The key file holds the job's 128-bit secret (32 hexadecimal digits,
    mode 0600, see Documentation/security.md); libxina reads it in
    xina_open() and refuses one that others can read.  Keys are never
    passed as values: they would show in /proc/*/environ and cmdline.
    """
    if key_file is None:
        raise ValueError("no key file for the job: give key_file= or "
                         "set XINA_KEY_FILE")
    opts.key_file = os.fsencode(key_file)


_Resolve = Callable[[int, str], None]


class Xina:
    """One worker's handle of one xina job.

    Calls in flight use libxina's non-blocking API (libxina.h,
    "Non-blocking calls"): allreduce_async() and allreduce_aio() start
    the call in C (xina_allreduce_start) and return at once; libxina's
    progress thread of the handle moves the packets, whatever Python is
    doing, and the handle's completion file descriptor (an eventfd) says
    when a call is done.  No Python thread runs per call:

    - allreduce_aio(): an asyncio future, completed by the event loop
      itself, which watches the completion fd (loop.add_reader).
    - allreduce_async(): a concurrent.futures.Future, completed by one
      thread per handle that waits on the completion fd (started with the
      first such call; it only completes futures, callbacks run on it).

    Calls of one handle, sync and async, run one at a time in the order
    they were made, which is the order every worker of the job must make
    them in; at most max_requests (libxina's opts.max_requests, 64 by
    default) may be in flight, one more raises XinaError(EAGAIN).  An
    array handed to an async call must not be touched until its future is
    done (the handle keeps a reference to it until then).

    @run is this run of the job (libxina's opts.run, 0: none): the same
    number on every worker of the run, another in the next run, so that
    the switch takes the next run's joins for a new run even from a rank
    that never joined the run before (XINA_RUN_ID in open_from_env()).
    """

    def __init__(self, switch: str, job: int, rank: int, world_size: int,
                 slots: int, elems: int,
                 key_file: Optional[str] = None,
                 bind: Optional[str] = None,
                 timeout_ms: int = 0, join_timeout_ms: int = 0,
                 io: str = "auto", max_requests: int = 0,
                 fallback: Optional[str] = None, f16_wide: bool = False,
                 run: int = 0):
        self._lib = _capi.lib()
        self._h = _capi.ctypes.c_void_p()
        self._lock = threading.Lock()
        # Requests in flight: address -> (request, array, resolve).  The
        # array stays referenced until the call is done.
        self._pending: Dict[int, Tuple[ctypes.c_void_p, Any, _Resolve]] = {}
        self._plock = threading.Lock()
        self._cfd = -1
        self._waiter: Optional[threading.Thread] = None
        self._wake_r = self._wake_w = -1
        self._loops: List[asyncio.AbstractEventLoop] = []
        self._log_msgs = []
        # libxina reports why xina_open() failed through the log callback
        # only (there is no handle to ask): keep what it says.
        self._log_cb = _capi.LOG_FN(self._on_log)

        o = _capi.XinaOpts()
        o.sz = _capi.ctypes.sizeof(_capi.XinaOpts)
        addr, port = _addr_port("switch", switch, 0)
        o.switch_addr = addr.encode()
        o.switch_port = port
        if bind:
            baddr, bport = _addr_port("bind", bind, 0)
            o.bind_addr = baddr.encode() if baddr else None
            o.bind_port = bport
        for name, v, hi in (("job", job, (1 << 32) - 1),
                            ("rank", rank, 0xffff),
                            ("world_size", world_size, 0xffff),
                            ("slots", slots, (1 << 32) - 1),
                            ("elems", elems, 0xffff),
                            ("timeout_ms", timeout_ms, (1 << 32) - 1),
                            ("join_timeout_ms", join_timeout_ms,
                             (1 << 32) - 1),
                            ("max_requests", max_requests, 65536),
                            ("run", run, (1 << 32) - 1)):
            if not isinstance(v, int) or not 0 <= v <= hi:
                raise ValueError(f"{name} {v!r} out of range 0..{hi}")
        o.job = job
        o.rank = rank
        o.workers = world_size
        o.slots = slots
        o.elems = elems
        o.timeout_ms = timeout_ms
        o.join_timeout_ms = join_timeout_ms
        o.max_requests = max_requests
        o.run = run
        if f16_wide:
            o.flags |= _capi.XINA_OPT_F_F16_WIDE
        # libxina parses it in xina_open() and names what is wrong
        self._fallback = fallback.encode() if fallback else None
        o.fallback = self._fallback
        if io not in _IOS:
            raise ValueError(f"io '{io}' is none of {', '.join(_IOS)}")
        o.io = _IOS[io]
        _apply_key(o, key_file)
        o.log = self._log_cb
        o.log_level = _capi.XINA_LOG_WARN
        self._opts = o
        self.rank = rank
        self.world_size = world_size
        self.run = run

        rc = self._lib.xina_open(_capi.ctypes.byref(o),
                                 _capi.ctypes.byref(self._h))
        if rc:
            msg = self._log_msgs[-1] if self._log_msgs else os.strerror(-rc)
            raise XinaError(-rc, msg)

    def _on_log(self, ctx, level, msg):
        self._log_msgs.append(msg.decode(errors="replace"))
        del self._log_msgs[:-16]

    def __enter__(self) -> "Xina":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def close(self) -> None:
        """Wait for calls in flight (their futures complete), then free
        the handle."""
        with self._plock:
            reqs = [r for r, _, _ in self._pending.values()]
        for r in reqs:          # each bounded by libxina's own timeouts
            self._lib.xina_req_wait(r, -1)
        self._sweep()
        if self._waiter is not None:
            os.write(self._wake_w, b"x")
            if self._waiter is not threading.current_thread():
                self._waiter.join()
            self._waiter = None
            os.close(self._wake_r)
            os.close(self._wake_w)
            self._wake_r = self._wake_w = -1
        for loop in self._loops:
            try:
                loop.remove_reader(self._cfd)
            except (RuntimeError, ValueError):
                pass        # closed, or another thread's running loop
        self._loops = []
        with self._lock:
            if self._h.value:
                self._lib.xina_close(self._h)
                self._h = _capi.ctypes.c_void_p()
                self._cfd = -1

    @staticmethod
    def _check(buf, op: str) -> Tuple[int, int, int, int]:
        return _call_args(buf, op)

    def _handle(self) -> ctypes.c_void_p:
        if not self._h.value:
            raise XinaError(_errno.EBADF, "handle is closed")
        return self._h

    def sparse_block(self, buf: Buffer, op: str = SUM) -> int:
        """Elements of one block of the sparse calls of @buf's dtype by
        @op (xina_sparse_block()): block b is elements b * B .. b * B +
        B - 1 of the flattened tensor, the last one short."""
        _, _, xtype, xop = self._check(buf, op)
        return int(self._lib.xina_sparse_block(self._handle(), xtype, xop))

    def allreduce(self, buf: Buffer, op: str = SUM, sparse: bool = False,
                  blocks=None) -> Buffer:
        """Reduce @buf (a numpy array or torch tensor of DTYPES) in place
        by @op (one of OPS) over the job's workers and return it.  Runs
        after the calls of this handle still in flight (their order is the
        job's); ctypes drops the GIL for the call.  @sparse: only the
        blocks that hold a non-zero on some worker travel
        (xina_allreduce_sparse(): the same results; worth it when few
        blocks do).  @blocks (sparse without the pass over @buf): one
        truth value per block of sparse_block() elements, true where this
        worker's block may hold a non-zero; the others are not read and
        count as zeros (xina_allreduce_sparse_map())."""
        addr, n, xtype, xop = self._check(buf, op)
        h = self._handle()
        bs = (self._lib.xina_sparse_block(h, xtype, xop)
              if blocks is not None else None)
        if bs == 0:
            # no block fits a packet: libxina refuses the call and says why
            rc = self._lib.xina_allreduce_sparse_map(h, addr, n, xtype, xop,
                                                     None)
        elif blocks is not None:
            np = _np()
            nb = -(-n // bs)
            mask = np.asarray(blocks, dtype=bool).reshape(-1)
            if mask.size != nb:
                raise ValueError(f"blocks has {mask.size} entries: the {n} "
                                 f"elements are {nb} blocks of {bs}")
            packed = np.packbits(mask, bitorder="little")
            rc = self._lib.xina_allreduce_sparse_map(
                h, addr, n, xtype, xop, packed.ctypes.data)
        else:
            fn = (self._lib.xina_allreduce_sparse if sparse
                  else self._lib.xina_allreduce)
            rc = fn(h, addr, n, xtype, xop)
        if rc:
            raise XinaError(-rc, self.last_error())
        # The calls started before this one are done in libxina: their
        # futures are done too when this returns.
        if self._pending:
            self._sweep()
        return buf

    def _start(self, buf, op: str, resolve: _Resolve,
               block: bool = False) -> None:
        """xina_allreduce_start(), the request registered with
        @resolve, which the sweep calls (rc, message) once it is done.
        With @block, a full handle (EAGAIN: max_requests in flight) waits
        for its oldest call and tries again."""
        while True:
            try:
                return self._start1(buf, op, resolve)
            except XinaError as e:
                if not block or e.errno != _errno.EAGAIN:
                    raise
            with self._plock:
                oldest = next(iter(self._pending.values()), None)
            if oldest is not None:
                self._lib.xina_req_wait(oldest[0], -1)
            self._sweep()

    def _start1(self, buf, op: str, resolve: _Resolve) -> None:
        addr, n, xtype, xop = self._check(buf, op)
        h = self._handle()
        req = ctypes.c_void_p()
        # Started and registered as one step against _sweep(): a
        # completion is then never read off the fd before its request is
        # in _pending (the sweep reads the fd first, then looks).
        with self._plock:
            rc = self._lib.xina_allreduce_start(h, addr, n, xtype, xop,
                                                ctypes.byref(req))
            if rc:
                raise XinaError(-rc, self.last_error())
            self._pending[req.value] = (req, buf, resolve)

    def _sweep(self) -> None:
        """Read the completion fd, then resolve every request done."""
        if self._cfd >= 0:
            try:
                os.read(self._cfd, 8)
            except BlockingIOError:
                pass
        with self._plock:
            done = []
            for key, (req, buf, resolve) in list(self._pending.items()):
                rc = self._lib.xina_req_test(req)
                if rc == -_errno.EINPROGRESS:
                    continue
                msg = self._lib.xina_req_error(req).decode(errors="replace")
                self._lib.xina_req_free(req)
                del self._pending[key]
                done.append((resolve, rc, msg))
        for resolve, rc, msg in done:   # outside the lock: callbacks
            resolve(rc, msg)

    def completion_fd(self) -> int:
        """libxina's completion eventfd of the handle (xina_completion_fd)."""
        with self._lock:
            if self._cfd < 0:
                fd = self._lib.xina_completion_fd(self._handle())
                if fd < 0:
                    raise XinaError(-fd, self.last_error())
                self._cfd = fd
            return self._cfd

    def _wait_loop(self) -> None:
        """The handle's one waiter thread: completes concurrent futures."""
        p = select.poll()
        p.register(self._cfd, select.POLLIN)
        p.register(self._wake_r, select.POLLIN)
        while True:
            ev = dict(p.poll())
            if self._wake_r in ev:
                return
            self._sweep()

    def allreduce_async(self, buf: Buffer,
                        op: str = SUM) -> concurrent.futures.Future:
        """Start reducing @buf in place; the future's result is @buf.

        As allreduce() for the dtypes and ops.  The call runs in libxina
        (xina_allreduce_start); the future is
        completed by the handle's waiter thread when the completion fd
        says so.  Argument errors raise here; errors of libxina (the
        request's own, xina_req_error()) come out of future.result().
        With max_requests calls in flight, waits for the oldest to
        complete first (back-pressure, e.g. on DDP's backward pass).
        """
        fut: concurrent.futures.Future = concurrent.futures.Future()
        fut.set_running_or_notify_cancel()

        def resolve(rc: int, msg: str) -> None:
            if rc:
                fut.set_exception(XinaError(-rc, msg))
            else:
                fut.set_result(buf)

        self.completion_fd()
        if self._waiter is None:
            with self._lock:
                if self._waiter is None:
                    self._wake_r, self._wake_w = os.pipe()
                    self._waiter = threading.Thread(
                        target=self._wait_loop, daemon=True,
                        name=f"xina-r{self.rank}-wait")
                    self._waiter.start()
        self._start(buf, op, resolve, block=True)
        return fut

    def allreduce_aio(self, buf: Buffer, op: str = SUM) -> "asyncio.Future":
        """Start reducing @buf in place; await the result (@buf).  As
        allreduce() for the dtypes and ops.

        For asyncio: call it from a coroutine of the running loop.  The
        loop watches the handle's completion fd (loop.add_reader) and
        completes the future itself; no thread of Python's is involved.
        With max_requests calls in flight it raises XinaError(EAGAIN)
        rather than block the loop: await one of them first.
        """
        loop = asyncio.get_running_loop()
        fut = loop.create_future()

        def set_(rc: int, msg: str) -> None:
            if fut.cancelled():
                return
            if rc:
                fut.set_exception(XinaError(-rc, msg))
            else:
                fut.set_result(buf)

        def resolve(rc: int, msg: str) -> None:
            # The sweep may run on the waiter thread of allreduce_async().
            if loop.is_closed():
                return
            loop.call_soon_threadsafe(set_, rc, msg)

        fd = self.completion_fd()
        if loop not in self._loops:
            loop.add_reader(fd, self._sweep)
            self._loops.append(loop)
        self._start(buf, op, resolve)
        return fut

    def in_flight(self) -> int:
        """Calls started and not yet seen completed by a sweep."""
        with self._plock:
            return len(self._pending)

    def last_error(self) -> str:
        """libxina's words for the handle's last failure."""
        return self._lib.xina_last_error(self._h).decode(errors="replace")

    def io_reason(self) -> str:
        """How the handle moves its packets and why (xina_io_reason())."""
        return self._lib.xina_io_reason(self._h).decode(errors="replace")

    def stats(self) -> Dict[str, int]:
        """The handle's counters (struct xina_worker_stats) as a dict."""
        st = _capi.XinaWorkerStats()
        st.sz = _capi.ctypes.sizeof(st)
        rc = self._lib.xina_get_stats(self._handle(), _capi.ctypes.byref(st))
        if rc:
            raise XinaError(-rc, "xina_get_stats failed")
        return {name: getattr(st, name) for name, _ in st._fields_
                if name != "sz"}


def f32_bound(r: float, block_exp: int, workers: int) -> float:
    """libxina's per-element error bound of a float32 result (libxina.h)."""
    return _capi.lib().xina_f32_bound(r, block_exp, workers)


def headroom_bits(workers: int) -> int:
    """ceil(log2(workers)), the headroom of the float quantisation."""
    return _capi.lib().xina_headroom_bits(workers)


def _env_int(env: Mapping[str, str], name: str) -> Optional[int]:
    v = env.get(name)
    if v is None or v == "":
        return None
    try:
        return int(v, 0)
    except ValueError:
        raise ValueError(f"{name}='{v}' is not a number") from None


def open_from_env(env: Optional[Mapping[str, str]] = None,
                  **override: Any) -> Xina:
    """A handle from the XINA_* environment (see the module's docstring);
    keyword arguments of Xina() given here take precedence."""
    env = os.environ if env is None else env
    args: Dict[str, Any] = {
        "switch": env.get("XINA_SWITCH"),
        "job": _env_int(env, "XINA_JOB"),
        "rank": _env_int(env, "XINA_RANK"),
        "world_size": _env_int(env, "XINA_WORLD_SIZE"),
        "slots": _env_int(env, "XINA_SLOTS"),
        "elems": _env_int(env, "XINA_ELEMS"),
        "key_file": env.get("XINA_KEY_FILE") or None,
        "bind": env.get("XINA_BIND") or None,
        "timeout_ms": _env_int(env, "XINA_TIMEOUT_MS") or 0,
        "join_timeout_ms": _env_int(env, "XINA_JOIN_TIMEOUT_MS") or 0,
        "io": env.get("XINA_IO") or "auto",
        "max_requests": _env_int(env, "XINA_MAX_REQUESTS") or 0,
        "fallback": env.get("XINA_FALLBACK") or None,
        "f16_wide": env.get("XINA_F16_WIDE", "0") not in ("", "0"),
        "run": _env_int(env, "XINA_RUN_ID") or 0,
    }
    args.update(override)
    names = {"switch": "XINA_SWITCH", "job": "XINA_JOB", "rank": "XINA_RANK",
             "world_size": "XINA_WORLD_SIZE", "slots": "XINA_SLOTS",
             "elems": "XINA_ELEMS"}
    missing = [v for k, v in names.items() if args.get(k) is None]
    if missing:
        raise ValueError("xina: not configured: " + ", ".join(missing) +
                         " not set")
    return Xina(**args)
