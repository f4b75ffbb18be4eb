// SPDX-License-Identifier: GPL-2.0
/*
 * xina-allreduce: one worker of a xina allreduce job, for the demo, the
 * selftests and the benchmarks.
 *
 * The input of every worker is a deterministic function of (rank, element,
 * iteration), so each worker recomputes all workers' inputs and checks
 * its result on its own, for every --type and --op: the integer types
 * bit-exact against per-element arithmetic done here (SUM wrapping, MIN
 * and MAX signed, AND, OR, XOR, AVG the floor of the exact mean); float
 * MIN and MAX bit-exact against IEEE 754 totalOrder worked out here on
 * values (inputs include -0, infinities and NaNs of both signs); float
 * SUM and AVG finite, bitwise equal to the block floating point scheme of
 * libxina.h recomputed here, and within an error bound derived here from
 * the exact sum of the inputs (see ar_check_f32() and ar_check_bfp()).
 * The FNV-1a checksum of the results lets the caller check that all
 * workers got identical bits.
 *
 * With --json, one line of keys; besides the counters of
 * struct xina_worker_stats:
 *   verified, bad_elems	every element of every iteration checked
 *   max_abs_err, bound,	float32: the largest error against the exact
 *   worst_err_over_bound	sum, the bound there, and the largest ratio
 *   seconds_median/_min	of the timed calls (a barrier precedes each)
 *   t_start, t_end		CLOCK_REALTIME seconds (6 decimals) when the
 *				first timed call began and when the last
 *				one returned: runs of different jobs can be
 *				shown to overlap in time
 *   inflight			calls each iteration is cut into (--inflight)
 *   sparse_*			--sparse P: the workers' density (P/1000), the
 *				blocks that travelled and those skipped
 *   sparse_expect_*		... and what they must be: the blocks of the
 *				sparse calls, those zero on every worker
 *				(worked out here from every worker's
 *				input), to compare them with, and those
 *				that travel but are zero on this worker
 *				(_zero: zero_sent has them, where the op
 *				and the switch let a block of zeros go as
 *				its header alone)
 *   dense_seconds, seconds	--sparse-paired: every iteration's dense call
 *				and sparse call, in iteration order (arrays;
 *				seconds_median is of the sparse calls),
 *				and dense_seconds_median; sparse_zero_sent
 *				is zero_sent of the sparse calls alone
 *   vec			the vector paths of libxina's float loops on
 *				this CPU (struct xina_worker_stats.vec):
 *				"avx2+f16c+avx512+avx512_bf16+avx512_fp16"
 *				where it has them all, "portable" where none
 *   fallback, fallback_*	the host fallback ring (--fallback: every
 *				rank's ring address, libxina's opts.fallback)
 *				ran calls, and its bytes
 *   error			why the run failed, if it did
 *
 * --inflight K cuts each iteration's tensor into K calls at whole blocks
 * (so every block is the one a single call sends, and the checks are the
 * same), starts them all with xina_allreduce_*_start() and waits for them
 * on the handle's completion fd: libxina's calls in flight, end to end.
 * With --sparse they are xina_allreduce_sparse_start() calls, and with
 * --sparse-mixed as well every other one is a dense
 * xina_allreduce_start() call (sparse, dense, sparse, ...): sparse and
 * dense calls queued on one handle at once.
 *
 * --sparse-map: the sparse calls are xina_allreduce_sparse_map(_start)()
 * calls, given each worker's map of its non-zero blocks, which the fill
 * of the tensor records (before the timed call, as an application knows
 * the rows it touched): libxina does not scan the tensor for them.
 *
 * --sparse-paired: every iteration is a pair, a dense call of the tensor
 * with none of the --sparse zeros (the same tensor a run without --sparse
 * has), then the sparse call: the two time the same machine at nearly
 * the same moment, so their ratio is not the drift between two launches.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libxina.h"

struct ar_cfg {
	char		sw_addr[INET_ADDRSTRLEN];
	char		bind_addr[INET_ADDRSTRLEN];
	struct xina_opts o;
	enum xina_type	type;
	bool		f32;		/* float32 SUM: the historical check */
	bool		json;
	bool		verbose;
	enum xina_op	op;
	uint64_t	bytes;
	uint32_t	iters;
	uint32_t	inflight;	/* calls per iteration, started at once */
	bool		run_set;	/* --run given */
};

#define AR_MAX_INFLIGHT	XINA_DEF_MAX_REQUESTS

/*
 * --sparse P: each worker's blocks (the elements of one packet, ar_blk)
 * are non-zero with probability P/1000, independently per worker, block
 * and iteration (with --sparse-same the same blocks on every worker, as
 * when all workers touch the same rows); the rest are zero, and the calls
 * are xina_allreduce_sparse().  0: dense.
 */
static uint32_t ar_sparse_pm;
static uint64_t ar_blk = 1;
static bool ar_sparse_same;	/* --sparse-same: the same blocks everywhere */
static bool ar_sparse_mixed;	/* --sparse-mixed: every other call dense */
static bool ar_sparse_map;	/* --sparse-map: the calls get our maps */
static bool ar_sparse_paired;	/* --sparse-paired: a dense call, then sparse */
static bool ar_dense_step;	/* ... and this step is the dense one */
/* --sparse-map: the map of each call's blocks, as libxina takes it */
static uint8_t *ar_maps[AR_MAX_INFLIGHT];

static size_t ar_per_pkt(const struct ar_cfg *c);
static unsigned int ar_elem_words(const struct ar_cfg *c);

struct ar_result {
	double		max_abs_err;
	double		bound_at_max;	/* bound of the element with max err */
	double		worst_ratio;	/* max over elements of err / bound */
	uint64_t	bad;		/* elements off expectation */
	uint64_t	first_bad;
	char		why[256];	/* what is wrong with the first bad one */
	uint64_t	checksum;
	uint64_t	sp_blocks;	/* blocks of the sparse calls */
	uint64_t	sp_zero;	/* ... zero on every worker */
	uint64_t	sp_mine_zero;	/* ... not, but zero on this one */
	uint32_t	bad_iter;	/* the iteration a check failed in */
	uint64_t	sp_zero_sent;	/* --sparse-paired: zero_sent of the sparse calls */
	double		*dense_secs;	/* --sparse-paired: each dense call's time */
	double		t_start;	/* CLOCK_REALTIME: first timed call began */
	double		t_end;		/* ... last timed call returned */
};

static void ar_usage(FILE *f)
{
	fprintf(f,
		"Usage: xina-allreduce --switch IP[:PORT] --job ID --key-file PATH --rank R --workers N\n"
		"                      --slots S --elems E\n"
		"                      [--type int8|int16|int32|int64|float16|bfloat16|float32 | --dtype i32|f32]\n"
		"                      [--op sum|max|min|avg|and|or|xor]\n"
		"                      [--bytes N] [--iters I] [--timeout-ms T] [--join-timeout-ms J]\n"
		"                      [--rto-us U] [--run ID]\n"
		"                      [--bind IP[:PORT]] [--no-gso] [--no-gro] [--zerocopy] [--f16-wide]\n"
		"                      [--json] [--verbose]\n"
		"                      [--io auto|udp|xsk] [--inflight K] [--fallback IP:PORT,...]\n"
		"                      [--sparse PERMILLE [--sparse-same] [--sparse-mixed] [--sparse-map]\n"
		"                       [--sparse-paired]]\n"
		"--key-file: the job's key file (default $XINA_KEY_FILE)\n"
		"--run: this run of the job, the same for every worker of it (default\n"
		"       $XINA_RUN_ID, else 0: none; libxina.h, xina_opts.run)\n");
}

static int ar_u64(const char *opt, const char *s, uint64_t min, uint64_t max,
		  uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || !*s || *end || *s == '-' || v < min || v > max) {
		fprintf(stderr, "xina-allreduce: %s '%s' is not a number in %llu..%llu\n",
			opt, s, (unsigned long long)min, (unsigned long long)max);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

/* "IP[:PORT]" into @ip (validated) and @port (left alone if absent). */
static int ar_addr(const char *opt, const char *s, char *ip, uint16_t *port)
{
	const char *colon = strchr(s, ':');
	size_t len = colon ? (size_t)(colon - s) : strlen(s);
	struct in_addr a;
	uint64_t p;

	if (len >= INET_ADDRSTRLEN)
		goto bad;
	memcpy(ip, s, len);
	ip[len] = '\0';
	if (inet_pton(AF_INET, ip, &a) != 1)
		goto bad;
	if (colon) {
		if (ar_u64(opt, colon + 1, 0, 65535, &p))
			return -EINVAL;
		*port = p;
	}
	return 0;
bad:
	fprintf(stderr, "xina-allreduce: %s '%s' is not IPv4[:PORT]\n", opt, s);
	return -EINVAL;
}

enum {
	OPT_SWITCH = 256, OPT_JOB, OPT_KEY, OPT_RANK, OPT_WORKERS, OPT_SLOTS,
	OPT_ELEMS, OPT_DTYPE, OPT_OP, OPT_BYTES, OPT_ITERS, OPT_TIMEOUT,
	OPT_RTO, OPT_BIND, OPT_NO_GSO, OPT_NO_GRO, OPT_ZC, OPT_F16_WIDE, OPT_JSON,
	OPT_VERBOSE,
	OPT_JOIN_TIMEOUT, OPT_IO, OPT_INFLIGHT, OPT_TYPE, OPT_FALLBACK,
	OPT_SPARSE, OPT_SPARSE_SAME, OPT_SPARSE_MIXED, OPT_SPARSE_MAP,
	OPT_SPARSE_PAIRED, OPT_RUN,
};

static const char *const ar_ops[] = {
	[XINA_OP_SUM] = "sum", [XINA_OP_MAX] = "max", [XINA_OP_MIN] = "min",
	[XINA_OP_AND] = "and", [XINA_OP_OR] = "or", [XINA_OP_XOR] = "xor",
	[XINA_OP_AVG] = "avg",
};

static bool ar_float(enum xina_type t)
{
	return t == XINA_TYPE_FLOAT16 || t == XINA_TYPE_BFLOAT16 ||
	       t == XINA_TYPE_FLOAT32;
}

static int ar_type(const char *arg, enum xina_type *t)
{
	int i;

	for (i = XINA_TYPE_INT8; i < __XINA_TYPE_MAX; i++) {
		if (xina_type_name(i) && !strcmp(arg, xina_type_name(i))) {
			*t = i;
			return 0;
		}
	}
	fprintf(stderr, "xina-allreduce: --type '%s' is none of int8, int16, int32, int64, float16, bfloat16, float32\n",
		arg);
	return -EINVAL;
}

static int ar_op(const char *arg, enum xina_op *op)
{
	unsigned int i;

	for (i = 0; i < sizeof(ar_ops) / sizeof(ar_ops[0]); i++) {
		if (ar_ops[i] && !strcmp(arg, ar_ops[i])) {
			*op = i;
			return 0;
		}
	}
	fprintf(stderr, "xina-allreduce: --op '%s' is none of sum, max, min, avg, and, or, xor\n",
		arg);
	return -EINVAL;
}

static int ar_io(const char *arg, enum xina_io *io)
{
	static const char *const names[] = {
		[XINA_IO_AUTO] = "auto", [XINA_IO_UDP] = "udp", [XINA_IO_XSK] = "xsk",
	};
	unsigned int i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(arg, names[i])) {
			*io = i;
			return 0;
		}
	}
	fprintf(stderr, "xina-allreduce: --io '%s' is none of auto, udp, xsk\n", arg);
	return -EINVAL;
}

static int ar_opt(struct ar_cfg *c, int opt, const char *arg)
{
	struct xina_opts *o = &c->o;
	uint64_t v;
	int err = 0;

	switch (opt) {
	case OPT_SWITCH:
		return ar_addr("--switch", arg, c->sw_addr, &o->switch_port);
	case OPT_BIND:
		o->bind_addr = c->bind_addr;
		return ar_addr("--bind", arg, c->bind_addr, &o->bind_port);
	case OPT_JOB:
		err = ar_u64("--job", arg, 1, UINT32_MAX, &v);
		o->job = v;
		break;
	case OPT_KEY:
		o->key_file = arg;
		break;
	case OPT_RANK:
		err = ar_u64("--rank", arg, 0, XINA_MAX_WORKERS - 1, &v);
		o->rank = v;
		break;
	case OPT_WORKERS:
		err = ar_u64("--workers", arg, 1, XINA_MAX_WORKERS, &v);
		o->workers = v;
		break;
	case OPT_SLOTS:
		err = ar_u64("--slots", arg, 1, 1u << 20, &v);
		o->slots = v;
		break;
	case OPT_ELEMS:
		err = ar_u64("--elems", arg, 1, XINA_MAX_ELEMS, &v);
		o->elems = v;
		break;
	case OPT_TIMEOUT:
		err = ar_u64("--timeout-ms", arg, 1, UINT32_MAX, &v);
		o->timeout_ms = v;
		break;
	case OPT_JOIN_TIMEOUT:
		err = ar_u64("--join-timeout-ms", arg, 1, UINT32_MAX, &v);
		o->join_timeout_ms = v;
		break;
	case OPT_RUN:
		err = ar_u64("--run", arg, 0, UINT32_MAX, &v);
		o->run = v;
		c->run_set = true;
		break;
	case OPT_RTO:
		err = ar_u64("--rto-us", arg, 1, UINT32_MAX, &v);
		o->rto_us = v;
		break;
	case OPT_BYTES:
		err = ar_u64("--bytes", arg, 0, 1ull << 40, &c->bytes);
		break;
	case OPT_ITERS:
		err = ar_u64("--iters", arg, 1, 1u << 20, &v);
		c->iters = v;
		break;
	case OPT_DTYPE:
		if (!strcmp(arg, "i32") || !strcmp(arg, "f32")) {
			c->type = arg[0] == 'f' ? XINA_TYPE_FLOAT32 :
						  XINA_TYPE_INT32;
			break;
		}
		fprintf(stderr, "xina-allreduce: --dtype '%s' is neither i32 nor f32\n", arg);
		return -EINVAL;
	case OPT_TYPE:
		return ar_type(arg, &c->type);
	case OPT_OP:
		return ar_op(arg, &c->op);
	case OPT_NO_GSO:
		o->flags |= XINA_OPT_F_NO_GSO;
		break;
	case OPT_NO_GRO:
		o->flags |= XINA_OPT_F_NO_GRO;
		break;
	case OPT_ZC:
		o->flags |= XINA_OPT_F_ZEROCOPY;
		break;
	case OPT_F16_WIDE:
		o->flags |= XINA_OPT_F_F16_WIDE;
		break;
	case OPT_JSON:
		c->json = true;
		break;
	case OPT_VERBOSE:
		c->verbose = true;
		break;
	case OPT_IO:
		return ar_io(arg, &o->io);
	case OPT_INFLIGHT:
		err = ar_u64("--inflight", arg, 1, AR_MAX_INFLIGHT, &v);
		c->inflight = v;
		break;
	case OPT_FALLBACK:
		o->fallback = arg;	/* libxina checks it, naming what is wrong */
		break;
	case OPT_SPARSE:
		err = ar_u64("--sparse (in thousandths)", arg, 1, 1000, &v);
		ar_sparse_pm = v;
		break;
	case OPT_SPARSE_SAME:
		ar_sparse_same = true;
		break;
	case OPT_SPARSE_MIXED:
		ar_sparse_mixed = true;
		break;
	case OPT_SPARSE_MAP:
		ar_sparse_map = true;
		break;
	case OPT_SPARSE_PAIRED:
		ar_sparse_paired = true;
		break;
	default:
		return -EINVAL;
	}
	return err;
}

static int ar_parse(struct ar_cfg *c, int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "switch", required_argument, NULL, OPT_SWITCH },
		{ "job", required_argument, NULL, OPT_JOB },
		{ "key-file", required_argument, NULL, OPT_KEY },
		{ "rank", required_argument, NULL, OPT_RANK },
		{ "workers", required_argument, NULL, OPT_WORKERS },
		{ "slots", required_argument, NULL, OPT_SLOTS },
		{ "elems", required_argument, NULL, OPT_ELEMS },
		{ "dtype", required_argument, NULL, OPT_DTYPE },
		{ "type", required_argument, NULL, OPT_TYPE },
		{ "op", required_argument, NULL, OPT_OP },
		{ "bytes", required_argument, NULL, OPT_BYTES },
		{ "iters", required_argument, NULL, OPT_ITERS },
		{ "timeout-ms", required_argument, NULL, OPT_TIMEOUT },
		{ "join-timeout-ms", required_argument, NULL, OPT_JOIN_TIMEOUT },
		{ "rto-us", required_argument, NULL, OPT_RTO },
		{ "run", required_argument, NULL, OPT_RUN },
		{ "bind", required_argument, NULL, OPT_BIND },
		{ "no-gso", no_argument, NULL, OPT_NO_GSO },
		{ "no-gro", no_argument, NULL, OPT_NO_GRO },
		{ "zerocopy", no_argument, NULL, OPT_ZC },
		{ "f16-wide", no_argument, NULL, OPT_F16_WIDE },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "verbose", no_argument, NULL, OPT_VERBOSE },
		{ "io", required_argument, NULL, OPT_IO },
		{ "inflight", required_argument, NULL, OPT_INFLIGHT },
		{ "fallback", required_argument, NULL, OPT_FALLBACK },
		{ "sparse", required_argument, NULL, OPT_SPARSE },
		{ "sparse-same", no_argument, NULL, OPT_SPARSE_SAME },
		{ "sparse-mixed", no_argument, NULL, OPT_SPARSE_MIXED },
		{ "sparse-map", no_argument, NULL, OPT_SPARSE_MAP },
		{ "sparse-paired", no_argument, NULL, OPT_SPARSE_PAIRED },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int opt;

	c->o.sz = sizeof(c->o);
	c->o.switch_addr = c->sw_addr;
	c->op = XINA_OP_SUM;
	c->type = XINA_TYPE_INT32;
	c->bytes = 4 << 20;
	c->iters = 5;
	c->inflight = 1;
	while ((opt = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		if (opt == 'h') {
			ar_usage(stdout);
			exit(0);
		}
		if (opt == '?' || ar_opt(c, opt, optarg))
			goto usage;
	}
	if (optind != argc) {
		fprintf(stderr, "xina-allreduce: unexpected argument '%s'\n", argv[optind]);
		goto usage;
	}
	if (!c->o.key_file)
		c->o.key_file = getenv("XINA_KEY_FILE");
	if (!c->run_set && getenv("XINA_RUN_ID")) {
		uint64_t v;

		if (ar_u64("XINA_RUN_ID", getenv("XINA_RUN_ID"), 0,
			   UINT32_MAX, &v))
			goto usage;
		c->o.run = v;
	}
	if (!c->o.key_file) {
		fprintf(stderr, "xina-allreduce: --key-file (or XINA_KEY_FILE) is required: keys are not taken on the command line\n");
		goto usage;
	}
	if (!c->sw_addr[0] || !c->o.job || !c->o.workers || !c->o.slots ||
	    !c->o.elems) {
		fprintf(stderr, "xina-allreduce: --switch, --job, --workers, --slots and --elems are required\n");
		goto usage;
	}
	if (c->o.rank >= c->o.workers) {
		fprintf(stderr, "xina-allreduce: --rank %u is not below --workers %u\n",
			c->o.rank, c->o.workers);
		goto usage;
	}
	if (ar_float(c->type) && (c->op == XINA_OP_AND ||
				  c->op == XINA_OP_OR || c->op == XINA_OP_XOR)) {
		fprintf(stderr, "xina-allreduce: --op %s is bitwise: integer types only, not %s\n",
			ar_ops[c->op], xina_type_name(c->type));
		goto usage;
	}
	if (c->bytes % xina_type_size(c->type)) {
		fprintf(stderr, "xina-allreduce: --bytes %llu is not a whole number of %zu-byte %s elements\n",
			(unsigned long long)c->bytes, xina_type_size(c->type),
			xina_type_name(c->type));
		goto usage;
	}
	if (!ar_per_pkt(c)) {
		fprintf(stderr, "xina-allreduce: --elems %u is too few: one %s %s element takes %u words of 32 bits\n",
			c->o.elems, xina_type_name(c->type), ar_ops[c->op],
			ar_elem_words(c));
		goto usage;
	}
	c->f32 = c->type == XINA_TYPE_FLOAT32 && c->op == XINA_OP_SUM;
	if (ar_sparse_same && !ar_sparse_pm) {
		fprintf(stderr, "xina-allreduce: --sparse-same without --sparse\n");
		goto usage;
	}
	if (ar_sparse_map && !ar_sparse_pm) {
		fprintf(stderr, "xina-allreduce: --sparse-map without --sparse\n");
		goto usage;
	}
	if (ar_sparse_paired && !ar_sparse_pm) {
		fprintf(stderr, "xina-allreduce: --sparse-paired without --sparse\n");
		goto usage;
	}
	if (ar_sparse_mixed && (!ar_sparse_pm || c->inflight < 2)) {
		fprintf(stderr, "xina-allreduce: --sparse-mixed needs --sparse and --inflight 2 or more\n");
		goto usage;
	}
	ar_blk = ar_per_pkt(c);
	return 0;
usage:
	ar_usage(stderr);
	return -EINVAL;
}

static uint64_t ar_mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t ar_hash(uint32_t rank, uint64_t idx, uint32_t iter, uint64_t salt)
{
	return ar_mix(ar_mix(((uint64_t)rank << 32 | iter) ^ salt) + idx);
}

static bool ar_sparse_zero(uint32_t rank, uint64_t i, uint32_t iter)
{
	return ar_sparse_pm && !ar_dense_step &&
	       ar_hash(ar_sparse_same ? 0 : rank, i / ar_blk, iter, 7) % 1000 >=
	       ar_sparse_pm;
}

static int32_t ar_i32(uint32_t rank, uint64_t i, uint32_t iter)
{
	return ar_sparse_zero(rank, i, iter) ? 0 :
	       (int32_t)ar_hash(rank, i, iter, 1);
}

/*
 * Float input: magnitudes from 2^-20 to 2^20 within a block, negative
 * values, blocks that are all zero on one rank, and blocks that are zero
 * on every rank.
 */
static float ar_f32(uint32_t rank, uint64_t i, uint32_t iter, uint32_t elems)
{
	uint64_t blk = i / elems, h;

	if (ar_sparse_zero(rank, i, iter) || ar_hash(0, blk, iter, 2) % 16 == 0 ||
	    ar_hash(rank, blk, iter, 3) % 8 == 0)
		return 0.0f;
	h = ar_hash(rank, i, iter, 4);
	return ldexpf((float)(int32_t)(h >> 32) / 2147483648.0f,
		      (int)(h % 41) - 20);
}

/*
 * 32-bit words one element of @c's type and op takes on the wire where it
 * takes more than one (int64 two, int64 AVG four in two int64 lanes, int32
 * AVG two in an int64 lane); 0 where it takes one or less.
 */
static unsigned int ar_elem_words(const struct ar_cfg *c)
{
	bool avg = c->op == XINA_OP_AVG;

	if (c->type == XINA_TYPE_INT64)
		return avg ? 4 : 2;
	return c->type == XINA_TYPE_INT32 && avg ? 2 : 0;
}

/*
 * Elements of one packet for @c's type and op, as the wire packs them
 * (include/uapi/linux/xina.h: count in 32-bit words; 8 and 16-bit lanes
 * four and two to a word; int64 two words) and libxina.h says AVG of an
 * integer type travels (in lanes twice as wide; int64 in two int64).
 */
static size_t ar_per_pkt(const struct ar_cfg *c)
{
	size_t e = c->o.elems;
	bool avg = c->op == XINA_OP_AVG;
	unsigned int w = ar_elem_words(c);

	if (w)
		return e / w;
	switch (c->type) {
	case XINA_TYPE_INT8:
		return avg ? e * 2 : e * 4;
	case XINA_TYPE_INT16:
		return avg ? e : e * 2;
	case XINA_TYPE_FLOAT16:		/* SUM and AVG: BFP in INT16 lanes */
		return (c->o.flags & XINA_OPT_F_F16_WIDE) &&
		       (avg || c->op == XINA_OP_SUM) ? e : e * 2;
	case XINA_TYPE_BFLOAT16:	/* block floating point in INT16 */
		return e * 2;
	default:
		return e;
	}
}

static unsigned int ar_bits_of(enum xina_type t)
{
	return xina_type_size(t) * 8;
}

/*
 * Float MIN and MAX input: any finite value (subnormals too), and one in
 * 32 a special: +-0, +-infinity, a NaN of either sign with a payload.
 */
static uint64_t ar_ord_bits(enum xina_type t, uint64_t h)
{
	unsigned int w = ar_bits_of(t), mbits = t == XINA_TYPE_FLOAT32 ? 23 :
				   t == XINA_TYPE_FLOAT16 ? 10 : 7;
	uint64_t sign = 1ull << (w - 1), emask = (sign - 1) & ~((1ull << mbits) - 1);
	uint64_t b = (h >> 8) & ((sign << 1) - 1);

	if (h % 32 == 0) {
		switch ((h >> 5) % 6) {
		case 0:
			return 0;
		case 1:
			return sign;
		case 2:
			return emask;
		case 3:
			return sign | emask;
		case 4:
			return emask | 1ull << (mbits - 1) | (b & 7);
		default:
			return sign | emask | 1ull << (mbits - 1) | (b & 7);
		}
	}
	if ((b & emask) == emask)
		b ^= 1ull << mbits;
	return b;
}

/*
 * Float16 and bfloat16 SUM and AVG input: as ar_f32() for blocks of zeros;
 * otherwise random significands of either sign, exponents over 25 binades
 * (subnormals included for float16) that W workers cannot overflow.
 */
static uint16_t ar_h16(const struct ar_cfg *c, uint32_t rank, uint64_t i,
		       uint32_t iter)
{
	uint64_t blk = i / ar_per_pkt(c), h;

	if (ar_hash(0, blk, iter, 2) % 16 == 0 ||
	    ar_hash(rank, blk, iter, 3) % 8 == 0)
		return 0;
	h = ar_hash(rank, i, iter, 4);
	if (c->type == XINA_TYPE_FLOAT16)	/* exponent field 0..24 */
		return (h & 0x8000) | (h >> 16) % 25 << 10 | (h >> 32 & 0x3ff);
	/* bfloat16: exponent field 115..139 */
	return (h & 0x8000) | (115 + (h >> 16) % 25) << 7 | (h >> 32 & 0x7f);
}

/* Worker @rank's element @i, as its bits (integers: two's complement). */
static uint64_t ar_elem(const struct ar_cfg *c, uint32_t rank, uint64_t i,
			uint32_t iter)
{
	float f;
	uint32_t b;

	if (ar_sparse_zero(rank, i, iter) && c->type != XINA_TYPE_FLOAT32)
		return 0;
	if (!ar_float(c->type))
		return ar_hash(rank, i, iter, 1);
	if (c->op == XINA_OP_MIN || c->op == XINA_OP_MAX)
		return ar_ord_bits(c->type, ar_hash(rank, i, iter, 5));
	if (c->type != XINA_TYPE_FLOAT32)
		return ar_h16(c, rank, i, iter);
	f = ar_f32(rank, i, iter, ar_per_pkt(c));
	memcpy(&b, &f, sizeof(b));
	return b;
}

/*
 * Our input of iteration @iter; with --sparse-map also the map of each
 * call's blocks that hold a non-zero (@per elements a call, whole blocks).
 */
static void ar_fill(const struct ar_cfg *c, void *buf, size_t n, uint32_t iter,
		    size_t per)
{
	size_t i, b, esz = xina_type_size(c->type);
	uint64_t mask = esz < 8 ? (1ull << (esz * 8)) - 1 : ~0ull, v;
	unsigned int k;

	for (k = 0; ar_sparse_map && k < c->inflight; k++)
		memset(ar_maps[k], 0, (per / ar_blk + 7) / 8);
	for (i = 0; i < n; i++) {
		v = ar_elem(c, c->o.rank, i, iter);
		if (ar_sparse_map && (v & mask)) {
			b = i % per / ar_blk;
			ar_maps[i / per][b / 8] |= 1u << (b % 8);
		}
		v = htole64(v);
		memcpy((uint8_t *)buf + i * esz, &v, esz);
	}
}

/*
 * A sparse call on elements @off..@off + @n - 1 of iteration @iter (@off
 * at a block boundary): count its blocks, and those whose elements are
 * zero bits on every worker, the ones libxina must skip.
 */
static void ar_sparse_expect(const struct ar_cfg *c, size_t off, size_t n,
			     uint32_t iter, struct ar_result *res)
{
	size_t esz = xina_type_size(c->type), b, i, end;
	uint64_t mask = esz < 8 ? (1ull << (esz * 8)) - 1 : ~0ull;
	bool zero, mine;
	uint32_t w;

	for (b = off; b < off + n; b += ar_blk) {
		end = b + ar_blk < off + n ? b + ar_blk : off + n;
		zero = true;
		for (i = b; zero && i < end; i++)
			zero = !(ar_elem(c, c->o.rank, i, iter) & mask);
		mine = zero;
		for (w = 0; zero && w < c->o.workers; w++)
			for (i = b; zero && i < end; i++)
				zero = !(ar_elem(c, w, i, iter) & mask);
		res->sp_blocks++;
		res->sp_zero += zero;
		res->sp_mine_zero += mine && !zero;
	}
}

/* Element @i of @buf, as its bits. */
static uint64_t ar_get(const struct ar_cfg *c, const void *buf, size_t i)
{
	size_t esz = xina_type_size(c->type);
	uint64_t v = 0;

	memcpy(&v, (const uint8_t *)buf + i * esz, esz);
	return le64toh(v);
}

static uint64_t ar_fnv(uint64_t h, const void *p, size_t len)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

__attribute__((format(printf, 3, 4)))
static void ar_bad(struct ar_result *res, size_t i, const char *fmt, ...)
{
	va_list ap;

	if (res->bad++)
		return;
	res->first_bad = i;
	va_start(ap, fmt);
	vsnprintf(res->why, sizeof(res->why), fmt, ap);
	va_end(ap);
}

static void ar_check_i32(const struct ar_cfg *c, const int32_t *r, size_t n,
			 uint32_t iter, struct ar_result *res)
{
	uint32_t w, acc, v;
	size_t i;

	for (i = 0; i < n; i++) {
		acc = (uint32_t)ar_i32(0, i, iter);
		for (w = 1; w < c->o.workers; w++) {
			v = (uint32_t)ar_i32(w, i, iter);
			if (c->op == XINA_OP_SUM)
				acc += v;
			else if ((int32_t)v > (int32_t)acc)
				acc = v;
		}
		if ((uint32_t)r[i] != acc)
			ar_bad(res, i, "element %zu is %d, want %d", i, r[i],
			       (int32_t)acc);
	}
}

/* @v of @w bits, sign-extended. */
static int64_t ar_sext(uint64_t v, unsigned int w)
{
	return w == 64 ? (int64_t)v : (int64_t)(v << (64 - w)) >> (64 - w);
}

/*
 * The integer types, every op, element by element in plain C: SUM modulo
 * 2^width, MIN and MAX of the signed values, the bitwise ops, AVG the
 * floor of the exact mean (the sum in 128 bits).
 */
static void ar_check_int(const struct ar_cfg *c, const void *r, size_t n,
			 uint32_t iter, struct ar_result *res)
{
	unsigned int wb = ar_bits_of(c->type);
	uint64_t mask = wb == 64 ? ~0ull : (1ull << wb) - 1, acc, v, got;
	int64_t sv, sa;
	__int128 sum, q;
	uint32_t w;
	size_t i;

	for (i = 0; i < n; i++) {
		acc = ar_elem(c, 0, i, iter) & mask;
		sum = ar_sext(acc, wb);
		for (w = 1; w < c->o.workers; w++) {
			v = ar_elem(c, w, i, iter) & mask;
			sv = ar_sext(v, wb);
			sa = ar_sext(acc, wb);
			sum += sv;
			switch (c->op) {
			case XINA_OP_SUM:
				acc = (acc + v) & mask;
				break;
			case XINA_OP_MAX:
				acc = sv > sa ? v : acc;
				break;
			case XINA_OP_MIN:
				acc = sv < sa ? v : acc;
				break;
			case XINA_OP_AND:
				acc &= v;
				break;
			case XINA_OP_OR:
				acc |= v;
				break;
			case XINA_OP_XOR:
				acc ^= v;
				break;
			default:
				break;
			}
		}
		if (c->op == XINA_OP_AVG) {
			q = sum / c->o.workers;
			if (q * c->o.workers != sum && sum < 0)
				q--;
			acc = (uint64_t)(int64_t)q & mask;
		}
		got = ar_get(c, r, i);
		if (got != acc)
			ar_bad(res, i, "element %zu is %lld, want %lld", i,
			       (long long)ar_sext(got, wb),
			       (long long)ar_sext(acc, wb));
	}
}

/* A finite or not float of @t from its bits, as a double (exact). */
static double ar_fval(enum xina_type t, uint64_t b)
{
	_Float16 h;
	uint32_t u;
	uint16_t s;
	float f;

	if (t == XINA_TYPE_FLOAT16) {
		s = b;
		memcpy(&h, &s, 2);
		return h;
	}
	u = t == XINA_TYPE_BFLOAT16 ? (uint32_t)b << 16 : (uint32_t)b;
	memcpy(&f, &u, 4);
	return f;
}

/*
 * IEEE 754 totalOrder of two floats of @t, from their values and, where
 * values do not decide, signs and NaN payloads: -NaN (larger payload
 * lower) < -inf < negative < -0 < +0 < positive < +inf < +NaN (larger
 * payload higher).  Negative, zero, positive as a < b, a = b, a > b.
 */
static int ar_total_cmp(enum xina_type t, uint64_t a, uint64_t b)
{
	double x = ar_fval(t, a), y = ar_fval(t, b);
	unsigned int w = ar_bits_of(t);
	uint64_t pay = (1ull << (w - 1)) - 1;
	bool xn = isnan(x), yn = isnan(y), xs = signbit(x), ys = signbit(y);

	if (!xn && !yn) {
		if (x != y)
			return x < y ? -1 : 1;
		return xs == ys ? 0 : xs ? -1 : 1;
	}
	if (xn && yn && xs == ys) {
		if ((a & pay) == (b & pay))
			return 0;
		return ((a & pay) < (b & pay)) != xs ? -1 : 1;
	}
	if (xn)
		return xs ? -1 : 1;
	return ys ? 1 : -1;
}

/* Float MIN and MAX: the totalOrder extreme, bit for bit. */
static void ar_check_ord(const struct ar_cfg *c, const void *r, size_t n,
			 uint32_t iter, struct ar_result *res)
{
	uint64_t acc, v, got;
	int cmp;
	uint32_t w;
	size_t i;

	for (i = 0; i < n; i++) {
		acc = ar_elem(c, 0, i, iter);
		for (w = 1; w < c->o.workers; w++) {
			v = ar_elem(c, w, i, iter);
			cmp = ar_total_cmp(c->type, v, acc);
			if (c->op == XINA_OP_MAX ? cmp > 0 : cmp < 0)
				acc = v;
		}
		got = ar_get(c, r, i);
		if (got != acc)
			ar_bad(res, i, "element %zu is %#llx (%g), want %#llx (%g)",
			       i, (unsigned long long)got, ar_fval(c->type, got),
			       (unsigned long long)acc, ar_fval(c->type, acc));
	}
}

/*
 * A double rounded to bfloat16, to nearest, ties to even, by frexp and
 * rint (libxina does it on the bits): 8-bit significands, 2^-133 the
 * quantum of the subnormals, an infinity above the largest finite value.
 */
static uint16_t ar_to_bf16(double d)
{
	double a = fabs(d), q;
	uint32_t bits;
	int e, qe;

	if (a == 0)
		return signbit(d) ? 0x8000 : 0;
	frexp(a, &e);
	qe = e - 8 < -133 ? -133 : e - 8;
	q = rint(ldexp(a, -qe));
	bits = (uint32_t)(qe + 133) * 128 + (uint32_t)q;
	if (bits > 0x7f80)
		bits = 0x7f80;
	return (signbit(d) ? 0x8000 : 0) | bits;
}

/* @d rounded to @t (float32: the cast; float16: _Float16's). */
static uint64_t ar_round(enum xina_type t, double d)
{
	_Float16 h;
	uint16_t s;
	uint32_t u;
	float f;

	if (t == XINA_TYPE_FLOAT16) {
		h = (_Float16)d;
		memcpy(&s, &h, 2);
		return s;
	}
	if (t == XINA_TYPE_BFLOAT16)
		return ar_to_bf16(d);
	f = (float)d;
	memcpy(&u, &f, 4);
	return u;
}

static void ar_grow(double *e, unsigned int *len, double b);
static double ar_approx(const double *e, unsigned int len);

/*
 * Float SUM and AVG but float32 SUM (ar_check_f32): bitwise equal to the
 * block floating point scheme of libxina.h recomputed here, with B = 32
 * (float32, float16 with --f16-wide) or 16 (float16, bfloat16) bits per
 * lane: per block E = max
 * over workers of the frexp exponent of the largest |x|, L = ceil(log2 W),
 * s = B - 1 - L - E, q = rint(x * 2^s) clamped to +-(2^(B-1-L) - 1),
 * Q = sum of q, r = Q * 2^-s (AVG: / W in double) rounded once to the
 * type.  Then within the bound libxina.h documents against the exact sum
 * S (AVG: S / W), with u = 2^-s:
 *   float32 AVG:          u / 2 + 2^-23 |r| + 2^-149
 *   float16 SUM (AVG):    W u / 2 (u / 2) + 2^-10 |r| + 2^-24
 *   bfloat16 SUM (AVG):   W u (u) + 2^-7 |r| + 2^-133
 * (the INT16 lanes' clamp can move a value by up to u, not u / 2).
 */
static void ar_check_bfp(const struct ar_cfg *c, const void *r, size_t n,
			 uint32_t iter, struct ar_result *res)
{
	uint32_t w, W = c->o.workers;
	size_t per = ar_per_pkt(c), off, cnt, i;
	int L = 0, B = 16, x_e, E;
	double e[XINA_MAX_WORKERS + 2], x, m, q, lim, scale, unscale;
	double sum, err, bound, quant, rel, tiny, rv;
	bool avg = c->op == XINA_OP_AVG;
	uint64_t got, ref;
	unsigned int len;
	int64_t Q;

	if (c->type == XINA_TYPE_FLOAT32 ||
	    (c->o.flags & XINA_OPT_F_F16_WIDE))
		B = 32;
	while ((1u << L) < W)
		L++;
	rel = c->type == XINA_TYPE_FLOAT32 ? 0x1p-23 :
	      c->type == XINA_TYPE_FLOAT16 ? 0x1p-10 : 0x1p-7;
	tiny = c->type == XINA_TYPE_FLOAT32 ? 0x1p-149 :
	       c->type == XINA_TYPE_FLOAT16 ? 0x1p-24 : 0x1p-133;
	lim = ldexp(1.0, B - 1 - L) - 1;
	for (off = 0; off < n; off += per) {
		cnt = n - off < per ? n - off : per;
		E = XINA_EXP_ZERO;
		for (w = 0; w < W; w++) {
			for (m = 0, i = 0; i < cnt; i++)
				m = fmax(m, fabs(ar_fval(c->type,
							 ar_elem(c, w, off + i, iter))));
			if (m == 0)
				continue;
			frexp(m, &x_e);
			E = x_e > E ? x_e : E;
		}
		scale = ldexp(1.0, B - 1 - L - E);
		unscale = ldexp(1.0, E - (B - 1) + L);
		quant = E == XINA_EXP_ZERO ? 0 :
			(avg ? 1 : W) * (B == 32 ? unscale / 2 : unscale);
		for (i = 0; i < cnt; i++) {
			for (len = 0, Q = 0, w = 0; w < W; w++) {
				x = ar_fval(c->type, ar_elem(c, w, off + i, iter));
				ar_grow(e, &len, x);
				if (E == XINA_EXP_ZERO)
					continue;
				q = rint(x * scale);
				Q += (int64_t)(q > lim ? lim : q < -lim ? -lim : q);
			}
			ref = ar_round(c->type, avg ? (double)Q * unscale / W :
						      (double)Q * unscale);
			got = ar_get(c, r, off + i);
			rv = ar_fval(c->type, got);
			if (!isfinite(rv)) {
				ar_bad(res, off + i, "element %zu is %g", off + i, rv);
				continue;
			}
			/* |r - S / W| = |r W - S| / W; r W is exact */
			sum = ar_approx(e, len);
			ar_grow(e, &len, -(avg ? rv * W : rv));
			err = fabs(ar_approx(e, len)) / (avg ? W : 1);
			bound = E == XINA_EXP_ZERO ? 0 :
				quant + rel * fabs(rv) + tiny;
			if (err > res->max_abs_err) {
				res->max_abs_err = err;
				res->bound_at_max = bound;
			}
			if (bound > 0 && err / bound > res->worst_ratio)
				res->worst_ratio = err / bound;
			if (got != ref)
				ar_bad(res, off + i, "element %zu is %a, the scheme gives %a (block exponent %d)",
				       off + i, rv, ar_fval(c->type, ref), E);
			else if (err > bound * (1 + 0x1p-40))
				ar_bad(res, off + i, "element %zu is %a, %g off the exact %s %a, bound %g",
				       off + i, rv, err, avg ? "mean" : "sum",
				       avg ? sum / W : sum, bound);
		}
	}
}

/*
 * ceil(log2(w)): the headroom bits of the documented float32 scheme,
 * computed here rather than taken from the library under test.
 */
static int ar_headroom(uint32_t w)
{
	int l = 0;

	while ((1u << l) < w)
		l++;
	return l;
}

/* Knuth's TwoSum: a + b == s + *t exactly (binary64, round to nearest). */
static double ar_two_sum(double a, double b, double *t)
{
	double s = a + b, bv = s - a;

	*t = (a - (s - bv)) + (b - bv);
	return s;
}

/*
 * Shewchuk's GROW-EXPANSION with zero elimination: adds @b to the
 * nonoverlapping expansion e[0..*len) (increasing magnitude) without any
 * rounding error.  Every float is a double, so the expansion of W floats
 * (at most W + 1 components) is their sum, exactly.
 */
static void ar_grow(double *e, unsigned int *len, double b)
{
	unsigned int i, k = 0;
	double q = b, h;

	for (i = 0; i < *len; i++) {
		q = ar_two_sum(q, e[i], &h);
		if (h != 0)
			e[k++] = h;
	}
	if (q != 0)
		e[k++] = q;
	*len = k;
}

/* The value of an expansion, rounded: relative error a few 2^-53. */
static double ar_approx(const double *e, unsigned int len)
{
	double v = 0;
	unsigned int i;

	for (i = 0; i < len; i++)
		v += e[i];
	return v;
}

/*
 * Float32 results, checked three ways without trusting libxina:
 *
 * 1. Finite: the inputs are at most 2^20 in magnitude, so any NaN or
 *    infinity is wrong.
 *
 * 2. Bitwise equal to the scheme of libxina.h recomputed here from every
 *    worker's input: per block E = max over workers of the frexpf
 *    exponent of the block's largest |x|, L = ceil(log2 W),
 *    s = 31 - L - E, q = rint(x * 2^s) clamped to +-(2^(31-L) - 1),
 *    Q = sum of q (fits int32: W * (2^(31-L) - 1) < 2^31), and
 *    r = (float)(Q * 2^-s).  Any change in the switch's arithmetic or in
 *    the library's quantisation shows up here.
 *
 * 3. Within a bound derived here from the inputs, against their exact sum
 *    S (an error-free expansion, ar_grow()).  With u = 2^-s:
 *    - a float of the block is x = M * 2^(e - 24), |M| < 2^24, e <= E, so
 *      x * 2^s = M * 2^(e - E + 7 - L) is exact in double and below
 *      2^(31-L) in magnitude: rint() is off by at most 1/2.  The clamp can
 *      only move a value rint() pushed to 2^(31-L), from x * 2^s >=
 *      2^(31-L) - 1/2; x * 2^s is then a multiple of 1/2 (L = 8, e = E),
 *      so it is 2^(31-L) - 1/2 and the clamp leaves it 1/2 away, too.
 *      So |Q * u - S| <= W * u / 2.
 *    - (float)(Q * u) is one rounding to nearest of the exact double
 *      Q * u: off by at most 2^-24 * |Q * u| (normal), or 2^-150 (half
 *      the smallest subnormal), and |Q * u| <= |S| + W * u / 2.
 *    So |r - S| <= W * u / 2 + 2^-24 * (|S| + W * u / 2) + 2^-150.
 *    |r - S| and |S| are the exact values rounded once to double; the
 *    factor 1 + 2^-40 covers that rounding and nothing else.
 */
static void ar_check_f32(const struct ar_cfg *c, const float *r, size_t n,
			 uint32_t iter, float *in, struct ar_result *res)
{
	uint32_t w, W = c->o.workers, elems = c->o.elems;
	double e[XINA_MAX_WORKERS + 2], sum, err, bound, quant, lim, q;
	double scale, unscale;
	int L = ar_headroom(W), x_e, E;
	uint32_t got_bits, ref_bits;
	size_t off, cnt, i;
	unsigned int len;
	float x, m, ref;
	int64_t Q;

	lim = ldexp(1.0, 31 - L) - 1;
	for (off = 0; off < n; off += elems) {
		/* in[w * elems + i]: worker w's element off + i */
		cnt = n - off < elems ? n - off : elems;
		E = XINA_EXP_ZERO;
		for (w = 0; w < W; w++) {
			for (m = 0, i = 0; i < cnt; i++) {
				x = ar_f32(w, off + i, iter, elems);
				in[w * elems + i] = x;
				m = fmaxf(m, fabsf(x));
			}
			if (m == 0)
				continue;
			frexpf(m, &x_e);
			E = x_e > E ? x_e : E;
		}
		/* 2^s and 2^-s, s = 31 - L - E: exact doubles for any E */
		scale = ldexp(1.0, 31 - L - E);
		unscale = ldexp(1.0, E - 31 + L);
		quant = E == XINA_EXP_ZERO ? 0 : W * unscale / 2;
		for (i = 0; i < cnt; i++) {
			for (len = 0, Q = 0, w = 0; w < W; w++) {
				x = in[w * elems + i];
				ar_grow(e, &len, x);
				if (E == XINA_EXP_ZERO)
					continue;
				q = rint(x * scale);
				Q += (int64_t)(q > lim ? lim : q < -lim ? -lim : q);
			}
			ref = (float)(Q * unscale);
			if (!isfinite(r[off + i])) {
				ar_bad(res, off + i, "element %zu is %g", off + i,
				       r[off + i]);
				continue;
			}
			memcpy(&got_bits, &r[off + i], sizeof(got_bits));
			memcpy(&ref_bits, &ref, sizeof(ref_bits));
			sum = ar_approx(e, len);
			ar_grow(e, &len, -(double)r[off + i]);
			err = fabs(ar_approx(e, len));
			bound = quant + (fabs(sum) + quant) * 0x1p-24 + 0x1p-150;
			if (E == XINA_EXP_ZERO)
				bound = 0;
			if (err > res->max_abs_err) {
				res->max_abs_err = err;
				res->bound_at_max = bound;
			}
			if (bound > 0 && err / bound > res->worst_ratio)
				res->worst_ratio = err / bound;
			if (got_bits != ref_bits)
				ar_bad(res, off + i, "element %zu is %a, the scheme gives %a (block exponent %d)",
				       off + i, r[off + i], ref, E);
			else if (err > bound * (1 + 0x1p-40))
				ar_bad(res, off + i, "element %zu is %a, %g off the exact sum %a, bound %g",
				       off + i, r[off + i], err, sum, bound);
		}
	}
}

static double ar_now(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int ar_cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median and the least (@least; NULL: not wanted) of @n times. */
static double ar_median(const double *v, uint32_t n, double *least)
{
	double *w, med;

	if (least)
		*least = 0;
	if (!n)
		return 0;
	w = malloc(n * sizeof(*w));
	if (!w)
		return 0;
	memcpy(w, v, n * sizeof(*w));
	qsort(w, n, sizeof(*w), ar_cmp_dbl);
	med = w[n / 2];
	if (least)
		*least = w[0];
	free(w);
	return med;
}

static void ar_json_secs(const char *key, const double *v, uint32_t n)
{
	uint32_t i;

	printf(",\"%s\":[", key);
	for (i = 0; i < n; i++)
		printf("%s%.9f", i ? "," : "", v[i]);
	printf("]");
}

/* What libxina said last: why xina_open() failed, which has no handle. */
static char ar_last_msg[1024];

static void ar_log(void *ctx, enum xina_log_level lvl, const char *msg)
{
	fprintf(stderr, "xina-allreduce: rank %u: %s\n", *(uint16_t *)ctx, msg);
	snprintf(ar_last_msg, sizeof(ar_last_msg), "%s", msg);
}

/* The JSON fields of the packet I/O the handle uses, and why. */
static void ar_json_io(struct xina *x, const struct xina_worker_stats *st)
{
	const char *r = x ? xina_io_reason(x) : "";

	printf(",\"io\":\"%s\",\"io_reason\":\"",
	       st->io == XINA_IO_XSK ? "xsk" : "udp");
	for (; *r; r++)
		printf(*r == '"' || *r == '\\' ? "\\%c" : "%c", *r);
	printf("\",\"xsk_zerocopy\":%s,\"xsk_tx_frames\":%llu,"
	       "\"xsk_rx_frames\":%llu,\"xsk_kicks\":%llu,"
	       "\"xsk_fill_empty\":%llu,\"xsk_rx_dropped\":%llu,"
	       "\"zc_sends\":%llu,\"zc_copied\":%llu",
	       st->xsk_zerocopy ? "true" : "false",
	       (unsigned long long)st->xsk_tx_frames,
	       (unsigned long long)st->xsk_rx_frames,
	       (unsigned long long)st->xsk_kicks,
	       (unsigned long long)st->xsk_fill_empty,
	       (unsigned long long)st->xsk_rx_dropped,
	       (unsigned long long)st->zc_sends,
	       (unsigned long long)st->zc_copied);
}

/*
 * The vector paths of libxina's float loops on this CPU, "avx2+f16c+..."
 * in XINA_VEC_* order, or "portable".
 */
static void ar_json_vec(const struct xina_worker_stats *st)
{
	static const char *const name[] = { "avx2", "f16c", "avx512",
					    "avx512_bf16", "avx512_fp16" };
	const char *sep = "";
	unsigned int i;

	printf(",\"vec\":\"");
	for (i = 0; i < sizeof(name) / sizeof(name[0]); i++) {
		if (st->vec & (1u << i)) {
			printf("%s%s", sep, name[i]);
			sep = "+";
		}
	}
	printf("%s\"", *sep ? "" : "portable");
}

static void ar_report(const struct ar_cfg *c, struct xina *x,
		      const struct ar_result *res, const double *secs,
		      uint32_t done, const char *error)
{
	XINA_STATS(st);
	double best, med = ar_median(secs, done, &best);
	bool ok = !error && !res->bad;
	if (x)
		xina_get_stats(x, &st);
	if (!c->json) {
		printf("rank %u/%u %s %s %llu bytes x %u iters: %s; median %.6f s (%.1f MB/s), "
		       "max_abs_err %g (bound %g), checksum %016llx, sent %llu retrans %llu ignored %llu\n",
		       c->o.rank, c->o.workers, xina_type_name(c->type),
		       ar_ops[c->op],
		       (unsigned long long)c->bytes, done,
		       ok ? "verified" : "NOT VERIFIED", med,
		       med > 0 ? c->bytes / med / 1e6 : 0.0, res->max_abs_err,
		       res->bound_at_max, (unsigned long long)res->checksum,
		       (unsigned long long)st.sent, (unsigned long long)st.retrans,
		       (unsigned long long)st.ignored);
		return;
	}
	printf("{\"rank\":%u,\"workers\":%u,\"dtype\":\"%s\",\"type\":\"%s\",\"op\":\"%s\",\"bytes\":%llu,"
	       "\"elems_per_pkt\":%u,\"slots\":%u,\"iters\":%u,\"verified\":%s,"
	       "\"bad_elems\":%llu,\"max_abs_err\":%.17g,\"bound\":%.17g,"
	       "\"worst_err_over_bound\":%.6g,\"checksum\":\"%016llx\","
	       "\"seconds_median\":%.9f,\"seconds_min\":%.9f,\"goodput_Bps\":%.0f,"
	       "\"t_start\":%.6f,\"t_end\":%.6f,"
	       "\"sent\":%llu,\"retrans\":%llu,\"results\":%llu,\"ignored\":%llu,"
	       "\"malformed\":%llu,\"timeouts\":%llu,\"tx_syscalls\":%llu,"
	       "\"rx_syscalls\":%llu,\"gso_sends\":%llu,\"gro_segs\":%llu,"
	       "\"bad_tag\":%llu,\"epoch\":%u,\"run\":%u,\"joins\":%llu,\"join_busy\":%u,"
	       "\"probes\":%llu,\"zero_sent\":%llu",
	       c->o.rank, c->o.workers,
	       c->type == XINA_TYPE_INT32 ? "i32" :
	       c->type == XINA_TYPE_FLOAT32 ? "f32" : xina_type_name(c->type),
	       xina_type_name(c->type), ar_ops[c->op],
	       (unsigned long long)c->bytes, c->o.elems, c->o.slots, done,
	       ok ? "true" : "false", (unsigned long long)res->bad,
	       res->max_abs_err, res->bound_at_max, res->worst_ratio,
	       (unsigned long long)res->checksum, med, best,
	       med > 0 ? c->bytes / med : 0.0, res->t_start, res->t_end,
	       (unsigned long long)st.sent, (unsigned long long)st.retrans,
	       (unsigned long long)st.results, (unsigned long long)st.ignored,
	       (unsigned long long)st.malformed, (unsigned long long)st.timeouts,
	       (unsigned long long)st.tx_syscalls,
	       (unsigned long long)st.rx_syscalls,
	       (unsigned long long)st.gso_sends, (unsigned long long)st.gro_segs,
	       (unsigned long long)st.bad_tag, st.epoch, c->o.run,
	       (unsigned long long)st.joins, st.join_busy,
	       (unsigned long long)st.probes,
	       (unsigned long long)st.zero_sent);
	ar_json_io(x, &st);
	ar_json_vec(&st);
	printf(",\"sparse_density\":%.3f,\"sparse_same\":%s,\"sparse_mixed\":%s,"
	       "\"sparse_blocks\":%llu,\"sparse_skipped\":%llu,"
	       "\"sparse_expect_blocks\":%llu,\"sparse_expect_skipped\":%llu,"
	       "\"sparse_expect_zero\":%llu",
	       ar_sparse_pm / 1000.0, ar_sparse_same ? "true" : "false",
	       ar_sparse_mixed ? "true" : "false",
	       (unsigned long long)st.sparse_blocks,
	       (unsigned long long)st.sparse_skipped,
	       (unsigned long long)res->sp_blocks,
	       (unsigned long long)res->sp_zero,
	       (unsigned long long)res->sp_mine_zero);
	if (ar_sparse_paired) {
		printf(",\"sparse_paired\":true,\"sparse_zero_sent\":%llu,"
		       "\"dense_seconds_median\":%.9f",
		       (unsigned long long)res->sp_zero_sent,
		       ar_median(res->dense_secs, done, NULL));
		ar_json_secs("dense_seconds", res->dense_secs, done);
		ar_json_secs("seconds", secs, done);
	}
	printf(",\"inflight\":%u,\"fallback\":%u,\"fallback_calls\":%llu,"
	       "\"fallback_served\":%u,"
	       "\"fallback_tx_bytes\":%llu,\"fallback_rx_bytes\":%llu",
	       c->inflight, st.fallback,
	       (unsigned long long)st.fallback_calls, st.fallback_served,
	       (unsigned long long)st.fallback_tx_bytes,
	       (unsigned long long)st.fallback_rx_bytes);
	if (error) {
		printf(",\"error\":\"");
		for (; *error; error++)
			printf(*error == '"' || *error == '\\' ? "\\%c" : "%c", *error);
		printf("\"");
	}
	printf("}\n");
}

/* Why the last --inflight call failed: its request's own message. */
static char ar_req_msg[1024];

/* Elements of each of the c->inflight calls of @n, cut at whole blocks. */
static size_t ar_per_call(const struct ar_cfg *c, size_t n)
{
	size_t pp = ar_per_pkt(c);

	return ((n + pp - 1) / pp + c->inflight - 1) / c->inflight * pp;
}

/* Call @k of them sparse? (--sparse-mixed: the odd ones are dense) */
static bool ar_call_sparse(uint32_t k)
{
	return ar_sparse_pm && !ar_dense_step && !(ar_sparse_mixed && k % 2);
}

/*
 * One iteration as c->inflight calls in flight at once, cut at whole
 * blocks, waited for through the completion fd as an event loop would.
 */
static int ar_call_inflight(struct ar_cfg *c, struct xina *x, void *buf,
			    size_t n)
{
	size_t per = ar_per_call(c, n), esz = xina_type_size(c->type);
	struct xina_req *r[AR_MAX_INFLIGHT];
	unsigned int k, started = 0, pending;
	struct pollfd pfd;
	size_t off, len;
	uint64_t cnt;
	int err = 0, st;

	pfd.fd = xina_completion_fd(x);
	pfd.events = POLLIN;
	if (pfd.fd < 0) {
		snprintf(ar_req_msg, sizeof(ar_req_msg), "%s", xina_last_error(x));
		return pfd.fd;
	}
	for (k = 0; k < c->inflight; k++) {
		off = (size_t)k * per < n ? (size_t)k * per : n;
		len = n - off < per ? n - off : per;
		/* the historical pairs through their own calls */
		if (ar_call_sparse(k) && ar_sparse_map)
			err = xina_allreduce_sparse_map_start(x, (uint8_t *)buf + off * esz,
							      len, c->type, c->op,
							      ar_maps[k], &r[k]);
		else if (ar_call_sparse(k))
			err = xina_allreduce_sparse_start(x, (uint8_t *)buf + off * esz,
							  len, c->type, c->op,
							  &r[k]);
		else if (c->f32)
			err = xina_allreduce_f32_start(x, (float *)buf + off,
						       len, &r[k]);
		else if (c->type == XINA_TYPE_INT32)
			err = xina_allreduce_i32_start(x, (int32_t *)buf + off,
						       len, c->op, &r[k]);
		else
			err = xina_allreduce_start(x, (uint8_t *)buf + off * esz,
						   len, c->type, c->op, &r[k]);
		if (err) {
			snprintf(ar_req_msg, sizeof(ar_req_msg), "start of call %u of %u: %s",
				 k + 1, c->inflight, xina_last_error(x));
			break;
		}
		started++;
	}
	/* Each call ends within libxina's timeouts: so does this loop. */
	for (pending = started; pending;) {
		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			break;
		if (read(pfd.fd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
			break;
		for (pending = 0, k = 0; k < started; k++)
			pending += xina_req_test(r[k]) == -EINPROGRESS;
	}
	for (k = 0; k < started; k++) {
		st = xina_req_wait(r[k], -1);
		if (st && !err) {
			err = st;
			snprintf(ar_req_msg, sizeof(ar_req_msg), "call %u of %u: %s",
				 k + 1, c->inflight, xina_req_error(r[k]));
		}
		xina_req_free(r[k]);
	}
	return err;
}

static int ar_run(struct ar_cfg *c, struct xina *x, void *buf, size_t n,
		  float *in, double *secs, uint32_t *done, struct ar_result *res)
{
	uint32_t it, k, step, steps = c->iters * (ar_sparse_paired ? 2 : 1);
	size_t per = ar_per_call(c, n), off;
	XINA_STATS(st0);
	XINA_STATS(st1);
	int32_t barrier = 0;
	double t0, t;
	int err;

	res->checksum = 0xcbf29ce484222325ull;
	for (k = 0; ar_sparse_map && k < c->inflight; k++) {
		ar_maps[k] = malloc((per / ar_blk + 7) / 8 + 1);
		if (!ar_maps[k]) {
			snprintf(ar_req_msg, sizeof(ar_req_msg),
				 "out of memory for the maps of the blocks");
			return -ENOMEM;
		}
	}
	for (step = 0; step < steps; step++) {
		it = ar_sparse_paired ? step / 2 : step;
		ar_dense_step = ar_sparse_paired && !(step & 1);
		ar_fill(c, buf, n, it, per);
		for (k = 0, off = 0; k < c->inflight && off < n; k++, off += per)
			if (ar_call_sparse(k))
				ar_sparse_expect(c, off, n - off < per ? n - off : per,
						 it, res);
		/*
		 * A one-element allreduce through the switch is a barrier:
		 * without it the time of a call includes waiting for peers
		 * still busy verifying the previous iteration.
		 */
		err = xina_allreduce_i32(x, &barrier, 1, XINA_OP_SUM);
		if (err)
			return err;
		if (!step)
			res->t_start = ar_now(CLOCK_REALTIME);
		if (ar_sparse_paired)
			xina_get_stats(x, &st0);
		t0 = ar_now(CLOCK_MONOTONIC);
		if (c->inflight > 1)
			err = ar_call_inflight(c, x, buf, n);
		else if (ar_call_sparse(0) && ar_sparse_map)
			err = xina_allreduce_sparse_map(x, buf, n, c->type, c->op,
							ar_maps[0]);
		else if (ar_call_sparse(0))
			err = xina_allreduce_sparse(x, buf, n, c->type, c->op);
		else if (c->f32)
			err = xina_allreduce_f32(x, buf, n);
		else if (c->type == XINA_TYPE_INT32)
			err = xina_allreduce_i32(x, buf, n, c->op);
		else
			err = xina_allreduce(x, buf, n, c->type, c->op);
		t = ar_now(CLOCK_MONOTONIC) - t0;
		*(ar_dense_step ? &res->dense_secs[it] : &secs[it]) = t;
		res->t_end = ar_now(CLOCK_REALTIME);
		if (err)
			return err;
		if (ar_sparse_paired && !ar_dense_step) {
			xina_get_stats(x, &st1);
			res->sp_zero_sent += st1.zero_sent - st0.zero_sent;
		}
		if (!ar_dense_step)
			*done = it + 1;
		res->checksum = ar_fnv(res->checksum, buf,
				       n * xina_type_size(c->type));
		if (c->f32)
			ar_check_f32(c, buf, n, it, in, res);
		else if (c->type == XINA_TYPE_INT32 &&
			 (c->op == XINA_OP_SUM || c->op == XINA_OP_MAX))
			ar_check_i32(c, buf, n, it, res);
		else if (!ar_float(c->type))
			ar_check_int(c, buf, n, it, res);
		else if (c->op == XINA_OP_MIN || c->op == XINA_OP_MAX)
			ar_check_ord(c, buf, n, it, res);
		else
			ar_check_bfp(c, buf, n, it, res);
		if (res->bad) {
			res->bad_iter = it;
			fprintf(stderr, "xina-allreduce: rank %u: iteration %u%s: %llu elements wrong, first at index %llu%s%s\n",
				c->o.rank, it, ar_dense_step ? " (its dense call)" : "",
				(unsigned long long)res->bad,
				(unsigned long long)res->first_bad,
				res->why[0] ? ": " : "", res->why);
			return -EBADMSG;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct ar_result res = {};
	struct ar_cfg c = {};
	struct xina *x = NULL;
	char error[1200] = "";
	uint32_t done = 0;
	double *secs;
	float *in;
	void *buf;
	size_t n;
	int err;

	if (ar_parse(&c, argc, argv))
		return 2;
	n = c.bytes / xina_type_size(c.type);
	c.o.log = ar_log;
	c.o.log_ctx = &c.o.rank;
	c.o.log_level = c.verbose ? XINA_LOG_DEBUG : XINA_LOG_WARN;
	buf = malloc(c.bytes ? c.bytes : 8);
	secs = calloc(c.iters, sizeof(*secs));
	res.dense_secs = calloc(c.iters, sizeof(*res.dense_secs));
	/* the float check's copy of one block of every worker's input */
	in = malloc((size_t)c.o.workers * c.o.elems * sizeof(*in));
	if (!buf || !secs || !res.dense_secs || !in) {
		fprintf(stderr, "xina-allreduce: out of memory for %llu bytes\n",
			(unsigned long long)c.bytes);
		return 1;
	}
	err = xina_open(&c.o, &x);
	if (err) {
		snprintf(error, sizeof(error), "xina_open: %s: %s",
			 strerror(-err), ar_last_msg);
		goto out;
	}
	if (ar_sparse_pm && xina_sparse_block(x, c.type, c.op) != ar_blk) {
		snprintf(error, sizeof(error), "libxina's sparse blocks are %zu elements, not the %llu of a packet here",
			 xina_sparse_block(x, c.type, c.op),
			 (unsigned long long)ar_blk);
		err = -EPROTO;
		goto out;
	}
	err = ar_run(&c, x, buf, n, in, secs, &done, &res);
	if (err && err != -EBADMSG)
		snprintf(error, sizeof(error), "allreduce %u of %u: %s: %s",
			 done + 1, c.iters, strerror(-err),
			 ar_req_msg[0] ? ar_req_msg : xina_last_error(x));
	else if (err)
		snprintf(error, sizeof(error), "result mismatch in iteration %u%s",
			 res.bad_iter, ar_dense_step ? " (its dense call)" : "");
out:
	if (error[0])
		fprintf(stderr, "xina-allreduce: rank %u: %s\n", c.o.rank, error);
	ar_report(&c, x, &res, secs, done, error[0] ? error : NULL);
	xina_close(x);
	for (n = 0; n < AR_MAX_INFLIGHT; n++)
		free(ar_maps[n]);
	free(in);
	free(res.dense_secs);
	free(secs);
	free(buf);
	return err || res.bad ? 1 : 0;
}
