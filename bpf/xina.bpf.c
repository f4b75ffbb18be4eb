// SPDX-License-Identifier: (GPL-2.0-only OR BSD-3-Clause)
/*
 * xina fast path: in-network aggregation on a switch port.
 *
 * xina_xdp runs on every switch port (XDP, multi-buffer: a jumbo frame
 * may come in several buffers).  It parses eth -> IPv4 -> UDP to the xina
 * port -> struct xina_hdr, checks the packet against its job and member,
 * verifies its tag (bpf/xina_auth.h) before anything of the slot is
 * touched, and adds the payload into the slot version named by
 * (slot, round & 1).
 * The contribution that completes a round is turned into the result; a
 * retransmission to a completed version gets the kept result.  A join
 * (the handshake that gives a worker the job's epoch, xina_join()) is
 * answered with its own frame made the reply.  All three leave
 * xina_xdp with XDP_PASS and a struct xina_mark over the frame's first
 * bytes (its Ethernet and IPv4 headers, which the fan-out writes anew), and
 * xina_fanout, on the TC ingress hook of the same port, sends one copy to
 * each member the frame is for, addressed to it, out of the port it is
 * behind (bpf_clone_redirect: the copies share the payload).  The kernel's
 * devmap broadcast cannot do this: it copies at most one page of a frame,
 * and sends one copy per port, not per member.
 *
 * Concurrency.  Contributions to one slot arrive on any CPU.  Each CPU adds
 * into its own partial (xina_vals is per-CPU: plain adds, no atomics); the
 * CPU whose contribution is the last one to be added folds the other CPUs'
 * partials into its own and sends the result.  Shared per-version state
 * (struct xina_meta) is changed under meta->lock, except meta->done, which
 * counts the contributions already added into a partial of the version's
 * current opening: bumped with a compare-and-swap after the add, and only
 * if the version was not opened afresh since the add's claim (xina_done()).
 * The CPU that brings it to the number of workers knows that every partial
 * of the round is final.  A partial's epoch and round
 * are published before its values (a fully ordered exchange), so that the
 * answer to a retransmission, copied without the lock, can tell a torn
 * copy (xina_answer()).
 *
 * Slot memory is reached only through xina_meta_of(), xina_part_mine()
 * and xina_part_of(): the module backend (slot memory in xina.ko, reached
 * through kfuncs) replaces these three and keeps the rest.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "xina_maps.h"
#include "xina_lanes.h"

#define IP_DF		0x4000	/* do not fragment */
#define IP_MF		0x2000	/* more fragments */
#define IP_OFFSET	0x1fff	/* fragment offset, in 8-byte units */

/*
 * Offsets in a frame xina_parse() accepts (an IPv4 header without
 * options): of the xina header, and of the elements after it.
 */
#define XINA_HDR_OFF		(sizeof(struct ethhdr) + sizeof(struct iphdr) + \
				 sizeof(struct udphdr))
#define XINA_PAYLOAD_OFF	(XINA_HDR_OFF + sizeof(struct xina_hdr))

/* Load-time knobs, set through the skeleton before load. */
const volatile __u16 xina_port = XINA_UDP_PORT;	/* host order */
const volatile __u32 nr_cpus = XINA_MAX_CPUS;	/* possible CPUs */
const volatile __u64 xina_cookie;	/* struct xina_mark; xinactl's, random */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XINA_JOB_BUCKETS);
	__type(key, __u32);
	__type(value, struct xina_job);
} xina_jobs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XINA_MAX_JOBS * XINA_MAX_WORKERS);
	__type(key, __u32);
	__type(value, struct xina_member);
} xina_members SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XINA_MAX_JOBS);
	__type(key, __u32);
	__type(value, struct xina_nhkey);
} xina_nhkeys SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XINA_MAX_JOBS);
	__type(key, __u32);
	__type(value, struct xina_epoch);
} xina_epochs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XINA_MAX_JOBS * XINA_MAX_WORKERS);
	__type(key, __u32);
	__type(value, struct xina_join_mbr);
} xina_joins SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XINA_MAX_JOBS);
	__type(key, __u32);
	__type(value, __u64);
} xina_active SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XINA_SLOT_VERSIONS);
	__type(key, __u32);
	__type(value, struct xina_meta);
} xina_meta SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XINA_SLOT_VERSIONS);
	__type(key, __u32);
	__type(value, struct xina_part);
} xina_vals SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xina_scratch);
} xina_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XINA_MAX_JOBS + 1);
	__type(key, __u32);
	__type(value, struct xina_counters);
} xina_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XINA_MAX_JOBS);
	__type(key, __u32);
	__type(value, struct xina_up);
} xina_ups SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XINA_MAX_JOBS);
	__type(key, __u32);
	__type(value, struct xina_nhkey);
} xina_upnh SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, XINA_JOB_BUCKETS);
	__type(key, __u32);
	__type(value, struct xina_upjob);
} xina_upjobs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XINA_MAX_JOBS);
	__type(key, __u32);
	__type(value, struct xina_up_counters);
} xina_upstats SEC(".maps");

/* ---- parsing ------------------------------------------------------------ */

struct cursor {
	void *pos;
	void *end;
};

/* Returns the ethertype (network order), or -1 if truncated. */
static __always_inline int parse_ethhdr(struct cursor *c, struct ethhdr **eth)
{
	struct ethhdr *h = c->pos;

	if ((void *)(h + 1) > c->end)
		return -1;
	c->pos = h + 1;
	*eth = h;
	return h->h_proto;
}

/*
 * Returns the IP protocol, or -1 for what the fast path leaves to the
 * stack: truncated headers, options (the wire format has none), fragments.
 */
static __always_inline int parse_iphdr(struct cursor *c, struct iphdr **iph)
{
	struct iphdr *h = c->pos;

	if ((void *)(h + 1) > c->end)
		return -1;
	if (h->version != 4 || h->ihl != 5)
		return -1;
	if (h->frag_off & bpf_htons(IP_MF | IP_OFFSET))
		return -1;
	c->pos = h + 1;
	*iph = h;
	return h->protocol;
}

/* Returns the destination port (host order), or -1 if truncated. */
static __always_inline int parse_udphdr(struct cursor *c, struct udphdr **udp)
{
	struct udphdr *h = c->pos;

	if ((void *)(h + 1) > c->end)
		return -1;
	c->pos = h + 1;
	*udp = h;
	return bpf_ntohs(h->dest);
}

struct xina_pkt {
	struct ethhdr *eth;
	struct iphdr *iph;
	struct udphdr *udp;
	struct xina_hdr *xh;
	__u32 count;		/* elements, host order */
	__u32 lin;		/* of them, in the frame's first buffer */
	__u32 off;		/* the elements' offset in the frame */
	__u8 zero;		/* XINA_F_ZERO: count words, none in the frame */
	__u8 train;		/* a datagram of a train (xina_train_one()) */
};

enum xina_class {
	XINA_NOT_OURS,		/* not xina: leave it to the stack */
	XINA_MALFORMED,		/* to the xina port, but not a valid packet */
	XINA_TRAIN,		/* several datagrams in one frame: see xina_train() */
	XINA_WELL_FORMED,
};

/*
 * bpf_ntohs() whose result the verifier knows to be below 2^16: the 6.1
 * verifier forgets all bounds of a byte swap, and then refuses to add the
 * value to a packet pointer.  The mask is in asm so that clang, which does
 * know the bound, cannot drop it.
 */
static __always_inline __u32 ntohs_bounded(__be16 v)
{
	__u64 x = bpf_ntohs(v);

	asm volatile("%[x] &= 0xffff" : [x] "+r"(x));
	return x;
}

/*
 * A join (include/uapi/linux/xina.h, "Join handshake"): a bare header, no
 * elements; the fields a join does not use are 0.
 */
static __always_inline int xina_check_join(struct xina_pkt *pkt)
{
	struct xina_hdr *xh = pkt->xh;

	/* epoch: the run the worker names (any value) */
	if (xh->count || xh->op || xh->flags || xh->exp || xh->round)
		return XINA_MALFORMED;
	if (ntohs_bounded(pkt->udp->len) !=
	    sizeof(struct udphdr) + sizeof(*xh))
		return XINA_MALFORMED;
	if (sizeof(struct udphdr) + sizeof(*xh) + sizeof(struct iphdr) >
	    ntohs_bounded(pkt->iph->tot_len))
		return XINA_MALFORMED;
	pkt->count = 0;
	pkt->lin = 0;
	return XINA_WELL_FORMED;
}

/*
 * A join's reply (from an upper switch, to a job's uplink): a bare header
 * as the join; round is the status, epoch the epoch granted.
 */
static __always_inline int xina_check_join_reply(struct xina_pkt *pkt)
{
	struct xina_hdr *xh = pkt->xh;

	/* flags: what the upper switch takes (this switch sends no ZERO) */
	if (xh->count || xh->op || (xh->flags & ~XINA_F_ZERO) || xh->exp)
		return XINA_MALFORMED;
	if (ntohs_bounded(pkt->udp->len) !=
	    sizeof(struct udphdr) + sizeof(*xh))
		return XINA_MALFORMED;
	if (sizeof(struct udphdr) + sizeof(*xh) + sizeof(struct iphdr) >
	    ntohs_bounded(pkt->iph->tot_len))
		return XINA_MALFORMED;
	pkt->count = 0;
	pkt->lin = 0;
	return XINA_WELL_FORMED;
}

/*
 * The element count of a contribution's or a result's header whose fields
 * this switch understands (a ZERO one a first transmission's
 * contribution), 0 if any is not.  The count is in 32-bit words for every
 * dtype (checked per job).
 */
static __always_inline __u32 xina_hdr_count(const struct xina_hdr *xh)
{
	__u32 count;

	if (xh->version != XINA_WIRE_VERSION || xh->weight ||
	    (xh->type != XINA_T_CONTRIB && xh->type != XINA_T_RESULT) ||
	    (xh->flags & ~XINA_F_ALL))
		return 0;
	if ((xh->flags & XINA_F_ZERO) &&
	    (xh->type != XINA_T_CONTRIB || (xh->flags & XINA_F_RETRANS)))
		return 0;
	count = ntohs_bounded(xh->count);
	return count <= XINA_MAX_ELEMS ? count : 0;
}

/* The length of the datagram @xh heads: a ZERO one's words are not in it. */
static __always_inline __u32 xina_dgram_len(const struct xina_hdr *xh,
					    __u32 count)
{
	return sizeof(*xh) + (xh->flags & XINA_F_ZERO ? 0 : count * 4);
}

/*
 * A frame whose UDP payload holds more than the datagram its xina header
 * describes, and another xina header of the same job right after it: a
 * worker's GSO train (UDP_SEGMENT), which a port in generic XDP mode takes
 * whole (veth keeps GSO towards a peer without native XDP; no NIC hands a
 * driver's XDP such a frame).  xina_train_run() takes it.  @one is the
 * first datagram's UDP length.
 */
static __always_inline int xina_train(struct xdp_md *ctx,
				      const struct xina_pkt *pkt, __u32 one,
				      __u32 ulen)
{
	/* the next header's first 12 bytes: version, type, ..., job */
	struct {
		__u8	version;
		__u8	type;
		__u8	more[6];
		__be32	job;
	} next;

	_Static_assert(__builtin_offsetof(struct xina_hdr, job) == 8,
		       "the job follows 8 bytes of the header");
	if (ulen <= one ||
	    ulen - one < sizeof(struct xina_hdr) ||
	    ulen + sizeof(struct iphdr) != ntohs_bounded(pkt->iph->tot_len) ||
	    bpf_xdp_load_bytes(ctx, sizeof(struct ethhdr) +
			       sizeof(struct iphdr) + one, &next,
			       sizeof(next)))
		return XINA_MALFORMED;
	if (next.version != pkt->xh->version || next.type != pkt->xh->type ||
	    next.job != pkt->xh->job)
		return XINA_MALFORMED;
	return XINA_TRAIN;
}

/*
 * Everything the packet says about itself, before any job is looked up:
 * headers complete, lengths consistent, fields this switch understands.
 * The headers must be in the first buffer of the frame; the elements may
 * run on into the others.  Workers send contributions and joins; an
 * upper switch sends results and join replies to the uplink of a job that
 * hands up (xina_up_rx() drops them as malformed for any other job);
 * anything else is malformed.
 */
static __always_inline int xina_check_hdr(struct xdp_md *ctx,
					  struct xina_pkt *pkt, void *end)
{
	struct xina_hdr *xh = pkt->xh;
	__u32 ulen, count, room, one;

	if ((void *)(xh + 1) > end)
		return XINA_MALFORMED;
	if (xh->version != XINA_WIRE_VERSION || xh->weight)
		return XINA_MALFORMED;
	if (xh->type == XINA_T_JOIN)
		return xina_check_join(pkt);
	if (xh->type == XINA_T_JOIN_REPLY)
		return xina_check_join_reply(pkt);
	/* aux: any value (a contribution's side word, a result's MAX) */
	count = xina_hdr_count(xh);
	if (!count)
		return XINA_MALFORMED;
	ulen = ntohs_bounded(pkt->udp->len);
	one = sizeof(struct udphdr) + xina_dgram_len(xh, count);
	pkt->off = XINA_PAYLOAD_OFF;
	if (ulen != one)
		return xina_train(ctx, pkt, one, ulen);
	if (ulen + sizeof(struct iphdr) != ntohs_bounded(pkt->iph->tot_len))
		return XINA_MALFORMED;
	if (xh->flags & XINA_F_ZERO) {
		/* a contribution of count zero words, none in the frame */
		pkt->count = count;
		pkt->lin = 0;
		pkt->zero = 1;
		return XINA_WELL_FORMED;
	}
	room = (__u32)(end - (void *)(xh + 1)) / 4;
	pkt->count = count;
	pkt->lin = count < room ? count : room;
	/* a frame longer than its first buffer must hold all it claims */
	if (count > room &&
	    XINA_PAYLOAD_OFF + count * 4 > bpf_xdp_get_buff_len(ctx))
		return XINA_MALFORMED;
	return XINA_WELL_FORMED;
}

/*
 * The switch's own IPv4 addresses (struct xina_addrs): "xinactl dev attach"
 * writes those of its network namespace.  Not a per-packet helper such as
 * bpf_fib_lookup(), which answers only where the ingress device forwards
 * (BPF_FIB_LKUP_RET_FWD_DISABLED otherwise, as on a bridge's ports) and
 * costs a route lookup on every packet.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xina_addrs);
} xina_addrs SEC(".maps");

/*
 * Is @daddr the switch's?  A packet to the xina port of another host (a
 * flow routed or bridged through the box) is none of xina's business: the
 * stack forwards it untouched.  No list (n == 0): every address is.  A
 * binary search of the sorted list: a linear scan of 64 addresses was
 * measured at ~1 ns per address.
 */
static __always_inline int xina_to_switch(__be32 daddr)
{
	__u32 zero = 0, lo = 0, hi, mid, v, i;
	struct xina_addrs *a;

	a = bpf_map_lookup_elem(&xina_addrs, &zero);
	if (!a || !a->n)
		return 1;
	hi = a->n < XINA_MAX_ADDRS ? a->n : XINA_MAX_ADDRS;
	for (i = 0; i <= XINA_ADDRS_LOG2; i++) {
		if (lo >= hi)
			break;
		mid = (lo + hi) / 2;
		v = a->addr[mid & (XINA_MAX_ADDRS - 1)];
		if (v == daddr)
			return 1;
		if (v < (__u32)daddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/*
 * A contribution or a join to the switch, or a result or join reply from
 * an upper switch (pkt->xh->type tells which).
 */
static __always_inline int xina_parse(struct xdp_md *ctx, struct xina_pkt *pkt)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct cursor c = { .pos = data, .end = data_end };

	__u32 len, want;

	if (parse_ethhdr(&c, &pkt->eth) != bpf_htons(ETH_P_IP))
		return XINA_NOT_OURS;
	if (parse_iphdr(&c, &pkt->iph) != IPPROTO_UDP)
		return XINA_NOT_OURS;
	if (parse_udphdr(&c, &pkt->udp) != xina_port)
		return XINA_NOT_OURS;
	if (!xina_to_switch(pkt->iph->daddr))
		return XINA_NOT_OURS;
	/*
	 * Bytes after the IP datagram (Ethernet padding, a trailer) are cut
	 * off before anything reads the packet: what is kept and sent on
	 * (results, partials, answers) is sized by the frame, and would carry
	 * them.  The headers are read again: the cut moved the packet.
	 */
	want = sizeof(struct ethhdr) + ntohs_bounded(pkt->iph->tot_len);
	len = bpf_xdp_get_buff_len(ctx);
	if (len > want) {
		if (bpf_xdp_adjust_tail(ctx, (int)want - (int)len))
			return XINA_MALFORMED;
		data_end = (void *)(long)ctx->data_end;
		c.pos = (void *)(long)ctx->data;
		c.end = data_end;
		if (parse_ethhdr(&c, &pkt->eth) != bpf_htons(ETH_P_IP) ||
		    parse_iphdr(&c, &pkt->iph) != IPPROTO_UDP ||
		    parse_udphdr(&c, &pkt->udp) != xina_port)
			return XINA_MALFORMED;
	}
	pkt->xh = c.pos;
	return xina_check_hdr(ctx, pkt, data_end);
}

static __always_inline void ip_csum_set(struct iphdr *iph)
{
	__u16 *w = (__u16 *)iph;
	__u32 sum = 0;
	int i;

	iph->check = 0;
#pragma unroll
	for (i = 0; i < (int)sizeof(*iph) / 2; i++)
		sum += w[i];
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	iph->check = ~sum & 0xffff;
}

static __always_inline int mac_equal(const __u8 *a, const __u8 *b)
{
	return !((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) |
		 (a[3] ^ b[3]) | (a[4] ^ b[4]) | (a[5] ^ b[5]));
}

/*
 * Make the frame a bare xina header, as a join and its reply are: cut
 * whatever follows the header (Ethernet padding, bytes the IPv4 length
 * covers beyond the datagram, further buffers), so that a reply is never
 * longer than the join it answers, and set the IPv4 and UDP lengths to
 * match (no UDP checksum).  Packet pointers are void afterwards: the header
 * is returned anew, or NULL.
 */
static __always_inline struct xina_hdr *xina_bare(struct xdp_md *ctx)
{
	int extra = (int)bpf_xdp_get_buff_len(ctx) - (int)XINA_PAYLOAD_OFF;
	struct xina_hdr *xh;
	struct udphdr *udp;
	struct iphdr *iph;
	void *data, *end;

	if (extra > 0 && bpf_xdp_adjust_tail(ctx, -extra))
		return NULL;
	data = (void *)(long)ctx->data;
	end = (void *)(long)ctx->data_end;
	iph = data + sizeof(struct ethhdr);
	udp = (void *)(iph + 1);
	xh = (void *)(udp + 1);
	if ((void *)(xh + 1) > end)
		return NULL;
	iph->tot_len = bpf_htons(sizeof(*iph) + sizeof(*udp) + sizeof(*xh));
	ip_csum_set(iph);
	udp->len = bpf_htons(sizeof(*udp) + sizeof(*xh));
	udp->check = 0;
	return xh;
}

/*
 * Send the frame, already made the reply, back to whoever sent it, out of
 * the port it came in on: MACs, IPv4 addresses and UDP ports swapped, a
 * fresh TTL, the IPv4 checksum recomputed, no UDP checksum.  Only for the
 * one answer the switch gives a sender it cannot authenticate
 * (XINA_JOIN_BAD_KEY to a member never seen, Documentation/security.md).
 */
static __always_inline int xina_bounce(struct xdp_md *ctx)
{
	void *end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct ethhdr *eth = data;
	struct iphdr *iph = (void *)(eth + 1);
	struct udphdr *udp = (void *)(iph + 1);
	__u8 mac[ETH_ALEN];
	__be32 addr;
	__be16 port;

	if ((void *)(udp + 1) > end)
		return XDP_DROP;
	__builtin_memcpy(mac, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, mac, ETH_ALEN);
	addr = iph->daddr;
	iph->daddr = iph->saddr;
	iph->saddr = addr;
	iph->ttl = 64;
	ip_csum_set(iph);
	port = udp->dest;
	udp->dest = udp->source;
	udp->source = port;
	udp->check = 0;
	return XDP_TX;
}

/* ---- counters ----------------------------------------------------------- */

/* Per-CPU counters: plain increments. */
static __always_inline void gstat_inc(__u32 stat)
{
	__u32 idx = XINA_MAX_JOBS;
	struct xina_counters *c;

	c = bpf_map_lookup_elem(&xina_stats, &idx);
	if (c && stat < XINA_GSTAT_MAX)
		c->c[stat]++;
}

static __always_inline void stat_inc(struct xina_counters *c, __u32 stat)
{
	if (stat < XINA_STAT_MAX)
		c->c[stat]++;
}

/* ---- slot memory accessors (the part a second backend replaces) -------- */

static __always_inline struct xina_meta *xina_meta_of(__u32 idx)
{
	return bpf_map_lookup_elem(&xina_meta, &idx);
}

static __always_inline struct xina_part *xina_part_mine(__u32 idx)
{
	return bpf_map_lookup_elem(&xina_vals, &idx);
}

static __always_inline struct xina_part *xina_part_of(__u32 idx, __u32 cpu)
{
	return bpf_map_lookup_percpu_elem(&xina_vals, &idx, cpu);
}

/*
 * @v, but clang cannot see through it: indexing part->q with a sum that
 * clang folds into a running pointer loses the bound the verifier just
 * learned from the check on the sum.
 */
static __always_inline __u32 xina_opaque(__u32 v)
{
	asm volatile("" : "+r"(v));
	return v;
}

/* ---- element loops ------------------------------------------------------
 *
 * A contribution's elements are read from the frame once, before its tag
 * is checked: one pass hashes them (NH, for the tag) and stages them in
 * host order in this CPU's xina_scratch (xina_stage_lin(),
 * xina_stage_frags()).  Only after the tag verified and the claim was
 * made are they added into the slot's partial, from the staging buffer
 * (xina_commit()): a packet whose tag does not verify never reaches slot
 * memory, and the buffers of a jumbo frame beyond its first are copied out
 * with bpf_xdp_load_bytes() once, not once for the hash and once for the
 * add.
 *
 * The staging buffer belongs to this CPU as its partials do, and rests on
 * the same assumption: one run of the fast path on a CPU ends before the
 * next one on that CPU begins (XDP runs from NAPI or softirq).
 *
 * Global functions: the verifier checks each once, whatever the caller,
 * instead of walking 2048 iterations at every call site.  The elements in
 * the frame's first buffer are read in place, each block bounds checked
 * against data_end (payload lengths were already validated, so the checks
 * never fail on a packet that got this far); those after its last whole
 * block are copied XINA_CHUNK at a time (xina_lin_of()).
 */

static __always_inline struct xina_scratch *xina_scratch_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&xina_scratch, &zero);
}

/*
 * The element loops run over blocks of XINA_BLK elements with one bounds
 * check per block, then element by element over the tail: the per-element
 * check, loop test and byte swap were measured at 0.8-1.1 ns per element
 * against 0.5-0.7 ns for the same adds in plain C.
 *
 * The loops that hash (the staging of a contribution, the NH of a result)
 * and the copy of a result out of its partial take blocks of XINA_SBLK:
 * their loop overhead (the block's bounds, index and the arguments
 * reloaded from the stack, about 24 instructions) was a quarter of the
 * instructions of a block of 8.  A 2048-int32 packet at K=inf took 5% less
 * time with blocks of 32 (xina-bench-fastpath, alternated runs: 2165 ns
 * against 2285).  The other loops keep XINA_BLK: wider, their unrolled
 * blocks spill registers, and the combined stack of the call chain would
 * pass the verifier's 512 bytes.
 */
#define XINA_BLK	8
#define XINA_SBLK	32

/*
 * Chunk @c of the elements @from..@count-1 beyond the first buffer: its
 * first element in *@i (below XINA_MAX_ELEMS), its length (1..XINA_CHUNK)
 * returned; 0 past the last chunk.  The one form of this computation the
 * 6.1 verifier follows: clang would index with a running pointer (its
 * bound lost) unless the element goes through xina_opaque(); the verifier
 * loses clang's bounds of a min(), and learns no lower bound from a test
 * against 0, so the length is bounded through xina_opaque(n - 1); a
 * caller's test of the result against 0 is then on a path of its own.
 */
static __always_inline __u32 xina_chunk_len(__u32 from, __u32 count, __u32 c,
					    __u32 *i)
{
	__u32 n;

	*i = xina_opaque(from + c * XINA_CHUNK);
	if (*i >= count || *i >= XINA_MAX_ELEMS)
		return 0;
	n = count - *i;
	if (n > XINA_CHUNK)
		n = XINA_CHUNK;
	n = xina_opaque(n - 1);
	if (n >= XINA_CHUNK)
		return 0;
	return n + 1;
}

/*
 * The staging buffer holds a contribution's elements by pairs: pair p is
 * the 64-bit word q[p] = e[2p] << 32 | e[2p + 1] (host order values), the
 * eight payload bytes of the pair read as one big-endian number.  On a
 * little-endian machine that is one 64-bit load and one byte swap per
 * pair, for the hash and the staging both.  A partial holds its values
 * the same way (struct xina_part), so the commit takes each pair as it is.
 */
static __always_inline __u64 xina_pair_of(__u64 raw)
{
	return bpf_be64_to_cpu(raw);
}

/* NH of one staged pair @q with the key words @k[0], @k[1]. */
static __always_inline __u64 xina_nh_q(__u64 q, const __u32 *k)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* both key words in one load: k[0] is the low half */
	__u64 kk = *(const __u64 *)k;

	return xina_nh_pair(q >> 32, q, kk, kk >> 32);
#else
	return xina_nh_pair(q >> 32, q, k[0], k[1]);
#endif
}

/*
 * XINA_BLK elements at @src (network order; may be @dst) staged into
 * @dst (XINA_BLK / 2 pairs), with key words @k: their NH.  The packet is
 * only 2-byte aligned; the 64-bit loads need no alignment on the machines
 * that set CONFIG_HAVE_EFFICIENT_UNALIGNED_ACCESS (x86, arm64), and the
 * verifier only asks for it where that is not set.  The empty asm after
 * each pair keeps clang from hoisting every load of the block first: with
 * BPF's ten registers that spilled half the block to the stack.
 */
static __always_inline __u64 xina_stage_blk(const __u32 *k, const void *src,
					    __u64 *dst)
{
	const __u64 *s2 = src;
	__u64 sum = 0, q;

#pragma unroll
	for (int p = 0; p < XINA_SBLK / 2; p++) {
		q = xina_pair_of(s2[p]);
		dst[p] = q;
		sum += xina_nh_q(q, &k[2 * p]);
		asm volatile("" : "+r"(sum));
	}
	return sum;
}

/*
 * The last @n (1..XINA_SBLK - 1) words of a contribution, copied into @s at
 * element @j (even), still as the frame's bytes: staged in place by pairs
 * (an odd @n's last pair padded with a zero word), and their NH returned
 * (0 on an error, which cannot happen: the tag then fails to verify).  The
 * tail of both xina_stage_lin() and xina_stage_chunk().
 */
__noinline __u64 xina_stage_tail(struct xina_scratch *s,
				 const struct xina_nhkey *nhk, __u32 j,
				 __u32 n)
{
	__u64 sum = 0, q;
	__u32 k, p;

	if (!s || !nhk)
		return 0;
	for (k = 0; k < XINA_SBLK; k += 2) {
		if (k >= n)
			break;
		p = xina_opaque(j + k);
		if (p >= XINA_MAX_ELEMS - 1)
			return 0;
		q = xina_pair_of(s->q[p / 2]);
		if (k + 1 >= n)
			q &= ~0xffffffffULL;	/* an odd count: zero pad */
		s->q[p / 2] = q;
		sum += xina_nh_q(q, &nhk->k[p]);
	}
	return sum;
}

/*
 * The first @count elements, all in the frame's first buffer: staged into
 * @s (pairs 0..(@count-1)/2, an odd count's last pair padded with a zero
 * element), and their NH returned.  The blocks are read in place, the
 * tail copied out first (xina_stage_tail()).  On an error (which cannot
 * happen to a packet whose lengths were checked) 0: the tag then fails to
 * verify.
 */
__noinline __u64 xina_stage_lin(struct xdp_md *ctx,
				const struct xina_nhkey *nhk,
				struct xina_scratch *s, __u32 count)
{
	void *end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	__u64 sum = 0;
	__be32 *src;
	__u32 i, n;

	if (!nhk || !s || count > XINA_MAX_ELEMS)
		return 0;
	src = data + XINA_PAYLOAD_OFF;
	for (i = 0; i < XINA_MAX_ELEMS; i += XINA_SBLK) {
		if (i + XINA_SBLK > count)
			break;
		if ((void *)(src + i + XINA_SBLK) > end)
			return 0;
		sum += xina_stage_blk(&nhk->k[i], &src[i], &s->q[i / 2]);
	}
	if (i >= count)
		return sum;
	/* 1..XINA_SBLK - 1 words, bounded as xina_chunk_len() explains */
	n = xina_opaque(count - i - 1);
	if (n >= XINA_SBLK - 1 || i >= XINA_MAX_ELEMS)
		return 0;
	if (bpf_xdp_load_bytes(ctx, XINA_PAYLOAD_OFF + i * 4, &s->w[i],
			       (n + 1) * 4))
		return 0;
	return sum + xina_stage_tail(s, nhk, i, n + 1);
}

/*
 * @n elements copied from the frame into @s at element @base (even), still
 * as the frame's bytes: staged in place, and their NH returned.
 */
__noinline __u64 xina_stage_chunk(struct xina_scratch *s,
				  const struct xina_nhkey *nhk, __u32 base,
				  __u32 n)
{
	__u64 sum = 0;
	__u32 i, j;

	if (!s || !nhk)
		return 0;
	for (i = 0; i < XINA_CHUNK; i += XINA_SBLK) {
		if (i + XINA_SBLK > n)
			break;
		j = xina_opaque(base + i);
		if (j > XINA_MAX_ELEMS - XINA_SBLK)
			return 0;
		sum += xina_stage_blk(&nhk->k[j], &s->q[j / 2], &s->q[j / 2]);
	}
	if (i >= n)
		return sum;
	return sum + xina_stage_tail(s, nhk, base + i, n - i);
}

/*
 * Elements @from (even)..@count-1 of the payload at offset @off, beyond
 * the first buffer (or all of a train's datagram, xina_train_one()):
 * copied into this CPU's scratch at element @from once, staged, and their
 * NH returned (0 on an error).
 */
__noinline __u64 xina_stage_frags(struct xdp_md *ctx,
				  const struct xina_nhkey *nhk, __u32 from,
				  __u32 count, __u32 off)
{
	struct xina_scratch *s = xina_scratch_get();
	__u32 c, i, n;
	__u64 sum = 0;

	if (!s || !nhk)
		return 0;
	for (c = 0; c <= XINA_MAX_ELEMS / XINA_CHUNK; c++) {
		n = xina_chunk_len(from, count, c, &i);
		if (!n)
			break;
		if (bpf_xdp_load_bytes(ctx, off + i * 4, &s->w[i], n * 4))
			return 0;
		sum += xina_stage_chunk(s, nhk, i, n);
	}
	return sum;
}

/*
 * Combining a contribution into a partial, and a partial into another:
 * one loop per (dtype, op) mode, the arithmetic of bpf/xina_lanes.h.
 *
 * Each mode's loop combines blocks of XINA_LBLK words with @dtype and @op
 * constants after inlining, so that no branch on them is left inside a
 * loop.  A bounded loop over up to 2048 words is walked by the verifier
 * iteration by iteration: 16 modes would not fit in the 6.1 verifier's
 * budget of one million instructions.  So the loops of most modes are
 * bpf_loop()s, whose callback is verified once, whatever the number of
 * its iterations; the verifier inlines the loop itself (a known callback,
 * flags 0), leaving one call of the callback per block.  Such a call
 * costs several ns (prologue, epilogue, return thunk): with blocks of 64
 * words a packet of 2048 int32 took 1.1 times as long as with the loop
 * the verifier walked, with blocks of 32 words 1.25 times.  So
 * the modes of the common case are walked loops (xina_loop_run()), and
 * the others take blocks of 32 words: the verifier's walk of their
 * callbacks is most of its budget (the whole program 900 thousand
 * instructions on 6.18, 990 thousand with blocks of 64), and 64 would
 * leave too little of it for any change to come.
 *
 * Whole blocks: the words from @count up to the next multiple of the
 * block (XINA_LBLK, XINA_WBLK) are combined too, from whatever the
 * staging buffer holds there.  They are never read: a round's
 * contributions all have the same count, results and their NH take
 * @count words, and the first contribution of a round on a CPU copies
 * whole blocks of the larger size.
 *
 * The bitwise ops do not depend on the element width (one mode each for
 * every dtype), INT64 combines whole pairs of words (xina_combine64()).
 */
#define XINA_LBLK	32
/*
 * The blocks of the walked loops (xina_loop_walk()): 32 words measured as
 * fast; 64 halve the iterations the verifier walks, the same instructions.
 */
#define XINA_WBLK	64

enum xina_mode {
	XINA_M_COPY,		/* first contribution of the round on this CPU */
	XINA_M_AND,
	XINA_M_OR,
	XINA_M_XOR,
	/* the modes of SUM, MAX and MIN, by dtype in enum xina_dtype order */
	XINA_M_SUM,
	XINA_M_MAX = XINA_M_SUM + 4,
	XINA_M_MIN = XINA_M_MAX + 4,
	__XINA_M_END = XINA_M_MIN + 4,
};

/*
 * What the callers of xina_commit() and xina_part_fold() pass: the (dtype,
 * op) pair as one number, or XINA_HOW_COPY.  They turn it into a mode
 * (xina_mode_of()) themselves: global functions, verified once for any
 * argument.  A caller's switch on the pair would fork the verifier's walk
 * of everything after it into one walk per mode (of the fold's loop over
 * 256 CPUs, at every iteration).
 */
#define XINA_HOW_COPY	0	/* op 0 is never valid */

static __always_inline __u32 xina_how(__u8 dtype, __u8 op)
{
	return (__u32)dtype << 8 | op;
}

/* The combine mode of a (dtype, op) pair xina_dtype_op_ok() accepted. */
static __always_inline __u32 xina_mode_of(__u32 how)
{
	__u32 d = ((how >> 8) - XINA_DTYPE_INT32) & 3, op = how & 0xff;

	switch (op) {
	case XINA_OP_AND:
		return XINA_M_AND;
	case XINA_OP_OR:
		return XINA_M_OR;
	case XINA_OP_XOR:
		return XINA_M_XOR;
	case XINA_OP_MAX:
		return XINA_M_MAX + d;
	case XINA_OP_MIN:
		return XINA_M_MIN + d;
	default:
		return XINA_M_SUM + d;
	}
}

/* What a loop's callback works on. */
struct xina_loop {
	struct xina_part *dst;
	const struct xina_part *src;		/* fold */
	const struct xina_scratch *s;		/* commit */
};

/*
 * Where the two elements of a partial's pair are as 32-bit words (struct
 * xina_part): the first, the high half of the 64-bit word, is the second
 * 32-bit word on a little-endian machine.
 */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define XINA_HI	1
#else
#define XINA_HI	0
#endif
#define XINA_LO	(1 - XINA_HI)

/* Element @i of @part (i < XINA_MAX_ELEMS), for the tails of the loops. */
static __always_inline __u32 xina_part_elem(const struct xina_part *part,
					    __u32 i)
{
	return part->q[i / 2] >> ((~i & 1) << 5);
}

/*
 * Whether a pair combines as one 64-bit word (xina_combine_pair()): the
 * lane-wise ops, whose lanes never cross the 32-bit boundary, and INT64.
 * The others (INT32 SUM, the MAXs and MINs of 8, 16 and 32 bits) take the
 * pair's two 32-bit words one by one: fewer instructions than splitting
 * and joining a 64-bit word.
 */
static __always_inline int xina_pair_whole(const __u32 dtype, const __u32 op)
{
	return dtype == XINA_DTYPE_INT64 || op == XINA_OP_AND ||
	       op == XINA_OP_OR || op == XINA_OP_XOR ||
	       (op == XINA_OP_SUM && (dtype == XINA_DTYPE_INT16 ||
				      dtype == XINA_DTYPE_INT8));
}

/*
 * Pair @x (a staged pair, or a partial's) combined into the partial's pair
 * at @dq by @dtype and @op; @copy: replaces it.
 */
static __always_inline void xina_pair_in(__u64 *dq, __u64 x,
					 const __u32 dtype, const __u32 op,
					 const int copy)
{
	__s32 *v = (__s32 *)dq;

	if (copy) {
		*dq = x;
	} else if (xina_pair_whole(dtype, op)) {
		*dq = xina_combine_pair(*dq, x, dtype, op);
	} else {
		v[XINA_HI] = xina_combine32(v[XINA_HI], x >> 32, dtype, op);
		v[XINA_LO] = xina_combine32(v[XINA_LO], x, dtype, op);
	}
}

/*
 * Block @b of a loop: @words (XINA_LBLK or XINA_WBLK) words of the
 * staging buffer (@fold 0) or of the other partial (@fold 1) into
 * l->dst.  Both hold pairs the same way.  Returns 1 (stop) past the last
 * block a partial holds.
 */
static __always_inline long xina_blk(__u32 b, struct xina_loop *l,
				     const __u32 dtype, const __u32 op,
				     const int copy, const int fold,
				     const __u32 words)
{
	const __u64 *sq;
	__u64 *dq;
	__u32 p, k;

	if (b >= XINA_MAX_ELEMS / words)
		return 1;
	p = b * (words / 2);
	/* the block's pointers once: constant offsets from them below */
	dq = &l->dst->q[p];
	sq = fold ? &l->src->q[p] : &l->s->q[p];
#pragma unroll
	for (k = 0; k < words / 2; k++)
		xina_pair_in(&dq[k], sq[k], dtype, op, copy);
	return 0;
}

/*
 * The callbacks of one combine mode, commit (from staging) and fold, and
 * the loops that run them over @n blocks.  A loop is a function of its
 * own: in one function clang would merge the bpf_loop() calls of every
 * mode into one call with the callback chosen before it, a call the
 * verifier does not inline (a helper call and an indirect call per block
 * then, measured at 1.7 times the time of a packet of int32).
 */
#define XINA_MODE_CBS(name, dtype, op)					\
static long xina_commit_##name(__u32 b, struct xina_loop *l)		\
{									\
	return xina_blk(b, l, dtype, op, 0, 0, XINA_LBLK);		\
}									\
static __noinline int xina_commit_loop_##name(struct xina_loop *l,	\
					      __u32 n)			\
{									\
	return bpf_loop(n, xina_commit_##name, l, 0) == n ? 0 : -1;	\
}									\
static long xina_fold_##name(__u32 b, struct xina_loop *l)		\
{									\
	return xina_blk(b, l, dtype, op, 0, 1, XINA_LBLK);		\
}									\
static __noinline int xina_fold_loop_##name(struct xina_loop *l,	\
					    __u32 n)			\
{									\
	return bpf_loop(n, xina_fold_##name, l, 0) == n ? 0 : -1;	\
}

/* X(name, mode, dtype, op) for every combine mode. */
#define XINA_MODES(X)							\
	X(and, XINA_M_AND, XINA_DTYPE_INT32, XINA_OP_AND)		\
	X(or, XINA_M_OR, XINA_DTYPE_INT32, XINA_OP_OR)			\
	X(xor, XINA_M_XOR, XINA_DTYPE_INT32, XINA_OP_XOR)		\
	X(sum32, XINA_M_SUM, XINA_DTYPE_INT32, XINA_OP_SUM)		\
	X(sum8, XINA_M_SUM + 1, XINA_DTYPE_INT8, XINA_OP_SUM)		\
	X(sum16, XINA_M_SUM + 2, XINA_DTYPE_INT16, XINA_OP_SUM)		\
	X(sum64, XINA_M_SUM + 3, XINA_DTYPE_INT64, XINA_OP_SUM)		\
	X(max32, XINA_M_MAX, XINA_DTYPE_INT32, XINA_OP_MAX)		\
	X(max8, XINA_M_MAX + 1, XINA_DTYPE_INT8, XINA_OP_MAX)		\
	X(max16, XINA_M_MAX + 2, XINA_DTYPE_INT16, XINA_OP_MAX)		\
	X(max64, XINA_M_MAX + 3, XINA_DTYPE_INT64, XINA_OP_MAX)		\
	X(min32, XINA_M_MIN, XINA_DTYPE_INT32, XINA_OP_MIN)		\
	X(min8, XINA_M_MIN + 1, XINA_DTYPE_INT8, XINA_OP_MIN)		\
	X(min16, XINA_M_MIN + 2, XINA_DTYPE_INT16, XINA_OP_MIN)		\
	X(min64, XINA_M_MIN + 3, XINA_DTYPE_INT64, XINA_OP_MIN)

#define XINA_CBS_X(name, mode, dtype, op)	XINA_MODE_CBS(name, dtype, op)
XINA_MODES(XINA_CBS_X)

/* One bpf_loop() call per mode: each is inlined with its own callback. */
#define XINA_LOOP_X(name, mode, dtype, op)				\
	case mode:							\
		return fold ? xina_fold_loop_##name(l, n) :		\
			      xina_commit_loop_##name(l, n);

/*
 * The loop of one mode over the blocks of @count words that the verifier
 * walks block by block: no call per block.  For the modes of the common
 * case only (xina_loop_run()), as each such loop takes about ten thousand
 * of the verifier's million instructions.
 */
static __always_inline int xina_loop_walk(struct xina_loop *l, __u32 count,
					  const __u32 dtype, const __u32 op,
					  const int copy, const int fold)
{
	__u32 b, n = (count + XINA_WBLK - 1) / XINA_WBLK;

	for (b = 0; b < XINA_MAX_ELEMS / XINA_WBLK; b++) {
		if (b >= n)
			break;
		xina_blk(b, l, dtype, op, copy, fold, XINA_WBLK);
	}
	return 0;
}

/*
 * The modes of the walked loops: the first contribution of a round on a
 * CPU (XINA_M_COPY), and the SUMs of int32 (float32 too, as block
 * floating point) and of int16 (float16 and bfloat16).
 */
static __always_inline int xina_mode_walked(__u32 mode)
{
	return mode == XINA_M_COPY || mode == XINA_M_SUM ||
	       mode == XINA_M_SUM + 2;
}

/* The walked loop of @mode (xina_mode_walked()); the fold has no copy. */
static __always_inline int xina_walk_mode(struct xina_loop *l, __u32 count,
					  __u32 mode, const int fold)
{
	if (mode == XINA_M_COPY && !fold)
		return xina_loop_walk(l, count, XINA_DTYPE_INT32, XINA_OP_SUM,
				      1, 0);
	if (mode == XINA_M_SUM)
		return xina_loop_walk(l, count, XINA_DTYPE_INT32, XINA_OP_SUM,
				      0, fold);
	if (mode == XINA_M_SUM + 2)
		return xina_loop_walk(l, count, XINA_DTYPE_INT16, XINA_OP_SUM,
				      0, fold);
	return -1;
}

/*
 * The walked loops of the commit, and of the fold: global functions, each
 * verified once and with a frame of its own (in xina_commit(), the loops
 * took its frame, and the chain of frames below it, past the 512 bytes
 * 6.1 allows).
 */
__noinline int xina_commit_walk(struct xina_part *part,
				const struct xina_scratch *s, __u32 count,
				__u32 mode)
{
	struct xina_loop l = { .dst = part, .s = s };

	if (!part || !s || count > XINA_MAX_ELEMS)
		return -1;
	return xina_walk_mode(&l, count, mode, 0);
}

__noinline int xina_fold_walk(struct xina_part *dst,
			      const struct xina_part *src, __u32 count,
			      __u32 mode)
{
	struct xina_loop l = { .dst = dst, .src = src };

	if (!dst || !src || count > XINA_MAX_ELEMS)
		return -1;
	return xina_walk_mode(&l, count, mode, 1);
}

/*
 * The loop of @mode over the blocks of @count words, of the commit (@fold
 * 0) or of the fold (@fold 1, which has no XINA_M_COPY): @fold is a
 * constant, so that each caller keeps only its own loops.  The modes of
 * the common case (xina_mode_walked()) take walked loops: a bpf_loop()
 * callback's call and return per block cost a 2048-int32 packet a tenth
 * of its time on a host whose return thunk (Safe RET, against SRSO)
 * makes every return a mispredicted one (xina-bench-fastpath, medians of
 * eight alternated runs: 1934 ns against 2155 at K=inf, 2151 against
 * 2383 at K=4).
 */
static __always_inline int xina_loop_run(struct xina_loop *l, __u32 count,
					 __u32 mode, const int fold)
{
	__u32 n = (count + XINA_LBLK - 1) / XINA_LBLK;

	if (xina_mode_walked(mode))
		return fold ? xina_fold_walk(l->dst, l->src, count, mode) :
			      xina_commit_walk(l->dst, l->s, count, mode);
	switch (mode) {
	XINA_MODES(XINA_LOOP_X)
	default:
		return -1;
	}
}

/*
 * The staged @count words of a contribution whose tag verified and whose
 * claim was made, into @part as @how says (xina_how(), or XINA_HOW_COPY):
 * the only write of a contribution's elements to slot memory.
 */
__noinline int xina_commit(struct xina_part *part,
			   const struct xina_scratch *s, __u32 count,
			   __u32 how)
{
	struct xina_loop l = { .dst = part, .s = s };

	if (!part || !s || count > XINA_MAX_ELEMS)
		return -1;
	return xina_loop_run(&l, count, how == XINA_HOW_COPY ? XINA_M_COPY :
				  xina_mode_of(how), 0);
}

/*
 * Elements @base (even)...@base + @n - 1 of @part into @s from element 0,
 * in network order: a pair's two at once.
 */
__noinline int xina_chunk_out(const struct xina_part *part,
			      struct xina_scratch *s, __u32 base, __u32 n)
{
	__u32 i, j, k;

	if (!part || !s)
		return -1;
	for (i = 0; i < XINA_CHUNK; i += XINA_SBLK) {
		if (i + XINA_SBLK > n)
			break;
		j = xina_opaque(base + i);
		if (j > XINA_MAX_ELEMS - XINA_SBLK)
			return -1;
#pragma unroll
		for (k = 0; k < XINA_SBLK / 2; k++)
			s->q[i / 2 + k] = bpf_cpu_to_be64(part->q[j / 2 + k]);
	}
	for (k = 0; k < XINA_SBLK - 1; k++) {
		if (i + k >= n || i + k >= XINA_CHUNK)
			break;
		j = xina_opaque(base + i + k);
		if (j >= XINA_MAX_ELEMS)
			return -1;
		s->w[i + k] = bpf_htonl(xina_part_elem(part, j));
	}
	return 0;
}

/* The first @count words of partial @src into @dst, as @how says. */
__noinline int xina_part_fold(struct xina_part *dst,
			      const struct xina_part *src, __u32 count,
			      __u32 how)
{
	struct xina_loop l = { .dst = dst, .src = src };

	if (!dst || !src || count > XINA_MAX_ELEMS)
		return -1;
	return xina_loop_run(&l, count, xina_mode_of(how), 1);
}

/* The first @count values of @part zero (a round of ZERO contributions). */
__noinline int xina_part_zero(struct xina_part *part, __u32 count)
{
	__u32 i;

	if (!part || count > XINA_MAX_ELEMS)
		return -1;
	for (i = 0; i < XINA_MAX_ELEMS / 2; i++) {
		if (2 * i >= count)
			break;
		part->q[i] = 0;
	}
	return 0;
}

/*
 * The first @count elements of @part into the frame's first buffer.  The
 * payload is 2-byte aligned only: the 64-bit stores need no alignment
 * where the verifier does not ask for it (see xina_stage_blk()).
 */
__noinline int xina_part_put(struct xdp_md *ctx, struct xina_part *part,
			     __u32 count)
{
	void *end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	__u32 i, j, k;
	__be32 *dst;

	if (!part || count > XINA_MAX_ELEMS)
		return -1;
	dst = data + XINA_PAYLOAD_OFF;
	for (i = 0; i < XINA_MAX_ELEMS; i += XINA_BLK) {
		if (i + XINA_BLK > count)
			break;
		if ((void *)(dst + i + XINA_BLK) > end)
			return -1;
#pragma unroll
		for (k = 0; k < XINA_BLK; k += 2)
			*(__u64 *)&dst[i + k] =
				bpf_cpu_to_be64(part->q[(i + k) / 2]);
	}
	for (k = 0; k < XINA_BLK - 1; k++) {
		j = i + k;
		if (j >= count || j >= XINA_MAX_ELEMS)
			break;
		if ((void *)(dst + j + 1) > end)
			return -1;
		dst[j] = bpf_htonl(xina_part_elem(part, j));
	}
	return 0;
}

/*
 * Elements @from (even)..@count-1 of @part into the frame's further
 * buffers (or a train's datagram), the payload at offset @off.
 */
__noinline int xina_part_put_frags(struct xdp_md *ctx, struct xina_part *part,
				   __u32 from, __u32 count, __u32 off)
{
	struct xina_scratch *s = xina_scratch_get();
	__u32 c, i, n;

	if (!part || !s)
		return -1;
	for (c = 0; c <= XINA_MAX_ELEMS / XINA_CHUNK; c++) {
		n = xina_chunk_len(from, count, c, &i);
		if (!n)
			break;
		if (xina_chunk_out(part, s, i, n))
			return -1;
		if (bpf_xdp_store_bytes(ctx, off + i * 4, s->w, n * 4))
			return -1;
	}
	return 0;
}

/*
 * How many of @pkt's first @count elements are taken in the frame's first
 * buffer, the rest through the scratch (xina_tag_check(), xina_put()):
 * all, or those of its whole blocks of XINA_SBLK.  A pair's two elements
 * stay together (NH works on pairs), and a contribution of whole blocks
 * has no element-by-element tail on either side of the split: one
 * bpf_xdp_load_bytes() and two tails fewer for a 2048-int32 packet than
 * with the split at the first buffer's last pair, 1-2% of its time at
 * K=inf (xina-bench-fastpath, medians of ten alternated runs: 2200 ns
 * against 2230, and 2210 against 2266 in another pair of builds).
 */
static __always_inline __u32 xina_lin_of(const struct xina_pkt *pkt,
					 __u32 count)
{
	return pkt->lin < count ? pkt->lin & ~(XINA_SBLK - 1) : count;
}

/*
 * The first @count elements of @part into the packet's payload: those of
 * the first buffer's whole blocks (xina_lin_of()), then those after them,
 * through the scratch.
 */
static __always_inline int xina_put(struct xdp_md *ctx,
				    const struct xina_pkt *pkt,
				    struct xina_part *part, __u32 count)
{
	__u32 lin = xina_lin_of(pkt, count);

	if (xina_part_put(ctx, part, lin))
		return -1;
	if (lin < count)
		return xina_part_put_frags(ctx, part, lin, count, pkt->off);
	return 0;
}

/* ---- authentication ---------------------------------------------------- */

/*
 * NH of the first @count values of @part: the result's payload.  A
 * partial's pairs are staged pairs (struct xina_part): xina_nh_q() on
 * each, an odd count's last pair zero padded.
 */
__noinline __u64 xina_nh_part(const struct xina_part *part,
			      const struct xina_nhkey *nhk, __u32 count)
{
	__u32 i, j, k;
	__u64 sum = 0, q;

	if (!part || !nhk || count > XINA_MAX_ELEMS)
		return 0;
	for (i = 0; i < XINA_MAX_ELEMS; i += XINA_SBLK) {
		if (i + XINA_SBLK > count)
			break;
#pragma unroll
		for (k = 0; k < XINA_SBLK; k += 2) {
			sum += xina_nh_q(part->q[(i + k) / 2], &nhk->k[i + k]);
			asm volatile("" : "+r"(sum));
		}
	}
	for (k = 0; k < XINA_SBLK; k += 2) {
		j = i + k;
		if (j >= count || j >= XINA_MAX_ELEMS - 1)
			break;
		q = part->q[j / 2];
		if (j + 1 >= count)
			q &= ~0xffffffffULL;	/* an odd count: zero pad */
		sum += xina_nh_q(q, &nhk->k[j]);
	}
	return sum;
}

/*
 * NH of the @count elements staged in @s (xina_stage_lin(), pairs, an odd
 * count's last pair zero padded) under key @nhk: an upper result's
 * payload under the rack job's key, without reading the frame again.
 */
__noinline __u64 xina_nh_staged(const struct xina_scratch *s,
				const struct xina_nhkey *nhk, __u32 count)
{
	__u32 i, k, p, n;
	__u64 sum = 0;

	if (!s || !nhk || count > XINA_MAX_ELEMS)
		return 0;
	n = (count + 1) / 2;
	for (i = 0; i < XINA_MAX_ELEMS / 2; i += XINA_BLK) {
		if (i + XINA_BLK > n)
			break;
#pragma unroll
		for (k = 0; k < XINA_BLK; k++)
			sum += xina_nh_q(s->q[i + k], &nhk->k[2 * (i + k)]);
	}
	for (k = 0; k < XINA_BLK - 1; k++) {
		p = xina_opaque(i + k);
		if (p >= n || p >= XINA_MAX_ELEMS / 2)
			break;
		sum += xina_nh_q(s->q[p], &nhk->k[2 * p]);
	}
	return sum;
}

/*
 * Stage the @pkt->count elements of the frame into @s (see "element
 * loops") and check the tag over them, keyed with @k: 0 if it matches the
 * header's.  The header is read in place (it is in the first buffer:
 * xina_check_hdr()).  The elements after the first buffer's whole blocks
 * are copied out (xina_lin_of()).
 */
static __always_inline int xina_tag_check(struct xdp_md *ctx,
					  const struct xina_pkt *pkt,
					  const __u64 *k,
					  const struct xina_nhkey *nhk,
					  struct xina_scratch *s)
{
	__u32 lin = xina_lin_of(pkt, pkt->count);
	__u64 nh = 0;

	if (pkt->zero)
		goto tag;	/* no payload: its NH is 0, nothing staged */
	nh = xina_stage_lin(ctx, nhk, s, lin);
	if (lin < pkt->count)
		nh += xina_stage_frags(ctx, nhk, lin, pkt->count, pkt->off);
tag:
	return bpf_cpu_to_be64(xina_tag_words(k[0], k[1],
					      (const __u64 *)pkt->xh, nh)) !=
	       pkt->xh->tag;
}

/*
 * Turn the header into that of the result of its round, tagged with the
 * job's result key over @nh (the result's NH): flags and rank 0, so that
 * the answer to any member's retransmission is the same packet; @exp and
 * @aux (network order) the round's.
 */
static __always_inline __u64 xina_result_hdr(struct xina_hdr *xh,
					     const struct xina_job *job,
					     __s8 exp, __be32 aux, __u64 nh)
{
	__u64 tag;

	xh->type = XINA_T_RESULT;
	xh->flags = 0;
	xh->rank = 0;
	xh->exp = exp;
	xh->aux = aux;
	tag = bpf_cpu_to_be64(xina_tag_words(job->kres[0], job->kres[1],
					     (const __u64 *)xh, nh));
	xh->tag = tag;
	return tag;
}

/* ---- jobs and members --------------------------------------------------- */

/* The job of id @id: the first of its XINA_JOB_PROBES buckets holding it. */
static __always_inline struct xina_job *xina_job_find(__u32 id)
{
	struct xina_job *job;
	__u32 p, b;

#pragma unroll
	for (p = 0; p < XINA_JOB_PROBES; p++) {
		b = xina_job_bucket(id, p);
		job = bpf_map_lookup_elem(&xina_jobs, &b);
		if (job && job->id == id && id)
			return job;
	}
	return NULL;
}

static __always_inline struct xina_member *xina_member_of(__u32 idx,
							  __u32 rank)
{
	__u32 key = idx * XINA_MAX_WORKERS + rank;

	if (idx >= XINA_MAX_JOBS || rank >= XINA_MAX_WORKERS)
		return NULL;
	return bpf_map_lookup_elem(&xina_members, &key);
}

/*
 * The configured member of the packet's rank, if the packet comes from it
 * (its address, and its port if one is configured); else NULL.
 */
static __always_inline struct xina_member *
xina_member_from(const struct xina_job *job, const struct xina_pkt *pkt)
{
	__u32 rank = bpf_ntohs(pkt->xh->rank);
	struct xina_member *member;

	if (rank >= job->workers)
		return NULL;
	member = xina_member_of(job->idx, rank);
	if (!member || !member->addr || member->addr != pkt->iph->saddr ||
	    (member->port && member->port != pkt->udp->source))
		return NULL;
	return member;
}

/* The job's current epoch: read without its lock, changed only under it. */
static __always_inline __u32 xina_epoch_now(const struct xina_epoch *ep)
{
	return *(const volatile __u32 *)&ep->j.epoch;
}

/*
 * Returns the enum xina_stat drop reason, or -1 if the packet may touch
 * the job's slots.  The cheap checks of the source first, then the tag
 * (which covers every header field checked after it), then the epoch
 * (@epoch, the job's current one; 0, no epoch yet, takes nothing), before
 * anything of the slots is read: a packet of another epoch gets no answer.
 */
static __always_inline int xina_check_job(struct xdp_md *ctx,
					  const struct xina_job *job,
					  const struct xina_nhkey *nhk,
					  const struct xina_pkt *pkt,
					  struct xina_scratch *s, __u32 epoch,
					  struct xina_member **memberp)
{
	const struct xina_hdr *xh = pkt->xh;
	struct xina_member *member;

	member = xina_member_from(job, pkt);
	if (!member)
		return XINA_STAT_DROP_MEMBER;
	if (xina_tag_check(ctx, pkt, member->key, nhk, s))
		return XINA_STAT_DROP_AUTH;
	if (!epoch || bpf_ntohl(xh->epoch) != epoch)
		return XINA_STAT_DROP_EPOCH;
	if (bpf_ntohl(xh->slot) >= job->slots || pkt->count > job->elems)
		return XINA_STAT_DROP_RANGE;
	if (!xina_dtype_op_ok(xh->dtype, xh->op, pkt->count) ||
	    (pkt->zero && !xina_op_zero_ok(xh->op)))
		return XINA_STAT_DROP_OP;
	*memberp = member;
	return -1;
}

/*
 * Remember where a member is, for xina_fanout: only from a contribution
 * that was accepted into a round (tag verified, not a duplicate, not
 * stale), so that no other packet, an exact replay included, can move
 * where the member's results go.  The member entry is shared: all CPUs
 * seeing packets of one member write the same values, and only when they
 * changed, so the cache line stays clean in steady state.
 */
static __always_inline void xina_learn(struct xdp_md *ctx,
				       struct xina_member *member,
				       const struct xina_pkt *pkt)
{
	if (member->ifindex == ctx->ingress_ifindex &&
	    member->rport == pkt->udp->source &&
	    member->sw_addr == pkt->iph->daddr &&
	    mac_equal(member->mac, pkt->eth->h_source) &&
	    mac_equal(member->sw_mac, pkt->eth->h_dest))
		return;
	__builtin_memcpy(member->mac, pkt->eth->h_source, ETH_ALEN);
	__builtin_memcpy(member->sw_mac, pkt->eth->h_dest, ETH_ALEN);
	member->sw_addr = pkt->iph->daddr;
	member->rport = pkt->udp->source;
	member->ifindex = ctx->ingress_ifindex;
}

/* ---- aggregation core --------------------------------------------------- */

enum xina_claim {
	XINA_CLAIM_ADD,		/* bit set: add the payload */
	XINA_CLAIM_RETRANS,	/* round complete: answer from the result */
	XINA_CLAIM_DUP,
	XINA_CLAIM_STALE,
	XINA_CLAIM_RANGE,	/* round not open yet, or count mismatch */
	XINA_CLAIM_OP,		/* dtype or op differs from the round's */
	XINA_CLAIM_EPOCH,	/* the job moved on to another epoch */
	XINA_CLAIM_HELD,	/* a job with an uplink: round complete, its
				 * partial went up too recently to resend */
};

struct xina_contrib {
	__u64 now;	/* a job with an uplink: the time (else 0) */
	__u64 hold_ns;	/* and its partials' resend interval */
	__u32 epoch;
	__u32 round;
	__u32 rank;
	__u32 count;
	__s32 aux;	/* host order */
	__u8 dtype;
	__u8 op;
	__s8 exp;
};

/* What a retransmission needs from meta, copied out under the lock. */
struct xina_kept {
	__u64 tag;
	__u32 epoch;
	__u32 round;
	__u32 result_cpu;
	__u32 gen;	/* XINA_DONE_GEN of the opening a claim was made in */
	__s32 aux;
	__s8 exp;
};


/*
 * Decide what a contribution of the job's current epoch does to its slot
 * version.  Runs under meta->lock, so: no helper or function calls in
 * here.  The round numbers are compared with a signed difference so that
 * they may wrap.
 *
 * A version of another epoch (or never used: epoch 0) is started afresh
 * by the first contribution of the current epoch, if that is one of the
 * epoch's first rounds (0 or 1): a late packet of a round 2 or later never
 * opens a version.  The job's epoch (@cur) is read again first: a
 * restart's join may have moved it on since the packet was checked, and a
 * packet of the old epoch must not take back a version the new one opened.
 */
static __always_inline int xina_claim(struct xina_meta *m,
				      const struct xina_contrib *c,
				      const struct xina_epoch *cur,
				      struct xina_kept *kept)
{
	__u64 bit = 1ULL << (c->rank & 63);
	__u32 w = (c->rank >> 6) & (XINA_MAX_WORKERS / 64 - 1);
	int ret = XINA_CLAIM_ADD, fresh = 0;

	bpf_spin_lock(&m->lock);
	if (m->epoch != c->epoch) {
		if (c->epoch != xina_epoch_now(cur)) {
			ret = XINA_CLAIM_EPOCH;
			goto unlock;
		}
		if (c->round > 1) {
			ret = XINA_CLAIM_RANGE;
			goto unlock;
		}
		fresh = 1;
	}
	if (fresh || (c->round == m->round + 2 && m->complete)) {
		m->epoch = c->epoch;
		m->round = c->round;
		m->claimed = 0;
		/*
		 * A new opening: count 0, next generation.  No add of the
		 * old round is in flight (round r + 2 opens only on a
		 * complete round r); one of another epoch may be, and its
		 * compare-and-swap will not count it here (xina_done()).
		 * A plain store: such an add's swap either comes before it
		 * (and is overwritten) or fails on the generation.
		 */
		*(volatile __u32 *)&m->done =
			(XINA_DONE_GEN(m->done) + 1) << 16;
		m->complete = 0;
		m->dtype = c->dtype;
		m->op = c->op;
		m->count = c->count;
		m->seen[0] = 0;
		m->seen[1] = 0;
		m->seen[2] = 0;
		m->seen[3] = 0;
		m->tag = 0;
	} else if ((__s32)(c->round - m->round) < 0) {
		ret = XINA_CLAIM_STALE;
		goto unlock;
	} else if (c->round != m->round) {
		ret = XINA_CLAIM_RANGE;
		goto unlock;
	}
	if (c->dtype != m->dtype || c->op != m->op) {
		ret = XINA_CLAIM_OP;
		goto unlock;
	}
	if (c->count != m->count) {
		ret = XINA_CLAIM_RANGE;
		goto unlock;
	}
	if (m->seen[w] & bit) {
		ret = m->complete ? XINA_CLAIM_RETRANS : XINA_CLAIM_DUP;
		/*
		 * A job with an uplink keeps its partial, not the result:
		 * the retransmission sends the partial up again (the upper
		 * switch answers it with its kept result), once per
		 * hold_ns however many members ask.  Until an upper result
		 * came back, it goes to every member, as the round's first
		 * would have; after that, to the asker alone, so that a
		 * replay of a member's packet draws one answer, to that
		 * member, as on a job without an uplink; to every member
		 * again if another asks while it is up.
		 */
		if (ret == XINA_CLAIM_RETRANS && c->now) {
			if (c->now - m->up_ns < c->hold_ns) {
				if (m->up_wait && m->up_to != c->rank)
					m->up_to = XINA_MARK_ALL;
				ret = XINA_CLAIM_HELD;
				goto unlock;
			}
			m->up_ns = c->now;
			m->up_resent = 1;
			m->up_wait = 1;
			m->up_to = c->rank;
		}
		kept->epoch = m->epoch;
		kept->round = m->round;
		kept->result_cpu = m->result_cpu;
		kept->exp = m->exp;
		kept->aux = m->aux;
		kept->tag = m->tag;
		goto unlock;
	}
	m->seen[w] |= bit;
	/*
	 * The round's MAX of aux, over accepted contributions only: the
	 * first claim of an opening (none claimed yet) sets it, so no
	 * earlier round's or epoch's value is left to clear.
	 */
	if (!m->claimed || c->aux > m->aux)
		m->aux = c->aux;
	m->claimed++;
	kept->gen = XINA_DONE_GEN(m->done);
unlock:
	bpf_spin_unlock(&m->lock);
	return ret;
}

/*
 * Count this CPU's add, claimed in opening @gen of the version, as done:
 * returns 1 if it was the last of the round (this CPU then folds and
 * completes it), else 0.
 *
 * Counted only while the version is still in that opening.  Between this
 * CPU's claim and the end of its add, a restart's first contribution of a
 * new epoch may have opened the same version afresh on another CPU
 * (xina_claim() starts a new generation with count 0).  A plain atomic add
 * of the old epoch's add would count into the new round, which would then
 * complete one contribution short (its own partial is skipped by the fold:
 * another epoch); the compare-and-swap fails on the generation instead.
 * Within one epoch the version cannot move on while an add of its round is
 * in flight: round r + 2 opens it only once round r is complete, which
 * needs every one of its adds counted.
 *
 * Bounded: a swap fails only when meta->done changed since it was read:
 * either the generation moved (the next read returns 0) or another add of
 * the opening was counted, at most workers - 1 <= XINA_MAX_WORKERS - 1 of
 * them (one claim per rank and opening).  The swap (BPF_CMPXCHG) is fully
 * ordered, as the atomic add was: every CPU's adds into its partial come
 * before its count, so the CPU whose count is the last folds final
 * partials.
 */
static __always_inline int xina_done(struct xina_meta *m, __u32 gen,
				     __u32 workers)
{
	__u32 old, new, i;

	for (i = 0; i <= XINA_MAX_WORKERS; i++) {
		old = *(volatile __u32 *)&m->done;
		if (XINA_DONE_GEN(old) != gen)
			return 0;
		new = old + 1;
		if (__sync_val_compare_and_swap(&m->done, old, new) == old)
			return XINA_DONE_COUNT(new) == workers;
	}
	return 0;
}

/*
 * The last contribution of the round: fold every other CPU's partial into
 * this CPU's.  All of them are final: their owners counted their adds done
 * with a fully ordered compare-and-swap after adding (xina_done()).
 * Partials of other rounds, or of the same
 * round of another epoch, are skipped: they were never written in this
 * round.
 */
static __always_inline void xina_fold(__u32 idx, __u32 me,
				      struct xina_part *mine,
				      const struct xina_contrib *c)
{
	struct xina_part *p;
	__u32 cpu;

	for (cpu = 0; cpu < XINA_MAX_CPUS; cpu++) {
		if (cpu >= nr_cpus)
			break;
		if (cpu == me)
			continue;
		p = xina_part_of(idx, cpu);
		if (!p || p->epoch != c->epoch || p->round != c->round)
			continue;
		xina_part_fold(mine, p, c->count, xina_how(c->dtype, c->op));
	}
}

/*
 * A new mark over the frame's first bytes, zeroed but for the cookie and
 * the EtherType (NULL: the frame is shorter, which cannot be: its headers
 * were parsed).
 */
static __always_inline struct xina_mark *xina_mark_new(struct xdp_md *ctx)
{
	void *end = (void *)(long)ctx->data_end;
	struct xina_mark *mark = (void *)(long)ctx->data;

	if ((void *)(mark + 1) > end)
		return NULL;
	__builtin_memset(mark, 0, sizeof(*mark));
	mark->cookie = xina_cookie;
	mark->proto = bpf_htons(ETH_P_IP);
	return mark;
}

/*
 * Hand the frame, now a result (or answer) of @job, to xina_fanout on the
 * TC hook of this port: for every member, or for rank @to alone.  The
 * addresses are those of the contribution; xina_fanout rewrites them for
 * each copy.
 */
static __always_inline int xina_pass_marked(struct xdp_md *ctx, __u32 job,
					    __u32 to)
{
	struct xina_mark *mark = xina_mark_new(ctx);

	if (!mark)
		return XDP_DROP;
	mark->job = job;
	mark->to = to;
	return XDP_PASS;
}

/*
 * A result completed by a ZERO contribution, its header alone in the
 * frame: xina_fanout grows it to @c->count words and writes them from
 * part @cpu of slot version @idx before it sends the copies.
 */
static __always_inline int xina_pass_fill(struct xdp_md *ctx, __u32 job,
					  __u32 idx, __u32 cpu,
					  const struct xina_contrib *c)
{
	struct xina_mark *mark = xina_mark_new(ctx);

	if (!mark)
		return XDP_DROP;
	mark->job = job;
	mark->to = XINA_MARK_ALL;
	mark->fill = c->count;
	mark->idx = idx;
	mark->cpu = cpu;
	mark->epoch = c->epoch;
	mark->round = c->round;
	return XDP_PASS;
}

/*
 * Does part @part still hold round @round of @epoch, after a copy of its
 * values?  The fully ordered re-check xina_put_kept() explains.
 */
static __always_inline int xina_part_still(struct xina_part *part,
					   __u32 epoch, __u32 round)
{
	return __sync_fetch_and_add(&part->round, 0) == round &&
	       *(volatile __u32 *)&part->epoch == epoch;
}

/*
 * The kept part @res of round @kept into the frame, as xina_put() does:
 * 0 if the copy holds only that round's values, -1 if it is torn (or the
 * frame too short, which cannot happen: its length was checked).
 */
static __always_inline int xina_put_kept(struct xdp_md *ctx,
					 struct xina_pkt *pkt,
					 struct xina_part *res,
					 const struct xina_kept *kept)
{
	if (xina_put(ctx, pkt, res, pkt->count))
		return -1;
	/*
	 * Round r + 2, or a round of a new epoch, may have begun on this
	 * version since the lock was dropped, overwriting the result.  Its
	 * first add on the result's CPU stores ->epoch, then ->round with a
	 * fully ordered exchange (BPF_XCHG), before any value
	 * (xina_aggregate()).  Here the re-check reads ->round with a fetching
	 * atomic, also fully ordered, after every load of the copy, and
	 * ->epoch after that.  If the copy read any value of the new round,
	 * the exchange came before that value's store, which came before the
	 * copy's load of it, which came before the atomic: the atomic returns
	 * the new round (or a later one) and the load after it sees the new
	 * epoch, since both were stored before the exchange.  So a copy that
	 * passes the re-check holds only the kept round's values, on weakly
	 * ordered CPUs too (arm64), where a compiler barrier alone lets the
	 * copy's loads be satisfied after the re-check's plain loads.  An
	 * atomic add of 0 changes nothing; it only takes the cache line, on
	 * the path of a retransmission.
	 */
	return xina_part_still(res, kept->epoch, kept->round) ? 0 : -1;
}

/*
 * Answer a retransmission to a completed round: the kept result, to the
 * sender alone, with the header and tag of the result (xina_result_hdr()).
 */
static __always_inline int xina_answer(struct xdp_md *ctx,
				       struct xina_pkt *pkt, __u32 idx,
				       const struct xina_kept *kept,
				       struct xina_counters *ctr)
{
	struct xina_hdr *xh = pkt->xh;
	__u32 job = bpf_ntohl(xh->job);
	__u32 rank = bpf_ntohs(xh->rank);
	struct xina_part *res;

	res = xina_part_of(idx, kept->result_cpu);
	if (!res || res->epoch != kept->epoch || res->round != kept->round)
		goto stale;
	xh->type = XINA_T_RESULT;
	xh->flags = 0;
	xh->rank = 0;
	xh->exp = kept->exp;
	xh->aux = bpf_htonl(kept->aux);
	xh->tag = kept->tag;
	if (xina_put_kept(ctx, pkt, res, kept))
		goto stale;

	stat_inc(ctr, XINA_STAT_RETRANS_ANSWERED);
	return xina_pass_marked(ctx, job, rank);
stale:
	stat_inc(ctr, XINA_STAT_STALE);
	return XDP_DROP;
}

/*
 * The MAX of aux of the round this CPU completes, read without the lock:
 * every claim of the opening set it under the lock before its add was
 * counted (a fully ordered swap, xina_done()), and once the count is
 * complete no claim of the round is left (one per rank), so it is final.
 */
static __always_inline __s32 xina_aux_final(const struct xina_meta *m)
{
	return *(const volatile __s32 *)&m->aux;
}

/*
 * The round is complete: its result, tagged once here (the tag is kept
 * for the answers to retransmissions), replaces the contribution.
 */
static __always_inline int xina_complete(struct xdp_md *ctx,
					 const struct xina_job *j,
					 const struct xina_nhkey *nhk,
					 struct xina_pkt *pkt,
					 struct xina_meta *m, __u32 idx,
					 __u32 me, struct xina_part *mine,
					 const struct xina_contrib *c,
					 struct xina_counters *ctr)
{
	__u32 job = bpf_ntohl(pkt->xh->job);
	__u64 *active;
	__u64 tag;

	xina_fold(idx, me, mine, c);
	tag = xina_result_hdr(pkt->xh, j, c->exp,
			      bpf_htonl(xina_aux_final(m)),
			      xina_nh_part(mine, nhk, c->count));
	if (!pkt->zero && xina_put(ctx, pkt, mine, c->count))
		return XDP_DROP;	/* cannot happen: length was checked */

	bpf_spin_lock(&m->lock);
	m->complete = 1;
	m->result_cpu = me;
	m->exp = c->exp;
	m->tag = tag;
	bpf_spin_unlock(&m->lock);

	/* the epoch is in use: a restart's join now is answered busy */
	active = bpf_map_lookup_elem(&xina_active, &j->idx);
	if (active)
		*active = bpf_ktime_get_ns();
	stat_inc(ctr, XINA_STAT_COMPLETE);
	/*
	 * A train's datagram: the result is in it, the train marked whole;
	 * but not a ZERO one's, its header alone, which only xina_fanout can
	 * grow and only for a lone datagram: kept for the resends.
	 */
	if (pkt->train) {
		if (!pkt->zero)
			return XDP_PASS;
		gstat_inc(XINA_GSTAT_TRAIN_ZERO);
		return XDP_DROP;
	}
	if (pkt->zero)
		return xina_pass_fill(ctx, job, idx, me, c);
	return xina_pass_marked(ctx, job, XINA_MARK_ALL);
}

/* ---- two levels: the uplink ---------------------------------------------
 *
 * A job with an uplink (struct xina_up, "job add ... up") is a rack whose
 * partial goes up to an upper switch as one member of an upper job, and
 * whose results come back from it (Documentation/protocol.md, "Two
 * levels").  Rounds map one to one: round r of slot s of the rack job is
 * round r of slot s of the upper job; the upper job has at least the rack
 * job's slots and elements per slot (its join says so).
 *
 * Rounds and per-CPU parts.  The round completes in the rack as any does:
 * the CPU whose add is the last (xina_done()) folds every CPU's partial
 * into its own (xina_fold()) and marks the version complete, with
 * result_cpu its CPU.  That part then holds the rack's partial, not the
 * result, and keeps it until the version opens round r + 2, exactly as a
 * flat job keeps its result: a member sends round r + 2 of the slot only
 * after it had the result of round r + 1, which the upper switch sends
 * only once every rack's members contributed to round r + 1, each after
 * it had the result of round r.  So no member can still need round r
 * (its result, or a resend of its partial) once round r + 2 opens.
 *
 * The rack keeps no copy of the result.  A member's retransmission to a
 * complete version sends the kept partial up again, flagged XINA_F_RETRANS
 * (copied as xina_answer() copies a result, torn copies dropped), at most
 * once per xina_up_hold() (meta->up_ns, under the version's lock: every
 * member of a rack times out on a lost result at about the same time, and
 * a member's timeout, tuned to its own switch, is shorter than the upper
 * round, which waits for the slowest rack); the
 * upper switch answers it with its kept result, or drops it as a
 * duplicate while its round is still open.  The upper result is turned
 * into the rack's result in the frame it came in (its elements staged to
 * verify its tag, and hashed from there under the rack job's NH key) and
 * sent to every member by xina_fanout; a member that had it already drops
 * the copy.  The version's meta->tag holds the NH of the partial under the
 * upper job's NH key, so that a resend is tagged without reading the
 * partial twice.
 *
 * Epochs.  The upper job's epoch (xina_up.epoch) stands for one rack epoch
 * (xina_up.rack_epoch).  A new run of the rack's workers opens a new rack
 * epoch, whose rounds start at 0 again: in the upper job, whose epoch the
 * rounds of the last run still hold, they would be stale.  So the joins
 * of the rack's members to a rack epoch the upper epoch does not stand for
 * are not answered; each is sent up instead as the rack's join of the
 * upper job (a fresh nonce per rack epoch, or after a refusal: BUSY while
 * another run still uses the upper job), and its reply records the upper
 * epoch granted (xina_up_join_reply()).  The members resend their joins on
 * their timeout, and are answered once the upper epoch is there: the
 * members' join timers drive the upper join, the switch keeps no timer.
 * The first run of a new job goes the same way (xinactl does not join).
 */

static __always_inline struct xina_up *xina_up_of(__u32 idx)
{
	struct xina_up *up = bpf_map_lookup_elem(&xina_ups, &idx);

	return up && up->job ? up : NULL;
}

/*
 * How long after a partial went up a member's retransmission may send it
 * up again: the upper round trip's timeout, RFC 6298's srtt + 4 rttvar
 * over the partials answered without a resend (Karn), at most
 * XINA_UP_HOLD_MAX_NS and at least resend_us.  As xina-swagg --up's timer
 * (bpf/xina_rtt.h, the same estimator), without a timer: the members'
 * retransmissions clock it, and there is no backoff.
 *
 * Read without @up->lock, each word once (a sample may be under way on
 * another CPU: each word is then the old or the new one, and any mix of
 * the two is good enough for a hold).  The estimator is in us, the
 * hold is compared with bpf_ktime_get_ns() times: the cap goes in as us
 * and the result comes out as ns.  The floor is applied here, after the
 * cap, as it was before the estimator was shared: a resend_us above the
 * cap wins.
 */
static __always_inline __u64 xina_up_hold(const struct xina_up *up)
{
	__u64 floor = (__u64)up->resend_us * 1000;
	struct xina_rtt rtt = {
		.srtt_us = *(const volatile __u32 *)&up->rtt.srtt_us,
		.rttvar_us = *(const volatile __u32 *)&up->rtt.rttvar_us,
	};
	__u64 rto = (__u64)xina_rtt_rto(&rtt, 0, XINA_UP_HOLD_MAX_NS / 1000,
					0) * 1000;

	return rto > floor ? rto : floor;
}

/*
 * A round trip sample @r (ns) into the estimator (RFC 6298, 2.2, 2.3;
 * bpf/xina_rtt.h keeps it in us).
 */
static __always_inline void xina_up_rtt(struct xina_up *up, __u64 r)
{
	bpf_spin_lock(&up->lock);
	xina_rtt_sample(&up->rtt, r);
	bpf_spin_unlock(&up->lock);
}

static __always_inline void upstat_inc(struct xina_up_counters *uc,
				       __u32 stat)
{
	if (uc && stat < XINA_UPSTAT_MAX)
		uc->c[stat]++;
}

/*
 * The frame to the upper switch, its IP and UDP headers written, whose
 * next hop @fib found no neighbour entry for: to xina_fanout, marked.
 * bpf_fib_lookup() filled in the next hop and its device all the same.
 */
static __always_inline int xina_up_neigh(struct xdp_md *ctx,
					 const struct bpf_fib_lookup *fib,
					 struct xina_up_counters *uc)
{
	void *end = (void *)(long)ctx->data_end;
	struct xina_mark *mark = (void *)(long)ctx->data;

	/* the MAC addresses alone: the IPv4 and UDP headers are the hop's */
	if ((void *)&mark->proto > end)
		return XDP_DROP;
	mark->cookie = xina_cookie ^ XINA_MARK_UP;
	mark->job = fib->ifindex;
	upstat_inc(uc, XINA_UPSTAT_NO_NEIGH);
	return XDP_PASS;
}

/*
 * The frame, its xina header already written, goes to the upper switch:
 * out of the device and to the neighbour the route to it takes, from
 * up->saddr and the xina port.  bpf_fib_lookup() on every frame that goes
 * up (not once in xinactl): a neighbour or route that changes is followed,
 * and it costs a route lookup per partial, against the thousands of
 * element operations of the partial itself.  bpf_fib_lookup() never makes
 * a neighbour entry, and nothing else here sends to the upper switch: a
 * frame whose next hop has none (flushed, expired, never resolved) is
 * passed, marked, to xina_fanout, whose bpf_redirect_neigh() resolves it
 * as the stack would and sends the frame once it is; the frames after it
 * find the entry.  Without a route the frame is dropped (no_route) and
 * the member's retransmission tries again.
 */
static __always_inline int xina_up_send(struct xdp_md *ctx,
					const struct xina_up *up,
					struct xina_up_counters *uc)
{
	void *end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct bpf_fib_lookup fib = {};
	struct ethhdr *eth = data;
	struct iphdr *iph = (void *)(eth + 1);
	struct udphdr *udp = (void *)(iph + 1);
	int rc;

	if ((void *)(udp + 1) > end)
		return XDP_DROP;
	fib.family = 2;		/* AF_INET */
	fib.l4_protocol = IPPROTO_UDP;
	fib.sport = bpf_htons(xina_port);
	fib.dport = up->port;
	fib.tot_len = bpf_ntohs(iph->tot_len);
	fib.ipv4_src = up->saddr;
	fib.ipv4_dst = up->addr;
	fib.ifindex = up->ifindex;
	rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), BPF_FIB_LOOKUP_OUTPUT);
	if (rc != BPF_FIB_LKUP_RET_SUCCESS &&
	    rc != BPF_FIB_LKUP_RET_NO_NEIGH) {
		upstat_inc(uc, XINA_UPSTAT_NO_ROUTE);
		return XDP_DROP;
	}
	iph->saddr = up->saddr;
	iph->daddr = up->addr;
	iph->ttl = 64;
	ip_csum_set(iph);
	udp->source = bpf_htons(xina_port);
	udp->dest = up->port;
	udp->check = 0;
	if (rc == BPF_FIB_LKUP_RET_NO_NEIGH)
		return xina_up_neigh(ctx, &fib, uc);
	__builtin_memcpy(eth->h_dest, fib.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, fib.smac, ETH_ALEN);
	return bpf_redirect(fib.ifindex, 0);
}

/*
 * The header of the rack's partial of a round of rack epoch @rack_epoch:
 * a contribution of the rack's rank to the upper job, with @exp and @aux
 * (the MAX of the rack round's), tagged over @nh (its NH under the upper
 * job's key).  -1 if the upper epoch does not stand for @rack_epoch (a run
 * whose upper join has not been answered yet: cannot happen to a member
 * that was answered its join).
 */
static __always_inline int xina_up_hdr(struct xina_hdr *xh,
				       struct xina_up *up, __u32 rack_epoch,
				       __s8 exp, __s32 aux, __u64 nh,
				       __u8 flags)
{
	__u32 epoch, re;

	bpf_spin_lock(&up->lock);
	epoch = up->epoch;
	re = up->rack_epoch;
	bpf_spin_unlock(&up->lock);
	if (re != rack_epoch || !epoch)
		return -1;
	xh->type = XINA_T_CONTRIB;
	xh->flags = flags;
	xh->exp = exp;
	xh->job = bpf_htonl(up->job);
	xh->rank = bpf_htons(up->rank);
	xh->weight = 0;
	xh->epoch = bpf_htonl(epoch);
	xh->aux = bpf_htonl(aux);
	xh->tag = bpf_cpu_to_be64(xina_tag_words(up->kmine[0], up->kmine[1],
						 (const __u64 *)xh, nh));
	return 0;
}

/*
 * The rack's round is complete (this CPU's add was the last): fold, and
 * send the partial up in place of the result.
 */
static __always_inline int xina_up_complete(struct xdp_md *ctx,
					    const struct xina_job *j,
					    struct xina_up *up,
					    const struct xina_nhkey *upnh,
					    struct xina_pkt *pkt,
					    struct xina_meta *m, __u32 idx,
					    __u32 me, struct xina_part *mine,
					    const struct xina_contrib *c,
					    struct xina_counters *ctr,
					    struct xina_up_counters *uc)
{
	__u64 *active;
	__u64 nh;

	xina_fold(idx, me, mine, c);
	nh = xina_nh_part(mine, upnh, c->count);

	bpf_spin_lock(&m->lock);
	m->complete = 1;
	m->result_cpu = me;
	m->exp = c->exp;
	m->tag = nh;
	m->up_ns = c->now;
	m->up_resent = 0;
	m->up_wait = 1;
	m->up_got = 0;
	bpf_spin_unlock(&m->lock);

	active = bpf_map_lookup_elem(&xina_active, &j->idx);
	if (active)
		*active = bpf_ktime_get_ns();
	stat_inc(ctr, XINA_STAT_COMPLETE);

	if (xina_up_hdr(pkt->xh, up, c->epoch, c->exp, xina_aux_final(m), nh,
			0)) {
		upstat_inc(uc, XINA_UPSTAT_DROP_STALE);
		return XDP_DROP;
	}
	if (xina_put(ctx, pkt, mine, c->count))
		return XDP_DROP;	/* cannot happen: length was checked */
	upstat_inc(uc, XINA_UPSTAT_SENT);
	return xina_up_send(ctx, up, uc);
}

/*
 * A member retransmits to a complete version of a job with an uplink: the
 * kept partial goes up again, flagged as a retransmission.  The copy is
 * checked for tearing as xina_answer() checks its own.
 */
static __always_inline int xina_up_answer(struct xdp_md *ctx,
					  struct xina_pkt *pkt, __u32 idx,
					  struct xina_up *up,
					  const struct xina_kept *kept,
					  struct xina_counters *ctr,
					  struct xina_up_counters *uc)
{
	struct xina_part *res;

	res = xina_part_of(idx, kept->result_cpu);
	if (!res || res->epoch != kept->epoch || res->round != kept->round)
		goto stale;
	if (xina_up_hdr(pkt->xh, up, kept->epoch, kept->exp, kept->aux,
			kept->tag, XINA_F_RETRANS)) {
		upstat_inc(uc, XINA_UPSTAT_DROP_STALE);
		return XDP_DROP;
	}
	if (xina_put_kept(ctx, pkt, res, kept))
		goto stale;
	upstat_inc(uc, XINA_UPSTAT_RESENT);
	return xina_up_send(ctx, up, uc);
stale:
	stat_inc(ctr, XINA_STAT_STALE);
	return XDP_DROP;
}

/*
 * A join of a rack member to the current rack epoch @epoch, which the
 * upper epoch does not stand for: the frame (already the bare header)
 * becomes the rack's join of the upper job, nonce @nonce, naming the rack
 * epoch's run @run (the workers' run is the job's across its racks).
 */
static __always_inline int xina_up_join(struct xdp_md *ctx,
					const struct xina_job *job,
					struct xina_up *up, __u64 nonce,
					__u32 run, struct xina_up_counters *uc)
{
	void *end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct xina_hdr *xh = data + sizeof(struct ethhdr) +
			      sizeof(struct iphdr) + sizeof(struct udphdr);

	if ((void *)(xh + 1) > end)
		return XDP_DROP;
	xh->type = XINA_T_JOIN;
	xh->dtype = XINA_DTYPE_INT32;
	xh->op = 0;
	xh->flags = 0;
	xh->exp = 0;
	xh->count = 0;
	xh->job = bpf_htonl(up->job);
	xh->rank = bpf_htons(up->rank);
	xh->weight = 0;
	xh->slot = bpf_htonl(job->slots);
	xh->round = 0;
	xh->epoch = bpf_htonl(run);
	xh->aux = bpf_htonl(job->elems);
	xh->offset = bpf_cpu_to_be64(nonce);
	xh->tag = bpf_cpu_to_be64(xina_tag_words(up->kmine[0], up->kmine[1],
						 (const __u64 *)xh, 0));
	up->join_tag = xh->tag;
	upstat_inc(uc, XINA_UPSTAT_JOIN_SENT);
	return xina_up_send(ctx, up, uc);
}

/*
 * Should the join of a rack member, answered @status for rack epoch
 * @epoch, wait for the upper epoch?  0: answer it; else the nonce of the
 * upper join to send in its place.
 */
static __always_inline __u64 xina_up_join_wait(struct xina_up *up,
					       const struct xina_epoch *ep,
					       __u32 status, __u32 epoch)
{
	__u64 nonce = 0, now;

	if (status != XINA_JOIN_OK || epoch != xina_epoch_now(ep))
		return 0;
	/*
	 * A clock, as a worker's nonce: the upper job takes no join older
	 * than itself less XINA_JOIN_SKEW_MS, and a rack job may be years
	 * older than its upper job.  CLOCK_TAI is never behind the workers'
	 * CLOCK_REALTIME (xinactl starts the count there).
	 */
	now = bpf_ktime_get_tai_ns();
	bpf_spin_lock(&up->lock);
	if (up->rack_epoch != epoch) {
		if (up->want != epoch || up->status != XINA_UP_PENDING) {
			up->nonce = now > up->nonce ? now : up->nonce + 1;
			up->want = epoch;
			up->status = XINA_UP_PENDING;
		}
		nonce = up->nonce;
	}
	bpf_spin_unlock(&up->lock);
	return nonce;
}

/*
 * The upper switch's reply to the rack's join: an epoch granted for the
 * rack epoch the join was for, or a refusal (the next member join asks
 * again with a new nonce).  A BAD_KEY echoes the join's tag: one that
 * echoes the latest join's is counted as a refusal, any other as drop_auth
 * (a forgery, or a reply to an older join); nothing else changes, since
 * whoever saw the join can forge the echo.
 */
static __always_inline int xina_up_join_reply(struct xina_hdr *xh,
					      struct xina_up *up,
					      struct xina_up_counters *uc)
{
	__u32 status = bpf_ntohl(xh->round), epoch = bpf_ntohl(xh->epoch);
	__u64 nonce = bpf_be64_to_cpu(xh->offset);
	int ok = 0;

	if (bpf_ntohs(xh->rank) != up->rank || status > XINA_JOIN_BUSY) {
		upstat_inc(uc, XINA_UPSTAT_DROP_STALE);
		return XDP_DROP;
	}
	if (status == XINA_JOIN_BAD_KEY) {
		upstat_inc(uc, nonce == up->nonce && xh->tag == up->join_tag ?
			       XINA_UPSTAT_JOIN_REFUSED : XINA_UPSTAT_DROP_AUTH);
		return XDP_DROP;
	}
	if (bpf_cpu_to_be64(xina_tag_words(up->kmine[0], up->kmine[1],
					   (const __u64 *)xh, 0)) != xh->tag) {
		upstat_inc(uc, XINA_UPSTAT_DROP_AUTH);
		return XDP_DROP;
	}
	if ((status == XINA_JOIN_OK) != (epoch != 0)) {
		upstat_inc(uc, XINA_UPSTAT_DROP_STALE);
		return XDP_DROP;
	}
	bpf_spin_lock(&up->lock);
	if (nonce == up->nonce && up->want &&
	    up->status == XINA_UP_PENDING) {
		ok = 1;
		up->status = status;
		if (status == XINA_JOIN_OK) {
			up->epoch = epoch;
			up->rack_epoch = up->want;
			up->want = 0;
		}
	}
	bpf_spin_unlock(&up->lock);
	if (!ok)
		upstat_inc(uc, XINA_UPSTAT_DROP_STALE);
	else
		upstat_inc(uc, status == XINA_JOIN_OK ? XINA_UPSTAT_JOIN_OK :
					XINA_UPSTAT_JOIN_REFUSED);
	return XDP_DROP;
}

/*
 * The upper job's result of a round: if the rack's version of that round
 * went up and waits on it, it becomes the rack's result, for every member
 * the first time, then for the member whose retransmission sent the
 * partial up again (meta->up_to; every member if another asked meanwhile,
 * xina_claim()).  One per time the partial went up
 * (meta->up_wait): another copy (the answer to an earlier send, a
 * duplicate, a replay) is dropped, so that no copy of a result goes down
 * more often than the rack asks for one, which its hold bounds.  The
 * version keeps its partial: a later retransmission sends it up again,
 * and the upper switch answers.
 */
static __always_inline int xina_up_result(struct xdp_md *ctx,
					  struct xina_pkt *pkt,
					  const struct xina_job *job,
					  struct xina_up *up,
					  struct xina_up_counters *uc)
{
	struct xina_scratch *s = xina_scratch_get();
	struct xina_hdr *xh = pkt->xh;
	const struct xina_nhkey *nhk, *upnh;
	__u32 slot, round, idx, epoch, re;
	struct xina_meta *m;
	__u32 to = XINA_MARK_ALL;
	__u64 sent, now;
	int ok, resent;

	nhk = bpf_map_lookup_elem(&xina_nhkeys, &job->idx);
	upnh = bpf_map_lookup_elem(&xina_upnh, &job->idx);
	if (!nhk || !upnh || !s || xh->rank || xh->flags) {
		upstat_inc(uc, XINA_UPSTAT_DROP_STALE);
		return XDP_DROP;
	}
	if (xina_tag_check(ctx, pkt, up->kres, upnh, s)) {
		upstat_inc(uc, XINA_UPSTAT_DROP_AUTH);
		return XDP_DROP;
	}
	bpf_spin_lock(&up->lock);
	epoch = up->epoch;
	re = up->rack_epoch;
	bpf_spin_unlock(&up->lock);
	slot = bpf_ntohl(xh->slot);
	round = bpf_ntohl(xh->round);
	if (!re || bpf_ntohl(xh->epoch) != epoch || slot >= job->slots ||
	    pkt->count > job->elems) {
		upstat_inc(uc, XINA_UPSTAT_DROP_STALE);
		return XDP_DROP;
	}
	idx = job->slot_base + 2 * slot + (round & 1);
	m = xina_meta_of(idx);
	if (!m) {
		upstat_inc(uc, XINA_UPSTAT_DROP_STALE);
		return XDP_DROP;
	}
	now = bpf_ktime_get_ns();
	bpf_spin_lock(&m->lock);
	ok = m->epoch == re && m->round == round && m->complete &&
	     m->up_wait && m->count == pkt->count && m->op == xh->op &&
	     m->dtype == xh->dtype;
	sent = m->up_ns;
	resent = m->up_resent;
	/* later answers (to resends, or duplicates) are no sample */
	if (ok) {
		if (m->up_got)
			to = m->up_to;
		m->up_resent = 1;
		m->up_wait = 0;
		m->up_got = 1;
	}
	bpf_spin_unlock(&m->lock);
	if (!ok) {
		upstat_inc(uc, XINA_UPSTAT_DROP_STALE);
		return XDP_DROP;
	}
	if (!resent && now > sent)
		xina_up_rtt(up, now - sent);
	xh->job = bpf_htonl(job->id);
	xh->epoch = bpf_htonl(re);
	/* exp and aux: the upper result's (aux the MAX over every rack) */
	xina_result_hdr(xh, job, xh->exp, xh->aux,
			xina_nh_staged(s, nhk, pkt->count));
	upstat_inc(uc, XINA_UPSTAT_RESULT);
	return xina_pass_marked(ctx, job->id, to);
}

/* The upper job's bucket of @id in xina_upjobs, as xina_job_find(). */
static __always_inline struct xina_upjob *xina_upjob_find(__u32 id)
{
	struct xina_upjob *uj;
	__u32 p, b;

#pragma unroll
	for (p = 0; p < XINA_JOB_PROBES; p++) {
		b = xina_job_bucket(id, p);
		uj = bpf_map_lookup_elem(&xina_upjobs, &b);
		if (uj && uj->up == id && id)
			return uj;
	}
	return NULL;
}

/*
 * A result or a join reply: from the upper switch of the job that hands
 * up to its job id, else malformed (as any result a switch without that
 * uplink gets).  Only the upper switch's address and port, and then only
 * a tag that verifies, reach any state.
 */
static __always_inline int xina_up_rx(struct xdp_md *ctx,
				      struct xina_pkt *pkt)
{
	struct xina_hdr *xh = pkt->xh;
	struct xina_up_counters *uc;
	struct xina_upjob *uj;
	struct xina_job *job;
	struct xina_up *up;
	__u32 id = bpf_ntohl(xh->job);

	uj = xina_upjob_find(id);
	job = uj ? xina_job_find(uj->job) : NULL;
	if (!job || job->idx >= XINA_MAX_JOBS) {
		gstat_inc(XINA_GSTAT_MALFORMED);
		return XDP_DROP;
	}
	up = xina_up_of(job->idx);
	uc = bpf_map_lookup_elem(&xina_upstats, &job->idx);
	if (!up || !uc || up->job != id) {
		gstat_inc(XINA_GSTAT_MALFORMED);
		return XDP_DROP;
	}
	if (pkt->iph->saddr != up->addr || pkt->udp->source != up->port ||
	    pkt->iph->daddr != up->saddr) {
		upstat_inc(uc, XINA_UPSTAT_DROP_FOREIGN);
		return XDP_DROP;
	}
	if (xh->type == XINA_T_JOIN_REPLY)
		return xina_up_join_reply(xh, up, uc);
	return xina_up_result(ctx, pkt, job, up, uc);
}

/*
 * Make this CPU's part @mine @c's round, if it holds another: ->epoch,
 * then ->round with a fully ordered exchange, before any value of the
 * round is stored (see xina_put_kept()).  1 if it did (the part's values
 * are another round's), 0 if it held the round already.
 */
static __always_inline int xina_part_open(struct xina_part *mine,
					  const struct xina_contrib *c)
{
	if (mine->epoch == c->epoch && mine->round == c->round)
		return 0;
	mine->epoch = c->epoch;
	__sync_lock_test_and_set(&mine->round, c->round);
	return 1;
}

static __always_inline int xina_aggregate(struct xdp_md *ctx,
					  const struct xina_job *job,
					  const struct xina_nhkey *nhk,
					  const struct xina_epoch *ep,
					  struct xina_member *member,
					  struct xina_pkt *pkt,
					  const struct xina_scratch *s,
					  struct xina_counters *ctr,
					  struct xina_up *up,
					  struct xina_up_counters *uc)
{
	struct xina_hdr *xh = pkt->xh;
	struct xina_contrib c = {
		.epoch = bpf_ntohl(xh->epoch),
		.round = bpf_ntohl(xh->round),
		.rank = bpf_ntohs(xh->rank),
		.count = pkt->count,
		.aux = (__s32)bpf_ntohl(xh->aux),
		.dtype = xh->dtype,
		.op = xh->op,
		.exp = xh->exp,
	};
	__u32 me = bpf_get_smp_processor_id();
	const struct xina_nhkey *upnh = NULL;
	struct xina_kept kept = {};
	struct xina_part *mine;
	struct xina_meta *m;
	__u32 idx, how;

	if (up) {
		upnh = bpf_map_lookup_elem(&xina_upnh, &job->idx);
		if (!upnh || !uc) {
			stat_inc(ctr, XINA_STAT_DROP_RANGE);
			return XDP_DROP;
		}
		c.now = bpf_ktime_get_ns();
		c.hold_ns = xina_up_hold(up);
	}
	idx = job->slot_base + 2 * bpf_ntohl(xh->slot) + (c.round & 1);
	m = xina_meta_of(idx);
	mine = xina_part_mine(idx);
	/* A CPU the fold loop would not visit must not hold a partial. */
	if (!m || !mine || me >= nr_cpus || me >= XINA_MAX_CPUS) {
		stat_inc(ctr, XINA_STAT_DROP_RANGE);
		return XDP_DROP;
	}

	switch (xina_claim(m, &c, ep, &kept)) {
	case XINA_CLAIM_ADD:
		break;
	case XINA_CLAIM_RETRANS:
		if (pkt->train) {
			/* libxina resends one datagram per packet */
			stat_inc(ctr, XINA_STAT_DUP);
			return XDP_DROP;
		}
		if (up)
			return xina_up_answer(ctx, pkt, idx, up, &kept, ctr,
					      uc);
		return xina_answer(ctx, pkt, idx, &kept, ctr);
	case XINA_CLAIM_HELD:
		upstat_inc(uc, XINA_UPSTAT_HELD);
		return XDP_DROP;
	case XINA_CLAIM_DUP:
		stat_inc(ctr, XINA_STAT_DUP);
		return XDP_DROP;
	case XINA_CLAIM_STALE:
		stat_inc(ctr, XINA_STAT_STALE);
		return XDP_DROP;
	case XINA_CLAIM_OP:
		stat_inc(ctr, XINA_STAT_DROP_OP);
		return XDP_DROP;
	case XINA_CLAIM_EPOCH:
		stat_inc(ctr, XINA_STAT_DROP_EPOCH);
		return XDP_DROP;
	default:
		stat_inc(ctr, XINA_STAT_DROP_RANGE);
		return XDP_DROP;
	}

	xina_learn(ctx, member, pkt);

	/*
	 * This CPU's partial: nobody else writes it, no atomics needed for
	 * the values.  A new (epoch, round) is published before any value of
	 * it: ->epoch, then ->round with a fully ordered exchange, a full
	 * barrier before the commit's stores (see xina_answer()).  A ZERO
	 * contribution adds nothing (zero is its op's identity): the partial
	 * keeps whatever round it holds, and the fold skips it if that is
	 * not this one.
	 */
	if (!pkt->zero) {
		how = xina_part_open(mine, &c) ? XINA_HOW_COPY :
						 xina_how(c.dtype, c.op);
		/*
		 * Cannot fail (the payload length was checked); and the
		 * claim is made, so done must be bumped in any case or the
		 * round would hang.
		 */
		xina_commit(mine, s, c.count, how);
	}
	stat_inc(ctr, XINA_STAT_CONTRIB);

	if (!xina_done(m, kept.gen, job->members ? job->members :
						  job->workers))
		return XDP_DROP;	/* consumed */
	/* the last add, a ZERO on a CPU that had none of the round: zeros */
	if (xina_part_open(mine, &c))
		xina_part_zero(mine, c.count);
	if (up)
		return xina_up_complete(ctx, job, up, upnh, pkt, m, idx, me,
					mine, &c, ctr, uc);
	return xina_complete(ctx, job, nhk, pkt, m, idx, me, mine, &c, ctr);
}

/* ---- join handshake -----------------------------------------------------
 *
 * include/uapi/linux/xina.h ("Join handshake") has the rules,
 * bpf/xina_join.h the decision, shared with xina.ko and xina-swagg.  A
 * join never touches slot memory; its reply is the join's own frame, cut to
 * the bare header (xina_bare()), so that it is never longer than the join.
 */

/*
 * Did a round of job @idx complete within the last XINA_JOIN_BUSY_MS, on
 * any CPU?  A time a little ahead of this CPU's clock (another CPU read it
 * later) counts as recent.
 */
static __always_inline int xina_busy(__u32 idx)
{
	__u64 now = bpf_ktime_get_ns(), *t;
	__u32 cpu;

	for (cpu = 0; cpu < XINA_MAX_CPUS; cpu++) {
		if (cpu >= nr_cpus)
			break;
		t = bpf_map_lookup_percpu_elem(&xina_active, &idx, cpu);
		if (t && *t &&
		    (__s64)(now - *t) < (__s64)XINA_JOIN_BUSY_MS * 1000000)
			return 1;
	}
	return 0;
}

/* The join's header, made its reply: @status, @epoch, the job's geometry. */
static __always_inline void xina_join_reply_hdr(struct xina_hdr *xh,
						const struct xina_job *job,
						__u32 status, __u32 epoch)
{
	xh->type = XINA_T_JOIN_REPLY;
	xh->slot = bpf_htonl(job->slots);
	xh->aux = bpf_htonl(job->elems);
	xh->round = bpf_htonl(status);
	xh->epoch = bpf_htonl(epoch);
}

/*
 * A join from rank @rank's configured address whose tag does not verify
 * under the rank's key: the worker's key file is not the job's.  Answered
 * XINA_JOIN_BAD_KEY with the join's own tag echoed (the switch shares no
 * key with the sender), where the member was learned if it was, else back
 * out of the port the join came in on.  Nothing changes.
 */
static __always_inline int xina_join_bad_key(struct xdp_md *ctx,
					     const struct xina_job *job,
					     __u32 rank,
					     const struct xina_member *member)
{
	struct xina_hdr *xh = xina_bare(ctx);

	if (!xh)
		return XDP_DROP;
	xina_join_reply_hdr(xh, job, XINA_JOIN_BAD_KEY, 0);
	if (member->ifindex)
		return xina_pass_marked(ctx, job->id, rank);
	return xina_bounce(ctx);
}

/*
 * A well-formed join of @job: checked as a contribution is (member, then
 * the tag over the bare header), decided under the job's join lock,
 * answered to the member where it is (the path of an answer to a
 * retransmission: xina_fanout, for the rank alone).  Only a fresh join
 * (a nonce above the member's latest) moves where the member is: a resend
 * or a replay is answered where it was learned.
 */
static __always_inline int xina_join(struct xdp_md *ctx,
				     const struct xina_job *job,
				     struct xina_epoch *ep,
				     struct xina_pkt *pkt,
				     struct xina_counters *ctr,
				     struct xina_up *up,
				     struct xina_up_counters *uc)
{
	struct xina_hdr *xh = pkt->xh;
	__u32 rank = bpf_ntohs(xh->rank);
	struct xina_member *member;
	struct xina_join_mbr *jm;
	__u32 key, status, epoch, run;
	int fits, busy, v;
	__u64 nonce;

	member = xina_member_from(job, pkt);
	if (!member) {
		stat_inc(ctr, XINA_STAT_DROP_MEMBER);
		return XDP_DROP;
	}
	if (bpf_cpu_to_be64(xina_tag_words(member->key[0], member->key[1],
					   (const __u64 *)xh, 0)) != xh->tag) {
		stat_inc(ctr, XINA_STAT_DROP_AUTH);
		return xina_join_bad_key(ctx, job, rank, member);
	}
	key = job->idx * XINA_MAX_WORKERS + rank;
	jm = bpf_map_lookup_elem(&xina_joins, &key);
	if (!jm) {
		stat_inc(ctr, XINA_STAT_DROP_MEMBER);
		return XDP_DROP;
	}
	fits = bpf_ntohl(xh->slot) <= job->slots &&
	       bpf_ntohl(xh->aux) <= job->elems &&
	       xh->dtype == XINA_DTYPE_INT32;
	busy = xina_busy(job->idx);
	nonce = bpf_be64_to_cpu(xh->offset);
	run = bpf_ntohl(xh->epoch);

	bpf_spin_lock(&ep->lock);
	v = xina_join_decide(&ep->j, jm, rank, nonce, run, fits, busy);
	status = jm->status;
	epoch = jm->epoch;
	run = ep->j.run;
	bpf_spin_unlock(&ep->lock);

	switch (v) {
	case XINA_JD_STALE:
		stat_inc(ctr, XINA_STAT_JOIN_STALE);
		return XDP_DROP;
	case XINA_JD_RESEND:
		break;
	case XINA_JD_NEW_EPOCH:
		stat_inc(ctr, XINA_STAT_EPOCH_NEW);
		xina_learn(ctx, member, pkt);
		break;
	default:
		xina_learn(ctx, member, pkt);
		break;
	}
	stat_inc(ctr, status == XINA_JOIN_OK ? XINA_STAT_JOIN :
					       XINA_STAT_JOIN_REFUSED);

	/* an uplink: the upper epoch first (see "two levels") */
	nonce = up ? xina_up_join_wait(up, ep, status, epoch) : 0;
	xh = xina_bare(ctx);
	if (!xh)
		return XDP_DROP;
	if (nonce)
		return xina_up_join(ctx, job, up, nonce, run, uc);
	xina_join_reply_hdr(xh, job, status, epoch);
	/*
	 * ZERO contributions: a job with an uplink builds its partial in
	 * the frame of the round's last contribution, which must hold it.
	 */
	xh->flags = up ? 0 : XINA_F_ZERO;
	xh->tag = bpf_cpu_to_be64(xina_tag_words(member->key[0],
						 member->key[1],
						 (const __u64 *)xh, 0));
	return xina_pass_marked(ctx, job->id, rank);
}

#ifdef XINA_KFUNC
/* Module backend: slot memory in xina.ko, see kmod/xina_kf.bpf.h. */
#include "xina_kf.bpf.h"
#endif

/*
 * Job @id and its counters, NH key and epoch; NULL, counted as no_job,
 * if there is no such job (or it is going: a map entry already gone).
 */
static __always_inline struct xina_job *
xina_job_maps(__u32 id, struct xina_counters **ctr, struct xina_nhkey **nhk,
	      struct xina_epoch **ep)
{
	struct xina_job *job = xina_job_find(id);

	if (!job || job->idx >= XINA_MAX_JOBS)
		goto none;
	*ctr = bpf_map_lookup_elem(&xina_stats, &job->idx);
	*nhk = bpf_map_lookup_elem(&xina_nhkeys, &job->idx);
	*ep = bpf_map_lookup_elem(&xina_epochs, &job->idx);
	if (*ctr && *nhk && *ep)
		return job;
none:
	gstat_inc(XINA_GSTAT_NO_JOB);
	return NULL;
}

/* ---- trains ------------------------------------------------------------
 *
 * A port in generic XDP mode takes a worker's GSO train (UDP_SEGMENT) as
 * one frame: one set of Ethernet, IPv4 and UDP headers, then the
 * datagrams' payloads back to back, each a xina header and its elements,
 * every one as long as the first but the last (the kernel segments a
 * train at the size of its first datagram).  On a veth that is the
 * cheaper transport by far: the train crosses the pair as one skb, and is
 * copied for XDP once (scripts/bench/floor, shape gtrain).
 *
 * Each datagram is taken as if it came alone (xina_train_one(): the same
 * checks, counters and claim), its header copied out to this CPU's
 * scratch, its elements staged with bpf_xdp_load_bytes() and its result
 * written back in place.  If every datagram completed its round, the
 * frame is a train of results, and xina_fanout sends it to every member
 * whole (a clone of a GSO skb; libxina reads it with UDP_GRO).  If none
 * did, it was taken as lone contributions are: dropped.  If some did and
 * some did not (train_part), it is sent on whole too, each datagram that
 * is not a result made a filler (xina_train_filler()) that the workers
 * ignore: a frame cannot be sent on in part, and holding the results back
 * for the members' resends cost the 4-worker rack up to a quarter of its
 * goodput (the resent slots' next rounds then go out in other groups on
 * each worker, and more trains complete in part).  The common cases are
 * the first two: the workers send the same groups of slots, and the last
 * worker's train completes them all.
 */

/*
 * The datagram of @dlen bytes at offset @at of a train of job @job_id
 * (network order), taken as if it came alone: XDP_PASS if it is now its
 * round's result (header and elements written over it), else XDP_DROP
 * (counted as a lone datagram would be).  A global function, verified
 * once: its header is a copy in this CPU's scratch, its elements are read
 * and written at their offset.
 */
__noinline int xina_train_one(struct xdp_md *ctx, __u32 at, __u32 dlen,
			      __be32 job_id)
{
	void *data = (void *)(long)ctx->data;
	struct xina_scratch *s = xina_scratch_get();
	struct xina_member *member = NULL;
	struct xina_pkt pkt = { .train = 1 };
	struct xina_counters *ctr;
	struct xina_nhkey *nhk;
	struct xina_epoch *ep;
	struct xina_job *job;
	struct xina_hdr *xh;
	__u32 count;
	int err;

	/* the train's headers, parsed by xina_parse() (no IPv4 options) */
	pkt.eth = data;
	pkt.iph = (void *)(pkt.eth + 1);
	pkt.udp = (void *)(pkt.iph + 1);
	if (!s || (void *)(pkt.udp + 1) > (void *)(long)ctx->data_end)
		return XDP_DROP;	/* cannot be */
	xh = &s->xh;
	if (bpf_xdp_load_bytes(ctx, at, xh, sizeof(*xh)))
		goto malformed;
	/* the checks of a lone datagram's header (xina_check_hdr()) */
	count = xina_hdr_count(xh);
	if (!count || xh->type != XINA_T_CONTRIB || xh->job != job_id ||
	    dlen != xina_dgram_len(xh, count))
		goto malformed;
	pkt.zero = !!(xh->flags & XINA_F_ZERO);
	pkt.xh = xh;
	pkt.count = count;
	pkt.off = at + sizeof(*xh);

	job = xina_job_maps(bpf_ntohl(job_id), &ctr, &nhk, &ep);
	if (!job)
		return XDP_DROP;
	stat_inc(ctr, XINA_STAT_RX);
	err = xina_check_job(ctx, job, nhk, &pkt, s, xina_epoch_now(ep),
			     &member);
	if (err >= 0) {
		stat_inc(ctr, err);
		return XDP_DROP;
	}
	if (xina_aggregate(ctx, job, nhk, ep, member, &pkt, s, ctr, NULL,
			   NULL) != XDP_PASS)
		return XDP_DROP;
	if (bpf_xdp_store_bytes(ctx, at, xh, sizeof(*xh)))
		return XDP_DROP;	/* cannot be: it was read there */
	return XDP_PASS;
malformed:
	gstat_inc(XINA_GSTAT_MALFORMED);
	return XDP_DROP;
}

/*
 * Datagram @at (@dlen bytes) of a train sent on whole, which is not a
 * result: made a filler, a result of epoch 0 (no run has it: every worker
 * ignores it, before its tag) whose elements are zero (a member's
 * contribution goes to no one else) and whose tag is 0.  0, or -1 if the
 * frame could not be written (cannot be: it was read there).
 */
__noinline int xina_train_filler(struct xdp_md *ctx, __u32 at, __u32 dlen)
{
	struct xina_scratch *s = xina_scratch_get();
	__u32 i, off, n;

	if (!s || dlen < sizeof(struct xina_hdr))
		return -1;
	if (bpf_xdp_load_bytes(ctx, at, &s->xh, sizeof(s->xh)))
		return -1;
	s->xh.type = XINA_T_RESULT;
	s->xh.flags = 0;
	s->xh.rank = 0;
	s->xh.epoch = 0;
	s->xh.tag = 0;
	if (bpf_xdp_store_bytes(ctx, at, &s->xh, sizeof(s->xh)))
		return -1;
	/* volatile: a loop clang would make a memset(), which BPF has not */
	for (i = 0; i < XINA_CHUNK / 2; i++)
		*(volatile __u64 *)&s->q[i] = 0;
	off = sizeof(struct xina_hdr);
	for (i = 0; i <= XINA_MAX_ELEMS / XINA_CHUNK; i++) {
		if (off >= dlen)
			break;
		/* 1..XINA_CHUNK * 4 bytes, bounded as xina_chunk_len() does */
		n = dlen - off;
		if (n > XINA_CHUNK * 4)
			n = XINA_CHUNK * 4;
		n = xina_opaque(n - 1);
		if (n >= XINA_CHUNK * 4)
			return -1;
		if (bpf_xdp_store_bytes(ctx, at + off, s->w, n + 1))
			return -1;
		off += n + 1;
	}
	return 0;
}

/*
 * Does the fast path refuse the trains of job @job_id (network order)?
 * Those of a job with an uplink (xina.ko's jobs have none).  A train of
 * no job is not refused: each of its datagrams is then counted as no_job,
 * as it would be alone, by both backends.  A global function: inlined,
 * it took xina_train_run()'s frame past 64 bytes in xina_kf.bpf.o, and
 * the chain below it past the 512 bytes 6.1 allows.
 */
__noinline int xina_train_refused(__be32 job_id)
{
	struct xina_job *job;

#ifdef XINA_KFUNC
	if (xina_kf_on())
		return 0;
#endif
	job = xina_job_find(bpf_ntohl(job_id));
	return job && job->idx < XINA_MAX_JOBS && xina_up_of(job->idx);
}

/*
 * The datagram of @dlen bytes at offset @at of train @pkt, of job @job_id,
 * taken by this program's maps or by xina.ko: XDP_PASS if it is now its
 * round's result.  The source is read from @pkt on xina.ko's path only,
 * whose kfunc leaves packet pointers valid; the job id was read before
 * the loop (the map backend's global function may not).  No more locals
 * in xina_train_run(): its frame is in the 512 bytes 6.1 allows the
 * chain.
 */
static __always_inline int xina_train_take(struct xdp_md *ctx,
					   struct xina_pkt *pkt, __u32 at,
					   __u32 dlen, __be32 job_id)
{
#ifdef XINA_KFUNC
	if (xina_kf_on())
		return xina_kf_train_one(ctx, at, dlen, pkt->iph->saddr,
					 pkt->udp->source);
#endif
	return xina_train_one(ctx, at, dlen, job_id);
}

/*
 * A train (xina_train(): @pkt is its first datagram, the lengths of the
 * frame checked): each datagram taken, the frame sent on to every member
 * if all are results now.  Jobs with an uplink take no trains, nor does
 * any job trains of more than XINA_TRAIN_MAX datagrams (a socket's are at
 * most 64 or 128, by kernel).  A loop the verifier walks, over a
 * global function it checks once: not a bpf_loop(), whose callback would
 * be one more frame on the stack (512 bytes for all of them, 6.1 counting
 * each in 32-byte steps).  Not inlined into xina_xdp, whose frame is then
 * small.
 */
#define XINA_TRAIN_MAX	128

static __noinline int xina_train_run(struct xdp_md *ctx, struct xina_pkt *pkt)
{
	struct xina_scratch *s = xina_scratch_get();
	__be32 job_id = pkt->xh->job;
	__u32 i, at, n, seg, len;

	gstat_inc(XINA_GSTAT_TRAIN);
	if (!s || pkt->xh->type != XINA_T_CONTRIB || xina_train_refused(job_id))
		goto refuse;
	/* xina_check_hdr() counted the first datagram's elements, no more */
	len = ntohs_bounded(pkt->udp->len) - sizeof(struct udphdr);
	seg = sizeof(struct xina_hdr);
	if (!(pkt->xh->flags & XINA_F_ZERO))
		seg += ntohs_bounded(pkt->xh->count) * 4;
	n = (len + seg - 1) / seg;
	if (n > XINA_TRAIN_MAX)
		goto refuse;
	/*
	 * The results are counted in memory: a count the verifier tracked
	 * would differ on every path through the loop, and no path would
	 * prune another.
	 */
	s->results = 0;
	s->done[0] = 0;
	s->done[1] = 0;
	for (i = 0, at = 0; i < XINA_TRAIN_MAX; i++, at += seg) {
		if (i >= n)
			break;
		if (xina_train_take(ctx, pkt, XINA_HDR_OFF + at,
				    len - at < seg ? len - at : seg,
				    job_id) != XDP_PASS)
			continue;
		s->results++;
		s->done[i / 64] |= 1ULL << (i % 64);
	}
	if (!s->results)
		return XDP_DROP;
	if (s->results != n) {
		gstat_inc(XINA_GSTAT_TRAIN_PART);
		for (i = 0, at = 0; i < XINA_TRAIN_MAX; i++, at += seg) {
			if (i >= n)
				break;
			if (s->done[i / 64] & (1ULL << (i % 64)))
				continue;
			if (xina_train_filler(ctx, XINA_HDR_OFF + at,
					      len - at < seg ? len - at : seg))
				return XDP_DROP;
		}
	}
	return xina_pass_marked(ctx, bpf_ntohl(job_id), XINA_MARK_ALL);
refuse:
	gstat_inc(XINA_GSTAT_TRAIN_REFUSED);
	return XDP_DROP;
}

/*
 * One datagram (xina_parse(): @pkt well formed).  A subprogram of its own
 * rather than inlined into xina_xdp: the stack of xina_xdp is then small,
 * and a train's path (xina_train_run(), xina_train_one() and the element
 * loops below it) fits in the 512 bytes a program's frames may take
 * together.  Static:
 * verified in its caller's context, so @pkt may hold packet pointers.
 */
static __noinline int xina_xdp_one(struct xdp_md *ctx, struct xina_pkt *pkt)
{
	struct xina_member *member = NULL;
	struct xina_up_counters *uc = NULL;
	struct xina_counters *ctr;
	struct xina_up *up = NULL;
	struct xina_scratch *s;
	struct xina_nhkey *nhk;
	struct xina_epoch *ep;
	struct xina_job *job;
	int err;

#ifdef XINA_KFUNC
	/* xina.ko has no uplinks: what an upper switch sends is malformed */
	if (xina_kf_on()) {
		if ((pkt->xh->type != XINA_T_CONTRIB &&
		     pkt->xh->type != XINA_T_JOIN) || pkt->zero) {
			gstat_inc(XINA_GSTAT_MALFORMED);
			return XDP_DROP;
		}
		return xina_kf_xdp(ctx, pkt);
	}
#endif
	if (pkt->xh->type == XINA_T_RESULT ||
	    pkt->xh->type == XINA_T_JOIN_REPLY)
		return xina_up_rx(ctx, pkt);

	job = xina_job_maps(bpf_ntohl(pkt->xh->job), &ctr, &nhk, &ep);
	if (!job)
		return XDP_DROP;
	stat_inc(ctr, XINA_STAT_RX);
	up = xina_up_of(job->idx);
	if (up)
		uc = bpf_map_lookup_elem(&xina_upstats, &job->idx);
	if (pkt->zero && up) {
		/* not offered to the job's members: see xina_join() */
		gstat_inc(XINA_GSTAT_MALFORMED);
		return XDP_DROP;
	}
	if (pkt->xh->type == XINA_T_JOIN)
		return xina_join(ctx, job, ep, pkt, ctr, up, uc);

	s = xina_scratch_get();	/* NULL: the tag fails to verify */
	err = xina_check_job(ctx, job, nhk, pkt, s, xina_epoch_now(ep),
			     &member);
	if (err >= 0) {
		stat_inc(ctr, err);
		return XDP_DROP;
	}
	return xina_aggregate(ctx, job, nhk, ep, member, pkt, s, ctr, up, uc);
}

/*
 * Does the frame carry this switch's mark (either kind) where xina_fanout
 * looks for one: its first bytes, or those after its Ethernet header,
 * where TC's view of a frame starts after generic XDP on some kernels?  No
 * frame that comes in does unless it was made to: a mark lives only
 * between this program and xina_fanout on this box.  A packet capture on
 * the switch's ports shows the cookie in every result's destination MAC,
 * and a frame made to carry it would be fanned out, or redirected as a
 * partial, if it were passed on.
 */
static __always_inline int xina_mark_forged(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	const __u64 want = xina_cookie | XINA_MARK_UP;
	__u64 c;

	if (!xina_cookie || data + sizeof(struct ethhdr) + sizeof(c) > end)
		return 0;
	__builtin_memcpy(&c, data, sizeof(c));
	if ((c | XINA_MARK_UP) == want)
		return 1;
	__builtin_memcpy(&c, data + sizeof(struct ethhdr), sizeof(c));
	return (c | XINA_MARK_UP) == want;
}

SEC("xdp.frags")
int xina_xdp(struct xdp_md *ctx)
{
	struct xina_pkt pkt = {};

	if (xina_mark_forged(ctx)) {
		gstat_inc(XINA_GSTAT_MALFORMED);
		return XDP_DROP;
	}
	switch (xina_parse(ctx, &pkt)) {
	case XINA_NOT_OURS:
		gstat_inc(XINA_GSTAT_PASS);
		return XDP_PASS;
	case XINA_MALFORMED:
		gstat_inc(XINA_GSTAT_MALFORMED);
		return XDP_DROP;
	case XINA_TRAIN:
		return xina_train_run(ctx, &pkt);
	}
	return xina_xdp_one(ctx, &pkt);
}

/* ---- result fan-out (TC) -------------------------------------------------
 *
 * A frame xina_xdp marked is a result (or an answer) whose Ethernet and
 * IPv4 headers the mark took (struct xina_mark).  For each member it is
 * for, xina_fanout writes that member's headers and hands a clone to the
 * member's port: bpf_clone_redirect() shares the payload between the
 * copies; only the first buffer of the frame (headers included) is
 * copied, when the headers of a shared frame are written.
 */

/* The headers of a copy; @pad aligns the IPv4 header for ip_csum_set(). */
struct xina_l2l4 {
	__u16		pad;
	struct ethhdr	eth;
	struct iphdr	ip;
	struct udphdr	udp;
};

#define XINA_L2L4_LEN	(sizeof(struct xina_l2l4) - sizeof(__u16))

struct xina_fan {
	struct __sk_buff	*skb;
	struct xina_l2l4	hdr;	/* xina_fan_hdr() */
	__u32			job;	/* job id */
	__u32			idx;	/* job index (map backend) */
	__u32			to;	/* rank, or XINA_MARK_ALL */
	__u32			sent;
	__u32			unknown;
};

/* Write member @m's headers into the frame and send it a copy. */
static __always_inline void xina_fan_send(struct xina_fan *f,
					  const struct xina_member *m)
{
	struct xina_l2l4 h = f->hdr;

	__builtin_memcpy(h.eth.h_dest, m->mac, ETH_ALEN);
	__builtin_memcpy(h.eth.h_source, m->sw_mac, ETH_ALEN);
	h.ip.saddr = m->sw_addr;
	h.ip.daddr = m->addr;
	ip_csum_set(&h.ip);
	h.udp.source = bpf_htons(xina_port);
	h.udp.dest = m->rport;
	h.udp.check = 0;
	if (bpf_skb_store_bytes(f->skb, 0, &h.eth, XINA_L2L4_LEN, 0) ||
	    bpf_clone_redirect(f->skb, m->ifindex, 0)) {
		f->unknown++;
		return;
	}
	f->sent++;
}

/* The copy for rank @rank, if the frame is for it (a bpf_loop() callback). */
static long xina_fan_one(__u32 rank, struct xina_fan *f)
{
	struct xina_member *m;

	if (f->to != XINA_MARK_ALL && f->to != rank)
		return 0;
	m = xina_member_of(f->idx, rank);
	if (!m || !m->addr)
		return 0;
	if (!m->ifindex)
		f->unknown++;
	else
		xina_fan_send(f, m);
	return 0;
}

#ifdef XINA_KFUNC
#include "xina_kf_tc.bpf.h"
#endif

/*
 * A result whose last contribution was a ZERO one (xina_pass_fill()):
 * grow the packet from its header to the @mark->fill words of the result
 * and write them, as xina_put() would have, from the part that holds
 * them.  bpf_skb_change_tail() makes the packet linear and its own, once,
 * before any copy goes out.  The part cannot move on before every member
 * had this result (round r + 2 opens only then); a restart's new epoch
 * can, and a torn copy is dropped, as xina_put_kept() drops one.
 */
static __always_inline int xina_fan_fill(struct xina_fan *f,
					 const struct xina_mark *mark)
{
	struct xina_scratch *s = xina_scratch_get();
	__u32 count = mark->fill, c, i, n, len;
	struct xina_part *part;

	part = xina_part_of(mark->idx, mark->cpu);
	if (!s || !part || count > XINA_MAX_ELEMS)
		return -1;
	len = XINA_PAYLOAD_OFF + count * 4;
	if (bpf_skb_change_tail(f->skb, len, 0))
		return -1;
	for (c = 0; c <= XINA_MAX_ELEMS / XINA_CHUNK; c++) {
		n = xina_chunk_len(0, count, c, &i);
		if (!n)
			break;
		if (xina_chunk_out(part, s, i, n))
			return -1;
		if (bpf_skb_store_bytes(f->skb, XINA_PAYLOAD_OFF + i * 4,
					s->w, n * 4, 0))
			return -1;
	}
	return xina_part_still(part, mark->epoch, mark->round) ? 0 : -1;
}

/*
 * The headers every copy starts from (xina_fan_send() writes each
 * member's addresses and ports over them): the mark took the frame's own.
 */
static __always_inline void xina_fan_hdr(struct xina_fan *f, __u32 len)
{
	f->hdr.eth.h_proto = bpf_htons(ETH_P_IP);
	f->hdr.ip.version = 4;
	f->hdr.ip.ihl = 5;
	f->hdr.ip.tot_len = bpf_htons(len - sizeof(struct ethhdr));
	f->hdr.ip.frag_off = bpf_htons(IP_DF);
	f->hdr.ip.ttl = 64;
	f->hdr.ip.protocol = IPPROTO_UDP;
	f->hdr.udp.len = bpf_htons(len - sizeof(struct ethhdr) -
				   sizeof(struct iphdr));
}

/*
 * A frame for the upper switch whose next hop had no neighbour entry
 * (xina_up_neigh()): out of device @ifindex through the kernel's
 * neighbour resolution, which writes the MAC addresses.  The mark goes
 * from them first: bpf_redirect_neigh() drops a frame whose destination
 * is multicast (bit 0 of its first byte), as a mark's may be under a
 * cookie other than xinactl's, and then no partial of the rack would
 * ever leave (each finds no entry, and none is made).
 */
static __always_inline int xina_up_resolve(struct __sk_buff *skb,
					   __u32 ifindex)
{
	__u8 none[2 * ETH_ALEN] = {};

	if (bpf_skb_store_bytes(skb, 0, none, sizeof(none), 0))
		return TC_ACT_SHOT;
	return bpf_redirect_neigh(ifindex, NULL, 0, 0);
}

/*
 * Generic XDP (dev attach ... mode generic): on 6.12 and 6.18 TC sees the
 * frame from its IPv4 header on, the mark still at the MAC header (not on
 * 6.1).  The mark alone would do it (the stack takes it for a new
 * Ethernet header and runs eth_type_trans() again), but a frame the
 * program left untouched starts there too on 6.18 (measured with
 * scripts/bench/floor's gtrain shape).  Read the mark at the MAC header
 * and give the frame its 14 bytes back (bpf_skb_change_head(), zeroed:
 * the copies get their own), so that it starts where it does after native
 * XDP.  0 if the frame is xina's.
 */
static __always_inline int xina_fan_mark_at_mac(struct __sk_buff *skb,
						struct xina_mark *mk)
{
	if (bpf_skb_load_bytes_relative(skb, 0, mk, sizeof(*mk),
					BPF_HDR_START_MAC) ||
	    (mk->cookie | XINA_MARK_UP) != (xina_cookie | XINA_MARK_UP))
		return -1;
	return bpf_skb_change_head(skb, ETH_HLEN, 0) ? -1 : 0;
}

SEC("tc")
int xina_fanout(struct __sk_buff *skb)
{
	struct xina_fan f = { .skb = skb };
	struct xina_counters *ctr;
	struct xina_mark mk;
	struct xina_job *job;

	if (!xina_cookie)
		return TC_ACT_OK;
	if ((bpf_skb_load_bytes(skb, 0, &mk, sizeof(mk)) ||
	     (mk.cookie | XINA_MARK_UP) != (xina_cookie | XINA_MARK_UP)) &&
	    xina_fan_mark_at_mac(skb, &mk))
		return TC_ACT_OK;	/* not a frame xina_xdp marked */
	if (mk.cookie != xina_cookie)	/* XINA_MARK_UP */
		return xina_up_resolve(skb, mk.job);
	f.to = mk.to;
	f.job = mk.job;
#ifdef XINA_KFUNC
	if (xina_kf_on()) {
		xina_fan_hdr(&f, skb->len);
		return xina_kf_fanout(&f);
	}
#endif
	job = xina_job_find(f.job);
	if (!job || job->idx >= XINA_MAX_JOBS)
		return TC_ACT_SHOT;	/* deleted since xina_xdp saw it */
	f.idx = job->idx;
	ctr = bpf_map_lookup_elem(&xina_stats, &f.idx);
	if (!ctr)
		return TC_ACT_SHOT;
	/* the part to fill from is one of the job's own slot versions */
	if (mk.fill && (mk.idx < job->slot_base ||
			mk.idx - job->slot_base >= 2 * job->slots)) {
		ctr->c[XINA_STAT_STALE]++;
		return TC_ACT_SHOT;
	}
	if (mk.fill && xina_fan_fill(&f, &mk)) {
		ctr->c[XINA_STAT_STALE]++;
		return TC_ACT_SHOT;
	}
	xina_fan_hdr(&f, skb->len);
	if (f.to != XINA_MARK_ALL)
		xina_fan_one(f.to, &f);
	else
		bpf_loop(job->workers, xina_fan_one, &f, 0);
	ctr->c[XINA_STAT_TX] += f.sent;
	ctr->c[XINA_STAT_TX_UNKNOWN] += f.unknown;
	return TC_ACT_SHOT;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
