"""Benchmark of the exact engine (``optitree.exact.solve``) against pycontree's ConTree, side by side.

Per data set and depth: ConTree's training errors and time, the engine's objective, status
and time, and the time ratio engine / ConTree; then the median ratio per depth and the peak
resident memory of the engine on breast_cancer at depth 3 (fresh subprocess).

Both solvers get the same rank-transformed features (dense ranks per column): ConTree casts
features to float32, which would merge close values; ranks keep every distinct value and do
not change any optimum. Numba compilation is excluded: the engine is called once on a small
set before timing (its kernels are also cached on disk after the first run). Each time is the
minimum over ``--repeats`` runs.

Usage::

    python -m experiments.bench_exact              # all sets, depths 2 and 3
    python -m experiments.bench_exact --quick      # iris, wine, monks1, xor; depth 2 and 3
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import numpy as np

from optitree import datasets
from optitree.exact import solve, warm_up  # warm_up: every kernel compiled before any timing

from .report import markdown_table

# name -> (loader name, parameters): the regenerated sets at sizes where depth 3 is not trivial
SETS = {
    "iris": ("iris", {}),
    "wine": ("wine", {}),
    "breast_cancer": ("breast_cancer", {}),
    "digits": ("digits", {}),
    "monks1": ("monks1", {}),
    "monks2": ("monks2", {}),
    "monks3": ("monks3", {}),
    "balance_scale": ("balance_scale", {}),
    "tic_tac_toe": ("tic_tac_toe", {}),
    "car": ("car", {}),
    "xor": ("xor", {}),
    "xor_noisy": ("xor", {"n": 1000, "noise": 0.1, "n_irrelevant": 3}),
    "parity": ("parity", {"k": 3, "n_irrelevant": 5}),
}
QUICK = ("iris", "wine", "monks1", "xor")


def load(name):
    loader, params = SETS[name]
    X, y, _ = datasets.load(loader, **params)
    return rank_transform(X), np.unique(y, return_inverse=True)[1]


def rank_transform(X):
    return np.column_stack([np.unique(X[:, j], return_inverse=True)[1] for j in range(X.shape[1])]).astype(float)


def best_time(fn, repeats):
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def run_contree(X, y, depth, time_limit):
    import pycontree

    est = pycontree.ConTree(max_depth=depth, time_limit=time_limit).fit(X, y)
    return int((est.predict(X) != y).sum())



def peak_rss_breast_cancer_depth3():
    """Peak RSS (MiB) of a fresh process solving breast_cancer at depth 3, and its growth over the warm-up."""
    code = (
        "import resource, json, numpy as np\n"
        "from experiments.bench_exact import load, warm_up\n"
        "from optitree.exact import solve\n"
        "X, y = load('breast_cancer'); warm_up()\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "solve(X, y, max_depth=3)\n"
        "after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print(json.dumps([before / 1024, after / 1024]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--depths", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=600.0)
    parser.add_argument("--no-memory", action="store_true")
    args = parser.parse_args(argv)
    names = QUICK if args.quick else tuple(SETS)
    warm_up()
    rows, ratios = [], {d: [] for d in args.depths}
    for name in names:
        X, y = load(name)
        for depth in args.depths:
            repeats = args.repeats if depth == 2 else 1
            t_ct, errors = best_time(lambda: run_contree(X, y, depth, args.time_limit), repeats)
            t_ex, res = best_time(lambda: solve(X, y, max_depth=depth, time_limit=args.time_limit), repeats)
            ratio = t_ex / max(t_ct, 1e-9)
            ratios[depth].append(ratio)
            same = "yes" if res.status == "optimal" and res.objective == errors else "NO"
            rows.append([name, f"{X.shape[0]}×{X.shape[1]}", len(np.unique(y)), depth, errors, f"{t_ct:.3f}",
                         f"{res.objective:g}", res.status, f"{t_ex:.3f}", f"{ratio:.2f}", same])
            print(f"{name} depth {depth}: ConTree {errors} in {t_ct:.3f} s, engine {res.objective:g} "
                  f"({res.status}) in {t_ex:.3f} s", file=sys.stderr, flush=True)
    print("Engine times exclude numba compilation (one warm-up call before timing); features rank-transformed "
          f"for both solvers; min over {args.repeats} runs at depth 2, one run at depth 3.\n")
    print(markdown_table(["dataset", "n×p", "K", "depth", "ConTree errors", "ConTree s", "engine objective",
                          "engine status", "engine s", "ratio", "equal"], rows))
    print()
    for depth, r in ratios.items():
        print(f"median time ratio engine / ConTree at depth {depth}: {np.median(r):.2f} (over {len(r)} sets)")
    if not args.no_memory and not args.quick:
        before, after = peak_rss_breast_cancer_depth3()
        print(f"peak RSS, breast_cancer depth 3 (fresh process): {after:.0f} MiB "
              f"(after imports and warm-up: {before:.0f} MiB, growth {after - before:.0f} MiB)")


if __name__ == "__main__":
    main()
