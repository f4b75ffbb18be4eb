/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause) */
/*
 * libxina: the worker side of xina in-network allreduce.
 *
 * A worker opens one handle per job membership, then calls
 * xina_allreduce() (any type and operator, "Types and operators" below),
 * or its older forms xina_allreduce_i32() and xina_allreduce_f32(), as
 * often as it likes; every call returns the element-wise aggregate of the
 * same call on all the job's workers, computed by the switch (the XDP fast
 * path or xina-swagg).
 *
 * Calls in flight.  xina_allreduce_i32_start() and xina_allreduce_f32_start()
 * queue a call and return a request at once; xina_req_test(),
 * xina_req_wait() and the handle's completion file descriptor
 * (xina_completion_fd()) say when it is done ("Non-blocking calls" below).
 *
 * Thread safety.  Different handles share nothing (the library's only
 * global state is the last join nonce it used, an atomic) and may be used
 * concurrently from different threads.  Within one handle:
 *
 *  - xina_allreduce_*_start(), xina_req_test(), xina_req_wait(),
 *    xina_req_error(), xina_req_free(), xina_completion_fd(),
 *    xina_get_stats() and xina_io_reason() may be called from any thread,
 *    concurrently: the handle's mutex serialises what needs it, and
 *    xina_req_test() takes no lock at all.
 *  - The blocking xina_allreduce_i32() and xina_allreduce_f32() may be
 *    called from any thread too: they hold the handle's mutex for the
 *    whole call (before the handle's first _start) or are a _start and a
 *    wait (after it), so they never run beside another call of the
 *    handle; a _start from another thread waits for a blocking call to
 *    return.
 *  - Calls are matched with the peers' in the order the handle receives
 *    them (the order of the _start calls and blocking calls, as they take
 *    the mutex).  Threads that start calls of one handle concurrently must
 *    order them among themselves, the same way on every worker.
 *  - xina_last_error() gives the last failure of a blocking call or of a
 *    _start (a failed xina_open() returns no handle: its message goes to
 *    opts.log); read it from the thread whose call failed
 *    before that thread calls again.  A request's own failure is in
 *    xina_req_error().
 *  - xina_close() must not run concurrently with any other call of the
 *    handle or of its requests (and not from the log callback).  It may be
 *    called with requests in flight (see xina_close() below).  Requests
 *    outlive their handle: xina_req_test/wait/error/free of them remain
 *    valid after xina_close(), from any thread.
 *  - The log callback runs on the thread that does the I/O: the caller's
 *    for a blocking call before the first _start, the handle's progress
 *    thread for everything after it.  It must not call into the handle.
 *  - A handle is not carried across fork(): the child gets neither its
 *    progress thread nor a usable socket state.
 *
 * Errors are negative errno values; xina_last_error() gives the details of
 * the last failure of a handle in words (xina_open(), which returns no
 * handle when it fails, passes them to opts.log at XINA_LOG_WARN).  After a
 * failure in the middle of an allreduce (-ETIMEDOUT, also when the switch
 * answered with ICMP port unreachable, which its message then says; -EIO;
 * -EPROTO, a peer or an aggregator that does not speak this libxina's
 * protocol) the switch may hold half a round of this worker: the handle
 * refuses further allreduces with -ENOTRECOVERABLE and the workers have to
 * be restarted (all of them reopen their handles: their joins open a new
 * epoch on the switch, nothing needs to be done there).  Argument errors
 * (-EINVAL; -E2BIG for a sparse call of 2^31 blocks or more) are detected
 * before anything is sent and leave the handle usable, but for a NaN or an
 * infinity in a float SUM or AVG past its first window of blocks (below),
 * found in the middle of the call.
 *
 * Joining.  xina_open() sets up the I/O, then joins the job: it sends a
 * XINA_T_JOIN (include/uapi/linux/xina.h, "Join handshake") and waits for
 * the switch's reply, resending the join on its retransmission timeout
 * (opts.rto_us, at least 50 ms, backed off up to opts.rto_max_us), for
 * up to opts.timeout_ms.  The reply gives the job's current epoch,
 * which every contribution of the handle carries; results of another
 * epoch are ignored.  The first worker of a new run of the job's workers
 * to join (a restart, all workers reopened) opens the next epoch, and the
 * switch drops the packets of the old one.  xina_open() fails with
 *
 *   -EKEYREJECTED  the switch says opts.key_file is not the job's secret
 *		    (bad key);
 *   -EMSGSIZE	    the worker's slots or elements per slot exceed the
 *		    job's (mismatch); the message gives both sides';
 *   -EBUSY	    a round of the job's current epoch completed within
 *		    XINA_JOIN_BUSY_MS every time it asked: another run of its
 *		    workers is still at work (busy; asked again every
 *		    XINA_JOIN_BUSY_MS / 5 ms until opts.timeout_ms);
 *   -ETIMEDOUT	    no answer at all within opts.timeout_ms: the switch has
 *		    no such job, the rank is not configured for this host's
 *		    address, the switch is unreachable, or it predates the
 *		    handshake (it answers no one it does not know; its
 *		    counters no_job and drop_member in "xinactl stats" tell
 *		    which).
 *
 * A refusal arrives within one round trip, so the first three fail at
 * once; the message names the reason in words and in parentheses: "(bad
 * key)", "(mismatch)", "(busy)".
 *
 * Host fallback (opts.fallback: every rank's ring address).  An -ETIMEDOUT
 * join then does not fail xina_open(): the handle runs every call on a
 * ring over TCP between the workers instead (the job is not on the
 * switch, e.g. "xinactl job add" found no room for it).  A call that gets
 * no result within its timeout completes on the ring too: the blocks the
 * switch answered keep their results, the others are reduced on the ring,
 * and the handle stays on the ring from then on.  The ring reduces the
 * words the switch would have, with the switch's arithmetic
 * (bpf/xina_lanes.h), so the results are bitwise those of the switch path;
 * a worker one call ahead (its last call completed on the switch before
 * it went away) serves that call's results to the peers still in it.
 * Connections and messages are authenticated with the job's secret
 * (Documentation/security.md, "The host fallback").  xina_get_stats():
 * fallback (1 once on the ring), fallback_calls, fallback_served,
 * fallback_tx_bytes and fallback_rx_bytes.  A worker that closed its handle can no longer serve
 * peers the switch left behind: they then fail with a message naming it.
 * The handle keeps a copy of each call's results for that (the call's
 * payload in words): a call whose copy does not fit in memory fails with
 * -ENOMEM before it sends anything, and the handle stays usable.
 *
 * Authentication: every contribution carries a tag keyed with this rank's
 * key, and a result is only placed if its tag verifies with the job's
 * result key (both derived from the secret in opts.key_file); one that
 * does not is dropped and counted (bad_tag), and the slot waits on.  See
 * Documentation/security.md.
 *
 * Float32 (xina_allreduce_f32) uses SwitchML's block floating point so that
 * the switch only ever adds integers:
 *
 *   1. For each block b of `elems` elements, every worker computes
 *      e = frexpf exponent of the block's largest |x| (so |x| < 2^e), or
 *      XINA_EXP_ZERO for a block of zeros, and the workers agree on
 *      E_b = max over workers of e: the first window's blocks (one per
 *      slot, opts.slots of them) in an int32 MAX allreduce of their own,
 *      every later block's in the aux word of the contribution its slot
 *      carries before it, whose MAX the switch returns with that
 *      result (SwitchML's piggybacked exponent).  A block is read for
 *      its exponent a window before it is packed, while it is still in
 *      cache, and the tensor is read once from memory each way.
 *   2. With L = ceil(log2(workers)) and s = 31 - L - E_b, every element is
 *      quantised to q = rint(x * 2^s) (ties to even), clamped to
 *      +-(2^(31-L) - 1), so that the int32 sum of all workers cannot
 *      overflow.  The int32 SUM Q is dequantised with the same exact power
 *      of two: r = (float)(Q * 2^-s), the product taken in double (exact).
 *      Each block is quantised when its packet is built and dequantised
 *      when its result arrives: no scratch copy of the tensor.
 *
 * The result is a function of the integer sum only, so all workers get
 * bitwise identical floats whatever the order in which contributions
 * reached the switch.  Rounding to nearest, ties to even, is the default
 * floating point rounding mode's, which libxina's loops use: a program
 * that changes it (fesetround()) must restore it around its calls.
 *
 * Error bound.  Let u = 2^-s = 2^(E_b - 31 + L) be the quantum of block b.
 * A float of the block is x = M * 2^(e - 24) with an integer |M| < 2^24
 * and e <= E_b, so x * 2^s = M * 2^(e - E_b + 7 - L) is exact in double
 * and below 2^(31-L) in magnitude: rint() errs by at most 1/2, and the
 * clamp only ever moves a value that rint() pushed up to 2^(31-L)
 * (possible for L = 8 only), so it stays within 1/2 as well.
 * Each worker is off by at most u/2, and Q * u is off the exact sum by at
 * most W * u / 2.  The one rounding of Q * u to float errs by at most
 * 2^-24 * |Q * u| for a normal result and 2^-150 for a subnormal one.
 * So, per element,
 *
 *   |r - sum_w x_w| <= W * 2^(E_b - 32 + L) + 2^-24 * |Q * u| + 2^-150
 *                  <= W * 2^(E_b - 32 + L) + 2^-23 * |r| + 2^-149
 *
 * (second line: |Q * u| <= |r| / (1 - 2^-24)).  xina_f32_bound() evaluates
 * it.  Compared with the block's largest magnitude 2^E_b the absolute error
 * is at most W * 2^(L - 32), i.e. 2^-26 relative for 8 workers: elements much
 * smaller than the block's largest lose relative precision, as in SwitchML.
 * A sum beyond the float range becomes an infinity, as it would in float
 * arithmetic.
 *
 * Types and operators (xina_allreduce()).  Every call is exact integer
 * arithmetic on the switch, so every result is bitwise the same on every
 * worker and in every run, whatever the order in which contributions
 * arrived (Documentation/protocol.md, "Types and operators"; the wire's
 * packing in include/uapi/linux/xina.h).  opts.elems counts 32-bit words
 * per packet, so a packet carries 4 * elems int8, 2 * elems int16,
 * elems int32, elems / 2 int64 (AVG: half that), 2 * elems float16 and
 * bfloat16 (float16 SUM and AVG with XINA_OPT_F_F16_WIDE: elems), elems
 * float32 (the table says how each travels).
 *
 *   type       SUM            MIN, MAX      AND, OR, XOR   AVG
 *   int8       int8 lanes     int8 lanes    int8 lanes     int16 lanes
 *   int16      int16 lanes    int16 lanes   int16 lanes    int32 lanes
 *   int32      int32 lanes    int32 lanes   int32 lanes    int64 lanes
 *   int64      int64 lanes    int64 lanes   int64 lanes    2 int64 lanes
 *   float16    BFP int16 (*)  ordered int16    -           BFP int16 (*)
 *   bfloat16   BFP int16      ordered int16    -           BFP int16
 *   float32    BFP int32      ordered int32    -           BFP int32
 *   (*) BFP int32 with XINA_OPT_F_F16_WIDE
 *
 * Integers.  Two's complement.  SUM wraps modulo 2^width, as unsigned C
 * arithmetic does (the switch adds lane by lane; no carry crosses a
 * lane).  MIN and MAX are signed.  AVG is floor(S / W), S the exact sum
 * of the workers' elements and W opts.workers, i.e. rounded towards minus
 * infinity (as a right shift, and Python's //, do): {1, 2, 2} gives 1,
 * {-1, -2, -2} gives -2.  It never wraps: the elements travel in lanes
 * twice as wide (an int64 as two int64 lanes, its signed high and unsigned
 * low 32 bits), where the sum of XINA_MAX_WORKERS of them fits, so AVG
 * takes two (int64: four) times the packets of SUM.
 *
 * Float MIN and MAX (exact).  The IEEE bits of an element, read as a
 * signed integer of the same width, with the bits other than the sign
 * flipped when the sign is set, are ordered as IEEE 754-2019 totalOrder:
 * -NaN < -inf < negative values < -0 < +0 < positive values < +inf < +NaN
 * (NaNs of one sign ordered by payload).  The switch takes the signed
 * MIN or MAX of those integers and the worker maps the result back: the
 * result is one of the inputs, bit for bit.  So MAX(-0, +0) = +0 and
 * MIN(-0, +0) = -0; a NaN with the sign bit clear wins every MAX and
 * loses every MIN, one with the sign bit set the opposite (note that x86
 * produces NaNs with the sign bit set, e.g. 0/0); infinities are ordinary
 * values.  float16 and bfloat16 travel as int16 lanes, float32 as int32.
 *
 * Float SUM (block floating point).  float32 as above (xina_allreduce_f32
 * is xina_allreduce(FLOAT32, SUM)).  float16 and bfloat16 the same way
 * with B-bit lanes: s = B - 1 - L - E_b, q = rint(x * 2^s) clamped to
 * +-(2^(B-1-L) - 1), r = Q * 2^-s rounded once (to nearest, ties to even)
 * to the type.  The lanes, chosen by measurement (Documentation/
 * protocol.md, "Types and operators"):
 *
 *  - bfloat16: INT16 lanes (B = 16), for density: a packet carries twice
 *    the elements, and 15 - L bits hold a bfloat16 significand (8 bits)
 *    of the block's largest element whole while W <= 128.  Measured on
 *    Gaussian data, more results are correctly rounded than with plain
 *    bfloat16 additions for every W from 3 to 256 (at W = 2 one addition
 *    is correctly rounded: 100% against 99.7%).
 *  - float16: INT16 lanes (B = 16) as well, for density: twice the
 *    elements of float32 per packet.  Its 11-bit significand and the
 *    spread of magnitudes within a block need more than 15 - L bits to be
 *    exact: results were measured somewhat less accurate than plain
 *    float16 additions (the arithmetic of a ring of float16 partial sums)
 *    for every W from 2 to 256 (W = 8: 42% correctly rounded, mean error
 *    2.7 ulp, against 48% and 1.6 ulp).  XINA_OPT_F_F16_WIDE puts them in
 *    INT32 lanes (B = 32) instead, for precision at half the density:
 *    then every result is the correctly rounded exact sum (100% of the
 *    elements, W = 2..256), because x * 2^s is exact for every element
 *    within 20 - L binades of the block's largest.
 *
 * With u = 2^(E_b - B + 1 + L), p = 11, qmin = -24 (float16) or p = 8,
 * qmin = -133 (bfloat16; 2^qmin is the quantum of the subnormals), per
 * element
 *
 *   INT16 lanes:  |r - sum_w x_w| <= W * u     + 2^(1-p) * |r| + 2^qmin
 *   INT32 lanes:  |r - sum_w x_w| <= W * u / 2 + 2^(1-p) * |r| + 2^qmin
 *
 * (the INT16 quantisation is not exact before rounding, and its clamp can
 * move an element by up to u, hence W * u rather than W * u / 2; for
 * float16 in INT32 lanes rint() errs by at most u / 2 and the clamp never
 * moves a value).  A sum beyond the type's range is an infinity.
 *
 * Float AVG: the same sum, then r = (Q * 2^-s) / W in double, rounded
 * once to the type: |r - mean| <= u / 2 + 2^-23 |r| + 2^-149 (float32),
 * u + 2^(1-p) |r| + 2^qmin (INT16 lanes: float16, bfloat16), u / 2 +
 * 2^(1-p) |r| + 2^qmin (float16 with XINA_OPT_F_F16_WIDE).
 *
 * NaN and infinities: MIN and MAX take them (above); SUM and AVG refuse
 * them (-EINVAL, naming the first such element), as xina_allreduce_f32()
 * always did: block floating point has no representation for them, and a
 * NaN or infinity in one worker's gradient is better reported than spread
 * to all.  In the first window of blocks (opts.slots blocks of
 * opts.elems 32-bit words' worth of elements) it is found before anything
 * is sent, and the handle stays usable; further on it is found when its
 * block's exponent is read, a window before that block would be sent,
 * when blocks before it may be in flight: the call fails, -EINVAL, and
 * the handle is unusable, as after any failure in the middle of an
 * allreduce (its peers time out, as they would have on a refused call).
 *
 * Refused with -EINVAL before anything is sent: AND, OR, XOR of a float
 * type; an unknown type or op; a type and op whose element does not fit
 * one packet (int64 needs opts.elems >= 2, int32 AVG >= 2, int64 AVG >= 4);
 * more elements than bytes an address space holds; an op that carries
 * bits beyond enum xina_op.
 */
#ifndef LIBXINA_H
#define LIBXINA_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <linux/xina.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The shared library is built with hidden visibility: only this is API. */
#define LIBXINA_API	__attribute__((visibility("default")))

/*
 * Block exponent of an all-zero block: below every frexpf exponent of a
 * nonzero float (-148 for 2^-149 .. 128), so that a block of subnormals
 * is never taken for zeros, and below them for the MAX that agrees on it.
 */
#define XINA_EXP_ZERO		(-150)
#define XINA_DEF_TIMEOUT_MS	3000
/*
 * Floor of the adaptive retransmission timeout (see xina_rto()).  5 ms,
 * measured on the veth rack (4 workers, MTU 9000, 2048 elements, 32
 * slots): at 2 ms, when nothing was lost, 1-3% of all sends were spurious
 * timer resends (a worker sharing its CPU waits several ms for its turn);
 * at 5 ms none, and 1% loss still keeps 0.9 of the lossless goodput
 * because fast retransmit, not the timer, recovers nearly every loss; at
 * 10 ms the calls' last blocks, which no later result can fast-retransmit,
 * wait longer (the tail probe, libxina.c's xina_probe(), now resends them
 * after two round trips without a result).
 */
#define XINA_DEF_RTO_US		5000
#define XINA_DEF_RTO_MAX_US	200000
/* Requests in flight per handle (opts.max_requests): default, limit. */
#define XINA_DEF_MAX_REQUESTS	64
#define XINA_MAX_REQUESTS	65536

enum xina_opt_flags {
	XINA_OPT_F_NO_GSO = 1 << 0,	/* one datagram per packet on send */
	XINA_OPT_F_NO_GRO = 1 << 1,	/* do not ask for UDP_GRO on receive */
	/* float16 SUM and AVG in INT32 lanes: correctly rounded, half as dense */
	XINA_OPT_F_F16_WIDE = 1 << 2,
	/* UDP sends with MSG_ZEROCOPY (see libxina_io.c, zc_sends) */
	XINA_OPT_F_ZEROCOPY = 1 << 3,
};

#define XINA_OPT_F_ALL	(XINA_OPT_F_NO_GSO | XINA_OPT_F_NO_GRO | \
			 XINA_OPT_F_F16_WIDE | XINA_OPT_F_ZEROCOPY)

/* Verbosity levels passed to the log callback. */
enum xina_log_level {
	XINA_LOG_WARN,		/* retransmissions, transient socket errors */
	XINA_LOG_DEBUG,		/* per-call summaries */
};

typedef void (*xina_log_fn)(void *ctx, enum xina_log_level level,
			    const char *msg);

/*
 * How a handle moves its packets (opts.io).
 *
 * XINA_IO_UDP: the connected UDP socket, sendmmsg() with UDP GSO trains and
 * recvmmsg() with UDP_GRO.  Works everywhere, without privileges.
 *
 * XINA_IO_XSK: AF_XDP.  libxina builds whole frames (Ethernet to the next
 * hop's MAC from the kernel's neighbour table, IPv4, UDP without checksum)
 * in a UMEM and hands them to the interface its route to the switch leaves
 * through; its own XDP program on that interface redirects this handle's
 * results, and nothing else, into the socket.  Zero-copy where the driver
 * supports it, copy mode otherwise.  Needs CAP_NET_ADMIN and CAP_NET_RAW,
 * an Ethernet interface without another XDP program, and a free queue 0:
 * one AF_XDP handle per interface, further handles on it use UDP.  The
 * UDP socket stays bound (it reserves the port, receives ICMP errors and
 * whatever results reach the stack) and carries the first packets until
 * the kernel has resolved the switch's MAC.  On a NIC with several
 * queues, results that RSS puts on another queue than 0 reach the stack
 * and are read from the socket: steer them to queue 0 (e.g. ethtool -N
 * DEV flow-type udp4 src-ip SWITCH src-port 9277 action 0).  Where AF_XDP cannot be set up,
 * the handle uses UDP and says why (xina_io_reason(), and the log
 * callback at XINA_LOG_WARN).
 *
 * XINA_IO_AUTO (0, the default): AF_XDP where the driver binds it in
 * zero-copy mode, UDP otherwise.  In copy mode (veth, drivers without
 * AF_XDP zero-copy) UDP sockets measured about 20% faster on the veth
 * rack: AF_XDP copies every result three times there, the socket once
 * (numbers and reasons at XSK_AUTO_COPY_MODE in libxina_xsk.c).
 * Zero-copy copies nothing; it is not measured here (no such NIC).
 */
enum xina_io {
	XINA_IO_AUTO,
	XINA_IO_UDP,
	XINA_IO_XSK,
};

/*
 * Options of xina_open().  Extensible in the libbpf way: @sz is
 * sizeof(struct xina_opts) of the caller's build; fields past @sz take
 * their defaults, and bytes past the end this library knows about must be
 * zero (a newer caller asking for a feature this library lacks fails with
 * -EOPNOTSUPP instead of being silently ignored).  Use XINA_OPTS().
 */
struct xina_opts {
	size_t		sz;
	const char	*switch_addr;	/* IPv4 dotted quad; required */
	uint16_t	switch_port;	/* 0: XINA_UDP_PORT */
	uint16_t	bind_port;	/* local UDP port, 0: any */
	const char	*bind_addr;	/* local IPv4 address, NULL: any */
	uint32_t	job;		/* job id, 1..2^32-1 */
	uint16_t	rank;		/* 0..workers-1 */
	uint16_t	workers;	/* 1..XINA_MAX_WORKERS */
	/*
	 * Key file of the job's secret (required; see xina_keyfile.h and
	 * Documentation/security.md): one line of 32 hexadecimal digits,
	 * mode 0600.  Read once by xina_open(); the handle keeps only the
	 * keys derived from it.
	 */
	const char	*key_file;
	uint32_t	slots;		/* the job's slot pool = the window */
	uint16_t	elems;		/* elements per packet, 1..XINA_MAX_ELEMS */
	uint16_t	flags;		/* enum xina_opt_flags */
	uint32_t	timeout_ms;	/* give up without progress, and the
					 * join in xina_open(); 0: default */
	uint32_t	rto_us;		/* first retransmission timeout; 0: default */
	uint32_t	rto_max_us;	/* backoff cap; 0: default */
	xina_log_fn	log;		/* optional */
	void		*log_ctx;
	enum xina_log_level log_level;	/* highest level passed to @log */
	/*
	 * Give up a call none of whose blocks completed after this long.
	 * Until its first result a call also waits for peers still busy
	 * with what the application does between calls (a straggler is no
	 * failure).  0: timeout_ms plus twice the time this worker itself
	 * spent since its previous call returned (or since xina_open()):
	 * data-parallel peers do the same work in between, so that much
	 * skew is expected, and a dead peer is still found in bounded time.
	 */
	uint32_t	join_timeout_ms;
	enum xina_io	io;		/* packet I/O; 0: XINA_IO_AUTO */
	/*
	 * Requests started and not yet completed, at most (queued and the
	 * one running); a _start beyond it fails with -EAGAIN.  0:
	 * XINA_DEF_MAX_REQUESTS; at most XINA_MAX_REQUESTS.
	 */
	uint32_t	max_requests;
	/*
	 * The host fallback: every rank's ring address, "IPV4:PORT" in rank
	 * order, comma-separated (this worker listens on its own), or NULL
	 * for none.  With it, a job the switch does not answer at
	 * xina_open() (not on the switch: no room for it, or no switch),
	 * and a call the switch stops answering, complete on a ring over
	 * TCP between the workers, with the same results (it reduces the
	 * same words with the switch's arithmetic), authenticated with the
	 * job's secret; once on the ring a handle stays there.  Every
	 * worker must give the same list.  Costs two copies of a call's
	 * payload per handle (the results of the current and of the last
	 * call, for peers the switch left behind).  Read by xina_open()
	 * only.  See "Host fallback" above and Documentation/protocol.md.
	 */
	const char	*fallback;
	/*
	 * This run of the job: a number every worker of the run passes, and
	 * the next run another (a launcher's job or restart id, or one rank
	 * 0 draws and broadcasts).  The switch takes a join naming another
	 * run than its current epoch's for a new run of the workers, so a
	 * rank that never joined a run that died cannot complete that run's
	 * open rounds with its data (include/uapi/linux/xina.h, "Epochs").
	 * 0: none; such a join is taken into any epoch, and only a rank that
	 * joined the epoch before starts a new one.
	 */
	uint32_t	run;
	size_t		:0;
};

/*
 * Declare @name, a struct xina_opts with every byte zero (padding too: an
 * older libxina checks that the bytes past its own struct are zero), @sz
 * set and then the fields given, as libbpf's LIBBPF_OPTS() does:
 *
 *	XINA_OPTS(opts, .switch_addr = "10.0.0.254", .job = 1, ...);
 *
 * Inside a function (a GNU statement expression: gcc and clang, C and
 * C++).  In C++ the designators follow the order of the declaration
 * (standard from C++20; g++ and clang++ take them in earlier modes).
 */
#define XINA_INIT_(type, name, ...)					\
	struct type name = __extension__ ({				\
		memset(&name, 0, sizeof(struct type));			\
		(struct type) {						\
			.sz = sizeof(struct type),			\
			__VA_ARGS__					\
		};							\
	})
#ifdef __cplusplus
/* g++ 12 warns of the fields a designated initialiser leaves out. */
#define XINA_DECLARE_(type, name, ...)					\
	_Pragma("GCC diagnostic push")					\
	_Pragma("GCC diagnostic ignored \"-Wmissing-field-initializers\"") \
	XINA_INIT_(type, name, __VA_ARGS__);				\
	_Pragma("GCC diagnostic pop")					\
	static_assert(sizeof(name) == sizeof(struct type), #type)
#else
#define XINA_DECLARE_ XINA_INIT_
#endif

#define XINA_OPTS(name, ...) XINA_DECLARE_(xina_opts, name, __VA_ARGS__)

/*
 * Counters of a handle, read with xina_get_stats().  Extensible like
 * struct xina_opts: the caller sets @sz to sizeof(struct xina_worker_stats)
 * of its build (XINA_STATS() does), the library fills that much and no
 * more, and says in @sz how much it filled.
 */
struct xina_worker_stats {
	size_t		sz;
	uint64_t	calls;		/* allreduce calls completed */
	uint64_t	sent;		/* contributions sent, first copies */
	uint64_t	retrans;	/* contributions sent again */
	uint64_t	results;	/* results accepted */
	uint64_t	ignored;	/* results dropped: duplicate, stale, foreign */
	uint64_t	malformed;	/* datagrams that are no valid result */
	uint64_t	timeouts;	/* retransmission timer expiries */
	uint64_t	tx_syscalls;	/* sendmmsg calls */
	uint64_t	rx_syscalls;	/* recvmmsg calls that returned data;
					 * AF_XDP: and poll() calls */
	uint64_t	gso_sends;	/* datagrams sent as part of a GSO batch */
	uint64_t	gro_segs;	/* results that arrived coalesced by GRO */
	/* Appended for the AF_XDP path: */
	uint32_t	io;		/* in use: XINA_IO_UDP or XINA_IO_XSK */
	uint32_t	xsk_zerocopy;	/* 1: the AF_XDP socket is zero-copy */
	uint64_t	xsk_tx_frames;	/* frames sent through the AF_XDP ring */
	uint64_t	xsk_rx_frames;	/* frames received through it */
	uint64_t	xsk_kicks;	/* sendto() calls that woke its transmit */
	uint64_t	xsk_fill_empty;	/* frames the kernel found no fill ring entry for */
	uint64_t	xsk_rx_dropped;	/* frames the kernel dropped: rx ring full, too large */
	/* Appended with packet authentication: */
	uint64_t	bad_tag;	/* results for a waiting slot whose tag
					 * did not verify: forged or modified,
					 * dropped (the slot keeps waiting);
					 * and join replies that did not */
	/* Appended with the join handshake: */
	uint32_t	epoch;		/* the epoch the switch granted */
	uint32_t	join_busy;	/* BUSY replies waited out by the open */
	uint64_t	joins;		/* joins sent, resends included */
	/* Appended with the host fallback (opts.fallback): */
	uint32_t	fallback;	/* 1: calls run on the host ring */
	uint32_t	fallback_served;	/* calls served to peers
						 * the switch left one behind */
	uint64_t	fallback_calls;	/* calls (or their rest) run on it */
	uint64_t	fallback_tx_bytes;	/* sent on the ring, framing included */
	uint64_t	fallback_rx_bytes;
	/* Appended with block-sparse calls: */
	uint64_t	sparse_blocks;	/* blocks that travelled */
	uint64_t	sparse_skipped;	/* blocks of zeros that did not */
	/* Appended with the tail loss probe: */
	uint64_t	probes;		/* resends of a call's last blocks after
					 * two round trips without a result
					 * (counted in retrans too) */
	/* Appended with zero blocks (XINA_F_ZERO): */
	uint64_t	zero_sent;	/* blocks of zero words sent as their
					 * header alone (counted in sent) */
	/* Appended with the AVX-512 element loops: */
	uint32_t	vec;		/* XINA_VEC_*: the vector paths of the
					 * float element loops this CPU runs
					 * (0: the portable loops alone) */
	/* Appended with zero-copy UDP sends: */
	uint64_t	zc_sends;	/* sendmmsg messages (a train, or a
					 * datagram) sent with MSG_ZEROCOPY:
					 * the kernel took the packets' pages
					 * instead of copying them */
	uint64_t	zc_copied;	/* of those, the kernel copied after
					 * all (a path without scatter-gather,
					 * a local socket): libxina then sends
					 * copies */
};

/* struct xina_worker_stats.vec: a float type's loops take the best it has. */
#define XINA_VEC_AVX2		(1u << 0)	/* float32, bfloat16 */
#define XINA_VEC_F16C		(1u << 1)	/* float16 (with AVX2) */
#define XINA_VEC_AVX512		(1u << 2)	/* all three: AVX-512 F and BW */
#define XINA_VEC_AVX512_BF16	(1u << 3)	/* bfloat16's unpacking */
#define XINA_VEC_AVX512_FP16	(1u << 4)	/* float16's packing */

#define XINA_STATS(name) XINA_DECLARE_(xina_worker_stats, name, )

struct xina;

LIBXINA_API int xina_open(const struct xina_opts *opts, struct xina **out);

/*
 * Close the handle.  Requests still queued or running complete with
 * -ECANCELED ("handle closed ..." in xina_req_error()): a running one
 * stops at once (its buffer is then part input, part result, and the
 * peers' call times out, as if this worker died); the caller still frees
 * each request with xina_req_free(), before or after xina_close().
 */
LIBXINA_API void xina_close(struct xina *x);

/*
 * In place: @buf holds this worker's @n elements and receives the result.
 * Results are written block by block as they arrive: after a failure the
 * contents of @buf are unspecified (part input, part result).
 */
LIBXINA_API int xina_allreduce_i32(struct xina *x, int32_t *buf, size_t n,
				   enum xina_op op);
LIBXINA_API int xina_allreduce_f32(struct xina *x, float *buf, size_t n);

/*
 * Element types of xina_allreduce().  The integer types travel as
 * themselves (16 and 8-bit ones packed two and four to a 32-bit word, so a
 * packet carries two and four times the elements of int32); the float
 * types never travel as floats (see "Types and operators" above).
 */
enum xina_type {
	XINA_TYPE_INT8 = 1,
	XINA_TYPE_INT16 = 2,
	XINA_TYPE_INT32 = 3,
	XINA_TYPE_INT64 = 4,
	XINA_TYPE_FLOAT16 = 5,	/* IEEE 754 binary16, as uint16_t bits */
	XINA_TYPE_BFLOAT16 = 6,	/* bfloat16, as uint16_t bits */
	XINA_TYPE_FLOAT32 = 7,
	__XINA_TYPE_MAX,
};

/*
 * In place, @n elements of @type at @buf, by @op (enum xina_op: SUM, MIN,
 * MAX, AVG for every type; AND, OR, XOR for the integer types), as
 * "Types and operators" above says.  The typed calls above are
 * xina_allreduce() with INT32 (any op) and FLOAT32 (SUM).  Log lines and
 * messages name the type and the op.
 */
LIBXINA_API int xina_allreduce(struct xina *x, void *buf, size_t n,
			       enum xina_type type, enum xina_op op);
/*
 * Block-sparse: as xina_allreduce(), but only the blocks (the elements of
 * one packet) that hold a non-zero on some worker travel.  The workers
 * first agree on the union of their non-zero blocks in one call through
 * the switch, then reduce the union's blocks where they are in @buf (no
 * copy of them; four bytes of memory per block of the union): results
 * bitwise those of xina_allreduce().  The agreement is a bitmap OR (one
 * bit a block; a float -0 counts as non-zero) for integers and float MIN
 * and MAX, and for float SUM and AVG the block exponents' call that a
 * dense call makes anyway (a block is in the union when its agreed
 * exponent says it holds a non-zero magnitude; a block of zeros
 * everywhere comes back +0, as the dense call gives it).  Worth it when
 * the union is a small part of the tensor; at full density it costs one
 * pass over the tensor, and for integers and float MIN and MAX the
 * bitmap's call.  Counted in the stats' sparse_blocks and
 * sparse_skipped.
 */
LIBXINA_API int xina_allreduce_sparse(struct xina *x, void *buf, size_t n,
				      enum xina_type type, enum xina_op op);
/*
 * As xina_allreduce_sparse(), with the caller's own map of the blocks it
 * holds non-zeros in, as a sparse gradient knows them (the rows an
 * embedding's lookups touched), so that the call does not read the rest
 * of the tensor to find them.  Block b is elements b * B .. b * B + B - 1
 * of @buf (the last block may be short), B = xina_sparse_block(x, @type,
 * @op); its bit is bit b % 8 of @map[b / 8] (least significant first:
 * numpy.packbits(..., bitorder="little")), set when the block may hold a
 * non-zero on this worker.  A set bit over a block of zeros costs that
 * block its packets and changes no result.  A block whose bit is clear is
 * never read: this worker adds zeros for it, and it is written only when
 * another worker's non-zeros put it in the union.  So when the clear bits
 * are over zero bits (+0 for floats) the results are bitwise those of
 * xina_allreduce_sparse() and of xina_allreduce(); the call does not check
 * (the check would be the pass over the tensor it saves), and what a clear
 * bit hides is left out of every worker's result.  Float NaN and
 * infinities are refused in the map's blocks only.  @map: (nblocks + 7) /
 * 8 bytes, nblocks = ceil(@n / B), read during the call (the _start
 * variant: until it completes); NULL fails with -EINVAL.
 */
LIBXINA_API int xina_allreduce_sparse_map(struct xina *x, void *buf,
					  size_t n, enum xina_type type,
					  enum xina_op op, const uint8_t *map);
/*
 * Elements of one block of the sparse calls of @type and @op (the
 * elements of one packet on this handle), or 0 when the handle does not
 * take that type and op.
 */
LIBXINA_API size_t xina_sparse_block(const struct xina *x,
				     enum xina_type type, enum xina_op op);
/* Bytes of one element of @type, 0 for an unknown type. */
LIBXINA_API size_t xina_type_size(enum xina_type type);
/* "int8" ... "float32", or NULL for an unknown type. */
LIBXINA_API const char *xina_type_name(enum xina_type type);

/*
 * Non-blocking calls.
 *
 * xina_allreduce_start(), xina_allreduce_i32_start() and
 * xina_allreduce_f32_start() check their arguments (-EINVAL and the message in xina_last_error(), nothing queued),
 * queue the call and return at once with *@req set.  The call then runs
 * on the handle's progress thread, which the first _start creates (a
 * handle used only with blocking calls never has one): it sends, receives,
 * retransmits and times out exactly as the blocking call does, whatever
 * the application's threads are doing meanwhile, so that a call completes
 * while the caller computes (a DDP hook's future completes during the
 * backward pass without anyone polling).  Progress never depends on
 * xina_req_test() or xina_req_wait() being called.
 *
 * Several calls in flight: up to opts.max_requests started and not yet
 * completed; one more fails with -EAGAIN (nothing queued; wait for one of
 * them and start again).  They run in the order they were started, one
 * after the other, each over the job's whole window of slots: the slots
 * are shared by the calls in time, not partitioned between them.  Every
 * worker must start the same calls in the same order (as with the
 * blocking calls, and as MPI's non-blocking collectives): block b of the
 * k-th call then meets block b of every peer's k-th call in the same slot
 * and round.  Partitioning the window would shrink each call's window and
 * need all workers to agree on the partition of every call; running them
 * back to back keeps the full window busy except for the last window's
 * worth of blocks of each call, whose slots idle until its last result
 * (the next call starts then).
 *
 * @buf belongs to the call until it completes: it is read and written by
 * the progress thread (float SUM and AVG: also the reads that find the
 * block exponents and refuse NaN and infinities, which fails the request
 * with -EINVAL, leaving the handle usable if found in the first window:
 * see "NaN and infinities" above).
 *
 * xina_req_test(): -EINPROGRESS while the call is queued or running, else
 * its result, 0 or the negative errno the blocking call would have
 * returned; lock-free.  xina_req_wait(): the same, after waiting up to
 * @timeout_ms (negative: until it completes; 0: does not wait); still
 * -EINPROGRESS when the wait timed out (the call goes on).  The call's own
 * timeouts (opts.timeout_ms, join_timeout_ms) bound every call, so an
 * unbounded wait ends too.  Errors are per request: xina_req_error() gives
 * the words of the request's own failure ("no error" for a success,
 * "in progress" before it completes), valid until xina_req_free().  A
 * failure in the middle of a call breaks the handle as for a blocking
 * call: the calls queued behind it fail with -ENOTRECOVERABLE.
 *
 * xina_req_free(): releases a request; one still in flight is waited for
 * first.  Every request is freed exactly once, whatever its result.
 *
 * xina_completion_fd(): an eventfd (EFD_NONBLOCK, EFD_CLOEXEC) owned by
 * the handle, created on first use and closed by xina_close().  Every
 * completed request adds one to it, so it is readable (poll, epoll,
 * select: POLLIN) once a request completed since it was last read: an
 * event loop reads it (8 bytes; the value is the number of completions)
 * and then tests the requests it waits for.  Read it before testing, so
 * that a completion after the test makes it readable again.  Returns the
 * descriptor or a negative errno.
 */
struct xina_req;

LIBXINA_API int xina_allreduce_i32_start(struct xina *x, int32_t *buf,
					 size_t n, enum xina_op op,
					 struct xina_req **req);
LIBXINA_API int xina_allreduce_f32_start(struct xina *x, float *buf,
					 size_t n, struct xina_req **req);
LIBXINA_API int xina_allreduce_start(struct xina *x, void *buf, size_t n,
				     enum xina_type type, enum xina_op op,
				     struct xina_req **req);
LIBXINA_API int xina_allreduce_sparse_start(struct xina *x, void *buf,
					    size_t n, enum xina_type type,
					    enum xina_op op,
					    struct xina_req **req);
LIBXINA_API int xina_allreduce_sparse_map_start(struct xina *x, void *buf,
						size_t n, enum xina_type type,
						enum xina_op op,
						const uint8_t *map,
						struct xina_req **req);
LIBXINA_API int xina_req_test(const struct xina_req *req);
LIBXINA_API int xina_req_wait(struct xina_req *req, int timeout_ms);
LIBXINA_API const char *xina_req_error(const struct xina_req *req);
LIBXINA_API void xina_req_free(struct xina_req *req);
LIBXINA_API int xina_completion_fd(struct xina *x);

/*
 * Counters.  With a progress thread they are those of the last completed
 * request (a snapshot taken when each request completes).
 */
LIBXINA_API int xina_get_stats(const struct xina *x,
			       struct xina_worker_stats *st);
LIBXINA_API const char *xina_last_error(const struct xina *x);

/*
 * Why the handle moves its packets the way it does, in words: for AF_XDP
 * the interface, queue and mode; for UDP why AF_XDP was not used, or ""
 * when opts.io asked for UDP.  Valid as long as the handle.
 */
LIBXINA_API const char *xina_io_reason(const struct xina *x);

/*
 * The documented per-element error bound of xina_allreduce_f32() for a
 * result @r in a block with agreed exponent @block_exp among @workers.
 */
LIBXINA_API double xina_f32_bound(float r, int block_exp, unsigned int workers);

/* ceil(log2(workers)): the headroom bits of the float quantisation. */
LIBXINA_API unsigned int xina_headroom_bits(unsigned int workers);

#ifdef __cplusplus
}
#endif

#endif /* LIBXINA_H */
