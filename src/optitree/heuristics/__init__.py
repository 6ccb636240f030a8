"""Improvement heuristics for the MIP starts of the formulations that the exact engine cannot settle.

* :func:`improve_oblique` — hyperplane splits (OCT-H): node-by-node re-optimisation of each
  hyperplane with the rest of the tree fixed, to a fixed point, from several starts;
* :func:`improve_linear_leaves` — linear leaves (ORT-L): least squares per leaf within the
  L1 budget with the splits fixed, then every split re-chosen with the leaves refitted.

Both return a tree never worse than the given one on the formulation's training objective
(the given tree itself when nothing better is found), in a form the formulation accepts as a
start. numpy, scipy, scikit-learn and ``greedy`` only.
"""

from ._linear_leaves import greedy_coef_budget, improve_linear_leaves, linear_leaf_objective
from ._oblique import improve_oblique, oblique_objective

__all__ = ["improve_oblique", "oblique_objective", "improve_linear_leaves", "linear_leaf_objective",
           "greedy_coef_budget"]
