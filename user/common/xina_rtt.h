/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-3-Clause) */
/*
 * RFC 6298's round-trip estimator, shared by libxina (a worker's blocks)
 * and xina-swagg --up (a rack's partials): the retransmission timeout of a
 * fresh packet is srtt + 4 rttvar, at least a floor and at most a cap,
 * shifted left by the caller's backoff (RFC 6298 5.5-5.7).  Samples come
 * only from packets answered without a resend (Karn).
 */
#ifndef XINA_RTT_H
#define XINA_RTT_H

#include <stdint.h>

struct xina_rtt {
	uint32_t	srtt_us;	/* 0: no sample yet */
	uint32_t	rttvar_us;
};

static inline void xina_rtt_sample(struct xina_rtt *e, uint64_t ns)
{
	uint32_t r = ns / 1000 ? ns / 1000 : 1;
	uint32_t d;

	if (!e->srtt_us) {
		e->srtt_us = r;
		e->rttvar_us = r / 2;
		return;
	}
	d = r > e->srtt_us ? r - e->srtt_us : e->srtt_us - r;
	e->rttvar_us = e->rttvar_us - e->rttvar_us / 4 + d / 4;
	e->srtt_us = e->srtt_us - e->srtt_us / 8 + r / 8;
}

static inline uint32_t xina_rtt_rto(const struct xina_rtt *e, uint32_t floor_us,
				    uint32_t max_us, unsigned int backoff)
{
	uint64_t rto = floor_us;

	if (e->srtt_us && e->srtt_us + 4ull * e->rttvar_us > rto)
		rto = e->srtt_us + 4ull * e->rttvar_us;
	rto <<= backoff;
	return rto > max_us ? max_us : rto;
}

#endif /* XINA_RTT_H */
