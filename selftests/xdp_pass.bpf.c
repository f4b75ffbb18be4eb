// SPDX-License-Identifier: (GPL-2.0-only OR BSD-3-Clause)
/*
 * xdp_pass: a test fixture, somebody else's XDP program (it hands every
 * frame to the stack), for the tests of what xina does on an interface
 * that already runs one.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
