"""Solver-independent MIP description and its compilers (HiGHS, Pyomo, LP/MPS files).

A formulation describes its model once, as *variable blocks* (named n-d arrays of
columns sharing integrality) and vectorised *row blocks* (sparse coefficient triplets
plus row bounds).  :class:`ModelSpec` stores the non-zeros as numpy arrays and compiles
them

* to a :class:`highspy.Highs` object with a single ``passModel`` call (the fast path),
* to a :class:`pyomo.environ.ConcreteModel` with indexed ``Var`` s named like the blocks
  (user extensions, other solvers),
* to ``.lp`` (through HiGHS) and ``.mps`` files.

The model is always

.. math::

    \\min_x\\; c^\\top x + c_0 \\quad\\text{s.t.}\\quad r^L \\le A x \\le r^U,\\;
    l \\le x \\le u,\\; x_j \\in \\mathbb{Z}\\ (j \\in \\mathcal{I}).
"""

from __future__ import annotations

import itertools
import math
import os
from dataclasses import dataclass, field
from numbers import Integral

import numpy as np
import scipy.sparse as sp

__all__ = [
    "ModelSpec",
    "VarBlock",
    "RowBlock",
    "ModelTooLargeError",
    "estimate_bytes",
    "check_size",
]

_INT32_MAX = np.iinfo(np.int32).max

# Memory model of ``estimate_bytes``, calibrated with ``python -m experiments.bench_compiler
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


@dataclass(eq=False)
class VarBlock:
    """A named n-d array of variables occupying columns ``start .. start+size-1``.

    ``lb``, ``ub`` and ``obj`` are flat float arrays of length ``size`` (C order of
    ``shape``).
    """

    name: str
    shape: tuple[int, ...]
    start: int
    size: int
    lb: np.ndarray
    ub: np.ndarray
    integer: bool
    obj: np.ndarray

    @property
    def indices(self) -> np.ndarray:
        """Global column indices of the block, an int array of ``shape``."""
        return np.arange(self.start, self.start + self.size).reshape(self.shape)


@dataclass(eq=False)
class RowBlock:
    """A named block of ``n_rows`` rows ``start .. start+n_rows-1``.

    The coefficients are kept in block-local CSR form (``indptr``, ``indices`` =
    global columns, ``data``), duplicates summed and explicit zeros removed.
    """

    name: str
    n_rows: int
    start: int
    nnz: int
    lb: np.ndarray = field(repr=False)
    ub: np.ndarray = field(repr=False)
    indptr: np.ndarray = field(repr=False)
    indices: np.ndarray = field(repr=False)
    data: np.ndarray = field(repr=False)


class ModelSpec:
    """Solver-independent description of a mixed-integer linear program.

    .. math::

        \\min\\; c^\\top x + \\text{objective\\_offset} \\quad \\text{s.t.}\\quad
        \\text{row\\_lb} \\le A x \\le \\text{row\\_ub},\\;
        \\text{col\\_lb} \\le x \\le \\text{col\\_ub},\\;
        x_j \\text{ integer for the columns of integer blocks.}

    Parameters
    ----------
    name : str, default="model"
        Model name (used in exported files).

    Attributes
    ----------
    objective_offset : float
        Constant added to the objective.
    var_blocks : dict[str, VarBlock]
        Variable blocks in insertion (= column) order.
    row_blocks : dict[str, RowBlock]
        Row blocks in insertion (= row) order.

    Examples
    --------
    >>> spec = ModelSpec("knapsack")
    >>> x = spec.add_vars("x", 3, ub=1, integer=True, obj=[-5.0, -4.0, -3.0])
    >>> spec.add_rows("capacity", 1, rows=[0, 0, 0], cols=x, vals=[2, 3, 1], lb=-np.inf, ub=4)
    array([0])
    """

    def __init__(self, name: str = "model"):
        if not isinstance(name, str) or not name:
            raise TypeError(f"name must be a non-empty str, got {name!r}")
        self.name = name
        self.objective_offset = 0.0
        self.var_blocks: dict[str, VarBlock] = {}
        self.row_blocks: dict[str, RowBlock] = {}
        self.n_cols = 0
        self.n_rows = 0
        self.nnz = 0
        self.n_integer = 0

    def __repr__(self) -> str:
        return (
            f"ModelSpec({self.name!r}, n_rows={self.n_rows}, n_cols={self.n_cols}, "
            f"nnz={self.nnz}, n_integer={self.n_integer})"
        )

    # ------------------------------------------------------------------ building
    def add_vars(self, name, shape, *, lb=0.0, ub=np.inf, integer=False, obj=0.0) -> np.ndarray:
        """Add a block of variables.

        Parameters
        ----------
        name : str
            Unique block name (also the Pyomo ``Var`` name).
        shape : int or tuple of int
            Shape of the block; ``()`` is a single variable.
        lb, ub : float or array-like, default=(0, inf)
            Bounds, broadcastable to ``shape``; ``-inf``/``inf`` for free.
        integer : bool, default=False
            Whether the block's variables are integer (binary if bounds are in [0, 1]).
        obj : float or array-like, default=0
            Objective coefficients, broadcastable to ``shape``.

        Returns
        -------
        ndarray of int, shape ``shape``
            Global column indices of the new variables.
        """
        self._check_new_name(name, "variable")
        shape = _as_shape(shape)
        size = math.prod(shape)
        lb = _broadcast_float(lb, shape, f"lb of variable block {name!r}").ravel()
        ub = _broadcast_float(ub, shape, f"ub of variable block {name!r}").ravel()
        obj = _broadcast_float(obj, shape, f"obj of variable block {name!r}").ravel()
        if np.isnan(lb).any() or np.isnan(ub).any():
            raise ValueError(f"bounds of variable block {name!r} contain NaN")
        if (lb == np.inf).any() or (ub == -np.inf).any():
            raise ValueError(f"variable block {name!r}: lb must be < inf and ub > -inf")
        if (lb > ub).any():
            j = int(np.flatnonzero(lb > ub)[0])
            raise ValueError(f"variable block {name!r}: lb > ub at flat index {j} ({lb[j]} > {ub[j]})")
        if not np.isfinite(obj).all():
            raise ValueError(f"objective coefficients of variable block {name!r} must be finite")
        if self.n_cols + size > _INT32_MAX:
            raise ValueError(f"variable block {name!r} would exceed {_INT32_MAX} columns")
        block = VarBlock(name, shape, self.n_cols, size, lb, ub, bool(integer), obj)
        self.var_blocks[name] = block
        self.n_cols += size
        self.n_integer += size if block.integer else 0
        return block.indices

    def add_rows(self, name, n_rows, rows, cols, vals, lb, ub) -> np.ndarray:
        """Add a block of rows ``lb[i] <= sum_k vals[k] * x[cols[k]] (rows[k] == i) <= ub[i]``.

        Parameters
        ----------
        name : str
            Unique block name (also the Pyomo ``Constraint`` name).
        n_rows : int
            Number of rows in the block.
        rows : array-like of int
            Local row (``0 .. n_rows-1``) of each non-zero.
        cols : array-like of int
            Global column index of each non-zero (as returned by :meth:`add_vars`).
        vals : array-like of float
            Coefficient of each non-zero.  Duplicate ``(row, col)`` pairs are summed;
            entries that sum to zero are dropped.
        lb, ub : float or array-like of shape (n_rows,)
            Row bounds; ``-inf``/``inf`` allowed (not both: free rows are refused),
            ``lb == ub`` for equalities.

        Returns
        -------
        ndarray of int, shape (n_rows,)
            Global row indices of the block.
        """
        self._check_new_name(name, "row")
        n_rows = _as_count(n_rows, "n_rows")
        rows = _as_index_array(rows, "rows", name)
        cols = _as_index_array(cols, "cols", name)
        vals = np.asarray(vals, dtype=np.float64).ravel()
        if not (rows.size == cols.size == vals.size):
            raise ValueError(
                f"row block {name!r}: rows, cols and vals must have the same length, "
                f"got {rows.size}, {cols.size}, {vals.size}"
            )
        if rows.size and (rows.min() < 0 or rows.max() >= n_rows):
            raise ValueError(f"row block {name!r}: local row indices must be in [0, {n_rows})")
        if cols.size and (cols.min() < 0 or cols.max() >= self.n_cols):
            raise ValueError(
                f"row block {name!r}: column indices must be in [0, {self.n_cols}) "
                "(add the variables first)"
            )
        if not np.isfinite(vals).all():
            raise ValueError(f"row block {name!r}: coefficients must be finite")
        lb = _broadcast_float(lb, (n_rows,), f"lb of row block {name!r}")
        ub = _broadcast_float(ub, (n_rows,), f"ub of row block {name!r}")
        if np.isnan(lb).any() or np.isnan(ub).any():
            raise ValueError(f"bounds of row block {name!r} contain NaN")
        if (lb == np.inf).any() or (ub == -np.inf).any():
            raise ValueError(f"row block {name!r}: lb must be < inf and ub > -inf")
        if (lb > ub).any():
            i = int(np.flatnonzero(lb > ub)[0])
            raise ValueError(f"row block {name!r}: lb > ub at row {i} ({lb[i]} > {ub[i]})")
        free = (lb == -np.inf) & (ub == np.inf)
        if free.any():
            raise ValueError(
                f"row block {name!r}: row {int(np.flatnonzero(free)[0])} has no bounds "
                "(lb=-inf, ub=inf); a free row constrains nothing, leave it out"
            )
        if self.n_rows + n_rows > _INT32_MAX:
            raise ValueError(f"row block {name!r} would exceed {_INT32_MAX} rows")

        csr = sp.csr_array((vals, (rows, cols)), shape=(n_rows, self.n_cols))
        csr.sum_duplicates()
        csr.eliminate_zeros()
        if self.nnz + csr.nnz > _INT32_MAX:
            raise ValueError(f"row block {name!r} would exceed {_INT32_MAX} non-zeros")
        block = RowBlock(
            name, n_rows, self.n_rows, int(csr.nnz), lb, ub,
            csr.indptr.astype(np.int64, copy=False),
            csr.indices.astype(np.int32, copy=False),
            csr.data,
        )
        self.row_blocks[name] = block
        self.n_rows += n_rows
        self.nnz += block.nnz
        return np.arange(block.start, block.start + n_rows)

    def block_values(self, x, name) -> np.ndarray:
        """Values of variable block ``name`` in solution ``x`` (shape ``(n_cols,)``)."""
        if name not in self.var_blocks:
            raise KeyError(f"unknown variable block {name!r}; blocks: {list(self.var_blocks)}")
        x = np.asarray(x, dtype=np.float64)
        if x.shape != (self.n_cols,):
            raise ValueError(f"x must have shape ({self.n_cols},), got {x.shape}")
        b = self.var_blocks[name]
        return x[b.start : b.start + b.size].reshape(b.shape)

    # ---------------------------------------------------------------- compiling
    def column_arrays(self):
        """Column data in column order.

        Returns
        -------
        cost, lb, ub : ndarray of float, shape (n_cols,)
        integrality : ndarray of int32, shape (n_cols,)
            1 for integer columns, 0 for continuous ones (HiGHS ``HighsVarType``).
        """
        blocks = list(self.var_blocks.values())
        if not blocks:
            empty = np.zeros(0)
            return empty, empty, empty, np.zeros(0, dtype=np.int32)
        cost = np.concatenate([b.obj for b in blocks])
        lb = np.concatenate([b.lb for b in blocks])
        ub = np.concatenate([b.ub for b in blocks])
        integrality = np.repeat(
            np.array([b.integer for b in blocks], dtype=np.int32), [b.size for b in blocks]
        )
        return cost, lb, ub, integrality

    def row_bounds(self):
        """Row lower and upper bounds, each an array of shape (n_rows,)."""
        blocks = list(self.row_blocks.values())
        if not blocks:
            return np.zeros(0), np.zeros(0)
        return (np.concatenate([b.lb for b in blocks]), np.concatenate([b.ub for b in blocks]))

    def to_csr(self) -> sp.csr_array:
        """The constraint matrix ``A`` as a CSR array of shape (n_rows, n_cols)."""
        blocks = list(self.row_blocks.values())
        indptr = np.zeros(self.n_rows + 1, dtype=np.int64)
        if blocks:
            offsets = np.cumsum([0] + [b.nnz for b in blocks[:-1]])
            indptr[1:] = np.concatenate([b.indptr[1:] + off for b, off in zip(blocks, offsets)])
            indices = np.concatenate([b.indices for b in blocks])
            data = np.concatenate([b.data for b in blocks])
        else:
            indices, data = np.zeros(0, dtype=np.int32), np.zeros(0)
        return sp.csr_array((data, indices, indptr), shape=(self.n_rows, self.n_cols))

    def to_csc(self) -> sp.csc_array:
        """The constraint matrix ``A`` as a CSC array of shape (n_rows, n_cols)."""
        return self.to_csr().tocsc()

    def to_highs(self, verbose: bool = False, names: bool = False):
        """Compile to a :class:`highspy.Highs` model with one ``passModel`` call.

        Parameters
        ----------
        verbose : bool, default=False
            Keep HiGHS's console output on (off otherwise).
        names : bool, default=False
            Also pass column/row names ``block(i,j)`` (a Python loop over columns and
            rows: meant for file export, not for solving large models).

        Returns
        -------
        highspy.Highs
        """
        import highspy

        h = highspy.Highs()
        h.setOptionValue("output_flag", bool(verbose))
        h.setOptionValue("log_to_console", bool(verbose))
        cost, col_lb, col_ub, integrality = self.column_arrays()
        row_lb, row_ub = self.row_bounds()
        csc = self.to_csc()
        status = h.passModel(
            self.n_cols, self.n_rows, int(csc.nnz),
            int(highspy.MatrixFormat.kColwise), int(highspy.ObjSense.kMinimize),
            float(self.objective_offset),
            cost, col_lb, col_ub, row_lb, row_ub,
            csc.indptr.astype(np.int32, copy=False),
            csc.indices.astype(np.int32, copy=False),
            csc.data, integrality,
        )
        del csc
        if status == highspy.HighsStatus.kError:
            raise ValueError(f"HiGHS rejected model {self.name!r} in passModel")
        if names:
            for j, col_name in enumerate(self.column_names()):
                h.passColName(j, col_name)
            for i, row_name in enumerate(self.row_names()):
                h.passRowName(i, row_name)
        return h

    def column_names(self) -> list[str]:
        """Names ``block(i,j,...)`` of all columns in column order (``block`` for scalars)."""
        return [n for b in self.var_blocks.values() for n in _element_names(b.name, b.shape)]

    def row_names(self) -> list[str]:
        """Names ``block(i)`` of all rows in row order."""
        return [n for b in self.row_blocks.values() for n in _element_names(b.name, (b.n_rows,))]

    def write(self, path) -> None:
        """Write the model to ``path`` as ``.lp`` or ``.mps`` (by suffix).

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
                f.write(self._mps_text())
            return
        if suffix != ".lp":
            raise ValueError(f"write() supports .lp and .mps files, got {path!r}")
        import highspy

        h = self.to_highs(names=True)
        if h.writeModel(path) == highspy.HighsStatus.kError:
            raise OSError(f"HiGHS could not write {path!r}")

    def _mps_text(self) -> str:
        col_names, row_names = self.column_names(), self.row_names()
        cost, col_lb, col_ub, integrality = self.column_arrays()
        row_lb, row_ub = self.row_bounds()
        csc = self.to_csc()
        lines = [f"NAME {self.name}", "ROWS", " N  obj"]
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
        if self.objective_offset != 0:
            lines.append(f"    RHS  obj  {-float(self.objective_offset)!r}")
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

    def to_pyomo(self):
        """Emit the model as a :class:`pyomo.environ.ConcreteModel`.

        One indexed ``Var`` per variable block (same name; index = tuples over the block
        shape, ints for 1-d blocks, a scalar ``Var`` for shape ``()``), domain ``Binary``
        for integer blocks within [0, 1], ``Integers`` for other integer blocks,
        ``Reals`` otherwise, with the block's bounds; one indexed ``Constraint`` per row
        block (index ``0 .. n_rows-1``) built as ``LinearExpression`` s from the CSR row
        slices; the objective is ``objective``.  Rows without coefficients are emitted
        as ``Constraint.Feasible``/``Constraint.Infeasible``.

        The Pyomo variables in column order are stored in ``model._optitree_columns``.
        """
        import pyomo.environ as pyo
        from pyomo.common.gc_manager import PauseGC

        with PauseGC():  # millions of small expression objects: the cyclic GC only slows this
            return self._to_pyomo(pyo)

    def _to_pyomo(self, pyo):
        model = pyo.ConcreteModel(name=self.name)
        columns = _add_pyomo_vars(pyo, self, model)

        for b in self.row_blocks.values():
            model.add_component(b.name, _pyomo_constraint(pyo, b, columns))

        cost = self.column_arrays()[0]
        nz = np.flatnonzero(cost)
        model.objective = pyo.Objective(
            expr=_linear_expression(columns, nz, cost[nz], float(self.objective_offset)),
            sense=pyo.minimize,
        )
        return model

    # ---------------------------------------------------------------- helpers
    def _check_new_name(self, name, kind):
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"{kind} block name must be a Python identifier, got {name!r}")
        if name in self.var_blocks or name in self.row_blocks or name == "objective":
            raise ValueError(f"block name {name!r} is already used in model {self.name!r}")


# ---------------------------------------------------------------------- size guard
def estimate_bytes(n_rows: int, n_cols: int, nnz: int) -> int:
    """Peak memory (bytes) to build a :class:`ModelSpec` of this size and hand it to HiGHS.

    A linear model ``32 MiB + 52 B·nnz + 16 B·rows + 40 B·cols`` calibrated with
    ``experiments/bench_compiler.py`` (measurements in this module's comments).  The
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


def check_size(n_rows, n_cols, nnz, budget_bytes=None, hint="") -> None:
    """Refuse a model whose estimated build memory exceeds the budget.

    Parameters
    ----------
    n_rows, n_cols, nnz : int
        Model size (e.g. from a formulation's ``estimate_size()``).
    budget_bytes : int or None
        Memory budget; ``None`` = a quarter of the available memory.
    hint : str
        How to shrink the model (e.g. "use max_thresholds, fewer samples or a lower depth").

    Raises
    ------
    ModelTooLargeError
        When :func:`estimate_bytes` exceeds the budget.
    """
    if budget_bytes is None:
        budget_bytes = available_memory_bytes() // 4
    elif not isinstance(budget_bytes, Integral | float) or budget_bytes <= 0:
        raise ValueError(f"budget_bytes must be a positive number, got {budget_bytes!r}")
    need = estimate_bytes(n_rows, n_cols, nnz)
    if need > budget_bytes:
        advice = hint or "reduce the number of samples, features or thresholds, or the depth"
        raise ModelTooLargeError(
            f"model too large: {n_rows:,} rows, {n_cols:,} columns, {nnz:,} non-zeros need an "
            f"estimated {_format_bytes(need)} to build, over the memory budget of "
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


# ------------------------------------------------------------------ small helpers
def _as_shape(shape) -> tuple[int, ...]:
    if isinstance(shape, Integral):
        shape = (shape,)
    try:
        shape = tuple(shape)
    except TypeError:
        raise TypeError(f"shape must be an int or a tuple of ints, got {shape!r}") from None
    if not all(isinstance(s, Integral) and s >= 0 for s in shape):
        raise ValueError(f"shape must contain non-negative ints, got {shape!r}")
    return tuple(int(s) for s in shape)


def _as_count(n, what) -> int:
    if not isinstance(n, Integral) or n < 0:
        raise ValueError(f"{what} must be a non-negative int, got {n!r}")
    return int(n)


def _as_index_array(a, what, block) -> np.ndarray:
    a = np.asarray(a).ravel()
    if a.size == 0:
        return np.zeros(0, dtype=np.int64)
    if not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"row block {block!r}: {what} must be integers, got dtype {a.dtype}")
    return a.astype(np.int64, copy=False)


def _broadcast_float(value, shape, what) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be numeric, got {value!r:.80}") from None
    try:
        return np.array(np.broadcast_to(arr, shape), dtype=np.float64)
    except ValueError:
        raise ValueError(f"{what} has shape {arr.shape}, not broadcastable to {shape}") from None


def _element_names(name, shape):
    if shape == ():
        return [name]
    return [f"{name}({','.join(map(str, idx))})" for idx in itertools.product(*map(range, shape))]


def _pyomo_domain(pyo, block):
    """Binary for integer blocks within [0, 1], Integers for other integer blocks, else Reals."""
    if block.integer and block.size and block.lb.min() >= 0 and block.ub.max() <= 1:
        return pyo.Binary
    return pyo.Integers if block.integer else pyo.Reals


def _pyomo_var(pyo, block):
    lb = np.where(np.isfinite(block.lb), block.lb, np.nan).tolist()
    ub = np.where(np.isfinite(block.ub), block.ub, np.nan).tolist()
    domain = _pyomo_domain(pyo, block)
    if block.shape == ():
        var = pyo.Var(domain=domain)
        var.construct()
        vars_ = [var]
    else:
        var = pyo.Var(*(range(s) for s in block.shape), domain=domain, dense=True)
        var.construct()
        vars_ = list(var.values())
    for v, lo, hi in zip(vars_, lb, ub):
        v.setlb(None if lo != lo else lo)
        v.setub(None if hi != hi else hi)
    return var


def _add_pyomo_vars(pyo, spec, model) -> list:
    """Add one ``Var`` per variable block of ``spec`` to ``model``; store and return the columns in spec order."""
    columns = []
    for block in spec.var_blocks.values():
        var = _pyomo_var(pyo, block)
        model.add_component(block.name, var)
        columns.extend(var.values())
    model._optitree_columns = columns
    return columns


def _linear_expression(columns, idx, coefs, constant=0.0):
    """``constant + sum_k coefs[k] * columns[idx[k]]`` as a Pyomo ``LinearExpression``."""
    from pyomo.core.expr.numeric_expr import LinearExpression

    return LinearExpression(
        constant=constant, linear_coefs=coefs.tolist(), linear_vars=[columns[j] for j in idx.tolist()]
    )


def _pyomo_constraint(pyo, block, columns):
    indptr, indices, data = block.indptr, block.indices, block.data
    lb = [None if not np.isfinite(v) else float(v) for v in block.lb]
    ub = [None if not np.isfinite(v) else float(v) for v in block.ub]

    def rule(m, i):
        lo, hi = indptr[i], indptr[i + 1]
        if lo == hi:
            feasible = (lb[i] is None or lb[i] <= 0) and (ub[i] is None or ub[i] >= 0)
            return pyo.Constraint.Feasible if feasible else pyo.Constraint.Infeasible
        expr = _linear_expression(columns, indices[lo:hi], data[lo:hi])
        if lb[i] is not None and lb[i] == ub[i]:
            return expr == lb[i]
        return (lb[i], expr, ub[i])

    return pyo.Constraint(range(block.n_rows), rule=rule)
