"""The solver-backend contract and the registry keyed by the estimators' ``solver=`` string.

A backend holds one :class:`~optitree.model.ModelSpec` loaded into one solver::

    backend = make_backend("highs", spec)          # build (hand the model to the solver)
    backend.set_start({j: v, ...}, source="cart")  # optional sparse MIP start
    result, x = backend.solve(options, on_event)   # SolveResult + primal vector (or None)
    backend.add_rows("cut", 1, rows, cols, vals, lb, ub)
    result, x = backend.solve(options)             # re-solve, warm from the previous x

A ``solver=`` string is ``"<family>"`` or ``"<family>:<name>"``; the family selects a
registered :class:`SolverBackend` subclass (``"highs"``, ``"pyomo"``), the name (e.g.
``"appsi_highs"``) is passed to it. :func:`register_backend` adds a family.
"""

from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from typing import Callable, ClassVar

import numpy as np

from ..model import ModelSpec, RowBlock
from .results import SolveOptions, SolveResult

__all__ = [
    "SolverBackend", "ProgressCallback", "register_backend", "unregister_backend", "registered_backends",
    "check_solver", "make_backend",
]

ProgressCallback = Callable[[dict], "bool | None"]
"""``on_event(point)`` gets each trace point as it is recorded (a dict ``{"time", "incumbent",
"bound", "gap", "nodes", "event"}``, see :class:`SolveResult`); returning True asks the
solver to stop (termination ``"interrupted"``) where the backend supports it. A backend may
also send ``"heartbeat"`` points between trace points (the last point again, the time
updated; not in the trace), so that a stop is heard and progress shown while the solver
reports nothing (HiGHS: presolve and LPs, a forked run)."""


class SolverBackend(ABC):
    """One model loaded into one solver: start, solve, add rows, re-solve.

    Subclasses set :attr:`family` and :attr:`syntax`, implement :meth:`_load`,
    :meth:`_solve` and :meth:`_add_rows`, and may override :meth:`check_name`.

    Parameters
    ----------
    spec : ModelSpec
        The model; :meth:`add_rows` appends to it.
    name : str or None
        The part of the ``solver=`` string after ``"<family>:"`` (None without one).

    Attributes
    ----------
    solver : str
        The full ``solver=`` string, recorded in :attr:`SolveResult.solver`.
    load_time : float
        Seconds spent handing the model to the solver (added to ``build_time``).
    """

    family: ClassVar[str]
    syntax: ClassVar[str]  # how the solver string is written, for error messages

    def __init__(self, spec: ModelSpec, name: str | None = None):
        if not isinstance(spec, ModelSpec):
            raise TypeError(f"spec must be a ModelSpec, got {type(spec).__name__}")
        self.check_name(name)
        self.spec, self.name = spec, name
        self.solver = self.family if name is None else f"{self.family}:{name}"
        self._start = self._start_source = self._start_objective = None
        self._last_x = None
        t = time.perf_counter()
        self._load()
        self.load_time = time.perf_counter() - t

    @classmethod
    def check_name(cls, name: str | None) -> None:
        """Raise ValueError unless ``name`` is valid for this family (default: no name)."""
        if name is not None:
            raise ValueError(f"solver must be {cls.syntax}, got {cls.family}:{name!r}")

    @classmethod
    def check_available(cls, name: str | None) -> None:
        """Raise ValueError unless the solver can run here (default: always; called before any work)."""

    # ------------------------------------------------------------------ the contract
    def set_start(self, start: dict | None, *, source: str | None = None, objective: float | None = None) -> None:
        """Use ``start`` (column index -> value: a complete solution, or its discrete columns) in the next solves.

        ``source`` and ``objective`` (the start's objective as its producer computed it)
        are recorded in the result. ``None`` removes the start.
        """
        if start is not None:
            check_start(start, self.spec.n_cols)
        self._start, self._start_source, self._start_objective = start, source, objective

    def solve(self, options: SolveOptions, on_event: ProgressCallback | None = None):
        """Solve under ``options``; limits and infeasibility are terminations, never exceptions.

        Returns
        -------
        result : SolveResult
            ``build_time`` is :attr:`load_time` (callers add their own model building).
        x : ndarray of shape (spec.n_cols,) or None
            The best primal solution in spec column order, None without one.
        """
        if not isinstance(options, SolveOptions):
            raise TypeError(f"options must be a SolveOptions, got {type(options).__name__}")
        if on_event is not None and not callable(on_event):
            raise TypeError(f"on_event must be callable or None, got {on_event!r}")
        result, x = self._solve(options, on_event)
        self._last_x = x
        return result, x

    def add_rows(self, name, n_rows, rows, cols, vals, lb, ub) -> np.ndarray:
        """Append a row block to the model and the loaded solver (as :meth:`ModelSpec.add_rows`).

        The next :meth:`solve` starts from the previous solution's integer columns (the
        solver drops the start if the new rows cut it off) unless :meth:`set_start` is
        called in between. Returns the global row indices.
        """
        indices = self.spec.add_rows(name, n_rows, rows, cols, vals, lb, ub)
        self._add_rows(self.spec.row_blocks[name])
        if self._last_x is not None:
            cost, _, _, integrality = self.spec.column_arrays()
            integer = np.flatnonzero(integrality)
            if integer.size:
                values = np.round(self._last_x[integer])
                self.set_start(dict(zip(integer.tolist(), values.tolist())), source="previous solve",
                               objective=float(cost @ self._last_x + self.spec.objective_offset))
        return indices

    # ------------------------------------------------------------------ to implement
    @abstractmethod
    def _load(self) -> None:
        """Hand ``self.spec`` to the solver."""

    @abstractmethod
    def _solve(self, options: SolveOptions, on_event: ProgressCallback | None) -> tuple[SolveResult, np.ndarray | None]:
        """Solve with ``self._start`` (None or a validated dict), ``self._start_source``, ``self._start_objective``."""

    @abstractmethod
    def _add_rows(self, block: RowBlock) -> None:
        """Pass a row block just appended to ``self.spec`` to the loaded solver."""


def check_start(start, n_cols):
    """A sparse start as (column indices, values) arrays; TypeError/ValueError if it is malformed."""
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
    return idx, val


def finite(v):
    """float(v), or None for None, NaN, +-inf and solvers' 'infinite' sentinels (|v| >= 1e100)."""
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) and abs(v) < 1e100 else None


# ---------------------------------------------------------------------- registry
_BACKENDS: dict[str, type[SolverBackend]] = {}


def register_backend(backend: type[SolverBackend], *, replace: bool = False) -> type[SolverBackend]:
    """Make ``solver="<backend.family>[:<name>]"`` select ``backend`` (usable as a class decorator).

    Raises
    ------
    TypeError
        If ``backend`` is not a :class:`SolverBackend` subclass.
    ValueError
        If its family is not an identifier or is taken (and not ``replace``).
    """
    if not (isinstance(backend, type) and issubclass(backend, SolverBackend)):
        raise TypeError(f"backend must be a SolverBackend subclass, got {backend!r}")
    family = getattr(backend, "family", None)
    if not isinstance(family, str) or not family.isidentifier():
        raise ValueError(f"{backend.__name__}.family must be an identifier, got {family!r}")
    if family in _BACKENDS and _BACKENDS[family] is not backend and not replace:
        raise ValueError(f"solver family {family!r} is already registered ({_BACKENDS[family].__name__})")
    _BACKENDS[family] = backend
    return backend


def unregister_backend(family: str) -> None:
    """Remove a registered family (KeyError if unknown)."""
    del _BACKENDS[family]


def registered_backends() -> dict[str, type[SolverBackend]]:
    """A copy of the registry: family -> backend class."""
    return dict(_BACKENDS)


def check_solver(solver) -> tuple[type[SolverBackend], str | None]:
    """The backend class and name a ``solver=`` string selects.

    Raises
    ------
    ValueError
        Naming the accepted forms, for an unknown family or a name the family refuses.
    """
    family, _, name = solver.partition(":") if isinstance(solver, str) else ("", "", "")
    backend = _BACKENDS.get(family)
    if backend is None:
        forms = " or ".join(b.syntax for b in _BACKENDS.values())
        raise ValueError(f"solver must be {forms}, got {solver!r}")
    name = name if ":" in solver else None
    backend.check_name(name)
    return backend, name


def check_solver_available(solver) -> None:
    """:func:`check_solver`, then the backend's :meth:`SolverBackend.check_available` (e.g. a Pyomo solver installed)."""
    backend, name = check_solver(solver)
    backend.check_available(name)


def make_backend(solver: str, spec: ModelSpec, **kwargs) -> SolverBackend:
    """Load ``spec`` into the backend that ``solver`` selects (see :func:`check_solver`)."""
    backend, name = check_solver(solver)
    return backend(spec, name, **kwargs)
