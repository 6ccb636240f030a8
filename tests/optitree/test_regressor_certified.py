"""OptimalTreeRegressor certified by the exact engine, with and without user constraints, against brute force."""

import numpy as np
import pytest

from greedy import CARTRegressor
from optitree import OptimalTreeRegressor
from support.regression_bruteforce import brute_force, leaf_loss, training_loss

CRITERION = {"squared": "squared_error", "absolute": "absolute_error"}


def instance(seed, n=14, p=3):
    rng = np.random.RandomState(seed)
    X = rng.randint(0, 5, (n, p)).astype(float)
    y = [rng.randn(n), rng.randint(0, 4, n).astype(float) * 10.0][seed % 2]
    w = rng.choice([0.5, 1.0, 2.0], n) if seed % 3 == 0 else np.ones(n)
    return X, y, w


@pytest.mark.parametrize("loss", ["squared", "absolute"])
def test_default_fit_is_the_brute_force_optimum_and_never_worse_than_cart(loss):
    for seed in range(25):
        X, y, w = instance(seed)
        depth, min_leaf = 1 + seed % 3, 1 + seed % 2
        alpha = 0.05 if seed % 4 == 0 else 0.0  # a fraction of the baseline loss per split
        est = OptimalTreeRegressor(max_depth=depth, loss=loss, alpha=alpha, min_samples_leaf=min_leaf)
        est.fit(X, y, sample_weight=w)
        baseline = leaf_loss(y, w, loss)
        expected = brute_force(X, y, w, depth, alpha * baseline, min_leaf, None, loss)
        got = training_loss(est, X, y, w, loss) + alpha * baseline * est.tree_.n_splits
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-9), seed
        assert est.result_.proven_optimal and est.result_.acceleration["certificate"] == "engine"
        assert est.result_.normalized_objective * baseline == pytest.approx(expected, rel=1e-9, abs=1e-9)
        cart = CARTRegressor(max_depth=depth, criterion=CRITERION[loss], min_samples_leaf=min_leaf).fit(X, y, w)
        assert got <= training_loss(cart, X, y, w, loss) + alpha * baseline * cart.tree_.n_splits + 1e-9


def test_default_loss_is_squared_and_dp_solves_regression():
    assert OptimalTreeRegressor().loss == "squared"
    X, y, w = instance(3)
    dp = OptimalTreeRegressor(max_depth=2, solver="dp").fit(X, y)
    assert dp.result_.proven_optimal and dp.model_ is None
    assert training_loss(dp, X, y, np.ones(len(y)), "squared") == pytest.approx(
        brute_force(X, y, None, 2, 0.0, 1, None, "squared"), abs=1e-9)
    with pytest.raises(ValueError, match="leaf_model='linear' needs a MIP"):
        OptimalTreeRegressor(solver="dp", leaf_model="linear").fit(X, y)
    with pytest.raises(ValueError, match="takes no user constraints"):
        OptimalTreeRegressor(solver="dp", constraints=lambda m: None).fit(X, y)


@pytest.mark.parametrize("loss", ["squared", "absolute"])
def test_target_scale_does_not_change_the_certified_tree(loss):
    X, y, w = instance(11, n=40, p=4)
    trees = []
    for factor in (1e-6, 1.0, 1e9):
        est = OptimalTreeRegressor(max_depth=2, loss=loss).fit(X, y * factor + 5 * factor, sample_weight=w)
        assert est.result_.proven_optimal
        trees.append((est.tree_.feature.tolist(), np.nan_to_num(est.tree_.threshold, nan=-1.0).tolist()))
    assert trees[0] == trees[1] == trees[2]


def forbid(feature, depth):
    import pyomo.environ as pyo

    def constraint(m):
        m.no_feature = pyo.Constraint(expr=sum(m.a[n, feature] for n in range(2**depth - 1)) == 0)

    return constraint


@pytest.mark.parametrize("loss", ["squared", "absolute"])
def test_a_forbidden_feature_in_pyomo_is_proven_like_allowed_features(loss):
    for seed in range(6):
        X, y, w = instance(100 + seed)
        allowed = np.arange(X.shape[1]) != seed % 3
        expected = brute_force(X, y, w, 2, 0.0, 1, allowed, loss)
        est = OptimalTreeRegressor(max_depth=2, loss=loss, time_limit=60, constraints=forbid(seed % 3, 2))
        est.fit(X, y, sample_weight=w)
        assert seed % 3 not in est.tree_.feature.tolist()
        baseline = leaf_loss(y, w, loss)
        assert est.result_.normalized_bound * baseline <= expected + 1e-9
        assert training_loss(est, X, y, w, loss) == pytest.approx(expected, abs=1e-7), seed
        assert est.result_.proven_optimal, est.result_.message
        via_mask = OptimalTreeRegressor(max_depth=2, loss=loss, allowed_features=allowed).fit(X, y, sample_weight=w)
        assert training_loss(via_mask, X, y, w, loss) == pytest.approx(expected, abs=1e-7)


def test_bound_under_a_leaf_size_row_never_exceeds_the_brute_forced_optimum():
    """A minimum leaf size written as Pyomo rows (the engine cannot see them): the MIP proves or bounds."""
    import pyomo.environ as pyo

    for seed in range(4):
        rng = np.random.RandomState(200 + seed)
        X, y = rng.randint(0, 5, (10, 2)).astype(float), rng.randn(10)  # distinct rows: the model's z is per row
        depth, n_min = 2, 3

        def leaf_size(m):
            m.leaf_size = pyo.ConstraintList()
            for t in range(2**depth):
                m.leaf_size.add(sum(m.z[i, t] for i in range(len(y))) >= n_min * m.l[t])

        expected = brute_force(X, y, None, depth, 0.0, n_min, None, "absolute")
        est = OptimalTreeRegressor(max_depth=depth, loss="absolute", time_limit=60, constraints=leaf_size).fit(X, y)
        baseline = leaf_loss(y, np.ones(len(y)), "absolute")
        assert est.result_.normalized_bound * baseline <= expected + 1e-7, seed
        assert training_loss(est, X, y, np.ones(len(y)), "absolute") >= expected - 1e-7
        if est.result_.proven_optimal:
            assert training_loss(est, X, y, np.ones(len(y)), "absolute") == pytest.approx(expected, abs=1e-7)


def test_linear_leaves_start_from_the_engine_and_keep_an_honest_bound():
    rng = np.random.RandomState(0)
    X = rng.rand(60, 3)
    y = np.where(X[:, 0] > 0.5, 3 * X[:, 1], -2 * X[:, 2]) + 0.05 * rng.randn(60)
    est = OptimalTreeRegressor(max_depth=1, leaf_model="linear", time_limit=20).fit(X, y)
    constant = OptimalTreeRegressor(max_depth=1).fit(X, y)
    acc = est.result_.acceleration
    assert acc["stages"] == ["start"] and acc["certificate"] is None
    sse = training_loss(est, X, y, np.ones(60), "squared")
    assert sse <= training_loss(constant, X, y, np.ones(60), "squared") + 1e-9  # never worse than its start
    greedy = CARTRegressor(max_depth=1, leaf_model="linear").fit(X, y)
    assert sse <= training_loss(greedy, X, y, np.ones(60), "squared") * (1 + 1e-6) + 1e-9
    # the engine's constant-leaf optimum is no lower bound for linear leaves
    assert est.result_.bound <= est.result_.objective + 1e-9


def test_a_start_at_the_engines_bound_under_a_pyomo_row_needs_no_mip():
    """Forbidding the informative feature in Pyomo: the root's per-feature bounds (which include a split
    sending every row one way, bounded without the restriction) cannot prove the engine's tree, but
    the engine's own bound under the implied restriction does, before any MIP."""
    rng = np.random.RandomState(0)
    X = rng.rand(60, 3)
    y = np.where(X[:, 0] > 0.5, 5.0, 0.0) + 0.3 * X[:, 1] + 0.1 * rng.randn(60)
    est = OptimalTreeRegressor(max_depth=2, time_limit=60, constraints=forbid(0, 2)).fit(X, y)
    r = est.result_
    assert r.proven_optimal and r.acceleration["certificate"] == "engine bound", r.message
    assert 0 not in est.tree_.feature[~est.tree_.is_leaf]
    expected = brute_force(X, y, None, 2, 0.0, 1, np.arange(3) != 0, "squared")
    assert training_loss(est, X, y, np.ones(60), "squared") == pytest.approx(expected, rel=1e-9)
    assert r.nodes == 0
