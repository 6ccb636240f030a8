"""optitree.exact against an independent brute force over all trees on tiny random sets."""

import numpy as np
import pytest

from optitree.exact import prepare, solve, split_bounds
from optitree.exact import _search as search_module
from optitree.exact._binary import pair_columns
from support.exact_bruteforce import (brute_force, check_tree, children_optima, one_hot, random_instance, relabel,
                                      tree_cost)


@pytest.mark.parametrize("pairs", [True, False])
@pytest.mark.parametrize("block", range(4))
def test_solve_equals_brute_force(block, pairs, monkeypatch):
    """``pairs=False``: the sweep kernel, which data with few thresholds would not reach (pair counts)."""
    if not pairs:
        monkeypatch.setattr(search_module, "pair_columns", lambda data: None)
    for seed in range(block * 80, block * 80 + 80):
        X, y, w, opts = random_instance(seed)
        y = relabel(y)
        expected = brute_force(X, y, w, **opts)
        res = solve(X, y, w, **opts)
        assert res.status == "optimal", seed
        assert res.objective == pytest.approx(expected, abs=1e-9), seed
        assert res.bound == pytest.approx(expected, abs=1e-9) and res.gap == 0.0
        assert tree_cost(res.tree, X, y, w, opts["alpha"]) == pytest.approx(res.objective, abs=1e-9), seed
        check_tree(res.tree, X, y, w, opts)


def test_minimum_leaf_size_on_wider_sets():
    """Depth 2 with min_samples_leaf 2-4 on up to 30 rows: the regime where a superset can have a
    lower optimum than its subset (so only the similarity bound may prune thresholds)."""
    for seed in range(300):
        X, y, w, opts = random_instance(seed, max_rows=30, depth=2, min_leaf=2 + seed % 3)
        y = relabel(y)
        res = solve(X, y, w, **opts)
        assert res.objective == pytest.approx(brute_force(X, y, w, **opts), abs=1e-9), seed
        assert tree_cost(res.tree, X, y, w, opts["alpha"]) == pytest.approx(res.objective, abs=1e-9), seed
        check_tree(res.tree, X, y, w, opts)


@pytest.mark.parametrize("factor", [1e-12, 3e9])
def test_weight_magnitude_does_not_matter(factor):
    """Objectives scale with the weights (and alpha, cutoffs) even far from the 1e-9 tolerance."""
    for seed in range(5000, 5040):
        X, y, w, opts = random_instance(seed)
        y = relabel(y)
        w = np.ones(len(y)) if w is None else w
        expected = brute_force(X, y, w, **opts) * factor
        scaled = dict(opts, alpha=opts["alpha"] * factor)
        res = solve(X, y, w * factor, **scaled)
        assert res.status == "optimal"
        assert res.objective == pytest.approx(expected, rel=1e-9, abs=0), seed
        assert tree_cost(res.tree, X, y, w * factor, scaled["alpha"]) == pytest.approx(res.objective, rel=1e-9)
        sb = split_bounds(X, y, w * factor, depth=opts["max_depth"], alpha=scaled["alpha"],
                          min_samples_leaf=opts["min_samples_leaf"], allowed_features=opts["allowed_features"],
                          tighten=True)
        assert sb.incumbent == pytest.approx(expected, rel=1e-9)
        assert np.all(scaled["alpha"] + sb.children_bound[~sb.exact] >= expected * (1 - 1e-9))


@pytest.mark.parametrize("lazy", [False, True])
def test_split_bounds_never_exceed_children_optima(lazy):
    checked = 0
    for seed in range(1000, 1060):
        X, y, w, opts = random_instance(seed)
        y = relabel(y)
        cutoff = brute_force(X, y, w, **opts) if lazy else None
        sb = split_bounds(X, y, w, depth=opts["max_depth"], alpha=opts["alpha"],
                          min_samples_leaf=opts["min_samples_leaf"], allowed_features=opts["allowed_features"],
                          cutoff=cutoff)
        assert sb.complete
        for c in range(sb.feature.shape[0]):
            lo, hi = children_optima(X, y, w, opts, sb.feature[c], sb.threshold[c])
            assert sb.left_bound[c] <= lo + 1e-9 and sb.right_bound[c] <= hi + 1e-9, seed
            if sb.exact[c]:
                assert (sb.left_bound[c], sb.right_bound[c]) == pytest.approx((lo, hi), abs=1e-9)
            elif lazy:
                assert opts["alpha"] + sb.children_bound[c] >= cutoff - 1e-9
            else:
                pytest.fail("without a cutoff every candidate is solved exactly")
            checked += 1
    assert checked > 100


def test_split_bounds_tightened_to_its_incumbent():
    for seed in range(4000, 4060):
        X, y, w, opts = random_instance(seed)
        y = relabel(y)
        optimum = brute_force(X, y, w, **opts)
        sb = split_bounds(X, y, w, depth=opts["max_depth"], alpha=opts["alpha"],
                          min_samples_leaf=opts["min_samples_leaf"], allowed_features=opts["allowed_features"],
                          tighten=True)
        assert sb.incumbent == pytest.approx(optimum, abs=1e-9), seed
        assert tree_cost(sb.incumbent_tree, X, y, w, opts["alpha"]) == pytest.approx(optimum, abs=1e-9)
        assert np.all(opts["alpha"] + sb.children_bound[~sb.exact] >= optimum - 1e-9)
        for c in range(sb.feature.shape[0]):
            lo, hi = children_optima(X, y, w, opts, sb.feature[c], sb.threshold[c])
            assert sb.left_bound[c] <= lo + 1e-9 and sb.right_bound[c] <= hi + 1e-9, seed


def test_split_bounds_lists_every_feasible_candidate():
    X = np.array([[0.0, 5.0], [1.0, 5.0], [1.0, 6.0], [2.0, 7.0]])
    y = np.array([0, 1, 1, 0])
    sb = split_bounds(X, y, depth=1)
    assert sb.feature.tolist() == [0, 0, 1, 1]
    assert sb.threshold.tolist() == [0.5, 1.5, 5.5, 6.5]
    assert sb.n_left.tolist() == [1, 3, 2, 3]
    assert sb.leaf_cost == 2.0
    sb = split_bounds(X, y, depth=1, min_samples_leaf=2, allowed_features=np.array([True, False]))
    assert sb.feature.tolist() == [] and sb.threshold.tolist() == []


def test_split_bounds_on_a_subset_match_solving_it():
    rng = np.random.RandomState(3)
    X, y = rng.randint(0, 4, size=(40, 3)).astype(float), rng.randint(0, 3, 40)
    data = prepare(X, y)
    rows = np.flatnonzero(X[:, 0] <= 1.5)
    sb = split_bounds(data, depth=2, samples=rows)
    assert sb.exact.all()
    best_from_bounds = min(sb.leaf_cost, float(sb.children_bound.min()))
    assert best_from_bounds == pytest.approx(solve(X[rows], y[rows], max_depth=2).objective)
    mask = np.zeros(40, bool)
    mask[rows] = True
    assert np.array_equal(split_bounds(data, depth=2, samples=mask).left_bound, sb.left_bound)
    on_subset = solve(data, max_depth=2, samples=mask)
    assert on_subset.objective == best_from_bounds
    assert np.array_equal(on_subset.tree.value[0], np.bincount(y[rows], minlength=3))


def test_split_bounds_under_a_budget_stay_valid():
    incomplete = 0
    for seed in range(3000, 3040):
        X, y, w, opts = random_instance(seed, depth=3)
        y = relabel(y)
        sb = split_bounds(X, y, w, depth=3, alpha=opts["alpha"], min_samples_leaf=opts["min_samples_leaf"],
                          allowed_features=opts["allowed_features"], node_limit=2)
        incomplete += not sb.complete
        for c in range(sb.feature.shape[0]):
            lo, hi = children_optima(X, y, w, opts, sb.feature[c], sb.threshold[c])
            assert sb.left_bound[c] <= lo + 1e-9 and sb.right_bound[c] <= hi + 1e-9, seed
            if sb.exact[c]:
                assert (sb.left_bound[c], sb.right_bound[c]) == pytest.approx((lo, hi), abs=1e-9)
    assert incomplete > 10


@pytest.mark.parametrize("work", [None, 1e9])
def test_minimum_leaf_size_at_depth_three(work, monkeypatch):
    """Depth 3 with min_samples_leaf 2-4 on up to 24 rows: the root's thresholds are screened with the
    bounds of the search without a minimum leaf size (``Search.relaxed_bounds``), with its default work
    limit per scan and without one (on sets this small the limit leaves few relaxed bounds)."""
    from optitree.exact import _search

    if work is not None:
        monkeypatch.setattr(_search, "RELAXED_WORK", work)
    for seed in range(120):
        X, y, w, opts = random_instance(seed, max_rows=24, depth=3, min_leaf=2 + seed % 3)
        y = relabel(y)
        res = solve(X, y, w, **opts)
        assert res.status == "optimal", seed
        assert res.objective == pytest.approx(brute_force(X, y, w, **opts), abs=1e-9), seed
        assert tree_cost(res.tree, X, y, w, opts["alpha"]) == pytest.approx(res.objective, abs=1e-9), seed
        check_tree(res.tree, X, y, w, opts)


@pytest.mark.parametrize("work", [None, 1e9])
def test_relaxed_bounds_never_exceed_the_restricted_children_optima(work, monkeypatch):
    """The bounds of the search without a minimum leaf size, at a lazy cutoff (the optimum), against the
    brute-forced children optima with it, for every root candidate the restricted search can use; with
    the default work limit per scan, and without one (every relaxed scan runs to its end)."""
    from optitree.exact import _search
    from optitree.exact._search import Search
    from optitree.problem import check_allowed

    if work is not None:
        monkeypatch.setattr(_search, "RELAXED_WORK", work)

    checked = positive_bounds = 0
    for seed in range(3000, 3060):
        X, y, w, opts = random_instance(seed, max_rows=20, depth=3, min_leaf=2 + seed % 3)
        y = relabel(y)
        data = prepare(X, y, w)
        allowed = check_allowed(opts["allowed_features"], 3, X.shape[1])
        search = Search(data, allowed, opts["alpha"] / data.scale, opts["min_samples_leaf"], np.inf, None)
        cutoff = brute_force(X, y, w, **opts) / data.scale
        positive = np.ones(len(y), bool) if w is None else w > 0
        for f in np.flatnonzero(allowed[0]):
            rank, left, right = search.relaxed_bounds(data.view, 3, 1, int(f), cutoff)
            for j, r in enumerate(rank):
                threshold = data.thresholds[f][r]
                goes_left = X[:, f] <= threshold
                if min(positive[goes_left].sum(), positive[~goes_left].sum()) < opts["min_samples_leaf"]:
                    continue  # a split the restricted search never makes
                lo, hi = children_optima(X, y, w, opts, f, threshold)
                assert left[j] * data.scale <= lo + 1e-9 and right[j] * data.scale <= hi + 1e-9, seed
                checked += 1
                positive_bounds += left[j] + right[j] > 0
    assert checked > 200 and (work is None or positive_bounds > 50)


def test_bounds_under_per_level_features_never_exceed_children_optima():
    """Per-level feature masks at depth 3: a sub-problem's optimum may drop when rows are added (a new row
    can make an allowed split possible), so the monotone bound must not be used for depth-2 children."""
    checked = 0
    for seed in range(2000, 2150):
        X, y, w, opts = random_instance(seed, max_rows=12, depth=3)
        if X.shape[1] < 2:
            continue
        y = relabel(y)
        rng = np.random.RandomState(seed)
        opts["allowed_features"] = rng.rand(3, X.shape[1]) < 0.5
        opts["allowed_features"][0] = True
        opts["min_samples_leaf"] = 1
        cutoff = brute_force(X, y, w, **opts)
        sb = split_bounds(X, y, w, depth=3, alpha=opts["alpha"], allowed_features=opts["allowed_features"],
                          cutoff=cutoff)
        for c in range(sb.feature.shape[0]):
            lo, hi = children_optima(X, y, w, opts, sb.feature[c], sb.threshold[c])
            assert sb.left_bound[c] <= lo + 1e-9 and sb.right_bound[c] <= hi + 1e-9, seed
            checked += 1
        assert solve(X, y, w, **opts).objective == pytest.approx(cutoff, abs=1e-9), seed
    assert checked > 500


def test_anytime_first_pass_keeps_the_optimum_and_its_stopped_bounds_valid():
    """With a limit the root search first takes one step on every feature: same optimum; when stopped by the
    work limit, a bound that never exceeds the brute-forced optimum."""
    positive = 0
    for seed in range(4000, 4060):
        X, y, w, opts = random_instance(seed, depth=3)
        y = relabel(y)
        expected = brute_force(X, y, w, **opts)
        assert solve(X, y, w, time_limit=1e6, **opts).objective == pytest.approx(expected, abs=1e-9), seed
        for limit in (2, 4, 8):
            stopped = solve(X, y, w, node_limit=limit, **opts)
            assert stopped.bound <= expected + 1e-9 <= stopped.objective + 1e-9, seed
            positive += stopped.bound > 0
    assert positive > 0


@pytest.mark.parametrize("block", range(3))
def test_binary_features_equal_brute_force(block, monkeypatch):
    """All-binary data takes the pair-count kernel (optitree.exact._binary) and, at depth 3, the candidate loop
    without feature scans (the binary steps of ``Search::branch``); its optima are the brute force's, with weights, 2-4 classes,
    alpha, a minimum leaf size and per-level or per-node features, and searches stopped by a node or work limit
    keep a bound below the optimum."""
    stopped_bounds = 0
    for seed in range(40 * block, 40 * block + 40):
        rng = np.random.RandomState(seed)
        n, p = rng.randint(4, 15), rng.randint(1, 6)
        X = (rng.rand(n, p) < rng.uniform(0.2, 0.8)).astype(float) * rng.choice([1.0, -3.0])
        y = rng.randint(0, rng.randint(2, 5), n)
        if rng.rand() < 0.5:  # the parity of up to three columns: optima of 0 that need depth 3
            y = (X[:, :3] != 0).sum(axis=1) % 2
        w = None if rng.rand() < 0.4 else rng.choice([0.5, 1.0, 2.0, 3.0], size=n)
        depth = int(rng.randint(1, 5))
        allowed = None
        if p > 1 and rng.rand() < 0.4:
            allowed = rng.rand(rng.choice([depth, 2**depth - 1]), p) < 0.7
        opts = dict(max_depth=depth, alpha=float(rng.choice([0.0, 0.0, 0.5, 1.5])),
                    min_samples_leaf=int(rng.choice([1, 1, 2, 3])), allowed_features=allowed)
        data = prepare(X, y, w)
        assert pair_columns(data) is not None and search_module.Search(data, np.ones((1, p), bool), 0, 1, np.inf,
                                                                       None).binary
        optimum = brute_force(X, y, w, **opts)
        res = solve(X, y, w, **opts)
        assert res.objective == pytest.approx(optimum, abs=1e-9), seed
        assert res.status == "optimal"
        check_tree(res.tree, X, y, w, opts)
        if depth >= 3:
            for limit in ({"node_limit": 3}, {"node_limit": 9}, {"work_limit": 4 * n}):
                stopped = solve(X, y, w, **limit, **opts)
                assert stopped.bound <= optimum + 1e-9 <= stopped.objective + 1e-9, (seed, limit)
                stopped_bounds += stopped.status != "optimal" and stopped.bound > 0
    assert stopped_bounds > 0


def test_binary_loop_bounds_of_stopped_searches_stay_below_the_optimum():
    """Parity of three binary columns (optima near 0 that the depth-2 start misses), stopped after every few
    units of work at depth 3 and 4: the bound never exceeds the brute-forced optimum, with and without
    per-node features."""
    checked = 0
    for seed in range(30):
        rng = np.random.RandomState(seed)
        n, p = rng.randint(10, 17), rng.randint(4, 7)
        X = (rng.rand(n, p) < 0.5).astype(float)
        y = (X[:, rng.choice(p, 3, replace=False)].sum(axis=1).astype(int) + (rng.rand(n) < 0.1)) % 2
        depth = 3 + seed % 2
        allowed = None
        if seed % 3 == 0:  # one feature at the root: its candidate is the loop's last, often stopped inside
            allowed = rng.rand(2**depth - 1, p) < 0.8
            allowed[0] = np.arange(p) == rng.randint(p)
        opts = dict(max_depth=depth, alpha=float(rng.choice([0.0, 0.5])), min_samples_leaf=1,
                    allowed_features=allowed)
        optimum = brute_force(X, y, None, **opts)
        for limit in range(1, 60):
            stopped = solve(X, y, node_limit=limit, **opts)
            assert stopped.bound <= optimum + 1e-9 <= stopped.objective + 1e-9, (seed, limit)
            checked += stopped.status == "node_limit" and stopped.bound > 0
    assert checked > 0


def test_binary_loop_does_the_scans_work():
    """The binary steps solve what the feature scans would: the same trees, bounds and work units (no
    inline slice, whose cut by the clock would repeat some work on the thread)."""
    from optitree import datasets

    X, y, _ = datasets.load("monks2")
    X = one_hot(X)
    original = search_module.Search.__init__

    def without_loop(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.binary = False

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(search_module, "INLINE_SECONDS", 0.0)
        fast = solve(X, y, max_depth=4)
        patch.setattr(search_module.Search, "__init__", without_loop)
        scans = solve(X, y, max_depth=4)
    assert fast.status == scans.status == "optimal"
    assert (fast.objective, fast.work, fast.n_evaluated) == (scans.objective, scans.work, scans.n_evaluated)
    for field in ("feature", "threshold", "children_left", "children_right"):
        assert np.array_equal(getattr(fast.tree, field), getattr(scans.tree, field), equal_nan=True), field


def test_binary_kernel_equals_pycontree_on_one_hot_data():
    """tic-tac-toe one-hot (27 binary columns) at depth 3: the pair-count kernel's optimum is pycontree's."""
    pycontree = pytest.importorskip("pycontree")
    from optitree import datasets

    X, y, _ = datasets.load("tic_tac_toe")
    X = one_hot(X)
    y = np.unique(y, return_inverse=True)[1]
    assert pair_columns(prepare(X, y)) is not None
    errors = (pycontree.ConTree(max_depth=3).fit(X, y).predict(X) != y).sum()
    assert solve(X, y, max_depth=3).objective == errors


def test_pair_columns_only_for_few_thresholds_per_feature():
    """Few thresholds per feature take the pair-count kernel; many (iris: 119 over 4 features) the sweep kernel."""
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    assert pair_columns(prepare(X, y)) is None
    rng = np.random.RandomState(0)
    assert pair_columns(prepare(rng.randint(0, 8, (200, 4)).astype(float), rng.randint(0, 2, 200))) is not None
    assert pair_columns(prepare(rng.randint(0, 20, (200, 4)).astype(float), rng.randint(0, 2, 200))) is None
