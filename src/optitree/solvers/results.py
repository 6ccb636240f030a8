"""What a solve is asked to do (:class:`SolveOptions`) and what it reports (:class:`SolveResult`).

A result's outcome is two fields, as in Pyomo's and linopy's results: ``termination``
(why the solver stopped, one of :data:`TERMINATIONS`) and ``has_solution`` (whether a
feasible solution exists). The single ``status`` string of earlier versions
(``"time_limit_no_solution"``, ...) is derived from them (:data:`STATUSES`), and
records that store only ``status`` still read back (:meth:`SolveResult.from_dict`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from numbers import Integral, Real

import numpy as np

from .._provenance import json_safe

__all__ = [
    "TERMINATIONS", "STATUSES", "SolveOptions", "SolveResult", "relative_gap", "status_string",
    "finished_result",
]

TERMINATIONS = ("optimal", "infeasible", "time_limit", "node_limit", "work_limit", "interrupted", "error")
# Terminations after which a solution may or may not exist: the status string says which.
_LIMITS = ("time_limit", "node_limit", "work_limit", "interrupted")
_NO_SOLUTION = "_no_solution"
STATUSES = (
    "optimal",
    *(f"{t}{suffix}" for t in _LIMITS for suffix in ("", _NO_SOLUTION)),
    "infeasible",
    "error",
)


def status_string(termination: str, has_solution: bool) -> str:
    """The status string of a (termination, has_solution) pair, e.g. ``"time_limit_no_solution"``."""
    return f"{termination}{_NO_SOLUTION}" if termination in _LIMITS and not has_solution else termination


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
    presolve : bool, default=True
        Presolve the model (``presolve``, HiGHS only). The root-split decomposition turns
        it off for its many small sub-MIPs, where it costs more than it saves.
    hard_time_limit : bool, default=True
        Stop the run within 2 % of ``time_limit`` (at least 0.05 s) after it, even inside solver
        stages that check no clock: HiGHS runs large models (:func:`optitree.solvers.highs.isolates`)
        in a forked child process, killed then, on Linux; the result keeps
        the last incumbent and bound the solver reported. False leaves the limit to HiGHS's clock.
    """

    time_limit: float | None = None
    rel_gap: float = 0.0
    threads: int = 1
    random_seed: int = 0
    node_limit: int | None = None
    verbose: bool = False
    presolve: bool = True
    hard_time_limit: bool = True

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

    ``termination`` is one of :data:`TERMINATIONS`: why the solver stopped.
    ``has_solution`` says whether a feasible solution (incumbent) exists; ``objective``
    is None exactly when it does not. ``status`` (a property) is the string of both,
    one of :data:`STATUSES`: ``"time_limit"``/``"node_limit"``/``"interrupted"`` with a
    solution, the same with ``"_no_solution"`` without one.  ``proven_optimal`` is True
    only when the solver reports optimality and the final gap is within the requested
    ``rel_gap`` (or within HiGHS's absolute gap tolerance ``mip_abs_gap`` = 1e-6, its
    own second stopping criterion).  ``gap`` is :func:`relative_gap` of ``objective`` and
    ``bound`` (``math.inf`` when the objective is 0 and the bound is not; None without
    an incumbent or a bound; :meth:`to_dict` stores ``math.inf`` as None, like every
    non-finite value).  ``bound`` is a valid lower bound on the optimum: the solver's
    dual bound, raised by :meth:`apply_lower_bound` to a bound known from the model
    (the estimators pass their formulation's ``objective_lower_bound``, 0, since
    a solver stopped before its root LP can report a dual bound far below it).
    ``build_time`` is the model construction measured by the caller plus the hand-off
    to the solver (HiGHS ``passModel``, Pyomo emission).
    ``fit_time`` is the wall time of an estimator's whole ``fit`` (None for a bare
    solve); everything but the build runs under ``time_limit``, so
    ``fit_time - build_time`` exceeds it only by the solver's late clock checks (HiGHS's
    presolve and root cuts, bounded by :attr:`SolveOptions.hard_time_limit`:
    :mod:`optitree.solvers.highs`; ``src/benchmarks/time_limit.py`` measures the overshoot).
    ``options`` is the :class:`SolveOptions` as a dict; a HiGHS run adds
    ``"highs_presolve"``, the ``presolve`` setting it ran with (``"choose"`` or ``"off"``:
    HiGHS's backend switches presolve off when its predicted time exceeds half the limit) and
    ``"highs_isolated"``, whether it ran in a forked child killed after the limit.
    ``trace`` holds dicts ``{"time", "incumbent",
    "bound", "gap", "nodes", "event"}`` with event ``"start"`` (accepted MIP start),
    ``"improving"`` (new incumbent), ``"progress"`` (sampled every >= 0.5 s) and
    ``"final"``; times are seconds since the solve started.
    ``objective_units`` (set by the estimators, :meth:`express_in_user_units`): ``{"name": "errors",
    "normalization": s}`` means that ``objective``, ``bound``, ``start_objective``, the trace and the
    split space's objectives are in the user's units (weighted training errors, squared or absolute
    error, plus the penalty in those units), and ``normalized_objective = objective * s`` (likewise
    ``normalized_bound``) is the objective the model minimises. None: a bare solve, in model units.
    ``split_space`` (set by the estimators) is the space of splits the result holds over:
    ``{"thresholds": rule, "features": [...]}`` with each categorical feature's subset rule and
    the features whose NaN routing was chosen (:meth:`optitree.split_space.SplitSpace.describe`);
    ``"tree"`` says where the returned tree lies, ``"start"`` gives the start's objective as it
    predicts and encoded in the space, and ``"space_optimum"`` the space's objective, bound and
    proof when a start outside the space (NaN rows split between children) was returned instead.
    ``acceleration`` records what the exact engine contributed (start, bound rows,
    screening, a certificate; :class:`optitree.pipeline._engine.ExactStage`), None without it.
    """

    termination: str
    has_solution: bool
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
    acceleration: dict | None = None
    fit_time: float | None = None
    objective_units: dict | None = None
    split_space: dict | None = None
    normalized_objective: float | None = None
    normalized_bound: float | None = None

    def __post_init__(self):
        if self.termination not in TERMINATIONS:
            raise ValueError(f"termination must be one of {TERMINATIONS}, got {self.termination!r}")

    @property
    def status(self) -> str:
        """``termination`` and ``has_solution`` as one string (:data:`STATUSES`), e.g. ``"time_limit_no_solution"``."""
        return status_string(self.termination, self.has_solution)

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

    def express_in_user_units(self, name: str, normalization: float) -> None:
        """Divide every objective value by ``normalization`` (the model's objective per user unit), keeping the
        model's objective and bound as ``normalized_objective``/``normalized_bound``; ``objective_units`` says so.

        A fit minimises ``E(T) / L̂ + alpha * splits`` (``normalization = 1 / L̂``); in the user's units that is
        ``E(T) + alpha * L̂ * splits``: weighted errors, squared or absolute error, plus the penalty.
        """
        def user(value):
            return None if value is None else float(np.float64(value) / normalization)

        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            self.normalized_objective, self.normalized_bound = self.objective, self.bound
            self.objective, self.bound = user(self.objective), user(self.bound)
            self.start_objective = user(self.start_objective)
            for point in self.trace:
                point["incumbent"], point["bound"] = user(point.get("incumbent")), user(point.get("bound"))
            space = self.split_space or {}
            for entry, keys in ((space.get("start"), ("objective", "objective_in_space")),
                                (space.get("space_optimum"), ("objective", "bound")), (space, ("all_midpoints_bound",))):
                for key in keys if entry else ():
                    if key in entry:
                        entry[key] = user(entry[key])
        self.objective_units = {"name": name, "normalization": float(normalization)}

    def to_dict(self) -> dict:
        """JSON-serialisable dict of every field plus the derived ``status`` (NaN and infinities become None)."""
        return json_safe({**asdict(self), "status": self.status})

    @classmethod
    def from_dict(cls, d) -> "SolveResult":
        """Inverse of :meth:`to_dict`; also reads records that store only ``status`` (no
        ``termination``/``has_solution``), where a solution exists iff ``objective`` is
        not None and the status has no ``"_no_solution"`` suffix."""
        if not isinstance(d, dict):
            raise TypeError(f"from_dict expects a dict, got {type(d).__name__}")
        d = dict(d)
        status = d.pop("status", None)
        names = {f.name for f in fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"unknown SolveResult fields: {sorted(unknown)}")
        if "termination" not in d:
            if status not in STATUSES:
                raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
            d["termination"] = status.removesuffix(_NO_SOLUTION)
            d.setdefault("has_solution", not status.endswith(_NO_SOLUTION) and d.get("objective") is not None)
        result = cls(**d)
        if status is not None and status != result.status:
            raise ValueError(
                f"status {status!r} contradicts termination={result.termination!r}, "
                f"has_solution={result.has_solution!r} (status {result.status!r})"
            )
        return result

    def _units_line(self, num) -> list:
        """``units: ...``: what the objective counts, and the normalised objective and bound the model minimises."""
        units = self.objective_units
        if not units or self.objective is None:
            return []
        name, normalization = units["name"], units.get("normalization", 1.0)
        if normalization == 1.0:
            return [f"units: {name}"]
        return [f"units: {name}; normalised (x {normalization:.6g}, as the model minimises it): objective "
                f"{num(self.normalized_objective)}, bound {num(self.normalized_bound)}"]

    def _work_line(self, start) -> str:
        """What the fit solved: the MIP's size and start, or the exact engine's search when no MIP was built."""
        if self.n_rows or self.n_cols:
            return (f"size: {self.n_rows} rows, {self.n_cols} columns ({self.n_integer} integer), "
                    f"{self.n_nonzeros} non-zeros; start: {start}")
        engine = (self.acceleration or {}).get("engine")
        if not engine:
            return "no MIP was built and no search ran" + ("" if self.start_source is None else
                                                            f": the {self.start_source} start is returned")
        done = [engine["status"]]
        if engine.get("stopped_by") not in (None, engine["status"]):
            done.append(f"stopped by {engine['stopped_by']}")
        if engine.get("work") is not None:
            done.append(f"{engine['work']} work units")
        returned = f"; the {engine['returned']} start returned, better than its tree" if engine.get("returned") else ""
        return f"search: the exact engine ({', '.join(done)}){returned}; no MIP was built"

    def _space_line(self) -> list:
        """``split space: ...``: what a proof holds over (numeric thresholds, category subsets, NaN routing),
        and where the tree lies when outside it (a start's own NaN routing, with the space's optimum)."""
        space = self.split_space
        if not space:
            return []
        parts = [f"thresholds: {space.get('thresholds', 'all midpoints')}"]
        for f in space.get("features", []):
            name = f.get("name", f"x{f['feature']}")
            if f.get("kind") == "categorical":
                parts.append(f"{name}: {f.get('subsets')} of {f.get('levels')} levels")
            if f.get("missing") == "both sides":
                parts.append(f"{name}: NaN either side")
        if space.get("all_midpoints_bound") is not None:
            parts.append(f"the optimum over every midpoint is >= {space['all_midpoints_bound']:.6g}")
        lines = ["split space: " + "; ".join(parts)]
        optimum = space.get("space_optimum")
        if optimum:
            held = ("proven optimal" if optimum["proven_optimal"] else "no bound" if optimum["bound"] is None
                    else f"bound {optimum['bound']:.6g}")
            lines.append(f"tree: {space['tree']}; the split space's tree: objective {optimum['objective']:.6g} "
                         f"({held} over the split space)")
        return lines

    def summary(self) -> str:
        """A few human-readable lines: status, objective and bound (also in the data's units), split
        space, times, and what was solved (the MIP's size and start, or the exact engine's search)."""
        def num(v, fmt=".6g"):
            return "-" if v is None else format(v, fmt)

        if self.start_accepted is None:
            start = "none"
        else:
            start = (
                f"{self.start_source or 'user'} (objective {num(self.start_objective)}, "
                f"{'accepted' if self.start_accepted else 'rejected'})"
            )
        bound = self.bound
        if bound is not None and abs(bound) <= 1e-9 * max(1.0, abs(self.objective or 0.0)):
            bound = 0.0  # solver noise around 0 (HiGHS reports e.g. 2.22e-16)
        gap = "-" if self.gap is None else format(self.gap, ".2%")
        if bound == 0.0 and self.objective:  # e.g. the a-priori bound 0 of a tree's objective
            gap += " (the bound is still 0: nothing proven beyond it)"
        lines = [
            f"status: {self.status}{' (proven optimal)' if self.proven_optimal else ''}"
            f" [{self.solver}]",
            f"objective: {num(self.objective)}  bound: {num(bound)}  gap: {gap}",
            *self._units_line(num),
            *self._space_line(),
            f"time: build {self.build_time:.2f} s, solve {self.solve_time:.2f} s"
            f"{'' if self.fit_time is None else f', fit {self.fit_time:.2f} s'}"
            f"{f'; nodes: {self.nodes}' if self.n_rows or self.n_cols else ''}",
            self._work_line(start),
        ]
        if self.message:
            lines.append(f"note: {self.message}")
        return "\n".join(lines)


def finished_result(*, termination, objective, bound, options, abs_tol, nodes, solve_time, trace, **fields):
    """The :class:`SolveResult` of a finished solve, the same for every backend.

    ``has_solution`` is ``objective is not None``. An optimal solve without a reported
    bound (an LP, or a solver that reports none) is its own bound. Proven optimal:
    termination optimal and gap <= ``rel_gap`` or absolute gap <= ``abs_tol``. The
    final point is appended to ``trace``.
    """
    if termination == "optimal" and bound is None:
        bound = objective
    gap = relative_gap(objective, bound)
    proven = termination == "optimal" and gap is not None and (
        gap <= options.rel_gap or abs(objective - bound) <= abs_tol
    )
    trace.append({"time": solve_time, "incumbent": objective, "bound": bound, "gap": gap, "nodes": nodes,
                  "event": "final"})
    return SolveResult(termination=termination, has_solution=objective is not None, objective=objective,
                       bound=bound, gap=gap, proven_optimal=bool(proven), nodes=nodes, solve_time=solve_time,
                       options=asdict(options), trace=trace, **fields)
