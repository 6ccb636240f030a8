"""OptimalTreeClassifier: a scikit-learn estimator around the MIP tree formulations."""

from __future__ import annotations

import math
import numbers
import time

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data


from ._model import check_size
from ._solve import SolveOptions, solve_highs, solve_pyomo
from ._warmstart import fit_cart, solution_violation, tree_from_init
from .formulations import FORMULATIONS, InfeasibleStartError

__all__ = ["OptimalTreeClassifier"]

_REL_TOL = 1e-6


def _gap(objective: float, bound: float | None) -> float | None:
    """HiGHS's relative gap ``|objective - bound| / |objective|`` (0 when both are 0)."""
    if bound is None:
        return None
    if objective == 0:
        return 0.0 if abs(bound) <= 1e-9 else math.inf
    return abs(objective - bound) / abs(objective)


class OptimalTreeClassifier(ClassifierMixin, BaseEstimator):
    """Depth-bounded optimal classification tree by mixed-integer programming.

    The tree minimises, on the training data,

    .. math:: \\frac{E(T)}{\\hat L} + \\alpha\\, S(T)

    with :math:`E(T)` the weighted misclassifications, :math:`\\hat L` the weighted
    error of predicting the majority class and :math:`S(T)` the number of splits
    (:mod:`optitree.formulations`); ``result_.objective`` is in these units for every
    formulation.

    Parameters
    ----------
    max_depth : int, default=2
        Maximum depth (>= 1).
    formulation : {"flow", "oct", "oct-h"}, default="flow"
        "flow": FlowOCT (Aghaei, Gómez & Vayanos) on threshold-binarized features;
        "oct": Bertsimas & Dunn's OCT with continuous thresholds;
        "oct-h": their OCT-H with hyperplane splits ``coef @ x <= threshold``
        (``alpha`` is then charged per feature used per split; see
        :mod:`optitree.formulations.octh`).
    alpha : float, default=0.0
        Penalty per split, as a fraction of the baseline error.
    min_samples_leaf : int, default=1
        Minimum number of training samples per leaf.
    max_thresholds : int or None, default=None
        "flow" only. None: every midpoint between consecutive distinct values (exact).
        An int: at most that many quantile thresholds per feature (an approximation —
        the tree is optimal over those thresholds only).
    time_limit : float or None, default=60.0
        Solver time limit in seconds.
    rel_gap : float, default=0.0
        Relative gap at which the solver stops.
    threads : int, default=1
        Solver threads.
    random_state : int, RandomState or None, default=0
        Seeds the solver (``random_seed``) and the CART start.
    init : "cart", None, greedy.Tree or fitted tree estimator, default="cart"
        Warm start: greedy CART of depth ``max_depth`` with the same
        ``min_samples_leaf``, no start (None), or a given tree of depth <= max_depth
        (e.g. the previous depth's optimum). A start is never worse than what ``fit``
        returns: if the solver finds nothing better, the start itself is returned
        (noted in ``result_.message``).
    solver : str, default="highs"
        "highs" (highspy, direct) or "pyomo:<name>" (the Pyomo emission solved by any
        installed Pyomo solver, e.g. "pyomo:appsi_highs", "pyomo:cbc").
    constraints : callable or None, default=None
        ``constraints(model)`` adds linear Pyomo constraints over a mirror of the
        formulation's variable blocks (see :func:`optitree._pyomo_bridge.apply_user_constraints`).
    node_limit : int or None, default=None
        Branch-and-bound node limit.
    memory_budget : int or None, default=None
        Bytes allowed to build the model (None: a quarter of available memory); a larger
        model raises :class:`~optitree._model.ModelTooLargeError` before building.
    verbose : bool, default=False
        Print the solver log.

    Attributes
    ----------
    tree_ : greedy.Tree
        The fitted tree in original feature units; node statistics recomputed on the
        training data (weighted class counts).
    classes_ : ndarray
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has string feature names.
    result_ : SolveResult
        Solve statistics. ``result_.objective`` is always the objective of ``tree_``
        recomputed from the data; a difference from the solver's value (or a fallback
        to the start tree) is explained in ``result_.message``.
    init_tree_ : greedy.Tree or None
        The start given to the solver (canonical on the training data and pruned for
        ``alpha``), None without a start.

    Raises
    ------
    ValueError (from ``fit``)
        When no tree satisfies the model — with ``min_samples_leaf`` larger than the
        number of positive-weight training samples — after setting
        ``result_.status == "infeasible"``; for a single class in ``y``; for non-finite
        ``X``.

    Notes
    -----
    Samples of weight 0 are left out of the model, so they count neither in the
    objective nor in ``min_samples_leaf``.

    Examples
    --------
    >>> import numpy as np
    >>> from optitree import OptimalTreeClassifier
    >>> X = np.random.RandomState(0).rand(40, 2)
    >>> y = (X[:, 0] > 0.5) ^ (X[:, 1] > 0.5)
    >>> clf = OptimalTreeClassifier(max_depth=2).fit(X, y)
    >>> clf.score(X, y)
    1.0
    """

    _parameter_constraints: dict = {
        "max_depth": [Interval(numbers.Integral, 1, None, closed="left")],
        "formulation": [StrOptions(set(FORMULATIONS))],
        "alpha": [Interval(numbers.Real, 0, None, closed="left")],
        "min_samples_leaf": [Interval(numbers.Integral, 1, None, closed="left")],
        "max_thresholds": [Interval(numbers.Integral, 1, None, closed="left"), None],
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

    def __init__(
        self,
        max_depth=2,
        formulation="flow",
        alpha=0.0,
        min_samples_leaf=1,
        max_thresholds=None,
        time_limit=60.0,
        rel_gap=0.0,
        threads=1,
        random_state=0,
        init="cart",
        solver="highs",
        constraints=None,
        node_limit=None,
        memory_budget=None,
        verbose=False,
    ):
        self.max_depth = max_depth
        self.formulation = formulation
        self.alpha = alpha
        self.min_samples_leaf = min_samples_leaf
        self.max_thresholds = max_thresholds
        self.time_limit = time_limit
        self.rel_gap = rel_gap
        self.threads = threads
        self.random_state = random_state
        self.init = init
        self.solver = solver
        self.constraints = constraints
        self.node_limit = node_limit
        self.memory_budget = memory_budget
        self.verbose = verbose

    def __sklearn_is_fitted__(self):
        return hasattr(self, "tree_")

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Solve the MIP for the training data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite numeric features.
        y : array-like of shape (n_samples,)
            Class labels (any hashable labels, at least two classes).
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative weights (weight-0 samples are left out of the model).

        Returns
        -------
        self
        """
        solver_name = self._check_solver()
        if self.max_thresholds is not None and self.formulation != "flow":
            raise ValueError(f"max_thresholds applies to formulation='flow' only, got formulation={self.formulation!r}")
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        classes, y_enc = np.unique(y, return_inverse=True)
        if classes.size < 2:
            raise ValueError(f"{type(self).__name__} needs at least 2 classes in y, got 1 class ({classes[0]!r})")
        sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        seed = self._seed()

        kwargs = {"max_thresholds": self.max_thresholds} if self.formulation == "flow" else {}
        form = FORMULATIONS[self.formulation](
            X, y_enc, depth=self.max_depth, n_classes=classes.size, alpha=self.alpha,
            min_samples_leaf=self.min_samples_leaf, sample_weight=sample_weight, **kwargs,
        )
        n_rows, n_cols, nnz = form.estimate_size()
        budget = None if self.memory_budget is None else int(self.memory_budget)
        check_size(n_rows, n_cols, nnz, budget,
                   hint="use max_thresholds (flow), fewer samples or features, or a lower max_depth")
        t0 = time.perf_counter()
        spec = form.build()
        if self.constraints is not None:
            from ._pyomo_bridge import apply_user_constraints

            apply_user_constraints(spec, self.constraints)
        build_time = time.perf_counter() - t0

        start_tree, start, source, notes = self._start(form, spec, X, y_enc, sample_weight, seed)
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

        tree = None if x is None else form.decode(spec, x)
        objective = None if tree is None else form.objective_of_tree(tree)
        if start is not None and (
            tree is None or objective > start_objective + _REL_TOL * max(1.0, abs(start_objective))
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
        if result.objective is None or abs(objective - result.objective) > _REL_TOL * max(1.0, abs(objective)):
            if result.objective is not None:
                notes.append(
                    f"objective {result.objective:.10g} reported by the solver; {objective:.10g} recomputed for tree_"
                )
                if objective > result.objective:
                    result.proven_optimal = False
            result.gap = _gap(objective, result.bound)
        result.objective = objective
        self.tree_ = tree
        self.classes_ = classes
        self.init_tree_ = start_tree
        self._set_result(result, notes)
        return self

    # ------------------------------------------------------------------ fit helpers
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

    def _start(self, form, spec, X, y_enc, sample_weight, seed):
        """Start tree, sparse start, source label and notes; (None, None, source|None, notes) without a start."""
        notes: list[str] = []
        if self.init is None:
            return None, None, None, notes
        if isinstance(self.init, str):
            if self.init != "cart":
                raise ValueError(f"init must be 'cart', None, a greedy.Tree or a fitted estimator, got {self.init!r}")
            tree = fit_cart(X, y_enc, sample_weight, max_depth=self.max_depth,
                            min_samples_leaf=self.min_samples_leaf, random_state=seed)
            source = "cart"
        else:
            tree, source = tree_from_init(self.init, X.shape[1], self.max_depth)
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

    # ------------------------------------------------------------------ prediction
    def _validate_X_predict(self, X):
        check_is_fitted(self)
        return validate_data(self, X, reset=False, dtype=np.float64)

    def predict_proba(self, X):
        """Class probabilities: the training class distribution of each sample's leaf."""
        X = self._validate_X_predict(X)
        return self.tree_.predict(X)

    def predict(self, X):
        """Predicted class labels."""
        proba = self.predict_proba(X)
        return self.classes_[proba.argmax(axis=1)]

    def apply(self, X):
        """Index (in ``tree_``) of the leaf each sample reaches."""
        X = self._validate_X_predict(X)
        return self.tree_.apply(X)

    def decision_path(self, X):
        """CSR indicator matrix (n_samples, n_nodes) of the nodes each sample passes through."""
        X = self._validate_X_predict(X)
        return self.tree_.decision_path(X)

    def get_depth(self) -> int:
        """Depth of the fitted tree."""
        check_is_fitted(self)
        return self.tree_.max_depth

    def get_n_leaves(self) -> int:
        """Number of leaves of the fitted tree."""
        check_is_fitted(self)
        return self.tree_.n_leaves
