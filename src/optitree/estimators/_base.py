"""What the optimal estimators share: parameters, validation, the fit handed to the pipeline, accessors.

``fit`` of :class:`~optitree.OptimalTreeClassifier` and :class:`~optitree.OptimalTreeRegressor`
validates its input and parameters, then :meth:`_OptimalTreeBase._fit_tree` builds the start
given by ``init`` and the formulation, describes the fit as a
:class:`~optitree.pipeline.FitRequest`, runs the :class:`~optitree.pipeline.FitPipeline` and
stores its outcome (``tree_``, ``init_tree_``, ``result_``, ``model_``). Subclasses supply what
differs through small hooks: the formulation (:meth:`_OptimalTreeBase._formulation`), the
greedy start (:meth:`_OptimalTreeBase._fit_cart`), the objective's name and units, the
engine's loss and whether its trees cover the model, and notes for the result.
"""

from __future__ import annotations

import functools
import numbers
import warnings
from abc import ABCMeta, abstractmethod

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from greedy import FittedTreeMixin
from greedy._inputs import check_category_codes

from ..pipeline import FitPipeline, FitRequest
from ..pipeline._certificate import OBJECTIVE_TOL
from ..pipeline._engine import admits
from ..pipeline._start import tree_from_init
from ..problem import Problem, check_allowed
from ..solvers import check_solver_available, relative_gap
from ..split_space import SplitSpace, category_subsets
from ..split_space._encode import encode
from ._inputs import encode_categories, normalise_weights


#: Terminations by a limit the user set: a fit ended by one warns (:class:`~sklearn.exceptions.ConvergenceWarning`).
LIMIT_TERMINATIONS = ("time_limit", "node_limit", "work_limit")


class _OptimalTreeBase(FittedTreeMixin, BaseEstimator, metaclass=ABCMeta):
    """Parameters, solve pipeline and tree accessors common to the optimal tree estimators.

    Subclasses define ``__init__`` (every parameter of :attr:`_parameter_constraints`),
    :meth:`_formulation`, :meth:`_fit_cart` and ``_task`` ("classification" or
    "regression"), and call :meth:`_fit_tree` from ``fit`` with validated data.
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
        "work_limit": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "memory_budget": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "verbose": ["verbose"],
        "max_category_subsets": [Interval(numbers.Integral, 1, 16, closed="both"), StrOptions({"auto"})],
        "max_bins": [Interval(numbers.Integral, 2, None, closed="left"), None],
    }

    def __sklearn_is_fitted__(self):
        return hasattr(self, "tree_")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # NaN: sent to a learned side (optitree.split_space), except where the model sees only numbers
        tags.input_tags.allow_nan = (getattr(self, "formulation", None) != "oct-h"
                                     and getattr(self, "leaf_model", "constant") == "constant"
                                     and self.constraints is None and self.max_distinct_features is None)
        return tags

    # ------------------------------------------------------------------ hooks
    @abstractmethod
    def _formulation(self, problem, start_tree=None):
        """The unbuilt :class:`~optitree.formulations.TreeFormulation` of ``problem`` (:class:`~optitree.problem.Problem`).

        ``start_tree`` (the start as given, or None): a formulation with a restricted
        candidate set keeps the start's own splits, so the start stays representable.
        """

    @abstractmethod
    def _fit_cart(self, X, y, sample_weight, seed):
        """The greedy start tree for ``init="cart"``."""

    def _progress_units(self, form) -> tuple[str, float]:
        """What the progress line and ``summary()`` call the objective, and model units per user unit."""
        return "objective", 1.0

    def _engine_start_only(self) -> bool:
        """Whether the engine's trees do not cover the model (its tree a start only, its bounds no bounds)."""
        return False

    def _solve_notes(self) -> list[str]:
        """Notes appended to ``result_.message`` after every MIP solve."""
        return []

    #: The loss of this estimator's problems (:data:`optitree.problem.LOSSES`).
    _problem_loss = "misclassification"

    # ------------------------------------------------------------------ fit
    def _parse_allowed_features(self, n_features: int) -> None:
        """``self._allowed``: ``allowed_features`` as one mask per branch node (heap order), or None."""
        self._allowed = None
        if self.allowed_features is not None:
            try:
                self._allowed = check_allowed(np.asarray(self.allowed_features), int(self.max_depth), n_features)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"allowed_features: {exc}") from None

    def _fit_tree(self, X, y, sample_weight):
        """Fit for validated ``X`` and encoded ``y``: set ``tree_``, ``init_tree_``, ``result_``, ``model_``.

        The pipeline (:class:`~optitree.pipeline.FitPipeline`) watches the fit: a progress line at
        ``verbose=1``; the first Ctrl-C stops the running stage and returns the best tree so far
        (status ``"interrupted"``), the second raises KeyboardInterrupt.
        """
        if self.solver != "dp":
            check_solver_available(self.solver)
        sample_weight = np.ones(X.shape[0]) if sample_weight is None else _check_sample_weight(
            sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        sample_weight, input_notes = normalise_weights(sample_weight)
        seed = self._seed()
        given = None
        if self._start_deferrable(X):
            space = self._split_space(X, None)
            if space is None or not space.narrower_than_cart:
                # greedy CART only when the pipeline needs it: an engine proof returns no start (init_tree_ None)
                given = _DeferredStart(functools.partial(self._given_start, X, y, sample_weight, seed), space)
        if given is None:
            start = self._given_start(X, y, sample_weight, seed)  # over the user's features, its own NaN routing
            space = self._split_space(X, start[0])
            given = _encoded_start(space, start)
            if start[0] is not None and given[0] is None:
                input_notes.append(f"start ({start[1]}) not used: a split outside the split space")
        Z = X if space is None else space.transform(X)
        with warnings.catch_warnings(record=True) as model_warnings:
            # the formulation's warnings concern its MIP: shown only if one is built
            warnings.simplefilter("always")
            problem = Problem.of(
                Z, y, sample_weight, loss=self._problem_loss, depth=self.max_depth, alpha=self.alpha,
                min_samples_leaf=self.min_samples_leaf,
                allowed_features=self._allowed if space is None or self._allowed is None
                else space.expand_allowed(self._allowed),
                max_distinct_features=self.max_distinct_features, max_bins=self.max_bins)
            form = self._formulation(problem, start_tree=None if callable(given) else given[0])
        request = FitRequest(
            solver=self.solver,
            time_limit=None if self.time_limit is None else float(self.time_limit), rel_gap=float(self.rel_gap),
            threads=int(self.threads), seed=seed, node_limit=self.node_limit, work_limit=self.work_limit,
            memory_budget=None if self.memory_budget is None else int(self.memory_budget),
            verbose=int(self.verbose), constraints=self.constraints, stages=self._stages,
            engine_start_only=self._engine_start_only(), units=self._progress_units(form),
            solve_notes=tuple(self._solve_notes()), input_notes=tuple(input_notes), size_hint=self._size_hint,
            feature_names=getattr(self, "feature_names_in_", None))
        self.model_ = None
        outcome = FitPipeline(request, form, given, model_warnings).run()
        self.result_, self.model_ = outcome.result, outcome.model
        self.result_.split_space = self._describe_space(space, form)
        if outcome.error is not None:
            self.result_.express_in_user_units(*request.units)
            raise outcome.error
        self.tree_, self.init_tree_ = outcome.tree, outcome.init_tree
        if self.result_.termination in LIMIT_TERMINATIONS:
            self._warn_not_converged()
        if space is not None:  # trees over the space's columns, as trees over the user's features
            self.tree_ = space.decode(self.tree_, X, sample_weight)
            if self.init_tree_ is not None:
                self.init_tree_ = space.decode(self.init_tree_, X, sample_weight)
            if callable(given):  # the start fitted if the pipeline needed it, else none
                start, given = given.start, given.encoded
            self._settle_split_space(start, given, X, form)
        self.result_.express_in_user_units(*request.units)
        # the exports show NaN routing at the splits of features that had NaN in training
        self._nan_seen = (np.zeros(self.tree_.node_count, bool) if space is None else
                          ~self.tree_.is_leaf & space.has_missing[np.maximum(self.tree_.feature, 0)])

    def _settle_split_space(self, start, encoded, X, form) -> None:
        """Say which space ``tree_`` and the proof hold over; return the start when, as it predicts, it is better.

        The split space sends every NaN row to one side of a split; a start's routing may be
        fractional (greedy CART's: a NaN row goes down both children, weighted), which the
        space cannot express. The pipeline compared the start ``encoded`` in the space (each
        NaN to its larger side) with the space's trees, like with like; here ``start`` as it
        predicts on ``X`` is compared with ``tree_``. ``result_.split_space`` gains ``"start"``
        (its objective as it predicts, and encoded in the space: None when it has no encoding);
        its ``"tree"`` says the start is outside the split space when the start is returned (a
        tree of the problem but for its routing, :meth:`_admissible`) — uncertified, with the
        a-priori bound, the space's objective, bound and proof kept under ``"space_optimum"``.
        A proof that stands is noted in ``result_.message`` as one over the split space.

        Parameters
        ----------
        start, encoded : (greedy.Tree or None, str or None)
            The start over the user's features and over the space's columns, with its source.
        X : ndarray
            The training features.
        form : TreeFormulation
            The fit's formulation (over the space's columns).
        """
        result, space = self.result_, self.result_.split_space
        tree, source = start
        if tree is not None:
            if tree.missing_left is None and np.isnan(X).any():
                tree = tree.with_larger_child_routing()  # how predict routes a tree that learned none
            objective = form.objective_of_tree(tree, X)
            space["start"] = {"source": source, "objective": objective,
                              "objective_in_space": None if encoded[0] is None else form.objective_of_tree(encoded[0])}
        if tree is None or objective >= result.objective - OBJECTIVE_TOL * max(1.0, abs(result.objective)) or (
                not self._admissible(tree, X, form.weight_train)):
            if result.proven_optimal:
                result.message = "; ".join(filter(None, [result.message, (
                    "the proof holds over the split space (result_.split_space: each split sends a feature's NaN "
                    "rows to one side; categorical features split on the subsets listed)")]))
            return
        why = "NaN rows split between children" if encoded[0] is not None else "a split outside the split space"
        space["tree"] = f"the {source} start as it predicts ({why}), outside the split space"
        space["space_optimum"] = {"objective": result.objective, "bound": result.bound,
                                  "proven_optimal": result.proven_optimal}
        proof = "proven optimal" if result.proven_optimal else "the best found"
        result.message = "; ".join(filter(None, [result.message, (
            f"returning the {source} start (objective {objective:.10g} on the training data as it predicts, {why}): "
            f"better than the split space's tree ({proof}, objective {result.objective:.10g}), where each NaN row "
            f"goes to one side; not certified, since the proof and bound hold over the split space only "
            f"(result_.split_space['space_optimum'])")]))
        result.objective, result.proven_optimal = objective, False
        result.bound = form.objective_lower_bound
        result.gap = relative_gap(objective, result.bound)
        if result.termination == "optimal":
            result.termination = "error"
        self.tree_ = tree

    def _admissible(self, tree, X, sample_weight) -> bool:
        """Whether ``tree`` is a tree of the fit's problem but for its routing: axis-aligned, constant leaves,
        splits on ``allowed_features`` and on at most ``max_distinct_features`` features, each leaf reached by
        ``min_samples_leaf`` positive-weight training rows (with any share of their weight, as greedy CART
        counts a NaN row in both children)."""
        if tree.leaf_coef is not None or (tree.feature[~tree.is_leaf] < 0).any():
            return False
        if not admits(tree, self._allowed, self.max_distinct_features):
            return False
        rows, leaves, share = tree.route(X)
        reached = (share > 0) & (sample_weight[rows] > 0)
        counts = np.bincount(leaves[reached], minlength=tree.node_count)
        return bool((counts[tree.is_leaf] >= self.min_samples_leaf).all())

    def _warn_not_converged(self) -> None:
        """Warn that a limit ended the fit before a proof, naming its status and gap (from ``fit``'s caller)."""
        r = self.result_
        gap = "unknown (no bound)" if r.gap is None else format(r.gap, ".2%")
        warnings.warn(
            f"{type(self).__name__} stopped at its {r.termination} before proving the tree optimal: status "
            f"{r.status!r}, gap {gap}; tree_ is the best tree found. Raise {r.termination} for a proof "
            f"(result_.summary() shows the fit)", ConvergenceWarning, stacklevel=5)

    def _start_deferrable(self, X) -> bool:
        """Whether the start (``init="cart"``) may be fitted when the pipeline first needs it, not before.

        Only when nothing before the pipeline reads it: no NaN in ``X`` (after the fit, greedy
        CART's own NaN routing is compared with the split space's tree) and a formulation that
        ignores it; the estimator's own rule decides the rest (:meth:`_start_ignored_by_formulation`).
        :meth:`_fit_tree` then also asks that the split space hold every category subset (else
        CART's own subsets join it). A fit the exact engine proves (or ``solver="dp"``) then fits
        no CART: its start is never used.
        """
        return (isinstance(self.init, str) and self.init == "cart"
                and self._start_ignored_by_formulation() and not np.isnan(X).any())

    def _start_ignored_by_formulation(self) -> bool:
        """Whether the start may wait: :meth:`_formulation` ignores it and greedy CART's fit cannot fail.

        False here: the regressor's CART may refuse targets whose errors overflow, so it is fitted first.
        """
        return False

    def _split_space(self, X, start_tree):
        """The fit's :class:`~optitree.split_space.SplitSpace`, or None when ``X`` needs none (numeric, no NaN).

        Categorical features split on subsets of their categories, features with NaN in
        training on thresholds with NaN sent to either side; what the formulation cannot express
        is refused here, naming what can.
        """
        if not self.categories_ and not np.isnan(X).any():
            return None
        what = "categorical features" if self.categories_ else "missing values (NaN)"
        fix = ("use formulation='flow' or 'oct' (or solver='dp') with constant leaves, or encode X numerically "
               "(one-hot, imputation)")
        for name, limited in (("formulation='oct-h'", getattr(self, "formulation", None) == "oct-h"),
                              ("leaf_model='linear'", getattr(self, "leaf_model", "constant") == "linear"),
                              ("constraints", self.constraints is not None),
                              ("max_distinct_features", self.max_distinct_features is not None)):
            if limited:
                raise ValueError(f"{name} cannot be used with {what}: the model splits on the split space's "
                                 f"expanded columns (optitree.split_space), which {name} does not see; {fix}")
        space = SplitSpace(X, {j: len(labels) for j, labels in self.categories_.items()},
                           max_category_subsets=category_subsets(self.max_category_subsets, self.max_depth),
                           cart_tree=start_tree)
        return None if space.identity else space

    def _describe_space(self, space, form) -> dict:
        """``result_.split_space``: what the proof holds over, and ``"tree"``: where ``tree_`` lies (in it,
        unless :meth:`_settle_split_space` returns a start outside it); warns when it is narrower than CART's."""
        if space is None:
            description = {"identity": True, "features": []}
        else:
            description = space.describe()
        description["tree"] = "in the split space"
        description["thresholds"] = form.threshold_rule()
        engine = (self.result_.acceleration or {}).get("engine") or {}
        if self.max_bins is not None and engine.get("split_space"):  # the engine settled the fit over bins
            description["thresholds"] = engine["split_space"]
            description["all_midpoints_bound"] = engine.get("all_midpoints_bound")
        names = getattr(self, "feature_names_in_", None)
        for f in description["features"]:
            f["name"] = str(names[f["feature"]]) if names is not None else f"x{f['feature']}"
        narrower = [why for why, yes in (
            (description["thresholds"], description["thresholds"].startswith("at most")),
            ("category subsets without CART's (init=None)", description.get("narrower_than_cart", False))) if yes]
        if narrower:
            warnings.warn(f"the split space is narrower than CART's ({'; '.join(narrower)}): a proof holds over it "
                          f"only, and CART may find a better tree", UserWarning, stacklevel=5)
        return description

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

    # ------------------------------------------------------------------ fitted tree
    def write_model(self, path) -> None:
        """Write the fit's MIP (``model_``) to ``path`` as ``.lp`` or ``.mps`` (by suffix).

        The model is the one the solver received: formulation, user constraints and the
        exact engine's rows and fixings (:meth:`optitree.model.ModelSpec.write`).

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
        X = validate_data(self, X, reset=False, dtype=np.float64, ensure_all_finite="allow-nan")
        check_category_codes(X, list(self.categories_))  # an array's own codes (a DataFrame's are encoded)
        return X

    def _routing_tree(self, X):
        """``tree_``; for NaN in ``X`` and a tree that learned no NaN routing (no NaN in training, no
        categorical feature), ``tree_`` sending NaN to the child with more training samples
        (:meth:`greedy.Tree.with_larger_child_routing`), as the split space's trees do
        (:func:`optitree.split_space._decode.decode`)."""
        if self.tree_.missing_left is None and np.isnan(X).any():
            return self.tree_.with_larger_child_routing()
        return self.tree_


def _encoded_start(space, start):
    """``start`` (a tree over the user's features and its source) over the columns of ``space``, or
    ``(None, None)`` when it has a split outside it; ``start`` itself without a space."""
    if space is None or start[0] is None:
        return start
    encoded = encode(space, start[0])
    return (None, None) if encoded is None else (encoded, start[1])


class _DeferredStart:
    """The start, fitted when the pipeline first calls for it (:attr:`FitPipeline.given`).

    Made only where the start's encoding cannot fail (a split space holding every category
    subset, no NaN), so no note about an unused start is lost. After the fit, :attr:`start`
    (over the user's features) and :attr:`encoded` (over the space's columns) are ``(None,
    None)`` unless it was called.
    """

    def __init__(self, fit_start, space):
        self._fit_start, self._space = fit_start, space
        self.start = self.encoded = (None, None)

    def __call__(self):
        self.start = self._fit_start()
        self.encoded = _encoded_start(self._space, self.start)
        return self.encoded
