// SPDX-License-Identifier: GPL-2.0
/*
 * xinactl: the module backend.  Jobs, their slot memory and their counters
 * live in xina.ko and are reached over its generic netlink family "xina"
 * (include/uapi/linux/xina.h).  The switch-wide counters (packets that name
 * no job) are counted by the XDP program in its maps, as with the maps
 * backend, and read from there.
 *
 * The netlink client is libmnl, as in iproute2 and ethtool: requests are
 * built with the bounds-checked mnl_attr_put_*_check() (a request that does
 * not fit the buffer is never sent), replies are parsed with
 * mnl_attr_parse() and every attribute is validated against a policy
 * (xnl_*_policy below: type and exact length) before it is read.  One
 * request at a time; the kernel's extack message is what the user sees
 * when it rejects one.
 *
 * Adding an attribute to a request is one line in the function that builds
 * it (xnl_put*() on the request); reading one from a reply is a line in
 * its policy and a case in its parser.
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
#include <libmnl/libmnl.h>

#include "xinactl.h"
#include "bpf/xina_kf.skel.h"

/* Replies: a job of XINA_MAX_WORKERS members is about 8 KiB. */
#define XNL_BUFSZ	(64 * 1024)

struct xnl {
	struct mnl_socket	*nl;
	__u32			portid;
	__u16			family;
	__u32			seq;
	void			*maps_priv;	/* maps backend, for gstats; or NULL */
	char			errmsg[256];	/* extack of the last request */
	struct nlmsghdr		*req;		/* the request being built */
	bool			full;		/* it did not fit in req_buf */
	char			req_buf[XNL_BUFSZ] __attribute__((aligned(NLMSG_ALIGNTO)));
	char			rx[XNL_BUFSZ] __attribute__((aligned(NLMSG_ALIGNTO)));
};

typedef int (*xnl_reply_cb)(const struct nlmsghdr *nlh, void *arg);

/* ---- requests ------------------------------------------------------------ */

static void xnl_msg(struct xnl *n, __u16 type, __u16 flags, __u8 cmd)
{
	struct genlmsghdr *g;

	n->req = mnl_nlmsg_put_header(n->req_buf);
	n->req->nlmsg_type = type;
	/* a dump ends with NLMSG_DONE; everything else is acknowledged */
	n->req->nlmsg_flags = NLM_F_REQUEST | flags |
			      (flags & NLM_F_DUMP ? 0 : NLM_F_ACK);
	n->req->nlmsg_seq = ++n->seq;
	g = mnl_nlmsg_put_extra_header(n->req, sizeof(*g));
	g->cmd = cmd;
	g->version = type == GENL_ID_CTRL ? 1 : XINA_GENL_VERSION;
	n->full = false;
}

/* Each put is checked against the buffer; xnl_do() refuses a full one. */
static void xnl_put(struct xnl *n, __u16 type, size_t len, const void *data)
{
	n->full |= !mnl_attr_put_check(n->req, sizeof(n->req_buf), type, len,
				       data);
}

static void xnl_put_u16(struct xnl *n, __u16 type, __u16 v)
{
	n->full |= !mnl_attr_put_u16_check(n->req, sizeof(n->req_buf), type, v);
}

static void xnl_put_u32(struct xnl *n, __u16 type, __u32 v)
{
	n->full |= !mnl_attr_put_u32_check(n->req, sizeof(n->req_buf), type, v);
}

static void xnl_put_strz(struct xnl *n, __u16 type, const char *s)
{
	n->full |= !mnl_attr_put_strz_check(n->req, sizeof(n->req_buf), type, s);
}

/* NULL (and the request marked full) if there is no room. */
static struct nlattr *xnl_nest_start(struct xnl *n, __u16 type)
{
	struct nlattr *nest;

	nest = mnl_attr_nest_start_check(n->req, sizeof(n->req_buf), type);
	n->full |= !nest;
	return nest;
}

static void xnl_nest_end(struct xnl *n, struct nlattr *nest)
{
	if (nest)
		mnl_attr_nest_end(n->req, nest);
}

/* ---- attribute validation ------------------------------------------------ */

/* What a known attribute of a reply must be; MNL_TYPE_UNSPEC: not read. */
struct xnl_attr_policy {
	enum mnl_attr_data_type	type;
	size_t			len;	/* exact payload length, 0: the type's */
};

struct xnl_policy {
	const struct xnl_attr_policy	*attr;
	unsigned int			max;
};

#define XNL_POLICY(a)	{ .attr = (a), .max = sizeof(a) / sizeof((a)[0]) - 1 }

static const struct xnl_attr_policy xnl_ctrl_attrs[CTRL_ATTR_FAMILY_NAME + 1] = {
	[CTRL_ATTR_FAMILY_ID]	= { MNL_TYPE_U16 },
};

static const struct xnl_attr_policy xnl_job_attrs[XINA_A_MAX + 1] = {
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

static const struct xnl_attr_policy xnl_member_attrs[XINA_MEMBER_A_MAX + 1] = {
	[XINA_MEMBER_A_RANK]	= { MNL_TYPE_U16 },
	[XINA_MEMBER_A_ADDR]	= { MNL_TYPE_BINARY, sizeof(__be32) },
	[XINA_MEMBER_A_PORT]	= { MNL_TYPE_U16 },
};

static const struct xnl_attr_policy xnl_round_attrs[XINA_ROUND_A_MAX + 1] = {
	[XINA_ROUND_A_SLOT]	= { MNL_TYPE_U32 },
	[XINA_ROUND_A_VERSION]	= { MNL_TYPE_U8 },
	[XINA_ROUND_A_ROUND]	= { MNL_TYPE_U32 },
	[XINA_ROUND_A_IN]	= { MNL_TYPE_U16 },
	[XINA_ROUND_A_COUNT]	= { MNL_TYPE_U16 },
	[XINA_ROUND_A_DTYPE]	= { MNL_TYPE_U8 },
	[XINA_ROUND_A_OP]	= { MNL_TYPE_U8 },
	[XINA_ROUND_A_SEEN]	= { MNL_TYPE_BINARY, XINA_ROUND_SEEN_BYTES },
};

static const struct xnl_policy xnl_ctrl_policy = XNL_POLICY(xnl_ctrl_attrs);
static const struct xnl_policy xnl_job_policy = XNL_POLICY(xnl_job_attrs);
static const struct xnl_policy xnl_member_policy = XNL_POLICY(xnl_member_attrs);
static const struct xnl_policy xnl_round_policy = XNL_POLICY(xnl_round_attrs);

/*
 * 1: @a is known to @pol and valid; 0: unknown (a newer module may add
 * attributes; they are skipped); negative errno: known but malformed,
 * which fails the whole reply.
 */
static int xnl_valid(const struct nlattr *a, const struct xnl_policy *pol)
{
	unsigned int t = mnl_attr_get_type(a);
	const struct xnl_attr_policy *p;

	if (t > pol->max || pol->attr[t].type == MNL_TYPE_UNSPEC)
		return 0;
	p = &pol->attr[t];
	if (p->len ? mnl_attr_validate2(a, p->type, p->len) :
		     mnl_attr_validate(a, p->type))
		return -errno;
	return 1;
}

/* ---- one request --------------------------------------------------------- */

struct xnl_run {
	struct xnl	*n;
	xnl_reply_cb	cb;
	void		*arg;
	int		cb_err;		/* first error of cb */
	int		err;		/* the kernel's answer */
};

static int xnl_extack_attr(const struct nlattr *a, void *data)
{
	struct xnl *n = data;

	if (mnl_attr_get_type(a) == NLMSGERR_ATTR_MSG &&
	    !mnl_attr_validate(a, MNL_TYPE_NUL_STRING))
		snprintf(n->errmsg, sizeof(n->errmsg), "%s",
			 mnl_attr_get_str(a));
	return MNL_CB_OK;
}

/* NLMSG_ERROR: the kernel's answer, and its extack message if any. */
static int xnl_error_cb(const struct nlmsghdr *h, void *data)
{
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(h);
	struct xnl_run *r = data;
	size_t off = sizeof(*e);

	if (h->nlmsg_len < mnl_nlmsg_size(sizeof(*e))) {
		r->err = -EBADMSG;
		return MNL_CB_ERROR;
	}
	r->err = e->error;
	if (!e->error)
		return MNL_CB_STOP;
	if (h->nlmsg_flags & NLM_F_ACK_TLVS) {
		if (!(h->nlmsg_flags & NLM_F_CAPPED))
			off += e->msg.nlmsg_len - sizeof(struct nlmsghdr);
		if (off < mnl_nlmsg_get_payload_len(h))
			mnl_attr_parse_payload((const char *)e + off,
					       mnl_nlmsg_get_payload_len(h) - off,
					       xnl_extack_attr, r->n);
	}
	return MNL_CB_ERROR;
}

/*
 * NLMSG_DONE ends a dump; a dump the kernel could not finish carries its
 * error (and an extack after it) in the payload.
 */
static int xnl_done_cb(const struct nlmsghdr *h, void *data)
{
	size_t len = mnl_nlmsg_get_payload_len(h);
	const int *err = mnl_nlmsg_get_payload(h);
	struct xnl_run *r = data;

	if (len < sizeof(*err) || *err >= 0)
		return MNL_CB_STOP;
	r->err = *err;
	if ((h->nlmsg_flags & NLM_F_ACK_TLVS) && len > sizeof(*err))
		mnl_attr_parse_payload(err + 1, len - sizeof(*err),
				       xnl_extack_attr, r->n);
	return MNL_CB_ERROR;
}

/* NLMSG_OVERRUN: replies were lost. */
static int xnl_overrun_cb(const struct nlmsghdr *h, void *data)
{
	struct xnl_run *r = data;

	r->err = -ENOBUFS;
	return MNL_CB_ERROR;
}

static int xnl_data_cb(const struct nlmsghdr *h, void *data)
{
	struct xnl_run *r = data;

	if (r->cb && !r->cb_err)
		r->cb_err = r->cb(h, r->arg);
	return MNL_CB_OK;
}

/* Control messages; the others (NLMSG_NOOP) are skipped. */
static mnl_cb_t xnl_ctl_cb[NLMSG_MIN_TYPE] = {
	[NLMSG_ERROR]	= xnl_error_cb,
	[NLMSG_DONE]	= xnl_done_cb,
	[NLMSG_OVERRUN]	= xnl_overrun_cb,
};

/*
 * Send the request built in n->req; hand every reply to @cb; return the
 * kernel's error (negative errno) or the first error of @cb.
 */
static int xnl_do(struct xnl *n, xnl_reply_cb cb, void *arg)
{
	struct xnl_run r = { .n = n, .cb = cb, .arg = arg };
	ssize_t len;
	int ret;

	n->errmsg[0] = '\0';
	if (n->full) {
		snprintf(n->errmsg, sizeof(n->errmsg),
			 "request larger than %zu bytes", sizeof(n->req_buf));
		return -EMSGSIZE;
	}
	if (mnl_socket_sendto(n->nl, n->req, n->req->nlmsg_len) < 0)
		return -errno;
	do {
		len = mnl_socket_recvfrom(n->nl, n->rx, sizeof(n->rx));
		if (len < 0)
			return -errno;
		ret = mnl_cb_run2(n->rx, len, n->req->nlmsg_seq, n->portid,
				  xnl_data_cb, &r, xnl_ctl_cb,
				  sizeof(xnl_ctl_cb) / sizeof(xnl_ctl_cb[0]));
	} while (ret > MNL_CB_STOP);
	if (r.err)
		return r.err;
	if (ret < 0)
		return errno ? -errno : -EPROTO;
	return r.cb_err;
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

/* ---- socket and family --------------------------------------------------- */

static int xnl_family_attr(const struct nlattr *a, void *data)
{
	int ret = xnl_valid(a, &xnl_ctrl_policy);

	if (ret < 0)
		return MNL_CB_ERROR;
	if (ret && mnl_attr_get_type(a) == CTRL_ATTR_FAMILY_ID)
		*(__u16 *)data = mnl_attr_get_u16(a);
	return MNL_CB_OK;
}

static int xnl_family_cb(const struct nlmsghdr *h, void *arg)
{
	if (mnl_attr_parse(h, GENL_HDRLEN, xnl_family_attr, arg) < 0)
		return -EBADMSG;
	return 0;
}

/* A socket, and the id of family "xina": -ENOENT if it is not registered. */
static int xnl_connect(struct xnl *n)
{
	int one = 1, ret;

	n->nl = mnl_socket_open2(NETLINK_GENERIC, SOCK_CLOEXEC);
	if (!n->nl)
		return -errno;
	if (mnl_socket_bind(n->nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		ret = -errno;
		goto err;
	}
	n->portid = mnl_socket_get_portid(n->nl);
	mnl_socket_setsockopt(n->nl, NETLINK_EXT_ACK, &one, sizeof(one));
	mnl_socket_setsockopt(n->nl, NETLINK_CAP_ACK, &one, sizeof(one));

	xnl_msg(n, GENL_ID_CTRL, 0, CTRL_CMD_GETFAMILY);
	xnl_put_strz(n, CTRL_ATTR_FAMILY_NAME, XINA_GENL_NAME);
	ret = xnl_do(n, xnl_family_cb, &n->family);
	if (!ret && !n->family)
		ret = -ENOENT;
	if (ret)
		goto err;
	return 0;
err:
	mnl_socket_close(n->nl);
	n->nl = NULL;
	return ret;
}

/*
 * Whether xina.ko's family is registered: 1 yes, 0 no, negative errno if
 * netlink itself failed.  Resolving the family is how xinactl learns that
 * xina.ko is loaded.
 */
int xinactl_nl_family_exists(void)
{
	struct xnl *n;
	int ret;

	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	ret = xnl_connect(n);
	if (!ret) {
		mnl_socket_close(n->nl);
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
	ret = xnl_connect(n);
	if (ret) {
		xerr("module xina not loaded or too old: generic netlink family '%s': %s",
		     XINA_GENL_NAME, strerror(-ret));
		free(n);
		return ret;
	}

	/* The XDP program's switch-wide counters, if a port was attached. */
	if (!xinactl_maps_backend.open(x, XB_ABSENT_OK))
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
	mnl_socket_close(n->nl);
	free(n);
	x->be_priv = NULL;
}

static int xnl_job_add(struct xinactl *x, const struct xinactl_job *job)
{
	struct xnl *n = x->be_priv;
	struct nlattr *nest;
	__u16 r;
	int ret;

	/* two levels are the XDP fast path's (Documentation/protocol.md) */
	if (job->up.job) {
		xerr("job %u: an uplink ('up') needs the map backend: xina.ko does not hand partials up",
		     job->id);
		return -EOPNOTSUPP;
	}
	xnl_msg(n, n->family, 0, XINA_CMD_JOB_NEW);
	xnl_put_u32(n, XINA_A_JOB_ID, job->id);
	xnl_put_u16(n, XINA_A_JOB_WORKERS, job->workers);
	xnl_put_u32(n, XINA_A_JOB_SLOTS, job->slots);
	xnl_put_u16(n, XINA_A_JOB_ELEMS, job->elems);
	xnl_put(n, XINA_A_JOB_SECRET, sizeof(job->secret), job->secret);
	xnl_put_u32(n, XINA_A_JOB_FLAGS, job->flags);
	for (r = 0; r < job->workers && r < XINA_MAX_WORKERS; r++) {
		const struct xinactl_member *m = &job->member[r];

		if (!m->addr)
			continue;
		nest = xnl_nest_start(n, XINA_A_JOB_MEMBER);
		xnl_put_u16(n, XINA_MEMBER_A_RANK, r);
		xnl_put(n, XINA_MEMBER_A_ADDR, sizeof(m->addr), &m->addr);
		xnl_put_u16(n, XINA_MEMBER_A_PORT, ntohs(m->port));
		xnl_nest_end(n, nest);
	}
	ret = xnl_do(n, NULL, NULL);
	if (ret)
		xerr("job %u: %s", job->id, xnl_why(n, ret));
	return ret;
}

static int xnl_job_rekey(struct xinactl *x, __u32 id, const __u8 *secret)
{
	struct xnl *n = x->be_priv;
	int ret;

	xnl_msg(n, n->family, 0, XINA_CMD_JOB_SET);
	xnl_put_u32(n, XINA_A_JOB_ID, id);
	xnl_put(n, XINA_A_JOB_SECRET, XINA_SECRET_BYTES, secret);
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
	int ret;

	xnl_msg(n, n->family, 0, XINA_CMD_JOB_DEL);
	xnl_put_u32(n, XINA_A_JOB_ID, id);
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
	int ret = xnl_valid(a, &xnl_member_policy);

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
	int ret = xnl_valid(a, &xnl_job_policy);

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
		       xnl_reply_cb cb, void *arg, const char *what)
{
	struct xnl *n = x->be_priv;
	int ret;

	xnl_msg(n, n->family, 0, cmd);
	xnl_put_u32(n, XINA_A_JOB_ID, id);
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

	xnl_msg(n, n->family, NLM_F_DUMP, XINA_CMD_JOB_GET);
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
	int ret = xnl_valid(a, &xnl_round_policy);

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
	int ret = xnl_valid(a, &xnl_job_policy);

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
	int ret;

	rs->nr = 0;
	rs->epoch = 0;
	xnl_msg(n, n->family, NLM_F_DUMP, XINA_CMD_ROUNDS_GET);
	xnl_put_u32(n, XINA_A_JOB_ID, id);
	ret = xnl_do(n, xnl_rounds_cb, &p);
	if (ret == -ENOENT)
		xerr("job %u does not exist", id);
	else if (ret == -EOPNOTSUPP && !n->errmsg[0])
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
};
