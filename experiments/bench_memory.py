"""The memory guard's estimate against the measured peak RSS of real fits (build and solve).

Each fit runs in a fresh process (the MIP alone: ``acceleration="none"``, a short time
limit, since presolve and the root LP set the peak); the peak is ``ru_maxrss`` minus the
RSS after imports and data loading. A large solve runs in a forked child (the hard time
limit, :mod:`optitree.solvers._forked`), whose resident set includes the pages it shares with
the fit's process: the peak is the larger of the two. Prints one row per formulation and size with the
estimate of :func:`optitree._memory.estimate_peak_bytes` (build and solve) and the ratio measured / estimate.

Usage::

    python -m experiments.bench_memory [--time-limit 10]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from .report import markdown_table

CASES = [  # (formulation, n, features, depth)
    ("flow", 500, 10, 2), ("flow", 2000, 10, 2), ("flow", 2000, 10, 3), ("flow", 5000, 10, 3),
    ("oct", 1000, 10, 2), ("oct", 5000, 10, 3), ("oct", 20000, 10, 3),
    ("ort", 1000, 10, 2), ("ort", 5000, 10, 3),
]

_CHILD = r"""
import json, resource, sys, threading
import numpy as np
from optitree import OptimalTreeClassifier, OptimalTreeRegressor
from optitree._memory import estimate_peak_bytes
formulation, n, p, depth, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
rng = np.random.RandomState(0)
X = np.round(rng.rand(n, p), 2)
y = ((X[:, 0] > 0.5) ^ (X[:, 1] > 0.3)).astype(int)
if formulation == "ort":
    est = OptimalTreeRegressor(max_depth=depth, time_limit=limit)
    y = X[:, 0] + rng.rand(n)
else:
    est = OptimalTreeClassifier(max_depth=depth, formulation=formulation, time_limit=limit, acceleration="none",
                                max_thresholds=16 if formulation == "flow" else None)
form = est._formulation(X, y if formulation == "ort" else y, np.ones(n))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
est.fit(X, y)
for thread in threading.enumerate():  # a forked solve's child is reaped in a thread: wait for it
    if thread.name.startswith("reap-"):
        thread.join()
peak = max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) * 1024
print(json.dumps({"size": form.estimate_size(), "estimate": estimate_peak_bytes(*form.estimate_size(), form.solve_memory),
                  "measured": peak - before}))
"""


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--time-limit", type=float, default=10.0)
    args = parser.parse_args(argv)
    rows = []
    for formulation, n, p, depth in CASES:
        out = subprocess.run([sys.executable, "-c", _CHILD, formulation, str(n), str(p), str(depth),
                              str(args.time_limit)], capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append([formulation, n, depth, f"{r['size'][2] / 1e6:.2f} M", f"{r['estimate'] / 2**20:.0f} MiB",
                     f"{r['measured'] / 2**20:.0f} MiB", f"{r['measured'] / r['estimate']:.2f}"])
        print(rows[-1], flush=True)
    print(markdown_table(["formulation", "n", "depth", "non-zeros", "estimate", "measured peak", "ratio"], rows))


if __name__ == "__main__":
    main()
