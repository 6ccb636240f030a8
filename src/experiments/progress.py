"""Progress of a grid on stderr: a tqdm bar in a terminal, plain lines otherwise.

In a terminal (and with ``tqdm`` installed) one bar shows runs finished, the
counts done / failed / proven optimal, elapsed time and ETA, and a line is
printed above it for each finished run. Elsewhere (CI, a log file) there is no
bar: one plain line per finished run, no terminal control characters.
"""

from __future__ import annotations

import contextlib
import itertools
import sys


def run_line(record) -> str:
    """``"iris d=2 flow s=0: done, optimal, gap 0.00%, 1.2 s"`` for a finished run."""
    c = record.config
    fold = "" if c.get("fold") is None else f" fold={c['fold']}"
    text = f"{c['dataset_label']} d={c['depth']} {c['method_label']} s={c['seed']}{fold}: {record.status}"
    solver = record.solver or {}
    if record.status == "done" and solver:
        gap = solver.get("gap")
        text += f", {solver.get('status')}" + ("" if gap is None else f", gap {100 * gap:.2f}%")
        if solver.get("certificate"):
            text += f" ({solver['certificate']})"
    elif record.status != "done" and record.error:
        text += f" ({record.error.get('type')}: {str(record.error.get('message')).splitlines()[0][:80]})"
    if record.duration is not None:
        text += f", {record.duration:.1f} s"
    return text


@contextlib.contextmanager
def progress(total: int, enabled: bool, stream=None):
    """A ``tick(record)`` callable reporting each finished run (a no-op when disabled)."""
    stream = stream or sys.stderr
    if not enabled or total == 0:
        yield lambda record: None
        return
    counts = {"done": 0, "failed": 0, "proven": 0}

    def count(record):
        counts["done" if record.status == "done" else "failed"] += 1
        counts["proven"] += bool((record.solver or {}).get("proven_optimal"))

    tqdm = _tqdm() if _is_terminal(stream) else None
    if tqdm is None:
        position = itertools.count(1)

        def tick(record):
            count(record)
            print(f"[{next(position)}/{total}] {run_line(record)}", file=stream, flush=True)

        yield tick
        return
    bar = tqdm(total=total, unit="run", file=stream, dynamic_ncols=True, desc="done 0 · failed 0 · proven 0",
               bar_format="{desc} {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed} elapsed, ETA {remaining}]")

    def tick(record):
        count(record)
        bar.write(run_line(record), file=stream)
        bar.set_description_str(f"done {counts['done']} · failed {counts['failed']} · proven {counts['proven']}",
                                refresh=False)
        bar.update(1)

    try:
        yield tick
    finally:
        bar.close()


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _tqdm():
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm
