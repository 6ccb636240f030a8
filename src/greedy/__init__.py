"""Greedy decision-tree induction (CART family) and the shared :class:`Tree` structure.

``greedy`` depends on numpy, scipy and scikit-learn's base classes only; it never
imports ``optitree``, ``experiments``, ``pyomo`` or ``highspy``.
"""

from ._tree import LEAF_FEATURE, OBLIQUE, TREE_LEAF, Tree, midpoint_threshold
from ._criteria import AdditiveCriterion, Criterion, register_criterion
from ._cart import FittedTreeMixin
from ._classes import CARTClassifier, CARTRegressor

__all__ = ["Tree", "TREE_LEAF", "LEAF_FEATURE", "OBLIQUE", "midpoint_threshold"]
__all__ += ["CARTClassifier", "CARTRegressor", "FittedTreeMixin", "Criterion", "AdditiveCriterion", "register_criterion"]

from ._hist import FeatureBinner, build_hist_tree
from ._linear import fit_linear_leaves
from ._prune import cost_complexity_path, prune_cost_complexity, prune_reduced_error

__all__ += ["FeatureBinner", "build_hist_tree", "fit_linear_leaves", "cost_complexity_path",
            "prune_cost_complexity", "prune_reduced_error"]
