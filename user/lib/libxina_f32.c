// SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause)
/*
 * libxina float32 allreduce: SwitchML block floating point over the int32
 * engine.  The derivation of the error bound is in libxina.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "libxina_int.h"

static int xina_grow(void **p, size_t *len, size_t want, size_t elsz)
{
	void *n;

	if (*len >= want)
		return 0;
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

/* Lanes of the max loop below: independent accumulators vectorise. */
#define XINA_MAX_LANES	8

/*
 * Largest magnitude of @cnt floats, as the bits of |x|: for finite floats
 * the order of those bits as integers is the order of the magnitudes, and
 * NaN and infinities compare above every finite value.  No branch and no
 * early exit in the loop, so that it vectorises; the caller checks
 * finiteness once per block on the result.
 */
static uint32_t xina_max_abs_bits(const float *src, size_t cnt)
{
	uint32_t acc[XINA_MAX_LANES] = {}, m = 0, b;
	size_t i = 0, k;

	for (; i + XINA_MAX_LANES <= cnt; i += XINA_MAX_LANES) {
		for (k = 0; k < XINA_MAX_LANES; k++) {
			memcpy(&b, &src[i + k], sizeof(b));
			b &= 0x7fffffff;
			acc[k] = b > acc[k] ? b : acc[k];
		}
	}
	for (; i < cnt; i++) {
		memcpy(&b, &src[i], sizeof(b));
		b &= 0x7fffffff;
		m = b > m ? b : m;
	}
	for (k = 0; k < XINA_MAX_LANES; k++)
		m = acc[k] > m ? acc[k] : m;
	return m;
}

/* The slow path of a block known to hold a NaN or an infinity. */
static int xina_not_finite(struct xina *x, const float *buf, size_t off,
			   size_t end)
{
	size_t i;

	for (i = off; i < end && isfinite(buf[i]); i++)
		;
	xina_fail(x, "element %zu is %s: float allreduce needs finite input",
		  i, isnan(buf[i]) ? "NaN" : "infinite");
	return -EINVAL;
}

/*
 * Per block: the frexpf exponent of the largest magnitude (|x| < 2^e), or
 * XINA_EXP_ZERO.  Refuses NaN and infinities before anything is sent,
 * naming the first offending element.
 */
static int xina_block_exps(struct xina *x, const float *buf, size_t n,
			   int32_t *exps, uint64_t nblocks)
{
	size_t off, end;
	uint32_t bits;
	uint64_t b;
	float m;
	int e;

	for (b = 0; b < nblocks; b++) {
		off = b * x->o.elems;
		end = n - off < x->o.elems ? n : off + x->o.elems;
		bits = xina_max_abs_bits(buf + off, end - off);
		if (bits >= 0x7f800000)
			return xina_not_finite(x, buf, off, end);
		if (!bits) {
			exps[b] = XINA_EXP_ZERO;
			continue;
		}
		memcpy(&m, &bits, sizeof(m));
		frexpf(m, &e);
		exps[b] = e;
	}
	return 0;
}


/*
 * A peer can only send what passed xina_block_exps() on its side: a
 * frexpf exponent of a finite nonzero float, or XINA_EXP_ZERO.
 */
static int xina_check_exps(struct xina *x, const int32_t *exps,
			   uint64_t nblocks)
{
	uint64_t b;

	for (b = 0; b < nblocks; b++) {
		if (exps[b] == XINA_EXP_ZERO ||
		    (exps[b] >= XINA_EXP_MIN && exps[b] <= XINA_EXP_MAX))
			continue;
		xina_fail(x, "agreed exponent %d of block %llu is impossible: a peer runs an incompatible libxina",
			  exps[b], (unsigned long long)b);
		return -EPROTO;
	}
	return 0;
}

int xina_run_f32(struct xina *x, float *buf, size_t n)
{
	uint64_t nblocks;
	int err;

	err = xina_call_check(x, buf, n);
	if (err)
		return err;
	nblocks = (n + x->o.elems - 1) / x->o.elems;
	if (xina_grow((void **)&x->exps, &x->exps_len, nblocks, sizeof(*x->exps))) {
		xina_fail(x, "out of memory for the exponents of %llu blocks",
			  (unsigned long long)nblocks);
		return -ENOMEM;
	}
	err = xina_block_exps(x, buf, n, x->exps, nblocks);
	if (err)
		return err;

	/* Phase 1: agree on the exponents; phase 2: add the integers. */
	err = xina_reduce_blocks(x, x->exps, nblocks, XINA_OP_MAX, NULL);
	if (!err)
		err = xina_check_exps(x, x->exps, nblocks);
	if (err)
		goto err_broken;
	err = xina_reduce_blocks(x, buf, n, XINA_OP_SUM, x->exps);
	if (err)
		goto err_broken;
	x->st.calls++;
	return 0;

err_broken:
	x->broken = true;
	return err;
}

int xina_allreduce_f32(struct xina *x, float *buf, size_t n)
{
	return x ? xina_call(x, buf, n, XINA_OP_SUM, true) : -EINVAL;
}

double xina_f32_bound(float r, int block_exp, unsigned int workers)
{
	unsigned int l = xina_headroom_bits(workers);

	if (block_exp == XINA_EXP_ZERO)
		return 0.0;
	return ldexp((double)workers, block_exp - 32 + (int)l) +
	       ldexp(fabs((double)r), -23) + ldexp(1.0, -149);
}
