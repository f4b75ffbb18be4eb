// SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause)
/*
 * libxina float SUM and AVG: SwitchML block floating point over the
 * engine, float32 into INT32 lanes, float16 and bfloat16 into INT16
 * lanes (float16 into INT32 with XINA_OPT_F_F16_WIDE).  The derivation of the error bounds is in libxina.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "libxina_int.h"

int xina_grow(void **p, size_t *len, size_t want, size_t elsz)
{
	void *n;

	if (*len >= want)
		return 0;
	if (want > SIZE_MAX / elsz)
		return -ENOMEM;
	n = realloc(*p, want * elsz);
	if (!n)
		return -ENOMEM;
	*p = n;
	*len = want;
	return 0;
}

/* frexpf exponents of finite nonzero floats: 2^-149 .. FLT_MAX */
#define XINA_EXP_MIN	(-148)
#define XINA_EXP_MAX	128

/* Bits of |x| from which a float of @type is an infinity or a NaN. */
static uint32_t xina_inf_bits(enum xina_type type)
{
	return type == XINA_TYPE_FLOAT32 ? 0x7f800000 :
	       type == XINA_TYPE_FLOAT16 ? 0x7c00 : 0x7f80;
}

/* The slow path of a block known to hold a NaN or an infinity. */
static int xina_not_finite(struct xina *x, const struct xina_codec *k,
			   const void *buf, size_t off, size_t end)
{
	uint32_t inf = xina_inf_bits(k->type), b = 0;
	size_t i;

	for (i = off; i < end; i++) {
		if (k->type == XINA_TYPE_FLOAT32)
			memcpy(&b, (const float *)buf + i, sizeof(b));
		else
			b = ((const uint16_t *)buf)[i];
		b &= inf == 0x7f800000 ? 0x7fffffff : 0x7fff;
		if (b >= inf)
			break;
	}
	xina_fail(x, "element %zu is %s: %s %s needs finite input (block floating point has no NaN or infinity; MIN and MAX take them)",
		  i, b > inf ? "NaN" : "infinite", xina_type_name(k->type),
		  xina_op_name(k->op));
	return -EINVAL;
}

/* Value of the finite magnitude bits @bits of a float of @type. */
static double xina_abs_value(enum xina_type type, uint32_t bits)
{
	float f;

	if (type == XINA_TYPE_FLOAT16)
		return (bits >> 10) ? ldexp(1024 + (bits & 0x3ff),
					    (int)(bits >> 10) - 25) :
				      ldexp(bits, -24);
	if (type == XINA_TYPE_BFLOAT16)
		bits <<= 16;
	memcpy(&f, &bits, sizeof(f));
	return f;
}

/*
 * The frexp exponent of the largest magnitude of elements @off..@end - 1
 * of @buf (|x| < 2^e) in @e, or XINA_EXP_ZERO for zeros (-0 included).
 * Refuses NaN and infinities, naming the first offending element.
 */
static int xina_span_exp(struct xina *x, const struct xina_codec *k,
			 const void *buf, size_t off, size_t end, int32_t *e)
{
	uint32_t bits;
	int fe;

	if (k->type == XINA_TYPE_FLOAT32)
		bits = xina_max_abs_bits((const float *)buf + off, end - off);
	else
		bits = xina_max_abs_bits16((const uint16_t *)buf + off,
					   end - off);
	if (bits >= xina_inf_bits(k->type))
		return xina_not_finite(x, k, buf, off, end);
	if (!bits) {
		*e = XINA_EXP_ZERO;
		return 0;
	}
	frexp(xina_abs_value(k->type, bits), &fe);
	*e = fe;
	return 0;
}

int xina_block_exp(struct xina *x, const struct xina_codec *k,
		   const void *buf, size_t n, uint64_t b, int32_t *e)
{
	size_t off = b * k->per_pkt;

	return xina_span_exp(x, k, buf, off,
			     off + xina_blk_elems(n, k->per_pkt, b), e);
}

/*
 * Per block: xina_block_exp() of each of the first @nblocks.  @negz, when
 * not NULL, gets a bit for each block of zeros that holds a -0 (zeros,
 * but not all zero bits).  That is the sparse call's pass over the whole
 * tensor, most of it zero bits: each block is first tested for any bit
 * (2.4 ms for 64 MiB, in L3, against 4.7 for the largest magnitude and
 * the OR together), and only a block with one gets its largest magnitude.
 * @map, when not NULL: the blocks to read; the others are XINA_EXP_ZERO.
 */
static int xina_block_exps(struct xina *x, const struct xina_codec *k,
			   const void *buf, size_t n, int32_t *exps,
			   uint64_t nblocks, uint32_t *negz, const uint8_t *map)
{
	size_t esz = xina_codec_esz(k), off, end;
	uint64_t b;
	int err;

	for (b = 0; b < nblocks; b++) {
		if (map && !(map[b / 8] >> (b % 8) & 1)) {
			exps[b] = XINA_EXP_ZERO;
			continue;
		}
		off = b * k->per_pkt;
		end = off + xina_blk_elems(n, k->per_pkt, b);
		if (negz && xina_all_zero((const uint8_t *)buf + off * esz,
					  (end - off) * esz)) {
			exps[b] = XINA_EXP_ZERO;
			continue;
		}
		err = xina_span_exp(x, k, buf, off, end, &exps[b]);
		if (err)
			return err;
		/* zeros; with @negz, not all zero bits: a -0 */
		if (negz && exps[b] == XINA_EXP_ZERO)
			negz[b / 32] |= 1u << (b % 32);
	}
	return 0;
}

bool xina_exp_ok(int32_t e)
{
	return e == XINA_EXP_ZERO || (e >= XINA_EXP_MIN && e <= XINA_EXP_MAX);
}

/*
 * A peer can only send what passed xina_block_exps() on its side: a
 * frexpf exponent of a finite nonzero float, or XINA_EXP_ZERO.
 */
int xina_check_exps(struct xina *x, const int32_t *exps, uint64_t nblocks)
{
	uint64_t b;

	for (b = 0; b < nblocks; b++) {
		if (xina_exp_ok(exps[b]))
			continue;
		xina_fail(x, "agreed exponent %d of block %llu is impossible: a peer runs an incompatible libxina",
			  exps[b], (unsigned long long)b);
		return -EPROTO;
	}
	return 0;
}

/*
 * The exponents of the first @first of the @nblocks blocks of @buf, agreed
 * in an int32 MAX call, into x->exps (room for all @nblocks).  A NaN or an
 * infinity among them is refused before anything is sent; a failure of
 * the call leaves the handle unusable.
 */
static int xina_agree_exps(struct xina *x, const struct xina_codec *k,
			   const void *buf, size_t n, uint64_t nblocks,
			   uint64_t first, uint32_t *negz, const uint8_t *map)
{
	struct xina_codec ek;
	int err;

	/* the exponents: int32 MAX, one per block */
	err = xina_codec_init(x, &ek, XINA_TYPE_INT32, XINA_OP_MAX, x->err,
			      sizeof(x->err));
	if (err)
		return err;
	if (xina_grow((void **)&x->exps, &x->exps_len, nblocks, sizeof(*x->exps))) {
		xina_fail(x, "out of memory for the exponents of %llu blocks",
			  (unsigned long long)nblocks);
		return -ENOMEM;
	}
	err = xina_block_exps(x, k, buf, n, x->exps, first, negz, map);
	if (err)
		return err;
	err = xina_reduce_blocks(x, x->exps, first, &ek, NULL);
	if (!err)
		err = xina_check_exps(x, x->exps, first);
	if (err)
		x->broken = true;
	return err;
}

int xina_bfp_exps(struct xina *x, const void *buf, size_t n,
		  const struct xina_codec *k, uint32_t *negz,
		  const uint8_t *map)
{
	uint64_t nblocks = (n + k->per_pkt - 1) / k->per_pkt;

	return xina_agree_exps(x, k, buf, n, nblocks, nblocks, negz, map);
}

/*
 * The exponents go with the data, as SwitchML's do: the first window's
 * (a block per slot) are agreed in a call of their own, and every
 * contribution after that carries, in aux, this worker's exponent of the
 * block its slot takes next, whose MAX the switch returns with the
 * result (xina_reduce_piggy()).  Each block is scanned for its largest
 * magnitude a window before it is packed, while it is still in cache:
 * a pass over the whole tensor before the first packet read it from
 * memory twice (7 ms of CPU per worker for 64 MiB, a tenth of a float16
 * call).  The agreed exponents, and so the bits of the results, are
 * those of the pass: the MAX over the workers of each block's exponent.
 */
int xina_run_bfp(struct xina *x, void *buf, size_t n,
		 const struct xina_codec *k)
{
	uint64_t nblocks = (n + k->per_pkt - 1) / k->per_pkt, first, b;
	int err;

	first = nblocks < x->o.slots ? nblocks : x->o.slots;
	err = xina_agree_exps(x, k, buf, n, nblocks, first, NULL, NULL);
	if (err)
		return err;
	for (b = first; b < nblocks; b++)
		x->exps[b] = XINA_EXP_UNKNOWN;
	err = xina_reduce_piggy(x, buf, n, k, x->exps);
	if (err)
		x->broken = true;
	return err;
}

int xina_allreduce_f32(struct xina *x, float *buf, size_t n)
{
	return x ? xina_call(x, buf, n, XINA_TYPE_FLOAT32, XINA_OP_SUM, NULL) :
		   -EINVAL;
}

double xina_f32_bound(float r, int block_exp, unsigned int workers)
{
	unsigned int l = xina_headroom_bits(workers);

	if (block_exp == XINA_EXP_ZERO)
		return 0.0;
	return ldexp((double)workers, block_exp - 32 + (int)l) +
	       ldexp(fabs((double)r), -23) + ldexp(1.0, -149);
}
