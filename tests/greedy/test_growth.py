"""One growth loop (greedy/_builder.py) for both split searches, and one criterion registry.

The histogram search is a splitter behind the same builder as the exact search: where every
feature value has its own bin it must give scikit-learn's trees (depth-first and best-first,
node numbering included) and the exact splitter's trees byte for byte.
"""

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from greedy import CARTClassifier, CARTRegressor, Tree, register_criterion
from greedy._criteria import _NAMES, _REGISTRY, Gini
from greedy._hist import build_hist_tree


def _continuous(task, n, seed):
    rng = np.random.RandomState(seed)
    X = rng.rand(n, 5).astype(np.float32).astype(np.float64)
    f = 3 * X[:, 0] + np.sin(4 * X[:, 1]) + X[:, 2] * X[:, 3]
    if task == "regression":
        return X, f + 0.3 * rng.randn(n)
    return X, (f + 0.3 * rng.randn(n) > np.median(f)).astype(int) + (X[:, 4] > 0.7)


CASES = [  # (task, criterion, max_depth, min_samples_leaf, max_leaf_nodes): tie-free at these sizes
    ("classification", "gini", 4, 5, None),
    ("classification", "entropy", 3, 1, None),
    ("classification", "gini", None, 1, 16),
    ("classification", "entropy", 6, 5, 10),
    ("regression", "squared_error", 5, 5, None),
    ("regression", "squared_error", 8, 5, 30),
]


@pytest.mark.parametrize("task, criterion, max_depth, min_samples_leaf, max_leaf_nodes", CASES)
def test_hist_splitter_gives_sklearns_tree_when_every_value_has_a_bin(task, criterion, max_depth, min_samples_leaf,
                                                                       max_leaf_nodes):
    X, y = _continuous(task, 1500, seed=0)
    params = dict(criterion=criterion, max_depth=max_depth, min_samples_leaf=min_samples_leaf,
                  max_leaf_nodes=max_leaf_nodes)
    Ours, Ref = (CARTClassifier, DecisionTreeClassifier) if task == "classification" else \
        (CARTRegressor, DecisionTreeRegressor)
    ours = Ours(splitter="hist", max_bins=2000, **params).fit(X, y).tree_
    ref = Tree.from_sklearn(Ref(random_state=0, **params).fit(X, y))
    np.testing.assert_array_equal(ours.children_left, ref.children_left)  # same numbering, best-first too
    np.testing.assert_array_equal(ours.children_right, ref.children_right)
    np.testing.assert_array_equal(ours.feature, ref.feature)
    np.testing.assert_array_equal(ours.threshold, ref.threshold)
    np.testing.assert_array_equal(ours.n_node_samples, ref.n_node_samples)
    np.testing.assert_allclose(ours.value, ref.value, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ours.impurity, ref.impurity, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("criterion", ["gini", "entropy"])
@pytest.mark.parametrize("max_leaf_nodes", [None, 12])
@pytest.mark.parametrize("options", [{}, dict(min_samples_leaf=4), dict(min_weight_fraction_leaf=0.03),
                                     dict(min_impurity_decrease=0.003)])
def test_hist_and_exact_splitters_give_the_same_tree_on_few_distinct_values(criterion, max_leaf_nodes, options):
    """Integer weights and few distinct values: every sum is exact in both searches, so the
    builder must produce the same tree whichever splitter searches."""
    rng = np.random.RandomState(3)
    X = rng.randint(0, 9, size=(500, 5)).astype(float)
    y = (X[:, 0] + X[:, 1] * (X[:, 2] > 4) + rng.randint(0, 4, 500) > 8).astype(int) + (X[:, 3] > 6)
    w = rng.randint(0, 4, 500).astype(float)
    params = dict(criterion=criterion, max_depth=6, max_leaf_nodes=max_leaf_nodes, **options)
    exact = CARTClassifier(**params).fit(X, y, sample_weight=w).tree_
    hist = CARTClassifier(splitter="hist", **params).fit(X, y, sample_weight=w).tree_
    assert hist.to_dict() == exact.to_dict()


def test_registered_criterion_reaches_the_histogram_search(monkeypatch):
    monkeypatch.setitem(_NAMES, "classification", set(_NAMES["classification"]))
    monkeypatch.setattr("greedy._criteria._REGISTRY", dict(_REGISTRY))

    @register_criterion
    class GiniAgain(Gini):
        name = "gini_again"

    monkeypatch.setitem(CARTClassifier._parameter_constraints, "criterion",
                        [type(CARTClassifier._parameter_constraints["criterion"][0])(_NAMES["classification"])])
    X, y = _continuous("classification", 400, seed=1)
    again = CARTClassifier(criterion="gini_again", splitter="hist", max_depth=4).fit(X, y).tree_
    assert again == CARTClassifier(splitter="hist", max_depth=4).fit(X, y).tree_
    assert build_hist_tree(X, y, criterion="gini_again", max_depth=4) == again


def test_correlation_criterion_with_the_histogram_search():
    """Any additive criterion works with the histogram search: on few distinct values the
    correlation criterion splits as with the exact search."""
    rng = np.random.RandomState(0)
    X = rng.randint(0, 20, size=(300, 2)).astype(float)
    y = np.where(X[:, 0] < 10, 2 * X[:, 0], 30 - X[:, 0]) + 0.1 * rng.randn(300)
    exact = CARTRegressor(criterion="correlation", max_depth=2).fit(X, y).tree_
    hist = CARTRegressor(criterion="correlation", splitter="hist", max_depth=2).fit(X, y).tree_
    np.testing.assert_array_equal(hist.feature, exact.feature)
    np.testing.assert_array_equal(hist.threshold, exact.threshold)
