// SPDX-License-Identifier: GPL-2.0
/*
 * xina-bench-fastpath: cost of the XDP fast path per packet, through
 * BPF_PROG_TEST_RUN, for K = infinity (adds only), K = 4 and K = 1.
 *
 *   xina-bench-fastpath [-n PACKETS] [-e WORDS[,WORDS...]] [-d DEVFMT]
 *                       [-T DTYPE[,DTYPE...]]
 *
 * -e gives the payload of a packet in 32-bit words (the wire's count),
 * -T the element types to run (int8, int16, int32, int64; default int32):
 * a word holds four int8, two int16, one int32 or half an int64 (an odd
 * count is refused for int64).  All cases are SUM.
 *
 * Run it in a namespace that has one device per rank (the rack's switch
 * namespace: -d p%d, the default): every contribution of rank r enters on
 * device r, as on the rack.  With all ranks on one device, xina_learn()
 * would rewrite the member entries on every packet, a cost the rack
 * never pays.
 *
 * Why one packet per BPF_PROG_TEST_RUN call.  Without live frames the
 * kernel runs "repeat" times over the same buffer: the second run of a
 * contribution is a duplicate (its bit is set) and never adds, and a
 * completing run rewrites the buffer into a result.  So every call runs one
 * packet (repeat = 1) and the kernel's duration is the time of that one
 * run plus the clock reads around it; that overhead is measured with a
 * two-instruction program and reported separately (ns_timer), and ns_net
 * is the fast path alone.
 *
 * K = infinity: a job of XINA_MAX_WORKERS members where only rank 0 ever
 * sends.  Before each packet the slot version's meta (bitmap, counters) is
 * zeroed from user space, outside the timed region, so each packet is a
 * first contribution to an open round; the per-CPU partial is left alone,
 * so every packet after the first adds into it.  The slot never completes:
 * adds only.  At the end the partial must hold PACKETS times the payload
 * (checked), which proves that every timed run added.
 * K = 4 and K = 1: ranks 0..K-1 contribute in turn, round after round; the
 * K-th contribution folds and returns the result (XDP_PASS to the TC
 * fan-out, which BPF_PROG_TEST_RUN does not run: the copies to the members
 * are not in the number).  Every result is checked.
 *
 * Frames of more than a page's worth of elements are multi-buffer frames
 * in BPF_PROG_TEST_RUN, as they are on veth: the elements beyond the first
 * buffer go through bpf_xdp_load_bytes(), and that is in the number.
 *
 * Every contribution carries a valid tag (bpf/xina_auth.h), computed
 * outside the timed region: the fast path's verification (NH over the
 * payload, SipHash over the header), and for a completion the result's
 * tag, are in the number.
 *
 * The thread is pinned to one CPU: the per-CPU partial is then the one
 * checked.  One JSON line per case on stdout: "dtype" the element type,
 * "elems" the words per packet (the name kept from when only int32
 * existed), "elements" the elements of that type per packet, and "eps"
 * the elements per second per core, elements * 1e9 / ns_net (the nop
 * line has neither dtype nor eps).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/xina.skel.h"
#include "bench_util.h"
#include "xina_maps.h"
#include "xina_auth.h"

#define BENCH_JOB	7
#define BENCH_EPOCH	0x0be0c001U	/* the job's epoch, in every packet */
/* A fixed secret: the benchmark needs keys, not secrecy. */
static const __u8 bench_secret[XINA_SECRET_BYTES] = {
	0x5e, 0xed, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab,
	0xcd, 0xef, 0x10, 0x32, 0x54, 0x76, 0x98, 0xba,
};
static __u32 bench_nhk[XINA_MAX_ELEMS];
#define BENCH_CPU	0
#define K_INF		0	/* the slot never completes */
#define MAX_ELEMS_LIST	8
#define MAX_DTYPES	4

struct pkt {
	struct ethhdr eth;
	struct iphdr ip;
	struct udphdr udp;
	struct xina_hdr xh;
	__be32 v[XINA_MAX_ELEMS];
} __attribute__((packed));

/* What BPF_PROG_TEST_RUN hands back: the frame, a mark over its start. */
union marked_pkt {
	struct xina_mark mark;
	struct pkt pkt;
};

/* xina_cookie: any number but 0 (xinactl draws one; here, a fixed one) */
static const __u64 b_cookie = 0x78696e61636f6f6bULL;

struct bench {
	struct xina *skel;
	int prog_fd;
	int nop_fd;
	int ncpus;
	int ifindex[4];		/* device of rank r (K <= 4) */
	unsigned int packets;
	__u8 dtype;		/* of the case being run */
	struct xina_part *parts;	/* one per possible CPU (lookup buffer) */
	double *ns;
};

static __u32 member_addr(unsigned int rank)
{
	return htonl(0x0a630000 | (rank + 1));	/* 10.99.x.y */
}

static const struct {
	const char *name;
	__u8 dtype;
	unsigned int bits;
} dtypes[] = {
	{ "int8", XINA_DTYPE_INT8, 8 },
	{ "int16", XINA_DTYPE_INT16, 16 },
	{ "int32", XINA_DTYPE_INT32, 32 },
	{ "int64", XINA_DTYPE_INT64, 64 },
};

static unsigned int dtype_bits(__u8 dtype)
{
	unsigned int i;

	for (i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
		if (dtypes[i].dtype == dtype)
			return dtypes[i].bits;
	return 32;
}

static const char *dtype_name(__u8 dtype)
{
	unsigned int i;

	for (i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
		if (dtypes[i].dtype == dtype)
			return dtypes[i].name;
	return "?";
}

/* Elements of @dtype in @count words. */
static unsigned int elements_of(__u8 dtype, unsigned int count)
{
	return count * 32 / dtype_bits(dtype);
}

/*
 * Element i of rank r: distinct, so that sums are easy to check (int64
 * elements use both of their words).
 */
static __s64 elem(__u8 dtype, unsigned int rank, unsigned int i)
{
	__s64 v = (__s64)(i * 3 + rank * 1000 + 1);

	return dtype == XINA_DTYPE_INT64 ? v * 0x100000001LL : v;
}

/*
 * Word @w of a block whose element i is @mul * (sum of elem(r, i) over
 * ranks r < @ranks), wrapped to the type's width as the switch sums:
 * packed as the wire packs it (include/uapi/linux/xina.h, "count").
 */
static __u32 word_of(__u8 dtype, unsigned int ranks, __u64 mul,
		     unsigned int w)
{
	unsigned int bits = dtype_bits(dtype), lanes, l, i, r;
	__u32 word = 0;
	__u64 v;

	if (bits == 64) {
		for (v = 0, r = 0; r < ranks; r++)
			v += (__u64)elem(dtype, r, w / 2);
		v *= mul;
		return w & 1 ? (__u32)v : (__u32)(v >> 32);
	}
	lanes = 32 / bits;
	for (l = 0; l < lanes; l++) {
		i = w * lanes + l;
		for (v = 0, r = 0; r < ranks; r++)
			v += (__u64)elem(dtype, r, i);
		v *= mul;
		if (bits < 32)
			v &= (1U << bits) - 1;
		word |= (__u32)v << (32 - bits * (l + 1));
	}
	return word;
}

/* Word @w of rank @rank's contribution. */
static __u32 contrib_word(__u8 dtype, unsigned int rank, unsigned int w)
{
	unsigned int bits = dtype_bits(dtype), lanes, l;
	__u32 word = 0;
	__u64 v;

	if (bits == 64) {
		v = elem(dtype, rank, w / 2);
		return w & 1 ? (__u32)v : (__u32)(v >> 32);
	}
	lanes = 32 / bits;
	for (l = 0; l < lanes; l++) {
		v = (__u64)elem(dtype, rank, w * lanes + l);
		if (bits < 32)
			v &= (1U << bits) - 1;
		word |= (__u32)v << (32 - bits * (l + 1));
	}
	return word;
}

static size_t build_pkt(struct pkt *p, __u8 dtype, unsigned int rank,
			__u32 round, unsigned int count)
{
	size_t ulen = sizeof(p->udp) + sizeof(p->xh) + count * 4;
	static __u32 m[XINA_MAX_ELEMS];
	unsigned int i;
	__u64 k[2];

	memset(p, 0, sizeof(*p));
	memcpy(p->eth.h_dest, "\x02\x00\x00\x00\x00\xfe", ETH_ALEN);
	memcpy(p->eth.h_source, "\x02\x00\x00\x00\x00\x01", ETH_ALEN);
	p->eth.h_source[5] += rank;
	p->eth.h_proto = htons(ETH_P_IP);
	p->ip.version = 4;
	p->ip.ihl = 5;
	p->ip.ttl = 64;
	p->ip.protocol = IPPROTO_UDP;
	p->ip.tot_len = htons(sizeof(p->ip) + ulen);
	p->ip.saddr = member_addr(rank);
	p->ip.daddr = htonl(0x0a4d00fe);	/* 10.77.0.254 */
	p->udp.source = htons(40000 + rank);
	p->udp.dest = htons(XINA_UDP_PORT);
	p->udp.len = htons(ulen);
	p->xh.version = XINA_WIRE_VERSION;
	p->xh.type = XINA_T_CONTRIB;
	p->xh.dtype = dtype;
	p->xh.op = XINA_OP_SUM;
	p->xh.count = htons(count);
	p->xh.job = htonl(BENCH_JOB);
	p->xh.rank = htons(rank);
	p->xh.round = htonl(round);
	p->xh.epoch = htonl(BENCH_EPOCH);
	for (i = 0; i < count; i++) {
		m[i] = contrib_word(dtype, rank, i);
		p->v[i] = htonl(m[i]);
	}
	xina_derive_key(bench_secret, XINA_LABEL_MEMBER, BENCH_JOB, rank, k);
	p->xh.tag = htobe64(xina_tag_hdr(k, &p->xh,
					 xina_nh(bench_nhk, m, count)));
	return sizeof(p->eth) + sizeof(p->ip) + ulen;
}

/*
 * A fresh job: zeroed slot memory, @workers members with known sources,
 * epoch BENCH_EPOCH (as xinactl sets a random one).
 */
static int job_setup(struct bench *b, unsigned int workers)
{
	struct xina_job job = {
		.id = BENCH_JOB, .idx = 0, .slot_base = 0,
		.slots = 1, .workers = workers, .elems = XINA_MAX_ELEMS,
	};
	struct xina_epoch ep = { .j.epoch = BENCH_EPOCH };
	static struct xina_nhkey nhk;
	struct xina_meta meta = {};
	unsigned int r;
	__u32 k;

	memset(b->parts, 0, sizeof(*b->parts) * b->ncpus);
	for (k = 0; k < 2; k++) {
		if (bpf_map_update_elem(bpf_map__fd(b->skel->maps.xina_meta), &k, &meta, 0) ||
		    bpf_map_update_elem(bpf_map__fd(b->skel->maps.xina_vals), &k, b->parts, 0))
			return -errno;
	}
	xina_derive_key(bench_secret, XINA_LABEL_RESULT, BENCH_JOB, 0, job.kres);
	xina_derive_nh(bench_secret, BENCH_JOB, nhk.k, XINA_MAX_ELEMS);
	memcpy(bench_nhk, nhk.k, sizeof(bench_nhk));
	k = job.idx;
	if (bpf_map_update_elem(bpf_map__fd(b->skel->maps.xina_nhkeys), &k, &nhk, 0) ||
	    bpf_map_update_elem(bpf_map__fd(b->skel->maps.xina_epochs), &k, &ep, 0))
		return -errno;
	for (r = 0; r < workers; r++) {
		struct xina_member m = { .addr = member_addr(r) };

		xina_derive_key(bench_secret, XINA_LABEL_MEMBER, BENCH_JOB, r,
				m.key);
		k = job.idx * XINA_MAX_WORKERS + r;
		if (bpf_map_update_elem(bpf_map__fd(b->skel->maps.xina_members), &k, &m, 0))
			return -errno;
	}
	k = xina_job_bucket(BENCH_JOB, 0);
	if (bpf_map_update_elem(bpf_map__fd(b->skel->maps.xina_jobs), &k, &job, 0))
		return -errno;
	return 0;
}

/* One packet, one run; returns the kernel's duration in ns, or -errno. */
static long run_one(int prog_fd, int ifindex, struct pkt *in, size_t len,
		    union marked_pkt *out, __u32 *retval)
{
	struct xdp_md md = {
		.data_end = len, .ingress_ifindex = ifindex, .rx_queue_index = 0,
	};
	LIBBPF_OPTS(bpf_test_run_opts, o,
		.data_in = in, .data_size_in = len,
		.data_out = out, .data_size_out = out ? sizeof(*out) : 0,
		.ctx_in = ifindex ? &md : NULL, .ctx_size_in = ifindex ? sizeof(md) : 0,
		.repeat = 1,
	);

	if (bpf_prog_test_run_opts(prog_fd, &o))
		return -errno;
	*retval = o.retval;
	return o.duration;
}

static void report(const char *kcase, __u8 dtype, unsigned int count,
		   double *ns, unsigned int n, double timer)
{
	double p25, med, p75, p99, sum = 0;
	unsigned int i, m = 0;

	p25 = quantile(ns, n, 0.25);
	med = quantile(ns, n, 0.5);
	p75 = quantile(ns, n, 0.75);
	p99 = quantile(ns, n, 0.99);
	/* Mean without the top 1%: interrupts, not the program. */
	for (i = 0; i < n; i++) {
		if (ns[i] <= p99) {
			sum += ns[i];
			m++;
		}
	}
	printf("{\"bench\":\"fastpath\",\"k\":\"%s\",", kcase);
	if (dtype)
		printf("\"dtype\":\"%s\",", dtype_name(dtype));
	printf("\"elems\":%u,\"packets\":%u,"
	       "\"ns_median\":%.1f,\"ns_p25\":%.1f,\"ns_p75\":%.1f,\"ns_mean\":%.1f,"
	       "\"ns_timer\":%.1f,\"ns_net\":%.1f",
	       count, n, med, p25, p75, sum / m, timer, sum / m - timer);
	if (dtype)
		printf(",\"elements\":%u,\"eps\":%.4g",
		       elements_of(dtype, count),
		       elements_of(dtype, count) * 1e9 / (sum / m - timer));
	printf("}\n");
	fflush(stdout);
}

/* The clock reads around one run: a program that only returns XDP_DROP. */
static int load_nop(void)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = XDP_DROP },
		{ .code = BPF_JMP | BPF_EXIT },
	};

	return bpf_prog_load(BPF_PROG_TYPE_XDP, "xina_nop", "GPL", insns, 2, NULL);
}

static int bench_timer(struct bench *b, double *timer)
{
	struct pkt p;
	size_t len = build_pkt(&p, XINA_DTYPE_INT32, 0, 0, 64);
	unsigned int i;
	__u32 ret;
	long d;

	for (i = 0; i < b->packets; i++) {
		d = run_one(b->nop_fd, b->ifindex[0], &p, len, NULL, &ret);
		if (d < 0)
			return d;
		b->ns[i] = d;
	}
	*timer = quantile(b->ns, b->packets, 0.5);
	report("nop", 0, 64, b->ns, b->packets, 0);
	return 0;
}

static int check_partial(struct bench *b, unsigned int count, unsigned int n)
{
	__u32 k = 0, want, got;
	unsigned int i;

	if (bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.xina_vals), &k, b->parts))
		return -errno;
	for (i = 0; i < count; i++) {
		want = word_of(b->dtype, 1, n, i);
		/* pairs: element i is the high half of q[i / 2] if i is even */
		got = b->parts[BENCH_CPU].q[i / 2] >> (i & 1 ? 0 : 32);
		if (got != want) {
			fprintf(stderr, "xina-bench-fastpath: K=inf, %s, %u words: partial[%u] is 0x%08x after %u packets, expected 0x%08x\n",
				dtype_name(b->dtype), count, i, got, n, want);
			return -EIO;
		}
	}
	return 0;
}

/* Adds only: see the comment at the top. */
static int bench_kinf(struct bench *b, unsigned int count, double timer)
{
	int meta_fd = bpf_map__fd(b->skel->maps.xina_meta);
	struct xina_meta zero = {};
	unsigned int i;
	struct pkt p;
	size_t len;
	__u32 ret, k = 0;
	long d;
	int err;

	err = job_setup(b, XINA_MAX_WORKERS);
	if (err)
		return err;
	len = build_pkt(&p, b->dtype, 0, 0, count);
	for (i = 0; i < b->packets; i++) {
		if (bpf_map_update_elem(meta_fd, &k, &zero, 0))
			return -errno;
		d = run_one(b->prog_fd, b->ifindex[0], &p, len, NULL, &ret);
		if (d < 0)
			return d;
		if (ret != XDP_DROP) {
			fprintf(stderr, "xina-bench-fastpath: K=inf: packet %u returned %u, not XDP_DROP (consumed)\n",
				i, ret);
			return -EIO;
		}
		b->ns[i] = d;
	}
	err = check_partial(b, count, b->packets);
	if (err)
		return err;
	report("inf", b->dtype, count, b->ns, b->packets, timer);
	return 0;
}

/* The result, and the mark xina_xdp leaves over its start for TC. */
static int check_result(const union marked_pkt *o, __u8 dtype,
			unsigned int k, unsigned int count, __u32 round)
{
	const struct pkt *out = &o->pkt;
	unsigned int i;
	__u32 want;

	if (o->mark.cookie != b_cookie || o->mark.job != BENCH_JOB ||
	    o->mark.to != XINA_MARK_ALL) {
		fprintf(stderr, "xina-bench-fastpath: K=%u round %u: no mark for the fan-out\n",
			k, round);
		return -EIO;
	}
	if (out->xh.type != XINA_T_RESULT) {
		fprintf(stderr, "xina-bench-fastpath: K=%u round %u: type %u, not a result\n",
			k, round, out->xh.type);
		return -EIO;
	}
	for (i = 0; i < count; i++) {
		want = word_of(dtype, k, 1, i);
		if (ntohl(out->v[i]) != want) {
			fprintf(stderr, "xina-bench-fastpath: K=%u %s round %u: word %u is 0x%08x, expected 0x%08x\n",
				k, dtype_name(dtype), round, i,
				ntohl(out->v[i]), want);
			return -EIO;
		}
	}
	return 0;
}

/* Ranks 0..k-1 in turn, round after round: k-1 adds and one completion. */
static int bench_k(struct bench *b, unsigned int k, unsigned int count,
		   double timer)
{
	union marked_pkt out;
	unsigned int i, rank;
	char name[16];
	struct pkt p;
	__u32 ret, round;
	size_t len;
	long d;
	int err;

	err = job_setup(b, k);
	if (err)
		return err;
	for (i = 0; i < b->packets; i++) {
		rank = i % k;
		round = i / k;
		len = build_pkt(&p, b->dtype, rank, round, count);
		d = run_one(b->prog_fd, b->ifindex[rank], &p, len, &out, &ret);
		if (d < 0)
			return d;
		b->ns[i] = d;
		if (rank + 1 < k && ret == XDP_DROP)
			continue;
		if (rank + 1 == k && ret == XDP_PASS) {
			err = check_result(&out, b->dtype, k, count, round);
			if (err)
				return err;
			continue;
		}
		fprintf(stderr, "xina-bench-fastpath: K=%u rank %u round %u: unexpected verdict %u\n",
			k, rank, round, ret);
		return -EIO;
	}
	snprintf(name, sizeof(name), "%u", k);
	report(name, b->dtype, count, b->ns, b->packets, timer);
	return 0;
}

static int bench_open(struct bench *b, const char *devfmt)
{
	struct xina_addrs addrs = {};
	char dev[IF_NAMESIZE + 8];
	cpu_set_t set;
	int i, err;

	CPU_ZERO(&set);
	CPU_SET(BENCH_CPU, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		perror("xina-bench-fastpath: pin to CPU 0");
		return -errno;
	}
	for (i = 0; i < 4; i++) {
		snprintf(dev, sizeof(dev), devfmt, i);
		b->ifindex[i] = if_nametoindex(dev);
		if (!b->ifindex[i]) {
			fprintf(stderr, "xina-bench-fastpath: no device '%s' (-d %s) in this namespace: run in the rack's switch namespace\n",
				dev, devfmt);
			return -ENODEV;
		}
	}
	b->ncpus = libbpf_num_possible_cpus();
	if (b->ncpus <= 0)
		return b->ncpus ? b->ncpus : -EINVAL;
	b->skel = xina__open();
	if (!b->skel)
		return -errno;
	b->skel->rodata->nr_cpus = b->ncpus;
	b->skel->rodata->xina_cookie = b_cookie;
	err = xina__load(b->skel);
	if (err) {
		fprintf(stderr, "xina-bench-fastpath: loading the XDP object: %s\n",
			strerror(-err));
		return err;
	}
	/*
	 * The switch's addresses as xinactl writes them (ascending as
	 * numbers), one per port of a routed 4-port switch: 10.77.k.254.
	 */
	for (i = 0; i < 4; i++)
		addrs.addr[addrs.n++] = htonl(0x0a4d00fe | (i << 8));
	if (bpf_map_update_elem(bpf_map__fd(b->skel->maps.xina_addrs),
				&(__u32){ 0 }, &addrs, 0))
		return -errno;
	b->prog_fd = bpf_program__fd(b->skel->progs.xina_xdp);
	b->nop_fd = load_nop();
	if (b->nop_fd < 0)
		return -errno;
	b->parts = calloc(b->ncpus, sizeof(*b->parts));
	b->ns = calloc(b->packets, sizeof(*b->ns));
	return b->parts && b->ns ? 0 : -ENOMEM;
}

static int parse_elems(char *arg, unsigned int *elems)
{
	char *save = NULL, *tok;
	int n = 0;
	long v;

	for (tok = strtok_r(arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		v = strtol(tok, NULL, 10);
		if (v < 1 || v > XINA_MAX_ELEMS || n == MAX_ELEMS_LIST) {
			fprintf(stderr, "xina-bench-fastpath: bad element count '%s' (1..%d, at most %d of them)\n",
				tok, XINA_MAX_ELEMS, MAX_ELEMS_LIST);
			return -1;
		}
		elems[n++] = v;
	}
	return n;
}

/* -T: a list of element type names; returns how many, or -1. */
static int parse_dtypes(char *arg, __u8 *dt)
{
	char *save = NULL, *tok;
	unsigned int i;
	int n = 0;

	for (tok = strtok_r(arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
			if (!strcmp(tok, dtypes[i].name))
				break;
		if (i == sizeof(dtypes) / sizeof(dtypes[0]) || n == MAX_DTYPES) {
			fprintf(stderr, "xina-bench-fastpath: bad element type '%s' (int8, int16, int32, int64, at most %d of them)\n",
				tok, MAX_DTYPES);
			return -1;
		}
		dt[n++] = dtypes[i].dtype;
	}
	return n;
}

int main(int argc, char **argv)
{
	unsigned int elems[MAX_ELEMS_LIST] = { 64, 256, 358 };
	__u8 dt[MAX_DTYPES] = { XINA_DTYPE_INT32 };
	struct bench b = { .packets = 20000 };
	int nelems = 3, ndt = 1, i, d, c, err;
	const char *devfmt = "p%d";
	double timer;

	while ((c = getopt(argc, argv, "n:e:d:T:")) != -1) {
		switch (c) {
		case 'n':
			b.packets = strtoul(optarg, NULL, 10);
			if (b.packets < 100) {
				fprintf(stderr, "xina-bench-fastpath: bad -n '%s' (at least 100)\n",
					optarg);
				return 2;
			}
			break;
		case 'e':
			nelems = parse_elems(optarg, elems);
			if (nelems < 0)
				return 2;
			break;
		case 'd':
			devfmt = optarg;
			break;
		case 'T':
			ndt = parse_dtypes(optarg, dt);
			if (ndt < 0)
				return 2;
			break;
		default:
			fprintf(stderr, "usage: xina-bench-fastpath [-n PACKETS] [-e WORDS[,WORDS...]] [-d DEVFMT] [-T DTYPE[,DTYPE...]]\n");
			return 2;
		}
	}
	for (d = 0; d < ndt; d++) {
		for (i = 0; i < nelems; i++) {
			if (dt[d] == XINA_DTYPE_INT64 && elems[i] & 1) {
				fprintf(stderr, "xina-bench-fastpath: int64 takes an even number of words, not %u\n",
					elems[i]);
				return 2;
			}
		}
	}
	err = bench_open(&b, devfmt);
	if (err)
		goto out;
	err = bench_timer(&b, &timer);
	for (d = 0; d < ndt && !err; d++) {
		b.dtype = dt[d];
		for (i = 0; i < nelems && !err; i++) {
			err = bench_kinf(&b, elems[i], timer);
			if (!err)
				err = bench_k(&b, 4, elems[i], timer);
			if (!err)
				err = bench_k(&b, 1, elems[i], timer);
		}
	}
out:
	if (err)
		fprintf(stderr, "xina-bench-fastpath: %s\n", strerror(-err));
	xina__destroy(b.skel);
	free(b.parts);
	free(b.ns);
	return err ? 1 : 0;
}
