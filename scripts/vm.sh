#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot Debian's 6.1 kernel under qemu (TCG) with xina.ko and run the guest
# selftests (selftests/vm/run.sh).  Exit status: that of the tests (0 pass,
# 1 fail), 4 when the VM cannot be had (no qemu, no kernel image): "make
# check" counts that as a failure, not as a skip.  The guest's counts of
# tests and checks go to $O/check-vm.result whenever it reported them.
#
#   scripts/vm.sh [-t TIMEOUT] [-k] [-- TEST...]
#
#   -t TIMEOUT  seconds for the whole guest run (default 1500: the sum of
#               the tests' own bounds is larger, but a run that long means
#               something hangs)
#   -k          keep the initramfs and the console log in $O/vm
#   TEST...     only these selftests/vm tests (names as in run.sh)
#
# The guest is an initramfs: busybox-static, the real ip/tc/bpftool and the
# test binaries with their shared libraries, the kernel modules the tests
# need and xina.ko with module BTF.  The kernel is the ELF vmlinux extracted
# from /boot/vmlinuz, booted through its PVH entry (~3 times faster under
# TCG than the bzImage).  The guest reports "XINA-VM-RESULT: <rc>" on the
# serial console and leaves through isa-debug-exit.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
O=${O:-build}
case "$O" in /*) ;; *) O="$ROOT/$O" ;; esac
VMDIR="$O/vm"
TIMEOUT=1500
KEEP=0

usage() {
	echo "usage: scripts/vm.sh [-t TIMEOUT] [-k] [-- TEST...]" >&2
	exit 2
}

while getopts "t:kh" opt; do
	case "$opt" in
	t) TIMEOUT=$OPTARG ;;
	k) KEEP=1 ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
TESTS="$*"

skip() {
	echo "vm.sh: cannot run the VM: $*" >&2
	exit 4
}

QEMU=$(command -v qemu-system-x86_64 || true)
[ -n "$QEMU" ] || skip "qemu-system-x86_64 not found (apt-get install qemu-system-x86)"
KVER=${KVER:-$(ls -d /lib/modules/6.1.[0-9]*-amd64 2>/dev/null | sort -V | tail -1 | xargs -r basename)}
[ -n "$KVER" ] || skip "no Debian 6.1 kernel modules in /lib/modules (apt-get install linux-image-amd64)"
[ -r "/boot/vmlinuz-$KVER" ] || skip "/boot/vmlinuz-$KVER not readable"
BUSYBOX=$(command -v busybox || true)
[ -n "$BUSYBOX" ] && file -L "$BUSYBOX" | grep -q "statically linked" ||
	skip "no static busybox (apt-get install busybox-static)"

# What the guest runs, built for this machine (the guest is Debian too).
make -C "$ROOT" -s --no-print-directory O="$O" module vm-progs KVER="$KVER"
VMLINUX="$O/vmlinux-$KVER"

rm -rf "$VMDIR" "$O/check-vm.result"
mkdir -p "$VMDIR"
INITRD="$VMDIR/initramfs.cpio.gz"
CONSOLE="$VMDIR/console.log"
"$ROOT/scripts/vm/mkinitramfs.sh" "$O" "$KVER" "$VMDIR/root" "$INITRD"

# -cpu max: the x86 extensions TCG emulates (the kfunc may use SSE/AVX2).
# no_timer_check: on a loaded host the kernel's check of the emulated
# IO-APIC timer can fail and panic the boot ("IO-APIC + timer doesn't
# work"), seen here at a load average of 10.
rc=0
timeout --foreground -k 10 "$TIMEOUT" "$QEMU" \
	-machine q35 -accel tcg -cpu max -smp 2 -m 2G \
	-kernel "$VMLINUX" -initrd "$INITRD" \
	-append "console=ttyS0 panic=-1 oops=panic loglevel=4 no_timer_check xina.tests=${TESTS// /,}" \
	-device isa-debug-exit,iobase=0xf4,iosize=0x04 \
	-display none -serial "file:$CONSOLE" -monitor none \
	-no-reboot </dev/null || rc=$?

result=$(sed -n 's/^XINA-VM-RESULT: \([0-9]*\).*/\1/p' "$CONSOLE" | tail -1)
counts=$(tr -d '\r' < "$CONSOLE" | sed -n 's/^XINA-VM-COUNTS: //p' | tail -1)
# The TAP lines of the guest, for the log of "make check".
grep -E '^(TAP version|1\.\.|ok |not ok |#)' "$CONSOLE" | tr -d '\r' || true

if [ -z "$result" ]; then
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		echo "vm.sh: guest timed out after ${TIMEOUT}s" >&2
	else
		echo "vm.sh: guest ended (qemu exit $rc) without a result" >&2
	fi
	echo "----- guest console -----" >&2
	tr -d '\r' < "$CONSOLE" >&2
	exit 1
fi
# For the closing line of make check: tests passed, failed, skipped and
# checks passed, failed, skipped, as the guest's run.sh counted them.
[ -n "$counts" ] && echo "$counts" > "$O/check-vm.result"
read -r tp tf ts cp cf cs <<< "${counts:-? ? ? ? ? ?}"
echo "vm: tests: $tp passed, $tf failed, $ts skipped;" \
     "checks: $cp passed, $cf failed, $cs skipped"
if [ "$result" -ne 0 ] || [ -z "$counts" ]; then
	echo "vm.sh: guest tests failed (run.sh exit $result); guest console:" >&2
	tr -d '\r' < "$CONSOLE" >&2
	exit 1
fi
[ "$KEEP" -eq 1 ] || rm -rf "$VMDIR/root" "$INITRD"
echo "vm.sh: guest tests passed (console in $CONSOLE)"
exit 0
