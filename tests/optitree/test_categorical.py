"""Categorical features and missing values in the optimal estimators (issue 23).

The split space (:mod:`optitree.split_space`): subsets of categories, NaN sent to a learned side.
Every optimum is checked against a brute force over the raw split space (``support.split_bruteforce``),
and never worse than scikit-learn's tree (NaN support, category codes as numbers) nor, on data
without NaN, greedy CART (which splits categories into subsets too).
"""

import numpy as np
import pandas as pd
import pytest
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from greedy import CARTClassifier, CARTRegressor
from optitree import OptimalTreeClassifier, OptimalTreeRegressor, export_text
from support.split_bruteforce import brute_force


def frame(n=60, seed=0):
    rng = np.random.RandomState(seed)
    color = pd.Categorical(rng.choice(["red", "green", "blue"], n), categories=["red", "green", "blue"])
    return pd.DataFrame({"color": color, "num": rng.rand(n)})


def mixed(rng, n, n_levels, nan):
    """A categorical column of ``n_levels`` levels and two numeric ones; NaN in 15 % of two columns if ``nan``."""
    codes = rng.randint(0, n_levels, n)
    x = np.round(rng.randn(n), 1)
    z = rng.randint(0, 5, n).astype(float)
    labels = np.array([f"c{k}" for k in range(n_levels)], dtype=object)[codes]
    if nan:
        labels[rng.rand(n) < 0.15] = None
        x[rng.rand(n) < 0.15] = np.nan
    cat = pd.Categorical(labels, categories=[f"c{k}" for k in range(n_levels)])
    return pd.DataFrame({"cat": cat, "x": x, "z": z})


def as_codes(X):
    """The frame as scikit-learn sees it: category codes as numbers, NaN kept."""
    out = X.copy()
    out["cat"] = X["cat"].cat.codes.astype(float).where(X["cat"].notna())
    return out.to_numpy(float)


def test_classifier_fits_and_prints_category_labels():
    X = frame()
    y = np.where(X["color"].isin(["red", "green"]), "yes", "no")
    clf = OptimalTreeClassifier(max_depth=1).fit(X, y)
    assert clf.score(X, y) == 1.0
    assert list(clf.categories_) == [0] and list(clf.categories_[0]) == ["red", "green", "blue"]
    text = export_text(clf)
    assert "color in {blue}" in text and "color not in {blue}" in text
    assert "NaN" not in text  # no NaN in training: no routing note


def test_regressor_fits_on_categorical_columns():
    X = frame()
    y = (X["color"] == "blue").to_numpy(float) * 3 + X["num"].to_numpy()
    reg = OptimalTreeRegressor(max_depth=1).fit(X, y)
    assert "color in {blue}" in export_text(reg)
    assert np.abs(reg.predict(X) - y).mean() < 1.0


def test_issue_example_a_subset_that_is_no_prefix_of_the_code_order():
    # label (colour != green) XOR (x > 0.5): the split {green} is no prefix of blue, green, red
    rng = np.random.default_rng(0)
    colour = rng.choice(["blue", "green", "red"], 300)
    x = rng.random(300)
    y = ((colour != "green") ^ (x > 0.5)).astype(int)
    X = pd.DataFrame({"colour": pd.Categorical(colour), "x": x})
    clf = OptimalTreeClassifier(max_depth=2).fit(X, y)
    assert clf.score(X, y) == 1.0 and clf.result_.proven_optimal
    assert "colour" in clf.result_.summary().split("split space:")[1]


def test_prediction_uses_the_codes_of_fit_whatever_the_frame_order_of_categories():
    X = frame()
    y = (X["color"] == "blue").to_numpy()
    clf = OptimalTreeClassifier(max_depth=1).fit(X, y)
    X2 = X.copy()
    X2["color"] = X2["color"].cat.reorder_categories(["blue", "green", "red"])
    np.testing.assert_array_equal(clf.predict(X2), y)


def test_unseen_categories_and_new_nan_follow_the_training_majority():
    X = frame(n=90)
    y = (X["color"] == "blue").to_numpy()  # 'blue' is the minority side
    clf = OptimalTreeClassifier(max_depth=1).fit(X, y)
    majority = bool(np.bincount(y.astype(int)).argmax())
    purple = X.assign(color=pd.Categorical(["purple"] * len(X)))
    assert set(clf.predict(purple)) == {majority}  # unseen category: the heavier child
    missing = X.assign(color=pd.Categorical([None] * len(X), categories=["red", "green", "blue"]))
    assert set(clf.predict(missing)) == {majority}  # NaN first seen at predict: the child with more samples


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
def test_an_array_of_category_codes_predicts_like_the_frame_as_greedy_cart_takes_it():
    X = frame(n=90)
    y = np.where(X["color"] == "green", 2.0, 0.0) + (X["num"] > 0.5)
    codes = np.c_[X["color"].cat.codes.to_numpy(float), X["num"]]  # position in ["red", "green", "blue"]
    for optimal, greedy in ((OptimalTreeClassifier(max_depth=2), CARTClassifier(max_depth=2)),
                            (OptimalTreeRegressor(max_depth=2), CARTRegressor(max_depth=2))):
        target = y.astype(int) if isinstance(greedy, CARTClassifier) else y
        optimal.fit(X, target), greedy.fit(X, target)
        np.testing.assert_array_equal(optimal.predict(codes), optimal.predict(X))
        np.testing.assert_array_equal(greedy.predict(codes), greedy.predict(X))
        assert optimal.score(codes, target) == 1.0  # the labels are a depth-2 function of colour and num
    unseen = codes.copy()
    unseen[:, 0] = 7  # a code past the three of fit: an unseen category, as a frame's 'purple'
    purple = X.assign(color=pd.Categorical(["purple"] * len(X)))
    np.testing.assert_array_equal(optimal.predict(unseen), optimal.predict(purple))
    for bad in (-1.0, 0.5):
        wrong = codes.copy()
        wrong[0, 0] = bad
        for est in (optimal, greedy):
            with pytest.raises(ValueError, match="categorical feature 0 must hold integer codes"):
                est.predict(wrong)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("nan", [False, True])
def test_optimum_equals_brute_force_over_the_declared_space(seed, nan):
    rng = np.random.RandomState(seed)
    X = mixed(rng, 16, n_levels=rng.randint(2, 5), nan=nan)
    y = rng.randint(0, 2 + seed % 2, 16)
    w = rng.randint(1, 4, 16).astype(float)
    categorical = {0}
    for depth in (1, 2):
        clf = OptimalTreeClassifier(max_depth=depth, random_state=0).fit(X, y, sample_weight=w)
        assert clf.result_.proven_optimal
        errors = float(w[clf.predict(X) != y].sum())
        assert errors == pytest.approx(brute_force(as_codes(X), y, w, categorical, depth))


@pytest.mark.parametrize("formulation", ["flow", "oct"])
def test_the_mip_over_the_space_proves_the_brute_force_optimum(formulation):
    rng = np.random.RandomState(3)
    X = mixed(rng, 14, n_levels=3, nan=True)
    y = rng.randint(0, 2, 14)
    w = np.ones(14)
    clf = OptimalTreeClassifier(max_depth=2, formulation=formulation, acceleration="none", time_limit=60,
                                random_state=0).fit(X, y)
    assert clf.result_.proven_optimal and clf.result_.solver == "highs"
    assert float((clf.predict(X) != y).sum()) == pytest.approx(brute_force(as_codes(X), y, w, {0}, 2))


def test_regression_optimum_equals_brute_force_over_the_declared_space():
    rng = np.random.RandomState(7)
    X = mixed(rng, 14, n_levels=4, nan=True)
    y = rng.randn(14)
    for depth in (1, 2):
        reg = OptimalTreeRegressor(max_depth=depth).fit(X, y)
        assert reg.result_.proven_optimal
        sse = float(((reg.predict(X) - y) ** 2).sum())
        assert sse == pytest.approx(brute_force(as_codes(X), y, np.ones(14), {0}, depth, task="regression"),
                                    rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("seed", range(8))
def test_never_worse_than_cart_or_scikit_learn_on_random_mixed_data(seed):
    rng = np.random.RandomState(100 + seed)
    n_levels = [2, 5, 9, 12][seed % 4]  # 9 and 12 levels: above "auto" at depth 3, CART's subsets kept
    nan = seed % 2 == 1
    n = 80
    X = mixed(rng, n, n_levels, nan)
    y = (rng.randint(0, 3 if seed % 3 == 0 else 2, n) + (X["z"].to_numpy() > 2)) % 3
    depth, min_leaf = 1 + seed % 3, 1 + seed % 2
    clf = OptimalTreeClassifier(max_depth=depth, min_samples_leaf=min_leaf, time_limit=60).fit(X, y)
    errors = int((clf.predict(X) != y).sum())
    sk = DecisionTreeClassifier(max_depth=depth, min_samples_leaf=min_leaf, random_state=0).fit(as_codes(X), y)
    assert errors <= int((sk.predict(as_codes(X)) != y).sum())
    if not nan:  # greedy CART sends NaN down both sides with fractions: no one-side tree reproduces that
        cart = CARTClassifier(max_depth=depth, min_samples_leaf=min_leaf, categorical_features=[0]).fit(X, y)
        assert errors <= int((cart.predict(X) != y).sum())
    yr = X["z"].to_numpy() + rng.randn(n)
    reg = OptimalTreeRegressor(max_depth=min(depth, 2), min_samples_leaf=min_leaf, time_limit=60).fit(X, yr)
    sse = ((reg.predict(X) - yr) ** 2).sum()
    skr = DecisionTreeRegressor(max_depth=min(depth, 2), min_samples_leaf=min_leaf).fit(as_codes(X), yr)
    assert sse <= ((skr.predict(as_codes(X)) - yr) ** 2).sum() * (1 + 1e-9)
    if not nan:
        cartr = CARTRegressor(max_depth=min(depth, 2), min_samples_leaf=min_leaf, categorical_features=[0]).fit(X, yr)
        assert sse <= ((cartr.predict(X) - yr) ** 2).sum() * (1 + 1e-9)


def test_nan_routing_is_printed_only_where_training_had_nan():
    rng = np.random.RandomState(1)
    X = mixed(rng, 60, n_levels=3, nan=False)
    X.loc[::5, "x"] = np.nan
    y = ((X["x"].fillna(10) > 0) ^ (X["z"] > 2)).astype(int).to_numpy()
    clf = OptimalTreeClassifier(max_depth=2).fit(X, y)
    for line in export_text(clf).splitlines():
        if "NaN" in line:
            assert "x <=" in line or "x >" in line
    assert "x: NaN either side" in clf.result_.summary()


def test_what_the_space_cannot_express_is_refused_by_name():
    X = frame()
    y = (X["color"] == "blue").to_numpy()
    with pytest.raises(ValueError, match="formulation='oct-h'.*formulation='flow' or 'oct'"):
        OptimalTreeClassifier(max_depth=1, formulation="oct-h").fit(X, y)
    with pytest.raises(ValueError, match="leaf_model='linear'"):
        OptimalTreeRegressor(max_depth=1, leaf_model="linear").fit(X, y.astype(float))
    with pytest.raises(ValueError, match="max_distinct_features"):
        OptimalTreeClassifier(max_depth=1, max_distinct_features=1).fit(X, y)


def test_a_narrower_space_than_carts_warns_and_is_recorded():
    X = frame(n=80)
    y = (X["num"] > 0.5).to_numpy()
    with pytest.warns(UserWarning, match="narrower than CART"):
        clf = OptimalTreeClassifier(max_depth=1, formulation="flow", max_thresholds=3, acceleration="none",
                                    time_limit=30).fit(X, y)
    assert clf.result_.split_space["thresholds"].startswith("at most 3")


def test_greedy_cart_is_fitted_only_when_the_fit_needs_its_tree_or_its_subsets(monkeypatch):
    """Every subset in the space and no NaN: a fit the engine proves fits no CART start; a MIP fit fits it
    when it needs it (its start, in the space). With more levels than ``max_category_subsets`` CART's own
    subsets join the space, so it is fitted first, even for the engine's proof."""
    fits = []
    cart_fit = CARTClassifier.fit
    monkeypatch.setattr(CARTClassifier, "fit", lambda self, *args, **kwargs: fits.append(self) or cart_fit(
        self, *args, **kwargs))
    X = mixed(np.random.RandomState(3), 120, 5, nan=False)
    y = (X["cat"].isin(["c0", "c3"]).to_numpy() ^ (X["x"].to_numpy() > 0)).astype(int)
    proven = OptimalTreeClassifier(max_depth=2).fit(X, y)
    assert proven.result_.proven_optimal and proven.init_tree_ is None and not fits
    mip = OptimalTreeClassifier(max_depth=2, acceleration="none", time_limit=30).fit(X, y)
    assert len(fits) == 1 and mip.result_.start_source == "cart"
    start = mip.result_.split_space["start"]
    assert start["objective"] == start["objective_in_space"] >= mip.result_.objective
    reduced = OptimalTreeClassifier(max_depth=2, max_category_subsets=3).fit(X, y)
    assert reduced.result_.proven_optimal and len(fits) == 2
    assert "CART's (1)" in reduced.result_.split_space["features"][0]["subsets"]


def test_nan_first_seen_at_prediction_follows_the_child_with_more_training_samples():
    # no NaN and no categorical column in fit: the tree learned no NaN routing; x <= 6.5 holds 7 of
    # the 10 training rows (class 0), x <= 2.5 only 3 (class 0, the 7 others class 1)
    X = np.arange(10.0)[:, None]
    for cut, nan_class in ((7, 0), (3, 1)):
        y = (X[:, 0] >= cut).astype(int)
        clf = OptimalTreeClassifier(max_depth=1).fit(X, y)
        assert clf.tree_.missing_left is None
        np.testing.assert_array_equal(clf.predict([[np.nan], [0.0], [9.0]]), [nan_class, 0, 1])
        np.testing.assert_array_equal(clf.predict_proba([[np.nan]]), [np.eye(2)[nan_class]])
        reg = OptimalTreeRegressor(max_depth=1).fit(X, 10.0 * y)
        assert reg.predict([[np.nan]])[0] == 10.0 * nan_class
