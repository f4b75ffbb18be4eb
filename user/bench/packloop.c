// SPDX-License-Identifier: GPL-2.0
/*
 * xina-bench-packloop: the worker's element loops, per type, on their own.
 * What libxina does to the elements of one packet on the way out (pack:
 * byte order, and for floats the block floating point quantisation at an
 * agreed exponent) and on the way in (unpack), and the pass over a block
 * that finds its largest magnitude (scan: the floats' exponent, before
 * their sum), the loops of user/lib/libxina_pack.c, built with its flags.
 *
 *   xina-bench-packloop [-n BLOCKS] [-r REPEATS]
 *
 * Each loop runs on blocks of 2048 32-bit words' worth of elements (an
 * MTU 9000 packet: 2048 int32 or float32, 4096 16-bit elements), from a
 * ring of 16 blocks that stays in cache: the cost of the arithmetic, not
 * of memory (a 64 MiB tensor is read at memory speed whatever the loop).
 * The floats by each path libxina has for them where the CPU has it:
 * AVX-512 ("avx512", libxina_pack512.c, with AVX512_BF16 for bfloat16's
 * unpacking where the CPU has that), AVX2 (float32 and bfloat16) or F16C
 * (float16) ("vector"), and the portable loops they all fall back to
 * ("portable"); the integer loops are the compiler's.
 *
 * One JSON line per (type, loop, path): the median over REPEATS of ns per
 * block (each repeat times chunks of 64 blocks and takes the median
 * chunk, so that a chunk in which the thread was preempted does not
 * count), with the block's element count.  Pinned to CPU 0.  The packed blocks are
 * unpacked again and compared with the input, so that a loop that does
 * nothing cannot look fast.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"
#include "libxina_int.h"

#define RING		16
#define WORDS		2048	/* 32-bit words of a block: an MTU 9000 packet */
#define CHUNK		64	/* blocks per timed chunk */
#define MAX_REPEATS	64
#define HEADROOM	2	/* 4 workers */
#define EXP		1	/* agreed exponent: every input is below 2^1 */

static uint32_t in[RING][WORDS];	/* the caller's elements */
static uint32_t lanes[RING][WORDS];	/* the packet's, network order */
static uint32_t out[RING][WORDS];	/* unpacked again */

enum loop { PACK, UNPACK, SCAN };
/* The float loops' paths, libxina's first choice first. */
static const char *const path_name[] = { "avx512", "vector", "portable" };
static const char *const loop_name[] = { "pack", "unpack", "scan" };

struct codec {
	const char *type;
	enum xina_type t;
	unsigned int esz;	/* bytes per element */
	int *vec;		/* libxina's switch for its vector path, or NULL */
};

static const struct codec codecs[] = {
	{ "int16", XINA_TYPE_INT16, 2, NULL },
	{ "int32", XINA_TYPE_INT32, 4, NULL },
	{ "float16", XINA_TYPE_FLOAT16, 2, &xina_f16c },
	{ "bfloat16", XINA_TYPE_BFLOAT16, 2, &xina_avx2 },
	{ "float32", XINA_TYPE_FLOAT32, 4, &xina_avx2 },
};

static struct xina x = { .headroom = HEADROOM };
static volatile uint32_t sink;

static void one(const struct codec *c, enum loop l, unsigned int b)
{
	struct xina_codec k = { .type = c->t, .lane_bits = 16 };
	size_t cnt = WORDS * 4 / c->esz;

	switch (c->t) {
	case XINA_TYPE_INT16:
		if (l == PACK)
			xina_i16_pack((uint16_t *)lanes[b],
				      (const int16_t *)in[b], cnt);
		else
			xina_i16_unpack((int16_t *)out[b],
					(const uint16_t *)lanes[b], cnt);
		break;
	case XINA_TYPE_INT32:
		if (l == PACK)
			xina_i32_pack(lanes[b], (const int32_t *)in[b], cnt);
		else
			xina_i32_unpack((int32_t *)out[b], lanes[b], cnt);
		break;
	case XINA_TYPE_FLOAT32:
		if (l == PACK)
			xina_f32_pack(&x, lanes[b], (const float *)in[b], cnt,
				      EXP);
		else if (l == UNPACK)
			xina_f32_unpack(&x, (float *)out[b], lanes[b], cnt,
					EXP, 1);
		else
			sink = xina_max_abs_bits((const float *)in[b], cnt);
		break;
	default:
		if (l == PACK)
			xina_bfp16_pack(&x, &k, lanes[b],
					(const uint16_t *)in[b], cnt, EXP);
		else if (l == UNPACK)
			xina_bfp16_unpack(&x, &k, (uint16_t *)out[b],
					  lanes[b], cnt, EXP, 1);
		else
			sink = xina_max_abs_bits16((const uint16_t *)in[b],
						   cnt);
		break;
	}
}

/* ns per block: the median over chunks of CHUNK blocks. */
static double run(const struct codec *c, enum loop l, unsigned long blocks,
		  double *chunk_ns)
{
	unsigned long n, end, nc = 0;
	double t0;

	for (n = 0; n < blocks; n = end) {
		end = n + CHUNK < blocks ? n + CHUNK : blocks;
		t0 = mono_s();
		for (; n < end; n++) {
			one(c, l, n % RING);
			asm volatile("" ::: "memory");
		}
		chunk_ns[nc++] = (mono_s() - t0) * 1e9 / CHUNK;
	}
	return quantile(chunk_ns, nc > 1 && blocks % CHUNK ? nc - 1 : nc, 0.5);
}

/*
 * Inputs exact at the agreed exponent: small integers times a power of
 * two, so that pack then unpack gives them back bit for bit.
 */
static void fill(const struct codec *c)
{
	size_t cnt = WORDS * 4 / c->esz, b, i;
	double v;
	float f;
	uint32_t u;

	for (b = 0; b < RING; b++) {
		for (i = 0; i < cnt; i++) {
			v = ldexp((double)((int)((b * 131 + i * 7) % 255) - 127),
				  -7);
			f = (float)v;
			memcpy(&u, &f, sizeof(u));
			switch (c->t) {
			case XINA_TYPE_INT16:
				((int16_t *)in[b])[i] = (int16_t)(v * 128);
				break;
			case XINA_TYPE_INT32:
				((int32_t *)in[b])[i] = (int32_t)(v * 128);
				break;
			case XINA_TYPE_FLOAT32:
				memcpy(&in[b][i], &f, sizeof(f));
				break;
			case XINA_TYPE_BFLOAT16:
				((uint16_t *)in[b])[i] = u >> 16;
				break;
			default:
				((uint16_t *)in[b])[i] = xina_d2h(v, false);
				break;
			}
		}
	}
}

/* Pack then unpack every block once more, and compare with the input. */
static int check(const struct codec *c, const char *path)
{
	unsigned int b;

	memset(out, 0, sizeof(out));
	for (b = 0; b < RING; b++) {
		one(c, PACK, b);
		one(c, UNPACK, b);
		if (memcmp(in[b], out[b], sizeof(in[b]))) {
			fprintf(stderr, "xina-bench-packloop: %s (%s): block %u did not come back as it went in\n",
				c->type, path, b);
			return 1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long blocks = 20000;
	unsigned int reps = 5, r, i, p;
	double ns[MAX_REPEATS], *chunk_ns, med;
	enum loop l;
	cpu_set_t set;
	int opt;

	while ((opt = getopt(argc, argv, "n:r:")) != -1) {
		switch (opt) {
		case 'n':
			blocks = strtoul(optarg, NULL, 10);
			break;
		case 'r':
			reps = strtoul(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr, "usage: xina-bench-packloop [-n BLOCKS] [-r REPEATS]\n");
			return 2;
		}
	}
	if (blocks < CHUNK || reps < 1 || reps > MAX_REPEATS) {
		fprintf(stderr, "xina-bench-packloop: need -n >= %d and -r 1..%d\n",
			CHUNK, MAX_REPEATS);
		return 2;
	}
	chunk_ns = calloc(blocks / CHUNK + 1, sizeof(*chunk_ns));
	if (!chunk_ns) {
		fprintf(stderr, "xina-bench-packloop: out of memory\n");
		return 1;
	}
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);

	for (i = 0; i < sizeof(codecs) / sizeof(codecs[0]); i++) {
		const struct codec *c = &codecs[i];

		fill(c);
		/*
		 * path 0: AVX-512 (libxina's choice where the CPU has it);
		 * 1: AVX2 or F16C; 2: the portable loops
		 */
		for (p = 0; p < (c->vec ? 3 : 1); p++) {
			const char *path = !c->vec ? "compiler" :
					   path_name[p];

			if (c->vec) {
				xina_avx512 = -1;	/* ask the CPU */
				*c->vec = -1;
				one(c, PACK, 0);
				if (p == 0 && xina_avx512 < 1)
					continue;	/* not on this CPU */
				if (p > 0)
					xina_avx512 = 0;
				if (p == 1 && *c->vec != 1)
					continue;
				if (p == 2)
					*c->vec = 0;
			}
			if (check(c, path)) {
				free(chunk_ns);
				return 1;
			}
			for (l = PACK; l <= SCAN; l++) {
				if (l == SCAN && (p || c->t == XINA_TYPE_INT16 ||
						  c->t == XINA_TYPE_INT32))
					continue;
				for (r = 0; r < reps; r++)
					ns[r] = run(c, l, blocks, chunk_ns);
				med = quantile(ns, reps, 0.5);
				printf("{\"bench\":\"packloop\",\"dtype\":\"%s\",\"loop\":\"%s\","
				       "\"path\":\"%s\",\"elems\":%u,\"blocks\":%lu,\"repeats\":%u,"
				       "\"ns_median\":%.1f,\"ns_min\":%.1f,\"ns_max\":%.1f}\n",
				       c->type, loop_name[l], l == SCAN ? "compiler" : path,
				       WORDS * 4 / c->esz, blocks, reps, med, ns[0],
				       ns[reps - 1]);
			}
		}
		if (c->vec)
			*c->vec = -1;
		xina_avx512 = -1;
	}
	free(chunk_ns);
	return 0;
}
