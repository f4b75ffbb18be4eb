// SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause)
/*
 * libxina: handle, options, and the windowed int32 allreduce engine.
 *
 * The tensor is cut into blocks of `elems` elements; block b always uses
 * slot b % slots, so each slot carries blocks s, s + slots, s + 2 slots...
 * one at a time.  A slot's round counter lives in the handle and grows on
 * every use, across calls, exactly like the switch's view of the slot: the
 * switch keeps two versions per slot (round & 1), and a worker only starts
 * round r + 1 of a slot after it has the result of round r.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "libxina_int.h"
#include "xina_auth.h"
#include "../../bpf/xina_lanes.h"
#include "xina_nh.h"
#include "xina_keyfile.h"

#ifndef offsetofend
#define offsetofend(T, m) (offsetof(T, m) + sizeof(((T *)0)->m))
#endif

uint64_t xina_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

int xina_fail(struct xina *x, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(x->err, sizeof(x->err), fmt, ap);
	va_end(ap);
	return 0;
}

void xina_log(struct xina *x, enum xina_log_level lvl, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (!x->o.log || lvl > x->o.log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	x->o.log(x->o.log_ctx, lvl, msg);
}

const char *xina_last_error(const struct xina *x)
{
	const char *e;

	if (!x)
		return "no error";
	e = __atomic_load_n(&x->threaded, __ATOMIC_ACQUIRE) ? x->cerr : x->err;
	return e[0] ? e : "no error";
}

const char *xina_io_reason(const struct xina *x)
{
	return x ? x->io_reason : "";
}

int xina_get_stats(const struct xina *x, struct xina_worker_stats *st)
{
	struct xina_worker_stats all;
	size_t n;

	if (!x || !st || st->sz < offsetofend(struct xina_worker_stats, sz))
		return -EINVAL;
	/* The lock is the handle's, not part of its value: const stays. */
	pthread_mutex_lock((pthread_mutex_t *)&x->lock);
	all = x->threaded ? x->st_snap : x->st;
	pthread_mutex_unlock((pthread_mutex_t *)&x->lock);
	if (x->io && x->io->stats)
		x->io->stats(x, &all);
	all.vec = xina_vec_paths();
	/* an older caller's struct is shorter: fill what it has */
	n = st->sz < sizeof(all) ? st->sz : sizeof(all);
	all.sz = n;
	memcpy(st, &all, n);
	return 0;
}

unsigned int xina_headroom_bits(unsigned int workers)
{
	unsigned int l = 0;

	while (l < 31 && (1u << l) < workers)
		l++;
	return l;
}

/*
 * Copy the caller's options, whatever size its build of struct xina_opts
 * has: a shorter struct leaves our newer fields at zero (= default), a
 * longer one must not set anything we do not know about.
 */
static int xina_opts_copy(struct xina_opts *dst, const struct xina_opts *src,
			  size_t *unknown)
{
	const uint8_t *tail;
	size_t i;

	memset(dst, 0, sizeof(*dst));
	if (!src || src->sz < offsetofend(struct xina_opts, sz))
		return -EINVAL;
	/* what we know first: the refusal below reaches the caller's log */
	memcpy(dst, src, src->sz < sizeof(*dst) ? src->sz : sizeof(*dst));
	dst->sz = sizeof(*dst);
	if (src->sz > sizeof(*dst)) {
		tail = (const uint8_t *)src + sizeof(*dst);
		for (i = 0; i < src->sz - sizeof(*dst); i++) {
			if (tail[i]) {
				*unknown = sizeof(*dst) + i;
				return -EOPNOTSUPP;
			}
		}
	}
	return 0;
}

static int xina_opts_check(struct xina_opts *o, char *err, size_t len)
{
	if (!o->switch_addr) {
		snprintf(err, len, "no switch address given");
		return -EINVAL;
	}
	if (!o->job) {
		snprintf(err, len, "job id 0 is invalid (1..4294967295)");
		return -EINVAL;
	}
	if (!o->workers || o->workers > XINA_MAX_WORKERS) {
		snprintf(err, len, "workers %u out of range 1..%u",
			 o->workers, XINA_MAX_WORKERS);
		return -EINVAL;
	}
	if (o->rank >= o->workers) {
		snprintf(err, len, "rank %u out of range 0..%u",
			 o->rank, o->workers - 1);
		return -EINVAL;
	}
	if (!o->slots || o->slots > (1u << 20)) {
		snprintf(err, len, "slots %u out of range 1..%u",
			 o->slots, 1u << 20);
		return -EINVAL;
	}
	if (!o->elems || o->elems > XINA_MAX_ELEMS) {
		snprintf(err, len, "elems %u out of range 1..%u",
			 o->elems, XINA_MAX_ELEMS);
		return -EINVAL;
	}
	if (o->flags & ~XINA_OPT_F_ALL) {
		snprintf(err, len, "unknown option flags 0x%x",
			 o->flags & ~XINA_OPT_F_ALL);
		return -EINVAL;
	}
	if (o->max_requests > XINA_MAX_REQUESTS) {
		snprintf(err, len, "max_requests %u out of range 0..%u",
			 o->max_requests, XINA_MAX_REQUESTS);
		return -EINVAL;
	}
	if (o->io != XINA_IO_AUTO && o->io != XINA_IO_UDP &&
	    o->io != XINA_IO_XSK) {
		snprintf(err, len, "io %d is none of XINA_IO_AUTO, XINA_IO_UDP, XINA_IO_XSK",
			 o->io);
		return -EINVAL;
	}
	if (!o->switch_port)
		o->switch_port = XINA_UDP_PORT;
	if (!o->timeout_ms)
		o->timeout_ms = XINA_DEF_TIMEOUT_MS;
	if (!o->rto_us)
		o->rto_us = XINA_DEF_RTO_US;
	if (!o->rto_max_us)
		o->rto_max_us = XINA_DEF_RTO_MAX_US;
	if (o->rto_max_us < o->rto_us)
		o->rto_max_us = o->rto_us;
	if (!o->max_requests)
		o->max_requests = XINA_DEF_MAX_REQUESTS;
	return 0;
}

static int xina_alloc(struct xina *x)
{
	uint32_t slots = x->o.slots;

	x->slot = calloc(slots, sizeof(*x->slot));
	x->next_round = calloc(slots, sizeof(*x->next_round));
	x->txq = calloc(slots, sizeof(*x->txq));
	if (!x->slot || !x->next_round || !x->txq)
		return -ENOMEM;
	return 0;
}

void xina_close(struct xina *x)
{
	if (!x)
		return;
	xina_req_shutdown(x);
	xina_io_close(x);
	if (x->fd >= 0)
		close(x->fd);
	free(x->slot);
	free(x->next_round);
	free(x->txq);
	free(x->rx);
	free(x->exps);
	free(x->sp_map);
	free(x->sp_at);
	if (x->nhk)
		explicit_bzero(x->nhk, XINA_MAX_ELEMS * sizeof(*x->nhk));
	free(x->nhk);
	explicit_bzero(x->kmine, sizeof(x->kmine));
	explicit_bzero(x->kres, sizeof(x->kres));
	xina_fb_free(x);
	free(x);
}

/* The keys of this handle, from the job's secret in opts.key_file. */
static int xina_keys(struct xina *x)
{
	uint8_t secret[XINA_SECRET_BYTES];
	int err;

	if (!x->o.key_file) {
		xina_fail(x, "no key file given (opts.key_file): the job's secret is required");
		return -EINVAL;
	}
	snprintf(x->key_path, sizeof(x->key_path), "%s", x->o.key_file);
	err = xina_keyfile_read(x->o.key_file, secret, x->err, sizeof(x->err));
	if (err)
		return err;
	x->nhk = malloc(XINA_MAX_ELEMS * sizeof(*x->nhk));
	if (!x->nhk) {
		explicit_bzero(secret, sizeof(secret));
		xina_fail(x, "out of memory for the keys");
		return -ENOMEM;
	}
	xina_derive_key(secret, XINA_LABEL_MEMBER, x->o.job, x->o.rank,
			x->kmine);
	xina_derive_key(secret, XINA_LABEL_RESULT, x->o.job, 0, x->kres);
	xina_derive_nh(secret, x->o.job, x->nhk, XINA_MAX_ELEMS);
	err = xina_fb_init(x, secret);
	explicit_bzero(secret, sizeof(secret));
	if (err == -ENOMEM)
		xina_fail(x, "out of memory for the host fallback");
	if (err)
		return err;
	x->o.fallback = NULL;	/* parsed: nothing points at it any more */
	/* only the file's name was borrowed; nothing keeps pointing at it */
	x->o.key_file = NULL;
	return 0;
}

void xina_tx_tag(struct xina *x, uint32_t s)
{
	struct xina_hdr *h = (struct xina_hdr *)xina_tx_pkt(x, s);

	h->tag = htobe64(xina_tag_hdr(x->kmine, h, x->slot[s].nh));
}

int xina_open(const struct xina_opts *opts, struct xina **out)
{
	struct xina *x;
	size_t unknown = 0;
	int err;

	if (!out)
		return -EINVAL;
	*out = NULL;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->fd = -1;
	xina_req_init(x);
	err = xina_opts_copy(&x->o, opts, &unknown);
	if (err == -EOPNOTSUPP) {
		xina_fail(x, "options struct (sz %zu) sets byte %zu, past the %zu bytes this libxina knows: a field it does not know",
			  opts->sz, unknown, sizeof(x->o));
		goto err_out;
	}
	if (err) {
		xina_fail(x, "options struct missing or too short (sz)");
		goto err_out;
	}
	err = xina_opts_check(&x->o, x->err, sizeof(x->err));
	if (err)
		goto err_out;
	err = xina_keys(x);
	if (err)
		goto err_out;
	x->pkt_sz = sizeof(struct xina_hdr) + (size_t)x->o.elems * 4;
	x->headroom = xina_headroom_bits(x->o.workers);
	err = xina_alloc(x);
	if (err) {
		xina_fail(x, "out of memory for %u slots", x->o.slots);
		goto err_out;
	}
	err = xina_sock_open(x);
	if (err)
		goto err_out;
	err = xina_io_open(x);
	if (err)
		goto err_out;
	err = xina_join(x);
	if (err == -ETIMEDOUT && x->fb) {
		/* not on the switch, or no switch: the ring takes the calls */
		xina_fb_give_up_switch(x, x->err);
		err = 0;
	}
	if (err)
		goto err_out;
	x->idle_since_ns = xina_now_ns();
	*out = x;
	return 0;

err_out:
	/*
	 * The caller gets no handle to ask xina_last_error() with: pass the
	 * reason to its log callback, the only channel left.
	 */
	if (x->o.log)
		x->o.log(x->o.log_ctx, XINA_LOG_WARN, x->err);
	xina_close(x);
	return err;
}

/* State of one call of the engine. */
struct xina_call {
	void		*buf;		/* n elements of k->type, or see @at */
	size_t		n;
	const uint32_t	*at;		/* where each block is in @buf, or NULL */
	uint64_t	nblocks;
	uint64_t	done;
	uint64_t	seen;		/* datagrams handed to xina_on_result() */
	uint64_t	progress_ns;	/* last time a result was accepted */
	uint64_t	probed_ns;	/* last tail probe (xina_probe()) */
	uint64_t	join_ns;	/* timeout until the first result */
	struct xina_worker_stats st0;	/* handle counters at the start */
	int32_t		*exps;		/* XINA_K_BFP: per block; else NULL */
	bool		piggy;		/* @exps past the first window come
					 * back in the results' aux */
	int		err;		/* set in a callback: the call fails */
	const struct xina_codec *k;
	size_t		esz;		/* bytes of one element of @buf */
};

/* Elements of @block, the last one short. */
static size_t xina_block_cnt(const struct xina_call *c, uint64_t block)
{
	return xina_blk_elems(c->n, c->k->per_pkt, block);
}

/* Where @block of call @c is in its buffer (xina_reduce_at()). */
static uint8_t *xina_call_at(const struct xina_call *c, uint64_t block)
{
	uint64_t b = c->at ? c->at[block] & ~XINA_AT_ZERO : block;

	return (uint8_t *)c->buf + b * c->k->per_pkt * c->esz;
}

/* Block @block of call @c is zeros we were told of, not read from @buf. */
static bool xina_call_zero(const struct xina_call *c, uint64_t block)
{
	return c->at && (c->at[block] & XINA_AT_ZERO);
}

static void xina_txq_push(struct xina *x, uint32_t s)
{
	if (x->slot[s].queued)
		return;
	x->slot[s].queued = true;
	x->txq[x->txq_len++] = s;
}

/*
 * Retransmission timeout of a fresh packet: RFC 6298 over the round trip
 * to the result, which includes waiting for the slowest peer; opts.rto_us
 * is the floor, opts.rto_max_us the cap.  A fixed short timeout resends
 * most of a large window on a loaded host, each resend costing the switch
 * an answer.  As in TCP (RFC 6298 5.5-5.7), an expiry also backs off the
 * timeout of packets sent later, until a fresh sample arrives: resent
 * packets give no samples (Karn), so without that, a peer descheduled
 * for longer than the RTO makes every later packet expire as well.
 */
static uint32_t xina_rto(const struct xina *x)
{
	return xina_rtt_rto(&x->rtt, x->o.rto_us, x->o.rto_max_us, x->backoff);
}

static void xina_rtt_note(struct xina *x, uint64_t ns)
{
	x->backoff = 0;
	xina_rtt_sample(&x->rtt, ns);
}

/* Build the packet of @block in slot @s's transmit buffer and queue it. */
static void xina_fill(struct xina *x, struct xina_call *c, uint32_t s,
		      uint64_t block)
{
	struct xina_hdr *h = (struct xina_hdr *)xina_tx_pkt(x, s);
	uint64_t off = block * c->k->per_pkt;
	uint32_t *v = (uint32_t *)(h + 1);
	size_t cnt, words;
	bool told_zero;
	int32_t e = 0;

	xina_tx_own(x, s);
	cnt = xina_block_cnt(c, block);
	words = xina_codec_words(c->k, cnt);
	memset(h, 0, sizeof(*h));
	h->version = XINA_WIRE_VERSION;
	h->type = XINA_T_CONTRIB;
	h->dtype = c->k->dtype;
	h->op = c->k->wop;
	if (c->exps) {
		e = c->exps[block];
		h->exp = e < -128 ? -128 : e > 127 ? 127 : e;
	}
	if (c->piggy) {
		/* the slot's next block: read now, packed a window later */
		x->slot[s].lexp = XINA_EXP_ZERO;
		if (block + x->o.slots < c->nblocks && !c->err)
			c->err = xina_block_exp(x, c->k, c->buf, c->n,
						block + x->o.slots,
						&x->slot[s].lexp);
		h->aux = htonl((uint32_t)x->slot[s].lexp);
	}
	h->count = htons(words);
	h->job = htonl(x->o.job);
	h->rank = htons(x->o.rank);
	h->slot = htonl(s);
	h->round = htonl(x->next_round[s]);
	h->epoch = htonl(x->epoch);
	h->offset = htobe64(off);
	/* zeros pack as zero words, in every codec */
	told_zero = xina_call_zero(c, block);
	if (told_zero)
		memset(v, 0, words * sizeof(*v));
	else
		xina_codec_pack(x, c->k, v, xina_call_at(c, block), cnt, e);
	/*
	 * Zero words, for an op whose identity they are, where the switch
	 * offered it: the header alone says so (a sparse call's blocks this
	 * worker holds nothing of, or any block of zeros).  The words stay
	 * in the buffer for a resend, which carries them.
	 */
	x->slot[s].zero = x->zero_ok && xina_op_zero_ok(h->op) &&
			  (told_zero || xina_words_zero(v, words));
	if (x->slot[s].zero) {
		h->flags = XINA_F_ZERO;
		x->slot[s].nh = 0;
		x->st.zero_sent++;
	} else {
		x->slot[s].nh = xina_nh_wire(x->nhk, v, words);
	}
	xina_tx_tag(x, s);

	x->slot[s].busy = true;
	x->slot[s].block = block;
	x->slot[s].round = x->next_round[s]++;
	x->slot[s].rto_us = xina_rto(x);
	x->slot[s].resent = false;
	x->slot[s].fast = false;
	x->slot[s].sent_ns = 0;
	x->st.sent++;
	xina_txq_push(x, s);
}

/*
 * Queue slot @s's packet again, flagged as a resend (re-tagged: the flags
 * are under the tag); no RTT sample from it (Karn).  A XINA_F_ZERO block
 * goes with its zero words: the switch answers a resend in its frame.
 */
static void xina_resend(struct xina *x, uint32_t s)
{
	struct xina_hdr *h = (struct xina_hdr *)xina_tx_pkt(x, s);

	xina_tx_own(x, s);
	if (x->slot[s].zero) {
		h->flags &= ~XINA_F_ZERO;
		x->slot[s].nh = xina_nh_wire(x->nhk, (const uint32_t *)(h + 1),
					     ntohs(h->count));
		x->slot[s].zero = false;
	}
	h->flags |= XINA_F_RETRANS;
	xina_tx_tag(x, s);
	x->slot[s].resent = true;
	x->st.retrans++;
	xina_txq_push(x, s);
}

/*
 * Fast retransmit, as TCP's after three duplicate ACKs: results come back
 * in about the order the blocks went out, so a block still waiting when
 * the result of a block XINA_REORDER places later arrived was most likely
 * lost, by this worker or by a peer.  Resend it now rather than at its
 * timer (whose floor is far above the rack's round trip); if only a
 * peer's copy was lost, the switch drops this one as a duplicate.  Once
 * per transmission: the timer stays the backstop.
 *
 * Unlike TCP's segments, blocks complete in the order the slowest worker
 * sends them, not this one: while one slot waits for a peer's lost (or
 * descheduled) contribution, later slots keep completing, and without a
 * second condition every waiting block would be resent at once.  So a
 * block must also be older than the smoothed round trip plus twice its
 * variation: one that is not late is not lost, whatever order the results
 * come in.  At 1% loss (4 workers, MTU 9000, 32 slots) this took resends
 * from a quarter of all sends to a tenth, and goodput from 0.75 to about
 * 0.85 of lossless.
 */
#define XINA_REORDER	3

static void xina_fast_retransmit(struct xina *x, uint64_t block,
				 uint64_t now)
{
	uint64_t young = ((uint64_t)x->rtt.srtt_us + 2ull * x->rtt.rttvar_us) * 1000;
	struct xina_slot *sl;
	uint32_t s;

	if (block < XINA_REORDER)
		return;
	for (s = 0; s < x->o.slots; s++) {
		sl = &x->slot[s];
		if (!sl->busy || sl->queued || sl->fast ||
		    sl->block + XINA_REORDER > block ||
		    now - sl->sent_ns < young)
			continue;
		sl->fast = true;
		xina_resend(x, s);
	}
}

/*
 * The agreed exponent of @block, the switch's MAX of the workers' in the
 * result of the block before it in slot @sl: no lower than this worker's
 * own (else the aggregator does not take the MAX of aux: an older one),
 * and one a peer could have sent.  Else the call fails: packing under
 * an exponent below the block's would clamp its values.
 */
static int xina_piggy_exp(struct xina *x, struct xina_call *c,
			  const struct xina_slot *sl, uint64_t block, int32_t e)
{
	if (xina_exp_ok(e) && e >= sl->lexp) {
		c->exps[block] = e;
		return 0;
	}
	xina_fail(x, "the switch's exponent of block %llu is %d, this worker's %d: the aggregator does not keep the MAX of the contributions' aux (xina.ko, XDP program or xina-swagg older than this libxina?)",
		  (unsigned long long)block, e, sl->lexp);
	c->err = -EPROTO;
	return c->err;
}

/* Is @p the result our slot waits for?  Place it and refill the slot. */
static void xina_on_result(struct xina *x, const uint8_t *p, size_t len,
			   void *ctx)
{
	const struct xina_hdr *h = (const struct xina_hdr *)p;
	const uint32_t *v = (const uint32_t *)(h + 1);
	struct xina_call *c = ctx;
	size_t cnt, words;
	uint64_t off, block;
	struct xina_slot *sl;
	uint32_t s;

	c->seen++;
	if (c->err)
		return;
	/* A join's reply again (a resend crossed ours): no result. */
	if (len >= sizeof(*h) && h->version == XINA_WIRE_VERSION &&
	    h->type == XINA_T_JOIN_REPLY) {
		x->st.ignored++;
		return;
	}
	/* Malformed as the switch's own egress check has it (xina.bpf.c). */
	if (len < sizeof(*h) || h->version != XINA_WIRE_VERSION ||
	    h->type != XINA_T_RESULT || h->dtype != c->k->dtype ||
	    h->flags || h->weight ||
	    len != sizeof(*h) + (size_t)ntohs(h->count) * 4) {
		x->st.malformed++;
		return;
	}
	s = ntohl(h->slot);
	/* Another job's, or of another epoch (a run before this one). */
	if (ntohl(h->job) != x->o.job || s >= x->o.slots ||
	    ntohl(h->epoch) != x->epoch) {
		x->st.ignored++;
		return;
	}
	sl = &x->slot[s];
	/* A late duplicate of a result we already placed, or a stray. */
	if (!sl->busy || ntohl(h->round) != sl->round) {
		x->st.ignored++;
		return;
	}
	block = sl->block;
	off = block * c->k->per_pkt;
	cnt = xina_block_cnt(c, block);
	words = xina_codec_words(c->k, cnt);
	if (be64toh(h->offset) != off || ntohs(h->count) != words ||
	    h->op != c->k->wop) {
		x->st.malformed++;
		return;
	}
	/* Only from the switch: a forged or modified result is not placed. */
	if (be64toh(h->tag) != xina_tag_hdr(x->kres, h,
					    xina_nh_wire(x->nhk, v, words))) {
		x->st.bad_tag++;
		return;
	}
	if (c->piggy && block + x->o.slots < c->nblocks &&
	    xina_piggy_exp(x, c, sl, block + x->o.slots, (int32_t)ntohl(h->aux)))
		return;
	xina_codec_unpack(x, c->k, xina_call_at(c, block), v, cnt,
			  c->exps ? c->exps[block] : 0);
	xina_fb_save(x, block, v, words);
	sl->busy = false;
	x->st.results++;
	c->done++;
	c->progress_ns = xina_now_ns();
	if (!sl->resent && sl->sent_ns)
		xina_rtt_note(x, c->progress_ns - sl->sent_ns);
	xina_fast_retransmit(x, block, c->progress_ns);
	if (block + x->o.slots < c->nblocks)
		xina_fill(x, c, s, block + x->o.slots);
}

/*
 * Tail loss probe, as TCP's (RFC 8985, 7): fast retransmit needs the
 * results of later blocks, and the tail of a call has none: its last
 * window of blocks, the few blocks of the float exponents' call, a
 * one-element call's only one.  A loss there waited for the timer, whose
 * floor (opts.rto_us, 5 ms) is many round trips on a rack.  So once every
 * block left is in flight, when no result has come for two smoothed round
 * trips (at least XINA_PTO_MIN_US), each block first sent at least that
 * long ago that neither fast retransmit nor a probe has resent yet is
 * sent again: once per transmission (a timer's resend does not count);
 * the timer stays the backstop.  Where a peer is late rather than a packet
 * lost, a probe costs the switch a tag check and a drop as a duplicate:
 * at most a window of them per call, as the probe waits for the tail.
 */
#define XINA_PTO_MIN_US	500

static uint64_t xina_pto_ns(const struct xina *x)
{
	uint64_t us = 2ull * x->rtt.srtt_us;

	return (us < XINA_PTO_MIN_US ? XINA_PTO_MIN_US : us) * 1000;
}

/* When to probe the tail of call @c: never before it is in its tail. */
static uint64_t xina_probe_at(const struct xina *x, const struct xina_call *c)
{
	uint64_t from = c->progress_ns > c->probed_ns ? c->progress_ns :
							c->probed_ns;

	if (!x->rtt.srtt_us || c->nblocks - c->done > x->o.slots)
		return UINT64_MAX;
	return from + xina_pto_ns(x);
}

static void xina_probe(struct xina *x, struct xina_call *c, uint64_t now)
{
	uint64_t pto = xina_pto_ns(x);
	struct xina_slot *sl;
	uint32_t s;

	c->probed_ns = now;
	for (s = 0; s < x->o.slots; s++) {
		sl = &x->slot[s];
		if (!sl->busy || sl->queued || sl->fast || !sl->sent_ns ||
		    now - sl->sent_ns < pto)
			continue;
		sl->fast = true;
		x->st.probes++;
		xina_resend(x, s);
	}
}

/* Queue a resend for every slot whose timer expired; back off. */
static void xina_timers(struct xina *x, uint64_t now)
{
	uint64_t next = UINT64_MAX;
	struct xina_slot *sl;
	uint32_t s;

	for (s = 0; s < x->o.slots; s++) {
		sl = &x->slot[s];
		if (!sl->busy || sl->queued)
			continue;
		if (sl->deadline_ns > now) {
			if (sl->deadline_ns < next)
				next = sl->deadline_ns;
			continue;
		}
		sl->rto_us = (uint64_t)sl->rto_us * 2 > x->o.rto_max_us ?
			     x->o.rto_max_us : sl->rto_us * 2;
		x->st.timeouts++;
		if (x->backoff < 8)
			x->backoff++;
		xina_resend(x, s);
	}
	x->next_timer_ns = next;
}

/*
 * How long a call may wait for its first result: some peer may not have
 * reached the call yet.  See join_timeout_ms in libxina.h.  The float32
 * value pass follows its exponent pass closely, so it gets little more
 * than timeout_ms.
 */
static uint64_t xina_join_ns(const struct xina *x, uint64_t t0)
{
	if (x->o.join_timeout_ms)
		return (uint64_t)x->o.join_timeout_ms * 1000000;
	return (uint64_t)x->o.timeout_ms * 1000000 +
	       2 * (t0 - x->idle_since_ns);
}

/*
 * How long the call may go without a result: the join timeout before its
 * first one; once a block completed, every peer is in the call and a
 * stall means loss or death: opts.timeout_ms.
 */
static uint64_t xina_call_timeout_ns(const struct xina *x,
				     const struct xina_call *c)
{
	return c->done ? (uint64_t)x->o.timeout_ms * 1000000 : c->join_ns;
}

static int xina_timeout_error(struct xina *x, struct xina_call *c)
{
	uint64_t gso = x->st.gso_sends - c->st0.gso_sends;
	char list[256] = "", hint[128] = "", trains[256] = "";
	size_t len = 0;
	unsigned int k = 0;
	uint32_t s;

	for (s = 0; s < x->o.slots && len < sizeof(list) - 48; s++) {
		if (!x->slot[s].busy)
			continue;
		if (k++ < 8)
			len += snprintf(list + len, sizeof(list) - len,
					"%sslot %u round %u", k > 1 ? ", " : "",
					s, x->slot[s].round);
	}
	/*
	 * What this call sent and heard tells the cases apart: resends
	 * without any answer point at the path or the switch, answers that
	 * were ignored or malformed point at the two ends disagreeing.
	 */
	/* the switch names who its open rounds wait for */
	if (!x->refused)
		snprintf(hint, sizeof(hint),
			 "; 'xinactl job rounds %u' on the switch names the ranks its open rounds wait for",
			 x->o.job);
	/* a port in generic XDP mode (behind a veth) gets the trains whole */
	if (!x->refused && gso)
		snprintf(trains, sizeof(trains),
			 "%llu datagrams went out in GSO trains, which a switch port in generic XDP "
			 "mode refuses for a job that hands up to an upper switch (its 'xinactl stats' "
			 "count them as train_refused; XINA_OPT_F_NO_GSO sends one datagram per packet); ",
			 (unsigned long long)gso);
	xina_fail(x,
		  "job %u rank %u: no result from switch %s:%u for %llu ms%s; "
		  "%s %s: %llu of %llu blocks done, %u outstanding (%s%s); "
		  "this call: %llu resends, %llu datagrams ignored, %llu malformed; %s%s%s",
		  x->o.job, x->o.rank, x->o.switch_addr, x->o.switch_port,
		  (unsigned long long)(xina_call_timeout_ns(x, c) / 1000000),
		  c->done ? "" : " (join timeout: a peer may not have reached this call)",
		  xina_type_name(c->k->type), xina_op_name(c->k->op),
		  (unsigned long long)c->done,
		  (unsigned long long)c->nblocks, k, list, k > 8 ? ", ..." : "",
		  (unsigned long long)(x->st.retrans - c->st0.retrans),
		  (unsigned long long)(x->st.ignored - c->st0.ignored),
		  (unsigned long long)(x->st.malformed - c->st0.malformed),
		  trains, x->refused ? "the switch port is unreachable (ICMP port unreachable)" :
		  "a peer stopped contributing, the switch is gone, or a new run of the job's workers "
		  "joined a new epoch since this one (the switch counts this worker's packets as drop_epoch)",
		  hint);
	return -ETIMEDOUT;
}

/*
 * Read every datagram already queued for this handle, without waiting,
 * before the timers judge the slots.  rx_poll() reads a bounded batch (so
 * that refills go out while results keep coming); a worker that was off
 * its CPU for a while finds up to a window's results queued, and their
 * slots are not late.  Resending them costs the switch a tag check and an
 * answer each: with 128 slots on the 4-worker rack, a launch that lost no
 * packet counted 18,350 timeouts without this pass, 4,221 with it.
 */
static int xina_rx_queued(struct xina *x, struct xina_call *c)
{
	uint64_t seen;
	uint32_t i;
	int err;

	/* Bounded: results keep arriving while we read. */
	for (i = 0; i <= x->o.slots; i++) {
		seen = c->seen;
		err = x->io->rx_poll(x, 0, xina_on_result, c);
		if (err < 0 || c->seen == seen)
			return err;
	}
	return 0;
}

static int xina_wait_ms(struct xina *x, struct xina_call *c, uint64_t now)
{
	uint64_t until = c->progress_ns + xina_call_timeout_ns(x, c);
	uint64_t probe = xina_probe_at(x, c);

	if (x->next_timer_ns < until)
		until = x->next_timer_ns;
	if (probe < until)
		until = probe;
	if (until <= now)
		return 0;
	/* Round up: waking before the deadline just loops once more. */
	until = (until - now + 999999) / 1000000;
	return until > INT_MAX ? INT_MAX : (int)until;
}

static void xina_log_call(struct xina *x, const struct xina_call *c,
			  uint64_t t0)
{
	xina_log(x, XINA_LOG_DEBUG,
		 "%s %s of %zu elements%s: %llu blocks in %.3f ms, %llu resends, rto %u us",
		 xina_type_name(c->k->type), xina_op_name(c->k->op), c->n,
		 c->exps ? " (block floating point)" : "",
		 (unsigned long long)c->nblocks,
		 (xina_now_ns() - t0) / 1e6,
		 (unsigned long long)(x->st.retrans - c->st0.retrans), xina_rto(x));
}

/*
 * Call @c on the host ring, but for the blocks @done marks (NULL: none).
 * The ring reduces a buffer of the call's blocks one after another: a
 * call whose blocks are elsewhere (c->at) gets one for the ring's run,
 * filled from its places and emptied back into them.
 */
static int xina_fb_call(struct xina *x, const struct xina_call *c,
			const uint8_t *done)
{
	uint8_t *flat, *p;
	uint64_t b;
	size_t len;
	int err;

	if (!c->at)
		return xina_fb_run(x, c->buf, c->n, c->k, c->exps, c->piggy,
				   done);
	flat = malloc(c->n ? c->n * c->esz : 1);
	if (!flat) {
		xina_fail(x, "out of memory for the %llu blocks of a call on the host ring",
			  (unsigned long long)c->nblocks);
		return -ENOMEM;
	}
	for (b = 0, p = flat; b < c->nblocks; b++, p += len) {
		len = xina_block_cnt(c, b) * c->esz;
		/* a done block holds its result, zeros or not */
		if (xina_call_zero(c, b) && !(done && done[b]))
			memset(p, 0, len);
		else
			memcpy(p, xina_call_at(c, b), len);
	}
	err = xina_fb_run(x, flat, c->n, c->k, c->exps, false, done);
	for (b = 0, p = flat; !err && b < c->nblocks; b++, p += len) {
		len = xina_block_cnt(c, b) * c->esz;
		memcpy(xina_call_at(c, b), p, len);
	}
	free(flat);
	return err;
}

/*
 * The switch stopped answering: the blocks it did answer keep their
 * results (block b went to slot b % slots, and blocks before the slot's
 * current one completed), the rest complete on the host ring.
 */
static int xina_rescue(struct xina *x, struct xina_call *c)
{
	char why[sizeof(x->err)];
	uint8_t *done;
	uint64_t b;
	int err;

	xina_timeout_error(x, c);
	snprintf(why, sizeof(why), "%s", x->err);
	done = calloc(c->nblocks ? c->nblocks : 1, 1);
	if (!done) {
		xina_fail(x, "%s; out of memory for the host fallback", why);
		return -ENOMEM;
	}
	for (b = 0; b < c->nblocks; b++) {
		const struct xina_slot *sl = &x->slot[b % x->o.slots];

		done[b] = b < sl->block || (b == sl->block && !sl->busy);
	}
	for (b = 0; b < x->o.slots; b++)
		x->slot[b].busy = false;
	x->txq_len = 0;
	xina_fb_give_up_switch(x, why);
	err = xina_fb_call(x, c, done);
	free(done);
	return err;
}

static int xina_switch_blocks(struct xina *x, struct xina_call *c);

static int xina_engine(struct xina *x, struct xina_call *c)
{
	int err = xina_fb_begin(x, c->n, c->k);

	if (err)
		return err;
	c->nblocks = (c->n + c->k->per_pkt - 1) / c->k->per_pkt;
	c->esz = xina_codec_esz(c->k);
	if (xina_fb_ring_only(x))
		err = xina_fb_call(x, c, NULL);
	else
		err = xina_switch_blocks(x, c);
	if (!err)
		xina_fb_end(x, c->piggy ? c->exps : NULL, c->nblocks);
	x->idle_since_ns = xina_now_ns();
	return err;
}

/* The engine keeps @exps as it is: it only writes a piggybacked call's. */
int xina_reduce_at(struct xina *x, void *buf, size_t n,
		   const struct xina_codec *k, const int32_t *exps,
		   const uint32_t *at)
{
	struct xina_call c = {
		.buf = buf, .n = n, .at = at, .k = k, .exps = (int32_t *)exps,
	};

	return xina_engine(x, &c);
}

int xina_reduce_piggy(struct xina *x, void *buf, size_t n,
		      const struct xina_codec *k, int32_t *exps)
{
	struct xina_call c = {
		.buf = buf, .n = n, .k = k, .exps = exps, .piggy = true,
	};

	return xina_engine(x, &c);
}

int xina_reduce_blocks(struct xina *x, void *buf, size_t n,
		       const struct xina_codec *k, const int32_t *exps)
{
	return xina_reduce_at(x, buf, n, k, exps, NULL);
}

/* Call @c through the switch. */
static int xina_switch_blocks(struct xina *x, struct xina_call *c)
{
	uint64_t t0 = xina_now_ns(), now, b;
	int err;

	c->st0 = x->st;
	c->progress_ns = t0;
	c->join_ns = xina_join_ns(x, t0);
	x->next_timer_ns = UINT64_MAX;
	for (b = 0; b < c->nblocks && b < x->o.slots; b++)
		xina_fill(x, c, b, b);

	while (c->done < c->nblocks) {
		if (c->err)
			return c->err;
		err = x->io->tx_flush(x);
		if (err)
			return err;
		now = xina_now_ns();
		err = x->io->rx_poll(x, xina_wait_ms(x, c, now),
				     xina_on_result, c);
		if (err < 0)
			return err;
		if (c->err)
			return c->err;
		if (xina_stopping(x)) {
			xina_fail(x, "handle closed with the call in flight");
			return -ECANCELED;
		}
		now = xina_now_ns();
		/* What is queued already is not late: read it first. */
		if (c->done < c->nblocks &&
		    (now >= x->next_timer_ns || now >= xina_probe_at(x, c) ||
		     now - c->progress_ns >= xina_call_timeout_ns(x, c))) {
			err = xina_rx_queued(x, c);
			if (err < 0)
				return err;
			if (c->err)
				return c->err;
			now = xina_now_ns();
		}
		if (c->done < c->nblocks &&
		    now - c->progress_ns >= xina_call_timeout_ns(x, c))
			return x->fb ? xina_rescue(x, c) :
				       xina_timeout_error(x, c);
		if (now >= x->next_timer_ns)
			xina_timers(x, now);
		if (c->done < c->nblocks && now >= xina_probe_at(x, c))
			xina_probe(x, c, now);
	}
	xina_log_call(x, c, t0);
	return 0;
}

/* The checks every allreduce starts with, before anything is sent. */
int xina_call_check(struct xina *x, const void *buf, size_t n)
{
	if (!x)
		return -EINVAL;
	if (x->broken) {
		xina_fail(x, "handle unusable after an earlier failure; restart the job's workers (each reopens its handle: their joins open a new epoch)");
		return -ENOTRECOVERABLE;
	}
	if (n && !buf) {
		xina_fail(x, "NULL buffer for %zu elements", n);
		return -EINVAL;
	}
	return 0;
}
