"""Inputs that once got through wrong (issue 25, "What was seen"): each now fits right or is refused clearly.

Truths are computed here independently (brute force over every depth-2 tree of 8 rows, or by hand).
"""

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest

from greedy import CARTClassifier, CARTRegressor
from optitree import OptimalTreeClassifier, OptimalTreeRegressor

X8 = np.arange(8.0).reshape(-1, 1)
Y8 = np.array([0, 1, 0, 1, 0, 1, 1, 0])

OPTIMAL_PATHS = {
    "flow (engine)": dict(),
    "flow MIP": dict(acceleration="none"),
    "oct (engine)": dict(formulation="oct"),
    "oct MIP": dict(formulation="oct", acceleration="none"),
    "dp": dict(solver="dp"),
}


def depth2_optimum(x, y, w):
    """Least weighted error of any depth <= 2 tree on one feature: at most 3 thresholds, 4 intervals."""
    cuts = np.unique(x)[:-1]
    best = np.inf
    for k in range(0, 4):
        for chosen in itertools.combinations(cuts, k):  # any <= 3 thresholds: the middle one at the root
            edges = np.searchsorted(np.array(chosen), x, side="left")
            cost = 0.0
            for part in np.unique(edges):
                rows = edges == part
                cost += w[rows].sum() - max(w[rows & (y == c)].sum() for c in np.unique(y))
            best = min(best, cost)
    return best


def fit_quietly(est, X, y, w=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y, sample_weight=w)


# ---------------------------------------------------------------------- weights
@pytest.mark.parametrize("path", list(OPTIMAL_PATHS))
@pytest.mark.parametrize("tiny", [1e-308, 1e-309])
def test_one_negligible_weight_among_ones_gives_no_false_proof(path, tiny):
    w = np.ones(8)
    w[3] = tiny
    clf = fit_quietly(OptimalTreeClassifier(max_depth=2, time_limit=30, **OPTIMAL_PATHS[path]), X8, Y8, w)
    errors = float(w[clf.predict(X8) != Y8].sum())
    truth = depth2_optimum(X8[:, 0], Y8, w)
    assert truth < 1.5  # the example: 1 error is reachable (the false proof said 3)
    assert errors <= truth + 1e-300 * 8 + 1e-12
    if clf.result_.proven_optimal:
        assert errors == pytest.approx(truth, abs=1e-12)
    assert "raised to" in clf.result_.message


@pytest.mark.parametrize("path", list(OPTIMAL_PATHS))
def test_a_row_of_negligible_weight_still_counts_for_the_leaf_size(path):
    """Issue 35's case: weight 1e-309 among weights 1-5, min_samples_leaf=3, depth 3: that row makes leaves
    large enough, so the optimum (brute force) is 1.0 weighted error; without it counted, 3.0."""
    from support.exact_bruteforce import brute_force

    rng = np.random.RandomState(2)
    X, y = rng.randint(0, 4, (13, 2)).astype(float), rng.randint(0, 2, 13)
    w = np.array([1e-309, 5, 4, 5, 4, 5, 5, 2, 4, 4, 2, 4, 1.0])
    opts = dict(max_depth=3, alpha=0.0, min_samples_leaf=3, allowed_features=None)
    truth, without = brute_force(X, y, w, **opts), brute_force(X, y, np.where(w < 1, 0.0, w), **opts)
    assert (truth, without) == (1.0, 3.0)
    clf = fit_quietly(OptimalTreeClassifier(max_depth=3, min_samples_leaf=3, time_limit=60, **OPTIMAL_PATHS[path]),
                      X, y, w)
    assert clf.result_.proven_optimal
    assert float(w[clf.predict(X) != y].sum()) == pytest.approx(truth, abs=1e-9)
    assert (np.bincount(clf.apply(X)) >= 3)[np.unique(clf.apply(X))].all()


@pytest.mark.parametrize("heavy, light", [(1e300, 1.0), (1e160, 1.0), (1.0, 1e-200)])
def test_extreme_regression_weights_prove_the_optimal_stump(heavy, light):
    """Issue 35's case: weights spanning 1e160 and more once proved stumps 2.6 times worse than the optimum
    (the squared error's (Σwt)² overflowed); the optimum is brute-forced over every stump here."""
    rng = np.random.default_rng(0)
    X = rng.integers(-3, 4, (8, 2)).astype(float)
    y = np.array([0.5, -1.25, 3.0, 2.0, -0.5, 1.0, 4.5, 0.0])
    w = np.where(np.arange(8) % 3 == 0, heavy, light)

    def sse(rows):
        return (w[rows] * (y[rows] - np.average(y[rows], weights=w[rows])) ** 2).sum()

    everything = np.ones(8, bool)
    truth = min([sse(everything)] + [sse(X[:, f] <= t) + sse(X[:, f] > t)
                                     for f in range(2) for t in np.unique(X[:, f])[:-1]])
    reg = fit_quietly(OptimalTreeRegressor(max_depth=1, time_limit=30), X, y, w)
    assert reg.result_.proven_optimal
    assert (w * (y - reg.predict(X)) ** 2).sum() == pytest.approx(truth, rel=1e-9)


def test_weights_spanning_1e600_fit_right():
    w = np.where(np.arange(8) < 4, 1e-300, 1e300)
    clf = fit_quietly(OptimalTreeClassifier(max_depth=2), X8, Y8, w)
    heavy = w > 1
    # the heavy rows (4..7, labels 0 1 1 0) are separable at depth 2: no heavy error
    assert (clf.predict(X8)[heavy] == Y8[heavy]).all()
    assert np.isfinite(clf.result_.objective) and np.isfinite(clf.result_.bound)


@pytest.mark.parametrize("value", [5e-324, 1e-308, 1e305])
def test_all_weights_out_of_range_are_refused_with_the_fix(value):
    with pytest.raises(ValueError, match="multiply every weight by one constant"):
        OptimalTreeClassifier(max_depth=2).fit(X8, Y8, sample_weight=np.full(8, value))
    # the fix works: the same weights scaled by one constant
    w = np.full(8, value)
    clf = fit_quietly(OptimalTreeClassifier(max_depth=2), X8, Y8, w / w.max())
    assert clf.result_.proven_optimal and clf.result_.objective == pytest.approx(clf.result_.bound)


# ---------------------------------------------------------------------- text columns
def frame(dtype):
    return pd.DataFrame({"x": X8[:, 0], "colour": pd.Series(list("rgbrgbrg"), dtype=dtype)})


@pytest.mark.parametrize("dtype", [object, "string"])
@pytest.mark.parametrize("make", [
    lambda: OptimalTreeClassifier(max_depth=1), lambda: OptimalTreeClassifier(max_depth=1, solver="dp"),
    lambda: CARTClassifier(max_depth=1)], ids=["optimal", "dp", "cart"])
def test_a_text_column_is_refused_by_name_with_the_fix(dtype, make):
    with pytest.raises(ValueError, match=r"'colour'.*astype\('category'\)"):
        make().fit(frame(dtype), Y8)
    fixed = frame(dtype).astype({"colour": "category"})
    assert make().fit(fixed, Y8).predict(fixed).shape == (8,)


@pytest.mark.parametrize("make", [lambda: OptimalTreeRegressor(max_depth=1), lambda: CARTRegressor(max_depth=1)],
                         ids=["optimal", "cart"])
def test_a_text_column_is_refused_by_regressors_too(make):
    with pytest.raises(ValueError, match="'colour'"):
        make().fit(frame(object), Y8.astype(float))


def test_text_at_prediction_is_refused_too_and_numbers_stored_as_objects_pass():
    clf = CARTClassifier(max_depth=1).fit(frame(object).astype({"colour": "category"}), Y8)
    numbers = pd.DataFrame({"x": X8[:, 0].astype(object), "colour": pd.Categorical(list("rgbrgbrg"))})
    assert clf.predict(numbers).shape == (8,)
    with pytest.raises(ValueError, match="'x'"):
        clf.predict(pd.DataFrame({"x": list("abcdefgh"), "colour": pd.Categorical(list("rgbrgbrg"))}))
    with pytest.raises(ValueError, match=r"column\(s\) \[1\]"):
        OptimalTreeClassifier(max_depth=1).fit(np.array([[1, "a"], [2, "b"]], dtype=object), [0, 1])


# ---------------------------------------------------------------------- magnitudes
@pytest.mark.parametrize("acceleration", ["all", "none"])
@pytest.mark.parametrize("loss", ["squared", "absolute"])
def test_regression_targets_near_1e300_fit(loss, acceleration):
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1.0]) * 1e-300
    reg = fit_quietly(OptimalTreeRegressor(max_depth=1, loss=loss, acceleration=acceleration), X8, y)
    assert np.array_equal(reg.predict(X8), y)  # one split separates the two values exactly
    assert reg.result_.proven_optimal


@pytest.mark.parametrize("loss", ["squared", "absolute"])
def test_int64_targets_near_2_to_the_62_keep_their_sign(loss):
    y = np.array([2**62] * 4 + [2**62 - 2**40] * 4, dtype=np.int64)  # a sum of two overflows int64
    reg = fit_quietly(OptimalTreeRegressor(max_depth=1, loss=loss), X8, y)
    np.testing.assert_array_equal(reg.predict(X8), y.astype(np.float64))  # one split separates the two values


def test_text_targets_are_refused_as_not_numeric():
    with pytest.raises(ValueError, match="OptimalTreeRegressor needs numeric targets, got y of dtype <U1"):
        OptimalTreeRegressor(max_depth=1).fit(X8, np.array(list("abcdefgh")))


@pytest.mark.parametrize("X, y", [(np.ones((10, 2)), np.arange(10.0)), (np.array([[1.0, 2.0]]), np.array([3.0]))],
                         ids=["constant-X", "one-row"])
def test_linear_leaves_without_a_usable_split_fit_a_constant_leaf(X, y):
    reg = fit_quietly(OptimalTreeRegressor(max_depth=2, leaf_model="linear", time_limit=20), X, y)
    assert reg.tree_.n_leaves == 1  # no feature varies: no split separates any rows
    np.testing.assert_allclose(reg.predict(X), np.full(len(y), y.mean()))  # the least-squares constant


def test_subnormal_target_differences_are_refused_with_the_fix():
    with pytest.raises(ValueError, match="multiply y by one constant"):
        OptimalTreeRegressor(max_depth=2).fit(X8, Y8 * 1e-310)


@pytest.mark.parametrize("make", [
    lambda: OptimalTreeClassifier(max_depth=2, formulation="oct", acceleration="none"),
    lambda: OptimalTreeClassifier(max_depth=1, formulation="oct-h"),
    lambda: OptimalTreeRegressor(max_depth=1, formulation="ort", acceleration="none"),
], ids=["oct", "oct-h", "ort"])
@pytest.mark.parametrize("scale", ["huge", "subnormal"])
def test_features_the_mip_cannot_scale_are_refused_by_name(make, scale):
    X = X8.copy()
    if scale == "huge":
        X[0, 0], X[1, 0] = -1.797e308, 1.797e308
    else:
        X = X * 1e-310
    with pytest.raises(ValueError, match=r"feature\(s\) \[0\].*rescale X"):
        make().fit(X, Y8.astype(float) if "Regressor" in type(make()).__name__ else Y8)


def test_the_default_path_fits_features_near_the_float64_limit():
    X = X8.copy()
    X[0, 0], X[7, 0] = -1.797e308, 1.797e308
    clf = fit_quietly(OptimalTreeClassifier(max_depth=2, formulation="oct"), X, Y8)
    assert clf.result_.proven_optimal
    assert (clf.predict(X) != Y8).sum() == depth2_optimum(X[:, 0], Y8, np.ones(8))


# ---------------------------------------------------------------------- parameters and constraints
def test_node_limit_zero_without_a_start_is_a_clear_error():
    with pytest.raises(ValueError, match="node_limit=0"):
        OptimalTreeClassifier(max_depth=2, node_limit=0, init=None, acceleration="none").fit(X8, Y8)
    # with a start it fits (the start is returned)
    clf = fit_quietly(OptimalTreeClassifier(max_depth=2, node_limit=0, acceleration="none"), X8, Y8)
    assert clf.predict(X8).shape == (8,)


def test_a_pyomo_constraint_named_like_a_variable_block_is_refused_with_the_fix():
    from pyomo.environ import Constraint

    def clash(m):
        m.c = Constraint(expr=m.d[0] <= 1)

    with pytest.raises(ValueError, match=r"replaced the model's variable block\(s\) \['c'\].*model.my_c"):
        fit_quietly(OptimalTreeClassifier(max_depth=2, formulation="oct", constraints=clash), X8, Y8)

    def renamed(m):
        m.my_c = Constraint(expr=m.d[0] <= 1)

    clf = fit_quietly(OptimalTreeClassifier(max_depth=2, formulation="oct", constraints=renamed), X8, Y8)
    assert clf.result_.has_solution


# ---------------------------------------------------------------------- noise
def test_scaled_gap_warning_only_when_a_mip_is_built_and_naming_features():
    rng = np.random.RandomState(0)
    X = pd.DataFrame({"width": rng.rand(60), "income": np.r_[rng.rand(59) * 1e-3, 1e7]})  # gaps ~1e-10 once scaled
    y = (X["width"] > 0.5).astype(int)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = OptimalTreeClassifier(max_depth=2, formulation="oct").fit(X, y)
    assert clf.model_ is None  # the engine settled it: no MIP, no warning about one
    assert not [w for w in caught if "scaled gaps" in str(w.message)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        OptimalTreeClassifier(max_depth=2, formulation="oct", acceleration="none", time_limit=20).fit(X, y)
    gaps = [str(w.message) for w in caught if "scaled gaps" in str(w.message)]
    assert len(gaps) == 1 and "'income'" in gaps[0] and "[" not in gaps[0].split("scaled")[0]
