"""Greedy CART: categorical subset splits and C4.5 missing values, against brute force and hand computation."""

import itertools

import numpy as np
import pytest

from greedy import CARTClassifier, CARTRegressor, Tree


def _impurity(y, w, criterion):
    if criterion == "squared_error":
        return np.average((y - np.average(y, weights=w)) ** 2, weights=w)
    p = np.bincount(y, weights=w) / w.sum()
    p = p[p > 0]
    return 1 - (p**2).sum() if criterion == "gini" else -(p * np.log2(p)).sum()


def _gain(left, y, w, criterion):
    return (w.sum() * _impurity(y, w, criterion) - w[left].sum() * _impurity(y[left], w[left], criterion)
            - w[~left].sum() * _impurity(y[~left], w[~left], criterion))


# ---------------------------------------------------------------------- categorical splits
@pytest.mark.parametrize("criterion", ["gini", "entropy", "squared_error"])
@pytest.mark.parametrize("seed", range(6))
def test_ordering_trick_finds_the_best_of_all_subsets(criterion, seed):
    """Binary classification and squared error: the best prefix of the ordered categories is
    the best of all 2^(C-1) - 1 two-way partitions (Breiman et al. 1984; Fisher 1958)."""
    rng = np.random.RandomState(seed)
    n_cat, n = rng.randint(3, 9), 80
    codes = rng.randint(0, n_cat, n)
    if criterion == "squared_error":
        y = rng.randn(n_cat)[codes] + rng.randn(n)
        est = CARTRegressor(criterion=criterion, max_depth=1, categorical_features=[1])
    else:
        y = (rng.rand(n) < rng.rand(n_cat)[codes]).astype(int)
        est = CARTClassifier(criterion=criterion, max_depth=1, categorical_features=[1])
    w = rng.uniform(0.5, 2.0, n)
    X = np.column_stack([rng.rand(n) * 0, codes])  # feature 0 is constant: only the category can split
    tree = est.fit(X, y, sample_weight=w).tree_
    present = np.unique(codes)
    best = max(_gain(np.isin(codes, subset), y, w, criterion)
               for r in range(1, present.size) for subset in itertools.combinations(present, r))
    assert tree.feature[0] == 1 and tree.categorical_nodes[0]
    assert _gain(tree.category_left[0][codes], y, w, criterion) == pytest.approx(best, rel=1e-10)


def test_multiclass_orders_categories_by_the_majority_class_proportion():
    # 4 categories, 3 classes; node majority class 0 (counts 7, 5, 4 over 16 samples)
    codes = np.array([0] * 4 + [1] * 4 + [2] * 4 + [3] * 4)
    y = np.array([0, 0, 0, 1,  0, 1, 1, 2,  0, 0, 2, 2,  0, 0, 1, 1])
    # proportion of class 0 per category: 3/4, 1/4, 2/4, 2/4 -> order 1, 2, 3, 0 (ties by code)
    order = [1, 2, 3, 0]
    est = CARTClassifier(max_depth=1, categorical_features=[0]).fit(codes[:, None], y)
    left = est.tree_.category_left[0]
    prefixes = [np.isin(np.arange(4), order[:k]) for k in range(1, 4)]
    assert any(np.array_equal(left[:4], p) for p in prefixes)
    gains = [_gain(p[codes], y, np.ones(16), "gini") for p in prefixes]
    assert _gain(left[codes], y, np.ones(16), "gini") == pytest.approx(max(gains))
    # a heuristic: never better than the best of all subsets
    best = max(_gain(np.isin(codes, s), y, np.ones(16), "gini")
               for r in (1, 2) for s in itertools.combinations(range(4), r))
    assert max(gains) <= best + 1e-12


def test_unseen_and_absent_categories_go_to_the_heavier_child():
    # codes 0, 1 (class 0, weight 3 in total) vs code 2 (class 1, weight 1)
    X = np.array([[0.0], [1.0], [1.0], [2.0]])
    y = np.array([0, 0, 0, 1])
    est = CARTClassifier(categorical_features=[0]).fit(X, y)
    mask, default_left = est.tree_.category_left[0], est.tree_.default_left[0]
    assert mask[0] == mask[1] != mask[2]
    assert default_left == mask[0]  # with the heavier group {0, 1}
    assert np.all(mask[3:] == default_left)  # codes never seen in the node
    np.testing.assert_array_equal(est.predict([[2.0], [7.0], [0.0]]), [1, 0, 0])  # 7: unseen
    # weights can make the other group heavier
    est = CARTClassifier(categorical_features=[0]).fit(X, y, sample_weight=[1, 1, 1, 5])
    assert est.tree_.default_left[0] == est.tree_.category_left[0, 2]
    assert est.predict([[7.0]])[0] == 1


def test_categorical_and_numeric_features_together_in_a_deeper_tree():
    rng = np.random.RandomState(3)
    n = 600
    codes = rng.randint(0, 6, n)
    x = rng.rand(n)
    y = np.where(np.isin(codes, [1, 4]), x > 0.3, x > 0.7).astype(int)
    X = np.column_stack([x, codes])
    est = CARTClassifier(max_depth=4, categorical_features=np.array([False, True])).fit(X, y)
    assert est.score(X, y) == 1.0
    tree = est.tree_
    cat = tree.categorical_nodes
    assert np.all(tree.feature[cat] == 1) and np.all(np.isnan(tree.threshold[cat]))
    assert Tree.from_json(tree.to_json()) == tree
    numeric = CARTClassifier(max_depth=4).fit(X, y)  # codes as numbers need more splits
    assert numeric.tree_.n_leaves >= est.tree_.n_leaves


def test_pandas_categorical_columns():
    pd = pytest.importorskip("pandas")
    rng = np.random.RandomState(0)
    colour = rng.choice(["red", "green", "blue", "grey"], 200)
    y = np.isin(colour, ["red", "blue"]).astype(int)
    X = pd.DataFrame({"size": rng.rand(200), "colour": pd.Categorical(colour)})
    est = CARTClassifier(max_depth=1).fit(X, y)
    np.testing.assert_array_equal(est.is_categorical_, [False, True])
    assert est.n_categories_.tolist() == [0, 4]
    assert est.score(X, y) == 1.0
    # prediction maps by category name, whatever the category order of the new frame; "pink" is unseen
    new = pd.DataFrame({"size": [0.5] * 4,
                        "colour": pd.Categorical(["blue", "green", "red", "pink"],
                                                 categories=["red", "pink", "green", "blue"])})
    pred = est.predict(new)
    np.testing.assert_array_equal(pred[:3], [1, 0, 1])
    assert pred[3] == est.classes_[est.tree_.node_proba[1 if est.tree_.default_left[0] else 2].argmax()]
    with pytest.raises(ValueError, match="categorical dtype"):
        CARTClassifier(categorical_features=None).fit(X, y)


def test_category_codes_are_positions_among_the_labels_of_fit_whatever_the_frame_dtype():
    """A column whose categories are the labels of fit (in their order) takes its own codes; any other
    column (another order, unseen labels, plain objects) is looked up label by label: the same codes."""
    pd = pytest.importorskip("pandas")
    from greedy._inputs import encode_category_columns

    labels = np.array(["red", "green", "blue"], dtype=object)
    values = ["blue", None, "red", "green", "blue", "pink"]
    expected = [2.0, np.nan, 0.0, 1.0, 2.0, 3.0]  # NaN stays NaN; "pink" (unseen) gets len(labels)
    columns = {"same categories": pd.Categorical(values[:5], categories=labels),
               "other order": pd.Categorical(values[:5], categories=["blue", "red", "green"]),
               "objects": pd.Series(values[:5], dtype=object)}
    for name, column in columns.items():
        out = encode_category_columns(pd.DataFrame({"x": column}), {0: labels})
        np.testing.assert_array_equal(out["x"].to_numpy(), expected[:5], err_msg=name)
    unseen = pd.DataFrame({"x": pd.Categorical(values, categories=["red", "green", "blue", "pink"])})
    np.testing.assert_array_equal(encode_category_columns(unseen, {0: labels})["x"].to_numpy(), expected)


@pytest.mark.parametrize("bad", [-1.0, 2.5, 5000.0])
def test_bad_category_codes_are_rejected(bad):
    X = np.array([[0.0], [1.0], [bad], [1.0]])
    with pytest.raises(ValueError, match="categorical feature 0 must hold integer codes"):
        CARTClassifier(categorical_features=[0]).fit(X, [0, 1, 0, 1])
    est = CARTClassifier(categorical_features=[0]).fit(np.array([[0.0], [1.0], [2.0], [1.0]]), [0, 1, 0, 1])
    if bad < 0 or bad != int(bad):
        with pytest.raises(ValueError, match="integer codes"):
            est.predict([[bad]])


@pytest.mark.parametrize("spec", [[3], np.array([True, False, True]), [[0]], [0.5]])
def test_bad_categorical_features_spec(spec):
    with pytest.raises(ValueError, match="categorical_features"):
        CARTClassifier(categorical_features=spec).fit(np.zeros((4, 2)), [0, 1, 0, 1])


# ---------------------------------------------------------------------- missing values
def test_missing_values_hand_computed_classification():
    X = np.array([[1.0], [2.0], [3.0], [4.0], [np.nan]])
    y = np.array([0, 0, 1, 1, 1])
    est = CARTClassifier(max_depth=1).fit(X, y)
    tree = est.tree_
    # Known values 1, 2 | 3, 4 split perfectly at 2.5; two of the four known samples go left,
    # so the NaN sample goes left with weight 2/4 and right with weight 2/4:
    #   left  = {x=1: class 0, x=2: class 0, NaN: 0.5 of class 1} -> counts [2, 0.5], weight 2.5
    #   right = {x=3, x=4: class 1, NaN: 0.5 of class 1}          -> counts [0, 2.5], weight 2.5
    #   gini(left) = 1 - (2^2 + 0.5^2) / 2.5^2 = 1 - 4.25 / 6.25 = 0.32
    assert tree.threshold[0] == 2.5 and tree.missing_left[0] == 0.5
    np.testing.assert_allclose(tree.value, [[2, 3], [2, 0.5], [0, 2.5]])
    np.testing.assert_allclose(tree.weighted_n_node_samples, [5, 2.5, 2.5])
    np.testing.assert_allclose(tree.impurity, [1 - (4 + 9) / 25, 0.32, 0.0])
    np.testing.assert_array_equal(tree.n_node_samples, [5, 3, 3])  # the NaN sample is in both children
    # prediction: NaN reaches both leaves, weights 1/2 and 1/2: 0.5 [0.8, 0.2] + 0.5 [0, 1]
    np.testing.assert_allclose(est.predict_proba([[np.nan], [1.5], [3.5]]), [[0.4, 0.6], [0.8, 0.2], [0, 1]])


def test_missing_values_hand_computed_regression():
    X = np.array([[1.0], [2.0], [np.nan], [3.0]])
    y = np.array([1.0, 1.0, 4.0, 5.0])
    tree = CARTRegressor(max_depth=1).fit(X, y).tree_
    # known 1, 2 | 3 (targets 1, 1 | 5): best threshold 2.5; 2 of 3 known go left:
    #   left  = weights 1, 1, 2/3 on targets 1, 1, 4 -> mean (2 + 8/3) / (8/3) = 1.75
    #   right = weights 1, 1/3   on targets 5, 4    -> mean (5 + 4/3) / (4/3) = 4.75
    assert tree.threshold[0] == 2.5
    assert tree.missing_left[0] == pytest.approx(2 / 3)
    np.testing.assert_allclose(tree.value[:, 0], [2.75, 1.75, 4.75])
    np.testing.assert_allclose(tree.weighted_n_node_samples, [4, 8 / 3, 4 / 3])
    # NaN: 2/3 * 1.75 + 1/3 * 4.75 = 2.75, the root mean
    assert tree.predict(np.array([[np.nan]]))[0] == pytest.approx(2.75)


def test_split_gain_is_scaled_by_the_known_fraction():
    # 10 samples, classes 5 / 5 (weighted gini decrease of the root: 10 * 0.5 = 5 before splitting).
    # Feature 0 is known on 4 samples (2 of each class) and separates them perfectly:
    #   decrease on the known samples = 4 * 0.5 - 0 = 2 (C4.5: 2 / 10 = 0.2 per unit of node weight).
    # Feature 1 is known everywhere and puts (5 class 0, 1 class 1) left, (0, 4) right:
    #   decrease = 5 - 6 * (1 - 26/36) - 0 = 5 - 5/3 = 10/3 (0.333 per unit).
    # Feature 0 is better per *known* sample (2/4 = 0.5 > 0.333) but C4.5 picks feature 1.
    nan = np.nan
    X = np.array([[0, 0], [0, 0], [nan, 0], [nan, 0], [nan, 0], [1, 0], [1, 1], [nan, 1], [nan, 1], [nan, 1]],
                 dtype=float)
    y = np.array([0, 0, 0, 0, 0, 1, 1, 1, 1, 1])
    tree = CARTClassifier(max_depth=1).fit(X, y).tree_
    assert tree.feature[0] == 1 and tree.threshold[0] == 0.5
    # without feature 1 the tree splits on feature 0, NaNs going both ways half-half
    tree = CARTClassifier(max_depth=1).fit(X[:, :1], y).tree_
    assert tree.feature[0] == 0 and tree.missing_left[0] == 0.5


def test_fit_time_fractions_agree_with_prediction_routing():
    rng = np.random.RandomState(0)
    n = 300
    X = rng.rand(n, 4)
    y = (X[:, 0] + X[:, 1] > 1).astype(int)
    X[rng.rand(n, 4) < 0.25] = np.nan
    w = rng.uniform(0.5, 2.0, n)
    est = CARTClassifier(max_depth=5).fit(X, y, sample_weight=w)
    tree = est.tree_
    rows, leaves, frac = tree.route(X.astype(np.float32).astype(float))
    # each training sample spreads its weight over the leaves exactly as fit did
    reached = np.bincount(leaves, weights=w[rows] * frac, minlength=tree.node_count)
    leaf = tree.children_left == -1
    np.testing.assert_allclose(reached[leaf], tree.weighted_n_node_samples[leaf])
    counts = np.zeros((tree.node_count, 2))
    np.add.at(counts, (leaves, y[rows]), w[rows] * frac)
    np.testing.assert_allclose(counts[leaf], tree.value[leaf], atol=1e-9)


def test_all_missing_feature_is_never_used():
    rng = np.random.RandomState(1)
    X = rng.rand(100, 3)
    X[:, 1] = np.nan
    y = X[:, 0] + rng.rand(100) * 0.1
    est = CARTRegressor(max_depth=4).fit(X, y)
    assert 1 not in est.tree_.feature
    assert np.all(np.isfinite(est.predict(X)))


def test_missing_at_prediction_only_uses_training_fractions():
    X = np.array([[1.0], [2.0], [3.0], [4.0], [5.0], [6.0]])
    y = np.array([0, 0, 1, 1, 1, 1])
    est = CARTClassifier().fit(X, y)
    # one split at 2.5; 2 of 6 training samples go left. Complete training data stores no NaN
    # routing (issue 12 item 7); a NaN at prediction time follows the training fractions.
    assert est.tree_.missing_left is None
    assert est.tree_.with_weight_routing().missing_left[0] == pytest.approx(2 / 6)
    np.testing.assert_allclose(est.predict_proba([[np.nan]]), [[1 / 3, 2 / 3]])


def test_categorical_missing_values_and_infinity():
    X = np.array([[0.0], [0.0], [1.0], [1.0], [2.0], [np.nan]])
    y = np.array([0, 0, 1, 1, 1, 0])
    est = CARTClassifier(max_depth=1, categorical_features=[0]).fit(X, y)
    tree = est.tree_
    # known: {0: class 0 x2} vs {1, 2: class 1 x3}; the NaN sample goes left with 2/5
    assert tree.category_left[0, :3].tolist() == [True, False, False]
    assert tree.missing_left[0] == pytest.approx(2 / 5)
    np.testing.assert_allclose(tree.value[1:], [[2.4, 0], [0.6, 3]])
    with pytest.raises(ValueError, match="infinity"):
        CARTClassifier().fit(np.array([[1.0], [np.inf]]), [0, 1])
    with pytest.raises(ValueError, match="infinity"):
        est.predict([[np.inf]])


def test_complete_training_data_exports_no_nan_routing():
    """Issue 12 item 7: exports of a tree fitted on data without NaN show no NaN routing; with
    NaN in the training data they do. A NaN at prediction time still follows the training
    weight fractions (here checked against the two leaves' predictions by hand)."""
    from optitree import export_text
    from optitree.views._export import node_label_lines

    rng = np.random.RandomState(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    clean = CARTClassifier(max_depth=3).fit(X, y)
    assert "NaN" not in export_text(clean)
    assert not any("NaN" in line for node in range(clean.tree_.node_count)
                   for line in node_label_lines(clean.tree_, node, ["a", "b", "c"], ["0", "1"]))
    X_missing = X.copy()
    X_missing[::7, 0] = np.nan
    assert "NaN" in export_text(CARTClassifier(max_depth=3).fit(X_missing, y))

    stump = CARTRegressor(max_depth=1).fit(X, X[:, 0] > 0.3)
    tree = stump.tree_
    left, right = tree.children_left[0], tree.children_right[0]
    w_left, w_right = tree.weighted_n_node_samples[left], tree.weighted_n_node_samples[right]
    nan_row = np.full((1, 3), np.nan)
    expected = (w_left * tree.value[left, 0] + w_right * tree.value[right, 0]) / (w_left + w_right)
    assert stump.predict(nan_row)[0] == pytest.approx(expected)
