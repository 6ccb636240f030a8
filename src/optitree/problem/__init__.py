"""The problem a fit solves, below every solver: its rows, its losses and its one unit system.

The exact engine (:mod:`optitree.exact`) and the MIP formulations (:mod:`optitree.formulations`)
compute on the same internal numbers, fixed once here from the user's data:

- :class:`Units`: weights divided by a power of two near the smallest positive weight, regression
  targets centred and scaled by a power of two into ``[-1, 1]``; every conversion is exact, so a
  cost from either solver is the same number and reads back in the user's units without rounding;
- :func:`check_rows`: the training rows every solver takes, checked once;
- :data:`LOSSES`: one :class:`Loss` policy per loss (its leaf value, its cost exponent, its
  engine kernel, its greedy criterion).

- :class:`Problem`: the whole statement of one fit (rows, loss, units, depth, penalty, leaf size,
  feature restrictions, split space), the value the engine and every formulation take.

Adding a loss is one :class:`Loss` here plus its kernels in ``cpp/loss.hpp``.
"""

from ._losses import LOSSES, Loss, get_loss, weighted_median
from ._problem import Problem, check_allowed, check_statement, checked_max_bins, encode_targets, per_node_features
from ._rows import check_rows
from ._units import MAX_WEIGHT_SPREAD, Units, power_of_two_at_or_below, power_of_two_scale

__all__ = ["LOSSES", "Loss", "get_loss", "weighted_median", "check_rows", "Units", "MAX_WEIGHT_SPREAD",
           "power_of_two_scale", "power_of_two_at_or_below", "Problem", "check_allowed", "check_statement",
           "checked_max_bins", "encode_targets", "per_node_features"]
