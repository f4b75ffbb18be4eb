// SPDX-License-Identifier: GPL-2.0
/*
 * The fast path into module slot memory: the kfunc xina_kf_contrib() for
 * XDP, and xina_kf_member() and xina_kf_tx() for the TC fan-out of results
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
 * accessors (plain loads on x86 and arm64).  The header is in the frame's
 * first buffer; the elements of a jumbo frame may run on into further
 * buffers (XDP multi-buffer), and are then gathered into a per-CPU buffer,
 * and the result scattered back from it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bpf.h>
#include <linux/btf.h>
#include <linux/btf_ids.h>
#include <linux/module.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/udp.h>
#include <net/xdp.h>
#ifdef XINA_HAVE_LINUX_UNALIGNED	/* 6.12 moved it; see kmod/Kbuild */
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

#ifdef CONFIG_X86_64
#include <asm/cpufeature.h>
#include <asm/fpu/api.h>
#endif

#include "xina.h"
#include "xina_auth.h"
#include "xina_kfunc.h"
#include "xina_lanes.h"

/*
 * Declaring kfuncs, 6.1 to 6.12.  From 6.9 on register_btf_kfunc_id_set()
 * takes only sets declared with BTF_KFUNCS_START (it flags the set
 * BTF_SET8_KFUNCS) and refuses any other with -EINVAL, which fails the
 * module's init; 6.1 has only BTF_SET8_START.  __bpf_kfunc (6.3) keeps a
 * kfunc out of line, unclonable and in the object, so that its BTF is
 * that of its C prototype (on 6.1 noinline does, for a global function
 * nothing here calls); __bpf_kfunc_start_defs() (6.7) silences the
 * missing-prototype and, from 6.8, missing-declaration warnings.  Feature
 * tests on the macros, not LINUX_VERSION_CODE: what matters is what the
 * kernel's headers declare, whatever version a distribution's backports
 * carry.
 */
#ifndef BTF_KFUNCS_START
#define BTF_KFUNCS_START(name)	BTF_SET8_START(name)
#define BTF_KFUNCS_END(name)	BTF_SET8_END(name)
#endif
#ifndef __bpf_kfunc
#define __bpf_kfunc		noinline
#endif

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

/*
 * simd=1 only where the loop can run: kmod/simd.c is built with -mssse3
 * (its byte swap is a pshufb), which x86-64's baseline does not have, and
 * elsewhere there is no loop.  Refused otherwise, rather than an invalid
 * opcode in softirq context, or a setting that silently does nothing.
 */
static int xina_simd_set(const char *val, const struct kernel_param *kp)
{
	bool on;
	int ret;

	ret = kstrtobool(val, &on);
	if (ret)
		return ret;
#ifdef CONFIG_X86_64
	if (on && !boot_cpu_has(X86_FEATURE_SSSE3)) {
		pr_warn("xina: simd=1 refused: this CPU has no SSSE3\n");
		return -ENODEV;
	}
#else
	if (on) {
		pr_warn("xina: simd=1 refused: the vector loop is x86-64's only\n");
		return -EOPNOTSUPP;
	}
#endif
	WRITE_ONCE(xina_simd, on);
	return 0;
}

static const struct kernel_param_ops xina_simd_ops = {
	.set	= xina_simd_set,
	.get	= param_get_bool,
};
module_param_cb(simd, &xina_simd_ops, &xina_simd, 0644);
MODULE_PARM_DESC(simd, "SUM of INT32/16/8 with SSE2/SSSE3 under kernel_fpu_begin() (x86-64 with SSSE3; for measurements)");

/*
 * The vector loop for SUM of INT32, INT16 and INT8, if asked for and the
 * FPU is usable here (XDP runs in softirq context: kernel_fpu_begin()
 * saves the interrupted task's state).
 */
static bool xina_val_add_simd(u32 *val, const __be32 *el, u16 count, u8 dtype)
{
#ifdef CONFIG_X86_64
	if (!READ_ONCE(xina_simd) || !irq_fpu_usable())
		return false;
	kernel_fpu_begin();
	xina_simd_add(val, el, count, dtype);
	kernel_fpu_end();
	return true;
#else
	return false;
#endif
}

/*
 * Combine @count words of 8, 16 or 32-bit @dtype by @op into @val; with
 * both constant after inlining, the loop body is one expression of
 * bpf/xina_lanes.h.
 */
static __always_inline void xina_add32(u32 *val, const __be32 *el, u16 count,
				       const u32 dtype, const u32 op)
{
	u16 i;

	for (i = 0; i < count; i++)
		val[i] = xina_combine32(val[i], get_unaligned_be32(&el[i]),
					dtype, op);
}

/* The same for INT64: @count is even, each element two words, high first. */
static __always_inline void xina_add64(u32 *val, const __be32 *el, u16 count,
				       const u32 op)
{
	u64 acc, x;
	u16 i;

	for (i = 0; i + 1 < count; i += 2) {
		acc = (u64)val[i] << 32 | val[i + 1];
		x = (u64)get_unaligned_be32(&el[i]) << 32 |
		    get_unaligned_be32(&el[i + 1]);
		acc = xina_combine64(acc, x, op);
		val[i] = acc >> 32;
		val[i + 1] = (u32)acc;
	}
}

/* The lanes of 8, 16 or 32-bit @dtype by a constant @op. */
static __always_inline void xina_add_lanes(u32 *val, const __be32 *el,
					   u16 count, u8 dtype, const u32 op)
{
	if (dtype == XINA_DTYPE_INT16)
		xina_add32(val, el, count, XINA_DTYPE_INT16, op);
	else if (dtype == XINA_DTYPE_INT8)
		xina_add32(val, el, count, XINA_DTYPE_INT8, op);
	else
		xina_add32(val, el, count, XINA_DTYPE_INT32, op);
}

/*
 * Combine a contribution into the round's values by the round's pair,
 * which xina_dtype_op_ok() accepted: every lane wraps or compares as
 * bpf/xina_lanes.h says, as in every other aggregator.
 */
static void xina_val_add(u32 *val, const __be32 *el, u16 count, u8 dtype,
			 u8 op)
{
	if (dtype == XINA_DTYPE_INT64) {
		switch (op) {
		case XINA_OP_SUM:
			xina_add64(val, el, count, XINA_OP_SUM);
			return;
		case XINA_OP_MAX:
			xina_add64(val, el, count, XINA_OP_MAX);
			return;
		case XINA_OP_MIN:
			xina_add64(val, el, count, XINA_OP_MIN);
			return;
		case XINA_OP_AND:
			xina_add64(val, el, count, XINA_OP_AND);
			return;
		case XINA_OP_OR:
			xina_add64(val, el, count, XINA_OP_OR);
			return;
		default:
			xina_add64(val, el, count, XINA_OP_XOR);
			return;
		}
	}
	switch (op) {
	case XINA_OP_SUM:
		if (xina_val_add_simd(val, el, count, dtype))
			return;
		xina_add_lanes(val, el, count, dtype, XINA_OP_SUM);
		return;
	case XINA_OP_MAX:
		xina_add_lanes(val, el, count, dtype, XINA_OP_MAX);
		return;
	case XINA_OP_MIN:
		xina_add_lanes(val, el, count, dtype, XINA_OP_MIN);
		return;
	/* Bitwise: the lane width does not matter. */
	case XINA_OP_AND:
		xina_add32(val, el, count, XINA_DTYPE_INT32, XINA_OP_AND);
		return;
	case XINA_OP_OR:
		xina_add32(val, el, count, XINA_DTYPE_INT32, XINA_OP_OR);
		return;
	default:
		xina_add32(val, el, count, XINA_DTYPE_INT32, XINA_OP_XOR);
		return;
	}
}

static void xina_val_out(__be32 *el, const u32 *val, u16 count)
{
	u16 i;

	for (i = 0; i < count; i++)
		put_unaligned_be32(val[i], &el[i]);
}

/* NH (bpf/xina_auth.h) of @count elements in network order, unaligned. */
static u64 xina_nh_el(const u32 *k, const __be32 *el, u16 count)
{
	u64 sum = 0;
	u16 i;

	for (i = 0; i + 1 < count; i += 2)
		sum += xina_nh_pair(get_unaligned_be32(&el[i]),
				    get_unaligned_be32(&el[i + 1]), k[i],
				    k[i + 1]);
	if (count & 1)
		sum += xina_nh_pair(get_unaligned_be32(&el[count - 1]), 0,
				    k[count - 1], k[count]);
	return sum;
}

/*
 * The header of the result of @sv's round, in place of the contribution's:
 * the round's dtype and op, flags and rank 0, the kept exp, aux and tag,
 * so that every answer to a retransmission is the result as it was sent
 * (a retransmission's own exp and aux are not the result's).
 */
static void xina_result_hdr(const struct xina_slotv *sv, struct xina_hdr *h)
{
	h->type = XINA_T_RESULT;
	h->dtype = sv->dtype;
	h->op = sv->op;
	h->flags = 0;
	h->rank = 0;
	h->exp = sv->exp;
	put_unaligned_be32(sv->aux, &h->aux);
	put_unaligned(sv->tag, &h->tag);
}

/*
 * Start round @round of epoch @epoch in @sv with the contribution in @h,
 * @el: the state of the version's previous round, whatever its epoch, is
 * gone (round, claimed, complete, seen, aux, values; the tag goes with
 * complete).
 */
static void xina_round_start(struct xina_slotv *sv, u32 *val,
			     const struct xina_hdr *h, const __be32 *el,
			     u32 epoch, u32 round, u16 count)
{
	sv->epoch = epoch;
	sv->round = round;
	sv->complete = 0;
	sv->claimed = 0;
	sv->dtype = h->dtype;
	sv->op = h->op;
	sv->count = count;
	sv->aux = get_unaligned_be32(&h->aux);
	bitmap_zero(sv->seen, XINA_MAX_WORKERS);
	xina_val_init(val, el, count);
}

/*
 * The round state machine of one slot version, under sv->lock; the same
 * decisions in the same order as xina_claim() of the map backend
 * (bpf/xina.bpf.c).  The contribution was of the job's current epoch when
 * the caller checked.  Returns the verdict; *stat is the counter of the
 * outcome.
 *
 * Claiming a contribution (its bit, @claimed), adding it into @val (and
 * its aux into @aux) and deciding that it completes the round are one
 * critical section, and a version is started afresh (@claimed 0) only
 * under the same lock: no add of an earlier round or epoch can be counted
 * in a new round, as an add between its claim and its count could be in
 * the map backend, whose adds run outside the lock (into per-CPU
 * partials).
 */
static int xina_slot_contrib(struct xina_job *job,
			     const struct xina_job_cfg *cfg,
			     struct xina_slotv *sv, u32 *val, struct xina_hdr *h,
			     __be32 *el, u16 rank, bool train,
			     enum xina_stat *stat)
{
	u16 count = get_unaligned_be16(&h->count);
	u32 round = get_unaligned_be32(&h->round);
	u32 epoch = get_unaligned_be32(&h->epoch);
	s32 ahead = round - sv->round;
	bool pair = h->dtype == sv->dtype && h->op == sv->op;

	/*
	 * A version of another epoch (or never used, epoch 0) starts afresh,
	 * but only with one of the epoch's first two rounds: an old
	 * retransmission of round r must not make the version wait for r.
	 * And only for the job's epoch, read again under the lock: a
	 * restart's join may have moved it on since xina_job_check(), and a
	 * packet of the old epoch must not take back a version that the new
	 * one opened (its contributions would be lost).  The contribution
	 * that opened it read the new epoch before it released this lock,
	 * so this read, after the acquire, sees it too.
	 */
	if (sv->epoch != epoch) {
		if (epoch != READ_ONCE(job->join.epoch)) {
			*stat = XINA_STAT_DROP_EPOCH;
			return XINA_KF_DROP;
		}
		if (round >= XINA_SLOT_VERSIONS) {
			*stat = XINA_STAT_DROP_RANGE;
			return XINA_KF_DROP;
		}
		xina_round_start(sv, val, h, el, epoch, round, count);
		goto added;
	}
	if (ahead == XINA_SLOT_VERSIONS && sv->complete) {
		xina_round_start(sv, val, h, el, epoch, round, count);
		goto added;
	}
	if (ahead < 0) {
		*stat = XINA_STAT_STALE;
		return XINA_KF_DROP;
	}
	/* Round r + 2 before r completed, or further ahead; or a count
	 * other than the round's (for the round's dtype and op).
	 */
	if (ahead > 0 || (pair && count != sv->count)) {
		*stat = XINA_STAT_DROP_RANGE;
		return XINA_KF_DROP;
	}
	/* Another dtype or op than the round's: nothing changes. */
	if (!pair) {
		*stat = XINA_STAT_DROP_OP;
		return XINA_KF_DROP;
	}
	if (test_bit(rank, sv->seen)) {
		/*
		 * A train goes to every member or to none: a resend in one
		 * is not answered (libxina sends its resends alone).
		 */
		if (!sv->complete || train) {
			*stat = XINA_STAT_DUP;
			return XINA_KF_DROP;
		}
		/*
		 * A late retransmission: answer it from the kept result,
		 * copied out under sv->lock as every write of @val is made:
		 * this CPU's acquire of the lock and the release by the CPU
		 * that completed the round (or by one that starts round + 2
		 * in this version) order the copy on weakly ordered CPUs
		 * too, so a torn copy never goes out.  A seqcount would
		 * copy without the lock but retry on every contribution to
		 * the version, and the seen/complete check would still need
		 * the lock; the copy is at most 8 KiB.
		 */
		*stat = XINA_STAT_RETRANS_ANSWERED;
		xina_result_hdr(sv, h);
		xina_val_out(el, val, count);
		return XINA_KF_ANSWER;
	}
	xina_val_add(val, el, count, sv->dtype, sv->op);
	sv->aux = max_t(s32, sv->aux, get_unaligned_be32(&h->aux));

added:
	__set_bit(rank, sv->seen);
	*stat = XINA_STAT_CONTRIB;
	if (++sv->claimed < job->workers)
		return XINA_KF_ADDED;

	/*
	 * The result, tagged once with the job's result key over the header
	 * that every answer repeats (aux included); the tag does not cover
	 * its own field, where xina_result_hdr() left the previous round's.
	 */
	sv->complete = 1;
	sv->exp = h->exp;
	xina_result_hdr(sv, h);
	sv->tag = cpu_to_be64(xina_tag_hdr(cfg->kres, h,
					   xina_nh(cfg->nhk, val, count)));
	put_unaligned(sv->tag, &h->tag);
	xina_val_out(el, val, count);
	return XINA_KF_RESULT;
}

/*
 * Checks against the job's configuration; 0 or the drop counter.  The
 * source first (cheap), then the tag over the header and the elements
 * @el, before anything of the job is touched; it covers every field
 * checked after it.
 */
static int xina_job_check(const struct xina_job *job,
			  const struct xina_job_cfg *cfg,
			  const struct xina_hdr *h, const __be32 *el,
			  __be32 saddr, __be16 sport)
{
	u16 rank = get_unaligned_be16(&h->rank);
	const struct xina_member_cfg *m;
	u64 tag;

	if (rank >= job->workers)
		return XINA_STAT_DROP_MEMBER;
	m = &cfg->member[rank];
	if (!m->addr || m->addr != saddr || (m->port && m->port != sport))
		return XINA_STAT_DROP_MEMBER;
	tag = xina_tag_hdr(m->key, h,
			   xina_nh_el(cfg->nhk, el,
				      get_unaligned_be16(&h->count)));
	if (cpu_to_be64(tag) != get_unaligned(&h->tag))
		return XINA_STAT_DROP_AUTH;
	/* Before anything of the round: an old epoch gets no answer either. */
	if (get_unaligned_be32(&h->epoch) != READ_ONCE(job->join.epoch))
		return XINA_STAT_DROP_EPOCH;
	if (get_unaligned_be32(&h->slot) >= job->slots ||
	    get_unaligned_be16(&h->count) > job->elems)
		return XINA_STAT_DROP_RANGE;
	/* Any pair of the wire (AVG is libxina's); INT64 by whole elements. */
	if (!xina_dtype_op_ok(h->dtype, h->op, get_unaligned_be16(&h->count)))
		return XINA_STAT_DROP_OP;
	return 0;
}

/*
 * Remember where member @rank is, from the headers of its packet in @xdp:
 * the TC fan-out sends its copies of results there.  Only called for a
 * contribution accepted into a round (tag verified, neither duplicate nor
 * stale), so that no other packet, an exact replay included, moves where
 * the member's results go.  Written only when something moved, so that
 * the fan-out's readers seldom retry.
 */
static void xina_job_learn(struct xina_job *job, u16 rank,
			   const struct xdp_buff *xdp, __be32 saddr)
{
	const struct ethhdr *eth = xdp->data;
	const struct iphdr *iph = xdp->data + sizeof(*eth);
	const struct udphdr *udph = (const void *)(iph + 1);
	struct xina_member_loc *loc = &job->loc[rank];
	int ifindex = xdp->rxq->dev->ifindex;

	if (READ_ONCE(loc->ifindex) == ifindex && loc->addr == saddr &&
	    loc->sw_addr == iph->daddr && loc->rport == udph->source &&
	    ether_addr_equal(loc->mac, eth->h_source) &&
	    ether_addr_equal(loc->sw_mac, eth->h_dest))
		return;
	write_seqlock(&job->loc_lock);
	loc->addr = saddr;
	loc->sw_addr = iph->daddr;
	loc->rport = udph->source;
	ether_addr_copy(loc->mac, eth->h_source);
	ether_addr_copy(loc->sw_mac, eth->h_dest);
	WRITE_ONCE(loc->ifindex, ifindex);
	write_sequnlock(&job->loc_lock);
}

static int xina_job_contrib(struct xina_job *job, struct xdp_buff *xdp,
			    struct xina_hdr *h, __be32 *el, __be32 saddr,
			    __be16 sport, bool train)
{
	const struct xina_job_cfg *cfg = rcu_dereference(job->cfg);
	u16 rank = get_unaligned_be16(&h->rank);
	struct xina_counters *c;
	enum xina_stat stat;
	struct xina_slotv *sv;
	u32 idx;
	int ret;

	xina_count(job, XINA_STAT_RX);
	ret = xina_job_check(job, cfg, h, el, saddr, sport);
	if (ret) {
		xina_count(job, ret);
		return XINA_KF_REJECT;
	}

	idx = get_unaligned_be32(&h->slot) * XINA_SLOT_VERSIONS +
	      (get_unaligned_be32(&h->round) & 1);
	sv = &job->slotv[idx];
	spin_lock(&sv->lock);
	ret = xina_slot_contrib(job, cfg, sv, (u32 *)xina_job_val(job, idx), h,
				el, rank, train, &stat);
	spin_unlock(&sv->lock);
	if (ret == XINA_KF_ADDED || ret == XINA_KF_RESULT)
		xina_job_learn(job, rank, xdp, saddr);
	xina_count(job, stat);
	if (ret == XINA_KF_RESULT) {
		xina_count(job, XINA_STAT_COMPLETE);
		/* For XINA_JOIN_BUSY; this CPU's own line, read by joins. */
		c = this_cpu_ptr(job->stats);
		WRITE_ONCE(c->done_at, jiffies);
		/*
		 * The time first, then its epoch with release: a join that
		 * reads this epoch (acquire, xina_job_busy()) reads this time
		 * or a later one, also on weakly ordered CPUs.
		 */
		smp_store_release(&c->done_epoch, get_unaligned_be32(&h->epoch));
	}
	return ret;
}

/*
 * Has a round of epoch @epoch completed within the last XINA_JOIN_BUSY_MS
 * (on any CPU)?  Someone is using the epoch: a restart's join is refused.
 */
static bool xina_job_busy(const struct xina_job *job, u32 epoch)
{
	unsigned long now = jiffies, busy = msecs_to_jiffies(XINA_JOIN_BUSY_MS);
	const struct xina_counters *c;
	int cpu;

	for_each_possible_cpu(cpu) {
		c = per_cpu_ptr(job->stats, cpu);
		/* Pairs with the release in xina_job_contrib(). */
		if (smp_load_acquire(&c->done_epoch) == epoch &&
		    time_before(now, READ_ONCE(c->done_at) + busy))
			return true;
	}
	return false;
}

/*
 * The JOIN_REPLY to the join in @h, in place (bpf/xina_join.h): the job's
 * slots and elements, @status and @epoch; job, rank, dtype and the nonce
 * stay those of the join.  The tag is the caller's.
 */
static void xina_join_reply(const struct xina_job *job, struct xina_hdr *h,
			    u32 status, u32 epoch)
{
	h->type = XINA_T_JOIN_REPLY;
	put_unaligned_be32(status, &h->round);
	put_unaligned_be32(epoch, &h->epoch);
	put_unaligned_be32(job->slots, &h->slot);
	put_unaligned_be32(job->elems, &h->aux);
}

/*
 * A member's join (include/uapi/linux/xina.h, "Join handshake"): checked
 * as a contribution is (member, then the tag with the member's key over
 * the bare header), decided by xina_join_decide() under the job's join
 * lock, and answered in place: XINA_KF_ANSWER sends the reply to the
 * member's learned location (the TC fan-out, as an answer to a
 * retransmission), XINA_KF_BOUNCE back out of the ingress port (a
 * BAD_KEY reply for a member never seen; the XDP program swaps the
 * addresses, as the map backend's does).  Bottom halves are off.
 */
static int xina_job_join(struct xina_job *job, struct xdp_buff *xdp,
			 struct xina_hdr *h, __be32 saddr, __be16 sport)
{
	const struct xina_job_cfg *cfg = rcu_dereference(job->cfg);
	u16 rank = get_unaligned_be16(&h->rank);
	const struct xina_member_cfg *m;
	struct xina_join_mbr mbr;
	struct xina_join_job jj;
	int fits, verdict;

	xina_count(job, XINA_STAT_RX);
	if (rank >= job->workers)
		goto drop_member;
	m = &cfg->member[rank];
	if (!m->addr || m->addr != saddr || (m->port && m->port != sport))
		goto drop_member;

	if (cpu_to_be64(xina_tag_hdr(m->key, h, 0)) != get_unaligned(&h->tag)) {
		/*
		 * The worker's key is not the job's.  Nothing changes; the
		 * refusal carries the join's own tag.  Where the member was
		 * seen, else back where the join came from.
		 */
		xina_count(job, XINA_STAT_DROP_AUTH);
		xina_join_reply(job, h, XINA_JOIN_BAD_KEY, 0);
		if (READ_ONCE(job->loc[rank].ifindex) &&
		    READ_ONCE(job->loc[rank].addr) == m->addr)
			return XINA_KF_ANSWER;
		return XINA_KF_BOUNCE;
	}

	fits = get_unaligned_be32(&h->slot) <= job->slots &&
	       get_unaligned_be32(&h->aux) <= job->elems &&
	       h->dtype == XINA_DTYPE_INT32;
	spin_lock(&job->join_lock);
	jj = job->join;
	verdict = xina_join_decide(&jj, &job->jmbr[rank], rank,
				   get_unaligned_be64(&h->offset),
				   get_unaligned_be32(&h->epoch), fits,
				   xina_job_busy(job, jj.epoch));
	memcpy(job->join.joined, jj.joined, sizeof(jj.joined));
	WRITE_ONCE(job->join.run, jj.run);
	WRITE_ONCE(job->join.epoch, jj.epoch);
	mbr = job->jmbr[rank];
	spin_unlock(&job->join_lock);

	if (verdict == XINA_JD_STALE) {
		xina_count(job, XINA_STAT_JOIN_STALE);
		return XINA_KF_DROP;
	}
	/*
	 * A fresh join whose tag verified is where the member is; the
	 * latest join again (a lost reply, or a replay) moves nothing.
	 */
	if (verdict != XINA_JD_RESEND)
		xina_job_learn(job, rank, xdp, saddr);
	if (verdict == XINA_JD_NEW_EPOCH)
		xina_count(job, XINA_STAT_EPOCH_NEW);
	xina_count(job, mbr.status == XINA_JOIN_OK ? XINA_STAT_JOIN :
						     XINA_STAT_JOIN_REFUSED);
	xina_join_reply(job, h, mbr.status, mbr.epoch);
	put_unaligned(cpu_to_be64(xina_tag_hdr(m->key, h, 0)), &h->tag);
	return XINA_KF_ANSWER;

drop_member:
	xina_count(job, XINA_STAT_DROP_MEMBER);
	return XINA_KF_REJECT;
}

/*
 * Staging for the elements of a multi-buffer frame, per CPU; allocated,
 * not DEFINE_PER_CPU: the static per-CPU area of modules is 8 KiB.
 */
struct xina_kf_buf {
	__be32	el[XINA_MAX_ELEMS];
};

static struct xina_kf_buf __percpu *xina_kf_bufs;

/*
 * Piece @i of the frame: 0 the linear part, then its fragments.  Its
 * length, and where it starts in *@p.
 */
static u32 xina_xdp_piece(struct xdp_buff *xdp, u32 i, void **p)
{
	skb_frag_t *f;

	if (!i) {
		*p = xdp->data;
		return xdp->data_end - xdp->data;
	}
	f = &xdp_get_shared_info_from_buff(xdp)->frags[i - 1];
	*p = skb_frag_address(f);
	return skb_frag_size(f);
}

/*
 * Copy @len bytes between @buf and the frame at @off, across its buffers:
 * into the frame if @to_frame, out of it otherwise.  The caller checked
 * that the frame holds them.
 */
static void xina_xdp_copy(struct xdp_buff *xdp, u32 off, void *buf, u32 len,
			  bool to_frame)
{
	u32 pieces = 1, i, size, n;
	void *p;

	if (xdp_buff_has_frags(xdp))
		pieces += xdp_get_shared_info_from_buff(xdp)->nr_frags;
	for (i = 0; i < pieces && len; i++) {
		size = xina_xdp_piece(xdp, i, &p);
		if (off >= size) {
			off -= size;
			continue;
		}
		n = min(len, size - off);
		if (to_frame)
			memcpy(p + off, buf, n);
		else
			memcpy(buf, p + off, n);
		buf += n;
		len -= n;
		off = 0;
	}
}

/*
 * A XINA_T_JOIN at @off: a bare header in a frame of nothing else (the
 * reply is made of it in place), with the fields a join leaves 0 at 0
 * (its epoch is the run it names, any value).  The caller checked the
 * version.
 */
static int xina_kf_join(struct xdp_buff *xdp, u32 off, struct xina_hdr *h,
			__be32 saddr, __be16 sport)
{
	struct xina_job *job;
	int ret;

	if (off != sizeof(struct ethhdr) + sizeof(struct iphdr) +
		   sizeof(struct udphdr) ||
	    off + sizeof(*h) != xdp_get_buff_len(xdp))
		return XINA_KF_MALFORMED;
	if (h->count || h->flags || h->weight || h->op || h->exp ||
	    h->round)
		return XINA_KF_MALFORMED;

	local_bh_disable();
	rcu_read_lock();
	job = xina_job_find(dev_net(xdp->rxq->dev), get_unaligned_be32(&h->job));
	if (job)
		ret = xina_job_join(job, xdp, h, saddr, sport);
	else
		ret = XINA_KF_NO_JOB;
	rcu_read_unlock();
	local_bh_enable();
	return ret;
}

#ifdef __bpf_kfunc_start_defs
__bpf_kfunc_start_defs();
#else
__diag_push();
__diag_ignore_all("-Wmissing-prototypes",
		  "kfuncs are global functions only called from BPF programs");
#endif

/* The smallest offset of a xina header: after Ethernet, IPv4 and UDP. */
#define XINA_KF_HDR_MIN	(sizeof(struct ethhdr) + sizeof(struct iphdr) + \
			 sizeof(struct udphdr))

/*
 * The checks of a contribution's header (its version aside) that both
 * kfuncs make: its elements' length in bytes, or 0 if it is no
 * contribution xina.ko takes (malformed).  No XINA_F_ZERO: xina.ko does
 * not offer it (its join replies).  Any aux: the round's MAX of them goes
 * into its result.  At most a staging buffer of elements.
 */
static u32 xina_kf_elen(const struct xina_hdr *h)
{
	u32 len = get_unaligned_be16(&h->count) * sizeof(__be32);

	if (h->type != XINA_T_CONTRIB || (h->flags & ~XINA_F_RETRANS) ||
	    h->weight || len > sizeof(struct xina_kf_buf))
		return 0;
	return len;
}

/*
 * The contribution @h, its elements at @el, into its job's slot memory (a
 * train's datagram if @train); NO_JOB if the receiving device's netns has
 * no such job.  The RCU read lock documents that the job stays valid until
 * the end of the call: xina_job_destroy() unpublishes a job and frees its
 * slots only after a grace period (synchronize_rcu).
 */
static int xina_kf_add(struct xdp_buff *xdp, struct xina_hdr *h, __be32 *el,
		       __be32 saddr, __be16 sport, bool train)
{
	struct xina_job *job;
	int ret = XINA_KF_NO_JOB;

	rcu_read_lock();
	job = xina_job_find(dev_net(xdp->rxq->dev), get_unaligned_be32(&h->job));
	if (job)
		ret = xina_job_contrib(job, xdp, h, el, saddr, sport, train);
	rcu_read_unlock();
	return ret;
}

/**
 * xina_kf_contrib - add a contribution into module slot memory
 * @ctx: XDP context of the packet
 * @off: offset of the struct xina_hdr from ctx->data
 * @saddr: IPv4 source address of the packet
 * @sport: UDP source port of the packet
 *
 * See xina_kfunc.h.  XDP programs run inside an RCU read-side critical
 * section, and so the job found stays valid (xina_kf_add()).
 *
 * Return: enum xina_kf_verdict.
 */
__bpf_kfunc int xina_kf_contrib(struct xdp_md *ctx, u32 off,
				__be32 saddr, __be16 sport)
{
	struct xdp_buff *xdp = (struct xdp_buff *)ctx;
	u32 lin = xdp->data_end - xdp->data, len;
	struct xina_hdr *h;
	__be32 *el;
	bool staged;
	int ret;

	if (off < XINA_KF_HDR_MIN || off + sizeof(*h) > lin)
		return XINA_KF_MALFORMED;
	h = xdp->data + off;
	if (h->version != XINA_WIRE_VERSION)
		return XINA_KF_MALFORMED;
	if (h->type == XINA_T_JOIN)
		return xina_kf_join(xdp, off, h, saddr, sport);
	len = xina_kf_elen(h);
	if (!len || off + sizeof(*h) + len > xdp_get_buff_len(xdp))
		return XINA_KF_MALFORMED;

	/*
	 * XDP runs in softirq context, BPF_PROG_TEST_RUN in process context
	 * with bottom halves enabled: keep softirqs off this CPU while its
	 * staging buffer and a slot lock are held.
	 */
	local_bh_disable();
	staged = off + sizeof(*h) + len > lin;
	if (staged) {
		el = this_cpu_ptr(xina_kf_bufs)->el;
		xina_xdp_copy(xdp, off + sizeof(*h), el, len, false);
	} else {
		el = (__be32 *)(h + 1);
	}

	ret = xina_kf_add(xdp, h, el, saddr, sport, false);

	if (staged && (ret == XINA_KF_RESULT || ret == XINA_KF_ANSWER))
		xina_xdp_copy(xdp, off + sizeof(*h), el, len, true);
	local_bh_enable();
	return ret;
}

/**
 * xina_kf_train - add one datagram of a GSO train into module slot memory
 * @ctx: XDP context of the train: one frame of Ethernet, IPv4 and UDP
 *	headers, then the datagrams back to back (a port in generic mode)
 * @off: offset of the datagram's struct xina_hdr from ctx->data, in any
 *	buffer of the frame
 * @len: the datagram's length, its header included
 * @saddr: IPv4 source address of the train
 * @sport: UDP source port of the train
 *
 * See xina_kfunc.h.  As xina_kf_contrib() for a contribution, the header
 * and the elements copied out where they are not in the linear part (a
 * train's later headers may lie in further buffers) and the result
 * written back; a retransmission to a completed round is a duplicate.
 *
 * Return: enum xina_kf_verdict, never XINA_KF_ANSWER or XINA_KF_BOUNCE.
 */
__bpf_kfunc int xina_kf_train(struct xdp_md *ctx, u32 off, u32 len,
			      __be32 saddr, __be16 sport)
{
	struct xdp_buff *xdp = (struct xdp_buff *)ctx;
	u32 lin = xdp->data_end - xdp->data, blen = xdp_get_buff_len(xdp);
	struct xina_hdr copy, *h = &copy;
	__be32 *el;
	u32 elen;
	int ret;

	/*
	 * The train's first headers in the linear part (xina_job_learn()
	 * reads them there), and the datagram within the frame: off + len
	 * is not summed, so that no @off wraps it round into the frame.
	 */
	if (off < XINA_KF_HDR_MIN || lin < XINA_KF_HDR_MIN ||
	    len < sizeof(*h) || len > blen || off > blen - len)
		return XINA_KF_MALFORMED;
	if (off + sizeof(*h) <= lin)
		h = xdp->data + off;
	else
		xina_xdp_copy(xdp, off, h, sizeof(*h), false);
	/* a lone contribution's checks (xina_kf_contrib()) */
	if (h->version != XINA_WIRE_VERSION)
		return XINA_KF_MALFORMED;
	elen = xina_kf_elen(h);
	if (!elen || len != sizeof(*h) + elen)
		return XINA_KF_MALFORMED;

	local_bh_disable();
	if (off + len <= lin) {
		el = (__be32 *)(h + 1);
	} else {
		el = this_cpu_ptr(xina_kf_bufs)->el;
		xina_xdp_copy(xdp, off + sizeof(*h), el, elen, false);
	}
	ret = xina_kf_add(xdp, h, el, saddr, sport, true);

	if (ret == XINA_KF_RESULT) {
		if (h == &copy)
			xina_xdp_copy(xdp, off, h, sizeof(*h), true);
		if (off + len > lin)
			xina_xdp_copy(xdp, off + sizeof(*h), el, elen, true);
	}
	local_bh_enable();
	return ret;
}

/**
 * xina_kf_member - where a member of a job is, for the TC fan-out
 * @ctx: the frame being fanned out (its device's netns holds the job)
 * @job_id: job id
 * @rank: the member's rank
 * @m: filled with the member's location on success
 *
 * See xina_kfunc.h.
 *
 * Return: 0, -EINVAL (@m NULL), -ENOENT (no such job), -ERANGE (@rank not
 * below the job's workers) or -ENODATA (no address, or never seen).
 */
__bpf_kfunc int xina_kf_member(struct __sk_buff *ctx, u32 job_id,
			       u32 rank, struct xina_kf_member *m)
{
	struct sk_buff *skb = (struct sk_buff *)ctx;
	const struct xina_member_loc *loc;
	const struct xina_job_cfg *cfg;
	struct xina_job *job;
	unsigned int seq;
	int ret = 0;

	/* the verifiers of some kernels let a NULL through for @m */
	if (!m)
		return -EINVAL;
	rcu_read_lock();
	job = xina_job_find(dev_net(skb->dev), job_id);
	if (!job) {
		ret = -ENOENT;
		goto out;
	}
	if (rank >= job->workers) {
		ret = -ERANGE;
		goto out;
	}
	cfg = rcu_dereference(job->cfg);
	loc = &job->loc[rank];
	do {
		seq = read_seqbegin(&job->loc_lock);
		m->addr = loc->addr;
		m->sw_addr = loc->sw_addr;
		m->rport = loc->rport;
		m->ifindex = loc->ifindex;
		ether_addr_copy(m->mac, loc->mac);
		ether_addr_copy(m->sw_mac, loc->sw_mac);
	} while (read_seqretry(&job->loc_lock, seq));
	/*
	 * -ENODATA with m->addr 0: the rank has no member; with the
	 * member's address: it was never seen, or it was given another
	 * address since (then it is not where it was).
	 */
	if (!m->ifindex || m->addr != cfg->member[rank].addr)
		ret = -ENODATA;
	m->addr = cfg->member[rank].addr;
	m->port = cfg->member[rank].port;
	if (!m->addr)
		ret = -ENODATA;
out:
	rcu_read_unlock();
	return ret;
}

/**
 * xina_kf_tx - count the copies of a result the TC fan-out sent
 * @ctx: the frame being fanned out
 * @job_id: job id
 * @sent: copies sent (XINA_STAT_TX)
 * @unknown: copies not sent for want of a location (XINA_STAT_TX_UNKNOWN)
 */
__bpf_kfunc void xina_kf_tx(struct __sk_buff *ctx, u32 job_id, u32 sent,
			    u32 unknown)
{
	struct sk_buff *skb = (struct sk_buff *)ctx;
	struct xina_job *job;

	rcu_read_lock();
	job = xina_job_find(dev_net(skb->dev), job_id);
	if (job) {
		this_cpu_add(job->stats->c[XINA_STAT_TX], sent);
		this_cpu_add(job->stats->c[XINA_STAT_TX_UNKNOWN], unknown);
	}
	rcu_read_unlock();
}

#ifdef __bpf_kfunc_end_defs
__bpf_kfunc_end_defs();
#else
__diag_pop();
#endif

BTF_KFUNCS_START(xina_xdp_kfunc_ids)
BTF_ID_FLAGS(func, xina_kf_contrib)
BTF_ID_FLAGS(func, xina_kf_train)
BTF_KFUNCS_END(xina_xdp_kfunc_ids)

BTF_KFUNCS_START(xina_tc_kfunc_ids)
BTF_ID_FLAGS(func, xina_kf_member)
BTF_ID_FLAGS(func, xina_kf_tx)
BTF_KFUNCS_END(xina_tc_kfunc_ids)

static const struct btf_kfunc_id_set xina_xdp_kfunc_set = {
	.owner	= THIS_MODULE,
	.set	= &xina_xdp_kfunc_ids,
};

static const struct btf_kfunc_id_set xina_tc_kfunc_set = {
	.owner	= THIS_MODULE,
	.set	= &xina_tc_kfunc_ids,
};

/*
 * There is no unregistration: the sets go with the module's BTF.  Without
 * module BTF the kernel only warns and the kfuncs are missing; a program
 * calling them then fails to load, which is what xinactl reports.
 */
int xina_kfunc_init(void)
{
	int err;

	xina_kf_bufs = alloc_percpu(struct xina_kf_buf);
	if (!xina_kf_bufs)
		return -ENOMEM;
	err = register_btf_kfunc_id_set(BPF_PROG_TYPE_XDP, &xina_xdp_kfunc_set);
	if (!err)
		err = register_btf_kfunc_id_set(BPF_PROG_TYPE_SCHED_CLS,
						&xina_tc_kfunc_set);
	if (err)
		free_percpu(xina_kf_bufs);
	return err;
}

/*
 * Module exit: no program can call the kfuncs any more (a loaded program
 * that calls them holds a reference on the module).
 */
void xina_kfunc_exit(void)
{
	free_percpu(xina_kf_bufs);
}
