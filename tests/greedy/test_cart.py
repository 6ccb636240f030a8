"""Greedy CART: splits against brute force, tie-break, growth rules, estimator API, bad input."""

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError

from greedy import AdditiveCriterion, CARTClassifier, CARTRegressor, register_criterion
from greedy._criteria import _NAMES, _REGISTRY, Gini


# ---------------------------------------------------------------------- brute force reference
def _impurity(y, w, criterion):
    if criterion == "squared_error":
        return np.average((y - np.average(y, weights=w)) ** 2, weights=w)
    if criterion == "absolute_error":
        order = np.argsort(y)
        cum = np.cumsum(w[order])
        median = y[order][np.searchsorted(cum, 0.5 * cum[-1], side="right")]
        return np.average(np.abs(y - median), weights=w)
    p = np.bincount(y, weights=w) / w.sum()
    p = p[p > 0]
    return {"gini": 1 - (p**2).sum(), "entropy": -(p * np.log2(p)).sum(), "misclassification": 1 - p.max()}[criterion]


def _brute_force_splits(X, y, w, criterion, min_samples_leaf=1):
    """All admissible (gain, feature, threshold) of the root, by explicit loops."""
    X = X.astype(np.float32)
    out = []
    for f in range(X.shape[1]):
        values = np.unique(X[:, f])
        for lo, hi in zip(values[:-1], values[1:]):
            t = float(lo) / 2 + float(hi) / 2
            left = X[:, f] <= t
            if min(left.sum(), (~left).sum()) < min_samples_leaf:
                continue
            gain = (w.sum() * _impurity(y, w, criterion) - w[left].sum() * _impurity(y[left], w[left], criterion)
                    - w[~left].sum() * _impurity(y[~left], w[~left], criterion))
            out.append((gain, f, t))
    return out


CRITERIA = [("classification", c) for c in ("gini", "entropy", "misclassification")] + [
    ("regression", c) for c in ("squared_error", "absolute_error")]


@pytest.mark.parametrize("task, criterion", CRITERIA)
@pytest.mark.parametrize("weighted", [False, True])
def test_root_split_is_the_brute_force_best(task, criterion, weighted):
    rng = np.random.RandomState(0)
    X = rng.rand(60, 4)
    y = rng.randint(0, 3, 60) if task == "classification" else np.round(rng.randn(60) + 2 * X[:, 1], 1)
    w = rng.uniform(0.2, 2.0, 60) if weighted else np.ones(60)
    est = (CARTClassifier if task == "classification" else CARTRegressor)(criterion=criterion, max_depth=1,
                                                                         min_samples_leaf=3)
    est.fit(X, y, sample_weight=w if weighted else None)
    splits = _brute_force_splits(X, y, w, criterion, min_samples_leaf=3)
    best = max(g for g, _, _ in splits)
    tree = est.tree_
    chosen = [g for g, f, t in splits if f == tree.feature[0] and t == tree.threshold[0]]
    assert chosen and chosen[0] == pytest.approx(best, rel=1e-10, abs=1e-12)
    # the documented tie-break: lowest feature, then lowest threshold among the best
    near = [(f, t) for g, f, t in splits if g >= best - 1e-10 * abs(best)]
    assert (tree.feature[0], tree.threshold[0]) == min(near)


def test_tie_break_lowest_feature_then_lowest_threshold():
    # x = 1..4 with y = 0, 1, 1, 0: thresholds 1.5 and 3.5 have the same gain on both copies
    X = np.array([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0], [4.0, 4.0]])
    y = np.array([0, 1, 1, 0])
    tree = CARTClassifier(max_depth=1).fit(X, y).tree_
    assert tree.feature[0] == 0 and tree.threshold[0] == 1.5
    tree = CARTClassifier(max_depth=1).fit(X * [-1, 1], y).tree_  # feature 0 negated: ties at -3.5 and -1.5
    assert tree.feature[0] == 0 and tree.threshold[0] == -3.5


def test_near_equal_values_are_not_split_like_scikit_learn():
    # 1e-3 and 1e-3 + 5e-8 are distinct float32 values closer than 1e-7: no threshold between them
    from sklearn.tree import DecisionTreeClassifier

    X = np.array([[0.0], [0.0], [1e-3], [1e-3 + 5e-8], [2e-3]])
    assert np.float32(X[3, 0]) != np.float32(X[2, 0])
    y = np.array([0, 0, 1, 0, 1])
    tree = CARTClassifier().fit(X, y).tree_
    thresholds = tree.threshold[tree.feature >= 0]
    assert not np.any((thresholds > np.float32(1e-3)) & (thresholds < np.float32(1e-3 + 5e-8)))
    ref = DecisionTreeClassifier(random_state=0).fit(X, y).tree_
    np.testing.assert_array_equal(np.sort(thresholds), np.sort(ref.threshold[ref.feature >= 0]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_xor_defeats_greedy_depth_two(seed):
    rng = np.random.RandomState(seed)
    X = rng.uniform(0, 1, (200, 2))
    y = (X[:, 0] > 0.5) ^ (X[:, 1] > 0.5)
    assert CARTClassifier(max_depth=2).fit(X, y).score(X, y) < 0.9
    assert CARTClassifier(max_depth=12).fit(X, y).score(X, y) == 1.0


def test_best_first_growth_expands_the_best_leaf_each_time():
    rng = np.random.RandomState(0)
    X = rng.rand(400, 4)
    y = X[:, 0] + np.sin(5 * X[:, 1]) + 0.1 * rng.randn(400)
    Xf = X.astype(np.float32).astype(float)
    previous = CARTRegressor(max_leaf_nodes=2).fit(X, y).tree_
    for k in range(3, 12):
        tree = CARTRegressor(max_leaf_nodes=k).fit(X, y).tree_
        assert tree.n_leaves == k and tree.node_count == 2 * k - 1
        # the tree with one more leaf extends the previous one by expanding one of its leaves,
        # numbered 2k-3 and 2k-2 (creation order, left child first)
        n = previous.node_count
        expanded = np.flatnonzero(tree.children_left[:n] != previous.children_left)
        assert expanded.size == 1 and previous.children_left[expanded[0]] == -1
        assert (tree.children_left[expanded[0]], tree.children_right[expanded[0]]) == (n, n + 1)
        np.testing.assert_array_equal(np.delete(tree.feature[:n], expanded), np.delete(previous.feature, expanded))
        # ... and that leaf is the one whose best split decreases the weighted impurity most
        path = previous.decision_path(Xf).toarray().astype(bool)
        gains = {}
        for leaf in np.flatnonzero(previous.children_left == -1):
            rows = path[:, leaf]
            stump = CARTRegressor(max_depth=1).fit(X[rows], y[rows]).tree_
            if stump.node_count == 3:
                w, imp = stump.weighted_n_node_samples, stump.impurity
                gains[leaf] = w[0] * imp[0] - w[1] * imp[1] - w[2] * imp[2]
        assert gains[expanded[0]] == pytest.approx(max(gains.values()), rel=1e-9)
        previous = tree


def test_max_features_draws_are_seeded_and_splits_are_best_on_their_feature():
    rng = np.random.RandomState(0)
    X = rng.rand(300, 8)
    y = (X[:, 0] + X[:, 3] + 0.2 * rng.randn(300) > 1).astype(int)
    a = CARTClassifier(max_features=2, random_state=3, max_depth=4).fit(X, y).tree_
    b = CARTClassifier(max_features=2, random_state=3, max_depth=4).fit(X, y).tree_
    assert a == b
    c = CARTClassifier(max_features=2, random_state=4, max_depth=4).fit(X, y).tree_
    assert a != c
    full = CARTClassifier(max_features=8, random_state=5, max_depth=4).fit(X, y).tree_
    assert full == CARTClassifier(max_depth=4).fit(X, y).tree_
    # every split of ``a`` is the best threshold on its own feature, for the node's samples
    path = a.decision_path(X.astype(np.float32).astype(float)).toarray().astype(bool)
    for node in np.flatnonzero(a.children_left >= 0):
        rows = path[:, node]
        f = a.feature[node]
        splits = _brute_force_splits(X[rows][:, [f]], y[rows], np.ones(rows.sum()), "gini")
        best = max(g for g, _, _ in splits)
        assert max(g for g, _, t in splits if t == a.threshold[node]) == pytest.approx(best, rel=1e-12)


def test_labels_keep_their_original_values():
    rng = np.random.RandomState(0)
    X = rng.rand(90, 3)
    codes = (X[:, 0] * 3).astype(int)
    for labels in (np.array(["cat", "dog", "emu"]), np.array([-5, 10, 200])):
        y = labels[codes]
        est = CARTClassifier(max_depth=3).fit(X, y)
        np.testing.assert_array_equal(est.classes_, np.sort(labels))
        assert est.n_classes_ == 3
        assert set(est.predict(X)) <= set(labels)
        assert est.score(X, y) > 0.9
        proba = est.predict_proba(X)
        np.testing.assert_array_equal(est.classes_[proba.argmax(1)], est.predict(X))
        np.testing.assert_allclose(est.predict_log_proba(X)[proba > 0], np.log(proba[proba > 0]))


def test_dataframe_feature_names_and_tree_statistics():
    pd = pytest.importorskip("pandas")
    rng = np.random.RandomState(1)
    X = pd.DataFrame(rng.rand(100, 3), columns=["a", "b", "c"])
    y = (X["b"] > 0.4).astype(int).to_numpy()
    w = rng.uniform(0.5, 2, 100)
    est = CARTClassifier(max_depth=2).fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(est.feature_names_in_, ["a", "b", "c"])
    assert est.n_features_in_ == 3
    tree = est.tree_
    assert tree.feature[0] == 1
    np.testing.assert_allclose(tree.value[0], np.bincount(y, weights=w))  # weighted class counts
    np.testing.assert_allclose(tree.weighted_n_node_samples[0], w.sum())
    assert est.feature_importances_[1] == 1.0
    leaves = est.apply(X)
    path = est.decision_path(X)
    assert np.all(path[np.arange(100), leaves] == 1) and np.all(path[:, 0].toarray() == 1)
    assert est.get_depth() == 1 and est.get_n_leaves() == 2  # pure after one split


def test_absolute_error_leaf_is_the_weighted_median_with_midpoint_rule():
    X = np.zeros((4, 1))
    y = np.array([1.0, 2.0, 4.0, 10.0])
    # weights 1, 1, 1, 1: cumulative weight reaches exactly half at 2 -> midpoint (2 + 4) / 2
    assert CARTRegressor(criterion="absolute_error").fit(X, y).predict([[0.0]])[0] == 3.0
    # weights 1, 3, 1, 1: the median is 2 (cumulative 4 > 3 first at y = 2)
    est = CARTRegressor(criterion="absolute_error").fit(X, y, sample_weight=[1, 3, 1, 1])
    assert est.predict([[0.0]])[0] == 2.0
    assert est.tree_.impurity[0] == pytest.approx((1 + 0 + 2 + 8) / 6)


def test_registered_criterion_is_accepted(monkeypatch):
    monkeypatch.setitem(_NAMES, "classification", set(_NAMES["classification"]))
    monkeypatch.setattr("greedy._criteria._REGISTRY", dict(_REGISTRY))
    names = _NAMES["classification"]

    class GiniCopy(Gini):
        name = "gini_copy"

    register_criterion(GiniCopy)
    assert "gini_copy" in names
    X = np.random.RandomState(0).rand(80, 3)
    y = (X[:, 0] > X[:, 1]).astype(int)
    # the estimator's constraint holds the live set: patch the class attribute to it
    monkeypatch.setitem(CARTClassifier._parameter_constraints, "criterion",
                        [type(CARTClassifier._parameter_constraints["criterion"][0])(names)])
    a = CARTClassifier(criterion="gini_copy", max_depth=3).fit(X, y).tree_
    assert a == CARTClassifier(max_depth=3).fit(X, y).tree_
    with pytest.raises(ValueError, match="already registered"):

        @register_criterion
        class Clash(AdditiveCriterion):
            name, task = "gini_copy", "regression"


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize("Est", [CARTClassifier, CARTRegressor])
def test_bad_input_raises_clear_errors(Est):
    X = np.random.RandomState(0).rand(10, 2)
    y = np.arange(10) % 2
    with pytest.raises(ValueError, match="infinity"):  # NaN is a missing value (greedy/test_categorical_missing.py)
        Est().fit(np.where(X > 0.9, np.inf, X), y)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        Est().fit(X, y[:-1])
    with pytest.raises(ValueError, match="0 sample"):
        Est().fit(X[:0], y[:0])
    with pytest.raises(ValueError, match="[Nn]egative"):
        Est().fit(X, y, sample_weight=-np.ones(10))
    with pytest.raises(ValueError, match="non-zero"):
        Est().fit(X, y, sample_weight=np.zeros(10))
    with pytest.raises(ValueError, match="sample_weight"):
        Est().fit(X, y, sample_weight=np.ones(3))
    with pytest.raises(TypeError):
        from scipy import sparse

        Est().fit(sparse.csr_matrix(X), y)
    fitted = Est().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        fitted.predict(X[:, :1])
    for params in (dict(max_depth=0), dict(criterion="nope"), dict(min_samples_leaf=0), dict(min_samples_split=1),
                   dict(max_leaf_nodes=1), dict(min_impurity_decrease=-1.0), dict(max_features="all"),
                   dict(min_weight_fraction_leaf=0.7)):
        with pytest.raises(InvalidParameterError):
            Est(**params).fit(X, y)


def test_classifier_rejects_continuous_targets_and_regressor_nan_targets():
    X = np.random.RandomState(0).rand(10, 2)
    with pytest.raises(ValueError, match="Unknown label type"):
        CARTClassifier().fit(X, np.linspace(0, 1, 10))
    with pytest.raises(ValueError, match="NaN"):
        CARTRegressor().fit(X, np.r_[np.nan, np.ones(9)])
