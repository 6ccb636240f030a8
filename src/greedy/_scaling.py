"""Extreme magnitudes: exact power-of-two scaling, float32 eligibility, supported target range.

Dividing by a power of two ``2**e`` only changes a float's exponent, so it is exact (barring
subnormal results) and commutes with rounding: sums, products and midpoints computed on scaled
numbers, multiplied back, are the ones computed on the originals. Greedy CART uses it where
magnitudes would overflow or underflow:

* regression targets (:func:`target_scale`): the criteria work on ``y / 2**e`` and return
  values and impurities in y's units; targets whose errors cannot be stored in y's units are
  refused (:func:`check_target_range`);
* features that float32 cannot hold (:func:`feature_dtype`): kept in float64 and searched on
  power-of-two scaled columns (:func:`column_scales`), thresholds multiplied back;
* sample weights far from 1 (:func:`extreme_scale`): the tree is grown on ``w / 2**e`` and node
  weights are multiplied back; linear leaves are fitted on scaled features and targets.
"""

from __future__ import annotations

import numpy as np

FLOAT32 = np.finfo(np.float32)
#: magnitudes used as given by :func:`extreme_scale` (sample weights, linear-leaf fits)
SAFE_RANGE = (2.0**-64, 2.0**64)


def power_of_two(top):
    """``2**e`` with ``top / 2**e`` in ``[0.5, 1)`` (elementwise; 1 where ``top`` is 0), and at
    most ``2**1023`` (the largest finite power of two: then the ratio lies in ``[1, 2)``)."""
    top = np.asarray(top, dtype=np.float64)
    return np.where(top > 0, np.ldexp(1.0, np.minimum(np.frexp(top)[1], 1023)), 1.0)


def target_scale(y: np.ndarray) -> float:
    """The power of two of ``max |y|``: criteria compute on ``y / scale``."""
    return float(power_of_two(np.max(np.abs(y), initial=0.0)))


def column_scales(X: np.ndarray) -> np.ndarray:
    """Per column, the power of two of its largest finite ``|x|`` (NaN ignored)."""
    finite = np.where(np.isfinite(X), np.abs(X), 0.0)
    return power_of_two(finite.max(axis=0, initial=0.0))


def extreme_scale(values: np.ndarray) -> float:
    """1 if the largest ``|value|`` lies in :data:`SAFE_RANGE` (or is 0), else its power of two:
    squares and products of the scaled values neither overflow nor underflow."""
    top = float(np.max(np.abs(values), initial=0.0))
    if top == 0.0 or SAFE_RANGE[0] <= top <= SAFE_RANGE[1]:
        return 1.0
    return float(power_of_two(top))


def feature_dtype(X: np.ndarray) -> type:
    """float32 (scikit-learn's tree dtype) if every non-zero finite ``|x|`` lies in float32's
    normal range ``[1.2e-38, 3.4e38]``, else float64 (no value lost or turned infinite)."""
    magnitude = np.abs(X[np.isfinite(X) & (X != 0)])
    if magnitude.size and (magnitude.min() < FLOAT32.tiny or magnitude.max() > FLOAT32.max):
        return np.float64
    return np.float32


def check_target_range(y: np.ndarray, sample_weight: np.ndarray, criterion: str, power: int) -> None:
    """Refuse targets whose total error ``Σ w |y - c|^power`` would overflow in y's units.

    Node impurities are stored in y's units and weighted by node weights (feature importances,
    pruning): ``W (2 max|y|)^power`` must stay finite, ``W = Σ w``.
    """
    total = max(float(np.sum(sample_weight)), 1.0)
    limit = 0.5 * (np.finfo(np.float64).max / total) ** (1.0 / power)
    top = float(np.max(np.abs(y), initial=0.0))
    if top >= limit:
        raise ValueError(
            f"criterion={criterion!r} supports regression targets with |y| < {limit:.3g} for this total sample "
            f"weight ({total:.3g}): the node errors in y's units must stay finite; got max |y| = {top:.3g}. "
            "Rescale y (e.g. divide it by a power of ten) and scale the predictions back."
        )
