#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Hand-made xina packets for swagg_e2e.sh: what libxina cannot be made to
send (a chosen aux, a duplicate that differs, a bad tag) and what only the
wire shows (an agent's partial and its resend).

  xina_swagg_peer.py flat KEYFILE SWITCH_IP:PORT JOB IP0 IP1 IP2
      Ranks 0, 1 and 2 of job JOB (one socket each, bound to IP0..IP2)
      join the xina-swagg at SWITCH, then send to slot 3 round 0 aux -5,
      aux 7 as a XINA_F_ZERO block and aux -150, with an unauthenticated,
      a wrong-op and a duplicate contribution of aux 1000 in between; then
      resends after the result, and the ZERO block again (unanswered).
      Slot 4 takes aux -5, -7 and -150.
  xina_swagg_peer.py agent KEYFILE UPKEYFILE AGENT_IP:PORT JOB UP_IP:PORT
                     UPRANK IP0 IP1 IP2
      The upper switch of the rack agent at AGENT (xina-swagg --up
      UP_IP:PORT --up-rank UPRANK, upper job JOB, secret UPKEYFILE) and
      ranks 0, 1 and 2 of its rack (secret KEYFILE): answers the agent's
      upper join, has the rack send slot 5 round 0 with aux -5, 7 (ZERO)
      and -150, takes the partial and its resend, sends the upper result
      with aux 99 down.
  xina_swagg_peer.py join KEYFILE SWITCH_IP:PORT JOB RANK BIND_IP:PORT AGE
      One join of rank RANK (its key from KEYFILE) from BIND_IP:PORT, for 8
      slots of 4 elements, whose nonce is the clock AGE seconds ago (what a
      capture of a join made then replays), sent up to three times 0.5 s
      apart.  Prints "reply STATUS EPOCH" for a reply whose tag verifies,
      or "none"; exit status 0 either way, 1 for a reply that does not
      verify.

One line per check, "check 0 WHAT" (passed) or "why WHY" then "check 1
WHAT", and "# ..." notes; exit status 0 when every check passed, 1
otherwise, 2 on a usage error.  The keys and tags are computed here from
the definitions in bpf/xina_auth.h (SipHash-2-4, NH, the key derivation):
a packet the aggregator accepts is one it would take from libxina, and
drop_auth would count any disagreement.
"""

import socket
import struct
import sys
import time

XINA_WIRE_VERSION = 2
T_CONTRIB, T_RESULT, T_JOIN, T_JOIN_REPLY = 1, 2, 3, 4
DTYPE_INT32 = 1
OP_SUM, OP_MAX = 1, 2
F_RETRANS, F_ZERO = 1, 2
MAX_ELEMS = 2048
HDR = struct.Struct("!BBBBBbHIHHIIIiQQ")	# struct xina_hdr; aux signed
M32 = (1 << 32) - 1
M64 = (1 << 64) - 1
TIMEOUT = 3.0

failed = 0


def check(ok, what, why=""):
    global failed
    if ok:
        print(f"check 0 {what}")
    else:
        failed += 1
        print(f"why {why}")
        print(f"check 1 {what}")
    sys.stdout.flush()
    return ok


# ---- bpf/xina_auth.h -------------------------------------------------------

def rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & M64


def sipround(v):
    v0, v1, v2, v3 = v
    v0 = (v0 + v1) & M64
    v1 = rotl(v1, 13) ^ v0
    v0 = rotl(v0, 32)
    v2 = (v2 + v3) & M64
    v3 = rotl(v3, 16) ^ v2
    v0 = (v0 + v3) & M64
    v3 = rotl(v3, 21) ^ v0
    v2 = (v2 + v1) & M64
    v1 = rotl(v1, 17) ^ v2
    v2 = rotl(v2, 32)
    return [v0, v1, v2, v3]


def siphash(k0, k1, msg):
    """SipHash-2-4 of @msg under the key (k0, k1)."""
    v = [k0 ^ 0x736f6d6570736575, k1 ^ 0x646f72616e646f6d,
         k0 ^ 0x6c7967656e657261, k1 ^ 0x7465646279746573]
    n = len(msg) & ~7
    tail = int.from_bytes(msg[n:], "little") | (len(msg) & 0xff) << 56
    for m in [int.from_bytes(msg[i:i + 8], "little")
              for i in range(0, n, 8)] + [tail]:
        v[3] ^= m
        v = sipround(sipround(v))
        v[0] ^= m
    v[2] ^= 0xff
    for _ in range(4):
        v = sipround(v)
    return v[0] ^ v[1] ^ v[2] ^ v[3]


LABEL_MEMBER = b"xina-mbr"
LABEL_RESULT = b"xina-res"
LABEL_NH = b"xina-nh\0"


class Keys:
    """A job's keys from its key file: K_r of some ranks, K_res, NH."""

    def __init__(self, path, job, ranks):
        with open(path) as f:
            secret = bytes.fromhex(f.read().strip())
        s0 = int.from_bytes(secret[:8], "little")
        s1 = int.from_bytes(secret[8:16], "little")

        def derive(label, rank, ctr):
            return siphash(s0, s1, label + struct.pack("<IIQ", job, rank, ctr))

        self.member = {r: (derive(LABEL_MEMBER, r, 0),
                           derive(LABEL_MEMBER, r, 1)) for r in ranks}
        self.res = (derive(LABEL_RESULT, 0, 0), derive(LABEL_RESULT, 0, 1))
        self.nh = []
        for i in range(MAX_ELEMS // 2):
            x = derive(LABEL_NH, 0, i)
            self.nh += [x & M32, x >> 32]

    def nh_of(self, words):
        """NH of the payload's 32-bit values (an odd count padded)."""
        m = list(words) + ([0] if len(words) & 1 else [])
        k = self.nh
        return sum(((m[i] + k[i]) & M32) * ((m[i + 1] + k[i + 1]) & M32)
                   for i in range(0, len(m), 2)) & M64


def tag_of(key, hdr, nh):
    return siphash(key[0], key[1], hdr[:40] + nh.to_bytes(8, "little"))


# ---- packets ---------------------------------------------------------------

class Pkt:
    """A xina packet: the header's fields by name, the payload's values."""

    FIELDS = ("version", "type", "dtype", "op", "flags", "exp", "count",
              "job", "rank", "weight", "slot", "round", "epoch", "aux",
              "offset", "tag")

    def __init__(self, **kw):
        for f in self.FIELDS:
            setattr(self, f, kw.get(f, 0))
        self.version = kw.get("version", XINA_WIRE_VERSION)
        self.words = list(kw.get("words", []))

    @classmethod
    def parse(cls, data):
        if len(data) < HDR.size:
            return None
        p = cls(**dict(zip(cls.FIELDS, HDR.unpack_from(data))))
        n = (len(data) - HDR.size) // 4
        p.words = list(struct.unpack_from(f"!{n}I", data, HDR.size))
        p.raw = data
        return p

    def hdr(self):
        return HDR.pack(*(getattr(self, f) for f in self.FIELDS))

    def tag_under(self, key, keys):
        """The tag under @key, NH under @keys' (no payload: NH 0)."""
        nh = keys.nh_of(self.words) if self.words else 0
        return tag_of(key, self.hdr(), nh)

    def sign(self, key, keys):
        self.tag = self.tag_under(key, keys)
        return self

    def verifies(self, key, keys):
        return self.tag == self.tag_under(key, keys)

    def bytes(self):
        return self.hdr() + struct.pack(f"!{len(self.words)}I", *self.words)


def addr(s):
    host, port = s.rsplit(":", 1)
    return host, int(port)


def recv(sock, want, timeout=TIMEOUT):
    """The next packet on @sock for which want(pkt) holds, or None."""
    end = time.monotonic() + timeout
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return None
        sock.settimeout(left)
        try:
            data, src = sock.recvfrom(65536)
        except socket.timeout:
            return None
        p = Pkt.parse(data)
        if p and want(p):
            p.src = src
            return p


def quiet(sock, t=0.2):
    """Nothing arrives on @sock for @t seconds."""
    return recv(sock, lambda p: True, t) is None


class Member:
    def __init__(self, ip, job, rank, keys, switch):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((ip, 0))
        self.job, self.rank, self.keys, self.switch = job, rank, keys, switch
        self.epoch = 0

    def join(self, slots, elems):
        j = Pkt(type=T_JOIN, dtype=DTYPE_INT32, job=self.job, rank=self.rank,
                slot=slots, aux=elems, offset=time.time_ns())
        j.sign(self.keys.member[self.rank], self.keys)
        for _ in range(5):
            self.sock.sendto(j.bytes(), self.switch)
            r = recv(self.sock, lambda p: p.type == T_JOIN_REPLY and
                     p.offset == j.offset, 0.5)
            if r:
                break
        ok = (r is not None and r.round == 0 and r.epoch != 0 and
              r.verifies(self.keys.member[self.rank], self.keys))
        self.epoch = r.epoch if ok else 0
        return ok

    def contrib(self, slot, rnd, aux, words, flags=0, op=OP_SUM,
                bad_tag=False):
        """@words as an INT32 block; a ZERO one sends none, counts them."""
        zero = bool(flags & F_ZERO)
        c = Pkt(type=T_CONTRIB, dtype=DTYPE_INT32, op=op, flags=flags,
                count=len(words), job=self.job, rank=self.rank, slot=slot,
                round=rnd, epoch=self.epoch, aux=aux, offset=slot * 4096,
                words=[] if zero else u32(words))
        c.sign(self.keys.member[self.rank], self.keys)
        if bad_tag:
            c.tag ^= 1
        self.sock.sendto(c.bytes(), self.switch)

    def result(self, slot, rnd, timeout=TIMEOUT):
        return recv(self.sock, lambda p: p.type == T_RESULT and
                    p.slot == slot and p.round == rnd, timeout)


def u32(words):
    return [w & M32 for w in words]


def check_result(what, r, keys, job, epoch, aux, words):
    """@r is the result of @words with @aux, tagged with @keys' K_res."""
    why = []
    if r is None:
        why.append(f"no result within {TIMEOUT:.0f} s")
    else:
        if r.aux != aux:
            why.append(f"aux {r.aux}, want {aux}")
        if not r.verifies(keys.res, keys):
            why.append("tag does not verify under K_res")
        if r.words != u32(words):
            why.append(f"elements {r.words}, want {u32(words)}")
        if r.job != job or r.epoch != epoch or r.flags or r.rank:
            why.append(f"job {r.job} epoch {r.epoch} flags {r.flags} "
                       f"rank {r.rank}")
    return check(not why, f"{what}: aux {aux}, tag verifies, elements right",
                 "; ".join(why))


def check_results(what, mb, res, keys, job, aux, words):
    """check_result() of each member's result in @res; False if any is
    missing."""
    for m, r in zip(mb, res):
        check_result(f"{what}: rank {m.rank}'s result", r, keys, job,
                     mb[0].epoch, aux, words)
    return None not in res


def check_answer(what, r, kept):
    """@r, the answer to a resend, is the kept result @kept, byte for byte."""
    return check(r is not None and r.raw == kept.raw,
                 f"{what} answered with the kept result "
                 f"(aux {kept.aux}, same bytes)",
                 "no answer" if r is None else f"aux {r.aux}, other bytes")


def join_all(members, slots, elems):
    for m in members:
        if not check(m.join(slots, elems), f"rank {m.rank} joins",
                     "no JOIN_OK reply whose tag verifies"):
            return False
    epochs = {m.epoch for m in members}
    return check(len(epochs) == 1, "all ranks in one epoch",
                 f"epochs {epochs}")


def flat(keyfile, switch, job, ips):
    keys = Keys(keyfile, job, range(3))
    mb = [Member(ip, job, r, keys, addr(switch)) for r, ip in enumerate(ips)]
    a, b = [1, 2, 3, -4], [10, 20, -30, 40]
    want = [x + y for x, y in zip(a, b)]

    if not join_all(mb, 8, 4):
        return
    mb[0].contrib(3, 0, -5, a)
    mb[1].contrib(3, 0, 7, [0] * 4, flags=F_ZERO)
    # None of these may reach the round's aux (nor its elements).
    mb[2].contrib(3, 0, 1000, b, bad_tag=True)		# drop_auth
    mb[2].contrib(3, 0, 1000, b, op=OP_MAX)		# drop_op
    mb[0].contrib(3, 0, 1000, a, flags=F_RETRANS)	# dup
    check(all(quiet(m.sock) for m in mb),
          "no result before rank 2's authenticated contribution",
          "a result or answer arrived early")
    mb[2].contrib(3, 0, -150, b)
    res = [m.result(3, 0) for m in mb]
    if not check_results("slot 3, aux -5, 7 (ZERO), -150", mb, res, keys,
                         job, 7, want):
        return
    check(all(r.raw == res[0].raw for r in res),
          "every member got the same bytes", "results differ")
    # the answer from the kept result: the same bytes, whatever the
    # resend carries
    mb[2].contrib(3, 0, -150, b, flags=F_RETRANS)
    check_answer("rank 2's resend", mb[2].result(3, 0), res[2])
    mb[0].contrib(3, 0, 1000, a, flags=F_RETRANS)
    check_answer("rank 0's resend of aux 1000", mb[0].result(3, 0), res[0])
    # rank 1's ZERO block again, as a replay of it would come (libxina
    # resends a ZERO block with its words): a duplicate, not answered,
    # since a whole result for a 48-byte header would amplify
    mb[1].contrib(3, 0, 7, [0] * 4, flags=F_ZERO)
    check(quiet(mb[1].sock), "a ZERO block to the completed round again "
          "is not answered", "an answer came")
    # all below 0: the MAX starts from the first contribution, not from 0
    mb[0].contrib(4, 0, -5, a)
    mb[1].contrib(4, 0, -7, [0] * 4, flags=F_ZERO)
    mb[2].contrib(4, 0, -150, b)
    check_results("slot 4, aux -5, -7 (ZERO), -150", mb,
                  [m.result(4, 0) for m in mb], keys, job, -5, want)


def agent(keyfile, upkeyfile, agent_addr, job, up_addr, uprank, ips):
    keys = Keys(keyfile, job, range(3))
    ukeys = Keys(upkeyfile, job, [uprank])
    kup = ukeys.member[uprank]
    up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    up.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    up.bind(addr(up_addr))
    up_epoch = 0x5eed
    a, b = [1, 2, 3, -4], [10, 20, -30, 40]
    partial = [x + y for x, y in zip(a, b)]
    other = [100, 200, 300, 400]		# another rack's, in the upper job
    total = [x + y for x, y in zip(partial, other)]

    print("# ready", flush=True)
    # the agent's upper join, as it starts (none later: the rack's joins
    # open no new epoch)
    j = recv(up, lambda p: p.type == T_JOIN, 10)
    if not check(j is not None and j.rank == uprank and
                 j.verifies(kup, ukeys),
                 f"the agent joins the upper job as rank {uprank}",
                 "no join whose tag verifies under K_rank of the upper job"):
        return
    rep = Pkt(type=T_JOIN_REPLY, dtype=j.dtype, job=j.job, rank=j.rank,
              flags=F_ZERO, slot=j.slot, aux=j.aux, round=0, epoch=up_epoch,
              offset=j.offset).sign(kup, ukeys)
    up.sendto(rep.bytes(), j.src)
    agent_from = j.src

    mb = [Member(ip, job, r, keys, addr(agent_addr))
          for r, ip in enumerate(ips)]
    if not join_all(mb, 8, 4):
        return
    mb[0].contrib(5, 0, -5, a)
    mb[1].contrib(5, 0, 7, [0] * 4, flags=F_ZERO)
    mb[0].contrib(5, 0, 1000, a, flags=F_RETRANS)	# dup
    mb[2].contrib(5, 0, -150, b)

    def is_partial(p):
        return p.type == T_CONTRIB and p.slot == 5 and p.round == 0

    for what, flags in (("partial", 0), ("partial's resend", F_RETRANS)):
        p = recv(up, is_partial)
        if not check(p is not None, f"the agent sends its {what} up",
                     f"nothing within {TIMEOUT:.0f} s"):
            return
        why = []
        if p.aux != 7:
            why.append(f"aux {p.aux}, want 7")
        if p.flags != flags:
            why.append(f"flags {p.flags}, want {flags}")
        if not p.verifies(kup, ukeys):
            why.append("tag does not verify under K_rank of the upper job")
        if p.words != u32(partial) or p.epoch != up_epoch:
            why.append(f"elements {p.words} epoch {p.epoch}")
        check(not why, f"the {what} carries the rack's MAX, aux 7, "
              "tagged for the upper job", "; ".join(why))
    # the upper job's result: the MAX over the racks, 99
    res = Pkt(type=T_RESULT, dtype=p.dtype, op=p.op, count=p.count, job=p.job,
              slot=p.slot, round=p.round, epoch=up_epoch, aux=99,
              offset=p.offset, words=u32(total))
    res.sign(ukeys.res, ukeys)
    up.sendto(res.bytes(), agent_from)
    got = [m.result(5, 0) for m in mb]
    if not check_results("upper result of aux 99 (the rack's 7)", mb, got,
                         keys, job, 99, total):
        return
    mb[1].contrib(5, 0, 7, [0] * 4, flags=F_RETRANS)
    check_answer("rank 1's resend to the agent", mb[1].result(5, 0), got[1])


def join_aged(keyfile, switch, job, rank, bind, age):
    keys = Keys(keyfile, job, [rank])
    ip, port = addr(bind)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((ip, port))
    j = Pkt(type=T_JOIN, dtype=DTYPE_INT32, job=job, rank=rank, slot=8,
            aux=4, offset=time.time_ns() - int(age * 1e9))
    j.sign(keys.member[rank], keys)
    r = None
    for _ in range(3):
        sock.sendto(j.bytes(), addr(switch))
        r = recv(sock, lambda p: p.type == T_JOIN_REPLY and
                 p.offset == j.offset, 0.5)
        if r:
            break
    if r is None:
        print("none")
        return 0
    if not r.verifies(keys.member[rank], keys):
        print(f"reply {r.round} {r.epoch} (its tag does not verify)")
        return 1
    print(f"reply {r.round} {r.epoch}")
    return 0


def main(argv):
    if len(argv) == 8 and argv[1] == "join":
        return join_aged(argv[2], argv[3], int(argv[4]), int(argv[5]),
                         argv[6], float(argv[7]))
    if len(argv) == 8 and argv[1] == "flat":
        flat(argv[2], argv[3], int(argv[4]), argv[5:8])
    elif len(argv) == 11 and argv[1] == "agent":
        agent(argv[2], argv[3], argv[4], int(argv[5]), argv[6], int(argv[7]),
              argv[8:11])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
