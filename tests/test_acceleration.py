"""The exact engine inside the MIP pipeline (optitree._acceleration) against independent brute force.

Every "proven" answer of the accelerated classifier — certified by the engine, by the root
bounds, or by the MIP with bound rows and screening — must equal the brute-force optimum,
with and without user constraints; every reported bound must stay at or below it.
"""

import numpy as np
import pytest

pyo = pytest.importorskip("pyomo.environ")

from greedy import CARTClassifier  # noqa: E402
from optitree import OptimalTreeClassifier  # noqa: E402
from optitree._acceleration import STAGES, parse_acceleration  # noqa: E402
from optitree.formulations import FlowOCTFormulation  # noqa: E402
from test_bruteforce import brute_force_errors, random_dataset  # noqa: E402


def baseline(y):
    return len(y) - np.bincount(y).max()


def forbid_feature_0(X, y, depth):
    """Pyomo constraint: no FlowOCT split on feature 0 anywhere (the engine cannot see it)."""
    columns = np.flatnonzero(FlowOCTFormulation(X, y, depth=depth).threshold_feature == 0)
    n_branch = 2**depth - 1

    def constraint(m):
        m.no_feature_0 = pyo.Constraint(expr=sum(m.b[n, int(f)] for n in range(n_branch) for f in columns) == 0)

    return constraint


def errors(clf, X, y):
    return int((clf.predict(X) != y).sum())


@pytest.mark.parametrize("acceleration", ["all", "start+rows", "start+screening", "rows+screening"])
@pytest.mark.parametrize("depth", [1, 2])
def test_constrained_optimum_equals_brute_force(depth, acceleration):
    """Rows and screening come from unconstrained bounds: they must never cut off the constrained optimum."""
    proven = 0
    for seed in range(12):
        X, y = random_dataset(seed, max_samples=10)
        if np.unique(X[:, 1:], axis=0).shape[0] < 2 and depth == 1:
            continue
        clf = OptimalTreeClassifier(max_depth=depth, time_limit=None, acceleration=acceleration,
                                    constraints=forbid_feature_0(X, y, depth)).fit(X, y)
        expected = brute_force_errors(X[:, 1:], y, depth)
        assert 0 not in clf.tree_.feature[~clf.tree_.is_leaf]
        assert errors(clf, X, y) >= expected
        assert clf.result_.bound * baseline(y) <= expected + 1e-6, seed
        if clf.result_.proven_optimal:
            proven += 1
            assert errors(clf, X, y) == expected, seed
    assert proven >= 10


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_default_pipeline_equals_brute_force(depth):
    for seed in range(20 if depth < 3 else 8):
        X, y = random_dataset(seed, max_samples=10)
        clf = OptimalTreeClassifier(max_depth=depth, time_limit=None).fit(X, y)
        assert clf.result_.proven_optimal and clf.result_.status == "optimal"
        if depth < 3:
            assert errors(clf, X, y) == brute_force_errors(X, y, depth), seed
        assert clf.result_.objective == pytest.approx(errors(clf, X, y) / baseline(y))
        assert clf.result_.acceleration["certificate"] == "engine"


def test_dp_solver_equals_brute_force_and_refuses_what_it_cannot_do():
    for seed in range(20):
        X, y = random_dataset(seed, max_samples=10)
        clf = OptimalTreeClassifier(max_depth=2, solver="dp").fit(X, y)
        assert clf.result_.proven_optimal and clf.result_.solver == "exact"
        assert errors(clf, X, y) == brute_force_errors(X, y, 2)
    with pytest.raises(ValueError, match="constraints"):
        OptimalTreeClassifier(solver="dp", constraints=forbid_feature_0(X, y, 2)).fit(X, y)
    with pytest.raises(ValueError, match="axis-aligned"):
        OptimalTreeClassifier(solver="dp", formulation="oct-h").fit(X, y)


def test_bound_stays_below_optimum_when_the_mip_stops_early():
    """node_limit=0 without the proof stage: the bound reported is the engine's, never above the optimum."""
    fitted = 0
    for seed in range(10):
        X, y = random_dataset(seed, max_samples=12)
        constraint = forbid_feature_0(X, y, 2)
        clf = OptimalTreeClassifier(max_depth=2, node_limit=0, time_limit=None, acceleration="start+rows",
                                    constraints=constraint)
        try:
            clf.fit(X, y)
        except RuntimeError as exc:  # no feasible start and no node to find one
            assert "returned no tree" in str(exc)
            continue
        fitted += 1
        expected = brute_force_errors(X[:, 1:], y, 2)
        assert clf.result_.bound * baseline(y) <= expected + 1e-6
        assert errors(clf, X, y) >= expected
    assert fitted >= 3


def test_never_worse_than_cart_on_training_data():
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    cart = CARTClassifier(max_depth=3, random_state=0).fit(X, y)
    for kwargs in ({"max_thresholds": 16, "time_limit": 5}, {"formulation": "oct", "time_limit": 5}):
        clf = OptimalTreeClassifier(max_depth=3, **kwargs).fit(X, y)
        assert clf.score(X, y) >= cart.score(X, y)


def test_acceleration_parameter():
    assert parse_acceleration("all") == set(STAGES)
    assert parse_acceleration("none") == set()
    assert parse_acceleration("start+rows") == {"start", "rows"}
    X, y = random_dataset(0)
    with pytest.raises(ValueError, match="acceleration"):
        OptimalTreeClassifier(acceleration="fast").fit(X, y)
    clf = OptimalTreeClassifier(max_depth=2, acceleration="none", time_limit=None).fit(X, y)
    assert clf.result_.acceleration is None and clf.result_.solver == "highs"


def test_deeper_never_trains_worse_than_shallower_from_its_optimum():
    """init=<depth-2 optimum> at depth 3 (issue 12: monks1 once ended below the depth-2 tree)."""
    from optitree import datasets

    X, y, _ = datasets.load("monks1")
    shallow = OptimalTreeClassifier(max_depth=2, time_limit=30).fit(X, y)
    for acceleration in ("all", "none"):
        deep = OptimalTreeClassifier(max_depth=3, init=shallow, time_limit=3, acceleration=acceleration).fit(X, y)
        assert deep.score(X, y) >= shallow.score(X, y)


@pytest.mark.parametrize("kwargs", [{}, {"acceleration": "none"}, {"solver": "dp"}, {"formulation": "oct"},
                                    {"acceleration": "start+rows+screening"}])
def test_allowed_features_equal_brute_force_without_the_feature(kwargs):
    """The engine honours allowed_features, so its proofs and bounds hold under it; the MIP enforces it."""
    for seed in range(8):
        X, y = random_dataset(seed, max_samples=10)
        allowed = np.ones(X.shape[1], bool)
        allowed[0] = False
        clf = OptimalTreeClassifier(max_depth=2, time_limit=None, allowed_features=allowed, **kwargs).fit(X, y)
        assert 0 not in clf.tree_.feature[~clf.tree_.is_leaf]
        assert clf.result_.proven_optimal
        assert errors(clf, X, y) == brute_force_errors(X[:, 1:], y, 2), (seed, kwargs)


def test_allowed_features_per_level_and_bad_masks():
    X, y = random_dataset(3, max_samples=10)
    per_level = np.array([[True, False, False], [False, True, True]])[:, : X.shape[1]]
    clf = OptimalTreeClassifier(max_depth=2, time_limit=None, allowed_features=per_level).fit(X, y)
    tree = clf.tree_
    if not tree.is_leaf[0]:
        assert tree.feature[0] == 0
        children = [c for c in (tree.children_left[0], tree.children_right[0]) if not tree.is_leaf[c]]
        assert all(tree.feature[c] != 0 for c in children)
    with pytest.raises(ValueError, match="allowed_features"):
        OptimalTreeClassifier(allowed_features=np.ones(7, bool)).fit(X, y)
    with pytest.raises(ValueError, match="allowed_features"):
        OptimalTreeClassifier(formulation="oct-h", allowed_features=np.ones(X.shape[1], bool)).fit(X, y)


def test_refusals_name_the_parameter():
    """Issue 14: an absurd depth and predict before fit are refused with sklearn's errors."""
    from sklearn.exceptions import NotFittedError

    from optitree import OptimalTreeRegressor

    X, y = random_dataset(1)
    for kwargs in ({"formulation": "oct", "acceleration": "none"}, {}, {"solver": "dp"}):
        with pytest.raises(ValueError, match="max_depth"):
            OptimalTreeClassifier(max_depth=62, **kwargs).fit(X, y)
    with pytest.raises(NotFittedError):
        OptimalTreeRegressor().predict(X)
    with pytest.raises(NotFittedError):
        OptimalTreeClassifier().predict(X)


@pytest.mark.parametrize("acceleration", ["none", "all"])
def test_flow_on_all_constant_columns_fits_a_leaf(acceleration):
    X, y = np.ones((10, 3)), np.r_[np.zeros(5), np.ones(5)]
    clf = OptimalTreeClassifier(formulation="flow", acceleration=acceleration, time_limit=None).fit(X, y)
    assert clf.tree_.node_count == 1 and clf.result_.proven_optimal


def test_sklearn_tree_attributes_on_the_optimal_classifier():
    """Issue 12 item 9: feature_importances_, n_classes_, predict_log_proba as on scikit-learn's trees."""
    from sklearn.datasets import load_iris
    from sklearn.tree import DecisionTreeClassifier

    X, y = load_iris(return_X_y=True)
    clf = OptimalTreeClassifier(max_depth=1).fit(X, y)
    stump = DecisionTreeClassifier(max_depth=1, random_state=0).fit(X, y)
    assert clf.n_classes_ == 3
    used = clf.tree_.feature[0]
    expected = np.zeros(4)
    expected[used] = 1.0
    assert clf.feature_importances_ == pytest.approx(expected)
    if used == stump.tree_.feature[0]:
        assert clf.feature_importances_ == pytest.approx(stump.feature_importances_)
    with np.errstate(divide="ignore"):
        assert np.array_equal(clf.predict_log_proba(X), np.log(clf.predict_proba(X)))


def test_engine_stopped_by_the_clock_returns_its_best_or_the_start_without_a_mip():
    """No user constraints and the engine out of time: no MIP is built (it would overrun time_limit);
    the tree is the better of the engine's incumbent and CART, and nothing claims optimality."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    cart = CARTClassifier(max_depth=3, random_state=0).fit(X, y)
    clf = OptimalTreeClassifier(max_depth=3, time_limit=0.2).fit(X, y)
    r = clf.result_
    if r.proven_optimal:  # a very fast machine: then it is the certified optimum
        assert errors(clf, X, y) == 9
    else:
        assert r.status == "time_limit" and r.solver == "exact" and r.n_rows == 0
        assert r.bound <= r.objective
    assert clf.score(X, y) >= cart.score(X, y)
