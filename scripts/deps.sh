#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install what xina needs from Debian packages, and nothing when it is all
# there already (so every make target may call it).
#
#   scripts/deps.sh [build] [vm] [bench]...
#
#   build  compile bpf/ and user/, run the host selftests (default)
#   test   the kernel's kselftest harness for the C selftests, from
#          Debian's linux-source-6.1 (host and guest alike)
#   vm     build xina.ko against Debian 12's kernels, 6.1 and 6.12 (from
#          bookworm-security), and boot them under qemu, with every tool the
#          guest tests run (scripts/vm/mkinitramfs.sh)
#   bench  the peers of "make bench": OpenMPI, Gloo (torch), gnuplot
#   python the Python package's tests, make train, libxina-mpi: numpy, torch,
#          scikit-learn, OpenMPI, mpi4py
set -euo pipefail

pkgs_build="make gcc libc6-dev clang llvm libbpf-dev libxdp-dev libmnl-dev bpftool
	libelf-dev zlib1g-dev pkg-config iproute2 ethtool iputils-ping procps
	util-linux psmisc nftables jq groff-base"
pkgs_test="linux-source-6.1 xz-utils"
pkgs_vm="linux-image-amd64 linux-headers-amd64 linux-source-6.1 dwarves
	linux-image-6.12-amd64 linux-headers-6.12-amd64
	qemu-system-x86 busybox-static cpio xz-utils libelf-dev flex bison bc
	gcc kmod file iproute2 bpftool util-linux jq nftables"
pkgs_bench="openmpi-bin libopenmpi-dev python3-torch gnuplot-nox"
pkgs_python="python3-numpy python3-torch python3-sklearn openmpi-bin
	libopenmpi-dev python3-mpi4py"

want=""
[ $# -eq 0 ] && set -- build
for group in "$@"; do
	case "$group" in
	build) want="$want $pkgs_build" ;;
	test) want="$want $pkgs_test" ;;
	vm) want="$want $pkgs_vm" ;;
	bench) want="$want $pkgs_bench" ;;
	python) want="$want $pkgs_python" ;;
	*) echo "deps.sh: unknown group '$group' (build, test, vm, bench, python)" >&2; exit 2 ;;
	esac
done

# One install at a time: make -j runs the stamps of several groups at
# once, and a second apt-get would fail on dpkg's lock (exit 100).  The
# lock is taken before the check, so the second waits, then finds the
# first's packages installed.  Non-root callers only check.
if [ "$(id -u)" -eq 0 ] && command -v flock >/dev/null; then
	exec 9>/run/lock/xina-deps.lock
	flock 9
fi

missing=""
for p in $want; do
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$st" = installed ] || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: missing Debian packages:$missing (run as root to install)" >&2
	exit 1
fi
echo "deps.sh: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# Any other apt on the machine (unattended-upgrades) is waited for too.
apt_wait="-o DPkg::Lock::Timeout=600"
# shellcheck disable=SC2086
apt-get $apt_wait update -qq >&2
# shellcheck disable=SC2086
apt-get $apt_wait install -y -qq --no-install-recommends $missing >&2
