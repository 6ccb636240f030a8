"""Linear-leaf model trees and the correlation criterion (greedy/_linear.py)."""

import numpy as np
import pytest
from sklearn.linear_model import LinearRegression
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from greedy import Tree
from greedy._linear import correlation_entry_stats, correlation_impurity, fit_linear_leaves


def stump(threshold=0.5, n_features=1):
    return Tree([1, -1, -1], [2, -1, -1], [0, -2, -2], [threshold, np.nan, np.nan], [[0.0], [0.0], [0.0]],
                n_features=n_features, task="regression")


def test_piecewise_linear_target_is_recovered_exactly():
    x = np.linspace(0, 1, 41)
    y = np.where(x <= 0.5, 2 * x + 1, -3 * x + 4)
    tree = fit_linear_leaves(stump(0.5), x[:, None], y)
    np.testing.assert_allclose(tree.leaf_coef[1:, 0], [2, -3], atol=1e-12)
    np.testing.assert_allclose(tree.leaf_intercept[1:], [1, 4], atol=1e-12)
    np.testing.assert_allclose(tree.predict(x[:, None]), y, atol=1e-12)
    xs = np.array([[-1.0], [2.0]])  # linear extrapolation outside the training range
    np.testing.assert_allclose(tree.predict(xs), [-1.0, -2.0], atol=1e-12)


def test_weighted_fit_matches_sklearn_linear_regression_per_leaf():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = X @ [1.0, -2.0, 0.5] + np.where(X[:, 0] > 0, 3.0, 0.0) + rng.normal(size=200)
    w = rng.random(200) + 0.1
    base = Tree.from_sklearn(DecisionTreeRegressor(max_depth=2, random_state=0).fit(X, y, sample_weight=w))
    tree = fit_linear_leaves(base, X, y, sample_weight=w)
    leaf_of = tree.apply(X)
    for node in range(tree.node_count):
        rows = np.flatnonzero(tree.decision_path(X)[:, node].toarray().ravel())
        ref = LinearRegression().fit(X[rows], y[rows], sample_weight=w[rows])
        np.testing.assert_allclose(tree.leaf_coef[node], ref.coef_, rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(tree.leaf_intercept[node], ref.intercept_, rtol=1e-8, atol=1e-10)
    pred = np.einsum("ij,ij->i", X, tree.leaf_coef[leaf_of]) + tree.leaf_intercept[leaf_of]
    np.testing.assert_allclose(tree.predict(X), pred)


def test_small_leaves_fall_back_to_constant_and_collinear_leaves_do_not_crash():
    rng = np.random.default_rng(1)
    X = rng.random((30, 3))
    X[:, 2] = 2 * X[:, 1]  # collinear features: minimum-norm least squares
    y = X[:, 0] + X[:, 1] + 0.01 * rng.normal(size=30)
    threshold = np.sort(X[:, 0])[2]  # leaf 1 gets 3 samples < n_features + 1
    tree = fit_linear_leaves(stump(threshold, n_features=3), X, y)
    left = X[:, 0] <= threshold
    assert left.sum() == 3
    np.testing.assert_array_equal(tree.leaf_coef[1], 0.0)
    assert tree.leaf_intercept[1] == pytest.approx(y[left].mean())
    # the right leaf: minimum-norm split of the collinear pair (c1 + 2 c2 ~ 1, c1 = c2 / 2)
    c = tree.leaf_coef[2]
    assert c[0] == pytest.approx(1.0, abs=0.05)
    assert c[1] + 2 * c[2] == pytest.approx(1.0, abs=0.05) and c[2] == pytest.approx(2 * c[1], rel=1e-6)
    assert np.all(np.isfinite(tree.predict(X)))


def test_linear_leaves_bad_input():
    X = np.random.default_rng(0).random((10, 1))
    y = X[:, 0]
    with pytest.raises(ValueError, match="missing"):
        fit_linear_leaves(stump(), np.where(X > 0.5, np.nan, X), y)
    with pytest.raises(ValueError, match="shape"):
        fit_linear_leaves(stump(), np.c_[X, X], y)
    with pytest.raises(ValueError, match="regression"):
        clf = Tree.from_sklearn(DecisionTreeClassifier(max_depth=1).fit(X, y > 0.5))
        fit_linear_leaves(clf, X, y)
    with pytest.raises(ValueError, match="sample_weight"):
        fit_linear_leaves(stump(), X, y, sample_weight=-np.ones(10))


def test_correlation_impurity_matches_numpy_corrcoef():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    y = 2 * X[:, 0] - X[:, 1] + rng.normal(size=50)
    sums = correlation_entry_stats(X, y, np.ones(50)).sum(0)
    rho = [np.corrcoef(X[:, j], y)[0, 1] for j in range(3)]
    assert correlation_impurity(sums, 3) == pytest.approx(1 - abs(np.mean(rho)), rel=1e-10)
    # integer weights = repeated samples
    w = rng.integers(1, 4, 50)
    sums_w = correlation_entry_stats(X, y, w.astype(float)).sum(0)
    Xr, yr = np.repeat(X, w, 0), np.repeat(y, w)
    rho_w = [np.corrcoef(Xr[:, j], yr)[0, 1] for j in range(3)]
    assert correlation_impurity(sums_w, 3) == pytest.approx(1 - abs(np.mean(rho_w)), rel=1e-10)
    # a perfectly linear target in one feature; a constant feature counts as rho = 0
    Xc = np.c_[X[:, 0], np.ones(50)]
    sums_c = correlation_entry_stats(Xc, 3 * X[:, 0] + 1, np.ones(50)).sum(0)
    assert correlation_impurity(sums_c, 2) == pytest.approx(0.5)
    # a constant target: every correlation is 0, impurity 1
    assert correlation_impurity(correlation_entry_stats(X, np.ones(50), np.ones(50)).sum(0), 3) == 1.0


# ---------------------------------------------------------------------------- estimator options
def sine_wave():
    """100 points of one period of a sine, x uniform in [0, 2 pi], noise sd 0.1, seed 0."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 2 * np.pi, 100)
    return x[:, None], np.sin(x) + 0.1 * rng.normal(size=100)


@pytest.mark.parametrize("size", [dict(max_leaf_nodes=4), dict(max_depth=2)])
def test_sine_wave_four_linear_leaves_beat_four_constant_leaves(size):
    from greedy import CARTRegressor

    X, y = sine_wave()
    mse = {}
    for name, params in [("constant", {}), ("linear", dict(leaf_model="linear")),
                         ("correlation+linear", dict(criterion="correlation", leaf_model="linear"))]:
        model = CARTRegressor(**params, **size).fit(X, y)
        assert model.get_n_leaves() <= 4
        mse[name] = float(np.mean((model.predict(X) - y) ** 2))
    print(f"\nsine wave, {size}: training MSE " + ", ".join(f"{k} {v:.4f}" for k, v in mse.items()))
    assert mse["linear"] < mse["constant"]
    assert mse["correlation+linear"] < mse["constant"]


def test_correlation_root_split_is_best_by_brute_force():
    from greedy import CARTRegressor

    X, y = sine_wave()
    X = np.c_[X, np.random.default_rng(1).random(100)]
    X = X.astype(np.float32).astype(np.float64)
    model = CARTRegressor(criterion="correlation", max_depth=1).fit(X, y)

    def impurity(rows):
        rho = [np.corrcoef(X[rows, j], y[rows])[0, 1] for j in range(2)]
        return 1 - abs(np.mean(rho))

    best = (np.inf, None)
    for j in range(2):
        v = np.unique(X[:, j])
        for t in (v[2:-3] + v[3:-2]) / 2:  # at least 3 samples a side (2 points always correlate fully)
            left = X[:, j] <= t
            cost = left.sum() * impurity(left) + (~left).sum() * impurity(~left)
            best = min(best, (cost, (j, t)), key=lambda c: c[0])
    tree = model.tree_
    left = X[:, tree.feature[0]] <= tree.threshold[0]
    if min(left.sum(), (~left).sum()) >= 3:
        ours = left.sum() * impurity(left) + (~left).sum() * impurity(~left)
        assert ours == pytest.approx(best[0], rel=1e-9)
    assert tree.impurity[0] == pytest.approx(impurity(np.ones(100, bool)), rel=1e-9)


def test_linear_leaf_estimator_fallback_pruning_and_weights():
    from greedy import CARTRegressor

    rng = np.random.default_rng(0)
    X = rng.random((6, 8))  # fewer samples than features: every node keeps a constant model
    y = rng.random(6)
    model = CARTRegressor(leaf_model="linear").fit(X, y)
    np.testing.assert_array_equal(model.tree_.leaf_coef, 0.0)
    np.testing.assert_allclose(model.predict(X), CARTRegressor().fit(X, y).predict(X))
    # weights = repetitions
    X, y = sine_wave()
    w = rng.integers(1, 4, 100)
    a = CARTRegressor(leaf_model="linear", max_depth=2).fit(X, y, sample_weight=w.astype(float))
    b = CARTRegressor(leaf_model="linear", max_depth=2).fit(np.repeat(X, w, 0), np.repeat(y, w))
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-9)
    # reduced-error pruning evaluates the nodes' linear models: on a line the root's own model is
    # exact, so the whole tree collapses (with constant leaves the root would be the worst node)
    x_line = (np.arange(64) / 64)[:, None]
    line = CARTRegressor(leaf_model="linear", max_depth=3).fit(x_line, 2 * x_line[:, 0] + 1)
    assert line.tree_.node_count == 15
    x_val = np.array([[0.1], [0.45], [0.9]])
    assert line.prune_reduced_error(x_val, 2 * x_val[:, 0] + 1).tree_.node_count == 1
    np.testing.assert_allclose(line.predict(x_val), 2 * x_val[:, 0] + 1)
    # ccp_alpha prunes first, then the remaining leaves get their models: one leaf = a line fit
    X32 = X.astype(np.float32).astype(np.float64)  # the estimators compute in float32 features
    root = CARTRegressor(leaf_model="linear", ccp_alpha=1.0).fit(X32, y)
    assert root.tree_.node_count == 1
    np.testing.assert_allclose(root.predict(X32), np.polyval(np.polyfit(X32[:, 0], y, 1), X32[:, 0]), rtol=1e-9)


def test_linear_leaf_estimator_rejects_bad_options():
    from greedy import CARTClassifier, CARTRegressor

    X, y = sine_wave()
    with pytest.raises(ValueError, match="leaf_model"):
        CARTRegressor(leaf_model="quadratic").fit(X, y)
    with pytest.raises(TypeError):
        CARTClassifier(leaf_model="linear")


def test_linear_leaves_refuse_missing_values():
    from greedy import CARTRegressor

    X, y = sine_wave()
    X_nan = X.copy()
    X_nan[5, 0] = np.nan
    with pytest.raises(ValueError, match="missing"):
        CARTRegressor(leaf_model="linear").fit(X_nan, y)
    model = CARTRegressor(leaf_model="linear", max_depth=2).fit(X, y)
    with pytest.raises(ValueError, match="missing"):
        model.predict(X_nan)
    assert CARTRegressor(leaf_model="linear").__sklearn_tags__().input_tags.allow_nan is False
    assert CARTRegressor().__sklearn_tags__().input_tags.allow_nan is True


# ---------------------------------------------------------------------------- splits chosen for linear leaves
def _linear_sse(X, y, w):
    """Weighted least-squares residual of ``y ~ 1 + X`` by numpy (the constant model below F + 1 points)."""
    A = np.c_[np.ones(len(y)), X] if len(y) >= X.shape[1] + 1 else np.ones((len(y), 1))
    root = np.sqrt(w)
    coef, *_ = np.linalg.lstsq(A * root[:, None], y * root, rcond=None)
    return float(np.sum(w * (y - A @ coef) ** 2))


def _brute_force_root(X, y, w, min_samples_leaf):
    best = (np.inf, None)
    for j in range(X.shape[1]):
        v = np.unique(X[:, j])
        for t in (v[:-1] + v[1:]) / 2:
            left = X[:, j] <= t
            if min(left.sum(), (~left).sum()) < min_samples_leaf:
                continue
            cost = _linear_sse(X[left], y[left], w[left]) + _linear_sse(X[~left], y[~left], w[~left])
            best = min(best, (cost, (j, t)), key=lambda c: c[0])
    return best


@pytest.mark.parametrize("weighted", [False, True])
def test_linear_leaves_split_where_the_leaf_models_fit_best_by_default(weighted):
    """Root split of a depth-1 model tree = the brute-force split minimising the two linear
    leaves' squared errors (y = x0 - x1 on one side, 2 + 3 x1 on the other: opposite signs)."""
    from greedy import CARTRegressor

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (120, 2)).astype(np.float32).astype(np.float64)
    y = np.where(X[:, 0] > 0.2, X[:, 0] - X[:, 1], 2 + 3 * X[:, 1]) + 0.05 * rng.normal(size=120)
    w = rng.integers(1, 4, 120).astype(float) if weighted else np.ones(120)
    model = CARTRegressor(max_depth=1, min_samples_leaf=3, leaf_model="linear").fit(X, y, sample_weight=w)
    cost, (feature, threshold) = _brute_force_root(X, y, w, 3)
    assert model.tree_.feature[0] == feature
    assert model.tree_.threshold[0] == pytest.approx(threshold)
    assert np.sum(w * (model.predict(X) - y) ** 2) == pytest.approx(cost, rel=1e-9)


def test_linear_squared_error_impurity_is_the_least_squares_residual():
    from greedy import CARTRegressor

    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 3)).astype(np.float32).astype(np.float64)  # the estimator's float32 features
    y = X @ [1.0, -2.0, 0.5] + np.where(X[:, 0] > 0, 3.0, 0.0) + 0.1 * rng.normal(size=60)
    w = rng.uniform(0.5, 2.0, 60)
    model = CARTRegressor(criterion="linear_squared_error", max_depth=3, min_samples_leaf=2).fit(X, y, w)
    tree = model.tree_
    members = tree.decision_path(X).toarray().astype(bool)
    for node in range(tree.node_count):
        rows = members[:, node]
        expected = _linear_sse(X[rows], y[rows], w[rows]) / w[rows].sum()  # constant model below 4 points
        spread = np.average((y[rows] - np.average(y[rows], weights=w[rows])) ** 2, weights=w[rows])
        assert tree.impurity[node] == pytest.approx(expected, rel=1e-7, abs=1e-9 * spread)
        assert tree.value[node, 0] == pytest.approx(np.average(y[rows], weights=w[rows]))


def test_sine_wave_default_linear_leaves_beat_squared_error_splits():
    from greedy import CARTRegressor

    X, y = sine_wave()
    default = CARTRegressor(max_leaf_nodes=4, leaf_model="linear").fit(X, y)
    variance_splits = CARTRegressor(max_leaf_nodes=4, leaf_model="linear", criterion="squared_error").fit(X, y)
    mse = {name: float(np.mean((m.predict(X) - y) ** 2)) for name, m in [("default", default),
                                                                          ("squared_error", variance_splits)]}
    assert mse["default"] < 0.5 * mse["squared_error"]
    assert CARTRegressor().fit(X, y).tree_ == CARTRegressor(criterion="squared_error").fit(X, y).tree_


def test_fewer_rows_than_features_cost_no_pairwise_statistics():
    """20 rows of 400 features: no node reaches F + 1 = 401 points, so every node is scored with
    the constant model. The search keeps no F² statistics (once 8 n F³ / 2 bytes: 51 GB here);
    its root split is the brute-force best of the constant leaves' squared errors."""
    import tracemalloc

    from greedy import CARTRegressor

    rng = np.random.default_rng(2)
    X = rng.uniform(size=(20, 400)).astype(np.float32).astype(np.float64)
    y = 4 * X[:, 7] + rng.normal(size=20)
    tracemalloc.start()
    model = CARTRegressor(max_depth=1, leaf_model="linear").fit(X, y)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 50e6
    cost, (feature, threshold) = _brute_force_root(X, y, np.ones(20), 1)
    assert (model.tree_.feature[0], model.tree_.threshold[0]) == (feature, pytest.approx(threshold))
    assert np.sum((model.predict(X) - y) ** 2) == pytest.approx(cost, rel=1e-9)
