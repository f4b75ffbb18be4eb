// SPDX-License-Identifier: GPL-2.0
/*
 * The kfunc's add loop in SSE2/SSSE3 (x86-64): four elements per step,
 * byte-swapped with one pshufb.  This file alone is built with vector
 * instructions (kmod/Kbuild); its function may only run between
 * kernel_fpu_begin() and kernel_fpu_end().  Used when the module parameter
 * simd is set, for the measurement in Documentation/module.rst.
 */
#include <linux/types.h>

#include "xina.h"

/* Lane i takes byte bswap32_idx[i]: the bytes of each 32-bit word reversed. */
static const u8 bswap32_idx __attribute__((vector_size(16))) = {
	3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12,
};

void xina_simd_add(u32 *val, const __be32 *el, u16 count)
{
	u8 __attribute__((vector_size(16))) b;
	u32 __attribute__((vector_size(16))) a;
	u16 i;

	/* memcpy: the elements are only 2-byte aligned in the packet. */
	for (i = 0; i + 4 <= count; i += 4) {
		__builtin_memcpy(&b, &el[i], sizeof(b));
		b = __builtin_shuffle(b, bswap32_idx);
		__builtin_memcpy(&a, &val[i], sizeof(a));
		a += (typeof(a))b;
		__builtin_memcpy(&val[i], &a, sizeof(a));
	}
	for (; i < count; i++) {
		__builtin_memcpy(&a[0], &el[i], sizeof(a[0]));
		val[i] += be32_to_cpu((__force __be32)a[0]);
	}
}
