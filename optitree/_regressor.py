"""OptimalTreeRegressor: a scikit-learn estimator around the ORT / ORT-L formulations."""

from __future__ import annotations

import numbers
import time

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight, validate_data

from greedy import CARTRegressor, Tree

from ._classifier import OptimalTreeClassifier, _gap
from ._model import check_size
from ._solve import SolveOptions, solve_highs, solve_pyomo
from ._warmstart import solution_violation
from .formulations import InfeasibleStartError
from .formulations.ort import LEAF_MODELS, LOSSES, ORTFormulation

__all__ = ["OptimalTreeRegressor"]

_REL_TOL = 1e-6
_CRITERION = {"absolute": "absolute_error", "squared": "squared_error"}


class OptimalTreeRegressor(RegressorMixin, BaseEstimator):
    """Depth-bounded optimal regression tree by mixed-integer programming (ORT / ORT-L).

    The tree minimises, on the training data,

    .. math:: \\frac{\\ell(T)}{\\hat L} + \\alpha\\, S(T) + \\lambda\\, \\|W(T)\\|_1

    with :math:`\\ell(T)` the weighted absolute (or squared) error, :math:`\\hat L` that of
    the best constant prediction (weighted median / mean), :math:`S(T)` the number of
    splits and :math:`\\|W(T)\\|_1` the L1 norm of the linear leaves' coefficients in
    target ranges over the training box (:mod:`optitree.formulations.ort`).
    ``result_.objective`` is in these units.

    Parameters
    ----------
    max_depth : int, default=2
        Maximum depth (>= 1).
    formulation : {"ort"}, default="ort"
        Bertsimas & Dunn's OCT routing (univariate splits, continuous thresholds) with
        regression leaves.
    leaf_model : {"constant", "linear"}, default="constant"
        "constant": one value per leaf (ORT). "linear": ``intercept + coef @ x`` per
        leaf, fitted jointly with the splits (ORT-L).
    loss : {"absolute", "squared"}, default="absolute"
        "absolute" is exact. "squared": HiGHS (1.15) cannot solve mixed-integer
        quadratic programs, so the model minimises a piecewise-linear outer
        approximation of the squared error (relative underestimate <= 0.83 %). The
        returned tree's constant leaves are refitted to weighted means;
        ``result_.objective`` is its *exact* squared error and ``result_.bound`` the
        approximation's bound, a valid lower bound, so ``result_.gap`` is honest and
        ``proven_optimal`` is True only if that gap closes.
    alpha : float, default=0.0
        Penalty per split, as a fraction of the baseline loss.
    min_samples_leaf : int, default=1
        Minimum number of training samples per leaf.
    coef_budget : float, default=2.0
        ORT-L: L1 budget of each leaf's coefficients,
        ``Σ_j |coef_j| · range(x_j) <= coef_budget · range(y)`` (ranges over the
        training data): a leaf's linear part varies by at most ``coef_budget`` target
        ranges over the training box. Larger budgets allow steeper leaves and loosen
        the MIP (its big-M grows with the budget).
    leaf_alpha : float, default=0.0
        ORT-L: objective penalty per unit of that L1 norm (a lasso on the leaves).
    time_limit : float or None, default=60.0
        Solver time limit in seconds.
    rel_gap : float, default=0.0
        Relative gap at which the solver stops.
    threads : int, default=1
        Solver threads.
    random_state : int, RandomState or None, default=0
        Seeds the solver and the CART start.
    init : "cart", None, greedy.Tree or fitted tree estimator, default="cart"
        Warm start: :class:`greedy.CARTRegressor` of depth ``max_depth`` with the
        criterion of ``loss`` and the same ``min_samples_leaf``; no start (None); or a
        given regression tree of depth <= max_depth. Only the start's partition
        (splits, leaf assignment) is given to the solver, which completes the leaf
        models by an LP — for ORT-L too, so greedy's linear-leaf trees give the same
        start as their constant-leaf twins. ``result_.start_objective`` is the
        objective of the start tree with constant leaves (for ORT-L an upper bound on
        the solver's completion, which ``result_.trace`` records as the "start"
        event). A start is never worse than what ``fit`` returns.
    solver : str, default="highs"
        "highs" or "pyomo:<name>" (see :class:`OptimalTreeClassifier`).
    constraints : callable or None, default=None
        ``constraints(model)`` adds linear Pyomo constraints over a mirror of the
        variable blocks (``a, b, d, z, l, beta, f`` and ``wp, wm`` for linear leaves).
    node_limit : int or None, default=None
        Branch-and-bound node limit.
    memory_budget : int or None, default=None
        Bytes allowed to build the model (None: a quarter of available memory).
    verbose : bool, default=False
        Print the solver log.

    Attributes
    ----------
    tree_ : greedy.Tree
        The fitted regression tree in original feature units (``leaf_coef`` /
        ``leaf_intercept`` for linear leaves).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has string feature names.
    result_ : SolveResult
        Solve statistics; ``result_.objective`` is the objective of ``tree_``
        recomputed from the data (differences from the solver's value are explained in
        ``result_.message``).
    init_tree_ : greedy.Tree or None
        The start given to the solver (canonical on the training data), None without.

    Examples
    --------
    >>> import numpy as np
    >>> from optitree import OptimalTreeRegressor
    >>> X = np.linspace(0, 1, 30)[:, None]
    >>> y = np.where(X[:, 0] <= 0.4, 1 + 2 * X[:, 0], 3 - X[:, 0])
    >>> reg = OptimalTreeRegressor(max_depth=1, leaf_model="linear").fit(X, y)
    >>> bool(np.allclose(reg.predict(X), y))
    True
    """

    _parameter_constraints: dict = {
        "max_depth": [Interval(numbers.Integral, 1, None, closed="left")],
        "formulation": [StrOptions({"ort"})],
        "leaf_model": [StrOptions(set(LEAF_MODELS))],
        "loss": [StrOptions(set(LOSSES))],
        "alpha": [Interval(numbers.Real, 0, None, closed="left")],
        "min_samples_leaf": [Interval(numbers.Integral, 1, None, closed="left")],
        "coef_budget": [Interval(numbers.Real, 0, None, closed="neither")],
        "leaf_alpha": [Interval(numbers.Real, 0, None, closed="left")],
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
        formulation="ort",
        leaf_model="constant",
        loss="absolute",
        alpha=0.0,
        min_samples_leaf=1,
        coef_budget=2.0,
        leaf_alpha=0.0,
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
        self.leaf_model = leaf_model
        self.loss = loss
        self.alpha = alpha
        self.min_samples_leaf = min_samples_leaf
        self.coef_budget = coef_budget
        self.leaf_alpha = leaf_alpha
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

    # solver choice, seeding, result notes and the tree accessors work exactly as in the classifier
    __sklearn_is_fitted__ = OptimalTreeClassifier.__sklearn_is_fitted__
    _check_solver = OptimalTreeClassifier._check_solver
    _seed = OptimalTreeClassifier._seed
    _set_result = OptimalTreeClassifier._set_result
    _validate_X_predict = OptimalTreeClassifier._validate_X_predict
    apply = OptimalTreeClassifier.apply
    decision_path = OptimalTreeClassifier.decision_path
    get_depth = OptimalTreeClassifier.get_depth
    get_n_leaves = OptimalTreeClassifier.get_n_leaves

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Solve the MIP for the training data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Finite numeric features.
        y : array-like of shape (n_samples,)
            Finite real targets.
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative weights (weight-0 samples are left out of the model).

        Returns
        -------
        self
        """
        solver_name = self._check_solver()
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        seed = self._seed()
        form = ORTFormulation(
            X, y, depth=self.max_depth, leaf_model=self.leaf_model, loss=self.loss, coef_budget=self.coef_budget,
            leaf_alpha=self.leaf_alpha, alpha=self.alpha, min_samples_leaf=self.min_samples_leaf,
            sample_weight=sample_weight,
        )
        n_rows, n_cols, nnz = form.estimate_size()
        budget = None if self.memory_budget is None else int(self.memory_budget)
        check_size(n_rows, n_cols, nnz, budget, hint="use fewer samples or features, or a lower max_depth")
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
        if self.loss == "squared":
            notes.append("squared error solved through a piecewise-linear outer approximation (HiGHS has no MIQP): "
                         "objective is the exact squared error of tree_, bound the approximation's lower bound")

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
        self.init_tree_ = start_tree
        self._set_result(result, notes)
        return self

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
            tree, source = self._init_tree(X.shape[1])
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

    def _fit_cart(self, X, y, sample_weight, seed) -> Tree:
        """Greedy CART regressor of ``max_depth`` (criterion of ``loss``, same ``min_samples_leaf``)."""
        est = CARTRegressor(
            criterion=_CRITERION[self.loss], max_depth=self.max_depth, min_samples_leaf=self.min_samples_leaf,
            random_state=seed,
        )
        return est.fit(X, y, sample_weight=sample_weight).tree_

    def _init_tree(self, n_features: int) -> tuple[Tree, str]:
        """The regression start tree given as ``init`` and its source label ("user" / "previous-depth")."""
        init, source = self.init, "user"
        if isinstance(init, Tree):
            tree = init
        elif hasattr(init, "fit") and hasattr(init, "predict"):
            fitted = getattr(init, "tree_", None)
            if fitted is None:
                raise ValueError(f"init estimator {type(init).__name__} is not fitted (it has no tree_)")
            tree = fitted if isinstance(fitted, Tree) else Tree.from_sklearn(init)
            if isinstance(init, OptimalTreeRegressor) and tree.max_depth < self.max_depth:
                source = "previous-depth"
        else:
            raise TypeError(
                f"init must be 'cart', None, a greedy.Tree or a fitted tree estimator, got {type(init).__name__}"
            )
        if tree.task != "regression":
            raise ValueError("init must be a regression tree")
        if tree.n_features != n_features:
            raise ValueError(f"init tree has {tree.n_features} features, X has {n_features}")
        if tree.max_depth > self.max_depth:
            raise ValueError(f"init tree has depth {tree.max_depth} > max_depth={self.max_depth}")
        return tree, source

    def predict(self, X):
        """Predicted targets."""
        return self.tree_.predict(self._validate_X_predict(X))
