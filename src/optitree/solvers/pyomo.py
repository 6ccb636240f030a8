"""The Pyomo backend (``solver="pyomo:<name>"``): the spec's Pyomo emission, any installed Pyomo solver.

Three Pyomo solver interfaces are driven: APPSI (``"appsi_<x>"``), Pyomo's new solver
interface (e.g. ``"highs"``) and the legacy ``SolverFactory`` (``"cbc"``, ``"glpk"``, ...).
Each reports a termination condition by name; :data:`_TERMINATION` maps the names of all
three. Pyomo is imported lazily, inside the functions.
"""

from __future__ import annotations

import io
import logging
import re
import sys
import time
from dataclasses import asdict

import numpy as np

from ..model._pyomo import pyomo_constraint
from .._provenance import package_versions
from .base import SolverBackend, check_start, finite, register_backend
from .highs import START_LOG, compile_highs, ensure_scheduler, solve_highs
from .results import SolveOptions, finished_result

__all__ = ["PyomoBackend", "available_pyomo_solvers", "solve_pyomo"]

# MIP solvers probed by available_pyomo_solvers() (to list alternatives in errors).
_PYOMO_CANDIDATES = (
    "appsi_highs", "highs", "appsi_cbc", "cbc", "glpk", "appsi_gurobi", "gurobi_direct",
    "gurobi", "appsi_cplex", "cplex", "scip", "xpress",
)
_HIGHS_NODES_LOG = re.compile(r"^\s*Nodes\s+(\d+)\s*$", re.MULTILINE)

# Termination-condition names of the three interfaces -> termination. An iteration limit
# is the node limit where one was set (HiGHS's mip_max_nodes), an error otherwise.
_TERMINATION = {
    "optimal": "optimal",  # APPSI, legacy
    "convergenceCriteriaSatisfied": "optimal",  # new interface
    "infeasible": "infeasible",
    "provenInfeasible": "infeasible",
    "maxTimeLimit": "time_limit",
    "maxIterations": "node_limit",
    "iterationLimit": "node_limit",
    "interrupted": "interrupted",
    "userInterrupt": "interrupted",
}


def available_pyomo_solvers(candidates=_PYOMO_CANDIDATES) -> list[str]:
    """Names among ``candidates`` that Pyomo can run on this machine."""
    return [name for name in candidates if _pyomo_solver(name, probe=True) is not None]


def _pyomo_solver(name, probe=False):
    """(interface, solver) for a Pyomo solver name; None if unavailable and ``probe``.

    interface is "appsi" (``appsi_<x>``: native APPSI object), "contrib" (Pyomo's new
    solver interface, e.g. ``highs``) or "legacy" (``pyomo.opt.SolverFactory``).
    """
    import pyomo.environ  # noqa: F401  (registers the solver plugins)
    from pyomo.contrib.appsi.base import SolverFactory as AppsiFactory
    from pyomo.contrib.solver.common.factory import SolverFactory as ContribFactory
    from pyomo.opt import SolverFactory as LegacyFactory

    solver = None
    quiet = logging.getLogger("pyomo")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)  # legacy factory logs a warning for unknown names
    try:
        if name.startswith("appsi_") and name[6:] in AppsiFactory:
            interface, solver = "appsi", AppsiFactory(name[6:])
            ok = bool(solver.available())
        elif name in ContribFactory:
            interface, solver = "contrib", ContribFactory(name)
            ok = bool(solver.available())
        elif name in LegacyFactory:
            interface, solver = "legacy", LegacyFactory(name)
            ok = bool(solver.available(exception_flag=False))
        else:
            ok = False
    except Exception:  # a broken plugin is as good as a missing one
        ok = False
    finally:
        quiet.setLevel(level)
    if ok:
        return interface, solver
    if probe:
        return None
    alternatives = available_pyomo_solvers()
    raise ValueError(
        f"Pyomo solver {name!r} is not available (not installed or not registered). "
        f"Available MIP solvers here: {alternatives or 'none'}."
    )


class _LogCapture:
    """A private logging.Logger that keeps the solver log text (APPSI writes its log there)."""

    def __init__(self):
        self.lines = []
        self.logger = logging.getLogger(f"optitree.solver_log.{id(self)}")
        self.logger.setLevel(logging.DEBUG)
        self.logger.propagate = False
        handler = logging.Handler()
        handler.emit = lambda record: self.lines.append(record.getMessage())
        self.logger.handlers = [handler]

    @property
    def text(self):
        return "\n".join(self.lines)


def _complete_start(spec, start, options):
    """Complete a (discrete) sparse start into a full solution with HiGHS.

    The start columns are fixed and the rest of the model is solved (an LP when every
    integer column is fixed).  Returns the full vector, or None if no completion exists.
    """
    idx, val = check_start(start, spec.n_cols)
    h = compile_highs(spec)
    h.changeColsBounds(len(idx), idx.astype(np.int32), val, val)
    sub_options = SolveOptions(
        time_limit=options.time_limit, rel_gap=1.0, threads=options.threads,
        random_seed=options.random_seed,
    )
    result, x = solve_highs(h, sub_options)
    return x if result.has_solution else None


# ---------------------------------------------------------------------- the three interfaces
# Each returns (termination-condition name, objective, bound, has_solution, options passed).
def _run_appsi(solver, model, options, warmstart, log, log_stream, solver_options):
    cfg = solver.config
    cfg.load_solution = False
    cfg.stream_solver = bool(options.verbose)
    cfg.time_limit = options.time_limit
    cfg.mip_gap = float(options.rel_gap)
    if "warmstart" in cfg:
        cfg.warmstart = warmstart
    if "solver_output_logger" in cfg:
        cfg.solver_output_logger = log.logger
    passed = {"time_limit", "rel_gap"}
    if hasattr(solver, "highs_options"):
        solver.highs_options = {
            "threads": int(options.threads),
            "random_seed": int(options.random_seed),
            "mip_max_nodes": 2**31 - 1 if options.node_limit is None else int(options.node_limit),
        }
        passed |= {"threads", "random_seed", "node_limit"}
    if solver_options:
        for attr in ("highs_options", "gurobi_options", "cplex_options", "cbc_options", "ipopt_options"):
            if hasattr(solver, attr):
                setattr(solver, attr, {**getattr(solver, attr), **solver_options})
                break
        else:
            raise ValueError(f"solver {solver.__class__.__name__} takes no solver_options")
    res = solver.solve(model)
    has_solution = res.best_feasible_objective is not None
    if has_solution:
        res.solution_loader.load_vars()
    return (res.termination_condition.name, finite(res.best_feasible_objective),
            finite(res.best_objective_bound), has_solution, passed)


def _run_contrib(solver, model, options, warmstart, log, log_stream, solver_options):
    from pyomo.contrib.solver.common.results import SolutionStatus

    kwargs = {
        "tee": [log_stream] + ([sys.stdout] if options.verbose else []),
        "load_solutions": False,
        "raise_exception_on_nonoptimal_result": False,
        "time_limit": options.time_limit,
        "threads": int(options.threads),
    }
    passed = {"time_limit", "threads"}
    if "rel_gap" in solver.config:
        kwargs["rel_gap"] = float(options.rel_gap)
        passed.add("rel_gap")
    if solver.name == "highs":
        kwargs["solver_options"] = {
            "random_seed": int(options.random_seed),
            "mip_max_nodes": 2**31 - 1 if options.node_limit is None else int(options.node_limit),
        }
        passed |= {"random_seed", "node_limit"}
    if solver_options:
        kwargs["solver_options"] = {**kwargs.get("solver_options", {}), **solver_options}
    res = solver.solve(model, **kwargs)
    has_solution = res.solution_status in (SolutionStatus.feasible, SolutionStatus.optimal)
    if has_solution:
        res.solution_loader.load_vars()
    return (res.termination_condition.name, finite(res.incumbent_objective), finite(res.objective_bound),
            has_solution, passed)


def _run_legacy(solver, model, options, warmstart, log, log_stream, solver_options):
    import pyomo.environ as pyo
    from pyomo.opt import SolutionStatus

    kwargs = {"tee": bool(options.verbose), "load_solutions": False}
    if warmstart:
        kwargs["warmstart"] = True
    if solver_options:
        kwargs["options"] = dict(solver_options)
    res = solver.solve(model, **kwargs)
    tc = res.solver.termination_condition.name
    has_solution = len(res.solution) > 0 and res.solution(0).status in (
        SolutionStatus.optimal, SolutionStatus.feasible, SolutionStatus.bestSoFar,
        SolutionStatus.globallyOptimal, SolutionStatus.locallyOptimal,
    )
    objective = None
    if has_solution:
        model.solutions.load_from(res)
        objective = finite(pyo.value(model.objective))
    lower = finite(res.problem.lower_bound)
    bound = lower if lower is not None else (objective if _TERMINATION.get(tc) == "optimal" else None)
    return tc, objective, bound, has_solution, set()


_RUNNERS = {"appsi": _run_appsi, "contrib": _run_contrib, "legacy": _run_legacy}


@register_backend
class PyomoBackend(SolverBackend):
    """``solver="pyomo:<name>"``: the spec's Pyomo emission solved by an installed Pyomo solver.

    ``<name>`` is ``"appsi_<x>"`` (Pyomo's APPSI interfaces, e.g. ``"appsi_highs"``), a
    name of Pyomo's new solver interface (e.g. ``"highs"``), or any legacy
    ``SolverFactory`` name (``"cbc"``, ``"glpk"``, ...). :class:`SolveOptions`:
    ``time_limit``/``rel_gap`` go to every APPSI and new-interface solver, ``threads``
    to the new interface and HiGHS, ``random_seed``/``node_limit`` to HiGHS only; legacy
    solvers get only ``solver_options`` (their option names differ). Options not passed
    are noted in the result's message.

    A start is completed to a full solution with HiGHS (start columns fixed; an LP when
    all integer columns are given) and the Pyomo variables are initialised with it for
    solvers that take a warm start (``appsi_highs``, legacy ``warmstart``); Pyomo's
    ``highs`` interface passes none.  Acceptance is read from the HiGHS log; other
    solvers do not report it (``start_accepted`` None with a note). The trace holds the
    final point only; ``solve_time`` includes Pyomo's model transfer to the solver.

    Parameters
    ----------
    spec : ModelSpec
    name : str
        The Pyomo solver name.
    solver_options : dict or None
        Extra solver-specific options (APPSI: merged into the solver's option dict when
        it has one; new interface: ``solver_options``; legacy: ``options``).

    Raises
    ------
    ValueError
        If the solver is not installed or not known to Pyomo.
    """

    family = "pyomo"
    syntax = "'pyomo:<solver name>'"

    def __init__(self, spec, name=None, *, solver_options=None):
        self.solver_options = solver_options
        super().__init__(spec, name)

    @classmethod
    def check_name(cls, name):
        if not name:
            raise ValueError(f"solver must be {cls.syntax} (e.g. 'pyomo:appsi_highs'), got {name!r} as the name")

    @classmethod
    def check_available(cls, name):
        _pyomo_solver(name)

    def _load(self):
        self.interface, self.pyomo_solver = _pyomo_solver(self.name)
        self.model = self.spec.to_pyomo()

    def _add_rows(self, block):
        import pyomo.environ as pyo

        self.model.add_component(block.name, pyomo_constraint(pyo, block, self.model._optitree_columns))

    def _solve(self, options, on_event):
        from pyomo.common.gc_manager import PauseGC

        name, columns, notes = self.name, self.model._optitree_columns, []
        uses_highs = "highs" in name
        warmstart = False
        if self._start is not None:
            full = _complete_start(self.spec, self._start, options)
            if full is None:
                notes.append("the start has no feasible completion")
                values = self._start
            else:
                values = dict(enumerate(full.tolist()))
            for j, v in values.items():
                columns[j].set_value(v, skip_validation=True)
            if self.interface == "appsi":
                warmstart = "warmstart" in self.pyomo_solver.config
            elif self.interface == "legacy":
                warmstart = self.pyomo_solver.warm_start_capable()
            if not warmstart:
                notes.append(f"Pyomo's {name!r} interface passes no MIP start")

        if uses_highs:
            ensure_scheduler(options.threads)
        log, log_stream = _LogCapture(), io.StringIO()
        t0 = time.perf_counter()
        with PauseGC():  # Pyomo's model transfer creates many small objects
            tc, objective, bound, has_solution, passed = _RUNNERS[self.interface](
                self.pyomo_solver, self.model, options, warmstart, log, log_stream, self.solver_options
            )
        solve_time = time.perf_counter() - t0
        log_text = log.text + log_stream.getvalue()

        termination = _TERMINATION.get(tc, "error")
        if termination == "node_limit" and options.node_limit is None:
            termination = "error"
        if termination == "error":
            notes.insert(0, f"solver termination: {tc}")
        x = None
        if has_solution:
            cost, lb, ub, _ = self.spec.column_arrays()
            x = np.array([np.nan if v.value is None else v.value for v in columns], dtype=np.float64)
            # Columns in no row and without cost are not passed to some solvers: any value in
            # their bounds is optimal; take the one closest to 0.
            unset = np.isnan(x)
            x[unset] = np.clip(0.0, lb[unset], ub[unset])
            if objective is None:
                objective = float(cost @ x + self.spec.objective_offset)
        else:
            objective = None

        start_accepted = None
        if self._start is not None:
            if uses_highs:
                start_accepted = warmstart and START_LOG.search(log_text) is not None
            else:
                notes.append(f"{name!r} does not report whether it used the start")
        not_passed = sorted(
            {"time_limit", "rel_gap", "threads", "random_seed", "node_limit"} - passed
            - {k for k, v in asdict(options).items() if v is None}
        )
        if not_passed:
            notes.append(f"options not passed to {name!r}: {', '.join(not_passed)}")
        nodes = _HIGHS_NODES_LOG.findall(log_text)

        result = finished_result(
            termination=termination,
            objective=objective,
            bound=bound,
            options=options,
            abs_tol=1e-6,  # HiGHS's default mip_abs_gap; other solvers report no tolerance
            nodes=int(nodes[-1]) if nodes else 0,
            solve_time=solve_time,
            trace=[],
            build_time=self.load_time,
            n_rows=self.spec.n_rows,
            n_cols=self.spec.n_cols,
            n_nonzeros=self.spec.nnz,
            n_integer=self.spec.n_integer,
            solver=self.solver,
            versions=package_versions(("numpy", "highspy", "optitree", "pyomo")),
            start_source=self._start_source,
            start_objective=finite(self._start_objective),
            start_accepted=start_accepted,
            message="; ".join(notes),
        )
        if on_event is not None:
            on_event(dict(result.trace[-1]))
        return result, x


def solve_pyomo(spec, solver_name, options, *, start=None, start_source=None, start_objective=None,
                build_time=0.0, solver_options=None):
    """Solve the Pyomo emission of ``spec`` once with :class:`PyomoBackend`.

    ``solver_name`` is the Pyomo solver name (without ``"pyomo:"``); ``build_time``
    (measured by the caller) is added to the emission time in ``result.build_time``.

    Returns
    -------
    result : SolveResult
        ``solver`` is ``"pyomo:<name>"``.
    x : ndarray of shape (n_cols,) or None
        Solution in spec column order, None without a solution.
    """
    if not isinstance(options, SolveOptions):
        raise TypeError(f"options must be a SolveOptions, got {type(options).__name__}")
    if not isinstance(solver_name, str) or not solver_name:
        raise ValueError(f"solver_name must be a non-empty str, got {solver_name!r}")
    backend = PyomoBackend(spec, solver_name, solver_options=solver_options)
    backend.set_start(start, source=start_source, objective=start_objective)
    result, x = backend.solve(options)
    result.build_time += float(build_time)
    return result, x
