#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# xinactl apply / show-config on the module backend: "backend module" loads
# xina.ko, ports move onto the module's fast path, jobs go through netlink
# (seen in sysfs), show-config's output applies as no change, an edit
# changes what was edited, a new secret in a key file rekeys the running
# jobs in place (through netlink; nothing replaced), a file with a job the
# module would refuse changes nothing and says why, a job of too many
# slots is refused naming them, "backend maps" is refused while the module is
# loaded, and the empty file removes everything, after which the module
# unloads.
. ./lib.sh

KO=/xina/modules/xina.ko
TMP=$(mktemp -d)
export XINA_STATE_DIR=$TMP/state
export XINA_MODPROBE=$TMP/modprobe

cleanup() {
	ip netns del w 2>/dev/null
	ip link del va 2>/dev/null
	ip link del vz 2>/dev/null
	umount "$TMP/pin2" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

command -v xinactl >/dev/null || { echo "xinactl not in the initramfs"; exit 4; }
if grep -q '^xina ' /proc/modules; then
	echo "xina.ko is loaded already: this test loads it"
	exit 1
fi

# "modprobe xina" of the guest: busybox's modprobe has no modules.dep here.
cat > "$XINA_MODPROBE" <<EOF
#!/bin/sh
[ "\$1" = xina ] && exec insmod $KO
exit 1
EOF
chmod +x "$XINA_MODPROBE"
K1=0123456789abcdef0011223344556677
K2=fedcba98765432100123456789abcdef
(umask 077; echo $K1 > "$TMP/k.key")
ip link add va type veth peer name vb && ip link set va up && ip link set vb up ||
	exit 1

# apply_out FILE WANT...: apply FILE succeeds and prints exactly WANT.
apply_out() {
	local file=$1 out

	shift
	out=$(xinactl apply "$file" 2>&1) || { echo "  $out"; return 1; }
	check_eq "$out" "$(printf '%s\n' "$@")"
}

# nothing_set_up: xina.ko unloaded, and no program, clsact or port of
# xinactl's left on va (0), else said (1).
nothing_set_up() {
	local rc=0

	! grep -q '^xina ' /proc/modules || { echo "  xina.ko still loaded"; rmmod xina; rc=1; }
	ip link show va | grep -q prog/xdp && { echo "  XDP still on va"; rc=1; }
	tc qdisc show dev va | grep -q clsact && { echo "  clsact left on va"; rc=1; }
	check_eq "$(xinactl -j dev show)" '{"devs":[]}' || rc=1
	return $rc
}

# A port the kernel refuses (vz, a bridge: no native XDP) after the module
# was loaded and va attached: va is detached again, the module unloaded,
# nothing set up.
ip link add vz type bridge && ip link set vz up || exit 1
printf '%s\n' "backend module" "dev va mode generic" "dev vz" > "$TMP/z.conf"
rc=0
out=$(xinactl apply "$TMP/z.conf" 2>&1) && rc=1
case "$out" in
*"$TMP/z.conf:3: device 'vz' has no native XDP support"*"the ports run as before, module xina unloaded; nothing was changed"*) ;;
*) echo "  $out"; rc=1 ;;
esac
nothing_set_up || rc=1
ip link del vz
log_test $rc "apply stopped at a refused port: va detached again, module unloaded"

# A job the module it loads would refuse (more slots than it takes): found
# once the module is loaded, before any port or job changes; the module
# unloaded again.
printf '%s\n' "backend module" "dev va mode generic" \
	"job 5 workers 1 slots 70000 keyfile $TMP/k.key member 0 10.1.0.1" > "$TMP/s.conf"
rc=0
out=$(xinactl apply "$TMP/s.conf" 2>&1) && rc=1
case "$out" in
*"job 5: slots 70000: xina.ko takes at most 65536 slots a job"*"job 5 does not fit in the switch (above); nothing was changed"*) ;;
*) echo "  $out"; rc=1 ;;
esac
nothing_set_up || rc=1
log_test $rc "apply of a job the module would refuse: refused once it is loaded, nothing changed, module unloaded"

cat > "$TMP/a.conf" <<EOF
backend module
dev va mode generic
job 5 workers 2 slots 16 elems 128 keyfile $TMP/k.key
	member 0 10.1.0.1
	member 1 10.1.0.2:4000
EOF
rc=0
apply_out "$TMP/a.conf" "load module xina" "add dev va" "add job 5" || rc=1
check_eq "$(xinactl backend | head -n1)" "backend: module" || rc=1
check_eq "$(cat /sys/kernel/xina/jobs/5/workers)" 2 || rc=1
check_eq "$(cat /sys/kernel/xina/jobs/5/slots)" 16 || rc=1
# the secret is never shown, not even a part of it
xinactl -j job show 5 | jq -e '.jobs[0] | has("key") or has("secret") | not' >/dev/null || rc=1
case "$(xinactl -j job show 5; xinactl job show 5)" in
*${K1:0:16}*|*${K1:16}*) echo "  job show shows the secret"; rc=1 ;;
esac
xinactl -j dev show | jq -e '.devs[0].ifname == "va" and .devs[0].mode == "generic" and .devs[0].tx' \
	>/dev/null || rc=1
log_test $rc "apply: module loaded, port attached, job 5 created through netlink"

rc=0
rmmod xina 2>/dev/null && rc=1
log_test $rc "the port runs the module's fast path (rmmod refused)"

# Maps under the pin dir that are not this xinactl's: every command on the
# module backend says so and fails (they were ignored, exit 0).
rc=0
mkdir "$TMP/pin2" && mount -t bpf bpf "$TMP/pin2" &&
bpftool map create "$TMP/pin2/xina_jobs" type array key 4 value 4 entries 1 name xina_jobs ||
	rc=1
out=$(XINA_PIN_DIR=$TMP/pin2 xinactl job show 2>&1) && rc=1
case "$out" in
*"map $TMP/pin2/xina_jobs (type 2, key 4, value 4 bytes) is not what this xinactl expects"*) ;;
*) echo "  $out"; rc=1 ;;
esac
umount "$TMP/pin2"
log_test $rc "maps of another xina under the pin dir: job show fails and says why"

rc=0
out=$(xinactl show-config | grep -v '^#')
check_eq "$out" "$(printf '%s\n' "backend module" "dev va port 9277 mode generic" \
	"job 5 workers 2 slots 16 elems 128 keyfile $TMP/k.key" \
	"	member 0 10.1.0.1" "	member 1 10.1.0.2:4000")" || rc=1
out=$(xinactl show-config | xinactl apply - 2>&1) || rc=1
check_eq "$out" "" || rc=1
log_test $rc "show-config: the running configuration; applied again, no change"

rc=0
sed -e 's/4000/4001/' "$TMP/a.conf" > "$TMP/b.conf"
echo "job 6 workers 1 keyfile $TMP/k.key member 0 10.1.0.6" >> "$TMP/b.conf"
apply_out "$TMP/b.conf" "replace job 5" "add job 6" || rc=1
check_eq "$(cat /sys/kernel/xina/jobs/6/workers)" 1 || rc=1
xinactl -j job show 5 | jq -e '.jobs[0].members[1].port == 4001' >/dev/null || rc=1
log_test $rc "an edit: job 5 replaced with the new member port, job 6 added"

# A new secret in the key file: jobs 5 and 6 kept (same index and slot
# memory, counters kept), given the new secret by netlink, nothing printed.
# The jobs' counters only: the switch-wide ones count whatever else the
# port receives meanwhile (pass: any packet not xina's, e.g. of the stack).
# No traffic here shows the new secret at work, so the check is only that
# nothing was replaced: xina_kfunc's rekey test shows JOB_SET at work
# (a new secret: the old one's contributions drop_auth,
# the new one's count, the result under the new result key), and the host
# test xinactl_conf.sh does it end to end for apply on the map backend.
jobs_state() {
	xinactl -j job show
	xinactl -j stats | jq -c 'del(.switch)'
}
rc=0
before=$(jobs_state)
(umask 077; echo $K2 > "$TMP/k.key")
apply_out "$TMP/b.conf" "" || rc=1
check_eq "$(jobs_state)" "$before" || rc=1
log_test $rc "a new secret in the key file: jobs kept in place (same job show, same counters), nothing replaced or printed"

# The new secret at work, end to end: a worker of job 5 (rank 0, behind
# va's peer in a namespace of its own) with the new key file joins; one
# with the old key file is told "bad key" (from the same UDP port: the
# answer goes where the member was learned).  The worker waits for rank 1
# after its join and gives up on the call: only its join is asked about.
rc=0
(umask 077; echo $K1 > "$TMP/old.key")
ip netns add w && ip link set vb netns w && ip -n w link set vb up &&
	ip -n w addr add 10.1.0.1/24 dev vb && ip -n w link set lo up &&
	ip addr add 10.1.0.254/24 dev va || rc=1
worker() {	# worker KEYFILE: rank 0 of job 5, once; its stderr
	ip netns exec w xina-allreduce --switch 10.1.0.254 --bind 10.1.0.1:5000 \
		--rank 0 --workers 2 --job 5 --slots 16 --elems 128 \
		--dtype i32 --bytes 512 --iters 1 --timeout-ms 1500 \
		--key-file "$1" 2>&1 >/dev/null
}
join0=$(xinactl -j stats job 5 | jq '.jobs[0].join')
out=$(worker "$TMP/k.key")
case "$out" in *"bad key"*|"") echo "  new key: $out"; rc=1 ;; esac
check_eq "$(xinactl -j stats job 5 | jq '.jobs[0].join')" $((join0 + 1)) || rc=1
auth0=$(xinactl -j stats job 5 | jq '.jobs[0].drop_auth')
out=$(worker "$TMP/old.key")
case "$out" in *"says the key file $TMP/old.key is not the job's (bad key)"*) ;;
*) echo "  old key: $out"; rc=1 ;; esac
[ "$(xinactl -j stats job 5 | jq '.jobs[0].drop_auth')" -gt "$auth0" ] ||
	{ echo "  drop_auth did not rise from $auth0"; rc=1; }
ip -n w link set vb netns 1 && ip netns del w && ip link set vb up || rc=1
log_test $rc "after apply, the new secret at work in the module: a worker with the new key file joins, one with the old is told bad key"

rc=0
before=$(xinactl -j job show; xinactl -j dev show)
sed 's/^backend module$/backend maps/' "$TMP/b.conf" > "$TMP/maps.conf"
out=$(xinactl apply "$TMP/maps.conf" 2>&1) && rc=1
echo "$out" | grep -q "maps.conf:1: backend maps, but module xina is loaded" ||
	{ echo "  $out"; rc=1; }
check_eq "$(xinactl -j job show; xinactl -j dev show)" "$before" || rc=1
log_test $rc "backend maps refused while the module is loaded; nothing changed"

# A file with a job 7 that xina.ko would refuse (mem_limit) changes
# nothing, though it also replaces job 6 (fewer slots), which apply would
# delete first: refused before any change, naming the job and the figures
# (/sys/kernel/xina); applied once the limit allows.  A job of more slots
# than the module takes is refused naming them, not by the kernel's
# "integer out of range".
rc=0
before=$(jobs_state)
limit=$(( $(cat /sys/kernel/xina/mem_used) + 4096 ))
echo $limit > /sys/module/xina/parameters/mem_limit
sed -i 's/^job 6 workers 1 /job 6 workers 1 slots 64 /' "$TMP/b.conf"
echo "job 7 workers 1 keyfile $TMP/k.key member 0 10.1.0.7" >> "$TMP/b.conf"
out=$(xinactl apply "$TMP/b.conf" 2>&1) && rc=1
echo "$out" | grep -q "job 7: [0-9]* bytes of slot memory, with [0-9]* of $limit in use by then" ||
	{ echo "  $out"; rc=1; }
echo "$out" | grep -q "job 7 does not fit in the switch (above); nothing was changed" ||
	{ echo "  $out"; rc=1; }
check_eq "$(jobs_state)" "$before" || rc=1
[ ! -e /sys/kernel/xina/jobs/7 ] || rc=1
echo 268435456 > /sys/module/xina/parameters/mem_limit
apply_out "$TMP/b.conf" "replace job 6" "add job 7" || rc=1
check_eq "$(cat /sys/kernel/xina/jobs/6/slots)" 64 || rc=1
out=$(xinactl job add 8 workers 1 slots 70000 keyfile "$TMP/k.key" member 0 10.1.0.8 2>&1) && rc=1
echo "$out" | grep -q "job 8: slots 70000: xina.ko takes at most 65536 slots a job" ||
	{ echo "  $out"; rc=1; }
[ ! -e /sys/kernel/xina/jobs/8 ] || rc=1
log_test $rc "a job xina.ko would refuse: apply changes nothing (the job it replaces kept) and says why; slots above max_slots named"

rc=0
echo "backend module" > "$TMP/empty.conf"
apply_out "$TMP/empty.conf" "del dev va" "del job 5" "del job 6" "del job 7" || rc=1
check_eq "$(ls /sys/kernel/xina/jobs | wc -l)" 0 || rc=1
# The detached programs hold the module (their kfuncs) until the kernel
# frees them, after an RCU grace period: slow under TCG on a busy host.
wait_until 100 rmmod xina 2>/dev/null || { rmmod xina; rc=1; }
log_test $rc "the empty file: every job and port removed; the module unloads"
exit $RET
