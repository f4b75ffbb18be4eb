/* SPDX-License-Identifier: GPL-2.0 */
/*
 * xina_nl: the one client of xina.ko's generic netlink family "xina"
 * (include/uapi/linux/xina.h), on libmnl as iproute2 and ethtool are.
 * xinactl's module backend and the guest's selftests (selftests/vm) both
 * speak to the module through it, so that they cannot disagree on how a
 * request is framed or how an answer and its extack are read.
 *
 * A request is built in a struct xina_nl_msg: every put is checked against
 * its buffer, and a request that did not fit is refused by xina_nl_do()
 * instead of being sent cut short.  Puts return where their attribute
 * starts in the request, which is what the kernel's extack names as the
 * bad attribute (nl->bad_off).  xina_nl_do() sends one request and hands
 * every reply (one, or the messages of a dump) to a callback, then returns
 * the kernel's answer as a negative errno, with its extack message, the
 * offset of the attribute it rejected and the type of one it missed.
 *
 * Replies are read with libmnl (mnl_attr_parse(), mnl_attr_for_each...);
 * xina_nl_valid() checks an attribute against a policy (type and exact
 * length) before it is read.
 *
 * Not thread-safe: one request at a time on a handle.
 */
#ifndef XINA_NL_H
#define XINA_NL_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/netlink.h>
#include <linux/types.h>
#include <libmnl/libmnl.h>

/*
 * Requests, and one read of replies: a job of XINA_MAX_WORKERS members is
 * about 8 KiB; a dump's read holds several.
 */
#define XINA_NL_BUFSZ		(64 * 1024)
#define XINA_NL_MAX_NEST	4

struct xina_nl_msg {
	struct nlmsghdr	*nlh;
	bool		full;		/* a put did not fit: never sent */
	int		depth;		/* open nests */
	struct nlattr	*nest[XINA_NL_MAX_NEST];
	char		buf[XINA_NL_BUFSZ] __attribute__((aligned(NLMSG_ALIGNTO)));
};

struct xina_nl {
	struct mnl_socket	*sock;
	__u32			portid;
	__u16			family;		/* id of "xina" */
	__u32			seq;
	/* what the kernel said to the last request */
	char			errmsg[256];	/* extack message, or "" */
	int			bad_off;	/* offset of the bad attribute, or -1 */
	int			miss_type;	/* type of the missing one, or -1 */
	unsigned int		reads;		/* recv() calls it took */
	char			rx[XINA_NL_BUFSZ] __attribute__((aligned(NLMSG_ALIGNTO)));
};

/* One reply of a request: 0 to go on, a negative errno to fail it. */
typedef int (*xina_nl_cb)(const struct nlmsghdr *nlh, void *arg);

/*
 * A socket and the id of family "xina": 0, -ENOENT when no module
 * registered it, or another negative errno.
 */
int xina_nl_open(struct xina_nl *nl);
void xina_nl_close(struct xina_nl *nl);

/*
 * Start request @cmd of family @type (nl->family, or GENL_ID_CTRL) in @m.
 * A dump (@flags NLM_F_DUMP) ends with NLMSG_DONE, anything else is
 * acknowledged.
 */
void xina_nl_msg_init(struct xina_nl_msg *m, __u16 type, __u16 flags,
		      __u8 cmd);

/* Each returns the offset of its attribute in the request, -1 if full. */
int xina_nl_put(struct xina_nl_msg *m, __u16 type, size_t len,
		const void *data);
int xina_nl_put_u16(struct xina_nl_msg *m, __u16 type, __u16 v);
int xina_nl_put_u32(struct xina_nl_msg *m, __u16 type, __u32 v);
int xina_nl_put_strz(struct xina_nl_msg *m, __u16 type, const char *s);
/* A nest of further puts, closed by xina_nl_nest_end() (innermost first). */
int xina_nl_nest_start(struct xina_nl_msg *m, __u16 type);
void xina_nl_nest_end(struct xina_nl_msg *m);

/*
 * Send @m, hand each reply to @cb (may be NULL), and return the kernel's
 * error (negative errno), else the first error of @cb, else 0.  -EMSGSIZE
 * for a request that did not fit, without sending it.
 */
int xina_nl_do(struct xina_nl *nl, struct xina_nl_msg *m, xina_nl_cb cb,
	       void *arg);

/* The last answer for a person: the extack message, or what @err means. */
const char *xina_nl_why(const struct xina_nl *nl, int err);

/* What a known attribute of a reply must be; MNL_TYPE_UNSPEC: not read. */
struct xina_nl_attr_policy {
	enum mnl_attr_data_type	type;
	size_t			len;	/* exact payload length, 0: the type's */
};

struct xina_nl_policy {
	const struct xina_nl_attr_policy	*attr;
	unsigned int				max;
};

#define XINA_NL_POLICY(a) \
	{ .attr = (a), .max = sizeof(a) / sizeof((a)[0]) - 1 }

/*
 * 1: @a is known to @pol and valid; 0: unknown (a newer module may add
 * attributes: skip it); negative errno: known but malformed.
 */
int xina_nl_valid(const struct nlattr *a, const struct xina_nl_policy *pol);

#endif /* XINA_NL_H */
