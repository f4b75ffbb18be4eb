// SPDX-License-Identifier: GPL-2.0
/*
 * Selftest of libxina's block floating point of float32 and the 16-bit floats
 * (user/lib/libxina_pack.c, built here as libxina builds it: -O3, the AVX2
 * and baseline clones, no contraction).  Its loops are branch-free and
 * vectorised; every element they give must be what the scheme of
 * libxina.h says, bit for bit:
 *
 *   pack:    q = rint(x * 2^s) clamped to +-(2^(B-1-L) - 1),
 *            s = B - 1 - L - E, in B-bit lanes, network order
 *   unpack:  Q * 2^-s (/ W for AVG) rounded once, to nearest, ties to
 *            even, to float16 or bfloat16 (beyond the largest finite
 *            value an infinity)
 *
 * against a reference written here from that definition alone, in double
 * arithmetic (frexp, ldexp, rint), for every headroom L = 0..8, every
 * block exponent E a type can have, random elements, and sums built to be
 * ties and near-ties of the final rounding; blocks of zeros under the
 * exponents below the type's that libxina admits from a peer (float32's,
 * down to -148); blocks of every length modulo 32 (the vector loops'
 * tails).  Every type by each path of the CPU's,
 * one after the other: AVX-512 with its extension for the type
 * (AVX512_BF16, AVX512_FP16) and without, then AVX2 (F16C for float16),
 * then the portable loops alone.
 */
#include <arpa/inet.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "libxina_int.h"
#include "kselftest_harness.h"
#include "xina_log.h"

#define N	1024

struct fmt {
	const char	*name;
	enum xina_type	type;
	int		p;	/* significand bits, the hidden one included */
	int		qmin;	/* exponent of the smallest subnormal */
	int		emax;	/* largest finite value < 2^emax */
	int		emin;	/* frexp exponent of the smallest subnormal */
};

static const struct fmt f16 = { "float16", XINA_TYPE_FLOAT16, 11, -24, 16, -23 };
static const struct fmt bf16 = { "bfloat16", XINA_TYPE_BFLOAT16, 8, -133, 128, -132 };

static uint64_t rs = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

/* The value of the bits @h of a 16-bit float (finite or infinite). */
static double val(const struct fmt *f, uint16_t h)
{
	int ebits = f->type == XINA_TYPE_FLOAT16 ? 5 : 8, mb = f->p - 1;
	int e = h >> mb & ((1 << ebits) - 1), bias = (1 << (ebits - 1)) - 1;
	double m = h & ((1 << mb) - 1), v;

	if (e == (1 << ebits) - 1)
		v = INFINITY;
	else if (e)
		v = ldexp(m + ldexp(1, mb), e - bias - mb);
	else
		v = ldexp(m, 1 - bias - mb);
	return h & 0x8000 ? -v : v;
}

/* @d rounded to the format: to nearest, ties to even, past it infinite. */
static double ref_round(const struct fmt *f, double d)
{
	double r;
	int e, qe;

	if (d == 0)
		return d;
	frexp(d, &e);			/* 2^(e-1) <= |d| < 2^e */
	qe = e - f->p > f->qmin ? e - f->p : f->qmin;
	r = ldexp(rint(ldexp(d, -qe)), qe);	/* both exact in double */
	if (fabs(r) >= ldexp(1, f->emax))
		return copysign(INFINITY, d);
	return r;
}

/* A random finite 16-bit float whose magnitude is below 2^@e. */
static uint16_t rnd_below(const struct fmt *f, int e)
{
	int ebits = f->type == XINA_TYPE_FLOAT16 ? 5 : 8, mb = f->p - 1;
	int bias = (1 << (ebits - 1)) - 1, hi = e + bias - 1;
	uint16_t sign = rnd() & 0x8000, m;

	if (hi > (1 << ebits) - 2)
		hi = (1 << ebits) - 2;
	if (hi < 0)	/* subnormals below 2^e: m < 2^(e - qmin) */
		return sign | (uint16_t)(rnd() % (1u << (e - f->qmin)));
	m = rnd() & ((1u << mb) - 1);
	return sign | (uint16_t)((rnd() % (hi + 1)) << mb) | m;
}

static struct xina x;
static uint16_t in[N], got16[N];
static uint32_t lanes[N];

/*
 * The paths of libxina's float loops, best first; set_path() picks path
 * @p for a type whose AVX2 path @vec switches (xina_avx2 or xina_f16c),
 * and says whether this CPU has it.  The first is AVX-512 with the
 * extension for the type (@ext: AVX512_BF16 for bfloat16, AVX512_FP16
 * for float16, none for float32, which skips it).
 */
enum { P_AVX512_EXT, P_AVX512, P_AVX2, P_PORTABLE, P_NR };
static const char *const path_name[] = { "AVX-512 + BF16/FP16",
					  "AVX-512", "AVX2", "portable" };

static bool set_path(unsigned int p, int *vec, int ext)
{
	xina_avx512 = -1;
	xina_has_avx512();
	*vec = -1;
	switch (p) {
	case P_AVX512_EXT:
		return ext && (xina_avx512 & ext);
	case P_AVX512:
		xina_avx512 &= XINA_AVX512_F;
		return xina_avx512;
	case P_AVX2:
		xina_avx512 = 0;
		return __builtin_cpu_supports("avx2") &&
		       (vec != &xina_f16c || __builtin_cpu_supports("f16c"));
	default:
		xina_avx512 = 0;
		*vec = 0;
		return true;
	}
}

static bool same(double a, double b)
{
	return a == b && signbit(a) == signbit(b);
}

/* Pack @cnt elements of @f at exponent @E into @bits lanes; compare. */
static void check_pack(const struct fmt *f, unsigned int bits, int E,
		       size_t cnt, unsigned int *bad)
{
	struct xina_codec k = { .type = f->type, .lane_bits = bits };
	int b = bits - 1 - (int)x.headroom;
	double lim = ldexp(1, b) - 1, q;
	int32_t w;
	size_t i;

	xina_bfp16_pack(&x, &k, lanes, in, cnt, E);
	for (i = 0; i < cnt; i++) {
		q = rint(ldexp(val(f, in[i]), b - E));
		q = q > lim ? lim : q < -lim ? -lim : q;
		w = bits == 16 ? (int16_t)ntohs(((uint16_t *)lanes)[i]) :
				 (int32_t)ntohl(lanes[i]);
		if (w != (int32_t)q && !(*bad)++)
			LOG("%s in %u-bit lanes, L %u, E %d: element %04x packed as %d, not %.0f",
			    f->name, bits, x.headroom, E,
			    in[i], w, q);
	}
}

/* Unpack @lanes (sums) of @f at exponent @E, / @div; compare. */
static void check_unpack(const struct fmt *f, unsigned int bits, int E,
			 unsigned int div, size_t cnt, unsigned int *bad)
{
	struct xina_codec k = { .type = f->type, .lane_bits = bits };
	int e = E - (int)bits + 1 + (int)x.headroom;
	double Q, want;
	size_t i;

	xina_bfp16_unpack(&x, &k, got16, lanes, cnt, E, div);
	for (i = 0; i < cnt; i++) {
		Q = bits == 16 ? (int16_t)ntohs(((uint16_t *)lanes)[i]) :
				 (int32_t)ntohl(lanes[i]);
		want = ref_round(f, ldexp(Q, e) / div);
		if (!same(val(f, got16[i]), want) && !(*bad)++)
			LOG("%s from %u-bit lanes, L %u, E %d, /%u: sum %.0f gave %04x (%a), not %a",
			    f->name, bits, x.headroom, E,
			    div, Q, got16[i], val(f, got16[i]), want);
	}
}

/* Sums of @bits lanes: random, and ties and near-ties of the rounding. */
static void fill_sums(unsigned int bits)
{
	int64_t v, max = bits == 16 ? 0x7fff : 0x7fffffff;
	unsigned int sh;
	size_t i;

	for (i = 0; i < N; i++) {
		if (i & 1) {
			v = (int64_t)(rnd() & (uint64_t)max);
		} else {
			sh = 1 + rnd() % (bits - 3);
			v = (int64_t)(rnd() % 4096) << sh | 1ll << (sh - 1);
			v += (int64_t)(rnd() % 3) - 1;
			v = v > max ? max : v;
		}
		if (rnd() & 1)
			v = -v;
		if (bits == 16)
			((uint16_t *)lanes)[i] = htons((uint16_t)(int16_t)v);
		else
			lanes[i] = htonl((uint32_t)(int32_t)v);
	}
}

/* Every L, every exponent of @f, @reps blocks each, both directions. */
static void sweep(struct __test_metadata *_metadata, const struct fmt *f,
		  unsigned int bits, unsigned int reps, const char *path)
{
	unsigned int bad = 0, blk = 0, L, r, div;
	size_t i, len;
	int E, own;

	for (L = 0; L <= 8; L++) {
		x.headroom = L;
		x.o.workers = 1u << L;
		for (E = f->emin; E <= f->emax; E++) {
			for (r = 0; r < reps; r++) {
				/* the block's own exponent, at most E */
				own = E - (int)(rnd() % 4);
				own = own < f->emin ? f->emin : own;
				for (i = 0; i < N; i++)
					in[i] = rnd_below(f, own);
				len = N - blk++ % 32;	/* every tail */
				check_pack(f, bits, E, len, &bad);
				fill_sums(bits);
				for (div = 1; div <= 3; div += 2)
					check_unpack(f, bits, E, div, len,
						     &bad);
			}
		}
	}
	/*
	 * Exponents below the type's smallest, down to float32's that
	 * libxina admits from a peer: only a block of zeros (+0 and -0) can
	 * have one, whatever exponent the other workers agree on, and it
	 * packs as zeros; any sums unpack by the scheme.
	 */
	for (L = 0; L <= 8; L++) {
		x.headroom = L;
		x.o.workers = 1u << L;
		for (E = -148; E < f->emin; E++) {
			for (i = 0; i < N; i++)
				in[i] = rnd() & 0x8000;
			len = N - blk++ % 32;
			check_pack(f, bits, E, len, &bad);
			fill_sums(bits);
			check_unpack(f, bits, E, 1, len, &bad);
		}
	}
	EXPECT_TRUE(!bad) {
		TH_LOG("%u elements of %s in %u-bit lanes differ from the scheme (%s loops)",
		       bad, f->name, bits, path);
	}
}

/* A 16-bit float type in INT16 lanes, by every path this CPU has. */
static void sweep_paths(struct __test_metadata *_metadata,
			const struct fmt *f, unsigned int reps)
{
	int *vec = f == &bf16 ? &xina_avx2 : &xina_f16c;
	int ext = f == &bf16 ? XINA_AVX512_BF16 : XINA_AVX512_FP16;
	unsigned int p;

	for (p = 0; p < P_NR; p++) {
		if (!set_path(p, vec, ext)) {
			TH_LOG("%s in 16-bit lanes: %s loops not on this CPU",
			       f->name, path_name[p]);
			continue;
		}
		sweep(_metadata, f, 16, reps, path_name[p]);
		TH_LOG("%s in 16-bit lanes: %s loops checked", f->name,
		       path_name[p]);
	}
	xina_avx512 = -1;
	*vec = -1;
}

TEST(bfloat16_int16_lanes)
{
	sweep_paths(_metadata, &bf16, 2);
}

TEST(float16_int16_lanes)
{
	sweep_paths(_metadata, &f16, 12);
}

/* INT32 lanes (XINA_OPT_F_F16_WIDE): portable loops only. */
TEST(float16_int32_lanes)
{
	sweep(_metadata, &f16, 32, 12, "portable");
}

/*
 * float32 into INT32 lanes (xina_f32_pack()): q = rint(x * 2^s) clamped
 * to +-(2^(31-L) - 1), s = 31 - L - E, against the definition in double,
 * for every headroom L = 0..8, every block exponent E of a float (|x| <
 * 2^E: its subnormals to its largest), random elements, the block's
 * largest value just below 2^E (which, where a float's quantum there is
 * above 1/2, rounds up to the clamp) and halves (ties of the rounding);
 * blocks of every length from N - 15 to N (the tails of loops of 16 and of
 * 8).  By each path the CPU has (AVX-512, AVX2, the double loop); the
 * same for the way back below.
 */
static float f32in[N];

static unsigned int f32_sweep(void)
{
	unsigned int bad = 0, L, i, n, r;
	double lim, v;
	int E, s;

	for (L = 0; L <= 8; L++) {
		x.headroom = L;
		x.o.workers = 1u << L;
		lim = ldexp(1.0, 31 - (int)L) - 1;
		for (E = -148; E <= 128; E++) {
			s = 31 - (int)L - E;
			for (r = 0; r < 2; r++) {
				n = N - (unsigned int)(E + 148 + r) % 16;
				for (i = 0; i < n; i++) {
					/* |x| < 2^E, 24 random bits, or a tie */
					v = ldexp((double)(rnd() >> 40), E - 24 -
						  (int)(rnd() % 8 == 0 ? rnd() % 30 : 0));
					if (i % 17 == 3)
						v = ldexp((double)(rnd() % 64) + 0.5, -s);
					f32in[i] = (float)v;
					if (fabs(f32in[i]) >= ldexp(1.0, E))
						f32in[i] = 0;
					if (rnd() & 1)
						f32in[i] = -f32in[i];
				}
				f32in[0] = nextafterf((float)ldexp(1.0, E), 0.0f);
				xina_f32_pack(&x, lanes, f32in, n, E);
				for (i = 0; i < n; i++) {
					v = rint(ldexp((double)f32in[i], s));
					v = v > lim ? lim : v < -lim ? -lim : v;
					if (ntohl(lanes[i]) != (uint32_t)(int32_t)v &&
					    bad++ < 4)
						LOG("float32, L=%u, E=%d: %a packs to 0x%08x, the scheme says 0x%08x",
						    L, E, f32in[i], ntohl(lanes[i]),
						    (uint32_t)(int32_t)v);
				}
			}
		}
	}
	return bad;
}

/*
 * And back (xina_f32_unpack()): r = Q * 2^-s rounded once to float (AVG:
 * Q * 2^-s / W, rounded once to double, then to float), against the
 * double arithmetic of the definition, for every L and E as above and
 * sums Q of every magnitude, the extremes, and ties of the rounding to 24
 * bits (an odd 25-bit integer, shifted).
 */
static float f32out[N];

static unsigned int f32_unsweep(void)
{
	static const int32_t ends[] = { 0, 1, -1, INT32_MAX, -INT32_MAX,
					INT32_MIN, 0x1000001, -0x3000003 };
	unsigned int bad = 0, L, i, n, div;
	uint32_t got, want;
	int32_t q[N];
	double v;
	float w;
	int E, s;

	for (L = 0; L <= 8; L++) {
		x.headroom = L;
		x.o.workers = 1u << L;
		for (E = -148; E <= 128; E++) {
			s = 31 - (int)L - E;
			n = N - (unsigned int)(E + 148) % 16;
			for (i = 0; i < n; i++) {
				q[i] = (int32_t)(uint32_t)(rnd() >> 32) >>
				       (rnd() % 32);
				if (i % 13 == 5)	/* a tie at 24 bits */
					q[i] = (int32_t)((((rnd() >> 40) |
							  0x1000000) | 1) <<
							 (rnd() % 7)) *
					       (rnd() & 1 ? -1 : 1);
				if (i < sizeof(ends) / sizeof(ends[0]))
					q[i] = ends[i];
				lanes[i] = htonl((uint32_t)q[i]);
			}
			for (div = 1; div <= 3; div += 2) {
				xina_f32_unpack(&x, f32out, lanes, n, E, div);
				for (i = 0; i < n; i++) {
					v = ldexp((double)q[i], -s);
					w = (float)(div > 1 ? v / div : v);
					memcpy(&got, &f32out[i], sizeof(got));
					memcpy(&want, &w, sizeof(want));
					if (got != want && bad++ < 4)
						LOG("float32, L=%u, E=%d, /%u: sum %d unpacks to %a, the scheme says %a",
						    L, E, div, q[i], f32out[i], w);
				}
			}
		}
	}
	return bad;
}

TEST(float32_int32_lanes)
{
	unsigned int bad, p;

	for (p = P_AVX512; p < P_NR; p++) {
		if (!set_path(p, &xina_avx2, 0)) {
			TH_LOG("float32 in 32-bit lanes: %s loops not on this CPU",
			       path_name[p]);
			continue;
		}
		bad = f32_sweep() + f32_unsweep();
		EXPECT_EQ(bad, 0) {
			TH_LOG("%u float32 elements differ from the scheme (%s loops)",
			       bad, path_name[p]);
		}
		TH_LOG("float32 in 32-bit lanes: %s loops checked",
		       path_name[p]);
	}
	xina_avx512 = -1;
	xina_avx2 = -1;
}

/* A block of zeros (XINA_EXP_ZERO) packs and unpacks to +0 exactly. */
TEST(zero_block)
{
	struct xina_codec k = { .type = XINA_TYPE_BFLOAT16, .lane_bits = 16 };
	size_t i;

	memset(in, 0x55, sizeof(in));
	memset(lanes, 0x55, sizeof(lanes));
	xina_bfp16_pack(&x, &k, lanes, in, N, XINA_EXP_ZERO);
	for (i = 0; i < N / 2; i++) {
		ASSERT_EQ(lanes[i], 0);
	}
	xina_bfp16_unpack(&x, &k, got16, lanes, N, XINA_EXP_ZERO, 1);
	for (i = 0; i < N; i++) {
		ASSERT_EQ(got16[i], 0);
	}
}

/* The reference itself, on values spelt out. */
TEST(reference)
{
	EXPECT_TRUE(same(ref_round(&f16, 1 + 0x1p-11), 1.0)) {
		TH_LOG("1 + 2^-11 ties to 1");
	}
	EXPECT_TRUE(same(ref_round(&f16, 1 + 0x3p-11), 1 + 0x1p-9)) {
		TH_LOG("1 + 3 * 2^-11 ties to 1 + 2^-9");
	}
	EXPECT_TRUE(same(ref_round(&f16, 65519.99), 65504.0)) {
		TH_LOG("below 65520: 65504");
	}
	EXPECT_TRUE(isinf(ref_round(&f16, 65520.0))) {
		TH_LOG("65520: infinite");
	}
	EXPECT_TRUE(same(ref_round(&f16, 0x1p-25), 0.0)) {
		TH_LOG("2^-25 ties to 0");
	}
	EXPECT_TRUE(same(ref_round(&f16, -0x3p-26), -0x1p-24)) {
		TH_LOG("-3 * 2^-26: -2^-24");
	}
	EXPECT_TRUE(same(ref_round(&bf16, 1 + 0x1p-8), 1.0)) {
		TH_LOG("bfloat16: 1 + 2^-8 ties to 1");
	}
	EXPECT_TRUE(same(ref_round(&bf16, 0x3p-135), 0x1p-133)) {
		TH_LOG("bfloat16: 3 * 2^-135 rounds to 2^-133");
	}
	EXPECT_TRUE(same(val(&f16, 0x3c00), 1.0) && same(val(&f16, 0x0001), 0x1p-24) &&
		    same(val(&bf16, 0x3f80), 1.0) && same(val(&bf16, 0x8001), -0x1p-133)) {
		TH_LOG("decoding of 1 and the smallest subnormals");
	}
}

TEST_HARNESS_MAIN
