"""optitree: optimal decision trees by mixed-integer programming.

The shared tree structure is :class:`greedy.Tree`, re-exported here.
"""

from greedy import HeapTree, Tree

__all__ = ["Tree", "HeapTree"]
__version__ = "0.1.0"
