"""The solve pipeline shared by OptimalTreeClassifier and OptimalTreeRegressor.

``fit`` of both estimators is one pipeline: validate → formulation → size check →
build (+ user constraints) → start tree → solve (HiGHS or Pyomo) → decode, or fall
back to the start → ``result_``. ``result_.bound`` is raised to the formulation's
``objective_lower_bound`` (the objective is a sum of non-negative terms) and
``result_.gap`` is :func:`~optitree._solve.relative_gap` of the reported objective and
bound; the solver's optimality claim is then verified against the returned tree
(:func:`~optitree._certificate.verify_certificate`). Subclasses supply what differs through small hooks: target validation and
encoding (in their ``fit``), the formulation (:meth:`_OptimalTreeBase._formulation`),
the greedy start (:meth:`_OptimalTreeBase._fit_cart`) and extra result notes
(:meth:`_OptimalTreeBase._solve_notes`).
"""

from __future__ import annotations

import numbers
import time
from abc import ABCMeta, abstractmethod

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from greedy import FittedTreeMixin

from ._certificate import OBJECTIVE_TOL, verify_certificate
from ._model import check_size
from ._solve import SolveOptions, solve_highs, solve_pyomo
from ._warmstart import solution_violation, tree_from_init
from .formulations import InfeasibleStartError


class _OptimalTreeBase(FittedTreeMixin, BaseEstimator, metaclass=ABCMeta):
    """Parameters, solve pipeline and tree accessors common to the optimal tree estimators.

    Subclasses define ``__init__`` (every parameter of :attr:`_parameter_constraints`),
    :meth:`_formulation`, :meth:`_fit_cart` and ``_task`` ("classification" or
    "regression"), and call :meth:`_solve` from ``fit`` with validated data.
    """

    _task: str
    # what to suggest when the model exceeds the memory budget
    _size_hint = "use fewer samples or features, or a lower max_depth"

    _parameter_constraints: dict = {
        "max_depth": [Interval(numbers.Integral, 1, None, closed="left")],
        "alpha": [Interval(numbers.Real, 0, None, closed="left")],
        "min_samples_leaf": [Interval(numbers.Integral, 1, None, closed="left")],
        "time_limit": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "rel_gap": [Interval(numbers.Real, 0, None, closed="left")],
        "threads": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
        "init": "no_validation",  # "cart", None, a Tree or a fitted estimator: checked in fit
        "solver": [str],
        "constraints": [callable, None],
        "node_limit": [Interval(numbers.Integral, 0, None, closed="left"), None],
        "memory_budget": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "verbose": ["verbose"],
    }

    def __sklearn_is_fitted__(self):
        return hasattr(self, "tree_")

    # ------------------------------------------------------------------ hooks
    @abstractmethod
    def _formulation(self, X, y, sample_weight):
        """The unbuilt :class:`~optitree.formulations.TreeFormulation` for the validated data."""

    @abstractmethod
    def _fit_cart(self, X, y, sample_weight, seed):
        """The greedy start tree for ``init="cart"``."""

    def _solve_notes(self) -> list[str]:
        """Notes appended to ``result_.message`` after every solve."""
        return []

    # ------------------------------------------------------------------ pipeline
    def _solve(self, X, y, sample_weight):
        """Solve the formulation for validated ``X``, encoded ``y``; set ``tree_``, ``init_tree_``, ``result_``."""
        solver_name = self._check_solver()
        sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        seed = self._seed()
        form = self._formulation(X, y, sample_weight)
        n_rows, n_cols, nnz = form.estimate_size()
        budget = None if self.memory_budget is None else int(self.memory_budget)
        check_size(n_rows, n_cols, nnz, budget, hint=self._size_hint)
        t0 = time.perf_counter()
        spec = form.build()
        if self.constraints is not None:
            from ._pyomo_bridge import apply_user_constraints

            apply_user_constraints(spec, self.constraints)
        build_time = time.perf_counter() - t0

        start_tree, start, source, notes = self._start(form, spec, X, y, sample_weight, seed)
        start_objective = None if start_tree is None else form.objective_of_tree(start_tree)
        options = SolveOptions(
            time_limit=None if self.time_limit is None else float(self.time_limit),
            rel_gap=float(self.rel_gap), threads=int(self.threads), random_seed=seed,
            node_limit=self.node_limit, verbose=bool(self.verbose),
        )
        common = dict(start=start, start_source=source, start_objective=start_objective, build_time=build_time)
        if solver_name == "highs":
            result, x = solve_highs(spec.to_highs(verbose=bool(self.verbose)), options, **common)
        else:
            result, x = solve_pyomo(spec, solver_name, options, **common)
        if start is None and source is not None:
            result.start_source, result.start_objective = source, start_objective
        notes.extend(self._solve_notes())

        tree = None if x is None else form.decode(spec, x)
        objective = None if tree is None else form.objective_of_tree(tree)
        if start is not None and (
            tree is None or objective > start_objective + OBJECTIVE_TOL * max(1.0, abs(start_objective))
        ):
            found = "no solution" if tree is None else f"nothing better (objective {objective:.10g})"
            notes.append(f"the solver found {found} than the start ({start_objective:.10g}); returning the start tree")
            tree, objective = start_tree, start_objective
            if result.status.endswith("_no_solution"):
                result.status = result.status[: -len("_no_solution")]
        if tree is None:
            self._set_result(result, notes)
            if result.status == "infeasible":
                n_modelled = int(form.count.sum())
                reason = (
                    f"min_samples_leaf={self.min_samples_leaf} exceeds the {n_modelled} positive-weight "
                    "training samples" if self.min_samples_leaf > n_modelled
                    else "the user constraints cannot be met"
                )
                raise ValueError(f"no tree satisfies the model (result_.status == 'infeasible'): {reason}")
            raise RuntimeError(
                f"the solver returned no tree (status {result.status!r}); raise time_limit/node_limit or "
                f"give a start (init). {result.message}"
            )
        solver_objective = result.objective
        if solver_objective is not None and abs(objective - solver_objective) > OBJECTIVE_TOL * max(1.0, abs(objective)):
            notes.append(f"objective {solver_objective:.10g} reported by the solver; {objective:.10g} recomputed for tree_")
        result.objective = objective
        solver_bound = result.bound
        if result.apply_lower_bound(form.objective_lower_bound):
            shown = "none" if solver_bound is None else f"{solver_bound:.10g}"
            notes.append(f"bound raised to the objective's lower bound {form.objective_lower_bound:g} "
                         f"(solver bound {shown})")
        note = verify_certificate(result, solver_objective, rel_gap=float(self.rel_gap), exact=form.objective_is_exact)
        notes.extend(filter(None, [note]))
        self.tree_ = tree
        self.init_tree_ = start_tree
        self._set_result(result, notes)

    def _check_solver(self) -> str:
        if self.solver == "highs":
            return "highs"
        if self.solver.startswith("pyomo:") and len(self.solver) > len("pyomo:"):
            return self.solver[len("pyomo:"):]
        raise ValueError(f"solver must be 'highs' or 'pyomo:<solver name>', got {self.solver!r}")

    def _seed(self) -> int:
        if isinstance(self.random_state, numbers.Integral):
            return int(self.random_state) % (2**31 - 1)
        return int(check_random_state(self.random_state).randint(2**31 - 1))

    def _start(self, form, spec, X, y, sample_weight, seed):
        """Start tree, sparse start, source label and notes; (None, None, source|None, notes) without a start."""
        notes: list[str] = []
        if self.init is None:
            return None, None, None, notes
        if isinstance(self.init, str):
            if self.init != "cart":
                raise ValueError(f"init must be 'cart', None, a greedy.Tree or a fitted estimator, got {self.init!r}")
            tree, source = self._fit_cart(X, y, sample_weight, seed), "cart"
        else:
            tree, source = tree_from_init(self.init, X.shape[1], self.max_depth, task=self._task,
                                          previous_depth_class=type(self))
        tree, note = form.prepare_start(tree)
        if note:
            notes.append(f"start: {note}")
        try:
            x0 = form.start_vector(tree)
        except InfeasibleStartError as exc:
            notes.append(f"start not used: {exc}")
            return None, None, source, notes
        why = solution_violation(spec, x0)
        if why is not None:
            notes.append(f"start not used: it violates the model ({why})")
            return None, None, source, notes
        return tree, form.discrete_start(x0), source, notes

    def _set_result(self, result, notes):
        result.message = "; ".join(filter(None, [result.message, *notes]))
        self.result_ = result

    # ------------------------------------------------------------------ fitted tree
    def _validate_X_predict(self, X):
        check_is_fitted(self)
        return validate_data(self, X, reset=False, dtype=np.float64)

