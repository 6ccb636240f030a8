"""Run a solver call in a forked child process that can be stopped at a hard deadline.

Some stages of a solver check no clock (HiGHS's dominated-column presolve and its mod-k
root cut separation, see :mod:`optitree.solvers.highs`), so the solver's own time limit can
be overrun by tens of percent. A child process can always be stopped: :func:`run_forked`
forks, runs ``work`` in the child, relays the child's messages to the parent as they come
(``send`` pickles them through a pipe) and kills the child with ``SIGKILL`` if it has not
finished by ``deadline``. The parent keeps what the child reported before, so a stopped run
still has the last incumbent and bound it announced.

Forking copies the process lazily (copy-on-write): about 20 ms for a 250 MB process, and
the model loaded in the parent needs no serialisation. Only Linux is supported
(:data:`FORK_AVAILABLE`); the child runs nothing but the solver call and pipe writes, and
dies with its parent (``PR_SET_PDEATHSIG``), so no stray process outlives an interrupted fit.
"""

from __future__ import annotations

import ctypes
import math
import mmap
import os
import pickle
import select
import signal
import sys
import threading
import time
import traceback
import warnings
from typing import Any, Callable

__all__ = ["FORK_AVAILABLE", "ForkFailed", "ForkedOutcome", "run_forked"]

#: Whether :func:`run_forked` can run here (Linux: fork, ``prctl`` and ``select`` on pipes).
FORK_AVAILABLE = sys.platform.startswith("linux") and hasattr(os, "fork")

_HEADER = 8  # bytes of a frame's length prefix
#: Seconds a child asked to stop (``stop()``) gets to finish before it is killed.
STOP_GRACE = 0.5
#: Seconds between two calls of ``stop()`` while the child is silent.
STOP_POLL = 0.1
_PR_SET_PDEATHSIG = 1
#: Signals the forking thread blocks until the child has its own dispositions (:func:`_child`).
_BLOCKED = {signal.SIGINT, signal.SIGTERM}


class ForkFailed(RuntimeError):
    """The fork itself failed (e.g. ``ENOMEM`` under strict memory overcommit); nothing ran."""


class ForkedOutcome:
    """How a forked run ended.

    Attributes
    ----------
    state : str
        ``"finished"`` (``work`` returned), ``"killed"`` (stopped at the deadline),
        ``"stopped"`` (``stop()`` asked for it and the child did not finish within
        :data:`STOP_GRACE` seconds: killed) or ``"died"`` (the child ended without finishing: a crash, or a signal from outside).
    detail : str
        For ``"died"``: the exit status or signal, and the child's traceback if it raised.
    seconds : float
        Wall time from the fork to the end of the child.
    """

    def __init__(self, state: str, detail: str, seconds: float):
        self.state, self.detail, self.seconds = state, detail, seconds


def _die_with_parent() -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - prctl is always there on Linux
        pass


class _ChildError:
    """The traceback of an exception raised by ``work`` in the child, sent as its last message."""

    def __init__(self, text: str):
        self.text = text


class _Finished:
    """Sent by the child when ``work`` has returned."""


def _child(work, write_fd: int, stop_flag: mmap.mmap, parent: int, mask) -> None:
    """Body of the child: never returns (``os._exit``), so no parent clean-up runs twice.

    It starts with SIGINT and SIGTERM blocked (:data:`_BLOCKED`, by the parent around the fork)
    and unblocks them (``mask``: the mask before) once it ignores SIGINT and has no wake-up fd.
    """
    code = 0

    def send(message: Any) -> None:
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(len(data).to_bytes(_HEADER, "little") + data)
        while view:
            view = view[os.write(write_fd, view):]

    try:
        # Ctrl-C reaches the whole process group: the parent decides (it asks the child to stop, then kills it).
        # The parent's handlers must never run here: its SIGINT handler would count a Ctrl-C in this copy, and
        # Python's C-level handler would write to the parent's wake-up fd (inherited), counted there as a second.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a SIGINT pending since the fork is discarded
        _die_with_parent()
        if os.getppid() != parent:  # the parent died before prctl took effect
            return
        work(send, lambda: stop_flag[0] != 0)
        send(_Finished())
    except BaseException:  # noqa: BLE001 - reported to the parent
        code = 1
        try:
            send(_ChildError(traceback.format_exc()))
        except BaseException:  # noqa: BLE001 - the parent is gone: nothing to report to
            pass
    finally:
        os._exit(code)


def _frames(buffer: bytearray):
    """Complete frames at the head of ``buffer`` (removed from it), unpickled."""
    messages = []
    while len(buffer) >= _HEADER:
        size = int.from_bytes(buffer[:_HEADER], "little")
        if len(buffer) < _HEADER + size:
            break
        messages.append(pickle.loads(bytes(buffer[_HEADER:_HEADER + size])))
        del buffer[:_HEADER + size]
    return messages


def _exit_detail(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"ended by signal {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exited with status {os.WEXITSTATUS(status)}"


def _reap_later(pid: int) -> None:
    """Collect the child's exit in a thread: freeing a large child's memory takes tens of ms."""
    threading.Thread(target=os.waitpid, args=(pid, 0), name=f"reap-{pid}", daemon=True).start()


def run_forked(work: Callable[[Callable[[Any], None], Callable[[], bool]], None],
               on_message: Callable[[Any], bool | None], deadline: float,
               stop: Callable[[], bool] | None = None) -> ForkedOutcome:
    """Run ``work(send, stop_requested)`` in a forked child until it returns or ``deadline`` passes.

    Parameters
    ----------
    work : callable
        Runs in the child. ``send(message)`` passes a picklable message to the parent;
        ``stop_requested()`` is True once the parent asked the run to stop.
    on_message : callable
        Called in the parent with each message, in order (also with those found in the pipe
        after a kill: they were sent before it); a True return asks the child to stop
        (``stop_requested()``), which ``work`` honours as it can.
    deadline : float
        ``time.perf_counter()`` value at which an unfinished child is killed.
    stop : callable, optional
        Polled in the parent about every :data:`STOP_POLL` seconds; once True, the child is
        asked to stop (as by ``on_message``) and killed if it has not finished
        :data:`STOP_GRACE` seconds later (a stage that checks nothing: state ``"stopped"``).

    Returns
    -------
    ForkedOutcome

    Raises
    ------
    ForkFailed
        If the process could not fork.
    """
    if not FORK_AVAILABLE:
        raise RuntimeError("run_forked needs fork (Linux)")
    stop_flag = mmap.mmap(-1, 1)  # anonymous and shared: the parent's writes reach the child
    read_fd, write_fd = os.pipe()
    t0, parent = time.perf_counter(), os.getpid()
    with warnings.catch_warnings():
        # Python >= 3.12 warns when a multi-threaded process forks; the child runs no Python
        # code that could wait for another thread's lock (the solver call and os.write).
        warnings.simplefilter("ignore", DeprecationWarning)
        # blocked in this thread during the fork: a signal meanwhile goes to another thread, or waits till unblocked
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, _BLOCKED)
        try:
            pid = os.fork()
        except OSError as error:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            os.close(read_fd)
            os.close(write_fd)
            stop_flag.close()
            raise ForkFailed(f"fork failed: {error}") from error
    if pid == 0:  # pragma: no cover - the child's coverage is not collected
        os.close(read_fd)
        _child(work, write_fd, stop_flag, parent, mask)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    os.close(write_fd)
    buffer = bytearray()
    end = {"finished": False, "error": None}

    def relay(chunk):
        buffer.extend(chunk)
        for message in _frames(buffer):
            if isinstance(message, _Finished):
                end["finished"] = True
            elif isinstance(message, _ChildError):
                end["error"] = message.text
            elif on_message(message):
                stop_flag[0] = 1

    killed, status, stop_at = False, None, None
    try:
        while not end["finished"]:
            now = time.perf_counter()
            if stop_at is None and (stop_flag[0] or stop is not None and stop()):
                stop_flag[0] = 1
                stop_at = now + STOP_GRACE
            wait = min(deadline, math.inf if stop_at is None else stop_at) - now
            if wait <= 0:
                os.kill(pid, signal.SIGKILL)
                killed = "stopped" if stop_at is not None and now < deadline else "killed"
                os.set_blocking(read_fd, False)
                try:  # what the child wrote before it was killed
                    while chunk := os.read(read_fd, 1 << 20):
                        relay(chunk)
                except BlockingIOError:
                    pass
                break
            if select.select([read_fd], [], [], wait if stop is None or stop_at is not None else min(wait, STOP_POLL))[0]:
                chunk = os.read(read_fd, 1 << 20)
                if not chunk:  # the child has ended without finishing
                    _, status = os.waitpid(pid, 0)
                    break
                relay(chunk)
    except BaseException:  # an exception in on_message, or KeyboardInterrupt: the child must not outlive it
        if status is None:  # not reaped yet, so the pid is still the child's
            os.kill(pid, signal.SIGKILL)
            _reap_later(pid)
        raise
    finally:
        os.close(read_fd)
        stop_flag.close()
    seconds = time.perf_counter() - t0
    if status is None:
        _reap_later(pid)
    if end["finished"]:  # also when the last frames were read after a kill
        return ForkedOutcome("finished", "", seconds)
    if killed:
        return ForkedOutcome(killed, "", seconds)
    return ForkedOutcome("died", "; ".join(filter(None, [_exit_detail(status), end["error"]])), seconds)
