// SPDX-License-Identifier: (GPL-2.0-only OR BSD-3-Clause)
/*
 * train_floor: the transport under an in-network allreduce on the veth
 * rack, without the aggregation (scripts/bench/floor/train_floor.sh).
 *
 * tf_tc, on every switch port's TC ingress: UDP to TF_UDP_PORT is a
 * contribution: a datagram, or a GSO train of them, numbered by the first
 * 32 bits of its (first) payload.  The last of the workers' of a number to
 * arrive is "the result": one clone to every port (its MAC and IP
 * destination rewritten, the switch's address its source), as a switch
 * fans out a completed slot; every other one ends here.  Anything else
 * passes.  The work on the payload (tf.read): 0 none; 1 every byte read
 * once (bpf_skb_load_bytes into per-CPU memory), as a switch reads what it
 * adds; 2 also the arithmetic of xina's fast path on what was read, scalar
 * as BPF has it (each 8-byte pair byte-swapped, hashed with NH and added
 * into per-CPU words), and the words written over the payload of what
 * completes a number, before its clones (bpf_skb_store_bytes).  Level 2
 * stands in for the cost, not the function: one block of per-CPU words
 * takes every add, and no tag is checked.
 *
 * tf_xdp_pass, optional on the same ports: an xdp.frags program that hands
 * every frame on.  It is there for what it does to veth.  Attached in
 * native mode, veth's peer loses GSO (the sender segments in software)
 * and every frame is copied into XDP's pages before the stack sees it
 * again, as with xina's XDP switch.  Attached in generic mode, the peer
 * keeps GSO: a train crosses veth whole, and the stack copies it into
 * XDP's pages once (a socket's skb is nonlinear), as a switch that ran
 * xina's fast path on whole trains in generic XDP would have it.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <linux/in.h>
#include <stddef.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "train_floor.h"

#define TF_SEQS		1024		/* trains in flight, at most */

/* Set by the loader (train_floor.c) before the object loads. */
const volatile struct tf_cfg tf;

/* Per CPU: [0] what was read, [1] the words the adds go into. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64[TF_CHUNK / 8]);
} tf_buf SEC(".maps");

/* Arrivals of number n (mod TF_SEQS) so far. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TF_SEQS);
	__type(key, __u32);
	__type(value, __u32);
} tf_seen SEC(".maps");

#define TF_IP_OFF	ETH_HLEN
#define TF_SADDR_OFF	(TF_IP_OFF + offsetof(struct iphdr, saddr))
#define TF_DADDR_OFF	(TF_IP_OFF + offsetof(struct iphdr, daddr))
#define TF_IPCSUM_OFF	(TF_IP_OFF + offsetof(struct iphdr, check))
#define TF_UDP_OFF	(TF_IP_OFF + sizeof(struct iphdr))
#define TF_UCSUM_OFF	(TF_UDP_OFF + offsetof(struct udphdr, check))
#define TF_PAY_OFF	(TF_UDP_OFF + sizeof(struct udphdr))

struct tf_work {
	__u64 *in, *acc;
	__u64 nh;
};

#define TF_PAIRS_PER_CALL	16

/* TF_PAIRS_PER_CALL pairs: swapped, hashed, added (xina's staging, NH and
 * commit, in one pass). */
static long tf_work_cb(__u32 c, void *arg)
{
	struct tf_work *w = arg;
	__u32 base = c * TF_PAIRS_PER_CALL;

	asm volatile("" : "+r"(base));	/* bounded here, not in a copy */
	if (base > TF_CHUNK / 8 - TF_PAIRS_PER_CALL)
		return 1;
#pragma unroll
	for (__u32 i = 0; i < TF_PAIRS_PER_CALL; i++) {
		__u32 j = base + i;
		__u64 q = __builtin_bswap64(w->in[j]);

		w->nh += (__u64)(__u32)((q >> 32) + tf.key[2 * j]) *
			 (__u32)(q + tf.key[2 * j + 1]);
		w->acc[j] = ((w->acc[j] >> 32) + (q >> 32)) << 32 |
			    (__u32)((__u32)w->acc[j] + (__u32)q);
	}
	return 0;
}

/* Every payload byte read once (tf.read 1), and worked on (tf.read 2). */
static __always_inline int tf_read_all(struct __sk_buff *skb, __u64 *nh)
{
	__u32 zero = 0, one = 1, off, len = skb->len;
	struct tf_work w = { 0 };

	w.in = bpf_map_lookup_elem(&tf_buf, &zero);
	w.acc = bpf_map_lookup_elem(&tf_buf, &one);
	if (!w.in || !w.acc)
		return -1;
	for (off = TF_PAY_OFF; off + TF_CHUNK <= len && off < 65536 + TF_CHUNK;
	     off += TF_CHUNK) {
		if (bpf_skb_load_bytes(skb, off, w.in, TF_CHUNK))
			return -1;
		if (tf.read > 1)
			bpf_loop(TF_CHUNK / 8 / TF_PAIRS_PER_CALL, tf_work_cb, &w, 0);
	}
	*nh = w.nh;
	w.acc[0] ^= w.nh;	/* the hash is used */
	return 0;
}

/* The result into the frame or train: the per-CPU words over its payload
 * (past each datagram's first 8 bytes: the number stays). */
static __always_inline int tf_write_result(struct __sk_buff *skb)
{
	__u32 one = 1, off, len = skb->len;
	__u64 *acc = bpf_map_lookup_elem(&tf_buf, &one);

	if (!acc)
		return -1;
	for (off = TF_PAY_OFF + 8; off + TF_CHUNK <= len &&
	     off < 65536 + TF_CHUNK; off += TF_CHUNK)
		if (bpf_skb_store_bytes(skb, off, acc, TF_CHUNK, 0))
			return -1;
	return 0;
}

SEC("tc")
int tf_tc(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + TF_IP_OFF;
	struct udphdr *udp = data + TF_UDP_OFF;
	__u32 i, seq, *seen;
	__u64 nh = 0;
	__be32 old;

	if (tf.generic) {
		/*
		 * After generic XDP, TC sees the frame from its IPv4 header
		 * on (every frame, train or datagram, on 6.18; xina_fanout
		 * meets the same), the Ethernet header still before it: give
		 * it back.
		 */
		struct ethhdr e;
		__u32 at0[5], net[5];

		if (bpf_skb_load_bytes(skb, 0, at0, sizeof(at0)) ||
		    bpf_skb_load_bytes_relative(skb, 0, net, sizeof(net),
						BPF_HDR_START_NET))
			return TC_ACT_OK;
		if (at0[0] == net[0] && at0[1] == net[1] && at0[2] == net[2] &&
		    at0[3] == net[3] && at0[4] == net[4]) {
			if (bpf_skb_load_bytes_relative(skb, 0, &e, sizeof(e),
							BPF_HDR_START_MAC) ||
			    bpf_skb_change_head(skb, ETH_HLEN, 0) ||
			    bpf_skb_store_bytes(skb, 0, &e, sizeof(e), 0))
				return TC_ACT_SHOT;
			data = (void *)(long)skb->data;
			end = (void *)(long)skb->data_end;
			eth = data;
			ip = data + TF_IP_OFF;
			udp = data + TF_UDP_OFF;
		}
	}
	if (data + TF_PAY_OFF > end)
		return TC_ACT_OK;
	if (eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5 ||
	    ip->protocol != IPPROTO_UDP || udp->dest != bpf_htons(TF_UDP_PORT))
		return TC_ACT_OK;
	if (tf.read && tf_read_all(skb, &nh))
		return TC_ACT_SHOT;
	if (bpf_skb_load_bytes(skb, TF_PAY_OFF, &seq, 4))
		return TC_ACT_SHOT;
	seq %= TF_SEQS;
	seen = bpf_map_lookup_elem(&tf_seen, &seq);
	if (!seen)
		return TC_ACT_SHOT;
	if (__sync_add_and_fetch(seen, 1) != tf.nports)
		return TC_ACT_SHOT;
	*seen = 0;
	if (tf.read > 1) {
		if (tf_write_result(skb))
			return TC_ACT_SHOT;
		/* the headers may have moved: the skb was pulled */
		data = (void *)(long)skb->data;
		end = (void *)(long)skb->data_end;
		if (data + TF_PAY_OFF > end)
			return TC_ACT_SHOT;
		ip = data + TF_IP_OFF;
	}
	/* a result comes from the switch */
	old = ip->saddr;
	bpf_l4_csum_replace(skb, TF_UCSUM_OFF, old, tf.swip,
			    BPF_F_PSEUDO_HDR | 4);
	bpf_l3_csum_replace(skb, TF_IPCSUM_OFF, old, tf.swip, 4);
	bpf_skb_store_bytes(skb, TF_SADDR_OFF, (const void *)&tf.swip, 4, 0);
	for (i = 0; i < TF_MAX_PORTS && i < tf.nports; i++) {
		__be32 to = tf.ip[i];

		if (bpf_skb_load_bytes(skb, TF_DADDR_OFF, &old, 4))
			return TC_ACT_SHOT;
		bpf_skb_store_bytes(skb, 0, (const void *)tf.mac[i], ETH_ALEN, 0);
		bpf_l4_csum_replace(skb, TF_UCSUM_OFF, old, to,
				    BPF_F_PSEUDO_HDR | 4);
		bpf_l3_csum_replace(skb, TF_IPCSUM_OFF, old, to, 4);
		bpf_skb_store_bytes(skb, TF_DADDR_OFF, &to, 4, 0);
		bpf_clone_redirect(skb, tf.ifindex[i], 0);
	}
	return TC_ACT_SHOT;
}

SEC("xdp.frags")
int tf_xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
