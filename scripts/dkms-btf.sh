#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Part of the DKMS build of xina.ko (dkms.conf MAKE, after kbuild, before
# DKMS signs and copies the module): give the module its BTF, which its XDP kfunc
# needs (without it the kernel registers no kfunc and the fast path of the
# module backend does not load).  Kbuild does this itself when the kernel
# headers carry vmlinux and resolve_btfids; Debian's do not, so:
#
#   scripts/dkms-btf.sh KERNELVER MODULE.ko
#
# vmlinux: $XINA_VMLINUX, else the headers' vmlinux, else extracted from
# /boot/vmlinuz-KERNELVER.  resolve_btfids: $XINA_RESOLVE_BTFIDS, else the
# headers' tools/bpf/resolve_btfids, else on PATH.  Missing pieces are
# reported and the module is left as it is (it loads, without kfunc).
set -u

kver=$1
ko=$2
build=/lib/modules/$kver/build
tmp=

warn() {
	echo "xina dkms-btf: $*; xina.ko has no BTF: the module backend's fast path will not load" >&2
	[ -n "$tmp" ] && rm -rf "$tmp"
	exit 0
}

# The ELF kernel inside a bzImage: try each compressed stream the image
# holds, by its magic, until one unpacks to an ELF file.
unpack_vmlinux() {
	local img=$1 out=$2 pair magic tool off

	for pair in '\xfd7zXZ\x00:xz -dcq' '\x28\xb5\x2f\xfd:zstd -dcq' \
		    '\x1f\x8b\x08:gzip -dcq' '\x02\x21\x4c\x18:lz4 -dcq' \
		    '\x5d\x00\x00\x00:unlzma -cq' 'BZh:bzip2 -dcq'; do
		magic=${pair%%:*}
		tool=${pair#*:}
		command -v "${tool%% *}" >/dev/null || continue
		for off in $(LC_ALL=C grep -obUaP "$magic" "$img" | cut -d: -f1 |
			     head -n 4); do
			tail -c +$((off + 1)) "$img" | $tool > "$out" 2>/dev/null
			head -c 4 "$out" | grep -q 'ELF' && return 0
		done
	done
	return 1
}

command -v pahole >/dev/null || warn "pahole not found (apt-get install dwarves)"
if readelf -S "$ko" 2>/dev/null | grep -q ' \.BTF '; then
	exit 0	# kbuild did it already
fi

vmlinux=${XINA_VMLINUX:-}
if [ -z "$vmlinux" ] && [ -r "$build/vmlinux" ]; then
	vmlinux=$build/vmlinux
fi
if [ -z "$vmlinux" ]; then
	tmp=$(mktemp -d)
	vmlinux=$tmp/vmlinux
	unpack_vmlinux "/boot/vmlinuz-$kver" "$vmlinux" ||
		warn "cannot unpack vmlinux from /boot/vmlinuz-$kver"
fi

rb=${XINA_RESOLVE_BTFIDS:-}
[ -z "$rb" ] && [ -x "$build/tools/bpf/resolve_btfids/resolve_btfids" ] &&
	rb=$build/tools/bpf/resolve_btfids/resolve_btfids
[ -z "$rb" ] && rb=$(command -v resolve_btfids)
[ -n "$rb" ] || warn "resolve_btfids not found (build it from linux-source: tools/bpf/resolve_btfids, or set XINA_RESOLVE_BTFIDS)"

LLVM_OBJCOPY=objcopy pahole -J --btf_gen_floats -j --lang_exclude=rust \
	--btf_base "$vmlinux" "$ko" || warn "pahole failed"
"$rb" -b "$vmlinux" "$ko" || warn "resolve_btfids failed"
[ -n "$tmp" ] && rm -rf "$tmp"
echo "xina dkms-btf: module BTF added to $ko"

exit 0
