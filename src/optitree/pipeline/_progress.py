"""A fit you can watch and stop: the live progress line (``verbose=1``) and Ctrl-C.

:class:`FitWatch` accompanies one ``fit`` of an optimal estimator (``with FitWatch(...)``).

* **Progress** (``verbose=1``): one line on stderr — elapsed time, the stage running
  (``engine``, ``bounds``, ``MIP``, ``decomposition``), incumbent and bound in the user's
  units (training errors, the loss), the gap computed from those two (never a raw solver
  value: a bound below the objective's a-priori lower bound is shown as that bound), and
  nodes or work units. Rewritten in place on a terminal; elsewhere appended at most every
  :data:`LOG_EVERY` seconds. A heartbeat thread repeats the last line (with the time
  updated) when no stage reported for :data:`LOG_EVERY` seconds (a model build, a
  presolve). A fit shorter than :data:`QUIET_SECONDS` prints nothing.
* **Interrupts**: while the fit runs in the main thread, SIGINT (Ctrl-C) is handled here (when
  Python's default handler had it: a program with its own handler keeps it). The
  first one asks the running stage to stop (the engine's and the MIP's callbacks return
  True, a forked HiGHS child is stopped, later stages stop at once); ``fit`` returns the best
  tree found with status ``"interrupted"``, ``proven_optimal=False``, the last valid bound and a
  warning. A second one raises :class:`KeyboardInterrupt`: at once in Python code, at the
  next callback (within a fraction of a second) inside a compiled kernel or a solver, where
  an exception raised by the signal handler would be lost or mangled.
  :func:`request_stop` does what the first Ctrl-C does (e.g. from a harness's SIGTERM handler).
"""

from __future__ import annotations

import math
import os
import signal
import sys
import threading
import time
import warnings
from contextlib import contextmanager

__all__ = ["ProgressLine", "FitWatch", "FitInterrupted", "request_stop", "clear_stop", "QUIET_SECONDS", "LOG_EVERY"]

#: A fit shorter than this prints nothing.
QUIET_SECONDS = 1.0
#: Seconds between lines when stderr is not a terminal (and between heartbeats).
LOG_EVERY = 1.25

_current: list = []  # the FitWatch of the running fit(s), innermost last


class FitInterrupted(UserWarning):
    """Warning issued by a fit stopped by Ctrl-C (or :func:`request_stop`): its tree is the best found so far."""


_stop_all = False


def request_stop(all_fits: bool = False) -> bool:
    """Ask the running fit to stop as the first Ctrl-C does; False when no fit is running.

    ``all_fits``: every later fit of this process also stops at once (returning its start,
    status "interrupted") until :func:`clear_stop` — for a program ending a sequence of fits
    (a grid's run of several folds) on SIGTERM. Safe to call from a signal handler.
    """
    global _stop_all
    if all_fits:
        _stop_all = True
    if not _current:
        return False
    _current[-1].stop_requested = True
    return True


def clear_stop() -> None:
    """Undo ``request_stop(all_fits=True)``."""
    global _stop_all
    _stop_all = False


def _user(value, units):
    return None if value is None or not math.isfinite(value) else round(value / units, 9)  # noise near 0 shown as 0


class ProgressLine:
    """The line itself: :meth:`show` a point ``{"incumbent", "bound", "nodes"}`` in model units.

    Parameters
    ----------
    label : str
        What the incumbent is, e.g. ``"errors"``.
    units : float
        Model objective units per user unit (the incumbent shown is ``objective / units``).
    stream : file, default sys.stderr
    lower : float, default 0
        The objective's a-priori lower bound (model units): a reported bound below it is shown as it.
    """

    def __init__(self, label: str, units: float, stream=None, lower: float = 0.0):
        self.label, self.units, self.lower = label, units, lower
        self.stream = sys.stderr if stream is None else stream
        self.start = time.perf_counter()
        self.last = None
        self.shown = False
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.state = {"stage": "setup", "incumbent": None, "bound": None, "nodes": None}
        self.lock = threading.Lock()

    def text(self, point: dict | None = None) -> str:
        state = self.state if point is None else {**self.state, **point}
        incumbent, bound = _user(state.get("incumbent"), self.units), _user(state.get("bound"), self.units)
        lower = _user(self.lower, self.units)
        if bound is not None and lower is not None:
            bound = max(bound, lower)
        if incumbent is not None and bound is not None:
            bound = min(bound, incumbent)
        gap = None
        if incumbent is not None and bound is not None:
            diff = incumbent - bound
            gap = 0.0 if diff <= 1e-9 * max(1.0, abs(incumbent)) else (
                math.inf if incumbent == 0 else diff / abs(incumbent))
        shown = {k: "-" if v is None else f"{v:.6g}" for k, v in (("incumbent", incumbent), ("bound", bound))}
        nodes = state.get("nodes")
        return (f"{time.perf_counter() - self.start:7.1f} s  {state.get('stage', ''):<13} incumbent "
                f"{shown['incumbent']} {self.label}  bound {shown['bound']}  gap "
                f"{'-' if gap is None else 'inf' if math.isinf(gap) else format(gap, '.2%')}"
                f"  nodes {'-' if nodes is None else nodes}")

    def __call__(self, point: dict) -> None:
        """Record ``point`` (model units) and print it when due; an ``on_event`` that never stops a solve."""
        self.show(point)
        return None

    def show(self, point: dict | None = None, force: bool = False) -> None:
        with self.lock:
            if point is not None:
                self.state.update({k: point[k] for k in ("stage", "incumbent", "bound", "nodes") if k in point})
            now = time.perf_counter()
            final = point is not None and point.get("event") == "final"
            if now - self.start < QUIET_SECONDS and not (final and self.shown) and not force:
                return
            if not (final or force) and self.last is not None and now - self.last < (0.5 if self.tty else LOG_EVERY):
                return
            self.last, self.shown = now, True
            end = "\n" if final or not self.tty else ""
            self.stream.write(("\r" if self.tty else "") + self.text() + end)
            self.stream.flush()

    def heartbeat(self) -> None:
        """Repeat the last line when nothing was printed for :data:`LOG_EVERY` seconds."""
        with self.lock:
            due = time.perf_counter() - self.start >= QUIET_SECONDS and (
                self.last is None or time.perf_counter() - self.last >= LOG_EVERY)
        if due:
            self.show(force=True)

    def close(self) -> None:
        with self.lock:
            if self.tty and self.shown:
                self.stream.write("\n")
                self.stream.flush()


class FitWatch:
    """Progress line and interrupt state of one fit (module docstring); a context manager.

    Parameters
    ----------
    verbose : int
        1 shows the progress line.
    label, units : str, float
        As for :class:`ProgressLine` (units: model objective per user unit).
    lower : float
        The objective's a-priori lower bound (model units).
    """

    def __init__(self, verbose: int = 0, label: str = "objective", units: float = 1.0, lower: float = 0.0,
                 stream=None):
        self.line = ProgressLine(label, units, stream=stream, lower=lower) if int(verbose) == 1 else None
        self.label, self.units = label, units
        self.stop_requested = False
        self.abort = False
        self.floor = -math.inf  # the best lower bound the stages proved (model units)
        self.guarded = 0  # > 0 inside a compiled kernel or a solver: the handler must not raise there
        self.stopped_in: list[str] = []
        self._previous = None
        self._wakeup = None
        self._beat = None
        self._done = threading.Event()

    def set_units(self, label: str, units: float, lower: float = 0.0) -> None:
        """What the objective is called, model units per user unit, the a-priori lower bound (model units)."""
        self.label, self.units = label, units
        if self.line is not None:
            self.line.label, self.line.units, self.line.lower = label, units, lower

    # ------------------------------------------------------------------ context
    def __enter__(self):
        _current.append(self)
        if _stop_all:
            self.stop_requested = True
            self.stopped_in.append("before the fit (request_stop(all_fits=True))")
        # Ctrl-C is ours only where Python's default handler has it: a program with its own (a
        # harness stopping a grid) or ignoring it (a pool worker) keeps it, and can call request_stop
        if threading.current_thread() is threading.main_thread() and (
                signal.getsignal(signal.SIGINT) is signal.default_int_handler):
            try:
                self._previous = signal.signal(signal.SIGINT, self._on_sigint)
            except (ValueError, OSError):  # pragma: no cover - e.g. an embedded interpreter
                self._previous = None
            else:
                self._count_signals()
        if self.line is not None:
            self._beat = threading.Thread(target=self._heartbeat, name="optitree-progress", daemon=True)
            self._beat.start()
        return self

    def __exit__(self, kind, value, tb):
        self._done.set()
        if self._beat is not None:
            self._beat.join(timeout=1.0)
        if self.line is not None:
            self.line.close()
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
        if self._wakeup is not None:
            signal.set_wakeup_fd(-1)
            for fd in self._wakeup:
                os.close(fd)
            self._wakeup = None
        if self in _current:
            _current.remove(self)
        if self.abort and kind is not None and not issubclass(kind, KeyboardInterrupt):
            # a second Ctrl-C that surfaced as another exception (e.g. inside a compiled call)
            raise KeyboardInterrupt from value
        return False

    def _heartbeat(self):
        while not self._done.wait(0.25):
            self.line.heartbeat()

    def _count_signals(self):
        """Count every SIGINT, also two that arrive during one compiled call (Python runs the handler
        once for both): the C-level handler writes one byte per signal to a wake-up pipe, unless
        another user (an event loop) owns it."""
        r, w = os.pipe()
        os.set_blocking(r, False)
        os.set_blocking(w, False)
        try:
            previous = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        except (ValueError, OSError):  # pragma: no cover
            previous = -1
            os.close(r)
            os.close(w)
            return
        if previous != -1:  # someone else's: leave it
            signal.set_wakeup_fd(previous)
            os.close(r)
            os.close(w)
            return
        self._wakeup = (r, w)

    def _received(self) -> int:
        """SIGINTs received since the last call (at least 1: the one being handled)."""
        if self._wakeup is None:
            return 1
        data = b""
        try:
            while chunk := os.read(self._wakeup[0], 4096):
                data += chunk
        except BlockingIOError:
            pass
        return max(1, data.count(bytes([signal.SIGINT])))

    def _on_sigint(self, signum, frame):
        for _ in range(self._received()):
            self._one_sigint()

    def _one_sigint(self):
        if self.stop_requested:
            self.abort = True
            if not self.guarded:
                raise KeyboardInterrupt
            return
        self.stop_requested = True
        print("\noptitree: interrupt received, stopping the search (press Ctrl-C again to abort the fit)",
              file=sys.stderr, flush=True)

    # ------------------------------------------------------------------ stages
    def check(self) -> bool:
        """True when a stop was asked for; raises KeyboardInterrupt after a second Ctrl-C."""
        if self.abort:
            raise KeyboardInterrupt
        return self.stop_requested

    @contextmanager
    def stage(self, name: str):
        """Run a stage (a compiled kernel loop, a solver call) in which the handler must not raise."""
        self.guarded += 1
        if self.line is not None:
            self.line.show({"stage": name})
        try:
            yield
        finally:
            self.guarded -= 1
        self.check()

    def engine_callback(self, name: str, units: float, values: bool = True, held: float | None = None):
        """``callback(point) -> bool`` for :func:`optitree.exact.solve` / ``split_bounds``.

        ``units``: model objective per engine unit (points arrive in engine units).
        ``values``: the point's incumbent and bound are the fit's (the engine's solve of the
        whole problem); False for bounds on sub-problems, whose values the line must not show.
        ``held``: the objective (model units) of a tree the fit returns unless the engine beats it
        (a start outside the engine's split space): the line's incumbent is never above it, nor
        its bound above its incumbent.
        """
        def callback(point):
            if self.line is not None:
                scaled = {"stage": name, "nodes": point.get("nodes")}
                for key in ("incumbent", "bound") if values else ():
                    v = point.get(key)
                    scaled[key] = None if v is None or not math.isfinite(v) else v * units
                if values and held is not None:
                    scaled["incumbent"] = held if scaled["incumbent"] is None else min(scaled["incumbent"], held)
                    if scaled["bound"] is not None:
                        scaled["bound"] = min(scaled["bound"], scaled["incumbent"])
                self.line.show(scaled)
            if self.check():
                if name not in self.stopped_in:
                    self.stopped_in.append(name)
                return True
            return False

        return callback

    def known(self, incumbent=None, bound=None) -> None:
        """The fit's incumbent and lower bound (model units) as the stages find them (the start,
        the engine's tree and bound, the root bounds), between solver reports."""
        if self.line is None:
            return
        point = {}
        if incumbent is not None:
            point["incumbent"] = incumbent
        if bound is not None and math.isfinite(bound):
            self.floor = max(self.floor, bound)
            point["bound"] = self.floor
        if point:
            self.line.show(point)

    def solver_callback(self, name: str = "MIP"):
        """``on_event(point) -> bool`` for a solver backend (points in model units)."""
        def on_event(point):
            if self.line is not None:
                bound = point.get("bound")
                # the fit's bound is the best one known: a stage's own (weaker) bound does not lower it
                bound = self.floor if bound is None or not math.isfinite(bound) else max(bound, self.floor)
                self.line.show({**point, "stage": name, "bound": None if math.isinf(bound) else bound})
            # never raise inside a solver's callback (it would be swallowed): the stage raises after it
            if self.abort or self.stop_requested:
                if name not in self.stopped_in:
                    self.stopped_in.append(name)
                return True
            return False

        return on_event

    def warn(self, what: str) -> None:
        warnings.warn(f"fit interrupted: {what}", FitInterrupted, stacklevel=4)
