#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the initramfs of the test VM (see scripts/vm.sh).
#
#   scripts/vm/mkinitramfs.sh O KVER ROOTDIR OUTPUT.cpio.gz
#
# Real binaries go to /usr/sbin and /usr/bin, which come before busybox's
# applets on the guest's PATH (busybox has an "ip" of its own).
set -euo pipefail

O=$1
KVER=$2
R=$3
OUT=$4
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MODDIR=/lib/modules/$KVER

# Modules the guest tests need besides xina.ko, in load order.
GUEST_MODULES="veth bridge sch_netem ifb sch_ingress cls_u32 cls_bpf act_mirred act_gact"

mkdir -p "$R"/{bin,sbin,usr/bin,usr/sbin,lib,lib64,proc,sys,dev,tmp,run,etc}
mkdir -p "$R/xina/bin" "$R/xina/bpf" "$R/xina/selftests" "$R/xina/modules" \
	 "$R/xina/o"
cp "$(command -v busybox)" "$R/bin/busybox"
install -m 755 "$ROOT/scripts/vm/init" "$R/init"

# A binary and its shared libraries, at the paths ldd names.
add_bin() {
	local bin=$1 dst=$2 lib

	install -D -m 755 "$bin" "$R$dst"
	for lib in $(ldd "$bin" 2>/dev/null | grep -o '/[^ ]*'); do
		[ -e "$R$lib" ] || install -D -m 755 "$lib" "$R$lib"
	done
}

# What the guest tests run, and nothing optional: a tool missing here would
# make a test skip in the guest, and make check fail on that skip.
#   bash      runs the tests (busybox sh runs its own applets, ip!, first)
#   ip tc     the racks (iproute2: netns, veth, bridge, xdp, netem, ifb)
#   bpftool setpriv   no test's, but at hand when debugging in the guest
#   jq nft    selftests/xina_e2e.sh, xina_loss.sh and scripts/rack.sh
GUEST_TOOLS="bash ip tc bpftool setpriv jq nft"
# What they take from busybox (the real ones are not copied).
GUEST_APPLETS="awk basename cat cut date dmesg grep head id insmod kill ls
	mkdir mktemp mount nproc ping rm rmmod sed seq sleep sort stat sysctl
	tail taskset timeout tr umount uniq wc xargs"

for b in $GUEST_TOOLS; do
	p=$(command -v "$b") || {
		echo "mkinitramfs: $b not found: the guest tests need it (scripts/deps.sh vm)" >&2
		exit 1
	}
	add_bin "$p" "$p"
done
applets=$(busybox --list)
for a in $GUEST_APPLETS; do
	grep -qx "$a" <<< "$applets" || {
		echo "mkinitramfs: busybox has no $a applet: the guest tests need it" >&2
		exit 1
	}
done

# The module and the test programs.
install -m 644 "$O/kmod/$KVER/xina.ko" "$R/xina/modules/xina.ko"
for p in "$O"/vm-progs/*; do
	case "$p" in
	*.bpf.o) install -m 644 "$p" "$R/xina/bpf/" ;;
	*) add_bin "$p" "/xina/bin/$(basename "$p")" ;;
	esac
done
if [ -f "$O/bench/bin/xina-bench-fastpath" ]; then
	add_bin "$O/bench/bin/xina-bench-fastpath" /xina/bin/xina-bench-fastpath
fi
for p in xinactl xina-allreduce; do
	[ -f "$O/$p" ] || { echo "mkinitramfs: no $O/$p (make vm-progs)" >&2; exit 1; }
	add_bin "$O/$p" "/xina/bin/$p"
	ln -sf "/xina/bin/$p" "$R/xina/o/$p"
done
for p in "$O"/bpf/*.bpf.o; do
	if [ -e "$p" ]; then install -m 644 "$p" "$R/xina/bpf/"; fi
done
ln -s /xina/bpf "$R/xina/o/bpf"
# The host selftests and the rack, run in the guest against xina.ko
# (XINA_ROOT=/xina/root, O=/xina/o).
mkdir -p "$R/xina/root/selftests" "$R/xina/root/scripts"
# The guest's run.sh judges its tests with the host's tap_judge.sh, against
# the same list of expected skips.
cp "$ROOT"/selftests/*.sh "$ROOT"/selftests/expected-skips \
	"$R/xina/root/selftests/"
cp "$ROOT"/scripts/rack.sh "$R/xina/root/scripts/"
cp "$ROOT"/selftests/vm/*.sh "$R/xina/selftests/"
: # guest tests have their own lib.sh (selftests/vm)

# Kernel modules, uncompressed (busybox insmod takes plain .ko), with the
# order modprobe would load them in.
: > "$R/xina/modules/order"
for m in $GUEST_MODULES; do
	modprobe --show-depends -S "$KVER" "$m" | awk '$1 == "insmod" { print $2 }'
done | awk '!seen[$0]++' | while read -r ko; do
	name=$(basename "$ko")
	case "$ko" in
	*.xz) xz -dc "$ko" > "$R/xina/modules/${name%.xz}"; name=${name%.xz} ;;
	*.zst) zstd -qdc "$ko" > "$R/xina/modules/${name%.zst}"; name=${name%.zst} ;;
	*) cp "$ko" "$R/xina/modules/$name" ;;
	esac
	echo "$name" >> "$R/xina/modules/order"
done
[ -d "$MODDIR" ] || { echo "mkinitramfs: $MODDIR missing" >&2; exit 1; }

(cd "$R" && find . | cpio -o -H newc --quiet) | gzip -1 > "$OUT"
