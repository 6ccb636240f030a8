"""The training rows every solver takes, checked once (:func:`check_rows`)."""

from __future__ import annotations

import numpy as np


def check_rows(X, y, sample_weight, *, solver: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(X, y, weight)``: finite float64 features ``(n, p)``, ``n`` targets, finite non-negative weights.

    ``y`` is only checked for its length (its encoding is the task's); ``sample_weight`` None
    means unit weights. ``solver`` names who needs finite features in the message. Raises
    ``ValueError`` for an empty or non-2-D ``X``, NaN or infinite features, a length mismatch,
    and negative, non-finite or all-zero weights.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X must be a non-empty 2-D array, got shape {X.shape}")
    if not np.isfinite(X).all():
        raise ValueError(f"X contains NaN or infinite values; finite features are needed by {solver}")
    n = X.shape[0]
    y = np.asarray(y)
    if y.shape != (n,):
        raise ValueError(f"y must be 1-D with {n} entries (one per row of X), got shape {y.shape}")
    if sample_weight is None:
        return X, y, np.ones(n)
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"sample_weight must have shape ({n},), got {w.shape}")
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError("sample_weight must be finite and non-negative")
    if not (w > 0).any():
        raise ValueError("sample_weight has no positive entry")
    return X, y, w
