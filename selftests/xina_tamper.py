#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""xina_tamper.py: an on-path relay for a ring connection (xina_ring.sh).

    xina_tamper.py LISTEN_IP:PORT TARGET_IP:PORT FLIP_AT

Accepts one connection, connects it on to TARGET (retrying while TARGET
refuses, for up to 30 s: it may not listen yet) and relays both ways
until either side closes.  With FLIP_AT >= 0 the byte at that offset of
the stream from the connecting side is XORed with 1, as an attacker on
the path would alter a message; with -1 everything passes unchanged.
Prints "relayed up BYTES down BYTES flipped 0|1" when done.
"""
import select
import socket
import sys
import time


def addr(s):
    host, port = s.rsplit(":", 1)
    return host, int(port)


def connect(target, wait=30.0):
    """A connection to TARGET, retried while it refuses (not listening
    yet: the ranks start together, as the ring itself retries) for up to
    WAIT seconds."""
    deadline = time.monotonic() + wait
    while True:
        try:
            return socket.create_connection(target, timeout=30)
        except ConnectionRefusedError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.05)


def main():
    listen, target, flip = addr(sys.argv[1]), addr(sys.argv[2]), int(sys.argv[3])
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(listen)
    ls.listen(1)
    ls.settimeout(30)
    a, _ = ls.accept()
    b = connect(target)
    up = down = 0
    flipped = False
    open_ = True
    while open_:
        ready, _, _ = select.select([a, b], [], [], 30)
        if not ready:
            break
        for s in ready:
            try:
                data = s.recv(1 << 16)
                if not data:
                    open_ = False
                    break
                if s is a:
                    i = flip - up
                    if 0 <= i < len(data):
                        data = data[:i] + bytes([data[i] ^ 1]) + data[i + 1:]
                        flipped = True
                    up += len(data)
                    b.sendall(data)
                else:
                    down += len(data)
                    a.sendall(data)
            except OSError:
                # one side gave up (as the receiver of a bad message does)
                open_ = False
                break
    print(f"relayed up {up} down {down} flipped {int(flipped)}")


if __name__ == "__main__":
    main()
