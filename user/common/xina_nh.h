/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause) */
/*
 * NH of payloads as they are on the wire, fast: bpf/xina_auth.h's
 * xina_nh_net() (UMAC's NH over 32-bit words in network order), by hand
 * for AVX2 where the CPU has it and by the portable loop elsewhere.
 * Every path gives the bits of xina_nh_net(): NH is a sum modulo 2^64,
 * in any order.  Every word of every packet goes through these at each
 * end that sends or receives it (libxina's workers, xina-swagg), so they
 * are worth the hand-written loops.
 */
#ifndef XINA_NH_H
#define XINA_NH_H

#include <stdint.h>

/* xina_nh_net(): NH of @count words @m in network order under key @k. */
uint64_t xina_nh_wire(const uint32_t *restrict k, const uint32_t *restrict m,
		      unsigned int count);

/*
 * xina_nh_wire() of the same words under two keys in one pass: @k1's
 * returned, @k2's in *@nh2 (an agent verifies an upper result and tags it
 * for its rack).
 */
uint64_t xina_nh_wire2(const uint32_t *restrict k1,
		       const uint32_t *restrict k2,
		       const uint32_t *restrict m, unsigned int count,
		       uint64_t *nh2);

/*
 * @count words @a (host order) into @out in network order, and their NH
 * under @k: a packet's payload and the NH of its tag in one pass.
 */
uint64_t xina_nh_pack(const uint32_t *restrict k, uint32_t *restrict out,
		      const uint32_t *restrict a, unsigned int count);

#endif /* XINA_NH_H */
