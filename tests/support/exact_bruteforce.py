"""Independent brute force over all trees on tiny random sets (the exact engine's oracle), and its instances.

Every tree of depth <= max_depth with splits at midpoints of the data's distinct values, under the
engine's options (alpha per split, minimum leaf size, allowed features per heap node).
"""

import functools

import numpy as np

from greedy import midpoint_threshold


def random_instance(seed, max_rows=16, depth=None, min_leaf=None):
    """Tiny set with ties, duplicate rows, weights (some zero), 2-4 classes, random options."""
    rng = np.random.RandomState(seed)
    n, p, k = rng.randint(4, max_rows + 1), rng.randint(1, 4), rng.randint(2, 5)
    X = rng.randint(0, rng.randint(2, 13), size=(n, p)).astype(float) * rng.choice([1.0, 0.3, -2.5])
    if rng.rand() < 0.3:
        X[-2:] = X[:2]  # duplicate rows
    y = rng.randint(0, k, n)
    w = None
    if rng.rand() < 0.6:
        w = rng.choice([0.0, 0.5, 1.0, 2.0, 3.0], size=n, p=[0.1, 0.2, 0.4, 0.2, 0.1])
        w[rng.randint(n)] = 1.0
    depth = rng.randint(1, 4) if depth is None else depth
    alpha = float(rng.choice([0.0, 0.0, 0.5, 1.0, 2.5]))
    min_leaf = int(rng.choice([1, 1, 2, 3])) if min_leaf is None else min_leaf
    allowed = None
    if p > 1 and rng.rand() < 0.4:
        rows = rng.choice([None, depth, 2**depth - 1])  # everywhere, per level, per node
        allowed = rng.rand(p) < 0.7 if rows is None else rng.rand(rows, p) < 0.7
    return X, y, w, dict(max_depth=depth, alpha=alpha, min_samples_leaf=min_leaf, allowed_features=allowed)


def tree_enumeration(X, y, w, max_depth, min_samples_leaf, allowed_features):
    """The two halves of every brute force here: ``leaf(rows)``, the cost of a leaf on a row set,
    and ``splits(rows, node)``, every feasible ``(feature, left rows, right rows)`` of a row set at
    heap node ``node`` (splits at midpoints of the data's distinct values)."""
    n, p = X.shape
    w = np.ones(n) if w is None else w
    positive = w > 0
    allowed = node_masks(allowed_features, max_depth, p)
    candidates = [(f, t) for f in range(p)
                  for t in midpoint_threshold(np.unique(X[:, f])[:-1], np.unique(X[:, f])[1:])]
    k = y.max() + 1

    def leaf(rows):
        counts = np.bincount(y[list(rows)], weights=w[list(rows)], minlength=k)
        return counts.sum() - counts.max()

    def splits(rows, node):
        for f, t in candidates:
            if not allowed[node - 1, f]:
                continue
            left = frozenset(i for i in rows if X[i, f] <= t)
            right = rows - left
            if min(positive[list(left)].sum(), positive[list(right)].sum()) >= min_samples_leaf:
                yield f, left, right

    return leaf, splits


def brute_force(X, y, w, max_depth, alpha, min_samples_leaf, allowed_features, leaf=None):
    """Least cost over every tree of depth <= max_depth (``leaf(rows)``: a leaf's cost; default misclassified weight)."""
    misclassified, splits = tree_enumeration(X, y, w, max_depth, min_samples_leaf, allowed_features)
    leaf = misclassified if leaf is None else leaf

    @functools.lru_cache(maxsize=None)
    def best(rows, depth, node):
        cost = leaf(rows)
        if depth == 0:
            return cost
        for _, left, right in splits(rows, node):
            cost = min(cost, alpha + best(left, depth - 1, 2 * node) + best(right, depth - 1, 2 * node + 1))
        return cost

    return best(frozenset(range(len(y))), max_depth, 1)


def node_masks(allowed, depth, p):
    """Allowed features per heap node (row h - 1 for node h) from any accepted shape."""
    if allowed is None:
        return np.ones((2**depth - 1, p), bool)
    if allowed.ndim == 1:
        return np.tile(allowed, (2**depth - 1, 1))
    if allowed.shape[0] == 2**depth - 1:
        return allowed
    return np.array([allowed[int(np.log2(h))] for h in range(1, 2**depth)])


def subtree_masks(masks, child):
    """Rows of the sub-tree rooted at heap node ``child`` (2 or 3), re-indexed from 1."""
    depth = int(np.log2(masks.shape[0] + 1))
    rows = [child * 2**k + j for k in range(depth - 1) for j in range(2**k)]
    return masks[np.array(rows, int) - 1]


def tree_cost(tree, X, y, w, alpha):
    """Objective recomputed from the tree: weighted errors of the majority leaf labels + alpha per split."""
    w = np.ones(len(y)) if w is None else w
    pred = tree.predict(X).argmax(1)  # class index = label here (labels are 0..K-1 codes present in y)
    return float(w[pred != y].sum()) + alpha * tree.n_splits


def check_tree(tree, X, y, w, opts):
    """Depth, minimum leaf rows (positive weight) and allowed features of every split."""
    assert tree.max_depth <= opts["max_depth"]
    w = np.ones(len(y)) if w is None else w
    leaves = tree.apply(X)
    for leaf in np.unique(leaves[w > 0]):
        if tree.node_count > 1:
            assert np.sum((leaves == leaf) & (w > 0)) >= opts["min_samples_leaf"]
    allowed = node_masks(opts["allowed_features"], opts["max_depth"], X.shape[1])
    heap = {0: 1}
    for node in np.flatnonzero(~tree.is_leaf):  # parents before children
        assert allowed[heap[node] - 1, tree.feature[node]]
        heap[tree.children_left[node]], heap[tree.children_right[node]] = 2 * heap[node], 2 * heap[node] + 1


def relabel(y):
    """Codes 0..K-1 so that tree columns are labels (solve's classes are the sorted labels of y)."""
    return np.unique(y, return_inverse=True)[1]


def children_optima(X, y, w, opts, feature, threshold, optimum=None):
    """Optima of both children of the split ``x[feature] <= threshold`` under ``opts`` (by ``optimum``,
    default :func:`brute_force`; depth 0: a leaf)."""
    optimum = brute_force if optimum is None else optimum
    left = X[:, feature] <= threshold
    masks = node_masks(opts["allowed_features"], opts["max_depth"], X.shape[1])
    depth = opts["max_depth"] - 1
    return [optimum(X[side], y[side], None if w is None else w[side],
                    **dict(opts, max_depth=depth, allowed_features=subtree_masks(masks, child) if depth else None))
            for child, side in ((2, left), (3, ~left))]


def one_hot(X):
    """An indicator column ``x_j == v`` for every value ``v`` of every column ``j``."""
    return np.column_stack([(X[:, j] == v).astype(float) for j in range(X.shape[1]) for v in np.unique(X[:, j])])
