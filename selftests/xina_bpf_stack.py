#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
#
# The deepest chain of BPF stack frames in a BPF object, as Linux 6.1's
# verifier counts it (check_max_stack_depth()), from the object alone:
#
#   xina_bpf_stack.py OBJ...
#
# For each program (a function outside .text) the chain of calls from it
# with the largest sum of frames, each frame its function's stack depth
# rounded up to 32 bytes (at least 32), as 6.1 adds them; 512 bytes is the
# most it loads.  Calls are BPF-to-BPF calls (pc-relative or relocated)
# and, as 6.1 walks them too, the functions whose address is loaded (the
# callbacks of bpf_loop()).  A function's depth is the deepest r10 offset
# it uses (a store, a load, or the address of a stack slot passed on),
# which is what the verifier finds for the code clang emits.  Later kernels
# round less (6.12: to 8 bytes for the JIT); 6.1 is the bound.
#
# Prints one line per program, "PROG DEPTH f1(d1) > f2(d2) ...", and exits
# 1 if any chain passes 512 bytes, 2 if the object cannot be read.

import re
import subprocess
import sys

MAX_STACK = 512
FUNC_RE = re.compile(r"^([0-9a-f]+)\s+(\S+)\s+F\s+(\S+)\s+([0-9a-f]+)\s+(\S+)$")
SECT_RE = re.compile(r"^Disassembly of section (\S+):")
INSN_RE = re.compile(r"^\s*(\d+):\s+((?:[0-9a-f]{2}[ \t])+)\s*(.*)$")
RELOC_RE = re.compile(r"^\s+([0-9a-f]+):\s+(R_BPF_\w+)\s+(\S+)")
R10_OFF_RE = re.compile(r"\(r10 - (0x[0-9a-f]+|\d+)\)")


def run(args):
    return subprocess.run(args, check=True, capture_output=True,
                          text=True).stdout


def functions(obj):
    """{(section, byte offset): (name, size)} of the object's functions."""
    funcs = {}
    for line in run(["llvm-objdump", "-t", obj]).splitlines():
        m = FUNC_RE.match(line.strip())
        if m:
            addr, _, sect, size, name = m.groups()
            funcs[(sect, int(addr, 16))] = (name, int(size, 16))
    return funcs


def walk(obj):
    """Each function's stack depth and the functions it calls (by name)."""
    funcs = functions(obj)
    by_sect = {}
    for (sect, addr), (name, size) in funcs.items():
        by_sect.setdefault(sect, []).append((addr, addr + size, name))
    names = {name: (sect, addr) for (sect, addr), (name, _) in funcs.items()}

    def func_at(sect, off):
        for lo, hi, name in by_sect.get(sect, []):
            if lo <= off < hi:
                return name
        return None

    depth = {name: 0 for name, _ in funcs.values()}
    calls = {name: set() for name, _ in funcs.values()}
    sect = None
    last = None             # the last instruction: (func, imm, call?)
    r10_copy = {}           # registers holding r10, per function
    for line in run(["llvm-objdump", "-dr", obj]).splitlines():
        m = SECT_RE.match(line)
        if m:
            sect = m.group(1)
            continue
        m = RELOC_RE.match(line)
        if m and last:
            fn, imm, is_call = last
            kind, sym = m.group(2), m.group(3)
            if sym in names:
                target = sym
            elif sym == ".text" and kind == "R_BPF_64_32":
                target = func_at(".text", (imm + 1) * 8)
            elif sym == ".text" and kind == "R_BPF_64_64":
                target = func_at(".text", imm)
            else:
                target = None       # a map, a global variable
            if target and (is_call or kind == "R_BPF_64_64"):
                calls[fn].add(target)
            continue
        m = INSN_RE.match(line)
        if not m or sect is None:
            continue
        idx, raw, text = int(m.group(1)), m.group(2).split(), m.group(3)
        fn = func_at(sect, idx * 8)
        if fn is None:
            last = None
            continue
        code, regs = int(raw[0], 16), int(raw[1], 16)
        imm = int.from_bytes(bytes(int(b, 16) for b in raw[4:8]), "little",
                             signed=True)
        # BPF_JMP | BPF_CALL with src_reg BPF_PSEUDO_CALL: a BPF function
        is_call = code == 0x85 and regs >> 4 == 1
        last = (fn, imm, is_call)
        if is_call and imm != -1:
            target = func_at(sect, (idx + imm + 1) * 8)
            if target:
                calls[fn].add(target)
        for off in R10_OFF_RE.findall(text):
            depth[fn] = max(depth[fn], int(off, 0))
        # "rX = r10" then "rX += -N": the address of a stack slot
        cm = re.match(r"^(r\d) = r10$", text)
        if cm:
            r10_copy.setdefault(fn, set()).add(cm.group(1))
            continue
        am = re.match(r"^(r\d) \+= -(\d+)$", text)
        if am and am.group(1) in r10_copy.get(fn, ()):
            depth[fn] = max(depth[fn], int(am.group(2)))
        dm = re.match(r"^(r\d) = ", text)
        if dm and not am:
            r10_copy.get(fn, set()).discard(dm.group(1))
    return funcs, depth, calls


def frame(d):
    return (max(d, 1) + 31) // 32 * 32


def deepest(fn, depth, calls, seen=()):
    """(bytes, chain) of the deepest chain from @fn."""
    best, chain = 0, []
    for c in sorted(calls[fn]):
        if c in seen:           # recursion: the verifier refuses it anyway
            continue
        b, ch = deepest(c, depth, calls, seen + (fn,))
        if b > best:
            best, chain = b, ch
    return frame(depth[fn]) + best, [fn] + chain


def main(objs):
    over = False
    for obj in objs:
        try:
            funcs, depth, calls = walk(obj)
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"xina_bpf_stack: {obj}: {e}", file=sys.stderr)
            return 2
        progs = sorted(name for (sect, _), (name, _) in funcs.items()
                       if sect != ".text")
        if not progs:
            print(f"xina_bpf_stack: {obj}: no program found", file=sys.stderr)
            return 2
        for p in progs:
            total, chain = deepest(p, depth, calls)
            print(f"{obj}: {p} {total} " +
                  " > ".join(f"{f}({depth[f]})" for f in chain))
            over |= total > MAX_STACK
    return 1 if over else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: xina_bpf_stack.py OBJ...", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
