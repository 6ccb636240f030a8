"""A :class:`~optitree.model.ModelSpec` in HiGHS's own form: one ``passModel`` call.

The solver backend (:mod:`optitree.solvers.highs`) solves what :func:`compile_highs` builds, and
the LP writer (:func:`optitree.model.write_model`) writes it; the model itself never imports a
backend.
"""

from __future__ import annotations

import os
import sys

import numpy as np

__all__ = ["compile_highs", "new_highs"]

_BANNER_SHOWN = False


def new_highs(verbose: bool):
    """A :class:`highspy.Highs`; the first one of the process prints HiGHS's banner on C's stdout.

    HiGHS 1.16 prints "Running HiGHS ... Copyright" from the first constructor, before any
    option can be set: unless ``verbose``, file descriptor 1 points to ``/dev/null`` while it runs.
    """
    import highspy

    global _BANNER_SHOWN
    if _BANNER_SHOWN or verbose:
        _BANNER_SHOWN = True
        return highspy.Highs()
    _BANNER_SHOWN = True
    if sys.stdout is not None:
        sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no file descriptor 1: nothing to print to
        return highspy.Highs()
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            return highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def compile_highs(spec, verbose: bool = False, names: bool = False):
    """Compile ``spec`` to a :class:`highspy.Highs` model with one ``passModel`` call.

    Parameters
    ----------
    spec : ModelSpec
    verbose : bool, default=False
        Keep HiGHS's console output on (off otherwise).
    names : bool, default=False
        Also pass column/row names ``block(i,j)`` (a Python loop over columns and
        rows: meant for file export, not for solving large models).
    """
    import highspy

    h = new_highs(verbose)
    h.setOptionValue("output_flag", bool(verbose))
    h.setOptionValue("log_to_console", bool(verbose))
    cost, col_lb, col_ub, integrality = spec.column_arrays()
    row_lb, row_ub = spec.row_bounds()
    csc = spec.to_csc()
    status = h.passModel(
        spec.n_cols, spec.n_rows, int(csc.nnz),
        int(highspy.MatrixFormat.kColwise), int(highspy.ObjSense.kMinimize),
        float(spec.objective_offset),
        cost, col_lb, col_ub, row_lb, row_ub,
        csc.indptr.astype(np.int32, copy=False),
        csc.indices.astype(np.int32, copy=False),
        csc.data, integrality,
    )
    del csc
    if status == highspy.HighsStatus.kError:
        raise ValueError(f"HiGHS rejected model {spec.name!r} in passModel")
    if names:
        for j, col_name in enumerate(spec.column_names()):
            h.passColName(j, col_name)
        for i, row_name in enumerate(spec.row_names()):
            h.passRowName(i, row_name)
    return h
