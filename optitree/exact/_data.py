"""Input checking and the rank encoding every kernel works on (computed once per data set)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from greedy import midpoint_threshold


@dataclass(frozen=True, eq=False)
class ExactData:
    """A classification data set encoded for the exact engine.

    Rows with zero weight are dropped (they change no cost and no leaf size). For kept row
    ``i`` and feature ``f``, ``rank[f, i]`` is the index of ``X[i, f]`` among the feature's
    sorted distinct values, and ``thresholds[f][r]`` is the split value between distinct
    values ``r`` and ``r + 1`` (``greedy.midpoint_threshold``, as CART), so the split
    ``x[f] <= thresholds[f][r]`` is ``rank[f, i] <= r``.

    Attributes
    ----------
    X : ndarray (n, p)
        Kept rows, float64.
    y : ndarray (n,) int32
        Class codes ``0..K-1`` (indices into ``classes``).
    weight : ndarray (n,) float64
        Positive sample weights divided by ``scale``.
    scale : float
        A power of two near the smallest positive weight: the engine works in units of
        ``scale`` so that its fixed tolerance (1e-9) stays far below the lightest row's
        weight, whatever the magnitudes (a tolerance tied to the mean weight would make
        rows 1e12 times lighter than one heavy row invisible), and multiplying results
        back by ``scale`` is exact.
    classes : ndarray (K,)
        Sorted distinct labels of the input (zero-weight rows included).
    rank : ndarray (p, n) int32
    thresholds : list of ndarray
    view : ndarray (p, n) int32
        Row ``f`` lists the kept rows sorted by ``rank[f]`` (stable): the root sample set.
    kept : ndarray (n,) intp
        Indices of the kept rows in the input.
    """

    X: np.ndarray
    y: np.ndarray
    weight: np.ndarray
    scale: float
    classes: np.ndarray
    rank: np.ndarray
    thresholds: list
    view: np.ndarray
    kept: np.ndarray

    @property
    def n_classes(self) -> int:
        return int(self.classes.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    def subset_view(self, samples) -> np.ndarray:
        """View of a subset of kept rows (an index array or a boolean mask over kept rows)."""
        samples = np.asarray(samples)
        mask = np.zeros(self.n_samples, bool)
        if samples.dtype == bool:
            if samples.shape != (self.n_samples,):
                raise ValueError(f"a boolean sample mask must have shape ({self.n_samples},), got {samples.shape}")
            mask = samples
        else:
            if samples.size and (samples.min() < 0 or samples.max() >= self.n_samples):
                raise ValueError(f"sample indices must lie in [0, {self.n_samples})")
            mask[samples.astype(np.intp)] = True
        if not mask.any():
            raise ValueError("the sample subset is empty")
        return np.ascontiguousarray(np.stack([row[mask[row]] for row in self.view]))


def prepare(X, y, sample_weight=None) -> ExactData:
    """Check ``X, y, sample_weight`` and encode them for the engine (one argsort per feature).

    Raises ``ValueError`` for non-2-D or non-finite ``X``, mismatched lengths, and negative,
    non-finite or all-zero weights.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}")
    n, p = X.shape
    if n == 0 or p == 0:
        raise ValueError(f"X must have at least one row and one column, got shape {X.shape}")
    if not np.isfinite(X).all():
        raise ValueError("X contains NaN or infinite values; the exact engine needs finite features")
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"y must be 1-D with {n} entries (one per row of X), got shape {y.shape}")
    if sample_weight is None:
        w = np.ones(n)
    else:
        w = np.asarray(sample_weight, dtype=np.float64)
        if w.shape != (n,):
            raise ValueError(f"sample_weight must have shape ({n},), got {w.shape}")
        if not np.isfinite(w).all() or (w < 0).any():
            raise ValueError("sample_weight must be finite and non-negative")
        if not (w > 0).any():
            raise ValueError("sample_weight has no positive entry")
    classes, codes = np.unique(y, return_inverse=True)
    kept = np.flatnonzero(w > 0)
    Xk = np.ascontiguousarray(X[kept])
    rank = np.empty((p, kept.size), np.int32)
    thresholds = []
    for f in range(p):
        values, inverse = np.unique(Xk[:, f], return_inverse=True)
        rank[f] = inverse
        thresholds.append(midpoint_threshold(values[:-1], values[1:]))
    view = np.argsort(rank, axis=1, kind="stable").astype(np.int32)
    scale = float(2.0 ** np.floor(np.log2(w[kept].min())))
    return ExactData(Xk, codes[kept].astype(np.int32), np.ascontiguousarray(w[kept] / scale), scale, classes, rank,
                     thresholds, view, kept)
