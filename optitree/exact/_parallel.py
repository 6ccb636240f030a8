"""The root's features searched on several cores (``threads`` of :func:`optitree.exact.solve`).

The root's features, best single split first, are dealt round-robin to ``threads`` workers;
each runs :meth:`Search.branch` over its share. On Linux the workers are forked processes
(:func:`optitree._forked.run_forked`): the search spends most of its time in Python between
kernel calls, which holds the GIL, so threads of one process barely overlap. Measured on
tic-tac-toe one-hot at depth 5: 2.63 s with one thread, 4.21 s with two threads, 2.06 s with
two processes; on the continuous sets processes and threads are within 10 %. Elsewhere the
workers are threads, which overlap inside the kernels only (they release the GIL).

Each forked worker starts from a copy of the parent's cache. A sub-problem that two root
features reach (``x_f`` then ``x_g``, and ``x_g`` then ``x_f``) would be solved by both (37-52 %
more work on binary data at depth 5, 3-7 % on continuous data at depth 4), so the workers
publish their exact results of such sub-problems and take each other's
(:class:`~optitree.exact._shared.SharedCache`, from :data:`SHARED_FROM_DEPTH`). They share the
least cost any of them has found (:class:`~optitree.exact._shared.SharedIncumbent`), so each
prunes against the best tree of all. The parent waits, reports improvements (``on_improve``),
polls the search's ``poll`` and passes a stop to the workers; a wait ended by an exception
(Ctrl-C, raised by the callback) stops the workers and waits for them to end before it is raised:
no worker outlives :func:`parallel_branch`.

The work per root feature is uneven and not known beforehand: at depth 4 on wilt-like 1 500
rows, proving the optimum over each of its 5 features took 1.29, 0.47, 2.26, 0.54 and 0.60 M
units, so dealt round-robin one worker had 4.15 M and the other 1.01 M. A worker whose
features are done takes over another worker's unfinished feature, the one with the least work
spent on it (:class:`~optitree.exact._shared.FeatureClaims`). Measured (min of 2-3 runs, one
thread / two workers): wilt-like 2.42 / 1.53 s (1.58; before, 1.11-1.24), raisin-like 250 rows
3.27 / 1.94 s (1.69; 1.40-1.58), noisy XOR 38.96 / 21.80 s (1.79; 1.43-1.66), banknote-like
8.51 / 4.61 s (1.85). Dealing blocks of each feature's thresholds instead, so that every worker
has a part of every feature, doubled the work (wilt-like 4.77 -> 10.18 M units with halves):
the bisection loses the neighbour bounds across the blocks' ends.
"""

from __future__ import annotations

import threading

import numpy as np

from .. import _forked
from ._scan import EPS, Subtree
from ._search import POLL_SECONDS, Search
from ._shared import FeatureClaims, ResultLog, SharedCache, SharedIncumbent

#: Whether :func:`parallel_branch` forks processes (Linux) or runs threads.
USE_PROCESSES = _forked.FORK_AVAILABLE
#: Seconds the root search runs in this process before it forks: most small problems are solved
#: by then, and the workers start from its cache (a fork costs about 20 ms).
ALONE_SECONDS = 0.1
#: Forked workers share their exact results of sub-problems from this depth to the root's minus 2,
#: the depths two root features can both reach (:class:`~optitree.exact._shared.SharedCache`).
#: Measured (work units, one-hot, depth 5): tic-tac-toe 16.9 M without sharing, 14.4 M from depth
#: 3, 13.1 M from depth 2, 12.4 M with one worker; from depth 2 the continuous sets at depth 4 were
#: no faster (raisin-like 250 rows 2.41 -> 2.48 s, wilt-like 1 500 rows 1.98 -> 2.18 s).
SHARED_FROM_DEPTH = 3
#: Seconds after the search's deadline at which a forked worker that has not reported is killed
#: (a worker stops itself at the deadline, after the kernel call it is in).
KILL_GRACE = 30.0


def parallel_branch(search: Search, view, depth, upper_bound, best, best_nodes, threads: int,
                    on_improve=None, first_pass=False) -> Subtree:
    """:meth:`Search.branch` at the root with its features (best stump first) dealt round-robin to ``threads`` workers.

    A worker whose features are done takes over another's (:class:`~optitree.exact._shared.FeatureClaims`).

    The search first runs alone for :data:`ALONE_SECONDS`; the workers start from what it
    cached and from its incumbent. A node or work limit is shared: each worker gets an equal
    part of what the search has left.

    The optimum is the least of the workers' incumbents, the bound the least of their bounds
    (each valid for its features below the common cutoff). ``search`` gets the work of all of
    them, and their stop (``exhausted``, ``interrupted``). A forked worker that ends without
    a result (killed after an interruption or :data:`KILL_GRACE` past the deadline) counts as a
    search stopped before its first step: the start tree, bound 0.
    """
    features = search.feature_order(view, 1)
    with search.capped(seconds=ALONE_SECONDS):  # most small problems end here, without the cost of forking
        alone = search.branch(view, depth, 1, upper_bound, best, best_nodes, on_improve, features,
                              first_pass=first_pass)
        capped = search.exhausted
    if not capped or search.exhausted:  # solved, or stopped by the search's own limits
        return alone
    if alone.cost < best - EPS:
        best, best_nodes = alone.cost, alone.nodes
    workers = max(1, min(int(threads), features.size))
    shared = SharedIncumbent(min(best, upper_bound), workers)

    def share(limit, used):  # of a node or work limit, what each worker may spend: the total stays within it
        return None if not np.isfinite(limit) else max(0, int(limit - used) // workers)

    node_limit, work_limit = share(search.node_limit, search.nodes_used), share(search.work_limit, search.work_used)

    dealt = [features[k::workers] for k in range(workers)]
    owners = np.full(search.data.n_features, -1)
    for k, mine in enumerate(dealt):
        owners[mine] = k
    claims = FeatureClaims(owners)
    log = ResultLog(workers) if USE_PROCESSES and depth - 2 >= SHARED_FROM_DEPTH else None

    def work(k):
        sub = search.sibling(shared.stop_requested, node_limit, work_limit)
        if log is not None:  # in the worker's process: its copy of the cache becomes a shared one
            sub.cache = SharedCache(sub.cache, log, k, range(SHARED_FROM_DEPTH, depth - 1))
        result = sub.branch(view, depth, 1, upper_bound, best, best_nodes, None, dealt[k],
                            shared.worker(k), first_pass, claims.worker(k))
        return result, sub.nodes_used, sub.work_used, sub.stopped_by, sub.exhausted, sub.interrupted

    seen = shared.value

    def watch():
        nonlocal seen
        if on_improve is not None and shared.value < seen - EPS:
            seen = shared.value
            on_improve(seen)
        if search.poll is not None and not search.interrupted and search.poll():
            search.interrupted, search.exhausted = True, True
            search.stopped_by = search.stopped_by or "callback"
            shared.request_stop()

    # on an exception in watch (KeyboardInterrupt, raised by the callback) the workers are stopped and waited for
    if USE_PROCESSES:
        outcomes = _in_processes(work, workers, watch, shared.request_stop, search.deadline + KILL_GRACE)
    else:
        outcomes = _in_threads(work, workers, watch, shared.request_stop)
    watch()
    subs = []
    for outcome in outcomes:
        if outcome is None:
            subs.append(Subtree(best, 0.0, best_nodes))
            search.exhausted = True
            search.stopped_by = search.stopped_by or "time_limit"
            continue
        sub, nodes_used, work_used, stopped_by, exhausted, interrupted = outcome
        subs.append(sub)
        search.nodes_used += nodes_used
        search.work_used += work_used
        search.stopped_by = search.stopped_by or stopped_by
        search.exhausted = search.exhausted or exhausted
        search.interrupted = search.interrupted or interrupted
    winner = min(subs, key=lambda s: s.cost)
    return Subtree(winner.cost, min(winner.cost, min(s.lower_bound for s in subs)), winner.nodes)


def _in_threads(work, workers: int, watch, stop) -> list:
    """``work(k)`` for each worker in a thread; ``watch()`` every :data:`POLL_SECONDS` meanwhile.

    When ``watch`` raises (e.g. ``KeyboardInterrupt``, or an exception from the search's
    callback) or the wait is interrupted, ``stop()`` asks the workers to end and the exception
    is raised once every worker has ended: none outlives the call.
    """
    outcomes = [None] * workers
    errors = []

    def target(k):
        try:
            outcomes[k] = work(k)
        except BaseException as error:  # noqa: BLE001 - re-raised in the caller's thread
            errors.append(error)

    pool = [threading.Thread(target=target, args=(k,), name=f"exact-worker-{k}") for k in range(workers)]
    for thread in pool:
        thread.start()
    try:
        for thread in pool:
            while thread.is_alive():
                thread.join(POLL_SECONDS)
                watch()
    except BaseException:
        stop()
        for thread in pool:  # each ends at its search's next poll (a forked one is killed soon after)
            while thread.is_alive():
                try:
                    thread.join()
                except KeyboardInterrupt:  # another Ctrl-C: the exception on its way is raised anyway
                    pass
        raise
    if errors:
        raise errors[0]
    return outcomes


def _in_processes(work, workers: int, watch, stop, deadline: float) -> list:
    """``work(k)`` for each worker in a forked process, each supervised by a thread; ``watch()`` meanwhile.

    A worker still running at ``deadline`` is killed. A worker's outcome is ``None`` when it
    ended without one (stopped or killed); an exception in a worker is raised here as a
    ``RuntimeError`` with its traceback. A worker that cannot fork runs in its supervising
    thread instead. When ``watch`` raises, ``stop()`` asks the workers to end, a worker
    process that has not ended :data:`~optitree._forked.STOP_GRACE` seconds later is killed,
    and the exception is raised once every worker has ended (:func:`_in_threads`).
    """
    halt = threading.Event()

    def supervise(k):
        received = []
        try:
            forked = _forked.run_forked(lambda send, _: send(work(k)), received.append, deadline, halt.is_set)
        except _forked.ForkFailed:  # e.g. no memory to fork: this worker runs here, as a thread
            return work(k)
        if forked.state == "died":
            raise RuntimeError(f"an engine worker process failed: {forked.detail}")
        return received[0] if received else None

    def stop_all():
        stop()  # read by the workers' searches at their next poll
        halt.set()  # read by their supervisors: a worker still running STOP_GRACE later is killed

    return _in_threads(supervise, workers, watch, stop_all)
