#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Allreduce through the XDP switch with packets lost (and, where the kernel
# has netem, duplicated and reordered) in both directions at every worker:
# results stay bit-exact, the workers retransmit and the switch answers
# retransmissions of completed slots from the kept shadow copy.

. "$(dirname "$0")/lib.sh"
require_root
require_cmd jq nft "$O/xinactl" "$O/xina-allreduce" "$O/bpf/xina_pass.bpf.o"
. "$XINA_ROOT/scripts/rack.sh"

rack_test_init xl
N=4
PERMILLE=${XINA_LOSS_PERMILLE:-10}
BYTES=${XINA_LOSS_BYTES:-$((8 << 20))}

tap_begin 2
rack_up "$RACK" "$N" >/dev/null && rack_xdp "$RACK" "$N" "$PIN" &&
	rack_impair "$RACK" "$N" "$PERMILLE"
if [ $? -ne 0 ]; then
	check_err 1 "impaired rack could not be set up"
	log_test "rack"
	tap_end
fi
if rack_have_netem "$RACK-w0"; then
	log_info "impairment: netem loss/duplicate/reorder $PERMILLE permille each way"
else
	log_info "impairment: nftables random drop $PERMILLE permille each way (no netem in this kernel)"
fi

# --no-gso --no-gro: one datagram per skb, so that the impairment drops
# packets, not whole GSO/GRO batches, and "1%" means 1% of the packets.
job=1
for dtype in i32 f32; do
	job=$((job + 1))
	dir=$TMP/$dtype
	rack_job_add "$RACK" "$N" "$job" 0xfeed 64 256 "$PIN"
	check_err $? "job add failed"
	rack_allreduce "$RACK" "$N" "$dir" --job "$job" --key 0xfeed --slots 64 \
		--elems 256 --dtype "$dtype" --bytes "$BYTES" --iters 2 --no-gso --no-gro \
		--timeout-ms 10000
	check_err $? "workers failed: $(cat "$dir"/w*.err | sort -u | head -n3 | tr '\n' ' ')"
	for ((i = 0; i < N; i++)); do
		[ "$(jq -r .verified "$dir/w$i.json" 2>/dev/null)" = true ]
		check_err $? "worker $i result not verified"
	done
	sums=$(cat "$dir"/w*.json | jq -r .checksum | sort -u | wc -l)
	[ "$sums" -eq 1 ]
	check_err $? "workers disagree on the result"
	retrans=$(cat "$dir"/w*.json | jq -s 'map(.retrans // 0) | add')
	answered=$(xctl -j stats job "$job" | jq -r '.jobs[0].retrans_answered // 0')
	dropped=0
	for ((i = 0; i < N; i++)); do
		d=$(rack_impair_drops "$RACK" "$i")
		dropped=$((dropped + ${d:-0}))
	done
	log_info "$dtype: workers retransmitted $retrans, switch answered $answered from kept results, impairment dropped $dropped"
	[ "${retrans:-0}" -gt 0 ]
	check_err $? "no retransmission counted under $PERMILLE permille loss"
	xctl job del "$job"
	log_test "allreduce $dtype under loss: bit-exact, retransmissions counted"
done
tap_end
