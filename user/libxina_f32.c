// SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause)
/*
 * libxina float32 allreduce: SwitchML block floating point over the int32
 * engine.  The derivation of the error bound is in libxina.h.
 */
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

/*
 * Per block: the frexpf exponent of the largest magnitude (|x| < 2^e), or
 * XINA_EXP_ZERO.  Refuses NaN and infinities before anything is sent,
 * naming the first offending element.
 */
static int xina_block_exps(struct xina *x, const float *buf, size_t n,
			   int32_t *exps, uint64_t nblocks)
{
	size_t i, off, end;
	uint64_t b;
	float m;
	int e;

	for (b = 0; b < nblocks; b++) {
		off = b * x->o.elems;
		end = n - off < x->o.elems ? n : off + x->o.elems;
		m = 0.0f;
		for (i = off; i < end; i++) {
			if (!isfinite(buf[i])) {
				xina_fail(x, "element %zu is %s: float allreduce needs finite input",
					  i, isnan(buf[i]) ? "NaN" : "infinite");
				return -EINVAL;
			}
			if (fabsf(buf[i]) > m)
				m = fabsf(buf[i]);
		}
		if (m == 0.0f) {
			exps[b] = XINA_EXP_ZERO;
			continue;
		}
		frexpf(m, &e);
		exps[b] = e;
	}
	return 0;
}

/* Scale exponent s of a block with agreed exponent @e: x * 2^s fits. */
static int xina_scale(const struct xina *x, int32_t e)
{
	return 31 - (int)x->headroom - e;
}

/*
 * Adding and subtracting 1.5 * 2^52 rounds a double of magnitude below
 * 2^51 to the nearest integer, ties to even, like rint() in the default
 * rounding mode, but inline and vectorisable: rint()/lrintf() calls
 * dominated the float path.
 */
#define XINA_RINT_MAGIC	6755399441055744.0

static void xina_quantise(struct xina *x, const float *buf, size_t n,
			  int32_t *q, const int32_t *exps, uint64_t nblocks)
{
	const double lim = (double)((1l << (31 - x->headroom)) - 1);
	size_t i, off, end;
	double scale, v;
	uint64_t b;

	for (b = 0; b < nblocks; b++) {
		off = b * x->o.elems;
		end = n - off < x->o.elems ? n : off + x->o.elems;
		if (exps[b] == XINA_EXP_ZERO) {
			memset(q + off, 0, (end - off) * sizeof(*q));
			continue;
		}
		/* 2^s may not be a float, but is a double: x * 2^s is exact. */
		scale = ldexp(1.0, xina_scale(x, exps[b]));
		for (i = off; i < end; i++) {
			v = (double)buf[i] * scale;
			v = (v + XINA_RINT_MAGIC) - XINA_RINT_MAGIC;
			v = v > lim ? lim : v < -lim ? -lim : v;
			q[i] = (int32_t)v;
		}
	}
}

/*
 * Q * 2^-s is exact in double; the conversion to float is the one
 * rounding, the same on every worker.
 */
static void xina_dequantise(struct xina *x, float *buf, size_t n,
			    const int32_t *q, const int32_t *exps,
			    uint64_t nblocks)
{
	size_t i, off, end;
	double scale;
	uint64_t b;

	for (b = 0; b < nblocks; b++) {
		off = b * x->o.elems;
		end = n - off < x->o.elems ? n : off + x->o.elems;
		if (exps[b] == XINA_EXP_ZERO) {
			for (i = off; i < end; i++)
				buf[i] = 0.0f;
			continue;
		}
		scale = ldexp(1.0, -xina_scale(x, exps[b]));
		for (i = off; i < end; i++)
			buf[i] = (float)((double)q[i] * scale);
	}
}

/* A peer can only send what passed xina_block_exps() on its side. */
static int xina_check_exps(struct xina *x, const int32_t *exps,
			   uint64_t nblocks)
{
	uint64_t b;

	for (b = 0; b < nblocks; b++) {
		if (exps[b] == XINA_EXP_ZERO || (exps[b] >= -148 && exps[b] <= 128))
			continue;
		xina_fail(x, "agreed exponent %d of block %llu is impossible: a peer runs an incompatible libxina",
			  exps[b], (unsigned long long)b);
		return -EPROTO;
	}
	return 0;
}

int xina_allreduce_f32(struct xina *x, float *buf, size_t n)
{
	uint64_t nblocks;
	int err;

	if (!x)
		return -EINVAL;
	if (x->broken) {
		xina_fail(x, "handle unusable after an earlier failure; reopen it and restart the job");
		return -ENOTRECOVERABLE;
	}
	if (n && !buf) {
		xina_fail(x, "NULL buffer for %zu elements", n);
		return -EINVAL;
	}
	nblocks = (n + x->o.elems - 1) / x->o.elems;
	if (xina_grow((void **)&x->qbuf, &x->qbuf_len, n, sizeof(*x->qbuf)) ||
	    xina_grow((void **)&x->exps, &x->exps_len, nblocks, sizeof(*x->exps))) {
		xina_fail(x, "out of memory for %zu elements", n);
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
	xina_quantise(x, buf, n, x->qbuf, x->exps, nblocks);
	err = xina_reduce_blocks(x, x->qbuf, n, XINA_OP_SUM, x->exps);
	if (err)
		goto err_broken;
	xina_dequantise(x, buf, n, x->qbuf, x->exps, nblocks);
	x->st.calls++;
	return 0;

err_broken:
	x->broken = true;
	return err;
}

double xina_f32_bound(float r, int block_exp, unsigned int workers)
{
	unsigned int l = xina_headroom_bits(workers);

	if (block_exp == XINA_EXP_ZERO)
		return 0.0;
	return ldexp((double)workers, block_exp - 32 + (int)l) +
	       ldexp(fabs((double)r), -23) + ldexp(1.0, -149);
}
