"""optitree.exact with squared and absolute error against an independent brute force over all trees."""

import numpy as np
import pytest

from optitree.exact import prepare, solve, split_bounds
from support.exact_bruteforce import check_tree, children_optima, random_instance
from support.regression_bruteforce import brute_force, leaf_loss

LOSSES = ("squared", "absolute")


def regression_instance(seed, max_rows=12, depth=None):
    """random_instance's features, weights and options, with real targets (ties, one outlier, scales)."""
    X, _, w, opts = random_instance(seed, max_rows=max_rows, depth=depth)
    rng = np.random.RandomState(10_000 + seed)
    n = X.shape[0]
    y = [rng.randn(n), rng.randint(0, 4, n).astype(float), np.round(rng.exponential(size=n), 1)][rng.randint(3)]
    if rng.rand() < 0.3:
        y[rng.randint(n)] += 20.0
    loss = LOSSES[seed % 2]
    # alpha in units of the loss: a fraction of the baseline
    baseline = leaf_loss(y, np.ones(n) if w is None else w, loss)
    opts["alpha"] *= 0.1 * baseline
    return X, y, w, dict(opts, loss=loss)


def tree_loss(tree, X, y, w, alpha, loss):
    w = np.ones(len(y)) if w is None else w
    residual = y - tree.predict(X)
    return float((w * (residual**2 if loss == "squared" else np.abs(residual))).sum()) + alpha * tree.n_splits


def tolerance(y):
    return 1e-8 * max(1.0, float(np.ptp(y)) ** 2)


@pytest.mark.parametrize("block", range(3))
def test_solve_equals_brute_force(block):
    for seed in range(block * 60, block * 60 + 60):
        X, y, w, opts = regression_instance(seed)
        expected = brute_force(X, y, w, **opts)
        res = solve(X, y, w, **opts)
        assert res.status == "optimal", seed
        assert res.objective == pytest.approx(expected, abs=tolerance(y)), seed
        assert res.bound == res.objective and res.gap == 0.0
        assert tree_loss(res.tree, X, y, w, opts["alpha"], opts["loss"]) == pytest.approx(res.objective,
                                                                                            abs=tolerance(y)), seed
        check_tree(res.tree, X, y, w, opts)
        assert res.tree.task == "regression"


@pytest.mark.parametrize("loss", LOSSES)
def test_wider_sets_at_depth_two_with_minimum_leaf(loss):
    """Up to 30 rows, min_samples_leaf 1-3: the depth-2 kernel's similarity bound on targets."""
    for seed in range(200, 260):
        X, y, w, opts = regression_instance(seed, max_rows=30, depth=2)
        opts.update(loss=loss, min_samples_leaf=1 + seed % 3)
        res = solve(X, y, w, **opts)
        assert res.objective == pytest.approx(brute_force(X, y, w, **opts), abs=tolerance(y)), seed


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("factor", [1e-6, 1e9])
def test_target_magnitude_does_not_matter(loss, factor):
    """Targets of 1e-6 ... 1e9 (and shifted far from 0): the same trees, objectives scaled exactly."""
    power = 2 if loss == "squared" else 1
    for seed in range(400, 430):
        X, y, w, opts = regression_instance(seed)
        opts["loss"] = loss
        expected = brute_force(X, y, w, **dict(opts, alpha=0.0))
        res = solve(X, y * factor + 3.0 * factor, w, **dict(opts, alpha=0.0))
        assert res.objective == pytest.approx(expected * factor**power, rel=1e-7, abs=tolerance(y) * factor**power)


@pytest.mark.parametrize("lazy", [False, True])
def test_split_bounds_never_exceed_children_optima(lazy):
    for seed in range(600, 640):
        X, y, w, opts = regression_instance(seed)
        cutoff = brute_force(X, y, w, **opts) if lazy else None
        sb = split_bounds(X, y, w, depth=opts["max_depth"], loss=opts["loss"], alpha=opts["alpha"],
                          min_samples_leaf=opts["min_samples_leaf"], allowed_features=opts["allowed_features"],
                          cutoff=cutoff)
        tol = tolerance(y)
        for c in range(sb.feature.shape[0]):
            lo, hi = children_optima(X, y, w, opts, sb.feature[c], sb.threshold[c], optimum=brute_force)
            assert sb.left_bound[c] <= lo + tol and sb.right_bound[c] <= hi + tol, seed
            if sb.exact[c]:
                assert sb.left_bound[c] == pytest.approx(lo, abs=tol) and sb.right_bound[c] == pytest.approx(hi, abs=tol)
            elif lazy:
                assert opts["alpha"] + sb.children_bound[c] >= cutoff - tol, seed


def test_depth4_equals_brute_force_and_stopped_bounds_stay_below_it():
    """From depth 4 the root takes its intervals alternately least bound first and next to the cheapest tree
    (cpp/search.hpp, FeatureScan::alternating): the optimum stays brute force's, a stopped search's bound below it."""
    for seed in range(800, 830):
        X, y, w, opts = regression_instance(seed, max_rows=10, depth=4)
        optimum = brute_force(X, y, w, **opts)
        res = solve(X, y, w, **opts)
        assert res.status == "optimal" and res.objective == pytest.approx(optimum, abs=tolerance(y)), seed
        for limit in (1, 3, 8):
            res = solve(X, y, w, node_limit=limit, **opts)
            assert res.bound <= optimum + tolerance(y) <= res.objective + 2 * tolerance(y), (seed, limit)


def test_stopped_search_bound_never_exceeds_the_optimum():
    for seed in range(700, 760):
        X, y, w, opts = regression_instance(seed, max_rows=14, depth=3)
        optimum = brute_force(X, y, w, **opts)
        for limit in (1, 2, 5):
            res = solve(X, y, w, node_limit=limit, **opts)
            assert res.bound <= optimum + tolerance(y), seed
            assert res.objective >= optimum - tolerance(y), seed
            assert tree_loss(res.tree, X, y, w, opts["alpha"], opts["loss"]) == pytest.approx(res.objective,
                                                                                                abs=tolerance(y))


def test_distinct_feature_limit_matches_brute_force_over_subsets():
    for seed in range(800, 830):
        X, y, w, opts = regression_instance(seed, max_rows=10, depth=2)
        if X.shape[1] < 2:
            continue
        opts["allowed_features"] = None
        expected = min(
            brute_force(X, y, w, **dict(opts, allowed_features=np.arange(X.shape[1]) == f))
            for f in range(X.shape[1])
        )
        res = solve(X, y, w, max_distinct_features=1, **opts)
        assert res.objective == pytest.approx(expected, abs=tolerance(y)), seed


def test_prepared_data_keeps_its_loss_and_refuses_another():
    X = np.arange(8.0)[:, None]
    y = np.array([0.0, 0, 0, 5, 5, 5, 0, 0])
    data = prepare(X, y, loss="absolute")
    assert solve(data, max_depth=2).objective == 0.0
    assert solve(data, max_depth=1).objective == 10.0  # {0, 0, 0} | {5, 5, 5, 0, 0}: median 5, two rows off by 5
    with pytest.raises(ValueError, match="differs from the ExactData"):
        solve(data, max_depth=1, loss="squared")
    with pytest.raises(ValueError, match="loss must be one of"):
        prepare(X, y, loss="huber")
    with pytest.raises(ValueError, match="finite"):
        prepare(X, np.r_[y[:-1], np.nan], loss="squared")


def test_leaves_predict_mean_or_median():
    X = np.array([[0.0], [0.0], [0.0], [1.0], [1.0], [1.0]])
    y = np.array([1.0, 2.0, 9.0, 10.0, 10.0, 40.0])
    squared = solve(X, y, max_depth=1, loss="squared").tree
    absolute = solve(X, y, max_depth=1, loss="absolute").tree
    np.testing.assert_allclose(squared.predict(np.array([[0.0], [1.0]])), [4.0, 20.0])
    np.testing.assert_allclose(absolute.predict(np.array([[0.0], [1.0]])), [2.0, 10.0])


def test_two_threads_find_the_same_regression_optimum():
    for seed in range(900, 940):
        X, y, w, opts = regression_instance(seed, depth=3)
        expected = brute_force(X, y, w, **opts)
        res = solve(X, y, w, threads=2, **opts)
        assert res.objective == pytest.approx(expected, abs=tolerance(y)), seed


@pytest.mark.slow
@pytest.mark.parametrize("depth", [2, 3])
def test_squared_error_optimum_equals_streed_on_all_midpoints(depth):
    """The engine and the default OptimalTreeRegressor against STreeD (pystreed) on every midpoint as a binary
    feature, on real and generated sets of 60-120 rows (min_samples_leaf 1 and 5)."""
    pytest.importorskip("pystreed")
    from sklearn.datasets import load_diabetes, make_friedman1

    from benchmarks._peers import run_streed
    from optitree import OptimalTreeRegressor

    Xd, yd = load_diabetes(return_X_y=True)
    Xf, yf = make_friedman1(120, n_features=5, random_state=0)
    rng = np.random.RandomState(0)
    Xx = np.round(rng.rand(100, 3), 2)
    yx = ((Xx[:, 0] > 0.5) ^ (Xx[:, 1] > 0.5)) * 2.0 + 0.3 * rng.randn(100)
    for X, y in ((Xd[:80, :4], yd[:80]), (Xf, yf), (Xx, yx)):
        for min_leaf in (1, 5):
            peer = run_streed(X, y, depth, time_limit=300, min_samples_leaf=min_leaf)
            assert peer["status"] == "optimal"
            ours = solve(X, y, max_depth=depth, loss="squared", min_samples_leaf=min_leaf)
            assert ours.status == "optimal"
            assert ours.objective == pytest.approx(peer["sse"], rel=1e-9, abs=1e-9)
            reg = OptimalTreeRegressor(max_depth=depth, min_samples_leaf=min_leaf).fit(X, y)
            assert reg.result_.proven_optimal
            assert float(((y - reg.predict(X)) ** 2).sum()) == pytest.approx(peer["sse"], rel=1e-9, abs=1e-9)
