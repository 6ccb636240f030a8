"""No false proof: OCT-H and ORT-L optima claimed by the MIP against brute force on tiny data.

* OCT-H, 2-D points in general position: every split of a point set by a line is made by a
  line through two of its points, the two assigned to either side (a small rotation about
  their midpoint sends them apart, a small shift keeps them together), so enumerating the
  pairs and the four assignments lists every hyperplane split; a depth-2 tree is a root split
  and the best depth-1 tree on each side.
* ORT-L, constant-free least-squares leaves: every split of every feature at every midpoint,
  each leaf fitted by least squares (the budget chosen wide enough that every fit is inside
  it, checked).

The claimed optimum may never be worse than the enumeration's (a false proof) nor better (a
miscount).
"""

import itertools

import numpy as np
import pytest
from support.exact_bruteforce import brute_force as tree_brute_force

from optitree import OptimalTreeClassifier, OptimalTreeRegressor


def general_position(n, seed, spread=0.02):
    """``n`` points in the unit square, each at least ``spread`` from every line through two others."""
    rng = np.random.default_rng(seed)
    while True:
        X = rng.uniform(0, 1, (n, 2))
        ok = True
        for i, j in itertools.combinations(range(n), 2):
            d = X[j] - X[i]
            normal = np.array([-d[1], d[0]]) / np.hypot(*d)
            dist = np.abs((X - X[i]) @ normal)
            dist[[i, j]] = np.inf
            if dist.min() < spread:
                ok = False
                break
        if ok:
            return X


def errors(y):
    return y.size - np.bincount(y).max() if y.size else 0


def line_splits(X, rows):
    """Every split (left mask over ``rows``) of the points ``rows`` by a line, both sides non-empty."""
    P = X[rows]
    seen = set()
    for i, j in itertools.combinations(range(rows.size), 2):
        d = P[j] - P[i]
        side = (P - P[i]) @ np.array([-d[1], d[0]]) > 0
        for si, sj in itertools.product((False, True), repeat=2):
            s = side.copy()
            s[i], s[j] = si, sj
            key = s.tobytes()
            if s.any() and not s.all() and key not in seen:
                seen.add(key)
                yield s


def best_oblique(X, y, rows, depth):
    """Fewest errors of a hyperplane tree of depth <= ``depth`` on ``rows``."""
    best = errors(y[rows])
    if depth == 0 or rows.size < 2:
        return best
    for left in line_splits(X, rows):
        best = min(best, best_oblique(X, y, rows[left], depth - 1) + best_oblique(X, y, rows[~left], depth - 1))
    return best


@pytest.mark.parametrize("depth, n, seed, n_classes", [
    (1, 10, 0, 2), (1, 10, 1, 2), (2, 9, 7, 3),
    pytest.param(2, 8, 5, 3, marks=pytest.mark.slow), pytest.param(2, 10, 3, 3, marks=pytest.mark.slow),
])
def test_octh_optimum_equals_brute_force_over_hyperplanes(depth, n, seed, n_classes):
    X = general_position(n, seed)
    y = np.random.default_rng(100 + seed).integers(0, n_classes, n)
    truth = best_oblique(X, y, np.arange(n), depth)
    clf = OptimalTreeClassifier(max_depth=depth, formulation="oct-h", time_limit=None, node_limit=20000).fit(X, y)
    got = int((clf.predict(X) != y).sum())
    assert got >= truth  # no tree beats the enumeration: the objective is not miscounted
    assert clf.result_.normalized_bound * errors(y) <= truth + 1e-6  # the bound never passes the true optimum
    if clf.result_.proven_optimal:
        assert got == truth
    assert clf.result_.proven_optimal  # tiny data: the proof is expected, and checked above


def best_linear_leaves(X, y, depth, min_leaf):
    """Least squared error of a depth <= ``depth`` tree with least-squares linear leaves (every midpoint split)."""

    def leaf(rows):
        idx = sorted(rows)
        A = np.column_stack([np.ones(len(idx)), X[idx]])
        r = y[idx] - A @ np.linalg.lstsq(A, y[idx], rcond=None)[0]
        return float(r @ r)

    return tree_brute_force(X, np.zeros(len(y), int), None, depth, 0.0, min_leaf, None, leaf=leaf)


def max_leaf_l1(X, y, rows, min_leaf):
    """Largest ``Σ_j |coef_j| range(x_j) / range(y)`` of a least-squares leaf on any subset a depth-1 tree makes."""
    span, ry = np.ptp(X, axis=0), np.ptp(y)
    top = 0.0
    subsets = [rows] + [rows[m] for f in range(X.shape[1]) for t in np.unique(X[rows, f])[:-1]
                        for m in (X[rows, f] <= t, X[rows, f] > t) if min(m.sum(), (~m).sum()) >= min_leaf]
    for s in subsets:
        A = np.column_stack([np.ones(s.size), X[s]])
        coef = np.linalg.lstsq(A, y[s], rcond=None)[0][1:]
        top = max(top, float(np.abs(coef) @ span / ry))
    return top


@pytest.mark.parametrize("seed", [0, 1])
def test_ortl_optimum_equals_exhaustive_splits_with_least_squares_leaves(seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (14, 2))
    y = np.where(X[:, 0] < 0.5, 1 + 2 * X[:, 1], 3 - X[:, 1]) + 0.2 * rng.normal(size=14)
    min_leaf = 4
    budget = 1.5 * max_leaf_l1(X, y, np.arange(14), min_leaf)  # every least-squares leaf fits the budget
    truth = best_linear_leaves(X, y, 1, min_leaf)
    sst = float(((y - y.mean()) ** 2).sum())
    reg = OptimalTreeRegressor(max_depth=1, leaf_model="linear", min_samples_leaf=min_leaf, coef_budget=budget,
                               time_limit=None, node_limit=20000).fit(X, y)
    sse = float(((reg.predict(X) - y) ** 2).sum())
    assert sse >= truth - 1e-9 * sst  # no tree beats the enumeration
    assert reg.result_.normalized_bound <= truth / sst + 1e-9  # the bound never passes the true optimum
    if reg.result_.proven_optimal:
        assert sse == pytest.approx(truth, rel=1e-6)


def test_ortl_depth2_optimum_never_beats_exhaustive_enumeration():
    rng = np.random.default_rng(4)
    X = rng.uniform(0, 1, (16, 2))
    y = np.where(X[:, 0] < 0.5, 2 * X[:, 1], 1 - X[:, 1]) + np.where(X[:, 1] < 0.4, 0.5, 0.0) + 0.1 * rng.normal(size=16)
    min_leaf = 4
    budget = 1.5 * max(max_leaf_l1(X, y, rows, min_leaf) for rows in [np.arange(16)] + [
        np.flatnonzero(m) for f in range(2) for t in np.unique(X[:, f])[:-1]
        for m in (X[:, f] <= t, X[:, f] > t) if min(m.sum(), (~m).sum()) >= min_leaf])
    truth = best_linear_leaves(X, y, 2, min_leaf)
    sst = float(((y - y.mean()) ** 2).sum())
    reg = OptimalTreeRegressor(max_depth=2, leaf_model="linear", min_samples_leaf=min_leaf, coef_budget=budget,
                               time_limit=None, node_limit=5000).fit(X, y)
    sse = float(((reg.predict(X) - y) ** 2).sum())
    assert sse >= truth - 1e-9 * sst
    assert reg.result_.normalized_bound <= truth / sst + 1e-9
    if reg.result_.proven_optimal:
        assert sse == pytest.approx(truth, rel=1e-6)
