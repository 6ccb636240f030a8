"""State shared by the workers of :mod:`optitree.exact._parallel`: the incumbent, the root's features, exact results.

Both live in anonymous shared mappings made before the fork, so every worker reads what the
others write without passing through the parent.
"""

from __future__ import annotations

import copy
import mmap
import multiprocessing
import pickle
import threading
import time

import numpy as np

from ._scan import EPS, Subtree

#: Bytes of each worker's part of a :class:`ResultLog` (address space; pages are used as written).
LOG_BYTES = 64 << 20
#: Seconds between two reads of the other workers' results by a :class:`SharedCache`.
ABSORB_SECONDS = 0.005
_FRAME = 8  # bytes of a record's length prefix


def _fork_lock():
    """A lock shared across a fork: a semaphore of the fork context, whose name is unlinked at once (none is
    left behind, whatever ends the processes; the default context of Python >= 3.14, forkserver, keeps it
    until the lock is collected); a thread lock where there is no fork (the workers are threads)."""
    if "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork").Lock()
    return threading.Lock()


class SharedIncumbent:
    """The least cost found by any of several concurrent searches, in memory shared across a fork.

    Slot ``k`` is written by worker ``k`` only (its own least cost, which only decreases), so
    no lock is needed: the least slot is the least cost found. The last slot is the stop flag.

    Parameters
    ----------
    value : float
        The cost to beat (the common incumbent when the workers start).
    workers : int
    """

    def __init__(self, value: float, workers: int):
        self._memory = mmap.mmap(-1, 8 * (workers + 1))  # anonymous and shared: survives a fork
        self._slots = np.frombuffer(self._memory, dtype=np.float64)
        self._slots[:-1] = float(value)
        self._slots[-1] = 0.0
        self.slot = 0

    def worker(self, k: int) -> "SharedIncumbent":
        """The view of worker ``k``: :meth:`offer` writes its slot."""
        view = copy.copy(self)  # the same shared slots
        view.slot = k
        return view

    @property
    def value(self) -> float:
        return float(self._slots[:-1].min())

    def offer(self, cost: float) -> bool:
        """Record ``cost`` if it is the least so far; whether it was."""
        if cost < self.value - EPS:
            self._slots[self.slot] = float(cost)
            return True
        return False

    def request_stop(self) -> None:
        self._slots[-1] = 1.0

    def stop_requested(self) -> bool:
        return bool(self._slots[-1])


class FeatureClaims:
    """Which worker searches each root feature; a worker whose features are done takes over one of another's.

    One row per feature in memory shared across a fork: the worker that searches it (``-1``:
    none), the work spent on it so far (published by that worker) and whether it is finished
    or was taken over. A worker left without features takes over (:meth:`take_over`) the
    unfinished feature of another worker with the least work spent on it, the work lost by
    starting it again, from a worker that holds at least one more unfinished feature (moving
    a worker's last feature would only start it again, no sooner done); a feature is taken over
    at most once, so no two workers pass one back and forth. The former worker sees it at its
    next step (:meth:`holds`) and leaves it.

    Parameters
    ----------
    owners : int array (p,)
        The worker each feature is dealt to, ``-1`` for a feature not searched at the root.
    """

    OPEN, TAKEN, FINISHED = 0, 1, 2

    def __init__(self, owners):
        owners = np.asarray(owners, dtype=np.int64)
        self._memory = mmap.mmap(-1, 8 * 3 * owners.size)  # anonymous and shared: survives a fork
        self._owner, self._work, self._state = np.frombuffer(self._memory, dtype=np.int64).reshape(3, owners.size)
        self._owner[:] = owners
        self._lock = _fork_lock()  # a semaphore: across threads and forked processes alike
        self.me = 0

    def worker(self, k: int) -> "FeatureClaims":
        """The view of worker ``k``."""
        view = copy.copy(self)  # the same shared rows
        view.me = k
        return view

    def holds(self, feature: int) -> bool:
        return int(self._owner[feature]) == self.me

    def record(self, feature: int, work: int, finished: bool) -> None:
        """Add ``work`` to what was spent on ``feature`` (by the worker holding it); ``finished``: its scan ended."""
        self._work[feature] += int(work)
        if finished:
            self._state[feature] = self.FINISHED

    def take_over(self) -> int | None:
        """The unfinished feature of another worker with the least work spent, now this worker's; None: none left."""
        with self._lock:
            open_ = np.flatnonzero((self._state != self.FINISHED) & (self._owner >= 0) & (self._owner != self.me))
            busy = np.bincount(self._owner[open_], minlength=self.me + 1) >= 2  # a last feature stays
            open_ = open_[(self._state[open_] == self.OPEN) & busy[self._owner[open_]]]
            if not open_.size:
                return None
            feature = int(open_[np.argmin(self._work[open_])])
            self._owner[feature], self._state[feature] = self.me, self.TAKEN
            return feature


class ResultLog:
    """Exact sub-problem results, appended by each forked worker to its own part and read by the others.

    Worker ``k`` writes records (pickled ``(key, cost, bound, nodes)``) one after the other in
    part ``k``, then moves that part's end under its lock; a reader takes the end under the same
    lock, so it never reads a record not yet written. A full part takes no more records (the
    others then solve those sub-problems themselves).

    Parameters
    ----------
    workers : int
    """

    def __init__(self, workers: int):
        self._parts = [mmap.mmap(-1, LOG_BYTES) for _ in range(workers)]
        self._memory = mmap.mmap(-1, 8 * workers)
        self._ends = np.frombuffer(self._memory, dtype=np.int64)
        self._locks = [_fork_lock() for _ in range(workers)]
        self._read = [0] * workers  # per process (a fork copies it): how far each part was read

    def publish(self, k: int, key, result: Subtree) -> None:
        """Append ``key``'s exact ``result`` to part ``k`` (written by worker ``k`` only)."""
        record = pickle.dumps((key, result.cost, result.lower_bound, result.nodes),
                              protocol=pickle.HIGHEST_PROTOCOL)
        start = int(self._ends[k])
        end = start + _FRAME + len(record)
        if end > LOG_BYTES:
            return
        self._parts[k][start:end] = len(record).to_bytes(_FRAME, "little") + record
        with self._locks[k]:
            self._ends[k] = end

    def new(self, k: int):
        """The ``(key, Subtree)`` records of the other parts not read yet by this process."""
        for j, part in enumerate(self._parts):
            if j == k:
                continue
            with self._locks[j]:
                end = int(self._ends[j])
            at = self._read[j]
            while at < end:
                size = int.from_bytes(part[at:at + _FRAME], "little")
                key, cost, bound, nodes = pickle.loads(part[at + _FRAME:at + _FRAME + size])
                yield key, Subtree(cost, bound, nodes)
                at += _FRAME + size
            self._read[j] = end


class SharedCache(dict):
    """A forked worker's :class:`~optitree.exact._search.Search` cache, trading exact results through a log.

    Exact results at the ``depths`` given are published when stored. Looking up a sub-problem of
    one of those depths first takes, at most every :data:`ABSORB_SECONDS`, the other workers'
    new results; one replaces an entry only when that entry is not exact (an exact result is
    the optimum: its tree is no worse, its bound no lower).
    """

    def __init__(self, entries: dict, log: ResultLog, worker: int, depths: range):
        super().__init__(entries)
        self.log, self.worker, self.depths = log, worker, depths
        self._next_read = 0.0

    def __setitem__(self, key, result: Subtree) -> None:
        super().__setitem__(key, result)
        if result.exact and key[1] in self.depths:
            self.log.publish(self.worker, key, result)

    def get(self, key, default=None):
        if key[1] in self.depths and time.perf_counter() >= self._next_read:
            self._next_read = time.perf_counter() + ABSORB_SECONDS
            for other, result in self.log.new(self.worker):
                mine = dict.get(self, other)
                if mine is None or not mine.exact:
                    dict.__setitem__(self, other, result)
        return dict.get(self, key, default)
