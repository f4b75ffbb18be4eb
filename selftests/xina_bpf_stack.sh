#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The fast path's stack on Linux 6.1, checked on the host: 6.1's verifier
# refuses a program whose deepest chain of BPF frames, each rounded up to
# 32 bytes, passes 512 bytes, and the map backend's chain (xina_xdp, the
# train loop, a datagram, the commit and its bpf_loop() callback) sits at
# that bound.  A change that grows one frame by 8 bytes loads on the
# host's kernel and fails only in the 6.1 guest of make check-vm, on the
# module backend's object as well (xina_kf.bpf.o, built with XINA_KFUNC).
# xina_bpf_stack.py adds the frames up from the objects as 6.1 does; first
# it is shown to catch a chain over the bound, and to add one up exactly.

. "$(dirname "$0")/lib.sh"
require_cmd llvm-objdump clang python3

STACK=$(dirname "$0")/xina_bpf_stack.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

tap_begin 4

# probe DEPTH_B DEPTH_C: an XDP program calling b(), which calls c(), each
# with a volatile array of that many bytes on its stack.
probe()
{
	cat > "$tmp/probe.c" <<-EOF
	#include <linux/bpf.h>
	#define SEC(n) __attribute__((section(n), used))
	#define NOINLINE __attribute__((noinline))
	NOINLINE static int c(int x)
	{
		volatile char a[$2];

		a[x & 63] = 1;
		return a[(x >> 8) & 63];
	}
	NOINLINE static int b(int x)
	{
		volatile char a[$1];

		a[x & 63] = 2;
		return a[3] + c(x);
	}
	SEC("xdp") int prog(struct xdp_md *ctx)
	{
		volatile char m[64];

		m[ctx->ingress_ifindex & 63] = 1;
		return b(m[5]) & 1;
	}
	char LICENSE[] SEC("license") = "GPL";
	EOF
	clang -O2 -target bpf -I/usr/include/x86_64-linux-gnu \
		-c "$tmp/probe.c" -o "$tmp/probe.o"
}

probe 64 64
check_err $? "clang could not build the probe"
out=$(python3 "$STACK" "$tmp/probe.o")
check_err $? "a chain of 64 + 64 + 64 bytes said to be too deep: $out"
echo "$out" | grep -q ": prog 192 prog(64) > b(64) > c(64)$"
check_err $? "want 'prog 192 prog(64) > b(64) > c(64)', got: $out"
log_test "the checker adds a chain's frames as 6.1 does (3 x 64 = 192 bytes)"

probe 232 224
check_err $? "clang could not build the probe"
out=$(python3 "$STACK" "$tmp/probe.o")
[ $? -eq 1 ]
check_err $? "a chain of 64 + 232 + 224 bytes passed: $out"
echo "$out" | grep -q ": prog 544 prog(64) > b(232) > c(224)$"
check_err $? "want 'prog 544 prog(64) > b(232) > c(224)', got: $out"
log_test "the checker refuses a chain of 544 bytes, b's 232 rounded up to 256"

for obj in xina xina_kf; do
	out=$(python3 "$STACK" "$O/bpf/$obj.bpf.o")
	check_err $? "$obj.bpf.o: a chain passes 512 bytes: $out"
	echo "$out" | grep -q ": xina_xdp [0-9]"
	check_err $? "$obj.bpf.o: no chain of xina_xdp found: $out"
	while read -r line; do log_info "$line"; done <<< "$out"
	log_test "$obj.bpf.o: every chain of BPF frames within 6.1's 512 bytes"
done

tap_end
