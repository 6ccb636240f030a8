"""Split criteria for greedy CART: one registry, every criterion vectorised over candidates.

A criterion scores a node by an impurity ``imp`` (per unit weight) and a candidate split by
its *gain*

.. math::

    G = P(L) + P(R) - P(K), \\qquad P(A) = -w_A\\,\\mathrm{imp}(A) + \\langle \\lambda, s_A \\rangle,

where ``K = L ∪ R`` is the set of node samples whose split value is known (the whole node
when nothing is missing), ``s_A`` are the additive statistics of ``A`` (weighted counts, sums)
and ``λ`` any fixed vector: linear terms cancel in ``G`` because ``s_L + s_R = s_K``, so a
criterion may drop them (the Gini score is ``Σ_k c_k² / w`` instead of ``w - Σ_k c_k² / w``).
``G = w_K imp(K) - w_L imp(L) - w_R imp(R) ≥ 0`` is the weighted impurity decrease on the
known samples; dividing by the node weight gives C4.5's gain ``(w_K / w)(imp(K) - ...)``.

Every criterion sees *many* candidate splits at once through a
:class:`~greedy._splitter.CandidateScan` (the candidates of all nodes of a level and a block
of features) and returns their gains as one array. Additive criteria (Gini, entropy,
misclassification, squared error) obtain the children's statistics from prefix sums along the
per-node sorted order; absolute error uses range weighted-median queries on a wavelet matrix.
The histogram search (:mod:`greedy._hist`) uses the same additive criteria through
:meth:`AdditiveCriterion.histogram` (statistics summed per (node, bin)) and
:meth:`AdditiveCriterion.score`.

New criteria: subclass :class:`Criterion` (or :class:`AdditiveCriterion`) and decorate with
:func:`register_criterion`; they then become valid ``criterion=`` values of the estimators
(an additive one with ``splitter="hist"`` too).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ._scaling import check_target_range, extreme_scale, target_scale

TASKS = ("classification", "regression")
EPSILON = np.finfo(np.float64).eps
_LN2 = np.log(2.0)

_REGISTRY: dict[str, type["Criterion"]] = {}
# Live name sets: the estimators' ``_parameter_constraints`` hold these very set objects, so a
# criterion registered after ``greedy`` was imported is accepted too.
_NAMES: dict[str, set[str]] = {task: set() for task in TASKS}


def register_criterion(cls: type["Criterion"]) -> type["Criterion"]:
    """Class decorator: make ``cls`` available as ``criterion=cls.name`` for ``cls.task``."""
    if cls.task not in TASKS:
        raise ValueError(f"criterion task must be one of {TASKS}, got {cls.task!r}")
    if not cls.name or not isinstance(cls.name, str):
        raise ValueError("a criterion needs a non-empty string name")
    other = _REGISTRY.get(cls.name)
    if other is not None and other is not cls:
        raise ValueError(f"a criterion named {cls.name!r} is already registered ({other.__qualname__})")
    _REGISTRY[cls.name] = cls
    _NAMES[cls.task].add(cls.name)
    return cls


def criterion_names(task: str) -> set[str]:
    """The live set of registered criterion names for ``task``."""
    return _NAMES[task]


def criterion_class(name: str) -> type["Criterion"]:
    """The registered criterion class called ``name``."""
    return _REGISTRY[name]


def make_criterion(name: str, task: str, y, sample_weight, n_classes: int | None = None, X=None) -> "Criterion":
    """Instantiate the registered criterion ``name`` on encoded targets.

    ``y`` holds class codes ``0..n_classes-1`` (classification) or float targets (regression);
    ``sample_weight`` is a float array of positive weights; ``X`` the training features.
    """
    cls = _REGISTRY.get(name)
    if cls is None or cls.task != task:
        raise ValueError(f"unknown {task} criterion {name!r}; registered: {sorted(_NAMES[task])}")
    return cls(y, sample_weight, n_classes, X)


@dataclass
class NodeStatistics:
    """Per-node training statistics of a group of nodes (rows align with node ids)."""

    value: np.ndarray  # (n_nodes, n_values): weighted class counts, or the regression prediction
    impurity: np.ndarray  # (n_nodes,)
    weighted_n: np.ndarray  # (n_nodes,)
    count: np.ndarray  # (n_nodes,) number of (sample, node) entries


class Criterion:
    """Base class of split criteria.

    Subclasses set ``name`` and ``task`` and implement :meth:`node_statistics` (value and
    impurity of many nodes at once) and :meth:`candidate_gain` (gain of every split position
    of a :class:`~greedy._splitter.CandidateScan`, see the module docstring). Samples enter
    as *entries* ``(sample, weight)``: a sample with a missing split value reaches both
    children, as two entries with fractional weights.

    Parameters
    ----------
    y : ndarray of shape (n_samples,)
        Class codes (classification) or targets (regression).
    sample_weight : ndarray of shape (n_samples,)
        Positive sample weights.
    n_classes : int or None
        Number of classes (classification only).
    X : ndarray of shape (n_samples, n_features) or None
        Training features, for criteria whose impurity depends on them.
    """

    name: ClassVar[str] = ""
    task: ClassVar[str] = ""
    #: usable by the histogram search (``splitter="hist"``): additive criteria only
    histogram_search: ClassVar[bool] = False
    #: a node whose impurity is at most this is a leaf (scikit-learn: the float64 epsilon)
    pure_impurity: float = EPSILON

    def __init__(self, y, sample_weight, n_classes: int | None = None, X=None):
        self.y = np.asarray(y)
        sample_weight = np.asarray(sample_weight, dtype=np.float64)
        self.sample_weight = sample_weight / extreme_scale(sample_weight)  # weighted means cannot overflow
        self.n_classes = n_classes
        self.X = X

    @property
    def n_values(self) -> int:
        """Width of ``Tree.value``: the number of classes, or 1 for regression."""
        return int(self.n_classes) if self.task == "classification" else 1

    def node_statistics(self, node, entry_sample, entry_weight, n_nodes: int) -> NodeStatistics:
        """Statistics of ``n_nodes`` nodes; entry ``e`` belongs to node ``node[e]``."""
        raise NotImplementedError

    def candidate_gain(self, scan) -> np.ndarray:
        """Gain ``P(L) + P(R) - P(K)`` at every position of ``scan``, shape ``scan.shape``.

        Only positions where ``scan.valid`` is True are used (larger is better).
        """
        raise NotImplementedError

    def category_key(self, sums_value: np.ndarray, node_value: np.ndarray) -> np.ndarray:
        """Sort key of categories inside a node for categorical splits.

        ``sums_value`` (n_pairs, n_values) holds the value of each (node, category) pair as
        :meth:`node_statistics` would compute it, ``node_value`` the value of the pair's
        node. Classification: the proportion of the node's most frequent class; regression:
        the category's prediction (mean target).
        """
        if self.task == "classification":
            k = np.argmax(node_value, axis=1)
            total = sums_value.sum(axis=1)
            return sums_value[np.arange(len(k)), k] / np.where(total > 0, total, 1.0)
        return sums_value[:, 0]


class AdditiveCriterion(Criterion):
    """A criterion whose node impurity is a function of additive per-entry statistics.

    Subclasses implement :meth:`columns` (the statistics, weight first),
    :meth:`impurity_from_sums`, :meth:`value_from_sums` and, optionally, a cheaper
    :meth:`score` than the default ``-w * impurity``. The children's statistics of every
    split position come from prefix sums along each node's sorted order, so a position costs
    ``O(d)`` for ``d`` statistics.
    """

    histogram_search = True
    #: how many leading statistics :meth:`score` reads (None: all); split searches sum only those
    score_columns: ClassVar[int | None] = None

    def columns(self, sample: np.ndarray, weight: np.ndarray | None) -> list:
        """Per-entry statistics for entries of samples ``sample`` (any shape) and weights.

        ``weight`` None means unit weights. Element 0 must be ``weight`` itself (None
        allowed); boolean or integer arrays are summed exactly.
        """
        raise NotImplementedError

    def impurity_from_sums(self, sums: list) -> np.ndarray:
        raise NotImplementedError

    def value_from_sums(self, sums: list) -> np.ndarray:
        raise NotImplementedError

    def score(self, sums: list) -> np.ndarray:
        """``P`` of groups whose statistics sum to ``sums``: ``-w imp`` up to linear terms."""
        return -sums[0] * self.impurity_from_sums(sums)

    def histogram_columns(self, sample, weight):
        """Per-entry data of :meth:`histogram` for entries of ``sample`` with ``weight`` (None: unit
        weights), computed once and binned for every feature: the first ``score_columns`` statistics."""
        return self.columns(sample, weight)[: self.score_columns]

    def histogram(self, cell, columns, n_cells: int) -> list:
        """Statistics summed per cell (entry ``e`` in ``cell[e]``): float arrays (n_cells,), weight first.

        ``columns`` comes from :meth:`histogram_columns`.
        """
        return [np.bincount(cell, weights=c, minlength=n_cells).astype(np.float64, copy=False) for c in columns]

    def node_statistics(self, node, entry_sample, entry_weight, n_nodes: int) -> NodeStatistics:
        cols = self.columns(entry_sample, entry_weight)
        sums = [np.bincount(node, weights=entry_weight if c is None else c, minlength=n_nodes).astype(np.float64)
                for c in cols]
        return NodeStatistics(
            value=self.value_from_sums(sums),
            impurity=self.impurity_from_sums(sums),
            weighted_n=sums[0],
            count=np.bincount(node, minlength=n_nodes),
        )

    def candidate_gain(self, scan) -> np.ndarray:
        lefts, rights, knowns = [], [], []
        for col in self.columns(scan.samples, scan.weights)[: self.score_columns]:
            left, known = scan.left_and_known(col)
            lefts.append(left)
            rights.append(scan.expand(known) - left)
            knowns.append(known)
        return self.score(lefts) + self.score(rights) - scan.expand(self.score(knowns))


class _ClassCounts(AdditiveCriterion):
    """Statistics ``[w, c_0, ..., c_{K-2}]``: the weight and the weighted counts of all classes
    but the last (``c_{K-1} = w - Σ c_k``)."""

    task = "classification"

    def columns(self, sample, weight):
        y = self.y[sample]
        k = int(self.n_classes)
        if weight is None:
            return [None] + [y == c for c in range(k - 1)]
        return [weight] + [np.where(y == c, weight, 0.0) for c in range(k - 1)]

    def histogram_columns(self, sample, weight):
        return self.y[sample], weight

    def histogram(self, cell, columns, n_cells: int) -> list:
        """As :meth:`AdditiveCriterion.histogram`, with one ``bincount`` over (cell, class)."""
        k = int(self.n_classes)
        y, weight = columns
        counts = np.bincount(cell * k + y, weights=weight, minlength=n_cells * k)
        counts = counts.reshape(n_cells, k).astype(np.float64, copy=False)
        return [counts.sum(axis=1)] + [counts[:, c] for c in range(k - 1)]

    @staticmethod
    def _counts(sums):
        """``(w, [c_0, ..., c_{K-1}])`` from ``[w, c_0, ..., c_{K-2}]``."""
        w, counts = sums[0], list(sums[1:])
        last = w
        for c in counts:
            last = last - c
        return w, counts + [last]

    def node_statistics(self, node, entry_sample, entry_weight, n_nodes: int) -> NodeStatistics:
        k = int(self.n_classes)
        counts = np.bincount(node * k + self.y[entry_sample], weights=entry_weight, minlength=n_nodes * k)
        counts = counts.reshape(n_nodes, k).astype(np.float64, copy=False)  # bincount of nothing is int
        w = counts.sum(axis=1)
        return NodeStatistics(counts, self.impurity_from_sums([w] + [counts[:, c] for c in range(k - 1)]), w,
                              np.bincount(node, minlength=n_nodes))


@register_criterion
class Gini(_ClassCounts):
    """Gini index ``1 - Σ_k p_k²``; score ``P = Σ_k c_k² / w``."""

    name = "gini"

    def impurity_from_sums(self, sums):
        return 1.0 - self.score(sums) / sums[0]

    def score(self, sums):
        w, counts = self._counts(sums)
        total = counts[0] * counts[0]
        for c in counts[1:]:
            total += c * c
        total /= w
        return total


def _xlog2x(c: np.ndarray) -> np.ndarray:
    """``c log2 c`` with ``0 log 0 = 0``."""
    c = np.asarray(c, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = c * (np.log(c) / _LN2)
    out[c <= 0] = 0.0
    return out


@register_criterion
class Entropy(_ClassCounts):
    """Shannon entropy in bits, ``-Σ_k p_k log2 p_k`` (scikit-learn's ``entropy``/``log_loss``).

    Score ``P = Σ_k c_k log2 c_k - w log2 w`` (exactly ``-w * entropy``).
    """

    name = "entropy"

    def impurity_from_sums(self, sums):
        w, counts = self._counts(sums)
        return -sum(_xlog2x(c / w) for c in counts)

    def score(self, sums):
        w, counts = self._counts(sums)
        return sum(_xlog2x(c) for c in counts) - _xlog2x(w)


@register_criterion
class Misclassification(_ClassCounts):
    """Misclassification rate ``1 - max_k p_k``; score ``P = max_k c_k``."""

    name = "misclassification"
    histogram_search = False  # not offered with splitter="hist"

    def impurity_from_sums(self, sums):
        w, counts = self._counts(sums)
        return 1.0 - np.maximum.reduce(counts) / w

    def score(self, sums):
        return np.maximum.reduce(self._counts(sums)[1])


@register_criterion
class SquaredError(AdditiveCriterion):
    """Weighted variance ``Σ w (y - ȳ)² / Σ w``; leaves predict the weighted mean.

    Statistics ``[w, w y', w y'²]`` of targets scaled by a power of two and centred at the
    overall weighted mean (``y' = y / 2^e - ȳ_root``, :func:`target_scale`: no overflow, less
    cancellation, same splits); score ``P = s_1² / w``. Values and impurities are returned in
    y's units; targets whose squared errors overflow there are refused
    (:func:`check_target_range`).
    """

    name = "squared_error"
    task = "regression"
    score_columns = 2  # w, w y'

    def __init__(self, y, sample_weight, n_classes=None, X=None):
        super().__init__(np.asarray(y, dtype=np.float64), sample_weight, n_classes, X)
        check_target_range(self.y, sample_weight, self.name, 2)
        self.scale = target_scale(self.y)
        scaled = self.y / self.scale
        self.offset = float(np.average(scaled, weights=self.sample_weight))
        self.centred = scaled - self.offset
        self.pure_impurity = EPSILON * min(1.0, self.scale) ** 2  # relative below |y| ~ 1

    def columns(self, sample, weight):
        yc = self.centred[sample]
        wy = yc if weight is None else weight * yc
        return [weight, wy, wy * yc]

    def impurity_from_sums(self, sums):
        w = np.asarray(sums[0], dtype=np.float64)
        mean = sums[1] / w
        return np.maximum(sums[2] / w - mean * mean, 0.0) * (self.scale * self.scale)

    def value_from_sums(self, sums):
        return ((sums[1] / sums[0] + self.offset) * self.scale)[:, None]

    def score(self, sums):
        return sums[1] * sums[1] / sums[0]


@register_criterion
class AbsoluteError(Criterion):
    """Mean absolute deviation from the weighted median; leaves predict the weighted median.

    The weighted median of a set is the smallest target whose cumulative weight exceeds half
    the total; when the cumulative weight of a target equals half exactly, the median is the
    midpoint of it and the next target (scikit-learn's convention). The absolute error
    ``AE = Σ w |y - m|`` does not depend on that choice.

    Candidate gains ``AE(K) - AE(L) - AE(R)`` need the weighted median of every prefix and
    suffix of every node's sorted order. They are answered by weighted range-quantile
    queries on a *wavelet matrix* built over the targets' ranks in each sorted row: for a
    block of ``F_b`` features and ``m`` entries, building costs ``O(F_b m log U)`` and the
    queries ``O(n_candidates log U)`` (``U`` distinct targets), all vectorised with numpy.
    Computed on targets scaled by a power of two (:func:`target_scale`), returned in y's units.
    """

    name = "absolute_error"
    task = "regression"

    def __init__(self, y, sample_weight, n_classes=None, X=None):
        y = np.asarray(y, dtype=np.float64)
        check_target_range(y, sample_weight, self.name, 1)
        self.scale = target_scale(y)  # computed on y / 2^e (exact): weighted sums cannot overflow
        super().__init__(y / self.scale, sample_weight, n_classes, X)
        self.pure_impurity = EPSILON * min(1.0, self.scale)
        self.levels, self.rank = np.unique(self.y, return_inverse=True)
        self.n_bits = max(1, int(np.ceil(np.log2(max(self.levels.size, 2)))))

    def node_statistics(self, node, entry_sample, entry_weight, n_nodes: int) -> NodeStatistics:
        y = self.y[entry_sample]
        order = np.lexsort((y, node))
        node_s, y_s, w_s = node[order], y[order], entry_weight[order]
        count = np.bincount(node, minlength=n_nodes)
        total = np.bincount(node, weights=entry_weight, minlength=n_nodes).astype(np.float64)
        start = np.concatenate([[0], np.cumsum(count)[:-1]])
        cum = np.cumsum(w_s)
        before = np.concatenate([[0.0], cum])[start]  # weight of earlier nodes
        local = cum - before[node_s]  # cumulative weight within the node, inclusive
        half = 0.5 * total[node_s]
        over = local > half
        # first entry of each node whose inclusive cumulative weight exceeds half the total
        first = np.flatnonzero(over & np.concatenate([[True], (~over[:-1]) | (node_s[1:] != node_s[:-1])]))
        med_node = node_s[first]
        median = np.zeros(n_nodes)
        median[med_node] = y_s[first]
        has_prev = first > start[med_node]
        prev_cum = np.where(has_prev, local[np.maximum(first - 1, 0)], 0.0)
        exact = has_prev & (prev_cum == half[first])
        median[med_node[exact]] = 0.5 * (y_s[first[exact] - 1] + y_s[first[exact]])
        ae = np.bincount(node, weights=entry_weight * np.abs(y - median[node]), minlength=n_nodes)
        return NodeStatistics(median[:, None] * self.scale, ae / total * self.scale, total, count)

    def candidate_gain(self, scan) -> np.ndarray:
        flat = np.flatnonzero(scan.valid)
        gain = np.full(scan.shape, -np.inf)
        if flat.size == 0:
            return gain
        m = scan.shape[1]
        row, pos = np.divmod(flat, m)
        seg = scan.seg_of_pos[pos]
        group, inverse = np.unique(row * scan.seg_start.shape[0] + seg, return_inverse=True)  # (row, node)
        g_row, g_seg = np.divmod(group, scan.seg_start.shape[0])
        g_start = scan.seg_start[g_seg]
        g_end = (scan.seg_start + scan.seg_len)[g_seg] if scan.known_end is None else scan.known_end[g_row, g_seg]
        ae = _RangeAbsoluteErrors(self, scan).query(np.concatenate([row, row, g_row]),
                                                    np.concatenate([g_start[inverse], pos, g_start]),
                                                    np.concatenate([pos, g_end[inverse], g_end]))
        n = flat.size
        gain.ravel()[flat] = ae[2 * n :][inverse] - ae[:n] - ae[n : 2 * n]
        return gain


class _RangeAbsoluteErrors:
    """Weighted absolute error around the weighted median of row ranges ``[lo, hi)``.

    One wavelet matrix per row of ``scan.order``: level ``b`` (most significant bit first)
    stores, for the current arrangement of the row, prefix counts and prefix weight / weighted
    target sums of the entries whose rank has bit ``b`` equal to 0, then stably moves those
    entries first. A query descends the bits, keeping the accumulated weight of entries known
    to lie below the median, and ends at the median's rank.
    """

    def __init__(self, criterion: AbsoluteError, scan):
        sample = scan.samples
        m = sample.shape[1]
        rank = criterion.rank[sample]
        w = np.ones(sample.shape) if scan.weights is None else scan.weights
        wy = w * criterion.y[sample]
        self.m = m
        self.values = criterion.levels
        self.cw = _exclusive_cumsum(w)
        self.cwy = _exclusive_cumsum(wy)
        # per level: prefix weight / weighted-target sums of the zero-bit entries, and where a
        # flat position (row * (m + 1) + p) moves when descending to the zero / one side
        self.levels = []
        row_base = (np.arange(sample.shape[0]) * (m + 1))[:, None]
        for b in reversed(range(criterion.n_bits)):
            bit = ((rank >> b) & 1).astype(np.uint8)
            zero = bit == 0
            zeros = _exclusive_cumsum(zero.astype(np.int64))
            to_zero = (zeros + row_base).ravel()
            to_one = (row_base + zeros[:, -1:] + np.arange(m + 1) - zeros).ravel()
            self.levels.append((_exclusive_cumsum(np.where(zero, w, 0.0)).ravel(),
                                _exclusive_cumsum(np.where(zero, wy, 0.0)).ravel(), to_zero, to_one))
            perm = np.argsort(bit, axis=1, kind="stable")
            rank = np.take_along_axis(rank, perm, axis=1)
            w = np.take_along_axis(w, perm, axis=1)
            wy = np.take_along_axis(wy, perm, axis=1)

    def query(self, rows, lo, hi) -> np.ndarray:
        base = rows * (self.m + 1)
        lo, hi = base + lo, base + hi  # flat positions
        cw, cwy = self.cw.ravel(), self.cwy.ravel()
        total_w = cw[hi] - cw[lo]
        total_wy = cwy[hi] - cwy[lo]
        half = 0.5 * total_w
        below_w = np.zeros(rows.shape[0])
        below_wy = np.zeros(rows.shape[0])
        med_rank = np.zeros(rows.shape[0], np.int64)
        for zw, zwy, to_zero, to_one in self.levels:
            w0 = zw[hi] - zw[lo]
            go_one = below_w + w0 <= half
            below_w += w0 * go_one
            below_wy += (zwy[hi] - zwy[lo]) * go_one
            med_rank = 2 * med_rank + go_one
            lo = np.where(go_one, to_one[lo], to_zero[lo])
            hi = np.where(go_one, to_one[hi], to_zero[hi])
        med = self.values[np.minimum(med_rank, self.values.size - 1)]
        above_w, above_wy = total_w - below_w, total_wy - below_wy
        return (above_wy - med * above_w) + (med * below_w - below_wy)


def _exclusive_cumsum(a: np.ndarray) -> np.ndarray:
    """Row-wise cumulative sums with a leading zero column: ``out[:, p] = a[:, :p].sum(1)``."""
    out = np.zeros((a.shape[0], a.shape[1] + 1), dtype=np.float64 if a.dtype.kind == "f" else np.int64)
    np.cumsum(a, axis=1, out=out[:, 1:])
    return out
