"""The exact search of one problem: the compiled core's branch and bound, run on native threads.

The search itself -- branch and bound over sample sets with a cache of solved sets, ConTree's
interval bisection over each feature's thresholds, the depth-2 kernels at the bottom and the root's
features dealt to ``threads`` workers -- is ``cpp/search.hpp`` and ``cpp/root.hpp``; their comments
give the strategy and the measurements behind it. This module states the problem to it, runs a job
while this thread waits in slices of :data:`POLL_SECONDS` (progress, callbacks, Ctrl-C) and reads
the outcome; a small job first runs on this thread for :data:`INLINE_SECONDS`. Its nested splits become a ``greedy.Tree`` in :mod:`optitree.exact._tree`.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from ._core import EPS
from ._core import Problem as CoreProblem
from ._core import Search as CoreSearch
from ._binary import pair_columns
from ._data import ExactData

#: Work (kernel calls and evaluated candidates) a relaxed scan may spend per candidate of its feature
#: before it stops and leaves neighbour bounds (the search without ``min_leaf``, whose children optima
#: bound the restricted ones). Measured (depth 3, ``min_leaf=5``): wine proved in 1.1 s instead of
#: 21.5 s, breast_cancer in 19.6 s where 120 s had not found the optimum.
RELAXED_WORK = 0.25
#: Seconds between two looks of the waiting thread at a running search (progress, callback, Ctrl-C).
POLL_SECONDS = 0.2
#: A data set with a feature of at least this many thresholds is searched best first: the scans of all
#: features interleaved, the interval next to the cheapest tree found first. Measured (depth-1 sweeps):
#: raisin-like 250 rows depth 4 1 108 650 -> 458 936, breast_cancer depth 3 38 602 -> 28 244; on
#: categorical sets it did 6-28 % more, hence the threshold.
BEST_FIRST_THRESHOLDS = 5
#: Seconds the root search runs on one thread before ``threads`` workers start from its cache and
#: incumbent, the inline slice's included (which has ended the tiny problems). Measured, two threads
#: against one on the six instances of the README's speed-up above 1 s: median speed-up 1.74 with
#: 0.1 s, 1.84 with 0.03 s (the slice then not counted).
ALONE_SECONDS = 0.03
#: Seconds a root search first runs on the calling thread, without progress reports, before it goes on
#: on a native thread; only without a node or work limit (a stop by the clock would make theirs depend
#: on the machine) and for at most :data:`INLINE_CELLS` rows times features (its first depth-2 solve
#: then takes milliseconds). A tiny problem ends there without the thread's start and hand-off.
INLINE_SECONDS = 0.02
#: Largest ``rows * features`` of a root search that starts on the calling thread.
INLINE_CELLS = 100_000


class Subtree(NamedTuple):
    """Outcome of one (sub-)problem: ``lower_bound <= optimum <= cost``; exact when they meet.

    ``nodes`` is ``None`` (a leaf) or ``(feature, rank_threshold, left, right)``.
    """

    cost: float
    lower_bound: float
    nodes: tuple | None

    @property
    def exact(self) -> bool:
        return self.lower_bound >= self.cost - EPS


class Search:
    """The compiled search of one problem, with its limits; one job at a time.

    Parameters
    ----------
    data : ExactData
    allowed : bool ndarray (2**depth - 1, p)
        Features allowed for splits at each node of the complete tree in heap order (row
        ``h - 1`` for node ``h``; node 1 is the root).
    alpha : float
        Cost of one split, in the engine's units (the loss / ``data.scale``).
    min_leaf : int
        Minimum number of (positive-weight) rows in every leaf.
    deadline : float
        ``time.perf_counter()`` value after which the search stops (``inf``: none).
    node_limit : int or None
        Maximum number of evaluated split candidates and kernel calls, a deterministic budget.
    poll : callable or None
        Called with no argument every :data:`POLL_SECONDS` while a job runs; returning True
        stops it (``interrupted``), e.g. on Ctrl-C or from a progress display.
    work_limit : int or None
        Maximum work: each unit of ``node_limit`` weighted by the rows of its sample set.
        Deterministic: the same inputs and limit stop at the same point.
    anytime : bool
        Branches first take one step on every feature, at every level, so that a search
        stopped early has a bound over every candidate and an early incumbent (not in an
        inline slice that the deadline cannot cut, which nothing can stop).
    """

    def __init__(self, data: ExactData, allowed, alpha: float, min_leaf: int, deadline: float, node_limit,
                 poll=None, work_limit=None, anytime=False):
        self.data = data
        self.allowed = np.ascontiguousarray(allowed, dtype=bool)
        self.alpha = float(alpha)
        self.min_leaf = int(min_leaf)
        self.deadline = deadline
        self.node_limit = node_limit
        self.work_limit = work_limit
        self.poll = poll
        self.anytime = bool(anytime)
        most = max(len(t) for t in data.thresholds)
        self.best_first = most >= BEST_FIRST_THRESHOLDS
        self.binary = most <= 1  # one candidate per feature: depth 3 solves them without scans
        self._core = None

    @property
    def core(self) -> CoreSearch:
        """The compiled search, made on first use (with the settings as they are then)."""
        if self._core is None:
            d = self.data
            columns = pair_columns(d)
            col_feature, col_rank = ([], []) if columns is None else columns
            problem = CoreProblem(d.rank, d.y, d.weight, d.stats, d.loss_code, d.width, col_feature, col_rank)
            self._core = CoreSearch(problem, self.allowed, self.alpha, self.min_leaf, self.anytime, RELAXED_WORK,
                                      self.best_first, self.binary)
        return self._core

    # the core's counters and stop, read after a job
    nodes_used = property(lambda self: self.core.nodes_used,
                          lambda self, value: setattr(self.core, "nodes_used", int(value)))
    work_used = property(lambda self: self.core.work_used,
                         lambda self, value: setattr(self.core, "work_used", int(value)))
    exhausted = property(lambda self: self.core.exhausted)
    interrupted = property(lambda self: self.core.interrupted)
    stopped_by = property(lambda self: self.core.stopped_by)

    @property
    def nodes_progress(self) -> int:
        """Units of work so far, read while a job runs (from the callback)."""
        return self.core.nodes_progress

    def stop_status(self) -> str:
        """What ended an exhausted search: ``"interrupted"``, ``"node_limit"``, ``"work_limit"`` or ``"time_limit"``."""
        reason = self.stopped_by or "time_limit"
        return "interrupted" if reason == "callback" else reason

    def leaf_cost(self, view) -> float:
        return self.core.leaf_cost(view)

    def relaxed_bounds(self, view, depth: int, node: int, feature: int, cutoff: float):
        """Children bounds of ``feature``'s candidates at ``node`` from the search without ``min_leaf``.

        ``(rank_threshold, left_bound, right_bound)`` over the relaxed candidates (a superset of
        the restricted ones), lazy against ``cutoff``; None when the search is monotone itself,
        below depth 3 or without a finite cutoff.
        """
        return self.core.relaxed_bounds(view, depth, node, feature, cutoff)

    def root(self, view, depth: int, upper_bound: float = np.inf, threads: int = 1, on_improve=None,
             on_bound=None, start=None) -> Subtree:
        """Best tree of depth <= ``depth`` for ``view`` below ``upper_bound``, from a depth-2 start.

        ``threads`` workers search the root's features (depth >= 3); a node or work limit
        searches on one thread, so that its stop is deterministic. ``on_improve(time, cost)``
        gets each new incumbent with its ``time.perf_counter()`` time, ``on_bound(time, bound)``
        each rise of the root's lower bound seen while the search runs (the least over its open
        candidates, at most every :data:`POLL_SECONDS`). On a spent budget: the best tree and
        the least bound over the open sub-problems. ``start`` (nested splits) is the first
        incumbent when it is a tree of the problem and beats a leaf.
        """
        limited = self.node_limit is not None or self.work_limit is not None
        if limited:
            threads = 1
        small = view.size <= INLINE_CELLS  # a view is one row order per feature
        inline = INLINE_SECONDS if small and not limited else 0.0
        self._run(lambda: self.core.start_root(view, int(depth), float(upper_bound), int(threads), ALONE_SECONDS,
                                               start, inline), on_improve, on_bound)
        return Subtree(*self.core.root_result())

    def split_bounds(self, view, depth: int, limit: float, tighten: bool, on_improve=None):
        """Scan every allowed root feature of a depth-``depth`` tree against ``limit`` (and, ``tighten``, the best tree).

        Returns ``(best_cost, best_nodes, features)``, ``features`` a list of ``(feature,
        rank_threshold, n_left, bound_left, bound_right, exact)``.
        """
        self._run(lambda: self.core.start_split_bounds(view, int(depth), float(limit), bool(tighten)), on_improve)
        cost, nodes = self.core.best()
        return cost, nodes, self.core.feature_bounds()

    def _run(self, start, on_improve, on_bound=None) -> None:
        """Start a job and wait for it, reporting improvements and polling meanwhile.

        An exception while waiting (Ctrl-C, or raised by ``poll``) stops the job and is raised
        once its threads have ended: none outlives the call.
        """
        core = self.core
        seconds = self.deadline - time.perf_counter() if np.isfinite(self.deadline) else np.inf
        core.set_limits(seconds, np.inf if self.node_limit is None else float(self.node_limit),
                        np.inf if self.work_limit is None else float(self.work_limit))
        started = time.perf_counter()
        bound = 0.0
        try:  # the start too: a Ctrl-C raised as it returns must not leave its threads running
            start()
            while not core.wait(POLL_SECONDS):
                self._report(started, on_improve)
                if on_bound is not None and core.live_bound > bound:
                    bound = core.live_bound
                    on_bound(time.perf_counter(), bound)
                if self.poll is not None and self.poll():
                    core.interrupt()
        except BaseException:
            core.interrupt()
            try:
                core.finish()
            except Exception:  # noqa: BLE001 - the exception on its way is the one to raise
                pass
            raise
        core.finish()
        self._report(started, on_improve)

    def _report(self, started: float, on_improve) -> None:
        for seconds, cost in self.core.improvements():
            if on_improve is not None:
                on_improve(started + seconds, cost)
