// SPDX-License-Identifier: GPL-2.0
/*
 * The XDP fast path into module slot memory: the kfunc xina_kf_contrib()
 * (interface in xina_kfunc.h).
 *
 * Per slot version the module keeps one value array and the round state
 * (struct xina_slotv), all under the version's spinlock: the contribution
 * is added while the lock is held.  That costs contention when two CPUs
 * hit the same slot version at once, but needs no per-CPU partials, no
 * fold by the completing CPU and memory independent of the CPU count.
 * The behaviour on the wire is that of the BPF map backend.
 *
 * The xina header follows Ethernet, IPv4 and UDP (42 bytes): its 32-bit
 * fields and the elements are only 2-byte aligned, hence the unaligned
 * accessors (plain loads on x86 and arm64).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bpf.h>
#include <linux/btf.h>
#include <linux/btf_ids.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <net/xdp.h>
#ifdef XINA_HAVE_LINUX_UNALIGNED	/* 6.12 moved it; see kmod/Kbuild */
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

#ifdef CONFIG_X86_64
#include <asm/fpu/api.h>
#endif

#include "xina.h"
#include "xina_kfunc.h"

static void xina_count(struct xina_job *job, enum xina_stat stat)
{
	this_cpu_inc(job->stats->c[stat]);
}

/* The packet's elements, converted, become the first value of a round. */
static void xina_val_init(u32 *val, const __be32 *el, u16 count)
{
	u16 i;

	for (i = 0; i < count; i++)
		val[i] = get_unaligned_be32(&el[i]);
}

static bool xina_simd __read_mostly;
module_param_named(simd, xina_simd, bool, 0644);
MODULE_PARM_DESC(simd, "add with SSE2/SSSE3 under kernel_fpu_begin() (x86-64; for measurements)");

/*
 * The vector loop, if asked for and the FPU is usable here (XDP runs in
 * softirq context: kernel_fpu_begin() saves the interrupted task's state).
 */
static bool xina_val_add_simd(u32 *val, const __be32 *el, u16 count)
{
#ifdef CONFIG_X86_64
	if (!READ_ONCE(xina_simd) || !irq_fpu_usable())
		return false;
	kernel_fpu_begin();
	xina_simd_add(val, el, count);
	kernel_fpu_end();
	return true;
#else
	return false;
#endif
}

/* int32 wraps (two's complement), hence the u32 arithmetic. */
static void xina_val_add(u32 *val, const __be32 *el, u16 count, u8 op)
{
	u16 i;

	if (op == XINA_OP_SUM) {
		if (xina_val_add_simd(val, el, count))
			return;
		for (i = 0; i < count; i++)
			val[i] += get_unaligned_be32(&el[i]);
		return;
	}
	for (i = 0; i < count; i++)
		val[i] = max_t(s32, val[i], get_unaligned_be32(&el[i]));
}

static void xina_val_out(__be32 *el, const u32 *val, u16 count)
{
	u16 i;

	for (i = 0; i < count; i++)
		put_unaligned_be32(val[i], &el[i]);
}

/* Start round @round in @sv with the contribution in @h. */
static void xina_round_start(struct xina_slotv *sv, u32 *val,
			     const struct xina_hdr *h, u32 round, u16 count)
{
	sv->round = round;
	sv->used = 1;
	sv->complete = 0;
	sv->claimed = 0;
	sv->op = h->op;
	sv->count = count;
	bitmap_zero(sv->seen, XINA_MAX_WORKERS);
	xina_val_init(val, (const __be32 *)(h + 1), count);
}

/*
 * The round state machine of one slot version, under sv->lock; the same
 * decisions in the same order as xina_claim() of the map backend
 * (bpf/xina.bpf.c).  Returns the verdict; *stat is the counter of the
 * outcome.
 */
static int xina_slot_contrib(struct xina_job *job, struct xina_slotv *sv,
			     u32 *val, struct xina_hdr *h, u16 rank,
			     enum xina_stat *stat)
{
	u16 count = get_unaligned_be16(&h->count);
	u32 round = get_unaligned_be32(&h->round);
	s32 ahead = round - sv->round;

	if (!sv->used || (ahead == XINA_SLOT_VERSIONS && sv->complete)) {
		xina_round_start(sv, val, h, round, count);
		goto added;
	}
	if (ahead < 0) {
		*stat = XINA_STAT_STALE;
		return XINA_KF_DROP;
	}
	/* Round r + 2 before r completed, or further ahead; or a count
	 * other than the round's.
	 */
	if (ahead > 0 || (h->op == sv->op && count != sv->count)) {
		*stat = XINA_STAT_DROP_RANGE;
		return XINA_KF_DROP;
	}
	if (h->op != sv->op) {
		*stat = XINA_STAT_DROP_OP;
		return XINA_KF_DROP;
	}
	if (test_bit(rank, sv->seen)) {
		if (!sv->complete) {
			*stat = XINA_STAT_DUP;
			return XINA_KF_DROP;
		}
		/* A late retransmission: answer it from the kept result. */
		*stat = XINA_STAT_RETRANS_ANSWERED;
		h->type = XINA_T_RESULT;
		h->exp = sv->exp;
		xina_val_out((__be32 *)(h + 1), val, count);
		return XINA_KF_ANSWER;
	}
	xina_val_add(val, (const __be32 *)(h + 1), count, h->op);

added:
	__set_bit(rank, sv->seen);
	*stat = XINA_STAT_CONTRIB;
	if (++sv->claimed < job->workers)
		return XINA_KF_ADDED;

	sv->complete = 1;
	sv->exp = h->exp;
	h->type = XINA_T_RESULT;
	xina_val_out((__be32 *)(h + 1), val, count);
	return XINA_KF_RESULT;
}

/* Checks against the job's configuration; 0 or the drop counter. */
static int xina_job_check(const struct xina_job *job, const struct xina_hdr *h,
			  __be32 saddr, __be16 sport)
{
	const struct xina_member_cfg *m;
	const struct xina_job_cfg *cfg;
	u16 rank = get_unaligned_be16(&h->rank);

	cfg = rcu_dereference(job->cfg);
	if (get_unaligned_be64(&h->key) != cfg->key)
		return XINA_STAT_DROP_KEY;
	if (rank >= job->workers)
		return XINA_STAT_DROP_MEMBER;
	m = &cfg->member[rank];
	if (!m->addr || m->addr != saddr || (m->port && m->port != sport))
		return XINA_STAT_DROP_MEMBER;
	if (get_unaligned_be32(&h->slot) >= job->slots ||
	    get_unaligned_be16(&h->count) > job->elems)
		return XINA_STAT_DROP_RANGE;
	if (h->dtype != XINA_DTYPE_INT32 ||
	    (h->op != XINA_OP_SUM && h->op != XINA_OP_MAX))
		return XINA_STAT_DROP_OP;
	return 0;
}

static int xina_job_contrib(struct xina_job *job, struct xina_hdr *h,
			    __be32 saddr, __be16 sport)
{
	enum xina_stat stat;
	struct xina_slotv *sv;
	u32 idx;
	int ret;

	xina_count(job, XINA_STAT_RX);
	ret = xina_job_check(job, h, saddr, sport);
	if (ret) {
		xina_count(job, ret);
		return XINA_KF_REJECT;
	}

	idx = get_unaligned_be32(&h->slot) * XINA_SLOT_VERSIONS +
	      (get_unaligned_be32(&h->round) & 1);
	sv = &job->slotv[idx];
	spin_lock(&sv->lock);
	ret = xina_slot_contrib(job, sv, (u32 *)xina_job_val(job, idx), h,
				get_unaligned_be16(&h->rank), &stat);
	spin_unlock(&sv->lock);
	xina_count(job, stat);
	if (ret == XINA_KF_RESULT)
		xina_count(job, XINA_STAT_COMPLETE);
	return ret;
}

__diag_push();
__diag_ignore_all("-Wmissing-prototypes",
		  "kfuncs are global functions only called from BPF programs");

/**
 * xina_kf_contrib - add a contribution into module slot memory
 * @ctx: XDP context of the packet
 * @off: offset of the struct xina_hdr from ctx->data
 * @saddr: IPv4 source address of the packet
 * @sport: UDP source port of the packet
 *
 * See xina_kfunc.h.  XDP programs run inside an RCU read-side critical
 * section; the explicit rcu_read_lock() documents that the job found here
 * stays valid until the end of the call: xina_job_destroy() unpublishes a
 * job and frees it only after a grace period (call_rcu).
 *
 * Return: enum xina_kf_verdict.
 */
noinline int xina_kf_contrib(struct xdp_md *ctx, u32 off, __be32 saddr,
			     __be16 sport)
{
	struct xdp_buff *xdp = (struct xdp_buff *)ctx;
	struct xina_job *job;
	struct xina_hdr *h;
	int ret;

	if (off > xdp->data_end - xdp->data)
		return XINA_KF_MALFORMED;
	h = xdp->data + off;
	if ((void *)(h + 1) > xdp->data_end || !h->count ||
	    (void *)(h + 1) + get_unaligned_be16(&h->count) * sizeof(__be32) >
	    xdp->data_end)
		return XINA_KF_MALFORMED;
	if (h->version != XINA_WIRE_VERSION || h->type != XINA_T_CONTRIB ||
	    (h->flags & ~XINA_F_ALL) || h->weight)
		return XINA_KF_MALFORMED;

	rcu_read_lock();
	job = xina_job_find(dev_net(xdp->rxq->dev), get_unaligned_be32(&h->job));
	if (job)
		ret = xina_job_contrib(job, h, saddr, sport);
	else
		ret = XINA_KF_NO_JOB;
	rcu_read_unlock();
	return ret;
}

__diag_pop();

BTF_SET8_START(xina_kfunc_ids)
BTF_ID_FLAGS(func, xina_kf_contrib)
BTF_SET8_END(xina_kfunc_ids)

static const struct btf_kfunc_id_set xina_kfunc_set = {
	.owner	= THIS_MODULE,
	.set	= &xina_kfunc_ids,
};

/*
 * There is no unregistration: the set goes with the module's BTF.  Without
 * module BTF the kernel only warns and the kfunc is missing; a program
 * calling it then fails to load, which is what xinactl reports.
 */
int xina_kfunc_init(void)
{
	return register_btf_kfunc_id_set(BPF_PROG_TYPE_XDP, &xina_kfunc_set);
}
