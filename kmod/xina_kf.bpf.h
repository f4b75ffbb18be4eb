/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-3-Clause) */
/*
 * The module backend of the XDP fast path.  bpf/xina.bpf.c built with
 * -DXINA_KFUNC includes this file and hands every well-formed xina packet
 * to xina_kf_xdp() instead of its own job checks and aggregation: xina.ko
 * checks the packet against the job it was configured with over netlink,
 * learns where the member is, adds the contribution into module slot
 * memory and counts it (kmod/kfunc.c).  Parsing, the switch-wide counters,
 * the hand-over of results to the TC fan-out and the BAD_KEY bounce are
 * those of the map backend, so the wire behaviour is the same.  Built as xina_kf.bpf.o; it
 * only loads while xina.ko is loaded (the kfuncs are resolved against the
 * module's BTF).
 */
#ifndef _XINA_KF_BPF_H
#define _XINA_KF_BPF_H

#include "xina_kfunc.h"

int xina_kf_contrib(struct xdp_md *ctx, __u32 off, __be32 saddr,
		    __be16 sport) __ksym;
int xina_kf_train(struct xdp_md *ctx, __u32 off, __u32 len, __be32 saddr,
		  __be16 sport) __ksym;

/*
 * 1, but opaque to clang: the map backend's code stays in the object, so
 * both objects have the same maps in the same order and xinactl can use
 * one skeleton layout for both.  The verifier knows the constant and never
 * walks that code.
 */
static __always_inline int xina_kf_on(void)
{
	__u64 on;

	asm volatile("%[on] = 1" : [on] "=r"(on));
	return on;
}

/*
 * The switch-wide counters of the kfuncs' verdicts that name no job of the
 * module's (no_job, malformed): the module counts everything else.
 */
static __always_inline void xina_kf_gstat(int v)
{
	if (v == XINA_KF_NO_JOB)
		gstat_inc(XINA_GSTAT_NO_JOB);
	else if (v == XINA_KF_MALFORMED)
		gstat_inc(XINA_GSTAT_MALFORMED);
}

static __always_inline int xina_kf_xdp(struct xdp_md *ctx,
				       struct xina_pkt *pkt)
{
	__u32 job = bpf_ntohl(pkt->xh->job), rank = bpf_ntohs(pkt->xh->rank);
	int v;

	v = xina_kf_contrib(ctx, XINA_HDR_OFF, pkt->iph->saddr,
			    pkt->udp->source);
	xina_kf_gstat(v);
	if (v == XINA_KF_RESULT)
		return xina_pass_marked(ctx, job, XINA_MARK_ALL);
	if (v == XINA_KF_ANSWER)
		return xina_pass_marked(ctx, job, rank);
	/*
	 * A join's BAD_KEY reply for a member never seen: back where from,
	 * by the map backend's own code (xina_bare() also sets the IPv4 and
	 * UDP lengths of the bare header the kfunc answered).
	 */
	if (v == XINA_KF_BOUNCE)
		return xina_bare(ctx) ? xina_bounce(ctx) : XDP_DROP;
	return XDP_DROP;
}

/*
 * The datagram of @dlen bytes at offset @at of a train from @saddr:@sport
 * (bpf/xina.bpf.c, "trains"), taken by xina.ko: XDP_PASS if it is now its
 * round's result, written in place; else XDP_DROP, counted by the module
 * or here.
 */
static __always_inline int xina_kf_train_one(struct xdp_md *ctx, __u32 at,
					     __u32 dlen, __be32 saddr,
					     __be16 sport)
{
	int v = xina_kf_train(ctx, at, dlen, saddr, sport);

	if (v == XINA_KF_RESULT)
		return XDP_PASS;
	xina_kf_gstat(v);
	return XDP_DROP;
}

#endif /* _XINA_KF_BPF_H */
