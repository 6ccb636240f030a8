"""The memory guard's estimate against the measured peak RSS of real fits (build and solve).

Each fit runs in a fresh process (the MIP alone: ``acceleration="none"``, a short time
limit, since presolve and the root LP set the peak); the peak is the largest sum, sampled every
5 ms, of the process's RSS and the private pages of a forked HiGHS child (the hard time limit,
:mod:`optitree._forked`; its shared pages are the parent's), above the RSS before the
fit (after imports, data and a small fit that loads what is imported lazily). Linux only (/proc). Prints one row per formulation and size with the
estimate of :func:`optitree.model._memory.estimate_peak_bytes` (build and solve) and the ratio measured / estimate.

Usage::

    python -m benchmarks.memory [--time-limit 10]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from experiments.report import markdown_table

CASES = [  # (formulation, n, features, depth)
    ("flow", 500, 10, 2), ("flow", 2000, 10, 2), ("flow", 2000, 10, 3), ("flow", 5000, 10, 3),
    ("oct", 1000, 10, 2), ("oct", 5000, 10, 3), ("oct", 20000, 10, 3),
    ("ort", 1000, 10, 2), ("ort", 5000, 10, 3),
]

_CHILD = r"""
import json, os, sys, threading, time
import numpy as np
from optitree import OptimalTreeClassifier, OptimalTreeRegressor
from optitree.model._memory import estimate_peak_bytes, solve_profile
from optitree.problem import Problem

def kib(path, keys):
    try:
        with open(path) as f:
            return sum(int(line.split()[1]) * 1024 for line in f if line.startswith(keys))
    except OSError:
        return 0

def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []

formulation, n, p, depth, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
rng = np.random.RandomState(0)
X = np.round(rng.rand(n, p), 2)
y = ((X[:, 0] > 0.5) ^ (X[:, 1] > 0.3)).astype(int)
if formulation == "ort":
    est = OptimalTreeRegressor(max_depth=depth, time_limit=limit, acceleration="none")
    y = X[:, 0] + rng.rand(n)
else:
    est = OptimalTreeClassifier(max_depth=depth, formulation=formulation, time_limit=limit, acceleration="none",
                                max_thresholds=16 if formulation == "flow" else None)
OptimalTreeClassifier(max_depth=1, formulation="flow" if formulation == "flow" else "oct", acceleration="none",
                      time_limit=5).fit(X[:30], (X[:30, 0] > 0.5).astype(int))  # lazy imports done before
form = est._formulation(Problem.of(X, y, loss=est._problem_loss, depth=depth))
size, estimate = form.estimate_size(), estimate_peak_bytes(*form.estimate_size(), solve_profile(form))
del form
me = os.getpid()
base = kib(f"/proc/{me}/status", ("VmRSS:",))
peak, stop = [0], threading.Event()

def sample():  # this process's RSS plus a forked solve's private pages (its shared ones are counted here)
    while not stop.is_set():
        total = kib(f"/proc/{me}/status", ("VmRSS:",)) + sum(
            kib(f"/proc/{c}/smaps_rollup", ("Private_Clean:", "Private_Dirty:")) for c in children(me))
        peak[0] = max(peak[0], total)
        time.sleep(0.005)

thread = threading.Thread(target=sample, daemon=True)
thread.start()
est.fit(X, y)
stop.set()
thread.join()
print(json.dumps({"size": size, "estimate": estimate, "measured": peak[0] - base}))
"""


def measure(formulation: str, n: int, p: int, depth: int, time_limit: float = 10.0) -> dict:
    """One fit in a fresh process: ``{"size": (rows, cols, nnz), "estimate": bytes, "measured": bytes}``."""
    out = subprocess.run([sys.executable, "-c", _CHILD, formulation, str(n), str(p), str(depth), str(time_limit)],
                         capture_output=True, text=True, timeout=300 + 10 * time_limit)
    if out.returncode != 0:
        raise RuntimeError(f"the measured fit failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--time-limit", type=float, default=10.0)
    args = parser.parse_args(argv)
    rows = []
    for formulation, n, p, depth in CASES:
        r = measure(formulation, n, p, depth, args.time_limit)
        rows.append([formulation, n, depth, f"{r['size'][2] / 1e6:.2f} M", f"{r['estimate'] / 2**20:.0f} MiB",
                     f"{r['measured'] / 2**20:.0f} MiB", f"{r['measured'] / r['estimate']:.2f}"])
        print(rows[-1], flush=True)
    print(markdown_table(["formulation", "n", "depth", "non-zeros", "estimate", "measured peak", "ratio"], rows))


if __name__ == "__main__":
    main()
