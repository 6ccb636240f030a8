"""Solve, add the rows a callback asks for, solve again: one result on one clock.

:func:`solve_adding_rows` is the fit pipeline's solve. With a ``rows_after_solve``
callback (a formulation's :meth:`~optitree.formulations.TreeFormulation.rows_after_solve`)
it is an outer loop: cuts or constraints found violated by a solution are added to the
loaded solver with :meth:`SolverBackend.add_rows`, and the model is solved again, warm
from that solution, under what remains of the time limit.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable

import numpy as np

from .base import ProgressCallback, SolverBackend
from .results import SolveOptions, SolveResult

__all__ = ["solve_adding_rows", "RowsCallback"]

RowsCallback = Callable[[np.ndarray, SolveResult], "list[tuple] | None"]
"""``rows_after_solve(x, result)``: row blocks to add, each a tuple of
:meth:`ModelSpec.add_rows <optitree.model.ModelSpec.add_rows>` arguments
``(name, n_rows, rows, cols, vals, lb, ub)``, or None (or an empty list) to stop."""


class _Relay:
    """``on_event`` of one solve of the loop: times on the loop's clock, the final point held back."""

    def __init__(self, on_event: ProgressCallback | None, offset: float, first: bool):
        self.on_event, self.offset, self.first = on_event, offset, first
        self.final = None

    def point(self, point: dict) -> dict:
        point = {**point, "time": point["time"] + self.offset}
        if point["event"] == "start" and not self.first:  # the previous solution accepted again
            point["event"] = "improving"
        return point

    def __call__(self, point: dict):
        point = self.point(point)
        if point["event"] == "final":  # sent by :meth:`close`, once the loop knows whether it goes on
            self.final = point
            return None
        return None if self.on_event is None else self.on_event(point)

    def close(self, event: str) -> None:
        if self.on_event is not None and self.final is not None:
            self.on_event({**self.final, "event": event})


def solve_adding_rows(
    backend: SolverBackend,
    options: SolveOptions,
    on_event: ProgressCallback | None = None,
    rows_after_solve: RowsCallback | None = None,
) -> tuple[SolveResult, np.ndarray | None]:
    """Solve; while ``rows_after_solve(x, result)`` returns row blocks, add them and solve again.

    Parameters
    ----------
    backend : SolverBackend
        The loaded model (its start, if any, set).
    options : SolveOptions
        ``time_limit`` bounds the whole loop: every re-solve gets what remains of it;
        ``node_limit`` applies to each solve.
    on_event : ProgressCallback, optional
        Receives the points of every solve with times since the first solve started. The
        last point of a solve that is followed by another has event ``"rows"`` instead of
        ``"final"``; a re-solve's accepted warm start is ``"improving"``.
    rows_after_solve : RowsCallback, optional
        Called after every solve that ends with a solution and was not interrupted;
        without it this is ``backend.solve(options, on_event)``.

    Returns
    -------
    result : SolveResult
        The last solve's outcome with the points of every solve in ``trace`` (one
        clock, events as for ``on_event``), the summed node count, the loop's solve
        time and the first solve's start fields. ``message`` says how many rows were
        added. Rows asked for when the time is up are not added: the result is then
        ``termination="time_limit"`` and not proven optimal.
    x : ndarray or None
        The last solve's solution.
    """
    if rows_after_solve is None:
        return backend.solve(options, on_event)
    clock = time.perf_counter()
    first = None
    trace, nodes, added, rounds = [], 0, 0, 0
    while True:
        relay = _Relay(on_event, 0.0 if first is None else time.perf_counter() - clock, first is None)
        result, x = backend.solve(options, relay)
        first = first or result
        nodes += result.nodes
        trace += [relay.point(p) for p in result.trace]
        blocks = None
        if x is not None and result.termination != "interrupted":
            blocks = rows_after_solve(x, result) or None
        remaining = None if options.time_limit is None else options.time_limit - (time.perf_counter() - clock)
        pending = blocks is not None and remaining is not None and remaining <= 0
        if blocks is None or pending:
            relay.close("final")
            break
        trace[-1]["event"] = "rows"
        relay.close("rows")
        for block in blocks:
            added += int(backend.add_rows(*block).size)
        rounds += 1
        options = dataclasses.replace(options, time_limit=remaining)
    notes = [result.message]
    if rounds:
        notes.append(f"rows_after_solve: {added} row(s) added in {rounds} round(s), solved {rounds + 1} times")
        result = dataclasses.replace(
            result, trace=trace, nodes=nodes, solve_time=trace[-1]["time"], build_time=first.build_time,
            start_source=first.start_source, start_objective=first.start_objective,
            start_accepted=first.start_accepted,
        )
    if pending:
        notes.append("rows_after_solve asked for more rows when the time limit was reached: not proven optimal")
        result = dataclasses.replace(result, termination="time_limit", proven_optimal=False)
    result.message = "; ".join(filter(None, notes))
    return result, x
