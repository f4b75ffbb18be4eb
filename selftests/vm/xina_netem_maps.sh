#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The map backend under netem: xina.ko is not loaded, so xinactl configures
# the BPF maps and the ports run xina.bpf.o, as on a router that refuses
# out-of-tree modules.  The host kernel of the test machines has no netem;
# this guest kernel has, so loss, duplication and reordering of the map
# backend are tested here (xina_loss.sh's probe shows the duplicates and
# reordering happened).
. ./lib.sh

maps_host_test_env
export XINA_LOSS_BYTES=${XINA_LOSS_BYTES:-$((256 << 10))}
xinactl backend | grep -qx "backend: maps"
log_test $? "xinactl picks the map backend without xina.ko"

bash "$XINA_ROOT/selftests/xina_loss.sh" > /tmp/xina_loss_maps.out 2>&1
rc=$?
sed 's/^/  /' /tmp/xina_loss_maps.out
if [ $rc -eq 0 ] && ! grep -q "^ok [0-9]* - netem loses, duplicates and reorders" \
	/tmp/xina_loss_maps.out; then
	echo "  the impairment was not netem: no duplicates or reordering shown"
	rc=1
fi
log_test $rc "selftests/xina_loss.sh (netem) on the map backend"
exit $RET
