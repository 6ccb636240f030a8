"""Verification of an optimality proof after decoding, in the user's units.

A solver's "optimal" is a claim about the numbers it was given, checked with its own
absolute tolerances. The estimators trust it only after re-deriving it from the tree
they return: the tree's objective is recomputed with numpy from the training data
(:meth:`~optitree.formulations.TreeFormulation.objective_of_tree`) and

* equals the solver's objective within :data:`OBJECTIVE_TOL` (for a model whose
  objective only approximates the true one from below, such as the squared-error
  tangents, the solver's objective must not exceed it);
* the bound does not exceed the recomputed objective, nor the solver's objective;
* the gap between the recomputed objective and the bound closes: within the
  requested ``rel_gap``, or absolutely within :data:`OBJECTIVE_TOL`.

Objectives are in units of the baseline error (``error / L̂ + penalties``), so the
tolerance is relative to the data: ``OBJECTIVE_TOL * max(1, |objective|)`` is one
millionth of the loss of the best constant prediction. A claim that fails a check is
withdrawn (``proven_optimal = False``) with a :class:`CertificateWarning` saying why.
One truth about optimality: a result whose proof does not hold never keeps the status
``"optimal"``; it becomes ``"error"`` (the solver's claim was wrong or does not cover
the user's problem) with the reason in its message.
"""

from __future__ import annotations

import math
import warnings

from ._start import tree_violation

__all__ = ["CertificateWarning", "OBJECTIVE_TOL", "verify_certificate", "verify_tree_in_model"]

#: Tolerance of every certificate check, relative to ``max(1, |objective|)`` (module docstring).
OBJECTIVE_TOL = 1e-6


class CertificateWarning(UserWarning):
    """A solver's optimality claim did not survive verification in the user's units."""


def _tolerance(value: float) -> float:
    return OBJECTIVE_TOL * max(1.0, abs(value))


def _failure(solver_objective, objective, bound, exact, granularity=0.0) -> str | None:
    """Why the claimed proof is false, or None."""
    tol = _tolerance(objective)
    by_bound = granularity > 0 and bound is not None and abs(objective - bound) <= tol
    if solver_objective is not None and not by_bound:
        if exact and abs(solver_objective - objective) > tol:
            return (f"the solver's objective {solver_objective:.10g} differs from the returned tree's objective "
                    f"{objective:.10g} recomputed from the data (tolerance {tol:.3g})")
        if not exact and solver_objective > objective + tol:
            return (f"the solver's objective {solver_objective:.10g} exceeds the exact objective {objective:.10g} "
                    "of the returned tree, which its approximation must underestimate")
    if bound is not None and bound > objective + tol:
        return f"the bound {bound:.10g} exceeds the returned tree's recomputed objective {objective:.10g}"
    if bound is not None and solver_objective is not None and bound > solver_objective + tol:
        return f"the bound {bound:.10g} exceeds the solver's own objective {solver_objective:.10g}"
    return None


def verify_certificate(result, solver_objective, *, rel_gap: float, exact: bool, granularity: float = 0.0) -> str | None:
    """Keep ``result.proven_optimal`` only if the proof holds for the returned tree.

    Parameters
    ----------
    result : SolveResult
        With ``objective`` already the recomputed objective of the returned tree and
        ``bound`` the final (valid) lower bound. Updated in place: ``proven_optimal``,
        and ``termination`` (``"optimal"`` becomes ``"error"`` when not proven).
    solver_objective : float or None
        The objective the solver reported for its own solution.
    rel_gap : float
        The relative gap the user asked for.
    exact : bool
        Whether the model's objective is the true objective (False: an underestimate).
    granularity : float, default=0.0
        ``g > 0`` when every objective is a multiple of ``g``
        (:meth:`~optitree.formulations.TreeFormulation.objective_granularity`). The bound is
        then first raised to ``g * ceil(bound / g - OBJECTIVE_TOL)``; when that meets the
        returned tree's objective, the bound alone proves the tree optimal and a solver
        objective off by its tolerances (e.g. ``1 - 1e-6`` for a tree of objective 1) does
        not withdraw the claim.

    Returns
    -------
    note : str or None
        What was withdrawn and why (None when nothing changed). A proof found false
        also raises a :class:`CertificateWarning`.
    """
    note = None
    if result.proven_optimal:
        if granularity > 0 and result.bound is not None:
            rounded = granularity * math.ceil(result.bound / granularity - OBJECTIVE_TOL)
            if rounded > result.bound and rounded <= result.objective + _tolerance(result.objective):
                result.apply_lower_bound(rounded)
        objective, bound = result.objective, result.bound
        reason = _failure(solver_objective, objective, bound, exact, granularity)
        if reason is not None:
            note = f"optimality claim withdrawn: {reason}"
            warnings.warn(f"the solver reported an optimal solution but the proof does not hold: {reason}; "
                          "result_.proven_optimal set to False", CertificateWarning, stacklevel=4)
        elif bound is None or not (
            (objective != 0 and abs(objective - bound) / abs(objective) <= rel_gap)
            or objective - bound <= _tolerance(objective)
        ):
            gap = math.inf if bound is None else objective - bound
            note = (f"not proven optimal: the returned tree's objective {objective:.10g} is {gap:.3g} above the "
                    f"bound, more than rel_gap={rel_gap:g} allows")
        result.proven_optimal = note is None
    if not result.proven_optimal and result.termination == "optimal":
        result.termination = "error"
    return note


def verify_tree_in_model(result, form, spec, tree) -> str | None:
    """Why the returned ``tree`` is no solution of ``spec`` (user rows included), or None.

    A proof covers the model's solutions only: a decoded tree that violates a user row
    (e.g. one that meets a class quota only within the solver's tolerances) is returned
    uncertified — ``proven_optimal`` withdrawn with a :class:`CertificateWarning`.
    """
    why = tree_violation(form, spec, tree)
    if why is not None and result.proven_optimal:
        warnings.warn(f"the returned tree violates the model ({why}); result_.proven_optimal set to False",
                      CertificateWarning, stacklevel=4)
        result.proven_optimal, result.termination = False, "error"
    return why
