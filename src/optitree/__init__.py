"""optitree: optimal decision trees by mixed-integer programming.

The shared tree structure is :class:`greedy.Tree`, re-exported here. Solver backends
(:class:`SolverBackend`, :func:`register_backend`) live in :mod:`optitree.solvers`.
"""

from greedy import Tree

from . import datasets, solvers
from .formulations import HeapTree
from .estimators import OptimalTreeClassifier, OptimalTreeRegressor
from .rashomon import RashomonSet
from .views import export_graphviz, export_text, plot_decision_regions, plot_progress, plot_tree
from .solvers import SolveOptions, SolverBackend, SolveResult, register_backend

__all__ = ["Tree", "HeapTree"]
__all__ += ["datasets", "export_text", "export_graphviz", "plot_tree", "plot_progress", "plot_decision_regions"]
__all__ += ["OptimalTreeClassifier", "OptimalTreeRegressor", "RashomonSet"]
__all__ += ["solvers", "SolveOptions", "SolveResult", "SolverBackend", "register_backend"]
__version__ = "0.1.0"
