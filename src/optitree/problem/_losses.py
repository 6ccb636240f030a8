"""Loss policies: what a loss decides, in one place for every solver."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    """A minimiser of ``Σ w_i |v_i - m|``: the middle of the weighted median interval.

    The interval is ``[v_lo, v_hi]`` with ``v_lo`` the smallest value whose cumulative weight
    reaches half the total and ``v_hi`` the largest whose remaining weight does (tolerance
    1e-12 relative, so that sums in another order agree).
    """
    order = np.argsort(values, kind="stable")
    v, cum = values[order], np.cumsum(weights[order])
    half = 0.5 * cum[-1]
    lo = int(np.searchsorted(cum, half * (1 - 1e-12)))
    hi = int(np.searchsorted(cum, half * (1 + 1e-12), side="right"))
    return 0.5 * (v[lo] + v[min(hi, v.size - 1)])


@dataclass(frozen=True)
class Loss:
    """One loss, as every solver needs it.

    Attributes
    ----------
    name : str
        ``"misclassification"``, ``"squared"`` or ``"absolute"``.
    power : int
        Exponent of the target scale in a cost (:class:`~optitree.problem.Units`).
    engine_code : int
        The compiled core's code of the loss (``cpp/arrays.hpp``'s ``Loss``).
    criterion : str
        The greedy criterion that grows CART's tree (its start) for this loss.
    """

    name: str
    power: int
    engine_code: int
    criterion: str

    @property
    def regression(self) -> bool:
        return self.power > 0

    def leaf_loss(self, t: np.ndarray, w: np.ndarray) -> float:
        """The loss of one leaf holding targets ``t`` (class codes for misclassification) with weights ``w``,
        predicting its best value: the misclassified weight of the heaviest class, or :meth:`node_loss`
        about :meth:`leaf_value`."""
        if not self.regression:
            return float(w.sum() - np.bincount(t, weights=w).max())
        return self.node_loss(t - self.leaf_value(t, w), w)

    def leaf_value(self, t: np.ndarray, w: np.ndarray) -> float:
        """A regression leaf's best constant for targets ``t`` with weights ``w``."""
        if self.name == "absolute":
            return weighted_median(t, w)
        return float(np.average(t, weights=w))

    def node_loss(self, residual: np.ndarray, w: np.ndarray) -> float:
        """``Σ w |r|**power`` of regression residuals ``r``."""
        r = np.abs(residual) if self.power == 1 else residual * residual
        return float(w @ r)


#: Every loss, by name. Codes: cpp/arrays.hpp (checked by the tests).
LOSSES = {
    "misclassification": Loss("misclassification", 0, 0, "gini"),
    "squared": Loss("squared", 2, 1, "squared_error"),
    "absolute": Loss("absolute", 1, 2, "absolute_error"),
}


def get_loss(name) -> Loss:
    """The :class:`Loss` called ``name`` (``ValueError`` naming the choices otherwise)."""
    if name not in LOSSES:
        raise ValueError(f"loss must be one of {sorted(LOSSES)}, got {name!r}")
    return LOSSES[name]
