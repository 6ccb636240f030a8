"""The exact engine's stage in a fit: what it may do, its solve, and what its bounds certify.

An :class:`ExactStage` says which stages of ``acceleration`` run (:data:`STAGES`), which
splits the engine may use (``allowed``: per branch node, heap order) and whether its optimum
bounds the model's (``lower_bounds``) or even is the model's (``sees_all``: no restriction it
cannot see). The engine and the formulation compute in one unit system, the problem's
(:class:`optitree.problem.Units`): the engine reports its costs in it (``prepare(...,
report="problem")``), which are the formulation's model losses, so the formulation's objective
is ``problem.objective_scale`` times them (finite whatever the magnitudes: no user-unit loss,
e.g. a squared error of targets near 1e-300, is ever formed). The root's bounds in the MIP are
in :mod:`optitree.pipeline._root_bounds`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .. import exact
from ._decomposition import infeasible_fixings

__all__ = ["STAGES", "parse_acceleration", "ExactStage", "admits", "make_stage", "implied_restrictions", "apply_engine_bounds"]

#: Stages of the acceleration, each can be switched off (``acceleration="start+rows"`` ...).
STAGES = ("start", "proof", "rows", "screening", "decompose")


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
        Root-split decomposition (:mod:`optitree.pipeline._decomposition`): candidates, sub-MIPs
        solved, candidates infeasible by the activity test, pruned by their bound, time.
    max_distinct_features : int or None
        The limit on distinct split features, when the engine honours it.
    sees_all : bool
        The engine honours every restriction of the model (no user rows, the feature limit
        enumerable): its proof is the fit's certificate, with no MIP.
    lower_bounds : bool
        The engine's optima bound the model's from below (False for linear leaves, which
        the engine's constant leaves do not cover: its tree is then a start only).
    is_solver : bool
        The engine is the fit's solver (``solver="dp"``): its answer is the fit's, proven or not.
    certificate : str or None
        ``"engine"`` (the engine proved the tree optimal: no MIP) or ``"bounds"`` (the root
        bounds proved the incumbent optimal: no MIP), else None.
    """

    stages: frozenset
    allowed: np.ndarray | None = None
    max_distinct_features: int | None = None
    sees_all: bool = True
    lower_bounds: bool = True
    is_solver: bool = False
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
        return admits(tree, self.allowed, self.max_distinct_features)

    def engine_problem(self, problem):
        """``problem`` as the engine solves it: with the restrictions it honours (``allowed``,
        ``max_distinct_features``)."""
        return problem.restricted(self.allowed, self.max_distinct_features)

    # ------------------------------------------------------------------ engine solve
    def solve(self, data, problem, *, time_limit, callback=None, threads=1, work_limit=None, start=None):
        """Run the engine on ``problem`` (``data``: its :class:`optitree.exact.ExactData`); returns its result.

        ``callback``: :func:`optitree.exact.solve`'s (progress in engine units; True stops it);
        ``threads``: its root search's threads; ``work_limit``: its deterministic budget;
        ``start``: a tree on ``data``'s features, its first incumbent when it is a tree of the problem.
        """
        units = problem.objective_scale
        t0 = time.perf_counter()
        result = exact.solve(data, problem=self.engine_problem(problem), time_limit=time_limit, callback=callback,
                             threads=threads, work_limit=work_limit, start=start)
        self.times["engine"] = time.perf_counter() - t0
        self.engine = {"status": result.status, "objective": result.objective * units,
                       "bound": result.bound * units, "time": self.times["engine"], "stopped_by": result.stopped_by,
                       "work": result.work, "split_space": result.split_space,
                       "all_midpoints_bound": None if result.all_midpoints_bound is None
                       else result.all_midpoints_bound * units}
        return result

    # ------------------------------------------------------------------ root bounds
    def trivial_split_bound(self, data, problem, bounds, *, time_limit, callback=None):
        """A lower bound (model units) on a tree whose root split sends every row one way.

        Such a tree costs ``alpha`` plus a sub-tree of depth ``depth - 1`` on all rows: at
        least the engine's bound on that optimum (without the feature restrictions: a
        relaxation), or the leaf cost of ``bounds`` at depth 1.
        """
        units = problem.objective_scale
        below = bounds.leaf_cost
        if problem.depth > 1:
            below = exact.solve(data, problem=problem.relaxed(problem.depth - 1), time_limit=time_limit,
                                callback=callback).bound
        return (problem.split_cost + below) * units

    def root_bounds(self, data, problem, *, cutoff, time_limit, callback=None):
        """:func:`optitree.exact.split_bounds` of the root; ``cutoff`` in model units (or None)."""
        units = problem.objective_scale
        t0 = time.perf_counter()
        bounds = exact.split_bounds(data, problem=self.engine_problem(problem),
                                    cutoff=None if cutoff is None else cutoff / units, time_limit=time_limit,
                                    callback=callback)
        self.times["bounds"] = time.perf_counter() - t0
        return bounds


def admits(tree, allowed, max_distinct_features) -> bool:
    """Whether ``tree`` splits only on features ``allowed`` at its nodes, on at most ``max_distinct_features``.

    ``allowed``: a bool mask ``(2**depth - 1, n_features)`` over branch nodes in heap order (row
    ``r`` has children ``2r + 1`` and ``2r + 2``), or None; a split below its depth is not allowed.
    """
    internal = ~tree.is_leaf
    if max_distinct_features is not None and np.unique(tree.feature[internal]).size > max_distinct_features:
        return False
    stack = [(0, 0)]  # (node, its row of the mask)
    while allowed is not None and stack:
        node, row = stack.pop()
        if internal[node]:
            if row >= allowed.shape[0] or not allowed[row, tree.feature[node]]:
                return False
            stack += [(tree.children_left[node], 2 * row + 1), (tree.children_right[node], 2 * row + 2)]
    return True


def make_stage(request, problem):
    """The :class:`ExactStage` of a fit (``request``: its :class:`~optitree.pipeline.FitRequest`, ``problem``
    its :class:`~optitree.problem.Problem`), or None.

    ``solver="dp"``: the engine is the whole solve. ``request.engine_start_only`` (a model the
    engine's trees do not cover, e.g. hyperplanes or linear leaves): its tree is a start, its
    bounds no bounds. Otherwise every enabled stage; its proof certifies the fit when it sees
    every restriction (no user rows, the feature limit enumerable).
    """
    k, allowed = problem.max_distinct_features, problem.allowed
    honoured = k is None or exact.honours_distinct_features(problem.X, allowed, problem.depth, k)
    if request.solver == "dp":
        if not honoured:
            raise ValueError(f"solver='dp': max_distinct_features={k} needs more feature subsets than the "
                             f"engine enumerates ({exact.MAX_SUBSETS}); use a MIP solver")
        return ExactStage(frozenset({"proof"}), allowed=allowed, max_distinct_features=k, is_solver=True)
    start_only = request.engine_start_only
    stages = request.stages & {"start"} if start_only else request.stages
    if not stages:
        return None
    return ExactStage(stages, allowed=allowed, max_distinct_features=k if honoured else None,
                      sees_all=not start_only and request.constraints is None and honoured,
                      lower_bounds=not start_only)


def implied_restrictions(form, spec, stage) -> None:
    """Narrow ``stage.allowed`` to the splits the user rows leave possible (FlowOCT, OCT, ORT).

    Feature ``f`` is dropped at node ``n`` when every split column of ``n`` on ``f``
    (:meth:`~optitree.formulations.TreeFormulation.split_groups`: FlowOCT's ``b[n, (f, ·)]``,
    OCT's ``a[n, f]``) is fixed to 0 or cannot be 1 by
    :func:`~optitree.pipeline._decomposition.infeasible_fixings`: no feasible tree splits ``n``
    on ``f``, so the engine's optimum over the remaining trees is still a lower bound under the
    user rows, and its bounds and start get as tight as the restriction makes them (a forbidden
    feature written in Pyomo costs what ``allowed_features`` does).
    """
    groups = form.split_groups()
    if groups is None:
        return
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


def apply_engine_bounds(result, stage, notes, in_model: bool) -> None:
    """Raise ``result.bound`` to the engine's global bounds (valid under any added constraint).

    ``in_model`` is False when the returned tree violates the model (user rows): nothing is
    then certified (:func:`~optitree.pipeline._certificate.verify_tree_in_model`).
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
