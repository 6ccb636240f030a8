"""The engine's nested splits as a ``greedy.Tree`` (:func:`to_tree`), and the root's incumbent and bound over time (:class:`Trace`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from greedy import LEAF_FEATURE, TREE_LEAF, Tree

from ._data import ExactData


def weighted_median(values, weights) -> float:
    """The lower weighted median (the value the kernels predict at an absolute-error leaf)."""
    order = np.argsort(values, kind="stable")
    cum = np.cumsum(weights[order])
    return float(values[order][np.searchsorted(cum, 0.5 * cum[-1])])


def to_tree(data: ExactData, nodes, rows) -> Tree:
    """``greedy.Tree`` of a nested split structure over ``rows``.

    Node values are weighted class counts (classification), weighted means (squared error)
    or, at the leaves, weighted medians (absolute error) of the targets.
    """
    left, right, feature, threshold = [], [], [], []
    stack = [(nodes, -1, False)]
    while stack:
        node, parent, is_left = stack.pop()
        idx = len(left)
        left.append(TREE_LEAF), right.append(TREE_LEAF)
        if parent >= 0:
            (left if is_left else right)[parent] = idx
        if node is None:
            feature.append(LEAF_FEATURE), threshold.append(np.nan)
            continue
        f, r, lo, hi = node
        feature.append(f), threshold.append(float(data.thresholds[f][r]))
        stack.append((hi, idx, False))
        stack.append((lo, idx, True))
    n = len(left)
    if not data.is_regression:
        tree = Tree(left, right, feature, threshold, np.zeros((n, data.n_classes)), n_features=data.n_features)
        return tree.fill_statistics(data.X[rows], data.y[rows], data.weight[rows] * data.scale,
                                    n_classes=data.n_classes)
    tree = Tree(left, right, feature, threshold, np.zeros((n, 1)), n_features=data.n_features, task="regression")
    tree = tree.fill_statistics(data.X[rows], data.targets(rows), data.weight[rows] * data.weight_unit)
    if data.loss == "absolute":  # median leaves
        leaf_of = tree.apply(data.X[rows])
        value = tree.value.copy()
        for leaf in np.unique(leaf_of):
            at = rows[leaf_of == leaf]
            value[leaf, 0] = weighted_median(data.targets(at), data.weight[at])
        tree = Tree.from_dict({**tree.to_dict(), "value": value})
    return tree


@dataclass
class Trace:
    """Incumbent and bound of the root over time (seconds since the start), costs times ``scale``."""

    start: float
    scale: float
    points: list = field(default_factory=list)

    def add(self, incumbent: float, bound: float) -> None:
        self.points.append((time.perf_counter() - self.start, float(incumbent) * self.scale,
                            float(bound) * self.scale))
