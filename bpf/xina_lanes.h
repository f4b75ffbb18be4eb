/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-3-Clause) */
/*
 * The arithmetic of every (dtype, op) pair of the wire format, on the
 * 32-bit words a slot holds, in one header shared by the XDP fast path
 * (bpf/), xina.ko (kmod/), xina-swagg and the tests' reference, so that no
 * two aggregators can disagree (as bpf/xina_join.h for the join).  Plain C
 * on __u32/__u64, no loop: callers loop over words with their own bounds.
 *
 * A word is in host order, as ntohl() of the wire's word: an INT16 word
 * holds two elements (the first in bits 31..16), an INT8 word four (the
 * first in bits 31..24), and an INT64 element is two words, high first,
 * i.e. the 64-bit value ((__u64)w[2i] << 32 | w[2i+1]).  All types are two's
 * complement: SUM wraps modulo 2^width within each lane (no carry crosses
 * a lane), MIN and MAX compare lanes as signed, AND, OR and XOR are bitwise
 * (the lane width does not matter).
 *
 * Word combines for 8 and 16-bit lanes are SWAR: the lanes' low bits are
 * added with the top bit of every lane masked off (so no carry leaves a
 * lane), and the top bits are put back with an XOR; MIN and MAX pick each
 * lane by a signed compare, made a mask without a branch.  Each function is exact for every input:
 * selftests/xina_fastpath.c checks them against per-element arithmetic.
 */
#ifndef XINA_LANES_H
#define XINA_LANES_H

#include <linux/types.h>
#include "../include/uapi/linux/xina.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

/*
 * Whether a contribution of @count words may carry @dtype and @op: the
 * switch's drop_op test, besides "the same pair as the round".
 */
static __always_inline int xina_dtype_op_ok(__u32 dtype, __u32 op,
					    __u32 count)
{
	if (dtype < XINA_DTYPE_INT32 || dtype >= __XINA_DTYPE_MAX)
		return 0;
	if (op < XINA_OP_SUM || op >= __XINA_OP_WIRE_MAX)
		return 0;
	return dtype != XINA_DTYPE_INT64 || !(count & 1);
}

/*
 * May a contribution of @op be XINA_F_ZERO (no words: all zero)?  Only if
 * the zero word is the op's identity, so that adding nothing is combining
 * zeros: SUM, OR and XOR, on every lane width.
 */
static __always_inline int xina_op_zero_ok(__u32 op)
{
	return op == XINA_OP_SUM || op == XINA_OP_OR || op == XINA_OP_XOR;
}

/* Lane-wise wrapping sum; @m is the lanes' top bits. */
static __always_inline __u32 xina_swar_add(__u32 a, __u32 b, __u32 m)
{
	return ((a & ~m) + (b & ~m)) ^ ((a ^ b) & m);
}

/* The same on a pair of words: 32 bits are a lane boundary of every type. */
static __always_inline __u64 xina_swar_add64(__u64 a, __u64 b, __u64 m)
{
	return ((a & ~m) + (b & ~m)) ^ ((a ^ b) & m);
}

static __always_inline __u32 xina_sum16(__u32 a, __u32 b)
{
	return xina_swar_add(a, b, 0x80008000u);
}

static __always_inline __u32 xina_sum8(__u32 a, __u32 b)
{
	return xina_swar_add(a, b, 0x80808080u);
}

/*
 * MIN and MAX without a branch: a BPF program has no conditional move, and
 * the verifier walks both sides of every branch (64 of them in a block of
 * 8-bit MAX made it give up).  A lane's compare is the sign bit of a
 * difference computed in 64 bits, where it cannot overflow, made a mask by
 * a multiplication: not by a negation, since a value in [-1, 0] ANDed
 * with a constant makes the verifiers since 6.17 fork their walk in two
 * (one fork per lane: again too many).  XINA_LANES_OPAQUE keeps clang from
 * turning the bit back into a compare and a branch, or the multiplication
 * into that negation, on BPF; elsewhere it is nothing (compilers with a
 * conditional move do as they like).
 */
#ifdef __bpf__
#define XINA_LANES_OPAQUE(v)	asm volatile("" : "+r"(v))
#else
#define XINA_LANES_OPAQUE(v)	do { } while (0)
#endif

/* @mask where the @width-bit lane at @shift of @a is above @b's, else 0. */
static __always_inline __u32 xina_gt_lane(__u32 a, __u32 b, const int shift,
					  const int width, __u32 mask)
{
	__s64 sa = (__s64)((__u64)a << (64 - shift - width)) >> (64 - width);
	__s64 sb = (__s64)((__u64)b << (64 - shift - width)) >> (64 - width);
	__u64 gt = (__u64)(sb - sa) >> 63;	/* a's lane > b's */

	XINA_LANES_OPAQUE(gt);
	return gt * mask;
}

/* Each lane of @a where @gt is set, else of @b (@max_), or the other way. */
static __always_inline __u32 xina_pick_by(__u32 a, __u32 b, __u32 gt,
					  const int max_)
{
	return max_ ? b ^ ((a ^ b) & gt) : a ^ ((a ^ b) & gt);
}

static __always_inline __u32 xina_pick16(__u32 a, __u32 b, const int max_)
{
	__u32 gt = xina_gt_lane(a, b, 16, 16, 0xffff0000u) |
		   xina_gt_lane(a, b, 0, 16, 0x0000ffffu);

	return xina_pick_by(a, b, gt, max_);
}

static __always_inline __u32 xina_pick8(__u32 a, __u32 b, const int max_)
{
	__u32 gt = xina_gt_lane(a, b, 24, 8, 0xff000000u) |
		   xina_gt_lane(a, b, 16, 8, 0x00ff0000u) |
		   xina_gt_lane(a, b, 8, 8, 0x0000ff00u) |
		   xina_gt_lane(a, b, 0, 8, 0x000000ffu);

	return xina_pick_by(a, b, gt, max_);
}

static __always_inline __u32 xina_pick32(__u32 a, __u32 b, const int max_)
{
	return xina_pick_by(a, b, xina_gt_lane(a, b, 0, 32, 0xffffffffu),
			    max_);
}

/* 1 if @x < @y as signed 64-bit values, else 0 (Hacker's Delight 2-12). */
static __always_inline __u64 xina_lt64(__u64 x, __u64 y)
{
	__u64 d = x - y;

	d = (d ^ ((x ^ y) & (d ^ x))) >> 63;
	XINA_LANES_OPAQUE(d);
	return d;
}

/*
 * One word of a 8, 16 or 32-bit @dtype: @acc combined with @x by @op.
 * With @dtype and @op constants after inlining this is one expression;
 * INT64 goes through xina_combine64().
 */
static __always_inline __u32 xina_combine32(__u32 acc, __u32 x,
					    const __u32 dtype, const __u32 op)
{
	switch (op) {
	case XINA_OP_SUM:
		if (dtype == XINA_DTYPE_INT16)
			return xina_sum16(acc, x);
		if (dtype == XINA_DTYPE_INT8)
			return xina_sum8(acc, x);
		return acc + x;
	case XINA_OP_MAX:
	case XINA_OP_MIN:
		if (dtype == XINA_DTYPE_INT16)
			return xina_pick16(acc, x, op == XINA_OP_MAX);
		if (dtype == XINA_DTYPE_INT8)
			return xina_pick8(acc, x, op == XINA_OP_MAX);
		return xina_pick32(acc, x, op == XINA_OP_MAX);
	case XINA_OP_AND:
		return acc & x;
	case XINA_OP_OR:
		return acc | x;
	default:
		return acc ^ x;
	}
}

/* One INT64 element (two words, high first, as one value) by @op. */
static __always_inline __u64 xina_combine64(__u64 acc, __u64 x, const __u32 op)
{
	switch (op) {
	case XINA_OP_SUM:
		return acc + x;
	case XINA_OP_MAX:
		return acc ^ ((acc ^ x) * xina_lt64(acc, x));
	case XINA_OP_MIN:
		return acc ^ ((acc ^ x) * xina_lt64(x, acc));
	case XINA_OP_AND:
		return acc & x;
	case XINA_OP_OR:
		return acc | x;
	default:
		return acc ^ x;
	}
}

/*
 * A staged pair of words (the first in the high half, as the fast path
 * stages them): for INT64 one element, else two words.  But for INT64 the
 * ops are lane-wise, so that any other order of the two words does too,
 * as long as @acc and @x have the same.
 */
static __always_inline __u64 xina_combine_pair(__u64 acc, __u64 x,
					       const __u32 dtype,
					       const __u32 op)
{
	if (dtype == XINA_DTYPE_INT64)
		return xina_combine64(acc, x, op);
	if (op == XINA_OP_SUM && dtype == XINA_DTYPE_INT16)
		return xina_swar_add64(acc, x, 0x8000800080008000ULL);
	if (op == XINA_OP_SUM && dtype == XINA_DTYPE_INT8)
		return xina_swar_add64(acc, x, 0x8080808080808080ULL);
	if (op == XINA_OP_AND)
		return acc & x;
	if (op == XINA_OP_OR)
		return acc | x;
	if (op == XINA_OP_XOR)
		return acc ^ x;
	return (__u64)xina_combine32(acc >> 32, x >> 32, dtype, op) << 32 |
	       xina_combine32(acc, x, dtype, op);
}

#endif /* XINA_LANES_H */
