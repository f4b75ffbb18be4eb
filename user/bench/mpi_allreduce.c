// SPDX-License-Identifier: GPL-2.0
/*
 * xina-bench-mpi: the OpenMPI peer of the benchmarks.  Every rank reduces a
 * tensor of --bytes with MPI_Allreduce(MPI_SUM) --iters times; rank 0
 * prints one JSON line per tensor size and dtype.  Lists run in one job so
 * that the start of mpirun is paid once.
 *
 *   mpirun -np N xina-bench-mpi --dtype f32,i32 --bytes 1M,64M \
 *           [--iters 5[,3]] [--warmup 1]
 *
 * --iters may give one count per size. *
 * One iteration's time is the slowest rank's (an allreduce is done when the
 * last member has the result), each iteration starts from a barrier.  The
 * receive buffer is poisoned before every call and the result of every
 * call is checked element by element afterwards (neither timed nor
 * charged): the inputs are small integers, exact in float32 too, so the
 * expected sum is known.
 *
 * CPU: each rank's user+system time (getrusage) from the barrier before
 * each call to a barrier after it, summed over calls and ranks, and the
 * host's /proc/stat busy and softirq time over the same windows, read by
 * rank 0, with how long its windows lasted (window_s; the switch's share is what is left once the ranks' own time is
 * taken out; see Documentation/benchmarks.md).
 */
#include <errno.h>
#include <getopt.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#define MAX_RUNS	16

struct opts {
	long long bytes[MAX_RUNS];
	int iters[MAX_RUNS];
	int nbytes;
	int niters;
	int warmup;
	int dtypes;	/* bit 0: i32, bit 1: f32 */
};

/* One measurement: a size and a dtype. */
struct run {
	long long bytes;
	int iters;
	int warmup;
	int f32;
};

static void usage(void)
{
	fprintf(stderr,
		"usage: xina-bench-mpi --bytes SIZE[,SIZE...] [--dtype i32|f32[,...]]\n"
		"                      [--iters N[,N...]] [--warmup N]\n");
	MPI_Abort(MPI_COMM_WORLD, 2);
}

static void bad(const char *what, const char *arg, const char *why)
{
	fprintf(stderr, "xina-bench-mpi: bad %s '%s' (%s)\n", what, arg, why);
	MPI_Abort(MPI_COMM_WORLD, 2);
}

static void parse_list(char *arg, const char *what, struct opts *o)
{
	char *save = NULL, *tok;

	for (tok = strtok_r(arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(what, "--dtype")) {
			if (!strcmp(tok, "i32"))
				o->dtypes |= 1;
			else if (!strcmp(tok, "f32"))
				o->dtypes |= 2;
			else
				bad(what, tok, "i32 or f32");
		} else if (!strcmp(what, "--bytes")) {
			long long b = parse_size(tok);

			if (o->nbytes == MAX_RUNS)
				bad(what, tok, "too many sizes");
			if (b <= 0 || b % 4)
				bad(what, tok, "a positive multiple of 4");
			o->bytes[o->nbytes++] = b;
		} else {
			int n = atoi(tok);

			if (o->niters == MAX_RUNS)
				bad(what, tok, "too many counts");
			if (n < 1)
				bad(what, tok, "at least 1");
			o->iters[o->niters++] = n;
		}
	}
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "bytes", required_argument, NULL, 'b' },
		{ "dtype", required_argument, NULL, 'd' },
		{ "iters", required_argument, NULL, 'i' },
		{ "warmup", required_argument, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->warmup = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'b':
			parse_list(optarg, "--bytes", o);
			break;
		case 'd':
			parse_list(optarg, "--dtype", o);
			break;
		case 'i':
			parse_list(optarg, "--iters", o);
			break;
		case 'w':
			o->warmup = atoi(optarg);
			break;
		default:
			usage();
		}
	}
	if (!o->nbytes || o->warmup < 0)
		usage();
	if (o->niters > 1 && o->niters != o->nbytes)
		bad("--iters", "", "one count, or one per size");
	if (!o->dtypes)
		o->dtypes = 2;
	if (!o->niters)
		o->iters[o->niters++] = 5;
}

static int check(const void *buf, size_t n, int size, int f32)
{
	int32_t ranks = size * (size + 1) / 2;
	size_t i;

	for (i = 0; i < n; i++) {
		int32_t want = ranks * (int32_t)(i % 251 + 1);
		double got = f32 ? ((const float *)buf)[i] : ((const int32_t *)buf)[i];

		if (got != want) {
			fprintf(stderr, "xina-bench-mpi: element %zu is %g, expected %d\n",
				i, got, want);
			return -1;
		}
	}
	return 0;
}

static void report(const struct run *r, int size, double *t, double cpu,
		   const struct host_cpu *host, double window)
{
	double med, p25, p75, total = 0;
	int i;

	printf("{\"system\":\"openmpi\",\"t\":[");
	for (i = 0; i < r->iters; i++) {
		total += t[i];
		printf("%s%.6f", i ? "," : "", t[i]);
	}
	printf("],");
	p25 = quantile(t, r->iters, 0.25);
	med = quantile(t, r->iters, 0.5);
	p75 = quantile(t, r->iters, 0.75);
	printf("\"workers\":%d,\"dtype\":\"%s\",\"bytes\":%lld,"
	       "\"iters\":%d,\"warmup\":%d,\"t_median_s\":%.6f,\"t_p25_s\":%.6f,"
	       "\"t_p75_s\":%.6f,\"t_min_s\":%.6f,\"t_max_s\":%.6f,\"timed_s\":%.6f,"
	       "\"goodput_Bps\":%.0f,\"worker_cpu_s\":%.4f,"
	       "\"host_busy_s\":%.4f,\"host_softirq_s\":%.4f,\"window_s\":%.6f}\n",
	       size, r->f32 ? "f32" : "i32", r->bytes, r->iters, r->warmup,
	       med, p25, p75, t[0], t[r->iters - 1], total, r->bytes / med,
	       cpu, host->busy, host->softirq, window);
	fflush(stdout);
}

/* One size and dtype: warm up, then time and check every call.  Collective. */
static int measure(const struct run *r, void *sbuf, void *rbuf, double *t,
		   double *tmax)
{
	MPI_Datatype dt = r->f32 ? MPI_FLOAT : MPI_INT32_T;
	struct host_cpu h0 = { 0 }, h1 = { 0 }, hd, hsum = { 0 };
	double t0, w0 = 0, cpu0, cpu = 0, cpu_all = 0, window = 0;
	size_t n = r->bytes / 4;
	int rank, size, i, err = 0;

	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	bench_fill(sbuf, n, rank, r->f32);

	/* Connections are set up lazily: keep that out of the timing. */
	for (i = 0; i < r->warmup; i++) {
		memset(rbuf, 0xff, r->bytes);
		MPI_Allreduce(sbuf, rbuf, n, dt, MPI_SUM, MPI_COMM_WORLD);
		if (check(rbuf, n, size, r->f32))
			err = 1;
	}
	for (i = 0; i < r->iters; i++) {
		memset(rbuf, 0xff, r->bytes);	/* no stale result passes */
		MPI_Barrier(MPI_COMM_WORLD);
		if (rank == 0) {
			host_cpu_read(&h0);
			w0 = mono_s();
		}
		cpu0 = self_cpu_s();
		t0 = MPI_Wtime();
		MPI_Allreduce(sbuf, rbuf, n, dt, MPI_SUM, MPI_COMM_WORLD);
		t[i] = MPI_Wtime() - t0;
		MPI_Barrier(MPI_COMM_WORLD);
		cpu += self_cpu_s() - cpu0;
		if (rank == 0) {
			window += mono_s() - w0;
			host_cpu_read(&h1);
			host_cpu_sub(&hd, &h1, &h0);
			hsum.busy += hd.busy;
			hsum.softirq += hd.softirq;
		}
		if (check(rbuf, n, size, r->f32))
			err = 1;
	}

	MPI_Allreduce(MPI_IN_PLACE, &err, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	MPI_Reduce(t, tmax, r->iters, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	MPI_Reduce(&cpu, &cpu_all, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0 && !err)
		report(r, size, tmax, cpu_all, &hsum, window);
	return err;
}

int main(int argc, char **argv)
{
	long long maxbytes = 0;
	int i, d, err = 0, maxiters = 0;
	void *sbuf, *rbuf;
	double *t, *tmax;
	struct opts o;
	struct run r;

	MPI_Init(&argc, &argv);
	parse(argc, argv, &o);
	for (i = 0; i < o.nbytes; i++) {
		if (o.bytes[i] > maxbytes)
			maxbytes = o.bytes[i];
		if (o.iters[o.niters > 1 ? i : 0] > maxiters)
			maxiters = o.iters[o.niters > 1 ? i : 0];
	}
	sbuf = malloc(maxbytes);
	rbuf = malloc(maxbytes);
	t = calloc(maxiters, sizeof(*t));
	tmax = calloc(maxiters, sizeof(*tmax));
	if (!sbuf || !rbuf || !t || !tmax) {
		fprintf(stderr, "xina-bench-mpi: out of memory for %lld bytes\n", maxbytes);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	for (d = 0; d < 2 && !err; d++) {
		if (!(o.dtypes & (1 << d)))
			continue;
		for (i = 0; i < o.nbytes && !err; i++) {
			r = (struct run){
				.bytes = o.bytes[i],
				.iters = o.iters[o.niters > 1 ? i : 0],
				.warmup = o.warmup,
				.f32 = d,
			};
			err = measure(&r, sbuf, rbuf, t, tmax);
		}
	}
	free(sbuf);
	free(rbuf);
	free(t);
	free(tmax);
	MPI_Finalize();
	return err;
}
