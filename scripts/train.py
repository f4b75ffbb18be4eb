#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""make train: a real model trained with PyTorch DDP across the 4 worker
namespaces of a rack, its gradients through the xina switch (the DDP hook
of user/python/xina/ddp.py), and the same run with DDP's own allreduce
over Gloo; final test accuracy and step time of both.

The data: the handwritten digits of scikit-learn (sklearn.datasets.
load_digits, shipped in Debian's python3-sklearn: 1797 8x8 images, 10
classes), 360 held out for the test.  The model: an MLP 64-256-128-10.
Both runs start from the same weights and see the same batches in the
same order; they differ only in how gradients are averaged (xina's block
floating point, Gloo's float sums), so their accuracies must agree within
TOLERANCE, and both must learn (at least MIN_ACCURACY).

    scripts/train.py [--epochs N] [--batch B]      (as root: makes a rack)
    scripts/train.py --model large [--steps N] [--batch B]
    scripts/train.py ... --json    (one JSON line of both runs, for make bench)

--model large: where communication matters.  An MLP of about 34 million
parameters (2048-4096-4096-2048, 134 MB of float32 gradients a step) on
synthetic inputs and labels (seeded, the same on every run), a few steps:
the step time of xina and Gloo, and that every gradient element of every
step went through the switch.  Accuracy means nothing on random labels
and is not compared; the replicas must still end identical.

Step time: wall time of one training step (forward, backward with the
gradients' allreduce, optimiser step) on rank 0, median over the steps
after the first epoch (digits) or the first two steps (large).  The four ranks share this machine's CPUs, so the
numbers compare the two runs with each other, not with a cluster.
"""

import argparse
import json
import os
import statistics
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "user", "python"))

WORKERS = 4
TOLERANCE = 0.02        # |accuracy(xina) - accuracy(Gloo)|, as a fraction
MIN_ACCURACY = 0.90
SLOTS, ELEMS, MTU = 32, 2048, 9000   # scripts/rack.sh's fast configuration
MODE = "generic"                     # (RACK_FAST_*): GSO trains taken whole
NET = "10.77.0"
SWITCH = f"{NET}.254"
WORKER_PORT = 7000


def worker_ip(i):
    return f"{NET}.{i + 1}"


# ---- one rank ---------------------------------------------------------------

def data():
    import numpy as np
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    perm = np.random.default_rng(0).permutation(len(y))
    test, train = perm[:360], perm[360:]
    return x[train], y[train], x[test], y[test]


LARGE = (2048, 4096, 4096, 2048)     # --model large: layer widths
LARGE_WARMUP = 2                     # steps left out of its step time


def large_data(a):
    """Synthetic inputs and labels, the same on every run: rank r's
    share of batch s is the same rows whatever the backend."""
    import numpy as np

    g = np.random.default_rng(7)
    n = a.steps * a.batch * WORKERS
    x = g.standard_normal((n, LARGE[0]), dtype=np.float32)
    y = g.integers(0, LARGE[-1], n).astype(np.int64)
    return x, y, x[:a.batch], y[:a.batch]


def mlp(widths):
    import torch

    layers = []
    for i in range(len(widths) - 1):
        layers.append(torch.nn.Linear(widths[i], widths[i + 1]))
        if i < len(widths) - 2:
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def worker(a):
    import numpy as np
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(1)
    os.environ["GLOO_SOCKET_IFNAME"] = "eth0"
    dist.init_process_group("gloo", init_method=f"tcp://{a.master}",
                            rank=a.rank, world_size=WORKERS)
    large = a.model == "large"
    xtr, ytr, xte, yte = large_data(a) if large else data()
    torch.manual_seed(0)
    net = mlp(LARGE if large else (64, 256, 128, 10))
    model = DDP(net)
    state = None
    if a.backend == "xina":
        import xina.ddp
        state = xina.ddp.register(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    xte_t, yte_t = torch.from_numpy(xte), torch.from_numpy(yte)

    times = []
    epochs = 1 if large else a.epochs
    for epoch in range(epochs):
        # the same shuffle on every rank, each rank its share
        perm = np.random.default_rng(1000 + epoch).permutation(len(ytr))
        mine = perm[a.rank::WORKERS]
        steps = len(perm) // WORKERS // a.batch
        for s in range(steps):
            idx = mine[s * a.batch:(s + 1) * a.batch]
            xb = torch.from_numpy(xtr[idx])
            yb = torch.from_numpy(ytr[idx])
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            if (s >= LARGE_WARMUP) if large else (epoch > 0):
                times.append(time.perf_counter() - t0)
    with torch.no_grad():
        acc = (net(xte_t).argmax(1) == yte_t).float().mean().item()
    digest = float(sum(p.double().sum() for p in net.parameters()))
    digests = [None] * WORKERS
    dist.all_gather_object(digests, digest)
    if a.rank == 0:
        print(json.dumps({
            "backend": a.backend, "accuracy": acc,
            "step_ms_median": 1e3 * statistics.median(times),
            "step_ms_mean": 1e3 * statistics.fmean(times),
            "steps": epochs * steps, "params":
            sum(p.numel() for p in net.parameters()),
            "replicas_identical": len(set(digests)) == 1,
            "buckets_through_xina": state.buckets if state else 0,
            "elements_through_xina": state.elements if state else 0,
            "max_buckets_in_flight": state.max_in_flight if state else 0,
        }), flush=True)
    if state:
        state.handle.close()
    # Out without tearing torch down: Debian's torch 1.13 can deadlock when
    # the DDP reducer's Gloo process group is destroyed at exit (its
    # destructor joins a Gloo thread waiting for the GIL the destructor
    # holds; seen here once in a few runs).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


# ---- the launcher -----------------------------------------------------------

def sh(*argv, **kw):
    return subprocess.run(argv, check=True, **kw)


class Rack:
    def __init__(self):
        self.name = f"xtrain{os.getpid()}"
        self.pin = f"/run/xina-{self.name}"
        self.rack = os.path.join(ROOT, "scripts", "rack.sh")
        out = os.environ.get("O", "build")
        self.o = out if os.path.isabs(out) else os.path.join(ROOT, out)
        self.xinactl = os.path.join(self.o, "xinactl")
        # The job's secret: a key file of the run's own (xinactl job add
        # creates it, 0600), read by the workers through XINA_KEY_FILE.
        self.keydir = tempfile.mkdtemp(prefix="xina-train-")
        self.keyfile = os.path.join(self.keydir, "job.key")

    def up(self):
        sh(self.rack, "up", self.name, str(WORKERS), "mtu", str(MTU),
           stdout=subprocess.DEVNULL)
        sh(self.rack, "xdp", self.name, str(WORKERS), self.pin, MODE)

    def down(self):
        subprocess.run([self.rack, "down", self.name])
        shutil.rmtree(self.keydir, ignore_errors=True)

    def xctl(self, *args, **kw):
        return sh("ip", "netns", "exec", f"{self.name}-sw", self.xinactl,
                  "-P", self.pin, *args, **kw)

    def job_add(self, job):
        members = []
        for i in range(WORKERS):
            members += ["member", str(i), f"{worker_ip(i)}:{WORKER_PORT}"]
        self.xctl("job", "add", str(job), "workers", str(WORKERS), "slots",
                  str(SLOTS), "elems", str(ELEMS), "keyfile", self.keyfile,
                  *members)

    def job_stats(self, job):
        out = self.xctl("-j", "stats", "job", str(job), capture_output=True,
                        text=True).stdout
        return json.loads(out)["jobs"][0]


def run(rack, backend, job, port, a):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "user", "python"),
               XINA_LIBXINA=os.path.join(rack.o, "libxina.so.0"))
    procs = []
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(WORKERS):
            wenv = dict(env)
            if backend == "xina":
                wenv.update(XINA_SWITCH=SWITCH, XINA_JOB=str(job),
                            XINA_KEY_FILE=rack.keyfile,
                            XINA_SLOTS=str(SLOTS),
                            XINA_ELEMS=str(ELEMS),
                            XINA_BIND=f"{worker_ip(i)}:{WORKER_PORT}")
            err = open(os.path.join(tmp, f"w{i}.err"), "w+")
            procs.append((subprocess.Popen(
                ["ip", "netns", "exec", f"{rack.name}-w{i}",
                 sys.executable, os.path.abspath(__file__), "--worker",
                 "--backend", backend, "--rank", str(i),
                 "--master", f"{worker_ip(0)}:{port}",
                 "--model", a.model, "--steps", str(a.steps),
                 "--epochs", str(a.epochs), "--batch", str(a.batch)],
                env=wenv, stdout=subprocess.PIPE, stderr=err, text=True),
                err))
        result = None
        failed = []
        for i, (p, err) in enumerate(procs):
            try:
                out, _ = p.communicate(timeout=600)
            except subprocess.TimeoutExpired:
                for q, _ in procs:
                    q.kill()
                err.seek(0)
                raise SystemExit(f"train: {backend}: rank {i} timed out: "
                                 + err.read()[-800:])
            if p.returncode:
                err.seek(0)
                failed.append(f"rank {i}: exit {p.returncode}: "
                              + err.read()[-800:])
            for line in out.splitlines():
                if line.startswith("{"):
                    result = json.loads(line)
        if failed or result is None:
            raise SystemExit(f"train: {backend} failed:\n" + "\n".join(failed))
    result["wall_s"] = time.monotonic() - t0
    return result


def launch(a):
    if os.geteuid() != 0:
        raise SystemExit("train: must run as root (network namespaces, XDP)")
    rack = Rack()
    try:
        rack.up()
        rack.job_add(1)
        rx = run(rack, "xina", 1, 29601, a)
        st = rack.job_stats(1)
        rg = run(rack, "gloo", 0, 29602, a)
    finally:
        rack.down()

    large = a.model == "large"
    if large:
        what = (f"synthetic data, MLP {'-'.join(map(str, LARGE))} of "
                f"{rx['params']} parameters")
    else:
        what = f"digits (sklearn), MLP of {rx['params']} parameters"
    out = sys.stderr if a.json else sys.stdout
    print(f"{what}, {WORKERS} workers, {rx['steps']} steps, batch "
          f"{a.batch} per worker", file=out)
    print(f"{'backend':8} {'accuracy':>8} {'step ms (median)':>17} "
          f"{'step ms (mean)':>15} {'run s':>6}", file=out)
    for r in (rx, rg):
        acc = "-" if large else f"{r['accuracy']:.4f}"
        print(f"{r['backend']:8} {acc:>8} "
              f"{r['step_ms_median']:17.2f} {r['step_ms_mean']:15.2f} "
              f"{r['wall_s']:6.1f}", file=out)
    print(f"switch: job 1 completed {st['complete']} slots of "
          f"{st['contrib']} contributions; {rx['buckets_through_xina']} "
          f"buckets went through xina on rank 0", file=out)
    b = -(-rx["params"] // ELEMS)
    checks = [
        (rx["replicas_identical"] and rg["replicas_identical"],
         "the 4 replicas end with identical weights"),
        (rx["elements_through_xina"] == rx["steps"] * rx["params"],
         "every gradient element of every step went through the switch"),
    ]
    if not large:
        diff = abs(rx["accuracy"] - rg["accuracy"])
        checks += [
            (diff <= TOLERANCE, f"accuracy xina {rx['accuracy']:.4f} vs "
             f"Gloo {rg['accuracy']:.4f}: difference {diff:.4f}, "
             f"tolerance {TOLERANCE}"),
            (min(rx["accuracy"], rg["accuracy"]) >= MIN_ACCURACY,
             f"both learned: accuracy at least {MIN_ACCURACY}"),
            # one bucket per step (the MLP fits DDP's 25 MB): its blocks
            # and the blocks of their exponents, each of WORKERS
            # contributions
            (rx["buckets_through_xina"] == rx["steps"] and
             st["complete"] == rx["steps"] * (b + -(-b // ELEMS)) and
             st["contrib"] == WORKERS * st["complete"],
             "one bucket a step through the switch, "
             f"{b + -(-b // ELEMS)} slots a step"),
        ]
    else:
        checks.append((st["contrib"] == WORKERS * st["complete"] and
                       st["complete"] >= rx["steps"] * b,
                       f"the switch completed at least {b} slots a step, "
                       "each with every worker's contribution"))
    ok = True
    for good, what in checks:
        print(f"{'PASS' if good else 'FAIL'}: {what}", file=out)
        ok = ok and good
    if a.json:
        print(json.dumps({"model": a.model, "workers": WORKERS,
                          "batch": a.batch, "ok": ok, "xina": rx,
                          "gloo": rg, "switch": st}))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch", type=int, default=None,
                    help="per worker (default 16, large: 8)")
    ap.add_argument("--model", choices=("digits", "large"), default="digits")
    ap.add_argument("--steps", type=int, default=8,
                    help="steps of --model large (first 2 not timed)")
    ap.add_argument("--json", action="store_true",
                    help="the table to stderr, one JSON line to stdout")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--backend", choices=("xina", "gloo"))
    ap.add_argument("--rank", type=int)
    ap.add_argument("--master")
    a = ap.parse_args()
    if a.batch is None:
        a.batch = 8 if a.model == "large" else 16
    if a.model == "large" and a.steps <= LARGE_WARMUP:
        ap.error(f"--steps must be above {LARGE_WARMUP} (the untimed ones)")
    if a.worker:
        worker(a)
        return 0
    return launch(a)


if __name__ == "__main__":
    sys.exit(main())
