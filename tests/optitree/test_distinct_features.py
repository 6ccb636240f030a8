"""At most k distinct split features (``max_distinct_features``): engine, bounds and MIP against brute force.

The brute force enumerates every tree on tiny random sets and keeps, per sub-tree, the least
cost for each *set of features it splits on*; the limit is applied to the union at the root.
It shares no code with the engine's subset enumeration (:mod:`optitree.exact._subsets`).
"""

import functools
import itertools

import numpy as np
import pytest

from greedy import CARTClassifier
from optitree import OptimalTreeClassifier, exact
from optitree.exact import _subsets, solve, split_bounds
from support.exact_bruteforce import node_masks, tree_enumeration


def random_instance(seed, max_rows=12):
    """2-4 features with ties, 2-3 classes, optional weights, alpha, min leaf and allowed mask."""
    rng = np.random.RandomState(seed)
    n, p = rng.randint(5, max_rows + 1), rng.randint(2, 5)
    X = rng.randint(0, rng.randint(2, 6), size=(n, p)).astype(float)
    y = rng.randint(0, rng.randint(2, 4), n)
    y = np.unique(y, return_inverse=True)[1]
    w = rng.choice([0.5, 1.0, 2.0], size=n) if rng.rand() < 0.4 else None
    depth = int(rng.randint(2, 4))
    opts = dict(max_depth=depth, alpha=float(rng.choice([0.0, 0.0, 0.5])),
                min_samples_leaf=int(rng.choice([1, 1, 2])),
                allowed_features=rng.rand(p) < 0.8 if rng.rand() < 0.3 else None)
    return X, y, w, opts, int(rng.randint(1, 3))


def brute_force_by_features(X, y, w, max_depth, alpha, min_samples_leaf, allowed_features):
    """``{frozenset of split features: least cost}`` over every tree of depth <= max_depth rooted at node 1."""
    leaf, splits = tree_enumeration(X, y, w, max_depth, min_samples_leaf, allowed_features)

    @functools.lru_cache(maxsize=None)
    def best(rows, depth, node):
        out = {frozenset(): leaf(rows)}
        if depth == 0:
            return out
        for f, left, right in splits(rows, node):
            for (fl, cl), (fr, cr) in itertools.product(best(left, depth - 1, 2 * node).items(),
                                                        best(right, depth - 1, 2 * node + 1).items()):
                key = fl | fr | {f}
                out[key] = min(out.get(key, np.inf), alpha + cl + cr)
        return out

    return best(frozenset(range(len(y))), max_depth, 1)


def limited_optimum(by_features, k):
    return min(cost for feats, cost in by_features.items() if len(feats) <= k)


def tree_cost(tree, X, y, w, alpha):
    w = np.ones(len(y)) if w is None else w
    return float(w[tree.predict(X).argmax(1) != y].sum()) + alpha * tree.n_splits


def distinct(tree):
    return np.unique(tree.feature[~tree.is_leaf]).size


@pytest.mark.parametrize("block", range(3))
def test_engine_equals_brute_force(block):
    limiting = 0
    for seed in range(block * 60, block * 60 + 60):
        X, y, w, opts, k = random_instance(seed)
        by_features = brute_force_by_features(X, y, w, **opts)
        expected = limited_optimum(by_features, k)
        limiting += expected > min(by_features.values()) + 1e-9
        res = solve(X, y, w, max_distinct_features=k, **opts)
        assert res.status == "optimal", seed
        assert res.objective == pytest.approx(expected, abs=1e-9), seed
        assert res.bound == pytest.approx(expected, abs=1e-9)
        assert tree_cost(res.tree, X, y, w, opts["alpha"]) == pytest.approx(expected, abs=1e-9), seed
        assert distinct(res.tree) <= k
    assert limiting >= 10  # the limit binds often enough to test something


def test_split_bounds_never_exceed_the_limited_optimum_of_their_candidate():
    """Per root candidate (f, t): alpha + left + right <= the least cost of a tree rooted at it
    with at most k features (brute force on the children), equal where marked exact."""
    checked = exact_checked = 0
    for seed in range(500, 560):
        X, y, w, opts, k = random_instance(seed)
        sb = split_bounds(X, y, w, depth=opts["max_depth"], alpha=opts["alpha"],
                          min_samples_leaf=opts["min_samples_leaf"], allowed_features=opts["allowed_features"],
                          max_distinct_features=k)
        masks = node_masks(opts["allowed_features"], opts["max_depth"], X.shape[1])
        for c in range(sb.feature.size):
            f, t = int(sb.feature[c]), float(sb.threshold[c])
            left = X[:, f] <= t
            sides = []
            for child, side in ((2, left), (3, ~left)):
                rows = [child * 2**d + j for d in range(opts["max_depth"] - 1) for j in range(2**d)]
                sides.append(brute_force_by_features(
                    X[side], y[side], None if w is None else w[side], opts["max_depth"] - 1, opts["alpha"],
                    opts["min_samples_leaf"], masks[np.array(rows) - 1]))
            rooted = min(opts["alpha"] + cl + cr for (fl, cl), (fr, cr) in
                         itertools.product(sides[0].items(), sides[1].items()) if len(fl | fr | {f}) <= k)
            bound = opts["alpha"] + sb.children_bound[c]
            assert bound <= rooted + 1e-9, seed
            if sb.exact[c]:
                assert bound == pytest.approx(rooted, abs=1e-9), seed
                exact_checked += 1
            checked += 1
    assert checked > 200 and exact_checked > 100


@pytest.mark.parametrize("formulation", ["flow", "oct"])
@pytest.mark.parametrize("acceleration", ["all", "none"])
def test_mip_equals_brute_force(formulation, acceleration):
    """Unweighted, alpha 0: the MIP's rows alone (acceleration 'none', no start) and the pipeline."""
    proven = 0
    for seed in range(700, 716):
        X, y, _, opts, k = random_instance(seed, max_rows=10)
        opts = dict(opts, max_depth=2, alpha=0.0, min_samples_leaf=1)
        expected = limited_optimum(brute_force_by_features(X, y, None, **opts), k)
        clf = OptimalTreeClassifier(max_depth=2, formulation=formulation, acceleration=acceleration, init=None,
                                    max_distinct_features=k, allowed_features=opts["allowed_features"],
                                    time_limit=60).fit(X, y)
        proven += clf.result_.proven_optimal
        assert np.sum(clf.predict(X) != y) == pytest.approx(expected), seed
        assert distinct(clf.tree_) <= k
    assert proven == 16


@functools.lru_cache(maxsize=None)
def limit_case():
    """80 rows, 3 features, and the brute-forced depth-2 optimum on one feature (a few seconds: once)."""
    rng = np.random.RandomState(3)
    X = rng.rand(80, 3)
    y = ((X[:, 0] > 0.5) & (X[:, 1] > 0.3) | (X[:, 2] > 0.9)).astype(int)
    return X, y, limited_optimum(brute_force_by_features(X, y, None, 2, 0.0, 1, None), 1)


@pytest.mark.parametrize("solver, acceleration", [
    ("dp", "all"), ("highs", "all"),
    pytest.param("highs", "none", marks=pytest.mark.slow),  # the MIP alone: 20 s
])
def test_dp_solver_and_a_start_that_breaks_the_limit(solver, acceleration):
    """CART splits on 3 features; with k = 1 its start is refused and never returned."""
    X, y, expected = limit_case()
    cart = CARTClassifier(max_depth=2, random_state=0).fit(X, y)
    assert distinct(cart.tree_) > 1
    clf = OptimalTreeClassifier(max_depth=2, solver=solver, acceleration=acceleration,
                                max_distinct_features=1, time_limit=60).fit(X, y)
    assert distinct(clf.tree_) == 1
    assert np.sum(clf.predict(X) != y) == expected
    assert clf.result_.proven_optimal
    if acceleration == "none":
        assert "start not used" in clf.result_.message


def test_engine_that_cannot_enumerate_proves_nothing_and_dp_refuses(monkeypatch):
    rng = np.random.RandomState(0)
    X = rng.rand(60, 6)
    y = (X[:, 0] + X[:, 1] > 1).astype(int)
    monkeypatch.setattr(_subsets, "MAX_SUBSETS", 3)  # C(6, 2) = 15 subsets > 3
    assert not exact.honours_distinct_features(X, None, 2, 2)
    assert exact.honours_distinct_features(X, None, 2, 3)  # 3 splits: no tree has more features
    with pytest.raises(ValueError, match="feature subsets"):
        solve(X, y, max_depth=2, max_distinct_features=2)
    with pytest.raises(ValueError, match="max_distinct_features"):
        OptimalTreeClassifier(max_depth=2, solver="dp", max_distinct_features=2).fit(X, y)
    clf = OptimalTreeClassifier(max_depth=2, max_distinct_features=2, time_limit=60).fit(X, y)
    assert distinct(clf.tree_) <= 2
    assert clf.result_.acceleration["certificate"] != "engine"  # the MIP (or its bounds) proved it
    assert clf.result_.proven_optimal


def test_refusals():
    X, y = np.random.RandomState(0).rand(20, 3), np.arange(20) % 2
    with pytest.raises(ValueError, match="applies to formulation .flow. or .oct."):
        OptimalTreeClassifier(formulation="oct-h", max_distinct_features=1).fit(X, y)
    with pytest.raises(ValueError, match="max_distinct_features"):
        OptimalTreeClassifier(max_distinct_features=0).fit(X, y)
    with pytest.raises(ValueError, match="max_distinct_features"):
        solve(X, y, max_depth=2, max_distinct_features=0)
