// SPDX-License-Identifier: GPL-2.0
/*
 * xina-libtest: tests of libxina's API and failure semantics, and of an
 * aggregator's packet validation, driven by selftests/swagg_e2e.sh and
 * selftests/xina_lib.sh.
 *
 *   xina-libtest api
 *	option and input validation, the float32 error bound and headroom
 *	bits against values worked out by hand; a fake switch of its own on
 *	127.0.0.1 answers the joins of the handles it opens (run it in a
 *	network namespace of its own).
 *   xina-libtest fakesw IP
 *	libxina against a fake switch of its own on IP (a forked process):
 *	the join handshake and each refusal's error and message, retransmission
 *	of a lost join, forged replies ignored (see test_joins()); foreign,
 *	duplicate, misplaced and malformed results are ignored and counted
 *	exactly, and never placed (see fs_answer()); then float32 blocks of
 *	subnormals only against a mirror switch (test_subnormal()); then
 *	calls in flight (test_async_reverse(), test_async_errors()): several
 *	at once whose blocks complete out of order, the completion fd in a
 *	poll() loop, waits with a timeout, errors delivered per request, the
 *	limit of requests in flight, xina_close() with requests in flight;
 *	then every (type, op) pair of xina_allreduce() with 3 workers against
 *	a switch that aggregates with bpf/xina_lanes.h, checked against a
 *	per-element reference computed here (overflow, AVG rounding, -0,
 *	infinities and NaNs in MIN and MAX), and the typed calls' refusals
 *	(test_types()).
 *   xina-libtest call SWITCH_IP:PORT BIND_IP[:PORT] RANK WORKERS ELEMS
 *		       BLOCKS ok|broken
 *	one worker of a real job (see test_call()); "broken" checks that a
 *	call that failed mid-way leaves a handle that refuses further calls.
 *   xina-libtest packets SWITCH_IP:PORT MEMBER_IP OTHER_IP
 *	joins as rank 0, then sends one malformed or foreign contribution of
 *	each kind, in the epoch it was given, to an aggregator configured
 *	with job 7, 1 worker (rank 0 at MEMBER_IP), 64 slots of 1024
 *	elements; the caller then checks that each landed in its counter and
 *	none was added.
 *
 * The job's secret is in the key file $XINA_KEY_FILE ("api" and "fakesw"
 * make one of their own when it is not set).
 *
 * Prints one "ok"/"not ok" line per check; exits 1 if any failed.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "libxina.h"
#include "xina_auth.h"
#include "xina_keyfile.h"
#include "xina_lanes.h"

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

/* The job's key file: $XINA_KEY_FILE, or one made for this run. */
static char own_key_dir[] = "/tmp/xina-libtest.XXXXXX";
static char own_key[64];

static void own_key_rm(void)
{
	unlink(own_key);
	rmdir(own_key_dir);
}

static const char *key_file(void)
{
	uint8_t secret[XINA_SECRET_BYTES];
	const char *env = getenv("XINA_KEY_FILE");
	char err[512];

	if (env)
		return env;
	if (own_key[0])
		return own_key;
	if (!mkdtemp(own_key_dir)) {
		perror("xina-libtest: mkdtemp");
		exit(2);
	}
	snprintf(own_key, sizeof(own_key), "%s/job.key", own_key_dir);
	if (xina_keyfile_create(own_key, secret, err, sizeof(err))) {
		fprintf(stderr, "xina-libtest: %s\n", err);
		exit(2);
	}
	atexit(own_key_rm);
	return own_key;
}

/* Keys of job 7 from the key file: rank @rank's, the results', NH. */
static __u64 k_rank[2], k_res[2];
static uint32_t k_nh[XINA_MAX_ELEMS];

static void keys_load(uint16_t rank)
{
	uint8_t secret[XINA_SECRET_BYTES];
	char err[512];

	if (xina_keyfile_read(key_file(), secret, err, sizeof(err))) {
		fprintf(stderr, "xina-libtest: %s\n", err);
		exit(2);
	}
	xina_derive_key(secret, XINA_LABEL_MEMBER, 7, rank, k_rank);
	xina_derive_key(secret, XINA_LABEL_RESULT, 7, 0, k_res);
	xina_derive_nh(secret, 7, k_nh, XINA_MAX_ELEMS);
}

/* The tag of @h followed by @cnt elements, keyed with @k. */
static uint64_t tag_of(const __u64 *k, const struct xina_hdr *h,
		       size_t cnt)
{
	static uint32_t m[XINA_MAX_ELEMS];
	const uint32_t *v = (const uint32_t *)(h + 1);
	size_t i;

	for (i = 0; i < cnt && i < XINA_MAX_ELEMS; i++)
		m[i] = ntohl(v[i]);
	return htobe64(xina_tag_hdr(k, h, xina_nh(k_nh, m, i)));
}

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static unsigned int ms_since(uint64_t t0)
{
	return (now_ns(CLOCK_MONOTONIC) - t0) / 1000000;
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

#define PLEN(cnt)	(sizeof(struct xina_hdr) + (cnt) * 4)

static void fs_send(int fd, const struct sockaddr_in *to, const struct pkt *p,
		    size_t len)
{
	if (sendto(fd, p, len, 0, (const struct sockaddr *)to, sizeof(*to)) !=
	    (ssize_t)len)
		perror("xina-libtest: fake switch: sendto");
}

/*
 * The message of the last xina_open() that failed: it returns no handle,
 * and says why through the log callback.
 */
static char open_msg[1024];

static void open_log(void *ctx, enum xina_log_level lvl, const char *msg)
{
	snprintf(open_msg, sizeof(open_msg), "%s", msg);
}

/* ---- the join handshake against a fake switch ---------------------------- */

#define JS_EPOCH	0x5eed0001u	/* what every fake switch grants */
#define JS_JOB_SLOTS	2		/* the job's, in a MISMATCH */
#define JS_JOB_ELEMS	8

enum js_mode {
	JS_OK,		/* every join answered OK */
	JS_LOSSY,	/* the first join lost; its resend answered after
			 * a volley of replies libxina must not take */
	JS_BAD_KEY,	/* refused: bad key (the join's tag echoed) */
	JS_MISMATCH,	/* refused: mismatch, the job's shape given */
	JS_BUSY2,	/* busy twice, then OK */
	JS_BUSY,	/* busy, every time */
	JS_SILENT,	/* no answer at all */
};

struct js_report {
	unsigned int	joins;		/* joins received */
	unsigned int	bad;		/* joins with a wrong field or tag */
	unsigned int	resends;	/* joins repeating the previous nonce */
	unsigned int	newer;		/* joins with a nonce above the previous */
	unsigned int	older;		/* joins with a nonce below it */
	unsigned int	clock_off;	/* nonces 10 s or more off CLOCK_REALTIME */
	unsigned int	other;		/* datagrams that were no join */
};

/* Is @c (@n bytes) a join of rank 0 of job 7 as the header says? */
static bool js_join_ok(const struct pkt *c, ssize_t n, uint32_t slots,
		       uint32_t elems)
{
	const struct xina_hdr *h = &c->h;

	return n == sizeof(*h) && h->version == XINA_WIRE_VERSION &&
	       h->type == XINA_T_JOIN && h->dtype == XINA_DTYPE_INT32 &&
	       !h->op && !h->flags && !h->exp && !h->count && !h->weight &&
	       !h->round && !h->epoch && ntohl(h->job) == 7 && !h->rank &&
	       ntohl(h->slot) == slots && ntohl(h->aux) == elems &&
	       be64toh(h->tag) == xina_tag_hdr(k_rank, h, 0);
}

/*
 * The reply to join @j: @status, @epoch; the job's @slots and @elems;
 * tagged with @k, or, without, the join's tag echoed.
 */
static void js_reply(int fd, const struct sockaddr_in *to,
		     const struct pkt *j, uint32_t status, uint32_t epoch,
		     uint32_t slots, uint32_t elems, const __u64 *k)
{
	struct pkt r;

	r.h = j->h;
	r.h.type = XINA_T_JOIN_REPLY;
	r.h.round = htonl(status);
	r.h.epoch = htonl(epoch);
	r.h.slot = htonl(slots);
	r.h.aux = htonl(elems);
	if (k)
		r.h.tag = htobe64(xina_tag_hdr(k, &r.h, 0));
	fs_send(fd, to, &r, sizeof(r.h));
}

/* Answer join @j OK, as a switch of job @slots x @elems would. */
static void js_ok(int fd, const struct sockaddr_in *to, const struct pkt *j,
		  uint32_t slots, uint32_t elems)
{
	js_reply(fd, to, j, XINA_JOIN_OK, JS_EPOCH, slots, elems, k_rank);
}

/*
 * Before the right answer to the resend, replies that must not end the
 * join: one for another nonce and a result are ignored; a BAD_KEY that
 * does not echo the join's tag, a refusal tagged with the results' key and
 * an OK with the join's tag (not one computed over the reply) count as
 * bad_tag.
 */
#define JS_VOLLEY_IGNORED	2
#define JS_VOLLEY_BAD_TAG	3

static void js_volley(int fd, const struct sockaddr_in *to, const struct pkt *j,
		      uint32_t slots, uint32_t elems)
{
	struct pkt b = *j;

	b.h.offset = htobe64(be64toh(j->h.offset) + 1);
	js_ok(fd, to, &b, slots, elems);
	b = *j;
	b.h.type = XINA_T_RESULT;
	b.h.epoch = htonl(JS_EPOCH);
	fs_send(fd, to, &b, sizeof(b.h));
	b = *j;
	b.h.tag ^= htobe64(1);
	js_reply(fd, to, &b, XINA_JOIN_BAD_KEY, 0, slots, elems, NULL);
	js_reply(fd, to, j, XINA_JOIN_MISMATCH, 0, 1, 1, k_res);
	js_reply(fd, to, j, XINA_JOIN_OK, JS_EPOCH, slots, elems, NULL);
}

/* Answer joins (of @slots x @elems) as @mode says until @ctl closes. */
static int js_run(int fd, int ctl, int rep, enum js_mode mode,
		  uint32_t slots, uint32_t elems)
{
	struct pollfd pfd[2] = {
		{ .fd = fd, .events = POLLIN }, { .fd = ctl, .events = POLLIN },
	};
	struct js_report r = {};
	struct sockaddr_in from;
	uint64_t prev = 0, nonce;
	static struct pkt c;
	socklen_t fl;
	ssize_t n;

	while (poll(pfd, 2, 20000) > 0 && !pfd[1].revents) {
		fl = sizeof(from);
		n = recvfrom(fd, &c, sizeof(c), 0, (struct sockaddr *)&from, &fl);
		if (n < (ssize_t)sizeof(c.h) || c.h.type != XINA_T_JOIN) {
			r.other++;
			continue;
		}
		r.joins++;
		if (!js_join_ok(&c, n, slots, elems))
			r.bad++;
		nonce = be64toh(c.h.offset);
		if (r.joins > 1) {
			r.resends += nonce == prev;
			r.newer += nonce > prev;
			r.older += nonce < prev;
		}
		prev = nonce;
		if (llabs((long long)(nonce - now_ns(CLOCK_REALTIME))) >=
		    10000000000ll)
			r.clock_off++;
		switch (mode) {
		case JS_OK:
			js_ok(fd, &from, &c, slots, elems);
			break;
		case JS_LOSSY:
			if (r.joins == 1)
				break;
			if (r.joins == 2)
				js_volley(fd, &from, &c, slots, elems);
			js_ok(fd, &from, &c, slots, elems);
			break;
		case JS_BAD_KEY:
			js_reply(fd, &from, &c, XINA_JOIN_BAD_KEY, 0, slots,
				 elems, NULL);
			break;
		case JS_MISMATCH:
			js_reply(fd, &from, &c, XINA_JOIN_MISMATCH, 0,
				 JS_JOB_SLOTS, JS_JOB_ELEMS, k_rank);
			break;
		case JS_BUSY2:
			if (r.joins > 2) {
				js_ok(fd, &from, &c, slots, elems);
				break;
			}
			/* fall through */
		case JS_BUSY:
			js_reply(fd, &from, &c, XINA_JOIN_BUSY, 0, slots, elems,
				 k_rank);
			break;
		case JS_SILENT:
			break;
		}
	}
	return write(rep, &r, sizeof(r)) == sizeof(r) ? 0 : 1;
}

/* A fake join switch, forked, on a port of its own. */
struct js_proc {
	pid_t		pid;
	int		ctl;
	int		rep;
	uint16_t	port;
};

static void js_start(struct js_proc *js, const char *ip, enum js_mode mode,
		     uint32_t slots, uint32_t elems)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int fd, ctl[2], rep[2];

	keys_load(0);
	fd = udp_from(ip);
	if (getsockname(fd, (struct sockaddr *)&sa, &sl) || pipe(ctl) ||
	    pipe(rep)) {
		perror("xina-libtest: fake join switch");
		exit(2);
	}
	fflush(stdout);
	js->pid = fork();
	if (js->pid < 0) {
		perror("xina-libtest: fork");
		exit(2);
	}
	if (!js->pid) {
		close(ctl[1]);
		close(rep[0]);
		_exit(js_run(fd, ctl[0], rep[1], mode, slots, elems));
	}
	close(ctl[0]);
	close(rep[1]);
	close(fd);
	js->ctl = ctl[1];
	js->rep = rep[0];
	js->port = ntohs(sa.sin_port);
}

/* Stop it; what it saw into @r.  0: it ran and reported. */
static int js_stop(struct js_proc *js, struct js_report *r)
{
	int status, ok;

	close(js->ctl);
	ok = read(js->rep, r, sizeof(*r)) == sizeof(*r);
	close(js->rep);
	waitpid(js->pid, &status, 0);
	return ok && WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -1;
}

/* The fake switch every "api" handle joins (JS_OK). */
static struct js_proc api_js;

static void base_opts(struct xina_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->sz = sizeof(*o);
	o->key_file = key_file();
	o->switch_addr = "127.0.0.1";
	o->switch_port = api_js.port;
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
	big.o.log = open_log;
	big.o.log_level = XINA_LOG_WARN;
	open_msg[0] = '\0';
	CHECK(try_open(&big.o) == -EOPNOTSUPP, "newer opts struct with unknown field set refused");
	CHECK(strstr(open_msg, "sets byte") && strstr(open_msg, "past the"),
	      "the refusal reaches the caller's log, naming the byte: \"%s\"",
	      open_msg);
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
	base_opts(&o);
	o.key_file = NULL;
	CHECK(try_open(&o) == -EINVAL, "no key file refused");
	base_opts(&o);
	o.key_file = "/nonexistent/xina.key";
	CHECK(try_open(&o) == -ENOENT, "missing key file refused");
}

/* Non-finite input is refused before a single packet leaves. */
static void test_nonfinite(void)
{
	XINA_STATS(st0);
	XINA_STATS(st);
	float buf[20] = { 1.0f, 2.0f };
	struct xina *x = NULL;
	struct xina_opts o;
	int err;

	base_opts(&o);
	if (xina_open(&o, &x)) {
		CHECK(0, "open for the non-finite tests");
		return;
	}
	xina_get_stats(x, &st0);
	CHECK(st0.epoch == JS_EPOCH && st0.joins >= 1,
	      "the open joined epoch %#x (%llu joins)", st0.epoch,
	      (unsigned long long)st0.joins);
	buf[13] = NAN;
	err = xina_allreduce_f32(x, buf, 20);
	CHECK(err == -EINVAL, "NaN input refused (%d)", err);
	CHECK(strstr(xina_last_error(x), "element 13 is NaN") != NULL,
	      "error names the element: \"%s\"", xina_last_error(x));
	buf[13] = -INFINITY;
	err = xina_allreduce_f32(x, buf, 20);
	CHECK(err == -EINVAL && strstr(xina_last_error(x), "element 13 is infinite"),
	      "infinity refused: \"%s\"", xina_last_error(x));
	err = xina_allreduce_i32(x, (int32_t *)buf, 20, 9);
	CHECK(err == -EINVAL, "unknown op refused");
	/* libxina's own run bits (0x100 sparse, 0x200 map) are no op */
	err = xina_allreduce(x, buf, 20, XINA_TYPE_INT32, XINA_OP_SUM | 0x100);
	CHECK(err == -EINVAL && strstr(xina_last_error(x), "op 257 is none of"),
	      "op SUM | 0x100 refused, not a sparse call: %d, \"%s\"", err,
	      xina_last_error(x));
	err = xina_allreduce_sparse(x, buf, 20, XINA_TYPE_INT32,
				    XINA_OP_SUM | 0x200);
	CHECK(err == -EINVAL && strstr(xina_last_error(x), "op 513 is none of"),
	      "sparse op SUM | 0x200 refused, no map asked for: %d, \"%s\"",
	      err, xina_last_error(x));
	CHECK(!xina_sparse_block(x, XINA_TYPE_INT32, XINA_OP_SUM | 0x100),
	      "no sparse block for op SUM | 0x100");
	/* more elements than bytes exist: refused, nothing allocated or sent */
	err = xina_allreduce_i32(x, (int32_t *)buf, SIZE_MAX, XINA_OP_SUM);
	CHECK(err == -EINVAL && strstr(xina_last_error(x), "more bytes than a buffer can hold"),
	      "n = SIZE_MAX refused: %d, \"%s\"", err, xina_last_error(x));
	err = xina_allreduce_f32(x, buf, ((size_t)1 << 62) + 1);
	CHECK(err == -EINVAL && strstr(xina_last_error(x), "more bytes than a buffer can hold"),
	      "n = 2^62 + 1 floats refused: %d, \"%s\"", err,
	      xina_last_error(x));
	err = xina_allreduce_sparse_map(x, buf, 20, XINA_TYPE_INT32,
					XINA_OP_SUM, NULL);
	CHECK(err == -EINVAL && strstr(xina_last_error(x), "NULL map"),
	      "NULL map of a sparse call refused: %d, \"%s\"", err,
	      xina_last_error(x));
	CHECK(xina_sparse_block(x, XINA_TYPE_INT32, XINA_OP_SUM) == o.elems &&
	      xina_sparse_block(x, XINA_TYPE_INT16, XINA_OP_SUM) == 2u * o.elems &&
	      !xina_sparse_block(x, XINA_TYPE_FLOAT32, XINA_OP_XOR),
	      "sparse blocks: int32 %zu, int16 %zu, float32 xor %zu (elems %u)",
	      xina_sparse_block(x, XINA_TYPE_INT32, XINA_OP_SUM),
	      xina_sparse_block(x, XINA_TYPE_INT16, XINA_OP_SUM),
	      xina_sparse_block(x, XINA_TYPE_FLOAT32, XINA_OP_XOR), o.elems);
	xina_get_stats(x, &st);
	CHECK(st.sent == 0 && st.tx_syscalls == st0.tx_syscalls,
	      "nothing sent after the join (sent %llu, %llu sendmmsg calls since)",
	      (unsigned long long)st.sent,
	      (unsigned long long)(st.tx_syscalls - st0.tx_syscalls));
	xina_close(x);
}

/* ---- the join handshake, each answer ------------------------------------- */

/*
 * Open a handle of rank 0 of job 7 (4 slots of 16 elements) against a fake
 * switch answering as @mode says; its error, message and stats, the time
 * the open took, and what the fake switch saw.
 */
struct join_try {
	int			err;
	unsigned int		ms;
	char			msg[1024];
	struct xina_worker_stats st;
	struct js_report	r;
	int			js_err;
};

static void join_try(const char *ip, enum js_mode mode, uint32_t timeout_ms,
		     uint32_t rto_us, struct join_try *t)
{
	struct xina *x = NULL;
	struct js_proc js;
	uint64_t t0;
	XINA_OPTS(o, .job = 7, .key_file = key_file(), .rank = 0,
		  .workers = 2, .slots = 4, .elems = 16, .bind_addr = ip,
		  .switch_addr = ip, .timeout_ms = timeout_ms, .rto_us = rto_us,
		  .rto_max_us = rto_us, .log = open_log,
		  .log_level = XINA_LOG_WARN);

	memset(t, 0, sizeof(*t));
	t->st.sz = sizeof(t->st);
	js_start(&js, ip, mode, 4, 16);
	o.switch_port = js.port;
	open_msg[0] = '\0';
	t0 = now_ns(CLOCK_MONOTONIC);
	t->err = xina_open(&o, &x);
	t->ms = ms_since(t0);
	snprintf(t->msg, sizeof(t->msg), "%s", x ? xina_last_error(x) : open_msg);
	if (x)
		xina_get_stats(x, &t->st);
	xina_close(x);
	t->js_err = js_stop(&js, &t->r);
}

static void test_joins(const char *ip)
{
	struct join_try t;

	/* the first join lost: resent as it was, then forged replies */
	join_try(ip, JS_LOSSY, 5000, 100000, &t);
	CHECK(!t.err && t.st.epoch == JS_EPOCH,
	      "join: a lost join is resent and the open succeeds in epoch %#x (%d: %s)",
	      t.st.epoch, t.err, t.err ? t.msg : "");
	CHECK(!t.js_err && t.r.joins == 2 && t.r.resends == 1 && !t.r.bad &&
	      !t.r.other,
	      "join: the resend is the same join, nonce and tag (%u joins, %u resends, %u wrong, %u other)",
	      t.r.joins, t.r.resends, t.r.bad, t.r.other);
	CHECK(!t.r.clock_off, "join: the nonce is the worker's CLOCK_REALTIME in ns");
	CHECK(t.st.joins == 2 && t.st.timeouts == 1,
	      "join: stats count 2 joins, 1 timeout (%llu, %llu)",
	      (unsigned long long)t.st.joins, (unsigned long long)t.st.timeouts);
	CHECK(t.st.ignored == JS_VOLLEY_IGNORED &&
	      t.st.bad_tag == JS_VOLLEY_BAD_TAG && !t.st.malformed,
	      "join: replies for another nonce ignored (%llu), forged refusals and replies counted bad_tag (%llu), none taken",
	      (unsigned long long)t.st.ignored, (unsigned long long)t.st.bad_tag);

	join_try(ip, JS_BAD_KEY, 5000, 100000, &t);
	CHECK(t.err == -EKEYREJECTED && strstr(t.msg, "(bad key)") &&
	      strstr(t.msg, "job 7 rank 0") && strstr(t.msg, key_file()),
	      "bad key: -EKEYREJECTED (%d), the message names job, rank, key file: \"%s\"",
	      t.err, t.msg);
	CHECK(t.ms < 100 && t.r.joins == 1,
	      "bad key: at once, %u ms, %u join (the retransmission timeout is 100 ms)",
	      t.ms, t.r.joins);

	join_try(ip, JS_MISMATCH, 5000, 100000, &t);
	CHECK(t.err == -EMSGSIZE && strstr(t.msg, "(mismatch)") &&
	      strstr(t.msg, "the job has 2 slots of 8 elements") &&
	      strstr(t.msg, "asked for 4 slots of 16 elements"),
	      "mismatch: -EMSGSIZE (%d), the message gives both sides' slots and elements: \"%s\"",
	      t.err, t.msg);
	CHECK(t.ms < 100 && t.r.joins == 1,
	      "mismatch: at once, %u ms, %u join", t.ms, t.r.joins);

	join_try(ip, JS_BUSY2, 5000, 100000, &t);
	CHECK(!t.err && t.st.epoch == JS_EPOCH && t.st.join_busy == 2,
	      "busy twice, then OK: the open succeeds after %llu busy replies (%d: %s)",
	      (unsigned long long)t.st.join_busy, t.err, t.err ? t.msg : "");
	CHECK(t.r.joins == 3 && t.r.newer == 2 && !t.r.resends && !t.r.bad,
	      "busy: each new attempt has a new, higher nonce (%u joins, %u newer)",
	      t.r.joins, t.r.newer);
	CHECK(t.ms >= 2 * XINA_JOIN_BUSY_MS / 5,
	      "busy: waited between attempts (%u ms for 2 busy replies, want >= %u)",
	      t.ms, 2 * XINA_JOIN_BUSY_MS / 5);

	join_try(ip, JS_BUSY, 700, 100000, &t);
	CHECK(t.err == -EBUSY && strstr(t.msg, "(busy)") &&
	      strstr(t.msg, "job 7 rank 0"),
	      "busy until the timeout: -EBUSY (%d): \"%s\"", t.err, t.msg);
	CHECK(t.ms >= 500 && t.ms < 1700 && t.r.joins >= 3,
	      "busy: asked %u times over %u ms (timeout 700 ms)", t.r.joins, t.ms);

	join_try(ip, JS_SILENT, 400, 0, &t);
	CHECK(t.err == -ETIMEDOUT && strstr(t.msg, "no answer to the join") &&
	      strstr(t.msg, "no job 7") &&
	      strstr(t.msg, "rank 0 not configured for this host's address") &&
	      strstr(t.msg, "unreachable") && strstr(t.msg, "predates") &&
	      strstr(t.msg, "no_job") && strstr(t.msg, "drop_member"),
	      "no answer: -ETIMEDOUT (%d), the message lists the causes and where to look: \"%s\"",
	      t.err, t.msg);
	/* sent at 0, 50, 150, 350 ms: the join's RTO is at least 50 ms, doubled */
	CHECK(t.ms >= 400 && t.ms < 1400 && t.r.joins >= 3 && t.r.joins <= 4 &&
	      t.r.resends == t.r.joins - 1,
	      "no answer: gave up after %u ms (timeout 400), %u joins (want 4; 3 if late), all the same",
	      t.ms, t.r.joins);
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

/* The epoch test_packets() joined: every good contribution's. */
static uint32_t pk_epoch;

static void good(struct pkt *p)
{
	memset(p, 0, sizeof(*p));
	p->h.version = XINA_WIRE_VERSION;
	p->h.type = XINA_T_CONTRIB;
	p->h.dtype = XINA_DTYPE_INT32;
	p->h.op = XINA_OP_SUM;
	p->h.count = htons(4);
	p->h.job = htonl(7);
	p->h.epoch = htonl(pk_epoch);
	p->v[0] = htonl(0xdead);
}

/*
 * Join job 7 as rank 0 from @fd (@slots x @elems) as libxina does; the
 * epoch granted, or 0 (with a "not ok" line) when the switch does not
 * grant one within 2 s.
 */
static uint32_t join_from(int fd, const struct sockaddr_in *to,
			  uint32_t slots, uint32_t elems)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct pkt j = {}, r;
	uint64_t t0;
	ssize_t n;

	j.h.version = XINA_WIRE_VERSION;
	j.h.type = XINA_T_JOIN;
	j.h.dtype = XINA_DTYPE_INT32;
	j.h.job = htonl(7);
	j.h.slot = htonl(slots);
	j.h.aux = htonl(elems);
	j.h.offset = htobe64(now_ns(CLOCK_REALTIME));
	j.h.tag = htobe64(xina_tag_hdr(k_rank, &j.h, 0));
	fs_send(fd, to, &j, sizeof(j.h));
	t0 = now_ns(CLOCK_MONOTONIC);
	while (ms_since(t0) < 2000 && poll(&pfd, 1, 100) >= 0) {
		if (!(pfd.revents & POLLIN))
			continue;
		n = recv(fd, &r, sizeof(r), 0);
		if (n != sizeof(r.h) || r.h.type != XINA_T_JOIN_REPLY ||
		    r.h.offset != j.h.offset)
			continue;
		CHECK(!r.h.round && r.h.epoch &&
		      be64toh(r.h.tag) == xina_tag_hdr(k_rank, &r.h, 0),
		      "joined epoch %u (status %u)", ntohl(r.h.epoch),
		      ntohl(r.h.round));
		return ntohl(r.h.round) ? 0 : ntohl(r.h.epoch);
	}
	CHECK(0, "no reply to the join within 2 s");
	return 0;
}

/*
 * Send @p as rank 0 would, tagged over what its header says it holds (the
 * datagram of @len bytes may hold less); @forge: with a tag off by a bit.
 */
static void send_tagged(int fd, const struct sockaddr_in *to, struct pkt *p,
			size_t len, const char *what, bool forge)
{
	ssize_t n;

	if (len >= sizeof(p->h))
		p->h.tag = tag_of(k_rank, &p->h, ntohs(p->h.count)) ^
			   htobe64(forge);
	n = sendto(fd, p, len, 0, (const struct sockaddr *)to, sizeof(*to));
	CHECK(n == (ssize_t)len, "sent %s", what);
}

static void send_pkt(int fd, const struct sockaddr_in *to, struct pkt *p,
		     size_t len, const char *what)
{
	send_tagged(fd, to, p, len, what, false);
}

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
	keys_load(0);
	pk_epoch = join_from(fd, &to, 64, 1024);
	if (!pk_epoch)
		return 1;

	/* malformed: 9; weight is checked before the job, as the rest */
	good(&p);
	send_pkt(fd, &to, &p, sizeof(p.h) - 1, "truncated header");
	good(&p); p.h.weight = htons(1);
	send_pkt(fd, &to, &p, PLEN(4), "reserved weight set");
	good(&p); p.h.weight = htons(1); p.h.job = htonl(8);
	send_pkt(fd, &to, &p, PLEN(4), "reserved weight set, unknown job");
	good(&p); p.h.version = 1;
	send_pkt(fd, &to, &p, PLEN(4), "wire version 1");
	good(&p); p.h.type = 9;
	send_pkt(fd, &to, &p, PLEN(4), "unknown packet type");
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
	/* drop_auth: 2 */
	good(&p);
	send_tagged(fd, &to, &p, PLEN(4), "forged tag", true);
	good(&p); p.h.tag = tag_of(k_rank, &p.h, 4); p.v[3] ^= 1;
	sendto(fd, &p, PLEN(4), 0, (const struct sockaddr *)&to, sizeof(to));
	/* drop_epoch: 1 */
	good(&p); p.h.epoch = htonl(pk_epoch ^ 0x80000000);
	send_pkt(fd, &to, &p, PLEN(4), "another epoch");
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
	/* drop_op: 4 */
	good(&p); p.h.dtype = 9;
	send_pkt(fd, &to, &p, PLEN(4), "unknown dtype");
	good(&p); p.h.op = 7;
	send_pkt(fd, &to, &p, PLEN(4), "unknown op");
	good(&p); p.h.op = XINA_OP_AVG;
	send_pkt(fd, &to, &p, PLEN(4), "AVG, a library operator, on the wire");
	good(&p); p.h.dtype = XINA_DTYPE_INT64; p.h.count = htons(3);
	send_pkt(fd, &to, &p, PLEN(3), "INT64 of an odd count");
	close(fd);
	close(fo);
	return failed;
}

/* "IP:PORT" into @sa; exits 2 when it is not. */
static void parse_ip_port(const char *s, struct sockaddr_in *sa)
{
	const char *colon = strchr(s, ':');
	char ip[INET_ADDRSTRLEN] = "";

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	if (!colon || (size_t)(colon - s) >= sizeof(ip))
		goto bad;
	memcpy(ip, s, colon - s);
	sa->sin_port = htons(atoi(colon + 1));
	if (inet_pton(AF_INET, ip, &sa->sin_addr) == 1 && sa->sin_port)
		return;
bad:
	fprintf(stderr, "xina-libtest: '%s' is not IP:PORT\n", s);
	exit(2);
}

/*
 * One int32 SUM of @blocks packets as rank @rank of @workers, job 7, key
 * 0x5eed, 64 slots (rank r holds (r + 1) * (i + 1) at index i), bound to
 * BIND_IP[:PORT].
 *
 * "ok": the call succeeds and every element is right.
 * "broken": a peer contributes fewer blocks (the script runs it so), so
 * the call fails mid-way, some blocks done and the rest never complete.
 * After that the handle refuses every further call with -ENOTRECOVERABLE
 * and says why, before anything is sent and without touching the buffer.
 */
static int test_call(char **argv)
{
	XINA_STATS(st);
	XINA_STATS(st2);
	int32_t *buf, one = 42;
	struct sockaddr_in sa;
	struct xina *x = NULL;
	unsigned int blocks, i, w;
	int64_t want;
	float f = 1.5f;
	bool broken;
	int err;
	XINA_OPTS(o, .job = 7, .slots = 64);

	o.key_file = key_file();
	parse_ip_port(argv[2], &sa);
	*strchr(argv[2], ':') = '\0';
	o.switch_addr = argv[2];
	o.switch_port = ntohs(sa.sin_port);
	o.bind_addr = argv[3];
	if (strchr(argv[3], ':')) {
		parse_ip_port(argv[3], &sa);
		*strchr(argv[3], ':') = '\0';
		o.bind_port = ntohs(sa.sin_port);
	}
	o.rank = atoi(argv[4]);
	o.workers = atoi(argv[5]);
	o.elems = atoi(argv[6]);
	blocks = atoi(argv[7]);
	broken = !strcmp(argv[8], "broken");
	o.timeout_ms = broken ? 500 : 5000;
	buf = calloc((size_t)blocks * o.elems, sizeof(*buf));
	o.log = open_log;
	o.log_level = XINA_LOG_WARN;
	if (!buf || xina_open(&o, &x)) {
		printf("not ok open: %s\n", open_msg);
		return 1;
	}
	for (i = 0; i < blocks * o.elems; i++)
		buf[i] = (o.rank + 1) * (i + 1);
	err = xina_allreduce_i32(x, buf, (size_t)blocks * o.elems, XINA_OP_SUM);
	xina_get_stats(x, &st);
	if (!broken) {
		CHECK(err == 0, "rank %u: allreduce of %u blocks: %d %s", o.rank,
		      blocks, err, err ? xina_last_error(x) : "");
		for (w = 0, i = 0; !err && i < blocks * o.elems; i++) {
			want = (int64_t)(i + 1) * o.workers * (o.workers + 1) / 2;
			if (buf[i] != (int32_t)want && !w++)
				printf("# element %u is %d, want %lld\n", i,
				       buf[i], (long long)want);
		}
		CHECK(!err && !w, "rank %u: all %u elements right", o.rank,
		      blocks * o.elems);
		goto out;
	}
	CHECK(err == -ETIMEDOUT, "rank %u: the call fails with -ETIMEDOUT (%d): %s",
	      o.rank, err, xina_last_error(x));
	CHECK(st.results > 0 && st.results < blocks,
	      "rank %u: it failed mid-way: %llu of %u blocks done", o.rank,
	      (unsigned long long)st.results, blocks);
	err = xina_allreduce_i32(x, &one, 1, XINA_OP_SUM);
	CHECK(err == -ENOTRECOVERABLE, "int32 call on the failed handle: %d (want %d)",
	      err, -ENOTRECOVERABLE);
	CHECK(strstr(xina_last_error(x), "unusable after an earlier failure"),
	      "the refusal says why: \"%s\"", xina_last_error(x));
	err = xina_allreduce_f32(x, &f, 1);
	CHECK(err == -ENOTRECOVERABLE, "float32 call on the failed handle: %d", err);
	err = xina_allreduce_i32(x, &one, 1, XINA_OP_MAX);
	CHECK(err == -ENOTRECOVERABLE, "and again: %d", err);
	xina_get_stats(x, &st2);
	CHECK(st2.sent == st.sent && st2.tx_syscalls == st.tx_syscalls &&
	      st2.calls == 0 && one == 42 && f == 1.5f,
	      "refused calls sent nothing (sent %llu -> %llu) and left the buffers alone",
	      (unsigned long long)st.sent, (unsigned long long)st2.sent);
out:
	xina_close(x);
	free(buf);
	return failed;
}

/*
 * The fake switch: the job's aggregate is computed as if two more workers
 * held the same values (SUM: 3 v) or another one held v + 7 (MAX).  Every
 * contribution is answered by, in this order:
 *  - a duplicate of the previous result of its slot, if any: ignored;
 *  - FS_IGNORED results of other jobs, slots, rounds and epochs: ignored;
 *  - FS_MALFORMED results that are no valid answer: malformed;
 *  - FS_FORGED results whose tag does not verify (garbage values under the
 *    right result's tag, the right values tagged with a member's key):
 *    bad_tag;
 *  - the right result from another UDP port: the connected socket of
 *    libxina never sees it;
 *  - the right result.
 * Every result but the right one carries garbage values: had libxina
 * placed any, the check of the values fails.
 */
#define FS_SLOTS	4
#define FS_ELEMS	16
#define FS_WORKERS	3
#define FS_IGNORED	5
#define FS_MALFORMED	10
#define FS_FORGED	2
#define FS_GARBAGE	0xdeadbeef

struct fs_report {
	unsigned int	joins;		/* joins answered */
	unsigned int	rx;		/* contributions answered */
	unsigned int	unexpected;	/* datagrams that were none */
};

/* A copy of the result @r with garbage values, length @len kept. */
static size_t fs_bad(struct pkt *b, const struct pkt *r, size_t len)
{
	unsigned int i;

	memcpy(b, r, len);
	for (i = 0; i < ntohs(r->h.count); i++)
		b->v[i] = htonl(FS_GARBAGE);
	return len;
}

static void fs_answer(int fd, int foreign, const struct sockaddr_in *to,
		      const struct pkt *c, struct pkt *prev, bool *have_prev)
{
	size_t len = PLEN(ntohs(c->h.count));
	uint32_t slot = ntohl(c->h.slot);
	struct pkt r, b;
	unsigned int i;

	r = *c;
	r.h.type = XINA_T_RESULT;
	r.h.flags = 0;
	r.h.rank = 0;
	for (i = 0; i < ntohs(c->h.count); i++)
		r.v[i] = htonl(c->h.op == XINA_OP_SUM ?
			       ntohl(c->v[i]) * FS_WORKERS : ntohl(c->v[i]) + 7);
	r.h.tag = tag_of(k_res, &r.h, ntohs(r.h.count));
	if (have_prev[slot])
		fs_send(fd, to, &prev[slot], PLEN(ntohs(prev[slot].h.count)));

	/* ignored: FS_IGNORED */
	fs_bad(&b, &r, len); b.h.job = htonl(ntohl(r.h.job) + 1);
	fs_send(fd, to, &b, len);
	fs_bad(&b, &r, len); b.h.slot = htonl(FS_SLOTS);
	fs_send(fd, to, &b, len);
	fs_bad(&b, &r, len); b.h.round = htonl(ntohl(r.h.round) + 1);
	fs_send(fd, to, &b, len);
	fs_bad(&b, &r, len); b.h.round = htonl(ntohl(r.h.round) - 1);
	fs_send(fd, to, &b, len);
	/* of another epoch (an earlier run), tagged as the switch would */
	fs_bad(&b, &r, len); b.h.epoch = htonl(JS_EPOCH + 1);
	b.h.tag = tag_of(k_res, &b.h, ntohs(b.h.count));
	fs_send(fd, to, &b, len);

	/* malformed: FS_MALFORMED */
	fs_send(fd, to, &b, fs_bad(&b, &r, sizeof(b.h) - 1));
	fs_send(fd, to, &b, fs_bad(&b, &r, len - 4));
	fs_bad(&b, &r, len); b.h.version = 1;	/* wire version 1 */
	fs_send(fd, to, &b, len);
	fs_bad(&b, &r, len); b.h.type = XINA_T_CONTRIB;
	fs_send(fd, to, &b, len);
	fs_bad(&b, &r, len); b.h.dtype = 9;
	fs_send(fd, to, &b, len);
	fs_bad(&b, &r, len); b.h.flags = 0x80;
	fs_send(fd, to, &b, len);
	fs_bad(&b, &r, len); b.h.weight = htons(1);
	fs_send(fd, to, &b, len);
	fs_bad(&b, &r, len);
	b.h.op = r.h.op == XINA_OP_SUM ? XINA_OP_MAX : XINA_OP_SUM;
	fs_send(fd, to, &b, len);
	/* misplaced: the result of another block of this slot */
	fs_bad(&b, &r, len);
	b.h.offset = htobe64(be64toh(r.h.offset) + FS_SLOTS * FS_ELEMS);
	fs_send(fd, to, &b, len);
	fs_bad(&b, &r, len); b.h.count = htons(ntohs(r.h.count) - 1);
	fs_send(fd, to, &b, len - 4);

	/* forged: FS_FORGED */
	fs_bad(&b, &r, len);
	fs_send(fd, to, &b, len);
	b = r;
	b.h.tag = tag_of(k_rank, &b.h, ntohs(b.h.count));
	fs_send(fd, to, &b, len);

	fs_bad(&b, &r, len);
	fs_send(foreign, to, &b, len);
	fs_send(fd, to, &r, len);
	prev[slot] = r;
	have_prev[slot] = true;
}

/*
 * Answer joins (OK, JS_EPOCH) and contributions of that epoch until @ctl
 * closes; report on @rep.
 */
static int fs_run(int fd, int foreign, int ctl, int rep)
{
	struct pollfd pfd[2] = {
		{ .fd = fd, .events = POLLIN }, { .fd = ctl, .events = POLLIN },
	};
	static struct pkt c, prev[FS_SLOTS];
	bool have_prev[FS_SLOTS] = {};
	struct fs_report r = {};
	struct sockaddr_in from;
	socklen_t fl;
	ssize_t n;

	while (poll(pfd, 2, 20000) > 0 && !pfd[1].revents) {
		fl = sizeof(from);
		n = recvfrom(fd, &c, sizeof(c), 0, (struct sockaddr *)&from, &fl);
		if (js_join_ok(&c, n, FS_SLOTS, FS_ELEMS)) {
			js_ok(fd, &from, &c, FS_SLOTS, FS_ELEMS);
			r.joins++;
			continue;
		}
		if (n < (ssize_t)sizeof(c.h) || c.h.type != XINA_T_CONTRIB ||
		    n != (ssize_t)PLEN(ntohs(c.h.count)) ||
		    ntohl(c.h.slot) >= FS_SLOTS ||
		    ntohl(c.h.epoch) != JS_EPOCH) {
			r.unexpected++;
			continue;
		}
		fs_answer(fd, foreign, &from, &c, prev, have_prev);
		r.rx++;
	}
	return write(rep, &r, sizeof(r)) == sizeof(r) ? 0 : 1;
}

/*
 * libxina against the fake switch: two calls (SUM, then MAX) of 10 blocks
 * (the last one partial) over 4 slots.  Results are right, every bad
 * answer is counted once, as ignored or malformed, and nothing else is.
 */
static int test_fake_switch(const char *ip)
{
	const size_t n = 9 * FS_ELEMS + 5, nblocks = 10;
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd, foreign, ctl[2], rep[2], status, err;
	uint64_t want_ign, want_mal, zc_sum;
	XINA_STATS(st);
	socklen_t sl = sizeof(sa);
	struct fs_report r = {};
	struct xina *x = NULL;
	int32_t buf[9 * FS_ELEMS + 5];
	unsigned int i, bad;
	char sw[INET_ADDRSTRLEN];
	pid_t pid;
	XINA_OPTS(o, .job = 7, .key_file = key_file(), .rank = 0,
		  .workers = FS_WORKERS,
		  .slots = FS_SLOTS, .elems = FS_ELEMS, .timeout_ms = 10000,
		  .rto_us = 5000000, .rto_max_us = 5000000, .bind_addr = ip,
		  .flags = XINA_OPT_F_ZEROCOPY);

	keys_load(0);
	fd = udp_from(ip);
	foreign = udp_from(ip);
	if (getsockname(fd, (struct sockaddr *)&sa, &sl) || pipe(ctl) || pipe(rep)) {
		CHECK(0, "fake switch: %s", strerror(errno));
		return 2;
	}
	pid = fork();
	if (pid < 0) {
		CHECK(0, "fork: %s", strerror(errno));
		return 2;
	}
	if (!pid) {
		close(ctl[1]);
		close(rep[0]);
		_exit(fs_run(fd, foreign, ctl[0], rep[1]));
	}
	close(ctl[0]);
	close(rep[1]);
	close(fd);
	close(foreign);

	inet_ntop(AF_INET, &sa.sin_addr, sw, sizeof(sw));
	o.switch_addr = sw;
	o.switch_port = ntohs(sa.sin_port);
	err = xina_open(&o, &x);
	CHECK(!err, "open against the fake switch at %s:%u", sw, o.switch_port);
	if (err)
		goto out;

	for (i = 0; i < n; i++)
		buf[i] = i * 1000 + 1;
	err = xina_allreduce_i32(x, buf, n, XINA_OP_SUM);
	CHECK(!err, "SUM through bad answers completes (%d: %s)", err,
	      err ? xina_last_error(x) : "");
	for (bad = 0, i = 0; i < n; i++)
		bad += buf[i] != (int32_t)(i * 1000 + 1) * FS_WORKERS;
	CHECK(!err && !bad, "SUM: all %zu elements right (%u wrong)", n, bad);

	xina_get_stats(x, &st);
	zc_sum = st.zc_sends;
	for (i = 0; i < n; i++)
		buf[i] = -(int32_t)i;
	err = err ? err : xina_allreduce_i32(x, buf, n, XINA_OP_MAX);
	CHECK(!err, "MAX through bad answers completes (%d: %s)", err,
	      err ? xina_last_error(x) : "");
	for (bad = 0, i = 0; i < n; i++)
		bad += buf[i] != 7 - (int32_t)i;
	CHECK(!err && !bad, "MAX: all %zu elements right (%u wrong)", n, bad);

	xina_get_stats(x, &st);
	/* Each slot's first use has no earlier result to repeat. */
	want_ign = 2 * nblocks * FS_IGNORED + 2 * nblocks - FS_SLOTS;
	want_mal = 2 * nblocks * FS_MALFORMED;
	CHECK(st.sent == 2 * nblocks && st.retrans == 0 && st.results == 2 * nblocks,
	      "%llu contributions, %llu resends, %llu results (want %zu, 0, %zu)",
	      (unsigned long long)st.sent, (unsigned long long)st.retrans,
	      (unsigned long long)st.results, 2 * nblocks, 2 * nblocks);
	CHECK(st.ignored == want_ign,
	      "foreign job, slot, round and duplicate results ignored: %llu (want %llu)",
	      (unsigned long long)st.ignored, (unsigned long long)want_ign);
	CHECK(st.malformed == want_mal,
	      "malformed and misplaced results counted malformed: %llu (want %llu)",
	      (unsigned long long)st.malformed, (unsigned long long)want_mal);
	CHECK(st.bad_tag == 2 * nblocks * FS_FORGED,
	      "forged results counted bad_tag, never placed: %llu (want %zu)",
	      (unsigned long long)st.bad_tag, 2 * nblocks * FS_FORGED);
	/*
	 * Opened with XINA_OPT_F_ZEROCOPY.  The fake switch is a local
	 * socket: the kernel copies every zero-copy send that reaches it and
	 * says so in its notice, and libxina stops asking (libxina_io.c):
	 * the join at least went zero-copy, each that did was copied, the
	 * MAX call sent copies.
	 */
	CHECK(st.zc_sends > 0 && st.zc_copied == st.zc_sends &&
	      st.zc_sends == zc_sum,
	      "zero-copy sends: %llu, %llu of them copied by the kernel, %llu after the first call (want >0, all, the same)",
	      (unsigned long long)st.zc_sends, (unsigned long long)st.zc_copied,
	      (unsigned long long)zc_sum);
out:
	xina_close(x);
	close(ctl[1]);
	if (read(rep[0], &r, sizeof(r)) != sizeof(r))
		r.unexpected = ~0u;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && !WEXITSTATUS(status) && !r.unexpected &&
	      r.rx == 2 * nblocks && r.joins == 1,
	      "fake switch answered %u join and %u contributions of epoch %#x, saw %u other datagrams",
	      r.joins, r.rx, JS_EPOCH, r.unexpected);
	return failed;
}

/*
 * The mirror switch: answers every contribution at once with the
 * aggregate of MS_WORKERS workers that all hold what it carries (SUM:
 * MS_WORKERS v; MAX: v).  Runs until @ctl closes.
 */
#define MS_WORKERS	2
#define MS_ELEMS	16

static int ms_run(int fd, int ctl)
{
	struct pollfd pfd[2] = {
		{ .fd = fd, .events = POLLIN }, { .fd = ctl, .events = POLLIN },
	};
	static struct pkt c;
	struct sockaddr_in from;
	unsigned int i;
	socklen_t fl;
	ssize_t n;

	while (poll(pfd, 2, 20000) > 0 && !pfd[1].revents) {
		fl = sizeof(from);
		n = recvfrom(fd, &c, sizeof(c), 0, (struct sockaddr *)&from, &fl);
		if (js_join_ok(&c, n, 2, MS_ELEMS)) {
			js_ok(fd, &from, &c, 2, MS_ELEMS);
			continue;
		}
		if (n < (ssize_t)sizeof(c.h) || c.h.type != XINA_T_CONTRIB ||
		    n != (ssize_t)PLEN(ntohs(c.h.count)) ||
		    ntohl(c.h.epoch) != JS_EPOCH)
			return 1;
		c.h.type = XINA_T_RESULT;
		c.h.flags = 0;
		c.h.rank = 0;
		for (i = 0; c.h.op == XINA_OP_SUM && i < ntohs(c.h.count); i++)
			c.v[i] = htonl(ntohl(c.v[i]) * MS_WORKERS);
		c.h.tag = tag_of(k_res, &c.h, ntohs(c.h.count));
		fs_send(fd, &from, &c, n);
	}
	return 0;
}

/*
 * Blocks that hold subnormals only: their block exponent is a frexpf
 * exponent of -126 to -148, and none may be taken for the all-zero
 * block's XINA_EXP_ZERO.  Through the mirror switch each element must
 * come back as MS_WORKERS x exactly (the quantum 2^(E - 31 + L) divides
 * every float of the block) and within xina_f32_bound().
 */
static const struct {
	const char	*what;
	float		max;	/* the block's largest magnitude */
	int		exp;	/* its frexpf exponent */
} sub_blocks[] = {
	{ "largest magnitude 0x1.8p-129 (exponent -128)", 0x1.8p-129f, -128 },
	{ "largest magnitude 2^-129 (exponent -128)", 0x1p-129f, -128 },
	{ "smallest subnormal only (exponent -148)", 0x1p-149f, -148 },
	{ "largest subnormal (exponent -126)", 0x1.fffffcp-127f, -126 },
	{ "zeros only", 0.0f, XINA_EXP_ZERO },
};

#define SUB_BLOCKS	(sizeof(sub_blocks) / sizeof(sub_blocks[0]))

static float sub_value(size_t b, unsigned int i)
{
	float m = sub_blocks[b].max;

	/* the largest first, then smaller ones of either sign, some zeros */
	if (!i)
		return m;
	if (i % 5 == 0)
		return 0.0f;
	return (i % 2 ? -1 : 1) * ldexpf(m, -(int)(i % 4));
}

static int test_subnormal(const char *ip)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	float buf[SUB_BLOCKS * MS_ELEMS], want, got;
	int fd, ctl[2], status, err, e;
	socklen_t sl = sizeof(sa);
	unsigned int i, wrong, far;
	struct xina *x = NULL;
	char sw[INET_ADDRSTRLEN];
	double bound;
	size_t b;
	pid_t pid;
	XINA_OPTS(o, .job = 7, .key_file = key_file(), .rank = 0,
		  .workers = MS_WORKERS,
		  .slots = 2, .elems = MS_ELEMS, .timeout_ms = 10000,
		  .bind_addr = ip);

	for (b = 0; b < SUB_BLOCKS; b++) {
		e = 0;
		if (sub_blocks[b].max != 0.0f)
			frexpf(sub_blocks[b].max, &e);
		CHECK(sub_blocks[b].max == 0.0f ? XINA_EXP_ZERO < -148 :
		      e == sub_blocks[b].exp && sub_blocks[b].max < 0x1p-126f,
		      "block '%s': frexpf exponent %d; XINA_EXP_ZERO (%d) is below every one",
		      sub_blocks[b].what, e, XINA_EXP_ZERO);
	}

	keys_load(0);
	fd = udp_from(ip);
	if (getsockname(fd, (struct sockaddr *)&sa, &sl) || pipe(ctl)) {
		CHECK(0, "mirror switch: %s", strerror(errno));
		return 2;
	}
	pid = fork();
	if (pid < 0) {
		CHECK(0, "fork: %s", strerror(errno));
		return 2;
	}
	if (!pid) {
		close(ctl[1]);
		_exit(ms_run(fd, ctl[0]));
	}
	close(ctl[0]);
	close(fd);

	inet_ntop(AF_INET, &sa.sin_addr, sw, sizeof(sw));
	o.switch_addr = sw;
	o.switch_port = ntohs(sa.sin_port);
	err = xina_open(&o, &x);
	CHECK(!err, "open against the mirror switch at %s:%u", sw, o.switch_port);
	if (err)
		goto out;

	for (b = 0; b < SUB_BLOCKS; b++)
		for (i = 0; i < MS_ELEMS; i++)
			buf[b * MS_ELEMS + i] = sub_value(b, i);
	err = xina_allreduce_f32(x, buf, SUB_BLOCKS * MS_ELEMS);
	CHECK(!err, "float32 allreduce of subnormal-only blocks (%d: %s)", err,
	      err ? xina_last_error(x) : "");
	for (b = 0; !err && b < SUB_BLOCKS; b++) {
		for (wrong = far = 0, i = 0; i < MS_ELEMS; i++) {
			want = MS_WORKERS * sub_value(b, i);
			got = buf[b * MS_ELEMS + i];
			bound = xina_f32_bound(got, sub_blocks[b].exp, MS_WORKERS);
			wrong += got != want;
			far += fabs((double)got - want) > bound;
		}
		CHECK(!wrong && !far,
		      "%s: %u workers' sum exact in %u of %u elements, %u outside the bound (first %a, want %a)",
		      sub_blocks[b].what, MS_WORKERS, MS_ELEMS - wrong, MS_ELEMS,
		      far, buf[b * MS_ELEMS], MS_WORKERS * sub_value(b, 0));
	}
	/*
	 * A NaN past the first window (2 slots: blocks 0 and 1) is found a
	 * window before its block is sent, once blocks may be in flight: the
	 * call fails naming it, and the handle is done (libxina.h, "NaN and
	 * infinities"); one in the first window is refused before anything
	 * is sent, the handle usable (test_nonfinite()).
	 */
	for (i = 0; i < SUB_BLOCKS * MS_ELEMS; i++)
		buf[i] = (float)i;
	buf[3 * MS_ELEMS + 5] = NAN;
	err = xina_allreduce_f32(x, buf, SUB_BLOCKS * MS_ELEMS);
	CHECK(err == -EINVAL && strstr(xina_last_error(x), "element 53 is NaN"),
	      "a NaN in block 3, past the first window, fails the call: %d, '%s'",
	      err, xina_last_error(x));
	err = xina_allreduce_f32(x, buf, MS_ELEMS);
	CHECK(err == -ENOTRECOVERABLE,
	      "and the handle refuses the next call: %d, '%s'", err,
	      xina_last_error(x));
out:
	xina_close(x);
	close(ctl[1]);
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && !WEXITSTATUS(status),
	      "mirror switch saw only well-formed contributions");
	return failed;
}

/* ---- calls in flight: requests, the completion fd ------------------------ */

/*
 * The async switch: SUM answered with 2 v, MAX with v.  AS_REVERSE holds
 * up to AS_SLOTS contributions (a whole window) or 5 ms, then answers them
 * last first, so that a call's blocks complete out of order.  AS_DEAF_MAX
 * answers SUM at once and never MAX; the first MAX it sees, it says so on
 * @seen.
 */
#define AS_SLOTS	4
#define AS_ELEMS	16
#define AS_WORKERS	2

enum as_mode { AS_REVERSE, AS_DEAF_MAX };

static int as_run(int fd, int ctl, int seen, enum as_mode mode)
{
	struct pollfd pfd[2] = {
		{ .fd = fd, .events = POLLIN }, { .fd = ctl, .events = POLLIN },
	};
	static struct pkt held[AS_SLOTS];
	struct sockaddr_in from[AS_SLOTS];
	unsigned int nheld = 0, i;
	bool told = false;
	socklen_t fl;
	struct pkt *c;
	ssize_t n;
	int ret;

	for (;;) {
		ret = poll(pfd, 2, nheld ? 5 : 20000);
		if (ret < 0 || pfd[1].revents)
			break;
		if (ret && (pfd[0].revents & POLLIN)) {
			c = &held[nheld];
			fl = sizeof(from[nheld]);
			n = recvfrom(fd, c, sizeof(*c), 0,
				     (struct sockaddr *)&from[nheld], &fl);
			if (js_join_ok(c, n, AS_SLOTS, AS_ELEMS)) {
				js_ok(fd, &from[nheld], c, AS_SLOTS, AS_ELEMS);
				continue;
			}
			if (n < (ssize_t)sizeof(c->h) ||
			    c->h.type != XINA_T_CONTRIB ||
			    n != (ssize_t)PLEN(ntohs(c->h.count)) ||
			    ntohl(c->h.slot) >= AS_SLOTS ||
			    ntohl(c->h.epoch) != JS_EPOCH)
				return 1;
			if (mode == AS_DEAF_MAX && c->h.op == XINA_OP_MAX) {
				if (!told && write(seen, "m", 1) == 1)
					told = true;
				continue;
			}
			c->h.type = XINA_T_RESULT;
			c->h.flags = 0;
			c->h.rank = 0;
			for (i = 0; c->h.op == XINA_OP_SUM &&
				    i < ntohs(c->h.count); i++)
				c->v[i] = htonl(ntohl(c->v[i]) * AS_WORKERS);
			c->h.tag = tag_of(k_res, &c->h, ntohs(c->h.count));
			nheld++;
			if (mode == AS_REVERSE && nheld < AS_SLOTS)
				continue;
		} else if (!ret && !nheld) {
			break;		/* 20 s without a word */
		}
		while (nheld) {
			nheld--;
			fs_send(fd, &from[nheld], &held[nheld],
				PLEN(ntohs(held[nheld].h.count)));
		}
	}
	return 0;
}

struct as_proc {
	pid_t		pid;
	int		ctl;	/* closing it ends the switch */
	int		seen;	/* AS_DEAF_MAX: a byte at the first MAX */
	char		ip[INET_ADDRSTRLEN];
	uint16_t	port;
};

static int as_start(struct as_proc *as, const char *ip, enum as_mode mode)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int fd, ctl[2], seen[2];

	/* a failure here fails the run: its callers' checks do not run */
	fd = udp_from(ip);
	if (getsockname(fd, (struct sockaddr *)&sa, &sl) || pipe(ctl) ||
	    pipe(seen)) {
		CHECK(0, "async switch: %s", strerror(errno));
		return -1;
	}
	as->pid = fork();
	if (as->pid < 0) {
		CHECK(0, "async switch: fork: %s", strerror(errno));
		return -1;
	}
	if (!as->pid) {
		close(ctl[1]);
		close(seen[0]);
		_exit(as_run(fd, ctl[0], seen[1], mode));
	}
	close(ctl[0]);
	close(seen[1]);
	close(fd);
	as->ctl = ctl[1];
	as->seen = seen[0];
	inet_ntop(AF_INET, &sa.sin_addr, as->ip, sizeof(as->ip));
	as->port = ntohs(sa.sin_port);
	return 0;
}

static int as_stop(struct as_proc *as)
{
	int status;

	close(as->ctl);
	close(as->seen);
	waitpid(as->pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

static struct xina *as_open(const struct as_proc *as, uint32_t timeout_ms,
			    uint32_t max_requests)
{
	struct xina *x = NULL;
	int err;
	XINA_OPTS(o, .job = 7, .key_file = key_file(), .rank = 0,
		  .workers = AS_WORKERS, .slots = AS_SLOTS, .elems = AS_ELEMS,
		  .timeout_ms = timeout_ms, .join_timeout_ms = timeout_ms,
		  .switch_addr = as->ip, .switch_port = as->port,
		  .max_requests = max_requests, .bind_addr = "127.0.0.1");

	err = xina_open(&o, &x);
	CHECK(!err, "open against the async switch at %s:%u (%d)", as->ip,
	      as->port, err);
	return err ? NULL : x;
}

#define AS_REQS		8

/* Sizes of the calls in flight: empty, short, whole and partial windows. */
static const size_t as_len[AS_REQS] = { 1, 16, 17, 0, 100, 333, 64, 1000 };

struct as_call {
	struct xina_req	*r;
	bool		f32;
	enum xina_op	op;
	size_t		n;
	void		*buf;
	bool		done;
};

static void as_fill(struct as_call *c, unsigned int k)
{
	size_t i;

	c->f32 = k % 3 == 1;
	c->op = !c->f32 && k % 4 == 2 ? XINA_OP_MAX : XINA_OP_SUM;
	c->n = as_len[k];
	c->buf = calloc(c->n ? c->n : 1, 4);
	for (i = 0; i < c->n; i++) {
		if (c->f32)
			((float *)c->buf)[i] = (float)(k + 1) * 0.75f *
					       ((i % 2) ? -1.0f : 1.0f) *
					       (float)(i + 1);
		else
			((int32_t *)c->buf)[i] = (int32_t)(k * 100000 + i) - 5000;
	}
}

/* Elements of call @c (the @k-th) that are not its result. */
static unsigned int as_wrong(const struct as_call *c, unsigned int k)
{
	unsigned int bad = 0, mul = c->op == XINA_OP_SUM ? AS_WORKERS : 1;
	size_t i;

	for (i = 0; i < c->n; i++) {
		if (c->f32)
			bad += ((float *)c->buf)[i] != AS_WORKERS *
				(float)(k + 1) * 0.75f * ((i % 2) ? -1.0f : 1.0f) *
				(float)(i + 1);
		else
			bad += ((int32_t *)c->buf)[i] !=
			       (int32_t)(((int32_t)(k * 100000 + i) - 5000) * mul);
	}
	return bad;
}

static int as_start_call(struct xina *x, struct as_call *c)
{
	c->done = false;
	if (c->f32)
		return xina_allreduce_f32_start(x, c->buf, c->n, &c->r);
	return xina_allreduce_i32_start(x, c->buf, c->n, c->op, &c->r);
}

static uint64_t as_blocks(const struct as_call *c)
{
	uint64_t b = (c->n + AS_ELEMS - 1) / AS_ELEMS;

	/*
	 * float32: the first window's exponents first (one per slot,
	 * AS_ELEMS to a packet); the others come with the results
	 */
	uint64_t e = b < AS_SLOTS ? b : AS_SLOTS;

	return c->f32 ? b + (e + AS_ELEMS - 1) / AS_ELEMS : b;
}

/*
 * AS_REQS calls of several sizes, int32 SUM and MAX and float32, in flight
 * at once; their blocks complete out of order.  Completions through the
 * completion fd, in poll(), as an event loop does; then the same calls
 * waited for last first; a blocking call behind requests; a NaN failing
 * its own request only.
 */
static void test_async_reverse(const char *ip)
{
	struct as_call c[AS_REQS];
	unsigned int k, j, wrong, done = 0, wakes = 0, order_bad = 0;
	uint64_t sum = 0, cnt, blocks = 0;
	struct xina_req *r[3];
	struct pollfd pfd;
	struct as_proc as;
	XINA_STATS(st);
	struct xina *x;
	int32_t one[20];
	float nan_buf[40];
	int fd, err, e[3];

	if (as_start(&as, ip, AS_REVERSE))
		return;
	x = as_open(&as, 10000, 0);
	if (!x)
		goto out;
	fd = xina_completion_fd(x);
	CHECK(fd >= 0 && fd == xina_completion_fd(x),
	      "completion fd %d, the same on every call", fd);
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	CHECK(poll(&pfd, 1, 0) == 0, "completion fd not readable before any request");

	for (k = 0; k < AS_REQS; k++) {
		as_fill(&c[k], k);
		blocks += as_blocks(&c[k]);
		err = as_start_call(x, &c[k]);
		CHECK(!err, "start call %u: %s %s of %zu elements (%d)", k,
		      c[k].f32 ? "f32" : "i32",
		      c[k].op == XINA_OP_SUM ? "sum" : "max", c[k].n, err);
		if (err)
			goto out_close;
	}
	/* The event loop: poll the fd, read it, test what is pending. */
	while (done < AS_REQS && poll(&pfd, 1, 10000) == 1) {
		wakes++;
		if (read(fd, &cnt, sizeof(cnt)) == sizeof(cnt))
			sum += cnt;
		for (k = 0; k < AS_REQS; k++) {
			if (c[k].done || xina_req_test(c[k].r) == -EINPROGRESS)
				continue;
			c[k].done = true;
			done++;
			/* In start order: every earlier one is done too. */
			for (j = 0; j < k; j++)
				order_bad += xina_req_test(c[j].r) == -EINPROGRESS;
		}
	}
	CHECK(done == AS_REQS && sum == AS_REQS,
	      "%u of %u requests completed, the fd counted %llu completions in %u wakeups",
	      done, AS_REQS, (unsigned long long)sum, wakes);
	CHECK(!order_bad, "requests complete in the order they were started (%u seen before an earlier one)",
	      order_bad);
	CHECK(poll(&pfd, 1, 0) == 0, "completion fd not readable once read and nothing is in flight");
	for (k = 0; k < AS_REQS; k++) {
		e[0] = xina_req_test(c[k].r);
		wrong = e[0] ? ~0u : as_wrong(&c[k], k);
		CHECK(!e[0] && !wrong && !strcmp(xina_req_error(c[k].r), "no error"),
		      "call %u (%zu elements) result: %d, %u elements wrong, '%s'",
		      k, c[k].n, e[0], wrong, xina_req_error(c[k].r));
		xina_req_free(c[k].r);
	}
	xina_get_stats(x, &st);
	CHECK(st.calls == AS_REQS && st.results == blocks && st.sent == blocks,
	      "stats of the requests: %llu calls, %llu sent, %llu results (want %u, %llu, %llu)",
	      (unsigned long long)st.calls, (unsigned long long)st.sent,
	      (unsigned long long)st.results, AS_REQS,
	      (unsigned long long)blocks, (unsigned long long)blocks);

	/* Again, waited for last first: each wait ends when its call does. */
	for (k = 0; k < AS_REQS; k++) {
		free(c[k].buf);
		as_fill(&c[k], k);
		if (as_start_call(x, &c[k]))
			c[k].r = NULL;
	}
	for (wrong = 0, k = AS_REQS; k-- > 0;) {
		err = c[k].r ? xina_req_wait(c[k].r, -1) : -1;
		wrong += err ? 1000000 : as_wrong(&c[k], k);
		xina_req_free(c[k].r);
	}
	CHECK(!wrong, "%u calls in flight waited for last first: all right (%u wrong)",
	      AS_REQS, wrong);

	/* A blocking call queues behind the requests in flight. */
	for (k = 0; k < 20; k++)
		one[k] = k + 1;
	err = xina_allreduce_i32_start(x, one, 10, XINA_OP_SUM, &r[0]);
	e[0] = xina_allreduce_i32(x, one + 10, 10, XINA_OP_SUM);
	e[1] = err ? err : xina_req_wait(r[0], -1);
	for (wrong = 0, k = 0; k < 20; k++)
		wrong += one[k] != (int32_t)(k + 1) * AS_WORKERS;
	CHECK(!e[0] && !e[1] && !wrong,
	      "a blocking call behind a request in flight: %d, %d, %u wrong", e[0],
	      e[1], wrong);
	if (!err)
		xina_req_free(r[0]);
	CHECK(xina_req_test(NULL) == -EINVAL && xina_req_wait(NULL, 0) == -EINVAL,
	      "NULL request: -EINVAL");

	/* Errors are per request: a NaN fails its own call, not the others. */
	for (k = 0; k < 40; k++)
		nan_buf[k] = k;
	nan_buf[37] = NAN;
	e[0] = xina_allreduce_i32_start(x, one, 20, XINA_OP_MAX, &r[0]);
	e[1] = xina_allreduce_f32_start(x, nan_buf, 40, &r[1]);
	e[2] = xina_allreduce_f32_start(x, nan_buf, 20, &r[2]);
	CHECK(!e[0] && !e[1] && !e[2], "three requests started");
	if (e[0] || e[1] || e[2])
		goto out_close;
	e[2] = xina_req_wait(r[2], -1);
	e[1] = xina_req_wait(r[1], 0);
	e[0] = xina_req_wait(r[0], 0);
	CHECK(!e[0] && e[1] == -EINVAL && !e[2] &&
	      strstr(xina_req_error(r[1]), "element 37 is NaN") &&
	      !strcmp(xina_req_error(r[0]), "no error") &&
	      !strcmp(xina_req_error(r[2]), "no error") && nan_buf[19] == 38.0f,
	      "a NaN fails its own request only: %d %d %d, '%s'", e[0], e[1],
	      e[2], xina_req_error(r[1]));
	CHECK(!strcmp(xina_last_error(x), "no error"),
	      "a request's failure is its own: xina_last_error() says '%s'",
	      xina_last_error(x));
	for (k = 0; k < 3; k++)
		xina_req_free(r[k]);
	/* Argument errors at the start: nothing queued. */
	r[0] = (struct xina_req *)1;
	err = xina_allreduce_i32_start(x, NULL, 5, XINA_OP_SUM, &r[0]);
	CHECK(err == -EINVAL && !r[0] && strstr(xina_last_error(x), "NULL buffer"),
	      "NULL buffer refused at the start: %d, '%s'", err, xina_last_error(x));
	err = xina_allreduce_i32_start(x, one, 5, 99, &r[0]);
	CHECK(err == -EINVAL && strstr(xina_last_error(x), "op 99"),
	      "bad op refused at the start: %d, '%s'", err, xina_last_error(x));
	err = xina_allreduce_sparse_map_start(x, one, 5, XINA_TYPE_INT32,
					      XINA_OP_SUM, NULL, &r[0]);
	CHECK(err == -EINVAL && !r[0] && strstr(xina_last_error(x), "NULL map"),
	      "NULL map refused at the start: %d, '%s'", err, xina_last_error(x));
	err = xina_allreduce_i32_start(x, one, 5, XINA_OP_SUM, NULL);
	CHECK(err == -EINVAL &&
	      strstr(xina_last_error(x), "NULL pointer for the request"),
	      "NULL request pointer refused at the start: %d, '%s'", err,
	      xina_last_error(x));
	err = xina_allreduce_start(x, one, SIZE_MAX, XINA_TYPE_INT32,
				   XINA_OP_SUM, &r[0]);
	CHECK(err == -EINVAL && !r[0] &&
	      strstr(xina_last_error(x), "more bytes than a buffer can hold"),
	      "n = SIZE_MAX refused at the start: %d, '%s'", err,
	      xina_last_error(x));
	err = xina_allreduce_start(x, one, 5, XINA_TYPE_INT32,
				   XINA_OP_SUM | 0x100, &r[0]);
	CHECK(err == -EINVAL && !r[0] && strstr(xina_last_error(x), "op 257"),
	      "op SUM | 0x100 refused at the start: %d, '%s'", err,
	      xina_last_error(x));
out_close:
	xina_close(x);
	for (k = 0; k < AS_REQS; k++)
		free(c[k].buf);
out:
	CHECK(!as_stop(&as), "async switch saw only well-formed contributions");
}

/* Wait up to @ms for @fd to be readable. */
static void pfd_wait(int fd, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	poll(&pfd, 1, ms);
}

/*
 * A call that times out fails alone with -ETIMEDOUT and the calls queued
 * behind it with -ENOTRECOVERABLE, each with its own message; a wait
 * with a timeout returns -EINPROGRESS; the limit of requests in flight;
 * xina_close() with a call running and one queued.
 */
static void test_async_errors(const char *ip)
{
	int32_t a[40], b[40], d[40];
	struct xina_req *r[3], *r4;
	unsigned int i, wrong, ms;
	struct as_proc as;
	struct xina *x;
	uint64_t t0;
	int e[3];
	char m;

	for (i = 0; i < 40; i++)
		a[i] = b[i] = d[i] = i;
	if (as_start(&as, ip, AS_DEAF_MAX))
		return;
	x = as_open(&as, 1000, 0);
	if (!x) {
		as_stop(&as);
		return;
	}
	e[0] = xina_allreduce_i32_start(x, a, 40, XINA_OP_SUM, &r[0]);
	e[1] = xina_allreduce_i32_start(x, b, 40, XINA_OP_MAX, &r[1]);
	e[2] = xina_allreduce_i32_start(x, d, 40, XINA_OP_SUM, &r[2]);
	CHECK(!e[0] && !e[1] && !e[2], "SUM, MAX (never answered), SUM started");
	if (e[0] || e[1] || e[2])
		goto out_close;
	t0 = now_ns(CLOCK_MONOTONIC);
	e[1] = xina_req_wait(r[1], 100);
	ms = ms_since(t0);
	CHECK(e[1] == -EINPROGRESS && ms >= 100 && ms < 1000,
	      "wait with a timeout of 100 ms on a call in flight: %d after %u ms",
	      e[1], ms);
	e[2] = xina_req_wait(r[2], -1);
	e[1] = xina_req_test(r[1]);
	e[0] = xina_req_test(r[0]);
	for (wrong = 0, i = 0; i < 40; i++)
		wrong += a[i] != (int32_t)i * AS_WORKERS;
	CHECK(!e[0] && !wrong, "the call before the failure: %d, %u wrong", e[0],
	      wrong);
	CHECK(e[1] == -ETIMEDOUT && strstr(xina_req_error(r[1]), "no result from switch"),
	      "the unanswered call: %d '%s'", e[1], xina_req_error(r[1]));
	CHECK(e[2] == -ENOTRECOVERABLE &&
	      strstr(xina_req_error(r[2]), "unusable after an earlier failure"),
	      "the call queued behind it: %d '%s'", e[2], xina_req_error(r[2]));
	for (i = 0; i < 3; i++)
		xina_req_free(r[i]);
out_close:
	xina_close(x);
	CHECK(!as_stop(&as), "async switch saw only well-formed contributions");

	/* A limit of 2 in flight, and a close with both in flight. */
	if (as_start(&as, ip, AS_DEAF_MAX))
		return;
	x = as_open(&as, 10000, 2);
	if (!x)
		goto out;
	e[0] = xina_allreduce_i32_start(x, a, 40, XINA_OP_MAX, &r[0]);
	e[1] = xina_allreduce_i32_start(x, b, 40, XINA_OP_MAX, &r[1]);
	e[2] = xina_allreduce_i32_start(x, d, 40, XINA_OP_MAX, &r4);
	CHECK(!e[0] && !e[1] && e[2] == -EAGAIN &&
	      strstr(xina_last_error(x), "max_requests"),
	      "max_requests 2: a third start fails with -EAGAIN: %d '%s'", e[2],
	      xina_last_error(x));
	if (e[0] || e[1]) {
		xina_close(x);
		goto out;
	}
	/* The first is on the wire once the switch saw a MAX. */
	pfd_wait(as.seen, 5000);
	CHECK(read(as.seen, &m, 1) == 1, "the first call reached the switch");
	t0 = now_ns(CLOCK_MONOTONIC);
	xina_close(x);
	ms = ms_since(t0);
	CHECK(ms < 1000, "close with a call running and one queued took %u ms (its timeout is 10000 ms)",
	      ms);
	e[0] = xina_req_wait(r[0], -1);
	e[1] = xina_req_test(r[1]);
	CHECK(e[0] == -ECANCELED && strstr(xina_req_error(r[0]), "while the call was in flight"),
	      "the running call after close: %d '%s'", e[0], xina_req_error(r[0]));
	CHECK(e[1] == -ECANCELED && strstr(xina_req_error(r[1]), "before the call started"),
	      "the queued call after close: %d '%s'", e[1], xina_req_error(r[1]));
	xina_req_free(r[0]);
	xina_req_free(r[1]);
out:
	CHECK(!as_stop(&as), "async switch saw only well-formed contributions");
}

/* ---- every (type, op) pair against a switch that aggregates ------------- */

/*
 * The lanes switch: LS_WORKERS handles of this process (one thread each)
 * join it and contribute; it combines their words with bpf/xina_lanes.h,
 * the arithmetic of every aggregator, and answers all of them when the
 * last one arrived, as a switch does.  It refuses (and counts) what a
 * switch drops: a pair xina_dtype_op_ok() rejects, a contribution whose
 * dtype or op is not its round's, a bad tag.  The expected results do not
 * come from it: ts_ref() computes them element by element in plain C
 * from the inputs of all workers.
 */
#define LS_WORKERS	3
#define LS_SLOTS	4
#define LS_ELEMS	16

struct ls_ver {
	uint32_t	acc[LS_ELEMS];
	uint32_t	round;
	uint32_t	seen;		/* ranks that contributed */
	int32_t		aux;		/* MAX of the contributions' aux */
	uint16_t	count;
	uint8_t		dtype, op;
	bool		used;
	struct pkt	res;		/* the result, once complete */
};

struct ls_report {
	unsigned int	joins;
	unsigned int	contribs;
	unsigned int	results;
	unsigned int	bad_pair;	/* xina_dtype_op_ok() said no */
	unsigned int	mismatch;	/* not the round's dtype, op or count */
	unsigned int	bad_tag;
	unsigned int	other;
};

static int ls_run(int fd, int ctl, int rep)
{
	struct pollfd pfd[2] = {
		{ .fd = fd, .events = POLLIN }, { .fd = ctl, .events = POLLIN },
	};
	static struct ls_ver ver[LS_SLOTS * 2];
	struct sockaddr_in member[LS_WORKERS] = {}, from;
	uint8_t secret[XINA_SECRET_BYTES];
	__u64 kr[LS_WORKERS][2];
	struct ls_report r = {};
	static struct pkt c;
	struct ls_ver *v;
	uint32_t vi, i, w;
	uint16_t rank, cnt;
	char err[512];
	socklen_t fl;
	ssize_t n;

	if (xina_keyfile_read(key_file(), secret, err, sizeof(err)))
		return 2;
	for (w = 0; w < LS_WORKERS; w++)
		xina_derive_key(secret, XINA_LABEL_MEMBER, 7, w, kr[w]);
	while (poll(pfd, 2, 30000) > 0 && !pfd[1].revents) {
		fl = sizeof(from);
		n = recvfrom(fd, &c, sizeof(c), 0, (struct sockaddr *)&from, &fl);
		rank = ntohs(c.h.rank);
		if (n < (ssize_t)sizeof(c.h) || rank >= LS_WORKERS ||
		    ntohl(c.h.job) != 7) {
			r.other++;
			continue;
		}
		if (c.h.type == XINA_T_JOIN && n == sizeof(c.h)) {
			if (be64toh(c.h.tag) != xina_tag_hdr(kr[rank], &c.h, 0)) {
				r.bad_tag++;
				continue;
			}
			member[rank] = from;
			js_reply(fd, &from, &c, XINA_JOIN_OK, JS_EPOCH, LS_SLOTS,
				 LS_ELEMS, kr[rank]);
			r.joins++;
			continue;
		}
		cnt = ntohs(c.h.count);
		if (c.h.type != XINA_T_CONTRIB || n != (ssize_t)PLEN(cnt) ||
		    !cnt || cnt > LS_ELEMS || ntohl(c.h.slot) >= LS_SLOTS ||
		    ntohl(c.h.epoch) != JS_EPOCH) {
			r.other++;
			continue;
		}
		for (i = 0; i < cnt; i++)
			c.v[i] = ntohl(c.v[i]);
		if (be64toh(c.h.tag) !=
		    xina_tag_hdr(kr[rank], &c.h, xina_nh(k_nh, c.v, cnt))) {
			r.bad_tag++;
			continue;
		}
		if (!xina_dtype_op_ok(c.h.dtype, c.h.op, cnt)) {
			r.bad_pair++;
			continue;
		}
		vi = ntohl(c.h.slot) * 2 + (ntohl(c.h.round) & 1);
		v = &ver[vi];
		if (!v->used || v->round != ntohl(c.h.round)) {
			memset(v, 0, sizeof(*v));
			v->used = true;
			v->round = ntohl(c.h.round);
			v->dtype = c.h.dtype;
			v->op = c.h.op;
			v->count = cnt;
			v->aux = (int32_t)ntohl(c.h.aux);
			memcpy(v->acc, c.v, cnt * 4);
		} else if (v->seen & 1u << rank) {
			/* a resend: answer a complete round again */
			if (v->seen == (1u << LS_WORKERS) - 1)
				fs_send(fd, &member[rank], &v->res,
					PLEN(v->count));
			continue;
		} else if (v->dtype != c.h.dtype || v->op != c.h.op ||
			   v->count != cnt) {
			r.mismatch++;
			continue;
		} else if (v->dtype == XINA_DTYPE_INT64) {
			if ((int32_t)ntohl(c.h.aux) > v->aux)
				v->aux = (int32_t)ntohl(c.h.aux);
			for (i = 0; i < cnt; i += 2) {
				__u64 a = (__u64)v->acc[i] << 32 | v->acc[i + 1];

				a = xina_combine64(a, (__u64)c.v[i] << 32 | c.v[i + 1],
						   v->op);
				v->acc[i] = a >> 32;
				v->acc[i + 1] = a;
			}
		} else {
			if ((int32_t)ntohl(c.h.aux) > v->aux)
				v->aux = (int32_t)ntohl(c.h.aux);
			for (i = 0; i < cnt; i++)
				v->acc[i] = xina_combine32(v->acc[i], c.v[i],
							   v->dtype, v->op);
		}
		v->seen |= 1u << rank;
		r.contribs++;
		if (v->seen != (1u << LS_WORKERS) - 1)
			continue;
		v->res.h = c.h;
		v->res.h.type = XINA_T_RESULT;
		v->res.h.flags = 0;
		v->res.h.rank = 0;
		v->res.h.aux = htonl((uint32_t)v->aux);
		for (i = 0; i < cnt; i++)
			v->res.v[i] = htonl(v->acc[i]);
		v->res.h.tag = tag_of(k_res, &v->res.h, cnt);
		for (w = 0; w < LS_WORKERS; w++)
			fs_send(fd, &member[w], &v->res, PLEN(cnt));
		r.results++;
	}
	return write(rep, &r, sizeof(r)) == sizeof(r) ? 0 : 1;
}

/* The (type, op) pairs of xina_allreduce(). */
static const struct {
	enum xina_type	type;
	enum xina_op	op;
} ts_pairs[] = {
#define TS_INT(t) { t, XINA_OP_SUM }, { t, XINA_OP_MIN }, { t, XINA_OP_MAX }, \
		  { t, XINA_OP_AVG }, { t, XINA_OP_AND }, { t, XINA_OP_OR },  \
		  { t, XINA_OP_XOR }
#define TS_FLT(t) { t, XINA_OP_SUM }, { t, XINA_OP_MIN }, { t, XINA_OP_MAX }, \
		  { t, XINA_OP_AVG }
	TS_INT(XINA_TYPE_INT8), TS_INT(XINA_TYPE_INT16),
	TS_INT(XINA_TYPE_INT32), TS_INT(XINA_TYPE_INT64),
	TS_FLT(XINA_TYPE_FLOAT16), TS_FLT(XINA_TYPE_BFLOAT16),
	TS_FLT(XINA_TYPE_FLOAT32),
};

#define TS_NPAIRS	(sizeof(ts_pairs) / sizeof(ts_pairs[0]))
/* Odd, and several blocks for every type: padded last words, short blocks. */
#define TS_N		133

static const char *const ts_op_name[] = {
	[XINA_OP_SUM] = "sum", [XINA_OP_MAX] = "max", [XINA_OP_MIN] = "min",
	[XINA_OP_AND] = "and", [XINA_OP_OR] = "or", [XINA_OP_XOR] = "xor",
	[XINA_OP_AVG] = "avg",
};

static uint64_t ts_mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static unsigned int ts_bits(enum xina_type t)
{
	return t == XINA_TYPE_INT8 ? 8 : t == XINA_TYPE_INT64 ? 64 :
	       t == XINA_TYPE_INT32 || t == XINA_TYPE_FLOAT32 ? 32 : 16;
}

static bool ts_float(enum xina_type t)
{
	return t >= XINA_TYPE_FLOAT16;
}

/* Sign bit, exponent mask and quiet bit of a float type. */
static void ts_fmt(enum xina_type t, uint64_t *sign, uint64_t *emask,
		   uint64_t *quiet)
{
	unsigned int w = ts_bits(t), m = t == XINA_TYPE_FLOAT32 ? 23 :
					 t == XINA_TYPE_FLOAT16 ? 10 : 7;

	*sign = 1ull << (w - 1);
	*emask = (*sign - 1) & ~((1ull << m) - 1);
	*quiet = 1ull << (m - 1);
}

/*
 * Worker @w's element @i of a pair, as bits.  Integers: all at the
 * largest value (i % 8 == 0: SUM wraps, AVG must not), all at the smallest
 * (1), {1, 2, 2} and {-1, -2, -2} (3, 4: AVG 5/3 and -5/3 round down to 1
 * and -2), random bits otherwise.  Float MIN and MAX: -0 and +0 (i % 8 ==
 * 0), a NaN of rank 1's sign against finite values (1), -inf and +inf (2),
 * random finite otherwise.  Float SUM and AVG: random finite values over a
 * range of 2^16, signs mixed.
 */
static uint64_t ts_elem(enum xina_type t, enum xina_op op, unsigned int w,
			unsigned int i)
{
	uint64_t h = ts_mix(ts_mix(t * 64 + op) + w * 1000003ull + i);
	unsigned int bits = ts_bits(t);
	uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
	uint64_t sign, emask, quiet, b;
	int e;

	if (!ts_float(t)) {
		switch (i % 8) {
		case 0:
			return mask >> 1;
		case 1:
			return (mask >> 1) + 1;
		case 3:
			return w ? 2 : 1;
		case 4:
			return (w ? -2ull : -1ull) & mask;
		default:
			return h & mask;
		}
	}
	ts_fmt(t, &sign, &emask, &quiet);
	if (op == XINA_OP_MIN || op == XINA_OP_MAX) {
		switch (i % 8) {
		case 0:
			return w & 1 ? sign : 0;
		case 1:
			if (w == 1)
				return (h & sign) | emask | quiet | (h >> 40 & 3);
			break;
		case 2:
			return w == 2 ? emask : w == 1 ? sign | emask : h & (sign - 1) & ~emask;
		}
		b = h & ((sign << 1) - 1);
		/* an exponent of all ones loses its lowest bit: finite */
		return (b & emask) == emask ? b & ~(emask & ~(emask << 1)) : b;
	}
	/* |x| in [2^-8, 2^8), the significand random */
	e = (int)(h >> 20 & 15) - 8;
	if (t == XINA_TYPE_FLOAT32) {
		float f = ldexpf(1.0f + (float)(h >> 41) * 0x1p-23f, e);
		uint32_t u;

		memcpy(&u, &f, 4);
		return u | (h & 1 ? 0x80000000u : 0);
	}
	if (t == XINA_TYPE_FLOAT16)
		return (h & 1 ? 0x8000 : 0) | (uint64_t)(e + 15) << 10 | (h >> 50 & 0x3ff);
	return (h & 1 ? 0x8000 : 0) | (uint64_t)(e + 127) << 7 | (h >> 50 & 0x7f);
}

/* A float's value from its bits (exact), through the compiler's types. */
static double ts_val(enum xina_type t, uint64_t b)
{
	_Float16 h;
	uint16_t s = b;
	uint32_t u;
	float f;

	if (t == XINA_TYPE_FLOAT16) {
		memcpy(&h, &s, 2);
		return h;
	}
	u = t == XINA_TYPE_BFLOAT16 ? (uint32_t)b << 16 : (uint32_t)b;
	memcpy(&f, &u, 4);
	return f;
}

/*
 * totalOrder (IEEE 754-2019 5.10) from values, signs and payloads: is
 * @a above @b?
 */
static bool ts_above(enum xina_type t, uint64_t a, uint64_t b)
{
	double x = ts_val(t, a), y = ts_val(t, b);
	uint64_t sign, emask, quiet, pay;

	ts_fmt(t, &sign, &emask, &quiet);
	pay = sign - 1;
	if (isnan(x) && isnan(y) && !signbit(x) == !signbit(y))
		return signbit(x) ? (a & pay) < (b & pay) : (a & pay) > (b & pay);
	if (isnan(x))
		return !signbit(x);
	if (isnan(y))
		return signbit(y);
	if (x != y)
		return x > y;
	return !signbit(x) && signbit(y);
}

static int64_t ts_sext(uint64_t v, unsigned int bits)
{
	return bits == 64 ? (int64_t)v : (int64_t)(v << (64 - bits)) >> (64 - bits);
}

/*
 * The expected element @i of an integer pair or a float MIN/MAX, from
 * every worker's input: SUM modulo 2^width, MIN and MAX signed (floats in
 * totalOrder), bitwise ops, AVG the floor of the exact mean.
 */
static uint64_t ts_ref(enum xina_type t, enum xina_op op, unsigned int i)
{
	unsigned int bits = ts_bits(t), w;
	uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1, acc, x;
	__int128 sum = 0, q;

	acc = ts_elem(t, op, 0, i);
	for (w = 0; w < LS_WORKERS; w++) {
		x = ts_elem(t, op, w, i);
		sum += ts_sext(x, bits);
		if (!w)
			continue;
		switch (op) {
		case XINA_OP_SUM:
			acc = (acc + x) & mask;
			break;
		case XINA_OP_MAX:
		case XINA_OP_MIN:
			if (ts_float(t)) {
				if (ts_above(t, x, acc) == (op == XINA_OP_MAX))
					acc = x;
			} else if ((ts_sext(x, bits) > ts_sext(acc, bits)) ==
				   (op == XINA_OP_MAX)) {
				acc = x;
			}
			break;
		case XINA_OP_AND:
			acc &= x;
			break;
		case XINA_OP_OR:
			acc |= x;
			break;
		default:
			acc ^= x;
			break;
		}
	}
	if (op == XINA_OP_AVG) {
		q = sum / LS_WORKERS;
		if (q * LS_WORKERS != sum && sum < 0)
			q--;
		acc = (uint64_t)q & mask;
	}
	return acc;
}

/*
 * Float SUM/AVG: within the bound of libxina.h of the exact sum (mean),
 * with E the block's agreed exponent worked out here: float32 W u / 2
 * (AVG u / 2) + 2^-23 |r| + 2^-149; float16 W u (AVG u) + 2^-10 |r| +
 * 2^-24; bfloat16 W u (AVG u) + 2^-7 |r| + 2^-133; u = 2^(E - B + 1 + L),
 * B the lane bits (32 for float32, 16 for float16 and bfloat16), L = 2
 * for 3 workers.
 * The exact sum of 3 of these floats (|x| in [2^-8, 2^8)) fits the 64
 * bits of a long double's significand.
 */
static bool ts_in_bound(enum xina_type t, enum xina_op op, unsigned int i,
			uint64_t got, double *ratio)
{
	unsigned int per = t == XINA_TYPE_FLOAT32 ? LS_ELEMS : 2 * LS_ELEMS;
	unsigned int b0 = i / per * per, j, w, B = t == XINA_TYPE_FLOAT32 ? 32 : 16;
	long double s = 0, err;
	double m = 0, r, u, bound;
	int e, E = -1000;

	for (w = 0; w < LS_WORKERS; w++) {
		for (m = 0, j = b0; j < b0 + per && j < TS_N; j++)
			m = fmax(m, fabs(ts_val(t, ts_elem(t, op, w, j))));
		frexp(m, &e);
		if (m > 0 && e > E)
			E = e;
		s += ts_val(t, ts_elem(t, op, w, i));
	}
	r = ts_val(t, got);
	u = ldexp(1.0, E - (int)B + 1 + 2);
	if (op == XINA_OP_AVG)
		s /= LS_WORKERS;
	if (t == XINA_TYPE_FLOAT32)
		bound = (op == XINA_OP_SUM ? LS_WORKERS * u / 2 : u / 2) +
			0x1p-23 * fabs(r) + 0x1p-149;
	else
		bound = (op == XINA_OP_SUM ? LS_WORKERS * u : u) +
			(t == XINA_TYPE_FLOAT16 ? 0x1p-10 * fabs(r) + 0x1p-24 :
						  0x1p-7 * fabs(r) + 0x1p-133);
	err = fabsl((long double)r - s);
	*ratio = (double)(err / bound);
	return isfinite(r) && err <= bound * (1 + 0x1p-40);
}

struct ts_worker {
	pthread_t	thread;
	struct xina	*x;
	unsigned int	rank;
	uint8_t		buf[TS_NPAIRS][TS_N * 8];
	int		err[TS_NPAIRS];
	char		msg[TS_NPAIRS][256];
};

static void *ts_work(void *arg)
{
	struct ts_worker *tw = arg;
	size_t p, i, sz;
	uint64_t v;

	for (p = 0; p < TS_NPAIRS; p++) {
		sz = xina_type_size(ts_pairs[p].type);
		for (i = 0; i < TS_N; i++) {
			v = htole64(ts_elem(ts_pairs[p].type, ts_pairs[p].op,
					    tw->rank, i));
			memcpy(tw->buf[p] + i * sz, &v, sz);
		}
		tw->err[p] = xina_allreduce(tw->x, tw->buf[p], TS_N,
					    ts_pairs[p].type, ts_pairs[p].op);
		if (tw->err[p])
			snprintf(tw->msg[p], sizeof(tw->msg[p]), "%s",
				 xina_last_error(tw->x));
	}
	return NULL;
}

static struct ts_worker ts_w[LS_WORKERS];

/* One pair's results: every worker's as expected and the same bits. */
static void ts_check_pair(size_t p)
{
	enum xina_type t = ts_pairs[p].type;
	enum xina_op op = ts_pairs[p].op;
	size_t sz = xina_type_size(t), i;
	unsigned int w, bad = 0, first = 0, differ = 0;
	double ratio, worst = 0;
	uint64_t got, want;
	bool ok;

	for (w = 0; w < LS_WORKERS; w++) {
		if (ts_w[w].err[p]) {
			CHECK(0, "%s %s: rank %u failed: %d (%s)",
			      xina_type_name(t), ts_op_name[op], w,
			      ts_w[w].err[p], ts_w[w].msg[p]);
			return;
		}
		differ += memcmp(ts_w[w].buf[p], ts_w[0].buf[p], TS_N * sz) != 0;
	}
	for (i = 0; i < TS_N; i++) {
		got = 0;
		memcpy(&got, ts_w[0].buf[p] + i * sz, sz);
		got = le64toh(got);
		if (ts_float(t) && (op == XINA_OP_SUM || op == XINA_OP_AVG)) {
			ok = ts_in_bound(t, op, i, got, &ratio);
			worst = ratio > worst ? ratio : worst;
		} else {
			want = ts_ref(t, op, i);
			ok = got == want;
		}
		if (!ok && !bad++)
			first = i;
	}
	if (ts_float(t) && (op == XINA_OP_SUM || op == XINA_OP_AVG))
		CHECK(!bad && !differ,
		      "%s %s of %u workers: %u elements within the bound of libxina.h (worst error / bound %.3f; %u wrong, first %u), the same bits on every worker",
		      xina_type_name(t), ts_op_name[op], LS_WORKERS, TS_N,
		      worst, bad, first);
	else
		CHECK(!bad && !differ,
		      "%s %s of %u workers: %u elements as the per-element reference (%u wrong, first %u), the same bits on every worker",
		      xina_type_name(t), ts_op_name[op], LS_WORKERS, TS_N, bad,
		      first);
}

/* Element @i of pair (@t, @op) on rank 0, as bits. */
static uint64_t ts_got(enum xina_type t, enum xina_op op, unsigned int i)
{
	size_t p, sz = xina_type_size(t);
	uint64_t v = 0;

	for (p = 0; p < TS_NPAIRS; p++)
		if (ts_pairs[p].type == t && ts_pairs[p].op == op)
			break;
	memcpy(&v, ts_w[0].buf[p] + i * sz, sz);
	return le64toh(v);
}

/* The documented corner cases, spelt out. */
static void ts_check_corners(void)
{
	enum xina_type t;

	for (t = XINA_TYPE_INT8; t <= XINA_TYPE_INT64; t++) {
		unsigned int b = ts_bits(t);
		uint64_t mask = b == 64 ? ~0ull : (1ull << b) - 1;

		CHECK(ts_got(t, XINA_OP_SUM, 0) == ((mask >> 1) * 3 & mask),
		      "%s sum of 3 x max wraps modulo 2^%u", xina_type_name(t), b);
		CHECK(ts_got(t, XINA_OP_AVG, 0) == mask >> 1 &&
		      ts_got(t, XINA_OP_AVG, 1) == (mask >> 1) + 1,
		      "%s avg of 3 x max is max, of 3 x min is min (no wrap)",
		      xina_type_name(t));
		CHECK(ts_got(t, XINA_OP_AVG, 3) == 1 &&
		      ts_got(t, XINA_OP_AVG, 4) == (-2ull & mask),
		      "%s avg rounds towards minus infinity: {1,2,2} -> 1, {-1,-2,-2} -> -2",
		      xina_type_name(t));
	}
	for (t = XINA_TYPE_FLOAT16; t <= XINA_TYPE_FLOAT32; t++) {
		uint64_t sign, emask, quiet;

		ts_fmt(t, &sign, &emask, &quiet);
		CHECK(ts_got(t, XINA_OP_MAX, 0) == 0 &&
		      ts_got(t, XINA_OP_MIN, 0) == sign,
		      "%s: max(-0, +0) = +0, min = -0", xina_type_name(t));
		CHECK((ts_got(t, XINA_OP_MAX, 2) == emask) &&
		      ts_got(t, XINA_OP_MIN, 2) == (sign | emask),
		      "%s: max with +inf is +inf, min with -inf is -inf",
		      xina_type_name(t));
		CHECK(isnan(ts_val(t, ts_got(t, XINA_OP_MAX, 1))) ==
		      !(ts_elem(t, XINA_OP_MAX, 1, 1) & sign) &&
		      isnan(ts_val(t, ts_got(t, XINA_OP_MIN, 9))) ==
		      !!(ts_elem(t, XINA_OP_MIN, 1, 9) & sign),
		      "%s: a NaN wins MAX if positive, MIN if negative (totalOrder)",
		      xina_type_name(t));
	}
}

/* Refusals of the typed calls: nothing sent, the handle still usable. */
static void ts_refusals(struct xina *x, struct xina *x1)
{
	static const enum xina_type flt[] = {
		XINA_TYPE_FLOAT16, XINA_TYPE_BFLOAT16, XINA_TYPE_FLOAT32,
	};
	static const uint64_t nan_bits[] = { 0x7e00, 0x7fc0, 0x7fc00000 };
	static const uint64_t inf_bits[] = { 0xfc00, 0xff80, 0xff800000 };
	uint8_t buf[64] = {};
	XINA_STATS(st0);
	XINA_STATS(st);
	struct xina_req *r;
	size_t k, sz;
	int err;

	xina_get_stats(x, &st0);
	for (k = 0; k < 3; k++) {
		sz = xina_type_size(flt[k]);
		err = xina_allreduce(x, buf, 8, flt[k], XINA_OP_XOR);
		CHECK(err == -EINVAL && strstr(xina_last_error(x), "bitwise"),
		      "%s xor refused: %d \"%s\"", xina_type_name(flt[k]), err,
		      xina_last_error(x));
		memcpy(buf + 5 * sz, &nan_bits[k], sz);
		err = xina_allreduce(x, buf, 8, flt[k], XINA_OP_SUM);
		CHECK(err == -EINVAL && strstr(xina_last_error(x), "element 5 is NaN"),
		      "%s sum of a NaN refused: \"%s\"", xina_type_name(flt[k]),
		      xina_last_error(x));
		memcpy(buf + 5 * sz, &inf_bits[k], sz);
		err = xina_allreduce(x, buf, 8, flt[k], XINA_OP_AVG);
		CHECK(err == -EINVAL && strstr(xina_last_error(x), "element 5 is infinite"),
		      "%s avg of -inf refused: \"%s\"", xina_type_name(flt[k]),
		      xina_last_error(x));
		memset(buf, 0, sizeof(buf));
	}
	err = xina_allreduce(x, buf, 8, __XINA_TYPE_MAX, XINA_OP_SUM);
	CHECK(err == -EINVAL, "unknown type refused: \"%s\"", xina_last_error(x));
	err = xina_allreduce_start(x, buf, 8, XINA_TYPE_INT8, 9, &r);
	CHECK(err == -EINVAL && !r, "unknown op refused by _start: \"%s\"",
	      xina_last_error(x));
	err = xina_allreduce(x1, buf, 1, XINA_TYPE_INT64, XINA_OP_SUM);
	CHECK(err == -EINVAL && strstr(xina_last_error(x1), "cannot carry"),
	      "int64 with 1 word per packet refused: \"%s\"", xina_last_error(x1));
	xina_get_stats(x, &st);
	CHECK(st.sent == st0.sent, "refused typed calls sent nothing");
	CHECK(xina_type_size(XINA_TYPE_INT8) == 1 &&
	      xina_type_size(XINA_TYPE_BFLOAT16) == 2 &&
	      xina_type_size(XINA_TYPE_INT64) == 8 && !xina_type_size(0) &&
	      !strcmp(xina_type_name(XINA_TYPE_BFLOAT16), "bfloat16") &&
	      !xina_type_name(__XINA_TYPE_MAX),
	      "xina_type_size() and xina_type_name()");
}

/*
 * LS_WORKERS handles against the lanes switch run every pair, one after
 * the other, each worker on a thread of its own; then the results are
 * checked, a refusal of each kind, and one call in flight.
 */
static void test_types(const char *ip)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd, ctl[2], rep[2], status, err;
	socklen_t sl = sizeof(sa);
	struct ls_report r = {};
	struct xina *x1 = NULL;
	char sw[INET_ADDRSTRLEN];
	unsigned int w;
	int16_t h[5] = { 1, -3, 32767, -32768, 7 };
	struct xina_req *rq[LS_WORKERS];
	size_t p;
	pid_t pid;
	XINA_OPTS(o, .job = 7, .key_file = key_file(),
		  .workers = LS_WORKERS, .slots = LS_SLOTS, .elems = LS_ELEMS,
		  .timeout_ms = 10000, .bind_addr = ip);

	keys_load(0);
	fd = udp_from(ip);
	if (getsockname(fd, (struct sockaddr *)&sa, &sl) || pipe(ctl) || pipe(rep)) {
		CHECK(0, "lanes switch: %s", strerror(errno));
		return;
	}
	pid = fork();
	if (pid < 0) {
		CHECK(0, "lanes switch: fork: %s", strerror(errno));
		return;
	}
	if (!pid) {
		close(ctl[1]);
		close(rep[0]);
		_exit(ls_run(fd, ctl[0], rep[1]));
	}
	close(ctl[0]);
	close(rep[1]);
	close(fd);
	inet_ntop(AF_INET, &sa.sin_addr, sw, sizeof(sw));
	o.switch_addr = sw;
	o.switch_port = ntohs(sa.sin_port);
	for (w = 0; w < LS_WORKERS; w++) {
		o.rank = w;
		ts_w[w].rank = w;
		err = xina_open(&o, &ts_w[w].x);
		CHECK(!err, "rank %u open against the lanes switch (%d)", w, err);
		if (err)
			goto out;
	}
	for (w = 0; w < LS_WORKERS; w++)
		pthread_create(&ts_w[w].thread, NULL, ts_work, &ts_w[w]);
	for (w = 0; w < LS_WORKERS; w++)
		pthread_join(ts_w[w].thread, NULL);
	for (p = 0; p < TS_NPAIRS; p++)
		ts_check_pair(p);
	ts_check_corners();

	/* int16 MIN in flight, on every rank at once: a request as well */
	for (w = 0; w < LS_WORKERS; w++) {
		memcpy(ts_w[w].buf[0], h, sizeof(h));
		((int16_t *)ts_w[w].buf[0])[0] = (int16_t)(w * 100);
		ts_w[w].err[0] = xina_allreduce_start(ts_w[w].x, ts_w[w].buf[0],
						      5, XINA_TYPE_INT16,
						      XINA_OP_MIN, &rq[w]);
	}
	for (err = 0, w = 0; w < LS_WORKERS; w++) {
		err |= ts_w[w].err[0] ? ts_w[w].err[0] : xina_req_wait(rq[w], 10000);
		xina_req_free(ts_w[w].err[0] ? NULL : rq[w]);
	}
	CHECK(!err && !memcmp(ts_w[2].buf[0], (int16_t[]){ 0, -3, 32767, -32768, 7 }, 10),
	      "int16 min through xina_allreduce_start() (%d)", err);

	/* last: its join takes rank 0's place on the lanes switch */
	o.rank = 0;
	o.elems = 1;
	err = xina_open(&o, &x1);
	CHECK(!err, "a handle of 1 word per packet opens (%d)", err);
	ts_refusals(ts_w[1].x, x1);
out:
	xina_close(x1);
	for (w = 0; w < LS_WORKERS; w++) {
		xina_close(ts_w[w].x);
		ts_w[w].x = NULL;
	}
	close(ctl[1]);
	if (read(rep[0], &r, sizeof(r)) != sizeof(r))
		r.other = ~0u;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && !WEXITSTATUS(status) && !r.bad_pair &&
	      !r.mismatch && !r.bad_tag && !r.other && r.results,
	      "lanes switch: %u joins, %u contributions, %u results; %u refused pairs, %u mismatched, %u bad tags, %u other",
	      r.joins, r.contribs, r.results, r.bad_pair, r.mismatch,
	      r.bad_tag, r.other);
}

/*
 * A call on the host fallback ring that cannot allocate its copy of the
 * results (its count far beyond memory: a tensor the host cannot hold)
 * fails with -ENOMEM, names what it could not allocate, and sends nothing
 * and counts no call: the handle's next call is still the peers' next
 * one.  Two ranks of a job no switch answers, so both run on the ring;
 * rank 0's first call is the one refused.
 */
#define FB_ELEMS	1000

struct fb_rank {
	unsigned int		rank;
	char			ring[64];
	pthread_barrier_t	*opened;
	int			err_open, err_big, err_call;
	int			err_fbig, err_fcall;
	char			msg_big[768], msg_call[768], msg_fcall[768];
	int32_t			buf[FB_ELEMS];
	float			fbuf[FB_ELEMS];
};

static void *fb_rank_run(void *arg)
{
	struct fb_rank *t = arg;
	struct xina *x = NULL;
	XINA_OPTS(o, .job = 9, .key_file = key_file(), .rank = t->rank,
		  .workers = 2, .slots = 4, .elems = 64, .timeout_ms = 300,
		  .switch_addr = "127.0.0.1", .switch_port = 9,
		  .fallback = t->ring);
	unsigned int i;

	t->err_open = xina_open(&o, &x);
	pthread_barrier_wait(t->opened);
	if (t->err_open)
		return NULL;
	if (!t->rank) {
		/* 2^46 elements: 256 TiB of result words, past any address space */
		t->err_big = xina_allreduce_i32(x, t->buf, 1ULL << 46,
						XINA_OP_SUM);
		snprintf(t->msg_big, sizeof(t->msg_big), "%s",
			 xina_last_error(x));
	}
	for (i = 0; i < FB_ELEMS; i++)
		t->buf[i] = (int32_t)(i * 3 + t->rank);
	t->err_call = xina_allreduce_i32(x, t->buf, FB_ELEMS, XINA_OP_SUM);
	snprintf(t->msg_call, sizeof(t->msg_call), "%s",
		 t->err_call ? xina_last_error(x) : "");
	/* a float call agrees on exponents first: refused before that */
	if (!t->rank)
		t->err_fbig = xina_allreduce_f32(x, t->fbuf, 1ULL << 46);
	for (i = 0; i < FB_ELEMS; i++)
		t->fbuf[i] = (float)(i + t->rank);
	t->err_fcall = xina_allreduce_f32(x, t->fbuf, FB_ELEMS);
	snprintf(t->msg_fcall, sizeof(t->msg_fcall), "%s",
		 t->err_fcall ? xina_last_error(x) : "");
	xina_close(x);
	return NULL;
}

static void test_fallback_enomem(const char *ip)
{
	struct fb_rank t[2] = { { .rank = 0 }, { .rank = 1 } };
	pthread_barrier_t opened;
	pthread_t th[2];
	unsigned int i, r, bad = 0;

	pthread_barrier_init(&opened, NULL, 2);
	for (r = 0; r < 2; r++) {
		snprintf(t[r].ring, sizeof(t[r].ring), "%s:47611,%s:47612",
			 ip, ip);
		t[r].opened = &opened;
		pthread_create(&th[r], NULL, fb_rank_run, &t[r]);
	}
	for (r = 0; r < 2; r++)
		pthread_join(th[r], NULL);
	pthread_barrier_destroy(&opened);
	CHECK(!t[0].err_open && !t[1].err_open,
	      "fallback: both ranks open on the ring (%d, %d)", t[0].err_open,
	      t[1].err_open);
	CHECK(t[0].err_big == -ENOMEM &&
	      strstr(t[0].msg_big, "out of memory for the host fallback's copy of 70368744177664 result words"),
	      "fallback: a call whose result copy does not fit is -ENOMEM, named (%d: %s)",
	      t[0].err_big, t[0].msg_big);
	for (r = 0; r < 2; r++)
		for (i = 0; i < FB_ELEMS; i++)
			bad += t[r].buf[i] != (int32_t)(i * 6 + 1);
	CHECK(!t[0].err_call && !t[1].err_call && !bad,
	      "fallback: after it, the next call is the peers' and completes, every element right (%d: %s; %d: %s; %u wrong)",
	      t[0].err_call, t[0].msg_call, t[1].err_call, t[1].msg_call,
	      bad);
	for (bad = 0, r = 0; r < 2; r++)
		for (i = 0; i < FB_ELEMS; i++)
			bad += t[r].fbuf[i] != (float)(2 * i + 1);
	CHECK(t[0].err_fbig == -ENOMEM && !t[0].err_fcall && !t[1].err_fcall &&
	      !bad,
	      "fallback: a float call refused so (%d) leaves the next float call the peers' too (%d: %s; %d: %s; %u wrong)",
	      t[0].err_fbig, t[0].err_fcall, t[0].msg_fcall, t[1].err_fcall,
	      t[1].msg_fcall, bad);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "api")) {
		struct js_report r;

		js_start(&api_js, "127.0.0.1", JS_OK, 4, 8);
		test_opts();
		test_nonfinite();
		test_bound();
		test_fallback_enomem("127.0.0.1");
		CHECK(!js_stop(&api_js, &r) && !r.bad && !r.other && r.joins,
		      "every handle joined as the header says (%u joins, %u wrong, %u other datagrams)",
		      r.joins, r.bad, r.other);
		return failed;
	}
	if (argc == 5 && !strcmp(argv[1], "packets"))
		return test_packets(argv[2], argv[3], argv[4]);
	if (argc == 3 && !strcmp(argv[1], "fakesw")) {
		test_joins(argv[2]);
		test_fake_switch(argv[2]);
		test_subnormal(argv[2]);
		test_async_reverse(argv[2]);
		test_async_errors(argv[2]);
		test_types(argv[2]);
		return failed;
	}
	if (argc == 9 && !strcmp(argv[1], "call") &&
	    (!strcmp(argv[8], "ok") || !strcmp(argv[8], "broken")))
		return test_call(argv);
	fprintf(stderr, "usage: xina-libtest api | packets SWITCH_IP:PORT MEMBER_IP OTHER_IP |\n"
		"                    fakesw IP |\n"
		"                    call SWITCH_IP:PORT BIND_IP[:PORT] RANK WORKERS ELEMS BLOCKS ok|broken\n");
	return 2;
}
