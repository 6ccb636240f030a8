"""The HiGHS backend (``solver="highs"``): the one place that drives :class:`highspy.Highs`.

:func:`~optitree.model.compile_highs` hands a :class:`~optitree.model.ModelSpec` to HiGHS in one
``passModel`` call; :func:`solve_highs` runs a built ``Highs`` with explicit options
(``mip_rel_gap`` always set: HiGHS's default is not 0), an optional sparse MIP start
(``setSolution``), a progress trace from the ``cbMipImprovingSolution`` and
``cbMipInterrupt`` callbacks, and maps HiGHS's model status with :data:`_TERMINATION`.
:class:`HighsBackend` is both behind the backend contract.

Time limits count from the call of :func:`solve_highs`. HiGHS checks its clock between
presolve rounds, in the simplex and IPM loops and in branch-and-bound; a guard on the simplex,
IPM and MIP interrupt callbacks stops a run found past ``time_limit`` wherever HiGHS's own check
comes late. Some stages call no callback and check the clock late, so no guard reaches them: the
LP that completes a sparse MIP start, which runs before HiGHS starts its clock (0.2-0.5 s; 0.74 s
without presolve on FlowOCT depth 3, breast_cancer, 132 236 rows), MIP presolve (below), and
root cut separation (OCT depth 3, breast_cancer, 5 s limit: HiGHS stopped after 8.0 s, sampled
by gdb in ``HighsModkSeparator::separateLpSolution``; no option switches the mod-k separator
off). Hence the hard limit (:func:`isolates`): a large model runs in a forked child process
(:func:`~optitree._forked.run_forked`) that streams its trace points and improving
solutions to this process and is killed ``max(HARD_LIMIT_SLACK * time_limit, HARD_LIMIT_GRACE)``
after the limit; the result then keeps the last incumbent and bound the child reported, with
termination ``"time_limit"`` and a note in ``result.message``.

The presolve rule (:func:`~optitree.solvers._presolve.presolve_setting`) and its measurements are in
:mod:`optitree.solvers._presolve`.
"""

from __future__ import annotations

import math
import re
import threading
import time
from dataclasses import dataclass

import numpy as np

from ..model import compile_highs
from .._provenance import package_versions
from ._presolve import PRESOLVE_SHARE, predicted_presolve_time, presolve_setting
from .._forked import FORK_AVAILABLE, ForkFailed, run_forked
from .base import SolverBackend, check_start, finite, register_backend
from .results import SolveOptions, finished_result, relative_gap

__all__ = ["HighsBackend", "compile_highs", "isolates", "predicted_presolve_time", "presolve_setting", "solve_highs"]

#: A forked run is killed ``max(time_limit * HARD_LIMIT_SLACK, HARD_LIMIT_GRACE)`` seconds after its
#: limit (the least grace lets HiGHS return a start under limits shorter than the fork itself).
HARD_LIMIT_SLACK = 0.02
HARD_LIMIT_GRACE = 0.05
#: ... when HiGHS's predicted presolve time exceeds this share of the limit and the cost of a
#: fork (:func:`isolates`; about 20 ms for a 250 MB process, measured).
ISOLATE_SHARE = 0.02
FORK_SECONDS = 0.02
# Trace sampling: cbMipInterrupt fires very often; keep one "progress" point per interval.
PROGRESS_INTERVAL = 0.5
# A start is "accepted" if HiGHS logs it as feasible, or if its first improving solution
# agrees with the start on every given column within this tolerance.
START_TOL = 1e-6
# "feasible, objective value is X" (HiGHS 1.15) or "feasible: objective value is X" (1.16)
START_LOG = re.compile(r"MIP start solution is feasible[,:] objective value is\s*(\S+)")
_SCHEDULER_LOG = "scheduler has already been initialized"


@register_backend
class HighsBackend(SolverBackend):
    """``solver="highs"``: the spec compiled by :func:`compile_highs`, solved by :func:`solve_highs`.

    Rows added between solves go to the same ``Highs`` object (``addRows``).
    """

    family = "highs"
    syntax = "'highs'"

    def _load(self):
        self.highs = compile_highs(self.spec)
        self.n_integer = int(np.count_nonzero(self.spec.column_arrays()[3]))

    def _solve(self, options, on_event):
        return solve_highs(
            self.highs, options, start=self._start, start_source=self._start_source,
            start_objective=self._start_objective, build_time=self.load_time, on_event=on_event,
            n_integer=self.n_integer,
        )

    def _add_rows(self, block):
        import highspy

        status = self.highs.addRows(
            block.n_rows, block.lb, block.ub, block.nnz,
            block.indptr[:-1].astype(np.int32), block.indices, block.data,
        )
        if status == highspy.HighsStatus.kError:
            raise ValueError(f"HiGHS rejected row block {block.name!r} in addRows")


# ---------------------------------------------------------------------- threads
_scheduler_lock = threading.Lock()
_scheduler_threads: int | None = None


def ensure_scheduler(threads: int, force: bool = False) -> None:
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


# ---------------------------------------------------------------------- one run
def _apply_options(h, options: SolveOptions, presolve: str) -> None:
    import highspy

    values = {
        "time_limit": math.inf if options.time_limit is None else float(options.time_limit),
        "mip_rel_gap": float(options.rel_gap),
        "threads": int(options.threads),
        "random_seed": int(options.random_seed),
        "mip_max_nodes": highspy.kHighsIInf if options.node_limit is None else int(options.node_limit),
        "presolve": presolve,
        # Output stays on (the log callback records the MIP-start line); only the
        # console printing follows `verbose`.
        "output_flag": True,
        "log_to_console": bool(options.verbose),
    }
    for key, value in values.items():
        if h.setOptionValue(key, value) == highspy.HighsStatus.kError:
            raise ValueError(f"HiGHS rejected option {key}={value!r}")


def _feasible_start(h, idx, val, tol=1e-6):
    """``(objective, x)`` of a complete start that satisfies the loaded model (bounds, rows,
    integrality within ``tol``), else None.

    It runs after the limit, so it reads no matrix back: ``setSolution`` with every column
    makes HiGHS compute the row activities (the whole check 0.1 s for OCT-H depth 4, 2 000
    rows, 1.8 M nonzeros; converting ``getLp().a_matrix_`` to numpy alone took 0.56 s). The
    start becomes ``h``'s solution.
    """
    import highspy

    n, m = h.getNumCol(), h.getNumRow()
    x = np.empty(n)
    x[np.asarray(idx, np.intp)] = val
    _, _, cost, lb, ub, _ = h.getCols(n, np.arange(n, dtype=np.int32))
    if ((x < lb - tol) | (x > ub + tol)).any():
        return None
    integrality = np.asarray(h.getLp().integrality_, dtype=np.int64)
    if integrality.size and (np.abs(x - np.round(x))[integrality != 0] > tol).any():
        return None
    if h.setSolution(n, np.arange(n, dtype=np.int32), x) == highspy.HighsStatus.kError:
        return None
    solution = h.getSolution()
    if not solution.value_valid:
        return None
    _, _, row_lb, row_ub, _ = h.getRows(m, np.arange(m, dtype=np.int32))
    activity = np.asarray(solution.row_value)
    if ((activity < row_lb - tol) | (activity > row_ub + tol)).any():
        return None
    return float(cost @ x + h.getObjectiveOffset()[1]), x


def _set_start(h, start, n_cols):
    idx, val = check_start(start, n_cols)
    import highspy

    if h.setSolution(len(idx), idx.astype(np.int32), val) == highspy.HighsStatus.kError:
        raise ValueError("HiGHS rejected the MIP start (setSolution)")
    return idx, val


class _Recorder:
    """Callback state of one HiGHS run: trace, best solution, start acceptance, log lines, time guard.

    Each trace point is passed to ``on_event``; a True return interrupts the run. Any
    interrupt callback (simplex, IPM, MIP) after ``time_limit`` seconds, or once ``stop()``
    is True, interrupts the run; the first sets ``out_of_time``.
    """

    def __init__(self, start_idx, start_val, on_event, time_limit=None, stop=None):
        self.t0 = time.perf_counter()
        self.time_limit = math.inf if time_limit is None else float(time_limit)
        self.stop = stop
        self.out_of_time = False
        self.stop_asked = False  # on_event returned True: the caller wants the run to end
        self.last_heartbeat = -math.inf
        self.trace = []
        self.solution = None  # (objective, x) of the last improving solution
        self.last_progress = -math.inf
        self.start_idx, self.start_val = start_idx, start_val
        self.on_event = on_event
        self.first_solution_matches_start = None
        self.logged_start_objective = None
        self.scheduler_error = False

    def state(self) -> dict:
        """What the log and the first solution told, besides the trace (sent from a forked run)."""
        return {"out_of_time": self.out_of_time, "first_solution_matches_start": self.first_solution_matches_start,
                "logged_start_objective": self.logged_start_objective, "scheduler_error": self.scheduler_error}

    def adopt(self, state):
        """Take over :meth:`state` from a forked run's recorder."""
        self.out_of_time = state["out_of_time"]
        self.first_solution_matches_start = state["first_solution_matches_start"]
        self.logged_start_objective = state["logged_start_objective"]
        self.scheduler_error = state["scheduler_error"]

    def receive(self, point, state, x):
        """Record a trace point (and its solution ``x``, or None) reported by a forked run."""
        self.adopt(state)
        if x is not None:
            self.solution = (point["incumbent"], x)
        if point.get("event") != "heartbeat":
            self.trace.append(point)
            self.last_heartbeat = time.perf_counter() - self.t0
        return self._ask(point)

    def _ask(self, point) -> bool:
        """Pass ``point`` to ``on_event``; True (and remembered) when it asks the run to stop."""
        if self.on_event is not None and self.on_event(dict(point)):
            self.stop_asked = True
        return self.stop_asked

    def heartbeat(self) -> bool:
        """Between trace points (presolve, LPs, a forked child's silence): the last point again as a
        ``"heartbeat"`` event, not recorded, at most every ``PROGRESS_INTERVAL``; True once asked to stop."""
        now = time.perf_counter() - self.t0
        if self.on_event is None or now - self.last_heartbeat < PROGRESS_INTERVAL:
            return self.stop_asked
        self.last_heartbeat = now
        last = self.trace[-1] if self.trace else {"incumbent": None, "bound": None, "gap": None, "nodes": None}
        return self._ask({**last, "time": now, "event": "heartbeat"})

    def _record(self, e, incumbent, event):
        out = e.data_out
        incumbent, bound = finite(incumbent), finite(out.mip_dual_bound)
        point = {"time": time.perf_counter() - self.t0, "incumbent": incumbent, "bound": bound,
                 "gap": relative_gap(incumbent, bound), "nodes": int(out.mip_node_count), "event": event}
        self.trace.append(point)
        self.last_heartbeat = point["time"]
        if self._ask(point):
            e.data_in.user_interrupt = True

    def on_improving(self, e):
        event = "improving"
        x = np.array(e.data_out.mip_solution, dtype=np.float64)
        if self.first_solution_matches_start is None and self.start_idx is not None:
            self.first_solution_matches_start = bool(
                x.size and np.abs(x[self.start_idx] - self.start_val).max() <= START_TOL
            )
            if self.first_solution_matches_start or self.logged_start_objective is not None:
                event = "start"
        self.solution = (finite(e.data_out.objective_function_value), x)
        self._record(e, e.data_out.objective_function_value, event)

    def guard(self, e, beat=True):
        """Interrupt the run once past the time limit or asked to stop; True when it does.

        ``beat``: also send a heartbeat (simplex and IPM callbacks, where no trace point is recorded).
        """
        if time.perf_counter() - self.t0 > self.time_limit:
            self.out_of_time = True
            e.data_in.user_interrupt = True
        elif self.stop is not None and self.stop() or (self.heartbeat() if beat else self.stop_asked):
            e.data_in.user_interrupt = True
            return True
        return self.out_of_time

    def on_interrupt(self, e):
        if self.guard(e, beat=False):
            return
        if time.perf_counter() - self.t0 - self.last_progress < PROGRESS_INTERVAL:
            return
        self.last_progress = time.perf_counter() - self.t0
        self._record(e, e.data_out.mip_primal_bound, "progress")

    def on_log(self, e):
        msg = e.message
        if "MIP start" in msg:
            m = START_LOG.search(msg)
            if m:
                self.logged_start_objective = float(m.group(1))
        elif _SCHEDULER_LOG in msg:
            self.scheduler_error = True


def _run(h, recorder, t0):
    """Run ``h`` with ``recorder``'s callbacks; the seconds from ``t0`` to the end."""
    subscriptions = [
        (h.cbMipImprovingSolution, recorder.on_improving),
        (h.cbMipInterrupt, recorder.on_interrupt),
        (h.cbSimplexInterrupt, recorder.guard),
        (h.cbIpmInterrupt, recorder.guard),
        (h.cbLogging, recorder.on_log),
    ]
    for cb, fn in subscriptions:
        cb.subscribe(fn)
    try:
        recorder.t0 = t0
        h.run()
        return time.perf_counter() - recorder.t0
    finally:
        for cb, fn in subscriptions:
            cb.unsubscribe(fn)


def _termination_table():
    """HiGHS model status -> (termination, note). mip_max_nodes is the only
    solution-type limit optitree sets, so kSolutionLimit is the node limit."""
    import highspy

    S = highspy.HighsModelStatus
    return {
        S.kOptimal: ("optimal", ""),
        S.kModelEmpty: ("optimal", "empty model"),
        S.kInfeasible: ("infeasible", ""),
        S.kTimeLimit: ("time_limit", ""),
        S.kSolutionLimit: ("node_limit", ""),
        S.kInterrupt: ("interrupted", ""),
    }


@dataclass
class _Outcome:
    """What a HiGHS run ended with, read from the ``Highs`` object (:func:`_read_outcome`) or
    from a forked run's reports."""

    termination: str
    message: str
    objective: float | None
    bound: float | None
    x: np.ndarray | None
    nodes: int
    solve_time: float
    isolated: bool = False  # run in a forked child (:func:`_run_forked`)


def _read_outcome(h, recorder, n_integer, solve_time) -> _Outcome:
    import highspy

    info = h.getInfo()
    has_solution = int(info.primal_solution_status) == int(highspy.SolutionStatus.kSolutionStatusFeasible)
    model_status = h.getModelStatus()
    termination, message = _termination_table().get(
        model_status, ("error", f"HiGHS model status: {h.modelStatusToString(model_status)}")
    )
    if termination == "interrupted" and recorder.out_of_time:
        termination = "time_limit"
    return _Outcome(
        termination=termination, message=message,
        objective=finite(info.objective_function_value) if has_solution else None,
        bound=finite(info.mip_dual_bound) if n_integer else None,
        x=np.asarray(h.getSolution().col_value, dtype=np.float64) if has_solution else None,
        nodes=int(max(info.mip_node_count, 0)), solve_time=solve_time,
    )


def _run_here(h, recorder, n_integer, options, t0):
    """Run ``h`` in this process, its time limit counted from ``t0``: HiGHS's clock and the guard bound it."""
    return _read_outcome(h, recorder, n_integer, _run(h, recorder, t0))


def _run_forked(h, recorder, n_integer, options, t0):
    """Run ``h`` in a forked child (:func:`~optitree._forked.run_forked`), killed
    ``max(time_limit * HARD_LIMIT_SLACK, HARD_LIMIT_GRACE)`` after its limit from ``t0``;
    ``recorder`` receives the child's reports. If the fork fails, ``h`` runs in this process."""
    limit = float(options.time_limit)

    def work(send, stop_requested):
        if options.threads > 1:
            # The fork copied HiGHS's scheduler but not its worker threads: drop it without waiting
            # for them (a blocking reset would wait forever), so that this run starts its own.
            import highspy

            highspy.Highs.resetGlobalScheduler(False)

        def forward(point):
            x = child.solution[1] if point["event"] in ("improving", "start") else None
            send(("point", point, child.state(), x))
            return stop_requested()

        child = _Recorder(recorder.start_idx, recorder.start_val, forward, limit, stop=stop_requested)
        solve_time = _run(h, child, t0)
        send(("done", _read_outcome(h, child, n_integer, solve_time), child.state()))

    done = []

    def on_message(message):
        if message[0] == "point":
            return recorder.receive(*message[1:])
        done.append(message)

    try:
        forked = run_forked(work, on_message, t0 + limit + max(limit * HARD_LIMIT_SLACK, HARD_LIMIT_GRACE),
                            stop=recorder.heartbeat)
    except ForkFailed as error:
        outcome = _run_here(h, recorder, n_integer, options, t0)
        outcome.message = "; ".join(filter(None, [outcome.message, f"{error}: solved without the hard time limit"]))
        return outcome
    if done:
        _, outcome, state = done[0]
        recorder.adopt(state)
        outcome.isolated = True
        return outcome
    if forked.state == "stopped":
        termination, message = "interrupted", (
            f"stopped on request at {forked.seconds:.3g} s; the incumbent and bound are the last HiGHS reported")
    elif forked.state == "killed":
        termination, message = "time_limit", (
            f"HiGHS ran past its {limit:g} s time limit in a stage that checks no clock and was stopped at "
            f"{forked.seconds:.3g} s; the incumbent and bound are the last it reported")
    else:
        termination, message = "error", f"the HiGHS process {forked.detail}"
    bounds = [point["bound"] for point in recorder.trace if point["bound"] is not None]  # each one valid
    objective, x = recorder.solution if recorder.solution is not None else (None, None)
    return _Outcome(termination=termination, message=message, objective=objective,
                    bound=max(bounds) if bounds and n_integer else None, x=x,
                    nodes=max((point["nodes"] for point in recorder.trace), default=0), solve_time=forked.seconds,
                    isolated=True)


def isolates(options: SolveOptions, n_rows: int, n_cols: int, n_nonzeros: int) -> bool:
    """Whether a HiGHS run runs in a forked child, killed soon after its time limit (:func:`_run_forked`).

    True with :attr:`SolveOptions.hard_time_limit`, a time limit, fork available (Linux), and a
    model large enough for HiGHS's unclocked stages to matter: its predicted presolve time (which
    grows with the model like those stages do) above ``ISOLATE_SHARE`` of the limit and above
    ``FORK_SECONDS``, what the fork costs. Smaller models run in this process.
    """
    return bool(options.hard_time_limit and options.time_limit is not None and FORK_AVAILABLE
                and predicted_presolve_time(n_rows, n_cols, n_nonzeros)
                > max(ISOLATE_SHARE * options.time_limit, FORK_SECONDS))


def solve_highs(highs, options: SolveOptions, *, start=None, start_source=None, start_objective=None,
                build_time=0.0, on_event=None, n_integer=None):
    """Solve a built :class:`highspy.Highs` MIP.

    Parameters
    ----------
    highs : highspy.Highs
        The model (e.g. from :func:`compile_highs`); its options are overwritten.
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
    on_event : callable or None
        Called with each trace point; returning True interrupts the solve.
    n_integer : int or None
        Integer columns of the model, if the caller knows; None reads them from HiGHS
        (``getLp`` copies the whole model: 0.12 s for 231 455 columns).

    Returns
    -------
    result : SolveResult
    x : ndarray of shape (n_cols,) or None
        Best primal solution, None without a feasible solution.

    Notes
    -----
    Time limits, node limits and infeasible models are terminations, never exceptions.
    ``solve_time`` is measured here with ``time.perf_counter`` (HiGHS's ``getRunTime``
    is cumulative over runs of the same object).  The trace costs about 1 % of the
    solve time.
    """
    import highspy

    entered = time.perf_counter()  # the time limit and solve_time count from here
    if not isinstance(highs, highspy.Highs):
        raise TypeError(f"highs must be a highspy.Highs, got {type(highs).__name__}")
    if not isinstance(options, SolveOptions):
        raise TypeError(f"options must be a SolveOptions, got {type(options).__name__}")
    n_cols = highs.getNumCol()
    if n_integer is None:
        integrality = np.asarray(highs.getLp().integrality_, dtype=np.int64)
        n_integer = int((integrality != 0).sum()) if integrality.size else 0

    n_rows, n_nonzeros = highs.getNumRow(), highs.getNumNz()
    presolve = presolve_setting(options.presolve, n_rows, n_cols, n_nonzeros, options.time_limit)
    _apply_options(highs, options, presolve)
    start_idx = start_val = None
    if start is not None:
        start_idx, start_val = _set_start(highs, start, n_cols)

    ensure_scheduler(options.threads)
    run = _run_forked if isolates(options, n_rows, n_cols, n_nonzeros) else _run_here
    recorder = _Recorder(start_idx, start_val, on_event, options.time_limit)
    outcome = run(highs, recorder, n_integer, options, entered)
    if recorder.scheduler_error:
        # Another HiGHS user in this process initialised the scheduler differently.
        ensure_scheduler(options.threads, force=True)
        if start is not None:
            _set_start(highs, start, n_cols)
        recorder = _Recorder(start_idx, start_val, on_event, options.time_limit)
        outcome = run(highs, recorder, n_integer, options, entered)
    termination, message, objective, bound, x = (
        outcome.termination, outcome.message, outcome.objective, outcome.bound, outcome.x)

    if options.presolve and presolve == "off":
        message = "; ".join(filter(None, [message, (
            f"presolve off: predicted at {predicted_presolve_time(n_rows, n_cols, n_nonzeros):.3g} s for "
            f"this model, more than {PRESOLVE_SHARE:.0%} of the {options.time_limit:g} s limit")]))

    if x is None and start is not None and termination == "time_limit" and len(start_idx) == n_cols:
        # HiGHS may stop at its clock before it reads a start (a limit of microseconds, a loaded
        # machine): a complete start that satisfies the model is still the incumbent
        kept = _feasible_start(highs, start_idx, start_val)
        if kept is not None:
            objective, x = kept
            message = "; ".join(filter(None, [message, "HiGHS stopped before reading the start; the start (checked "
                                                       "feasible here) is the incumbent"]))

    start_accepted = None
    if start is not None:
        # The log line and the first improving solution are the usual evidence; when a
        # limit stops HiGHS before its MIP search, the start may be the returned
        # solution without either.
        start_accepted = bool(
            recorder.logged_start_objective is not None
            or recorder.first_solution_matches_start
            or x is not None and np.abs(x[start_idx] - start_val).max() <= START_TOL
        )
        if not start_accepted:
            message = "; ".join(filter(None, [message, "MIP start rejected (infeasible or incomplete)"]))

    result = finished_result(
        termination=termination,
        objective=objective,
        bound=bound,
        options=options,
        abs_tol=float(highs.getOptionValue("mip_abs_gap")[1]),
        nodes=outcome.nodes,
        solve_time=outcome.solve_time,
        trace=recorder.trace,
        build_time=float(build_time),
        n_rows=n_rows,
        n_cols=n_cols,
        n_nonzeros=n_nonzeros,
        n_integer=n_integer,
        solver="highs",
        versions={**package_versions(("numpy", "highspy", "optitree")),
                  "HiGHS": f"{highs.version()} ({highs.githash()})"},
        start_source=start_source,
        start_objective=finite(start_objective),
        start_accepted=start_accepted,
        message=message,
    )
    result.options["highs_presolve"] = presolve
    result.options["highs_isolated"] = outcome.isolated
    if on_event is not None:
        on_event(dict(result.trace[-1]))
    return result, x
