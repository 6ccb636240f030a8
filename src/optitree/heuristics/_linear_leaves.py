"""Linear-leaf improvement heuristic (starts for ORT-L with squared error).

ORT-L (:mod:`optitree.formulations.ort`) gives leaf ``t`` the model
``β_t + r_y Σ_j u_tj x̃_ij`` with ``x̃`` the features min-max scaled over the rows of
positive weight and centred (``x̃ ∈ [-1/2, 1/2]``), ``r_y`` the range of the targets, and
the L1 budget ``Σ_j |u_tj| <= C`` (``coef_budget``; in user units
``Σ_j |coef_j| range(x_j) <= C range(y)``). Its objective, squared error:

.. math::

    \\frac{\\sum_i w_i (y_i - \\hat y_i)^2}{\\hat L} + \\alpha\\, S(T)
        + \\lambda \\sum_t \\sum_j |u_{tj}|

with ``L̂`` the weighted squared error of the best constant, ``S`` the number of splits
and ``λ`` ``leaf_alpha``.

* **Leaves** (splits fixed): each leaf's model minimises its part of the objective under the
  budget — weighted least squares when that fit lies within the budget and ``λ = 0``,
  else proximal gradient (FISTA) on the leaf's Gram matrix, whose proximal step is a
  soft threshold at ``λ`` followed by the projection onto the L1 ball.
* **Splits** (leaves refitted): node by node, every feature and every threshold between
  consecutive distinct values of the rows reaching the node is ranked by a lower bound —
  the unconstrained least-squares error of the leaves below the node, for all thresholds of a
  feature at once from prefix sums of ``w [1, x̃, y]ᵀ[1, x̃, y]`` per leaf — and the best
  ones are evaluated exactly (leaves refitted within the budget); the node takes the best
  split when the tree's objective strictly decreases. Repeated to a fixed point from every
  start (the given tree, constant-leaf CART, linear-leaf CART on its splits and on the
  linear criterion's, ``starts``), each start's own objective counted first, so the result
  is never worse than any of them however soon the clock stops the search.
* **Look-ahead** (nodes whose children split last, e.g. the root at depth 2): the node and
  both children chosen together — every feature at ``q`` spread thresholds, each child's best
  split (or none) among ``q`` per feature, ranked by the unconstrained least-squares error of
  the four leaves; the best three are polished by the local search. A coarse pass (``q = 8``)
  runs right after the first start's local search (at depth 2 it re-chooses the whole tree,
  the strongest move when time is short), a finer one (``q = 16``) after all starts. Then random
  perturbations of the best tree until the time limit or ``max_rounds`` without improvement.
  ``time_limit=0`` returns the given splits with their leaves fitted within the budget.

The returned tree has ``leaf_coef`` / ``leaf_intercept`` in user units within the budget
(shrunk by a relative ``1e-9`` for the model's tolerances) and is never worse on the
objective than the given tree (its own leaf models when they respect the budget, else
its splits with the leaves refitted here); otherwise the given tree is returned.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np

from greedy import LEAF_FEATURE, TREE_LEAF, CARTRegressor, Tree, midpoint_threshold

from ._common import Clock, check_inputs, heap_of_tree

__all__ = ["improve_linear_leaves", "linear_leaf_objective"]

_TOL = 1e-10
_SHRINK = 1 - 1e-9


class _Problem:
    """Rows of positive weight in ORT-L's units; leaf fits; heap trees with univariate splits.

    A heap tree is ``(feat, thr)`` over nodes ``1 .. 2**D - 1`` (row ``m - 1``): ``feat < 0``
    sends every row left (no split), else ``x[feat] <= thr`` goes left.
    """

    def __init__(self, X, y, w, depth, alpha, min_leaf, budget, leaf_alpha):
        keep = w > 0
        self.X, self.y, self.w = X[keep], y[keep], w[keep]
        self.n, self.F = self.X.shape
        self.D, self.B, self.L = int(depth), 2**int(depth) - 1, 2**int(depth)
        self.alpha, self.min_leaf = float(alpha), int(min_leaf)
        self.C, self.lam = float(budget), float(leaf_alpha)
        self.x_min = self.X.min(axis=0)
        span = self.X.max(axis=0) - self.x_min
        self.usable = span > 0
        self.x_range = np.where(self.usable, span, 1.0)
        ptp = float(self.y.max() - self.y.min())
        self.ry = ptp if ptp > 0 else 1.0
        self.U = np.flatnonzero(self.usable)
        self.Z = self.ry * ((self.X[:, self.U] - self.x_min[self.U]) / self.x_range[self.U] - 0.5)
        ybar = np.average(self.y, weights=self.w)
        sst = float(self.w @ (self.y - ybar) ** 2)
        self.sst = sst if sst > 0 else 1.0
        self.yc = self.y - ybar  # centred once: the prefix sums lose less to cancellation

    # ---------------------------------------------------------------- leaves
    def fit_leaf(self, rows):
        """``(cost, beta, u)`` of the best model of a leaf holding ``rows`` (cost in objective units)."""
        if rows.size == 0:
            return 0.0, 0.0, np.zeros(self.U.size)
        ws, Z, y = self.w[rows], self.Z[rows], self.y[rows]
        sw = ws.sum()
        zbar, ybar = ws @ Z / sw, float(ws @ y / sw)
        Zc, yc = Z - zbar, y - ybar
        u = np.zeros(self.U.size)
        if self.U.size and rows.size > 1:
            rw = np.sqrt(ws)
            u = np.linalg.lstsq(Zc * rw[:, None], yc * rw, rcond=None)[0]
            if self.lam > 0 or np.abs(u).sum() > self.C * _SHRINK:
                u = self._constrained(Zc, yc, ws, _project_l1(u, self.C * _SHRINK))
        r = yc - Zc @ u
        cost = float(ws @ r**2) / self.sst + self.lam * float(np.abs(u).sum())
        return cost, ybar - float(zbar @ u), u

    def _constrained(self, Zc, yc, ws, u0):
        """``argmin |√w (yc - Zc u)|² / SST + λ|u|₁`` over ``|u|₁ <= C``: the point of the lasso path
        (exact, by LARS on the Gram matrix) at the penalty where the budget binds, or at ``λ``;
        FISTA when LARS fails."""
        from sklearn.linear_model import lars_path_gram

        G = (Zc * ws[:, None]).T @ Zc / self.sst
        g = Zc.T @ (ws * yc) / self.sst
        radius = self.C * _SHRINK

        def f(x):
            return float(x @ G @ x - 2 * g @ x) + self.lam * float(np.abs(x).sum())

        candidates = [u0]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _, _, coefs = lars_path_gram(Xy=g, Gram=G, n_samples=1, method="lasso", alpha_min=0.5 * self.lam)
            norms = np.abs(coefs).sum(axis=0)
            over = np.flatnonzero(norms > radius)
            if over.size == 0:
                u = coefs[:, -1]
            else:
                i = over[0]  # norms[0] == 0 <= radius, so i >= 1; the norm is linear on a segment
                theta = (radius - norms[i - 1]) / (norms[i] - norms[i - 1])
                u = coefs[:, i - 1] + theta * (coefs[:, i] - coefs[:, i - 1])
            if np.all(np.isfinite(u)):
                candidates.append(_project_l1(u, radius))
        except (ValueError, np.linalg.LinAlgError, FloatingPointError):
            pass
        if len(candidates) == 1:
            candidates.append(self._fista(G, g, u0, radius))
        return min(candidates, key=f)

    def _fista(self, G, g, u0, radius, iters=3000):
        lip = 2.0 * float(np.linalg.eigvalsh(G)[-1])
        if lip <= 0:
            return np.zeros_like(u0)
        step = 1.0 / lip
        u, v, t = u0.copy(), u0.copy(), 1.0
        for _ in range(iters):
            z = v - step * 2.0 * (G @ v - g)
            z = np.sign(z) * np.maximum(np.abs(z) - step * self.lam, 0.0)
            u_new = _project_l1(z, radius)
            t_new = 0.5 * (1 + np.sqrt(1 + 4 * t * t))
            v = u_new + ((t - 1) / t_new) * (u_new - u)
            if np.abs(u_new - u).max() < 1e-12 * max(1.0, np.abs(u).max()):
                return u_new
            u, t = u_new, t_new
        return u

    # ---------------------------------------------------------------- trees
    def route(self, feat, thr):
        node = np.ones(self.n, np.intp)
        path = np.empty((self.D, self.n), np.intp)
        r = np.arange(self.n)
        for level in range(self.D):
            path[level] = node
            f = feat[node - 1]
            right = (f >= 0) & (self.X[r, np.maximum(f, 0)] > thr[node - 1])
            node = 2 * node + right
        return node - self.L, path

    def evaluate(self, feat, thr, fits=False):
        """Objective (inf if a non-empty leaf is below ``min_samples_leaf``), and the leaf fits if asked."""
        leaf, path = self.route(feat, thr)
        size = np.bincount(leaf, minlength=self.L)
        if ((size > 0) & (size < self.min_leaf)).any():
            return (np.inf, None) if fits else np.inf
        order = np.argsort(leaf, kind="stable")
        bounds = np.r_[0, np.cumsum(size)]
        models, total = [], 0.0
        for t in range(self.L):
            res = self.fit_leaf(order[bounds[t]:bounds[t + 1]])
            total += res[0]
            models.append(res)
        total += self.alpha * self._n_splits(feat, thr, path)
        return (total, models) if fits else total

    def _n_splits(self, feat, thr, path):
        n = 0
        for level in range(self.D):
            for m in np.unique(path[level]):
                if feat[m - 1] < 0:
                    continue
                v = self.X[path[level] == m, feat[m - 1]]
                n += bool((v <= thr[m - 1]).any() and (v > thr[m - 1]).any())
        return n

    def heap_from_tree(self, tree: Tree):
        feat, thr = np.full(self.B, -1, np.intp), np.zeros(self.B)
        heap, _ = heap_of_tree(tree, self.D)
        for node in np.flatnonzero(~tree.is_leaf):
            feat[heap[node] - 1], thr[heap[node] - 1] = tree.feature[node], tree.threshold[node]
        return feat, thr

    def to_tree(self, feat, thr, models, X_all, y_all, w_all) -> Tree:
        """Compact tree (splits separating no row removed) with the leaves' models in user units."""
        cl, cr, ft, th, heap_leaf = [], [], [], [], []

        def new():
            cl.append(TREE_LEAF), cr.append(TREE_LEAF), ft.append(LEAF_FEATURE), th.append(np.nan), heap_leaf.append(-1)
            return len(cl) - 1

        stack = [(1, new(), np.arange(self.n))]
        while stack:
            m, node, rows = stack.pop()
            while m < self.L:
                f = feat[m - 1]
                left = np.ones(rows.size, bool) if f < 0 else self.X[rows, f] <= thr[m - 1]
                if left.all() or not left.any():
                    m = 2 * m + (0 if left.all() else 1)
                    continue
                break
            if m >= self.L:
                heap_leaf[node] = m - self.L
                continue
            v = self.X[rows, f]
            ft[node], th[node] = int(f), float(midpoint_threshold(v[left].max(), v[~left].min()))
            lo, hi = new(), new()
            cl[node], cr[node] = lo, hi
            stack.append((2 * m + 1, hi, rows[~left]))
            stack.append((2 * m, lo, rows[left]))
        n = len(cl)
        tree = Tree(cl, cr, ft, th, np.zeros((n, 1)), n_features=self.F, task="regression")
        tree = tree.fill_statistics(X_all, y_all, w_all)
        coef, intercept = np.zeros((n, self.F)), np.zeros(n)
        for node in range(n):
            if cl[node] != TREE_LEAF:
                continue
            _, beta, u = models[heap_leaf[node]]
            c = np.zeros(self.F)
            c[self.U] = self.ry * u / self.x_range[self.U]
            coef[node] = c
            intercept[node] = beta - c @ self.x_min - 0.5 * self.ry * u.sum()
        d = tree.to_dict()
        d.update(leaf_coef=coef, leaf_intercept=intercept)
        return Tree.from_dict(d)

    # ---------------------------------------------------------------- split move
    def split_bounds(self, rows, j, leafL, leafR, nL):
        """For feature ``j`` at a node: ``(values, lower bound per k, admissible per k)``, ``k`` rows left."""
        order = np.argsort(self.X[rows, j], kind="stable")
        r = rows[order]
        v = self.X[r, j]
        n = r.size
        V = np.column_stack([np.ones(n), self.Z[r], self.yc[r]])  # (n, p)
        p = V.shape[1]
        outer = (V * self.w[r][:, None])[:, :, None] * V[:, None, :]  # (n, p, p)
        lb = np.zeros(n + 1)
        cnt_ok = np.ones(n + 1, bool)
        for leaves, prefix in ((leafL[order], True), (leafR[order], False)):
            for t in range(nL):
                mask = leaves == t
                S = np.zeros((n + 1, p, p))
                np.cumsum(outer * mask[:, None, None], axis=0, out=S[1:])
                cnt = np.r_[0, np.cumsum(mask)]
                if not prefix:
                    S, cnt = S[-1] - S, cnt[-1] - cnt
                lb += _ls_error(S) / self.sst
                cnt_ok &= (cnt == 0) | (cnt >= self.min_leaf)
        distinct = np.ones(n + 1, bool)
        distinct[1:n] = v[1:] > v[:-1]
        return v, lb, cnt_ok & distinct


def _ls_error(S):
    """Least-squares error of ``y`` on ``[1, z]`` from stacked Gram matrices of ``[1, z, y]`` (0 if empty)."""
    A, b, c = S[:, :-1, :-1], S[:, :-1, -1], S[:, -1, -1]
    scale = np.maximum(np.einsum("kii->k", A), 1e-300)
    A = A + (1e-12 * scale)[:, None, None] * np.eye(A.shape[1])
    try:
        sol = np.linalg.solve(A, b[:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:
        sol = np.einsum("kij,kj->ki", np.linalg.pinv(A), b)
    return np.maximum(c - np.einsum("ki,ki->k", b, sol), 0.0)


def _quantile_splits(v, min_leaf, n_quantiles, order=None):
    """Up to ``n_quantiles`` splits ``(k, threshold, left mask)`` of ``v``, spread, both sides >= ``min_leaf``."""
    order = np.argsort(v, kind="stable") if order is None else order
    vs = v[order]
    n = v.size
    ks = np.flatnonzero(vs[1:] > vs[:-1]) + 1
    ks = ks[(ks >= min_leaf) & (n - ks >= min_leaf)]
    if ks.size > n_quantiles:
        ks = ks[np.unique(np.linspace(0, ks.size - 1, n_quantiles).round().astype(int))]
    out = []
    for k in ks:
        t = float(midpoint_threshold(vs[k - 1], vs[k]))
        out.append((int(k), t, v <= t))
    return out


def _project_l1(u, radius):
    """Euclidean projection onto ``{|u|₁ <= radius}`` (Duchi et al. 2008)."""
    a = np.abs(u)
    if a.sum() <= radius:
        return u
    s = np.sort(a)[::-1]
    cs = np.cumsum(s)
    k = np.arange(1, s.size + 1)
    rho = np.flatnonzero(s - (cs - radius) / k > 0)[-1]
    theta = (cs[rho] - radius) / (rho + 1)
    return np.sign(u) * np.maximum(a - theta, 0.0)


def linear_leaf_objective(tree: Tree, X, y, sample_weight=None, *, alpha=0.0, leaf_alpha=0.0) -> float:
    """ORT-L's squared-error objective of ``tree`` from its own predictions (module docstring)."""
    X = np.asarray(X, np.float64)
    y = np.asarray(y, np.float64)
    w = np.ones(y.size) if sample_weight is None else np.asarray(sample_weight, np.float64)
    keep = w > 0
    ybar = np.average(y[keep], weights=w[keep])
    sst = float(w[keep] @ (y[keep] - ybar) ** 2)
    sse = float(w[keep] @ (y[keep] - tree.predict(X[keep])) ** 2)
    value = sse / (sst if sst > 0 else 1.0) + alpha * tree.n_splits
    if tree.leaf_coef is not None and leaf_alpha:
        span = np.ptp(X[keep], axis=0)
        ptp = float(np.ptp(y[keep]))
        value += leaf_alpha * float((np.abs(tree.leaf_coef[tree.is_leaf]) @ span).sum()) / (ptp if ptp > 0 else 1.0)
    return value


def _within_budget(tree: Tree, prob: _Problem) -> bool:
    if tree.leaf_coef is None:
        return True
    used = np.abs(tree.leaf_coef[tree.is_leaf]) * prob.x_range
    off = ~prob.usable & (np.abs(tree.leaf_coef[tree.is_leaf]) > 0)
    return bool((used.sum(axis=1) <= prob.C * prob.ry * (1 + 1e-12)).all() and not off.any())


class _Search:
    def __init__(self, prob: _Problem, clock: Clock, rng, max_exact: int):
        self.p, self.clock, self.rng, self.max_exact = prob, clock, rng, max_exact

    def descend_all(self, feat, thr):
        obj = self.p.evaluate(feat, thr)
        improved = True
        while improved and not self.clock.out():
            improved = False
            for m in range(1, self.p.B + 1):
                if self.clock.out():
                    break
                res = self.split_move(feat, thr, m, obj)
                if res is not None:
                    feat, thr, obj = res
                    improved = True
        return feat, thr, obj

    def split_move(self, feat, thr, m, obj):
        p = self.p
        leaf, path = p.route(feat, thr)
        level = int(np.log2(m))
        rows = np.flatnonzero(path[level] == m)
        if rows.size < 2 * p.min_leaf:
            return None
        nL = 2 ** (p.D - level - 1)
        # leaves below each child for every row (the fixed sub-trees)
        sub = {}
        for child in (2 * m, 2 * m + 1):
            node = np.full(rows.size, child, np.intp)
            h = child
            while h < p.L:
                f = feat[node - 1]
                node = 2 * node + ((f >= 0) & (p.X[rows, np.maximum(f, 0)] > thr[node - 1]))
                h *= 2
            sub[child] = node - p.L - (child * nL - p.L)
        # the current cost of the leaves below m, and of the rest of the tree
        below = np.arange(m * 2 * nL, (m + 1) * 2 * nL) - p.L
        order = np.argsort(leaf, kind="stable")
        size = np.bincount(leaf, minlength=p.L)
        bounds = np.r_[0, np.cumsum(size)]
        cur_below = sum(p.fit_leaf(order[bounds[t]:bounds[t + 1]])[0] for t in below)
        rest = obj - cur_below
        cands = []
        for j in p.U:
            if self.clock.out():
                return None
            v, lb, ok = p.split_bounds(rows, j, sub[2 * m], sub[2 * m + 1], nL)
            n = v.size
            lb = lb + p.alpha * np.r_[0, np.ones(n - 1), 0]
            for k in np.flatnonzero(ok[1:n] & (rest + lb[1:n] < obj - _TOL)) + 1:
                cands.append((lb[k], int(j), float(midpoint_threshold(v[k - 1], v[k]))))
        cands.sort(key=lambda c: c[0])
        best = None
        for bound, j, t in cands[: self.max_exact]:
            if best is not None and rest + bound >= best[2] - _TOL:
                break
            if self.clock.out():
                break
            f2, t2 = feat.copy(), thr.copy()
            f2[m - 1], t2[m - 1] = j, t
            new = p.evaluate(f2, t2)
            if new < obj - _TOL * max(1.0, abs(obj)) and (best is None or new < best[2]):
                best = (f2, t2, new)
        return best

    def lookahead(self, feat, thr, m, n_quantiles=16, n_best=3):
        """Trees whose node ``m`` (its children splitting last) and both children are chosen together.

        Every feature and ``n_quantiles`` thresholds at ``m``, each child's best split among
        ``n_quantiles`` thresholds per feature (or no split), ranked by the unconstrained
        least-squares error of the four leaves; the ``n_best`` are returned for local search.
        """
        p = self.p
        rows = np.flatnonzero(p.route(feat, thr)[1][int(np.log2(m))] == m)
        if rows.size < 2 * p.min_leaf:
            return []
        cands = []
        for j in p.U:
            for k, t, left in _quantile_splits(p.X[rows, j], p.min_leaf, n_quantiles):
                if self.clock.out():
                    return []
                lo, cl = self.best_child(rows[left], n_quantiles)
                hi, cr = self.best_child(rows[~left], n_quantiles)
                cands.append((lo + hi + p.alpha * (1 + (cl[0] >= 0) + (cr[0] >= 0)), int(j), t, cl, cr))
        cands.sort(key=lambda c: c[0])
        out = []
        for _, j, t, cl, cr in cands[:n_best]:
            f2, t2 = feat.copy(), thr.copy()
            f2[m - 1], t2[m - 1] = j, t
            (f2[2 * m - 1], t2[2 * m - 1]), (f2[2 * m], t2[2 * m]) = cl, cr
            out.append((f2, t2))
        return out

    def best_child(self, rows, n_quantiles):
        """``(lower bound, (feature, threshold))`` of the best split of ``rows`` into two leaves (feature -1: none)."""
        p = self.p
        V = np.column_stack([np.ones(rows.size), p.Z[rows], p.yc[rows]])
        outer = (V * p.w[rows][:, None])[:, :, None] * V[:, None, :]
        total = outer.sum(axis=0)
        best = (float(_ls_error(total[None])[0]) / p.sst, (-1, 0.0))
        for j in p.U:
            v = p.X[rows, j]
            order = np.argsort(v, kind="stable")
            splits = _quantile_splits(v, p.min_leaf, n_quantiles, order=order)
            if not splits:
                continue
            ks = np.array([k for k, _, _ in splits])
            S = np.cumsum(np.add.reduceat(outer[order], np.r_[0, ks]), axis=0)[:-1]  # prefix sums at every k
            err = (_ls_error(S) + _ls_error(total - S)) / p.sst
            i = int(err.argmin())
            if err[i] < best[0]:
                best = (float(err[i]), (int(j), splits[i][1]))
        return best

    def perturb(self, feat, thr):
        p = self.p
        feat, thr = feat.copy(), thr.copy()
        m = int(self.rng.integers(1, p.B + 1))
        j = int(self.rng.choice(p.U))
        v = p.X[:, j]
        feat[m - 1], thr[m - 1] = j, float(np.quantile(v, self.rng.uniform(0.1, 0.9)))
        return feat, thr


def improve_linear_leaves(
    tree: Tree, X, y, sample_weight=None, *, min_samples_leaf: int = 1, coef_budget: float = 2.0,
    leaf_alpha: float = 0.0, time_limit: float | None = 10.0, alpha: float = 0.0, max_depth: int | None = None,
    starts=(), random_state=0, max_rounds: int = 10, max_exact: int = 12, loss: str = "squared",
) -> Tree:
    """A linear-leaf tree whose ORT-L objective (squared error) is at most ``tree``'s (module docstring).

    Parameters
    ----------
    tree : greedy.Tree
        Regression start tree (constant or linear leaves) of depth <= ``max_depth``.
    X, y, sample_weight
        Training data; rows of weight 0 are ignored.
    min_samples_leaf : int
        Minimum number of rows (of positive weight) in every non-empty leaf.
    coef_budget, leaf_alpha
        ORT-L's ``C`` and ``λ`` (``ORTFormulation.coef_budget``, ``.leaf_alpha``).
    time_limit : float or None
        Seconds for the whole search.
    alpha : float
        ORT's penalty per split (objective units).
    max_depth : int, optional
        Default the depth of ``tree`` (at least 1).
    starts : sequence of greedy.Tree
        Further start trees.
    random_state : int or None
        Seeds the perturbations.
    max_rounds : int
        Perturbation rounds in a row without improvement after which the search stops.
    max_exact : int
        Candidate splits evaluated exactly per node move (best lower bounds first).
    loss : {"squared"}
        The objective's loss: squared error only (for ORT-L with ``loss="absolute"`` a
        least-squares tree is no guarantee of a better absolute error).

    Returns
    -------
    greedy.Tree
        With ``leaf_coef`` / ``leaf_intercept`` within the budget; ``tree`` itself when
        nothing strictly better was found and ``tree`` is a valid ORT-L tree.
    """
    if loss != "squared":
        raise ValueError(f"improve_linear_leaves minimises squared error; got loss={loss!r}")
    X, y, w = check_inputs(tree, X, y, sample_weight, min_samples_leaf, "regression")
    y = y.astype(np.float64)
    if not (np.isfinite(coef_budget) and coef_budget > 0) or not (np.isfinite(leaf_alpha) and leaf_alpha >= 0):
        raise ValueError("coef_budget must be > 0 and leaf_alpha >= 0")
    depth = int(max_depth) if max_depth is not None else max(1, tree.max_depth)
    clock = Clock(time_limit)
    rng = np.random.default_rng(random_state)
    prob = _Problem(X, y, w, depth, alpha, min_samples_leaf, coef_budget, leaf_alpha)
    input_valid = _within_budget(tree, prob)
    input_obj = linear_leaf_objective(tree, X, y, w, alpha=alpha, leaf_alpha=leaf_alpha) if input_valid else np.inf
    search = _Search(prob, clock, rng, max_exact)
    keep = w > 0
    def cart_starts():
        # greedy CART: constant leaves (fast), then linear leaves on the constant criterion's splits and
        # on splits chosen by the linear leaves' own error (about 3e4 row-features a second: skipped
        # when it would take more than half the time left)
        for leaf_model, criterion in (("constant", "squared_error"), ("linear", "squared_error"),
                                      ("linear", "linear_squared_error")):
            if clock.out() or (leaf_model == "linear" and X.shape[0] * X.shape[1] > 1.5e4 * clock.left()):
                continue
            try:
                cart = CARTRegressor(max_depth=depth, min_samples_leaf=int(min_samples_leaf), leaf_model=leaf_model,
                                     criterion=criterion)
                yield cart.fit(X[keep], y[keep], sample_weight=w[keep]).tree_
            except ValueError:
                pass

    best = None

    def polish(feat, thr):
        """Local search from ``(feat, thr)``; ``best`` replaced when it ends strictly better."""
        nonlocal best
        feat, thr, obj = search.descend_all(feat, thr)
        if best is None or obj < best[2] - _TOL * max(1.0, abs(best[2])):
            best = (feat, thr, obj)

    def lookahead(n_quantiles):
        for m in range(2 ** max(depth - 2, 0), 2 ** max(depth - 1, 0)):  # nodes whose children split last
            for feat, thr in search.lookahead(best[0], best[1], m, n_quantiles=n_quantiles):
                if clock.out():
                    return
                if np.isfinite(prob.evaluate(feat, thr)):
                    polish(feat, thr)

    heaps = []
    for st in itertools.chain([tree, *starts], cart_starts()):
        feat, thr = prob.heap_from_tree(st)
        obj = prob.evaluate(feat, thr)
        if not np.isfinite(obj):
            feat, thr = np.full(prob.B, -1, np.intp), np.zeros(prob.B)
            obj = prob.evaluate(feat, thr)
        heaps.append((feat, thr))
        if best is None or obj < best[2] - _TOL * max(1.0, abs(best[2])):
            best = (feat, thr, obj)  # every start counts, even if the clock stops the search before it
    for i, (feat, thr) in enumerate(heaps):
        if clock.out():
            break
        polish(feat, thr)
        if i == 0 and depth >= 2:  # a coarse look-ahead early: at depth 2 it re-chooses the whole tree
            lookahead(8)
    if depth >= 2:
        lookahead(16)
    fails = 0
    while prob.U.size and fails < max_rounds and not clock.out():  # no usable feature (constant X): no split
        feat, thr = search.perturb(best[0], best[1])
        if not np.isfinite(prob.evaluate(feat, thr)):
            fails += 1
            continue
        feat, thr, obj = search.descend_all(feat, thr)
        if obj < best[2] - _TOL * max(1.0, abs(best[2])):
            best, fails = (feat, thr, obj), 0
        else:
            fails += 1
    obj, models = prob.evaluate(best[0], best[1], fits=True)
    out = prob.to_tree(best[0], best[1], models, X, y, w)
    out_obj = linear_leaf_objective(out, X, y, w, alpha=alpha, leaf_alpha=leaf_alpha)
    if not _within_budget(out, prob):
        return tree
    if np.isfinite(input_obj) and not out_obj < input_obj - _TOL * max(1.0, abs(input_obj)):
        return tree
    return out


def greedy_coef_budget(X, y, sample_weight=None, *, depth: int, min_samples_leaf: int = 1) -> float:
    """The smallest ORT-L budget that holds greedy linear-leaf CART's leaves (``coef_budget="auto"``).

    Greedy :class:`greedy.CARTRegressor` with linear leaves, its splits grown with the constant
    criterion and with the linear leaves' own (``linear_squared_error``); each leaf's
    ``Σ_j |coef_j| range(x_j) / range(y)`` (ranges over the rows of positive weight), the
    largest of them rounded up to a tenth, and at least 2. Both greedy trees are then in
    ORT-L's model, so a linear-leaf optimum over it is never worse than either.
    """
    X = np.asarray(X, np.float64)
    y = np.asarray(y, np.float64)
    w = np.ones(y.size) if sample_weight is None else np.asarray(sample_weight, np.float64)
    keep = w > 0
    span, ry = np.ptp(X[keep], axis=0), float(np.ptp(y[keep]))
    largest = 0.0
    for criterion in ("squared_error", "linear_squared_error"):
        try:
            tree = CARTRegressor(max_depth=depth, min_samples_leaf=int(min_samples_leaf), leaf_model="linear",
                                 criterion=criterion).fit(X[keep], y[keep], sample_weight=w[keep]).tree_
        except ValueError:  # too few rows for the leaf models
            continue
        if tree.leaf_coef is not None and ry > 0:
            largest = max(largest, float((np.abs(tree.leaf_coef[tree.is_leaf]) @ span).max()) / ry)
    return max(2.0, math.ceil(10.0 * largest * (1 + 1e-9)) / 10.0)
