// SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause)
/*
 * The host fallback (opts.fallback): a call the switch cannot take, or
 * stops answering, completes on a ring over TCP between the job's workers
 * (libxina_ring.c), with the same results.
 *
 * When.  xina_open()'s join gets no answer (the job is not on the switch,
 * e.g. "xinactl job add" found no room for it, or no switch is there): the
 * handle runs every call on the ring.  A call that gets no result within
 * its timeout: the call completes on the ring, and so does every later
 * call of the handle (a switch that stopped answering is not tried again;
 * restarting the workers tries it again).  Refusals the switch does answer
 * (bad key, mismatch, busy) stay errors: they are configuration errors a
 * fallback would only hide.
 *
 * Same results.  The ring reduces the very words the switch would have:
 * each block packed by the call's codec (integers as themselves, floats
 * quantised with the agreed block exponents, or mapped in total order),
 * folded by bpf/xina_lanes.h, the switch's own arithmetic, and unpacked
 * by the codec.  Integer arithmetic is exact and commutative, so the
 * results are bitwise those of the switch.  Blocks whose results the
 * switch delivered before it went away keep them: their result words are
 * kept as they arrive (xina_fb_save()) and travel as "done", so that the
 * peers that missed them get the same bits.
 *
 * Workers one call apart.  A worker may have completed call k on the
 * switch (all its results arrived) when a peer's call k timed out (its
 * last results were lost with the switch).  That worker times out in call
 * k + 1.  So every ring call starts with the workers agreeing on the
 * lowest call index among them (an INT64 MIN over the ring); a worker one
 * call ahead first serves call k from the result words it kept of it
 * (every block done), then both go on with k + 1.  This costs two word
 * buffers the size of a call's payload per handle (the current call's
 * results and the previous call's), only when opts.fallback is set.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "libxina_int.h"
#include "libxina_ring.h"

struct xina_fb_call {
	uint32_t	*w;		/* result words, network order */
	size_t		cap;		/* words allocated */
	size_t		nwords, wpb;
	uint64_t	idx;		/* engine call index */
	uint8_t		dtype, wop;
	bool		valid;		/* every block's result is in @w */
	int32_t		*e;		/* a piggybacked call: its agreed
					 * exponents, @ne of them; else @ne 0 */
	size_t		ne, ecap;
};

struct xina_fb {
	struct sockaddr_in	*peers;
	uint64_t		key[2];	/* the job's ring key */
	struct xina_ring	*ring;
	bool			ring_only;	/* the switch is given up */
	uint64_t		idx;		/* engine calls begun */
	struct xina_fb_call	cur, prev;
	uint8_t			*dn;
	size_t			dn_cap;
};

/* "ADDR:PORT,..." in rank order, one per worker. */
static int xina_fb_parse(struct xina *x, struct xina_fb *f)
{
	const char *s = x->o.fallback;
	char tok[64], *colon, *end;
	unsigned long port;
	size_t len;
	uint32_t i;

	f->peers = calloc(x->o.workers, sizeof(*f->peers));
	if (!f->peers)
		return -ENOMEM;
	for (i = 0; i < x->o.workers; i++) {
		len = strcspn(s, ",");
		if (!len || len >= sizeof(tok))
			goto bad;
		memcpy(tok, s, len);
		tok[len] = 0;
		colon = strrchr(tok, ':');
		if (!colon)
			goto bad;
		*colon = 0;
		port = strtoul(colon + 1, &end, 10);
		if (*end || !port || port > 65535 ||
		    inet_pton(AF_INET, tok, &f->peers[i].sin_addr) != 1)
			goto bad;
		f->peers[i].sin_family = AF_INET;
		f->peers[i].sin_port = htons(port);
		s += len;
		if (i + 1 < x->o.workers) {
			if (*s != ',') {
				xina_fail(x, "opts.fallback lists %u ring addresses for %u workers (one ADDR:PORT per rank, comma-separated)",
					  i + 1, x->o.workers);
				return -EINVAL;
			}
			s++;
		}
	}
	if (*s) {
		xina_fail(x, "opts.fallback lists more ring addresses than the %u workers",
			  x->o.workers);
		return -EINVAL;
	}
	return 0;
bad:
	xina_fail(x, "opts.fallback: rank %u's ring address '%.*s' is not IPV4:PORT",
		  i, (int)strcspn(s, ","), s);
	return -EINVAL;
}

int xina_fb_init(struct xina *x, const uint8_t *secret)
{
	struct xina_fb *f;
	int err;

	if (!x->o.fallback)
		return 0;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	x->fb = f;
	err = xina_fb_parse(x, f);
	if (err)
		return err;
	xina_ring_key(secret, x->o.job, f->key);
	return 0;
}

void xina_fb_free(struct xina *x)
{
	struct xina_fb *f = x->fb;

	if (!f)
		return;
	xina_ring_close(f->ring);
	explicit_bzero(f->key, sizeof(f->key));
	free(f->peers);
	free(f->cur.w);
	free(f->prev.w);
	free(f->cur.e);
	free(f->prev.e);
	free(f->dn);
	free(f);
	x->fb = NULL;
}

bool xina_fb_ring_only(const struct xina *x)
{
	return x->fb && x->fb->ring_only;
}

void xina_fb_give_up_switch(struct xina *x, const char *why)
{
	x->fb->ring_only = true;
	xina_log(x, XINA_LOG_WARN,
		 "job %u rank %u: %s; every call goes to the host fallback ring",
		 x->o.job, x->o.rank, why);
}

static size_t xina_fb_nwords(const struct xina_codec *k, size_t n)
{
	size_t nb = (n + k->per_pkt - 1) / k->per_pkt;

	if (!nb)
		return 0;
	return (nb - 1) * xina_codec_words(k, k->per_pkt) +
	       xina_codec_words(k, n - (nb - 1) * k->per_pkt);
}

/*
 * Room for @nwords result words in the copy of the call's results: -ENOMEM,
 * and the handle's error says so, when they do not fit in memory.
 */
static int xina_fb_reserve(struct xina *x, size_t nwords)
{
	struct xina_fb_call *fc = &x->fb->cur;
	uint32_t *w;

	if (nwords <= fc->cap)
		return 0;
	w = realloc(fc->w, nwords * sizeof(*w));
	if (!w) {
		xina_fail(x, "out of memory for the host fallback's copy of %zu result words",
			  nwords);
		return -ENOMEM;
	}
	fc->w = w;
	fc->cap = nwords;
	return 0;
}

/*
 * An engine call begins: make room to keep its results.  -ENOMEM only
 * when opts.fallback is set and the words do not fit in memory; then no
 * call began.
 */
int xina_fb_begin(struct xina *x, size_t n, const struct xina_codec *k)
{
	struct xina_fb *f = x->fb;
	size_t nwords;
	int err;

	if (!f)
		return 0;
	nwords = xina_fb_nwords(k, n);
	err = xina_fb_reserve(x, nwords);
	if (err)
		return err;	/* no call begun: the peers' next is still ours */
	f->cur.valid = false;
	f->cur.idx = f->idx++;
	f->cur.nwords = nwords;
	f->cur.wpb = xina_codec_words(k, k->per_pkt);
	f->cur.dtype = k->dtype;
	f->cur.wop = k->wop;
	return 0;
}

/*
 * Room for the results of an engine call of @n elements of @k, before an
 * API call sends anything (xina_run()): its engine calls then find it
 * (none is larger), and a copy that does not fit fails the call before
 * anything is sent, which leaves the handle in step with its peers.
 */
int xina_fb_prepare(struct xina *x, size_t n, const struct xina_codec *k)
{
	return x->fb ? xina_fb_reserve(x, xina_fb_nwords(k, n)) : 0;
}

/* A result of the switch, kept for the ring (network order). */
void xina_fb_save(struct xina *x, uint64_t block, const uint32_t *v,
		  size_t words)
{
	struct xina_fb *f = x->fb;

	if (f)
		memcpy(f->cur.w + block * f->cur.wpb, v, words * sizeof(*v));
}

/*
 * The call completed: its results are what a peer behind may ask for;
 * with the exponents of a piggybacked call, which that peer agrees on
 * first (xina_fb_exps()).  Without room for them the call is not kept: a
 * peer behind then fails, as with no copy at all.
 */
void xina_fb_end(struct xina *x, const int32_t *pexps, size_t nblocks)
{
	struct xina_fb *f = x->fb;
	struct xina_fb_call t;

	if (!f)
		return;
	f->cur.ne = 0;
	if (pexps) {
		if (xina_grow((void **)&f->cur.e, &f->cur.ecap, nblocks,
			      sizeof(*f->cur.e)))
			return;
		memcpy(f->cur.e, pexps, nblocks * sizeof(*pexps));
		f->cur.ne = nblocks;
	}
	f->cur.valid = true;
	t = f->prev;
	f->prev = f->cur;
	f->cur = t;
}

static uint8_t *xina_fb_dn(struct xina_fb *f, size_t nb)
{
	uint8_t *d;

	if (nb > f->dn_cap) {
		d = realloc(f->dn, nb);
		if (!d)
			return NULL;
		f->dn = d;
		f->dn_cap = nb;
	}
	return f->dn;
}

static int xina_fb_ring_err(struct xina *x, int err, const char *what,
			    const char *msg)
{
	xina_fail(x, "job %u rank %u: host fallback ring: %s: %s", x->o.job,
		  x->o.rank, what, msg);
	return err;
}

/*
 * A piggybacked call's exponents on the ring: an INT32 MAX of @e, each
 * worker's agreed exponent of a block where it has one (from the switch,
 * for the blocks before the slot's next), else its own of the block.
 * The agreed exponent is the MAX of the workers' own, so both give it:
 * every worker ends with the exponents the switch would have agreed.
 */
static int xina_fb_exps(struct xina *x, int32_t *e, size_t nb)
{
	uint32_t *w = (uint32_t *)e;
	char msg[512];
	size_t b;
	int err;

	for (b = 0; b < nb; b++)
		w[b] = htonl((uint32_t)e[b]);
	err = xina_ring_allreduce(x->fb->ring, w, nb, 1, NULL,
				  XINA_DTYPE_INT32, XINA_OP_MAX, msg,
				  sizeof(msg));
	for (b = 0; b < nb; b++)
		e[b] = (int32_t)ntohl(w[b]);
	if (err)
		return xina_fb_ring_err(x, err, "agreeing on the exponents", msg);
	return xina_check_exps(x, e, nb);
}

/*
 * Agree with the ring on the call to run: serve the previous one first
 * for peers still in it.
 */
static int xina_fb_agree(struct xina *x)
{
	struct xina_fb *f = x->fb;
	struct xina_fb_call *p = &f->prev;
	uint64_t me = f->cur.idx, low;
	char msg[512];
	uint32_t w[2];
	size_t nb;
	int err;

	for (;;) {
		w[0] = htonl(me >> 32);
		w[1] = htonl((uint32_t)me);
		err = xina_ring_allreduce(f->ring, w, 2, 2, NULL,
					  XINA_DTYPE_INT64, XINA_OP_MIN, msg,
					  sizeof(msg));
		if (err)
			return xina_fb_ring_err(x, err, "agreeing on the call", msg);
		low = (uint64_t)ntohl(w[0]) << 32 | ntohl(w[1]);
		if (low == me)
			return 0;
		if (low + 1 != me || !p->valid || p->idx != low) {
			xina_fail(x, "job %u rank %u: host fallback ring: a peer is at call %llu, this worker at %llu: more than one call apart, or this worker did not keep that call's results",
				  x->o.job, x->o.rank, (unsigned long long)low,
				  (unsigned long long)me);
			return -EPROTO;
		}
		/* A peer missed results of our previous call: serve them. */
		nb = p->wpb ? (p->nwords + p->wpb - 1) / p->wpb : 0;
		if (!xina_fb_dn(f, nb))
			return -ENOMEM;
		/*
		 * The ring's allgather receives in place, before a message's
		 * tag is checked: a call that failed may have left a peer's
		 * bytes in the kept results, which are not served again.
		 */
		if (p->ne) {
			err = xina_fb_exps(x, p->e, p->ne);
			if (err) {
				p->valid = false;
				return err;
			}
		}
		memset(f->dn, 1, nb);
		err = xina_ring_allreduce(f->ring, p->w, p->nwords, p->wpb,
					  f->dn, p->dtype, p->wop, msg,
					  sizeof(msg));
		if (err) {
			p->valid = false;
			return xina_fb_ring_err(x, err, "serving the previous call", msg);
		}
		x->st.fallback_served++;
		xina_log(x, XINA_LOG_WARN,
			 "job %u rank %u: served call %llu's results to the host fallback ring",
			 x->o.job, x->o.rank, (unsigned long long)low);
	}
}

/* Open the ring, once: every peer comes to it within its own timeout. */
static int xina_fb_open(struct xina *x)
{
	struct xina_fb *f = x->fb;
	uint64_t idle = (xina_now_ns() - x->idle_since_ns) / 1000000;
	/* the peers' own call and join timeouts, and then some */
	uint64_t tmo = 3ULL * x->o.timeout_ms +
		       2 * (idle > 600000 ? 600000 : idle);
	struct xina_ring_cfg cfg = {
		.job = x->o.job, .rank = x->o.rank, .workers = x->o.workers,
		.peers = f->peers, .key = f->key,
		.timeout_ms = tmo > INT_MAX ? INT_MAX : (int)tmo,
	};
	char msg[512];
	int err;

	if (f->ring)
		return 0;
	err = xina_ring_open(&cfg, &f->ring, msg, sizeof(msg));
	if (err)
		return xina_fb_ring_err(x, err, "opening", msg);
	return 0;
}

/*
 * Run the call on the ring: @done (one byte per block, or NULL for none)
 * marks the blocks whose results came from the switch (their words are in
 * the kept copy, and @buf has them already).
 */
int xina_fb_run(struct xina *x, void *buf, size_t n,
		const struct xina_codec *k, int32_t *exps, bool piggy,
		const uint8_t *done)
{
	struct xina_fb *f = x->fb;
	struct xina_fb_call *c = &f->cur;
	size_t esz = xina_codec_esz(k), nb, b, cnt;
	struct xina_ring_stats rs0, rs1;
	char msg[512];
	uint8_t *dn;
	int err;

	err = xina_fb_open(x);
	if (err)
		return err;
	xina_ring_stats(f->ring, &rs0);
	err = xina_fb_agree(x);
	if (err)
		return err;
	nb = (n + k->per_pkt - 1) / k->per_pkt;
	dn = xina_fb_dn(f, nb);
	if (!dn && nb)
		return -ENOMEM;
	if (piggy) {
		/* a block not done here is not unpacked: @buf has its input */
		for (b = 0; b < nb; b++) {
			if (exps[b] != XINA_EXP_UNKNOWN)
				continue;
			err = xina_block_exp(x, k, buf, n, b, &exps[b]);
			if (err)
				return err;
		}
		err = xina_fb_exps(x, exps, nb);
		if (err)
			return err;
	}
	for (b = 0; b < nb; b++) {
		dn[b] = done ? done[b] : 0;
		if (dn[b])
			continue;
		cnt = xina_blk_elems(n, k->per_pkt, b);
		xina_codec_pack(x, k, c->w + b * c->wpb,
				(const uint8_t *)buf + b * k->per_pkt * esz,
				cnt, exps ? exps[b] : 0);
	}
	err = xina_ring_allreduce(f->ring, c->w, c->nwords, c->wpb, dn,
				  k->dtype, k->wop, msg, sizeof(msg));
	if (err)
		return xina_fb_ring_err(x, err, "the call", msg);
	for (b = 0; b < nb; b++) {
		if (dn[b])
			continue;
		cnt = xina_blk_elems(n, k->per_pkt, b);
		xina_codec_unpack(x, k, (uint8_t *)buf + b * k->per_pkt * esz,
				  c->w + b * c->wpb, cnt, exps ? exps[b] : 0);
	}
	xina_ring_stats(f->ring, &rs1);
	x->st.fallback_calls++;
	x->st.fallback_tx_bytes += rs1.tx_bytes - rs0.tx_bytes;
	x->st.fallback_rx_bytes += rs1.rx_bytes - rs0.rx_bytes;
	x->st.fallback = 1;
	return 0;
}
