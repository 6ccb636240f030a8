"""Extreme magnitudes in greedy CART: they fit exactly or are refused with the supported range.

Truth without trusting the code under test: multiplying targets or features by a power of two
is exact in floating point, so the right tree on scaled data is the tree on the original data
with values (targets) or thresholds (features) multiplied by that power of two.
"""

import numpy as np
import pytest

from greedy import CARTClassifier, CARTRegressor


def _data(n=200, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.rand(n, 3)
    y = np.where(X[:, 0] > 0.5, 3.0, -1.0) + np.where(X[:, 1] > 0.3, 1.0, 0.0) + 0.1 * rng.randn(n)
    return X, y


@pytest.mark.parametrize("splitter", ["best", "hist"])
@pytest.mark.parametrize("criterion, power", [("squared_error", 2), ("correlation", 0)])
def test_huge_targets_give_the_scaled_tree(splitter, criterion, power):
    """2**505 ~ 1e152: squared child sums of the centred targets overflowed before."""
    X, y = _data()
    scale = 2.0**505
    ref = CARTRegressor(criterion=criterion, splitter=splitter, max_depth=3).fit(X, y)
    big = CARTRegressor(criterion=criterion, splitter=splitter, max_depth=3).fit(X, y * scale)
    np.testing.assert_array_equal(big.tree_.feature, ref.tree_.feature)
    np.testing.assert_array_equal(big.tree_.threshold, ref.tree_.threshold)
    np.testing.assert_array_equal(big.tree_.value, ref.tree_.value * scale)
    if power:
        np.testing.assert_array_equal(big.tree_.impurity, ref.tree_.impurity * scale**power)
    np.testing.assert_array_equal(big.predict(X), ref.predict(X) * scale)


def test_absolute_error_targets_near_the_float64_limit():
    X, y = _data()
    scale = 2.0**1010  # ~1e304: weighted sums of |y| over 200 samples overflow unscaled
    ref = CARTRegressor(criterion="absolute_error", max_depth=2).fit(X, y)
    big = CARTRegressor(criterion="absolute_error", max_depth=2).fit(X, y * scale)
    np.testing.assert_array_equal(big.tree_.threshold, ref.tree_.threshold)
    np.testing.assert_array_equal(big.tree_.value, ref.tree_.value * scale)
    np.testing.assert_array_equal(big.tree_.impurity, ref.tree_.impurity * scale)


@pytest.mark.parametrize("criterion, scale", [("squared_error", 1e154), ("squared_error", 1e300),
                                              ("absolute_error", 1e306)])
def test_targets_beyond_the_supported_range_are_refused(criterion, scale):
    X, y = _data()
    with pytest.raises(ValueError, match=r"supports regression targets with \|y\| < .*e\+.*Rescale y"):
        CARTRegressor(criterion=criterion).fit(X, y * scale)


@pytest.mark.parametrize("splitter", ["best", "hist"])
@pytest.mark.parametrize("scale", [2.0**1000, 2.0**-1000, 2.0**130])
def test_features_beyond_float32_give_the_scaled_tree(splitter, scale):
    """~1e301, ~1e-301 and ~1e39: float32 overflows (an error before) or flushes to zero (a
    single leaf before); the tree must be the unscaled one with thresholds times ``scale``."""
    X, y = _data()
    labels = (y > 1).astype(int)
    ref = CARTClassifier(splitter=splitter, max_depth=3).fit(X.astype(np.float32), labels)
    big = CARTClassifier(splitter=splitter, max_depth=3).fit(X.astype(np.float32).astype(float) * scale, labels)
    split = ~ref.tree_.is_leaf
    np.testing.assert_array_equal(big.tree_.feature, ref.tree_.feature)
    np.testing.assert_array_equal(big.tree_.threshold[split], ref.tree_.threshold[split] * scale)
    np.testing.assert_array_equal(big.predict(X.astype(np.float32).astype(float) * scale), ref.predict(X))
    reg = CARTRegressor(splitter=splitter, max_depth=3).fit(X.astype(np.float32).astype(float) * scale, y)
    assert reg.score(X.astype(np.float32).astype(float) * scale, y) == pytest.approx(
        CARTRegressor(splitter=splitter, max_depth=3).fit(X.astype(np.float32), y).score(X, y))


@pytest.mark.parametrize("splitter", ["best", "hist"])
@pytest.mark.parametrize("scale", [2.0**1000, 2.0**-1000])
@pytest.mark.parametrize("options", [dict(max_depth=3), dict(max_leaf_nodes=6, min_weight_fraction_leaf=0.05)])
def test_huge_and_tiny_sample_weights_give_the_scaled_tree(splitter, scale, options):
    """Squared weighted counts overflowed (a single leaf) or underflowed before."""
    X, y = _data()
    w = np.random.RandomState(1).randint(1, 4, len(y)).astype(float)
    labels = (y > 1).astype(int)
    for Est, target in ((CARTClassifier, labels), (CARTRegressor, y)):
        ref = Est(splitter=splitter, **options).fit(X, target, sample_weight=w).tree_
        got = Est(splitter=splitter, **options).fit(X, target, sample_weight=w * scale).tree_
        np.testing.assert_array_equal(got.threshold, ref.threshold)
        np.testing.assert_array_equal(got.weighted_n_node_samples, ref.weighted_n_node_samples * scale)
        np.testing.assert_array_equal(got.value, ref.value * (scale if Est is CARTClassifier else 1.0))
        np.testing.assert_array_equal(got.impurity, ref.impurity)


@pytest.mark.parametrize("splitter, criterion, power", [
    ("best", "squared_error", 2), ("hist", "squared_error", 2), ("best", "absolute_error", 1),
    ("best", "linear_squared_error", 2), ("hist", "linear_squared_error", 2)])
def test_tiny_targets_give_the_scaled_tree(splitter, criterion, power):
    """Targets ~1e-12: squared errors below float64's epsilon made the root a leaf."""
    X, y = _data()
    scale = 2.0**-40
    ref = CARTRegressor(criterion=criterion, splitter=splitter, max_depth=3, min_samples_leaf=5).fit(X, y)
    tiny = CARTRegressor(criterion=criterion, splitter=splitter, max_depth=3, min_samples_leaf=5).fit(X, y * scale)
    assert ref.tree_.node_count > 1
    np.testing.assert_array_equal(tiny.tree_.threshold, ref.tree_.threshold)
    np.testing.assert_array_equal(tiny.tree_.value, ref.tree_.value * scale)
    np.testing.assert_allclose(tiny.tree_.impurity, ref.tree_.impurity * scale**power, rtol=1e-12)


@pytest.mark.parametrize("splitter", ["best", "hist"])
def test_largest_finite_magnitudes(splitter):
    """Features, weights and (correlation) targets near the largest float64, 1.8e308."""
    X, y = _data()
    top = np.finfo(np.float64).max
    X_big = X.astype(np.float32).astype(float) / 2 * top  # in [0, top / 2): halving first keeps it finite
    X_big[0, 0], X_big[1, 0] = -top, top
    labels = (y > 1).astype(int)
    weight = np.full(len(y), top / (2 * len(y)))  # huge weights whose sum is finite
    est = CARTClassifier(splitter=splitter, max_depth=3).fit(X_big, labels, sample_weight=weight)
    assert np.all(np.isfinite(est.tree_.threshold[~est.tree_.is_leaf]))
    assert np.all(np.isfinite(est.tree_.value)) and est.score(X_big, labels) > 0.9
    with pytest.raises(ValueError, match="sample_weight must sum to at most 1.8e\\+308"):
        CARTClassifier(splitter=splitter).fit(X, labels, sample_weight=np.full(len(y), top))
    reg = CARTRegressor(criterion="correlation", splitter=splitter, max_depth=2).fit(X, y / 8 * top)
    assert np.all(np.isfinite(reg.predict(X)))


@pytest.mark.parametrize("x_scale, w_scale", [(2.0**40, 2.0**990), (2.0**-1000, 1.0), (2.0**1000, 2.0**-1000)])
def test_linear_leaves_with_extreme_magnitudes(x_scale, w_scale):
    """Weighted means overflowed (NaN leaves) and least squares on subnormal columns failed
    ("SVD did not converge") before; the model tree must predict as on unscaled data."""
    X, y = _data()
    X = X.astype(np.float32).astype(float)
    w = np.random.RandomState(2).randint(1, 4, len(y)).astype(float)
    ref = CARTRegressor(leaf_model="linear", max_depth=2, min_samples_leaf=10).fit(X, y, sample_weight=w)
    got = CARTRegressor(leaf_model="linear", max_depth=2, min_samples_leaf=10).fit(X * x_scale, y,
                                                                                 sample_weight=w * w_scale)
    np.testing.assert_array_equal(got.tree_.feature, ref.tree_.feature)
    np.testing.assert_allclose(got.predict(X * x_scale), ref.predict(X), rtol=1e-9)
