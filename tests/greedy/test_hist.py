"""Histogram split search (greedy/_hist.py) against scikit-learn and brute force."""

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from greedy import CARTClassifier, CARTRegressor, Tree
from greedy import _hist
from greedy._hist import FeatureBinner, build_hist_tree
from support.trees import walk_compare


def make_data(seed, n=500, n_features=4):
    rng = np.random.default_rng(seed)
    # float32-representable values: scikit-learn compares in float32
    X = rng.random((n, n_features)).astype(np.float32).astype(np.float64)
    p = 1 / (1 + np.exp(-6 * (X[:, 0] - X[:, 1])))
    y = (rng.random(n) < p).astype(int) + (X[:, 2] > 0.6)
    y_reg = np.sin(4 * X[:, 0]) + X[:, 1] + 0.1 * rng.normal(size=n)
    w = rng.integers(1, 5, n).astype(float)  # integer weights: exact sums on both sides
    return X, y, y_reg, w


PARAMS = [
    dict(max_depth=4),
    dict(min_samples_leaf=5),
    dict(min_samples_split=30),
    dict(min_impurity_decrease=0.002),
    dict(max_leaf_nodes=12),
    dict(min_weight_fraction_leaf=0.02),
]


@pytest.mark.parametrize("criterion", ["gini", "entropy", "squared_error"])
@pytest.mark.parametrize("weighted", [False, True])
def test_same_splits_as_sklearn_when_every_value_has_a_bin(criterion, weighted):
    X, y, y_reg, w = make_data(0)
    regression = criterion == "squared_error"
    target = y_reg if regression else y
    sw = w if weighted else None
    total_ties = total = 0
    for params in PARAMS:
        est = (DecisionTreeRegressor if regression else DecisionTreeClassifier)(criterion=criterion, random_state=0)
        ref = Tree.from_sklearn(est.set_params(**params).fit(X, target, sample_weight=sw))
        ours_params = dict(params)
        if "min_weight_fraction_leaf" in ours_params:
            total_weight = w.sum() if weighted else len(y)
            ours_params["min_weight_leaf"] = ours_params.pop("min_weight_fraction_leaf") * total_weight
        ours = build_hist_tree(
            X, target, sw, task="regression" if regression else "classification", criterion=criterion,
            max_bins=1000, **ours_params,
        )
        matched, ties = walk_compare(ref, ours)
        total_ties, total = total_ties + ties, total + matched
    assert total_ties <= 0.05 * total  # ties are rare: the comparison covers almost every node


def test_exact_tree_arrays_regression():
    """Without ties (continuous target, big leaves) the depth-first arrays are identical."""
    X, _, y_reg, _ = make_data(1, n=800)
    ref = DecisionTreeRegressor(min_samples_leaf=10, random_state=0).fit(X, y_reg)
    ours = build_hist_tree(X, y_reg, task="regression", min_samples_leaf=10, max_bins=1000)
    ref_tree = Tree.from_sklearn(ref)
    np.testing.assert_array_equal(ours.children_left, ref_tree.children_left)
    np.testing.assert_array_equal(ours.feature, ref_tree.feature)
    np.testing.assert_allclose(ours.threshold, ref_tree.threshold, rtol=1e-12)
    np.testing.assert_allclose(ours.value, ref_tree.value, rtol=1e-9)
    np.testing.assert_allclose(ours.predict(X), ref.predict(X), rtol=1e-9)


def test_feature_binner_edges_between_distinct_values_and_ties_together():
    rng = np.random.default_rng(0)
    col = np.concatenate([np.repeat(0.5, 300), rng.normal(size=700)])  # a heavy tie
    X = np.c_[col, rng.integers(0, 5, 1000), rng.random(1000)]
    b = FeatureBinner(16).fit(X)
    codes = b.transform(X)
    assert codes.dtype == np.uint8 and codes.shape == (3, 1000)
    for j in range(3):
        distinct = np.unique(X[:, j])
        edges = b.bin_edges_[j]
        assert b.n_bins_[j] <= 16
        # every edge lies strictly between two consecutive distinct values
        k = np.searchsorted(distinct, edges)
        assert np.all((distinct[k - 1] < edges) & (edges < distinct[k]))
        # equal values share a bin; bins are ordered like the values
        for v in distinct:
            assert np.unique(codes[j][X[:, j] == v]).size == 1
        order = np.argsort(X[:, j], kind="stable")
        assert np.all(np.diff(codes[j][order].astype(int)) >= 0)
    assert b.n_bins_[1] == 5  # few distinct values: one bin each
    # quantile bins of the continuous feature hold about n / max_bins samples each
    counts = np.bincount(codes[2])
    assert counts.size == 16 and counts.min() >= 1000 / 16 - 2 and counts.max() <= 1000 / 16 + 2
    assert FeatureBinner(300).fit_transform(X).dtype == np.uint16


@pytest.mark.parametrize("criterion", ["gini", "entropy"])
def test_stump_is_best_over_bin_boundaries_brute_force(criterion):
    """With coarse bins the split is the best among the bin-boundary partitions (brute force)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 3))
    y = (X[:, 1] + 0.5 * rng.normal(size=300) > 0.3).astype(int)
    binner = FeatureBinner(8).fit(X)
    tree = build_hist_tree(X, y, max_depth=1, criterion=criterion, binner=binner)

    def impurity(labels):
        p = np.bincount(labels, minlength=2) / labels.size
        return 1 - (p**2).sum() if criterion == "gini" else -sum(q * np.log2(q) for q in p if q > 0)

    best = (np.inf, None)
    for j in range(3):
        for e in binner.bin_edges_[j]:
            left = X[:, j] <= e
            cost = left.sum() * impurity(y[left]) + (~left).sum() * impurity(y[~left])
            if cost < best[0] - 1e-12:
                best = (cost, (j, left))
    j, left = best[1]
    assert tree.feature[0] == j
    np.testing.assert_array_equal(X[:, j] <= tree.threshold[0], left)
    # the threshold is the midpoint of the closest values on either side
    assert tree.threshold[0] == pytest.approx((X[left, j].max() + X[~left, j].min()) / 2)


def test_depth_8_tree_on_binned_data_is_consistent():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5000, 6))
    y = (X[:, 0] * X[:, 1] > 0).astype(int) + (X[:, 2] > 1)
    tree = build_hist_tree(X, y, max_depth=8, max_bins=32)
    assert tree.max_depth <= 8
    refit = tree.fill_statistics(X, y)  # statistics recomputed by routing the raw data
    np.testing.assert_allclose(refit.value, tree.value)
    np.testing.assert_array_equal(refit.n_node_samples, tree.n_node_samples)
    acc = (tree.predict(X).argmax(1) == y).mean()
    ref = DecisionTreeClassifier(max_depth=8, random_state=0).fit(X, y).score(X, y)
    assert acc > ref - 0.02


def test_chunked_levels_give_the_same_tree(monkeypatch):
    X, y, y_reg, w = make_data(2, n=400)
    full = build_hist_tree(X, y, w, max_bins=64)
    full_reg = build_hist_tree(X, y_reg, task="regression", max_bins=64, min_samples_leaf=2)
    monkeypatch.setattr(_hist, "_MAX_CELLS", 300)
    assert build_hist_tree(X, y, w, max_bins=64) == full
    assert build_hist_tree(X, y_reg, task="regression", max_bins=64, min_samples_leaf=2) == full_reg


def test_zero_weight_samples_are_ignored():
    X, y, _, w = make_data(4, n=300)
    w = w.copy()
    w[::3] = 0
    keep = w > 0
    a = build_hist_tree(X, y, w, max_bins=1000)
    b = build_hist_tree(X[keep], y[keep], w[keep], max_bins=1000)
    assert a == b


def test_max_features_extends_past_constant_features_like_sklearn():
    """Only feature 0 varies: with max_features=1 every node must still split on it."""
    rng = np.random.default_rng(0)
    X = np.zeros((200, 5))
    X[:, 0] = rng.random(200).astype(np.float32)
    y = (np.sin(12 * X[:, 0]) > 0).astype(int)
    ours = build_hist_tree(X, y, max_features=1, random_state=0, max_bins=1000)
    ref = Tree.from_sklearn(DecisionTreeClassifier(max_features=1, random_state=0).fit(X, y))
    walk_compare(ref, ours)
    assert set(ours.feature[~ours.is_leaf]) == {0}


def test_max_features_draws_are_seeded():
    X, y, _, _ = make_data(5, n=300, n_features=8)
    a = build_hist_tree(X, y, max_features=2, random_state=1, max_depth=5)
    assert a == build_hist_tree(X, y, max_features=2, random_state=1, max_depth=5)
    roots = {build_hist_tree(X, y, max_features=1, random_state=s, max_depth=1).feature[0] for s in range(12)}
    assert len(roots) > 2  # the root's single candidate feature is random
    assert build_hist_tree(X, y, max_features=8, random_state=3) == build_hist_tree(X, y)


@pytest.mark.parametrize("max_bins", [1, 0, 65536, -3])
def test_bad_max_bins(max_bins):
    with pytest.raises(ValueError, match="max_bins"):
        FeatureBinner(max_bins).fit(np.zeros((3, 1)))


def test_bad_inputs():
    X = np.random.default_rng(0).random((10, 2))
    y = np.arange(10) % 2
    with pytest.raises(TypeError, match="max_bins"):
        build_hist_tree(X, y, max_bins=2.5)
    with pytest.raises(ValueError, match="missing"):
        build_hist_tree(np.where(X > 0.9, np.nan, X), y)
    with pytest.raises(ValueError, match="not supported with splitter='hist'"):
        build_hist_tree(X, y, criterion="absolute_error")
    with pytest.raises(ValueError, match="sample_weight"):
        build_hist_tree(X, y, -np.ones(10))
    with pytest.raises(ValueError, match="class codes"):
        build_hist_tree(X, y - 1)
    b = FeatureBinner(4).fit(X)
    with pytest.raises(ValueError, match="features"):
        b.transform(np.zeros((2, 3)))


# ---------------------------------------------------------------------------- estimator option splitter="hist"
@pytest.mark.parametrize("Est, criterion", [(CARTClassifier, "gini"), (CARTClassifier, "entropy"),
                                            (CARTRegressor, "squared_error")])
@pytest.mark.parametrize("params", [dict(min_samples_leaf=3), dict(max_leaf_nodes=15), dict(max_depth=5)])
def test_hist_estimator_matches_exact_splitter(Est, criterion, params):
    X, y, y_reg, w = make_data(6, n=400)
    target = y_reg if Est is CARTRegressor else y
    exact = Est(criterion=criterion, **params).fit(X, target, sample_weight=w)
    hist = Est(criterion=criterion, splitter="hist", max_bins=1000, **params).fit(X, target, sample_weight=w)
    matched, ties = walk_compare(exact.tree_, hist.tree_)
    assert ties <= 0.05 * matched


def test_hist_estimator_coarse_bins_and_options():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 5))
    y = np.where(X[:, 0] + X[:, 1] ** 2 > 1, "yes", "no")
    clf = CARTClassifier(splitter="hist", max_bins=16, max_depth=6, max_features=3, random_state=0).fit(X, y)
    ref = DecisionTreeClassifier(max_depth=6, max_features=3, random_state=0).fit(X, y)
    assert clf.score(X, y) > ref.score(X, y) - 0.03
    assert set(clf.predict(X)) <= {"yes", "no"}
    again = CARTClassifier(splitter="hist", max_bins=16, max_depth=6, max_features=3, random_state=0).fit(X, y)
    assert again.tree_ == clf.tree_


@pytest.mark.parametrize("max_bins", [1, 65536, 2.5])
def test_hist_estimator_rejects_bad_max_bins(max_bins):
    X, y, _, _ = make_data(0, n=20)
    with pytest.raises((ValueError, TypeError), match="max_bins"):
        CARTClassifier(splitter="hist", max_bins=max_bins).fit(X, y)


def test_hist_estimator_rejects_unsupported_criterion():
    X, y, _, _ = make_data(0, n=20)
    with pytest.raises(ValueError, match="not supported with splitter='hist'"):
        CARTClassifier(splitter="hist", criterion="misclassification").fit(X, y)
    with pytest.raises(ValueError, match="not supported with splitter='hist'"):
        CARTRegressor(splitter="hist", criterion="absolute_error").fit(X, y.astype(float))


def test_hist_estimator_rejects_missing_values_and_categorical_features():
    X, y, _, _ = make_data(0, n=40)
    X_nan = X.copy()
    X_nan[3, 1] = np.nan
    with pytest.raises(ValueError, match="does not support missing"):
        CARTClassifier(splitter="hist").fit(X_nan, y)
    assert CARTClassifier(splitter="hist").__sklearn_tags__().input_tags.allow_nan is False
    X_cat = X.copy()
    X_cat[:, 0] = np.arange(40) % 3
    with pytest.raises(ValueError, match="splitter='hist' does not support categorical"):
        CARTClassifier(splitter="hist", categorical_features=[0]).fit(X_cat, y)
