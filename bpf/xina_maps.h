/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-3-Clause) */
/*
 * Layout of the BPF maps of the fast path (map backend), shared by the BPF
 * programs (bpf/) and by user space (xinactl, tests).  Not ABI: the BPF
 * object and xinactl are built and versioned together.
 *
 * Maps (pinned by name under the pin directory, default XINA_PIN_DIR, all
 * but xina_addrs, which each port's programs have for themselves):
 *
 *   xina_jobs     ARRAY     bucket               -> struct xina_job
 *                           (open addressing: job id J lives in the first
 *                            of the XINA_JOB_PROBES buckets
 *                            xina_job_bucket(J, 0..) that holds it; id 0
 *                            marks a free bucket.  No hash map on the
 *                            packet path: an array lookup is a few
 *                            instructions once the verifier inlines it)
 *   xina_members  ARRAY     job idx * XINA_MAX_WORKERS + rank
 *                                                -> struct xina_member
 *   xina_nhkeys   ARRAY     job idx              -> struct xina_nhkey
 *   xina_epochs   ARRAY     job idx              -> struct xina_epoch
 *                           (the job's epoch and who joined it: written by
 *                            the fast path on joins, under @lock; xinactl
 *                            sets a random non-zero epoch and no member
 *                            joined on "job add": a job whose epoch is 0
 *                            takes no contribution)
 *   xina_joins    ARRAY     job idx * XINA_MAX_WORKERS + rank
 *                                                -> struct xina_join_mbr
 *                           (each member's latest join, under the job's
 *                            xina_epochs lock; zeroed on "job add")
 *   xina_active   PERCPU_ARRAY job idx           -> __u64
 *                           (bpf_ktime_get_ns() of the job's last round
 *                            completed on that CPU: a join within
 *                            XINA_JOIN_BUSY_MS of it is answered busy)
 *   xina_meta     ARRAY     slot version index    -> struct xina_meta
 *   xina_vals     PERCPU_ARRAY slot version index -> struct xina_part
 *   xina_scratch  PERCPU_ARRAY 0                  -> struct xina_scratch
 *   xina_stats    PERCPU_ARRAY job idx            -> struct xina_counters
 *                           (index XINA_MAX_JOBS holds the switch-wide
 *                            enum xina_gstat counters)
 *   xina_addrs    ARRAY     0                    -> struct xina_addrs
 *                           (the switch's own addresses, those of the
 *                            port's network namespace; not pinned)
 *   xina_ups      ARRAY     job idx              -> struct xina_up
 *                           (the job's uplink to an upper switch, if it
 *                            has one: configured by xinactl, its upper
 *                            join state written by the fast path under
 *                            @lock)
 *   xina_upnh     ARRAY     job idx              -> struct xina_nhkey
 *                           (the NH key of the upper job)
 *   xina_upjobs   ARRAY     bucket               -> struct xina_upjob
 *                           (upper job id -> the job handing up to it:
 *                            the buckets and probes of xina_jobs, keyed
 *                            by the upper job's id)
 *   xina_upstats  PERCPU_ARRAY job idx           -> struct xina_up_counters
 *
 * Programs: xina_xdp (XDP, multi-buffer) aggregates on every switch port;
 * a result, and the answer to a retransmission, leave it with XDP_PASS and
 * a struct xina_mark over its first bytes, and xina_fanout (TC ingress of
 * the same port) sends one copy to each member it is for, out of the port
 * that member is behind (bpf_clone_redirect).
 *
 * Slot versions: a job owns the contiguous range
 * [slot_base, slot_base + 2 * slots) of xina_meta and xina_vals; slot s,
 * version v lives at slot_base + 2 * s + v.  xinactl allocates the range on
 * "job add" and zeroes it (meta and every CPU's partial), so a fresh job
 * starts from a clean state.
 */
#ifndef XINA_MAPS_H
#define XINA_MAPS_H

#include <linux/types.h>
#include <linux/bpf.h>
#include "../include/uapi/linux/xina.h"
#include "xina_auth.h"
#include "xina_join.h"
#include "xina_rtt.h"

#define XINA_PIN_DIR		"/run/xina"	/* on a bpffs xinactl mounts */
#define XINA_SLOT_VERSIONS	1024		/* default xina_meta entries */
#define XINA_MAX_CPUS		256		/* bound of the fold loop */
#define XINA_JOB_BUCKETS	256		/* xina_jobs entries */
#define XINA_JOB_PROBES		4		/* buckets a job id may use */
#define XINA_CHUNK		512		/* elements per load/store of
						 * the part of a frame beyond
						 * its first buffer */

/* Program and map names, as found in the object and under the pin dir. */
#define XINA_PROG_MAIN		"xina_xdp"	/* SEC("xdp.frags") */
#define XINA_PROG_FANOUT	"xina_fanout"	/* SEC("tc"), clsact ingress */
#define XINA_PROG_PASS		"xina_pass"	/* SEC("xdp") on worker-side veth */

/* Probe @probe (0..XINA_JOB_PROBES-1) of job @id in xina_jobs. */
static inline __u32 xina_job_bucket(__u32 id, __u32 probe)
{
	return ((id * 2654435761u >> 24) + probe) & (XINA_JOB_BUCKETS - 1);
}

/*
 * Keys (bpf/xina_auth.h) are derived from the job's secret by xinactl and
 * written here: the secret itself never reaches the maps.
 */
struct xina_job {
	__u64	kres[2];	/* K_res: the key of results */
	__u32	id;		/* 0: free bucket */
	__u32	idx;		/* 0..XINA_MAX_JOBS-1: stats and members index */
	__u32	slot_base;	/* first xina_meta/xina_vals index of the job */
	__u32	slots;
	__u16	workers;
	__u16	elems;		/* max elements per packet and slot */
	__u32	flags;		/* XINA_JOB_F_* */
	__u32	members;	/* contributions that complete a round: the
				 * configured ranks (0: @workers).  A job
				 * with an uplink may name only some of its
				 * ranks (those of its rack); the job's
				 * epoch is in xina_epochs */
};

/*
 * A job's epoch (bpf/xina_join.h).  The fast path reads @j.epoch on every
 * packet without the lock (a 32-bit load) and changes it only under it.
 */
struct xina_epoch {
	struct bpf_spin_lock	lock;
	__u32			pad;
	struct xina_join_job	j;
};

/* The NH key of a job: the payload hash under every tag. */
struct xina_nhkey {
	__u32	k[XINA_MAX_ELEMS];
};

/*
 * A member of a job.  @addr, @port and @key are configured; the rest is
 * learned from its contributions that were accepted into a round (tag
 * verified, neither duplicate nor stale) and tells xina_fanout where to
 * send its copy of a result: out of switch port @ifindex, from the address
 * and MAC the member itself sends to (so that a port on its own subnet
 * answers with its own addresses), to the member's MAC and the UDP port it
 * sends from.
 */
struct xina_member {
	__u64	key[2];		/* K_r: its contributions' tags */
	__be32	addr;		/* IPv4 source address; 0: rank not configured */
	__be16	port;		/* UDP source port; 0: any */
	__be16	rport;		/* learned: UDP source port of its packets */
	__u32	ifindex;	/* learned: the switch port it is behind; 0:
				 * never seen */
	__be32	sw_addr;	/* learned: the switch address it sends to */
	__u8	mac[6];		/* learned: its MAC */
	__u8	sw_mac[6];	/* learned: the switch port MAC it sends to */
};

/*
 * Shared state of one slot version.  Every field but @done is written under
 * @lock, and read under it but for @aux by the CPU that completes the
 * round (final by then: xina_aux_final() in xina.bpf.c); @done is counted
 * up with a compare-and-swap by the CPU that added a contribution into its
 * partial, after the add, and only in the version's opening the
 * contribution was claimed in (xina_done() in xina.bpf.c).  A
 * version of another epoch than the job's current one (0: never used) is
 * started afresh by the first contribution of the current epoch, for its
 * round 0 or 1 only.
 */
struct xina_meta {
	struct bpf_spin_lock lock;
	__u32	epoch;		/* epoch of @round; 0: never used */
	__u32	round;		/* round this version is in */
	__u32	claimed;	/* contributions accepted in @round */
	__u32	done;		/* XINA_DONE_GEN, XINA_DONE_COUNT */
	__u32	result_cpu;	/* CPU whose partial holds the result */
	__u8	complete;	/* result of @round is final */
	__u8	op;		/* enum xina_op of @round */
	__s8	exp;		/* exp echoed in the result */
	__u8	dtype;		/* enum xina_dtype of @round */
	__u16	count;		/* words of @round: all contributions
				 * to one round carry the same count */
	__u8	up_resent;	/* a job with an uplink: the partial of
				 * @round went up more than once (its
				 * result is no round-trip sample) */
	__u8	up_wait;	/* a job with an uplink: the partial of
				 * @round went up and no upper result
				 * came back since (only then is one sent
				 * down to the members) */
	__s32	aux;		/* MAX of the aux of the contributions
				 * accepted into @round (host order): set
				 * by its first claim, raised by the later
				 * ones; the result's, or a job with an
				 * uplink: its partial's */
	__u16	up_to;		/* a job with an uplink, once @up_got: the
				 * rank whose retransmission sent the
				 * partial up again, the only one the
				 * upper result then goes to, or
				 * XINA_MARK_ALL if another asked too */
	__u8	up_got;		/* a job with an uplink: an upper result
				 * of @round came back and went to every
				 * member */
	__u8	pad3;
	__u64	tag;		/* the result's tag (network order), once
				 * @complete: answers reuse it.  A job
				 * with an uplink: the NH of the partial
				 * under the upper job's NH key instead
				 * (its tag depends on the flags) */
	__u64	seen[XINA_MAX_WORKERS / 64];	/* contributor bitmap */
	__u64	up_ns;		/* a job with an uplink: when the partial
				 * of @round last went up */
};

/*
 * xina_meta.done: the version's opening (a generation, bumped whenever the
 * version is started afresh or on a new round) in the high 16 bits, the
 * adds counted in it in the low 16 (at most XINA_MAX_WORKERS).
 */
#define XINA_DONE_GEN(d)	((d) >> 16)
#define XINA_DONE_COUNT(d)	((d) & 0xffff)

/*
 * Per-CPU partial aggregate of one slot version: the values belong to
 * (@epoch, @round), and only those of the round being folded count.  The
 * values are held by pairs as the staging buffer holds a contribution's
 * (below): pair p is q[p] = e[2p] << 32 | e[2p + 1], host order values.
 * So a contribution's pair goes into its partial as one 64-bit word
 * wherever the op is lane-wise on 64 bits (the narrow SUMs, INT64, the
 * bitwise ops, the first contribution's copy), and a result's pair goes
 * out as one byte swap.  Element i is the high half of q[i / 2] for an
 * even i, the low half for an odd one: xina_part_elem() in xina.bpf.c.
 */
struct xina_part {
	__u32	round;		/* round these values belong to */
	__u32	epoch;		/* its epoch; 0: never written on this CPU */
	__u64	q[XINA_MAX_ELEMS / 2];	/* pairs, host order values */
};

/*
 * Per-CPU staging buffer: a contribution's elements, pair p as q[p] (two
 * host order values, the first in the high half), between the pass that
 * hashes them and the commit into a partial once the tag verified
 * (xina.bpf.c, "element loops"); and a
 * result's chunks on their way into a frame's further buffers.  XINA_CHUNK
 * more than XINA_MAX_ELEMS: a chunk copied in at any element below
 * XINA_MAX_ELEMS is within it, as the verifier checks.  @xh: the header of
 * the datagram of a train being taken (xina_train_one()); @results: of the
 * train's datagrams, how many are now results, and @done which
 * (xina_train_run()).
 */
struct xina_scratch {
	union {
		__u32	w[XINA_MAX_ELEMS + XINA_CHUNK];
		__u64	q[(XINA_MAX_ELEMS + XINA_CHUNK) / 2];	/* pairs */
	};
	struct xina_hdr	xh;
	__u32		results;
	__u64		done[2];	/* XINA_TRAIN_MAX bits */
};

struct xina_counters {
	__u64	c[XINA_STAT_MAX];	/* enum xina_stat; or enum xina_gstat */
};

/*
 * The switch's own IPv4 addresses (xina_addrs, one entry): a packet to the
 * xina port is taken only if it is addressed to one of them; any other
 * (a flow routed or bridged through the box) passes to the stack, counted
 * as XINA_GSTAT_PASS.  "xinactl dev attach" writes every IPv4 address of
 * its network namespace at that moment, as one update, into the map of
 * the port it attaches (not pinned: switches in several namespaces may
 * share a pin dir).  @n == 0: no list,
 * every packet to the xina port is taken.  @addr[0..n-1] ascending as
 * __u32 values (network order bytes read as a number): the fast path
 * searches them by bisection.
 */
#define XINA_ADDRS_LOG2		6
#define XINA_MAX_ADDRS		(1 << XINA_ADDRS_LOG2)

struct xina_addrs {
	__u32	n;
	__be32	addr[XINA_MAX_ADDRS];
};

/*
 * What xina_xdp hands to xina_fanout, written over the first bytes of a
 * frame it passes (not in XDP metadata: some kernels refuse
 * bpf_xdp_adjust_meta(), 6.18 builds among them).  The frame is a result
 * (or an answer) of job @job, for every member (@to == XINA_MARK_ALL) or
 * for rank @to alone; xina_fanout writes every header below the xina
 * header anew for each copy, so the mark may take the Ethernet header and
 * most of the IPv4 header (only the EtherType is left, so that the stack
 * sees IPv4 up to xina_fanout).  A result whose last contribution was a
 * XINA_F_ZERO one is its header alone (XDP cannot grow a frame past its
 * buffer's tailroom): @fill gives its words, and xina_fanout grows the
 * packet and writes them from part @cpu of slot version @idx, which holds
 * round @round of epoch @epoch.
 *
 * A frame for the upper switch whose next hop has no neighbour entry
 * keeps its IPv4 and UDP headers (to the upper switch): its mark is the
 * first 12 bytes alone (the MAC addresses, which the kernel's neighbour
 * resolution writes anew), with XINA_MARK_UP in the cookie and the
 * device to the next hop in @job.  XINA_MARK_UP is not in the cookie's
 * first byte, the destination MAC's: bit 0 there says multicast, and
 * xinactl draws cookies with it clear (and bit 1 set: locally
 * administered), so that no mark looks multicast to the stack.
 *
 * @cookie is xina_cookie, a random number xinactl gives the programs when
 * it loads them: a frame from the wire that xina_xdp passes (anything not
 * for the xina port) cannot carry a mark without guessing it, and the
 * cookie never leaves the box (every copy's headers are written anew).
 */
#define XINA_MARK_ALL		0xffff
#define XINA_MARK_UP		(1ULL << 8)	/* in the cookie */

struct xina_mark {
	__u64	cookie;		/* xina_cookie, or xina_cookie ^ XINA_MARK_UP */
	__u32	job;		/* job id; XINA_MARK_UP: ifindex to the hop */
	__be16	proto;		/* the EtherType, untouched (ETH_P_IP) */
	__u16	to;		/* rank or XINA_MARK_ALL */
	__u16	fill;		/* words for xina_fanout to write, or 0 */
	__u16	cpu;		/* @fill: the part that holds them */
	__u32	idx;		/* @fill: the result's slot version */
	__u32	epoch;		/* @fill: its round, to tell a torn copy */
	__u32	round;
};
_Static_assert(sizeof(struct xina_mark) == 32, "a mark ends in the IPv4 header");

/*
 * Two levels (Documentation/protocol.md, "Two levels"): a job with an
 * uplink does not send the result of a round to its members.  The round's
 * aggregate is the rack's partial: it goes up, to the upper switch at
 * @addr:@port, as the contribution of rank @rank of upper job @job
 * (tagged with @kmine), out of the uplink the route to @addr takes from
 * @ifindex (bpf_fib_lookup(), BPF_FIB_LOOKUP_OUTPUT), from @saddr and the
 * xina port.  The upper job's result (tagged with @kres, from @addr:@port
 * to @saddr and the xina port) is the round's result: re-tagged and sent
 * to every member.  Configured by xinactl ("job add ... up"), except the
 * upper join's state below @lock, which the fast path keeps.
 *
 * The upper job's epoch: @epoch stands for rack epoch @rack_epoch.  When
 * the rack job's current epoch is another one (a new run of the rack's
 * workers opened it), the joins of the rack's members are not answered:
 * each sends a join of the upper job up instead (nonce @nonce, for rack
 * epoch @want), and once its reply granted an epoch the members' next
 * join (their retransmission) is answered.  @status: the reply to the
 * join of @nonce (XINA_UP_PENDING: none yet).
 */
#define XINA_UP_PENDING		0xff
#define XINA_UP_HOLD_MAX_NS	200000000ULL	/* the round trip's timeout
						 * is at most 200 ms */

struct xina_up {
	struct bpf_spin_lock	lock;
	__u32	job;		/* upper job id; 0: no uplink */
	__u64	kmine[2];	/* K_r of @rank in the upper job */
	__u64	kres[2];	/* the upper job's K_res */
	__be32	addr;		/* the upper switch */
	__be32	saddr;		/* this switch on the uplink */
	__be16	port;		/* the upper switch's xina port */
	__u16	rank;		/* this rack's rank in the upper job */
	__u32	ifindex;	/* the uplink (the route's output device) */
	__u32	resend_us;	/* a partial goes up again at most this
				 * often, however many members ask, and
				 * not before the upper round trip's
				 * timeout (@rtt) */
	__u32	pad;
	/* under @lock (the fast path reads @rtt's words without it) */
	struct xina_rtt rtt;	/* partial-to-result time (RFC 6298,
				 * bpf/xina_rtt.h), in us */
	__u64	nonce;		/* of the latest upper join */
	__u32	epoch;		/* upper epoch granted */
	__u32	rack_epoch;	/* rack epoch @epoch stands for; 0: none */
	__u32	want;		/* rack epoch of the join in flight; 0: none */
	__u32	status;		/* reply to @nonce, or XINA_UP_PENDING */
	__u64	join_tag;	/* tag of the join of @nonce: a BAD_KEY
				 * reply echoes it (set without @lock) */
};

/* xina_upjobs: upper job @up is handed up to by job @job of this switch. */
struct xina_upjob {
	__u32	up;		/* upper job id; 0: free bucket */
	__u32	job;		/* the job with the uplink */
};

/* Counters of a job's uplink (per CPU, summed by xinactl). */
enum xina_upstat {
	XINA_UPSTAT_SENT,	/* partials sent up */
	XINA_UPSTAT_RESENT,	/* partials sent up again: a member retransmitted */
	XINA_UPSTAT_HELD,	/* retransmissions not sent up: the partial
				 * went up less than resend_us ago */
	XINA_UPSTAT_RESULT,	/* upper results sent down to the members */
	XINA_UPSTAT_JOIN_SENT,	/* upper joins sent (for a rack member's join) */
	XINA_UPSTAT_JOIN_OK,	/* upper join replies granting an epoch */
	XINA_UPSTAT_JOIN_REFUSED,	/* upper join replies refusing */
	XINA_UPSTAT_DROP_FOREIGN,	/* to the uplink's job, not from the
					 * upper switch: dropped */
	XINA_UPSTAT_DROP_AUTH,	/* tag does not verify: dropped */
	XINA_UPSTAT_DROP_STALE,	/* another upper epoch, a round the rack's
				 * version is not waiting on, a reply to
				 * another join: dropped */
	XINA_UPSTAT_NO_ROUTE,	/* no route to the upper switch
				 * (bpf_fib_lookup()): not sent */
	XINA_UPSTAT_NO_NEIGH,	/* the next hop had no neighbour entry: sent
				 * through the kernel's neighbour resolution
				 * (TC, bpf_redirect_neigh()), which makes it */
	__XINA_UPSTAT_MAX,
};
#define XINA_UPSTAT_MAX		__XINA_UPSTAT_MAX

struct xina_up_counters {
	__u64	c[XINA_UPSTAT_MAX];
};

#endif /* XINA_MAPS_H */
