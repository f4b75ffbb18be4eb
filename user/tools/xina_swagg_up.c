// SPDX-License-Identifier: GPL-2.0
/*
 * xina-swagg as a rack agent (--up): two-level aggregation, Rina-style.
 *
 * The agent aggregates the workers of its rack (its --member ranks, a
 * subset of the job's) as xina-swagg does, but a slot version whose rack
 * members all contributed is not answered: the rack's partial (their sum,
 * or their max) goes up to the upper switch as one contribution of the
 * agent's own rank in the upper job (--up-job, secret --up-key-file), and
 * the upper job's result, once it comes back, is the rack version's
 * result: kept, sent to every rack member, and the answer to their
 * retransmissions, tagged with the rack job's K_res as any result.
 *
 * Rounds map one to one: slot s round r of the rack job is slot s round r
 * of the upper job.  Every worker of the job runs the same calls, so its
 * r-th use of slot s is everyone's; the rack's round r + 2 cannot start
 * before the rack's round r completed, which is after the upper round r
 * completed, so the upper job's round rules hold for the agent as for any
 * worker.  The agent joins the upper job before it serves its rack, and
 * again when a new run of the rack's workers opens a new rack epoch (the
 * rounds start at 0 again on both levels).
 *
 * Loss: a partial not answered within its timeout is sent again, flagged
 * XINA_F_RETRANS; the upper switch answers a retransmission to a completed
 * round with the kept result.  The timeout is libxina's: RFC 6298's
 * srtt + 4 rttvar over the partials answered without a resend (Karn), at
 * least --up-rto-us (20 ms: a round trip up includes waiting for the
 * slowest member of the upper job, which on a loaded host is often
 * longer than the network's), doubled per resend up to 200 ms.  A resend
 * that only races a slow round costs a packet each way on the inter-rack
 * link, so the floor is higher than a worker's.  A rack member
 * retransmitting to a version whose partial is up sends it up again if
 * the partial's timeout has passed (else the timer will); the member gets
 * the result with everyone once it comes.
 *
 * Aux: the partial carries the MAX of the rack members' aux, as one
 * contribution's (its resends too: only their flag and tag change); the
 * upper result's aux, the MAX over every rack, is what the rack's result
 * carries, so that every worker of the job gets the same word.
 *
 * Weight: the agent sends weight 0, as a worker does; it stands for its
 * rack by membership (Documentation/protocol.md, "Two levels").
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xina_auth.h"
#include "xina_clock.h"
#include "xina_nh.h"
#include "xina_keyfile.h"
#include "xina_swagg.h"

#define SW_UP_JOIN_RTO_US	50000	/* first resend of a join */
#define SW_UP_BUSY_MS		(XINA_JOIN_BUSY_MS / 5)

/* The timeout of a new partial, as libxina's. */
static uint32_t sw_up_rto(const struct sw_up *up)
{
	return xina_rtt_rto(&up->rtt, up->rto_us, up->rto_max_us, 0);
}

static size_t sw_up_pkt_sz(const struct swagg *sw)
{
	return sizeof(struct xina_hdr) + (size_t)sw->elems * 4;
}

static struct xina_hdr *sw_up_pkt(const struct swagg *sw, uint32_t vi)
{
	return (struct xina_hdr *)(sw->up->pkt + (size_t)vi * sw_up_pkt_sz(sw));
}

/* The upper job's keys, and room for one partial per slot version. */
int sw_up_setup(struct swagg *sw)
{
	uint8_t secret[XINA_SECRET_BYTES];
	struct sw_up *up = sw->up;
	size_t nver = (size_t)sw->slots * 2;
	char err[512];

	if (!up->job)
		up->job = sw->job;
	if (!up->addr.sin_port)
		up->addr.sin_port = htons(XINA_UDP_PORT);
	if (xina_keyfile_read(up->key_file, secret, err, sizeof(err))) {
		fprintf(stderr, "xina-swagg: --up-key-file: %s\n", err);
		return -EINVAL;
	}
	xina_derive_key(secret, XINA_LABEL_MEMBER, up->job, up->rank,
			up->kmine);
	xina_derive_key(secret, XINA_LABEL_RESULT, up->job, 0, up->kres);
	xina_derive_nh(secret, up->job, up->nhk, XINA_MAX_ELEMS);
	explicit_bzero(secret, sizeof(secret));
	up->q = calloc(nver, sizeof(*up->q));
	up->pkt = calloc(nver, sw_up_pkt_sz(sw));
	if (!up->q || !up->pkt) {
		fprintf(stderr, "xina-swagg: out of memory for the uplink\n");
		return -ENOMEM;
	}
	return 0;
}

static bool sw_up_from(const struct sw_up *up, const struct sockaddr_in *from)
{
	return from->sin_addr.s_addr == up->addr.sin_addr.s_addr &&
	       from->sin_port == up->addr.sin_port;
}

static uint64_t sw_up_nonce(struct sw_up *up)
{
	uint64_t now = xina_realtime_ns();

	up->nonce = now > up->nonce ? now : up->nonce + 1;
	return up->nonce;
}

/*
 * Read what arrives for up to @ms: the reply to the join @j, if it comes
 * (its status in *@status; 1 returned).  Anything else is dropped: rack
 * members resend what they sent meanwhile.  A steady stream of other
 * packets does not hold it past @ms, so that the join is sent again.
 */
static int sw_up_join_wait(struct swagg *sw, const struct xina_hdr *j,
			   int ms, uint32_t *status, uint32_t *epoch)
{
	struct pollfd pfd = { .fd = sw->fd, .events = POLLIN };
	uint64_t end = sw_now_ns() + (uint64_t)ms * 1000000;
	static uint8_t buf[SW_RX_BUF];
	struct sw_up *up = sw->up;
	struct sockaddr_in from;
	const struct xina_hdr *h;
	socklen_t fl;
	ssize_t len;

	if (poll(&pfd, 1, ms) <= 0)
		return 0;
	for (;;) {
		if (sw_now_ns() >= end)
			return 0;
		fl = sizeof(from);
		len = recvfrom(sw->fd, buf, sizeof(buf), MSG_DONTWAIT,
			       (struct sockaddr *)&from, &fl);
		if (len < 0)
			return 0;
		h = (const struct xina_hdr *)buf;
		if ((size_t)len < sizeof(*h) || !sw_up_from(up, &from) ||
		    h->version != XINA_WIRE_VERSION ||
		    h->type != XINA_T_JOIN_REPLY || h->job != j->job ||
		    h->rank != j->rank || h->offset != j->offset)
			continue;
		*status = ntohl(h->round);
		/* BAD_KEY echoes the join's tag: no key in common */
		if (*status == XINA_JOIN_BAD_KEY ? h->tag != j->tag :
		    be64toh(h->tag) != xina_tag_hdr(up->kmine, h, 0)) {
			up->bad_tag++;
			continue;
		}
		*epoch = ntohl(h->epoch);
		if (*status > XINA_JOIN_BUSY ||
		    (*status == XINA_JOIN_OK) != (*epoch != 0))
			continue;
		return 1;
	}
}

/*
 * Join the upper job as its member up->rank, as libxina's xina_open()
 * does (user/lib/libxina_join.c): a join with a fresh nonce, sent again
 * with the same nonce on its timeout; BUSY asks again with a new nonce.
 * Blocks for up to --up-timeout-ms.
 */
int sw_up_join(struct swagg *sw)
{
	struct sw_up *up = sw->up;
	uint64_t t0 = sw_now_ns(), until, now;
	uint32_t status = 0, epoch = 0, vi;
	char to[INET_ADDRSTRLEN] = "?";
	struct xina_hdr j;
	uint32_t rto;
	int ms, got;

	inet_ntop(AF_INET, &up->addr.sin_addr, to, sizeof(to));
	until = t0 + (uint64_t)up->timeout_ms * 1000000;
	for (;;) {
		memset(&j, 0, sizeof(j));
		j.version = XINA_WIRE_VERSION;
		j.type = XINA_T_JOIN;
		j.dtype = XINA_DTYPE_INT32;
		j.job = htonl(up->job);
		j.rank = htons(up->rank);
		j.slot = htonl(sw->slots);
		j.aux = htonl(sw->elems);
		j.epoch = htonl(sw->jj.run);	/* the workers' run */
		j.offset = htobe64(sw_up_nonce(up));
		j.tag = htobe64(xina_tag_hdr(up->kmine, &j, 0));
		rto = SW_UP_JOIN_RTO_US;
		got = 0;
		while (!got && (now = sw_now_ns()) < until) {
			if (sendto(sw->fd, &j, sizeof(j), 0,
				   (struct sockaddr *)&up->addr,
				   sizeof(up->addr)) != sizeof(j))
				sw->tx_err++;
			up->joins++;
			ms = rto / 1000;
			if (now + (uint64_t)ms * 1000000 > until)
				ms = (until - now) / 1000000 + 1;
			got = sw_up_join_wait(sw, &j, ms, &status, &epoch);
			rto = rto * 2 > up->rto_max_us * 4 ? rto : rto * 2;
		}
		if (!got) {
			fprintf(stderr, "xina-swagg: no answer to the join of upper job %u rank %u from %s:%u in %u ms%s\n",
				up->job, up->rank, to, ntohs(up->addr.sin_port),
				up->timeout_ms,
				status == XINA_JOIN_BUSY ? " (busy before)" : "");
			return -ETIMEDOUT;
		}
		if (status != XINA_JOIN_BUSY)
			break;
		/* another run still uses the upper job: ask again */
		ms = SW_UP_BUSY_MS;
		now = sw_now_ns();
		if (now + (uint64_t)ms * 1000000 >= until) {
			fprintf(stderr, "xina-swagg: upper job %u at %s is busy (another run of its workers)\n",
				up->job, to);
			return -EBUSY;
		}
		poll(NULL, 0, ms);
	}
	if (status != XINA_JOIN_OK) {
		fprintf(stderr, "xina-swagg: %s:%u refuses rank %u of upper job %u: %s\n",
			to, ntohs(up->addr.sin_port), up->rank, up->job,
			status == XINA_JOIN_BAD_KEY ?
			"the --up-key-file is not that job's (bad key)" :
			"its slots or elements per slot are not this rack job's (mismatch)");
		return status == XINA_JOIN_BAD_KEY ? -EKEYREJECTED : -EMSGSIZE;
	}
	if (epoch != up->epoch)
		up->epochs++;
	up->epoch = epoch;
	up->rack_epoch = sw->jj.epoch;
	/* Partials of the last epoch will never be answered. */
	for (vi = 0; vi < (uint32_t)sw->slots * 2; vi++)
		sw->ver[vi].up_pending = false;
	up->nq = 0;
	if (sw->verbose)
		fprintf(stderr, "xina-swagg: rank %u of upper job %u at %s: epoch %u (%llu ms)\n",
			up->rank, up->job, to, epoch,
			(unsigned long long)((sw_now_ns() - t0) / 1000000));
	return 0;
}

static void sw_up_queue(struct swagg *sw, uint32_t vi)
{
	struct sw_ver *v = &sw->ver[vi];
	struct sw_up *up = sw->up;

	if (up->nq == (uint32_t)sw->slots * 2)
		sw_flush(sw);
	up->q[up->nq++] = vi;
	v->up_sent_ns = sw_now_ns();
}

/*
 * The rack's members all contributed to version @vi (@h completed it):
 * its partial goes up as the agent's contribution to the same slot and
 * round of the upper job.
 */
void sw_up_partial(struct swagg *sw, uint32_t vi, const struct xina_hdr *h)
{
	const uint32_t *a = (const uint32_t *)sw->vals + (size_t)vi * sw->elems;
	struct xina_hdr *u = sw_up_pkt(sw, vi);
	struct sw_ver *v = &sw->ver[vi];
	uint32_t *out = (uint32_t *)(u + 1);
	struct sw_up *up = sw->up;

	*u = *h;
	/* never ZERO, even when @h was: the partial is a full block */
	u->flags = 0;
	u->op = v->op;
	u->job = htonl(up->job);
	u->rank = htons(up->rank);
	u->weight = 0;
	u->epoch = htonl(up->epoch);
	u->aux = htonl(v->aux);
	v->up_nh = xina_nh_pack(up->nhk, out, a, v->count);
	u->tag = htobe64(xina_tag_hdr(up->kmine, u, v->up_nh));
	v->up_pending = true;
	v->up_resent = false;
	v->up_rto_us = sw_up_rto(up);
	up->sent++;
	sw_up_queue(sw, vi);
	v->up_first_ns = v->up_sent_ns;
}

/* The partial of @vi once more, flagged as a retransmission. */
static void sw_up_resend(struct swagg *sw, uint32_t vi)
{
	struct xina_hdr *u = sw_up_pkt(sw, vi);
	struct sw_up *up = sw->up;

	/* the elements are the same: only the header's tag changes */
	if (!(u->flags & XINA_F_RETRANS)) {
		u->flags |= XINA_F_RETRANS;
		u->tag = htobe64(xina_tag_hdr(up->kmine, u,
					      sw->ver[vi].up_nh));
	}
	up->resent++;
	sw->ver[vi].up_resent = true;
	sw_up_queue(sw, vi);
}

/* A rack member asks again for @vi, whose result the upper job owes. */
void sw_up_again(struct swagg *sw, uint32_t vi)
{
	struct sw_ver *v = &sw->ver[vi];

	if (sw_now_ns() - v->up_sent_ns >= (uint64_t)v->up_rto_us * 1000)
		sw_up_resend(sw, vi);
}

/*
 * Resend the partials whose result is overdue, backing their timeout off;
 * milliseconds until this should run again.
 */
int sw_up_timers(struct swagg *sw)
{
	struct sw_up *up = sw->up;
	uint64_t now = sw_now_ns();
	struct sw_ver *v;
	uint32_t vi;

	if (now < up->next_scan_ns)
		return (up->next_scan_ns - now + 999999) / 1000000;
	for (vi = 0; vi < (uint32_t)sw->slots * 2; vi++) {
		v = &sw->ver[vi];
		if (!v->up_pending ||
		    now - v->up_sent_ns < (uint64_t)v->up_rto_us * 1000)
			continue;
		up->timeouts++;
		v->up_rto_us = v->up_rto_us * 2 > up->rto_max_us ?
			       up->rto_max_us : v->up_rto_us * 2;
		sw_up_resend(sw, vi);
	}
	up->next_scan_ns = now + (uint64_t)(up->rto_us / 2 > 1000 ?
					    up->rto_us / 2 : 1000) * 1000;
	return (up->next_scan_ns - now + 999999) / 1000000;
}

/* Queue this batch's partials to the upper switch: GSO trains. */
void sw_up_flush(struct swagg *sw, struct sw_txb *t)
{
	size_t max_seg, len, sz = sw_up_pkt_sz(sw);
	struct sw_up *up = sw->up;
	struct msghdr *mh = NULL;
	struct xina_hdr *u;
	uint32_t c, vi;

	max_seg = sw->gso ? 65000 / sz : 1;
	if (max_seg > SW_GSO_MAX)
		max_seg = SW_GSO_MAX;
	if (!max_seg)
		max_seg = 1;
	len = 0;
	for (c = 0; c < up->nq; c++) {
		vi = up->q[c];
		/* its result came in the meantime */
		if (!sw->ver[vi].up_pending)
			continue;
		u = sw_up_pkt(sw, vi);
		if (!mh || mh->msg_iovlen == max_seg ||
		    len != sizeof(*u) + ntohs(u->count) * 4u) {
			if (mh && mh->msg_iovlen > 1)
				sw_tx_gso(t, mh, len);
			mh = sw_tx_msg(sw, t, &up->addr);
			len = sizeof(*u) + ntohs(u->count) * 4u;
		}
		t->iov[t->niov].iov_base = u;
		t->iov[t->niov++].iov_len = len;
		mh->msg_iovlen++;
		sw->tx_dgrams++;
	}
	if (mh && mh->msg_iovlen > 1)
		sw_tx_gso(t, mh, len);
	up->nq = 0;
}

/*
 * A datagram from the upper switch (true; anything else is the rack's):
 * a result of the upper job for a partial in flight becomes the result of
 * the rack's version, sent down to every rack member.
 */
bool sw_up_packet(struct swagg *sw, const uint8_t *p, size_t len,
		  const struct sockaddr_in *from)
{
	const struct xina_hdr *h = (const struct xina_hdr *)p;
	const uint32_t *in = (const uint32_t *)(h + 1);
	struct sw_up *up = sw->up;
	uint32_t slot, round, vi;
	struct xina_hdr rh;
	struct sw_ver *v;
	uint16_t count;
	uint64_t nh;

	if (!sw_up_from(up, from))
		return false;
	count = len >= sizeof(*h) ? ntohs(h->count) : 0;
	if (len < sizeof(*h) || h->version != XINA_WIRE_VERSION ||
	    (h->type != XINA_T_RESULT && h->type != XINA_T_JOIN_REPLY)) {
		sw->gstat[XINA_GSTAT_MALFORMED]++;
		return true;
	}
	/* a join's reply resent late, or an answer of another epoch */
	if (h->type == XINA_T_JOIN_REPLY || ntohl(h->job) != up->job ||
	    ntohl(h->epoch) != up->epoch) {
		up->stale++;
		return true;
	}
	if (!count || count > sw->elems ||
	    len != sizeof(*h) + (size_t)count * 4) {
		sw->gstat[XINA_GSTAT_MALFORMED]++;
		return true;
	}
	/* one pass: the NH of its tag, and that of the rack's result */
	if (be64toh(h->tag) != xina_tag_hdr(up->kres, h,
					    xina_nh_wire2(up->nhk, sw->nhk, in,
							  count, &nh))) {
		up->bad_tag++;
		return true;
	}
	slot = ntohl(h->slot);
	round = ntohl(h->round);
	vi = slot * 2 + (round & 1);
	v = slot < sw->slots ? &sw->ver[vi] : NULL;
	/* an answer to a resend whose result already came */
	if (!v || !v->up_pending || v->round != round || v->count != count ||
	    v->offset != be64toh(h->offset) || v->op != h->op ||
	    v->dtype != h->dtype) {
		up->stale++;
		return true;
	}
	v->up_pending = false;
	if (!v->up_resent)
		xina_rtt_sample(&up->rtt, sw_now_ns() - v->up_first_ns);
	up->results++;
	/* the job's MAX replaces the rack's: sw_complete_nh() sends it down */
	v->aux = (int32_t)ntohl(h->aux);
	/* the rack version's own header: its job, epoch, slot and round */
	memset(&rh, 0, sizeof(rh));
	rh.version = XINA_WIRE_VERSION;
	rh.type = XINA_T_CONTRIB;
	rh.dtype = h->dtype;
	rh.op = v->op;
	rh.exp = h->exp;
	rh.count = h->count;
	rh.job = htonl(sw->job);
	rh.slot = h->slot;
	rh.round = h->round;
	rh.epoch = htonl(v->epoch);
	rh.offset = h->offset;
	/* its elements are the rack's result as they came */
	sw_complete_net(sw, vi, &rh, in, nh);
	return true;
}

void sw_up_print(const struct swagg *sw, bool json)
{
	const struct sw_up *up = sw->up;

	printf(json ? ",\"up\":{\"job\":%u,\"rank\":%u,\"epoch\":%u,\"joins\":%llu,"
		      "\"epochs\":%llu,\"sent\":%llu,\"resent\":%llu,\"timeouts\":%llu,"
		      "\"results\":%llu,\"stale\":%llu,\"bad_tag\":%llu}" :
		      "up: job %u rank %u epoch %u joins %llu epochs %llu sent %llu "
		      "resent %llu timeouts %llu results %llu stale %llu bad_tag %llu\n",
	       up->job, up->rank, up->epoch, (unsigned long long)up->joins,
	       (unsigned long long)up->epochs, (unsigned long long)up->sent,
	       (unsigned long long)up->resent,
	       (unsigned long long)up->timeouts,
	       (unsigned long long)up->results, (unsigned long long)up->stale,
	       (unsigned long long)up->bad_tag);
}
