// SPDX-License-Identifier: GPL-2.0
/*
 * xinactl dev: attach the fast path to switch ports and detach it.
 *
 * A port is attached by loading the embedded object (its maps are the
 * pinned ones, its programs are this port's, with the port's xina UDP
 * port in rodata), attaching xina_fanout as a TC filter on the port's
 * clsact ingress hook (handle DEV_TC_HANDLE, priority DEV_TC_PRIO), then
 * xina_xdp through netlink (neither is a bpf_link: they must outlive
 * xinactl), and pinning both as <pin dir>/prog_{tc,xdp}_<ifname>.  The pins
 * are how later runs find the port again.  Detaching removes xina's filter
 * and leaves the clsact qdisc, which other filters may share.
 */
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xina_json.h"
#include "xina_maps.h"
#include "xinactl.h"
#include "bpf/xina.skel.h"

#define DEV_PIN_PREFIX	"prog_xdp_"
#define DEV_TC_PIN_PREFIX	"prog_tc_"
#define DEV_TC_HANDLE	0x78696e	/* "xin" */
#define DEV_TC_PRIO	0x7869		/* "xi" */

struct dev_req {
	const char	*name;
	unsigned int	ifindex;
	__u32		port;
	__u32		xdp_flags;	/* XDP_FLAGS_{DRV,SKB}_MODE */
	/* attach: it added the clsact qdisc; detach: remove the qdisc too */
	bool		qdisc;
	char		pin[PATH_MAX];
	char		tc_pin[PATH_MAX];
};

void xinactl_dev_usage(FILE *f)
{
	fprintf(f,
		"Usage: xinactl [ OPTIONS ] dev attach DEV [ port UDPPORT ] [ mode { native | generic } ]\n"
		"       xinactl [ OPTIONS ] dev detach DEV\n"
		"       xinactl [ OPTIONS ] dev show\n"
		"       xinactl [ OPTIONS ] dev help\n"
		"where  UDPPORT := 1..65535, the switch's xina port (default %d)\n"
		"       mode native (default) needs XDP support in the driver;\n"
		"       generic works on any device, slower\n"
		"Note:  attach adds a clsact qdisc to DEV if it has none, and a TC\n"
		"       filter that sends results to the workers; detach removes the\n"
		"       filter and leaves the qdisc.  Attach also records, for DEV,\n"
		"       the IPv4 addresses of the network namespace DEV is in: only\n"
		"       packets to them are xina's, others to UDPPORT are routed\n"
		"       untouched.  An address added later is xina's on DEV once DEV\n"
		"       is attached again (detach and attach it).\n",
		XINA_UDP_PORT);
}

static int dev_parse_name(const char *cmd, int argc, char **argv,
			  struct dev_req *r)
{
	if (argc < 1) {
		xerr("%s: missing DEV; see 'xinactl dev help'", cmd);
		return -EINVAL;
	}
	r->name = argv[0];
	return xparse_dev(r->name, &r->ifindex);
}

static void dev_pin_path(struct xinactl *x, const char *ifname, char *path,
			 size_t size)
{
	snprintf(path, size, "%s/" DEV_PIN_PREFIX "%s", x->pin_dir, ifname);
}

static void dev_tc_pin_path(struct xinactl *x, const char *ifname, char *path,
			    size_t size)
{
	snprintf(path, size, "%s/" DEV_TC_PIN_PREFIX "%s", x->pin_dir, ifname);
}

static void dev_pin_paths(struct xinactl *x, struct dev_req *r)
{
	dev_pin_path(x, r->name, r->pin, sizeof(r->pin));
	dev_tc_pin_path(x, r->name, r->tc_pin, sizeof(r->tc_pin));
}

static int dev_parse_attach(int argc, char **argv, struct dev_req *r)
{
	const char *cmd = "dev attach";
	bool port = false, mode = false;

	r->port = XINA_UDP_PORT;
	r->xdp_flags = XDP_FLAGS_DRV_MODE;
	if (dev_parse_name(cmd, argc, argv, r))
		return -EINVAL;
	for (argc--, argv++; argc > 0; argc--, argv++) {
		if (xmatches(argv[0], "port")) {
			XNEXT_ARG(cmd);
			if (port) {
				xerr("%s: 'port' given twice", cmd);
				return -EINVAL;
			}
			if (xparse_u32("port", argv[0], 1, 65535, &r->port))
				return -EINVAL;
			port = true;
		} else if (xmatches(argv[0], "mode")) {
			XNEXT_ARG(cmd);
			if (mode) {
				xerr("%s: 'mode' given twice", cmd);
				return -EINVAL;
			}
			if (xmatches(argv[0], "native")) {
				r->xdp_flags = XDP_FLAGS_DRV_MODE;
			} else if (xmatches(argv[0], "generic")) {
				r->xdp_flags = XDP_FLAGS_SKB_MODE;
			} else {
				xerr("mode '%s' is neither native nor generic",
				     argv[0]);
				return -EINVAL;
			}
			mode = true;
		} else {
			return xunexpected(cmd, argv[0]);
		}
	}
	return 0;
}

/* DEV must not run any XDP program yet: xina does not replace others'. */
static int dev_check_free(struct xinactl *x, struct dev_req *r)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	int ret;

	ret = bpf_xdp_query(r->ifindex, 0, &q);
	if (ret) {
		xerr("cannot query XDP on device '%s': %s", r->name,
		     strerror(-ret));
		return ret;
	}
	if (q.attach_mode != XDP_ATTACHED_NONE) {
		xerr("device '%s' already runs an XDP program (id %u): if it is xina's, 'xinactl dev detach %s' first",
		     r->name, q.prog_id ? q.prog_id :
		     q.drv_prog_id ? q.drv_prog_id : q.skb_prog_id, r->name);
		return -EBUSY;
	}
	if (!access(r->pin, F_OK) || !access(r->tc_pin, F_OK)) {
		xerr("device '%s' has a leftover xina pin under %s: run 'xinactl dev detach %s' first",
		     r->name, x->pin_dir, r->name);
		return -EEXIST;
	}
	return 0;
}

static int dev_load(struct xinactl *x, const struct dev_req *r,
		    struct xina **skelp)
{
	struct bpf_program *prog;
	struct xina *skel;
	int ret;

	ret = xmaps_skel_open(x, &skel);
	if (ret)
		return ret;
	/* a port needs its XDP and its TC program, nothing else */
	bpf_object__for_each_program(prog, skel->obj)
		bpf_program__set_autoload(prog,
					  prog == skel->progs.xina_xdp ||
					  prog == skel->progs.xina_fanout);
	skel->rodata->xina_port = r->port;
	ret = xmaps_skel_load(x, skel);
	if (ret) {
		xina__destroy(skel);
		return ret;
	}
	*skelp = skel;
	return 0;
}

static int dev_addr_cmp(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

/*
 * The switch's own addresses, so that the fast path takes only packets to
 * the switch and lets others to the xina port (routed or bridged through
 * the box) pass: every IPv4 address of this network namespace but
 * loopback ones, read now, sorted as the fast path's bisection needs
 * (struct xina_addrs).  Into this port's own map (xina_addrs is not
 * pinned, xmaps_skel_open()): a pin dir shared by switches in several
 * network namespaces shares no addresses.
 */
static int dev_addrs_set(const struct xina *skel)
{
	struct xina_addrs a = {};
	struct ifaddrs *ifa, *i;
	__u32 zero = 0;
	int ret;

	if (getifaddrs(&ifa)) {
		ret = -errno;
		xerr("cannot read the addresses of this network namespace: %s",
		     strerror(-ret));
		return ret;
	}
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
		    (i->ifa_flags & IFF_LOOPBACK))
			continue;
		if (a.n == XINA_MAX_ADDRS) {
			xerr("more than %d IPv4 addresses in this network namespace: the fast path tells at most %d apart",
			     XINA_MAX_ADDRS, XINA_MAX_ADDRS);
			freeifaddrs(ifa);
			return -E2BIG;
		}
		a.addr[a.n++] = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
	}
	freeifaddrs(ifa);
	qsort(a.addr, a.n, sizeof(a.addr[0]), dev_addr_cmp);
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.xina_addrs), &zero, &a,
				BPF_ANY)) {
		ret = -errno;
		xerr("cannot write the switch's addresses into map xina_addrs: %s",
		     strerror(-ret));
		return ret;
	}
	return 0;
}

static int dev_attach_xdp(const struct dev_req *r, int prog_fd)
{
	int ret;

	xmaps_log_reset();
	ret = bpf_xdp_attach(r->ifindex, prog_fd,
			     XDP_FLAGS_UPDATE_IF_NOEXIST | r->xdp_flags, NULL);
	if (!ret)
		return 0;
	if (ret == -EOPNOTSUPP && r->xdp_flags == XDP_FLAGS_DRV_MODE)
		xerr("device '%s' has no native XDP support: use 'mode generic'",
		     r->name);
	else
		xerr("attaching XDP to device '%s' failed: %s", r->name,
		     strerror(-ret));
	xmaps_log_dump();
	return ret;
}

/* xina's filter on the clsact ingress hook of @ifindex. */
#define DEV_TC_HOOK(name, ifidx)					\
	LIBBPF_OPTS(bpf_tc_hook, name, .ifindex = (ifidx),		\
		    .attach_point = BPF_TC_INGRESS)
#define DEV_TC_OPTS(name, ...)						\
	LIBBPF_OPTS(bpf_tc_opts, name, .handle = DEV_TC_HANDLE,		\
		    .priority = DEV_TC_PRIO, ##__VA_ARGS__)

/* The clsact qdisc of @ifindex, both hooks: bpf_tc_hook_destroy() of it. */
static void dev_qdisc_del(unsigned int ifindex)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
		    .attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS);

	bpf_tc_hook_destroy(&hook);
}

/* *@made: this call added the clsact qdisc (undone with the filter). */
static int dev_attach_tc(const struct dev_req *r, int prog_fd, bool *made)
{
	DEV_TC_HOOK(hook, r->ifindex);
	DEV_TC_OPTS(opts, .prog_fd = prog_fd);
	int ret;

	xmaps_log_reset();
	ret = bpf_tc_hook_create(&hook);
	if (ret && ret != -EEXIST) {
		xerr("cannot add a clsact qdisc to device '%s': %s", r->name,
		     strerror(-ret));
		xmaps_log_dump();
		return ret;
	}
	*made = !ret;
	ret = bpf_tc_attach(&hook, &opts);
	if (ret) {
		xerr("attaching the TC program to device '%s' failed: %s%s",
		     r->name, strerror(-ret),
		     ret == -EEXIST ? " (a filter with xina's handle and priority is there already)" : "");
		xmaps_log_dump();
		if (*made)
			dev_qdisc_del(r->ifindex);
	}
	return ret;
}

static int dev_detach_tc(unsigned int ifindex)
{
	DEV_TC_HOOK(hook, ifindex);
	DEV_TC_OPTS(opts);

	return bpf_tc_detach(&hook, &opts);
}

/*
 * Order: TC (results), then XDP (contributions), then the pins; so the
 * port can send results as soon as it takes contributions.  Undone in
 * reverse.
 */
static int dev_do_attach(struct xinactl *x, struct dev_req *r)
{
	bool qdisc_made = false;
	struct xmaps_made made;
	struct xina *skel;
	int lock_fd, prog_fd, tc_fd, ret;

	dev_pin_paths(x, r);
	xmaps_made_get(x, &made);
	ret = xmaps_pin_dir_setup(x);
	if (ret)
		return ret;
	lock_fd = xmaps_lock(x);
	if (lock_fd < 0)
		return lock_fd;
	made.maps = xmaps_absent(x);
	ret = dev_check_free(x, r);
	if (ret)
		goto unlock;
	ret = dev_load(x, r, &skel);
	if (ret)
		goto unlock;

	ret = dev_addrs_set(skel);
	if (ret)
		goto destroy;
	prog_fd = bpf_program__fd(skel->progs.xina_xdp);
	tc_fd = bpf_program__fd(skel->progs.xina_fanout);
	ret = dev_attach_tc(r, tc_fd, &qdisc_made);
	if (ret)
		goto destroy;
	ret = dev_attach_xdp(r, prog_fd);
	if (ret)
		goto detach_tc;
	if (bpf_obj_pin(tc_fd, r->tc_pin)) {
		ret = -errno;
		xerr("cannot pin the TC program of device '%s' at %s: %s",
		     r->name, r->tc_pin, strerror(-ret));
		goto detach;
	}
	if (bpf_obj_pin(prog_fd, r->pin)) {
		ret = -errno;
		xerr("cannot pin the program of device '%s' at %s: %s",
		     r->name, r->pin, strerror(-ret));
		unlink(r->tc_pin);
		goto detach;
	}
	xina__destroy(skel);
	xmaps_unlock(lock_fd);
	r->qdisc = qdisc_made;
	return 0;

detach:
	bpf_xdp_detach(r->ifindex, r->xdp_flags, NULL);
detach_tc:
	dev_detach_tc(r->ifindex);
	if (qdisc_made)
		dev_qdisc_del(r->ifindex);
destroy:
	xina__destroy(skel);
unlock:
	/* the first port, refused: the setup made for it goes as well */
	xmaps_unmake(x, &made);
	xmaps_unlock(lock_fd);
	return ret;
}

static int dev_attach(struct xinactl *x, int argc, char **argv)
{
	struct dev_req r = {};
	int ret;

	ret = dev_parse_attach(argc, argv, &r);
	if (ret)
		return ret;
	return dev_do_attach(x, &r);
}

/* *@qdisc_made (may be NULL): it added the clsact qdisc of @name. */
int xdev_attach(struct xinactl *x, const char *name, __u32 port,
		__u32 xdp_flags, bool *qdisc_made)
{
	struct dev_req r = { .name = name, .port = port,
			     .xdp_flags = xdp_flags };
	int ret;

	if (xparse_dev(name, &r.ifindex))
		return -ENODEV;
	ret = dev_do_attach(x, &r);
	if (qdisc_made)
		*qdisc_made = r.qdisc;
	return ret;
}

static int dev_prog_id(int fd, __u32 *id)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int ret;

	ret = bpf_obj_get_info_by_fd(fd, &info, &len);
	if (ret)
		return ret;
	*id = info.id;
	return 0;
}

/* Which mode @id is attached in on @ifindex: XDP_FLAGS_*_MODE, or 0. */
static __u32 dev_xdp_mode(unsigned int ifindex, __u32 id)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);

	if (!ifindex || bpf_xdp_query(ifindex, 0, &q))
		return 0;
	if (q.drv_prog_id == id)
		return XDP_FLAGS_DRV_MODE;
	if (q.skb_prog_id == id)
		return XDP_FLAGS_SKB_MODE;
	return 0;
}

static int dev_do_detach(struct xinactl *x, struct dev_req *r)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, opts);
	int lock_fd, prog_fd, ret;
	__u32 id, mode;

	dev_pin_paths(x, r);
	ret = xmaps_pin_dir_check(x, false);
	if (ret)
		return ret;
	lock_fd = xmaps_lock(x);
	if (lock_fd < 0)
		return lock_fd;

	prog_fd = bpf_obj_get(r->pin);
	if (prog_fd < 0) {
		ret = -errno;
		if (ret == -ENOENT)
			xerr("device '%s' is not attached to xina (no %s)",
			     r->name, r->pin);
		else
			xerr("cannot open %s: %s", r->pin, strerror(-ret));
		goto unlock;
	}
	ret = dev_prog_id(prog_fd, &id);
	if (ret) {
		xerr("cannot read the program of %s: %s", r->pin,
		     strerror(-ret));
		goto close;
	}

	/* only xina's own program is removed (XDP_FLAGS_REPLACE) */
	mode = dev_xdp_mode(r->ifindex, id);
	if (mode) {
		opts.old_prog_fd = prog_fd;
		xmaps_log_reset();
		ret = bpf_xdp_detach(r->ifindex, mode, &opts);
		if (ret) {
			xerr("detaching XDP from device '%s' failed: %s",
			     r->name, strerror(-ret));
			xmaps_log_dump();
			goto close;
		}
	} else {
		xwarn("xina's program (id %u) no longer runs on device '%s'; removing what is left of it",
		      id, r->name);
	}
	ret = dev_detach_tc(r->ifindex);
	if (ret && ret != -ENOENT && ret != -EINVAL) {
		/* the pins stay, so that the same command can try again */
		xerr("cannot remove xina's TC filter from device '%s': %s; XDP is detached, the rest stays: run 'xinactl dev detach %s' again",
		     r->name, strerror(-ret), r->name);
		goto close;
	}
	if (r->qdisc)
		dev_qdisc_del(r->ifindex);
	if (unlink(r->tc_pin) && errno != ENOENT)
		xwarn("cannot remove %s: %s", r->tc_pin, strerror(errno));
	if (unlink(r->pin)) {
		ret = -errno;
		xerr("cannot remove %s: %s", r->pin, strerror(-ret));
		goto close;
	}
	ret = 0;
close:
	close(prog_fd);
unlock:
	xmaps_unlock(lock_fd);
	return ret;
}

static int dev_detach(struct xinactl *x, int argc, char **argv)
{
	struct dev_req r = {};

	if (dev_parse_name("dev detach", argc, argv, &r))
		return -EINVAL;
	if (argc > 1)
		return xunexpected("dev detach", argv[1]);
	return dev_do_detach(x, &r);
}

/* @qdisc: remove the clsact qdisc too (the attach undone added it). */
int xdev_detach(struct xinactl *x, const char *name, bool qdisc)
{
	struct dev_req r = { .name = name, .qdisc = qdisc };

	if (xparse_dev(name, &r.ifindex))
		return -ENODEV;
	return dev_do_detach(x, &r);
}

/* The xina port a program was loaded with, from its rodata map. */
static int dev_prog_port(int prog_fd, __u32 *port)
{
	struct bpf_prog_info info = {};
	struct bpf_map_info minfo;
	__u32 ids[16], len, i;
	int fd, ret = -ENOENT;
	struct xina__rodata rodata;

	info.nr_map_ids = sizeof(ids) / sizeof(ids[0]);
	info.map_ids = (__u64)(unsigned long)ids;
	len = sizeof(info);
	if (bpf_obj_get_info_by_fd(prog_fd, &info, &len))
		return -errno;
	for (i = 0; i < info.nr_map_ids && i < sizeof(ids) / sizeof(ids[0]);
	     i++) {
		fd = bpf_map_get_fd_by_id(ids[i]);
		if (fd < 0)
			continue;
		memset(&minfo, 0, sizeof(minfo));
		len = sizeof(minfo);
		if (!bpf_obj_get_info_by_fd(fd, &minfo, &len) &&
		    strstr(minfo.name, ".rodata") &&
		    minfo.value_size == sizeof(rodata) &&
		    !bpf_map_lookup_elem(fd, &(__u32){ 0 }, &rodata)) {
			*port = rodata.xina_port;
			ret = 0;
		}
		close(fd);
		if (!ret)
			break;
	}
	return ret;
}

/* Is xina's filter on @ifindex, running the program pinned at @tc_pin? */
static bool dev_has_tc(unsigned int ifindex, const char *tc_pin)
{
	DEV_TC_HOOK(hook, ifindex);
	DEV_TC_OPTS(opts);
	__u32 id = 0;
	int fd;

	if (!ifindex || bpf_tc_query(&hook, &opts))
		return false;
	fd = bpf_obj_get(tc_pin);
	if (fd < 0)
		return false;
	dev_prog_id(fd, &id);
	close(fd);
	return id && opts.prog_id == id;
}

/* What the pins of port @ifname say, and what runs on it. */
static void dev_info_get(struct xinactl *x, const char *ifname,
			 struct xdev_info *d)
{
	char path[PATH_MAX];
	int fd;

	memset(d, 0, sizeof(*d));
	snprintf(d->ifname, sizeof(d->ifname), "%s", ifname);
	d->ifindex = if_nametoindex(ifname);
	dev_pin_path(x, ifname, path, sizeof(path));
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		dev_prog_id(fd, &d->prog_id);
		dev_prog_port(fd, &d->port);
		close(fd);
	}
	d->mode = dev_xdp_mode(d->ifindex, d->prog_id);
	dev_tc_pin_path(x, ifname, path, sizeof(path));
	d->tx = dev_has_tc(d->ifindex, path);
}

const char *xdev_mode_name(__u32 mode)
{
	if (mode == XDP_FLAGS_DRV_MODE)
		return "native";
	if (mode == XDP_FLAGS_SKB_MODE)
		return "generic";
	return "none";
}

static int dev_print(struct xinactl *x, const struct xdev_info *d, void *arg)
{
	xp_open_obj(NULL);
	xp_str(XP_ANY, "ifname", "dev %s", d->ifname);
	xp_uint(XP_ANY, "ifindex", " ifindex %llu", d->ifindex);
	xp_uint(XP_ANY, "port", " port %llu", d->port);
	xp_str(XP_ANY, "mode", " mode %s", xdev_mode_name(d->mode));
	xp_uint(XP_ANY, "prog_id", " prog_id %llu", d->prog_id);
	xp_bool(XP_JSON, "attached", NULL, d->mode != 0);
	xp_bool(XP_JSON, "tx", NULL, d->tx);
	if (!d->ifindex)
		xp_text(" (not in this network namespace)");
	else if (!d->mode)
		xp_text(" (not attached: run 'xinactl dev detach %s')",
			d->ifname);
	else if (!d->tx)
		xp_text(" (TC program missing: sends no results)");
	xp_nl();
	xp_close_obj();
	return 0;
}

static int dev_pin_filter(const struct dirent *d)
{
	return !strncmp(d->d_name, DEV_PIN_PREFIX, strlen(DEV_PIN_PREFIX)) &&
	       d->d_name[strlen(DEV_PIN_PREFIX)];
}

/* Every port with xina's pins, in the order of their names. */
int xdev_walk(struct xinactl *x, xdev_cb cb, void *arg)
{
	struct dirent **names = NULL;
	struct xdev_info d;
	int n = 0, i, ret = 0;

	/* nothing set up yet: no ports, not an error */
	if (!xmaps_pin_dir_check(x, true)) {
		n = scandir(x->pin_dir, &names, dev_pin_filter, alphasort);
		if (n < 0) {
			ret = -errno;
			xerr("cannot read pin dir '%s': %s", x->pin_dir,
			     strerror(-ret));
			return ret;
		}
	}
	for (i = 0; i < n; i++) {
		if (!ret) {
			dev_info_get(x, names[i]->d_name +
				     strlen(DEV_PIN_PREFIX), &d);
			ret = cb(x, &d, arg);
		}
		free(names[i]);
	}
	free(names);
	return ret;
}

static int dev_show(struct xinactl *x, int argc, char **argv)
{
	int ret;

	if (argc > 0)
		return xunexpected("dev show", argv[0]);
	xp_open_obj(NULL);
	xp_open_arr("devs");
	ret = xdev_walk(x, dev_print, NULL);
	xp_close_arr();
	xp_close_obj();
	return ret;
}

static int dev_help(struct xinactl *x, int argc, char **argv)
{
	xinactl_dev_usage(stdout);
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(struct xinactl *x, int argc, char **argv);
} dev_cmds[] = {
	{ "attach",	dev_attach },
	{ "detach",	dev_detach },
	{ "show",	dev_show },
	{ "help",	dev_help },
};

int xinactl_dev(struct xinactl *x, int argc, char **argv)
{
	size_t i;

	if (argc < 1)
		return dev_show(x, 0, NULL);
	for (i = 0; i < sizeof(dev_cmds) / sizeof(dev_cmds[0]); i++)
		if (xmatches(argv[0], dev_cmds[i].name))
			return dev_cmds[i].fn(x, argc - 1, argv + 1);
	xerr("dev: unknown command '%s'; commands: attach detach show help",
	     argv[0]);
	return -EINVAL;
}
