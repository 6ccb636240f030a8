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
far tighter than the full model's (FlowOCT's LP splits the root fractionally), and presolve
removes every other root column. It stops as soon as the next candidate has
``L(c) \\ge z^*``: no unvisited candidate can beat the incumbent, which is then proven.

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

import copy
import math
import time
from dataclasses import replace

import numpy as np

from .solvers import make_backend, relative_gap
from .solvers.results import finished_result

__all__ = ["root_candidates", "infeasible_fixings", "objective_granularity", "decompose"]

_REL = 1e-9  # relative slack of the cutoff without a known granularity
_FEAS = 1e-6  # row feasibility slack of the activity test


def root_candidates(form, spec, lower, leaf):
    """FlowOCT's root choices still open in ``spec``, in increasing engine bound.

    Parameters
    ----------
    form : FlowOCTFormulation
        Built; root split columns ``form.vars["b"][0]``, root leaf column ``form.vars["p"][0]``.
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
    columns = np.r_[np.asarray(form.vars["b"])[0], int(np.asarray(form.vars["p"])[0])]
    bounds = np.r_[np.asarray(lower, float), float(leaf)]
    _, _, ub, _ = spec.column_arrays()
    keep = ub[columns] > 0.5
    order = np.argsort(bounds[keep], kind="stable")
    return columns[keep][order], bounds[keep][order]


def infeasible_fixings(spec, columns, max_entries=10**7) -> np.ndarray:
    """Which of the root ``columns`` cannot be 1: a user row is violated at the column bounds.

    Fixing root column ``c`` to 1 fixes the other root columns to 0 (FlowOCT's root path
    row ``Σ_q b[root,q] + p[root] = 1``). For each user row ``r`` (blocks
    ``user_constraints*``) with coefficients ``a`` the activity then lies in
    ``[m_r + a_{rc}, M_r + a_{rc}]``, ``m_r``/``M_r`` the least/greatest activity of the
    non-root columns over their bounds; outside ``[lb_r, ub_r]`` the sub-MIP of ``c`` is
    infeasible. A sound test (never flags a feasible fixing); rows x candidates above
    ``max_entries`` are not tested.
    """
    flagged = np.zeros(len(columns), bool)
    blocks = [b for name, b in spec.row_blocks.items() if name.startswith("user_constraints")]
    n_rows = sum(b.n_rows for b in blocks)
    if not blocks or not len(columns) or n_rows * len(columns) > max_entries:
        return flagged
    import scipy.sparse as sp

    A = sp.vstack([sp.csr_array((b.data, b.indices, b.indptr), shape=(b.n_rows, spec.n_cols)) for b in blocks])
    A = sp.csc_array(A)
    row_lb = np.concatenate([b.lb for b in blocks])
    row_ub = np.concatenate([b.ub for b in blocks])
    _, col_lb, col_ub, _ = spec.column_arrays()
    rest = np.ones(spec.n_cols, bool)
    rest[columns] = False
    Ar = A[:, np.flatnonzero(rest)]
    pos, neg = Ar.maximum(0), Ar.minimum(0)
    lo, hi = col_lb[rest], col_ub[rest]
    with np.errstate(invalid="ignore"):  # 0 * inf: a coefficient-free side contributes 0
        least = np.nan_to_num(pos @ lo + neg @ hi, nan=0.0)
        most = np.nan_to_num(pos @ hi + neg @ lo, nan=0.0)
    coef = A[:, np.asarray(columns)].toarray()  # (rows, candidates)
    slack = _FEAS * np.maximum(1.0, np.abs(np.c_[row_lb, row_ub]).min(axis=1, initial=np.inf))[:, None]
    flagged = ((least[:, None] + coef > row_ub[:, None] + slack)
               | (most[:, None] + coef < row_lb[:, None] - slack)).any(axis=0)
    return flagged


def objective_granularity(form) -> float:
    """``g`` with every objective value a multiple of it (model units), or 0 if unknown.

    Without a split penalty (``alpha == 0``) and with integral merged weights the objective
    is the misclassified weight times :attr:`error_scale`: a multiple of ``error_scale``.
    """
    weight = np.asarray(form.weight, float)
    if form.alpha == 0 and np.all(weight == np.round(weight)):
        return float(form.error_scale)
    return 0.0


def _cutoff(incumbent, granularity):
    if granularity > 0:
        return incumbent - 0.5 * granularity
    return incumbent + _REL * max(1.0, abs(incumbent))


def _set_column_lb(spec, column, value):
    for block in spec.var_blocks.values():
        if block.start <= column < block.start + block.size:
            block.lb[column - block.start] = value
            return
    raise IndexError(f"column {column} not in the model")


def decompose(spec, columns, bounds, *, solver, options, incumbent=None, granularity=0.0, on_event=None):
    """Solve ``spec`` by its root candidates (module docstring); one result, one trace.

    Parameters
    ----------
    spec : ModelSpec
        The full model; left unchanged (the sub-MIPs use a copy).
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
        :func:`objective_granularity`.
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
        ``pruned`` (never visited: bound at or above the incumbent), ``time``.
    """
    t0 = time.perf_counter()
    best = math.inf if incumbent is None else float(incumbent)
    best_x = None
    sub = copy.deepcopy(spec)
    cost, _, col_ub, _ = sub.column_arrays()
    nz = np.flatnonzero(cost)
    ceiling = float(np.maximum(cost[nz], 0) @ col_ub[nz]) + 1.0  # above every objective: never binding
    sub.add_rows("decompose_cutoff", 1, np.zeros(nz.size, np.intp), nz, cost[nz], -np.inf, ceiling)
    cut = sub.row_blocks["decompose_cutoff"]  # its upper bound follows the incumbent

    def set_cutoff(value):
        cut.ub[0] = min(ceiling, _cutoff(value, granularity) - spec.objective_offset)

    if incumbent is not None:
        set_cutoff(best)
    skip = infeasible_fixings(spec, columns)
    trace, nodes, solved, last = [], 0, 0, None
    open_bound = math.inf  # max(L(c_k), d_k) of a sub-MIP stopped by a limit
    termination = "optimal"
    k = 0

    def emit(point):
        trace.append(point)
        if on_event is not None:
            return on_event(dict(point))
        return None

    def overall(next_bound):
        return min(best, next_bound, open_bound)

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
        _set_column_lb(sub, column, 1.0)
        offset = time.perf_counter() - t0

        def relay(point, lower=lower, following=following, offset=offset):
            inc = point["incumbent"]
            inc = best if inc is None else min(best, inc)
            d = lower if point["bound"] is None else max(lower, point["bound"])
            bound = min(inc, following, d)
            return emit({**point, "time": offset + point["time"], "incumbent": None if math.isinf(inc) else inc,
                         "bound": bound, "gap": relative_gap(None if math.isinf(inc) else inc, bound),
                         "event": "progress" if point["event"] == "final" else point["event"]})

        sub_options = replace(options, time_limit=None if remaining is None else max(remaining, 1e-3))
        result, x = make_backend(solver, sub).solve(sub_options, relay)
        _set_column_lb(sub, column, 0.0)
        solved += 1
        nodes += result.nodes
        last = result
        if x is not None and result.objective is not None and result.objective < best:
            best, best_x = float(result.objective), x
            set_cutoff(best)
        if result.termination in ("optimal", "infeasible"):
            k += 1
            continue
        dual = lower if result.bound is None else max(lower, result.bound)
        open_bound = dual
        termination = result.termination if result.termination != "error" else "interrupted"
        k += 1
        break
    pruned = len(columns) - k
    bound = overall(float(bounds[k]) if k < len(columns) else math.inf)
    objective = None if math.isinf(best) else best
    if objective is None and termination == "optimal":
        termination = "infeasible"
    if objective is not None and termination == "optimal":
        bound = objective  # every candidate settled: min over them is the incumbent
    elapsed = time.perf_counter() - t0
    abs_tol = 1e-6
    result = finished_result(
        termination=termination, objective=objective, bound=None if math.isinf(bound) else bound,
        options=options, abs_tol=abs_tol, nodes=nodes, solve_time=elapsed, trace=trace,
        build_time=0.0, n_rows=spec.n_rows, n_cols=spec.n_cols, n_nonzeros=spec.nnz, n_integer=spec.n_integer,
        solver=solver, versions={} if last is None else last.versions, start_source=None, start_objective=None,
        start_accepted=None,
    )
    if on_event is not None:
        on_event(dict(result.trace[-1]))
    info = {"candidates": int(len(columns)), "solved": solved, "infeasible": int(skip[:k].sum()),
            "pruned": int(pruned), "time": elapsed}
    return result, best_x, info

