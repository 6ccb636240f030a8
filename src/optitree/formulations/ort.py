"""ORT / ORT-L: optimal regression trees with constant or linear leaves.

Reference: D. Bertsimas, J. Dunn, *Machine Learning under a Modern Optimization Lens*
(Dynamic Ideas, 2019), chapter 8 (optimal regression trees).

The splits, routing and assignment are exactly OCT's (:mod:`optitree.formulations.oct`:
univariate splits on scaled features with per-feature ``ε_j``); only the leaves change.
Leaf ``t`` predicts ``β_t`` (``leaf_model="constant"``) or
``β_t + r_y Σ_j w_tj (x̃_ij - 1/2)`` (``leaf_model="linear"``), with ``x̃`` the min-max
scaled features, ``r_y`` the target range and ``w = w⁺ - w⁻`` under the L1 budget
``Σ_j (w⁺_tj + w⁻_tj) <= C`` (``coef_budget``): the linear part of a leaf varies by at
most ``C`` target ranges over the training box. Centring at ``1/2`` makes ``β_t`` the
prediction at the box centre, so ``β_t ∈ [y_min - C r_y / 2, y_max + C r_y / 2]``
contains an optimal value and the big-M stays tight. Absolute error per sample:

.. math::

    f_i \\ge \\pm\\,(y_i - \\hat y_{it}) - M_i (1 - z_{it}),\\qquad
    M_i = \\max(y_i - y_{\\min},\\, y_{\\max} - y_i) + C r_y\\,[\\text{linear}]

    \\min\\; \\frac{1}{\\hat L} \\sum_i w_i f_i + \\alpha \\sum_m d_m
        + \\lambda \\sum_{t,j} (w^+_{tj} + w^-_{tj})

with ``L̂`` the loss of the best constant (weighted median / mean) and ``λ``
``leaf_alpha``.

Squared error (HiGHS 1.15 has no MIQP)
--------------------------------------
HiGHS refuses mixed-integer problems with a quadratic objective ("Cannot solve MIQP
problems with HiGHS"). ``loss="squared"`` therefore minimises an *outer
piecewise-linear approximation* ``q_i >= 2 e_k f_i - e_k^2`` of ``f_i^2`` with tangents
at ``e_0 = 0`` and ``e_k = M ρ^{-k}`` down to ``10^-3 M`` (``ρ = 1.2``, 39 tangents;
``M = max_i M_i``). Between consecutive tangents the approximation underestimates
``f^2`` by at most ``((ρ-1)/(ρ+1))^2 ≈ 0.83 %`` relatively, and by at most
``(5·10^-4 M)^2`` per sample below ``10^-3 M``. Because it never overestimates, the
model's dual bound is a valid lower bound on the exact squared-error optimum. The
estimator refits constant leaves to weighted means, reports the *exact* squared error of
the returned tree as the objective and recomputes the gap against that bound.
"""

from __future__ import annotations

import numbers

import numpy as np

from greedy import Tree

from ..heuristics import improve_linear_leaves
from ..model import ModelSpec, user_rows
from ._base import InfeasibleStartError
from ._heap import to_heap
from ._skeleton import _skeleton_nnz, _skeleton_rows, add_skeleton_rows, set_skeleton_start
from ._task import LEAF_MODELS, LOSSES, RegressionTask
from .oct import OCTFormulation

__all__ = ["ORTFormulation", "LEAF_MODELS", "LOSSES", "squared_tangents"]

_TANGENT_RATIO = 1.2
_TANGENT_FLOOR = 1e-3


def squared_tangents(max_residual: float) -> np.ndarray:
    """Tangent points ``0`` and ``M ρ^{-k}`` (``k >= 0``) down to ``10^-3 M`` (module docstring)."""
    if max_residual <= 0:
        return np.zeros(1)
    n = int(np.ceil(np.log(1 / _TANGENT_FLOOR) / np.log(_TANGENT_RATIO))) + 1
    return np.r_[0.0, max_residual * _TANGENT_RATIO ** -np.arange(n)[::-1]]


class ORTFormulation(OCTFormulation):
    """Optimal regression tree (ORT / ORT-L) as a :class:`~optitree.model.ModelSpec`.

    Parameters
    ----------
    problem : optitree.problem.Problem
        With an ``"absolute"`` or ``"squared"`` loss (:meth:`of` defaults to absolute);
        ``"squared"`` is solved through a piecewise-linear outer approximation (module
        docstring). ``alpha`` per split in units of the baseline loss ``L̂``.
    merge_duplicates, feature_scaling
        As for :class:`~optitree.formulations.oct.OCTFormulation`. Duplicate rows are
        merged only when their targets are equal too.
    leaf_model : {"constant", "linear"}, default="constant"
    coef_budget : float, default=2.0
        ``C`` > 0: L1 budget of each linear leaf, in target ranges over the training box
        (``Σ_j |coef_j| · range(x_j) <= C · range(y)``). Ignored for constant leaves.
    leaf_alpha : float, default=0.0
        ``λ`` >= 0: objective penalty per unit of that L1 norm (linear leaves).

    Attributes
    ----------
    task : RegressionTask
        Targets, their scaling to the model's units, the loss and the baseline ``L̂``
        (the weighted loss of the best constant prediction).
    model_target : ndarray
        Targets of the modelled (merged) rows in model units.
    tangents : ndarray or None
        Tangent points of the squared-error approximation.

    Variable blocks: OCT's ``a, b, d, z, l``, then ``beta (2**D,)``, ``f (N,)``, for
    linear leaves ``wp, wm (2**D, F)``, for squared error ``q (N,)``.
    """

    name = "ort"
    scales_features = True
    task_type = RegressionTask
    solve_memory = (150 * 2**20, 260)  # measured: src/benchmarks/memory.py

    def __init__(self, problem, *, leaf_model: str = "constant", coef_budget: float = 2.0, leaf_alpha: float = 0.0,
                 **kwargs):
        for name, value, low in (("coef_budget", coef_budget, 0.0), ("leaf_alpha", leaf_alpha, None)):
            if not isinstance(value, numbers.Real) or not np.isfinite(value) or value < 0 or value == low:
                raise ValueError(f"{name} must be a finite number {'> 0' if low is not None else '>= 0'}, got {value!r}")
        loss = problem.loss.name
        if not problem.loss.regression:
            raise ValueError(f"ORTFormulation models a regression loss, not the problem's {loss!r}")
        super().__init__(problem, task=RegressionTask(loss, leaf_model), **kwargs)
        self.leaf_model, self.loss = leaf_model, loss
        self.objective_is_exact = loss == "absolute"
        self.coef_budget, self.leaf_alpha = float(coef_budget), float(leaf_alpha)
        self.model_target = self.units.targets(self.y)
        t = self.model_target
        self.y_min, self.y_max = float(t.min()), float(t.max())
        self.y_range = self.y_max - self.y_min if self.y_max > self.y_min else 1.0
        # linear leaves: min-max scaled, centred features (independent of feature_scaling)
        lo = self.X.min(axis=0)
        span = self.X.max(axis=0) - lo
        self._leaf_min, self._leaf_range = lo, np.where(span > 0, span, 1.0)
        self.X_leaf = np.where(span > 0, (self.X - lo) / self._leaf_range - 0.5, 0.0)
        linear = leaf_model == "linear"
        if linear:
            self._check_coefficient_range()
        self._beta_slack = 0.5 * self.coef_budget * self.y_range if linear else 0.0
        self._loss_m = np.maximum(t - self.y_min, self.y_max - t) + 2 * self._beta_slack
        self.tangents = squared_tangents(float(self._loss_m.max())) if loss == "squared" else None

    def _check_coefficient_range(self) -> None:
        """Refuse data whose largest admissible leaf coefficient is not a finite float64.

        A coefficient within ``coef_budget`` reaches ``C · range(y) / range(x_j)`` in user
        units, and the intercept subtracts it times ``min(x_j)``: both must stay finite for
        the decoded tree to predict.
        """
        user_range = self.y_range / self.units.target_scale
        with np.errstate(over="ignore", invalid="ignore"):
            top = self.coef_budget * user_range / self._leaf_range
            reach = top * np.maximum(1.0, np.abs(self._leaf_min)) * self.n_features
        bad = np.flatnonzero(self.usable & ~(np.isfinite(reach) & (reach < 1e300)))
        if bad.size:
            raise ValueError(
                f"leaf_model='linear': the coefficients of features {bad.tolist()} could reach "
                f"{float(np.max(top[bad])):.3g} (range(y) / range(x_j) = {user_range:.3g} / "
                f"{float(np.min(self._leaf_range[bad])):.3g}), beyond float64; rescale those features "
                "(or y) so that range(y) / range(x_j) stays below about 1e290, or use leaf_model='constant'"
            )

    # ------------------------------------------------------------------ size
    def leaf_value_columns(self):
        """``beta`` at depth 2 with constant leaves and squared error (:meth:`TreeFormulation.leaf_value_columns`)."""
        if self.depth != 2 or self.leaf_model != "constant" or self.loss != "squared":
            return None
        self._require_spec()
        return np.asarray(self.vars["beta"])

    def estimate_size(self) -> tuple[int, int, int]:
        N, F, B, L, D = self.n_samples, self.n_features, self.n_branch, self.n_leaves, self.depth
        U = self.usable
        nU = int(U.sum())
        P = L * D // 2
        linear = self.leaf_model == "linear"
        n_tan = 0 if self.tangents is None else self.tangents.size - 1
        cols = B * F + 2 * B + N * L + L + L + N + (2 * L * F if linear else 0) + (N if n_tan else 0)
        rows = B + B + _skeleton_rows(self) + 2 * P * N + 2 * N * L + (L if linear else 0) + N * n_tan
        nnz_x = int(np.count_nonzero(self.X_leaf[:, U]))
        nnz = (
            B * (F + 1) + 2 * B + _skeleton_nnz(self)
            + P * (N * (nU + 1) + int((self._m_left > 0).sum()))
            + P * (int((self.X_scaled[:, U] != 0).sum()) + N + int((self._m_right > 0).sum()))
            + 2 * (3 * N * L - int((self._loss_m == 0).sum()) * L + (2 * L * nnz_x if linear else 0))
            + (2 * L * nU if linear else 0) + 2 * N * n_tan
        )
        return rows, cols, nnz

    # ------------------------------------------------------------------ model
    def build(self) -> ModelSpec:
        N, L = self.n_samples, self.n_leaves
        linear = self.leaf_model == "linear"
        spec = ModelSpec(f"ort{'l' if linear else ''}_depth{self.depth}")
        a, b, d = self._add_univariate_splits(spec)
        z = spec.add_vars("z", (N, L), ub=1.0, integer=True)
        l = spec.add_vars("l", L, ub=1.0, integer=True)
        add_skeleton_rows(self, spec, d, z, l)
        self._add_routing_rows(spec, a, b, z)
        self._add_leaf_loss(spec, z)
        self.spec = spec
        self.vars = {name: blk.indices for name, blk in spec.var_blocks.items()}
        return spec

    def _add_leaf_loss(self, spec, z) -> None:
        """Leaf models, residual rows ``f_i >= ±(y_i - ŷ_it) - M_i (1 - z_it)`` and the squared-error tangents.

        Row ``i * L + t``: ``f_i ± (β_t + r_y Σ_j w_tj x̃_ij) - M_i z_it >= ±y_i - M_i``.
        """
        N, L = self.n_samples, self.n_leaves
        t, w, M = self.model_target, self.model_weight, self._loss_m
        squared = self.loss == "squared"
        beta = spec.add_vars("beta", L, lb=self.y_min - self._beta_slack, ub=self.y_max + self._beta_slack)
        f = spec.add_vars("f", N, ub=M, obj=0.0 if squared else self.model_error_scale * w)
        r = np.arange(N * L)
        i_of, t_of = r // L, r % L
        # f_i - M_i z_it, then the prediction part: beta_t (+ r_y sum_j (wp - wm)_tj x~_ij)
        rows, cols, vals = [r, r], [f[i_of], z.ravel()], [np.ones(N * L), -M[i_of]]
        p_rows, p_cols, p_vals = [r], [beta[t_of]], [np.ones(N * L)]
        if self.leaf_model == "linear":
            U = np.flatnonzero(self.usable)
            budget_ub = np.broadcast_to(self.coef_budget * self.usable, (L, self.n_features))
            wp = spec.add_vars("wp", (L, self.n_features), ub=budget_ub, obj=self.leaf_alpha)
            wm = spec.add_vars("wm", (L, self.n_features), ub=budget_ub, obj=self.leaf_alpha)
            xr = self.y_range * self.X_leaf[:, U][i_of].ravel()  # (N*L*|U|,)
            rr = np.repeat(r, U.size)
            p_rows += [rr, rr]
            p_cols += [wp[t_of][:, U].ravel(), wm[t_of][:, U].ravel()]
            p_vals += [xr, -xr]
            spec.add_rows("coef_budget", L, np.repeat(np.arange(L), 2 * U.size),
                          np.column_stack([wp[:, U], wm[:, U]]).ravel(), np.ones(2 * L * U.size), -np.inf,
                          self.coef_budget)
        rows, cols = np.concatenate(rows + p_rows), np.concatenate(cols + p_cols)
        vals, p_vals = np.concatenate(vals), np.concatenate(p_vals)
        spec.add_rows("residual_upper", N * L, rows, cols, np.r_[vals, p_vals], t[i_of] - M[i_of], np.inf)
        spec.add_rows("residual_lower", N * L, rows, cols, np.r_[vals, -p_vals], -t[i_of] - M[i_of], np.inf)
        if squared:
            q = spec.add_vars("q", N, obj=self.model_error_scale * w)
            e = self.tangents[1:]
            K = e.size
            rk = np.arange(N * K)
            # q_i - 2 e_k f_i >= -e_k^2
            spec.add_rows("tangent", N * K, np.repeat(rk, 2), np.column_stack([np.repeat(q, K), np.repeat(f, K)]).ravel(),
                          np.column_stack([np.ones(N * K), np.tile(-2 * e, N)]).ravel(), np.tile(-(e**2), N), np.inf)

    # ------------------------------------------------------------------ trees
    def penalty(self, tree: Tree) -> float:
        """``α · n_splits + λ · Σ_leaves Σ_j |coef_j| range(x_j) / range(y)``."""
        penalty = 0.0
        if tree.leaf_coef is not None:
            model_coef = np.abs(tree.leaf_coef[tree.is_leaf]) * self.units.target_scale
            penalty = float((model_coef @ self._leaf_range).sum()) / self.y_range
        return self.alpha * tree.n_splits + self.leaf_alpha * penalty

    def prepare_start(self, tree: Tree, prune: bool = True) -> tuple[Tree, str]:
        """As :meth:`TreeFormulation.prepare_start`; a linear-leaf start keeps its leaf models.

        The canonical tree partitions the training rows as ``tree`` does, so each of its leaves
        takes the model of the leaf of ``tree`` its rows reach (linear leaves are not pruned).
        """
        prepared, note = super().prepare_start(tree, prune=prune)
        if tree.leaf_coef is None or self.leaf_model != "linear":
            return prepared, note
        old_leaf = tree.apply(self.X)
        coef = np.zeros((prepared.node_count, self.n_features))
        intercept = np.zeros(prepared.node_count)
        new_leaf = prepared.apply(self.X)
        for node in np.unique(new_leaf):
            source = np.bincount(old_leaf[new_leaf == node]).argmax()
            coef[node], intercept[node] = tree.leaf_coef[source], tree.leaf_intercept[source]
        return Tree.from_dict({**prepared.to_dict(), "leaf_coef": coef, "leaf_intercept": intercept}), note

    def _start_columns(self, tree: Tree) -> np.ndarray:
        v, L = self.vars, self.n_leaves
        x = np.zeros(self.spec.n_cols)
        self._set_split_start(tree, x)
        leaf_k = set_skeleton_start(self, tree, x)
        if tree.leaf_coef is None:  # every heap leaf, an empty one too, takes the value of the leaf covering it
            beta = self.units.targets(to_heap(tree, self.depth).value[:, 0])
            prediction = beta[leaf_k]
        else:
            beta, prediction = self._linear_leaf_start(tree, leaf_k, x)
        x[v["beta"]] = beta
        if tree.leaf_coef is None:
            self._free_empty_leaves(x, np.setdiff1d(np.arange(L), leaf_k))
        f = np.abs(self.model_target - prediction)
        x[v["f"]] = f
        if self.tangents is not None:
            x[v["q"]] = (2 * self.tangents[None, :] * f[:, None] - self.tangents[None, :] ** 2).max(axis=1)
        return x

    def _free_empty_leaves(self, x, empty) -> None:
        """Give the heap leaves no row reaches (``empty``) values that meet the user rows, when the covering
        leaf's value breaks one.

        Their ``β`` is free in ``[y_min, y_max]``: each moves to the end its coefficient in a violated
        user row favours (a row ``β_0 <= β_3`` with leaf 0 empty: ``β_0 = y_min``). Kept only when
        every user row then holds; the tree's predictions do not change.
        """
        rows = user_rows(self.spec)
        if rows is None or not empty.size:
            return
        A, lo, hi = rows

        def violated(v):
            ax = A @ v
            return (ax > hi + 1e-9 * np.maximum(1.0, np.abs(hi))) | (ax < lo - 1e-9 * np.maximum(1.0, np.abs(lo)))

        bad = violated(x)
        if not bad.any():
            return
        columns = np.asarray(self.vars["beta"])[empty]
        trial = x.copy()
        sub = A[np.flatnonzero(bad)][:, columns].toarray()  # (violated rows, empty leaves)
        too_high = (A @ x)[bad] > hi[bad]
        push = np.where(too_high[:, None], sub, -sub)  # > 0: the row needs that leaf lower
        for k, col in enumerate(columns):
            if (push[:, k] > 0).any() != (push[:, k] < 0).any():
                trial[col] = self.y_min if (push[:, k] > 0).any() else self.y_max
        if not violated(trial).any():
            x[:] = trial

    def decode(self, spec, x) -> Tree:
        """Tree of a solution in original units; linear leaves get the model's coefficients.

        Constant leaves take the loss's best constant for their training samples (the
        model's ``β`` at an optimum; squared error: the exact least-squares value), or the
        model's ``β`` when user rows on the leaf values forbid the best constants.
        Squared error with linear leaves (and ``leaf_alpha == 0``): a leaf whose exact
        weighted least-squares fit lies within ``coef_budget`` takes that fit, the
        exact optimum of the leaf for the model's partition.
        """
        tree = super().decode(spec, x)
        if self.leaf_model == "constant":
            return tree if self._is_solution(tree) else self._with_model_values(tree, spec, x)
        x = np.asarray(x, dtype=np.float64)
        leaf_k = spec.block_values(x, "z").argmax(axis=1)
        heap_of_node = np.zeros(tree.node_count, np.intp)
        heap_of_node[tree.apply(self.X)] = leaf_k
        w = spec.block_values(x, "wp") - spec.block_values(x, "wm")  # (L, F)
        w = np.where(self.usable, w, 0.0)[heap_of_node]
        beta = spec.block_values(x, "beta")[heap_of_node]
        if self.loss == "squared" and self.leaf_alpha == 0:
            self._refit_least_squares(tree, beta, w)
        # back to user units: beta is (prediction - target_centre) * target_scale at the box centre
        scale, centre = self.units.target_scale, self.units.target_centre
        user_range = self.y_range / scale
        coef = user_range * w / self._leaf_range
        intercept = beta / scale + centre - coef @ self._leaf_min - 0.5 * user_range * w.sum(axis=1)
        leaf = tree.is_leaf[:, None]
        d = tree.to_dict()
        d.update(leaf_coef=np.where(leaf, coef, 0.0), leaf_intercept=np.where(leaf[:, 0], intercept, 0.0))
        return Tree.from_dict(d)

    def _linear_leaf_start(self, tree: Tree, leaf_k: np.ndarray, x: np.ndarray):
        """``β`` per heap leaf and every row's prediction (model units) of a linear-leaf ``tree``; writes ``wp``, ``wm``.

        Inverse of :meth:`decode`: a user-unit leaf ``intercept + coef · x`` is
        ``β + r_y Σ_j w_j x̃_j`` in model units with ``w_j = coef_j · s · range_j / r_y`` and
        ``β = (intercept - centre) s + Σ_j coef_j s min_j + r_y Σ_j w_j / 2``. Empty heap leaves
        get ``β = y_min`` and no coefficients. A start whose coefficients break ``coef_budget``
        or the features the model leaves out is refused (InfeasibleStartError).
        """
        v, L, scale = self.vars, self.n_leaves, self.units.target_scale
        node_of_heap = np.full(L, -1, np.intp)
        node_of_heap[leaf_k] = tree.apply(self.X)
        w = np.zeros((L, self.n_features))
        beta = np.full(L, self.y_min)
        used = node_of_heap >= 0
        coef = tree.leaf_coef[node_of_heap[used]]
        w[used] = coef * scale * self._leaf_range / self.y_range
        if np.any(np.abs(w[:, ~self.usable]) > 0) or np.any(np.abs(w).sum(axis=1) > self.coef_budget * (1 + 1e-9)):
            raise InfeasibleStartError("its leaf coefficients exceed coef_budget or use a constant feature")
        beta[used] = ((tree.leaf_intercept[node_of_heap[used]] - self.units.target_centre) * scale
                      + scale * coef @ self._leaf_min + 0.5 * self.y_range * w[used].sum(axis=1))
        x[v["wp"]], x[v["wm"]] = np.maximum(w, 0.0), np.maximum(-w, 0.0)
        prediction = beta[leaf_k] + self.y_range * np.einsum("ij,ij->i", w[leaf_k], self.X_leaf)
        return beta, prediction

    def improve_start(self, tree, X, y, sample_weight, *, time_limit, seed):
        """Linear leaves: leaves refitted and splits re-chosen from ``tree``
        (:func:`optitree.heuristics.improve_linear_leaves`; squared error only)."""
        if self.leaf_model != "linear" or self.loss != "squared":
            return None
        return improve_linear_leaves(tree, X, y, sample_weight, min_samples_leaf=self.min_samples_leaf,
                                     coef_budget=self.coef_budget, leaf_alpha=self.leaf_alpha, time_limit=time_limit,
                                     alpha=self.alpha, max_depth=self.depth, random_state=seed)

    def _with_model_values(self, tree: Tree, spec, x) -> Tree:
        """``tree`` predicting the model's leaf values ``β`` instead of the loss's best constants.

        User rows on ``β`` (e.g. a monotone row ``β_0 <= β_3``) can forbid the best constants;
        the model's own values meet them. ``tree`` itself when that is no solution either.
        """
        heap_of_node = np.zeros(tree.node_count, np.intp)
        heap_of_node[tree.apply(self.X)] = spec.block_values(x, "z").argmax(axis=1)
        beta = spec.block_values(x, "beta")[heap_of_node]
        d = tree.to_dict()
        value = np.array(d["value"], dtype=np.float64)
        leaves = tree.is_leaf
        value[leaves, 0] = self.units.user_targets(beta[leaves])
        candidate = Tree.from_dict({**d, "value": value})
        return candidate if self._is_solution(candidate) else tree

    def _refit_least_squares(self, tree: Tree, beta: np.ndarray, w: np.ndarray) -> None:
        """Replace ``beta[node], w[node]`` of every leaf by its weighted least-squares fit when within budget."""
        U = np.flatnonzero(self.usable)
        samples = self._node_samples(tree)
        for node in np.flatnonzero(tree.is_leaf):
            idx = samples[node]
            root_w = np.sqrt(self.model_weight[idx])
            design = np.column_stack([np.ones(idx.size), self.y_range * self.X_leaf[idx][:, U]])
            sol = np.linalg.lstsq(design * root_w[:, None], self.model_target[idx] * root_w, rcond=None)[0]
            if np.abs(sol[1:]).sum() <= self.coef_budget:
                beta[node] = sol[0]
                w[node] = 0.0
                w[node, U] = sol[1:]
