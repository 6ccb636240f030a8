"""The problem layer (optitree.problem): one unit system for the engine and the formulations, the loss
policies, and results in the user's units."""

import ast
import pathlib
import re

import numpy as np
import pytest

from optitree import OptimalTreeClassifier, OptimalTreeRegressor, exact
from optitree.exact import _kernels as K
from optitree.formulations import FlowOCTFormulation, ORTFormulation
from optitree.problem import LOSSES, Units, get_loss, weighted_median
from support.exact_bruteforce import brute_force
from support.regression_bruteforce import brute_force as regression_brute_force

SRC = pathlib.Path(__file__).resolve().parents[2] / "src" / "optitree"


def test_loss_codes_are_the_compiled_cores():
    assert {name: loss.engine_code for name, loss in LOSSES.items()} == {
        "misclassification": K.MISCLASSIFICATION, "squared": K.SQUARED, "absolute": K.ABSOLUTE}
    with pytest.raises(ValueError, match="loss must be one of"):
        get_loss("hinge")


def test_weighted_median_minimises_the_absolute_error():
    rng = np.random.default_rng(0)
    for _ in range(50):
        v, w = rng.integers(0, 6, 7).astype(float), rng.integers(1, 4, 7).astype(float)
        m = weighted_median(v, w)
        best = min((w * np.abs(v - c)).sum() for c in v)
        assert (w * np.abs(v - m)).sum() == pytest.approx(best, abs=1e-12)


@pytest.mark.parametrize("weight_scale, target_scale", [(1.0, 1.0), (1e-300, 1e300), (1e300, 1e-300), (3.0, 7.0)])
def test_units_are_exact_powers_of_two(weight_scale, target_scale):
    rng = np.random.default_rng(1)
    w = rng.uniform(0.5, 4.0, 20) * weight_scale
    y = rng.normal(size=20) * target_scale
    units = Units.of(w, get_loss("squared"), y)
    assert units.weight_unit <= w.min() < 2 * units.weight_unit
    assert np.log2(units.weight_unit).is_integer() and np.log2(units.target_scale).is_integer()
    t = units.targets(y)
    assert np.abs(t).max() <= 1.0 and np.abs(t).max() >= 0.25
    np.testing.assert_array_equal(units.weights(w) * units.weight_unit, w)


def test_a_weight_spread_above_2_to_the_1000_is_refused_by_every_solver():
    X, y = np.arange(6.0)[:, None], np.array([0, 1, 0, 1, 0, 1])
    w = np.array([1.0, 1, 1, 1, 1, 2.0**-1001])
    for make in (lambda: exact.prepare(X, y, w), lambda: FlowOCTFormulation.of(X, y, depth=1, sample_weight=w)):
        with pytest.raises(ValueError, match="more than 2\\*\\*1000"):
            make()


@pytest.mark.parametrize("seed", range(6))
def test_the_engine_and_the_formulations_share_one_unit_system(seed):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, (12, 2)).astype(float)
    y = rng.normal(size=12) * 10.0 ** rng.integers(-200, 200)
    w = rng.uniform(0.1, 3.0, 12) * 10.0 ** rng.integers(-100, 100)
    w[rng.integers(12)] = 0.0
    for loss in ("squared", "absolute"):
        form = ORTFormulation.of(X, y, depth=1, sample_weight=w, loss=loss)
        data = exact.prepare(X, y, w, loss=loss, report="problem")
        assert data.units == form.units
        # the engine's cost of the root leaf is the formulation's baseline in model units
        leaf = exact.solve(data, max_depth=1, alpha=1e250)
        assert leaf.objective * form.model_error_scale == pytest.approx(1.0, rel=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_an_engine_proven_classifier_reports_weighted_errors(seed):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 5, (40, 3)).astype(float)
    y = rng.integers(0, 3, 40)
    w = rng.integers(1, 5, 40).astype(float)
    clf = OptimalTreeClassifier(max_depth=2).fit(X, y, sample_weight=w)
    r = clf.result_
    assert r.proven_optimal and r.acceleration["certificate"] == "engine"
    errors = float(w[clf.predict(X) != y].sum())
    assert r.objective == pytest.approx(errors, abs=1e-9) and r.bound == pytest.approx(errors, abs=1e-9)
    assert errors == pytest.approx(brute_force(X, y, w, 2, 0.0, 1, None), abs=1e-9)
    assert r.normalized_objective == pytest.approx(errors * r.objective_units["normalization"])
    assert r.objective_units["name"] == "errors"
    assert r.trace[-1]["incumbent"] == pytest.approx(errors)
    assert "normalised" in clf.result_.summary()


def test_a_mip_proven_classifier_reports_weighted_errors():
    rng = np.random.default_rng(5)
    X = rng.integers(0, 4, (24, 2)).astype(float)
    y = rng.integers(0, 2, 24)
    w = rng.integers(1, 4, 24).astype(float)
    clf = OptimalTreeClassifier(max_depth=2, solver="highs", acceleration="none", time_limit=60,
                                init=None).fit(X, y, sample_weight=w)
    r = clf.result_
    assert r.proven_optimal
    errors = float(w[clf.predict(X) != y].sum())
    assert errors == pytest.approx(brute_force(X, y, w, 2, 0.0, 1, None), abs=1e-9)
    assert r.objective == pytest.approx(errors, abs=1e-6) and r.bound == pytest.approx(errors, abs=1e-6)
    assert max(p["incumbent"] for p in r.trace if p["incumbent"] is not None) <= w.sum() + 1e-9


def test_a_penalised_regressor_reports_the_loss_plus_the_penalty_in_the_data_units():
    rng = np.random.default_rng(3)
    X = rng.integers(0, 4, (30, 2)).astype(float)
    y = rng.normal(size=30) * 1e3
    alpha = 0.05
    reg = OptimalTreeRegressor(max_depth=2, loss="squared", alpha=alpha).fit(X, y)
    r = reg.result_
    sse = float(((reg.predict(X) - y) ** 2).sum())
    sst = float(((y - y.mean()) ** 2).sum())
    assert r.objective == pytest.approx(sse + alpha * sst * reg.tree_.n_splits, rel=1e-9)
    assert r.normalized_objective == pytest.approx(sse / sst + alpha * reg.tree_.n_splits, rel=1e-9)
    best = regression_brute_force(X, y, None, 2, alpha * sst, 1, None, "squared")
    assert r.objective == pytest.approx(best, rel=1e-9) and r.bound <= r.objective


def test_no_stage_outside_the_formulations_peeks_into_one():
    """The pipeline and the estimators ask a formulation (its contract), never read its variable dict or
    private attributes, and never switch on its name."""
    offenders = []
    for path in SRC.rglob("*.py"):
        if "formulations" in path.parts:
            continue
        text = path.read_text()
        for pattern in (r"\bform\.vars\b", r"\bform\._\w+", r"\bform\.name\s*(==|!=|in\b)",
                        r"form\.task\.to_model_units", r"\bmodel_units\(", r"\bengine_targets\("):
            offenders += [f"{path.relative_to(SRC)}: {m.group(0)}" for m in re.finditer(pattern, text)]
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute) and node.left.attr == "name" \
                    and isinstance(node.left.value, ast.Attribute) and node.left.value.attr == "form":
                offenders.append(f"{path.relative_to(SRC)}:{node.lineno}: a switch on a formulation's name")
    assert offenders == []


# ---------------------------------------------------------------------------- the Problem value
from optitree.problem import Problem  # noqa: E402
from support.exact_bruteforce import random_instance  # noqa: E402
from optitree.pipeline import FitRequest  # noqa: E402


def _as_problem(X, y, w, opts, loss="misclassification"):
    """The brute-force instance as a Problem: its alpha (loss units) as a fraction of the all-rows leaf's loss
    (brute force at depth 0), and that baseline."""
    base = (brute_force(X, y, w, 0, 0.0, 1, None) if loss == "misclassification"
            else regression_brute_force(X, y, w, 0, 0.0, 1, None, loss))
    problem = Problem.of(X, y, w, loss=loss, depth=opts["max_depth"],
                         alpha=opts["alpha"] / base if base > 0 else opts["alpha"],
                         min_samples_leaf=opts["min_samples_leaf"], allowed_features=opts["allowed_features"])
    return problem, base


@pytest.mark.parametrize("seed", range(40))
def test_the_engine_solves_a_problem_to_the_brute_forced_optimum(seed):
    X, y, w, opts = random_instance(seed, max_rows=10)
    problem, base = _as_problem(X, y, w, opts)
    truth = brute_force(X, y, w, **opts)
    result = exact.solve(problem)
    assert result.status == "optimal"
    scale = 1.0 if base == 0 else base  # a split costs problem.alpha * base, in the loss's units
    assert result.objective == pytest.approx(truth, rel=1e-9, abs=1e-9 * scale)
    assert result.bound == pytest.approx(truth, rel=1e-9, abs=1e-9 * scale)


@pytest.mark.parametrize("seed", range(6))
def test_a_formulation_of_the_same_problem_reaches_the_brute_forced_optimum(seed):
    """The MIP (FlowOCT, HiGHS, no engine) of one Problem value: its normalised objective is the brute-forced
    optimum over the baseline."""
    from optitree.model import solve_profile  # noqa: F401  (the MIP stack imports)
    from optitree.solvers import SolveOptions, make_backend

    X, y, w, opts = random_instance(seed, max_rows=8, depth=2)
    opts["allowed_features"] = None
    problem, base = _as_problem(X, y, w, opts)
    truth = brute_force(X, y, w, **opts)
    form = FlowOCTFormulation(problem)
    spec = form.build()
    result, x = make_backend("highs", spec).solve(SolveOptions(time_limit=60))
    assert result.proven_optimal
    expected = truth / base if base > 0 else truth
    assert form.objective_of_tree(form.decode(spec, x)) == pytest.approx(expected, rel=1e-7, abs=1e-9)


@pytest.mark.parametrize("seed", range(12))
def test_restricted_and_relaxed_problems_share_one_encoding(seed):
    """solve(data, problem=...) on one ExactData: a restricted problem is brute force's under its mask, a
    relaxed one brute force's without it at the new depth."""
    X, y, w, opts = random_instance(seed, max_rows=10, depth=2)
    problem, _ = _as_problem(X, y, w, {**opts, "allowed_features": None})
    data = exact.prepare(problem)
    mask = np.random.default_rng(seed).random((3, X.shape[1])) < 0.6
    restricted = exact.solve(data, problem=problem.restricted(mask))
    assert restricted.objective == pytest.approx(brute_force(X, y, w, **{**opts, "allowed_features": mask}),
                                                 rel=1e-9, abs=1e-12)
    relaxed = exact.solve(data, problem=problem.restricted(mask).relaxed(1))
    assert relaxed.objective == pytest.approx(brute_force(X, y, w, **{**opts, "max_depth": 1,
                                                                      "allowed_features": None}),
                                              rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("loss", ["squared", "absolute"])
def test_regression_problems_reach_the_brute_forced_optimum(seed, loss):
    X, _, w, opts = random_instance(seed, max_rows=9, depth=2)
    y = np.random.default_rng(seed).normal(size=X.shape[0]) * 10.0 ** np.random.default_rng(seed).integers(-3, 4)
    problem, base = _as_problem(X, y, w, opts, loss=loss)
    truth = regression_brute_force(X, y, w, **opts, loss=loss)
    assert exact.solve(problem).objective == pytest.approx(truth, rel=1e-9, abs=1e-12 * max(base, 1e-300))


def test_problem_of_refuses_bad_statements_with_a_value_error():
    X, y = np.arange(8.0).reshape(4, 2), np.array([0, 1, 0, 1])
    for kwargs, message in [({"depth": 0}, "max_depth must be an integer >= 1"),
                            ({"depth": 1.5}, "max_depth must be an integer >= 1"),
                            ({"depth": 2, "alpha": -1.0}, "alpha must be a finite number >= 0"),
                            ({"depth": 2, "alpha": np.inf}, "alpha must be a finite number >= 0"),
                            ({"depth": 2, "min_samples_leaf": 0}, "min_samples_leaf must be an integer >= 1"),
                            ({"depth": 2, "max_bins": 1}, "max_bins"),
                            ({"depth": 2, "max_bins": 2.5}, "max_bins"),
                            ({"depth": 2, "max_distinct_features": 0}, "max_distinct_features"),
                            ({"depth": 2, "allowed_features": np.ones(3, bool)}, "allowed_features must have shape"),
                            ({"depth": 2, "allowed_features": np.ones(2)}, "boolean mask"),
                            ({"depth": 2, "loss": "hinge"}, "loss must be one of")]:
        with pytest.raises(ValueError, match=message):
            Problem.of(X, y, **kwargs)
    with pytest.raises(ValueError, match="class codes"):
        Problem.of(X, np.array([0.5, 1.0, 0.0, 1.0]), depth=1)
    with pytest.raises(ValueError, match="regression targets must be finite"):
        Problem.of(X, np.array([0.5, np.nan, 0.0, 1.0]), loss="squared", depth=1)


def test_a_problem_states_the_whole_problem_to_the_engine():
    X, y = np.arange(8.0).reshape(4, 2), np.array([0, 1, 0, 1])
    problem = Problem.of(X, y, depth=2)
    for kwargs in ({"max_depth": 2}, {"alpha": 0.0}, {"min_samples_leaf": 1}, {"loss": "misclassification"}):
        with pytest.raises(ValueError, match="a Problem states the whole problem"):
            exact.solve(problem, **kwargs)
    other_rows = (exact.prepare(X, y, np.array([4.0, 1.0, 1.0, 1.0])),  # same units, other weights
                  exact.prepare(X, y), exact.prepare(Problem.of(X, y, depth=2)))
    for data in other_rows:
        with pytest.raises(ValueError, match="problem= takes the ExactData"):
            exact.solve(data, problem=problem)
    data = exact.prepare(problem)
    assert exact.solve(data, problem=problem.relaxed(1)).objective == brute_force(X, y, None, 1, 0.0, 1, None)


def test_the_fit_request_carries_no_part_of_the_problem():
    names = set(FitRequest.__dataclass_fields__)
    assert not names & {"max_depth", "min_samples_leaf", "allowed", "max_distinct_features", "max_bins",
                        "engine_loss", "alpha"}
