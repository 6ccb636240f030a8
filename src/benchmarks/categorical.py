"""Categorical features as categoricals vs one-hot: the exact engine's proof and time, side by side.

Issue 23: an optimal tree over category subsets (``optitree.split_space``: every subset up to
``max_category_subsets`` levels, one-vs-rest + prefixes + CART's above) against the same estimator
on the one-hot encoding (one-vs-rest splits only), both with the default ``OptimalTreeClassifier``
(the exact engine, one thread). Subsets contain one-vs-rest, so the categorical optimum is never
worse; the table shows what it costs.

    python -m benchmarks.categorical [--depths 2 3] [--time-limit 300] [--repeats 5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from optitree import OptimalTreeClassifier

from experiments import datasets as _datasets

DATASETS = ("balance_scale", "tic_tac_toe", "monks1", "monks2", "monks3", "car", "lenses")


def fit(X, y, depth, time_limit, repeats):
    """Training errors, proven or not, and the median time of ``repeats`` fits (the first fit included)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        clf = OptimalTreeClassifier(max_depth=depth, time_limit=time_limit, random_state=0).fit(X, y)
        times.append(time.perf_counter() - t0)
    return int((clf.predict(X) != y).sum()), clf.result_.proven_optimal, float(np.median(times))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--time-limit", type=float, default=300.0)
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--repeats", type=int, default=5, help="fits per cell; the median time is shown")
    args = parser.parse_args(argv)
    print(f"{'dataset':14s} {'d':>2s} {'levels':>7s} | {'categorical: errors proven time':>32s} | "
          f"{'one-hot: errors proven time':>28s} | ratio")
    ratios = []
    for name in args.datasets:
        X, y, info = _datasets.load_dataset(name, {})
        frame = _datasets.to_frame(X, info)
        onehot = pd.get_dummies(frame, dtype=float)
        levels = max((len(frame[c].cat.categories) for c in frame.columns
                      if isinstance(frame[c].dtype, pd.CategoricalDtype)), default=0)
        for depth in args.depths:
            cat = fit(frame, y, depth, args.time_limit, args.repeats)
            hot = fit(onehot, y, depth, args.time_limit, args.repeats)
            ratio = cat[2] / max(hot[2], 1e-9)
            if cat[1] and hot[1]:
                ratios.append(ratio)
            print(f"{name:14s} {depth:2d} {levels:7d} | {cat[0]:8d} {str(cat[1]):>7s} {cat[2] * 1e3:8.1f} ms     | "
                  f"{hot[0]:8d} {str(hot[1]):>7s} {hot[2] * 1e3:8.1f} ms | {ratio:5.2f}x", flush=True)
    if ratios:
        print(f"median time ratio categorical / one-hot where both proved: {np.median(ratios):.2f}x")


if __name__ == "__main__":
    main()
