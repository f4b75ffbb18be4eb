// SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause)
/*
 * The host fallback's ring allreduce over TCP (libxina_ring.h).
 *
 * Rank r listens on peers[r], connects to r + 1 and accepts r - 1 (modulo
 * the workers).  A call is the textbook ring: W - 1 steps of
 * reduce-scatter, where in step s rank r sends segment r - s to r + 1 and
 * folds segment r - s - 1 from r - 1 into its own copy, then W - 1 steps
 * of allgather.  Segments are whole blocks, so a block's "done" byte (a
 * result the switch delivered before it went away) travels with it: when
 * either side of a fold holds the result, the result wins, and every
 * worker ends with it (all workers that hold a block's result hold the
 * same bits: the switch sent one result).  Every rank sends and receives
 * in each step at once (non-blocking sockets and poll), or a ring of
 * blocking sends larger than the socket buffers would wait on itself.
 * A segment travels as messages of up to 256 KiB of words, each tagged:
 * the words go out of the caller's buffer and each message is folded in
 * as it completes, while the next one arrives (xring_pass()).
 *
 * Integer folds are exact and commutative, so the result does not depend
 * on which rank started a segment: the same bits as the switch's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <sys/random.h>
#include <endian.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "libxina_ring.h"
#include "../common/xina_nh.h"
#include "../../bpf/xina_auth.h"
#include "../../bpf/xina_lanes.h"

#define XRING_LABEL	0x676e722d616e6978ULL	/* "xina-rng" */
#define XRING_LABEL_NH	0x686e722d616e6978ULL	/* "xina-rnh" */
#define XRING_MAGIC	0x58524e47u		/* "XRNG" */
#define XRING_VERSION	2	/* 2: words in network order, messages of
				 * XRING_MSG_BYTES, NH in their tags */

enum xring_kind {
	XRING_HELLO = 1,	/* client: who I am, my nonce */
	XRING_CHALLENGE = 2,	/* server: my nonce, proof of the key */
	XRING_PROOF = 3,	/* client: proof of the key */
	XRING_DATA = 4,
};

enum xring_role {	/* what a handshake tag stands for */
	XRING_TAG_SERVER = 1,
	XRING_TAG_CLIENT = 2,
	XRING_TAG_SESS0 = 3,
	XRING_TAG_SESS1 = 4,
};

/* Handshake message, 32 bytes, all fields in network order. */
struct xring_hs {
	uint32_t	magic;
	uint16_t	version;
	uint16_t	kind;
	uint32_t	job;
	uint32_t	rank;	/* the sender's */
	uint64_t	nonce;	/* HELLO, CHALLENGE: the sender's */
	uint64_t	tag;	/* CHALLENGE, PROOF */
};

/* Data message header; a SipHash tag of header and payload follows them. */
struct xring_dh {
	uint32_t	magic;
	uint32_t	seq;
	uint64_t	len;	/* payload bytes */
};

/* A message's words are hashed (NH) in pieces of this many. */
#define XRING_NH_WORDS	XINA_MAX_ELEMS

struct xring_conn {
	int		fd;
	uint64_t	ks[2];	/* session key */
	uint32_t	nh[XRING_NH_WORDS + 2];	/* session NH key */
	uint32_t	seq;	/* next message's */
};

struct xina_ring {
	struct xina_ring_cfg	cfg;
	struct sockaddr_in	*peers;
	__u64			k[2];	/* the job's ring key */
	int			lfd;
	struct xring_conn	next, prev;
	uint8_t			*tx, *rx;
	size_t			buf_sz;
	uint8_t			*dn;	/* done byte per block */
	size_t			dn_sz;
	struct xina_ring_stats	st;
};

static int xring_err(char *err, size_t errlen, int e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return e;
}

static uint64_t xring_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ull + ts.tv_nsec / 1000000;
}

static const char *xring_addr(const struct sockaddr_in *a, char *buf,
			      size_t len)
{
	char ip[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
	snprintf(buf, len, "%s:%u", ip, ntohs(a->sin_port));
	return buf;
}

/* The handshake's tags: both ranks, both nonces, and what it stands for. */
static uint64_t xring_hs_tag(const struct xina_ring *r, enum xring_role role,
			     uint32_t client, uint32_t server, uint64_t nc,
			     uint64_t ns)
{
	uint64_t m[4] = {
		xina_le64((uint64_t)role << 32 | r->cfg.job),
		xina_le64((uint64_t)client << 32 | server),
		xina_le64(nc), xina_le64(ns),
	};

	return xina_siphash(r->k[0], r->k[1], m, sizeof(m));
}

static void xring_session(const struct xina_ring *r, struct xring_conn *c,
			  uint32_t client, uint32_t server, uint64_t nc,
			  uint64_t ns)
{
	uint64_t m[2], x;
	size_t i;

	c->ks[0] = xring_hs_tag(r, XRING_TAG_SESS0, client, server, nc, ns);
	c->ks[1] = xring_hs_tag(r, XRING_TAG_SESS1, client, server, nc, ns);
	/* the NH key: SipHash of a counter under the session key */
	for (i = 0; i < XRING_NH_WORDS + 2; i += 2) {
		m[0] = xina_le64(XRING_LABEL_NH);
		m[1] = xina_le64(i / 2);
		x = xina_siphash(c->ks[0], c->ks[1], m, sizeof(m));
		c->nh[i] = (uint32_t)x;
		c->nh[i + 1] = (uint32_t)(x >> 32);
	}
	explicit_bzero(&x, sizeof(x));
	c->seq = 0;
}

static void xring_hs_fill(const struct xina_ring *r, struct xring_hs *h,
			  enum xring_kind kind, uint64_t nonce, uint64_t tag)
{
	memset(h, 0, sizeof(*h));
	h->magic = htonl(XRING_MAGIC);
	h->version = htons(XRING_VERSION);
	h->kind = htons(kind);
	h->job = htonl(r->cfg.job);
	h->rank = htonl(r->cfg.rank);
	h->nonce = htobe64(nonce);
	h->tag = htobe64(tag);
}

static bool xring_hs_ok(const struct xina_ring *r, const struct xring_hs *h,
			enum xring_kind kind, uint32_t rank)
{
	return ntohl(h->magic) == XRING_MAGIC &&
	       ntohs(h->version) == XRING_VERSION &&
	       ntohs(h->kind) == kind && ntohl(h->job) == r->cfg.job &&
	       ntohl(h->rank) == rank;
}

static uint64_t xring_nonce(void)
{
	uint64_t n = 0;

	while (getrandom(&n, sizeof(n), 0) != sizeof(n))
		;
	return n;
}

static uint32_t xring_next_rank(const struct xina_ring *r)
{
	return (r->cfg.rank + 1) % r->cfg.workers;
}

static uint32_t xring_prev_rank(const struct xina_ring *r)
{
	return (r->cfg.rank + r->cfg.workers - 1) % r->cfg.workers;
}

static int xring_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) ? -errno : 0;
}

/* Connect to the next rank (retrying while it is not listening yet). */
static int xring_connect(struct xina_ring *r, uint64_t deadline, char *err,
			 size_t errlen)
{
	const struct sockaddr_in *a = &r->peers[xring_next_rank(r)];
	char where[64];
	int fd, e;

	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return xring_err(err, errlen, -errno, "socket: %s",
					 strerror(errno));
		if (!connect(fd, (const struct sockaddr *)a, sizeof(*a)))
			break;
		e = errno;
		close(fd);
		if (e != ECONNREFUSED && e != ENETUNREACH && e != EINTR)
			return xring_err(err, errlen, -e,
					 "connect to rank %u at %s: %s",
					 xring_next_rank(r),
					 xring_addr(a, where, sizeof(where)),
					 strerror(e));
		if (xring_now_ms() >= deadline)
			return xring_err(err, errlen, -ETIMEDOUT,
					 "rank %u at %s did not listen within %d ms (is its worker running, with the same fallback addresses?)",
					 xring_next_rank(r),
					 xring_addr(a, where, sizeof(where)),
					 r->cfg.timeout_ms);
		usleep(20000);
	}
	r->next.fd = fd;
	return xring_nonblock(fd);
}

/*
 * The handshake, both halves in one event loop: as a client on r->next
 * (hello sent, then the server's challenge checked and our proof sent),
 * as a server on every connection accepted (its hello checked, our
 * challenge sent, its proof checked).  Nothing waits on one peer while
 * another could progress: a ring whose ranks each waited for their
 * previous rank's proof before answering their next rank would wait on
 * itself, and a connection that never speaks (a port scan, a rogue) would
 * hold the ring up.  Up to XRING_PENDING connections are evaluated at once,
 * the oldest dropped for a new one; each that fails is closed and counted
 * (rejected): it changed nothing and got nothing but our nonce and a tag
 * it cannot use (its role and both ranks are in it).
 */
#define XRING_PENDING	8

enum xring_hs_state {
	XRING_S_FREE = 0,
	XRING_S_HELLO,		/* server: waiting for the hello */
	XRING_S_PROOF,		/* server: challenge sent, waiting for the proof */
	XRING_S_CHALLENGE,	/* client: hello sent, waiting for the challenge */
	XRING_S_DONE,
};

struct xring_hs_conn {
	int			fd;
	enum xring_hs_state	state;
	uint64_t		mine, theirs;	/* nonces */
	uint64_t		since_ms;	/* accepted at */
	struct xring_hs		in;
	size_t			got;
};

static void xring_hs_drop(struct xina_ring *r, struct xring_hs_conn *c)
{
	r->st.rejected++;
	close(c->fd);
	c->fd = -1;
	c->state = XRING_S_FREE;
}

/* A whole message into @c->in; 1 when complete, 0 for more, <0 error. */
static int xring_hs_read(struct xring_hs_conn *c)
{
	ssize_t n = recv(c->fd, (uint8_t *)&c->in + c->got,
			 sizeof(c->in) - c->got, MSG_DONTWAIT);

	if (!n)
		return -ECONNRESET;
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	c->got += n;
	if (c->got < sizeof(c->in))
		return 0;
	c->got = 0;
	return 1;
}

static int xring_hs_send(const struct xina_ring *r, int fd,
			 enum xring_kind kind, uint64_t nonce, uint64_t tag)
{
	struct xring_hs h;

	xring_hs_fill(r, &h, kind, nonce, tag);
	/* 32 bytes into an empty socket buffer: all or nothing */
	return send(fd, &h, sizeof(h), MSG_NOSIGNAL | MSG_DONTWAIT) ==
	       sizeof(h) ? 0 : -EIO;
}

/* The client side, on r->next: the challenge in @c->in. */
static int xring_hs_client(struct xina_ring *r, struct xring_hs_conn *c,
			   char *err, size_t errlen)
{
	uint32_t me = r->cfg.rank, nx = xring_next_rank(r);

	c->theirs = be64toh(c->in.nonce);
	if (!xring_hs_ok(r, &c->in, XRING_CHALLENGE, nx) ||
	    be64toh(c->in.tag) != xring_hs_tag(r, XRING_TAG_SERVER, me, nx,
					       c->mine, c->theirs))
		return xring_err(err, errlen, -EACCES,
				 "the ring peer at rank %u's address does not hold job %u's key (or is not rank %u of it): check the key files and the fallback addresses",
				 nx, r->cfg.job, nx);
	if (xring_hs_send(r, c->fd, XRING_PROOF, 0,
			  xring_hs_tag(r, XRING_TAG_CLIENT, me, nx, c->mine,
				       c->theirs)))
		return xring_err(err, errlen, -ECONNRESET,
				 "ring handshake with rank %u: connection lost", nx);
	xring_session(r, &r->next, me, nx, c->mine, c->theirs);
	c->state = XRING_S_DONE;
	return 0;
}

/* The server side: a message in @c->in; false to drop the connection. */
static bool xring_hs_server(struct xina_ring *r, struct xring_hs_conn *c)
{
	uint32_t me = r->cfg.rank, pv = xring_prev_rank(r);

	if (c->state == XRING_S_HELLO) {
		if (!xring_hs_ok(r, &c->in, XRING_HELLO, pv))
			return false;
		c->theirs = be64toh(c->in.nonce);
		c->mine = xring_nonce();
		c->state = XRING_S_PROOF;
		return !xring_hs_send(r, c->fd, XRING_CHALLENGE, c->mine,
				      xring_hs_tag(r, XRING_TAG_SERVER, pv, me,
						   c->theirs, c->mine));
	}
	if (!xring_hs_ok(r, &c->in, XRING_PROOF, pv) ||
	    be64toh(c->in.tag) != xring_hs_tag(r, XRING_TAG_CLIENT, pv, me,
					       c->theirs, c->mine))
		return false;
	r->prev.fd = c->fd;
	xring_session(r, &r->prev, pv, me, c->theirs, c->mine);
	c->fd = -1;
	c->state = XRING_S_DONE;
	return true;
}

/* Take a new connection, evicting the oldest pending one if all are. */
static void xring_hs_accept(struct xina_ring *r, struct xring_hs_conn *sv)
{
	struct xring_hs_conn *c = NULL;
	int fd, i;

	fd = accept4(r->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	for (i = 0; i < XRING_PENDING; i++) {
		if (sv[i].state == XRING_S_FREE) {
			c = &sv[i];
			break;
		}
		if (!c || sv[i].since_ms < c->since_ms)
			c = &sv[i];
	}
	if (c->state != XRING_S_FREE)
		xring_hs_drop(r, c);
	*c = (struct xring_hs_conn){
		.fd = fd, .state = XRING_S_HELLO, .since_ms = xring_now_ms(),
	};
}

static int xring_handshake(struct xina_ring *r, uint64_t deadline, char *err,
			   size_t errlen)
{
	struct xring_hs_conn cl = { .fd = r->next.fd, .state = XRING_S_CHALLENGE };
	struct xring_hs_conn sv[XRING_PENDING];
	struct pollfd p[XRING_PENDING + 2];
	uint64_t now;
	int i, n, e;

	for (i = 0; i < XRING_PENDING; i++)
		sv[i] = (struct xring_hs_conn){ .fd = -1 };
	cl.mine = xring_nonce();
	if (xring_hs_send(r, cl.fd, XRING_HELLO, cl.mine, 0))
		return xring_err(err, errlen, -ECONNRESET,
				 "rank %u closed the ring connection",
				 xring_next_rank(r));
	while (r->prev.fd < 0 || cl.state != XRING_S_DONE) {
		now = xring_now_ms();
		if (now >= deadline)
			break;
		p[0] = (struct pollfd){ .fd = r->prev.fd < 0 ? r->lfd : -1,
					.events = POLLIN };
		p[1] = (struct pollfd){ .fd = cl.state == XRING_S_DONE ? -1 : cl.fd,
					.events = POLLIN };
		for (i = 0; i < XRING_PENDING; i++)
			p[i + 2] = (struct pollfd){ .fd = sv[i].fd,
						    .events = POLLIN };
		n = poll(p, XRING_PENDING + 2, deadline - now > 1000 ? 1000 :
			 deadline - now);
		if (n < 0 && errno != EINTR)
			return xring_err(err, errlen, -errno, "poll: %s",
					 strerror(errno));
		if (n <= 0)
			continue;
		if (p[1].revents) {
			e = xring_hs_read(&cl);
			if (e < 0)
				return xring_err(err, errlen, e,
						 "rank %u closed the ring connection during the handshake (%s): does it hold job %u's key?",
						 xring_next_rank(r), strerror(-e),
						 r->cfg.job);
			if (e > 0 && xring_hs_client(r, &cl, err, errlen))
				return -EACCES;
		}
		for (i = 0; i < XRING_PENDING; i++) {
			if (!p[i + 2].revents || sv[i].fd < 0)
				continue;
			e = xring_hs_read(&sv[i]);
			if (e < 0 || (e > 0 && !xring_hs_server(r, &sv[i])))
				xring_hs_drop(r, &sv[i]);
		}
		if (p[0].revents && r->prev.fd < 0)
			xring_hs_accept(r, sv);
	}
	/* connections still unproven when the ring stands failed too */
	for (i = 0; i < XRING_PENDING; i++)
		if (sv[i].fd >= 0)
			xring_hs_drop(r, &sv[i]);
	if (cl.state != XRING_S_DONE)
		return xring_err(err, errlen, -ETIMEDOUT,
				 "rank %u did not answer the ring handshake within %d ms",
				 xring_next_rank(r), r->cfg.timeout_ms);
	if (r->prev.fd < 0)
		return xring_err(err, errlen, -ETIMEDOUT,
				 "rank %u did not connect (and authenticate) within %d ms; %llu connections failed the handshake",
				 xring_prev_rank(r), r->cfg.timeout_ms,
				 (unsigned long long)r->st.rejected);
	return 0;
}

static int xring_listen(struct xina_ring *r, char *err, size_t errlen)
{
	const struct sockaddr_in *a = &r->peers[r->cfg.rank];
	char where[64];
	int one = 1;

	r->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (r->lfd < 0)
		return xring_err(err, errlen, -errno, "socket: %s",
				 strerror(errno));
	setsockopt(r->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(r->lfd, (const struct sockaddr *)a, sizeof(*a)) ||
	    listen(r->lfd, 8))
		return xring_err(err, errlen, -errno,
				 "ring address of rank %u, %s: %s (is it this host's?)",
				 r->cfg.rank,
				 xring_addr(a, where, sizeof(where)),
				 strerror(errno));
	return 0;
}

void xina_ring_key(const uint8_t *secret, uint32_t job, uint64_t k[2])
{
	__u64 d[2];

	xina_derive_key(secret, XRING_LABEL, job, 0, d);
	k[0] = d[0];
	k[1] = d[1];
	explicit_bzero(d, sizeof(d));
}

void xina_ring_close(struct xina_ring *r)
{
	if (!r)
		return;
	if (r->lfd >= 0)
		close(r->lfd);
	if (r->next.fd >= 0)
		close(r->next.fd);
	if (r->prev.fd >= 0)
		close(r->prev.fd);
	explicit_bzero(r->k, sizeof(r->k));
	explicit_bzero(r->next.ks, sizeof(r->next.ks));
	explicit_bzero(r->prev.ks, sizeof(r->prev.ks));
	explicit_bzero(r->next.nh, sizeof(r->next.nh));
	explicit_bzero(r->prev.nh, sizeof(r->prev.nh));
	free(r->peers);
	free(r->tx);
	free(r->rx);
	free(r->dn);
	free(r);
}

int xina_ring_open(const struct xina_ring_cfg *cfg, struct xina_ring **out,
		   char *err, size_t errlen)
{
	struct xina_ring *r;
	uint64_t deadline;
	int e;

	*out = NULL;
	if (!cfg->workers || cfg->rank >= cfg->workers || !cfg->peers ||
	    !cfg->key || cfg->timeout_ms <= 0)
		return xring_err(err, errlen, -EINVAL,
				 "ring: rank %u of %u workers, %s peers, %s key, timeout %d ms",
				 cfg->rank, cfg->workers,
				 cfg->peers ? "with" : "no",
				 cfg->key ? "with" : "no", cfg->timeout_ms);
	r = calloc(1, sizeof(*r));
	if (!r)
		return xring_err(err, errlen, -ENOMEM, "out of memory");
	r->cfg = *cfg;
	r->lfd = r->next.fd = r->prev.fd = -1;
	r->peers = calloc(cfg->workers, sizeof(*r->peers));
	if (!r->peers) {
		free(r);
		return xring_err(err, errlen, -ENOMEM, "out of memory");
	}
	memcpy(r->peers, cfg->peers, cfg->workers * sizeof(*r->peers));
	r->cfg.peers = r->peers;
	r->cfg.key = NULL;	/* the copy in r->k is wiped on close */
	r->k[0] = cfg->key[0];
	r->k[1] = cfg->key[1];
	*out = r;
	if (cfg->workers == 1)
		return 0;

	deadline = xring_now_ms() + cfg->timeout_ms;
	e = xring_listen(r, err, errlen);
	if (!e)
		e = xring_connect(r, deadline, err, errlen);
	if (!e)
		e = xring_handshake(r, deadline, err, errlen);
	if (e) {
		xina_ring_close(r);
		*out = NULL;
	}
	return e;
}

void xina_ring_stats(const struct xina_ring *r, struct xina_ring_stats *st)
{
	*st = r->st;
}

/*
 * Words @n of @src folded into @dst by (@dtype, @op), constants inlined;
 * both in network order, as the switch has them.
 */
#define XRING_FOLD32(dt, o)						\
	for (i = 0; i < n; i++)						\
		dst[i] = htonl(xina_combine32(ntohl(dst[i]), ntohl(src[i]), \
					      dt, o))

#define XRING_OPS32(dt)							\
	case dt * 8 + XINA_OP_SUM: XRING_FOLD32(dt, XINA_OP_SUM); break; \
	case dt * 8 + XINA_OP_MAX: XRING_FOLD32(dt, XINA_OP_MAX); break; \
	case dt * 8 + XINA_OP_MIN: XRING_FOLD32(dt, XINA_OP_MIN); break

static void xring_fold(uint32_t *dst, const uint32_t *src, size_t n,
		       uint32_t dtype, uint32_t op)
{
	uint64_t a, b;
	size_t i;

	if (op == XINA_OP_AND || op == XINA_OP_OR || op == XINA_OP_XOR) {
		for (i = 0; i < n; i++)	/* any byte order */
			dst[i] = op == XINA_OP_AND ? dst[i] & src[i] :
				 op == XINA_OP_OR ? dst[i] | src[i] :
				 dst[i] ^ src[i];
		return;
	}
	switch (dtype * 8 + op) {
	XRING_OPS32(XINA_DTYPE_INT32);
	XRING_OPS32(XINA_DTYPE_INT16);
	XRING_OPS32(XINA_DTYPE_INT8);
	default:	/* INT64: pairs, high word first */
		for (i = 0; i + 1 < n; i += 2) {
			a = (uint64_t)ntohl(dst[i]) << 32 | ntohl(dst[i + 1]);
			b = (uint64_t)ntohl(src[i]) << 32 | ntohl(src[i + 1]);
			a = xina_combine64(a, b, op);
			dst[i] = htonl(a >> 32);
			dst[i + 1] = htonl((uint32_t)a);
		}
	}
}

/*
 * The tag of a message: SipHash-2-4 under the session key of its head
 * (header and done bytes, @hlen bytes, zero-padded to whole words) and of
 * the NH, under the session's NH key, of each piece of XRING_NH_WORDS of
 * its @nw words, in order: the switch's construction (NH, then SipHash
 * over what NH leaves), at NH's speed instead of SipHash's per byte.
 */
static uint64_t xring_msg_tag(const struct xring_conn *c, const uint8_t *head,
			      size_t hlen, const uint32_t *w, size_t nw)
{
	struct xina_sip s;
	uint64_t m, len = 0;
	size_t i, k;

	xina_sip_init(&s, c->ks[0], c->ks[1]);
	for (i = 0; i < hlen; i += 8, len += 8) {
		m = 0;
		memcpy(&m, head + i, hlen - i < 8 ? hlen - i : 8);
		xina_sip_word(&s, xina_le64(m));
	}
	for (i = 0; i < nw; i += k, len += 8) {
		k = nw - i < XRING_NH_WORDS ? nw - i : XRING_NH_WORDS;
		xina_sip_word(&s, xina_nh_wire(c->nh, w + i, k));
	}
	return xina_sip_final(&s, len << 56);
}

struct xring_call {
	uint32_t	*words;
	size_t		nwords, bw, nb;
	uint32_t	dtype, op;
	size_t		mb;	/* blocks per message */
};

/*
 * A step's segment travels as messages of at most XRING_MSG_BYTES of
 * words (c->mb whole blocks), each framed and tagged on its own: a rank
 * folds one message while the next is on its way, with the words still in
 * cache, where one message per segment had every rank wait for the whole
 * segment, then pass over it three times cold (tag, fold, next tag).
 */
#define XRING_MSG_BYTES	(256u << 10)

/* Segment @s: blocks [*b0, *b1). */
static void xring_seg(const struct xina_ring *r, const struct xring_call *c,
		      uint32_t s, size_t *b0, size_t *b1)
{
	uint32_t w = r->cfg.workers;

	*b0 = c->nb * s / w;
	*b1 = c->nb * (s + 1) / w;
}

/* Words [*w0, *w1) of blocks [@b0, @b1). */
static void xring_words(const struct xring_call *c, size_t b0, size_t b1,
			size_t *w0, size_t *w1)
{
	*w1 = b1 * c->bw < c->nwords ? b1 * c->bw : c->nwords;
	*w0 = b0 * c->bw < *w1 ? b0 * c->bw : *w1;
}

/*
 * One direction of a step: the segment's blocks [b0, b1) as @nmsg
 * messages (at least one, empty for an empty segment), @msg of them done,
 * @off bytes of the current one moved (@len in all, 0 while none is
 * framed).  The current message holds blocks [m0, m1), from word @w0 on;
 * it is its head (@hl bytes: header, done bytes), its words (@wl bytes at
 * @w) and its tag: the words go out of the call's own and come into them
 * (or, to be folded, into r->rx after the head), never through a copy of
 * their own.
 */
struct xring_dir {
	size_t		b0, b1, nmsg, msg, off, len;
	size_t		m0, m1, w0, hl, wl;
	uint32_t	*w;
	uint64_t	tag;	/* network order */
};

static void xring_dir_init(const struct xina_ring *r,
			   const struct xring_call *c, uint32_t seg,
			   struct xring_dir *d)
{
	memset(d, 0, sizeof(*d));
	xring_seg(r, c, seg, &d->b0, &d->b1);
	d->nmsg = (d->b1 - d->b0 + c->mb - 1) / c->mb;
	if (!d->nmsg)
		d->nmsg = 1;
}

/* @d's current message: its blocks, lengths and places (@head its buffer). */
static void xring_dir_msg(const struct xring_call *c, struct xring_dir *d,
			  uint8_t *head, bool in_place)
{
	size_t w1;

	d->m0 = d->b0 + d->msg * c->mb;
	d->m1 = d->m0 + c->mb < d->b1 ? d->m0 + c->mb : d->b1;
	if (d->m0 > d->b1)
		d->m0 = d->b1;
	xring_words(c, d->m0, d->m1, &d->w0, &w1);
	d->hl = sizeof(struct xring_dh) + ((d->m1 - d->m0 + 3) & ~(size_t)3);
	d->wl = (w1 - d->w0) * 4;
	/* 4-byte aligned: the header is 16 bytes, the done bytes padded */
	if (!in_place)
		d->w = (uint32_t *)(head + d->hl);
	else	/* a call of no words may come with no buffer */
		d->w = c->words ? c->words + d->w0 : NULL;
	d->len = d->hl + d->wl + 8;
	d->off = 0;
}

/* Frame @d's current message: its head in r->tx, and its tag. */
static void xring_frame(struct xina_ring *r, const struct xring_call *c,
			struct xring_dir *d)
{
	struct xring_dh *dh = (struct xring_dh *)r->tx;

	xring_dir_msg(c, d, r->tx, true);
	memset(r->tx + sizeof(*dh), 0, d->hl - sizeof(*dh));
	memcpy(r->tx + sizeof(*dh), r->dn + d->m0, d->m1 - d->m0);
	dh->magic = htonl(XRING_MAGIC);
	dh->seq = htonl(r->next.seq++);
	dh->len = htobe64(d->hl - sizeof(*dh) + d->wl);
	d->tag = htobe64(xring_msg_tag(&r->next, r->tx, d->hl, d->w,
				       d->wl / 4));
}

/*
 * The message of @d, complete (head in r->rx): verify it, then fold its
 * blocks into the call's words, or (@replace) take them, as they already
 * are in place.  A block whose result a worker already holds ("done")
 * wins every fold.
 */
static int xring_take(struct xina_ring *r, const struct xring_call *c,
		      const struct xring_dir *d, bool replace, char *err,
		      size_t errlen)
{
	const struct xring_dh *dh = (const struct xring_dh *)r->rx;
	const uint8_t *p = r->rx + sizeof(*dh);
	size_t b, e0, e1;

	if (ntohl(dh->magic) != XRING_MAGIC ||
	    ntohl(dh->seq) != r->prev.seq ||
	    be64toh(dh->len) != d->len - 8 - sizeof(*dh) ||
	    d->tag != htobe64(xring_msg_tag(&r->prev, r->rx, d->hl, d->w,
					    d->wl / 4)))
		return xring_err(err, errlen, -EBADMSG,
				 "ring: message %u from rank %u does not verify (seq %u, %llu bytes, expected %zu): tampered with, or the workers disagree on the call",
				 r->prev.seq, xring_prev_rank(r),
				 ntohl(dh->seq),
				 (unsigned long long)be64toh(dh->len),
				 d->len - 8 - sizeof(*dh));
	r->prev.seq++;
	for (b = d->m0; b < d->m1; b++) {
		e0 = b * c->bw - d->w0;
		e1 = ((b + 1) * c->bw < c->nwords ? (b + 1) * c->bw :
		      c->nwords) - d->w0;
		if (replace) {
			r->dn[b] |= p[b - d->m0];
		} else if (!r->dn[b] && p[b - d->m0]) {
			memcpy(c->words + d->w0 + e0, d->w + e0, (e1 - e0) * 4);
			r->dn[b] = p[b - d->m0];
		} else if (!r->dn[b]) {
			xring_fold(c->words + d->w0 + e0, d->w + e0, e1 - e0,
				   c->dtype, c->op);
		}
	}
	return 0;
}

/* The part of @d's message from d->off on: head at @head, words, tag. */
static int xring_iov(struct xring_dir *d, uint8_t *head, struct iovec *iov)
{
	struct iovec part[3] = {
		{ head, d->hl }, { d->w, d->wl }, { &d->tag, 8 },
	};
	size_t off = d->off;
	int i, n = 0;

	for (i = 0; i < 3; i++) {
		if (off >= part[i].iov_len) {
			off -= part[i].iov_len;
			continue;
		}
		iov[n].iov_base = (uint8_t *)part[i].iov_base + off;
		iov[n++].iov_len = part[i].iov_len - off;
		off = 0;
	}
	return n;
}

/*
 * Move what the sockets take of @tx and give of @rx, without waiting:
 * 1 when bytes moved, 0 when both would block, or a negative errno.
 */
static int xring_move(struct xina_ring *r, const struct xring_call *c,
		      struct xring_dir *tx, struct xring_dir *rx,
		      bool replace, char *err, size_t errlen)
{
	struct iovec iov[3];
	struct msghdr mh = { .msg_iov = iov };
	bool moved = false;
	ssize_t n;
	int e;

	while (tx->msg < tx->nmsg) {
		if (!tx->len)
			xring_frame(r, c, tx);
		mh.msg_iovlen = xring_iov(tx, r->tx, iov);
		n = sendmsg(r->next.fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			return xring_err(err, errlen, -errno,
					 "ring: sending to rank %u: %s",
					 xring_next_rank(r), strerror(errno));
		}
		moved = true;
		tx->off += n;
		r->st.tx_bytes += n;
		if (tx->off == tx->len) {
			tx->msg++;
			tx->len = 0;
		}
	}
	while (rx->msg < rx->nmsg) {
		if (!rx->len)
			xring_dir_msg(c, rx, r->rx, replace);
		mh.msg_iovlen = xring_iov(rx, r->rx, iov);
		n = recvmsg(r->prev.fd, &mh, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		if (n <= 0)
			return xring_err(err, errlen, n ? -errno : -ECONNRESET,
					 "ring: receiving from rank %u: %s",
					 xring_prev_rank(r),
					 n ? strerror(errno) : "connection closed");
		moved = true;
		rx->off += n;
		r->st.rx_bytes += n;
		if (rx->off == rx->len) {
			e = xring_take(r, c, rx, replace, err, errlen);
			if (e)
				return e;
			rx->msg++;
			rx->len = 0;
		}
	}
	return moved;
}

/*
 * One step: segment @send_seg to the next rank and segment @recv_seg from
 * the previous one, at the same time, message by message; the received
 * ones folded in (or, @replace, taken) as they complete.  The timeout runs
 * from the last byte that moved.
 */
static int xring_pass(struct xina_ring *r, const struct xring_call *c,
		      uint32_t send_seg, uint32_t recv_seg, bool replace,
		      char *err, size_t errlen)
{
	uint64_t deadline = xring_now_ms() + r->cfg.timeout_ms, now;
	struct xring_dir tx, rx;
	struct pollfd p[2];
	int e, wait;

	xring_dir_init(r, c, send_seg, &tx);
	xring_dir_init(r, c, recv_seg, &rx);
	while (tx.msg < tx.nmsg || rx.msg < rx.nmsg) {
		e = xring_move(r, c, &tx, &rx, replace, err, errlen);
		if (e < 0)
			return e;
		now = xring_now_ms();
		if (e) {
			deadline = now + r->cfg.timeout_ms;
			continue;
		}
		if (now >= deadline)
			return xring_err(err, errlen, -ETIMEDOUT,
					 "ring: no progress with ranks %u/%u for %d ms (sent %zu of %zu messages, received %zu of %zu)",
					 xring_prev_rank(r), xring_next_rank(r),
					 r->cfg.timeout_ms, tx.msg, tx.nmsg,
					 rx.msg, rx.nmsg);
		p[0] = (struct pollfd){ .fd = tx.msg < tx.nmsg ? r->next.fd : -1,
					.events = POLLOUT };
		p[1] = (struct pollfd){ .fd = rx.msg < rx.nmsg ? r->prev.fd : -1,
					.events = POLLIN };
		wait = deadline - now < 200 ? (int)(deadline - now) : 200;
		if (poll(p, 2, wait) < 0 && errno != EINTR)
			return xring_err(err, errlen, -errno, "poll: %s",
					 strerror(errno));
	}
	return 0;
}

/* Room for the largest message of the call, and its done bytes. */
static int xring_bufs(struct xina_ring *r, struct xring_call *c)
{
	struct xring_dir first = { .b1 = c->nb };	/* no message is longer */
	size_t need;

	c->mb = XRING_MSG_BYTES / 4 / c->bw;
	if (!c->mb)
		c->mb = 1;
	xring_dir_msg(c, &first, NULL, true);
	need = first.len;
	if (need > r->buf_sz) {
		free(r->tx);
		free(r->rx);
		r->tx = malloc(need);
		r->rx = malloc(need);
		r->buf_sz = r->tx && r->rx ? need : 0;
		if (!r->buf_sz)
			return -ENOMEM;
	}
	if (c->nb > r->dn_sz) {
		free(r->dn);
		r->dn = malloc(c->nb);
		r->dn_sz = r->dn ? c->nb : 0;
		if (!r->dn)
			return -ENOMEM;
	}
	return 0;
}

int xina_ring_allreduce(struct xina_ring *r, uint32_t *words, size_t nwords,
			size_t bw, const uint8_t *done, uint32_t dtype,
			uint32_t op, char *err, size_t errlen)
{
	struct xring_call c = {
		.words = words, .nwords = nwords, .bw = bw,
		.dtype = dtype, .op = op,
	};
	uint32_t w = r->cfg.workers, me = r->cfg.rank, s;
	int e;

	if (!bw || bw > XINA_MAX_ELEMS || (nwords && !words) ||
	    !xina_dtype_op_ok(dtype, op, bw) ||
	    (dtype == XINA_DTYPE_INT64 && (nwords & 1)))
		return xring_err(err, errlen, -EINVAL,
				 "ring: %zu words in blocks of %zu, dtype %u op %u: not a valid call",
				 nwords, bw, dtype, op);
	c.nb = (nwords + bw - 1) / bw;
	if (xring_bufs(r, &c))
		return xring_err(err, errlen, -ENOMEM, "out of memory");
	if (done)
		memcpy(r->dn, done, c.nb);
	else
		memset(r->dn, 0, c.nb);
	r->st.calls++;
	if (w == 1)
		return 0;

	/*
	 * Reduce-scatter: in step s rank r sends segment r - s and folds in
	 * segment r - s - 1, ending with segment r + 1 complete.  Allgather:
	 * it sends segment r + 1 - s and takes segment r - s as it comes.
	 */
	for (s = 0; s + 1 < w; s++) {
		e = xring_pass(r, &c, (me + w - s) % w, (me + 2 * w - s - 1) % w,
			       false, err, errlen);
		if (e)
			return e;
	}
	for (s = 0; s + 1 < w; s++) {
		e = xring_pass(r, &c, (me + 1 + w - s) % w, (me + w - s) % w,
			       true, err, errlen);
		if (e)
			return e;
	}
	return 0;
}
