"""A tree over the original features as a tree over ``Z``: how a start (e.g. CART's) enters the space."""

from __future__ import annotations

import numpy as np

from greedy import OBLIQUE, Tree

__all__ = ["encode"]


def _missing_goes_left(tree: Tree, node: int) -> bool:
    """The side NaN takes at ``node``: CART's larger fraction (ties left); left without routing."""
    return tree.missing_left is None or tree.missing_left[node] >= 0.5


def encode(space, tree: Tree) -> Tree | None:
    """``tree`` (over the ``p`` original features) as a tree of threshold splits on the columns of ``Z``.

    A numeric split keeps its threshold on the feature's column (``nan_low`` when NaN goes left,
    ``nan_high`` when it goes right, for a feature with NaN in training: a fractional routing
    takes its larger side). A categorical split ``codes in S`` becomes the subset column of the
    same partition (children swapped when the column's left side is the complement), threshold
    0.5; NaN joins the side routing sends it to. Returns None when a split has no column in the
    space (an oblique split, a linear leaf, a partition outside a reduced rule): the caller then
    has no start in the space.
    """
    if tree.n_features != space.n_features or tree.leaf_coef is not None:
        return None
    internal = np.flatnonzero(~tree.is_leaf)
    if np.any(tree.feature[internal] == OBLIQUE):
        return None
    left, right = tree.children_left.copy(), tree.children_right.copy()
    feature, threshold = tree.feature.copy(), tree.threshold.copy()
    categorical_nodes = tree.categorical_nodes
    by_feature: dict[int, list[int]] = {}
    for j, col in enumerate(space.columns):
        by_feature.setdefault(col.feature, []).append(j)
    for i in internal:
        f = int(tree.feature[i])
        columns = [space.columns[j] for j in by_feature[f]]
        nan_left = _missing_goes_left(tree, i)
        if f in space.n_categories:
            if not categorical_nodes[i]:
                return None  # a threshold on category codes: not a split of the space
            codes = space.levels[f].astype(np.intp)
            width = tree.category_left.shape[1]
            side = np.array([c < width and tree.category_left[i, c] for c in codes], bool)
            if space.has_missing[f]:
                side = np.r_[side, nan_left]
            match = [(j, False) for j, c in zip(by_feature[f], columns)
                     if c.kind == "subset" and np.array_equal(c.left_levels, side)]
            match += [(j, True) for j, c in zip(by_feature[f], columns)
                      if c.kind == "subset" and np.array_equal(c.left_levels, ~side)]
            if not match:
                return None
            feature[i], swap = match[0]
            threshold[i] = 0.5
            if swap:
                left[i], right[i] = right[i], left[i]
            continue
        kinds = {c.kind: j for j, c in zip(by_feature[f], columns)}
        kind = "value" if "value" in kinds else ("nan_low" if nan_left else "nan_high")
        if kind not in kinds:
            return None  # a constant feature with NaN: its only split is "missing vs not"
        feature[i] = kinds[kind]
    return Tree(children_left=left, children_right=right, feature=feature, threshold=threshold,
                value=tree.value.copy(), n_features=space.n_columns, task=tree.task,
                n_node_samples=tree.n_node_samples.copy(), weighted_n_node_samples=tree.weighted_n_node_samples.copy(),
                impurity=tree.impurity.copy(), leaf_class=None if tree.leaf_class is None else tree.leaf_class.copy())
