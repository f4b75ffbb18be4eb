/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause) */
/*
 * The host fallback: a ring allreduce over TCP between a job's members,
 * for a job that cannot get switch memory or whose switch stopped
 * answering (ATP's fallback).  It reduces the same 32-bit words the
 * switch would (the packed or quantised payloads, bpf/xina_lanes.h's
 * arithmetic), so its results are bitwise those of the switch path.
 *
 * Every connection is authenticated with a key derived from the job's
 * secret (label "xina-rng"): a challenge-response with a nonce from each
 * side, then a tag on every message under a session key of both nonces
 * (SipHash-2-4 over its header, sequence number included, and over the
 * NH of its words under a session NH key: a replayed, reordered or
 * altered message fails).  A connection that does not authenticate is closed and counted;
 * it changes nothing and is sent nothing but the server's nonce and tag
 * (Documentation/security.md, "The host fallback").
 */
#ifndef LIBXINA_RING_H
#define LIBXINA_RING_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#include "../../include/uapi/linux/xina.h"

struct xina_ring_cfg {
	uint32_t			job;
	uint32_t			rank;
	uint32_t			workers;
	const struct sockaddr_in	*peers;	/* @workers entries: each rank's
						 * ring address (listen, connect) */
	const uint64_t			*key;	/* 2 words: xina_ring_key() */
	int				timeout_ms;	/* to set up, and with
							 * no byte moving */
};

struct xina_ring_stats {
	uint64_t	tx_bytes;	/* on the wire, framing included */
	uint64_t	rx_bytes;
	uint64_t	rejected;	/* connections that did not authenticate */
	uint64_t	calls;
};

struct xina_ring;

/* The job's ring key @k, from its secret (label "xina-rng"). */
void xina_ring_key(const uint8_t *secret, uint32_t job, uint64_t k[2]);

/*
 * Listen on peers[rank], connect to the next rank, accept the previous
 * one; both authenticated.  On an error, a negative errno and the reason
 * in @err, nothing left open.
 */
int xina_ring_open(const struct xina_ring_cfg *cfg, struct xina_ring **out,
		   char *err, size_t errlen);

/*
 * Allreduce @nwords words (network order, as the switch has them; they
 * travel so) at @words, in blocks of @bw words (the last one may be
 * shorter; @bw even for INT64), by @dtype and @op of the wire.  @done, one byte per block or NULL: where non-zero, this
 * worker already holds the block's result (a switch answered it before it
 * went away); that result is taken as the block's result by everyone.
 * Every worker must call with the same @nwords, @bw, @dtype and @op.
 */
int xina_ring_allreduce(struct xina_ring *r, uint32_t *words, size_t nwords,
			size_t bw, const uint8_t *done, uint32_t dtype,
			uint32_t op, char *err, size_t errlen);

void xina_ring_stats(const struct xina_ring *r, struct xina_ring_stats *st);
void xina_ring_close(struct xina_ring *r);

#endif /* LIBXINA_RING_H */
