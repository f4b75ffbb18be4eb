/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-3-Clause) */
/*
 * What train_floor.c (the loader) and train_floor.bpf.c (the switch's
 * programs) share: the UDP port, the sizes, and the switch's settings
 * that the loader writes into the BPF object's .rodata before loading it.
 */
#ifndef TRAIN_FLOOR_H
#define TRAIN_FLOOR_H

#include <linux/types.h>

#define TF_MAX_PORTS	16
#define TF_UDP_PORT	9399
#define TF_CHUNK	4096

struct tf_cfg {
	__u32 nports;
	__u32 read;			/* the work on the payload: 0, 1, 2 */
	__u32 swip;			/* the switch's address, network order */
	__u32 generic;			/* gtrain: TC sees frames from IPv4 on */
	__u32 ifindex[TF_MAX_PORTS];
	__u32 ip[TF_MAX_PORTS];		/* network order */
	__u8 mac[TF_MAX_PORTS][6];
	__u32 key[TF_CHUNK / 4];	/* NH key words (read 2) */
};

#endif
