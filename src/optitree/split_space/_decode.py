"""Decoding a tree over ``Z`` into a :class:`greedy.Tree` over the original features."""

from __future__ import annotations

import numpy as np

from greedy import LEAF_FEATURE, OBLIQUE, Tree

#: Decoded threshold of the split "missing vs not": every finite value goes left, NaN right.
#: The largest float64, so ``x <= NOT_MISSING_THRESHOLD`` holds for every finite ``x`` (the exact,
#: finite form of scikit-learn's ``threshold = inf`` with missing values right).
NOT_MISSING_THRESHOLD = float(np.finfo(np.float64).max)


def _check_weights(sample_weight, n: int) -> np.ndarray:
    if sample_weight is None:
        return np.ones(n)
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"sample_weight must be {n} finite non-negative numbers")
    return w


def _numeric_split(col, t: float) -> tuple[bool, float]:
    """``(swap, threshold)`` over the original values for threshold ``t`` on a numeric column."""
    if col.kind == "value":
        return False, float(t)
    if col.kind == "constant":  # every training row on one side: that side, as "every finite value left"
        return bool(t < 0.0), NOT_MISSING_THRESHOLD
    if col.kind == "nan_low":
        if t < col.lo:  # NaN left and every finite value right (or everything right): swap the children
            return True, NOT_MISSING_THRESHOLD
        return False, float(t)
    # nan_high
    if col.hi <= t < col.sentinel:  # every finite value left, NaN right
        return False, NOT_MISSING_THRESHOLD
    return False, float(t)


def _nan_z_value(space, col) -> float:
    """The Z value training rows with NaN in ``col.feature`` get in ``col``."""
    if col.kind in ("nan_low", "nan_high"):
        return col.sentinel
    if col.kind == "subset" and space.has_missing[col.feature]:
        return 0.0 if col.left_levels[-1] else 1.0
    return 0.0


def decode(space, tree: Tree, X_train, sample_weight=None) -> Tree:
    """:meth:`SplitSpace.decode` (``space``: the :class:`~optitree.split_space.SplitSpace`)."""
    if not isinstance(tree, Tree):
        raise TypeError(f"tree must be a greedy.Tree, got {type(tree).__name__}")
    if tree.n_features != space.n_columns:
        raise ValueError(f"tree has {tree.n_features} features, the split space has {space.n_columns} columns")
    internal = ~tree.is_leaf
    if np.any(tree.feature[internal] == OBLIQUE) or tree.categorical_nodes.any() or tree.leaf_coef is not None:
        raise ValueError("only trees of threshold splits on Z with constant leaves can be decoded")
    X = space._check_matrix(X_train)
    Z = space.transform(X)
    w = _check_weights(sample_weight, X.shape[0])
    path = tree.decision_path(Z).tocsc()  # Z has no NaN: one root-to-leaf path per row
    count = np.diff(path.indptr)
    weight = path.T @ w

    n_nodes = tree.node_count
    left, right = tree.children_left.copy(), tree.children_right.copy()
    feature = np.full(n_nodes, LEAF_FEATURE, np.intp)
    threshold = np.full(n_nodes, np.nan)
    missing_left = np.zeros(n_nodes)
    default_left = np.zeros(n_nodes, bool)
    masks: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # node -> (codes seen in training, which go left)
    for i in np.flatnonzero(internal):
        col = space.columns[tree.feature[i]]
        f, t = col.feature, float(tree.threshold[i])
        rows = path.indices[path.indptr[i]:path.indptr[i + 1]]
        categorical = f in space.n_categories
        if categorical:
            codes = space.levels[f]
            swap = t < 0.0  # every training row right: swapped, every row left
            if col.kind == "subset" and 0.0 <= t < 1.0:
                codes_left = col.left_levels[:codes.size]
            else:
                codes_left = np.ones(codes.size, bool)
        else:
            swap, threshold[i] = _numeric_split(col, t)
        if swap:
            left[i], right[i] = right[i], left[i]
        feature[i] = f
        lc, rc = left[i], right[i]
        if np.isnan(X[rows, f]).any():  # the side the tree learned for NaN
            missing_left[i] = float((_nan_z_value(space, col) <= t) != swap)
        else:  # scikit-learn: the child with more training samples (ties right)
            missing_left[i] = float(count[lc] > count[rc])
        if categorical:
            default_left[i] = weight[lc] >= weight[rc]  # greedy CART: the heavier child, ties left
            masks[i] = (codes, codes_left)

    category_left = None
    if masks:
        width = max(space.n_categories[int(feature[i])] for i in masks)
        category_left = np.zeros((n_nodes, width), bool)
        for i, (codes, codes_left) in masks.items():
            category_left[i] = default_left[i]  # codes unseen in training
            category_left[i, codes.astype(np.intp)] = codes_left
    return Tree(
        children_left=left, children_right=right, feature=feature, threshold=threshold, value=tree.value.copy(),
        n_features=space.n_features, task=tree.task, n_node_samples=tree.n_node_samples.copy(),
        weighted_n_node_samples=tree.weighted_n_node_samples.copy(), impurity=tree.impurity.copy(),
        category_left=category_left, default_left=None if category_left is None else default_left,
        missing_left=missing_left, leaf_class=None if tree.leaf_class is None else tree.leaf_class.copy(),
    )
