"""User extensions written in Pyomo, compiled into a :class:`~optitree.model.ModelSpec`.

The spec's variable blocks are mirrored as Pyomo ``Var`` s (same names and indices,
no constraints); the user adds constraints to the mirror; only those are compiled with
Pyomo's ``LinearStandardFormCompiler`` (column order = spec column order) and appended
to the spec as one row block.  Pyomo is imported lazily, inside the functions.
"""

from __future__ import annotations

import numpy as np

from ._spec import ModelSpec
from ._pyomo import add_pyomo_vars, pyomo_domain

__all__ = ["pyomo_mirror", "apply_user_constraints", "user_rows"]


def pyomo_mirror(spec: ModelSpec):
    """A :class:`pyomo.environ.ConcreteModel` with the spec's variables only.

    Each variable block becomes an indexed ``Var`` of the same name (index = tuples over
    the block shape, ints for 1-d blocks, a scalar ``Var`` for shape ``()``) with the
    block's domain and bounds.  ``model._optitree_columns`` lists the variables in spec
    column order.
    """
    import pyomo.environ as pyo

    if not isinstance(spec, ModelSpec):
        raise TypeError(f"spec must be a ModelSpec, got {type(spec).__name__}")
    model = pyo.ConcreteModel(name=f"{spec.name}_mirror")
    add_pyomo_vars(pyo, spec, model)
    return model


def apply_user_constraints(spec: ModelSpec, constraints) -> int:
    """Add the linear constraints a user writes in Pyomo to ``spec``.

    Parameters
    ----------
    spec : ModelSpec
        The model to extend (modified in place).
    constraints : callable
        ``constraints(model)`` receives the mirror (:func:`pyomo_mirror`) and adds
        ``Constraint`` components (any names, indexed or not, on the model or on
        sub-blocks) over the mirrored variables, e.g.
        ``model.budget = Constraint(expr=sum(model.d[t] for t in range(3)) <= 2)``.
        Fixing a mirrored variable or changing its bounds is compiled into rows too
        (``x == v``, ``lb' <= x <= ub'``); loosening a bound is refused.

    Returns
    -------
    int
        Number of rows appended, as row block ``"user_constraints"`` (``"user_constraints_2"``,
        ... on later calls).  Constraints whose body is constant and satisfied, and
        constraints without bounds, add no row; equality, ranged and one-sided
        constraints add one row each.

    Raises
    ------
    ValueError
        If a constraint is nonlinear, refers to variables that are not in the mirror,
        is trivially infeasible, or if the callable adds an objective, loosens a bound
        or changes a variable's domain.  ``spec`` is unchanged then.
    """
    import pyomo.environ as pyo
    from pyomo.common.errors import (
        InfeasibleConstraintException,
        InvalidConstraintError,
        InvalidExpressionError,
    )
    from pyomo.repn.plugins.standard_form import LinearStandardFormCompiler

    if not callable(constraints):
        raise TypeError(f"constraints must be a callable taking a Pyomo model, got {constraints!r}")
    model = pyomo_mirror(spec)
    columns = model._optitree_columns
    blocks = {name: model.component(name) for name in spec.var_blocks}
    constraints(model)
    replaced = sorted(name for name, block in blocks.items() if model.component(name) is not block)
    if replaced:
        raise ValueError(
            f"the constraints callable replaced the model's variable block(s) {replaced} (e.g. "
            f"model.{replaced[0]} = Constraint(...)); give the constraint a name of its own, e.g. "
            f"model.my_{replaced[0]} = Constraint(...) (the variable blocks are {sorted(spec.var_blocks)})")

    if any(True for _ in model.component_data_objects(pyo.Objective, active=True)):
        raise ValueError("the constraints callable added an objective; only constraints are supported")
    _bound_changes_as_constraints(pyo, model, spec, columns)

    try:
        info = LinearStandardFormCompiler().write(model, mixed_form=True, column_order=columns)
    except (InvalidConstraintError, InvalidExpressionError) as exc:
        raise ValueError(f"user constraints must be linear: {exc}") from None
    except InfeasibleConstraintException as exc:
        raise ValueError(f"user constraints are trivially infeasible: {exc}") from None

    col_of = {id(v): j for j, v in enumerate(columns)}
    unknown = [v.name for v in info.columns if id(v) not in col_of]
    if unknown:
        raise ValueError(
            f"user constraints refer to variables that are not in the model: {unknown[:5]}"
            f"{' ...' if len(unknown) > 5 else ''} (declare new variables as variable blocks "
            "of the formulation instead)"
        )
    n_rows = len(info.rows)
    if n_rows == 0:
        return 0

    # mixed_form rows: bound_type 0 is "== rhs", 1 is "<= rhs", -1 is ">= rhs"; a ranged
    # constraint yields a "<=" row immediately followed by a ">=" row of the same constraint.
    bound_type = np.fromiter((r.bound_type for r in info.rows), dtype=np.int8, count=n_rows)
    con_id = np.fromiter((id(r.constraint) for r in info.rows), dtype=np.int64, count=n_rows)
    rhs = np.asarray(info.rhs, dtype=np.float64)
    lb = np.where(bound_type == 1, -np.inf, rhs)
    ub = np.where(bound_type == -1, np.inf, rhs)
    second_of_range = np.zeros(n_rows, dtype=bool)
    second_of_range[1:] = (con_id[1:] == con_id[:-1]) & (bound_type[1:] == -1) & (bound_type[:-1] == 1)
    first_of_range = np.flatnonzero(second_of_range) - 1
    lb[first_of_range] = lb[first_of_range + 1]
    keep = ~second_of_range
    new_row = np.cumsum(keep) - 1

    coo = info.A.tocoo()
    spec_col = np.fromiter((col_of[id(v)] for v in info.columns), dtype=np.int64, count=len(info.columns))
    entry_kept = keep[coo.row]
    name = _free_block_name(spec, "user_constraints")
    spec.add_rows(
        name,
        int(keep.sum()),
        rows=new_row[coo.row[entry_kept]],
        cols=spec_col[coo.col[entry_kept]],
        vals=coo.data[entry_kept],
        lb=lb[keep],
        ub=ub[keep],
    )
    return int(keep.sum())


def _bound_changes_as_constraints(pyo, model, spec, columns):
    """Turn fixes and bound changes on mirrored variables into constraints on the model.

    Fixed variables are unfixed (the standard-form compiler would otherwise substitute
    them) and constrained to their value; changed bounds become ``lb' <= x <= ub'``.
    """
    _, spec_lb, spec_ub, _ = spec.column_arrays()
    for block in spec.var_blocks.values():
        expected = pyomo_domain(pyo, block)
        if any(v.domain is not expected for v in model.component(block.name).values()):
            raise ValueError(f"the constraints callable changed the domain of variables {block.name!r}")
    fixed = np.fromiter((v.fixed for v in columns), dtype=bool, count=len(columns))
    lb = np.array([-np.inf if v.lb is None else v.lb for v in columns], dtype=np.float64)
    ub = np.array([np.inf if v.ub is None else v.ub for v in columns], dtype=np.float64)
    values = np.array([np.nan if v.value is None else v.value for v in columns], dtype=np.float64)
    for j in np.flatnonzero(fixed):
        if np.isnan(values[j]):
            raise ValueError(f"variable {columns[j].name} is fixed without a value")
        columns[j].unfix()
    loosened = np.flatnonzero(~fixed & ((lb < spec_lb) | (ub > spec_ub)))
    if loosened.size:
        raise ValueError(
            f"the constraints callable loosens the bounds of {columns[loosened[0]].name}; "
            "bounds can only be tightened"
        )
    lb = np.where(fixed, values, lb)
    ub = np.where(fixed, values, ub)
    changed = np.flatnonzero(fixed | (lb != spec_lb) | (ub != spec_ub))
    if changed.size == 0:
        return
    new_lb = {int(j): (None if lb[j] == -np.inf else float(lb[j])) for j in changed}
    new_ub = {int(j): (None if ub[j] == np.inf else float(ub[j])) for j in changed}
    for j in changed:  # restore the spec bounds: the rows carry the change
        columns[j].setlb(None if spec_lb[j] == -np.inf else float(spec_lb[j]))
        columns[j].setub(None if spec_ub[j] == np.inf else float(spec_ub[j]))

    def rule(m, j):
        if new_lb[j] is not None and new_lb[j] == new_ub[j]:
            return columns[j] == new_lb[j]
        return (new_lb[j], columns[j], new_ub[j])

    model.add_component("_optitree_bound_changes", pyo.Constraint(changed.tolist(), rule=rule))


def _free_block_name(spec, base):
    name, k = base, 1
    while name in spec.row_blocks or name in spec.var_blocks:
        k += 1
        name = f"{base}_{k}"
    return name


def user_rows(spec: ModelSpec):
    """The user's rows (every block :func:`apply_user_constraints` appended) as one matrix, or None.

    Returns ``(A, lb, ub)``: ``A`` a ``scipy.sparse`` CSR array of shape ``(R, spec.n_cols)``
    (global columns), ``lb``/``ub`` its row bounds; None when the spec has no user rows.
    """
    import scipy.sparse as sp

    blocks = [b for name, b in spec.row_blocks.items() if name.startswith("user_constraints")]
    if not blocks:
        return None
    A = sp.vstack([sp.csr_array((b.data, b.indices, b.indptr), shape=(b.n_rows, spec.n_cols))
                   for b in blocks]).tocsr()
    return A, np.concatenate([b.lb for b in blocks]), np.concatenate([b.ub for b in blocks])
