"""Solve adapter: HiGHS options/statuses/start/trace, Pyomo solvers, SolveResult."""

import dataclasses
import json
import math

import numpy as np
import pytest

from optitree.model import ModelSpec
from optitree.solvers import STATUSES, SolveOptions, SolveResult, relative_gap, solve_highs, solve_pyomo
from optitree.solvers import pyomo as pyomo_backend
from support.models import assignment_spec, multi_knapsack, objective_of


def test_assignment_same_optimum_through_highs_and_pyomo():
    spec, best = assignment_spec()
    result, x = solve_highs(spec.to_highs(), SolveOptions())
    assert result.status == "optimal" and result.proven_optimal
    assert result.objective == pytest.approx(best)
    assert objective_of(spec, x) == pytest.approx(best)
    assert (result.n_rows, result.n_cols, result.n_nonzeros, result.n_integer) == (7, 9, 20, 9)
    for name in ("appsi_highs", "highs"):
        r, xp = solve_pyomo(spec, name, SolveOptions())
        assert r.status == "optimal" and r.proven_optimal and r.solver == f"pyomo:{name}"
        assert r.objective == pytest.approx(best)
        assert objective_of(spec, xp) == pytest.approx(best)
        assert (r.n_rows, r.n_cols, r.n_nonzeros) == (result.n_rows, result.n_cols, result.n_nonzeros)
        assert "pyomo" in r.versions


def test_lp_without_integers_is_optimal_with_bound_equal_objective():
    spec = ModelSpec("lp")
    x = spec.add_vars("x", 2, obj=[-1.0, -1.0])
    spec.add_rows("r", 2, [0, 0, 1, 1], [x[0], x[1], x[0], x[1]], [1.0, 2.0, 3.0, 1.0], -np.inf, [4, 6])
    result, sol = solve_highs(spec.to_highs(), SolveOptions())
    assert result.status == "optimal" and result.proven_optimal
    assert result.objective == pytest.approx(-2.8) and result.bound == pytest.approx(-2.8)
    np.testing.assert_allclose(sol, [1.6, 1.2], atol=1e-9)


def test_infeasible_is_a_status_for_highs_and_pyomo():
    spec = ModelSpec("infeasible")
    x = spec.add_vars("x", 2, ub=1, integer=True, obj=1.0)
    spec.add_rows("r", 1, [0, 0], x, [1.0, 1.0], 3, np.inf)
    result, sol = solve_highs(spec.to_highs(), SolveOptions())
    assert (result.status, result.objective, sol, result.proven_optimal) == ("infeasible", None, None, False)
    for name in ("appsi_highs", "highs"):
        r, xp = solve_pyomo(spec, name, SolveOptions())
        assert (r.status, xp) == ("infeasible", None)


def test_node_limit_with_and_without_solution():
    spec, _ = multi_knapsack()
    full, _ = solve_highs(spec.to_highs(), SolveOptions())
    assert full.status == "optimal" and full.nodes > 5
    limited, x = solve_highs(spec.to_highs(), SolveOptions(node_limit=5))
    assert limited.status == "node_limit" and not limited.proven_optimal
    assert limited.nodes <= 5 and x is not None
    assert limited.objective >= full.objective - 1e-9 and limited.bound <= full.objective + 1e-9
    assert objective_of(spec, x) == pytest.approx(limited.objective)
    none, x0 = solve_highs(spec.to_highs(), SolveOptions(node_limit=0))
    assert none.status == "node_limit_no_solution" and x0 is None and not none.has_solution
    r, xp = solve_pyomo(spec, "appsi_highs", SolveOptions(node_limit=5))
    assert r.status == "node_limit" and xp is not None


def test_time_limit_is_a_status_with_or_without_solution():
    spec, greedy = multi_knapsack()
    tiny = SolveOptions(time_limit=1e-6)  # HiGHS stops before its search: no timing assertion
    cold, x = solve_highs(spec.to_highs(), tiny)
    assert (cold.status, x, cold.objective) == ("time_limit_no_solution", None, None)
    warm, x = solve_highs(spec.to_highs(), tiny, start=dict(enumerate(greedy)))
    assert warm.status == "time_limit" and warm.start_accepted is True
    assert warm.objective == pytest.approx(objective_of(spec, greedy))
    for name in ("appsi_highs", "highs"):
        r, xp = solve_pyomo(spec, name, tiny)
        assert (r.status, xp) == ("time_limit_no_solution", None)


def test_a_complete_feasible_start_survives_a_limit_hit_before_highs_reads_it(monkeypatch):
    # what made the test above flaky under load: HiGHS stopped at its clock before reading the start
    from optitree.solvers import highs as highs_backend

    spec, greedy = multi_knapsack()
    monkeypatch.setattr(highs_backend, "_set_start", lambda h, start, n_cols: highs_backend.check_start(start, n_cols))
    warm, x = solve_highs(spec.to_highs(), SolveOptions(time_limit=1e-6), start=dict(enumerate(greedy)))
    assert warm.status == "time_limit" and warm.start_accepted is True
    assert warm.objective == pytest.approx(objective_of(spec, greedy)) and np.array_equal(x, greedy)
    assert "stopped before reading the start" in warm.message
    infeasible = np.ones(len(greedy))  # every item: over capacity
    assert highs_backend._feasible_start(spec.to_highs(), np.arange(len(greedy)), infeasible) is None


def test_trace_is_monotone_and_ends_with_final():
    spec, _ = multi_knapsack()
    result, _ = solve_highs(spec.to_highs(), SolveOptions())
    trace = result.trace
    assert trace[-1]["event"] == "final" and trace[-1]["incumbent"] == result.objective
    assert any(p["event"] == "improving" for p in trace)
    times = [p["time"] for p in trace]
    assert times == sorted(times) and times[-1] == result.solve_time
    incumbents = [p["incumbent"] for p in trace if p["incumbent"] is not None]
    assert all(b <= a + 1e-9 for a, b in zip(incumbents, incumbents[1:]))
    assert set(p["event"] for p in trace) <= {"improving", "progress", "final"}


def test_gap_is_highs_definition_below_unit_objective():
    """|objective| < 1, where |obj - bound| / max(1, |obj|) would differ from HiGHS's own mip_gap."""
    spec, _ = multi_knapsack()
    h = spec.to_highs()
    cost = spec.column_arrays()[0]
    h.changeColsCost(spec.n_cols, np.arange(spec.n_cols, dtype=np.int32), cost * 1e-3)
    h.changeObjectiveOffset(0.0)
    result, _ = solve_highs(h, SolveOptions(node_limit=3))
    assert result.status == "node_limit" and abs(result.objective) < 1 and result.gap > 0
    assert result.gap == pytest.approx(h.getInfo().mip_gap, rel=1e-9)
    assert result.trace[-1]["gap"] == result.gap
    for point in result.trace:
        assert point["gap"] == relative_gap(point["incumbent"], point["bound"])


def test_relative_gap_at_zero_objective():
    assert relative_gap(0.0, 0.0) == 0.0
    assert relative_gap(0.0, -0.5) == math.inf
    assert relative_gap(-0.5, -1.0) == pytest.approx(1.0)
    assert relative_gap(None, 0.0) is None and relative_gap(1.0, None) is None


def test_accepted_start_is_the_first_incumbent():
    spec, greedy = multi_knapsack()
    start_objective = objective_of(spec, greedy)
    cold, _ = solve_highs(spec.to_highs(), SolveOptions())
    result, _ = solve_highs(
        spec.to_highs(), SolveOptions(), start=dict(enumerate(greedy)),
        start_source="greedy", start_objective=start_objective,
    )
    assert result.start_accepted is True and result.start_source == "greedy"
    first = next(p for p in result.trace if p["incumbent"] is not None)
    assert first["event"] == "start" and first["incumbent"] == pytest.approx(start_objective)
    assert result.status == "optimal" and result.objective == pytest.approx(cold.objective)
    assert cold.start_accepted is None


def test_infeasible_start_is_rejected_and_solve_still_succeeds():
    spec, _ = multi_knapsack()
    ones = np.ones(spec.n_cols)
    cold, _ = solve_highs(spec.to_highs(), SolveOptions())
    result, _ = solve_highs(spec.to_highs(), SolveOptions(), start=dict(enumerate(ones)),
                            start_objective=objective_of(spec, ones))
    assert result.start_accepted is False and "rejected" in result.message
    assert result.status == "optimal" and result.objective == pytest.approx(cold.objective)
    assert all(p["event"] != "start" for p in result.trace)


def test_pyomo_start_acceptance():
    spec, greedy = multi_knapsack()
    start = {j: greedy[j] for j in range(spec.n_cols)}
    r, _ = solve_pyomo(spec, "appsi_highs", SolveOptions(node_limit=0), start=start)
    assert r.start_accepted is True
    assert r.objective == pytest.approx(objective_of(spec, greedy))  # no node: the start is all we have
    r, _ = solve_pyomo(spec, "appsi_highs", SolveOptions(node_limit=0), start=dict.fromkeys(start, 1.0))
    assert r.start_accepted is False and "no feasible completion" in r.message
    r, _ = solve_pyomo(spec, "highs", SolveOptions(node_limit=0), start=start)
    assert r.start_accepted is False and "passes no MIP start" in r.message


def test_thread_count_can_change_between_solves():
    import highspy

    spec, best = assignment_spec()
    for threads in (2, 1, 2, 1):
        result, _ = solve_highs(spec.to_highs(), SolveOptions(threads=threads))
        assert result.status == "optimal" and result.objective == pytest.approx(best)
        assert result.options["threads"] == threads
    # someone else in the process initialises HiGHS's scheduler with another thread count
    highspy.Highs.resetGlobalScheduler(True)
    other = spec.to_highs()
    other.setOptionValue("threads", 2)
    other.run()
    result, _ = solve_highs(spec.to_highs(), SolveOptions(threads=1))
    assert result.status == "optimal" and result.objective == pytest.approx(best)


def test_legacy_pyomo_interface(monkeypatch):
    from pyomo.opt import SolverFactory

    spec, best = assignment_spec()
    monkeypatch.setattr(pyomo_backend, "_pyomo_solver", lambda name: ("legacy", SolverFactory("appsi_highs")))
    r, x = solve_pyomo(spec, "appsi_highs", SolveOptions())
    assert r.status == "optimal" and r.objective == pytest.approx(best)
    assert objective_of(spec, x) == pytest.approx(best)
    assert "options not passed" in r.message


def test_missing_pyomo_solver_raises_value_error_naming_it():
    spec, _ = assignment_spec()
    with pytest.raises(ValueError, match="'no_such_solver'.*appsi_highs"):
        solve_pyomo(spec, "no_such_solver", SolveOptions())


def test_result_json_round_trip_and_summary():
    spec, greedy = multi_knapsack()
    result, _ = solve_highs(spec.to_highs(), SolveOptions(node_limit=5), start=dict(enumerate(greedy)),
                            start_source="greedy", start_objective=objective_of(spec, greedy))
    d = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    back = SolveResult.from_dict(d)
    assert back.to_dict() == d and back.status == "node_limit" and back.trace == d["trace"]
    text = result.summary()
    assert "node_limit" in text and "greedy" in text and "accepted" in text
    odd = SolveResult.from_dict({**d, "gap": math.nan, "bound": -math.inf})
    assert odd.to_dict()["gap"] is None and odd.to_dict()["bound"] is None
    with pytest.raises(ValueError, match="unknown"):
        SolveResult.from_dict({**d, "extra": 1})
    with pytest.raises(ValueError, match="status"):
        SolveResult.from_dict({**d, "status": "done"})
    assert set(STATUSES) >= {"optimal", "infeasible", "error"}


def test_summary_shows_solver_noise_on_a_zero_bound_as_zero():
    result, _ = solve_highs(assignment_spec()[0].to_highs(), SolveOptions())
    text = dataclasses.replace(result, termination="time_limit", proven_optimal=False, objective=0.0566,
                               bound=2.220446e-16, gap=1.0).summary()
    assert "bound: 0  gap: 100.00% (the bound is still 0: nothing proven beyond it)" in text
    assert "e-16" not in text


@pytest.mark.parametrize(
    "kwargs",
    [{"time_limit": 0}, {"time_limit": -1.0}, {"rel_gap": -0.1}, {"threads": 0},
     {"random_seed": -1}, {"node_limit": -1}, {"node_limit": 2.5}],
)
def test_bad_options_raise(kwargs):
    with pytest.raises(ValueError):
        SolveOptions(**kwargs)


def test_bad_start_raises():
    spec, _ = assignment_spec()
    with pytest.raises(ValueError, match="outside"):
        solve_highs(spec.to_highs(), SolveOptions(), start={99: 1.0})
    with pytest.raises(TypeError, match="dict"):
        solve_highs(spec.to_highs(), SolveOptions(), start=[1.0])


def test_a_quiet_fit_prints_nothing_not_even_the_highs_banner():
    """HiGHS 1.16 prints its banner from the first constructor of a process, before options."""
    import subprocess
    import sys

    code = (
        "import numpy as np\n"
        "from optitree import OptimalTreeClassifier\n"
        "X = np.arange(24.0).reshape(12, 2) % 5\n"
        "y = (X[:, 0] > 2).astype(int)\n"
        "OptimalTreeClassifier(max_depth=1, acceleration='none', time_limit=10).fit(X, y)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout == ""
