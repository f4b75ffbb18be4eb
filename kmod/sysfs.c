// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/xina: read-only state and counters, one value per file.
 * Configuration goes through generic netlink (netlink.c); the memory limit
 * is the module parameter mem_limit.  See
 * Documentation/ABI/testing/sysfs-kernel-xina.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kobject.h>
#include <linux/proc_ns.h>
#include <linux/sysfs.h>

#include "xina.h"

static struct kobject *xina_kobj;	/* /sys/kernel/xina */
static struct kobject *xina_jobs_kobj;	/* /sys/kernel/xina/jobs */

static ssize_t version_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%s\n", XINA_VERSION);
}

static ssize_t mem_limit_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lu\n", READ_ONCE(xina_mem_limit));
}

static ssize_t mem_used_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *buf)
{
	return sysfs_emit(buf, "%zu\n", xina_mem_used());
}

static ssize_t job_count_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", xina_jobs_count());
}

/*
 * The limits a new job is checked against, so that a tool can tell
 * before it changes anything whether a set of jobs will fit (xinactl
 * apply): a job is charged 2 * slots * (slot_version_bytes + 4 * elems).
 */
static ssize_t max_jobs_show(struct kobject *kobj, struct kobj_attribute *attr,
			     char *buf)
{
	return sysfs_emit(buf, "%u\n", XINA_MAX_JOBS);
}

static ssize_t max_slots_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", XINA_MAX_SLOTS);
}

static ssize_t slot_version_bytes_show(struct kobject *kobj,
				       struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%zu\n", sizeof(struct xina_slotv));
}

static struct kobj_attribute xina_attr_version = __ATTR_RO(version);
static struct kobj_attribute xina_attr_mem_limit = __ATTR_RO(mem_limit);
static struct kobj_attribute xina_attr_mem_used = __ATTR_RO(mem_used);
static struct kobj_attribute xina_attr_job_count = __ATTR_RO(job_count);
static struct kobj_attribute xina_attr_max_jobs = __ATTR_RO(max_jobs);
static struct kobj_attribute xina_attr_max_slots = __ATTR_RO(max_slots);
static struct kobj_attribute xina_attr_slot_version_bytes =
	__ATTR_RO(slot_version_bytes);

static struct attribute *xina_attrs[] = {
	&xina_attr_version.attr,
	&xina_attr_mem_limit.attr,
	&xina_attr_mem_used.attr,
	&xina_attr_job_count.attr,
	&xina_attr_max_jobs.attr,
	&xina_attr_max_slots.attr,
	&xina_attr_slot_version_bytes.attr,
	NULL,
};

static const struct attribute_group xina_group = {
	.attrs = xina_attrs,
};

/* Per job.  kobject_del() drains these before the job can be released. */
static struct xina_job *to_job(struct kobject *kobj)
{
	return container_of(kobj, struct xina_job, kobj);
}

#define XINA_JOB_SHOW(_name, _fmt, _expr)				\
static ssize_t _name##_show(struct kobject *kobj,			\
			    struct kobj_attribute *attr, char *buf)	\
{									\
	const struct xina_job *job = to_job(kobj);			\
									\
	return sysfs_emit(buf, _fmt "\n", _expr);			\
}									\
static struct kobj_attribute xina_job_attr_##_name = __ATTR_RO(_name)

XINA_JOB_SHOW(id, "%u", job->id);
XINA_JOB_SHOW(netns, "%u", job->net->ns.inum);
XINA_JOB_SHOW(workers, "%u", job->workers);
XINA_JOB_SHOW(slots, "%u", job->slots);
XINA_JOB_SHOW(elems, "%u", job->elems);
XINA_JOB_SHOW(mem_bytes, "%zu", job->mem_bytes);

/* Configured members: the cfg may be replaced concurrently, hence RCU. */
static ssize_t members_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	const struct xina_job *job = to_job(kobj);
	const struct xina_job_cfg *cfg;
	unsigned int n = 0, r;

	rcu_read_lock();
	cfg = rcu_dereference(job->cfg);
	for (r = 0; r < job->workers; r++)
		n += !!cfg->member[r].addr;
	rcu_read_unlock();
	return sysfs_emit(buf, "%u\n", n);
}

static struct kobj_attribute xina_job_attr_members = __ATTR_RO(members);

/* The current epoch, the run its joins named, the members joined. */
struct xina_job_join_view {
	u32	epoch;
	u32	run;
	u16	joined;
};

static struct xina_job_join_view xina_job_join_view(struct kobject *kobj)
{
	struct xina_job_join_view v;

	xina_job_epoch(to_job(kobj), &v.epoch, &v.run, &v.joined);
	return v;
}

static ssize_t epoch_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%u\n", xina_job_join_view(kobj).epoch);
}

static ssize_t run_show(struct kobject *kobj, struct kobj_attribute *attr,
			char *buf)
{
	return sysfs_emit(buf, "%u\n", xina_job_join_view(kobj).run);
}

static ssize_t joined_show(struct kobject *kobj, struct kobj_attribute *attr,
			   char *buf)
{
	return sysfs_emit(buf, "%u\n", xina_job_join_view(kobj).joined);
}

static struct kobj_attribute xina_job_attr_epoch = __ATTR_RO(epoch);
static struct kobj_attribute xina_job_attr_run = __ATTR_RO(run);
static struct kobj_attribute xina_job_attr_joined = __ATTR_RO(joined);

struct xina_counter_attr {
	struct kobj_attribute	attr;
	enum xina_stat		stat;
};

static ssize_t xina_stat_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	const struct xina_counter_attr *sa;
	struct xina_counters sum;

	sa = container_of(attr, struct xina_counter_attr, attr);
	xina_job_stats(to_job(kobj), &sum);
	return sysfs_emit(buf, "%llu\n", sum.c[sa->stat]);
}

#define XINA_COUNTER_ATTR(_name, _stat)					\
static struct xina_counter_attr xina_counter_attr_##_name = {		\
	.attr = __ATTR(_name, 0444, xina_stat_show, NULL),		\
	.stat = _stat,							\
}

XINA_COUNTER_ATTR(rx, XINA_STAT_RX);
XINA_COUNTER_ATTR(contributions, XINA_STAT_CONTRIB);
XINA_COUNTER_ATTR(completions, XINA_STAT_COMPLETE);
XINA_COUNTER_ATTR(retransmissions, XINA_STAT_RETRANS_ANSWERED);
XINA_COUNTER_ATTR(duplicates, XINA_STAT_DUP);
XINA_COUNTER_ATTR(stale, XINA_STAT_STALE);
XINA_COUNTER_ATTR(drop_key, XINA_STAT_DROP_KEY);
XINA_COUNTER_ATTR(drop_member, XINA_STAT_DROP_MEMBER);
XINA_COUNTER_ATTR(drop_range, XINA_STAT_DROP_RANGE);
XINA_COUNTER_ATTR(drop_op, XINA_STAT_DROP_OP);
XINA_COUNTER_ATTR(tx, XINA_STAT_TX);
XINA_COUNTER_ATTR(tx_unknown, XINA_STAT_TX_UNKNOWN);
XINA_COUNTER_ATTR(drop_auth, XINA_STAT_DROP_AUTH);
XINA_COUNTER_ATTR(drop_epoch, XINA_STAT_DROP_EPOCH);
XINA_COUNTER_ATTR(join, XINA_STAT_JOIN);
XINA_COUNTER_ATTR(join_refused, XINA_STAT_JOIN_REFUSED);
XINA_COUNTER_ATTR(join_stale, XINA_STAT_JOIN_STALE);
XINA_COUNTER_ATTR(epoch_new, XINA_STAT_EPOCH_NEW);

static struct attribute *xina_job_attrs[] = {
	&xina_job_attr_id.attr,
	&xina_job_attr_netns.attr,
	&xina_job_attr_workers.attr,
	&xina_job_attr_slots.attr,
	&xina_job_attr_elems.attr,
	&xina_job_attr_mem_bytes.attr,
	&xina_job_attr_members.attr,
	&xina_counter_attr_rx.attr.attr,
	&xina_counter_attr_contributions.attr.attr,
	&xina_counter_attr_completions.attr.attr,
	&xina_counter_attr_retransmissions.attr.attr,
	&xina_counter_attr_duplicates.attr.attr,
	&xina_counter_attr_stale.attr.attr,
	&xina_counter_attr_drop_key.attr.attr,
	&xina_counter_attr_drop_member.attr.attr,
	&xina_counter_attr_drop_range.attr.attr,
	&xina_counter_attr_drop_op.attr.attr,
	&xina_counter_attr_tx.attr.attr,
	&xina_counter_attr_tx_unknown.attr.attr,
	&xina_counter_attr_drop_auth.attr.attr,
	&xina_counter_attr_drop_epoch.attr.attr,
	&xina_counter_attr_join.attr.attr,
	&xina_counter_attr_join_refused.attr.attr,
	&xina_counter_attr_join_stale.attr.attr,
	&xina_counter_attr_epoch_new.attr.attr,
	&xina_job_attr_epoch.attr,
	&xina_job_attr_joined.attr,
	&xina_job_attr_run.attr,
	NULL,
};
ATTRIBUTE_GROUPS(xina_job);

const struct kobj_type xina_job_ktype = {
	.release	= xina_job_release,
	.sysfs_ops	= &kobj_sysfs_ops,
	.default_groups	= xina_job_groups,
};

/*
 * jobs/<id> for a job of the initial netns, jobs/<id>@<netns inode> for
 * the others: job ids are only unique within a netns, sysfs is global.
 */
int xina_sysfs_job_add(struct xina_job *job)
{
	if (net_eq(job->net, &init_net))
		return kobject_add(&job->kobj, xina_jobs_kobj, "%u", job->id);
	return kobject_add(&job->kobj, xina_jobs_kobj, "%u@%u", job->id,
			   job->net->ns.inum);
}

/*
 * Removes the job's directory; waits for readers of its files.  The job
 * keeps its reference, which xina_jobs_destroy() drops.
 */
void xina_sysfs_job_del(struct xina_job *job)
{
	kobject_del(&job->kobj);
}

int xina_sysfs_init(void)
{
	int err;

	xina_kobj = kobject_create_and_add("xina", kernel_kobj);
	if (!xina_kobj)
		return -ENOMEM;

	err = sysfs_create_group(xina_kobj, &xina_group);
	if (err)
		goto err_put;

	xina_jobs_kobj = kobject_create_and_add("jobs", xina_kobj);
	if (!xina_jobs_kobj) {
		err = -ENOMEM;
		goto err_group;
	}
	return 0;

err_group:
	sysfs_remove_group(xina_kobj, &xina_group);
err_put:
	kobject_put(xina_kobj);
	return err;
}

void xina_sysfs_exit(void)
{
	kobject_put(xina_jobs_kobj);
	sysfs_remove_group(xina_kobj, &xina_group);
	kobject_put(xina_kobj);
}
