#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""xina benchmarks against its peers, on the rack of network namespaces.

Called by scripts/bench/run.sh (make bench [QUICK=1]); writes
$O/bench/results.json, one record per measurement, then report.py turns it
into Documentation/benchmarks.md and the PNG plots.

Systems, all on the same rack (scripts/rack.sh: one veth port per worker
namespace on a bridge in the switch namespace):
  xina-xdp    the XDP fast path on the switch ports (xinactl, rack_xdp)
  xina-gxdp   the same with the ports in generic XDP mode: veth keeps the
              workers' GSO, and the fast path takes whole trains
  xina-swagg  the same protocol through xina-swagg in the switch namespace
  openmpi     MPI_Allreduce, ranks in the worker namespaces (xina-nsrun -p)
  gloo        torch.distributed allreduce over gloo, same placement
Every launch reads the switch ports' byte counters before and after and
refuses a result whose bytes did not cross the ports: a peer that moved
its data through shared memory or loopback is never reported.

Racks of racks (issue 12, section "racks"): 3 racks of 3 workers
(scripts/racks.sh), xina on rack 0's switch in two levels (agents in
racks 1 and 2) and flat, OpenMPI and Gloo flat over the 9 workers; there
the inter-rack links' counters are read and checked the same way.

Two regimes, every system in each, in the same invocation:
  cpu   the rack as it is: the links are veths, every process shares the
        CPUs, so goodput is what the CPUs can push.
  link  every worker's link limited to LINK_RATE_BPS in both directions
        (rack_shape: TBF on eth0 and, through an IFB, on its ingress), at
        a rate where no system saturates the CPUs: goodput is what the
        links carry, reported against each system's physical limit.
"""

import argparse
import atexit
import itertools
import json
import os
import platform
import re
import shutil
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MIB = 1 << 20
SWITCH_IP = "10.77.0.254"
WORKER_PORT = 7000
RING_PORT = 7100       # the host fallback ring's TCP port (fallback())
LAUNCH_TIMEOUT = 600

# The xina configuration, in one place.  Every system runs on links of this
# MTU (the rack's); xina sends ELEMS elements per packet and uses SLOTS
# slots: jumbo frames carrying 2048 int32 each (XDP multi-buffer where a
# frame spans buffers) and 32 slots, the configuration of "make demo"
# (scripts/rack.sh, RACK_FAST_*).
XINA_CONF = {"mtu": 9000, "elems": 2048, "slots": 32}
MTU, ELEMS, SLOTS = XINA_CONF["mtu"], XINA_CONF["elems"], XINA_CONF["slots"]
JOB = 1

# The link-bound regime: every worker's link at this rate, both directions
# (make bench LINK_RATE=bits/s overrides it).  One rate for every system
# and worker count, low enough that no system saturates the rack's 2 CPUs
# at 8 workers: xina through the XDP switch cost about 20 CPU seconds per
# GiB at 8 workers on 2026-11-29 (MTU 3500), so 8 workers at 400 Mbit/s
# (47 MB/s of tensor each) keep it near half the CPUs.  The page shows
# each run's host busy fraction.
LINK_RATE_BPS = 400_000_000

# Racks of racks (issue 12): RACKS_NR racks of RACKS_N workers
# (scripts/racks.sh, the layout of selftests/xina_racks.sh).  Two levels:
# the upper job on rack 0's XDP switch holds rack 0's workers and one agent
# (xina-swagg --up) per other rack, each standing for its rack's workers;
# or the upper job at the spine (an XDP switch, or xina-swagg), one member
# per rack.  Flat: one job of all the workers on rack 0's switch.
RACKS_NR, RACKS_N = 3, 3
RACKS_HJOB = 600
RACKS_FLAT_JOB = 601
RACKS_SPINE_JOB = 610   # the upper job at the spine
RACKS_RACK_JOB = 620    # each rack's job (on its own switch or agent)
RACKS_AGENT_RACK = 1    # the spine row's rack without an XDP switch


def pin_cpu(rank):
    """Every system's rank i runs on CPU i mod CPUs (xina-nsrun -P does the
    same for OpenMPI's ranks): one placement for all, as a launcher such
    as torchrun or mpirun --bind-to core gives them.  Unpinned, the
    scheduler moved xina's workers between the two CPUs and cost it 10-20%
    on the rack; Gloo measured the same either way."""
    return ["taskset", "-c", str(rank % os.cpu_count())]

# Bytes of one frame that TBF counts besides the payload (Ethernet header
# to the end of the payload; no preamble, inter-frame gap or FCS, which a
# real wire adds: WIRE_EXTRA).
ETH_HDR = 14
XINA_HDR = ETH_HDR + 20 + 8 + 48      # Ethernet, IPv4, UDP, xina header
TCP_HDR = 20 + 20 + 12                # IPv4, TCP with timestamps, per segment
WIRE_EXTRA = 8 + 12 + 4               # preamble, inter-frame gap, FCS

# The fast path microbenchmark: these element counts, and xina's own.
FASTPATH_ELEMS = [64, 256, 356]

# Element types: goodput of each through the XDP switch (SUM, 4 workers,
# one tensor size) and the fast path's cost per packet of each wire type.
TYPES = ["int8", "int16", "int32", "int64", "float16", "bfloat16", "float32"]
WIRE_TYPES = ["int8", "int16", "int32", "int64"]


# Launches of each system beyond the sweep's for the CPU-bound target rows
# (64 MiB at 4 and 8 workers): one launch moves 10-20% on its own.
ROUNDS = 2
ROUND_SIZE = 64 * MIB
ROUND_SYSTEMS = ["xina-xdp", "openmpi", "gloo", "xina-swagg", "xina-gxdp"]

# What --sections selects (make bench SECTIONS=...); all of them by default.
SECTIONS = {"rack": "one rack: every system, both regimes, the fast path, "
                    "types, sparse, fallback, training",
            "racks": "3 racks of 3 workers: xina in two levels and flat, "
                     "Gloo and OpenMPI flat, both regimes",
            "types": "of the rack's runs, only the element types (4 workers)",
            "sparse": "of the rack's runs, only sparse (4 workers)",
            "fallback": "of the rack's runs, only the fallback (4 workers)",
            "loss": "of the rack's runs, only the loss rounds (4 workers)",
            "generic": "of the rack's runs, only the XDP switch at 64 MiB, "
                       "native and generic mode by turns (4 workers)",
            "floor": "the transport alone, frames against GSO trains "
                     "(scripts/bench/floor, 4 workers; part of rack)",
            "targets": "the CPU-bound target rows only: every system of "
                       "the rounds at 64 MiB, 4 and 8 workers, ROUNDS + 1 "
                       "rounds each (part of rack)"}
# The sections that are parts of "rack", each on its own rack of 4 workers.
RACK_PARTS = ("types", "sparse", "fallback", "loss", "generic")



def xdp_prog_ids(namespaces, ifnames=None):
    """The ids of the XDP programs on the interfaces of @namespaces (those
    whose names match the regex @ifnames, if given) and of every program
    sharing their maps (devmap egress or TC fan-out programs; other racks
    on this host run programs of the same names, on maps of their own)."""
    mains = set()
    for ns in namespaces:
        out = subprocess.run(["ip", "-n", ns, "-j", "link", "show"],
                             text=True, capture_output=True, check=True).stdout
        mains |= {l["xdp"]["prog"]["id"] for l in json.loads(out)
                  if "xdp" in l and "prog" in l["xdp"] and
                  (not ifnames or re.fullmatch(ifnames, l["ifname"]))}
    if not mains:
        raise BenchError(f"no XDP program on the interfaces of "
                         f"{', '.join(namespaces)}")
    progs = json.loads(subprocess.run(["bpftool", "prog", "show", "-j"],
                                      text=True, capture_output=True,
                                      check=True).stdout)
    maps = set()
    for p in progs:
        if p["id"] in mains:
            maps |= set(p.get("map_ids", []))
    return sorted(mains | {p["id"] for p in progs
                           if maps & set(p.get("map_ids", []))})

class BenchError(Exception):
    pass


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def worker_ip(i):
    return f"10.77.0.{i + 1}"


class Rack:
    """One rack of namespaces, driven through scripts/rack.sh."""

    def __init__(self, name, o):
        self.name = name
        self.o = o
        self.n = 0
        self.xdp = None     # the fast path's mode on the ports, or None

    def sh(self, script, check=True, capture=False):
        env = dict(os.environ, O=self.o)
        r = subprocess.run(["bash", "-c", f". {ROOT}/scripts/rack.sh; {script}"],
                           env=env, text=True, capture_output=capture,
                           timeout=120)
        if check and r.returncode:
            err = (r.stderr or "").strip() if capture else ""
            raise BenchError(f"rack: '{script}' failed ({r.returncode}) {err}")
        return r.stdout if capture else r.returncode

    def up(self, n):
        self.sh(f"rack_up {self.name} {n} mtu {MTU} >/dev/null")
        self.n, self.xdp = n, None

    def down(self):
        self.sh(f"rack_down {self.name}", check=False)
        self.n = 0

    def ns(self, i):
        return f"{self.name}-w{i}"

    @staticmethod
    def ip(i):
        return worker_ip(i)

    # What OpenMPI's ranks are told: the namespace of rank %d (xina-nsrun)
    # and the subnet their TCP transport is confined to.
    subnet = "10.77.0.0/24"

    def nsrun_pattern(self):
        return f"{self.name}-w%d"

    @property
    def sw(self):
        return f"{self.name}-sw"

    def port_rx(self):
        out = subprocess.run(["ip", "-n", self.sw, "-j", "-s", "link", "show"],
                             text=True, capture_output=True, check=True).stdout
        return {l["ifname"]: l["stats64"]["rx"]["bytes"]
                for l in json.loads(out) if re.fullmatch(r"p\d+", l["ifname"])}

    def worker_rx(self):
        """Bytes each worker's eth0 received (results, peers' data)."""
        rx = []
        for i in range(self.n):
            out = subprocess.run(["ip", "-n", self.ns(i), "-j", "-s", "link",
                                  "show", "eth0"], text=True,
                                 capture_output=True, check=True).stdout
            rx.append(json.loads(out)[0]["stats64"]["rx"]["bytes"])
        return rx

    def attach_xdp(self, mode="native"):
        """The fast path on every port, in XDP @mode (native or generic)."""
        if self.xdp == mode:
            return
        if self.xdp:
            self.detach_xdp()
        self.sh(f"rack_xdp {self.name} {self.n} /run/xina-{self.name} {mode} "
                ">/dev/null")
        self.xdp = mode

    def detach_xdp(self):
        for i in range(self.n):
            self.xctl("dev", "detach", f"p{i}")
        self.xdp = None

    def xctl(self, *args):
        pin = f"/run/xina-{self.name}"
        cmd = ["ip", "netns", "exec", self.sw, f"{self.o}/xinactl", "-P", pin]
        r = subprocess.run(cmd + list(args), text=True, capture_output=True)
        if r.returncode:
            raise BenchError(f"xinactl {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout

    def xdp_prog_ids(self):
        """The fast path on our ports and every program sharing its maps
        (devmap egress or TC fan-out programs; other racks on this host run
        programs of the same names, on maps of their own)."""
        return xdp_prog_ids([self.sw], r"p\d+")

    # Loss.  rack_impair's nftables drop sits in the output hook, where a
    # drop fails the sender's sendmsg with EPERM (a xina worker gives up on
    # it); a drop at the device's egress hook is silent, as a lost packet
    # on a wire is.  Both hooks see GSO/GRO batches before segmentation, so
    # a drop takes a whole batch: PERMILLE of the datagrams on average, in
    # bursts.  Results are dropped on input, also per batch.
    NFT_LOSS = """
table netdev xina_bench_loss {{
	chain egress {{
		type filter hook egress device "eth0" priority 0; policy accept;
		udp dport 9277 numgen random mod 1000 < {pm} counter drop
	}}
}}
table inet xina_bench_loss {{
	chain in {{
		type filter hook input priority 0; policy accept;
		udp sport 9277 numgen random mod 1000 < {pm} counter drop
	}}
}}
"""

    def impair(self, permille):
        for i in range(self.n):
            subprocess.run(["ip", "netns", "exec", self.ns(i), "nft", "-f", "-"],
                           input=self.NFT_LOSS.format(pm=permille), text=True,
                           check=True)

    def unimpair(self):
        for i in range(self.n):
            for fam in ("netdev", "inet"):
                subprocess.run(["ip", "netns", "exec", self.ns(i), "nft",
                                "delete", "table", fam, "xina_bench_loss"],
                               capture_output=True)

    def impair_drops(self):
        """Packets (GSO/GRO batches) the impairment dropped."""
        total = 0
        for i in range(self.n):
            out = subprocess.run(["ip", "netns", "exec", self.ns(i), "nft", "-j",
                                  "list", "ruleset"], text=True,
                                 capture_output=True, check=True).stdout
            for item in json.loads(out)["nftables"]:
                for e in item.get("rule", {}).get("expr", []):
                    if "counter" in e:
                        total += e["counter"]["packets"]
        return total


class Racks:
    """Racks of racks (issue 12), driven through scripts/racks.sh: NR racks
    of N workers, each a rack of scripts/rack.sh with a subnet of its own
    (10.78.R.0/24), their switch namespaces joined through a spine
    namespace by one inter-rack link each (up0 in the rack's switch).
    Global rank G is worker G mod N of rack G / N; a system's traffic
    between racks crosses the links of both racks it joins."""

    subnet = "10.78.0.0/16"

    def __init__(self, name, o, nr, n):
        self.name, self.o, self.nr, self.n = name, o, nr, n
        self.w = nr * n
        self.racks = [Rack(f"{name}r{r}", o) for r in range(nr)]
        for rk in self.racks:
            rk.n = n
        self.nsdir = None

    def sh(self, script):
        env = dict(os.environ, O=self.o, RACKS_N=str(self.n))
        r = subprocess.run(["bash", "-c", f". {ROOT}/scripts/racks.sh; {script}"],
                           env=env, text=True, capture_output=True, timeout=120)
        if r.returncode:
            raise BenchError(f"racks: '{script}' failed ({r.returncode}) "
                             f"{r.stderr.strip()}")
        return r.stdout

    def up(self):
        self.sh(f"racks_up {self.name} {self.nr} {self.n} mtu {MTU}")

    def down(self):
        try:
            self.sh(f"racks_down {self.name} {self.nr}")
        except BenchError as e:
            log(str(e))
        if self.nsdir:
            shutil.rmtree(self.nsdir, ignore_errors=True)
            self.nsdir = None

    def ns(self, g):
        return f"{self.name}r{g // self.n}-w{g % self.n}"

    def ip(self, g):
        return f"10.78.{g // self.n}.{g % self.n + 1}"

    @staticmethod
    def switch_ip(r):
        return f"10.78.{r}.254"

    def sw(self, r):
        return f"{self.name}r{r}-sw"

    def nsrun_pattern(self):
        """xina-nsrun's NETNS for rank %d: a directory of links named by
        global rank to the namespaces, whose names %d alone cannot make."""
        if not self.nsdir:
            self.nsdir = tempfile.mkdtemp(prefix="xina-racks-ns-")
            for g in range(self.w):
                os.symlink(f"/run/netns/{self.ns(g)}",
                           os.path.join(self.nsdir, f"g{g}"))
        return os.path.join(self.nsdir, "g%d")

    def uplinks(self):
        """Per rack, (out, in): bytes its inter-rack link carried so far
        out of the rack (up0 transmitted) and into it (up0 received)."""
        v = []
        for r in range(self.nr):
            out = subprocess.run(["ip", "-n", self.sw(r), "-j", "-s", "link",
                                  "show", "up0"], text=True,
                                 capture_output=True, check=True).stdout
            st = json.loads(out)[0]["stats64"]
            v.append((st["tx"]["bytes"], st["rx"]["bytes"]))
        return v

    def xdp(self):
        """xina on rack 0 only (its ports and its uplink)."""
        self.sh(f"racks_xdp {self.name} 0 {self.n}")

    def agent(self, r, out, uprank, upkey, upjob, args, up_addr=None):
        """Rack r's agent (racks_agent: xina-swagg --up in its switch
        namespace), joined to the upper job (at rack 0's switch, or at
        @up_addr); its pid."""
        env = f"RACKS_UP_ADDR={up_addr} " if up_addr else ""
        pid = self.sh(f"{env}racks_agent {self.name} {r} {out} {uprank} "
                      f"{upkey} {upjob} {' '.join(args)} && "
                      "echo $RACKS_AGENT_PID")
        return int(pid.split()[-1])

    # The upper switch at the spine (racks_spine_xdp): xina on the spine's
    # end of every inter-rack link; racks with an XDP switch hand up to it.

    @staticmethod
    def spine_ip(r):
        return f"10.79.{r}.1"

    @staticmethod
    def uplink_ip(r):
        return f"10.79.{r}.2"

    def spine_xdp(self, racks_xdp=()):
        """xina on the spine, and on the racks @racks_xdp (rack 0 has it
        already, from xdp())."""
        self.sh(f"racks_spine_xdp {self.name} {self.nr}")
        for r in racks_xdp:
            self.sh(f"racks_xdp {self.name} {r} {self.n}")

    def spine_swagg(self, out, upjob, upkey, args):
        """The upper switch at the spine in user space (racks_spine_swagg:
        xina-swagg in the spine namespace, rack r's agent its member r);
        its pid."""
        pid = self.sh(f"racks_spine_swagg {self.name} {self.nr} {out} "
                      f"{upjob} {upkey} {' '.join(args)} && "
                      "echo $RACKS_SPINE_PID")
        return int(pid.split()[-1])

    def sctl(self, *args):
        """xinactl on the spine's switch."""
        cmd = ["ip", "netns", "exec", f"{self.name}-spine",
               f"{self.o}/xinactl", "-P", f"/run/xina-{self.name}-spine"]
        r = subprocess.run(cmd + list(args), text=True, capture_output=True)
        if r.returncode:
            raise BenchError(f"xinactl (spine) {' '.join(args)}: "
                             f"{r.stderr.strip()}")
        return r.stdout

    def prog_ids(self, namespaces):
        """The XDP programs on the interfaces of @namespaces and every
        program sharing their maps (the TC fan-out): the switches' CPU."""
        return xdp_prog_ids(namespaces)


def proc_cpu_s(pid):
    """utime + stime of a process (not our child: /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")


def stop_pid(pid, timeout=10):
    """SIGINT to a process we started but no longer parent, and wait for
    it to be gone (its reaper collects it)."""
    try:
        os.kill(pid, signal.SIGINT)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return
        except FileNotFoundError:
            return
        time.sleep(0.05)


def quantile(v, q):
    v = sorted(v)
    pos = q * (len(v) - 1)
    i = int(pos)
    if i + 1 >= len(v):
        return v[-1]
    return v[i] + (pos - i) * (v[i + 1] - v[i])


def link_limit_Bps(system, workers, rate_bps):
    """The most tensor bytes per second one worker can get through links of
    rate_bps in each direction, framing taken out as the shaper counts it.

    xina (both switches): every worker sends its tensor once and receives
    the result once, ELEMS elements per packet: rate x payload / frame.
    A ring (Gloo) or Rabenseifner (OpenMPI) sends and receives 2(N-1)/N of
    the tensor per worker, in TCP segments of MTU - TCP_HDR payload:
    rate x N / (2(N-1)) x payload / frame.
    """
    if system.startswith("xina"):
        payload = 4 * ELEMS
        return rate_bps / 8 * payload / (payload + XINA_HDR), \
            f"rate x {payload}/{payload + XINA_HDR} (xina frames)"
    payload = MTU - TCP_HDR
    ring = workers / (2 * (workers - 1)) if workers > 1 else 1.0
    return rate_bps / 8 * ring * payload / (MTU + ETH_HDR), \
        f"rate x N/(2(N-1)) x {payload}/{MTU + ETH_HDR} (TCP segments)"


def record(system, workers, dtype, nbytes, times, worker_cpu, host_busy,
           switch_cpu, window_s, loss=0.0, **extra):
    """One measurement: goodput per worker from the per-iteration times
    (each the slowest rank's), CPU per GiB of tensor (one worker's tensor
    bytes times the timed calls), the host's busy fraction over the timed
    windows."""
    med = quantile(times, 0.5)
    p25, p75 = quantile(times, 0.25), quantile(times, 0.75)
    gib = len(times) * nbytes / (1 << 30)
    r = {
        "system": system, "workers": workers, "dtype": dtype,
        "bytes": nbytes, "loss": loss, "iters": len(times),
        "t_median_s": med,
        "goodput_Bps": nbytes / med,
        "goodput_p25_Bps": nbytes / p75, "goodput_p75_Bps": nbytes / p25,
        "goodput_min_Bps": nbytes / max(times),
        "goodput_max_Bps": nbytes / min(times),
        "spread_pct": 100.0 * (nbytes / p25 - nbytes / p75) / (nbytes / med),
        "agg_elems_per_s": workers * (nbytes // 4) / med,
        "reduced_gib": gib,
        "worker_cpu_s": worker_cpu, "switch_cpu_s": switch_cpu,
        "host_busy_s": host_busy,
        "worker_cpu_s_per_gib": worker_cpu / gib,
        "switch_cpu_s_per_gib": switch_cpu / gib,
        "host_busy_s_per_gib": host_busy / gib,
        "window_s": window_s,
        "busy_frac": host_busy / (window_s * os.cpu_count())
        if window_s > 0 else None,
    }
    r.update(extra)
    return r


class Bench:
    def __init__(self, args):
        self.a = args
        self.o = os.path.abspath(args.o)
        self.bin = f"{self.o}/bench/bin"
        self.rack = Rack(args.rack, self.o)
        self.results = []
        self.trains = []
        self.floors = []
        self.port_seq = 0
        self.port_ratio = 0.0
        self.busiest_ratio = 0.0
        self.bg_busy = None
        self.link_rate = args.link_rate
        self.sections = set(args.sections.split(","))
        self.regime = "cpu"
        self.racks_topo = None
        self.uplink_ratios = []
        self.launch_s = self.launch_bytes = 0
        # The job's secret: a key file of its own, never a command line.
        keydir = tempfile.mkdtemp(prefix="xina-bench-")
        atexit.register(shutil.rmtree, keydir, ignore_errors=True)
        self.keyfile = os.path.join(keydir, "job.key")
        subprocess.run([f"{self.o}/xinactl", "genkey", self.keyfile],
                       check=True)

    # ---- plan ---------------------------------------------------------

    def plan(self):
        """Per regime: worker counts, tensor sizes and timed calls per size.
        Loss runs are of the cpu regime, on the 4-worker rack; the racks of
        racks run both regimes at one size."""
        if self.a.quick:
            return {"cpu": {"workers": [2, 4], "sizes": [1 * MIB, 64 * MIB],
                            "iters": [8, 3]},
                    "link": {"workers": [4], "sizes": [64 * MIB], "iters": [3]},
                    "loss_size": 64 * MIB, "loss_rounds": 3,
                    "loss_iters": 2, "fastpath_packets": 3000,
                    "floor_mib": 1024, "floor_runs": 3,
                    "addloop_packets": 200000, "packloop_blocks": 5000,
                    "types_size": 16 * MIB, "types_iters": 3,
                    "sparse_size": 64 * MIB, "sparse_iters": 3,
                    "racks": {"sizes": [64 * MIB], "iters": [3],
                              "regimes": ["cpu", "link"]}}
        return {"cpu": {"workers": [2, 4, 8],
                        "sizes": [1 * MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB],
                        "iters": [10, 8, 5, 3, 2]},
                "link": {"workers": [2, 4, 8], "sizes": [64 * MIB], "iters": [3]},
                "loss_size": 64 * MIB, "loss_rounds": 6,
                "loss_iters": 3, "fastpath_packets": 20000,
                "floor_mib": 2048, "floor_runs": 5,
                "addloop_packets": 2000000, "packloop_blocks": 40000,
                "types_size": 64 * MIB, "types_iters": 25,
                "sparse_size": 64 * MIB, "sparse_iters": 9,
                "racks": {"sizes": [64 * MIB], "iters": [5],
                          "regimes": ["cpu", "link"]}}

    # ---- launches -----------------------------------------------------

    def checked(self, what, n, sizes, iters, warmup, fn):
        """Run fn() and require that every port received at least the
        tensor bytes of every call (each algorithm here sends at least its
        tensor once per call: ring and Rabenseifner 2(N-1)/N of it, xina
        all of it).  Before it, the host's busy fraction with nothing of
        ours running: the machine is shared, and that load is in every
        host-wide figure."""
        self.bg_busy = background_busy()
        before, wbefore = self.rack.port_rx(), self.rack.worker_rx()
        t0 = time.monotonic()
        out = fn()
        log(f"{self.regime} {what} {n} workers: launch took "
            f"{time.monotonic() - t0:.1f} s")
        after, wafter = self.rack.port_rx(), self.rack.worker_rx()
        need = sum(b * (it + warmup) for b, it in zip(sizes, iters))
        need *= len(self.dtypes)
        got = [after[f"p{i}"] - before[f"p{i}"] for i in range(n)]
        for i in range(n):
            if got[i] < 0.9 * need:
                raise BenchError(
                    f"{what}, {n} workers: switch port p{i} received {got[i]} bytes, "
                    f"expected at least {int(0.9 * need)}: the data did not cross "
                    f"the rack's links; refusing the result")
        # what one worker puts on its link per tensor byte (whole launch),
        # and the busiest direction of the busiest link: an algorithm that
        # loads its links unevenly is bound by that one
        self.port_ratio = sum(got) / n / need
        self.busiest_ratio = max(max(got[i], wafter[i] - wbefore[i])
                                 for i in range(n)) / need
        return out

    @staticmethod
    def new_run():
        """["--run", R]: a run of its own for one launch of a job's workers
        (the same R on every rank), as the test racks give theirs
        (scripts/rack.sh): the switch then never takes a launch's joins
        into a previous launch's epoch."""
        return ["--run", str(secrets.randbelow(0xffffffff) + 1)]

    def spawn(self, argv, **kw):
        return subprocess.Popen(argv, text=True, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, **kw)

    def collect(self, procs, what):
        outs = []
        deadline = time.monotonic() + LAUNCH_TIMEOUT
        for p in procs:
            try:
                out, err = p.communicate(timeout=max(1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                raise BenchError(f"{what}: no result within {LAUNCH_TIMEOUT} s")
            if p.returncode:
                for q in procs:
                    q.kill()
                raise BenchError(f"{what}: exit {p.returncode}: {err.strip()[-600:]}")
            outs.append(out)
        return outs

    @staticmethod
    def json_lines(text):
        return [json.loads(l) for l in text.splitlines() if l.startswith("{")]

    def openmpi(self, n, sizes, iters, interposer=False):
        system = "openmpi-xina" if interposer else "openmpi"
        for j in self.openmpi_lines(n, sizes, iters, interposer):
            self.add_peer(j, system)

    def openmpi_lines(self, n, sizes, iters, interposer=False, topo=None,
                      check=None):
        """xina-bench-mpi under mpirun, its JSON lines; with @interposer,
        the same program with libxina-mpi.so preloaded and configured for
        the XDP switch's job (its MPI_Allreduce calls go through the
        switch).  @topo places the ranks (the rack, or the racks of
        racks), @check verifies the bytes crossed its links."""
        topo = topo or self.rack
        check = check or self.checked
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                   OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_plm_rsh_agent="")
        system = "openmpi-xina" if interposer else "openmpi"
        pre = []
        if interposer:
            pre = ["env", f"LD_PRELOAD={self.o}/libxina-mpi.so",
                   f"XINA_SWITCH={SWITCH_IP}", f"XINA_JOB={JOB}",
                   f"XINA_KEY_FILE={self.keyfile}", f"XINA_SLOTS={SLOTS}",
                   f"XINA_ELEMS={ELEMS}", f"XINA_BIND=:{WORKER_PORT}"]
        argv = ["mpirun", "--allow-run-as-root", "-np", str(n), "--oversubscribe",
                "--bind-to", "none",
                # over the links, not shared memory; no node-local collectives
                "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include",
                topo.subnet, "--mca", "coll", "^sm,han,adapt",
                f"{self.bin}/xina-nsrun", "-p", "-P", topo.nsrun_pattern()] + \
            pre + [f"{self.bin}/xina-bench-mpi", "--bytes",
                ",".join(map(str, sizes)), "--iters", ",".join(map(str, iters)),
                "--dtype", ",".join(self.dtypes), "--warmup", "1"]

        def run():
            return self.collect([self.spawn(argv, env=env)], f"{system} {n}")[0]
        return self.json_lines(check(system, n, sizes, iters, 1, run))

    def gloo_lines(self, n, sizes, iters, topo=None, check=None):
        """Gloo's allreduce (torch.distributed) of @sizes, its JSON lines
        (@topo, @check: as openmpi_lines())."""
        topo = topo or self.rack
        check = check or self.checked
        self.port_seq += 1
        master = f"{topo.ip(0)}:{29500 + self.port_seq}"
        script = f"{ROOT}/scripts/bench/gloo_allreduce.py"

        def run():
            procs = [self.spawn(["ip", "netns", "exec", topo.ns(i)] +
                                pin_cpu(i) + ["env",
                                 "GLOO_SOCKET_IFNAME=eth0", "/usr/bin/python3",
                                 script, "--rank", str(i), "--workers", str(n),
                                 "--master", master,
                                 "--bytes", ",".join(map(str, sizes)),
                                 "--iters", ",".join(map(str, iters)),
                                 "--dtype", ",".join(self.dtypes),
                                 "--warmup", "1"]) for i in range(n)]
            return self.collect(procs, f"gloo {n}")[0]
        return self.json_lines(check("gloo", n, sizes, iters, 1, run))

    def gloo(self, n, sizes, iters):
        for j in self.gloo_lines(n, sizes, iters):
            self.add_peer(j, "gloo")

    def add_peer(self, j, system):
        self.keep(self.peer_record(j, system))

    @staticmethod
    def peer_record(j, system):
        # The bridge forwards in softirq on the sending CPU, which the
        # tick-based accounting charges to the task it interrupted (mostly
        # the workers): what no worker was charged for is the switch's.
        sw = max(0.0, j["host_busy_s"] - j["worker_cpu_s"])
        return record(system, j["workers"], j["dtype"], j["bytes"], j["t"],
                      j["worker_cpu_s"], j["host_busy_s"], sw, j["window_s"],
                      switch_cpu_method="host busy minus workers (bridge)")

    def xina(self, system, n, sizes, iters, loss=0.0, switch_args=()):
        for r in self.xina_records(
                system, n, sizes, iters, loss=loss, switch_args=switch_args,
                switch_cpu_method="XDP program run time (bpf_stats)"
                if system in ("xina-xdp", "xina-gxdp") else
                "xina-swagg process CPU"):
            self.keep(r)

    def xina_records(self, system, n, sizes, iters, loss=0.0, switch_args=(),
                     topo=None, check=None, switch_of=None, key_of=None,
                     job=JOB, switch_cpu_method=""):
        """xina-bench-xina on every worker, a record per size and dtype.
        Worker i runs in "topo.ns(i)" at "topo.ip(i)" (the rack's by
        default), sends to "switch_of(i)" with the secret of "key_of(i)"
        (the rack's switch and the job's key); rank 0 measures the switch
        by @switch_args; @check verifies the bytes crossed the links."""
        topo = topo or self.rack
        check = check or self.checked
        switch_of = switch_of or (lambda i: SWITCH_IP)
        key_of = key_of or (lambda i: self.keyfile)
        argv_common = ["--job", str(job), "--workers", str(n),
                       "--slots", str(SLOTS),
                       "--elems", str(ELEMS), "--bytes",
                       ",".join(map(str, sizes)), "--iters",
                       ",".join(map(str, iters)), "--dtype",
                       ",".join(self.dtypes), "--warmup", "1"]

        def run():
            procs, launch = [], self.new_run()
            for i in range(n):
                extra = list(switch_args) if i == 0 else []
                procs.append(self.spawn(
                    ["ip", "netns", "exec", topo.ns(i)] + pin_cpu(i) +
                    [f"{self.bin}/xina-bench-xina", "--rank", str(i), "--bind",
                     f"{topo.ip(i)}:{WORKER_PORT}", "--switch", switch_of(i),
                     "--key-file", key_of(i)] + argv_common + launch +
                    extra))
            return self.collect(procs, f"{system} {n}")
        outs = check(system, n, sizes, iters, 1, run)
        ranks = [self.json_lines(o) for o in outs]
        recs = []
        for k, r0 in enumerate(ranks[0]):
            per = [rk[k] for rk in ranks]
            times = [max(p["t"][i] for p in per) for i in range(r0["iters"])]
            recs.append(record(system, n, r0["dtype"], r0["bytes"], times,
                               sum(p["cpu_s"] for p in per), r0["host_busy_s"],
                               r0["switch_cpu_s"], r0["window_s"], loss=loss,
                               sent=sum(p["sent"] for p in per),
                               retrans=sum(p["retrans"] for p in per),
                               timeouts=sum(p["timeouts"] for p in per),
                               probes=sum(p.get("probes", 0) for p in per),
                               switch_cpu_method=switch_cpu_method))
        return recs

    def members(self, n):
        return [f"{i}={worker_ip(i)}:{WORKER_PORT}" for i in range(n)]

    def swagg(self, n, sizes, iters):
        argv = ["ip", "netns", "exec", self.rack.sw, f"{self.o}/xina-swagg",
                "--bind", SWITCH_IP, "--job", str(JOB), "--key-file",
                self.keyfile,
                "--workers", str(n), "--slots", str(SLOTS), "--elems",
                str(ELEMS), "--json"]
        for m in self.members(n):
            argv += ["--member", m]
        sw = subprocess.Popen(argv, text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
        try:
            # the aggregator is up once its socket is bound
            for _ in range(100):
                ss = subprocess.run(["ip", "netns", "exec", self.rack.sw, "ss",
                                     "-Hunl", "sport", "=", ":9277"],
                                    text=True, capture_output=True).stdout
                if ss.strip() or sw.poll() is not None:
                    break
                time.sleep(0.05)
            if sw.poll() is not None:
                raise BenchError(f"xina-swagg exited: {sw.stderr.read().strip()}")
            # ip netns exec execs its command: the pid is the aggregator's
            self.xina("xina-swagg", n, sizes, iters,
                      switch_args=["--switch-pid", str(sw.pid)])
        finally:
            sw.send_signal(signal.SIGTERM)
            try:
                sw.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                sw.kill()

    def job_add(self, n):
        self.rack.xctl("job", "add", str(JOB), "workers", str(n), "slots",
                       str(SLOTS), "elems", str(ELEMS), "keyfile", self.keyfile,
                       *sum((["member", str(i), f"{worker_ip(i)}:{WORKER_PORT}"]
                             for i in range(n)), []))

    def xdp(self, n, sizes, iters, loss=0.0, system="xina-xdp"):
        """xina through the fast path on the ports: xina-xdp in native
        mode, xina-gxdp in generic mode (attached so here)."""
        self.rack.attach_xdp("generic" if system == "xina-gxdp" else "native")
        self.job_add(n)
        try:
            args = []
            for pid in self.rack.xdp_prog_ids():
                args += ["--switch-prog", str(pid)]
            self.xina(system, n, sizes, iters, loss=loss, switch_args=args)
        finally:
            self.rack.xctl("job", "del", str(JOB))

    def types(self, n):
        """Every element type through the XDP switch, SUM of one tensor
        size (the same bytes for each: a 16-bit type has twice the
        elements of int32), through the Python package
        (types_allreduce.py): elements per second of each, and their ratio
        to int32's in the same launch."""
        p = self.plan()
        nbytes, iters = p["types_size"], p["types_iters"]
        script = f"{ROOT}/scripts/bench/types_allreduce.py"
        self.job_add(n)
        try:
            def run():
                launch = self.new_run()
                procs = [self.spawn(
                    ["ip", "netns", "exec", self.rack.ns(i)] + pin_cpu(i) +
                    ["env", f"XINA_LIBXINA={self.o}/libxina.so.0",
                     "/usr/bin/python3", script, "--rank", str(i),
                     "--workers", str(n), "--switch", SWITCH_IP,
                     "--job", str(JOB), "--key-file", self.keyfile,
                     "--slots", str(SLOTS), "--elems", str(ELEMS),
                     "--bind", f"{worker_ip(i)}:{WORKER_PORT}",
                     "--bytes", str(nbytes), "--iters", str(iters),
                     "--types", ",".join(TYPES), "--warmup", "1"] + launch)
                    for i in range(n)]
                return self.collect(procs, f"types {n}")
            saved = self.dtypes
            self.dtypes = TYPES      # checked(): every type's bytes crossed
            try:
                outs = self.checked("types", n, [nbytes], [iters], 1, run)
            finally:
                self.dtypes = saved
        finally:
            self.rack.xctl("job", "del", str(JOB))
        ranks = [self.json_lines(o) for o in outs]
        for k, r0 in enumerate(ranks[0]):
            per = [rk[k] for rk in ranks]
            times = [max(q["t"][i] for q in per) for i in range(r0["iters"])]
            med = quantile(times, 0.5)
            self.keep({"bench": "types_xdp", "dtype": r0["dtype"],
                       "op": r0["op"], "workers": n, "bytes": r0["bytes"],
                       "elems": r0["elems"], "iters": r0["iters"],
                       "t": times, "t_median_s": med,
                       "eps": r0["elems"] / med,
                       "goodput_Bps": r0["bytes"] / med,
                       "worker_cpu_s": sum(q["cpu_s"] for q in per),
                       "regime": self.regime, "bg_busy_frac": self.bg_busy})

    def sparse(self, n):
        """Block-sparse float32 SUM through the XDP switch (xina-allreduce
        --sparse: each worker's blocks non-zero with probability 1% or
        10%, independently, and the same blocks on every worker;
        xina_allreduce_sparse(), which finds the blocks by a pass over the
        tensor, and xina_allreduce_sparse_map() with each worker's map of
        its blocks, --sparse-map), and the same tensor dense, in one
        launch each: goodput of the dense-equivalent bytes (the whole
        tensor over the call's time), the slowest worker's median call.
        Each sparse launch is of pairs (--sparse-paired): every iteration
        a dense call of the tensor without the sparse zeros, then the
        sparse call, so the ratio to dense xina is of calls a moment
        apart on one machine, not of two launches minutes apart (this
        host's speed drifts by more than the targets' margins): for each
        pair the slowest worker's dense time over its sparse time, and
        their median."""
        p = self.plan()
        nbytes, iters = p["sparse_size"], p["sparse_iters"]
        self.job_add(n)
        try:
            for permille, same, known in (
                    (0, False, False), (10, False, False), (100, False, False),
                    (10, True, False), (100, True, False), (10, False, True),
                    (100, False, True), (10, True, True), (100, True, True)):
                def run():
                    extra = ["--sparse", str(permille)] if permille else []
                    extra += self.new_run()
                    extra += ["--sparse-same"] if same else []
                    extra += ["--sparse-map"] if known else []
                    extra += ["--sparse-paired"] if permille else []
                    procs = [self.spawn(
                        ["ip", "netns", "exec", self.rack.ns(i)] + pin_cpu(i) +
                        [f"{self.o}/xina-allreduce", "--switch", SWITCH_IP,
                         "--job", str(JOB), "--key-file", self.keyfile,
                         "--rank", str(i), "--workers", str(n),
                         "--slots", str(SLOTS), "--elems", str(ELEMS),
                         "--bind", f"{worker_ip(i)}:{WORKER_PORT}",
                         "--type", "float32", "--bytes", str(nbytes),
                         "--iters", str(iters), "--json"] + extra)
                        for i in range(n)]
                    return self.collect(procs, f"sparse {permille} {n}")
                outs = run()
                ranks = [json.loads(o.strip().splitlines()[-1]) for o in outs]
                if not all(r.get("verified") for r in ranks):
                    raise BenchError(f"sparse {permille}/1000: not verified: "
                                     f"{[r.get('error') for r in ranks]}")
                med = max(r["seconds_median"] for r in ranks)
                paired = {}
                if permille:
                    pairs = [(max(r["dense_seconds"][k] for r in ranks),
                              max(r["seconds"][k] for r in ranks))
                             for k in range(len(ranks[0]["seconds"]))]
                    ratios = [d / t for d, t in pairs]
                    paired = {
                        "dense_t_median_s": max(r["dense_seconds_median"]
                                                for r in ranks),
                        "paired_ratios": ratios,
                        "paired_ratio": statistics.median(ratios),
                        "zero_sent": ranks[0].get("sparse_zero_sent", 0)}
                self.keep({"bench": "sparse_xdp", "density": permille / 1000,
                           "same_blocks": same, "caller_map": known,
                           "dtype": "f32", "workers": n, "bytes": nbytes,
                           "iters": iters, "t_median_s": med,
                           "goodput_Bps": nbytes / med,
                           "sparse_blocks": ranks[0].get("sparse_blocks", 0),
                           "sparse_skipped": ranks[0].get("sparse_skipped", 0),
                           "zero_sent": ranks[0].get("zero_sent", 0),
                           "regime": self.regime, "bg_busy_frac": self.bg_busy,
                           **paired})
                log(f"sparse f32 {nbytes >> 20} MiB density {permille / 10:g}%"
                    f"{' (same blocks)' if same else ''}"
                    f"{' (caller map)' if known else ''}: "
                    f"{nbytes / med / 1e6:.1f} MB/s dense-equivalent per worker" +
                    (f", {paired['paired_ratio']:.2f}x its dense calls"
                     if paired else ""))
        finally:
            self.rack.xctl("job", "del", str(JOB))

    def fallback(self, n):
        """libxina's host fallback ring on a job the switch does not have
        (xina-allreduce --fallback: the join gets no answer, every call runs
        on the TCP ring between the workers), float32 SUM, and Gloo's
        allreduce of the same size right after it, in the same launch."""
        p = self.plan()
        nbytes, iters = p["sparse_size"], p["sparse_iters"]
        ring = ",".join(f"{worker_ip(i)}:{RING_PORT}" for i in range(n))
        launch = self.new_run()
        procs = [self.spawn(
            ["ip", "netns", "exec", self.rack.ns(i)] + pin_cpu(i) +
            [f"{self.o}/xina-allreduce", "--switch", SWITCH_IP,
             "--job", str(JOB + 1), "--key-file", self.keyfile,
             "--rank", str(i), "--workers", str(n),
             "--slots", str(SLOTS), "--elems", str(ELEMS),
             "--bind", f"{worker_ip(i)}:{WORKER_PORT}",
             "--timeout-ms", "1000", "--fallback", ring,
             "--type", "float32", "--bytes", str(nbytes),
             "--iters", str(iters), "--json"] + launch) for i in range(n)]
        outs = self.collect(procs, f"fallback {n}")
        ranks = [json.loads(o.strip().splitlines()[-1]) for o in outs]
        if not all(r.get("verified") and r.get("fallback") == 1
                   for r in ranks):
            raise BenchError(f"fallback: not verified on the ring: "
                             f"{[r.get('error') for r in ranks]}")
        med = max(r["seconds_median"] for r in ranks)
        saved = self.dtypes
        self.dtypes = ["f32"]
        try:
            g = self.gloo_lines(n, [nbytes], [iters])[0]
        finally:
            self.dtypes = saved
        gmed = quantile(g["t"], 0.5)
        self.keep({"bench": "fallback_ring", "dtype": "f32", "workers": n,
                   "bytes": nbytes, "iters": iters, "t_median_s": med,
                   "goodput_Bps": nbytes / med,
                   "ring_tx_bytes": ranks[0]["fallback_tx_bytes"],
                   "ring_calls": ranks[0]["fallback_calls"],
                   "gloo_t_median_s": gmed, "gloo_goodput_Bps": nbytes / gmed,
                   "regime": self.regime, "bg_busy_frac": self.bg_busy})
        log(f"fallback ring f32 {nbytes >> 20} MiB {n} workers: "
            f"{nbytes / med / 1e6:.1f} MB/s per worker, Gloo "
            f"{nbytes / gmed / 1e6:.1f}")

    def mpi_xina(self, n, sizes, iters):
        """An unmodified MPI program (xina-bench-mpi) through the XDP switch
        by libxina-mpi.so."""
        self.job_add(n)
        try:
            self.openmpi(n, sizes, iters, interposer=True)
        finally:
            self.rack.xctl("job", "del", str(JOB))

    # ---- racks of racks (issue 12) -------------------------------------

    def racks_checked(self, what, n, sizes, iters, warmup, fn):
        """checked() for the racks of racks: the inter-rack links' counters
        around fn().  Whatever the algorithm, every rack's contribution
        leaves it and the result enters it, so each rack's link must carry
        at least the tensor bytes of every call in each direction (0.9 of
        them, as checked() asks of the ports); the bytes per tensor byte of
        each link and direction are kept for the record."""
        rs = self.racks_topo
        self.bg_busy = background_busy()
        before = rs.uplinks()
        t0 = time.monotonic()
        out = fn()
        self.launch_s = time.monotonic() - t0
        log(f"{self.regime} {what} {rs.nr}x{rs.n} workers: launch took "
            f"{self.launch_s:.1f} s")
        after = rs.uplinks()
        need = sum(b * (it + warmup) for b, it in zip(sizes, iters))
        need *= len(self.dtypes)
        self.launch_bytes = need
        ratios = []
        for r in range(rs.nr):
            up, down = (after[r][k] - before[r][k] for k in (0, 1))
            if min(up, down) < 0.9 * need:
                raise BenchError(
                    f"{what}, racks: rack {r}'s inter-rack link carried {up} "
                    f"bytes out and {down} in, expected at least "
                    f"{int(0.9 * need)} each way: the data did not cross the "
                    "racks; refusing the result")
            ratios.append((up / need, down / need))
        self.uplink_ratios = ratios
        return out

    def racks_keep(self, r, **extra):
        """A record of the racks of racks, with the regime and link rate
        fields of the rack's records and the bytes each inter-rack link
        carried per tensor byte (whole launch: warm-up, barriers, headers
        and retransmissions included), out of the rack and into it."""
        rs = self.racks_topo
        r.update(bench="racks", racks=rs.nr, rack_workers=rs.n,
                 regime=self.regime, bg_busy_frac=self.bg_busy,
                 uplink_out_per_tensor_byte=[round(u, 4)
                                             for u, _ in self.uplink_ratios],
                 uplink_in_per_tensor_byte=[round(d, 4)
                                            for _, d in self.uplink_ratios],
                 link_rate_bps=None, link_limit_Bps=None)
        if self.regime == "link":
            lim, how = link_limit_Bps(r["system"], r["workers"], self.link_rate)
            r.update(link_rate_bps=self.link_rate, link_limit_Bps=lim,
                     link_limit_method=how, of_limit=r["goodput_Bps"] / lim)
        r.update(extra)
        self.results.append(r)
        lim = (f", {100 * r['of_limit']:.0f}% of the limit"
               if r["link_limit_Bps"] else "")
        links = " ".join(f"{u:.3f}/{d:.3f}" for u, d in self.uplink_ratios)
        log(f"{r['regime']:4} racks {r['system']:10} {rs.nr}x{rs.n} "
            f"{r['dtype']} {r['bytes'] // MIB} MiB: "
            f"{r['goodput_Bps'] / 1e6:8.1f} MB/s per worker "
            f"(+-{r['spread_pct'] / 2:.0f}%{lim}), host busy "
            f"{100 * r['busy_frac']:.0f}%, inter-rack links out/in per "
            f"tensor byte {links}")

    def racks(self):
        """3 racks of 3 workers (scripts/racks.sh), both regimes: Gloo and
        OpenMPI flat over all the workers, their traffic crossing the
        inter-rack links (before any XDP program is attached), then xina
        on rack 0's XDP switch in two levels (agents in racks 1 and 2) and
        flat (every worker a member of one job on rack 0's switch), then
        two levels with the upper switch at the spine (racks 0 and 2
        handing up from their XDP switches, rack 1 through an agent).
        The layouts at the spine with an agent in every rack (the upper
        switch xina-swagg, then XDP) run first, on racks without any other
        XDP program (made anew after them)."""
        q = self.plan()["racks"]
        sizes, iters = q["sizes"], q["iters"]
        rs = Racks(f"{self.rack.name}k", self.o, RACKS_NR, RACKS_N)
        self.racks_topo = rs
        rs.up()
        log(f"racks {rs.name}: {rs.nr} racks of {rs.n} workers")
        try:
            for regime in q["regimes"]:
                self.set_regime(regime, rs.n, rs.racks)
                self.racks_peers(rs, sizes, iters)
            self.set_regime("cpu", rs.n, rs.racks)
            self.racks_spine_agents(rs, sizes, iters, q["regimes"])
            rs.xdp()
            self.racks_xina(rs, sizes, iters, q["regimes"])
            self.racks_spine(rs, sizes, iters, q["regimes"])
            for k in range(ROUNDS):
                self.racks_round(rs, sizes, iters, k + 1)
        finally:
            self.regime = "cpu"
            rs.down()

    def racks_peers(self, rs, sizes, iters):
        """Gloo and OpenMPI flat over the racks' workers, their records
        kept."""
        for system, lines in (("openmpi", self.openmpi_lines),
                              ("gloo", self.gloo_lines)):
            for j in lines(rs.w, sizes, iters, topo=rs,
                           check=self.racks_checked):
                self.racks_keep(self.peer_record(j, system))

    def racks_round(self, rs, sizes, iters, k):
        """Round @k of the CPU-bound racks rows, as rounds() for the rack:
        the racks made anew (no XDP program anywhere), then the flat peers
        and xina's layouts (two levels on rack 0's switch, flat, two levels
        at the spine), xina first in odd rounds and the peers first in even
        ones (the first pass had the peers first); the layouts at the spine
        with agents in every rack before XDP on rack 0.  report.py takes each
        system's median over its launches."""
        first = len(self.results)
        log(f"racks round {k} of {ROUNDS}")
        rs.down()
        rs.up()
        if k % 2 == 0:
            self.racks_peers(rs, sizes, iters)
        self.racks_spine_agents(rs, sizes, iters, ["cpu"])
        rs.xdp()
        self.racks_xina(rs, sizes, iters, ["cpu"])
        self.racks_spine(rs, sizes, iters, ["cpu"])
        if k % 2:
            rs.down()
            rs.up()
            self.racks_peers(rs, sizes, iters)
        for r in self.results[first:]:
            r["round"] = k

    def racks_two_level(self, system, rs, sizes, iters, job, keys, agents,
                        progs, method):
        """One launch of xina in two levels on the racks, its records kept:
        worker g sends to its rack's switch (or agent) under the rack's
        job @job with the rack's key, keys[g // rs.n]; rank 0 measures the
        switches by their programs @progs (--switch-prog), as @method
        says.  The CPU of the agents (pids @agents) is read from /proc
        over the launch (warm-up and barriers included) and kept apart:
        each agent's, their sum per GiB of tensor bytes and the busiest's
        share of the launch."""
        a0 = [proc_cpu_s(p) for p in agents]
        recs = self.xina_records(
            system, rs.w, sizes, iters, switch_args=progs, topo=rs,
            check=self.racks_checked,
            switch_of=lambda g: rs.switch_ip(g // rs.n),
            key_of=lambda g: keys[g // rs.n], job=job,
            switch_cpu_method=method)
        agent = [proc_cpu_s(p) - c for p, c in zip(agents, a0)]
        gib = self.launch_bytes / (1 << 30)
        for r in recs:
            self.racks_keep(r, agent_cpu_s=agent, agent_launch_s=self.launch_s,
                            agent_cpu_s_per_gib=sum(agent) / gib,
                            agent_busy_frac=max(agent) / self.launch_s)
        log(f"{self.regime} racks {system}: agents' CPU {agent} s over a "
            f"launch of {self.launch_s:.1f} s")

    def genkey(self, path):
        """A key file at @path, unless a round before made it."""
        if not os.path.exists(path):
            subprocess.run([f"{self.o}/xinactl", "genkey", path], check=True,
                           capture_output=True)

    def racks_xina(self, rs, sizes, iters, regimes):
        """xina on the racks, in each regime: two levels (xina-hier) and
        flat (xina-flat).  The upper job on rack 0's switch: its workers
        (ranks 0..N-1) and the agents of the other racks (ranks N..), each
        agent a rack job of its rack's workers under their global ranks
        (the layout of selftests/xina_racks.sh).  The agents' CPU is read
        from /proc over each launch (warm-up and barriers included)."""
        keydir = os.path.dirname(self.keyfile)
        keys = [os.path.join(keydir, f"racks{r}.key") for r in range(rs.nr)]
        for k in keys:      # keys[0]: the upper job's, rack 0's workers'
            self.genkey(k)
        r0 = rs.racks[0]
        upw = rs.n + rs.nr - 1
        upm = sum((["member", str(i), f"{rs.ip(i)}:{WORKER_PORT}"]
                   for i in range(rs.n)), [])
        upm += sum((["member", str(rs.n + r - 1), f"{rs.switch_ip(r)}:9277"]
                    for r in range(1, rs.nr)), [])
        r0.xctl("job", "add", str(RACKS_HJOB), "workers", str(upw), "slots",
                str(SLOTS), "elems", str(ELEMS), "keyfile", keys[0], *upm)
        flat = sum((["member", str(g), f"{rs.ip(g)}:{WORKER_PORT}"]
                    for g in range(rs.w)), [])
        r0.xctl("job", "add", str(RACKS_FLAT_JOB), "workers", str(rs.w),
                "slots", str(SLOTS), "elems", str(ELEMS), "keyfile",
                self.keyfile, *flat)
        agents = {}
        try:
            for r in range(1, rs.nr):
                agents[r] = rs.agent(
                    r, os.path.join(keydir, f"agent{r}.json"), rs.n + r - 1,
                    keys[0], RACKS_HJOB,
                    ["--job", str(RACKS_HJOB), "--key-file", keys[r],
                     "--workers", str(rs.w), "--slots", str(SLOTS),
                     "--elems", str(ELEMS)])
            progs = sum((["--switch-prog", str(p)]
                         for p in r0.xdp_prog_ids()), [])
            for regime in regimes:
                self.set_regime(regime, rs.n, rs.racks)
                self.racks_two_level(
                    "xina-hier", rs, sizes, iters, RACKS_HJOB, keys,
                    list(agents.values()), progs,
                    "rack 0's XDP programs' run time (bpf_stats); the "
                    "agents apart")
                for r in self.xina_records(
                        "xina-flat", rs.w, sizes, iters, switch_args=progs,
                        topo=rs, check=self.racks_checked,
                        switch_of=lambda g: rs.switch_ip(0),
                        job=RACKS_FLAT_JOB,
                        switch_cpu_method="XDP program run time (bpf_stats)"):
                    self.racks_keep(r)
            self.set_regime("cpu", rs.n, rs.racks)
        finally:
            for p in agents.values():
                stop_pid(p)
            for r in agents:
                out = os.path.join(keydir, f"agent{r}.json")
                if os.path.exists(out):
                    with open(out) as f:
                        log(f"rack {r}'s agent: {f.read().strip()[-400:]}")

    def racks_spine_agents(self, rs, sizes, iters, regimes):
        """An agent in every rack, the upper switch at the spine in user
        space (xina-spine-swagg: xina-swagg), then as an XDP switch
        (xina-spine-agents): no XDP program in any rack, so rack 0 has
        none yet when this runs; the racks are made anew after it, without
        the spine's."""
        self.racks_spine(rs, sizes, iters, regimes, agent_racks=range(rs.nr),
                         system="xina-spine-swagg", spine="swagg")
        self.racks_spine(rs, sizes, iters, regimes,
                         agent_racks=range(rs.nr), system="xina-spine-agents")
        rs.down()
        rs.up()

    def racks_spine(self, rs, sizes, iters, regimes,
                    agent_racks=(RACKS_AGENT_RACK,), system="xina-spine",
                    spine="xdp"):
        """xina two levels with the upper switch at the spine (xina-spine):
        xina on the spine's ends of the inter-rack links holds the upper
        job, one member per rack; the racks with an XDP switch (all but
        @agent_racks) hand their partial up from it (a rack job with an
        uplink), the others through their agents (the layout of
        selftests/xina_racks.sh).  Every rack's job has the same id, on its
        own switch or agent.  The switches' CPU: the run time of the XDP
        and TC programs of the spine and of the XDP racks; the agents
        apart.  With @spine "swagg" the upper job is xina-swagg's in the
        spine namespace (every rack through its agent) and the switch's
        CPU that process's."""
        keydir = os.path.dirname(self.keyfile)
        upkey = os.path.join(keydir, "spine.key")
        keys = [os.path.join(keydir, f"spine-rack{r}.key")
                for r in range(rs.nr)]
        for k in [upkey] + keys:
            self.genkey(k)
        xdp_racks = [r for r in range(rs.nr) if r not in agent_racks]
        spine_pid = None
        if spine == "swagg":
            assert not xdp_racks
            spine_out = os.path.join(keydir, "spine-swagg.json")
            spine_pid = rs.spine_swagg(spine_out, RACKS_SPINE_JOB, upkey,
                                       ["--slots", str(SLOTS), "--elems",
                                        str(ELEMS)])
        else:
            rs.spine_xdp([r for r in xdp_racks if r != 0])
            upm = sum((["member", str(r),
                        f"{rs.switch_ip(r) if r in agent_racks else rs.uplink_ip(r)}:9277"]
                       for r in range(rs.nr)), [])
            rs.sctl("job", "add", str(RACKS_SPINE_JOB), "workers",
                    str(rs.nr), "slots", str(SLOTS), "elems", str(ELEMS),
                    "keyfile", upkey, *upm)
        for r in xdp_racks:
            m = sum((["member", str(r * rs.n + i),
                      f"{rs.ip(r * rs.n + i)}:{WORKER_PORT}"]
                     for i in range(rs.n)), [])
            rs.racks[r].xctl("job", "add", str(RACKS_RACK_JOB), "workers",
                             str(rs.w), "slots", str(SLOTS), "elems",
                             str(ELEMS), "keyfile", keys[r], *m, "up",
                             rs.spine_ip(r), "upjob", str(RACKS_SPINE_JOB),
                             "uprank", str(r), "upkeyfile", upkey)
        agents = {}
        try:
            for ar in agent_racks:
                agents[ar] = rs.agent(
                    ar, os.path.join(keydir, f"spine-agent{ar}.json"), ar,
                    upkey, RACKS_SPINE_JOB,
                    ["--job", str(RACKS_RACK_JOB), "--key-file", keys[ar],
                     "--workers", str(rs.w), "--slots", str(SLOTS),
                     "--elems", str(ELEMS)], up_addr=rs.spine_ip(ar))
            if spine_pid:
                progs = ["--switch-pid", str(spine_pid)]
                method = ("the spine's xina-swagg process CPU; the agents "
                          "apart")
            else:
                progs = sum((["--switch-prog", str(p)] for p in rs.prog_ids(
                    [f"{rs.name}-spine"] + [rs.sw(r) for r in xdp_racks])),
                    [])
                method = ("the XDP and TC programs' run time (bpf_stats) of "
                          "the spine and of the XDP racks; the agents apart")
            for regime in regimes:
                self.set_regime(regime, rs.n, rs.racks)
                self.racks_two_level(
                    system, rs, sizes, iters, RACKS_RACK_JOB, keys,
                    list(agents.values()), progs, method)
            self.set_regime("cpu", rs.n, rs.racks)
        finally:
            for p in agents.values():
                stop_pid(p)
            if spine_pid:
                stop_pid(spine_pid)
                with open(spine_out) as f:
                    log(f"the spine's xina-swagg: {f.read().strip()[-400:]}")
            for r in xdp_racks:
                log(f"rack {r}'s uplink: " + rs.racks[r].xctl(
                    "-j", "job", "show", str(RACKS_RACK_JOB)).strip()[-600:])
            for ar in agents:
                out = os.path.join(keydir, f"spine-agent{ar}.json")
                if os.path.exists(out):
                    with open(out) as f:
                        log(f"rack {ar}'s agent: {f.read().strip()[-400:]}")

    # ---- training (scripts/train.py, its own rack) ----------------------

    def train(self):
        """PyTorch DDP through the switch and on Gloo: the digits MLP and a
        model of tens of millions of parameters (make train; its own
        checks must pass)."""
        q = self.a.quick
        runs = [["--model", "digits", "--epochs", "5" if q else "10"],
                ["--model", "large", "--steps", "5" if q else "8"]]
        for extra in runs:
            log(f"train {' '.join(extra)}")
            p = subprocess.run(["/usr/bin/python3", f"{ROOT}/scripts/train.py",
                                "--json"] + extra, text=True,
                               capture_output=True, env=dict(os.environ, O=self.o))
            lines = [x for x in p.stdout.splitlines() if x.startswith("{")]
            if p.returncode or not lines:
                raise BenchError(f"train {' '.join(extra)} failed: "
                                 + p.stderr[-1500:])
            r = json.loads(lines[-1])
            self.trains.append(r)
            log(f"train {r['model']}: step {r['xina']['step_ms_median']:.0f} ms "
                f"(xina) vs {r['gloo']['step_ms_median']:.0f} ms (Gloo)")

    # ---- microbenchmarks ----------------------------------------------

    def micro(self):
        p = self.plan()
        elems = ",".join(map(str, sorted(set(FASTPATH_ELEMS) | {ELEMS})))
        # the adds alone, and (-a) with each packet's tag verified first
        for prog, auth in itertools.product(
                ("xina-bench-addloop", "xina-bench-addloop-simd"),
                ([], ["-a"])):
            out = subprocess.run([f"{self.bin}/{prog}", *auth, "-n",
                                  str(p["addloop_packets"]), "-e", elems],
                                 text=True, capture_output=True,
                                 check=True).stdout
            for j in self.json_lines(out):
                self.keep(j)
        out = subprocess.run(["ip", "netns", "exec", self.rack.sw,
                              f"{self.bin}/xina-bench-fastpath", "-n",
                              str(p["fastpath_packets"]), "-e", elems],
                             text=True,
                             capture_output=True)
        if out.returncode:
            raise BenchError(f"xina-bench-fastpath: {out.stderr.strip()}")
        for j in self.json_lines(out.stdout):
            self.keep(j)
        # the worker's element loops per type (in cache, pinned to CPU 0)
        out = subprocess.run([f"{self.bin}/xina-bench-packloop", "-n",
                              str(p["packloop_blocks"])], text=True,
                             capture_output=True)
        if out.returncode:
            raise BenchError(f"xina-bench-packloop: {out.stderr.strip()}")
        for j in self.json_lines(out.stdout):
            self.keep(j)
        # The wire types at xina's packet size (in 32-bit words), in one run:
        # their ratios to int32 are of the same run.
        out = subprocess.run(["ip", "netns", "exec", self.rack.sw,
                              f"{self.bin}/xina-bench-fastpath", "-n",
                              str(p["fastpath_packets"]), "-e", str(ELEMS),
                              "-T", ",".join(WIRE_TYPES)],
                             text=True, capture_output=True)
        if out.returncode:
            raise BenchError(f"xina-bench-fastpath -T: {out.stderr.strip()}")
        for j in self.json_lines(out.stdout):
            j["types_run"] = True
            self.keep(j)

    # ---- the run ------------------------------------------------------

    def keep(self, r):
        if "system" in r:
            r["port_rx_per_tensor_byte"] = round(self.port_ratio, 3)
            r["busiest_link_per_tensor_byte"] = round(self.busiest_ratio, 3)
            r["regime"] = self.regime
            r["bg_busy_frac"] = self.bg_busy
            r["link_rate_bps"] = None
            r["link_limit_Bps"] = None
            if self.regime == "link":
                lim, how = link_limit_Bps(r["system"], r["workers"],
                                          self.link_rate)
                r.update(link_rate_bps=self.link_rate, link_limit_Bps=lim,
                         link_limit_method=how,
                         of_limit=r["goodput_Bps"] / lim)
        self.results.append(r)
        if "system" in r:
            lim = (f", {100 * r['of_limit']:.0f}% of the limit"
                   if r["link_limit_Bps"] else "")
            busy = (f"{100 * r['busy_frac']:.0f}%" if r["busy_frac"] is not None
                    else "?")
            log(f"{r['regime']:4} {r['system']:10} {r['workers']} workers "
                f"{r['dtype']} {r['bytes'] // MIB:4} MiB loss "
                f"{r['loss'] * 100:.1f}%: {r['goodput_Bps'] / 1e6:8.1f} MB/s "
                f"per worker (+-{r['spread_pct'] / 2:.0f}%{lim}), host busy "
                f"{busy} (before: {100 * r['bg_busy_frac']:.0f}%)")
        else:
            log(f"{r['bench']}: {json.dumps(r)}")

    def rounds(self, n, q, count=ROUNDS):
        """The CPU-bound target rows again, @count more launches of every
        system at ROUND_SIZE, a round's launches one right after the other
        and in an order that turns by one each round (the XDP program
        attached for xina's launch only).  On this machine one launch of the
        same code moves by 10-20% on its own, and a sweep's launches of the
        systems are minutes apart; report.py takes each system's median
        over all its launches (the sweep's and the rounds') for the verdict,
        and shows their range."""
        it = [q["iters"][q["sizes"].index(ROUND_SIZE)]]
        run = {"openmpi": self.openmpi, "gloo": self.gloo,
               "xina-swagg": self.swagg}
        for k in range(count):
            order = ROUND_SYSTEMS[k:] + ROUND_SYSTEMS[:k]
            log(f"round {k + 1} of {count}, {n} workers: {', '.join(order)}")
            for system in order:
                first = len(self.results)
                if system in ("xina-xdp", "xina-gxdp"):
                    self.xdp(n, [ROUND_SIZE], it, system=system)
                else:
                    if self.rack.xdp:
                        self.rack.detach_xdp()
                    run[system](n, [ROUND_SIZE], it)
                for r in self.results[first:]:
                    r["bench"], r["round"] = "round", k + 1

    def peers(self, n, q):
        self.openmpi(n, q["sizes"], q["iters"])
        self.gloo(n, q["sizes"], q["iters"])
        self.swagg(n, q["sizes"], q["iters"])

    def set_regime(self, regime, n, racks=None):
        """Switch the links of the @n workers of each of @racks (the rack
        by default) to @regime (shape or unshape them)."""
        racks = racks or [self.rack]
        if regime == "link" and self.regime != "link":
            for rk in racks:
                rk.sh(f"rack_shape {rk.name} {n} {self.link_rate}bit")
            log(f"links of {len(racks)} x {n} workers at "
                f"{self.link_rate / 1e6:.0f} Mbit/s each way")
        elif regime != "link" and self.regime == "link":
            for rk in racks:
                rk.sh(f"rack_unshape {rk.name} {n}")
        self.regime = regime

    def run(self):
        """The sections asked for (--sections): "rack", then "racks"."""
        p = self.plan()
        self.dtypes = ["f32", "i32"]
        t0 = time.monotonic()
        load0 = os.getloadavg()[0]
        if "rack" in self.sections:
            self.run_rack(p)
        elif self.sections & set(RACK_PARTS):
            self.run_parts([s for s in RACK_PARTS if s in self.sections])
        if "floor" in self.sections and "rack" not in self.sections:
            self.floor()
        if "targets" in self.sections and "rack" not in self.sections:
            self.targets(p["cpu"])
        if "racks" in self.sections:
            self.racks()
        self.write(p, t0, load0)

    def run_rack(self, p):
        """Per worker count, one rack: the bridge's systems (OpenMPI, Gloo,
        xina-swagg) in both regimes, then the XDP switch attached and run in
        both, in native mode and then in generic mode.  The peers never run
        through the XDP program.  Then the training runs."""
        cpu, link = p["cpu"], p["link"]
        for n in sorted(set(cpu["workers"]) | set(link["workers"])):
            self.rack.up(n)
            log(f"rack {self.rack.name}: {n} workers")
            if n == 4:
                self.micro()  # needs the ports p0..p3
            if n in cpu["workers"]:
                self.peers(n, cpu)
            if n in link["workers"]:
                self.set_regime("link", n)
                self.peers(n, link)
                self.set_regime("cpu", n)
            self.rack.attach_xdp()
            if n in cpu["workers"]:
                self.xdp(n, cpu["sizes"], cpu["iters"])
                self.mpi_xina(n, cpu["sizes"], cpu["iters"])
            if n == 4:
                self.types(n)
                self.sparse(n)
                self.fallback(n)
            if n in link["workers"]:
                self.set_regime("link", n)
                self.xdp(n, link["sizes"], link["iters"])
                self.set_regime("cpu", n)
            if n == 4:
                self.loss(n)
            if n in cpu["workers"]:
                self.xdp(n, cpu["sizes"], cpu["iters"], system="xina-gxdp")
            if n in link["workers"]:
                self.set_regime("link", n)
                self.xdp(n, link["sizes"], link["iters"], system="xina-gxdp")
                self.set_regime("cpu", n)
            if n in cpu["workers"] and n in (4, 8) and \
               ROUND_SIZE in cpu["sizes"]:
                self.rounds(n, cpu)
            self.rack.down()
        self.floor()
        self.train()

    def targets(self, cpu):
        """The CPU-bound target rows alone, as the whole rack's rounds run
        them but one round more (no sweep before them): a change to the
        switch or to libxina measured against the peers in minutes."""
        for n in (4, 8):
            self.rack.up(n)
            log(f"rack {self.rack.name}: {n} workers, the target rows only")
            self.rack.attach_xdp()
            self.rounds(n, cpu, ROUNDS + 1)
            self.rack.down()

    def floor(self):
        """The transport under xina's allreduce without its arithmetic
        or its tags (scripts/bench/floor/train_floor.sh, on a rack of its
        own): each of 4 workers' bytes to the switch once and a result to
        every worker, as one frame at a time behind an XDP program (the
        shape of xina's XDP switch) and as GSO trains through TC alone.
        What the host spends per GiB in each, against what xina and the
        peers spend in the same run (report.py), says how much of xina's
        cost is the transport's shape and how much its own work."""
        p = self.plan()
        log(f"floor: 4 workers, {p['floor_mib']} MiB each, "
            f"{p['floor_runs']} runs per shape")
        out = subprocess.run(
            [f"{ROOT}/scripts/bench/floor/train_floor.sh", "4",
             str(p["floor_mib"]), str(p["floor_runs"])], text=True,
            capture_output=True, env=dict(os.environ, O=self.o,
                                          TF_RACK=f"{self.rack.name}f"))
        rows = []
        for line in out.stdout.splitlines():
            if line.startswith("floor "):
                r = dict(w.split("=", 1) for w in line.split()[1:])
                rows.append({k: (v if k == "shape" else float(v))
                             for k, v in r.items()})
        if out.returncode or not rows:
            raise BenchError("train_floor.sh failed: "
                             + (out.stderr or out.stdout)[-1500:])
        for r in rows:
            r["mib"] = p["floor_mib"]
            log(f"floor {r['shape']} read={r['read']:.0f}: "
                f"{r['cpu_s_per_gib']:.2f} CPU s per GiB, "
                f"{r['goodput_Bps'] / 1e6:.0f} MB/s per worker")
        self.floors += rows

    def loss(self, n):
        """xina through the XDP switch at 0.1% and 1% loss, against lossless
        launches of the same calls, in rounds, with the switch's ports in
        native mode and in generic mode: each round one launch of each
        (lossless, 0.1%, 1%) in each mode, the order of the loss rates
        turned by one per round and the modes' by one every other, so that
        each loss launch has a lossless one of its mode within a minute of
        it and a drift of the shared machine's speed over the rounds weighs
        on every kind alike.  report.py takes each loss launch's ratio to
        its round's lossless one of the same mode, and the median over the
        rounds."""
        p = self.plan()
        kinds = [0, 1, 10]  # permille
        systems = ["xina-xdp", "xina-gxdp"]
        for rnd in range(p["loss_rounds"]):
            for system in systems[rnd % 2:] + systems[:rnd % 2]:
                self.loss_round(n, p, rnd, system,
                                kinds[rnd % 3:] + kinds[:rnd % 3])

    def loss_round(self, n, p, rnd, system, permilles):
        """Round @rnd of loss(): a launch of @system at each of
        @permilles."""
        for permille in permilles:
            drops = None
            if permille:
                self.rack.impair(permille)
            try:
                self.xdp(n, [p["loss_size"]], [p["loss_iters"]],
                         loss=permille / 1000, system=system)
                if permille:
                    drops = self.rack.impair_drops()
            finally:
                if permille:
                    self.rack.unimpair()
            for r in self.results[-len(self.dtypes):]:
                r["loss_round"] = rnd
                if permille:
                    r["impair_drops"] = drops
                else:
                    r["bench"] = "loss_ref"

    def generic(self, n):
        """The XDP switch with its ports in native and in generic mode,
        CPU-bound at ROUND_SIZE, ROUNDS + 1 launches of each by turns, as
        rounds() runs them (SECTIONS=generic: the comparison in minutes)."""
        p = self.plan()["cpu"]
        it = [p["iters"][p["sizes"].index(ROUND_SIZE)]]
        for k in range(ROUNDS + 1):
            for system in (("xina-xdp", "xina-gxdp") if k % 2 == 0 else
                           ("xina-gxdp", "xina-xdp")):
                first = len(self.results)
                self.xdp(n, [ROUND_SIZE], it, system=system)
                for r in self.results[first:]:
                    if k:
                        r["bench"], r["round"] = "round", k

    def run_parts(self, parts):
        """Some of the rack's runs at 4 workers (SECTIONS=types, ...),
        each as in the whole rack's run, to measure a change in minutes."""
        self.rack.up(4)
        log(f"rack {self.rack.name}: 4 workers, {', '.join(parts)} only")
        self.rack.attach_xdp()
        for part in parts:
            getattr(self, part)(4)
        self.rack.down()

    def write(self, p, t0, load0):
        elapsed = time.monotonic() - t0
        meta = {
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "quick": bool(self.a.quick), "elapsed_s": round(elapsed, 1),
            "sections": sorted(self.sections),
            # other work on the machine shows in the host-wide figures
            "loadavg_1min": [round(load0, 2), round(os.getloadavg()[0], 2)],
            "kernel": platform.release(), "cpus": os.cpu_count(),
            "cpu_model": cpu_model(), "mtu": MTU,
            "xina": {"slots": SLOTS, "elems_per_packet": ELEMS,
                     "frame_bytes": 4 * ELEMS + XINA_HDR},
            "regimes": {
                "cpu": p["cpu"],
                "link": dict(p["link"], rate_bps=self.link_rate,
                             shaper="tbf burst 256k latency 50ms on eth0 and "
                                    "on an ifb fed by eth0's ingress"),
            },
            "racks": dict(p["racks"], racks=RACKS_NR, rack_workers=RACKS_N,
                          link_rate_bps=self.link_rate),
            "frame_overhead": {"xina_hdr": XINA_HDR, "tcp_hdr": TCP_HDR,
                               "eth_hdr": ETH_HDR, "wire_extra": WIRE_EXTRA},
            "openmpi": tool_version(["mpirun", "--version"]),
            "torch": tool_version(["/usr/bin/python3", "-c",
                                   "import torch; print('torch', torch.__version__)"]),
        }
        with open(self.a.out, "w") as f:
            json.dump({"meta": meta, "results": self.results,
                       "train": self.trains, "floor": self.floors}, f,
                      indent=1)
        log(f"{len(self.results)} records in {self.a.out} ({elapsed:.0f} s)")


def host_busy_s():
    """Busy seconds of all CPUs (everything but idle and iowait)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def background_busy(seconds=0.5):
    """The host's busy fraction over @seconds, nothing of ours running."""
    b0, t0 = host_busy_s(), time.monotonic()
    time.sleep(seconds)
    return (host_busy_s() - b0) / ((time.monotonic() - t0) * os.cpu_count())


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def tool_version(argv):
    try:
        return subprocess.run(argv, text=True, capture_output=True,
                              timeout=60).stdout.splitlines()[0].strip()
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rack", required=True, help="name of the rack to use")
    ap.add_argument("--o", default=os.environ.get("O", "build"))
    ap.add_argument("--out", required=True, help="results.json to write")
    ap.add_argument("--link-rate", type=float, default=LINK_RATE_BPS,
                    help="bits/s of every worker link in the link regime")
    ap.add_argument("--sections", default=",".join(SECTIONS),
                    help="what to run, comma-separated: "
                         + ", ".join(f"{k} ({v})" for k, v in SECTIONS.items()))
    a = ap.parse_args()
    a.link_rate = int(a.link_rate)
    bad = set(a.sections.split(",")) - set(SECTIONS)
    if bad:
        ap.error(f"unknown section {', '.join(sorted(bad))} "
                 f"(of {', '.join(SECTIONS)})")
    b = Bench(a)
    try:
        b.run()
    except (BenchError, subprocess.CalledProcessError) as e:
        log(f"FAILED: {e}")
        return 1
    finally:
        b.rack.down()
        if b.racks_topo:
            b.racks_topo.down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
