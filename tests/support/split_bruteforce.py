"""Brute force over the raw split space (categorical subsets, thresholds with NaN either side).

Shared by the split-space and the estimator tests; written against the raw data, independently of
:mod:`optitree.split_space`.
"""

import itertools

import numpy as np


def raw_splits(X, categorical):
    """Every split over the raw data, as a bool matrix (splits, rows) of the rows going left.

    Categorical: every subset of the levels seen (codes and, with NaN, the missing level).
    Numeric: every midpoint of the finite values and "all finite", with NaN left and right.
    """
    splits = []
    for f in range(X.shape[1]):
        x = X[:, f]
        nan = np.isnan(x)
        if f in categorical:
            levels = [c for c in np.unique(x[~nan])]
            labels = np.where(nan, -1.0, x)
            if nan.any():
                levels.append(-1.0)
            for r in range(1, len(levels)):
                for subset in itertools.combinations(levels, r):
                    splits.append(np.isin(labels, subset))
        else:
            values = np.unique(x[~nan])
            cuts = [(values[k] + values[k + 1]) / 2 for k in range(values.size - 1)] + [np.inf]
            for t in cuts:
                finite_left = np.where(nan, False, x <= t)
                splits.append(finite_left | nan)
                splits.append(finite_left)
    return np.array(splits, bool).reshape(-1, X.shape[0])


def _misclassification(stats):
    return stats.sum(-1) - stats.max(-1)


def _squared(stats):
    w, wy, wy2 = stats[..., 0], stats[..., 1], stats[..., 2]
    return np.maximum(wy2 - np.divide(wy * wy, w, out=np.zeros_like(w), where=w > 0), 0.0)


def brute_force(X, y, w, categorical, depth, task="classification"):
    """Least weighted loss (misclassification, or squared error) of a tree of depth <= 2 over the raw splits."""
    if task == "classification":
        stats = np.zeros((y.size, int(y.max()) + 1))
        stats[np.arange(y.size), y.astype(int)] = w
        cost = _misclassification
    else:
        stats = np.column_stack([w, w * y, w * y * y])
        cost = _squared
    S = raw_splits(X, categorical).astype(float)

    def depth1(mask):
        total = mask @ stats
        left = (S * mask) @ stats
        return min(cost(total), (cost(left) + cost(total - left)).min(initial=np.inf))

    everything = np.ones(y.size)
    best = depth1(everything)
    if depth == 2:
        for s in S:
            best = min(best, depth1(s) + depth1(1.0 - s))
    return best
