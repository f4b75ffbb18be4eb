// SPDX-License-Identifier: GPL-2.0
/*
 * xinactl: the module backend.  Jobs, their slot memory and their counters
 * live in xina.ko and are reached over its generic netlink family "xina"
 * (include/uapi/linux/xina.h).  The switch-wide counters (packets that name
 * no job) are counted by the XDP program in its maps, as with the maps
 * backend, and read from there.
 *
 * The netlink client is xina's one (user/common/xina_nl.c, on libmnl as
 * iproute2 and ethtool are; the guest's selftests use it too): requests
 * are bounds-checked as they are built (a request that does not fit is
 * never sent), replies are parsed with mnl_attr_parse() and every
 * attribute is validated against a policy (xnl_*_policy below: type and
 * exact length) before it is read.  One request at a time; the kernel's
 * extack message is what the user sees when it rejects one.
 *
 * Adding an attribute to a request is one line in the function that builds
 * it (xina_nl_put*() on the request); reading one from a reply is a line
 * in its policy and a case in its parser.
 *
 * The ports run the fast path built for this backend, xina_kf.bpf.o
 * (bpf/xina.bpf.c with -DXINA_KFUNC): its skeleton has the name and the
 * layout of the map backend's (checked when it is generated), so the
 * rest of xinactl handles it as the same struct xina.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/genetlink.h>
#include <libmnl/libmnl.h>

#include "xina_nl.h"
#include "xinactl.h"
#include "bpf/xina_kf.skel.h"

struct xnl {
	struct xina_nl		nl;
	struct xina_nl_msg	req;		/* the request being built */
	void			*maps_priv;	/* maps backend, for gstats; or NULL */
};

/* ---- attribute validation ------------------------------------------------ */

static const struct xina_nl_attr_policy xnl_job_attrs[XINA_A_MAX + 1] = {
	[XINA_A_JOB_ID]		= { MNL_TYPE_U32 },
	[XINA_A_JOB_WORKERS]	= { MNL_TYPE_U16 },
	[XINA_A_JOB_SLOTS]	= { MNL_TYPE_U32 },
	[XINA_A_JOB_ELEMS]	= { MNL_TYPE_U16 },
	[XINA_A_JOB_FLAGS]	= { MNL_TYPE_U32 },
	[XINA_A_JOB_MEMBER]	= { MNL_TYPE_NESTED },
	[XINA_A_JOB_MEM_BYTES]	= { MNL_TYPE_U64 },
	[XINA_A_JOB_STATS]	= { MNL_TYPE_NESTED },
	[XINA_A_JOB_RX_CPU]	= { MNL_TYPE_NESTED },
	[XINA_A_JOB_EPOCH]	= { MNL_TYPE_U32 },
	[XINA_A_JOB_JOINED]	= { MNL_TYPE_U16 },
	[XINA_A_JOB_ROUND]	= { MNL_TYPE_NESTED },
	[XINA_A_JOB_RUN]	= { MNL_TYPE_U32 },
};

static const struct xina_nl_attr_policy xnl_member_attrs[XINA_MEMBER_A_MAX + 1] = {
	[XINA_MEMBER_A_RANK]	= { MNL_TYPE_U16 },
	[XINA_MEMBER_A_ADDR]	= { MNL_TYPE_BINARY, sizeof(__be32) },
	[XINA_MEMBER_A_PORT]	= { MNL_TYPE_U16 },
};

static const struct xina_nl_attr_policy xnl_round_attrs[XINA_ROUND_A_MAX + 1] = {
	[XINA_ROUND_A_SLOT]	= { MNL_TYPE_U32 },
	[XINA_ROUND_A_VERSION]	= { MNL_TYPE_U8 },
	[XINA_ROUND_A_ROUND]	= { MNL_TYPE_U32 },
	[XINA_ROUND_A_IN]	= { MNL_TYPE_U16 },
	[XINA_ROUND_A_COUNT]	= { MNL_TYPE_U16 },
	[XINA_ROUND_A_DTYPE]	= { MNL_TYPE_U8 },
	[XINA_ROUND_A_OP]	= { MNL_TYPE_U8 },
	[XINA_ROUND_A_SEEN]	= { MNL_TYPE_BINARY, XINA_ROUND_SEEN_BYTES },
};

static const struct xina_nl_policy xnl_job_policy = XINA_NL_POLICY(xnl_job_attrs);
static const struct xina_nl_policy xnl_member_policy =
	XINA_NL_POLICY(xnl_member_attrs);
static const struct xina_nl_policy xnl_round_policy =
	XINA_NL_POLICY(xnl_round_attrs);

/* Start request @cmd of the family in n->req. */
static struct xina_nl_msg *xnl_msg(struct xnl *n, __u16 flags, __u8 cmd)
{
	xina_nl_msg_init(&n->req, n->nl.family, flags, cmd);
	return &n->req;
}

static int xnl_do(struct xnl *n, xina_nl_cb cb, void *arg)
{
	return xina_nl_do(&n->nl, &n->req, cb, arg);
}

static const char *xnl_why(const struct xnl *n, int err)
{
	return xina_nl_why(&n->nl, err);
}

/*
 * Whether xina.ko's family is registered: 1 yes, 0 no, negative errno if
 * netlink itself failed.  Resolving the family is how xinactl learns that
 * xina.ko is loaded.
 */
int xinactl_nl_family_exists(void)
{
	struct xina_nl *n;
	int ret;

	n = malloc(sizeof(*n));
	if (!n)
		return -ENOMEM;
	ret = xina_nl_open(n);
	if (!ret) {
		xina_nl_close(n);
		ret = 1;
	} else if (ret == -ENOENT) {
		ret = 0;
	}
	free(n);
	return ret;
}

/* ---- backend operations -------------------------------------------------- */

static int xnl_open(struct xinactl *x, unsigned int flags)
{
	struct xnl *n;
	int ret;

	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	ret = xina_nl_open(&n->nl);
	if (ret) {
		xerr("module xina not loaded or too old: generic netlink family '%s': %s",
		     XINA_GENL_NAME, strerror(-ret));
		free(n);
		return ret;
	}

	/*
	 * The XDP program's switch-wide counters, if a port was attached;
	 * maps there but not as this xinactl's (said why) fail the command,
	 * as on the map backend.
	 */
	ret = xinactl_maps_backend.open(x, XB_ABSENT_OK);
	if (ret && ret != -ENOENT) {
		xina_nl_close(&n->nl);
		free(n);
		return ret;
	}
	if (!ret)
		n->maps_priv = x->be_priv;
	x->be_priv = n;
	return 0;
}

static void xnl_close(struct xinactl *x)
{
	struct xnl *n = x->be_priv;

	if (!n)
		return;
	if (n->maps_priv) {
		x->be_priv = n->maps_priv;
		xinactl_maps_backend.close(x);
	}
	xina_nl_close(&n->nl);
	free(n);
	x->be_priv = NULL;
}

/* A figure in bytes from /sys/kernel/xina; -1 if it cannot be read. */
static long long xnl_sysfs_bytes(const char *name)
{
	unsigned long long v;
	char path[64];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/sys/kernel/xina/%s", name);
	f = fopen(path, "re");
	if (!f)
		return -1;
	ok = fscanf(f, "%llu", &v) == 1;
	fclose(f);
	return ok ? (long long)v : -1;
}

/*
 * Slots @slots above xina.ko's most, @max (its max_slots; < 0: not
 * known): said, naming them.
 */
static int xnl_slots_ok(__u32 id, __u32 slots, long long max)
{
	if (max < 0 || slots <= max)
		return 0;
	xerr("job %u: slots %u: xina.ko takes at most %lld slots a job (/sys/kernel/xina/max_slots)",
	     id, slots, max);
	return -ERANGE;
}

static int xnl_job_add(struct xinactl *x, const struct xinactl_job *job)
{
	long long used, limit;
	struct xnl *n = x->be_priv;
	struct xina_nl_msg *m;
	__u16 r;
	int ret;

	/* two levels are the XDP fast path's (Documentation/protocol.md) */
	if (job->up.job) {
		xerr("job %u: an uplink ('up') needs the map backend: xina.ko does not hand partials up",
		     job->id);
		return -EOPNOTSUPP;
	}
	/* the policy's refusal would not name the attribute */
	ret = xnl_slots_ok(job->id, job->slots, xnl_sysfs_bytes("max_slots"));
	if (ret)
		return ret;
	m = xnl_msg(n, 0, XINA_CMD_JOB_NEW);
	xina_nl_put_u32(m, XINA_A_JOB_ID, job->id);
	xina_nl_put_u16(m, XINA_A_JOB_WORKERS, job->workers);
	xina_nl_put_u32(m, XINA_A_JOB_SLOTS, job->slots);
	xina_nl_put_u16(m, XINA_A_JOB_ELEMS, job->elems);
	xina_nl_put(m, XINA_A_JOB_SECRET, sizeof(job->secret), job->secret);
	xina_nl_put_u32(m, XINA_A_JOB_FLAGS, job->flags);
	for (r = 0; r < job->workers && r < XINA_MAX_WORKERS; r++) {
		const struct xinactl_member *mb = &job->member[r];

		if (!mb->addr)
			continue;
		xina_nl_nest_start(m, XINA_A_JOB_MEMBER);
		xina_nl_put_u16(m, XINA_MEMBER_A_RANK, r);
		xina_nl_put(m, XINA_MEMBER_A_ADDR, sizeof(mb->addr), &mb->addr);
		xina_nl_put_u16(m, XINA_MEMBER_A_PORT, ntohs(mb->port));
		xina_nl_nest_end(m);
	}
	ret = xnl_do(n, NULL, NULL);
	if (!ret)
		return 0;
	/*
	 * The kernel's message has no room for figures (extack, and 6.1
	 * has no NL_SET_ERR_MSG_FMT): the box-wide ones are in sysfs.
	 */
	used = xnl_sysfs_bytes("mem_used");
	limit = xnl_sysfs_bytes("mem_limit");
	if (ret == -ENOMEM && strstr(n->nl.errmsg, "mem_limit") &&
	    used >= 0 && limit >= 0)
		xerr("job %u: %s: %lld of %lld bytes already in use "
		     "(/sys/kernel/xina/mem_used, mem_limit); give the job fewer "
		     "slots or elems, or raise the module parameter "
		     "(/sys/module/xina/parameters/mem_limit)",
		     job->id, xnl_why(n, ret), used, limit);
	else
		xerr("job %u: %s", job->id, xnl_why(n, ret));
	return ret;
}

static int xnl_job_rekey(struct xinactl *x, __u32 id, const __u8 *secret)
{
	struct xnl *n = x->be_priv;
	struct xina_nl_msg *m;
	int ret;

	m = xnl_msg(n, 0, XINA_CMD_JOB_SET);
	xina_nl_put_u32(m, XINA_A_JOB_ID, id);
	xina_nl_put(m, XINA_A_JOB_SECRET, XINA_SECRET_BYTES, secret);
	ret = xnl_do(n, NULL, NULL);
	if (ret == -ENOENT)
		xerr("job %u does not exist", id);
	else if (ret)
		xerr("job %u: %s", id, xnl_why(n, ret));
	return ret;
}

static int xnl_job_del(struct xinactl *x, __u32 id)
{
	struct xnl *n = x->be_priv;
	struct xina_nl_msg *m;
	int ret;

	m = xnl_msg(n, 0, XINA_CMD_JOB_DEL);
	xina_nl_put_u32(m, XINA_A_JOB_ID, id);
	ret = xnl_do(n, NULL, NULL);
	if (ret == -ENOENT)
		xerr("job %u does not exist", id);
	else if (ret)
		xerr("cannot delete job %u: %s", id, xnl_why(n, ret));
	return ret;
}

/* ---- replies ------------------------------------------------------------- */

/* The member nest being parsed. */
struct xnl_member {
	__u32	rank;
	__be32	addr;
	__u16	port;
};

static int xnl_member_attr(const struct nlattr *a, void *data)
{
	struct xnl_member *m = data;
	int ret = xina_nl_valid(a, &xnl_member_policy);

	if (ret <= 0)
		return ret < 0 ? MNL_CB_ERROR : MNL_CB_OK;
	switch (mnl_attr_get_type(a)) {
	case XINA_MEMBER_A_RANK:
		m->rank = mnl_attr_get_u16(a);
		break;
	case XINA_MEMBER_A_ADDR:
		memcpy(&m->addr, mnl_attr_get_payload(a), sizeof(m->addr));
		break;
	case XINA_MEMBER_A_PORT:
		m->port = mnl_attr_get_u16(a);
		break;
	}
	return MNL_CB_OK;
}

static int xnl_parse_member(const struct nlattr *nest, struct xinactl_job *job)
{
	struct xnl_member m = { .rank = XINA_MAX_WORKERS };

	if (mnl_attr_parse_nested(nest, xnl_member_attr, &m) < 0)
		return -EBADMSG;
	if (m.rank >= XINA_MAX_WORKERS)
		return -EBADMSG;
	job->member[m.rank].addr = m.addr;
	job->member[m.rank].port = htons(m.port);
	return 0;
}

/* Counters: attribute type i + 1 is counter i (enum xina_stat), u64. */
static int xnl_stat_attr(const struct nlattr *a, void *data)
{
	struct xinactl_stats *st = data;
	unsigned int t = mnl_attr_get_type(a);

	if (t < 1 || t > XINA_STAT_MAX)
		return MNL_CB_OK;	/* padding, or a newer counter */
	if (mnl_attr_validate(a, MNL_TYPE_U64) < 0)
		return MNL_CB_ERROR;
	st->c[t - 1] = mnl_attr_get_u64(a);
	return MNL_CB_OK;
}

/* Per-CPU packets: attribute type cpu + 1, u64. */
static int xnl_rx_cpu_attr(const struct nlattr *a, void *data)
{
	struct xinactl_stats *st = data;
	unsigned int t = mnl_attr_get_type(a);

	if (t < 1 || t > XINACTL_MAX_CPUS)
		return MNL_CB_OK;
	if (mnl_attr_validate(a, MNL_TYPE_U64) < 0)
		return MNL_CB_ERROR;
	st->rx_cpu[t - 1] = mnl_attr_get_u64(a);
	if (st->ncpus < t)
		st->ncpus = t;
	return MNL_CB_OK;
}

/* A JOB_GET or STATS_GET reply, into @job and/or @st. */
struct xnl_job_parse {
	struct xinactl_job	*job;
	struct xinactl_stats	*st;
};

static int xnl_job_attr(const struct nlattr *a, void *data)
{
	struct xnl_job_parse *p = data;
	struct xinactl_job *job = p->job;
	int ret = xina_nl_valid(a, &xnl_job_policy);

	if (ret <= 0)
		return ret < 0 ? MNL_CB_ERROR : MNL_CB_OK;
	switch (mnl_attr_get_type(a)) {
	case XINA_A_JOB_STATS:
		if (p->st && mnl_attr_parse_nested(a, xnl_stat_attr, p->st) < 0)
			return MNL_CB_ERROR;
		return MNL_CB_OK;
	case XINA_A_JOB_RX_CPU:
		if (p->st && mnl_attr_parse_nested(a, xnl_rx_cpu_attr, p->st) < 0)
			return MNL_CB_ERROR;
		return MNL_CB_OK;
	}
	if (!job)
		return MNL_CB_OK;
	switch (mnl_attr_get_type(a)) {
	case XINA_A_JOB_ID:
		job->id = mnl_attr_get_u32(a);
		break;
	case XINA_A_JOB_WORKERS:
		job->workers = mnl_attr_get_u16(a);
		break;
	case XINA_A_JOB_SLOTS:
		job->slots = mnl_attr_get_u32(a);
		break;
	case XINA_A_JOB_ELEMS:
		job->elems = mnl_attr_get_u16(a);
		break;
	case XINA_A_JOB_FLAGS:
		job->flags = mnl_attr_get_u32(a);
		break;
	case XINA_A_JOB_MEM_BYTES:
		job->mem_bytes = mnl_attr_get_u64(a);
		break;
	case XINA_A_JOB_EPOCH:
		job->epoch = mnl_attr_get_u32(a);
		job->has_epoch = true;
		break;
	case XINA_A_JOB_JOINED:
		job->joined = mnl_attr_get_u16(a);
		break;
	case XINA_A_JOB_RUN:
		job->run = mnl_attr_get_u32(a);
		job->has_run = true;
		break;
	case XINA_A_JOB_MEMBER:
		if (xnl_parse_member(a, job))
			return MNL_CB_ERROR;
		break;
	}
	return MNL_CB_OK;
}

static int xnl_parse_job(const struct nlmsghdr *h, struct xinactl_job *job,
			 struct xinactl_stats *st)
{
	struct xnl_job_parse p = { .job = job, .st = st };

	if (job)
		memset(job, 0, sizeof(*job));
	if (st)
		memset(st, 0, sizeof(*st));
	if (mnl_attr_parse(h, GENL_HDRLEN, xnl_job_attr, &p) < 0) {
		xerr("malformed reply from module xina (a different version?)");
		return -EBADMSG;
	}
	return 0;
}

static int xnl_job_cb(const struct nlmsghdr *h, void *arg)
{
	return xnl_parse_job(h, arg, NULL);
}

/*
 * Ask for one job with @cmd (JOB_GET or STATS_GET) and parse the reply
 * with @cb; @what names what was asked for in the error.
 */
static int xnl_get_one(struct xinactl *x, __u8 cmd, __u32 id,
		       xina_nl_cb cb, void *arg, const char *what)
{
	struct xnl *n = x->be_priv;
	struct xina_nl_msg *m;
	int ret;

	m = xnl_msg(n, 0, cmd);
	xina_nl_put_u32(m, XINA_A_JOB_ID, id);
	ret = xnl_do(n, cb, arg);
	if (ret == -ENOENT)
		xerr("job %u does not exist", id);
	else if (ret && ret != -EBADMSG)
		xerr("cannot read %s %u: %s", what, id, xnl_why(n, ret));
	return ret;
}

static int xnl_job_get(struct xinactl *x, __u32 id, struct xinactl_job *job)
{
	return xnl_get_one(x, XINA_CMD_JOB_GET, id, xnl_job_cb, job, "job");
}

/*
 * Would the @nadd jobs @add, added in this order once the @ngone jobs
 * @gone are deleted, be taken by xina.ko: each within max_slots, the jobs
 * of all namespaces within max_jobs, their slot memory within mem_limit,
 * a job charged 2 * slots * (slot_version_bytes + 4 * elems) as the module
 * charges it.  From /sys/kernel/xina and the jobs' own mem_bytes; what
 * another process changes in between is still refused when a job is
 * added.
 */
static int xnl_jobs_fit(struct xinactl *x, const __u32 *gone,
			unsigned int ngone,
			const struct xinactl_job *const *add, unsigned int nadd,
			unsigned int *bad)
{
	long long limit = xnl_sysfs_bytes("mem_limit");
	long long used = xnl_sysfs_bytes("mem_used");
	long long vbytes = xnl_sysfs_bytes("slot_version_bytes");
	long long njobs = xnl_sysfs_bytes("job_count");
	long long max_jobs = xnl_sysfs_bytes("max_jobs");
	long long max_slots = xnl_sysfs_bytes("max_slots");
	unsigned long long need;
	struct xinactl_job *job;
	unsigned int k;
	int ret = 0;

	/* a module without them: each job is still checked when added */
	if (limit < 0 || used < 0 || vbytes < 0 || njobs < 0 || max_jobs < 0)
		return 0;
	job = malloc(sizeof(*job));
	if (!job) {
		xerr("out of memory");
		return -ENOMEM;
	}
	for (k = 0; k < ngone && !ret; k++) {
		memset(job, 0, sizeof(*job));
		ret = xnl_job_get(x, gone[k], job);
		if (ret == -ENOENT) {
			ret = 0;	/* said: a plan of jobs that exist */
			continue;
		}
		used -= job->mem_bytes;
		njobs--;
	}
	for (k = 0; k < nadd && !ret; k++) {
		*bad = k;
		ret = xnl_slots_ok(add[k]->id, add[k]->slots, max_slots);
		if (ret)
			break;
		if (njobs >= max_jobs) {
			xerr("job %u: xina.ko holds at most %lld jobs, of every network namespace, and would hold %lld (/sys/kernel/xina/job_count, max_jobs)",
			     add[k]->id, max_jobs, njobs);
			ret = -ENOSPC;
			break;
		}
		need = 2ULL * add[k]->slots *
		       ((unsigned long long)vbytes + 4ULL * add[k]->elems);
		if (used > limit || need > (unsigned long long)(limit - used)) {
			xerr("job %u: %llu bytes of slot memory, with %lld of %lld in use by then (/sys/kernel/xina/mem_used, mem_limit); give the job fewer slots or elems, or raise the module parameter (/sys/module/xina/parameters/mem_limit)",
			     add[k]->id, need, used, limit);
			ret = -ENOMEM;
			break;
		}
		used += need;
		njobs++;
	}
	free(job);
	return ret;
}

/* The jobs of a dump, collected first: see xnl_job_walk(). */
struct xnl_walk {
	struct xinactl_job	*jobs;
	size_t			nr;
	size_t			cap;
};

static int xnl_walk_cb(const struct nlmsghdr *h, void *arg)
{
	struct xnl_walk *w = arg;
	struct xinactl_job *j;

	if (w->nr == w->cap) {
		j = realloc(w->jobs, (w->cap * 2 + 4) * sizeof(*j));
		if (!j)
			return -ENOMEM;
		w->jobs = j;
		w->cap = w->cap * 2 + 4;
	}
	return xnl_parse_job(h, &w->jobs[w->nr++], NULL);
}

/*
 * The kernel dumps the jobs of this netns in ascending id order.  @cb runs
 * once the dump is over: it may send requests of its own (xinactl stats
 * does), which would otherwise interleave with the rest of the dump on the
 * one socket and buffer.
 */
static int xnl_job_walk(struct xinactl *x, xinactl_job_cb cb, void *arg)
{
	struct xnl_walk w = {};
	struct xnl *n = x->be_priv;
	size_t i;
	int ret;

	xnl_msg(n, NLM_F_DUMP, XINA_CMD_JOB_GET);
	ret = xnl_do(n, xnl_walk_cb, &w);
	if (ret < 0) {
		if (ret != -EBADMSG)
			xerr("cannot list the jobs: %s", xnl_why(n, ret));
		goto out;
	}
	for (i = 0; i < w.nr && !ret; i++)
		ret = cb(x, &w.jobs[i], arg);
out:
	free(w.jobs);
	return ret;
}

static int xnl_stats_cb(const struct nlmsghdr *h, void *arg)
{
	return xnl_parse_job(h, NULL, arg);
}

static int xnl_stats_get(struct xinactl *x, __u32 id, struct xinactl_stats *st)
{
	return xnl_get_one(x, XINA_CMD_STATS_GET, id, xnl_stats_cb, st,
			   "the counters of job");
}

/* No port attached yet: nothing was counted. */
static int xnl_gstats_get(struct xinactl *x, struct xinactl_gstats *st)
{
	struct xnl *n = x->be_priv;
	int ret;

	if (!n->maps_priv) {
		memset(st, 0, sizeof(*st));
		return 0;
	}
	x->be_priv = n->maps_priv;
	ret = xinactl_maps_backend.gstats_get(x, st);
	x->be_priv = n;
	return ret;
}

/* A ROUNDS_GET dump being parsed: the rounds so far, and the round nest. */
struct xnl_rounds {
	struct xinactl_rounds	*rs;
	struct xinactl_round	*rd;	/* the nest being parsed */
	bool			has_epoch;
	bool			has_slot;
};

static int xnl_round_attr(const struct nlattr *a, void *data)
{
	struct xnl_rounds *p = data;
	struct xinactl_round *rd = p->rd;
	int ret = xina_nl_valid(a, &xnl_round_policy);

	if (ret <= 0)
		return ret < 0 ? MNL_CB_ERROR : MNL_CB_OK;
	switch (mnl_attr_get_type(a)) {
	case XINA_ROUND_A_SLOT:
		rd->slot = mnl_attr_get_u32(a);
		p->has_slot = true;
		break;
	case XINA_ROUND_A_VERSION:
		rd->version = mnl_attr_get_u8(a);
		break;
	case XINA_ROUND_A_ROUND:
		rd->round = mnl_attr_get_u32(a);
		break;
	case XINA_ROUND_A_IN:
		rd->in = mnl_attr_get_u16(a);
		break;
	case XINA_ROUND_A_COUNT:
		rd->count = mnl_attr_get_u16(a);
		break;
	case XINA_ROUND_A_DTYPE:
		rd->dtype = mnl_attr_get_u8(a);
		break;
	case XINA_ROUND_A_OP:
		rd->op = mnl_attr_get_u8(a);
		break;
	case XINA_ROUND_A_SEEN:
		memcpy(rd->seen, mnl_attr_get_payload(a), sizeof(rd->seen));
		break;
	}
	return MNL_CB_OK;
}

/* One round nest; the rounds beyond rs->max are not kept. */
static int xnl_parse_round(const struct nlattr *nest, struct xnl_rounds *p)
{
	struct xinactl_rounds *rs = p->rs;
	struct xinactl_round rd = {};

	p->rd = &rd;
	p->has_slot = false;
	if (mnl_attr_parse_nested(nest, xnl_round_attr, p) < 0 || !p->has_slot)
		return -EBADMSG;
	if (rs->nr < rs->max)
		rs->r[rs->nr++] = rd;
	return 0;
}

static int xnl_rounds_attr(const struct nlattr *a, void *data)
{
	struct xnl_rounds *p = data;
	int ret = xina_nl_valid(a, &xnl_job_policy);

	if (ret <= 0)
		return ret < 0 ? MNL_CB_ERROR : MNL_CB_OK;
	switch (mnl_attr_get_type(a)) {
	case XINA_A_JOB_EPOCH:
		p->rs->epoch = mnl_attr_get_u32(a);
		p->has_epoch = true;
		break;
	case XINA_A_JOB_ROUND:
		if (xnl_parse_round(a, p))
			return MNL_CB_ERROR;
		break;
	}
	return MNL_CB_OK;
}

static int xnl_rounds_cb(const struct nlmsghdr *h, void *arg)
{
	if (mnl_attr_parse(h, GENL_HDRLEN, xnl_rounds_attr, arg) < 0) {
		xerr("malformed reply from module xina (a different version?)");
		return -EBADMSG;
	}
	return 0;
}

/*
 * The rounds of job @id's current epoch still waiting for contributions:
 * a dump of ROUNDS_GET, every message with the job's epoch (the same in
 * all: the kernel reads it once) and the open rounds in slot order.
 */
static int xnl_rounds_get(struct xinactl *x, __u32 id,
			  struct xinactl_rounds *rs)
{
	struct xnl_rounds p = { .rs = rs };
	struct xnl *n = x->be_priv;
	struct xina_nl_msg *m;
	int ret;

	rs->nr = 0;
	rs->epoch = 0;
	m = xnl_msg(n, NLM_F_DUMP, XINA_CMD_ROUNDS_GET);
	xina_nl_put_u32(m, XINA_A_JOB_ID, id);
	ret = xnl_do(n, xnl_rounds_cb, &p);
	if (ret == -ENOENT)
		xerr("job %u does not exist", id);
	else if (ret == -EOPNOTSUPP && !n->nl.errmsg[0])
		xerr("module xina is older than this xinactl: it cannot show rounds");
	else if (ret && ret != -EBADMSG)
		xerr("cannot read the rounds of job %u: %s", id,
		     xnl_why(n, ret));
	if (!ret && !p.has_epoch) {
		xerr("malformed reply from module xina: the rounds of job %u without its epoch",
		     id);
		ret = -EBADMSG;
	}
	return ret;
}

/* Open the embedded module-backend object instead of the map backend's. */
struct xina *xinactl_nl_skel_open(const struct bpf_object_open_opts *opts)
{
	return xina__open_opts(opts);
}

const struct xinactl_backend xinactl_nl_backend = {
	.name		= "module",
	.open		= xnl_open,
	.close		= xnl_close,
	.job_add	= xnl_job_add,
	.job_del	= xnl_job_del,
	.job_rekey	= xnl_job_rekey,
	.job_get	= xnl_job_get,
	.job_walk	= xnl_job_walk,
	.stats_get	= xnl_stats_get,
	.gstats_get	= xnl_gstats_get,
	.rounds_get	= xnl_rounds_get,
	.jobs_fit	= xnl_jobs_fit,
};
