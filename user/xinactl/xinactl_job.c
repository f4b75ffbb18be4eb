// SPDX-License-Identifier: GPL-2.0
/*
 * xinactl job: add, delete, change and show aggregation jobs; genkey.
 *
 * "job add" validates the whole command line (ranges, every rank given
 * exactly once, addresses, the key file) before it hands the job to the
 * backend, so a bad command never reaches the configuration.
 *
 * Keys are never taken on the command line (where /proc/PID/cmdline shows
 * them to every user): a job's secret is in a key file (xina_keyfile.h),
 * created here with a new secret if it does not exist yet.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "xina_json.h"
#include "xina_keyfile.h"
#include "xina_names.h"
#include "xinactl.h"

#define JOB_DEF_SLOTS	128
#define JOB_DEF_ELEMS	256
#define JOB_MAX_SLOTS	0x7fffffffU	/* 2 versions per slot fit in a u32 */
#define JOB_MAX_ID	0xffffffffU
#define JOB_DEF_UPRESEND_MS	20
#define JOB_MAX_UPRESEND_MS	10000
#define JOB_MAX_STUCK_MS	3600000	/* job rounds ID stuck MS */

void xinactl_job_usage(FILE *f)
{
	fprintf(f,
		"Usage: xinactl [ OPTIONS ] job add ID workers N [ slots S ] [ elems E ] keyfile PATH member RANK ADDR[:PORT] [ member RANK ADDR[:PORT] ]... [ UPLINK ]\n"
		"       xinactl [ OPTIONS ] job set ID [ keyfile PATH ] [ upkeyfile UPATH ]\n"
		"       xinactl [ OPTIONS ] job del ID\n"
		"       xinactl [ OPTIONS ] job show [ ID ]\n"
		"       xinactl [ OPTIONS ] job rounds ID [ stuck MS ]\n"
		"       xinactl [ OPTIONS ] job help\n"
		"where  ID := 1..%u  N := 1..%d  S := 1..%u (default %d)\n"
		"       E := 1..%d (default %d)\n"
		"       PATH := key file of the job's secret, mode 0600; created\n"
		"               with a new secret if it does not exist\n"
		"       RANK := 0..N-1, each exactly once (with UPLINK: only this rack's)\n"
		"       ADDR := IPv4 address\n"
		"       PORT := UDP source port of the worker, 0..65535 (default 0: any)\n"
		"       UPLINK := up UADDR[:UPORT] upjob UJ uprank UR upkeyfile UPATH [ upresend MS ]\n"
		"               two levels (map backend only): the job's round results are\n"
		"               not sent to its members but go up, as the contribution of\n"
		"               rank UR of job UJ (secret in UPATH) at the upper switch\n"
		"               UADDR:UPORT (default port %d), and the upper job's results\n"
		"               come back down to every member.  The upper job needs at\n"
		"               least S slots and E elems; its member UR is this switch's\n"
		"               address toward UADDR, port %d.  A member's retransmission\n"
		"               sends the partial up again once the upper round trip's\n"
		"               timeout passed, at least MS ms (1..%d, default %d)\n"
		"       set:    a new secret for the job (keyfile) or for its uplink's\n"
		"               upper job (upkeyfile, never created); slots, counters\n"
		"               and epochs stay\n"
		"       rounds: the rounds of the job's current epoch that have\n"
		"               contributions but no result yet, and the ranks each\n"
		"               waits for; with stuck MS, only those open and unchanged\n"
		"               (same round, same contributions) MS ms later (1..%d):\n"
		"               stuck on the ranks they wait for\n",
		JOB_MAX_ID, XINA_MAX_WORKERS, JOB_MAX_SLOTS, JOB_DEF_SLOTS,
		XINA_MAX_ELEMS, JOB_DEF_ELEMS, XINA_UDP_PORT, XINA_UDP_PORT,
		JOB_MAX_UPRESEND_MS, JOB_DEF_UPRESEND_MS, JOB_MAX_STUCK_MS);
}

static int job_parse_id(const char *cmd, int argc, char **argv, __u32 *id)
{
	if (argc < 1) {
		xerr("%s: missing job ID; see 'xinactl job help'", cmd);
		return -EINVAL;
	}
	return xparse_u32("job ID", argv[0], 1, JOB_MAX_ID, id);
}

/* ADDR[:PORT], ADDR a unicast IPv4 address (the worker sends from it). */
int job_parse_addr(const char *s, struct xinactl_member *m)
{
	return job_parse_addr_of("member", 0, s, m);
}

/*
 * @s as ADDR[:PORT] of @what ("member", "upper switch": its messages);
 * PORT from @port_min (0 for a member: any port).
 */
int job_parse_addr_of(const char *what, __u32 port_min, const char *s,
		      struct xinactl_member *m)
{
	char buf[INET_ADDRSTRLEN + 6], name[32];
	const char *port;
	struct in_addr a;
	__u32 p = 0, h;
	char *colon;

	if (strlen(s) >= sizeof(buf))
		goto bad;
	strcpy(buf, s);
	colon = strchr(buf, ':');
	if (colon)
		*colon = '\0';
	/* the address first: "::1" is a bad address, not a bad port */
	if (inet_pton(AF_INET, buf, &a) != 1)
		goto bad;
	if (colon) {
		port = colon + 1;
		snprintf(name, sizeof(name), "%s port", what);
		if (xparse_u32(name, port, port_min, 65535, &p))
			return -EINVAL;
	}
	h = ntohl(a.s_addr);
	if (!h || h == INADDR_BROADCAST || IN_MULTICAST(h)) {
		xerr("%s address '%s' is not a unicast IPv4 address", what, s);
		return -EINVAL;
	}
	m->addr = a.s_addr;
	m->port = htons(p);
	return 0;
bad:
	xerr("%s address '%s' is not IPv4 ADDR[:PORT]", what, s);
	return -EINVAL;
}

static int job_key_refused(const char *cmd)
{
	xerr("%s: keys are not taken on the command line: keyfile PATH", cmd);
	return -EINVAL;
}

/*
 * The secret in key file @path; a missing file is created with a new one
 * (said on stderr: whoever runs the workers needs a copy), and *@created
 * set: xkeyfile_unmade() removes it if the change is then refused.
 */
int xkeyfile_load(const char *path, __u8 *secret, bool *created)
{
	char err[512];
	int ret;

	*created = false;
	ret = xina_keyfile_read(path, secret, err, sizeof(err));
	if (ret == -ENOENT) {
		ret = xina_keyfile_create(path, secret, err, sizeof(err));
		if (!ret) {
			fprintf(stderr, "xinactl: created key file %s with a new secret\n",
				path);
			*created = true;
		}
	}
	if (ret)
		xerr("%s", err);
	return ret;
}

/*
 * A key file this command created for a change the switch then refused
 * goes again: a refused command leaves nothing behind.
 */
static void xkeyfile_unmade(const char *path, bool created)
{
	if (!created)
		return;
	if (unlink(path))
		xwarn("cannot remove key file %s, created for the refused change: %s",
		      path, strerror(errno));
	else
		fprintf(stderr, "xinactl: removed key file %s again: the change was refused\n",
			path);
}

static int job_twice_in(const char *cmd, const char *keyword)
{
	xerr("%s: '%s' given twice", cmd, keyword);
	return -EINVAL;
}

static int job_twice(const char *keyword)
{
	return job_twice_in("job add", keyword);
}

static int job_parse_member(struct job_args *a, const char *rank_s,
			    const char *addr_s)
{
	__u32 rank;

	if (xparse_u32("rank", rank_s, 0, XINA_MAX_WORKERS - 1, &rank))
		return -EINVAL;
	if (a->rank[rank]) {
		xerr("rank %u given twice", rank);
		return -EINVAL;
	}
	if (job_parse_addr(addr_s, &a->job.member[rank]))
		return -EINVAL;
	a->rank[rank] = true;
	return 0;
}

/*
 * The members must be exactly the ranks 0..workers-1; a job with an
 * uplink (a rack) names those of its ranks that are its rack's, at least
 * one: the others contribute through other racks.
 */
int job_check_members(const struct job_args *a)
{
	__u32 r, n = 0;

	for (r = a->job.workers; r < XINA_MAX_WORKERS; r++) {
		if (a->rank[r]) {
			xerr("rank %u out of range 0..%u (workers %u)", r,
			     a->job.workers - 1, a->job.workers);
			return -ERANGE;
		}
	}
	for (r = 0; r < a->job.workers; r++)
		n += a->rank[r];
	if (a->job.up.job && n)
		return 0;
	for (r = 0; r < a->job.workers; r++) {
		if (!a->rank[r]) {
			xerr("job %u: rank %u missing: every rank 0..%u needs 'member RANK ADDR' (with an uplink: at least one)",
			     a->job.id, r, a->job.workers - 1);
			return -EINVAL;
		}
	}
	return 0;
}

bool job_up_word(const char *kw)
{
	return xmatches(kw, "up") || xmatches(kw, "upjob") ||
	       xmatches(kw, "uprank") || xmatches(kw, "upkeyfile") ||
	       xmatches(kw, "upresend");
}

/*
 * One keyword of UPLINK (job_up_word()) and its value, for command @cmd
 * (its messages).  upkeyfile's value is kept in @a->uppath, not read:
 * job_upkey_load() reads it once the whole is known to be right.
 */
int job_parse_up(struct job_args *a, const char *cmd, const char *kw,
		 const char *val)
{
	struct xinactl_up *up = &a->job.up;
	struct xinactl_member m;
	__u32 v;

	if (!strcmp(kw, "up")) {
		if (a->up)
			return job_twice_in(cmd, kw);
		if (job_parse_addr_of("upper switch", 1, val, &m))
			return -EINVAL;
		up->addr = m.addr;
		up->port = m.port ? m.port : htons(XINA_UDP_PORT);
		a->up = true;
	} else if (!strcmp(kw, "upjob")) {
		if (a->upjob)
			return job_twice_in(cmd, kw);
		if (xparse_u32("upper job ID", val, 1, JOB_MAX_ID, &up->job))
			return -EINVAL;
		a->upjob = true;
	} else if (!strcmp(kw, "uprank")) {
		if (a->uprank)
			return job_twice_in(cmd, kw);
		if (xparse_u32("upper rank", val, 0, XINA_MAX_WORKERS - 1, &v))
			return -EINVAL;
		up->rank = v;
		a->uprank = true;
	} else if (!strcmp(kw, "upkeyfile")) {
		if (a->upkeyfile)
			return job_twice_in(cmd, kw);
		a->uppath = val;
		a->upkeyfile = true;
	} else {
		if (a->upresend)
			return job_twice_in(cmd, kw);
		if (xparse_u32("upresend", val, 1, JOB_MAX_UPRESEND_MS, &v))
			return -EINVAL;
		up->resend_us = v * 1000;
		a->upresend = true;
	}
	return 0;
}

/* The upper job's secret: the upper switch's, so never made here. */
int job_upkey_load(const char *path, __u8 *secret)
{
	char err[512];

	if (xina_keyfile_read(path, secret, err, sizeof(err))) {
		xerr("upkeyfile: %s", err);
		return -EINVAL;
	}
	return 0;
}

/*
 * UPLINK: all of up, upjob, uprank and upkeyfile, or none of them (and no
 * upresend); the default upresend.
 */
int job_check_up(struct job_args *a, const char *cmd)
{
	static const char *const kw[] = { "up", "upjob", "uprank", "upkeyfile" };
	const bool given[] = { a->up, a->upjob, a->uprank, a->upkeyfile };
	unsigned int i, n = 0;

	for (i = 0; i < 4; i++)
		n += given[i];
	if (!n && !a->upresend)
		return 0;
	for (i = 0; i < 4; i++) {
		if (!given[i]) {
			xerr("%s: an uplink needs '%s' too (up UADDR[:UPORT] upjob UJ uprank UR upkeyfile UPATH [ upresend MS ]); see 'xinactl job help'",
			     cmd, kw[i]);
			return -EINVAL;
		}
	}
	if (!a->upresend)
		a->job.up.resend_us = JOB_DEF_UPRESEND_MS * 1000;
	return 0;
}

static int job_parse_add(struct job_args *a, int argc, char **argv)
{
	const char *cmd = "job add";
	__u32 v;

	if (job_parse_id(cmd, argc, argv, &a->job.id))
		return -EINVAL;
	a->job.slots = JOB_DEF_SLOTS;
	a->job.elems = JOB_DEF_ELEMS;

	for (argc--, argv++; argc > 0; argc--, argv++) {
		if (xmatches(argv[0], "workers")) {
			XNEXT_ARG(cmd);
			if (a->workers)
				return job_twice("workers");
			if (xparse_u32("workers", argv[0], 1, XINA_MAX_WORKERS, &v))
				return -EINVAL;
			a->job.workers = v;
			a->workers = true;
		} else if (xmatches(argv[0], "slots")) {
			XNEXT_ARG(cmd);
			if (a->slots)
				return job_twice("slots");
			if (xparse_u32("slots", argv[0], 1, JOB_MAX_SLOTS, &v))
				return -EINVAL;
			a->job.slots = v;
			a->slots = true;
		} else if (xmatches(argv[0], "elems")) {
			XNEXT_ARG(cmd);
			if (a->elems)
				return job_twice("elems");
			if (xparse_u32("elems", argv[0], 1, XINA_MAX_ELEMS, &v))
				return -EINVAL;
			a->job.elems = v;
			a->elems = true;
		} else if (xmatches(argv[0], "keyfile")) {
			XNEXT_ARG(cmd);
			if (a->keyfile)
				return job_twice("keyfile");
			a->keypath = argv[0];	/* read once all is checked */
			a->keyfile = true;
		} else if (xmatches(argv[0], "key")) {
			return job_key_refused(cmd);
		} else if (job_up_word(argv[0])) {
			XNEXT_ARG(cmd);
			if (job_parse_up(a, cmd, argv[-1], argv[0]))
				return -EINVAL;
		} else if (xmatches(argv[0], "member")) {
			if (argc < 3) {
				xerr("%s: 'member' needs RANK and ADDR[:PORT]; see 'xinactl job help'",
				     cmd);
				return -EINVAL;
			}
			if (job_parse_member(a, argv[1], argv[2]))
				return -EINVAL;
			argc -= 2;
			argv += 2;
		} else {
			return xunexpected(cmd, argv[0]);
		}
	}
	if (!a->workers) {
		xerr("%s: 'workers N' is required; see 'xinactl job help'", cmd);
		return -EINVAL;
	}
	if (!a->keyfile) {
		xerr("%s: 'keyfile PATH' is required (created with a new key if it does not exist); see 'xinactl job help'",
		     cmd);
		return -EINVAL;
	}
	if (job_check_up(a, cmd))
		return -EINVAL;
	if (a->uppath && job_upkey_load(a->uppath, a->job.up.secret))
		return -EINVAL;
	if (job_check_members(a))
		return -EINVAL;
	/* last: a missing key file is made, a new secret in it */
	if (xkeyfile_load(a->keypath, a->job.secret, &a->key_created))
		return -EINVAL;
	return 0;
}

static int job_add(struct xinactl *x, int argc, char **argv)
{
	struct job_args *a;
	int ret;

	/* a few KiB: keep it off the stack */
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	ret = job_parse_add(a, argc, argv);
	if (ret)
		goto out;
	ret = x->be->open(x, XB_CREATE);
	if (!ret) {
		ret = x->be->job_add(x, &a->job);
		x->be->close(x);
	}
	if (ret)
		xkeyfile_unmade(a->keypath, a->key_created);
out:
	explicit_bzero(a->job.secret, sizeof(a->job.secret));
	explicit_bzero(a->job.up.secret, sizeof(a->job.up.secret));
	free(a);
	return ret;
}

/* job set ID keyfile PATH: a new secret; the workers need the new file. */
static int job_set(struct xinactl *x, int argc, char **argv)
{
	const char *cmd = "job set";
	__u8 secret[XINA_SECRET_BYTES], upsecret[XINA_SECRET_BYTES];
	bool keyfile = false, upkeyfile = false, up, created = false;
	const char *keypath = NULL;
	__u32 id;
	int ret = -EINVAL;

	if (job_parse_id(cmd, argc, argv, &id))
		return -EINVAL;
	for (argc--, argv++; argc > 0; argc--, argv++) {
		up = xmatches(argv[0], "upkeyfile");
		if (!up && !xmatches(argv[0], "keyfile")) {
			ret = xmatches(argv[0], "key") ? job_key_refused(cmd) :
							 xunexpected(cmd, argv[0]);
			goto out;
		}
		if (argc < 2) {
			ret = xmissing(cmd, argv[0]);
			goto out;
		}
		if (up ? upkeyfile : keyfile) {
			ret = job_twice_in(cmd, argv[0]);
			goto out;
		}
		argc--, argv++;
		/* the upper secret is read, never made; the own one last */
		if (up && job_upkey_load(argv[0], upsecret))
			goto out;
		if (!up)
			keypath = argv[0];
		*(up ? &upkeyfile : &keyfile) = true;
	}
	if (!keyfile && !upkeyfile) {
		xerr("%s: nothing to change: 'keyfile PATH' or 'upkeyfile UPATH'; see 'xinactl job help'",
		     cmd);
		goto out;
	}
	if (upkeyfile && !x->be->job_uprekey) {
		xerr("%s: the %s backend has no uplinks: 'upkeyfile' needs the map backend",
		     cmd, x->be->name);
		goto out;
	}
	if (keyfile && xkeyfile_load(keypath, secret, &created))
		goto out;
	ret = x->be->open(x, XB_WRITE);
	if (!ret) {
		/* the uplink first: a job without one is refused before any change */
		if (upkeyfile)
			ret = x->be->job_uprekey(x, id, upsecret);
		if (!ret && keyfile)
			ret = x->be->job_rekey(x, id, secret);
		x->be->close(x);
	}
	if (ret)
		xkeyfile_unmade(keypath, created);
out:
	explicit_bzero(secret, sizeof(secret));
	explicit_bzero(upsecret, sizeof(upsecret));
	return ret;
}

/* genkey PATH: a new key file (never overwrites one). */
int xinactl_genkey(struct xinactl *x, int argc, char **argv)
{
	__u8 secret[XINA_SECRET_BYTES];
	char err[512];
	int ret;

	if (argc < 1 || xmatches(argv[0], "help")) {
		fprintf(argc < 1 ? stderr : stdout,
			"Usage: xinactl genkey PATH\n"
			"       writes a new job secret to key file PATH (mode 0600; PATH must not exist)\n");
		return argc < 1 ? -EINVAL : 0;
	}
	if (argc > 1)
		return xunexpected("genkey", argv[1]);
	ret = xina_keyfile_create(argv[0], secret, err, sizeof(err));
	explicit_bzero(secret, sizeof(secret));
	if (ret)
		xerr("%s", err);
	return ret;
}

static int job_del(struct xinactl *x, int argc, char **argv)
{
	__u32 id;
	int ret;

	if (job_parse_id("job del", argc, argv, &id))
		return -EINVAL;
	if (argc > 1)
		return xunexpected("job del", argv[1]);
	ret = x->be->open(x, XB_WRITE);
	if (ret)
		return ret;
	ret = x->be->job_del(x, id);
	x->be->close(x);
	return ret;
}

static void job_print_member(__u32 rank, const struct xinactl_member *m)
{
	char addr[INET_ADDRSTRLEN], text[INET_ADDRSTRLEN + 8], mac[18];
	char ifname[IF_NAMESIZE];

	inet_ntop(AF_INET, &m->addr, addr, sizeof(addr));
	if (m->port)
		snprintf(text, sizeof(text), "%s:%u", addr, ntohs(m->port));
	else
		snprintf(text, sizeof(text), "%s", addr);
	snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x",
		 m->mac[0], m->mac[1], m->mac[2], m->mac[3], m->mac[4],
		 m->mac[5]);

	xp_open_obj(NULL);
	xp_uint(XP_ANY, "rank", "\tmember %llu ", rank);
	xp_str(XP_JSON, "addr", NULL, addr);
	xp_uint(XP_JSON, "port", NULL, ntohs(m->port));
	xp_str(XP_TEXT, NULL, "%s", text);
	xp_str(XP_JSON, "mac", NULL, mac);
	xp_uint(XP_JSON, "ifindex", NULL, m->ifindex);
	xp_uint(XP_JSON, "rport", NULL, ntohs(m->rport));
	/* text shows what the fast path learned once it learned it */
	if (m->ifindex) {
		xp_str(XP_TEXT, NULL, " mac %s", mac);
		if (if_indextoname(m->ifindex, ifname))
			xp_str(XP_TEXT, NULL, " dev %s", ifname);
		else
			xp_uint(XP_TEXT, NULL, " ifindex %llu", m->ifindex);
		xp_uint(XP_TEXT, NULL, " rport %llu", ntohs(m->rport));
	}
	xp_nl();
	xp_close_obj();
}

/* Names of enum xina_upstat, in order (JSON keys: a stable API). */
static const char *const job_upstat_names[] = {
	"sent", "resent", "held", "results", "join_sent", "join_ok",
	"join_refused", "drop_foreign", "drop_auth", "drop_stale", "no_route",
	"no_neigh",
};

static void job_print_up(const struct xinactl_up *up)
{
	char addr[INET_ADDRSTRLEN], saddr[INET_ADDRSTRLEN];
	char ifname[IF_NAMESIZE] = "?";
	unsigned int i;

	inet_ntop(AF_INET, &up->addr, addr, sizeof(addr));
	inet_ntop(AF_INET, &up->saddr, saddr, sizeof(saddr));
	if_indextoname(up->ifindex, ifname);
	xp_open_obj("up");
	xp_str(XP_JSON, "addr", NULL, addr);
	xp_uint(XP_JSON, "port", NULL, ntohs(up->port));
	xp_str(XP_TEXT, NULL, "\tup %s", addr);
	xp_uint(XP_TEXT, NULL, ":%llu", ntohs(up->port));
	xp_uint(XP_ANY, "job", " upjob %llu", up->job);
	xp_uint(XP_ANY, "rank", " uprank %llu", up->rank);
	xp_uint(XP_ANY, "resend_ms", " upresend %llu", up->resend_us / 1000);
	xp_str(XP_ANY, "saddr", " from %s", saddr);
	xp_str(XP_ANY, "dev", " dev %s", ifname);
	xp_nl();
	xp_uint(XP_ANY, "epoch", "\tup epoch %llu", up->epoch);
	xp_uint(XP_ANY, "rack_epoch", " for epoch %llu", up->rack_epoch);
	xp_uint(XP_ANY, "want", " joining for %llu", up->want);
	xp_uint(XP_ANY, "srtt_us", " srtt %lluus", up->srtt_us);
	xp_uint(XP_ANY, "rttvar_us", " rttvar %lluus", up->rttvar_us);
	xp_nl();
	xp_text("\tup");
	for (i = 0; i < sizeof(job_upstat_names) / sizeof(job_upstat_names[0]); i++) {
		char fmt[32];

		snprintf(fmt, sizeof(fmt), " %s %%llu", job_upstat_names[i]);
		xp_uint(XP_ANY, job_upstat_names[i], fmt, up->c[i]);
	}
	xp_nl();
	xp_close_obj();
}

static int job_print(struct xinactl *x, const struct xinactl_job *job,
		     void *arg)
{
	__u32 r;

	xp_open_obj(NULL);
	xp_uint(XP_ANY, "id", "job %llu", job->id);
	xp_uint(XP_ANY, "workers", " workers %llu", job->workers);
	xp_uint(XP_ANY, "slots", " slots %llu", job->slots);
	xp_uint(XP_ANY, "elems", " elems %llu", job->elems);
	xp_uint(job->flags ? XP_ANY : XP_JSON, "flags", " flags 0x%llx",
		job->flags);
	xp_nl();
	xp_uint(XP_ANY, "idx", "\tidx %llu", job->idx);
	xp_uint(XP_ANY, "slot_base", " slot_base %llu", job->slot_base);
	xp_uint(XP_ANY, "mem_bytes", " mem_bytes %llu", job->mem_bytes);
	/* an older xina.ko tells neither */
	if (job->has_epoch) {
		xp_uint(XP_ANY, "epoch", " epoch %llu", job->epoch);
		xp_uint(XP_ANY, "joined", " joined %llu", job->joined);
	}
	if (job->has_run)
		xp_uint(XP_ANY, "run", " run %llu", job->run);
	xp_nl();
	if (job->up.job)
		job_print_up(&job->up);
	xp_open_arr("members");
	for (r = 0; r < job->workers; r++)
		if (job->member[r].addr)	/* an uplink's: its rack's */
			job_print_member(r, &job->member[r]);
	xp_close_arr();
	xp_close_obj();
	return 0;
}

/*
 * Job @id, read into a new *@job (freed by the caller, also on an error),
 * with the backend left open on success (closed by the caller).
 */
static int job_open_get(struct xinactl *x, __u32 id, struct xinactl_job **job)
{
	int ret;

	*job = calloc(1, sizeof(**job));
	if (!*job)
		return -ENOMEM;
	ret = x->be->open(x, 0);
	if (ret)
		return ret;
	ret = x->be->job_get(x, id, *job);
	if (ret)
		x->be->close(x);
	return ret;
}

static int job_show_one(struct xinactl *x, __u32 id)
{
	struct xinactl_job *job;
	int ret;

	ret = job_open_get(x, id, &job);
	if (ret)
		goto out;
	x->be->close(x);

	xp_open_obj(NULL);
	xp_str(XP_JSON, "backend", NULL, x->be->name);
	xp_open_arr("jobs");
	job_print(x, job, NULL);
	xp_close_arr();
	xp_close_obj();
out:
	free(job);
	return ret;
}

static int job_show(struct xinactl *x, int argc, char **argv)
{
	__u32 id;
	int ret;

	if (argc > 0) {
		if (job_parse_id("job show", argc, argv, &id))
			return -EINVAL;
		if (argc > 1)
			return xunexpected("job show", argv[1]);
		return job_show_one(x, id);
	}

	/* nothing set up yet is not an error here: there are no jobs */
	ret = x->be->open(x, XB_ABSENT_OK);
	if (ret && ret != -ENOENT)
		return ret;
	xp_open_obj(NULL);
	xp_str(XP_JSON, "backend", NULL, x->be->name);
	xp_open_arr("jobs");
	if (!ret) {
		ret = x->be->job_walk(x, job_print, NULL);
		x->be->close(x);
	} else {
		ret = 0;
	}
	xp_close_arr();
	xp_close_obj();
	return ret;
}

/* Rank @r is in @seen (XINA_ROUND_A_SEEN's layout). */
static bool job_seen(const __u8 *seen, __u32 r)
{
	return seen[r / 8] & (1u << (r % 8));
}

/*
 * " ranks 0-2,5" of the ranks of @job a round waits for (@seen: those
 * that are in), as text; the count of them returned.
 */
static __u32 job_waiting_text(const struct xinactl_job *job, const __u8 *seen,
			      char *buf, size_t size)
{
	size_t len = 0;
	__u32 r, first, n = 0, runs = 0;

	buf[0] = '\0';
	for (r = 0; r < job->workers; r++) {
		if (!job->member[r].addr || job_seen(seen, r))
			continue;
		first = r;
		while (r + 1 < job->workers && job->member[r + 1].addr &&
		       !job_seen(seen, r + 1))
			r++;
		n += r - first + 1;
		if (len >= size - 16)
			continue;	/* counted, not shown: "..." below */
		if (r == first)
			len += snprintf(buf + len, size - len, "%s%u",
					runs++ ? "," : "", first);
		else
			len += snprintf(buf + len, size - len, "%s%u-%u",
					runs++ ? "," : "", first, r);
	}
	if (len >= size - 16)
		snprintf(buf + len, size - len, ",...");
	return n;
}

static void job_print_round(const struct xinactl_job *job,
			    const struct xinactl_round *rd, __u32 expected)
{
	char text[256];
	__u32 r, n;

	n = job_waiting_text(job, rd->seen, text, sizeof(text));
	xp_open_obj(NULL);
	xp_uint(XP_ANY, "slot", "\tslot %llu", rd->slot);
	xp_uint(XP_JSON, "version", NULL, rd->version);
	xp_uint(XP_ANY, "round", " round %llu", rd->round);
	xp_str(XP_ANY, "dtype", " %s", xina_wire_dtype_name(rd->dtype));
	xp_str(XP_ANY, "op", " %s", xina_wire_op_name(rd->op));
	xp_uint(XP_ANY, "count", " %llu words:", rd->count);
	xp_uint(XP_ANY, "in", " %llu", rd->in);
	xp_uint(XP_TEXT, NULL, " of %llu in", expected);
	/* all in and not complete: the last add is running right now */
	xp_str(XP_TEXT, NULL, !n ? ", adding%s" : n == 1 ?
	       ", waiting for rank %s" : ", waiting for ranks %s", text);
	xp_open_arr("waiting");
	for (r = 0; r < job->workers; r++)
		if (job->member[r].addr && !job_seen(rd->seen, r))
			xp_uint(XP_JSON, NULL, NULL, r);
	xp_close_arr();
	xp_nl();
	xp_close_obj();
}

#define JOB_ROUNDS_TEXT_MAX	32	/* rounds listed in text output */

/*
 * Keep of @rs the rounds that are in @later unchanged (same slot version,
 * round and contributions in): open all the time between the two looks.
 */
static void job_rounds_stuck(struct xinactl_rounds *rs,
			     const struct xinactl_rounds *later)
{
	__u32 i, j = 0, k, n = 0;

	if (rs->epoch != later->epoch) {	/* a new run: nothing stayed */
		rs->nr = 0;
		return;
	}
	for (i = 0; i < rs->nr; i++) {
		const struct xinactl_round *a = &rs->r[i];

		/* both lists are in slot version order */
		for (k = j; k < later->nr; k++) {
			const struct xinactl_round *b = &later->r[k];

			if (b->slot > a->slot ||
			    (b->slot == a->slot && b->version >= a->version))
				break;
		}
		j = k;
		if (j < later->nr && later->r[j].slot == a->slot &&
		    later->r[j].version == a->version &&
		    later->r[j].round == a->round && later->r[j].in == a->in)
			rs->r[n++] = *a;
	}
	rs->nr = n;
}

/*
 * "job rounds ID": the rounds of the job's current epoch that have
 * contributions and no result yet, and which ranks each waits for, then
 * per rank how many of them wait for it.  A snapshot: a job at work has
 * rounds open for a moment.  One still open, with the same round number,
 * when looked at again ("stuck MS") is stuck: its missing ranks stopped, or their
 * packets do not reach the switch (their drop counters in "stats job ID"
 * and the workers' own stats tell which).
 */
static int job_rounds(struct xinactl *x, int argc, char **argv)
{
	struct xinactl_rounds rs = {}, later = {};
	struct xinactl_job *job;
	__u32 id, i, r, expected = 0, missing[XINA_MAX_WORKERS] = {};
	__u32 stuck_ms = 0;
	char addr[INET_ADDRSTRLEN];
	int ret;

	if (job_parse_id("job rounds", argc, argv, &id))
		return -EINVAL;
	if (argc > 1 && xmatches(argv[1], "stuck")) {
		if (argc < 3)
			return xmissing("job rounds", argv[1]);
		if (xparse_u32("stuck MS", argv[2], 1, JOB_MAX_STUCK_MS,
			       &stuck_ms))
			return -EINVAL;
		argc -= 2;
		argv += 2;
	}
	if (argc > 1)
		return xunexpected("job rounds", argv[1]);
	if (!x->be->rounds_get) {
		xerr("job rounds: the %s backend cannot show rounds",
		     x->be->name);
		return -EOPNOTSUPP;
	}
	ret = job_open_get(x, id, &job);
	if (ret)
		goto out;
	rs.max = 2 * job->slots;
	rs.r = calloc(rs.max, sizeof(*rs.r));
	ret = rs.r ? x->be->rounds_get(x, id, &rs) : -ENOMEM;
	/* stuck MS: a second look; only the rounds open in both count */
	if (!ret && stuck_ms) {
		later.max = rs.max;
		later.r = calloc(later.max, sizeof(*later.r));
		if (!later.r) {
			ret = -ENOMEM;
		} else {
			struct timespec ts = {
				.tv_sec = stuck_ms / 1000,
				.tv_nsec = (stuck_ms % 1000) * 1000000L,
			};

			while (nanosleep(&ts, &ts) && errno == EINTR)
				;
			ret = x->be->rounds_get(x, id, &later);
		}
		if (!ret)
			job_rounds_stuck(&rs, &later);
	}
	x->be->close(x);
	if (ret)
		goto out;

	for (r = 0; r < job->workers; r++)
		expected += !!job->member[r].addr;
	for (i = 0; i < rs.nr; i++)
		for (r = 0; r < job->workers; r++)
			if (job->member[r].addr && !job_seen(rs.r[i].seen, r))
				missing[r]++;

	xp_open_obj(NULL);
	xp_str(XP_JSON, "backend", NULL, x->be->name);
	xp_uint(XP_ANY, "job", "job %llu", job->id);
	xp_uint(XP_ANY, "epoch", " epoch %llu", rs.epoch);
	xp_uint(XP_JSON, "expected", NULL, expected);
	xp_uint(XP_ANY, "open", rs.nr == 1 ? ": %llu round open" :
					    ": %llu rounds open", rs.nr);
	if (stuck_ms)
		xp_uint(XP_ANY, "stuck_ms", " for %llu ms, unchanged (stuck)",
			stuck_ms);
	xp_nl();
	xp_open_arr("rounds");
	for (i = 0; i < rs.nr; i++) {
		if (i == JOB_ROUNDS_TEXT_MAX && !xp_json())
			xp_text("\t... %u more\n", rs.nr - i);
		if (i >= JOB_ROUNDS_TEXT_MAX && !xp_json())
			break;
		job_print_round(job, &rs.r[i], expected);
	}
	xp_close_arr();
	xp_open_arr("missing");
	for (r = 0; r < job->workers; r++) {
		const struct xinactl_member *m = &job->member[r];

		if (!missing[r])
			continue;
		inet_ntop(AF_INET, &m->addr, addr, sizeof(addr));
		xp_open_obj(NULL);
		xp_uint(XP_ANY, "rank", "\trank %llu", r);
		xp_str(XP_ANY, "addr", " %s", addr);
		xp_uint(m->port ? XP_ANY : XP_JSON, "port", ":%llu",
			ntohs(m->port));
		xp_uint(XP_ANY, "rounds", " missing from %llu", missing[r]);
		xp_uint(XP_TEXT, NULL, " of %llu", rs.nr);
		xp_text(rs.nr == 1 ? " open round" : " open rounds");
		xp_nl();
		xp_close_obj();
	}
	xp_close_arr();
	xp_close_obj();
out:
	free(later.r);
	free(rs.r);
	free(job);
	return ret;
}

static int job_help(struct xinactl *x, int argc, char **argv)
{
	xinactl_job_usage(stdout);
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(struct xinactl *x, int argc, char **argv);
} job_cmds[] = {
	{ "add",	job_add },
	{ "set",	job_set },
	{ "del",	job_del },
	{ "show",	job_show },
	{ "rounds",	job_rounds },
	{ "help",	job_help },
};

int xinactl_job(struct xinactl *x, int argc, char **argv)
{
	size_t i;

	if (argc < 1)
		return job_show(x, 0, NULL);
	for (i = 0; i < sizeof(job_cmds) / sizeof(job_cmds[0]); i++)
		if (xmatches(argv[0], job_cmds[i].name))
			return job_cmds[i].fn(x, argc - 1, argv + 1);
	xerr("job: unknown command '%s'; commands: add set del show rounds help",
	     argv[0]);
	return -EINVAL;
}
