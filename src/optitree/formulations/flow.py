"""FlowOCT: Aghaei, Gómez & Vayanos's max-flow formulation on threshold-binarized features.

Reference: S. Aghaei, A. Gómez, P. Vayanos, "Strong optimal classification trees",
*Operations Research* 73(4) (2025), problem (5).

Binarization. For every feature ``j`` the candidate thresholds ``t_{j,1} < ... <
t_{j,m_j}`` are, with ``max_thresholds=None``, all midpoints between consecutive
distinct training values — exact: every threshold partition of the training data is
available. With an integer ``max_thresholds`` a feature with more candidates keeps at
most that many, at the quantiles of its training distribution — an **approximation**:
the optimum is over the restricted thresholds only. A binarized feature ``f = (j, q)``
sends sample ``i`` left iff ``x_ij <= t_{j,q}``.

Graph: source → root, node ``n`` → children ``2n`` / ``2n + 1``, every node → sink.
Notation: samples ``i`` (merged rows, weight ``w_i``), nodes ``n ∈ B ∪ T`` (branch
nodes and leaves), ``A(n)`` its ancestors.

.. math::

    \\min\\; \\frac{1}{\\hat L}\\Big(W - \\sum_i w_i \\sum_n s_{in}\\Big) + \\alpha \\sum_{n, f} b_{nf}

    \\begin{aligned}
    & \\textstyle\\sum_f b_{nf} + p_n + \\sum_{m \\in A(n)} p_m = 1 \\ (n \\in B),\\quad
      p_n + \\sum_{m \\in A(n)} p_m = 1 \\ (n \\in T)
      && \\text{(split, predict, or below a prediction)}\\\\
    & \\textstyle\\sum_k w_{nk} = p_n && \\text{(one label where predicting)}\\\\
    & u_{in} = u_{i,2n} + u_{i,2n+1} + s_{in}\\ (n \\in B),\\quad u_{in} = s_{in}\\ (n \\in T),
      \\quad u_{i1} \\le 1 && \\text{(flow conservation)}\\\\
    & u_{i,2n} \\le \\textstyle\\sum_{f:\\, x_i \\le t_f} b_{nf},\\quad
      u_{i,2n+1} \\le \\sum_{f:\\, x_i > t_f} b_{nf} && \\text{(arc capacities)}\\\\
    & s_{in} \\le w_{n, y_i} && \\text{(sink only if correctly classified)}
    \\end{aligned}

``u_{in}`` (block ``z_in``) is the flow of sample ``i`` into node ``n`` (from the
source for the root), ``s_{in}`` (``z_sink``) its flow to the sink at ``n``. The
objective is the misclassified weight, normalised by the baseline error, plus ``α``
per split (:mod:`optitree.formulations._base`); the constant is the model's
``objective_offset``.

Prefix sums. The capacity sums run over every threshold on one side of ``x_ij``: written
directly they have ``O(N · B · F_b)`` non-zeros. With
``b^{cum}_{n,(j,q)} = \\sum_{q' \\ge q} b_{n,(j,q')}`` (block ``b_cum``, one equality row
each) the left capacity is ``\\sum_j b^{cum}_{n,(j, r_{ij})}`` (``r_{ij}`` = first
threshold ``>= x_ij``) and the right one ``\\sum_j (b^{cum}_{n,(j,1)} -
b^{cum}_{n,(j,r_{ij})})``: ``O(N · B · F)`` non-zeros, the same LP (a linear change of
variables). The prefix variables are integral whenever ``b`` is, and are declared
binary: branching on ``b^{cum}_{n,(j,q)}`` ("node ``n`` splits on ``j`` at a threshold
``>= t_{j,q}``") halves a feature's threshold range, a far stronger dichotomy than fixing
one ``b`` (measured: XOR, N = 200, depth 2 found and proven in ~35 s instead of no
solution better than 40 % error in 40 s).

Leaf size. With ``min_samples_leaf > 1`` every sample must be routed to the node that
classifies it: the root inflow is fixed to 1 and a second sink ``z_wrong`` with
``v_{in} <= p_n - w_{n, y_i}`` takes the misclassified flow, so the samples at node
``n`` number ``\\sum_i n_i (s_{in} + v_{in}) \\ge N_{\\min} p_n``. With
``min_samples_leaf == 1`` these rows and columns are left out (the paper's model).
"""

from __future__ import annotations

import functools
import numbers
from typing import NamedTuple

import numpy as np

from greedy import Tree, midpoint_threshold

from ..model import ModelSpec
from ._base import TreeFormulation
from ._heap import PASS_THROUGH, HeapTree

__all__ = ["FlowOCTFormulation"]


class _Binarization(NamedTuple):
    """FlowOCT's binary columns: column ``c`` is ``x[feature[c]] <= value[c]``, grouped by feature."""

    feature: np.ndarray  # (F_b,) feature of each column
    value: np.ndarray  # (F_b,) its threshold
    first: np.ndarray  # (p,) first column of each feature
    n_thr: np.ndarray  # (p,) columns per feature
    rank: np.ndarray  # (n, p) position, within feature j, of the first threshold >= x_ij
    exact: bool  # every midpoint kept (max_thresholds cut none)


class FlowOCTFormulation(TreeFormulation):
    """FlowOCT as a :class:`~optitree.model.ModelSpec` (see module docstring).

    Parameters
    ----------
    problem, merge_duplicates
        See :class:`~optitree.formulations.TreeFormulation`.
    max_thresholds : int or None, default=None
        ``None``: every midpoint (exact). An int: at most that many quantile thresholds
        per feature (an approximation; :attr:`exact_thresholds` tells if it bit).
    required_thresholds : (features, thresholds) arrays, optional
        With ``max_thresholds``: splits that stay available (e.g. the start tree's), each
        as the midpoint of the partition it induces on the training data.

    Attributes
    ----------
    threshold_feature : ndarray of int, shape (F_b,)
        Original feature of each binarized feature (grouped by feature, thresholds ascending).
    threshold_value : ndarray of float, shape (F_b,)
        Its threshold (left iff ``x <= threshold``).
    exact_thresholds : bool
        Whether every training partition by a threshold is available.
    full_routing : bool
        ``min_samples_leaf > 1``: every sample is routed to its prediction node (``z_wrong``).

    Variable blocks: ``b (B, F_b)``, ``p (T,)``, ``w (T, K)``, ``b_cum (B, F_b)``,
    ``z_in (N, T)``, ``z_sink (N, T)`` and, for ``min_samples_leaf > 1``, ``z_wrong (N, T)``;
    heap node ``n`` is row/column ``n - 1`` (``T = 2**(D+1) - 1``).
    """

    name = "flow"
    decomposes_at_root = True
    solve_memory = (300 * 2**20, 800)  # measured: src/benchmarks/memory.py (peak 1.0-1.6 GiB at 1.4 M non-zeros over runs)

    def threshold_rule(self) -> str:
        if self.exact_thresholds:
            return "all midpoints"
        return f"at most {self.max_thresholds} quantile midpoints per feature, plus the start's"

    def __init__(self, problem, *, max_thresholds: int | None = None, required_thresholds=None, **kwargs):
        super().__init__(problem, **kwargs)
        if max_thresholds is not None and (
            not isinstance(max_thresholds, numbers.Integral) or isinstance(max_thresholds, bool) or max_thresholds < 1
        ):
            raise ValueError(f"max_thresholds must be None or an integer >= 1, got {max_thresholds!r}")
        self.max_thresholds = max_thresholds
        self._required_thresholds = required_thresholds
        # the columns are binarized on first use: a fit the exact engine proves builds no MIP and reads none
        self.full_routing = self.min_samples_leaf > 1

    @functools.cached_property
    def _binarization(self) -> "_Binarization":
        """The binarized columns, computed once."""
        max_thresholds, required_thresholds = self.max_thresholds, self._required_thresholds
        feats, thrs = [], []
        exact_thresholds = True
        for j in range(self.n_features):
            vals, counts = np.unique(self.X[:, j], return_counts=True)
            mids = midpoint_threshold(vals[:-1], vals[1:])
            if max_thresholds is not None and mids.size > max_thresholds:
                exact_thresholds = False
                cdf = np.cumsum(counts) / counts.sum()
                levels = np.arange(1, max_thresholds + 1) / (max_thresholds + 1)
                keep = np.minimum(np.searchsorted(cdf, levels), mids.size - 1)
                if required_thresholds is not None:  # the start's own partitions stay available
                    feats_req, thr_req = required_thresholds
                    t = np.asarray(thr_req, float)[np.asarray(feats_req) == j]
                    keep = np.r_[keep, np.minimum(np.searchsorted(vals, t, side="right") - 1, mids.size - 1)]
                mids = mids[np.unique(keep[keep >= 0])]
            feats.append(np.full(mids.size, j)), thrs.append(mids)
        threshold_feature = np.concatenate(feats).astype(np.intp)
        threshold_value = np.concatenate(thrs)
        n_thr = np.bincount(threshold_feature, minlength=self.n_features)
        first = np.r_[0, np.cumsum(n_thr)[:-1]]  # first binarized index of each feature
        # r_ij: position (within feature j) of the first threshold >= x_ij
        rank = np.column_stack([
            np.searchsorted(threshold_value[first[j]: first[j] + n_thr[j]], self.X[:, j])
            for j in range(self.n_features)
        ])
        return _Binarization(threshold_feature, threshold_value, first, n_thr, rank, exact_thresholds)

    @property
    def threshold_feature(self) -> np.ndarray:
        """Feature of each binarized column (threshold), ``(F_b,)``."""
        return self._binarization.feature

    @property
    def threshold_value(self) -> np.ndarray:
        """Threshold of each binarized column: ``x[threshold_feature] <= threshold_value`` goes left."""
        return self._binarization.value

    @property
    def exact_thresholds(self) -> bool:
        """Whether every midpoint of every feature is a threshold (``max_thresholds`` cut none)."""
        return self.max_thresholds is None or self._binarization.exact

    @property
    def n_thresholds(self) -> int:
        """``F_b``, the number of binarized features."""
        return self.threshold_value.size

    @property
    def n_nodes(self) -> int:
        return 2 ** (self.depth + 1) - 1

    # ------------------------------------------------------------------ size
    def estimate_size(self) -> tuple[int, int, int]:
        N, K, B, L, T, Fb = self.n_samples, self.n_classes, self.n_branch, self.n_leaves, self.n_nodes, self.n_thresholds
        n_sinks = 3 if self.full_routing else 2
        r, m = self._binarization.rank, self._binarization.n_thr[None, :]
        left_entries = int((r < m).sum())
        right_entries = int(((r > 0) & (r < m)).sum()) * 2 + int(((r == m) & (m > 0)).sum())
        sum_depth = sum(d * 2**d for d in range(self.depth + 1))
        cols = 2 * B * Fb + T + T * K + n_sinks * N * T
        rows = 2 * T + B * Fb + N * T + 2 * N * B + N * T
        nnz = (
            B * Fb + T + sum_depth  # path
            + T * (K + 1)  # label
            + B * (3 * Fb - int((self._binarization.n_thr > 0).sum()))  # cumulative splits
            + N * (B * 4 + L * 2)  # conservation
            + B * (2 * N + left_entries + right_entries)  # arc capacities
            + 2 * N * T  # sink capacities
        )
        if self.full_routing:
            rows += N * T + T
            nnz += N * T + 3 * N * T + T * (2 * N + 1)
        return int(rows), int(cols), int(nnz)

    # ------------------------------------------------------------------ model
    def build(self) -> ModelSpec:
        N, K, B, T, Fb = self.n_samples, self.n_classes, self.n_branch, self.n_nodes, self.n_thresholds
        scale = self.model_error_scale
        spec = ModelSpec(f"flowoct_depth{self.depth}")
        spec.objective_offset = self.total_weight * scale
        b = spec.add_vars("b", (B, Fb), ub=1.0, integer=True, obj=self.alpha)
        p = spec.add_vars("p", T, ub=1.0, integer=True)
        w = spec.add_vars("w", (T, K), ub=1.0, integer=True)
        cum = spec.add_vars("b_cum", (B, Fb), ub=1.0, integer=True)
        root_lb = np.zeros((N, T))
        if self.full_routing:
            root_lb[:, 0] = 1.0
        zin = spec.add_vars("z_in", (N, T), lb=root_lb, ub=1.0)
        zsink = spec.add_vars("z_sink", (N, T), ub=1.0, obj=np.repeat(-self.model_weight * scale, T).reshape(N, T))
        zwrong = spec.add_vars("z_wrong", (N, T), ub=1.0) if self.full_routing else None
        nodes = np.arange(1, T + 1)

        # sum_f b_nf [n in B] + p_n + sum_{m in A(n)} p_m = 1
        rows, cols = [np.repeat(np.arange(B), Fb), np.arange(T)], [b.ravel(), p]
        for s in range(1, self.depth + 1):
            has = nodes >> s >= 1
            rows.append(nodes[has] - 1), cols.append(p[(nodes[has] >> s) - 1])
        rows, cols = np.concatenate(rows), np.concatenate(cols)
        spec.add_rows("path", T, rows, cols, np.ones(rows.size), 1.0, 1.0)
        # sum_k w_nk - p_n = 0
        spec.add_rows("label", T, np.repeat(np.arange(T), K + 1), np.column_stack([w, p[:, None]]).ravel(),
                      np.tile(np.r_[np.ones(K), -1.0], T), 0.0, 0.0)
        # b_cum[n, f] - b_cum[n, f+1] - b[n, f] = 0 (no successor after a feature's last threshold)
        has_next = np.ones(Fb, bool)
        has_next[self._binarization.first[self._binarization.n_thr > 0] + self._binarization.n_thr[self._binarization.n_thr > 0] - 1] = False
        r = np.arange(B * Fb).reshape(B, Fb)
        nxt = np.flatnonzero(has_next)
        spec.add_rows(
            "cumulative_split", B * Fb,
            np.r_[r.ravel(), r.ravel(), r[:, nxt].ravel()],
            np.r_[cum.ravel(), b.ravel(), cum[:, nxt + 1].ravel()],
            np.r_[np.ones(B * Fb), -np.ones(B * Fb), -np.ones(B * nxt.size)], 0.0, 0.0,
        )
        # flow conservation: z_in[i,n] - z_sink[i,n] (- z_wrong[i,n]) - [n in B](z_in[i,2n] + z_in[i,2n+1]) = 0
        r = np.arange(N * T).reshape(N, T)
        rows = [r.ravel(), r.ravel(), r[:, :B].ravel(), r[:, :B].ravel()]
        cols = [zin.ravel(), zsink.ravel(), zin[:, 1:B * 2 + 1:2].ravel(), zin[:, 2:B * 2 + 2:2].ravel()]
        vals = [np.ones(N * T), -np.ones(N * T), -np.ones(N * B), -np.ones(N * B)]
        if self.full_routing:
            rows.append(r.ravel()), cols.append(zwrong.ravel()), vals.append(-np.ones(N * T))
        spec.add_rows("flow_conservation", N * T, np.concatenate(rows), np.concatenate(cols), np.concatenate(vals),
                      0.0, 0.0)
        self._add_capacities(spec, zin, cum)
        # z_sink[i,n] - w[n, y_i] <= 0
        r = np.arange(N * T)
        spec.add_rows("sink_capacity", N * T, np.repeat(r, 2),
                      np.column_stack([zsink.ravel(), w[:, self.y].T.ravel()]).ravel(),
                      np.tile([1.0, -1.0], N * T), -np.inf, 0.0)
        if self.full_routing:
            # z_wrong[i,n] - p_n + w[n, y_i] <= 0
            spec.add_rows("wrong_capacity", N * T, np.repeat(r, 3),
                          np.column_stack([zwrong.ravel(), np.tile(p, N), w[:, self.y].T.ravel()]).ravel(),
                          np.tile([1.0, -1.0, 1.0], N * T), -np.inf, 0.0)
            # sum_i n_i (z_sink[i,n] + z_wrong[i,n]) - Nmin p_n >= 0
            node_of = np.tile(np.arange(T), N)
            spec.add_rows("leaf_min_size", T, np.r_[node_of, node_of, np.arange(T)],
                          np.r_[zsink.ravel(), zwrong.ravel(), p],
                          np.r_[np.repeat(self.count, T), np.repeat(self.count, T),
                                np.full(T, -float(self.min_samples_leaf))], 0.0, np.inf)
        self.spec = spec
        self.vars = {name: blk.indices for name, blk in spec.var_blocks.items()}
        return spec

    def _add_capacities(self, spec, zin, cum):
        """Left/right arc capacities through the prefix sums ``b_cum`` (row ``n0 * N + i``)."""
        N, B = self.n_samples, self.n_branch
        r, m, first = self._binarization.rank, self._binarization.n_thr[None, :], self._binarization.first[None, :]
        li, lj = np.nonzero(r < m)  # some threshold of j is >= x_ij: left capacity b_cum[n, first_j + r_ij]
        lf = first[0, lj] + r[li, lj]
        ri, rj = np.nonzero(r > 0)  # some threshold of j is < x_ij: + b_cum[n, first_j]
        pi, pj = np.nonzero((r > 0) & (r < m))  # ... minus b_cum[n, first_j + r_ij]
        pf = first[0, pj] + r[pi, pj]
        node0 = np.arange(B)[:, None]
        row = lambda i: (node0 * N + i[None, :]).ravel()  # noqa: E731
        samples = np.arange(N)
        spec.add_rows(
            "left_capacity", B * N,
            np.r_[row(samples), row(li)],
            np.r_[zin[:, 1:2 * B:2].T.ravel(), cum[:, lf].ravel()],
            np.r_[np.ones(B * N), -np.ones(B * li.size)], -np.inf, 0.0,
        )
        spec.add_rows(
            "right_capacity", B * N,
            np.r_[row(samples), row(ri), row(pi)],
            np.r_[zin[:, 2:2 * B + 1:2].T.ravel(), cum[:, first[0, rj]].ravel(), cum[:, pf].ravel()],
            np.r_[np.ones(B * N), -np.ones(B * ri.size), np.ones(B * pi.size)], -np.inf, 0.0,
        )

    # ------------------------------------------------------------------ trees
    def _threshold_index(self, j: int, v_left: float, v_right: float, target: float) -> int | None:
        """Binarized index of a threshold of feature ``j`` in ``[v_left, v_right)`` closest to ``target``."""
        lo, n = self._binarization.first[j], self._binarization.n_thr[j]
        t = self.threshold_value[lo: lo + n]
        ok = np.flatnonzero((t >= v_left) & (t < v_right))
        if not ok.size:
            return None
        return int(lo + ok[np.abs(t[ok] - target).argmin()])

    def _representable(self, tree: Tree) -> tuple[Tree, int]:
        """Snap every threshold of a canonical tree into the threshold set.

        At each split (top-down, on the samples the snapped ancestors send there) a
        modelled threshold inducing the same partition is used when one exists (the
        one closest to the original); otherwise the nearest modelled threshold, which
        changes the tree. Returns the tree and the number of thresholds that moved.
        """
        if self.exact_thresholds:
            return tree, 0
        thr = tree.threshold.copy()
        moved = 0
        samples = [np.zeros(0, np.intp)] * tree.node_count
        samples[0] = np.arange(self.n_samples)
        for node in np.flatnonzero(~tree.is_leaf):  # parents before children
            j, idx = tree.feature[node], samples[node]
            v = self.X[idx, j]
            left = v <= thr[node]
            q = None
            if left.any() and not left.all():
                q = self._threshold_index(j, v[left].max(), v[~left].min(), thr[node])
            if q is None:  # canonical splits use non-constant features, which have thresholds
                lo, n = self._binarization.first[j], self._binarization.n_thr[j]
                q = int(lo + np.abs(self.threshold_value[lo: lo + n] - thr[node]).argmin())
                moved += 1
            thr[node] = self.threshold_value[q]
            left = v <= thr[node]
            samples[tree.children_left[node]], samples[tree.children_right[node]] = idx[left], idx[~left]
        if not moved:
            return tree, 0
        d = tree.to_dict()
        d["threshold"] = np.where(tree.is_leaf, np.nan, thr)
        return Tree.from_dict(d), moved

    def _start_columns(self, tree: Tree) -> np.ndarray:
        spec, v = self.spec, self.vars
        N = self.n_samples
        x = np.zeros(spec.n_cols)
        heap = self.heap_ids(tree)
        samples = self._node_samples(tree)
        label = tree.node_class  # its leaf_class, or the majority class
        for node in np.flatnonzero(~tree.is_leaf):
            j, idx = tree.feature[node], samples[node]
            vals = self.X[idx, j]
            left = vals <= tree.threshold[node]
            # a side without samples (a decoded tree's split that separates none): the tree's own threshold
            q = self._threshold_index(j, vals[left].max(initial=-np.inf), vals[~left].min(initial=np.inf),
                                      tree.threshold[node])
            if q is None:
                raise ValueError("start tree has a split outside the modelled thresholds; use prepare_start first")
            n0 = heap[node] - 1
            x[v["b"][n0, q]] = 1.0
            x[v["b_cum"][n0, self._binarization.first[j]: q + 1]] = 1.0
        leaves = np.flatnonzero(tree.is_leaf)
        x[v["p"][heap[leaves] - 1]] = 1.0
        x[v["w"][heap[leaves] - 1, label[leaves]]] = 1.0
        # flows: along each sample's path to its leaf; to the sink there if correctly classified
        leaf_of = tree.apply(self.X)
        hid = heap[leaf_of]
        correct = label[leaf_of] == self.y
        routed = np.ones(N, bool) if self.full_routing else correct
        samples_idx = np.arange(N)
        for s in range(self.depth + 1):
            on = routed & ((hid >> s) >= 1)
            x[v["z_in"][samples_idx[on], (hid[on] >> s) - 1]] = 1.0
        x[v["z_sink"][samples_idx[correct], hid[correct] - 1]] = 1.0
        if self.full_routing:
            x[v["z_wrong"][samples_idx[~correct], hid[~correct] - 1]] = 1.0
        return x

    def root_split_columns(self):
        """``b[root, q]`` per binarized feature ``q`` (:meth:`TreeFormulation.root_split_columns`)."""
        return np.asarray(self.vars["b"])[0], self.threshold_feature, self.threshold_value

    def node_choices(self, node):
        """``b[node, :]`` and ``p[node]`` (:meth:`TreeFormulation.node_choices`)."""
        self._require_spec()
        return np.asarray(self.vars["b"])[node - 1].astype(np.intp), int(np.asarray(self.vars["p"])[node - 1])

    def forbid_features(self, spec, allowed):
        """``b`` and ``b_cum`` of the features not allowed at their node fixed to 0 (:meth:`TreeFormulation.forbid_features`)."""
        banned = ~allowed[:, self.threshold_feature]
        for name in ("b", "b_cum"):
            spec.var_blocks[name].ub[banned.ravel()] = 0.0
        return int(banned.sum())

    def split_groups(self):
        """``b[n, :]`` and ``p[n]`` (one path row each) (:meth:`TreeFormulation.split_groups`)."""
        b = np.asarray(self.vars["b"])
        p = np.asarray(self.vars["p"])[: b.shape[0]]
        return np.c_[b, p], np.r_[self.threshold_feature, -1]

    def split_columns(self):
        """``b[n, q]`` on the feature of binarized column ``q`` (:meth:`TreeFormulation.split_columns`)."""
        b = np.asarray(self.vars["b"])
        return b.ravel(), np.repeat(np.arange(b.shape[0]), b.shape[1]), np.tile(self.threshold_feature, b.shape[0])

    def _heap_from_solution(self, x) -> HeapTree:
        b = self.spec.block_values(x, "b")
        p = self.spec.block_values(x, "p") > 0.5
        B = self.n_branch
        feature = np.full(B, PASS_THROUGH, np.intp)
        threshold = np.zeros(B)
        nodes = np.arange(1, B + 1)
        blocked = p[:B].copy()  # predicting here or above: no split
        for s in range(1, self.depth):
            has = (nodes >> s) >= 1
            blocked[has] |= p[(nodes[has] >> s) - 1]
        split = np.flatnonzero(~blocked)
        if self.n_thresholds:  # all features constant: no split variable, every node passes through
            q = b[split].argmax(axis=1)
            feature[split] = self.threshold_feature[q]
            threshold[split] = self.threshold_value[q]
        # a predicting node's label goes to the heap leaf its pass-through chain (always right) reaches
        predicting = np.flatnonzero(p) + 1
        below = self.depth - np.floor(np.log2(predicting)).astype(np.int64)
        leaf_class = np.zeros(self.n_leaves, np.intp)
        leaf_class[((predicting + 1) << below) - 1 - self.n_leaves] = self.spec.block_values(x, "w")[p].argmax(axis=1)
        return self._heap(feature, threshold, leaf_class=leaf_class)
