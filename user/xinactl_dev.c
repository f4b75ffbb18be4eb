// SPDX-License-Identifier: GPL-2.0
/*
 * xinactl dev: attach the fast path to switch ports and detach it.
 *
 * A port is attached by loading the embedded object (its maps are the
 * pinned ones, its programs are this port's, with the port's xina UDP
 * port in rodata), attaching xina_xdp through netlink (not a bpf_link: it
 * must outlive xinactl), pinning it as <pin dir>/prog_xdp_<ifname> and
 * adding the port to the result devmap xina_tx with xina_egress as its
 * egress program.  The pin is how later runs find the port again.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <net/if.h>
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

struct dev_req {
	const char	*name;
	unsigned int	ifindex;
	__u32		port;
	__u32		xdp_flags;	/* XDP_FLAGS_{DRV,SKB}_MODE */
	char		pin[PATH_MAX];
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
		"Note:  on a veth the peer end needs an XDP program as well (xina_pass\n"
		"       of xina_pass.bpf.o, e.g. 'ip link set dev PEER xdp obj\n"
		"       xina_pass.bpf.o sec xdp'), or frames the fast path sends back\n"
		"       through the veth never arrive.\n",
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
	if (!access(r->pin, F_OK)) {
		xerr("device '%s' has a leftover xina pin %s: run 'xinactl dev detach %s' first",
		     r->name, r->pin, r->name);
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
	/* a port needs its ingress and its egress program, nothing else */
	bpf_object__for_each_program(prog, skel->obj)
		bpf_program__set_autoload(prog,
					  prog == skel->progs.xina_xdp ||
					  prog == skel->progs.xina_egress);
	skel->rodata->xina_port = r->port;
	ret = xmaps_skel_load(x, skel);
	if (ret) {
		xina__destroy(skel);
		return ret;
	}
	*skelp = skel;
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

/*
 * Order: devmap entry, then XDP, then the pin; so the port can take
 * results as soon as it takes contributions.  Undone in reverse.
 */
static int dev_attach(struct xinactl *x, int argc, char **argv)
{
	struct bpf_devmap_val val = {};
	struct dev_req r = {};
	struct xina *skel;
	int lock_fd, tx_fd, prog_fd, ret;

	ret = dev_parse_attach(argc, argv, &r);
	if (ret)
		return ret;
	dev_pin_path(x, r.name, r.pin, sizeof(r.pin));
	ret = xmaps_pin_dir_setup(x);
	if (ret)
		return ret;
	lock_fd = xmaps_lock(x);
	if (lock_fd < 0)
		return lock_fd;
	ret = dev_check_free(x, &r);
	if (ret)
		goto unlock;
	ret = dev_load(x, &r, &skel);
	if (ret)
		goto unlock;

	tx_fd = bpf_map__fd(skel->maps.xina_tx);
	prog_fd = bpf_program__fd(skel->progs.xina_xdp);
	val.ifindex = r.ifindex;
	val.bpf_prog.fd = bpf_program__fd(skel->progs.xina_egress);
	if (bpf_map_update_elem(tx_fd, &r.ifindex, &val, BPF_ANY)) {
		ret = -errno;
		xerr("cannot add device '%s' to the result devmap xina_tx: %s",
		     r.name, strerror(-ret));
		goto destroy;
	}
	ret = dev_attach_xdp(&r, prog_fd);
	if (ret)
		goto del_tx;
	if (bpf_obj_pin(prog_fd, r.pin)) {
		ret = -errno;
		xerr("cannot pin the program of device '%s' at %s: %s",
		     r.name, r.pin, strerror(-ret));
		goto detach;
	}
	xina__destroy(skel);
	xmaps_unlock(lock_fd);
	return 0;

detach:
	bpf_xdp_detach(r.ifindex, r.xdp_flags, NULL);
del_tx:
	bpf_map_delete_elem(tx_fd, &r.ifindex);
destroy:
	xina__destroy(skel);
unlock:
	xmaps_unlock(lock_fd);
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

static int dev_tx_del(struct xinactl *x, unsigned int ifindex)
{
	char path[PATH_MAX];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/xina_tx", x->pin_dir);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (bpf_map_delete_elem(fd, &ifindex) && errno != ENOENT)
		ret = -errno;
	close(fd);
	return ret;
}

static int dev_detach(struct xinactl *x, int argc, char **argv)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, opts);
	struct dev_req r = {};
	int lock_fd, prog_fd, ret;
	__u32 id, mode;

	if (dev_parse_name("dev detach", argc, argv, &r))
		return -EINVAL;
	if (argc > 1)
		return xunexpected("dev detach", argv[1]);
	dev_pin_path(x, r.name, r.pin, sizeof(r.pin));
	ret = xmaps_pin_dir_check(x, false);
	if (ret)
		return ret;
	lock_fd = xmaps_lock(x);
	if (lock_fd < 0)
		return lock_fd;

	prog_fd = bpf_obj_get(r.pin);
	if (prog_fd < 0) {
		ret = -errno;
		if (ret == -ENOENT)
			xerr("device '%s' is not attached to xina (no %s)",
			     r.name, r.pin);
		else
			xerr("cannot open %s: %s", r.pin, strerror(-ret));
		goto unlock;
	}
	ret = dev_prog_id(prog_fd, &id);
	if (ret) {
		xerr("cannot read the program of %s: %s", r.pin,
		     strerror(-ret));
		goto close;
	}

	/* only xina's own program is removed (XDP_FLAGS_REPLACE) */
	mode = dev_xdp_mode(r.ifindex, id);
	if (mode) {
		opts.old_prog_fd = prog_fd;
		xmaps_log_reset();
		ret = bpf_xdp_detach(r.ifindex, mode, &opts);
		if (ret) {
			xerr("detaching XDP from device '%s' failed: %s",
			     r.name, strerror(-ret));
			xmaps_log_dump();
			goto close;
		}
	} else {
		xwarn("xina's program (id %u) no longer runs on device '%s'; removing what is left of it",
		      id, r.name);
	}
	ret = dev_tx_del(x, r.ifindex);
	if (ret)
		xwarn("cannot remove device '%s' from xina_tx: %s", r.name,
		      strerror(-ret));
	if (unlink(r.pin)) {
		ret = -errno;
		xerr("cannot remove %s: %s", r.pin, strerror(-ret));
		goto close;
	}
	ret = 0;
close:
	close(prog_fd);
unlock:
	xmaps_unlock(lock_fd);
	return ret;
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

static bool dev_in_tx(int tx_fd, unsigned int ifindex)
{
	struct bpf_devmap_val val;

	return ifindex && tx_fd >= 0 &&
	       !bpf_map_lookup_elem(tx_fd, &ifindex, &val);
}

static void dev_print(struct xinactl *x, const char *ifname, int tx_fd)
{
	unsigned int ifindex = if_nametoindex(ifname);
	const char *mode_s = "none";
	char path[PATH_MAX];
	__u32 id = 0, port = 0, mode;
	bool tx;
	int fd;

	dev_pin_path(x, ifname, path, sizeof(path));
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		dev_prog_id(fd, &id);
		dev_prog_port(fd, &port);
		close(fd);
	}
	mode = dev_xdp_mode(ifindex, id);
	if (mode == XDP_FLAGS_DRV_MODE)
		mode_s = "native";
	else if (mode == XDP_FLAGS_SKB_MODE)
		mode_s = "generic";
	tx = dev_in_tx(tx_fd, ifindex);

	xp_open_obj(NULL);
	xp_str(XP_ANY, "ifname", "dev %s", ifname);
	xp_uint(XP_ANY, "ifindex", " ifindex %llu", ifindex);
	xp_uint(XP_ANY, "port", " port %llu", port);
	xp_str(XP_ANY, "mode", " mode %s", mode_s);
	xp_uint(XP_ANY, "prog_id", " prog_id %llu", id);
	xp_bool(XP_JSON, "attached", NULL, mode != 0);
	xp_bool(XP_JSON, "tx", NULL, tx);
	if (!ifindex)
		xp_text(" (not in this network namespace)");
	else if (!mode)
		xp_text(" (not attached: run 'xinactl dev detach %s')", ifname);
	else if (!tx)
		xp_text(" (missing from xina_tx: gets no results)");
	xp_nl();
	xp_close_obj();
}

static int dev_pin_filter(const struct dirent *d)
{
	return !strncmp(d->d_name, DEV_PIN_PREFIX, strlen(DEV_PIN_PREFIX)) &&
	       d->d_name[strlen(DEV_PIN_PREFIX)];
}

static int dev_show(struct xinactl *x, int argc, char **argv)
{
	struct dirent **names = NULL;
	char path[PATH_MAX];
	int n = 0, i, tx_fd = -1;

	if (argc > 0)
		return xunexpected("dev show", argv[0]);
	/* nothing set up yet: no ports, not an error */
	if (!xmaps_pin_dir_check(x, true)) {
		n = scandir(x->pin_dir, &names, dev_pin_filter, alphasort);
		if (n < 0) {
			xerr("cannot read pin dir '%s': %s", x->pin_dir,
			     strerror(errno));
			return -errno;
		}
		snprintf(path, sizeof(path), "%s/xina_tx", x->pin_dir);
		tx_fd = bpf_obj_get(path);
	}
	xp_open_obj(NULL);
	xp_open_arr("devs");
	for (i = 0; i < n; i++) {
		dev_print(x, names[i]->d_name + strlen(DEV_PIN_PREFIX), tx_fd);
		free(names[i]);
	}
	xp_close_arr();
	xp_close_obj();
	free(names);
	if (tx_fd >= 0)
		close(tx_fd);
	return 0;
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
