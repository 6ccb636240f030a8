"""Results of fits that end without a MIP solve: the engine's proof or its best, the root bounds' proof,
a fit stopped before its solve. Each is a :class:`~optitree.solvers.SolveResult` as a backend's
would be, so ``result_`` reads the same whichever stage ended the fit.
"""

from __future__ import annotations

import numpy as np

from .._provenance import package_versions
from ..solvers import SolveResult, relative_gap
from ._certificate import verify_certificate

__all__ = ["certified_result", "engine_result", "stopped_result", "bounds_result"]


def certified_result(stage, *, objective, bound, proven, solve_time, trace, source, options, solver, spec=None,
                     build_time=0.0, termination=None) -> SolveResult:
    """A result for a fit certified (or ended) without a MIP solve."""
    sizes = (0, 0, 0, 0) if spec is None else (spec.n_rows, spec.n_cols, spec.nnz, spec.n_integer)
    return SolveResult(
        termination=termination or ("optimal" if proven else "time_limit"), has_solution=True,
        objective=objective, bound=bound, gap=relative_gap(objective, bound), proven_optimal=proven, nodes=0,
        build_time=build_time, solve_time=solve_time, n_rows=sizes[0], n_cols=sizes[1], n_nonzeros=sizes[2],
        n_integer=sizes[3], solver="exact" if spec is None else solver,
        versions=package_versions(("numpy", "optitree")), options=dict(vars(options)),
        start_source=source, start_objective=None, start_accepted=None, trace=trace,
        acceleration=stage.to_dict(),
    )


def engine_result(form, stage, engine, tree, options, *, rel_gap, solver, fallback=(None, None), binned=False):
    """The fit's tree, result and notes from the engine alone: its certificate, or its best tree and bound.

    ``tree`` is the engine's tree with the task's leaf values on all rows. ``fallback``
    (tree, source), the start as given: returned instead of an unproven engine tree that is
    worse on the training data (never worse than CART or the user's start). ``binned``: the
    engine searched ``max_bins``'s thresholds only, so even its proven tree yields to a better
    fallback (thresholds between bin edges), uncertified, with the bound over every midpoint.
    """
    objective = form.objective_of_tree(tree)
    scale = form.model_error_scale
    proven = engine.status == "optimal"
    bound = objective if proven else min(engine.bound * scale, objective)
    # the fallback is the fit's answer whenever the engine's best is worse: its objective caps the trace
    held = form.objective_of_tree(fallback[0]) if (
        (binned or not proven) and fallback[0] is not None and stage.admits(fallback[0])) else np.inf
    if held < objective * (1 - 1e-12):
        tree, objective = fallback[0], held
        stage.engine["returned"] = fallback[1]
        if binned:
            below = engine.all_midpoints_bound
            proven, bound = False, max(form.objective_lower_bound, 0.0) if below is None else min(below * scale,
                                                                                                  objective)
    if proven:
        stage.certificate = "engine"
    trace = []
    for t, inc, b in engine.trace:
        inc = min(inc * scale, held)
        b = min(b * scale, inc)
        trace.append({"time": t, "incumbent": inc, "bound": b, "gap": relative_gap(inc, b), "nodes": None,
                      "event": "progress"})
    termination = "optimal" if proven else engine.status if engine.status in ("node_limit", "work_limit",
                                                                               "interrupted") else "time_limit"
    if not proven and engine.status == "optimal":  # a better start outside the binned space, as for NaN routing
        termination = "error"
    result = certified_result(stage, objective=objective, bound=bound, proven=proven, solve_time=engine.time,
                              trace=trace, source="exact", options=options, solver=solver, termination=termination)
    check = verify_certificate(result, engine.objective * scale, rel_gap=rel_gap, exact=True)
    notes = [check] if check else []
    if not result.proven_optimal:
        stage.certificate = None
        result.acceleration = stage.to_dict()
    if stage.engine.get("returned") and binned:
        notes.append(f"returning the {stage.engine['returned']} start: better on the training data than the "
                     f"engine's {engine.status} tree over max_bins's thresholds (its own lie between bin edges); "
                     "not certified, the bound is the one over every midpoint")
    else:
        notes.append("certificate: the exact engine (optitree.exact) proved this tree optimal; no MIP was solved"
                     if result.proven_optimal else f"not proven optimal by the exact engine ({engine.status})")
    return tree, result, notes


def stopped_result(form, stage, spec, objective, source, options, build_time, notes, *, solver) -> SolveResult:
    """The result of a fit stopped (Ctrl-C) before its MIP solve: the start (``objective``) and the bounds known."""
    bounds = [max(form.objective_lower_bound, 0.0)]
    if stage is not None and stage.lower_bounds:
        bounds += [b for b in ((stage.engine or {}).get("bound"), (stage.bounds or {}).get("bound")) if b is not None]
    bound = min(max(bounds), objective)
    solve_time = 0.0 if stage is None else sum(stage.times.values())
    trace = [{"time": solve_time, "incumbent": objective, "bound": bound,
              "gap": relative_gap(objective, bound), "nodes": 0, "event": "final"}]
    result = SolveResult(
        termination="interrupted", has_solution=True, objective=objective, bound=bound,
        versions=package_versions(("numpy", "highspy", "optitree")),
        gap=relative_gap(objective, bound), proven_optimal=False, nodes=0, build_time=build_time,
        solve_time=solve_time, n_rows=0 if spec is None else spec.n_rows,
        n_cols=0 if spec is None else spec.n_cols, n_nonzeros=0 if spec is None else spec.nnz,
        n_integer=0 if spec is None else spec.n_integer, solver=solver, options=dict(vars(options)),
        start_source=source, start_objective=objective, start_accepted=None, trace=trace,
        acceleration=None if stage is None else stage.to_dict())
    notes.append("no MIP was solved: the fit was stopped before it" if spec is not None else
                 "the fit was stopped before any search: the start is returned")
    return result


#: What proves the start before any MIP (:func:`bounds_result`), as ``result_.message`` says it.
_BOUND_CERTIFICATES = {
    "bounds": "no root split's exact bound beats the start (optitree.exact.split_bounds)",
    "engine bound": "the start meets the exact engine's bound",
}


def bounds_result(stage, objective, source, options, spec, notes, build_time, *, solver,
                  certificate="bounds") -> SolveResult:
    """The result when the engine's bounds prove the start optimal (``certificate``: the root
    bounds, or the engine's own bound): no MIP is solved."""
    stage.certificate = certificate
    solve_time = sum(stage.times.values())
    trace = [{"time": solve_time, "incumbent": objective, "bound": objective, "gap": 0.0, "nodes": 0,
              "event": "final"}]
    result = certified_result(stage, objective=objective, bound=objective, proven=True, solve_time=solve_time,
                              trace=trace, source=source, options=options, solver=solver, spec=spec,
                              build_time=build_time)
    result.start_objective, result.start_accepted = objective, True
    notes.append(f"certificate: {_BOUND_CERTIFICATES[certificate]}; no MIP was solved")
    return result
