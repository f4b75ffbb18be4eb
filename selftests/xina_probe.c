// SPDX-License-Identifier: GPL-2.0
/*
 * xina_probe: numbered UDP datagrams through an impaired link, to show
 * what the impairment did to them.  netem counts the packets it drops, but
 * not those it duplicates or reorders; this receiver counts all three.
 *
 *   xina_probe --recv IP:PORT --id ID [--wait-ms W] [--idle-ms I]
 *   xina_probe --send IP:PORT --id ID --count K [--burst B] [--gap-us G]
 *
 * The sender sends datagrams 0..K-1 (the count travels in each of them) in
 * bursts of B back to back (one sendmmsg), G microseconds apart, so that
 * a delayed datagram is overtaken by the rest of its burst while no queue
 * on the way (veth ring, socket buffer) overflows and adds losses of its
 * own.  The receiver takes datagrams of probe ID until none came for I ms
 * (W ms for the first), and prints one JSON line:
 *
 *   {"count":K,"received":R,"unique":U,"lost":K-U,"duplicated":R-U,
 *    "reordered":X,"foreign":F}
 *
 * reordered counts first copies that arrived after a higher-numbered
 * datagram; foreign counts datagrams that are not of this probe.  Exit
 * status 0, or 1 when nothing of the probe arrived or on a usage error.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PROBE_MAGIC	0x78707262U	/* "xprb" */
#define PROBE_MAX	(1U << 24)
#define PROBE_BURST_MAX	256
#define PROBE_LEN	64		/* bytes on the wire, header included */

struct probe_hdr {
	uint32_t	magic;
	uint32_t	id;
	uint32_t	seq;
	uint32_t	count;
};

struct probe_cfg {
	struct sockaddr_in addr;
	bool		recv;
	uint32_t	id;
	uint32_t	count;
	uint32_t	burst;
	uint32_t	gap_us;
	uint32_t	wait_ms;
	uint32_t	idle_ms;
};

struct probe_stats {
	uint64_t	received;
	uint64_t	unique;
	uint64_t	reordered;
	uint64_t	foreign;
	uint32_t	count;
	uint32_t	max_seq;
};

static void probe_usage(FILE *f)
{
	fprintf(f,
		"Usage: xina_probe --recv IP:PORT --id ID [--wait-ms W] [--idle-ms I]\n"
		"       xina_probe --send IP:PORT --id ID --count K [--burst B] [--gap-us G]\n");
}

static int probe_u32(const char *opt, const char *s, uint32_t min,
		     uint32_t max, uint32_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || v < min || v > max) {
		fprintf(stderr, "xina_probe: %s '%s' is not a number in %u..%u\n",
			opt, s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

static int probe_addr(const char *opt, const char *s, struct sockaddr_in *sa)
{
	char ip[INET_ADDRSTRLEN];
	const char *colon = strchr(s, ':');
	uint32_t port;

	if (!colon || colon - s >= (long)sizeof(ip))
		goto bad;
	memcpy(ip, s, colon - s);
	ip[colon - s] = '\0';
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	if (inet_pton(AF_INET, ip, &sa->sin_addr) != 1)
		goto bad;
	if (probe_u32(opt, colon + 1, 1, 65535, &port))
		return -1;
	sa->sin_port = htons(port);
	return 0;
bad:
	fprintf(stderr, "xina_probe: %s '%s' is not IPv4:PORT\n", opt, s);
	return -1;
}

static int probe_parse(struct probe_cfg *c, int argc, char **argv)
{
	enum { OPT_RECV = 1, OPT_SEND, OPT_ID, OPT_COUNT, OPT_BURST, OPT_GAP,
	       OPT_WAIT, OPT_IDLE, OPT_HELP };
	static const struct option opts[] = {
		{ "recv", required_argument, NULL, OPT_RECV },
		{ "send", required_argument, NULL, OPT_SEND },
		{ "id", required_argument, NULL, OPT_ID },
		{ "count", required_argument, NULL, OPT_COUNT },
		{ "burst", required_argument, NULL, OPT_BURST },
		{ "gap-us", required_argument, NULL, OPT_GAP },
		{ "wait-ms", required_argument, NULL, OPT_WAIT },
		{ "idle-ms", required_argument, NULL, OPT_IDLE },
		{ "help", no_argument, NULL, OPT_HELP },
		{}
	};
	bool have_addr = false, have_id = false;
	int opt, err = 0;

	c->burst = 16;
	c->gap_us = 1000;
	c->wait_ms = 10000;
	c->idle_ms = 1000;
	while (!err && (opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case OPT_RECV:
		case OPT_SEND:
			c->recv = opt == OPT_RECV;
			err = probe_addr(c->recv ? "--recv" : "--send", optarg,
					 &c->addr);
			have_addr = true;
			break;
		case OPT_ID:
			err = probe_u32("--id", optarg, 0, UINT32_MAX, &c->id);
			have_id = true;
			break;
		case OPT_COUNT:
			err = probe_u32("--count", optarg, 1, PROBE_MAX, &c->count);
			break;
		case OPT_BURST:
			err = probe_u32("--burst", optarg, 1, PROBE_BURST_MAX,
					&c->burst);
			break;
		case OPT_GAP:
			err = probe_u32("--gap-us", optarg, 0, 1000000, &c->gap_us);
			break;
		case OPT_WAIT:
			err = probe_u32("--wait-ms", optarg, 1, 600000, &c->wait_ms);
			break;
		case OPT_IDLE:
			err = probe_u32("--idle-ms", optarg, 1, 600000, &c->idle_ms);
			break;
		case OPT_HELP:
			probe_usage(stdout);
			exit(0);
		default:
			err = -1;
		}
	}
	if (err)
		goto usage;
	if (optind < argc) {
		fprintf(stderr, "xina_probe: unexpected argument '%s'\n", argv[optind]);
		goto usage;
	}
	if (!have_addr || !have_id || (!c->recv && !c->count)) {
		fprintf(stderr, "xina_probe: --recv or --send, --id, and for --send --count are required\n");
		goto usage;
	}
	return 0;
usage:
	probe_usage(stderr);
	return -1;
}

static int probe_send(const struct probe_cfg *c)
{
	static uint8_t bufs[PROBE_BURST_MAX][PROBE_LEN];
	struct mmsghdr msgs[PROBE_BURST_MAX] = {};
	struct iovec iov[PROBE_BURST_MAX];
	struct timespec gap = {
		.tv_sec = c->gap_us / 1000000,
		.tv_nsec = (c->gap_us % 1000000) * 1000L,
	};
	uint32_t seq = 0, n, i;
	int fd, ret, sent;

	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&c->addr, sizeof(c->addr))) {
		perror("xina_probe: socket");
		return 1;
	}
	for (i = 0; i < PROBE_BURST_MAX; i++) {
		iov[i].iov_base = bufs[i];
		iov[i].iov_len = PROBE_LEN;
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	while (seq < c->count) {
		n = c->count - seq < c->burst ? c->count - seq : c->burst;
		for (i = 0; i < n; i++) {
			struct probe_hdr *h = (struct probe_hdr *)bufs[i];

			h->magic = htonl(PROBE_MAGIC);
			h->id = htonl(c->id);
			h->seq = htonl(seq + i);
			h->count = htonl(c->count);
		}
		/* A qdisc that drops a datagram does not fail the send. */
		for (sent = 0; sent < (int)n; sent += ret) {
			ret = sendmmsg(fd, msgs + sent, n - sent, 0);
			if (ret < 0 && errno != EINTR && errno != ENOBUFS) {
				perror("xina_probe: sendmmsg");
				close(fd);
				return 1;
			}
			if (ret < 0)
				ret = 0;
		}
		seq += n;
		if (c->gap_us && seq < c->count)
			nanosleep(&gap, NULL);
	}
	close(fd);
	printf("{\"sent\":%u}\n", c->count);
	return 0;
}

static void probe_take(struct probe_stats *st, uint8_t **seen,
		       const uint8_t *p, ssize_t len, uint32_t id)
{
	const struct probe_hdr *h = (const struct probe_hdr *)p;
	uint32_t seq, count;

	if (len != PROBE_LEN || ntohl(h->magic) != PROBE_MAGIC ||
	    ntohl(h->id) != id) {
		st->foreign++;
		return;
	}
	seq = ntohl(h->seq);
	count = ntohl(h->count);
	if (!*seen) {
		if (!count || count > PROBE_MAX) {
			st->foreign++;
			return;
		}
		*seen = calloc(count, 1);
		if (!*seen) {
			fprintf(stderr, "xina_probe: out of memory for %u datagrams\n",
				count);
			exit(1);
		}
		st->count = count;
	}
	if (count != st->count || seq >= st->count) {
		st->foreign++;
		return;
	}
	st->received++;
	if ((*seen)[seq])
		return;
	(*seen)[seq] = 1;
	if (st->unique && seq < st->max_seq)
		st->reordered++;
	if (!st->unique || seq > st->max_seq)
		st->max_seq = seq;
	st->unique++;
}

static int probe_recv(const struct probe_cfg *c)
{
	struct probe_stats st = {};
	uint8_t *seen = NULL;
	uint8_t buf[2048];
	struct pollfd pfd;
	int fd, rcvbuf = 8 << 20;
	ssize_t len;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		perror("xina_probe: socket");
		return 1;
	}
	/* Room for a whole probe: a full socket would drop datagrams too. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (bind(fd, (struct sockaddr *)&c->addr, sizeof(c->addr))) {
		perror("xina_probe: bind");
		close(fd);
		return 1;
	}
	pfd.fd = fd;
	pfd.events = POLLIN;
	while (poll(&pfd, 1, st.received ? c->idle_ms : c->wait_ms) > 0) {
		while ((len = recv(fd, buf, sizeof(buf), 0)) >= 0)
			probe_take(&st, &seen, buf, len, c->id);
		if (errno != EAGAIN && errno != EINTR) {
			perror("xina_probe: recv");
			break;
		}
	}
	close(fd);
	free(seen);
	printf("{\"count\":%u,\"received\":%llu,\"unique\":%llu,\"lost\":%llu,"
	       "\"duplicated\":%llu,\"reordered\":%llu,\"foreign\":%llu}\n",
	       st.count, (unsigned long long)st.received,
	       (unsigned long long)st.unique,
	       (unsigned long long)(st.count - st.unique),
	       (unsigned long long)(st.received - st.unique),
	       (unsigned long long)st.reordered,
	       (unsigned long long)st.foreign);
	if (!st.received) {
		fprintf(stderr, "xina_probe: nothing of probe %u arrived in %u ms\n",
			c->id, c->wait_ms);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct probe_cfg c = {};

	if (probe_parse(&c, argc, argv))
		return 1;
	return c.recv ? probe_recv(&c) : probe_send(&c);
}
