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

from ..model import ModelSpec
from ._base import TreeFormulation
from ._heap import PASS_THROUGH, HeapTree, to_heap
from ._skeleton import (
    _class_leaf_nnz, _class_leaf_rows, _skeleton_nnz, _skeleton_rows, add_class_leaf_rows, add_skeleton_rows,
    routing_pairs, set_class_leaf_start,
)

__all__ = ["OCTFormulation"]

_EPS_WARN = 1e-5


class OCTFormulation(TreeFormulation):
    """Bertsimas & Dunn's OCT as a :class:`~optitree.model.ModelSpec` (see module docstring).

    Parameters
    ----------
    problem, merge_duplicates
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
    scales_features = True
    solve_memory = (30 * 2**20, 250)  # measured: src/benchmarks/memory.py

    def __init__(self, problem, *, feature_scaling: str = "minmax", **kwargs):
        super().__init__(problem, **kwargs)
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
                f"{self.name.upper()}: features {np.flatnonzero(small).tolist()} have scaled gaps below {_EPS_WARN:g} "
                "(near the solver's feasibility tolerance); feature_scaling='rank' is exact and safer",
                stacklevel=2,
            )
        U = np.flatnonzero(self.usable)
        if U.size:
            self._m_left = (self.X_scaled[:, U] + self.epsilon[U]).max(axis=1)
            self._m_right = 1.0 - self.X_scaled[:, U].min(axis=1)
        else:
            self._m_left = self._m_right = np.zeros(self.n_samples)

    # ------------------------------------------------------------------ size
    def estimate_size(self) -> tuple[int, int, int]:
        N, F, K, B, L, D = self.n_samples, self.n_features, self.n_classes, self.n_branch, self.n_leaves, self.depth
        U = self.usable
        P = L * D // 2  # (leaf, ancestor) pairs per direction
        cols = B * F + 2 * B + N * L + L + 2 * L * K + 2 * L
        rows = 2 * B + _skeleton_rows(self) + 2 * P * N + _class_leaf_rows(self)
        nnz_left = P * (N * (U.sum() + 1) + int((self._m_left > 0).sum()))
        nnz_right = P * (int((self.X_scaled[:, U] != 0).sum()) + N + int((self._m_right > 0).sum()))
        nnz = (
            B * (F + 1) + 2 * B  # split_feature, threshold_cap
            + _skeleton_nnz(self) + nnz_left + nnz_right + _class_leaf_nnz(self)
        )
        return int(rows), int(cols), int(nnz)

    # ------------------------------------------------------------------ model
    def build(self) -> ModelSpec:
        N, L = self.n_samples, self.n_leaves
        spec = ModelSpec(f"oct_depth{self.depth}")
        a, b, d = self._add_univariate_splits(spec)
        z = spec.add_vars("z", (N, L), ub=1.0, integer=True)
        l = spec.add_vars("l", L, ub=1.0, integer=True)
        add_skeleton_rows(self, spec, d, z, l)
        self._add_routing_rows(spec, a, b, z)
        add_class_leaf_rows(self, spec, z, l)
        self.spec = spec
        self.vars = {name: blk.indices for name, blk in spec.var_blocks.items()}
        return spec

    def _add_univariate_splits(self, spec):
        """Blocks ``a (B, F)``, ``b (B,)``, ``d (B,)`` (objective ``alpha d``) and their rows.

        ``Σ_j a_mj = d_m`` (one usable feature per split) and ``b_m <= d_m``.
        """
        F, B = self.n_features, self.n_branch
        a = spec.add_vars("a", (B, F), ub=np.broadcast_to(self.usable.astype(float), (B, F)), integer=True)
        b = spec.add_vars("b", B, ub=1.0)
        d = spec.add_vars("d", B, ub=1.0, integer=True, obj=self.alpha)
        spec.add_rows("split_feature", B, np.repeat(np.arange(B), F + 1), np.column_stack([a, d[:, None]]).ravel(),
                      np.tile(np.r_[np.ones(F), -1.0], B), 0.0, 0.0)
        spec.add_rows("threshold_cap", B, np.repeat(np.arange(B), 2), np.column_stack([b, d]).ravel(),
                      np.tile([1.0, -1.0], B), -np.inf, 0.0)
        return a, b, d

    def _add_routing_rows(self, spec, a, b, z) -> None:
        """Left and right big-M routing rows of every (sample, leaf, ancestor)."""
        (kl, ml), (kr, mr) = routing_pairs(self)
        self._add_routing(spec, "route_left", a, b, z, kl, ml, self.X_scaled + self.epsilon, self._m_left, left=True)
        self._add_routing(spec, "route_right", a, b, z, kr, mr, self.X_scaled, self._m_right, left=False)

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
        x = np.zeros(self.spec.n_cols)
        self._set_split_start(tree, x)
        set_class_leaf_start(self, tree, x)
        return x

    def _set_split_start(self, tree, x: np.ndarray) -> None:
        """Write ``a, b, d`` of a canonical ``tree`` into the solution vector ``x``."""
        v = self.vars
        heap = to_heap(tree, self.depth)
        split = np.flatnonzero(heap.feature != PASS_THROUGH)
        feats = heap.feature[split]
        x[v["a"][split, feats]] = 1.0
        x[v["d"][split]] = 1.0
        x[v["b"][split]] = [self._scaled_threshold(j, t) for j, t in zip(feats, heap.threshold[split])]

    def root_split_columns(self):
        """``a[root, f]`` per feature, any threshold (:meth:`TreeFormulation.root_split_columns`)."""
        return np.asarray(self.vars["a"])[0], np.arange(self.n_features), None

    def forbid_features(self, spec, allowed):
        """``a`` of the features not allowed at their node fixed to 0 (:meth:`TreeFormulation.forbid_features`)."""
        spec.var_blocks["a"].ub[(~allowed).ravel()] = 0.0
        return int((~allowed).sum())

    def split_groups(self):
        """``a[n, :]`` (``Σ_f a[n, f] = d[n] <= 1``) (:meth:`TreeFormulation.split_groups`)."""
        return np.asarray(self.vars["a"]), np.arange(self.n_features)

    def split_columns(self):
        """``a[n, f]`` (:meth:`TreeFormulation.split_columns`)."""
        a = np.asarray(self.vars["a"])
        return a.ravel(), np.repeat(np.arange(a.shape[0]), a.shape[1]), np.tile(np.arange(a.shape[1]), a.shape[0])

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
        # the model's label of every leaf (ORT reuses these splits with regression leaves: none)
        c = self.spec.block_values(x, "c") if self.task.name == "classification" else None
        return self._heap(feature, threshold, leaf_class=None if c is None else c.argmax(axis=1))
