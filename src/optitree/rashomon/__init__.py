"""Rashomon sets: every tree of bounded depth whose objective is within ``(1 + epsilon)`` of the optimum.

:class:`RashomonSet` builds the set by dynamic programming over sub-problems (the rows reaching a
node and the depth left), pruned with the exact engine's optima (:func:`optitree.exact.split_bounds`),
and stores sorted objective values with counts per sub-problem, sharing children: never a list of
trees. See docs/rashomon.md.
"""

from ._set import MAX_DEPTH, RashomonSet, RashomonTree

__all__ = ["RashomonSet", "RashomonTree", "MAX_DEPTH"]
