/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the xina selftests add to xina's one generic netlink client
 * (user/common/xina_nl.h, the client xinactl uses): every reply of a
 * request kept, concatenated, for the test to walk, and the few requests
 * every test makes.  Requests are built with the client's xina_nl_put*(),
 * which return the offset of their attribute: what the kernel's extack
 * names in nl->c.bad_off.
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
#include <linux/genetlink.h>
#include <linux/netlink.h>

#include <linux/xina.h>

#include "xina_nl.h"

/* Replies of one request kept at most: a dump of every job and round. */
#define XNL_RX_MAX	(4 << 20)

struct xnl {
	struct xina_nl	c;	/* the client; c.errmsg, c.bad_off, ... */
	char		*rx;	/* the replies of the last request */
	size_t		rx_len;
};

static inline int xnl_keep(const struct nlmsghdr *h, void *arg)
{
	struct xnl *nl = arg;

	if (nl->rx_len + NLMSG_ALIGN(h->nlmsg_len) > XNL_RX_MAX)
		return -ENOBUFS;
	memcpy(nl->rx + nl->rx_len, h, h->nlmsg_len);
	nl->rx_len += NLMSG_ALIGN(h->nlmsg_len);
	return 0;
}

/* Send @m and keep its replies in nl->rx; 0 or a negative errno. */
static inline int xnl_do(struct xnl *nl, struct xina_nl_msg *m)
{
	nl->rx_len = 0;
	return xina_nl_do(&nl->c, m, xnl_keep, nl);
}

static inline int xnl_open(struct xnl *nl)
{
	nl->rx = malloc(XNL_RX_MAX);
	nl->rx_len = 0;
	if (!nl->rx)
		return -ENOMEM;
	return xina_nl_open(&nl->c);
}

static inline void xnl_close(struct xnl *nl)
{
	xina_nl_close(&nl->c);
	free(nl->rx);
	nl->rx = NULL;
}

/* The attributes of reply @h (a genetlink message), by type. */
static inline void xnl_attrs(const struct nlmsghdr *h, struct nlattr **tb,
			     int max)
{
	struct nlattr *a;

	memset(tb, 0, sizeof(*tb) * (max + 1));
	mnl_attr_for_each(a, h, GENL_HDRLEN)
		if (mnl_attr_get_type(a) <= max)
			tb[mnl_attr_get_type(a)] = a;
}

/* The address of member @rank in the tests' jobs: 10.0.0.(rank + 1). */
static inline uint32_t xnl_member_addr(uint16_t rank)
{
	return htonl(0x0a000001 + rank);
}

/* XINA_CMD_JOB_DEL of job @id; 0 or the negative errno of the reply. */
static inline int xnl_job_del(struct xnl *nl, uint32_t id)
{
	struct xina_nl_msg *m = malloc(sizeof(*m));
	int err;

	if (!m)
		return -ENOMEM;
	xina_nl_msg_init(m, nl->c.family, 0, XINA_CMD_JOB_DEL);
	xina_nl_put_u32(m, XINA_A_JOB_ID, id);
	err = xnl_do(nl, m);
	free(m);
	return err;
}

#endif /* XNL_H */
