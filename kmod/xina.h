/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xina.ko internals: jobs, their slot memory and the interfaces between the
 * files of the module (job.c, netlink.c, sysfs.c, kfunc.c, main.c).
 */
#ifndef _XINA_H
#define _XINA_H

#include <linux/bitops.h>
#include <linux/kobject.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/if_ether.h>
#include <linux/rcupdate.h>
#include <linux/seqlock.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/xarray.h>
#include <linux/netlink.h>
#include <net/net_namespace.h>

#include <linux/xina.h>

#include "xina_join.h"

#define XINA_VERSION		"0.1"
#define XINA_MAX_SLOTS		65536	/* slots of one job's pool */
#define XINA_SLOT_VERSIONS	2	/* shadow copies per slot */

/*
 * One version of one slot.  Everything, the values included, is read and
 * written under @lock: the kfunc adds a contribution into @val while
 * holding it, so no per-CPU partials and no fold are needed (see
 * Documentation/module.rst for why, and what it costs).  @epoch is that of
 * the version's round: a contribution of another (the job's current one)
 * starts the version afresh, and only as round 0 or 1.
 */
struct xina_slotv {
	spinlock_t	lock;		/* this struct and its values */
	u32		epoch;		/* epoch of @round; 0: never used */
	u32		round;		/* round this version is in */
	u16		claimed;	/* contributions added in @round */
	u16		count;		/* 32-bit words of @round */
	u8		complete;	/* @val is the final result of @round */
	u8		dtype;		/* enum xina_dtype of @round */
	u8		op;		/* enum xina_op of @round */
	s8		exp;		/* exp of the completing contribution */
	s32		aux;		/* MAX of @round's contributions' aux
					 * (signed), the result's; in the hole
					 * before @tag on 64-bit: the version's
					 * charge to mem_limit stays the same
					 */
	__be64		tag;		/* the result's tag, once @complete
					 * (answers reuse it)
					 */
	unsigned long	seen[BITS_TO_LONGS(XINA_MAX_WORKERS)];
};

struct xina_member_cfg {
	u64	key[2];		/* K_r: its contributions' tags */
	__be32	addr;		/* IPv4 source address; 0: rank not configured */
	__be16	port;		/* UDP source port; 0: any */
};

/*
 * What the fast path checks a packet against, replaced as a whole by
 * XINA_CMD_JOB_SET and freed after a grace period (kfree_rcu), so that the
 * kfunc reads consistent keys and a consistent member table without a
 * lock.  The keys are derived from the job's secret (bpf/xina_auth.h),
 * which itself is not kept.
 */
struct xina_job_cfg {
	struct rcu_head		rcu;
	u32			flags;
	u64			kres[2];	/* K_res: results' tags */
	u32			nhk[XINA_MAX_ELEMS];	/* NH key */
	struct xina_member_cfg	member[];	/* [workers] */
};

/*
 * Per CPU: the counters, and when this CPU last completed a round (jiffies)
 * of which epoch, for XINA_JOIN_BUSY: written on every completion, only
 * read by a join.
 */
struct xina_counters {
	u64		c[XINA_STAT_MAX];
	unsigned long	done_at;
	u32		done_epoch;
};

/*
 * Where a member is, learned by the kfunc from the member's packets (see
 * struct xina_kf_member in xina_kfunc.h), under xina_job.loc_lock: written
 * rarely (a member moved), read by the TC fan-out for every result.  @addr
 * is the member address it was learned for: after XINA_CMD_JOB_SET gives
 * the rank another address, the entry counts as unlearned.
 */
struct xina_member_loc {
	__be32	addr;
	__be32	sw_addr;	/* the switch address the member sends to */
	__be16	rport;		/* its UDP source port */
	u8	mac[ETH_ALEN];
	u8	sw_mac[ETH_ALEN];
	int	ifindex;	/* the switch port it is behind; 0: never seen */
};

/*
 * A job.  Created and deleted under xina_lock; found by the fast path
 * through the per-netns xarray under RCU.  Deletion unpublishes it from the
 * xarray, removes its sysfs directory, waits for a grace period, so that a
 * kfunc call that found it (the kfuncs hold rcu_read_lock() from lookup to
 * return) has finished using it, and then frees its slot memory; the
 * struct itself goes with its kobject, after another grace period.
 */
struct xina_job {
	struct kobject		kobj;		/* /sys/kernel/xina/jobs/<name> */
	struct rcu_head		rcu;
	struct list_head	dead;		/* on the list being deleted */
	struct net		*net;		/* not counted: the job dies with it */
	u32			id;
	u16			workers;
	u16			elems;
	u32			slots;
	size_t			mem_bytes;	/* charged to xina_mem_used */
	struct xina_job_cfg __rcu *cfg;
	struct xina_slotv	*slotv;		/* [slots * 2] */
	s32			*val;		/* [slots * 2][elems], host order */
	struct xina_counters __percpu *stats;
	seqlock_t		loc_lock;	/* @loc */
	struct xina_member_loc	*loc;		/* [workers] */
	/*
	 * The join handshake (bpf/xina_join.h), under @join_lock, taken with
	 * bottom halves off.  @join.epoch is also read locklessly by every
	 * contribution (READ_ONCE; written with WRITE_ONCE).
	 */
	spinlock_t		join_lock;
	struct xina_join_job	join;
	struct xina_join_mbr	*jmbr;		/* [workers] */
};

struct xina_net {
	struct xarray	jobs;		/* id -> struct xina_job, RCU readers */
};

extern struct mutex xina_lock;
extern unsigned long xina_mem_limit;
extern unsigned int xina_net_id;

/* job.c */
struct xina_job_params {
	u32	id;
	u32	slots;
	u16	workers;
	u16	elems;
};

size_t xina_mem_used(void);
unsigned int xina_jobs_count(void);
struct xina_net *xina_net(const struct net *net);
struct xina_job *xina_job_find(const struct net *net, u32 id);
struct xina_job *xina_job_create(struct net *net,
				 const struct xina_job_params *p,
				 struct xina_job_cfg *cfg,
				 struct netlink_ext_ack *extack);
void xina_job_destroy(struct xina_job *job);
struct xina_job_cfg *xina_job_cfg_alloc(u16 workers);
void xina_job_cfg_replace(struct xina_job *job, struct xina_job_cfg *cfg);
void xina_job_stats(const struct xina_job *job, struct xina_counters *sum);
void xina_job_epoch(struct xina_job *job, u32 *epoch, u32 *run,
		    u16 *joined);
void xina_job_release(struct kobject *kobj);
s32 *xina_job_val(const struct xina_job *job, u32 idx);
int xina_pernet_init(void);
void xina_pernet_exit(void);

/* sysfs.c */
extern const struct kobj_type xina_job_ktype;
int xina_sysfs_init(void);
void xina_sysfs_exit(void);
int xina_sysfs_job_add(struct xina_job *job);
void xina_sysfs_job_del(struct xina_job *job);

/* netlink.c */
int xina_genl_init(void);
void xina_genl_exit(void);

/* kfunc.c */
int xina_kfunc_init(void);
void xina_kfunc_exit(void);

/*
 * simd.c (x86-64), between kernel_fpu_begin() and kernel_fpu_end(): SUM of
 * @count words of INT32, INT16 or INT8 @dtype (lane-wise wrapping).
 */
void xina_simd_add(u32 *val, const __be32 *el, u16 count, u8 dtype);

#endif /* _XINA_H */
