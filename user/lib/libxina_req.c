// SPDX-License-Identifier: (LGPL-2.1 OR BSD-3-Clause)
/*
 * libxina requests: calls in flight, the handle's progress thread, the
 * completion file descriptor.  The rules are in libxina.h ("Thread
 * safety", "Non-blocking calls").
 *
 * Why a progress thread rather than progress made inside xina_req_test()
 * and xina_req_wait(): a framework hands a call over and goes on
 * computing (PyTorch's DDP starts a bucket's allreduce from its backward
 * pass and only waits for the future at the end of it; an asyncio loop
 * wakes on a file descriptor).  Driven by test/wait, nothing would move
 * on the wire until the caller asked, and the overlap with compute that
 * the non-blocking call exists for would be lost; the switch would also
 * see this worker's contributions late and hold its peers' slots
 * meanwhile.  The thread is created by a handle's first _start only, so a
 * program that makes blocking calls only pays nothing for it.
 *
 * The thread takes one queued request at a time and runs the same engine
 * as a blocking call (xina_run) outside the lock, then completes
 * it under the lock: status, message, a snapshot of the counters, the
 * completion eventfd.  xina_close() sets @stop, which the engine checks
 * after every poll(), and wakes that poll() through @wake_fd.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "libxina_int.h"

void xina_req_init(struct xina *x)
{
	pthread_condattr_t ca;

	pthread_mutex_init(&x->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&x->work_cv, &ca);
	pthread_cond_init(&x->done_cv, &ca);
	pthread_condattr_destroy(&ca);
	x->wake_fd = -1;
	x->cfd = -1;
}

/* A failure of a call made by the application's thread; under x->lock. */
__attribute__((format(printf, 2, 3)))
static int xina_api_fail(struct xina *x, const char *fmt, ...)
{
	char *dst = x->threaded ? x->cerr : x->err;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dst, sizeof(x->err), fmt, ap);
	va_end(ap);
	return 0;
}

static void xina_efd_add(int fd)
{
	uint64_t one = 1;

	/* Cannot fail short of overflowing 2^64 - 1 completions. */
	if (fd >= 0 && write(fd, &one, sizeof(one)) < 0)
		return;
}

/* Under x->lock: @r is done with @status; wake whoever waits. */
static void xina_req_complete(struct xina *x, struct xina_req *r, int status,
			      const char *msg)
{
	snprintf(r->err, sizeof(r->err), "%s", status ? msg : "no error");
	__atomic_store_n(&r->status, status, __ATOMIC_RELEASE);
	x->inflight--;
	pthread_cond_broadcast(&x->done_cv);
	xina_efd_add(x->cfd);
}

static void *xina_progress(void *arg)
{
	struct xina *x = arg;
	struct xina_req *r;
	int err;

	pthread_mutex_lock(&x->lock);
	for (;;) {
		while (!x->q_head && !x->stop)
			pthread_cond_wait(&x->work_cv, &x->lock);
		if (x->stop)
			break;
		r = x->q_head;
		x->q_head = r->qnext;
		if (!x->q_head)
			x->q_tail = NULL;
		x->running = r;
		pthread_mutex_unlock(&x->lock);

		x->err[0] = '\0';
		err = xina_run(x, r->buf, r->n, r->type, r->op, r->map);

		pthread_mutex_lock(&x->lock);
		x->running = NULL;
		/* Stopped mid-call: xina_close() completes it. */
		if (err && x->stop) {
			x->running = r;
			break;
		}
		x->st_snap = x->st;
		xina_req_complete(x, r, err, x->err);
	}
	pthread_mutex_unlock(&x->lock);
	return NULL;
}

/* Under x->lock: the progress thread, with every signal blocked in it. */
static int xina_thread_start(struct xina *x)
{
	sigset_t all, old;
	int err;

	x->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (x->wake_fd < 0) {
		err = -errno;
		xina_api_fail(x, "eventfd for the progress thread: %s",
			      strerror(errno));
		return err;
	}
	/* Signals are the application's: its own threads take them. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = -pthread_create(&x->thread, NULL, xina_progress, x);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		xina_api_fail(x, "cannot start the progress thread: %s",
			      strerror(-err));
		close(x->wake_fd);
		x->wake_fd = -1;
		return err;
	}
	x->st_snap = x->st;
	__atomic_store_n(&x->threaded, true, __ATOMIC_RELEASE);
	return 0;
}

int xina_start(struct xina *x, void *buf, size_t n, enum xina_type type,
	       enum xina_op op, const uint8_t *map, struct xina_req **out)
{
	struct xina_codec k;
	struct xina_req *r;
	char msg[256];
	int err;

	if (!x)
		return -EINVAL;
	if (!out) {
		pthread_mutex_lock(&x->lock);
		xina_api_fail(x, "NULL pointer for the request");
		pthread_mutex_unlock(&x->lock);
		return -EINVAL;
	}
	*out = NULL;
	r = calloc(1, sizeof(*r));
	pthread_mutex_lock(&x->lock);
	if (!r) {
		xina_api_fail(x, "out of memory for a request");
		err = -ENOMEM;
		goto err_unlock;
	}
	if (n && !buf) {
		xina_api_fail(x, "NULL buffer for %zu elements", n);
		err = -EINVAL;
		goto err_unlock;
	}
	err = xina_codec_init(x, &k, type, op, msg, sizeof(msg));
	if (!err)
		err = xina_codec_n(&k, n, msg, sizeof(msg));
	if (err) {
		xina_api_fail(x, "%s", msg);
		goto err_unlock;
	}
	if ((op & XINA_RUN_MAP) && n && !map) {
		xina_api_fail(x, "NULL map of the blocks of %zu elements", n);
		err = -EINVAL;
		goto err_unlock;
	}
	if (x->inflight >= x->o.max_requests) {
		xina_api_fail(x, "%u requests in flight already (opts.max_requests): wait for one to complete",
			      x->inflight);
		err = -EAGAIN;
		goto err_unlock;
	}
	if (!x->threaded) {
		err = xina_thread_start(x);
		if (err)
			goto err_unlock;
	}
	r->x = x;
	r->buf = buf;
	r->n = n;
	r->type = type;
	r->op = op;
	r->map = map;
	r->status = -EINPROGRESS;
	snprintf(r->err, sizeof(r->err), "in progress");
	r->next = x->reqs;
	if (x->reqs)
		x->reqs->prev = r;
	x->reqs = r;
	if (x->q_tail)
		x->q_tail->qnext = r;
	else
		x->q_head = r;
	x->q_tail = r;
	x->inflight++;
	pthread_cond_signal(&x->work_cv);
	pthread_mutex_unlock(&x->lock);
	*out = r;
	return 0;

err_unlock:
	pthread_mutex_unlock(&x->lock);
	free(r);
	return err;
}

int xina_allreduce_i32_start(struct xina *x, int32_t *buf, size_t n,
			     enum xina_op op, struct xina_req **req)
{
	return xina_start(x, buf, n, XINA_TYPE_INT32, op, NULL, req);
}

int xina_allreduce_f32_start(struct xina *x, float *buf, size_t n,
			     struct xina_req **req)
{
	return xina_start(x, buf, n, XINA_TYPE_FLOAT32, XINA_OP_SUM, NULL,
			  req);
}

int xina_req_test(const struct xina_req *r)
{
	if (!r)
		return -EINVAL;
	return __atomic_load_n(&r->status, __ATOMIC_ACQUIRE);
}

int xina_req_wait(struct xina_req *r, int timeout_ms)
{
	struct timespec dl;
	struct xina *x;
	int st;

	if (!r)
		return -EINVAL;
	st = xina_req_test(r);
	/* Done, or detached by xina_close() (which completed it). */
	if (st != -EINPROGRESS || !timeout_ms || !r->x)
		return st;
	x = r->x;
	if (timeout_ms > 0) {
		clock_gettime(CLOCK_MONOTONIC, &dl);
		dl.tv_sec += timeout_ms / 1000;
		dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
		if (dl.tv_nsec >= 1000000000) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000;
		}
	}
	pthread_mutex_lock(&x->lock);
	while ((st = xina_req_test(r)) == -EINPROGRESS) {
		if (timeout_ms < 0)
			pthread_cond_wait(&x->done_cv, &x->lock);
		else if (pthread_cond_timedwait(&x->done_cv, &x->lock, &dl))
			break;
	}
	pthread_mutex_unlock(&x->lock);
	return xina_req_test(r);
}

const char *xina_req_error(const struct xina_req *r)
{
	if (!r)
		return "no request";
	/* The message is written before the status is released. */
	if (xina_req_test(r) == -EINPROGRESS)
		return "in progress";
	return r->err;
}

void xina_req_free(struct xina_req *r)
{
	struct xina *x;

	if (!r)
		return;
	x = r->x;
	if (x) {
		pthread_mutex_lock(&x->lock);
		while (xina_req_test(r) == -EINPROGRESS)
			pthread_cond_wait(&x->done_cv, &x->lock);
		if (r->prev)
			r->prev->next = r->next;
		else
			x->reqs = r->next;
		if (r->next)
			r->next->prev = r->prev;
		pthread_mutex_unlock(&x->lock);
	}
	free(r);
}

int xina_completion_fd(struct xina *x)
{
	int fd;

	if (!x)
		return -EINVAL;
	pthread_mutex_lock(&x->lock);
	if (x->cfd < 0) {
		x->cfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (x->cfd < 0) {
			fd = -errno;
			xina_api_fail(x, "eventfd for completions: %s",
				      strerror(errno));
			pthread_mutex_unlock(&x->lock);
			return fd;
		}
	}
	fd = x->cfd;
	pthread_mutex_unlock(&x->lock);
	return fd;
}

int xina_call(struct xina *x, void *buf, size_t n, enum xina_type type,
	      enum xina_op op, const uint8_t *map)
{
	struct xina_req *r;
	int err;

	pthread_mutex_lock(&x->lock);
	if (!x->threaded) {
		/* Inline, as before requests existed, serialised by the lock. */
		err = xina_run(x, buf, n, type, op, map);
		pthread_mutex_unlock(&x->lock);
		return err;
	}
	pthread_mutex_unlock(&x->lock);
	/* Behind the calls in flight: the job's order. */
	err = xina_start(x, buf, n, type, op, map, &r);
	if (err)
		return err;
	err = xina_req_wait(r, -1);
	if (err) {
		pthread_mutex_lock(&x->lock);
		snprintf(x->cerr, sizeof(x->cerr), "%s", r->err);
		pthread_mutex_unlock(&x->lock);
	}
	xina_req_free(r);
	return err;
}

/*
 * First thing in xina_close(): stop the progress thread (mid-call too),
 * complete what is left with -ECANCELED, detach every request from the
 * handle.  No other call of the handle runs now (libxina.h).
 */
void xina_req_shutdown(struct xina *x)
{
	struct xina_req *r;

	if (x->threaded) {
		pthread_mutex_lock(&x->lock);
		__atomic_store_n(&x->stop, true, __ATOMIC_RELAXED);
		pthread_cond_broadcast(&x->work_cv);
		pthread_mutex_unlock(&x->lock);
		xina_efd_add(x->wake_fd);
		pthread_join(x->thread, NULL);
	}
	pthread_mutex_lock(&x->lock);
	if (x->running)
		xina_req_complete(x, x->running, -ECANCELED,
				  "handle closed (xina_close) while the call was in flight: its buffer holds part input, part result");
	x->running = NULL;
	for (r = x->q_head; r; r = r->qnext)
		xina_req_complete(x, r, -ECANCELED,
				  "handle closed (xina_close) before the call started: its buffer is untouched");
	x->q_head = x->q_tail = NULL;
	for (r = x->reqs; r; r = r->next)
		r->x = NULL;
	x->reqs = NULL;
	pthread_mutex_unlock(&x->lock);
	if (x->wake_fd >= 0)
		close(x->wake_fd);
	if (x->cfd >= 0)
		close(x->cfd);
	pthread_cond_destroy(&x->work_cv);
	pthread_cond_destroy(&x->done_cv);
	pthread_mutex_destroy(&x->lock);
}
