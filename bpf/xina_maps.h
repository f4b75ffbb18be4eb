/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-3-Clause) */
/*
 * Layout of the BPF maps of the XDP fast path (map backend), shared by the
 * BPF programs (bpf/) and by user space (xinactl, tests).  Not ABI: the BPF
 * object and xinactl are built and versioned together.
 *
 * Maps (all pinned by name under the pin directory, default XINA_PIN_DIR):
 *
 *   xina_jobs     HASH      __u32 job id          -> struct xina_job
 *   xina_members  HASH      struct xina_member_key -> struct xina_member
 *   xina_ports    HASH      struct xina_port_key  -> __u32 rank
 *                           (learned by the fast path: the member last
 *                            seen behind a port; xina_egress addresses
 *                            results to it, so a job has at most one
 *                            member behind each switch port)
 *   xina_meta     ARRAY     slot version index    -> struct xina_meta
 *   xina_vals     PERCPU_ARRAY slot version index -> struct xina_part
 *   xina_stats    PERCPU_ARRAY job idx            -> struct xina_counters
 *                           (index XINA_MAX_JOBS holds the switch-wide
 *                            enum xina_gstat counters)
 *   xina_tx       DEVMAP_HASH ifindex             -> struct bpf_devmap_val
 *                           (one entry per attached port, with the egress
 *                            program xina_egress)
 *
 * Slot versions: a job owns the contiguous range
 * [slot_base, slot_base + 2 * slots) of xina_meta and xina_vals; slot s,
 * version v lives at slot_base + 2 * s + v.  xinactl allocates the range on
 * "job add" and zeroes it (meta and every CPU's partial), so a fresh job
 * starts from a clean state.
 */
#ifndef XINA_MAPS_H
#define XINA_MAPS_H

#include <linux/types.h>
#include <linux/bpf.h>
#include "../include/uapi/linux/xina.h"

#define XINA_PIN_DIR		"/run/xina"	/* on a bpffs xinactl mounts */
#define XINA_SLOT_VERSIONS	4096		/* default xina_meta entries */
#define XINA_MAX_CPUS		256		/* bound of the fold loop */

/* Program and map names, as found in the object and under the pin dir. */
#define XINA_PROG_MAIN		"xina_xdp"	/* SEC("xdp") on switch ports */
#define XINA_PROG_EGRESS	"xina_egress"	/* SEC("xdp/devmap") */
#define XINA_PROG_PASS		"xina_pass"	/* SEC("xdp") on worker-side veth */

struct xina_job {
	__u64	key;		/* host order; compared with be64_to_cpu(hdr->key) */
	__u32	id;
	__u32	idx;		/* 0..XINA_MAX_JOBS-1: stats index */
	__u32	slot_base;	/* first xina_meta/xina_vals index of the job */
	__u32	slots;
	__u16	workers;
	__u16	elems;		/* max elements per packet and slot */
	__u32	flags;		/* XINA_JOB_F_* */
};

struct xina_member_key {
	__u32	job;
	__u32	rank;
};

struct xina_member {
	__be32	addr;		/* IPv4 source address of the member */
	__be16	port;		/* UDP source port; 0: any */
	__u8	mac[6];		/* learned from its packets; 0 until then */
	__u32	ifindex;	/* learned: the switch port it is behind */
	__be16	rport;		/* learned: UDP source port of its last
				 * accepted packet; results go there */
	__u16	pad;
};

struct xina_port_key {
	__u32	ifindex;
	__u32	job;
};

/*
 * Shared state of one slot version.  Every field but @done is read and
 * written under @lock; @done is only ever changed with an atomic add by the
 * CPU that added its contribution into its partial (see xina.bpf.c).
 */
struct xina_meta {
	struct bpf_spin_lock lock;
	__u32	round;		/* round this version is in */
	__u32	claimed;	/* contributions accepted in @round */
	__u32	done;		/* contributions added in @round (atomic) */
	__u32	result_cpu;	/* CPU whose partial holds the result */
	__u8	used;		/* a round was ever started here */
	__u8	complete;	/* result of @round is final */
	__u8	op;		/* enum xina_op of @round */
	__s8	exp;		/* exp echoed in the result */
	__u16	count;		/* elements of @round: all contributions
				 * to one round carry the same count */
	__u16	pad;
	__u64	seen[XINA_MAX_WORKERS / 64];	/* contributor bitmap */
};

/* Per-CPU partial aggregate of one slot version. */
struct xina_part {
	__u32	round;		/* round these values belong to */
	__u32	valid;		/* written in @round on this CPU */
	__s32	v[XINA_MAX_ELEMS];	/* host order */
};

struct xina_counters {
	__u64	c[XINA_STAT_MAX];	/* enum xina_stat; or enum xina_gstat */
};

#endif /* XINA_MAPS_H */
