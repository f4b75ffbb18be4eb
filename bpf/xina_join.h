/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-3-Clause) */
/*
 * The join handshake's decision, in one header shared by the XDP fast path
 * (bpf/), xina.ko (kmod/) and xina-swagg, so that the three cannot
 * disagree (as bpf/xina_auth.h for the tags).  Plain C on __u32/__u64, no
 * loop: the verifier takes it as it is.  The wire format and the rules are
 * in include/uapi/linux/xina.h ("Join handshake"); this is them as code.
 *
 * The caller has parsed a XINA_T_JOIN, found the job and the rank's
 * configured member, verified the join's tag under the rank's key (a join
 * whose tag does not verify never gets here: it is answered
 * XINA_JOIN_BAD_KEY or dropped without any state change), and holds the
 * job's join lock (a bpf_spin_lock, a spinlock with bottom halves off, or
 * nothing in a single-threaded aggregator).  It then calls
 * xina_join_decide() and acts on the verdict:
 *
 *   XINA_JD_JOINED, XINA_JD_NEW_EPOCH, XINA_JD_REFUSE:
 *	a fresh join, evaluated: send the reply m->status, m->epoch;
 *	count JOIN (OK) or JOIN_REFUSED, and EPOCH_NEW on XINA_JD_NEW_EPOCH
 *	(then every slot version of the old epoch is stale: see the header).
 *	The member's location is learned from the join (its tag verified and
 *	it is fresh).
 *   XINA_JD_RESEND:
 *	the join the member sent last, again (its reply was lost, or it is an
 *	exact replay): send the recorded reply again, to where the member was
 *	learned; count JOIN or JOIN_REFUSED by m->status.  Nothing changes.
 *   XINA_JD_STALE:
 *	an older join (a replay): drop, count JOIN_STALE.  Nothing changes.
 */
#ifndef XINA_JOIN_H
#define XINA_JOIN_H

#include <linux/types.h>
#include "../include/uapi/linux/xina.h"

#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#define XINA_JOIN_WORDS		(XINA_MAX_WORKERS / 64)
_Static_assert(XINA_JOIN_WORDS == 4, "xina_join_decide() clears four words");

/* A job's epoch and who joined it. */
struct xina_join_job {
	__u32	epoch;				/* current; never 0 */
	__u32	run;				/* the run @epoch's joins named
						 * (0: none named one yet) */
	__u64	joined[XINA_JOIN_WORDS];	/* ranks joined to @epoch */
};

/* A member's latest join and the reply it got. */
struct xina_join_mbr {
	__u64	nonce;		/* highest nonce of a join whose tag verified;
				 * 0: never joined */
	__u32	epoch;		/* the reply's epoch (0 unless XINA_JOIN_OK) */
	__u32	status;		/* the reply's enum xina_join_status */
};

enum xina_join_verdict {
	XINA_JD_STALE,		/* an older join: drop */
	XINA_JD_RESEND,		/* the latest join again: resend its reply */
	XINA_JD_JOINED,		/* joined the current epoch */
	XINA_JD_NEW_EPOCH,	/* a restart: opened the next epoch */
	XINA_JD_REFUSE,		/* refused (MISMATCH or BUSY) */
};

/*
 * A new job's record of member @m, made at @now_ns (CLOCK_REALTIME, ns):
 * joins with a nonce older than @now_ns less XINA_JOIN_SKEW_MS are stale,
 * one exactly at that floor gets a BUSY answer (the worker asks again with
 * a new nonce), as if the member had joined then and been refused: a join
 * captured from an earlier instance of the job is stale in this one.
 * Every control plane (xinactl, xina.ko, xina-swagg) starts a job's
 * members with it.
 */
static __always_inline void xina_join_mbr_start(struct xina_join_mbr *m,
						__u64 now_ns)
{
	const __u64 skew = (__u64)XINA_JOIN_SKEW_MS * 1000000;

	m->nonce = now_ns > skew ? now_ns - skew : 0;
	m->epoch = 0;
	m->status = XINA_JOIN_BUSY;
}

/* The epoch after @epoch: epochs are never 0. */
static __always_inline __u32 xina_epoch_next(__u32 epoch)
{
	return epoch + 1 ? epoch + 1 : 1;
}

/*
 * Decide on a join of member @rank (below the job's workers, which the
 * caller checked) with nonce @nonce, whose tag verified.  @run: the run
 * the join names (its epoch field; 0: none).  @fits: the worker's slots,
 * elements per slot and dtype fit the job.  @busy: a round of the current
 * epoch completed within the last XINA_JOIN_BUSY_MS.  The caller holds the
 * job's join lock.
 *
 * A new run of the workers is a join of a member that joined the current
 * epoch already, or one that names another run than the epoch's (the
 * first run a join of it named): without the second rule a rank that
 * never joined a run which died would, joining first in the next run, be
 * taken into the dead run's epoch and complete its open rounds with its
 * own data.  A join naming no run (0) is taken into any epoch, as before
 * runs: a worker that names none is not protected, and does not take
 * the epoch from one that does (a rack agent joins its upper job at start,
 * before its workers named their run).
 */
static __always_inline int xina_join_decide(struct xina_join_job *j,
					    struct xina_join_mbr *m,
					    __u32 rank, __u64 nonce, __u32 run,
					    int fits, int busy)
{
	__u32 w = (rank / 64) & (XINA_JOIN_WORDS - 1);
	__u64 bit = 1ULL << (rank & 63);

	if (nonce < m->nonce || !nonce)
		return XINA_JD_STALE;
	if (nonce == m->nonce)
		return XINA_JD_RESEND;
	m->nonce = nonce;
	m->epoch = 0;
	if (!fits) {
		m->status = XINA_JOIN_MISMATCH;
		return XINA_JD_REFUSE;
	}
	if (!(j->joined[w] & bit) && (!run || !j->run || run == j->run)) {
		if (run)
			j->run = run;
		j->joined[w] |= bit;
		m->status = XINA_JOIN_OK;
		m->epoch = j->epoch;
		return XINA_JD_JOINED;
	}
	/* it joined this epoch before, or names another run: a new run */
	if (busy) {
		m->status = XINA_JOIN_BUSY;
		return XINA_JD_REFUSE;
	}
	j->epoch = xina_epoch_next(j->epoch);
	j->run = run;
	j->joined[0] = 0;
	j->joined[1] = 0;
	j->joined[2] = 0;
	j->joined[3] = 0;
	j->joined[w] = bit;
	m->status = XINA_JOIN_OK;
	m->epoch = j->epoch;
	return XINA_JD_NEW_EPOCH;
}

/* Members joined to the current epoch (for job show / JOB_JOINED). */
static __always_inline __u32 xina_join_count(const struct xina_join_job *j)
{
	return __builtin_popcountll(j->joined[0]) +
	       __builtin_popcountll(j->joined[1]) +
	       __builtin_popcountll(j->joined[2]) +
	       __builtin_popcountll(j->joined[3]);
}

#endif /* XINA_JOIN_H */
