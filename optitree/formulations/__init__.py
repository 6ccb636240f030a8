"""MIP formulations of depth-bounded classification trees.

Each formulation builds a :class:`~optitree._model.ModelSpec` from training data with
vectorised numpy row blocks, maps start trees to MIP starts, decodes solutions to
:class:`greedy.Tree` objects in original feature units, and recomputes its objective
from a tree with numpy (:meth:`~TreeFormulation.objective_of_tree`).

========  ===========================================  ================================
name      class                                        splits
========  ===========================================  ================================
"oct"     :class:`OCTFormulation` (Bertsimas & Dunn)   univariate, continuous thresholds
"flow"    :class:`FlowOCTFormulation` (Aghaei et al.)  univariate, binarized thresholds
"oct-h"   :class:`OCTHFormulation` (Bertsimas & Dunn)  hyperplanes (alpha per feature used)
========  ===========================================  ================================

Regression trees (ORT / ORT-L, :class:`ORTFormulation`) use OCT's routing with constant
or linear leaves; they are served by ``OptimalTreeRegressor``, not by this registry.
"""

from ._base import InfeasibleStartError, TreeFormulation, leaf_ancestors
from .flow import FlowOCTFormulation
from .oct import OCTFormulation
from .octh import OCTHFormulation
from .ort import ORTFormulation

FORMULATIONS = {"oct": OCTFormulation, "flow": FlowOCTFormulation, "oct-h": OCTHFormulation}

__all__ = [
    "TreeFormulation",
    "OCTFormulation",
    "FlowOCTFormulation",
    "OCTHFormulation",
    "ORTFormulation",
    "InfeasibleStartError",
    "FORMULATIONS",
    "leaf_ancestors",
]
