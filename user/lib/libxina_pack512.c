// SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause)
/*
 * libxina's float element loops with AVX-512 (F and BW: Xeons since
 * Skylake-SP, Ice Lake, Zen 4): those of libxina_pack.c's AVX2 and F16C
 * paths, sixteen 32-bit lanes a step where those take eight.  Each step is
 * the AVX2 loop's, lane for lane: the same products by powers of two, the
 * same conversions rounding in the current mode (to nearest, ties to even,
 * libxina.h), the same clamps on the integers, so the bits are those of
 * the AVX2 loops and of the portable ones.  Two take a shorter way where
 * the CPU has the extension (Sapphire Rapids; bfloat16's also Cooper
 * Lake and Zen 4), with the same bits, argued at each: float16's packing
 * in float16 arithmetic (AVX512_FP16), bfloat16's unpacking by the CPU's
 * rounding to bfloat16 (AVX512_BF16).  selftests/xina_pack checks every
 * path against the definition.  libxina_pack.c calls these first and its
 * AVX2 loops on what is left.  float32's unpacking has none: with
 * AVX-512 it took 10% longer than with AVX2 (231-265 ns per packet
 * against 211-218).
 *
 * Each returns how many elements it did, a multiple of 16 or 32; the rest
 * is the caller's.  xina_avx512 says whether to use them: -1 until first
 * asked, 0 no, else XINA_AVX512_F and the extensions to use as well
 * (selftests/xina_pack and xina-bench-packloop set it).
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "libxina_int.h"

int xina_avx512 = -1;

#if defined(__x86_64__)
#define XINA_AVX512	"avx512f,avx512bw"

bool xina_has_avx512(void)
{
	if (xina_avx512 < 0) {
		xina_avx512 = 0;
		if (__builtin_cpu_supports("avx512f") &&
		    __builtin_cpu_supports("avx512bw"))
			xina_avx512 = XINA_AVX512_F |
				(__builtin_cpu_supports("avx512bf16") ?
				 XINA_AVX512_BF16 : 0) |
				(__builtin_cpu_supports("avx512fp16") ?
				 XINA_AVX512_FP16 : 0);
	}
	return xina_avx512;
}

/* Bytes swapped within each 32-bit and each 16-bit lane: network order. */
#define XINA_SWAP32_128	_mm_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, \
				      15, 14, 13, 12)
#define XINA_SWAP16_128	_mm_setr_epi8(1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, \
				      13, 12, 15, 14)

/*
 * float32 into INT32 lanes: x * @sa (* @sb), lanes at 2^31 or more set to
 * INT32_MAX before the conversion would make them INT32_MIN, the clamp to
 * +-@lim on the integers (xina_q32_loop()'s comment says why).
 */
__attribute__((target(XINA_AVX512), always_inline))
static inline size_t xina_q32_loop512(uint32_t *restrict dst,
				      const float *restrict src, size_t cnt,
				      float sa, float sb, int32_t lim,
				      const bool two)
{
	const __m512 a = _mm512_set1_ps(sa), b = _mm512_set1_ps(sb);
	const __m512 two31 = _mm512_set1_ps(0x1p31f);
	const __m512i hi = _mm512_set1_epi32(lim), lo = _mm512_set1_epi32(-lim);
	const __m512i max = _mm512_set1_epi32(INT32_MAX);
	const __m512i swap = _mm512_broadcast_i32x4(XINA_SWAP32_128);
	__m512i q;
	__m512 v;
	size_t i;

	for (i = 0; i + 16 <= cnt; i += 16) {
		v = _mm512_mul_ps(_mm512_loadu_ps(src + i), a);
		if (two)
			v = _mm512_mul_ps(v, b);
		q = _mm512_mask_mov_epi32(_mm512_cvtps_epi32(v),
					  _mm512_cmp_ps_mask(v, two31,
							     _CMP_GE_OQ), max);
		q = _mm512_max_epi32(_mm512_min_epi32(q, hi), lo);
		_mm512_storeu_si512(dst + i, _mm512_shuffle_epi8(q, swap));
	}
	return i;
}

__attribute__((target(XINA_AVX512)))
size_t xina_q32_avx512(uint32_t *restrict dst, const float *restrict src,
		       size_t cnt, float sa, float sb, int32_t lim)
{
	return sb == 1.0f ?
	       xina_q32_loop512(dst, src, cnt, sa, sb, lim, false) :
	       xina_q32_loop512(dst, src, cnt, sa, sb, lim, true);
}

/* Thirty-two 16-bit lanes clamped to +-@lim, in network order. */
__attribute__((target(XINA_AVX512), always_inline))
static inline __m512i xina_clamp16_swap512(__m512i q, __m512i lim)
{
	q = _mm512_max_epi16(_mm512_min_epi16(q, lim),
			     _mm512_sub_epi16(_mm512_setzero_si512(), lim));
	return _mm512_shuffle_epi8(q, _mm512_broadcast_i32x4(XINA_SWAP16_128));
}

/*
 * The same with AVX512_FP16 (Sapphire Rapids), in float16 arithmetic, 32
 * lanes a step with no conversion to float and back.  x * 2^s by scalef
 * is exact: |x * 2^s| < 2^15 (the block exponent bounds it), far inside
 * float16's range, unless it underflows, and then it is below 2^-14 and
 * rounds to 0 as the exact product would.  The conversion to 16-bit
 * integers rounds in the current mode, as the others do, and cannot
 * overflow: the largest float16 below 2^15 is 32752, an integer.  2^s
 * need not be a float16, scalef takes s itself (at most 64, exact:
 * xina_q16_f16() caps it).
 */
__attribute__((target(XINA_AVX512 ",avx512fp16")))
static size_t xina_q16_f16_fp16(uint16_t *restrict dst,
				const uint16_t *restrict src, size_t cnt,
				int s, int16_t lim)
{
	const __m512h sc = _mm512_set1_ph((_Float16)s);
	const __m512i l = _mm512_set1_epi16(lim);
	__m512i q;
	size_t i;

	for (i = 0; i + 32 <= cnt; i += 32) {
		q = _mm512_cvtph_epi16(_mm512_scalef_ph(_mm512_castsi512_ph(
			_mm512_loadu_si512(src + i)), sc));
		_mm512_storeu_si512(dst + i, xina_clamp16_swap512(q, l));
	}
	return i;
}

/*
 * float16 into INT16 lanes: converted exactly to float, times @scale,
 * rounded to integers, packed with saturation (which only touches lanes
 * the clamp takes to @lim anyway).  Packing two vectors interleaves their
 * 64-bit quarters within each 128-bit lane; one permutation restores the
 * order.
 */
__attribute__((target(XINA_AVX512)))
size_t xina_q16_f16_avx512(uint16_t *restrict dst,
			   const uint16_t *restrict src, size_t cnt,
			   int s, float lim)
{
	const __m512 sc = _mm512_set1_ps(ldexpf(1.0f, s));
	const __m512i l = _mm512_set1_epi16((int16_t)lim);
	const __m512i order = _mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7);
	__m512i q, q1;
	size_t i;

	if (xina_avx512 & XINA_AVX512_FP16)
		return xina_q16_f16_fp16(dst, src, cnt, s, (int16_t)lim);
	for (i = 0; i + 32 <= cnt; i += 32) {
		q = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_cvtph_ps(
			_mm256_loadu_si256((const void *)(src + i))), sc));
		q1 = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_cvtph_ps(
			_mm256_loadu_si256((const void *)(src + i + 16))), sc));
		q = _mm512_permutexvar_epi64(order, _mm512_packs_epi32(q, q1));
		_mm512_storeu_si512(dst + i, xina_clamp16_swap512(q, l));
	}
	return i;
}

/*
 * Thirty-two sums of INT16 lanes at @src as floats, times @sc: Q * 2^k,
 * exact, the first sixteen in *@f0.
 */
__attribute__((target(XINA_AVX512), always_inline))
static inline void xina_sums32(const uint16_t *src, __m512 sc, __m512 *f0,
			       __m512 *f1)
{
	__m512i q = _mm512_shuffle_epi8(_mm512_loadu_si512(src),
					_mm512_broadcast_i32x4(XINA_SWAP16_128));

	*f0 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(
		_mm512_castsi512_si256(q))), sc);
	*f1 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(
		_mm512_extracti64x4_epi64(q, 1))), sc);
}

/* The sums back: float(Q) * @scale, rounded once to float16 (to nearest). */
__attribute__((target(XINA_AVX512)))
size_t xina_dq16_f16_avx512(uint16_t *restrict dst,
			    const uint16_t *restrict src, size_t cnt,
			    float scale)
{
	const __m512 sc = _mm512_set1_ps(scale);
	__m512 f0, f1;
	size_t i;

	for (i = 0; i + 32 <= cnt; i += 32) {
		xina_sums32(src + i, sc, &f0, &f1);
		_mm256_storeu_si256((void *)(dst + i),
				    _mm512_cvtps_ph(f0, _MM_FROUND_TO_NEAREST_INT));
		_mm256_storeu_si256((void *)(dst + i + 16),
				    _mm512_cvtps_ph(f1, _MM_FROUND_TO_NEAREST_INT));
	}
	return i;
}

/*
 * bfloat16 into INT16 lanes: a bfloat16 unpacked above sixteen zero bits
 * is its float, exactly; unpacking and packing 16-bit lanes both work
 * within each 128-bit lane, in matching orders, so the elements come out
 * where they went in (as in xina_q16_bf16_loop()).
 */
__attribute__((target(XINA_AVX512), always_inline))
static inline size_t xina_q16_bf16_loop512(uint16_t *restrict dst,
					   const uint16_t *restrict src,
					   size_t cnt, float sa, float sb,
					   float lim, const bool two)
{
	const __m512 a = _mm512_set1_ps(sa), b = _mm512_set1_ps(sb);
	const __m512i zero = _mm512_setzero_si512();
	const __m512i l = _mm512_set1_epi16((int16_t)lim);
	__m512 vl, vh;
	__m512i h;
	size_t i;

	for (i = 0; i + 32 <= cnt; i += 32) {
		h = _mm512_loadu_si512(src + i);
		vl = _mm512_castsi512_ps(_mm512_unpacklo_epi16(zero, h));
		vh = _mm512_castsi512_ps(_mm512_unpackhi_epi16(zero, h));
		vl = _mm512_mul_ps(vl, a);
		vh = _mm512_mul_ps(vh, a);
		if (two) {
			vl = _mm512_mul_ps(vl, b);
			vh = _mm512_mul_ps(vh, b);
		}
		h = _mm512_packs_epi32(_mm512_cvtps_epi32(vl),
				       _mm512_cvtps_epi32(vh));
		_mm512_storeu_si512(dst + i, xina_clamp16_swap512(h, l));
	}
	return i;
}

__attribute__((target(XINA_AVX512)))
size_t xina_q16_bf16_avx512(uint16_t *restrict dst,
			    const uint16_t *restrict src, size_t cnt,
			    float sa, float sb, float lim)
{
	return sb == 1.0f ?
	       xina_q16_bf16_loop512(dst, src, cnt, sa, sb, lim, false) :
	       xina_q16_bf16_loop512(dst, src, cnt, sa, sb, lim, true);
}

/* Sixteen floats to the nearest bfloat16, as xina_f2bf(), in 32-bit lanes. */
__attribute__((target(XINA_AVX512), always_inline))
static inline __m512i xina_f2bf16(__m512 f)
{
	__m512i u = _mm512_castps_si512(f);

	u = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)),
			     _mm512_and_si512(_mm512_srli_epi32(u, 16),
					      _mm512_set1_epi32(1)));
	return _mm512_srli_epi32(u, 16);
}

/*
 * The same with AVX512_BF16 (Cooper Lake, Sapphire Rapids, Zen 4): its
 * conversion of floats to bfloat16 rounds to nearest, ties to even, as
 * xina_f2bf() does for every float that is not subnormal (it flushes
 * those to zero), and these are not: Q * 2^k, with 2^k a normal float
 * (k >= -126, the caller's check), is zero or at least 2^-126 in
 * magnitude.  Sign-extended, Q converts exactly with no 2^16 to undo.
 */
__attribute__((target(XINA_AVX512 ",avx512bf16")))
static size_t xina_dq16_bf16_cvtne(uint16_t *restrict dst,
				   const uint16_t *restrict src, size_t cnt,
				   float scale)
{
	const __m512 sc = _mm512_set1_ps(scale);
	__m512 f0, f1;
	size_t i;

	for (i = 0; i + 32 <= cnt; i += 32) {
		xina_sums32(src + i, sc, &f0, &f1);
		_mm512_storeu_si512(dst + i, (__m512i)_mm512_cvtne2ps_pbh(f1,
									   f0));
	}
	return i;
}

/*
 * The sums back, rounded as xina_f2bf(): a sum unpacked above sixteen zero
 * bits is Q * 2^16, exact as a float, times @scale16 = 2^(k - 16), a
 * normal float (the caller's check), as in xina_dq16_bf16_avx2().
 */
__attribute__((target(XINA_AVX512)))
size_t xina_dq16_bf16_avx512(uint16_t *restrict dst,
			     const uint16_t *restrict src, size_t cnt,
			     float scale16)
{
	const __m512 sc = _mm512_set1_ps(scale16);
	const __m512i zero = _mm512_setzero_si512();
	const __m512i swap = _mm512_broadcast_i32x4(XINA_SWAP16_128);
	__m512i q, ul, uh;
	size_t i;

	if (xina_avx512 & XINA_AVX512_BF16)
		return xina_dq16_bf16_cvtne(dst, src, cnt, scale16 * 0x1p16f);
	for (i = 0; i + 32 <= cnt; i += 32) {
		q = _mm512_shuffle_epi8(_mm512_loadu_si512(src + i), swap);
		ul = _mm512_unpacklo_epi16(zero, q);
		uh = _mm512_unpackhi_epi16(zero, q);
		ul = xina_f2bf16(_mm512_mul_ps(_mm512_cvtepi32_ps(ul), sc));
		uh = xina_f2bf16(_mm512_mul_ps(_mm512_cvtepi32_ps(uh), sc));
		_mm512_storeu_si512(dst + i, _mm512_packus_epi32(ul, uh));
	}
	return i;
}

#else
bool xina_has_avx512(void)
{
	return false;
}

size_t xina_q32_avx512(uint32_t *dst, const float *src, size_t cnt,
		       float sa, float sb, int32_t lim)
{
	return 0;
}

size_t xina_q16_f16_avx512(uint16_t *dst, const uint16_t *src, size_t cnt,
			   int s, float lim)
{
	return 0;
}

size_t xina_dq16_f16_avx512(uint16_t *dst, const uint16_t *src, size_t cnt,
			    float scale)
{
	return 0;
}

size_t xina_q16_bf16_avx512(uint16_t *dst, const uint16_t *src, size_t cnt,
			    float sa, float sb, float lim)
{
	return 0;
}

size_t xina_dq16_bf16_avx512(uint16_t *dst, const uint16_t *src,
			     size_t cnt, float scale16)
{
	return 0;
}
#endif
