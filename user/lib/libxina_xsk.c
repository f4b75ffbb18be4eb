// SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause)
/*
 * libxina packet I/O through AF_XDP (the xsk API of libxdp).
 *
 * One UMEM per handle, in pages (chunks of XSK_CHUNK bytes, aligned mode):
 *
 *   [ slot 0 | slot 1 | ... | slot S-1 | rx 0 | rx 1 | ... | rx R-1 ]
 *
 * Each slot owns the chunks its frame needs, and the frame lives there for
 * as long as the slot's packet may be resent: the engine writes the xina
 * header and the elements in place (x->tx points into the UMEM), this file
 * writes the Ethernet, IPv4 and UDP headers in front of them, and the
 * transmit ring points at the slot's chunks.  No copy in user space; the
 * kernel copies the frame once into an skb in copy mode, a zero-copy NIC
 * reads it by DMA.  A frame larger than a chunk goes as several
 * descriptors (XDP_PKT_CONTD, AF_XDP multi-buffer).
 *
 * The rx chunks all sit in the fill ring; a result comes back in one
 * chunk, or in several (multi-buffer), which are then put together in
 * x->xsk->gather before the engine sees them.  Every chunk goes straight
 * back to the fill ring.
 *
 * Frames: Ethernet from the interface's MAC to the next hop's (from the
 * kernel's neighbour table: while the kernel does not know it, packets go
 * out through the UDP socket, which makes the kernel resolve it, and the
 * table is asked again at the next flush, and after every retransmission
 * timeout); IPv4 with DF and a header
 * checksum; UDP with checksum 0, which IPv4 allows (RFC 768: "no
 * checksum"), as xina's switch sends its results.
 *
 * In zero-copy mode the NIC may read a slot's chunks until their
 * completion arrives; the engine only rewrites a slot after its result, so
 * at worst a resend still queued then carries the next round's packet,
 * which the switch takes as the duplicate it is.  In copy mode the kernel
 * has its copy when sendto() returns.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if_arp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <linux/rtnetlink.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/xsk.h>

#include "libxina_int.h"
#include "libxina_rtnl.h"
#include "bpf/xina_wkr.skel.h"

/* Not in the uapi headers of every distribution yet (Linux 6.6). */
#ifndef XDP_USE_SG
#define XDP_USE_SG	(1 << 4)
#endif
#ifndef XDP_PKT_CONTD
#define XDP_PKT_CONTD	(1 << 0)
#endif
#ifndef SOL_XDP
#define SOL_XDP		283
#endif
#ifndef XDP_MAX_TX_SKB_BUDGET
#define XDP_MAX_TX_SKB_BUDGET	9	/* Linux 6.17 */
#endif

/*
 * XINA_IO_AUTO uses AF_XDP only where the driver binds it in zero-copy
 * mode; in copy mode (XSK_AUTO_COPY_MODE false) it uses the UDP socket.
 *
 * Copy mode is what veth has, so that is what the rack measures (host
 * 6.18, 2 CPUs shared with other sessions' VMs, load 8-10; 4 workers,
 * MTU 9000, 2048 int32 per packet, 32 slots, 64 MiB, 3 calls, the two
 * paths alternated 5 times on one rack):
 *
 *                      per-worker goodput     syscalls per packet
 *                      median (range), MB/s   sent       received
 *   UDP (GSO, GRO)     62 (40-68)             0.09       0.15 (+ poll)
 *   AF_XDP, copy mode  51 (41-67)             0.34       0.29 (poll)
 *
 * (a second set of 5 at load 8-16: 70 (36-91) against 45 (35-59)),
 * and the workers' own CPU time for the same work was 40% higher with
 * AF_XDP (xina-bench-xina: 3.07 s against 2.20 s, median of 5).  The
 * copies tell why (perf, the workers' samples in copy routines: 1642
 * against 939 for the same packets):
 *
 *   result in   UDP: the fan-out's clone goes up the stack as it is, one
 *               copy to user space (recvmmsg).
 *               AF_XDP: the worker's XDP program needs the frame in
 *               pages of its own (the clone shares its data: veth
 *               copies it), XDP_REDIRECT copies it into the UMEM, and a
 *               frame of three UMEM buffers is put together in user
 *               space: three copies.
 *   contribution out
 *               UDP: one copy into the GSO skb, one skb and one trip
 *               through UDP/IP per train of 7; the switch port's XDP
 *               copies each segment into its pages.
 *               AF_XDP: one copy into an skb per frame (copy mode has no
 *               GSO), the same copy at the switch port.
 *
 * The IP and UDP layers AF_XDP skips are cheap next to a copy of 8 KB;
 * and its batches are smaller (a result in the ring is taken at once, a
 * refill kicked at once).  With one worker (no peers to wait for) the
 * two are even: 161-226 against 162-240 MB/s.
 *
 * Zero-copy, which these machines cannot test: the NIC writes results
 * into the UMEM and reads contributions from it, so AF_XDP copies
 * nothing where the socket path copies once each way and runs the
 * stack; that is the path real deployments want, and AUTO takes it
 * (unmeasured here).
 */
#define XSK_AUTO_COPY_MODE	false

#define XSK_CHUNK	4096u		/* UMEM chunk: a page, aligned mode */
/*
 * Frames start 2 bytes into their chunk (tx) or into their headroom (rx),
 * so that the xina header after 42 bytes of Ethernet, IPv4 and UDP, and
 * the elements after it, are 4-byte aligned.
 */
#define XSK_ALIGN	2u
#define XSK_L2L4	(ETH_HLEN + sizeof(struct iphdr) + sizeof(struct udphdr))
/* Room for a frame in an rx chunk: the kernel keeps XDP_PACKET_HEADROOM. */
#define XSK_RX_ROOM	(XSK_CHUNK - XDP_PACKET_HEADROOM - XSK_ALIGN)
#define XSK_TX_RING	2048u		/* tx and completion ring entries */
#define XSK_RX_MIN	512u		/* rx chunks at least */
#define XSK_RX_MAX	8192u		/* and at most (32 MiB) */
#define XSK_UMEM_MAX	(512ull << 20)	/* beyond that, the window is too large */
#define XSK_BATCH	64u
#define XSK_SNDBUF	(8 << 20)	/* skbs of copy mode in flight */
#define XSK_QUEUE	0u

struct xina_xsk {
	struct xina_wkr		*skel;
	int			link_fd;	/* holds the program on the interface */
	int			rtnl_fd;
	struct xsk_umem		*umem;
	struct xsk_socket	*sock;
	struct xsk_ring_prod	fill;
	struct xsk_ring_prod	tx;
	struct xsk_ring_cons	comp;
	struct xsk_ring_cons	rx;
	uint8_t			*area;
	size_t			area_sz;
	uint64_t		rx_base;	/* UMEM offset of the first rx chunk */
	uint32_t		rx_chunks;
	uint32_t		tx_inflight;	/* descriptors not completed */
	int			ifindex;
	struct xina_link	link;
	struct in_addr		nexthop;
	uint8_t			nh_mac[ETH_ALEN];
	bool			nh_known;
	uint64_t		nh_timeouts;	/* x->st.timeouts when last asked */
	bool			zc;
	uint8_t			*gather;	/* a multi-buffer result, put together */
	size_t			gather_len;
	size_t			gather_cap;
	bool			gather_bad;	/* a piece did not fit: drop the frame */
};

static uint32_t xsk_pow2(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

static size_t xsk_frame_len(const struct xina *x)
{
	return XSK_L2L4 + x->pkt_sz;
}

/* Chunks one slot's frame spans. */
static uint32_t xsk_slot_chunks(const struct xina *x)
{
	return (XSK_ALIGN + xsk_frame_len(x) + XSK_CHUNK - 1) / XSK_CHUNK;
}

__attribute__((format(printf, 2, 3)))
static int xsk_why(struct xina *x, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(x->io_reason, sizeof(x->io_reason), fmt, ap);
	va_end(ap);
	return -EOPNOTSUPP;
}

/*
 * Ask the kernel for the next hop's MAC; true once it is known.  Asked
 * again after a retransmission timeout: our frames do not go through the
 * neighbour table, so it would not tell us that the switch moved.
 */
static bool xsk_neigh(struct xina *x)
{
	struct xina_xsk *xs = x->xsk;

	if (xs->nh_timeouts != x->st.timeouts) {
		xs->nh_timeouts = x->st.timeouts;
		xs->nh_known = false;
	}
	if (!xs->nh_known &&
	    !xina_rtnl_neigh(xs->rtnl_fd, xs->ifindex, xs->nexthop,
			     xs->nh_mac))
		xs->nh_known = true;
	return xs->nh_known;
}

/* Where the route to the switch leaves, and whether AF_XDP can go there. */
static int xsk_path(struct xina *x)
{
	struct xina_xsk *xs = x->xsk;
	struct xina_route rt;
	int err;

	xs->rtnl_fd = xina_rtnl_open();
	if (xs->rtnl_fd < 0)
		return xsk_why(x, "rtnetlink: %s", strerror(-xs->rtnl_fd));
	err = xina_rtnl_route(xs->rtnl_fd, x->sw.sin_addr, x->local.sin_addr,
			      &rt);
	if (err)
		return xsk_why(x, "no route to switch %s: %s",
			       x->o.switch_addr, strerror(-err));
	if (rt.type != RTN_UNICAST)
		return xsk_why(x, "switch %s is not reached through an interface (route type %u)",
			       x->o.switch_addr, rt.type);
	xs->ifindex = rt.ifindex;
	xs->nexthop = rt.nexthop;
	err = xina_rtnl_link(xs->rtnl_fd, rt.ifindex, &xs->link);
	if (err)
		return xsk_why(x, "interface %d: %s", rt.ifindex, strerror(-err));
	if (!xina_rtnl_is_ether(&xs->link))
		return xsk_why(x, "%s is no Ethernet interface (type %u)",
			       xs->link.name, xs->link.type);
	if (xs->link.xdp_prog_id)
		return xsk_why(x, "%s already runs XDP program %u (one AF_XDP handle per interface, and no other XDP program)",
			       xs->link.name, xs->link.xdp_prog_id);
	if (x->pkt_sz + sizeof(struct iphdr) + sizeof(struct udphdr) >
	    xs->link.mtu)
		return xsk_why(x, "%zu-byte packets exceed the MTU %u of %s",
			       x->pkt_sz, xs->link.mtu, xs->link.name);
	xsk_neigh(x);
	return 0;
}

/* The UMEM and the socket on queue XSK_QUEUE: zero-copy, or copy mode. */
static int xsk_socket(struct xina *x, bool sg)
{
	struct xina_xsk *xs = x->xsk;
	struct xsk_umem_config ucfg = {
		.fill_size = xs->rx_chunks,
		.comp_size = XSK_TX_RING,
		.frame_size = XSK_CHUNK,
		.frame_headroom = XSK_ALIGN,
	};
	struct xsk_socket_config scfg = {
		.rx_size = xs->rx_chunks,
		.tx_size = XSK_TX_RING,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
	};
	uint16_t base = XDP_USE_NEED_WAKEUP | (sg ? XDP_USE_SG : 0);
	unsigned int budget = XSK_TX_RING;
	int err, fd, sndbuf = XSK_SNDBUF;

	xs->area = mmap(NULL, xs->area_sz, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (xs->area == MAP_FAILED) {
		xs->area = NULL;
		return xsk_why(x, "%zu MiB of UMEM: %s", xs->area_sz >> 20,
			       strerror(errno));
	}
	err = xsk_umem__create(&xs->umem, xs->area, xs->area_sz, &xs->fill,
			       &xs->comp, &ucfg);
	if (err) {
		xs->umem = NULL;
		return xsk_why(x, "AF_XDP UMEM of %zu MiB: %s%s",
			       xs->area_sz >> 20, strerror(-err),
			       err == -EPERM ? " (needs CAP_NET_RAW)" :
			       err == -ENOMEM || err == -ENOBUFS ?
			       " (RLIMIT_MEMLOCK?)" : "");
	}

	scfg.bind_flags = base | XDP_ZEROCOPY;
	err = xsk_socket__create(&xs->sock, xs->link.name, XSK_QUEUE, xs->umem,
				 &xs->rx, &xs->tx, &scfg);
	if (!err) {
		xs->zc = true;
	} else if (err != -EBUSY && x->o.io == XINA_IO_AUTO &&
		   !XSK_AUTO_COPY_MODE) {
		return xsk_why(x, "%s offers no AF_XDP zero-copy (%s), and in copy mode UDP sockets are faster",
			       xs->link.name, strerror(-err));
	} else if (err != -EBUSY) {
		scfg.bind_flags = base | XDP_COPY;
		err = xsk_socket__create(&xs->sock, xs->link.name, XSK_QUEUE,
					 xs->umem, &xs->rx, &xs->tx, &scfg);
	}
	if (err == -EBUSY)
		return xsk_why(x, "queue %u of %s already has an AF_XDP socket",
			       XSK_QUEUE, xs->link.name);
	if (err)
		return xsk_why(x, "AF_XDP socket on %s queue %u%s: %s",
			       xs->link.name, XSK_QUEUE,
			       sg ? " with multi-buffer (XDP_USE_SG, Linux 6.6)" : "",
			       strerror(-err));
	/*
	 * Copy mode: skbs in flight are charged to the socket, and one
	 * sendto() builds 32 of them unless told otherwise (6.17 and later).
	 */
	fd = xsk_socket__fd(xs->sock);
	setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf));
	setsockopt(fd, SOL_XDP, XDP_MAX_TX_SKB_BUDGET, &budget, sizeof(budget));
	return 0;
}

/* Our XDP program, given this handle's socket, on the interface. */
static int xsk_prog(struct xina *x)
{
	struct xina_xsk *xs = x->xsk;
	__u32 key = 0;
	int fd, err;

	xs->skel = xina_wkr__open();
	if (!xs->skel)
		return xsk_why(x, "cannot open the XDP program: %s",
			       strerror(errno));
	xs->skel->rodata->wkr_addr = x->local.sin_addr.s_addr;
	xs->skel->rodata->wkr_port = x->local.sin_port;
	xs->skel->rodata->wkr_sw_addr = x->sw.sin_addr.s_addr;
	xs->skel->rodata->wkr_sw_port = x->sw.sin_port;
	xs->skel->rodata->wkr_queue = XSK_QUEUE;
	err = xina_wkr__load(xs->skel);
	if (err)
		return xsk_why(x, "cannot load the XDP program: %s%s",
			       strerror(-err),
			       err == -EPERM ? " (needs CAP_BPF and CAP_NET_ADMIN)" : "");
	fd = xsk_socket__fd(xs->sock);
	if (bpf_map_update_elem(bpf_map__fd(xs->skel->maps.wkr_xsks), &key,
				&fd, 0))
		return xsk_why(x, "XSK map: %s", strerror(errno));
	/* A link: the program leaves with the handle, or with the process. */
	xs->link_fd = bpf_link_create(bpf_program__fd(xs->skel->progs.xina_wkr),
				      xs->ifindex, BPF_XDP, NULL);
	if (xs->link_fd < 0) {
		err = xs->link_fd;
		xs->link_fd = -1;
		return xsk_why(x, "cannot attach XDP to %s: %s%s", xs->link.name,
			       strerror(-err),
			       err == -EBUSY || err == -EEXIST ?
			       " (another XDP program is there)" : "");
	}
	return 0;
}

static void xsk_fill_all(struct xina_xsk *xs)
{
	uint32_t i, idx;

	if (xsk_ring_prod__reserve(&xs->fill, xs->rx_chunks, &idx) !=
	    xs->rx_chunks)
		return;	/* cannot happen: the ring has as many entries */
	for (i = 0; i < xs->rx_chunks; i++)
		*xsk_ring_prod__fill_addr(&xs->fill, idx + i) =
			xs->rx_base + (uint64_t)i * XSK_CHUNK;
	xsk_ring_prod__submit(&xs->fill, xs->rx_chunks);
}

/*
 * A UMEM no socket was bound to: libxdp leaves its fill and completion
 * rings mapped (xsk_socket__delete() unmaps them otherwise), and the
 * mappings would keep the socket, and the pinned UMEM, alive.
 */
static void xsk_umem_unmap(struct xina_xsk *xs)
{
	struct xdp_mmap_offsets off;
	socklen_t len = sizeof(off);
	int fd = xsk_umem__fd(xs->umem);

	if (getsockopt(fd, SOL_XDP, XDP_MMAP_OFFSETS, &off, &len) ||
	    len != sizeof(off))
		return;
	munmap((char *)xs->fill.ring - off.fr.desc,
	       off.fr.desc + xs->fill.size * sizeof(__u64));
	munmap((char *)xs->comp.ring - off.cr.desc,
	       off.cr.desc + xs->comp.size * sizeof(__u64));
}

static void xina_xsk_close(struct xina *x)
{
	struct xina_xsk *xs = x->xsk;

	if (!xs)
		return;
	if (xs->link_fd >= 0)
		close(xs->link_fd);
	if (xs->sock)
		xsk_socket__delete(xs->sock);
	else if (xs->umem)
		xsk_umem_unmap(xs);
	if (xs->umem)
		xsk_umem__delete(xs->umem);
	if (xs->area)
		munmap(xs->area, xs->area_sz);
	xina_wkr__destroy(xs->skel);
	if (xs->rtnl_fd >= 0)
		close(xs->rtnl_fd);
	free(xs->gather);
	free(xs);
	x->xsk = NULL;
	x->tx = NULL;
}

static int xina_xsk_open(struct xina *x)
{
	uint32_t slot_chunks = xsk_slot_chunks(x), rx_per_pkt;
	struct xina_xsk *xs;
	uint64_t tx_sz;
	bool sg;
	int err;

	xs = calloc(1, sizeof(*xs));
	if (!xs)
		return xsk_why(x, "out of memory");
	x->xsk = xs;
	xs->link_fd = -1;
	xs->rtnl_fd = -1;
	err = xsk_path(x);
	if (err)
		goto err_close;

	tx_sz = (uint64_t)x->o.slots * slot_chunks * XSK_CHUNK;
	rx_per_pkt = (xsk_frame_len(x) + XSK_RX_ROOM - 1) / XSK_RX_ROOM;
	xs->rx_chunks = xsk_pow2(2 * x->o.slots * rx_per_pkt);
	if (xs->rx_chunks < XSK_RX_MIN)
		xs->rx_chunks = XSK_RX_MIN;
	if (xs->rx_chunks > XSK_RX_MAX)
		xs->rx_chunks = XSK_RX_MAX;
	xs->rx_base = tx_sz;
	xs->area_sz = tx_sz + (uint64_t)xs->rx_chunks * XSK_CHUNK;
	if (xs->area_sz > XSK_UMEM_MAX) {
		err = xsk_why(x, "a window of %u slots needs %llu MiB of UMEM (at most %llu)",
			      x->o.slots, (unsigned long long)(xs->area_sz >> 20),
			      XSK_UMEM_MAX >> 20);
		goto err_close;
	}
	xs->gather_cap = xsk_frame_len(x) + 1;
	xs->gather = malloc(xs->gather_cap);
	if (!xs->gather) {
		err = xsk_why(x, "out of memory");
		goto err_close;
	}
	sg = slot_chunks > 1 || rx_per_pkt > 1;
	err = xsk_socket(x, sg);
	if (err)
		goto err_close;
	err = xsk_prog(x);
	if (err)
		goto err_close;
	xsk_fill_all(xs);

	x->tx = xs->area + XSK_ALIGN + XSK_L2L4;
	x->tx_stride = (size_t)slot_chunks * XSK_CHUNK;
	x->st.xsk_zerocopy = xs->zc;
	snprintf(x->io_reason, sizeof(x->io_reason),
		 "AF_XDP on %s queue %u, %s mode%s", xs->link.name, XSK_QUEUE,
		 xs->zc ? "zero-copy" : "copy", sg ? ", multi-buffer" : "");
	xina_log(x, XINA_LOG_DEBUG, "%s", x->io_reason);
	return 0;

err_close:
	xina_xsk_close(x);
	return err;
}

/* ---- transmit ------------------------------------------------------------ */

static uint16_t xsk_ip_csum(const struct iphdr *ip)
{
	const uint16_t *p = (const uint16_t *)ip;
	uint32_t sum = 0;
	unsigned int i;

	for (i = 0; i < sizeof(*ip) / 2; i++)
		sum += p[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return ~sum;
}

/* Headers in front of slot @s's packet of @len bytes. */
static void xsk_headers(struct xina *x, uint8_t *frame, size_t len)
{
	struct xina_xsk *xs = x->xsk;
	struct ethhdr *eth = (struct ethhdr *)frame;
	struct iphdr *ip = (struct iphdr *)(eth + 1);
	struct udphdr *udp = (struct udphdr *)(ip + 1);

	memcpy(eth->h_dest, xs->nh_mac, ETH_ALEN);
	memcpy(eth->h_source, xs->link.mac, ETH_ALEN);
	eth->h_proto = htons(ETH_P_IP);
	ip->version = 4;
	ip->ihl = 5;
	ip->tos = 0;
	ip->tot_len = htons(sizeof(*ip) + sizeof(*udp) + len);
	ip->id = 0;
	ip->frag_off = htons(0x4000);	/* DF */
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->check = 0;
	ip->saddr = x->local.sin_addr.s_addr;
	ip->daddr = x->sw.sin_addr.s_addr;
	ip->check = xsk_ip_csum(ip);
	udp->source = x->local.sin_port;
	udp->dest = x->sw.sin_port;
	udp->len = htons(sizeof(*udp) + len);
	udp->check = 0;
}

static void xsk_reap(struct xina_xsk *xs)
{
	uint32_t idx, n;

	n = xsk_ring_cons__peek(&xs->comp, XSK_TX_RING, &idx);
	if (n) {
		xsk_ring_cons__release(&xs->comp, n);
		xs->tx_inflight -= n;
	}
}

/* Descriptors of slot @s's frame; false when the ring has no room. */
static bool xsk_tx_slot(struct xina *x, uint32_t s)
{
	const struct xina_hdr *h = (const struct xina_hdr *)xina_tx_pkt(x, s);
	size_t len = xina_wire_len(h);
	struct xina_xsk *xs = x->xsk;
	uint64_t addr = (uint64_t)s * x->tx_stride + XSK_ALIGN;
	uint32_t flen, ndesc, idx, i, l;
	struct xdp_desc *d;

	flen = XSK_L2L4 + len;
	ndesc = (XSK_ALIGN + flen + XSK_CHUNK - 1) / XSK_CHUNK;
	if (xs->tx_inflight + ndesc > XSK_TX_RING ||
	    xsk_ring_prod__reserve(&xs->tx, ndesc, &idx) != ndesc)
		return false;
	xsk_headers(x, xs->area + addr, len);
	for (i = 0; i < ndesc; i++) {
		/* Never across a chunk boundary (aligned mode). */
		l = XSK_CHUNK - (addr & (XSK_CHUNK - 1));
		if (l > flen)
			l = flen;
		d = xsk_ring_prod__tx_desc(&xs->tx, idx + i);
		d->addr = addr;
		d->len = l;
		d->options = i + 1 < ndesc ? XDP_PKT_CONTD : 0;
		addr += l;
		flen -= l;
	}
	xsk_ring_prod__submit(&xs->tx, ndesc);
	xs->tx_inflight += ndesc;
	x->st.xsk_tx_frames++;
	return true;
}

/*
 * Have the kernel send what the ring holds.  Copy mode sends at most a
 * budget of frames per call and says EAGAIN while frames are left; it
 * also says EAGAIN when the socket's send buffer is full, so stop once a
 * call makes no progress.
 */
static int xsk_kick(struct xina *x)
{
	struct xina_xsk *xs = x->xsk;
	uint32_t before;
	int tries, ret;

	for (tries = 0; tries < 64; tries++) {
		before = __atomic_load_n(xs->tx.consumer, __ATOMIC_ACQUIRE);
		if (before == *xs->tx.producer)
			return 0;
		if (xs->zc && !xsk_ring_prod__needs_wakeup(&xs->tx))
			return 0;
		x->st.xsk_kicks++;
		ret = sendto(xsk_socket__fd(xs->sock), NULL, 0, MSG_DONTWAIT,
			     NULL, 0);
		if (ret < 0 && errno != EAGAIN && errno != EBUSY &&
		    errno != ENOBUFS && errno != EINTR) {
			xina_fail(x, "AF_XDP transmit on %s: %s", xs->link.name,
				  strerror(errno));
			return -errno;
		}
		/* No progress: no room now, poll() says when. */
		if (__atomic_load_n(xs->tx.consumer, __ATOMIC_ACQUIRE) == before)
			return 0;
	}
	return 0;
}

static int xina_xsk_tx_flush(struct xina *x)
{
	struct xina_xsk *xs = x->xsk;
	uint32_t done = 0;
	int err;

	/* Until the kernel knows the next hop: its socket, which asks. */
	if (!xsk_neigh(x))
		return xina_io_udp.tx_flush(x);
	xsk_reap(xs);
	while (done < x->txq_len && xsk_tx_slot(x, x->txq[done]))
		done++;
	if (done) {
		xina_tx_done(x, 0, done);
		memmove(x->txq, x->txq + done,
			(x->txq_len - done) * sizeof(*x->txq));
		x->txq_len -= done;
	}
	err = xsk_kick(x);
	xsk_reap(xs);
	return err;
}

/* ---- receive ------------------------------------------------------------- */

/* One whole frame: check its headers and hand the datagram to @fn. */
static void xsk_rx_frame(struct xina *x, const uint8_t *p, size_t len,
			 xina_rx_fn fn, void *ctx)
{
	const struct ethhdr *eth = (const struct ethhdr *)p;
	const struct iphdr *ip = (const struct iphdr *)(eth + 1);
	const struct udphdr *udp = (const struct udphdr *)(ip + 1);
	size_t ulen;

	x->st.xsk_rx_frames++;
	/* The program checked addresses and ports; lengths are ours to check. */
	if (len < XSK_L2L4 || eth->h_proto != htons(ETH_P_IP) ||
	    ip->ihl != 5 || ntohs(ip->tot_len) > len - ETH_HLEN ||
	    ntohs(ip->tot_len) < sizeof(*ip) + sizeof(*udp)) {
		x->st.malformed++;
		return;
	}
	ulen = ntohs(udp->len);
	if (ulen != ntohs(ip->tot_len) - sizeof(*ip) || ulen < sizeof(*udp)) {
		x->st.malformed++;
		return;
	}
	fn(x, p + XSK_L2L4, ulen - sizeof(*udp), ctx);
}

/* Results in the rx ring, at most a few batches; the number of frames. */
static unsigned int xsk_rx_drain(struct xina *x, xina_rx_fn fn, void *ctx)
{
	struct xina_xsk *xs = x->xsk;
	const struct xdp_desc *d;
	unsigned int frames = 0, rounds;
	uint32_t n, i, idx, fidx;
	const uint8_t *p;

	for (rounds = 0; rounds < 4; rounds++) {
		n = xsk_ring_cons__peek(&xs->rx, XSK_BATCH, &idx);
		if (!n)
			break;
		for (i = 0; i < n; i++) {
			d = xsk_ring_cons__rx_desc(&xs->rx, idx + i);
			p = xs->area + d->addr;
			if (!(d->options & XDP_PKT_CONTD) && !xs->gather_len &&
			    !xs->gather_bad) {
				/* The common case: the frame in one chunk. */
				xsk_rx_frame(x, p, d->len, fn, ctx);
				frames++;
				continue;
			}
			if (xs->gather_len + d->len > xs->gather_cap)
				xs->gather_bad = true;
			else
				memcpy(xs->gather + xs->gather_len, p, d->len);
			xs->gather_len += d->len;
			if (d->options & XDP_PKT_CONTD)
				continue;
			if (xs->gather_bad) {
				x->st.xsk_rx_frames++;
				x->st.malformed++;
			} else {
				xsk_rx_frame(x, xs->gather, xs->gather_len,
					     fn, ctx);
			}
			xs->gather_len = 0;
			xs->gather_bad = false;
			frames++;
		}
		/* Every chunk back to the fill ring, which has room for all. */
		if (xsk_ring_prod__reserve(&xs->fill, n, &fidx) == n) {
			for (i = 0; i < n; i++) {
				d = xsk_ring_cons__rx_desc(&xs->rx, idx + i);
				*xsk_ring_prod__fill_addr(&xs->fill, fidx + i) =
					d->addr & ~(uint64_t)(XSK_CHUNK - 1);
			}
			xsk_ring_prod__submit(&xs->fill, n);
		}
		xsk_ring_cons__release(&xs->rx, n);
		if (n < XSK_BATCH)
			break;
	}
	return frames;
}

/*
 * Results waiting in the ring are taken without a syscall; otherwise wait
 * on the AF_XDP socket and on the UDP socket (ICMP errors, and results
 * that reached the stack: on another queue, or before the program was
 * there).
 */
static int xina_xsk_rx_poll(struct xina *x, int timeout_ms, xina_rx_fn fn,
			    void *ctx)
{
	struct xina_xsk *xs = x->xsk;
	struct pollfd pfd[3] = {
		{ .fd = xsk_socket__fd(xs->sock), .events = POLLIN },
		{ .fd = x->fd, .events = POLLIN },
		{ .fd = x->wake_fd, .events = POLLIN },	/* xina_close(), or -1 */
	};
	int ret;

	if (xsk_rx_drain(x, fn, ctx))
		return 0;
	if (x->txq_len)
		pfd[0].events |= POLLOUT;
	ret = poll(pfd, 3, timeout_ms);
	if (ret < 0)
		return errno == EINTR ? 0 : -errno;
	x->st.rx_syscalls++;
	if (pfd[0].revents & POLLIN)
		xsk_rx_drain(x, fn, ctx);
	if (pfd[0].revents & POLLERR) {
		xina_fail(x, "AF_XDP socket on %s: error (interface gone?)",
			  xs->link.name);
		return -EIO;
	}
	if (pfd[1].revents & (POLLIN | POLLERR))
		return xina_udp_drain(x, fn, ctx);
	return 0;
}

static void xina_xsk_stats(const struct xina *x, struct xina_worker_stats *st)
{
	struct xdp_statistics xst = {};
	socklen_t len = sizeof(xst);

	if (getsockopt(xsk_socket__fd(x->xsk->sock), SOL_XDP, XDP_STATISTICS,
		       &xst, &len))
		return;
	st->xsk_fill_empty = xst.rx_fill_ring_empty_descs;
	st->xsk_rx_dropped = xst.rx_dropped + xst.rx_ring_full;
}

const struct xina_io_ops xina_io_xsk = {
	.io		= XINA_IO_XSK,
	.open		= xina_xsk_open,
	.tx_flush	= xina_xsk_tx_flush,
	.rx_poll	= xina_xsk_rx_poll,
	.close		= xina_xsk_close,
	.stats		= xina_xsk_stats,
};
