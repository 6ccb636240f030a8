"""OCT-H: Bertsimas & Dunn's optimal classification tree with hyperplane splits.

Reference: D. Bertsimas, J. Dunn, "Optimal classification trees", *Machine Learning*
106 (2017) 1039–1082, Section 5 (OCT-H).

Features are min-max scaled to ``[0, 1]`` (``x'``). Branch node ``m`` sends sample
``i`` left when ``a_m·x'_i <= b_m`` and right when ``a_m·x'_i >= b_m + μ``: the
margin ``μ`` turns the strict side into a closed constraint a MIP can state. Notation
as in :mod:`optitree.formulations.oct`; ``U`` are the non-constant features.

.. math::

    \\min\\; \\frac{1}{\\hat L} \\sum_t L_t + \\alpha \\sum_{m,j} s_{mj}

    \\begin{aligned}
    & -\\hat a_{mj} \\le a_{mj} \\le \\hat a_{mj} \\le s_{mj} \\le d_m,\\quad
      \\textstyle\\sum_j \\hat a_{mj} \\le d_m,\\quad -d_m \\le b_m \\le d_m,\\quad
      d_m \\le d_{p(m)} && \\text{(hyperplane, feature use)}\\\\
    & \\textstyle\\sum_t z_{it} = 1,\\quad z_{it} \\le l_t,\\quad \\sum_i n_i z_{it} \\ge N_{\\min} l_t,
      \\quad l_t \\le d_m\\ (m \\in A_L(t)) && \\text{(assignment, as in OCT)}\\\\
    & a_m \\cdot x'_i - b_m \\le M_i (1 - z_{it}) \\quad (m \\in A_L(t))
      && \\text{(left routing)}\\\\
    & a_m \\cdot x'_i - b_m - \\mu d_m \\ge -(M_i + \\mu)(1 - z_{it}) \\quad (m \\in A_R(t))
      && \\text{(right routing)}\\\\
    & \\text{leaf labels and } L_t \\text{ exactly as in OCT}
    \\end{aligned}

with ``s`` binary (feature ``j`` used at node ``m``) and the tightest big-M
``M_i = 1 + max_{j∈U} x'_ij`` (``|a_m·x'_i| <= Σ_j |a_mj| x'_ij <= max_j x'_ij`` and
``|b_m| <= 1``). ``|a_mj| <= s_mj`` is stated through ``â`` (``â <= s`` replaces the
paper's ``-s <= a <= s``: the same feasible set, half the rows). The margin enters
the right rows as ``μ d_m`` rather than ``μ`` so that a non-splitting node
(``a = 0, b = 0``) can send samples right — the heap convention of
:class:`~optitree.formulations.HeapTree` — while ``l_t <= d_m`` forbids the left.

The margin ``μ`` (``margin``, in scaled projection units; default ``1e-4``)
------------------------------------------------------------------------------
Samples whose projection falls strictly between ``b`` and ``b + μ`` can go neither
way: the model treats hyperplanes passing within ``μ`` of a sample as *ambiguous*
and never uses them. A larger ``μ`` forbids more hyperplanes (and makes a
univariate start infeasible when two values of its feature are closer than ``μ``
after scaling); a smaller one falls towards the solver's feasibility tolerance
(``~1e-6`` times the big-M), where a slightly fractional ``z`` lets a sample sit on
the wrong side. ``1e-4`` keeps a 25× safety factor over that tolerance. The decoded
threshold is re-centred halfway between the largest left and the smallest right
projection of the training samples, so the returned tree partitions the training
data exactly like the model and has the same objective.

The objective charges ``α`` per feature used per split (``Σ s``), so a univariate
split costs ``α`` as in OCT. Decoded splits with a single non-zero coefficient are
returned as ordinary univariate splits.
"""

from __future__ import annotations

import numbers

import numpy as np

from greedy import OBLIQUE, Tree, midpoint_threshold

from ..heuristics import improve_oblique
from ..model import ModelSpec
from ._base import TreeFormulation
from ._heap import PASS_THROUGH, HeapTree
from ._skeleton import (
    _class_leaf_nnz, _class_leaf_rows, _skeleton_nnz, _skeleton_rows, add_class_leaf_rows, add_skeleton_rows,
    routing_pairs, set_class_leaf_start,
)

__all__ = ["OCTHFormulation"]

_MARGIN_FLOOR = 1e-5  # below this the margin drowns in the solver's tolerances


class OCTHFormulation(TreeFormulation):
    """OCT-H as a :class:`~optitree.model.ModelSpec` (see the module docstring).

    Parameters
    ----------
    problem, merge_duplicates
        See :class:`~optitree.formulations.TreeFormulation`. ``alpha`` is charged
        per feature used per split.
    margin : float, default=1e-4
        ``μ``: gap between the left (``a·x' <= b``) and right (``a·x' >= b + μ``)
        sides, in scaled units; must lie in ``[1e-5, 0.5]``.

    Attributes
    ----------
    X_scaled : ndarray of shape (n_rows, n_features)
        Min-max scaled modelled rows (0 for constant features).
    x_min, x_range : ndarray of shape (n_features,)
        The scaling: ``x' = (x - x_min) / x_range``.
    usable : ndarray of bool, shape (n_features,)
        Non-constant features (the others get no coefficient).

    Variable blocks: ``a, ahat, s (B, F)``, ``b, d (B,)``, ``z (N, 2**D)``, ``l (2**D,)``,
    ``c, Nkt (2**D, K)``, ``Nt, Lt (2**D,)``.
    """

    name = "oct-h"
    scales_features = True

    def threshold_rule(self) -> str:
        return "hyperplanes"

    def __init__(self, problem, *, margin: float = 1e-4, **kwargs):
        super().__init__(problem, **kwargs)
        if not isinstance(margin, numbers.Real) or not _MARGIN_FLOOR <= margin <= 0.5:
            raise ValueError(f"margin must be a number in [{_MARGIN_FLOOR:g}, 0.5], got {margin!r}")
        self.margin = float(margin)
        self.x_min = self.X.min(axis=0)
        span = self.X.max(axis=0) - self.x_min
        self.usable = span > 0
        self.x_range = np.where(self.usable, span, 1.0)
        self.X_scaled = np.where(self.usable, (self.X - self.x_min) / self.x_range, 0.0)
        self._big_m = 1.0 + (self.X_scaled.max(axis=1) if self.usable.any() else np.zeros(self.n_samples))

    def improve_start(self, tree, X, y, sample_weight, *, time_limit, seed):
        """Hyperplanes re-optimised node by node from ``tree`` (:func:`optitree.heuristics.improve_oblique`)."""
        return improve_oblique(tree, X, y, sample_weight, alpha=self.alpha, min_samples_leaf=self.min_samples_leaf,
                               n_classes=self.n_classes, time_limit=time_limit, random_state=seed,
                               max_depth=self.depth, margin=self.margin)

    # ------------------------------------------------------------------ size
    def estimate_size(self) -> tuple[int, int, int]:
        N, F, K, B, L, D = self.n_samples, self.n_features, self.n_classes, self.n_branch, self.n_leaves, self.depth
        nU = int(self.usable.sum())
        P = L * D // 2  # (leaf, ancestor) pairs per direction
        nnz_x = int(np.count_nonzero(self.X_scaled))
        cols = 3 * B * F + 2 * B + N * L + L + 2 * L * K + 2 * L
        rows = 4 * B * nU + B + 2 * B + _skeleton_rows(self) + 2 * P * N + _class_leaf_rows(self)
        nnz = (
            4 * B * nU * 2 + B * (nU + 1) + 2 * B * 2  # abs, feature use, budget, threshold caps
            + _skeleton_nnz(self)
            + P * (nnz_x + 2 * N) + P * (nnz_x + 3 * N)  # left / right routing
            + _class_leaf_nnz(self)
        )
        return rows, cols, nnz

    # ------------------------------------------------------------------ model
    def build(self) -> ModelSpec:
        N, F, B, L = self.n_samples, self.n_features, self.n_branch, self.n_leaves
        U = np.flatnonzero(self.usable)
        nU = U.size
        usable = np.broadcast_to(self.usable.astype(float), (B, F))
        spec = ModelSpec(f"octh_depth{self.depth}")
        a = spec.add_vars("a", (B, F), lb=-usable, ub=usable)
        ahat = spec.add_vars("ahat", (B, F), ub=usable)
        s = spec.add_vars("s", (B, F), ub=usable, integer=True, obj=self.alpha)
        b = spec.add_vars("b", B, lb=-1.0, ub=1.0)
        d = spec.add_vars("d", B, ub=1.0, integer=True)
        z = spec.add_vars("z", (N, L), ub=1.0, integer=True)
        l = spec.add_vars("l", L, ub=1.0, integer=True)

        def pairs(name, first, second, coef_second, lb, ub):
            """Rows ``first - / + second`` over (m, j in U): 2 entries each."""
            n = first.size
            spec.add_rows(name, n, np.repeat(np.arange(n), 2), np.column_stack([first, second]).ravel(),
                          np.tile([1.0, coef_second], n), lb, ub)

        aU, ahatU, sU, dU = a[:, U].ravel(), ahat[:, U].ravel(), s[:, U].ravel(), np.repeat(d, nU)
        pairs("abs_upper", aU, ahatU, -1.0, -np.inf, 0.0)  # a - ahat <= 0
        pairs("abs_lower", aU, ahatU, 1.0, 0.0, np.inf)  # a + ahat >= 0
        pairs("feature_use", ahatU, sU, -1.0, -np.inf, 0.0)  # ahat - s <= 0
        pairs("use_needs_split", sU, dU, -1.0, -np.inf, 0.0)  # s - d <= 0
        # sum_j ahat_mj - d_m <= 0
        spec.add_rows("coef_budget", B, np.repeat(np.arange(B), nU + 1),
                      np.column_stack([ahat[:, U], d[:, None]]).ravel(), np.tile(np.r_[np.ones(nU), -1.0], B),
                      -np.inf, 0.0)
        pairs("threshold_upper", b, d, -1.0, -np.inf, 0.0)  # b - d <= 0
        pairs("threshold_lower", b, d, 1.0, 0.0, np.inf)  # b + d >= 0
        add_skeleton_rows(self, spec, d, z, l)
        (kl, ml), (kr, mr) = routing_pairs(self)
        self._add_routing(spec, "route_left", a, b, d, z, kl, ml, left=True)
        self._add_routing(spec, "route_right", a, b, d, z, kr, mr, left=False)
        add_class_leaf_rows(self, spec, z, l)
        self.spec = spec
        self.vars = {name: blk.indices for name, blk in spec.var_blocks.items()}
        return spec

    def _add_routing(self, spec, name, a, b, d, z, leaf_k, anc_m, *, left):
        """Routing rows for every (pair, sample); row ``p * N + i``.

        Left:  ``a_m·x'_i - b_m + M_i z_it <= M_i``;
        right: ``a_m·x'_i - b_m - μ d_m - (M_i + μ) z_it >= -(M_i + μ)``.
        """
        N, mu = self.n_samples, self.margin
        U = np.flatnonzero(self.usable)
        P = leaf_k.size
        row = np.arange(P * N).reshape(P, N)
        m0 = anc_m - 1
        big_m = self._big_m if left else self._big_m + mu
        rows = [np.repeat(row.ravel(), U.size), row.ravel(), row.ravel()]
        cols = [a[m0][:, None, U].repeat(N, axis=1).ravel(), np.repeat(b[m0], N), z[:, leaf_k].T.ravel()]
        vals = [np.tile(self.X_scaled[:, U].ravel(), P), np.full(P * N, -1.0), np.tile(big_m if left else -big_m, P)]
        if not left:
            rows.append(row.ravel()), cols.append(np.repeat(d[m0], N)), vals.append(np.full(P * N, -mu))
        bound = np.tile(big_m, P)
        lb, ub = (-np.inf, bound) if left else (-bound, np.inf)
        spec.add_rows(name, P * N, np.concatenate(rows), np.concatenate(cols), np.concatenate(vals), lb, ub)

    # ------------------------------------------------------------------ trees
    def penalty(self, tree: Tree) -> float:
        """``α · (number of non-zero split coefficients)``.

        A univariate split uses one feature, so for axis-aligned trees this equals
        OCT's penalty.
        """
        return self.alpha * features_used(tree)

    def _hyperplane(self, coef: np.ndarray, threshold: float) -> tuple[np.ndarray, float]:
        """Scaled ``(a, θ')`` with ``Σ|a| = 1`` equivalent to ``coef·x <= threshold``."""
        a = np.where(self.usable, coef * self.x_range, 0.0)
        norm = np.abs(a).sum()
        shift = float(coef @ self.x_min)
        if norm == 0:
            return a, 0.0 if threshold >= shift else -1.0
        return a / norm, (threshold - shift) / norm

    def _representable(self, tree: Tree) -> tuple[Tree, int]:
        """Move every split whose training gap is below the margin ``μ`` into the nearest gap >= ``μ``.

        A split can be stated only if the projections ``a·x'`` (``Σ|a| = 1``) of the
        samples reaching it leave a gap of at least ``μ`` between the two sides; a
        univariate CART split between two values closer than ``μ`` after scaling
        cannot. Nodes are fixed top-down (a move changes the samples below); a node
        with no gap >= ``μ`` sends all its samples left, and the canonical pass that
        follows removes it.
        """
        moved = 0
        threshold = tree.threshold.copy()
        samples = [np.zeros(0, np.intp)] * tree.node_count
        samples[0] = np.arange(self.n_samples)
        for node in np.flatnonzero(~tree.is_leaf):  # parents before children
            idx = samples[node]
            coef = tree.split_coef[node] if tree.feature[node] == OBLIQUE else np.eye(self.n_features)[tree.feature[node]]
            norm = np.abs(np.where(self.usable, coef * self.x_range, 0.0)).sum()
            proj = self.X[idx] @ coef  # original projections; a·x' = (proj - shift) / norm
            q = np.unique(proj)
            q_left = q[q <= threshold[node]]
            if not (q_left.size and q_left.size < q.size and q[q_left.size] - q_left[-1] >= self.margin * norm):
                moved += 1
                wide = np.flatnonzero(np.diff(q) >= self.margin * norm)
                if wide.size == 0:
                    threshold[node] = q[-1]  # everything left: the split disappears
                else:
                    mids = midpoint_threshold(q[wide], q[wide + 1])
                    threshold[node] = mids[np.abs(mids - threshold[node]).argmin()]
            left = proj <= threshold[node]
            samples[tree.children_left[node]], samples[tree.children_right[node]] = idx[left], idx[~left]
        return (Tree.from_dict({**tree.to_dict(), "threshold": threshold}), moved) if moved else (tree, 0)

    def _start_columns(self, tree: Tree) -> np.ndarray:
        v = self.vars
        x = np.zeros(self.spec.n_cols)
        heap_row = self.heap_ids(tree) - 1
        samples = self._node_samples(tree)
        for node in np.flatnonzero(~tree.is_leaf):
            m, idx = heap_row[node], samples[node]
            if tree.feature[node] == OBLIQUE:
                coef = tree.split_coef[node]
            else:
                coef = np.eye(self.n_features)[tree.feature[node]]
            a, theta = self._hyperplane(coef, tree.threshold[node])
            left = self.X[idx] @ coef <= tree.threshold[node]
            # the tightest b: the largest left projection among the samples reaching the node
            b = (self.X_scaled[idx[left]] @ a).max() if left.any() else theta
            x[v["a"][m]], x[v["ahat"][m]] = a, np.abs(a)
            x[v["s"][m]] = a != 0
            x[v["d"][m]], x[v["b"][m]] = 1.0, np.clip(b, -1.0, 1.0)
        set_class_leaf_start(self, tree, x)
        return x

    def _heap_from_solution(self, x) -> HeapTree:
        spec = self.spec
        s = spec.block_values(x, "s") > 0.5
        a = np.where(s, spec.block_values(x, "a"), 0.0)
        b = spec.block_values(x, "b")
        split = spec.block_values(x, "d") > 0.5
        coef = np.where(self.usable, a / self.x_range, 0.0)
        # un-scale a·x' <= b + μ/2 (the middle of the ambiguous band): coef·x <= b + μ/2 + coef·x_min
        threshold = np.where(split, b + 0.5 * self.margin + coef @ self.x_min, 0.0)
        feature = np.where(split, OBLIQUE, PASS_THROUGH)
        return self._heap(feature, threshold, np.where(split[:, None], coef, 0.0),
                          self.spec.block_values(x, "c").argmax(axis=1))

    def decode(self, spec, x) -> Tree:
        """As :meth:`TreeFormulation.decode`; single-coefficient hyperplanes become univariate splits."""
        return self._axis_aligned(super().decode(spec, x))

    def _axis_aligned(self, tree: Tree) -> Tree:
        """Rewrite oblique nodes with one non-zero coefficient as ``x_j <= t`` (same partition)."""
        if tree.split_coef is None:
            return tree
        d = tree.to_dict()
        coef = tree.split_coef
        nonzero = coef != 0
        single = np.flatnonzero((tree.feature == OBLIQUE) & (nonzero.sum(axis=1) == 1))
        if single.size == 0:
            return tree
        feature, threshold = np.array(d["feature"]), tree.threshold.copy()
        left, right = np.array(d["children_left"]), np.array(d["children_right"])
        j = nonzero[single].argmax(axis=1)
        c = coef[single, j]
        feature[single] = j
        threshold[single] = threshold[single] / c
        flip = single[c < 0]  # c x <= t  <=>  x >= t / c: the sides swap
        left[flip], right[flip] = right[flip], left[flip].copy()
        split_coef = coef.copy()
        split_coef[single] = 0.0
        d.update(feature=feature, threshold=threshold, children_left=left, children_right=right,
                 split_coef=split_coef if (feature == OBLIQUE).any() else None)
        if d["split_coef"] is None:
            del d["split_coef"]
        return self.canonical_tree(Tree.from_dict(d))[0]


def features_used(tree: Tree) -> int:
    """Number of (split, feature) pairs of ``tree``: 1 per univariate split, the non-zero coefficients of a hyperplane."""
    internal = ~tree.is_leaf
    oblique = internal & (tree.feature == OBLIQUE)
    n = int((internal & ~oblique).sum())
    if oblique.any():
        n += int(np.count_nonzero(tree.split_coef[oblique]))
    return n
