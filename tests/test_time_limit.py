"""Time limits: the HiGHS guard, the engine's compilation off the clock, fit_time.

No test measures wall time (the overshoot is measured by experiments/bench_time_limit.py):
the clock is replaced by a fast or shifted one.
"""

import time

import numpy as np
from sklearn.datasets import load_iris

from optitree import OptimalTreeClassifier, exact
from optitree.pipeline import _fit as fit_pipeline
from optitree.solvers import SolveOptions, solve_highs
from optitree.solvers import highs as highs_backend
from test_solve import multi_knapsack


class FastClock:
    """A stand-in for the ``time`` module whose ``perf_counter`` runs ``speed`` times faster."""

    def __init__(self, speed):
        self.speed = speed

    def perf_counter(self):
        return time.perf_counter() * self.speed


def test_guard_interrupts_a_run_past_the_limit(monkeypatch):
    # HiGHS's own clock allows 1000 s; the guard's clock runs 1e6 times faster, so the
    # first interrupt callback finds the limit passed: the run stops as a time limit
    spec, _ = multi_knapsack()
    monkeypatch.setattr(highs_backend, "time", FastClock(1e6))
    result, x = solve_highs(spec.to_highs(), SolveOptions(time_limit=1000.0, node_limit=100_000))
    assert result.termination == "time_limit"
    assert result.nodes < 100_000


def test_guard_leaves_a_run_within_the_limit_alone():
    spec, _ = multi_knapsack()
    result, _ = solve_highs(spec.to_highs(), SolveOptions(time_limit=1000.0))
    assert result.termination == "optimal"


def test_engine_compilation_is_build_time_not_charged_to_the_limit(monkeypatch):
    # pretend compiling the engine's kernels took 1000 s: it is reported as build time and the
    # solver still gets the time limit less the fit's own work, not the 5 % floor
    class ShiftedClock:
        offset = 0.0

        def perf_counter(self):
            return time.perf_counter() + self.offset

    clock = ShiftedClock()

    def slow_warm_up():
        clock.offset += 1000.0
        return 1000.0

    monkeypatch.setattr(fit_pipeline, "time", clock)
    monkeypatch.setattr(exact, "warm_up", slow_warm_up)
    X, y = load_iris(return_X_y=True)
    clf = OptimalTreeClassifier(max_depth=2, formulation="oct", acceleration="start", time_limit=50.0,
                                node_limit=0).fit(X, y)
    assert clf.result_.build_time >= 1000.0
    assert clf.result_.options["time_limit"] > 40.0
    assert clf.result_.fit_time >= 1000.0


def test_fit_time_covers_build_and_solve():
    X, y = load_iris(return_X_y=True)
    clf = OptimalTreeClassifier(max_depth=2, formulation="oct", acceleration="none", node_limit=20).fit(X[::5], y[::5])
    r = clf.result_
    assert r.fit_time >= r.build_time + r.solve_time
    assert f"fit {r.fit_time:.2f} s" in r.summary()


def test_warm_up_compiles_once():
    exact.warm_up()
    assert exact.warm_up() == 0.0
    assert np.isfinite(exact.solve(np.eye(3), np.arange(3), max_depth=2).objective)


def test_work_limit_stops_the_engine_the_same_way_every_time():
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    fits = [OptimalTreeClassifier(max_depth=3, work_limit=3000, time_limit=None).fit(X, y) for _ in range(2)]
    first, second = (f.result_ for f in fits)
    assert first.status == "work_limit" and not first.proven_optimal
    assert first.acceleration["engine"]["stopped_by"] == "work_limit"
    assert (first.objective, first.bound) == (second.objective, second.bound)
    assert fits[0].tree_.to_json() == fits[1].tree_.to_json()
    proven = OptimalTreeClassifier(max_depth=3).fit(X, y).result_
    assert first.bound <= proven.objective <= first.objective  # the stopped fit's bound is a bound
