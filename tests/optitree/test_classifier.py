"""optitree.OptimalTreeClassifier: behaviour, warm starts, solvers, constraints, bad input."""

import functools

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils.estimator_checks import parametrize_with_checks

from greedy import Tree
from optitree import OptimalTreeClassifier as _OptimalTreeClassifier
from optitree.model._memory import ModelTooLargeError
from optitree.formulations import FlowOCTFormulation
from optitree.solvers import HighsBackend


# These tests are about the MIP itself: the exact engine's proofs and starts are switched off
# (tests/optitree/test_acceleration.py tests the accelerated default against brute force).
OptimalTreeClassifier = functools.partial(_OptimalTreeClassifier, acceleration="none")

def xor_data(n=200, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.rand(n, 2)
    return X, ((X[:, 0] > 0.5) ^ (X[:, 1] > 0.5)).astype(int)


def noisy_data(n=60, seed=0, k=3, f=3):
    rng = np.random.RandomState(seed)
    X = rng.rand(n, f)
    y = (X[:, 0] * k).astype(int)
    flip = rng.rand(n) < 0.2
    y[flip] = rng.randint(0, k, flip.sum())
    return X, y


def numpy_objective(clf, X, y, sample_weight=None, alpha=0.0):
    """Independent recomputation: weighted errors / weighted majority baseline error + alpha * splits."""
    w = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight, float)
    _, codes = np.unique(y, return_inverse=True)
    baseline = w.sum() - np.bincount(codes, weights=w).max()
    return w[clf.predict(X) != y].sum() / baseline + alpha * clf.tree_.n_splits


@pytest.mark.slow  # 30 s: the MIP proves what the engine's tests prove in milliseconds
@pytest.mark.parametrize("formulation", ["flow"])
def test_xor_depth2_is_solved_and_proven(formulation):
    X, y = xor_data()
    clf = OptimalTreeClassifier(max_depth=2, formulation=formulation, time_limit=None).fit(X, y)
    assert clf.score(X, y) == 1.0
    assert clf.result_.proven_optimal
    assert clf.result_.objective == pytest.approx(0.0, abs=1e-9)
    # greedy CART cannot find it: its start is much worse
    assert clf.result_.start_source == "cart" and clf.result_.start_objective * clf.result_.objective_units["normalization"] > 0.5


@pytest.mark.slow
def test_xor_depth2_oct():
    X, y = xor_data()
    clf = OptimalTreeClassifier(max_depth=2, formulation="oct", time_limit=None).fit(X, y)
    assert clf.score(X, y) == 1.0 and clf.result_.proven_optimal


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # a limit stops the fit on purpose
@pytest.mark.parametrize("formulation", ["flow", "oct"])
def test_objective_of_tree_equals_result_objective(formulation):
    X, y = noisy_data(n=24)
    w = np.random.RandomState(3).rand(len(y)) + 0.5
    alpha = 0.02
    clf = OptimalTreeClassifier(max_depth=2, formulation=formulation, alpha=alpha, node_limit=10, time_limit=60)
    clf.fit(X, y, sample_weight=w)
    assert clf.result_.normalized_objective == pytest.approx(numpy_objective(clf, X, y, w, alpha), rel=1e-6)
    # tree_ carries the weighted training class counts
    np.testing.assert_allclose(clf.tree_.value[0], np.bincount(y, weights=w))
    assert clf.result_.objective <= clf.result_.start_objective + 1e-9


def test_labels_strings_and_noncontiguous():
    X, y = noisy_data(n=30, k=2)
    labels = np.array(["no", "yes"])[y]
    clf = OptimalTreeClassifier(max_depth=1).fit(X, labels)
    np.testing.assert_array_equal(clf.classes_, ["no", "yes"])
    assert set(clf.predict(X)) <= {"no", "yes"}
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(1), 1.0)
    clf2 = OptimalTreeClassifier(max_depth=1).fit(X, np.array([3, 10])[y])
    np.testing.assert_array_equal(clf2.classes_, [3, 10])
    np.testing.assert_array_equal(clf2.predict(X) == 10, clf.predict(X) == "yes")


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # a limit stops the fit on purpose
def test_tree_api_methods():
    X, y = noisy_data(n=20)
    clf = OptimalTreeClassifier(max_depth=2, node_limit=5).fit(X, y)
    leaves = clf.apply(X)
    assert clf.tree_.is_leaf[leaves].all()
    path = clf.decision_path(X)
    assert path.shape == (len(X), clf.tree_.node_count)
    np.testing.assert_array_equal(np.asarray(path[np.arange(len(X)), leaves]).ravel(), 1)
    assert clf.get_depth() == clf.tree_.max_depth <= 2
    assert clf.get_n_leaves() == clf.tree_.n_leaves
    assert clf.n_features_in_ == 3


def test_integer_weights_equal_repeated_samples():
    X, y = noisy_data(n=12, k=2, f=2, seed=4)
    w = np.random.RandomState(0).randint(1, 4, len(y))
    a = OptimalTreeClassifier(max_depth=2, time_limit=None).fit(X, y, sample_weight=w)
    b = OptimalTreeClassifier(max_depth=2, time_limit=None).fit(np.repeat(X, w, 0), np.repeat(y, w))
    assert a.result_.proven_optimal and b.result_.proven_optimal
    assert a.result_.objective == pytest.approx(b.result_.objective, abs=1e-9)


def test_large_alpha_gives_a_single_leaf():
    X, y = noisy_data(n=20, k=2)
    clf = OptimalTreeClassifier(max_depth=2, alpha=1.01, time_limit=None).fit(X, y)
    assert clf.tree_.n_splits == 0
    assert clf.result_.normalized_objective == pytest.approx(1.0)  # the baseline error, normalised


@pytest.mark.parametrize("formulation", ["flow", "oct"])
def test_highs_and_pyomo_give_the_same_optimum(formulation):
    pytest.importorskip("pyomo")
    X, y = noisy_data(n=16, k=2, f=2, seed=1)
    a = OptimalTreeClassifier(max_depth=2, formulation=formulation, time_limit=None).fit(X, y)
    b = OptimalTreeClassifier(max_depth=2, formulation=formulation, time_limit=None,
                              solver="pyomo:appsi_highs").fit(X, y)
    assert a.result_.proven_optimal and b.result_.proven_optimal
    assert b.result_.solver == "pyomo:appsi_highs"
    assert a.result_.objective == pytest.approx(b.result_.objective, abs=1e-7)
    assert (a.result_.n_rows, a.result_.n_cols, a.result_.n_nonzeros) == (
        b.result_.n_rows, b.result_.n_cols, b.result_.n_nonzeros)


@pytest.mark.parametrize("formulation", ["flow", "oct"])
def test_user_constraint_forbids_feature_0(formulation):
    pytest.importorskip("pyomo")
    import pyomo.environ as pyo

    rng = np.random.RandomState(2)
    X = rng.rand(20, 3)
    y = (X[:, 0] > 0.5).astype(int)
    y[:3] ^= 1  # a little noise; feature 0 is still the best split by far
    free = OptimalTreeClassifier(max_depth=1, formulation=formulation, time_limit=None).fit(X, y)
    assert free.tree_.feature[0] == 0

    if formulation == "oct":
        def forbid(m):
            m.no_feature_0 = pyo.Constraint(expr=m.a[0, 0] == 0)  # the root is the only branch node
    else:
        columns = np.flatnonzero(FlowOCTFormulation.of(X, y, depth=1).threshold_feature == 0)

        def forbid(m):
            m.no_feature_0 = pyo.Constraint(expr=sum(m.b[0, int(f)] for f in columns) == 0)

    clf = OptimalTreeClassifier(max_depth=1, formulation=formulation, time_limit=None, constraints=forbid)
    clf.fit(X, y)
    assert 0 not in clf.tree_.feature
    assert clf.result_.objective >= free.result_.objective - 1e-9
    assert clf.result_.normalized_objective == pytest.approx(numpy_objective(clf, X, y), rel=1e-6)
    assert "start not used" in clf.result_.message  # CART splits on feature 0


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # a limit stops the fit on purpose
@pytest.mark.parametrize("formulation", ["flow", "oct"])
def test_warm_start_never_worse_with_node_limit(formulation):
    X, y = noisy_data(n=40, seed=5)
    clf = OptimalTreeClassifier(max_depth=2, formulation=formulation, node_limit=1, time_limit=60).fit(X, y)
    r = clf.result_
    assert r.start_source == "cart" and r.start_accepted
    assert r.objective <= r.start_objective + 1e-9
    assert r.normalized_objective == pytest.approx(numpy_objective(clf, X, y), rel=1e-6)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # a limit stops the fit on purpose
def test_start_returned_when_the_solver_finds_nothing(monkeypatch):
    real = HighsBackend._solve

    def no_solution(self, options, on_event):
        result, _ = real(self, options, on_event)
        result.termination, result.has_solution, result.objective, result.gap = "time_limit", False, None, None
        return result, None

    monkeypatch.setattr(HighsBackend, "_solve", no_solution)
    X, y = noisy_data(n=20)
    clf = OptimalTreeClassifier(max_depth=2, node_limit=1, time_limit=10).fit(X, y)
    assert "returning the start tree" in clf.result_.message
    assert clf.result_.status == "time_limit"
    assert clf.tree_ == clf.init_tree_
    r = clf.result_
    assert r.objective == pytest.approx(r.start_objective)
    assert r.normalized_objective == pytest.approx(numpy_objective(clf, X, y), rel=1e-6)
    assert r.gap == pytest.approx(abs(r.objective - r.bound) / r.objective)  # HiGHS's definition


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # a limit stops the fit on purpose
def test_negative_solver_bound_is_raised_to_the_objective_lower_bound(monkeypatch):
    """A solver stopped before its root LP can report a dual bound far below 0; every objective is >= 0."""
    real = HighsBackend._solve

    def weak_bound(self, options, on_event):
        result, x = real(self, options, on_event)
        result.bound = -50.0
        for point in result.trace:
            point["bound"] = -50.0
        return result, x

    monkeypatch.setattr(HighsBackend, "_solve", weak_bound)
    X, y = noisy_data(n=20)
    r = OptimalTreeClassifier(max_depth=2, node_limit=1, time_limit=10).fit(X, y).result_
    assert r.objective > 0
    assert r.bound == 0.0
    assert r.gap == pytest.approx(1.0)  # HiGHS's |objective - 0| / |objective|
    assert [p["bound"] for p in r.trace] == [0.0] * len(r.trace)
    assert all(p["gap"] == pytest.approx(1.0) for p in r.trace if p["incumbent"])
    assert "bound raised" in r.message and "solver bound -50" in r.message


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # a limit stops the fit on purpose
def test_init_sources():
    X, y = noisy_data(n=20)
    d1 = OptimalTreeClassifier(max_depth=1, formulation="oct", time_limit=None).fit(X, y)
    d2 = OptimalTreeClassifier(max_depth=2, formulation="oct", init=d1, node_limit=1).fit(X, y)
    assert d2.result_.start_source == "previous-depth"
    assert d2.result_.start_objective == pytest.approx(d1.result_.objective)
    assert d2.result_.objective <= d1.result_.objective + 1e-9
    sk = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, y)
    for init in (sk, Tree.from_sklearn(sk)):
        clf = OptimalTreeClassifier(max_depth=2, formulation="oct", init=init, node_limit=1).fit(X, y)
        assert clf.result_.start_source == "user" and clf.result_.start_accepted
    cold = OptimalTreeClassifier(max_depth=2, formulation="oct", init=None, node_limit=1).fit(X, y)
    assert cold.result_.start_source is None and cold.result_.start_accepted is None
    assert cold.init_tree_ is None
    with pytest.raises(ValueError, match="depth 2 > max_depth=1"):
        OptimalTreeClassifier(max_depth=1, init=sk).fit(X, y)
    with pytest.raises(TypeError, match="init must be"):
        OptimalTreeClassifier(init=42).fit(X, y)


def test_random_state_seeds_the_solver():
    X, y = noisy_data(n=20)
    clf = OptimalTreeClassifier(max_depth=1, random_state=123).fit(X, y)
    assert clf.result_.options["random_seed"] == 123


def test_bad_input():
    X, y = noisy_data(n=20)
    with pytest.raises(ValueError, match="formulation='oct-h' cannot be used with missing values"):
        OptimalTreeClassifier(formulation="oct-h").fit(np.where(X > 0.9, np.nan, X), y)
    with pytest.raises(ValueError, match="NaN|infinity"):
        OptimalTreeClassifier().fit(np.where(X > 0.9, np.inf, X), y)
    with pytest.raises(ValueError, match="1 class"):
        OptimalTreeClassifier().fit(X, np.zeros(len(y)))
    with pytest.raises(ValueError, match="max_depth"):
        OptimalTreeClassifier(max_depth=0).fit(X, y)
    with pytest.raises(ValueError, match="solver must be"):
        OptimalTreeClassifier(solver="gurobi").fit(X, y)
    with pytest.raises(ValueError, match="no_such_solver"):
        OptimalTreeClassifier(max_depth=1, solver="pyomo:no_such_solver").fit(X, y)
    with pytest.raises(ValueError, match="max_thresholds applies"):
        OptimalTreeClassifier(formulation="oct", max_thresholds=4).fit(X, y)
    for formulation in ("flow", "oct-h"):
        with pytest.raises(ValueError, match="feature_scaling='rank' applies to formulation='oct' only"):
            OptimalTreeClassifier(formulation=formulation, feature_scaling="rank").fit(X, y)
    with pytest.raises(ModelTooLargeError, match="max_thresholds"):
        OptimalTreeClassifier(memory_budget=1000).fit(X, y)


def test_rank_scaling_gives_the_same_optimum():
    """OCT's rank scaling models the same partitions as min-max: same proven optimum."""
    rng = np.random.RandomState(1)
    X = rng.rand(16, 2).round(2)
    y = (X[:, 0] * 3).astype(int)
    flip = rng.rand(16) < 0.25
    y[flip] = rng.randint(0, 3, flip.sum())
    fits = [
        OptimalTreeClassifier(max_depth=2, formulation="oct", feature_scaling=s, time_limit=None).fit(X, y)
        for s in ("minmax", "rank")
    ]
    assert all(f.result_.proven_optimal for f in fits)
    assert fits[1].result_.objective == pytest.approx(fits[0].result_.objective, abs=1e-9)
    assert fits[1].result_.normalized_objective == pytest.approx(numpy_objective(fits[1], X, y), rel=1e-9)


@pytest.mark.parametrize("formulation", ["flow", "oct"])
def test_infeasible_min_samples_leaf(formulation):
    X, y = noisy_data(n=20)
    clf = OptimalTreeClassifier(max_depth=2, formulation=formulation, min_samples_leaf=21)
    with pytest.raises(ValueError, match="min_samples_leaf=21"):
        clf.fit(X, y)
    assert clf.result_.status == "infeasible"
    assert not hasattr(clf, "tree_")


@pytest.mark.parametrize("formulation", ["flow", "oct"])
def test_min_samples_leaf_is_respected(formulation):
    X, y = noisy_data(n=16, k=2)
    clf = OptimalTreeClassifier(max_depth=2, formulation=formulation, min_samples_leaf=4, time_limit=None)
    clf.fit(X, y)
    sizes = clf.tree_.n_node_samples[clf.tree_.is_leaf]
    assert sizes.min() >= 4
    assert clf.result_.proven_optimal


# Depth 2 (check_classifiers_train wants > 83 % training accuracy on 3 blobs); node_limit=0
# keeps the checks fast and deterministic: the CART start carries the accuracy. The
# estimator wrapper is the same for every formulation.
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # a limit stops the fit on purpose
@parametrize_with_checks(
    [OptimalTreeClassifier(max_depth=2, formulation="oct", node_limit=0, time_limit=30)],
    expected_failed_checks=lambda est: {"check_class_weight_classifiers": (
        "the tree minimises the weighted training errors exactly: with class weights 1000:0.0001 a leaf "
        "holding only minority rows still predicts their class; scikit-learn's trees pass this check through "
        "min_weight_fraction_leaf=0.01, which it sets for them and this estimator does not have")},
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
