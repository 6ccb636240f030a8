"""Parity of greedy CART with scikit-learn's DecisionTreeClassifier / DecisionTreeRegressor.

scikit-learn visits features in a random order (even with ``max_features=None``) and keeps
the first of equally good splits, while greedy breaks exact ties by the lowest feature index.
Exact ties are common on real data (two features isolating the same samples, or the same
class counts in small nodes), so the comparison is done in two ways:

* **strict** on random continuous data where no tie occurs (verified by the walk below):
  identical structure (features, thresholds to float equality, node counts), statistics, and
  predictions on training and held-out data;
* **up to ties** on the bundled data sets: the two trees are walked in parallel; wherever they
  first differ, both splits must have the same weighted impurity decrease, computed here
  independently from the node's samples; every sample whose path avoids such tie nodes must
  get identical predictions, on the training and the held-out part.

A second benign difference: scikit-learn sums a node's weight and its class weights in
different orders, so with fractional sample weights a pure node can get an impurity of a few
ulps above ``eps`` and be split with zero gain; greedy gives pure nodes impurity 0 exactly.
Such zero-gain splits of pure nodes are accepted (the predictions are the same).
"""

import numpy as np
import pytest
from sklearn import datasets
from sklearn.model_selection import train_test_split
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from greedy import CARTClassifier, CARTRegressor, Tree


# ---------------------------------------------------------------------- independent reference
def _impurity(y, w, criterion, n_classes):
    if criterion == "squared_error":
        mean = np.average(y, weights=w)
        return np.average((y - mean) ** 2, weights=w)
    if criterion == "absolute_error":
        order = np.argsort(y)
        cum = np.cumsum(w[order])
        median = y[order][np.searchsorted(cum, 0.5 * cum[-1], side="right")]
        return np.average(np.abs(y - median), weights=w)
    counts = np.bincount(y, weights=w, minlength=n_classes)
    p = counts[counts > 0] / counts.sum()
    return 1.0 - (p**2).sum() if criterion == "gini" else -(p * np.log2(p)).sum()


def _gain(x, threshold, y, w, criterion, n_classes):
    """Weighted impurity decrease of the split ``x <= threshold`` of one node."""
    left = x <= threshold
    return (
        w.sum() * _impurity(y, w, criterion, n_classes)
        - w[left].sum() * _impurity(y[left], w[left], criterion, n_classes)
        - w[~left].sum() * _impurity(y[~left], w[~left], criterion, n_classes)
    )


def walk(ours: Tree, theirs: Tree, X, y, w, criterion, n_classes=0):
    """Walk both trees in parallel.

    Returns ``(matched, ties, mismatches)``: the number of identical nodes, the node pairs
    ``(i, j)`` where the trees take different splits of equal gain (or scikit-learn splits a
    pure node with zero gain), and the pairs that differ otherwise.
    """
    X = X.astype(np.float32).astype(np.float64)
    matched, ties, mismatches = 0, [], []
    stack = [(0, 0, np.arange(len(y)))]
    while stack:
        i, j, idx = stack.pop()
        leaf_i, leaf_j = ours.children_left[i] == -1, theirs.children_left[j] == -1
        same = leaf_i == leaf_j and (leaf_i or (ours.feature[i] == theirs.feature[j]
                                                and ours.threshold[i] == theirs.threshold[j]))
        if same:
            matched += 1
            if not leaf_i:
                left = X[idx, ours.feature[i]] <= ours.threshold[i]
                stack.append((ours.children_left[i], theirs.children_left[j], idx[left]))
                stack.append((ours.children_right[i], theirs.children_right[j], idx[~left]))
            continue
        gains = [0.0 if leaf else _gain(X[idx, t.feature[k]], t.threshold[k], y[idx], w[idx], criterion, n_classes)
                 for leaf, t, k in ((leaf_i, ours, i), (leaf_j, theirs, j))]
        scale = max(abs(gains[0]), abs(gains[1]), 1e-12 * w[idx].sum())
        equal = abs(gains[0] - gains[1]) <= 1e-9 * scale
        pure_split = leaf_i and ours.impurity[i] == 0 and theirs.impurity[j] < 1e-12
        (ties if (equal and leaf_i == leaf_j) or pure_split else mismatches).append((i, j))
    return matched, ties, mismatches


def _avoiding(tree: Tree, X, nodes) -> np.ndarray:
    """Samples whose path through ``tree`` visits none of ``nodes``."""
    if not len(nodes):
        return np.ones(X.shape[0], bool)
    path = tree.decision_path(X.astype(np.float32).astype(np.float64))
    return np.asarray(path[:, list(nodes)].sum(axis=1)).ravel() == 0


def _fit_pair(task, X, y, sample_weight=None, **params):
    ours_cls, ref_cls = (CARTClassifier, DecisionTreeClassifier) if task == "classification" else (
        CARTRegressor, DecisionTreeRegressor)
    ours = ours_cls(**params).fit(X, y, sample_weight=sample_weight)
    ref = ref_cls(random_state=0, **params).fit(X, y, sample_weight=sample_weight)
    return ours, ref


def _predictions(est, X):
    return est.predict_proba(X) if hasattr(est, "predict_proba") else est.predict(X)


def _random_data(task, n, n_features, seed):
    rng = np.random.RandomState(seed)
    X = rng.rand(n, n_features)
    f = 3 * X[:, 0] + np.sin(4 * X[:, 1]) + X[:, 2] * X[:, 3]
    if task == "regression":
        return X, f + 0.3 * rng.randn(n)
    return X, (f + 0.3 * rng.randn(n) > np.median(f)).astype(int) + (X[:, 4] > 0.7)


# ---------------------------------------------------------------------- strict parity
STRICT = [
    # (task, criterion, max_depth, min_samples_leaf, max_leaf_nodes); random continuous data
    *[("regression", "squared_error", d, msl, None) for d in (1, 2, 3, 4, 5, 6, 7, 8) for msl in (5, 20)],
    *[("regression", "squared_error", d, 1, None) for d in (1, 3, 5)],
    ("regression", "squared_error", 8, 5, 30),
    ("regression", "squared_error", None, 1, 12),
    *[("classification", c, d, msl, None) for c in ("gini", "entropy") for d in (1, 2, 3, 4) for msl in (1, 5)],
    ("classification", "gini", None, 1, 16),
    ("classification", "entropy", 6, 5, 10),
]


@pytest.mark.parametrize("task, criterion, max_depth, min_samples_leaf, max_leaf_nodes", STRICT)
def test_strict_parity_on_continuous_data(task, criterion, max_depth, min_samples_leaf, max_leaf_nodes):
    X, y = _random_data(task, 3000, 6, seed=0)
    X_test, _ = _random_data(task, 1000, 6, seed=1)
    ours, ref = _fit_pair(task, X, y, criterion=criterion, max_depth=max_depth, min_samples_leaf=min_samples_leaf,
                          max_leaf_nodes=max_leaf_nodes)
    a, b = ours.tree_, Tree.from_sklearn(ref)
    codes = y if task == "regression" else np.unique(y, return_inverse=True)[1]
    _, ties, mismatches = walk(a, b, X, codes, np.ones(len(y)), criterion, 3)
    assert not ties and not mismatches
    assert a.node_count == b.node_count
    np.testing.assert_array_equal(a.children_left, b.children_left)
    np.testing.assert_array_equal(a.feature, b.feature)
    np.testing.assert_array_equal(a.threshold, b.threshold)  # NaN at leaves on both sides
    np.testing.assert_array_equal(a.n_node_samples, b.n_node_samples)
    np.testing.assert_allclose(a.weighted_n_node_samples, b.weighted_n_node_samples)
    np.testing.assert_allclose(a.value, b.value, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(a.impurity, b.impurity, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ours.feature_importances_, ref.feature_importances_, rtol=1e-9, atol=1e-12)
    for data in (X, X_test):
        if task == "classification":
            np.testing.assert_array_equal(ours.predict(data), ref.predict(data))
        np.testing.assert_allclose(_predictions(ours, data), _predictions(ref, data), rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(ours.apply(data), ref.apply(data))
    assert ours.get_depth() == ref.get_depth() and ours.get_n_leaves() == ref.get_n_leaves()


# ---------------------------------------------------------------------- parity up to ties
LOADERS = {
    "iris": datasets.load_iris,
    "wine": datasets.load_wine,
    "breast_cancer": datasets.load_breast_cancer,
    "digits": datasets.load_digits,
    "diabetes": datasets.load_diabetes,
}
DATA_CASES = [
    (name, criterion, max_depth, min_samples_leaf, max_leaf_nodes)
    for name in LOADERS
    for criterion in (("squared_error",) if name == "diabetes" else ("gini", "entropy"))
    for max_depth, min_samples_leaf, max_leaf_nodes in ((1, 1, None), (2, 1, None), (3, 5, None), (5, 1, None),
                                                        (8, 1, None), (8, 5, None), (8, 1, 8))
]


@pytest.mark.parametrize("name, criterion, max_depth, min_samples_leaf, max_leaf_nodes", DATA_CASES)
def test_parity_up_to_ties_on_bundled_datasets(name, criterion, max_depth, min_samples_leaf, max_leaf_nodes):
    X, y = LOADERS[name](return_X_y=True)
    task = "regression" if name == "diabetes" else "classification"
    X_train, X_test, y_train, _ = train_test_split(X, y, test_size=0.3, random_state=0)
    ours, ref = _fit_pair(task, X_train, y_train, criterion=criterion, max_depth=max_depth,
                          min_samples_leaf=min_samples_leaf, max_leaf_nodes=max_leaf_nodes)
    a, b = ours.tree_, Tree.from_sklearn(ref)
    codes = y_train if task == "regression" else np.unique(y_train, return_inverse=True)[1]
    matched, ties, mismatches = walk(a, b, X_train, codes, np.ones(len(y_train)), criterion, len(np.unique(y)))
    assert not mismatches
    for data in (X_train, X_test):
        comparable = _avoiding(a, data, [i for i, _ in ties]) & _avoiding(b, data, [j for _, j in ties])
        np.testing.assert_allclose(_predictions(ours, data)[comparable], _predictions(ref, data)[comparable],
                                   rtol=1e-12, atol=1e-12)
    if not ties:
        assert a.node_count == b.node_count and matched == a.node_count


def test_most_bundled_cases_are_tie_free_at_the_top():
    """Guard against a walk that calls everything a tie: shallow trees agree exactly."""
    tie_free = 0
    for name, criterion, max_depth, msl, mln in DATA_CASES:
        if max_depth > 2 or name == "iris":
            continue
        X, y = LOADERS[name](return_X_y=True)
        task = "regression" if name == "diabetes" else "classification"
        ours, ref = _fit_pair(task, X, y, criterion=criterion, max_depth=max_depth)
        tie_free += ours.tree_.node_count == ref.tree_.node_count and np.array_equal(
            ours.tree_.threshold, Tree.from_sklearn(ref).threshold, equal_nan=True)
    assert tie_free >= 12  # wine, breast_cancer, digits (2 criteria) and diabetes, depths 1-2: 14 cases


def test_iris_root_is_an_exact_tie_broken_by_lowest_feature():
    """Petal length (2) and petal width (3) both isolate setosa; greedy takes feature 2."""
    X, y = datasets.load_iris(return_X_y=True)
    ours, ref = _fit_pair("classification", X, y, max_depth=1)
    assert ours.tree_.feature[0] == 2 and ref.tree_.feature[0] in (2, 3)
    _, ties, mismatches = walk(ours.tree_, Tree.from_sklearn(ref), X, y, np.ones(150), "gini", 3)
    assert not mismatches
    np.testing.assert_array_equal(ours.predict(X), ref.predict(X))


@pytest.mark.parametrize("task, criterion", [("classification", "gini"), ("classification", "entropy"),
                                             ("regression", "squared_error"), ("regression", "absolute_error")])
def test_parity_with_sample_weights(task, criterion):
    X, y = _random_data(task, 1500, 6, seed=2)
    X_test, _ = _random_data(task, 500, 6, seed=3)
    w = np.random.RandomState(4).uniform(0.5, 1.5, len(y))
    w[::17] = 0.0  # zero-weight samples are ignored by both
    ours, ref = _fit_pair(task, X, y, sample_weight=w, criterion=criterion, max_depth=6, min_samples_leaf=5)
    a, b = ours.tree_, Tree.from_sklearn(ref)
    codes = y if task == "regression" else np.unique(y, return_inverse=True)[1]
    _, ties, mismatches = walk(a, b, X, codes, w, criterion, 3)
    assert not mismatches
    for data in (X, X_test):
        comparable = _avoiding(a, data, [i for i, _ in ties]) & _avoiding(b, data, [j for _, j in ties])
        assert comparable.mean() > 0.5
        np.testing.assert_allclose(_predictions(ours, data)[comparable], _predictions(ref, data)[comparable],
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("max_depth, min_samples_leaf, max_leaf_nodes", [(3, 1, None), (6, 10, None), (None, 5, 15)])
def test_absolute_error_parity(max_depth, min_samples_leaf, max_leaf_nodes):
    X, y = _random_data("regression", 800, 5, seed=5)
    ours, ref = _fit_pair("regression", X, y, criterion="absolute_error", max_depth=max_depth,
                          min_samples_leaf=min_samples_leaf, max_leaf_nodes=max_leaf_nodes)
    a, b = ours.tree_, Tree.from_sklearn(ref)
    _, ties, mismatches = walk(a, b, X, y, np.ones(len(y)), "absolute_error")
    assert not mismatches
    comparable = _avoiding(a, X, [i for i, _ in ties]) & _avoiding(b, X, [j for _, j in ties])
    assert comparable.mean() > 0.5
    np.testing.assert_allclose(ours.predict(X)[comparable], ref.predict(X)[comparable], rtol=1e-12)


@pytest.mark.parametrize("params", [dict(min_impurity_decrease=0.002), dict(min_weight_fraction_leaf=0.05),
                                    dict(min_samples_split=40), dict(min_samples_leaf=0.02, max_depth=6),
                                    dict(min_samples_split=0.05)])
def test_stopping_rules_match_scikit_learn(params):
    X, y = _random_data("regression", 2000, 6, seed=6)
    ours, ref = _fit_pair("regression", X, y, **params)
    np.testing.assert_array_equal(ours.tree_.feature, Tree.from_sklearn(ref).feature)
    np.testing.assert_array_equal(ours.tree_.threshold, Tree.from_sklearn(ref).threshold)
