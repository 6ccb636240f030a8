"""Node statistics of a tree from the paths of its training samples (:meth:`greedy.Tree.fill_statistics`)."""

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
