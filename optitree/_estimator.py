"""The solve pipeline shared by OptimalTreeClassifier and OptimalTreeRegressor.

``fit`` of both estimators is one pipeline: validate → formulation → size check →
build (+ user constraints) → start tree → solve (with the backend that ``solver``
selects in :mod:`optitree.solvers`; rows the formulation's ``rows_after_solve`` asks for
are added and the model solved again, :func:`~optitree.solvers.resolve.solve_adding_rows`)
→ decode, or fall back to the start → ``result_``. ``result_.bound`` is raised to the
formulation's ``objective_lower_bound`` (the objective is a sum of non-negative terms) and
``result_.gap`` is :func:`~optitree.solvers.relative_gap` of the reported objective and
bound; the solver's optimality claim is then verified against the returned tree
(:func:`~optitree._certificate.verify_certificate`). Subclasses supply what differs through small hooks: target validation and
encoding (in their ``fit``), the formulation (:meth:`_OptimalTreeBase._formulation`),
the greedy start (:meth:`_OptimalTreeBase._fit_cart`) and extra result notes
(:meth:`_OptimalTreeBase._solve_notes`).
"""

from __future__ import annotations

import numbers
import re
import time
import warnings
from abc import ABCMeta, abstractmethod

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from greedy import FittedTreeMixin

from . import exact
from ._acceleration import ExactStageMixin, engine_targets, restrict_features, model_units
from ._categorical import encode_categories
from ._certificate import OBJECTIVE_TOL, verify_certificate, verify_tree_in_model
from ._memory import check_size, solve_profile
from ._progress import FitStopped, FitWatch
from ._warmstart import solution_violation, tree_from_init
from .formulations import InfeasibleStartError
from .solvers import SolveOptions, check_solver_available, make_backend
from .solvers.resolve import solve_adding_rows


#: Weights below the largest one times this are taken as 0 (:func:`normalise_weights`).
NEGLIGIBLE_WEIGHT = 2.0 ** -1000
#: The largest weight must lie within these (refused otherwise: the model's scalings would overflow).
WEIGHT_RANGE = (2.0 ** -1000, 2.0 ** 1000)


def normalise_weights(sample_weight):
    """Validated non-negative weights made safe for the model and the engine; (weights, notes).

    A weight below ``NEGLIGIBLE_WEIGHT`` times the largest cannot change any comparison of
    objectives in float64 (it is below the resolution of any objective the large weights
    reach, and 2**-1000 of them), yet the engine's and the formulation's weight units (powers
    of two near the smallest and the largest weight) would overflow when the ratio exceeds
    about 1.8e308 and certify wrong trees: such weights are set to 0 (the rows leave the model)
    with a note. A largest weight outside ``WEIGHT_RANGE`` is refused: the fix is to rescale
    all weights by one constant, which changes no optimal tree.
    """
    top = float(sample_weight.max(initial=0.0))
    if top > 0 and not WEIGHT_RANGE[0] <= top <= WEIGHT_RANGE[1]:
        raise ValueError(
            f"sample_weight: the largest weight is {top:.3g}, outside [2**-1000, 2**1000] ({WEIGHT_RANGE[0]:.3g} .. "
            f"{WEIGHT_RANGE[1]:.3g}), where the model's scalings overflow; multiply every weight by one constant "
            f"(e.g. sample_weight / sample_weight.max()): the optimal tree does not change")
    negligible = (sample_weight > 0) & (sample_weight < top * NEGLIGIBLE_WEIGHT)
    if not negligible.any():
        return sample_weight, []
    sample_weight = np.where(negligible, 0.0, sample_weight)
    return sample_weight, [
        f"sample_weight: {int(negligible.sum())} weight(s) below 2**-1000 times the largest ({top:.3g}) taken as 0 "
        f"(they cannot change any comparison of objectives in float64, and would overflow the weight units)"]


class _OptimalTreeBase(FittedTreeMixin, ExactStageMixin, BaseEstimator, metaclass=ABCMeta):
    """Parameters, solve pipeline and tree accessors common to the optimal tree estimators.

    Subclasses define ``__init__`` (every parameter of :attr:`_parameter_constraints`),
    :meth:`_formulation`, :meth:`_fit_cart` and ``_task`` ("classification" or
    "regression"), and call :meth:`_solve` from ``fit`` with validated data.
    """

    _task: str
    # what to suggest when the model exceeds the memory budget
    _size_hint = "use fewer samples or features, or a lower max_depth"

    _parameter_constraints: dict = {
        # 2**max_depth leaves: beyond 20 no model (or engine mask) fits in memory
        "max_depth": [Interval(numbers.Integral, 1, 20, closed="both")],
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
    def _formulation(self, X, y, sample_weight, start_tree=None):
        """The unbuilt :class:`~optitree.formulations.TreeFormulation` for the validated data.

        ``start_tree`` (the start as given, or None): a formulation with a restricted
        candidate set keeps the start's own splits, so the start stays representable.
        """

    @abstractmethod
    def _fit_cart(self, X, y, sample_weight, seed):
        """The greedy start tree for ``init="cart"``."""

    def _progress_units(self, form) -> tuple[str, float]:
        """What the progress line calls the objective, and model units per user unit."""
        return "objective", 1.0

    def _progress(self, form, stage="MIP"):
        """The ``on_event`` callback of a solve: the fit's progress line and its Ctrl-C (:mod:`optitree._progress`)."""
        return self._watch.solver_callback(stage)

    def _solve_notes(self) -> list[str]:
        """Notes appended to ``result_.message`` after every solve."""
        return []

    # ------------------------------------------------------------------ pipeline
    def _solve(self, X, y, sample_weight):
        """Solve the formulation for validated ``X``, encoded ``y``; set ``tree_``, ``init_tree_``, ``result_``.

        Watched (:class:`~optitree._progress.FitWatch`): the progress line at ``verbose=1``, and
        Ctrl-C: the first stops the running stage and returns the best tree so far (status
        ``"interrupted"``), the second raises KeyboardInterrupt.
        """
        self._watch = FitWatch(int(self.verbose))
        try:
            with self._watch:
                self._solve_watched(X, y, sample_weight)
        finally:
            del self._watch

    def _solve_watched(self, X, y, sample_weight):
        watch = self._watch
        fit_start = self._fit_start = time.perf_counter()
        self._compile_time = 0.0
        self.model_ = None
        if self.solver != "dp":
            check_solver_available(self.solver)
        sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        sample_weight, self._input_notes = normalise_weights(sample_weight)
        seed = self._seed()
        given = self._given_start(X, y, sample_weight, seed)
        with warnings.catch_warnings(record=True) as model_warnings:
            # the formulation's warnings concern its MIP: shown only if one is built (_model_warnings)
            warnings.simplefilter("always")
            form = self._formulation(X, y, sample_weight, start_tree=given[0])
        options = SolveOptions(
            time_limit=None if self.time_limit is None else float(self.time_limit),
            rel_gap=float(self.rel_gap), threads=int(self.threads), random_seed=seed,
            node_limit=self.node_limit, verbose=int(self.verbose) >= 2,
        )
        self._units = self._progress_units(form)
        watch.set_units(*self._units, lower=form.objective_lower_bound)
        stage = self._exact_stage(form)
        if stage is not None:  # the engine's one-off kernel compilation is build time, off the clock
            try:
                with watch.stoppable():  # up to tens of seconds in a fresh process: Ctrl-C ends it
                    self._compile_time = exact.warm_up()
            except FitStopped:
                self._stop_with_start(form, stage, given, options)
                return
            fit_start += self._compile_time
        n_positive = int(np.count_nonzero(sample_weight))
        if self.min_samples_leaf > n_positive:
            if self.solver == "dp":
                raise ValueError(f"no tree satisfies min_samples_leaf={self.min_samples_leaf}: it exceeds the "
                                 f"{n_positive} positive-weight training samples")
            stage = None  # the model reports it infeasible
        engine = data = None
        # without user constraints the engine's answer is the answer: it gets most of the limit;
        # with them it runs after the build, honouring the feature restrictions the user rows imply
        fraction = 1.0 if self.solver == "dp" else 0.9 if stage is None or stage.sees_all else 0.5
        share = None if options.time_limit is None else fraction * options.time_limit
        if stage is not None:
            data = exact.prepare(X, engine_targets(form, y), sample_weight, loss=self._engine_loss)

        def run_engine():
            with watch.stage("engine"):
                result = stage.solve(data, form, max_depth=int(self.max_depth),
                                     min_samples_leaf=int(self.min_samples_leaf), time_limit=share,
                                     callback=watch.engine_callback("engine", model_units(form)),
                                     threads=int(self.threads))
            watch.known(bound=stage.engine["bound"] if stage.lower_bounds else None)
            return result

        if stage is not None and stage.sees_all:
            engine = run_engine()
            if self.solver == "dp" or engine.status == "interrupted" or ("proof" in stage.stages and (
                engine.status == "optimal" or engine.status == "time_limit" and options.time_limit is not None
            )):
                # without user constraints a MIP after an engine stopped by the clock (90 % of the limit
                # spent) would overrun time_limit for nothing: the engine's best (or the start) is returned
                self._set_engine_result(form, stage, engine, X, y, sample_weight, options, fallback=given)
                return
        self._check_mip_features(form, X)
        self._model_warnings(model_warnings)
        n_rows, n_cols, nnz = form.estimate_size()
        budget = None if self.memory_budget is None else int(self.memory_budget)
        check_size(n_rows, n_cols, nnz, budget, hint=self._size_hint, solve_memory=solve_profile(form))
        t0 = time.perf_counter()
        spec = form.build()
        self._restrict_model(form, spec)
        if self.constraints is not None:
            from ._pyomo_bridge import apply_user_constraints

            apply_user_constraints(spec, self.constraints)
        build_time = time.perf_counter() - t0
        if stage is not None and engine is None:
            self._implied_restrictions(form, spec, stage)
            engine = run_engine()
        self.model_ = spec

        start_tree, start, source, notes = self._start(form, spec, given)
        engine_tree = None if engine is None else form.task.statistics(engine.tree, X, y, sample_weight)
        if engine is not None and "start" in stage.stages:
            start_tree, start, source = self._better_start(form, spec, (start_tree, start, source), engine_tree, notes)
        if start is None and stage is not None and "start" in stage.stages and self._side_rows():
            start_tree, start, source = self._repaired_start(
                form, spec, [(engine_tree, "exact"), given], (start_tree, start, source), options, notes)
        start_objective = None if start_tree is None else form.objective_of_tree(start_tree)
        watch.known(incumbent=start_objective)
        bound_info = None
        if stage is not None and {"rows", "screening", "decompose"} & stage.stages and (
                form.root_split_columns() is not None):
            bound_info, root_lower = self._root_bounds(form, spec, stage, data, start_tree, start_objective,
                                                       options, fit_start)
            stage.bounds = bound_info
            watch.known(bound=bound_info["bound"] if stage.lower_bounds else None)
            if bound_info["proves_incumbent"]:
                self._set_bounds_result(form, stage, start_tree, start_objective, source, options, spec, notes,
                                        build_time)
                return
        if options.time_limit is not None:  # the engine's time counts against the limit
            elapsed = time.perf_counter() - fit_start - build_time
            options.time_limit = max(options.time_limit - elapsed, 0.05 * options.time_limit)
        if watch.check() and start_tree is not None:  # stopped before the MIP: the start is the best tree
            result = self._stopped_result(form, stage, spec, start_tree, start_objective, source, options,
                                          build_time, notes)
            self.tree_ = self.init_tree_ = start_tree
            self._set_result(result, notes)
            return
        if self._decomposes(stage, form):
            with watch.stage("decomposition"):
                result, x = self._decompose(form, spec, stage, data, root_lower, (start, source, start_objective),
                                            options)
        else:
            backend = make_backend(self.solver, spec)
            backend.set_start(start, source=source, objective=start_objective)
            with watch.stage("MIP"):
                result, x = solve_adding_rows(backend, options, self._progress(form), form.rows_after_solve)
        result.build_time += build_time
        if start is None and source is not None:
            result.start_source, result.start_objective = source, start_objective
        notes.extend(self._solve_notes())

        tree = None if x is None else form.decode(spec, x)
        objective = None if tree is None else form.objective_of_tree(tree)
        if start is not None and (
            tree is None or objective > start_objective + OBJECTIVE_TOL * max(1.0, abs(start_objective))
        ):
            found = "no solution better" if tree is None else f"nothing better (objective {objective:.10g})"
            notes.append(f"the solver found {found} than the start ({start_objective:.10g}); returning the start tree")
            tree, objective = start_tree, start_objective
            result.has_solution = True
        if tree is None:
            self._set_result(result, notes)
            if result.termination == "interrupted":
                raise KeyboardInterrupt("the fit was interrupted before any tree was found (no start: init=None)")
            if result.termination == "node_limit" and self.node_limit == 0:
                raise ValueError("node_limit=0 explores no branch-and-bound node and the solver found no tree "
                                 "before it: give a start (init='cart' or a tree) or a node_limit >= 1")
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
        note = verify_certificate(result, solver_objective, rel_gap=float(self.rel_gap), exact=form.objective_is_exact,
                                  granularity=form.objective_granularity())
        notes.extend(filter(None, [note]))
        violation = verify_tree_in_model(result, form, spec, tree) if self._side_rows() else None
        if violation is not None:
            notes.append(f"not certified: the returned tree violates the model ({violation})")
        if stage is not None:
            self._apply_engine_bounds(result, stage, notes, in_model=violation is None)
            result.acceleration = stage.to_dict()
        self.tree_ = tree
        self.init_tree_ = start_tree
        self._set_result(result, notes)

    def _model_warnings(self, caught):
        """Re-issue the formulation's warnings now that its MIP is built, features named as the user's columns."""
        names = getattr(self, "feature_names_in_", None)

        def named(match):
            listed = [int(i) for i in match.group(1).split(",") if i.strip()]
            return "features " + ", ".join(repr(str(names[i])) if names is not None and i < len(names) else f"x{i}"
                                           for i in listed)

        for w in caught:
            text = re.sub(r"features \[([\d, ]*)\]", named, str(w.message))
            warnings.warn(text, w.category, stacklevel=4)

    def _stop_with_start(self, form, stage, given, options):
        """``tree_``/``result_`` of a fit stopped before any search: the start as given (raises
        KeyboardInterrupt without one)."""
        tree, source = given
        if tree is None:
            raise KeyboardInterrupt("the fit was interrupted before any tree was found (no start: init=None)")
        objective = form.objective_of_tree(tree)
        notes = []
        result = self._stopped_result(form, stage, None, tree, objective, source, options, 0.0, notes)
        self.model_ = None
        self.tree_ = self.init_tree_ = tree
        self._set_result(result, notes)

    def _check_mip_features(self, form, X):
        """Refuse, before the build, features the MIP's min-max scaling cannot represent (OCT, OCT-H, ORT).

        Those formulations map each feature to ``(x - min) / (max - min)``: a span above the
        largest float64 (features near +-1.8e308) overflows, one below 2**-1000 (subnormal
        values) overflows its reciprocal. FlowOCT (thresholds as binary columns) and the exact
        engine (ranks) take any finite feature.
        """
        if form.name not in ("oct", "oct-h", "ort") or X.shape[0] == 0:
            return
        with np.errstate(over="ignore", invalid="ignore"):
            span = X.max(axis=0) - X.min(axis=0)
        bad = np.flatnonzero(~np.isfinite(span) | ((span > 0) & (span < 2.0 ** -1000)))
        if bad.size:
            j = int(bad[0])
            raise ValueError(
                f"feature(s) {bad.tolist()} span {span[j]:.3g} (feature {j}: {X[:, j].min():.4g} .. {X[:, j].max():.4g}), "
                f"which formulation={form.name!r} cannot scale to [0, 1] in float64: rescale X (multiply those "
                f"features by one constant, e.g. 1e-10 or 1e10; the tree's splits are the same), or use "
                f"formulation='flow'" + (" / the exact engine" if form.name != "oct-h" else ""))

    def _seed(self) -> int:
        if isinstance(self.random_state, numbers.Integral):
            return int(self.random_state) % (2**31 - 1)
        return int(check_random_state(self.random_state).randint(2**31 - 1))

    def _given_start(self, X, y, sample_weight, seed):
        """The start tree as given by ``init`` (CART or the user's) and its source; (None, None) without one."""
        if self.init is None:
            return None, None
        if isinstance(self.init, str):
            if self.init != "cart":
                raise ValueError(f"init must be 'cart', None, a greedy.Tree or a fitted estimator, got {self.init!r}")
            return self._fit_cart(X, y, sample_weight, seed), "cart"
        return tree_from_init(self.init, X.shape[1], self.max_depth, task=self._task, previous_depth_class=type(self))

    def _start(self, form, spec, given):
        """Start tree, solver start, source label and notes; (None, None, source|None, notes) without a start."""
        notes: list[str] = []
        tree, source = given
        if tree is None:
            return None, None, None, notes
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
        return tree, form.solver_start(x0), source, notes

    def _side_rows(self) -> bool:
        """Whether the model has rows beyond the formulation's (user constraints, parameter limits)."""
        return self.constraints is not None or self.max_distinct_features is not None

    def _restrict_model(self, form, spec):
        """``allowed_features`` and ``max_distinct_features`` on the built model."""
        if self._allowed is not None:
            restrict_features(form, spec, self._allowed)
        if self.max_distinct_features is not None:
            form.limit_distinct_features(int(self.max_distinct_features))

    def _set_result(self, result, notes):
        notes = [*getattr(self, "_input_notes", []), *notes]
        name, scale = self._units
        if result.proven_optimal and not all(v is not None and np.isfinite(v) for v in (result.objective, result.bound)):
            # a proof is only as good as numbers that did not overflow (model units: of order one)
            result.proven_optimal = False
            if result.termination == "optimal":
                result.termination = "error"
            notes.append(f"not certified: objective {result.objective} or bound {result.bound} is not finite")
        watch = getattr(self, "_watch", None)
        if watch is not None and watch.stop_requested and not result.proven_optimal:
            result.termination = "interrupted"
            where = ", ".join(watch.stopped_in) or "before the search"
            notes.append(f"interrupted (Ctrl-C) in: {where}; the tree is the best found so far and the bound the "
                         f"last proven one")
            bound = "-" if result.bound is None else format(result.bound / scale, ".6g")
            watch.warn(f"returning the best tree found so far (status 'interrupted', {name} "
                       f"{result.objective / scale:.6g}, bound {bound}); result_.message says where it stopped")
        result.message = "; ".join(filter(None, [result.message, *notes]))
        result.build_time += self._compile_time
        result.fit_time = time.perf_counter() - self._fit_start
        result.objective_units = {"name": name, "scale": scale}
        self.result_ = result

    # ------------------------------------------------------------------ fitted tree
    def write_model(self, path) -> None:
        """Write the fit's MIP (``model_``) to ``path`` as ``.lp`` or ``.mps`` (by suffix).

        The model is the one the solver received: formulation, user constraints and the
        exact engine's rows and fixings (:meth:`optitree._model.ModelSpec.write`).

        Raises
        ------
        ValueError
            When the fit built no MIP (``model_`` is None): ``solver="dp"``, or the exact
            engine ended the fit (its proof, or its time limit without user constraints).
        """
        check_is_fitted(self)
        if self.model_ is None:
            how = ("solver='dp' solves without a MIP" if self.solver == "dp" else
                   "the exact engine ended the fit before a MIP was built (result_.acceleration); refit with "
                   "an acceleration without 'proof' (e.g. acceleration='start+rows') to build and solve the MIP")
            raise ValueError(f"this fit has no model to write: {how}")
        self.model_.write(path)

    @property
    def feature_importances_(self) -> np.ndarray:
        """Normalised total weighted impurity decrease of each feature in ``tree_`` (as scikit-learn's trees)."""
        check_is_fitted(self)
        return self.tree_.compute_feature_importances()

    def _validate_X_predict(self, X):
        check_is_fitted(self)
        X, _ = encode_categories(X, self.categories_)
        return validate_data(self, X, reset=False, dtype=np.float64)

