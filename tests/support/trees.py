"""Hand-built trees (:class:`greedy.Tree`) and a node-by-node comparison of two trees."""

import numpy as np

from greedy import OBLIQUE, Tree

NAN = np.nan


def stump(threshold=0.5, **extra):
    """x0 <= threshold -> [3, 1], else [0, 4]."""
    return Tree([1, -1, -1], [2, -1, -1], [0, -2, -2], [threshold, np.nan, np.nan],
                [[3, 5], [3, 1], [0, 4]], n_features=2, **extra)


def xor_tree():
    """a <= 0.5 ? (b <= 0.25 ? no : yes) : (b <= 0.75 ? yes : no); 8 samples, 2 per leaf."""
    return Tree(
        [1, 3, 5, -1, -1, -1, -1], [2, 4, 6, -1, -1, -1, -1], [0, 1, 1, -2, -2, -2, -2],
        [0.5, 0.25, 0.75, NAN, NAN, NAN, NAN],
        [[4, 4], [2, 2], [2, 2], [2, 0], [0, 2], [0, 2], [2, 0]], n_features=2,
        n_node_samples=[8, 4, 4, 2, 2, 2, 2], weighted_n_node_samples=[8, 4, 4, 2, 2, 2, 2],
        impurity=[0.5, 0.5, 0.5, 0, 0, 0, 0],
    )


def special_tree(default_left=False):
    """Root: categorical (codes 0, 2 left); node 1: oblique 0.5·a − 1·b <= 0.3; node 2: a <= 0.5 with
    60 % of a NaN sample sent left. Three features a, b, color."""
    category_left = np.zeros((7, 4), bool)
    category_left[0, [0, 2]] = True
    split_coef = np.zeros((7, 3))
    split_coef[1] = [0.5, -1.0, 0.0]
    return Tree(
        [1, 3, 5, -1, -1, -1, -1], [2, 4, 6, -1, -1, -1, -1], [2, OBLIQUE, 0, -2, -2, -2, -2],
        [NAN, 0.3, 0.5, NAN, NAN, NAN, NAN],
        [[30, 30], [20, 5], [10, 25], [18, 1], [2, 4], [9, 3], [1, 22]], n_features=3,
        n_node_samples=[60, 25, 35, 19, 6, 12, 23], impurity=[0.5, 0.32, 0.41, 0.1, 0.44, 0.38, 0.08],
        category_left=category_left, default_left=[default_left] + [False] * 6, split_coef=split_coef,
        missing_left=[0, 0, 0.6, 0, 0, 0, 0],
    )


def linear_leaf_tree():
    """x0 <= 1 ? y = 1.2 + 0.5·x0 : y = −2 − 1.5·x1 (regression)."""
    return Tree(
        [1, -1, -1], [2, -1, -1], [0, -2, -2], [1.0, NAN, NAN], [[0.5], [1.7], [-3.5]], n_features=2,
        task="regression", n_node_samples=[10, 4, 6], impurity=[2.0, 0.1, 0.2],
        leaf_coef=[[0, 0], [0.5, 0], [0, -1.5]], leaf_intercept=[0, 1.2, -2.0],
    )


def walk_compare(a: Tree, b: Tree, rtol=1e-9):
    """Walk two trees from their roots in parallel.

    Nodes must agree in sample count, value and leaf status. Where the splits
    differ, the two splits must be exact ties (same weighted child impurity):
    the subtrees below are then not compared. Returns (nodes matched, ties).
    """
    matched = ties = 0
    stack = [(0, 0)]
    while stack:
        i, j = stack.pop()
        assert a.n_node_samples[i] == b.n_node_samples[j], (i, j)
        np.testing.assert_allclose(a.value[i], b.value[j], rtol=rtol)
        np.testing.assert_allclose(a.impurity[i], b.impurity[j], rtol=1e-7, atol=1e-12)
        assert a.is_leaf[i] == b.is_leaf[j], f"node {i} vs {j}: leaf status differs"
        matched += 1
        if a.is_leaf[i]:
            continue
        if a.feature[i] == b.feature[j] and np.isclose(a.threshold[i], b.threshold[j], rtol=rtol, atol=0):
            stack += [(a.children_left[i], b.children_left[j]), (a.children_right[i], b.children_right[j])]
            continue

        def child_cost(t, k):
            l, r = t.children_left[k], t.children_right[k]
            return t.weighted_n_node_samples[l] * t.impurity[l] + t.weighted_n_node_samples[r] * t.impurity[r]

        assert np.isclose(child_cost(a, i), child_cost(b, j), rtol=rtol, atol=1e-12), f"split differs at {i}"
        ties += 1
    return matched, ties
