"""Local worker processes for a grid: each run in a child process the parent can account for.

Unlike a generic executor, the parent knows which run every worker holds, so:

* a worker killed by the OS (e.g. the out-of-memory killer's ``SIGKILL``) fails
  *its* run, with the reason, and a fresh worker takes the next run;
* on :func:`close` (grid finished, interrupted, or a write error) the workers are
  terminated and their in-flight runs simply produce no record;
* every worker watches its parent and exits when the parent is gone, even after
  ``kill -9`` of the parent (no orphaned worker keeps computing).

Workers are started with the ``spawn`` method (no inherited threads or locks)
and ignore ``SIGINT``: Ctrl-C in a terminal reaches the parent, which ends them.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from multiprocessing.connection import wait
from typing import Callable, Iterator

WATCH_INTERVAL = 0.5  # seconds between a worker's checks that its parent is alive


def watch_parent(parent_pid: int, interval: float = WATCH_INTERVAL) -> threading.Thread:
    """Start a daemon thread that ends this process (``os._exit``) once ``parent_pid`` is no longer its parent."""

    def watch():
        while os.getppid() == parent_pid:
            time.sleep(interval)
        os._exit(1)

    thread = threading.Thread(target=watch, name="parent-watchdog", daemon=True)
    thread.start()
    return thread


def _worker_main(conn, parent_pid: int, task: Callable) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch_parent(parent_pid)
    while True:
        try:
            item = conn.recv()
        except EOFError:  # the parent closed its end
            return
        if item is None:
            return
        conn.send(task(item))


def death_reason(exitcode: int | None) -> str:
    """Why a worker ended, from its exit code (negative: the signal that killed it)."""
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        hint = " (the OS out-of-memory killer ends processes this way)" if -exitcode == signal.SIGKILL else ""
        return f"the worker process was killed by {name}{hint}"
    return f"the worker process exited with code {exitcode}"


class WorkerPool:
    """``n_workers`` processes running ``task(item)``; use :meth:`map` once, then :meth:`close`."""

    def __init__(self, n_workers: int, task: Callable):
        self._ctx = multiprocessing.get_context("spawn")
        self._n = max(1, n_workers)
        self._task = task
        self._workers: dict = {}  # process -> (connection, item or None)

    def _start(self):
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(target=_worker_main, args=(child, os.getpid(), self._task), daemon=True)
        proc.start()
        child.close()
        self._workers[proc] = (parent, None)
        return proc

    def map(self, items: list, on_death: Callable) -> Iterator:
        """Yield ``task(item)`` for every item as they finish; a dead worker's item yields ``on_death(item, reason)``."""
        queue = list(reversed(items))
        for _ in range(min(self._n, len(items))):
            self._start()
        pending = len(items)
        while pending:
            for proc, (conn, item) in list(self._workers.items()):
                if item is None and queue:
                    nxt = queue.pop()
                    conn.send(nxt)
                    self._workers[proc] = (conn, nxt)
            by_handle = {}
            for proc, (conn, item) in self._workers.items():
                if item is not None:
                    by_handle[conn] = proc
                    by_handle[proc.sentinel] = proc
            for handle in wait(list(by_handle)):
                proc = by_handle[handle]
                if proc not in self._workers:
                    continue
                conn, item = self._workers[proc]
                try:
                    result = conn.recv() if conn.poll() else None
                except (EOFError, OSError):
                    result = None
                if result is not None:
                    self._workers[proc] = (conn, None)
                    pending -= 1
                    yield result
                elif not proc.is_alive():
                    proc.join()
                    conn.close()
                    del self._workers[proc]
                    pending -= 1
                    yield on_death(item, death_reason(proc.exitcode))
                    if queue:
                        self._start()

    def close(self) -> None:
        """Stop every worker (idle ones are asked, busy ones terminated) and reap them."""
        for proc, (conn, item) in self._workers.items():
            if item is None:
                try:
                    conn.send(None)
                except OSError:
                    pass
            else:
                proc.terminate()
        for proc, (conn, _) in self._workers.items():
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
                proc.join()
            conn.close()
        self._workers.clear()
