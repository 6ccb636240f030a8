"""Brute force for squared and absolute error: every tree over all midpoints (:mod:`support.exact_bruteforce`)
with each leaf's least weighted loss; and an estimator's training loss."""

import numpy as np

from support.exact_bruteforce import brute_force as tree_brute_force


def leaf_loss(y, w, loss):
    """Least weighted loss of one constant on (y, w), by trying every target value as the constant
    (absolute error: a weighted median is one of them) or the weighted mean (squared error)."""
    if y.size == 0 or w.sum() == 0:
        return 0.0
    if loss == "squared":
        mean = (w * y).sum() / w.sum()
        return float((w * (y - mean) ** 2).sum())
    return float(min((w * np.abs(y - c)).sum() for c in y))


def brute_force(X, y, w, max_depth, alpha, min_samples_leaf, allowed_features, loss):
    """Least loss + alpha per split over every tree of depth <= max_depth over all midpoints."""
    w = np.ones(len(y)) if w is None else w

    def leaf(rows):
        idx = sorted(rows)
        return leaf_loss(y[idx], w[idx], loss)

    return tree_brute_force(X, np.zeros(len(y), int), w, max_depth, alpha, min_samples_leaf, allowed_features,
                            leaf=leaf)


def training_loss(est, X, y, w, loss):
    r = y - est.predict(X)
    return float((w * (r**2 if loss == "squared" else np.abs(r))).sum())
