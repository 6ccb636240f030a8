"""The exact engine's search order (best first across features, CART's split first from depth 4) and its
depth-1 sweep: never another optimum.

Best first and the dive to CART's split only reorder the candidates a search solves; the depth-1
sweep compacts each side's rows before sweeping them. They are checked against an independent
brute force on tiny sets, against pycontree on continuous data (rank-transformed: pycontree casts
features to float32) and, for the sweep, against a direct depth-1 enumeration on every side of
every split, for the three losses.
"""

import numpy as np
import pycontree
import pytest
from sklearn.datasets import load_breast_cancer, load_wine
from support.exact_bruteforce import brute_force, check_tree, random_instance, relabel, tree_cost

from optitree.exact import _search, prepare, solve, split_bounds


@pytest.fixture(params=["best_first", "fifo"])
def order(request, monkeypatch):
    """Every data set searched best first (a threshold of 1 thresholds), or none (first in, first out)."""
    monkeypatch.setattr(_search, "BEST_FIRST_THRESHOLDS", 1 if request.param == "best_first" else 10**9)
    return request.param


def test_both_orders_equal_brute_force(order):
    for seed in range(120):
        X, y, w, opts = random_instance(seed, max_rows=14, depth=3)
        y = relabel(y)
        res = solve(X, y, w, **opts)
        assert res.status == "optimal"
        assert res.objective == pytest.approx(brute_force(X, y, w, **opts), abs=1e-9), seed


def test_both_orders_stopped_early_keep_valid_bounds(order):
    for seed in range(40):
        X, y, w, opts = random_instance(seed, max_rows=14, depth=3)
        y = relabel(y)
        expected = brute_force(X, y, w, **opts)
        for limit in (1, 3, 8):
            res = solve(X, y, w, node_limit=limit, **opts)
            assert res.bound <= expected + 1e-9 <= res.objective + 2e-9, (seed, limit)


@pytest.mark.parametrize("depth, rows, seeds", [(4, 14, 40), (5, 12, 30)])
def test_dive_to_cart_split_equals_brute_force(depth, rows, seeds):
    """From depth 4 a branch node first solves CART's split (``Search::branch``): the optimum of a plain
    and of an anytime search (time limit) stays brute force's, its tree a tree of the problem."""
    for seed in range(seeds):
        X, y, w, opts = random_instance(seed, max_rows=rows, depth=depth)
        y = relabel(y)
        expected = brute_force(X, y, w, **opts)
        for limits in ({}, {"time_limit": 60.0}):
            res = solve(X, y, w, **opts, **limits)
            assert res.status == "optimal"
            assert res.objective == pytest.approx(expected, abs=1e-9), (seed, limits)
            check_tree(res.tree, X, y, w, opts)
            assert tree_cost(res.tree, X, y, w, opts["alpha"]) == pytest.approx(res.objective, abs=1e-9)


def test_breast_cancer_depth5_equals_pycontree():
    """A perfect depth-5 tree exists (the dive finds it early); the optimum is pycontree's and the tree errs on no row."""
    X, y = load_breast_cancer(return_X_y=True)
    ranks = np.column_stack([np.unique(X[:, j], return_inverse=True)[1] for j in range(X.shape[1])]).astype(float)
    res = solve(X, y, max_depth=5)
    est = pycontree.ConTree(max_depth=5, time_limit=600).fit(ranks, y)
    assert res.status == "optimal"
    assert res.objective == int((est.predict(ranks) != y).sum()) == 0
    assert (res.tree.predict(X).argmax(1) != y).sum() == 0


def xor(rows):
    """Two classes that a depth-2 tree separates."""
    rng = np.random.RandomState(0)
    X = rng.rand(rows, 4)
    return X, ((X[:, 0] > 0.5) ^ (X[:, 1] > 0.3)).astype(int)


@pytest.mark.parametrize("limits", [{}, {"time_limit": 60.0}])
def test_search_stops_once_its_incumbent_meets_the_bound(limits):
    """When the depth-2 start already errs on no row, no deeper search runs: one kernel call at every depth
    (from depth 4 on a root of 2 000 rows or more, which takes no dive before its depth-2 start)."""
    X, y = xor(2000)
    for depth in (3, 4, 5, 6):
        res = solve(X, y, max_depth=depth, **limits)
        assert (res.objective, res.bound, res.status, res.n_evaluated) == (0.0, 0.0, "optimal", 1)


@pytest.mark.parametrize("limits", [{}, {"time_limit": 60.0}, {"threads": 2}, {"work_limit": 10**9}])
def test_dive_before_the_depth2_start_on_small_roots(limits):
    """From depth 4 a root of fewer than 2 000 rows first dives (CART's split, its children probed); a tree
    erring on no row ends the search there, without the depth-2 start: on wine the trace goes from the
    leaf straight to 0 (the depth-2 start's 6 errors never show) in 7 units at depth 4 (the dive's split
    on all rows, then kernel calls on subsets; the depth-2 start would be an 8th, on all rows), and on the
    xor rows a few kernel calls of the dive stand for the depth-2 start's one."""
    X, y = load_wine(return_X_y=True)
    for depth in (4, 5):
        res = solve(X, y, max_depth=depth, **limits)
        assert (res.objective, res.bound, res.status) == (0.0, 0.0, "optimal")
        assert [incumbent for _, incumbent, _ in res.trace] == [107.0, 0.0, 0.0]
        if depth == 4:
            assert res.n_evaluated == 7
    assert [i for _, i, _ in solve(X, y, max_depth=3, **limits).trace][:2] == [107.0, 6.0]  # depth 3: no dive
    X, y = xor(1999)
    for depth in (4, 5, 6):
        res = solve(X, y, max_depth=depth, **limits)
        assert (res.objective, res.bound, res.status) == (0.0, 0.0, "optimal")
        assert 1 < res.n_evaluated < 24


def continuous(seed, n, p):
    """Rank-transformed continuous features, two overlapping classes."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, p)
    y = (X[:, 0] + 0.7 * X[:, 1] * X[:, -1] + 0.5 * rng.randn(n) > 0).astype(int)
    return np.column_stack([np.unique(X[:, j], return_inverse=True)[1] for j in range(p)]).astype(float), y


@pytest.mark.parametrize("seed, n, p, depth", [(0, 120, 3, 3), (1, 90, 4, 3), (2, 60, 3, 4)])
def test_both_orders_equal_pycontree(order, seed, n, p, depth):
    X, y = continuous(seed, n, p)
    res = solve(X, y, max_depth=depth)
    est = pycontree.ConTree(max_depth=depth, time_limit=600).fit(X, y)
    assert res.status == "optimal"
    assert res.objective == int((est.predict(X) != y).sum())


def depth1_optimum(X, t, loss):
    """Least loss of a stump or a leaf on rows ``X, t`` (targets or class codes), by enumeration."""
    def leaf(v):
        if loss == "misclassification":
            return len(v) - np.bincount(v).max()
        if loss == "squared":
            return float(((v - v.mean()) ** 2).sum())
        return float(np.abs(v - np.median(v)).sum())
    best = leaf(t)
    for f in range(X.shape[1]):
        for value in np.unique(X[:, f])[:-1]:
            left = X[:, f] <= value
            best = min(best, leaf(t[left]) + leaf(t[~left]))
    return best


@pytest.mark.parametrize("loss", ["misclassification", "squared", "absolute"])
def test_depth1_sweeps_of_every_split_equal_enumeration(loss):
    """split_bounds at depth 2 solves both depth-1 children of every root candidate in one sweep."""
    rng = np.random.RandomState(3)
    for _ in range(6):
        n, p = rng.randint(8, 30), rng.randint(1, 4)
        X = rng.randint(0, rng.randint(2, 9), size=(n, p)).astype(float)
        t = rng.randint(0, 3, n) if loss == "misclassification" else np.round(rng.randn(n), 1)
        data = prepare(X, t, loss=loss)
        sb = split_bounds(data, depth=2)
        assert sb.exact.all()
        for f, thr, lb, rb in zip(sb.feature, sb.threshold, sb.left_bound, sb.right_bound):
            left = data.X[:, f] <= thr
            assert lb == pytest.approx(depth1_optimum(data.X[left], t[left], loss), abs=1e-7)
            assert rb == pytest.approx(depth1_optimum(data.X[~left], t[~left], loss), abs=1e-7)


def weighted_depth1(X, y, w, alpha):
    """Least weighted misclassification plus ``alpha`` per split of a stump or a leaf, by enumeration."""
    def leaf(rows):
        return w[rows].sum() - np.bincount(y[rows], weights=w[rows]).max() if rows.any() else 0.0
    everything = np.ones(len(y), bool)
    best = leaf(everything)
    for f in range(X.shape[1]):
        for value in np.unique(X[:, f])[:-1]:
            left = X[:, f] <= value
            best = min(best, alpha + leaf(left) + leaf(~left))
    return best


def test_class_skip_on_imbalanced_classes():
    """The depth-1 sweeps skip rows while no majority can change (``sweep_side``, ``cpp/sweep.hpp``): a skip one
    row too long misses the best stump of a side, which these sets (one class of 50-97 %, unit
    weights in every other case, ``alpha``) expose."""
    rng = np.random.RandomState(7)
    for case in range(100):
        n, p, k = rng.randint(10, 60), rng.randint(1, 4), rng.randint(2, 5)
        X = rng.randint(0, rng.randint(3, 25), size=(n, p)).astype(float)
        y = np.where(rng.rand(n) < rng.uniform(0.5, 0.97), 0, rng.randint(1, k, n))
        y[rng.randint(n)] = 1
        w = rng.choice([0.5, 1.0, 1.0, 2.0, 3.0], size=n) if case % 2 else np.ones(n)
        alpha = float(rng.choice([0.0, 0.5, 1.5]))
        data = prepare(X, y, w)
        sb = split_bounds(data, depth=2, alpha=alpha)
        assert sb.exact.all()
        for f, thr, lb, rb in zip(sb.feature, sb.threshold, sb.left_bound, sb.right_bound):
            left = X[:, f] <= thr
            assert lb == pytest.approx(weighted_depth1(X[left], y[left], w[left], alpha), abs=1e-9), case
            assert rb == pytest.approx(weighted_depth1(X[~left], y[~left], w[~left], alpha), abs=1e-9), case
        assert solve(data, max_depth=1, alpha=alpha).objective == pytest.approx(weighted_depth1(X, y, w, alpha))
        if n <= 14:
            assert solve(data, max_depth=2, alpha=alpha).objective == pytest.approx(
                brute_force(X, y, w, 2, alpha, 1, None), abs=1e-9), case
