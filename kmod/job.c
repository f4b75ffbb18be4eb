// SPDX-License-Identifier: GPL-2.0
/*
 * Jobs and their slot memory.
 *
 * Jobs live in a per-netns xarray keyed by job id.  Writers (netlink, netns
 * exit, module exit) hold xina_lock; the fast path (kfunc.c) only reads,
 * under RCU.  A job's slot memory is charged against the global
 * xina_mem_limit when the job is created, and freed and uncharged when it
 * is deleted, after a grace period: a kfunc call that found the job before
 * it was unpublished may still be adding into its slots until then.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/overflow.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/vmalloc.h>
#include <net/netns/generic.h>

#include "xina.h"

/* Serialises changes of the job tables, xina_mem and xina_njobs. */
DEFINE_MUTEX(xina_lock);
unsigned int xina_net_id __read_mostly;

/* Under xina_lock; read locklessly by sysfs (a snapshot is good enough). */
static size_t xina_mem;
static unsigned int xina_njobs;

size_t xina_mem_used(void)
{
	return READ_ONCE(xina_mem);
}

unsigned int xina_jobs_count(void)
{
	return READ_ONCE(xina_njobs);
}

struct xina_net *xina_net(const struct net *net)
{
	return net_generic(net, xina_net_id);
}

/* Caller holds xina_lock or rcu_read_lock. */
struct xina_job *xina_job_find(const struct net *net, u32 id)
{
	return xa_load(&xina_net(net)->jobs, id);
}

s32 *xina_job_val(const struct xina_job *job, u32 idx)
{
	return job->val + (size_t)idx * job->elems;
}

/* Bytes of slot memory a job of this shape holds; 0 on overflow. */
static size_t xina_job_mem(const struct xina_job_params *p)
{
	size_t nv = (size_t)p->slots * XINA_SLOT_VERSIONS;
	size_t per_v;

	if (check_add_overflow(sizeof(struct xina_slotv),
			       array_size(p->elems, sizeof(s32)), &per_v))
		return 0;
	return array_size(nv, per_v);
}

struct xina_job_cfg *xina_job_cfg_alloc(u16 workers)
{
	return kzalloc(struct_size_t(struct xina_job_cfg, member, workers),
		       GFP_KERNEL);
}

void xina_job_cfg_replace(struct xina_job *job, struct xina_job_cfg *cfg)
{
	struct xina_job_cfg *old;

	old = rcu_replace_pointer(job->cfg, cfg, lockdep_is_held(&xina_lock));
	kfree_rcu(old, rcu);
}

void xina_job_stats(const struct xina_job *job, struct xina_counters *sum)
{
	int cpu, i;

	memset(sum, 0, sizeof(*sum));
	for_each_possible_cpu(cpu) {
		const struct xina_counters *c = per_cpu_ptr(job->stats, cpu);

		for (i = 0; i < XINA_STAT_MAX; i++)
			sum->c[i] += READ_ONCE(c->c[i]);
	}
}

/*
 * The job's current epoch, the run its joins named and how many
 * members joined it, consistent with each other (a join may open the next
 * epoch meanwhile).
 */
void xina_job_epoch(struct xina_job *job, u32 *epoch, u32 *run, u16 *joined)
{
	unsigned int i, n = 0;

	spin_lock_bh(&job->join_lock);
	*epoch = job->join.epoch;
	*run = job->join.run;
	for (i = 0; i < XINA_JOIN_WORDS; i++)
		n += hweight64(job->join.joined[i]);
	spin_unlock_bh(&job->join_lock);
	*joined = n;
}

/* What the fast path writes: slots, values, member locations, joins. */
static void xina_job_free_slots(struct xina_job *job)
{
	kfree(job->jmbr);
	job->jmbr = NULL;
	kfree(job->loc);
	job->loc = NULL;
	kvfree(job->val);
	job->val = NULL;
	kvfree(job->slotv);
	job->slotv = NULL;
}

static void xina_job_free_rcu(struct rcu_head *rcu)
{
	struct xina_job *job = container_of(rcu, struct xina_job, rcu);

	/* No reader left: rcu_dereference_protected with "1" is exact. */
	kfree(rcu_dereference_protected(job->cfg, 1));
	free_percpu(job->stats);
	xina_job_free_slots(job);	/* a job that was never published */
	kfree(job);
}

/*
 * kobject release of a job: the last sysfs reference is gone.  A deleted
 * job's slot memory is gone already (xina_jobs_destroy()); the rest goes
 * after a grace period too, which xina_exit() waits for with
 * rcu_barrier().
 */
void xina_job_release(struct kobject *kobj)
{
	struct xina_job *job = container_of(kobj, struct xina_job, kobj);

	call_rcu(&job->rcu, xina_job_free_rcu);
}

static int xina_job_alloc_mem(struct xina_job *job)
{
	u32 nv = job->slots * XINA_SLOT_VERSIONS, i;
	u64 now;

	job->slotv = kvcalloc(nv, sizeof(*job->slotv), GFP_KERNEL_ACCOUNT);
	if (!job->slotv)
		return -ENOMEM;
	for (i = 0; i < nv; i++)
		spin_lock_init(&job->slotv[i].lock);

	job->val = kvcalloc((size_t)nv * job->elems, sizeof(s32),
			    GFP_KERNEL_ACCOUNT);
	if (!job->val)
		return -ENOMEM;

	job->stats = alloc_percpu(struct xina_counters);
	if (!job->stats)
		return -ENOMEM;

	seqlock_init(&job->loc_lock);
	job->loc = kcalloc(job->workers, sizeof(*job->loc), GFP_KERNEL_ACCOUNT);
	if (!job->loc)
		return -ENOMEM;

	/* A random epoch, never 0 (the epoch of a slot version never used). */
	spin_lock_init(&job->join_lock);
	do
		job->join.epoch = get_random_u32();
	while (!job->join.epoch);
	job->jmbr = kcalloc(job->workers, sizeof(*job->jmbr),
			    GFP_KERNEL_ACCOUNT);
	if (!job->jmbr)
		return -ENOMEM;
	/* a join captured from an earlier job of this id and secret is stale */
	now = ktime_get_real_ns();
	for (i = 0; i < job->workers; i++)
		xina_join_mbr_start(&job->jmbr[i], now);
	return 0;
}

/*
 * Create job @p in @net with the key and members in @cfg (which the job
 * owns from now on, also on failure).  Called under xina_lock.
 */
struct xina_job *xina_job_create(struct net *net,
				 const struct xina_job_params *p,
				 struct xina_job_cfg *cfg,
				 struct netlink_ext_ack *extack)
{
	struct xina_net *xn = xina_net(net);
	size_t mem, limit;
	struct xina_job *job;
	int err;

	lockdep_assert_held(&xina_lock);

	if (xa_load(&xn->jobs, p->id)) {
		NL_SET_ERR_MSG_MOD(extack, "job exists");
		err = -EEXIST;
		goto err_cfg;
	}
	if (xina_njobs >= XINA_MAX_JOBS) {
		NL_SET_ERR_MSG_MOD(extack, "too many jobs");
		err = -ENOSPC;
		goto err_cfg;
	}
	limit = READ_ONCE(xina_mem_limit);
	mem = xina_job_mem(p);
	if (!mem || xina_mem > limit || mem > limit - xina_mem) {
		NL_SET_ERR_MSG_MOD(extack, "slot memory would exceed mem_limit");
		err = -ENOMEM;
		goto err_cfg;
	}

	job = kzalloc(sizeof(*job), GFP_KERNEL);
	if (!job) {
		err = -ENOMEM;
		goto err_cfg;
	}
	/* From here on the job is freed through its kobject release. */
	kobject_init(&job->kobj, &xina_job_ktype);
	job->net = net;
	job->id = p->id;
	job->workers = p->workers;
	job->elems = p->elems;
	job->slots = p->slots;
	job->mem_bytes = mem;
	RCU_INIT_POINTER(job->cfg, cfg);

	err = xina_job_alloc_mem(job);
	if (err) {
		NL_SET_ERR_MSG_MOD(extack, "cannot allocate slot memory");
		goto err_put;
	}
	err = xina_sysfs_job_add(job);
	if (err) {
		NL_SET_ERR_MSG_MOD(extack, "cannot create the sysfs directory of the job");
		goto err_put;
	}
	/* Publish last: the fast path sees a fully initialised job. */
	err = xa_insert(&xn->jobs, job->id, job, GFP_KERNEL);
	if (err)
		goto err_sysfs;

	WRITE_ONCE(xina_mem, xina_mem + mem);
	WRITE_ONCE(xina_njobs, xina_njobs + 1);
	return job;

err_sysfs:
	kobject_del(&job->kobj);
err_put:
	kobject_put(&job->kobj);
	return ERR_PTR(err);
err_cfg:
	kfree(cfg);
	return ERR_PTR(err);
}

/*
 * Delete the jobs on @list (linked through ->dead): unpublish them, so
 * that no lookup finds them and their sysfs directories are gone, wait for
 * a grace period, after which no kfunc call that found one before can
 * still be using its slots (the kfuncs hold rcu_read_lock() from lookup to
 * return), then free their slot memory and only then uncharge it: neither
 * the memory nor its share of mem_limit is reused while a packet may still
 * be adding into it, and mem_used never shows less than the jobs hold.
 * One grace period for all of them.  Called under xina_lock.
 */
static void xina_jobs_destroy(struct list_head *list)
{
	struct xina_job *job, *tmp;

	lockdep_assert_held(&xina_lock);

	if (list_empty(list))
		return;
	list_for_each_entry(job, list, dead) {
		xa_erase(&xina_net(job->net)->jobs, job->id);
		xina_sysfs_job_del(job);
	}
	synchronize_rcu();
	list_for_each_entry_safe(job, tmp, list, dead) {
		list_del(&job->dead);
		xina_job_free_slots(job);
		WRITE_ONCE(xina_mem, xina_mem - job->mem_bytes);
		WRITE_ONCE(xina_njobs, xina_njobs - 1);
		kobject_put(&job->kobj);
	}
}

/*
 * Delete @job; returns once its slot memory is freed and uncharged (one
 * RCU grace period).  Called under xina_lock.
 */
void xina_job_destroy(struct xina_job *job)
{
	LIST_HEAD(list);

	list_add(&job->dead, &list);
	xina_jobs_destroy(&list);
}

static int __net_init xina_net_init(struct net *net)
{
	xa_init(&xina_net(net)->jobs);
	return 0;
}

/* The netns goes away: so do its jobs. */
static void __net_exit xina_net_exit(struct net *net)
{
	struct xina_net *xn = xina_net(net);
	struct xina_job *job;
	unsigned long id;
	LIST_HEAD(list);

	mutex_lock(&xina_lock);
	xa_for_each(&xn->jobs, id, job)
		list_add_tail(&job->dead, &list);
	xina_jobs_destroy(&list);
	mutex_unlock(&xina_lock);
	xa_destroy(&xn->jobs);
}

static struct pernet_operations xina_net_ops = {
	.init	= xina_net_init,
	.exit	= xina_net_exit,
	.id	= &xina_net_id,
	.size	= sizeof(struct xina_net),
};

int xina_pernet_init(void)
{
	return register_pernet_subsys(&xina_net_ops);
}

void xina_pernet_exit(void)
{
	unregister_pernet_subsys(&xina_net_ops);
}
