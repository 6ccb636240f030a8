"""optitree: optimal decision trees by mixed-integer programming.

The shared tree structure is :class:`greedy.Tree`, re-exported here.
"""

from greedy import HeapTree, Tree

from . import datasets
from ._export import export_graphviz, export_text
from ._plot import plot_decision_regions, plot_progress, plot_tree
from ._classifier import OptimalTreeClassifier
from ._regressor import OptimalTreeRegressor

__all__ = ["Tree", "HeapTree"]
__all__ += ["datasets", "export_text", "export_graphviz", "plot_tree", "plot_progress", "plot_decision_regions"]
__all__ += ["OptimalTreeClassifier", "OptimalTreeRegressor"]
__version__ = "0.1.0"
