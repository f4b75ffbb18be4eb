// SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause)
/*
 * libxina's element types and operators: how each (type, op) pair of
 * xina_allreduce() travels on the wire (the codec), and the calls.  The
 * rules, the rounding of AVG and the error bounds are in libxina.h,
 * "Types and operators"; the wire's packing in include/uapi/linux/xina.h.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "libxina_int.h"

static const struct {
	const char	*name;
	uint8_t		size;
	bool		flt;
} xina_types[__XINA_TYPE_MAX] = {
	[XINA_TYPE_INT8]	= { "int8", 1, false },
	[XINA_TYPE_INT16]	= { "int16", 2, false },
	[XINA_TYPE_INT32]	= { "int32", 4, false },
	[XINA_TYPE_INT64]	= { "int64", 8, false },
	[XINA_TYPE_FLOAT16]	= { "float16", 2, true },
	[XINA_TYPE_BFLOAT16]	= { "bfloat16", 2, true },
	[XINA_TYPE_FLOAT32]	= { "float32", 4, true },
};

size_t xina_type_size(enum xina_type type)
{
	return (unsigned int)type < __XINA_TYPE_MAX ? xina_types[type].size : 0;
}

const char *xina_type_name(enum xina_type type)
{
	return (unsigned int)type < __XINA_TYPE_MAX ? xina_types[type].name :
						      NULL;
}

const char *xina_op_name(enum xina_op op)
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
	case XINA_OP_AVG:
		return "avg";
	default:
		return "?";
	}
}

static uint8_t xina_lane_dtype(unsigned int bits)
{
	switch (bits) {
	case 8:
		return XINA_DTYPE_INT8;
	case 16:
		return XINA_DTYPE_INT16;
	case 64:
		return XINA_DTYPE_INT64;
	default:
		return XINA_DTYPE_INT32;
	}
}

int xina_codec_init(const struct xina *x, struct xina_codec *k,
		    enum xina_type type, enum xina_op op, char *err,
		    size_t len)
{
	size_t esz = xina_type_size(type);
	unsigned int words;

	memset(k, 0, sizeof(*k));
	if (op & XINA_RUN_OWN)
		op &= ~(XINA_RUN_BITS | XINA_RUN_OWN);
	k->type = type;
	k->op = op;
	if (!esz) {
		snprintf(err, len, "type %d is none of XINA_TYPE_INT8 .. XINA_TYPE_FLOAT32",
			 type);
		return -EINVAL;
	}
	switch (op) {
	case XINA_OP_SUM:
	case XINA_OP_MAX:
	case XINA_OP_MIN:
	case XINA_OP_AVG:
		break;
	case XINA_OP_AND:
	case XINA_OP_OR:
	case XINA_OP_XOR:
		if (!xina_types[type].flt)
			break;
		snprintf(err, len, "op %s is bitwise, for the integer types only: %s has none",
			 xina_op_name(op), xina_type_name(type));
		return -EINVAL;
	default:
		snprintf(err, len, "op %d is none of XINA_OP_SUM, MIN, MAX, AND, OR, XOR, AVG",
			 op);
		return -EINVAL;
	}
	k->lane_bits = esz * 8;
	k->lanes_per_elem = 1;
	k->wop = op;
	if (!xina_types[type].flt) {
		k->kind = XINA_K_INT;
		if (op == XINA_OP_AVG) {
			k->wop = XINA_OP_SUM;
			k->kind = type == XINA_TYPE_INT64 ? XINA_K_WIDE64 :
							   XINA_K_WIDE;
			if (type == XINA_TYPE_INT64)
				k->lanes_per_elem = 2;
			else
				k->lane_bits *= 2;
		}
	} else if (op == XINA_OP_MIN || op == XINA_OP_MAX) {
		k->kind = XINA_K_ORD;
	} else {
		/*
		 * float32 into INT32 lanes, bfloat16 and float16 into INT16
		 * (float16 into INT32 with XINA_OPT_F_F16_WIDE)
		 */
		k->kind = XINA_K_BFP;
		k->wop = XINA_OP_SUM;
		k->lane_bits = type == XINA_TYPE_FLOAT32 ||
			       (type == XINA_TYPE_FLOAT16 &&
				(x->o.flags & XINA_OPT_F_F16_WIDE)) ? 32 : 16;
	}
	k->dtype = xina_lane_dtype(k->lane_bits);
	words = k->lane_bits == 64 ? 2 * k->lanes_per_elem : 0;
	k->per_pkt = words ? x->o.elems / words :
			     x->o.elems * (32 / k->lane_bits);
	if (!k->per_pkt) {
		snprintf(err, len, "%u elements per packet (opts.elems, in 32-bit words) cannot carry one %s %s element: it takes %u words",
			 x->o.elems, xina_type_name(type), xina_op_name(op),
			 words);
		return -EINVAL;
	}
	return 0;
}

int xina_codec_n(const struct xina_codec *k, size_t n, char *err,
		 size_t len)
{
	size_t esz = xina_type_size(k->type);

	if (n <= PTRDIFF_MAX / esz)
		return 0;
	snprintf(err, len, "n = %zu elements of %s: more bytes than a buffer can hold",
		 n, xina_type_name(k->type));
	return -EINVAL;
}

size_t xina_codec_words(const struct xina_codec *k, size_t cnt)
{
	if (k->lane_bits == 64)
		return cnt * k->lanes_per_elem * 2;
	return (cnt * k->lane_bits + 31) / 32;
}

size_t xina_codec_esz(const struct xina_codec *k)
{
	return xina_type_size(k->type);
}

/* Zero the lanes of the last word past @bytes of payload. */
static void xina_pad(void *dst, size_t bytes)
{
	if (bytes % 4)
		memset((uint8_t *)dst + bytes, 0, 4 - bytes % 4);
}

/* Integers as themselves, each lane in network order. */
static void xina_int_pack(const struct xina_codec *k, uint32_t *dst,
			  const void *src, size_t cnt)
{
	switch (k->lane_bits) {
	case 8:
		memcpy(dst, src, cnt);
		break;
	case 16:
		xina_i16_pack((uint16_t *)dst, src, cnt);
		break;
	case 32:
		xina_i32_pack(dst, src, cnt);
		break;
	default:
		xina_i64_pack(dst, src, cnt);
		break;
	}
	xina_pad(dst, cnt * k->lane_bits / 8);
}

static void xina_int_unpack(const struct xina_codec *k, void *dst,
			    const uint32_t *src, size_t cnt)
{
	switch (k->lane_bits) {
	case 8:
		memcpy(dst, src, cnt);
		break;
	case 16:
		xina_i16_unpack(dst, (const uint16_t *)src, cnt);
		break;
	case 32:
		xina_i32_unpack(dst, src, cnt);
		break;
	default:
		xina_i64_unpack(dst, src, cnt);
		break;
	}
}

/*
 * AVG of the integer types: the element in a lane twice as wide (int64:
 * its signed high and unsigned low halves in two int64 lanes), so that
 * the sum of XINA_MAX_WORKERS of them cannot wrap.
 */
static void xina_wide_pack(const struct xina_codec *k, uint32_t *dst,
			   const void *src, size_t cnt)
{
	uint64_t w[2];
	size_t i;
	int64_t v;

	for (i = 0; i < cnt; i++) {
		switch (k->type) {
		case XINA_TYPE_INT8:
			((uint16_t *)dst)[i] =
				htons((uint16_t)((const int8_t *)src)[i]);
			break;
		case XINA_TYPE_INT16:
			dst[i] = htonl((uint32_t)((const int16_t *)src)[i]);
			break;
		case XINA_TYPE_INT32:
			w[0] = htobe64((uint64_t)(int64_t)((const int32_t *)src)[i]);
			memcpy(dst + 2 * i, w, 8);
			break;
		default:
			memcpy(&v, (const int64_t *)src + i, 8);
			w[0] = htobe64((uint64_t)(v >> 32));
			w[1] = htobe64((uint64_t)v & 0xffffffffu);
			memcpy(dst + 4 * i, w, 16);
			break;
		}
	}
	xina_pad(dst, cnt * k->lanes_per_elem * k->lane_bits / 8);
}

/* floor(@s / @w): AVG of the integers rounds towards minus infinity. */
static __int128 xina_floor_div(__int128 s, unsigned int w)
{
	__int128 q = s / w;

	return q * w != s && s < 0 ? q - 1 : q;
}

static void xina_wide_unpack(const struct xina *x,
			     const struct xina_codec *k, void *dst,
			     const uint32_t *src, size_t cnt)
{
	unsigned int W = x->o.workers;
	uint64_t w[2];
	__int128 s;
	size_t i;
	int64_t v;

	for (i = 0; i < cnt; i++) {
		switch (k->type) {
		case XINA_TYPE_INT8:
			s = (int16_t)ntohs(((const uint16_t *)src)[i]);
			((int8_t *)dst)[i] = (int8_t)xina_floor_div(s, W);
			break;
		case XINA_TYPE_INT16:
			s = (int32_t)ntohl(src[i]);
			((int16_t *)dst)[i] = (int16_t)xina_floor_div(s, W);
			break;
		case XINA_TYPE_INT32:
			memcpy(w, src + 2 * i, 8);
			s = (int64_t)be64toh(w[0]);
			((int32_t *)dst)[i] = (int32_t)xina_floor_div(s, W);
			break;
		default:
			memcpy(w, src + 4 * i, 16);
			s = (__int128)(int64_t)be64toh(w[0]) * ((__int128)1 << 32) +
			    (int64_t)be64toh(w[1]);
			v = (int64_t)xina_floor_div(s, W);
			memcpy((int64_t *)dst + i, &v, 8);
			break;
		}
	}
}

/*
 * Float MIN and MAX: the IEEE bits as a signed integer of the same width,
 * the bits other than the sign flipped when the sign is set.  The order of
 * those integers is IEEE 754's totalOrder: -NaN < -inf < ... < -0 < +0 <
 * ... < +inf < +NaN.  The map is its own inverse.
 */
static void xina_ord_pack(const struct xina_codec *k, uint32_t *dst,
			  const void *src, size_t cnt)
{
	uint32_t b;
	uint16_t h;
	size_t i;

	if (k->lane_bits == 32) {
		for (i = 0; i < cnt; i++) {
			memcpy(&b, (const float *)src + i, 4);
			b ^= (uint32_t)((int32_t)b >> 31) & 0x7fffffffu;
			dst[i] = htonl(b);
		}
		return;
	}
	for (i = 0; i < cnt; i++) {
		h = ((const uint16_t *)src)[i];
		h ^= (uint16_t)((int16_t)h >> 15) & 0x7fff;
		((uint16_t *)dst)[i] = htons(h);
	}
	xina_pad(dst, cnt * 2);
}

static void xina_ord_unpack(const struct xina_codec *k, void *dst,
			    const uint32_t *src, size_t cnt)
{
	uint32_t b;
	uint16_t h;
	size_t i;

	if (k->lane_bits == 32) {
		for (i = 0; i < cnt; i++) {
			b = ntohl(src[i]);
			b ^= (uint32_t)((int32_t)b >> 31) & 0x7fffffffu;
			memcpy((float *)dst + i, &b, 4);
		}
		return;
	}
	for (i = 0; i < cnt; i++) {
		h = ntohs(((const uint16_t *)src)[i]);
		h ^= (uint16_t)((int16_t)h >> 15) & 0x7fff;
		((uint16_t *)dst)[i] = h;
	}
}

void xina_codec_pack(const struct xina *x, const struct xina_codec *k,
		     uint32_t *dst, const void *src, size_t cnt, int32_t exp)
{
	switch (k->kind) {
	case XINA_K_INT:
		xina_int_pack(k, dst, src, cnt);
		break;
	case XINA_K_WIDE:
	case XINA_K_WIDE64:
		xina_wide_pack(k, dst, src, cnt);
		break;
	case XINA_K_ORD:
		xina_ord_pack(k, dst, src, cnt);
		break;
	case XINA_K_BFP:
		if (k->type == XINA_TYPE_FLOAT32) {
			xina_f32_pack(x, dst, src, cnt, exp);
			break;
		}
		xina_bfp16_pack(x, k, dst, src, cnt, exp);
		xina_pad(dst, cnt * k->lane_bits / 8);
		break;
	}
}

void xina_codec_unpack(const struct xina *x, const struct xina_codec *k,
		       void *dst, const uint32_t *src, size_t cnt,
		       int32_t exp)
{
	unsigned int div = k->op == XINA_OP_AVG ? x->o.workers : 1;

	switch (k->kind) {
	case XINA_K_INT:
		xina_int_unpack(k, dst, src, cnt);
		break;
	case XINA_K_WIDE:
	case XINA_K_WIDE64:
		xina_wide_unpack(x, k, dst, src, cnt);
		break;
	case XINA_K_ORD:
		xina_ord_unpack(k, dst, src, cnt);
		break;
	case XINA_K_BFP:
		if (k->type == XINA_TYPE_FLOAT32)
			xina_f32_unpack(x, dst, src, cnt, exp, div);
		else
			xina_bfp16_unpack(x, k, dst, src, cnt, exp, div);
		break;
	}
}

int xina_run(struct xina *x, void *buf, size_t n, enum xina_type type,
	     enum xina_op op, const uint8_t *map)
{
	struct xina_codec k;
	int err;

	err = xina_call_check(x, buf, n);
	if (err)
		return err;
	err = xina_codec_init(x, &k, type, op, x->err, sizeof(x->err));
	if (!err)
		err = xina_codec_n(&k, n, x->err, sizeof(x->err));
	if (err)
		return err;
	if ((op & XINA_RUN_MAP) && n && !map) {
		xina_fail(x, "NULL map of the blocks of %zu elements", n);
		return -EINVAL;
	}
	/*
	 * The host fallback's copy of the results first: a call that cannot
	 * keep them fails before it sends anything, and the handle stays
	 * usable (a failure in a later engine call of a float or sparse
	 * call, the peers then one call on, leaves it unusable).
	 */
	err = xina_fb_prepare(x, n, &k);
	if (err)
		return err;
	if (op & XINA_RUN_SPARSE) {
		err = xina_run_sparse(x, buf, n, &k, map);
		if (err)
			return err;
	} else if (k.kind == XINA_K_BFP) {
		err = xina_run_bfp(x, buf, n, &k);
		if (err)
			return err;
	} else {
		err = xina_reduce_blocks(x, buf, n, &k, NULL);
		if (err) {
			x->broken = true;
			return err;
		}
	}
	x->st.calls++;
	return 0;
}

/*
 * A caller's @op with libxina's run @bits; one that carries any bit of
 * them itself goes on as it is, for xina_codec_init() to refuse it.
 */
static enum xina_op xina_op_run(enum xina_op op, unsigned int bits)
{
	if (op & (XINA_RUN_BITS | XINA_RUN_OWN))
		return op;
	return op | bits | XINA_RUN_OWN;
}

int xina_allreduce(struct xina *x, void *buf, size_t n, enum xina_type type,
		   enum xina_op op)
{
	return x ? xina_call(x, buf, n, type, op, NULL) : -EINVAL;
}

int xina_allreduce_sparse(struct xina *x, void *buf, size_t n,
			  enum xina_type type, enum xina_op op)
{
	return x ? xina_call(x, buf, n, type,
			     xina_op_run(op, XINA_RUN_SPARSE), NULL) :
		   -EINVAL;
}

int xina_allreduce_sparse_start(struct xina *x, void *buf, size_t n,
				enum xina_type type, enum xina_op op,
				struct xina_req **req)
{
	return xina_start(x, buf, n, type, xina_op_run(op, XINA_RUN_SPARSE),
			  NULL, req);
}

int xina_allreduce_sparse_map(struct xina *x, void *buf, size_t n,
			      enum xina_type type, enum xina_op op,
			      const uint8_t *map)
{
	return x ? xina_call(x, buf, n, type,
			     xina_op_run(op, XINA_RUN_BITS), map) :
		   -EINVAL;
}

int xina_allreduce_sparse_map_start(struct xina *x, void *buf, size_t n,
				    enum xina_type type, enum xina_op op,
				    const uint8_t *map, struct xina_req **req)
{
	return xina_start(x, buf, n, type, xina_op_run(op, XINA_RUN_BITS),
			  map, req);
}

size_t xina_sparse_block(const struct xina *x, enum xina_type type,
			 enum xina_op op)
{
	struct xina_codec k;
	char msg[256];

	if (!x || xina_codec_init(x, &k, type, op, msg, sizeof(msg)))
		return 0;
	return k.per_pkt;
}

int xina_allreduce_i32(struct xina *x, int32_t *buf, size_t n,
		       enum xina_op op)
{
	return xina_allreduce(x, buf, n, XINA_TYPE_INT32, op);
}

int xina_allreduce_start(struct xina *x, void *buf, size_t n,
			 enum xina_type type, enum xina_op op,
			 struct xina_req **req)
{
	return xina_start(x, buf, n, type, op, NULL, req);
}
