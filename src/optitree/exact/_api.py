"""Public entry point :func:`solve`: an optimal tree with its proof (or best tree and bound under a budget)."""

from __future__ import annotations

import numbers
import time
from dataclasses import dataclass, replace

import numpy as np

from greedy import Tree

from ..problem import Problem, check_allowed, check_statement, get_loss, per_node_features

from ._data import ExactData, prepare
from ._anytime import BOUND_RESERVE, class_count_bound, subset_rows, two_level_class_count_bound
from ._search import EPS, Search, Subtree
from ._slab_bound import SLAB_RESERVE, SLAB_SKIP_SHARE, root_slab_bound, slab_bound_applies
from ._tree import Trace, from_tree, to_tree
from ._subsets import feature_subsets, solve_over_subsets


@dataclass(frozen=True, eq=False)
class ExactResult:
    """Outcome of :func:`solve`.

    Attributes
    ----------
    tree : greedy.Tree
        The incumbent; leaf ``value`` rows are weighted class counts of the training rows
        (``classes[k]`` is column ``k``), or for regression the leaf's weighted mean
        (squared error) or median (absolute error), so ``tree.predict`` works.
    objective : float
        The loss of ``tree`` (weighted misclassification, squared or absolute error, in the
        units of ``y`` and the weights) plus ``alpha`` per split.
    bound : float
        Proven lower bound on the optimal objective (``<= objective``).
    gap : float
        ``(objective - bound) / max(objective, 1e-12)``; 0 when proven.
    status : {"optimal", "time_limit", "node_limit", "work_limit", "interrupted", "cutoff"}
        ``"cutoff"``: no tree with objective below ``upper_bound`` exists (``bound`` is then
        ``upper_bound``; ``tree`` is the best one found).
    time : float
        Wall time in seconds (encoding included).
    trace : list of (seconds, incumbent, bound)
    classes : ndarray
        Empty for regression.
    n_evaluated : int
        Evaluated split candidates above the last two levels plus kernel calls.
    stopped_by : {None, "time_limit", "node_limit", "work_limit", "callback"}
        The limit that stopped the search before it proved its tree optimal; None when it
        finished (``status`` is then ``"optimal"`` or ``"cutoff"``).
    work : int
        Work units spent (see ``work_limit`` of :func:`solve`).
    split_space : str
        The thresholds the result holds over: every midpoint, or ``max_bins``'s bin edges.
    all_midpoints_bound : float or None
        A lower bound on the optimum over every midpoint: ``bound`` itself without binning;
        with it, ``bound`` less what snapping an optimal tree's thresholds to bin edges can
        cost (:func:`all_midpoints_bound`); None where that is not derived (``min_samples_leaf
        > 1`` or per-node features). The binned ``objective`` is an upper bound on that
        optimum, so the two show what the bins cost.
    """

    tree: Tree
    objective: float
    bound: float
    gap: float
    status: str
    time: float
    trace: list
    classes: np.ndarray
    n_evaluated: int
    stopped_by: str | None = None
    work: int = 0
    split_space: str = "every midpoint"
    all_midpoints_bound: float | None = None


def resolve(X, y, sample_weight, problem, *, loss, max_bins, depth_name="max_depth", **statement):
    """``(data, depth, alpha, min_leaf, allowed, max_distinct_features)`` of a call of :func:`solve` or
    :func:`~optitree.exact.split_bounds`: from a :class:`~optitree.problem.Problem` (``X`` itself, or
    ``problem`` with ``X`` the :class:`ExactData` prepared from its rows), or from the arrays and the
    ``statement`` keywords (``max_depth`` or ``depth``, ``alpha``, ``min_samples_leaf``,
    ``allowed_features``, ``max_distinct_features``; None: not given). ``alpha`` is returned in
    ``data``'s reported units, ``allowed`` as one mask per node (:func:`~optitree.problem.check_allowed`).
    """
    if isinstance(X, Problem):
        if problem is not None:
            raise ValueError("pass the Problem once: as the data, or as problem= with its prepared ExactData")
        problem, X = X, None
    if problem is not None:
        passed = [name for name, value in statement.items() if value is not None]
        passed += [name for name, value in (("y", y), ("sample_weight", sample_weight), ("loss", loss),
                                            ("max_bins", max_bins)) if value is not None]
        if passed:
            raise ValueError(f"a Problem states the whole problem; do not pass {', '.join(passed)} with it")
        X = prepare(problem) if X is None else X
        if not isinstance(X, ExactData) or X.problem is None or not same_rows(X.problem, problem):
            raise ValueError("problem= takes the ExactData that prepare(problem) made of the problem's rows")
        return (X, problem.depth, problem.split_cost * X.scale, problem.min_samples_leaf, problem.allowed_mask(),
                problem.max_distinct_features)
    depth = statement.pop("max_depth", None) if depth_name == "max_depth" else statement.pop("depth", None)
    if depth is None:
        raise ValueError(f"{depth_name} is required (or pass a Problem)")
    alpha, min_leaf = statement["alpha"], statement["min_samples_leaf"]
    depth, alpha, min_leaf = check_statement(depth, 0.0 if alpha is None else alpha, 1 if min_leaf is None else min_leaf,
                                             depth_name)
    data = _as_data(X, y, sample_weight, loss, max_bins)
    allowed = check_allowed(statement["allowed_features"], depth, data.n_features)
    return data, depth, alpha, min_leaf, allowed, statement["max_distinct_features"]


def same_rows(a: Problem, b: Problem) -> bool:
    """Whether two problems state their rows with the same arrays (one made from the other)."""
    return a.X is b.X and a.y is b.y and a.weight is b.weight and a.units == b.units


def _as_data(X, y, sample_weight, loss=None, max_bins=None) -> ExactData:
    if isinstance(X, ExactData):
        if y is not None or sample_weight is not None:
            raise ValueError("pass y and sample_weight to prepare(), not with an ExactData")
        if loss is not None and loss != X.loss:
            raise ValueError(f"loss={loss!r} differs from the ExactData's loss {X.loss!r}; pass it to prepare()")
        if max_bins is not None and max_bins != X.max_bins:
            raise ValueError(f"max_bins={max_bins!r} differs from the ExactData's {X.max_bins!r}; pass it to prepare()")
        return X
    if y is None:
        raise ValueError("y is required")
    return prepare(X, y, sample_weight, loss="misclassification" if loss is None else loss, max_bins=max_bins)


def describe_split_space(data: ExactData) -> str:
    """The thresholds a result over ``data`` holds over, in words."""
    if data.binned is None or not data.binned.any():
        return "every midpoint"
    features = np.flatnonzero(data.binned).tolist()
    others = "" if data.binned.all() else ", every midpoint between distinct values on the others"
    return f"max_bins={data.max_bins}: the edges of quantile bins on features {features}{others}"


def all_midpoints_bound(data: ExactData, view, depth: int, bound: float, allowed, min_leaf: int) -> float | None:
    """A lower bound (engine units) on the optimum over every midpoint, from ``bound`` over ``data``'s bins.

    Snap each threshold of an optimal all-midpoints tree inside a bin to the bin's nearer edge
    (the one that moves the lighter part of the node's rows in that bin): the tree keeps its
    structure and leaf values, and each moved row costs at most its similarity distance
    ``dist_i`` more (:mod:`optitree.exact._kernels`; rows leaving a leaf cost nothing). At
    level ``l`` at most ``2**l`` nodes move at most half of a bin each, and no more than every
    row once, so with ``M`` the largest half-bin distance and ``W`` all rows' distance

        OPT_bins <= OPT_all + sum_{l < depth} min(W, 2**l M).

    A split sending every row one way is lifted away (it only costs ``alpha``), which needs
    no leaf-size minimum and the same features at every node: None otherwise.
    """
    if data.binned is None or not data.binned.any():
        return bound
    if min_leaf > 1 or per_node_features(allowed):
        return None
    rows = view[0]
    w = data.weight[rows]
    if data.is_regression:
        t = data.stats[rows, 3]
        dist = w * np.maximum(t - t.min(), t.max() - t) ** (2 if data.loss == "squared" else 1)
    else:
        dist = w
    half_bin = max(np.bincount(data.rank[f, rows], weights=dist).max() / 2 for f in np.flatnonzero(data.binned))
    moved = sum(min(dist.sum(), 2**level * half_bin) for level in range(depth))
    return max(0.0, bound - moved)


def regression_loss(data: ExactData, tree, rows) -> float:
    """Squared or absolute error of ``tree``'s leaves on kept ``rows`` in reported units, in two passes (no prefix sums)."""
    leaf_of = tree.apply(data.X[rows])
    residual = data.stats[rows, 3] - data.units.targets(tree.value[leaf_of, 0])
    return get_loss(data.loss).node_loss(residual, data.weight[rows]) * data.scale


def solve(X, y=None, sample_weight=None, *, max_depth=None, loss=None, samples=None, alpha=None,
          min_samples_leaf=None, allowed_features=None, max_distinct_features=None, upper_bound=None,
          time_limit=None, node_limit=None, callback=None, threads=1, work_limit=None, start=None, max_bins=None,
          problem=None) -> ExactResult:
    """Optimal tree of depth <= ``max_depth`` (axis-aligned, all midpoint thresholds, constant leaves).

    Minimises ``loss of the leaves + alpha * n_splits``; a node may always be a leaf. Depths
    1 and 2 are solved by compiled kernels; deeper trees by branch-and-bound over the top
    splits with a cache of solved sample sets. Regression costs are optimal to within the
    engine's tolerance, ``1e-9`` times the squared (or plain) half-range of the targets times
    the smallest weight.

    The problem is an :class:`optitree.problem.Problem` (``X`` itself, or ``problem`` with ``X``
    the :class:`ExactData` :func:`prepare` made of its rows: its statement with the encoding
    reused), or the arrays and the keywords ``max_depth`` to ``max_bins`` below (then ``alpha``
    is in the loss's units, not a fraction of the baseline). Only the search's limits and
    ``samples``, ``upper_bound``, ``start``, ``threads`` go with a Problem.

    Parameters
    ----------
    X : array (n, p), ExactData or Problem
        Finite features; or the output of :func:`prepare` (then omit ``y``/``sample_weight``).
    y : array (n,)
        Labels (any sortable type), or real targets for a regression ``loss``.
    sample_weight : array (n,), optional
        Non-negative weights (merged duplicate rows carry their multiplicity).
    max_depth : int >= 1
        Required without a Problem.
    loss : {"misclassification", "squared", "absolute"}, optional
        Weighted misclassification (default), squared error about the leaf's weighted mean,
        or absolute error about its weighted median. With an ``ExactData``, the loss it was
        prepared with (None, or the same name).
    samples : int array or bool mask over the rows of ``ExactData.X``, optional
        Solve for this subset only (e.g. re-optimising the bottom of a tree); default all.
    alpha : float >= 0, default 0
        Cost of a split in objective units (those of the loss).
    min_samples_leaf : int >= 1, default 1
        Minimum number of rows with positive weight in every leaf (rows, not weight).
    allowed_features : bool array (p,), (max_depth, p) or (2**max_depth - 1, p), optional
        Features allowed for splitting: everywhere, per level (row 0: the root) or per node
        of the complete tree in heap order (row ``h - 1`` for node ``h``, root ``h = 1``,
        children of ``h``: ``2h`` left and ``2h + 1`` right).
    max_distinct_features : int >= 1, optional
        The tree splits on at most this many distinct features: the least optimum over
        every subset of that many usable features (:mod:`optitree.exact._subsets`; ValueError
        beyond :data:`~optitree.exact._subsets.MAX_SUBSETS` subsets).
    upper_bound : float, optional
        Only trees with objective below it are sought (an external cutoff).
    time_limit : float, optional
        Seconds; the best tree and a valid bound are returned when it runs out.
    node_limit : int, optional
        Deterministic work budget (evaluated candidates and kernel calls).
    work_limit : int, optional
        Deterministic work budget in rows: each kernel call and each evaluated candidate
        counts the rows of its sample set (about the passes over the data it makes). Two runs
        with the same inputs and ``work_limit`` (and no ``time_limit`` that stops first) return
        the same tree, objective and bound, whatever ``threads`` (a limited search runs on one). ``stopped_by`` says
        which limit ended a stopped search.

    A stopped search (a limit or the callback) returns its best tree and the least bound over
    its open sub-problems: per root candidate ``alpha`` plus its children's proven bounds
    (bounds from solved neighbours for candidates not reached), never above the objective,
    raised to the class-count and subset bounds of :mod:`optitree.exact._anytime` and the root-slab
    bound of :mod:`optitree.exact._slab_bound` when larger. For them, a search under ``time_limit`` or
    ``work_limit`` keeps :data:`~optitree.exact._anytime.BOUND_RESERVE` of each (the tree is found in the
    rest), :data:`~optitree.exact._slab_bound.SLAB_RESERVE` where the root-slab bound applies (depth >= 4
    over >= 4 000 rows) unless the search's own bound is then
    :data:`~optitree.exact._slab_bound.SLAB_SKIP_SHARE` of its tree or more (it searches on instead).
    callback : callable, optional
        ``callback(point) -> bool``, called about every 0.2 s between two kernel calls with
        ``{"time", "incumbent", "bound", "nodes", "event": "progress"}`` (the root's best
        objective so far, its proven bound so far, work units); returning True stops the
        search with status ``"interrupted"`` and the best tree and bound so far.
    max_bins : int >= 2, optional
        Thresholds of a feature with more distinct values restricted to the edges of that many
        quantile bins (:func:`prepare`): the proof holds over them (``split_space``), and
        ``all_midpoints_bound`` bounds the optimum over every midpoint from below.
    start : greedy.Tree, optional
        A tree on the same features (e.g. greedy CART's) that is the search's first incumbent
        when it is a tree of the problem (depth, allowed features, leaf sizes; axis-aligned
        splits): no incumbent reported and no tree returned is then worse than it, its leaves
        taking their best values. Others are ignored.
    threads : int >= 1
        Depth >= 3: the root's features are searched by this many native threads (the compiled
        core, ``cpp/root.hpp``); the same optimum and a valid bound, possibly another optimal
        tree when several tie. A ``node_limit`` or ``work_limit`` searches on one thread, so
        that the same inputs and limit return the same tree.
    problem : optitree.problem.Problem, optional
        The problem whose rows ``X`` (an :class:`ExactData`) encodes, e.g. restricted or relaxed
        (:meth:`~optitree.problem.Problem.restricted`, :meth:`~optitree.problem.Problem.relaxed`).
    """
    started = time.perf_counter()
    if not isinstance(threads, numbers.Integral) or threads < 1:
        raise ValueError(f"threads must be an integer >= 1, got {threads!r}")
    data, max_depth, alpha, min_samples_leaf, allowed, max_distinct_features = resolve(
        X, y, sample_weight, problem, loss=loss, max_bins=max_bins, max_depth=max_depth, alpha=alpha,
        min_samples_leaf=min_samples_leaf, allowed_features=allowed_features,
        max_distinct_features=max_distinct_features)
    if max_distinct_features is not None:
        masks = feature_subsets(data, allowed, int(max_depth), max_distinct_features)
        if masks is not None:
            result = solve_over_subsets(
                solve, masks, upper_bound=upper_bound, time_limit=time_limit, X=data, max_depth=max_depth,
                samples=samples, alpha=alpha, min_samples_leaf=min_samples_leaf, node_limit=node_limit,
                callback=callback, threads=threads, work_limit=work_limit, start=start)
            binned = data.binned is not None and data.binned.any()  # the bins' cost over subsets: not derived
            return replace(result, time=time.perf_counter() - started,
                           all_midpoints_bound=None if binned else result.bound)
    scale = data.scale  # the search works in units of `scale` (exact powers of two)
    ub = np.inf if upper_bound is None else float(upper_bound) / scale
    trace = Trace(started, scale)
    view = data.view if samples is None else data.subset_view(samples)
    # a search that a time or work limit may stop keeps a share of them for the slab and subset bounds
    slabs = slab_bound_applies(view.shape[1], int(max_depth))
    reserve = (SLAB_RESERVE if slabs else BOUND_RESERVE) if (time_limit is not None or work_limit is not None) and \
        not per_node_features(allowed) else 0.0

    def main_limits(reserve):  # the deadline and work budget of the search that keeps `reserve` of its limits
        return (np.inf if time_limit is None else started + (1.0 - reserve) * float(time_limit),
                None if work_limit is None else max(1, int((1.0 - reserve) * work_limit)))

    deadline, main_work = main_limits(reserve)
    search = Search(data, allowed, alpha / scale, min_samples_leaf, deadline, node_limit, work_limit=main_work,
                    anytime=True)
    if callback is not None:
        def poll():
            _, incumbent, bound = trace.points[-1]
            return callback({"time": time.perf_counter() - started, "incumbent": incumbent, "bound": bound,
                             "nodes": search.nodes_progress, "event": "progress"})
        search.poll = poll
    start_nodes = None if start is None else from_tree(data, start)
    sub = _root_search(search, view, int(max_depth), ub, threads, trace, start_nodes)
    if slabs and reserve and search.exhausted and search.stopped_by in ("time_limit", "work_limit") and \
            sub.lower_bound >= SLAB_SKIP_SHARE * sub.cost:
        slabs, reserve = False, BOUND_RESERVE  # near its proof: the search goes on, from its cache and tree
        search.deadline, search.work_limit = main_limits(reserve)
        again = _root_search(search, view, int(max_depth), ub, threads, trace, sub.nodes)
        cheaper = again if again.cost <= sub.cost else sub
        sub = Subtree(cheaper.cost, max(again.lower_bound, sub.lower_bound), cheaper.nodes)
    cost, bound = sub.cost, sub.lower_bound
    rows = np.sort(view[0])
    tree = to_tree(data, sub.nodes, rows)
    stopped_by = None
    if not search.exhausted or cost - bound <= EPS:
        status = "optimal" if cost < ub - EPS or not np.isfinite(ub) else "cutoff"
    else:
        status, stopped_by = search.stop_status(), search.stopped_by or "time_limit"
        bound = max(bound, class_count_bound(data, view, int(max_depth), allowed[0], search.alpha, search.min_leaf))
        if reserve and status != "interrupted":
            bound = max(bound, _two_level_bound(search, view, int(max_depth), started, time_limit, work_limit))
            if slabs:
                bound = max(bound, _slab_bound(search, view, int(max_depth), cost, bound, trace, started, time_limit,
                                               work_limit, threads))
            bound = max(bound, _subset_bound(search, rows, tree, int(max_depth), started, time_limit, work_limit,
                                             threads))
        bound = min(bound, cost)
        if cost - bound <= EPS:
            status, stopped_by = "optimal", None
    objective, bound = float(cost * scale), float(bound * scale)
    if data.is_regression:  # the kernels' prefix sums lose digits; report the two-pass loss
        objective = regression_loss(data, tree, rows) + alpha * tree.n_splits
        bound = objective if status == "optimal" else min(bound, objective)
    trace.add(objective / scale, bound / scale)
    gap = 0.0 if objective - bound <= EPS * scale else (objective - bound) / max(objective, 1e-300)
    below = all_midpoints_bound(data, view, int(max_depth), bound / scale, allowed, min_samples_leaf)
    return ExactResult(tree, objective, bound, float(gap), status, time.perf_counter() - started, trace.points,
                       data.classes, search.nodes_used, stopped_by, search.work_used, describe_split_space(data),
                       None if below is None else float(below * scale))


def _root_search(search: Search, view, depth: int, upper_bound: float, threads: int, trace: Trace,
                 start=None) -> Subtree:
    """The search of the whole problem from its root (:meth:`Search.root`, ``start`` its nested splits), its
    incumbents and bounds added to ``trace``."""
    def improved(at, cost):
        trace.add_at(at, cost, trace.points[-1][2] / trace.scale if trace.points else 0.0)

    def bounded(at, bound):
        if trace.points:  # the root's leaf comes first; a search run again reports its bound afresh
            _, incumbent, last = trace.points[-1]
            trace.add_at(at, incumbent / trace.scale, max(bound, last / trace.scale))

    return search.root(view, depth, upper_bound, threads, on_improve=improved, on_bound=bounded, start=start)


def _two_level_bound(search: Search, view, depth: int, start: float, time_limit, work_limit) -> float:
    """The two-level class-count bound (:mod:`optitree.exact._anytime`) in half of the limits' reserve left.

    Each root candidate counts its rows as work (``search.work_used``), so with ``work_limit``
    the bound is a function of the inputs; the subset bound gets the rest.
    """
    now = time.perf_counter()
    deadline = np.inf if time_limit is None else now + (start + float(time_limit) - now) / 2
    work_cap = np.inf if work_limit is None else (int(work_limit) - search.work_used) // 2
    spent = 0

    def out_of_budget(rows):
        nonlocal spent
        if spent + rows > work_cap or time.perf_counter() >= deadline:
            return True
        spent += rows
        return False

    bound = two_level_class_count_bound(search.data, view, depth, search.allowed, search.alpha, search.min_leaf,
                                        out_of_budget)
    search.work_used += spent
    return bound


class _Reserve:
    """The time and work ``search`` left of its limits, spent on searches of row subsets for a bound.

    Each is a search of the rows alone, without a minimum leaf size; its work is counted in
    ``search.work_used`` (with ``work_limit`` every bound is a function of the inputs).
    """

    def __init__(self, search: Search, start: float, time_limit, work_limit, threads):
        self.search, self.start, self.threads = search, start, threads
        self.deadline = np.inf if time_limit is None else start + float(time_limit)
        self.work_left = None if work_limit is None else int(work_limit) - search.work_used

    def spent(self) -> bool:
        return time.perf_counter() >= self.deadline or (self.work_left is not None and self.work_left <= 0)

    def bound(self, rows, depth: int, allowed, alpha: float) -> tuple[float, bool]:
        """A lower bound on the optimum of ``rows`` at ``depth`` and whether it is the proven optimum."""
        search = self.search
        sub_search = Search(search.data, allowed, alpha, 1, self.deadline, None, search.poll, self.work_left,
                            anytime=True)
        sub = _root_search(sub_search, search.data.subset_view(rows), depth, np.inf, self.threads,
                           Trace(self.start, 1.0))
        search.work_used += sub_search.work_used
        if self.work_left is not None:
            self.work_left -= sub_search.work_used
        return (sub.lower_bound, False) if sub_search.exhausted else (sub.cost, True)


def _slab_bound(search: Search, view, depth: int, cost: float, bound: float, trace: Trace, start: float, time_limit,
                work_limit, threads) -> float:
    """The root-slab bound (:mod:`optitree.exact._slab_bound`) in the reserve ``search`` left of the time and work limits.

    Each piece is searched at depth ``depth - 1`` without ``alpha`` (:class:`_Reserve`). Rises above
    ``bound`` are added to ``trace`` beside the incumbent's ``cost``, so the callback sees them.
    """
    reserve = _Reserve(search, start, time_limit, work_limit, threads)
    allowed = search.allowed[:2 ** (depth - 1) - 1]

    def solve_piece(rows):
        if reserve.spent():
            return 0.0, False
        return reserve.bound(rows, depth - 1, allowed, 0.0)

    def report(slab_bound):
        if slab_bound > bound:
            trace.add(cost, slab_bound)

    return root_slab_bound(search.data, view, search.allowed[0], search.alpha, search.leaf_cost(view), solve_piece,
                           cost, report)


def _subset_bound(search: Search, rows, tree, depth: int, start: float, time_limit, work_limit, threads) -> float:
    """The subset bound (:mod:`optitree.exact._anytime`) in the reserve ``search`` left of the time and work limits.

    ``rows`` (sorted) are the problem's, ``tree`` its incumbent.

    Subsets of doubling size are searched (:class:`_Reserve`) until the limits run out; each one's
    bound (proven optimum, or its own bound when stopped) bounds the whole problem, and the largest
    is returned.
    """
    reserve = _Reserve(search, start, time_limit, work_limit, threads)
    best = 0.0
    for subset in subset_rows(search.data, tree, rows, depth):
        if reserve.spent():
            break
        bound, finished = reserve.bound(subset, depth, search.allowed, search.alpha)
        best = max(best, bound)
        if not finished:
            break
    return best
