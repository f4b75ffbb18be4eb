// SPDX-License-Identifier: GPL-2.0
/*
 * xina-libtest: negative tests of libxina's API and of an aggregator's
 * packet validation, driven by selftests/swagg_e2e.sh.
 *
 *   xina-libtest api
 *	option and input validation, the float32 error bound and headroom
 *	bits against values worked out by hand; needs no switch (nothing is
 *	sent).
 *   xina-libtest packets SWITCH_IP:PORT MEMBER_IP OTHER_IP
 *	sends one malformed or foreign contribution of each kind to an
 *	aggregator configured with job 7, key 0x5eed, 1 worker (rank 0 at
 *	MEMBER_IP), 64 slots of 1024 elements; the caller then checks that
 *	each landed in its counter and none was added.
 *
 * Prints one "ok"/"not ok" line per check; exits 1 if any failed.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "libxina.h"

static int failed;

#define CHECK(cond, fmt, ...) do {					\
		if (cond) {						\
			printf("ok " fmt "\n", ##__VA_ARGS__);		\
		} else {						\
			printf("not ok " fmt " (%s:%d)\n", ##__VA_ARGS__,	\
			       __FILE__, __LINE__);			\
			failed = 1;					\
		}							\
	} while (0)

static void base_opts(struct xina_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->sz = sizeof(*o);
	o->switch_addr = "127.0.0.1";
	o->switch_port = 9;	/* never reached: every case fails early */
	o->job = 7;
	o->workers = 2;
	o->slots = 4;
	o->elems = 8;
}

static int try_open(const struct xina_opts *o)
{
	struct xina *x = NULL;
	int err;

	err = xina_open(o, &x);
	xina_close(x);
	return err;
}

static void test_opts(void)
{
	struct {
		struct xina_opts o;
		uint64_t tail;
	} big;
	struct xina_opts o;

	base_opts(&o);
	CHECK(try_open(&o) == 0, "valid options open");
	o.sz = 4;
	CHECK(try_open(&o) == -EINVAL, "sz smaller than the sz field is refused");
	base_opts(&o);
	o.sz = offsetof(struct xina_opts, timeout_ms);
	o.timeout_ms = 12345;	/* past sz: must be ignored */
	CHECK(try_open(&o) == 0, "older, shorter opts struct accepted");
	base_opts(&big.o);
	big.o.sz = sizeof(big);
	big.tail = 0;
	CHECK(try_open(&big.o) == 0, "newer opts struct with zero tail accepted");
	big.tail = 1;
	CHECK(try_open(&big.o) == -EOPNOTSUPP, "newer opts struct with unknown field set refused");
	CHECK(xina_open(NULL, &(struct xina *){ NULL }) == -EINVAL, "NULL opts refused");

	base_opts(&o);
	o.switch_addr = "10.0.0.300";
	CHECK(try_open(&o) == -EINVAL, "bad switch address refused");
	base_opts(&o);
	o.bind_addr = "localhost";
	CHECK(try_open(&o) == -EINVAL, "bind address that is no dotted quad refused");
	base_opts(&o);
	o.rank = 2;
	CHECK(try_open(&o) == -EINVAL, "rank == workers refused");
	base_opts(&o);
	o.workers = XINA_MAX_WORKERS + 1;
	CHECK(try_open(&o) == -EINVAL, "workers above XINA_MAX_WORKERS refused");
	base_opts(&o);
	o.elems = XINA_MAX_ELEMS + 1;
	CHECK(try_open(&o) == -EINVAL, "elems above XINA_MAX_ELEMS refused");
	base_opts(&o);
	o.slots = 0;
	CHECK(try_open(&o) == -EINVAL, "zero slots refused");
	base_opts(&o);
	o.job = 0;
	CHECK(try_open(&o) == -EINVAL, "job 0 refused");
	base_opts(&o);
	o.flags = 0x80;
	CHECK(try_open(&o) == -EINVAL, "unknown option flag refused");
}

/* Non-finite input is refused before a single packet leaves. */
static void test_nonfinite(void)
{
	struct xina_worker_stats st;
	float buf[20] = { 1.0f, 2.0f };
	struct xina *x = NULL;
	struct xina_opts o;
	int err;

	base_opts(&o);
	if (xina_open(&o, &x)) {
		CHECK(0, "open for the non-finite tests");
		return;
	}
	buf[13] = NAN;
	err = xina_allreduce_f32(x, buf, 20);
	CHECK(err == -EINVAL, "NaN input refused (%d)", err);
	CHECK(strstr(xina_last_error(x), "element 13 is NaN") != NULL,
	      "error names the element: \"%s\"", xina_last_error(x));
	buf[13] = -INFINITY;
	err = xina_allreduce_f32(x, buf, 20);
	CHECK(err == -EINVAL && strstr(xina_last_error(x), "element 13 is infinite"),
	      "infinity refused: \"%s\"", xina_last_error(x));
	err = xina_allreduce_i32(x, (int32_t *)buf, 20, 5);
	CHECK(err == -EINVAL, "unknown op refused");
	xina_get_stats(x, &st);
	CHECK(st.sent == 0 && st.tx_syscalls == 0, "nothing sent (sent %llu)",
	      (unsigned long long)st.sent);
	xina_close(x);
}

/* ceil(log2(workers)) by hand, for the worker counts of test_bound(). */
static const struct {
	unsigned int	workers;
	unsigned int	l;
	double		quant;	/* workers * 2^(L - 32): W u / 2 at E = 0 */
} bound_w[] = {
	{ 1, 0, 0x1p-32 },
	{ 2, 1, 0x1p-30 },
	{ 3, 2, 0x3p-30 },
	{ 4, 2, 0x1p-28 },
	{ 8, 3, 0x1p-26 },
	{ 200, 8, 0x19p-21 },	/* 200 * 2^-24 */
	{ 256, 8, 0x1p-16 },
};

/* Results r in blocks of agreed exponent E, and 2^-23 |r| by hand. */
static const struct {
	const char	*what;
	float		r;
	int		exp;
	double		rel;
} bound_r[] = {
	{ "zero result, E = 0", 0.0f, 0, 0.0 },
	{ "around 1", 1.0f, 1, 0x1p-23 },
	{ "negative, around 1", -0x1.8p0f, 1, 0x1.8p-23 },
	{ "tiny normal", 0x1p-120f, -119, 0x1p-143 },
	{ "smallest subnormal", 0x1p-149f, -148, 0x1p-172 },
	{ "subnormal", 0x1.8p-140f, -139, 0x1.8p-163 },
	{ "FLT_MAX / 2^8", 0x1.fffffep119f, 128, 0x1.fffffep96 },
	{ "-2^100", -0x1p100f, 101, 0x1p77 },
};

/*
 * xina_f32_bound() against the bound of libxina.h written out by hand:
 * W 2^(E - 32 + L) + 2^-23 |r| + 2^-149.  Each term is exact here (a
 * literal or a power-of-two scaling of one); the sum is compared with a
 * relative tolerance of 2^-50, so the order of the library's additions
 * does not matter, while a wrong term (even off by a factor of two in the
 * smallest one that matters) fails.
 */
static void test_bound(void)
{
	double got, want;
	size_t w, k;

	for (w = 0; w < sizeof(bound_w) / sizeof(bound_w[0]); w++) {
		CHECK(xina_headroom_bits(bound_w[w].workers) == bound_w[w].l,
		      "headroom bits of %u workers: %u (want %u)",
		      bound_w[w].workers,
		      xina_headroom_bits(bound_w[w].workers), bound_w[w].l);
		got = xina_f32_bound(0.0f, XINA_EXP_ZERO, bound_w[w].workers);
		CHECK(got == 0.0, "%u workers, all-zero block: bound %a (want 0)",
		      bound_w[w].workers, got);
		for (k = 0; k < sizeof(bound_r) / sizeof(bound_r[0]); k++) {
			want = ldexp(bound_w[w].quant, bound_r[k].exp) +
			       bound_r[k].rel + 0x1p-149;
			got = xina_f32_bound(bound_r[k].r, bound_r[k].exp,
					     bound_w[w].workers);
			CHECK(fabs(got - want) <= want * 0x1p-50,
			      "%u workers, %s: bound %a (want %a)",
			      bound_w[w].workers, bound_r[k].what, got, want);
		}
	}
	CHECK(xina_headroom_bits(5) == 3 && xina_headroom_bits(9) == 4 &&
	      xina_headroom_bits(129) == 8,
	      "headroom bits between powers of two round up");
}

static int udp_from(const char *ip)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0 || inet_pton(AF_INET, ip, &sa.sin_addr) != 1 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "xina-libtest: cannot bind to '%s': %s\n", ip,
			strerror(errno));
		exit(2);
	}
	return fd;
}

struct pkt {
	struct xina_hdr	h;
	uint32_t	v[XINA_MAX_ELEMS + 1];
};

static void good(struct pkt *p)
{
	memset(p, 0, sizeof(*p));
	p->h.version = XINA_WIRE_VERSION;
	p->h.type = XINA_T_CONTRIB;
	p->h.dtype = XINA_DTYPE_INT32;
	p->h.op = XINA_OP_SUM;
	p->h.count = htons(4);
	p->h.job = htonl(7);
	p->h.key = htobe64(0x5eed);
	p->v[0] = htonl(0xdead);
}

static void send_pkt(int fd, const struct sockaddr_in *to, const struct pkt *p,
		     size_t len, const char *what)
{
	ssize_t n = sendto(fd, p, len, 0, (const struct sockaddr *)to, sizeof(*to));

	CHECK(n == (ssize_t)len, "sent %s", what);
}

#define PLEN(cnt)	(sizeof(struct xina_hdr) + (cnt) * 4)

static int test_packets(const char *sw, const char *member, const char *other)
{
	struct sockaddr_in to = { .sin_family = AF_INET };
	int fd = udp_from(member), fo = udp_from(other);
	char ip[INET_ADDRSTRLEN] = "";
	const char *colon = strchr(sw, ':');
	struct pkt p;

	if (!colon || (size_t)(colon - sw) >= sizeof(ip)) {
		fprintf(stderr, "xina-libtest: switch '%s' is not IP:PORT\n", sw);
		return 2;
	}
	memcpy(ip, sw, colon - sw);
	to.sin_port = htons(atoi(colon + 1));
	if (inet_pton(AF_INET, ip, &to.sin_addr) != 1) {
		fprintf(stderr, "xina-libtest: switch '%s' is not IP:PORT\n", sw);
		return 2;
	}

	/* malformed: 8; weight is checked before the job, as the rest */
	good(&p);
	send_pkt(fd, &to, &p, sizeof(p.h) - 1, "truncated header");
	good(&p); p.h.weight = htons(1);
	send_pkt(fd, &to, &p, PLEN(4), "reserved weight set");
	good(&p); p.h.weight = htons(1); p.h.job = htonl(8);
	send_pkt(fd, &to, &p, PLEN(4), "reserved weight set, unknown job");
	good(&p); p.h.version = 2;
	send_pkt(fd, &to, &p, PLEN(4), "wire version 2");
	good(&p); p.h.type = XINA_T_RESULT;
	send_pkt(fd, &to, &p, PLEN(4), "a result sent to the switch");
	good(&p); p.h.flags = 0x80;
	send_pkt(fd, &to, &p, PLEN(4), "unknown flag");
	good(&p);
	send_pkt(fd, &to, &p, PLEN(3), "payload shorter than count");
	good(&p); p.h.count = 0;
	send_pkt(fd, &to, &p, PLEN(0), "count 0");
	/* no_job: 1 */
	good(&p); p.h.job = htonl(8);
	send_pkt(fd, &to, &p, PLEN(4), "unknown job");
	/* drop_key: 1 */
	good(&p); p.h.key = htobe64(0x5eee);
	send_pkt(fd, &to, &p, PLEN(4), "wrong key");
	/* drop_member: 2 */
	good(&p); p.h.rank = htons(1);
	send_pkt(fd, &to, &p, PLEN(4), "rank out of range");
	good(&p);
	send_pkt(fo, &to, &p, PLEN(4), "rank 0 from a foreign address");
	/* drop_range: 2 */
	good(&p); p.h.slot = htonl(64);
	send_pkt(fd, &to, &p, PLEN(4), "slot out of range");
	good(&p); p.h.count = htons(1025);
	send_pkt(fd, &to, &p, PLEN(1025), "count above elems");
	/* drop_op: 2 */
	good(&p); p.h.dtype = 9;
	send_pkt(fd, &to, &p, PLEN(4), "unknown dtype");
	good(&p); p.h.op = 7;
	send_pkt(fd, &to, &p, PLEN(4), "unknown op");
	close(fd);
	close(fo);
	return failed;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "api")) {
		test_opts();
		test_nonfinite();
		test_bound();
		return failed;
	}
	if (argc == 5 && !strcmp(argv[1], "packets"))
		return test_packets(argv[2], argv[3], argv[4]);
	fprintf(stderr, "usage: xina-libtest api | packets SWITCH_IP:PORT MEMBER_IP OTHER_IP\n");
	return 2;
}
