// SPDX-License-Identifier: GPL-2.0
/*
 * The kfunc's SUM loop in SSE2/SSSE3 (x86-64): four words per step,
 * byte-swapped into host order with one pshufb, then added as four 32-bit
 * lanes (paddd), eight 16-bit lanes (paddw) or sixteen 8-bit lanes
 * (paddb).  A host-order word in memory holds its INT16 elements in its
 * two 16-bit halves and its INT8 elements in its four bytes (little
 * endian: the first element, the word's high bits, in the higher half or
 * byte), so the narrow adds are the lane-wise wrapping sums of
 * bpf/xina_lanes.h whatever the elements' order within the word.  This
 * file alone is built with vector instructions (kmod/Kbuild); its function
 * may only run between kernel_fpu_begin() and kernel_fpu_end().  Used when
 * the module parameter simd is set, for the measurement in
 * Documentation/module.rst.
 */
#include <linux/types.h>

#include "xina.h"
#include "xina_lanes.h"

/* Lane i takes byte bswap32_idx[i]: the bytes of each 32-bit word reversed. */
static const u8 bswap32_idx __attribute__((vector_size(16))) = {
	3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12,
};

typedef u32 xina_v4u32 __attribute__((vector_size(16)));
typedef u16 xina_v8u16 __attribute__((vector_size(16)));
typedef u8 xina_v16u8 __attribute__((vector_size(16)));

/* Four words of @el in host order (they are only 2-byte aligned). */
static __always_inline xina_v16u8 xina_simd_load(const __be32 *el)
{
	xina_v16u8 b;

	__builtin_memcpy(&b, el, sizeof(b));
	return __builtin_shuffle(b, bswap32_idx);
}

/* One word of @el in host order, for the tail. */
static __always_inline u32 xina_simd_word(const __be32 *el)
{
	__be32 w;

	__builtin_memcpy(&w, el, sizeof(w));
	return be32_to_cpu(w);
}

/* Four words of @val plus four of @el, by lanes of 32, 16 or 8 bits. */
static __always_inline void xina_simd_step(u32 *val, const __be32 *el,
					   const u8 dtype)
{
	xina_v16u8 b = xina_simd_load(el);
	xina_v4u32 a;

	__builtin_memcpy(&a, val, sizeof(a));
	if (dtype == XINA_DTYPE_INT16)
		a = (xina_v4u32)((xina_v8u16)a + (xina_v8u16)b);
	else if (dtype == XINA_DTYPE_INT8)
		a = (xina_v4u32)((xina_v16u8)a + b);
	else
		a += (xina_v4u32)b;
	__builtin_memcpy(val, &a, sizeof(a));
}

void xina_simd_add(u32 *val, const __be32 *el, u16 count, u8 dtype)
{
	u16 i = 0;

	switch (dtype) {
	case XINA_DTYPE_INT16:
		for (; i + 4 <= count; i += 4)
			xina_simd_step(&val[i], &el[i], XINA_DTYPE_INT16);
		for (; i < count; i++)
			val[i] = xina_sum16(val[i], xina_simd_word(&el[i]));
		return;
	case XINA_DTYPE_INT8:
		for (; i + 4 <= count; i += 4)
			xina_simd_step(&val[i], &el[i], XINA_DTYPE_INT8);
		for (; i < count; i++)
			val[i] = xina_sum8(val[i], xina_simd_word(&el[i]));
		return;
	default:
		for (; i + 4 <= count; i += 4)
			xina_simd_step(&val[i], &el[i], XINA_DTYPE_INT32);
		for (; i < count; i++)
			val[i] += xina_simd_word(&el[i]);
	}
}
