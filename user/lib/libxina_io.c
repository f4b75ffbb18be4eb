// SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause)
/*
 * libxina packet I/O: one connected, non-blocking UDP socket per handle,
 * whatever moves the packets, and the UDP implementation of struct
 * xina_io_ops.
 *
 * One datagram per syscall tops out around 250K packets/s on these
 * machines, so both directions are batched: sendmmsg() where each message
 * is a UDP GSO train of up to XINA_GSO_MAX equally sized contributions
 * (one trip through the UDP/IP stack per train), and recvmmsg() with
 * UDP_GRO so that results a GRO-capable device coalesced arrive as one
 * buffer.  Both fall back to plain datagrams when the kernel or the
 * device refuses.
 *
 * The AF_XDP implementation (libxina_xsk.c) keeps the socket: it reserves
 * the port, receives ICMP errors and any result that reaches the stack.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "libxina_int.h"

#ifndef SOL_UDP
#define SOL_UDP		17
#endif

#define XINA_SOCKBUF	(8 << 20)

#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY	60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY	0x4000000
#endif
/* How long a slot's buffer waits for the kernel's pages (xina_tx_own()). */
#define XINA_ZC_WAIT_MS	1000

static int xina_parse_addr(struct xina *x, const char *s, uint16_t port,
			   struct sockaddr_in *sa, const char *what)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons(port);
	if (s && inet_pton(AF_INET, s, &sa->sin_addr) != 1) {
		xina_fail(x, "%s address '%s' is not an IPv4 dotted quad", what, s);
		return -EINVAL;
	}
	return 0;
}

/* Big buffers: a whole window of results may land at once. */
static void xina_sockbufs(struct xina *x)
{
	int sz = XINA_SOCKBUF;
	size_t want = (size_t)x->o.slots * x->pkt_sz * 4;

	if (want > (size_t)sz)
		sz = want > (256u << 20) ? (256 << 20) : (int)want;
	/* FORCE needs CAP_NET_ADMIN; otherwise rmem_max caps the request. */
	if (setsockopt(x->fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
		setsockopt(x->fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if (setsockopt(x->fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)))
		setsockopt(x->fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
}

static int xina_rx_alloc(struct xina *x)
{
	int one = 1;

	x->gro = false;
	if (!(x->o.flags & XINA_OPT_F_NO_GRO) &&
	    !setsockopt(x->fd, SOL_UDP, UDP_GRO, &one, sizeof(one)))
		x->gro = true;
	/* One spare byte to tell an oversized datagram from a full one. */
	x->rx_buf_sz = x->gro ? XINA_GRO_BUF : x->pkt_sz + 1;
	x->rx_batch = x->gro ? XINA_GRO_BATCH : XINA_BATCH;
	x->rx = malloc(x->rx_buf_sz * x->rx_batch);
	return x->rx ? 0 : -ENOMEM;
}

int xina_sock_open(struct xina *x)
{
	socklen_t alen = sizeof(x->local);
	struct sockaddr_in local;
	int err;

	err = xina_parse_addr(x, x->o.switch_addr, x->o.switch_port, &x->sw,
			      "switch");
	if (err)
		return err;
	err = xina_parse_addr(x, x->o.bind_addr, x->o.bind_port, &local,
			      "bind");
	if (err)
		return err;
	x->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (x->fd < 0) {
		err = -errno;
		xina_fail(x, "socket: %s", strerror(errno));
		return err;
	}
	xina_sockbufs(x);
	if (bind(x->fd, (struct sockaddr *)&local, sizeof(local))) {
		err = -errno;
		xina_fail(x, "bind to %s:%u: %s",
			  x->o.bind_addr ? x->o.bind_addr : "0.0.0.0",
			  x->o.bind_port, strerror(errno));
		return err;
	}
	/*
	 * Connected: the kernel drops datagrams from anyone but the switch,
	 * and an ICMP port unreachable surfaces as ECONNREFUSED.
	 */
	if (connect(x->fd, (struct sockaddr *)&x->sw, sizeof(x->sw))) {
		err = -errno;
		xina_fail(x, "connect to switch %s:%u: %s", x->o.switch_addr,
			  x->o.switch_port, strerror(errno));
		return err;
	}
	/* The address and port the route and bind() gave us. */
	if (getsockname(x->fd, (struct sockaddr *)&x->local, &alen)) {
		err = -errno;
		xina_fail(x, "getsockname: %s", strerror(errno));
		return err;
	}
	x->gso = !(x->o.flags & XINA_OPT_F_NO_GSO);
	err = xina_rx_alloc(x);
	if (err)
		xina_fail(x, "out of memory for receive buffers");
	return err;
}

/*
 * AF_XDP where opts.io allows it and it can be set up (libxina_xsk.c
 * decides, for XINA_IO_AUTO as well), else UDP.
 */
int xina_io_open(struct xina *x)
{
	x->io_reason[0] = '\0';
	if (x->o.io != XINA_IO_UDP) {
		if (!xina_io_xsk.open(x)) {
			x->io = &xina_io_xsk;
			goto out;
		}
		xina_log(x, x->o.io == XINA_IO_XSK ? XINA_LOG_WARN : XINA_LOG_DEBUG,
			 "using UDP sockets, not AF_XDP: %s", x->io_reason);
	}
	x->io = &xina_io_udp;
	if (x->io->open(x)) {
		x->io = NULL;
		return -ENOMEM;
	}
out:
	x->st.io = x->io->io;
	return 0;
}

void xina_io_close(struct xina *x)
{
	if (x->io)
		x->io->close(x);
	x->io = NULL;
}

/*
 * Zero-copy sends, with XINA_OPT_F_ZEROCOPY.  With MSG_ZEROCOPY (Linux 5.0
 * for UDP; see the kernel's Documentation/networking/msg_zerocopy.rst) the
 * kernel does not copy a message into its socket buffers: it pins the
 * pages of the slots' packets and sends from them, and it says on the
 * socket's error queue when it no longer holds them, a range of send ids
 * at a time (one id per message that went out, counted from 0).  Until
 * then a slot's buffer is not the library's to write: xina_tx_own() waits
 * for it before a slot takes its next block or is tagged again for a
 * resend.  That is about never a wait: the switch frees (or copies) a
 * contribution as it takes it, before the round can complete, and the
 * notice is queued by then.
 *
 * On a NIC with scatter-gather a train is then sent from the worker's
 * pages, never copied.  Off by default, because on the rack's veth ports
 * it measured no faster, and at times much slower: the copy it saves is
 * one of two (the switch's generic XDP copies the train again), and every
 * notice wakes the worker's poll() (POLLERR), one more wake-up per train.
 * 4 workers allreducing int32 through the generic-mode rack, alternated
 * launches: 3% faster in six pairs, then 418 and 386 against 498 and 530
 * MB/s in two of three; in a full `make bench` with it on, those launches
 * ran at 349-547 MB/s and kept 49-54% of lossless at 1% loss (88-93% in
 * the run before).  Where the kernel copies the pages anyway (the
 * notice says SO_EE_CODE_ZEROCOPY_COPIED: a device without scatter-gather,
 * a local socket, or on 6.1 the switch's generic XDP, which passes a frame
 * on with the sender's pages in it, the join's reply first), pinning them
 * only costs, so the first such notice turns zero-copy off for the handle.
 */
static void xina_zc_open(struct xina *x)
{
	int one = 1;

	x->zc = false;
	if (!(x->o.flags & XINA_OPT_F_ZEROCOPY))
		return;
	if (setsockopt(x->fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one))) {
		xina_log(x, XINA_LOG_DEBUG, "no zero-copy sends (SO_ZEROCOPY: %s); the socket copies the packets",
			 strerror(errno));
		return;
	}
	x->zc = true;
}

static void xina_zc_off(struct xina *x, const char *why)
{
	if (x->zc)
		xina_log(x, XINA_LOG_DEBUG, "zero-copy sends off: %s", why);
	x->zc = false;
}

/*
 * Send ids [lo, hi] no longer hold any page.  The notices come in order
 * nearly always; one that comes early waits in x->zc_early until the ids
 * before it are done, so that a slot sent twice (a resend) is released
 * only when both sends are: every id below x->zc_done is done.
 */
static void xina_zc_done(struct xina *x, uint32_t lo, uint32_t hi,
			 bool copied)
{
	unsigned int i;

	if (copied) {
		x->st.zc_copied += hi - lo + 1;
		xina_zc_off(x, "the kernel copies them on this path");
	}
	if (lo != x->zc_done) {
		/* none free: x->zc_done stalls, xina_zc_wait() gives up */
		if (x->zc_nr_early < XINA_ZC_EARLY)
			x->zc_early[x->zc_nr_early++] = (struct xina_zc_range){ lo, hi };
		return;
	}
	x->zc_done = hi + 1;
	for (;;) {
		for (i = 0; i < x->zc_nr_early; i++)
			if (x->zc_early[i].lo == x->zc_done)
				break;
		if (i == x->zc_nr_early)
			break;
		x->zc_done = x->zc_early[i].hi + 1;
		x->zc_early[i] = x->zc_early[--x->zc_nr_early];
	}
}

/* Zero-copy sends the kernel has not said it is done with. */
static bool xina_zc_pending(const struct xina *x)
{
	return x->zc_done != x->zc_next;
}

/*
 * Whether the kernel may still read slot @s's pages: its last zero-copy
 * send is among the pending ones, [zc_done, zc_next).
 */
static bool xina_zc_held(const struct xina *x, uint32_t s)
{
	const struct xina_slot *sl = &x->slot[s];

	return sl->zc_sent && sl->zc_id - x->zc_done < x->zc_next - x->zc_done;
}

/* Read the zero-copy notices on the socket's error queue; how many. */
static unsigned int xina_zc_reap(struct xina *x)
{
	char cbuf[CMSG_SPACE(sizeof(struct sock_extended_err) +
			     sizeof(struct sockaddr_in))];
	const struct sock_extended_err *ee;
	struct msghdr mh;
	struct cmsghdr *cm;
	unsigned int n = 0;

	while (xina_zc_pending(x)) {
		memset(&mh, 0, sizeof(mh));
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		if (recvmsg(x->fd, &mh, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
			break;
		for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
			if (cm->cmsg_level != SOL_IP || cm->cmsg_type != IP_RECVERR)
				continue;
			ee = (const struct sock_extended_err *)CMSG_DATA(cm);
			if (ee->ee_origin != SO_EE_ORIGIN_ZEROCOPY)
				continue;
			xina_zc_done(x, ee->ee_info, ee->ee_data,
				     ee->ee_code & SO_EE_CODE_ZEROCOPY_COPIED);
			n++;
		}
	}
	return n;
}

/*
 * Stop waiting for the pages: the kernel still holds them (a frame stuck in
 * a queue, say) and may send them with what the library writes next, which
 * the switch then drops, its tag no longer matching.  Copies from now on.
 */
static void xina_zc_abandon(struct xina *x, const char *why)
{
	if (x->zc)
		xina_log(x, XINA_LOG_WARN, "zero-copy sends still held by the kernel after %u ms (%s); sending copies from now on",
			 XINA_ZC_WAIT_MS, why);
	x->zc = false;
	x->zc_nr_early = 0;
	x->zc_done = x->zc_next;
}

/* Wait up to XINA_ZC_WAIT_MS for every slot (@s < 0) or slot @s. */
static void xina_zc_wait(struct xina *x, int64_t s, const char *why)
{
	uint64_t end = xina_now_ns() + XINA_ZC_WAIT_MS * 1000000ull;
	struct pollfd pfd = { .fd = x->fd };

	for (;;) {
		xina_zc_reap(x);
		if (s < 0 ? !xina_zc_pending(x) : !xina_zc_held(x, s))
			return;
		if (xina_now_ns() >= end)
			break;
		/* a notice wakes it (POLLERR); so does a pending ICMP error */
		if (poll(&pfd, 1, 1) > 0 && !xina_zc_reap(x))
			usleep(100);
	}
	xina_zc_abandon(x, why);
}

void xina_tx_own(struct xina *x, uint32_t s)
{
	if (xina_zc_held(x, s))
		xina_zc_wait(x, s, "a slot's next packet");
}

/* The slots' packets in plain memory, sent from there or copied. */
static int xina_udp_open(struct xina *x)
{
	x->tx_stride = x->pkt_sz;
	x->tx = calloc(x->o.slots, x->tx_stride);
	if (!x->tx) {
		xina_fail(x, "out of memory for %u slots", x->o.slots);
		return -ENOMEM;
	}
	xina_zc_open(x);
	return 0;
}

static void xina_udp_close(struct xina *x)
{
	if (xina_zc_pending(x))
		xina_zc_wait(x, -1, "closing the handle");
	free(x->tx);
	x->tx = NULL;
}

/* Slots queued for transmission, grouped into GSO trains. */
struct xina_txb {
	struct mmsghdr	msg[XINA_BATCH];
	struct iovec	iov[XINA_BATCH * XINA_GSO_MAX];
	char		cbuf[XINA_BATCH][CMSG_SPACE(sizeof(uint16_t))];
	uint32_t	nslots[XINA_BATCH];	/* slots in each message */
};

static size_t xina_pkt_len(struct xina *x, uint32_t s)
{
	return xina_wire_len((const struct xina_hdr *)xina_tx_pkt(x, s));
}

/* A resend or a ZERO block: sent alone (see xina_tx_build()). */
static bool xina_pkt_alone(struct xina *x, uint32_t s)
{
	return ((const struct xina_hdr *)xina_tx_pkt(x, s))->flags &
	       (XINA_F_RETRANS | XINA_F_ZERO);
}

/*
 * Group txq[from..] into at most XINA_BATCH messages; every message is a
 * train of equally sized datagrams (the kernel segments it at the size of
 * the first).  A switch port in generic XDP mode takes a train whole
 * (bpf/xina.bpf.c, "trains"), and two kinds of datagram go alone:
 * - a resend: the fast path answers one with the result it kept only
 *   when it comes alone (in a train it counts one as a duplicate);
 * - a ZERO block, its header alone: when it completes its round, the
 *   result must grow to the block's elements (xina_fanout does that for
 *   a lone datagram, not in a train), so in a train such a round
 *   completed unseen and every member resent the block to fetch its
 *   result: xina-allreduce's pattern, with a ZERO block in five, resent
 *   a tenth of its blocks through the generic-mode rack.
 * Returns the number of slots covered.
 */
static uint32_t xina_tx_build(struct xina *x, struct xina_txb *b,
			      uint32_t from, unsigned int *nmsg)
{
	uint32_t q = from, max_seg, lim;
	unsigned int m = 0, k, iov = 0;
	struct cmsghdr *cm;
	size_t len;

	max_seg = x->gso ? 65000 / x->pkt_sz : 1;
	if (max_seg > XINA_GSO_MAX)
		max_seg = XINA_GSO_MAX;
	if (!max_seg)
		max_seg = 1;
	while (q < x->txq_len && m < XINA_BATCH) {
		struct msghdr *mh = &b->msg[m].msg_hdr;

		memset(mh, 0, sizeof(*mh));
		mh->msg_iov = &b->iov[iov];
		len = xina_pkt_len(x, x->txq[q]);
		lim = xina_pkt_alone(x, x->txq[q]) ? 1 : max_seg;
		for (k = 0; k < lim && q < x->txq_len; k++, q++) {
			if (xina_pkt_len(x, x->txq[q]) != len ||
			    (k && xina_pkt_alone(x, x->txq[q])))
				break;
			b->iov[iov].iov_base = xina_tx_pkt(x, x->txq[q]);
			b->iov[iov++].iov_len = len;
		}
		mh->msg_iovlen = k;
		b->nslots[m] = k;
		if (k > 1) {
			mh->msg_control = b->cbuf[m];
			mh->msg_controllen = sizeof(b->cbuf[m]);
			cm = CMSG_FIRSTHDR(mh);
			cm->cmsg_level = SOL_UDP;
			cm->cmsg_type = UDP_SEGMENT;
			cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
			*(uint16_t *)CMSG_DATA(cm) = len;
			x->st.gso_sends += k;
		}
		m++;
	}
	*nmsg = m;
	return q - from;
}

/* Mark slots txq[from, from + cnt) sent and arm their timers. */
void xina_tx_done(struct xina *x, uint32_t from, uint32_t cnt)
{
	uint64_t now = xina_now_ns(), dl;
	struct xina_slot *sl;
	uint32_t i;

	for (i = from; i < from + cnt; i++) {
		sl = &x->slot[x->txq[i]];
		sl->queued = false;
		if (!sl->sent_ns)
			sl->sent_ns = now;
		dl = now + (uint64_t)sl->rto_us * 1000;
		sl->deadline_ns = dl;
		if (dl < x->next_timer_ns)
			x->next_timer_ns = dl;
	}
}

/*
 * A sendmmsg error on the first message of a batch.  Returns 0 to retry
 * it, 1 to drop it as lost (the slots' timers resend it), 2 to stop until
 * the socket has room, or a negative errno when the path is broken.
 */
static int xina_tx_error(struct xina *x, int e)
{
	switch (e) {
	case EAGAIN:
	case ENOBUFS:
		return 2;
	case ECONNREFUSED:
		/* Pending ICMP error of an earlier datagram: noted, retried. */
		x->refused = true;
		return 0;
	case EPERM:
		/* A firewall dropped it: loss like any other. */
		return 1;
	case EINVAL:
	case EIO:
	case EMSGSIZE:
		if (x->gso) {
			/* No GSO on this path (or gso_size > MTU). */
			x->gso = false;
			xina_log(x, XINA_LOG_WARN, "UDP GSO refused (%s); sending datagrams one by one",
				 strerror(e));
			return 0;
		}
		break;
	}
	xina_fail(x, "send to switch %s:%u: %s", x->o.switch_addr,
		  x->o.switch_port, strerror(e));
	return -e;
}

/* The message of slots txq[from, from + cnt) went out zero-copy. */
static void xina_zc_sent(struct xina *x, uint32_t from, uint32_t cnt)
{
	struct xina_slot *sl;
	uint32_t i;

	for (i = from; i < from + cnt; i++) {
		sl = &x->slot[x->txq[i]];
		sl->zc_id = x->zc_next;
		sl->zc_sent = true;
	}
	x->zc_next++;
	x->st.zc_sends++;
}

static int xina_udp_tx_flush(struct xina *x)
{
	struct xina_txb b;
	uint32_t done = 0, i;
	unsigned int nmsg;
	int ret, sent, e;
	bool zc;

	while (done < x->txq_len) {
		xina_tx_build(x, &b, done, &nmsg);
		zc = x->zc;
		ret = sendmmsg(x->fd, b.msg, nmsg,
			       MSG_DONTWAIT | (zc ? MSG_ZEROCOPY : 0));
		e = errno;
		if (ret < 0 && zc && e == ENOBUFS) {
			/* no option memory for more notices: read them */
			if (xina_zc_reap(x))
				continue;
			if (!xina_zc_pending(x)) {
				xina_zc_off(x, "no memory for their notices");
				continue;
			}
		}
		if (ret < 0) {
			ret = xina_tx_error(x, e);
			if (ret < 0)
				return ret;
			if (ret == 2)
				break;
			if (ret == 1) {
				xina_tx_done(x, done, b.nslots[0]);
				done += b.nslots[0];
			}
			continue;
		}
		x->st.tx_syscalls++;
		for (sent = 0, i = 0; i < (unsigned int)ret; i++) {
			if (zc)
				xina_zc_sent(x, done + sent, b.nslots[i]);
			sent += b.nslots[i];
		}
		xina_tx_done(x, done, sent);
		done += sent;
	}
	/* Keep what the socket did not take, in order. */
	memmove(x->txq, x->txq + done, (x->txq_len - done) * sizeof(*x->txq));
	x->txq_len -= done;
	return 0;
}

static unsigned int xina_gro_size(struct msghdr *mh)
{
	struct cmsghdr *cm;

	for (cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm))
		if (cm->cmsg_level == SOL_UDP && cm->cmsg_type == UDP_GRO)
			return *(int *)CMSG_DATA(cm);
	return 0;
}

/* Hand every datagram of one receive to @fn, splitting GRO trains. */
static void xina_rx_one(struct xina *x, struct mmsghdr *m, const uint8_t *p,
			xina_rx_fn fn, void *ctx)
{
	size_t len = m->msg_len, seg;

	if (m->msg_hdr.msg_flags & MSG_TRUNC || len >= x->rx_buf_sz) {
		x->st.malformed++;
		return;
	}
	seg = x->gro ? xina_gro_size(&m->msg_hdr) : 0;
	if (!seg || seg >= len) {
		fn(x, p, len, ctx);
		return;
	}
	while (len) {
		size_t l = len < seg ? len : seg;

		x->st.gro_segs++;
		fn(x, p, l, ctx);
		p += l;
		len -= l;
	}
}

/* Read what the socket holds, in batches. */
int xina_udp_drain(struct xina *x, xina_rx_fn fn, void *ctx)
{
	struct mmsghdr msg[XINA_BATCH];
	struct iovec iov[XINA_BATCH];
	char cbuf[XINA_BATCH][CMSG_SPACE(sizeof(int))];
	unsigned int i, rounds;
	int ret;

	xina_zc_reap(x);	/* returns at once with no zero-copy send pending */
	/* Bounded, so that refills go out while results keep coming. */
	for (rounds = 0; rounds < 4; rounds++) {
		for (i = 0; i < x->rx_batch; i++) {
			iov[i].iov_base = x->rx + i * x->rx_buf_sz;
			iov[i].iov_len = x->rx_buf_sz;
			memset(&msg[i].msg_hdr, 0, sizeof(msg[i].msg_hdr));
			msg[i].msg_hdr.msg_iov = &iov[i];
			msg[i].msg_hdr.msg_iovlen = 1;
			if (x->gro) {
				msg[i].msg_hdr.msg_control = cbuf[i];
				msg[i].msg_hdr.msg_controllen = sizeof(cbuf[i]);
			}
		}
		ret = recvmmsg(x->fd, msg, x->rx_batch, MSG_DONTWAIT, NULL);
		if (ret < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			if (errno == ECONNREFUSED) {
				x->refused = true;
				continue;
			}
			xina_fail(x, "receive from switch %s:%u: %s",
				  x->o.switch_addr, x->o.switch_port,
				  strerror(errno));
			return -errno;
		}
		x->st.rx_syscalls++;
		for (i = 0; i < (unsigned int)ret; i++)
			xina_rx_one(x, &msg[i], x->rx + i * x->rx_buf_sz, fn, ctx);
		if ((unsigned int)ret < x->rx_batch)
			break;
	}
	return 0;
}

/*
 * Wait up to @timeout_ms for results (or for room to send, when packets
 * are still queued) and drain the socket.
 */
static int xina_udp_rx_poll(struct xina *x, int timeout_ms, xina_rx_fn fn,
			    void *ctx)
{
	/* wake_fd: xina_close() of a handle with a progress thread (or -1) */
	struct pollfd pfd[2] = {
		{ .fd = x->fd, .events = POLLIN },
		{ .fd = x->wake_fd, .events = POLLIN },
	};
	int ret;

	if (x->txq_len)
		pfd[0].events |= POLLOUT;
	ret = poll(pfd, 2, timeout_ms);
	if (ret < 0)
		return errno == EINTR ? 0 : -errno;
	if (!(pfd[0].revents & (POLLIN | POLLERR)))
		return 0;
	return xina_udp_drain(x, fn, ctx);
}

const struct xina_io_ops xina_io_udp = {
	.io		= XINA_IO_UDP,
	.open		= xina_udp_open,
	.tx_flush	= xina_udp_tx_flush,
	.rx_poll	= xina_udp_rx_poll,
	.close		= xina_udp_close,
};
