// SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause)
/*
 * libxina's join handshake (include/uapi/linux/xina.h, "Join handshake"):
 * before its first contribution, xina_open() sends a XINA_T_JOIN and waits
 * for the switch's XINA_T_JOIN_REPLY, which gives the epoch every
 * contribution of the handle then carries, or says why not.
 *
 * The join is a bare header (no elements) in slot 0's transmit buffer, sent
 * through whatever I/O the handle uses (UDP or AF_XDP), before any
 * contribution can need that buffer.  It is sent again, with the same
 * nonce, whenever its retransmission timeout expires (opts.rto_us, but at
 * least XINA_JOIN_RTO_US, doubled up to opts.rto_max_us): the switch
 * answers a join with the nonce it saw last with the reply it gave,
 * without evaluating it again.  The floor: the join is sent once per open,
 * and the switch's answer to it takes a trip through its join lock, and
 * for the XDP switch through the TC fan-out; a resend that only races the
 * reply costs an answer and muddles the switch's counters.  A reply
 * counts only if it is for the nonce of the join in flight and its tag
 * verifies under this rank's key K_r; a XINA_JOIN_BAD_KEY reply cannot
 * carry such a tag (the switch has no key this worker shares), so it must
 * echo the join's own tag instead.  Anything else is ignored (counted).
 *
 * XINA_JOIN_BUSY: another run of the job's workers completed a round
 * within XINA_JOIN_BUSY_MS.  The handle waits XINA_JOIN_RETRY_MS and asks
 * again with a new join (a new nonce: the switch would only repeat its
 * answer to the old one), until opts.timeout_ms has passed since the
 * first join.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "libxina_int.h"
#include "xina_clock.h"
#include "xina_auth.h"

/* Wait between a BUSY refusal and the next join. */
#define XINA_JOIN_RETRY_MS	(XINA_JOIN_BUSY_MS / 5)
/* Floor of the join's retransmission timeout. */
#define XINA_JOIN_RTO_US	50000

/* The latest nonce this process used, for every handle (see below). */
static uint64_t xina_nonce_last;

/*
 * A join's nonce: CLOCK_REALTIME in ns, so that a restarted worker's joins
 * are newer than those of the process it replaces, and strictly above any
 * earlier nonce of this process, so that two handles opened within one
 * clock tick, or a clock stepped back, never repeat one.  The only state
 * libxina shares between handles; an atomic, so thread-safe.
 */
static uint64_t xina_nonce(void)
{
	uint64_t last, now = xina_realtime_ns(), next;

	last = __atomic_load_n(&xina_nonce_last, __ATOMIC_RELAXED);
	do {
		next = now > last ? now : last + 1;
	} while (!__atomic_compare_exchange_n(&xina_nonce_last, &last, next,
					      false, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return next;
}

/* One join attempt and what came back for it. */
struct xina_jwait {
	uint64_t	nonce;
	__be64		tag;		/* the join's tag, network order */
	bool		answered;
	uint32_t	status;		/* enum xina_join_status */
	uint32_t	epoch;
	uint32_t	job_slots;	/* MISMATCH: the job's */
	uint32_t	job_elems;
	uint8_t		flags;		/* what the switch takes: XINA_F_ZERO */
};

/* Build the join with @nonce in slot 0's buffer and queue it. */
static void xina_join_fill(struct xina *x, struct xina_jwait *w)
{
	struct xina_hdr *h = (struct xina_hdr *)xina_tx_pkt(x, 0);

	xina_tx_own(x, 0);
	memset(h, 0, sizeof(*h));
	h->version = XINA_WIRE_VERSION;
	h->type = XINA_T_JOIN;
	h->dtype = XINA_DTYPE_INT32;
	h->job = htonl(x->o.job);
	h->rank = htons(x->o.rank);
	h->slot = htonl(x->o.slots);
	h->aux = htonl(x->o.elems);
	h->epoch = htonl(x->o.run);
	h->offset = htobe64(w->nonce);
	h->tag = htobe64(xina_tag_hdr(x->kmine, h, 0));
	w->tag = h->tag;
	x->slot[0].nh = 0;
}

static uint32_t xina_join_rto(const struct xina *x)
{
	return x->o.rto_us > XINA_JOIN_RTO_US ? x->o.rto_us : XINA_JOIN_RTO_US;
}

static void xina_join_queue(struct xina *x)
{
	if (!x->slot[0].queued) {
		x->slot[0].queued = true;
		x->txq[x->txq_len++] = 0;
	}
	x->st.joins++;
}

/* A datagram while the join is in flight: the reply we wait for? */
static void xina_on_join_reply(struct xina *x, const uint8_t *p, size_t len,
			       void *ctx)
{
	const struct xina_hdr *h = (const struct xina_hdr *)p;
	struct xina_jwait *w = ctx;
	uint32_t status;

	if (len < sizeof(*h) || h->version != XINA_WIRE_VERSION) {
		x->st.malformed++;
		return;
	}
	/* A result (of an earlier run, or someone else's): not now. */
	if (h->type != XINA_T_JOIN_REPLY) {
		x->st.ignored++;
		return;
	}
	if (len != sizeof(*h) || h->count || h->dtype != XINA_DTYPE_INT32) {
		x->st.malformed++;
		return;
	}
	if (w->answered || ntohl(h->job) != x->o.job ||
	    ntohs(h->rank) != x->o.rank || be64toh(h->offset) != w->nonce) {
		x->st.ignored++;
		return;
	}
	status = ntohl(h->round);
	/*
	 * Only the switch (or who saw the join, for BAD_KEY) can make a
	 * reply that passes: a forged refusal cannot end the open.
	 */
	if (status == XINA_JOIN_BAD_KEY ? h->tag != w->tag :
	    be64toh(h->tag) != xina_tag_hdr(x->kmine, h, 0)) {
		x->st.bad_tag++;
		return;
	}
	if (status > XINA_JOIN_BUSY ||
	    (status == XINA_JOIN_OK) != (h->epoch != 0)) {
		x->st.malformed++;
		return;
	}
	w->answered = true;
	w->status = status;
	w->epoch = ntohl(h->epoch);
	w->job_slots = ntohl(h->slot);
	w->job_elems = ntohl(h->aux);
	w->flags = h->flags;
}

static int xina_ms_until(uint64_t until, uint64_t now)
{
	if (until <= now)
		return 0;
	until = (until - now + 999999) / 1000000;
	return until > INT_MAX ? INT_MAX : (int)until;
}

/* Wait on the socket until @until, the join in flight resent on its RTO. */
static int xina_join_wait(struct xina *x, struct xina_jwait *w,
			  uint64_t until)
{
	uint32_t rto = xina_join_rto(x), rto_max;
	uint64_t now = xina_now_ns(), resend;
	int err;

	rto_max = x->o.rto_max_us > rto ? x->o.rto_max_us : rto;

	resend = now + (uint64_t)rto * 1000;
	while (!w->answered && now < until) {
		err = x->io->tx_flush(x);
		if (err)
			return err;
		err = x->io->rx_poll(x, xina_ms_until(resend < until ? resend :
						      until, now),
				     xina_on_join_reply, w);
		if (err < 0)
			return err;
		now = xina_now_ns();
		if (!w->answered && now >= resend && now < until) {
			/* The same join again: same nonce, same tag. */
			rto = rto * 2 > rto_max ? rto_max : rto * 2;
			resend = now + (uint64_t)rto * 1000;
			x->st.timeouts++;
			xina_join_queue(x);
		}
	}
	return 0;
}

/* Sleep until @until, reading (and ignoring) what arrives meanwhile. */
static int xina_join_pause(struct xina *x, struct xina_jwait *w,
			   uint64_t until)
{
	uint64_t now = xina_now_ns();
	int err;

	while (now < until) {
		err = x->io->rx_poll(x, xina_ms_until(until, now),
				     xina_on_join_reply, w);
		if (err < 0)
			return err;
		now = xina_now_ns();
	}
	return 0;
}

static int xina_join_refused(struct xina *x, const struct xina_jwait *w,
			     unsigned int busy, uint64_t t0)
{
	switch (w->status) {
	case XINA_JOIN_BAD_KEY:
		xina_fail(x,
			  "job %u rank %u: the switch %s:%u says the key file %s is not the job's (bad key): "
			  "its secret is not the one \"xinactl job add ... keyfile\" was given for job %u",
			  x->o.job, x->o.rank, x->o.switch_addr,
			  x->o.switch_port, x->key_path, x->o.job);
		return -EKEYREJECTED;
	case XINA_JOIN_MISMATCH:
		xina_fail(x,
			  "job %u rank %u: the switch %s:%u refuses this worker's shape (mismatch): "
			  "the job has %u slots of %u elements, this worker asked for %u slots of %u elements of int32 "
			  "(a worker may use at most the job's slots and elements per slot)",
			  x->o.job, x->o.rank, x->o.switch_addr,
			  x->o.switch_port, w->job_slots, w->job_elems,
			  x->o.slots, x->o.elems);
		return -EMSGSIZE;
	}
	xina_fail(x,
		  "job %u rank %u: the switch %s:%u says the job is busy: a round of its current epoch "
		  "completed within the last %u ms, so another run of its workers is still using it; "
		  "asked %u times over %llu ms (busy)",
		  x->o.job, x->o.rank, x->o.switch_addr, x->o.switch_port,
		  XINA_JOIN_BUSY_MS, busy,
		  (unsigned long long)((xina_now_ns() - t0) / 1000000));
	return -EBUSY;
}

static int xina_join_silence(struct xina *x)
{
	char me[INET_ADDRSTRLEN] = "?";

	inet_ntop(AF_INET, &x->local.sin_addr, me, sizeof(me));
	xina_fail(x,
		  "job %u rank %u: no answer to the join from switch %s:%u in %u ms (%llu joins sent)%s. "
		  "The switch does not answer who it does not know: no job %u there, "
		  "rank %u not configured for this host's address %s (port %u), "
		  "the switch unreachable, or a switch that predates the join handshake. "
		  "\"xinactl stats\" on the switch tells which: no_job counts joins for a job it does not have, "
		  "drop_member those from an address the rank is not configured for, "
		  "join_stale those older than the job (a clock over %u s behind the switch's, "
		  "or a join begun over %u s before job add); none growing: "
		  "the joins do not reach it",
		  x->o.job, x->o.rank, x->o.switch_addr, x->o.switch_port,
		  x->o.timeout_ms, (unsigned long long)x->st.joins,
		  x->refused ? " (ICMP port unreachable: nothing listens on the switch port)" : "",
		  x->o.job, x->o.rank, me, ntohs(x->local.sin_port),
		  XINA_JOIN_SKEW_MS / 1000, XINA_JOIN_SKEW_MS / 1000);
	return -ETIMEDOUT;
}

int xina_join(struct xina *x)
{
	uint64_t t0 = xina_now_ns(), until, next;
	struct xina_jwait w = {};
	unsigned int busy = 0;
	int err;

	until = t0 + (uint64_t)x->o.timeout_ms * 1000000;
	for (;;) {
		memset(&w, 0, sizeof(w));
		w.nonce = xina_nonce();
		xina_join_fill(x, &w);
		xina_join_queue(x);
		err = xina_join_wait(x, &w, until);
		if (err)
			goto out;
		if (!w.answered) {
			err = busy ? xina_join_refused(x, &w, busy, t0) :
			      xina_join_silence(x);
			goto out;
		}
		if (w.status == XINA_JOIN_OK)
			break;
		if (w.status != XINA_JOIN_BUSY) {
			err = xina_join_refused(x, &w, busy, t0);
			goto out;
		}
		busy++;
		x->st.join_busy++;
		next = xina_now_ns() + XINA_JOIN_RETRY_MS * 1000000ull;
		xina_log(x, XINA_LOG_WARN,
			 "job %u rank %u: the switch says the job is busy (another run used it within %u ms); asking again",
			 x->o.job, x->o.rank, XINA_JOIN_BUSY_MS);
		if (next >= until) {
			w.status = XINA_JOIN_BUSY;
			err = xina_join_refused(x, &w, busy, t0);
			goto out;
		}
		err = xina_join_pause(x, &w, next);
		if (err)
			goto out;
	}
	x->epoch = w.epoch;
	x->st.epoch = w.epoch;
	x->zero_ok = w.flags & XINA_F_ZERO;
	xina_log(x, XINA_LOG_DEBUG,
		 "job %u rank %u: joined epoch %u (%llu joins, %u busy)",
		 x->o.job, x->o.rank, w.epoch,
		 (unsigned long long)x->st.joins, busy);
	err = 0;
out:
	/* Slot 0 is the engine's again, as if nothing had been sent. */
	x->txq_len = 0;
	memset(&x->slot[0], 0, sizeof(x->slot[0]));
	x->next_timer_ns = UINT64_MAX;
	return err;
}
