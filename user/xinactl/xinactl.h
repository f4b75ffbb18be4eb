/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xinactl: the control tool of xina.
 *
 * The tool has one file per object (job, dev, stats) that parses the
 * command line, validates it completely and prints the result, and one
 * file per slot-memory backend that applies a validated request:
 *
 *   xinactl_maps.c   BPF maps pinned under the pin dir (no module needed)
 *   xinactl_nl.c     generic netlink family "xina" of xina.ko (libmnl)
 *
 * Exactly one backend is chosen per run, in xinactl_pick_backend().
 * xinactl_conf.c (apply, show-config) drives the objects' functions from
 * a configuration file.
 */
#ifndef XINACTL_H
#define XINACTL_H

#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>

#include "linux/xina.h"

#define XINACTL_VERSION		"0.1"

/* One member of a job, indexed by rank. */
struct xinactl_member {
	__be32	addr;		/* IPv4 address */
	__be16	port;		/* UDP port; 0: any */
	__u8	mac[6];		/* learned by the fast path (show only) */
	__u32	ifindex;	/* learned: switch port it is behind */
	__be16	rport;		/* learned: UDP port it last sent from */
};

#define XINACTL_UP_STATS	16	/* >= XINA_UPSTAT_MAX (bpf/xina_maps.h) */

/*
 * A job's uplink to an upper switch (two levels, map backend only): the
 * job's round results go up as rank @rank of upper job @job at
 * @addr:@port, and come back from there.  @job 0: no uplink.
 */
struct xinactl_up {
	__u32	job;		/* upper job id; 0: none */
	__u16	rank;		/* this job's rank in it */
	__be16	port;		/* the upper switch's xina port */
	__be32	addr;		/* the upper switch */
	__u32	resend_us;	/* a partial goes up again at most this often */
	/* the upper job's secret (from its key file): on add only */
	__u8	secret[XINA_SECRET_BYTES];
	/* filled in by the backend on show */
	__be32	saddr;		/* this switch's address toward @addr */
	__u32	ifindex;	/* the device the route to @addr leaves by */
	__u32	epoch;		/* upper epoch granted (0: none yet) */
	__u32	rack_epoch;	/* the job's epoch it stands for */
	__u32	want;		/* the job's epoch of an upper join in flight */
	__u32	srtt_us;	/* smoothed partial-to-result time */
	__u32	rttvar_us;	/* and its variation */
	__u64	c[XINACTL_UP_STATS];	/* enum xina_upstat */
};

/* A job as given to "job add" and as shown by "job show". */
struct xinactl_job {
	__u32	id;
	__u16	workers;
	__u16	elems;
	__u32	slots;
	__u32	flags;		/* XINA_JOB_F_* */
	/* the secret (from a key file): on add only, never shown */
	__u8	secret[XINA_SECRET_BYTES];
	/* filled in by the backend on show, ignored on add */
	__u32	idx;		/* stats index */
	__u32	slot_base;	/* first slot version (maps backend) */
	__u64	mem_bytes;	/* slot memory held by the job */
	bool	has_epoch;	/* the backend told @epoch and @joined */
	__u32	epoch;		/* the job's current epoch */
	__u16	joined;		/* members joined to it */
	bool	has_run;	/* the backend told @run */
	__u32	run;		/* the run its joins named (0: none yet) */
	struct xinactl_up up;
	struct xinactl_member member[XINA_MAX_WORKERS];
};

#define XINACTL_MAX_CPUS	256

struct xinactl_stats {
	__u64	c[XINA_STAT_MAX];	/* enum xina_stat */
	/* packets of the job received on each CPU (0 cpus: not known) */
	__u32	ncpus;
	__u64	rx_cpu[XINACTL_MAX_CPUS];
};

/* A round in progress on one slot version (job rounds). */
struct xinactl_round {
	__u32	slot;
	__u32	round;
	__u16	in;		/* contributions added so far */
	__u16	count;		/* words per contribution */
	__u8	version;	/* round & 1 */
	__u8	dtype;		/* enum xina_dtype */
	__u8	op;		/* enum xina_op */
	__u8	seen[XINA_ROUND_SEEN_BYTES];	/* as XINA_ROUND_A_SEEN */
};

/* The rounds in progress of a job: @r has room for @max (2 * slots). */
struct xinactl_rounds {
	__u32			epoch;	/* the job's current epoch */
	__u32			nr;
	__u32			max;
	struct xinactl_round	*r;
};

struct xinactl_gstats {
	__u64	c[XINA_GSTAT_MAX];	/* enum xina_gstat */
};

struct xinactl;

typedef int (*xinactl_job_cb)(struct xinactl *x, const struct xinactl_job *job,
			      void *arg);

/* Flags of xinactl_backend.open() */
enum {
	XB_WRITE	= 1 << 0,	/* will change the configuration: lock it */
	XB_CREATE	= 1 << 1,	/* set xina up if it is not (implies WRITE) */
	XB_ABSENT_OK	= 1 << 2,	/* -ENOENT without a message if not set up */
};

/*
 * A slot-memory backend.  Every operation prints its own error message
 * (it knows the cause best) and returns a negative errno.  Requests reach
 * it validated against the grammar and the limits of xina.h; the backend
 * checks what depends on its state (job exists, room for the slots) before
 * it changes anything, and undoes its earlier steps if a later one fails.
 */
struct xinactl_backend {
	const char *name;	/* "maps", "module" */
	int (*open)(struct xinactl *x, unsigned int flags);
	void (*close)(struct xinactl *x);
	int (*job_add)(struct xinactl *x, const struct xinactl_job *job);
	int (*job_del)(struct xinactl *x, __u32 id);
	/* a new secret for job @id (its keys are derived from it) */
	int (*job_rekey)(struct xinactl *x, __u32 id, const __u8 *secret);
	/*
	 * a new upper secret for the uplink of job @id (the upper job's
	 * keys are derived from it); NULL: the backend has no uplinks
	 */
	int (*job_uprekey)(struct xinactl *x, __u32 id, const __u8 *secret);
	int (*job_get)(struct xinactl *x, __u32 id, struct xinactl_job *job);
	/* calls @cb for every job, in ascending id order */
	int (*job_walk)(struct xinactl *x, xinactl_job_cb cb, void *arg);
	int (*stats_get)(struct xinactl *x, __u32 id, struct xinactl_stats *st);
	int (*gstats_get)(struct xinactl *x, struct xinactl_gstats *st);
	/* the rounds of job @id's current epoch still waiting for ranks */
	int (*rounds_get)(struct xinactl *x, __u32 id,
			  struct xinactl_rounds *rs);
	/*
	 * Would the @nadd jobs @add, added in this order once the @ngone
	 * jobs @gone are deleted, get a job index and slot memory?  0, or
	 * the error of the first that would not (its index in *@bad, the
	 * reason said); NULL: the backend cannot tell before it tries.
	 * Opened for reading by the caller.
	 */
	int (*jobs_fit)(struct xinactl *x, const __u32 *gone,
			unsigned int ngone, const struct xinactl_job *const *add,
			unsigned int nadd, unsigned int *bad);
};

struct xinactl {
	const char			*pin_dir;
	bool				json;
	bool				pretty;
	const struct xinactl_backend	*be;
	void				*be_priv;	/* the backend's state */
};

extern const struct xinactl_backend xinactl_maps_backend;
extern const struct xinactl_backend xinactl_nl_backend;	/* xinactl_nl.c */

/* xinactl.c: command line helpers shared by the objects */
void xinactl_pick_backend(struct xinactl *x);
/*
 * Where the input being parsed comes from: while set, xerr() and xwarn()
 * put "FILE:LINE: " before their message (xinactl apply sets it).
 */
void xerr_at(const char *file, unsigned int line);
void xerr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void xwarn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
bool xmatches(const char *arg, const char *word);
int xmissing(const char *cmd, const char *keyword);
int xunexpected(const char *cmd, const char *arg);
int xparse_u32(const char *what, const char *s, __u32 min, __u32 max,
	       __u32 *out);
int xparse_u64(const char *what, const char *s, __u64 *out);
int xparse_dev(const char *s, unsigned int *ifindex);
int xkeyfile_load(const char *path, __u8 *secret, bool *created);

/*
 * Move to the value of the keyword in argv[0]; return from the calling
 * command with an error naming the keyword if there is none.
 */
#define XNEXT_ARG(cmd)						\
	do {							\
		if (argc < 2)					\
			return xmissing(cmd, argv[0]);		\
		argc--;						\
		argv++;						\
	} while (0)

/* The objects: argv[0] is the command (or argc is 0). */
int xinactl_job(struct xinactl *x, int argc, char **argv);
int xinactl_dev(struct xinactl *x, int argc, char **argv);
int xinactl_stats(struct xinactl *x, int argc, char **argv);
int xinactl_apply(struct xinactl *x, int argc, char **argv);
int xinactl_show_config(struct xinactl *x, int argc, char **argv);
int xinactl_genkey(struct xinactl *x, int argc, char **argv);
void xinactl_job_usage(FILE *f);
void xinactl_dev_usage(FILE *f);
void xinactl_stats_usage(FILE *f);
void xinactl_conf_usage(FILE *f);

/* xinactl_job.c: ADDR[:PORT] of a member, checked as "job add" does */
int job_parse_addr(const char *s, struct xinactl_member *m);
int job_parse_addr_of(const char *what, __u32 port_min, const char *s,
		      struct xinactl_member *m);

/*
 * xinactl_job.c: a job's words as "job add" takes them and what was given,
 * and the checks of the whole, shared with apply's file (xinactl_conf.c).
 */
struct job_args {
	struct xinactl_job	job;
	bool			workers, slots, elems, keyfile;	/* given */
	bool			up, upjob, uprank, upkeyfile, upresend;
	bool			rank[XINA_MAX_WORKERS];		/* given */
	const char		*uppath;	/* upkeyfile's value */
	const char		*keypath;	/* keyfile's value */
	bool			key_created;	/* this command made it */
};

/* @kw is one of UPLINK's keywords: up upjob uprank upkeyfile upresend */
bool job_up_word(const char *kw);
/* one UPLINK keyword and its value; upkeyfile is not read (a->uppath) */
int job_parse_up(struct job_args *a, const char *cmd, const char *kw,
		 const char *val);
/* all of UPLINK or none; fills in the default upresend */
int job_check_up(struct job_args *a, const char *cmd);
/* the upper job's secret from key file @path (never created) */
int job_upkey_load(const char *path, __u8 *secret);
/* ranks 0..workers-1 each given, or only a rack's (at least one) with UPLINK */
int job_check_members(const struct job_args *a);

/* xinactl_dev.c: ports, for apply and show-config */
struct xdev_info {
	char		ifname[IF_NAMESIZE];
	unsigned int	ifindex;	/* 0: not in this network namespace */
	__u32		port;		/* the xina UDP port it was loaded for */
	__u32		prog_id;
	__u32		mode;		/* XDP_FLAGS_{DRV,SKB}_MODE; 0: not running */
	bool		tx;		/* the TC program that sends results runs */
};

typedef int (*xdev_cb)(struct xinactl *x, const struct xdev_info *d,
		       void *arg);

int xdev_attach(struct xinactl *x, const char *name, __u32 port,
		__u32 xdp_flags, bool *qdisc_made);
int xdev_detach(struct xinactl *x, const char *name, bool qdisc);
int xdev_walk(struct xinactl *x, xdev_cb cb, void *arg);
const char *xdev_mode_name(__u32 mode);

/* xinactl_maps.c: pin dir and BPF object, shared with xinactl_dev.c */
struct xina;		/* the skeleton of bpf/xina.bpf.c */
int xmaps_pin_dir_check(struct xinactl *x, bool quiet);
int xmaps_pin_dir_setup(struct xinactl *x);
int xmaps_lock(struct xinactl *x);
void xmaps_unlock(int lock_fd);
/* what a command set up under the pin dir, to undo if it is refused */
struct xmaps_made {
	bool	dir, mount, maps;
};
void xmaps_made_get(struct xinactl *x, struct xmaps_made *m);
bool xmaps_absent(struct xinactl *x);
void xmaps_unmake(struct xinactl *x, const struct xmaps_made *m);
int xmaps_skel_open(struct xinactl *x, struct xina **skelp);
/* xinactl_nl.c: whether xina.ko's family is registered (1, 0, -errno) */
int xinactl_nl_family_exists(void);
/* xinactl_nl.c: the module backend's object (xina_kf.bpf.o), same layout */
struct bpf_object_open_opts;
struct xina *xinactl_nl_skel_open(const struct bpf_object_open_opts *opts);
int xmaps_skel_load(struct xinactl *x, struct xina *skel);
int xmaps_not_loaded(struct xinactl *x);
void xmaps_log_reset(void);
void xmaps_log_dump(void);

#endif /* XINACTL_H */
