// SPDX-License-Identifier: GPL-2.0
/*
 * ns per packet of the XDP fast path (map backend), through
 * BPF_PROG_TEST_RUN on one CPU.  Measures, does not assert.
 *
 *   xina_fastpath_bench [packets]
 *
 * Cases (one line each, "case elems ns/pkt"):
 *   pass       a UDP datagram to another port (parse, XDP_PASS)
 *   dup        a duplicate of a pending round (parse, checks, lock)
 *   add        K = infinity: contributions of 255 of 256 workers, so no
 *              round completes: parse, checks, claim, add into the partial
 *   round4     K = 4: whole rounds, completion (fold, result) included
 *
 * Each rank sends from its own port (a veth in a private netns),
 * as in a rack with one worker per switch port, so that the port->rank
 * map the fast path keeps for the egress program stays unchanged.
 *
 * pass and dup run with repeat (the kernel's loop, no per-run overhead);
 * add and round4 change the packet every run, so each is one test_run and
 * its duration is what the kernel measured around that run (its timer
 * reads included): "pass1" is the pass case measured the same way, for
 * comparison.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xina_maps.h"
#include "bpf/xina.skel.h"

#define HDRS		(14 + 20 + 8 + (int)sizeof(struct xina_hdr))
#define FRAME_MAX	(HDRS + 4 * XINA_MAX_ELEMS)
#define VERSIONS	2048
#define JOB_ID		1

struct bench {
	struct xina *skel;
	int prog;
	int ifindex[XINA_MAX_WORKERS];	/* port of each rank */
	__u16 rank;			/* of the frame */
	__u8 frame[FRAME_MAX];
	size_t len;
};

static void frame_set(struct bench *b, __u16 rank, __u32 slot, __u32 round,
		      __u16 count, __u16 dport)
{
	struct ethhdr *eth = (void *)b->frame;
	struct iphdr *iph = (void *)(eth + 1);
	struct udphdr *udp = (void *)(iph + 1);
	struct xina_hdr *xh = (void *)(udp + 1);
	__be32 *v = (void *)(xh + 1);
	unsigned int i;

	b->rank = rank;
	b->len = HDRS + 4 * count;
	memset(b->frame, 0, HDRS);
	eth->h_proto = htons(ETH_P_IP);
	iph->version = 4;
	iph->ihl = 5;
	iph->protocol = IPPROTO_UDP;
	iph->tot_len = htons(b->len - sizeof(*eth));
	iph->saddr = htonl(0x0a000001 + rank);
	iph->daddr = htonl(0x0a0000fe);
	udp->dest = htons(dport);
	udp->len = htons(b->len - sizeof(*eth) - sizeof(*iph));
	xh->version = XINA_WIRE_VERSION;
	xh->type = XINA_T_CONTRIB;
	xh->dtype = XINA_DTYPE_INT32;
	xh->op = XINA_OP_SUM;
	xh->count = htons(count);
	xh->job = htonl(JOB_ID);
	xh->rank = htons(rank);
	xh->slot = htonl(slot);
	xh->round = htonl(round);
	for (i = 0; i < count; i++)
		v[i] = htonl(i * 7 - rank);
}

/* One test_run; returns the kernel's mean ns per run, or -1. */
static double run(struct bench *b, __u32 repeat, __u32 *retval)
{
	struct xdp_md md = {
		.data_end = b->len,
		.ingress_ifindex = b->ifindex[b->rank],
	};
	LIBBPF_OPTS(bpf_test_run_opts, o,
		.data_in = b->frame,
		.data_size_in = b->len,
		.ctx_in = &md,
		.ctx_size_in = sizeof(md),
		.repeat = repeat,
	);

	if (bpf_prog_test_run_opts(b->prog, &o))
		return -1;
	if (retval)
		*retval = o.retval;
	return o.duration;
}

static int job_set(struct bench *b, unsigned int workers, unsigned int elems)
{
	struct xina_job job = {
		.id = JOB_ID, .slots = VERSIONS / 2,
		.workers = workers, .elems = elems,
	};
	struct xina_member m = {};
	struct xina_member_key k;
	__u32 id = JOB_ID, idx;
	unsigned int r;

	if (bpf_map_update_elem(bpf_map__fd(b->skel->maps.xina_jobs), &id,
				&job, BPF_ANY))
		return -1;
	for (r = 0; r < workers; r++) {
		k = (struct xina_member_key){ .job = JOB_ID, .rank = r };
		m.addr = htonl(0x0a000001 + r);
		if (bpf_map_update_elem(bpf_map__fd(b->skel->maps.xina_members),
					&k, &m, BPF_ANY))
			return -1;
	}
	/* a fresh job starts from zeroed slot memory, as xinactl does */
	for (idx = 0; idx < VERSIONS; idx++) {
		struct xina_meta meta = {};

		if (bpf_map_update_elem(bpf_map__fd(b->skel->maps.xina_meta),
					&idx, &meta, BPF_ANY))
			return -1;
	}
	return 0;
}

static double bench_pass(struct bench *b, __u32 n, __u16 count)
{
	frame_set(b, 0, 0, 0, count, XINA_UDP_PORT + 1);
	return run(b, n, NULL);
}

static double bench_pass1(struct bench *b, __u32 n, __u16 count)
{
	double sum = 0;
	__u32 i;

	frame_set(b, 0, 0, 0, count, XINA_UDP_PORT + 1);
	for (i = 0; i < n; i++)
		sum += run(b, 1, NULL);
	return sum / n;
}

static double bench_dup(struct bench *b, __u32 n, __u16 count)
{
	__u32 ret;

	if (job_set(b, 2, count))
		return -1;
	frame_set(b, 0, 0, 0, count, XINA_UDP_PORT);
	if (run(b, 1, &ret) < 0 || ret != XDP_DROP)
		return -1;
	return run(b, n, NULL);
}

/* Contributions from ranks 0..workers-2 of @workers, slot after slot. */
static double bench_rounds(struct bench *b, __u32 n, __u16 count,
			   unsigned int workers, unsigned int senders)
{
	__u32 i, slot = 0, round = 0, rank = 0, ret;
	double sum = 0, d;

	if (job_set(b, workers, count))
		return -1;
	for (i = 0; i < n; i++) {
		frame_set(b, rank, slot, round, count, XINA_UDP_PORT);
		d = run(b, 1, &ret);
		if (d < 0 || (ret != XDP_DROP && ret != XDP_REDIRECT))
			return -1;
		sum += d;
		if (++rank < senders)
			continue;
		rank = 0;
		if (++slot < VERSIONS / 2)
			continue;
		slot = 0;
		round++;
		if (senders < workers)	/* versions never complete: reset */
			if (job_set(b, workers, count))
				return -1;
	}
	return sum / n;
}

static double bench_add(struct bench *b, __u32 n, __u16 count)
{
	return bench_rounds(b, n, count, XINA_MAX_WORKERS,
			    XINA_MAX_WORKERS - 1);
}

static double bench_round4(struct bench *b, __u32 n, __u16 count)
{
	return bench_rounds(b, n, count, 4, 4);
}

/* One veth per rank, in a network namespace of our own. */
static int ports_make(struct bench *b)
{
	char name[IF_NAMESIZE];
	FILE *f;
	int i;

	if (unshare(CLONE_NEWNET))
		return -1;
	f = popen("ip -batch -", "w");
	if (!f)
		return -1;
	for (i = 0; i < XINA_MAX_WORKERS; i++)
		fprintf(f, "link add xb%d type veth peer name xbp%d\n", i, i);
	if (pclose(f))
		return -1;
	for (i = 0; i < XINA_MAX_WORKERS; i++) {
		snprintf(name, sizeof(name), "xb%d", i);
		b->ifindex[i] = if_nametoindex(name);
		if (!b->ifindex[i])
			return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		double (*fn)(struct bench *b, __u32 n, __u16 count);
	} cases[] = {
		{ "pass", bench_pass }, { "pass1", bench_pass1 },
		{ "dup", bench_dup }, { "add", bench_add },
		{ "round4", bench_round4 },
	};
	/* 358: what a 1500-byte MTU carries; 859: the most that fits one
	 * XDP buffer (a 4 KiB page less headroom and skb_shared_info). */
	static const __u16 counts[] = { 64, 256, 358, 859 };
	__u32 n = argc > 1 ? strtoul(argv[1], NULL, 0) : 100000;
	struct bench b = {};
	unsigned int c, k;
	cpu_set_t set;
	double ns;

	if (geteuid()) {
		fprintf(stderr, "xina_fastpath_bench: needs root\n");
		return 4;
	}
	if (ports_make(&b)) {
		fprintf(stderr, "xina_fastpath_bench: no netns with veth ports: %s\n",
			strerror(errno));
		return 4;
	}
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);

	b.skel = xina__open();
	if (!b.skel)
		return 1;
	b.skel->rodata->nr_cpus = libbpf_num_possible_cpus();
	bpf_map__set_max_entries(b.skel->maps.xina_meta, VERSIONS);
	bpf_map__set_max_entries(b.skel->maps.xina_vals, VERSIONS);
	if (xina__load(b.skel)) {
		fprintf(stderr, "xina_fastpath_bench: load: %s\n",
			strerror(errno));
		return 1;
	}
	b.prog = bpf_program__fd(b.skel->progs.xina_xdp);
	printf("# case elems ns/pkt (%u packets, CPU 0)\n", n);
	for (k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
		for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
			ns = cases[c].fn(&b, n, counts[k]);
			if (ns < 0) {
				fprintf(stderr, "%s %u: failed\n",
					cases[c].name, counts[k]);
				return 1;
			}
			printf("%-7s %4u %8.1f\n", cases[c].name, counts[k], ns);
		}
	}
	xina__destroy(b.skel);
	return 0;
}
