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
 * When the union is every block and the call reads them all, it is a
 * dense one.
 *
 * xina_allreduce_sparse_map(): the caller's map of its blocks stands for
 * the pass over the tensor: its blocks are the worker's bits, or the only
 * blocks whose exponents it finds; a block the map leaves out is never
 * read, and travels as zeros when another worker puts it in the union.
 *
 * Cost: one pass over the tensor (its zero blocks, or its blocks'
 * exponents; with the caller's map, over the map's blocks), the agreement
 * (nblocks / 32 words, or nblocks exponents), and the union's share of a
 * dense call's packets, read and written in place (xina_reduce_at(): no
 * copy of the union, no buffer for it): two calls through the switch for
 * every type and op.
 */
#include <errno.h>
#include <string.h>

#include "libxina_int.h"

/* Whether block @b is this worker's to read: in the caller's @map, if any. */
static bool xina_sp_mine(const uint8_t *map, size_t b)
{
	return !map || (map[b / 8] >> (b % 8) & 1);
}

/*
 * The call by @k's type and op on @buf's blocks @at (NULL: all of them,
 * dense); @exps agreed for BFP.
 */
static int xina_sp_reduce(struct xina *x, void *buf, size_t n,
			  const struct xina_codec *k, const int32_t *exps,
			  const uint32_t *at)
{
	int err = xina_reduce_at(x, buf, n, k, exps, at);

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
	return xina_sp_reduce(x, x->sp_map, (nb + 31) / 32, &mk, NULL, NULL);
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
	size_t bs = k->per_pkt, nb, words, b;
	bool bfp = k->kind == XINA_K_BFP;
	size_t used = 0, m = 0;
	const int32_t *exps;
	uint8_t *src = buf;
	int err;

	nb = (n + bs - 1) / bs;
	if (nb >= XINA_AT_ZERO) {
		xina_fail(x, "%zu blocks: a sparse call takes fewer than 2^31",
			  nb);
		return -E2BIG;
	}
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
	if (!m)
		return 0;
	if (m == nb && !map)	/* every block, each read: a dense call */
		return xina_sp_reduce(x, buf, n, k, exps, NULL);
	if (xina_grow((void **)&x->sp_at, &x->sp_at_len, m, sizeof(*x->sp_at))) {
		xina_fail(x, "out of memory for the %zu non-zero blocks of %zu",
			  m, nb);
		return -ENOMEM;
	}
	/*
	 * The union's blocks reduced where they are: the engine reads each
	 * as it packs it and writes its result there (no copy of them);
	 * the caller's map is what is read: the blocks it leaves out go as
	 * zeros.  The last block may be short, and last.
	 */
	for (b = 0, m = 0; b < nb; b++)
		if (x->sp_map[b / 32] >> (b % 32) & 1)
			x->sp_at[m++] = b | (xina_sp_mine(map, b) ? 0 : XINA_AT_ZERO);
	return xina_sp_reduce(x, buf, used, k, exps, x->sp_at);
}
