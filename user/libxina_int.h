/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause) */
/* libxina internals: the handle, shared by libxina*.c only. */
#ifndef LIBXINA_INT_H
#define LIBXINA_INT_H

#include <stdbool.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "libxina.h"

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
};

struct xina {
	int			fd;
	struct sockaddr_in	sw;
	struct xina_opts	o;	/* validated copy, defaults filled in */
	size_t			pkt_sz;	/* header + elems * 4 */
	unsigned int		headroom;	/* ceil(log2(workers)) */
	bool			broken;	/* a failed allreduce left state behind */
	bool			gso;	/* UDP_SEGMENT works */
	bool			gro;	/* UDP_GRO enabled */
	bool			refused;	/* ICMP port unreachable seen */
	uint64_t		next_timer_ns;	/* earliest slot deadline */
	uint32_t		srtt_us;	/* RFC 6298 estimator, 0: no sample yet */
	uint32_t		rttvar_us;
	uint32_t		backoff;	/* shift of the RTO after expiries */
	uint64_t		idle_since_ns;	/* last call returned (or open) */

	struct xina_slot	*slot;
	uint32_t		*next_round;	/* per slot, persists across calls */
	uint8_t			*tx;	/* slots * pkt_sz, kept for resends */
	uint32_t		*txq;	/* slots waiting to be sent */
	uint32_t		txq_len;
	uint8_t			*rx;	/* receive buffers */
	size_t			rx_buf_sz;
	unsigned int		rx_batch;

	int32_t			*exps;	/* float32: agreed exponent per block */
	size_t			exps_len;

	struct xina_worker_stats st;
	char			err[768];
};

__attribute__((format(printf, 2, 3)))
int xina_fail(struct xina *x, const char *fmt, ...);
__attribute__((format(printf, 3, 4)))
void xina_log(struct xina *x, enum xina_log_level lvl, const char *fmt, ...);
uint64_t xina_now_ns(void);

/* libxina_io.c */
int xina_sock_open(struct xina *x);
int xina_tx_flush(struct xina *x);
/* Called for every datagram received (one GRO segment at a time). */
typedef void (*xina_rx_fn)(struct xina *x, const uint8_t *p, size_t len,
			   void *ctx);
int xina_rx_poll(struct xina *x, int timeout_ms, xina_rx_fn fn, void *ctx);
int xina_resolve(struct xina *x);

/* Checks every allreduce starts with; negative errno, nothing sent. */
int xina_call_check(struct xina *x, const void *buf, size_t n);

/*
 * libxina.c: the windowed int32 engine float32 builds upon.  Without
 * @exps, @buf holds n int32 elements reduced in place with @op.  With
 * @exps (one agreed exponent per block), @buf holds n floats: each block is
 * quantised into its packet just before it is sent and the result is
 * dequantised into @buf as it arrives, so the tensor is touched once each
 * way, as for int32.
 */
int xina_reduce_blocks(struct xina *x, void *buf, size_t n, enum xina_op op,
		       const int32_t *exps);

/* libxina_f32.c: one block of float32 to and from the wire. */
void xina_f32_pack(const struct xina *x, uint32_t *dst, const float *src,
		   size_t cnt, int32_t exp);
void xina_f32_unpack(const struct xina *x, float *dst, const uint32_t *src,
		     size_t cnt, int32_t exp);

#endif /* LIBXINA_INT_H */
