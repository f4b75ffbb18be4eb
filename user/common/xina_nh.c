// SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause)
/*
 * NH of wire payloads (xina_nh.h).  The compiler's vectorisation of NH is
 * mostly shuffles, so the AVX2 loops are written by hand: one vpmuludq
 * per pair, the two words of a pair the halves of a 64-bit lane.  Picked
 * per call (a load of the CPU model libgcc filled in at start), the
 * portable loop for the tail and for CPUs without AVX2.  Built at -O3.
 */
#include <arpa/inet.h>

#include "xina_nh.h"
#include "xina_auth.h"

#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target)
#define XINA_NH_AVX2	__attribute__((target("avx2")))
#include <immintrin.h>
#endif
#endif

#ifdef XINA_NH_AVX2
static inline int xina_nh_avx2(void)
{
	return __builtin_cpu_supports("avx2");
}

/* Each 32-bit word from network order to host order. */
#define XINA_NH_BSWAP32	_mm256_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, \
					 8, 15, 14, 13, 12, 3, 2, 1, 0, 7, 6, \
					 5, 4, 11, 10, 9, 8, 15, 14, 13, 12)

/* xina_nh_pair() of the 4 pairs of 8 values @x (host order), key @k. */
XINA_NH_AVX2 static inline __m256i xina_nh8(__m256i x, const uint32_t *k)
{
	x = _mm256_add_epi32(x, _mm256_loadu_si256((const __m256i *)k));
	return _mm256_mul_epu32(x, _mm256_srli_epi64(x, 32));
}

XINA_NH_AVX2 static inline uint64_t xina_nh_sum4(__m256i v)
{
	__m128i s = _mm_add_epi64(_mm256_castsi256_si128(v),
				  _mm256_extracti128_si256(v, 1));

	return (uint64_t)_mm_cvtsi128_si64(s) +
	       (uint64_t)_mm_extract_epi64(s, 1);
}

/* xina_nh_wire() of the first @n words (a multiple of 8). */
XINA_NH_AVX2 static uint64_t xina_nh_wire_avx2(const uint32_t *k,
					       const uint32_t *m,
					       unsigned int n)
{
	const __m256i swap = XINA_NH_BSWAP32;
	__m256i acc = _mm256_setzero_si256(), x;
	unsigned int i;

	for (i = 0; i < n; i += 8) {
		x = _mm256_loadu_si256((const __m256i *)(m + i));
		x = _mm256_shuffle_epi8(x, swap);
		acc = _mm256_add_epi64(acc, xina_nh8(x, k + i));
	}
	return xina_nh_sum4(acc);
}

/* xina_nh_wire2() of the first @n words (a multiple of 8). */
XINA_NH_AVX2 static uint64_t xina_nh_wire2_avx2(const uint32_t *k1,
						const uint32_t *k2,
						const uint32_t *m,
						unsigned int n, uint64_t *nh2)
{
	__m256i acc1 = _mm256_setzero_si256(), acc2 = acc1, x;
	const __m256i swap = XINA_NH_BSWAP32;
	unsigned int i;

	for (i = 0; i < n; i += 8) {
		x = _mm256_loadu_si256((const __m256i *)(m + i));
		x = _mm256_shuffle_epi8(x, swap);
		acc1 = _mm256_add_epi64(acc1, xina_nh8(x, k1 + i));
		acc2 = _mm256_add_epi64(acc2, xina_nh8(x, k2 + i));
	}
	*nh2 = xina_nh_sum4(acc2);
	return xina_nh_sum4(acc1);
}

/* xina_nh_pack() of the first @n words (a multiple of 8). */
XINA_NH_AVX2 static uint64_t xina_nh_pack_avx2(const uint32_t *k,
					       uint32_t *out,
					       const uint32_t *a,
					       unsigned int n)
{
	const __m256i swap = XINA_NH_BSWAP32;
	__m256i acc = _mm256_setzero_si256(), x;
	unsigned int i;

	for (i = 0; i < n; i += 8) {
		x = _mm256_loadu_si256((const __m256i *)(a + i));
		_mm256_storeu_si256((__m256i *)(out + i),
				    _mm256_shuffle_epi8(x, swap));
		acc = _mm256_add_epi64(acc, xina_nh8(x, k + i));
	}
	return xina_nh_sum4(acc);
}
#endif /* XINA_NH_AVX2 */

uint64_t xina_nh_wire(const uint32_t *restrict k, const uint32_t *restrict m,
		      unsigned int count)
{
	unsigned int i = 0;
	uint64_t sum = 0;

#ifdef XINA_NH_AVX2
	if (xina_nh_avx2()) {
		i = count & ~7u;
		sum = xina_nh_wire_avx2(k, m, i);
	}
#endif
	/* the rest: its pairs start at an even word, as NH's do */
	return sum + xina_nh_net(k + i, m + i, count - i);
}

uint64_t xina_nh_wire2(const uint32_t *restrict k1,
		       const uint32_t *restrict k2,
		       const uint32_t *restrict m, unsigned int count,
		       uint64_t *nh2)
{
	uint64_t s1 = 0, s2 = 0;
	unsigned int i = 0;

#ifdef XINA_NH_AVX2
	if (xina_nh_avx2()) {
		i = count & ~7u;
		s1 = xina_nh_wire2_avx2(k1, k2, m, i, &s2);
	}
#endif
	/* the rest, under each key (fewer than 8 words with AVX2) */
	*nh2 = s2 + xina_nh_net(k2 + i, m + i, count - i);
	return s1 + xina_nh_net(k1 + i, m + i, count - i);
}

uint64_t xina_nh_pack(const uint32_t *restrict k, uint32_t *restrict out,
		      const uint32_t *restrict a, unsigned int count)
{
	unsigned int i = 0;
	uint64_t sum = 0;

#ifdef XINA_NH_AVX2
	if (xina_nh_avx2()) {
		i = count & ~7u;
		sum = xina_nh_pack_avx2(k, out, a, i);
	}
#endif
	for (; i + 1 < count; i += 2) {
		out[i] = htonl(a[i]);
		out[i + 1] = htonl(a[i + 1]);
		sum += xina_nh_pair(a[i], a[i + 1], k[i], k[i + 1]);
	}
	if (count & 1) {
		out[count - 1] = htonl(a[count - 1]);
		sum += xina_nh_pair(a[count - 1], 0, k[count - 1], k[count]);
	}
	return sum;
}
