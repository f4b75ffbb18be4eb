/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-3-Clause) */
/*
 * RFC 6298's round-trip estimator, in one header shared by the XDP fast
 * path's uplink (bpf/xina.bpf.c, the hold of a partial sent up), libxina
 * (a worker's blocks) and xina-swagg --up (a rack's partials), so that the
 * three time out alike (as bpf/xina_lanes.h for the arithmetic).  Plain C
 * on __u32/__u64, no loop, no division but by constants: the verifier
 * takes it as it is.
 *
 * The retransmission timeout of a fresh packet is srtt + 4 rttvar, at
 * least a floor and at most a cap, shifted left by the caller's backoff
 * (RFC 6298 5.5-5.7).  Samples come only from packets answered without a
 * resend (Karn).  Times are in microseconds, so that the state is two
 * 32-bit words: a map value's, read without its lock a word at a time.
 * The caller serializes samples (a bpf_spin_lock, or one thread).
 */
#ifndef XINA_RTT_H
#define XINA_RTT_H

#include <linux/types.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

struct xina_rtt {
	__u32	srtt_us;	/* 0: no sample yet */
	__u32	rttvar_us;
};

/*
 * A round trip of @ns into @e (RFC 6298 2.2, 2.3): rttvar = 3/4 rttvar +
 * 1/4 |srtt - r|, then srtt = 7/8 srtt + 1/8 r.  r is at least 1 us (0
 * means no sample) and at most U32_MAX us; neither sum can then overflow.
 */
static __always_inline void xina_rtt_sample(struct xina_rtt *e, __u64 ns)
{
	__u64 us = ns / 1000;
	__u32 r = us > 0xffffffffULL ? 0xffffffffU : us ? (__u32)us : 1;
	__u32 d;

	if (!e->srtt_us) {
		e->srtt_us = r;
		e->rttvar_us = r / 2;
		return;
	}
	d = r > e->srtt_us ? r - e->srtt_us : e->srtt_us - r;
	e->rttvar_us = e->rttvar_us - e->rttvar_us / 4 + d / 4;
	e->srtt_us = e->srtt_us - e->srtt_us / 8 + r / 8;
}

/*
 * The timeout of a fresh packet, in us: srtt + 4 rttvar, at least
 * @floor_us (also without a sample), shifted left by @backoff, at most
 * @max_us.
 */
static __always_inline __u32 xina_rtt_rto(const struct xina_rtt *e,
					  __u32 floor_us, __u32 max_us,
					  unsigned int backoff)
{
	__u64 rto = floor_us;

	if (e->srtt_us && e->srtt_us + 4ULL * e->rttvar_us > rto)
		rto = e->srtt_us + 4ULL * e->rttvar_us;
	rto <<= backoff;
	return rto > max_us ? max_us : rto;
}

#endif /* XINA_RTT_H */
