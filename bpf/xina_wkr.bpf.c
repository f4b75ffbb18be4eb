// SPDX-License-Identifier: (GPL-2.0-only OR BSD-3-Clause)
/*
 * xina_wkr: the worker end of libxina's AF_XDP path.
 *
 * One libxina handle loads its own copy of this program (through the
 * skeleton embedded in libxina) on the interface its route to the switch
 * leaves through, and holds it by a bpf_link: it goes away with the handle,
 * or with the process.  The program redirects the results of that handle,
 * and nothing else, into the handle's AF_XDP socket:
 *
 *   IPv4 without options and not fragmented, UDP, from the switch address
 *   and the xina port, to the handle's address and port, received on the
 *   queue the socket is bound to.
 *
 * Every other frame (ARP, other UDP flows, TCP, a second handle's results,
 * results that RSS put on another queue) is passed to the stack untouched;
 * a handle still reads its UDP socket, so results on other queues arrive
 * there.  A redirect to a socket that is gone (map entry removed when the
 * socket closes) passes the frame too (the XDP_PASS of bpf_redirect_map()).
 *
 * xdp.frags: an MTU 9000 result comes in several buffers on veth and on
 * drivers that take jumbo frames in fragments; only its headers are read,
 * and they are in the first buffer.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define IP_MF		0x2000	/* more fragments */
#define IP_OFFSET	0x1fff	/* fragment offset, in 8-byte units */

/* Set through the skeleton before load; addresses and ports in network order. */
const volatile __u32 wkr_addr;	/* the handle's address */
const volatile __u32 wkr_sw_addr;	/* the switch's address */
const volatile __u16 wkr_port;	/* the handle's UDP port */
const volatile __u16 wkr_sw_port;	/* the switch's xina port */
const volatile __u32 wkr_queue;	/* the queue the socket is bound to */

/* Key 0: the handle's AF_XDP socket. */
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} wkr_xsks SEC(".maps");

SEC("xdp.frags")
int xina_wkr(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct ethhdr *eth = data;
	struct udphdr *udp;
	struct iphdr *ip;

	if (ctx->rx_queue_index != wkr_queue)
		return XDP_PASS;
	if ((void *)(eth + 1) > data_end ||
	    eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end || ip->ihl != 5 ||
	    ip->protocol != IPPROTO_UDP ||
	    (ip->frag_off & bpf_htons(IP_MF | IP_OFFSET)))
		return XDP_PASS;
	udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > data_end)
		return XDP_PASS;
	if (ip->daddr != wkr_addr || ip->saddr != wkr_sw_addr ||
	    udp->dest != wkr_port || udp->source != wkr_sw_port)
		return XDP_PASS;
	return bpf_redirect_map(&wkr_xsks, 0, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
