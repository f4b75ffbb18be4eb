// SPDX-License-Identifier: GPL-2.0
/*
 * xinactl stats: the counters of enum xina_stat per job and of enum
 * xina_gstat for the whole switch, named as in xina.h in lower case.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "xina_json.h"
#include "xina_names.h"
#include "xinactl.h"

#define STATS_PER_LINE	6

void xinactl_stats_usage(FILE *f)
{
	fprintf(f,
		"Usage: xinactl [ OPTIONS ] stats [ job ID ]\n"
		"       xinactl [ OPTIONS ] stats help\n"
		"where  ID := a job id, as in 'xinactl job show'\n");
}

/* "name value" pairs, a few per text line. */
static void stats_print_counters(const __u64 *c, unsigned int nr,
				 const char *(*name)(unsigned int))
{
	char fmt[64];
	unsigned int i;

	for (i = 0; i < nr; i++) {
		snprintf(fmt, sizeof(fmt), "%s%s %%llu",
			 i % STATS_PER_LINE ? " " : "\t", name(i));
		xp_uint(XP_ANY, name(i), fmt, c[i]);
		if (i % STATS_PER_LINE == STATS_PER_LINE - 1 || i == nr - 1)
			xp_nl();
	}
}

/* Where the job's packets arrived: explains one hot CPU or an idle one. */
static void stats_print_rx_cpu(const struct xinactl_stats *st)
{
	__u32 cpu;

	if (!st->ncpus)
		return;
	xp_text("\trx per cpu");
	xp_open_arr("rx_cpu");
	for (cpu = 0; cpu < st->ncpus; cpu++)
		xp_uint(XP_ANY, NULL, " %llu", st->rx_cpu[cpu]);
	xp_close_arr();
	xp_nl();
}

static void stats_print_job(__u32 id, const struct xinactl_stats *st)
{
	xp_open_obj(NULL);
	xp_uint(XP_ANY, "id", "job %llu\n", id);
	stats_print_counters(st->c, XINA_STAT_MAX, xina_stat_name);
	stats_print_rx_cpu(st);
	xp_close_obj();
}

static int stats_job_cb(struct xinactl *x, const struct xinactl_job *job,
			void *arg)
{
	struct xinactl_stats st;
	int ret;

	ret = x->be->stats_get(x, job->id, &st);
	if (ret == -ENOENT)	/* deleted since the walk listed it */
		return 0;
	if (ret)
		return ret;
	stats_print_job(job->id, &st);
	return 0;
}

static int stats_switch(struct xinactl *x)
{
	struct xinactl_gstats g;
	int ret;

	ret = x->be->gstats_get(x, &g);
	if (ret)
		return ret;
	xp_open_obj("switch");
	xp_text("switch\n");
	stats_print_counters(g.c, XINA_GSTAT_MAX, xina_gstat_name);
	xp_close_obj();
	return 0;
}

static int stats_show(struct xinactl *x, bool one, __u32 id)
{
	struct xinactl_stats st;
	int ret;

	ret = x->be->open(x, 0);
	if (ret)
		return ret;
	/* a job that does not exist fails before anything is printed */
	if (one) {
		ret = x->be->stats_get(x, id, &st);
		if (ret)
			goto out;
	}
	xp_open_obj(NULL);
	xp_str(XP_JSON, "backend", NULL, x->be->name);
	xp_open_arr("jobs");
	if (one)
		stats_print_job(id, &st);
	else
		ret = x->be->job_walk(x, stats_job_cb, NULL);
	xp_close_arr();
	if (!ret)
		ret = stats_switch(x);
	xp_close_obj();
out:
	x->be->close(x);
	return ret;
}

int xinactl_stats(struct xinactl *x, int argc, char **argv)
{
	const char *cmd = "stats";
	bool one = false;
	__u32 id = 0;

	if (argc > 0 && xmatches(argv[0], "help")) {
		if (argc > 1)
			return xunexpected("stats help", argv[1]);
		xinactl_stats_usage(stdout);
		return 0;
	}
	for (; argc > 0; argc--, argv++) {
		if (xmatches(argv[0], "job")) {
			XNEXT_ARG(cmd);
			if (one) {
				xerr("%s: 'job' given twice", cmd);
				return -EINVAL;
			}
			if (xparse_u32("job ID", argv[0], 1, 0xffffffffU, &id))
				return -EINVAL;
			one = true;
		} else {
			return xunexpected(cmd, argv[0]);
		}
	}
	return stats_show(x, one, id);
}
