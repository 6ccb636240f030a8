"""The exact engine on continuous features, side by side with pycontree's ConTree (and a baseline engine).

Per instance (data set, depth): ConTree's time, the engine's time and their ratio; with
``--baseline DIR`` also the time of the engine imported from ``DIR`` (e.g. an export of an
earlier commit: ``git archive <ref> | tar -x -C DIR``) and the ratio after / before. Every time
is the minimum over ``--repeats`` runs; the engines run in warmed-up worker processes (numba
compilation excluded), ConTree in this one; the instances are run one after the other, so the
ratios are measured under the same load. Both solvers get rank-transformed features (ConTree
casts to float32). Regression instances (squared or absolute error) have no ConTree column.

Usage::

    python -m experiments.bench_engine_scale                      # every instance
    python -m experiments.bench_engine_scale --only banknote_like --baseline /tmp/before
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

# name -> (generator, depth, loss)
INSTANCES = {
    "banknote_like d4": ("banknote_like", 4, "misclassification"),
    "banknote_like d3": ("banknote_like", 3, "misclassification"),
    "raisin_like 250 rows d4": ("raisin_like:250", 4, "misclassification"),
    "wilt_like 1500 rows d4": ("wilt_like:1500", 4, "misclassification"),
    "raisin_like d3": ("raisin_like", 3, "misclassification"),
    "wilt_like d3": ("wilt_like", 3, "misclassification"),
    "breast_cancer d3": ("breast_cancer", 3, "misclassification"),
    "wine d4": ("wine", 4, "misclassification"),
    "iris d4": ("iris", 4, "misclassification"),
    "friedman2 d3 (squared)": ("friedman2", 3, "squared"),
    "concrete d3 (squared)": ("concrete", 3, "squared"),
    "friedman2 d3 (absolute)": ("friedman2", 3, "absolute"),
    "concrete d3 (absolute)": ("concrete", 3, "absolute"),
}


def make(name):
    """Features (rank-transformed) and targets of a named set; the ``*_like`` ones are generated (seeded).

    ``name:n`` keeps the set's first ``n`` rows (a size where depth 4 takes seconds).
    """
    name, _, rows = name.partition(":")
    rng = np.random.RandomState(0)
    if name == "banknote_like":  # 1 372 x 4, a curved boundary, 3 % label noise
        X = rng.randn(1372, 4)
        y = (X[:, 0] + 0.6 * X[:, 1] ** 2 - 0.8 * X[:, 2] + 0.3 * X[:, 3] * X[:, 0] > 0.4).astype(int)
        y ^= rng.rand(1372) < 0.03
    elif name == "raisin_like":  # 900 x 7 correlated sizes, two overlapping classes
        base = rng.randn(900, 1)
        cls = rng.rand(900) < 0.5
        X = base + 0.6 * rng.randn(900, 7) + 0.8 * cls[:, None] * rng.rand(1, 7)
        y = cls.astype(int)
    elif name == "wilt_like":  # 4 839 x 5, 5 % positives in a corner
        X = rng.rand(4839, 5)
        y = ((X[:, 0] < 0.25) & (X[:, 1] > 0.7) | (rng.rand(4839) < 0.01)).astype(int)
    else:
        from optitree import datasets

        X, y, _ = datasets.load(name)
    if rows:
        X, y = X[:int(rows)], y[:int(rows)]
    X = np.column_stack([np.unique(X[:, j], return_inverse=True)[1] for j in range(X.shape[1])]).astype(float)
    return X, np.asarray(y)


def best_time(fn, repeats):
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def worker():
    """Answer one JSON request a line: ``{"name", "depth", "loss", "repeats", "time_limit"}``."""
    from optitree.exact import solve, warm_up

    warm_up()
    for line in sys.stdin:
        req = json.loads(line)
        X, y = make(req["name"])
        if req["loss"] == "misclassification":
            y = np.unique(y, return_inverse=True)[1]
        t, res = best_time(lambda: solve(X, y, max_depth=req["depth"], loss=req["loss"],
                                         time_limit=req["time_limit"]), req["repeats"])
        print(json.dumps({"time": t, "objective": res.objective, "status": res.status}), flush=True)


class Engine:
    """A warmed-up worker process importing optitree from ``path`` (None: this checkout)."""

    def __init__(self, path=None):
        env = dict(os.environ)
        root = path or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        script = os.path.abspath(__file__)
        self.proc = subprocess.Popen([sys.executable, script, "--worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env, cwd=root)

    def run(self, **req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def run_contree(X, y, depth, time_limit):
    import pycontree

    est = pycontree.ConTree(max_depth=depth, time_limit=time_limit).fit(X, y)
    return int((est.predict(X) != y).sum())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="instance names (substring match)")
    ap.add_argument("--baseline", help="directory holding another optitree to time beside this one")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--time-limit", type=float, default=600.0)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker()
    names = [n for n in INSTANCES if not args.only or any(s in n for s in args.only)]
    now = Engine()
    before = Engine(args.baseline) if args.baseline else None
    head = ["instance", "rows x features", "ConTree s", "engine s", "engine / ConTree"]
    if before:
        head += ["baseline s", "baseline / ConTree", "engine / baseline"]
    print(" | ".join(head), flush=True)
    for name in names:
        data, depth, loss = INSTANCES[name]
        X, y = make(data)
        req = dict(name=data, depth=depth, loss=loss, repeats=args.repeats, time_limit=args.time_limit)
        ct = None
        if loss == "misclassification":
            yc = np.unique(y, return_inverse=True)[1]
            ct, errors = best_time(lambda: run_contree(X, yc, depth, args.time_limit), args.repeats)
        b = before.run(**req) if before else None
        e = now.run(**req)
        if ct is not None and e["status"] == "optimal" and abs(e["objective"] - errors) > 1e-6:
            print(f"  !! {name}: engine objective {e['objective']} != ConTree errors {errors}")
        row = [name, f"{X.shape[0]} x {X.shape[1]}", "-" if ct is None else f"{ct:.3f}", f"{e['time']:.3f}",
               "-" if ct is None else f"{e['time'] / ct:.2f}"]
        if b:
            row += [f"{b['time']:.3f}", "-" if ct is None else f"{b['time'] / ct:.2f}", f"{e['time'] / b['time']:.2f}"]
        print(" | ".join(row), flush=True)
    now.close()
    if before:
        before.close()


if __name__ == "__main__":
    main()
