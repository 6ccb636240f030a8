"""Memory guard: refuse a model that would not fit before building it."""

from __future__ import annotations

import os
from numbers import Integral

__all__ = ["ModelTooLargeError", "estimate_bytes", "estimate_peak_bytes", "check_size", "available_memory_bytes",
           "SOLVE_PROFILES", "solve_profile"]

# Memory model of ``estimate_bytes``, calibrated with ``python -m benchmarks.compiler
# --calibrate`` (peak RSS of a fresh process building an OCT-shaped random spec with ~12
# non-zeros per row from numpy triplets and calling ``to_highs``; HiGHS 1.15.1, numpy 2.4):
#     nnz (rows, cols)              0.59 M (50 k, 16 k)   1.48 M   2.96 M   5.92 M (500 k, 160 k)
#     measured peak RSS increase    40 MiB                96 MiB   159-181  306 MiB
#     estimate                      62 MiB                108 MiB  186 MiB  339 MiB
# i.e. ~50 B per non-zero: the formulation's int64/float64 triplets (24 B, transient), the
# block CSR kept by the spec (12 B), the compile-time CSR/CSC (12 B, transient) and HiGHS's
# copy (12 B), not all alive at once.  Solving needs more: at 5.92 M non-zeros HiGHS's
# presolve peaked at 828 MiB (2.7x the build), which the default budget (1/4 of the
# available memory) leaves room for.
_BYTES_PER_NONZERO = 52
_BYTES_PER_ROW = 16
_BYTES_PER_COL = 40
_BYTES_BASE = 32 * 2**20


#: Solve profiles ``(base bytes, bytes per non-zero)`` per formulation, measured on the models
#: of ``src/benchmarks/memory.py`` (random data, 10 features, ``acceleration="none"``, 10 s
#: limit, HiGHS 1.16 in a forked child; peak of this process's RSS plus the child's private
#: pages, sampled every 5 ms, above the RSS before the fit; one run each on a shared 2-core
#: machine):
#:
#:     flow  63 k / 248 k / 568 k / 1.41 M non-zeros:  168 / 255 / 192 / 387 MiB
#:     oct   120 k / 1.68 M / 6.71 M:                   30 / 227 / 843 MiB
#:
#: and, re-measured for FlowOCT (depth 2-3, 1 000-10 000 rows, the machine shared with other jobs):
#:
#:     flow  568 k / 616 k / 1.41 M / 1.41 M / 1.41 M / 2.82 M:  251 / 296 / 436 / 468 / 601 / 781 MiB
#:
#: and for ORT (three runs at 214 k, seventeen at 2.23 M, on an idle 2-core machine; the peak comes
#: at the time limit, so it depends on what the root node is doing then: 524-574 MiB in eleven
#: runs, 926-970 MiB in six):
#:
#:     ort   214 k / 2.23 M:                            230-234 / 524-970 MiB
#:
#: The lines below put every one of them within 0.64-1.34x of its estimate; one more FlowOCT run,
#: the first fit of its process at 125 k non-zeros, peaked at 420 MiB (2.2x: small models' peaks
#: are the process's, not the model's; the guard matters for large ones). (The earlier
#: profiles, fitted to ``ru_maxrss`` increases, which count the child's shared pages and miss
#: peaks below the import-time maximum, were 2.5-11x the peak). Formulations not listed keep
#: their own ``solve_memory``.
SOLVE_PROFILES = {
    "flow": (178 * 2**20, 224),
    "oct": (15 * 2**20, 129),
    "ort": (180 * 2**20, 260),
}


def solve_profile(form):
    """The solve profile of formulation ``form`` (:data:`SOLVE_PROFILES`, else ``form.solve_memory``)."""
    return SOLVE_PROFILES.get(getattr(form, "name", None), getattr(form, "solve_memory", None))


def estimate_peak_bytes(n_rows: int, n_cols: int, nnz: int, solve_memory=None) -> int:
    """Peak memory (bytes) of building *and* solving a model of this size.

    ``solve_memory = (base_bytes, bytes_per_nonzero)`` is the formulation's measured solve
    profile (``TreeFormulation.solve_memory``, calibrated with ``python -m
    benchmarks.memory``: peak RSS of real HiGHS fits, presolve and root LP included);
    the peak is the larger of the build estimate and ``base + per_nonzero * nnz``. Without a
    profile, the build estimate alone.
    """
    build = estimate_bytes(n_rows, n_cols, nnz)
    if solve_memory is None:
        return build
    base, per_nonzero = solve_memory
    return int(max(build, base + per_nonzero * nnz))


def estimate_bytes(n_rows: int, n_cols: int, nnz: int) -> int:
    """Peak memory (bytes) to build a :class:`ModelSpec` of this size and hand it to HiGHS.

    A linear model ``32 MiB + 52 B·nnz + 16 B·rows + 40 B·cols`` calibrated with
    ``src/benchmarks/compiler.py`` (measurements in this module's comments).  The
    HiGHS solve itself needs more (presolve peaked at 2.7x the build at 6 M non-zeros);
    :func:`check_size`'s default budget of 1/4 of the available memory allows for it.
    """
    return int(
        _BYTES_BASE + _BYTES_PER_NONZERO * nnz + _BYTES_PER_ROW * n_rows + _BYTES_PER_COL * n_cols
    )


class ModelTooLargeError(ValueError):
    """The model would need more memory than the budget allows."""


def available_memory_bytes() -> int:
    """Available physical memory (psutil if installed, else ``/proc/meminfo``)."""
    try:
        import psutil
    except ImportError:
        psutil = None
    if psutil is not None:
        return int(psutil.virtual_memory().available)
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES"))


def check_size(n_rows, n_cols, nnz, budget_bytes=None, hint="", solve_memory=None) -> None:
    """Refuse a model whose estimated peak memory exceeds the budget.

    Parameters
    ----------
    n_rows, n_cols, nnz : int
        Model size (e.g. from a formulation's ``estimate_size()``).
    budget_bytes : int or None
        Memory budget; ``None`` = a quarter of the available memory for the build alone,
        three quarters when ``solve_memory`` makes the estimate cover the solve too.
    hint : str
        How to shrink the model (e.g. "use max_thresholds, fewer samples or a lower depth").
    solve_memory : (float, float) or None
        The formulation's solve profile (:func:`estimate_peak_bytes`).

    Raises
    ------
    ModelTooLargeError
        When the estimate exceeds the budget; the message says how much, for what, and how
        to shrink the model.
    """
    if budget_bytes is None:
        budget_bytes = available_memory_bytes() * (3 if solve_memory is not None else 1) // 4
    elif not isinstance(budget_bytes, Integral | float) or budget_bytes <= 0:
        raise ValueError(f"budget_bytes must be a positive number, got {budget_bytes!r}")
    need = estimate_peak_bytes(n_rows, n_cols, nnz, solve_memory)
    if need > budget_bytes:
        advice = hint or "reduce the number of samples, features or thresholds, or the depth"
        what = "to build and solve" if solve_memory is not None else "to build"
        raise ModelTooLargeError(
            f"model too large: {n_rows:,} rows, {n_cols:,} columns, {nnz:,} non-zeros need an "
            f"estimated {_format_bytes(need)} {what}, over the memory budget of "
            f"{_format_bytes(budget_bytes)}. To shrink it: {advice}; or raise the budget "
            "(memory_budget=...)."
        )


def _format_bytes(n) -> str:
    if n < 1024:
        return f"{n:.0f} B"
    for unit in ("KiB", "MiB", "GiB"):
        n /= 1024
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}"
