"""Oblique improvement heuristic: node-by-node re-optimisation of hyperplanes (starts for OCT-H).

The tree lives on the complete heap of depth ``D`` (nodes ``1 .. 2**D - 1``, leaves
``2**D ..``), in OCT-H's units: features min-max scaled to ``[0, 1]`` over the rows of
positive weight (``x'``), node ``m`` sends a row left when ``a_m·x' <= b_m`` with
``Σ|a_m| = 1``; a node with ``a_m = 0`` sends every row left (no split).

One **node move** re-chooses the hyperplane of node ``m`` with the rest of the tree fixed.
Every row reaching ``m`` has a leaf below the left child and one below the right child
(read off the fixed sub-trees); for a direction ``a``, sorting the rows by ``a·x'`` and
sending the first ``k`` left gives, for every ``k`` at once (prefix sums of class
weights per leaf), the exact misclassified weight of the sub-tree with every leaf
relabelled to its majority, and the leaf sizes. A threshold is admissible when the
projections on the two sides are at least OCT-H's margin ``μ`` apart (the model cannot
state a hyperplane closer to a row) and every non-empty leaf keeps ``min_samples_leaf``
rows. Directions tried: the node's own, every feature axis, a weighted logistic
regression separating the rows that prefer the left sub-tree (correct there, wrong on
the right) from those that prefer the right one (for a child that is a leaf, each of its
most frequent classes as its label), and random directions around the current one. The
best admissible move is taken when the whole tree's objective, recomputed, strictly
decreases:

.. math:: \\frac{E(T)}{\\hat L} + \\alpha \\sum_m \\|a_m\\|_0

(OCT-H's objective: ``E`` the misclassified weight, ``L̂`` the majority class's, ``α``
per feature used per split). Moves are repeated over the nodes to a fixed point, from
every start (the given tree, the trees in ``starts``, CART when its fit would take at most
half the time left), then from random perturbations of the best tree (one node given a
random hyperplane) until the time limit or ``max_rounds`` perturbations without improvement.

The returned tree encodes each hyperplane in original units (``split_coef @ x <=
threshold``, the threshold halfway between the two sides) and is checked before it is
returned: its training partition equals the heap's, every split leaves a gap of at least
``μ`` in OCT-H's normalisation, and its objective, recomputed from its own predictions,
is below the input tree's. Otherwise the input tree is returned unchanged.
"""

from __future__ import annotations

import numpy as np

from greedy import LEAF_FEATURE, OBLIQUE, TREE_LEAF, CARTClassifier, Tree, midpoint_threshold

from ._common import Clock, check_inputs, heap_of_tree, split_vector

__all__ = ["improve_oblique", "oblique_objective"]

_SAFETY = 1.05  # gaps are required to be this many margins wide, against rounding between unit systems
_TOL = 1e-12
_CART_RATE = 1e6  # row-features a second greedy CART fits at depth 4 (measured 0.75e6 to 2.4e6)


class _Problem:
    """The rows of positive weight in OCT-H's units, and the objective's constants."""

    def __init__(self, X, y, w, n_classes, depth, alpha, min_leaf, margin):
        keep = w > 0
        self.X, self.y, self.w = X[keep], y[keep].astype(np.intp), w[keep]
        self.K, self.D, self.alpha, self.min_leaf = int(n_classes), int(depth), float(alpha), int(min_leaf)
        self.B, self.L = 2**self.D - 1, 2**self.D
        self.margin = float(margin)
        self.gap = self.margin * _SAFETY
        self.x_min = self.X.min(axis=0)
        span = self.X.max(axis=0) - self.x_min
        self.usable = span > 0
        self.x_range = np.where(self.usable, span, 1.0)
        self.Xs = np.where(self.usable, (self.X - self.x_min) / self.x_range, 0.0)
        self.n = self.X.shape[0]
        self.Wy = np.zeros((self.n, self.K))
        self.Wy[np.arange(self.n), self.y] = self.w
        cls = self.Wy.sum(axis=0)
        base = float(cls.sum() - cls.max())
        self.scale = 1.0 / base if base > 0 else 1.0

    # ---------------------------------------------------------------- routing
    def route(self, A, b):
        """``(leaf index per row, projections (n, B), heap node per (row, level))``."""
        P = self.Xs @ A.T
        node = np.ones(self.n, np.intp)
        path = np.empty((self.D, self.n), np.intp)
        r = np.arange(self.n)
        for level in range(self.D):
            path[level] = node
            node = 2 * node + (P[r, node - 1] > b[node - 1])
        return node - self.L, P, path

    def descend(self, A, b, P, rows, start):
        """Leaf index reached by ``rows`` (projections ``P``) from heap node ``start``."""
        node = np.full(rows.size, start, np.intp)
        h = start
        while h < self.L:
            node = 2 * node + (P[rows, node - 1] > b[node - 1])
            h *= 2
        return node - self.L

    def evaluate(self, A, b):
        """Objective of the heap tree ``(A, b)``, or inf when a leaf or a gap is not admissible."""
        leaf, P, path = self.route(A, b)
        size = np.bincount(leaf, minlength=self.L)
        if ((size > 0) & (size < self.min_leaf)).any():
            return np.inf
        counts = np.zeros((self.L, self.K))
        np.add.at(counts, leaf, self.Wy)
        err = float((counts.sum(axis=1) - counts.max(axis=1)).sum())
        penalty = 0.0
        for level in range(self.D):
            nodes = path[level]
            for m in np.unique(nodes):
                rows = np.flatnonzero(nodes == m)
                p = P[rows, m - 1]
                left = p <= b[m - 1]
                if left.all() or not left.any():
                    continue
                if p[~left].min() - p[left].max() < self.gap:
                    return np.inf
                penalty += self.alpha * np.count_nonzero(A[m - 1])
        return err * self.scale + penalty

    def labels(self, A, b):
        leaf = self.route(A, b)[0]
        counts = np.zeros((self.L, self.K))
        np.add.at(counts, leaf, self.Wy)
        return counts.argmax(axis=1)

    # ---------------------------------------------------------------- tree <-> heap
    def heap_from_tree(self, tree: Tree):
        """The heap form of ``tree`` (hyperplanes normalised), thresholds re-centred or snapped into a gap."""
        A, b = np.zeros((self.B, self.X.shape[1])), np.zeros(self.B)
        heap, _ = heap_of_tree(tree, self.D)
        for node in np.flatnonzero(~tree.is_leaf):
            m = heap[node]
            c = split_vector(tree, node)
            a = np.where(self.usable, c * self.x_range, 0.0)
            norm = np.abs(a).sum()
            shift = float(c @ self.x_min)
            if norm == 0:  # constant features only: every row on one side
                b[m - 1] = 0.0 if tree.threshold[node] >= shift else -1.0
                continue
            A[m - 1], b[m - 1] = a / norm, (tree.threshold[node] - shift) / norm
        return self.snap(A, b)

    def snap(self, A, b):
        """Thresholds at the middle of their gap; a gap below the margin moved to the nearest admissible one."""
        b = b.copy()
        P = self.Xs @ A.T  # routing level by level, each level under its snapped ancestors
        node = np.ones(self.n, np.intp)
        for level in range(self.D):
            for m in range(2**level, 2 ** (level + 1)):
                rows = np.flatnonzero(node == m)
                if rows.size == 0 or not A[m - 1].any():
                    continue
                p = self.Xs[rows] @ A[m - 1]
                q = np.unique(p)
                nl = int(np.searchsorted(q, b[m - 1], side="right"))
                if nl == 0 or nl == q.size:
                    continue
                if q[nl] - q[nl - 1] >= self.gap:
                    b[m - 1] = 0.5 * (q[nl] + q[nl - 1])
                    continue
                wide = np.flatnonzero(np.diff(q) >= self.gap)
                if wide.size == 0:
                    b[m - 1] = q[-1] + 1.0
                else:
                    mids = 0.5 * (q[wide] + q[wide + 1])
                    b[m - 1] = mids[np.abs(mids - b[m - 1]).argmin()]
            node = 2 * node + (P[np.arange(self.n), node - 1] > b[node - 1])
        return A, b

    def _reaching(self, A, b, m):
        node = np.ones(self.n, np.intp)
        P = None
        depth_m = int(np.log2(m))
        for _ in range(depth_m):
            if P is None:
                P = self.Xs @ A.T
            node = 2 * node + (P[np.arange(self.n), node - 1] > b[node - 1])
        return np.flatnonzero(node == m)

    def to_tree(self, A, b, X_all, y_all, w_all) -> Tree | None:
        """The compact :class:`greedy.Tree` of the heap tree in original units, or None if it does not check."""
        cl, cr, feat, thr, coef = [], [], [], [], []
        F = self.X.shape[1]
        ok = True

        def new():
            cl.append(TREE_LEAF), cr.append(TREE_LEAF), feat.append(LEAF_FEATURE), thr.append(np.nan)
            coef.append(np.zeros(F))
            return len(cl) - 1

        P = self.Xs @ A.T
        stack = [(1, new(), np.arange(self.n))]
        while stack:
            m, node, rows = stack.pop()
            while m < self.L and rows.size:
                if not A[m - 1].any():
                    m = 2 * m
                    continue
                left = P[rows, m - 1] <= b[m - 1]
                if left.all() or not left.any():
                    m = 2 * m + (0 if left.all() else 1)
                    continue
                break
            if m >= self.L or rows.size == 0:
                continue
            left = P[rows, m - 1] <= b[m - 1]
            c = np.where(self.usable, A[m - 1] / self.x_range, 0.0)
            nz = np.flatnonzero(c)
            lo_child, hi_child = new(), new()
            if nz.size == 1:
                j = nz[0]
                v = self.X[rows, j]
                sign = np.sign(c[j])
                low = v[left] if sign > 0 else v[~left]
                high = v[~left] if sign > 0 else v[left]
                feat[node], thr[node] = int(j), float(midpoint_threshold(low.max(), high.min()))
                ok &= bool(high.min() - low.max() >= self.margin * self.x_range[j])
                first, second = (lo_child, hi_child) if sign > 0 else (hi_child, lo_child)
                cl[node], cr[node] = first, second
                goes_left = (v <= thr[node]) == (sign > 0)
            else:
                proj = self.X[rows] @ c
                feat[node], coef[node] = OBLIQUE, c
                thr[node] = float(midpoint_threshold(proj[left].max(), proj[~left].min()))
                cl[node], cr[node] = lo_child, hi_child
                goes_left = proj <= thr[node]
                norm = np.abs(c * self.x_range).sum()
                q = np.unique(proj)
                nl = int(np.searchsorted(q, thr[node], side="right"))
                ok &= 0 < nl < q.size and q[nl] - q[nl - 1] >= self.margin * norm
            ok &= bool(np.array_equal(goes_left, left))
            stack.append((2 * m + 1, hi_child, rows[~left]))
            stack.append((2 * m, lo_child, rows[left]))
        if not ok:
            return None
        n = len(cl)
        oblique = np.asarray(feat) == OBLIQUE
        tree = Tree(cl, cr, feat, thr, np.zeros((n, self.K)), n_features=F, task="classification",
                    split_coef=np.array(coef) if oblique.any() else None)
        return tree.fill_statistics(X_all, y_all, w_all, n_classes=self.K)

    # ---------------------------------------------------------------- node move
    def node_cost(self, left, leafL, leafR, nL, nR, nnz):
        """The node's part of the objective when ``left`` rows (of those reaching it) go left."""
        cL, cR = np.zeros((nL, self.K)), np.zeros((nR, self.K))
        np.add.at(cL, leafL[left], self.Wy_rows[left])
        np.add.at(cR, leafR[~left], self.Wy_rows[~left])
        err = (cL.sum(1) - cL.max(1)).sum() + (cR.sum(1) - cR.max(1)).sum()
        splits = left.any() and not left.all()
        return float(err * self.scale + (self.alpha * nnz if splits else 0.0))

    def scan(self, a, p_rows, leafL, leafR, nL, nR, nnz):
        """Best admissible ``k`` (first ``k`` rows by ``a·x'`` go left) for the node: ``(cost, b)`` or None."""
        proj = p_rows
        n = proj.size
        order = np.argsort(proj, kind="stable")
        ps = proj[order]
        Wy = self.Wy_rows[order]
        lL, lR = leafL[order], leafR[order]
        r = np.arange(n)
        ML = np.zeros((n, nL, self.K))
        ML[r, lL] = Wy
        CL = np.zeros((n + 1, nL, self.K))
        np.cumsum(ML, axis=0, out=CL[1:])
        MR = np.zeros((n, nR, self.K))
        MR[r, lR] = Wy
        CR = np.zeros((n + 1, nR, self.K))
        np.cumsum(MR, axis=0, out=CR[1:])
        CR = CR[-1] - CR
        err = (CL.sum(axis=2) - CL.max(axis=2)).sum(axis=1) + (CR.sum(axis=2) - CR.max(axis=2)).sum(axis=1)
        cost = err * self.scale
        admissible = np.ones(n + 1, bool)
        admissible[1:n] = ps[1:] - ps[:-1] >= self.gap
        if self.min_leaf > 1:
            cntL = np.zeros((n + 1, nL))
            np.cumsum(np.eye(nL)[lL], axis=0, out=cntL[1:])
            cntR = np.zeros((n + 1, nR))
            np.cumsum(np.eye(nR)[lR], axis=0, out=cntR[1:])
            cntR = cntR[-1] - cntR
            admissible &= ((cntL == 0) | (cntL >= self.min_leaf)).all(axis=1)
            admissible &= ((cntR == 0) | (cntR >= self.min_leaf)).all(axis=1)
        cost[1:n] += self.alpha * nnz
        cost = np.where(admissible, cost, np.inf)
        k = int(cost.argmin())
        if not np.isfinite(cost[k]):
            return None
        if k == 0:
            b = ps[0] - 1.0
        elif k == n:
            b = ps[-1] + 1.0
        else:
            b = 0.5 * (ps[k - 1] + ps[k])
        return float(cost[k]), float(b), k


def _tree_objective(tree, X, y, w, K, alpha):
    """OCT-H's objective of ``tree`` from its own predictions (the formulation's ``objective_of_tree``)."""
    cls = np.bincount(y, weights=w, minlength=K)
    base = float(cls.sum() - cls.max())
    pred = tree.predict(X).argmax(axis=1)
    err = float(w[pred != y].sum())
    return err * (1.0 / base if base > 0 else 1.0) + alpha * _features_used(tree)


def _features_used(tree: Tree) -> int:
    internal = ~tree.is_leaf
    oblique = internal & (tree.feature == OBLIQUE)
    n = int((internal & ~oblique).sum())
    if oblique.any():
        n += int(np.count_nonzero(tree.split_coef[oblique]))
    return n


def oblique_objective(tree: Tree, X, y, sample_weight=None, *, alpha=0.0, n_classes=None) -> float:
    """OCT-H's training objective of ``tree``: misclassified weight / the majority's + ``alpha`` per feature used."""
    y = np.asarray(y).astype(np.intp)
    w = np.ones(y.size) if sample_weight is None else np.asarray(sample_weight, np.float64)
    K = int(n_classes) if n_classes is not None else int(y.max()) + 1
    return _tree_objective(tree, np.asarray(X, np.float64), y, w, K, float(alpha))


class _Search:
    """Local search over node moves, with its random state and clock."""

    def __init__(self, prob: _Problem, clock: Clock, rng, n_random: int):
        self.p, self.clock, self.rng, self.n_random = prob, clock, rng, n_random

    def descend_all(self, A, b):
        """Apply improving node moves until none improves (or time is up)."""
        obj = self.p.evaluate(A, b)
        improved = True
        while improved and not self.clock.out():
            improved = False
            for m in range(1, self.p.B + 1):
                if self.clock.out():
                    break
                res = self.node_move(A, b, m, obj)
                if res is not None:
                    A, b, obj = res
                    improved = True
        return A, b, obj

    def node_move(self, A, b, m, obj):
        p = self.p
        leaf, P, path = p.route(A, b)
        level = int(np.log2(m))
        rows = np.flatnonzero(path[level] == m)
        if rows.size < 2 * p.min_leaf:
            return None
        below = p.D - level - 1  # levels below the children
        nL = 2**below
        nR = nL
        leafL = p.descend(A, b, P, rows, 2 * m) - (2 * m) * nL + p.L
        leafR = p.descend(A, b, P, rows, 2 * m + 1) - (2 * m + 1) * nL + p.L
        p.Wy_rows = p.Wy[rows]
        Xr = p.Xs[rows]
        labels = p.labels(A, b)
        yr, wr = p.y[rows], p.w[rows]
        ownL = labels[leafL + (2 * m) * nL - p.L]
        ownR = labels[leafR + (2 * m + 1) * nL - p.L]

        cur_nnz = np.count_nonzero(A[m - 1])
        node_now = p.node_cost(P[rows, m - 1] <= b[m - 1], leafL, leafR, nL, nR, cur_nnz)
        best = []
        if cur_nnz:
            r = p.scan(A[m - 1], Xr @ A[m - 1], leafL, leafR, nL, nR, cur_nnz)
            if r is not None:
                best.append((r[0], A[m - 1].copy(), r[1]))

        def consider(a):
            if self.clock.out():
                return
            a = np.where(p.usable, a, 0.0)
            s = np.abs(a).sum()
            if s == 0 or not np.isfinite(s):
                return
            a = a / s
            for sgn in (1.0, -1.0):
                r = p.scan(sgn * a, Xr @ (sgn * a), leafL, leafR, nL, nR, np.count_nonzero(a))
                if r is not None:
                    best.append((r[0], sgn * a, r[1]))

        F = Xr.shape[1]
        for j in np.flatnonzero(p.usable):
            e = np.zeros(F)
            e[j] = 1.0
            consider(e)
        # preferences read off the fixed sub-trees (a leaf child: each frequent class as its label)
        top = np.argsort(-np.bincount(yr, weights=wr, minlength=p.K))[:3]
        optsL = [ownL] if len(np.unique(leafL)) > 1 else [np.full(rows.size, k) for k in top]
        optsR = [ownR] if len(np.unique(leafR)) > 1 else [np.full(rows.size, k) for k in top]
        seen = set()
        for lab_l in optsL:
            for lab_r in optsR:
                okL, okR = yr == lab_l, yr == lab_r
                prefL, prefR = okL & ~okR, okR & ~okL
                key = (prefL.tobytes(), prefR.tobytes())
                if key in seen or not prefL.any() or not prefR.any():
                    continue
                seen.add(key)
                if self.clock.out():
                    break
                for a in _separating_directions(Xr[prefL | prefR], prefR[prefL | prefR], wr[prefL | prefR]):
                    consider(a)
                    if p.alpha > 0:  # sparser versions: alpha is charged per feature used
                        for k in (2, 3, 5):
                            if np.count_nonzero(a) > k:
                                consider(np.where(np.abs(a) >= np.sort(np.abs(a))[-k], a, 0.0))
        if cur_nnz:
            for sigma in (0.02, 0.1, 0.3):
                for _ in range(max(1, self.n_random // 3)):
                    consider(A[m - 1] + sigma * self.rng.standard_normal(F))
        for _ in range(self.n_random):
            consider(self.rng.standard_normal(F))

        best.sort(key=lambda t: t[0])
        for cost, a, bb in best[:8]:
            if cost >= node_now - _TOL or self.clock.out():  # each check routes every row
                break
            A2, b2 = A.copy(), b.copy()
            A2[m - 1], b2[m - 1] = a, bb
            new = p.evaluate(A2, b2)
            if new < obj - _TOL * max(1.0, abs(obj)):
                return A2, b2, new
        return None

    def perturb(self, A, b):
        """A random node gets a random hyperplane through the rows reaching it."""
        p = self.p
        A, b = A.copy(), b.copy()
        m = int(self.rng.integers(1, p.B + 1))
        rows = p._reaching(A, b, m)
        if rows.size < 2:
            return A, b
        a = np.where(p.usable, self.rng.standard_normal(A.shape[1]), 0.0)
        if A[m - 1].any() and self.rng.random() < 0.5:
            a = A[m - 1] + 0.5 * np.where(p.usable, self.rng.standard_normal(A.shape[1]), 0.0)
        s = np.abs(a).sum()
        if s == 0:
            return A, b
        a /= s
        proj = p.Xs[rows] @ a
        A[m - 1], b[m - 1] = a, float(np.quantile(proj, self.rng.uniform(0.2, 0.8)))
        return p.snap(A, b)


def _separating_directions(Xp, right, w):
    """Directions (in ``x'`` units, left = small projection) of weighted linear classifiers of ``right``."""
    mu = np.average(Xp, axis=0, weights=w)
    sd = np.sqrt(np.average((Xp - mu) ** 2, axis=0, weights=w))
    sd = np.where(sd > 0, sd, 1.0)
    Z = np.column_stack([(Xp - mu) / sd, np.ones(Xp.shape[0])])
    wn = w / w.mean()
    out = []
    for C in (1.0, 1e3):
        coef = _logistic(Z, right.astype(float), wn, 1.0 / C)
        if coef is not None:
            out.append(coef[:-1] / sd)
    # difference of the two weighted means (a cheap Fisher-like direction)
    out.append(np.average(Xp[right], axis=0, weights=w[right]) - np.average(Xp[~right], axis=0, weights=w[~right]))
    return out


def _logistic(Z, t, w, l2, iters=30):
    """Weighted L2-regularised logistic regression by Newton's method (last column: intercept, unpenalised)."""
    n, d = Z.shape
    beta = np.zeros(d)
    reg = np.full(d, l2)
    reg[-1] = 0.0
    for _ in range(iters):
        s = Z @ beta
        p = 0.5 * (1.0 + np.tanh(0.5 * s))  # the logistic function, without overflow
        grad = Z.T @ (w * (p - t)) + reg * beta
        h = w * np.maximum(p * (1 - p), 1e-10)
        H = (Z * h[:, None]).T @ Z + np.diag(reg + 1e-10)
        try:
            step = np.linalg.solve(H, grad)
        except np.linalg.LinAlgError:
            return None
        beta -= step
        if not np.all(np.isfinite(beta)):
            return None
        if np.abs(step).max() < 1e-8 * max(1.0, np.abs(beta).max()):
            break
    return beta


def improve_oblique(
    tree: Tree, X, y, sample_weight=None, *, alpha: float = 0.0, min_samples_leaf: int = 1, n_classes=None,
    time_limit: float | None = 10.0, random_state=0, max_depth: int | None = None, starts=(),
    margin: float = 1e-4, max_rounds: int = 30, n_random: int = 12,
) -> Tree:
    """A tree with hyperplane splits whose OCT-H objective is at most ``tree``'s (module docstring).

    Parameters
    ----------
    tree : greedy.Tree
        Classification start tree (axis-aligned or oblique) of depth <= ``max_depth``.
    X, y, sample_weight
        Training data: ``y`` class codes ``0 .. n_classes - 1``; rows of weight 0 are ignored.
    alpha : float
        OCT-H's penalty per feature used per split (objective units).
    min_samples_leaf : int
        Minimum number of rows (of positive weight) in every non-empty leaf.
    n_classes : int, optional
        Default ``max(y) + 1``.
    time_limit : float or None
        Seconds for the whole search (the starts and the perturbations).
    random_state : int or None
        Seeds the random directions and perturbations.
    max_depth : int, optional
        Depth of the heap the search works on; default the depth of ``tree`` (at least 1).
    starts : sequence of greedy.Tree
        Further start trees (e.g. the axis-aligned optimum when ``tree`` is CART's).
    margin : float
        OCT-H's ``μ`` (``OCTHFormulation.margin``): every split of the result leaves a gap of
        at least ``μ`` between its sides in OCT-H's normalisation.
    max_rounds : int
        Perturbation rounds in a row without improvement after which the search stops.
    n_random : int
        Random directions tried per node move.

    Returns
    -------
    greedy.Tree
        ``tree`` itself unless a strictly better tree was found; every returned tree is
        checked as described in the module docstring.
    """
    X, y, w = check_inputs(tree, X, y, sample_weight, min_samples_leaf, "classification")
    y = y.astype(np.intp)
    K = int(n_classes) if n_classes is not None else int(y.max()) + 1
    depth = int(max_depth) if max_depth is not None else max(1, tree.max_depth)
    clock = Clock(time_limit)
    rng = np.random.default_rng(random_state)
    input_obj = _tree_objective(tree, X, y, w, K, alpha)
    prob = _Problem(X, y, w, K, depth, alpha, min_samples_leaf, margin)
    if prob.n < 2:
        return tree
    search = _Search(prob, clock, rng, n_random)

    start_trees = [tree, *starts]
    keep = w > 0
    # the CART start only when its fit would take at most half the time left
    if not clock.out() and X.shape[0] * X.shape[1] <= _CART_RATE * 0.5 * clock.left():
        try:
            cart = CARTClassifier(max_depth=depth, min_samples_leaf=int(min_samples_leaf), random_state=0)
            cart.fit(X[keep], y[keep], sample_weight=w[keep])
            start_trees.append(cart.tree_)
        except ValueError:
            pass
    best = None
    for st in start_trees:
        if clock.out():
            break
        A, b = prob.heap_from_tree(st)
        if not np.isfinite(prob.evaluate(A, b)):
            A, b = np.zeros_like(A), np.zeros_like(b)  # the root leaf is always admissible
        A, b, obj = search.descend_all(A, b)
        if best is None or obj < best[2] - _TOL:
            best = (A, b, obj)
    if best is None:
        return tree
    fails = 0
    while fails < max_rounds and not clock.out() and best[2] > _TOL:
        A, b = search.perturb(best[0], best[1])
        if not np.isfinite(prob.evaluate(A, b)):
            fails += 1
            continue
        A, b, obj = search.descend_all(A, b)
        if obj < best[2] - _TOL * max(1.0, abs(best[2])):
            best, fails = (A, b, obj), 0
        else:
            fails += 1
    out = prob.to_tree(best[0], best[1], X, y, w)
    if out is None:
        return tree
    same = _same_partition(out.apply(X[keep]), prob.route(best[0], best[1])[0])
    out_obj = _tree_objective(out, X, y, w, K, alpha)
    if not same or out_obj >= input_obj - _TOL * max(1.0, abs(input_obj)):
        return tree
    return out


def _same_partition(a, b) -> bool:
    """Whether two labellings of the same rows define the same groups."""
    pairs = np.unique(np.column_stack([a, b]), axis=0)
    return np.unique(pairs[:, 0]).size == pairs.shape[0] == np.unique(pairs[:, 1]).size
