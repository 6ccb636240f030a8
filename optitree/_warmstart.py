"""Warm starts for the tree formulations: where start trees come from and how they are checked.

A start is a :class:`greedy.Tree`: greedy CART of the same depth (``init="cart"``), a
tree of smaller depth (e.g. the previous depth's optimum), or any tree or fitted tree
estimator the user passes. The formulation makes it canonical on the training data and
encodes it as a complete solution vector (:meth:`TreeFormulation.start_vector`); that
vector is checked against every row of the model — user constraints included — before
its discrete part is handed to the solver. A start that violates the user's rows can be
*repaired* (:func:`repair_start`): its splits kept, the rest re-chosen by a small MIP.
"""

from __future__ import annotations

import numpy as np

from greedy import Tree

__all__ = ["tree_from_init", "solution_violation", "tree_violation", "repair_start"]


def tree_from_init(
    init, n_features: int, max_depth: int, *, task: str = "classification", previous_depth_class=None,
) -> tuple[Tree, str]:
    """The start tree described by ``init`` (not ``"cart"``/None) and its source label.

    Parameters
    ----------
    init : greedy.Tree or fitted estimator
        A tree, or a fitted estimator whose ``tree_`` is a :class:`greedy.Tree` or a
        scikit-learn tree (``DecisionTreeClassifier`` / ``DecisionTreeRegressor``).
    n_features, max_depth : int
        What the tree must fit.
    task : {"classification", "regression"}, default="classification"
        The task the tree must have.
    previous_depth_class : type or None
        Estimator class whose fitted instances of smaller depth are labelled
        "previous-depth" (the calling optimal tree estimator's class).

    Returns
    -------
    tree : greedy.Tree
    source : {"user", "previous-depth"}
    """
    source = "user"
    if isinstance(init, Tree):
        tree = init
    elif hasattr(init, "fit") and hasattr(init, "predict"):
        fitted = getattr(init, "tree_", None)
        if fitted is None:
            raise ValueError(f"init estimator {type(init).__name__} is not fitted (it has no tree_)")
        tree = fitted if isinstance(fitted, Tree) else Tree.from_sklearn(init)
        if previous_depth_class is not None and isinstance(init, previous_depth_class) and tree.max_depth < max_depth:
            source = "previous-depth"
    else:
        raise TypeError(
            "init must be 'cart', None, a greedy.Tree or a fitted tree estimator, "
            f"got {type(init).__name__}"
        )
    if tree.task != task:
        raise ValueError(f"init must be a {task} tree")
    if tree.n_features != n_features:
        raise ValueError(f"init tree has {tree.n_features} features, X has {n_features}")
    if tree.max_depth > max_depth:
        raise ValueError(f"init tree has depth {tree.max_depth} > max_depth={max_depth}")
    return tree, source


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


def tree_violation(form, spec, tree) -> str | None:
    """Why ``tree`` (canonical, or decoded) is no solution of ``spec``, or None: its start vector checked."""
    from .formulations import InfeasibleStartError

    try:
        return solution_violation(spec, form.start_vector(tree))
    except InfeasibleStartError as exc:
        return str(exc)


def repair_start(form, spec, tree, *, solver, options):
    """The best tree with some of ``tree``'s splits that is a solution of ``spec``, or None.

    The columns that choose each node's split feature
    (:meth:`~optitree.formulations.TreeFormulation.split_columns`) get the upper bound of
    their value in ``tree``'s start vector: a node keeps its split or becomes a leaf (or
    passes through). A MIP over the rest (those choices, labels, OCT's thresholds) finds the
    best solution that meets every row, e.g. a class quota that the start's majority labels,
    or its number of leaves, break. Its decoded tree is checked against ``spec`` before it is
    returned.

    Parameters
    ----------
    form : TreeFormulation
        Built; ``spec`` is its model (user rows included).
    tree : greedy.Tree
        A start tree (any feasibility); canonicalised here but not pruned (a split that
        gains nothing may give the leaf a quota needs).
    solver : str
        The estimator's ``solver``.
    options : SolveOptions
        For the repair MIP (its ``time_limit`` is the repair's budget).

    Returns
    -------
    greedy.Tree or None
        None when the start cannot be encoded, or no solution within its splits was found.
    """
    from .formulations import InfeasibleStartError
    from .solvers import make_backend

    try:
        x0 = form.start_vector(form.prepare_start(tree, prune=False)[0])
    except InfeasibleStartError:
        return None
    columns = form.split_columns()[0]
    sub = spec.derived()
    sub.set_column_bounds(columns, ub=x0[columns])
    _, x = make_backend(solver, sub).solve(options)
    if x is None:
        return None
    repaired = form.decode(spec, x)  # a solution of `sub` is one of `spec`
    return repaired if tree_violation(form, spec, repaired) is None else None
