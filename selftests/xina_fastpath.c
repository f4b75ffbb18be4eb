// SPDX-License-Identifier: GPL-2.0
/*
 * Selftest of the XDP fast path (map backend) through BPF_PROG_TEST_RUN.
 *
 * Every test loads a fresh skeleton (maps not pinned, small), configures
 * one job in the maps the way xinactl does, and feeds xina_xdp Ethernet
 * frames built here; frames longer than a page are multi-buffer frames in
 * BPF_PROG_TEST_RUN, as they are on veth.  A result leaves xina_xdp with
 * XDP_PASS and a mark in the XDP metadata (which BPF_PROG_TEST_RUN hands
 * back in front of the frame); its fan-out by the TC program xina_fanout
 * is run for real in a network namespace this test makes with unshare():
 * veth pairs, packet sockets on the worker ends.
 *
 * Contributions carry the tag of bpf/xina_auth.h, computed here with the
 * keys derived from SECRET; results are checked against the result key.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xina_maps.h"
#include "xina_auth.h"
#include "bpf/xina.skel.h"
#include "kselftest_harness.h"
#include "xina_log.h"
#include "xina_ref.h"


#define JOB_ID		7
#define JOB_IDX		3
#define SLOT_BASE	6	/* not 0: an indexing error shows */
#define NR_VERSIONS	64	/* xina_meta / xina_vals entries */
#define SW_IP		0x0a0700feU	/* 10.7.0.254 */
#define WK_IP(r)	(0x0a070001U + (r))	/* 10.7.0.1 + rank */
#define WK_PORT(r)	(40000 + (r))
#define FRAME_MAX	(14 + 20 + 8 + (int)sizeof(struct xina_hdr) + \
			 4 * XINA_MAX_ELEMS)
#define META_MAX	64	/* room to spare behind a frame */
#define COOKIE		0x78696e61636f6f6bULL	/* xina_cookie: "xinacook" */
#define HDRS_LEN	(14 + 20 + 8)
#define PAYLOAD_OFF	(HDRS_LEN + (int)sizeof(struct xina_hdr))
#define EPOCH0		0x5eed0001U	/* the job's epoch as "job add" set it */

static const __u8 sw_mac[ETH_ALEN] = { 0x02, 0, 0, 0, 0xfe, 0x01 };

/* The job's secret, and the keys derived from it (keys_init()). */
static const __u8 SECRET[XINA_SECRET_BYTES] = {
	0x5e, 0xc1, 0xe7, 0x00, 0x11, 0x22, 0x33, 0x44,
	0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc,
};
static __u64 K[XINA_MAX_WORKERS][2], KRES[2];
static __u32 NHK[XINA_MAX_ELEMS];

static void keys_init(void)
{
	unsigned int r;

	for (r = 0; r < XINA_MAX_WORKERS; r++)
		xina_derive_key(SECRET, XINA_LABEL_MEMBER, JOB_ID, r, K[r]);
	xina_derive_key(SECRET, XINA_LABEL_RESULT, JOB_ID, 0, KRES);
	xina_derive_nh(SECRET, JOB_ID, NHK, XINA_MAX_ELEMS);
}

struct fixture {
	struct xina *skel;
	int xdp, fanout;
	int jobs, members, meta, vals, stats, nhkeys;
	int epochs, joins, active;
	struct xina_job job;
	int ncpus;
};

static struct fixture F;
static bool have_netns;

static void wk_mac(__u8 *mac, unsigned int rank)
{
	const __u8 m[ETH_ALEN] = { 0x02, 0, 0, 0, 0x07, (__u8)rank };

	memcpy(mac, m, ETH_ALEN);
}

/* ---- fixture ------------------------------------------------------------ */

static int fx_open(void)
{
	struct xina *s;
	int err;

	F.ncpus = libbpf_num_possible_cpus();
	if (F.ncpus <= 0 || F.ncpus > XINA_MAX_CPUS) {
		LOG("possible CPUs: %d", F.ncpus);
		return -1;
	}
	s = xina__open();
	if (!s) {
		LOG("xina__open: %s", strerror(errno));
		return -1;
	}
	s->rodata->nr_cpus = F.ncpus;
	s->rodata->xina_cookie = COOKIE;
	bpf_map__set_max_entries(s->maps.xina_meta, NR_VERSIONS);
	bpf_map__set_max_entries(s->maps.xina_vals, NR_VERSIONS);
	/* members of job indexes 0..JOB_IDX only */
	bpf_map__set_max_entries(s->maps.xina_members,
				 (JOB_IDX + 1) * XINA_MAX_WORKERS);
	err = xina__load(s);
	if (err) {
		LOG("xina__load: %s", strerror(-err));
		xina__destroy(s);
		return -1;
	}
	F.skel = s;
	F.xdp = bpf_program__fd(s->progs.xina_xdp);
	F.fanout = bpf_program__fd(s->progs.xina_fanout);
	F.jobs = bpf_map__fd(s->maps.xina_jobs);
	F.members = bpf_map__fd(s->maps.xina_members);
	F.meta = bpf_map__fd(s->maps.xina_meta);
	F.vals = bpf_map__fd(s->maps.xina_vals);
	F.stats = bpf_map__fd(s->maps.xina_stats);
	F.nhkeys = bpf_map__fd(s->maps.xina_nhkeys);
	F.epochs = bpf_map__fd(s->maps.xina_epochs);
	F.joins = bpf_map__fd(s->maps.xina_joins);
	F.active = bpf_map__fd(s->maps.xina_active);
	return 0;
}

static void fx_close(void)
{
	xina__destroy(F.skel);
	memset(&F, 0, sizeof(F));
}

/* Index of member @rank of the job in xina_members. */
static __u32 member_key(unsigned int rank)
{
	return JOB_IDX * XINA_MAX_WORKERS + rank;
}

/* Configure the job as "xinactl job add" does.  port: members' UDP port
 * (0: any).  Its epoch is EPOCH0, no member joined. */
static int job_add(unsigned int workers, unsigned int slots,
		   unsigned int elems, bool port)
{
	__u32 bucket = xina_job_bucket(JOB_ID, 0), k = JOB_IDX;
	struct xina_epoch ep = { .j.epoch = EPOCH0 };
	struct xina_nhkey nhk;
	struct xina_member m = {};
	unsigned int r;

	if (fx_open())
		return -1;
	if (SLOT_BASE + 2 * slots > NR_VERSIONS)
		return -1;
	F.job = (struct xina_job){
		.kres = { KRES[0], KRES[1] }, .id = JOB_ID, .idx = JOB_IDX,
		.slot_base = SLOT_BASE, .slots = slots,
		.workers = workers, .elems = elems,
	};
	memcpy(nhk.k, NHK, sizeof(nhk.k));
	if (bpf_map_update_elem(F.nhkeys, &k, &nhk, BPF_ANY) ||
	    bpf_map_update_elem(F.epochs, &k, &ep, BPF_ANY))
		return -1;
	for (r = 0; r < workers; r++) {
		k = member_key(r);
		m.addr = htonl(WK_IP(r));
		m.port = port ? htons(WK_PORT(r)) : 0;
		memcpy(m.key, K[r], sizeof(m.key));
		if (bpf_map_update_elem(F.members, &k, &m, BPF_ANY))
			return -1;
	}
	/* last, as xinactl does: the job appears with its members */
	return bpf_map_update_elem(F.jobs, &bucket, &F.job, BPF_ANY);
}

/* ---- frames ------------------------------------------------------------- */

/* Value of element i of rank r's contribution to (slot, round): mixed
 * signs and magnitudes, so that sums wrap and max is not trivial. */
static __s32 val(unsigned int r, __u32 slot, __u32 round, unsigned int i)
{
	__u32 x = (r + 1) * 2654435761U ^ slot * 40503U ^ round * 97U ^
		  i * 2246822519U;

	x ^= x >> 13;
	x *= 3266489917U;
	x ^= x >> 16;
	return (__s32)x;
}

struct contrib {
	__u8 version, type, dtype, op, flags;
	__s8 exp;
	__u16 count, weight, rank;
	__u32 job, slot, round, epoch, aux;
	__u64 offset;
	__u32 saddr, daddr;	/* host order */
	__u16 sport, dport;
	unsigned int nvals;	/* elements in the payload (default count) */
	unsigned int tag_rank;	/* whose key tags it (default rank) */
	__u64 tag_xor;		/* flipped in the tag once computed */
	int flip_elem;		/* element changed after tagging; -1: none */
	const __u32 *words;	/* the payload's words (host order); NULL:
				 * val() */
};

static struct contrib contrib(unsigned int rank, __u32 slot, __u32 round,
			      __u16 count, __u8 op)
{
	return (struct contrib){
		.version = XINA_WIRE_VERSION, .type = XINA_T_CONTRIB,
		.dtype = XINA_DTYPE_INT32, .op = op, .exp = -3,
		.count = count, .rank = rank, .job = JOB_ID, .slot = slot,
		.round = round, .epoch = EPOCH0, .offset = 1000 + slot,
		.saddr = WK_IP(rank), .daddr = SW_IP,
		.sport = WK_PORT(rank), .dport = XINA_UDP_PORT,
		.nvals = count, .tag_rank = rank, .flip_elem = -1,
	};
}

/* Ones' complement sum of @len bytes as big-endian 16-bit words. */
static __u32 csum_add(__u32 sum, const void *p, size_t len)
{
	const __u8 *b = p;

	for (; len > 1; b += 2, len -= 2)
		sum += b[0] << 8 | b[1];
	if (len)
		sum += b[0] << 8;
	return sum;
}

static __u16 csum_fold(__u32 sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum & 0xffff;
}

static __u16 ip_csum(const void *p, int len)
{
	const __u16 *w = p;
	__u32 sum = 0;

	while (len > 1) {
		sum += *w++;
		len -= 2;
	}
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return ~sum & 0xffff;
}

/* NH of @n elements in network order, with NH key @k. */
static __u64 nh_wire_k(const __u32 *k, const __be32 *v, unsigned int n)
{
	static __u32 m[XINA_MAX_ELEMS];
	unsigned int i;

	for (i = 0; i < n && i < XINA_MAX_ELEMS; i++)
		m[i] = ntohl(v[i]);
	return xina_nh(k, m, i);
}

/* NH of @n elements in network order, with the job's NH key. */
static __u64 nh_wire(const __be32 *v, unsigned int n)
{
	return nh_wire_k(NHK, v, n);
}

/* Does the result (or answer) in @frame carry the result key's tag? */
static bool result_tag_ok(const __u8 *frame)
{
	const struct xina_hdr *xh = (const void *)(frame + HDRS_LEN);

	return be64toh(xh->tag) ==
	       xina_tag_hdr(KRES, xh, nh_wire((const __be32 *)(xh + 1),
					      ntohs(xh->count)));
}

static size_t build_frame(__u8 *buf, const struct contrib *c)
{
	struct ethhdr *eth = (void *)buf;
	struct iphdr *iph = (void *)(eth + 1);
	struct udphdr *udp = (void *)(iph + 1);
	struct xina_hdr *xh = (void *)(udp + 1);
	__be32 *v = (void *)(xh + 1);
	unsigned int i;
	size_t len;

	len = PAYLOAD_OFF + 4 * c->nvals;
	memset(buf, 0, len);
	memcpy(eth->h_dest, sw_mac, ETH_ALEN);
	wk_mac(eth->h_source, c->rank);
	eth->h_proto = htons(ETH_P_IP);
	iph->version = 4;
	iph->ihl = 5;
	iph->ttl = 64;
	iph->protocol = IPPROTO_UDP;
	iph->tot_len = htons(len - sizeof(*eth));
	iph->saddr = htonl(c->saddr);
	iph->daddr = htonl(c->daddr);
	iph->check = ip_csum(iph, sizeof(*iph));
	udp->source = htons(c->sport);
	udp->dest = htons(c->dport);
	udp->len = htons(len - sizeof(*eth) - sizeof(*iph));
	xh->version = c->version;
	xh->type = c->type;
	xh->dtype = c->dtype;
	xh->op = c->op;
	xh->flags = c->flags;
	xh->exp = c->exp;
	xh->count = htons(c->count);
	xh->job = htonl(c->job);
	xh->rank = htons(c->rank);
	xh->weight = htons(c->weight);
	xh->slot = htonl(c->slot);
	xh->round = htonl(c->round);
	xh->epoch = htonl(c->epoch);
	xh->aux = htonl(c->aux);
	xh->offset = htobe64(c->offset);
	for (i = 0; i < c->nvals; i++)
		v[i] = htonl(c->words ? c->words[i] :
					(__u32)val(c->rank, c->slot, c->round,
						   i));
	xh->tag = htobe64(xina_tag_hdr(K[c->tag_rank % XINA_MAX_WORKERS], xh,
				       nh_wire(v, c->nvals)) ^ c->tag_xor);
	if (c->flip_elem >= 0 && (unsigned int)c->flip_elem < c->nvals)
		v[c->flip_elem] ^= htonl(1 << 20);
	return len;
}

/*
 * One run of xina_xdp.  A result or an answer is handed to the TC fan-out
 * with XDP_PASS and a struct xina_mark over the frame's first bytes (its
 * Ethernet and IPv4 headers): @mark holds a copy (cookie 0 when there was
 * none) and @out the frame.
 */
struct run {
	int err;
	__u32 retval;
	__u32 len;
	struct xina_mark mark;
	__u8 out[FRAME_MAX + META_MAX];
};

static int pin_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/* Run xina_xdp once on @in, as if received on ifindex (lo by default). */
static void run_on(const void *in, __u32 len, struct run *r, int ifindex)
{
	struct xdp_md md = {
		.data_end = len,
		.ingress_ifindex = ifindex,
	};
	LIBBPF_OPTS(bpf_test_run_opts, o,
		.data_in = in,
		.data_size_in = len,
		.data_out = r->out,
		.data_size_out = sizeof(r->out),
		.ctx_in = &md,
		.ctx_size_in = sizeof(md),
		.repeat = 1,
	);

	r->err = bpf_prog_test_run_opts(F.xdp, &o) ? -errno : 0;
	r->retval = o.retval;
	r->len = o.data_size_out;
	memset(&r->mark, 0, sizeof(r->mark));
	if (!r->err && r->retval == XDP_PASS && r->len >= sizeof(r->mark) &&
	    ((struct xina_mark *)r->out)->cookie == COOKIE)
		memcpy(&r->mark, r->out, sizeof(r->mark));
}



static void run(const void *in, __u32 len, struct run *r)
{
	run_on(in, len, r, 1);
}

/*
 * Verdicts of send_c() beyond the XDP actions: a marked XDP_PASS, a result
 * for every member or an answer for rank r->mark.to alone.
 */
#define V_RESULT	100
#define V_ANSWER	101

static int verdict(const struct run *r)
{
	if (r->err)
		return r->err;
	if (!r->mark.cookie)
		return r->retval;
	if (r->mark.job != JOB_ID) {
		LOG("marked for job %u, not %u", r->mark.job, JOB_ID);
		return -EPROTO;
	}
	return r->mark.to == XINA_MARK_ALL ? V_RESULT : V_ANSWER;
}

static int send_c(const struct contrib *c, struct run *r)
{
	static __u8 buf[FRAME_MAX];
	size_t len = build_frame(buf, c);

	run(buf, len, r);
	return verdict(r);
}

/* ---- state readers ------------------------------------------------------ */

static __u64 stat_of(__u32 idx, unsigned int stat)
{
	struct xina_counters c[XINA_MAX_CPUS];
	__u64 sum = 0;
	int i;

	if (bpf_map_lookup_elem(F.stats, &idx, c))
		return ~0ULL;
	for (i = 0; i < F.ncpus; i++)
		sum += c[i].c[stat];
	return sum;
}

static __u64 jstat(unsigned int stat)
{
	return stat_of(JOB_IDX, stat);
}

static __u64 gstat(unsigned int stat)
{
	return stat_of(XINA_MAX_JOBS, stat);
}

static int meta_of(__u32 slot, __u32 round, struct xina_meta *m)
{
	__u32 idx = SLOT_BASE + 2 * slot + (round & 1);

	return bpf_map_lookup_elem(F.meta, &idx, m);
}

/* Every byte of the job's slot memory: meta and all CPUs' partials. */
struct snapshot {
	size_t len;
	__u8 *buf;
};

static int snap_take(struct snapshot *s)
{
	size_t vsz = F.ncpus * ((sizeof(struct xina_part) + 7) & ~7UL);
	size_t n = 2 * F.job.slots, per = sizeof(struct xina_meta) + vsz;
	__u32 idx, i;

	s->len = n * per;
	s->buf = calloc(1, s->len);
	if (!s->buf)
		return -1;
	for (i = 0; i < n; i++) {
		idx = F.job.slot_base + i;
		if (bpf_map_lookup_elem(F.meta, &idx, s->buf + i * per) ||
		    bpf_map_lookup_elem(F.vals, &idx,
					s->buf + i * per + sizeof(struct xina_meta)))
			return -1;
	}
	return 0;
}

static bool snap_same(const struct snapshot *a)
{
	struct snapshot b;
	bool same;

	if (snap_take(&b))
		return false;
	same = b.len == a->len && !memcmp(a->buf, b.buf, a->len);
	free(b.buf);
	return same;
}

/* ---- result checks ------------------------------------------------------ */

static __s32 expect_elem(__u8 op, unsigned int workers, __u32 slot,
			 __u32 round, unsigned int i)
{
	__u32 sum = 0;
	__s32 max = INT32_MIN;
	unsigned int r;

	for (r = 0; r < workers; r++) {
		__s32 v = val(r, slot, round, i);

		sum += (__u32)v;
		if (v > max)
			max = v;
	}
	return op == XINA_OP_SUM ? (__s32)sum : max;
}

/* Number of elements of @out that differ from the expected aggregate. */
static unsigned int result_errors(const __u8 *out, __u8 op,
				  unsigned int workers, __u32 slot,
				  __u32 round, unsigned int count)
{
	const __be32 *v = (const void *)(out + PAYLOAD_OFF);
	unsigned int i, bad = 0;

	for (i = 0; i < count; i++) {
		__s32 want = expect_elem(op, workers, slot, round, i);

		if ((__s32)ntohl(v[i]) != want) {
			if (!bad)
				LOG("slot %u round %u elem %u: %d, want %d",
				    slot, round, i, (__s32)ntohl(v[i]),
				    want);
			bad++;
		}
	}
	return bad;
}

static const struct xina_hdr *xhdr(const __u8 *frame)
{
	return (const void *)(frame + HDRS_LEN);
}

static const struct iphdr *iphdr(const __u8 *frame)
{
	return (const void *)(frame + sizeof(struct ethhdr));
}

static const struct udphdr *udphdr(const __u8 *frame)
{
	return (const void *)(frame + sizeof(struct ethhdr) +
			      sizeof(struct iphdr));
}

/* ---- aggregation -------------------------------------------------------- */

/* All workers contribute to (slot, round): the last one gets the result. */
static void aggregate(struct __test_metadata *_metadata, unsigned int workers,
		      __u8 op, __u16 count)
{
	struct xina_meta m;
	struct contrib c;
	struct run r;
	unsigned int w;

	ASSERT_EQ(0, job_add(workers, 4, count > 64 ? count : 64, false));
	for (w = 0; w < workers; w++) {
		c = contrib(w, 2, 0, count, op);
		ASSERT_EQ(send_c(&c, &r),
			  w + 1 < workers ? XDP_DROP : V_RESULT);
	}
	ASSERT_EQ(r.len, PAYLOAD_OFF + 4 * count);
	EXPECT_EQ(xhdr(r.out)->type, XINA_T_RESULT);
	EXPECT_EQ(ntohs(xhdr(r.out)->count), count);
	EXPECT_EQ(be64toh(xhdr(r.out)->offset), 1000 + 2);
	EXPECT_EQ(ntohs(xhdr(r.out)->rank), 0);
	EXPECT_EQ(xhdr(r.out)->flags, 0);
	EXPECT_EQ(xhdr(r.out)->exp, -3);
	EXPECT_TRUE(result_tag_ok(r.out)) {
		TH_LOG("result tag does not verify");
	}
	/* addressed by the fan-out, per member: see fanout_live */
	EXPECT_EQ(result_errors(r.out, op, workers, 2, 0, count), 0);
	EXPECT_EQ(jstat(XINA_STAT_CONTRIB), workers);
	EXPECT_EQ(jstat(XINA_STAT_COMPLETE), 1);
	EXPECT_EQ(jstat(XINA_STAT_RX), workers);
	ASSERT_EQ(0, meta_of(2, 0, &m));
	EXPECT_EQ(m.complete, 1);
	EXPECT_EQ(m.claimed, workers);
	EXPECT_EQ(XINA_DONE_COUNT(m.done), workers);
	EXPECT_EQ(m.count, count);
}

/*
 * Every test starts from nothing (it opens the object itself, fx_open())
 * and leaves nothing behind: the harness runs each in a child of its own,
 * and the teardown removes what the child made in the shared netns.
 */
static void teardown(void);

FIXTURE(fp) {};

FIXTURE_SETUP(fp)
{
}

FIXTURE_TEARDOWN(fp)
{
	teardown();
}

/*
 * One round of each shape: its workers contribute its count of elements
 * with its op, the last one gets the result (aggregate()).
 */
FIXTURE(agg) {};

FIXTURE_VARIANT(agg) {
	unsigned int	workers;
	__u8		op;
	__u16		count;
};

FIXTURE_SETUP(agg)
{
}

FIXTURE_TEARDOWN(agg)
{
	teardown();
}

FIXTURE_VARIANT_ADD(agg, sum_2_workers) { 2, XINA_OP_SUM, 64 };
FIXTURE_VARIANT_ADD(agg, sum_4_workers) { 4, XINA_OP_SUM, 64 };
FIXTURE_VARIANT_ADD(agg, max_2_workers) { 2, XINA_OP_MAX, 64 };
FIXTURE_VARIANT_ADD(agg, max_4_workers) { 4, XINA_OP_MAX, 64 };
FIXTURE_VARIANT_ADD(agg, one_worker) { 1, XINA_OP_SUM, 64 };
FIXTURE_VARIANT_ADD(agg, count_below_slot_size) { 3, XINA_OP_SUM, 5 };
FIXTURE_VARIANT_ADD(agg, count_one) { 2, XINA_OP_MAX, 1 };
/*
 * Jumbo frames: longer than a page, so BPF_PROG_TEST_RUN hands them over in
 * several buffers, as veth does; the elements beyond the first buffer are
 * read and the result written through bpf_xdp_{load,store}_bytes().
 */
FIXTURE_VARIANT_ADD(agg, sum_jumbo) { 4, XINA_OP_SUM, XINA_MAX_ELEMS };
FIXTURE_VARIANT_ADD(agg, max_jumbo) { 3, XINA_OP_MAX, XINA_MAX_ELEMS };
/* Lengths that split elements between the buffers, and end in a tail. */
FIXTURE_VARIANT_ADD(agg, sum_jumbo_1027) { 2, XINA_OP_SUM, 1027 };
FIXTURE_VARIANT_ADD(agg, sum_jumbo_2045) { 2, XINA_OP_SUM, 2045 };

TEST_F(agg, round)
{
	aggregate(_metadata, variant->workers, variant->op, variant->count);
}

/*
 * Every length of a block's tail, in the first buffer and beyond it: the
 * fast path stages, hashes and writes out whole blocks of up to 32
 * elements and the rest one pair at a time, and the elements beyond the
 * first buffer (about 857 here) chunk by chunk.  For each count a forgery
 * with its last element changed is refused and takes nothing, then the
 * genuine round completes with the exact sum and a result tag that
 * verifies, and a retransmission is answered from the kept result, the
 * same again.
 */
TEST_F(fp, count_sweep)
{
	static const unsigned int ranges[][2] = {
		{ 1, 72 }, { 830, 900 }, { 1010, 1040 }, { 1980, XINA_MAX_ELEMS },
	};
	unsigned int g, n, k = 0, bad = 0;
	__u64 auth = 0;
	struct contrib c;
	struct run r;

	ASSERT_EQ(0, job_add(2, 4, XINA_MAX_ELEMS, false));
	for (g = 0; g < sizeof(ranges) / sizeof(ranges[0]); g++) {
		for (n = ranges[g][0]; n <= ranges[g][1]; n++, k++) {
			__u32 slot = k % 4, round = k / 4;

			c = contrib(0, slot, round, n, XINA_OP_SUM);
			ASSERT_EQ(send_c(&c, &r), XDP_DROP);
			c = contrib(1, slot, round, n, XINA_OP_SUM);
			c.flip_elem = n - 1;
			ASSERT_EQ(send_c(&c, &r), XDP_DROP);
			EXPECT_EQ(jstat(XINA_STAT_DROP_AUTH), ++auth) {
				TH_LOG("count %u: forged last element taken",
				       n);
			}
			c.flip_elem = -1;
			ASSERT_EQ(send_c(&c, &r), V_RESULT);
			EXPECT_EQ(r.len, PAYLOAD_OFF + 4 * n);
			bad += result_errors(r.out, XINA_OP_SUM, 2, slot,
					     round, n) != 0;
			EXPECT_TRUE(result_tag_ok(r.out)) {
				TH_LOG("count %u: result tag", n);
			}
			c = contrib(0, slot, round, n, XINA_OP_SUM);
			c.flags = XINA_F_RETRANS;
			ASSERT_EQ(send_c(&c, &r), V_ANSWER);
			bad += result_errors(r.out, XINA_OP_SUM, 2, slot,
					     round, n) != 0;
			EXPECT_TRUE(result_tag_ok(r.out)) {
				TH_LOG("count %u: answer tag", n);
			}
		}
	}
	EXPECT_EQ(bad, 0);
	EXPECT_EQ(jstat(XINA_STAT_COMPLETE), k);
}

/* Round r+1 runs on the other version while round r's result is kept. */
/* send_c() of @c with @pad bytes of 0xee after its datagram. */
static int send_padded(const struct contrib *c, size_t pad, struct run *r)
{
	static __u8 buf[FRAME_MAX + 64];
	size_t len = build_frame(buf, c);

	memset(buf + len, 0xee, pad);
	run(buf, len + pad, r);
	return verdict(r);
}

/*
 * Bytes after the datagram (Ethernet padding, a trailer) are cut before
 * the packet is read: the result a padded contribution completes, and the
 * answer to a padded retransmission, are the datagram and no byte more
 * (the fan-out sizes what it sends by the frame).  The padding may even
 * be longer than the payload, and the ZERO contribution's header alone.
 */
TEST_F(fp, padding_cut)
{
	struct contrib c;
	struct run r;

	ASSERT_EQ(0, job_add(2, 4, 32, false));
	c = contrib(0, 1, 0, 32, XINA_OP_SUM);
	ASSERT_EQ(send_padded(&c, 60, &r), XDP_DROP);
	c = contrib(1, 1, 0, 32, XINA_OP_SUM);
	ASSERT_EQ(send_padded(&c, 16, &r), V_RESULT);
	EXPECT_EQ(r.len, PAYLOAD_OFF + 4 * 32);
	EXPECT_EQ(result_errors(r.out, XINA_OP_SUM, 2, 1, 0, 32), 0);
	EXPECT_TRUE(result_tag_ok(r.out));

	c.flags = XINA_F_RETRANS;
	ASSERT_EQ(send_padded(&c, 200, &r), V_ANSWER);
	EXPECT_EQ(r.len, PAYLOAD_OFF + 4 * 32);
	EXPECT_EQ(result_errors(r.out, XINA_OP_SUM, 2, 1, 0, 32), 0);
	EXPECT_TRUE(result_tag_ok(r.out));
}

TEST_F(fp, next_round_other_version)
{
	struct xina_meta m0, m1;
	struct contrib c;
	struct run r;

	ASSERT_EQ(0, job_add(2, 4, 32, false));
	c = contrib(0, 1, 0, 32, XINA_OP_SUM);
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	c = contrib(1, 1, 0, 32, XINA_OP_SUM);
	ASSERT_EQ(send_c(&c, &r), V_RESULT);

	/* round 1 opens on version 1 */
	c = contrib(0, 1, 1, 32, XINA_OP_SUM);
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	/* rank 1 lost round 0's result: answered from version 0 */
	c = contrib(1, 1, 0, 32, XINA_OP_SUM);
	c.flags = XINA_F_RETRANS;
	ASSERT_EQ(send_c(&c, &r), V_ANSWER);
	EXPECT_EQ(result_errors(r.out, XINA_OP_SUM, 2, 1, 0, 32), 0);
	c = contrib(1, 1, 1, 32, XINA_OP_SUM);
	ASSERT_EQ(send_c(&c, &r), V_RESULT);
	EXPECT_EQ(result_errors(r.out, XINA_OP_SUM, 2, 1, 1, 32), 0);

	ASSERT_EQ(0, meta_of(1, 0, &m0));
	ASSERT_EQ(0, meta_of(1, 1, &m1));
	EXPECT_TRUE(m0.round == 0 && m0.complete) {
		TH_LOG("version 0 lost round 0");
	}
	EXPECT_TRUE(m1.round == 1 && m1.complete) {
		TH_LOG("version 1 not round 1");
	}

	/* round 2 reuses version 0 from scratch: nothing of round 0 leaks */
	c = contrib(1, 1, 2, 32, XINA_OP_SUM);
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	c = contrib(0, 1, 2, 32, XINA_OP_SUM);
	ASSERT_EQ(send_c(&c, &r), V_RESULT);
	EXPECT_EQ(result_errors(r.out, XINA_OP_SUM, 2, 1, 2, 32), 0);
	EXPECT_EQ(jstat(XINA_STAT_COMPLETE), 3);
	EXPECT_EQ(jstat(XINA_STAT_RETRANS_ANSWERED), 1);
}

/* @c as XINA_F_ZERO: its header alone, count words of zero. */
static struct contrib zero_of(struct contrib c)
{
	c.flags |= XINA_F_ZERO;
	c.nvals = 0;
	return c;
}

/*
 * Are the @count words at @out + PAYLOAD_OFF the SUM of ranks @mask's
 * val() of @slot, @round, and the result's tag right for them?
 */
static int zero_sum_errors(const __u8 *out, unsigned int mask, __u32 slot,
			   __u32 round, unsigned int count)
{
	const __be32 *v = (const void *)(out + PAYLOAD_OFF);
	unsigned int i, w, bad = 0;
	__u32 want;

	for (i = 0; i < count; i++) {
		for (want = 0, w = 0; w < 8; w++)
			if (mask >> w & 1)
				want += (__u32)val(w, slot, round, i);
		if (ntohl(v[i]) != want && !bad++)
			LOG("slot %u round %u elem %u: 0x%08x, want 0x%08x",
			    slot, round, i, ntohl(v[i]), want);
	}
	return bad + !result_tag_ok(out);
}

/*
 * XINA_F_ZERO: a member whose block is zero words sends its header alone;
 * it counts as contributed and adds nothing.  The last contribution of a
 * round may be such a header: the frame cannot hold the result, so it is
 * passed marked to be filled (xina_fanout grows it), tagged for the
 * result, and the kept result answers resends as any other.
 */
TEST_F(fp, zero_contrib)
{
	__u8 hdr[PAYLOAD_OFF];
	struct contrib c;
	struct run r;
	unsigned int i;

	ASSERT_EQ(0, job_add(3, 4, 16, false));
	/* a ZERO in the middle: rank 2's full frame carries the result */
	c = contrib(0, 0, 0, 16, XINA_OP_SUM);
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	c = zero_of(contrib(1, 0, 0, 16, XINA_OP_SUM));
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	c = contrib(2, 0, 0, 16, XINA_OP_SUM);
	ASSERT_EQ(send_c(&c, &r), V_RESULT);
	ASSERT_EQ(r.len, PAYLOAD_OFF + 4 * 16);
	EXPECT_EQ(r.mark.fill, 0);
	EXPECT_EQ(zero_sum_errors(r.out, 1 << 0 | 1 << 2, 0, 0, 16), 0);

	/* a ZERO last: the header alone, marked to be filled from the part */
	c = contrib(0, 1, 0, 16, XINA_OP_SUM);
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	c = contrib(2, 1, 0, 16, XINA_OP_SUM);
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	c = zero_of(contrib(1, 1, 0, 16, XINA_OP_SUM));
	ASSERT_EQ(send_c(&c, &r), V_RESULT);
	ASSERT_EQ(r.len, PAYLOAD_OFF);
	EXPECT_EQ(r.mark.to, XINA_MARK_ALL);
	EXPECT_EQ(r.mark.fill, 16);
	EXPECT_EQ(r.mark.idx, SLOT_BASE + 2 * 1 + 0);
	EXPECT_EQ(r.mark.epoch, EPOCH0);
	EXPECT_EQ(r.mark.round, 0);
	EXPECT_EQ(xhdr(r.out)->type, XINA_T_RESULT);
	EXPECT_EQ(xhdr(r.out)->flags, 0);
	memcpy(hdr, r.out, sizeof(hdr));
	/* rank 1 lost it: its resend carries the zero words, and is answered */
	c = contrib(1, 1, 0, 16, XINA_OP_SUM);
	c.flags = XINA_F_RETRANS;
	c.words = (const __u32[16]){ 0 };
	ASSERT_EQ(send_c(&c, &r), V_ANSWER);
	EXPECT_EQ(zero_sum_errors(r.out, 1 << 0 | 1 << 2, 1, 0, 16), 0);
	/* the header passed to be filled is the answer's: tag included */
	EXPECT_TRUE(!memcmp(hdr + HDRS_LEN, r.out + HDRS_LEN,
			    sizeof(hdr) - HDRS_LEN)) {
		TH_LOG("the filled result's header is not the kept one");
	}

	/* every member ZERO: zeros, a part of no data made on the last CPU */
	for (i = 0; i < 3; i++) {
		if (F.ncpus > 1)
			ASSERT_EQ(0, pin_cpu(i == 2));
		c = zero_of(contrib(i, 2, 0, 16, XINA_OP_SUM));
		ASSERT_EQ(send_c(&c, &r), i < 2 ? XDP_DROP : V_RESULT);
	}
	EXPECT_EQ(r.mark.fill, 16);
	c = contrib(0, 2, 0, 16, XINA_OP_SUM);
	c.flags = XINA_F_RETRANS;
	ASSERT_EQ(send_c(&c, &r), V_ANSWER);
	EXPECT_EQ(zero_sum_errors(r.out, 0, 2, 0, 16), 0);

	/* a full one on CPU 0, the ZEROs on CPU 1: the last CPU folds it */
	if (F.ncpus > 1) {
		ASSERT_EQ(0, pin_cpu(0));
		c = contrib(0, 3, 0, 16, XINA_OP_SUM);
		ASSERT_EQ(send_c(&c, &r), XDP_DROP);
		ASSERT_EQ(0, pin_cpu(1));
		for (i = 1; i < 3; i++) {
			c = zero_of(contrib(i, 3, 0, 16, XINA_OP_SUM));
			ASSERT_EQ(send_c(&c, &r), i < 2 ? XDP_DROP : V_RESULT);
		}
		EXPECT_EQ(r.mark.cpu, 1);
		c = contrib(2, 3, 0, 16, XINA_OP_SUM);
		c.flags = XINA_F_RETRANS;
		ASSERT_EQ(send_c(&c, &r), V_ANSWER);
		EXPECT_EQ(zero_sum_errors(r.out, 1 << 0, 3, 0, 16), 0);
	}
	pin_cpu(0);
	/* the next round of slot 1 on the same version: nothing left over */
	for (i = 0; i < 3; i++) {
		c = i == 1 ? contrib(1, 1, 2, 16, XINA_OP_SUM) :
			     zero_of(contrib(i, 1, 2, 16, XINA_OP_SUM));
		ASSERT_EQ(send_c(&c, &r), i < 2 ? XDP_DROP : V_RESULT);
	}
	c = contrib(0, 1, 2, 16, XINA_OP_SUM);
	c.flags = XINA_F_RETRANS;
	ASSERT_EQ(send_c(&c, &r), V_ANSWER);
	EXPECT_EQ(zero_sum_errors(r.out, 1 << 1, 1, 2, 16), 0);
	EXPECT_EQ(jstat(XINA_STAT_CONTRIB), 3 * 5);
	EXPECT_EQ(jstat(XINA_STAT_COMPLETE), 5);
}

/*
 * XINA_F_ZERO that breaks its rules changes nothing: with words, with
 * XINA_F_RETRANS (malformed), with an op whose identity is not zero
 * (drop_op), with a tag that does not verify (drop_auth), with another
 * count than its round's (drop_range).
 */
TEST_F(fp, zero_refused)
{
	struct snapshot s = {};
	struct contrib c;
	struct run r;

	ASSERT_EQ(0, job_add(2, 4, 16, false));
	c = contrib(0, 0, 0, 16, XINA_OP_SUM);
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	ASSERT_EQ(0, snap_take(&s));

	c = contrib(1, 0, 0, 16, XINA_OP_SUM);
	c.flags = XINA_F_ZERO;			/* words follow */
	EXPECT_EQ(send_c(&c, &r), XDP_DROP);
	c = zero_of(contrib(1, 0, 0, 16, XINA_OP_SUM));
	c.flags |= XINA_F_RETRANS;
	EXPECT_EQ(send_c(&c, &r), XDP_DROP);
	EXPECT_EQ(gstat(XINA_GSTAT_MALFORMED), 2);

	c = zero_of(contrib(1, 1, 0, 16, XINA_OP_MIN));
	EXPECT_EQ(send_c(&c, &r), XDP_DROP);
	c = zero_of(contrib(1, 1, 0, 16, XINA_OP_AND));
	EXPECT_EQ(send_c(&c, &r), XDP_DROP);
	EXPECT_EQ(jstat(XINA_STAT_DROP_OP), 2);

	c = zero_of(contrib(1, 0, 0, 16, XINA_OP_SUM));
	c.tag_xor = 1;
	EXPECT_EQ(send_c(&c, &r), XDP_DROP);
	EXPECT_EQ(jstat(XINA_STAT_DROP_AUTH), 1);

	c = zero_of(contrib(1, 0, 0, 8, XINA_OP_SUM));
	EXPECT_EQ(send_c(&c, &r), XDP_DROP);
	EXPECT_EQ(jstat(XINA_STAT_DROP_RANGE), 1);

	EXPECT_EQ(jstat(XINA_STAT_CONTRIB), 1);
	EXPECT_TRUE(snap_same(&s)) {
		TH_LOG("a refused ZERO changed slot state");
	}
	free(s.buf);
	/* and the round still completes on a good one */
	c = zero_of(contrib(1, 0, 0, 16, XINA_OP_SUM));
	EXPECT_EQ(send_c(&c, &r), V_RESULT);
}

/* A retransmission to a completed version gets the result, to itself. */
TEST_F(fp, retransmission_answered)
{
	__u8 result[PAYLOAD_OFF + 4 * 16];
	struct snapshot s = {};
	struct contrib c;
	struct run r;
	unsigned int w;

	ASSERT_EQ(0, job_add(3, 4, 16, false));
	for (w = 0; w < 3; w++) {
		c = contrib(w, 3, 1, 16, XINA_OP_SUM);
		c.exp = 5 + w;
		ASSERT_EQ(send_c(&c, &r), w < 2 ? XDP_DROP : V_RESULT);
	}
	ASSERT_EQ(r.len, sizeof(result));
	memcpy(result, r.out, sizeof(result));
	ASSERT_EQ(0, snap_take(&s));
	c = contrib(1, 3, 1, 16, XINA_OP_SUM);
	c.flags = XINA_F_RETRANS;
	c.exp = 0;
	ASSERT_EQ(send_c(&c, &r), V_ANSWER);
	EXPECT_EQ(r.mark.to, 1);	/* for the sender alone */
	ASSERT_EQ(r.len, PAYLOAD_OFF + 4 * 16);
	EXPECT_EQ(xhdr(r.out)->type, XINA_T_RESULT);
	EXPECT_EQ(ntohs(xhdr(r.out)->rank), 0);
	EXPECT_EQ(xhdr(r.out)->exp, 5 + 2);	/* the completer's */
	EXPECT_EQ(result_errors(r.out, XINA_OP_SUM, 3, 3, 1, 16), 0);
	/* the result as it was sent, header and kept tag included */
	EXPECT_TRUE(!memcmp(r.out + HDRS_LEN, result + HDRS_LEN,
			    sizeof(result) - HDRS_LEN)) {
		TH_LOG("the answer is not the result");
	}
	EXPECT_TRUE(result_tag_ok(r.out)) {
		TH_LOG("answer tag does not verify");
	}
	EXPECT_EQ(jstat(XINA_STAT_RETRANS_ANSWERED), 1);
	EXPECT_EQ(jstat(XINA_STAT_CONTRIB), 3);
	EXPECT_TRUE(snap_same(&s)) {
		TH_LOG("answering changed slot state");
	}
	free(s.buf);
}

/* A duplicate of a pending round is dropped and never added twice. */
TEST_F(fp, duplicate_pending)
{
	struct contrib c;
	struct run r;

	ASSERT_EQ(0, job_add(3, 4, 16, false));
	c = contrib(0, 0, 0, 16, XINA_OP_SUM);
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	c.flags = XINA_F_RETRANS;
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	EXPECT_EQ(jstat(XINA_STAT_DUP), 2);
	EXPECT_EQ(jstat(XINA_STAT_CONTRIB), 1);
	c = contrib(1, 0, 0, 16, XINA_OP_SUM);
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	c = contrib(2, 0, 0, 16, XINA_OP_SUM);
	ASSERT_EQ(send_c(&c, &r), V_RESULT);
	EXPECT_EQ(result_errors(r.out, XINA_OP_SUM, 3, 0, 0, 16), 0);
}

/* Contributions to an older round than the version holds are stale. */
TEST_F(fp, stale_round)
{
	struct snapshot s = {};
	struct contrib c;
	struct run r;

	ASSERT_EQ(0, job_add(2, 4, 16, false));
	c = contrib(0, 0, 0, 16, XINA_OP_SUM);
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	c = contrib(1, 0, 0, 16, XINA_OP_SUM);
	ASSERT_EQ(send_c(&c, &r), V_RESULT);
	c = contrib(0, 0, 2, 16, XINA_OP_SUM);
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);

	ASSERT_EQ(0, snap_take(&s));
	c = contrib(1, 0, 0, 16, XINA_OP_SUM);	/* round 0: gone */
	EXPECT_EQ(send_c(&c, &r), XDP_DROP);
	c = contrib(1, 0, 0xfffffffe, 16, XINA_OP_SUM);	/* before 0 */
	EXPECT_EQ(send_c(&c, &r), XDP_DROP);
	EXPECT_EQ(jstat(XINA_STAT_STALE), 2);
	EXPECT_TRUE(snap_same(&s)) {
		TH_LOG("stale contribution changed slot state");
	}
	free(s.buf);
}

/*
 * Contributions a pending round cannot take: a round two ahead (its
 * version is still busy), another op, another count.
 */
TEST_F(fp, pending_round_refuses)
{
	struct snapshot s = {};
	struct contrib c;
	struct run r;

	ASSERT_EQ(0, job_add(3, 4, 16, false));
	c = contrib(0, 1, 0, 16, XINA_OP_SUM);
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	ASSERT_EQ(0, snap_take(&s));

	c = contrib(1, 1, 2, 16, XINA_OP_SUM);
	EXPECT_EQ(send_c(&c, &r), XDP_DROP);
	EXPECT_EQ(jstat(XINA_STAT_DROP_RANGE), 1);
	c = contrib(1, 1, 0, 8, XINA_OP_SUM);
	EXPECT_EQ(send_c(&c, &r), XDP_DROP);
	EXPECT_EQ(jstat(XINA_STAT_DROP_RANGE), 2);
	c = contrib(1, 1, 0, 16, XINA_OP_MAX);
	EXPECT_EQ(send_c(&c, &r), XDP_DROP);
	EXPECT_EQ(jstat(XINA_STAT_DROP_OP), 1);
	EXPECT_TRUE(snap_same(&s)) {
		TH_LOG("refused contribution changed slot state");
	}
	EXPECT_EQ(jstat(XINA_STAT_CONTRIB), 1);
	free(s.buf);
}

/* ---- aux: the round's MAX of a side word -------------------------------- */

/* The aux of the xina header in @frame, the signed word it is. */
static __s32 aux_of(const __u8 *frame)
{
	return (__s32)ntohl(xhdr(frame)->aux);
}

/*
 * A round of slot @slot, round @round, count 16 of (@dtype, @op) whose
 * workers send @aux[]: the result's aux.  The result's tag must verify.
 */
static __s32 aux_round(struct __test_metadata *_metadata, __u32 slot,
		       __u32 round, __u8 dtype, __u8 op, const __s32 *aux,
		       unsigned int workers)
{
	struct contrib c;
	struct run r;
	unsigned int w;

	for (w = 0; w < workers; w++) {
		c = contrib(w, slot, round, 16, op);
		c.dtype = dtype;
		c.aux = aux[w];
		if (send_c(&c, &r) != (w + 1 < workers ? XDP_DROP : V_RESULT)) {
			TH_LOG("slot %u round %u rank %u: verdict %d", slot,
			       round, w, verdict(&r));
			_metadata->passed = 0;
			return 0;
		}
	}
	EXPECT_TRUE(result_tag_ok(r.out)) {
		TH_LOG("slot %u round %u: result tag does not verify", slot,
		       round);
	}
	return aux_of(r.out);
}

/*
 * aux (include/uapi/linux/xina.h): the switch reduces it by MAX over the
 * contributions accepted into the round, a ZERO one included, whatever
 * the dtype and op; the result carries it (under its tag), and so does
 * every answer from the kept result.  A duplicate (in the round or after
 * it), a contribution refused or unauthenticated never touches it; the
 * next round of the version starts from its own contributions.
 */
TEST_F(fp, aux_max)
{
	static const __s32 aux2[3] = { -20, -30, -10 };
	static const __s32 ext[3] = { INT32_MIN, INT32_MAX, 0 };
	static const __s32 low[3] = { INT32_MIN, INT32_MIN, INT32_MIN };
	__u8 result[PAYLOAD_OFF + 4 * 16];
	struct xina_meta m;
	struct contrib c;
	struct run r;

	ASSERT_EQ(0, job_add(3, 4, 16, false));
	/* on two CPUs where there are two: the MAX is the version's */
	if (F.ncpus > 1)
		ASSERT_EQ(0, pin_cpu(0));
	c = contrib(0, 1, 0, 16, XINA_OP_SUM);
	c.aux = -5;
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	if (F.ncpus > 1)
		ASSERT_EQ(0, pin_cpu(1));
	c = zero_of(contrib(1, 1, 0, 16, XINA_OP_SUM));
	c.aux = 7;
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);

	/* a duplicate, a forged tag, another op: none raises it */
	c = contrib(0, 1, 0, 16, XINA_OP_SUM);
	c.flags = XINA_F_RETRANS;
	c.aux = 1000;
	EXPECT_EQ(send_c(&c, &r), XDP_DROP);
	c = contrib(2, 1, 0, 16, XINA_OP_SUM);
	c.aux = 1000;
	c.tag_xor = 1;
	EXPECT_EQ(send_c(&c, &r), XDP_DROP);
	c = contrib(2, 1, 0, 16, XINA_OP_MAX);
	c.aux = 1000;
	EXPECT_EQ(send_c(&c, &r), XDP_DROP);
	EXPECT_EQ(jstat(XINA_STAT_DUP), 1);
	EXPECT_EQ(jstat(XINA_STAT_DROP_AUTH), 1);
	EXPECT_EQ(jstat(XINA_STAT_DROP_OP), 1);
	ASSERT_EQ(0, meta_of(1, 0, &m));
	EXPECT_EQ(m.aux, 7);

	if (F.ncpus > 1)
		ASSERT_EQ(0, pin_cpu(0));
	c = contrib(2, 1, 0, 16, XINA_OP_SUM);
	c.aux = -150;
	ASSERT_EQ(send_c(&c, &r), V_RESULT);
	ASSERT_EQ(r.len, sizeof(result));
	EXPECT_EQ(aux_of(r.out), 7);
	EXPECT_EQ(xhdr(r.out)->exp, -3);	/* exp as it was */
	EXPECT_EQ(zero_sum_errors(r.out, 1 << 0 | 1 << 2, 1, 0, 16), 0);
	memcpy(result, r.out, sizeof(result));

	/* resends, one with another aux: the kept result, aux and tag */
	c = contrib(1, 1, 0, 16, XINA_OP_SUM);
	c.flags = XINA_F_RETRANS;
	c.words = (const __u32[16]){ 0 };
	c.aux = 7;
	ASSERT_EQ(send_c(&c, &r), V_ANSWER);
	EXPECT_EQ(aux_of(r.out), 7);
	EXPECT_TRUE(r.len == sizeof(result) &&
		    !memcmp(r.out + HDRS_LEN, result + HDRS_LEN,
			    sizeof(result) - HDRS_LEN)) {
		TH_LOG("the answer is not the result");
	}
	c = contrib(0, 1, 0, 16, XINA_OP_SUM);
	c.flags = XINA_F_RETRANS;
	c.aux = 1000;
	ASSERT_EQ(send_c(&c, &r), V_ANSWER);
	EXPECT_EQ(aux_of(r.out), 7);
	EXPECT_TRUE(r.len == sizeof(result) &&
		    !memcmp(r.out + HDRS_LEN, result + HDRS_LEN,
			    sizeof(result) - HDRS_LEN)) {
		TH_LOG("the answer to a resend of aux 1000 is not the result");
	}
	ASSERT_EQ(0, meta_of(1, 0, &m));
	EXPECT_EQ(m.aux, 7);
	EXPECT_EQ(jstat(XINA_STAT_RETRANS_ANSWERED), 2);

	/* round 2 on the same version: its own MAX, below round 0's */
	EXPECT_EQ(aux_round(_metadata, 1, 2, XINA_DTYPE_INT32, XINA_OP_SUM,
			    aux2, 3), -10);
	c = contrib(1, 1, 2, 16, XINA_OP_SUM);
	c.flags = XINA_F_RETRANS;
	c.aux = aux2[1];
	ASSERT_EQ(send_c(&c, &r), V_ANSWER);
	EXPECT_EQ(aux_of(r.out), -10);

	/* whatever the dtype and op; the first claim sets it, even INT32_MIN */
	EXPECT_EQ(aux_round(_metadata, 2, 0, XINA_DTYPE_INT8, XINA_OP_MAX,
			    ext, 3), INT32_MAX);
	EXPECT_EQ(aux_round(_metadata, 3, 0, XINA_DTYPE_INT64, XINA_OP_XOR,
			    low, 3), INT32_MIN);
	EXPECT_EQ(aux_round(_metadata, 0, 1, XINA_DTYPE_INT16, XINA_OP_MIN,
			    aux2, 3), -10);
	EXPECT_EQ(jstat(XINA_STAT_COMPLETE), 5);
}

/* Two levels: the job as a rack, rank UP_RANK of upper job UP_JOB. */
#define UP_JOB		70
#define UP_RANK		1
#define UP_IP		0x0a070101U	/* 10.7.1.1: the upper switch */
#define UP_EPOCH	0x0bbe0001U

static __u64 UP_KMINE[2], UP_KRES[2];
static __u32 UP_NHK[XINA_MAX_ELEMS];

/*
 * Give the job an uplink as "xinactl job add ... up" does, with its upper
 * join answered already: upper epoch UP_EPOCH stands for EPOCH0.  No
 * route to UP_IP: a partial going up is built, then dropped as no_route
 * (or redirected, where the test has no netns of its own), and the frame
 * BPF_PROG_TEST_RUN hands back holds it either way.
 */
static int up_add(void)
{
	__u32 b = xina_job_bucket(UP_JOB, 0), k = JOB_IDX;
	struct xina_upjob uj = { .up = UP_JOB, .job = JOB_ID };
	struct xina_nhkey nhk;
	struct xina_up up = {
		.job = UP_JOB, .rank = UP_RANK,
		.addr = htonl(UP_IP), .saddr = htonl(SW_IP),
		.port = htons(XINA_UDP_PORT), .ifindex = 1,
		.epoch = UP_EPOCH, .rack_epoch = EPOCH0,
		.status = XINA_JOIN_OK,
	};

	xina_derive_key(SECRET, XINA_LABEL_MEMBER, UP_JOB, UP_RANK, UP_KMINE);
	xina_derive_key(SECRET, XINA_LABEL_RESULT, UP_JOB, 0, UP_KRES);
	xina_derive_nh(SECRET, UP_JOB, UP_NHK, XINA_MAX_ELEMS);
	memcpy(up.kmine, UP_KMINE, sizeof(up.kmine));
	memcpy(up.kres, UP_KRES, sizeof(up.kres));
	memcpy(nhk.k, UP_NHK, sizeof(nhk.k));
	if (bpf_map_update_elem(bpf_map__fd(F.skel->maps.xina_upnh), &k, &nhk,
				BPF_ANY) ||
	    bpf_map_update_elem(bpf_map__fd(F.skel->maps.xina_upjobs), &b, &uj,
				BPF_ANY))
		return -1;
	return bpf_map_update_elem(bpf_map__fd(F.skel->maps.xina_ups), &k, &up,
				   BPF_ANY);
}

/*
 * Is the frame BPF_PROG_TEST_RUN handed back the rack's partial of
 * (@slot, @round) of @workers, going up with @aux and @flags, tagged for
 * the upper job?
 */
static int up_partial_errors(const struct run *r, __u32 slot, __u32 round,
			     unsigned int workers, __s32 aux, __u8 flags)
{
	const struct xina_hdr *xh = xhdr(r->out);
	const __be32 *v = (const void *)(xh + 1);
	int bad = 0;

	if (r->err || r->len != PAYLOAD_OFF + 4 * 16) {
		LOG("partial: err %d len %u", r->err, r->len);
		return 1;
	}
	if (xh->type != XINA_T_CONTRIB || ntohl(xh->job) != UP_JOB ||
	    ntohs(xh->rank) != UP_RANK || ntohl(xh->epoch) != UP_EPOCH ||
	    xh->flags != flags) {
		LOG("partial: type %u job %u rank %u epoch %#x flags %#x",
		    xh->type, ntohl(xh->job), ntohs(xh->rank),
		    ntohl(xh->epoch), xh->flags);
		bad++;
	}
	if (aux_of(r->out) != aux) {
		LOG("partial: aux %d, want %d", aux_of(r->out), aux);
		bad++;
	}
	if (be64toh(xh->tag) !=
	    xina_tag_hdr(UP_KMINE, xh, nh_wire_k(UP_NHK, v, 16))) {
		LOG("partial: tag does not verify under the upper job's keys");
		bad++;
	}
	return bad + result_errors(r->out, XINA_OP_SUM, workers, slot, round,
				   16);
}

/* Uplink counter @stat of the test job (JOB_IDX), over every CPU. */
static __u64 upstat_of(unsigned int stat)
{
	struct xina_up_counters c[XINA_MAX_CPUS];
	__u64 sum = 0;
	__u32 idx = JOB_IDX;
	int i;

	if (bpf_map_lookup_elem(bpf_map__fd(F.skel->maps.xina_upstats), &idx,
				c))
		return ~0ULL;
	for (i = 0; i < F.ncpus; i++)
		sum += c[i].c[stat];
	return sum;
}

/* The uplink's resend floor (xina_up.resend_us): a version's hold. */
static int up_hold_floor(__u32 us)
{
	int fd = bpf_map__fd(F.skel->maps.xina_ups);
	__u32 k = JOB_IDX;
	struct xina_up up;

	if (bpf_map_lookup_elem(fd, &k, &up))
		return -1;
	up.resend_us = us;
	return bpf_map_update_elem(fd, &k, &up, BPF_ANY);
}

/* Rank @rank's resend of its contribution to the rack's slot 2, aux @aux. */
static struct contrib up_retrans(__u16 rank, __s32 aux)
{
	struct contrib c = contrib(rank, 2, 0, 16, XINA_OP_SUM);

	c.flags = XINA_F_RETRANS;
	c.aux = aux;
	return c;
}

/* Send up_retrans(): the errors of the partial it sends up again. */
static int up_resend(__u16 rank, __s32 aux, struct run *r)
{
	struct contrib c = up_retrans(rank, aux);

	send_c(&c, r);
	return up_partial_errors(r, 2, 0, 2, -5, XINA_F_RETRANS);
}

/*
 * Two levels (a job with an uplink): the rack's partial goes up carrying
 * the MAX of the rack round's aux, and so does its resend from the kept
 * partial, before and after the upper result; the upper result, whose aux
 * is the MAX over every rack, comes down to the members with that aux,
 * re-tagged for the rack job, once per time the partial went up: to every
 * member the first time, then to the member whose resend sent it up.
 */
TEST_F(fp, aux_up)
{
	static const __u32 words[16] = { 1, 2, 3 };
	static __u8 buf[FRAME_MAX];
	struct xina_hdr *xh = (void *)(buf + HDRS_LEN);
	__u64 stale, results, held;
	struct contrib c;
	struct run r;
	size_t len;
	int i;

	ASSERT_EQ(0, job_add(2, 4, 16, false));
	ASSERT_EQ(0, up_add());
	c = contrib(0, 2, 0, 16, XINA_OP_SUM);
	c.aux = -5;
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	c.flags = XINA_F_RETRANS;	/* a duplicate: no say */
	c.aux = 1000;
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	EXPECT_EQ(jstat(XINA_STAT_DUP), 1);
	c = contrib(1, 2, 0, 16, XINA_OP_SUM);
	c.aux = -150;
	send_c(&c, &r);
	EXPECT_EQ(jstat(XINA_STAT_COMPLETE), 1);
	EXPECT_EQ(up_partial_errors(&r, 2, 0, 2, -5, 0), 0);

	/* a member's resend sends the kept partial up again: the same aux */
	EXPECT_EQ(up_resend(1, -150, &r), 0);

	/* the upper result, aux 42 over every rack: the members' result */
	c = contrib(0, 2, 0, 16, XINA_OP_SUM);
	c.type = XINA_T_RESULT;
	c.job = UP_JOB;
	c.epoch = UP_EPOCH;
	c.aux = 42;
	c.words = words;
	c.saddr = UP_IP;
	c.sport = XINA_UDP_PORT;
	len = build_frame(buf, &c);
	xh->tag = htobe64(xina_tag_hdr(UP_KRES, xh,
				       nh_wire_k(UP_NHK, (void *)(xh + 1),
						 16)));
	run(buf, len, &r);
	ASSERT_EQ(verdict(&r), V_RESULT);
	EXPECT_EQ(xhdr(r.out)->type, XINA_T_RESULT);
	EXPECT_EQ(ntohl(xhdr(r.out)->job), JOB_ID);
	EXPECT_EQ(ntohl(xhdr(r.out)->epoch), EPOCH0);
	EXPECT_EQ(aux_of(r.out), 42);
	EXPECT_TRUE(result_tag_ok(r.out)) {
		TH_LOG("the rack's result tag does not verify");
	}
	EXPECT_EQ(memcmp(r.out + PAYLOAD_OFF, buf + PAYLOAD_OFF, 4 * 16), 0);
	/*
	 * The same upper result again (a late answer, a duplicate, a
	 * replay): the rack asked for one, got it, and sends nothing more
	 * down; counted as stale.
	 */
	stale = upstat_of(XINA_UPSTAT_DROP_STALE);
	results = upstat_of(XINA_UPSTAT_RESULT);
	for (i = 0; i < 3; i++) {
		run(buf, len, &r);
		EXPECT_EQ(r.retval, XDP_DROP);
	}
	EXPECT_EQ(upstat_of(XINA_UPSTAT_DROP_STALE), stale + 3);
	EXPECT_EQ(upstat_of(XINA_UPSTAT_RESULT), results);
	/* and the rack's partial is still its own: a resend carries -5 */
	EXPECT_EQ(up_resend(0, -5, &r), 0);
	/*
	 * That resend asked again: the upper result goes down once more,
	 * to rank 0 alone (every member had it), so that a replay of a
	 * member's packet draws one answer, to that member.
	 */
	run(buf, len, &r);
	EXPECT_EQ(verdict(&r), V_ANSWER);
	EXPECT_EQ(r.mark.to, 0);
	EXPECT_EQ(aux_of(r.out), 42);
	EXPECT_TRUE(result_tag_ok(r.out));
	run(buf, len, &r);
	EXPECT_EQ(r.retval, XDP_DROP);
	/* rank 1's resend, the same again: to rank 1 alone */
	EXPECT_EQ(up_resend(1, -150, &r), 0);
	run(buf, len, &r);
	EXPECT_EQ(verdict(&r), V_ANSWER);
	EXPECT_EQ(r.mark.to, 1);
	/*
	 * Rank 0 asks, then rank 1 while that partial is up (held: it does
	 * not go up twice): the answer goes to every member.
	 */
	EXPECT_EQ(up_resend(0, -5, &r), 0);
	ASSERT_EQ(0, up_hold_floor(10000000));	/* rank 1's within it */
	held = upstat_of(XINA_UPSTAT_HELD);
	c = up_retrans(1, -150);
	EXPECT_EQ(send_c(&c, &r), XDP_DROP);
	EXPECT_EQ(upstat_of(XINA_UPSTAT_HELD), held + 1);
	run(buf, len, &r);
	EXPECT_EQ(verdict(&r), V_RESULT);
}

/* ---- negative tests: nothing may touch slot state ----------------------- */

/* A job with one pending round, so that corruption would show. */
static int job_pending(struct snapshot *s)
{
	struct contrib c = contrib(0, 1, 0, 8, XINA_OP_SUM);
	struct run r;

	if (job_add(4, 4, 8, true) || send_c(&c, &r) != XDP_DROP)
		return -1;
	return snap_take(s);
}

struct counts {
	__u64 g[XINA_GSTAT_MAX];
	__u64 j[XINA_STAT_MAX];
};

static void counts_read(struct counts *c)
{
	int i;

	for (i = 0; i < XINA_GSTAT_MAX; i++)
		c->g[i] = gstat(i);
	for (i = 0; i < XINA_STAT_MAX; i++)
		c->j[i] = jstat(i);
}

/* Counters that moved since @before, other than @gs / @js by @n. */
static int counts_diff(const struct counts *before, int gs, int js,
		       __u64 n)
{
	struct counts now;
	int i, bad = 0;

	counts_read(&now);
	for (i = 0; i < XINA_GSTAT_MAX; i++) {
		__u64 want = before->g[i] + (i == gs ? n : 0);

		if (now.g[i] != want) {
			LOG("gstat %d: %llu, want %llu", i,
			    (unsigned long long)now.g[i],
			    (unsigned long long)want);
			bad++;
		}
	}
	for (i = 0; i < XINA_STAT_MAX; i++) {
		__u64 want = before->j[i] + (i == js ? n : 0);

		if (now.j[i] != want) {
			LOG("stat %d: %llu, want %llu", i,
			    (unsigned long long)now.j[i],
			    (unsigned long long)want);
			bad++;
		}
	}
	return bad;
}

#define NO_STAT	(-1)

/*
 * Send @c (a variation of a valid contribution) and check: dropped,
 * counted in exactly gstat @gs or job stat @js (plus RX when a job was
 * found), slot memory byte for byte unchanged.
 */
static int refused(const char *what, const struct contrib *c, int gs, int js,
		   const struct snapshot *s)
{
	struct counts before;
	struct run r;
	int bad = 0;

	counts_read(&before);
	if (send_c(c, &r) != XDP_DROP) {
		LOG("%s: verdict %d, want XDP_DROP", what, r.retval);
		bad++;
	}
	if (js != NO_STAT)
		before.j[XINA_STAT_RX]++;
	if (counts_diff(&before, gs, js, 1)) {
		LOG("%s: counted wrong", what);
		bad++;
	}
	if (!snap_same(s)) {
		LOG("%s: slot state changed", what);
		bad++;
	}
	return bad;
}

static struct contrib join_of(unsigned int rank, __u32 slots, __u32 elems,
			      __u64 nonce);

static struct contrib valid(void)
{
	return contrib(1, 1, 0, 8, XINA_OP_SUM);
}

/*
 * A frame for the upper switch whose next hop had no neighbour entry,
 * marked by xina_xdp (XINA_MARK_UP, the device in @job): xina_fanout
 * hands it to bpf_redirect_neigh() with the mark gone from the MAC
 * addresses.  The kernel drops a redirect whose destination MAC is
 * multicast, and this test's cookie makes the mark's so (bit 0 of its
 * first byte), as a random one does half the time: then no partial of a
 * rack whose neighbour entry was flushed ever left (selftests/
 * xina_racks.sh check 9 in a clean CI run).
 */
TEST_F(fp, up_resolve)
{
	__u8 in[64] = {}, out[128];
	struct xina_mark *mk = (void *)in;
	struct iphdr *ip = (void *)(in + ETH_HLEN);
	LIBBPF_OPTS(bpf_test_run_opts, o,
		.data_in = in,
		.data_size_in = sizeof(in),
		.data_out = out,
		.data_size_out = sizeof(out),
		.repeat = 1,
	);
	unsigned int i, marked = 0;

	ASSERT_EQ(0, fx_open());
	mk->cookie = COOKIE ^ XINA_MARK_UP;
	mk->job = 1;			/* lo */
	mk->proto = htons(ETH_P_IP);
	ip->version = 4;
	ip->ihl = 5;
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->tot_len = htons(sizeof(in) - ETH_HLEN);
	ASSERT_NE(in[0] & 1, 0) TH_LOG("the mark's destination MAC is not multicast: the test's cookie does not cover the case");
	ASSERT_EQ(bpf_prog_test_run_opts(F.fanout, &o), 0);
	EXPECT_EQ(o.retval, TC_ACT_REDIRECT);
	ASSERT_EQ(o.data_size_out, sizeof(in));
	for (i = 0; i < 2 * ETH_ALEN; i++)
		marked += out[i] != 0;
	EXPECT_EQ(marked, 0) TH_LOG("%u bytes of the mark left in the MAC addresses handed to the neighbour resolution", marked);
	EXPECT_EQ(memcmp(out + 2 * ETH_ALEN, in + 2 * ETH_ALEN,
			 sizeof(in) - 2 * ETH_ALEN), 0);
}

TEST_F(fp, truncated)
{
	struct contrib c = valid();
	__u8 buf[FRAME_MAX];
	struct counts before;
	struct snapshot s;
	size_t full, len;
	struct run r;

	ASSERT_EQ(0, job_pending(&s));
	full = build_frame(buf, &c);
	for (len = 0; len < full; len++) {
		counts_read(&before);
		run(buf, len, &r);
		if (len < ETH_HLEN) {
			/* the kernel refuses frames without an Ethernet
			 * header before the program runs */
			EXPECT_EQ(r.err, -EINVAL);
			EXPECT_EQ(counts_diff(&before, NO_STAT, NO_STAT, 0), 0);
		} else if (len < HDRS_LEN) {
			/* not recognisably UDP to the xina port */
			EXPECT_EQ(r.err, 0);
			EXPECT_EQ(r.retval, XDP_PASS);
			EXPECT_EQ(counts_diff(&before, XINA_GSTAT_PASS,
					      NO_STAT, 1), 0);
		} else {
			EXPECT_EQ(r.err, 0);
			EXPECT_EQ(r.retval, XDP_DROP);
			EXPECT_EQ(counts_diff(&before, XINA_GSTAT_MALFORMED,
					      NO_STAT, 1), 0);
		}
		if (!_metadata->passed) {
			TH_LOG("at length %zu of %zu", len, full);
			break;
		}
	}
	EXPECT_TRUE(snap_same(&s)) {
		TH_LOG("truncated frames changed slot state");
	}
	free(s.buf);
}

/*
 * A jumbo contribution cut short anywhere past its headers, in the first
 * buffer or in a later one: headers that promise more than the frame holds
 * make it malformed, and nothing of it is added.
 */
TEST_F(fp, truncated_jumbo)
{
	struct contrib c = contrib(1, 1, 0, XINA_MAX_ELEMS, XINA_OP_SUM);
	static __u8 buf[FRAME_MAX];
	struct counts before;
	struct snapshot s;
	size_t full, len;
	struct run r;

	ASSERT_EQ(0, job_add(4, 4, XINA_MAX_ELEMS, true));
	c.rank = c.tag_rank = 0;
	c.saddr = WK_IP(0);
	c.sport = WK_PORT(0);
	c.slot = 2;
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);	/* a pending round */
	ASSERT_EQ(0, snap_take(&s));
	c = contrib(1, 2, 0, XINA_MAX_ELEMS, XINA_OP_SUM);
	full = build_frame(buf, &c);
	for (len = full - 1; len > PAYLOAD_OFF; len = len > 509 ? len - 509 : 0) {
		counts_read(&before);
		run(buf, len, &r);
		EXPECT_EQ(r.err, 0);
		EXPECT_EQ(r.retval, XDP_DROP);
		EXPECT_EQ(counts_diff(&before, XINA_GSTAT_MALFORMED, NO_STAT, 1),
			  0);
		if (!_metadata->passed) {
			TH_LOG("at length %zu of %zu", len, full);
			break;
		}
	}
	EXPECT_TRUE(snap_same(&s)) {
		TH_LOG("truncated jumbo frames changed slot state");
	}
	/* and the whole frame still completes nothing but its own add */
	run(buf, full, &r);
	EXPECT_EQ(verdict(&r), XDP_DROP);
	EXPECT_EQ(jstat(XINA_STAT_CONTRIB), 2);
	free(s.buf);
}

TEST_F(fp, malformed)
{
	struct snapshot s;
	struct contrib c;
	int bad = 0;

	ASSERT_EQ(0, job_pending(&s));
#define MALFORMED(what, stmt)						\
	do {								\
		c = valid();						\
		stmt;							\
		bad += refused(what, &c, XINA_GSTAT_MALFORMED, NO_STAT, &s); \
	} while (0)
	MALFORMED("version 0", c.version = 0);
	MALFORMED("version 1", c.version = 1);
	MALFORMED("version 3", c.version = 3);
	MALFORMED("type RESULT", c.type = XINA_T_RESULT);
	MALFORMED("type 0", c.type = 0);
	MALFORMED("unknown flag", c.flags = 1 << 1);
	MALFORMED("all flags", c.flags = 0xff);
	MALFORMED("weight 1", c.weight = 1);
	MALFORMED("count 0", c.count = 0);
	MALFORMED("payload short", c.nvals = c.count - 1);
	MALFORMED("payload long", c.nvals = c.count + 1);
	MALFORMED("count 0 with payload", (c.count = 0, c.nvals = 8));
	MALFORMED("type JOIN_REPLY", c.type = XINA_T_JOIN_REPLY);
	MALFORMED("type 5", c.type = 5);
	MALFORMED("join with an element",
		  (c = join_of(1, 4, 8, 1), c.count = c.nvals = 1));
	MALFORMED("join with a payload", (c = join_of(1, 4, 8, 1), c.nvals = 2));
	MALFORMED("join with op", (c = join_of(1, 4, 8, 1), c.op = 1));
	MALFORMED("join with flags",
		  (c = join_of(1, 4, 8, 1), c.flags = XINA_F_RETRANS));
	MALFORMED("join with exp", (c = join_of(1, 4, 8, 1), c.exp = 1));
	MALFORMED("join with round", (c = join_of(1, 4, 8, 1), c.round = 1));
	MALFORMED("join with weight", (c = join_of(1, 4, 8, 1), c.weight = 1));
	MALFORMED("join of version 1",
		  (c = join_of(1, 4, 8, 1), c.version = 1));
#undef MALFORMED
	EXPECT_EQ(bad, 0);
	free(s.buf);
}

/* Lengths in the headers that disagree with each other or the frame. */
TEST_F(fp, malformed_lengths)
{
	struct contrib c = valid();
	__u8 buf[FRAME_MAX + 64];
	struct counts before;
	struct snapshot s;
	struct iphdr *iph = (void *)(buf + ETH_HLEN);
	struct udphdr *udp = (void *)(iph + 1);
	size_t len;
	struct run r;

	ASSERT_EQ(0, job_pending(&s));
	len = build_frame(buf, &c);
	iph->tot_len = htons(ntohs(iph->tot_len) - 4);	/* UDP overhangs IP */
	counts_read(&before);
	run(buf, len, &r);
	EXPECT_EQ(r.retval, XDP_DROP);
	EXPECT_EQ(counts_diff(&before, XINA_GSTAT_MALFORMED, NO_STAT, 1), 0);

	len = build_frame(buf, &c);
	udp->len = htons(ntohs(udp->len) + 4);	/* longer than the frame */
	iph->tot_len = htons(ntohs(iph->tot_len) + 4);
	counts_read(&before);
	run(buf, len, &r);
	EXPECT_EQ(r.retval, XDP_DROP);
	EXPECT_EQ(counts_diff(&before, XINA_GSTAT_MALFORMED, NO_STAT, 1), 0);

	/* the IP datagram longer than the UDP one, its bytes in the frame */
	len = build_frame(buf, &c);
	memset(buf + len, 0xee, 4);
	iph->tot_len = htons(ntohs(iph->tot_len) + 4);
	counts_read(&before);
	run(buf, len + 4, &r);
	EXPECT_EQ(r.retval, XDP_DROP);
	EXPECT_EQ(counts_diff(&before, XINA_GSTAT_MALFORMED, NO_STAT, 1), 0);

	/* Ethernet padding after a valid datagram is fine: it is added */
	len = build_frame(buf, &c);
	memset(buf + len, 0xee, 16);
	counts_read(&before);
	before.j[XINA_STAT_RX]++;
	run(buf, len + 16, &r);
	EXPECT_EQ(r.retval, XDP_DROP);
	EXPECT_EQ(counts_diff(&before, NO_STAT, XINA_STAT_CONTRIB, 1), 0);
	free(s.buf);
}

/*
 * Train @buf of @len bytes with @c's datagram after its last one, the
 * IPv4 and UDP lengths made to match: its new length.
 */
static size_t train_add(__u8 *buf, size_t len, const struct contrib *c)
{
	static __u8 one[FRAME_MAX];
	struct iphdr *iph = (void *)(buf + ETH_HLEN);
	struct udphdr *udp = (void *)(iph + 1);
	size_t n = build_frame(one, c) - HDRS_LEN;

	memcpy(buf + len, one + HDRS_LEN, n);
	len += n;
	iph->tot_len = htons(len - ETH_HLEN);
	iph->check = 0;
	iph->check = ip_csum(iph, sizeof(*iph));
	udp->len = htons(len - HDRS_LEN + sizeof(*udp));
	return len;
}

/*
 * @k datagrams of @c's rank on consecutive slots from @c's, as a GSO train
 * (UDP_SEGMENT) reaches a port in generic XDP mode: one set of Ethernet,
 * IPv4 and UDP headers, then each datagram's xina header and elements.
 */
static size_t build_train(__u8 *buf, const struct contrib *c, unsigned int k)
{
	struct contrib d = *c;
	size_t len = build_frame(buf, c);
	unsigned int i;

	for (i = 1; i < k; i++) {
		d.slot = c->slot + i;
		len = train_add(buf, len, &d);
	}
	return len;
}

/*
 * One run of xina_xdp on a frame longer than struct run's copy: its
 * verdict, and the frame it leaves in @out (@outlen bytes).
 */
static int run_long(const void *in, __u32 len, void *out, __u32 *outlen,
		    __u32 *retval)
{
	struct xdp_md md = { .data_end = len, .ingress_ifindex = 1 };
	LIBBPF_OPTS(bpf_test_run_opts, o,
		.data_in = in,
		.data_size_in = len,
		.data_out = out,
		.data_size_out = *outlen,
		.ctx_in = &md,
		.ctx_size_in = sizeof(md),
		.repeat = 1,
	);

	if (bpf_prog_test_run_opts(F.xdp, &o))
		return -errno;
	*retval = o.retval;
	*outlen = o.data_size_out;
	return 0;
}

/* Frame @f's mark says: a result of the test's job, for every member. */
static bool marked_all(const __u8 *f)
{
	const struct xina_mark *mk = (const void *)f;

	return mk->cookie == COOKIE && mk->job == JOB_ID &&
	       mk->to == XINA_MARK_ALL && !mk->fill;
}

/*
 * Datagram @i (@d bytes each) of train @f is the result of @slot, round
 * @round, of @workers' SUM over @count elements, tagged with the result
 * key: the frame whose xina header is datagram @i's is @f + @i * @d.
 */
static unsigned int train_result_errors(const __u8 *f, size_t d,
					unsigned int i, unsigned int workers,
					__u32 slot, __u32 round,
					unsigned int count)
{
	const __u8 *g = f + i * d;
	unsigned int bad = 0;

	if (xhdr(g)->type != XINA_T_RESULT || ntohl(xhdr(g)->slot) != slot) {
		LOG("datagram %u: type %u slot %u, want a result of slot %u", i,
		    xhdr(g)->type, ntohl(xhdr(g)->slot), slot);
		bad++;
	}
	bad += result_errors(g, XINA_OP_SUM, workers, slot, round, count);
	if (!result_tag_ok(g)) {
		LOG("datagram %u: the result's tag does not verify", i);
		bad++;
	}
	return bad;
}

/*
 * A worker's GSO train, as a port in generic XDP mode takes it whole:
 * each datagram taken as if it came alone.  A train whose datagrams all
 * complete their rounds goes to every member whole, each datagram its
 * slot's result; one that completes none is dropped (taken); one that
 * completes some goes whole too (train_part), each other datagram made a
 * filler, and the rounds it completed are kept and answered to a resend.  A forged datagram in a
 * train adds nothing, the others count.  The same frame whose second
 * header names another job, or whose surplus is shorter than a header,
 * is only malformed.
 */
TEST_F(fp, train)
{
	static __u8 buf[3 * FRAME_MAX];
	static const __u8 zero[4 * 8];
	const size_t d = sizeof(struct xina_hdr) + 4 * 8;
	const struct xina_hdr *filler;
	struct iphdr *iph = (void *)(buf + ETH_HLEN);
	struct counts before;
	struct snapshot s;
	struct contrib c;
	unsigned int i;
	size_t len;
	struct run r;

	ASSERT_EQ(0, job_add(2, 8, 8, true));
	/* rank 0's train of slots 1-3: all pending, dropped */
	c = contrib(0, 1, 0, 8, XINA_OP_SUM);
	len = build_train(buf, &c, 3);
	counts_read(&before);
	before.j[XINA_STAT_RX] += 3;
	before.j[XINA_STAT_CONTRIB] += 3;
	run(buf, len, &r);
	EXPECT_EQ(verdict(&r), XDP_DROP);
	EXPECT_EQ(counts_diff(&before, XINA_GSTAT_TRAIN, NO_STAT, 1), 0);

	/* rank 1's: every round complete, the train of results to all */
	c = contrib(1, 1, 0, 8, XINA_OP_SUM);
	len = build_train(buf, &c, 3);
	counts_read(&before);
	run(buf, len, &r);
	ASSERT_EQ(r.err, 0);
	ASSERT_EQ(r.retval, XDP_PASS);
	EXPECT_TRUE(marked_all(r.out));
	ASSERT_EQ(r.len, len);
	for (i = 0; i < 3; i++)
		EXPECT_EQ(train_result_errors(r.out, d, i, 2, 1 + i, 0, 8), 0);
	EXPECT_EQ(gstat(XINA_GSTAT_TRAIN), before.g[XINA_GSTAT_TRAIN] + 1);
	EXPECT_EQ(gstat(XINA_GSTAT_TRAIN_PART),
		  before.g[XINA_GSTAT_TRAIN_PART]);
	EXPECT_EQ(jstat(XINA_STAT_COMPLETE), 3);
	EXPECT_EQ(jstat(XINA_STAT_CONTRIB), 6);

	/*
	 * Slots 4-5: rank 0's train, rank 1's slot 4 alone, then rank 1's
	 * train of 5-6: 5 completes, 6 waits for rank 0.  Sent on whole,
	 * slot 6's datagram a filler: a result of epoch 0, its elements
	 * (rank 1's contribution) zero.
	 */
	c = contrib(0, 4, 0, 8, XINA_OP_SUM);
	len = build_train(buf, &c, 2);
	run(buf, len, &r);
	EXPECT_EQ(verdict(&r), XDP_DROP);
	c = contrib(1, 4, 0, 8, XINA_OP_SUM);
	EXPECT_EQ(send_c(&c, &r), V_RESULT);
	c = contrib(1, 5, 0, 8, XINA_OP_SUM);
	len = build_train(buf, &c, 2);
	counts_read(&before);
	run(buf, len, &r);
	ASSERT_EQ(verdict(&r), V_RESULT);
	ASSERT_EQ(r.len, len);
	EXPECT_EQ(train_result_errors(r.out, d, 0, 2, 5, 0, 8), 0);
	filler = xhdr(r.out + d);
	EXPECT_EQ(filler->type, XINA_T_RESULT);
	EXPECT_EQ(filler->epoch, 0);
	EXPECT_EQ(filler->tag, 0);
	EXPECT_EQ(ntohl(filler->slot), 6);
	EXPECT_EQ(memcmp(filler + 1, zero, sizeof(zero)), 0);
	EXPECT_EQ(jstat(XINA_STAT_COMPLETE), before.j[XINA_STAT_COMPLETE] + 1);
	EXPECT_EQ(gstat(XINA_GSTAT_TRAIN_PART),
		  before.g[XINA_GSTAT_TRAIN_PART] + 1);
	/* slot 5's result was kept: rank 1's resend (alone) gets it */
	c.flags = XINA_F_RETRANS;
	ASSERT_EQ(send_c(&c, &r), V_ANSWER);
	EXPECT_EQ(r.mark.to, 1);
	EXPECT_EQ(train_result_errors(r.out, d, 0, 2, 5, 0, 8), 0);

	/* a forged third datagram: dropped as drop_auth, the others count */
	c = contrib(0, 1, 1, 8, XINA_OP_SUM);
	len = build_train(buf, &c, 3);
	buf[len - 1] ^= 1;
	counts_read(&before);
	run(buf, len, &r);
	EXPECT_EQ(verdict(&r), XDP_DROP);
	EXPECT_EQ(jstat(XINA_STAT_DROP_AUTH), before.j[XINA_STAT_DROP_AUTH] + 1);
	EXPECT_EQ(jstat(XINA_STAT_CONTRIB), before.j[XINA_STAT_CONTRIB] + 2);

	/* the second header of another job: malformed, nothing taken */
	ASSERT_EQ(0, snap_take(&s));
	c = contrib(1, 1, 1, 8, XINA_OP_SUM);
	len = build_train(buf, &c, 2);
	((struct xina_hdr *)(buf + PAYLOAD_OFF + 4 * 8))->job =
		htonl(JOB_ID + 1);
	counts_read(&before);
	run(buf, len, &r);
	EXPECT_EQ(r.retval, XDP_DROP);
	EXPECT_EQ(counts_diff(&before, XINA_GSTAT_MALFORMED, NO_STAT, 1), 0);

	/* a surplus shorter than a header: malformed */
	len = build_train(buf, &c, 2) - d + 4;
	iph->tot_len = htons(len - ETH_HLEN);
	((struct udphdr *)(iph + 1))->len = htons(len - ETH_HLEN - sizeof(*iph));
	counts_read(&before);
	run(buf, len, &r);
	EXPECT_EQ(r.retval, XDP_DROP);
	EXPECT_EQ(counts_diff(&before, XINA_GSTAT_MALFORMED, NO_STAT, 1), 0);
	EXPECT_TRUE(snap_same(&s));
	free(s.buf);
}

/*
 * A train of XINA_F_ZERO datagrams (their headers alone, as a sender that
 * trains its zero blocks sends them).  One that completes its round
 * cannot carry the result, which xina_fanout grows only for a lone
 * datagram: the round is kept and counted train_zero, the frame absorbed,
 * and the member's resend (alone, with its zero words) is answered.  A
 * ZERO datagram that does not complete its round is taken as any other.
 */
TEST_F(fp, train_zero)
{
	static __u8 buf[FRAME_MAX];
	struct counts before;
	struct contrib c;
	size_t len;
	struct run r;

	ASSERT_EQ(0, job_add(2, 8, 8, true));
	/* rank 0's slot 1, then rank 1's ZERO train of slots 1-2 */
	c = contrib(0, 1, 0, 8, XINA_OP_SUM);
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	c = zero_of(contrib(1, 1, 0, 8, XINA_OP_SUM));
	len = build_train(buf, &c, 2);
	ASSERT_EQ(len, HDRS_LEN + 2 * sizeof(struct xina_hdr));
	counts_read(&before);
	run(buf, len, &r);
	EXPECT_EQ(verdict(&r), XDP_DROP);
	EXPECT_EQ(gstat(XINA_GSTAT_TRAIN), before.g[XINA_GSTAT_TRAIN] + 1);
	EXPECT_EQ(gstat(XINA_GSTAT_TRAIN_ZERO),
		  before.g[XINA_GSTAT_TRAIN_ZERO] + 1);
	EXPECT_EQ(gstat(XINA_GSTAT_MALFORMED), before.g[XINA_GSTAT_MALFORMED]);
	EXPECT_EQ(jstat(XINA_STAT_CONTRIB), before.j[XINA_STAT_CONTRIB] + 2);
	EXPECT_EQ(jstat(XINA_STAT_COMPLETE), before.j[XINA_STAT_COMPLETE] + 1);
	/* the kept result, rank 0's values alone, to rank 1's resend */
	c = contrib(1, 1, 0, 8, XINA_OP_SUM);
	c.flags = XINA_F_RETRANS;
	c.words = (const __u32[8]){ 0 };
	ASSERT_EQ(send_c(&c, &r), V_ANSWER);
	EXPECT_EQ(r.mark.to, 1);
	EXPECT_EQ(zero_sum_errors(r.out, 1 << 0, 1, 0, 8), 0);
	/* slot 2 waited for rank 0: its frame carries the result */
	c = contrib(0, 2, 0, 8, XINA_OP_SUM);
	EXPECT_EQ(send_c(&c, &r), V_RESULT);
	EXPECT_EQ(zero_sum_errors(r.out, 1 << 0, 2, 0, 8), 0);
	EXPECT_EQ(gstat(XINA_GSTAT_TRAIN_ZERO),
		  before.g[XINA_GSTAT_TRAIN_ZERO] + 1);
}

/*
 * Trains of jumbo datagrams: every header but the first, and most
 * elements, in later buffers; the last datagram shorter (a tensor's
 * part-full last block).
 */
TEST_F(fp, train_jumbo)
{
	static __u8 buf[3 * FRAME_MAX], out[3 * FRAME_MAX + META_MAX];
	const unsigned int n = XINA_MAX_ELEMS;
	const size_t d = sizeof(struct xina_hdr) + 4 * n;
	__u32 retval = 0, olen;
	struct contrib c, e;
	unsigned int w, i;
	size_t len;

	ASSERT_EQ(0, job_add(3, 4, n, true));
	for (w = 0; w < 3; w++) {
		/* slots 0 and 1 whole, then slot 2 with 1021 elements */
		c = contrib(w, 0, 0, n, XINA_OP_SUM);
		e = contrib(w, 2, 0, 1021, XINA_OP_SUM);
		len = train_add(buf, build_train(buf, &c, 2), &e);
		olen = sizeof(out);
		ASSERT_EQ(run_long(buf, len, out, &olen, &retval), 0);
		if (w < 2) {
			EXPECT_EQ(retval, XDP_DROP);
			continue;
		}
		ASSERT_EQ(retval, XDP_PASS);
		EXPECT_TRUE(marked_all(out));
		ASSERT_EQ(olen, len);
		for (i = 0; i < 2; i++)
			EXPECT_EQ(train_result_errors(out, d, i, 3, i, 0, n),
				  0);
		EXPECT_EQ(train_result_errors(out, d, 2, 3, 2, 0, 1021), 0);
	}
	EXPECT_EQ(jstat(XINA_STAT_COMPLETE), 3);
	EXPECT_EQ(jstat(XINA_STAT_CONTRIB), 9);
	EXPECT_EQ(gstat(XINA_GSTAT_TRAIN), 3);
	EXPECT_EQ(gstat(XINA_GSTAT_TRAIN_PART), 0);
}

TEST_F(fp, foreign_job)
{
	struct snapshot s;
	struct contrib c;

	ASSERT_EQ(0, job_pending(&s));
	c = valid();
	c.job = JOB_ID + 1;
	EXPECT_EQ(refused("job 8", &c, XINA_GSTAT_NO_JOB, NO_STAT, &s), 0);
	c.job = 0;
	EXPECT_EQ(refused("job 0", &c, XINA_GSTAT_NO_JOB, NO_STAT, &s), 0);
	free(s.buf);
}

/*
 * A train of a job the switch does not have: dropped, nothing touched,
 * each of its datagrams counted as no_job as it would be alone (xina.ko
 * counts the same), the train as a train, not as refused.
 */
TEST_F(fp, foreign_job_train)
{
	static __u8 buf[3 * FRAME_MAX];
	struct counts before, now;
	struct snapshot s;
	struct contrib c;
	struct run r;
	size_t len;
	int i;

	ASSERT_EQ(0, job_pending(&s));
	c = valid();
	c.job = JOB_ID + 1;
	len = build_train(buf, &c, 3);
	counts_read(&before);
	run(buf, len, &r);
	EXPECT_EQ(r.err, 0);
	EXPECT_EQ(r.retval, XDP_DROP);
	counts_read(&now);
	for (i = 0; i < XINA_GSTAT_MAX; i++) {
		__u64 want = before.g[i] + (i == XINA_GSTAT_NO_JOB ? 3 :
					    i == XINA_GSTAT_TRAIN ? 1 : 0);

		EXPECT_EQ(now.g[i], want) {
			TH_LOG("gstat %d: %llu, want %llu", i,
			       (unsigned long long)now.g[i],
			       (unsigned long long)want);
		}
	}
	for (i = 0; i < XINA_STAT_MAX; i++)
		EXPECT_EQ(now.j[i], before.j[i]);
	EXPECT_TRUE(snap_same(&s)) {
		TH_LOG("a train of another job touched slot state");
	}
	free(s.buf);
}

/*
 * Forged tags: random, one bit off, another member's key, a payload
 * changed after tagging (in the frame's first buffer and, for jumbo
 * frames, beyond it), a header field changed after tagging.  Dropped,
 * counted as drop_auth, slot memory untouched.
 */
TEST_F(fp, forged_tag)
{
	struct snapshot s;
	struct contrib c;
	__u64 seed = 0x1234567;
	int i;

	ASSERT_EQ(0, job_pending(&s));
	for (i = 0; i < 8; i++) {
		c = valid();
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		c.tag_xor = seed | 1;
		EXPECT_EQ(refused("random tag", &c, NO_STAT,
				  XINA_STAT_DROP_AUTH, &s), 0);
	}
	c = valid();
	c.tag_xor = 1ULL << 63;
	EXPECT_EQ(refused("tag bit 63", &c, NO_STAT, XINA_STAT_DROP_AUTH, &s),
		  0);
	c = valid();
	c.tag_rank = 2;		/* rank 2's key on rank 1's packet */
	EXPECT_EQ(refused("other member's key", &c, NO_STAT,
			  XINA_STAT_DROP_AUTH, &s), 0);
	c = valid();
	c.flip_elem = 0;
	EXPECT_EQ(refused("payload changed", &c, NO_STAT, XINA_STAT_DROP_AUTH,
			  &s), 0);
	c = valid();
	c.flip_elem = c.count - 1;
	EXPECT_EQ(refused("last element changed", &c, NO_STAT,
			  XINA_STAT_DROP_AUTH, &s), 0);
	free(s.buf);
}

/* A header field changed after tagging (an on-path attacker's edit). */
TEST_F(fp, header_changed)
{
	static __u8 buf[FRAME_MAX];
	struct xina_hdr *xh = (void *)(buf + HDRS_LEN);
	struct counts before;
	struct snapshot s;
	struct contrib c;
	struct run r;
	size_t len;

	ASSERT_EQ(0, job_pending(&s));
	c = valid();
	len = build_frame(buf, &c);
	xh->round = htonl(2);
	counts_read(&before);
	before.j[XINA_STAT_RX]++;
	run(buf, len, &r);
	EXPECT_EQ(verdict(&r), XDP_DROP);
	EXPECT_EQ(counts_diff(&before, NO_STAT, XINA_STAT_DROP_AUTH, 1), 0);
	len = build_frame(buf, &c);
	xh->offset ^= 1;
	counts_read(&before);
	before.j[XINA_STAT_RX]++;
	run(buf, len, &r);
	EXPECT_EQ(verdict(&r), XDP_DROP);
	EXPECT_EQ(counts_diff(&before, NO_STAT, XINA_STAT_DROP_AUTH, 1), 0);
	/* aux is any value, but the tag covers it */
	len = build_frame(buf, &c);
	xh->aux = htonl(1000);
	counts_read(&before);
	before.j[XINA_STAT_RX]++;
	run(buf, len, &r);
	EXPECT_EQ(verdict(&r), XDP_DROP);
	EXPECT_EQ(counts_diff(&before, NO_STAT, XINA_STAT_DROP_AUTH, 1), 0);
	EXPECT_TRUE(snap_same(&s)) {
		TH_LOG("changed header touched slot state");
	}
	free(s.buf);
}

/* Jumbo frames: a change in the first buffer or in a later one. */
TEST_F(fp, forged_tag_jumbo)
{
	struct contrib c;
	struct snapshot s;
	struct run r;
	int i;
	static const int flips[] = { 0, 700, 1023, 1024, 1500, 2047 };

	ASSERT_EQ(0, job_add(4, 4, XINA_MAX_ELEMS, true));
	c = contrib(0, 2, 0, XINA_MAX_ELEMS, XINA_OP_SUM);
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);	/* a pending round */
	ASSERT_EQ(0, snap_take(&s));
	for (i = 0; i < (int)(sizeof(flips) / sizeof(flips[0])); i++) {
		c = contrib(1, 2, 0, XINA_MAX_ELEMS, XINA_OP_SUM);
		c.flip_elem = flips[i];
		EXPECT_EQ(refused("jumbo payload changed", &c, NO_STAT,
				  XINA_STAT_DROP_AUTH, &s), 0);
		if (!_metadata->passed) {
			TH_LOG("element %d", flips[i]);
			break;
		}
	}
	/* odd counts split between the buffers */
	c = contrib(1, 2, 0, 2045, XINA_OP_SUM);
	c.flip_elem = 2044;
	EXPECT_EQ(refused("odd jumbo, last changed", &c, NO_STAT,
			  XINA_STAT_DROP_AUTH, &s), 0);
	c = contrib(1, 2, 0, XINA_MAX_ELEMS, XINA_OP_SUM);
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);	/* the genuine one adds */
	EXPECT_EQ(jstat(XINA_STAT_CONTRIB), 2);
	free(s.buf);
}

/* A valid tag from another epoch: dropped, counted as drop_epoch. */
TEST_F(fp, wrong_epoch)
{
	struct snapshot s;
	struct contrib c;

	ASSERT_EQ(0, job_pending(&s));
	c = valid();
	c.epoch = 1;
	EXPECT_EQ(refused("epoch 1", &c, NO_STAT, XINA_STAT_DROP_EPOCH, &s),
		  0);
	c.epoch = 0xffffffff;
	EXPECT_EQ(refused("epoch 2^32-1", &c, NO_STAT, XINA_STAT_DROP_EPOCH,
			  &s), 0);
	free(s.buf);
}

static int ip(bool quiet, ...);
static bool udp_csum_ok(const __u8 *frame, size_t len);

/*
 * Exact replays of a member's packet, coming in on another port from
 * another MAC: a pending round drops them as duplicates, a completed one
 * answers them, to the member where it was learned; neither the slot
 * memory nor where the member's results go changes.
 */
TEST_F(fp, replay)
{
	static __u8 buf[FRAME_MAX];
	struct xina_member m0, m1;
	struct ethhdr *eth = (void *)buf;
	__u32 k = member_key(1);
	struct counts before;
	struct snapshot s;
	struct contrib c;
	int port, other;
	struct run r;
	size_t len;

	/* two ports: the member's, and the one the replays come in on */
	if (!have_netns)
		SKIP(return, "no private network namespace (unshare failed)");
	if (ip(false, "link", "add", "xrp0", "type", "veth", "peer", "name",
	       "xrp1", NULL) ||
	    ip(false, "link", "set", "xrp0", "up", NULL) ||
	    ip(false, "link", "set", "xrp1", "up", NULL))
		SKIP(return, "cannot make a veth pair (veth, ip(8))");
	port = if_nametoindex("xrp0");
	other = if_nametoindex("xrp1");
	ASSERT_TRUE(port && other) {
		TH_LOG("no ifindex for xrp0, xrp1");
	}

	ASSERT_EQ(0, job_add(2, 4, 16, false));
	c = contrib(1, 3, 0, 16, XINA_OP_SUM);
	len = build_frame(buf, &c);
	run_on(buf, len, &r, port);
	ASSERT_EQ(verdict(&r), XDP_DROP);
	ASSERT_EQ(0, bpf_map_lookup_elem(F.members, &k, &m0));
	ASSERT_EQ(m0.ifindex, port);
	ASSERT_EQ(0, snap_take(&s));

	/* the same bytes, from elsewhere */
	eth->h_source[0] = 0x0a;
	counts_read(&before);
	before.j[XINA_STAT_RX] += 3;
	run_on(buf, len, &r, other);
	EXPECT_EQ(verdict(&r), XDP_DROP);
	run_on(buf, len, &r, other);
	run_on(buf, len, &r, port);
	EXPECT_EQ(counts_diff(&before, NO_STAT, XINA_STAT_DUP, 3), 0);
	EXPECT_TRUE(snap_same(&s)) {
		TH_LOG("a replay changed slot state");
	}
	ASSERT_EQ(0, bpf_map_lookup_elem(F.members, &k, &m1));
	EXPECT_TRUE(!memcmp(&m0, &m1, sizeof(m0))) {
		TH_LOG("a replay moved the member");
	}
	free(s.buf);

	/* complete the round, then replay again */
	c = contrib(0, 3, 0, 16, XINA_OP_SUM);
	ASSERT_EQ(send_c(&c, &r), V_RESULT);
	ASSERT_EQ(0, snap_take(&s));
	counts_read(&before);
	before.j[XINA_STAT_RX]++;
	run_on(buf, len, &r, other);
	EXPECT_EQ(verdict(&r), V_ANSWER);
	EXPECT_EQ(r.mark.to, 1);	/* to the member, where it was learned */
	EXPECT_TRUE(result_tag_ok(r.out)) {
		TH_LOG("answer tag does not verify");
	}
	EXPECT_EQ(counts_diff(&before, NO_STAT, XINA_STAT_RETRANS_ANSWERED, 1),
		  0);
	EXPECT_TRUE(snap_same(&s)) {
		TH_LOG("a replay changed slot state");
	}
	ASSERT_EQ(0, bpf_map_lookup_elem(F.members, &k, &m1));
	EXPECT_TRUE(!memcmp(&m0, &m1, sizeof(m0))) {
		TH_LOG("a replay moved the member");
	}

	/* and once round 2 replaced round 0 in this version: stale */
	c = contrib(0, 3, 2, 16, XINA_OP_SUM);
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	free(s.buf);
	ASSERT_EQ(0, snap_take(&s));
	counts_read(&before);
	before.j[XINA_STAT_RX]++;
	run_on(buf, len, &r, other);
	EXPECT_EQ(verdict(&r), XDP_DROP);
	EXPECT_EQ(counts_diff(&before, NO_STAT, XINA_STAT_STALE, 1), 0);
	EXPECT_TRUE(snap_same(&s)) {
		TH_LOG("a stale replay changed slot state");
	}
	free(s.buf);
}

TEST_F(fp, not_a_member)
{
	struct xina_member none = {};
	__u32 k = member_key(2);
	struct snapshot s;
	struct contrib c;

	ASSERT_EQ(0, job_pending(&s));
	c = contrib(4, 1, 0, 8, XINA_OP_SUM);	/* rank == workers */
	c.saddr = WK_IP(1);
	EXPECT_EQ(refused("rank 4", &c, NO_STAT, XINA_STAT_DROP_MEMBER, &s), 0);
	c.rank = 0xffff;
	EXPECT_EQ(refused("rank 65535", &c, NO_STAT, XINA_STAT_DROP_MEMBER,
			  &s), 0);
	/* in range, but no member configured (an empty entry) */
	ASSERT_EQ(0, bpf_map_update_elem(F.members, &k, &none, BPF_ANY));
	c = contrib(2, 1, 0, 8, XINA_OP_SUM);
	EXPECT_EQ(refused("rank 2 without entry", &c, NO_STAT,
			  XINA_STAT_DROP_MEMBER, &s), 0);
	free(s.buf);
}

TEST_F(fp, wrong_source)
{
	struct snapshot s;
	struct contrib c;

	ASSERT_EQ(0, job_pending(&s));
	c = valid();
	c.saddr = WK_IP(2);	/* rank 1 from rank 2's address */
	EXPECT_EQ(refused("source IP", &c, NO_STAT, XINA_STAT_DROP_MEMBER,
			  &s), 0);
	c = valid();
	c.sport = WK_PORT(1) + 1;	/* members have a port configured */
	EXPECT_EQ(refused("source port", &c, NO_STAT, XINA_STAT_DROP_MEMBER,
			  &s), 0);
	free(s.buf);
}

TEST_F(fp, out_of_range)
{
	struct snapshot s;
	struct contrib c;

	ASSERT_EQ(0, job_pending(&s));
	c = valid();
	c.slot = 4;	/* slots == 4 */
	EXPECT_EQ(refused("slot 4", &c, NO_STAT, XINA_STAT_DROP_RANGE, &s), 0);
	c.slot = 0x80000001;
	EXPECT_EQ(refused("slot 2^31+1", &c, NO_STAT, XINA_STAT_DROP_RANGE,
			  &s), 0);
	c = valid();
	c.count = c.nvals = 9;	/* elems == 8 */
	EXPECT_EQ(refused("count 9", &c, NO_STAT, XINA_STAT_DROP_RANGE, &s),
		  0);
	c.count = c.nvals = 512;	/* fits a test_run buffer whole */
	EXPECT_EQ(refused("count 512", &c, NO_STAT, XINA_STAT_DROP_RANGE,
			  &s), 0);
	free(s.buf);
}

TEST_F(fp, bad_dtype_op)
{
	struct snapshot s;
	struct contrib c;

	ASSERT_EQ(0, job_pending(&s));
	/* a slot no round opened: the check comes before any claim */
	c = valid();
	c.slot = 2;
	c.dtype = 0;
	EXPECT_EQ(refused("dtype 0", &c, NO_STAT, XINA_STAT_DROP_OP, &s), 0);
	c.dtype = __XINA_DTYPE_MAX;
	EXPECT_EQ(refused("dtype 5", &c, NO_STAT, XINA_STAT_DROP_OP, &s), 0);
	c.dtype = 0xff;
	EXPECT_EQ(refused("dtype 255", &c, NO_STAT, XINA_STAT_DROP_OP, &s),
		  0);
	c = valid();
	c.slot = 2;
	c.op = 0;
	EXPECT_EQ(refused("op 0", &c, NO_STAT, XINA_STAT_DROP_OP, &s), 0);
	c.op = __XINA_OP_WIRE_MAX;
	EXPECT_EQ(refused("op 7", &c, NO_STAT, XINA_STAT_DROP_OP, &s), 0);
	c.op = XINA_OP_AVG;	/* libxina's, never on the wire */
	EXPECT_EQ(refused("op AVG", &c, NO_STAT, XINA_STAT_DROP_OP, &s), 0);
	free(s.buf);
}

/* Send @len bytes of @buf, expect XDP_PASS with the frame untouched. */
static int passed(const char *what, const __u8 *buf, size_t len,
		  const struct snapshot *s)
{
	struct counts before;
	struct run r;
	int bad = 0;

	counts_read(&before);
	run(buf, len, &r);
	if (r.err || r.retval != XDP_PASS) {
		LOG("%s: err %d verdict %u, want XDP_PASS", what, r.err,
		    r.retval);
		bad++;
	}
	if (r.len != len || memcmp(r.out, buf, len)) {
		LOG("%s: frame changed", what);
		bad++;
	}
	if (counts_diff(&before, XINA_GSTAT_PASS, NO_STAT, 1))
		bad++;
	if (!snap_same(s)) {
		LOG("%s: slot state changed", what);
		bad++;
	}
	return bad;
}

TEST_F(fp, not_xina_passes)
{
	struct contrib c = valid();
	__u8 buf[FRAME_MAX + 64];
	struct iphdr *iph = (void *)(buf + ETH_HLEN);
	struct ethhdr *eth = (void *)buf;
	struct snapshot s;
	size_t len;
	int bad = 0;

	ASSERT_EQ(0, job_pending(&s));
	c.dport = XINA_UDP_PORT + 1;
	len = build_frame(buf, &c);
	bad += passed("UDP to another port", buf, len, &s);

	c = valid();
	len = build_frame(buf, &c);
	iph->protocol = IPPROTO_TCP;
	bad += passed("TCP to the xina port", buf, len, &s);

	len = build_frame(buf, &c);
	iph->frag_off = htons(0x2000);		/* first fragment */
	bad += passed("IP fragment (MF)", buf, len, &s);
	iph->frag_off = htons(185);		/* a later fragment */
	bad += passed("IP fragment (offset)", buf, len, &s);

	len = build_frame(buf, &c);
	iph->ihl = 6;				/* options */
	bad += passed("IPv4 with options", buf, len, &s);

	len = build_frame(buf, &c);
	eth->h_proto = htons(ETH_P_IPV6);
	bad += passed("IPv6 ethertype", buf, len, &s);

	memset(buf, 0, 60);			/* ARP request */
	memset(eth->h_dest, 0xff, ETH_ALEN);
	wk_mac(eth->h_source, 0);
	eth->h_proto = htons(ETH_P_ARP);
	bad += passed("ARP", buf, 60, &s);
	EXPECT_EQ(bad, 0);
	free(s.buf);
}

/*
 * A frame that comes in carrying this switch's mark, of either kind, where
 * xina_fanout looks for one (its first bytes, or those after its Ethernet
 * header): dropped as malformed, whatever else it is, a valid contribution
 * included, and nothing counted or aggregated; a cookie one bit off
 * passes as any other frame.
 */
TEST_F(fp, forged_mark)
{
	static const struct { const char *what; size_t at; __u64 cookie; } f[] = {
		{ "the mark at byte 0", 0, COOKIE },
		{ "the partial's mark at byte 0", 0, COOKIE ^ XINA_MARK_UP },
		{ "the mark after the Ethernet header", ETH_HLEN, COOKIE },
		{ "the partial's mark after it", ETH_HLEN,
		  COOKIE ^ XINA_MARK_UP },
	};
	struct contrib c = valid();
	__u8 buf[FRAME_MAX];
	struct ethhdr *eth = (void *)buf;
	struct counts before;
	struct snapshot s;
	__u64 off_by_one;
	unsigned int i;
	struct run r;
	size_t len;

	ASSERT_EQ(0, job_pending(&s));
	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		/* a contribution the switch would take, and an ARP frame */
		len = build_frame(buf, &c);
		memcpy(buf + f[i].at, &f[i].cookie, sizeof(f[i].cookie));
		counts_read(&before);
		run(buf, len, &r);
		EXPECT_EQ(r.retval, XDP_DROP) TH_LOG("%s", f[i].what);
		EXPECT_EQ(counts_diff(&before, XINA_GSTAT_MALFORMED, NO_STAT,
				      1), 0) TH_LOG("%s", f[i].what);
		memset(buf, 0, 60);
		eth->h_proto = htons(ETH_P_ARP);
		memcpy(buf + f[i].at, &f[i].cookie, sizeof(f[i].cookie));
		counts_read(&before);
		run(buf, 60, &r);
		EXPECT_EQ(r.retval, XDP_DROP) TH_LOG("ARP, %s", f[i].what);
		EXPECT_EQ(counts_diff(&before, XINA_GSTAT_MALFORMED, NO_STAT,
				      1), 0) TH_LOG("ARP, %s", f[i].what);
	}
	EXPECT_TRUE(snap_same(&s));
	memset(buf, 0, 60);
	eth->h_proto = htons(ETH_P_ARP);
	off_by_one = COOKIE ^ 2;
	memcpy(buf, &off_by_one, sizeof(off_by_one));
	EXPECT_EQ(passed("a cookie one bit off", buf, 60, &s), 0);
	free(s.buf);
}

/* As xinactl writes them: ascending as __u32 values (insertion sort). */
static void addrs_sort(struct xina_addrs *a)
{
	unsigned int i, j;
	__be32 v;

	for (i = 1; i < a->n; i++) {
		v = a->addr[i];
		for (j = i; j > 0 && a->addr[j - 1] > v; j--)
			a->addr[j] = a->addr[j - 1];
		a->addr[j] = v;
	}
}

/*
 * With the switch's addresses known (xina_addrs, written by "xinactl dev
 * attach"), a packet to the xina port of another host is routed through
 * untouched, be it a member's valid contribution or garbage; one to any of
 * the switch's addresses is taken.
 */
TEST_F(fp, not_to_switch_passes)
{
	struct xina_addrs a = { .n = 3 };
	struct contrib c = valid();
	struct counts before;
	__u8 buf[FRAME_MAX];
	struct snapshot s;
	__u32 zero = 0, i;
	struct run r;
	size_t len;
	int bad = 0;

	ASSERT_EQ(0, job_pending(&s));
	a.addr[0] = htonl(0x0a630001);		/* 10.99.0.1 */
	a.addr[1] = htonl(SW_IP);
	a.addr[2] = htonl(0x0a630101);		/* 10.99.1.1 */
	addrs_sort(&a);
	ASSERT_EQ(0, bpf_map_update_elem(bpf_map__fd(F.skel->maps.xina_addrs),
				      &zero, &a, BPF_ANY));
	c.daddr = WK_IP(3);
	len = build_frame(buf, &c);
	bad += passed("a contribution to another host", buf, len, &s);
	c.daddr = WK_IP(2);
	c.version = 0;				/* malformed, if taken */
	len = build_frame(buf, &c);
	bad += passed("garbage to another host", buf, len, &s);

	/* ranks 1, 2, 3 of the pending round, each to one switch address */
	for (i = 0; i < a.n; i++) {
		c = contrib(1 + i, 1, 0, 8, XINA_OP_SUM);
		c.daddr = ntohl(a.addr[i]);
		counts_read(&before);
		if (send_c(&c, &r) != (i + 1 < a.n ? XDP_DROP : V_RESULT)) {
			TH_LOG("to switch address %u: verdict %d", i, r.retval);
			bad++;
		}
		if (jstat(XINA_STAT_CONTRIB) != before.j[XINA_STAT_CONTRIB] + 1 ||
		    gstat(XINA_GSTAT_PASS) != before.g[XINA_GSTAT_PASS]) {
			TH_LOG("to switch address %u: not taken", i);
			bad++;
		}
	}

	/*
	 * A full list, searched by bisection: each of its addresses is the
	 * switch's (garbage to it is taken, and counted malformed), each
	 * address between or beside them is not (passed).
	 */
	free(s.buf);
	ASSERT_EQ(0, snap_take(&s));	/* the round above completed */
	a.n = XINA_MAX_ADDRS;
	for (i = 0; i < a.n; i++)
		a.addr[i] = htonl(0x0a000000 + i * 0x01010102 + 2);
	addrs_sort(&a);
	ASSERT_EQ(0, bpf_map_update_elem(bpf_map__fd(F.skel->maps.xina_addrs),
				      &zero, &a, BPF_ANY));
	c = valid();
	c.version = 0;
	for (i = 0; i < a.n; i++) {
		c.daddr = ntohl(a.addr[i]);
		len = build_frame(buf, &c);
		counts_read(&before);
		run(buf, len, &r);
		if (r.err || r.retval != XDP_DROP ||
		    counts_diff(&before, XINA_GSTAT_MALFORMED, NO_STAT, 1)) {
			TH_LOG("switch address %u of %u not taken", i, a.n);
			bad++;
		}
		c.daddr = ntohl(a.addr[i]) + 1;
		len = build_frame(buf, &c);
		bad += passed("an address beside one of the switch's", buf,
			      len, &s);
		c.daddr = ntohl(a.addr[i]) - 1;
		len = build_frame(buf, &c);
		bad += passed("an address beside one of the switch's", buf,
			      len, &s);
	}
	EXPECT_EQ(bad, 0);
	free(s.buf);
}

/* ---- join handshake and epochs --------------------------------------------
 *
 * Joins are crafted here as include/uapi/linux/xina.h describes them, and
 * every reply is compared with one built here from the rules, byte for
 * byte, its tag computed with the member's key derived here.  No join
 * touches slot memory, whatever its fate: every test compares a snapshot.
 */

#define BUSY_NS		((__u64)XINA_JOIN_BUSY_MS * 1000000)

/* A join of @rank for @slots slots of @elems elements, nonce @nonce. */
static struct contrib join_of(unsigned int rank, __u32 slots, __u32 elems,
			      __u64 nonce)
{
	struct contrib c = contrib(rank, slots, 0, 0, 0);

	c.type = XINA_T_JOIN;
	c.exp = 0;
	c.epoch = 0;
	c.aux = elems;
	c.offset = nonce;
	return c;
}

static __u8 join_buf[FRAME_MAX];

/*
 * Send join @c from the member's place (lo), with @pad bytes after the
 * datagram (Ethernet padding; past a page, a frame of several buffers).
 * The frame stays in join_buf.
 */
static int send_join_on(const struct contrib *c, struct run *r, size_t pad,
			int ifindex)
{
	size_t len = build_frame(join_buf, c);

	memset(join_buf + len, 0xa5, pad);
	run_on(join_buf, len + pad, r, ifindex);
	return verdict(r);
}

static int send_join(const struct contrib *c, struct run *r)
{
	return send_join_on(c, r, 0, 1);
}

/* The reply to join @c, as the rules have it; @tag for BAD_KEY. */
static void reply_want(struct xina_hdr *w, const struct contrib *c,
		       __u32 status, __u32 epoch, __be64 tag)
{
	memset(w, 0, sizeof(*w));
	w->version = XINA_WIRE_VERSION;
	w->type = XINA_T_JOIN_REPLY;
	w->dtype = c->dtype;
	w->job = htonl(c->job);
	w->rank = htons(c->rank);
	w->slot = htonl(F.job.slots);
	w->aux = htonl(F.job.elems);
	w->round = htonl(status);
	w->epoch = htonl(epoch);
	w->offset = htobe64(c->offset);
	/* the map backend takes XINA_F_ZERO from a job without an uplink */
	if (status != XINA_JOIN_BAD_KEY)
		w->flags = XINA_F_ZERO;
	w->tag = status == XINA_JOIN_BAD_KEY ? tag :
		 htobe64(xina_tag_hdr(K[c->rank], w, 0));
}

/*
 * Is @r the reply @status, @epoch to join @c (sent from join_buf): a bare
 * header, lengths and IPv4 checksum right (where no mark took the IPv4
 * header: xina_fanout writes it for each copy), every header byte as
 * reply_want() says?  Returns the number of faults.
 */
static int reply_check(const struct run *r, const struct contrib *c,
		       __u32 status, __u32 epoch)
{
	const struct xina_hdr *join = xhdr(join_buf);
	struct xina_hdr want;
	int bad = 0;

	reply_want(&want, c, status, epoch, join->tag);
	if (r->len != PAYLOAD_OFF) {
		LOG("reply of %u bytes, want %d", r->len, PAYLOAD_OFF);
		return 1;
	}
	if (!r->mark.cookie &&
	    (ntohs(iphdr(r->out)->tot_len) != PAYLOAD_OFF - ETH_HLEN ||
	     ntohs(udphdr(r->out)->len) != PAYLOAD_OFF - ETH_HLEN - 20 ||
	     ip_csum(iphdr(r->out), sizeof(struct iphdr)))) {
		LOG("reply lengths or IPv4 checksum wrong");
		bad++;
	}
	if (memcmp(xhdr(r->out), &want, sizeof(want))) {
		LOG("reply: type %u round (status) %u epoch %#x slot %u aux %u offset %llu tag %#llx; want status %u epoch %#x slot %u aux %u offset %llu tag %#llx",
		    xhdr(r->out)->type, ntohl(xhdr(r->out)->round),
		    ntohl(xhdr(r->out)->epoch), ntohl(xhdr(r->out)->slot),
		    ntohl(xhdr(r->out)->aux),
		    (unsigned long long)be64toh(xhdr(r->out)->offset),
		    (unsigned long long)be64toh(xhdr(r->out)->tag),
		    status, epoch, F.job.slots, F.job.elems,
		    (unsigned long long)c->offset,
		    (unsigned long long)be64toh(want.tag));
		bad++;
	}
	return bad;
}

/* A reply sent to rank @rank where it was learned (xina_fanout). */
static int answered(const struct run *r, const struct contrib *c,
		    __u32 status, __u32 epoch)
{
	if (verdict(r) != V_ANSWER || r->mark.to != c->rank) {
		LOG("join of rank %u: verdict %d (to %u), want an answer to it",
		    c->rank, verdict(r), r->mark.to);
		return 1;
	}
	return reply_check(r, c, status, epoch);
}

/* The job's join state: its epoch, members joined, each member's latest
 * join and where each member was learned. */
struct jstate {
	struct xina_join_job j;
	struct xina_join_mbr jm[4];
	struct xina_member m[4];
};

static int jstate_read(struct jstate *st)
{
	struct xina_epoch ep;
	__u32 k = JOB_IDX, r;

	memset(st, 0, sizeof(*st));
	if (bpf_map_lookup_elem(F.epochs, &k, &ep))
		return -1;
	st->j = ep.j;
	for (r = 0; r < 4; r++) {
		k = member_key(r);
		if (bpf_map_lookup_elem(F.joins, &k, &st->jm[r]) ||
		    bpf_map_lookup_elem(F.members, &k, &st->m[r]))
			return -1;
	}
	return 0;
}

static bool jstate_same(const struct jstate *a)
{
	struct jstate b;

	return !jstate_read(&b) && !memcmp(a, &b, sizeof(b));
}

/* Counters after @before, which moved by one in @js and RX alone. */
static int counted(struct counts *before, int js)
{
	before->j[XINA_STAT_RX]++;
	return counts_diff(before, NO_STAT, js, 1);
}

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Every CPU's xina_active of the job: when it last completed a round. */
static int active_set(__u64 t)
{
	__u64 v[XINA_MAX_CPUS];
	__u32 k = JOB_IDX;
	int i;

	for (i = 0; i < F.ncpus; i++)
		v[i] = t;
	return bpf_map_update_elem(F.active, &k, v, BPF_ANY);
}

static __u64 active_of(int cpu)
{
	__u64 v[XINA_MAX_CPUS];
	__u32 k = JOB_IDX;

	if (bpf_map_lookup_elem(F.active, &k, v))
		return ~0ULL;
	return v[cpu];
}

/* Two ports of this test's netns (a veth pair), as in TEST(replay). */
static int two_ports(int *a, int *b)
{
	if (!have_netns ||
	    ip(false, "link", "add", "xrp0", "type", "veth", "peer", "name",
	       "xrp1", NULL) ||
	    ip(false, "link", "set", "xrp0", "up", NULL) ||
	    ip(false, "link", "set", "xrp1", "up", NULL))
		return -1;
	*a = if_nametoindex("xrp0");
	*b = if_nametoindex("xrp1");
	return *a && *b ? 0 : -1;
}

/*
 * A rack's join of its upper job carries a clock, not the count xinactl
 * started when the rack job was made: the upper job takes no join older
 * than itself less XINA_JOIN_SKEW_MS, and a rack job may be far older than
 * its upper job.  With the rack's count at 1 (a rack job made long ago), a
 * member's join that needs the upper epoch sends the upper join with
 * CLOCK_TAI, which is never behind the workers' CLOCK_REALTIME.
 */
TEST_F(fp, up_join_nonce_is_a_clock)
{
	const struct xina_hdr *xh;
	struct timespec ts;
	__u32 k = JOB_IDX;
	struct xina_up up;
	struct contrib c;
	struct run r;
	__u64 t0;

	ASSERT_EQ(0, job_add(2, 4, 16, false));
	ASSERT_EQ(0, up_add());
	ASSERT_EQ(0, bpf_map_lookup_elem(bpf_map__fd(F.skel->maps.xina_ups),
					 &k, &up));
	up.rack_epoch = 0;		/* the upper epoch stands for none */
	up.want = 0;
	up.nonce = 1;
	ASSERT_EQ(0, bpf_map_update_elem(bpf_map__fd(F.skel->maps.xina_ups),
					 &k, &up, BPF_ANY));
	clock_gettime(CLOCK_REALTIME, &ts);
	t0 = (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;

	c = join_of(0, 4, 16, 5);	/* not the clock: the rack's own */
	send_join(&c, &r);
	xh = xhdr(r.out);
	EXPECT_TRUE(!r.err && xh->type == XINA_T_JOIN &&
		    ntohl(xh->job) == UP_JOB && ntohs(xh->rank) == UP_RANK) {
		TH_LOG("no upper join: err %d type %u job %u rank %u", r.err,
		       xh->type, ntohl(xh->job), ntohs(xh->rank));
	}
	EXPECT_GE(be64toh(xh->offset), t0) {
		TH_LOG("the upper join's nonce %llu is behind the clock %llu",
		       (unsigned long long)be64toh(xh->offset),
		       (unsigned long long)t0);
	}
	ASSERT_EQ(0, bpf_map_lookup_elem(bpf_map__fd(F.skel->maps.xina_ups),
					 &k, &up));
	EXPECT_EQ(up.nonce, be64toh(xh->offset));
	EXPECT_EQ(up.status, XINA_UP_PENDING);
}

/* A join that fits: answered OK with the job's epoch, the member learned. */
TEST_F(fp, join_ok)
{
	struct counts before;
	struct snapshot s;
	struct xina_member m;
	struct jstate st;
	struct contrib c;
	__u8 mac[ETH_ALEN];
	struct run r;

	ASSERT_EQ(0, job_add(3, 4, 16, false));
	ASSERT_EQ(0, snap_take(&s));
	counts_read(&before);
	c = join_of(0, 4, 16, 1000);
	c.sport = 5000;
	send_join(&c, &r);
	EXPECT_EQ(answered(&r, &c, XINA_JOIN_OK, EPOCH0), 0);
	EXPECT_EQ(counted(&before, XINA_STAT_JOIN), 0);
	ASSERT_EQ(0, jstate_read(&st));
	EXPECT_EQ(st.j.epoch, EPOCH0);
	EXPECT_EQ(st.j.joined[0], 1);
	EXPECT_TRUE(st.jm[0].nonce == 1000 && st.jm[0].epoch == EPOCH0 &&
		    st.jm[0].status == XINA_JOIN_OK) {
		TH_LOG("rank 0's join not recorded");
	}
	m = st.m[0];
	wk_mac(mac, 0);
	EXPECT_TRUE(m.ifindex == 1 && ntohs(m.rport) == 5000 &&
		    !memcmp(m.mac, mac, ETH_ALEN) && ntohl(m.sw_addr) == SW_IP) {
		TH_LOG("the join did not teach where rank 0 is");
	}

	/* fewer slots and elements than the job's fit too */
	counts_read(&before);
	c = join_of(1, 2, 8, 7);
	send_join(&c, &r);
	EXPECT_EQ(answered(&r, &c, XINA_JOIN_OK, EPOCH0), 0);
	EXPECT_EQ(counted(&before, XINA_STAT_JOIN), 0);

	/* Ethernet padding, and the resend of a frame of several buffers:
	 * the reply is the bare header all the same */
	counts_read(&before);
	c = join_of(2, 4, 16, 1ULL << 62);
	send_join_on(&c, &r, 18, 1);
	EXPECT_EQ(answered(&r, &c, XINA_JOIN_OK, EPOCH0), 0);
	EXPECT_EQ(counted(&before, XINA_STAT_JOIN), 0);
	ASSERT_EQ(0, jstate_read(&st));
	EXPECT_EQ(st.j.joined[0], 7);
	counts_read(&before);
	send_join_on(&c, &r, 6000, 1);
	EXPECT_EQ(answered(&r, &c, XINA_JOIN_OK, EPOCH0), 0);
	EXPECT_EQ(counted(&before, XINA_STAT_JOIN), 0);
	ASSERT_EQ(0, jstate_read(&st));
	EXPECT_EQ(st.j.epoch, EPOCH0);
	EXPECT_EQ(st.j.joined[0], 7);
	EXPECT_TRUE(snap_same(&s)) {
		TH_LOG("a join changed slot memory");
	}
	free(s.buf);
}

/*
 * The same join again (its reply was lost, or a replay from elsewhere):
 * the same reply, to where the member was learned; nothing changes.
 * An older join is stale: dropped, counted, nothing changes.
 */
TEST_F(fp, join_resend_stale)
{
	__u8 first[PAYLOAD_OFF];
	struct counts before;
	struct snapshot s;
	struct jstate st;
	struct contrib c;
	int port, other;
	struct run r;

	if (two_ports(&port, &other))
		SKIP(return, "cannot make a veth pair (veth, ip(8))");
	ASSERT_EQ(0, job_add(2, 4, 16, false));
	ASSERT_EQ(0, snap_take(&s));
	c = join_of(1, 4, 16, 500);
	send_join_on(&c, &r, 0, port);
	ASSERT_EQ(answered(&r, &c, XINA_JOIN_OK, EPOCH0), 0);
	memcpy(first, r.out, sizeof(first));
	ASSERT_EQ(0, jstate_read(&st));
	ASSERT_EQ(st.m[1].ifindex, port);

	counts_read(&before);
	send_join_on(&c, &r, 0, port);
	EXPECT_EQ(answered(&r, &c, XINA_JOIN_OK, EPOCH0), 0);
	EXPECT_TRUE(r.len == sizeof(first) && !memcmp(r.out, first, r.len)) {
		TH_LOG("the resent reply differs from the first");
	}
	EXPECT_EQ(counted(&before, XINA_STAT_JOIN), 0);
	EXPECT_TRUE(jstate_same(&st)) {
		TH_LOG("a resend changed the join state");
	}

	/* the same bytes from another port and MAC: answered to the member */
	counts_read(&before);
	join_buf[ETH_ALEN] = 0x0a;
	run_on(join_buf, build_frame(join_buf, &c), &r, other);
	EXPECT_EQ(answered(&r, &c, XINA_JOIN_OK, EPOCH0), 0);
	EXPECT_EQ(counted(&before, XINA_STAT_JOIN), 0);
	EXPECT_TRUE(jstate_same(&st)) {
		TH_LOG("a replayed join moved the member");
	}

	/* older nonces: stale */
	counts_read(&before);
	c.offset = 499;
	EXPECT_EQ(send_join_on(&c, &r, 0, other), XDP_DROP);
	EXPECT_EQ(counted(&before, XINA_STAT_JOIN_STALE), 0);
	counts_read(&before);
	c.offset = 0;
	EXPECT_EQ(send_join_on(&c, &r, 0, port), XDP_DROP);
	EXPECT_EQ(counted(&before, XINA_STAT_JOIN_STALE), 0);
	EXPECT_TRUE(jstate_same(&st)) {
		TH_LOG("a stale join changed the join state");
	}
	EXPECT_TRUE(snap_same(&s)) {
		TH_LOG("a join changed slot memory");
	}
	free(s.buf);
}

/*
 * A join from the rank's address whose tag does not verify: answered
 * BAD_KEY with its own tag, back out of the port it came in on while the
 * member was never seen, to where the member was learned once it was;
 * counted drop_auth; nothing changes.  From another address: silence.
 */
TEST_F(fp, join_bad_key)
{
	struct counts before;
	struct snapshot s;
	struct jstate st;
	struct contrib c;
	__u8 mac[ETH_ALEN];
	struct run r;

	ASSERT_EQ(0, job_add(2, 4, 16, false));
	ASSERT_EQ(0, snap_take(&s));
	ASSERT_EQ(0, jstate_read(&st));

	/* rank 1, never seen: bounced to the sender */
	counts_read(&before);
	c = join_of(1, 4, 16, 99);
	c.tag_xor = 1;
	EXPECT_EQ(send_join(&c, &r), XDP_TX);
	EXPECT_EQ(reply_check(&r, &c, XINA_JOIN_BAD_KEY, 0), 0);
	wk_mac(mac, 1);
	EXPECT_TRUE(!memcmp(r.out, mac, ETH_ALEN) &&
		    !memcmp(r.out + ETH_ALEN, sw_mac, ETH_ALEN)) {
		TH_LOG("bounce: MACs not swapped");
	}
	EXPECT_EQ(ntohl(iphdr(r.out)->saddr), SW_IP);
	EXPECT_EQ(ntohl(iphdr(r.out)->daddr), WK_IP(1));
	EXPECT_EQ(ntohs(udphdr(r.out)->source), XINA_UDP_PORT);
	EXPECT_EQ(ntohs(udphdr(r.out)->dest), WK_PORT(1));
	EXPECT_TRUE(udp_csum_ok(r.out, r.len)) {
		TH_LOG("bounce: UDP checksum wrong");
	}
	EXPECT_EQ(counted(&before, XINA_STAT_DROP_AUTH), 0);

	/* another member's key; and padded to several buffers: the refusal
	 * is never larger than the bare header */
	counts_read(&before);
	c = join_of(1, 4, 16, 100);
	c.tag_rank = 0;
	EXPECT_EQ(send_join_on(&c, &r, 6000, 1), XDP_TX);
	EXPECT_EQ(reply_check(&r, &c, XINA_JOIN_BAD_KEY, 0), 0);
	EXPECT_EQ(counted(&before, XINA_STAT_DROP_AUTH), 0);
	EXPECT_TRUE(jstate_same(&st)) {
		TH_LOG("a bad key changed the join state");
	}

	/* from another address than the rank's: dropped, never answered */
	counts_read(&before);
	c = join_of(1, 4, 16, 101);
	c.tag_xor = 1;
	c.saddr = WK_IP(0);
	EXPECT_EQ(send_join(&c, &r), XDP_DROP);
	EXPECT_EQ(counted(&before, XINA_STAT_DROP_MEMBER), 0);
	counts_read(&before);
	c = join_of(1, 4, 16, 101);
	c.job = JOB_ID + 1;
	EXPECT_EQ(send_join(&c, &r), XDP_DROP);
	EXPECT_EQ(counts_diff(&before, XINA_GSTAT_NO_JOB, NO_STAT, 1), 0);

	/* rank 0 joins, then a bad key for it: answered where it is */
	c = join_of(0, 4, 16, 50);
	send_join(&c, &r);
	ASSERT_EQ(answered(&r, &c, XINA_JOIN_OK, EPOCH0), 0);
	ASSERT_EQ(0, jstate_read(&st));
	counts_read(&before);
	c = join_of(0, 4, 16, 51);
	c.tag_xor = 1ULL << 40;
	c.sport = 6000;
	EXPECT_EQ(send_join(&c, &r), V_ANSWER);
	EXPECT_EQ(r.mark.to, 0);
	EXPECT_EQ(reply_check(&r, &c, XINA_JOIN_BAD_KEY, 0), 0);
	EXPECT_EQ(counted(&before, XINA_STAT_DROP_AUTH), 0);
	EXPECT_TRUE(jstate_same(&st)) {
		TH_LOG("a bad key changed the join state");
	}
	EXPECT_EQ(st.jm[0].nonce, 50);	/* its nonce does not count */
	EXPECT_TRUE(snap_same(&s)) {
		TH_LOG("a join changed slot memory");
	}
	free(s.buf);
}

/* Slots, elements per slot or dtype that do not fit: MISMATCH. */
TEST_F(fp, join_mismatch)
{
	struct counts before;
	struct snapshot s;
	struct jstate st;
	struct contrib c;
	struct run r;
	int i;

	ASSERT_EQ(0, job_add(2, 4, 16, false));
	ASSERT_EQ(0, snap_take(&s));
	for (i = 0; i < 4; i++) {
		c = join_of(0, 4, 16, 10 + i);
		if (i == 0)
			c.slot = 5;
		else if (i == 1)
			c.aux = 17;
		else if (i == 2)
			c.dtype = XINA_DTYPE_INT32 + 1;
		else
			c.dtype = 0;
		counts_read(&before);
		send_join(&c, &r);
		EXPECT_EQ(answered(&r, &c, XINA_JOIN_MISMATCH, 0), 0);
		EXPECT_EQ(counted(&before, XINA_STAT_JOIN_REFUSED), 0);
		ASSERT_EQ(0, jstate_read(&st));
		EXPECT_TRUE(st.j.epoch == EPOCH0 && !st.j.joined[0] &&
			    st.jm[0].nonce == 10 + (unsigned int)i &&
			    st.jm[0].status == XINA_JOIN_MISMATCH &&
			    !st.jm[0].epoch) {
			TH_LOG("mismatch %d: join state", i);
		}
		if (!_metadata->passed) {
			TH_LOG("mismatch %d", i);
			break;
		}
	}
	/* its resend: the same refusal */
	counts_read(&before);
	send_join(&c, &r);
	EXPECT_EQ(answered(&r, &c, XINA_JOIN_MISMATCH, 0), 0);
	EXPECT_EQ(counted(&before, XINA_STAT_JOIN_REFUSED), 0);
	c = join_of(0, 4, 16, 20);
	send_join(&c, &r);
	EXPECT_EQ(answered(&r, &c, XINA_JOIN_OK, EPOCH0), 0);
	EXPECT_TRUE(snap_same(&s)) {
		TH_LOG("a join changed slot memory");
	}
	free(s.buf);
}

/*
 * A restart: every worker joins again.  Right after a round completed the
 * epoch is busy; once no round completed for XINA_JOIN_BUSY_MS the first
 * join opens the next epoch, the others join it.  The old epoch's packets,
 * retransmissions included, are dropped before they touch anything; the
 * new one starts each slot version afresh, at round 0 or 1 only, and
 * nothing of the old epoch's partials leaks into its results.
 */
TEST_F(fp, join_restart)
{
	const __u32 e1 = EPOCH0 + 1;
	struct counts before;
	struct xina_meta m;
	struct snapshot s;
	struct jstate st;
	__u64 t0, t1, t;
	__u32 gen;
	struct contrib c;
	struct run r;

	ASSERT_EQ(0, pin_cpu(0));
	ASSERT_EQ(0, job_add(2, 4, 8, false));
	c = join_of(0, 4, 8, 10);
	send_join(&c, &r);
	ASSERT_EQ(answered(&r, &c, XINA_JOIN_OK, EPOCH0), 0);
	c = join_of(1, 4, 8, 20);
	send_join(&c, &r);
	ASSERT_EQ(answered(&r, &c, XINA_JOIN_OK, EPOCH0), 0);
	EXPECT_EQ(active_of(0), 0);

	/* round 0 of slot 1 completes: the epoch is in use */
	c = contrib(0, 1, 0, 8, XINA_OP_SUM);
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	c = contrib(1, 1, 0, 8, XINA_OP_SUM);
	t0 = mono_ns();
	ASSERT_EQ(send_c(&c, &r), V_RESULT);
	t1 = mono_ns();
	t = active_of(0);
	EXPECT_TRUE(t >= t0 && t <= t1) {
		TH_LOG("xina_active %llu not within the completing run [%llu, %llu]",
		       (unsigned long long)t, (unsigned long long)t0,
		       (unsigned long long)t1);
	}

	/* rank 0 restarts at once: busy, nothing changes */
	ASSERT_EQ(0, jstate_read(&st));
	ASSERT_EQ(0, snap_take(&s));
	counts_read(&before);
	c = join_of(0, 4, 8, 11);
	send_join(&c, &r);
	ASSERT_TRUE(mono_ns() - t1 < BUSY_NS) {
		TH_LOG("the machine stalled %llu ms between two runs: busy cannot be told",
		       (unsigned long long)(mono_ns() - t1) / 1000000);
	}
	EXPECT_EQ(answered(&r, &c, XINA_JOIN_BUSY, 0), 0);
	EXPECT_EQ(counted(&before, XINA_STAT_JOIN_REFUSED), 0);
	st.jm[0].nonce = 11;
	st.jm[0].status = XINA_JOIN_BUSY;
	st.jm[0].epoch = 0;
	EXPECT_TRUE(jstate_same(&st)) {
		TH_LOG("a busy refusal changed the epoch");
	}
	EXPECT_TRUE(snap_same(&s)) {
		TH_LOG("a join changed slot memory");
	}

	/* XINA_JOIN_BUSY_MS later: the next epoch, rank 0 alone in it */
	ASSERT_EQ(0, active_set(t1 - BUSY_NS - 1));
	counts_read(&before);
	c = join_of(0, 4, 8, 12);
	send_join(&c, &r);
	EXPECT_EQ(answered(&r, &c, XINA_JOIN_OK, e1), 0);
	before.j[XINA_STAT_RX]++;
	before.j[XINA_STAT_EPOCH_NEW]++;
	EXPECT_EQ(counts_diff(&before, NO_STAT, XINA_STAT_JOIN, 1), 0);
	ASSERT_EQ(0, jstate_read(&st));
	EXPECT_EQ(st.j.epoch, e1);
	EXPECT_EQ(st.j.joined[0], 1);
	EXPECT_TRUE(snap_same(&s)) {
		TH_LOG("a join changed slot memory");
	}

	/* the old epoch: a contribution, a retransmission of the completed
	 * round; dropped, not answered, nothing changes */
	counts_read(&before);
	c = contrib(1, 2, 0, 8, XINA_OP_SUM);
	c.epoch = EPOCH0;
	EXPECT_EQ(send_c(&c, &r), XDP_DROP);
	EXPECT_EQ(counted(&before, XINA_STAT_DROP_EPOCH), 0);
	counts_read(&before);
	c = contrib(1, 1, 0, 8, XINA_OP_SUM);
	c.epoch = EPOCH0;
	c.flags = XINA_F_RETRANS;
	EXPECT_EQ(send_c(&c, &r), XDP_DROP);
	EXPECT_EQ(counted(&before, XINA_STAT_DROP_EPOCH), 0);
	EXPECT_TRUE(snap_same(&s)) {
		TH_LOG("an old epoch's packet changed slot memory");
	}

	/* rank 1 joins the new epoch: no other epoch opens */
	counts_read(&before);
	c = join_of(1, 4, 8, 21);
	send_join(&c, &r);
	EXPECT_EQ(answered(&r, &c, XINA_JOIN_OK, e1), 0);
	EXPECT_EQ(counted(&before, XINA_STAT_JOIN), 0);
	ASSERT_EQ(0, jstate_read(&st));
	EXPECT_EQ(st.j.epoch, e1);
	EXPECT_EQ(st.j.joined[0], 3);

	/* slot 1's version 0 holds the old epoch's completed round 0:
	 * round 2 cannot start it, round 0 starts it afresh */
	counts_read(&before);
	c = contrib(0, 1, 2, 8, XINA_OP_SUM);
	c.epoch = e1;
	EXPECT_EQ(send_c(&c, &r), XDP_DROP);
	EXPECT_EQ(counted(&before, XINA_STAT_DROP_RANGE), 0);
	EXPECT_TRUE(snap_same(&s)) {
		TH_LOG("a refused round changed slot memory");
	}
	ASSERT_EQ(0, meta_of(1, 0, &m));
	gen = XINA_DONE_GEN(m.done);
	c = contrib(0, 1, 0, 8, XINA_OP_SUM);
	c.epoch = e1;
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	ASSERT_EQ(0, meta_of(1, 0, &m));
	EXPECT_TRUE(m.epoch == e1 && m.round == 0 && m.claimed == 1 &&
		    XINA_DONE_COUNT(m.done) == 1 && !m.complete &&
		    m.seen[0] == 1 && !m.tag) {
		TH_LOG("version not started afresh: epoch %#x round %u claimed %u done %u complete %u seen %#llx",
		       m.epoch, m.round, m.claimed, XINA_DONE_COUNT(m.done),
		       m.complete, (unsigned long long)m.seen[0]);
	}
	/* a new opening: an add of the old one still in flight on another
	 * CPU cannot count into it (xina_done()) */
	EXPECT_EQ(XINA_DONE_GEN(m.done), (gen + 1) & 0xffff);
	/* its retransmission is a duplicate of the new round, not answered
	 * from the old epoch's result */
	c.flags = XINA_F_RETRANS;
	counts_read(&before);
	EXPECT_EQ(send_c(&c, &r), XDP_DROP);
	EXPECT_EQ(counted(&before, XINA_STAT_DUP), 0);
	c = contrib(1, 1, 0, 8, XINA_OP_SUM);
	c.epoch = e1;
	ASSERT_EQ(send_c(&c, &r), V_RESULT);
	EXPECT_EQ(result_errors(r.out, XINA_OP_SUM, 2, 1, 0, 8), 0);
	EXPECT_EQ(ntohl(xhdr(r.out)->epoch), e1);
	EXPECT_TRUE(result_tag_ok(r.out)) {
		TH_LOG("result tag does not verify");
	}
}

/* Rank @rank's join (4 slots of 8) with @nonce naming run @run: its reply
 * against @status and @epoch (answered()). */
static int join_run_of(unsigned int rank, __u64 nonce, __u32 run,
		       __u32 status, __u32 epoch, struct run *r)
{
	struct contrib c = join_of(rank, 4, 8, nonce);

	c.epoch = run;
	send_join(&c, r);
	return answered(r, &c, status, epoch);
}

/*
 * Runs (a join's epoch field).  Ranks 0 and 1 of 3 join as run 7 and leave
 * slot 1's round 0 with two of three contributions: a run that died before
 * rank 2 ever joined.  Rank 2 of the next run (8) joins first: another run,
 * so a new epoch, rank 2 alone in it, not the dead run's epoch; its round 0
 * starts slot 1's version afresh instead of completing the dead run's
 * round with its data.  While a round of the epoch completed within
 * XINA_JOIN_BUSY_MS another run is told busy, as a restart is.
 */
TEST_F(fp, join_run)
{
	const __u32 e1 = EPOCH0 + 1;
	struct counts before;
	struct xina_meta m;
	struct snapshot s;
	struct jstate st;
	struct contrib c;
	struct run r;

	ASSERT_EQ(0, pin_cpu(0));
	ASSERT_EQ(0, job_add(3, 4, 8, false));
	ASSERT_EQ(join_run_of(0, 10, 7, XINA_JOIN_OK, EPOCH0, &r), 0);
	ASSERT_EQ(0, jstate_read(&st));
	EXPECT_TRUE(st.j.epoch == EPOCH0 && st.j.run == 7 && st.j.joined[0] == 1) {
		TH_LOG("the first join: epoch %#x run %u joined %#llx, want %#x 7 1",
		       st.j.epoch, st.j.run, (unsigned long long)st.j.joined[0],
		       EPOCH0);
	}
	ASSERT_EQ(join_run_of(1, 20, 7, XINA_JOIN_OK, EPOCH0, &r), 0);
	c = contrib(0, 1, 0, 8, XINA_OP_SUM);
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	c = contrib(1, 1, 0, 8, XINA_OP_SUM);
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);

	/* rank 2 of run 8, first: a new epoch, rank 2 alone, run 8 */
	ASSERT_EQ(0, snap_take(&s));
	counts_read(&before);
	EXPECT_EQ(join_run_of(2, 30, 8, XINA_JOIN_OK, e1, &r), 0);
	before.j[XINA_STAT_RX]++;
	before.j[XINA_STAT_EPOCH_NEW]++;
	EXPECT_EQ(counts_diff(&before, NO_STAT, XINA_STAT_JOIN, 1), 0);
	ASSERT_EQ(0, jstate_read(&st));
	EXPECT_TRUE(st.j.epoch == e1 && st.j.run == 8 && st.j.joined[0] == 4) {
		TH_LOG("rank 2 of run 8: epoch %#x run %u joined %#llx, want %#x 8 4",
		       st.j.epoch, st.j.run, (unsigned long long)st.j.joined[0], e1);
	}
	EXPECT_TRUE(snap_same(&s)) {
		TH_LOG("a join changed slot memory");
	}

	/* its round 0 starts slot 1's version afresh: no result */
	c = contrib(2, 1, 0, 8, XINA_OP_SUM);
	c.epoch = e1;
	EXPECT_EQ(send_c(&c, &r), XDP_DROP);
	ASSERT_EQ(0, meta_of(1, 0, &m));
	EXPECT_TRUE(m.epoch == e1 && m.round == 0 && m.claimed == 1 &&
		    !m.complete && m.seen[0] == 4) {
		TH_LOG("slot 1: epoch %#x round %u claimed %u complete %u seen %#llx, want rank 2's alone in %#x",
		       m.epoch, m.round, m.claimed, m.complete,
		       (unsigned long long)m.seen[0], e1);
	}

	/* rank 0 of run 8 joins it; so does rank 1, completing the round */
	EXPECT_EQ(join_run_of(0, 11, 8, XINA_JOIN_OK, e1, &r), 0);
	EXPECT_EQ(join_run_of(1, 21, 8, XINA_JOIN_OK, e1, &r), 0);
	ASSERT_EQ(0, jstate_read(&st));
	EXPECT_TRUE(st.j.epoch == e1 && st.j.joined[0] == 7) {
		TH_LOG("run 8: epoch %#x joined %#llx, want %#x 7", st.j.epoch,
		       (unsigned long long)st.j.joined[0], e1);
	}
	c = contrib(0, 1, 0, 8, XINA_OP_SUM);
	c.epoch = e1;
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	c = contrib(1, 1, 0, 8, XINA_OP_SUM);
	c.epoch = e1;
	ASSERT_EQ(send_c(&c, &r), V_RESULT);
	EXPECT_EQ(result_errors(r.out, XINA_OP_SUM, 3, 1, 0, 8), 0);

	/* a round just completed: a join of run 9 is told busy */
	ASSERT_EQ(0, jstate_read(&st));
	counts_read(&before);
	EXPECT_EQ(join_run_of(2, 31, 9, XINA_JOIN_BUSY, 0, &r), 0);
	EXPECT_EQ(counted(&before, XINA_STAT_JOIN_REFUSED), 0);
	st.jm[2].nonce = 31;
	st.jm[2].status = XINA_JOIN_BUSY;
	st.jm[2].epoch = 0;
	EXPECT_TRUE(jstate_same(&st)) {
		TH_LOG("a busy refusal changed the epoch");
	}
}

/*
 * A partial of the old epoch left on another CPU (a round that never
 * completed) is not folded into the same round of the new epoch.  With
 * one CPU, the partial is the completing CPU's own, which the new round
 * must overwrite, not add to.
 */
TEST_F(fp, epoch_partials_not_folded)
{
	struct contrib c;
	int old_cpu;
	struct run r;

	ASSERT_EQ(0, job_add(2, 4, 8, false));
	old_cpu = libbpf_num_possible_cpus() > 1 ? 1 : 0;
	TH_LOG("the old epoch's partial on CPU %d, the new round on CPU 0",
	       old_cpu);
	c = join_of(0, 4, 8, 1);
	send_join(&c, &r);
	ASSERT_EQ(answered(&r, &c, XINA_JOIN_OK, EPOCH0), 0);
	ASSERT_EQ(0, pin_cpu(old_cpu));
	c = contrib(0, 3, 0, 8, XINA_OP_SUM);
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	c = contrib(0, 3, 1, 8, XINA_OP_MAX);
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	ASSERT_EQ(0, pin_cpu(0));

	/* no round completed: the restart is not busy */
	c = join_of(0, 4, 8, 2);
	send_join(&c, &r);
	ASSERT_EQ(answered(&r, &c, XINA_JOIN_OK, EPOCH0 + 1), 0);
	c = join_of(1, 4, 8, 1);
	send_join(&c, &r);
	ASSERT_EQ(answered(&r, &c, XINA_JOIN_OK, EPOCH0 + 1), 0);
	EXPECT_EQ(jstat(XINA_STAT_EPOCH_NEW), 1);

	c = contrib(0, 3, 0, 8, XINA_OP_SUM);
	c.epoch = EPOCH0 + 1;
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	c = contrib(1, 3, 0, 8, XINA_OP_SUM);
	c.epoch = EPOCH0 + 1;
	ASSERT_EQ(send_c(&c, &r), V_RESULT);
	EXPECT_EQ(result_errors(r.out, XINA_OP_SUM, 2, 3, 0, 8), 0);
	c = contrib(1, 3, 1, 8, XINA_OP_MAX);
	c.epoch = EPOCH0 + 1;
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	c = contrib(0, 3, 1, 8, XINA_OP_MAX);
	c.epoch = EPOCH0 + 1;
	ASSERT_EQ(send_c(&c, &r), V_RESULT);
	EXPECT_EQ(result_errors(r.out, XINA_OP_MAX, 2, 3, 1, 8), 0);
	EXPECT_EQ(jstat(XINA_STAT_COMPLETE), 2);
}

/* A version never used takes the first two rounds only. */
TEST_F(fp, fresh_version_first_rounds)
{
	struct counts before;
	struct snapshot s;
	struct contrib c;
	struct run r;

	ASSERT_EQ(0, job_add(2, 4, 8, false));
	ASSERT_EQ(0, snap_take(&s));
	counts_read(&before);
	c = contrib(0, 0, 2, 8, XINA_OP_SUM);
	EXPECT_EQ(send_c(&c, &r), XDP_DROP);
	EXPECT_EQ(counted(&before, XINA_STAT_DROP_RANGE), 0);
	counts_read(&before);
	c = contrib(0, 0, 3, 8, XINA_OP_SUM);
	EXPECT_EQ(send_c(&c, &r), XDP_DROP);
	EXPECT_EQ(counted(&before, XINA_STAT_DROP_RANGE), 0);
	counts_read(&before);
	c = contrib(0, 0, 0xffffffff, 8, XINA_OP_SUM);
	EXPECT_EQ(send_c(&c, &r), XDP_DROP);
	EXPECT_EQ(counted(&before, XINA_STAT_DROP_RANGE), 0);
	EXPECT_TRUE(snap_same(&s)) {
		TH_LOG("a refused round changed slot memory");
	}
	c = contrib(0, 0, 1, 8, XINA_OP_SUM);
	EXPECT_EQ(send_c(&c, &r), XDP_DROP);
	c = contrib(1, 0, 1, 8, XINA_OP_SUM);
	EXPECT_EQ(send_c(&c, &r), V_RESULT);
	c = contrib(1, 0, 0, 8, XINA_OP_SUM);
	EXPECT_EQ(send_c(&c, &r), XDP_DROP);
	c = contrib(0, 0, 0, 8, XINA_OP_SUM);
	EXPECT_EQ(send_c(&c, &r), V_RESULT);
	EXPECT_EQ(result_errors(r.out, XINA_OP_SUM, 2, 0, 0, 8), 0);
	free(s.buf);
}

/* A job whose epoch is 0 (none set) takes no contribution. */
TEST_F(fp, epoch_zero_takes_nothing)
{
	struct xina_epoch ep = {};
	struct snapshot s;
	struct contrib c;
	__u32 k = JOB_IDX;

	ASSERT_EQ(0, job_add(2, 4, 8, false));
	ASSERT_EQ(0, bpf_map_update_elem(F.epochs, &k, &ep, BPF_ANY));
	ASSERT_EQ(0, snap_take(&s));
	c = contrib(0, 0, 0, 8, XINA_OP_SUM);
	c.epoch = 0;
	EXPECT_EQ(refused("epoch 0 of a job without one", &c, NO_STAT,
			  XINA_STAT_DROP_EPOCH, &s), 0);
	free(s.buf);
}

/* Valid contributions teach the switch where the member is. */
TEST_F(fp, learns_member)
{
	struct xina_member m;
	__u32 k = member_key(1);
	__u8 mac[ETH_ALEN];
	struct contrib c;
	struct run r;

	ASSERT_EQ(0, job_add(2, 4, 8, false));
	c = contrib(1, 0, 0, 8, XINA_OP_SUM);
	c.sport = 5555;		/* any port: member port is 0 */
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	ASSERT_EQ(0, bpf_map_lookup_elem(F.members, &k, &m));
	wk_mac(mac, 1);
	EXPECT_TRUE(!memcmp(m.mac, mac, ETH_ALEN)) {
		TH_LOG("MAC not learned");
	}
	EXPECT_TRUE(!memcmp(m.sw_mac, sw_mac, ETH_ALEN)) {
		TH_LOG("the switch MAC the member sends to not learned");
	}
	EXPECT_EQ(ntohl(m.sw_addr), SW_IP);
	EXPECT_EQ(m.ifindex, 1);
	EXPECT_EQ(ntohs(m.rport), 5555);
	EXPECT_EQ(m.port, 0);
	EXPECT_EQ(ntohl(m.addr), WK_IP(1));

	/* a refused packet teaches nothing */
	c = contrib(1, 0, 0, 8, XINA_OP_SUM);
	c.tag_xor = 1;
	c.sport = 6666;
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	EXPECT_EQ(jstat(XINA_STAT_DROP_AUTH), 1);
	ASSERT_EQ(0, bpf_map_lookup_elem(F.members, &k, &m));
	EXPECT_EQ(ntohs(m.rport), 5555);
	/* nor does a genuine duplicate from another port */
	c = contrib(1, 0, 0, 8, XINA_OP_SUM);
	c.sport = 6666;
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	EXPECT_EQ(jstat(XINA_STAT_DUP), 1);
	ASSERT_EQ(0, bpf_map_lookup_elem(F.members, &k, &m));
	EXPECT_EQ(ntohs(m.rport), 5555);
	/* the next accepted contribution does */
	c = contrib(1, 1, 0, 8, XINA_OP_SUM);
	c.sport = 6666;
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	ASSERT_EQ(0, bpf_map_lookup_elem(F.members, &k, &m));
	EXPECT_EQ(ntohs(m.rport), 6666);
}

/*
 * Contributions to the same slots from both CPUs, interleaved over many
 * slots and rounds: every result must be exact.
 */
TEST_F(fp, two_cpus_exact)
{
	const unsigned int workers = 4, slots = 16, rounds = 6, count = 256;
	unsigned int slot, round, w, bad = 0, done = 0;
	struct contrib c;
	struct run r;
	int ret;

	if (libbpf_num_possible_cpus() < 2)
		SKIP(return, "needs two CPUs");
	ASSERT_EQ(0, job_add(workers, slots, count, false));
	for (round = 0; round < rounds; round++) {
		for (w = 0; w < workers; w++) {
			for (slot = 0; slot < slots; slot++) {
				ASSERT_EQ(0, pin_cpu((w + slot + round) & 1));
				c = contrib(w, slot, round, count,
					    slot & 1 ? XINA_OP_MAX : XINA_OP_SUM);
				ret = send_c(&c, &r);
				if (w + 1 < workers) {
					ASSERT_EQ(ret, XDP_DROP);
					continue;
				}
				ASSERT_EQ(ret, V_RESULT);
				bad += result_errors(r.out, c.op, workers,
						     slot, round, count);
				done++;
			}
		}
	}
	pin_cpu(0);
	EXPECT_EQ(bad, 0);
	EXPECT_EQ(done, slots * rounds);
	EXPECT_EQ(jstat(XINA_STAT_COMPLETE), slots * rounds);
	EXPECT_EQ(jstat(XINA_STAT_CONTRIB), slots * rounds * workers);
}

/* ---- element types and operators --------------------------------------- *
 *
 * Every (dtype, op) pair against the reference of selftests/xina_ref.h,
 * computed here element by element in plain C on int8_t .. int64_t: not
 * through bpf/xina_lanes.h, whose arithmetic the fast path uses, so that
 * the two are independent.
 */

#define T_WORKERS	4
#define T_ELEMS		(4 * XINA_MAX_ELEMS)	/* int8 in the largest block */

/*
 * Element @i of rank @r, @bits wide, sign-extended: element 0 is the
 * type's maximum and element 1 its minimum in every contribution (SUM
 * wraps, MIN and MAX meet the extremes), a quarter of the others one of
 * the extremes or their neighbours, the rest random.
 */
static int64_t tval(unsigned int r, unsigned int i, __u8 dtype, __u32 seed)
{
	int64_t max = xref_max(dtype), min = xref_min(dtype);
	int64_t edge[] = { min, max, -1, 0, 1, min + 1, max - 1 };
	__u64 x = xref_mix64((__u64)seed << 40 ^ (__u64)r << 32 ^ i);

	if (i == 0)
		return max;
	if (i == 1)
		return min;
	if (!(x & 3))
		return edge[(x >> 2) % 7];
	return xref_sext(x, xref_bits(dtype));
}

struct tround {
	__u8 dtype, op;
	__u32 slot, round, seed;
	unsigned int workers;
	unsigned int count;	/* words */
	unsigned int nelem;	/* elements; the rest of the words: padding */
	const unsigned int *order;	/* ranks in arrival order */
	__u32 res[XINA_MAX_ELEMS];	/* the result's words, host order */
	unsigned int wrapped;	/* SUM: elements whose sum wrapped */
};

static int64_t t_e[T_WORKERS][T_ELEMS];
static __u32 t_w[T_WORKERS][XINA_MAX_ELEMS];

/*
 * One round of @t: every worker's contribution in @t->order, rank r on CPU
 * r % CPUs (so that the partials of several CPUs are folded); returns the
 * number of wrong result elements (padding lanes included, which must be
 * 0), -1 when the verdicts or the result's header are wrong.
 */
static int t_round(struct tround *t)
{
	unsigned int lanes = xref_elems(t->dtype, t->count);
	int ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned int k, r, i, bad = 0;
	const struct xina_hdr *xh;
	struct contrib c;
	struct run r_;
	__int128 exact;
	int64_t want;
	int ret;

	for (r = 0; r < t->workers; r++) {
		for (i = 0; i < t->nelem; i++)
			t_e[r][i] = tval(r, i, t->dtype, t->seed);
		xref_pack(t->dtype, t_e[r], t->nelem, t_w[r], t->count);
	}
	for (k = 0; k < t->workers; k++) {
		r = t->order[k];
		if (ncpus > 1 && pin_cpu(r % ncpus))
			return -1;
		c = contrib(r, t->slot, t->round, t->count, t->op);
		c.dtype = t->dtype;
		c.words = t_w[r];
		ret = send_c(&c, &r_);
		if (ret != (k + 1 < t->workers ? XDP_DROP : V_RESULT)) {
			LOG("%s %s slot %u round %u rank %u: verdict %d",
			    xref_dtype_name(t->dtype), xref_op_name(t->op),
			    t->slot, t->round, r, ret);
			return -1;
		}
	}
	pin_cpu(0);
	xh = xhdr(r_.out);
	if (r_.len != PAYLOAD_OFF + 4 * t->count ||
	    xh->type != XINA_T_RESULT || xh->dtype != t->dtype ||
	    xh->op != t->op || ntohs(xh->count) != t->count ||
	    !result_tag_ok(r_.out)) {
		LOG("%s %s: result header: type %u dtype %u op %u count %u",
		    xref_dtype_name(t->dtype), xref_op_name(t->op),
		    xh->type, xh->dtype, xh->op,
		    ntohs(xh->count));
		return -1;
	}
	for (i = 0; i < t->count; i++)
		t->res[i] = ntohl(((const __be32 *)(xh + 1))[i]);
	t->wrapped = 0;
	for (i = 0; i < lanes; i++) {
		want = 0;
		exact = 0;
		if (i < t->nelem) {
			want = t_e[0][i];
			exact = want;
			for (r = 1; r < t->workers; r++) {
				want = xref_fold(t->dtype, t->op, want,
						 t_e[r][i]);
				exact += t_e[r][i];
			}
		}
		if (t->op == XINA_OP_SUM && exact != want)
			t->wrapped++;
		if (xref_get(t->dtype, t->res, i) != want) {
			if (!bad)
				LOG("%s %s slot %u round %u elem %u%s: %lld, want %lld",
				    xref_dtype_name(t->dtype),
				    xref_op_name(t->op), t->slot, t->round, i,
				    i < t->nelem ? "" : " (padding)",
				    (long long)xref_get(t->dtype, t->res, i),
				    (long long)want);
			bad++;
		}
	}
	return bad;
}

/* Arrival orders of T_WORKERS contributions. */
static const unsigned int T_ORDERS[][T_WORKERS] = {
	{ 0, 1, 2, 3 }, { 3, 2, 1, 0 }, { 2, 0, 3, 1 }, { 1, 3, 0, 2 },
};
#define T_NORDERS	(sizeof(T_ORDERS) / sizeof(T_ORDERS[0]))

/*
 * Every (dtype, op) pair, one slot each, four workers on both CPUs, 37
 * words (38 for INT64: an even count; blocks and a tail), with padding
 * lanes in the last word of INT8 (3) and INT16 (1); each pair in four
 * arrival orders (rounds 0..3 of its slot): every result exact, and the
 * same bits whatever the order.  SUM must have wrapped in every type.
 */
TEST_F(fp, types_every_pair)
{
	static struct tround t, first;
	unsigned int d, o, n, bad = 0, wrapped[XREF_NDTYPES] = { 0 };
	int e;

	ASSERT_EQ(0, job_add(T_WORKERS, XREF_NPAIRS, 64, false));
	for (d = 0; d < XREF_NDTYPES; d++) {
		for (o = 0; o < XREF_NOPS; o++) {
			for (n = 0; n < T_NORDERS; n++) {
				t = (struct tround){
					.dtype = XREF_DTYPES[d],
					.op = XREF_OPS[o],
					.slot = d * XREF_NOPS + o, .round = n,
					.seed = d * XREF_NOPS + o,
					.workers = T_WORKERS,
					.count = XREF_DTYPES[d] ==
						 XINA_DTYPE_INT64 ? 38 : 37,
					.order = T_ORDERS[n],
				};
				t.nelem = xref_elems(t.dtype, t.count);
				if (t.dtype == XINA_DTYPE_INT8)
					t.nelem -= 3;
				if (t.dtype == XINA_DTYPE_INT16)
					t.nelem -= 1;
				e = t_round(&t);
				ASSERT_TRUE(e >= 0) {
					TH_LOG("round failed");
				}
				bad += e;
				wrapped[d] += t.wrapped;
				if (!n) {
					first = t;
					continue;
				}
				if (memcmp(first.res, t.res, 4 * t.count)) {
					TH_LOG("%s %s: order %u gives other bits than order 0",
					       xref_dtype_name(t.dtype),
					       xref_op_name(t.op), n);
					bad++;
				}
			}
		}
	}
	EXPECT_EQ(bad, 0);
	for (d = 0; d < XREF_NDTYPES; d++) {
		EXPECT_TRUE(wrapped[d] > 0) {
			TH_LOG("%s: no SUM wrapped",
			       xref_dtype_name(XREF_DTYPES[d]));
		}
	}
	EXPECT_EQ(jstat(XINA_STAT_COMPLETE), XREF_NPAIRS * T_NORDERS);
	EXPECT_EQ(jstat(XINA_STAT_CONTRIB),
		  XREF_NPAIRS * T_NORDERS * T_WORKERS);
	EXPECT_EQ(jstat(XINA_STAT_DROP_OP), 0);
}

/*
 * Jumbo 16-bit blocks: 2048 words (4095 elements and a padding lane) in
 * frames of several buffers, SUM, MIN and MAX, in two arrival orders.
 */
TEST_F(fp, types_jumbo_int16)
{
	static const __u8 ops[] = { XINA_OP_SUM, XINA_OP_MIN, XINA_OP_MAX };
	static struct tround t, first;
	unsigned int o, n, bad = 0;
	int e;

	ASSERT_EQ(0, job_add(T_WORKERS, 3, XINA_MAX_ELEMS, false));
	for (o = 0; o < 3; o++) {
		for (n = 0; n < 2; n++) {
			t = (struct tround){
				.dtype = XINA_DTYPE_INT16, .op = ops[o],
				.slot = o, .round = n, .seed = 100 + o,
				.workers = T_WORKERS,
				.count = XINA_MAX_ELEMS,
				.nelem = 2 * XINA_MAX_ELEMS - 1,
				.order = T_ORDERS[n],
			};
			e = t_round(&t);
			ASSERT_TRUE(e >= 0) {
				TH_LOG("round failed");
			}
			bad += e;
			if (!n)
				first = t;
			else if (memcmp(first.res, t.res, 4 * t.count)) {
				TH_LOG("op %u: the second order gives other bits",
				       t.op);
				bad++;
			}
		}
	}
	EXPECT_EQ(bad, 0);
	EXPECT_EQ(jstat(XINA_STAT_COMPLETE), 6);
}

/* INT64 takes two words per element: an odd count is drop_op. */
TEST_F(fp, int64_odd_count)
{
	struct snapshot s;
	struct contrib c;

	ASSERT_EQ(0, job_pending(&s));
	c = valid();
	c.slot = 2;	/* no round open: nothing may open one */
	c.dtype = XINA_DTYPE_INT64;
	c.count = c.nvals = 7;
	EXPECT_EQ(refused("INT64, 7 words", &c, NO_STAT, XINA_STAT_DROP_OP,
			  &s), 0);
	c.count = c.nvals = 1;
	EXPECT_EQ(refused("INT64, 1 word", &c, NO_STAT, XINA_STAT_DROP_OP,
			  &s), 0);
	c = valid();	/* the pending round's slot */
	c.dtype = XINA_DTYPE_INT64;
	c.count = c.nvals = 7;
	EXPECT_EQ(refused("INT64, 7 words, pending slot", &c, NO_STAT,
			  XINA_STAT_DROP_OP, &s), 0);
}

/*
 * A round opened by (INT16, MIN) takes no contribution of another pair:
 * every other pair, the same op in another type and the same type with
 * another op included, is drop_op with slot memory unchanged; then the
 * round's own pair is taken.
 */
TEST_F(fp, round_keeps_its_pair)
{
	struct contrib c = contrib(0, 1, 0, 8, XINA_OP_MIN);
	unsigned int d, o, refusals = 0;
	struct snapshot s;
	struct run r;
	char what[64];

	c.dtype = XINA_DTYPE_INT16;
	ASSERT_EQ(0, job_add(4, 4, 8, true));
	ASSERT_EQ(send_c(&c, &r), XDP_DROP);
	ASSERT_EQ(jstat(XINA_STAT_CONTRIB), 1);
	ASSERT_EQ(0, snap_take(&s));
	for (d = 0; d < XREF_NDTYPES; d++) {
		for (o = 0; o < XREF_NOPS; o++) {
			if (XREF_DTYPES[d] == XINA_DTYPE_INT16 &&
			    XREF_OPS[o] == XINA_OP_MIN)
				continue;
			c = contrib(1, 1, 0, 8, XREF_OPS[o]);
			c.dtype = XREF_DTYPES[d];
			snprintf(what, sizeof(what), "%s %s",
				 xref_dtype_name(XREF_DTYPES[d]),
				 xref_op_name(XREF_OPS[o]));
			EXPECT_EQ(refused(what, &c, NO_STAT,
					  XINA_STAT_DROP_OP, &s), 0);
			refusals++;
		}
	}
	EXPECT_EQ(refusals, XREF_NPAIRS - 1);
	free(s.buf);
	c = contrib(1, 1, 0, 8, XINA_OP_MIN);
	c.dtype = XINA_DTYPE_INT16;
	EXPECT_EQ(send_c(&c, &r), XDP_DROP);
	EXPECT_EQ(jstat(XINA_STAT_CONTRIB), 2);
	EXPECT_EQ(jstat(XINA_STAT_DROP_OP), XREF_NPAIRS - 1);
}

/* ---- fan-out: xina_fanout on the TC hook, live ----------------------------- */

/*
 * Run ip(8) with the NULL-terminated arguments, without a shell: a
 * busybox sh (as in a VM's initramfs) would run its own ip applet.
 */
static int ip(bool quiet, ...)
{
	char *argv[16] = { "ip" };
	int status, i = 1;
	va_list ap;
	pid_t pid;

	va_start(ap, quiet);
	while (i < 15 && (argv[i] = va_arg(ap, char *)))
		i++;
	va_end(ap);
	argv[i] = NULL;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		if (quiet)
			freopen("/dev/null", "w", stderr);
		execvp("ip", argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	if (!quiet && (!WIFEXITED(status) || WEXITSTATUS(status))) {
		LOG("ip %s %s %s: failed (status %#x)", argv[1], argv[2],
		    argv[3] ? argv[3] : "", status);
		return -1;
	}
	return 0;
}

static int veth_pair(const char *sw, const char *wk, const char *wk_mac,
		     const char *mtu)
{
	return ip(false, "link", "add", sw, "mtu", mtu, "type", "veth", "peer",
		  "name", wk, "address", wk_mac, "mtu", mtu, NULL) ||
	       ip(false, "link", "set", sw, "up", NULL) ||
	       ip(false, "link", "set", wk, "up", NULL);
}

/* xina_xdp and xina_fanout on switch port @ifindex, as "dev attach" does. */
static int port_attach(int ifindex)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
		    .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .prog_fd = F.fanout);
	int err;

	err = bpf_tc_hook_create(&hook);
	if (err && err != -EEXIST)
		return err;
	err = bpf_tc_attach(&hook, &opts);
	if (err)
		return err;
	return bpf_xdp_attach(ifindex, F.xdp, 0, NULL);
}

static int packet_socket(const char *ifname)
{
	struct sockaddr_ll sll = {
		.sll_family = AF_PACKET,
		.sll_protocol = htons(ETH_P_IP),
		.sll_ifindex = if_nametoindex(ifname),
	};
	int fd;

	fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, htons(ETH_P_IP));
	if (fd < 0)
		return -1;
	if (bind(fd, (void *)&sll, sizeof(sll))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Wait at most @ms between frames for the next xina result on @fd. */
static ssize_t recv_result_within(int fd, __u8 *buf, size_t sz, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	while (poll(&p, 1, ms) == 1) {
		n = recv(fd, buf, sz, 0);
		if (n >= PAYLOAD_OFF &&
		    udphdr(buf)->source == htons(XINA_UDP_PORT))
			return n;
	}
	return -1;
}

static ssize_t recv_result(int fd, __u8 *buf, size_t sz)
{
	return recv_result_within(fd, buf, sz, 2000);
}

/* The UDP checksum of @frame: none (0), or one that verifies. */
static bool udp_csum_ok(const __u8 *frame, size_t len)
{
	const struct iphdr *iph = iphdr(frame);
	const struct udphdr *udp = udphdr(frame);
	size_t ulen = ntohs(udp->len);
	__u32 sum;

	if (!udp->check)
		return true;
	if (ulen < sizeof(*udp) || HDRS_LEN - sizeof(*udp) + ulen > len)
		return false;
	sum = csum_add(0, &iph->saddr, 8);	/* saddr, daddr */
	sum += IPPROTO_UDP + ulen;
	sum = csum_add(sum, udp, ulen);
	return csum_fold(sum) == 0;
}

/*
 * What xina_fanout made of one copy of the result of (slot 2, round 0) of
 * @workers with @count elements, received on the worker end @wk for member
 * @rank: addressed to that member alone (its MAC, IP, the UDP port it sent
 * from), from the switch address and MAC the member sent to, with valid
 * checksums and the exact aggregate.  Returns the number of bad fields.
 */
static int check_copy(const char *wk, unsigned int rank, const __u8 *buf,
		      ssize_t n, size_t len, unsigned int workers,
		      unsigned int count)
{
	const struct iphdr *iph = iphdr(buf);
	const struct udphdr *udp = udphdr(buf);
	__u8 mac[ETH_ALEN];
	int bad = 0;

#define COPY_CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			LOG("%s: " __VA_ARGS__);			\
			bad++;						\
		}							\
	} while (0)
	COPY_CHECK(n == (ssize_t)len, "got %zd bytes, want %zu", wk, n, len);
	if (n != (ssize_t)len)
		return bad;
	wk_mac(mac, rank);
	COPY_CHECK(!memcmp(buf, mac, ETH_ALEN), "dst MAC is not rank %u's",
		   wk, rank);
	COPY_CHECK(!memcmp(buf + ETH_ALEN, sw_mac, ETH_ALEN),
		   "src MAC is not the switch's", wk);
	COPY_CHECK(ntohl(iph->daddr) == WK_IP(rank), "dst IP %#x, want %#x",
		   wk, ntohl(iph->daddr), WK_IP(rank));
	COPY_CHECK(ntohl(iph->saddr) == SW_IP, "src IP %#x, want %#x", wk,
		   ntohl(iph->saddr), SW_IP);
	COPY_CHECK(ntohs(iph->tot_len) == len - ETH_HLEN, "IP length %u",
		   wk, ntohs(iph->tot_len));
	COPY_CHECK(ip_csum(iph, sizeof(*iph)) == 0, "IP checksum %#x invalid",
		   wk, ntohs(iph->check));
	COPY_CHECK(ntohs(udp->dest) == WK_PORT(rank), "dst port %u, want %u",
		   wk, ntohs(udp->dest), WK_PORT(rank));
	COPY_CHECK(ntohs(udp->source) == XINA_UDP_PORT, "src port %u", wk,
		   ntohs(udp->source));
	COPY_CHECK(ntohs(udp->len) == len - ETH_HLEN - sizeof(*iph),
		   "UDP length %u", wk, ntohs(udp->len));
	COPY_CHECK(udp_csum_ok(buf, n), "UDP checksum %#x invalid", wk,
		   ntohs(udp->check));
	COPY_CHECK(xhdr(buf)->type == XINA_T_RESULT, "type %u", wk,
		   xhdr(buf)->type);
	COPY_CHECK(ntohl(xhdr(buf)->job) == JOB_ID, "job %u", wk,
		   ntohl(xhdr(buf)->job));
	COPY_CHECK(result_tag_ok(buf), "result tag does not verify", wk);
	bad += result_errors(buf, XINA_OP_SUM, workers, 2, 0, count);
#undef COPY_CHECK
	return bad;
}

/* The rank a received copy is addressed to, from its destination IP. */
static unsigned int copy_rank(const __u8 *buf)
{
	return ntohl(iphdr(buf)->daddr) - WK_IP(0);
}

/*
 * A rack of two ports: veth pairs in this test's own netns, xina_xdp and
 * xina_fanout on the switch ends as "dev attach" puts them, nothing on the
 * worker ends.  Ranks 0 and 2 are behind port 0, rank 1 behind port 1.
 * The contributions are sent for real from packet sockets on the worker
 * ends, so the whole fan-out runs: XDP_PASS of the marked result, TC
 * ingress, one clone per member with that member's headers, delivery.
 * The members are configured with any port (0): the port each copy goes
 * to is the one learned from its member's contribution.  @count elements
 * per packet at MTU @mtu: with 2048, the frames span several buffers.
 */
static void fan_out(struct __test_metadata *_metadata, unsigned int count,
		    const char *mtu)
{
	const char *sw[2] = { "xsw0", "xsw1" }, *wk[2] = { "xwk0", "xwk1" };
	const char *wk_macs[2] = { "02:00:00:00:07:00", "02:00:00:00:07:01" };
	static __u8 buf[FRAME_MAX + 64];
	const unsigned int workers = 3;
	unsigned int got[3] = {}, rank;
	int fd[2] = { -1, -1 }, i;
	struct contrib c;
	__u32 ifi[2];
	size_t len;
	ssize_t n;

	if (!have_netns)
		SKIP(return, "no private network namespace (unshare failed)");
	for (i = 0; i < 2; i++)
		if (veth_pair(sw[i], wk[i], wk_macs[i], mtu))
			SKIP(return, "cannot make veth pairs (veth, ip(8))");

	ASSERT_EQ(0, job_add(workers, 4, count, false));
	for (i = 0; i < 2; i++) {
		ifi[i] = if_nametoindex(sw[i]);
		ASSERT_TRUE(ifi[i]) {
			TH_LOG("no ifindex for %s", sw[i]);
		}
		ASSERT_EQ(0, port_attach(ifi[i]));
		fd[i] = packet_socket(wk[i]);
		ASSERT_TRUE(fd[i] >= 0) {
			TH_LOG("packet socket on %s: %s", wk[i],
			       strerror(errno));
		}
	}

	for (rank = 0; rank < workers; rank++) {
		c = contrib(rank, 2, 0, count, XINA_OP_SUM);
		len = build_frame(buf, &c);
		ASSERT_EQ(send(fd[rank % 2], buf, len, 0), (ssize_t)len);
	}

	/* One copy per member, out of the port it is behind: two on port 0. */
	for (i = 0; i < 2; i++) {
		while ((n = recv_result_within(fd[i], buf, sizeof(buf),
					       i ? 200 : 2000)) > 0) {
			rank = copy_rank(buf);
			EXPECT_TRUE(rank < workers && rank % 2 == (unsigned int)i) {
				TH_LOG("%s: a copy for rank %u", wk[i], rank);
			}
			if (rank >= workers)
				continue;
			got[rank]++;
			EXPECT_EQ(check_copy(wk[i], rank, buf, n, len, workers,
					     count), 0);
		}
	}
	for (rank = 0; rank < workers; rank++) {
		EXPECT_TRUE(got[rank] == 1) {
			TH_LOG("rank %u got %u copies, want 1",
			       rank, got[rank]);
		}
	}
	EXPECT_EQ(jstat(XINA_STAT_CONTRIB), workers);
	EXPECT_EQ(jstat(XINA_STAT_COMPLETE), 1);
	EXPECT_EQ(jstat(XINA_STAT_TX), workers);
	EXPECT_EQ(jstat(XINA_STAT_TX_UNKNOWN), 0);

	/* Rank 2 lost its copy: its resend is answered to it alone. */
	c = contrib(2, 2, 0, count, XINA_OP_SUM);
	c.flags = XINA_F_RETRANS;
	len = build_frame(buf, &c);
	ASSERT_EQ(send(fd[0], buf, len, 0), (ssize_t)len);
	n = recv_result(fd[0], buf, sizeof(buf));
	EXPECT_EQ(check_copy(wk[0], 2, buf, n, len, workers, count), 0);
	EXPECT_EQ(jstat(XINA_STAT_RETRANS_ANSWERED), 1);
	for (i = 0; i < 2; i++) {
		EXPECT_TRUE(recv_result_within(fd[i], buf, sizeof(buf), 200) < 0) {
			TH_LOG("%s: a copy of the answer arrived", wk[i]);
		}
	}
	EXPECT_EQ(jstat(XINA_STAT_TX), workers + 1);

	/*
	 * Rank 1's contribution replayed behind port 0: answered, but the
	 * copy goes out of port 1, where rank 1 was learned, not back.
	 */
	c = contrib(1, 2, 0, count, XINA_OP_SUM);
	len = build_frame(buf, &c);
	ASSERT_EQ(send(fd[0], buf, len, 0), (ssize_t)len);
	n = recv_result(fd[1], buf, sizeof(buf));
	EXPECT_EQ(check_copy(wk[1], 1, buf, n, len, workers, count), 0);
	EXPECT_TRUE(recv_result_within(fd[0], buf, sizeof(buf), 200) < 0) {
		TH_LOG("%s: the replayer's port got a copy", wk[0]);
	}
	EXPECT_EQ(jstat(XINA_STAT_RETRANS_ANSWERED), 2);
	for (i = 0; i < 2; i++)
		close(fd[i]);
}

TEST_F(fp, fanout_live)
{
	fan_out(_metadata, 32, "1500");
}

/* Frames of three buffers on veth: the elements beyond the first. */
TEST_F(fp, fanout_live_jumbo)
{
	fan_out(_metadata, XINA_MAX_ELEMS, "9000");
}

/* libbpf's warnings (verifier logs included) as TAP diagnostics. */
static int libbpf_log(enum libbpf_print_level level, const char *fmt,
		      va_list ap)
{
	char *buf, *line, *save;

	if (level == LIBBPF_DEBUG || vasprintf(&buf, fmt, ap) < 0)
		return 0;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		fprintf(stderr, "# %s\n", line);
	free(buf);
	return 0;
}

static void teardown(void)
{
	if (F.skel)
		fx_close();
	pin_cpu(0);
	if (have_netns) {
		ip(true, "link", "del", "xsw0", NULL);
		ip(true, "link", "del", "xsw1", NULL);
		ip(true, "link", "del", "xrp0", NULL);
	}
}

int main(int argc, char **argv)
{
	keys_init();
	if (geteuid())
		ksft_exit_skip("needs root (BPF_PROG_TEST_RUN, maps)\n");
	/* Everything, veth pairs included, lives in a netns of our own. */
	have_netns = !unshare(CLONE_NEWNET);
	libbpf_set_print(libbpf_log);
	/* A fast path the verifier refuses is a failure, never a skip. */
	if (fx_open()) {
		ksft_print_header();
		ksft_set_plan(1);
		ksft_test_result_fail("load the XDP object: xina.bpf.o does not load; see the log above\n");
		ksft_finished();
	}
	fx_close();
	return test_harness_run(argc, argv);
}
