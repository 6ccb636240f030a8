"""Solver backends behind one contract, selected by the estimators' ``solver=`` string.

* :mod:`~optitree.solvers.results`: :class:`SolveOptions`, :class:`SolveResult`
  (termination + has_solution; the status string derived).
* :mod:`~optitree.solvers.base`: :class:`SolverBackend` (the contract) and the registry
  (:func:`register_backend`, :func:`make_backend`).
* :mod:`~optitree.solvers.highs`: ``solver="highs"`` (default).
* :mod:`~optitree.solvers.pyomo`: ``solver="pyomo:<name>"`` (Pyomo imported lazily).
* :mod:`~optitree.solvers.resolve`: :func:`~optitree.solvers.resolve.solve_adding_rows`, the
  fit's solve: rows a callback asks for after a solve are added and the model solved again.
"""

from .base import (
    ProgressCallback,
    SolverBackend,
    check_solver,
    check_solver_available,
    make_backend,
    register_backend,
    registered_backends,
    unregister_backend,
)
from .highs import HighsBackend, solve_highs
from .pyomo import PyomoBackend, available_pyomo_solvers, solve_pyomo
from .results import STATUSES, TERMINATIONS, SolveOptions, SolveResult, relative_gap

__all__ = [
    "SolveOptions", "SolveResult", "STATUSES", "TERMINATIONS", "relative_gap",
    "SolverBackend", "ProgressCallback", "register_backend", "unregister_backend", "registered_backends",
    "check_solver", "check_solver_available", "make_backend",
    "HighsBackend", "solve_highs", "PyomoBackend", "solve_pyomo", "available_pyomo_solvers",
]
