"""Histogram split search for greedy CART (``splitter="hist"``).

Every feature is binned once (:class:`FeatureBinner`): distinct values are
grouped into at most ``max_bins`` consecutive bins of roughly equal sample counts
(quantiles), and bin edges always fall *between* distinct values, so equal
values share a bin. A node's best split on a feature is then found by one scan
over the feature's bins instead of a sort of the node's samples.

The tree is grown a whole level at a time. For every feature a single
``np.bincount`` over the combined index ``(node * n_bins + bin) * K + class``
(classification) or ``node * n_bins + bin`` (regression: weights and weighted
target sums) builds the histograms of all nodes of the level; cumulative sums
over bins give the left-child statistics of every candidate split, the
right-child ones follow by subtraction from the node totals.

Split scores (maximised; constants of the node dropped), with ``c`` the
weighted class counts and ``w`` the weight of a child, ``s`` its weighted target
sum:

* ``gini``:          ``sum_k c_k**2 / w``                 (left + right)
* ``entropy``:       ``sum_k c_k log c_k - w log w``      (left + right)
* ``squared_error``: ``s**2 / w``                          (left + right)

A chosen split ``(feature, bin b)`` is mapped back to a real threshold: the
midpoint between the largest value of the node's samples in bins ``<= b`` and the
smallest value of its samples in bins ``> b`` — the convention of the exact
search (and of scikit-learn), so the tree predicts raw data. When a feature has
at most ``max_bins`` distinct values every value has its own bin and the search
is exact: it returns the same splits as the sorted-scan search.

Stopping rules follow scikit-learn's depth-first builder: a node is a leaf when
``depth >= max_depth``, ``n < min_samples_split``, ``n < 2 * min_samples_leaf``,
``w < 2 * min_weight_leaf``, its impurity is ``<= eps``, no split leaves
``min_samples_leaf`` samples and ``min_weight_leaf`` weight on both sides, or the
best split's weighted impurity decrease ``w/W * (i - w_l/w i_l - w_r/w i_r)``
plus ``eps`` is below ``min_impurity_decrease``. With ``max_leaf_nodes`` the tree
is grown best-first (largest impurity decrease first), as scikit-learn does.

With ``max_features`` every node draws a random order of the features and
considers the first ``max_features`` of them, continuing past that number until
at least one feature that is not constant in the node (all samples in one bin)
has been seen. Ties between features go to the one drawn first (without
``max_features``: the lowest feature index); ties between thresholds go to the
smallest threshold.

Samples with zero weight are ignored (as scikit-learn does). The search does
not support missing values.
"""

from __future__ import annotations

import heapq

import numpy as np
from scipy.special import xlogy
from sklearn.utils import check_random_state

from ._prune import collapse
from ._tree import LEAF_FEATURE, TREE_LEAF, Tree, midpoint_threshold

MAX_BINS_LIMIT = 65535
EPSILON = np.finfo(np.float64).eps
HIST_CRITERIA = {"classification": ("gini", "entropy", "log_loss"), "regression": ("squared_error",)}
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


# ---------------------------------------------------------------------------------------------- criteria
def _score(criterion: str, stats: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Per-child split score (to maximise, summed over both children) from per-child statistics.

    ``stats[..., :]`` are class counts (classification) or ``(w, s)`` (regression);
    ``weight`` is the child's total weight. Positions with zero weight give nan.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        if criterion == "gini":
            return np.einsum("...k,...k->...", stats, stats) / weight
        if criterion in ("entropy", "log_loss"):
            return xlogy(stats, stats).sum(-1) - xlogy(weight, weight)
        return stats[..., 1] ** 2 / weight  # squared_error


def _impurity(criterion: str, stats: np.ndarray, weight: np.ndarray, sq_sum=None) -> np.ndarray:
    """Node impurity: Gini, entropy in bits, or weighted variance ``q/w - (s/w)**2``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        safe = np.where(weight > 0, weight, 1.0)
        if criterion == "gini":
            p = stats / safe[..., None]
            return 1.0 - (p * p).sum(-1)
        if criterion in ("entropy", "log_loss"):
            p = stats / safe[..., None]
            return -xlogy(p, p).sum(-1) / np.log(2.0)
        mean = stats[..., 1] / safe
        return np.maximum(sq_sum / safe - mean * mean, 0.0)


# ---------------------------------------------------------------------------------------------- grower
class _HistGrower:
    """One histogram tree growth: binned data, targets, and the nodes created so far.

    Active samples are the positively weighted training samples of nodes that may
    still split; ``codes``, ``rows`` (ids in ``X``), ``y`` and ``w`` list them in the
    same order and are compacted when many samples reach final leaves.
    """

    def __init__(self, X, codes, n_bins, y, sample_weight, *, task, criterion, n_classes, max_depth,
                 min_samples_split, min_samples_leaf, min_weight_leaf, min_impurity_decrease,
                 max_features, random_state):
        self.X, self.n_bins = X, n_bins
        self.task, self.criterion, self.n_classes = task, criterion, n_classes
        self.max_depth = np.iinfo(np.intp).max if max_depth is None else max_depth
        self.min_samples_split = max(min_samples_split, 2 * min_samples_leaf)
        self.min_samples_leaf, self.min_weight_leaf = min_samples_leaf, min_weight_leaf
        self.min_impurity_decrease = min_impurity_decrease
        self.n_features = X.shape[1]
        self.max_features = self.n_features if max_features is None else max_features
        self.rng = check_random_state(random_state)
        self.need_counts = sample_weight is not None and min_samples_leaf > 1
        self.rows = np.arange(X.shape[0]) if sample_weight is None else np.flatnonzero(sample_weight > 0)
        full = self.rows.size == X.shape[0]
        self.codes = codes if full else codes[:, self.rows]
        y = y if full else y[self.rows]
        self.y = y.astype(np.intp) if task == "classification" else y.astype(np.float64)
        self.w = None if sample_weight is None else np.asarray(sample_weight, np.float64)[self.rows]
        self.total_weight = float(X.shape[0] if sample_weight is None else self.w.sum())
        self.n_nodes = 0
        self.node_chunks = []  # per-node statistics, in id order
        self.split_chunks = []  # (parent ids, left ids, right ids, features, thresholds)

    # ------------------------------------------------------------- node statistics
    def _stats(self, slot, n_slots: int, idx=None) -> dict:
        """Statistics of ``n_slots`` groups of active samples (``idx``: their positions; None = all)."""
        y = self.y if idx is None else self.y[idx]
        w = self.w if (idx is None or self.w is None) else self.w[idx]
        counts = np.bincount(slot, minlength=n_slots)
        weight = counts.astype(np.float64) if w is None else np.bincount(slot, weights=w, minlength=n_slots)
        if self.task == "classification":
            K = self.n_classes
            value = np.bincount(slot * K + y, weights=w, minlength=n_slots * K).reshape(n_slots, K)
            value = value.astype(np.float64)
            impurity = _impurity(self.criterion, value, weight)
        else:
            wy = y if w is None else w * y
            s = np.bincount(slot, weights=wy, minlength=n_slots)
            q = np.bincount(slot, weights=wy * y, minlength=n_slots)
            impurity = _impurity(self.criterion, np.stack([weight, s], -1), weight, q)
            value = (s / np.where(weight > 0, weight, 1.0))[:, None]
        return dict(value=value, n=counts, w=weight, impurity=impurity)

    def _new_nodes(self, stats: dict) -> np.ndarray:
        """Give the nodes described by ``stats`` the next ids; return the ids."""
        k = stats["n"].shape[0]
        ids = np.arange(self.n_nodes, self.n_nodes + k)
        self.n_nodes += k
        self.node_chunks.append(stats)
        return ids

    def _splittable(self, stats: dict, depth) -> np.ndarray:
        return (
            (depth < self.max_depth)
            & (stats["n"] >= self.min_samples_split)
            & (stats["w"] >= 2 * self.min_weight_leaf)
            & (stats["impurity"] > EPSILON)
        )

    # ------------------------------------------------------------- split search
    def _feature_histogram(self, f: int, slot, M: int, codes_f, y, w):
        """Statistics (M, B, S) of feature ``f`` for slots ``0..M-1``, and sample counts (M, B) or None.

        Counts are returned when ``min_samples_leaf`` needs them and they differ from the weights.
        """
        B = int(self.n_bins[f])
        cell = np.multiply(slot, B, dtype=np.intp)
        cell += codes_f
        size = (M + 1) * B  # slot M collects samples that are not searched
        counts = None
        if self.task == "classification":
            K = self.n_classes
            idx = cell * K
            idx += y
            stats = np.bincount(idx, weights=w, minlength=size * K)[: M * B * K].reshape(M, B, K)
            stats = stats.astype(np.float64, copy=False)
            if self.need_counts:
                counts = np.bincount(cell, minlength=size)[: M * B].reshape(M, B)
        else:
            n = np.bincount(cell, minlength=size)[: M * B]
            wsum = n if w is None else np.bincount(cell, weights=w, minlength=size)[: M * B]
            s = np.bincount(cell, weights=y if w is None else w * y, minlength=size)[: M * B]
            stats = np.stack([wsum, s], -1).astype(np.float64).reshape(M, B, 2)
            counts = n.reshape(M, B)
        return stats, counts

    def _search_feature(self, stats, counts):
        """Best split position per node on one feature: (score, bin, non-constant flag).

        Position ``b`` sends bins ``0..b`` left; invalid positions score ``-inf``.
        Emptiness of a side is decided on bins holding samples (exact), never on
        weight differences.
        """
        left = np.cumsum(stats, axis=1)[:, :-1]
        right = stats.sum(1)[:, None] - left
        bin_weight = stats.sum(-1) if self.task == "classification" else stats[..., 0]
        occupied = np.cumsum(bin_weight > 0, axis=1)
        nonconstant = occupied[:, -1] >= 2
        occupied_left = occupied[:, :-1]
        valid = (occupied_left >= 1) & (occupied_left < occupied[:, -1:])
        if self.min_samples_leaf > 1:
            n = bin_weight if counts is None else counts
            n_left = np.cumsum(n, axis=1)[:, :-1]
            valid &= (n_left >= self.min_samples_leaf) & (n.sum(1)[:, None] - n_left >= self.min_samples_leaf)
        w_left = left.sum(-1) if self.task == "classification" else left[..., 0]
        w_right = right.sum(-1) if self.task == "classification" else right[..., 0]
        if self.min_weight_leaf > 0:
            valid &= (w_left >= self.min_weight_leaf) & (w_right >= self.min_weight_leaf)
        score = np.where(valid, _score(self.criterion, left, w_left) + _score(self.criterion, right, w_right), -np.inf)
        if score.shape[1] == 0:  # a feature with a single bin
            return np.full(score.shape[0], -np.inf), np.zeros(score.shape[0], np.intp), nonconstant
        best = np.argmax(score, axis=1)  # first maximum: smallest threshold
        return score[np.arange(score.shape[0]), best], best, nonconstant

    def _best_splits(self, slot, M: int, codes, y, w):
        """Best (feature, bin) for slots ``0..M-1``; ``feature == -1`` where no split is valid."""
        F = self.n_features
        scores = np.full((M, F), -np.inf)
        bins = np.zeros((M, F), np.intp)
        nonconstant = np.zeros((M, F), bool)
        for f in range(F):
            stats, counts = self._feature_histogram(f, slot, M, codes[f], y, w)
            scores[:, f], bins[:, f], nonconstant[:, f] = self._search_feature(stats, counts)
        if self.max_features >= F:
            visit = np.broadcast_to(np.arange(F), (M, F))
            considered = np.ones((M, F), bool)
        else:
            visit = np.argsort(self.rng.random_sample((M, F)), axis=1)
            # the first max_features drawn, and more until a non-constant feature was seen
            first_nonconstant = np.argmax(np.take_along_axis(nonconstant, visit, 1), axis=1)
            n_considered = np.maximum(self.max_features, first_nonconstant + 1)
            considered = np.arange(F)[None, :] < n_considered[:, None]
        ordered = np.where(considered, np.take_along_axis(scores, visit, 1), -np.inf)
        pick = np.argmax(ordered, axis=1)  # first maximum in visiting order
        nodes = np.arange(M)
        feature = visit[nodes, pick]
        found = ordered[nodes, pick] > -np.inf
        return np.where(found, feature, -1), bins[nodes, feature]

    def _search(self, slot, M: int, idx):
        """:meth:`_best_splits` for the active samples ``idx`` (None = all), in chunks of nodes if large."""
        codes = self.codes if idx is None else self.codes[:, idx]
        y = self.y if idx is None else self.y[idx]
        w = self.w if (idx is None or self.w is None) else self.w[idx]
        cells = M * int(self.n_bins.max()) * (self.n_classes if self.task == "classification" else 2)
        if cells <= _MAX_CELLS:
            return self._best_splits(slot, M, codes, y, w)
        feature, bins = np.empty(M, np.intp), np.empty(M, np.intp)
        order = np.argsort(slot, kind="stable")
        bounds = np.searchsorted(slot[order], np.arange(M + 1))
        step = max(1, M * _MAX_CELLS // cells)
        for a in range(0, M, step):
            b = min(a + step, M)
            part = order[bounds[a] : bounds[b]]
            feature[a:b], bins[a:b] = self._best_splits(
                slot[part] - a, b - a, codes[:, part], y[part], None if w is None else w[part]
            )
        return feature, bins

    def _split(self, parent: dict, slot, M: int, idx=None) -> dict:
        """Search, evaluate and threshold the best split of ``M`` nodes.

        ``slot`` gives each active sample in ``idx`` (None = all) its node ``0..M-1``,
        or ``M`` if its node is not split. ``parent`` holds the nodes' statistics.
        Returns the accepted splits (``accept``, ``feature``, ``threshold``), the
        statistics of their children (left, right per accepted split) and ``child``:
        for each sample, its child's position in those statistics or -1.
        """
        feature, bins = self._search(slot, M, idx)
        found = feature >= 0
        pos = np.append(np.cumsum(found) - 1, -1)
        searched = np.append(found, False)[slot]
        act = np.flatnonzero(searched)
        s_act = slot[act]
        where = act if idx is None else idx[act]
        f_act = feature[s_act]
        n_active = self.codes.shape[1]
        code = self.codes.reshape(-1)[f_act * n_active + where]
        left = code <= bins[s_act]
        n_found = int(found.sum())
        pair = pos[s_act]
        children = self._stats(2 * pair + ~left, 2 * n_found, where)
        w, imp = parent["w"][found], parent["impurity"][found]
        wl, wr = children["w"][0::2], children["w"][1::2]
        il, ir = children["impurity"][0::2], children["impurity"][1::2]
        improvement = np.zeros(M)
        improvement[found] = w / self.total_weight * (imp - wr / w * ir - wl / w * il)
        accept = found.copy()
        accept[found] = improvement[found] + EPSILON >= self.min_impurity_decrease
        threshold = np.full(M, np.nan)
        threshold[found] = self._thresholds(pair, n_found, code, bins[found], left, f_act, where)
        # keep the children of accepted splits only
        pair_kept = accept[found]
        new_pair = np.cumsum(pair_kept) - 1
        child = np.full(slot.shape[0], -1, np.intp)
        ok = pair_kept[pair]
        child[act[ok]] = 2 * new_pair[pair[ok]] + ~left[ok]
        keep2 = np.repeat(pair_kept, 2)
        children = {k: v[keep2] for k, v in children.items()}
        return dict(accept=accept, feature=feature, threshold=threshold, improvement=improvement,
                    children=children, child=child)

    def _thresholds(self, pair, n_pairs: int, code, split_bin, left, f, where):
        """Midpoint of the largest left value and the smallest right value of each split.

        The largest left value lies in the split bin itself (it holds samples of the node,
        else the previous position would tie and win), the smallest right value in the
        first occupied bin after it: only samples of those two bins are read from ``X``.
        """
        next_bin = np.full(n_pairs, np.iinfo(np.intp).max)
        np.minimum.at(next_bin, pair[~left], code[~left].astype(np.intp))  # same dtypes: fast ufunc.at
        edge = np.flatnonzero((code == split_bin[pair]) | (code == next_bin[pair]))
        pair, left = pair[edge], left[edge]
        v = self.X[self.rows[where[edge]], f[edge]]
        hi = np.full(n_pairs, -np.inf)
        lo = np.full(n_pairs, np.inf)
        np.maximum.at(hi, pair[left], v[left])
        np.minimum.at(lo, pair[~left], v[~left])
        return midpoint_threshold(hi, lo)

    def _record_splits(self, parent_ids, result) -> np.ndarray:
        """Create the children of the accepted splits; return the children's ids (left, right interleaved)."""
        acc = result["accept"]
        ids = self._new_nodes(result["children"])
        self.split_chunks.append(
            (parent_ids[acc], ids[0::2], ids[1::2], result["feature"][acc], result["threshold"][acc])
        )
        return ids

    # ------------------------------------------------------------- growth orders
    def grow_level_wise(self) -> None:
        """Split every splittable node of a level at once (depth-first builder semantics)."""
        slot = np.zeros(self.rows.size, np.intp)
        frontier = self._stats(slot, 1)
        ids = self._new_nodes(frontier)
        depth = 0
        while True:
            splittable = self._splittable(frontier, depth)
            M = int(splittable.sum())
            if M == 0:
                return
            search_slot = np.append(np.cumsum(splittable) - 1, M)
            search_slot[:-1][~splittable] = M
            slot = search_slot[slot]
            if np.count_nonzero(slot == M) > slot.size // 8:  # compact: drop samples of final leaves
                keep = slot < M
                self.codes, self.rows, self.y, slot = self.codes[:, keep], self.rows[keep], self.y[keep], slot[keep]
                self.w = None if self.w is None else self.w[keep]
            parent = {k: v[splittable] for k, v in frontier.items()}
            result = self._split(parent, slot, M)
            if not result["accept"].any():
                return
            ids = self._record_splits(ids[splittable], result)
            frontier = result["children"]
            n_children = frontier["n"].shape[0]
            slot = np.where(result["child"] >= 0, result["child"], n_children)
            depth += 1

    def grow_best_first(self, max_leaf_nodes: int) -> None:
        """Split the node with the largest impurity decrease first, up to ``max_leaf_nodes`` leaves."""
        all_rows = np.arange(self.rows.size)
        root = self._stats(np.zeros(self.rows.size, np.intp), 1)
        heap = []  # (-improvement, node id, sample positions, depth, split result index 0)
        self._push(heap, root, self._new_nodes(root), [all_rows], 0)
        n_splits_left = max_leaf_nodes - 1
        while heap and n_splits_left > 0:
            _, node, rows, depth, result = heapq.heappop(heap)
            children_ids = self._record_splits(np.array([node]), result)
            child = result["child"]
            parts = [rows[child == 0], rows[child == 1]]
            self._push(heap, result["children"], children_ids, parts, depth + 1)
            n_splits_left -= 1

    def _push(self, heap, stats: dict, ids, parts, depth: int) -> None:
        """Evaluate the best split of the nodes ``ids`` and queue those that can split."""
        splittable = self._splittable(stats, depth)
        for k in np.flatnonzero(splittable):
            idx = parts[k]
            parent = {key: v[k : k + 1] for key, v in stats.items()}
            result = self._split(parent, np.zeros(idx.size, np.intp), 1, idx)
            if result["accept"][0]:
                heapq.heappush(heap, (-result["improvement"][0], int(ids[k]), idx, depth, result))

    # ------------------------------------------------------------- result
    def tree(self) -> Tree:
        """The grown tree, re-indexed in depth-first order."""
        n = self.n_nodes
        stats = {k: np.concatenate([c[k] for c in self.node_chunks]) for k in self.node_chunks[0]}
        left = np.full(n, TREE_LEAF, np.intp)
        right = np.full(n, TREE_LEAF, np.intp)
        feature = np.full(n, LEAF_FEATURE, np.intp)
        threshold = np.full(n, np.nan)
        for parent, l, r, f, t in self.split_chunks:
            left[parent], right[parent], feature[parent], threshold[parent] = l, r, f, t
        tree = Tree(
            left, right, feature, threshold, stats["value"], n_features=self.n_features, task=self.task,
            n_node_samples=stats["n"], weighted_n_node_samples=stats["w"], impurity=stats["impurity"],
        )
        return collapse(tree)


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
        ``"gini"`` (default), ``"entropy"``/``"log_loss"`` for classification;
        ``"squared_error"`` (default) for regression.
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
        Node ids in depth-first pre-order (as scikit-learn's depth-first builder).
    """
    if task not in HIST_CRITERIA:
        raise ValueError(f"task must be 'classification' or 'regression', got {task!r}")
    criterion = criterion or HIST_CRITERIA[task][0]
    if criterion not in HIST_CRITERIA[task]:
        raise ValueError(
            f"criterion {criterion!r} is not supported with splitter='hist' for {task}; "
            f"choose one of {HIST_CRITERIA[task]}"
        )
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
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight, np.float64)
        if sample_weight.shape != (X.shape[0],) or not np.all(np.isfinite(sample_weight) & (sample_weight >= 0)):
            raise ValueError("sample_weight must be finite, non-negative, of shape (n_samples,)")
        if not sample_weight.sum() > 0:
            raise ValueError("sample_weight sums to zero")
    if binner is None:
        binner = FeatureBinner(max_bins).fit(X)
    codes = binner.transform(X)
    grower = _HistGrower(
        X, codes, binner.n_bins_, y, sample_weight, task=task, criterion=criterion, n_classes=n_classes,
        max_depth=max_depth, min_samples_split=min_samples_split, min_samples_leaf=min_samples_leaf,
        min_weight_leaf=min_weight_leaf, min_impurity_decrease=min_impurity_decrease,
        max_features=max_features, random_state=random_state,
    )
    if max_leaf_nodes is None:
        grower.grow_level_wise()
    else:
        grower.grow_best_first(max_leaf_nodes)
    return grower.tree()
