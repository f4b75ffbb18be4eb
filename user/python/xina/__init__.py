# SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause)
"""xina: in-network allreduce from Python, over libxina.so (ctypes).

    import numpy as np
    import xina

    with xina.open_from_env() as x:       # XINA_SWITCH, XINA_JOB, ...
        a = np.arange(1000, dtype=np.float32)
        x.allreduce(a)                     # in place: the sum over workers
        fut = x.allreduce_async(b, "max")  # concurrent.futures.Future
        fut.result()

A handle is one worker's membership of one job on the switch (see
"xinactl job add").  Every worker of the job makes the same calls in the
same order; each returns the element-wise SUM (int32, float32) or MAX
(int32) over all workers.  int32 sums are exact (wrapping); float32 goes
through libxina's block floating point, within the bound documented in
libxina.h (xina_f32_bound()), bitwise identical on every worker.

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
    XINA_IO          optional: auto, udp or xsk (see libxina.h)
"""

import concurrent.futures
import errno as _errno
import os
import threading
from typing import Any, Dict, Mapping, Optional, Union

from . import _capi

__all__ = ["Xina", "XinaError", "open_from_env", "f32_bound",
           "headroom_bits", "SUM", "MAX"]

SUM = "sum"
MAX = "max"
_OPS = {SUM: _capi.XINA_OP_SUM, MAX: _capi.XINA_OP_MAX}
_IOS = {"auto": _capi.XINA_IO_AUTO, "udp": _capi.XINA_IO_UDP,
        "xsk": _capi.XINA_IO_XSK}


class XinaError(OSError):
    """A failure reported by libxina: errno and libxina's message."""

    def __init__(self, err: int, message: str):
        super().__init__(err, message)


def _np():
    import numpy  # imported on first use: the module loads without it
    return numpy


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


class Xina:
    """One worker's handle of one xina job.

    The C library's allreduce is blocking: it has no non-blocking call yet.
    allreduce_async() therefore runs the blocking call on a worker thread
    of this handle (one thread; ctypes drops the GIL for the call) and
    returns a concurrent.futures.Future; the Python thread that asked goes
    on with its work meanwhile.  Calls of one handle, sync and async, run
    one at a time in the order they were made, which is the order every
    worker of the job must make them in.  An array handed to an async call
    must not be touched until its future is done.
    """

    def __init__(self, switch: str, job: int, rank: int, world_size: int,
                 slots: int, elems: int,
                 key_file: Optional[str] = None,
                 bind: Optional[str] = None,
                 timeout_ms: int = 0, join_timeout_ms: int = 0,
                 io: str = "auto"):
        self._lib = _capi.lib()
        self._h = _capi.ctypes.c_void_p()
        self._lock = threading.Lock()
        self._pool: Optional[concurrent.futures.ThreadPoolExecutor] = None
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
                             (1 << 32) - 1)):
            if not isinstance(v, int) or not 0 <= v <= hi:
                raise ValueError(f"{name} {v!r} out of range 0..{hi}")
        o.job = job
        o.rank = rank
        o.workers = world_size
        o.slots = slots
        o.elems = elems
        o.timeout_ms = timeout_ms
        o.join_timeout_ms = join_timeout_ms
        if io not in _IOS:
            raise ValueError(f"io '{io}' is none of {', '.join(_IOS)}")
        o.io = _IOS[io]
        _apply_key(o, key_file)
        o.log = self._log_cb
        o.log_level = _capi.XINA_LOG_WARN
        self._opts = o
        self.rank = rank
        self.world_size = world_size

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
        """Wait for calls in flight, then free the handle."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        with self._lock:
            if self._h.value:
                self._lib.xina_close(self._h)
                self._h = _capi.ctypes.c_void_p()

    def _check(self, buf, op: str):
        np = _np()
        if not isinstance(buf, np.ndarray):
            raise TypeError("expected a numpy.ndarray, got "
                            f"{type(buf).__name__}")
        if buf.dtype == np.dtype(np.int32):
            f32 = False
        elif buf.dtype == np.dtype(np.float32):
            f32 = True
        else:
            raise TypeError(f"dtype {buf.dtype} not supported: int32 or "
                            "float32 in native byte order")
        if not buf.flags.c_contiguous:
            raise ValueError("array is not contiguous: the allreduce works "
                             "in place on one block of memory "
                             "(numpy.ascontiguousarray() makes a copy)")
        if not buf.flags.writeable:
            raise ValueError("array is read-only: the allreduce writes its "
                             "result in place")
        if op not in _OPS:
            raise ValueError(f"op '{op}' is neither 'sum' nor 'max'")
        if f32 and op != SUM:
            raise ValueError("float32 is summed only: libxina's float path "
                             "has no max")
        return f32

    def _call(self, buf, f32: bool, op: str):
        with self._lock:
            if not self._h.value:
                raise XinaError(_errno.EBADF, "handle is closed")
            ptr = buf.ctypes.data_as(_capi.ctypes.c_void_p)
            if f32:
                rc = self._lib.xina_allreduce_f32(self._h, ptr, buf.size)
            else:
                rc = self._lib.xina_allreduce_i32(self._h, ptr, buf.size,
                                                  _OPS[op])
            if rc:
                raise XinaError(-rc, self.last_error())
        return buf

    def allreduce(self, buf, op: str = SUM):
        """Reduce @buf (int32 or float32 numpy array) in place over the
        job's workers and return it.  Waits for calls of this handle still
        in flight first (their order is the job's)."""
        f32 = self._check(buf, op)
        if self._pool is not None:
            return self._pool.submit(self._call, buf, f32, op).result()
        return self._call(buf, f32, op)

    def allreduce_async(self, buf, op: str = SUM) -> concurrent.futures.Future:
        """Start reducing @buf in place; the future's result is @buf.

        An honest future, not a non-blocking C call: the blocking
        xina_allreduce runs on this handle's worker thread.  Argument
        errors raise here; errors of libxina come out of future.result().
        """
        f32 = self._check(buf, op)
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix=f"xina-r{self.rank}")
        return self._pool.submit(self._call, buf, f32, op)

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
        with self._lock:
            rc = self._lib.xina_get_stats(self._h, _capi.ctypes.byref(st))
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
        "io": env.get("XINA_IO") or "auto",
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
