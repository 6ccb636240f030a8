"""Warm starts for the tree formulations: where start trees come from and how they are checked.

A start is a :class:`greedy.Tree`: greedy CART of the same depth (``init="cart"``), a
tree of smaller depth (e.g. the previous depth's optimum), or any tree or fitted tree
estimator the user passes. The formulation makes it canonical on the training data and
encodes it as a complete solution vector (:meth:`TreeFormulation.start_vector`); that
vector is checked against every row of the model — user constraints included — before
its discrete part is handed to the solver.
"""

from __future__ import annotations

import numpy as np

from greedy import Tree

__all__ = ["tree_from_init", "solution_violation"]


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
