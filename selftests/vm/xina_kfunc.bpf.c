// SPDX-License-Identifier: GPL-2.0
/*
 * Test programs of the xina.ko kfunc (selftests/vm/xina_kfunc.c): hand a
 * packet of fixed layout (eth, IPv4 without options, UDP, xina) to
 * xina_kf_contrib() and return its verdict as the XDP return value, which
 * BPF_PROG_TEST_RUN reports as is; or drop it (xina_kf_sink).  Hand
 * xina_kf_train() a datagram at the offset and length the test chooses
 * (xina_kf_train_at).  And ask the module where a member is
 * (xina_kf_where), as the TC fan-out does.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>

#include <linux/xina.h>
#include "../../kmod/xina_kfunc.h"

#define XINA_OFF	(sizeof(struct ethhdr) + sizeof(struct iphdr) + \
			 sizeof(struct udphdr))

extern int xina_kf_contrib(struct xdp_md *ctx, __u32 off, __be32 saddr,
			   __be16 sport) __ksym;
extern int xina_kf_train(struct xdp_md *ctx, __u32 off, __u32 len,
			 __be32 saddr, __be16 sport) __ksym;
extern int xina_kf_member(struct __sk_buff *ctx, __u32 job, __u32 rank,
			  struct xina_kf_member *m) __ksym;

static __always_inline int xina_kf_run(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct iphdr *iph = data + sizeof(struct ethhdr);
	struct udphdr *udp = (void *)(iph + 1);

	if ((void *)(udp + 1) > end)
		return XDP_ABORTED;
	return xina_kf_contrib(ctx, XINA_OFF, iph->saddr, udp->source);
}

SEC("xdp")
int xina_kf_test(struct xdp_md *ctx)
{
	return xina_kf_run(ctx);
}

/*
 * The kfunc on frames of a device (generic XDP, softirq): every frame goes
 * to the kfunc, whatever its verdict, and is dropped.
 */
SEC("xdp")
int xina_kf_sink(struct xdp_md *ctx)
{
	xina_kf_run(ctx);
	return XDP_DROP;
}

/*
 * What xina_kf_train_at hands xina_kf_train(): the datagram's offset from
 * the frame's start and its length; with @keep, the frame's head is cut
 * first (bpf_xdp_adjust_head()) to leave @keep bytes in its first buffer,
 * and the offset counts from where the frame then starts.
 */
struct train_at {
	__u32 off;
	__u32 len;
	__u32 keep;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct train_at);
} train_at SEC(".maps");

SEC("xdp.frags")
int xina_kf_train_at(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct iphdr *iph = data + sizeof(struct ethhdr);
	struct udphdr *udp = (void *)(iph + 1);
	const struct train_at *a;
	__u64 lin, cut = 0, d, e;
	__u32 zero = 0;
	__be32 saddr;
	__be16 sport;

	a = bpf_map_lookup_elem(&train_at, &zero);
	if (!a || (void *)(udp + 1) > end)
		return XDP_ABORTED;
	saddr = iph->saddr;
	sport = udp->source;
	if (a->keep) {
		/*
		 * The pointers' difference in 64 bits (root may take it):
		 * opaque to the compiler, which would do it in 32.
		 */
		d = (__u64)(long)data;
		e = (__u64)(long)end;
		barrier_var(d);
		barrier_var(e);
		lin = e - d;
		if (lin <= a->keep)
			return XDP_ABORTED;
		cut = lin - a->keep;
		if (bpf_xdp_adjust_head(ctx, (int)cut))
			return XDP_ABORTED;
	}
	return xina_kf_train(ctx, a->off - cut, a->len, saddr, sport);
}

/* The same timer overhead as xina_kf_test, nothing else (benchmark). */
SEC("xdp")
int xina_kf_nop(struct xdp_md *ctx)
{
	return XDP_DROP;
}

/*
 * The frame is a struct where_q after an Ethernet header: the job and
 * rank asked about in, xina_kf_member()'s return value and the member's
 * location out.
 */
struct where_q {
	__u32 job;
	__u32 rank;
	__s32 ret;
	struct xina_kf_member m;
};

SEC("tc")
int xina_kf_where(struct __sk_buff *skb)
{
	struct xina_kf_member m = {};
	struct where_q q;

	if (bpf_skb_load_bytes(skb, sizeof(struct ethhdr), &q, sizeof(q)))
		return -1;
	q.ret = xina_kf_member(skb, q.job, q.rank, &m);
	q.m = m;
	if (bpf_skb_store_bytes(skb, sizeof(struct ethhdr), &q, sizeof(q), 0))
		return -1;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
