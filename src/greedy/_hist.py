"""Histogram split search for greedy CART (``splitter="hist"``): a splitter for :mod:`greedy._builder`.

Every feature is binned once (:class:`FeatureBinner`): distinct values are
grouped into at most ``max_bins`` consecutive bins of roughly equal sample counts
(quantiles), and bin edges always fall *between* distinct values, so equal
values share a bin. A node's best split on a feature is then found by one scan
over the feature's bins instead of a sort of the node's samples.

:class:`HistSplitter` searches all nodes of a batch at once (a level of the tree, or the
children of one node in best-first growth). For every feature the criterion sums its additive
statistics per (node, bin) (:meth:`greedy._criteria.AdditiveCriterion.histogram`: one
``np.bincount``); cumulative sums over bins give the left child's statistics of every
candidate split, the right child's follow by subtraction from the node totals, and the
criterion's :meth:`~greedy._criteria.AdditiveCriterion.score` of both children ranks the
candidates. Every registered additive criterion with ``histogram_search`` works here.

A chosen split ``(feature, bin b)`` is mapped back to a real threshold: the
midpoint between the largest value of the node's samples in bins ``<= b`` and the
smallest value of its samples in bins ``> b`` — the convention of the exact
search (and of scikit-learn), so the tree predicts raw data. When a feature has
at most ``max_bins`` distinct values every value has its own bin and the search
is exact: it returns the same splits as the sorted-scan search.

Stopping rules, the impurity decrease, node statistics and growth orders are the
builder's (:mod:`greedy._builder`). Admissible positions leave ``min_samples_leaf``
samples and ``min_weight_leaf`` weight on both sides and samples on both sides
(decided on occupied bins, never on weight differences). With ``max_features`` the
features searched per node are drawn as by the exact search
(:meth:`greedy._splitter.ExactSplitter._eligible_features`), "constant" meaning all of
the node's samples in one bin. Ties between features go to the lowest feature index,
ties between thresholds to the smallest threshold.

Samples with zero weight are ignored (as scikit-learn does). The search does
not support missing values.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state

from ._builder import GrowthParams, TreeBuilder
from ._criteria import TASKS, Criterion, criterion_class, criterion_names, make_criterion
from ._splitter import NodeBatch, SplitChoice, draw_eligible_features
from ._tree import Tree, midpoint_threshold

MAX_BINS_LIMIT = 65535
#: names accepted by :func:`build_hist_tree` for registered criteria
ALIASES = {"log_loss": "entropy"}
# histogram cells built at once; larger levels are processed in chunks of nodes
_MAX_CELLS = 1 << 21


def check_max_bins(max_bins) -> int:
    """Validate ``max_bins``: an integer in ``[2, 65535]``."""
    if isinstance(max_bins, bool) or not isinstance(max_bins, (int, np.integer)):
        raise TypeError(f"max_bins must be an integer, got {type(max_bins).__name__}")
    if not 2 <= max_bins <= MAX_BINS_LIMIT:
        raise ValueError(f"max_bins must lie in [2, {MAX_BINS_LIMIT}], got {max_bins}")
    return int(max_bins)


class FeatureBinner:
    """Bin numeric features at quantiles, keeping equal values together.

    Feature ``j`` gets ``n_bins_[j] <= max_bins`` bins separated by the increasing
    edges ``bin_edges_[j]``; value ``x`` falls in bin ``#{edges < x}`` (so ``x <=
    edge`` is left of the edge). Every edge is the midpoint of two consecutive
    distinct training values. With at most ``max_bins`` distinct values each value
    gets its own bin; otherwise the cuts are placed after the distinct values where
    the cumulative count first reaches ``n * q / max_bins``, ``q = 1 .. max_bins-1``
    (repeated cuts merge, so a heavy value can leave fewer bins).

    Parameters
    ----------
    max_bins : int, default=255
        Between 2 and 65535. Codes are stored as ``uint8`` up to 256 bins, else ``uint16``.
    """

    def __init__(self, max_bins: int = 255):
        self.max_bins = max_bins

    def fit(self, X) -> "FeatureBinner":
        X = _check_finite(X)
        max_bins = check_max_bins(self.max_bins)
        self.bin_edges_ = [self._edges(X[:, j], max_bins) for j in range(X.shape[1])]
        self.n_bins_ = np.array([e.size + 1 for e in self.bin_edges_], dtype=np.intp)
        self.n_features_in_ = X.shape[1]
        return self

    @staticmethod
    def _edges(column: np.ndarray, max_bins: int) -> np.ndarray:
        s = np.sort(column)
        first = np.r_[True, s[1:] != s[:-1]]
        distinct = s[first]
        if distinct.size <= max_bins:
            cut = np.arange(distinct.size - 1)
        else:
            cum = np.cumsum(np.diff(np.r_[np.flatnonzero(first), s.size]))
            targets = s.size * np.arange(1, max_bins) / max_bins
            cut = np.unique(np.searchsorted(cum, targets, side="left"))
            cut = cut[cut < distinct.size - 1]
        return midpoint_threshold(distinct[cut], distinct[cut + 1])

    def transform(self, X) -> np.ndarray:
        """Bin codes, shape ``(n_features, n_samples)`` (one contiguous row per feature)."""
        X = _check_finite(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, the binner was fitted on {self.n_features_in_}")
        dtype = np.uint8 if self.n_bins_.max(initial=1) <= 256 else np.uint16
        codes = np.empty((X.shape[1], X.shape[0]), dtype=dtype)
        for j, edges in enumerate(self.bin_edges_):
            codes[j] = np.searchsorted(edges, X[:, j], side="left")
        return codes

    def fit_transform(self, X) -> np.ndarray:
        return self.fit(X).transform(X)


def _check_finite(X) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("splitter='hist' does not support missing (NaN) or infinite values in X")
    return X


# ---------------------------------------------------------------------------------------------- splitter
def histogram_criteria(task: str) -> list[str]:
    """Registered criterion names of ``task`` the histogram search supports."""
    return sorted(name for name in criterion_names(task) if criterion_class(name).histogram_search)


def check_histogram_criterion(criterion: Criterion) -> None:
    """Refuse a criterion the histogram search cannot use, naming the supported ones."""
    if not criterion.histogram_search:
        raise ValueError(
            f"criterion {criterion.name!r} is not supported with splitter='hist' for {criterion.task}; "
            f"choose one of {histogram_criteria(criterion.task)}"
        )


class HistSplitter:
    """Best split of many nodes at once from per-bin histograms (see the module docstring).

    Same interface as :class:`greedy._splitter.ExactSplitter`. A batch keeps one row of
    entries grouped by node (no sorting is needed).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Finite training features (thresholds are midpoints of their values).
    codes : ndarray of shape (n_features, n_samples)
        Bin codes of ``X`` (:meth:`FeatureBinner.transform`).
    n_bins : ndarray of shape (n_features,)
    criterion : AdditiveCriterion
        With ``histogram_search`` (:func:`check_histogram_criterion`).
    min_samples_leaf, min_weight_leaf, max_features, random_state, unit_weight
        As for :class:`~greedy._splitter.ExactSplitter`.
    """

    category_width = 0

    def __init__(self, X, codes, n_bins, criterion, *, min_samples_leaf, min_weight_leaf, max_features, random_state,
                 unit_weight):
        check_histogram_criterion(criterion)
        self.XT = np.ascontiguousarray(np.asarray(X, dtype=np.float64).T)
        self.n_features = self.XT.shape[0]
        self.codes = codes
        self.n_bins = np.asarray(n_bins, np.intp)
        self.criterion = criterion
        self.min_samples_leaf = int(min_samples_leaf)
        self.min_weight_leaf = float(min_weight_leaf)
        self.max_features = int(max_features)
        self.random_state = random_state
        self.unit_weight = bool(unit_weight)

    def sorted_order(self, samples: np.ndarray) -> np.ndarray:
        """One row of entry ids ``0..len(samples)-1`` (histograms need no sorted order)."""
        return np.arange(samples.shape[0])[None, :]

    def goes_left(self, samples, nodes, choice: SplitChoice) -> tuple[np.ndarray, np.ndarray]:
        """``(left, missing)`` of ``samples`` at the splits ``choice`` of their ``nodes`` (nothing missing)."""
        left = self.XT[choice.feature[nodes], samples] <= choice.threshold[nodes]
        return left, np.zeros(left.shape, bool)

    def best_splits(self, batch: NodeBatch, entry_sample, entry_weight, identity_entries=False) -> SplitChoice:
        """The best split of every node of ``batch``; ``gain`` is the children's score ``P(L) + P(R)``."""
        S, F = batch.n_nodes, self.n_features
        entries = batch.order[0]
        samples = entries if identity_entries else entry_sample[entries]
        weights = None if self.unit_weight else entry_weight[entries]
        node = batch.seg_of_pos
        score = np.full((S, F), -np.inf)
        split_bin = np.zeros((S, F), np.intp)
        varies = np.zeros((S, F), bool)
        cells = S * int(self.n_bins.max()) * (self.criterion.n_values + 1)
        step = max(1, S * _MAX_CELLS // cells)
        for a in range(0, S, step):  # chunks of nodes bound the histograms' memory
            b = min(a + step, S)
            lo, hi = batch.seg_start[a], batch.seg_start[b - 1] + batch.seg_len[b - 1]
            part_node, part_samples = node[lo:hi] - a, samples[lo:hi]
            part_weights = None if weights is None else weights[lo:hi]
            columns = self.criterion.histogram_columns(part_samples, part_weights)
            for f in range(F):
                score[a:b, f], split_bin[a:b, f], varies[a:b, f] = self._search_feature(
                    f, part_node, b - a, part_samples, part_weights is None, columns)
        if self.max_features < F:
            score[~draw_eligible_features(self.random_state, varies, self.max_features)] = -np.inf
        feature = np.argmax(score, axis=1)  # lowest feature index on ties
        nodes = np.arange(S)
        gain = score[nodes, feature]
        found = gain > -np.inf
        threshold = self._thresholds(batch, samples, np.where(found, feature, 0), split_bin[nodes, feature])
        return SplitChoice(found, np.where(found, feature, -2), np.where(found, threshold, np.nan), gain)

    def _search_feature(self, f: int, node, n_nodes: int, samples, unit_weight: bool, columns):
        """Best position per node on feature ``f``: (score, bin, feature varies in the node).

        Position ``b`` sends bins ``0..b`` left; invalid positions score ``-inf``. ``columns``:
        the entries' :meth:`~greedy._criteria.AdditiveCriterion.histogram_columns`.
        """
        B = int(self.n_bins[f])
        cell = np.multiply(node, B, dtype=np.intp)
        cell += self.codes[f, samples]
        sums = [s.reshape(n_nodes, B) for s in self.criterion.histogram(cell, columns, n_nodes * B)]
        occupied = np.cumsum(sums[0] > 0, axis=1)  # every entry has a positive weight
        varies = occupied[:, -1] >= 2
        if B == 1:
            return np.full(n_nodes, -np.inf), np.zeros(n_nodes, np.intp), varies
        valid = (occupied[:, :-1] >= 1) & (occupied[:, :-1] < occupied[:, -1:])
        cumulative = [np.cumsum(s, axis=1) for s in sums]
        left = [c[:, :-1] for c in cumulative]
        right = [c[:, -1:] - l for c, l in zip(cumulative, left)]
        if self.min_samples_leaf > 1:
            if unit_weight:
                n_left, n_total = left[0], cumulative[0][:, -1:]
            else:
                counts = np.cumsum(np.bincount(cell, minlength=n_nodes * B).reshape(n_nodes, B), axis=1)
                n_left, n_total = counts[:, :-1], counts[:, -1:]
            valid &= (n_left >= self.min_samples_leaf) & (n_total - n_left >= self.min_samples_leaf)
        if self.min_weight_leaf > 0:
            valid &= (left[0] >= self.min_weight_leaf) & (right[0] >= self.min_weight_leaf)
        with np.errstate(divide="ignore", invalid="ignore"):
            score = np.where(valid, self.criterion.score(left) + self.criterion.score(right), -np.inf)
        best = np.argmax(score, axis=1)  # first maximum: smallest threshold
        return score[np.arange(n_nodes), best], best, varies

    def _thresholds(self, batch: NodeBatch, samples, feature, split_bin) -> np.ndarray:
        """Midpoint of the largest left value and the smallest right value of each node's split."""
        f = np.repeat(feature, batch.seg_len)
        value = self.XT[f, samples]
        left = self.codes[f, samples] <= np.repeat(split_bin, batch.seg_len)
        largest_left = np.maximum.reduceat(np.where(left, value, -np.inf), batch.seg_start)
        smallest_right = np.minimum.reduceat(np.where(left, np.inf, value), batch.seg_start)
        with np.errstate(invalid="ignore"):
            return midpoint_threshold(largest_left, smallest_right)


def build_hist_tree(X, y, sample_weight=None, *, task: str = "classification", criterion: str | None = None,
                    n_classes: int | None = None, max_bins: int = 255, max_depth: int | None = None,
                    min_samples_split: int = 2, min_samples_leaf: int = 1, min_weight_leaf: float = 0.0,
                    min_impurity_decrease: float = 0.0, max_features: int | None = None,
                    max_leaf_nodes: int | None = None, random_state=None, binner: FeatureBinner | None = None) -> Tree:
    """Grow a CART tree with the histogram split search.

    Parameters
    ----------
    X : array of shape (n_samples, n_features)
        Finite numeric features.
    y : array of shape (n_samples,)
        Class codes ``0..n_classes-1`` (classification) or real targets (regression).
    sample_weight : array of shape (n_samples,), optional
        Non-negative weights; zero-weight samples are ignored.
    task : {"classification", "regression"}
    criterion : str, optional
        A registered criterion that supports the histogram search: ``"gini"`` (default),
        ``"entropy"`` (alias ``"log_loss"``) for classification; ``"squared_error"``
        (default) or ``"correlation"`` for regression.
    n_classes : int, optional
        Number of classes (default ``y.max() + 1``).
    max_bins : int, default=255
        Bins per feature, in ``[2, 65535]``. Ignored when ``binner`` is given.
    max_depth, min_samples_split, min_samples_leaf, min_weight_leaf, min_impurity_decrease
        Stopping rules as in scikit-learn (integers / absolute weight already resolved).
    max_features : int, optional
        Features drawn per node (see module docstring).
    max_leaf_nodes : int, optional
        Grow best-first up to this many leaves.
    random_state : int, RandomState or None
        Feature draws when ``max_features`` is set.
    binner : FeatureBinner, optional
        A binner already fitted on ``X`` (to bin once and grow many trees).

    Returns
    -------
    Tree
        Node ids as :class:`greedy._builder.TreeBuilder` numbers them: depth-first pre-order,
        or creation order when grown best-first (as scikit-learn's builders).
    """
    if task not in TASKS:
        raise ValueError(f"task must be 'classification' or 'regression', got {task!r}")
    X = _check_finite(X)
    y = np.asarray(y)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
    if X.shape[0] == 0:
        raise ValueError("X has no samples")
    if task == "classification":
        n_classes = int(y.max()) + 1 if n_classes is None else int(n_classes)
        if not np.all((y >= 0) & (y < n_classes) & (y == np.floor(y))):
            raise ValueError(f"y must hold class codes in [0, {n_classes})")
        y = y.astype(np.intp)
    unit_weight = sample_weight is None
    if unit_weight:
        sample_weight = np.ones(X.shape[0])
    else:
        sample_weight = np.asarray(sample_weight, np.float64)
        if sample_weight.shape != (X.shape[0],) or not np.all(np.isfinite(sample_weight) & (sample_weight >= 0)):
            raise ValueError("sample_weight must be finite, non-negative, of shape (n_samples,)")
        if not sample_weight.sum() > 0:
            raise ValueError("sample_weight sums to zero")
    name = criterion or ("gini" if task == "classification" else "squared_error")
    name = ALIASES.get(name, name)
    if name not in criterion_names(task):
        raise ValueError(f"criterion {name!r} is not supported with splitter='hist' for {task}; "
                         f"choose one of {histogram_criteria(task)}")
    crit = make_criterion(name, task, y, sample_weight, n_classes, X)
    if binner is None:
        binner = FeatureBinner(max_bins).fit(X)
    splitter = HistSplitter(
        X, binner.transform(X), binner.n_bins_, crit, min_samples_leaf=min_samples_leaf,
        min_weight_leaf=min_weight_leaf, max_features=X.shape[1] if max_features is None else max_features,
        random_state=check_random_state(random_state), unit_weight=unit_weight,
    )
    params = GrowthParams(
        max_depth=np.iinfo(np.int32).max if max_depth is None else int(max_depth),
        min_samples_split=max(int(min_samples_split), 2 * int(min_samples_leaf)),
        min_samples_leaf=int(min_samples_leaf), min_weight_leaf=float(min_weight_leaf),
        min_impurity_decrease=float(min_impurity_decrease), max_leaf_nodes=max_leaf_nodes,
    )
    return TreeBuilder(splitter, crit, params, task).build(sample_weight)
