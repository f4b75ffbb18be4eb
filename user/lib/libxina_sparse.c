// SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause)
/*
 * Block-sparse allreduce (xina_allreduce_sparse()): only the blocks that
 * hold a non-zero element on some worker travel.
 *
 * A block is the elements of one packet (the call's codec's per_pkt).
 * The workers agree on the union of their non-zero blocks in one call
 * through the switch, then reduce only the union's blocks, gathered into
 * one dense buffer, by the call's own type and op: block b of the union is
 * the same block with the same elements as in a dense call, so its result
 * is bitwise the dense call's.  The agreement:
 * - integers, and float MIN and MAX: each worker marks its blocks that
 *   hold any non-zero bit (a float -0 is non-zero: bits, not values), and
 *   the workers OR the bitmaps (one int32 OR allreduce of nblocks / 32
 *   words).  A block outside the union is zero bits on every worker, and
 *   every operator of zeros gives zero: it is already its result;
 * - float SUM and AVG (block floating point): the exponents' call of the
 *   dense scheme, over every block, is the agreement: a block is in the
 *   union when its agreed exponent is not XINA_EXP_ZERO, so the union's
 *   exponents are known and its blocks need no call of their own.  The
 *   dense call gives +0 for every element of a block of zeros, so a worker
 *   writes +0 over such a block where it holds a -0.
 * When the union is every block, the call runs in place, as a dense one.
 *
 * xina_allreduce_sparse_map(): the caller's map of its blocks stands for
 * the pass over the tensor: its blocks are the worker's bits, or the only
 * blocks whose exponents it finds; a block the map leaves out is never
 * read, and travels as zeros when another worker puts it in the union.
 *
 * Cost: one pass over the tensor (its zero blocks, or its blocks'
 * exponents; with the caller's map, over the map's blocks), the agreement (nblocks / 32 words, or nblocks exponents),
 * a copy of the union's blocks there and back, and the union's share of
 * a dense call's packets: two calls through the switch for every type
 * and op.
 */
#include <errno.h>
#include <string.h>

#include "libxina_int.h"

/* Whether block @b is this worker's to read: in the caller's @map, if any. */
static bool xina_sp_mine(const uint8_t *map, size_t b)
{
	return !map || (map[b / 8] >> (b % 8) & 1);
}

/* The call by @k's type and op, dense, on @buf; @exps agreed for BFP. */
static int xina_sp_reduce(struct xina *x, void *buf, size_t n,
			  const struct xina_codec *k, const int32_t *exps)
{
	int err = xina_reduce_blocks(x, buf, n, k, exps);

	if (err)
		x->broken = true;
	return err;
}

/*
 * The union by bits: the workers' bitmaps of non-zero blocks, ORed; each
 * worker's from its tensor, or from the caller's @map when not NULL.
 */
static int xina_sp_union_bits(struct xina *x, const uint8_t *src, size_t n,
			      const struct xina_codec *k, size_t nb,
			      const uint8_t *map)
{
	size_t esz = xina_codec_esz(k), bs = k->per_pkt, b, len;
	struct xina_codec mk;
	int err;

	err = xina_codec_init(x, &mk, XINA_TYPE_INT32, XINA_OP_OR, x->err,
			      sizeof(x->err));
	if (err)
		return err;
	for (b = 0; b < nb; b++) {
		len = xina_blk_elems(n, bs, b) * esz;
		if (map ? xina_sp_mine(map, b) :
			  !xina_all_zero(src + b * bs * esz, len))
			x->sp_map[b / 32] |= 1u << (b % 32);
	}
	return xina_sp_reduce(x, x->sp_map, (nb + 31) / 32, &mk, NULL);
}

/*
 * The union by exponents (block floating point): blocks whose agreed
 * exponent is not XINA_EXP_ZERO; a block of zeros everywhere gets the
 * dense call's +0 where this worker held a -0 in it.  With the caller's
 * @map, only its blocks are read.
 */
static int xina_sp_union_exps(struct xina *x, uint8_t *src, size_t n,
			      const struct xina_codec *k, size_t nb,
			      const uint8_t *map)
{
	size_t esz = xina_codec_esz(k), bs = k->per_pkt, b, len;
	uint32_t *bits = x->sp_map, bit;
	int err;

	/* the -0 blocks first, in the bitmap the union then takes over */
	err = xina_bfp_exps(x, src, n, k, bits, map);
	if (err)
		return err;
	for (b = 0; b < nb; b++) {
		bit = 1u << (b % 32);
		if (x->exps[b] != XINA_EXP_ZERO) {
			bits[b / 32] |= bit;
			continue;
		}
		if (bits[b / 32] & bit) {
			len = xina_blk_elems(n, bs, b) * esz;
			memset(src + b * bs * esz, 0, len);
			bits[b / 32] &= ~bit;
		}
	}
	return 0;
}

int xina_run_sparse(struct xina *x, void *buf, size_t n,
		    const struct xina_codec *k, const uint8_t *map)
{
	size_t esz = xina_codec_esz(k), bs = k->per_pkt, nb, words, b, len;
	bool bfp = k->kind == XINA_K_BFP;
	size_t used = 0, m = 0;
	const int32_t *exps;
	uint8_t *src = buf;
	int err;

	nb = (n + bs - 1) / bs;
	words = (nb + 31) / 32;
	if (xina_grow((void **)&x->sp_map, &x->sp_map_len, words ? words : 1,
		      sizeof(*x->sp_map))) {
		xina_fail(x, "out of memory for the bitmap of %zu blocks", nb);
		return -ENOMEM;
	}
	memset(x->sp_map, 0, words * sizeof(*x->sp_map));
	err = bfp ? xina_sp_union_exps(x, src, n, k, nb, map) :
		    xina_sp_union_bits(x, src, n, k, nb, map);
	if (err)
		return err;
	/* the union's exponents, in block order, ahead of the others */
	for (b = 0; b < nb; b++)
		if (x->sp_map[b / 32] >> (b % 32) & 1) {
			used += xina_blk_elems(n, bs, b);
			if (bfp)
				x->exps[m] = x->exps[b];
			m++;
		}
	x->st.sparse_blocks += m;
	x->st.sparse_skipped += nb - m;
	exps = bfp ? x->exps : NULL;
	if (m == nb) {
		/* in place: what the caller's map leaves out counts as zeros */
		for (b = 0; map && b < nb; b++)
			if (!xina_sp_mine(map, b))
				memset(src + b * bs * esz, 0,
				       xina_blk_elems(n, bs, b) * esz);
		return xina_sp_reduce(x, buf, n, k, exps);
	}
	if (!m)
		return 0;
	if (xina_grow((void **)&x->sp_buf, &x->sp_buf_len, used * esz, 1)) {
		xina_fail(x, "out of memory for the %zu non-zero blocks of %zu",
			  m, nb);
		return -ENOMEM;
	}
	/* Gather, reduce, scatter: the last block may be short, and last. */
	for (b = 0, used = 0; b < nb; b++) {
		if (!(x->sp_map[b / 32] >> (b % 32) & 1))
			continue;
		len = xina_blk_elems(n, bs, b) * esz;
		if (xina_sp_mine(map, b))
			memcpy(x->sp_buf + used, src + b * bs * esz, len);
		else
			memset(x->sp_buf + used, 0, len);
		used += len;
	}
	err = xina_sp_reduce(x, x->sp_buf, used / esz, k, exps);
	if (err)
		return err;
	for (b = 0, used = 0; b < nb; b++) {
		if (!(x->sp_map[b / 32] >> (b % 32) & 1))
			continue;
		len = xina_blk_elems(n, bs, b) * esz;
		memcpy(src + b * bs * esz, x->sp_buf + used, len);
		used += len;
	}
	return 0;
}
