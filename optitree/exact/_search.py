"""Exact depth-D search: branch-and-bound over the top splits, compiled kernels for the last two levels.

Its nested splits become a ``greedy.Tree`` in :mod:`optitree.exact._tree`.
"""

from __future__ import annotations

import itertools
import time

import numpy as np

from . import _kernels as K
from ._binary import pair_kernel
from ._data import ExactData
from ._scan import EPS, BudgetExhausted, FeatureScan, Subtree

#: Work (kernel calls and evaluated candidates) a relaxed scan (:meth:`Search.relaxed_bounds`) may
#: spend per candidate of its feature before it stops and leaves neighbour bounds.
RELAXED_WORK = 0.25
#: Seconds between two calls of a search's ``poll`` (progress and interrupts).
POLL_SECONDS = 0.2
#: A data set with a feature of at least this many thresholds is searched best first (:meth:`FeatureScan._push`).
BEST_FIRST_THRESHOLDS = 5


def check_allowed(allowed_features, max_depth: int, n_features: int) -> np.ndarray:
    """Allowed-feature mask per node of the complete tree, shape ``(2**max_depth - 1, n_features)``.

    Accepts ``None`` (all allowed), a mask ``(p,)`` for every node, ``(max_depth, p)`` per
    level (row 0: the root) or ``(2**max_depth - 1, p)`` per node in heap order (row
    ``h - 1`` for node ``h``; the root is node 1, the children of ``h`` are ``2h``, ``2h + 1``).
    """
    n_nodes = 2**max_depth - 1
    if allowed_features is None:
        return np.ones((n_nodes, n_features), bool)
    mask = np.asarray(allowed_features)
    if mask.dtype != bool:
        raise TypeError(f"allowed_features must be a boolean mask, got dtype {mask.dtype}")
    if mask.shape == (n_features,):
        return np.tile(mask, (n_nodes, 1))
    if mask.shape == (n_nodes, n_features):
        return mask.copy()
    if mask.shape == (max_depth, n_features):
        level = np.floor(np.log2(np.arange(1, n_nodes + 1))).astype(int)
        return mask[level]
    raise ValueError(f"allowed_features must have shape ({n_features},), ({max_depth}, {n_features}) or "
                     f"({n_nodes}, {n_features}), got {mask.shape}")


def per_node_features(allowed) -> bool:
    """Whether the nodes of ``allowed`` (:func:`check_allowed`'s mask) differ in the features they allow."""
    return not (allowed == allowed[0]).all()


class Search:
    """Branch-and-bound over sample sets, with a cache of solved sets.

    Parameters
    ----------
    data : ExactData
    allowed : bool ndarray (2**depth - 1, p)
        Features allowed for splits at each node of the complete tree in heap order (row
        ``h - 1`` for node ``h``; node 1 is the one the search starts at).
    alpha : float
        Cost of one split, in the engine's units (the loss / ``data.scale``).
    min_leaf : int
        Minimum number of (positive-weight) rows in every leaf.
    deadline : float
        ``time.perf_counter()`` value after which the search stops (``inf``: none).
    node_limit : int or None
        Maximum number of evaluated split candidates above the last two levels and of kernel
        calls, a deterministic budget.
    poll : callable or None
        Called with no argument at most every :data:`POLL_SECONDS` between two units of work
        (a kernel call is never interrupted); returning True stops the search
        (``interrupted``), e.g. on Ctrl-C or from a progress display.
    work_limit : int or None
        Maximum work: each unit of ``node_limit`` weighted by the rows of its sample set (a
        kernel call or a candidate's partition costs about that many passes over the features).
        Deterministic: with one thread the same inputs and limit stop at the same point.
    anytime : bool
        Branches first take one step on every feature (``first_pass`` of :meth:`branch`), at every
        level, so that a search stopped early has a bound over every candidate.
    """

    def __init__(self, data: ExactData, allowed, alpha: float, min_leaf: int, deadline: float, node_limit,
                 poll=None, work_limit=None, anytime=False):
        self.data = data
        self.kernel_args = data.kernel_args()  # (y, weight, stats, loss_code, width): fixed for the data set
        self.loss_code = self.kernel_args[3]
        self.depth2 = pair_kernel(data) or K.depth2
        self.depth1_pair = K.depth1_pair
        self.allowed = allowed
        self.per_node = per_node_features(allowed)
        self.alpha = float(alpha)
        self.min_leaf = int(min_leaf)
        self.monotone = self.min_leaf <= 1  # of the leaf-size condition; see monotone_at
        self.deadline = deadline
        self.node_limit = np.inf if node_limit is None else int(node_limit)
        self.work_limit = np.inf if work_limit is None else int(work_limit)
        self.nodes_used = 0
        self.work_used = 0
        self.anytime = bool(anytime)
        self.stopped_by = None  # the limit that exhausted the search (see stop_status)
        self.exhausted = False
        self.interrupted = False
        self.poll = poll
        self._next_poll = time.perf_counter() + POLL_SECONDS
        self.cache: dict = {}
        self.best_first = max(len(t) for t in data.thresholds) >= BEST_FIRST_THRESHOLDS
        self.binary = max(len(t) for t in data.thresholds) <= 1  # one candidate per feature: binary_steps
        self._relaxed: Search | None = None  # the same search without min_leaf (relaxed_bounds)
        self._first_pass_work: dict = {}  # (depth, node) -> first_pass_work (``allowed`` is fixed)

    def monotone_at(self, depth: int) -> bool:
        """Whether ``OPT(A) <= OPT(B)`` for row sets ``A ⊆ B`` under sub-trees of ``depth`` (the monotone bound).

        Restricting ``B``'s optimal tree to ``A`` can leave splits that send every row of ``A``
        one way; such a split is dropped by lifting its non-empty child in its place, which is
        a tree for ``A`` when no leaf-size minimum applies and the lifted nodes may use their
        new positions' features: always at depth 1 (a degenerate stump is a leaf), deeper only
        when every node allows the same features.
        """
        return self.monotone and (depth <= 1 or not self.per_node)

    # ------------------------------------------------------------------ budget
    def spend(self, rows: int = 1) -> None:
        """Count one unit of work on ``rows`` rows; raise :class:`BudgetExhausted` when the budget is spent.

        The check comes before the work: a unit that would pass ``node_limit`` or ``work_limit``
        is not done, so the work done is a deterministic function of the limits.
        """
        if self.exhausted:
            raise BudgetExhausted
        self.nodes_used += 1
        self.work_used += int(rows)
        if self._over_budget():
            self.exhausted = True
            raise BudgetExhausted

    def _over_budget(self) -> bool:
        now = time.perf_counter()
        if self.poll is not None and now >= self._next_poll:
            self._next_poll = now + POLL_SECONDS
            self.interrupted = self.interrupted or bool(self.poll())
        if self.interrupted:
            reason = "callback"
        elif self.nodes_used > self.node_limit:
            reason = "node_limit"
        elif self.work_used > self.work_limit:
            reason = "work_limit"
        elif now > self.deadline:
            reason = "time_limit"
        else:
            return False
        if self.stopped_by is None:
            self.stopped_by = reason
        return True

    def stop_status(self) -> str:
        """What ended an exhausted search: ``"interrupted"``, ``"node_limit"``, ``"work_limit"`` or ``"time_limit"``."""
        reason = self.stopped_by or "time_limit"
        return "interrupted" if reason == "callback" else reason

    # ------------------------------------------------------------------ sub-problems
    def leaf_cost(self, view) -> float:
        return float(K.leaf_cost(view[0], *self.kernel_args))

    def known(self, view, depth: int, node: int) -> Subtree:
        """What is known of a sub-problem without solving it: a leaf, or the cached result when better."""
        leaf = Subtree(self.leaf_cost(view), 0.0, None)
        if depth == 0 or view.shape[1] < 2 * self.min_leaf:
            return Subtree(leaf.cost, leaf.cost, None)
        hit = self.cache.get((view[0].tobytes(), depth, node if self.per_node else 0))
        return leaf if hit is None else _merge(hit, leaf)

    def solve(self, view, depth: int, node: int, upper_bound: float = np.inf) -> Subtree:
        """Best tree of depth <= ``depth`` for ``view``, searching for cost < ``upper_bound``.

        Never raises on an exhausted budget: it then returns a valid tree and bound.
        """
        return self._solve(view, depth, node, upper_bound)

    def _solve(self, view, depth, node, upper_bound) -> Subtree:
        """:meth:`solve`; on a spent budget the best tree and the bound proven so far (never raises).

        A stopped sub-problem keeps what it proved: its bound is merged with the cached one
        (the larger bound, the cheaper tree), so the caller's bounds stay the least over its
        open sub-problems instead of falling to 0.
        """
        d = self.data
        if depth == 0 or view.shape[1] < 2 * self.min_leaf:
            cost = self.leaf_cost(view)
            return Subtree(cost, cost, None)
        key = (view[0].tobytes(), depth, node if self.per_node else 0)
        hit = self.cache.get(key)
        if hit is not None and (hit.exact or hit.lower_bound >= upper_bound - EPS):
            return hit
        try:
            if depth == 1:
                self.spend(view.shape[1])
                order = K.target_order(view[0], d.stats, self.loss_code, d.n_samples)
                cost, lower, feat, thr = self.depth1_pair(view, K.layout(view, d.rank, d.y, d.weight), view,
                                                          view.shape[1], K.scratch(0), *self.kernel_args, order,
                                                          self.allowed[[node - 1, node - 1]], self.alpha,
                                                          self.min_leaf, upper_bound)
                nodes = None if feat[0] < 0 else (int(feat[0]), int(thr[0]), None, None)
                result = Subtree(float(cost[0]), float(lower[0]), nodes)
            elif depth == 2:
                self.spend(view.shape[1])
                cost, bound, n = self.depth2(view, d.rank, *self.kernel_args, self.allowed[node - 1],
                                             self.allowed[2 * node - 1:2 * node + 1], self.alpha, self.min_leaf,
                                             upper_bound)
                result = Subtree(float(cost), float(bound), _depth2_nodes(n))
            else:
                best, best_nodes = self.leaf_cost(view), None
                if hit is not None and hit.cost < best - EPS:  # a tree found by an earlier, stopped visit
                    best, best_nodes = hit.cost, hit.nodes
                result = self.branch(view, depth, node, upper_bound, best, best_nodes,
                                     first_pass=self.anytime or depth == 3)
        except BudgetExhausted:
            result = Subtree(self.leaf_cost(view), 0.0, None)
        if hit is not None:  # never a worse tree nor a lower bound than an earlier visit's
            result = _merge(hit, result)
        if result.exact or hit is None or result.lower_bound > hit.lower_bound or result.cost < hit.cost - EPS:
            self.cache[key] = result
        return result

    def relaxed_bounds(self, view, depth: int, node: int, feature: int, cutoff: float):
        """Children bounds of the split candidates of ``feature`` at ``node`` from the search without ``min_leaf``.

        Every tree whose leaves hold ``min_leaf`` rows is a tree of the relaxed problem, so the
        relaxed children optima bound the restricted ones from below. The relaxed search keeps
        the monotone bound, which the restricted one cannot use, and is lazy against ``cutoff``
        (the incumbent when the feature's scan starts), so most of its bounds reach it at little
        cost. Far from the optimum it is not lazy: each scan stops after ``RELAXED_WORK`` units
        of work per candidate, leaving neighbour bounds for the rest. Measured (depth 3,
        ``min_leaf=5``, engine alone): wine proved in 1.1 s instead of 21.5 s, breast_cancer in
        19.6 s where 120 s had not found the optimum; continuous 5 000 rows, 60 s: 489 errors,
        493 before (without the work limit: 644). It shares the search's node and time budget and
        keeps its own cache. None when the search is monotone itself, below depth 3 (the
        depth-2 kernel needs no help) or without a finite cutoff.

        Returns
        -------
        tuple or None
            ``(rank_threshold, left_bound, right_bound)`` over the relaxed candidates (a superset
            of the restricted ones).
        """
        if self.monotone or depth < 3 or not np.isfinite(cutoff):
            return None
        if self._relaxed is None:
            self._relaxed = Search(self.data, self.allowed, self.alpha, 1, self.deadline, None, self.poll,
                                   anytime=self.anytime)
        relaxed = self._relaxed
        scan = FeatureScan(relaxed, view, feature, depth, node)
        # one budget for both, and at most RELAXED_WORK units per candidate for this scan
        relaxed.nodes_used, relaxed.work_used, relaxed.exhausted = self.nodes_used, self.work_used, self.exhausted
        relaxed.work_limit, relaxed.stopped_by = self.work_limit, None
        relaxed.node_limit = min(self.node_limit, self.nodes_used + max(1, int(RELAXED_WORK * len(scan.n_left))))
        try:
            for _ in scan.run(lambda: cutoff):
                pass
        except BudgetExhausted:
            scan.open_bound()  # neighbour bounds for the candidates left open
        self.nodes_used, self.work_used = relaxed.nodes_used, relaxed.work_used
        self.interrupted = self.interrupted or relaxed.interrupted
        # the relaxed scan may have stopped on its own limit only; the spent work counts (at most one unit over)
        self.exhausted = self.exhausted or self._over_budget()
        return scan.rank_threshold, scan.bound_left, scan.bound_right

    def scan(self, view, feature: int, depth: int, node: int, cutoff: float) -> "FeatureScan":
        """The :class:`FeatureScan` of ``feature`` at ``node``, seeded with :meth:`relaxed_bounds` at ``cutoff``."""
        return FeatureScan(self, view, feature, depth, node, self.relaxed_bounds(view, depth, node, feature, cutoff))

    def branch(self, view, depth, node, upper_bound, best, best_nodes, on_improve=None, features=None,
               shared=None, first_pass=False, claims=None) -> Subtree:
        """Search the splits of ``view`` feature by feature, from the incumbent ``best`` (``best_nodes``).

        ``on_improve(cost)`` is called at each new incumbent. Returns on a spent budget too.
        ``features`` (default: every allowed one) are the features searched here; ``shared`` (a
        :class:`SharedIncumbent`) is the best cost found by the searches of the other features
        (:func:`parallel_branch`): it prunes here as this search's own incumbent does, and the
        returned bound ``min(cutoff, alpha + unresolved)`` holds for trees split on ``features``.

        ``claims`` (a :class:`~optitree.exact._shared.FeatureClaims` of the workers of
        :func:`parallel_branch`): a feature taken over by another worker is left to it (its
        scan is neither continued nor counted in the bound), and once its own features are done
        this search takes over another worker's unfinished one. The bound then holds for trees
        split on the features it holds at the end.

        ``first_pass`` (anytime): every feature's scan first solves one candidate (its middle)
        before any scan runs to its end, so that a search stopped early has neighbour bounds
        for every feature's candidates (monotone and similarity bounds from that candidate)
        and reports a bound above 0, instead of 0 for the features it never reached. At depth
        3 (children solved by one kernel call each) it is always taken: the best of the
        features' middles is an early incumbent that prunes the rest. Measured (units of work,
        full solves): never more, e.g. wine depth 3 85 -> 22, friedman2 (absolute) 868 -> 457,
        banknote-like 307 -> 274, monks2 depth 4 454 -> 451.

        ``best_first`` (a feature with at least :data:`BEST_FIRST_THRESHOLDS` thresholds): the
        scans of all features are interleaved, one solved candidate at a time, always from the
        scan whose next interval lies next to the cheapest tree found so far
        (:meth:`FeatureScan._push`), instead of each feature's scan to its end in turn: a good
        split of a later feature is refined before the thresholds of the earlier ones are
        exhausted, and its incumbent prunes them. Measured (depth-1 sweeps of the depth-2
        kernel): raisin-like 250 rows depth 4 1 108 650 -> 458 936, breast_cancer depth 3
        38 602 -> 28 244, banknote-like depth 3 9 636 -> 8 756, wilt-like 1 500 rows depth 4
        118 782 -> 115 335; on categorical sets (tic-tac-toe, car, monks2 at depths 4 and 5) it
        did 6-28 % more, hence the threshold.

        At depth 3 on data whose features all have one threshold, :meth:`binary_steps` instead of scans.

        An incumbent that already meets the lower bound of every split, ``alpha`` (a pure leaf,
        or a perfect start), ends the search at once: no feature is ordered and no scan set up.
        (A search with ``min_leaf`` sets its best-first scans up all the same, for their relaxed
        scans' work and cache.)
        """
        def cutoff():
            return min(best, upper_bound, np.inf if shared is None else shared.value)

        if cutoff() <= self.alpha + EPS and (self.monotone or not self.best_first or (self.binary and depth == 3)):
            return Subtree(best, cutoff(), best_nodes)
        features = self.feature_order(view, node) if features is None else features
        started = []  # (scan, its run): the features in order, then those taken over (claims)
        unresolved = np.inf  # lowest children bound (without alpha) of a non-exact candidate of binary_steps

        def held(f):  # whether this search still searches feature f (another worker may have taken it over)
            return claims is None or claims.holds(f)

        def take(steps):
            nonlocal best, best_nodes
            for _, cost, split in steps:
                if split is not None and cost < best - EPS:
                    best, best_nodes = cost, split
                    if (shared is None or shared.offer(best)) and on_improve is not None:
                        on_improve(best)

        def start(f):
            scan = self.scan(view, int(f), depth, node, cutoff())
            started.append((scan, scan.run(cutoff)))
            return started[-1][1]

        def steps(k):  # the steps of started[k] while its feature is held, their work published to claims
            scan, run = started[k]
            while held(scan.feature):
                used = self.work_used
                step = next(run, None)
                if claims is not None:
                    claims.record(scan.feature, self.work_used - used, finished=step is None)
                if step is None:
                    return
                yield step

        def start_next():  # the next feature not started, or one taken over from another worker; False: none
            if len(started) < len(features):
                start(features[len(started)])
                return True
            taken = None if claims is None else claims.take_over()
            if taken is not None:
                start(taken)
            return taken is not None

        try:
            if self.binary and depth == 3:  # one candidate per feature: no scans
                for bound, cost, split in self.binary_steps(view, node, features, cutoff):
                    take([(bound, cost, split)])
                    if bound < cost - EPS:
                        unresolved = min(unresolved, bound - self.alpha)
            else:
                if first_pass:
                    for f in features:
                        if cutoff() <= self.alpha + EPS:
                            break
                        run = start(f)
                        if depth >= 4:  # children are searches themselves: a capped probe, the full solve later
                            take(started[-1][0].probe(cutoff))
                        else:
                            take(itertools.islice(run, 1))
                if self.best_first:  # across features: the interval next to the cheapest tree found first
                    for f in features[len(started):]:
                        start(f)
                    active = list(range(len(started)))
                    while cutoff() > self.alpha + EPS:
                        if claims is not None:  # a feature taken over by another worker is its own
                            active = [j for j in active if held(started[j][0].feature)]
                        if not active:
                            if not start_next():
                                break
                            active.append(len(started) - 1)
                        k = min(active, key=lambda j: (started[j][0].priority, j))
                        found = list(itertools.islice(steps(k), 1))
                        take(found)
                        if not found:
                            active.remove(k)
                k = 0
                while cutoff() > self.alpha + EPS:  # else no split can beat the cutoff: open scans do not matter
                    if k == len(started) and not start_next():
                        break
                    take(steps(k))
                    k += 1
        except BudgetExhausted:
            open_bound = min([scan.open_bound() for scan, _ in started if held(scan.feature)] +
                             [0.0 if any(held(f) for f in features[len(started):]) else np.inf])
            return Subtree(best, min(cutoff(), self.alpha + open_bound), best_nodes)
        open_bound = min([scan.unresolved for scan, _ in started if held(scan.feature)], default=unresolved)
        return Subtree(best, min(cutoff(), self.alpha + open_bound), best_nodes)

    def binary_steps(self, view, node, features, cutoff):
        """:meth:`branch`'s steps at depth 3 when every feature has one threshold (binary and one-hot data).

        Yields ``(bound, cost, nodes)`` for each feature's one candidate, as
        :meth:`FeatureScan.run` does; stops once ``cutoff()`` leaves no split room. Such a scan
        has no neighbours to bound and would solve that candidate's children and nothing else;
        this loop solves them directly, the same work in the same order, without a scan's set-up.
        Measured (one-hot, depth 5, same work units): tic-tac-toe 2.45 -> 1.91 s, car 0.82 -> 0.60 s,
        balance-scale 0.42 -> 0.28 s, monks2 0.169 -> 0.139 s. Workers of :func:`parallel_branch`
        keep the features dealt to them here (no take-overs).
        """
        d, alpha, m = self.data, self.alpha, view.shape[1]
        n_left = (d.rank[features][:, view[0]] == 0).sum(axis=1)  # rows on the left of each feature's split
        for f, left_rows in zip(features, n_left):
            limit = cutoff() - alpha
            if limit <= EPS:  # no split can beat the cutoff
                return
            if left_rows < self.min_leaf or m - left_rows < self.min_leaf:
                continue
            self.spend(m)
            left, right = K.partition(view, d.rank[f], 0, int(left_rows))
            sides = self._solve_children((left, right), 2, node, limit, 0.0)
            cost = alpha + sides[0].cost + sides[1].cost
            exact = sides[0].exact and sides[1].exact
            yield cost if exact else alpha + sides[0].lower_bound + sides[1].lower_bound, cost, \
                (int(f), 0, sides[0].nodes, sides[1].nodes)

    def _solve_children(self, views, depth, node, limit, slack):
        """The two children (``views``, left and right) of a candidate at ``node`` against ``limit``.

        The larger child is solved first against ``limit``; the smaller one against what its
        bound leaves plus ``slack`` (the distance to the candidate's interval ends, so that its
        bound can prune the neighbours too), or only looked up when nothing is left.
        """
        first, second = (0, 1) if views[0].shape[1] >= views[1].shape[1] else (1, 0)
        out = [None, None]
        out[first] = self._solve(views[first], depth, 2 * node + first, limit)
        remaining = limit - out[first].lower_bound
        if remaining + slack > EPS or abs(remaining) <= EPS:
            out[second] = self._solve(views[second], depth, 2 * node + second, remaining + slack)
        else:
            out[second] = self.known(views[second], depth, 2 * node + second)
        return out

    def feature_order(self, view, node: int) -> np.ndarray:
        """The features allowed at ``node``, the best single split's cost first (:func:`_kernels.stump_order`).

        Searched in this order (and dealt to threads in it), a perfect or near-perfect tree is
        found sooner. Measured (work units): breast_cancer depth 4 1 426 956 -> 925 845 (with a
        time limit, i.e. the anytime first pass: 921 420 -> 727 525), wine depth 4 906 -> 712;
        within 0.96-1.02 on monks1-3, tic-tac-toe, balance-scale, car, parity at depth 4,
        breast_cancer depth 3, raisin-like 250 rows depth 4; iris depth 4 600 -> 2 803 (0.01 s).
        """
        d = self.data
        return K.stump_order(view, d.rank, *self.kernel_args, self.allowed[node - 1])

    def first_pass_work(self, depth: int, node: int) -> int:
        """Units the first pass of a depth-``depth`` search at ``node`` needs (and one more per feature, for relaxed scans)."""
        if depth <= 2:
            return 1
        known = self._first_pass_work.get((depth, node))
        if known is None:
            p = int(self.allowed[node - 1].sum())
            known = p * (2 + self.first_pass_work(depth - 1, 2 * node) + self.first_pass_work(depth - 1, 2 * node + 1))
            self._first_pass_work[(depth, node)] = known
        return known

    def capped(self, cap: int | None = None, seconds: float | None = None):
        """Context: the node budget lowered to ``cap`` more units and the deadline to ``seconds`` from now.

        The search's own limits hold again after it.
        """
        return _Capped(self, cap, seconds)

    def sibling(self, poll, node_limit, work_limit) -> "Search":
        """A search of the same problem and deadline sharing this one's cache, stopped when ``poll()`` is True.

        ``node_limit`` and ``work_limit`` (None: none) are its own. The cache is shared: a
        sub-problem solved by one thread is not solved again by another (a dict's get and set are
        atomic; two threads storing one key store two valid results).
        """
        sibling = Search(self.data, self.allowed, self.alpha, self.min_leaf, self.deadline, node_limit, poll,
                         work_limit, self.anytime)
        sibling.cache = self.cache
        return sibling


class _Capped:
    """:meth:`Search.capped`: a temporary node limit and deadline; a stop they caused is undone on exit."""

    def __init__(self, search: Search, cap: int | None, seconds: float | None):
        self.search, self.cap, self.seconds = search, cap, seconds

    def __enter__(self):
        s = self.search
        self.saved = s.node_limit, s.deadline
        if self.cap is not None:
            s.node_limit = min(s.node_limit, s.nodes_used + self.cap)
        if self.seconds is not None:
            s.deadline = min(s.deadline, time.perf_counter() + self.seconds)
        return s

    def __exit__(self, *exc):
        s = self.search
        s.node_limit, s.deadline = self.saved
        if s.exhausted and not s.interrupted:  # re-check against the search's own limits
            s.exhausted, s.stopped_by = False, None
            s.exhausted = s._over_budget()
        return False


def _merge(a: Subtree, b: Subtree) -> Subtree:
    """Two results of one sub-problem: the larger bound and the cheaper tree."""
    cost, nodes = (a.cost, a.nodes) if a.cost <= b.cost else (b.cost, b.nodes)
    return Subtree(cost, min(max(a.lower_bound, b.lower_bound), cost), nodes)


def _depth2_nodes(n):
    if n[0] < 0:
        return None
    left = None if n[2] < 0 else (int(n[2]), int(n[3]), None, None)
    right = None if n[4] < 0 else (int(n[4]), int(n[5]), None, None)
    return (int(n[0]), int(n[1]), left, right)
