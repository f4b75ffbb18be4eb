// SPDX-License-Identifier: GPL-2.0
/*
 * xinactl: the module backend.  Jobs, their slot memory and their counters
 * live in xina.ko and are reached over its generic netlink family "xina"
 * (include/uapi/linux/xina.h).  The switch-wide counters (packets that name
 * no job) are counted by the XDP program in its maps, as with the maps
 * backend, and read from there.
 *
 * Raw netlink sockets, no libmnl: one request at a time, the kernel's
 * extack message is what the user sees when it rejects one.
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
#include <unistd.h>
#include <sys/socket.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

#include "xinactl.h"
#include "bpf/xina_kf.skel.h"

#define XNL_BUFSZ	(64 * 1024)

struct xnl {
	int	fd;
	__u16	family;
	__u32	seq;
	void	*maps_priv;	/* the maps backend, for gstats_get; or NULL */
	char	errmsg[256];	/* extack of the last request */
	char	req[XNL_BUFSZ] __attribute__((aligned(NLMSG_ALIGNTO)));
	char	rx[XNL_BUFSZ] __attribute__((aligned(NLMSG_ALIGNTO)));
};

typedef int (*xnl_reply_cb)(const struct nlmsghdr *nlh, void *arg);

/* ---- message building ---------------------------------------------------- */

static struct nlmsghdr *xnl_msg(struct xnl *n, __u16 type, __u16 flags,
				__u8 cmd)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)n->req;
	struct genlmsghdr *g = NLMSG_DATA(nlh);

	memset(nlh, 0, NLMSG_LENGTH(GENL_HDRLEN));
	nlh->nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	nlh->nlmsg_seq = ++n->seq;
	g->cmd = cmd;
	g->version = type == GENL_ID_CTRL ? 1 : XINA_GENL_VERSION;
	return nlh;
}

static struct nlattr *xnl_put(struct nlmsghdr *nlh, __u16 type,
			      const void *data, __u16 len)
{
	struct nlattr *a = (struct nlattr *)((char *)nlh +
					     NLMSG_ALIGN(nlh->nlmsg_len));

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	if (len)
		memcpy((char *)a + NLA_HDRLEN, data, len);
	nlh->nlmsg_len = NLMSG_ALIGN(nlh->nlmsg_len) + NLA_ALIGN(a->nla_len);
	return a;
}

static void xnl_put_u16(struct nlmsghdr *nlh, __u16 type, __u16 v)
{
	xnl_put(nlh, type, &v, sizeof(v));
}

static void xnl_put_u32(struct nlmsghdr *nlh, __u16 type, __u32 v)
{
	xnl_put(nlh, type, &v, sizeof(v));
}

static void xnl_nest_end(struct nlmsghdr *nlh, struct nlattr *nest)
{
	nest->nla_len = (char *)nlh + nlh->nlmsg_len - (char *)nest;
}

/* ---- attribute parsing --------------------------------------------------- */

#define xnl_for_each_attr(a, start, len)				\
	for (a = (const struct nlattr *)(start);			\
	     (const char *)a + NLA_HDRLEN <= (const char *)(start) + (len) && \
	     a->nla_len >= NLA_HDRLEN &&				\
	     (const char *)a + a->nla_len <= (const char *)(start) + (len); \
	     a = (const struct nlattr *)((const char *)a + NLA_ALIGN(a->nla_len)))

static const void *xnl_data(const struct nlattr *a)
{
	return (const char *)a + NLA_HDRLEN;
}

static int xnl_len(const struct nlattr *a)
{
	return a->nla_len - NLA_HDRLEN;
}

/* Integers of the kernel's replies: the size is checked, not assumed. */
static __u64 xnl_uint(const struct nlattr *a)
{
	switch (xnl_len(a)) {
	case 1: return *(const __u8 *)xnl_data(a);
	case 2: return *(const __u16 *)xnl_data(a);
	case 4: return *(const __u32 *)xnl_data(a);
	case 8: return *(const __u64 *)xnl_data(a);
	}
	return 0;
}

/* ---- one request ---------------------------------------------------------- */

static void xnl_extack(struct xnl *n, const struct nlmsghdr *h)
{
	const struct nlmsgerr *e = NLMSG_DATA(h);
	size_t off = sizeof(*e);
	const struct nlattr *a;

	if (!(h->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	if (!(h->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - sizeof(struct nlmsghdr);
	xnl_for_each_attr(a, (const char *)e + off,
			  h->nlmsg_len - NLMSG_HDRLEN - off)
		if (a->nla_type == NLMSGERR_ATTR_MSG)
			snprintf(n->errmsg, sizeof(n->errmsg), "%.*s",
				 xnl_len(a), (const char *)xnl_data(a));
}

/*
 * Send the request built in n->req; hand every reply to @cb; return the
 * kernel's error (negative errno) or the first error of @cb.
 */
static int xnl_do(struct xnl *n, xnl_reply_cb cb, void *arg)
{
	const struct nlmsghdr *req = (const struct nlmsghdr *)n->req;
	int cb_err = 0;
	ssize_t len;

	n->errmsg[0] = '\0';
	if (send(n->fd, req, req->nlmsg_len, 0) < 0)
		return -errno;
	for (;;) {
		const struct nlmsghdr *h;

		len = recv(n->fd, n->rx, sizeof(n->rx), 0);
		if (len < 0)
			return -errno;
		for (h = (const struct nlmsghdr *)n->rx; NLMSG_OK(h, len);
		     h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_seq != req->nlmsg_seq)
				continue;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				if (e->error)
					xnl_extack(n, h);
				return e->error ? e->error : cb_err;
			}
			if (h->nlmsg_type == NLMSG_DONE)
				return cb_err;
			if (cb && !cb_err)
				cb_err = cb(h, arg);
		}
	}
}

/* What the kernel said, or what errno means. */
static const char *xnl_why(const struct xnl *n, int err)
{
	static char buf[300];

	if (!n->errmsg[0])
		return strerror(-err);
	/* "xina: job exists" -> "job exists" */
	if (!strncmp(n->errmsg, "xina: ", 6))
		snprintf(buf, sizeof(buf), "%s", n->errmsg + 6);
	else
		snprintf(buf, sizeof(buf), "%s (%s)", n->errmsg,
			 strerror(-err));
	return buf;
}

static int xnl_family_cb(const struct nlmsghdr *h, void *arg)
{
	const struct nlattr *a;

	xnl_for_each_attr(a, (const char *)NLMSG_DATA(h) + GENL_HDRLEN,
			  h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN))
		if (a->nla_type == CTRL_ATTR_FAMILY_ID)
			*(__u16 *)arg = xnl_uint(a);
	return 0;
}

/* ---- backend operations --------------------------------------------------- */

static int xnl_open(struct xinactl *x, unsigned int flags)
{
	struct nlmsghdr *nlh;
	int one = 1, ret;
	struct xnl *n;

	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (n->fd < 0) {
		ret = -errno;
		xerr("cannot open a generic netlink socket: %s", strerror(-ret));
		goto err_free;
	}
	setsockopt(n->fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(n->fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));

	nlh = xnl_msg(n, GENL_ID_CTRL, 0, CTRL_CMD_GETFAMILY);
	xnl_put(nlh, CTRL_ATTR_FAMILY_NAME, XINA_GENL_NAME,
		sizeof(XINA_GENL_NAME));
	ret = xnl_do(n, xnl_family_cb, &n->family);
	if (!ret && !n->family)
		ret = -ENOENT;
	if (ret) {
		xerr("module xina not loaded or too old: generic netlink family '%s': %s",
		     XINA_GENL_NAME, strerror(-ret));
		goto err_close;
	}

	/* The XDP program's switch-wide counters, if a port was attached. */
	if (!xinactl_maps_backend.open(x, XB_ABSENT_OK))
		n->maps_priv = x->be_priv;
	x->be_priv = n;
	return 0;

err_close:
	close(n->fd);
err_free:
	free(n);
	return ret;
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
	close(n->fd);
	free(n);
	x->be_priv = NULL;
}

static int xnl_job_add(struct xinactl *x, const struct xinactl_job *job)
{
	struct xnl *n = x->be_priv;
	struct nlmsghdr *nlh;
	struct nlattr *nest;
	__u16 r;
	int ret;

	nlh = xnl_msg(n, n->family, 0, XINA_CMD_JOB_NEW);
	xnl_put_u32(nlh, XINA_A_JOB_ID, job->id);
	xnl_put_u16(nlh, XINA_A_JOB_WORKERS, job->workers);
	xnl_put_u32(nlh, XINA_A_JOB_SLOTS, job->slots);
	xnl_put_u16(nlh, XINA_A_JOB_ELEMS, job->elems);
	xnl_put(nlh, XINA_A_JOB_SECRET, job->secret, sizeof(job->secret));
	xnl_put_u32(nlh, XINA_A_JOB_FLAGS, job->flags);
	for (r = 0; r < job->workers && r < XINA_MAX_WORKERS; r++) {
		const struct xinactl_member *m = &job->member[r];

		if (!m->addr)
			continue;
		nest = xnl_put(nlh, XINA_A_JOB_MEMBER | NLA_F_NESTED, NULL, 0);
		xnl_put_u16(nlh, XINA_MEMBER_A_RANK, r);
		xnl_put(nlh, XINA_MEMBER_A_ADDR, &m->addr, sizeof(m->addr));
		xnl_put_u16(nlh, XINA_MEMBER_A_PORT, ntohs(m->port));
		xnl_nest_end(nlh, nest);
	}
	ret = xnl_do(n, NULL, NULL);
	if (ret)
		xerr("job %u: %s", job->id, xnl_why(n, ret));
	return ret;
}

static int xnl_job_rekey(struct xinactl *x, __u32 id, const __u8 *secret)
{
	struct xnl *n = x->be_priv;
	struct nlmsghdr *nlh;
	int ret;

	nlh = xnl_msg(n, n->family, 0, XINA_CMD_JOB_SET);
	xnl_put_u32(nlh, XINA_A_JOB_ID, id);
	xnl_put(nlh, XINA_A_JOB_SECRET, secret, XINA_SECRET_BYTES);
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
	struct nlmsghdr *nlh;
	int ret;

	nlh = xnl_msg(n, n->family, 0, XINA_CMD_JOB_DEL);
	xnl_put_u32(nlh, XINA_A_JOB_ID, id);
	ret = xnl_do(n, NULL, NULL);
	if (ret == -ENOENT)
		xerr("job %u does not exist", id);
	else if (ret)
		xerr("cannot delete job %u: %s", id, xnl_why(n, ret));
	return ret;
}

static void xnl_parse_member(const struct nlattr *nest, struct xinactl_job *job)
{
	const struct nlattr *a;
	__u32 rank = XINA_MAX_WORKERS;
	__be32 addr = 0;
	__u16 port = 0;

	xnl_for_each_attr(a, xnl_data(nest), xnl_len(nest)) {
		switch (a->nla_type) {
		case XINA_MEMBER_A_RANK:
			rank = xnl_uint(a);
			break;
		case XINA_MEMBER_A_ADDR:
			if (xnl_len(a) == sizeof(addr))
				memcpy(&addr, xnl_data(a), sizeof(addr));
			break;
		case XINA_MEMBER_A_PORT:
			port = xnl_uint(a);
			break;
		}
	}
	if (rank >= XINA_MAX_WORKERS)
		return;
	job->member[rank].addr = addr;
	job->member[rank].port = htons(port);
}

static void xnl_parse_stats(const struct nlattr *nest, struct xinactl_stats *st)
{
	const struct nlattr *a;

	xnl_for_each_attr(a, xnl_data(nest), xnl_len(nest))
		if (a->nla_type >= 1 && a->nla_type <= XINA_STAT_MAX)
			st->c[a->nla_type - 1] = xnl_uint(a);
}

static void xnl_parse_rx_cpu(const struct nlattr *nest, struct xinactl_stats *st)
{
	const struct nlattr *a;

	xnl_for_each_attr(a, xnl_data(nest), xnl_len(nest)) {
		if (a->nla_type < 1 || a->nla_type > XINACTL_MAX_CPUS)
			continue;
		st->rx_cpu[a->nla_type - 1] = xnl_uint(a);
		if (st->ncpus < a->nla_type)
			st->ncpus = a->nla_type;
	}
}

/* A JOB_GET or STATS_GET reply into @job and/or @st. */
static void xnl_parse_job(const struct nlmsghdr *h, struct xinactl_job *job,
			  struct xinactl_stats *st)
{
	const struct nlattr *a;

	if (job)
		memset(job, 0, sizeof(*job));
	if (st)
		memset(st, 0, sizeof(*st));
	xnl_for_each_attr(a, (const char *)NLMSG_DATA(h) + GENL_HDRLEN,
			  h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN)) {
		int type = a->nla_type & NLA_TYPE_MASK;

		if (type == XINA_A_JOB_STATS || type == XINA_A_JOB_RX_CPU) {
			if (st && type == XINA_A_JOB_STATS)
				xnl_parse_stats(a, st);
			else if (st)
				xnl_parse_rx_cpu(a, st);
			continue;
		}
		if (!job)
			continue;
		switch (type) {
		case XINA_A_JOB_ID:
			job->id = xnl_uint(a);
			break;
		case XINA_A_JOB_WORKERS:
			job->workers = xnl_uint(a);
			break;
		case XINA_A_JOB_SLOTS:
			job->slots = xnl_uint(a);
			break;
		case XINA_A_JOB_ELEMS:
			job->elems = xnl_uint(a);
			break;
		case XINA_A_JOB_FLAGS:
			job->flags = xnl_uint(a);
			break;
		case XINA_A_JOB_MEM_BYTES:
			job->mem_bytes = xnl_uint(a);
			break;
		case XINA_A_JOB_MEMBER:
			xnl_parse_member(a, job);
			break;
		}
	}
}

static int xnl_job_cb(const struct nlmsghdr *h, void *arg)
{
	xnl_parse_job(h, arg, NULL);
	return 0;
}

static int xnl_job_get(struct xinactl *x, __u32 id, struct xinactl_job *job)
{
	struct xnl *n = x->be_priv;
	struct nlmsghdr *nlh;
	int ret;

	nlh = xnl_msg(n, n->family, 0, XINA_CMD_JOB_GET);
	xnl_put_u32(nlh, XINA_A_JOB_ID, id);
	ret = xnl_do(n, xnl_job_cb, job);
	if (ret == -ENOENT)
		xerr("job %u does not exist", id);
	else if (ret)
		xerr("cannot read job %u: %s", id, xnl_why(n, ret));
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
	xnl_parse_job(h, &w->jobs[w->nr++], NULL);
	return 0;
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

	xnl_msg(n, n->family, NLM_F_DUMP, XINA_CMD_JOB_GET);
	ret = xnl_do(n, xnl_walk_cb, &w);
	if (ret < 0) {
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
	xnl_parse_job(h, NULL, arg);
	return 0;
}

static int xnl_stats_get(struct xinactl *x, __u32 id, struct xinactl_stats *st)
{
	struct xnl *n = x->be_priv;
	struct nlmsghdr *nlh;
	int ret;

	nlh = xnl_msg(n, n->family, 0, XINA_CMD_STATS_GET);
	xnl_put_u32(nlh, XINA_A_JOB_ID, id);
	ret = xnl_do(n, xnl_stats_cb, st);
	if (ret == -ENOENT)
		xerr("job %u does not exist", id);
	else if (ret)
		xerr("cannot read the counters of job %u: %s", id,
		     xnl_why(n, ret));
	return ret;
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
};
