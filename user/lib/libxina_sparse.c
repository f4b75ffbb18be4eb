// SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause)
/*
 * Block-sparse allreduce (xina_allreduce_sparse()): only the blocks that
 * hold a non-zero element on some worker travel.
 *
 * A block is the elements of one packet (the call's codec's per_pkt).
 * Each worker marks its blocks that hold any non-zero bit (a float -0 is
 * non-zero: bits, not values), the workers OR their bitmaps through the
 * switch (one int32 OR allreduce of nblocks / 32 words), and then reduce
 * only the union's blocks, gathered into one dense buffer, by the call's
 * own type and op: block b of the union is the same block with the same
 * elements as in a dense call, so its result, float exponents included,
 * is bitwise the dense call's.  A block outside the union is zero on
 * every worker, and every operator of zeros gives zero (SUM, MIN, MAX,
 * AVG, AND, OR, XOR): it is already its result.  When the union is every
 * block, the call runs in place, as a dense one.
 *
 * Cost: one pass over the tensor to find its zero blocks, the bitmap's
 * allreduce (1/(32 * per_pkt) of the elements), a copy of the union's
 * blocks there and back, and the union's share of a dense call's packets.
 */
#include <errno.h>
#include <string.h>

#include "libxina_int.h"

/* The call by @k's type and op, dense, on @buf (as xina_run() does). */
static int xina_sp_dense(struct xina *x, void *buf, size_t n,
			 const struct xina_codec *k)
{
	int err;

	if (k->kind == XINA_K_BFP)
		return xina_run_bfp(x, buf, n, k);
	err = xina_reduce_blocks(x, buf, n, k, NULL);
	if (err)
		x->broken = true;
	return err;
}

int xina_run_sparse(struct xina *x, void *buf, size_t n,
		    const struct xina_codec *k)
{
	size_t esz = xina_codec_esz(k), bs = k->per_pkt, nb, words, b, len;
	size_t used = 0, m = 0;
	struct xina_codec mk;
	uint8_t *src = buf;
	int err;

	nb = (n + bs - 1) / bs;
	words = (nb + 31) / 32;
	err = xina_codec_init(x, &mk, XINA_TYPE_INT32, XINA_OP_OR, x->err,
			      sizeof(x->err));
	if (err)
		return err;
	if (xina_grow((void **)&x->sp_map, &x->sp_map_len, words ? words : 1,
		      sizeof(*x->sp_map))) {
		xina_fail(x, "out of memory for the bitmap of %zu blocks", nb);
		return -ENOMEM;
	}
	memset(x->sp_map, 0, words * sizeof(*x->sp_map));
	for (b = 0; b < nb; b++) {
		len = (b + 1 < nb ? bs : n - b * bs) * esz;
		if (!xina_all_zero(src + b * bs * esz, len))
			x->sp_map[b / 32] |= 1u << (b % 32);
	}
	err = xina_reduce_blocks(x, x->sp_map, words, &mk, NULL);
	if (err) {
		x->broken = true;
		return err;
	}
	for (b = 0; b < nb; b++)
		if (x->sp_map[b / 32] >> (b % 32) & 1) {
			used += b + 1 < nb ? bs : n - b * bs;
			m++;
		}
	x->st.sparse_blocks += m;
	x->st.sparse_skipped += nb - m;
	if (m == nb)
		return xina_sp_dense(x, buf, n, k);
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
		len = (b + 1 < nb ? bs : n - b * bs) * esz;
		memcpy(x->sp_buf + used, src + b * bs * esz, len);
		used += len;
	}
	err = xina_sp_dense(x, x->sp_buf, used / esz, k);
	if (err)
		return err;
	for (b = 0, used = 0; b < nb; b++) {
		if (!(x->sp_map[b / 32] >> (b % 32) & 1))
			continue;
		len = (b + 1 < nb ? bs : n - b * bs) * esz;
		memcpy(src + b * bs * esz, x->sp_buf + used, len);
		used += len;
	}
	return 0;
}
