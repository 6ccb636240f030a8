"""The solver-backend contract: a backend registered from outside runs a fit; rows added between solves."""

import itertools

import functools

import numpy as np
import pytest
from scipy.optimize import linprog

from optitree import OptimalTreeClassifier as _OptimalTreeClassifier
from optitree.model import ModelSpec
from optitree.solvers import (
    SolveOptions,
    SolverBackend,
    SolveResult,
    make_backend,
    register_backend,
    registered_backends,
    unregister_backend,
)
from optitree.solvers.resolve import solve_adding_rows
from optitree.solvers.results import finished_result


# These tests are about the MIP itself: the exact engine's proofs and starts are switched off
# (tests/optitree/test_acceleration.py tests the accelerated default against brute force).
OptimalTreeClassifier = functools.partial(_OptimalTreeClassifier, acceleration="none")

class StartCompletionBackend(SolverBackend):
    """A fake solver: fixes the start's columns and completes the rest by an LP (scipy's linprog).

    It explores no branch-and-bound node, so it reports termination "node_limit".
    """

    family = "startlp"
    syntax = "'startlp:<anything>'"

    @classmethod
    def check_name(cls, name):
        if not name:
            raise ValueError("startlp needs a name")

    def _load(self):
        pass  # nothing to hand over: the spec is read at every solve

    def _add_rows(self, block):
        pass  # the block is in the spec already

    def _solve(self, options, on_event):
        spec = self.spec
        cost, lb, ub, _ = spec.column_arrays()
        if self._start is not None:
            idx = np.fromiter(self._start, dtype=np.int64)
            lb, ub = lb.copy(), ub.copy()
            lb[idx] = ub[idx] = np.fromiter(self._start.values(), dtype=float)
        A = spec.to_csr()
        row_lb, row_ub = spec.row_bounds()
        upper, lower = np.isfinite(row_ub), np.isfinite(row_lb)
        lp = linprog(
            cost, A_ub=np.vstack([A[upper].toarray(), -A[lower].toarray()]),
            b_ub=np.concatenate([row_ub[upper], -row_lb[lower]]), bounds=np.column_stack([lb, ub]),
        )
        x = lp.x if lp.status == 0 else None
        objective = None if x is None else float(cost @ x + spec.objective_offset)
        result = finished_result(
            termination="node_limit", objective=objective, bound=None, options=options, abs_tol=0.0,
            nodes=0, solve_time=0.0, trace=[], build_time=self.load_time, n_rows=spec.n_rows,
            n_cols=spec.n_cols, n_nonzeros=spec.nnz, n_integer=spec.n_integer, solver=self.solver,
            versions={}, start_source=self._start_source, start_objective=self._start_objective,
            start_accepted=None if self._start is None else x is not None,
        )
        if on_event is not None:
            on_event(dict(result.trace[-1]))
        return result, x


@pytest.fixture
def startlp():
    register_backend(StartCompletionBackend)
    yield StartCompletionBackend
    unregister_backend("startlp")


def noisy_data(n=40, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.rand(n, 3)
    y = (X[:, 0] * 3).astype(int)
    flip = rng.rand(n) < 0.2
    y[flip] = rng.randint(0, 3, flip.sum())
    return X, y


@pytest.mark.parametrize("formulation", ["flow", "oct"])
def test_registered_fake_backend_runs_a_fit_end_to_end(startlp, formulation):
    X, y = noisy_data()
    clf = OptimalTreeClassifier(max_depth=2, formulation=formulation, solver="startlp:any").fit(X, y)
    r = clf.result_
    assert isinstance(r, SolveResult)
    assert r.solver == "startlp:any" and r.termination == "node_limit" and r.status == "node_limit"
    assert r.start_source == "cart" and r.start_accepted is True and not r.proven_optimal
    # the fake returns the completed start: the fitted tree classifies like the start tree
    np.testing.assert_array_equal(clf.tree_.predict(X), clf.init_tree_.predict(X))
    # result_.objective is the tree's training objective, recomputed here independently
    _, codes = np.unique(y, return_inverse=True)
    baseline = len(y) - np.bincount(codes).max()
    assert r.normalized_objective == pytest.approx((clf.predict(X) != y).sum() / baseline)
    assert r.bound == 0.0  # the fake reports no bound: raised to the objective's lower bound


def test_unknown_family_names_the_registered_ones(startlp):
    X, y = noisy_data()
    with pytest.raises(ValueError, match="solver must be 'highs' or 'pyomo:<solver name>' or 'startlp"):
        OptimalTreeClassifier(solver="gurobi").fit(X, y)
    with pytest.raises(ValueError, match="startlp needs a name"):
        OptimalTreeClassifier(solver="startlp").fit(X, y)
    with pytest.raises(ValueError, match="solver must be 'highs'"):
        OptimalTreeClassifier(solver="highs:x").fit(X, y)


def test_registry_refuses_bad_or_duplicate_backends(startlp):
    with pytest.raises(ValueError, match="already registered"):
        register_backend(type("Other", (StartCompletionBackend,), {}))
    with pytest.raises(TypeError, match="SolverBackend subclass"):
        register_backend(object)
    with pytest.raises(ValueError, match="identifier"):
        register_backend(type("Bad", (StartCompletionBackend,), {"family": "a:b"}))
    assert registered_backends()["startlp"] is StartCompletionBackend
    unregister_backend("startlp")
    assert "startlp" not in registered_backends()
    register_backend(StartCompletionBackend)  # for the fixture's teardown


# ------------------------------------------------------------------ rows between solves
def knapsack(n=12, seed=3):
    rng = np.random.default_rng(seed)
    w, v = rng.integers(3, 20, n).astype(float), rng.integers(1, 30, n).astype(float)
    spec = ModelSpec("knap")
    x = spec.add_vars("x", n, ub=1, integer=True, obj=-v)
    spec.add_rows("cap", 1, np.zeros(n, int), x, w, -np.inf, w.sum() / 3)
    return spec, w, v


def brute_force(w, v, cap, max_items=None):
    best = 0.0
    for pick in itertools.product((0, 1), repeat=len(w)):
        pick = np.array(pick)
        if pick @ w <= cap and (max_items is None or pick.sum() <= max_items):
            best = max(best, float(pick @ v))
    return -best


@pytest.mark.parametrize("solver", ["highs", "pyomo:appsi_highs"])
def test_rows_added_between_solves_and_warm_resolve(solver):
    spec, w, v = knapsack()
    backend = make_backend(solver, spec)
    events = []
    first, x = backend.solve(SolveOptions(), on_event=events.append)
    assert first.objective == pytest.approx(brute_force(w, v, w.sum() / 3))
    assert events and events[-1]["event"] == "final" and events[-1]["incumbent"] == first.objective
    k = int(round(x.sum()))
    # a cut removing every solution with k items or more: the previous optimum is infeasible
    backend.add_rows("cut", 1, np.zeros(spec.n_cols, int), np.arange(spec.n_cols), np.ones(spec.n_cols),
                     -np.inf, k - 1)
    second, x2 = backend.solve(SolveOptions())
    assert second.objective == pytest.approx(brute_force(w, v, w.sum() / 3, max_items=k - 1))
    assert x2.sum() <= k - 1 + 1e-9 and second.n_rows == 2 == spec.n_rows
    assert second.start_source == "previous solve"
    if solver == "highs":
        assert second.start_accepted is False  # the cut removes the previous solution


def test_warm_resolve_keeps_a_still_feasible_start():
    spec, w, v = knapsack()
    backend = make_backend("highs", spec)
    first, x = backend.solve(SolveOptions())
    backend.add_rows("loose", 1, [0], [0], [1.0], -np.inf, 1.0)  # x0 <= 1: cuts nothing
    second, _ = backend.solve(SolveOptions(node_limit=0))
    assert second.start_accepted is True and second.objective == pytest.approx(first.objective)


def test_progress_callback_can_interrupt_highs():
    rng = np.random.default_rng(0)
    n, m = 60, 5
    wts = rng.integers(5, 40, (m, n)).astype(float)
    spec = ModelSpec("mknap")
    x = spec.add_vars("x", n, ub=1, integer=True, obj=-rng.integers(5, 60, n).astype(float))
    spec.add_rows("cap", m, np.repeat(np.arange(m), n), np.tile(x, m), wts.ravel(), -np.inf, wts.sum(1) * 0.3)
    seen = []

    def stop_at_first_incumbent(point):
        seen.append(point)
        return point["incumbent"] is not None

    result, sol = make_backend("highs", spec).solve(SolveOptions(), on_event=stop_at_first_incumbent)
    assert result.termination == "interrupted" and not result.proven_optimal
    assert result.status == ("interrupted" if result.has_solution else "interrupted_no_solution")
    assert seen[-1]["event"] == "final"


# ------------------------------------------------------------------ the rows-after-solve loop
def test_solve_adding_rows_reaches_the_restricted_optimum_on_one_clock():
    """An outer loop on the knapsack: cut the item count of every solution until the optimum has <= 3 items."""
    spec, w, v = knapsack()
    backend = make_backend("highs", spec)
    seen, cuts = [], []

    def at_most_three_items(x, result):
        k = int(round(x.sum()))
        if k <= 3:
            return None
        cuts.append(k)
        return [(f"cut{len(cuts)}", 1, np.zeros(spec.n_cols, int), np.arange(spec.n_cols), np.ones(spec.n_cols),
                 -np.inf, k - 1)]

    result, x = solve_adding_rows(backend, SolveOptions(), seen.append, at_most_three_items)
    assert result.objective == pytest.approx(brute_force(w, v, w.sum() / 3, max_items=3))
    assert x.sum() <= 3 + 1e-9 and cuts and result.n_rows == 1 + len(cuts) == spec.n_rows
    events = [p["event"] for p in result.trace]
    assert events.count("rows") == len(cuts) and events.count("final") == 1 and events[-1] == "final"
    # the callback saw the same points, on the same clock (and maybe heartbeats between them)
    assert [p["event"] for p in seen if p["event"] != "heartbeat"] == events
    times = [p["time"] for p in result.trace]
    assert times == sorted(times) and result.solve_time == times[-1]
    assert f"{len(cuts)} row(s) added in {len(cuts)} round(s)" in result.message and result.proven_optimal


def test_solve_adding_rows_stops_at_the_time_limit_unproven(startlp):
    """A callback that always asks for rows: the loop ends when the time is up, without claiming optimality."""
    spec, w, v = knapsack()
    backend = make_backend("startlp:x", spec)
    rounds = []

    def always(x, result):
        rounds.append(result)
        return [(f"loose{len(rounds)}", 1, [0], [0], [1.0], -np.inf, 1.0)]  # x0 <= 1, cuts nothing

    result, x = solve_adding_rows(backend, SolveOptions(time_limit=0.3), None, always)
    assert len(rounds) >= 2 and x is not None
    assert result.termination == "time_limit" and not result.proven_optimal and result.has_solution
    assert "time limit was reached" in result.message
    assert spec.n_rows == 1 + len(rounds) - 1  # the last rows asked for were not added
    assert result.nodes == 0 and result.solve_time <= 0.3 + 0.2


# ------------------------------------------------------------------ stored records
def test_old_records_with_a_status_string_read_back():
    old = dict(status="time_limit_no_solution", objective=None, bound=0.5, gap=None, proven_optimal=False,
               nodes=3, build_time=0.1, solve_time=1.0, n_rows=1, n_cols=2, n_nonzeros=2, n_integer=2,
               solver="highs", versions={}, options={}, start_source=None, start_objective=None,
               start_accepted=None, trace=[], message="")
    r = SolveResult.from_dict(old)
    assert (r.termination, r.has_solution, r.status) == ("time_limit", False, "time_limit_no_solution")
    assert SolveResult.from_dict({**old, "status": "optimal", "objective": 1.0}).has_solution
    d = r.to_dict()
    assert d["status"] == "time_limit_no_solution" and d["termination"] == "time_limit"
    assert SolveResult.from_dict(d).to_dict() == d
    with pytest.raises(ValueError, match="contradicts"):
        SolveResult.from_dict({**d, "has_solution": True})
