"""The one unit system of a problem's internal numbers (:class:`Units`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from greedy._scaling import power_of_two

#: The largest ratio of the largest to the smallest positive sample weight a problem accepts.
MAX_WEIGHT_SPREAD = 2.0**1000


def power_of_two_scale(magnitude: float) -> float:
    """``2**-e`` with ``magnitude * 2**-e`` in ``[0.5, 1)``; 1 for a zero or non-finite magnitude.

    Multiplying by a power of two is exact in floating point (barring underflow), so scaled
    numbers scale back without rounding.
    """
    return 1.0 / float(power_of_two(magnitude if np.isfinite(magnitude) else 0.0))


def power_of_two_at_or_below(value: float) -> float:
    """The largest power of two ``<= value`` (``value > 0``)."""
    return float(np.ldexp(1.0, int(np.frexp(value)[1]) - 1))


@dataclass(frozen=True)
class Units:
    """How a problem's internal numbers relate to the user's.

    .. math::

        w' = w / u_w, \\qquad t' = (y - c)\\, s, \\qquad
        \\text{loss}_{\\text{user}} = \\text{loss}' \\cdot u_w / s^{q}

    with :math:`u_w` (``weight_unit``) the largest power of two at or below the smallest
    positive weight, :math:`c` (``target_centre``) the middle of the targets' range and
    :math:`s` (``target_scale``) the power of two that puts them in ``[-1, 1]``, :math:`q` the
    loss's exponent (:attr:`Loss.power`: 0 misclassification, 1 absolute, 2 squared).

    Weights at least 1 keep the solvers' absolute tolerances far below the lightest row
    (a tolerance tied to the mean weight would make a row 1e12 times lighter than a heavy
    one invisible); targets in ``[-1, 1]`` keep squared errors of targets near 1e-300 or
    1e300 representable. Both are powers of two: every conversion is exact.

    Attributes
    ----------
    weight_unit : float
    target_centre : float
        0 for classification.
    target_scale : float
        1 for classification.
    power : int
        The loss's exponent :math:`q`.
    """

    weight_unit: float
    target_centre: float = 0.0
    target_scale: float = 1.0
    power: int = 0

    @classmethod
    def of(cls, weight: np.ndarray, loss, targets: np.ndarray | None = None) -> "Units":
        """The units of a problem with positive ``weight`` and, for a regression ``loss``, finite ``targets``.

        Raises ``ValueError`` when the weights span more than :data:`MAX_WEIGHT_SPREAD`
        (their ratios would not be representable) or the targets' range is not a finite float64.
        """
        lightest, heaviest = float(weight.min()), float(weight.max())
        if heaviest > lightest * MAX_WEIGHT_SPREAD:
            raise ValueError(f"sample_weight spans {lightest:.3g} .. {heaviest:.3g}, more than 2**1000 from the "
                             "smallest positive weight to the largest: set weights that small to 0 or rescale them")
        weight_unit = power_of_two_at_or_below(lightest)
        if not loss.regression:
            return cls(weight_unit)
        lo, hi = float(targets.min()), float(targets.max())
        centre = 0.5 * lo + 0.5 * hi
        scale = power_of_two_scale(0.5 * hi - 0.5 * lo)
        if not np.isfinite(scale * (hi - centre)):
            raise ValueError(f"the range of y ({lo:g} .. {hi:g}) must be a finite float64; "
                             f"targets must lie within +-{np.finfo(np.float64).max / 2:.3g}")
        return cls(weight_unit, centre, scale, loss.power)

    @property
    def cost_unit(self) -> float:
        """User loss per internal loss, ``u_w / s**q`` (0 or ``inf`` when the user's units cannot hold it)."""
        with np.errstate(over="ignore", under="ignore", divide="ignore"):
            return float(self.weight_unit / np.float64(self.target_scale) ** self.power)

    def weights(self, weight: np.ndarray) -> np.ndarray:
        """Internal weights ``w / u_w``."""
        return weight / self.weight_unit

    def targets(self, y: np.ndarray) -> np.ndarray:
        """Internal targets ``(y - c) * s`` (regression)."""
        return (y - self.target_centre) * self.target_scale

    def user_targets(self, t: np.ndarray) -> np.ndarray:
        """User targets of internal ones, ``t / s + c``."""
        return t / self.target_scale + self.target_centre
