#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Raw frames for selftests/xina_rogue.sh: what a rogue on a switch port does.

  xina_rogue.py capture IFACE FILE STOPFILE
      Record the xina packets IFACE sends (outgoing frames, UDP to port
      9277: contributions and joins) into FILE until STOPFILE exists;
      print how many.  FILE
      exists once the socket is bound (wait for it before sending).
  xina_rogue.py replay IFACE FILE [TYPE]
      Send every frame of FILE (of xina packet type TYPE only: 1
      contribution, 3 join) out of IFACE, byte for byte; print how many.
  xina_rogue.py count FILE TYPE
      Print how many frames of FILE are xina packets of type TYPE.
  xina_rogue.py latest FILE
      Print how many join frames of FILE carry the highest nonce among
      them (a join and its retransmissions).
  xina_rogue.py forge IFACE DST_MAC SRC_MAC SRC_IP JOB RANK COUNT [SEED]
      Send COUNT contributions of job JOB claiming rank RANK from SRC_IP:7000
      (SRC_MAC), each with a random tag, random slot and round, to the
      switch at 10.77.0.254 (DST_MAC); print how many.

FILE holds frames as a 4-byte big-endian length and the frame.  Run inside
the namespace of IFACE (ip netns exec).
"""

import os
import random
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
XINA_PORT = 9277
SWITCH_IP = "10.77.0.254"
WORKER_PORT = 7000


def xina_dport(frame):
    """UDP destination port of an IPv4 frame without options, or None."""
    if len(frame) < 42 or frame[12:14] != b"\x08\x00" or frame[14] != 0x45:
        return None
    if frame[23] != socket.IPPROTO_UDP:
        return None
    return struct.unpack("!H", frame[36:38])[0]


def capture(iface, path, stop):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    # room for a burst: what the socket drops is simply not replayed
    s.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)	# SO_RCVBUFFORCE
    s.bind((iface, 0))
    s.settimeout(0.1)
    n = 0
    with open(path, "wb", buffering=0) as f:
        while not os.path.exists(stop):
            try:
                frame, addr = s.recvfrom(65535)
            except socket.timeout:
                continue
            if addr[2] != PACKET_OUTGOING or xina_dport(frame) != XINA_PORT:
                continue
            f.write(struct.pack("!I", len(frame)) + frame)
            n += 1
    print(n)


def frames(path):
    """The frames of a capture file, in order."""
    with open(path, "rb") as f:
        while True:
            hdr = f.read(4)
            if len(hdr) < 4:
                return
            yield f.read(struct.unpack("!I", hdr)[0])


def xina_type(frame):
    """The xina packet type of a frame (after 42 bytes of Ethernet, IPv4
    without options and UDP), or None."""
    return frame[43] if len(frame) >= 44 else None


def count(path, ptype):
    print(sum(1 for fr in frames(path) if xina_type(fr) == ptype))


def latest(path):
    # the nonce: the xina header's offset field, 32 bytes into it
    nonces = [struct.unpack("!Q", fr[74:82])[0] for fr in frames(path)
              if xina_type(fr) == 3 and len(fr) >= 82]
    print(nonces.count(max(nonces)) if nonces else 0)


def replay(iface, path, ptype=None):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    n = 0
    for frame in frames(path):
        if ptype is not None and xina_type(frame) != ptype:
            continue
        s.send(frame)
        n += 1
        if n % 64 == 0:
            time.sleep(0.001)	# the veth queue holds 256 frames
    print(n)


def ip_csum(hdr):
    total = sum(struct.unpack("!10H", hdr))
    while total >> 16:
        total = (total & 0xffff) + (total >> 16)
    return ~total & 0xffff


def forge(iface, dst_mac, src_mac, src_ip, job, rank, count, seed):
    rnd = random.Random(seed)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    eth = (bytes.fromhex(dst_mac.replace(":", "")) +
           bytes.fromhex(src_mac.replace(":", "")) + b"\x08\x00")
    elems = 64
    for i in range(count):
        # struct xina_hdr: version type dtype op flags exp count job rank
        # weight slot round epoch aux offset tag, then the elements
        xh = struct.pack("!BBBBBbHIHHIIIIQQ", 2, 1, 1, 1, 0, 0, elems, job,
                         rank, 0, rnd.randrange(8), rnd.randrange(4), 0, 0,
                         0, rnd.getrandbits(64))
        payload = xh + bytes(rnd.getrandbits(8) for _ in range(4 * elems))
        udp = struct.pack("!HHHH", WORKER_PORT, XINA_PORT, 8 + len(payload), 0)
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + 8 + len(payload), i,
                         0, 64, socket.IPPROTO_UDP, 0,
                         socket.inet_aton(src_ip), socket.inet_aton(SWITCH_IP))
        ip = ip[:10] + struct.pack("!H", ip_csum(ip)) + ip[12:]
        s.send(eth + ip + udp + payload)
        if i % 64 == 63:
            time.sleep(0.001)
    print(count)


def main(argv):
    if len(argv) == 5 and argv[1] == "capture":
        capture(argv[2], argv[3], argv[4])
    elif len(argv) in (4, 5) and argv[1] == "replay":
        replay(argv[2], argv[3], int(argv[4]) if len(argv) == 5 else None)
    elif len(argv) == 4 and argv[1] == "count":
        count(argv[2], int(argv[3]))
    elif len(argv) == 3 and argv[1] == "latest":
        latest(argv[2])
    elif len(argv) in (9, 10) and argv[1] == "forge":
        forge(argv[2], argv[3], argv[4], argv[5], int(argv[6]), int(argv[7]),
              int(argv[8]), int(argv[9]) if len(argv) == 10 else 1)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
