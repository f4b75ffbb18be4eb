#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# xinactl apply FILE / show-config on the maps backend: a file makes the
# running ports and jobs exactly its own; show-config prints them in the
# same format, and applying that output changes nothing; an edited file
# changes exactly what was edited (an untouched job keeps its slots and
# counters, an untouched port its program); every bad file is refused with
# FILE:LINE and changes nothing; a new secret in a job's key file rekeys the
# running job in place (the old secret stops verifying, the new one works);
# a job added by hand has no known key file.  A rack job's uplink to an
# upper switch (two levels) is taken with job add's words, shown, kept when
# it matches and replaced when it changes; a bad uplink is refused with
# FILE:LINE and changes nothing.
# Then "make install DESTDIR=..." and "make uninstall".
#
# Uses a private pin dir and state dir, and namespaces of its own:
# switch namespace: va (xina port) <-> vb (worker namespace); vc, vd spare.

. "$(dirname "$0")/lib.sh"

XINACTL=${XINACTL:-$O/xinactl}
PIN=/run/xina-conf-test-$$
NS_SW=$(unique_name xconf-sw-)
NS_W=$(unique_name xconf-w-)
TMP=$(mktemp -d)
export XINA_PIN_DIR=$PIN
export XINA_STATE_DIR=$TMP/state

require_root
require_cmd ip python3 mount groff make "$XINACTL" "$O/xina-allreduce"

cleanup()
{
	ip netns del "$NS_SW" 2>/dev/null
	ip netns del "$NS_W" 2>/dev/null
	umount "$PIN" 2>/dev/null
	rmdir "$PIN" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# xinactl in the switch namespace (the pin dir is the main namespace's).
xsw()
{
	ip netns exec "$NS_SW" "$XINACTL" "$@"
}

# A key file of 32 hex digits (the job's 128-bit secret), mode 0600.
mkkey()
{
	(umask 077; printf '%s\n' "$2" > "$1")
}

# Everything apply could change: jobs (with their index, slots, learned
# state), ports (with their program ids), XDP on the devices.
snapshot()
{
	xsw -j job show 2>&1
	xsw -j dev show 2>&1
	ip -n "$NS_SW" -d link show 2>&1 | grep -v "link/ether\|alias"
	ip netns exec "$NS_SW" tc filter show dev va ingress 2>&1
}

# refused MSG FILE [ENV...]: apply FILE fails, says MSG, changes nothing.
refused()
{
	local msg=$1 file=$2 before after err rc

	shift 2
	before=$(snapshot)
	err=$(ip netns exec "$NS_SW" env "$@" "$XINACTL" apply "$file" 2>&1 >/dev/null)
	rc=$?
	after=$(snapshot)
	if [ "$rc" -ne 1 ]; then
		check_err 1 "exit status $rc, want 1: $err"
	elif [[ "$err" != *"$msg"* ]]; then
		check_err 1 "said '$err', expected '$msg'"
	elif [ "$before" != "$after" ]; then
		check_err 1 "configuration changed: $(diff <(echo "$before") <(echo "$after") | head -5 | tr '\n' ' ')"
	fi
	log_test "refused: ${file#"$TMP/"} -> $msg"
}

# applied FILE WANT...: apply FILE succeeds and prints exactly the lines WANT.
applied()
{
	local file=$1 out rc

	shift
	out=$(xsw apply "$file" 2>&1)
	rc=$?
	check_err $rc "apply $file failed: $out"
	if [ "$out" != "$(printf '%s\n' "$@")" ]; then
		check_err 1 "apply printed '$(echo "$out" | tr '\n' ';')', want '$(printf '%s;' "$@")'"
	fi
}

json_ok()
{
	local expr=${*: -1} out

	out=$("${@:1:$#-1}" 2>&1)
	check_err $? "failed: $out"
	python3 -c "import json, sys; j = json.load(sys.stdin); sys.exit(0 if ($expr) else 1)" \
		<<<"$out" 2>/dev/null
	check_err $? "JSON '$out' fails: $expr"
}

# The configuration as show-config prints it, without its comments.
shown()
{
	xsw show-config | grep -v '^#'
}

# One wire-v2 contribution of rank 0 of job @1 (from its member's address)
# with a random tag: it cannot verify under the job's secret.
send_xina()
{
	ip netns exec "$NS_W" python3 - "$1" <<'EOF'
import os, socket, struct, sys
# struct xina_hdr (48 bytes): version type dtype op flags exp count job
# rank weight slot round epoch aux offset tag, then one int32 element
hdr = struct.pack("!BBBBBbHIHHIIIIQ", 2, 1, 1, 1, 0, 0, 1, int(sys.argv[1]),
                  0, 0, 0, 0, 0, 0, 0) + os.urandom(8)
assert len(hdr) == 48
pkt = hdr + struct.pack("!i", 42)
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(pkt, ("10.99.0.1", 9277))
EOF
}

# allreduce KEYFILE: one allreduce of job 4 (workers 1, slots 8, elems 64)
# by its member, rank 0, with the secret of KEYFILE; its output in $TMP/ar.
allreduce()
{
	ip netns exec "$NS_W" "$O/xina-allreduce" --switch 10.99.0.1 --job 4 \
		--key-file "$1" --rank 0 --workers 1 --slots 8 --elems 64 \
		--bytes 1024 --iters 1 --bind 10.99.0.2 --join-timeout-ms 2000 \
		--timeout-ms 2000 > "$TMP/ar" 2>&1
}

# job 4's counters, one per line
stats4()
{
	xsw -j stats job 4 | python3 -c '
import json, sys
for k, v in sorted(json.load(sys.stdin)["jobs"][0].items()):
	print(k, v)'
}

stat_is()
{
	xsw -j stats job "$1" 2>/dev/null | python3 -c "
import json, sys
sys.exit(0 if json.load(sys.stdin)['jobs'][0]['$2'] == $3 else 1)" 2>/dev/null
}

echo "TAP version 13"

mkdir -p "$PIN" && mount -t bpf bpf "$PIN" &&
ip netns add "$NS_SW" && ip netns add "$NS_W" &&
ip -n "$NS_SW" link add va type veth peer name vb netns "$NS_W" &&
ip -n "$NS_SW" link add vc type veth peer name vd &&
ip -n "$NS_SW" addr add 10.99.0.1/24 dev va &&
ip -n "$NS_W" addr add 10.99.0.2/24 dev vb &&
ip -n "$NS_SW" link set va up && ip -n "$NS_SW" link set vc up &&
ip -n "$NS_SW" link set vd up && ip -n "$NS_W" link set vb up
check_err $? "cannot set up the pin dir and the namespaces"
log_test "pin dir $PIN, namespaces $NS_SW and $NS_W with veths"

K1=0123456789abcdef0011223344556677
K2=fedcba98765432100123456789abcdef
K3=00000000000000010000000000000002
mkkey "$TMP/k1.key" $K1
mkkey "$TMP/k2.key" $K2
mkkey "$TMP/k3.key" $K3

# ---- a first configuration ------------------------------------------------
cat > "$TMP/a.conf" <<EOF
# two ports, three jobs
backend maps
dev va
dev vc port 9300 mode generic   # a comment after words

job 4 workers 1 slots 8 elems 64 keyfile $TMP/k3.key member 0 10.99.0.2
job 1 workers 2 keyfile $TMP/k1.key
	member 1 10.0.0.2:9000
	# a comment inside a job
	member 0 10.0.0.1
job 2 workers 1
	slots 4 elems 8
	keyfile $TMP/k2.key
	member 0 10.0.0.9
EOF
applied "$TMP/a.conf" "add dev va" "add dev vc" "add job 1" "add job 2" "add job 4"
log_test "apply a.conf: two ports and three jobs added, in order"

json_ok xsw -j job show '[(k["id"], k["workers"], k["slots"], k["elems"],
	[(m["rank"], m["addr"], m["port"]) for m in k["members"]]) for k in j["jobs"]] == [
	(1, 2, 128, 256, [(0, "10.0.0.1", 0), (1, "10.0.0.2", 9000)]),
	(2, 1, 4, 8, [(0, "10.0.0.9", 0)]),
	(4, 1, 8, 64, [(0, "10.99.0.2", 0)])]'
out=$(xsw -j job show; xsw job show)
for k in $K1 $K2 $K3 ${K1:0:16} ${K2:0:16} ${K3:0:16}; do
	[[ "$out" != *"$k"* ]] || check_err 1 "job show shows a secret ($k)"
done
json_ok xsw -j job show 'all("key" not in k and "secret" not in k for k in j["jobs"])'
log_test "jobs as the file says; job show has no key or secret"

json_ok xsw -j dev show '[(d["ifname"], d["port"], d["mode"], d["attached"], d["tx"])
	for d in j["devs"]] == [("va", 9277, "native", True, True),
				("vc", 9300, "generic", True, True)]'
log_test "ports as the file says, defaults filled in"

cat > "$TMP/a.want" <<EOF
backend maps
dev va port 9277 mode native
dev vc port 9300 mode generic
job 1 workers 2 slots 128 elems 256 keyfile $TMP/k1.key
	member 0 10.0.0.1
	member 1 10.0.0.2:9000
job 2 workers 1 slots 4 elems 8 keyfile $TMP/k2.key
	member 0 10.0.0.9
job 4 workers 1 slots 8 elems 64 keyfile $TMP/k3.key
	member 0 10.99.0.2
EOF
shown > "$TMP/a.shown"
diff -u "$TMP/a.want" "$TMP/a.shown" > "$TMP/diff" 2>&1
check_err $? "show-config differs: $(tr '\n' ' ' < "$TMP/diff")"
log_test "show-config: the running configuration, canonical, with the key files"

# ---- round trip ---------------------------------------------------------------
xsw show-config > "$TMP/shown.conf"
before=$(snapshot)
applied "$TMP/shown.conf"
[ "$before" = "$(snapshot)" ]
check_err $? "apply of show-config's output changed the configuration"
log_test "apply of show-config's output: no change, nothing printed"

before=$(snapshot)
out=$(xsw show-config | xsw apply - 2>&1)
check_err $? "apply - failed: $out"
[ -z "$out" ] && [ "$before" = "$(snapshot)" ]
check_err $? "apply - of show-config: '$out', or the configuration changed"
log_test "show-config | apply -: no change"

json_ok xsw -j apply "$TMP/a.conf" 'j == {"dry_run": False, "changes": []}'
log_test "apply -j of the same file: no changes"

# ---- bad files change nothing ----------------------------------------------------
bad()
{
	printf '%s\n' "$@" > "$TMP/bad.conf"
}
B=$TMP/bad.conf
J="workers 1 keyfile $TMP/k1.key member 0 10.0.0.1"
bad "backend maps" "jbo 1 $J"
refused "$B:2: unknown object 'jbo'" "$B"
bad "dev va" "	member 0 10.0.0.1"
refused "$B:2: dev va: unknown keyword 'member'" "$B"
bad "  job 1 $J"
refused "$B:1: indented line with no object above it" "$B"
bad "job 1 $J" "member 1 10.0.0.2"
refused "$B:2: 'member' outside a job: indent it below its 'job' line" "$B"
bad "job 5 workers 1 member 0 10.0.0.1"
refused "$B:1: job 5: 'keyfile PATH' is required" "$B"
bad "job 5 workers 1 key 0x1 member 0 10.0.0.1"
refused "$B:1: job 5: keys are not taken in the configuration: keyfile PATH" "$B"
bad "job 5 workers 1 keyfile k1.key member 0 10.0.0.1"
refused "$B:1: keyfile 'k1.key' is not an absolute path" "$B"
bad "job 5 workers 1 keyfile $TMP/none.key member 0 10.0.0.1"
refused "$B:1: key file $TMP/none.key: No such file or directory" "$B"
mkkey "$TMP/open.key" $K1
chmod 0640 "$TMP/open.key"
bad "job 5 workers 1 keyfile $TMP/open.key member 0 10.0.0.1"
refused "$B:1: key file $TMP/open.key is accessible by group or others (mode 0640): it must be 0600 or stricter (chmod 600 $TMP/open.key)" "$B"
mkkey "$TMP/short.key" 0123456789abcdef
bad "job 5 workers 1 keyfile $TMP/short.key member 0 10.0.0.1"
refused "$B:1: key file $TMP/short.key does not hold a key: it must be one line of 32 lowercase hexadecimal digits ('xinactl genkey FILE' writes one)" "$B"
mkkey "$TMP/upper.key" 0123456789ABCDEF0011223344556677
bad "job 5 workers 1 keyfile $TMP/upper.key member 0 10.0.0.1"
refused "$B:1: key file $TMP/upper.key does not hold a key: it must be one line of 32 lowercase" "$B"
mkdir -m 0700 "$TMP/dir.key"
bad "job 5 workers 1 keyfile $TMP/dir.key member 0 10.0.0.1"
refused "$B:1: key file $TMP/dir.key is not a regular file" "$B"
bad "job 5 keyfile $TMP/k1.key" "	member 0 10.0.0.1"
refused "$B:1: job 5: 'workers N' is required" "$B"
bad "job 5 workers 2 keyfile $TMP/k1.key" "	member 0 10.0.0.1" "	member 0 10.0.0.2"
refused "$B:3: job 5: rank 0 given twice (first at line 2)" "$B"
bad "job 5 workers 2 keyfile $TMP/k1.key" "	member 0 10.0.0.1"
refused "$B:1: job 5: rank 1 missing" "$B"
bad "job 5 workers 1 keyfile $TMP/k1.key" "	member 0 10.0.0.1" "	member 1 10.0.0.2"
refused "$B:3: job 5: rank 1 out of range 0..0 (workers 1)" "$B"
bad "job 5 workers 1 keyfile $TMP/k1.key" "	member 0 10.0.0"
refused "$B:2: member address '10.0.0' is not IPv4" "$B"
bad "job 5 workers 1 elems 2049 keyfile $TMP/k1.key member 0 10.0.0.1"
refused "$B:1: elems '2049' out of range 1..2048" "$B"
bad "job 5 workers 1 keyfile $TMP/k1.key member 0 10.0.0.1 slots"
refused "$B:1: job: 'slots' needs a value" "$B"
bad "job 1 $J" "job 1 $J"
refused "$B:2: job 1 given twice (first at line 1)" "$B"
bad "dev va" "dev vd" "dev va mode generic"
refused "$B:3: dev va given twice (first at line 1)" "$B"
bad "dev nosuch0"
refused "$B:1: device 'nosuch0' not found in this network namespace" "$B"
bad "dev vd port 0"
refused "$B:1: port '0' out of range 1..65535" "$B"
bad "dev vd mode fast"
refused "$B:1: mode 'fast' is neither native nor generic" "$B"
bad "backend maps" "backend maps"
refused "$B:2: 'backend' given twice (first at line 1)" "$B"
bad "backend tofino"
refused "$B:1: backend 'tofino' is neither maps nor module" "$B"
refused "cannot open '$TMP/nosuch.conf'" "$TMP/nosuch.conf"

# every mistake is named, and a good change beside them is not made
sed -e 's/^job 2 workers 1$/job 2 workers 1 elems 0/' -e 's/^dev vc .*/dev vd/' \
	-e 's/10.0.0.2:9000/10.0.0.256:9000/' "$TMP/a.conf" > "$B"
refused "$B: 2 errors" "$B"
err=$(xsw apply "$B" 2>&1)
[[ "$err" == *"$B:8: member address '10.0.0.256:9000' is not IPv4"* &&
   "$err" == *"$B:11: elems '0' out of range"* ]]
check_err $? "not every mistake named: $err"
log_test "a file with two mistakes names both and changes nothing (not the good dev line either)"

sed 's/^backend maps$/backend module/' "$TMP/a.conf" > "$TMP/module.conf"
refused "backend module: 'false xina' failed; nothing was changed" \
	"$TMP/module.conf" XINA_MODPROBE=false

out=$(xsw apply 2>&1)
[ $? -eq 1 ] && [[ "$out" == *"apply: missing FILE"* ]]
check_err $? "apply without FILE: $out"
out=$(xsw apply "$TMP/a.conf" now 2>&1)
[ $? -eq 1 ] && [[ "$out" == *"unknown argument 'now'"* ]]
check_err $? "apply FILE now: $out"
out=$(xsw -j show-config 2>&1)
[ $? -eq 1 ] && [[ "$out" == *"show-config prints the configuration file format"* ]]
check_err $? "show-config -j: $out"
log_test "apply without FILE, with an unknown word; show-config -j: refused"

# ---- an edited file changes exactly what was edited ---------------------------------
stat_is 4 drop_auth 0 && stat_is 4 drop_key 0
check_err $? "job 4's drop counters are not 0: $(xsw -j stats job 4)"
send_xina 4
busywait 5 stat_is 4 drop_auth 1
check_err $? "drop_auth of job 4 is not 1: $(xsw -j stats job 4)"
stat_is 4 drop_key 0
check_err $? "drop_key of job 4 is not 0: $(xsw -j stats job 4)"
log_test "job 4 counted a packet with a wrong tag under drop_auth (drop_key stays 0)"

va_prog=$(xsw -j dev show | python3 -c 'import json, sys; print(json.load(sys.stdin)["devs"][0]["prog_id"])')
job4=$(xsw -j job show 4 | python3 -c 'import json, sys; k = json.load(sys.stdin)["jobs"][0]; print(k["idx"], k["slot_base"])')

# job 1: a member's port; job 2: gone; job 3: new; vc: gone; vd: new;
# va and job 4: as they were
cat > "$TMP/b.conf" <<EOF
dev vd mode generic
dev va port 9277
job 3 workers 1 keyfile $TMP/k2.key member 0 10.0.0.3
job 1 workers 2 slots 128 keyfile $TMP/k1.key
	member 0 10.0.0.1
	member 1 10.0.0.2:9001
job 4 workers 1 slots 8 elems 64 keyfile $TMP/k3.key member 0 10.99.0.2
EOF
before=$(snapshot)
out=$(xsw apply "$TMP/b.conf" dry-run 2>&1)
check_err $? "dry-run failed: $out"
[ "$out" = "$(printf '%s\n' "add dev vd" "del dev vc" "del job 2" "replace job 1" "add job 3")" ]
check_err $? "dry-run printed '$(echo "$out" | tr '\n' ';')'"
[ "$before" = "$(snapshot)" ]
check_err $? "dry-run changed the configuration"
log_test "apply b.conf dry-run: the changes printed, none made"

applied "$TMP/b.conf" "add dev vd" "del dev vc" "del job 2" "replace job 1" "add job 3"
log_test "apply b.conf: exactly the edited jobs and ports changed"

json_ok xsw -j job show '[(k["id"], [(m["addr"], m["port"]) for m in k["members"]])
	for k in j["jobs"]] == [(1, [("10.0.0.1", 0), ("10.0.0.2", 9001)]),
	(3, [("10.0.0.3", 0)]), (4, [("10.99.0.2", 0)])]'
log_test "jobs 1 (new member port), 3 and 4; job 2 deleted"

# What the switch cannot hold is refused before any change: job 1 with
# 600 slots (a job has at most 512 of the 1024 slot versions) would be
# deleted and then refused, the job lost; job 9 finds no room left.  In a
# dry run as well.
sed 's/^job 1 workers 2 slots 128 /job 1 workers 2 slots 600 /' "$TMP/b.conf" > "$TMP/big.conf"
refused "$TMP/big.conf:4: job 1 does not fit in the switch (above); nothing was changed" "$TMP/big.conf"
err=$(xsw apply "$TMP/big.conf" dry-run 2>&1)
[ $? = 1 ] && [[ "$err" == *"slots 600 too many"* ]]
check_err $? "dry-run of a job too large: '$err'"
cp "$TMP/b.conf" "$TMP/room.conf"
echo "job 9 workers 1 slots 400 keyfile $TMP/k1.key member 0 10.0.0.9" >> "$TMP/room.conf"
refused "$TMP/room.conf:8: job 9 does not fit in the switch (above); nothing was changed" "$TMP/room.conf"
err=$(xsw apply "$TMP/room.conf" 2>&1)
[[ "$err" == *"no room for slots 400"* ]]
check_err $? "a job with no room said '$err'"
log_test "a replace or an add the slot memory cannot hold: refused before any change, job 1 kept"

# An apply that stops at a port (lo has no native XDP): the ports go
# first, so no job has changed yet.  Job 1, to be replaced (64 slots), still
# runs with its 128; job 4, kept with a new key file in the file, still
# runs the old one's secret, and show-config still names the old file.
cp "$TMP/k3.key" "$TMP/k3b.key"
sed -e "s|keyfile $TMP/k3.key|keyfile $TMP/k3b.key|" \
	-e 's/^job 1 workers 2 slots 128 /job 1 workers 2 slots 64 /' \
	"$TMP/b.conf" > "$TMP/stop.conf"
echo "dev lo" >> "$TMP/stop.conf"
err=$(xsw apply "$TMP/stop.conf" 2>&1)
[ $? = 1 ] && [[ "$err" == *"device 'lo' has no native XDP support"* ]]
check_err $? "apply with dev lo said '$err'"
json_ok xsw -j job show 1 'j["jobs"][0]["slots"] == 128'
shown | grep -q "^job 4 .*keyfile $TMP/k3.key\b"
check_err $? "after the stop show-config names: $(shown | grep '^job 4')"
applied "$TMP/b.conf"
log_test "apply stopped at a port: job 1 not replaced, show-config keeps a kept job's old key file"

# A port the kernel refuses after others changed: they are put back.  vz
# (a bridge: no native XDP) runs xina in generic mode; the file adds a new
# veth ve, then replaces vz to native, which is refused: ve is detached
# again (its clsact qdisc, which the attach added, goes too), vz runs generic again
# (new programs, same settings), va and vd and the jobs are untouched.
ports()
{
	xsw -j dev show | python3 -c '
import json, sys
for d in json.load(sys.stdin)["devs"]:
	print(d["ifname"], d["mode"], d["port"], d["tx"])'
}
ip -n "$NS_SW" link add vz type bridge && ip -n "$NS_SW" link set vz up &&
ip -n "$NS_SW" link add ve type veth peer name vf && ip -n "$NS_SW" link set ve up &&
xsw dev attach vz mode generic
check_err $? "cannot attach bridge vz in generic mode"
ports_before=$(ports)
progs_before=$(xsw -j dev show | python3 -c '
import json, sys
print([(d["ifname"], d["prog_id"]) for d in json.load(sys.stdin)["devs"] if d["ifname"] != "vz"])')
jobs_before=$(xsw -j job show)
{ cat "$TMP/b.conf"; echo "dev ve mode generic"; echo "dev vz"; } > "$TMP/roll.conf"
err=$(xsw apply "$TMP/roll.conf" 2>&1)
rc=$?
[ $rc = 1 ] && [[ "$err" == *"$TMP/roll.conf:9: device 'vz' has no native XDP support"* &&
	"$err" == *"apply of $TMP/roll.conf stopped at a port (above); the ports run as before; nothing was changed"* ]]
check_err $? "apply refused at vz said ($rc) '$err'"
[ "$(echo "$err" | grep -v '^Error:\|^libbpf' | tr '\n' ';')" = "add dev ve;replace dev vz;" ]
check_err $? "apply printed '$(echo "$err" | tr '\n' ';')'"
[ "$(ports)" = "$ports_before" ]
check_err $? "ports after the refusal: $(ports | tr '\n' ';'), before: $(echo "$ports_before" | tr '\n' ';')"
[ "$(xsw -j dev show | python3 -c '
import json, sys
print([(d["ifname"], d["prog_id"]) for d in json.load(sys.stdin)["devs"] if d["ifname"] != "vz"])')" = "$progs_before" ]
check_err $? "va or vd got new programs"
[ "$(xsw -j job show)" = "$jobs_before" ]
check_err $? "the jobs changed"
ip -n "$NS_SW" link show ve | grep -q "prog/xdp"
check_fail $? "XDP still on ve"
ip netns exec "$NS_SW" tc qdisc show dev ve | grep -q clsact
check_fail $? "a clsact qdisc left on ve"
ip netns exec "$NS_SW" tc filter show dev vz ingress | grep -q xina_fanout
check_err $? "no xina_fanout filter on vz again"
xsw dev detach vz && ip -n "$NS_SW" link del vz && ip -n "$NS_SW" link del ve
check_err $? "cannot take vz away"
log_test "apply stopped at a replaced port: the port added before it detached, the replaced one runs as before"

json_ok xsw -j dev show '[(d["ifname"], d["mode"], d["prog_id"] == '"$va_prog"')
	for d in j["devs"]] == [("va", "native", True), ("vd", "generic", False)]'
ip -n "$NS_SW" link show vc | grep -q "prog/xdp"
check_fail $? "XDP still on vc"
log_test "port va kept its program ($va_prog), vc detached, vd attached"

json_ok xsw -j job show 4 '"%d %d" % (j["jobs"][0]["idx"], j["jobs"][0]["slot_base"]) == "'"$job4"'"'
stat_is 4 drop_auth 1
check_err $? "job 4's counters were reset: $(xsw -j stats job 4)"
log_test "job 4 untouched: same index and slots ($job4), counter kept"

# The allreduces come after the rekey: a second run of a worker starts
# again at slot 0 round 0, which a first run would have used up (there
# are no epochs before the join handshake).
mkkey "$TMP/k3.old" $K3
stats_before=$(stats4)
mkkey "$TMP/k3.key" $K1
applied "$TMP/b.conf"
json_ok xsw -j job show 4 '"%d %d" % (j["jobs"][0]["idx"], j["jobs"][0]["slot_base"]) == "'"$job4"'"'
[ "$stats_before" = "$(stats4)" ]
check_err $? "job 4's counters changed: $(diff <(echo "$stats_before") <(stats4) | tr '\n' ' ')"
log_test "a new secret in job 4's key file: nothing replaced, same index and slots, counters kept"

auth=$(xsw -j stats job 4 | python3 -c 'import json, sys; print(json.load(sys.stdin)["jobs"][0]["drop_auth"])')
allreduce "$TMP/k3.old"
check_fail $? "allreduce with job 4's old secret succeeded: $(tail -n3 "$TMP/ar")"
xsw -j stats job 4 | python3 -c '
import json, sys
sys.exit(0 if json.load(sys.stdin)["jobs"][0]["drop_auth"] > '"$auth"' else 1)'
check_err $? "no drop_auth for the old secret: $(xsw -j stats job 4)"
allreduce "$TMP/k3.key"
check_err $? "allreduce with job 4's new secret failed: $(tail -n3 "$TMP/ar")"
log_test "job 4 rekeyed in place: the old secret is refused (drop_auth), the new one completes an allreduce"

chmod 0400 "$TMP/k3.key"
applied "$TMP/b.conf"
log_test "key file mode 0400 is good too; nothing to change"

# ---- jobs not set by apply ----------------------------------------------------------
xsw job add 9 workers 1 keyfile "$TMP/k9.key" member 0 10.0.0.99
check_err $? "job add 9 failed"
xsw show-config > "$TMP/c.conf"
grep -q "^# job 9: key file not known" "$TMP/c.conf" &&
	grep -q "^job 9 workers 1 slots 128 elems 256$" "$TMP/c.conf"
check_err $? "show-config of job 9: $(grep -A1 'job 9' "$TMP/c.conf" | tr '\n' ' ')"
log_test "show-config: a job added by hand has no known key file"

refused "job 9: 'keyfile PATH' is required" "$TMP/c.conf"

# the state file follows what runs: job 1 changed by hand is no longer known
xsw job del 1 && xsw job add 1 workers 1 keyfile "$TMP/k1.key" member 0 10.0.0.1
check_err $? "job del 1 / job add 1 failed"
xsw show-config | grep -q "^job 1 workers 1 slots 128 elems 256$"
check_err $? "job 1 re-added by hand still shows a key file"
applied "$TMP/b.conf" "del job 9" "replace job 1"
xsw show-config | grep -v '^#' | grep -q "^job 1 workers 2 slots 128 elems 256 keyfile $TMP/k1.key$"
check_err $? "job 1's key file not shown after apply"
log_test "a job changed by hand: key file unknown until apply sets it again"

# ---- the empty file owns everything too ----------------------------------------------
: > "$TMP/empty.conf"
applied "$TMP/empty.conf" "del dev va" "del dev vd" "del job 1" "del job 3" "del job 4"
json_ok xsw -j job show 'j["jobs"] == []'
json_ok xsw -j dev show 'j["devs"] == []'
[ "$(shown)" = "backend maps" ]
check_err $? "show-config after the empty file: $(shown | tr '\n' ' ')"
log_test "apply of an empty file: every job and port removed"

applied "$TMP/a.conf" "add dev va" "add dev vc" "add job 1" "add job 2" "add job 4"
shown | diff -u "$TMP/a.want" - > "$TMP/diff" 2>&1
check_err $? "show-config differs: $(tr '\n' ' ' < "$TMP/diff")"
log_test "a.conf applied again from nothing: the same running configuration"

# ---- a rack job with an uplink (two levels) ----------------------------------------
# The upper switch is the worker namespace's address: the route to it
# leaves by va from 10.99.0.1, which is all "up" needs (nothing answers).
mkkey "$TMP/up.key" $K2
cat "$TMP/a.conf" - > "$TMP/u.conf" <<EOF
job 7 workers 4 slots 8 elems 64 keyfile $TMP/k1.key
	up 10.99.0.2 upjob 70 uprank 1
	upkeyfile $TMP/up.key
	member 3 10.0.0.21:9000
	member 2 10.0.0.20
EOF
applied "$TMP/u.conf" "add job 7"
json_ok xsw -j job show 7 '[(k["up"]["addr"], k["up"]["port"], k["up"]["job"],
	k["up"]["rank"], k["up"]["resend_ms"], k["up"]["saddr"],
	[(m["rank"], m["addr"], m["port"]) for m in k["members"]])
	for k in j["jobs"]] == [("10.99.0.2", 9277, 70, 1, 20, "10.99.0.1",
	[(2, "10.0.0.20", 0), (3, "10.0.0.21", 9000)])]'
log_test "apply u.conf: rack job 7 added with its uplink (default port and upresend) and only its rack's members"

{ cat "$TMP/a.want"; cat <<EOF
job 7 workers 4 slots 8 elems 64 keyfile $TMP/k1.key
	up 10.99.0.2:9277 upjob 70 uprank 1 upkeyfile $TMP/up.key upresend 20
	member 2 10.0.0.20
	member 3 10.0.0.21:9000
EOF
} > "$TMP/u.want"
shown | diff -u "$TMP/u.want" - > "$TMP/diff" 2>&1
check_err $? "show-config differs: $(tr '\n' ' ' < "$TMP/diff")"
log_test "show-config: the uplink in the file's format, with its upkeyfile"

job7=$(xsw -j job show 7 | python3 -c 'import json, sys; k = json.load(sys.stdin)["jobs"][0]; print(k["idx"], k["slot_base"])')
xsw show-config > "$TMP/u.shown"
before=$(snapshot)
applied "$TMP/u.shown"
applied "$TMP/u.conf"
[ "$before" = "$(snapshot)" ]
check_err $? "applying show-config's output or u.conf again changed the configuration"
json_ok xsw -j job show 7 '"%d %d" % (j["jobs"][0]["idx"], j["jobs"][0]["slot_base"]) == "'"$job7"'"'
log_test "apply of show-config's output, and of u.conf again: nothing changed, job 7 kept ($job7)"

sed 's/upjob 70/upjob 71/' "$TMP/u.conf" > "$TMP/u2.conf"
applied "$TMP/u2.conf" "replace job 7"
json_ok xsw -j job show 7 'j["jobs"][0]["up"]["job"] == 71'
sed 's/uprank 1$/uprank 1 upresend 50/' "$TMP/u2.conf" > "$TMP/u3.conf"
applied "$TMP/u3.conf" "replace job 7"
json_ok xsw -j job show 7 'j["jobs"][0]["up"]["resend_ms"] == 50'
sed 's/up 10.99.0.2 /up 10.99.0.2:9300 /' "$TMP/u3.conf" > "$TMP/u4.conf"
applied "$TMP/u4.conf" "replace job 7"
json_ok xsw -j job show 7 'j["jobs"][0]["up"]["port"] == 9300'
applied "$TMP/u4.conf"
log_test "a changed upjob, upresend, upper port: job 7 replaced each time, then kept"

# An uplink whose route is refused (the upper switch at this switch's own
# address) is found before any change: job 7, which the file replaces,
# is kept as it ran.
sed 's/up 10.99.0.2:9300 /up 10.99.0.1:9300 /' "$TMP/u4.conf" > "$TMP/u5.conf"
refused "job 7 does not fit in the switch (above); nothing was changed" "$TMP/u5.conf"
err=$(xsw apply "$TMP/u5.conf" dry-run 2>&1)
[[ "$err" == *"job 7: the route to the upper switch 10.99.0.1 leaves from 10.99.0.1, which is the upper switch itself"* ]]
check_err $? "a route to itself said '$err'"
json_ok xsw -j job show 7 'j["jobs"][0]["up"]["addr"] == "10.99.0.2"'
log_test "an uplink routed to the switch itself: refused before any change, job 7 kept"

# up_keys: the keys job 7's uplink tags with (xina_ups: its member and
# result keys), as the fast path reads them.
up_keys()
{
	local idx

	idx=$(xsw -j job show 7 | python3 -c 'import json, sys; print(json.load(sys.stdin)["jobs"][0]["idx"])')
	ip netns exec "$NS_SW" bpftool -j map lookup pinned "$PIN/xina_ups" \
		key $((idx & 255)) $(((idx >> 8) & 255)) 0 0 | python3 -c '
import json, sys
v = json.load(sys.stdin)["formatted"]["value"]
print(v["kmine"], v["kres"])'
}
job7=$(xsw -j job show 7 | python3 -c 'import json, sys; k = json.load(sys.stdin)["jobs"][0]; print(k["idx"], k["slot_base"])')
keys0=$(up_keys)
[ -n "$keys0" ]
check_err $? "job 7's uplink keys could not be read from $PIN/xina_ups"
cp "$TMP/up.key" "$TMP/up.key.old"
"$O/xinactl" genkey "$TMP/up.new" >/dev/null && mv "$TMP/up.new" "$TMP/up.key"
applied "$TMP/u4.conf"
json_ok xsw -j job show 7 '"%d %d" % (j["jobs"][0]["idx"], j["jobs"][0]["slot_base"]) == "'"$job7"'"'
keys1=$(up_keys)
[ -n "$keys1" ] && [ "$keys1" != "$keys0" ]
check_err $? "a new secret in job 7's upkeyfile left its uplink's keys as they were"
applied "$TMP/u4.conf"
[ "$(up_keys)" = "$keys1" ]
check_err $? "applying the same upkeyfile again changed the uplink's keys"
cp "$TMP/up.key.old" "$TMP/up.key"
applied "$TMP/u4.conf"
[ "$(up_keys)" = "$keys0" ]
check_err $? "the old upper secret back in upkeyfile: keys not the first ones"
log_test "a new secret in job 7's upkeyfile: job kept (same index and slots), its uplink's keys replaced in place"

U="up 10.99.0.2 upjob 70 uprank 0 upkeyfile $TMP/up.key"
bad "job 5 workers 2 keyfile $TMP/k1.key" "	up 10.99.0.2 uprank 0 upkeyfile $TMP/up.key" "	member 0 10.0.0.1"
refused "$B:1: job 5: an uplink needs 'upjob' too" "$B"
bad "job 5 workers 2 keyfile $TMP/k1.key" "	up 10.99.0.2 upjob 70 uprank 0" "	upkeyfile up.key member 0 10.0.0.1"
refused "$B:3: upkeyfile 'up.key' is not an absolute path" "$B"
bad "job 5 workers 2 keyfile $TMP/k1.key member 0 10.0.0.1" "	member 1 10.0.0.2 upresend 30"
refused "$B:1: job 5: an uplink needs 'up' too" "$B"
bad "job 5 workers 2 keyfile $TMP/k1.key" "	up 10.99.0.2 upjob 70 uprank 0 upkeyfile $TMP/none.key" "	member 0 10.0.0.1"
refused "$B:2: upkeyfile: key file $TMP/none.key: No such file or directory" "$B"
bad "job 5 workers 2 keyfile $TMP/k1.key $U"
refused "$B:1: job 5: rank 0 missing" "$B"
bad "job 5 workers 2 keyfile $TMP/k1.key $U member 0 10.0.0.1" "	upresend 10 upresend 20"
refused "$B:2: job 5: 'upresend' given twice" "$B"
bad "job 5 workers 2 keyfile $TMP/k1.key $U member 0 10.0.0.1 upresend 0"
refused "$B:1: upresend '0' out of range 1..10000" "$B"
bad "job 5 workers 2 keyfile $TMP/k1.key $U member 0 10.0.0.1" \
	"job 6 workers 2 keyfile $TMP/k1.key $U member 1 10.0.0.2"
refused "$B:2: job 6: upper job 70 is the uplink of job 5 already (line 1)" "$B"
bad "backend module" "job 5 workers 2 keyfile $TMP/k1.key $U member 0 10.0.0.1"
refused "$B:2: job 5: an uplink ('up') needs the map backend" "$B" XINA_MODPROBE=false
bad "job 5 workers 2 keyfile $TMP/k1.key member 0 10.0.0.1" "	up 10.99.0.300 upjob 70 uprank 0 upkeyfile $TMP/up.key"
refused "$B:2: upper switch address '10.99.0.300' is not IPv4 ADDR[:PORT]" "$B"
bad "job 5 workers 2 keyfile $TMP/k1.key member 0 10.0.0.1" "	up 10.99.0.2:0 upjob 70 uprank 0 upkeyfile $TMP/up.key"
refused "$B:2: upper switch port '0' out of range 1..65535" "$B"
log_test "uplinks refused with FILE:LINE: incomplete, relative or missing upkeyfile, upresend alone, no member, twice, module backend, bad upper address or port"

xsw job add 8 workers 2 keyfile "$TMP/k1.key" member 1 10.0.0.31 \
	up 10.99.0.2:9301 upjob 80 uprank 2 upkeyfile "$TMP/up.key" upresend 40
check_err $? "job add 8 with an uplink failed"
xsw show-config > "$TMP/h.conf"
grep -q "^# job 8: key files not known" "$TMP/h.conf" &&
	grep -A1 "^job 8 workers 2 slots 128 elems 256$" "$TMP/h.conf" |
	grep -qx "	up 10.99.0.2:9301 upjob 80 uprank 2 upresend 40"
check_err $? "show-config of job 8: $(grep -A2 '^job 8' "$TMP/h.conf" | tr '\n' ' ')"
refused "job 8: an uplink needs 'upkeyfile' too" "$TMP/h.conf"
applied "$TMP/a.conf" "del job 7" "del job 8"
log_test "a rack job added by hand: show-config prints its uplink, its key files unknown; apply refuses that"

# ---- make install, make uninstall ------------------------------------------------------
ROOT=$TMP/root
if make -s -C "$XINA_ROOT" O="$O" DESTDIR="$ROOT" install > "$TMP/install.out" 2>&1; then
	for f in /usr/local/sbin/xinactl:755 /usr/local/share/man/man8/xinactl.8:644 \
		 /etc/systemd/system/xina.service:644 /etc/xina:700 \
		 /etc/xina/xina.conf.example:644 /usr/local/lib/libxina.so.0:755; do
		[ "$(stat -c %a "$ROOT${f%:*}" 2>/dev/null)" = "${f#*:}" ] ||
			check_err 1 "${f%:*}: mode $(stat -c %a "$ROOT${f%:*}" 2>&1), want ${f#*:}"
	done
	u=$ROOT/etc/systemd/system/xina.service
	grep -qx "ExecStart=/usr/local/sbin/xinactl apply /etc/xina/xina.conf" "$u" &&
		grep -qx "Type=oneshot" "$u" && grep -qx "RemainAfterExit=yes" "$u" &&
		grep -qx "After=network-online.target" "$u"
	check_err $? "xina.service: $(grep -v '^#' "$u" | tr '\n' ' ')"
else
	check_err 1 "make install failed: $(tail -n3 "$TMP/install.out")"
fi
log_test "make install DESTDIR: xinactl, xinactl.8, xina.service, /etc/xina (0700)"

# systemd-analyze checks the unit against this systemd (it warns of an
# unknown key or a bad value, and exits 0 all the same: no output is the
# pass); the command it runs must exist, so the copy runs this xinactl.
if command -v systemd-analyze >/dev/null; then
	sed "s|/usr/local/sbin/xinactl|$O/xinactl|" "$u" > "$TMP/xina.service"
	systemd-analyze verify --man=no "$TMP/xina.service" > "$TMP/verify.out" 2>&1
	check_err $? "systemd-analyze verify failed: $(tr '\n' ' ' < "$TMP/verify.out")"
	[ ! -s "$TMP/verify.out" ]
	check_err $? "systemd-analyze verify: $(tr '\n' ' ' < "$TMP/verify.out")"
	log_test "systemd-analyze verify xina.service: no complaint"
else
	log_skip "systemd-analyze verify xina.service" "systemd-analyze not installed"
fi

err=$(groff -man -Tutf8 -ww -z "$ROOT/usr/local/share/man/man8/xinactl.8" 2>&1)
check_err $? "groff failed: $err"
[ -z "$err" ]
check_err $? "groff warned: $err"
log_test "groff -man -ww xinactl.8: no warnings"

echo "local" > "$ROOT/etc/xina/xina.conf"
make -s -C "$XINA_ROOT" O="$O" DESTDIR="$ROOT" uninstall > "$TMP/uninstall.out" 2>&1
check_err $? "make uninstall failed: $(tail -n3 "$TMP/uninstall.out")"
left=$(cd "$ROOT" && find . ! -type d | sort | tr '\n' ' ')
[ "$left" = "./etc/xina/xina.conf " ]
check_err $? "left after uninstall: $left"
log_test "make uninstall: everything but the administrator's /etc/xina/xina.conf removed"

echo "1..$tap_n"
tap_end
