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

__all__ = ["SolveOptions", "SolveResult", "STATUSES", "solve_highs", "solve_pyomo"]

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
_START_LOG = re.compile(r"MIP start solution is feasible, objective value is\s*(\S+)")
_SCHEDULER_LOG = "global scheduler has already been initialized"


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
    own second stopping criterion).  ``trace`` holds dicts ``{"time", "incumbent",
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
    its global scheduler (initialised by the first solve of the process); resetting it
    affects HiGHS solves running concurrently in other threads of this process.
    """
    global _scheduler_threads
    import highspy

    with _scheduler_lock:
        if force or _scheduler_threads != threads:
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
                "gap": _finite(out.mip_gap),
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
                "gap": _finite(out.mip_gap),
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
    if n_integer:
        bound = _finite(info.mip_dual_bound)
        gap = _finite(info.mip_gap) if has_solution else None
    else:
        bound = objective if status == "optimal" else None
        gap = 0.0 if status == "optimal" else None
    if status == "optimal" and gap is None:
        gap = 0.0
    abs_gap = None if objective is None or bound is None else abs(objective - bound)
    abs_tol = float(highs.getOptionValue("mip_abs_gap")[1])
    proven = status == "optimal" and (
        gap is not None and gap <= options.rel_gap or abs_gap is not None and abs_gap <= abs_tol
    )
    if status == "infeasible":
        proven = False

    x = np.asarray(highs.getSolution().col_value, dtype=np.float64) if has_solution else None

    start_accepted = None
    if start is not None:
        start_accepted = bool(
            recorder.logged_start_objective is not None or recorder.first_solution_matches_start
        )
        if not start_accepted:
            message = "; ".join(filter(None, [message, "MIP start rejected (infeasible or incomplete)"]))

    trace = recorder.trace
    trace.append(
        {
            "time": solve_time,
            "incumbent": objective,
            "bound": bound,
            "gap": gap,
            "nodes": int(max(info.mip_node_count, 0)),
            "event": "final",
        }
    )
    result = SolveResult(
        status=status,
        objective=objective,
        bound=bound,
        gap=gap,
        proven_optimal=bool(proven),
        nodes=int(max(info.mip_node_count, 0)),
        build_time=float(build_time),
        solve_time=solve_time,
        n_rows=highs.getNumRow(),
        n_cols=n_cols,
        n_nonzeros=highs.getNumNz(),
        n_integer=n_integer,
        solver="highs",
        versions=versions(highs),
        options=asdict(options),
        start_source=start_source,
        start_objective=_finite(start_objective),
        start_accepted=start_accepted,
        trace=trace,
        message=message,
    )
    return result, x


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
