"""OptimalTreeRegressor: a scikit-learn estimator around the ORT / ORT-L formulations."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import RegressorMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import validate_data

from greedy import CARTRegressor

from ..heuristics import greedy_coef_budget
from ..pipeline import parse_acceleration
from ._inputs import encode_categories
from ._base import _OptimalTreeBase
from ..formulations import FORMULATIONS, LEAF_MODELS, LOSSES, formulation_names
from ..problem import get_loss

__all__ = ["OptimalTreeRegressor"]


class OptimalTreeRegressor(RegressorMixin, _OptimalTreeBase):
    """Depth-bounded optimal regression tree, certified (ORT / ORT-L; the exact engine for constant leaves).

    The tree minimises, on the training data,

    .. math:: \\frac{\\ell(T)}{\\hat L} + \\alpha\\, S(T) + \\lambda\\, \\|W(T)\\|_1

    with :math:`\\ell(T)` the weighted absolute (or squared) error, :math:`\\hat L` that of
    the best constant prediction (weighted median / mean), :math:`S(T)` the number of
    splits and :math:`\\|W(T)\\|_1` the L1 norm of the linear leaves' coefficients in
    target ranges over the training box (:mod:`optitree.formulations.ort`).
    ``result_.objective`` and ``result_.bound`` are in the data's units,
    :math:`\\ell(T) + \\hat L (\\alpha S(T) + \\lambda \\|W(T)\\|_1)` (the weighted error when
    both penalties are 0); ``result_.normalized_objective`` and ``normalized_bound`` are the
    objective above.

    With constant leaves the exact engine (:mod:`optitree.exact`, squared or absolute error,
    every midpoint threshold) settles the fit by default: without user ``constraints`` its
    proof is the certificate and no MIP is solved; with them its tree is the MIP's start
    and its bounds the root bound row and screening (``acceleration``).

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
    loss : {"squared", "absolute"}, default="squared"
        "squared" (scikit-learn's default): the exact engine optimises it exactly; the
        MIP (HiGHS cannot solve mixed-integer quadratic programs) minimises a
        piecewise-linear outer approximation of the squared error (relative
        underestimate <= 0.83 %), a valid lower bound. The returned tree's constant
        leaves are weighted means; ``result_.objective`` is its *exact* squared error,
        so ``result_.gap`` is honest and ``proven_optimal`` is True only if the gap
        closes (else ``result_.status`` is ``"error"``, never ``"optimal"``:
        :mod:`optitree.pipeline._certificate`). "absolute": weighted median leaves, exact in the
        engine and the MIP.
    alpha : float, default=0.0
        Penalty per split, as a fraction of the baseline loss.
    min_samples_leaf : int, default=1
        Minimum number of training samples per leaf.
    coef_budget : float or "auto", default="auto"
        ORT-L: L1 budget of each leaf's coefficients,
        ``Σ_j |coef_j| · range(x_j) <= coef_budget · range(y)`` (ranges over the
        training data): a leaf's linear part varies by at most ``coef_budget`` target
        ranges over the training box. Larger budgets allow steeper leaves and loosen
        the MIP (its big-M grows with the budget). "auto": the smallest budget (in
        tenths, at least 2) that holds greedy linear-leaf CART's leaves at the same depth
        and minimum leaf size (:func:`optitree.heuristics.greedy_coef_budget`), so the
        greedy tree is in the model; the value used is ``coef_budget_``.
    leaf_alpha : float, default=0.0
        ORT-L: objective penalty per unit of that L1 norm (a lasso on the leaves).
    feature_scaling : {"minmax", "rank"}, default="minmax"
        Splits only: how features are mapped to ``[0, 1]`` in the model. "minmax":
        linear scaling. "rank": each value becomes its rank among the feature's
        distinct values over (their number - 1) — the same training partitions and
        trees, but every per-feature gap ``ε_j >= 1 / (n_values - 1)``; use it when
        min-max gaps fall near the solver's feasibility tolerance (the formulation
        warns then). Linear leaves always use min-max scaled features.
    time_limit : float or None, default=60.0
        Solver time limit in seconds.
    rel_gap : float, default=0.0
        Relative gap at which the solver stops.
    threads : int, default=1
        Solver threads: HiGHS's, and the exact engine's root search at depth >= 3 (same optimum;
        native threads of this process).
    random_state : int, RandomState or None, default=0
        Seeds the solver and the CART start.
    init : "cart", None, greedy.Tree or fitted tree estimator, default="cart"
        Warm start: :class:`greedy.CARTRegressor` of depth ``max_depth`` with the
        criterion of ``loss`` and the same ``min_samples_leaf``; no start (None); or a
        given regression tree of depth <= max_depth. The start is the better of it and
        the exact engine's constant-leaf tree; for ORT-L it is then improved by
        :func:`optitree.heuristics.improve_linear_leaves` (leaves refitted within
        ``coef_budget``, splits re-chosen; ``result_.start_source == "heuristic"``), and a
        linear-leaf start within the budget keeps its leaf models. ``result_.start_objective``
        is its objective. A start is never worse than what ``fit`` returns.
    solver : str, default="highs"
        "highs", "pyomo:<name>" (see :class:`OptimalTreeClassifier`), or "dp": the exact
        engine alone (constant leaves, no user ``constraints``).
    acceleration : str, default="all"
        How the exact engine helps (see :class:`OptimalTreeClassifier`): "all", "none",
        or "+"-joined stages from "start", "proof", "rows", "screening". Linear leaves
        use "start" only: the engine's constant-leaf optimum is no bound for them.
    allowed_features : array-like of bool or None, default=None
        Features each split may use, as in :class:`OptimalTreeClassifier`; enforced in
        the MIP and honoured by the engine.
    max_distinct_features : int or None, default=None
        The tree splits on at most this many distinct features, as in
        :class:`OptimalTreeClassifier`.
    max_bins : int >= 2 or None, default=None
        Thresholds at quantile bin edges, as in :class:`OptimalTreeClassifier`.
    max_category_subsets : int or "auto", default="auto"
        A categorical feature (pandas categorical column) with at most this many levels
        (categories seen in ``fit``, plus one for missing values) splits on every subset of
        its levels (``2**(L-1) - 1`` splits: 511 for 10); "auto": 10 up to depth 2, 7 at
        depth 3, 6 deeper (:data:`~optitree.split_space.AUTO_CATEGORY_SUBSETS`, measured).
        Above it on one-vs-rest, the category-order prefixes and CART's own subsets, so
        CART's tree stays in the space.
        Features with NaN in ``fit`` split with NaN sent to either side (scikit-learn's rule).
        ``result_.split_space`` records the space a proof holds over (:mod:`optitree.split_space`)
        and where ``tree_`` lies: a start that splits NaN rows between both children (greedy
        CART's) is returned, uncertified, when it beats the space's tree on the training data.
    work_limit : int or None, default=None
        A deterministic budget for the exact engine (its work units: kernel calls weighted by
        rows, :func:`optitree.exact.solve`; the engine then searches on one thread): the same data
        and ``work_limit`` give the same tree and bound on any machine and load. A fit the engine cannot finish
        within it ends with the engine's best tree and bound (status ``"work_limit"``; a MIP has
        no deterministic budget, so none is solved). ``time_limit`` still applies.
    constraints : callable or None, default=None
        ``constraints(model)`` adds linear Pyomo constraints over a mirror of the
        variable blocks (``a, b, d, z, l, beta, f`` and ``wp, wm`` for linear leaves).
    node_limit : int or None, default=None
        Branch-and-bound node limit.
    memory_budget : int or None, default=None
        Bytes allowed to build and solve the model (None: three quarters of the available
        memory; see :func:`optitree.model._memory.estimate_peak_bytes`).
    verbose : int or bool, default=False
        1: a fit longer than 2 s shows one progress line on stderr (incumbent objective,
        bound, gap, elapsed time, nodes); 2: the raw solver log.

    Attributes
    ----------
    tree_ : greedy.Tree
        The fitted regression tree in original feature units (``leaf_coef`` /
        ``leaf_intercept`` for linear leaves).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has string feature names.
    categories_ : dict
        ``{column index: category labels}`` of the pandas categorical columns of ``X``
        (see :class:`OptimalTreeClassifier`).
    result_ : SolveResult
        Solve statistics, in the data's units (``result_.objective_units``; the normalised
        objective beside them); ``result_.objective`` is the objective of ``tree_``
        recomputed from the data (differences from the solver's value are explained in
        ``result_.message``).
        ``result_.bound`` is a valid lower bound: the solver's dual bound, raised to 0
        when below (every objective term is non-negative; a solver stopped before its
        root LP can report far less — noted in ``result_.message``), and
        ``result_.gap`` is HiGHS's ``|objective - bound| / |objective|`` of these two.
        A solver's optimality claim is kept only if it holds for ``tree_`` in the
        user's units (:mod:`optitree.pipeline._certificate`; targets and weights are scaled
        to order one inside the model), else it is withdrawn with a
        :class:`~optitree.pipeline._certificate.CertificateWarning`.
    init_tree_ : greedy.Tree or None
        The start given to the solver (canonical on the training data), None without.
    coef_budget_ : float
        The L1 budget the model used (``coef_budget``, or the value "auto" chose).
    model_ : ModelSpec
        The MIP handed to the solver (:class:`optitree.model.ModelSpec`, with user
        constraints); :meth:`write_model` writes it as LP or MPS. It is kept with the
        estimator (and pickled with it).

    Warns
    -----
    ConvergenceWarning (from ``fit``)
        When ``time_limit``, ``node_limit`` or ``work_limit`` ended the fit before a proof
        (``result_.status`` names the limit; the message gives it and the gap).

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

    _task = "regression"
    _parameter_constraints: dict = {
        **_OptimalTreeBase._parameter_constraints,
        "formulation": [StrOptions(formulation_names("regression"))],
        "leaf_model": [StrOptions(set(LEAF_MODELS))],
        "loss": [StrOptions(set(LOSSES))],
        "coef_budget": [Interval(numbers.Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "leaf_alpha": [Interval(numbers.Real, 0, None, closed="left")],
        "feature_scaling": [StrOptions({"minmax", "rank"})],
        "acceleration": [str],
        "allowed_features": ["array-like", None],
        "max_distinct_features": [Interval(numbers.Integral, 1, None, closed="left"), None],
    }

    def __init__(
        self,
        max_depth=2,
        formulation="ort",
        leaf_model="constant",
        loss="squared",
        alpha=0.0,
        min_samples_leaf=1,
        coef_budget="auto",
        leaf_alpha=0.0,
        feature_scaling="minmax",
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
        acceleration="all",
        allowed_features=None,
        max_distinct_features=None,
        max_category_subsets="auto",
        max_bins=None,
        work_limit=None,
    ):
        self.max_depth = max_depth
        self.formulation = formulation
        self.leaf_model = leaf_model
        self.loss = loss
        self.alpha = alpha
        self.min_samples_leaf = min_samples_leaf
        self.coef_budget = coef_budget
        self.leaf_alpha = leaf_alpha
        self.feature_scaling = feature_scaling
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
        self.acceleration = acceleration
        self.allowed_features = allowed_features
        self.max_distinct_features = max_distinct_features
        self.max_category_subsets = max_category_subsets
        self.max_bins = max_bins
        self.work_limit = work_limit

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit the optimal tree (the exact engine, the MIP or both, see ``acceleration``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Numeric features (NaN allowed where the formulation routes it, see
            ``max_category_subsets``); pandas categorical columns split on subsets of their
            levels (:mod:`optitree.split_space`).
        y : array-like of shape (n_samples,)
            Finite real targets.
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative weights (weight-0 samples are left out of the model).

        Returns
        -------
        self
        """
        self._stages = parse_acceleration(self.acceleration)
        if self.solver == "dp":
            if self.constraints is not None:
                raise ValueError("solver='dp' (the exact engine) takes no user constraints; use solver='highs'")
            if self.leaf_model != "constant":
                raise ValueError("solver='dp' builds constant-leaf trees; leaf_model='linear' needs a MIP solver")
        X, self.categories_ = encode_categories(X)
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, ensure_all_finite="allow-nan")
        if y.dtype.kind not in "biuf":
            raise ValueError(f"{type(self).__name__} needs numeric targets, got y of dtype {y.dtype}: map them to "
                             f"numbers, or use OptimalTreeClassifier for labels")
        y = y.astype(np.float64)  # integer targets: no int64 arithmetic (overflow near 2**63) in the losses
        if y.size and np.isfinite(y).all():
            span = float(y.max()) - float(y.min())
            if 0 < span < 2.0 ** -1000:
                raise ValueError(f"the targets span {span:.3g} ({y.min():.4g} .. {y.max():.4g}), below 2**-1000 "
                                 f"(subnormal differences) where the model's target units overflow: multiply y by one "
                                 f"constant (e.g. 1e10) and divide the predictions by it")
        self._parse_allowed_features(X.shape[1])
        self._fit_tree(X, y, sample_weight)
        return self

    @property
    def _problem_loss(self) -> str:
        return self.loss

    def _engine_start_only(self):
        """The engine settles constant-leaf fits and starts linear-leaf ones (which can beat its optimum)."""
        return self.leaf_model == "linear"

    def _progress_units(self, form):
        return f"{self.loss} error" + ("" if self.alpha == 0 else " + alpha/split"), form.error_scale

    def _formulation(self, problem, start_tree=None):
        self.coef_budget_ = self.coef_budget
        if self.coef_budget == "auto":
            self.coef_budget_ = 2.0 if self.leaf_model != "linear" else greedy_coef_budget(
                problem.X, problem.y, problem.weight, depth=problem.depth, min_samples_leaf=problem.min_samples_leaf)
        return FORMULATIONS[self.formulation](
            problem, leaf_model=self.leaf_model, coef_budget=self.coef_budget_, leaf_alpha=self.leaf_alpha,
            feature_scaling=self.feature_scaling,
        )

    def _fit_cart(self, X, y, sample_weight, seed):
        """Greedy CART regressor of ``max_depth`` (criterion of ``loss``, same ``min_samples_leaf``)."""
        est = CARTRegressor(
            criterion=get_loss(self.loss).criterion, max_depth=self.max_depth, min_samples_leaf=self.min_samples_leaf,
            random_state=seed, categorical_features=sorted(self.categories_) or None,
        )
        return est.fit(X, y, sample_weight=sample_weight).tree_

    def _solve_notes(self) -> list[str]:
        if self.loss == "squared":
            return ["squared error solved through a piecewise-linear outer approximation (HiGHS has no MIQP): "
                    "objective is the exact squared error of tree_, bound the approximation's lower bound"]
        return []

    def predict(self, X):
        """Predicted targets."""
        X = self._validate_X_predict(X)  # NotFittedError before fit
        return self._routing_tree(X).predict(X)
