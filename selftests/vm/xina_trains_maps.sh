#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The map backend's XDP fast path on GSO trains (selftests/xina_trains.sh)
# on this guest's kernel: 6.1's generic XDP hands the program a train as
# one linear buffer, 6.12's in several; TC sees the frame from its MAC
# header on 6.1, from its IPv4 header on 6.12.  xina.ko is not loaded
# (xina_e2e_module.sh runs the same test on its backend).  The lossy case
# through netem, which the guest kernels have.
. ./lib.sh

maps_host_test_env
export XINA_TRAINS_BYTES=${XINA_TRAINS_BYTES:-$((512 << 10))}
bash "$XINA_ROOT/selftests/xina_trains.sh" > /tmp/xina_trains.out 2>&1
rc=$?
sed 's/^/  /' /tmp/xina_trains.out
log_test $rc "selftests/xina_trains.sh on the map backend"
exit $RET
