"""Input checking and the rank encoding every kernel works on (computed once per data set)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from greedy import FeatureBinner, midpoint_threshold

from ..problem import Problem, Units, check_rows, checked_max_bins, encode_targets, get_loss
from ._core import rank_columns


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
        Positive sample weights in the problem's units (:class:`optitree.problem.Units`).
    units : optitree.problem.Units
        The problem's one unit system (the formulations share it): the engine computes on
        internal weights and targets, its costs are internal losses.
    scale : float
        The factor from internal costs to the costs the engine reports (objective, bound,
        trace, split bounds): ``units.cost_unit`` (the user's units) or 1 (the problem's).
    classes : ndarray (K,)
        Sorted distinct labels of the input (zero-weight rows included); empty for regression.
    loss : {"misclassification", "squared", "absolute"}
    loss_code : int
        The kernels' code of ``loss``.
    stats : ndarray (n, 4) float64
        Regression: per row ``w, w t, w t², t`` with ``t`` the target in the problem's units
        (in ``[-1, 1]``); a dummy row for classification.
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
    problem : optitree.problem.Problem or None
        The problem whose rows these are, when prepared from one.
    """

    X: np.ndarray
    y: np.ndarray
    weight: np.ndarray
    units: Units
    scale: float
    classes: np.ndarray
    rank: np.ndarray
    thresholds: list
    view: np.ndarray
    kept: np.ndarray
    loss: str = "misclassification"
    stats: np.ndarray | None = None
    max_bins: int | None = None
    binned: np.ndarray | None = None
    problem: Problem | None = None

    @property
    def loss_code(self) -> int:
        return get_loss(self.loss).engine_code

    @property
    def weight_unit(self) -> float:
        """User weight per engine weight."""
        return self.units.weight_unit

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
        return self.units.user_targets(self.stats[rows, 3])

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


def prepare(X, y=None, sample_weight=None, *, loss="misclassification", max_bins=None, report="user",
            units=None) -> ExactData:
    """Check ``X, y, sample_weight`` and encode them for the engine (one argsort per feature).

    ``X`` may be an :class:`optitree.problem.Problem` instead: its rows, loss, units and
    ``max_bins`` are encoded (already checked; pass none of ``y``, ``sample_weight``, ``loss``,
    ``max_bins`` and ``units`` with it). Otherwise ``loss`` is ``"misclassification"`` (``y``
    holds labels), ``"squared"`` or ``"absolute"`` (``y`` holds finite real targets) and
    ``max_bins`` (an integer >= 2, scikit-learn's name) restricts the thresholds of features
    with more distinct values to the edges of that many quantile bins (:attr:`ExactData.max_bins`).
    ``report``: the units of every cost the engine reports, ``"user"`` (the data's: weighted
    errors, squared or absolute error of ``y``) or ``"problem"`` (:class:`optitree.problem.Units`'
    internal ones, shared with the formulations, finite whatever the magnitudes).
    ``units``: the problem's units when already fixed for the same rows, else :meth:`Units.of`
    these rows. Raises ``ValueError`` for non-2-D or non-finite ``X``, non-finite regression
    targets, mismatched lengths, negative, non-finite or all-zero weights, and a ``max_bins``
    that is not an integer >= 2.
    """
    if report not in ("user", "problem"):
        raise ValueError(f"report must be 'user' or 'problem', got {report!r}")
    if isinstance(X, Problem):
        given = {"y": y, "sample_weight": sample_weight, "max_bins": max_bins, "units": units}
        extra = [name for name, value in given.items() if value is not None]
        if extra or loss not in ("misclassification", X.loss.name):
            raise ValueError(f"a Problem states its rows, loss, units and max_bins; do not pass "
                             f"{', '.join(extra) or 'loss'} with it")
        problem = X
        X, y, w, policy, units, max_bins = problem.X, problem.y, problem.weight, problem.loss, problem.units, \
            problem.max_bins
        kept = np.flatnonzero(w > 0)
    else:
        problem = None
        policy = get_loss(loss)
        max_bins = checked_max_bins(max_bins)
        X, y, w = check_rows(X, y, sample_weight, solver="the exact engine")
        kept = np.flatnonzero(w > 0)
        if policy.regression:
            y, _ = encode_targets(y, policy)
        if units is None:
            units = Units.of(w[kept], policy, y[kept] if policy.regression else None)
    n = X.shape[0]
    wk = np.ascontiguousarray(units.weights(w[kept]))
    if policy.regression:
        t = units.targets(y[kept])
        stats = np.ascontiguousarray(np.c_[wk, wk * t, wk * t * t, t])
        classes, codes = np.zeros(0), np.zeros(n, np.int32)
    elif problem is not None and y.size and np.bincount(y).all():  # the problem's codes 0..K-1, each present
        classes, codes = np.arange(int(y.max()) + 1), y
        stats = np.zeros((1, 4))
    else:
        classes, codes = np.unique(y, return_inverse=True)
        stats = np.zeros((1, 4))
    Xk = np.ascontiguousarray(X[kept])
    # each column's stable sort: the view (rows by rank, ties in row order), the dense ranks, the distinct values
    view, rank, values, distinct = rank_columns(Xk)
    ends = np.cumsum(distinct).tolist()
    mids = midpoint_threshold(values[:-1], values[1:])  # and between the features, dropped here
    thresholds = [mids[start:end - 1] for start, end in zip([0] + ends[:-1], ends)]
    binned = np.array([max_bins is not None and len(t) >= max_bins for t in thresholds], dtype=bool)
    if binned.any():  # bin codes are a monotone map of the ranks: the view stays sorted
        binner = FeatureBinner(max_bins).fit(Xk[:, binned])
        for f, edges in zip(np.flatnonzero(binned), binner.bin_edges_):
            rank[f] = np.searchsorted(edges, Xk[:, f], side="left")
            thresholds[f] = edges
    return ExactData(Xk, np.ascontiguousarray(codes[kept].astype(np.int32)), wk, units,
                     units.cost_unit if report == "user" else 1.0, classes, rank, thresholds,
                     view, kept, policy.name, stats, max_bins, binned, problem)
