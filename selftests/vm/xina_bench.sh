#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Not a test: the cost per packet of the module backend's fast path and of
# the map backend's, in the same VM, through BPF_PROG_TEST_RUN (run with
# "make bench-vm", numbers in Documentation/module.rst).  Devices p0..p3:
# rank r of a benchmark enters on p<r>, as on a rack.
. ./lib.sh

N=2000
for i in 0 1 2 3; do
	ip link add "p$i" type veth peer name "q$i" || exit 1
	ip link set dev "p$i" up || exit 1
	ip link set dev "q$i" up || exit 1
done
insmod /xina/modules/xina.ko || exit 1
echo "# module backend (xina.ko kfunc), $N packets per case"
xina_kfunc -b "$N"
log_test $? "module backend: every verdict and every result's sum as expected"
wait_until 50 rmmod xina 2>/dev/null
if [ -x /xina/bin/xina-bench-fastpath ]; then
	echo "# map backend (xina-bench-fastpath), $N packets per case"
	xina-bench-fastpath -n "$N" -e 64,256,358 -d 'p%d'
	log_test $? "map backend: every verdict and every result as expected"
fi
for i in 0 1 2 3; do ip link del "p$i"; done
exit $RET
