"""Brute force over every tree of depth <= 2 with midpoint thresholds (numpy only), on tiny random data sets.

Independent of optitree: fewest training errors (classification) and least absolute or squared loss (regression).
"""

import numpy as np


def brute_force_errors(X, y, depth):
    """Fewest training errors of any tree of depth <= ``depth`` (1 or 2), unit weights."""
    onehot = np.eye(y.max() + 1)[y]  # (n, K)
    goes_left = [X[:, j] <= t for j in range(X.shape[1])
                 for t in (lambda v: (v[:-1] + v[1:]) / 2)(np.unique(X[:, j]))]
    S = np.array(goes_left + [np.ones(len(y), bool)])  # (M, n); last row: "no split"
    sides = np.stack([S, ~S]).astype(float)  # (2, M, n)

    def leaf_errors(counts):  # counts (..., K)
        return counts.sum(-1) - counts.max(-1)

    if depth == 1:
        counts = np.einsum("smn,nk->smk", sides, onehot)  # (2, M, K)
        return int(leaf_errors(counts).sum(0).min())
    # depth 2: root split r, child splits c (one per side); errors of side s below root r
    counts = np.einsum("srn,tcn,nk->srtck", sides, sides, onehot)  # (2, M, 2, M, K)
    below = leaf_errors(counts).sum(axis=2).min(axis=-1)  # (2, M): best child split per root side
    return int(below.sum(0).min())


def random_dataset(seed, max_samples=14):
    rng = np.random.RandomState(seed)
    n = rng.randint(5, max_samples + 1)
    f = rng.randint(2, 4)
    k = rng.randint(2, 4)
    X = np.round(rng.rand(n, f) * 10) / 2  # a few ties on purpose
    y = rng.randint(0, k, n)
    y[:k] = np.arange(k)  # every class present
    return X, y


def leaf_cost(y, loss):
    """Least loss of one constant on ``y``: about the median (absolute) or the mean (squared)."""
    if y.size == 0:
        return 0.0
    return float(np.abs(y - np.median(y)).sum()) if loss == "absolute" else float(((y - y.mean()) ** 2).sum())


def best_regression_loss(X, y, idx, depth, loss="absolute"):
    """Least absolute or squared loss of a tree of depth <= ``depth`` on rows ``idx`` (every midpoint threshold)."""
    best = leaf_cost(y[idx], loss)
    if depth == 0:
        return best
    for f in range(X.shape[1]):
        v = np.unique(X[idx, f])
        for t in (v[:-1] + v[1:]) / 2:
            left = X[idx, f] <= t
            best = min(best, best_regression_loss(X, y, idx[left], depth - 1, loss)
                       + best_regression_loss(X, y, idx[~left], depth - 1, loss))
    return best
    for f in range(X.shape[1]):
        v = np.unique(X[idx, f])
        for t in (v[:-1] + v[1:]) / 2:
            left = X[idx, f] <= t
            best = min(best, best_absolute_loss(X, y, idx[left], depth - 1)
                       + best_absolute_loss(X, y, idx[~left], depth - 1))
    return best
