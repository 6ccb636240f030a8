"""Exact optimal classification trees by dynamic programming and branch-and-bound.

``solve`` returns a provably optimal tree of bounded depth (or, under a time limit, the best
tree found and a proven bound); ``split_bounds`` gives, for every split candidate of a node,
lower bounds on its children's optimal sub-trees (the bound rows of a MIP). Both work on
:class:`ExactData`, the rank encoding made once by :func:`prepare`.

Depends on numpy, its compiled core ``_core`` (C++, built at install), ``greedy``, the problem layer
``optitree.problem`` (units, losses) and ``optitree._forked`` only.

>>> import numpy as np
>>> from optitree.exact import solve, split_bounds
>>> X = np.array([[1.0, 0.0], [2.0, 1.0], [3.0, 0.0], [4.0, 1.0]])
>>> y = np.array([0, 1, 1, 0])
>>> res = solve(X, y, max_depth=2)
>>> res.objective, res.status, res.tree.n_splits
(0.0, 'optimal', 2)
>>> solve(X, y, max_depth=2, alpha=0.5).objective  # splits cost 0.5 each: two splits, no error
1.0

Every root candidate of the depth-2 problem with ``alpha = 0.5``, and the bound on the cost
of any tree rooted at it (``alpha`` + the children's optima of depth 1):

>>> sb = split_bounds(X, y, depth=2, alpha=0.5)
>>> sb.feature.tolist(), sb.threshold.tolist()
([0, 0, 0, 1], [1.5, 2.5, 3.5, 0.5])
>>> (0.5 + sb.children_bound).tolist(), bool(sb.exact.all())
([1.0, 1.5, 1.0, 1.5], True)
"""

from ._api import ExactResult, solve
from ._bounds import SplitBounds, split_bounds
from ._data import ExactData, prepare
from ._subsets import MAX_SUBSETS, honours_distinct_features

__all__ = ["solve", "ExactResult", "split_bounds", "SplitBounds", "prepare", "ExactData", "MAX_SUBSETS",
           "honours_distinct_features"]
