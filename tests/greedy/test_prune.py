"""Pruning (greedy/_prune.py): cost-complexity against scikit-learn, reduced-error by hand."""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from greedy import Tree
from greedy._prune import collapse, cost_complexity_path, prune_cost_complexity, prune_reduced_error


def assert_same_tree(ours: Tree, ref: Tree):
    np.testing.assert_array_equal(ours.children_left, ref.children_left)
    np.testing.assert_array_equal(ours.children_right, ref.children_right)
    np.testing.assert_array_equal(ours.feature, ref.feature)
    np.testing.assert_array_equal(ours.threshold, ref.threshold)
    np.testing.assert_array_equal(ours.value, ref.value)
    np.testing.assert_array_equal(ours.n_node_samples, ref.n_node_samples)
    np.testing.assert_array_equal(ours.impurity, ref.impurity)


CASES = [
    (DecisionTreeClassifier, load_breast_cancer, {}),
    (DecisionTreeClassifier, load_breast_cancer, {"criterion": "entropy", "max_leaf_nodes": 25}),
    (DecisionTreeRegressor, load_diabetes, {"min_samples_leaf": 3}),
]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("Est, load, params", CASES)
def test_cost_complexity_path_and_pruned_trees_match_sklearn(Est, load, params, weighted):
    X, y = load(return_X_y=True)
    sw = np.random.default_rng(0).integers(1, 4, len(y)).astype(float) if weighted else None
    full = Est(random_state=0, **params).fit(X, y, sample_weight=sw)
    tree = Tree.from_sklearn(full)
    path = cost_complexity_path(tree)
    ref = full.cost_complexity_pruning_path(X, y, sample_weight=sw)
    np.testing.assert_array_equal(path.ccp_alphas, ref.ccp_alphas)
    np.testing.assert_array_equal(path.impurities, ref.impurities)
    # pruned trees at alphas on the path and between path points
    alphas = np.unique(ref.ccp_alphas)
    probes = np.concatenate([alphas[1::4], (alphas[:-1] + alphas[1:])[::5] / 2, [alphas[-1] * 2]])
    for alpha in probes:
        pruned_ref = Est(random_state=0, ccp_alpha=alpha, **params).fit(X, y, sample_weight=sw)
        ours = prune_cost_complexity(tree, alpha)
        assert_same_tree(ours, Tree.from_sklearn(pruned_ref))
        np.testing.assert_allclose(ours.predict(X), Tree.from_sklearn(pruned_ref).predict(X))


def test_alpha_zero_keeps_the_tree_and_largest_alpha_gives_a_stump():
    X, y = load_breast_cancer(return_X_y=True)
    tree = Tree.from_sklearn(DecisionTreeClassifier(random_state=0).fit(X, y))
    assert prune_cost_complexity(tree, 0.0) is tree
    path = cost_complexity_path(tree)
    assert prune_cost_complexity(tree, path.ccp_alphas[-1]).node_count == 1
    assert np.all(np.diff(path.ccp_alphas) >= 0)


@pytest.mark.parametrize("alpha, error", [(-0.1, ValueError), (np.inf, ValueError), ("0.1", TypeError)])
def test_bad_ccp_alpha(alpha, error):
    tree = Tree([1, -1, -1], [2, -1, -1], [0, -2, -2], [0.5, np.nan, np.nan], [[2, 2], [2, 0], [0, 2]], 1,
                weighted_n_node_samples=[4, 2, 2], impurity=[0.5, 0, 0])
    with pytest.raises(error, match="ccp_alpha"):
        prune_cost_complexity(tree, alpha)


# ---------------------------------------------------------------------------- reduced-error pruning
def hand_tree(task="classification"):
    """Root splits x0 <= 0.5; node 1 (left) is a leaf predicting class 0; node 2 splits x1 <= 0.5
    into leaf 3 (class 1) and leaf 4 (class 0). Node 2 itself predicts class 1 (3 vs 2)."""
    if task == "classification":
        value = [[6, 4], [4, 1], [2, 3], [0, 3], [2, 0]]
    else:
        value = [[1.5], [0.0], [2.5], [3.0], [1.0]]
    return Tree([1, -1, 3, -1, -1], [2, -1, 4, -1, -1], [0, -2, 1, -2, -2], [0.5, np.nan, 0.5, np.nan, np.nan],
                value, n_features=2, task=task)


def test_reduced_error_prunes_a_split_that_hurts_on_validation_data():
    tree = hand_tree()
    # right half: validation labels are all class 1 -> node 2 as a leaf (class 1) makes 0 errors,
    # its split sends x1 > 0.5 to leaf 4 (class 0): 2 errors
    X = np.array([[0.2, 0.1], [0.2, 0.9], [0.8, 0.2], [0.8, 0.7], [0.9, 0.9]])
    y = np.array([0, 0, 1, 1, 1])
    pruned = prune_reduced_error(tree, X, y)
    assert pruned.node_count == 3
    np.testing.assert_array_equal(pruned.feature, [0, -2, -2])
    np.testing.assert_array_equal(pruned.value, [[6, 4], [4, 1], [2, 3]])


def test_reduced_error_keeps_a_split_that_helps():
    tree = hand_tree()
    X = np.array([[0.2, 0.1], [0.8, 0.2], [0.8, 0.7], [0.9, 0.9]])
    y = np.array([0, 1, 0, 0])  # leaf 4 (class 0) is right twice; node 2 as a leaf would err twice
    pruned = prune_reduced_error(tree, X, y)
    assert pruned == tree


def test_reduced_error_ties_prune_and_the_root_can_collapse():
    tree = hand_tree()
    # node 2: as a leaf 1 error (the class-0 sample); split: leaf 3 right, leaf 4 wrong -> 1 error: tie -> prune
    X = np.array([[0.8, 0.2], [0.8, 0.9], [0.2, 0.5]])
    y = np.array([1, 1, 1])
    pruned = prune_reduced_error(tree, X, y)
    assert pruned.node_count == 3
    # root as a leaf predicts class 0: 3 errors; pruned branch: left leaf (class 0) 1 error + node 2 (class 1) 0
    assert pruned.feature[0] == 0
    # with all-class-0 validation data the root collapses: root leaf 0 errors, branch 2 errors
    assert prune_reduced_error(tree, X, np.zeros(3, int)).node_count == 1


def test_reduced_error_collapses_branches_without_validation_samples():
    tree = hand_tree()
    X = np.array([[0.2, 0.1], [0.3, 0.9]])  # nothing reaches node 2
    y = np.array([0, 0])
    pruned = prune_reduced_error(tree, X, y)
    # node 2 collapses (0 = 0 errors), then the root: as a leaf (class 0) it also makes 0 errors
    assert pruned.node_count == 1


def test_reduced_error_regression_and_weights():
    tree = hand_tree("regression")
    X = np.array([[0.8, 0.2], [0.8, 0.9]])
    # node 2 as a leaf predicts 2.5: squared errors (0.5^2 + 1.5^2) = 2.5; split: 0 + 0 = 0 -> keep
    assert prune_reduced_error(tree, X, np.array([3.0, 1.0])).node_count == 5
    # targets 2.5, 2.5: leaf 0 errors, split 0.25 + 2.25 -> prune
    assert prune_reduced_error(tree, X, np.array([2.5, 2.5])).node_count == 3
    # weights tip the balance: y = (3, 2.5); leaf 0.25 + 0 = 0.25, split 0 + 2.25 w -> prune unless w tiny
    y = np.array([3.0, 2.5])
    assert prune_reduced_error(tree, X, y, sample_weight=[1.0, 1.0]).node_count == 3
    assert prune_reduced_error(tree, X, y, sample_weight=[1.0, 0.01]).node_count == 5


def test_reduced_error_on_sklearn_tree_never_increases_validation_error():
    X, y = load_breast_cancer(return_X_y=True)
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(y))
    tr, va = idx[:350], idx[350:]
    tree = Tree.from_sklearn(DecisionTreeClassifier(random_state=0).fit(X[tr], y[tr]))
    pruned = prune_reduced_error(tree, X[va], y[va])
    err = lambda t: np.mean(t.predict(X[va]).argmax(1) != y[va])  # noqa: E731
    assert pruned.node_count < tree.node_count
    assert err(pruned) <= err(tree)
    # a second pass finds nothing more to prune (every kept split strictly helps)
    assert prune_reduced_error(pruned, X[va], y[va]) == pruned


def test_reduced_error_bad_validation_data():
    tree = hand_tree()
    with pytest.raises(ValueError, match="X_val"):
        prune_reduced_error(tree, np.zeros((3, 3)), np.zeros(3, int))
    with pytest.raises(ValueError, match="y_val"):
        prune_reduced_error(tree, np.zeros((3, 2)), np.zeros(4, int))
    with pytest.raises(ValueError, match="class codes"):
        prune_reduced_error(tree, np.zeros((3, 2)), np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="sample_weight"):
        prune_reduced_error(tree, np.zeros((3, 2)), np.zeros(3, int), sample_weight=np.ones(2))


def test_collapse_reindexes_depth_first_and_keeps_optional_arrays():
    # breadth-first ids: 0 -> (1, 2), 1 -> (3, 4); depth-first order is 0, 1, 3, 4, 2
    tree = Tree([1, 3, -1, -1, -1], [2, 4, -1, -1, -1], [0, 1, -2, -2, -2], [0.5, 0.3, np.nan, np.nan, np.nan],
                [[1.0], [2.0], [3.0], [4.0], [5.0]], n_features=2, task="regression",
                leaf_coef=np.arange(10.0).reshape(5, 2), leaf_intercept=np.arange(5.0))
    out = collapse(tree)
    np.testing.assert_array_equal(out.children_left, [1, 2, -1, -1, -1])
    np.testing.assert_array_equal(out.children_right, [4, 3, -1, -1, -1])
    np.testing.assert_array_equal(out.value[:, 0], [1, 2, 4, 5, 3])
    np.testing.assert_array_equal(out.leaf_intercept, [0, 1, 3, 4, 2])
    X = np.random.default_rng(0).random((50, 2))
    np.testing.assert_allclose(out.predict(X), tree.predict(X))
    cut = collapse(tree, [False, True, False, False, False])  # node 1 becomes a (linear) leaf
    assert cut.node_count == 3 and cut.leaf_intercept[1] == 1 and np.isnan(cut.threshold[1])


# ---------------------------------------------------------------------------- estimator options
@pytest.mark.parametrize("task", ["classification", "regression"])
def test_estimator_ccp_alpha_and_path_match_sklearn(task):
    """Through the estimators (our exact splitter vs scikit-learn's trees).

    The two builders sum statistics in different orders, so values agree to rounding and
    exact ties may pick different (equivalent) splits: paths are compared to 1e-9, and the
    pruned trees structurally on a tie-free case (diabetes, min_samples_leaf=5).
    """
    from greedy import CARTClassifier, CARTRegressor

    Est, Ref, load = ((CARTClassifier, DecisionTreeClassifier, load_breast_cancer) if task == "classification"
                      else (CARTRegressor, DecisionTreeRegressor, load_diabetes))
    X, y = load(return_X_y=True)
    path = Est(min_samples_leaf=5).cost_complexity_pruning_path(X, y)
    ref_path = Ref(min_samples_leaf=5, random_state=0).cost_complexity_pruning_path(X, y)
    np.testing.assert_allclose(path.ccp_alphas, ref_path.ccp_alphas, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(path.impurities, ref_path.impurities, rtol=1e-9)
    if task == "regression":
        alphas = np.unique(ref_path.ccp_alphas)
        for alpha in ((alphas[:-1] + alphas[1:]) / 2)[::7]:  # between path points: robust to rounding
            ours = Est(min_samples_leaf=5, ccp_alpha=alpha).fit(X, y)
            ref = Ref(min_samples_leaf=5, ccp_alpha=alpha, random_state=0).fit(X, y)
            ref_tree = Tree.from_sklearn(ref)
            np.testing.assert_array_equal(ours.tree_.children_left, ref_tree.children_left)
            np.testing.assert_array_equal(ours.tree_.feature, ref_tree.feature)
            np.testing.assert_allclose(ours.predict(X), ref.predict(X), rtol=1e-9)


def test_estimator_prune_reduced_error_with_string_labels():
    from greedy import CARTClassifier

    X = np.array([[0.2, 0.1], [0.3, 0.9], [0.7, 0.2], [0.8, 0.7], [0.9, 0.9], [0.6, 0.6], [0.1, 0.4], [0.75, 0.8]])
    y = np.array(["a", "a", "b", "b", "b", "a", "a", "a"])
    clf = CARTClassifier().fit(X, y)
    assert clf.get_n_leaves() > 2
    # validation data that only rewards the root split x0 <= ~0.65
    X_val = np.array([[0.2, 0.5], [0.9, 0.5], [0.8, 0.75], [0.7, 0.1]])
    y_val = np.array(["a", "b", "b", "b"])
    assert clf.prune_reduced_error(X_val, y_val) is clf
    assert clf.get_n_leaves() == 2 and clf.score(X_val, y_val) == 1.0
    with pytest.raises(ValueError, match="not seen in fit"):
        clf.prune_reduced_error(X_val, np.array(["a", "b", "c", "b"]))
    with pytest.raises(ValueError, match="features"):
        clf.prune_reduced_error(X_val[:, :1], y_val)
    with pytest.raises(ValueError, match="y_val"):
        clf.prune_reduced_error(X_val, y_val[:3])


def test_estimator_rejects_negative_ccp_alpha():
    from greedy import CARTRegressor

    with pytest.raises(ValueError, match="ccp_alpha"):
        CARTRegressor(ccp_alpha=-1.0).fit(np.zeros((4, 1)), np.arange(4.0))
