// SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause)
/*
 * libxina's element loops: one block of the caller's tensor into its
 * packet (network byte order; float32 quantised) and one result back, and
 * the scan of a float block for its largest magnitude (its exponent).
 * They touch every byte a worker sends and receives, so they are built
 * apart from the rest (user/lib/build.mk): at -O3, and twice, for AVX2 and for
 * the x86-64 baseline, picked at load time (target_clones: the baseline
 * has no byte shuffle, so its byte swaps stay scalar), the scans three
 * times (AVX-512 too); the float loops have hand-written AVX2 and F16C
 * paths here and AVX-512 ones in libxina_pack512.c.  Every clone and path
 * gives the same bits: every float operation below is exact or correctly
 * rounded (a product by a power of two, an addition of the rounding
 * constant, a conversion), and contraction into FMA is off for this file.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <math.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "libxina_int.h"

#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define XINA_CLONES	__attribute__((target_clones("avx2", "default")))
/*
 * The scans (a float block's largest magnitude, a sparse block's zeros)
 * take an AVX-512 clone as well: 25-30% faster on the rack's Xeon, where
 * the byte swaps of the integer loops were 5% slower with one
 * (xina-bench-packloop, both builds in turn).
 */
#define XINA_SCAN_CLONES \
	__attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#endif
#endif
#ifndef XINA_CLONES
#define XINA_CLONES
#define XINA_SCAN_CLONES
#endif

/* Lanes of the max loop below: independent accumulators vectorise. */
#define XINA_MAX_LANES	8

/*
 * Largest magnitude of @cnt floats, as the bits of |x|: for finite floats
 * the order of those bits as integers is the order of the magnitudes, and
 * NaN and infinities compare above every finite value.  No branch and no
 * early exit in the loop, so that it vectorises; the caller checks
 * finiteness once per block on the result.
 */
XINA_SCAN_CLONES
uint32_t xina_max_abs_bits(const float *src, size_t cnt)
{
	uint32_t acc[XINA_MAX_LANES] = {}, m = 0, b;
	size_t i = 0, k;

	for (; i + XINA_MAX_LANES <= cnt; i += XINA_MAX_LANES) {
		for (k = 0; k < XINA_MAX_LANES; k++) {
			memcpy(&b, &src[i + k], sizeof(b));
			b &= 0x7fffffff;
			acc[k] = b > acc[k] ? b : acc[k];
		}
	}
	for (; i < cnt; i++) {
		memcpy(&b, &src[i], sizeof(b));
		b &= 0x7fffffff;
		m = b > m ? b : m;
	}
	for (k = 0; k < XINA_MAX_LANES; k++)
		m = acc[k] > m ? acc[k] : m;
	return m;
}

/* Largest magnitude of @cnt 16-bit floats, as the bits of |x|. */
XINA_SCAN_CLONES
uint32_t xina_max_abs_bits16(const uint16_t *src, size_t cnt)
{
	uint16_t acc[2 * XINA_MAX_LANES] = {}, b;
	uint32_t m = 0;
	size_t i = 0, k;

	for (; i + 2 * XINA_MAX_LANES <= cnt; i += 2 * XINA_MAX_LANES) {
		for (k = 0; k < 2 * XINA_MAX_LANES; k++) {
			b = src[i + k] & 0x7fff;
			acc[k] = b > acc[k] ? b : acc[k];
		}
	}
	for (; i < cnt; i++)
		m = (src[i] & 0x7fffu) > m ? src[i] & 0x7fffu : m;
	for (k = 0; k < 2 * XINA_MAX_LANES; k++)
		m = acc[k] > m ? acc[k] : m;
	return m;
}

/* Scale exponent s of a block with agreed exponent @e: x * 2^s fits. */
static int xina_scale(const struct xina *x, int32_t e)
{
	return 31 - (int)x->headroom - e;
}

/*
 * 2^@s as the product of two floats *@sa * *@sb, for s beyond a float's
 * exponents; *@sb is 1 where 2^s is a float itself, so that the vector
 * loops take one product.
 */
static void xina_pow2_split(int s, float *sa, float *sb)
{
	if (s >= -126 && s <= 127) {
		*sa = ldexpf(1.0f, s);
		*sb = 1.0f;
	} else {
		*sa = ldexpf(1.0f, s - s / 2);
		*sb = ldexpf(1.0f, s / 2);
	}
}

XINA_CLONES
void xina_i32_pack(uint32_t *restrict dst, const int32_t *restrict src,
		   size_t cnt)
{
	size_t i;

	for (i = 0; i < cnt; i++)
		dst[i] = htonl((uint32_t)src[i]);
}

XINA_CLONES
void xina_i32_unpack(int32_t *restrict dst, const uint32_t *restrict src,
		     size_t cnt)
{
	size_t i;

	for (i = 0; i < cnt; i++)
		dst[i] = (int32_t)ntohl(src[i]);
}

XINA_CLONES
void xina_i16_pack(uint16_t *restrict dst, const int16_t *restrict src,
		   size_t cnt)
{
	size_t i;

	for (i = 0; i < cnt; i++)
		dst[i] = htons((uint16_t)src[i]);
}

XINA_CLONES
void xina_i16_unpack(int16_t *restrict dst, const uint16_t *restrict src,
		     size_t cnt)
{
	size_t i;

	for (i = 0; i < cnt; i++)
		dst[i] = (int16_t)ntohs(src[i]);
}

/* Packets are 4-byte aligned only (GRO segments): 64-bit lanes by memcpy. */
XINA_CLONES
void xina_i64_pack(void *restrict dst, const int64_t *restrict src,
		   size_t cnt)
{
	uint64_t v;
	size_t i;

	for (i = 0; i < cnt; i++) {
		v = htobe64((uint64_t)src[i]);
		memcpy((uint8_t *)dst + i * 8, &v, 8);
	}
}

XINA_CLONES
void xina_i64_unpack(int64_t *restrict dst, const void *restrict src,
		     size_t cnt)
{
	uint64_t v;
	size_t i;

	for (i = 0; i < cnt; i++) {
		memcpy(&v, (const uint8_t *)src + i * 8, 8);
		dst[i] = (int64_t)be64toh(v);
	}
}

/*
 * Whether @len bytes are all zero bits: the sparse call's pass over the
 * whole tensor, vectorised (2.1-2.7 ms for 64 MiB in L3 with AVX2, in
 * blocks of 8 KiB or in one call, on the rack's host).
 */
XINA_SCAN_CLONES
bool xina_all_zero(const void *restrict p, size_t len)
{
	const uint8_t *b = p;
	uint64_t acc = 0, v;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&v, b + i, 8);
		acc |= v;
	}
	for (; i < len; i++)
		acc |= b[i];
	return !acc;
}

/*
 * Are the @n words at @w zero?  Packed words, just written and in cache:
 * a line at a time, so that a block that is not zero (a dense call's
 * every block) costs one line's test, not the block's.
 */
bool xina_words_zero(const uint32_t *w, size_t n)
{
	uint32_t acc;
	size_t i, j;

	for (i = 0; i < n; i += 16) {
		acc = 0;
		for (j = i; j < n && j < i + 16; j++)
			acc |= w[j];
		if (acc)
			return false;
	}
	return true;
}

/*
 * Adding and subtracting 1.5 * 2^52 rounds a double of magnitude below
 * 2^51 to the nearest integer, ties to even, like rint() in the default
 * rounding mode, but inline and vectorisable: rint()/lrintf() calls
 * dominated the float path.
 */
#define XINA_RINT_MAGIC	6755399441055744.0

XINA_CLONES
static void xina_f32_quantise(uint32_t *restrict dst,
			      const float *restrict src, size_t cnt,
			      double scale, double lim)
{
	double v;
	size_t i;

	for (i = 0; i < cnt; i++) {
		v = (double)src[i] * scale;
		v = (v + XINA_RINT_MAGIC) - XINA_RINT_MAGIC;
		v = v > lim ? lim : v < -lim ? -lim : v;
		dst[i] = htonl((uint32_t)(int32_t)v);
	}
}

/*
 * The same quantisation in float arithmetic with AVX2, eight elements at a
 * time, and the same bits for every finite input (SUM refuses the others
 * before anything is sent).  x * 2^s is two products by powers of two,
 * @sa * @sb (one, by @sa, when @sb is 1), each exact unless the first
 * underflows, and then x * 2^s is far below 1/2 and rounds to zero either
 * way (as in xina_q16()); |x * 2^s| < 2^31, a float's integer when it is
 * 2^23 or more.  The conversion rounds in the current rounding mode, the
 * default's to nearest, ties to even, that the double loop's constant
 * assumes as well (libxina.h).  The clamp to +-@lim is on the integers,
 * where 2^31 - 1 is exact, after a conversion that would turn 2^31 or
 * more into INT32_MIN: such lanes are set to INT32_MAX first, so that the
 * two loops agree even there (a block exponent above its largest
 * magnitude keeps |x * 2^s| below 2^31; with no headroom a float there is
 * a multiple of 128 and does not round up).  Returns the elements done, a
 * multiple of 8: the rest is the caller's.  xina_avx2 says whether to use
 * it: -1 until first asked (selftests/xina_pack sets it to test both ways).
 * Per 2048 floats, in cache: 744 ns by the double loop, 487 with two
 * products and vroundps, 276 like this (xina-bench-packloop).
 */
int xina_avx2 = -1;

#if defined(__x86_64__)
/* Each 32-bit lane's bytes swapped: network order and back. */
#define XINA_SWAP32	_mm256_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, \
					 8, 15, 14, 13, 12, 3, 2, 1, 0, 7, 6, \
					 5, 4, 11, 10, 9, 8, 15, 14, 13, 12)

__attribute__((target("avx2"), always_inline))
static inline size_t xina_q32_loop(uint32_t *restrict dst,
				   const float *restrict src, size_t cnt,
				   float sa, float sb, int32_t lim,
				   const bool two)
{
	const __m256 a = _mm256_set1_ps(sa), b = _mm256_set1_ps(sb);
	const __m256 two31 = _mm256_set1_ps(0x1p31f);
	const __m256i hi = _mm256_set1_epi32(lim), lo = _mm256_set1_epi32(-lim);
	const __m256i max = _mm256_set1_epi32(INT32_MAX);
	const __m256i swap = XINA_SWAP32;
	__m256i q, big;
	__m256 v;
	size_t i;

	for (i = 0; i + 8 <= cnt; i += 8) {
		v = _mm256_mul_ps(_mm256_loadu_ps(src + i), a);
		if (two)
			v = _mm256_mul_ps(v, b);
		big = _mm256_castps_si256(_mm256_cmp_ps(v, two31, _CMP_GE_OQ));
		q = _mm256_blendv_epi8(_mm256_cvtps_epi32(v), max, big);
		q = _mm256_max_epi32(_mm256_min_epi32(q, hi), lo);
		_mm256_storeu_si256((void *)(dst + i),
				    _mm256_shuffle_epi8(q, swap));
	}
	return i;
}

__attribute__((target("avx2")))
static size_t xina_q32_avx2(uint32_t *restrict dst, const float *restrict src,
			    size_t cnt, float sa, float sb, int32_t lim)
{
	return sb == 1.0f ? xina_q32_loop(dst, src, cnt, sa, sb, lim, false) :
			    xina_q32_loop(dst, src, cnt, sa, sb, lim, true);
}

/*
 * Sums back in float arithmetic: the conversion of Q to float is the one
 * rounding (current mode, as above), and the product by @scale = 2^k is
 * exact while Q * 2^k is a normal float or overflows, so the bits are the
 * double loop's (float)(Q * 2^k) for k >= -126, which the caller checks.
 * Per 2048 sums, in cache: 522 ns by the double loop, 181 like this.
 */
__attribute__((target("avx2")))
static size_t xina_dq32_avx2(float *restrict dst, const uint32_t *restrict src,
			     size_t cnt, float scale)
{
	const __m256 sc = _mm256_set1_ps(scale);
	const __m256i swap = XINA_SWAP32;
	__m256i q;
	size_t i;

	for (i = 0; i + 8 <= cnt; i += 8) {
		q = _mm256_shuffle_epi8(_mm256_loadu_si256((const void *)(src + i)),
					swap);
		_mm256_storeu_ps(dst + i,
				 _mm256_mul_ps(_mm256_cvtepi32_ps(q), sc));
	}
	return i;
}

static bool xina_has_avx2(void)
{
	if (xina_avx2 < 0)
		xina_avx2 = !!__builtin_cpu_supports("avx2");
	return xina_avx2;
}
#else
static size_t xina_q32_avx2(uint32_t *dst, const float *src, size_t cnt,
			    float sa, float sb, int32_t lim)
{
	return 0;
}

static size_t xina_dq32_avx2(float *dst, const uint32_t *src, size_t cnt,
			     float scale)
{
	return 0;
}

static bool xina_has_avx2(void)
{
	return false;
}
#endif

/*
 * Quantise one block straight into its packet (network order), called
 * just before the block is sent: the floats are read once, while they are
 * still in the cache, and no scratch tensor is written and read back.
 */
void xina_f32_pack(const struct xina *x, uint32_t *dst, const float *src,
		   size_t cnt, int32_t exp)
{
	int32_t lim = (int32_t)((1l << (31 - x->headroom)) - 1);
	size_t done = 0;
	float sa, sb;
	int s;

	if (exp == XINA_EXP_ZERO) {
		memset(dst, 0, cnt * sizeof(*dst));
		return;
	}
	s = xina_scale(x, exp);
	xina_pow2_split(s, &sa, &sb);
	if (xina_has_avx512())
		done = xina_q32_avx512(dst, src, cnt, sa, sb, lim);
	if (xina_has_avx2())
		done += xina_q32_avx2(dst + done, src + done, cnt - done, sa,
				      sb, lim);
	/* 2^s may not be a float, but is a double: x * 2^s is exact. */
	xina_f32_quantise(dst + done, src + done, cnt - done, ldexp(1.0, s),
			  (double)lim);
}

XINA_CLONES
static void xina_f32_dequantise(float *restrict dst,
				const uint32_t *restrict src, size_t cnt,
				double scale)
{
	size_t i;

	for (i = 0; i < cnt; i++)
		dst[i] = (float)((double)(int32_t)ntohl(src[i]) * scale);
}

XINA_CLONES
static void xina_f32_dequantise_div(float *restrict dst,
				    const uint32_t *restrict src, size_t cnt,
				    double scale, double div)
{
	size_t i;

	for (i = 0; i < cnt; i++)
		dst[i] = (float)((double)(int32_t)ntohl(src[i]) * scale / div);
}

/*
 * Dequantise one result as it arrives.  Q * 2^-s is exact in double; the
 * conversion to float is the one rounding, the same on every worker (and
 * by xina_dq32_avx2(), the same bits, where 2^-s is a normal float).
 * AVG (@div workers, else 1) divides in double first: a second rounding,
 * the same on every worker too.
 */
void xina_f32_unpack(const struct xina *x, float *dst, const uint32_t *src,
		     size_t cnt, int32_t exp, unsigned int div)
{
	size_t done = 0;
	int k;

	if (exp == XINA_EXP_ZERO) {
		memset(dst, 0, cnt * sizeof(*dst));
		return;
	}
	k = -xina_scale(x, exp);
	if (div > 1) {
		xina_f32_dequantise_div(dst, src, cnt, ldexp(1.0, k), div);
		return;
	}
	if (xina_has_avx2() && k >= -126)
		done = xina_dq32_avx2(dst, src, cnt, ldexpf(1.0f, k));
	xina_f32_dequantise(dst + done, src + done, cnt - done, ldexp(1.0, k));
}

/*
 * 16-bit floats.  Every conversion below is exact or one correct rounding
 * to nearest, ties to even, and none has a branch, so that the loops
 * vectorise (a call or a branch per element cost more than the rest of
 * the call: 8.9 CPU s/GiB for bfloat16 against 3.1 for int32).
 */

/* A bfloat16 as a float: the same bits, exactly. */
static inline float xina_bf2f(uint16_t b)
{
	uint32_t f = (uint32_t)b << 16;
	float v;

	memcpy(&v, &f, sizeof(v));
	return v;
}

/* A finite float16 as a float, exactly: subnormals are m * 2^-24. */
static inline float xina_h2f(uint16_t b)
{
	uint32_t s = (uint32_t)(b & 0x8000) << 16, e = b >> 10 & 0x1f;
	uint32_t m = b & 0x3ff, n, d, normal = -(uint32_t)(e != 0);
	float sub = (float)(int32_t)m * 0x1p-24f, v;

	n = s | (e + 112) << 23 | m << 13;
	memcpy(&d, &sub, sizeof(d));
	d |= s;
	n = (n & normal) | (d & ~normal);	/* no branch: it vectorises */
	memcpy(&v, &n, sizeof(v));
	return v;
}

/* A float (finite or infinite) to the nearest bfloat16. */
static inline uint16_t xina_f2bf(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return (u + 0x7fff + (u >> 16 & 1)) >> 16;
}

/*
 * A float (finite or infinite) to the nearest float16: normal results by
 * rebiasing and rounding the 13 bits dropped, subnormal ones by adding
 * 0.5, whose quantum is 2^-24, the quantum of float16's subnormals (the
 * float unit rounds), 2^16 and beyond an infinity.
 */
static inline uint16_t xina_f2h(float f)
{
	uint32_t u, a, n, d, big, sub;
	float t;

	memcpy(&u, &f, sizeof(u));
	a = u & 0x7fffffff;
	big = -(uint32_t)(a >= 143u << 23);
	sub = -(uint32_t)(a < 113u << 23);
	n = (a - (112u << 23) + 0xfff + (a >> 13 & 1)) >> 13;
	n = (n & ~big) | (0x7c00 & big);
	memcpy(&t, &a, sizeof(t));
	t += 0.5f;
	memcpy(&d, &t, sizeof(d));
	d -= 126u << 23;
	return (u >> 16 & 0x8000) | (d & sub) | (n & ~sub);
}

/*
 * A finite double rounded to the nearest float16 (@bf16 false: 11-bit
 * significand, quantum of the subnormals 2^-24) or bfloat16 (8 bits,
 * 2^-133), ties to even, beyond the largest finite value an infinity:
 * one rounding, in integer arithmetic on the double's bits (no double
 * rounding through float, no libm call).  The general case, for AVG and
 * for sums the float paths below cannot hold exactly.
 */
uint16_t xina_d2h(double d, bool bf16)
{
	const int p = bf16 ? 8 : 11, qmin = bf16 ? -133 : -24;
	const uint32_t inf = bf16 ? 0x7f80 : 0x7c00;
	uint64_t b, m, q, rem, half;
	uint16_t sign;
	uint32_t bits;
	int e, qe, sh;

	memcpy(&b, &d, sizeof(b));
	sign = b >> 48 & 0x8000;
	e = (int)(b >> 52 & 0x7ff);
	if (!e)		/* zero, or far below the smallest subnormal */
		return sign;
	m = (b & ((1ull << 52) - 1)) | 1ull << 52;	/* d = m * 2^(e-1075) */
	qe = e - 1023 - (p - 1);	/* quantum of a p-bit significand */
	if (qe < qmin)
		qe = qmin;
	sh = qe - (e - 1075);
	if (sh > 63)
		return sign;
	q = m >> sh;
	rem = m & ((1ull << sh) - 1);
	half = 1ull << (sh - 1);
	if (rem > half || (rem == half && (q & 1)))
		q++;
	bits = ((uint32_t)(qe - qmin) << (p - 1)) + (uint32_t)q;
	return sign | (bits >= inf ? inf : bits);
}

/* Adding and subtracting 1.5 * 2^23 rounds a float below 2^22 (above). */
#define XINA_RINTF_MAGIC	12582912.0f

/*
 * Into INT16 lanes: q = rint(x * 2^s) clamped to +-@lim.  2^s may be
 * beyond the float range (bfloat16 blocks of tiny values), so it is two
 * factors @sa * @sb; |x * 2^s| < 2^15, so each product is exact unless
 * the first underflows, and then x * 2^s is far below 1/2 and rounds to
 * zero either way.  The same bits as the double computation would give.
 */
static inline __attribute__((always_inline)) void
xina_q16(uint16_t *restrict dst, const uint16_t *restrict src, size_t cnt,
	 float sa, float sb, float lim, const bool bf16)
{
	size_t i;
	float v;

	for (i = 0; i < cnt; i++) {
		v = (bf16 ? xina_bf2f(src[i]) : xina_h2f(src[i])) * sa * sb;
		v = (v + XINA_RINTF_MAGIC) - XINA_RINTF_MAGIC;
		v = v > lim ? lim : v;
		v = v < -lim ? -lim : v;
		dst[i] = htons((uint16_t)(int16_t)(int32_t)v);
	}
}


/*
 * float16 with F16C (x86-64 CPUs since 2012-2013): the CPU's conversions,
 * eight elements at a time (sixteen when packing), give the very bits of
 * the portable loops (float16 to float is exact, float to float16 one
 * rounding to nearest, ties to even, what xina_f2h() computes), at a
 * fraction of their cost.
 * Each returns how many elements it did: a multiple of 8, the rest is the
 * caller's.  xina_f16c says whether to use them: -1 until first asked
 * (selftests/xina_pack sets it to test both ways).
 */
int xina_f16c = -1;

#if defined(__x86_64__)
static bool xina_has_f16c(void)
{
	if (xina_f16c < 0)
		xina_f16c = __builtin_cpu_supports("avx2") &&
			    __builtin_cpu_supports("f16c");
	return xina_f16c;
}

/* Bytes of each 16-bit lane swapped: network order and back. */
#define XINA_SWAP16	_mm_setr_epi8(1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, \
				      13, 12, 15, 14)

/*
 * Sixteen 16-bit lanes clamped to +-@lim and put in network order.  The
 * lanes come from packing 32-bit integers, which saturates at 2^15 - 1
 * only lanes the clamp (@lim at most 2^15 - 1) takes to @lim anyway: one
 * clamp on the integers per sixteen lanes, where it was four on the
 * floats.
 */
__attribute__((target("avx2"), always_inline))
static inline __m256i xina_clamp16_swap(__m256i q, __m256i lim)
{
	const __m256i swap = _mm256_broadcastsi128_si256(XINA_SWAP16);

	q = _mm256_max_epi16(_mm256_min_epi16(q, lim),
			     _mm256_sub_epi16(_mm256_setzero_si256(), lim));
	return _mm256_shuffle_epi8(q, swap);
}

/*
 * The conversions to integers round in the current rounding mode (MXCSR),
 * the default one, to nearest, ties to even, that the portable loops'
 * rounding constant assumes as well (libxina.h): 375 ns per 4096
 * elements where rounding first by vroundps and clamping the floats took
 * 623 (xina-bench-packloop, in cache).
 */
__attribute__((target("avx2,f16c")))
static size_t xina_q16_f16c(uint16_t *restrict dst,
			    const uint16_t *restrict src, size_t cnt,
			    float scale, float lim)
{
	const __m256 sc = _mm256_set1_ps(scale);
	const __m256i l = _mm256_set1_epi16((int16_t)lim);
	__m256i q, q1;
	size_t i;

	for (i = 0; i + 16 <= cnt; i += 16) {
		q = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_cvtph_ps(
			_mm_loadu_si128((const void *)(src + i))), sc));
		q1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_cvtph_ps(
			_mm_loadu_si128((const void *)(src + i + 8))), sc));
		q = _mm256_permute4x64_epi64(_mm256_packs_epi32(q, q1), 0xd8);
		_mm256_storeu_si256((void *)(dst + i), xina_clamp16_swap(q, l));
	}
	for (; i + 8 <= cnt; i += 8) {	/* eight, packed twice: the low half */
		q = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_cvtph_ps(
			_mm_loadu_si128((const void *)(src + i))), sc));
		q = _mm256_permute4x64_epi64(_mm256_packs_epi32(q, q), 0xd8);
		_mm_storeu_si128((void *)(dst + i), _mm256_castsi256_si128(
					 xina_clamp16_swap(q, l)));
	}
	return i;
}

__attribute__((target("avx2,f16c")))
static size_t xina_dq16_f16c(uint16_t *restrict dst,
			     const uint16_t *restrict src, size_t cnt,
			     float scale)
{
	const __m256 sc = _mm256_set1_ps(scale);
	__m128i q;
	__m256 f;
	size_t i;

	for (i = 0; i + 8 <= cnt; i += 8) {
		q = _mm_shuffle_epi8(_mm_loadu_si128((const void *)(src + i)),
				     XINA_SWAP16);
		f = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(q)),
				  sc);
		_mm_storeu_si128((void *)(dst + i),
				 _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT));
	}
	return i;
}

/*
 * bfloat16 with AVX2, sixteen elements at a time.  A bfloat16 is the top
 * half of a float, so unpacking it above sixteen zero bits is the exact
 * conversion; the rest is the portable loops' arithmetic, lane by lane:
 * the products by @sa and @sb (by @sa alone when @sb is 1), rounding to
 * nearest even, the clamp, and back.  Unpacking and packing 16-bit lanes
 * both work within each 128-bit half, in matching orders, so the
 * elements come out where they went in, with no permutation.  Returns
 * the elements done, a multiple of 16: the rest is the caller's.
 */
__attribute__((target("avx2"), always_inline))
static inline size_t xina_q16_bf16_loop(uint16_t *restrict dst,
					const uint16_t *restrict src,
					size_t cnt, float sa, float sb,
					float lim, const bool two)
{
	const __m256 a = _mm256_set1_ps(sa), b = _mm256_set1_ps(sb);
	const __m256i zero = _mm256_setzero_si256();
	const __m256i l = _mm256_set1_epi16((int16_t)lim);
	__m256i h;
	__m256 vl, vh;
	size_t i;

	for (i = 0; i + 16 <= cnt; i += 16) {
		h = _mm256_loadu_si256((const void *)(src + i));
		vl = _mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, h));
		vh = _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, h));
		vl = _mm256_mul_ps(vl, a);
		vh = _mm256_mul_ps(vh, a);
		if (two) {
			vl = _mm256_mul_ps(vl, b);
			vh = _mm256_mul_ps(vh, b);
		}
		h = _mm256_packs_epi32(_mm256_cvtps_epi32(vl),
				       _mm256_cvtps_epi32(vh));
		_mm256_storeu_si256((void *)(dst + i), xina_clamp16_swap(h, l));
	}
	return i;
}

/* @sb is 1 where 2^s is a float (xina_bfp16_pack): one product. */
__attribute__((target("avx2")))
static size_t xina_q16_bf16_avx2(uint16_t *restrict dst,
				 const uint16_t *restrict src, size_t cnt,
				 float sa, float sb, float lim)
{
	return sb == 1.0f ?
	       xina_q16_bf16_loop(dst, src, cnt, sa, sb, lim, false) :
	       xina_q16_bf16_loop(dst, src, cnt, sa, sb, lim, true);
}

/* Eight floats to the nearest bfloat16, as xina_f2bf(), in 32-bit lanes. */
__attribute__((target("avx2"), always_inline))
static inline __m256i xina_f2bf8(__m256 f)
{
	__m256i u = _mm256_castps_si256(f);

	u = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)),
			     _mm256_and_si256(_mm256_srli_epi32(u, 16),
					      _mm256_set1_epi32(1)));
	return _mm256_srli_epi32(u, 16);
}

/*
 * Sums back, rounded as xina_f2bf.  A sum unpacked above sixteen zero bits
 * is Q * 2^16, exact as a float, and @scale16 = 2^(k - 16) a normal float
 * (the caller's check): Q * 2^k, with no shift to sign-extend Q.
 */
__attribute__((target("avx2")))
static size_t xina_dq16_bf16_avx2(uint16_t *restrict dst,
				  const uint16_t *restrict src, size_t cnt,
				  float scale16)
{
	const __m256 sc = _mm256_set1_ps(scale16);
	const __m256i zero = _mm256_setzero_si256();
	const __m256i swap = _mm256_broadcastsi128_si256(XINA_SWAP16);
	__m256i q, ul, uh;
	size_t i;

	for (i = 0; i + 16 <= cnt; i += 16) {
		q = _mm256_shuffle_epi8(_mm256_loadu_si256((const void *)(src + i)),
					swap);
		ul = _mm256_unpacklo_epi16(zero, q);
		uh = _mm256_unpackhi_epi16(zero, q);
		ul = xina_f2bf8(_mm256_mul_ps(_mm256_cvtepi32_ps(ul), sc));
		uh = xina_f2bf8(_mm256_mul_ps(_mm256_cvtepi32_ps(uh), sc));
		_mm256_storeu_si256((void *)(dst + i),
				    _mm256_packus_epi32(ul, uh));
	}
	return i;
}
#else
static bool xina_has_f16c(void)
{
	return false;
}

static size_t xina_q16_f16c(uint16_t *dst, const uint16_t *src, size_t cnt,
			    float scale, float lim)
{
	return 0;
}

static size_t xina_dq16_f16c(uint16_t *dst, const uint16_t *src,
			     size_t cnt, float scale)
{
	return 0;
}

static size_t xina_q16_bf16_avx2(uint16_t *dst, const uint16_t *src,
				 size_t cnt, float sa, float sb, float lim)
{
	return 0;
}

static size_t xina_dq16_bf16_avx2(uint16_t *dst, const uint16_t *src,
				  size_t cnt, float scale)
{
	return 0;
}
#endif

XINA_CLONES
static void xina_q16_bf16(uint16_t *restrict dst,
			  const uint16_t *restrict src, size_t cnt, float sa,
			  float sb, float lim)
{
	size_t done = xina_has_avx512() ?
		      xina_q16_bf16_avx512(dst, src, cnt, sa, sb, lim) : 0;

	if (xina_has_avx2())
		done += xina_q16_bf16_avx2(dst + done, src + done, cnt - done,
					   sa, sb, lim);

	xina_q16(dst + done, src + done, cnt - done, sa, sb, lim, true);
}

/*
 * x * 2^@s, 2^s a float: for a float16 x other than zero, |x| >= 2^-24
 * and |x * 2^s| < 2^15.  Only a block of zeros meets a larger s (an
 * exponent below float16's, a peer's, agreed by MAX): there 2^s would
 * overflow a float, and 0 * inf is NaN.  From s = 64 on, x * 2^s is 2^40
 * or more for every float16 x but zero, past any lane's clamp: s = 64
 * gives the same lanes, and a finite scale.
 */
XINA_CLONES
static void xina_q16_f16(uint16_t *restrict dst,
			 const uint16_t *restrict src, size_t cnt, int s,
			 float lim)
{
	size_t done;
	float sc;

	s = s > 64 ? 64 : s;
	sc = ldexpf(1.0f, s);
	done = xina_has_avx512() ? xina_q16_f16_avx512(dst, src, cnt, s, lim) :
				   0;
	if (xina_has_f16c())
		done += xina_q16_f16c(dst + done, src + done, cnt - done, sc,
				      lim);

	xina_q16(dst + done, src + done, cnt - done, sc, 1.0f, lim, false);
}

/* float16 into INT32 lanes: x * 2^s is exact in double (11 bits). */
XINA_CLONES
static void xina_q32_f16(uint32_t *restrict dst,
			 const uint16_t *restrict src, size_t cnt,
			 double scale, double lim)
{
	double v;
	size_t i;

	for (i = 0; i < cnt; i++) {
		v = (double)xina_h2f(src[i]) * scale;
		v = (v + XINA_RINT_MAGIC) - XINA_RINT_MAGIC;
		v = v > lim ? lim : v;
		v = v < -lim ? -lim : v;
		dst[i] = htonl((uint32_t)(int32_t)v);
	}
}

/*
 * Block floating point of 16-bit floats (libxina.h): q = rint(x * 2^s),
 * s = B - 1 - L - E, clamped to +-(2^(B-1-L) - 1), B = @k's lane bits:
 * 16 for bfloat16 and float16, 32 for float16 with XINA_OPT_F_F16_WIDE.
 */
void xina_bfp16_pack(const struct xina *x, const struct xina_codec *k,
		     void *dst, const uint16_t *src, size_t cnt, int32_t exp)
{
	int b = k->lane_bits - 1 - (int)x->headroom, s = b - exp;
	float sa, sb;

	if (exp == XINA_EXP_ZERO) {
		memset(dst, 0, cnt * k->lane_bits / 8);
		return;
	}
	if (k->lane_bits == 32) {
		xina_q32_f16(dst, src, cnt, ldexp(1.0, s), ldexp(1.0, b) - 1);
	} else if (k->type == XINA_TYPE_BFLOAT16) {
		xina_pow2_split(s, &sa, &sb);
		xina_q16_bf16(dst, src, cnt, sa, sb, ldexpf(1.0f, b) - 1);
	} else {
		xina_q16_f16(dst, src, cnt, s, ldexpf(1.0f, b) - 1);
	}
}

/*
 * The sums of INT16 lanes back, Q * 2^@k: exact in float for every |Q| <=
 * 2^15 while 2^k is a normal float (-126 <= k <= 127; bfloat16 blocks of
 * values near its smallest take the general path), then rounded once.
 */
static inline __attribute__((always_inline)) void
xina_dq16(uint16_t *restrict dst, const uint16_t *restrict src, size_t cnt,
	  float scale, const bool bf16)
{
	size_t i;
	float f;

	for (i = 0; i < cnt; i++) {
		f = (float)(int16_t)ntohs(src[i]) * scale;
		dst[i] = bf16 ? xina_f2bf(f) : xina_f2h(f);
	}
}

XINA_CLONES
static void xina_dq16_bf16(uint16_t *restrict dst,
			   const uint16_t *restrict src, size_t cnt, int k)
{
	size_t done = 0;

	/* the vector loops scale by 2^(k - 16), a normal float from here up */
	if (k >= -110) {
		float s16 = ldexpf(1.0f, k - 16);

		if (xina_has_avx512())
			done = xina_dq16_bf16_avx512(dst, src, cnt, s16);
		if (xina_has_avx2())
			done += xina_dq16_bf16_avx2(dst + done, src + done,
						    cnt - done, s16);
	}
	xina_dq16(dst + done, src + done, cnt - done, ldexpf(1.0f, k), true);
}

XINA_CLONES
static void xina_dq16_f16(uint16_t *restrict dst,
			  const uint16_t *restrict src, size_t cnt,
			  float scale)
{
	size_t done = xina_has_avx512() ?
		      xina_dq16_f16_avx512(dst, src, cnt, scale) : 0;

	if (xina_has_f16c())
		done += xina_dq16_f16c(dst + done, src + done, cnt - done,
				       scale);

	xina_dq16(dst + done, src + done, cnt - done, scale, false);
}

/*
 * float16's sums of INT32 lanes back: Q * 2^k is exact in double, and a
 * float between 2^-54 and 2^25 here.  Rounded to float to odd (truncated,
 * the last bit set when inexact), then to float16 to nearest: with 13 bits
 * to spare, the same as one rounding of the double (round to odd).
 */
XINA_CLONES
static void xina_dq32_f16(uint16_t *restrict dst,
			  const uint32_t *restrict src, size_t cnt,
			  double scale)
{
	uint32_t b, up;
	double d;
	size_t i;
	float f;

	for (i = 0; i < cnt; i++) {
		d = (double)(int32_t)ntohl(src[i]) * scale;
		f = (float)d;
		memcpy(&b, &f, sizeof(b));
		up = -(uint32_t)(fabs((double)f) > fabs(d));
		b = (b + up) | (-(uint32_t)((double)f != d) & 1);
		memcpy(&f, &b, sizeof(f));
		dst[i] = xina_f2h(f);
	}
}

/* The sums back: Q * 2^-s (exact), / @div for AVG, rounded once. */
void xina_bfp16_unpack(const struct xina *x, const struct xina_codec *k,
		       uint16_t *dst, const void *src, size_t cnt,
		       int32_t exp, unsigned int div)
{
	bool bf16 = k->type == XINA_TYPE_BFLOAT16;
	int e = exp - k->lane_bits + 1 + (int)x->headroom;
	double unscale, q;
	size_t i;

	if (exp == XINA_EXP_ZERO) {
		memset(dst, 0, cnt * sizeof(*dst));
		return;
	}
	if (k->lane_bits == 32 && div == 1) {
		xina_dq32_f16(dst, src, cnt, ldexp(1.0, e));
		return;
	}
	if (k->lane_bits == 16 && div == 1 && e >= -126 && e <= 127) {
		if (bf16)
			xina_dq16_bf16(dst, src, cnt, e);
		else
			xina_dq16_f16(dst, src, cnt, ldexpf(1.0f, e));
		return;
	}
	unscale = ldexp(1.0, e);
	for (i = 0; i < cnt; i++) {
		q = k->lane_bits == 16 ?
			(int16_t)ntohs(((const uint16_t *)src)[i]) :
			(int32_t)ntohl(((const uint32_t *)src)[i]);
		dst[i] = xina_d2h(q * unscale / div, bf16);
	}
}

/* The vector paths the float loops take on this CPU (XINA_VEC_*). */
uint32_t xina_vec_paths(void)
{
	uint32_t v = 0;

	if (xina_has_avx2())
		v |= XINA_VEC_AVX2;
	if (xina_has_f16c())
		v |= XINA_VEC_F16C;
	if (xina_has_avx512()) {
		v |= XINA_VEC_AVX512;
		if (xina_avx512 & XINA_AVX512_BF16)
			v |= XINA_VEC_AVX512_BF16;
		if (xina_avx512 & XINA_AVX512_FP16)
			v |= XINA_VEC_AVX512_FP16;
	}
	return v;
}
