"""The exact sub-tree engine inside the MIP pipeline: optimal starts, bound rows, screening, proofs.

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

Costs here are in the engine's units: the loss with the weights of the data given to the
estimator and, for regression, the targets in the model's units (:func:`engine_targets`), so
that no user-unit loss (e.g. a squared error of targets near 1e-300) under- or overflows; the
formulation's objective is :func:`model_units` times them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from . import exact
from ._certificate import verify_certificate
from ._warmstart import repair_start, solution_violation
from .formulations import InfeasibleStartError
from .formulations._heap import PASS_THROUGH, to_heap
from .solvers import SolveResult, relative_gap

__all__ = ["STAGES", "parse_acceleration", "ExactStage", "ExactStageMixin", "model_units", "engine_targets",
           "candidate_bounds",
           "root_bound_row", "restrict_features"]

#: Stages of the acceleration, each can be switched off (``acceleration="start+rows"`` ...).
STAGES = ("start", "proof", "rows", "screening", "decompose")

_TOL = 1e-9


def parse_acceleration(value) -> frozenset:
    """The set of enabled stages from ``acceleration``: ``"all"``, ``"none"`` or ``"+"``-joined stage names."""
    if value == "all":
        return frozenset(STAGES)
    if value == "none":
        return frozenset()
    if isinstance(value, str):
        parts = [p.strip() for p in value.split("+") if p.strip()]
        unknown = sorted(set(parts) - set(STAGES))
        if parts and not unknown:
            return frozenset(parts)
    raise ValueError(
        f"acceleration must be 'all', 'none' or stages joined by '+' from {STAGES} "
        f"(e.g. 'start+rows'), got {value!r}"
    )


def model_units(form) -> float:
    """Formulation objective per unit of engine cost (:func:`engine_targets`).

    Classification: per unit of misclassified weight (``form.error_scale``). Regression: per
    unit of loss of the model-unit targets ``(y - centre) * target_scale`` at the user's
    weights, ``form.error_scale / target_unit``, finite whatever the targets' magnitude.
    """
    return float(form.model_error_scale * form.weight_scale)


def engine_targets(form, y) -> np.ndarray:
    """``y`` as the engine sees it: class codes, or regression targets in the model's units."""
    return form.task.to_model_units(y) if form.task.name == "regression" else y


@dataclass
class ExactStage:
    """What the engine contributed to one fit (stored in ``result_.acceleration``).

    Attributes
    ----------
    stages : frozenset of str
        Enabled stages.
    allowed : bool ndarray (2**depth - 1, n_features) or None
        Features allowed at each branch node (heap order), honoured by the engine.
    engine : dict or None
        The engine's solve: status, objective and bound (model units), time (s).
    bounds : dict or None
        Root bounds: candidates, exact ones, candidates screened, bound (model units), time.
    implied : dict or None
        Node-feature pairs the user rows forbid, added to ``allowed`` (:meth:`ExactStageMixin._implied_restrictions`).
    decomposition : dict or None
        Root-split decomposition (:mod:`optitree._decomposition`): candidates, sub-MIPs
        solved, candidates infeasible by the activity test, pruned by their bound, time.
    max_distinct_features : int or None
        The limit on distinct split features, when the engine honours it.
    sees_all : bool
        The engine honours every restriction of the model (no user rows, the feature limit
        enumerable): its proof is the fit's certificate, with no MIP.
    lower_bounds : bool
        The engine's optima bound the model's from below (False for linear leaves, which
        the engine's constant leaves do not cover: its tree is then a start only).
    certificate : str or None
        ``"engine"`` (the engine proved the tree optimal: no MIP) or ``"bounds"`` (the root
        bounds proved the incumbent optimal: no MIP), else None.
    """

    stages: frozenset
    allowed: np.ndarray | None = None
    max_distinct_features: int | None = None
    sees_all: bool = True
    lower_bounds: bool = True
    engine: dict | None = None
    bounds: dict | None = None
    decomposition: dict | None = None
    implied: dict | None = None
    certificate: str | None = None
    times: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"stages": sorted(self.stages), "engine": self.engine, "bounds": self.bounds,
                "decomposition": self.decomposition, "implied": self.implied, "certificate": self.certificate,
                "times": self.times}

    def admits(self, tree) -> bool:
        """Whether ``tree`` splits only on allowed features, on at most ``max_distinct_features`` of them."""
        heap = to_heap(tree, None if self.allowed is None else int(np.log2(self.allowed.shape[0] + 1)))
        split = np.flatnonzero(heap.feature != PASS_THROUGH)
        if self.allowed is not None and not self.allowed[split, heap.feature[split]].all():
            return False
        k = self.max_distinct_features
        return k is None or np.unique(heap.feature[split]).size <= k

    # ------------------------------------------------------------------ engine solve
    def solve(self, data, form, *, max_depth, min_samples_leaf, time_limit, callback=None, threads=1):
        """Run the engine on ``data`` (an :class:`optitree.exact.ExactData`); returns its result.

        ``callback``: :func:`optitree.exact.solve`'s (progress in engine units; True stops it);
        ``threads``: its root search's threads.
        """
        units = model_units(form)
        t0 = time.perf_counter()
        result = exact.solve(data, max_depth=max_depth, alpha=form.alpha / units, allowed_features=self.allowed,
                             max_distinct_features=self.max_distinct_features, min_samples_leaf=min_samples_leaf,
                             time_limit=time_limit, callback=callback, threads=threads)
        self.times["engine"] = time.perf_counter() - t0
        self.engine = {"status": result.status, "objective": result.objective * units,
                       "bound": result.bound * units, "time": self.times["engine"]}
        return result

    # ------------------------------------------------------------------ root bounds
    def trivial_split_bound(self, data, form, bounds, *, depth, min_samples_leaf, time_limit, callback=None):
        """A lower bound (model units) on a tree whose root split sends every row one way.

        Such a tree costs ``alpha`` plus a sub-tree of depth ``depth - 1`` on all rows: at
        least the engine's bound on that optimum (without the feature restrictions: a
        relaxation), or the leaf cost of ``bounds`` at depth 1.
        """
        units = model_units(form)
        below = bounds.leaf_cost
        if depth > 1:
            below = exact.solve(data, max_depth=depth - 1, alpha=form.alpha / units,
                                min_samples_leaf=min_samples_leaf, time_limit=time_limit, callback=callback).bound
        return (form.alpha / units + below) * units

    def root_bounds(self, data, form, *, depth, min_samples_leaf, cutoff, time_limit, callback=None):
        """:func:`optitree.exact.split_bounds` of the root; ``cutoff`` in model units (or None)."""
        units = model_units(form)
        t0 = time.perf_counter()
        bounds = exact.split_bounds(
            data, depth=depth, alpha=form.alpha / units, min_samples_leaf=min_samples_leaf,
            allowed_features=self.allowed, max_distinct_features=self.max_distinct_features,
            cutoff=None if cutoff is None else cutoff / units, time_limit=time_limit, callback=callback,
        )
        self.times["bounds"] = time.perf_counter() - t0
        return bounds


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
    units = model_units(form)
    columns, feature, threshold = form.root_split_columns()
    cost = (form.alpha / units + bounds.left_bound + bounds.right_bound) * units
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
    units = model_units(form)
    b = np.asarray(form.vars["b"])
    p = np.asarray(form.vars["p"])
    go_left = data.X[:, root_feature] <= root_threshold
    sides = []
    for h, rows in ((2, go_left), (3, ~go_left)):
        if not rows.any():
            return None, form.alpha
        sub = subtree_mask(allowed, h, form.depth)
        bounds = exact.split_bounds(data, depth=form.depth - 1, samples=rows, alpha=form.alpha / units,
                                    min_samples_leaf=form.min_samples_leaf, allowed_features=sub,
                                    max_distinct_features=max_distinct_features, time_limit=time_limit,
                                    callback=callback)
        lower = (form.alpha / units + bounds.left_bound + bounds.right_bound) * units
        leaf = bounds.leaf_cost * units
        overall = min(leaf, float(lower.min(initial=np.inf)))
        key = {(int(f), int(n)): k for k, (f, n) in enumerate(zip(bounds.feature, bounds.n_left))}
        n_left = np.empty(form.n_thresholds, np.intp)
        for f in np.unique(form.threshold_feature):
            on = form.threshold_feature == f
            n_left[on] = np.searchsorted(np.sort(data.X[rows, f]), form.threshold_value[on], side="right")
        ks = [key.get((int(f), int(n))) for f, n in zip(form.threshold_feature, n_left)]
        col_bound = np.array([overall if k is None else lower[k] for k in ks])
        sides.append((np.r_[b[h - 1], p[h - 1]].astype(np.intp), np.r_[col_bound, leaf]))
    return sides, form.alpha


def restrict_features(form, spec, allowed) -> int:
    """Fix to 0 every split column of a feature not allowed at its node; returns how many.

    ``allowed`` is a bool mask ``(2**depth - 1, n_features)`` over branch nodes in heap order
    (row ``n - 1`` for node ``n``), the layout of the split blocks: FlowOCT's ``b``/``b_cum``
    ``(B, F_b)`` over binarized features, OCT's ``a`` ``(B, F)``.
    """
    if form.name == "flow":
        banned = ~allowed[:, form.threshold_feature]
        blocks = ("b", "b_cum")
    elif form.name == "oct":
        banned = ~allowed
        blocks = ("a",)
    else:
        raise ValueError(f"allowed_features applies to formulation 'flow' or 'oct', got {form.name!r}")
    for name in blocks:
        spec.var_blocks[name].ub[banned.ravel()] = 0.0
    return int(banned.sum())


class ExactStageMixin:
    """The engine's part of an optimal estimator's fit: its start, its root bounds, its certificates.

    ``_OptimalTreeBase._solve`` calls these hooks; an estimator enables the engine by returning an
    :class:`ExactStage` from :meth:`_exact_stage` (the classifier does, for axis-aligned splits).
    """

    #: The engine's loss for this estimator's task (:func:`optitree.exact.prepare`).
    _engine_loss = "misclassification"

    def _exact_stage(self, form):
        """The :class:`~optitree._acceleration.ExactStage` of this fit, or None (no engine)."""
        return None

    def _parse_allowed_features(self, n_features: int) -> None:
        """``self._allowed``: ``allowed_features`` as one mask per branch node (heap order), or None."""
        self._allowed = None
        if self.allowed_features is not None:
            try:
                self._allowed = exact.check_allowed(np.asarray(self.allowed_features), int(self.max_depth), n_features)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"allowed_features: {exc}") from None

    def _engine_stage(self, form, *, start_only: bool = False):
        """The stage of an estimator with ``acceleration``, ``allowed_features`` and ``max_distinct_features``.

        ``solver="dp"``: the engine is the whole solve. ``start_only`` (a model the engine's
        trees do not cover, e.g. hyperplanes or linear leaves): its tree is a start, its bounds
        no bounds. Otherwise every enabled stage; its proof certifies the fit when it sees every
        restriction (no user rows, the feature limit enumerable).
        """
        k = self.max_distinct_features
        honoured = k is None or exact.honours_distinct_features(form.X_train, self._allowed, int(self.max_depth), k)
        if self.solver == "dp":
            if not honoured:
                raise ValueError(f"solver='dp': max_distinct_features={k} needs more feature subsets than the "
                                 f"engine enumerates ({exact.MAX_SUBSETS}); use a MIP solver")
            return ExactStage(frozenset({"proof"}), allowed=self._allowed, max_distinct_features=k)
        stages = self._stages & {"start"} if start_only else self._stages
        if not stages:
            return None
        return ExactStage(stages, allowed=self._allowed, max_distinct_features=k if honoured else None,
                          sees_all=not start_only and self.constraints is None and honoured,
                          lower_bounds=not start_only)

    def _better_start(self, form, spec, current, engine_tree, notes):
        """``current`` (tree, solver start, source) or the engine's tree, whichever feasible one is better."""
        tree, note = form.prepare_start(engine_tree)
        try:
            x0 = form.start_vector(tree)
        except InfeasibleStartError as exc:
            notes.append(f"engine start not used: {exc}")
            return current
        why = solution_violation(spec, x0)
        if why is not None:
            notes.append(f"engine start not used: it violates the model ({why})")
            return current
        if current[0] is not None and form.objective_of_tree(current[0]) <= form.objective_of_tree(tree):
            return current
        if note:
            notes.append(f"engine start: {note}")
        return tree, form.solver_start(x0), "exact"

    def _repaired_start(self, form, spec, candidates, current, options, notes):
        """The best of ``candidates`` (tree, source) repaired to a solution of ``spec``, else ``current``.

        Each repair (:func:`~optitree._warmstart.repair_start`: some of the tree's splits, labels
        re-chosen by a MIP) gets 5 % of the time limit; the source becomes ``"repaired <source>"``.
        """
        share = None if options.time_limit is None else 0.05 * options.time_limit
        repair_options = replace(options, time_limit=share, verbose=False)
        best = current
        best_objective = None
        for tree, source in candidates:
            if tree is None:
                continue
            repaired = repair_start(form, spec, tree, solver=self.solver, options=repair_options)
            if repaired is None:
                continue
            objective = form.objective_of_tree(repaired)
            if best_objective is None or objective < best_objective:
                best_objective = objective
                best = (repaired, form.solver_start(form.start_vector(repaired)), f"repaired {source}")
        if best_objective is not None:
            notes.append(f"start: {best[2]} (within its splits, the rest re-chosen to meet the model; "
                         f"objective {best_objective:.10g})")
        return best

    def _root_bounds(self, form, spec, stage, data, start_tree, start_objective, options, fit_start):
        """Root bound row and screening (FlowOCT, OCT), with the engine's bounds under the remaining budget."""
        share = None
        if options.time_limit is not None:
            share = max(0.25 * (options.time_limit - (time.perf_counter() - fit_start)), 0.01 * options.time_limit)
        incumbent = start_objective if "screening" in stage.stages else None
        depth, min_leaf = int(self.max_depth), int(self.min_samples_leaf)
        watch = self._watch
        callback = watch.engine_callback("bounds", model_units(form), values=False)
        with watch.stage("bounds"):
            bounds = stage.root_bounds(data, form, depth=depth, min_samples_leaf=min_leaf, cutoff=incumbent,
                                       time_limit=share, callback=callback)
        root = None
        if start_tree is not None and not start_tree.is_leaf[0]:
            root = (int(start_tree.feature[0]), float(start_tree.threshold[0]))
        trivial = None
        if form.root_split_columns()[2] is None:  # a column per feature: its thresholds include "every row one way"
            with watch.stage("bounds"):
                trivial = stage.trivial_split_bound(data, form, bounds, depth=depth, min_samples_leaf=min_leaf,
                                                    time_limit=share, callback=callback)
        candidates = candidate_bounds(form, bounds, trivial)
        info = root_bound_row(form, spec, bounds, candidates, incumbent=incumbent, incumbent_root=root,
                              screening="screening" in stage.stages,
                              # with an underestimating objective (squared-error ORT) the row would cut off the
                              # returned tree's own solution vector, so its model check would fail
                              add_row="rows" in stage.stages and form.objective_is_exact)
        lower, _, _, leaf = candidates
        return info, (lower, leaf)

    def _implied_restrictions(self, form, spec, stage):
        """Narrow ``stage.allowed`` to the splits the user rows leave possible (FlowOCT, OCT, ORT).

        Feature ``f`` is dropped at node ``n`` when every split column of ``n`` on ``f``
        (:meth:`~optitree.formulations.TreeFormulation.split_groups`: FlowOCT's ``b[n, (f, ·)]``,
        OCT's ``a[n, f]``) is fixed to 0 or cannot be 1 by
        :func:`optitree._decomposition.infeasible_fixings`: no feasible tree splits ``n`` on
        ``f``, so the engine's optimum over the remaining trees is still a lower bound under
        the user rows, and its bounds and start get as tight as the restriction makes them (a
        forbidden feature written in Pyomo costs what ``allowed_features`` does).
        """
        groups = form.split_groups()
        if groups is None:
            return
        from ._decomposition import infeasible_fixings

        columns, feature = groups  # (B, m) exclusive groups per node; feature of each member, -1: not a split
        is_split = feature >= 0
        _, _, ub, _ = spec.column_arrays()
        open_before = (ub[columns] > 0.5) & is_split
        flagged = infeasible_fixings(spec, columns) & is_split
        spec.set_column_bounds(columns[flagged], ub=0.0)
        _, _, ub, _ = spec.column_arrays()
        open_split = (ub[columns] > 0.5) & is_split
        possible = np.zeros((columns.shape[0], form.n_features), bool)
        for n in range(columns.shape[0]):
            possible[n, np.unique(feature[open_split[n]])] = True
        never = np.ones(form.n_features, bool)  # no column in the model at all: the engine never splits on them
        never[np.unique(feature[open_before.any(axis=0)])] = False
        possible[:, never] = True
        allowed = possible if stage.allowed is None else stage.allowed & possible
        removed = int((~allowed).sum()) - (0 if stage.allowed is None else int((~stage.allowed).sum()))
        if removed:
            stage.allowed = allowed
            stage.implied = {"features_removed": removed}

    def _decomposes(self, stage, form) -> bool:
        """Root-split decomposition: the stage is on, FlowOCT, and rows the engine cannot see."""
        return stage is not None and "decompose" in stage.stages and form.name == "flow" and not stage.sees_all

    def _decompose(self, form, spec, stage, data, root_lower, start, options):
        """Solve ``spec`` by :func:`optitree._decomposition.decompose`; ``start`` = (solver start, source, objective).

        Returns ``(result, x)`` as a backend's ``solve``; the start serves as the incumbent
        (its own sub-MIP only looks for better trees), and ``stage.decomposition`` records
        the candidates solved, found infeasible and pruned.
        """
        from ._decomposition import decompose, root_candidates

        columns, bounds = root_candidates(form, spec, *root_lower)
        x0, source, objective = start
        b_root = np.asarray(form.vars["b"])[0]
        deadline = None if options.time_limit is None else time.perf_counter() + options.time_limit

        def children(column):
            q = column - int(b_root[0])
            if form.depth < 2 or not 0 <= q < b_root.size:
                return None, 0.0
            # a tenth of the time left: bounds cut short stay valid, only weaker
            share = None if deadline is None else max(0.1 * (deadline - time.perf_counter()), 1e-3)
            return child_bound_row(form, data, stage.allowed, int(form.threshold_feature[q]),
                                   float(form.threshold_value[q]), max_distinct_features=stage.max_distinct_features,
                                   time_limit=share, callback=self._watch.engine_callback("bounds", model_units(form), values=False))

        result, x, info = decompose(spec, columns, bounds, solver=self.solver, options=options,
                                    incumbent=None if x0 is None else objective,
                                    granularity=form.objective_granularity(), children=children,
                                    rows_after_solve=form.rows_after_solve,
                                    on_event=self._progress(form, "decomposition"))
        stage.decomposition = info
        stage.times["decompose"] = info["time"]
        if result.proven_optimal:
            stage.certificate = "decomposition"
        result.start_source, result.start_objective = source, objective
        result.start_accepted = None if x0 is None else True
        return result, x

    def _apply_engine_bounds(self, result, stage, notes, in_model: bool):
        """Raise ``result.bound`` to the engine's global bounds (valid under any added constraint).

        ``in_model`` is False when the returned tree violates the model (user rows): nothing is
        then certified (:func:`~optitree._certificate.verify_tree_in_model`).
        """
        if not stage.lower_bounds:
            return
        known = [b for b in ((stage.engine or {}).get("bound"), (stage.bounds or {}).get("bound")) if b is not None]
        if known and (result.bound is None or max(known) > result.bound):
            result.apply_lower_bound(max(known))
            notes.append(f"bound raised to the exact engine's {max(known):.10g}")
        if not in_model:
            stage.certificate = None
            return
        if result.objective is not None and result.bound is not None and not result.proven_optimal and (
            result.objective - result.bound <= 1e-9 * max(1.0, abs(result.objective))
        ):
            result.termination, result.proven_optimal = "optimal", True
            stage.certificate = stage.certificate or "engine bound"
            notes.append("proven optimal: the incumbent meets the exact engine's bound")

    def _certified_result(self, form, stage, *, objective, bound, proven, solve_time, trace, source, options,
                          spec=None, build_time=0.0, termination=None):
        """A :class:`SolveResult` for a fit certified (or ended) without a MIP solve."""
        from ._provenance import package_versions

        sizes = (0, 0, 0, 0) if spec is None else (spec.n_rows, spec.n_cols, spec.nnz, spec.n_integer)
        return SolveResult(
            termination=termination or ("optimal" if proven else "time_limit"), has_solution=True,
            objective=objective,
            bound=bound, gap=relative_gap(objective, bound), proven_optimal=proven, nodes=0,
            build_time=build_time, solve_time=solve_time, n_rows=sizes[0], n_cols=sizes[1], n_nonzeros=sizes[2],
            n_integer=sizes[3], solver="exact" if spec is None else self.solver,
            versions=package_versions(("numpy", "numba", "optitree")), options=dict(vars(options)),
            start_source=source, start_objective=None, start_accepted=None, trace=trace,
            acceleration=stage.to_dict(),
        )

    def _set_engine_result(self, form, stage, engine, X, y, sample_weight, options, fallback=(None, None)):
        """``tree_``/``result_`` from the engine alone: its certificate, or its best tree and bound.

        ``fallback`` (tree, source), the start as given: returned instead of an unproven engine
        tree that is worse on the training data (never worse than CART or the user's start).
        """
        tree = form.task.statistics(engine.tree, X, y, sample_weight)  # leaf values of the task, all rows
        objective = form.objective_of_tree(tree)
        scale = model_units(form)
        proven = engine.status == "optimal"
        bound = objective if proven else min(engine.bound * scale, objective)
        if not proven and fallback[0] is not None and stage.admits(fallback[0]) and (
                form.objective_of_tree(fallback[0]) < objective):
            tree, objective = fallback[0], form.objective_of_tree(fallback[0])
            stage.engine["returned"] = fallback[1]
        if proven:
            stage.certificate = "engine"
        trace = [{"time": t, "incumbent": inc * scale, "bound": b * scale, "gap": relative_gap(inc * scale, b * scale),
                  "nodes": None, "event": "progress"} for t, inc, b in engine.trace]
        termination = "optimal" if proven else engine.status if engine.status in ("node_limit", "interrupted") \
            else "time_limit"
        result = self._certified_result(form, stage, objective=objective, bound=bound, proven=proven,
                                        solve_time=engine.time, trace=trace, source="exact", options=options,
                                        termination=termination)
        check = verify_certificate(result, engine.objective * scale, rel_gap=float(self.rel_gap), exact=True)
        notes = [check] if check else []
        if not result.proven_optimal:
            stage.certificate = None
            result.acceleration = stage.to_dict()
        notes += ["certificate: the exact engine (optitree.exact) proved this tree optimal; no MIP was solved"
                  if result.proven_optimal else f"not proven optimal by the exact engine ({engine.status})"]
        self.tree_ = tree
        self.init_tree_ = None
        self._set_result(result, notes)  # no MIP solved: no solve notes

    def _stopped_result(self, form, stage, spec, tree, objective, source, options, build_time, notes):
        """The result of a fit stopped (Ctrl-C) before its MIP solve: ``tree`` (the start) and the bounds known."""
        bounds = [objective * 0.0 + max(form.objective_lower_bound, 0.0)]
        if stage is not None and stage.lower_bounds:
            bounds += [b for b in ((stage.engine or {}).get("bound"), (stage.bounds or {}).get("bound"))
                       if b is not None]
        bound = min(max(bounds), objective)
        solve_time = 0.0 if stage is None else sum(stage.times.values())
        trace = [{"time": solve_time, "incumbent": objective, "bound": bound,
                  "gap": relative_gap(objective, bound), "nodes": 0, "event": "final"}]
        from ._provenance import package_versions

        result = SolveResult(
            termination="interrupted", has_solution=True, objective=objective, bound=bound,
            versions=package_versions(("numpy", "highspy", "optitree")),
            gap=relative_gap(objective, bound), proven_optimal=False, nodes=0, build_time=build_time,
            solve_time=solve_time, n_rows=0 if spec is None else spec.n_rows,
            n_cols=0 if spec is None else spec.n_cols, n_nonzeros=0 if spec is None else spec.nnz,
            n_integer=0 if spec is None else spec.n_integer, solver=self.solver, options=dict(vars(options)), start_source=source,
            start_objective=objective, start_accepted=None, trace=trace,
            acceleration=None if stage is None else stage.to_dict())
        notes.append("no MIP was solved: the fit was stopped before it" if spec is not None else
                     "the fit was stopped before any search (while the exact engine compiled): the start is returned")
        return result

    def _set_bounds_result(self, form, stage, tree, objective, source, options, spec, notes, build_time):
        """``tree_``/``result_`` when the root bounds prove the start optimal: no MIP is solved."""
        stage.certificate = "bounds"
        solve_time = sum(stage.times.values())
        trace = [{"time": solve_time, "incumbent": objective, "bound": objective, "gap": 0.0, "nodes": 0,
                  "event": "final"}]
        result = self._certified_result(form, stage, objective=objective, bound=objective, proven=True,
                                        solve_time=solve_time, trace=trace, source=source, options=options,
                                        spec=spec, build_time=build_time)
        result.start_objective, result.start_accepted = objective, True
        notes.append("certificate: no root split's exact bound beats the start (optitree.exact.split_bounds); "
                     "no MIP was solved")
        self.tree_ = tree
        self.init_tree_ = tree
        self._set_result(result, notes)  # no MIP solved: no solve notes
