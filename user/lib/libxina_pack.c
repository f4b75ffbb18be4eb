// SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause)
/*
 * libxina's element loops: one block of the caller's tensor into its
 * packet (network byte order; float32 quantised) and one result back.
 * They touch every byte a worker sends and receives, so they are built
 * apart from the rest (user/lib/build.mk): at -O3, and twice, for AVX2 and for
 * the x86-64 baseline, picked at load time (target_clones: the baseline
 * has no byte shuffle, so its byte swaps stay scalar).  Both clones give
 * the same bits: every float operation below is exact or correctly
 * rounded (a product by a power of two, an addition of the rounding
 * constant, a conversion), and contraction into FMA is off for this file.
 */
#include <arpa/inet.h>
#include <math.h>
#include <string.h>

#include "libxina_int.h"

#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define XINA_CLONES	__attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef XINA_CLONES
#define XINA_CLONES
#endif

/* Scale exponent s of a block with agreed exponent @e: x * 2^s fits. */
static int xina_scale(const struct xina *x, int32_t e)
{
	return 31 - (int)x->headroom - e;
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
 * Quantise one block straight into its packet (network order), called
 * just before the block is sent: the floats are read once, while they are
 * still in the cache, and no scratch tensor is written and read back.
 */
void xina_f32_pack(const struct xina *x, uint32_t *dst, const float *src,
		   size_t cnt, int32_t exp)
{
	if (exp == XINA_EXP_ZERO) {
		memset(dst, 0, cnt * sizeof(*dst));
		return;
	}
	/* 2^s may not be a float, but is a double: x * 2^s is exact. */
	xina_f32_quantise(dst, src, cnt, ldexp(1.0, xina_scale(x, exp)),
			  (double)((1l << (31 - x->headroom)) - 1));
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

/*
 * Dequantise one result as it arrives.  Q * 2^-s is exact in double; the
 * conversion to float is the one rounding, the same on every worker.
 */
void xina_f32_unpack(const struct xina *x, float *dst, const uint32_t *src,
		     size_t cnt, int32_t exp)
{
	if (exp == XINA_EXP_ZERO) {
		memset(dst, 0, cnt * sizeof(*dst));
		return;
	}
	xina_f32_dequantise(dst, src, cnt, ldexp(1.0, -xina_scale(x, exp)));
}
