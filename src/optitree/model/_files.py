"""LP and MPS files of a :class:`~optitree.model.ModelSpec`."""

from __future__ import annotations

import os

import numpy as np

__all__ = ["write_model", "mps_text"]


def write_model(spec, path) -> None:
    """Write ``spec`` to ``path`` as ``.lp`` or ``.mps`` (by suffix).

    Columns and rows are named after their blocks (``x(0,3)``, ``routing(17)``).
    ``.lp`` is written by HiGHS; the LP format has no ranged rows, so HiGHS writes a
    row with two finite, different bounds as two rows (``name lo``/``name up``).
    ``.mps`` is written here (free MPS with ``RANGES``; integer columns always get
    explicit bounds, as readers default unbounded integer columns to binary) because
    the MPS writer of HiGHS 1.15 leaves empty zero-cost columns that follow an
    integer column inside the integer marker block, so they read back as integer.
    """
    path = os.fspath(path)
    suffix = os.path.splitext(path)[1].lower()
    if suffix == ".mps":
        with open(path, "w") as f:
            f.write(mps_text(spec))
        return
    if suffix != ".lp":
        raise ValueError(f"write() supports .lp and .mps files, got {path!r}")
    import highspy

    from ._highs import compile_highs

    h = compile_highs(spec, names=True)
    if h.writeModel(path) == highspy.HighsStatus.kError:
        raise OSError(f"HiGHS could not write {path!r}")


def mps_text(spec) -> str:
    """The model as free MPS text (see :func:`write_model`)."""
    col_names, row_names = spec.column_names(), spec.row_names()
    cost, col_lb, col_ub, integrality = spec.column_arrays()
    row_lb, row_ub = spec.row_bounds()
    csc = spec.to_csc()
    lines = [f"NAME {spec.name}", "ROWS", " N  obj"]
    row_type = np.where(row_lb == row_ub, "E", np.where(row_lb == -np.inf, "L", "G"))
    lines += [f" {t}  {n}" for t, n in zip(row_type.tolist(), row_names)]

    lines.append("COLUMNS")
    entries = [
        f"    {{}}  {row_names[i]}  {v!r}" for i, v in zip(csc.indices.tolist(), csc.data.tolist())
    ]
    starts = csc.indptr.tolist()
    in_integer, n_markers = False, 0
    for j, (name, c, integer) in enumerate(zip(col_names, cost.tolist(), integrality.tolist())):
        if bool(integer) != in_integer:
            in_integer = not in_integer
            lines.append(f"    MARKER{n_markers}  'MARKER'  '{'INTORG' if in_integer else 'INTEND'}'")
            n_markers += 1
        if c != 0 or starts[j] == starts[j + 1]:
            lines.append(f"    {name}  obj  {c!r}")
        lines.extend(e.format(name) for e in entries[starts[j] : starts[j + 1]])
    if in_integer:
        lines.append(f"    MARKER{n_markers}  'MARKER'  'INTEND'")

    lines.append("RHS")
    if spec.objective_offset != 0:
        lines.append(f"    RHS  obj  {-float(spec.objective_offset)!r}")
    rhs = np.where(row_type == "L", row_ub, row_lb)
    lines += [f"    RHS  {row_names[i]}  {rhs[i].item()!r}" for i in np.flatnonzero(rhs != 0)]
    ranged = np.flatnonzero((row_type == "G") & np.isfinite(row_ub))
    if ranged.size:
        lines.append("RANGES")
        lines += [f"    RNG  {row_names[i]}  {(row_ub[i] - row_lb[i]).item()!r}" for i in ranged]

    lines.append("BOUNDS")
    for name, lo, hi, integer in zip(col_names, col_lb.tolist(), col_ub.tolist(), integrality.tolist()):
        if integer and lo == 0 and hi == 1:
            lines.append(f" BV BND  {name}")
        elif lo == hi:
            lines.append(f" FX BND  {name}  {lo!r}")
        elif lo == -np.inf and hi == np.inf:
            lines.append(f" FR BND  {name}")
        else:
            if lo == -np.inf:
                lines.append(f" MI BND  {name}")
            elif lo != 0 or integer:
                lines.append(f" LO BND  {name}  {lo!r}")
            if hi != np.inf:
                lines.append(f" UP BND  {name}  {hi!r}")
            elif integer:
                lines.append(f" PL BND  {name}")
    lines.append("ENDATA")
    return "\n".join(lines) + "\n"

