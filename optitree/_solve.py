"""Solve adapter: the one place that knows HiGHS (and Pyomo's solver interfaces).

:func:`solve_highs` runs a built :class:`highspy.Highs` MIP with explicit options, an
optional sparse MIP start, a progress trace from callbacks, and maps HiGHS's statuses
to :data:`STATUSES`.  :func:`solve_pyomo` solves the Pyomo emission of a
:class:`~optitree._model.ModelSpec` with any installed Pyomo solver and returns the
same :class:`SolveResult`.  Limits and infeasibility are statuses, never exceptions.
"""

from __future__ import annotations

import math
import platform
import re
import threading
import time
from dataclasses import asdict, dataclass, field, fields
from importlib import metadata
from numbers import Integral, Real

import numpy as np

__all__ = ["SolveOptions", "SolveResult", "STATUSES", "relative_gap", "solve_highs", "solve_pyomo"]

STATUSES = (
    "optimal",
    "time_limit",
    "time_limit_no_solution",
    "node_limit",
    "node_limit_no_solution",
    "infeasible",
    "error",
)

# Trace sampling: cbMipInterrupt fires very often; keep one "progress" point per interval.
PROGRESS_INTERVAL = 0.5
# A start is "accepted" if HiGHS logs it as feasible, or if its first improving solution
# agrees with the start on every given column within this tolerance.
_START_TOL = 1e-6
_START_LOG = re.compile(r"MIP start solution is feasible[,:] objective value is\s*(\S+)")  # HiGHS <= 1.15 ",", 1.16 ":"
_SCHEDULER_LOG = "scheduler has already been initialized"  # HiGHS 1.15 "global scheduler ...", 1.16 "the scheduler ..."


def relative_gap(objective, bound):
    """HiGHS's relative MIP gap ``|objective - bound| / |objective|``.

    The one definition of ``gap`` in :class:`SolveResult`, its trace and the estimators.
    ``objective == 0`` (where HiGHS's ratio is undefined): 0 when ``bound == 0`` too,
    else ``math.inf`` (HiGHS's convention). None when either value is unknown (None).
    """
    if objective is None or bound is None:
        return None
    if objective == 0:
        return 0.0 if bound == 0 else math.inf
    return abs(objective - bound) / abs(objective)


@dataclass
class SolveOptions:
    """Solver options (HiGHS names in brackets).

    Parameters
    ----------
    time_limit : float or None, default=None
        Wall-clock limit in seconds (``time_limit``); None = no limit.
    rel_gap : float, default=0.0
        Relative MIP gap at which to stop (``mip_rel_gap``; HiGHS's default is 1e-4,
        so it is always set explicitly).
    threads : int, default=1
        Solver threads (``threads``).  HiGHS fixes the thread count per process; a
        change resets its global scheduler.
    random_seed : int, default=0
        Solver seed (``random_seed``); it changes the search path, node counts by ~2x.
    node_limit : int or None, default=None
        Branch-and-bound node limit (``mip_max_nodes``); None = no limit.
    verbose : bool, default=False
        Print the solver log (``log_to_console``).
    """

    time_limit: float | None = None
    rel_gap: float = 0.0
    threads: int = 1
    random_seed: int = 0
    node_limit: int | None = None
    verbose: bool = False

    def __post_init__(self):
        if self.time_limit is not None and (
            not isinstance(self.time_limit, Real) or not self.time_limit > 0
        ):
            raise ValueError(f"time_limit must be a positive number or None, got {self.time_limit!r}")
        if not isinstance(self.rel_gap, Real) or not 0 <= self.rel_gap < math.inf:
            raise ValueError(f"rel_gap must be a non-negative number, got {self.rel_gap!r}")
        if not isinstance(self.threads, Integral) or self.threads < 1:
            raise ValueError(f"threads must be a positive int, got {self.threads!r}")
        if not isinstance(self.random_seed, Integral) or not 0 <= self.random_seed <= 2**31 - 1:
            raise ValueError(f"random_seed must be an int in [0, 2**31 - 1], got {self.random_seed!r}")
        if self.node_limit is not None and (
            not isinstance(self.node_limit, Integral) or self.node_limit < 0
        ):
            raise ValueError(f"node_limit must be a non-negative int or None, got {self.node_limit!r}")


@dataclass
class SolveResult:
    """Outcome of one solve.

    ``status`` is one of :data:`STATUSES`; ``"time_limit"``/``"node_limit"`` mean the
    limit stopped the search *with* a feasible solution.  ``proven_optimal`` is True only
    when the solver reports optimality and the final gap is within the requested
    ``rel_gap`` (or within HiGHS's absolute gap tolerance ``mip_abs_gap`` = 1e-6, its
    own second stopping criterion).  ``gap`` is :func:`relative_gap` of ``objective`` and
    ``bound`` (``math.inf`` when the objective is 0 and the bound is not; None without
    an incumbent or a bound; :meth:`to_dict` stores ``math.inf`` as None, like every
    non-finite value).  ``bound`` is a valid lower bound on the optimum: the solver's
    dual bound, raised by :meth:`apply_lower_bound` to a bound known from the model
    (the estimators pass their formulation's ``objective_lower_bound``, 0, since
    a solver stopped before its root LP can report a dual bound far below it).
    ``trace`` holds dicts ``{"time", "incumbent",
    "bound", "gap", "nodes", "event"}`` with event ``"start"`` (accepted MIP start),
    ``"improving"`` (new incumbent), ``"progress"`` (sampled every >= 0.5 s) and
    ``"final"``; times are seconds since the solve started.
    """

    status: str
    objective: float | None
    bound: float | None
    gap: float | None
    proven_optimal: bool
    nodes: int
    build_time: float
    solve_time: float
    n_rows: int
    n_cols: int
    n_nonzeros: int
    n_integer: int
    solver: str
    versions: dict
    options: dict
    start_source: str | None
    start_objective: float | None
    start_accepted: bool | None
    trace: list = field(default_factory=list)
    message: str = ""

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")

    def apply_lower_bound(self, lower_bound: float) -> bool:
        """Raise ``bound`` and every trace bound to at least ``lower_bound`` (a valid bound known a priori).

        A missing bound (None) becomes ``lower_bound``. Every gap (result and trace) is
        recomputed with :func:`relative_gap` from its incumbent and the new bound.
        Returns whether the result's ``bound`` was raised.
        """
        def raised(bound):
            return lower_bound if bound is None else max(bound, lower_bound)

        for point in self.trace:
            point["bound"] = raised(point["bound"])
            point["gap"] = relative_gap(point["incumbent"], point["bound"])
        changed = self.bound is None or self.bound < lower_bound
        self.bound = raised(self.bound)
        self.gap = relative_gap(self.objective, self.bound)
        return changed

    @property
    def has_solution(self) -> bool:
        """Whether a feasible solution (incumbent) exists."""
        return self.objective is not None

    def to_dict(self) -> dict:
        """JSON-serialisable dict (NaN and infinities become None)."""
        return _json_safe(asdict(self))

    @classmethod
    def from_dict(cls, d) -> "SolveResult":
        """Inverse of :meth:`to_dict`."""
        if not isinstance(d, dict):
            raise TypeError(f"from_dict expects a dict, got {type(d).__name__}")
        names = {f.name for f in fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"unknown SolveResult fields: {sorted(unknown)}")
        return cls(**d)

    def summary(self) -> str:
        """A few human-readable lines."""
        def num(v, fmt=".6g"):
            return "-" if v is None else format(v, fmt)

        if self.start_accepted is None:
            start = "none"
        else:
            start = (
                f"{self.start_source or 'user'} (objective {num(self.start_objective)}, "
                f"{'accepted' if self.start_accepted else 'rejected'})"
            )
        lines = [
            f"status: {self.status}{' (proven optimal)' if self.proven_optimal else ''}"
            f" [{self.solver}]",
            f"objective: {num(self.objective)}  bound: {num(self.bound)}  gap: "
            f"{'-' if self.gap is None else format(self.gap, '.2%')}",
            f"time: build {self.build_time:.2f} s, solve {self.solve_time:.2f} s; "
            f"nodes: {self.nodes}",
            f"size: {self.n_rows} rows, {self.n_cols} columns ({self.n_integer} integer), "
            f"{self.n_nonzeros} non-zeros; start: {start}",
        ]
        if self.message:
            lines.append(f"note: {self.message}")
        return "\n".join(lines)


# ---------------------------------------------------------------------- HiGHS
_scheduler_lock = threading.Lock()
_scheduler_threads: int | None = None


def _ensure_scheduler(threads: int, force: bool = False) -> None:
    """Make HiGHS's process-wide scheduler use ``threads`` threads.

    HiGHS refuses to run when the ``threads`` option differs from the thread count of
    its global scheduler (initialised by the first solve of the process).  The scheduler
    is reset only when the count changes between our solves, or with ``force`` after
    HiGHS refused to run (another user of HiGHS in this process initialised it); a reset
    affects HiGHS solves running concurrently in other threads of this process, so
    parallel workers sharing a process should all use the same ``threads``.
    """
    global _scheduler_threads
    import highspy

    with _scheduler_lock:
        if force or _scheduler_threads not in (None, threads):
            highspy.Highs.resetGlobalScheduler(True)
        _scheduler_threads = threads


def versions(highs=None, pyomo: bool = False) -> dict:
    """Versions of python, numpy, highspy/HiGHS, optitree and (optionally) pyomo."""
    out = {"python": platform.python_version(), "numpy": np.__version__}
    for dist in ("highspy", "optitree") + (("pyomo",) if pyomo else ()):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    if highs is not None:
        out["HiGHS"] = f"{highs.version()} ({highs.githash()})"
    return out


def _finite(v):
    """float(v), or None for NaN, +-inf and HiGHS's 'infinite' sentinels."""
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) and abs(v) < 1e100 else None


def _apply_highs_options(h, options: SolveOptions) -> None:
    import highspy

    values = {
        "time_limit": math.inf if options.time_limit is None else float(options.time_limit),
        "mip_rel_gap": float(options.rel_gap),
        "threads": int(options.threads),
        "random_seed": int(options.random_seed),
        "mip_max_nodes": highspy.kHighsIInf if options.node_limit is None else int(options.node_limit),
        # Output stays on (the log callback records the MIP-start line); only the
        # console printing follows `verbose`.
        "output_flag": True,
        "log_to_console": bool(options.verbose),
    }
    for key, value in values.items():
        if h.setOptionValue(key, value) == highspy.HighsStatus.kError:
            raise ValueError(f"HiGHS rejected option {key}={value!r}")


def _set_start(h, start, n_cols):
    if not isinstance(start, dict):
        raise TypeError(f"start must be a dict column index -> value, got {type(start).__name__}")
    if not start:
        raise ValueError("start is empty; pass start=None for a cold start")
    idx = np.fromiter(start.keys(), dtype=np.int64, count=len(start))
    val = np.fromiter(start.values(), dtype=np.float64, count=len(start))
    if idx.min() < 0 or idx.max() >= n_cols:
        raise ValueError(f"start refers to columns outside [0, {n_cols})")
    if not np.isfinite(val).all():
        raise ValueError("start values must be finite")
    import highspy

    if h.setSolution(len(idx), idx.astype(np.int32), val) == highspy.HighsStatus.kError:
        raise ValueError("HiGHS rejected the MIP start (setSolution)")
    return idx, val


class _Recorder:
    """Callback state of one HiGHS run: trace, start acceptance, relevant log lines."""

    def __init__(self, start_idx, start_val):
        self.t0 = time.perf_counter()
        self.trace = []
        self.last_progress = -math.inf
        self.start_idx, self.start_val = start_idx, start_val
        self.first_solution_matches_start = None
        self.logged_start_objective = None
        self.scheduler_error = False

    def on_improving(self, e):
        out = e.data_out
        t = time.perf_counter() - self.t0
        event = "improving"
        if self.first_solution_matches_start is None and self.start_idx is not None:
            x = np.asarray(out.mip_solution)
            self.first_solution_matches_start = bool(
                x.size and np.abs(x[self.start_idx] - self.start_val).max() <= _START_TOL
            )
            if self.first_solution_matches_start or self.logged_start_objective is not None:
                event = "start"
        self.trace.append(
            {
                "time": t,
                "incumbent": _finite(out.objective_function_value),
                "bound": _finite(out.mip_dual_bound),
                "gap": relative_gap(_finite(out.objective_function_value), _finite(out.mip_dual_bound)),
                "nodes": int(out.mip_node_count),
                "event": event,
            }
        )

    def on_interrupt(self, e):
        t = time.perf_counter() - self.t0
        if t - self.last_progress < PROGRESS_INTERVAL:
            return
        self.last_progress = t
        out = e.data_out
        self.trace.append(
            {
                "time": t,
                "incumbent": _finite(out.mip_primal_bound),
                "bound": _finite(out.mip_dual_bound),
                "gap": relative_gap(_finite(out.mip_primal_bound), _finite(out.mip_dual_bound)),
                "nodes": int(out.mip_node_count),
                "event": "progress",
            }
        )

    def on_log(self, e):
        msg = e.message
        if "MIP start" in msg:
            m = _START_LOG.search(msg)
            if m:
                self.logged_start_objective = float(m.group(1))
        elif _SCHEDULER_LOG in msg:
            self.scheduler_error = True


def _run(h, recorder):
    subscriptions = [
        (h.cbMipImprovingSolution, recorder.on_improving),
        (h.cbMipInterrupt, recorder.on_interrupt),
        (h.cbLogging, recorder.on_log),
    ]
    for cb, fn in subscriptions:
        cb.subscribe(fn)
    try:
        recorder.t0 = time.perf_counter()
        h.run()
        return time.perf_counter() - recorder.t0
    finally:
        for cb, fn in subscriptions:
            cb.unsubscribe(fn)


def _map_highs_status(h, has_solution, node_limit):
    """(status, message) from HiGHS's model status and primal solution status."""
    import highspy

    ms = h.getModelStatus()
    S = highspy.HighsModelStatus
    text = h.modelStatusToString(ms)
    if ms == S.kOptimal:
        return "optimal", ""
    if ms == S.kInfeasible:
        return "infeasible", ""
    if ms == S.kTimeLimit:
        return ("time_limit" if has_solution else "time_limit_no_solution"), ""
    if ms == S.kSolutionLimit and node_limit is not None:
        # mip_max_nodes (the only solution-type limit optitree sets) ends as kSolutionLimit.
        return ("node_limit" if has_solution else "node_limit_no_solution"), ""
    if ms == S.kModelEmpty:
        return "optimal", "empty model"
    return "error", f"HiGHS model status: {text}"


def _final_result(*, status, objective, bound, options, abs_tol, nodes, solve_time, trace, **fields):
    """The :class:`SolveResult` of a finished solve, the same for every solver path.

    An optimal solve without a reported bound (an LP, or a solver that reports none) is
    its own bound. Proven optimal: status optimal and gap <= ``rel_gap`` or absolute gap
    <= ``abs_tol``. The final point is appended to ``trace``.
    """
    if status == "optimal" and bound is None:
        bound = objective
    gap = relative_gap(objective, bound)
    proven = status == "optimal" and gap is not None and (gap <= options.rel_gap or abs(objective - bound) <= abs_tol)
    trace.append({"time": solve_time, "incumbent": objective, "bound": bound, "gap": gap, "nodes": nodes,
                  "event": "final"})
    return SolveResult(status=status, objective=objective, bound=bound, gap=gap, proven_optimal=bool(proven),
                       nodes=nodes, solve_time=solve_time, options=asdict(options), trace=trace, **fields)


def solve_highs(
    highs,
    options: SolveOptions,
    *,
    start=None,
    start_source=None,
    start_objective=None,
    build_time=0.0,
):
    """Solve a built :class:`highspy.Highs` MIP.

    Parameters
    ----------
    highs : highspy.Highs
        The model (e.g. from :meth:`ModelSpec.to_highs`); its options are overwritten.
    options : SolveOptions
    start : dict[int, float] or None
        MIP start: column index -> value for the *discrete* variables of a complete
        start (given sparsely to ``setSolution``; HiGHS completes the continuous ones
        by an LP).  Acceptance is recorded in ``start_accepted``.
    start_source : str or None
        Where the start comes from ("cart", "user", ...), recorded as is.
    start_objective : float or None
        Objective of the start as computed by the formulation, recorded as is.
    build_time : float
        Model construction time (s) measured by the caller, recorded as is.

    Returns
    -------
    result : SolveResult
    x : ndarray of shape (n_cols,) or None
        Best primal solution, None without a feasible solution.

    Notes
    -----
    Time limits, node limits and infeasible models are statuses, never exceptions.
    ``solve_time`` is measured here with ``time.perf_counter`` (HiGHS's ``getRunTime``
    is cumulative over runs of the same object).  The trace costs about 1 % of the
    solve time.
    """
    import highspy

    if not isinstance(highs, highspy.Highs):
        raise TypeError(f"highs must be a highspy.Highs, got {type(highs).__name__}")
    if not isinstance(options, SolveOptions):
        raise TypeError(f"options must be a SolveOptions, got {type(options).__name__}")
    n_cols = highs.getNumCol()
    integrality = np.asarray(highs.getLp().integrality_, dtype=np.int64)
    n_integer = int((integrality != 0).sum()) if integrality.size else 0

    _apply_highs_options(highs, options)
    start_idx = start_val = None
    if start is not None:
        start_idx, start_val = _set_start(highs, start, n_cols)

    _ensure_scheduler(options.threads)
    recorder = _Recorder(start_idx, start_val)
    solve_time = _run(highs, recorder)
    if recorder.scheduler_error:
        # Another HiGHS user in this process initialised the scheduler differently.
        _ensure_scheduler(options.threads, force=True)
        if start is not None:
            _set_start(highs, start, n_cols)
        recorder = _Recorder(start_idx, start_val)
        solve_time = _run(highs, recorder)

    info = highs.getInfo()
    has_solution = int(info.primal_solution_status) == int(highspy.SolutionStatus.kSolutionStatusFeasible)
    status, message = _map_highs_status(highs, has_solution, options.node_limit)
    objective = _finite(info.objective_function_value) if has_solution else None
    bound = _finite(info.mip_dual_bound) if n_integer else None
    x = np.asarray(highs.getSolution().col_value, dtype=np.float64) if has_solution else None

    start_accepted = None
    if start is not None:
        # The log line and the first improving solution are the usual evidence; when a
        # limit stops HiGHS before its MIP search, the start may be the returned
        # solution without either.
        start_accepted = bool(
            recorder.logged_start_objective is not None
            or recorder.first_solution_matches_start
            or x is not None and np.abs(x[start_idx] - start_val).max() <= _START_TOL
        )
        if not start_accepted:
            message = "; ".join(filter(None, [message, "MIP start rejected (infeasible or incomplete)"]))

    result = _final_result(
        status=status,
        objective=objective,
        bound=bound,
        options=options,
        abs_tol=float(highs.getOptionValue("mip_abs_gap")[1]),
        nodes=int(max(info.mip_node_count, 0)),
        solve_time=solve_time,
        trace=recorder.trace,
        build_time=float(build_time),
        n_rows=highs.getNumRow(),
        n_cols=n_cols,
        n_nonzeros=highs.getNumNz(),
        n_integer=n_integer,
        solver="highs",
        versions=versions(highs),
        start_source=start_source,
        start_objective=_finite(start_objective),
        start_accepted=start_accepted,
        message=message,
    )
    return result, x


# ---------------------------------------------------------------------- Pyomo
# MIP solvers probed by available_pyomo_solvers() (to list alternatives in errors).
_PYOMO_CANDIDATES = (
    "appsi_highs", "highs", "appsi_cbc", "cbc", "glpk", "appsi_gurobi", "gurobi_direct",
    "gurobi", "appsi_cplex", "cplex", "scip", "xpress",
)
_HIGHS_NODES_LOG = re.compile(r"^\s*Nodes\s+(\d+)\s*$", re.MULTILINE)


def available_pyomo_solvers(candidates=_PYOMO_CANDIDATES) -> list[str]:
    """Names among ``candidates`` that Pyomo can run on this machine."""
    return [name for name in candidates if _pyomo_solver(name, probe=True) is not None]


def _pyomo_solver(name, probe=False):
    """(interface, solver) for a Pyomo solver name; None if unavailable and ``probe``.

    interface is "appsi" (``appsi_<x>``: native APPSI object), "contrib" (Pyomo's new
    solver interface, e.g. ``highs``) or "legacy" (``pyomo.opt.SolverFactory``).
    """
    import logging

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
        import logging

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
    idx = np.fromiter(start.keys(), dtype=np.int64, count=len(start))
    val = np.fromiter(start.values(), dtype=np.float64, count=len(start))
    if idx.size and (idx.min() < 0 or idx.max() >= spec.n_cols):
        raise ValueError(f"start refers to columns outside [0, {spec.n_cols})")
    h = spec.to_highs()
    h.changeColsBounds(len(idx), idx.astype(np.int32), val, val)
    sub_options = SolveOptions(
        time_limit=options.time_limit, rel_gap=1.0, threads=options.threads,
        random_seed=options.random_seed,
    )
    result, x = solve_highs(h, sub_options)
    return x if result.has_solution else None


def _run_appsi(solver, model, options, warmstart, log, solver_options):
    from pyomo.contrib.appsi.base import TerminationCondition as TC

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
    tc = res.termination_condition
    kind = {
        TC.optimal: "optimal", TC.maxTimeLimit: "time_limit", TC.maxIterations: "iteration_limit",
        TC.infeasible: "infeasible",
    }.get(tc, f"other:{tc.name}")
    has_solution = res.best_feasible_objective is not None
    if has_solution:
        res.solution_loader.load_vars()
    return kind, _finite(res.best_feasible_objective), _finite(res.best_objective_bound), has_solution, passed


def _run_contrib(solver, model, options, log_stream, solver_options):
    import sys

    from pyomo.contrib.solver.common.results import SolutionStatus
    from pyomo.contrib.solver.common.results import TerminationCondition as TC

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
    tc = res.termination_condition
    kind = {
        TC.convergenceCriteriaSatisfied: "optimal", TC.maxTimeLimit: "time_limit",
        TC.iterationLimit: "iteration_limit", TC.provenInfeasible: "infeasible",
    }.get(tc, f"other:{tc.name}")
    has_solution = res.solution_status in (SolutionStatus.feasible, SolutionStatus.optimal)
    if has_solution:
        res.solution_loader.load_vars()
    return kind, _finite(res.incumbent_objective), _finite(res.objective_bound), has_solution, passed


def _run_legacy(solver, model, options, warmstart, solver_options):
    from pyomo.opt import SolutionStatus, TerminationCondition as TC

    kwargs = {"tee": bool(options.verbose), "load_solutions": False}
    if warmstart:
        kwargs["warmstart"] = True
    if solver_options:
        kwargs["options"] = dict(solver_options)
    res = solver.solve(model, **kwargs)
    tc = res.solver.termination_condition
    kind = {
        TC.optimal: "optimal", TC.maxTimeLimit: "time_limit", TC.maxIterations: "iteration_limit",
        TC.infeasible: "infeasible",
    }.get(tc, f"other:{tc}")
    has_solution = len(res.solution) > 0 and res.solution(0).status in (
        SolutionStatus.optimal, SolutionStatus.feasible, SolutionStatus.bestSoFar,
        SolutionStatus.globallyOptimal, SolutionStatus.locallyOptimal,
    )
    objective = bound = None
    if has_solution:
        model.solutions.load_from(res)
        import pyomo.environ as pyo

        objective = _finite(pyo.value(model.objective))
    lower = _finite(res.problem.lower_bound)
    bound = lower if lower is not None else (objective if kind == "optimal" else None)
    return kind, objective, bound, has_solution, set()


def _run_pyomo_solver(interface, solver, model, options, warmstart, log, log_stream, solver_options):
    if interface == "appsi":
        return _run_appsi(solver, model, options, warmstart, log, solver_options)
    if interface == "contrib":
        return _run_contrib(solver, model, options, log_stream, solver_options)
    return _run_legacy(solver, model, options, warmstart, solver_options)


def solve_pyomo(
    spec,
    solver_name,
    options,
    *,
    start=None,
    start_source=None,
    start_objective=None,
    build_time=0.0,
    solver_options=None,
):
    """Solve the Pyomo emission of ``spec`` with an installed Pyomo solver.

    Parameters
    ----------
    spec : ModelSpec
    solver_name : str
        ``"appsi_<x>"`` (Pyomo's APPSI interfaces, e.g. ``"appsi_highs"``), a name of
        Pyomo's new solver interface (e.g. ``"highs"``), or any legacy
        ``SolverFactory`` name (``"cbc"``, ``"glpk"``, ...).
    options : SolveOptions
        ``time_limit``/``rel_gap`` go to every APPSI and new-interface solver, ``threads``
        to the new interface and HiGHS, ``random_seed``/``node_limit`` to HiGHS only.
        Legacy solvers get only ``solver_options`` (their option names differ).
    start : dict[int, float] or None
        Discrete part of a start (column index -> value).  It is completed to a full
        solution with HiGHS (start columns fixed; an LP when all integer columns are
        given) and the Pyomo variables are initialised with it for solvers that take a
        warm start (``appsi_highs``, legacy ``warmstart``); Pyomo's ``highs`` interface
        passes none.  Acceptance is read from the HiGHS log; other solvers do not report
        it (``start_accepted`` None with a note).
    start_source, start_objective, build_time
        Recorded as in :func:`solve_highs`; ``build_time`` also includes the Pyomo
        emission (``spec.to_pyomo()``).
    solver_options : dict or None
        Extra solver-specific options (APPSI: merged into the solver's option dict when
        it has one; new interface: ``solver_options``; legacy: ``options``).

    Returns
    -------
    result : SolveResult
        ``solver`` is ``"pyomo:<name>"``; ``solve_time`` includes Pyomo's model transfer
        to the solver; the trace holds the final point only.
    x : ndarray of shape (n_cols,) or None
        Solution in spec column order, None without a solution.

    Raises
    ------
    ValueError
        If the solver is not installed or not known to Pyomo.
    """
    import io

    from pyomo.common.gc_manager import PauseGC

    from ._model import ModelSpec

    if not isinstance(spec, ModelSpec):
        raise TypeError(f"spec must be a ModelSpec, got {type(spec).__name__}")
    if not isinstance(options, SolveOptions):
        raise TypeError(f"options must be a SolveOptions, got {type(options).__name__}")
    if not isinstance(solver_name, str) or not solver_name:
        raise ValueError(f"solver_name must be a non-empty str, got {solver_name!r}")
    if start is not None and not isinstance(start, dict):
        raise TypeError(f"start must be a dict column index -> value, got {type(start).__name__}")
    interface, solver = _pyomo_solver(solver_name)
    uses_highs = "highs" in solver_name
    notes = []

    t = time.perf_counter()
    model = spec.to_pyomo()
    build_time = float(build_time) + time.perf_counter() - t
    columns = model._optitree_columns

    warmstart = False
    if start is not None:
        full = _complete_start(spec, start, options)
        if full is None:
            notes.append("the start has no feasible completion")
            values = start
        else:
            values = dict(enumerate(full.tolist()))
        for j, v in values.items():
            columns[j].set_value(v, skip_validation=True)
        if interface == "appsi":
            warmstart = "warmstart" in solver.config
        elif interface == "legacy":
            warmstart = solver.warm_start_capable()
        if not warmstart:
            notes.append(f"Pyomo's {solver_name!r} interface passes no MIP start")

    if uses_highs:
        _ensure_scheduler(options.threads)
    log, log_stream = _LogCapture(), io.StringIO()
    t0 = time.perf_counter()
    with PauseGC():  # Pyomo's model transfer creates many small objects
        kind, objective, bound, has_solution, passed = _run_pyomo_solver(
            interface, solver, model, options, warmstart, log, log_stream, solver_options
        )
    solve_time = time.perf_counter() - t0
    log_text = log.text + log_stream.getvalue()

    status, message = _status_from_kind(kind, has_solution, options.node_limit)
    if status == "error":
        notes.insert(0, message)
    x = None
    if has_solution:
        cost, lb, ub, _ = spec.column_arrays()
        x = np.array([np.nan if v.value is None else v.value for v in columns], dtype=np.float64)
        # Columns in no row and without cost are not passed to some solvers: any value in
        # their bounds is optimal; take the one closest to 0.
        unset = np.isnan(x)
        x[unset] = np.clip(0.0, lb[unset], ub[unset])
        if objective is None:
            objective = float(cost @ x + spec.objective_offset)
    if not has_solution:
        objective = None

    start_accepted = None
    if start is not None:
        if uses_highs:
            start_accepted = warmstart and _START_LOG.search(log_text) is not None
        else:
            notes.append(f"{solver_name!r} does not report whether it used the start")
    not_passed = sorted(
        {"time_limit", "rel_gap", "threads", "random_seed", "node_limit"} - passed
        - {k for k, v in asdict(options).items() if v is None}
    )
    if not_passed:
        notes.append(f"options not passed to {solver_name!r}: {', '.join(not_passed)}")
    nodes = _HIGHS_NODES_LOG.findall(log_text)

    result = _final_result(
        status=status,
        objective=objective,
        bound=bound,
        options=options,
        abs_tol=1e-6,  # HiGHS's default mip_abs_gap; other solvers report no tolerance
        nodes=int(nodes[-1]) if nodes else 0,
        solve_time=solve_time,
        trace=[],
        build_time=build_time,
        n_rows=spec.n_rows,
        n_cols=spec.n_cols,
        n_nonzeros=spec.nnz,
        n_integer=spec.n_integer,
        solver=f"pyomo:{solver_name}",
        versions=versions(pyomo=True),
        start_source=start_source,
        start_objective=_finite(start_objective),
        start_accepted=start_accepted,
        message="; ".join(notes),
    )
    return result, x


def _status_from_kind(kind, has_solution, node_limit):
    if kind == "optimal":
        return "optimal", ""
    if kind == "infeasible":
        return "infeasible", ""
    if kind == "time_limit":
        return ("time_limit" if has_solution else "time_limit_no_solution"), ""
    if kind == "iteration_limit" and node_limit is not None:
        return ("node_limit" if has_solution else "node_limit_no_solution"), ""
    return "error", f"solver termination: {kind.removeprefix('other:')}"


# ---------------------------------------------------------------------- helpers
def _json_safe(obj):
    if isinstance(obj, dict):
        return {str(k): _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (Integral, np.integer)):
        return int(obj)
    if isinstance(obj, (Real, np.floating)):
        v = float(obj)
        return v if math.isfinite(v) else None
    if obj is None or isinstance(obj, str):
        return obj
    return str(obj)
