// SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause)
/*
 * libxina: what the AF_XDP path asks the kernel over rtnetlink before it
 * can build frames itself: the route to the switch (interface and next
 * hop), the interface (MAC, MTU, type, an XDP program already there) and
 * the next hop's MAC in the neighbour table.  Nothing is resolved here:
 * an unknown neighbour is left to the kernel, which resolves it when the
 * UDP socket sends (see libxina_xsk.c).
 *
 * Raw netlink, one request and one reply at a time, as in xinactl_nl.c.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <net/if_arp.h>
#include <sys/socket.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "libxina_rtnl.h"

#define RTNL_BUFSZ	16384

struct rtnl_req {
	struct nlmsghdr	nlh;
	union {
		struct rtmsg	rt;
		struct ifinfomsg ifi;
		struct ndmsg	nd;
	};
	char		attrs[64];
};

int xina_rtnl_open(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	int fd, one = 1;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -errno;
	}
	return fd;
}

static void rtnl_put(struct rtnl_req *r, unsigned short type, const void *data,
		     unsigned short len)
{
	struct rtattr *a = (struct rtattr *)((char *)r +
					     NLMSG_ALIGN(r->nlh.nlmsg_len));

	a->rta_type = type;
	a->rta_len = RTA_LENGTH(len);
	memcpy(RTA_DATA(a), data, len);
	r->nlh.nlmsg_len = NLMSG_ALIGN(r->nlh.nlmsg_len) + RTA_ALIGN(a->rta_len);
}

/*
 * Send @r, receive the one answer into @buf: its length, or a negative
 * errno (the kernel's, for an NLMSG_ERROR).
 */
static int rtnl_talk(int fd, struct rtnl_req *r, void *buf, size_t len)
{
	static const struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	struct nlmsghdr *nlh = buf;
	ssize_t n;

	r->nlh.nlmsg_flags = NLM_F_REQUEST;
	r->nlh.nlmsg_seq = 1;
	if (sendto(fd, r, r->nlh.nlmsg_len, 0, (const struct sockaddr *)&kernel,
		   sizeof(kernel)) < 0)
		return -errno;
	do {
		n = recv(fd, buf, len, 0);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (!NLMSG_OK(nlh, (size_t)n))
		return -EBADMSG;
	if (nlh->nlmsg_type == NLMSG_ERROR) {
		const struct nlmsgerr *e = NLMSG_DATA(nlh);

		return e->error ? e->error : -ENOENT;
	}
	return n;
}

int xina_rtnl_route(int fd, struct in_addr dst, struct in_addr src,
		    struct xina_route *rt)
{
	struct rtnl_req r = {
		.nlh.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtmsg)),
		.nlh.nlmsg_type = RTM_GETROUTE,
		.rt.rtm_family = AF_INET,
		.rt.rtm_dst_len = 32,
	};
	char buf[RTNL_BUFSZ] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
	struct rtattr *a;
	struct rtmsg *rtm;
	int len;

	rtnl_put(&r, RTA_DST, &dst, sizeof(dst));
	if (src.s_addr) {
		r.rt.rtm_src_len = 32;
		rtnl_put(&r, RTA_SRC, &src, sizeof(src));
	}
	len = rtnl_talk(fd, &r, buf, sizeof(buf));
	if (len < 0)
		return len;
	if (nlh->nlmsg_type != RTM_NEWROUTE)
		return -EBADMSG;
	rtm = NLMSG_DATA(nlh);
	memset(rt, 0, sizeof(*rt));
	rt->type = rtm->rtm_type;
	rt->nexthop = dst;
	len = RTM_PAYLOAD(nlh);
	for (a = RTM_RTA(rtm); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type == RTA_OIF && RTA_PAYLOAD(a) == 4)
			memcpy(&rt->ifindex, RTA_DATA(a), 4);
		else if (a->rta_type == RTA_GATEWAY && RTA_PAYLOAD(a) == 4)
			memcpy(&rt->nexthop, RTA_DATA(a), 4);
	}
	return rt->ifindex ? 0 : -ENODEV;
}

static void rtnl_link_xdp(struct rtattr *nest, struct xina_link *l)
{
	int len = RTA_PAYLOAD(nest);
	struct rtattr *a;

	for (a = RTA_DATA(nest); RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type == IFLA_XDP_PROG_ID && RTA_PAYLOAD(a) == 4)
			memcpy(&l->xdp_prog_id, RTA_DATA(a), 4);
}

int xina_rtnl_link(int fd, int ifindex, struct xina_link *l)
{
	struct rtnl_req r = {
		.nlh.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg)),
		.nlh.nlmsg_type = RTM_GETLINK,
		.ifi.ifi_family = AF_UNSPEC,
		.ifi.ifi_index = ifindex,
	};
	char buf[RTNL_BUFSZ] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
	__u32 mask = RTEXT_FILTER_SKIP_STATS;
	struct ifinfomsg *ifi;
	struct rtattr *a;
	int len;

	rtnl_put(&r, IFLA_EXT_MASK, &mask, sizeof(mask));
	len = rtnl_talk(fd, &r, buf, sizeof(buf));
	if (len < 0)
		return len;
	if (nlh->nlmsg_type != RTM_NEWLINK)
		return -EBADMSG;
	ifi = NLMSG_DATA(nlh);
	memset(l, 0, sizeof(*l));
	l->type = ifi->ifi_type;
	l->flags = ifi->ifi_flags;
	len = IFLA_PAYLOAD(nlh);
	for (a = IFLA_RTA(ifi); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		switch (a->rta_type) {
		case IFLA_IFNAME:
			strncpy(l->name, RTA_DATA(a), sizeof(l->name) - 1);
			break;
		case IFLA_ADDRESS:
			if (RTA_PAYLOAD(a) == sizeof(l->mac))
				memcpy(l->mac, RTA_DATA(a), sizeof(l->mac));
			break;
		case IFLA_MTU:
			if (RTA_PAYLOAD(a) == 4)
				memcpy(&l->mtu, RTA_DATA(a), 4);
			break;
		case IFLA_XDP:
			rtnl_link_xdp(a, l);
			break;
		}
	}
	return 0;
}

int xina_rtnl_neigh(int fd, int ifindex, struct in_addr addr,
		    uint8_t mac[ETH_ALEN])
{
	struct rtnl_req r = {
		.nlh.nlmsg_len = NLMSG_LENGTH(sizeof(struct ndmsg)),
		.nlh.nlmsg_type = RTM_GETNEIGH,
		.nd.ndm_family = AF_INET,
		.nd.ndm_ifindex = ifindex,
	};
	char buf[RTNL_BUFSZ] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
	bool have = false;
	struct ndmsg *nd;
	struct rtattr *a;
	int len;

	rtnl_put(&r, NDA_DST, &addr, sizeof(addr));
	len = rtnl_talk(fd, &r, buf, sizeof(buf));
	if (len < 0)
		return len;
	if (nlh->nlmsg_type != RTM_NEWNEIGH)
		return -EBADMSG;
	nd = NLMSG_DATA(nlh);
	/* NUD_VALID: an address the kernel itself would send to. */
	if (!(nd->ndm_state & (NUD_PERMANENT | NUD_NOARP | NUD_REACHABLE |
			       NUD_PROBE | NUD_STALE | NUD_DELAY)))
		return -ENOENT;
	len = NLMSG_PAYLOAD(nlh, sizeof(*nd));
	for (a = (struct rtattr *)((char *)nd + NLMSG_ALIGN(sizeof(*nd)));
	     RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type == NDA_LLADDR && RTA_PAYLOAD(a) == ETH_ALEN) {
			memcpy(mac, RTA_DATA(a), ETH_ALEN);
			have = true;
		}
	}
	return have ? 0 : -ENOENT;
}

bool xina_rtnl_is_ether(const struct xina_link *l)
{
	return l->type == ARPHRD_ETHER;
}
