"""The task-agnostic formulation core: task policies, the registry, per-instance lower bounds and
the rows_after_solve hook run by the fit pipeline."""

import functools

import numpy as np
import pytest

from greedy import Tree
from optitree import OptimalTreeClassifier as _OptimalTreeClassifier
from optitree import OptimalTreeRegressor
from optitree.problem import Problem
from optitree.formulations import (
    FORMULATIONS,
    ClassificationTask,
    OCTFormulation,
    ORTFormulation,
    RegressionTask,
    formulation_names,
)

# the MIP alone: no exact engine
OptimalTreeClassifier = functools.partial(_OptimalTreeClassifier, acceleration="none")


def xor_data(n=40, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.rand(n, 3)
    y = ((X[:, 0] > 0.5) ^ (rng.rand(n) < 0.15)).astype(int)
    return X, y


# ---------------------------------------------------------------------- task policies
def test_regression_rows_keep_their_real_targets_and_merge_only_equal_ones():
    X = np.array([[0.0], [0.0], [0.0], [1.0]])
    y = np.array([2.5, 2.5, -1.0, 7.0])
    form = ORTFormulation.of(X, y, depth=1, sample_weight=[1.0, 3.0, 1.0, 1.0])
    assert isinstance(form.task, RegressionTask) and form.n_classes == 0
    np.testing.assert_array_equal(form.X[:, 0], [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(form.y, [-1.0, 2.5, 7.0])  # targets, not class codes
    np.testing.assert_array_equal(form.weight, [1.0, 4.0, 1.0])
    np.testing.assert_array_equal(form.count, [1.0, 2.0, 1.0])
    # baseline: weighted absolute error of the weighted median (2.5), in user units
    assert form.baseline_error == pytest.approx(1 * 3.5 + 1 * 4.5)


def test_squared_baseline_and_units_are_scaled_back_exactly():
    rng = np.random.default_rng(0)
    X, y = rng.random((30, 2)), rng.normal(size=30) * 1e12
    form = ORTFormulation.of(X, y, depth=1, loss="squared")
    assert form.baseline_error == pytest.approx(((y - y.mean()) ** 2).sum(), rel=1e-12)
    assert form.error_scale == pytest.approx(1 / form.baseline_error, rel=1e-12)
    assert np.abs(form.model_target).max() <= 1.0  # the model sees targets of order one


def test_classification_baseline_is_the_majority_error():
    X, y = xor_data()
    form = OCTFormulation.of(X, y, depth=1, sample_weight=np.full(len(y), 3.0))
    assert isinstance(form.task, ClassificationTask) and form.n_classes == 2
    assert form.baseline_error == pytest.approx(3.0 * np.bincount(y).min())


def test_a_formulation_takes_trees_of_its_own_task_only():
    X, y = xor_data()
    yr = X[:, 0] + X[:, 1]
    reg_tree = OptimalTreeRegressor(max_depth=1, time_limit=None).fit(X, yr).tree_
    clf_tree = OptimalTreeClassifier(max_depth=1, time_limit=None).fit(X, y).tree_
    with pytest.raises(ValueError, match="regression formulation needs a regression tree"):
        ORTFormulation.of(X, yr, depth=1).prepare_start(clf_tree)
    with pytest.raises(ValueError, match="classification formulation needs a classification tree"):
        OCTFormulation.of(X, y, depth=1).prepare_start(reg_tree)
    with pytest.raises(ValueError, match="OCTFormulation models a classification loss, not the problem's 'squared'"):
        OCTFormulation(Problem.of(X, yr, loss="squared", depth=1))
    with pytest.raises(ValueError, match="ORTFormulation models a regression loss"):
        ORTFormulation(Problem.of(X, y, depth=1))
    with pytest.raises(ValueError, match="class codes"):
        OCTFormulation.of(X, yr, depth=1)
    with pytest.raises(TypeError, match="takes an optitree.problem.Problem"):
        OCTFormulation(X)


def test_linear_leaves_are_not_pruned_constant_ones_are():
    x = np.linspace(0, 1, 12)
    X, y = x[:, None], 2 * x  # the split at the median halves the absolute loss of constant leaves
    stump = Tree([1, -1, -1], [2, -1, -1], [0, -2, -2], [0.5, np.nan, np.nan], [[0.0]] * 3, n_features=1,
                 task="regression")
    kept = ORTFormulation.of(X, y, depth=1, alpha=0.2).prepare_start(stump)[0]
    assert kept.n_splits == 1
    np.testing.assert_allclose(kept.value[1:, 0], [np.median(y[:6]), np.median(y[6:])])  # leaf values: medians
    pruned = ORTFormulation.of(X, y, depth=1, alpha=5.0).prepare_start(stump)[0]
    assert pruned.n_splits == 0
    linear = ORTFormulation.of(X, y, depth=1, alpha=5.0, leaf_model="linear").prepare_start(stump)[0]
    assert linear.n_splits == 1


# ---------------------------------------------------------------------- registry
def test_ort_is_registered_and_each_estimator_offers_its_task():
    assert FORMULATIONS["ort"] is ORTFormulation
    assert formulation_names("regression") == {"ort"}
    assert formulation_names("classification") == {"oct", "flow", "oct-h"}
    X, y = xor_data()
    with pytest.raises(ValueError, match="formulation"):
        OptimalTreeClassifier(formulation="ort").fit(X, y)


def test_the_regressor_builds_its_formulation_through_the_registry(monkeypatch):
    built = []

    class Recorded(ORTFormulation):
        def build(self):
            built.append(self)
            return super().build()

    monkeypatch.setitem(FORMULATIONS, "ort", Recorded)
    X, y = xor_data()
    reg = OptimalTreeRegressor(max_depth=1, time_limit=None, acceleration="none").fit(X, X[:, 0] + y)
    assert len(built) == 1 and built[0].leaf_model == "constant" and reg.result_.has_solution


# ---------------------------------------------------------------------- per-instance lower bound
def test_objective_lower_bound_is_per_instance_and_raises_the_reported_bound(monkeypatch):
    from optitree.solvers import HighsBackend

    X, y = xor_data()
    optimum = OptimalTreeClassifier(max_depth=1, formulation="oct", time_limit=None).fit(X, y).result_.normalized_objective
    a, b = OCTFormulation.of(X, y, depth=1), OCTFormulation.of(X, y, depth=1)
    a.objective_lower_bound = optimum
    assert b.objective_lower_bound == 0.0

    class KnownBound(OCTFormulation):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.objective_lower_bound = optimum  # valid: the optimum itself

    real = HighsBackend._solve

    def weak_bound(self, options, on_event):  # a solver stopped before its root LP
        result, x = real(self, options, on_event)
        result.bound = -50.0
        return result, x

    monkeypatch.setitem(FORMULATIONS, "oct", KnownBound)
    monkeypatch.setattr(HighsBackend, "_solve", weak_bound)
    r = OptimalTreeClassifier(max_depth=1, formulation="oct", time_limit=None).fit(X, y).result_
    assert r.normalized_bound == optimum and r.gap == pytest.approx(0.0, abs=1e-9)
    assert f"bound raised to the objective's lower bound {optimum:g}" in r.message


# ---------------------------------------------------------------------- rows_after_solve
class ForbidFirstRoot(OCTFormulation):
    """Outer loop of one round: forbid the feature the first solution splits the root on."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.forbidden = None
        self.calls = 0

    def rows_after_solve(self, x, result):
        self.calls += 1
        root = self.spec.block_values(x, "a")[0]
        if self.forbidden is not None:
            assert root[self.forbidden] < 0.5  # the re-solve respects the row
            return None
        self.forbidden = int(root.argmax())
        col = self.vars["a"][0, self.forbidden]
        return [("forbid_first_root", 1, [0], [col], [1.0], 0.0, 0.0)]


def test_rows_after_solve_resolves_and_the_tree_respects_the_rows(monkeypatch):
    X, y = xor_data()
    forms = []

    def make(*args, **kwargs):
        forms.append(ForbidFirstRoot(*args, **kwargs))
        return forms[-1]

    monkeypatch.setitem(FORMULATIONS, "oct", make)
    clf = OptimalTreeClassifier(max_depth=1, formulation="oct", init=None, time_limit=None).fit(X, y)
    form, r = forms[0], clf.result_
    assert form.forbidden == 0 and form.calls == 2  # feature 0 is the best root; one re-solve
    assert clf.tree_.feature[0] != 0
    assert r.n_rows == form.spec.n_rows and "forbid_first_root" in form.spec.row_blocks
    assert "rows_after_solve: 1 row(s) added in 1 round(s), solved 2 times" in r.message
    events = [p["event"] for p in r.trace]
    assert events.count("rows") == 1 and events[-1] == "final" and events.count("final") == 1
    times = [p["time"] for p in r.trace]
    assert times == sorted(times) and r.solve_time == times[-1]
    assert r.proven_optimal
    # the same restriction stated up front gives the same optimum
    allowed = np.ones((1, 3), bool)
    allowed[0, 0] = False
    monkeypatch.undo()
    direct = OptimalTreeClassifier(max_depth=1, formulation="oct", init=None, time_limit=None,
                                   allowed_features=allowed).fit(X, y)
    assert r.objective == pytest.approx(direct.result_.objective, abs=1e-9)
    assert r.objective > OptimalTreeClassifier(max_depth=1, formulation="oct", time_limit=None).fit(X, y).result_.objective


def test_without_rows_the_solve_is_unchanged():
    X, y = xor_data()
    clf = OptimalTreeClassifier(max_depth=1, formulation="flow", time_limit=None).fit(X, y)
    assert "rows_after_solve" not in clf.result_.message
    assert [p["event"] for p in clf.result_.trace].count("final") == 1
