/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small raw generic netlink client for the xina selftests: build a
 * request, send it, collect replies and the extended ACK (message, offset
 * of the bad attribute, type of a missing one).  No libmnl: the guest
 * carries nothing it does not need.
 */
#ifndef XNL_H
#define XNL_H

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

#include <linux/xina.h>

#define XNL_BUF		(64 * 1024)
#define XNL_MAX_NEST	4

struct xnl_msg {
	union {
		struct nlmsghdr	nlh;
		char		buf[XNL_BUF];
	};
	struct nlattr	*nest[XNL_MAX_NEST];
	int		depth;
};

struct xnl {
	int		fd;
	uint16_t	family;
	uint32_t	seq;
	/* extack of the last request */
	char		msg[256];
	int		bad_off;	/* offset of the bad attribute, or -1 */
	int		miss_type;	/* missing attribute type, or -1 */
	/* replies of the last request */
	char		*rx;		/* XNL_BUF * XNL_RX_PAGES bytes */
	size_t		rx_len;
	int		rx_reads;	/* recv() calls it took */
};

#define XNL_RX_PAGES	64

static inline void *xnl_tail(struct xnl_msg *m)
{
	return m->buf + NLMSG_ALIGN(m->nlh.nlmsg_len);
}

static inline void xnl_init(struct xnl_msg *m, uint16_t type, uint16_t flags,
			    uint8_t cmd)
{
	struct genlmsghdr *g;

	memset(m, 0, sizeof(*m));
	m->nlh.nlmsg_len = NLMSG_LENGTH(GENL_HDRLEN);
	m->nlh.nlmsg_type = type;
	m->nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags;
	g = NLMSG_DATA(&m->nlh);
	g->cmd = cmd;
	g->version = XINA_GENL_VERSION;
}

/* Returns the offset of the attribute in the message (for bad_off). */
static inline int xnl_put(struct xnl_msg *m, uint16_t type, const void *data,
			  uint16_t len)
{
	struct nlattr *a = xnl_tail(m);
	int off = (char *)a - m->buf;

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	if (len)
		memcpy((char *)a + NLA_HDRLEN, data, len);
	m->nlh.nlmsg_len = NLMSG_ALIGN(m->nlh.nlmsg_len) + NLA_ALIGN(a->nla_len);
	return off;
}

static inline int xnl_put_u16(struct xnl_msg *m, uint16_t type, uint16_t v)
{
	return xnl_put(m, type, &v, sizeof(v));
}

static inline int xnl_put_u32(struct xnl_msg *m, uint16_t type, uint32_t v)
{
	return xnl_put(m, type, &v, sizeof(v));
}

static inline int xnl_put_u64(struct xnl_msg *m, uint16_t type, uint64_t v)
{
	return xnl_put(m, type, &v, sizeof(v));
}

static inline int xnl_nest_start(struct xnl_msg *m, uint16_t type)
{
	int off = xnl_put(m, type | NLA_F_NESTED, NULL, 0);

	m->nest[m->depth++] = (struct nlattr *)(m->buf + off);
	return off;
}

static inline void xnl_nest_end(struct xnl_msg *m)
{
	struct nlattr *a = m->nest[--m->depth];

	a->nla_len = (char *)xnl_tail(m) - (char *)a;
}

/* Walk the attributes in [start, start + len). */
#define xnl_for_each_attr(a, start, len)				\
	for (a = (struct nlattr *)(start);				\
	     (char *)a + NLA_HDRLEN <= (char *)(start) + (len) &&	\
	     a->nla_len >= NLA_HDRLEN &&				\
	     (char *)a + a->nla_len <= (char *)(start) + (len);		\
	     a = (struct nlattr *)((char *)a + NLA_ALIGN(a->nla_len)))

static inline void *xnl_data(const struct nlattr *a)
{
	return (char *)a + NLA_HDRLEN;
}

static inline int xnl_len(const struct nlattr *a)
{
	return a->nla_len - NLA_HDRLEN;
}

/* The extack attributes in [start, start + len). */
static inline void xnl_parse_tlvs(struct xnl *nl, const void *start,
				  size_t len)
{
	struct nlattr *a;

	xnl_for_each_attr(a, start, len) {
		switch (a->nla_type) {
		case NLMSGERR_ATTR_MSG:
			snprintf(nl->msg, sizeof(nl->msg), "%.*s",
				 xnl_len(a), (char *)xnl_data(a));
			break;
		case NLMSGERR_ATTR_OFFS:
			nl->bad_off = *(uint32_t *)xnl_data(a);
			break;
		case NLMSGERR_ATTR_MISS_TYPE:
			nl->miss_type = *(uint32_t *)xnl_data(a);
			break;
		}
	}
}

static inline void xnl_parse_extack(struct xnl *nl, const struct nlmsghdr *h,
				    const struct nlmsgerr *e)
{
	size_t off = sizeof(*e);

	if (!(h->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	/* Without NETLINK_CAP_ACK the request is echoed on errors. */
	if (!(h->nlmsg_flags & NLM_F_CAPPED) && e->error)
		off += e->msg.nlmsg_len - sizeof(struct nlmsghdr);
	xnl_parse_tlvs(nl, (char *)e + off, h->nlmsg_len - NLMSG_HDRLEN - off);
}

/* A dump that failed part-way: its error, and extack after it. */
static inline int xnl_parse_done(struct xnl *nl, const struct nlmsghdr *h)
{
	const int *err = NLMSG_DATA(h);

	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*err)))
		return -EBADMSG;
	if (h->nlmsg_flags & NLM_F_ACK_TLVS)
		xnl_parse_tlvs(nl, err + 1,
			       h->nlmsg_len - NLMSG_LENGTH(sizeof(*err)));
	return *err;
}

/*
 * Send @m and read until its ACK (or NLMSG_DONE of a dump).  Replies are
 * concatenated in nl->rx.  Returns 0 or the negative errno of the request.
 */
static inline int xnl_do(struct xnl *nl, struct xnl_msg *m)
{
	bool dump = m->nlh.nlmsg_flags & NLM_F_DUMP;
	char *buf = nl->rx + 0;
	ssize_t n;

	nl->msg[0] = 0;
	nl->bad_off = -1;
	nl->miss_type = -1;
	nl->rx_len = 0;
	nl->rx_reads = 0;
	m->nlh.nlmsg_seq = ++nl->seq;
	if (send(nl->fd, m->buf, m->nlh.nlmsg_len, 0) < 0)
		return -errno;

	for (;;) {
		struct nlmsghdr *h;
		char rb[XNL_BUF];

		n = recv(nl->fd, rb, sizeof(rb), 0);
		if (n < 0)
			return -errno;
		nl->rx_reads++;
		for (h = (struct nlmsghdr *)rb; NLMSG_OK(h, n);
		     h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_seq != nl->seq)
				continue;
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);

				xnl_parse_extack(nl, h, e);
				return e->error;
			}
			if (h->nlmsg_type == NLMSG_DONE)
				return dump ? xnl_parse_done(nl, h) : 0;
			if (nl->rx_len + h->nlmsg_len <= XNL_BUF * XNL_RX_PAGES) {
				memcpy(buf + nl->rx_len, h, h->nlmsg_len);
				nl->rx_len += NLMSG_ALIGN(h->nlmsg_len);
			}
		}
	}
}

static inline int xnl_resolve(struct xnl *nl, const char *name)
{
	struct nlmsghdr *h;
	struct xnl_msg *m;
	struct nlattr *a;
	int err;

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	xnl_init(m, GENL_ID_CTRL, 0, CTRL_CMD_GETFAMILY);
	((struct genlmsghdr *)NLMSG_DATA(&m->nlh))->version = 1;
	xnl_put(m, CTRL_ATTR_FAMILY_NAME, name, strlen(name) + 1);
	err = xnl_do(nl, m);
	free(m);
	if (err)
		return err;
	h = (struct nlmsghdr *)nl->rx;
	if (!nl->rx_len)
		return -ENOENT;
	xnl_for_each_attr(a, (char *)NLMSG_DATA(h) + GENL_HDRLEN,
			  h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN))
		if (a->nla_type == CTRL_ATTR_FAMILY_ID)
			nl->family = *(uint16_t *)xnl_data(a);
	return nl->family ? 0 : -ENOENT;
}

static inline int xnl_open(struct xnl *nl)
{
	int one = 1;

	memset(nl, 0, sizeof(*nl));
	nl->rx = malloc(XNL_BUF * XNL_RX_PAGES);
	if (!nl->rx)
		return -ENOMEM;
	nl->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
	if (nl->fd < 0)
		return -errno;
	setsockopt(nl->fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	return xnl_resolve(nl, XINA_GENL_NAME);
}

static inline void xnl_close(struct xnl *nl)
{
	if (nl->fd >= 0)
		close(nl->fd);
	free(nl->rx);
	nl->rx = NULL;
}

/* The attributes of reply @h (a genetlink message), by type. */
static inline void xnl_attrs(const struct nlmsghdr *h, struct nlattr **tb,
			     int max)
{
	struct nlattr *a;

	memset(tb, 0, sizeof(*tb) * (max + 1));
	xnl_for_each_attr(a, (char *)NLMSG_DATA(h) + GENL_HDRLEN,
			  h->nlmsg_len - NLMSG_LENGTH(GENL_HDRLEN))
		if ((a->nla_type & NLA_TYPE_MASK) <= max)
			tb[a->nla_type & NLA_TYPE_MASK] = a;
}

/* The address of member @rank in the tests' jobs: 10.0.0.(rank + 1). */
static inline uint32_t xnl_member_addr(uint16_t rank)
{
	return htonl(0x0a000001 + rank);
}

/* XINA_CMD_JOB_DEL of job @id; 0 or the negative errno of the reply. */
static inline int xnl_job_del(struct xnl *nl, uint32_t id)
{
	struct xnl_msg *m = malloc(sizeof(*m));
	int err;

	if (!m)
		return -ENOMEM;
	xnl_init(m, nl->family, 0, XINA_CMD_JOB_DEL);
	xnl_put_u32(m, XINA_A_JOB_ID, id);
	err = xnl_do(nl, m);
	free(m);
	return err;
}

#endif /* XNL_H */
