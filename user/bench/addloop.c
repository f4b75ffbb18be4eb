// SPDX-License-Identifier: GPL-2.0
/*
 * xina-bench-addloop: the ceiling for the fast path's adds.  The same work
 * as one contribution at K = infinity -- read COUNT big-endian int32 from a
 * packet, add them into a slot's partial with wrapping arithmetic -- in a
 * plain C loop, compiled with the tree's CFLAGS (-O2: the compiler may
 * vectorise, which is exactly what BPF cannot do).
 *
 *   xina-bench-addloop [-a] [-n PACKETS] [-e ELEMS[,ELEMS...]] [-r REPEATS]
 *
 * -a: the whole of the fast path's work on a contribution's elements, not
 * just the adds: each packet's tag is verified first (NH of the payload
 * as it is on the wire, then SipHash-2-4 of a header and the NH, the
 * functions of bpf/xina_auth.h) and only a packet whose tag matches is
 * added, in a second pass over it -- the order the fast path keeps, so
 * that a forged packet never reaches slot memory.  Reported as
 * "<name>_auth".  The fast path's other per-packet work (parsing, the
 * job, member and slot lookups, the claim) is not in it.
 *
 * Packets come from a ring of 64 payloads (like the rack, where each
 * packet is a new buffer, but all in cache: BPF_PROG_TEST_RUN copies the
 * packet just before the run, so its data is in cache too).  A compiler
 * barrier between packets keeps it from merging packets into one loop.
 * The final partial is checked.  One JSON line per element count: the
 * median over REPEATS of ns per packet.  Each repeat times chunks of CHUNK
 * packets and takes the median chunk: a chunk in which the thread was
 * preempted (the machine is shared) does not count, as in the fast path's
 * BPF_PROG_TEST_RUN, whose time is taken with preemption off.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/xina.h>

#include "bench_util.h"
#include "xina_auth.h"

#ifndef ADDLOOP_NAME
#define ADDLOOP_NAME	"addloop"	/* -DADDLOOP_NAME for the SIMD build */
#endif
#define RING		64
#define MAX_ELEMS	2048	/* an MTU 9000 frame holds 2048 int32 */
#define MAX_LIST	8
#define MAX_REPEATS	64
#define CHUNK		256	/* packets per timed chunk */

static uint32_t ring[RING][MAX_ELEMS];	/* network order */
static int32_t part[MAX_ELEMS];

/* -a: the member's keys, one header, and each ring payload's tag */
static int auth;
static __u32 nh_key[XINA_MAX_ELEMS];
static __u64 mbr_key[2];
static __u64 hdr[XINA_AUTH_HDR_WORDS];
static __u64 tags[RING];
static unsigned long forged;	/* packets whose tag did not match */

static void add_packet(int32_t *p, const uint32_t *src, unsigned int count)
{
	unsigned int i;

	for (i = 0; i < count; i++)
		p[i] = (int32_t)((uint32_t)p[i] + ntohl(src[i]));
}

/* The packet's tag, from its payload as it is on the wire. */
static __u64 tag_of(const uint32_t *src, unsigned int count)
{
	return xina_tag_hdr(mbr_key, hdr, xina_nh_net(nh_key, src, count));
}

/* -a: verify packet @n's tag, then add it; a mismatch is counted, not added. */
static void auth_add_packet(int32_t *p, unsigned long n, unsigned int count)
{
	const uint32_t *src = ring[n % RING];

	if (tag_of(src, count) != tags[n % RING]) {
		forged++;
		return;
	}
	add_packet(p, src, count);
}

/* ns per packet: the median over chunks of CHUNK packets (@chunk_ns holds
 * one value per chunk). */
static double run(unsigned int count, unsigned long packets, double *chunk_ns)
{
	unsigned long n, end, c = 0;
	double t0;

	memset(part, 0, sizeof(part));
	for (n = 0; auth && n < RING; n++)
		tags[n] = tag_of(ring[n], count);
	for (n = 0; n < packets; n = end) {
		end = n + CHUNK < packets ? n + CHUNK : packets;
		t0 = mono_s();
		for (; n < end; n++) {
			if (auth)
				auth_add_packet(part, n, count);
			else
				add_packet(part, ring[n % RING], count);
			/* each packet is its own pass over the partial */
			asm volatile("" ::: "memory");
		}
		chunk_ns[c++] = (mono_s() - t0) * 1e9 / CHUNK;
	}
	/* the last chunk may be short: leave it out unless it is the only one */
	return quantile(chunk_ns, c > 1 && packets % CHUNK ? c - 1 : c, 0.5);
}

static int check(unsigned int count, unsigned long packets)
{
	unsigned int i;
	unsigned long n;
	uint32_t want;

	if (forged) {
		fprintf(stderr, "xina-bench-addloop: %lu packets failed their tag check\n",
			forged);
		return -1;
	}
	for (i = 0; i < count; i++) {
		want = 0;
		for (n = 0; n < RING; n++)
			want += ntohl(ring[n][i]) * (uint32_t)(packets / RING + (n < packets % RING));
		if ((uint32_t)part[i] != want) {
			fprintf(stderr, "xina-bench-addloop: element %u is %d, expected %d\n",
				i, part[i], (int32_t)want);
			return -1;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	unsigned int elems[MAX_LIST] = { 64, 256, 358 }, nelems = 3, reps = 7;
	unsigned long packets = 2000000;
	double ns[MAX_REPEATS], med, *chunk_ns;
	unsigned int i, j, r;
	char *tok, *save = NULL;
	cpu_set_t set;
	int c;

	while ((c = getopt(argc, argv, "an:e:r:")) != -1) {
		switch (c) {
		case 'a':
			auth = 1;
			break;
		case 'n':
			packets = strtoul(optarg, NULL, 10);
			break;
		case 'r':
			reps = strtoul(optarg, NULL, 10);
			break;
		case 'e':
			nelems = 0;
			for (tok = strtok_r(optarg, ",", &save); tok;
			     tok = strtok_r(NULL, ",", &save)) {
				long v = strtol(tok, NULL, 10);

				if (v < 1 || v > MAX_ELEMS || nelems == MAX_LIST) {
					fprintf(stderr, "xina-bench-addloop: bad element count '%s' (1..%d)\n",
						tok, MAX_ELEMS);
					return 2;
				}
				elems[nelems++] = v;
			}
			break;
		default:
			fprintf(stderr, "usage: xina-bench-addloop [-a] [-n PACKETS] [-e ELEMS[,...]] [-r REPEATS]\n");
			return 2;
		}
	}
	if (packets < CHUNK || reps < 1 || reps > MAX_REPEATS) {
		fprintf(stderr, "xina-bench-addloop: need -n >= %d and -r 1..%d\n",
			CHUNK, MAX_REPEATS);
		return 2;
	}
	chunk_ns = calloc(packets / CHUNK + 1, sizeof(*chunk_ns));
	if (!chunk_ns) {
		fprintf(stderr, "xina-bench-addloop: out of memory\n");
		return 1;
	}
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof(set), &set);
	for (i = 0; i < RING; i++)
		for (j = 0; j < MAX_ELEMS; j++)
			ring[i][j] = htonl(i * 7919 + j * 3 + 1);
	if (auth) {
		static const __u8 secret[XINA_SECRET_BYTES] = "xina-addloop-key";

		xina_derive_nh(secret, 1, nh_key, XINA_MAX_ELEMS);
		xina_derive_key(secret, XINA_LABEL_MEMBER, 1, 0, mbr_key);
		for (i = 0; i < XINA_AUTH_HDR_WORDS; i++)
			hdr[i] = 0x0123456789abcdefULL * (i + 1);
	}

	for (i = 0; i < nelems; i++) {
		for (r = 0; r < reps; r++)
			ns[r] = run(elems[i], packets, chunk_ns);
		if (check(elems[i], packets)) {
			free(chunk_ns);
			return 1;
		}
		med = quantile(ns, reps, 0.5);
		printf("{\"bench\":\"%s\",\"elems\":%u,\"packets\":%lu,\"repeats\":%u,"
		       "\"ns_median\":%.2f,\"ns_min\":%.2f,\"ns_max\":%.2f}\n",
		       auth ? ADDLOOP_NAME "_auth" : ADDLOOP_NAME, elems[i], packets,
		       reps, med, ns[0], ns[reps - 1]);
	}
	free(chunk_ns);
	return 0;
}
