/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-3-Clause) */
/*
 * Packet authentication of xina, in one header shared by the XDP fast path
 * (bpf/), xina.ko (kmod/) and user space (xinactl, libxina, xina-swagg), so
 * that the three cannot disagree.  Plain C on __u32/__u64 only: no library,
 * no allocation, no loop the verifier could not bound.  See
 * Documentation/security.md for what it protects against and what not.
 *
 * Keys.  A job has a 128-bit secret S (a key file: 32 hexadecimal digits).
 * Everything else is derived from it with SipHash-2-4 keyed by S over a
 * 24-byte message: an 8-byte label, then job id, rank and a counter as
 * little-endian 32-bit words, then a zero word:
 *
 *   K_r   = SH(S, "xina-mbr" job r 0) || SH(S, "xina-mbr" job r 1)
 *	     the key of member r (0..workers-1): its contributions
 *   K_res = SH(S, "xina-res" job 0 0) || SH(S, "xina-res" job 0 1)
 *	     the key of results and retransmission answers, shared by the
 *	     job's members
 *   N     = SH(S, "xina-nh\0" job 0 i) for i = 0..XINA_MAX_ELEMS/2-1, each
 *	     64-bit output giving two words (low half first): the NH key,
 *	     XINA_MAX_ELEMS 32-bit words
 *
 * A 128-bit key (k0, k1) is SipHash's key: k0, k1 the two 64-bit halves
 * (as SipHash reads a 16-byte key, little-endian).
 *
 * Tag.  The last 8 bytes of struct xina_hdr:
 *
 *   tag = SipHash-2-4(K, header bytes 0..39 || le64(NH_N(payload)))
 *
 * with K = K_rank for a contribution, K_res for a result or an answer; the
 * payload's 32-bit words are taken in network order (their values, as the
 * switch adds them).  NH is UMAC's NH (RFC 4418, 32-bit words): the sum
 * modulo 2^64 of ((m[2i] + N[2i]) mod 2^32) * ((m[2i+1] + N[2i+1]) mod 2^32)
 * over the pairs of the payload, an odd count padded with a zero word.
 * NH is almost universal (two different payloads of the same length
 * collide for at most a 2^-32 fraction of the keys); the length is in the
 * header (count), which SipHash covers in full.  The tag is stored in
 * network order.
 */
#ifndef XINA_AUTH_H
#define XINA_AUTH_H

#include <linux/types.h>

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#define XINA_AUTH_HDR_WORDS	5	/* 64-bit words of the header before
					 * the tag: 40 bytes */

/* Labels of the derivation, as the 64-bit words SipHash reads. */
#define XINA_LABEL_MEMBER	0x72626d2d616e6978ULL	/* "xina-mbr" */
#define XINA_LABEL_RESULT	0x7365722d616e6978ULL	/* "xina-res" */
#define XINA_LABEL_NH		0x00686e2d616e6978ULL	/* "xina-nh\0" */

struct xina_sip {
	__u64 v0, v1, v2, v3;
};

static __always_inline __u64 xina_rotl64(__u64 x, int b)
{
	return (x << b) | (x >> (64 - b));
}

/* 64-bit little-endian value from a native load. */
static __always_inline __u64 xina_le64(__u64 x)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return __builtin_bswap64(x);
#else
	return x;
#endif
}

static __always_inline void xina_sipround(struct xina_sip *s)
{
	s->v0 += s->v1;
	s->v1 = xina_rotl64(s->v1, 13);
	s->v1 ^= s->v0;
	s->v0 = xina_rotl64(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = xina_rotl64(s->v3, 16);
	s->v3 ^= s->v2;
	s->v0 += s->v3;
	s->v3 = xina_rotl64(s->v3, 21);
	s->v3 ^= s->v0;
	s->v2 += s->v1;
	s->v1 = xina_rotl64(s->v1, 17);
	s->v1 ^= s->v2;
	s->v2 = xina_rotl64(s->v2, 32);
}

static __always_inline void xina_sip_init(struct xina_sip *s, __u64 k0,
					  __u64 k1)
{
	s->v0 = k0 ^ 0x736f6d6570736575ULL;
	s->v1 = k1 ^ 0x646f72616e646f6dULL;
	s->v2 = k0 ^ 0x6c7967656e657261ULL;
	s->v3 = k1 ^ 0x7465646279746573ULL;
}

/* One 64-bit message word (c = 2 rounds). */
static __always_inline void xina_sip_word(struct xina_sip *s, __u64 m)
{
	s->v3 ^= m;
	xina_sipround(s);
	xina_sipround(s);
	s->v0 ^= m;
}

/* @last: the final word (length << 56 | tail bytes); d = 4 rounds. */
static __always_inline __u64 xina_sip_final(struct xina_sip *s, __u64 last)
{
	xina_sip_word(s, last);
	s->v2 ^= 0xff;
	xina_sipround(s);
	xina_sipround(s);
	xina_sipround(s);
	xina_sipround(s);
	return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

/*
 * SipHash-2-4 of @len bytes at @msg (user space and kernel: the test
 * vectors and the key derivation go through here).
 */
static inline __u64 xina_siphash(__u64 k0, __u64 k1, const void *msg,
				 __u32 len)
{
	const __u8 *p = (const __u8 *)msg;
	struct xina_sip s;
	__u64 m, last;
	__u32 i, n = len & ~7u;

	xina_sip_init(&s, k0, k1);
	for (i = 0; i < n; i += 8) {
		__builtin_memcpy(&m, p + i, 8);
		xina_sip_word(&s, xina_le64(m));
	}
	last = (__u64)len << 56;
	for (i = 0; i < (len & 7); i++)
		last |= (__u64)p[n + i] << (8 * i);
	return xina_sip_final(&s, last);
}

/*
 * The tag of a packet: @w the 5 header words before the tag, as loaded
 * natively from the packet (xina_le64() turns them into SipHash's words),
 * @nh the NH of its payload.  The message is 48 bytes: 6 words, then the
 * length word.
 */
static __always_inline __u64 xina_tag_words(__u64 k0, __u64 k1,
					    const __u64 *w, __u64 nh)
{
	struct xina_sip s;

	xina_sip_init(&s, k0, k1);
	xina_sip_word(&s, xina_le64(w[0]));
	xina_sip_word(&s, xina_le64(w[1]));
	xina_sip_word(&s, xina_le64(w[2]));
	xina_sip_word(&s, xina_le64(w[3]));
	xina_sip_word(&s, xina_le64(w[4]));
	xina_sip_word(&s, nh);
	return xina_sip_final(&s, (__u64)48 << 56);
}

/* The same from a header at any alignment (user space and kernel). */
static inline __u64 xina_tag_hdr(const __u64 *k, const void *hdr, __u64 nh)
{
	__u64 w[XINA_AUTH_HDR_WORDS];

	__builtin_memcpy(w, hdr, sizeof(w));
	return xina_tag_words(k[0], k[1], w, nh);
}

/* One NH pair: both words are values (host order), @k the key words. */
static __always_inline __u64 xina_nh_pair(__u32 m0, __u32 m1, __u32 k0,
					  __u32 k1)
{
	return (__u64)(__u32)(m0 + k0) * (__u32)(m1 + k1);
}

/*
 * NH of @count values (host order) with key @k (XINA_MAX_ELEMS words);
 * @count <= XINA_MAX_ELEMS.  User space and kernel; the fast path has its
 * own loops over the frame with the same arithmetic.
 */
static inline __u64 xina_nh(const __u32 *k, const __u32 *m, __u32 count)
{
	__u64 sum = 0;
	__u32 i;

	for (i = 0; i + 1 < count; i += 2)
		sum += xina_nh_pair(m[i], m[i + 1], k[i], k[i + 1]);
	if (count & 1)
		sum += xina_nh_pair(m[count - 1], 0, k[count - 1], k[count]);
	return sum;
}

/* A 32-bit value in network order, from a native load. */
static __always_inline __u32 xina_be32(__u32 x)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return x;
#else
	return __builtin_bswap32(x);
#endif
}

/*
 * xina_nh() of @count values in network order: a payload as it is on the
 * wire (libxina and xina-swagg hash what they send and receive).
 */
static inline __u64 xina_nh_net(const __u32 *k, const __u32 *m, __u32 count)
{
	__u64 sum = 0;
	__u32 i;

	for (i = 0; i + 1 < count; i += 2)
		sum += xina_nh_pair(xina_be32(m[i]), xina_be32(m[i + 1]),
				    k[i], k[i + 1]);
	if (count & 1)
		sum += xina_nh_pair(xina_be32(m[count - 1]), 0, k[count - 1],
				    k[count]);
	return sum;
}

/* One 64-bit output of the derivation (see the top of this file). */
static inline __u64 xina_derive64(const __u8 *secret, __u64 label, __u32 job,
				  __u32 rank, __u32 ctr)
{
	__u64 k0, k1, msg[3];

	__builtin_memcpy(&k0, secret, 8);
	__builtin_memcpy(&k1, secret + 8, 8);
	msg[0] = xina_le64(label);
	msg[1] = xina_le64((__u64)rank << 32 | job);
	msg[2] = xina_le64(ctr);
	return xina_siphash(xina_le64(k0), xina_le64(k1), msg, sizeof(msg));
}

/* K_r of member @rank, or K_res with label XINA_LABEL_RESULT and rank 0. */
static inline void xina_derive_key(const __u8 *secret, __u64 label,
				   __u32 job, __u32 rank, __u64 *k)
{
	k[0] = xina_derive64(secret, label, job, rank, 0);
	k[1] = xina_derive64(secret, label, job, rank, 1);
}

/* The NH key of job @job: @n words (even, <= XINA_MAX_ELEMS). */
static inline void xina_derive_nh(const __u8 *secret, __u32 job, __u32 *k,
				  __u32 n)
{
	__u64 x;
	__u32 i;

	for (i = 0; i + 1 < n; i += 2) {
		x = xina_derive64(secret, XINA_LABEL_NH, job, 0, i / 2);
		k[i] = (__u32)x;
		k[i + 1] = (__u32)(x >> 32);
	}
}

#endif /* XINA_AUTH_H */
