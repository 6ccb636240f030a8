"""OCT: Bertsimas & Dunn's univariate optimal classification tree (big-M routing).

Reference: D. Bertsimas, J. Dunn, "Optimal classification trees", *Machine Learning*
106 (2017) 1039–1082, formulation (24).

Features are scaled to ``[0, 1]``. Notation: samples ``i`` (merged rows, weight
``w_i``, multiplicity ``n_i``), features ``j``, branch nodes ``m = 1..B``, leaves
``t``, classes ``k``; ``A_L(t)`` / ``A_R(t)`` are the ancestors of ``t`` whose left /
right branch leads to ``t``.

.. math::

    \\min\\; \\frac{1}{\\hat L} \\sum_t L_t + \\alpha \\sum_m d_m

    \\begin{aligned}
    & \\textstyle\\sum_j a_{mj} = d_m,\\quad 0 \\le b_m \\le d_m,\\quad d_m \\le d_{p(m)}
        && \\text{(one feature per split; splits form a tree)}\\\\
    & \\textstyle\\sum_t z_{it} = 1,\\quad z_{it} \\le l_t,\\quad
        \\sum_i n_i z_{it} \\ge N_{\\min} l_t
        && \\text{(assignment, leaf size)}\\\\
    & l_t \\le d_m \\quad (m \\in A_L(t))
        && \\text{(a non-splitting node sends everything right)}\\\\
    & \\textstyle\\sum_j a_{mj}(x_{ij} + \\varepsilon_j) \\le b_m + M^L_i (1 - z_{it})
        \\quad (m \\in A_L(t))
        && \\text{(left routing)}\\\\
    & \\textstyle\\sum_j a_{mj} x_{ij} \\ge b_m - M^R_i (1 - z_{it}) \\quad (m \\in A_R(t))
        && \\text{(right routing)}\\\\
    & \\textstyle\\sum_k c_{tk} = l_t,\\quad N_{tk} = \\sum_{i: y_i = k} w_i z_{it},\\quad
        N_t = \\sum_i w_i z_{it} && \\\\
    & L_t \\ge N_t - N_{tk} - W (1 - c_{tk}),\\quad L_t \\ge 0 && \\text{(misclassified weight)}
    \\end{aligned}

``ε_j`` is the smallest positive gap between distinct scaled values of feature ``j``
(one global ε would make valid trees, e.g. CART's, infeasible). A split on ``j`` with
threshold ``b`` sends ``x_ij <= b - ε_j`` left and ``x_ij >= b`` right; every training
partition by a threshold is representable. The big-M of each routing row is the
tightest valid one for its sample: ``M^L_i = max_j (x_ij + ε_j)`` (the left-hand side's
maximum, as ``b >= 0``) and ``M^R_i = 1 - min_j x_ij`` (as ``b <= 1``), maxima over the
non-constant features. Constant features can never separate samples: their ``a`` is
fixed to 0. ``L_t`` is only bounded below — it is minimised. The constraint
``l_t <= d_m`` is not in the paper's statement; without it samples below a
non-splitting node could be spread freely over its leaves.

``feature_scaling="rank"`` replaces each value by its rank among the feature's distinct
values divided by (their number − 1): the same training partitions and the same decoded
trees, but every ``ε_j >= 1/(n-1)`` — use it when min-max gaps fall near the solver's
feasibility tolerance (``~1e-6``), where the min-max model can route samples wrongly.
"""

from __future__ import annotations

import warnings

import numpy as np

from greedy import PASS_THROUGH, HeapTree

from .._model import ModelSpec
from ._base import TreeFormulation, leaf_ancestors

__all__ = ["OCTFormulation"]

_EPS_WARN = 1e-5


class OCTFormulation(TreeFormulation):
    """Bertsimas & Dunn's OCT as a :class:`~optitree._model.ModelSpec` (see module docstring).

    Parameters
    ----------
    X, y, depth, n_classes, alpha, min_samples_leaf, sample_weight, merge_duplicates
        See :class:`~optitree.formulations.TreeFormulation`.
    feature_scaling : {"minmax", "rank"}, default="minmax"
        How features are mapped to ``[0, 1]`` (module docstring).

    Attributes
    ----------
    X_scaled : ndarray of shape (n_rows, n_features)
        Scaled modelled rows.
    epsilon : ndarray of shape (n_features,)
        Per-feature smallest positive gap of the scaled values (0 for constant features).
    usable : ndarray of bool, shape (n_features,)
        Non-constant features (the others cannot split).

    Variable blocks: ``a (B, F)``, ``b (B,)``, ``d (B,)``, ``z (N, 2**D)``, ``l (2**D,)``,
    ``c (2**D, K)``, ``Nkt (2**D, K)``, ``Nt (2**D,)``, ``Lt (2**D,)``; branch node ``m``
    is row ``m - 1``, leaf ``2**D + k`` row ``k``.
    """

    name = "oct"

    def __init__(self, X, y, *, depth, feature_scaling: str = "minmax", **kwargs):
        super().__init__(X, y, depth=depth, **kwargs)
        if feature_scaling not in ("minmax", "rank"):
            raise ValueError(f"feature_scaling must be 'minmax' or 'rank', got {feature_scaling!r}")
        self.feature_scaling = feature_scaling
        F = self.n_features
        self._values = [np.unique(self.X[:, j]) for j in range(F)]  # distinct values per feature
        self._scaled_values = []
        self.X_scaled = np.empty_like(self.X)
        self.epsilon = np.zeros(F)
        for j, vals in enumerate(self._values):
            if vals.size == 1:
                s = np.zeros(1)
            elif feature_scaling == "rank":
                s = np.arange(vals.size) / (vals.size - 1)
            else:
                s = (vals - vals[0]) / (vals[-1] - vals[0])
            self._scaled_values.append(s)
            self.X_scaled[:, j] = s[np.searchsorted(vals, self.X[:, j])]
            if vals.size > 1:
                self.epsilon[j] = np.diff(s).min()
        self.usable = np.array([v.size > 1 for v in self._values])
        small = self.usable & (self.epsilon < _EPS_WARN)
        if small.any() and feature_scaling == "minmax":
            warnings.warn(
                f"OCT: features {np.flatnonzero(small).tolist()} have scaled gaps below {_EPS_WARN:g} "
                "(near the solver's feasibility tolerance); feature_scaling='rank' is exact and safer",
                stacklevel=2,
            )
        U = np.flatnonzero(self.usable)
        if U.size:
            self._m_left = (self.X_scaled[:, U] + self.epsilon[U]).max(axis=1)
            self._m_right = 1.0 - self.X_scaled[:, U].min(axis=1)
        else:
            self._m_left = self._m_right = np.zeros(self.n_samples)
        self._anc, self._left = leaf_ancestors(self.depth)

    # ------------------------------------------------------------------ size
    def _routing_pairs(self):
        """(leaf index k, ancestor heap id m) of the left and of the right routing rows."""
        k, s = np.nonzero(self._left)
        left = (k, self._anc[k, s])
        k, s = np.nonzero(~self._left)
        right = (k, self._anc[k, s])
        return left, right

    def estimate_size(self) -> tuple[int, int, int]:
        N, F, K, B, L, D = self.n_samples, self.n_features, self.n_classes, self.n_branch, self.n_leaves, self.depth
        U = self.usable
        n_left = n_right = L * D // 2
        nz_w = int((self.weight > 0).sum())
        cols = B * F + 2 * B + N * L + L + 2 * L * K + 2 * L
        rows = B + B + (B - 1) + N + N * L + L + n_left + n_left * N + n_right * N + L + L * K + L + L * K
        nnz_left = n_left * (N * (U.sum() + 1) + int((self._m_left > 0).sum()))
        nnz_right = n_right * (int((self.X_scaled[:, U] != 0).sum()) + N + int((self._m_right > 0).sum()))
        nnz = (
            B * (F + 1) + 2 * B + 2 * (B - 1)  # split_feature, threshold_cap, split_parent
            + N * L + 2 * N * L  # assign, leaf_used
            + L * (int((self.count > 0).sum()) + 1)  # leaf_min_size
            + 2 * n_left  # leaf_needs_split
            + nnz_left + nnz_right
            + L * (K + 1)  # leaf_label
            + L * K + L * nz_w  # class_weight
            + L + L * nz_w  # leaf_weight
            + 4 * L * K  # misclassified
        )
        return int(rows), int(cols), int(nnz)

    # ------------------------------------------------------------------ model
    def build(self) -> ModelSpec:
        N, F, K, B, L = self.n_samples, self.n_features, self.n_classes, self.n_branch, self.n_leaves
        Xs, w = self.X_scaled, self.weight
        W = self.total_weight
        spec = ModelSpec(f"oct_depth{self.depth}")
        a = spec.add_vars("a", (B, F), ub=np.broadcast_to(self.usable.astype(float), (B, F)), integer=True)
        b = spec.add_vars("b", B, ub=1.0)
        d = spec.add_vars("d", B, ub=1.0, integer=True, obj=self.alpha)
        z = spec.add_vars("z", (N, L), ub=1.0, integer=True)
        l = spec.add_vars("l", L, ub=1.0, integer=True)
        c = spec.add_vars("c", (L, K), ub=1.0, integer=True)
        Nkt = spec.add_vars("Nkt", (L, K))
        Nt = spec.add_vars("Nt", L)
        Lt = spec.add_vars("Lt", L, obj=self.error_scale)

        # sum_j a_mj - d_m = 0
        spec.add_rows(
            "split_feature", B, np.repeat(np.arange(B), F + 1),
            np.column_stack([a, d[:, None]]).ravel(), np.tile(np.r_[np.ones(F), -1.0], B), 0.0, 0.0,
        )
        # b_m - d_m <= 0
        spec.add_rows("threshold_cap", B, np.repeat(np.arange(B), 2), np.column_stack([b, d]).ravel(),
                      np.tile([1.0, -1.0], B), -np.inf, 0.0)
        # d_m - d_parent(m) <= 0, m = 2..B
        child = np.arange(2, B + 1)
        spec.add_rows("split_parent", B - 1, np.repeat(np.arange(B - 1), 2),
                      np.column_stack([d[child - 1], d[child // 2 - 1]]).ravel(), np.tile([1.0, -1.0], B - 1),
                      -np.inf, 0.0)
        # sum_t z_it = 1
        spec.add_rows("assign", N, np.repeat(np.arange(N), L), z.ravel(), np.ones(N * L), 1.0, 1.0)
        # z_it - l_t <= 0
        r = np.arange(N * L)
        spec.add_rows("leaf_used", N * L, np.repeat(r, 2),
                      np.column_stack([z.ravel(), np.tile(l, N)]).ravel(), np.tile([1.0, -1.0], N * L), -np.inf, 0.0)
        # sum_i n_i z_it - Nmin l_t >= 0
        spec.add_rows("leaf_min_size", L, np.r_[np.tile(np.arange(L), N), np.arange(L)],
                      np.r_[z.ravel(), l], np.r_[np.repeat(self.count, L), np.full(L, -float(self.min_samples_leaf))],
                      0.0, np.inf)
        # l_t - d_m <= 0 for m in A_L(t)
        (kl, ml), (kr, mr) = self._routing_pairs()
        P = kl.size
        spec.add_rows("leaf_needs_split", P, np.repeat(np.arange(P), 2),
                      np.column_stack([l[kl], d[ml - 1]]).ravel(), np.tile([1.0, -1.0], P), -np.inf, 0.0)
        self._add_routing(spec, "route_left", a, b, z, kl, ml, Xs + self.epsilon, self._m_left, left=True)
        self._add_routing(spec, "route_right", a, b, z, kr, mr, Xs, self._m_right, left=False)
        # sum_k c_tk - l_t = 0
        spec.add_rows("leaf_label", L, np.repeat(np.arange(L), K + 1), np.column_stack([c, l[:, None]]).ravel(),
                      np.tile(np.r_[np.ones(K), -1.0], L), 0.0, 0.0)
        # Nkt - sum_{i: y_i = k} w_i z_it = 0   (row t*K + k)
        rows_i = (np.arange(L)[None, :] * K + self.y[:, None]).ravel()  # (N, L) order of z
        spec.add_rows("class_weight", L * K, np.r_[np.arange(L * K), rows_i], np.r_[Nkt.ravel(), z.ravel()],
                      np.r_[np.ones(L * K), -np.repeat(w, L)], 0.0, 0.0)
        # Nt - sum_i w_i z_it = 0
        spec.add_rows("leaf_weight", L, np.r_[np.arange(L), np.tile(np.arange(L), N)], np.r_[Nt, z.ravel()],
                      np.r_[np.ones(L), -np.repeat(w, L)], 0.0, 0.0)
        # Lt - Nt + Nkt - W c_tk >= -W
        tk = np.arange(L * K)
        t_of = tk // K
        spec.add_rows("misclassified", L * K, np.repeat(tk, 4),
                      np.column_stack([Lt[t_of], Nt[t_of], Nkt.ravel(), c.ravel()]).ravel(),
                      np.tile([1.0, -1.0, 1.0, -W], L * K), -W, np.inf)
        self.spec = spec
        self.vars = {name: blk.indices for name, blk in spec.var_blocks.items()}
        return spec

    def _add_routing(self, spec, name, a, b, z, leaf_k, anc_m, coef, big_m, *, left):
        """Rows for every (sample, leaf, ancestor) pair of one direction.

        Left:  ``sum_j coef_ij a_mj - b_m + M_i z_it <= M_i``;
        right: ``sum_j coef_ij a_mj - b_m - M_i z_it >= -M_i``.
        Row ``p * N + i`` is pair ``p``, sample ``i``; constant features get no entry.
        """
        N = self.n_samples
        U = np.flatnonzero(self.usable)
        P = leaf_k.size
        row = np.arange(P * N).reshape(P, N)
        m0 = anc_m - 1
        rows = [np.repeat(row.ravel(), U.size), row.ravel(), row.ravel()]
        cols = [a[m0][:, None, U].repeat(N, axis=1).ravel(), np.repeat(b[m0], N), z[:, leaf_k].T.ravel()]
        sign = 1.0 if left else -1.0
        vals = [np.tile(coef[:, U].ravel(), P), np.full(P * N, -1.0), np.tile(sign * big_m, P)]
        bound = np.tile(big_m, P)
        lb, ub = (-np.inf, bound) if left else (-bound, np.inf)
        spec.add_rows(name, P * N, np.concatenate(rows), np.concatenate(cols), np.concatenate(vals), lb, ub)

    # ------------------------------------------------------------------ trees
    def _scaled_threshold(self, j: int, threshold: float) -> float:
        """``b``: the smallest scaled value of feature ``j`` above ``threshold`` (1 if none)."""
        vals = self._values[j]
        q = np.searchsorted(vals, threshold, side="right")
        return float(self._scaled_values[j][q]) if q < vals.size else 1.0

    def _start_columns(self, tree) -> np.ndarray:
        spec, v = self.spec, self.vars
        B, L, K, N = self.n_branch, self.n_leaves, self.n_classes, self.n_samples
        x = np.zeros(spec.n_cols)
        heap = tree.to_heap(self.depth)
        split = np.flatnonzero(heap.feature != PASS_THROUGH)
        feats = heap.feature[split]
        x[v["a"][split, feats]] = 1.0
        x[v["d"][split]] = 1.0
        x[v["b"][split]] = [self._scaled_threshold(j, t) for j, t in zip(feats, heap.threshold[split])]
        # every sample ends in the rightmost heap leaf below its compact leaf
        hid = self._heap_ids(tree)[tree.apply(self.X)]
        below = self.depth - np.floor(np.log2(hid)).astype(np.int64)
        leaf_k = ((hid + 1) << below) - 1 - L
        x[v["z"][np.arange(N), leaf_k]] = 1.0
        Nkt = np.zeros((L, K))
        np.add.at(Nkt, (leaf_k, self.y), self.weight)
        used = np.bincount(leaf_k, minlength=L) > 0
        x[v["l"][used]] = 1.0
        label = Nkt.argmax(axis=1)
        x[v["c"][np.flatnonzero(used), label[used]]] = 1.0
        x[v["Nkt"]] = Nkt
        x[v["Nt"]] = Nkt.sum(axis=1)
        x[v["Lt"]] = np.where(used, Nkt.sum(axis=1) - Nkt.max(axis=1), 0.0)
        return x

    def _heap_from_solution(self, x) -> HeapTree:
        a = self.spec.block_values(x, "a")
        b = self.spec.block_values(x, "b")
        d = self.spec.block_values(x, "d")
        B = self.n_branch
        feature = np.full(B, PASS_THROUGH, np.intp)
        threshold = np.zeros(B)
        for m in np.flatnonzero(d > 0.5):
            j = int(a[m].argmax())
            # left iff x_scaled <= b - eps_j / 2 (the middle of the forbidden gap)
            q = np.searchsorted(self._scaled_values[j], b[m] - 0.5 * self.epsilon[j], side="right")
            feature[m] = j
            threshold[m] = self._values[j][q - 1] if q > 0 else self._values[j][0] - 1.0
        return HeapTree(self.depth, feature, threshold, np.zeros((self.n_leaves, self.n_classes)))
