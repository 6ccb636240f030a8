"""Root-split decomposition of a FlowOCT MIP under constraints the exact engine cannot express.

Every tree either is a root leaf or splits the root on one binarized feature ``c``
(FlowOCT's column ``b[root, c]``), so the optimum of the model is

.. math:: OPT = \\min_{c \\in C} OPT_c,\\qquad C = \\{\\text{root leaf}\\} \\cup \\{\\text{root splits}\\},

``OPT_c`` the optimum with the root fixed to ``c``. The engine's root bound
``L(c) = \\alpha + \\text{left}(c) + \\text{right}(c)`` (:func:`optitree.exact.split_bounds`) is a
lower bound on ``OPT_c`` under *any* added constraint (constraints only raise optima). The
decomposition visits the candidates in increasing ``L(c)`` and solves, for each, the
**sub-MIP** "the model, ``b[root, c] = 1``, objective ``\\le U``" with the cutoff

.. math:: U = z^* - g/2 \\text{ (objective granularity } g > 0\\text{ known)},\\qquad
          U = z^* (1 + 10^{-9}) + 10^{-9} \\text{ otherwise},

``z^*`` the best objective found so far. With the root fixed the sub-MIP's LP relaxation is
far tighter than the full model's (FlowOCT's LP splits the root fractionally). Each sub-MIP
also gets the **children's bound row** (the engine's bounds on both children's sub-trees,
``children``), and every child column whose bound cannot stay below ``U`` is fixed to 0
(child screening, implied by the cutoff row). When the children's bounds alone reach
``z^*`` the candidate is settled without a sub-MIP. It stops as soon as the next candidate
has ``L(c) \\ge z^*``: no unvisited candidate can beat the incumbent, which is then proven.

**Bound** (valid at every moment, the trace's). A visited sub-MIP that finished proves
``OPT_c \\ge z^*`` (infeasible: every solution of ``c`` exceeds ``U``, hence is ``\\ge z^*``
with granularity ``g``, ``> z^*`` without) or found ``OPT_c`` itself. One stopped by a limit
with dual bound ``d`` gives ``OPT_c \\ge \\min(\\max(L(c), d), z^*)`` (solutions above ``U``
are ``\\ge z^*``). So

.. math:: OPT \\ge \\min\\big(z^*,\\; \\min_{c\\ \\text{unvisited}} L(c),\\;
          \\max(L(c_k), d_k)\\big),

``c_k`` the sub-MIP stopped by the limit (at most one: sub-MIPs run one after another, on
the time left). Candidates whose column the model already fixes to 0 (``allowed_features``,
screening) are not candidates of the model and are skipped. A candidate whose fixing
violates a user row at the column bounds (single-row activity test, e.g. a forbidden
feature) is infeasible without a solve.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np

from ..model import user_rows
from ..solvers import make_backend, relative_gap
from ..solvers.resolve import solve_adding_rows
from ..solvers.results import finished_result

__all__ = ["root_candidates", "infeasible_fixings", "decompose"]

_REL = 1e-9  # relative slack of the cutoff without a known granularity
_FEAS = 1e-6  # row feasibility slack of the activity test
#: Sub-MIPs of models up to this many rows run without presolve. Measured (depth 2, class
#: quota, 60 s, shared machine): wine (7 363 rows) solved 67 sub-MIPs in 30 s without presolve
#: and 42 with it; car (34 619 rows) overran the limit by 20 % without presolve and kept it with.
PRESOLVE_OFF_ROWS = 20_000


def root_candidates(form, spec, lower, leaf):
    """FlowOCT's root choices still open in ``spec``, in increasing engine bound.

    Parameters
    ----------
    form : FlowOCTFormulation
        Built; its root's choices are :meth:`~optitree.formulations.TreeFormulation.node_choices`.
    spec : ModelSpec
        The model (user rows, screening and ``allowed_features`` applied).
    lower : float array (F_b,)
        Engine bound ``L(c)`` of every root split column (model units; 0 where unknown).
    leaf : float
        Cost of the root leaf (model units).

    Returns
    -------
    columns : int array
        Root columns whose upper bound is not 0 (root leaf included).
    bounds : float array
        Their engine bounds, non-decreasing.
    """
    split, leaf_column = form.node_choices(1)
    columns = np.r_[split, leaf_column]
    bounds = np.r_[np.asarray(lower, float), float(leaf)]
    _, _, ub, _ = spec.column_arrays()
    keep = ub[columns] > 0.5
    order = np.argsort(bounds[keep], kind="stable")
    return columns[keep][order], bounds[keep][order]


def infeasible_fixings(spec, groups) -> np.ndarray:
    """Which columns of each exclusive group cannot be 1: a user row is violated at the column bounds.

    Parameters
    ----------
    spec : ModelSpec
    groups : int array (G, m)
        Column groups of which at most one is 1 (FlowOCT's node ``n``: ``b[n, :]`` and
        ``p[n]``, by its path row), so fixing one to 1 fixes the rest of its group to 0.

    Returns
    -------
    bool array (G, m)

    Notes
    -----
    For a user row ``r`` (blocks ``user_constraints*``) with coefficients ``a``, let
    ``m_{rg}``/``M_{rg}`` be its least/greatest activity over the column bounds of the
    columns outside group ``g``. With column ``j`` of ``g`` fixed to 1 the activity lies in
    ``[m_{rg} + a_{rj}, M_{rg} + a_{rj}]``; outside ``[lb_r, ub_r]`` (beyond a 1e-6 relative
    slack) no solution has ``x_j = 1``. A sound single-row test: it never flags a feasible
    fixing. Rows with an unbounded contribution are not tested.
    """
    import scipy.sparse as sp

    groups = np.atleast_2d(np.asarray(groups, np.intp))
    n_groups, m = groups.shape
    flagged = np.zeros(groups.shape, bool)
    rows = user_rows(spec)
    if rows is None or not groups.size:
        return flagged
    A, row_lb, row_ub = rows
    A = sp.coo_array(A)
    r, j, a = A.row.astype(np.intp), A.col.astype(np.intp), A.data
    n_rows = A.shape[0]
    _, col_lb, col_ub, _ = spec.column_arrays()
    with np.errstate(invalid="ignore"):
        low = np.minimum(a * col_lb[j], a * col_ub[j])
        high = np.maximum(a * col_lb[j], a * col_ub[j])
    least = np.bincount(r, np.where(np.isfinite(low), low, 0.0), n_rows)
    most = np.bincount(r, np.where(np.isfinite(high), high, 0.0), n_rows)
    least[np.bincount(r, ~np.isfinite(low), n_rows) > 0] = -np.inf
    most[np.bincount(r, ~np.isfinite(high), n_rows) > 0] = np.inf
    slack = _FEAS * np.maximum(1.0, np.minimum(np.abs(np.where(np.isfinite(row_lb), row_lb, 0.0)),
                                                  np.abs(np.where(np.isfinite(row_ub), row_ub, 0.0))))
    group_of = np.full(spec.n_cols, -1)
    slot_of = np.full(spec.n_cols, -1)
    group_of[groups.ravel()] = np.repeat(np.arange(n_groups), m)
    slot_of[groups.ravel()] = np.tile(np.arange(m), n_groups)
    inside = group_of[j] >= 0
    ri, gi, si, ai = r[inside], group_of[j[inside]], slot_of[j[inside]], a[inside]
    # activity bounds of each (row, group) without the group's columns
    pair, pair_of = np.unique(ri * n_groups + gi, return_inverse=True)
    pr, pg = pair // n_groups, pair % n_groups
    base_low = least[pr] - np.bincount(pair_of, low[inside], pair.size)
    base_high = most[pr] - np.bincount(pair_of, high[inside], pair.size)

    def violated(lo, hi, rows):
        return (lo > row_ub[rows] + slack[rows]) | (hi < row_lb[rows] - slack[rows])

    # a column in the row: its own coefficient
    own = violated(base_low[pair_of] + ai, base_high[pair_of] + ai, ri)
    flagged[gi[own], si[own]] = True
    # a column of the group absent from a row that the group's other columns at 0 violate
    absent = violated(base_low, base_high, pr)
    n_absent = np.bincount(pg[absent], minlength=n_groups)
    present = np.zeros(groups.shape, np.intp)
    np.add.at(present, (gi[absent[pair_of]], si[absent[pair_of]]), 1)
    flagged |= present < n_absent[:, None]
    # rows touching none of the group: infeasible whatever the group does (the model is); not flagged here
    return flagged


def _cutoff(incumbent, granularity):
    if granularity > 0:
        return incumbent - 0.5 * granularity
    return incumbent + _REL * max(1.0, abs(incumbent))


def _add_children(sub, sides, constant, cost, nz, cutoff):
    """The children's bound row and child screening in the sub-MIP of one root split.

    ``sides``: per child its columns (exactly one is 1) and their bounds ``β``. Row:
    ``objective - Σ_sides Σ_j β_j x_j ≥ constant``. Screening: with the cutoff ``U``, a
    column ``j`` of one child with ``constant + β_j + min(β of the other child) > U`` is in
    no solution below the cutoff; its upper bound becomes 0 (the module docstring's cutoff
    argument makes this as sound as the cutoff row itself).
    """
    coef = np.zeros(sub.n_cols)
    coef[nz] = cost[nz]
    for cols, beta in sides:
        np.add.at(coef, cols, -beta)
    on = np.flatnonzero(coef)
    sub.add_rows("decompose_children", 1, np.zeros(on.size, np.intp), on, coef[on], constant - sub.objective_offset,
                 np.inf)
    if cutoff is None:
        return
    for (cols, beta), (_, other) in ((sides[0], sides[1]), (sides[1], sides[0])):
        sub.set_column_bounds(cols[constant + beta + other.min() > cutoff + _REL * max(1.0, abs(cutoff))], ub=0.0)


def decompose(spec, columns, bounds, *, solver, options, incumbent=None, granularity=0.0, children=None,
              rows_after_solve=None, on_event=None):
    """Solve ``spec`` by its root candidates (module docstring); one result, one trace.

    Parameters
    ----------
    spec : ModelSpec
        The full model; left unchanged (each sub-MIP is a :meth:`~optitree.model.ModelSpec.derived` copy).
    columns, bounds : arrays
        From :func:`root_candidates`: root columns and their engine bounds, non-decreasing.
    solver : str
        The ``solver=`` string of every sub-MIP's backend.
    options : SolveOptions
        ``time_limit`` is shared by all sub-MIPs (each gets what is left); ``node_limit``
        applies to each and stops the decomposition when hit.
    incumbent : float, optional
        Objective of a feasible tree known beforehand (model units).
    granularity : float
        :meth:`~optitree.formulations.TreeFormulation.objective_granularity`.
    children : callable, optional
        ``children(column)`` -> ``(sides, constant)`` as
        :func:`optitree.pipeline._engine.child_bound_row`: the children's engine bounds when
        the root is ``column`` (``sides`` None for none), added to that sub-MIP as a bound
        row and used to fix child columns that cannot beat the cutoff (:func:`_add_children`).
    rows_after_solve : callable, optional
        The formulation's hook, run on every sub-MIP (:func:`~optitree.solvers.resolve.solve_adding_rows`).
    on_event : callable, optional
        Receives the trace points (times since the decomposition started).

    Returns
    -------
    result : SolveResult
        ``proven_optimal`` when every candidate is settled; ``bound`` as in the module
        docstring; ``solve_time`` the whole decomposition.
    x : ndarray or None
        The best solution found by a sub-MIP, None when none beat ``incumbent``.
    info : dict
        ``candidates``, ``solved`` (sub-MIPs run), ``infeasible`` (by the activity test),
        ``settled_by_children`` (the children's bounds reach the incumbent: no sub-MIP),
        ``pruned`` (never visited: their bound reached the incumbent, or the time ran
        out first; ``result.termination`` tells which), ``time``.
    """
    t0 = time.perf_counter()
    best = math.inf if incumbent is None else float(incumbent)
    best_x = None
    cost, _, _, _ = spec.column_arrays()
    nz = np.flatnonzero(cost)
    offset = spec.objective_offset
    skip = infeasible_fixings(spec, columns[None, :])[0]
    trace, nodes, solved, settled, last = [], 0, 0, 0, None
    open_bound = math.inf  # max(L(c_k), d_k) of a sub-MIP stopped by a limit
    termination = "optimal"
    k = 0

    def emit(point):
        trace.append(point)
        return None if on_event is None else on_event(dict(point))

    while k < len(columns):
        if bounds[k] >= best - 1e-9 * max(1.0, abs(best)):
            break  # no candidate from k on can beat the incumbent
        if skip[k]:
            k += 1
            continue
        remaining = None
        if options.time_limit is not None:
            remaining = options.time_limit - (time.perf_counter() - t0)
            if remaining <= 0:
                termination = "time_limit"
                break
        column, lower = int(columns[k]), float(bounds[k])
        following = float(bounds[k + 1]) if k + 1 < len(columns) else math.inf
        sides, constant = (None, 0.0) if children is None else children(column)
        if sides is not None:  # the children's bounds may settle the candidate without a sub-MIP
            lower = max(lower, constant + sum(float(beta.min()) for _, beta in sides))
            if lower >= best - 1e-9 * max(1.0, abs(best)):
                k += 1
                settled += 1
                continue
        sub = spec.derived()
        sub.set_column_bounds(column, lb=1.0)
        if math.isfinite(best):  # objective <= U
            sub.add_rows("decompose_cutoff", 1, np.zeros(nz.size, np.intp), nz, cost[nz], -np.inf,
                         _cutoff(best, granularity) - offset)
        if sides is not None:
            _add_children(sub, sides, constant, cost, nz, None if math.isinf(best) else _cutoff(best, granularity))
        start_time = time.perf_counter() - t0

        def relay(point, lower=lower, following=following, start_time=start_time):
            inc = best if point["incumbent"] is None else min(best, point["incumbent"])
            d = lower if point["bound"] is None else max(lower, point["bound"])
            bound = min(inc, following, d)
            inc = None if math.isinf(inc) else inc
            return emit({**point, "time": start_time + point["time"], "incumbent": inc, "bound": bound,
                         "gap": relative_gap(inc, bound),
                         "event": "progress" if point["event"] == "final" else point["event"]})

        if remaining is not None:
            remaining = options.time_limit - (time.perf_counter() - t0)
        sub_options = replace(options, time_limit=None if remaining is None else max(remaining, 1e-3),
                              presolve=spec.n_rows > PRESOLVE_OFF_ROWS)
        result, x = solve_adding_rows(make_backend(solver, sub), sub_options, relay, rows_after_solve)
        solved += 1
        nodes += result.nodes
        last = result
        if x is not None and result.objective is not None and result.objective < best:
            best, best_x = float(result.objective), x
        k += 1
        if result.termination not in ("optimal", "infeasible"):
            open_bound = lower if result.bound is None else max(lower, result.bound)
            termination = result.termination if result.termination != "error" else "interrupted"
            break
    pruned = len(columns) - k
    bound = min(best, open_bound, float(bounds[k]) if k < len(columns) else math.inf)
    objective = None if math.isinf(best) else best
    if termination == "optimal":
        if objective is None:
            termination = "infeasible"
        else:
            bound = objective  # every candidate settled: the incumbent is the least of them
    elapsed = time.perf_counter() - t0
    result = finished_result(
        termination=termination, objective=objective, bound=None if math.isinf(bound) else bound,
        options=options, abs_tol=1e-6, nodes=nodes, solve_time=elapsed, trace=trace,
        build_time=0.0, n_rows=spec.n_rows, n_cols=spec.n_cols, n_nonzeros=spec.nnz, n_integer=spec.n_integer,
        solver=solver, versions={} if last is None else last.versions, start_source=None, start_objective=None,
        start_accepted=None,
    )
    if on_event is not None:
        on_event(dict(result.trace[-1]))
    info = {"candidates": int(len(columns)), "solved": solved, "infeasible": int(skip[:k].sum()),
            "settled_by_children": settled, "pruned": int(pruned), "time": elapsed}
    return result, best_x, info
