# SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause)
"""ctypes mirror of user/libxina.h: the structs, the constants, the calls.

Keep it in step with libxina.h.  selftests/xina_python.sh builds a small C
program from these field names (offsetof and sizeof) and constants and
compares its numbers with ctypes', so that a field added, moved or renamed
in the header, or an enum renumbered, fails a test instead of corrupting
the options or the calls silently.
"""

import ctypes
import ctypes.util
import os
from typing import Optional

# include/uapi/linux/xina.h
XINA_UDP_PORT = 9277
XINA_MAX_WORKERS = 256
XINA_MAX_ELEMS = 2048
XINA_OP_SUM = 1
XINA_OP_MAX = 2
XINA_OP_MIN = 3
XINA_OP_AND = 4
XINA_OP_OR = 5
XINA_OP_XOR = 6
XINA_OP_AVG = 16        # libxina only: SUM divided by the workers

# libxina.h
XINA_LOG_WARN = 0
XINA_LOG_DEBUG = 1
XINA_IO_AUTO = 0
XINA_IO_UDP = 1
XINA_IO_XSK = 2
XINA_DEF_MAX_REQUESTS = 64
XINA_TYPE_INT8 = 1
XINA_TYPE_INT16 = 2
XINA_TYPE_INT32 = 3
XINA_TYPE_INT64 = 4
XINA_TYPE_FLOAT16 = 5
XINA_TYPE_BFLOAT16 = 6
XINA_TYPE_FLOAT32 = 7
XINA_OPT_F_F16_WIDE = 1 << 2
XINA_OPT_F_ZEROCOPY = 1 << 3
XINA_VEC_AVX2 = 1 << 0
XINA_VEC_F16C = 1 << 1
XINA_VEC_AVX512 = 1 << 2
XINA_VEC_AVX512_BF16 = 1 << 3
XINA_VEC_AVX512_FP16 = 1 << 4

LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int,
                          ctypes.c_char_p)


class XinaOpts(ctypes.Structure):
    """struct xina_opts, field by field (natural alignment, as C lays it)."""

    _fields_ = [
        ("sz", ctypes.c_size_t),
        ("switch_addr", ctypes.c_char_p),
        ("switch_port", ctypes.c_uint16),
        ("bind_port", ctypes.c_uint16),
        ("bind_addr", ctypes.c_char_p),
        ("job", ctypes.c_uint32),
        ("rank", ctypes.c_uint16),
        ("workers", ctypes.c_uint16),
        ("key_file", ctypes.c_char_p),
        ("slots", ctypes.c_uint32),
        ("elems", ctypes.c_uint16),
        ("flags", ctypes.c_uint16),
        ("timeout_ms", ctypes.c_uint32),
        ("rto_us", ctypes.c_uint32),
        ("rto_max_us", ctypes.c_uint32),
        ("log", LOG_FN),
        ("log_ctx", ctypes.c_void_p),
        ("log_level", ctypes.c_int),
        ("join_timeout_ms", ctypes.c_uint32),
        ("io", ctypes.c_int),
        ("max_requests", ctypes.c_uint32),
        ("fallback", ctypes.c_char_p),
        ("run", ctypes.c_uint32),
        # size_t :0 in C: the struct ends aligned to size_t, as here
    ]


class XinaWorkerStats(ctypes.Structure):
    """struct xina_worker_stats."""

    _fields_ = [
        ("sz", ctypes.c_size_t),
        ("calls", ctypes.c_uint64),
        ("sent", ctypes.c_uint64),
        ("retrans", ctypes.c_uint64),
        ("results", ctypes.c_uint64),
        ("ignored", ctypes.c_uint64),
        ("malformed", ctypes.c_uint64),
        ("timeouts", ctypes.c_uint64),
        ("tx_syscalls", ctypes.c_uint64),
        ("rx_syscalls", ctypes.c_uint64),
        ("gso_sends", ctypes.c_uint64),
        ("gro_segs", ctypes.c_uint64),
        ("io", ctypes.c_uint32),
        ("xsk_zerocopy", ctypes.c_uint32),
        ("xsk_tx_frames", ctypes.c_uint64),
        ("xsk_rx_frames", ctypes.c_uint64),
        ("xsk_kicks", ctypes.c_uint64),
        ("xsk_fill_empty", ctypes.c_uint64),
        ("xsk_rx_dropped", ctypes.c_uint64),
        ("bad_tag", ctypes.c_uint64),
        ("epoch", ctypes.c_uint32),
        ("join_busy", ctypes.c_uint32),
        ("joins", ctypes.c_uint64),
        ("fallback", ctypes.c_uint32),
        ("fallback_served", ctypes.c_uint32),
        ("fallback_calls", ctypes.c_uint64),
        ("fallback_tx_bytes", ctypes.c_uint64),
        ("fallback_rx_bytes", ctypes.c_uint64),
        ("sparse_blocks", ctypes.c_uint64),
        ("sparse_skipped", ctypes.c_uint64),
        ("probes", ctypes.c_uint64),
        ("zero_sent", ctypes.c_uint64),
        ("vec", ctypes.c_uint32),
        ("zc_sends", ctypes.c_uint64),
        ("zc_copied", ctypes.c_uint64),
    ]


# The C structs and constants mirrored here, for the layout test.
MIRRORED = {"xina_opts": XinaOpts, "xina_worker_stats": XinaWorkerStats}
MIRRORED_CONSTS = [n for n in list(globals()) if n.startswith("XINA_")]

_lib: Optional[ctypes.CDLL] = None


def _candidates():
    """Where libxina.so.0 is looked for, in order.

    XINA_LIBXINA (a path) first; then the build tree this package sits in
    (user/python/xina -> build/, or $O); then the library directory of
    the prefix it is installed in (PREFIX/lib/python3.X/dist-packages/xina
    -> PREFIX/lib); then the dynamic linker's search.
    """
    env = os.environ.get("XINA_LIBXINA")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.normpath(os.path.join(here, "..", "..", ".."))
    out = os.environ.get("O", "build")
    yield os.path.join(out if os.path.isabs(out) else os.path.join(root, out),
                       "libxina.so.0")
    yield os.path.normpath(os.path.join(here, "..", "..", "..",
                                        "libxina.so.0"))
    yield "libxina.so.0"
    found = ctypes.util.find_library("xina")
    if found:
        yield found


def lib() -> ctypes.CDLL:
    """libxina, loaded once, its prototypes declared."""
    global _lib
    if _lib is not None:
        return _lib
    tried = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{path}: no such file")
            continue
        try:
            handle = ctypes.CDLL(path)
            break
        except OSError as e:
            tried.append(str(e))
    else:
        raise OSError("libxina.so.0 not found (set XINA_LIBXINA, build "
                      "with make, or make install): " + "; ".join(tried))

    if not hasattr(handle, "xina_allreduce"):
        raise OSError(f"{handle._name}: no xina_allreduce(): a libxina "
                      "older than this package (element types other than "
                      "int32 and float32); install the libxina of the same "
                      "release")
    p = ctypes.c_void_p
    handle.xina_open.argtypes = [ctypes.POINTER(XinaOpts), ctypes.POINTER(p)]
    handle.xina_open.restype = ctypes.c_int
    handle.xina_close.argtypes = [p]
    handle.xina_close.restype = None
    handle.xina_allreduce_i32.argtypes = [p, ctypes.c_void_p, ctypes.c_size_t,
                                          ctypes.c_int]
    handle.xina_allreduce_i32.restype = ctypes.c_int
    handle.xina_allreduce_f32.argtypes = [p, ctypes.c_void_p, ctypes.c_size_t]
    handle.xina_allreduce_f32.restype = ctypes.c_int
    handle.xina_allreduce.argtypes = [p, ctypes.c_void_p, ctypes.c_size_t,
                                      ctypes.c_int, ctypes.c_int]
    handle.xina_allreduce.restype = ctypes.c_int
    handle.xina_allreduce_sparse.argtypes = handle.xina_allreduce.argtypes
    handle.xina_allreduce_sparse.restype = ctypes.c_int
    handle.xina_allreduce_sparse_map.argtypes = (
        handle.xina_allreduce.argtypes + [ctypes.c_void_p])
    handle.xina_allreduce_sparse_map.restype = ctypes.c_int
    handle.xina_sparse_block.argtypes = [p, ctypes.c_int, ctypes.c_int]
    handle.xina_sparse_block.restype = ctypes.c_size_t
    handle.xina_type_size.argtypes = [ctypes.c_int]
    handle.xina_type_size.restype = ctypes.c_size_t
    handle.xina_type_name.argtypes = [ctypes.c_int]
    handle.xina_type_name.restype = ctypes.c_char_p
    handle.xina_get_stats.argtypes = [p, ctypes.POINTER(XinaWorkerStats)]
    handle.xina_get_stats.restype = ctypes.c_int
    handle.xina_last_error.argtypes = [p]
    handle.xina_last_error.restype = ctypes.c_char_p
    handle.xina_io_reason.argtypes = [p]
    handle.xina_io_reason.restype = ctypes.c_char_p
    pp = ctypes.POINTER(p)
    handle.xina_allreduce_i32_start.argtypes = [p, ctypes.c_void_p,
                                                ctypes.c_size_t, ctypes.c_int,
                                                pp]
    handle.xina_allreduce_i32_start.restype = ctypes.c_int
    handle.xina_allreduce_f32_start.argtypes = [p, ctypes.c_void_p,
                                                ctypes.c_size_t, pp]
    handle.xina_allreduce_f32_start.restype = ctypes.c_int
    handle.xina_allreduce_start.argtypes = [p, ctypes.c_void_p,
                                            ctypes.c_size_t, ctypes.c_int,
                                            ctypes.c_int, pp]
    handle.xina_allreduce_start.restype = ctypes.c_int
    handle.xina_req_test.argtypes = [p]
    handle.xina_req_test.restype = ctypes.c_int
    handle.xina_req_wait.argtypes = [p, ctypes.c_int]
    handle.xina_req_wait.restype = ctypes.c_int
    handle.xina_req_error.argtypes = [p]
    handle.xina_req_error.restype = ctypes.c_char_p
    handle.xina_req_free.argtypes = [p]
    handle.xina_req_free.restype = None
    handle.xina_completion_fd.argtypes = [p]
    handle.xina_completion_fd.restype = ctypes.c_int
    handle.xina_f32_bound.argtypes = [ctypes.c_float, ctypes.c_int,
                                      ctypes.c_uint]
    handle.xina_f32_bound.restype = ctypes.c_double
    handle.xina_headroom_bits.argtypes = [ctypes.c_uint]
    handle.xina_headroom_bits.restype = ctypes.c_uint
    _lib = handle
    return handle
