/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the benchmark drivers: clocks, CPU accounting and
 * order statistics.  Not part of libxina.
 */
#ifndef XINA_BENCH_UTIL_H
#define XINA_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* System-wide CPU time from the first line of /proc/stat, in seconds. */
struct host_cpu {
	double busy;	/* everything but idle and iowait */
	double softirq;	/* tick-sampled softirq (no IRQ_TIME_ACCOUNTING) */
	double sys;
	double user;
};

double mono_s(void);
/* user + system CPU seconds of the calling process (all threads) */
double self_cpu_s(void);
int host_cpu_read(struct host_cpu *c);
void host_cpu_sub(struct host_cpu *d, const struct host_cpu *a,
		  const struct host_cpu *b);
/* Sorts @v in place and returns the @q quantile (0..1), interpolated. */
double quantile(double *v, size_t n, double q);
/* Parses a size with an optional K/M/G (binary) suffix; -1 on error. */
long long parse_size(const char *s);
/* Input of rank @rank at element i: (rank + 1) * (i % 251 + 1), exact in f32. */
void bench_fill(void *buf, size_t n, int rank, int f32);

#endif /* XINA_BENCH_UTIL_H */
