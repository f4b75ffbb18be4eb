/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause) */
/* libxina internals: rtnetlink look-ups of the AF_XDP path (libxina_rtnl.c). */
#ifndef LIBXINA_RTNL_H
#define LIBXINA_RTNL_H

#include <stdbool.h>
#include <stdint.h>
#include <net/if.h>
#include <netinet/in.h>
#include <linux/if_ether.h>

struct xina_route {
	int		ifindex;	/* the interface it leaves through */
	struct in_addr	nexthop;	/* the gateway, or the destination */
	unsigned char	type;		/* RTN_UNICAST, RTN_LOCAL, ... */
};

struct xina_link {
	char		name[IF_NAMESIZE];
	uint8_t		mac[ETH_ALEN];
	unsigned int	mtu;
	unsigned short	type;		/* ARPHRD_* */
	unsigned int	flags;		/* IFF_* */
	uint32_t	xdp_prog_id;	/* 0: no XDP program attached */
};

/* A NETLINK_ROUTE socket for the calls below, or a negative errno. */
int xina_rtnl_open(void);
/* The kernel's route from @src (0: any) to @dst. */
int xina_rtnl_route(int fd, struct in_addr dst, struct in_addr src,
		    struct xina_route *rt);
int xina_rtnl_link(int fd, int ifindex, struct xina_link *l);
/* The MAC of @addr on @ifindex; -ENOENT while the kernel does not know it. */
int xina_rtnl_neigh(int fd, int ifindex, struct in_addr addr,
		    uint8_t mac[ETH_ALEN]);
bool xina_rtnl_is_ether(const struct xina_link *l);

#endif /* LIBXINA_RTNL_H */
