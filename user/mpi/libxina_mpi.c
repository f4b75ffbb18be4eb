// SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause)
/*
 * libxina-mpi: MPI_Allreduce through a xina switch, for MPI programs as they
 * are (no recompiling), through the MPI profiling interface:
 *
 *   mpirun -x LD_PRELOAD=/usr/local/lib/libxina-mpi.so -x XINA_SWITCH=... \
 *          -x XINA_JOB=... -x XINA_KEY_FILE=... -x XINA_SLOTS=... \
 *          -x XINA_ELEMS=... -x XINA_BIND=:7000 ./program
 *
 * What goes through the switch: MPI_Allreduce on a communicator with the
 * ranks of the configured job, i.e. MPI_COMM_WORLD or one congruent to it
 * (same processes, same order; MPI_COMM_WORLD only under
 * MPI_THREAD_MULTIPLE, where calls on two congruent communicators may run
 * at once), of
 *
 *   MPI_INT8_T, MPI_SIGNED_CHAR    MPI_SUM, MPI_MIN, MPI_MAX, MPI_BAND,
 *   MPI_INT16_T, MPI_SHORT         MPI_BOR, MPI_BXOR: exact (two's
 *   MPI_INT32_T, MPI_INT           complement, sums wrapping, as
 *   MPI_INT64_T, MPI_LONG,         libxina's xina_allreduce() of the
 *   MPI_LONG_LONG                  integer type of the same width)
 *   MPI_FLOAT                      MPI_SUM with libxina's block floating
 *                                  point (libxina.h: within its error
 *                                  bound, bitwise identical on every
 *                                  rank); MPI_MIN, MPI_MAX exact
 *
 * (MPI_SHORT, MPI_INT, MPI_LONG, MPI_LONG_LONG where the C type has that
 * width), MPI_IN_PLACE or not.  An integer sum that overflows wraps, as
 * OpenMPI's C loops do; OpenMPI's op/avx component saturates 8- and 16-bit
 * ones instead (open-mpi/ompi#8045), so there PMPI's result differs.
 * Everything else, other types (unsigned, double, ...) and operators
 * (MPI_PROD, the logical ones, user-defined ones), communicators, count 0,
 * goes to PMPI_Allreduce unchanged, as does everything when XINA_SWITCH is
 * not set.
 *
 * MPI_Iallreduce of the same, under MPI_THREAD_MULTIPLE, goes through the
 * switch as a libxina request (libxina.h, "Non-blocking calls": it makes
 * progress on libxina's own thread, whether or not the program calls
 * into MPI) behind an MPI generalized request, which a thread of this
 * library completes (PMPI_Grequest_complete) when libxina's completion fd
 * says so.  Completing a request from a thread of our own is only allowed
 * under MPI_THREAD_MULTIPLE (OpenMPI 4.1 as Debian builds it has no
 * polling extension of generalized requests), so under lower thread
 * levels MPI_Iallreduce goes to PMPI_Iallreduce.  Blocking and
 * non-blocking calls reach the switch in the order the program made
 * them, as MPI orders collectives on a communicator.
 *
 * The job: XINA_SWITCH (IPv4[:PORT]), XINA_JOB, the key (xm_key()),
 * XINA_SLOTS, XINA_ELEMS as the job was added on the switch, XINA_BIND
 * ([IPv4]:PORT) where the switch knows the ranks (the same port on every
 * rank's own address: ":7000"); optional XINA_WORLD_SIZE (must be the size
 * of MPI_COMM_WORLD), XINA_TIMEOUT_MS, XINA_JOIN_TIMEOUT_MS (libxina's
 * join_timeout_ms: a rank busy with I/O between collectives for longer
 * than libxina's default allows needs a larger one) and XINA_FALLBACK
 * (libxina's opts.fallback: every rank's ring address, IPV4:PORT,... in
 * rank order, the same list on every rank).  Job rank = rank in
 * MPI_COMM_WORLD.
 *
 * The run (libxina's opts.run): XINA_RUN_ID if set (the same on every
 * rank: a launcher's job or restart id; 0 is none), else a random non-zero
 * 32-bit number that rank 0 draws and broadcasts to the others when the
 * handle opens.  The switch takes a join naming another run than its
 * current epoch's for a new run of the workers: without a run of its own,
 * a rank that never joined a run that died (the job restarted before that
 * rank joined), joining first in the next run, was taken into the dead
 * run's epoch and completed its open rounds with its own data.
 * XINA_MPI_VERBOSE=1 prints each rank's run when its handle opens and its
 * count of calls taken and passed on at MPI_Finalize.
 *
 * The handle is opened at the first eligible call, and used only if every
 * rank of the communicator opened one (a PMPI_Allreduce of the outcome):
 * the ranks must agree, or those using the switch would wait forever for
 * the others.  A rank that cannot open says why on stderr; all fall back.
 *
 * Errors: a failed call (libxina's message on stderr) goes to the
 * communicator's error handler with MPI_ERR_OTHER, which aborts the job
 * unless the program asked for MPI_ERRORS_RETURN; the handle is unusable
 * after it (libxina.h) and later eligible calls fail the same way.  A
 * float NaN or infinity in a sum is refused by libxina on the rank that
 * holds it (its peers then time out): sum such data with PMPI.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mpi.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "libxina.h"

enum xm_state {
	XM_UNSET,	/* no eligible call yet */
	XM_ON,		/* every rank has a handle */
	XM_OFF,		/* not configured, or some rank could not open */
	XM_FAILED,	/* a call failed: the handle is unusable */
};

/*
 * One job per process, as one MPI_COMM_WORLD: state of the interposer,
 * not of libxina (which has none).  @lock serialises the handle.
 */
static struct {
	pthread_mutex_t		lock;
	enum xm_state		state;
	struct xina		*x;
	int			world_rank;
	unsigned long long	taken;		/* calls through xina */
	unsigned long long	passed;		/* calls given to PMPI */
	char			sw[64];
	char			bind[64];
} xm = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

static void xm_say(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static void xm_say(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	int len;

	/* One write per line: mpirun forwards the ranks' output in chunks. */
	len = snprintf(msg, sizeof(msg), "libxina-mpi: rank %d: ",
		       xm.world_rank);
	va_start(ap, fmt);
	vsnprintf(msg + len, sizeof(msg) - len - 1, fmt, ap);
	va_end(ap);
	strcat(msg, "\n");
	fputs(msg, stderr);
}

/* An unsigned number of environment variable @name in [@min, @max]. */
static int xm_env_num(const char *name, unsigned long long min,
		      unsigned long long max, bool required,
		      unsigned long long *out)
{
	const char *s = getenv(name);
	unsigned long long v;
	char *end;

	if (!s || !*s) {
		if (required)
			xm_say("%s not set", name);
		return required ? -1 : 0;
	}
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || v < min || v > max) {
		xm_say("%s='%s' is not a number in %llu..%llu", name, s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

/* "IPv4[:PORT]" into @buf (the address) and @port (unchanged if absent). */
static int xm_addr(const char *name, const char *s, char *buf, size_t len,
		   uint16_t *port)
{
	const char *colon = strchr(s, ':');
	unsigned long p;
	size_t alen;
	char *end;

	alen = colon ? (size_t)(colon - s) : strlen(s);
	if (alen >= len) {
		xm_say("%s='%s': address too long", name, s);
		return -1;
	}
	memcpy(buf, s, alen);
	buf[alen] = '\0';
	if (!colon)
		return 0;
	errno = 0;
	p = strtoul(colon + 1, &end, 10);
	if (errno || *end || !colon[1] || p > 65535) {
		xm_say("%s='%s': bad port", name, s);
		return -1;
	}
	*port = p;
	return 0;
}

/*
 * The job's secret: the one place that knows how it reaches libxina.  It
 * is a key file (XINA_KEY_FILE: 0600, the job's 128-bit secret), read by
 * xina_open(); keys never travel in the environment or on command lines.
 */
static int xm_key(struct xina_opts *o)
{
	const char *f = getenv("XINA_KEY_FILE");

	if (!f || !*f) {
		xm_say("XINA_KEY_FILE is not set: the job's key file is needed");
		return -1;
	}
	o->key_file = f;
	return 0;
}

/*
 * Build the options from the environment, the run XINA_RUN_ID or else
 * @run (rank 0's); -1 (said why) if incomplete.
 */
static int xm_config(struct xina_opts *o, int world_size, uint32_t run)
{
	unsigned long long v = 0;
	const char *s;

	s = getenv("XINA_SWITCH");
	if (xm_addr("XINA_SWITCH", s, xm.sw, sizeof(xm.sw), &o->switch_port))
		return -1;
	o->switch_addr = xm.sw;
	s = getenv("XINA_BIND");
	if (s && *s) {
		if (xm_addr("XINA_BIND", s, xm.bind, sizeof(xm.bind),
			    &o->bind_port))
			return -1;
		o->bind_addr = xm.bind[0] ? xm.bind : NULL;
	}
	/* the host fallback's ring addresses; libxina checks them */
	s = getenv("XINA_FALLBACK");
	o->fallback = s && *s ? s : NULL;
	if (xm_env_num("XINA_JOB", 1, UINT32_MAX, true, &v))
		return -1;
	o->job = v;
	if (xm_env_num("XINA_SLOTS", 1, 1u << 20, true, &v))
		return -1;
	o->slots = v;
	if (xm_env_num("XINA_ELEMS", 1, XINA_MAX_ELEMS, true, &v))
		return -1;
	o->elems = v;
	v = world_size;
	if (xm_env_num("XINA_WORLD_SIZE", 1, XINA_MAX_WORKERS, false, &v))
		return -1;
	if (v != (unsigned long long)world_size) {
		xm_say("XINA_WORLD_SIZE=%llu, but MPI_COMM_WORLD has %d ranks",
		       v, world_size);
		return -1;
	}
	if (world_size > XINA_MAX_WORKERS) {
		xm_say("%d ranks, a xina job has at most %d", world_size,
		       XINA_MAX_WORKERS);
		return -1;
	}
	o->workers = world_size;
	o->rank = xm.world_rank;
	v = 0;
	if (xm_env_num("XINA_TIMEOUT_MS", 1, UINT32_MAX, false, &v))
		return -1;
	o->timeout_ms = v;
	v = 0;
	if (xm_env_num("XINA_JOIN_TIMEOUT_MS", 1, UINT32_MAX, false, &v))
		return -1;
	o->join_timeout_ms = v;
	v = run;
	if (xm_env_num("XINA_RUN_ID", 0, UINT32_MAX, false, &v))
		return -1;
	o->run = v;
	return xm_key(o);
}

/* A run number of rank 0's for the ranks to share; 0 (none) if no luck. */
static uint32_t xm_draw_run(void)
{
	uint32_t run = 0;
	ssize_t len;

	while (!run) {
		len = getrandom(&run, sizeof(run), 0);
		if (len == -1 && errno == EINTR)
			continue;
		if (len != sizeof(run)) {
			xm_say("getrandom: %s: no run for the job (XINA_RUN_ID sets one)",
			       len < 0 ? strerror(errno) : "short read");
			return 0;
		}
	}
	return run;
}

static void xm_log(void *ctx, enum xina_log_level level, const char *msg)
{
	xm_say("%s", msg);
}

/*
 * First eligible call, on @comm (every rank of the job is in it): open a
 * handle and agree with the others whether to use it.  Called with the
 * lock held, on every rank at the same call.
 */
static void xm_activate(MPI_Comm comm)
{
	/* As many MPI_Iallreduce in flight as libxina takes. */
	XINA_OPTS(o, .log = xm_log, .log_level = XINA_LOG_WARN,
		  .max_requests = XINA_MAX_REQUESTS);
	int world_size, ok = 0, all = 0, err;
	const char *verbose = getenv("XINA_MPI_VERBOSE"), *s;
	uint32_t run = 0;

	PMPI_Comm_rank(MPI_COMM_WORLD, &xm.world_rank);
	PMPI_Comm_size(MPI_COMM_WORLD, &world_size);

	/*
	 * Rank 0's run, for the ranks without XINA_RUN_ID.  Broadcast whatever
	 * the environment, as every rank must make the same collective calls.
	 * On @comm: MPI_COMM_WORLD or congruent to it (the same rank 0), and
	 * the collective every rank is in right now.
	 */
	s = getenv("XINA_RUN_ID");
	if (xm.world_rank == 0 && getenv("XINA_SWITCH") && (!s || !*s))
		run = xm_draw_run();
	err = PMPI_Bcast(&run, 1, MPI_UINT32_T, 0, comm);
	if (err != MPI_SUCCESS) {
		xm_say("cannot broadcast rank 0's run: not opening the xina handle");
	} else if (getenv("XINA_SWITCH") && !xm_config(&o, world_size, run)) {
		err = xina_open(&o, &xm.x);
		if (err)	/* xm_log said why */
			xm_say("xina_open: %s", strerror(-err));
		else if (verbose && strcmp(verbose, "0"))
			xm_say("xina handle open: job %u, run %u", o.job, o.run);
		ok = !err;
	}
	err = PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
	if (err == MPI_SUCCESS && all) {
		xm.state = XM_ON;
		return;
	}
	if (ok)
		xm_say("another rank could not open its xina handle: every MPI_Allreduce goes to PMPI");
	xina_close(xm.x);
	xm.x = NULL;
	xm.state = XM_OFF;
}

/*
 * Does @comm hold the job's ranks in the job's order?  Under
 * MPI_THREAD_MULTIPLE only MPI_COMM_WORLD itself: calls on two congruent
 * communicators may run at once, and reach the switch in different orders
 * on different ranks.
 */
static bool xm_job_comm(MPI_Comm comm)
{
	int res, provided;

	if (comm == MPI_COMM_WORLD)
		return true;
	if (comm == MPI_COMM_NULL ||
	    PMPI_Comm_compare(comm, MPI_COMM_WORLD, &res) != MPI_SUCCESS)
		return false;
	if (res == MPI_IDENT)
		return true;
	if (res != MPI_CONGRUENT ||
	    PMPI_Query_thread(&provided) != MPI_SUCCESS)
		return false;
	return provided != MPI_THREAD_MULTIPLE;
}

/* What a call of @type by @op is to libxina; false: not for the switch. */
static bool xm_kind(MPI_Datatype type, MPI_Op op, enum xina_type *xtype,
		    enum xina_op *xop, size_t *size)
{
	bool integer;

	if (type == MPI_INT8_T || type == MPI_SIGNED_CHAR)
		*xtype = XINA_TYPE_INT8;
	else if (type == MPI_INT16_T ||
		 (type == MPI_SHORT && sizeof(short) == 2))
		*xtype = XINA_TYPE_INT16;
	else if (type == MPI_INT32_T || (type == MPI_INT && sizeof(int) == 4))
		*xtype = XINA_TYPE_INT32;
	else if (type == MPI_INT64_T ||
		 (type == MPI_LONG && sizeof(long) == 8) ||
		 (type == MPI_LONG_LONG && sizeof(long long) == 8))
		*xtype = XINA_TYPE_INT64;
	else if (type == MPI_FLOAT)
		*xtype = XINA_TYPE_FLOAT32;
	else
		return false;
	integer = *xtype != XINA_TYPE_FLOAT32;

	if (op == MPI_SUM)
		*xop = XINA_OP_SUM;
	else if (op == MPI_MIN)
		*xop = XINA_OP_MIN;
	else if (op == MPI_MAX)
		*xop = XINA_OP_MAX;
	else if (op == MPI_BAND && integer)
		*xop = XINA_OP_AND;
	else if (op == MPI_BOR && integer)
		*xop = XINA_OP_OR;
	else if (op == MPI_BXOR && integer)
		*xop = XINA_OP_XOR;
	else
		return false;
	*size = xina_type_size(*xtype);
	return *size > 0;
}

/*
 * An eligible call on @comm: lock, and open the handle at the first one.
 * Returns with the lock held and XM_ON (through the switch) or XM_FAILED
 * (the handle is unusable: the caller says so and xm_fail()s), or with it
 * released and XM_OFF (to PMPI).
 */
static enum xm_state xm_enter(MPI_Comm comm)
{
	enum xm_state state;

	pthread_mutex_lock(&xm.lock);
	if (xm.state == XM_UNSET)
		xm_activate(comm);
	state = xm.state;
	if (state == XM_OFF)
		pthread_mutex_unlock(&xm.lock);
	return state;
}

/*
 * The end of an eligible call that did not reach the switch, or failed in
 * it, under xm.lock (its cause said already): the handle is unusable from
 * now on (libxina.h), and so every later eligible call fails here too
 * rather than wait for peers that may have moved on.  To the
 * communicator's error handler, as a failed collective is.
 */
static int xm_fail(MPI_Comm comm)
{
	xm.state = XM_FAILED;
	pthread_mutex_unlock(&xm.lock);
	PMPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
	return MPI_ERR_OTHER;
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count,
		  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
	enum xina_type xtype;
	enum xina_op xop;
	size_t size;
	int err;

	if (!xm_kind(datatype, op, &xtype, &xop, &size) || count <= 0 ||
	    __atomic_load_n(&xm.state, __ATOMIC_RELAXED) == XM_OFF ||
	    !xm_job_comm(comm))
		goto pmpi;

	switch (xm_enter(comm)) {
	case XM_OFF:
		goto pmpi;
	case XM_FAILED:
		xm_say("MPI_Allreduce after a failed one: the xina handle is unusable");
		return xm_fail(comm);
	default:
		break;
	}
	if (sendbuf != MPI_IN_PLACE)
		memcpy(recvbuf, sendbuf, (size_t)count * size);
	err = xina_allreduce(xm.x, recvbuf, count, xtype, xop);
	if (err) {
		xm_say("MPI_Allreduce of %d %s elements through xina: %s",
		       count, xina_type_name(xtype), xina_last_error(xm.x));
		return xm_fail(comm);
	}
	xm.taken++;
	pthread_mutex_unlock(&xm.lock);
	return MPI_SUCCESS;

pmpi:
	__atomic_fetch_add(&xm.passed, 1, __ATOMIC_RELAXED);
	return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

/*
 * MPI_Iallreduce: one libxina request per call, behind a generalized
 * request.  @lock guards @pending; it is held from the libxina start to
 * the insertion, and the completer reads the completion fd before it
 * takes it, so no completion is read off the fd before its request is
 * in the list.
 */
struct xm_ireq {
	struct xm_ireq	*next;
	struct xina_req	*r;
	MPI_Request	greq;
	enum xina_type	type;
	size_t		n;
	int		err;	/* MPI error class, once completed */
};

static struct {
	pthread_mutex_t	lock;
	struct xm_ireq	*pending;
	pthread_t	thread;
	bool		running;
	int		cfd;		/* libxina's completion fd */
	int		stop[2];	/* a pipe: MPI_Finalize ends the thread */
} xmi = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

static void *xm_completer(void *arg)
{
	struct pollfd pfd[2] = {
		{ .fd = xmi.cfd, .events = POLLIN },
		{ .fd = xmi.stop[0], .events = POLLIN },
	};
	struct xm_ireq **pp, *q;
	uint64_t cnt;
	int st;

	for (;;) {
		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents)
			break;
		if (read(xmi.cfd, &cnt, sizeof(cnt)) < 0 && errno != EAGAIN)
			break;
		pthread_mutex_lock(&xmi.lock);
		for (pp = &xmi.pending; (q = *pp);) {
			st = xina_req_test(q->r);
			if (st == -EINPROGRESS) {
				pp = &q->next;
				continue;
			}
			*pp = q->next;
			if (st) {
				xm_say("MPI_Iallreduce of %zu %s elements through xina: %s",
				       q->n, xina_type_name(q->type),
				       xina_req_error(q->r));
				q->err = MPI_ERR_OTHER;
			}
			PMPI_Grequest_complete(q->greq);
		}
		pthread_mutex_unlock(&xmi.lock);
	}
	return NULL;
}

static int xm_query(void *extra, MPI_Status *status)
{
	struct xm_ireq *q = extra;

	PMPI_Status_set_elements(status, MPI_BYTE, 0);
	PMPI_Status_set_cancelled(status, 0);
	status->MPI_SOURCE = MPI_UNDEFINED;
	status->MPI_TAG = MPI_UNDEFINED;
	return q->err;
}

static int xm_free(void *extra)
{
	struct xm_ireq *q = extra;

	xina_req_free(q->r);
	free(q);
	return MPI_SUCCESS;
}

/* A call on the wire cannot be taken back: it completes as it will. */
static int xm_cancel(void *extra, int complete)
{
	return MPI_SUCCESS;
}

/* Under xmi.lock: the completer, once, with the program's signals blocked. */
static int xm_completer_start(void)
{
	sigset_t all, old;
	int err;

	if (xmi.running)
		return 0;
	xmi.cfd = xina_completion_fd(xm.x);
	if (xmi.cfd < 0 || pipe2(xmi.stop, O_CLOEXEC))
		return -1;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&xmi.thread, NULL, xm_completer, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		close(xmi.stop[0]);
		close(xmi.stop[1]);
		return -1;
	}
	xmi.running = true;
	return 0;
}

static void xm_completer_stop(void)
{
	if (!xmi.running)
		return;
	if (write(xmi.stop[1], "x", 1) != 1)
		xm_say("cannot stop the MPI_Iallreduce completer");
	pthread_join(xmi.thread, NULL);
	close(xmi.stop[0]);
	close(xmi.stop[1]);
	xmi.running = false;
}

/*
 * Under xm.lock, xm.state XM_ON: start @q's call, @op on @buf, or say why
 * not.
 */
static int xm_istart(struct xm_ireq *q, void *buf, enum xina_op op)
{
	int err;

	pthread_mutex_lock(&xmi.lock);
	if (xm_completer_start()) {
		pthread_mutex_unlock(&xmi.lock);
		xm_say("MPI_Iallreduce: cannot start the completion thread");
		return -1;
	}
	err = xina_allreduce_start(xm.x, buf, q->n, q->type, op, &q->r);
	if (err) {
		pthread_mutex_unlock(&xmi.lock);
		xm_say("MPI_Iallreduce of %zu %s elements through xina: %s",
		       q->n, xina_type_name(q->type), xina_last_error(xm.x));
		return -1;
	}
	PMPI_Grequest_start(xm_query, xm_free, xm_cancel, q, &q->greq);
	q->next = xmi.pending;
	xmi.pending = q;
	pthread_mutex_unlock(&xmi.lock);
	return 0;
}

int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count,
		   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
		   MPI_Request *request)
{
	enum xina_type xtype;
	struct xm_ireq *q;
	enum xina_op xop;
	int provided;
	size_t size;

	if (!xm_kind(datatype, op, &xtype, &xop, &size) || count <= 0 ||
	    __atomic_load_n(&xm.state, __ATOMIC_RELAXED) == XM_OFF ||
	    PMPI_Query_thread(&provided) != MPI_SUCCESS ||
	    provided != MPI_THREAD_MULTIPLE || !xm_job_comm(comm))
		goto pmpi;

	switch (xm_enter(comm)) {
	case XM_OFF:
		goto pmpi;
	case XM_FAILED:
		xm_say("MPI_Iallreduce after a failed call: the xina handle is unusable");
		return xm_fail(comm);
	default:
		break;
	}
	q = calloc(1, sizeof(*q));
	if (!q) {
		xm_say("MPI_Iallreduce: out of memory");
		return xm_fail(comm);
	}
	if (sendbuf != MPI_IN_PLACE)
		memcpy(recvbuf, sendbuf, (size_t)count * size);
	q->type = xtype;
	q->n = count;
	q->err = MPI_SUCCESS;
	if (xm_istart(q, recvbuf, xop)) {
		free(q);
		return xm_fail(comm);
	}
	*request = q->greq;
	xm.taken++;
	pthread_mutex_unlock(&xm.lock);
	return MPI_SUCCESS;

pmpi:
	__atomic_fetch_add(&xm.passed, 1, __ATOMIC_RELAXED);
	return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm,
			       request);
}

int MPI_Finalize(void)
{
	const char *verbose = getenv("XINA_MPI_VERBOSE");

	/* Every request completed before MPI_Finalize (MPI's rule). */
	xm_completer_stop();
	pthread_mutex_lock(&xm.lock);
	PMPI_Comm_rank(MPI_COMM_WORLD, &xm.world_rank);
	if (verbose && strcmp(verbose, "0"))
		/* MPI_Iallreduce counted with them (xina_mpi.sh reads this) */
		xm_say("%llu MPI_Allreduce calls through xina, %llu to PMPI_Allreduce",
		       xm.taken, xm.passed);
	xina_close(xm.x);
	xm.x = NULL;
	if (xm.state == XM_ON)
		xm.state = XM_OFF;
	pthread_mutex_unlock(&xm.lock);
	return PMPI_Finalize();
}
