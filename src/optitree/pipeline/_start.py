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

from dataclasses import dataclass, replace

from greedy import Tree

from ..formulations import InfeasibleStartError
from ..model import solution_violation
from ..solvers import make_backend

__all__ = ["Incumbent", "tree_from_init", "tree_violation", "repair_start", "encode_start", "better_start",
           "repaired_start"]


@dataclass(frozen=True)
class Incumbent:
    """The best tree a fit holds before its solve, as the stages pass it on.

    Attributes
    ----------
    tree : greedy.Tree or None
        Canonical on the training data; None: no start.
    vector : dict or None
        The tree as the solver's start (``{column: value}``); None when the model cannot take it.
    source : str or None
        Where it came from (``"cart"``, ``"user"``, ``"exact"``, ``"heuristic"``, ``"repaired ..."``);
        set even when the start was refused, so the result can say whose it was.
    objective : float or None
        The tree's objective (model units, :meth:`~optitree.formulations.TreeFormulation.objective_of_tree`).
    """

    tree: Tree | None = None
    vector: dict | None = None
    source: str | None = None
    objective: float | None = None

    @classmethod
    def of(cls, form, tree, vector, source) -> "Incumbent":
        return cls(tree, vector, source, None if tree is None else form.objective_of_tree(tree))


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


def tree_violation(form, spec, tree) -> str | None:
    """Why ``tree`` (canonical, or decoded) is no solution of ``spec``, or None: its start vector checked."""
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


def encode_start(form, spec, given) -> tuple[Incumbent, list[str]]:
    """The start ``given`` = (tree, source) as the solver receives it, and notes.

    The tree is made canonical on the training data and encoded; a start the formulation
    cannot encode or that violates the model gives an incumbent without tree (its source
    kept), the reason in the notes.
    """
    notes: list[str] = []
    tree, source = given
    if tree is None:
        return Incumbent(), notes
    tree, note = form.prepare_start(tree)
    if note:
        notes.append(f"start: {note}")
    try:
        x0 = form.start_vector(tree)
    except InfeasibleStartError as exc:
        notes.append(f"start not used: {exc}")
        return Incumbent(source=source), notes
    why = solution_violation(spec, x0)
    if why is not None:
        notes.append(f"start not used: it violates the model ({why})")
        return Incumbent(source=source), notes
    return Incumbent.of(form, tree, form.solver_start(x0), source), notes


def better_start(form, spec, current: Incumbent, candidate, notes, source="exact") -> Incumbent:
    """``current`` or ``candidate`` (a tree from ``source``: the engine's, a heuristic's), whichever feasible
    one is better."""
    what = "engine" if source == "exact" else source
    tree, note = form.prepare_start(candidate)
    try:
        x0 = form.start_vector(tree)
    except InfeasibleStartError as exc:
        notes.append(f"{what} start not used: {exc}")
        return current
    why = solution_violation(spec, x0)
    if why is not None:
        notes.append(f"{what} start not used: it violates the model ({why})")
        return current
    challenger = Incumbent.of(form, tree, None, source)
    if current.tree is not None and current.objective <= challenger.objective:
        return current
    if note:
        notes.append(f"{what} start: {note}")
    return replace(challenger, vector=form.solver_start(x0))


def repaired_start(form, spec, candidates, current: Incumbent, options, notes, *, solver) -> Incumbent:
    """The best of ``candidates`` (tree, source) repaired to a solution of ``spec``, else ``current``.

    Each repair (:func:`repair_start`: some of the tree's splits, labels re-chosen by a MIP)
    gets 5 % of the time limit; the source becomes ``"repaired <source>"``.
    """
    share = None if options.time_limit is None else 0.05 * options.time_limit
    repair_options = replace(options, time_limit=share, verbose=False)
    best = None
    for tree, source in candidates:
        if tree is None:
            continue
        repaired = repair_start(form, spec, tree, solver=solver, options=repair_options)
        if repaired is None:
            continue
        challenger = Incumbent.of(form, repaired, None, f"repaired {source}")
        if best is None or challenger.objective < best.objective:
            best = challenger
    if best is None:
        return current
    notes.append(f"start: {best.source} (within its splits, the rest re-chosen to meet the model; "
                 f"objective {best.objective:.10g})")
    return replace(best, vector=form.solver_start(form.start_vector(best.tree)))
