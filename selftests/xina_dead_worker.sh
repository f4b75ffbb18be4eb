#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# A worker that dies mid-allreduce: every other worker gives up with a clear
# error within its timeout instead of hanging.  A switch that is not there
# at all ends the same way.

. "$(dirname "$0")/lib.sh"
require_root
require_cmd "$O/xinactl" "$O/xina-allreduce" "$O/bpf/xina_pass.bpf.o"
. "$XINA_ROOT/scripts/rack.sh"

rack_test_init xd
N=4
TIMEOUT_MS=2000

tap_begin 2
rack_up "$RACK" "$N" >/dev/null && rack_xdp "$RACK" "$N" "$PIN" &&
	rack_job_add "$RACK" "$N" 5 0xdead 64 256 "$PIN"
check_err $? "rack could not be set up"

# Big enough that the allreduce is still running when worker 3 is killed.
rack_allreduce "$RACK" "$N" "$TMP/run" --job 5 --key 0xdead --slots 64 \
	--elems 256 --dtype i32 --bytes $((256 << 20)) --iters 50 \
	--timeout-ms "$TIMEOUT_MS" &
runner=$!
# Worker 3 is whatever runs in its namespace (and nothing else on the box).
worker3_running()
{
	[ -n "$(ip netns pids "$RACK-w3" 2>/dev/null)" ]
}
busywait 20 worker3_running
check_err $? "worker 3 never started"
sleep 1
start=$SECONDS
ip netns pids "$RACK-w3" | xargs -r kill -9
wait $runner
fails=$?
took=$((SECONDS - start))
[ "$fails" -eq "$N" ]
check_err $? "$fails of $N workers failed, want all (3 survivors + the killed one)"
[ "$took" -le $((TIMEOUT_MS / 1000 + 10)) ]
check_err $? "survivors took ${took}s to give up, timeout is ${TIMEOUT_MS}ms"
for i in 0 1 2; do
	grep -qiE 'time(d)? ?out|no progress' "$TMP/run/w$i.err"
	check_err $? "worker $i error does not say it timed out: $(tail -n1 "$TMP/run/w$i.err")"
done
log_info "worker 0 said: $(tail -n1 "$TMP/run/w0.err")"
log_test "dead worker: the others fail with a clear error within ${TIMEOUT_MS}ms (took ${took}s)"

# No switch at all: nothing answers on 10.77.0.254's xina port.
ip netns exec "$RACK-sw" "$O/xinactl" -P "$PIN" dev detach p0
ip netns exec "$RACK-w0" timeout 30 "$O/xina-allreduce" --switch "$RACK_SWITCH_IP" \
	--rank 0 --workers 1 --job 77 --key 1 --slots 8 --elems 256 --dtype i32 \
	--bytes 4096 --timeout-ms 1000 >/dev/null 2>"$TMP/noswitch.err"
rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]
check_err $? "allreduce without a switch: exit $rc, want a clean failure"
grep -qiE 'time(d)? ?out|no progress|unreachable|refused' "$TMP/noswitch.err"
check_err $? "no clear error without a switch: $(tail -n1 "$TMP/noswitch.err")"
log_info "without a switch: $(tail -n1 "$TMP/noswitch.err")"
log_test "no switch: clear error, no hang"
tap_end
