// SPDX-License-Identifier: GPL-2.0
/*
 * xinactl apply FILE, xinactl show-config: the configuration of the switch
 * (backend, ports, jobs) as a file, as wg has setconf and showconf.
 *
 * The format is the command line's grammar, one object per line, so that
 * a reader who knows "xinactl dev attach" and "xinactl job add" reads the
 * file without a manual, and a diff of two files shows one changed object
 * per changed line:
 *
 *	# comment
 *	backend { maps | module }
 *	dev DEV [ port UDPPORT ] [ mode { native | generic } ]
 *	job ID workers N [ slots S ] [ elems E ] keyfile PATH
 *		[ up UADDR[:UPORT] upjob UJ uprank UR upkeyfile UPATH [ upresend MS ] ]
 *		member RANK ADDR[:PORT]
 *
 * A line that starts with white space continues the object above it (a
 * job's uplink and members, one per line).  No quoting: words are split
 * at white space, and a word that starts with '#' starts a comment.
 *
 * A job's words mean what they mean to "xinactl job add", and are checked
 * by the same code (xinactl_job.c): an uplink (two levels, the map backend
 * only) needs all of up, upjob, uprank and upkeyfile, upresend only with
 * them (default 20 ms); a job with an uplink names only its rack's members,
 * at least one.  Unlike job add, PATH and UPATH must be absolute, and a
 * missing key file is not created.
 *
 * apply owns everything of the backend, as "wg setconf" owns a device:
 * afterwards the running ports (of this network namespace) and jobs are
 * exactly those of the file; others are detached and deleted.  An object
 * whose running state already matches is not touched (its slots and
 * counters stay); one that differs is replaced (deleted and added again).
 * A job's uplink is compared as the backend reads it back: upper job,
 * rank, address, port and upresend.  Secrets cannot be read back: a kept
 * job gets the secrets of its keyfile and upkeyfile again, in place (slots,
 * counters and epochs stay), which changes nothing if they are the same.
 * The whole file is parsed and checked first, key files and devices
 * included, and nothing changes unless all of it is right; every message
 * names FILE:LINE.  A port the kernel refuses while changing things (no
 * native XDP, ...) undoes the port changes before it (conf_do_devs()),
 * before any job is touched; a job it refuses (xina.ko's mem_limit, ...)
 * stops apply there, and it says so.
 *
 * Key files cannot be read back from the kernel.  apply keeps the path of
 * each job's key file (and upkeyfile), with the job's parameters, in
 * STATE_DIR/applied.conf (STATE_DIR: $XINA_STATE_DIR, default
 * /run/xinactl); show-config names a job's key files when the running job
 * still has the parameters it was applied with, and says that they are
 * unknown otherwise (a job added with "xinactl job add"); apply then
 * refuses that job until they are named.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/if_link.h>

#include "xina_json.h"
#include "xina_keyfile.h"
#include "xinactl.h"

#define CONF_STATE_DIR		"/run/xinactl"	/* /run/xina is the bpffs */
#define CONF_STATE_FILE		"applied.conf"
#define CONF_DEF_SLOTS		128	/* as "job add" */
#define CONF_DEF_ELEMS		256
#define CONF_MAX_SLOTS		0x7fffffffU
#define CONF_MODPROBE		"modprobe"
#define CONF_RMMOD_TRIES	100	/* conf_unload_module(): 10 s */
#define CONF_RMMOD_WAIT_MS	100

enum conf_backend {
	CONF_BE_ANY,		/* no "backend" line: the one in use */
	CONF_BE_MAPS,
	CONF_BE_MODULE,
};

/* One word of the file and the line it is on. */
struct conf_tok {
	char		*s;
	unsigned int	line;
};

/* One object: a line and its continuation lines. */
struct conf_obj {
	struct conf_tok	*tok;
	unsigned int	ntok;
	unsigned int	cap;
};

struct conf_dev {
	char		name[IF_NAMESIZE];
	__u32		port;
	__u32		xdp_flags;	/* XDP_FLAGS_{DRV,SKB}_MODE */
	unsigned int	line;
};

struct conf_job {
	struct xinactl_job	job;
	char			keyfile[PATH_MAX];
	char			upkeyfile[PATH_MAX];	/* "": no uplink */
	unsigned int		line;
};

struct conf {
	const char		*file;
	enum conf_backend	backend;
	unsigned int		backend_line;
	struct conf_dev		*dev;
	unsigned int		ndev;
	struct conf_job		*job;
	unsigned int		njob;
};

/* What conf_parse() checks besides the grammar. */
enum {
	CONF_F_SYSTEM	= 1 << 0,	/* devices exist, key files are good */
};

void xinactl_conf_usage(FILE *f)
{
	fprintf(f,
		"Usage: xinactl [ OPTIONS ] apply FILE [ dry-run ]\n"
		"       xinactl [ OPTIONS ] show-config\n"
		"where  FILE := a configuration file, '-' for standard input:\n"
		"         backend { maps | module }\n"
		"         dev DEV [ port UDPPORT ] [ mode { native | generic } ]\n"
		"         job ID workers N [ slots S ] [ elems E ] keyfile PATH\n"
		"                 [ up UADDR[:UPORT] upjob UJ uprank UR upkeyfile UPATH [ upresend MS ] ]\n"
		"                 member RANK ADDR[:PORT]\n"
		"                 ...\n"
		"       (a line starting with white space continues the object above;\n"
		"        '#' starts a comment; PATH and UPATH absolute; the words of a\n"
		"        job are those of 'xinactl job add', see 'xinactl job help'\n"
		"        and xinactl(8))\n");
}

static const char *conf_state_dir(void)
{
	const char *d = getenv("XINA_STATE_DIR");

	return d && *d ? d : CONF_STATE_DIR;
}

/* ---- words and objects --------------------------------------------------- */

static void conf_free(struct conf *c)
{
	if (c->job)
		explicit_bzero(c->job, c->njob * sizeof(*c->job));
	free(c->dev);
	free(c->job);
	memset(c, 0, sizeof(*c));
}

static void conf_objs_free(struct conf_obj *objs, unsigned int n)
{
	unsigned int i, k;

	for (i = 0; i < n; i++) {
		for (k = 0; k < objs[i].ntok; k++)
			free(objs[i].tok[k].s);
		free(objs[i].tok);
	}
	free(objs);
}

static int conf_obj_add_tok(struct conf_obj *o, const char *s, size_t len,
			    unsigned int line)
{
	struct conf_tok *t;

	if (o->ntok == o->cap) {
		t = realloc(o->tok, (o->cap * 2 + 8) * sizeof(*t));
		if (!t)
			return -ENOMEM;
		o->tok = t;
		o->cap = o->cap * 2 + 8;
	}
	o->tok[o->ntok].s = strndup(s, len);
	if (!o->tok[o->ntok].s)
		return -ENOMEM;
	o->tok[o->ntok++].line = line;
	return 0;
}

/* White space within a line (a CR of a CRLF line end too). */
static bool conf_blank(char c)
{
	return c != '\n' && isspace((unsigned char)c);
}

/*
 * Split @f into objects.  Errors are of the file's shape only (a
 * continuation line with nothing to continue, a NUL byte); the words are
 * judged by conf_parse().
 */
static int conf_read_objs(const char *file, FILE *f, struct conf_obj **objsp,
			  unsigned int *nobjs)
{
	struct conf_obj *objs = NULL, *o = NULL, *tmp;
	unsigned int n = 0, cap = 0, lineno = 0;
	size_t size = 0;
	char *line = NULL;
	ssize_t len;
	int ret = 0;

	while ((len = getline(&line, &size, f)) >= 0) {
		const char *p = line, *w;
		bool cont;

		lineno++;
		if (strlen(line) != (size_t)len) {
			xerr_at(file, lineno);
			xerr("a NUL byte: not a text file");
			ret = -EINVAL;
			break;
		}
		cont = *p == ' ' || *p == '\t';
		while (conf_blank(*p))
			p++;
		if (!*p || *p == '\n' || *p == '#')
			continue;
		if (cont && !o) {
			xerr_at(file, lineno);
			xerr("indented line with no object above it to continue");
			ret = -EINVAL;
			break;
		}
		if (!cont) {
			if (n == cap) {
				tmp = realloc(objs, (cap * 2 + 8) * sizeof(*tmp));
				if (!tmp) {
					ret = -ENOMEM;
					break;
				}
				objs = tmp;
				cap = cap * 2 + 8;
			}
			o = &objs[n++];
			memset(o, 0, sizeof(*o));
		}
		while (*p && *p != '\n' && *p != '#') {
			w = p;
			while (*p && !isspace((unsigned char)*p))
				p++;
			ret = conf_obj_add_tok(o, w, p - w, lineno);
			if (ret)
				break;
			while (conf_blank(*p))
				p++;
		}
		if (ret)
			break;
	}
	free(line);
	if (!ret && ferror(f)) {
		ret = -errno;
		xerr_at(NULL, 0);
		xerr("cannot read '%s': %s", file, strerror(-ret));
	}
	if (ret) {
		conf_objs_free(objs, n);
		return ret;
	}
	*objsp = objs;
	*nobjs = n;
	return 0;
}

/* ---- key files ----------------------------------------------------------- */

/*
 * The one place that reads a job's secret (xina_keyfile_read(): one line of
 * 32 lowercase hexadecimal digits in a regular file that neither group nor
 * others may access).  Unlike "job add ... keyfile", apply does not create
 * a missing key file: the workers need the same one, so it must exist.
 */
static int conf_key_load(const char *path, struct xinactl_job *job)
{
	char err[512];
	int ret;

	ret = xina_keyfile_read(path, job->secret, err, sizeof(err));
	if (ret)
		xerr("%s", err);
	return ret;
}

/* ---- parsing ------------------------------------------------------------- */

/* The value after keyword tok[*i], moving *i to it; NULL (said) if none. */
static const char *conf_value(const struct conf *c, const struct conf_obj *o,
			      unsigned int *i, const char *what)
{
	if (*i + 1 >= o->ntok) {
		xerr("%s: '%s' needs a value", what, o->tok[*i].s);
		return NULL;
	}
	(*i)++;
	xerr_at(c->file, o->tok[*i].line);
	return o->tok[*i].s;
}

static int conf_twice(const char *what, const char *keyword)
{
	xerr("%s: '%s' given twice", what, keyword);
	return -EINVAL;
}

static int conf_parse_backend(struct conf *c, const struct conf_obj *o)
{
	if (c->backend != CONF_BE_ANY) {
		xerr("'backend' given twice (first at line %u)", c->backend_line);
		return -EINVAL;
	}
	if (o->ntok != 2) {
		xerr("backend: needs exactly one of 'maps', 'module'");
		return -EINVAL;
	}
	xerr_at(c->file, o->tok[1].line);
	if (xmatches(o->tok[1].s, "maps")) {
		c->backend = CONF_BE_MAPS;
	} else if (xmatches(o->tok[1].s, "module")) {
		c->backend = CONF_BE_MODULE;
	} else {
		xerr("backend '%s' is neither maps nor module", o->tok[1].s);
		return -EINVAL;
	}
	c->backend_line = o->tok[0].line;
	return 0;
}

static int conf_parse_dev(struct conf *c, const struct conf_obj *o,
			  unsigned int flags)
{
	bool port = false, mode = false;
	unsigned int i, ifindex;
	struct conf_dev *d, *tmp;
	const char *v;

	if (o->ntok < 2) {
		xerr("dev: missing DEV");
		return -EINVAL;
	}
	xerr_at(c->file, o->tok[1].line);
	if (strlen(o->tok[1].s) >= IF_NAMESIZE) {
		xerr("device '%s': name longer than %d characters",
		     o->tok[1].s, IF_NAMESIZE - 1);
		return -EINVAL;
	}
	for (i = 0; i < c->ndev; i++) {
		if (!strcmp(c->dev[i].name, o->tok[1].s)) {
			xerr("dev %s given twice (first at line %u)",
			     o->tok[1].s, c->dev[i].line);
			return -EINVAL;
		}
	}
	if ((flags & CONF_F_SYSTEM) && xparse_dev(o->tok[1].s, &ifindex))
		return -ENODEV;

	tmp = realloc(c->dev, (c->ndev + 1) * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	c->dev = tmp;
	d = &c->dev[c->ndev];
	memset(d, 0, sizeof(*d));
	strcpy(d->name, o->tok[1].s);
	d->port = XINA_UDP_PORT;
	d->xdp_flags = XDP_FLAGS_DRV_MODE;
	d->line = o->tok[0].line;

	for (i = 2; i < o->ntok; i++) {
		const char *kw = o->tok[i].s;

		xerr_at(c->file, o->tok[i].line);
		if (xmatches(kw, "port")) {
			if (port)
				return conf_twice("dev", kw);
			v = conf_value(c, o, &i, "dev");
			if (!v || xparse_u32("port", v, 1, 65535, &d->port))
				return -EINVAL;
			port = true;
		} else if (xmatches(kw, "mode")) {
			if (mode)
				return conf_twice("dev", kw);
			v = conf_value(c, o, &i, "dev");
			if (!v)
				return -EINVAL;
			if (xmatches(v, "native")) {
				d->xdp_flags = XDP_FLAGS_DRV_MODE;
			} else if (xmatches(v, "generic")) {
				d->xdp_flags = XDP_FLAGS_SKB_MODE;
			} else {
				xerr("mode '%s' is neither native nor generic", v);
				return -EINVAL;
			}
			mode = true;
		} else {
			xerr("dev %s: unknown keyword '%s'", d->name, kw);
			return -EINVAL;
		}
	}
	c->ndev++;
	return 0;
}

/* What the words of a job gave ("job add"'s) and where. */
struct conf_job_args {
	struct job_args	ja;
	__u32		rank_line[XINA_MAX_WORKERS];
	unsigned int	upkeyfile_line;
	char		cmd[24];	/* "job ID", for job add's messages */
};

static int conf_parse_member(struct conf *c, const struct conf_obj *o,
			     unsigned int *i, struct conf_job *j,
			     struct conf_job_args *a)
{
	__u32 rank;

	if (*i + 2 >= o->ntok) {
		xerr("job %u: 'member' needs RANK and ADDR[:PORT]", j->job.id);
		return -EINVAL;
	}
	xerr_at(c->file, o->tok[*i + 1].line);
	if (xparse_u32("rank", o->tok[*i + 1].s, 0, XINA_MAX_WORKERS - 1,
		       &rank))
		return -EINVAL;
	if (a->ja.rank[rank]) {
		xerr("job %u: rank %u given twice (first at line %u)",
		     j->job.id, rank, a->rank_line[rank]);
		return -EINVAL;
	}
	xerr_at(c->file, o->tok[*i + 2].line);
	if (job_parse_addr(o->tok[*i + 2].s, &a->ja.job.member[rank]))
		return -EINVAL;
	a->ja.rank[rank] = true;
	a->rank_line[rank] = o->tok[*i].line;
	*i += 2;
	return 0;
}

static int conf_parse_job_words(struct conf *c, const struct conf_obj *o,
				struct conf_job *j, struct conf_job_args *a)
{
	struct xinactl_job *job = &a->ja.job;
	unsigned int i;
	const char *v;
	__u32 n;

	for (i = 2; i < o->ntok; i++) {
		const char *kw = o->tok[i].s;

		xerr_at(c->file, o->tok[i].line);
		if (xmatches(kw, "member")) {
			if (conf_parse_member(c, o, &i, j, a))
				return -EINVAL;
		} else if (xmatches(kw, "workers")) {
			if (a->ja.workers)
				return conf_twice("job", kw);
			v = conf_value(c, o, &i, "job");
			if (!v || xparse_u32("workers", v, 1, XINA_MAX_WORKERS, &n))
				return -EINVAL;
			job->workers = n;
			a->ja.workers = true;
		} else if (xmatches(kw, "slots")) {
			if (a->ja.slots)
				return conf_twice("job", kw);
			v = conf_value(c, o, &i, "job");
			if (!v || xparse_u32("slots", v, 1, CONF_MAX_SLOTS, &n))
				return -EINVAL;
			job->slots = n;
			a->ja.slots = true;
		} else if (xmatches(kw, "elems")) {
			if (a->ja.elems)
				return conf_twice("job", kw);
			v = conf_value(c, o, &i, "job");
			if (!v || xparse_u32("elems", v, 1, XINA_MAX_ELEMS, &n))
				return -EINVAL;
			job->elems = n;
			a->ja.elems = true;
		} else if (xmatches(kw, "keyfile")) {
			if (j->keyfile[0])
				return conf_twice("job", kw);
			v = conf_value(c, o, &i, "job");
			if (!v)
				return -EINVAL;
			if (v[0] != '/' || strlen(v) >= sizeof(j->keyfile)) {
				xerr("keyfile '%s' is not an absolute path", v);
				return -EINVAL;
			}
			strcpy(j->keyfile, v);
		} else if (job_up_word(kw)) {
			/* "job add"'s UPLINK, word by word */
			v = conf_value(c, o, &i, "job");
			if (!v || job_parse_up(&a->ja, a->cmd, kw, v))
				return -EINVAL;
			if (!xmatches(kw, "upkeyfile"))
				continue;
			/* as keyfile: read only against the system */
			if (v[0] != '/' || strlen(v) >= sizeof(j->upkeyfile)) {
				xerr("upkeyfile '%s' is not an absolute path", v);
				return -EINVAL;
			}
			strcpy(j->upkeyfile, v);
			a->upkeyfile_line = o->tok[i].line;
		} else if (xmatches(kw, "key")) {
			xerr("job %u: keys are not taken in the configuration: keyfile PATH",
			     job->id);
			return -EINVAL;
		} else {
			xerr("job %u: unknown keyword '%s'", job->id, kw);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * The members: no rank beyond workers (named at its line), then what
 * "job add" requires (job_check_members(): every rank 0..workers-1, or
 * with an uplink at least one, the rack's).
 */
static int conf_check_members(const struct conf *c, const struct conf_job *j,
			      const struct conf_job_args *a)
{
	__u32 r, workers = a->ja.job.workers;

	for (r = workers; r < XINA_MAX_WORKERS; r++) {
		if (a->ja.rank[r]) {
			xerr_at(c->file, a->rank_line[r]);
			xerr("job %u: rank %u out of range 0..%u (workers %u)",
			     j->job.id, r, workers - 1, workers);
			return -ERANGE;
		}
	}
	xerr_at(c->file, j->line);
	return job_check_members(&a->ja);
}

/*
 * What the whole file must hold besides each job: one uplink per upper
 * job id (the fast path finds a result coming down by its upper job).
 */
static int conf_check_up_twice(const struct conf *c, const struct conf_job *j)
{
	unsigned int i;

	if (!j->job.up.job)
		return 0;
	for (i = 0; i < c->njob; i++) {
		if (c->job[i].job.up.job == j->job.up.job) {
			xerr("job %u: upper job %u is the uplink of job %u already (line %u)",
			     j->job.id, j->job.up.job, c->job[i].job.id,
			     c->job[i].line);
			return -EEXIST;
		}
	}
	return 0;
}

static int conf_parse_job(struct conf *c, const struct conf_obj *o,
			  unsigned int flags)
{
	struct conf_job_args *a = NULL;
	struct conf_job *j, *tmp;
	unsigned int i;
	__u32 id;
	int ret;

	if (o->ntok < 2) {
		xerr("job: missing ID");
		return -EINVAL;
	}
	xerr_at(c->file, o->tok[1].line);
	if (xparse_u32("job ID", o->tok[1].s, 1, 0xffffffffU, &id))
		return -EINVAL;
	for (i = 0; i < c->njob; i++) {
		if (c->job[i].job.id == id) {
			xerr("job %u given twice (first at line %u)", id,
			     c->job[i].line);
			return -EINVAL;
		}
	}
	if (c->njob == XINA_MAX_JOBS) {
		xerr("job %u: more than %d jobs", id, XINA_MAX_JOBS);
		return -ENOSPC;
	}
	tmp = realloc(c->job, (c->njob + 1) * sizeof(*tmp));
	a = calloc(1, sizeof(*a));
	if (tmp)
		c->job = tmp;
	if (!tmp || !a) {
		free(a);
		return -ENOMEM;
	}
	j = &c->job[c->njob];
	memset(j, 0, sizeof(*j));
	j->job.id = id;
	j->line = o->tok[0].line;
	snprintf(a->cmd, sizeof(a->cmd), "job %u", id);
	a->ja.job.id = id;
	a->ja.job.slots = CONF_DEF_SLOTS;
	a->ja.job.elems = CONF_DEF_ELEMS;

	ret = conf_parse_job_words(c, o, j, a);
	if (ret)
		goto out;
	xerr_at(c->file, j->line);
	if (!a->ja.workers) {
		xerr("job %u: 'workers N' is required", id);
		ret = -EINVAL;
		goto out;
	}
	ret = job_check_up(&a->ja, a->cmd);
	if (ret)
		goto out;
	ret = conf_check_members(c, j, a);
	if (ret)
		goto out;
	j->job = a->ja.job;
	xerr_at(c->file, j->line);
	ret = conf_check_up_twice(c, j);
	if (ret)
		goto out;
	if (!j->keyfile[0]) {
		/* show-config's state file has none for unknown ones */
		if (flags & CONF_F_SYSTEM) {
			xerr("job %u: 'keyfile PATH' is required", id);
			ret = -EINVAL;
			goto out;
		}
	} else if (flags & CONF_F_SYSTEM) {
		ret = conf_key_load(j->keyfile, &j->job);
		if (ret)
			goto out;
	}
	if (j->upkeyfile[0] && (flags & CONF_F_SYSTEM)) {
		xerr_at(c->file, a->upkeyfile_line);
		ret = job_upkey_load(j->upkeyfile, j->job.up.secret);
		if (ret)
			goto out;
	}
	c->njob++;
out:
	if (ret)
		explicit_bzero(j, sizeof(*j));
	explicit_bzero(a, sizeof(*a));
	free(a);
	return ret;
}

static int conf_unknown(const char *what)
{
	if (xmatches(what, "member"))
		xerr("'member' outside a job: indent it below its 'job' line");
	else
		xerr("unknown object '%s'; objects: backend dev job", what);
	return -EINVAL;
}

static int conf_cmp_dev(const void *a, const void *b)
{
	return strcmp(((const struct conf_dev *)a)->name,
		      ((const struct conf_dev *)b)->name);
}

static int conf_cmp_job(const void *a, const void *b)
{
	__u32 x = ((const struct conf_job *)a)->job.id;
	__u32 y = ((const struct conf_job *)b)->job.id;

	return x < y ? -1 : x > y;
}

/*
 * Parse and check all of @file ('-': standard input) into @c.  Every
 * object is judged, so that one run names every mistake; any mistake
 * fails the whole file.
 */
static int conf_parse(const char *file, unsigned int flags, struct conf *c)
{
	unsigned int nobj = 0, i, errors = 0;
	struct conf_obj *objs = NULL;
	FILE *f;
	int ret;

	memset(c, 0, sizeof(*c));
	c->file = file;
	f = strcmp(file, "-") ? fopen(file, "re") : stdin;
	if (!f) {
		ret = -errno;
		xerr("cannot open '%s': %s", file, strerror(-ret));
		return ret;
	}
	ret = conf_read_objs(file, f, &objs, &nobj);
	if (f != stdin)
		fclose(f);
	if (ret)
		goto out;

	for (i = 0; i < nobj; i++) {
		const struct conf_obj *o = &objs[i];
		const char *what = o->tok[0].s;

		xerr_at(file, o->tok[0].line);
		if (xmatches(what, "backend"))
			ret = conf_parse_backend(c, o);
		else if (xmatches(what, "dev"))
			ret = conf_parse_dev(c, o, flags);
		else if (xmatches(what, "job"))
			ret = conf_parse_job(c, o, flags);
		else
			ret = conf_unknown(what);
		if (ret == -ENOMEM)
			goto out;
		errors += !!ret;
	}
	xerr_at(NULL, 0);
	if (errors) {
		xerr("%s: %u error%s%s", file, errors, errors > 1 ? "s" : "",
		     flags & CONF_F_SYSTEM ? "; nothing was changed" : "");
		ret = -EINVAL;
		goto out;
	}
	qsort(c->dev, c->ndev, sizeof(*c->dev), conf_cmp_dev);
	qsort(c->job, c->njob, sizeof(*c->job), conf_cmp_job);
	ret = 0;
out:
	xerr_at(NULL, 0);
	conf_objs_free(objs, nobj);
	if (ret)
		conf_free(c);
	return ret;
}

/* ---- printing ------------------------------------------------------------ */

static void conf_print_dev(FILE *f, const char *name, __u32 port, __u32 mode)
{
	fprintf(f, "dev %s port %u mode %s\n", name, port, xdev_mode_name(mode));
}

/*
 * A job in the file's format; @keyfile NULL: its key files are not known
 * (@upkeyfile is that of the uplink, if it has one).
 */
static void conf_print_job(FILE *f, const struct xinactl_job *job,
			   const char *keyfile, const char *upkeyfile)
{
	char addr[INET_ADDRSTRLEN];
	__u32 r;

	if (!keyfile)
		fprintf(f, "# job %u: key file%s not known (the job was not set by 'xinactl apply'); name %s before applying this\n",
			job->id, job->up.job ? "s" : "",
			job->up.job ? "them with 'keyfile PATH' and 'upkeyfile UPATH'" :
			"it with 'keyfile PATH'");
	fprintf(f, "job %u workers %u slots %u elems %u", job->id,
		job->workers, job->slots, job->elems);
	if (keyfile)
		fprintf(f, " keyfile %s", keyfile);
	fputc('\n', f);
	if (job->flags)
		fprintf(f, "\t# flags 0x%x (no keyword sets them)\n", job->flags);
	if (job->up.job) {
		inet_ntop(AF_INET, &job->up.addr, addr, sizeof(addr));
		fprintf(f, "\tup %s:%u upjob %u uprank %u", addr,
			ntohs(job->up.port), job->up.job, job->up.rank);
		if (keyfile && upkeyfile && upkeyfile[0])
			fprintf(f, " upkeyfile %s", upkeyfile);
		fprintf(f, " upresend %u\n", job->up.resend_us / 1000);
	}
	for (r = 0; r < job->workers && r < XINA_MAX_WORKERS; r++) {
		const struct xinactl_member *m = &job->member[r];

		if (!m->addr)	/* an uplink's job: another rack's rank */
			continue;

		inet_ntop(AF_INET, &m->addr, addr, sizeof(addr));
		fprintf(f, "\tmember %u %s", r, addr);
		if (m->port)
			fprintf(f, ":%u", ntohs(m->port));
		fputc('\n', f);
	}
}

/* ---- the running state --------------------------------------------------- */

/* Everything but the secret and what the fast path learned. */
static bool conf_job_shape_same(const struct xinactl_job *a,
				const struct xinactl_job *b)
{
	__u32 r;

	if (a->id != b->id || a->workers != b->workers ||
	    a->slots != b->slots || a->elems != b->elems ||
	    a->flags != b->flags)
		return false;
	/* the uplink as the backend reads it back (not its secret) */
	if (a->up.job != b->up.job || a->up.rank != b->up.rank ||
	    a->up.addr != b->up.addr || a->up.port != b->up.port ||
	    a->up.resend_us != b->up.resend_us)
		return false;
	for (r = 0; r < a->workers && r < XINA_MAX_WORKERS; r++)
		if (a->member[r].addr != b->member[r].addr ||
		    a->member[r].port != b->member[r].port)
			return false;
	return true;
}

struct conf_run {
	struct xinactl_job	*job;
	unsigned int		njob;
	struct xdev_info	*dev;
	unsigned int		ndev;
};

static void conf_run_free(struct conf_run *r)
{
	free(r->job);
	free(r->dev);
	memset(r, 0, sizeof(*r));
}

static int conf_run_job(struct xinactl *x, const struct xinactl_job *job,
			void *arg)
{
	struct conf_run *r = arg;
	struct xinactl_job *tmp;

	tmp = realloc(r->job, (r->njob + 1) * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	r->job = tmp;
	r->job[r->njob++] = *job;
	return 0;
}

static int conf_run_dev(struct xinactl *x, const struct xdev_info *d,
			void *arg)
{
	struct conf_run *r = arg;
	struct xdev_info *tmp;

	tmp = realloc(r->dev, (r->ndev + 1) * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	r->dev = tmp;
	r->dev[r->ndev++] = *d;
	return 0;
}

/* The ports with xina's pins and the jobs of the backend in use. */
static int conf_run_read(struct xinactl *x, struct conf_run *r)
{
	int ret;

	memset(r, 0, sizeof(*r));
	ret = xdev_walk(x, conf_run_dev, r);
	if (ret)
		goto err;
	ret = x->be->open(x, XB_ABSENT_OK);
	if (ret == -ENOENT)
		return 0;	/* nothing set up yet: no jobs */
	if (ret)
		goto err;
	ret = x->be->job_walk(x, conf_run_job, r);
	x->be->close(x);
	if (ret)
		goto err;
	return 0;
err:
	conf_run_free(r);
	return ret;
}

/* The key file paths of the last apply; an empty list if there is none. */
static void conf_state_read(struct conf *st)
{
	char path[PATH_MAX];

	memset(st, 0, sizeof(*st));
	snprintf(path, sizeof(path), "%s/" CONF_STATE_FILE, conf_state_dir());
	if (access(path, F_OK))
		return;
	if (conf_parse(path, 0, st))
		xwarn("ignoring %s: the key files of the jobs are not known", path);
}

/* The state file's entry of @job, if it still runs as applied. */
static const struct conf_job *conf_state_job(const struct conf *st,
					     const struct xinactl_job *job)
{
	unsigned int i;

	for (i = 0; i < st->njob; i++)
		if (conf_job_shape_same(&st->job[i].job, job))
			return &st->job[i];
	return NULL;
}

/*
 * Record @jobs, the jobs apply kept or added, with their key files.
 * Written to a temporary file and renamed, so that a reader sees the old
 * or the new state, never half of one.
 */
static int conf_state_write(const struct conf_job *jobs, unsigned int njob)
{
	const char *dir = conf_state_dir();
	char path[PATH_MAX], tmp[PATH_MAX];
	unsigned int i;
	int fd, ret;
	FILE *f;

	if (mkdir(dir, 0700) && errno != EEXIST) {
		ret = -errno;
		xerr("cannot create state dir '%s': %s", dir, strerror(-ret));
		return ret;
	}
	snprintf(path, sizeof(path), "%s/" CONF_STATE_FILE, dir);
	snprintf(tmp, sizeof(tmp), "%s/." CONF_STATE_FILE ".%d", dir,
		 (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		ret = -errno;
		xerr("cannot write '%s': %s", tmp, strerror(-ret));
		if (fd >= 0)
			close(fd);
		return ret;
	}
	fprintf(f, "# written by 'xinactl apply': the key files of the jobs it set\n");
	for (i = 0; i < njob; i++)
		conf_print_job(f, &jobs[i].job, jobs[i].keyfile,
			       jobs[i].upkeyfile);
	if (fclose(f) || rename(tmp, path)) {
		xerr("cannot write '%s': %s", path, strerror(errno));
		unlink(tmp);
		return -EIO;
	}
	return 0;
}

/* ---- show-config --------------------------------------------------------- */

int xinactl_show_config(struct xinactl *x, int argc, char **argv)
{
	struct conf_run r;
	unsigned int i;
	struct conf st;
	int ret;

	if (argc > 0 && xmatches(argv[0], "help")) {
		xinactl_conf_usage(stdout);
		return 0;
	}
	if (argc > 0)
		return xunexpected("show-config", argv[0]);
	if (x->json) {
		xerr("show-config prints the configuration file format; for JSON, see 'job show' and 'dev show'");
		return -EINVAL;
	}
	ret = conf_run_read(x, &r);
	if (ret)
		return ret;
	conf_state_read(&st);

	printf("# xinactl show-config: the running configuration (xinactl apply reads it)\n");
	printf("backend %s\n", x->be->name);
	for (i = 0; i < r.ndev; i++) {
		const struct xdev_info *d = &r.dev[i];

		if (!d->ifindex)
			printf("# dev %s: pinned under %s but not in this network namespace (apply leaves it alone)\n",
			       d->ifname, x->pin_dir);
		else if (!d->mode || !d->tx)
			printf("# dev %s: pinned, but xina's %s program does not run on it (apply replaces or detaches it)\n",
			       d->ifname, d->mode ? "TC" : "XDP");
		else
			conf_print_dev(stdout, d->ifname, d->port, d->mode);
	}
	for (i = 0; i < r.njob; i++) {
		const struct conf_job *sj = conf_state_job(&st, &r.job[i]);

		conf_print_job(stdout, &r.job[i], sj ? sj->keyfile : NULL,
			       sj ? sj->upkeyfile : NULL);
	}
	conf_free(&st);
	conf_run_free(&r);
	return 0;
}

/* ---- apply --------------------------------------------------------------- */

enum conf_act {
	CONF_KEEP,
	CONF_ADD,
	CONF_DEL,
	CONF_REPLACE,
};

static const char *const conf_act_name[] = {
	[CONF_KEEP]	= "keep",
	[CONF_ADD]	= "add",
	[CONF_DEL]	= "del",
	[CONF_REPLACE]	= "replace",
};

static void conf_say(enum conf_act act, const char *obj, const char *name,
		     __u32 id)
{
	xp_open_obj(NULL);
	xp_str(XP_ANY, "action", "%s", conf_act_name[act]);
	xp_text(" %s", obj);
	if (name)
		xp_str(XP_ANY, obj, " %s", name);
	else
		xp_uint(XP_ANY, obj, " %llu", id);
	xp_nl();
	xp_close_obj();
}

/* What apply does, worked out before anything is done. */
struct conf_plan {
	bool		load_module;
	enum conf_act	*dev_act;	/* per c->dev */
	enum conf_act	*job_act;	/* per c->job */
	const char	**dev_del;	/* running ports not in the file */
	unsigned int	ndev_del;
	__u32		*job_del;	/* running jobs not in the file */
	unsigned int	njob_del;
};

static void conf_plan_free(struct conf_plan *p)
{
	free(p->dev_act);
	free(p->job_act);
	free(p->dev_del);
	free(p->job_del);
}

static int conf_plan_make(const struct conf *c, const struct conf_run *r,
			  bool reattach, struct conf_plan *p)
{
	unsigned int i, k;

	p->dev_act = calloc(c->ndev + 1, sizeof(*p->dev_act));
	p->job_act = calloc(c->njob + 1, sizeof(*p->job_act));
	p->dev_del = calloc(r->ndev + 1, sizeof(*p->dev_del));
	p->job_del = calloc(r->njob + 1, sizeof(*p->job_del));
	if (!p->dev_act || !p->job_act || !p->dev_del || !p->job_del)
		return -ENOMEM;

	for (i = 0; i < c->ndev; i++) {
		const struct conf_dev *d = &c->dev[i];

		p->dev_act[i] = CONF_ADD;
		for (k = 0; k < r->ndev; k++) {
			const struct xdev_info *rd = &r->dev[k];

			if (strcmp(rd->ifname, d->name))
				continue;
			p->dev_act[i] = !reattach && rd->mode == d->xdp_flags &&
					rd->tx && rd->port == d->port ?
					CONF_KEEP : CONF_REPLACE;
		}
	}
	/* ports of other namespaces (no ifindex here) are not ours */
	for (k = 0; k < r->ndev; k++) {
		for (i = 0; i < c->ndev; i++)
			if (!strcmp(r->dev[k].ifname, c->dev[i].name))
				break;
		if (i == c->ndev && r->dev[k].ifindex)
			p->dev_del[p->ndev_del++] = r->dev[k].ifname;
	}

	for (i = 0; i < c->njob; i++) {
		const struct xinactl_job *j = &c->job[i].job;

		p->job_act[i] = CONF_ADD;
		for (k = 0; k < r->njob; k++) {
			if (r->job[k].id != j->id)
				continue;
			/* the secret cannot be read back: a kept job
			 * is given the file's (conf_do_jobs_add) */
			p->job_act[i] = conf_job_shape_same(&r->job[k], j) ?
					CONF_KEEP : CONF_REPLACE;
		}
	}
	for (k = 0; k < r->njob; k++) {
		for (i = 0; i < c->njob; i++)
			if (r->job[k].id == c->job[i].job.id)
				break;
		if (i == c->njob)
			p->job_del[p->njob_del++] = r->job[k].id;
	}
	return 0;
}

/* modprobe xina: the file wants the module backend and it is not loaded. */
static int conf_load_module(struct xinactl *x)
{
	const char *modprobe = getenv("XINA_MODPROBE");
	int status, ret;
	pid_t pid;

	if (!modprobe || !*modprobe)
		modprobe = CONF_MODPROBE;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		xerr("cannot run %s: %s", modprobe, strerror(-ret));
		return ret;
	}
	if (!pid) {
		execlp(modprobe, modprobe, "xina", (char *)NULL);
		fprintf(stderr, "Error: cannot run %s: %s\n", modprobe,
			strerror(errno));
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		xerr("backend module: '%s xina' failed; nothing was changed",
		     modprobe);
		return -ENOENT;
	}
	xinactl_pick_backend(x);
	if (x->be == &xinactl_maps_backend) {
		xerr("backend module: '%s xina' succeeded, but the module's netlink family is not there",
		     modprobe);
		return -ENOENT;
	}
	return 0;
}

static int conf_do_jobs_del(struct xinactl *x, const struct conf *c,
			    const struct conf_plan *p, bool dry)
{
	unsigned int i;
	int ret = 0;

	for (i = 0; i < p->njob_del; i++)
		conf_say(CONF_DEL, "job", NULL, p->job_del[i]);
	if (dry)
		return 0;
	if (!p->njob_del) {
		for (i = 0; i < c->njob; i++)
			if (p->job_act[i] == CONF_REPLACE)
				break;
		if (i == c->njob)
			return 0;
	}
	ret = x->be->open(x, XB_WRITE);
	if (ret)
		return ret;
	for (i = 0; i < p->njob_del && !ret; i++)
		ret = x->be->job_del(x, p->job_del[i]);
	for (i = 0; i < c->njob && !ret; i++)
		if (p->job_act[i] == CONF_REPLACE)
			ret = x->be->job_del(x, c->job[i].job.id);
	x->be->close(x);
	return ret;
}

/*
 * rmmod xina: this apply loaded it and stopped before any job.  Tried
 * again for a while: the programs the rollback detached hold the module
 * until the kernel frees them, after an RCU grace period.
 */
static int conf_unload_module(struct xinactl *x)
{
	int i, ret = 0;

	for (i = 0; i < CONF_RMMOD_TRIES; i++) {
		ret = syscall(SYS_delete_module, "xina", O_NONBLOCK) ? -errno : 0;
		if (ret != -EAGAIN && ret != -EBUSY)
			break;
		usleep(CONF_RMMOD_WAIT_MS * 1000);
	}
	if (ret)
		xwarn("module xina, loaded by this apply, stays loaded: 'rmmod xina': %s",
		      strerror(-ret));
	xinactl_pick_backend(x);
	return ret;
}

/* A port change made, undone if a later one is refused. */
struct conf_undo {
	const char		*name;
	const struct xdev_info	*old;		/* what ran before, or NULL */
	bool			attached;	/* the file's port runs */
	bool			qdisc;		/* its attach added clsact */
};

static const struct xdev_info *conf_run_dev_find(const struct conf_run *r,
						 const char *name)
{
	unsigned int k;

	for (k = 0; k < r->ndev; k++)
		if (!strcmp(r->dev[k].ifname, name))
			return &r->dev[k];
	return NULL;
}

/*
 * Put the ports back as they ran, after a port the kernel refused: the
 * ports this apply attached are detached, the module it loaded goes, and
 * the ports it detached run again (the map backend's programs if the
 * module was loaded for them).  A port that ran no program any more (mode
 * 0: xina's pins without its program) is left detached.
 */
static int conf_devs_undo(struct xinactl *x, const struct conf_undo *u,
			  unsigned int n, bool unload)
{
	const struct xinactl_backend *be = x->be;
	unsigned int i;
	int ret = 0;

	for (i = n; i-- > 0;)
		if (u[i].attached && xdev_detach(x, u[i].name, u[i].qdisc))
			ret = -EIO;
	if (unload && conf_unload_module(x))
		ret = -EIO;
	if (unload)
		be = &xinactl_maps_backend;
	for (i = n; i-- > 0;) {
		const struct xinactl_backend *cur = x->be;
		int err;

		if (!u[i].old || !u[i].old->mode)
			continue;
		x->be = be;
		err = xdev_attach(x, u[i].name, u[i].old->port, u[i].old->mode,
				  NULL);
		x->be = cur;
		if (err)
			ret = -EIO;
	}
	return ret;
}

static int conf_count_dev(struct xinactl *x, const struct xdev_info *d,
			  void *arg)
{
	(*(unsigned int *)arg)++;
	return 0;
}

/*
 * After the ports were put back: the pin dir, bpffs and maps this apply
 * set up for its first port go too, unless a port (of any namespace)
 * meanwhile uses them.
 */
static void conf_unmake(struct xinactl *x, const struct xmaps_made *made)
{
	unsigned int n = 0;
	int lock_fd;

	if (!made->maps)
		return;
	lock_fd = xmaps_lock(x);
	if (lock_fd < 0)
		return;
	if (!xdev_walk(x, conf_count_dev, &n) && !n)
		xmaps_unmake(x, made);
	xmaps_unlock(lock_fd);
}

/*
 * The ports: added, replaced, then detached.  If the kernel refuses one,
 * what was done before it is undone (conf_devs_undo()), and the jobs were
 * not touched yet: the running configuration is as it was (a port that
 * was replaced runs its old settings again, as new programs).
 */
static int conf_do_devs(struct xinactl *x, const struct conf *c,
			const struct conf_run *r, const struct conf_plan *p,
			bool dry)
{
	struct conf_undo *u = NULL;
	struct xmaps_made made;
	unsigned int i, nu = 0;
	int ret = 0, err;

	xmaps_made_get(x, &made);
	if (!dry) {
		u = calloc(p->ndev_del + c->ndev + 1, sizeof(*u));
		if (!u) {
			xerr("out of memory");
			return -ENOMEM;
		}
	}
	/* new ports first: a refused one is undone without touching others */
	for (i = 0; i < 2 * c->ndev && !ret; i++) {
		const struct conf_dev *d = &c->dev[i % c->ndev];
		enum conf_act act = p->dev_act[i % c->ndev];

		if (act != (i < c->ndev ? CONF_ADD : CONF_REPLACE))
			continue;
		conf_say(act, "dev", d->name, 0);
		if (dry)
			continue;
		if (act == CONF_REPLACE) {
			ret = xdev_detach(x, d->name, false);
			if (ret)
				break;
		}
		u[nu] = (struct conf_undo){
			.name = d->name,
			.old = act == CONF_REPLACE ?
			       conf_run_dev_find(r, d->name) : NULL };
		xerr_at(c->file, d->line);	/* the kernel's refusal */
		ret = xdev_attach(x, d->name, d->port, d->xdp_flags,
				  &u[nu].qdisc);
		xerr_at(NULL, 0);
		u[nu].attached = !ret;
		nu++;
	}
	for (i = 0; i < p->ndev_del && !ret; i++) {
		conf_say(CONF_DEL, "dev", p->dev_del[i], 0);
		if (dry)
			continue;
		ret = xdev_detach(x, p->dev_del[i], false);
		if (!ret)
			u[nu++] = (struct conf_undo){
				.name = p->dev_del[i],
				.old = conf_run_dev_find(r, p->dev_del[i]) };
	}
	if (ret) {
		err = conf_devs_undo(x, u, nu, p->load_module);
		if (!err)
			conf_unmake(x, &made);
		if (err)
			xerr("apply of %s stopped at a port (above), and undoing its port changes failed (above): 'xinactl dev show' shows the ports; no job was changed",
			     c->file);
		else
			xerr("apply of %s stopped at a port (above); the ports run as before%s; nothing was changed",
			     c->file, p->load_module ? ", module xina unloaded" : "");
	}
	free(u);
	return ret;
}

/*
 * Jobs added, replaced, or kept (and rekeyed); @st collects each, once
 * set, for the state file.
 */
static int conf_do_jobs_add(struct xinactl *x, const struct conf *c,
			    const struct conf_plan *p, bool dry,
			    struct conf_job *st, unsigned int *nst)
{
	bool open = false;
	unsigned int i;
	int ret = 0;

	for (i = 0; i < c->njob; i++) {
		bool keep = p->job_act[i] == CONF_KEEP;

		if (!keep)
			conf_say(p->job_act[i], "job", NULL, c->job[i].job.id);
		if (dry)
			continue;
		if (!open) {
			ret = x->be->open(x, XB_CREATE);
			if (ret)
				break;
			open = true;
		}
		/*
		 * A kept job keeps its slots and counters and gets the file's
		 * secrets, its own and its uplink's: the same one again
		 * changes nothing, another one replaces its keys (a running
		 * secret cannot be compared).
		 */
		if (keep) {
			const struct xinactl_job *j = &c->job[i].job;

			ret = x->be->job_rekey(x, j->id, j->secret);
			if (!ret && j->up.job)
				ret = x->be->job_uprekey(x, j->id,
							 j->up.secret);
			if (ret)
				break;
			st[(*nst)++] = c->job[i];
			continue;
		}
		ret = x->be->job_add(x, &c->job[i].job);
		if (ret)
			break;
		st[(*nst)++] = c->job[i];
	}
	if (open)
		x->be->close(x);
	return ret;
}

/* Add the old state's jobs that @st has no entry for. */
static void conf_state_merge_old(struct conf_job **st, unsigned int *nst)
{
	struct conf_job *tmp;
	unsigned int i, k;
	struct conf old;

	conf_state_read(&old);
	tmp = realloc(*st, (*nst + old.njob + 1) * sizeof(*tmp));
	if (tmp) {
		*st = tmp;
		for (i = 0; i < old.njob; i++) {
			for (k = 0; k < *nst; k++)
				if (tmp[k].job.id == old.job[i].job.id)
					break;
			if (k == *nst)
				tmp[(*nst)++] = old.job[i];
		}
	}
	conf_free(&old);
}

/* One apply at a time (per state dir): each step locks only itself. */
static int conf_lock(void)
{
	const char *dir = conf_state_dir();
	char path[PATH_MAX];
	int fd, ret;

	if (mkdir(dir, 0700) && errno != EEXIST) {
		ret = -errno;
		xerr("cannot create state dir '%s': %s", dir, strerror(-ret));
		return ret;
	}
	snprintf(path, sizeof(path), "%s/lock", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || flock(fd, LOCK_EX)) {
		ret = -errno;
		xerr("cannot lock '%s': %s", path, strerror(-ret));
		if (fd >= 0)
			close(fd);
		return ret;
	}
	return fd;
}

static int conf_check_backend(struct xinactl *x, const struct conf *c,
			      bool *load)
{
	bool module = x->be != &xinactl_maps_backend;

	*load = false;
	xerr_at(c->file, c->backend_line);
	if (c->backend == CONF_BE_MAPS && module) {
		xerr("backend maps, but module xina is loaded (it takes over from the maps): 'rmmod xina' first; nothing was changed");
		xerr_at(NULL, 0);
		return -EBUSY;
	}
	*load = c->backend == CONF_BE_MODULE && !module;
	/* two levels are the XDP fast path's: refused before any change */
	if (module || *load) {
		unsigned int i, n = 0;

		for (i = 0; i < c->njob; i++) {
			if (!c->job[i].job.up.job)
				continue;
			xerr_at(c->file, c->job[i].line);
			xerr("job %u: an uplink ('up') needs the map backend: xina.ko does not hand partials up",
			     c->job[i].job.id);
			n++;
		}
		if (n) {
			xerr_at(NULL, 0);
			xerr("%s: %u error%s; nothing was changed", c->file, n,
			     n > 1 ? "s" : "");
			return -EOPNOTSUPP;
		}
	}
	xerr_at(NULL, 0);
	return 0;
}

/*
 * Whether the jobs the plan adds (and re-adds) get a job index and slot
 * memory once those it deletes are gone, asked before any change: a job
 * replaced and then refused would be lost.  The map backend places them
 * in its maps and checks their uplinks' routes; xina.ko's limits are in
 * sysfs.  What another process changes in between is still found when
 * the job is added.
 */
static int conf_jobs_fit(struct xinactl *x, const struct conf *c,
			 const struct conf_plan *p)
{
	const struct xinactl_job **add;
	unsigned int i, nadd = 0, ngone = 0, bad = UINT_MAX;
	__u32 *gone;
	int ret;

	/* a module apply loads is open by now, without jobs; dry: not */
	if (!x->be->jobs_fit)
		return 0;
	ret = x->be->open(x, XB_ABSENT_OK);
	if (ret == -ENOENT)
		return 0;	/* nothing runs: nothing to lose */
	if (ret)
		return ret;
	add = calloc(c->njob + 1, sizeof(*add));
	gone = calloc(p->njob_del + c->njob + 1, sizeof(*gone));
	if (!add || !gone) {
		xerr("out of memory");
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < p->njob_del; i++)
		gone[ngone++] = p->job_del[i];
	for (i = 0; i < c->njob; i++) {
		if (p->job_act[i] == CONF_REPLACE)
			gone[ngone++] = c->job[i].job.id;
		if (p->job_act[i] != CONF_KEEP)
			add[nadd++] = &c->job[i].job;
	}
	ret = x->be->jobs_fit(x, gone, ngone, add, nadd, &bad);
	if (ret && bad < nadd) {
		for (i = 0; i < c->njob && &c->job[i].job != add[bad]; i++)
			;
		xerr_at(c->file, i < c->njob ? c->job[i].line : 0);
		xerr("job %u does not fit in the switch (above); nothing was changed",
		     add[bad]->id);
		xerr_at(NULL, 0);
	} else if (ret) {
		xerr("cannot tell whether the file's jobs fit in the switch (above); nothing was changed");
	}
out:
	free(add);
	free(gone);
	x->be->close(x);
	return ret;
}

static int conf_apply(struct xinactl *x, const char *file, bool dry)
{
	struct conf_plan p = {};
	struct conf_job *st = NULL;
	struct conf_run r = {};
	unsigned int nst = 0;
	int lock_fd = -1, ret, err;
	struct conf c;

	ret = conf_parse(file, CONF_F_SYSTEM, &c);
	if (ret)
		return ret;
	ret = conf_check_backend(x, &c, &p.load_module);
	if (ret)
		goto out;
	if (!dry) {
		lock_fd = conf_lock();
		if (lock_fd < 0) {
			ret = lock_fd;
			goto out;
		}
	}
	/* the module's jobs, and ports to move onto its fast path */
	if (p.load_module && !dry) {
		ret = conf_load_module(x);
		if (ret)
			goto out;
	}
	if (p.load_module) {
		xp_open_obj(NULL);
		xp_str(XP_ANY, "action", "%s", "load");
		xp_str(XP_ANY, "module", " module %s", "xina");
		xp_nl();
		xp_close_obj();
	}
	ret = conf_run_read(x, &r);
	if (p.load_module && dry)
		r.njob = 0;	/* the module would start without jobs */
	if (!ret)
		ret = conf_plan_make(&c, &r, p.load_module, &p);
	if (!ret)
		ret = conf_jobs_fit(x, &c, &p);
	/* the jobs set, each once it is: a stop keeps the others' old entry */
	if (!ret) {
		st = calloc(c.njob + 1, sizeof(*st));
		if (!st) {
			xerr("out of memory");
			ret = -ENOMEM;
		}
	}
	if (ret) {
		if (p.load_module && !dry)
			conf_unload_module(x);
		goto out;
	}

	/*
	 * The ports first: they are what the kernel may still refuse (no
	 * native XDP, another program there), and a refused one then leaves
	 * every job as it ran.  Then the jobs, what frees slot memory before
	 * what takes it (conf_jobs_fit() checked it fits).
	 */
	ret = conf_do_devs(x, &c, &r, &p, dry);
	if (ret)
		goto out;	/* put back, or said what is not */
	ret = conf_do_jobs_del(x, &c, &p, dry);
	if (!ret)
		ret = conf_do_jobs_add(x, &c, &p, dry, st, &nst);
	if (!dry) {
		/* stopped half way: what ran before keeps its key file */
		if (ret)
			conf_state_merge_old(&st, &nst);
		err = conf_state_write(st, nst);
		if (ret)
			xerr("apply of %s stopped: the running configuration is partly that of the file ('xinactl show-config' shows it)",
			     file);
		ret = ret ? ret : err;
	}
out:
	free(st);
	conf_plan_free(&p);
	conf_run_free(&r);
	conf_free(&c);
	if (lock_fd >= 0)
		close(lock_fd);
	return ret;
}

int xinactl_apply(struct xinactl *x, int argc, char **argv)
{
	const char *file;
	bool dry = false;
	int ret;

	if (argc > 0 && xmatches(argv[0], "help")) {
		xinactl_conf_usage(stdout);
		return 0;
	}
	if (argc < 1) {
		xerr("apply: missing FILE; see 'xinactl apply help'");
		return -EINVAL;
	}
	file = argv[0];
	if (argc > 1) {
		if (!xmatches(argv[1], "dry-run"))
			return xunexpected("apply", argv[1]);
		dry = true;
	}
	if (argc > 2)
		return xunexpected("apply", argv[2]);

	xp_open_obj(NULL);
	xp_bool(XP_JSON, "dry_run", NULL, dry);
	xp_open_arr("changes");
	ret = conf_apply(x, file, dry);
	xp_close_arr();
	xp_close_obj();
	return ret;
}
