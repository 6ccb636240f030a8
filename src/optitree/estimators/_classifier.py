"""OptimalTreeClassifier: a scikit-learn estimator around the MIP tree formulations."""

from __future__ import annotations

import numbers

import numpy as np
from sklearn.base import ClassifierMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.class_weight import compute_sample_weight
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from greedy import CARTClassifier

from ..pipeline import parse_acceleration
from ._inputs import encode_categories
from ._base import _OptimalTreeBase
from ..formulations import FORMULATIONS, formulation_names

__all__ = ["OptimalTreeClassifier"]


class OptimalTreeClassifier(ClassifierMixin, _OptimalTreeBase):
    """Depth-bounded optimal classification tree by mixed-integer programming.

    The tree minimises, on the training data,

    .. math:: \\frac{E(T)}{\\hat L} + \\alpha\\, S(T)

    with :math:`E(T)` the weighted misclassifications, :math:`\\hat L` the weighted
    error of predicting the majority class and :math:`S(T)` the number of splits
    (:mod:`optitree.formulations`). ``result_.objective`` and ``result_.bound`` are in the
    data's units, :math:`E(T) + \\alpha \\hat L S(T)` (weighted training errors when
    ``alpha = 0``); ``result_.normalized_objective`` and ``normalized_bound`` are the
    objective above.

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
    feature_scaling : {"minmax", "rank"}, default="minmax"
        "oct" only: how features are mapped to ``[0, 1]`` in the model. "minmax":
        linear scaling. "rank": each value becomes its rank among the feature's
        distinct values over (their number - 1) — the same training partitions and
        trees, but every per-feature gap ``ε_j >= 1 / (n_values - 1)``; use it when
        min-max gaps fall near the solver's feasibility tolerance (the formulation
        warns then). "flow" (binarized thresholds) and "oct-h"
        (hyperplanes over linearly scaled features) raise ValueError for "rank".
    time_limit : float or None, default=60.0
        Solver time limit in seconds.
    rel_gap : float, default=0.0
        Relative gap at which the solver stops.
    threads : int, default=1
        Solver threads: HiGHS's, and the exact engine's root search at depth >= 3 (same optimum;
        native threads of this process).
    random_state : int, RandomState or None, default=0
        Seeds the solver (``random_seed``) and the CART start.
    init : "cart", None, greedy.Tree or fitted tree estimator, default="cart"
        Warm start: greedy CART of depth ``max_depth`` with the same
        ``min_samples_leaf``, no start (None), or a given tree of depth <= max_depth
        (e.g. the previous depth's optimum). A start is never worse than what ``fit``
        returns: if the solver finds nothing better, the start itself is returned
        (noted in ``result_.message``).
    solver : str, default="highs"
        "highs" (highspy, direct), "pyomo:<name>" (the Pyomo emission solved by any
        installed Pyomo solver, e.g. "pyomo:appsi_highs", "pyomo:cbc"), or "dp": the
        exact sub-tree engine (:mod:`optitree.exact`, dynamic programming and
        branch-and-bound) alone — axis-aligned splits on every midpoint threshold, no
        user ``constraints``, no MIP.
    acceleration : str, default="all"
        How the exact engine helps the MIP ("flow" and "oct"; see
        :mod:`optitree.pipeline._engine`): "all", "none", or stages joined by "+" from
        "start" (the engine's tree as start when better and feasible), "proof" (without
        user constraints, an engine-proven tree is returned with no MIP), "rows"
        (FlowOCT root bound row), "screening" (FlowOCT root candidates that cannot beat
        the start are fixed to 0), "decompose" (FlowOCT with user ``constraints``: one
        sub-MIP per root split, best engine bound first, :mod:`optitree.pipeline._decomposition`).
        "oct-h" uses "start" only: it starts from the axis-aligned optimum, so it is never
        worse than that tree (``result_.acceleration["engine"]`` holds its objective).
        ``result_.acceleration`` records each stage.
    allowed_features : array-like of bool or None, default=None
        Features each split may use ("flow", "oct" and "dp"): a mask of shape
        ``(n_features,)`` for every split, ``(max_depth, n_features)`` per level (row 0:
        the root) or ``(2**max_depth - 1, n_features)`` per branch node in heap order
        (node ``n`` has children ``2n``, ``2n + 1``; row ``n - 1``). Enforced in the MIP
        and honoured by the exact engine, so its proofs and bounds hold under it.
    max_distinct_features : int or None, default=None
        The tree splits on at most this many distinct features ("flow", "oct" and "dp"):
        rows of the MIP (:meth:`~optitree.formulations.TreeFormulation.limit_distinct_features`)
        and honoured by the exact engine (the least optimum over every subset of that many
        features, :mod:`optitree.exact._subsets`), so its proofs and bounds hold under it.
        With more than :data:`~optitree.exact._subsets.MAX_SUBSETS` subsets the engine
        ignores the limit (its bounds stay valid, it proves nothing); ``solver="dp"``
        then raises ValueError.
    max_bins : int >= 2 or None, default=None
        scikit-learn's histogram rule: a numeric feature with more distinct values has only the
        edges of ``max_bins`` quantile bins as thresholds (``greedy.FeatureBinner``), which the
        exact engine searches far faster on large data. The proof holds over that space
        (``result_.split_space["thresholds"]`` names the binned features) and
        ``result_.split_space["all_midpoints_bound"]`` bounds the optimum over every midpoint from
        below (the binned optimum bounds it from above): what the bins cost. Only where the
        engine settles the fit (no ``constraints``, ``acceleration`` with ``proof``, constant
        leaves, axis-aligned splits); otherwise a ValueError.
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
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes, as in scikit-learn's trees: ``{label: weight}`` (missing
        labels weigh 1), "balanced" (``n_samples / (n_classes * np.bincount(y))``) or
        None (all 1). They multiply ``sample_weight``, so they weigh the errors the tree
        minimises, the start, the exact engine and ``result_.objective``.
    constraints : callable or None, default=None
        ``constraints(model)`` adds linear Pyomo constraints over a mirror of the
        formulation's variable blocks (see :func:`optitree.model._user_constraints.apply_user_constraints`).
    node_limit : int or None, default=None
        Branch-and-bound node limit.
    memory_budget : int or None, default=None
        Bytes allowed to build and solve the model (None: three quarters of the available
        memory); a model whose estimated peak (calibrated on measured fits, see
        :func:`optitree.model._memory.estimate_peak_bytes`) is larger raises
        :class:`~optitree.model._memory.ModelTooLargeError` before building.
    verbose : int or bool, default=False
        1: a fit longer than 2 s shows one progress line on stderr (incumbent training
        errors, bound, gap, elapsed time, nodes), rewritten in place on a terminal;
        2: the raw solver log.

    Attributes
    ----------
    tree_ : greedy.Tree
        The fitted tree in original feature units; node statistics recomputed on the
        training data (weighted class counts).
    classes_ : ndarray
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has string feature names.
    categories_ : dict
        ``{column index: category labels}`` of the pandas categorical columns of ``X``
        (empty without): they are split on their codes in this order, and
        :func:`~optitree.export_text` prints their labels.
    result_ : SolveResult
        Solve statistics, in the data's units (``result_.objective_units``; the normalised
        objective beside them). ``result_.objective`` is always the objective of ``tree_``
        recomputed from the data; a difference from the solver's value (or a fallback
        to the start tree) is explained in ``result_.message``.
        ``result_.bound`` is a valid lower bound: the solver's dual bound, raised to 0
        when below (every objective term is non-negative; a solver stopped before its
        root LP can report far less — noted in ``result_.message``), and
        ``result_.gap`` is HiGHS's ``|objective - bound| / |objective|`` of these two.
        ``result_.proven_optimal`` only if the solver's claim holds for ``tree_``
        (:mod:`optitree.pipeline._certificate`; sample weights are scaled to order one inside
        the model): else it is withdrawn with a
        :class:`~optitree.pipeline._certificate.CertificateWarning` and the status is
        ``"error"``, never ``"optimal"``.
    init_tree_ : greedy.Tree or None
        The start given to the solver (canonical on the training data and pruned for
        ``alpha``), None without a start.
    model_ : ModelSpec or None
        The MIP handed to the solver (:class:`optitree.model.ModelSpec`, with user
        constraints and engine rows); :meth:`write_model` writes it as LP or MPS. It is
        kept with the estimator (and pickled with it). None when no MIP was built:
        ``solver="dp"`` or a fit ended by the exact engine.

    Raises
    ------
    ValueError (from ``fit``)
        When no tree satisfies the model — with ``min_samples_leaf`` larger than the
        number of positive-weight training samples — after setting
        ``result_.status == "infeasible"``; for a single class in ``y``; for non-finite
        ``X``.

    Warns
    -----
    ConvergenceWarning (from ``fit``)
        When ``time_limit``, ``node_limit`` or ``work_limit`` ended the fit before a proof
        (``result_.status`` names the limit; the message gives it and the gap).

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

    _task = "classification"
    _size_hint = "use max_thresholds (flow), fewer samples or features, or a lower max_depth"
    _parameter_constraints: dict = {
        **_OptimalTreeBase._parameter_constraints,
        "formulation": [StrOptions(formulation_names("classification"))],
        "max_thresholds": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "feature_scaling": [StrOptions({"minmax", "rank"})],
        "acceleration": [str],
        "allowed_features": ["array-like", None],
        "max_distinct_features": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "class_weight": [dict, StrOptions({"balanced"}), None],
    }

    def __init__(
        self,
        max_depth=2,
        formulation="flow",
        alpha=0.0,
        min_samples_leaf=1,
        max_thresholds=None,
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
        class_weight=None,
        max_distinct_features=None,
        max_category_subsets="auto",
        max_bins=None,
        work_limit=None,
    ):
        self.max_depth = max_depth
        self.formulation = formulation
        self.alpha = alpha
        self.min_samples_leaf = min_samples_leaf
        self.max_thresholds = max_thresholds
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
        self.class_weight = class_weight
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
            Class labels (any hashable labels, at least two classes).
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative weights (weight-0 samples are left out of the model).

        Returns
        -------
        self
        """
        if self.max_thresholds is not None and self.formulation != "flow":
            raise ValueError(f"max_thresholds applies to formulation='flow' only, got formulation={self.formulation!r}")
        if self.feature_scaling != "minmax" and self.formulation != "oct":
            raise ValueError(
                f"feature_scaling={self.feature_scaling!r} applies to formulation='oct' only, "
                f"got formulation={self.formulation!r}"
            )
        stages = parse_acceleration(self.acceleration)
        if self.solver == "dp":
            if self.constraints is not None:
                raise ValueError("solver='dp' (the exact engine) takes no user constraints; use solver='highs'")
            if self.formulation == "oct-h":
                raise ValueError("solver='dp' builds axis-aligned trees; formulation='oct-h' needs a MIP solver")
        self._stages = stages
        X, self.categories_ = encode_categories(X)
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_all_finite="allow-nan")
        for name in ("allowed_features", "max_distinct_features"):
            if getattr(self, name) is not None and self.formulation == "oct-h":
                raise ValueError(f"{name} applies to formulation 'flow' or 'oct' (and solver='dp')")
        self._parse_allowed_features(X.shape[1])
        if not (y.ndim == 1 and y.dtype.kind in "biuU"):  # such labels are always classes (binary or multiclass)
            check_classification_targets(y)
        classes, y_enc = np.unique(y, return_inverse=True)
        if classes.size < 2:
            raise ValueError(f"{type(self).__name__} needs at least 2 classes in y, got 1 class ({classes.tolist()[0]!r})")
        if self.class_weight is not None:  # as scikit-learn's trees: class weights multiply sample weights
            sample_weight = (_check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
                             * compute_sample_weight(self.class_weight, y))
        self._fit_tree(X, y_enc, sample_weight)
        self.classes_ = classes
        return self

    def _start_ignored_by_formulation(self):
        return self.max_thresholds is None  # else the start's thresholds join the quantile ones

    def _formulation(self, problem, start_tree=None):
        required = None
        if start_tree is not None and self.max_thresholds is not None:
            split = ~start_tree.is_leaf
            required = (start_tree.feature[split], start_tree.threshold[split])
        kwargs = {
            "flow": {"max_thresholds": self.max_thresholds, "required_thresholds": required},
            "oct": {"feature_scaling": self.feature_scaling},
        }.get(self.formulation, {})
        return FORMULATIONS[self.formulation](problem, **kwargs)

    def _engine_start_only(self):
        """The engine settles or helps axis-aligned formulations (flow, oct), starts OCT-H, and is all of 'dp'.

        OCT-H starts from the axis-aligned optimum (an axis-aligned split is a hyperplane on one
        feature, with OCT-H's penalty ``alpha`` per feature used): never worse than it, while its
        bound is no bound for hyperplanes.
        """
        return self.formulation == "oct-h"

    def _progress_units(self, form):
        return ("errors" if self.alpha == 0 else "errors + alpha/split"), form.error_scale

    def _fit_cart(self, X, y_enc, sample_weight, seed):
        """Greedy CART classifier (Gini) of ``max_depth`` with the same ``min_samples_leaf``."""
        est = CARTClassifier(max_depth=self.max_depth, min_samples_leaf=self.min_samples_leaf, random_state=seed,
                             categorical_features=sorted(self.categories_) or None)
        return est.fit(X, y_enc, sample_weight=sample_weight).tree_

    # ------------------------------------------------------------------ prediction
    def predict_proba(self, X):
        """Class probabilities: the training class distribution of each sample's leaf."""
        X = self._validate_X_predict(X)
        return self._routing_tree(X).predict(X)

    def predict_log_proba(self, X):
        """Natural logarithm of :meth:`predict_proba` (``-inf`` for probability 0)."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    @property
    def n_classes_(self) -> int:
        """Number of classes seen in ``fit``."""
        check_is_fitted(self)
        return len(self.classes_)

    def predict(self, X):
        """Predicted class labels."""
        proba = self.predict_proba(X)
        return self.classes_[proba.argmax(axis=1)]
