/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-3-Clause) */
/*
 * The module backend of the result fan-out: xina_fanout of bpf/xina.bpf.c
 * built with -DXINA_KFUNC asks xina.ko where each member is (the module
 * learned it from the member's packets in xina_kf_contrib()) instead of
 * reading the map backend's xina_members, and counts its copies in the
 * module's counters of the job.  The copies are made by the same code.
 */
#ifndef _XINA_KF_TC_BPF_H
#define _XINA_KF_TC_BPF_H

int xina_kf_member(struct __sk_buff *ctx, __u32 job, __u32 rank,
		   struct xina_kf_member *m) __ksym;
void xina_kf_tx(struct __sk_buff *ctx, __u32 job, __u32 sent,
		__u32 unknown) __ksym;

#define XINA_ENOENT	2
#define XINA_ENODATA	61
#define XINA_ERANGE	34

/* The copy for rank @rank (a bpf_loop() callback); 1 past the last rank. */
static long xina_kf_fan_one(__u32 rank, struct xina_fan *f)
{
	struct xina_kf_member km = {};
	struct xina_member m;
	int err;

	if (f->to != XINA_MARK_ALL && f->to != rank)
		return 0;
	err = xina_kf_member(f->skb, f->job, rank, &km);
	if (err == -XINA_ERANGE || err == -XINA_ENOENT)
		return 1;
	if (err) {
		if (err == -XINA_ENODATA && km.addr)
			f->unknown++;
		return 0;
	}
	m.addr = km.addr;
	m.rport = km.rport;
	m.ifindex = km.ifindex;
	m.sw_addr = km.sw_addr;
	__builtin_memcpy(m.mac, km.mac, ETH_ALEN);
	__builtin_memcpy(m.sw_mac, km.sw_mac, ETH_ALEN);
	xina_fan_send(f, &m);
	return 0;
}

static __always_inline int xina_kf_fanout(struct xina_fan *f)
{
	if (f->to != XINA_MARK_ALL)
		xina_kf_fan_one(f->to, f);
	else
		bpf_loop(XINA_MAX_WORKERS, xina_kf_fan_one, f, 0);
	xina_kf_tx(f->skb, f->job, f->sent, f->unknown);
	return TC_ACT_SHOT;
}

#endif /* _XINA_KF_TC_BPF_H */
