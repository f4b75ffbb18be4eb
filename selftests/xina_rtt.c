// SPDX-License-Identifier: GPL-2.0
/*
 * Selftest of the round-trip estimator (bpf/xina_rtt.h), which the XDP
 * fast path's uplink, libxina and xina-swagg --up share, against a
 * reference written here from RFC 6298 alone, in double arithmetic:
 *
 *   first sample R:  SRTT = R, RTTVAR = R/2                     (2.2)
 *   next sample R:   RTTVAR = 3/4 RTTVAR + 1/4 |SRTT - R|,
 *                    then SRTT = 7/8 SRTT + 1/8 R               (2.3)
 *   timeout:         max(floor, SRTT + 4 RTTVAR) * 2^backoff,
 *                    at most the cap                 (2.3, 2.4, 5.5)
 *
 * R is the sample in whole microseconds, at least 1 (the header's unit).
 * The header truncates each eighth and quarter: after a sample the error
 * in srtt is 7/8 of the one before plus less than 1 us, so it stays below
 * 8 us; rttvar's is 3/4 of its own plus less than 1 us plus a quarter of
 * srtt's, so it stays below 12 us.  Those are the bounds checked, over
 * random samples in phases (steady, growing, shrinking, jumping, tiny),
 * from a fixed seed so that a failure comes back.
 */
#include <stdint.h>
#include <math.h>

#include "xina_rtt.h"
#include "kselftest_harness.h"

#define SRTT_ERR	8.0
#define RTTVAR_ERR	12.0
#define RUNS		20
#define PHASE		100	/* samples per phase, 5 phases a run */

struct ref {
	double	srtt, rttvar;	/* srtt 0: no sample yet */
};

static void ref_sample(struct ref *f, double r)
{
	if (!f->srtt) {
		f->srtt = r;
		f->rttvar = r / 2;
		return;
	}
	f->rttvar = 0.75 * f->rttvar + 0.25 * fabs(f->srtt - r);
	f->srtt = 0.875 * f->srtt + 0.125 * r;
}

static double ref_rto(const struct ref *f, double floor_us, double max_us,
		      unsigned int backoff)
{
	double rto = floor_us;

	if (f->srtt && f->srtt + 4 * f->rttvar > rto)
		rto = f->srtt + 4 * f->rttvar;
	rto = ldexp(rto, backoff);
	return rto > max_us ? max_us : rto;
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A uniform double in [0, 1). */
static double rndu(void)
{
	return (rnd() >> 11) * 0x1p-53;
}

/* The header's unit: whole microseconds of @ns, at least 1. */
static double ref_us(uint64_t ns)
{
	return ns < 1000 ? 1 : (double)(ns / 1000);
}

TEST(first_sample)
{
	static const struct { uint64_t ns; uint32_t srtt, rttvar; } c[] = {
		{ 0, 1, 0 },			/* 0: no sample, so 1 us */
		{ 999, 1, 0 },
		{ 1999, 1, 0 },
		{ 2000, 2, 1 },
		{ 1234567, 1234, 617 },
		{ 200000000, 200000, 100000 },
		{ 0xffffffffULL * 1000, 0xffffffffU, 0x7fffffffU },
		{ ~0ULL, 0xffffffffU, 0x7fffffffU },	/* saturated */
	};
	unsigned int i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct xina_rtt e = {};

		xina_rtt_sample(&e, c[i].ns);
		EXPECT_EQ(e.srtt_us, c[i].srtt);
		EXPECT_EQ(e.rttvar_us, c[i].rttvar);
	}
}

TEST(no_sample_rto)
{
	struct xina_rtt e = {};

	/* the floor, backed off, capped */
	EXPECT_EQ(xina_rtt_rto(&e, 20000, 200000, 0), 20000);
	EXPECT_EQ(xina_rtt_rto(&e, 20000, 200000, 3), 160000);
	EXPECT_EQ(xina_rtt_rto(&e, 20000, 200000, 4), 200000);
	EXPECT_EQ(xina_rtt_rto(&e, 0, 200000, 0), 0);
}

/* The next sample (ns) of phase @ph around base @b (us), which it moves. */
static uint64_t phase_ns(int ph, double *b)
{
	double us;

	switch (ph) {
	case 0:		/* steady: +-25% around the base */
		us = *b * (0.75 + 0.5 * rndu());
		break;
	case 1:		/* growing 5% a sample, noisy */
		*b *= 1.05;
		us = *b * (0.9 + 0.2 * rndu());
		break;
	case 2:		/* shrinking 5% a sample, noisy */
		*b /= 1.05;
		us = *b * (0.9 + 0.2 * rndu());
		break;
	case 3:		/* a tenth of the samples ten times late */
		us = *b * (rnd() % 10 ? 1.0 : 10.0) * (0.95 + 0.1 * rndu());
		break;
	default:	/* tiny: 0..20 us, truncation at its worst */
		us = 20 * rndu();
		break;
	}
	return (uint64_t)(us * 1000) + rnd() % 1000;
}

TEST(against_rfc6298)
{
	double worst_s = 0, worst_v = 0, worst_o = 0;
	int run, ph, i, n = 0;

	for (run = 0; run < RUNS; run++) {
		/* bases from 10 us to 100 ms */
		double b = 10 * pow(10, 4 * rndu());
		struct xina_rtt e = {};
		struct ref f = {};

		for (ph = 0; ph < 5; ph++) {
			for (i = 0; i < PHASE; i++, n++) {
				uint64_t ns = phase_ns(ph, &b);
				unsigned int bo = rnd() % 4;
				double ds, dv, dr;
				__u32 rto;

				xina_rtt_sample(&e, ns);
				ref_sample(&f, ref_us(ns));
				ds = fabs(e.srtt_us - f.srtt);
				dv = fabs(e.rttvar_us - f.rttvar);
				ASSERT_TRUE(ds < SRTT_ERR && dv < RTTVAR_ERR) {
					TH_LOG("run %d phase %d sample %d (%llu ns): srtt %u rttvar %u, RFC 6298 %.3f %.3f",
					       run, ph, i, (unsigned long long)ns,
					       e.srtt_us, e.rttvar_us, f.srtt,
					       f.rttvar);
				}
				/* floor 20 ms, cap 200 ms: both get hit */
				rto = xina_rtt_rto(&e, 20000, 200000, bo);
				dr = fabs(rto - ref_rto(&f, 20000, 200000, bo));
				ASSERT_TRUE(dr < ldexp(SRTT_ERR + 4 * RTTVAR_ERR, bo)) {
					TH_LOG("run %d phase %d sample %d: rto %u, RFC 6298 %.3f (backoff %u)",
					       run, ph, i, rto,
					       ref_rto(&f, 20000, 200000, bo), bo);
				}
				worst_s = ds > worst_s ? ds : worst_s;
				worst_v = dv > worst_v ? dv : worst_v;
				worst_o = dr > worst_o ? dr : worst_o;
			}
		}
	}
	TH_LOG("%d samples: worst |srtt - SRTT| %.3f us, |rttvar - RTTVAR| %.3f us, |rto - RTO| %.3f us",
	       n, worst_s, worst_v, worst_o);
}

/*
 * Samples at the top of the range, alternating with the smallest: neither
 * the state nor the timeout wraps (a wrap is off by 2^32 us, far beyond
 * the bounds).
 */
TEST(saturated)
{
	struct xina_rtt e = {};
	struct ref f = {};
	uint64_t ns;
	double want;
	int i;

	for (i = 0; i < 50; i++) {
		ns = i & 1 ? ~0ULL : 1000;
		xina_rtt_sample(&e, ns);
		ref_sample(&f, ns > 0xffffffffULL * 1000 ? 0xffffffffU :
			   ref_us(ns));
		ASSERT_TRUE(fabs(e.srtt_us - f.srtt) < SRTT_ERR &&
			    fabs(e.rttvar_us - f.rttvar) < RTTVAR_ERR) {
			TH_LOG("sample %d: srtt %u rttvar %u, RFC 6298 %.3f %.3f",
			       i, e.srtt_us, e.rttvar_us, f.srtt, f.rttvar);
		}
		want = ref_rto(&f, 0, 0xffffffffU, 0);
		ASSERT_TRUE(fabs(xina_rtt_rto(&e, 0, 0xffffffffU, 0) - want) <
			    SRTT_ERR + 4 * RTTVAR_ERR) {
			TH_LOG("sample %d: rto %u, RFC 6298 %.3f", i,
			       xina_rtt_rto(&e, 0, 0xffffffffU, 0), want);
		}
	}
}

TEST_HARNESS_MAIN
