"""Depth-2 ORT with user rows on its leaf values, solved exactly in squared error by enumeration.

Squared-error ORT minimises a piecewise-linear under-estimate of the squared error (HiGHS has
no MIQP), so no MIP bound of it closes the gap to an exact squared-error optimum. When every
user row is a linear row on the leaf values ``β`` only (e.g. a monotone row
``β_0 <= β_3``), the depth-2 model is small enough to be searched exactly instead: a
**structure** fixes the root's split and each child's, hence every row's heap leaf; with it
fixed, the leaf values solve

.. math:: P(s) = \\min_\\beta \\sum_t W_t (\\beta_t - m_t)^2 \\quad\\text{s.t.}\\quad
          lo_r \\le a_r^\\top \\beta \\le hi_r\\ (r = 1..R),\\ \\beta \\in [y_{min}, y_{max}],

(``W_t``, ``m_t``: weight and weighted mean of leaf ``t``'s rows; a leaf no row reaches has
``W_t = 0`` and a free ``β_t``), and the structure costs
``c(s) = α·splits + κ (Σ_t SSE_t + P(s))`` (``κ`` the model's error scale): the model's
objective with the *exact* squared error.

**Lower bound of a structure.** Each row alone is a relaxation: dropping the others and the
box, ``P_r(s) = v_r^2 / Σ_{t: a_{rt} ≠ 0} a_{rt}^2 / W_t`` with ``v_r`` the violation of
row ``r`` at ``β = m`` (the weighted projection onto a half-space), and 0 when a leaf of the
row is empty (its free ``β_t`` meets the row: the row alone, without the box). So ``P(s) >= max_r P_r(s)`` and
``LB(s) = α·splits + κ (Σ_t SSE_t + max_r P_r(s)) <= c(s)``.

**Exact value.** The projection onto the row ``r*`` attaining the maximum among the rows
without an empty leaf, ``β_t = m_t - λ a_{r^*t} / W_t``, is the optimum of a relaxation;
when it meets those rows and the box, and the formulation's encoding of the tree (its start
vector: empty leaves moved to meet the rows, ``ORTFormulation._free_empty_leaves``) meets
every row of the model, the tree is a solution and ``c(s) = LB(s)``; its objective is then
recomputed from the tree (:meth:`~optitree.formulations.TreeFormulation.objective_of_tree`).
Only such trees become incumbents.

**Search** (root-split decomposition with the children enumerated). Root candidates ``c`` (every
allowed feature at every midpoint of the modelled rows) in increasing engine bound ``L(c)``
(unconstrained: a lower bound under any row; 0 where the engine lists none). For each,
every pair of child options (a leaf, a split on an allowed feature at a midpoint, or a
split sending every row left, which in ORT's routing empties the right leaf) whose
unconstrained cost can still beat the incumbent ``z*`` is evaluated (``LB`` and, for the
cheapest below ``z*``, ``c``). It stops when the next ``L(c) >= z*``. The trees whose root
sends every row right, and the root leaf, are evaluated first. Bound:
``min(z*, min LB over the evaluated pairs, L of the first unvisited candidate)``; ``z*`` is
proven when that meets it within ``10^-9`` relative (rounding of the sums), and the bound is
otherwise lowered by as much.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..formulations import PASS_THROUGH, HeapTree, InfeasibleStartError, from_heap
from ..model import solution_violation, user_rows

__all__ = ["leaf_value_rows", "LeafRowSearch"]

_TOL = 1e-9
_PAIR_CELLS = 1_000_000  # pairs × rows evaluated per block
_TRIES = 10  # candidates checked for exactness per root, in increasing cost


def leaf_value_rows(form, spec):
    """The user rows of ``spec`` as rows on ORT's leaf values, or None when the search does not apply.

    Applies to depth-2 ORT with constant leaves and squared error whose user rows
    (blocks ``user_constraints*``) touch only the ``beta`` columns.

    Returns
    -------
    (A, lo, hi) : float arrays (R, 4), (R,), (R,), or None
    """
    beta = form.leaf_value_columns()
    rows = None if beta is None else user_rows(spec)
    if rows is None:
        return None
    A, lo, hi = rows
    others = np.ones(spec.n_cols, bool)
    others[beta] = False
    if A[:, others].nnz:
        return None
    A = A[:, beta].toarray()
    lo, hi = lo.astype(float), hi.astype(float)
    keep = np.abs(A).sum(axis=1) > 0
    if ((lo[~keep] > _TOL) | (hi[~keep] < -_TOL)).any():
        return None  # a row without columns that no tree meets: the model is infeasible, the MIP says so
    return A[keep], lo[keep], hi[keep]


@dataclass
class _Options:
    """A child's options: its subtree's cost and the weight and weighted target sum of its two heap leaves.

    A leaf sends its rows to the second heap leaf (the first is empty); ``encodable`` False: a
    split sending every row left (no tree encodes it; bound only).
    """

    cost: np.ndarray  # (K,)
    W: np.ndarray  # (K, 2)
    S: np.ndarray  # (K, 2)
    encodable: np.ndarray  # (K,) bool
    feature: np.ndarray  # (K,) int, PASS_THROUGH for a leaf
    threshold: np.ndarray  # (K,)

    def take(self, keep):
        return _Options(*(getattr(self, f)[keep] for f in self.__dataclass_fields__))


class LeafRowSearch:
    """The search of the module docstring for one built ORT formulation and its rows on ``β``.

    Parameters
    ----------
    form : ORTFormulation
        Built, depth 2, constant leaves, squared error.
    rows : tuple
        :func:`leaf_value_rows`.
    allowed : bool array (3, p) or None
        Features allowed at each branch node (heap order).
    """

    def __init__(self, form, rows, allowed):
        self.form = form
        self.A, self.lo, self.hi = rows
        self.X, self.t, self.w, self.n = form.X, form.model_target, form.model_weight, form.count
        self.kappa, self.alpha, self.n_min = form.model_error_scale, form.alpha, form.min_samples_leaf
        self.box = (form.y_min, form.y_max)
        usable = np.asarray(form.usable, bool)
        allowed = np.ones((3, form.n_features), bool) if allowed is None else np.asarray(allowed, bool)
        self.allowed = allowed & usable
        self.order = [np.argsort(self.X[:, j], kind="stable") for j in range(form.n_features)]

    # ------------------------------------------------------------------ options of one child
    def _sse(self, W, S, Q):
        return np.maximum(Q - np.divide(S * S, W, out=np.zeros_like(S), where=W > 0), 0.0)

    def options(self, member, node):
        """Options of heap node ``node`` (2 or 3) over the rows ``member`` (bool mask): leaf, splits, all-left."""
        w, t, n = self.w[member], self.t[member], self.n[member]
        Wt, St, Qt, Nt = w.sum(), (w * t).sum(), (w * t * t).sum(), n.sum()
        leaf = self.kappa * float(self._sse(Wt, St, Qt)) if Nt >= self.n_min else math.inf
        cost, W, S, feat, thr = [leaf], [(0.0, Wt)], [(0.0, St)], [PASS_THROUGH], [0.0]
        enc = [True]
        # every row left (the right leaf empty): a threshold at or above their values of a feature
        # whose largest value is elsewhere (scaled, x + ε <= b <= 1)
        if (self.allowed[node - 1] & (self.X[member].max(axis=0, initial=-np.inf) < self.X.max(axis=0))).any():
            cost.append(self.alpha + leaf), W.append((Wt, 0.0)), S.append((St, 0.0)), feat.append(PASS_THROUGH)
            thr.append(0.0), enc.append(False)
        out = [np.array(cost), np.array(W), np.array(S), np.array(enc), np.array(feat), np.array(thr)]
        for j in np.flatnonzero(self.allowed[node - 1]):
            idx = self.order[j][member[self.order[j]]]
            x = self.X[idx, j]
            cut = np.flatnonzero(x[:-1] < x[1:])
            if not cut.size:
                continue
            wi, ti = self.w[idx], self.t[idx]
            cw, cs, cq, cn = (np.cumsum(v)[cut] for v in (wi, wi * ti, wi * ti * ti, self.n[idx]))
            ok = (cn >= self.n_min) & (Nt - cn >= self.n_min)
            if not ok.any():
                continue
            cw, cs, cq, c = cw[ok], cs[ok], cq[ok], cut[ok]
            sse = self._sse(cw, cs, cq) + self._sse(Wt - cw, St - cs, Qt - cq)
            mid = x[c] + (x[c + 1] - x[c]) / 2
            out = [np.r_[out[0], self.alpha + self.kappa * sse], np.r_[out[1], np.c_[cw, Wt - cw]],
                   np.r_[out[2], np.c_[cs, St - cs]], np.r_[out[3], np.ones(c.size, bool)],
                   np.r_[out[4], np.full(c.size, j)], np.r_[out[5], np.where(mid < x[c + 1], mid, x[c])]]
        return _Options(*out)

    @staticmethod
    def _empty():
        """The options of a child no row reaches (the root sends every row to the other side)."""
        return _Options(np.zeros(1), np.zeros((1, 2)), np.zeros((1, 2)), np.zeros(1, bool), np.full(1, PASS_THROUGH),
                        np.zeros(1))

    # ------------------------------------------------------------------ rows over the pairs
    def _terms(self, opts, side):
        """Per option and row: ``Σ a m`` and ``Σ a²/W`` over its non-empty leaves, and whether an empty
        leaf is in the row."""
        a = self.A[:, 2 * side: 2 * side + 2]  # (R, 2)
        full = opts.W > 0  # (K, 2)
        mean = np.divide(opts.S, opts.W, out=np.zeros_like(opts.S), where=full)
        inv = np.divide(1.0, opts.W, out=np.zeros_like(opts.W), where=full)
        return mean @ a.T, inv @ (a * a).T, (~full).astype(float) @ (a != 0).T > 0

    def _penalty(self, u, d, free):
        v = np.maximum(np.maximum(u - self.hi, self.lo - u), 0.0)
        p = np.where(d > 0, v * v / np.where(d > 0, d, 1.0), np.where(v > _TOL, np.inf, 0.0))
        p = np.where(free, 0.0, p)
        return p.max(axis=-1) if p.shape[-1] else np.zeros(p.shape[:-1])

    def pairs(self, left, right, base, incumbent):
        """Bound of every pair of ``left`` × ``right`` options (plus ``base``).

        Returns ``(least bound, candidates)``: candidates are ``(bound, i, k)`` of encodable
        pairs with a bound below ``incumbent``, the cheapest first (at most :data:`_TRIES`).
        """
        L, R = self._terms(left, 0), self._terms(right, 1)
        least, found = math.inf, []
        step = max(1, _PAIR_CELLS // max(1, right.cost.size * max(1, self.A.shape[0])))
        for s in range(0, left.cost.size, step):
            sl = slice(s, s + step)
            lb = base + left.cost[sl, None] + right.cost[None, :] + self.kappa * self._penalty(
                L[0][sl, None] + R[0][None], L[1][sl, None] + R[1][None], L[2][sl, None] | R[2][None])
            least = min(least, float(lb.min()))
            lb[~left.encodable[sl]] = np.inf
            lb[:, ~right.encodable] = np.inf
            flat = np.flatnonzero(lb < incumbent)
            if flat.size:
                top = flat[np.argsort(lb.ravel()[flat], kind="stable")[:_TRIES]]
                found += [(float(lb.ravel()[f]), s + int(f // lb.shape[1]), int(f % lb.shape[1])) for f in top]
        return least, sorted(found)[:_TRIES]

    # ------------------------------------------------------------------ one structure exactly
    def values(self, W, S):
        """Exact values of the non-empty leaves of one structure (heap leaves ``W, S`` (4,)), or None
        when the projection (module docstring) leaves a row or the box.

        Returns ``β (4,)`` (an empty leaf's entry is a placeholder: the encoding sets it).
        """
        full = W > 0
        m = np.where(full, S / np.where(full, W, 1.0), 0.0)
        inv = np.where(full, 1.0 / np.where(full, W, 1.0), 0.0)
        bound = ~((self.A != 0) & ~full).any(axis=1)  # rows without an empty leaf
        a, lo, hi = self.A[bound], self.lo[bound], self.hi[bound]
        u, d = a @ m, (a * a) @ inv
        v = np.maximum(np.maximum(u - hi, lo - u), 0.0)
        beta = m.copy()
        if v.max(initial=0.0) > 0:
            with np.errstate(divide="ignore", invalid="ignore"):
                p = np.where(d > 0, v * v / d, np.inf)
            r = int(np.argmax(p))
            if not np.isfinite(p[r]):
                return None
            beta = m - (u[r] - hi[r] if u[r] > hi[r] else u[r] - lo[r]) / d[r] * a[r] * inv
        au = a @ beta
        if (au < lo - _TOL * np.maximum(1.0, np.abs(lo))).any() or (au > hi + _TOL * np.maximum(1.0, np.abs(hi))).any():
            return None
        if (beta[full] < self.box[0] - _TOL).any() or (beta[full] > self.box[1] + _TOL).any():
            return None
        return beta

    def admitted(self, feature, threshold, beta):
        """The tree of a structure and its objective (model units) when the model admits its encoding, else None."""
        tree = self.tree(feature, threshold, beta)
        try:
            if solution_violation(self.form.spec, self.form.start_vector(tree)) is not None:
                return None
        except InfeasibleStartError:
            return None
        return tree, float(self.form.objective_of_tree(tree))

    def tree(self, feature, threshold, beta):
        """The tree of heap ``feature``/``threshold`` (3,) predicting ``β`` (model units) per heap leaf.

        A node that does not split sends its rows right, so each compact leaf takes the value of
        the last heap leaf below it.
        """
        form = self.form
        value = form.units.user_targets(beta)[:, None]
        tree = from_heap(HeapTree(2, np.asarray(feature, np.intp), np.asarray(threshold, float), value),
                         form.n_features, "regression")
        tree = form.task.statistics(tree, form.X_train, form.y_train, form.weight_train)
        heap = form.heap_ids(tree)
        span = 2 ** (2 - np.floor(np.log2(heap)).astype(int))
        d = tree.to_dict()
        out = np.array(d["value"], dtype=np.float64)
        leaves = tree.is_leaf
        out[leaves, 0] = value[(heap[leaves] + 1) * span[leaves] - 5, 0]
        return type(tree).from_dict({**d, "value": out})

    # ------------------------------------------------------------------ the search
    def root_candidates(self, everything, feature, threshold, lower):
        """Every root split of the model with the engine's bound where the engine lists it, else 0.

        The engine's candidates (on the training rows, zero weights included) are matched by
        feature and the partition of the modelled rows (the number of distinct values left of
        the threshold); several matches keep the least bound. So no root split is missed,
        whatever the engine listed.
        """
        splits = self.options(everything, 1)
        splits = splits.take(splits.feature != PASS_THROUGH)
        bound = np.zeros(splits.cost.size)
        for f in np.unique(splits.feature):
            values = np.unique(self.X[:, f])
            mine = np.flatnonzero(splits.feature == f)
            rank = np.searchsorted(values, splits.threshold[mine], side="right")
            theirs = np.flatnonzero(np.asarray(feature) == f)
            known = np.full(values.size + 1, np.inf)
            np.minimum.at(known, np.searchsorted(values, np.asarray(threshold)[theirs], side="right"),
                          np.asarray(lower)[theirs])
            bound[mine] = np.where(np.isfinite(known[rank]), known[rank], 0.0)
        return splits.feature, splits.threshold, bound

    def run(self, feature, threshold, lower, incumbent=None, time_limit=None, stop=None):
        """Search the structures (module docstring) against ``incumbent`` (model units, a feasible tree's).

        Parameters
        ----------
        feature, threshold, lower : arrays (C,)
            The engine's root candidates with their bounds ``L(c)`` (model units), any order
            (:meth:`root_candidates`).
        incumbent : float, optional
        time_limit : float, optional
            Seconds; a search stopped by it keeps a valid bound.
        stop : callable, optional
            Polled before each root candidate; True stops the search as the time limit does (Ctrl-C).

        Returns
        -------
        tree : greedy.Tree or None
            The best tree found below ``incumbent`` (None: none).
        objective : float
            Its cost (``incumbent`` when None).
        bound : float
            A lower bound on every solution of the model (``-inf`` when nothing is known).
        info : dict
            ``roots`` (candidates), ``visited``, ``pruned``, ``complete``, ``proven`` (``bound``
            meets ``objective`` within ``10^-9`` relative: then ``bound`` is ``objective``), ``time``.
        """
        t0 = time.perf_counter()
        z = math.inf if incumbent is None else float(incumbent)
        best = None
        everything = np.ones(self.X.shape[0], bool)
        feature, threshold, lower = self.root_candidates(everything, feature, threshold, lower)
        order = np.argsort(lower, kind="stable")
        # the root leaf, then a root sending every row right (node 3's options; none can go left: the
        # row with a feature's largest value stays right of any threshold on it)
        below = self.options(everything, 3)  # node 3's options on every row
        root_leaf = below.take(np.array([0]))
        least, _ = self.pairs(self._empty(), root_leaf, 0.0, -math.inf)
        if np.isfinite(root_leaf.cost[0]):
            beta = self.values(np.r_[0.0, 0.0, root_leaf.W[0]], np.r_[0.0, 0.0, root_leaf.S[0]])
            found = None if beta is None else self.admitted(np.full(3, PASS_THROUGH), np.zeros(3), beta)
            if found is not None and found[1] < z:
                best, z = found
        if self.allowed[0].any():
            least = min(least, self.pairs(self._empty(), below, self.alpha, -math.inf)[0])
        visited, k, complete = 0, 0, True
        for k in range(order.size + 1):
            if k == order.size or lower[order[k]] >= z - _TOL * max(1.0, abs(z)):
                break
            if (time_limit is not None and time.perf_counter() - t0 > time_limit) or (stop is not None and stop()):
                complete = False
                break
            c = order[k]
            f, thr = int(feature[c]), float(threshold[c])
            go_left = self.X[:, f] <= thr
            left, right = self.options(go_left, 2), self.options(~go_left, 3)
            visited += 1
            # options that cannot beat z with the other side's cheapest are dropped (their pairs cost >= z)
            left = left.take(left.cost + self.alpha + right.cost.min() < z)
            right = right.take(right.cost + self.alpha + (left.cost.min() if left.cost.size else math.inf) < z)
            if not left.cost.size or not right.cost.size:
                continue
            root_least, found = self.pairs(left, right, self.alpha, z)
            least = min(least, root_least)
            for _, i, j in found:
                beta = self.values(np.r_[left.W[i], right.W[j]], np.r_[left.S[i], right.S[j]])
                tree = None if beta is None else self.admitted(
                    np.array([f, left.feature[i], right.feature[j]]), np.array([thr, left.threshold[i],
                                                                                right.threshold[j]]), beta)
                if tree is not None:
                    if tree[1] < z:
                        best, z = tree
                    break
        unvisited = lower[order[k]] if k < order.size else math.inf
        bound = min(z, least, unvisited)
        proven = math.isfinite(z) and bound >= z - _TOL * max(1.0, abs(z))
        bound = z if proven else bound - _TOL * max(1.0, abs(bound))  # rounding of the sums
        info = {"roots": int(order.size), "visited": visited, "pruned": int(order.size - k), "complete": complete,
                "proven": bool(proven), "time": time.perf_counter() - t0}
        return best, z, bound, info
