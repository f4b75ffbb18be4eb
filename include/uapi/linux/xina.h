/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-3-Clause) */
/*
 * xina: in-network aggregation (allreduce) on a Linux box.
 *
 * This is the one header shared by the kernel module (kmod/), the XDP fast
 * path (bpf/) and user space (user/).  It defines the wire format spoken
 * between workers and the switch, and the generic netlink family "xina".
 * Everything here is ABI: values are never renumbered, fields are only ever
 * added in reserved space.
 *
 * Wire format
 * ===========
 *
 * A xina packet is a UDP datagram (IPv4, no options) to the switch's
 * xina port (XINA_UDP_PORT unless configured otherwise), carrying one
 * struct xina_hdr followed by @count elements of type @dtype.  All fields
 * and all elements are in network byte order.
 *
 *    0                   1                   2                   3
 *    0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *   +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
 *   |    version    |     type      |     dtype     |      op       |  0
 *   +---------------+---------------+---------------+---------------+
 *   |     flags     |      exp      |             count             |  4
 *   +---------------+---------------+-------------------------------+
 *   |                              job                              |  8
 *   +-------------------------------+-------------------------------+
 *   |             rank              |            weight             | 12
 *   +-------------------------------+-------------------------------+
 *   |                             slot                              | 16
 *   +---------------------------------------------------------------+
 *   |                             round                             | 20
 *   +---------------------------------------------------------------+
 *   |                             epoch                             | 24
 *   +---------------------------------------------------------------+
 *   |                              aux                              | 28
 *   +---------------------------------------------------------------+
 *   |                            offset                             | 32
 *   |                                                               |
 *   +---------------------------------------------------------------+
 *   |                              tag                              | 40
 *   |                                                               |
 *   +---------------------------------------------------------------+
 *   |                 count elements of dtype ...                   | 48
 *
 * version: XINA_WIRE_VERSION.  Anything else is not a xina packet of this
 *	    version and is dropped (counted as malformed).
 * type:    enum xina_pkt_type.  Workers send XINA_T_CONTRIB; the switch
 *	    answers with XINA_T_RESULT.
 * dtype:   enum xina_dtype of the elements.
 * op:      enum xina_op applied to the elements of one slot.  All
 *	    contributions to one round of a slot must carry the same op
 *	    and the same dtype (else drop_op); the next round of the slot
 *	    may use another pair.  Every op is defined for every dtype.
 *	    Floats never travel as floats: libxina maps them to integers
 *	    (block floating point for SUM, an order-preserving map for MIN
 *	    and MAX), so that every result is exact integer arithmetic and
 *	    bitwise the same whatever the arrival order (Documentation/
 *	    protocol.md, "Types and operators").
 * flags:   XINA_F_* bits.  Unknown bits make the packet malformed.
 *	    XINA_F_ZERO: every word of the sender's block is zero, and none
 *	    follows: the UDP payload is the header alone, count still gives
 *	    the block's words (as every contribution to the round must), and
 *	    the tag's NH is that of no payload (0).  Only for the ops whose
 *	    identity is the zero word (SUM, OR, XOR: else drop_op), only
 *	    where the switch's join reply offered it (below), never with
 *	    XINA_F_RETRANS (malformed): a resend carries the zero words, so
 *	    that the answer to it fits in its frame.  The switch counts the
 *	    sender as contributed and adds nothing.  A sparse call's workers
 *	    send it for the blocks of the union they hold no non-zero of
 *	    (Documentation/protocol.md, "Sparse tensors").
 * exp:     informational block exponent: the power of two the worker used
 *	    to quantise float data into this block (see Documentation/
 *	    protocol.md); the switch copies it into the result untouched
 *	    from the contribution that completes the slot.
 * count:   number of 32-bit words after the header, 1..job's elements per
 *	    slot (a job's slot memory is counted in 32-bit words).  An
 *	    INT32 block is count elements; the narrower types are packed:
 *	    an INT16 word holds two elements, an INT8 word four, first
 *	    element in the word's most significant bits (so that the words
 *	    in network order are the elements in network order); an INT64
 *	    element takes two words, high word first, and an INT64 block
 *	    has an even count (else drop_op).  A worker pads its last word
 *	    with zero elements; the switch combines every lane of every
 *	    word, padding included.
 * job:     job id, as configured with "xinactl job add".
 * rank:    the sender's rank in the job, 0..workers-1.  16 bits: jobs are
 *	    not limited to 32 (or 64) workers.
 * weight:  reserved for hierarchical aggregation (a contribution that stands
 *	    for several workers, Rina-style); must be 0.  A rack agent's
 *	    partial sends 0 too: rounds complete by membership, and the
 *	    float headroom is the workers' world size (Documentation/
 *	    protocol.md, "Two levels").
 * slot:    index of the aggregation slot in the job's pool, 0..slots-1.
 * round:   how many times the sender used this slot before, for this job.
 *	    The slot keeps two versions (shadow copies); round & 1 selects
 *	    the version.  Round r+2 may only start once round r completed;
 *	    older rounds are stale and dropped.
 * epoch:   the job's epoch (a run of its workers), as the join handshake
 *	    gave it (below).  Never 0.  A contribution of another epoch than
 *	    the job's current one is dropped (counted as drop_epoch), before
 *	    it touches anything: answers included.
 * aux:     in a XINA_T_CONTRIB, a signed 32-bit side word (network order)
 *	    the switch reduces by MAX over the round's contributions,
 *	    whatever the dtype and op, XINA_F_ZERO ones included; the
 *	    result carries that MAX, and so does the answer to a resend
 *	    (a resend carries the same aux as the first send).  libxina's
 *	    block floating point piggybacks on it the exponent of the block
 *	    its slot takes next (SwitchML): the switch's MAX of them is the
 *	    agreed exponent of that block, with no pass over the tensor
 *	    before the first packet (Documentation/protocol.md, "Types and
 *	    operators").  0 where unused.  In a join and its reply, the
 *	    elements per slot (below).
 * offset:  element offset of this block in the sender's tensor.  The switch
 *	    does not interpret it; it is echoed in results so that a worker
 *	    can place a result without any other state.
 * tag:     the packet's authenticator (bpf/xina_auth.h,
 *	    Documentation/security.md): SipHash-2-4 keyed with the sender's
 *	    member key (derived from the job's 128-bit secret) over the 40
 *	    bytes above and the NH hash of the elements.  A contribution
 *	    whose tag does not verify is dropped (drop_auth) before it can
 *	    change anything.
 *
 * A XINA_T_RESULT has the same layout: flags and rank are 0, count, offset
 * and epoch are those of the contributions, exp that of the contribution
 * that completed the round, aux the MAX of the contributions' aux, and
 * the elements are the aggregate.  Its tag
 * is keyed with the job's result key, computed once when the round
 * completes; the answer to a retransmission is the same packet, tag
 * included.  Workers drop results whose tag does not verify.
 *
 * Join handshake
 * --------------
 *
 * Before its first contribution a worker sends a XINA_T_JOIN; the switch
 * answers with a XINA_T_JOIN_REPLY that gives the epoch, or says why not.
 * Both are a bare header (count 0, no elements; the tag's NH is that of no
 * payload, 0).  In a JOIN:
 *
 *	dtype	XINA_DTYPE_INT32: the unit of aux (32-bit words); the
 *		contributions may then carry any dtype
 *	op, flags, exp, count, weight, round: 0
 *	epoch	the run the worker belongs to: a number every worker of one
 *		run of the job passes (xina_opts.run), another in the next
 *		run; 0: the worker names none
 *	job, rank	who the worker is
 *	slot	the slots the worker will use
 *	aux	its elements per slot
 *	offset	the join's nonce: strictly increasing per member across
 *		processes (the worker's CLOCK_REALTIME in ns); a
 *		retransmission of a join carries the same nonce
 *	tag	keyed with the member's key K_r
 *
 * In a JOIN_REPLY: dtype, job and rank are those of the join, slot and
 * aux the job's slots and elements per slot, flags what the switch takes
 * from the job's members beyond XINA_F_RETRANS (XINA_F_ZERO, or 0: a
 * worker sends XINA_F_ZERO only where it was offered), round an enum
 * xina_join_status, epoch the epoch granted (XINA_JOIN_OK; 0 otherwise),
 * offset the join's nonce echoed, tag keyed with K_r, except that of
 * XINA_JOIN_BAD_KEY: there the switch has no key the worker shares, and
 * the tag is the join's own tag echoed (so that only who saw the join can
 * forge the refusal).  A worker accepts a reply only for the nonce it is
 * waiting on, with a tag that verifies (or echoes its own, for BAD_KEY).
 *
 * The switch evaluates a join with a nonce above the highest it has seen
 * from that member (a join whose tag verified; the nonce is recorded with
 * the reply's status and epoch), sends the reply for a join with exactly
 * the recorded nonce again (a lost reply) without evaluating it anew, and
 * drops any older one (XINA_STAT_JOIN_STALE: a replay).  A new job's
 * record of every member starts at the job's creation time (the switch's
 * CLOCK_REALTIME in ns) less XINA_JOIN_SKEW_MS, as if each had joined
 * then and been answered XINA_JOIN_BUSY: a join captured from an earlier
 * instance of a job re-created with the same secret is stale in the new
 * one, unless it was sent within XINA_JOIN_SKEW_MS before the new one was
 * created; a worker whose clock is more than that behind the switch's, or
 * that began its join more than that before the job was created, is not
 * answered.  A rack switch's join of its upper job (two levels) carries a
 * clock too (CLOCK_TAI in ns where the fast path makes it, which is never
 * behind CLOCK_REALTIME).  Replies go where
 * the member was learned: a join whose tag verifies is where the member
 * is.  A join that names no job, or a rank that is not configured, or
 * comes from another address than the rank's, is dropped and counted
 * (no_job, drop_member) and never answered: the switch does not answer
 * who it does not know.  A join from the rank's configured address whose
 * tag does not verify is counted as drop_auth and answered
 * XINA_JOIN_BAD_KEY, out of the member's learned port when it has one, else
 * back out of the port it came in on.
 *
 * Epochs.  A new job has a random non-zero epoch, no run and no member
 * joined.  The first accepted join of an epoch that names a run records it
 * as the epoch's.  An accepted join of a member that has not joined the
 * current epoch, naming the epoch's run, or none (0), or any while the
 * epoch has none, adds it and is answered with it.  A join of a member
 * that already joined it, or naming another run than the epoch's, is a
 * new run of the workers (a restart): unless a round of the epoch completed
 * within the last XINA_JOIN_BUSY_MS (XINA_JOIN_BUSY: someone is using it),
 * the switch opens the next epoch (epoch + 1, never 0) with that member
 * alone joined and its run.  Without runs (0 in every join), a rank that
 * never joined a run that died, joining first in the next, is taken into
 * the dead run's epoch, and its data completes the dead run's open
 * rounds.  A slot version keeps the epoch of its round: the first
 * contribution of the current epoch to a version of an older one starts it
 * afresh, and is accepted only for the first two rounds (round 0 or 1);
 * the old epoch's partials, result and tag are gone.
 */
#ifndef _UAPI_LINUX_XINA_H
#define _UAPI_LINUX_XINA_H

#include <linux/types.h>

#define XINA_WIRE_VERSION	2
#define XINA_UDP_PORT		9277	/* default switch port ("XA" on a phone pad) */

#define XINA_MAX_WORKERS	256	/* members of one job (bitmap width) */

/* elements of one slot / one packet: an MTU 9000 frame holds 2048 int32 */
#define XINA_MAX_ELEMS		2048

#define XINA_MAX_JOBS		64	/* concurrent jobs on one switch */
#define XINA_SECRET_BYTES	16	/* a job's secret: 128 bits */

/* a round completed this recently: a restart's join is answered busy */
#define XINA_JOIN_BUSY_MS	500

/*
 * a new job takes joins whose nonce (clock) is at most this much older than the
 * job ("Join handshake")
 */
#define XINA_JOIN_SKEW_MS	60000

enum xina_pkt_type {
	XINA_T_CONTRIB = 1,	/* worker -> switch: one block of a tensor */
	XINA_T_RESULT = 2,	/* switch -> worker: the aggregated block */
	XINA_T_JOIN = 3,	/* worker -> switch: join the job's epoch */
	XINA_T_JOIN_REPLY = 4,	/* switch -> worker: the epoch, or why not */
};

/* The answer to a join, in the round field of a XINA_T_JOIN_REPLY. */
enum xina_join_status {
	XINA_JOIN_OK = 0,	/* joined epoch (the reply's epoch field) */

	/*
	 * the join's tag does not verify under the rank's key: the worker's key
	 * file is not the job's
	 */
	XINA_JOIN_BAD_KEY = 1,

	/*
	 * the worker's slots, elements per slot or dtype do not fit the job
	 * (slot and aux carry the job's)
	 */
	XINA_JOIN_MISMATCH = 2,

	/*
	 * a restart while the current epoch is in use (a round completed within
	 * XINA_JOIN_BUSY_MS); ask again later
	 */
	XINA_JOIN_BUSY = 3,
};

/*
 * Element types on the wire: all two's complement, SUM wrapping modulo
 * 2^width, MIN and MAX signed (bpf/xina_lanes.h has the arithmetic, shared
 * by every aggregator).
 */
enum xina_dtype {
	XINA_DTYPE_INT32 = 1,	/* one element per word */
	XINA_DTYPE_INT8 = 2,	/* four elements per word */
	XINA_DTYPE_INT16 = 3,	/* two elements per word */
	XINA_DTYPE_INT64 = 4,	/* one element per two words, high first */
	__XINA_DTYPE_MAX,
};

enum xina_op {
	XINA_OP_SUM = 1,
	XINA_OP_MAX = 2,	/* also used to agree on block exponents */
	XINA_OP_MIN = 3,
	XINA_OP_AND = 4,	/* bitwise, lane width irrelevant */
	XINA_OP_OR = 5,
	XINA_OP_XOR = 6,
	__XINA_OP_WIRE_MAX,
	/*
	 * libxina only, never on the wire (a switch drops it as drop_op): a
	 * SUM divided by the number of workers on each worker.
	 */
	XINA_OP_AVG = 16,
};

enum xina_flags {
	XINA_F_RETRANS = 1 << 0,	/* sender already sent this block */
	XINA_F_ZERO = 1 << 1,		/* the block is zero words, none sent */
	/* reserved: XINA_F_SPARSE (index/value pairs), XINA_F_HIER */
};

#define XINA_F_ALL	(XINA_F_RETRANS | XINA_F_ZERO)

struct xina_hdr {
	__u8	version;
	__u8	type;
	__u8	dtype;
	__u8	op;
	__u8	flags;
	__s8	exp;
	__be16	count;
	__be32	job;
	__be16	rank;
	__be16	weight;
	__be32	slot;
	__be32	round;
	__be32	epoch;
	__be32	aux;
	__be64	offset;
	__be64	tag;
};

/*
 * Generic netlink family "xina" (module backend)
 * ==============================================
 *
 * All commands, the reading ones included, need CAP_NET_ADMIN in the
 * initial user namespace (slot memory is a resource of the whole box).
 * Jobs belong to the network namespace of the caller; job ids are unique
 * within it, and a namespace's jobs are deleted with it.  Rejections carry
 * an extack message and, where one is to blame, the offending (or missing)
 * attribute.  See Documentation/netlink/specs/xina.yaml.
 */
#define XINA_GENL_NAME		"xina"
#define XINA_GENL_VERSION	1

enum xina_cmd {
	XINA_CMD_UNSPEC,

	/*
	 * create a job: JOB_ID, WORKERS, SLOTS, ELEMS, SECRET, MEMBER (one per
	 * rank; a rank without one drops its packets), optional FLAGS.  EEXIST:
	 * the id is taken in this netns; ENOSPC: XINA_MAX_JOBS reached; ENOMEM:
	 * the slot memory would exceed mem_limit
	 */
	XINA_CMD_JOB_NEW,

	XINA_CMD_JOB_DEL,	/* delete a job: JOB_ID (ENOENT: no such job) */

	/*
	 * one job (JOB_ID) or, with NLM_F_DUMP, all of the netns in id order;
	 * the reply holds every JOB_* attribute, a MEMBER per configured rank,
	 * MEM_BYTES and STATS
	 */
	XINA_CMD_JOB_GET,

	/*
	 * change a job: JOB_ID and at least one of SECRET, FLAGS, MEMBER
	 * (replaces the member of its rank); WORKERS, SLOTS, ELEMS cannot
	 * change (EOPNOTSUPP)
	 */
	XINA_CMD_JOB_SET,

	/*
	 * counters of one job (JOB_ID) or all (dump): JOB_ID, STATS and RX_CPU
	 */
	XINA_CMD_STATS_GET,

	/*
	 * the rounds in progress of one job: dump only, JOB_ID in the request;
	 * every message holds JOB_ID, JOB_EPOCH and a ROUND per slot version
	 * whose round of the job's current epoch has contributions but no
	 * result yet, in slot order (ENOENT: no such job).  What "xinactl job
	 * rounds" shows: the ranks a stalled job waits for
	 */
	XINA_CMD_ROUNDS_GET,

	__XINA_CMD_MAX,
};

#define XINA_CMD_MAX (__XINA_CMD_MAX - 1)

enum xina_attr {
	XINA_A_UNSPEC,
	XINA_A_JOB_ID,		/* u32, 1..2^32-1; unique per netns */
	XINA_A_JOB_WORKERS,	/* u16, 1..XINA_MAX_WORKERS */
	XINA_A_JOB_SLOTS,	/* u32, slots in the job's pool, 1..65536 */
	XINA_A_JOB_ELEMS,	/* u16, elements per slot, 1..XINA_MAX_ELEMS */

	/* u64; wire version 1's key in clear: rejected (use JOB_SECRET) */
	XINA_A_JOB_KEY,

	XINA_A_JOB_FLAGS,	/* u32, XINA_JOB_F_* */
	XINA_A_JOB_MEMBER,	/* nest, enum xina_member_attr; repeated */

	/* u64, slot memory held by the job (get only; rejected in requests) */
	XINA_A_JOB_MEM_BYTES,

	/* nest, enum xina_stat_attr (get/stats only; rejected in requests) */
	XINA_A_JOB_STATS,

	XINA_A_PAD,		/* padding of the u64 attributes */

	/*
	 * nest of u64, attribute type cpu + 1 for each possible CPU: xina
	 * packets of the job seen on that CPU (STATS_GET replies only; rejected
	 * in requests)
	 */
	XINA_A_JOB_RX_CPU,

	/*
	 * binary, exactly XINA_SECRET_BYTES: the job's secret, from which the
	 * member, result and NH keys are derived (bpf/xina_auth.h); never
	 * returned by JOB_GET
	 */
	XINA_A_JOB_SECRET,

	/* u32, the job's current epoch (get only; rejected in requests) */
	XINA_A_JOB_EPOCH,

	/* u16, members joined to it (get only; rejected in requests) */
	XINA_A_JOB_JOINED,

	/*
	 * nest, enum xina_round_attr; repeated (ROUNDS_GET replies only;
	 * rejected in requests)
	 */
	XINA_A_JOB_ROUND,

	/*
	 * u32, the run the current epoch's joins named (0: none yet; get only;
	 * rejected in requests)
	 */
	XINA_A_JOB_RUN,

	__XINA_A_MAX,
};

#define XINA_A_MAX (__XINA_A_MAX - 1)

enum xina_job_flags {
	XINA_JOB_F_NONE = 0,
	/* reserved: XINA_JOB_F_FALLBACK (ATP-style best effort) */
};

#define XINA_JOB_F_ALL	0

enum xina_member_attr {
	XINA_MEMBER_A_UNSPEC,
	XINA_MEMBER_A_RANK,	/* u16 */
	XINA_MEMBER_A_ADDR,	/* IPv4 address, binary, network order (4) */

	/* u16, host order; UDP port of the worker, optional, 0: any */
	XINA_MEMBER_A_PORT,

	__XINA_MEMBER_A_MAX,
};

#define XINA_MEMBER_A_MAX (__XINA_MEMBER_A_MAX - 1)

/*
 * A round in progress on one slot version (XINA_CMD_ROUNDS_GET): which
 * ranks' contributions are in.  A snapshot: under load most rounds are
 * open for a moment; one still open, same round, in a later snapshot
 * waits for the ranks that are not in.
 */
enum xina_round_attr {
	XINA_ROUND_A_UNSPEC,
	XINA_ROUND_A_SLOT,	/* u32, the slot */
	XINA_ROUND_A_VERSION,	/* u8, its version: 0 or 1 (round & 1) */
	XINA_ROUND_A_ROUND,	/* u32 */
	XINA_ROUND_A_IN,	/* u16, contributions added so far */
	XINA_ROUND_A_COUNT,	/* u16, words per contribution */
	XINA_ROUND_A_DTYPE,	/* u8, enum xina_dtype */
	XINA_ROUND_A_OP,	/* u8, enum xina_op */

	/*
	 * binary, XINA_ROUND_SEEN_BYTES: bit r % 8 of byte r / 8 is set when
	 * rank r's contribution is in
	 */
	XINA_ROUND_A_SEEN,

	__XINA_ROUND_A_MAX,
};

#define XINA_ROUND_A_MAX (__XINA_ROUND_A_MAX - 1)
#define XINA_ROUND_SEEN_BYTES	(XINA_MAX_WORKERS / 8)

/* Counters: the same set per job in the BPF maps, sysfs and netlink. */
enum xina_stat {
	XINA_STAT_RX,		/* xina packets seen for this job */
	XINA_STAT_CONTRIB,	/* contributions added into a slot */
	XINA_STAT_COMPLETE,	/* slot rounds completed (results multicast) */
	XINA_STAT_RETRANS_ANSWERED,	/* retransmissions answered with the kept result */
	XINA_STAT_DUP,		/* duplicates of a pending round, dropped */
	XINA_STAT_STALE,	/* contributions to a finished older round */

	/*
	 * reserved: wrong key of wire version 1; a bad tag counts as
	 * XINA_STAT_DROP_AUTH
	 */
	XINA_STAT_DROP_KEY,

	XINA_STAT_DROP_MEMBER,	/* rank out of range or source is not the member */
	XINA_STAT_DROP_RANGE,	/* slot, count or round out of range */
	XINA_STAT_DROP_OP,	/* op or dtype unsupported or mixed in one round */
	XINA_STAT_TX,		/* copies of results and answers sent to members */

	/*
	 * copies not sent: the member was never seen, so the switch does not
	 * know where it is
	 */
	XINA_STAT_TX_UNKNOWN,

	/*
	 * tag does not verify: not sent by the member (forged, spoofed source)
	 * or modified
	 */
	XINA_STAT_DROP_AUTH,

	XINA_STAT_DROP_EPOCH,	/* a member's packet of another epoch */

	/* joins answered XINA_JOIN_OK (a lost reply's resend included) */
	XINA_STAT_JOIN,

	XINA_STAT_JOIN_REFUSED,	/* joins answered with a refusal */

	/* joins older than the member's latest (replays), dropped */
	XINA_STAT_JOIN_STALE,

	XINA_STAT_EPOCH_NEW,	/* epochs opened by a restart's join */

	__XINA_STAT_MAX,
};

#define XINA_STAT_MAX	__XINA_STAT_MAX

/* Switch-wide counters for packets that name no job. */
enum xina_gstat {
	XINA_GSTAT_MALFORMED,	/* truncated, bad version/type/flags, ... */
	XINA_GSTAT_NO_JOB,	/* well formed, but the job does not exist */
	XINA_GSTAT_PASS,	/* not xina: passed to the stack */

	/*
	 * frames holding several datagrams of a job: a worker's GSO train,
	 * which a port in generic XDP mode takes whole; each datagram is taken
	 * as if it came alone
	 */
	XINA_GSTAT_TRAIN,

	/*
	 * of those, trains some but not all of whose datagrams completed their
	 * rounds: sent on whole, each other datagram made a filler (a result of
	 * epoch 0, elements zero, which workers ignore)
	 */
	XINA_GSTAT_TRAIN_PART,

	/*
	 * trains not taken at all (a job with an uplink): each block completes
	 * on its resend (sent alone); the workers should send one datagram per
	 * packet.  A train of no job counts a no_job per datagram
	 */
	XINA_GSTAT_TRAIN_REFUSED,

	/*
	 * rounds completed by a XINA_F_ZERO datagram in a train: kept, not sent
	 * (a result must grow from the header, which only a lone datagram can);
	 * every member fetches it by a resend.  libxina sends ZERO blocks alone
	 */
	XINA_GSTAT_TRAIN_ZERO,

	__XINA_GSTAT_MAX,
};

#define XINA_GSTAT_MAX	__XINA_GSTAT_MAX

enum xina_stat_attr {
	XINA_STAT_A_UNSPEC,
	/* one u64 attribute per enum xina_stat, numbered XINA_STAT_x + 1 */
	__XINA_STAT_A_MAX = XINA_STAT_MAX + 1,
};

#define XINA_STAT_A_MAX (__XINA_STAT_A_MAX - 1)

#endif /* _UAPI_LINUX_XINA_H */
