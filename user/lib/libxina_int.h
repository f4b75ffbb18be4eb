/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause) */
/* libxina internals: the handle, shared by libxina*.c only. */
#ifndef LIBXINA_INT_H
#define LIBXINA_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "libxina.h"
#include "xina_rtt.h"

#define XINA_BATCH	64	/* datagrams per sendmmsg/recvmmsg */
#define XINA_GSO_MAX	64	/* kernel limit of segments per GSO send */
#define XINA_GRO_BUF	65536	/* one coalesced receive */
#define XINA_GRO_BATCH	8	/* coalesced receives per recvmmsg */

/* One slot of the window: at most one packet of ours is outstanding. */
struct xina_slot {
	uint64_t	deadline_ns;	/* resend when the clock passes this */
	uint32_t	round;		/* round of the outstanding packet */
	uint32_t	rto_us;		/* current (backed off) timeout */
	uint64_t	block;		/* block index the packet carries */
	uint64_t	sent_ns;	/* first transmission, for RTT samples */
	bool		busy;
	bool		resent;		/* no RTT sample from it (Karn) */
	bool		queued;		/* in the transmit queue */
	bool		fast;		/* fast-retransmitted since last sent */
	bool		zero;		/* sent XINA_F_ZERO (its words zero) */
	uint64_t	nh;		/* NH of the packet's payload: a resend
					 * (other flags) is tagged again */
	int32_t		lexp;		/* a piggybacked call: this worker's
					 * exponent of the slot's next block,
					 * sent in aux (the MAX that comes
					 * back cannot be below it) */
	uint32_t	zc_id;		/* the last MSG_ZEROCOPY send of the
					 * packet, if zc_sent: the kernel
					 * may read its pages until that id
					 * is done (xina_zc_held()) */
	bool		zc_sent;
};

/* Zero-copy send ids done out of order (libxina_io.c, xina_zc_done()). */
#define XINA_ZC_EARLY	16
struct xina_zc_range {
	uint32_t	lo, hi;
};

struct xina;

/* Called for every datagram received (one GRO segment at a time). */
typedef void (*xina_rx_fn)(struct xina *x, const uint8_t *p, size_t len,
			   void *ctx);

/*
 * Packet I/O of a handle: the UDP socket (libxina_io.c) or AF_XDP
 * (libxina_xsk.c).  open() runs once the UDP socket is bound and connected
 * and provides the slots' transmit buffers (x->tx, x->tx_stride); it fails
 * with the reason in x->io_reason and undoes what it did.  tx_flush() sends
 * what x->txq names and keeps the rest queued; rx_poll() waits up to
 * @timeout_ms and hands every result to @fn.
 */
struct xina_io_ops {
	enum xina_io	io;
	int		(*open)(struct xina *x);
	int		(*tx_flush)(struct xina *x);
	int		(*rx_poll)(struct xina *x, int timeout_ms, xina_rx_fn fn,
				   void *ctx);
	void		(*close)(struct xina *x);
	/* Optional: counters kept elsewhere (the kernel's), into @st. */
	void		(*stats)(const struct xina *x,
				 struct xina_worker_stats *st);
};

extern const struct xina_io_ops xina_io_udp;
extern const struct xina_io_ops xina_io_xsk;

struct xina_xsk;

/* A failure's message: a timeout's names its slots, causes and counters. */
#define XINA_ERR_LEN	1024

/*
 * One call started with xina_allreduce_*_start() (libxina_req.c).  @status
 * is -EINPROGRESS until the progress thread completes the call; it is
 * stored last, with release order, and everything else is then fixed, so
 * xina_req_test() reads it without a lock.  @x is NULL once xina_close()
 * detached the request (a request outlives its handle).
 */
struct xina_req {
	struct xina	*x;
	struct xina_req	*prev, *next;	/* x->reqs: not yet freed */
	struct xina_req	*qnext;		/* x->q_head: not yet running */
	void		*buf;
	size_t		n;
	enum xina_type	type;
	enum xina_op	op;
	const uint8_t	*map;		/* sparse: the caller's blocks, or NULL */
	int		status;
	char		err[XINA_ERR_LEN];
};

struct xina {
	int			fd;	/* the UDP socket, whatever the I/O */
	struct sockaddr_in	local;	/* its address and port once connected */
	struct sockaddr_in	sw;
	struct xina_opts	o;	/* validated copy, defaults filled in */
	size_t			pkt_sz;	/* header + elems * 4 */
	unsigned int		headroom;	/* ceil(log2(workers)) */
	bool			broken;	/* a failed allreduce left state behind */
	bool			gso;	/* UDP_SEGMENT works */
	bool			gro;	/* UDP_GRO enabled */
	bool			refused;	/* ICMP port unreachable seen */
	bool			zero_ok;	/* the switch takes XINA_F_ZERO */
	bool			zc;	/* send with MSG_ZEROCOPY (UDP I/O) */
	uint32_t		zc_next;	/* id of the next such send */
	uint32_t		zc_done;	/* every id below is done */
	unsigned int		zc_nr_early;	/* ranges in zc_early */
	struct xina_zc_range	zc_early[XINA_ZC_EARLY];	/* done, not yet
								 * reached */
	uint64_t		next_timer_ns;	/* earliest slot deadline */
	struct xina_rtt		rtt;		/* RFC 6298 estimator */
	uint32_t		backoff;	/* shift of the RTO after expiries */
	uint64_t		idle_since_ns;	/* last call returned (or open) */

	struct xina_slot	*slot;
	uint32_t		*next_round;	/* per slot, persists across calls */
	const struct xina_io_ops *io;
	struct xina_xsk		*xsk;	/* AF_XDP state, libxina_xsk.c */
	struct xina_fb		*fb;	/* host fallback, libxina_fallback.c */
	char			io_reason[256];
	uint8_t			*tx;	/* slot s at tx + s * tx_stride, kept for resends */
	size_t			tx_stride;
	uint32_t		*txq;	/* slots waiting to be sent */
	uint32_t		txq_len;
	uint8_t			*rx;	/* receive buffers */
	size_t			rx_buf_sz;
	unsigned int		rx_batch;

	__u64			kmine[2];	/* this rank's key (K_r) */
	__u64			kres[2];	/* results' key (K_res) */
	uint32_t		*nhk;	/* NH key, XINA_MAX_ELEMS words */

	uint32_t		epoch;	/* granted by the join, in every packet */
	char			key_path[256];	/* opts.key_file, for messages */

	uint32_t		*sp_map;	/* sparse: non-zero blocks */
	size_t			sp_map_len;	/* words */
	uint32_t		*sp_at;	/* sparse: the union's blocks */
	size_t			sp_at_len;
	int32_t			*exps;	/* float32: agreed exponent per block */
	size_t			exps_len;

	struct xina_worker_stats st;
	char			err[XINA_ERR_LEN];

	/*
	 * Requests (libxina_req.c).  @lock guards every field below and
	 * serialises the API calls that touch the engine's state; the
	 * engine itself (the fields above) belongs to whoever runs a call:
	 * a blocking caller holding @lock before the first _start, the
	 * progress thread afterwards.  @stop is also read by the engine
	 * without @lock (an atomic) and @wake_fd wakes its poll().
	 */
	pthread_mutex_t		lock;
	pthread_cond_t		work_cv;	/* queued, or stop */
	pthread_cond_t		done_cv;	/* a request completed */
	pthread_t		thread;
	bool			threaded;	/* the progress thread runs */
	bool			stop;		/* xina_close() asked it to end */
	int			wake_fd;	/* eventfd, -1 until threaded */
	int			cfd;		/* completion eventfd, -1 */
	struct xina_req		*reqs;		/* every request not freed */
	struct xina_req		*q_head, *q_tail;	/* waiting to run */
	struct xina_req		*running;
	uint32_t		inflight;	/* queued + running */
	struct xina_worker_stats st_snap;	/* at the last completion */
	char			cerr[XINA_ERR_LEN];	/* caller-side failure, threaded */
};

__attribute__((format(printf, 2, 3)))
int xina_fail(struct xina *x, const char *fmt, ...);
__attribute__((format(printf, 3, 4)))
void xina_log(struct xina *x, enum xina_log_level lvl, const char *fmt, ...);
uint64_t xina_now_ns(void);

/*
 * Make slot @s's transmit buffer the library's to write again: wait until
 * no zero-copy send still holds its pages (libxina_io.c).
 */
void xina_tx_own(struct xina *x, uint32_t s);

/* Tag slot @s's packet again (its header changed, not its payload). */
void xina_tx_tag(struct xina *x, uint32_t s);

/* The packet (struct xina_hdr first) of slot @s. */
static inline uint8_t *xina_tx_pkt(const struct xina *x, uint32_t s)
{
	return x->tx + (size_t)s * x->tx_stride;
}

/* libxina_io.c: the UDP socket, and the choice of the I/O. */
int xina_sock_open(struct xina *x);
int xina_io_open(struct xina *x);
void xina_io_close(struct xina *x);
/* For AF_XDP, which keeps reading the socket: drain it once. */
int xina_udp_drain(struct xina *x, xina_rx_fn fn, void *ctx);
/* Slots txq[from, from + cnt) went out: arm their timers. */
void xina_tx_done(struct xina *x, uint32_t from, uint32_t cnt);

/* Checks every allreduce starts with; negative errno, nothing sent. */
int xina_call_check(struct xina *x, const void *buf, size_t n);

/*
 * How the elements of one call travel (libxina_type.c): the caller's
 * (type, op) and what the switch sees, the wire's dtype and op.
 *
 *  XINA_K_INT	integers as themselves, any wire op
 *  XINA_K_WIDE	integer AVG: each element in a lane twice as wide (int8 in
 *		int16, int16 in int32, int32 in int64), summed without
 *		overflow, then divided
 *  XINA_K_WIDE64 int64 AVG: each element as two int64 lanes, its high half
 *		(signed) and its low half (unsigned), summed without
 *		overflow, then put together in 128 bits and divided
 *  XINA_K_ORD	float MIN/MAX: the IEEE bits mapped to a signed integer of
 *		the same width in totalOrder (an involution)
 *  XINA_K_BFP	float SUM/AVG: block floating point into INT32 (float32) or
 *		INT16 lanes (float16, bfloat16), with one agreed exponent per
 *		block
 */
enum xina_kind {
	XINA_K_INT,
	XINA_K_WIDE,
	XINA_K_WIDE64,
	XINA_K_ORD,
	XINA_K_BFP,
};

struct xina_codec {
	enum xina_type	type;		/* the caller's elements */
	enum xina_op	op;		/* the caller's operator */
	enum xina_kind	kind;
	uint8_t		dtype;		/* enum xina_dtype on the wire */
	uint8_t		wop;		/* enum xina_op on the wire */
	uint8_t		lane_bits;	/* wire lane width: 8, 16, 32 or 64 */
	uint8_t		lanes_per_elem;	/* wire lanes one element takes */
	uint32_t	per_pkt;	/* elements per packet */
};

/*
 * The codec of (@type, @op) for @x; -EINVAL with the reason in @err
 * (nothing is sent).  Checks the pair only, not a buffer.
 */
int xina_codec_init(const struct xina *x, struct xina_codec *k,
		    enum xina_type type, enum xina_op op, char *err,
		    size_t len);
/* -EINVAL, the reason in @err, if @n elements are more bytes than exist. */
int xina_codec_n(const struct xina_codec *k, size_t n, char *err,
		 size_t len);
/* Wire words of @cnt elements (the last one padded). */
size_t xina_codec_words(const struct xina_codec *k, size_t cnt);
/* Bytes of one element in the caller's buffer. */
size_t xina_codec_esz(const struct xina_codec *k);
/* @cnt elements at @src (element 0 of the block) into wire words. */
void xina_codec_pack(const struct xina *x, const struct xina_codec *k,
		     uint32_t *dst, const void *src, size_t cnt, int32_t exp);
/* The block's result words back into @cnt elements at @dst. */
void xina_codec_unpack(const struct xina *x, const struct xina_codec *k,
		       void *dst, const uint32_t *src, size_t cnt,
		       int32_t exp);
const char *xina_op_name(enum xina_op op);

/*
 * libxina.c: the windowed engine.  @buf holds @n elements of @k's type,
 * cut into blocks of k->per_pkt elements; each block is packed into its
 * packet just before it is sent and its result unpacked into @buf as it
 * arrives, so the tensor is touched once each way.  @exps: one agreed
 * exponent per block for XINA_K_BFP, else NULL.
 */
int xina_reduce_blocks(struct xina *x, void *buf, size_t n,
		       const struct xina_codec *k, const int32_t *exps);

/*
 * The same on blocks that are not one after another (the union of a
 * sparse call, in place): block b of the call, of the elements @n counts
 * as if they were, is block @at[b] of @buf, the tensor's blocks of
 * k->per_pkt elements; with XINA_AT_ZERO set, it is zeros that are not
 * read from @buf (a block the caller's map leaves out), and its result is
 * written there all the same.  Only the last block of the call may be
 * short, and only as the last block of @buf.
 */
#define XINA_AT_ZERO	(1u << 31)
int xina_reduce_at(struct xina *x, void *buf, size_t n,
		   const struct xina_codec *k, const int32_t *exps,
		   const uint32_t *at);

/*
 * A block floating point call whose exponents go with the data: @exps
 * holds the agreed exponent of each block of the first window (a block
 * per slot) and XINA_EXP_UNKNOWN for the others.  The contribution of
 * block b carries in aux this worker's exponent of block b + slots, the
 * next block of its slot; the switch's MAX of them, in the result of b,
 * is the agreed exponent of b + slots, filled into @exps.  On the host
 * fallback ring the blocks still unknown are agreed by an INT32 MAX over
 * the ring first.  Dense calls only (no @at).
 */
#define XINA_EXP_UNKNOWN	INT32_MIN
int xina_reduce_piggy(struct xina *x, void *buf, size_t n,
		      const struct xina_codec *k, int32_t *exps);

/*
 * libxina_fallback.c: the host fallback ring (opts.fallback; every
 * function a no-op, or false, without it).  xina_fb_init() parses the
 * addresses and derives the ring key while xina_open() holds the secret;
 * xina_fb_begin() and xina_fb_end() bracket every engine call (the call
 * index, the copy of its results that xina_fb_save() fills), and
 * xina_fb_prepare() makes that copy's room before an API call sends
 * anything;
 * xina_fb_run() runs a call, or the blocks of it the switch did not
 * answer (@done: one byte per block, NULL for none), on the ring; @piggy:
 * @exps as xina_reduce_piggy()'s, the unknown ones agreed on the ring
 * first.  xina_fb_end()'s @pexps: a piggybacked call's exponents, every
 * one known, kept with its results for a peer behind (NULL: none).
 */
struct xina_fb;
int xina_fb_init(struct xina *x, const uint8_t *secret);
void xina_fb_free(struct xina *x);
bool xina_fb_ring_only(const struct xina *x);
void xina_fb_give_up_switch(struct xina *x, const char *why);
int xina_fb_begin(struct xina *x, size_t n, const struct xina_codec *k);
int xina_fb_prepare(struct xina *x, size_t n, const struct xina_codec *k);
void xina_fb_save(struct xina *x, uint64_t block, const uint32_t *v,
		  size_t words);
void xina_fb_end(struct xina *x, const int32_t *pexps, size_t nblocks);
int xina_fb_run(struct xina *x, void *buf, size_t n,
		const struct xina_codec *k, int32_t *exps, bool piggy,
		const uint8_t *done);

/*
 * libxina_join.c: the join handshake, once the I/O is open; sets x->epoch
 * or fails with the reason in x->err.
 */
int xina_join(struct xina *x);

/* The call itself, on whatever thread runs it (libxina_type.c). */
int xina_run(struct xina *x, void *buf, size_t n, enum xina_type type,
	     enum xina_op op, const uint8_t *map);
/*
 * A bit of the op argument of xina_call(), xina_start() and xina_run():
 * the call is block-sparse (libxina_sparse.c); never an enum xina_op value.
 * Their @map is then the caller's map of its blocks (bit b of byte b / 8,
 * least significant first, set when block b may hold a non-zero), or NULL
 * to find them in the tensor; NULL for every dense call.
 */
#define XINA_RUN_SPARSE	0x100
/* With XINA_RUN_SPARSE: the caller gives its map (@map may not be NULL). */
#define XINA_RUN_MAP	0x200
#define XINA_RUN_BITS	(XINA_RUN_SPARSE | XINA_RUN_MAP)
/*
 * Set with the bits above by libxina's own entry points (xina_op_run()),
 * so that xina_codec_init() takes them off; a caller's op that carries any
 * of the three is none of enum xina_op, and refused as such.
 */
#define XINA_RUN_OWN	0x400
int xina_run_sparse(struct xina *x, void *buf, size_t n,
		    const struct xina_codec *k, const uint8_t *map);

/*
 * libxina_f32.c: block floating point of a float call: the exponents
 * (refusing NaN and infinities), their agreement, then the sum.
 * xina_bfp_exps() is the first two: the agreed exponents in x->exps, one
 * per block; @negz as xina_block_exps() (NULL: not wanted); @map, when
 * not NULL, the only blocks to read (as XINA_RUN_SPARSE's): the others are
 * taken as zeros.
 */
int xina_bfp_exps(struct xina *x, const void *buf, size_t n,
		  const struct xina_codec *k, uint32_t *negz,
		  const uint8_t *map);
/*
 * xina_block_exp(): the exponent of block @b of @buf alone (a block of
 * @k->per_pkt elements of @n), or XINA_EXP_ZERO; refuses NaN and
 * infinities.  xina_exp_ok(): an exponent a peer could have sent;
 * xina_check_exps() fails on the first that is not.
 */
int xina_block_exp(struct xina *x, const struct xina_codec *k,
		   const void *buf, size_t n, uint64_t b, int32_t *e);
bool xina_exp_ok(int32_t e);
int xina_check_exps(struct xina *x, const int32_t *exps, uint64_t nblocks);
int xina_run_bfp(struct xina *x, void *buf, size_t n,
		 const struct xina_codec *k);

/*
 * libxina_req.c: requests and the progress thread.  xina_req_init() at
 * open (before anything can fail past it: xina_close() undoes it),
 * xina_req_shutdown() first thing in xina_close().  xina_call() is a
 * blocking call: inline under the lock, or a request and its wait.
 */
void xina_req_init(struct xina *x);
void xina_req_shutdown(struct xina *x);
int xina_call(struct xina *x, void *buf, size_t n, enum xina_type type,
	      enum xina_op op, const uint8_t *map);
int xina_start(struct xina *x, void *buf, size_t n, enum xina_type type,
	       enum xina_op op, const uint8_t *map, struct xina_req **out);
static inline bool xina_stopping(struct xina *x)
{
	return __atomic_load_n(&x->stop, __ATOMIC_RELAXED);
}

/*
 * libxina_f32.c: make *@p (of *@len elements of @elsz bytes) hold at least
 * @want: 0, or -ENOMEM with *@p and *@len unchanged.
 */
int xina_grow(void **p, size_t *len, size_t want, size_t elsz);

/* Elements of block @b of @n cut into blocks of @per: the last is short. */
static inline size_t xina_blk_elems(size_t n, size_t per, uint64_t b)
{
	uint64_t off = b * per;

	return n - off < per ? n - off : per;
}

/* libxina_pack.c: one block to and from the wire. */
extern int xina_f16c;	/* float16 by F16C: -1 ask the CPU, 0 no, 1 yes */
extern int xina_avx2;	/* float32 quantisation by AVX2: the same */
extern int xina_avx512;	/* every float type's by AVX-512: -1 ask, 0 no, else: */
#define XINA_AVX512_F		1	/* AVX-512 F and BW */
#define XINA_AVX512_BF16	2	/* and AVX512_BF16 for bfloat16 */
#define XINA_AVX512_FP16	4	/* and AVX512_FP16 for float16 */
uint32_t xina_vec_paths(void);	/* XINA_VEC_* of this CPU */
/* libxina_pack512.c: the AVX-512 loops, each returning the elements done. */
bool xina_has_avx512(void);
size_t xina_q32_avx512(uint32_t *restrict dst, const float *restrict src,
		       size_t cnt, float sa, float sb, int32_t lim);
size_t xina_q16_f16_avx512(uint16_t *restrict dst,
			   const uint16_t *restrict src, size_t cnt,
			   int s, float lim);
size_t xina_dq16_f16_avx512(uint16_t *restrict dst,
			    const uint16_t *restrict src, size_t cnt,
			    float scale);
size_t xina_q16_bf16_avx512(uint16_t *restrict dst,
			    const uint16_t *restrict src, size_t cnt,
			    float sa, float sb, float lim);
size_t xina_dq16_bf16_avx512(uint16_t *restrict dst,
			     const uint16_t *restrict src, size_t cnt,
			     float scale16);
bool xina_all_zero(const void *restrict p, size_t len);
bool xina_words_zero(const uint32_t *w, size_t n);

/* Bytes of the datagram @h heads: a XINA_F_ZERO one is its header alone. */
static inline size_t xina_wire_len(const struct xina_hdr *h)
{
	if (h->flags & XINA_F_ZERO)
		return sizeof(*h);
	return sizeof(*h) + (size_t)ntohs(h->count) * 4;
}
/* A block's largest float magnitude, as the bits of |x|. */
uint32_t xina_max_abs_bits(const float *src, size_t cnt);
uint32_t xina_max_abs_bits16(const uint16_t *src, size_t cnt);
void xina_i32_pack(uint32_t *restrict dst, const int32_t *restrict src,
		   size_t cnt);
void xina_i32_unpack(int32_t *restrict dst, const uint32_t *restrict src,
		     size_t cnt);
void xina_f32_pack(const struct xina *x, uint32_t *dst, const float *src,
		   size_t cnt, int32_t exp);
void xina_f32_unpack(const struct xina *x, float *dst, const uint32_t *src,
		     size_t cnt, int32_t exp, unsigned int div);
/* 16 and 64-bit lanes, network order; cnt elements, not words. */
void xina_i16_pack(uint16_t *restrict dst, const int16_t *restrict src,
		   size_t cnt);
void xina_i16_unpack(int16_t *restrict dst, const uint16_t *restrict src,
		     size_t cnt);
void xina_i64_pack(void *restrict dst, const int64_t *restrict src,
		   size_t cnt);
void xina_i64_unpack(int64_t *restrict dst, const void *restrict src,
		     size_t cnt);
/*
 * Block floating point of float16 and bfloat16, in @k's lanes (16 bits,
 * or 32 for float16 with XINA_OPT_F_F16_WIDE).
 */
void xina_bfp16_pack(const struct xina *x, const struct xina_codec *k,
		     void *dst, const uint16_t *src, size_t cnt, int32_t exp);
void xina_bfp16_unpack(const struct xina *x, const struct xina_codec *k,
		       uint16_t *dst, const void *src, size_t cnt,
		       int32_t exp, unsigned int div);
uint16_t xina_d2h(double d, bool bf16);

#endif /* LIBXINA_INT_H */
