"""The engine's bounds on the root's split candidates in the MIP: bound rows, screening, decomposition.

A classification MIP over axis-aligned splits (OCT, FlowOCT) optimises the same objective as
:mod:`optitree.exact` — weighted misclassification plus ``alpha`` per split, leaves of at
least ``min_samples_leaf`` rows — over the same or fewer thresholds. So:

* the engine's tree is a feasible start wherever the model accepts it (user constraints are
  checked on its start vector, as for any start);
* the engine's bounds are valid for the MIP under *any* added constraint: constraints and a
  restricted threshold set only raise the optimum. For a root candidate ``c`` with children
  bound ``L(c)`` (:func:`optitree.exact.split_bounds`) every tree splitting the root on ``c``
  costs at least ``alpha + L(c)``, and a root leaf costs ``leaf``. With the objective
  ``cost·x + offset`` and ``x_c`` the root's split columns
  (:meth:`~optitree.formulations.TreeFormulation.root_split_columns`: FlowOCT's ``b[root, q]``
  per threshold; OCT's ``a[root, f]`` per feature, bounded by the least ``alpha + L(c)`` over
  its thresholds and the split that sends every row one way), of which one is 1 unless the
  root is a leaf, the **root bound row** is

  .. math:: \\sum_j cost_j x_j - \\sum_c (\\alpha + L(c) - leaf)\\, x_c \\ge leaf - offset;

* **screening**: a candidate with ``alpha + L(c) >= incumbent`` cannot beat a feasible
  incumbent; its column is fixed to 0 (the incumbent's own root split is kept, so the start
  stays feasible). When every candidate and the leaf are screened, the incumbent is proven
  optimal by the bounds alone and no MIP is solved.

Costs here are the engine's, in the problem's units (:class:`optitree.problem.Units`), the
formulation's model losses: its objective is ``form.model_error_scale`` times them.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .. import exact
from ..solvers.results import finished_result
from ._decomposition import decompose, root_candidates
from ._leaf_rows import LeafRowSearch

__all__ = ["candidate_bounds", "root_bound_row", "child_bound_row", "subtree_mask", "root_bounds",
           "solve_by_decomposition", "solve_by_leaf_rows"]

_TOL = 1e-9


def candidate_bounds(form, bounds, trivial=None):
    """The engine's bound on a tree rooted at each root split column of ``form`` (model units).

    ``form.root_split_columns()`` names the columns: FlowOCT's ``b[root, q]`` per binarized
    feature ``(threshold_feature[q], threshold_value[q])``, matched to the engine candidate of
    the same feature and threshold; OCT's ``a[root, f]`` per feature, whose bound is the least
    over the feature's engine candidates and ``trivial`` (a split sending every row one way:
    ``alpha`` plus the optimum of depth ``D - 1`` on all rows).

    Returns
    -------
    lower : float array (n_columns,)
        ``alpha + L(c)`` (model units), 0 without a match.
    matched, exact : bool arrays (n_columns,)
        Whether the engine has a bound for it, and whether that bound is the optimum.
    leaf : float
        Cost of a root leaf.
    """
    units = form.model_error_scale
    columns, feature, threshold = form.root_split_columns()
    cost = (form.problem.split_cost + bounds.left_bound + bounds.right_bound) * units
    if threshold is None:  # one column per feature, any threshold
        lower = np.full(columns.size, np.inf if trivial is None else float(trivial))
        np.minimum.at(lower, bounds.feature, cost)
        matched = np.isfinite(lower)
        exact_bound = np.ones(columns.size, bool)
        np.logical_and.at(exact_bound, bounds.feature, bounds.exact)
        return np.where(matched, lower, 0.0), matched, exact_bound & matched & (trivial is None), \
            bounds.leaf_cost * units
    lower = np.zeros(columns.size)
    matched = np.zeros(columns.size, bool)
    exact_bound = np.zeros(columns.size, bool)
    key = {(int(f), float(t)): k for k, (f, t) in enumerate(zip(bounds.feature, bounds.threshold))}
    for q, (f, t) in enumerate(zip(feature, threshold)):
        k = key.get((int(f), float(t)))
        if k is not None:
            matched[q], exact_bound[q], lower[q] = True, bounds.exact[k], cost[k]
    return lower, matched, exact_bound, bounds.leaf_cost * units


def root_bound_row(form, spec, bounds, candidates, *, incumbent=None, incumbent_root=None, screening=True,
                   add_row=True) -> dict:
    """Add the root bound row to ``spec`` and screen root candidates (module docstring).

    The root either splits on exactly one of ``form.root_split_columns()`` (``x_c``) or is a
    leaf (FlowOCT: ``Σ_q b[root, q] + p[root] = 1``; OCT: ``Σ_f a[root, f] = d[root]``, and
    ``d[root] = 0`` makes the tree a leaf), so with ``λ_c`` the bound of column ``c`` (0
    without an engine match) the row is

    .. math:: \\sum_j cost_j x_j - \\sum_c (\\lambda_c - leaf)\\, x_c \\ge leaf - offset.

    Parameters
    ----------
    form : FlowOCTFormulation or OCTFormulation
        Built.
    spec : ModelSpec
    bounds : optitree.exact.SplitBounds
        Root bounds in engine units.
    candidates : tuple
        :func:`candidate_bounds` of ``bounds``.
    incumbent : float, optional
        Objective of a feasible incumbent (model units); enables screening.
    incumbent_root : (int, float) or None
        The incumbent's root split ``(feature, threshold)``; its column is never screened.
    screening, add_row : bool
        Which of the two reductions to apply.

    Returns
    -------
    dict
        ``candidates``, ``matched`` (with an engine bound), ``exact``, ``screened``,
        ``bound`` (the least cost of any tree, model units) and ``proves_incumbent``.
    """
    columns, feature, threshold = form.root_split_columns()
    lower, matched, exact_bound, leaf = candidates
    bound = np.where(matched, lower, 0.0)  # a candidate without an engine bound could cost as little as 0
    cost, _, ub, _ = spec.column_arrays()
    open_root = ub[columns] > 0.5  # before screening: screened ones still bound the optimum
    if add_row:
        coef = cost.copy()
        coef[columns] -= bound - leaf
        nz = np.flatnonzero(coef)
        spec.add_rows("root_bound", 1, np.zeros(nz.size, np.intp), nz, coef[nz], leaf - spec.objective_offset,
                      np.inf)
    screened = np.zeros(columns.size, bool)
    if screening and incumbent is not None:
        screened = matched & (lower >= incumbent - _TOL * max(1.0, abs(incumbent)))
        if incumbent_root is not None:
            f, t = incumbent_root
            screened &= ~((feature == f) & (True if threshold is None else threshold == t))
        spec.set_column_bounds(columns[screened], ub=0.0)
    least = min(leaf, float(bound[open_root].min(initial=np.inf)))
    proves = bool(
        incumbent is not None and bounds.complete and matched[open_root].all()
        and least >= incumbent - _TOL * max(1.0, abs(incumbent))
    )
    return {"candidates": int(columns.size), "matched": int(matched.sum()), "exact": int(exact_bound.sum()),
            "screened": int(screened.sum()), "bound": float(least), "proves_incumbent": proves,
            "time": float(bounds.time)}


def subtree_mask(allowed, node, depth):
    """The rows of a heap-ordered node mask ``(2**depth - 1, p)`` for the subtree of heap ``node`` (its heap order)."""
    if allowed is None:
        return None
    rows = []
    for level in range(depth - int(np.log2(node))):
        first = node * 2**level
        rows.extend(range(first - 1, first - 1 + 2**level))
    return allowed[rows]


def child_bound_row(form, data, allowed, root_feature, root_threshold, *, max_distinct_features=None,
                    time_limit=None, callback=None):
    r"""A bound row for the sub-MIP with the root split fixed: the engine's bounds on both children.

    With the root fixed to ``(f, t)``, every tree costs ``alpha`` plus the costs of the two
    child subtrees; the child at heap node ``h`` (2 or 3, sample set ``S_h``) either predicts
    (``p[h] = 1``, cost ``leaf_h``) or splits on one binarized feature ``q`` (``b[h, q] = 1``,
    cost ``\ge alpha + L_h(q)`` by :func:`optitree.exact.split_bounds` on ``S_h``). Hence

    .. math:: \sum_j cost_j x_j + offset - \sum_{h \in \{2,3\}} \Big(\sum_q
              (\alpha + L_h(q))\, b_{hq} + leaf_h\, p_h\Big) \ge \alpha,

    valid under any added constraint. A column ``q`` is matched to the engine candidate of
    the same feature sending the same rows of ``S_h`` left; an unmatched one (a threshold
    that does not split ``S_h``, or a split the engine excludes) gets the child's overall
    bound ``min(leaf_h, min_q (\alpha + L_h(q)))``, which bounds any subtree of the child.
    Under ``max_distinct_features = k`` each child's bounds are those of sub-trees with at
    most ``k`` features (a relaxation: the root's feature is not counted).

    Returns
    -------
    sides : list of two (cols, bounds) pairs, or None
        For each child its columns (``b[h, :]`` then ``p[h]``) and their bounds (model
        units); exactly one column per child is 1. None when a child is empty (the split is
        trivial).
    constant : float
        ``alpha``, the root split's own cost.
    """
    units = form.model_error_scale
    go_left = data.X[:, root_feature] <= root_threshold
    sides = []
    for h, rows in ((2, go_left), (3, ~go_left)):
        if not rows.any():
            return None, form.alpha
        child = form.problem.restricted(subtree_mask(allowed, h, form.depth), max_distinct_features, form.depth - 1)
        bounds = exact.split_bounds(data, problem=child, samples=rows, time_limit=time_limit, callback=callback)
        lower = (child.split_cost + bounds.left_bound + bounds.right_bound) * units
        leaf = bounds.leaf_cost * units
        overall = min(leaf, float(lower.min(initial=np.inf)))
        key = {(int(f), int(n)): k for k, (f, n) in enumerate(zip(bounds.feature, bounds.n_left))}
        n_left = np.empty(form.n_thresholds, np.intp)
        for f in np.unique(form.threshold_feature):
            on = form.threshold_feature == f
            n_left[on] = np.searchsorted(np.sort(data.X[rows, f]), form.threshold_value[on], side="right")
        ks = [key.get((int(f), int(n))) for f, n in zip(form.threshold_feature, n_left)]
        col_bound = np.array([overall if k is None else lower[k] for k in ks])
        split, leaf_column = form.node_choices(h)
        sides.append((np.r_[split, leaf_column].astype(np.intp), np.r_[col_bound, leaf]))
    return sides, form.alpha




def root_bounds(form, spec, stage, data, start_tree, start_objective, *, time_limit, watch):
    """Root bound row and screening (FlowOCT, OCT, ORT), with the engine's bounds within ``time_limit``.

    Returns ``(info, (lower, leaf, bounds))``: :func:`root_bound_row`'s summary, and each root
    column's bound with the root leaf's cost (model units) and the engine's root
    :class:`~optitree.exact.SplitBounds` for the decompositions.
    """
    incumbent = start_objective if "screening" in stage.stages else None
    callback = watch.engine_callback("bounds", form.model_error_scale, values=False)
    with watch.stage("bounds"):
        bounds = stage.root_bounds(data, form.problem, cutoff=incumbent, time_limit=time_limit, callback=callback)
    root = None
    if start_tree is not None and not start_tree.is_leaf[0]:
        root = (int(start_tree.feature[0]), float(start_tree.threshold[0]))
    trivial = None
    if form.root_split_columns()[2] is None:  # a column per feature: its thresholds include "every row one way"
        with watch.stage("bounds"):
            trivial = stage.trivial_split_bound(data, form.problem, bounds, time_limit=time_limit, callback=callback)
    candidates = candidate_bounds(form, bounds, trivial)
    info = root_bound_row(form, spec, bounds, candidates, incumbent=incumbent, incumbent_root=root,
                          screening="screening" in stage.stages,
                          # with an underestimating objective (squared-error ORT) the row would cut off the
                          # returned tree's own solution vector, so its model check would fail
                          add_row="rows" in stage.stages and form.objective_is_exact)
    lower, _, _, leaf = candidates
    return info, (lower, leaf, bounds)


def solve_by_decomposition(form, spec, stage, data, root_lower, start, options, *, solver, watch):
    """Solve ``spec`` by :func:`~optitree.pipeline._decomposition.decompose` (FlowOCT) from ``start``,
    an :class:`~optitree.pipeline._start.Incumbent`.

    Returns ``(result, x)`` as a backend's ``solve``; the start serves as the incumbent (its own
    sub-MIP only looks for better trees), and ``stage.decomposition`` records the candidates
    solved, found infeasible and pruned. Each sub-MIP gets the engine's bounds on its root's
    children (:func:`child_bound_row`).
    """
    columns, bounds = root_candidates(form, spec, *root_lower[:2])
    b_root, _ = form.node_choices(1)
    deadline = None if options.time_limit is None else time.perf_counter() + options.time_limit
    callback = watch.engine_callback("bounds", form.model_error_scale, values=False)

    def children(column):
        q = column - int(b_root[0])
        if form.depth < 2 or not 0 <= q < b_root.size:
            return None, 0.0
        # a tenth of the time left: bounds cut short stay valid, only weaker
        share = None if deadline is None else max(0.1 * (deadline - time.perf_counter()), 1e-3)
        return child_bound_row(form, data, stage.allowed, int(form.threshold_feature[q]),
                               float(form.threshold_value[q]), max_distinct_features=stage.max_distinct_features,
                               time_limit=share, callback=callback)

    result, x, info = decompose(spec, columns, bounds, solver=solver, options=options,
                                incumbent=start.objective,
                                granularity=form.objective_granularity(), children=children,
                                rows_after_solve=form.rows_after_solve,
                                on_event=watch.solver_callback("decomposition"))
    stage.decomposition = info
    stage.times["decompose"] = info["time"]
    if result.proven_optimal:
        stage.certificate = "decomposition"
    result.start_source, result.start_objective = start.source, start.objective
    result.start_accepted = None if start.vector is None else True
    return result, x


def solve_by_leaf_rows(form, spec, stage, rows, bounds, start, options, *, solver, stop=None):
    """Solve depth-2 squared-error ORT under user rows on its leaf values by
    :class:`~optitree.pipeline._leaf_rows.LeafRowSearch` from ``start``, an :class:`~optitree.pipeline._start.Incumbent`.

    The engine's root bounds ``bounds`` (engine units) order the root candidates; the start
    is the incumbent. Returns ``(result, x, bound, objective)``: ``result`` (its ``x`` the best tree's
    start vector, None when the start stays best) when the search proved its tree or was
    stopped by the time limit, ``objective`` the best tree's (model units); ``result`` None when it finished without closing the gap
    (a structure whose bound no encodable tree attains), the caller then solving the MIP from
    ``x`` (or its own start) and raising its bound to ``bound``, valid for every solution.
    ``stage.decomposition`` records the search (:meth:`LeafRowSearch.run`'s info); ``stop``: polled
    by it (Ctrl-C).
    """
    units = form.model_error_scale
    lower = (form.problem.split_cost + bounds.left_bound + bounds.right_bound) * units
    search = LeafRowSearch(form, rows, stage.allowed)
    tree, best, bound, info = search.run(bounds.feature, bounds.threshold, lower,
                                         incumbent=start.objective, time_limit=options.time_limit,
                                         stop=stop)
    x = None if tree is None else form.start_vector(tree)
    stage.decomposition = {**info, "children": "enumerated"}
    stage.times["decompose"] = info["time"]
    proven = info["proven"]
    if info["complete"] and not proven:
        return None, x, bound, best
    if proven:
        stage.certificate = "decomposition"
    result = finished_result(
        termination="optimal" if proven else "time_limit", objective=None if math.isinf(best) else best,
        bound=bound if math.isfinite(bound) else None, options=options, abs_tol=1e-6, nodes=0,
        solve_time=info["time"], trace=[], build_time=0.0, n_rows=spec.n_rows, n_cols=spec.n_cols,
        n_nonzeros=spec.nnz, n_integer=spec.n_integer, solver=solver, versions={}, start_source=start.source,
        start_objective=start.objective, start_accepted=None if start.vector is None else True)
    return result, x, bound, best
