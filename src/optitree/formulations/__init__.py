"""MIP formulations of depth-bounded decision trees.

Each formulation builds a :class:`~optitree.model.ModelSpec` from training data with
vectorised numpy row blocks, maps start trees to MIP starts, decodes solutions to
:class:`greedy.Tree` objects in original feature units, and recomputes its objective
from a tree with numpy (:meth:`~TreeFormulation.objective_of_tree`). What depends on
the task (targets, baseline, leaf values, loss) is its policy, a :class:`Task`.

========  ===========================================  ==============  ================================
name      class                                        task            splits
========  ===========================================  ==============  ================================
"oct"     :class:`OCTFormulation` (Bertsimas & Dunn)   classification  univariate, continuous thresholds
"flow"    :class:`FlowOCTFormulation` (Aghaei et al.)  classification  univariate, binarized thresholds
"oct-h"   :class:`OCTHFormulation` (Bertsimas & Dunn)  classification  hyperplanes (alpha per feature used)
"ort"     :class:`ORTFormulation` (Bertsimas & Dunn)   regression      OCT's, constant or linear leaves
========  ===========================================  ==============  ================================

``OptimalTreeClassifier`` and ``OptimalTreeRegressor`` take their ``formulation=`` from
:data:`FORMULATIONS`, restricted to their task (:func:`formulation_names`).
"""

from ._base import InfeasibleStartError, TreeFormulation
from ._heap import PASS_THROUGH, HeapTree, from_heap, leaf_ancestors, to_heap
from ._task import LEAF_MODELS, LOSSES, ClassificationTask, RegressionTask, Task
from .flow import FlowOCTFormulation
from .oct import OCTFormulation
from .octh import OCTHFormulation
from .ort import ORTFormulation

#: Registry: ``formulation=`` name -> :class:`TreeFormulation` subclass.
FORMULATIONS = {"oct": OCTFormulation, "flow": FlowOCTFormulation, "oct-h": OCTHFormulation, "ort": ORTFormulation}


def formulation_names(task: str) -> set[str]:
    """Names in :data:`FORMULATIONS` of the formulations for ``task`` ("classification" or "regression")."""
    return {name for name, cls in FORMULATIONS.items() if cls.task_type.name == task}


__all__ = [
    "TreeFormulation",
    "OCTFormulation",
    "FlowOCTFormulation",
    "OCTHFormulation",
    "ORTFormulation",
    "InfeasibleStartError",
    "LEAF_MODELS",
    "LOSSES",
    "FORMULATIONS",
    "formulation_names",
    "Task",
    "ClassificationTask",
    "RegressionTask",
    "HeapTree",
    "PASS_THROUGH",
    "to_heap",
    "from_heap",
    "leaf_ancestors",
]
