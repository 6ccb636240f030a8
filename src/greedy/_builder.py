"""The one tree-growth loop of greedy CART: depth-first (level by level) and best-first growth.

The loop is independent of how a node's best split is searched: a *splitter* does that
(:class:`greedy._splitter.ExactSplitter`, the sorted scan; :class:`greedy._hist.HistSplitter`,
histograms of binned features), and a criterion (:mod:`greedy._criteria`, one registry for
both) gives node statistics and split scores. A new split search is a new splitter class
with the interface documented in :class:`TreeBuilder`.

Both builders follow scikit-learn's ``DepthFirstTreeBuilder`` / ``BestFirstTreeBuilder``
(``sklearn/tree/_tree.pyx``) rule for rule:

* a node is a leaf without search when ``depth >= max_depth``, ``n < min_samples_split``,
  ``n < 2 min_samples_leaf``, ``w < 2 min_weight_leaf`` or ``impurity <= eps``
  (``Criterion.pure_impurity``: ``eps`` in y's squared units for targets below 1 in magnitude,
  where scikit-learn's absolute ``eps`` would make every node of tiny targets a leaf);
* otherwise its best split (:mod:`greedy._splitter`) is kept unless
  ``improvement + eps < min_impurity_decrease``, with the weighted impurity decrease

  .. math:: \\Delta = \\frac{w_t}{w}\\Big(\\mathrm{imp}_t - \\frac{w_R}{w_t}\\mathrm{imp}_R
            - \\frac{w_L}{w_t}\\mathrm{imp}_L\\Big)

  (``w`` the total training weight, ``eps`` the float64 machine epsilon).

A node's split depends on its own samples only, so the classic depth-first stack algorithm
and a level-by-level computation produce the same tree; the depth-first builder searches all
open nodes of a level at once and numbers the nodes in depth-first preorder at the end (node
ids equal scikit-learn's). The best-first builder (``max_leaf_nodes``) keeps a priority queue
of evaluated nodes keyed on ``Δ`` and expands the best ``max_leaf_nodes - 1``; children are
numbered in creation order (left, then right), like scikit-learn. Among equal ``Δ`` the node
created first is expanded first.

Missing values: a sample whose split value is NaN follows both branches, with its weight
multiplied by ``w_L / (w_L + w_R)`` on the left and ``w_R / (w_L + w_R)`` on the right, where
``w_L, w_R`` are the known-value weights sent left and right (C4.5's fractional instances);
the fraction is stored in ``Tree.missing_left``.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from ._criteria import Criterion, NodeStatistics
from ._prune import collapse
from ._splitter import NodeBatch, SplitChoice
from ._tree import LEAF_FEATURE, TREE_LEAF, Tree

EPSILON = np.finfo(np.float64).eps


@dataclass
class GrowthParams:
    """Stopping rules, already resolved to absolute numbers."""

    max_depth: int
    min_samples_split: int
    min_samples_leaf: int
    min_weight_leaf: float
    min_impurity_decrease: float
    max_leaf_nodes: int | None = None


class _Entries:
    """Growable store of entries ``(sample, weight)``; missing-value copies are appended."""

    def __init__(self, sample, weight, identity: bool):
        self.sample = np.asarray(sample, np.intp)
        self.weight = np.asarray(weight, np.float64)
        self.identity = identity  # entry e is sample e with its full weight

    def append(self, sample, weight) -> np.ndarray:
        self.identity = False
        start = self.sample.shape[0]
        self.sample = np.concatenate([self.sample, sample])
        self.weight = np.concatenate([self.weight, weight])
        return np.arange(start, self.sample.shape[0])


@dataclass
class _Routing:
    """Where the entries of the splitting nodes of a batch go."""

    entry: np.ndarray  # entries of splitting nodes, grouped by node
    node: np.ndarray  # their node (segment) index
    left: np.ndarray  # goes left (meaningless where missing)
    missing: np.ndarray
    missing_left: np.ndarray  # (n_nodes,) left fraction of missing weight


@dataclass
class _Evaluation:
    """Best splits of a batch, and the resulting children's statistics."""

    choice: SplitChoice
    splits: np.ndarray  # (n_nodes,) bool: the node splits when expanded
    improvement: np.ndarray  # (n_nodes,)
    children: NodeStatistics  # rows 2s (left) and 2s+1 (right) for node s
    routing: _Routing  # directions of the entries of the nodes with a split found


class _NodeTable:
    """Node records in creation order (temporary ids)."""

    def __init__(self, n_values: int, category_width: int):
        self.n_values = n_values
        self.category_width = category_width
        self.value, self.impurity, self.count, self.weighted = [], [], [], []
        self.size = 0
        self.feature: dict[int, int] = {}
        self.threshold: dict[int, float] = {}
        self.missing_left: dict[int, float] = {}
        self.left: dict[int, int] = {}
        self.right: dict[int, int] = {}
        self.category_left: dict[int, np.ndarray] = {}
        self.default_left: dict[int, bool] = {}

    def add(self, stats: NodeStatistics, rows) -> np.ndarray:
        """Append nodes whose statistics are ``stats[rows]``; return their ids."""
        k = len(rows)
        ids = np.arange(self.size, self.size + k)
        self.value.append(stats.value[rows])
        self.impurity.append(stats.impurity[rows])
        self.count.append(stats.count[rows])
        self.weighted.append(stats.weighted_n[rows])
        self.size += k
        return ids

    def set_splits(self, nodes, choice, missing_left, left, right):
        """Record the splits ``choice`` (one row per node of ``nodes``) and the children ids."""
        for k, (i, f, t, m, l, r) in enumerate(zip(nodes.tolist(), choice.feature.tolist(), choice.threshold.tolist(),
                                                   missing_left.tolist(), left.tolist(), right.tolist())):
            self.feature[i], self.threshold[i], self.missing_left[i] = f, t, m
            self.left[i], self.right[i] = l, r
            if choice.category_left is not None and choice.category_left[k].any():
                self.category_left[i] = choice.category_left[k]
                self.default_left[i] = bool(choice.default_left[k])

    def to_tree(self, n_features: int, task: str, preorder: bool, with_missing: bool) -> Tree:
        n = self.size
        left = np.full(n, TREE_LEAF, np.intp)
        right = np.full(n, TREE_LEAF, np.intp)
        feature = np.full(n, LEAF_FEATURE, np.intp)
        threshold = np.full(n, np.nan)
        missing_left = np.zeros(n)
        ids = np.fromiter(self.left.keys(), np.intp, len(self.left))
        if ids.size:
            left[ids] = np.fromiter(self.left.values(), np.intp, ids.size)
            right[ids] = np.fromiter(self.right.values(), np.intp, ids.size)
            feature[ids] = np.fromiter(self.feature.values(), np.intp, ids.size)
            threshold[ids] = np.fromiter(self.threshold.values(), np.float64, ids.size)
            missing_left[ids] = np.fromiter(self.missing_left.values(), np.float64, ids.size)
        category_left = default_left = None
        if self.category_width:
            category_left = np.zeros((n, self.category_width), bool)
            default_left = np.zeros(n, bool)
            for i, mask in self.category_left.items():
                category_left[i], default_left[i] = mask, self.default_left[i]
        value = np.concatenate(self.value).reshape(n, self.n_values)
        impurity = np.concatenate(self.impurity)
        count = np.concatenate(self.count)
        weighted = np.concatenate(self.weighted)
        tree = Tree(left, right, feature, threshold, value, n_features=n_features, task=task, n_node_samples=count,
                    weighted_n_node_samples=weighted, impurity=impurity, category_left=category_left,
                    default_left=default_left, missing_left=missing_left if with_missing else None)
        return collapse(tree) if preorder else tree


class TreeBuilder:
    """Grow a :class:`~greedy.Tree` with a splitter and a criterion.

    Parameters
    ----------
    splitter : ExactSplitter, HistSplitter, or any object with
        ``sorted_order(samples) -> order`` (rows of entry ids, each row kept in its order when
        nodes split), ``best_splits(batch, entry_sample, entry_weight, identity_entries) ->
        SplitChoice``, ``goes_left(samples, nodes, choice) -> (left, missing)``,
        ``n_features`` and ``category_width`` (see :class:`greedy._splitter.ExactSplitter`).
    criterion : Criterion
    params : GrowthParams
    task : {"classification", "regression"}
    with_missing : bool
        Store ``missing_left`` in the tree (the estimator supports NaN at predict time).
    """

    def __init__(self, splitter, criterion: Criterion, params: GrowthParams, task: str, with_missing: bool = False):
        self.splitter = splitter
        self.criterion = criterion
        self.params = params
        self.task = task
        self.with_missing = with_missing

    def build(self, sample_weight: np.ndarray) -> Tree:
        """Grow the tree on all samples with positive weight (zero-weight samples are ignored)."""
        samples = np.flatnonzero(sample_weight > 0)
        self.total_weight = float(sample_weight.sum())
        self.entries = _Entries(samples, sample_weight[samples], samples.size == sample_weight.size)
        self.table = _NodeTable(self.criterion.n_values, self.splitter.category_width)
        root_stats = self.criterion.node_statistics(np.zeros(samples.size, np.intp), self.entries.sample,
                                                    self.entries.weight, 1)
        self.table.add(root_stats, [0])
        batch = NodeBatch(self.splitter.sorted_order(samples), np.array([0]), np.array([samples.size]))
        if self._is_open(root_stats, np.array([0]), 0)[0]:
            if self.params.max_leaf_nodes is None:
                self._grow_depth_first(batch, root_stats)
            else:
                self._grow_best_first(batch, root_stats)
        preorder = self.params.max_leaf_nodes is None
        return self.table.to_tree(self.splitter.n_features, self.task, preorder, self.with_missing)

    # ------------------------------------------------------------------ rules
    def _is_open(self, stats: NodeStatistics, rows, depth) -> np.ndarray:
        """Nodes that may be split (scikit-learn's pre-search leaf tests all fail)."""
        p = self.params
        count, weighted, impurity = stats.count[rows], stats.weighted_n[rows], stats.impurity[rows]
        leaf = (
            (np.asarray(depth) >= p.max_depth)
            | (count < p.min_samples_split)
            | (count < 2 * p.min_samples_leaf)
            | (weighted < 2 * p.min_weight_leaf)
            | (impurity <= self.criterion.pure_impurity)
        )
        return ~leaf

    def _route(self, batch: NodeBatch, choice: SplitChoice, nodes: np.ndarray) -> _Routing:
        """Directions of the entries of ``nodes`` (a boolean mask over the batch's nodes)."""
        seg_of_pos = batch.seg_of_pos
        sel = nodes[seg_of_pos]
        entry = batch.order[0][sel]
        node = seg_of_pos[sel]
        sample = self.entries.sample[entry]
        left, missing = self.splitter.goes_left(sample, node, choice)
        w = self.entries.weight[entry]
        known = ~missing
        w_left = np.bincount(node[known & left], weights=w[known & left], minlength=batch.n_nodes)
        w_right = np.bincount(node[known & ~left], weights=w[known & ~left], minlength=batch.n_nodes)
        total = w_left + w_right
        missing_left = np.divide(w_left, total, out=np.full(batch.n_nodes, 0.5), where=total > 0)
        return _Routing(entry, node, left & known, missing, missing_left)

    def _children_entries(self, r: _Routing):
        """(entry, child, weight) of the children of the routed nodes; child = 2 node + is_right."""
        to_left = r.left | r.missing
        to_right = ~r.left | r.missing
        w = self.entries.weight[r.entry]
        frac = r.missing_left[r.node]
        entry = np.concatenate([r.entry[to_left], r.entry[to_right]])
        child = np.concatenate([2 * r.node[to_left], 2 * r.node[to_right] + 1])
        weight = np.concatenate([np.where(r.missing, w * frac, w)[to_left],
                                 np.where(r.missing, w * (1 - frac), w)[to_right]])
        return entry, child, weight

    def _evaluate(self, batch: NodeBatch, impurity: np.ndarray, weight: np.ndarray) -> _Evaluation:
        """Search the best splits of the batch's nodes (with these impurities and weights)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            choice = self.splitter.best_splits(batch, self.entries.sample, self.entries.weight,
                                               identity_entries=self.entries.identity)
        S = batch.n_nodes
        routing = self._route(batch, choice, choice.found)
        entry, child, child_weight = self._children_entries(routing)
        with np.errstate(divide="ignore", invalid="ignore"):  # children of nodes without a split are empty
            children = self.criterion.node_statistics(child, self.entries.sample[entry], child_weight, 2 * S)
        wl, wr = children.weighted_n[0::2], children.weighted_n[1::2]
        with np.errstate(invalid="ignore", divide="ignore"):
            improvement = (weight / self.total_weight) * (
                impurity - wr / weight * children.impurity[1::2] - wl / weight * children.impurity[0::2]
            )
        splits = choice.found & ~(improvement + EPSILON < self.params.min_impurity_decrease)
        improvement = np.where(splits, improvement, 0.0)
        return _Evaluation(choice, splits, improvement, children, routing)

    def _partition(self, batch: NodeBatch, ev: _Evaluation, child_open: np.ndarray) -> NodeBatch:
        """Batch of the open children (``child_open`` (S, 2)) of the batch's splitting nodes.

        Open left children come first, then open right children, each in node order; rows stay
        sorted because boolean selection keeps the row order.
        """
        r = ev.routing
        keep = ev.splits[r.node]
        r_node, r_entry, r_left, r_missing = r.node[keep], r.entry[keep], r.left[keep], r.missing[keep]
        to_left = (r_left | r_missing) & child_open[r_node, 0]
        to_right = (~r_left | r_missing) & child_open[r_node, 1]
        order = batch.order
        n_feat = order.shape[0]
        n_entries = self.entries.sample.shape[0]
        if not r_missing.any():
            code = np.full(n_entries, 2, np.int8)  # 0: open left child, 1: open right child, 2: dropped
            code[r_entry[to_left]] = 0
            code[r_entry[to_right]] = 1
            code_of = code[order]
            left_part = order[code_of == 0]
            right_part = order[code_of == 1]
        else:
            m_entry, m_node = r_entry[r_missing], r_node[r_missing]
            w, frac = self.entries.weight[m_entry], r.missing_left[m_node]
            s = self.entries.sample[m_entry]
            left_id = np.arange(n_entries)
            right_id = np.arange(n_entries)
            left_id[m_entry] = self.entries.append(s, w * frac)
            right_id[m_entry] = self.entries.append(s, w * (1 - frac))
            in_left = np.zeros(n_entries, bool)
            in_left[r_entry[to_left]] = True
            in_right = np.zeros(n_entries, bool)
            in_right[r_entry[to_right]] = True
            left_part = left_id[order[in_left[order]]]
            right_part = right_id[order[in_right[order]]]
        n_left = np.bincount(r_node[to_left], minlength=batch.n_nodes)[child_open[:, 0]]
        n_right = np.bincount(r_node[to_right], minlength=batch.n_nodes)[child_open[:, 1]]
        seg_len = np.concatenate([n_left, n_right])
        seg_start = np.concatenate([[0], np.cumsum(seg_len)[:-1]]).astype(np.intp)
        new_order = np.empty((n_feat, seg_len.sum()), order.dtype)
        n_l = left_part.size // max(n_feat, 1)
        new_order[:, :n_l] = left_part.reshape(n_feat, n_l)
        new_order[:, n_l:] = right_part.reshape(n_feat, -1)
        return NodeBatch(new_order, seg_start, seg_len)

    def _record_children(self, nodes, depth, ev: _Evaluation, splitting):
        """Add the children of the batch's ``splitting`` nodes (indices) to the table."""
        rows = np.stack([2 * splitting, 2 * splitting + 1], axis=1).ravel()
        ids = self.table.add(ev.children, rows)
        left, right = ids[0::2], ids[1::2]
        self.table.set_splits(nodes[splitting], ev.choice.take(splitting), ev.routing.missing_left[splitting],
                             left, right)
        open_rows = self._is_open(ev.children, rows, np.repeat(depth[splitting] + 1, 2))
        return left, right, open_rows.reshape(-1, 2)

    @staticmethod
    def _open_children(values, splitting, open_pair):
        """Per-child ``values`` (rows 2s, 2s+1) of the open children, left ones first."""
        return np.concatenate([values[2 * splitting][open_pair[:, 0]], values[2 * splitting + 1][open_pair[:, 1]]])

    # ------------------------------------------------------------------ growth
    def _grow_depth_first(self, batch: NodeBatch, root: NodeStatistics):
        nodes, depth = np.array([0]), np.array([0])
        impurity, weight = root.impurity, root.weighted_n
        while nodes.size:
            ev = self._evaluate(batch, impurity, weight)
            splitting = np.flatnonzero(ev.splits)
            if splitting.size == 0:
                break
            left, right, open_pair = self._record_children(nodes, depth, ev, splitting)
            child_open = np.zeros((batch.n_nodes, 2), bool)
            child_open[splitting] = open_pair
            batch = self._partition(batch, ev, child_open)
            nodes = np.concatenate([left[open_pair[:, 0]], right[open_pair[:, 1]]])
            d = np.repeat(depth[splitting] + 1, 2)
            depth = self._open_children(d, np.arange(splitting.size), open_pair)
            impurity = self._open_children(ev.children.impurity, splitting, open_pair)
            weight = self._open_children(ev.children.weighted_n, splitting, open_pair)

    def _grow_best_first(self, batch: NodeBatch, root: NodeStatistics):
        heap: list = []
        self._push_evaluated(heap, batch, np.array([0]), np.array([0]), root.impurity, root.weighted_n)
        budget = self.params.max_leaf_nodes - 1
        while heap and budget > 0:
            _, node, depth, sub, ev = heapq.heappop(heap)
            budget -= 1
            nodes, depths, zero = np.array([node]), np.array([depth]), np.array([0])
            left, right, open_pair = self._record_children(nodes, depths, ev, zero)
            child = self._partition(sub, ev, open_pair)
            ids = np.concatenate([left[open_pair[:, 0]], right[open_pair[:, 1]]])
            if ids.size:
                self._push_evaluated(heap, child, ids, np.full(ids.size, depth + 1),
                                     self._open_children(ev.children.impurity, zero, open_pair),
                                     self._open_children(ev.children.weighted_n, zero, open_pair))

    def _push_evaluated(self, heap, batch: NodeBatch, nodes, depth, impurity, weight):
        """Evaluate a batch and push its splitting nodes, each with its own one-node batch."""
        ev = self._evaluate(batch, impurity, weight)
        for s in np.flatnonzero(ev.splits):
            start, length = batch.seg_start[s], batch.seg_len[s]
            sub = NodeBatch(batch.order[:, start : start + length], np.array([0]), np.array([length]))
            r = ev.routing
            mine = r.node == s
            one = _Evaluation(
                ev.choice.take(slice(s, s + 1)),
                ev.splits[s : s + 1],
                ev.improvement[s : s + 1],
                NodeStatistics(*(getattr(ev.children, k)[2 * s : 2 * s + 2]
                                 for k in ("value", "impurity", "weighted_n", "count"))),
                _Routing(r.entry[mine], np.zeros(int(mine.sum()), np.intp), r.left[mine], r.missing[mine],
                         r.missing_left[s : s + 1]),
            )
            heapq.heappush(heap, (-float(ev.improvement[s]), int(nodes[s]), int(depth[s]), sub, one))
