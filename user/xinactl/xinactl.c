// SPDX-License-Identifier: GPL-2.0
/*
 * xinactl: configure xina, the in-network aggregation switch.
 *
 *   xinactl [ OPTIONS ] OBJECT { COMMAND | help }
 *
 * This file holds the options, the object dispatch, the manual, the
 * choice of the slot-memory backend and the argument helpers the objects
 * share.  Each object lives in its own file (xinactl_job.c, ...).
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>

#include "xina_maps.h"
#include "xina_json.h"
#include "xina_names.h"
#include "xinactl.h"

static const char *xerr_file;
static unsigned int xerr_line;
static bool xerr_said;	/* an error was reported: main() need not */

void xerr_at(const char *file, unsigned int line)
{
	xerr_file = file;
	xerr_line = line;
}

static void xerr_where(void)
{
	if (xerr_file)
		fprintf(stderr, "%s:%u: ", xerr_file, xerr_line);
}

void xerr(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	xerr_said = true;
	fputs("Error: ", stderr);
	xerr_where();
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void xwarn(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("Warning: ", stderr);
	xerr_where();
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Keywords match as whole words only: "jo" is not "job". */
bool xmatches(const char *arg, const char *word)
{
	return arg && strcmp(arg, word) == 0;
}

int xmissing(const char *cmd, const char *keyword)
{
	xerr("%s: '%s' needs a value; see 'xinactl %.*s help'", cmd, keyword,
	     (int)strcspn(cmd, " "), cmd);
	return -EINVAL;
}

int xunexpected(const char *cmd, const char *arg)
{
	xerr("%s: unknown argument '%s'; see 'xinactl %.*s help'", cmd, arg,
	     (int)strcspn(cmd, " "), cmd);
	return -EINVAL;
}

static int xparse_num(const char *what, const char *s, int base, __u64 *out)
{
	unsigned long long v;
	char *end;

	/* strtoull() would take "-1" as ULLONG_MAX, and skip white space */
	if (!*s || *s == '-' || *s == '+' || isspace((unsigned char)*s))
		goto bad;
	errno = 0;
	v = strtoull(s, &end, base);
	if (*end)
		goto bad;
	if (errno == ERANGE)
		return -ERANGE;		/* the caller names its range */
	*out = v;
	return 0;
bad:
	xerr("%s '%s' is not a number", what, s);
	return -EINVAL;
}

/* Decimal, or hexadecimal with 0x: a 64-bit key is easier to read so. */
int xparse_u64(const char *what, const char *s, __u64 *out)
{
	int ret = xparse_num(what, s, 0, out);

	if (ret == -ERANGE)
		xerr("%s '%s' out of range 0..%llu", what, s, ULLONG_MAX);
	return ret;
}

int xparse_u32(const char *what, const char *s, __u32 min, __u32 max,
	       __u32 *out)
{
	__u64 v;
	int ret;

	/* decimal only: "010" is ten, not eight */
	ret = xparse_num(what, s, 10, &v);
	if (ret == -EINVAL)
		return ret;
	if (ret || v < min || v > max) {
		xerr("%s '%s' out of range %u..%u", what, s, min, max);
		return -ERANGE;
	}
	*out = v;
	return 0;
}

int xparse_dev(const char *s, unsigned int *ifindex)
{
	if (strlen(s) >= IF_NAMESIZE) {
		xerr("device '%s' not found: name longer than %d characters",
		     s, IF_NAMESIZE - 1);
		return -ENODEV;
	}
	*ifindex = if_nametoindex(s);
	if (!*ifindex) {
		xerr("device '%s' not found in this network namespace", s);
		return -ENODEV;
	}
	return 0;
}

/*
 * The one place that chooses the slot-memory backend: xina.ko's netlink
 * family when the module is loaded, BPF maps otherwise.
 */
void xinactl_pick_backend(struct xinactl *x)
{
	x->be = &xinactl_maps_backend;
	if (xinactl_nl_family_exists() > 0)
		x->be = &xinactl_nl_backend;
}

static int xinactl_backend_cmd(struct xinactl *x, int argc, char **argv)
{
	bool module = x->be != &xinactl_maps_backend;

	if (argc > 0 && xmatches(argv[0], "help")) {
		printf("Usage: xinactl [ OPTIONS ] backend\n");
		return 0;
	}
	if (argc > 0)
		return xunexpected("backend", argv[0]);

	xp_open_obj(NULL);
	xp_str(XP_ANY, "backend", "backend: %s\n", x->be->name);
	xp_bool(XP_JSON, "module", NULL, module);
	xp_text("module: %s\n", module ? "loaded" : "not loaded");
	xp_close_obj();
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: xinactl [ OPTIONS ] OBJECT { COMMAND | help }\n"
		"       xinactl [ -V | --version | -h | --help ]\n"
		"       xinactl help\n"
		"       xinactl [ OPTIONS ] { apply FILE [ dry-run ] | show-config }\n"
		"where  OBJECT := { job | dev | stats | backend }\n"
		"       OPTIONS := { -j | --json | -p | --pretty | -P | --pin-dir DIR }\n");
}

static void xinactl_manual(void)
{
	printf("XINACTL(8)\n\n"
	       "NAME\n"
	       "    xinactl - configure xina, the in-network aggregation switch\n\n"
	       "SYNOPSIS\n");
	usage(stdout);
	printf("\n");
	xinactl_job_usage(stdout);
	xinactl_dev_usage(stdout);
	xinactl_stats_usage(stdout);
	printf("Usage: xinactl [ OPTIONS ] backend\n");
	xinactl_conf_usage(stdout);
	printf("Usage: xinactl genkey PATH\n");
	printf("\n"
"DESCRIPTION\n"
"    xina turns this box into an aggregation switch for allreduce: workers\n"
"    send UDP gradient blocks to its xina port, the XDP fast path adds them\n"
"    up in slot memory and sends the sum back to every member of the job.\n"
"    xinactl configures jobs and switch ports and reads the counters.\n"
"    Keywords are matched as whole words; every object also takes 'help'\n"
"    (xinactl job help).\n"
"    A command that fails changes nothing.\n\n"
"OPTIONS\n"
"    -j, --json          JSON output (keys listed below are a stable API)\n"
"    -p, --pretty        indented JSON (implies -j)\n"
"    -P, --pin-dir DIR   bpffs where the maps and programs are pinned;\n"
"                        default $XINA_PIN_DIR, else " XINA_PIN_DIR ".  xinactl\n"
"                        mounts a bpffs there if there is none.  Mount it in\n"
"                        the main mount namespace: a bpffs mounted under\n"
"                        'ip netns exec' disappears with that command.\n"
"    -V, --version       print the version\n"
"    -h, --help          print the short usage\n\n"
"JOB\n"
"    job add ID workers N [ slots S ] [ elems E ] keyfile PATH member RANK ADDR[:PORT] ...\n"
"        Create job ID (1..4294967295) of N workers (1..%d).  Every rank\n"
"        0..N-1 is given exactly once, with the IPv4 address (and UDP port;\n"
"        none or 0: any) it sends from.  S slots (default 128) of E\n"
"        elements (1..%d, default 256) each.  PATH is the key file of the\n"
"        job's 128-bit secret (32 hexadecimal digits, mode 0600), created\n"
"        with a new secret from getrandom() if it does not exist; the\n"
"        workers read the same file.  Every packet carries a tag keyed\n"
"        with keys derived from it (Documentation/security.md); keys are\n"
"        never taken on the command line.\n"
"    job set ID keyfile PATH\n"
"        Give job ID the secret of PATH (created if it does not exist).\n"
"    job del ID\n"
"        Delete job ID: its slots stop aggregating at once.\n"
"    job show [ ID ]\n"
"        Show one job or all of them (never its secret).\n\n"
"GENKEY\n"
"    genkey PATH\n"
"        Write a new secret to key file PATH (mode 0600; PATH must not\n"
"        exist).\n\n"
"DEV\n"
"    dev attach DEV [ port UDPPORT ] [ mode native|generic ]\n"
"        Run the fast path on DEV (XDP, native by default), for UDP port\n"
"        UDPPORT (default %d).  It stays attached after xinactl exits.\n"
"        On a veth, results reach the peer end as ordinary frames; only a\n"
"        BAD_KEY answer to a member never seen (XDP_TX) needs an XDP\n"
"        program on the peer end.\n"
"    dev detach DEV\n"
"        Remove the fast path from DEV.\n"
"    dev show\n"
"        Show the ports xina is attached to.\n\n"
"STATS\n"
"    stats [ job ID ]\n"
"        Counters of every job (or of job ID), summed over CPUs, and the\n"
"        switch-wide counters of packets that name no job.\n\n"
"BACKEND\n"
"    backend\n"
"        Which slot memory is in use: 'module' (xina.ko, found through\n"
"        its generic netlink family \"%s\") or 'maps' (BPF maps).\n\n"
"CONFIGURATION FILE\n"
"    apply FILE [ dry-run ]\n"
"        Make the running ports and jobs exactly those of FILE: attach,\n"
"        detach, add, delete and replace (delete and add again) what\n"
"        differs; leave what matches untouched.  The whole file is checked\n"
"        first (grammar, devices, key files) and nothing changes unless\n"
"        all of it is right; messages name FILE:LINE.  Prints one line per\n"
"        change; dry-run prints them and changes nothing.  'backend module'\n"
"        loads xina.ko (modprobe) if it is not loaded.\n"
"    show-config\n"
"        The running configuration in the format apply reads.  Key file\n"
"        paths come from $XINA_STATE_DIR/applied.conf (default\n"
"        /run/xinactl), written by apply.  See xinactl(8) for the format.\n\n",
	       XINA_MAX_WORKERS, XINA_MAX_ELEMS, XINA_UDP_PORT, XINA_GENL_NAME);
	printf(
"JSON OUTPUT\n"
"    job show:  { \"backend\": STR, \"jobs\": [ { \"id\", \"workers\", \"slots\",\n"
"               \"elems\", \"flags\",\n"
"               \"idx\", \"slot_base\", \"mem_bytes\", \"members\": [ { \"rank\",\n"
"               \"addr\": \"A.B.C.D\", \"port\", \"mac\": \"xx:..\" (learned),\n"
"               \"ifindex\" (learned, 0: not yet), \"rport\" (learned: UDP\n"
"               port results go to) } ] } ] }\n"
"    stats:     { \"backend\": STR, \"jobs\": [ { \"id\", \"rx\", \"contrib\",\n"
"               \"complete\", \"retrans_answered\", \"dup\", \"stale\",\n"
"               \"drop_key\" (reserved, 0), \"drop_member\", \"drop_range\",\n"
"               \"drop_op\", \"tx\" (result copies sent), \"tx_unknown\" (not\n"
"               sent: member never seen), \"drop_auth\" (tag does not\n"
"               verify), \"drop_epoch\" (another epoch),\n"
"               \"rx_cpu\": [ packets received on each CPU ] } ],\n"
"               \"switch\": { \"malformed\", \"no_job\", \"pass\",\n"
"               \"train\" (frames of several datagrams: workers' GSO\n"
"               trains a port in generic mode took whole), \"train_part\"\n"
"               (trains some of whose rounds completed: sent with fillers\n"
"               for the others), \"train_refused\" (trains not taken:\n"
"               jobs with an uplink; send --no-gso there),\n"
"               \"train_zero\" (rounds a ZERO datagram in a train completed:\n"
"               kept for the members' resends; libxina sends ZERO alone) } }\n"
"    dev show:  { \"devs\": [ { \"ifname\", \"ifindex\" (0: not in this netns),\n"
"               \"port\", \"mode\": \"native\"|\"generic\"|\"none\", \"prog_id\",\n"
"               \"attached\": BOOL, \"tx\": BOOL (the TC program that sends\n"
"               results is attached) } ] }\n"
"    backend:   { \"backend\": \"maps\"|\"module\", \"module\": BOOL }\n"
"    Numbers are unsigned integers; keys are never renamed, new ones may\n"
"    be added.\n\n"
"ENVIRONMENT\n"
"    XINA_PIN_DIR        default of --pin-dir\n"
"    XINA_STATE_DIR      where apply keeps the key file paths (/run/xinactl)\n"
"    XINA_MODPROBE       the modprobe apply runs for 'backend module'\n\n"
"EXIT STATUS\n"
"    0 on success, 1 on any error (the message on stderr names the cause).\n\n"
"EXAMPLES\n"
"    xinactl job add 7 workers 2 keyfile /etc/xina/7.key member 0 10.0.0.1 member 1 10.0.0.2:9000\n"
"    xinactl dev attach veth0 mode generic\n"
"    xinactl -j stats job 7\n");
}

static int xinactl_help(struct xinactl *x, int argc, char **argv)
{
	if (argc > 0) {
		xerr("help: unknown argument '%s'; see 'xinactl help'", argv[0]);
		return -EINVAL;
	}
	xinactl_manual();
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(struct xinactl *x, int argc, char **argv);
} objects[] = {
	{ "job",	xinactl_job },
	{ "dev",	xinactl_dev },
	{ "stats",	xinactl_stats },
	{ "backend",	xinactl_backend_cmd },
	{ "apply",	xinactl_apply },
	{ "show-config", xinactl_show_config },
	{ "genkey",	xinactl_genkey },
	{ "help",	xinactl_help },
};

static int xinactl_do(struct xinactl *x, int argc, char **argv)
{
	size_t i;

	for (i = 0; i < sizeof(objects) / sizeof(objects[0]); i++)
		if (xmatches(argv[0], objects[i].name))
			return objects[i].fn(x, argc - 1, argv + 1);
	xerr("unknown object '%s'; objects: job dev stats backend genkey apply show-config help",
	     argv[0]);
	return -EINVAL;
}

static const struct option long_opts[] = {
	{ "json",	no_argument,		NULL, 'j' },
	{ "pretty",	no_argument,		NULL, 'p' },
	{ "pin-dir",	required_argument,	NULL, 'P' },
	{ "version",	no_argument,		NULL, 'V' },
	{ "help",	no_argument,		NULL, 'h' },
	{}
};

int main(int argc, char **argv)
{
	struct xinactl x = {};
	int opt, ret;

	x.pin_dir = getenv("XINA_PIN_DIR");
	if (!x.pin_dir || !*x.pin_dir)
		x.pin_dir = XINA_PIN_DIR;

	/* '+': options end at the object, values like "-1" are not options */
	while ((opt = getopt_long(argc, argv, "+jpP:Vh", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'j':
			x.json = true;
			break;
		case 'p':
			x.json = true;
			x.pretty = true;
			break;
		case 'P':
			if (!*optarg) {
				xerr("pin dir '' is empty");
				return 1;
			}
			x.pin_dir = optarg;
			break;
		case 'V':
			printf("xinactl %s (xina wire %d, libbpf %d.%d)\n",
			       XINACTL_VERSION, XINA_WIRE_VERSION,
			       libbpf_major_version(), libbpf_minor_version());
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 1;
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1) {
		usage(stderr);
		return 1;
	}

	/* libbpf's own messages stay quiet: xinactl says what went wrong */
	libbpf_set_print(NULL);
	xinactl_pick_backend(&x);
	xp_init(stdout, x.json, x.pretty);

	ret = xinactl_do(&x, argc, argv);
	if (xp_finish() && !ret) {
		xerr("writing the output failed");
		ret = -EIO;
	}
	/* a failure no message named (out of memory, mostly): its errno */
	if (ret < 0 && !xerr_said)
		xerr("%s failed: %s", argv[0], strerror(-ret));
	return ret ? 1 : 0;
}
