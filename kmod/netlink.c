// SPDX-License-Identifier: GPL-2.0
/*
 * Generic netlink family "xina": create, delete, get (dump), change jobs,
 * read their counters and their rounds in progress.  The policies below do all the validation they
 * can (types, exact lengths, ranges, flag masks); the handlers check what
 * a policy cannot express (required attributes, ranks against the job's
 * worker count) and say what is wrong through extack.  Documented in
 * include/uapi/linux/xina.h and Documentation/netlink/specs/xina.yaml.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>
#include <net/genetlink.h>
#include <net/netlink.h>
#include <net/sock.h>

#include "xina.h"
#include "xina_auth.h"

/* Not const: the 6.1 policy holds a non-const pointer to it. */
static struct netlink_range_validation xina_slots_range __ro_after_init = {
	.min = 1,
	.max = XINA_MAX_SLOTS,
};

static const struct nla_policy xina_member_policy[XINA_MEMBER_A_MAX + 1] = {
	[XINA_MEMBER_A_RANK]	= NLA_POLICY_MAX(NLA_U16, XINA_MAX_WORKERS - 1),
	[XINA_MEMBER_A_ADDR]	= NLA_POLICY_EXACT_LEN(sizeof(__be32)),
	[XINA_MEMBER_A_PORT]	= { .type = NLA_U16 },
};

/*
 * Attributes only the kernel sends (MEM_BYTES, STATS, RX_CPU, EPOCH,
 * JOINED, ROUND, RUN) are rejected.
 */
#define XINA_KEY_REJECTED \
	"xina: keys are not sent in clear any more: use the job secret"

static const struct nla_policy xina_policy[XINA_A_MAX + 1] = {
	[XINA_A_JOB_ID]		= NLA_POLICY_MIN(NLA_U32, 1),
	[XINA_A_JOB_WORKERS]	= NLA_POLICY_RANGE(NLA_U16, 1, XINA_MAX_WORKERS),
	[XINA_A_JOB_SLOTS]	= NLA_POLICY_FULL_RANGE(NLA_U32, &xina_slots_range),
	[XINA_A_JOB_ELEMS]	= NLA_POLICY_RANGE(NLA_U16, 1, XINA_MAX_ELEMS),
	[XINA_A_JOB_KEY]	= { .type = NLA_REJECT,
				    .reject_message = XINA_KEY_REJECTED },
	[XINA_A_JOB_SECRET]	= NLA_POLICY_EXACT_LEN(XINA_SECRET_BYTES),
	[XINA_A_JOB_FLAGS]	= NLA_POLICY_MASK(NLA_U32, XINA_JOB_F_ALL),
	[XINA_A_JOB_MEMBER]	= NLA_POLICY_NESTED(xina_member_policy),
	[XINA_A_JOB_MEM_BYTES]	= { .type = NLA_REJECT },
	[XINA_A_JOB_STATS]	= { .type = NLA_REJECT },
	[XINA_A_JOB_RX_CPU]	= { .type = NLA_REJECT },
	[XINA_A_JOB_EPOCH]	= { .type = NLA_REJECT },
	[XINA_A_JOB_JOINED]	= { .type = NLA_REJECT },
	[XINA_A_JOB_ROUND]	= { .type = NLA_REJECT },
	[XINA_A_JOB_RUN]	= { .type = NLA_REJECT },
};

static struct genl_family xina_genl_family;

/* A missing required attribute: say which, by message and by type. */
#define XINA_REQUIRE(info, attr, msg) ({				\
	struct genl_info *__ri = (info);				\
	bool __missing = GENL_REQ_ATTR_CHECK(__ri, attr);		\
									\
	if (__missing)							\
		NL_SET_ERR_MSG_MOD(__ri->extack, msg);			\
	__missing;							\
})

static struct xina_job *xina_nl_job(struct genl_info *info)
{
	struct nlattr *id = info->attrs[XINA_A_JOB_ID];
	struct xina_job *job;

	job = xina_job_find(genl_info_net(info), nla_get_u32(id));
	if (!job) {
		NL_SET_ERR_MSG_MOD(info->extack, "job does not exist");
		NL_SET_BAD_ATTR(info->extack, id);
	}
	return job;
}

static int xina_nl_member(const struct nlattr *nest, u16 workers,
			  unsigned long *given, struct xina_job_cfg *cfg,
			  struct netlink_ext_ack *extack)
{
	struct nlattr *tb[XINA_MEMBER_A_MAX + 1];
	struct xina_member_cfg *m;
	u16 rank;
	int err;

	err = nla_parse_nested(tb, XINA_MEMBER_A_MAX, nest, xina_member_policy,
			       extack);
	if (err)
		return err;
	if (NL_REQ_ATTR_CHECK(extack, nest, tb, XINA_MEMBER_A_RANK)) {
		NL_SET_ERR_MSG_MOD(extack, "member without rank");
		return -EINVAL;
	}
	if (NL_REQ_ATTR_CHECK(extack, nest, tb, XINA_MEMBER_A_ADDR)) {
		NL_SET_ERR_MSG_MOD(extack, "member without address");
		return -EINVAL;
	}
	rank = nla_get_u16(tb[XINA_MEMBER_A_RANK]);
	if (rank >= workers) {
		NL_SET_ERR_MSG_MOD(extack, "member rank not below the job's workers");
		NL_SET_BAD_ATTR(extack, tb[XINA_MEMBER_A_RANK]);
		return -ERANGE;
	}
	if (__test_and_set_bit(rank, given)) {
		NL_SET_ERR_MSG_MOD(extack, "member rank given twice");
		NL_SET_BAD_ATTR(extack, tb[XINA_MEMBER_A_RANK]);
		return -EINVAL;
	}
	m = &cfg->member[rank];
	m->addr = nla_get_in_addr(tb[XINA_MEMBER_A_ADDR]);
	if (!m->addr) {
		NL_SET_ERR_MSG_MOD(extack, "member address 0.0.0.0");
		NL_SET_BAD_ATTR(extack, tb[XINA_MEMBER_A_ADDR]);
		return -EINVAL;
	}
	m->port = 0;
	if (tb[XINA_MEMBER_A_PORT])
		m->port = htons(nla_get_u16(tb[XINA_MEMBER_A_PORT]));
	return 0;
}

/*
 * The keys of @cfg, derived from the secret in @attr for job @id: each
 * rank's, the results' and the NH key.  The secret is not kept.
 */
static void xina_nl_keys(struct xina_job_cfg *cfg, const struct nlattr *attr,
			 u32 id, u16 workers)
{
	const u8 *secret = nla_data(attr);
	u16 r;

	for (r = 0; r < workers; r++)
		xina_derive_key(secret, XINA_LABEL_MEMBER, id, r,
				cfg->member[r].key);
	xina_derive_key(secret, XINA_LABEL_RESULT, id, 0, cfg->kres);
	xina_derive_nh(secret, id, cfg->nhk, XINA_MAX_ELEMS);
}

/* Apply every XINA_A_JOB_MEMBER of the request to @cfg. */
static int xina_nl_members(struct genl_info *info, u16 workers,
			   struct xina_job_cfg *cfg)
{
	DECLARE_BITMAP(given, XINA_MAX_WORKERS) = {};
	const struct nlattr *a;
	int rem, err;

	nla_for_each_attr(a, genlmsg_data(info->genlhdr),
			  genlmsg_len(info->genlhdr), rem) {
		if (nla_type(a) != XINA_A_JOB_MEMBER)
			continue;
		err = xina_nl_member(a, workers, given, cfg, info->extack);
		if (err)
			return err;
	}
	return 0;
}

static int xina_nl_job_new(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **attrs = info->attrs;
	struct xina_job_params p = {};
	struct xina_job_cfg *cfg;
	struct xina_job *job;
	int err;

	if (XINA_REQUIRE(info, XINA_A_JOB_ID, "missing job id") ||
	    XINA_REQUIRE(info, XINA_A_JOB_WORKERS, "missing number of workers") ||
	    XINA_REQUIRE(info, XINA_A_JOB_SLOTS, "missing number of slots") ||
	    XINA_REQUIRE(info, XINA_A_JOB_ELEMS, "missing elements per slot") ||
	    XINA_REQUIRE(info, XINA_A_JOB_SECRET, "missing job secret"))
		return -EINVAL;

	p.id = nla_get_u32(attrs[XINA_A_JOB_ID]);
	p.workers = nla_get_u16(attrs[XINA_A_JOB_WORKERS]);
	p.slots = nla_get_u32(attrs[XINA_A_JOB_SLOTS]);
	p.elems = nla_get_u16(attrs[XINA_A_JOB_ELEMS]);

	cfg = xina_job_cfg_alloc(p.workers);
	if (!cfg)
		return -ENOMEM;
	xina_nl_keys(cfg, attrs[XINA_A_JOB_SECRET], p.id, p.workers);
	if (attrs[XINA_A_JOB_FLAGS])
		cfg->flags = nla_get_u32(attrs[XINA_A_JOB_FLAGS]);
	err = xina_nl_members(info, p.workers, cfg);
	if (err) {
		kfree(cfg);
		return err;
	}

	mutex_lock(&xina_lock);
	job = xina_job_create(genl_info_net(info), &p, cfg, info->extack);
	mutex_unlock(&xina_lock);
	if (IS_ERR(job)) {
		if (PTR_ERR(job) == -EEXIST)
			NL_SET_BAD_ATTR(info->extack, attrs[XINA_A_JOB_ID]);
		return PTR_ERR(job);
	}
	return 0;
}

/*
 * A command that names a job and takes nothing else (JOB_DEL, a JOB_GET or
 * STATS_GET of one job), or a dump of every job (no attribute at all):
 * any other attribute meant something the command does not do, and is
 * refused by name rather than ignored (a dump with JOB_ID would list
 * every job, not that one).
 */
#define XINA_NL_ONLY(attrs, keep, extack, msg) ({			\
	struct netlink_ext_ack *__x = (extack);				\
	struct nlattr **__a = (attrs);					\
	int __i, __err = 0;						\
									\
	for (__i = XINA_A_UNSPEC + 1; __i <= XINA_A_MAX; __i++) {	\
		if (__i == (keep) || !__a[__i])				\
			continue;					\
		NL_SET_ERR_MSG_MOD(__x, msg);				\
		NL_SET_BAD_ATTR(__x, __a[__i]);				\
		__err = -EINVAL;					\
		break;							\
	}								\
	__err;								\
})

#define XINA_ONLY_ID_MSG "attribute not taken here: this command names a job (JOB_ID) and nothing else"

/* A command of one job: @attrs hold its JOB_ID and nothing else. */
static int xina_nl_one_job(struct nlattr **attrs,
			   struct netlink_ext_ack *extack)
{
	if (NL_REQ_ATTR_CHECK(extack, NULL, attrs, XINA_A_JOB_ID)) {
		NL_SET_ERR_MSG_MOD(extack, "missing job id");
		return -EINVAL;
	}
	return XINA_NL_ONLY(attrs, XINA_A_JOB_ID, extack, XINA_ONLY_ID_MSG);
}

static int xina_nl_job_del(struct sk_buff *skb, struct genl_info *info)
{
	struct xina_job *job;
	int err = 0;

	err = xina_nl_one_job(info->attrs, info->extack);
	if (err)
		return err;

	mutex_lock(&xina_lock);
	job = xina_nl_job(info);
	if (job)
		xina_job_destroy(job);
	else
		err = -ENOENT;
	mutex_unlock(&xina_lock);
	return err;
}

static int xina_nl_job_set(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr **attrs = info->attrs;
	struct xina_job_cfg *cfg;
	struct xina_job *job;
	size_t size;
	int err;

	if (XINA_REQUIRE(info, XINA_A_JOB_ID, "missing job id"))
		return -EINVAL;
	if (attrs[XINA_A_JOB_WORKERS] || attrs[XINA_A_JOB_SLOTS] ||
	    attrs[XINA_A_JOB_ELEMS]) {
		NL_SET_ERR_MSG_MOD(info->extack, "the shape of a job cannot change");
		NL_SET_BAD_ATTR(info->extack, attrs[XINA_A_JOB_WORKERS] ?:
				attrs[XINA_A_JOB_SLOTS] ?: attrs[XINA_A_JOB_ELEMS]);
		return -EOPNOTSUPP;
	}
	if (!attrs[XINA_A_JOB_SECRET] && !attrs[XINA_A_JOB_MEMBER] &&
	    !attrs[XINA_A_JOB_FLAGS]) {
		NL_SET_ERR_MSG_MOD(info->extack, "nothing to change: no secret, member or flags");
		return -EINVAL;
	}

	mutex_lock(&xina_lock);
	job = xina_nl_job(info);
	if (!job) {
		err = -ENOENT;
		goto out_unlock;
	}
	cfg = xina_job_cfg_alloc(job->workers);
	if (!cfg) {
		err = -ENOMEM;
		goto out_unlock;
	}
	/* Copy, change, publish: the fast path never sees a half update. */
	size = struct_size(cfg, member, job->workers);
	memcpy(cfg, rcu_dereference_protected(job->cfg,
					      lockdep_is_held(&xina_lock)),
	       size);
	if (attrs[XINA_A_JOB_SECRET])
		xina_nl_keys(cfg, attrs[XINA_A_JOB_SECRET], job->id,
			     job->workers);
	if (attrs[XINA_A_JOB_FLAGS])
		cfg->flags = nla_get_u32(attrs[XINA_A_JOB_FLAGS]);
	err = xina_nl_members(info, job->workers, cfg);
	if (err) {
		kfree(cfg);
		goto out_unlock;
	}
	xina_job_cfg_replace(job, cfg);
out_unlock:
	mutex_unlock(&xina_lock);
	return err;
}

static size_t xina_nl_stats_size(void)
{
	return nla_total_size(0) +
	       XINA_STAT_MAX * nla_total_size_64bit(sizeof(u64)) +
	       nla_total_size(0) +
	       nr_cpu_ids * nla_total_size_64bit(sizeof(u64));
}

static size_t xina_nl_job_size(const struct xina_job *job)
{
	size_t member = nla_total_size(0) + nla_total_size(sizeof(u16)) +
			nla_total_size(sizeof(__be32)) +
			nla_total_size(sizeof(u16));

	return nla_total_size(sizeof(u32)) +		/* ID */
	       nla_total_size(sizeof(u16)) +		/* WORKERS */
	       nla_total_size(sizeof(u32)) +		/* SLOTS */
	       nla_total_size(sizeof(u16)) +		/* ELEMS */
	       nla_total_size(sizeof(u32)) +		/* FLAGS */
	       nla_total_size_64bit(sizeof(u64)) +	/* MEM_BYTES */
	       nla_total_size(sizeof(u32)) +		/* EPOCH */
	       nla_total_size(sizeof(u16)) +		/* JOINED */
	       nla_total_size(sizeof(u32)) +		/* RUN */
	       job->workers * member + xina_nl_stats_size();
}

static int xina_nl_put_stats(struct sk_buff *skb, const struct xina_job *job)
{
	struct xina_counters sum;
	struct nlattr *nest;
	int i;

	xina_job_stats(job, &sum);
	nest = nla_nest_start(skb, XINA_A_JOB_STATS);
	if (!nest)
		return -EMSGSIZE;
	for (i = 0; i < XINA_STAT_MAX; i++)
		if (nla_put_u64_64bit(skb, i + 1, sum.c[i], XINA_STAT_A_UNSPEC))
			goto err_cancel;
	nla_nest_end(skb, nest);
	return 0;

err_cancel:
	nla_nest_cancel(skb, nest);
	return -EMSGSIZE;
}

/* Packets per CPU: shows whether RSS (or veth senders) spread the job. */
static int xina_nl_put_rx_cpu(struct sk_buff *skb, const struct xina_job *job)
{
	const struct xina_counters *c;
	struct nlattr *nest;
	int cpu;

	nest = nla_nest_start(skb, XINA_A_JOB_RX_CPU);
	if (!nest)
		return -EMSGSIZE;
	for_each_possible_cpu(cpu) {
		c = per_cpu_ptr(job->stats, cpu);
		if (nla_put_u64_64bit(skb, cpu + 1, READ_ONCE(c->c[XINA_STAT_RX]),
				      0))
			goto err_cancel;
	}
	nla_nest_end(skb, nest);
	return 0;

err_cancel:
	nla_nest_cancel(skb, nest);
	return -EMSGSIZE;
}

static int xina_nl_put_members(struct sk_buff *skb, const struct xina_job *job,
			       const struct xina_job_cfg *cfg)
{
	const struct xina_member_cfg *m;
	struct nlattr *nest;
	u16 r;

	for (r = 0; r < job->workers; r++) {
		m = &cfg->member[r];
		if (!m->addr)
			continue;
		nest = nla_nest_start(skb, XINA_A_JOB_MEMBER);
		if (!nest)
			return -EMSGSIZE;
		if (nla_put_u16(skb, XINA_MEMBER_A_RANK, r) ||
		    nla_put_in_addr(skb, XINA_MEMBER_A_ADDR, m->addr) ||
		    nla_put_u16(skb, XINA_MEMBER_A_PORT, ntohs(m->port))) {
			nla_nest_cancel(skb, nest);
			return -EMSGSIZE;
		}
		nla_nest_end(skb, nest);
	}
	return 0;
}

static int xina_nl_put_config(struct sk_buff *skb, struct xina_job *job)
{
	const struct xina_job_cfg *cfg;
	u32 epoch, run;
	u16 joined;

	cfg = rcu_dereference_protected(job->cfg, lockdep_is_held(&xina_lock));
	xina_job_epoch(job, &epoch, &run, &joined);
	if (nla_put_u16(skb, XINA_A_JOB_WORKERS, job->workers) ||
	    nla_put_u32(skb, XINA_A_JOB_SLOTS, job->slots) ||
	    nla_put_u16(skb, XINA_A_JOB_ELEMS, job->elems) ||
	    nla_put_u32(skb, XINA_A_JOB_FLAGS, cfg->flags) ||
	    nla_put_u64_64bit(skb, XINA_A_JOB_MEM_BYTES, job->mem_bytes,
			      XINA_A_PAD) ||
	    nla_put_u32(skb, XINA_A_JOB_EPOCH, epoch) ||
	    nla_put_u16(skb, XINA_A_JOB_JOINED, joined) ||
	    nla_put_u32(skb, XINA_A_JOB_RUN, run))
		return -EMSGSIZE;
	return xina_nl_put_members(skb, job, cfg);
}

/*
 * One job in one message: the whole job for JOB_GET, its id and counters
 * for STATS_GET.  Called under xina_lock.
 */
static int xina_nl_fill(struct sk_buff *skb, struct xina_job *job,
			u32 portid, u32 seq, int flags, u8 cmd)
{
	void *hdr;

	hdr = genlmsg_put(skb, portid, seq, &xina_genl_family, flags, cmd);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u32(skb, XINA_A_JOB_ID, job->id))
		goto err_cancel;
	if (cmd == XINA_CMD_JOB_GET && xina_nl_put_config(skb, job))
		goto err_cancel;
	if (xina_nl_put_stats(skb, job))
		goto err_cancel;
	if (cmd == XINA_CMD_STATS_GET && xina_nl_put_rx_cpu(skb, job))
		goto err_cancel;
	genlmsg_end(skb, hdr);
	return 0;

err_cancel:
	genlmsg_cancel(skb, hdr);
	return -EMSGSIZE;
}

static int xina_nl_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	u8 cmd = info->genlhdr->cmd;
	struct xina_job *job;
	struct sk_buff *msg;
	int err;

	err = xina_nl_one_job(info->attrs, info->extack);
	if (err)
		return err;

	mutex_lock(&xina_lock);
	job = xina_nl_job(info);
	if (!job) {
		err = -ENOENT;
		goto out_unlock;
	}
	msg = genlmsg_new(xina_nl_job_size(job), GFP_KERNEL);
	if (!msg) {
		err = -ENOMEM;
		goto out_unlock;
	}
	err = xina_nl_fill(msg, job, info->snd_portid, info->snd_seq, 0, cmd);
	mutex_unlock(&xina_lock);
	if (err) {
		nlmsg_free(msg);
		return err;
	}
	return genlmsg_reply(msg, info);

out_unlock:
	mutex_unlock(&xina_lock);
	return err;
}

/* The attributes of a dump's request (6.1 has no genl_info for a dump). */
static struct nlattr **xina_nl_dump_attrs(struct netlink_callback *cb)
{
#ifdef XINA_HAVE_GENL_INFO_DUMP
	return genl_info_dump(cb)->attrs;
#else
	return genl_dumpit_info(cb)->attrs;
#endif
}

/*
 * Dump the jobs of the caller's netns in id order.  cb->args[0] is the
 * next id to dump, so a dump resumes where the previous skb filled up;
 * cb->args[1] is set once job U32_MAX is in (the next id would wrap to 0
 * where unsigned long has 32 bits, and the dump start over).
 */
static int xina_nl_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct xina_net *xn = xina_net(sock_net(skb->sk));
	u8 cmd = genl_dumpit_info(cb)->op.cmd;
	unsigned long id = cb->args[0];
	struct xina_job *job;
	int err = 0;

	if (cb->args[1])
		return 0;
	if (!id) {
		err = XINA_NL_ONLY(xina_nl_dump_attrs(cb), 0, cb->extack,
				   "a dump lists every job and takes no attribute: one job's is a request without NLM_F_DUMP");
		if (err)
			return err;
	}
	mutex_lock(&xina_lock);
	while ((job = xa_find(&xn->jobs, &id, U32_MAX, XA_PRESENT))) {
		err = xina_nl_fill(skb, job, NETLINK_CB(cb->skb).portid,
				   cb->nlh->nlmsg_seq, NLM_F_MULTI, cmd);
		if (err)
			break;
		if (id == U32_MAX) {
			cb->args[1] = 1;
			break;
		}
		id++;
	}
	mutex_unlock(&xina_lock);
	cb->args[0] = id;

	/* A job that does not fit in an empty skb would loop forever. */
	if (err && !skb->len)
		return err;
	return skb->len;
}

/* A round in progress on one slot version, as ROUNDS_GET reports it. */
struct xina_nl_round {
	u32	round;
	u16	claimed;
	u16	count;
	u8	dtype;
	u8	op;
	u8	seen[XINA_ROUND_SEEN_BYTES];	/* XINA_ROUND_A_SEEN's layout */
};

/*
 * Whether slot version @idx of @job is in a round of @epoch that has
 * contributions and no result (the map backend's definition of open),
 * and if so that round in @rd.  Read under the version's lock, as the
 * fast path writes it, so that round, count and seen bits are of one
 * moment; _bh: the fast path takes it in softirq context.  An epoch is
 * never 0, the epoch of a version never used.
 */
static bool xina_nl_round_get(struct xina_job *job, u32 idx, u32 epoch,
			      struct xina_nl_round *rd)
{
	DECLARE_BITMAP(seen, XINA_MAX_WORKERS);
	struct xina_slotv *sv = &job->slotv[idx];
	unsigned int r;
	bool open;

	spin_lock_bh(&sv->lock);
	open = sv->epoch == epoch && sv->claimed && !sv->complete;
	if (open) {
		rd->round = sv->round;
		rd->claimed = sv->claimed;
		rd->count = sv->count;
		rd->dtype = sv->dtype;
		rd->op = sv->op;
		bitmap_copy(seen, sv->seen, XINA_MAX_WORKERS);
	}
	spin_unlock_bh(&sv->lock);
	if (!open)
		return false;

	/* Bytes of bits, whatever the size and byte order of a long. */
	memset(rd->seen, 0, sizeof(rd->seen));
	for_each_set_bit(r, seen, XINA_MAX_WORKERS)
		rd->seen[r / 8] |= 1 << (r % 8);
	return true;
}

static int xina_nl_put_round(struct sk_buff *skb, u32 idx,
			     const struct xina_nl_round *rd)
{
	struct nlattr *nest;

	nest = nla_nest_start(skb, XINA_A_JOB_ROUND);
	if (!nest)
		return -EMSGSIZE;
	if (nla_put_u32(skb, XINA_ROUND_A_SLOT, idx / XINA_SLOT_VERSIONS) ||
	    nla_put_u8(skb, XINA_ROUND_A_VERSION, idx % XINA_SLOT_VERSIONS) ||
	    nla_put_u32(skb, XINA_ROUND_A_ROUND, rd->round) ||
	    nla_put_u16(skb, XINA_ROUND_A_IN, rd->claimed) ||
	    nla_put_u16(skb, XINA_ROUND_A_COUNT, rd->count) ||
	    nla_put_u8(skb, XINA_ROUND_A_DTYPE, rd->dtype) ||
	    nla_put_u8(skb, XINA_ROUND_A_OP, rd->op) ||
	    nla_put(skb, XINA_ROUND_A_SEEN, sizeof(rd->seen), rd->seen)) {
		nla_nest_cancel(skb, nest);
		return -EMSGSIZE;
	}
	nla_nest_end(skb, nest);
	return 0;
}

/*
 * The rounds of @job's @epoch in progress from slot version *@idx on, in
 * one message of @skb, as many as fit; *@idx is left at the first one
 * not looked at.  Called under xina_lock (the job stays).
 */
static int xina_nl_rounds_fill(struct sk_buff *skb, struct netlink_callback *cb,
			       struct xina_job *job, u32 epoch, u32 *idx)
{
	u32 nv = job->slots * XINA_SLOT_VERSIONS;
	struct xina_nl_round rd;
	unsigned int n = 0;
	void *hdr;

	hdr = genlmsg_put(skb, NETLINK_CB(cb->skb).portid, cb->nlh->nlmsg_seq,
			  &xina_genl_family, NLM_F_MULTI, XINA_CMD_ROUNDS_GET);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u32(skb, XINA_A_JOB_ID, job->id) ||
	    nla_put_u32(skb, XINA_A_JOB_EPOCH, epoch))
		goto err_cancel;
	for (; *idx < nv; ++*idx) {
		cond_resched();	/* up to 2 * 65536 versions, a mutex held */
		if (!xina_nl_round_get(job, *idx, epoch, &rd))
			continue;
		if (xina_nl_put_round(skb, *idx, &rd))
			break;
		n++;
	}
	/* A round that does not fit in an empty skb would loop forever. */
	if (*idx < nv && !n)
		goto err_cancel;
	genlmsg_end(skb, hdr);
	return 0;

err_cancel:
	genlmsg_cancel(skb, hdr);
	return -EMSGSIZE;
}

/*
 * ROUNDS_GET (dump only): the rounds of a job's current epoch that have
 * contributions and no result yet, in slot order, in as many messages as
 * they need; each message holds JOB_ID and JOB_EPOCH.  The epoch is read
 * once, when the dump starts (cb->args[1], never 0), so that every message
 * is of the same epoch even if a restart opens the next meanwhile;
 * cb->args[0] is the next slot version to look at, cb->args[2] set once
 * all were.  A snapshot per version, not of the job: under load rounds
 * open and complete while the dump runs.
 */
static int xina_nl_rounds_dumpit(struct sk_buff *skb,
				 struct netlink_callback *cb)
{
	struct nlattr **attrs = xina_nl_dump_attrs(cb);
	struct netlink_ext_ack *extack = cb->extack;
	u32 idx = cb->args[0], epoch, run;
	struct xina_job *job;
	u16 joined;
	int err;

	if (cb->args[2])
		return 0;
	err = xina_nl_one_job(attrs, extack);
	if (err)
		return err;

	mutex_lock(&xina_lock);
	job = xina_job_find(sock_net(skb->sk),
			    nla_get_u32(attrs[XINA_A_JOB_ID]));
	if (!job) {
		NL_SET_ERR_MSG_MOD(extack, "job does not exist");
		NL_SET_BAD_ATTR(extack, attrs[XINA_A_JOB_ID]);
		err = -ENOENT;
		goto out_unlock;
	}
	if (!cb->args[1]) {
		xina_job_epoch(job, &epoch, &run, &joined);
		cb->args[1] = epoch;
	}
	epoch = cb->args[1];
	err = xina_nl_rounds_fill(skb, cb, job, epoch, &idx);
	if (!err && idx >= job->slots * XINA_SLOT_VERSIONS)
		cb->args[2] = 1;
out_unlock:
	mutex_unlock(&xina_lock);
	cb->args[0] = idx;
	return err ?: skb->len;
}

static const struct genl_ops xina_genl_ops[] = {
	{
		.cmd	= XINA_CMD_JOB_NEW,
		.flags	= GENL_ADMIN_PERM,
		.doit	= xina_nl_job_new,
	},
	{
		.cmd	= XINA_CMD_JOB_DEL,
		.flags	= GENL_ADMIN_PERM,
		.doit	= xina_nl_job_del,
	},
	{
		.cmd	= XINA_CMD_JOB_GET,
		.flags	= GENL_ADMIN_PERM,
		.doit	= xina_nl_get_doit,
		.dumpit	= xina_nl_get_dumpit,
	},
	{
		.cmd	= XINA_CMD_JOB_SET,
		.flags	= GENL_ADMIN_PERM,
		.doit	= xina_nl_job_set,
	},
	{
		.cmd	= XINA_CMD_STATS_GET,
		.flags	= GENL_ADMIN_PERM,
		.doit	= xina_nl_get_doit,
		.dumpit	= xina_nl_get_dumpit,
	},
	{
		.cmd	= XINA_CMD_ROUNDS_GET,
		.flags	= GENL_ADMIN_PERM,
		.dumpit	= xina_nl_rounds_dumpit,
	},
};

static struct genl_family xina_genl_family __ro_after_init = {
	.name		= XINA_GENL_NAME,
	.version	= XINA_GENL_VERSION,
	.maxattr	= XINA_A_MAX,
	.policy		= xina_policy,
	.netnsok	= true,
	.module		= THIS_MODULE,
	.ops		= xina_genl_ops,
	.n_ops		= ARRAY_SIZE(xina_genl_ops),
};

int xina_genl_init(void)
{
	return genl_register_family(&xina_genl_family);
}

void xina_genl_exit(void)
{
	genl_unregister_family(&xina_genl_family);
}
