#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# xinactl: every bad command line is refused with a message that names the
# bad input, and leaves the configuration exactly as it was (jobs, ports,
# XDP attachments, the pin dir); jobs round-trip through add/show/del with
# the documented JSON; ports attach and detach on veths in namespaces made
# here; stats count packets sent into an attached port, a contribution
# tagged by an implementation of the tag written here in Python (SipHash,
# NH, the key derivation of bpf/xina_auth.h) adds, a forged one does not;
# key files are made 0600 and bad ones refused.
#
# Uses a private pin dir (/run/xina-test-PID), namespaces and a key
# directory of its own.

. "$(dirname "$0")/lib.sh"

XINACTL=${XINACTL:-$O/xinactl}
PIN=/run/xina-test-$$
PIN2=/run/xina-test-$$-par
NS_SW=$(unique_name xctl-sw-)
NS_W=$(unique_name xctl-w-)
NS_BR=$(unique_name xctl-br-)
export XINA_PIN_DIR=$PIN
KDIR=$(mktemp -d)
KF=$KDIR/job.key
K="keyfile $KF"

require_root
require_cmd ip python3 findmnt nsenter "$XINACTL"

cleanup()
{
	ip netns del "$NS_SW" 2>/dev/null
	ip netns del "$NS_W" 2>/dev/null
	ip netns del "$NS_BR" 2>/dev/null
	umount "$PIN" 2>/dev/null
	rmdir "$PIN" 2>/dev/null
	while umount "$PIN2" 2>/dev/null; do :; done
	rmdir "$PIN2" 2>/dev/null
	rm -rf "$KDIR"
}
trap cleanup EXIT

x()
{
	"$XINACTL" "$@"
}

xsw()
{
	ip netns exec "$NS_SW" "$XINACTL" "$@"
}

have_ns()
{
	ip netns list | grep -qw "$NS_SW"
}

# Everything a command could change: jobs, ports, XDP on the veths, mounts.
snapshot()
{
	x -j job show 2>&1
	x -j dev show 2>&1
	if have_ns; then
		xsw -j dev show 2>&1
		ip -n "$NS_SW" -d link show 2>&1
	fi
	findmnt -n -o FSTYPE "$PIN" 2>&1
	ls -a "$PIN" 2>&1
}

# refused MSG CMD...: CMD fails, says MSG, and changes nothing.
refused()
{
	local msg=$1 before after err rc

	shift
	before=$(snapshot)
	err=$("$@" 2>&1 >/dev/null)
	rc=$?
	after=$(snapshot)
	if [ "$rc" -eq 0 ]; then
		check_err 1 "exit status 0"
	elif [[ "$err" != *"$msg"* ]]; then
		check_err 1 "said '$err', expected '$msg'"
	elif [ "$before" != "$after" ]; then
		check_err 1 "configuration changed: $(diff <(echo "$before") <(echo "$after") | head -5 | tr '\n' ' ')"
	fi
	log_test "refused: ${*#"$XINACTL"} -> $msg"
}

# json_ok CMD... PYEXPR: CMD succeeds, prints JSON, PYEXPR holds for it (j).
json_ok()
{
	local expr=${*: -1} out

	out=$("${@:1:$#-1}" 2>&1)
	check_err $? "failed: $out"
	python3 -c "import json, sys; j = json.load(sys.stdin); sys.exit(0 if ($expr) else 1)" \
		<<<"$out" 2>/dev/null
	check_err $? "JSON '$out' fails: $expr"
}

# send_xina JOB KEYFILE: one contribution of rank 0 from the worker
# namespace to the switch port, one int32 element, in the job's current
# epoch (job show), tagged with the keys derived from KEYFILE by this
# independent implementation of bpf/xina_auth.h.
send_xina()
{
	local job=$1 keyfile=$2 epoch

	epoch=$(x -j job show "$job" | python3 -c 'import json, sys; print(json.load(sys.stdin)["jobs"][0]["epoch"])')
	ip netns exec "$NS_W" python3 - "$job" "$keyfile" "$epoch" <<'EOF'
import socket, struct, sys

M = (1 << 64) - 1


def rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & M


def siphash24(key, msg):
    k0, k1 = struct.unpack("<QQ", key)
    v = [k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d,
         k0 ^ 0x6c7967656e657261, k1 ^ 0x7465646279746573]

    def rnd():
        v[0] = (v[0] + v[1]) & M
        v[1] = rotl(v[1], 13) ^ v[0]
        v[0] = rotl(v[0], 32)
        v[2] = (v[2] + v[3]) & M
        v[3] = rotl(v[3], 16) ^ v[2]
        v[0] = (v[0] + v[3]) & M
        v[3] = rotl(v[3], 21) ^ v[0]
        v[2] = (v[2] + v[1]) & M
        v[1] = rotl(v[1], 17) ^ v[2]
        v[2] = rotl(v[2], 32)

    tail = len(msg) & 7
    words = [struct.unpack("<Q", msg[i:i + 8])[0]
             for i in range(0, len(msg) - tail, 8)]
    last = (len(msg) << 56) & M
    for i, c in enumerate(msg[len(msg) - tail:]):
        last |= c << (8 * i)
    for m in words + [last]:
        v[3] ^= m
        rnd()
        rnd()
        v[0] ^= m
    v[2] ^= 0xff
    for _ in range(4):
        rnd()
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def derive(secret, label, job, rank, ctr):
    return siphash24(secret, label + struct.pack("<IIII", job, rank, ctr, 0))


job = int(sys.argv[1])
secret = bytes.fromhex(open(sys.argv[2]).read().strip())
epoch = int(sys.argv[3])
key = struct.pack("<QQ", derive(secret, b"xina-mbr", job, 0, 0),
                  derive(secret, b"xina-mbr", job, 0, 1))
n = derive(secret, b"xina-nh\0", job, 0, 0)
elem = 42
# NH of one element: the pair (42, 0 padding) with the key's first words
nh = ((elem + (n & 0xffffffff)) % 2**32) * (n >> 32) & M
# struct xina_hdr: version type dtype op flags exp count job rank weight
# slot round epoch aux offset, then the tag, then one int32 element
hdr = struct.pack("!BBBBBbHIHHIIIIQ", 2, 1, 1, 1, 0, 0, 1, job, 0, 0,
                  0, 0, epoch, 0, 0)
tag = siphash24(key, hdr + struct.pack("<Q", nh))
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(hdr + struct.pack("!Qi", tag, elem), ("10.99.0.1", 9277))
EOF
}

stat_is()
{
	local job=$1 name=$2 want=$3

	x -j stats job "$job" 2>/dev/null | python3 -c "
import json, sys
j = json.load(sys.stdin)
sys.exit(0 if j['jobs'][0]['$name'] == $want else 1)" 2>/dev/null
}

echo "TAP version 13"

# ---- nothing set up yet ----------------------------------------------------
NL="xina is not loaded: no maps under $PIN"
refused "$NL" x job del 1
refused "$NL" x job show 1
refused "$NL" x stats
refused "$NL" x stats job 1
refused "$NL" x job rounds 1
refused "$NL" x dev detach lo
# the first job, refused by the map backend: the setup made for it goes
# (no mount, no pin dir, no maps)
refused "slots 600 too many" x job add 5 $K workers 1 slots 600 member 0 10.0.0.1
# and the first port, refused by the kernel (a bridge has no native XDP):
# nsenter keeps this mount namespace (ip netns exec would hide a mount)
ip netns add "$NS_BR" && ip -n "$NS_BR" link add br0 type bridge &&
ip -n "$NS_BR" link set br0 up
check_err $? "cannot set up namespace $NS_BR"
log_test "namespace $NS_BR with a bridge"
refused "device 'br0' has no native XDP support" \
	nsenter --net="/run/netns/$NS_BR" "$XINACTL" dev attach br0
ip netns exec "$NS_BR" tc qdisc show dev br0 | grep -q clsact
check_fail $? "the refused attach left a clsact qdisc on br0"
log_test "the refused first port leaves no qdisc"
ip netns del "$NS_BR"

json_ok x -j job show 'j == {"backend": "maps", "jobs": []}'
findmnt "$PIN" >/dev/null 2>&1
check_fail $? "a read-only command mounted $PIN"
log_test "job show with nothing set up: empty list, no mount"

# ---- jobs --------------------------------------------------------------------
x job add 1 $K workers 2 member 0 10.0.0.1 member 1 10.0.0.2:9000
check_err $? "job add 1 failed"
[ "$(findmnt -n -o FSTYPE "$PIN")" = bpf ]
check_err $? "$PIN is not a bpffs after job add"
log_test "job add 1 mounts a bpffs on the pin dir"

json_ok x -j job show 1 'j["backend"] == "maps" and len(j["jobs"]) == 1 and
	j["jobs"][0]["id"] == 1 and j["jobs"][0]["workers"] == 2 and
	j["jobs"][0]["slots"] == 128 and j["jobs"][0]["elems"] == 256 and
	"key" not in j["jobs"][0] and j["jobs"][0]["slot_base"] == 0 and
	0 < j["jobs"][0]["epoch"] < 2**32 and j["jobs"][0]["joined"] == 0 and
	[(m["rank"], m["addr"], m["port"]) for m in j["jobs"][0]["members"]] ==
	[(0, "10.0.0.1", 0), (1, "10.0.0.2", 9000)]'
log_test "job show 1: JSON with defaults, a fresh epoch nobody joined, members"

out=$(x job show 1)
[[ "$out" == *"job 1 workers 2 slots 128 elems 256"* &&
   "$out" == *" epoch "*" joined 0"* &&
   "$out" == *"member 1 10.0.0.2:9000"* && "$out" != *key* ]]
check_err $? "text output: $out"
log_test "job show 1: text output in the add grammar"

x job add 2 $K workers 1 slots 4 elems 8 member 0 10.99.0.2
check_err $? "job add 2 failed"
json_ok x -p job show 'len(j["jobs"]) == 2 and j["jobs"][1]["id"] == 2 and
	j["jobs"][1]["slot_base"] == 256 and j["jobs"][1]["idx"] == 1 and
	j["jobs"][1]["elems"] == 8 and
	j["jobs"][1]["epoch"] not in (0, j["jobs"][0]["epoch"])'
log_test "job add 2: next free index, first fit after job 1 (-p JSON)"

# a key file that does not exist yet is made, 0600, and said so
err=$(x job add 4 keyfile "$KDIR/made.key" workers 1 member 0 10.0.0.4 2>&1)
check_err $? "job add 4 with a new key file failed: $err"
[[ "$err" == *"created key file $KDIR/made.key"* ]]
check_err $? "xinactl did not say it made the key file: $err"
[ "$(stat -c %a "$KDIR/made.key")" = 600 ] &&
	grep -qxE '[0-9a-f]{32}' "$KDIR/made.key"
check_err $? "key file $(stat -c %a "$KDIR/made.key"): $(cat "$KDIR/made.key")"
x job set 4 keyfile "$KF" && x job del 4
check_err $? "job set 4 keyfile / job del 4 failed"
x genkey "$KDIR/gen.key" && [ "$(stat -c %a "$KDIR/gen.key")" = 600 ] &&
	! cmp -s "$KDIR/gen.key" "$KDIR/made.key"
check_err $? "genkey: $(ls -l "$KDIR")"
log_test "keyfile: a missing one is created 0600 with a new secret; genkey; job set"

# ---- bad job commands ----------------------------------------------------------
M1="member 0 10.0.0.1"
refused "unknown object 'jo'" x jo show
refused "unknown object 'j'" x j show
refused "unknown command 'sho'" x job sho
refused "unknown command 'ad'" x job ad 5 workers 1 $M1
refused "unknown command 'delete'" x job delete 1
refused "unknown argument 'worker'" x job add 5 $K worker 1 $M1
refused "unknown argument 'slot'" x job add 5 $K workers 1 slot 4 $M1
refused "unknown argument 'mem'" x job add 5 $K workers 1 mem 0 10.0.0.1
refused "missing job ID" x job add
refused "'workers' needs a value" x job add 5 $K workers
refused "'slots' needs a value" x job add 5 $K workers 1 $M1 slots
refused "'keyfile' needs a value" x job add 5 workers 1 $M1 keyfile
refused "'member' needs RANK and ADDR" x job add 5 $K workers 1 member 0
refused "'workers N' is required" x job add 5 $K $M1
refused "'workers' given twice" x job add 5 $K workers 1 workers 1 $M1
refused "'keyfile' given twice" x job add 5 $K workers 1 $K $M1
refused "'keyfile PATH' is required" x job add 5 workers 1 $M1
refused "job ID 'x' is not a number" x job add x $K workers 1 $M1
refused "job ID '0' out of range 1..4294967295" x job add 0 $K workers 1 $M1
refused "job ID '4294967296' out of range" x job add 4294967296 $K workers 1 $M1
refused "job ID '-1' is not a number" x job add -1 $K workers 1 $M1
refused "job ID '	7' is not a number" x job add $'\t7' $K workers 1 $M1
refused "job ID '
7' is not a number" x job show $'\n7'
# too large for 64 bits: one error, with the range of the field
refused "job ID '99999999999999999999' out of range 1..4294967295" \
	x job add 99999999999999999999 $K workers 1 $M1
err=$(x job add 99999999999999999999 $K workers 1 $M1 2>&1)
[ "$(grep -c 'out of range' <<<"$err")" = 1 ]
check_err $? "said: $err"
log_test "a number past 64 bits is said to be out of range once"
refused "workers 'abc' is not a number" x job add 5 $K workers abc $M1
refused "workers '1x' is not a number" x job add 5 $K workers 1x $M1
refused "workers '0' out of range 1..256" x job add 5 $K workers 0 $M1
refused "workers '257' out of range 1..256" x job add 5 $K workers 257 $M1
refused "slots '0' out of range" x job add 5 $K workers 1 slots 0 $M1
refused "elems '0' out of range 1..2048" x job add 5 $K workers 1 elems 0 $M1
refused "elems '2049' out of range 1..2048" x job add 5 $K workers 1 elems 2049 $M1
refused "keys are not taken on the command line: keyfile PATH" \
	x job add 5 workers 1 key 0x1234 $M1
refused "keys are not taken on the command line: keyfile PATH" \
	x job add 5 workers 1 key $M1
# key files as ssh wants private keys: 0600 or stricter, regular, ours
printf '00112233445566778899aabbccddeeff\n' > "$KDIR/open.key"
chmod 644 "$KDIR/open.key"
refused "key file $KDIR/open.key is accessible by group or others (mode 0644)" \
	x job add 5 keyfile "$KDIR/open.key" workers 1 $M1
printf 'not a key\n' > "$KDIR/bad.key"
chmod 600 "$KDIR/bad.key"
refused "key file $KDIR/bad.key does not hold a key" \
	x job add 5 keyfile "$KDIR/bad.key" workers 1 $M1
ln -s "$KF" "$KDIR/link.key"
refused "(a symbolic link is not followed)" \
	x job add 5 keyfile "$KDIR/link.key" workers 1 $M1
refused "key file $KDIR is not a regular file" \
	x job add 5 keyfile "$KDIR" workers 1 $M1
# a FIFO, which nobody writes: refused at once, not waited on
mkfifo -m 600 "$KDIR/fifo.key"
refused "key file $KDIR/fifo.key is not a regular file" \
	timeout 10 "$XINACTL" job add 5 keyfile "$KDIR/fifo.key" workers 1 $M1
refused "key file $KF: File exists" x genkey "$KF"
refused "Usage: xinactl genkey PATH" x genkey
refused "unknown argument 'x'" x genkey "$KDIR/new.key" x
refused "job 99 does not exist" x job set 99 $K
refused "job set: nothing to change" x job set 1
refused "job 1 has no uplink" x job set 1 upkeyfile "$KF"
refused "upkeyfile: key file $KDIR/none.key" x job set 1 upkeyfile "$KDIR/none.key"
[ ! -e "$KDIR/none.key" ]
check_err $? "job set upkeyfile made the missing upper key file"
# a key file that does not exist is made only for a change that is made
refused "job 99 does not exist" x job set 99 keyfile "$KDIR/new99.key"
[ ! -e "$KDIR/new99.key" ]
check_err $? "a refused job set left the key file it made"
refused "job 1 already exists" x job add 1 keyfile "$KDIR/new1.key" workers 1 $M1
[ ! -e "$KDIR/new1.key" ]
check_err $? "a refused job add left the key file it made"
refused "rank 1 missing" x job add 5 keyfile "$KDIR/new5.key" workers 2 $M1
[ ! -e "$KDIR/new5.key" ]
check_err $? "a job add refused while parsing made its key file"
refused "'upkeyfile' given twice" x job set 1 upkeyfile "$KF" upkeyfile "$KF"
refused "'upkeyfile' needs a value" x job set 1 upkeyfile
refused "job set: keys are not taken on the command line" x job set 1 key 5
refused "rank 0 given twice" \
	x job add 5 $K workers 2 member 0 10.0.0.1 member 0 10.0.0.2
refused "rank 2 missing" \
	x job add 5 $K workers 3 member 0 10.0.0.1 member 1 10.0.0.2
refused "rank 0 missing" x job add 5 $K workers 1
refused "rank 2 out of range 0..1" \
	x job add 5 $K workers 2 member 0 10.0.0.1 member 1 10.0.0.2 member 2 10.0.0.3
refused "rank '256' out of range 0..255" x job add 5 $K workers 1 member 256 10.0.0.1
refused "rank 'r' is not a number" x job add 5 $K workers 1 member r 10.0.0.1
refused "member address '10.0.0' is not IPv4" x job add 5 $K workers 1 member 0 10.0.0
refused "member address 'host' is not IPv4" x job add 5 $K workers 1 member 0 host
refused "member address '::1' is not IPv4" x job add 5 $K workers 1 member 0 ::1
refused "member port '99999' out of range 0..65535" \
	x job add 5 $K workers 1 member 0 10.0.0.1:99999
refused "member port 'p' is not a number" x job add 5 $K workers 1 member 0 10.0.0.1:p
refused "member address '0.0.0.0' is not a unicast" \
	x job add 5 $K workers 1 member 0 0.0.0.0
refused "member address '239.1.1.1' is not a unicast" \
	x job add 5 $K workers 1 member 0 239.1.1.1
refused "job 1 already exists" x job add 1 $K workers 1 $M1
refused "slots 600 too many" x job add 5 $K workers 1 slots 600 $M1
refused "no room for slots 500" x job add 5 $K workers 1 slots 500 $M1
refused "missing job ID" x job del
refused "job ID 'one' is not a number" x job del one
refused "unknown argument '2'" x job del 1 2
refused "job 99 does not exist" x job del 99
refused "job 99 does not exist" x job show 99
refused "unknown argument '2'" x job show 1 2
refused "job 99 does not exist" x job rounds 99
refused "missing job ID" x job rounds
refused "unknown argument '2'" x job rounds 1 2
refused "'stuck' needs a value" x job rounds 1 stuck
refused "stuck MS '0' out of range" x job rounds 1 stuck 0
refused "stuck MS 'x' is not a number" x job rounds 1 stuck x
refused "unknown argument '5'" x job rounds 1 stuck 10 5
refused "'job' given twice" x stats job 2 job 3
refused "job 99 does not exist" x stats job 99
refused "'job' needs a value" x stats job
refused "unknown argument 'jo'" x stats jo 1
refused "job ID '0' out of range" x stats job 0
refused "unknown argument 'x'" x backend x
refused "pin dir '' is empty" x -P "" job show

# ---- del and first fit ---------------------------------------------------------
x job del 1
check_err $? "job del 1 failed"
json_ok x -j job show '[k["id"] for k in j["jobs"]] == [2]'
log_test "job del 1: only job 2 is left"

x job add 3 $K workers 1 slots 64 member 0 10.0.0.9
check_err $? "job add 3 failed"
json_ok x -j job show 3 'j["jobs"][0]["slot_base"] == 0 and j["jobs"][0]["idx"] == 0 and
	j["jobs"][0]["epoch"] != 0 and j["jobs"][0]["joined"] == 0'
log_test "job add 3 reuses the freed slot range and index"

out=$(x backend)
[[ "$out" == *"backend: maps"* ]]
check_err $? "backend said: $out"
json_ok x -j backend 'j["backend"] == "maps" and j["module"] is False'
log_test "backend: maps"

# ---- ports ---------------------------------------------------------------------
# switch namespace: va (xina port) <-> vb (worker namespace); vc <-> vd spare
ip netns add "$NS_SW" && ip netns add "$NS_W" &&
ip -n "$NS_SW" link add va type veth peer name vb netns "$NS_W" &&
ip -n "$NS_SW" link add vc type veth peer name vd &&
ip -n "$NS_SW" addr add 10.99.0.1/24 dev va &&
ip -n "$NS_W" addr add 10.99.0.2/24 dev vb &&
ip -n "$NS_SW" link set va up && ip -n "$NS_SW" link set vc up &&
ip -n "$NS_SW" link set vd up && ip -n "$NS_W" link set vb up
check_err $? "cannot set up the namespaces"
log_test "namespaces $NS_SW and $NS_W with veths"

xsw dev attach va
check_err $? "dev attach va failed"
ip -n "$NS_SW" link show va | grep -q "prog/xdp"
check_err $? "no XDP program on va"
json_ok xsw -j dev show 'len(j["devs"]) == 1 and j["devs"][0]["ifname"] == "va" and
	j["devs"][0]["mode"] == "native" and j["devs"][0]["port"] == 9277 and
	j["devs"][0]["attached"] and j["devs"][0]["tx"]'
ip netns exec "$NS_SW" tc filter show dev va ingress | grep -q "xina_fanout"
check_err $? "no xina_fanout TC filter on va ingress"
log_test "dev attach va: native XDP and the TC fan-out, pinned"

xsw dev attach vc port 9300 mode generic
check_err $? "dev attach vc failed"
json_ok xsw -j dev show '[(d["ifname"], d["mode"], d["port"]) for d in j["devs"]] ==
	[("va", "native", 9277), ("vc", "generic", 9300)]'
log_test "dev attach vc port 9300 mode generic"

refused "already runs an XDP program" xsw dev attach va
refused "device 'ethX$$' not found" xsw dev attach ethX$$
refused "device 'ethX$$' not found" xsw dev detach ethX$$
refused "device 'vd' is not attached to xina" xsw dev detach vd
refused "missing DEV" xsw dev attach
refused "'port' needs a value" xsw dev attach vd port
refused "port '0' out of range 1..65535" xsw dev attach vd port 0
refused "port '65536' out of range 1..65535" xsw dev attach vd port 65536
refused "mode 'fast' is neither native nor generic" xsw dev attach vd mode fast
refused "'mode' given twice" xsw dev attach vd mode native mode generic
refused "unknown argument 'mod'" xsw dev attach vd mod native
# refused after its TC step (lo has no native XDP): the clsact qdisc that
# step added goes with the filter
refused "device 'lo' has no native XDP support" xsw dev attach lo
! ip netns exec "$NS_SW" tc qdisc show dev lo | grep -q clsact
check_err $? "a refused dev attach left a clsact qdisc on lo: $(ip netns exec "$NS_SW" tc qdisc show dev lo | tr '\n' ' ')"
refused "unknown command 'atach'" xsw dev atach vd
refused "unknown argument 'vd'" xsw dev detach va vd

# ---- stats ---------------------------------------------------------------------
json_ok x -j stats 'j["backend"] == "maps" and
	[k["id"] for k in j["jobs"]] == [2, 3] and
	set(j["jobs"][0]) == {"id", "rx", "contrib", "complete",
		"retrans_answered", "dup", "stale", "drop_key", "drop_member",
		"drop_range", "drop_op", "tx", "tx_unknown", "drop_auth",
		"drop_epoch", "join", "join_refused", "join_stale",
		"epoch_new", "rx_cpu"} and
	set(j["switch"]) == {"malformed", "no_job", "pass", "train",
		"train_part", "train_refused", "train_zero"}'
log_test "stats: every job, every counter, switch counters"

x genkey "$KDIR/other.key"
send_xina 2 "$KDIR/other.key"
busywait 5 stat_is 2 drop_auth 1
check_err $? "drop_auth of job 2 is not 1: $(x -j stats job 2)"
json_ok x -j stats job 2 'j["jobs"][0]["contrib"] == 0 and
	j["jobs"][0]["drop_key"] == 0 and j["jobs"][0]["rx"] == 1'
json_ok x -j job show 2 'j["jobs"][0]["members"][0]["ifindex"] == 0'
json_ok x -j job rounds 2 'j["job"] == 2 and j["open"] == 0 and
	j["rounds"] == [] and j["missing"] == [] and j["expected"] == 1'
log_test "stats job 2: a packet tagged with another secret counts as drop_auth, teaches nothing, opens no round"

send_xina 2 "$KF"
busywait 5 stat_is 2 complete 1
check_err $? "complete of job 2 is not 1: $(x -j stats job 2)"
json_ok x -j stats job 2 'j["jobs"][0]["contrib"] == 1 and j["jobs"][0]["rx"] == 2'
json_ok x -j job rounds 2 'j["open"] == 0 and j["rounds"] == []'
json_ok x -j job rounds 2 stuck 10 'j["open"] == 0 and j["stuck_ms"] == 10'
out=$(x job rounds 2)
[[ "$out" == "job 2 epoch "*": 0 rounds open" ]]
check_err $? "text of job rounds 2: $out"
log_test "stats job 2: a contribution tagged by the Python implementation completes its slot (no round left open)"

json_ok x -j job show 2 'j["jobs"][0]["members"][0]["ifindex"] != 0 and
	j["jobs"][0]["members"][0]["mac"] != "00:00:00:00:00:00"'
log_test "job show 2: the member's port and MAC were learned"

out=$(x stats job 2)
[[ "$out" == *"job 2"* && "$out" == *"drop_auth 1"* && "$out" == *"switch"* ]]
check_err $? "text stats: $out"
log_test "stats job 2: text output"

# ---- detach ----------------------------------------------------------------------
xsw dev detach va
check_err $? "dev detach va failed"
ip -n "$NS_SW" link show va | grep -q "prog/xdp"
check_fail $? "XDP still on va"
[ ! -e "$PIN/prog_xdp_va" ] && [ ! -e "$PIN/prog_tc_va" ]
check_err $? "pins $PIN/prog_{xdp,tc}_va left behind"
ip netns exec "$NS_SW" tc filter show dev va ingress | grep -q "xina_fanout"
check_fail $? "xina_fanout TC filter still on va"
log_test "dev detach va: XDP, TC filter and pins removed"

# someone else removed xina's program: detach cleans up what is left
ip -n "$NS_SW" link set vc xdpgeneric off
xsw dev detach vc 2>/dev/null
check_err $? "dev detach vc failed"
json_ok xsw -j dev show 'j == {"devs": []}'
log_test "dev detach vc after 'ip link set vc xdpgeneric off'"

x job del 2 && x job del 3
check_err $? "job del failed"
json_ok x -j job show 'j["jobs"] == []'
log_test "job del 2, job del 3: no jobs left"

# ---- concurrent changes ------------------------------------------------------------
# Eight "job add" at once on a fresh pin dir: one bpffs, eight indexes,
# eight disjoint slot ranges.
for i in 1 2 3 4 5 6 7 8; do
	XINA_PIN_DIR=$PIN2 x job add $i $K workers 1 slots 60 member 0 10.0.0.$i &
done
wait
[ "$(findmnt -n -o FSTYPE "$PIN2" | wc -l)" -eq 1 ]
check_err $? "$(findmnt -n "$PIN2" | wc -l) bpffs mounted on $PIN2"
json_ok env XINA_PIN_DIR="$PIN2" "$XINACTL" -j job show '
	len(j["jobs"]) == 8 and len({k["idx"] for k in j["jobs"]}) == 8 and
	sorted(k["slot_base"] for k in j["jobs"]) == list(range(0, 960, 120))'
log_test "8 concurrent job add: one mount, distinct indexes and ranges"

echo "1..$tap_n"
tap_end
