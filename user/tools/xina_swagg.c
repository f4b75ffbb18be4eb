// SPDX-License-Identifier: GPL-2.0
/*
 * xina-swagg: the xina aggregation protocol in a user-space process.
 *
 * This is the "software switch" baseline: the same semantics as the XDP
 * fast path (bpf/xina.bpf.c), run on one UDP socket.  Per slot it keeps
 * two versions (round & 1) with a contributor bitmap; the first
 * contribution to a round initialises the version, the others add, a
 * contributor whose bit is set never adds twice, older rounds are stale,
 * and a contribution to a completed round is answered with the kept result
 * to that worker alone.  The last contribution sends the result to every
 * member.  A round's first contribution fixes its dtype and op; one that
 * carries another pair, AVG (never on the wire), an unknown pair or an
 * INT64 block of an odd count is dropped (drop_op).  Every pair is
 * combined by bpf/xina_lanes.h, the arithmetic the fast path and xina.ko
 * share.  A contribution flagged XINA_F_ZERO stands for count zero words
 * and carries none (a bare header): its sender is in, nothing is added
 * (the first one of a round starts the version from zeros), and only
 * for SUM, OR and XOR, whose identity is the zero word; the result is
 * full size as always.  Each accepted contribution, a ZERO one too, folds
 * its aux into the version's signed MAX, which the result carries (and so
 * every answer from the kept result); duplicates, stale, dropped and
 * unauthenticated packets never reach it.  Packets are authenticated as
 * the switch does it (bpf/xina_auth.h): a contribution's tag is verified
 * with its rank's key before it can change anything, results are tagged
 * with the job's result key, and a member's UDP port is learned only from
 * a contribution that was accepted into a round.
 *
 * Joins (include/uapi/linux/xina.h, "Join handshake") are decided by
 * xina_join_decide() of bpf/xina_join.h, the code the fast path and
 * xina.ko run: the job starts in a random epoch with no member joined, a
 * restart's join opens the next one unless a round completed within
 * XINA_JOIN_BUSY_MS, contributions of another epoch are dropped
 * (drop_epoch), and a slot version of another epoch starts afresh, for
 * round 0 or 1 only.
 *
 * I/O is batched: recvmmsg() with UDP_GRO (a worker's GSO train arrives
 * as one buffer), and per member one UDP GSO train of all results that
 * completed in a receive batch, all in one sendmmsg().
 *
 * With --up it is a rack agent (xina_swagg_up.c): its members are a rack's
 * workers, some of the job's ranks, and a completed version goes up to an
 * upper switch as the rack's partial instead of being answered; the upper
 * result comes back down as its result.
 *
 * Single-threaded by design: one process, one socket, no locks.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/xina.h>

#include "xina_auth.h"
#include "xina_clock.h"
#include "xina_nh.h"
#include "xina_join.h"
#include "xina_keyfile.h"
#include "xina_lanes.h"
#include "xina_names.h"
#include "xina_swagg.h"


static volatile sig_atomic_t sw_stop;
static volatile sig_atomic_t sw_dump;	/* SIGUSR1: print, go on */

static void sw_usage(FILE *f)
{
	fprintf(f,
		"Usage: xina-swagg [--port PORT] [--bind IP] --job ID --key-file PATH --workers N\n"
		"                  --slots S --elems E --member RANK=IP[:PORT]... [--no-gso]\n"
		"                  [--no-gro] [--json] [--verbose]\n"
		"                  [--up IP[:PORT] --up-rank R --up-key-file PATH [--up-job ID]\n"
		"                   [--up-rto-us U] [--up-timeout-ms T]]\n"
		"Aggregates xina contributions in user space; prints counters on SIGINT/SIGTERM.\n"
		"SIGUSR1 prints the counters and the open rounds (the ranks each waits for) and\n"
		"goes on.\n"
		"--key-file: the job's key file (default $XINA_KEY_FILE).\n"
		"--up: a rack agent: the members given (any subset of the job's --workers ranks)\n"
		"      are the rack's; their aggregate goes to the upper switch as rank R of the\n"
		"      upper job (--up-job, default --job, secret in --up-key-file), and its result\n"
		"      comes back down to them.\n"
		"Without --up it can be the upper switch of such jobs: its members are then the\n"
		"racks' agents or the uplinks of racks whose XDP switches hand up, each standing\n"
		"for its rack (Documentation/protocol.md, \"Two levels\").\n");
}

/* @s as a number in @min..@max, or a message naming @opt and the range. */
static int sw_parse_range(const char *opt, const char *s, uint64_t min,
			  uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || !*s || *end || *s == '-' || v < min || v > max) {
		fprintf(stderr, "xina-swagg: %s '%s' is not a number in %llu..%llu\n",
			opt, s, (unsigned long long)min,
			(unsigned long long)max);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int sw_parse_u64(const char *opt, const char *s, uint64_t max, uint64_t *out)
{
	return sw_parse_range(opt, s, 0, max, out);
}

/* "IP[:PORT]" */
int sw_parse_addr(const char *opt, const char *s, struct sockaddr_in *sa)
{
	char buf[64], *colon;
	uint64_t port = 0;

	if (strlen(s) >= sizeof(buf))
		goto bad;
	strcpy(buf, s);
	colon = strchr(buf, ':');
	if (colon) {
		*colon = '\0';
		if (sw_parse_u64(opt, colon + 1, 65535, &port))
			return -EINVAL;
	}
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons(port);
	if (inet_pton(AF_INET, buf, &sa->sin_addr) == 1)
		return 0;
bad:
	fprintf(stderr, "xina-swagg: %s '%s' is not IPv4[:PORT]\n", opt, s);
	return -EINVAL;
}

static int sw_parse_member(struct swagg *sw, const char *s, uint64_t *ranks)
{
	const char *eq = strchr(s, '=');
	char rank_s[16];
	uint64_t rank;

	if (!eq || eq == s || (size_t)(eq - s) >= sizeof(rank_s)) {
		fprintf(stderr, "xina-swagg: --member '%s' is not RANK=IP[:PORT]\n", s);
		return -EINVAL;
	}
	memcpy(rank_s, s, eq - s);
	rank_s[eq - s] = '\0';
	if (sw_parse_u64("--member rank", rank_s, XINA_MAX_WORKERS - 1, &rank))
		return -EINVAL;
	/* sw->member has sw->workers entries: check before writing one */
	if (rank >= sw->workers) {
		fprintf(stderr, "xina-swagg: --member '%s': rank %llu not below --workers %u\n",
			s, (unsigned long long)rank, sw->workers);
		return -EINVAL;
	}
	if (ranks[rank / 64] & (1ull << (rank % 64))) {
		fprintf(stderr, "xina-swagg: --member '%s': rank %llu given twice\n",
			s, (unsigned long long)rank);
		return -EINVAL;
	}
	ranks[rank / 64] |= 1ull << (rank % 64);
	if (sw_parse_addr("--member", eq + 1, &sw->member[rank].addr))
		return -EINVAL;
	sw->member[rank].any_port = !sw->member[rank].addr.sin_port;
	return 0;
}

enum {
	OPT_NO_GSO = 256, OPT_NO_GRO, OPT_BIND, OPT_UP, OPT_UP_JOB, OPT_UP_RANK,
	OPT_UP_KEY, OPT_UP_RTO, OPT_UP_TIMEOUT,
};

/* The options of the uplink (--up ...); NULL while none was given. */
static int sw_parse_up(struct swagg *sw, int c, const char *arg)
{
	struct sw_up *up = sw->up;
	uint64_t v;

	if (!up) {
		up = calloc(1, sizeof(*up));
		if (!up)
			return -ENOMEM;
		up->rank = UINT16_MAX;
		up->rto_us = 20000;
		up->rto_max_us = 200000;
		up->timeout_ms = 10000;
		sw->up = up;
	}
	switch (c) {
	case OPT_UP:
		return sw_parse_addr("--up", arg, &up->addr);
	case OPT_UP_JOB:
		if (sw_parse_range("--up-job", arg, 1, UINT32_MAX, &v))
			return -EINVAL;
		up->job = v;
		return 0;
	case OPT_UP_RANK:
		if (sw_parse_u64("--up-rank", arg, XINA_MAX_WORKERS - 1, &v))
			return -EINVAL;
		up->rank = v;
		return 0;
	case OPT_UP_KEY:
		up->key_file = arg;
		return 0;
	case OPT_UP_RTO:
		if (sw_parse_range("--up-rto-us", arg, 100, 10000000, &v))
			return -EINVAL;
		up->rto_us = v;
		if (up->rto_max_us < v)
			up->rto_max_us = v;
		return 0;
	case OPT_UP_TIMEOUT:
		if (sw_parse_range("--up-timeout-ms", arg, 1, 3600000, &v))
			return -EINVAL;
		up->timeout_ms = v;
		return 0;
	}
	return -EINVAL;
}

/* The keys of every member, of the results and of NH, from the key file. */
static int sw_keys(struct swagg *sw)
{
	uint8_t secret[XINA_SECRET_BYTES];
	char err[512];
	uint16_t r;

	if (sw->up && sw_up_setup(sw))
		return -EINVAL;
	if (xina_keyfile_read(sw->key_file, secret, err, sizeof(err))) {
		fprintf(stderr, "xina-swagg: %s\n", err);
		return -EINVAL;
	}
	for (r = 0; r < sw->nmemb; r++)
		xina_derive_key(secret, XINA_LABEL_MEMBER, sw->job, sw->ranks[r],
				sw->member[sw->ranks[r]].key);
	xina_derive_key(secret, XINA_LABEL_RESULT, sw->job, 0, sw->kres);
	xina_derive_nh(secret, sw->job, sw->nhk, XINA_MAX_ELEMS);
	explicit_bzero(secret, sizeof(secret));
	return 0;
}

static int sw_parse(struct swagg *sw, int argc, char **argv, bool *json,
		    struct sockaddr_in *bind_sa)
{
	static const struct option lopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "bind", required_argument, NULL, OPT_BIND },
		{ "job", required_argument, NULL, 'j' },
		{ "key-file", required_argument, NULL, 'k' },
		{ "workers", required_argument, NULL, 'w' },
		{ "slots", required_argument, NULL, 's' },
		{ "elems", required_argument, NULL, 'e' },
		{ "member", required_argument, NULL, 'm' },
		{ "no-gso", no_argument, NULL, OPT_NO_GSO },
		{ "up", required_argument, NULL, OPT_UP },
		{ "up-job", required_argument, NULL, OPT_UP_JOB },
		{ "up-rank", required_argument, NULL, OPT_UP_RANK },
		{ "up-key-file", required_argument, NULL, OPT_UP_KEY },
		{ "up-rto-us", required_argument, NULL, OPT_UP_RTO },
		{ "up-timeout-ms", required_argument, NULL, OPT_UP_TIMEOUT },
		{ "no-gro", no_argument, NULL, OPT_NO_GRO },
		{ "json", no_argument, NULL, 'J' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	uint64_t v, ranks[XINA_MAX_WORKERS / 64] = {};
	char **members;
	uint64_t now;
	int c, nm = 0, i;

	members = calloc(argc, sizeof(*members));
	if (!members)
		return -ENOMEM;
	sw->port = XINA_UDP_PORT;
	sw->gso = true;
	sw->gro = true;
	while ((c = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (sw_parse_u64("--port", optarg, 65535, &v))
				goto err;
			sw->port = v;
			break;
		case OPT_BIND:
			if (sw_parse_addr("--bind", optarg, bind_sa))
				goto err;
			break;
		case 'j':
			if (sw_parse_range("--job", optarg, 1, UINT32_MAX, &v))
				goto err;
			sw->job = v;
			break;
		case 'k':
			sw->key_file = optarg;
			break;
		case 'w':
			if (sw_parse_range("--workers", optarg, 1, XINA_MAX_WORKERS,
					   &v))
				goto err;
			sw->workers = v;
			break;
		case 's':
			if (sw_parse_range("--slots", optarg, 1, 1u << 20, &v))
				goto err;
			sw->slots = v;
			break;
		case 'e':
			if (sw_parse_range("--elems", optarg, 1, XINA_MAX_ELEMS, &v))
				goto err;
			sw->elems = v;
			break;
		case 'm':
			members[nm++] = optarg;
			break;
		case OPT_NO_GSO:
			sw->gso = false;
			break;
		case OPT_NO_GRO:
			sw->gro = false;
			break;
		case OPT_UP:
		case OPT_UP_JOB:
		case OPT_UP_RANK:
		case OPT_UP_KEY:
		case OPT_UP_RTO:
		case OPT_UP_TIMEOUT:
			if (sw_parse_up(sw, c, optarg))
				goto err;
			break;
		case 'J':
			*json = true;
			break;
		case 'v':
			sw->verbose = true;
			break;
		case 'h':
			sw_usage(stdout);
			exit(0);
		default:
			goto err_usage;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "xina-swagg: unexpected argument '%s'\n", argv[optind]);
		goto err_usage;
	}
	if (!sw->job || !sw->workers || !sw->slots || !sw->elems) {
		fprintf(stderr, "xina-swagg: --job, --workers, --slots and --elems are required\n");
		goto err_usage;
	}
	if (!sw->key_file)
		sw->key_file = getenv("XINA_KEY_FILE");
	if (!sw->key_file) {
		fprintf(stderr, "xina-swagg: --key-file (or XINA_KEY_FILE) is required: keys are not taken on the command line\n");
		goto err_usage;
	}
	if (sw->up && (!sw->up->addr.sin_family || sw->up->rank == UINT16_MAX ||
		       !sw->up->key_file)) {
		fprintf(stderr, "xina-swagg: a rack agent needs --up, --up-rank and --up-key-file\n");
		goto err_usage;
	}
	sw->member = calloc(sw->workers, sizeof(*sw->member));
	sw->jm = calloc(sw->workers, sizeof(*sw->jm));
	sw->ranks = calloc(sw->workers, sizeof(*sw->ranks));
	if (!sw->member || !sw->jm || !sw->ranks)
		goto err;
	/* a join captured from an earlier run of this job's switch is stale */
	now = xina_realtime_ns();
	for (i = 0; i < sw->workers; i++)
		xina_join_mbr_start(&sw->jm[i], now);
	for (i = 0; i < nm; i++) {
		if (sw_parse_member(sw, members[i], ranks))
			goto err;
	}
	/* An agent's members are its rack's: some of the job's ranks. */
	if (sw->up ? !nm : nm != sw->workers) {
		fprintf(stderr, "xina-swagg: %d --member given for %u workers%s\n",
			nm, sw->workers, sw->up ? " (a rack agent needs at least one)" : "");
		goto err;
	}
	for (i = 0; i < sw->workers; i++)
		if (sw->member[i].addr.sin_family)
			sw->ranks[sw->nmemb++] = i;
	free(members);
	return sw_keys(sw);

err_usage:
	sw_usage(stderr);
err:
	free(members);
	return -EINVAL;
}

uint64_t sw_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/*
 * The element loops: every word of every packet goes through them, a
 * rack agent's several times (a contribution's NH, its add, the partial
 * up, the result down).  NH is user/common/xina_nh.c's (by hand for
 * AVX2); sw_add() is built at -O3 (user/tools/build.mk) twice, for AVX2
 * and the x86-64 baseline, picked at load time (target_clones, as
 * libxina_pack.c does).  Integer arithmetic only, the very expressions of
 * bpf/xina_auth.h and bpf/xina_lanes.h: every path gives the same bits as
 * the fast path.
 */
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define SW_CLONES	__attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef SW_CLONES
#define SW_CLONES
#endif

/* A new job: a random epoch, never 0, that nobody joined yet. */
static int sw_epoch_init(struct swagg *sw)
{
	uint32_t e = 0;

	while (!e) {
		if (getrandom(&e, sizeof(e), 0) != sizeof(e)) {
			perror("xina-swagg: getrandom");
			return -errno;
		}
	}
	sw->jj.epoch = e;
	return 0;
}

static int sw_setup(struct swagg *sw, const struct sockaddr_in *bind_sa)
{
	size_t nver = (size_t)sw->slots * 2;
	struct sockaddr_in sa = *bind_sa;
	int one = 1, sz = 32 << 20;

	if (sw_epoch_init(sw))
		return -EIO;

	sw->pkt_sz = sizeof(struct xina_hdr) + (size_t)sw->elems * 4;
	sw->ver = calloc(nver, sizeof(*sw->ver));
	sw->vals = calloc(nver * sw->elems, sizeof(*sw->vals));
	sw->res = calloc(nver, sw->pkt_sz);
	sw->comp = calloc(nver, sizeof(*sw->comp));
	sw->ans_ver = calloc(SW_ANS_MAX, sizeof(*sw->ans_ver));
	sw->ans_to = calloc(SW_ANS_MAX, sizeof(*sw->ans_to));
	sw->ans_hdr = calloc(SW_ANS_MAX, sizeof(*sw->ans_hdr));
	if (!sw->ver || !sw->vals || !sw->res || !sw->comp || !sw->ans_ver ||
	    !sw->ans_to || !sw->ans_hdr) {
		fprintf(stderr, "xina-swagg: out of memory for %u slots of %u elements\n",
			sw->slots, sw->elems);
		return -ENOMEM;
	}
	sw->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (sw->fd < 0) {
		perror("xina-swagg: socket");
		return -errno;
	}
	if (setsockopt(sw->fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
		setsockopt(sw->fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	if (setsockopt(sw->fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)))
		setsockopt(sw->fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	if (sw->gro && setsockopt(sw->fd, IPPROTO_UDP, UDP_GRO, &one, sizeof(one)))
		sw->gro = false;
	sa.sin_port = htons(sw->port);
	if (bind(sw->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "xina-swagg: bind to %s:%u: %s\n",
			inet_ntoa(sa.sin_addr), sw->port, strerror(errno));
		return -errno;
	}
	return 0;
}

static struct xina_hdr *sw_res(struct swagg *sw, uint32_t vi)
{
	return (struct xina_hdr *)(sw->res + (size_t)vi * sw->pkt_sz);
}

static size_t sw_res_len(struct swagg *sw, uint32_t vi)
{
	return sizeof(struct xina_hdr) + (size_t)sw->ver[vi].count * 4;
}

void sw_tx_send(struct swagg *sw, struct sw_txb *t)
{
	unsigned int i;
	int ret;

	for (i = 0; i < t->nmsg; i += ret) {
		ret = sendmmsg(sw->fd, t->msg + i, t->nmsg - i, 0);
		if (ret > 0) {
			sw->tx_calls++;
			continue;
		}
		/*
		 * Skip the message that failed (firewall, GSO refused, ...):
		 * the workers' timers recover lost results.
		 */
		sw->tx_err++;
		if (ret < 0 && errno == EINVAL && sw->gso) {
			fprintf(stderr, "xina-swagg: UDP GSO refused; sending datagrams one by one\n");
			sw->gso = false;
		}
		ret = 1;
	}
	t->nmsg = 0;
	t->niov = 0;
}

/* Open a message to @to with room for SW_GSO_MAX datagrams. */
struct msghdr *sw_tx_msg(struct swagg *sw, struct sw_txb *t,
			 struct sockaddr_in *to)
{
	struct msghdr *mh;

	if (t->nmsg == SW_TX_BATCH)
		sw_tx_send(sw, t);
	mh = &t->msg[t->nmsg++].msg_hdr;
	memset(mh, 0, sizeof(*mh));
	mh->msg_name = to;
	mh->msg_namelen = sizeof(*to);
	mh->msg_iov = &t->iov[t->niov];
	return mh;
}

static void sw_tx_add(struct swagg *sw, struct sw_txb *t, struct msghdr *mh,
		      uint32_t vi)
{
	t->iov[t->niov].iov_base = sw_res(sw, vi);
	t->iov[t->niov++].iov_len = sw_res_len(sw, vi);
	mh->msg_iovlen++;
	sw->tx_dgrams++;
}

/* Answer @c: its own header, then the kept result's elements. */
static void sw_tx_answer(struct swagg *sw, struct sw_txb *t, struct msghdr *mh,
			 uint32_t c)
{
	uint32_t vi = sw->ans_ver[c];

	t->iov[t->niov].iov_base = &sw->ans_hdr[c];
	t->iov[t->niov++].iov_len = sizeof(struct xina_hdr);
	t->iov[t->niov].iov_base = sw_res(sw, vi) + 1;
	t->iov[t->niov++].iov_len = sw_res_len(sw, vi) - sizeof(struct xina_hdr);
	mh->msg_iovlen = 2;
	sw->tx_dgrams++;
}

void sw_tx_gso(struct sw_txb *t, struct msghdr *mh, size_t seg)
{
	struct cmsghdr *cm;

	/* @mh is always the message opened last. */
	mh->msg_control = t->cbuf[t->nmsg - 1];
	mh->msg_controllen = CMSG_SPACE(sizeof(uint16_t));
	cm = CMSG_FIRSTHDR(mh);
	cm->cmsg_level = IPPROTO_UDP;
	cm->cmsg_type = UDP_SEGMENT;
	cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
	*(uint16_t *)CMSG_DATA(cm) = seg;
}

/*
 * Send what this receive batch produced: to every member one GSO train
 * per run of equally sized completions, then the retransmission answers.
 */
void sw_flush(struct swagg *sw)
{
	static struct sw_txb t;
	uint32_t m, c, max_seg;
	struct msghdr *mh;
	size_t len;

	max_seg = sw->gso ? 65000 / sw->pkt_sz : 1;
	if (max_seg > SW_GSO_MAX)
		max_seg = SW_GSO_MAX;
	if (!max_seg)
		max_seg = 1;
	for (m = 0; m < sw->nmemb; m++) {
		for (c = 0; c < sw->ncomp; ) {
			mh = sw_tx_msg(sw, &t, &sw->member[sw->ranks[m]].addr);
			len = sw_res_len(sw, sw->comp[c]);
			while (mh->msg_iovlen < max_seg && c < sw->ncomp &&
			       sw_res_len(sw, sw->comp[c]) == len)
				sw_tx_add(sw, &t, mh, sw->comp[c++]);
			if (mh->msg_iovlen > 1)
				sw_tx_gso(&t, mh, len);
		}
	}
	for (c = 0; c < sw->nans; c++) {
		mh = sw_tx_msg(sw, &t, &sw->ans_to[c]);
		sw_tx_answer(sw, &t, mh, c);
	}
	if (sw->up)
		sw_up_flush(sw, &t);
	if (t.nmsg)
		sw_tx_send(sw, &t);
	sw->ncomp = 0;
	sw->nans = 0;
}

/*
 * Version @vi completed, its result's elements in place: the header @h's,
 * tagged with K_res over @nh (the elements' NH), kept and queued to all.
 */
static void sw_complete_nh(struct swagg *sw, uint32_t vi,
			   const struct xina_hdr *h, uint64_t nh)
{
	struct xina_hdr *r = sw_res(sw, vi);
	struct sw_ver *v = &sw->ver[vi];

	*r = *h;
	r->type = XINA_T_RESULT;
	/* @h may be a RETRANS or a ZERO; the result is neither: full size */
	r->flags = 0;
	r->rank = 0;
	r->op = v->op;
	r->exp = h->exp;
	/* the round's MAX, not @h's own: set before the tag, which covers it */
	r->aux = htonl(v->aux);
	r->tag = htobe64(xina_tag_hdr(sw->kres, r, nh));
	v->complete = true;
	sw->stat[XINA_STAT_COMPLETE]++;
	sw->last_complete_ns = sw_now_ns();
	if (sw->ncomp == (uint32_t)sw->slots * 2)
		sw_flush(sw);
	sw->comp[sw->ncomp++] = vi;
}

/* The last contribution arrived: build the kept result, queue it to all. */
void sw_complete(struct swagg *sw, uint32_t vi, const struct xina_hdr *h)
{
	const uint32_t *a = (const uint32_t *)sw->vals + (size_t)vi * sw->elems;
	uint32_t *out = (uint32_t *)(sw_res(sw, vi) + 1);

	sw_complete_nh(sw, vi, h, xina_nh_pack(sw->nhk, out, a,
					       sw->ver[vi].count));
}

/*
 * The same for a result whose elements come in network order (@in, an
 * upper job's result: a rack agent's), @nh their NH under this job's key.
 */
void sw_complete_net(struct swagg *sw, uint32_t vi, const struct xina_hdr *h,
		     const uint32_t *in, uint64_t nh)
{
	memcpy(sw_res(sw, vi) + 1, in, (size_t)sw->ver[vi].count * 4);
	sw_complete_nh(sw, vi, h, nh);
}

static void sw_answer(struct swagg *sw, uint32_t vi, uint16_t rank,
		      const struct sockaddr_in *to)
{
	struct xina_hdr *h;

	if (sw->nans == SW_ANS_MAX)
		sw_flush(sw);
	/* The kept result's header and tag, as the switch answers. */
	h = &sw->ans_hdr[sw->nans];
	*h = *sw_res(sw, vi);
	sw->ans_ver[sw->nans] = vi;
	sw->ans_to[sw->nans++] = *to;
	sw->stat[XINA_STAT_RETRANS_ANSWERED]++;
}

/*
 * @n words of @in (network order) into @a (host order) by (@dtype, @op),
 * through bpf/xina_lanes.h as every aggregator: constants after inlining,
 * so each pair gets a loop of its own.
 */
static __always_inline void sw_fold(uint32_t *restrict a,
				    const uint32_t *restrict in,
				    unsigned int n, const __u32 dtype,
				    const __u32 op)
{
	unsigned int i;
	__u64 acc, x;

	if (dtype == XINA_DTYPE_INT64) {
		for (i = 0; i + 1 < n; i += 2) {
			acc = (__u64)a[i] << 32 | a[i + 1];
			x = (__u64)ntohl(in[i]) << 32 | ntohl(in[i + 1]);
			acc = xina_combine64(acc, x, op);
			a[i] = acc >> 32;
			a[i + 1] = (uint32_t)acc;
		}
		return;
	}
	for (i = 0; i < n; i++)
		a[i] = xina_combine32(a[i], ntohl(in[i]), dtype, op);
}

#define SW_FOLD_OPS(a, in, n, dtype, op)				\
	do {								\
		switch (op) {						\
		case XINA_OP_SUM:					\
			sw_fold(a, in, n, dtype, XINA_OP_SUM);		\
			break;						\
		case XINA_OP_MAX:					\
			sw_fold(a, in, n, dtype, XINA_OP_MAX);		\
			break;						\
		case XINA_OP_MIN:					\
			sw_fold(a, in, n, dtype, XINA_OP_MIN);		\
			break;						\
		case XINA_OP_AND:					\
			sw_fold(a, in, n, dtype, XINA_OP_AND);		\
			break;						\
		case XINA_OP_OR:					\
			sw_fold(a, in, n, dtype, XINA_OP_OR);		\
			break;						\
		default:						\
			sw_fold(a, in, n, dtype, XINA_OP_XOR);		\
			break;						\
		}							\
	} while (0)

/*
 * The pair was checked by sw_contrib() (xina_dtype_op_ok(), and
 * xina_op_zero_ok() for a ZERO block).  An element loop (SW_CLONES): each
 * (dtype, op) pair's loop is vectorised.
 */
SW_CLONES
static void sw_add(struct swagg *sw, uint32_t vi, const struct xina_hdr *h,
		   bool init)
{
	uint32_t *restrict a = (uint32_t *)sw->vals + (size_t)vi * sw->elems;
	const uint32_t *restrict in = (const uint32_t *)(h + 1);
	struct sw_ver *v = &sw->ver[vi];
	unsigned int i;

	/*
	 * A ZERO block has no words to read: the zero words it stands for
	 * are the op's identity, so only a first contribution writes them.
	 */
	if (h->flags & XINA_F_ZERO) {
		if (init)
			memset(a, 0, (size_t)v->count * sizeof(*a));
		return;
	}
	if (init) {
		for (i = 0; i < v->count; i++)
			a[i] = ntohl(in[i]);
		return;
	}
	switch (v->dtype) {
	case XINA_DTYPE_INT8:
		SW_FOLD_OPS(a, in, v->count, XINA_DTYPE_INT8, v->op);
		break;
	case XINA_DTYPE_INT16:
		SW_FOLD_OPS(a, in, v->count, XINA_DTYPE_INT16, v->op);
		break;
	case XINA_DTYPE_INT64:
		SW_FOLD_OPS(a, in, v->count, XINA_DTYPE_INT64, v->op);
		break;
	default:
		SW_FOLD_OPS(a, in, v->count, XINA_DTYPE_INT32, v->op);
		break;
	}
}

/* Start round @round in version @vi with this first contribution. */
static void sw_start(struct swagg *sw, uint32_t vi, const struct xina_hdr *h,
		     uint32_t round)
{
	struct sw_ver *v = &sw->ver[vi];

	/* The kept result may still be queued for sending. */
	if (sw->ncomp || sw->nans)
		sw_flush(sw);
	memset(v->seen, 0, sizeof(v->seen));
	v->round = round;
	v->epoch = sw->jj.epoch;
	v->used = true;
	v->complete = false;
	v->dtype = h->dtype;
	v->op = h->op;
	v->count = ntohs(h->count);
	v->offset = be64toh(h->offset);
	v->ncontrib = 0;
	v->aux = (int32_t)ntohl(h->aux);
	v->up_pending = false;
	sw_add(sw, vi, h, true);
}

/*
 * Which stat a contribution of the current epoch @epoch to version @v in
 * @round falls under, if not new.  A version of another epoch (or never
 * used) starts afresh, for the first two rounds of a run only: a later
 * round there is a worker out of step with this epoch.
 */
static int sw_classify(const struct sw_ver *v, uint32_t round, uint32_t epoch,
		       bool *start)
{
	int32_t d = (int32_t)(round - v->round);

	*start = false;
	if (!v->used || v->epoch != epoch) {
		if (round > 1)
			return XINA_STAT_DROP_RANGE;
		*start = true;
		return -1;
	}
	if (d == 0)
		return -1;
	if (d < 0)
		return XINA_STAT_STALE;
	/*
	 * Round r + 2 reuses the version of round r, which every worker
	 * has seen completed before it sent round r + 1.  Anything else
	 * skips rounds: a worker out of step with this switch.
	 */
	if (d != 2 || !v->complete)
		return XINA_STAT_DROP_RANGE;
	*start = true;
	return -1;
}

/* Pseudo counter: a completed round's contributor asks again. */
#define SW_ANSWER	XINA_STAT_MAX

/*
 * May this contribution add to the round version @v is in?  A sender's
 * second one is a duplicate, or to a completed round a resend to answer;
 * but not a ZERO block, which no resend is (a resend carries its words,
 * so that the answer fits its frame): a replay, which a whole result in
 * answer would amplify.
 */
static int sw_join(const struct sw_ver *v, const struct xina_hdr *h,
		   uint16_t rank)
{
	if (v->seen[rank / 64] & (1ull << (rank % 64)))
		return v->complete && !(h->flags & XINA_F_ZERO) ? SW_ANSWER :
								  XINA_STAT_DUP;
	if (h->dtype != v->dtype || h->op != v->op)
		return XINA_STAT_DROP_OP;
	if (ntohs(h->count) != v->count || be64toh(h->offset) != v->offset)
		return XINA_STAT_DROP_RANGE;
	return -1;
}

static void sw_contrib(struct swagg *sw, const struct xina_hdr *h,
		       const struct sockaddr_in *from)
{
	uint32_t slot = ntohl(h->slot), round = ntohl(h->round), vi;
	uint16_t rank = ntohs(h->rank), count = ntohs(h->count);
	struct sw_member *mb;
	struct sw_ver *v;
	uint64_t nh = 0;
	bool start;
	int st;

	sw->stat[XINA_STAT_RX]++;
	mb = rank < sw->workers ? &sw->member[rank] : NULL;
	if (!mb || !mb->addr.sin_family ||
	    mb->addr.sin_addr.s_addr != from->sin_addr.s_addr ||
	    (!mb->any_port && mb->addr.sin_port != from->sin_port)) {
		sw->stat[XINA_STAT_DROP_MEMBER]++;
		return;
	}
	/* A ZERO block sends no words: its NH is that of no payload. */
	if (!(h->flags & XINA_F_ZERO))
		nh = xina_nh_wire(sw->nhk, (const uint32_t *)(h + 1), count);
	if (be64toh(h->tag) != xina_tag_hdr(mb->key, h, nh)) {
		sw->stat[XINA_STAT_DROP_AUTH]++;
		return;
	}
	if (ntohl(h->epoch) != sw->jj.epoch) {
		sw->stat[XINA_STAT_DROP_EPOCH]++;
		return;
	}
	if (slot >= sw->slots || count > sw->elems) {
		sw->stat[XINA_STAT_DROP_RANGE]++;
		return;
	}
	/*
	 * AVG (library only), unknown pairs, an odd INT64 count; a ZERO
	 * block of an op whose identity is not the zero word (MIN, MAX, AND)
	 */
	if (!xina_dtype_op_ok(h->dtype, h->op, count) ||
	    (h->flags & XINA_F_ZERO && !xina_op_zero_ok(h->op))) {
		sw->stat[XINA_STAT_DROP_OP]++;
		return;
	}
	vi = slot * 2 + (round & 1);
	v = &sw->ver[vi];
	st = sw_classify(v, round, sw->jj.epoch, &start);
	if (st < 0 && !start)
		st = sw_join(v, h, rank);
	/* To where the member was learned, not where this came from. */
	if (st == SW_ANSWER) {
		sw_answer(sw, vi, rank, &mb->addr);
		return;
	}
	if (st >= 0) {
		sw->stat[st]++;
		/* a member asks for a result the upper job still owes */
		if (st == XINA_STAT_DUP && v->up_pending)
			sw_up_again(sw, vi);
		return;
	}
	/* Accepted: results go back to where the member sends from. */
	if (mb->any_port)
		mb->addr.sin_port = from->sin_port;
	if (start) {
		sw_start(sw, vi, h, round);
	} else {
		sw_add(sw, vi, h, false);
		/* signed, whatever the dtype and op; a ZERO block's too */
		if ((int32_t)ntohl(h->aux) > v->aux)
			v->aux = (int32_t)ntohl(h->aux);
	}
	v->seen[rank / 64] |= 1ull << (rank % 64);
	sw->stat[XINA_STAT_CONTRIB]++;
	if (++v->ncontrib < sw->nmemb)
		return;
	if (sw->up)
		sw_up_partial(sw, vi, h);
	else
		sw_complete(sw, vi, h);
}

static void sw_join_reply(struct swagg *sw, const struct xina_hdr *h,
			  const struct xina_join_mbr *m, const __u64 *key,
			  const struct sockaddr_in *to)
{
	struct xina_hdr r = *h;

	r.type = XINA_T_JOIN_REPLY;
	r.round = htonl(m->status);
	r.epoch = htonl(m->epoch);
	r.slot = htonl(sw->slots);
	r.aux = htonl(sw->elems);
	/*
	 * What it takes beyond RETRANS: ZERO blocks, with --up too (the
	 * partial going up is a full block).  Before the tag, which covers it.
	 */
	r.flags = XINA_F_ZERO;
	/* BAD_KEY: no key of the member's; the join's own tag echoed. */
	if (key)
		r.tag = htobe64(xina_tag_hdr(key, &r, 0));
	if (sendto(sw->fd, &r, sizeof(r), 0, (const struct sockaddr *)to,
		   sizeof(*to)) != sizeof(r))
		sw->tx_err++;
	else
		sw->tx_dgrams++;
}

/*
 * A join from @from: who the member is, whether its key is the job's, then
 * xina_join_decide() does the rest (bpf/xina_join.h).  Nobody it does not
 * know gets an answer.
 */
static void sw_join_pkt(struct swagg *sw, const struct xina_hdr *h,
			const struct sockaddr_in *from)
{
	uint16_t rank = ntohs(h->rank);
	struct xina_join_mbr bad = {
		.status = XINA_JOIN_BAD_KEY,
	};
	struct xina_join_mbr *m;
	struct sw_member *mb;
	uint64_t now;
	int fits, busy, vd;

	sw->stat[XINA_STAT_RX]++;
	mb = rank < sw->workers ? &sw->member[rank] : NULL;
	if (!mb || !mb->addr.sin_family ||
	    mb->addr.sin_addr.s_addr != from->sin_addr.s_addr ||
	    (!mb->any_port && mb->addr.sin_port != from->sin_port)) {
		sw->stat[XINA_STAT_DROP_MEMBER]++;
		return;
	}
	/* counted as drop_auth only, as the fast path does */
	if (be64toh(h->tag) != xina_tag_hdr(mb->key, h, 0)) {
		sw->stat[XINA_STAT_DROP_AUTH]++;
		sw_join_reply(sw, h, &bad, NULL, from);
		return;
	}
	m = &sw->jm[rank];
	fits = ntohl(h->slot) <= sw->slots && ntohl(h->aux) <= sw->elems &&
	       h->dtype == XINA_DTYPE_INT32;
	now = sw_now_ns();
	busy = sw->last_complete_ns &&
	       now - sw->last_complete_ns < XINA_JOIN_BUSY_MS * 1000000ull;
	vd = xina_join_decide(&sw->jj, m, rank, be64toh(h->offset),
			      ntohl(h->epoch), fits, busy);
	if (vd == XINA_JD_STALE) {
		sw->stat[XINA_STAT_JOIN_STALE]++;
		return;
	}
	/* A fresh join whose tag verified: this is where the member is. */
	if (vd != XINA_JD_RESEND && mb->any_port)
		mb->addr.sin_port = from->sin_port;
	if (vd == XINA_JD_NEW_EPOCH) {
		sw->stat[XINA_STAT_EPOCH_NEW]++;
		if (sw->verbose)
			fprintf(stderr, "xina-swagg: rank %u restarted: epoch %u\n",
				rank, sw->jj.epoch);
	}
	/*
	 * A new run of the rack's workers is a new run of the whole job:
	 * the agent joins the upper job again before it answers, so that
	 * the rack's rounds, restarting at 0, meet the upper job's.
	 */
	if (sw->up && m->status == XINA_JOIN_OK &&
	    sw->up->rack_epoch != sw->jj.epoch && sw_up_join(sw)) {
		sw_stop = SIGTERM;
		return;
	}
	sw->stat[m->status == XINA_JOIN_OK ? XINA_STAT_JOIN :
		 XINA_STAT_JOIN_REFUSED]++;
	sw_join_reply(sw, h, m, mb->key, &mb->addr);
}

/*
 * The length of contribution @h: a ZERO block's words are not sent, its
 * count says how many it stands for.
 */
static size_t sw_contrib_len(const struct xina_hdr *h)
{
	if (h->flags & XINA_F_ZERO)
		return sizeof(*h);
	return sizeof(*h) + (size_t)ntohs(h->count) * 4;
}

/*
 * Well-formedness first, as the XDP fast path and xina.ko check it:
 * anything failing here names no job.  weight is reserved (hierarchical
 * aggregation): until it means something, a weight is malformed.  A join
 * is a bare header; aux carries its elements per slot, epoch its run.  A
 * ZERO contribution is a bare header too, and never a resend: a resend
 * carries the zero words, so that the answer to it fits in its frame.
 */
static void sw_packet(struct swagg *sw, const uint8_t *p, size_t len,
		      const struct sockaddr_in *from)
{
	const struct xina_hdr *h = (const struct xina_hdr *)p;
	bool join = len >= sizeof(*h) && h->type == XINA_T_JOIN;

	if (sw->up && sw_up_packet(sw, p, len, from))
		return;
	if (len < sizeof(*h) || h->version != XINA_WIRE_VERSION ||
	    (h->type != XINA_T_CONTRIB && !join) ||
	    h->flags & ~XINA_F_ALL || h->weight ||
	    (join ? h->count || h->op || h->flags || h->exp || h->round ||
		    len != sizeof(*h) :
	     !h->count || ntohs(h->count) > XINA_MAX_ELEMS ||
	     (h->flags & XINA_F_ZERO && h->flags & XINA_F_RETRANS) ||
	     len != sw_contrib_len(h))) {
		sw->gstat[XINA_GSTAT_MALFORMED]++;
		return;
	}
	if (ntohl(h->job) != sw->job) {
		sw->gstat[XINA_GSTAT_NO_JOB]++;
		return;
	}
	if (join)
		sw_join_pkt(sw, h, from);
	else
		sw_contrib(sw, h, from);
}

static size_t sw_gro_size(struct msghdr *mh)
{
	struct cmsghdr *cm;

	for (cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm))
		if (cm->cmsg_level == IPPROTO_UDP && cm->cmsg_type == UDP_GRO)
			return *(int *)CMSG_DATA(cm);
	return 0;
}

static void sw_rx_one(struct swagg *sw, struct mmsghdr *m, const uint8_t *p)
{
	size_t len = m->msg_len, seg;

	sw->rx_dgrams++;
	if (m->msg_hdr.msg_flags & MSG_TRUNC) {
		sw->gstat[XINA_GSTAT_MALFORMED]++;
		return;
	}
	seg = sw->gro ? sw_gro_size(&m->msg_hdr) : 0;
	if (!seg || seg >= len) {
		sw_packet(sw, p, len, m->msg_hdr.msg_name);
		return;
	}
	for (; len; p += seg, len -= len < seg ? len : seg)
		sw_packet(sw, p, len < seg ? len : seg, m->msg_hdr.msg_name);
}

static void sw_on_signal(int sig)
{
	if (sig == SIGUSR1)
		sw_dump = 1;
	else
		sw_stop = sig;
}

static void sw_print(const struct swagg *sw, bool json, bool rounds);

static int sw_loop(struct swagg *sw)
{
	static struct mmsghdr msg[SW_RX_BATCH];
	static struct iovec iov[SW_RX_BATCH];
	static struct sockaddr_in from[SW_RX_BATCH];
	static char cbuf[SW_RX_BATCH][CMSG_SPACE(sizeof(int))];
	struct pollfd pfd = { .fd = sw->fd, .events = POLLIN };
	struct sigaction sa = { .sa_handler = sw_on_signal };
	size_t bufsz = sw->gro ? SW_RX_BUF : sw->pkt_sz + 1;
	struct timespec ts, *tmo = NULL;
	sigset_t block, empty;
	uint8_t *buf;
	int i, ret;

	buf = malloc(bufsz * SW_RX_BATCH);
	if (!buf)
		return -ENOMEM;
	/* Signals only get through inside ppoll(): no lost wakeup. */
	sigemptyset(&empty);
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);

	while (!sw_stop) {
		if (sw_dump) {
			sw_dump = 0;
			sw_print(sw, sw->json, true);
			fflush(stdout);
		}
		/* An agent's timers: partials whose result is overdue. */
		if (sw->up) {
			ret = sw_up_timers(sw);
			if (sw->up->nq)
				sw_flush(sw);
			ts.tv_sec = ret / 1000;
			ts.tv_nsec = (long)(ret % 1000) * 1000000;
			tmo = &ts;
		}
		ret = ppoll(&pfd, 1, tmo, &empty);
		if (ret < 0 && errno != EINTR) {
			perror("xina-swagg: ppoll");
			break;
		}
		if (ret <= 0)
			continue;
		for (i = 0; i < SW_RX_BATCH; i++) {
			iov[i].iov_base = buf + i * bufsz;
			iov[i].iov_len = bufsz;
			memset(&msg[i].msg_hdr, 0, sizeof(msg[i].msg_hdr));
			msg[i].msg_hdr.msg_name = &from[i];
			msg[i].msg_hdr.msg_namelen = sizeof(from[i]);
			msg[i].msg_hdr.msg_iov = &iov[i];
			msg[i].msg_hdr.msg_iovlen = 1;
			msg[i].msg_hdr.msg_control = cbuf[i];
			msg[i].msg_hdr.msg_controllen = sizeof(cbuf[i]);
		}
		ret = recvmmsg(sw->fd, msg, SW_RX_BATCH, MSG_DONTWAIT, NULL);
		if (ret <= 0)
			continue;
		sw->rx_calls++;
		for (i = 0; i < ret; i++)
			sw_rx_one(sw, &msg[i], iov[i].iov_base);
		sw_flush(sw);
	}
	free(buf);
	return 0;
}

static bool sw_seen(const struct sw_ver *v, unsigned int rank)
{
	return v->seen[rank / 64] & (1ull << (rank % 64));
}

/* An open round: contributions of the current epoch, no result yet. */
static bool sw_open(const struct swagg *sw, const struct sw_ver *v)
{
	return v->used && v->epoch == sw->jj.epoch && !v->complete &&
	       v->ncontrib;
}

/*
 * The rounds in progress, as "xinactl job rounds" shows a switch's: each
 * with the ranks it waits for (an agent's with all its rack in waits for
 * the upper switch's result), then per member the open rounds it is
 * missing from.  A round still open, same number, in a later dump is
 * stuck on those.
 */
static void sw_print_rounds(const struct swagg *sw, bool json)
{
	uint32_t vi, nopen = 0, missing[XINA_MAX_WORKERS] = {};
	char addr[INET_ADDRSTRLEN];
	unsigned int m, r, k;
	const char *sep = "";

	for (vi = 0; vi < sw->slots * 2; vi++) {
		const struct sw_ver *v = &sw->ver[vi];

		if (!sw_open(sw, v))
			continue;
		nopen++;
		for (m = 0; m < sw->nmemb; m++)
			if (!sw_seen(v, sw->ranks[m]))
				missing[sw->ranks[m]]++;
	}
	printf(json ? ",\"open\":%u,\"rounds\":[" :
		      "rounds: %u open\n", nopen);
	for (vi = 0; vi < sw->slots * 2; vi++) {
		const struct sw_ver *v = &sw->ver[vi];

		if (!sw_open(sw, v))
			continue;
		printf(json ? "%s{\"slot\":%u,\"version\":%u,\"round\":%u,"
			      "\"dtype\":\"%s\",\"op\":\"%s\",\"count\":%u,"
			      "\"in\":%u,\"up_pending\":%s,\"waiting\":[" :
			      "%s\tslot %u version %u round %u %s %s %u words: %u",
		       sep, vi / 2, vi % 2, v->round,
		       xina_wire_dtype_name(v->dtype), xina_wire_op_name(v->op),
		       v->count, v->ncontrib,
		       json ? (v->up_pending ? "true" : "false") : "");
		sep = json ? "," : "";
		if (!json)
			printf(" of %u in", sw->nmemb);
		if (!json && v->ncontrib + 1 == sw->nmemb)
			printf(", waiting for rank");
		else if (!json && v->ncontrib < sw->nmemb)
			printf(", waiting for ranks");
		for (m = 0, k = 0; m < sw->nmemb; m++) {
			r = sw->ranks[m];
			if (!sw_seen(v, r))
				printf("%s%u", k++ ? "," : json ? "" : " ", r);
		}
		if (json)
			printf("]}");
		else if (v->up_pending)
			printf(", partial up to upper job %u, waiting for its result\n",
			       sw->up->job);
		else
			printf("\n");
	}
	if (json)
		printf("],\"missing\":[");
	for (r = 0, k = 0; r < sw->workers; r++) {
		if (!missing[r])
			continue;
		inet_ntop(AF_INET, &sw->member[r].addr.sin_addr, addr,
			  sizeof(addr));
		printf(json ? "%s{\"rank\":%u,\"addr\":\"%s\",\"port\":%u,"
			      "\"rounds\":%u}" :
			      "%s\trank %u %s:%u missing from %u of %u open round%s\n",
		       json ? (k++ ? "," : "") : "", r, addr,
		       ntohs(sw->member[r].addr.sin_port), missing[r], nopen,
		       json || nopen == 1 ? "" : "s");
	}
	if (json)
		printf("]");
}

static void sw_print(const struct swagg *sw, bool json, bool rounds)
{
	int i;

	if (json) {
		printf("{\"job\":%u,\"epoch\":%u,\"joined\":%u", sw->job,
		       sw->jj.epoch, xina_join_count(&sw->jj));
		for (i = 0; i < XINA_STAT_MAX; i++)
			printf(",\"%s\":%llu", xina_stat_name(i),
			       (unsigned long long)sw->stat[i]);
		for (i = 0; i < XINA_GSTAT_MAX; i++)
			printf(",\"%s\":%llu", xina_gstat_name(i),
			       (unsigned long long)sw->gstat[i]);
		printf(",\"rx_dgrams\":%llu,\"rx_calls\":%llu,\"tx_dgrams\":%llu,"
		       "\"tx_calls\":%llu,\"tx_err\":%llu,\"gso\":%s,\"gro\":%s",
		       (unsigned long long)sw->rx_dgrams,
		       (unsigned long long)sw->rx_calls,
		       (unsigned long long)sw->tx_dgrams,
		       (unsigned long long)sw->tx_calls,
		       (unsigned long long)sw->tx_err,
		       sw->gso ? "true" : "false", sw->gro ? "true" : "false");
		if (sw->up)
			sw_up_print(sw, json);
		if (rounds)
			sw_print_rounds(sw, json);
		printf("}\n");
		return;
	}
	printf("job %u: epoch %u joined %u", sw->job, sw->jj.epoch,
	       xina_join_count(&sw->jj));
	for (i = 0; i < XINA_STAT_MAX; i++)
		printf(" %s %llu", xina_stat_name(i), (unsigned long long)sw->stat[i]);
	printf("\nswitch:");
	for (i = 0; i < XINA_GSTAT_MAX; i++)
		printf(" %s %llu", xina_gstat_name(i), (unsigned long long)sw->gstat[i]);
	printf("\nio: rx_dgrams %llu rx_calls %llu tx_dgrams %llu tx_calls %llu tx_err %llu gso %s gro %s\n",
	       (unsigned long long)sw->rx_dgrams, (unsigned long long)sw->rx_calls,
	       (unsigned long long)sw->tx_dgrams, (unsigned long long)sw->tx_calls,
	       (unsigned long long)sw->tx_err, sw->gso ? "on" : "off",
	       sw->gro ? "on" : "off");
	if (sw->up)
		sw_up_print(sw, json);
	if (rounds)
		sw_print_rounds(sw, json);
}

int main(int argc, char **argv)
{
	struct sockaddr_in bind_sa = { .sin_family = AF_INET };
	struct swagg sw = { .fd = -1 };
	bool json = false;
	int err;

	err = sw_parse(&sw, argc, argv, &json, &bind_sa);
	if (err)
		return 2;
	sw.json = json;
	err = sw_setup(&sw, &bind_sa);
	if (err)
		return 1;
	/* An agent serves its rack once it is a member of the upper job. */
	if (sw.up && sw_up_join(&sw))
		return 1;
	if (sw.verbose)
		fprintf(stderr, "xina-swagg: job %u, %u workers, %u slots of %u elements on port %u (gso %s, gro %s)\n",
			sw.job, sw.workers, sw.slots, sw.elems, sw.port,
			sw.gso ? "on" : "off", sw.gro ? "on" : "off");
	err = sw_loop(&sw);
	sw_print(&sw, json, false);
	fflush(stdout);
	close(sw.fd);
	return err ? 1 : 0;
}
