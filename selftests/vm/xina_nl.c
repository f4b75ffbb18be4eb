// SPDX-License-Identifier: GPL-2.0
/*
 * Generic netlink family "xina": positive and negative tests, run in the
 * VM with xina.ko loaded.  Every rejection is checked for its errno, its
 * extack message and, where the kernel names one, the bad or the missing
 * attribute.  Configured values are checked in the replies and in sysfs.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/capability.h>

#include "xnl.h"
#include "kselftest_harness.h"

#define SYSFS	"/sys/kernel/xina"
/* A job secret (its value does not matter here). */
static const uint8_t SECRET[XINA_SECRET_BYTES] = {
	0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
	0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x00,
};

struct job_spec {
	uint32_t id;
	uint16_t workers;
	uint32_t slots;
	uint16_t elems;
	int members;	/* ranks 0..members-1 get 10.0.0.(rank+1):(9000+rank) */
};

/* Offsets of the attributes of the last built request (for bad_off). */
struct offs {
	int id, workers, slots, elems, key, member0;
};

static void put_member(struct xina_nl_msg *m, uint16_t rank, uint32_t addr,
		       uint16_t port)
{
	xina_nl_nest_start(m, XINA_A_JOB_MEMBER);
	xina_nl_put_u16(m, XINA_MEMBER_A_RANK, rank);
	xina_nl_put(m, XINA_MEMBER_A_ADDR, sizeof(addr), &addr);
	xina_nl_put_u16(m, XINA_MEMBER_A_PORT, port);
	xina_nl_nest_end(m);
}

static void build_new(struct xnl *nl, struct xina_nl_msg *m,
		      const struct job_spec *s, struct offs *o)
{
	struct offs dummy;
	int r;

	if (!o)
		o = &dummy;
	xina_nl_msg_init(m, nl->c.family, 0, XINA_CMD_JOB_NEW);
	o->id = xina_nl_put_u32(m, XINA_A_JOB_ID, s->id);
	o->workers = xina_nl_put_u16(m, XINA_A_JOB_WORKERS, s->workers);
	o->slots = xina_nl_put_u32(m, XINA_A_JOB_SLOTS, s->slots);
	o->elems = xina_nl_put_u16(m, XINA_A_JOB_ELEMS, s->elems);
	o->key = xina_nl_put(m, XINA_A_JOB_SECRET, sizeof(SECRET), SECRET);
	o->member0 = m->nlh->nlmsg_len;
	for (r = 0; r < s->members; r++)
		put_member(m, r, xnl_member_addr(r), 9000 + r);
}

static int job_new(struct xnl *nl, const struct job_spec *s)
{
	struct xina_nl_msg *m = malloc(sizeof(*m));
	int err;

	build_new(nl, m, s, NULL);
	err = xnl_do(nl, m);
	free(m);
	return err;
}

static int job_get(struct xnl *nl, uint8_t cmd, uint32_t id)
{
	struct xina_nl_msg *m = malloc(sizeof(*m));
	int err;

	xina_nl_msg_init(m, nl->c.family, 0, cmd);
	xina_nl_put_u32(m, XINA_A_JOB_ID, id);
	err = xnl_do(nl, m);
	free(m);
	return err;
}

static long long sysfs_num(const char *fmt, ...)
{
	char path[256], buf[64];
	long long v = -1;
	va_list ap;
	FILE *f;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		v = strtoll(buf, NULL, 0);
	fclose(f);
	return v;
}

static int sysfs_write(const char *path, unsigned long long v)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -errno;
	ret = fprintf(f, "%llu\n", v) < 0 ? -EIO : 0;
	if (fclose(f))
		ret = -errno;
	return ret;
}

/* Delete every job of this netns, through a dump. */
static void del_all(struct xnl *nl)
{
	uint32_t ids[XINA_MAX_JOBS * 2];
	struct nlattr *tb[XINA_A_MAX + 1];
	struct xina_nl_msg *m = malloc(sizeof(*m));
	struct nlmsghdr *h;
	int n = 0, i;
	size_t off;

	xina_nl_msg_init(m, nl->c.family, NLM_F_DUMP, XINA_CMD_STATS_GET);
	if (!xnl_do(nl, m)) {
		for (off = 0; off < nl->rx_len && n < XINA_MAX_JOBS * 2;
		     off += NLMSG_ALIGN(h->nlmsg_len)) {
			h = (struct nlmsghdr *)(nl->rx + off);
			xnl_attrs(h, tb, XINA_A_MAX);
			if (tb[XINA_A_JOB_ID])
				ids[n++] = mnl_attr_get_u32(tb[XINA_A_JOB_ID]);
		}
	}
	for (i = 0; i < n; i++)
		xnl_job_del(nl, ids[i]);
	free(m);
}

FIXTURE(nl) {
	struct xnl nl;
	struct xina_nl_msg *m;
	struct offs o;
};

FIXTURE_SETUP(nl)
{
	ASSERT_EQ(0, access(SYSFS "/version", R_OK)) {
		TH_LOG("xina.ko is not loaded");
	}
	ASSERT_EQ(0, xnl_open(&self->nl));
	self->m = malloc(sizeof(*self->m));
	ASSERT_NE(NULL, self->m);
	del_all(&self->nl);
}

FIXTURE_TEARDOWN(nl)
{
	del_all(&self->nl);
	free(self->m);
	xnl_close(&self->nl);
}

static const struct job_spec job1 = {
	.id = 1, .workers = 4, .slots = 8, .elems = 256, .members = 4,
};

TEST_F(nl, new_get_sysfs)
{
	struct nlattr *tb[XINA_A_MAX + 1], *a, *mt[XINA_MEMBER_A_MAX + 1], *b;
	uint64_t mem_bytes;
	uint32_t epoch;
	struct nlmsghdr *h;
	int members = 0;

	ASSERT_EQ(0, job_new(&self->nl, &job1));
	ASSERT_EQ(0, job_get(&self->nl, XINA_CMD_JOB_GET, 1));
	ASSERT_GT(self->nl.rx_len, 0);
	h = (struct nlmsghdr *)self->nl.rx;
	xnl_attrs(h, tb, XINA_A_MAX);
	ASSERT_NE(NULL, tb[XINA_A_JOB_ID]);
	EXPECT_EQ(1, mnl_attr_get_u32(tb[XINA_A_JOB_ID]));
	EXPECT_EQ(4, mnl_attr_get_u16(tb[XINA_A_JOB_WORKERS]));
	EXPECT_EQ(8, mnl_attr_get_u32(tb[XINA_A_JOB_SLOTS]));
	EXPECT_EQ(256, mnl_attr_get_u16(tb[XINA_A_JOB_ELEMS]));
	/* the secret never leaves the kernel, nor a key */
	EXPECT_EQ(NULL, tb[XINA_A_JOB_SECRET]);
	EXPECT_EQ(NULL, tb[XINA_A_JOB_KEY]);
	EXPECT_EQ(0, mnl_attr_get_u32(tb[XINA_A_JOB_FLAGS]));
	ASSERT_NE(NULL, tb[XINA_A_JOB_MEM_BYTES]);
	mem_bytes = mnl_attr_get_u64(tb[XINA_A_JOB_MEM_BYTES]);
	/* At least the values: slots x 2 versions x elems x int32. */
	EXPECT_GE(mem_bytes, 8 * 2 * 256 * 4);
	ASSERT_NE(NULL, tb[XINA_A_JOB_STATS]);
	/* A random epoch, not 0, which no member joined yet. */
	ASSERT_NE(NULL, tb[XINA_A_JOB_EPOCH]);
	ASSERT_EQ(4, mnl_attr_get_payload_len(tb[XINA_A_JOB_EPOCH]));
	epoch = mnl_attr_get_u32(tb[XINA_A_JOB_EPOCH]);
	EXPECT_NE(0, epoch);
	ASSERT_NE(NULL, tb[XINA_A_JOB_JOINED]);
	ASSERT_EQ(2, mnl_attr_get_payload_len(tb[XINA_A_JOB_JOINED]));
	EXPECT_EQ(0, mnl_attr_get_u16(tb[XINA_A_JOB_JOINED]));
	/* No join named a run yet (the runs themselves: xina_kfunc). */
	ASSERT_NE(NULL, tb[XINA_A_JOB_RUN]);
	ASSERT_EQ(4, mnl_attr_get_payload_len(tb[XINA_A_JOB_RUN]));
	EXPECT_EQ(0, mnl_attr_get_u32(tb[XINA_A_JOB_RUN]));

	mnl_attr_for_each(a, h, GENL_HDRLEN) {
		if ((a->nla_type & NLA_TYPE_MASK) != XINA_A_JOB_MEMBER)
			continue;
		memset(mt, 0, sizeof(mt));
		mnl_attr_for_each_nested(b, a)
			if (b->nla_type <= XINA_MEMBER_A_MAX)
				mt[b->nla_type] = b;
		ASSERT_NE(NULL, mt[XINA_MEMBER_A_RANK]);
		ASSERT_NE(NULL, mt[XINA_MEMBER_A_ADDR]);
		EXPECT_EQ(xnl_member_addr(members),
			  mnl_attr_get_u32(mt[XINA_MEMBER_A_ADDR]));
		EXPECT_EQ(9000 + members,
			  mnl_attr_get_u16(mt[XINA_MEMBER_A_PORT]));
		members++;
	}
	EXPECT_EQ(4, members);

	/* sysfs shows the same job. */
	EXPECT_EQ(1, sysfs_num(SYSFS "/jobs/1/id"));
	EXPECT_EQ(4, sysfs_num(SYSFS "/jobs/1/workers"));
	EXPECT_EQ(8, sysfs_num(SYSFS "/jobs/1/slots"));
	EXPECT_EQ(256, sysfs_num(SYSFS "/jobs/1/elems"));
	EXPECT_EQ(4, sysfs_num(SYSFS "/jobs/1/members"));
	EXPECT_EQ(mem_bytes, sysfs_num(SYSFS "/jobs/1/mem_bytes"));
	EXPECT_EQ(mem_bytes, sysfs_num(SYSFS "/mem_used"));
	EXPECT_EQ(0, sysfs_num(SYSFS "/jobs/1/contributions"));
	EXPECT_EQ(0, sysfs_num(SYSFS "/jobs/1/drop_key"));
	EXPECT_EQ(epoch, (uint32_t)sysfs_num(SYSFS "/jobs/1/epoch"));
	EXPECT_EQ(0, sysfs_num(SYSFS "/jobs/1/joined"));
	EXPECT_EQ(0, sysfs_num(SYSFS "/jobs/1/run"));
	EXPECT_EQ(0, sysfs_num(SYSFS "/jobs/1/join"));
	EXPECT_EQ(0, sysfs_num(SYSFS "/jobs/1/join_refused"));
	EXPECT_EQ(0, sysfs_num(SYSFS "/jobs/1/join_stale"));
	EXPECT_EQ(0, sysfs_num(SYSFS "/jobs/1/epoch_new"));

	ASSERT_EQ(0, xnl_job_del(&self->nl, 1));
	EXPECT_EQ(-1, sysfs_num(SYSFS "/jobs/1/id"));
	EXPECT_EQ(0, sysfs_num(SYSFS "/mem_used"));
}

TEST_F(nl, new_exists)
{
	ASSERT_EQ(0, job_new(&self->nl, &job1));
	build_new(&self->nl, self->m, &job1, &self->o);
	EXPECT_EQ(-EEXIST, xnl_do(&self->nl, self->m));
	EXPECT_STREQ("xina: job exists", self->nl.c.errmsg);
	EXPECT_EQ(self->o.id, self->nl.c.bad_off);
}

/* Leave out one required attribute at a time. */
TEST_F(nl, new_missing)
{
	static const struct {
		int type;
		const char *msg;
	} req[] = {
		{ XINA_A_JOB_ID, "xina: missing job id" },
		{ XINA_A_JOB_WORKERS, "xina: missing number of workers" },
		{ XINA_A_JOB_SLOTS, "xina: missing number of slots" },
		{ XINA_A_JOB_ELEMS, "xina: missing elements per slot" },
		{ XINA_A_JOB_SECRET, "xina: missing job secret" },
	};
	unsigned int i;

	for (i = 0; i < sizeof(req) / sizeof(req[0]); i++) {
		struct xina_nl_msg *m = self->m;

		xina_nl_msg_init(m, self->nl.c.family, 0, XINA_CMD_JOB_NEW);
		if (req[i].type != XINA_A_JOB_ID)
			xina_nl_put_u32(m, XINA_A_JOB_ID, 5);
		if (req[i].type != XINA_A_JOB_WORKERS)
			xina_nl_put_u16(m, XINA_A_JOB_WORKERS, 2);
		if (req[i].type != XINA_A_JOB_SLOTS)
			xina_nl_put_u32(m, XINA_A_JOB_SLOTS, 2);
		if (req[i].type != XINA_A_JOB_ELEMS)
			xina_nl_put_u16(m, XINA_A_JOB_ELEMS, 2);
		if (req[i].type != XINA_A_JOB_SECRET)
			xina_nl_put(m, XINA_A_JOB_SECRET, sizeof(SECRET), SECRET);
		EXPECT_EQ(-EINVAL, xnl_do(&self->nl, m));
		EXPECT_STREQ(req[i].msg, self->nl.c.errmsg);
		EXPECT_EQ(req[i].type, self->nl.c.miss_type);
	}
	EXPECT_EQ(-1, sysfs_num(SYSFS "/jobs/5/id"));
}

/* A request with one attribute replaced by @type/@data/@len. */
static int new_with(struct xnl *nl, struct xina_nl_msg *m, int type,
		    const void *data, int len, int *off)
{
	xina_nl_msg_init(m, nl->c.family, 0, XINA_CMD_JOB_NEW);
	*off = xina_nl_put(m, type, len, data);
	if (type != XINA_A_JOB_ID)
		xina_nl_put_u32(m, XINA_A_JOB_ID, 6);
	if (type != XINA_A_JOB_WORKERS)
		xina_nl_put_u16(m, XINA_A_JOB_WORKERS, 2);
	if (type != XINA_A_JOB_SLOTS)
		xina_nl_put_u32(m, XINA_A_JOB_SLOTS, 2);
	if (type != XINA_A_JOB_ELEMS)
		xina_nl_put_u16(m, XINA_A_JOB_ELEMS, 2);
	if (type != XINA_A_JOB_SECRET)
		xina_nl_put(m, XINA_A_JOB_SECRET, sizeof(SECRET), SECRET);
	return xnl_do(nl, m);
}

TEST_F(nl, new_bad_values)
{
	static const struct {
		const char *what;
		int type;
		uint64_t v;
		int len;
		int err;
		const char *msg;
	} bad[] = {
		{ "id 0", XINA_A_JOB_ID, 0, 4, -ERANGE, "integer out of range" },
		{ "id as u16", XINA_A_JOB_ID, 6, 2, -EINVAL, "invalid attribute length" },
		{ "id as u64", XINA_A_JOB_ID, 6, 8, -EINVAL, "invalid attribute length" },
		{ "workers 0", XINA_A_JOB_WORKERS, 0, 2, -ERANGE, "integer out of range" },
		{ "workers 257", XINA_A_JOB_WORKERS, 257, 2, -ERANGE, "integer out of range" },
		{ "workers as u32", XINA_A_JOB_WORKERS, 2, 4, -EINVAL, "invalid attribute length" },
		{ "slots 0", XINA_A_JOB_SLOTS, 0, 4, -ERANGE, "integer out of range" },
		{ "slots 65537", XINA_A_JOB_SLOTS, 65537, 4, -ERANGE, "integer out of range" },
		{ "elems 0", XINA_A_JOB_ELEMS, 0, 2, -ERANGE, "integer out of range" },
		{ "elems 2049", XINA_A_JOB_ELEMS, 2049, 2, -ERANGE, "integer out of range" },
		{ "secret of 8 bytes", XINA_A_JOB_SECRET, 1, 8, -ERANGE,
		  "binary attribute size out of range" },
		{ "a key in clear", XINA_A_JOB_KEY, 1, 8, -EINVAL,
		  "xina: keys are not sent in clear any more: use the job secret" },
		{ "flags bit 0", XINA_A_JOB_FLAGS, 1, 4, -EINVAL, "reserved bit set" },
		{ "flags bit 31", XINA_A_JOB_FLAGS, 1U << 31, 4, -EINVAL, "reserved bit set" },
		{ "mem_bytes from user", XINA_A_JOB_MEM_BYTES, 1, 8, -EINVAL,
		  "Attribute failed policy validation" },
		{ "rx_cpu from user", XINA_A_JOB_RX_CPU, 1, 8, -EINVAL,
		  "Attribute failed policy validation" },
		{ "epoch from user", XINA_A_JOB_EPOCH, 1, 4, -EINVAL,
		  "Attribute failed policy validation" },
		{ "joined from user", XINA_A_JOB_JOINED, 1, 2, -EINVAL,
		  "Attribute failed policy validation" },
		{ "run from user", XINA_A_JOB_RUN, 1, 4, -EINVAL,
		  "Attribute failed policy validation" },
		{ "unknown attribute", XINA_A_MAX + 1, 1, 4, -EINVAL, "Unknown attribute type" },
	};
	unsigned int i;
	int off;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(bad[i].err, new_with(&self->nl, self->m, bad[i].type,
					   &bad[i].v, bad[i].len, &off)) {
			TH_LOG("%s", bad[i].what);
		}
		EXPECT_STREQ(bad[i].msg, self->nl.c.errmsg) {
			TH_LOG("%s", bad[i].what);
		}
		EXPECT_EQ(off, self->nl.c.bad_off) {
			TH_LOG("%s", bad[i].what);
		}
	}
	EXPECT_EQ(-1, sysfs_num(SYSFS "/jobs/6/id"));
	EXPECT_EQ(0, sysfs_num(SYSFS "/mem_used"));
}

TEST_F(nl, new_bad_members)
{
	struct xina_nl_msg *m = self->m;
	struct job_spec s = job1;
	uint32_t addr = xnl_member_addr(0);
	int off;

	/* Rank beyond the job's workers. */
	s.members = 0;
	build_new(&self->nl, m, &s, NULL);
	xina_nl_nest_start(m, XINA_A_JOB_MEMBER);
	off = xina_nl_put_u16(m, XINA_MEMBER_A_RANK, 4);
	xina_nl_put(m, XINA_MEMBER_A_ADDR, 4, &addr);
	xina_nl_nest_end(m);
	EXPECT_EQ(-ERANGE, xnl_do(&self->nl, m));
	EXPECT_STREQ("xina: member rank not below the job's workers",
		     self->nl.c.errmsg);
	EXPECT_EQ(off, self->nl.c.bad_off);

	/* Rank beyond XINA_MAX_WORKERS: the policy already. */
	build_new(&self->nl, m, &s, NULL);
	xina_nl_nest_start(m, XINA_A_JOB_MEMBER);
	off = xina_nl_put_u16(m, XINA_MEMBER_A_RANK, XINA_MAX_WORKERS);
	xina_nl_put(m, XINA_MEMBER_A_ADDR, 4, &addr);
	xina_nl_nest_end(m);
	EXPECT_EQ(-ERANGE, xnl_do(&self->nl, m));
	EXPECT_STREQ("integer out of range", self->nl.c.errmsg);
	EXPECT_EQ(off, self->nl.c.bad_off);

	/* Address of 3 bytes. */
	build_new(&self->nl, m, &s, NULL);
	xina_nl_nest_start(m, XINA_A_JOB_MEMBER);
	xina_nl_put_u16(m, XINA_MEMBER_A_RANK, 0);
	off = xina_nl_put(m, XINA_MEMBER_A_ADDR, 3, &addr);
	xina_nl_nest_end(m);
	EXPECT_EQ(-ERANGE, xnl_do(&self->nl, m));
	EXPECT_STREQ("binary attribute size out of range", self->nl.c.errmsg);
	EXPECT_EQ(off, self->nl.c.bad_off);

	/* No address. */
	build_new(&self->nl, m, &s, NULL);
	off = xina_nl_nest_start(m, XINA_A_JOB_MEMBER);
	xina_nl_put_u16(m, XINA_MEMBER_A_RANK, 0);
	xina_nl_nest_end(m);
	EXPECT_EQ(-EINVAL, xnl_do(&self->nl, m));
	EXPECT_STREQ("xina: member without address", self->nl.c.errmsg);
	EXPECT_EQ(XINA_MEMBER_A_ADDR, self->nl.c.miss_type);

	/* No rank. */
	build_new(&self->nl, m, &s, NULL);
	xina_nl_nest_start(m, XINA_A_JOB_MEMBER);
	xina_nl_put(m, XINA_MEMBER_A_ADDR, 4, &addr);
	xina_nl_nest_end(m);
	EXPECT_EQ(-EINVAL, xnl_do(&self->nl, m));
	EXPECT_STREQ("xina: member without rank", self->nl.c.errmsg);
	EXPECT_EQ(XINA_MEMBER_A_RANK, self->nl.c.miss_type);

	/* The same rank twice. */
	build_new(&self->nl, m, &s, NULL);
	put_member(m, 1, xnl_member_addr(1), 1);
	xina_nl_nest_start(m, XINA_A_JOB_MEMBER);
	off = xina_nl_put_u16(m, XINA_MEMBER_A_RANK, 1);
	xina_nl_put(m, XINA_MEMBER_A_ADDR, 4, &addr);
	xina_nl_nest_end(m);
	EXPECT_EQ(-EINVAL, xnl_do(&self->nl, m));
	EXPECT_STREQ("xina: member rank given twice", self->nl.c.errmsg);
	EXPECT_EQ(off, self->nl.c.bad_off);

	/* A member without NLA_F_NESTED. */
	build_new(&self->nl, m, &s, NULL);
	off = xina_nl_put(m, XINA_A_JOB_MEMBER, 0, NULL);
	EXPECT_EQ(-EINVAL, xnl_do(&self->nl, m));
	EXPECT_STREQ("NLA_F_NESTED is missing", self->nl.c.errmsg);
	EXPECT_EQ(off, self->nl.c.bad_off);

	EXPECT_EQ(-1, sysfs_num(SYSFS "/jobs/1/id"));
}

TEST_F(nl, del_get_missing_job)
{
	struct xina_nl_msg *m = self->m;
	int off;

	xina_nl_msg_init(m, self->nl.c.family, 0, XINA_CMD_JOB_DEL);
	off = xina_nl_put_u32(m, XINA_A_JOB_ID, 77);
	EXPECT_EQ(-ENOENT, xnl_do(&self->nl, m));
	EXPECT_STREQ("xina: job does not exist", self->nl.c.errmsg);
	EXPECT_EQ(off, self->nl.c.bad_off);

	EXPECT_EQ(-ENOENT, job_get(&self->nl, XINA_CMD_JOB_GET, 77));
	EXPECT_STREQ("xina: job does not exist", self->nl.c.errmsg);
	EXPECT_EQ(-ENOENT, job_get(&self->nl, XINA_CMD_STATS_GET, 77));

	xina_nl_msg_init(m, self->nl.c.family, 0, XINA_CMD_JOB_DEL);
	EXPECT_EQ(-EINVAL, xnl_do(&self->nl, m));
	EXPECT_STREQ("xina: missing job id", self->nl.c.errmsg);
	EXPECT_EQ(XINA_A_JOB_ID, self->nl.c.miss_type);
}

/*
 * Commands that name a job and nothing else refuse any other attribute by
 * name (they ignored it), and change nothing; a dump of every job takes
 * no attribute (with JOB_ID it listed every job, not that one).
 */
TEST_F(nl, only_the_job_id)
{
	static const char only[] =
		"xina: attribute not taken here: this command names a job (JOB_ID) and nothing else";
	static const uint8_t cmds[] = {
		XINA_CMD_JOB_DEL, XINA_CMD_JOB_GET, XINA_CMD_STATS_GET,
	};
	struct xina_nl_msg *m = self->m;
	unsigned int i;
	int off;

	ASSERT_EQ(0, job_new(&self->nl, &job1));
	for (i = 0; i < sizeof(cmds); i++) {
		xina_nl_msg_init(m, self->nl.c.family, 0, cmds[i]);
		xina_nl_put_u32(m, XINA_A_JOB_ID, job1.id);
		off = xina_nl_put_u16(m, XINA_A_JOB_WORKERS, 2);
		EXPECT_EQ(-EINVAL, xnl_do(&self->nl, m));
		EXPECT_STREQ(only, self->nl.c.errmsg);
		EXPECT_EQ(off, self->nl.c.bad_off);
	}
	EXPECT_EQ(0, job_get(&self->nl, XINA_CMD_JOB_GET, job1.id));

	/*
	 * A dump's own refusal: 6.1 reports its message but no offset
	 * (netlink_dump_done() puts NLMSGERR_ATTR_MSG only), later kernels
	 * both; a wrong offset fails either way.
	 */
	xina_nl_msg_init(m, self->nl.c.family, NLM_F_DUMP, XINA_CMD_JOB_GET);
	off = xina_nl_put_u32(m, XINA_A_JOB_ID, job1.id);
	EXPECT_EQ(-EINVAL, xnl_do(&self->nl, m));
	EXPECT_STREQ("xina: a dump lists every job and takes no attribute: one job's is a request without NLM_F_DUMP",
		     self->nl.c.errmsg);
	EXPECT_TRUE(self->nl.c.bad_off == off || self->nl.c.bad_off == -1);

	xina_nl_msg_init(m, self->nl.c.family, NLM_F_DUMP, XINA_CMD_ROUNDS_GET);
	xina_nl_put_u32(m, XINA_A_JOB_ID, job1.id);
	off = xina_nl_put_u32(m, XINA_A_JOB_FLAGS, 0);
	EXPECT_EQ(-EINVAL, xnl_do(&self->nl, m));
	EXPECT_STREQ(only, self->nl.c.errmsg);
	EXPECT_TRUE(self->nl.c.bad_off == off || self->nl.c.bad_off == -1);
}

TEST_F(nl, set)
{
	struct nlattr *tb[XINA_A_MAX + 1];
	struct xina_nl_msg *m = self->m;
	struct job_spec s = job1;
	uint32_t epoch;
	int off;

	s.members = 2;
	ASSERT_EQ(0, job_new(&self->nl, &s));
	EXPECT_EQ(2, sysfs_num(SYSFS "/jobs/1/members"));
	epoch = sysfs_num(SYSFS "/jobs/1/epoch");

	xina_nl_msg_init(m, self->nl.c.family, 0, XINA_CMD_JOB_SET);
	xina_nl_put_u32(m, XINA_A_JOB_ID, 1);
	xina_nl_put(m, XINA_A_JOB_SECRET, sizeof(SECRET), SECRET);
	put_member(m, 3, xnl_member_addr(3), 0);
	ASSERT_EQ(0, xnl_do(&self->nl, m));
	EXPECT_EQ(3, sysfs_num(SYSFS "/jobs/1/members"));
	ASSERT_EQ(0, job_get(&self->nl, XINA_CMD_JOB_GET, 1));
	xnl_attrs((struct nlmsghdr *)self->nl.rx, tb, XINA_A_MAX);
	EXPECT_EQ(NULL, tb[XINA_A_JOB_SECRET]);
	/* A new secret or member is no new run: the epoch stays. */
	ASSERT_NE(NULL, tb[XINA_A_JOB_EPOCH]);
	EXPECT_EQ(epoch, mnl_attr_get_u32(tb[XINA_A_JOB_EPOCH]));

	/* Nor can a request set it. */
	xina_nl_msg_init(m, self->nl.c.family, 0, XINA_CMD_JOB_SET);
	xina_nl_put_u32(m, XINA_A_JOB_ID, 1);
	off = xina_nl_put_u32(m, XINA_A_JOB_EPOCH, epoch + 1);
	xina_nl_put(m, XINA_A_JOB_SECRET, sizeof(SECRET), SECRET);
	EXPECT_EQ(-EINVAL, xnl_do(&self->nl, m));
	EXPECT_STREQ("Attribute failed policy validation", self->nl.c.errmsg);
	EXPECT_EQ(off, self->nl.c.bad_off);
	EXPECT_EQ(epoch, (uint32_t)sysfs_num(SYSFS "/jobs/1/epoch"));

	xina_nl_msg_init(m, self->nl.c.family, 0, XINA_CMD_JOB_SET);
	xina_nl_put_u32(m, XINA_A_JOB_ID, 1);
	off = xina_nl_put_u16(m, XINA_A_JOB_WORKERS, 8);
	EXPECT_EQ(-EOPNOTSUPP, xnl_do(&self->nl, m));
	EXPECT_STREQ("xina: the shape of a job cannot change", self->nl.c.errmsg);
	EXPECT_EQ(off, self->nl.c.bad_off);

	xina_nl_msg_init(m, self->nl.c.family, 0, XINA_CMD_JOB_SET);
	xina_nl_put_u32(m, XINA_A_JOB_ID, 1);
	EXPECT_EQ(-EINVAL, xnl_do(&self->nl, m));
	EXPECT_STREQ("xina: nothing to change: no secret, member or flags",
		     self->nl.c.errmsg);

	/* A bad member leaves the job as it was. */
	xina_nl_msg_init(m, self->nl.c.family, 0, XINA_CMD_JOB_SET);
	xina_nl_put_u32(m, XINA_A_JOB_ID, 1);
	put_member(m, 2, xnl_member_addr(2), 0);
	put_member(m, 9, xnl_member_addr(9), 0);
	EXPECT_EQ(-ERANGE, xnl_do(&self->nl, m));
	EXPECT_EQ(3, sysfs_num(SYSFS "/jobs/1/members"));
}

TEST_F(nl, stats)
{
	struct nlattr *tb[XINA_A_MAX + 1], *a;
	int n = 0;

	ASSERT_EQ(0, job_new(&self->nl, &job1));
	ASSERT_EQ(0, job_get(&self->nl, XINA_CMD_STATS_GET, 1));
	xnl_attrs((struct nlmsghdr *)self->nl.rx, tb, XINA_A_MAX);
	ASSERT_NE(NULL, tb[XINA_A_JOB_STATS]);
	EXPECT_EQ(NULL, tb[XINA_A_JOB_WORKERS]);
	mnl_attr_for_each_nested(a, tb[XINA_A_JOB_STATS]) {
		EXPECT_EQ(8, mnl_attr_get_payload_len(a));
		EXPECT_EQ(0, mnl_attr_get_u64(a));
		n++;
	}
	EXPECT_EQ(XINA_STAT_MAX, n);
}

static int rounds_get(struct xnl *nl, struct xina_nl_msg *m, uint32_t id)
{
	xina_nl_msg_init(m, nl->c.family, NLM_F_DUMP, XINA_CMD_ROUNDS_GET);
	xina_nl_put_u32(m, XINA_A_JOB_ID, id);
	return xnl_do(nl, m);
}

/*
 * ROUNDS_GET of a job without traffic: one message, its id and epoch, no
 * round (the rounds themselves: xina_kfunc's rounds_get).  Dump only;
 * the job id is required, the job must exist, JOB_ROUND is the kernel's.
 */
TEST_F(nl, rounds_get)
{
	struct nlattr *tb[XINA_A_MAX + 1];
	struct xina_nl_msg *m = self->m;
	struct nlmsghdr *h;
	int off;

	ASSERT_EQ(0, job_new(&self->nl, &job1));
	ASSERT_EQ(0, rounds_get(&self->nl, m, 1));
	h = (struct nlmsghdr *)self->nl.rx;
	ASSERT_EQ(NLMSG_ALIGN(h->nlmsg_len), self->nl.rx_len);
	xnl_attrs(h, tb, XINA_A_MAX);
	ASSERT_NE(NULL, tb[XINA_A_JOB_ID]);
	EXPECT_EQ(1, mnl_attr_get_u32(tb[XINA_A_JOB_ID]));
	ASSERT_NE(NULL, tb[XINA_A_JOB_EPOCH]);
	ASSERT_EQ(4, mnl_attr_get_payload_len(tb[XINA_A_JOB_EPOCH]));
	EXPECT_EQ((uint32_t)sysfs_num(SYSFS "/jobs/1/epoch"),
		  mnl_attr_get_u32(tb[XINA_A_JOB_EPOCH]));
	EXPECT_EQ(NULL, tb[XINA_A_JOB_ROUND]);
	EXPECT_EQ(NULL, tb[XINA_A_JOB_STATS]);

	EXPECT_EQ(-ENOENT, rounds_get(&self->nl, m, 77));
	EXPECT_STREQ("xina: job does not exist", self->nl.c.errmsg);

	xina_nl_msg_init(m, self->nl.c.family, NLM_F_DUMP, XINA_CMD_ROUNDS_GET);
	EXPECT_EQ(-EINVAL, xnl_do(&self->nl, m));
	EXPECT_STREQ("xina: missing job id", self->nl.c.errmsg);

	xina_nl_msg_init(m, self->nl.c.family, NLM_F_DUMP, XINA_CMD_ROUNDS_GET);
	xina_nl_put_u32(m, XINA_A_JOB_ID, 1);
	off = xina_nl_put(m, XINA_A_JOB_ROUND, 0, NULL);
	EXPECT_EQ(-EINVAL, xnl_do(&self->nl, m));
	EXPECT_STREQ("Attribute failed policy validation", self->nl.c.errmsg);
	EXPECT_EQ(off, self->nl.c.bad_off);

	/* No doit: one job's rounds are a dump too. */
	xina_nl_msg_init(m, self->nl.c.family, 0, XINA_CMD_ROUNDS_GET);
	xina_nl_put_u32(m, XINA_A_JOB_ID, 1);
	EXPECT_EQ(-EOPNOTSUPP, xnl_do(&self->nl, m));
}

/*
 * XINA_MAX_JOBS jobs of 256 members each (~7 KiB per message) do not fit
 * one dump skb: the dump must resume, and list each job exactly once.
 * The last one has the largest id, U32_MAX: the dump ends after it (the
 * next id must not wrap to 0).
 */
#define DUMP_ID(i)	((i) < XINA_MAX_JOBS ? (uint32_t)(i) : UINT32_MAX)

TEST_F(nl, dump_resumes_and_job_limit)
{
	struct nlattr *tb[XINA_A_MAX + 1];
	struct job_spec s = {
		.workers = 256, .slots = 1, .elems = 1, .members = 256,
	};
	int seen[XINA_MAX_JOBS + 1] = {};
	struct nlmsghdr *h;
	int n = 0, i;
	size_t off;

	for (i = 1; i <= XINA_MAX_JOBS; i++) {
		s.id = DUMP_ID(i);
		ASSERT_EQ(0, job_new(&self->nl, &s)) {
			TH_LOG("job %d: %s", i, self->nl.c.errmsg);
		}
	}
	s.id = XINA_MAX_JOBS + 1;
	EXPECT_EQ(-ENOSPC, job_new(&self->nl, &s));
	EXPECT_STREQ("xina: too many jobs", self->nl.c.errmsg);

	xina_nl_msg_init(self->m, self->nl.c.family, NLM_F_DUMP, XINA_CMD_JOB_GET);
	ASSERT_EQ(0, xnl_do(&self->nl, self->m));
	EXPECT_GT(self->nl.c.reads, 2);
	for (off = 0; off < self->nl.rx_len; off += NLMSG_ALIGN(h->nlmsg_len)) {
		uint32_t id;

		h = (struct nlmsghdr *)(self->nl.rx + off);
		xnl_attrs(h, tb, XINA_A_MAX);
		ASSERT_NE(NULL, tb[XINA_A_JOB_ID]);
		id = mnl_attr_get_u32(tb[XINA_A_JOB_ID]);
		if (id == UINT32_MAX)
			id = XINA_MAX_JOBS;
		ASSERT_LE(id, XINA_MAX_JOBS);
		ASSERT_GT(id, 0);
		seen[id]++;
		/* The dump holds what a doit does, the join state too. */
		ASSERT_NE(NULL, tb[XINA_A_JOB_EPOCH]);
		ASSERT_NE(NULL, tb[XINA_A_JOB_JOINED]);
		ASSERT_NE(NULL, tb[XINA_A_JOB_RUN]);
		ASSERT_EQ(4, mnl_attr_get_payload_len(tb[XINA_A_JOB_RUN]));
		EXPECT_EQ(0, mnl_attr_get_u32(tb[XINA_A_JOB_RUN]));
		n++;
	}
	EXPECT_EQ(XINA_MAX_JOBS, n);
	for (i = 1; i <= XINA_MAX_JOBS; i++) {
		EXPECT_EQ(1, seen[i]);
	}
}

TEST_F(nl, mem_limit)
{
	const char *param = "/sys/module/xina/parameters/mem_limit";
	struct job_spec big = {
		.id = 9, .workers = 2, .slots = 4096, .elems = 1024,
	};
	long long limit = sysfs_num(param);

	ASSERT_GT(limit, 0);
	EXPECT_EQ(limit, sysfs_num(SYSFS "/mem_limit"));
	/* 4096 slots x 2 x 1024 x 4 = 32 MiB of values. */
	ASSERT_EQ(0, sysfs_write(param, 16 << 20));
	EXPECT_EQ(16 << 20, sysfs_num(SYSFS "/mem_limit"));
	EXPECT_EQ(-ENOMEM, job_new(&self->nl, &big));
	EXPECT_STREQ("xina: slot memory would exceed mem_limit", self->nl.c.errmsg);
	EXPECT_EQ(0, sysfs_num(SYSFS "/mem_used"));

	ASSERT_EQ(0, sysfs_write(param, 64 << 20));
	EXPECT_EQ(0, job_new(&self->nl, &big));
	EXPECT_EQ(sysfs_num(SYSFS "/jobs/9/mem_bytes"),
		  sysfs_num(SYSFS "/mem_used"));
	EXPECT_EQ(0, xnl_job_del(&self->nl, 9));
	EXPECT_EQ(0, sysfs_num(SYSFS "/mem_used"));
	ASSERT_EQ(0, sysfs_write(param, limit));
}

static int drop_net_admin(void)
{
	struct __user_cap_header_struct hdr = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct data[2];

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	data[CAP_NET_ADMIN / 32].effective &= ~(1U << (CAP_NET_ADMIN % 32));
	data[CAP_NET_ADMIN / 32].permitted &= ~(1U << (CAP_NET_ADMIN % 32));
	if (syscall(SYS_capset, &hdr, data))
		return -errno;
	return 0;
}

/* Every command needs CAP_NET_ADMIN, reading ones included. */
TEST_F(nl, no_cap_net_admin)
{
	static const uint8_t cmds[] = {
		XINA_CMD_JOB_NEW, XINA_CMD_JOB_DEL, XINA_CMD_JOB_GET,
		XINA_CMD_JOB_SET, XINA_CMD_STATS_GET,
	};
	int status;
	pid_t pid;

	ASSERT_EQ(0, job_new(&self->nl, &job1));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct xnl nl;
		unsigned int i;
		int bad = 0;

		if (drop_net_admin() || xnl_open(&nl))
			_exit(2);
		for (i = 0; i < sizeof(cmds); i++) {
			if (cmds[i] == XINA_CMD_JOB_NEW) {
				build_new(&nl, self->m, &job1, NULL);
				self->m->nlh->nlmsg_type = nl.c.family;
			} else {
				xina_nl_msg_init(self->m, nl.c.family, 0, cmds[i]);
				xina_nl_put_u32(self->m, XINA_A_JOB_ID, 1);
				if (cmds[i] == XINA_CMD_JOB_SET)
					xina_nl_put(self->m, XINA_A_JOB_SECRET, sizeof(SECRET),
						SECRET);
			}
			if (xnl_do(&nl, self->m) != -EPERM)
				bad++;
		}
		xina_nl_msg_init(self->m, nl.c.family, NLM_F_DUMP, XINA_CMD_JOB_GET);
		if (xnl_do(&nl, self->m) != -EPERM)
			bad++;
		if (rounds_get(&nl, self->m, 1) != -EPERM)
			bad++;
		_exit(bad ? 1 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* The job is untouched. */
	EXPECT_EQ(1, sysfs_num(SYSFS "/jobs/1/id"));
	ASSERT_EQ(0, job_get(&self->nl, XINA_CMD_JOB_GET, 1));
}

/* Jobs belong to a netns, and go away with it. */
TEST_F(nl, netns)
{
	char path[128];
	struct stat st;
	int status, i;
	pid_t pid;

	ASSERT_EQ(0, job_new(&self->nl, &job1));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct xnl nl;
		struct stat ns;

		if (unshare(CLONE_NEWNET) || xnl_open(&nl) ||
		    stat("/proc/self/ns/net", &ns))
			_exit(2);
		/* The job of the initial netns is not visible here ... */
		if (job_get(&nl, XINA_CMD_JOB_GET, 1) != -ENOENT)
			_exit(3);
		/* ... and the same id is free. */
		if (job_new(&nl, &job1))
			_exit(4);
		snprintf(path, sizeof(path), SYSFS "/jobs/1@%lu/id",
			 (unsigned long)ns.st_ino);
		if (sysfs_num("%s", path) != 1)
			_exit(5);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));

	/* The netns is gone, its job too (netns cleanup is asynchronous). */
	for (i = 0; i < 200; i++) {
		int left = 0;
		DIR *d = opendir(SYSFS "/jobs");
		struct dirent *e;

		ASSERT_NE(NULL, d);
		while ((e = readdir(d)))
			left += !!strchr(e->d_name, '@');
		closedir(d);
		if (!left)
			break;
		usleep(50000);
	}
	EXPECT_LT(i, 200);
	EXPECT_EQ(0, stat(SYSFS "/jobs/1", &st));
}

TEST_HARNESS_MAIN
