"""Exact split search by sorted scan with prefix sums, vectorised over nodes and features.

Layout
------
The nodes searched together (a *batch*: all open nodes of a level, or the children of one
node in best-first growth) hold their samples as *entries* ``(sample, weight)`` in an
``order`` array of shape ``(n_features, m)``: columns ``seg_start[s] : seg_start[s] +
seg_len[s]`` hold the entries of node ``s`` and row ``f`` lists them sorted by feature ``f``
(missing values last). Rows come from one ``argsort`` at the root and stay sorted through
stable partitioning when nodes split (:meth:`greedy._builder.TreeBuilder._partition`), so
no level sorts again. A sample with a missing split value reaches both children as two
entries.

Candidates
----------
As in scikit-learn (``sklearn/tree/_splitter.pyx``), features are float32 and a split may fall
between consecutive sorted values ``v[p-1] < v[p]`` of a node only if
``v[p] > v[p-1] + 1e-7`` (float32 arithmetic); its threshold is ``v[p-1]/2 + v[p]/2`` in
float64 and the left child is ``x <= threshold``. Both children need ``min_samples_leaf``
entries and ``min_weight_leaf`` weight (counted on the known values).

For a block of features every position of every node is scored at once: prefix sums along
the rows give the left children's statistics (:class:`CandidateScan`), the criterion
(:mod:`greedy._criteria`) turns them into gains, and segmented maxima (``ufunc.reduceat``)
give each node's best split. Cost per level: ``O(n_features * m)`` streaming numpy passes.

Missing values
--------------
Entries whose value of the scanned feature is NaN sit at the end of each node's row and take
no part in that feature's candidates: the left child of position ``p`` holds the known
entries before ``p``, the right child the known entries from ``p`` on, and the criterion's gain
``P(L) + P(R) - P(K)`` is the weighted impurity decrease over the known entries ``K`` only,
i.e. ``w`` times C4.5's gain ``(w_K / w) * (imp(K) - w_L/w_K imp(L) - w_R/w_K imp(R))``
(``w`` the node weight, the same for every feature of a node, so it does not change the
argmax). A feature whose values are all missing in a node has no candidate there.

Categorical features
--------------------
A categorical split sends a subset of the categories (integer codes) left. Per node, the
categories present are sorted by a key and scanned like a numeric feature, so ``C``
categories give ``C - 1`` candidate subsets (prefixes of the order) instead of
``2^(C-1) - 1``. The key (:meth:`Criterion.category_key`) is the proportion of the node's most
frequent class (classification) or the category's prediction (regression: the mean for
squared error). This *ordering trick* is exact, i.e. the best prefix is the best subset of
all, for binary classification with a concave impurity (Breiman, Friedman, Olshen & Stone
1984, Thm. 4.5) and for squared error (Fisher 1958); for more classes (and absolute error)
it is a heuristic. Ties between keys are broken by the category code. Categories absent from
a node, and codes unseen in training, go to the child with more training weight
(``default_left``; the left child on equal weights).

Tie-break (deterministic): the largest gain wins; among exactly equal gains, the lowest feature
index, then the lowest threshold. scikit-learn visits features in a random order, so on
exact ties it may pick another feature than this rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._tree import midpoint_threshold

FEATURE_THRESHOLD = np.float32(1e-7)
#: Entries (features x positions) per block scored at once: bounds the temporaries' memory.
BLOCK_ENTRIES = 1 << 21


@dataclass
class NodeBatch:
    """Nodes whose best splits are searched together (see the module docstring)."""

    order: np.ndarray  # (n_features, m) entry ids
    seg_start: np.ndarray  # (n_nodes,)
    seg_len: np.ndarray  # (n_nodes,)

    @property
    def n_nodes(self) -> int:
        return int(self.seg_start.shape[0])

    @property
    def seg_of_pos(self) -> np.ndarray:
        return np.repeat(np.arange(self.n_nodes), self.seg_len)


@dataclass
class SplitChoice:
    """The best split of every node of a batch (``found`` False: no admissible split)."""

    found: np.ndarray  # (n_nodes,) bool
    feature: np.ndarray  # (n_nodes,) intp
    threshold: np.ndarray  # (n_nodes,) float64
    gain: np.ndarray  # (n_nodes,) float64, -inf where not found
    category_left: np.ndarray | None = None  # (n_nodes, category_width) bool; all False at numeric splits
    default_left: np.ndarray | None = None  # (n_nodes,) bool: absent / unseen categories go left

    def take(self, nodes) -> "SplitChoice":
        pick = (lambda a: None if a is None else a[nodes])
        return SplitChoice(self.found[nodes], self.feature[nodes], self.threshold[nodes], self.gain[nodes],
                           pick(self.category_left), pick(self.default_left))


class CandidateScan:
    """All split positions of a batch on a block of features, as criteria see them.

    Position ``p`` of row ``r`` (feature ``features[r]``) splits node ``seg_of_pos[p]``
    into the entries at positions ``seg_start[s] : p`` (left) and ``p : known_end[r, s]``
    (right); entries past ``known_end`` have a missing value. ``valid`` marks the admissible
    positions; criteria may return anything elsewhere.
    """

    def __init__(self, order, features, batch: NodeBatch, seg_of_pos, q, valid, known_end, entry_sample, entry_weight,
                 unit_weight, identity_entries):
        self.order = order
        self.features = features
        self.seg_start = batch.seg_start
        self.seg_len = batch.seg_len
        self.seg_of_pos = seg_of_pos
        self.q = q
        self.valid = valid
        self.known_end = known_end  # (rows, S) or None: no missing value in the block
        self.entry_sample = entry_sample
        self.entry_weight = entry_weight
        self.unit_weight = unit_weight
        self._samples = order if identity_entries else None
        self._weights = None

    @property
    def shape(self) -> tuple[int, int]:
        return self.order.shape

    @property
    def samples(self) -> np.ndarray:
        """Sample id at every (row, position)."""
        if self._samples is None:
            self._samples = self.entry_sample[self.order]
        return self._samples

    @property
    def weights(self) -> np.ndarray | None:
        """Entry weight at every (row, position); None when every weight is 1."""
        if self.unit_weight:
            return None
        if self._weights is None:
            self._weights = self.entry_weight[self.order]
        return self._weights

    def expand(self, per_node: np.ndarray) -> np.ndarray:
        """Broadcast a per-(row, node) array (rows, S) to every position (rows, m)."""
        return np.take(per_node, self.seg_of_pos, axis=-1)

    def left_and_known(self, values: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Sums of ``values`` (rows, m) left of every position, and over each node's known part.

        ``None`` stands for the entry weights (with unit weights the left sums are the
        positions within the node, shape (m,)). Integer or boolean values are summed exactly
        in int64. Returns float64 ``(left (rows, m) or (m,), known (rows, S))``.
        """
        rows, m = self.shape
        if values is None:
            if self.unit_weight:
                return self.q.astype(np.float64), self._known_count().astype(np.float64)
            values = self.weights
        dtype = np.int64 if values.dtype.kind in "bui" else np.float64
        csum = np.empty((rows, m + 1), dtype)
        csum[:, 0] = 0
        np.cumsum(values, axis=1, dtype=dtype, out=csum[:, 1:])
        base = csum[:, self.seg_start]
        if self.known_end is None:
            known = csum[:, self.seg_start + self.seg_len] - base
        else:
            known = np.take_along_axis(csum, self.known_end, axis=1) - base
        left = csum[:, :m]
        left -= self.expand(base)
        return left.astype(np.float64, copy=False), known.astype(np.float64, copy=False)

    def _known_count(self) -> np.ndarray:
        rows = self.shape[0]
        if self.known_end is None:
            return np.broadcast_to(self.seg_len, (rows, self.seg_len.shape[0]))
        return self.known_end - self.seg_start


def draw_eligible_features(random_state, varies: np.ndarray, max_features: int) -> np.ndarray:
    """(S, F) mask of the features searched per node: ``max_features`` drawn uniformly at random.

    Each node draws a random ordering of the features and searches the first
    ``max_features``; if all of them are constant in the node (``varies`` False), the first
    varying feature of the ordering is searched too (as in scikit-learn).
    """
    S, n_feat = varies.shape
    rank = np.argsort(random_state.random_sample((S, n_feat)), axis=1).argsort(axis=1)
    eligible = rank < max_features
    none = ~(eligible & varies).any(axis=1) & varies.any(axis=1)
    if none.any():
        r = np.where(varies[none], rank[none], n_feat)
        eligible[np.flatnonzero(none), r.argmin(axis=1)] = True
    return eligible


class ExactSplitter:
    """Best split of many nodes at once by exact sorted scan (see the module docstring).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Training features, float32 (scikit-learn's dtype; other dtypes are converted) or float64;
        NaN marks a missing value.
    criterion : Criterion
    min_samples_leaf : int
    min_weight_leaf : float
    max_features : int
        Features drawn per node; ``n_features`` means all.
    random_state : numpy.random.RandomState
        Draws the per-node feature subsets when ``max_features < n_features``.
    unit_weight : bool
        True when every sample weight is 1 (counts replace weight sums).
    n_categories : array of int of shape (n_features,) or None
        Number of categories of each categorical feature (codes ``0..n-1``), 0 for numeric
        features. None: every feature is numeric.
    """

    def __init__(self, X, criterion, *, min_samples_leaf, min_weight_leaf, max_features, random_state, unit_weight,
                 n_categories=None):
        X = np.asarray(X)
        self.XT = np.ascontiguousarray(X.astype(np.float64 if X.dtype == np.float64 else np.float32).T)
        self.n_features, self.n_samples = self.XT.shape
        self.criterion = criterion
        self.min_samples_leaf = int(min_samples_leaf)
        self.min_weight_leaf = float(min_weight_leaf)
        self.max_features = int(max_features)
        self.random_state = random_state
        self.unit_weight = bool(unit_weight)
        self.has_missing = np.isnan(self.XT).any(axis=1)
        self.n_categories = np.zeros(self.n_features, np.intp) if n_categories is None else np.asarray(n_categories)
        self.is_categorical = self.n_categories > 0
        self.category_width = int(self.n_categories.max(initial=0))

    # ------------------------------------------------------------------ layout
    def sorted_order(self, samples: np.ndarray) -> np.ndarray:
        """Entry ids ``0..len(samples)-1`` sorted by every feature (missing last).

        Rows of categorical features are only grouped by node: they are re-sorted per node
        at every search.
        """
        return np.argsort(self.XT[:, samples], axis=1)

    def goes_left(self, samples, nodes, choice: SplitChoice) -> tuple[np.ndarray, np.ndarray]:
        """Direction of ``samples`` at the splits ``choice`` of their ``nodes``.

        Returns ``(left, missing)``; ``left`` is False where the value is missing.
        """
        feature = choice.feature[nodes]
        v = self.XT[feature, samples]
        missing = np.isnan(v)
        left = v <= choice.threshold[nodes]
        cat = self.is_categorical[feature] & ~missing
        if cat.any():
            left[cat] = choice.category_left[nodes[cat], v[cat].astype(np.intp)]
        return left, missing

    def feature_values(self, rows: np.ndarray, samples: np.ndarray) -> np.ndarray:
        """``X[samples, features[rows]]`` for a (rows, m) array of sample ids."""
        flat = samples + (rows * self.n_samples)[:, None]
        return np.take(self.XT.ravel(), flat)

    # ------------------------------------------------------------------ search
    def best_splits(self, batch: NodeBatch, entry_sample, entry_weight, identity_entries=False) -> SplitChoice:
        """The best split of every node of ``batch`` (see the module docstring for the rules).

        ``identity_entries`` tells that entry ``e`` is sample ``e`` with its own weight.
        """
        n_feat, m = batch.order.shape
        S = batch.n_nodes
        seg_of_pos = batch.seg_of_pos
        q = np.arange(m) - batch.seg_start[seg_of_pos]
        min_leaf = self.min_samples_leaf
        if self.unit_weight and self.min_weight_leaf > 0:
            min_leaf = max(min_leaf, int(np.ceil(self.min_weight_leaf)))
        # both sides keep min_leaf entries (the right side is re-checked on known values)
        pos_ok = (q >= max(min_leaf, 1)) & (batch.seg_len[seg_of_pos] - q >= min_leaf)
        eligible = self._eligible_features(batch, entry_sample) if self.max_features < n_feat else None

        best = SplitChoice(np.zeros(S, bool), np.full(S, -2, np.intp), np.full(S, np.nan), np.full(S, -np.inf))
        if self.category_width:
            best.category_left = np.zeros((S, self.category_width), bool)
            best.default_left = np.zeros(S, bool)
        block = max(1, BLOCK_ENTRIES // max(m, 1))
        for f0 in range(0, n_feat, block):
            rows = np.arange(f0, min(n_feat, f0 + block))
            order = batch.order[f0 : f0 + block]
            samples = order if identity_entries else entry_sample[order]
            xs = self.feature_values(rows, samples)
            ranks = {}  # categorical rows: re-sorted in place (they only need to stay grouped by node)
            for r in np.flatnonzero(self.is_categorical[rows]):
                order[r], xs[r], ranks[r] = self._categorical_row(batch, order[r], rows[r], entry_sample, entry_weight)
                if not identity_entries:
                    samples[r] = entry_sample[order[r]]
            valid = np.zeros(order.shape, bool)
            np.greater(xs[:, 1:], xs[:, :-1] + FEATURE_THRESHOLD, out=valid[:, 1:])  # NaN compares False
            valid &= pos_ok
            known_end = None
            if self.has_missing[rows].any():
                known_end = self._known_end(xs, batch)
                valid &= np.take_along_axis(known_end, np.broadcast_to(seg_of_pos, order.shape), 1) - \
                    np.arange(m) >= min_leaf
            if eligible is not None:
                valid &= eligible[seg_of_pos][:, rows].T
            if not valid.any():
                continue
            scan = CandidateScan(order, rows, batch, seg_of_pos, q, valid, known_end, entry_sample, entry_weight,
                                 self.unit_weight, identity_entries)
            self._reduce(scan, xs, best, ranks)
        return best

    def _categorical_row(self, batch: NodeBatch, entries, feature, entry_sample, entry_weight):
        """Sort a categorical feature's row per node by category key (see the module docstring).

        ``entries`` lists the batch's entries grouped by node. Returns the re-sorted row, the
        scan values (the category's rank within its node, NaN if missing) and the ranks
        ``(n_nodes, category_width)`` (-1 for categories absent from the node).
        """
        S, width = batch.n_nodes, self.category_width
        node = batch.seg_of_pos
        samples = entry_sample[entries]
        codes = self.XT[feature, samples]
        known = ~np.isnan(codes)
        k_node, k_code = node[known], codes[known].astype(np.intp)
        k_samples, k_weight = samples[known], entry_weight[entries[known]]
        pair = self.criterion.node_statistics(k_node * width + k_code, k_samples, k_weight, S * width)
        node_value = self.criterion.node_statistics(k_node, k_samples, k_weight, S).value
        present = np.flatnonzero(pair.count > 0)
        p_node, p_code = np.divmod(present, width)
        key = self.criterion.category_key(pair.value[present], node_value[p_node])
        by_key = np.lexsort((p_code, key, p_node))  # node-major, then key, then code
        first = np.searchsorted(p_node[by_key], p_node[by_key], side="left")
        rank = np.full(S * width, -1, np.intp)
        rank[present[by_key]] = np.arange(by_key.size) - first
        entry_rank = np.full(entries.shape[0], width, np.intp)  # missing values last
        entry_rank[known] = rank[k_node * width + k_code]
        new = np.argsort(node * (width + 1) + entry_rank, kind="stable")
        values = entry_rank[new].astype(np.float32)
        values[~known[new]] = np.nan
        return entries[new], values, rank.reshape(S, width)

    def _known_end(self, xs: np.ndarray, batch: NodeBatch) -> np.ndarray:
        """(rows, S) end position of the known (non-NaN) values of each (row, node)."""
        csum = np.zeros((xs.shape[0], xs.shape[1] + 1), np.int64)
        np.cumsum(np.isnan(xs), axis=1, out=csum[:, 1:])
        end = batch.seg_start + batch.seg_len
        return end - (csum[:, end] - csum[:, batch.seg_start])

    def _eligible_features(self, batch: NodeBatch, entry_sample) -> np.ndarray:
        """Per node, the features searched (:func:`draw_eligible_features`; constant: all equal or missing)."""
        rows = np.arange(batch.order.shape[0])
        xs_first = self.feature_values(rows, entry_sample[batch.order[:, batch.seg_start]])
        last = batch.seg_start + batch.seg_len - 1
        if self.has_missing.any():
            # last known value of each (feature, node): the NaNs sit at the end of the node
            values = self.feature_values(rows, entry_sample[batch.order])
            known_end = self._known_end(values, batch)
            last = np.maximum(known_end - 1, batch.seg_start)
            xs_last = np.take_along_axis(values, last, axis=1)
        else:
            xs_last = self.feature_values(rows, entry_sample[batch.order[:, last]])
        varies = (xs_last > xs_first + FEATURE_THRESHOLD).T  # (S, F); NaN compares False
        for f in np.flatnonzero(self.is_categorical):  # rows not sorted by code: compare extremes
            codes = self.XT[f, entry_sample[batch.order[f]]]
            varies[:, f] = np.fmax.reduceat(codes, batch.seg_start) > np.fmin.reduceat(codes, batch.seg_start)
        return draw_eligible_features(self.random_state, varies, self.max_features)

    def _reduce(self, scan: CandidateScan, xs, best: SplitChoice, ranks: dict):
        """Fold the block's best split per node into ``best`` (ties: lowest row, then position)."""
        gain = np.asarray(self.criterion.candidate_gain(scan), dtype=np.float64)
        if not gain.flags.writeable or gain.base is not None:
            gain = gain.copy()
        if not self.unit_weight and self.min_weight_leaf > 0:
            w_left, w_known = scan.left_and_known(None)
            w_right = scan.expand(w_known) - w_left
            scan.valid &= (w_left >= self.min_weight_leaf) & (w_right >= self.min_weight_leaf)
        gain[~scan.valid] = -np.inf
        n_rows, m = gain.shape
        S = best.found.shape[0]
        node_max = np.maximum.reduceat(gain, scan.seg_start, axis=1)  # (rows, S)
        top_row = np.argmax(node_max, axis=0)
        top_gain = node_max[top_row, np.arange(S)]
        nodes = np.flatnonzero(top_gain > best.gain)
        if nodes.size == 0:
            return
        # first position of each improved node's top row that attains the maximum
        seg_of_pos = scan.seg_of_pos
        improved = np.zeros(S, bool)
        improved[nodes] = True
        pos = np.flatnonzero(improved[seg_of_pos])
        seg = seg_of_pos[pos]
        row = top_row[seg]
        hit = gain[row, pos] == top_gain[seg]
        first = np.minimum.reduceat(np.where(hit, pos, m), np.flatnonzero(np.r_[True, seg[1:] != seg[:-1]]))
        r = top_row[nodes]
        best.found[nodes] = True
        best.gain[nodes] = top_gain[nodes]
        best.feature[nodes] = scan.features[r]
        best.threshold[nodes] = midpoint_threshold(xs[r, first - 1], xs[r, first])
        if best.category_left is not None:
            best.category_left[nodes] = False
            for k in np.flatnonzero(np.isin(r, list(ranks))):
                self._category_split(scan, best, int(nodes[k]), int(r[k]), int(first[k]), int(xs[r[k], first[k]]),
                                     ranks[int(r[k])])

    def _category_split(self, scan: CandidateScan, best: SplitChoice, node, row, pos, cut, rank):
        """Left category set of a categorical winner: ranks below ``cut`` (the rank at ``pos``).

        Categories absent from the node go to the child with more known training weight.
        """
        start = scan.seg_start[node]
        end = start + scan.seg_len[node] if scan.known_end is None else scan.known_end[row, node]
        weight = scan.entry_weight[scan.order[row, start:end]]
        w_left, w_known = weight[: pos - start].sum(), weight.sum()
        default_left = w_left >= w_known - w_left
        best.threshold[node] = np.nan
        best.default_left[node] = default_left
        best.category_left[node] = np.where(rank[node] >= 0, rank[node] < cut, default_left)
