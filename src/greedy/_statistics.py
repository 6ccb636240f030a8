"""The paths of a tree's training samples and its node statistics from them (:meth:`greedy.Tree.fill_statistics`)."""

from __future__ import annotations

import numpy as np


def node_statistics(rows, nodes, y, sample_weight, n_nodes: int, n_classes: int | None):
    """Node statistics of :meth:`Tree.fill_statistics` from the (sample, node) pairs of the samples' paths.

    ``rows[k]`` passes through node ``nodes[k]``; each node's samples must come in increasing
    order (:meth:`Tree._path_pairs`), so that every sum adds its terms in sample order.
    ``n_classes`` is None for regression (``y`` the targets). Returns ``(value, n_node_samples,
    weighted_n_node_samples, impurity)``: weighted class counts and Gini index, or weighted
    means and variance.
    """
    sw, n = sample_weight, n_nodes
    counts = np.bincount(nodes, minlength=n)
    wsum = np.bincount(nodes, weights=sw[rows], minlength=n)
    if n_classes is not None:
        k = n_classes
        codes = y[rows].astype(np.intp)
        if codes.size and 0 <= codes.min() and codes.max() < k:
            # per (node, class) the weights summed in sample order, as np.add.at does
            value = np.bincount(nodes * k + codes, weights=sw[rows], minlength=n * k).reshape(n, k)
        else:  # codes out of range: np.add.at's own behaviour and errors
            value = np.zeros((n, k))
            np.add.at(value, (nodes, codes), sw[rows])
        p = value / np.maximum(value.sum(1, keepdims=True), 1e-300)
        impurity = 1.0 - (p**2).sum(1)
    else:
        s1 = np.bincount(nodes, weights=sw[rows] * y[rows], minlength=n)
        s2 = np.bincount(nodes, weights=sw[rows] * y[rows] ** 2, minlength=n)
        mean = np.divide(s1, wsum, out=np.zeros(n), where=wsum > 0)
        impurity = np.divide(s2, wsum, out=np.zeros(n), where=wsum > 0) - mean**2
        value = mean[:, None]
    return value, counts, wsum, np.maximum(impurity, 0)


NAN_WITHOUT_ROUTING = ("X contains NaN in a feature used by the tree, and the tree was built without "
                       "missing-value support")


def path_pairs(X, children_left, children_right, feature, threshold, has_nan: bool = True):
    """``(rows, nodes)`` of the samples' root-to-leaf paths through axis-aligned splits ``x[f] <= t``.

    Every (sample, node on its path) pair, each node's samples in increasing order: the samples
    are routed level by level, each level's pairs in sample order. ``has_nan=False`` says ``X``
    has no NaN (no check per level); a NaN reaching a split raises ``ValueError``.
    """
    rows = np.arange(X.shape[0])
    nodes = np.zeros(X.shape[0], np.intp)
    parts_rows, parts_nodes = [rows], [nodes]
    is_split = children_left >= 0  # -1 marks a leaf
    while rows.size:
        split = is_split[nodes]
        rows, nodes = rows[split], nodes[split]
        if not rows.size:
            break
        v = X[rows, feature[nodes]]
        if has_nan and np.isnan(v).any():
            raise ValueError(NAN_WITHOUT_ROUTING)
        nodes = np.where(v <= threshold[nodes], children_left[nodes], children_right[nodes])
        parts_rows.append(rows), parts_nodes.append(nodes)
    return np.concatenate(parts_rows), np.concatenate(parts_nodes)
