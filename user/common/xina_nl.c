// SPDX-License-Identifier: GPL-2.0
/*
 * xina_nl: the generic netlink client of xinactl and of the guest's
 * selftests (see xina_nl.h).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/genetlink.h>

#include <linux/xina.h>

#include "xina_nl.h"

/* ---- requests ------------------------------------------------------------ */

void xina_nl_msg_init(struct xina_nl_msg *m, __u16 type, __u16 flags,
		      __u8 cmd)
{
	struct genlmsghdr *g;

	/* libmnl leaves the padding after an attribute as it finds it */
	memset(m->buf, 0, sizeof(m->buf));
	m->nlh = mnl_nlmsg_put_header(m->buf);
	m->nlh->nlmsg_type = type;
	m->nlh->nlmsg_flags = NLM_F_REQUEST | flags |
			      (flags & NLM_F_DUMP ? 0 : NLM_F_ACK);
	g = mnl_nlmsg_put_extra_header(m->nlh, sizeof(*g));
	g->cmd = cmd;
	g->version = type == GENL_ID_CTRL ? 1 : XINA_GENL_VERSION;
	m->full = false;
	m->depth = 0;
}

int xina_nl_put(struct xina_nl_msg *m, __u16 type, size_t len,
		const void *data)
{
	int off = (int)m->nlh->nlmsg_len;
	static const char none;

	/* libmnl copies @len bytes from @data: never from NULL */
	if (!mnl_attr_put_check(m->nlh, sizeof(m->buf), type, len,
				len ? data : &none)) {
		m->full = true;
		return -1;
	}
	return off;
}

int xina_nl_put_u16(struct xina_nl_msg *m, __u16 type, __u16 v)
{
	return xina_nl_put(m, type, sizeof(v), &v);
}

int xina_nl_put_u32(struct xina_nl_msg *m, __u16 type, __u32 v)
{
	return xina_nl_put(m, type, sizeof(v), &v);
}

int xina_nl_put_strz(struct xina_nl_msg *m, __u16 type, const char *s)
{
	return xina_nl_put(m, type, strlen(s) + 1, s);
}

int xina_nl_nest_start(struct xina_nl_msg *m, __u16 type)
{
	int off = (int)m->nlh->nlmsg_len;
	struct nlattr *nest;

	if (m->depth == XINA_NL_MAX_NEST) {
		m->full = true;
		return -1;
	}
	nest = mnl_attr_nest_start_check(m->nlh, sizeof(m->buf), type);
	if (!nest) {
		m->full = true;
		return -1;
	}
	m->nest[m->depth++] = nest;
	return off;
}

void xina_nl_nest_end(struct xina_nl_msg *m)
{
	/* a nest that did not fit left the request full: never sent */
	if (m->depth > 0)
		mnl_attr_nest_end(m->nlh, m->nest[--m->depth]);
}

/* ---- attributes of replies ----------------------------------------------- */

int xina_nl_valid(const struct nlattr *a, const struct xina_nl_policy *pol)
{
	unsigned int t = mnl_attr_get_type(a);
	const struct xina_nl_attr_policy *p;

	if (t > pol->max || pol->attr[t].type == MNL_TYPE_UNSPEC)
		return 0;
	p = &pol->attr[t];
	if (p->len ? mnl_attr_validate2(a, p->type, p->len) :
		     mnl_attr_validate(a, p->type))
		return -errno;
	return 1;
}

/* ---- one request --------------------------------------------------------- */

struct xina_nl_run {
	struct xina_nl	*nl;
	xina_nl_cb	cb;
	void		*arg;
	int		cb_err;		/* first error of cb */
	int		err;		/* the kernel's answer */
};

static int xina_nl_extack_attr(const struct nlattr *a, void *data)
{
	struct xina_nl *nl = data;

	switch (mnl_attr_get_type(a)) {
	case NLMSGERR_ATTR_MSG:
		if (!mnl_attr_validate(a, MNL_TYPE_NUL_STRING))
			snprintf(nl->errmsg, sizeof(nl->errmsg), "%s",
				 mnl_attr_get_str(a));
		break;
	case NLMSGERR_ATTR_OFFS:
		if (!mnl_attr_validate(a, MNL_TYPE_U32))
			nl->bad_off = (int)mnl_attr_get_u32(a);
		break;
	case NLMSGERR_ATTR_MISS_TYPE:
		if (!mnl_attr_validate(a, MNL_TYPE_U32))
			nl->miss_type = (int)mnl_attr_get_u32(a);
		break;
	}
	return MNL_CB_OK;
}

static void xina_nl_extack(struct xina_nl *nl, const void *start, size_t len)
{
	mnl_attr_parse_payload(start, len, xina_nl_extack_attr, nl);
}

/* NLMSG_ERROR: the kernel's answer, and its extack if any. */
static int xina_nl_error_cb(const struct nlmsghdr *h, void *data)
{
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(h);
	size_t len = mnl_nlmsg_get_payload_len(h), off = sizeof(*e);
	struct xina_nl_run *r = data;

	if (len < sizeof(*e)) {
		r->err = -EBADMSG;
		return MNL_CB_ERROR;
	}
	r->err = e->error;
	if (!(h->nlmsg_flags & NLM_F_ACK_TLVS))
		return e->error ? MNL_CB_ERROR : MNL_CB_STOP;
	/* without NETLINK_CAP_ACK a failed request is echoed before them */
	if (e->error && !(h->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - sizeof(struct nlmsghdr);
	if (off < len)
		xina_nl_extack(r->nl, (const char *)e + off, len - off);
	return e->error ? MNL_CB_ERROR : MNL_CB_STOP;
}

/*
 * NLMSG_DONE ends a dump; a dump the kernel could not finish carries its
 * error (and an extack after it) in the payload.
 */
static int xina_nl_done_cb(const struct nlmsghdr *h, void *data)
{
	size_t len = mnl_nlmsg_get_payload_len(h);
	const int *err = mnl_nlmsg_get_payload(h);
	struct xina_nl_run *r = data;

	if (len < sizeof(*err) || *err >= 0)
		return MNL_CB_STOP;
	r->err = *err;
	if ((h->nlmsg_flags & NLM_F_ACK_TLVS) && len > sizeof(*err))
		xina_nl_extack(r->nl, err + 1, len - sizeof(*err));
	return MNL_CB_ERROR;
}

/* NLMSG_OVERRUN: replies were lost. */
static int xina_nl_overrun_cb(const struct nlmsghdr *h, void *data)
{
	struct xina_nl_run *r = data;

	r->err = -ENOBUFS;
	return MNL_CB_ERROR;
}

static int xina_nl_data_cb(const struct nlmsghdr *h, void *data)
{
	struct xina_nl_run *r = data;

	if (r->cb && !r->cb_err)
		r->cb_err = r->cb(h, r->arg);
	return MNL_CB_OK;
}

/* Control messages; the others (NLMSG_NOOP) are skipped. */
static mnl_cb_t xina_nl_ctl_cb[NLMSG_MIN_TYPE] = {
	[NLMSG_ERROR]	= xina_nl_error_cb,
	[NLMSG_DONE]	= xina_nl_done_cb,
	[NLMSG_OVERRUN]	= xina_nl_overrun_cb,
};

int xina_nl_do(struct xina_nl *nl, struct xina_nl_msg *m, xina_nl_cb cb,
	       void *arg)
{
	struct xina_nl_run r = { .nl = nl, .cb = cb, .arg = arg };
	ssize_t len;
	int ret;

	nl->errmsg[0] = '\0';
	nl->bad_off = -1;
	nl->miss_type = -1;
	nl->reads = 0;
	if (m->full) {
		snprintf(nl->errmsg, sizeof(nl->errmsg),
			 "request larger than %zu bytes", sizeof(m->buf));
		return -EMSGSIZE;
	}
	if (m->depth) {
		snprintf(nl->errmsg, sizeof(nl->errmsg),
			 "request with %d nest(s) left open", m->depth);
		return -EMSGSIZE;
	}
	m->nlh->nlmsg_seq = ++nl->seq;
	if (mnl_socket_sendto(nl->sock, m->nlh, m->nlh->nlmsg_len) < 0)
		return -errno;
	do {
		len = mnl_socket_recvfrom(nl->sock, nl->rx, sizeof(nl->rx));
		if (len < 0)
			return -errno;
		nl->reads++;
		ret = mnl_cb_run2(nl->rx, len, m->nlh->nlmsg_seq, nl->portid,
				  xina_nl_data_cb, &r, xina_nl_ctl_cb,
				  sizeof(xina_nl_ctl_cb) / sizeof(xina_nl_ctl_cb[0]));
	} while (ret > MNL_CB_STOP);
	if (r.err)
		return r.err;
	if (ret < 0)
		return errno ? -errno : -EPROTO;
	return r.cb_err;
}

const char *xina_nl_why(const struct xina_nl *nl, int err)
{
	static char buf[300];

	if (!nl->errmsg[0])
		return strerror(-err);
	/* "xina: job exists" -> "job exists" */
	if (!strncmp(nl->errmsg, "xina: ", 6))
		snprintf(buf, sizeof(buf), "%s", nl->errmsg + 6);
	else
		snprintf(buf, sizeof(buf), "%s (%s)", nl->errmsg,
			 strerror(-err));
	return buf;
}

/* ---- socket and family --------------------------------------------------- */

static const struct xina_nl_attr_policy xina_nl_ctrl_attrs[CTRL_ATTR_FAMILY_NAME + 1] = {
	[CTRL_ATTR_FAMILY_ID]	= { MNL_TYPE_U16 },
};

static const struct xina_nl_policy xina_nl_ctrl_policy =
	XINA_NL_POLICY(xina_nl_ctrl_attrs);

static int xina_nl_family_attr(const struct nlattr *a, void *data)
{
	int ret = xina_nl_valid(a, &xina_nl_ctrl_policy);

	if (ret < 0)
		return MNL_CB_ERROR;
	if (ret && mnl_attr_get_type(a) == CTRL_ATTR_FAMILY_ID)
		*(__u16 *)data = mnl_attr_get_u16(a);
	return MNL_CB_OK;
}

static int xina_nl_family_cb(const struct nlmsghdr *h, void *arg)
{
	if (mnl_attr_parse(h, GENL_HDRLEN, xina_nl_family_attr, arg) < 0)
		return -EBADMSG;
	return 0;
}

int xina_nl_open(struct xina_nl *nl)
{
	struct xina_nl_msg *m;
	int one = 1, ret;

	memset(nl, 0, offsetof(struct xina_nl, rx));
	nl->sock = mnl_socket_open2(NETLINK_GENERIC, SOCK_CLOEXEC);
	if (!nl->sock)
		return -errno;
	if (mnl_socket_bind(nl->sock, 0, MNL_SOCKET_AUTOPID) < 0) {
		ret = -errno;
		goto err;
	}
	nl->portid = mnl_socket_get_portid(nl->sock);
	mnl_socket_setsockopt(nl->sock, NETLINK_EXT_ACK, &one, sizeof(one));
	mnl_socket_setsockopt(nl->sock, NETLINK_CAP_ACK, &one, sizeof(one));

	m = malloc(sizeof(*m));
	if (!m) {
		ret = -ENOMEM;
		goto err;
	}
	xina_nl_msg_init(m, GENL_ID_CTRL, 0, CTRL_CMD_GETFAMILY);
	xina_nl_put_strz(m, CTRL_ATTR_FAMILY_NAME, XINA_GENL_NAME);
	ret = xina_nl_do(nl, m, xina_nl_family_cb, &nl->family);
	free(m);
	if (!ret && !nl->family)
		ret = -ENOENT;
	if (ret)
		goto err;
	return 0;
err:
	mnl_socket_close(nl->sock);
	nl->sock = NULL;
	return ret;
}

void xina_nl_close(struct xina_nl *nl)
{
	if (nl->sock)
		mnl_socket_close(nl->sock);
	nl->sock = NULL;
}
