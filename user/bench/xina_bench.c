// SPDX-License-Identifier: GPL-2.0
/*
 * xina-bench-xina: one worker of a xina allreduce, timed the way the peers'
 * drivers time theirs (xina-bench-mpi, gloo_allreduce.py), so that the
 * numbers compare.  Used for both xina systems: the XDP switch and
 * xina-swagg; the switch side is the caller's business.
 *
 *   xina-bench-xina --switch IP[:PORT] --bind IP[:PORT] --job ID --key-file PATH
 *       --rank R --workers N --slots S --elems E --bytes SIZE[,SIZE...]
 *       [--dtype i32|f32[,...]] [--iters N[,N...]] [--warmup N] [--run ID]
 *
 * Why not xina-allreduce: it recomputes every worker's input to check each
 * element against its own float reference, which costs more CPU than the
 * allreduce.  Here the inputs are the same closed form as the peers'
 * ((r + 1) * (i % 251 + 1)), so the expected result is known (see check()).
 *
 * Every timed call starts from freshly written inputs, sits between two
 * one-element allreduces through the switch (barriers: they complete only
 * once every worker sent them), and its result is checked element by
 * element afterwards; input writing and checks are neither timed nor
 * charged.  Every rank prints one JSON line per size and dtype with its
 * iteration times; the harness takes, per iteration, the slowest rank's
 * time (as the peers' drivers do).  CPU: user+system time of this process
 * from the barrier before each call to the barrier after it, summed over
 * the calls (as in the peers' drivers); rank 0 adds the host's /proc/stat
 * busy and softirq seconds over the same windows, how long its windows
 * lasted (window_s: busy / (window_s * CPUs) is the host's busy
 * fraction), and the switch's CPU: the
 * run time of its XDP programs (--switch-prog, from the kernel's BPF
 * run-time statistics) or the CPU time of the aggregator process
 * (--switch-pid).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "bench_util.h"
#include "libxina.h"

#define MAX_RUNS	16
#define MAX_PROGS	64

struct cfg {
	char switch_addr[64];
	char bind_addr[64];
	struct xina_opts o;
	long long bytes[MAX_RUNS];
	int iters[MAX_RUNS];
	int nbytes;
	int niters;
	int warmup;
	int dtypes;	/* bit 0: i32, bit 1: f32 */
	int cpu_pid;	/* the switch's process (xina-swagg), or 0 */
	int prog_fd[MAX_PROGS];	/* the switch's BPF programs */
	int nprogs;
};

static void usage(void)
{
	fprintf(stderr,
		"usage: xina-bench-xina --switch IP[:PORT] --bind IP[:PORT] --job ID --key-file PATH\n"
		"                       --rank R --workers N --slots S --elems E --bytes SIZE[,SIZE...]\n"
		"                       [--dtype i32|f32[,...]] [--iters N[,N...]] [--warmup N]\n"
		"                       [--switch-pid PID] [--switch-prog ID]... [--io auto|udp|xsk]\n"
		"                       [--run ID] [--zerocopy]\n"
		"--zerocopy: UDP sends with MSG_ZEROCOPY (XINA_OPT_F_ZEROCOPY)\n"
		"--run: this run of the job, the same for every worker of the launch\n"
		"       (libxina.h, xina_opts.run; default 0: none)\n");
	exit(2);
}

static unsigned long long num(const char *opt, const char *s,
			      unsigned long long max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || !*s || *end || v > max) {
		fprintf(stderr, "xina-bench-xina: bad %s '%s' (0..%llu)\n", opt, s, max);
		exit(2);
	}
	return v;
}

/* "IP[:PORT]" into @buf and @port. */
static void addr(const char *opt, const char *s, char *buf, size_t len,
		 uint16_t *port)
{
	const char *colon = strchr(s, ':');
	size_t n = colon ? (size_t)(colon - s) : strlen(s);

	if (n >= len) {
		fprintf(stderr, "xina-bench-xina: bad %s '%s' (IPv4[:PORT])\n", opt, s);
		exit(2);
	}
	memcpy(buf, s, n);
	buf[n] = 0;
	if (colon)
		*port = num(opt, colon + 1, 65535);
}

static void list(char *arg, const char *opt, struct cfg *c)
{
	char *save = NULL, *tok;
	long long v;

	for (tok = strtok_r(arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(opt, "--dtype")) {
			if (!strcmp(tok, "i32")) {
				c->dtypes |= 1;
				continue;
			}
			if (!strcmp(tok, "f32")) {
				c->dtypes |= 2;
				continue;
			}
			fprintf(stderr, "xina-bench-xina: bad --dtype '%s' (i32 or f32)\n", tok);
			exit(2);
		}
		if (!strcmp(opt, "--bytes")) {
			v = parse_size(tok);
			if (v <= 0 || v % 4 || c->nbytes == MAX_RUNS) {
				fprintf(stderr, "xina-bench-xina: bad --bytes '%s' (a positive multiple of 4, at most %d sizes)\n",
					tok, MAX_RUNS);
				exit(2);
			}
			c->bytes[c->nbytes++] = v;
			continue;
		}
		v = num(opt, tok, 1000000);
		if (v < 1 || c->niters == MAX_RUNS) {
			fprintf(stderr, "xina-bench-xina: bad --iters '%s'\n", tok);
			exit(2);
		}
		c->iters[c->niters++] = v;
	}
}

/* Needs kernel.bpf_stats_enabled=1 for run_time_ns to count. */
static void prog_open(struct cfg *c, const char *arg)
{
	unsigned long long id = num("--switch-prog", arg, UINT32_MAX);
	int fd;

	if (c->nprogs == MAX_PROGS) {
		fprintf(stderr, "xina-bench-xina: more than %d --switch-prog\n", MAX_PROGS);
		exit(2);
	}
	fd = bpf_prog_get_fd_by_id(id);
	if (fd < 0) {
		fprintf(stderr, "xina-bench-xina: --switch-prog %llu: %s\n", id,
			strerror(errno));
		exit(2);
	}
	c->prog_fd[c->nprogs++] = fd;
}

/*
 * CPU seconds the switch spent: the aggregator process's utime + stime
 * (/proc/PID/stat, fields 14 and 15), or the run time of the XDP programs.
 */
static double switch_cpu_s(const struct cfg *c)
{
	unsigned long long ut, st;
	struct bpf_prog_info info;
	__u32 len = sizeof(info);
	double sum = 0;
	char path[64], buf[1024], *p;
	FILE *f;
	int i;

	for (i = 0; i < c->nprogs; i++) {
		memset(&info, 0, sizeof(info));
		if (!bpf_obj_get_info_by_fd(c->prog_fd[i], &info, &len))
			sum += info.run_time_ns / 1e9;
	}
	if (!c->cpu_pid)
		return sum;
	snprintf(path, sizeof(path), "/proc/%d/stat", c->cpu_pid);
	f = fopen(path, "r");
	if (!f)
		return sum;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	/* the command name may hold spaces: fields count from its ')' */
	p = p ? strrchr(buf, ')') : NULL;
	if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			&ut, &st) == 2)
		sum += (ut + st) / (double)sysconf(_SC_CLK_TCK);
	return sum;
}

static enum xina_io io_parse(const char *s)
{
	if (!strcmp(s, "auto"))
		return XINA_IO_AUTO;
	if (!strcmp(s, "udp"))
		return XINA_IO_UDP;
	if (!strcmp(s, "xsk"))
		return XINA_IO_XSK;
	fprintf(stderr, "xina-bench-xina: bad --io '%s' (auto, udp or xsk)\n", s);
	exit(2);
}

/*
 * "io" and "io_reason" of a row: the packet I/O the handle uses, and why;
 * "zc_sends" and "zc_copied": its zero-copy UDP sends (libxina.h).
 */
static void io_json(struct xina *x, const struct xina_worker_stats *st)
{
	const char *r = xina_io_reason(x);

	printf(",\"io\":\"%s\",\"io_reason\":\"",
	       st->io == XINA_IO_XSK ? "xsk" : "udp");
	for (; *r; r++)
		printf(*r == '"' || *r == '\\' ? "\\%c" : "%c", *r);
	printf("\",\"zc_sends\":%llu,\"zc_copied\":%llu",
	       (unsigned long long)st->zc_sends,
	       (unsigned long long)st->zc_copied);
}

static void parse(int argc, char **argv, struct cfg *c)
{
	enum { O_SWITCH = 1, O_BIND, O_JOB, O_KEY, O_RANK, O_WORKERS, O_SLOTS,
	       O_ELEMS, O_BYTES, O_DTYPE, O_ITERS, O_WARMUP, O_PID, O_PROG,
	       O_IO, O_RUN, O_ZC };
	static const struct option lo[] = {
		{ "switch", required_argument, NULL, O_SWITCH },
		{ "bind", required_argument, NULL, O_BIND },
		{ "job", required_argument, NULL, O_JOB },
		{ "key-file", required_argument, NULL, O_KEY },
		{ "rank", required_argument, NULL, O_RANK },
		{ "workers", required_argument, NULL, O_WORKERS },
		{ "slots", required_argument, NULL, O_SLOTS },
		{ "elems", required_argument, NULL, O_ELEMS },
		{ "bytes", required_argument, NULL, O_BYTES },
		{ "dtype", required_argument, NULL, O_DTYPE },
		{ "iters", required_argument, NULL, O_ITERS },
		{ "warmup", required_argument, NULL, O_WARMUP },
		{ "switch-pid", required_argument, NULL, O_PID },
		{ "switch-prog", required_argument, NULL, O_PROG },
		{ "io", required_argument, NULL, O_IO },
		{ "run", required_argument, NULL, O_RUN },
		{ "zerocopy", no_argument, NULL, O_ZC },
		{ NULL, 0, NULL, 0 },
	};
	int o;

	c->o.sz = sizeof(c->o);
	c->warmup = 1;
	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (o) {
		case O_SWITCH:
			addr("--switch", optarg, c->switch_addr,
			     sizeof(c->switch_addr), &c->o.switch_port);
			break;
		case O_BIND:
			addr("--bind", optarg, c->bind_addr, sizeof(c->bind_addr),
			     &c->o.bind_port);
			break;
		case O_JOB:
			c->o.job = num("--job", optarg, UINT32_MAX);
			break;
		case O_KEY:
			c->o.key_file = optarg;
			break;
		case O_RANK:
			c->o.rank = num("--rank", optarg, XINA_MAX_WORKERS - 1);
			break;
		case O_WORKERS:
			c->o.workers = num("--workers", optarg, XINA_MAX_WORKERS);
			break;
		case O_SLOTS:
			c->o.slots = num("--slots", optarg, UINT32_MAX);
			break;
		case O_ELEMS:
			c->o.elems = num("--elems", optarg, XINA_MAX_ELEMS);
			break;
		case O_BYTES:
			list(optarg, "--bytes", c);
			break;
		case O_DTYPE:
			list(optarg, "--dtype", c);
			break;
		case O_ITERS:
			list(optarg, "--iters", c);
			break;
		case O_WARMUP:
			c->warmup = num("--warmup", optarg, 1000);
			break;
		case O_PID:
			c->cpu_pid = num("--switch-pid", optarg, INT32_MAX);
			break;
		case O_PROG:
			prog_open(c, optarg);
			break;
		case O_IO:
			c->o.io = io_parse(optarg);
			break;
		case O_ZC:
			c->o.flags |= XINA_OPT_F_ZEROCOPY;
			break;
		case O_RUN:
			c->o.run = num("--run", optarg, UINT32_MAX);
			break;
		default:
			usage();
		}
	}
	if (!c->o.key_file)
		c->o.key_file = getenv("XINA_KEY_FILE");
	if (!c->switch_addr[0] || !c->o.job || !c->o.workers || !c->nbytes ||
	    !c->o.key_file)
		usage();
	if (c->niters > 1 && c->niters != c->nbytes) {
		fprintf(stderr, "xina-bench-xina: --iters needs one count, or one per size\n");
		exit(2);
	}
	if (!c->niters)
		c->iters[c->niters++] = 5;
	if (!c->dtypes)
		c->dtypes = 2;
	c->o.switch_addr = c->switch_addr;
	c->o.bind_addr = c->bind_addr[0] ? c->bind_addr : NULL;
}

/*
 * Every timed call starts from the inputs of bench_fill(), so its result is
 * S * (i % 251 + 1) with S = N (N + 1) / 2, for int32 and float32 alike:
 * the inputs are integers below 2^24 and the block floating point scale
 * 2^s only shifts them (x * 2^s is an integer below 2^(31 - L)), so the
 * float32 path is exact here too and both are checked bit for bit.  A call
 * that returned zeros, or lost or doubled a contribution, fails.
 */
static int check(const void *buf, size_t n, int workers, int f32)
{
	uint32_t s = workers * (workers + 1) / 2;
	size_t i;

	for (i = 0; i < n; i++) {
		uint32_t want = s * (i % 251 + 1);

		if (!f32 && (uint32_t)((const int32_t *)buf)[i] == want)
			continue;
		if (f32 && ((const float *)buf)[i] == (float)want)
			continue;
		if (f32)
			fprintf(stderr, "xina-bench-xina: element %zu is %.9g, expected %u\n",
				i, ((const float *)buf)[i], want);
		else
			fprintf(stderr, "xina-bench-xina: element %zu is %d, expected %u\n",
				i, ((const int32_t *)buf)[i], want);
		return -EIO;
	}
	return 0;
}

static int reduce(struct xina *x, void *buf, size_t n, int f32)
{
	return f32 ? xina_allreduce_f32(x, buf, n) :
		     xina_allreduce_i32(x, buf, n, XINA_OP_SUM);
}

static int barrier(struct xina *x)
{
	int32_t one = 1;

	return xina_allreduce_i32(x, &one, 1, XINA_OP_SUM);
}

/* CPU counters around one timed call; rank 0 also the host's and switch's. */
struct cpu_acc {
	double self;
	double sw;
	double wall;	/* rank 0: how long the windows lasted */
	struct host_cpu host;
};

static void cpu_snap(const struct cfg *c, struct cpu_acc *a)
{
	a->self = self_cpu_s();
	if (c->o.rank == 0) {
		host_cpu_read(&a->host);
		a->sw = switch_cpu_s(c);
		a->wall = mono_s();
	}
}

static void cpu_add(struct cpu_acc *sum, const struct cpu_acc *a,
		    const struct cpu_acc *b)
{
	struct host_cpu d;

	sum->self += b->self - a->self;
	sum->sw += b->sw - a->sw;
	sum->wall += b->wall - a->wall;
	host_cpu_sub(&d, &b->host, &a->host);
	sum->host.busy += d.busy;
	sum->host.softirq += d.softirq;
}

/*
 * One size and dtype.  The reduction is in place: each timed call starts
 * from freshly written inputs and its result is checked after it, both
 * outside the timed window and outside the CPU accounting, which spans
 * the barrier before the call to the barrier after it (all ranks are done
 * with the call then, and none has started checking).
 */
static int measure(struct xina *x, const struct cfg *c, long long bytes,
		   int iters, int f32, void *buf, double *t)
{
	struct cpu_acc acc = { 0 }, a, b;
	XINA_STATS(s0);
	XINA_STATS(s1);
	size_t n = bytes / 4;
	double t0;
	int i, err;

	for (i = 0; i < c->warmup; i++) {
		bench_fill(buf, n, c->o.rank, f32);
		err = reduce(x, buf, n, f32);
		if (!err)
			err = check(buf, n, c->o.workers, f32);
		if (err)
			return err;
	}
	xina_get_stats(x, &s0);
	for (i = 0; i < iters; i++) {
		bench_fill(buf, n, c->o.rank, f32);
		err = barrier(x);
		if (err)
			return err;
		cpu_snap(c, &a);
		t0 = mono_s();
		err = reduce(x, buf, n, f32);
		t[i] = mono_s() - t0;
		if (!err)
			err = barrier(x);
		if (err)
			return err;
		cpu_snap(c, &b);
		cpu_add(&acc, &a, &b);
		err = check(buf, n, c->o.workers, f32);
		if (err)
			return err;
	}
	xina_get_stats(x, &s1);

	printf("{\"rank\":%u,\"workers\":%u,\"dtype\":\"%s\",\"bytes\":%lld,"
	       "\"iters\":%d,\"warmup\":%d,\"elems\":%u,\"slots\":%u,\"t\":[",
	       c->o.rank, c->o.workers, f32 ? "f32" : "i32", bytes, iters,
	       c->warmup, c->o.elems, c->o.slots);
	for (i = 0; i < iters; i++)
		printf("%s%.6f", i ? "," : "", t[i]);
	printf("],\"cpu_s\":%.4f,\"sent\":%llu,\"retrans\":%llu,\"timeouts\":%llu,"
	       "\"probes\":%llu,\"zero_sent\":%llu",
	       acc.self, (unsigned long long)(s1.sent - s0.sent),
	       (unsigned long long)(s1.retrans - s0.retrans),
	       (unsigned long long)(s1.timeouts - s0.timeouts),
	       (unsigned long long)(s1.probes - s0.probes),
	       (unsigned long long)(s1.zero_sent - s0.zero_sent));
	io_json(x, &s1);
	if (c->o.rank == 0)
		printf(",\"host_busy_s\":%.4f,\"host_softirq_s\":%.4f,"
		       "\"switch_cpu_s\":%.6f,\"window_s\":%.6f",
		       acc.host.busy, acc.host.softirq, acc.sw, acc.wall);
	printf("}\n");
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	int i, d, err = 0, maxiters = 0;
	struct cfg c = { 0 };
	long long maxbytes = 0;
	struct xina *x;
	double *t;
	void *buf;

	parse(argc, argv, &c);
	for (i = 0; i < c.nbytes; i++) {
		if (c.bytes[i] > maxbytes)
			maxbytes = c.bytes[i];
		if (c.iters[c.niters > 1 ? i : 0] > maxiters)
			maxiters = c.iters[c.niters > 1 ? i : 0];
	}
	buf = malloc(maxbytes);
	t = calloc(maxiters, sizeof(*t));
	if (!buf || !t) {
		fprintf(stderr, "xina-bench-xina: out of memory for %lld bytes\n", maxbytes);
		return 1;
	}
	err = xina_open(&c.o, &x);
	if (err) {
		fprintf(stderr, "xina-bench-xina: rank %u: xina_open: %s\n", c.o.rank,
			strerror(-err));
		return 1;
	}
	for (d = 0; d < 2 && !err; d++) {
		if (!(c.dtypes & (1 << d)))
			continue;
		for (i = 0; i < c.nbytes && !err; i++)
			err = measure(x, &c, c.bytes[i], c.iters[c.niters > 1 ? i : 0],
				      d, buf, t);
	}
	if (err)
		fprintf(stderr, "xina-bench-xina: rank %u: %s: %s\n", c.o.rank,
			strerror(-err), xina_last_error(x) ? xina_last_error(x) : "");
	xina_close(x);
	free(buf);
	free(t);
	return err ? 1 : 0;
}
