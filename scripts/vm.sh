#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot Debian 12's kernels, 6.1 and 6.12, one after the other under qemu
# (TCG) with xina.ko built for each, and run the guest selftests
# (selftests/vm/run.sh) in each.  Exit status: 0 all passed on every
# kernel, 1 a test failed (or a guest gave no result), 4 when the VM cannot
# be had (no qemu, a kernel not installed): "make check" counts that as a
# failure, not as a skip.  The guests' counts of tests and checks, added up
# over the kernels, go to $O/check-vm.result whenever every guest reported
# them.
#
#   scripts/vm.sh [-t TIMEOUT] [-k] [-K KERNELS] [-- TEST...]
#
#   -t TIMEOUT  seconds for the whole run of one guest (default 1500:
#               the tests' own bounds add up to more, but a guest that
#               runs that long hangs somewhere)
#   -k          keep the initramfs and the console log in $O/vm/<kernel>
#   -K KERNELS  the kernels to boot, a list of installed versions
#               (6.1.0-57-amd64) or series (6.1: the newest installed
#               6.1.*-amd64); default $VM_KERNELS, else "6.1 6.12"
#   TEST...     only these selftests/vm tests (names as in run.sh)
#
# XINA_VM_APPEND: more parameters for the guests' kernel command line.
#
# The guest is an initramfs: busybox-static, the real ip/tc/bpftool and the
# test binaries with their shared libraries, the kernel modules the tests
# need and xina.ko with module BTF.  The kernel is the ELF vmlinux extracted
# from /boot/vmlinuz, booted through its PVH entry (~3 times faster under
# TCG than the bzImage).  The guest prints its kernel version in its TAP
# output, reports "XINA-VM-RESULT: <rc>" on the serial console and leaves
# through isa-debug-exit.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-build}
case "$O" in /*) ;; *) O="$ROOT/$O" ;; esac
TIMEOUT=1500
KEEP=0
# Boots of a guest that dies before its first test (run_guest()).
BOOTS=3
KERNELS=${VM_KERNELS:-6.1 6.12}

usage() {
	echo "usage: scripts/vm.sh [-t TIMEOUT] [-k] [-K KERNELS] [-- TEST...]" >&2
	exit 2
}

while getopts "t:kK:h" opt; do
	case "$opt" in
	t) TIMEOUT=$OPTARG ;;
	k) KEEP=1 ;;
	K) KERNELS=$OPTARG ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
TESTS="$*"

skip() {
	echo "vm.sh: cannot run the VM: $*" >&2
	exit 4
}

# An installed kernel version, or the newest installed of a series.
kernel_of() {
	local k=$1

	if [ -d "/lib/modules/$k" ]; then
		echo "$k"
		return
	fi
	ls -d /lib/modules/"$k".*-amd64 2>/dev/null | sort -V | tail -1 |
		xargs -r basename
}

QEMU=$(command -v qemu-system-x86_64 || true)
[ -n "$QEMU" ] || skip "qemu-system-x86_64 not found (apt-get install qemu-system-x86)"
BUSYBOX=$(command -v busybox || true)
[ -n "$BUSYBOX" ] && file -L "$BUSYBOX" | grep -q "statically linked" ||
	skip "no static busybox (apt-get install busybox-static)"
KVERS=()
for k in $KERNELS; do
	kver=$(kernel_of "$k")
	[ -n "$kver" ] || skip "no kernel $k in /lib/modules (scripts/deps.sh vm installs Debian's 6.1 and 6.12)"
	[ -r "/boot/vmlinuz-$kver" ] || skip "/boot/vmlinuz-$kver not readable"
	KVERS+=("$kver")
done
[ "${#KVERS[@]}" -gt 0 ] || skip "no kernel given (-K)"
rm -f "$O/check-vm.result"

# Boot kernel $1 with its xina.ko and the tests; 0 passed, 1 failed.  The
# guest's counts go to $VMDIR/counts.
run_guest() {
	local kver=$1 rc=0 result counts guest start took tp tf ts cp cf cs
	local boot boots
	local VMDIR="$O/vm/$kver" INITRD CONSOLE

	start=$(date +%s)
	# What the guest runs, built for this machine (the guest is Debian
	# too); xina.ko for this kernel.
	make -C "$ROOT" -s --no-print-directory O="$O" module vm-progs \
		KVER="$kver" || return 1
	rm -rf "$VMDIR"
	mkdir -p "$VMDIR"
	INITRD="$VMDIR/initramfs.cpio.gz"
	CONSOLE="$VMDIR/console.log"
	"$ROOT/scripts/vm/mkinitramfs.sh" "$O" "$kver" "$VMDIR/root" "$INITRD" ||
		return 1

	# -cpu max: the x86 extensions TCG emulates (the kfunc may use
	# SSE/AVX2), less cx16: this QEMU's (7.2) TCG can take an interrupt
	# across the slab allocator's "cmpxchg16b %gs:(%rsi)" and hand the
	# guest garbage flags, a double fault in __kmalloc_noprof with the
	# IPI in the trace: seen in a CI run, and in 1 of 5 boots of 6.12
	# running a 25 s version of xina_kfunc's softirq test; 0 of 11 such
	# boots without cx16.  The guest kernel then does without
	# cmpxchg16b, as on the first x86-64 CPUs.  $XINA_VM_CPU replaces
	# it, e.g. "qemu64,-cx16": no SSSE3, so xina.ko refuses simd=1
	# (xina_kfunc's simd_param test checks either way).  Not
	# "max,-ssse3": that keeps SSE4.2, and the guest's glibc then runs
	# pshufb and dies.
	# no_timer_check: on a loaded host the kernel's check of
	# the emulated IO-APIC timer can fail and panic the boot ("IO-APIC +
	# timer doesn't work"), seen here at a load average of 10.
	# $XINA_VM_APPEND: more kernel parameters, e.g.
	# "slub_debug=FZP,kmalloc-cg-*": poisoned, redzoned and checked frees
	# in the slab caches of accounted kmalloc(), which hold the slot
	# memory of the tests' small jobs, so that a write into a deleted
	# job's freed slots shows in the kernel log ("Poison overwritten"),
	# which xina_dmesg.sh checks.  Not by default: the verifier's
	# allocations are accounted too, and every program load gets slower.
	#
	# A guest that dies before its first test (no "TAP version" on the
	# console) is booted again, at most $BOOTS times in all: xina.ko is
	# not loaded before the tests start (scripts/vm/init), so such a
	# death is the emulator's or the packaged kernel's.  Seen in a CI
	# run: 6.12 died 2.2 s into its boot, "Oops: int3" in
	# sched_clock_idle_wakeup_event() on the idle vCPU, on the static
	# branch that sched_clock_init_late() turns on at that time (the
	# code bytes show it just patched): an int3 the kernel no longer
	# expected, TCG's view of code the other vCPU had just rewritten.
	# Every such boot is reported with its console, kept as
	# console.boot<N>.log.  A guest that hangs (the timeout) is not
	# booted again, and once the tests have started a death fails the
	# run as before.
	boot=1
	while :; do
		rc=0
		timeout --foreground -k 10 "$TIMEOUT" "$QEMU" \
			-machine q35 -accel tcg -cpu "${XINA_VM_CPU:-max,-cx16}" -smp 2 -m 2G \
			-kernel "$O/vmlinux-$kver" -initrd "$INITRD" \
			-append "console=ttyS0 panic=-1 oops=panic loglevel=4 no_timer_check ${XINA_VM_APPEND:-} xina.tests=${TESTS// /,}" \
			-device isa-debug-exit,iobase=0xf4,iosize=0x04 \
			-display none -serial "file:$CONSOLE" -monitor none \
			-no-reboot </dev/null || rc=$?
		# no console: qemu did not start; judged below, as before
		[ -e "$CONSOLE" ] || break
		grep -q '^TAP version' "$CONSOLE" && break
		[ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] && [ "$boot" -lt "$BOOTS" ] ||
			break
		echo "vm.sh: $kver: the guest died while booting, before any test ran (qemu exit $rc); its console, kept as $VMDIR/console.boot$boot.log:" >&2
		tr -d '\r' < "$CONSOLE" | tail -40 >&2
		mv "$CONSOLE" "$VMDIR/console.boot$boot.log"
		boot=$((boot + 1))
		echo "vm.sh: $kver: booting again ($boot of $BOOTS)" >&2
	done
	took=$(($(date +%s) - start))
	boots=""
	[ "$boot" -gt 1 ] && boots=" (booted $boot times)"

	result=$(sed -n 's/^XINA-VM-RESULT: \([0-9]*\).*/\1/p' "$CONSOLE" | tail -1)
	counts=$(tr -d '\r' < "$CONSOLE" | sed -n 's/^XINA-VM-COUNTS: //p' | tail -1)
	guest=$(tr -d '\r' < "$CONSOLE" | sed -n 's/^# kernel: //p' | tail -1)
	# The TAP lines of the guest, for the log of "make check".
	grep -E '^(TAP version|1\.\.|ok |not ok |#)' "$CONSOLE" | tr -d '\r' || true

	if [ -z "$result" ]; then
		if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
			echo "vm.sh: $kver: guest timed out after ${TIMEOUT}s" >&2
		else
			echo "vm.sh: $kver: guest ended (qemu exit $rc) without a result" >&2
		fi
		echo "----- guest console ($kver) -----" >&2
		tr -d '\r' < "$CONSOLE" >&2
		return 1
	fi
	if [ "$guest" != "$kver" ]; then
		echo "vm.sh: booted $kver, the guest says it runs '$guest'" >&2
		return 1
	fi
	[ -n "$counts" ] && echo "$counts" > "$VMDIR/counts"
	read -r tp tf ts cp cf cs <<< "${counts:-? ? ? ? ? ?}"
	echo "vm: $kver: tests: $tp passed, $tf failed, $ts skipped;" \
	     "checks: $cp passed, $cf failed, $cs skipped; ${took}s$boots"
	if [ "$result" -ne 0 ] || [ -z "$counts" ]; then
		echo "vm.sh: $kver: guest tests failed (run.sh exit $result); guest console:" >&2
		tr -d '\r' < "$CONSOLE" >&2
		return 1
	fi
	[ "$KEEP" -eq 1 ] || rm -rf "$VMDIR/root" "$INITRD"
	echo "vm.sh: $kver: guest tests passed (console in $CONSOLE)"
	return 0
}

fail=0
for kver in "${KVERS[@]}"; do
	run_guest "$kver" || fail=1
done

# For the closing line of make check: tests passed, failed, skipped and
# checks passed, failed, skipped, added up over the kernels; only when
# every guest counted (a guest without counts fails make check as a whole).
sum="0 0 0 0 0 0"
for kver in "${KVERS[@]}"; do
	if [ ! -s "$O/vm/$kver/counts" ]; then
		sum=
		break
	fi
	sum=$(echo "$sum" "$(cat "$O/vm/$kver/counts")" |
	      awk '{ for (i = 1; i <= 6; i++) printf "%d ", $i + $(i + 6) }')
done
[ -n "$sum" ] && echo "$sum" > "$O/check-vm.result"
if [ "${#KVERS[@]}" -gt 1 ] && [ -n "$sum" ]; then
	read -r tp tf ts cp cf cs <<< "$sum"
	echo "vm: all kernels (${KVERS[*]}): tests: $tp passed, $tf failed," \
	     "$ts skipped; checks: $cp passed, $cf failed, $cs skipped"
fi
exit $fail
