// SPDX-License-Identifier: GPL-2.0
/*
 * The map backend of xinactl: jobs and slot memory in the BPF maps of the
 * XDP fast path (bpf/xina_maps.h), pinned by name under the pin dir.
 *
 * The maps are created by loading the embedded BPF object once with every
 * map's pin path set: libbpf reuses a map already pinned there and pins a
 * new one otherwise.  Later runs open the pins.  Changes to the
 * configuration are serialised by an flock() on the pin dir, so that two
 * xinactl cannot hand out the same job index or slot range.
 *
 * The fast path reads the configuration without locks, so the order of
 * the writes matters: a job entry is written last on add and deleted
 * first on del, and everything it points to is ready before it appears.
 *
 * Keys: the job's secret stays here; the maps get the keys derived from
 * it (bpf/xina_auth.h): each member's in its xina_members entry, the
 * result key in the job entry, the NH key in xina_nhkeys.
 *
 * Uplinks (two levels, bpf/xina_maps.h struct xina_up): "job add ... up"
 * writes the upper job's keys (xina_ups, xina_upnh), the bucket that
 * leads the upper job's id back to the job (xina_upjobs), and the route
 * to the upper switch as the kernel has it now (the source address it
 * would pick, and the device holding that address); the upper join is
 * the fast path's, when the job's members join.  A job without an uplink
 * gets a zeroed xina_ups entry (its index may have had one).
 *
 * Epochs (bpf/xina_join.h): "job add" gives the job a random non-zero
 * epoch that nobody joined (xina_epochs), forgets every member's earlier
 * joins (xina_joins) and the time of its last round (xina_active); from
 * then on only the fast path changes them, as workers join.  "job del"
 * clears them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xina_clock.h"
#include "xina_maps.h"
#include "xinactl.h"
#include "bpf/xina.skel.h"

#define ROUND8(n)	(((n) + 7) & ~(size_t)7)

enum xm_map {
	XM_JOBS,
	XM_MEMBERS,
	XM_META,
	XM_VALS,
	XM_STATS,
	XM_NHKEYS,
	XM_EPOCHS,
	XM_JOINS,
	XM_ACTIVE,
	XM_UPS,
	XM_UPNH,
	XM_UPJOBS,
	XM_UPSTATS,
	XM_NR,
};

/* What this xinactl expects of each pinned map. */
static const struct xm_shape {
	const char	*name;
	__u32		type;
	__u32		key_size;
	__u32		value_size;
} xm_shapes[XM_NR] = {
	[XM_JOBS]	= { "xina_jobs", BPF_MAP_TYPE_ARRAY, sizeof(__u32),
			    sizeof(struct xina_job) },
	[XM_MEMBERS]	= { "xina_members", BPF_MAP_TYPE_ARRAY, sizeof(__u32),
			    sizeof(struct xina_member) },
	[XM_META]	= { "xina_meta", BPF_MAP_TYPE_ARRAY, sizeof(__u32),
			    sizeof(struct xina_meta) },
	[XM_VALS]	= { "xina_vals", BPF_MAP_TYPE_PERCPU_ARRAY,
			    sizeof(__u32), sizeof(struct xina_part) },
	[XM_STATS]	= { "xina_stats", BPF_MAP_TYPE_PERCPU_ARRAY,
			    sizeof(__u32), sizeof(struct xina_counters) },
	[XM_NHKEYS]	= { "xina_nhkeys", BPF_MAP_TYPE_ARRAY, sizeof(__u32),
			    sizeof(struct xina_nhkey) },
	[XM_EPOCHS]	= { "xina_epochs", BPF_MAP_TYPE_ARRAY, sizeof(__u32),
			    sizeof(struct xina_epoch) },
	[XM_JOINS]	= { "xina_joins", BPF_MAP_TYPE_ARRAY, sizeof(__u32),
			    sizeof(struct xina_join_mbr) },
	[XM_ACTIVE]	= { "xina_active", BPF_MAP_TYPE_PERCPU_ARRAY,
			    sizeof(__u32), sizeof(__u64) },
	[XM_UPS]	= { "xina_ups", BPF_MAP_TYPE_ARRAY, sizeof(__u32),
			    sizeof(struct xina_up) },
	[XM_UPNH]	= { "xina_upnh", BPF_MAP_TYPE_ARRAY, sizeof(__u32),
			    sizeof(struct xina_nhkey) },
	[XM_UPJOBS]	= { "xina_upjobs", BPF_MAP_TYPE_ARRAY, sizeof(__u32),
			    sizeof(struct xina_upjob) },
	[XM_UPSTATS]	= { "xina_upstats", BPF_MAP_TYPE_PERCPU_ARRAY,
			    sizeof(__u32), sizeof(struct xina_up_counters) },
};

_Static_assert(XINA_UPSTAT_MAX <= XINACTL_UP_STATS,
	       "struct xinactl_up holds every uplink counter");

struct xm {
	int	fd[XM_NR];
	int	lock_fd;	/* pin dir, flock()ed while we change things */
	int	ncpus;		/* possible CPUs: per-CPU value count */
	__u32	versions;	/* slot versions in xina_meta and xina_vals */
	/* what this open set up (XB_CREATE); xm_close() undoes it if unmake */
	struct xmaps_made made;
	bool	unmake;
};

/*
 * libbpf explains its failures (verifier log, pinned map mismatch) through
 * its print callback.  Keep the tail of it and show it only if loading
 * fails: on success it is noise.
 */
static char xm_log[16384];
static size_t xm_log_len;

static int xm_libbpf_print(enum libbpf_print_level level, const char *fmt,
			   va_list ap)
{
	char line[1024];
	size_t n;

	if (level == LIBBPF_DEBUG)
		return 0;
	n = vsnprintf(line, sizeof(line), fmt, ap);
	if (n >= sizeof(line))
		n = sizeof(line) - 1;
	if (xm_log_len + n >= sizeof(xm_log)) {
		/* keep the newest half: the cause is at the end */
		memmove(xm_log, xm_log + sizeof(xm_log) / 2,
			xm_log_len - sizeof(xm_log) / 2);
		xm_log_len -= sizeof(xm_log) / 2;
		if (xm_log_len + n >= sizeof(xm_log))
			xm_log_len = 0;
	}
	memcpy(xm_log + xm_log_len, line, n);
	xm_log_len += n;
	xm_log[xm_log_len] = '\0';
	return 0;
}

void xmaps_log_reset(void)
{
	xm_log_len = 0;
	xm_log[0] = '\0';
}

void xmaps_log_dump(void)
{
	if (xm_log_len)
		fprintf(stderr, "libbpf said:\n%s", xm_log);
}

int xmaps_not_loaded(struct xinactl *x)
{
	xerr("xina is not loaded: no maps under %s (run 'xinactl job add' or 'xinactl dev attach' first)",
	     x->pin_dir);
	return -ENOENT;
}

static bool is_bpffs(const char *dir)
{
	struct statfs st;

	return !statfs(dir, &st) && st.f_type == BPF_FS_MAGIC;
}

int xmaps_pin_dir_check(struct xinactl *x, bool quiet)
{
	if (is_bpffs(x->pin_dir))
		return 0;
	return quiet ? -ENOENT : xmaps_not_loaded(x);
}

static int mkdir_p(const char *dir)
{
	char path[PATH_MAX];
	char *p;

	if (strlen(dir) >= sizeof(path))
		return -ENAMETOOLONG;
	strcpy(path, dir);
	for (p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

/*
 * A bpffs mounted inside a private mount namespace (ip netns exec makes
 * one) is gone, with every pin on it, when the namespace goes.
 */
static bool in_private_mount_ns(void)
{
	struct stat self, init;

	if (stat("/proc/self/ns/mnt", &self) || stat("/proc/1/ns/mnt", &init))
		return false;
	return self.st_ino != init.st_ino || self.st_dev != init.st_dev;
}

/*
 * Mount a bpffs on the pin dir unless it is on one.  Two xinactl doing
 * this at once would stack two mounts (and hide the first one's pins), so
 * the mount is serialised by a lock on the directory under it, and the
 * check is repeated under the lock.
 */
static int xm_mount_bpffs(struct xinactl *x)
{
	int fd, ret = 0;

	fd = open(x->pin_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || flock(fd, LOCK_EX)) {
		ret = -errno;
		xerr("pin dir '%s': %s", x->pin_dir, strerror(-ret));
		goto out;
	}
	if (is_bpffs(x->pin_dir))
		goto out;
	if (mount("bpf", x->pin_dir, "bpf", 0, "mode=0700")) {
		ret = -errno;
		xerr("pin dir '%s' is not on a bpffs, and mounting one there failed: %s",
		     x->pin_dir, strerror(-ret));
		goto out;
	}
	if (in_private_mount_ns())
		xwarn("mounted a bpffs on %s in a private mount namespace (ip netns exec?): it disappears when this command ends; mount it in the main namespace first (mount -t bpf bpf %s)",
		      x->pin_dir, x->pin_dir);
out:
	if (fd >= 0)
		close(fd);
	return ret;
}

int xmaps_pin_dir_setup(struct xinactl *x)
{
	int ret;

	ret = mkdir_p(x->pin_dir);
	if (ret) {
		xerr("pin dir '%s' cannot be created: %s", x->pin_dir,
		     strerror(-ret));
		return ret;
	}
	if (is_bpffs(x->pin_dir))
		return 0;
	return xm_mount_bpffs(x);
}

int xmaps_lock(struct xinactl *x)
{
	int fd, ret;

	fd = open(x->pin_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		xerr("pin dir '%s': %s", x->pin_dir, strerror(-ret));
		return ret;
	}
	if (flock(fd, LOCK_EX)) {
		ret = -errno;
		xerr("cannot lock pin dir '%s': %s", x->pin_dir, strerror(-ret));
		close(fd);
		return ret;
	}
	return fd;
}

void xmaps_unlock(int lock_fd)
{
	if (lock_fd >= 0)
		close(lock_fd);		/* drops the flock */
}

/* Whether @map of @skel is pinned under the pin dir (xmaps_skel_open()). */
static bool xm_pinned(const struct xina *skel, const struct bpf_map *map)
{
	return !bpf_map__is_internal(map) && map != skel->maps.xina_addrs;
}

/*
 * Open the embedded object with every map pinned by name under the pin
 * dir and the number of CPUs set; the caller picks the programs to load.
 */
int xmaps_skel_open(struct xinactl *x, struct xina **skelp)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .pin_root_path = x->pin_dir);
	char path[PATH_MAX];
	struct bpf_map *map;
	struct xina *skel;
	__u64 cookie;
	int ncpus, ret;

	libbpf_set_print(xm_libbpf_print);
	ncpus = libbpf_num_possible_cpus();
	if (ncpus < 0) {
		xerr("cannot read the number of possible CPUs: %s",
		     strerror(-ncpus));
		return ncpus;
	}
	if (ncpus > XINA_MAX_CPUS) {
		xerr("%d possible CPUs, the fast path folds at most %d",
		     ncpus, XINA_MAX_CPUS);
		return -E2BIG;
	}
	/* xina.ko loaded: the fast path that aggregates through its kfunc */
	if (x->be == &xinactl_nl_backend)
		skel = xinactl_nl_skel_open(&opts);
	else
		skel = xina__open_opts(&opts);
	if (!skel) {
		ret = errno ? -errno : -ENOMEM;
		xerr("cannot open the embedded BPF object: %s", strerror(-ret));
		return ret;
	}
	skel->rodata->nr_cpus = ncpus;
	/* struct xina_mark: a random cookie per load, never 0 */
	if (getrandom(&cookie, sizeof(cookie), 0) != sizeof(cookie)) {
		ret = -errno;
		xerr("cannot draw the programs' mark cookie: %s",
		     strerror(errno));
		xina__destroy(skel);
		return ret;
	}
	/*
	 * Its first byte is the marked frame's destination MAC's: unicast
	 * (bit 0 clear) and locally administered (bit 1 set), so that no
	 * mark looks multicast to the stack (XINA_MARK_UP is in another
	 * byte), and never 0.
	 */
	skel->rodata->xina_cookie = (cookie | 2) & ~1ULL;
	bpf_object__for_each_map(map, skel->obj) {
		/*
		 * xina_addrs is not pinned: each port's programs get their
		 * own, with the addresses of the network namespace the port
		 * is in (dev_addrs_set()), so that switches in several
		 * namespaces that share a pin dir never take each other's
		 * packets (xm_pinned()).
		 */
		if (!xm_pinned(skel, map))
			continue;
		snprintf(path, sizeof(path), "%s/%s", x->pin_dir,
			 bpf_map__name(map));
		ret = bpf_map__set_pin_path(map, path);
		if (ret) {
			xerr("cannot use map %s at %s: %s", bpf_map__name(map),
			     path, strerror(-ret));
			xina__destroy(skel);
			return ret;
		}
	}
	*skelp = skel;
	return 0;
}

int xmaps_skel_load(struct xinactl *x, struct xina *skel)
{
	int ret;

	xmaps_log_reset();
	ret = xina__load(skel);
	if (!ret)
		return 0;
	xerr("loading the BPF object failed: %s%s", strerror(-ret),
	     ret == -EINVAL ?
	     " (maps pinned by another xina version under the pin dir?)" : "");
	xmaps_log_dump();
	return ret;
}

/* Create (or reuse) the pinned maps: load the object without programs. */
static int xm_create(struct xinactl *x)
{
	struct bpf_program *prog;
	struct xina *skel = NULL;
	int ret;

	ret = xmaps_skel_open(x, &skel);
	if (ret)
		return ret;
	bpf_object__for_each_program(prog, skel->obj)
		bpf_program__set_autoload(prog, false);
	ret = xmaps_skel_load(x, skel);
	xina__destroy(skel);
	return ret;
}

static int xm_check_shape(struct xinactl *x, enum xm_map i, int fd,
			  __u32 *max_entries)
{
	const struct xm_shape *s = &xm_shapes[i];
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int ret;

	ret = bpf_obj_get_info_by_fd(fd, &info, &len);
	if (ret) {
		xerr("cannot read map %s/%s: %s", x->pin_dir, s->name,
		     strerror(-ret));
		return ret;
	}
	if (info.type != s->type || info.key_size != s->key_size ||
	    info.value_size != s->value_size) {
		xerr("map %s/%s (type %u, key %u, value %u bytes) is not what this xinactl expects (type %u, key %u, value %u): pinned by another xina version? Detach all ports and remove %s/xina_*",
		     x->pin_dir, s->name, info.type, info.key_size,
		     info.value_size, s->type, s->key_size, s->value_size,
		     x->pin_dir);
		return -EINVAL;
	}
	*max_entries = info.max_entries;
	return 0;
}

static int xm_open_maps(struct xinactl *x, struct xm *m, bool quiet)
{
	__u32 entries[XM_NR];
	char path[PATH_MAX];
	int i, ret;

	for (i = 0; i < XM_NR; i++) {
		snprintf(path, sizeof(path), "%s/%s", x->pin_dir,
			 xm_shapes[i].name);
		m->fd[i] = bpf_obj_get(path);
		if (m->fd[i] < 0) {
			ret = -errno;
			if (ret == -ENOENT && i && !quiet) {
				xerr("map %s is missing, the others are there: pinned by an older xina? Detach all ports and remove %s/xina_*",
				     path, x->pin_dir);
				return ret;
			}
			if (ret == -ENOENT)
				return quiet ? ret : xmaps_not_loaded(x);
			xerr("cannot open pinned map %s: %s", path,
			     strerror(-ret));
			return ret;
		}
		ret = xm_check_shape(x, i, m->fd[i], &entries[i]);
		if (ret)
			return ret;
	}
	if (entries[XM_JOBS] != XINA_JOB_BUCKETS ||
	    entries[XM_MEMBERS] != XINA_MAX_JOBS * XINA_MAX_WORKERS) {
		xerr("maps %s/xina_jobs and xina_members have %u and %u entries, not %d and %d: pinned by another xina version?",
		     x->pin_dir, entries[XM_JOBS], entries[XM_MEMBERS],
		     XINA_JOB_BUCKETS, XINA_MAX_JOBS * XINA_MAX_WORKERS);
		return -EINVAL;
	}
	if (entries[XM_EPOCHS] < XINA_MAX_JOBS ||
	    entries[XM_ACTIVE] < XINA_MAX_JOBS ||
	    entries[XM_JOINS] != XINA_MAX_JOBS * XINA_MAX_WORKERS) {
		xerr("maps %s/xina_epochs, xina_active and xina_joins have %u, %u and %u entries, not %d, %d and %d: pinned by another xina version?",
		     x->pin_dir, entries[XM_EPOCHS], entries[XM_ACTIVE],
		     entries[XM_JOINS], XINA_MAX_JOBS, XINA_MAX_JOBS,
		     XINA_MAX_JOBS * XINA_MAX_WORKERS);
		return -EINVAL;
	}
	if (entries[XM_UPS] < XINA_MAX_JOBS || entries[XM_UPNH] < XINA_MAX_JOBS ||
	    entries[XM_UPSTATS] < XINA_MAX_JOBS ||
	    entries[XM_UPJOBS] != XINA_JOB_BUCKETS) {
		xerr("maps %s/xina_ups, xina_upnh, xina_upstats and xina_upjobs have %u, %u, %u and %u entries, not %d, %d, %d and %d: pinned by another xina version?",
		     x->pin_dir, entries[XM_UPS], entries[XM_UPNH],
		     entries[XM_UPSTATS], entries[XM_UPJOBS], XINA_MAX_JOBS,
		     XINA_MAX_JOBS, XINA_MAX_JOBS, XINA_JOB_BUCKETS);
		return -EINVAL;
	}
	if (entries[XM_STATS] < XINA_MAX_JOBS + 1) {
		xerr("map %s/xina_stats has %u entries, fewer than %d jobs + 1",
		     x->pin_dir, entries[XM_STATS], XINA_MAX_JOBS);
		return -EINVAL;
	}
	m->versions = entries[XM_META] < entries[XM_VALS] ?
		      entries[XM_META] : entries[XM_VALS];
	return 0;
}

/* Whether the maps are not pinned (their first one is how they are seen). */
bool xmaps_absent(struct xinactl *x)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", x->pin_dir,
		 xm_shapes[XM_JOBS].name);
	return access(path, F_OK) != 0;
}

/*
 * What is not set up yet under the pin dir: the directory, the bpffs on
 * it, the maps.  Taken before a command sets them up (the maps under the
 * pin dir's lock), so that xmaps_unmake() takes away only what it made.
 */
void xmaps_made_get(struct xinactl *x, struct xmaps_made *m)
{
	struct stat st;

	m->dir = stat(x->pin_dir, &st) || !S_ISDIR(st.st_mode);
	m->mount = !is_bpffs(x->pin_dir);
	m->maps = xmaps_absent(x);
}

/*
 * Undo the setup a command made (the maps it pinned, the bpffs it
 * mounted, the pin dir it created), still under the lock: the command
 * that set xina up was refused, and a refused command changes nothing.
 */
void xmaps_unmake(struct xinactl *x, const struct xmaps_made *m)
{
	char path[PATH_MAX];
	struct bpf_map *map;
	struct xina *skel;

	/* every map the object pins, the ones xinactl does not open too */
	skel = m->maps ? xina__open() : NULL;
	if (m->maps && !skel)
		xwarn("cannot open the embedded BPF object: the maps under %s stay",
		      x->pin_dir);
	if (skel) {
		bpf_object__for_each_map(map, skel->obj) {
			if (!xm_pinned(skel, map))
				continue;
			snprintf(path, sizeof(path), "%s/%s", x->pin_dir,
				 bpf_map__name(map));
			if (unlink(path) && errno != ENOENT)
				xwarn("cannot remove %s: %s", path,
				      strerror(errno));
		}
		xina__destroy(skel);
	}
	if (m->mount && umount2(x->pin_dir, MNT_DETACH))
		xwarn("cannot unmount the bpffs on %s: %s", x->pin_dir,
		      strerror(errno));
	else if (m->dir && rmdir(x->pin_dir))
		xwarn("cannot remove %s: %s", x->pin_dir, strerror(errno));
}

static void xm_close(struct xinactl *x)
{
	struct xm *m = x->be_priv;
	int i;

	if (!m)
		return;
	for (i = 0; i < XM_NR; i++)
		if (m->fd[i] >= 0)
			close(m->fd[i]);
	if (m->unmake)
		xmaps_unmake(x, &m->made);
	xmaps_unlock(m->lock_fd);
	free(m);
	x->be_priv = NULL;
}

static int xm_open(struct xinactl *x, unsigned int flags)
{
	struct xm *m;
	int i, ret;

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	for (i = 0; i < XM_NR; i++)
		m->fd[i] = -1;
	m->lock_fd = -1;
	x->be_priv = m;

	m->ncpus = libbpf_num_possible_cpus();
	if (m->ncpus < 0) {
		ret = m->ncpus;
		xerr("cannot read the number of possible CPUs: %s",
		     strerror(-ret));
		goto err;
	}
	if (flags & XB_CREATE) {
		xmaps_made_get(x, &m->made);
		ret = xmaps_pin_dir_setup(x);
	} else {
		ret = xmaps_pin_dir_check(x, flags & XB_ABSENT_OK);
	}
	if (ret)
		goto err;
	if (flags & (XB_CREATE | XB_WRITE)) {
		m->lock_fd = xmaps_lock(x);
		if (m->lock_fd < 0) {
			ret = m->lock_fd;
			goto err;
		}
	}
	if (flags & XB_CREATE) {
		m->made.maps = xmaps_absent(x);
		ret = xm_create(x);
		if (ret)
			goto err;
	}
	ret = xm_open_maps(x, m, flags & XB_ABSENT_OK);
	if (ret)
		goto err;
	return 0;
err:
	xm_close(x);
	return ret;
}

/* ---- jobs --------------------------------------------------------------- */

/* Slot memory a job holds: its versions in xina_meta and every CPU's vals. */
static __u64 xm_mem_bytes(const struct xm *m, __u32 slots)
{
	return 2ULL * slots * (ROUND8(sizeof(struct xina_meta)) +
			       m->ncpus * ROUND8(sizeof(struct xina_part)));
}

/*
 * Find job @id: its entry in @j and its bucket in @bucket (either may be
 * NULL).  -ENOENT (no message) if there is none.
 */
static int xm_job_find(struct xm *m, __u32 id, struct xina_job *j,
		       __u32 *bucket)
{
	struct xina_job tmp;
	__u32 p, b;

	if (!id)
		return -ENOENT;
	for (p = 0; p < XINA_JOB_PROBES; p++) {
		b = xina_job_bucket(id, p);
		if (bpf_map_lookup_elem(m->fd[XM_JOBS], &b, &tmp))
			return -errno;
		if (tmp.id != id)
			continue;
		if (j)
			*j = tmp;
		if (bucket)
			*bucket = b;
		return 0;
	}
	return -ENOENT;
}

/* xm_job_find(), saying why not: no such job, or the map cannot be read. */
static int xm_job_find_say(struct xm *m, __u32 id, struct xina_job *j,
			   __u32 *bucket)
{
	int ret = xm_job_find(m, id, j, bucket);

	if (ret == -ENOENT)
		xerr("job %u does not exist", id);
	else if (ret)
		xerr("cannot read job %u: %s", id, strerror(-ret));
	return ret;
}

/* The uplink of job index @idx, if it has one, and its counters. */
static void xm_up_read(struct xm *m, __u32 idx, struct xinactl_up *out)
{
	size_t stride = ROUND8(sizeof(struct xina_up_counters));
	struct xina_up_counters *c;
	struct xina_up up;
	char *buf;
	int cpu;
	__u32 i;

	if (bpf_map_lookup_elem(m->fd[XM_UPS], &idx, &up) || !up.job)
		return;
	out->job = up.job;
	out->rank = up.rank;
	out->addr = up.addr;
	out->port = up.port;
	out->saddr = up.saddr;
	out->ifindex = up.ifindex;
	out->resend_us = up.resend_us;
	/* 32-bit reads of what the fast path changes under the lock */
	out->epoch = up.epoch;
	out->rack_epoch = up.rack_epoch;
	out->want = up.want;
	out->srtt_us = up.rtt.srtt_us;
	out->rttvar_us = up.rtt.rttvar_us;
	buf = calloc(m->ncpus, stride);
	if (!buf || bpf_map_lookup_elem(m->fd[XM_UPSTATS], &idx, buf))
		goto out;
	for (cpu = 0; cpu < m->ncpus; cpu++) {
		c = (struct xina_up_counters *)(buf + cpu * stride);
		for (i = 0; i < XINA_UPSTAT_MAX; i++)
			out->c[i] += c->c[i];
	}
out:
	free(buf);
	explicit_bzero(&up, sizeof(up));
}

/* Read job @id; -ENOENT (no message) if there is none. */
static int xm_job_read(struct xm *m, __u32 id, struct xinactl_job *job)
{
	struct xina_epoch ep;
	struct xina_member mv;
	struct xina_job j;
	__u32 rank, key;
	int ret;

	ret = xm_job_find(m, id, &j, NULL);
	if (ret)
		return ret;
	memset(job, 0, sizeof(*job));
	job->id = j.id;
	job->workers = j.workers;
	job->elems = j.elems;
	job->slots = j.slots;
	job->flags = j.flags;
	job->idx = j.idx;
	job->slot_base = j.slot_base;
	job->mem_bytes = xm_mem_bytes(m, j.slots);
	/* a 32-bit read of what the fast path changes under the lock */
	if (!bpf_map_lookup_elem(m->fd[XM_EPOCHS], &j.idx, &ep)) {
		job->has_epoch = true;
		job->epoch = ep.j.epoch;
		job->joined = xina_join_count(&ep.j);
		job->has_run = true;
		job->run = ep.j.run;
	}
	xm_up_read(m, j.idx, &job->up);
	for (rank = 0; rank < j.workers && rank < XINA_MAX_WORKERS; rank++) {
		key = j.idx * XINA_MAX_WORKERS + rank;
		if (bpf_map_lookup_elem(m->fd[XM_MEMBERS], &key, &mv))
			continue;
		job->member[rank].addr = mv.addr;
		job->member[rank].port = mv.port;
		job->member[rank].rport = mv.rport;
		job->member[rank].ifindex = mv.ifindex;
		memcpy(job->member[rank].mac, mv.mac, sizeof(mv.mac));
	}
	return 0;
}

static int xm_job_get(struct xinactl *x, __u32 id, struct xinactl_job *job)
{
	int ret;

	ret = xm_job_read(x->be_priv, id, job);
	if (ret == -ENOENT)
		xerr("job %u does not exist", id);
	else if (ret)
		xerr("cannot read job %u: %s", id, strerror(-ret));
	return ret;
}

/*
 * The rounds of job @id's current epoch with contributions and no result:
 * each slot version's meta read under its lock (BPF_F_LOCK), so that
 * round, count and seen bits are of one moment.
 */
static int xm_rounds_get(struct xinactl *x, __u32 id,
			 struct xinactl_rounds *rs)
{
	struct xm *m = x->be_priv;
	struct xinactl_round *rd;
	struct xina_meta meta;
	struct xina_epoch ep;
	struct xina_job j;
	__u32 i, r;
	int ret;

	ret = xm_job_find_say(m, id, &j, NULL);
	if (ret)
		return ret;
	if (bpf_map_lookup_elem(m->fd[XM_EPOCHS], &j.idx, &ep)) {
		ret = -errno;
		xerr("cannot read the epoch of job %u: %s", id, strerror(-ret));
		return ret;
	}
	rs->epoch = ep.j.epoch;
	rs->nr = 0;
	for (i = 0; i < 2 * j.slots && rs->nr < rs->max; i++) {
		__u32 key = j.slot_base + i;

		if (bpf_map_lookup_elem_flags(m->fd[XM_META], &key, &meta,
					      BPF_F_LOCK)) {
			ret = -errno;
			xerr("cannot read slot %u of job %u: %s", i / 2, id,
			     strerror(-ret));
			return ret;
		}
		if (!meta.epoch || meta.epoch != rs->epoch || meta.complete ||
		    !meta.claimed)
			continue;
		rd = &rs->r[rs->nr++];
		memset(rd, 0, sizeof(*rd));
		rd->slot = i / 2;
		rd->version = i & 1;
		rd->round = meta.round;
		rd->in = meta.claimed;
		rd->count = meta.count;
		rd->dtype = meta.dtype;
		rd->op = meta.op;
		for (r = 0; r < XINA_MAX_WORKERS; r++)
			if (meta.seen[r / 64] & (1ULL << (r % 64)))
				rd->seen[r / 8] |= 1u << (r % 8);
	}
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

/* Ids of all jobs, sorted. */
static int xm_job_ids(struct xm *m, __u32 *ids, __u32 max, __u32 *nr)
{
	struct xina_job j;
	__u32 b, n = 0;

	*nr = 0;
	for (b = 0; b < XINA_JOB_BUCKETS && n < max; b++) {
		if (bpf_map_lookup_elem(m->fd[XM_JOBS], &b, &j))
			return -errno;
		if (j.id)
			ids[n++] = j.id;
	}
	qsort(ids, n, sizeof(*ids), cmp_u32);
	*nr = n;
	return 0;
}

static int xm_job_walk(struct xinactl *x, xinactl_job_cb cb, void *arg)
{
	__u32 ids[XINA_JOB_BUCKETS], nr, i;
	struct xm *m = x->be_priv;
	struct xinactl_job *job;
	int ret;

	ret = xm_job_ids(m, ids, sizeof(ids) / sizeof(ids[0]), &nr);
	if (ret) {
		xerr("cannot list jobs: %s", strerror(-ret));
		return ret;
	}
	job = malloc(sizeof(*job));
	if (!job)
		return -ENOMEM;
	for (i = 0; i < nr; i++) {
		ret = xm_job_read(m, ids[i], job);
		if (ret == -ENOENT)	/* deleted meanwhile */
			continue;
		if (ret) {
			xerr("cannot read job %u: %s", ids[i], strerror(-ret));
			break;
		}
		ret = cb(x, job, arg);
		if (ret)
			break;
	}
	free(job);
	return ret;
}

/* Clear the member entries of job index @idx. */
static int xm_clear_members(struct xm *m, __u32 idx)
{
	struct xina_member zero = {};
	__u32 rank, key;

	for (rank = 0; rank < XINA_MAX_WORKERS; rank++) {
		key = idx * XINA_MAX_WORKERS + rank;
		if (bpf_map_update_elem(m->fd[XM_MEMBERS], &key, &zero,
					BPF_ANY))
			return -errno;
	}
	return 0;
}

struct xm_range {
	__u32	base;
	__u32	end;
};

static int cmp_range(const void *a, const void *b)
{
	return cmp_u32(&((const struct xm_range *)a)->base,
		       &((const struct xm_range *)b)->base);
}

/* What the existing jobs hold: stats indexes and slot version ranges. */
struct xm_usage {
	bool		idx_used[XINA_MAX_JOBS];
	struct xm_range	range[XINA_MAX_JOBS * 2];
	__u32		nr;
};

/* Job index @idx and @slots slots from version @base on, held; sorted. */
static void xm_usage_take(struct xm_usage *u, __u32 idx, __u32 base,
			  __u32 slots)
{
	if (u->nr >= sizeof(u->range) / sizeof(u->range[0]))
		return;
	if (idx < XINA_MAX_JOBS)
		u->idx_used[idx] = true;
	u->range[u->nr].base = base;
	u->range[u->nr].end = base + 2 * slots;
	u->nr++;
	qsort(u->range, u->nr, sizeof(u->range[0]), cmp_range);
}

/*
 * What the running jobs hold but the @ngone of @gone (about to be
 * deleted); a running job @id (0: none) is refused: it exists already.
 */
static int xm_usage_of(struct xm *m, __u32 id, const __u32 *gone,
		       unsigned int ngone, struct xm_usage *u)
{
	__u32 ids[XINA_JOB_BUCKETS], nr, i, k;
	struct xina_job j;
	int ret;

	ret = xm_job_ids(m, ids, sizeof(ids) / sizeof(ids[0]), &nr);
	if (ret) {
		xerr("cannot list jobs: %s", strerror(-ret));
		return ret;
	}
	memset(u, 0, sizeof(*u));
	for (i = 0; i < nr; i++) {
		if (id && ids[i] == id) {
			xerr("job %u already exists; delete it first ('xinactl job del %u')",
			     id, id);
			return -EEXIST;
		}
		for (k = 0; k < ngone && gone[k] != ids[i]; k++)
			;
		if (k < ngone || xm_job_find(m, ids[i], &j, NULL))
			continue;
		xm_usage_take(u, j.idx, j.slot_base, j.slots);
	}
	return 0;
}

static int xm_usage_read(struct xinactl *x, const struct xinactl_job *new,
			 struct xm_usage *u)
{
	return xm_usage_of(x->be_priv, new->id, NULL, 0, u);
}

static int xm_alloc_idx(const struct xm_usage *u, __u32 *idx)
{
	__u32 i;

	for (i = 0; i < XINA_MAX_JOBS; i++) {
		if (!u->idx_used[i]) {
			*idx = i;
			return 0;
		}
	}
	xerr("no free job slot: all %d jobs are in use", XINA_MAX_JOBS);
	return -ENOSPC;
}

/* First fit of @need contiguous slot versions among the existing jobs. */
static int xm_alloc_range(const struct xm *m, const struct xm_usage *u,
			  __u32 slots, __u32 *base)
{
	__u64 need = 2ULL * slots;
	__u32 cur = 0, largest = 0, free_total = 0, i;

	if (need > m->versions) {
		xerr("slots %u too many: slot memory holds %u slot versions, 2 per slot, at most %u slots",
		     slots, m->versions, m->versions / 2);
		return -ENOSPC;
	}
	for (i = 0; i <= u->nr; i++) {
		__u32 start = i < u->nr ? u->range[i].base : m->versions;

		if (start > cur) {
			if (start - cur >= need) {
				*base = cur;
				return 0;
			}
			largest = start - cur > largest ? start - cur : largest;
			free_total += start - cur;
		}
		if (i < u->nr && u->range[i].end > cur)
			cur = u->range[i].end;
	}
	xerr("no room for slots %u: it needs %llu contiguous slot versions, the largest free range has %u (%u of %u free)",
	     slots, (unsigned long long)need, largest, free_total, m->versions);
	return -ENOSPC;
}

static int xm_up_route(const struct xinactl_job *job, struct xina_up *up,
		       bool probe);

/*
 * The running jobs but @gone, then each of @add placed as xm_job_add()
 * would place it (the first free index, the first fit of its slot
 * versions), its uplink's route checked, writing nothing.
 */
static int xm_jobs_fit(struct xinactl *x, const __u32 *gone,
		       unsigned int ngone, const struct xinactl_job *const *add,
		       unsigned int nadd, unsigned int *bad)
{
	struct xm *m = x->be_priv;
	struct xm_usage *u;
	__u32 idx, base;
	unsigned int k;
	int ret;

	u = malloc(sizeof(*u));
	if (!u) {
		xerr("out of memory");
		return -ENOMEM;
	}
	ret = xm_usage_of(m, 0, gone, ngone, u);
	for (k = 0; k < nadd && !ret; k++) {
		struct xina_up up = {
			.addr = add[k]->up.addr, .port = add[k]->up.port,
		};

		ret = xm_alloc_idx(u, &idx);
		if (!ret)
			ret = xm_alloc_range(m, u, add[k]->slots, &base);
		if (!ret && add[k]->up.job)
			ret = xm_up_route(add[k], &up, false);
		if (ret)
			*bad = k;
		else
			xm_usage_take(u, idx, base, add[k]->slots);
	}
	free(u);
	return ret;
}

/* A fresh job starts from clean slot versions and counters. */
static int xm_zero_job(struct xm *m, __u32 idx, __u32 base, __u32 slots)
{
	size_t vals_sz = m->ncpus * ROUND8(sizeof(struct xina_part));
	size_t stats_sz = m->ncpus * ROUND8(sizeof(struct xina_counters));
	struct xina_meta meta = {};
	__u32 i, end = base + 2 * slots;
	int ret = 0;
	void *zero;

	zero = calloc(1, vals_sz > stats_sz ? vals_sz : stats_sz);
	if (!zero)
		return -ENOMEM;
	for (i = base; i < end; i++) {
		if (bpf_map_update_elem(m->fd[XM_META], &i, &meta, BPF_ANY) ||
		    bpf_map_update_elem(m->fd[XM_VALS], &i, zero, BPF_ANY)) {
			ret = -errno;
			goto out;
		}
	}
	if (bpf_map_update_elem(m->fd[XM_STATS], &idx, zero, BPF_ANY))
		ret = -errno;
out:
	free(zero);
	return ret;
}

/* No key of a deleted job stays in the maps (xina_nhkeys, xina_upnh). */
static int xm_clear_nhkey_in(struct xm *m, enum xm_map map, __u32 idx)
{
	struct xina_nhkey *zero;
	int ret = 0;

	zero = calloc(1, sizeof(*zero));
	if (!zero)
		return -ENOMEM;
	if (bpf_map_update_elem(m->fd[map], &idx, zero, BPF_ANY))
		ret = -errno;
	free(zero);
	return ret;
}

static int xm_clear_nhkey(struct xm *m, __u32 idx)
{
	return xm_clear_nhkey_in(m, XM_NHKEYS, idx);
}

/* The NH key of job index @idx, derived from @secret. */
static int xm_write_nhkey(struct xm *m, __u32 idx, __u32 id,
			  const __u8 *secret)
{
	struct xina_nhkey *nhk;
	int ret = 0;

	nhk = malloc(sizeof(*nhk));
	if (!nhk)
		return -ENOMEM;
	xina_derive_nh(secret, id, nhk->k, XINA_MAX_ELEMS);
	if (bpf_map_update_elem(m->fd[XM_NHKEYS], &idx, nhk, BPF_ANY))
		ret = -errno;
	explicit_bzero(nhk, sizeof(*nhk));
	free(nhk);
	return ret;
}

static int xm_write_members(struct xm *m, __u32 idx,
			    const struct xinactl_job *job)
{
	struct xina_member mv;
	__u32 rank, key;

	for (rank = 0; rank < job->workers; rank++) {
		if (!job->member[rank].addr)
			continue;	/* another rack's (an uplink's job) */
		memset(&mv, 0, sizeof(mv));
		mv.addr = job->member[rank].addr;
		mv.port = job->member[rank].port;
		xina_derive_key(job->secret, XINA_LABEL_MEMBER, job->id, rank,
				mv.key);
		key = idx * XINA_MAX_WORKERS + rank;
		if (bpf_map_update_elem(m->fd[XM_MEMBERS], &key, &mv, BPF_ANY))
			return -errno;
	}
	return 0;
}

/*
 * Forget the joins of job index @idx: nobody joined, no epoch.  @now_ns:
 * a new job's creation time (CLOCK_REALTIME): every member's record
 * starts there (xina_join_mbr_start(): a join captured from an earlier
 * job of the same id and secret is stale); 0 for a job that goes.
 */
static int xm_clear_joins(struct xm *m, __u32 idx, __u64 now_ns)
{
	struct xina_join_mbr jm = {};
	struct xina_epoch ep = {};
	__u32 rank, key;

	if (now_ns)
		xina_join_mbr_start(&jm, now_ns);
	for (rank = 0; rank < XINA_MAX_WORKERS; rank++) {
		key = idx * XINA_MAX_WORKERS + rank;
		if (bpf_map_update_elem(m->fd[XM_JOINS], &key, &jm, BPF_ANY))
			return -errno;
	}
	if (bpf_map_update_elem(m->fd[XM_EPOCHS], &idx, &ep, BPF_ANY))
		return -errno;
	return 0;
}

/*
 * A new job's epochs: a random one, never 0, that nobody joined, and no
 * round completed (so that its first joins are not answered busy).
 */
static int xm_write_epoch(struct xm *m, __u32 idx)
{
	struct xina_epoch ep = {};
	__u64 *zero;
	int ret = 0;

	ret = xm_clear_joins(m, idx, xina_realtime_ns());
	if (ret)
		return ret;
	zero = calloc(m->ncpus, ROUND8(sizeof(__u64)));
	if (!zero)
		return -ENOMEM;
	if (bpf_map_update_elem(m->fd[XM_ACTIVE], &idx, zero, BPF_ANY)) {
		ret = -errno;
		goto out;
	}
	while (!ep.j.epoch) {
		if (getrandom(&ep.j.epoch, sizeof(ep.j.epoch), 0) !=
		    sizeof(ep.j.epoch)) {
			ret = -errno;
			goto out;
		}
	}
	if (bpf_map_update_elem(m->fd[XM_EPOCHS], &idx, &ep, BPF_ANY))
		ret = -errno;
out:
	free(zero);
	return ret;
}

/*
 * Where the upper switch @up->addr is from here: the source address the
 * kernel picks for it (a UDP connect()), and the device holding that
 * address, which the fast path's route lookups start from.  With @probe,
 * an empty datagram to the discard port makes the kernel resolve the next
 * hop's neighbour entry, which bpf_fib_lookup() needs and never makes
 * itself; without, only the check (xm_jobs_fit()).
 */
static int xm_up_route(const struct xinactl_job *job, struct xina_up *up,
		       bool probe)
{
	struct sockaddr_in to = {
		.sin_family = AF_INET,
		.sin_addr.s_addr = up->addr,
		.sin_port = up->port,
	};
	char addr[INET_ADDRSTRLEN], src[INET_ADDRSTRLEN];
	struct sockaddr_in me = {};
	socklen_t len = sizeof(me);
	struct ifaddrs *ifa, *i;
	int fd, ret = 0;

	inet_ntop(AF_INET, &up->addr, addr, sizeof(addr));
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&to, sizeof(to)) ||
	    getsockname(fd, (struct sockaddr *)&me, &len)) {
		ret = -errno;
		xerr("job %u: no route to the upper switch %s: %s", job->id,
		     addr, strerror(-ret));
		goto out;
	}
	up->saddr = me.sin_addr.s_addr;
	inet_ntop(AF_INET, &up->saddr, src, sizeof(src));
	to.sin_port = htons(9);		/* discard */
	if (probe && !connect(fd, (struct sockaddr *)&to, sizeof(to)))
		send(fd, "", 0, 0);	/* best effort: no_route counts a miss */
	if (getifaddrs(&ifa)) {
		ret = -errno;
		xerr("job %u: cannot list the addresses of this network namespace: %s",
		     job->id, strerror(-ret));
		goto out;
	}
	for (i = ifa; i; i = i->ifa_next) {
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr ==
		    up->saddr) {
			up->ifindex = if_nametoindex(i->ifa_name);
			break;
		}
	}
	freeifaddrs(ifa);
	if (!up->ifindex || up->saddr == up->addr) {
		xerr("job %u: the route to the upper switch %s leaves from %s, %s",
		     job->id, addr, src, up->ifindex ?
		     "which is the upper switch itself" :
		     "an address no device of this network namespace holds");
		ret = -EINVAL;
	}
out:
	if (fd >= 0)
		close(fd);
	return ret;
}

/* The bucket of upper job @id in xina_upjobs (-ENOENT: none). */
static int xm_upjob_find(struct xm *m, __u32 id, struct xina_upjob *uj,
			 __u32 *bucket)
{
	struct xina_upjob tmp;
	__u32 p, b;

	for (p = 0; p < XINA_JOB_PROBES; p++) {
		b = xina_job_bucket(id, p);
		if (bpf_map_lookup_elem(m->fd[XM_UPJOBS], &b, &tmp))
			return -errno;
		if (tmp.up != id)
			continue;
		if (uj)
			*uj = tmp;
		*bucket = b;
		return 0;
	}
	return -ENOENT;
}

/*
 * The keys an uplink @up (its upper job and rank set) tags and checks
 * with, from the upper job's @secret: its member and result keys in @up,
 * the upper job's NH key in @nhk.  On add and on a new upper secret.
 */
static void xm_up_keys(const __u8 *secret, struct xina_up *up,
		       struct xina_nhkey *nhk)
{
	xina_derive_key(secret, XINA_LABEL_MEMBER, up->job, up->rank,
			up->kmine);
	xina_derive_key(secret, XINA_LABEL_RESULT, up->job, 0, up->kres);
	xina_derive_nh(secret, up->job, nhk->k, XINA_MAX_ELEMS);
}

/*
 * The uplink of a new job at index @idx (or none: a zeroed entry), written
 * before the job entry that makes the fast path use it.  The upper join is
 * the fast path's: no epoch yet, its first nonce above every earlier
 * one of this rank (CLOCK_REALTIME, as a worker's).
 */
static int xm_up_write(struct xm *m, __u32 idx, const struct xinactl_job *job)
{
	const struct xinactl_up *cu = &job->up;
	struct xina_up_counters *zc = NULL;
	struct xina_nhkey *nhk = NULL;
	struct xina_upjob uj = {};
	struct xina_up up = {};
	__u32 b, p;
	int ret;

	if (!cu->job)
		goto write;
	ret = xm_upjob_find(m, cu->job, &uj, &b);
	if (!ret) {
		xerr("job %u: upper job %u is the uplink of job %u already",
		     job->id, cu->job, uj.job);
		return -EEXIST;
	}
	if (ret != -ENOENT)
		goto err;
	up.job = cu->job;
	up.rank = cu->rank;
	up.addr = cu->addr;
	up.port = cu->port;
	up.resend_us = cu->resend_us;
	ret = xm_up_route(job, &up, true);
	if (ret)
		return ret;
	up.nonce = xina_realtime_ns();
	up.status = XINA_UP_PENDING;
	for (p = 0; p < XINA_JOB_PROBES; p++) {
		b = xina_job_bucket(cu->job, p);
		if (bpf_map_lookup_elem(m->fd[XM_UPJOBS], &b, &uj)) {
			ret = -errno;
			goto err;
		}
		if (!uj.up)
			break;
	}
	if (p == XINA_JOB_PROBES) {
		xerr("job %u: upper job id %u: the %d places of the uplink table it may use are taken",
		     job->id, cu->job, XINA_JOB_PROBES);
		return -ENOSPC;
	}
	nhk = malloc(sizeof(*nhk));
	zc = calloc(m->ncpus, ROUND8(sizeof(*zc)));
	if (!nhk || !zc) {
		ret = -ENOMEM;
		goto err;
	}
	xm_up_keys(cu->secret, &up, nhk);
	if (bpf_map_update_elem(m->fd[XM_UPNH], &idx, nhk, BPF_ANY) ||
	    bpf_map_update_elem(m->fd[XM_UPSTATS], &idx, zc, BPF_ANY)) {
		ret = -errno;
		goto err;
	}
	uj.up = cu->job;
	uj.job = job->id;
	if (bpf_map_update_elem(m->fd[XM_UPJOBS], &b, &uj, BPF_ANY)) {
		ret = -errno;
		goto err;
	}
write:
	ret = 0;
	if (bpf_map_update_elem(m->fd[XM_UPS], &idx, &up, BPF_ANY)) {
		ret = -errno;
		/*
		 * The bucket just written names an uplink that is not there,
		 * and xm_up_clear() finds buckets through it: clear it here.
		 */
		if (cu->job) {
			struct xina_upjob zuj = {};

			bpf_map_update_elem(m->fd[XM_UPJOBS], &b, &zuj, BPF_ANY);
		}
	}
err:
	if (ret)
		xerr("job %u: cannot write its uplink: %s", job->id,
		     strerror(-ret));
	if (nhk)
		explicit_bzero(nhk, sizeof(*nhk));
	free(nhk);
	free(zc);
	explicit_bzero(&up, sizeof(up));
	return ret;
}

/* Forget the uplink of job index @idx, if it has one. */
static int xm_up_clear(struct xm *m, __u32 idx)
{
	struct xina_upjob zuj = {};
	struct xina_up up = {};
	__u32 b;
	int ret;

	if (!bpf_map_lookup_elem(m->fd[XM_UPS], &idx, &up) && up.job &&
	    !xm_upjob_find(m, up.job, NULL, &b) &&
	    bpf_map_update_elem(m->fd[XM_UPJOBS], &b, &zuj, BPF_ANY))
		return -errno;
	memset(&up, 0, sizeof(up));
	ret = xm_clear_nhkey_in(m, XM_UPNH, idx);
	if (!ret && bpf_map_update_elem(m->fd[XM_UPS], &idx, &up, BPF_ANY))
		ret = -errno;
	return ret;
}

/* A free bucket for job @id among its probes. */
static int xm_alloc_bucket(struct xm *m, __u32 id, __u32 *bucket)
{
	struct xina_job j;
	__u32 p, b;

	for (p = 0; p < XINA_JOB_PROBES; p++) {
		b = xina_job_bucket(id, p);
		if (bpf_map_lookup_elem(m->fd[XM_JOBS], &b, &j))
			return -errno;
		if (!j.id) {
			*bucket = b;
			return 0;
		}
	}
	xerr("job id %u: the %d places of the job table it may use are taken by other jobs; choose another id",
	     id, XINA_JOB_PROBES);
	return -ENOSPC;
}

static int xm_job_add(struct xinactl *x, const struct xinactl_job *job)
{
	struct xm *m = x->be_priv;
	__u32 idx, base, bucket, r;
	struct xina_job j = {};
	struct xm_usage *u;
	int ret;

	u = malloc(sizeof(*u));
	if (!u)
		return -ENOMEM;
	ret = xm_usage_read(x, job, u);
	if (ret)
		goto out;
	ret = xm_alloc_idx(u, &idx);
	if (ret)
		goto out;
	ret = xm_alloc_range(m, u, job->slots, &base);
	if (ret)
		goto out;
	ret = xm_alloc_bucket(m, job->id, &bucket);
	if (ret)
		goto out;

	/* leftovers of a "job del" that died half way, then a clean start */
	ret = xm_clear_members(m, idx);
	if (!ret)
		ret = xm_zero_job(m, idx, base, job->slots);
	if (ret) {
		xerr("job %u: cannot prepare its slot memory: %s", job->id,
		     strerror(-ret));
		goto out;
	}
	ret = xm_write_nhkey(m, idx, job->id, job->secret);
	if (!ret)
		ret = xm_write_members(m, idx, job);
	if (ret) {
		xerr("job %u: cannot write its members and keys: %s", job->id,
		     strerror(-ret));
		goto undo;
	}
	ret = xm_write_epoch(m, idx);
	if (ret) {
		xerr("job %u: cannot write its epoch: %s", job->id,
		     strerror(-ret));
		goto undo;
	}
	/* leftovers of an earlier job at this index, then this one's */
	ret = xm_up_clear(m, idx);
	if (ret)
		xerr("job %u: cannot clear its uplink: %s", job->id,
		     strerror(-ret));
	else
		ret = xm_up_write(m, idx, job);
	if (ret)
		goto undo;

	/* last: from here on the fast path sees the job */
	xina_derive_key(job->secret, XINA_LABEL_RESULT, job->id, 0, j.kres);
	j.id = job->id;
	j.idx = idx;
	j.slot_base = base;
	j.slots = job->slots;
	j.workers = job->workers;
	j.elems = job->elems;
	j.flags = job->flags;
	for (r = 0; r < job->workers; r++)
		j.members += !!job->member[r].addr;
	if (bpf_map_update_elem(m->fd[XM_JOBS], &bucket, &j, BPF_ANY)) {
		ret = -errno;
		xerr("job %u: cannot write it: %s", job->id, strerror(-ret));
		goto undo;
	}
	goto out;
undo:
	xm_clear_members(m, idx);
	xm_clear_joins(m, idx, 0);
	xm_up_clear(m, idx);
	xm_clear_nhkey(m, idx);
out:
	/* the first job, refused: the setup made for it goes as well */
	m->unmake = ret && m->made.maps;
	explicit_bzero(&j, sizeof(j));
	free(u);
	return ret;
}

/*
 * A new secret for job @id.  The three kinds of keys are replaced one
 * after the other: packets in flight meanwhile may fail to verify (and
 * are resent by their workers, which need the new key file anyway).
 */
static int xm_job_rekey(struct xinactl *x, __u32 id, const __u8 *secret)
{
	struct xm *m = x->be_priv;
	struct xina_member mv;
	__u32 bucket, rank, key;
	struct xina_job j;
	int ret;

	ret = xm_job_find_say(m, id, &j, &bucket);
	if (ret)
		return ret;
	ret = xm_write_nhkey(m, j.idx, id, secret);
	for (rank = 0; !ret && rank < j.workers; rank++) {
		key = j.idx * XINA_MAX_WORKERS + rank;
		if (bpf_map_lookup_elem(m->fd[XM_MEMBERS], &key, &mv)) {
			ret = -errno;
			break;
		}
		xina_derive_key(secret, XINA_LABEL_MEMBER, id, rank, mv.key);
		if (bpf_map_update_elem(m->fd[XM_MEMBERS], &key, &mv, BPF_ANY))
			ret = -errno;
	}
	if (!ret) {
		xina_derive_key(secret, XINA_LABEL_RESULT, id, 0, j.kres);
		if (bpf_map_update_elem(m->fd[XM_JOBS], &bucket, &j, BPF_ANY))
			ret = -errno;
	}
	explicit_bzero(&mv, sizeof(mv));
	explicit_bzero(&j, sizeof(j));
	if (ret)
		xerr("job %u: cannot write its new keys: %s (the job may hold a mix of old and new keys: set it again)",
		     id, strerror(-ret));
	return ret;
}

/*
 * A new upper secret for job @id's uplink: the upper job's NH key, then
 * the uplink's member and result keys, the entry read and written under
 * its lock (BPF_F_LOCK), so that the upper join state the fast path keeps
 * there is written back as it was read.  A partial tagged between the two
 * writes (or by a run of the fast path that read half of a key) fails the
 * upper switch's check and is sent again, as after a loss.  The upper
 * job's epoch stays: the upper switch keeps it across its own rekey.
 */
static int xm_job_uprekey(struct xinactl *x, __u32 id, const __u8 *secret)
{
	struct xm *m = x->be_priv;
	struct xina_nhkey *nhk;
	struct xina_up up;
	struct xina_job j;
	int ret;

	ret = xm_job_find_say(m, id, &j, NULL);
	if (ret)
		return ret;
	if (bpf_map_lookup_elem_flags(m->fd[XM_UPS], &j.idx, &up, BPF_F_LOCK)) {
		ret = -errno;
		xerr("cannot read the uplink of job %u: %s", id, strerror(-ret));
		return ret;
	}
	if (!up.job) {
		xerr("job %u has no uplink: 'upkeyfile' is the upper job's secret of an uplink",
		     id);
		ret = -EINVAL;
		goto out;
	}
	nhk = malloc(sizeof(*nhk));
	if (!nhk) {
		ret = -ENOMEM;
		goto out;
	}
	xm_up_keys(secret, &up, nhk);
	if (bpf_map_update_elem(m->fd[XM_UPNH], &j.idx, nhk, BPF_ANY) ||
	    bpf_map_update_elem(m->fd[XM_UPS], &j.idx, &up, BPF_F_LOCK))
		ret = -errno;
	explicit_bzero(nhk, sizeof(*nhk));
	free(nhk);
	if (ret)
		xerr("job %u: cannot write its uplink's new keys: %s (the uplink may hold a mix of old and new keys: set it again)",
		     id, strerror(-ret));
out:
	explicit_bzero(&up, sizeof(up));
	return ret;
}

/*
 * Wait until every run of the fast path that may still hold what was just
 * unlinked has ended.  The programs run as RCU read-side sections, and an
 * update of a map-in-map returns only after an RCU grace period
 * (maybe_wait_bpf_programs() in kernel/bpf/syscall.c): one update of a
 * throw-away ARRAY_OF_MAPS is that wait, from user space.  The maps are
 * made first (xm_sync_make()), before what is to be waited for changes,
 * so that what can fail fails before any change.
 */
struct xm_sync {
	int	inner, outer;
};

static int xm_sync_make(struct xm_sync *y)
{
	LIBBPF_OPTS(bpf_map_create_opts, o);
	__u32 k = 0;
	int ret;

	y->outer = -1;
	y->inner = bpf_map_create(BPF_MAP_TYPE_ARRAY, "xina_sync_in",
				  sizeof(k), sizeof(k), 1, NULL);
	if (y->inner < 0)
		return -errno;
	o.inner_map_fd = y->inner;
	y->outer = bpf_map_create(BPF_MAP_TYPE_ARRAY_OF_MAPS, "xina_sync",
				  sizeof(k), sizeof(k), 1, &o);
	if (y->outer < 0) {
		ret = -errno;
		close(y->inner);
		return ret;
	}
	return 0;
}

static void xm_sync_drop(struct xm_sync *y)
{
	close(y->outer);
	close(y->inner);
}

/* The wait; the maps go either way. */
static int xm_sync_wait(struct xm_sync *y)
{
	__u32 k = 0;
	int ret = 0;

	if (bpf_map_update_elem(y->outer, &k, &y->inner, BPF_ANY))
		ret = -errno;
	xm_sync_drop(y);
	return ret;
}

static int xm_job_del(struct xinactl *x, __u32 id)
{
	struct xm *m = x->be_priv;
	struct xina_job j, zero = {};
	struct xm_sync sync;
	__u32 bucket;
	int ret;

	ret = xm_job_find_say(m, id, &j, &bucket);
	if (ret)
		return ret;
	ret = xm_sync_make(&sync);
	if (ret) {
		xerr("cannot delete job %u: the maps to wait for its packets in flight cannot be made: %s",
		     id, strerror(-ret));
		return ret;
	}
	/* first: the fast path stops using the job's members and slots */
	if (bpf_map_update_elem(m->fd[XM_JOBS], &bucket, &zero, BPF_ANY)) {
		ret = -errno;
		xerr("cannot delete job %u: %s", id, strerror(-ret));
		xm_sync_drop(&sync);
		return ret;
	}
	/*
	 * Then no packet that found the job before is still in flight: its
	 * index and slot range may go to the next "job add" as soon as this
	 * returns, and a late add of the old job must not land in the new
	 * one's slot memory.
	 */
	ret = xm_sync_wait(&sync);
	if (ret) {
		xerr("job %u deleted, but waiting for the fast path's packets in flight failed (%s): do not add a job for a moment",
		     id, strerror(-ret));
		return ret;
	}
	ret = xm_clear_members(m, j.idx);
	if (!ret)
		ret = xm_clear_nhkey(m, j.idx);
	if (!ret)
		ret = xm_clear_joins(m, j.idx, 0);
	if (!ret)
		ret = xm_up_clear(m, j.idx);
	if (ret)
		xwarn("job %u deleted, but its members, keys, joins or uplink are left over (%s); the next job that gets its index replaces them",
		      id, strerror(-ret));
	return 0;
}

/* ---- counters ----------------------------------------------------------- */

static int xm_counters_sum(struct xm *m, __u32 idx, __u64 *sum, __u32 nr,
			   struct xinactl_stats *st)
{
	size_t stride = ROUND8(sizeof(struct xina_counters));
	struct xina_counters *c;
	char *buf;
	int cpu, ret = 0;
	__u32 i;

	buf = calloc(m->ncpus, stride);
	if (!buf)
		return -ENOMEM;
	if (bpf_map_lookup_elem(m->fd[XM_STATS], &idx, buf)) {
		ret = -errno;
		goto out;
	}
	memset(sum, 0, nr * sizeof(*sum));
	for (cpu = 0; cpu < m->ncpus; cpu++) {
		c = (struct xina_counters *)(buf + cpu * stride);
		for (i = 0; i < nr; i++)
			sum[i] += c->c[i];
		if (st && cpu < XINACTL_MAX_CPUS)
			st->rx_cpu[cpu] = c->c[XINA_STAT_RX];
	}
	if (st)
		st->ncpus = m->ncpus < XINACTL_MAX_CPUS ? m->ncpus :
			    XINACTL_MAX_CPUS;
out:
	free(buf);
	return ret;
}

static int xm_stats_get(struct xinactl *x, __u32 id, struct xinactl_stats *st)
{
	struct xm *m = x->be_priv;
	struct xina_job j;
	int ret;

	ret = xm_job_find_say(m, id, &j, NULL);
	if (ret)
		return ret;
	ret = xm_counters_sum(m, j.idx, st->c, XINA_STAT_MAX, st);
	if (ret)
		xerr("cannot read the counters of job %u: %s", id,
		     strerror(-ret));
	return ret;
}

static int xm_gstats_get(struct xinactl *x, struct xinactl_gstats *st)
{
	int ret;

	ret = xm_counters_sum(x->be_priv, XINA_MAX_JOBS, st->c,
			      XINA_GSTAT_MAX, NULL);
	if (ret)
		xerr("cannot read the switch counters: %s", strerror(-ret));
	return ret;
}

const struct xinactl_backend xinactl_maps_backend = {
	.name		= "maps",
	.open		= xm_open,
	.close		= xm_close,
	.job_add	= xm_job_add,
	.job_del	= xm_job_del,
	.job_rekey	= xm_job_rekey,
	.job_uprekey	= xm_job_uprekey,
	.jobs_fit	= xm_jobs_fit,
	.job_get	= xm_job_get,
	.job_walk	= xm_job_walk,
	.stats_get	= xm_stats_get,
	.gstats_get	= xm_gstats_get,
	.rounds_get	= xm_rounds_get,
};
