"""Input checking and the rank encoding every kernel works on (computed once per data set)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from greedy import FeatureBinner, midpoint_threshold
from greedy._hist import check_max_bins

from . import _kernels as K

#: Losses of the engine: name -> (kernel code, exponent of the target scale in a cost).
LOSSES = {"misclassification": (K.MISCLASSIFICATION, 0), "squared": (K.SQUARED, 2), "absolute": (K.ABSOLUTE, 1)}


def _power_of_two_below(value: float) -> float:
    return float(2.0 ** np.floor(np.log2(value)))


@dataclass(frozen=True, eq=False)
class ExactData:
    """A data set encoded for the exact engine (classification or regression).

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
        Class codes ``0..K-1`` (indices into ``classes``); zeros for regression.
    weight : ndarray (n,) float64
        Positive sample weights divided by the weight unit, a power of two near the
        smallest positive weight: the engine's fixed tolerance (1e-9) stays far below the
        lightest row's weight, whatever the magnitudes (a tolerance tied to the mean weight
        would make rows 1e12 times lighter than one heavy row invisible).
    scale : float
        User loss per engine cost unit, a power of two: the weight unit, divided for
        regression by ``target_scale`` (absolute) or its square (squared); multiplying
        results back by ``scale`` is exact.
    classes : ndarray (K,)
        Sorted distinct labels of the input (zero-weight rows included); empty for regression.
    loss : {"misclassification", "squared", "absolute"}
    loss_code : int
        The kernels' code of ``loss``.
    stats : ndarray (n, 4) float64
        Regression: per row ``w, w t, w t², t`` with ``t = (y - target_centre) * target_scale``
        in ``[-1, 1]`` (``target_scale`` a power of two); a dummy row for classification.
    target_centre, target_scale : float
        Regression only (0 and 1 for classification).
    weight_unit : float
        ``weight * weight_unit`` are the input weights.
    rank : ndarray (p, n) int32
    thresholds : list of ndarray
    view : ndarray (p, n) int32
        Row ``f`` lists the kept rows sorted by ``rank[f]`` (stable): the root sample set.
    kept : ndarray (n,) intp
        Indices of the kept rows in the input.
    max_bins : int or None
        None: every midpoint between consecutive distinct values is a threshold. An int: a
        feature with more distinct values than ``max_bins`` has only the edges of its quantile
        bins (``greedy.FeatureBinner``: midpoints too, equal values in one bin) as thresholds,
        and ``rank`` holds its bin codes.
    binned : ndarray (p,) bool
        The features whose thresholds ``max_bins`` restricts.
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
    loss: str = "misclassification"
    stats: np.ndarray | None = None
    target_centre: float = 0.0
    target_scale: float = 1.0
    weight_unit: float = 1.0
    max_bins: int | None = None
    binned: np.ndarray | None = None

    @property
    def loss_code(self) -> int:
        return LOSSES[self.loss][0]

    @property
    def is_regression(self) -> bool:
        return self.loss != "misclassification"

    @property
    def n_classes(self) -> int:
        return int(self.classes.shape[0])

    @property
    def width(self) -> int:
        """Columns of the kernels' per-side statistics: classes, or ``Σw, Σwt, Σwt²``."""
        return 3 if self.is_regression else self.n_classes

    def kernel_args(self) -> tuple:
        """``(y, weight, stats, loss_code, width)``: the target half of every kernel call."""
        return self.y, self.weight, self.stats, self.loss_code, self.width

    def targets(self, rows) -> np.ndarray:
        """Targets of kept ``rows`` in user units (regression) or class codes."""
        if not self.is_regression:
            return self.y[rows]
        return self.stats[rows, 3] / self.target_scale + self.target_centre

    def class_prefix(self, rows) -> np.ndarray:
        """Cumulative class weights along ``rows``: row ``t`` holds the weight per class of ``rows[:t + 1]``."""
        cum = np.zeros((rows.size, self.n_classes))
        cum[np.arange(rows.size), self.y[rows]] = self.weight[rows]
        return np.cumsum(cum, axis=0, out=cum)

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


def prepare(X, y, sample_weight=None, *, loss="misclassification", max_bins=None) -> ExactData:
    """Check ``X, y, sample_weight`` and encode them for the engine (one argsort per feature).

    ``loss`` is ``"misclassification"`` (``y`` holds labels), ``"squared"`` or ``"absolute"``
    (``y`` holds finite real targets). ``max_bins`` (an integer >= 2, scikit-learn's name)
    restricts the thresholds of features with more distinct values to the edges of that many
    quantile bins (:attr:`ExactData.max_bins`). Raises ``ValueError`` for non-2-D or
    non-finite ``X``, non-finite regression targets, mismatched lengths, negative, non-finite
    or all-zero weights, and a ``max_bins`` that is not an integer >= 2.
    """
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {sorted(LOSSES)}, got {loss!r}")
    if max_bins is not None:
        try:
            max_bins = check_max_bins(max_bins)
        except TypeError as error:  # a value of the wrong kind is a bad value, as one out of range
            raise ValueError(str(error)) from None
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
    kept = np.flatnonzero(w > 0)
    if w[kept].max() * 2.0**-1000 > w[kept].min():  # weights in units of the smallest would overflow
        raise ValueError(f"sample_weight spans {w[kept].min():.3g} .. {w[kept].max():.3g}, more than 2**1000 from the "
                         "smallest positive weight to the largest: set weights that small to 0 or rescale them")
    weight_unit = _power_of_two_below(w[kept].min())
    wk = np.ascontiguousarray(w[kept] / weight_unit)
    regression = loss != "misclassification"
    if regression:
        y = np.asarray(y, dtype=np.float64)
        if not np.isfinite(y).all():
            raise ValueError("y contains NaN or infinite values; regression targets must be finite")
        yk = y[kept]
        lo, hi = float(yk.min()), float(yk.max())
        centre = 0.5 * lo + 0.5 * hi
        half_range = 0.5 * hi - 0.5 * lo
        target_scale = 1.0 if half_range == 0 else float(np.ldexp(1.0, -int(np.frexp(half_range)[1])))
        t = (yk - centre) * target_scale
        stats = np.ascontiguousarray(np.c_[wk, wk * t, wk * t * t, t])
        classes, codes = np.zeros(0), np.zeros(n, np.int32)
        scale = weight_unit / target_scale ** LOSSES[loss][1]
    else:
        classes, codes = np.unique(y, return_inverse=True)
        stats, centre, target_scale, scale = np.zeros((1, 4)), 0.0, 1.0, weight_unit
    Xk = np.ascontiguousarray(X[kept])
    # one stable sort of every column: the view (rows by rank, ties in row order), the dense ranks
    # (np.unique's inverse) and the distinct values, without a sort per feature
    order = np.argsort(Xk.T, axis=1, kind="stable")
    ordered = np.take_along_axis(Xk.T, order, axis=1)
    first = np.ones(ordered.shape, bool)  # the first of each run of equal values
    np.not_equal(ordered[:, 1:], ordered[:, :-1], out=first[:, 1:])
    rank = np.empty((p, kept.size), np.int32)
    np.put_along_axis(rank, order, np.cumsum(first, axis=1, dtype=np.int32) - 1, axis=1)
    values = ordered[first]  # each feature's distinct values in turn
    ends = np.cumsum(np.count_nonzero(first, axis=1))
    mids = midpoint_threshold(values[:-1], values[1:])  # and between the features, dropped here
    thresholds = [mids[start:end - 1] for start, end in zip(np.r_[0, ends[:-1]].tolist(), ends.tolist())]
    view = order.astype(np.int32)
    binned = np.array([max_bins is not None and len(t) >= max_bins for t in thresholds], dtype=bool)
    if binned.any():  # bin codes are a monotone map of the ranks: the view stays sorted
        binner = FeatureBinner(max_bins).fit(Xk[:, binned])
        for f, edges in zip(np.flatnonzero(binned), binner.bin_edges_):
            rank[f] = np.searchsorted(edges, Xk[:, f], side="left")
            thresholds[f] = edges
    return ExactData(Xk, np.ascontiguousarray(codes[kept].astype(np.int32)), wk, scale, classes, rank, thresholds,
                     view, kept, loss, stats, centre, target_scale, weight_unit,
                     max_bins, binned)
