"""Solver-independent MIP description: :class:`ModelSpec`, the model and nothing else.

A formulation describes its model once, as *variable blocks* (named n-d arrays of
columns sharing integrality) and vectorised *row blocks* (sparse coefficient triplets
plus row bounds).  :class:`ModelSpec` validates and stores them as numpy arrays and
hands out column, row and matrix arrays; :func:`solution_violation` checks a vector
against it. Beside it in :mod:`optitree.model`, each in its own module:

* ``_highs.py`` compiles it to :class:`highspy.Highs` (one ``passModel``),
* ``_pyomo.py`` emits it as a Pyomo ``ConcreteModel``,
* ``_files.py`` writes ``.lp``/``.mps`` files,
* ``_memory.py`` refuses models too large to build,
* ``_user_constraints.py`` turns constraints written in Pyomo into a row block.

:meth:`ModelSpec.to_highs`, :meth:`ModelSpec.to_pyomo` and :meth:`ModelSpec.write` are
shortcuts to them (within this package: the model never imports a solver backend). The model is always

.. math::

    \\min_x\\; c^\\top x + c_0 \\quad\\text{s.t.}\\quad r^L \\le A x \\le r^U,\\;
    l \\le x \\le u,\\; x_j \\in \\mathbb{Z}\\ (j \\in \\mathcal{I}).
"""

from __future__ import annotations

import copy
import itertools
import math
from dataclasses import dataclass, field, replace
from numbers import Integral

import numpy as np
import scipy.sparse as sp

__all__ = ["ModelSpec", "VarBlock", "RowBlock", "solution_violation"]

_INT32_MAX = np.iinfo(np.int32).max


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

    def set_column_bounds(self, columns, *, lb=None, ub=None) -> None:
        """Set the bounds of global ``columns`` (int array) in their blocks; None keeps a side.

        ``lb``/``ub``: a number for every column, or an array aligned with ``columns``.
        """
        columns = np.atleast_1d(np.asarray(columns, dtype=np.intp))
        blocks = list(self.var_blocks.values())
        starts = np.array([b.start for b in blocks], dtype=np.intp)
        if columns.size and (columns.min() < 0 or columns.max() >= self.n_cols):
            raise IndexError(f"columns must lie in [0, {self.n_cols}), got {columns.min()}..{columns.max()}")
        owner = np.searchsorted(starts, columns, side="right") - 1
        lb = None if lb is None else np.broadcast_to(np.asarray(lb, dtype=np.float64), columns.shape)
        ub = None if ub is None else np.broadcast_to(np.asarray(ub, dtype=np.float64), columns.shape)
        for k in np.unique(owner):
            mine = owner == k
            local = columns[mine] - blocks[k].start
            if lb is not None:
                blocks[k].lb[local] = lb[mine]
            if ub is not None:
                blocks[k].ub[local] = ub[mine]

    def derived(self) -> "ModelSpec":
        """A copy with its own column bounds that shares this model's row blocks.

        Fixings on the copy (:meth:`set_column_bounds`) and rows added to it stay its own; the
        rows already here are shared, not copied (a sub-MIP of a large model costs no copy).
        """
        sub = copy.copy(self)
        sub.var_blocks = {k: replace(v, lb=v.lb.copy(), ub=v.ub.copy()) for k, v in self.var_blocks.items()}
        sub.row_blocks = dict(self.row_blocks)
        return sub

    # ---------------------------------------------------------------- arrays and shortcuts
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
        """Compile to a :class:`highspy.Highs` model; see :func:`optitree.model.compile_highs`."""
        from ._highs import compile_highs

        return compile_highs(self, verbose=verbose, names=names)

    def column_names(self) -> list[str]:
        """Names ``block(i,j,...)`` of all columns in column order (``block`` for scalars)."""
        return [n for b in self.var_blocks.values() for n in _element_names(b.name, b.shape)]

    def row_names(self) -> list[str]:
        """Names ``block(i)`` of all rows in row order."""
        return [n for b in self.row_blocks.values() for n in _element_names(b.name, (b.n_rows,))]

    def write(self, path) -> None:
        """Write the model to ``path`` as ``.lp`` or ``.mps`` (by suffix); see :func:`optitree.model.write_model`."""
        from ._files import write_model

        write_model(self, path)

    def to_pyomo(self):
        """Emit the model as a :class:`pyomo.environ.ConcreteModel`; see :mod:`optitree.model._pyomo`.

        The Pyomo variables in column order are stored in ``model._optitree_columns``.
        """
        from ._pyomo import to_pyomo

        return to_pyomo(self)

    # ---------------------------------------------------------------- helpers
    def _check_new_name(self, name, kind):
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"{kind} block name must be a Python identifier, got {name!r}")
        if name in self.var_blocks or name in self.row_blocks or name == "objective":
            raise ValueError(f"block name {name!r} is already used in model {self.name!r}")


# ------------------------------------------------------------------ small helpers
def solution_violation(spec, x, tol: float = 1e-6) -> str | None:
    """Why ``x`` is not a feasible solution of ``spec`` (None if it is).

    Checks column bounds, integrality and every row block, with an absolute tolerance
    ``tol`` scaled by ``max(1, |bound|)``; names the first violated block.
    """
    x = np.asarray(x, dtype=np.float64)
    for block in spec.var_blocks.values():
        v = x[block.start: block.start + block.size]
        if (v < block.lb - tol).any() or (v > block.ub + tol).any():
            return f"variable block {block.name!r} out of bounds"
        if block.integer and (np.abs(v - np.round(v)) > tol).any():
            return f"variable block {block.name!r} not integral"
    ax = spec.to_csr() @ x
    for block in spec.row_blocks.values():
        r = ax[block.start: block.start + block.n_rows]
        lo = block.lb - tol * np.maximum(1.0, np.abs(block.lb))
        hi = block.ub + tol * np.maximum(1.0, np.abs(block.ub))
        bad = np.flatnonzero((r < lo) | (r > hi))
        if bad.size:
            return f"row {int(bad[0])} of block {block.name!r} violated"
    return None


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
