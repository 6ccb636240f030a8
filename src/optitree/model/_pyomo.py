"""Pyomo emission of a :class:`~optitree.model.ModelSpec` (Pyomo is imported by the callers, lazily).

One indexed ``Var`` per variable block (same name; index = tuples over the block shape,
ints for 1-d blocks, a scalar ``Var`` for shape ``()``), domain ``Binary`` for integer
blocks within [0, 1], ``Integers`` for other integer blocks, ``Reals`` otherwise, with
the block's bounds; one indexed ``Constraint`` per row block (index ``0 .. n_rows-1``)
built as ``LinearExpression`` s from the CSR row slices; the objective is ``objective``.
Rows without coefficients are emitted as ``Constraint.Feasible``/``Constraint.Infeasible``.
The Pyomo variables in column order are stored in ``model._optitree_columns``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["to_pyomo", "add_pyomo_vars", "pyomo_domain", "pyomo_constraint"]


def to_pyomo(spec):
    """Emit ``spec`` as a :class:`pyomo.environ.ConcreteModel` (see the module docstring)."""
    import pyomo.environ as pyo
    from pyomo.common.gc_manager import PauseGC

    with PauseGC():  # millions of small expression objects: the cyclic GC only slows this
        model = pyo.ConcreteModel(name=spec.name)
        columns = add_pyomo_vars(pyo, spec, model)
        for b in spec.row_blocks.values():
            model.add_component(b.name, pyomo_constraint(pyo, b, columns))
        cost = spec.column_arrays()[0]
        nz = np.flatnonzero(cost)
        model.objective = pyo.Objective(
            expr=_linear_expression(columns, nz, cost[nz], float(spec.objective_offset)),
            sense=pyo.minimize,
        )
    return model


def pyomo_domain(pyo, block):
    """Binary for integer blocks within [0, 1], Integers for other integer blocks, else Reals."""
    if block.integer and block.size and block.lb.min() >= 0 and block.ub.max() <= 1:
        return pyo.Binary
    return pyo.Integers if block.integer else pyo.Reals


def add_pyomo_vars(pyo, spec, model) -> list:
    """Add one ``Var`` per variable block of ``spec`` to ``model``; store and return the columns in spec order."""
    columns = []
    for block in spec.var_blocks.values():
        var = _pyomo_var(pyo, block)
        model.add_component(block.name, var)
        columns.extend(var.values())
    model._optitree_columns = columns
    return columns


def pyomo_constraint(pyo, block, columns):
    """The indexed ``Constraint`` of a :class:`~optitree.model.RowBlock` over ``columns`` (spec order)."""
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


def _pyomo_var(pyo, block):
    lb = np.where(np.isfinite(block.lb), block.lb, np.nan).tolist()
    ub = np.where(np.isfinite(block.ub), block.ub, np.nan).tolist()
    domain = pyomo_domain(pyo, block)
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


def _linear_expression(columns, idx, coefs, constant=0.0):
    """``constant + sum_k coefs[k] * columns[idx[k]]`` as a Pyomo ``LinearExpression``."""
    from pyomo.core.expr.numeric_expr import LinearExpression

    return LinearExpression(
        constant=constant, linear_coefs=coefs.tolist(), linear_vars=[columns[j] for j in idx.tolist()]
    )
