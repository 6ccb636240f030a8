"""The exact engine on continuous features, side by side with pycontree's ConTree (and a baseline engine).

Per instance (data set, depth): ConTree's time, the engine's time and their ratio; with
``--baseline-python PATH`` also the time of the engine of another interpreter (e.g. a venv
with an earlier commit installed), its objective checked against the engine's, the ratio
engine / baseline, and at the end the median and largest ratio. Every time is the minimum over
``--repeats`` runs; the engine runs in this process (its core is compiled at install time: no
warm-up), the baseline in a worker process of its interpreter, warmed up first when its engine
has ``warm_up`` (numba compilation excluded; :mod:`benchmarks._baseline`). On each instance
ConTree, the engine and the baseline run one after the other, so the ratios are measured under
the same load. Both solvers get rank-transformed features (ConTree casts to float32).
Regression instances (squared or absolute error) have no ConTree column.

Usage::

    python -m benchmarks.engine_scale                      # every instance
    python -m benchmarks.engine_scale --only banknote_like --baseline-python ../venv-ref/bin/python
"""

from __future__ import annotations

import argparse

import numpy as np

from optitree.exact import solve

from ._baseline import Baseline, best_time, same_objective

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


def run_contree(X, y, depth, time_limit):
    import pycontree

    est = pycontree.ConTree(max_depth=depth, time_limit=time_limit).fit(X, y)
    return int((est.predict(X) != y).sum())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="instance names (substring match)")
    ap.add_argument("--baseline-python", metavar="PATH",
                    help="also time the engine of this interpreter's optitree (benchmarks._baseline)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--time-limit", type=float, default=600.0)
    args = ap.parse_args(argv)
    names = [n for n in INSTANCES if not args.only or any(s in n for s in args.only)]
    base = Baseline(args.baseline_python) if args.baseline_python else None
    head = ["instance", "rows x features", "ConTree s", "engine s", "engine / ConTree"]
    if base:
        print(f"baseline: the engine of {args.baseline_python} ({base.origin}); min over {args.repeats} runs",
              flush=True)
        head += ["baseline s", "baseline / ConTree", "engine / baseline", "same objective"]
    print(" | ".join(head), flush=True)
    vs_base = {}
    for name in names:
        data, depth, loss = INSTANCES[name]
        X, y = make(data)
        ct = None
        if loss == "misclassification":
            y = np.unique(y, return_inverse=True)[1]
            ct, errors = best_time(lambda: run_contree(X, y, depth, args.time_limit), args.repeats)
        t, res = best_time(lambda: solve(X, y, max_depth=depth, loss=loss, time_limit=args.time_limit),
                           args.repeats)
        if ct is not None and res.status == "optimal" and abs(res.objective - errors) > 1e-6:
            print(f"  !! {name}: engine objective {res.objective} != ConTree errors {errors}")
        row = [name, f"{X.shape[0]} x {X.shape[1]}", "-" if ct is None else f"{ct:.3f}", f"{t:.3f}",
               "-" if ct is None else f"{t / ct:.2f}"]
        if base:
            b = base.solve(X, y, args.repeats, max_depth=depth, loss=loss, time_limit=args.time_limit)
            vs_base[name] = t / b["time"]
            if res.status != "optimal" or b["status"] != "optimal":
                agree = "stopped"  # a stopped search's objective depends on the time it had
            else:
                agree = "yes" if same_objective(res.objective, b["objective"]) else "NO"
            if agree == "NO":
                print(f"  !! OBJECTIVE MISMATCH {name}: engine {res.objective!r}, baseline {b['objective']!r}")
            row += [f"{b['time']:.3f}", "-" if ct is None else f"{b['time'] / ct:.2f}", f"{t / b['time']:.2f}",
                    agree]
        print(" | ".join(row), flush=True)
    if base:
        base.close()
        worst = max(vs_base, key=vs_base.get)
        print(f"time ratio engine / baseline: median {np.median(list(vs_base.values())):.2f}, "
              f"max {vs_base[worst]:.2f} ({worst}), over {len(vs_base)} instances")


if __name__ == "__main__":
    main()
