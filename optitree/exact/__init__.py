"""Exact optimal classification trees by dynamic programming and branch-and-bound.

``solve`` returns a provably optimal tree of bounded depth (or, under a time limit, the best
tree found and a proven bound); ``split_bounds`` gives, for every split candidate of a node,
lower bounds on its children's optimal sub-trees (the bound rows of a MIP). Both work on
:class:`ExactData`, the rank encoding made once by :func:`prepare`.

Depends on numpy, numba and ``greedy`` only.
"""

from ._api import ExactResult, solve
from ._bounds import SplitBounds, split_bounds
from ._data import ExactData, prepare

__all__ = ["solve", "ExactResult", "split_bounds", "SplitBounds", "prepare", "ExactData"]
