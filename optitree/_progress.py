"""The one-line progress report of a fit (``verbose=1``); ``verbose=2`` is the raw solver log.

A fit that runs longer than :data:`QUIET_SECONDS` writes one line to stderr, rewritten in
place on a terminal (``\\r``) and appended at most every :data:`LOG_EVERY` seconds elsewhere
(CI logs stay short). Objectives are shown in the user's units: training errors (weighted)
for classification, the loss for regression.
"""

from __future__ import annotations

import sys
import time

__all__ = ["ProgressLine", "QUIET_SECONDS", "LOG_EVERY"]

#: A fit shorter than this prints nothing.
QUIET_SECONDS = 2.0
#: Seconds between lines when stderr is not a terminal.
LOG_EVERY = 10.0


class ProgressLine:
    """Callable for a backend's ``on_event``: shows incumbent, bound, gap, elapsed time and nodes.

    Parameters
    ----------
    label : str
        What the incumbent is, e.g. ``"errors"``.
    units : float
        Model objective units per user unit (the incumbent shown is ``objective / units``).
    stream : file, default sys.stderr
    """

    def __init__(self, label: str, units: float, stream=None):
        self.label, self.units = label, units
        self.stream = sys.stderr if stream is None else stream
        self.start = time.perf_counter()
        self.last = None
        self.shown = False
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def text(self, point: dict) -> str:
        def value(v):
            return None if v is None else round(v / self.units, 9)  # solver noise near 0 shown as 0

        incumbent, bound = value(point.get("incumbent")), value(point.get("bound"))
        gap = point.get("gap")
        if incumbent is not None and bound is not None and incumbent - bound <= 1e-9 * max(1.0, abs(incumbent)):
            gap = 0.0
        shown = {k: "-" if v is None else f"{v:.6g}" for k, v in (("incumbent", incumbent), ("bound", bound))}
        nodes = point.get("nodes")
        return (f"{time.perf_counter() - self.start:7.1f} s  incumbent {shown['incumbent']} {self.label}"
                f"  bound {shown['bound']}  gap {'-' if gap is None else format(gap, '.2%')}"
                f"  nodes {'-' if nodes is None else nodes}")

    def __call__(self, point: dict) -> None:
        now = time.perf_counter()
        final = point.get("event") == "final"
        if now - self.start < QUIET_SECONDS and not (final and self.shown):
            return None
        if not final and self.last is not None and now - self.last < (0.5 if self.tty else LOG_EVERY):
            return None
        self.last, self.shown = now, True
        end = "\n" if final or not self.tty else ""
        self.stream.write(("\r" if self.tty else "") + self.text(point) + end)
        self.stream.flush()
        return None
