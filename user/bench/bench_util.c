// SPDX-License-Identifier: GPL-2.0
/* Helpers shared by the benchmark drivers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

double self_cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

int host_cpu_read(struct host_cpu *c)
{
	unsigned long long user, nice, sys, idle, iowait, irq, softirq, steal;
	double hz = sysconf(_SC_CLK_TCK);
	FILE *f = fopen("/proc/stat", "r");
	int n;

	if (!f)
		return -1;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &user,
		   &nice, &sys, &idle, &iowait, &irq, &softirq, &steal);
	fclose(f);
	if (n != 8)
		return -1;
	c->user = (user + nice) / hz;
	c->sys = sys / hz;
	c->softirq = softirq / hz;
	c->busy = (user + nice + sys + irq + softirq + steal) / hz;
	return 0;
}

void host_cpu_sub(struct host_cpu *d, const struct host_cpu *a,
		  const struct host_cpu *b)
{
	d->busy = a->busy - b->busy;
	d->softirq = a->softirq - b->softirq;
	d->sys = a->sys - b->sys;
	d->user = a->user - b->user;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double quantile(double *v, size_t n, double q)
{
	double pos, frac;
	size_t i;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	pos = q * (n - 1);
	i = (size_t)pos;
	frac = pos - i;
	if (i + 1 >= n)
		return v[n - 1];
	return v[i] + frac * (v[i + 1] - v[i]);
}

long long parse_size(const char *s)
{
	long long v;
	char *end;

	v = strtoll(s, &end, 10);
	if (end == s || v < 0)
		return -1;
	switch (*end) {
	case 'K':
	case 'k':
		v <<= 10;
		end++;
		break;
	case 'M':
	case 'm':
		v <<= 20;
		end++;
		break;
	case 'G':
	case 'g':
		v <<= 30;
		end++;
		break;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	return *end ? -1 : v;
}

void bench_fill(void *buf, size_t n, int rank, int f32)
{
	size_t i;

	for (i = 0; i < n; i++) {
		int32_t v = (rank + 1) * (int32_t)(i % 251 + 1);

		if (f32)
			((float *)buf)[i] = v;
		else
			((int32_t *)buf)[i] = v;
	}
}
