// SPDX-License-Identifier: (GPL-2.0-only OR BSD-3-Clause)
/*
 * xina_pass: attached on the worker side of each veth.  veth only takes
 * frames redirected into it (XDP_REDIRECT, XDP_TX of the peer) when its
 * own end runs an XDP program; this one hands every frame to the stack.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xina_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
