"""``result_.summary()``: the objective and its bound in the data's units, and what the fit solved."""

import dataclasses
import re

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from optitree import OptimalTreeClassifier, OptimalTreeRegressor, datasets
from support.models import assignment_spec
from optitree.solvers import SolveOptions, solve_highs


def in_data_units(text):
    """The objective and bound the summary states (the data's units for an estimator's fit)."""
    found = re.search(r"objective: (\S+)  bound: (\S+)", text)
    return float(found.group(1)), float(found.group(2))


def test_the_bound_is_converted_like_the_objective():
    result, _ = solve_highs(assignment_spec()[0].to_highs(), SolveOptions())
    result = dataclasses.replace(result, objective=1.0, bound=0.5, start_objective=2.0,
                                 trace=[{"time": 0.0, "incumbent": 1.0, "bound": 0.5, "event": "final"}])
    result.express_in_user_units("errors", 0.25)
    assert (result.objective, result.bound, result.start_objective) == (4.0, 2.0, 8.0)  # 1 / 0.25, 0.5 / 0.25, ...
    assert (result.trace[0]["incumbent"], result.trace[0]["bound"]) == (4.0, 2.0)
    assert (result.normalized_objective, result.normalized_bound) == (1.0, 0.5)
    text = result.summary()
    assert in_data_units(text) == (4.0, 2.0)
    assert "units: errors; normalised (x 0.25, as the model minimises it): objective 1, bound 0.5" in text


def test_a_mip_fit_states_its_size_and_start():
    X, y, _ = datasets.load("xor", n=40, seed=0)
    text = OptimalTreeClassifier(max_depth=2, acceleration="none").fit(X, y).result_.summary()
    assert re.search(r"size: [1-9]\d* rows, [1-9]\d* columns .*; start: cart \(objective", text)
    assert "; nodes: " in text and "search:" not in text


def test_an_engine_fit_states_its_search_and_no_mip_size():
    X, y, _ = datasets.load("xor", n=40, seed=0)
    text = OptimalTreeClassifier(max_depth=2).fit(X, y).result_.summary()
    assert "search: the exact engine (optimal, " in text and "no MIP was built" in text
    assert "size:" not in text and "nodes:" not in text and "start: none" not in text


def test_a_stopped_engine_fit_states_its_bound_in_the_data_units():
    rng = np.random.RandomState(0)
    X = rng.rand(300, 6)
    y = np.sin(6 * X[:, 0]) * 50 + X[:, 1] * 30 + rng.randn(300)
    with pytest.warns(ConvergenceWarning):
        stopped = OptimalTreeRegressor(max_depth=3, work_limit=10_000, time_limit=None).fit(X, y)
    text = stopped.result_.summary()
    assert "search: the exact engine (work_limit, " in text and "size:" not in text
    objective, bound = in_data_units(text)
    optimum = OptimalTreeRegressor(max_depth=3, time_limit=None).fit(X, y)
    assert optimum.result_.proven_optimal
    sse = lambda est: float(((est.predict(X) - y) ** 2).sum())  # noqa: E731
    assert objective == pytest.approx(sse(stopped), rel=1e-5)  # the squared error of the tree, as printed (6 digits)
    assert 0 < bound <= sse(optimum) <= objective
