"""Tests of the shared tree structure against scikit-learn and hand-built trees."""

import json

import numpy as np
import pytest
from sklearn.datasets import load_diabetes, load_iris
from sklearn.tree import DecisionTreeRegressor

from greedy import OBLIQUE, Tree
from support.trees import stump


def test_from_sklearn_classifier_matches(iris_tree):
    X, _, est, tree = iris_tree
    np.testing.assert_allclose(tree.predict(X), est.predict_proba(X))
    np.testing.assert_array_equal(tree.apply(X), est.apply(X))
    assert (tree.decision_path(X) != est.decision_path(X)).nnz == 0
    assert tree.max_depth == est.get_depth() and tree.n_leaves == est.get_n_leaves()
    np.testing.assert_allclose(tree.compute_feature_importances(), est.feature_importances_)
    # values are weighted class counts, not fractions
    np.testing.assert_allclose(tree.value[0], np.bincount(load_iris().target))


def test_from_sklearn_regressor_matches():
    X, y = load_diabetes(return_X_y=True)
    est = DecisionTreeRegressor(max_depth=4, random_state=0).fit(X, y)
    tree = Tree.from_sklearn(est)
    assert tree.task == "regression" and tree.n_classes == 0
    np.testing.assert_allclose(tree.predict(X), est.predict(X))


def test_deep_unbalanced_tree_routes_as_sklearn_with_and_without_nan():
    # numeric splits over X without NaN take one step per level for every row; with a NaN
    # column unused by the tree the rows take the general route: both must reach sklearn's leaves
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 5)).astype(np.float32).astype(np.float64)
    y = X[:, 0] ** 2 + np.sin(3 * X[:, 1]) + 0.1 * rng.normal(size=400)
    est = DecisionTreeRegressor(max_depth=12, min_samples_leaf=2, random_state=0).fit(X[:, :4], y)
    tree = Tree.from_sklearn(est)
    assert tree.max_depth >= 8 and tree.n_leaves > 50
    expected = est.apply(X[:, :4])
    np.testing.assert_array_equal(tree.apply(X[:, :4]), expected)
    np.testing.assert_allclose(tree.predict(X[:, :4]), est.predict(X[:, :4]))
    rows, leaves, weights = tree.route(X[:, :4])
    np.testing.assert_array_equal(rows, np.arange(400))
    np.testing.assert_array_equal(weights, 1.0)
    routed = Tree.from_dict({**tree.to_dict(), "n_features": 5, "missing_left": np.ones(tree.node_count)})
    with_nan = X.copy()
    with_nan[::7, 4] = np.nan  # a feature the tree never reads
    np.testing.assert_array_equal(routed.apply(with_nan), expected)


def test_json_round_trip(iris_tree):
    X, _, _, tree = iris_tree
    again = Tree.from_json(json.dumps(json.loads(tree.to_json())))
    assert again == tree
    np.testing.assert_array_equal(again.predict(X), tree.predict(X))


def test_fill_statistics_recomputes_counts(iris_tree):
    X, y, est, tree = iris_tree
    bare = Tree(tree.children_left, tree.children_right, tree.feature, tree.threshold, np.zeros_like(tree.value),
                n_features=4)
    filled = bare.fill_statistics(X, y)
    np.testing.assert_allclose(filled.value, tree.value)
    np.testing.assert_array_equal(filled.n_node_samples, est.tree_.n_node_samples)
    np.testing.assert_allclose(filled.impurity, est.tree_.impurity)


def test_from_splits_has_sklearns_statistics_and_checks_its_structure(iris_tree):
    X, y, est, tree = iris_tree
    built = Tree.from_splits(tree.children_left, tree.children_right, tree.feature, tree.threshold, X, y,
                             n_features=4, n_classes=3)
    np.testing.assert_allclose(built.value, tree.value)
    np.testing.assert_array_equal(built.n_node_samples, est.tree_.n_node_samples)
    np.testing.assert_allclose(built.weighted_n_node_samples, est.tree_.weighted_n_node_samples)
    np.testing.assert_allclose(built.impurity, est.tree_.impurity)
    np.testing.assert_array_equal(built.apply(X), est.apply(X))
    weighted = Tree.from_splits([1, -1, -1], [2, -1, -1], [0, -2, -2], [1.5, np.nan, np.nan],
                                [[0.0], [1], [2], [3]], [1.0, 3.0, 10.0, 20.0], [1, 1, 2, 2], n_features=1,
                                task="regression")
    np.testing.assert_allclose(weighted.value[:, 0], [(1 + 3 + 20 + 40) / 6, 2.0, 15.0])
    with pytest.raises(ValueError, match="larger than its parent"):  # validated before any routing
        Tree.from_splits([1, 0, -1], [2, 0, -1], [0, 0, -2], [0.5, 0.5, np.nan], X[:, :1], y, n_features=1,
                         n_classes=3)
    with pytest.raises(ValueError, match="n_classes"):
        Tree.from_splits([-1], [-1], [-2], [np.nan], X, y, n_features=4)
    with pytest.raises(ValueError, match="oblique splits need split_coef"):
        Tree.from_splits([1, -1, -1], [2, -1, -1], [OBLIQUE, -2, -2], [0.5, np.nan, np.nan], X, y, n_features=4,
                         n_classes=3)
    with pytest.raises(ValueError, match="NaN"):
        Tree.from_splits([1, -1, -1], [2, -1, -1], [0, -2, -2], [0.5, np.nan, np.nan], [[np.nan]], [0],
                         n_features=1, n_classes=2)


def test_fill_statistics_regression_means():
    X = np.array([[0.0, 0], [1, 0], [2, 0], [3, 0]])
    y = np.array([1.0, 3.0, 10.0, 20.0])
    tree = Tree([1, -1, -1], [2, -1, -1], [0, -2, -2], [1.5, np.nan, np.nan], [[0], [0], [0]],
                n_features=2, task="regression").fill_statistics(X, y)
    np.testing.assert_allclose(tree.value[:, 0], [8.5, 2.0, 15.0])
    np.testing.assert_allclose(tree.impurity, [np.var(y), 1.0, 25.0])


def test_empty_leaf_uses_ancestor_distribution():
    tree = Tree([1, -1, -1], [2, -1, -1], [0, -2, -2], [0.5, np.nan, np.nan],
                [[2, 1], [2, 1], [0, 0]], n_features=1)
    np.testing.assert_allclose(tree.predict([[1.0]]), [[2 / 3, 1 / 3]])


def test_missing_value_routing_averages_branches():
    tree = stump(missing_left=[0.25, 0, 0])
    proba = tree.predict([[np.nan, 0.0], [0.0, 0.0]])
    # 0.25 * [3/4, 1/4] + 0.75 * [0, 1]
    np.testing.assert_allclose(proba[0], [0.1875, 0.8125])
    np.testing.assert_allclose(proba[1], [0.75, 0.25])
    assert tree.apply([[np.nan, 0.0]])[0] == 2  # heavier branch
    np.testing.assert_array_equal(tree.decision_path([[np.nan, 0.0]]).toarray(), [[1, 1, 1]])


def test_nan_without_missing_routing_raises():
    with pytest.raises(ValueError, match="NaN"):
        stump().predict([[np.nan, 0.0]])


def test_categorical_split_and_unseen_codes():
    # categories {0, 2} go left; codes >= 3 are unseen and follow default_left (right)
    mask = np.array([[True, False, True], [False] * 3, [False] * 3])
    tree = Tree([1, -1, -1], [2, -1, -1], [0, -2, -2], [np.nan] * 3, [[3, 5], [3, 1], [0, 4]],
                n_features=1, category_left=mask, default_left=[False, False, False])
    np.testing.assert_array_equal(tree.apply([[0], [1], [2], [7]]), [1, 2, 1, 2])


def test_oblique_split():
    coef = np.zeros((3, 2))
    coef[0] = [1.0, 1.0]
    tree = Tree([1, -1, -1], [2, -1, -1], [OBLIQUE, -2, -2], [1.0, np.nan, np.nan],
                [[1, 1], [1, 0], [0, 1]], n_features=2, split_coef=coef)
    np.testing.assert_array_equal(tree.apply([[0.2, 0.7], [0.6, 0.7]]), [1, 2])


def test_linear_leaves():
    coef = np.array([[0, 0], [2.0, 0], [0, -1.0]])
    tree = Tree([1, -1, -1], [2, -1, -1], [0, -2, -2], [0.5, np.nan, np.nan], [[0], [0], [0]],
                n_features=2, task="regression", leaf_coef=coef, leaf_intercept=[0, 1.0, 3.0])
    np.testing.assert_allclose(tree.predict([[0.25, 9.0], [1.0, 2.0]]), [1.5, 1.0])
    with pytest.raises(ValueError, match="linear leaf"):
        tree.predict([[0.25, np.nan]])  # never a silent zero-fill of the missing coordinate


def test_leaf_class_overrides_the_majority_and_round_trips():
    # left leaf counts [3, 1] but labelled 1; right leaf [1, 3] labelled with its majority
    tree = Tree([1, -1, -1], [2, -1, -1], [0, -2, -2], [0.5, np.nan, np.nan], [[4, 4], [3, 1], [1, 3]],
                n_features=1, leaf_class=[0, 1, 1])
    np.testing.assert_array_equal(tree.node_class, [0, 1, 1])
    # a relabelled leaf gets its label's probabilities alone; the other keeps its distribution
    np.testing.assert_allclose(tree.predict([[0.2], [0.9]]), [[0, 1], [0.25, 0.75]])
    np.testing.assert_array_equal(tree.value[1], [3, 1])  # training counts are kept
    again = Tree.from_json(tree.to_json())
    assert again == tree and again.leaf_class is not None
    np.testing.assert_array_equal(again.leaf_class, [0, 1, 1])
    assert tree != Tree.from_dict({k: v for k, v in tree.to_dict().items() if k != "leaf_class"})
    refit = tree.fill_statistics([[0.2], [0.9]], [0, 0])  # statistics change, labels stay
    np.testing.assert_array_equal(refit.node_class, [0, 1, 1])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(children_left=[1, -1, -1], children_right=[-1, -1, -1]), "exactly one child"),
        (dict(feature=[5, -2, -2]), "split features"),
        (dict(feature=[0, 0, -2]), "leaves must have feature"),
        (dict(threshold=[np.inf, np.nan, np.nan]), "finite"),
        (dict(value=[[1, 2], [3, 4]]), "value has shape"),
        (dict(task="ranking"), "task"),
        (dict(leaf_class=[0, 2, 0]), "leaf_class"),
        (dict(leaf_class=[0, 1]), "leaf_class"),
        (dict(task="regression", value=[[1], [0], [2]], leaf_class=[0, 0, 0]), "leaf_class"),
    ],
)
def test_invalid_trees_raise(kwargs, match):
    base = dict(children_left=[1, -1, -1], children_right=[2, -1, -1], feature=[0, -2, -2],
                threshold=[0.5, np.nan, np.nan], value=[[1, 1], [1, 0], [0, 1]], n_features=2)
    base.update(kwargs)
    with pytest.raises(ValueError, match=match):
        Tree(**base)


def test_child_before_parent_raises():
    # root -> (3, 4), node 3 -> (1, 2): children numbered before their parent
    with pytest.raises(ValueError, match="larger than its parent"):
        Tree([3, -1, -1, 1, -1], [4, -1, -1, 2, -1], [0, -2, -2, 1, -2], [0.5, 0, 0, 0.5, 0],
             np.ones((5, 2)), n_features=2)


def test_predict_checks_feature_count():
    with pytest.raises(ValueError, match="features"):
        stump().predict(np.zeros((2, 3)))


def test_with_weight_routing_sends_nan_by_the_childrens_training_weights():
    tree = Tree([1, -1, 3, -1, -1], [2, -1, 4, -1, -1], [0, -2, 1, -2, -2], [0.5, np.nan, 0.5, np.nan, np.nan],
                [[0.0]] * 5, n_features=2, task="regression", weighted_n_node_samples=[8, 2, 6, 0, 0])
    routed = tree.with_weight_routing()
    assert tree.missing_left is None
    assert routed.missing_left[0] == 2 / 8
    assert routed.missing_left[2] == 0.5  # no training weight below: even split
