"""The engine's nested splits as a ``greedy.Tree`` (:func:`to_tree`), and the root's incumbent and bound over time (:class:`Trace`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from greedy import LEAF_FEATURE, TREE_LEAF, Tree

from ..problem import weighted_median
from ._data import ExactData


def to_tree(data: ExactData, nodes, rows) -> Tree:
    """``greedy.Tree`` of a nested split structure over ``rows`` (sorted kept rows).

    Node values are weighted class counts (classification), weighted means (squared error)
    or, at the leaves, weighted medians (absolute error) of the targets: the statistics of
    ``Tree.fill_statistics`` on ``data.X[rows]`` (``rank[f] <= r`` is ``x[f] <= thresholds[f][r]``).
    """
    left, right, feature, threshold = [], [], [], []

    def add(node) -> int:  # ids in preorder, left subtree first
        idx = len(left)
        left.append(TREE_LEAF), right.append(TREE_LEAF)
        if node is None:
            feature.append(LEAF_FEATURE), threshold.append(np.nan)
        else:
            feature.append(node[0]), threshold.append(float(data.thresholds[node[0]][node[1]]))
            left[idx] = add(node[2])
            right[idx] = add(node[3])
        return idx

    add(nodes)
    X, weight = data.X[rows], data.weight[rows] * data.weight_unit
    task = "regression" if data.is_regression else "classification"
    targets = data.targets(rows) if data.is_regression else data.y[rows]
    tree = Tree.from_splits(left, right, feature, threshold, X, targets, weight, n_features=data.n_features,
                            task=task, n_classes=None if data.is_regression else data.n_classes)
    if data.loss == "absolute":  # median leaves
        at_leaf = tree.apply(X)
        for leaf in np.flatnonzero(tree.is_leaf):
            at = rows[at_leaf == leaf]
            if at.size:
                tree.value[leaf, 0] = weighted_median(data.targets(at), data.weight[at])
    return tree


def from_tree(data: ExactData, tree: Tree):
    """The nested splits of a ``greedy.Tree`` over ``data``'s features, or None when it has other splits.

    A split ``x[f] <= t`` becomes ``rank[f] <= r``, ``r`` the largest rank of a row with
    ``x[f] <= t``: the same partition of ``data``'s rows, which exists unless ``t`` falls inside
    one of ``max_bins``'s bins. Categorical, oblique and linear-leaf trees have no such form
    either (None). Whether the result is a tree of the problem (depth, allowed features, leaf
    sizes) is the search's to check.
    """
    if tree.n_features != data.n_features or any(
            getattr(tree, name, None) is not None for name in ("category_left", "split_coef", "leaf_coef")):
        return None

    def nodes(i):
        if tree.children_left[i] == TREE_LEAF:
            return None
        f, t = int(tree.feature[i]), float(tree.threshold[i])
        if not 0 <= f < data.n_features or not np.isfinite(t):
            raise ValueError
        goes_left = data.X[:, f] <= t
        r = int(data.rank[f, goes_left].max(initial=-1))
        if (data.rank[f, ~goes_left] <= r).any():  # t splits a bin
            raise ValueError
        return f, r, nodes(tree.children_left[i]), nodes(tree.children_right[i])

    try:
        return nodes(0)
    except ValueError:
        return None


@dataclass
class Trace:
    """Incumbent and bound of the root over time (seconds since the start), costs times ``scale``."""

    start: float
    scale: float
    points: list = field(default_factory=list)

    def add(self, incumbent: float, bound: float) -> None:
        self.add_at(time.perf_counter(), incumbent, bound)

    def add_at(self, at: float, incumbent: float, bound: float) -> None:
        """A point at ``time.perf_counter()`` time ``at``."""
        self.points.append((at - self.start, float(incumbent) * self.scale, float(bound) * self.scale))
