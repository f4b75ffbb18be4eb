/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xina_ref: the tests' reference of every (dtype, op) pair of the wire,
 * shared by selftests/xina_fastpath.c (the XDP fast path), selftests/vm/
 * xina_kfunc.c (xina.ko's kfuncs) and selftests/xina_ringtest.c (libxina's
 * fallback ring).
 *
 * It is what checks bpf/xina_lanes.h, so it must not share its code: plain
 * per-element C on int8_t .. int64_t, no SWAR, no lanes within a word.  A
 * pair's fold takes and gives elements sign-extended to int64_t; the
 * words are packed by the rules of include/uapi/linux/xina.h: INT16 two
 * elements a word and INT8 four, the first in the high bits; INT64 two
 * words an element, high first.  Words are in host order (ntohl() of the
 * wire's).
 */
#ifndef XINA_REF_H
#define XINA_REF_H

#include <stdint.h>
#include <string.h>

#include "../include/uapi/linux/xina.h"

/* Every dtype and op of the wire, in the tests' order. */
static const uint8_t XREF_DTYPES[] = {
	XINA_DTYPE_INT8, XINA_DTYPE_INT16, XINA_DTYPE_INT32, XINA_DTYPE_INT64,
};
static const uint8_t XREF_OPS[] = {
	XINA_OP_SUM, XINA_OP_MAX, XINA_OP_MIN, XINA_OP_AND, XINA_OP_OR,
	XINA_OP_XOR,
};

#define XREF_NDTYPES	(sizeof(XREF_DTYPES) / sizeof(XREF_DTYPES[0]))
#define XREF_NOPS	(sizeof(XREF_OPS) / sizeof(XREF_OPS[0]))
#define XREF_NPAIRS	(XREF_NDTYPES * XREF_NOPS)

static inline const char *xref_dtype_name(uint32_t dtype)
{
	switch (dtype) {
	case XINA_DTYPE_INT8:
		return "int8";
	case XINA_DTYPE_INT16:
		return "int16";
	case XINA_DTYPE_INT32:
		return "int32";
	case XINA_DTYPE_INT64:
		return "int64";
	default:
		return "dtype?";
	}
}

static inline const char *xref_op_name(uint32_t op)
{
	switch (op) {
	case XINA_OP_SUM:
		return "sum";
	case XINA_OP_MAX:
		return "max";
	case XINA_OP_MIN:
		return "min";
	case XINA_OP_AND:
		return "and";
	case XINA_OP_OR:
		return "or";
	case XINA_OP_XOR:
		return "xor";
	default:
		return "op?";
	}
}

/* Bits of an element of @dtype. */
static inline unsigned int xref_bits(uint32_t dtype)
{
	switch (dtype) {
	case XINA_DTYPE_INT8:
		return 8;
	case XINA_DTYPE_INT16:
		return 16;
	case XINA_DTYPE_INT64:
		return 64;
	default:
		return 32;
	}
}

/* Elements of @dtype in @words words (INT64: words / 2). */
static inline unsigned int xref_elems(uint32_t dtype, unsigned int words)
{
	return words * 32 / xref_bits(dtype);
}

/* The type's least and greatest values. */
static inline int64_t xref_min(uint32_t dtype)
{
	return xref_bits(dtype) == 64 ? INT64_MIN :
	       -((int64_t)1 << (xref_bits(dtype) - 1));
}

static inline int64_t xref_max(uint32_t dtype)
{
	return xref_bits(dtype) == 64 ? INT64_MAX :
	       ((int64_t)1 << (xref_bits(dtype) - 1)) - 1;
}

/* The low @bits bits of @x, sign-extended: a value in range of the type. */
static inline int64_t xref_sext(uint64_t x, unsigned int bits)
{
	if (bits == 64)
		return (int64_t)x;
	return (int64_t)(x << (64 - bits)) >> (64 - bits);
}

/* Pseudo-random numbers: splitmix64's mix of @x, a hash of it. */
#define XREF_GOLDEN	0x9e3779b97f4a7c15ULL

static inline uint64_t xref_mix64(uint64_t x)
{
	x += XREF_GOLDEN;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* The next number of the splitmix64 sequence of state @s. */
static inline uint64_t xref_rand(uint64_t *s)
{
	uint64_t x = xref_mix64(*s);

	*s += XREF_GOLDEN;
	return x;
}

/* @op on two elements of type T: SUM wraps (through the unsigned type). */
#define XREF_FOLD(T, UT, op, a, b)					\
	((op) == XINA_OP_SUM ? (T)(UT)((UT)(a) + (UT)(b)) :		\
	 (op) == XINA_OP_MAX ? ((a) > (b) ? (a) : (b)) :		\
	 (op) == XINA_OP_MIN ? ((a) < (b) ? (a) : (b)) :		\
	 (op) == XINA_OP_AND ? (T)((a) & (b)) :				\
	 (op) == XINA_OP_OR ? (T)((a) | (b)) : (T)((a) ^ (b)))

/* The reference: elements @x and @y of @dtype combined by @op. */
static inline int64_t xref_fold(uint32_t dtype, uint32_t op, int64_t x,
				int64_t y)
{
	int8_t a8 = x, b8 = y;
	int16_t a16 = x, b16 = y;
	int32_t a32 = x, b32 = y;

	switch (dtype) {
	case XINA_DTYPE_INT8:
		return XREF_FOLD(int8_t, uint8_t, op, a8, b8);
	case XINA_DTYPE_INT16:
		return XREF_FOLD(int16_t, uint16_t, op, a16, b16);
	case XINA_DTYPE_INT64:
		return XREF_FOLD(int64_t, uint64_t, op, x, y);
	default:
		return XREF_FOLD(int32_t, uint32_t, op, a32, b32);
	}
}

/* Element @i of the words @w as @dtype. */
static inline int64_t xref_get(uint32_t dtype, const uint32_t *w,
			       unsigned int i)
{
	switch (dtype) {
	case XINA_DTYPE_INT8:
		return (int8_t)(w[i / 4] >> (24 - 8 * (i % 4)));
	case XINA_DTYPE_INT16:
		return (int16_t)(w[i / 2] >> (16 - 16 * (i % 2)));
	case XINA_DTYPE_INT64:
		return (int64_t)((uint64_t)w[2 * i] << 32 | w[2 * i + 1]);
	default:
		return (int32_t)w[i];
	}
}

/* Element @i of the words @w set to @v, the word's other lanes kept. */
static inline void xref_set(uint32_t dtype, uint32_t *w, unsigned int i,
			    int64_t v)
{
	unsigned int s;

	switch (dtype) {
	case XINA_DTYPE_INT8:
		s = 24 - 8 * (i % 4);
		w[i / 4] = (w[i / 4] & ~(0xffu << s)) | (uint32_t)(uint8_t)v << s;
		break;
	case XINA_DTYPE_INT16:
		s = 16 - 16 * (i % 2);
		w[i / 2] = (w[i / 2] & ~(0xffffu << s)) |
			   (uint32_t)(uint16_t)v << s;
		break;
	case XINA_DTYPE_INT64:
		w[2 * i] = (uint64_t)v >> 32;
		w[2 * i + 1] = (uint32_t)v;
		break;
	default:
		w[i] = (uint32_t)v;
		break;
	}
}

/* @n elements into @words words, the lanes beyond them 0. */
static inline void xref_pack(uint32_t dtype, const int64_t *e, unsigned int n,
			     uint32_t *w, unsigned int words)
{
	unsigned int i;

	memset(w, 0, words * sizeof(*w));
	for (i = 0; i < n; i++)
		xref_set(dtype, w, i, e[i]);
}

#endif /* XINA_REF_H */
