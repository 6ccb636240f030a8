"""The threshold search of one feature at one node: bisection over intervals with neighbour bounds (ConTree's).

Used by :class:`optitree.exact._search.Search` (its ``branch``) for every node above the
depth-2 kernel, and by :func:`optitree.exact.split_bounds`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _kernels as K

EPS = K.EPS


class Subtree(NamedTuple):
    """Outcome of one sub-problem: ``lower_bound <= optimum <= cost``; exact when they meet.

    ``nodes`` is ``None`` (a leaf) or ``(feature, rank_threshold, left, right)``. Immutable (a
    named tuple: the search makes one per sub-problem visit, a frozen dataclass costs more).
    """

    cost: float
    lower_bound: float
    nodes: tuple | None

    @property
    def exact(self) -> bool:
        return self.lower_bound >= self.cost - EPS


class BudgetExhausted(Exception):
    """Raised inside the search when the time or node budget runs out."""


class FeatureScan:
    """Bisection over the thresholds of one feature at one node (ConTree's interval search).

    Candidate ``j`` puts ``n_left[j]`` rows of total distance ``dist_left[j]`` (:func:`_kernels.row_dist`)
    on the left. Solved
    candidates give lower bounds on their neighbours through :func:`_kernels.point_bounds`;
    an interval's ends are dropped while their bound reaches the target, then its middle is
    solved: the larger child first with the target as upper bound, then the smaller one with
    what remains plus the distance to the interval's ends (so its bound can also prune
    the neighbours). ``bound_left/bound_right`` hold valid children bounds for every
    candidate dropped or solved. Open intervals wait in a queue: first in, first out, or with
    the search's ``best_first`` the one next to the cheapest tree found first (:meth:`_push`).

    ``known`` (``(rank_threshold, left_bound, right_bound)`` over a superset of the candidates,
    e.g. from :meth:`Search.relaxed_bounds`) seeds ``bound_left/bound_right``: a candidate whose
    known bound reaches the target is dropped, or skipped as a middle, without being solved.
    ``search`` is the :class:`~optitree.exact._search.Search` that solves the children.
    """

    def __init__(self, search, view, feature: int, depth: int, node: int, known=None):
        self.search, self.view, self.feature, self.depth, self.node = search, view, feature, depth, node
        self.monotone = search.monotone_at(depth - 1)
        d = search.data
        if depth == 2:  # the depth-1 sweeps' inputs, once per scan
            self.order = K.target_order(view[0], d.stats, search.loss_code, d.n_samples)
            self.layout = K.layout(view, d.rank, d.y, d.weight)
            self.key = K.positions(view, feature, d.n_samples)
            self.buf = K.scratch(view.shape[1])
        self.rank_threshold, self.n_left, self.dist_left = K.candidates(view, d.rank, d.weight, d.stats,
                                                                          search.loss_code, feature, search.min_leaf)
        T = self.rank_threshold.shape[0]
        self.solved_left, self.solved_right, self.bound_left, self.bound_right = np.zeros((4, T))
        if known is not None:
            rank, left, right = known
            at = np.searchsorted(rank, self.rank_threshold)
            self.bound_left[:], self.bound_right[:] = left[at], right[at]
        self.exact = np.zeros(T, bool)
        self.tree_cost = np.full(T, np.inf)  # cost of the tree found at each solved candidate
        self.best_first = search.best_first
        self.queue = []  # (priority, sequence, lo, hi, a, b), taken least first: see _push
        self._pushed = 0
        if T:
            self._push(0, T - 1, -1, T)
        self.unresolved = np.inf  # lowest children bound of a solved candidate that is not exact

    def _next_shrunk(self, target):
        """The next queued interval shrunk by the known bounds: ``(k, lo, hi, a, b, limit)``.

        ``k`` is its place in the queue, updated to the shrunk interval; ``lo > hi`` when the
        bounds leave no candidate in it (the queue entry is then left as it was).
        """
        k = self._next()
        _, _, lo, hi, a, b = self.queue[k]
        limit = target() - self.search.alpha
        lo, hi = K.shrink(lo, hi, a, b, self.dist_left, self.solved_left, self.solved_right, self.monotone,
                          limit, self.bound_left, self.bound_right)
        if lo <= hi:
            self.queue[k] = self.queue[k][:2] + (lo, hi, a, b)
        return k, lo, hi, a, b, limit

    def run(self, target):
        """Yield ``(bound, cost, nodes)`` for each solved candidate: its proven bound, and a tree rooted at it.

        With exact children ``bound == cost``; otherwise ``cost`` is that of the children's best
        trees found (a feasible tree, ``None`` nodes when a child is unknown).
        """
        s, d = self.search, self.search.data
        queue, view, m = self.queue, self.view, self.view.shape[1]
        bound_left, bound_right, solved_left, solved_right = (self.bound_left, self.bound_right, self.solved_left,
                                                              self.solved_right)
        dist_left, rank_threshold, n_left, tree_cost = self.dist_left, self.rank_threshold, self.n_left, self.tree_cost
        rank_f = d.rank[self.feature]
        while queue:
            k, lo, hi, a, b, limit = self._next_shrunk(target)
            if lo > hi:
                queue.pop(k)
                continue
            mid = (lo + hi) // 2
            if bound_left[mid] + bound_right[mid] >= limit - EPS:  # a known bound drops it
                queue.pop(k)
                solved_left[mid], solved_right[mid] = bound_left[mid], bound_right[mid]
                self._split_interval(lo, mid, hi, a, b)
                continue
            s.spend(m)
            if self.depth == 2:  # both depth-1 children in one sweep, no partition
                cost, lower, feat, thr = s.depth1_pair(view, self.layout, self.key, int(n_left[mid]),
                                                       self.buf, *s.kernel_args, self.order,
                                                       s.allowed[2 * self.node - 1:2 * self.node + 1], s.alpha,
                                                       s.min_leaf, limit)
                sides = [Subtree(float(cost[k]), float(lower[k]),
                                 None if feat[k] < 0 else (int(feat[k]), int(thr[k]), None, None)) for k in (0, 1)]
            else:
                left, right = K.partition(view, rank_f, int(rank_threshold[mid]), int(n_left[mid]))
                slack = max(dist_left[mid] - dist_left[lo], dist_left[hi] - dist_left[mid])
                sides = s._solve_children((left, right), self.depth - 1, self.node, limit, slack)
            queue.pop(k)
            # a child stopped by the budget may know less than the neighbours' bounds: keep the larger
            near_left, near_right = K.point_bounds(mid, a, b, dist_left, solved_left, solved_right, self.monotone)
            side_left, side_right = sides
            solved_left[mid] = bound_left[mid] = max(bound_left[mid], side_left.lower_bound, near_left)
            solved_right[mid] = bound_right[mid] = max(bound_right[mid], side_right.lower_bound, near_right)
            cost = s.alpha + side_left.cost + side_right.cost
            tree_cost[mid] = min(tree_cost[mid], cost)
            self._split_interval(lo, mid, hi, a, b)
            split = self._split(mid, sides)
            if side_left.exact and side_right.exact:
                self.exact[mid] = True
                yield cost, cost, split
            else:
                bound = solved_left[mid] + solved_right[mid]
                if bound < limit - EPS:
                    self.unresolved = min(self.unresolved, bound)
                yield s.alpha + bound, cost, split

    def probe(self, target):
        """Solve the first middle candidate's children, each with the work of its first pass (anytime first pass).

        Records the children's bounds at the middle (valid, possibly weak) and queues the
        middle again, first, for a full solve, between its two sides: they already get
        neighbour bounds from it, so a search stopped after every feature's probe has a bound
        over all its candidates. Then the same for the best single split (:meth:`_probe_stump`).
        Returns ``[(bound, cost, split)]`` for the trees it found, or ``[]``.
        """
        s = self.search
        if not self.queue or s.exhausted:
            return []
        k, lo, hi, a, b, limit = self._next_shrunk(target)
        if lo > hi:
            return []
        mid = (lo + hi) // 2
        if self.bound_left[mid] + self.bound_right[mid] >= limit - EPS:
            return []
        sides = self._capped_children(mid, limit)
        if sides is None:
            return []
        near_left, near_right = K.point_bounds(mid, a, b, self.dist_left, self.solved_left, self.solved_right,
                                               self.monotone)
        self.solved_left[mid] = self.bound_left[mid] = max(self.bound_left[mid], sides[0].lower_bound, near_left)
        self.solved_right[mid] = self.bound_right[mid] = max(self.bound_right[mid], sides[1].lower_bound, near_right)
        self.queue.pop(k)
        cost = s.alpha + sides[0].cost + sides[1].cost
        self.tree_cost[mid] = min(self.tree_cost[mid], cost)
        self._split_interval(lo, mid, hi, a, b)
        self.queue.append((-np.inf, -self._pushed, mid, mid, a, b))  # first, before any other
        self._pushed += 1
        bound = s.alpha + self.solved_left[mid] + self.solved_right[mid]
        found = [(bound, cost, self._split(mid, sides))]
        return found + self._probe_stump(target)

    def _capped_children(self, j, limit):
        """Both children of candidate ``j``, each solved with the work of its first pass; None on a spent budget."""
        s = self.search
        try:
            s.spend(self.view.shape[1])
        except BudgetExhausted:
            return None
        views = K.partition(self.view, s.data.rank[self.feature], int(self.rank_threshold[j]), int(self.n_left[j]))
        sides = []
        for side in (0, 1):
            child = 2 * self.node + side
            with s.capped(s.first_pass_work(self.depth - 1, child)):
                sides.append(s._solve(views[side], self.depth - 1, child, limit))
        return sides

    def _split(self, j, sides):
        """The nested split of candidate ``j`` with its children's trees."""
        return self.feature, int(self.rank_threshold[j]), sides[0].nodes, sides[1].nodes

    def _probe_stump(self, target):
        """Probe the feature's best single split too (classification): its children capped as the middle's.

        Its tree may be the incumbent, its children's bounds are recorded as known bounds; the
        bisection's intervals are left as they are (starting them there instead cost up to twice
        the work on continuous sets). A perfect tree is found sooner, measured in work units
        with a time limit: breast_cancer depth 4 727 525 -> 181 944; raisin-like 250 rows +2 %,
        wilt-like 1 500 rows +2.5 %, banknote-like +0.6 %, noisy XOR +0.2 % (all depth 4).
        """
        s, d = self.search, self.search.data
        if d.is_regression or len(self.rank_threshold) < 3:
            return []
        cum = d.class_prefix(self.view[self.feature])
        left = cum[self.n_left - 1]
        j = int(np.argmax(left.max(axis=1) + (cum[-1] - left).max(axis=1)))  # fewest misclassified as a stump
        limit = target() - s.alpha
        if self.exact[j] or self.bound_left[j] + self.bound_right[j] >= limit - EPS:
            return []
        sides = self._capped_children(j, limit)
        if sides is None:
            return []
        self.bound_left[j] = max(self.bound_left[j], sides[0].lower_bound)
        self.bound_right[j] = max(self.bound_right[j], sides[1].lower_bound)
        cost = s.alpha + sides[0].cost + sides[1].cost
        return [(s.alpha + self.bound_left[j] + self.bound_right[j], cost, self._split(j, sides))]

    @property
    def priority(self) -> float:
        """The priority of the next interval (:meth:`_push`); ``inf`` when none is left."""
        return self._priority(*self.queue[self._next()]) if self.queue else np.inf

    def _next(self) -> int:
        """Index of the interval to take next: the least ``(priority, sequence)``, priorities as of now."""
        queue = self.queue
        if not self.best_first:  # the priority is the entry's first field: entries compare as their (priority, sequence)
            return min(range(len(queue)), key=queue.__getitem__)
        return min(range(len(queue)), key=lambda j: (self._priority(*queue[j]), queue[j][1]))

    def _priority(self, first, seq, lo, hi, a, b) -> float:
        """See :meth:`_push`; ``first`` (a re-queued middle) comes before any other."""
        if first == -np.inf or not self.best_first:
            return first
        T = self.tree_cost.shape[0]
        if a < 0 and b >= T:
            return -np.inf
        return min(self.tree_cost[a] if a >= 0 else np.inf, self.tree_cost[b] if b < T else np.inf)

    def _push(self, lo, hi, a, b):
        """Queue the interval ``[lo, hi]`` between the solved candidates ``a`` and ``b``.

        Without ``best_first`` intervals are taken first in, first out (bisection level by
        level). With it, the interval next to the cheapest tree found comes first: its
        priority is the least cost of the trees at its ends when it is taken (``-inf`` with
        neither solved, so each feature's first middle comes before any neighbourhood; a probed
        middle's tree may improve when it is solved in full), ties first in, first out.
        """
        self.queue.append((0.0, self._pushed, lo, hi, a, b))
        self._pushed += 1

    def _split_interval(self, lo, mid, hi, a, b):
        """Queue the two sides of the interval ``[lo, hi]`` (ends ``a``, ``b``) around its solved ``mid``."""
        if mid < hi:
            self._push(mid + 1, hi, mid, b)
        if lo < mid:
            self._push(lo, mid - 1, a, mid)

    def open_bound(self) -> float:
        """Lowest children bound over candidates not yet resolved (after a stop)."""
        lowest = self.unresolved
        for _, _, lo, hi, a, b in self.queue:
            lowest = min(lowest, K.fill_bounds(lo, hi, a, b, self.dist_left, self.solved_left, self.solved_right,
                                               self.monotone, self.bound_left, self.bound_right))
        return lowest

