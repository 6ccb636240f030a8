"""What :class:`CARTClassifier` and :class:`CARTRegressor` share: validated fit data, the fitted-tree
accessors, and :class:`BaseCART` (parameters, growth, pruning, linear leaves).

See :mod:`greedy._classes` for the float32 conversion, missing values and categorical features.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, _fit_context, clone
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, RealNotInt, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from ._inputs import check_category_codes, check_text_columns, encode_category_columns, nan_seen
from ._builder import GrowthParams, TreeBuilder
from ._criteria import make_criterion
from ._hist import MAX_BINS_LIMIT, FeatureBinner, HistSplitter
from ._prune import cost_complexity_path, prune_cost_complexity, prune_reduced_error
from ._scaling import column_scales, extreme_scale, feature_dtype
from ._splitter import ExactSplitter
from ._tree import Tree

DTYPE = np.float32  # scikit-learn's tree feature dtype: thresholds are midpoints of float32 values
MAX_CATEGORIES = 1024  # categorical codes must lie in [0, MAX_CATEGORIES)


@dataclass
class FitData:
    """Validated training inputs, as the builders consume them."""

    X: np.ndarray  # (n_samples, n_features) float32
    y: np.ndarray  # class codes (classification) or float64 targets
    sample_weight: np.ndarray  # (n_samples,) float64, non-negative, positive sum
    unit_weight: bool  # no sample_weight was given (all ones)
    n_classes: int | None
    n_categories: np.ndarray  # (n_features,) categories per categorical feature, 0 for numeric ones


class FittedTreeMixin:
    """Accessors of a fitted ``tree_`` (a :class:`greedy.Tree`), shared by every tree estimator.

    The estimator provides ``_validate_X_predict(X)`` (its own input checks) and may override
    :meth:`_routing_tree` (the tree that routes ``X``).
    """

    def _routing_tree(self, X) -> Tree:
        """The tree that routes the validated ``X``: ``tree_``."""
        return self.tree_

    def apply(self, X) -> np.ndarray:
        """Index (in ``tree_``) of the leaf each sample reaches."""
        X = self._validate_X_predict(X)
        return self._routing_tree(X).apply(X)

    def decision_path(self, X):
        """CSR indicator matrix (n_samples, n_nodes) of the nodes each sample passes through."""
        X = self._validate_X_predict(X)
        return self._routing_tree(X).decision_path(X)

    def get_depth(self) -> int:
        """Depth of the fitted tree (a single leaf has depth 0)."""
        check_is_fitted(self)
        return self.tree_.max_depth

    def get_n_leaves(self) -> int:
        """Number of leaves of the fitted tree."""
        check_is_fitted(self)
        return self.tree_.n_leaves


class BaseCART(FittedTreeMixin, BaseEstimator):
    """Shared fit/predict machinery of the greedy CART estimators (not for direct use)."""

    _task = ""

    _parameter_constraints: dict = {
        "max_depth": [Interval(Integral, 1, None, closed="left"), None],
        "min_samples_split": [
            Interval(Integral, 2, None, closed="left"),
            Interval(RealNotInt, 0.0, 1.0, closed="right"),
        ],
        "min_samples_leaf": [
            Interval(Integral, 1, None, closed="left"),
            Interval(RealNotInt, 0.0, 1.0, closed="neither"),
        ],
        "min_weight_fraction_leaf": [Interval(Real, 0.0, 0.5, closed="both")],
        "max_features": [
            Interval(Integral, 1, None, closed="left"),
            Interval(RealNotInt, 0.0, 1.0, closed="right"),
            StrOptions({"sqrt", "log2"}),
            None,
        ],
        "random_state": ["random_state"],
        "max_leaf_nodes": [Interval(Integral, 2, None, closed="left"), None],
        "min_impurity_decrease": [Interval(Real, 0.0, None, closed="left")],
        "splitter": [StrOptions({"best", "hist"})],
        "max_bins": [Interval(Integral, 2, MAX_BINS_LIMIT, closed="both")],
        "ccp_alpha": [Interval(Real, 0.0, None, closed="left")],
        "categorical_features": [StrOptions({"from_dtype"}), "array-like", None],
    }

    def __init__(
        self,
        *,
        criterion,
        max_depth=None,
        min_samples_split=2,
        min_samples_leaf=1,
        min_weight_fraction_leaf=0.0,
        max_features=None,
        random_state=None,
        max_leaf_nodes=None,
        min_impurity_decrease=0.0,
        splitter="best",
        max_bins=255,
        ccp_alpha=0.0,
        categorical_features="from_dtype",
    ):
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.random_state = random_state
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.splitter = splitter
        self.max_bins = max_bins
        self.ccp_alpha = ccp_alpha
        self.categorical_features = categorical_features

    # ------------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Grow the tree on ``(X, y)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training features (converted to float32, see the module docstring).
        y : array-like of shape (n_samples,)
            Class labels (any hashable, sortable values) or regression targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Non-negative weights; samples of weight 0 are ignored by the splits.

        Returns
        -------
        self
        """
        data = self._fit_data(X, y, sample_weight)
        self.tree_ = self._finish_tree(self._grow_tree(data), data)
        self._nan_seen = nan_seen(self.tree_, data.X, data.sample_weight)
        return self

    def _finish_tree(self, tree: Tree, data: FitData) -> Tree:
        """Post-process a grown tree: minimal cost-complexity pruning at ``ccp_alpha``."""
        return prune_cost_complexity(tree, self.ccp_alpha)

    def cost_complexity_pruning_path(self, X, y, sample_weight=None):
        """Minimal cost-complexity pruning path of the tree grown on ``(X, y)`` with ``ccp_alpha=0``.

        Returns
        -------
        sklearn.utils.Bunch
            ``ccp_alphas``: effective alphas of the successive weakest-link prunings (from 0);
            ``impurities``: total weighted leaf impurity of each pruned subtree. Equal to
            scikit-learn's path for the same tree (see :mod:`greedy._prune`).
        """
        est = clone(self).set_params(ccp_alpha=0.0)
        est.fit(X, y, sample_weight=sample_weight)
        return cost_complexity_path(est.tree_)

    def prune_reduced_error(self, X_val, y_val, sample_weight=None):
        """Reduced-error pruning of the fitted tree on held-out data; returns ``self``.

        Bottom-up, a branch becomes a leaf when the (weighted) validation error of the leaf —
        misclassifications, or squared errors for regression — is not larger than the
        branch's. Ties prune, so branches no validation sample reaches are collapsed. See
        :func:`greedy._prune.prune_reduced_error`.
        """
        X = self._validate_X_predict(X_val)
        y = np.asarray(y_val)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(f"y_val must have shape ({X.shape[0]},), got {y.shape}")
        if self._task == "classification":
            codes = np.searchsorted(self.classes_, y)
            known = (codes < self.classes_.shape[0]) & (self.classes_[np.minimum(codes, self.classes_.shape[0] - 1)] == y)
            if not np.all(known):
                raise ValueError(f"y_val contains labels not seen in fit: {np.unique(y[~known])[:5].tolist()}")
            y = codes
        sw = None if sample_weight is None else _check_sample_weight(sample_weight, X, dtype=np.float64,
                                                                     ensure_non_negative=True)
        pruned = prune_reduced_error(self._routing_tree(X), X, y, sw)
        if self.tree_.missing_left is None:
            pruned.missing_left = None  # routing by training weights stays implicit
        self.tree_ = pruned
        self._nan_seen = None  # the training rows are gone: the exports annotate every split
        return self

    def _fit_data(self, X, y, sample_weight) -> FitData:
        check_text_columns(X)
        X = self._encode_categorical_columns(X, fitting=True)
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_all_finite="allow-nan",
                             y_numeric=self._task == "regression")
        self._feature_dtype = feature_dtype(X)
        X = X.astype(self._feature_dtype, copy=False)
        self.is_categorical_ = self._categorical_mask(X.shape[1])
        self.n_categories_ = self._check_codes(X, fitting=True)
        n_classes = None
        if self._task == "classification":
            check_classification_targets(y)
            self.classes_, y = np.unique(y, return_inverse=True)
            self.n_classes_ = n_classes = int(self.classes_.shape[0])
        else:
            y = np.asarray(y, dtype=np.float64)
            if not np.all(np.isfinite(y)):
                raise ValueError("y contains NaN or infinity")
        unit_weight = sample_weight is None
        sample_weight = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        with np.errstate(over="ignore"):
            total_weight = sample_weight.sum()
        if not np.isfinite(total_weight):
            raise ValueError(f"sample_weight must sum to at most {np.finfo(np.float64).max:.3g} (node weights are "
                             "stored as sums of weights); rescale sample_weight")
        return FitData(X, y, sample_weight, unit_weight, n_classes, self.n_categories_)

    # ------------------------------------------------------------------ categorical features
    def _encode_categorical_columns(self, X, fitting: bool):
        """Replace pandas categorical columns by their codes (NaN for missing values).

        The columns are those with a categorical dtype in ``fit``; at prediction time their
        values are looked up in the categories seen in ``fit`` (any dtype), and a value
        unseen in ``fit`` gets the code ``MAX_CATEGORIES`` (it then follows ``default_left``).
        """
        pd = sys.modules.get("pandas")  # a DataFrame implies pandas is imported
        is_frame = pd is not None and isinstance(X, pd.DataFrame)
        if fitting:
            self._pandas_categories = {} if not is_frame else {
                i: X.iloc[:, i].cat.categories for i, dtype in enumerate(X.dtypes) if str(dtype) == "category"}
        if not is_frame or not self._pandas_categories:
            return X
        return encode_category_columns(X, self._pandas_categories, unseen=MAX_CATEGORIES)

    def _categorical_mask(self, n_features: int) -> np.ndarray:
        """Boolean mask of the categorical features (``categorical_features``)."""
        spec = self.categorical_features
        from_dtype = np.zeros(n_features, bool)
        from_dtype[list(self._pandas_categories)] = True
        if isinstance(spec, str):  # "from_dtype"
            return from_dtype
        mask = np.zeros(n_features, bool)
        if spec is not None:
            spec = np.asarray(spec)
            if spec.dtype == bool and spec.shape == (n_features,):
                mask = spec.copy()
            elif spec.dtype.kind in "iu" and spec.ndim == 1 and np.all((spec >= 0) & (spec < n_features)):
                mask[spec] = True
            else:
                raise ValueError(
                    f"categorical_features must be 'from_dtype', None, indices in [0, {n_features}) or a boolean "
                    f"mask of {n_features} entries; got {self.categorical_features!r}"
                )
        if np.any(from_dtype & ~mask):
            raise ValueError(f"columns {np.flatnonzero(from_dtype & ~mask).tolist()} have a pandas categorical "
                             "dtype but are not in categorical_features")
        return mask

    def _check_codes(self, X, fitting: bool) -> np.ndarray:
        """Check categorical codes (integers in ``[0, MAX_CATEGORIES)`` or NaN); at fit, count categories.

        At prediction time codes at or beyond the number of categories seen in ``fit`` are
        replaced, in place, by ``MAX_CATEGORIES``: unseen categories follow ``default_left``.
        """
        n_categories = np.zeros(X.shape[1], np.intp) if fitting else self.n_categories_
        features = np.flatnonzero(self.is_categorical_)
        check_category_codes(X, features, MAX_CATEGORIES if fitting else MAX_CATEGORIES + 1)  # + the unseen code
        for f in features:
            v = X[:, f]
            known = v[~np.isnan(v)]
            if fitting:
                n_categories[f] = int(known.max()) + 1 if known.size else 1
            else:
                v[v >= n_categories[f]] = MAX_CATEGORIES
        return n_categories

    def _growth_params(self, data: FitData) -> GrowthParams:
        """Resolve the stopping hyper-parameters to absolute numbers (scikit-learn's rules)."""
        n = data.X.shape[0]
        msl = self.min_samples_leaf
        msl = msl if isinstance(msl, Integral) else int(np.ceil(msl * n))
        mss = self.min_samples_split
        mss = mss if isinstance(mss, Integral) else max(2, int(np.ceil(mss * n)))
        return GrowthParams(
            max_depth=np.iinfo(np.int32).max if self.max_depth is None else int(self.max_depth),
            min_samples_split=max(int(mss), 2 * int(msl)),
            min_samples_leaf=int(msl),
            min_weight_leaf=self.min_weight_fraction_leaf * float(data.sample_weight.sum()),
            min_impurity_decrease=float(self.min_impurity_decrease),
            max_leaf_nodes=self.max_leaf_nodes,
        )

    def _resolve_max_features(self, n_features: int) -> int:
        mf = self.max_features
        if mf is None:
            return n_features
        if mf == "sqrt":
            return max(1, int(np.sqrt(n_features)))
        if mf == "log2":
            return max(1, int(np.log2(n_features)))
        if isinstance(mf, Integral):
            return min(int(mf), n_features)
        return max(1, int(mf * n_features))

    def _grow_tree(self, data: FitData) -> Tree:
        """Grow with :class:`~greedy._builder.TreeBuilder` and the split search ``splitter`` selects.

        Extreme magnitudes (:mod:`greedy._scaling`): float64 features are searched on
        power-of-two scaled columns, extreme sample weights divided by a power of two; both are
        undone on the grown tree.
        """
        w_scale = extreme_scale(data.sample_weight)
        params = self._growth_params(data)
        params.min_weight_leaf /= w_scale
        self.max_features_ = self._resolve_max_features(data.X.shape[1])
        x_scale = np.ones(data.X.shape[1])
        if data.X.dtype == np.float64:  # features float32 cannot hold
            x_scale = np.where(data.n_categories > 0, 1.0, column_scales(data.X))
        X = data.X / x_scale if data.X.dtype == np.float64 else data.X
        criterion = make_criterion(self._criterion_name(), self._task, data.y, data.sample_weight, data.n_classes, X)
        splitter = self._splitter(X, criterion, params, data)
        learns_missing = self.splitter != "hist" and bool(np.isnan(X).any())
        tree = TreeBuilder(splitter, criterion, params, self._task, with_missing=learns_missing).build(
            data.sample_weight / w_scale)
        tree.weighted_n_node_samples *= w_scale
        if self._task == "classification":
            tree.value *= w_scale
        numeric = ~tree.is_leaf & ~tree.categorical_nodes
        tree.threshold[numeric] *= x_scale[tree.feature[numeric]]
        return tree

    def _splitter(self, X, criterion, params: GrowthParams, data: FitData):
        """The split search of ``splitter``: exact sorted scan or histograms (:mod:`greedy._hist`)."""
        options = dict(min_samples_leaf=params.min_samples_leaf, min_weight_leaf=params.min_weight_leaf,
                       max_features=self.max_features_, random_state=check_random_state(self.random_state),
                       unit_weight=data.unit_weight)
        if self.splitter == "best":
            return ExactSplitter(X, criterion, n_categories=data.n_categories, **options)
        if data.n_categories.any():
            raise ValueError("splitter='hist' does not support categorical features; use splitter='best'")
        binner = FeatureBinner(self.max_bins).fit(X)
        return HistSplitter(X, binner.transform(X), binner.n_bins_, criterion, **options)

    # ------------------------------------------------------------------ predict
    def _routing_tree(self, X) -> Tree:
        """``tree_``; for NaN in ``X`` and a tree grown on complete data, ``tree_`` routing NaN
        by its children's training weights (:meth:`greedy.Tree.with_weight_routing`)."""
        if self.tree_.missing_left is None and self._supports_missing() and np.isnan(X).any():
            return self.tree_.with_weight_routing()
        return self.tree_

    def _validate_X_predict(self, X) -> np.ndarray:
        check_is_fitted(self)
        check_text_columns(X)
        X = self._encode_categorical_columns(X, fitting=False)
        X = validate_data(self, X, dtype=np.float64, reset=False, ensure_all_finite="allow-nan")
        if getattr(self, "_feature_dtype", DTYPE) == DTYPE:
            with np.errstate(over="ignore"):  # beyond float32: +-inf, on the same side of every threshold
                X = X.astype(DTYPE).astype(np.float64)
        self._check_codes(X, fitting=False)
        return X

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = self._supports_missing()
        return tags

    def _criterion_name(self) -> str:
        """The registered criterion grown with (``criterion``, resolved where it may be None)."""
        return self.criterion

    def _supports_missing(self) -> bool:
        """Whether the chosen options accept NaN in ``X`` (the histogram search does not)."""
        return self.splitter != "hist"

    @property
    def feature_importances_(self) -> np.ndarray:
        """Normalised total weighted impurity decrease brought by each feature."""
        check_is_fitted(self)
        return self.tree_.compute_feature_importances()
