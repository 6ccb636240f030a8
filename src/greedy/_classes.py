"""scikit-learn estimators for greedy CART: :class:`CARTClassifier` and :class:`CARTRegressor`.

``fit`` gathers validated inputs (:class:`FitData`), grows a :class:`~greedy.Tree` with the
builder the options select (:meth:`BaseCART._grow_tree`), and stores it as ``tree_``.
Features are converted to float32 exactly as scikit-learn's trees do, so on the same data
and hyper-parameters the trees are scikit-learn's (up to exact ties between candidate splits,
see :mod:`greedy._splitter`); prediction converts ``X`` to float32 too. Features that float32
cannot hold (a non-zero ``|x|`` outside ``[1.2e-38, 3.4e38]``, where scikit-learn refuses or
flushes to zero) are kept in float64 instead: each column is divided by a power of two for the
search (exact) and the thresholds are multiplied back (:mod:`greedy._scaling`).

Missing values (NaN; infinity is an error) follow C4.5: the split search ignores a feature's
missing values and a training sample with a missing split value goes down both branches
with fractional weights (see :mod:`greedy._builder`); at prediction time it reaches several
leaves and gets their weighted average (``Tree.missing_left``, stored only when the training
data had missing values; a tree grown on complete data routes a NaN met at prediction time by
its children's training weights, the same fractions). Categorical features hold
integer codes and split into two subsets of categories (see :mod:`greedy._splitter`).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils._param_validation import StrOptions

from ._cart import BaseCART, FitData
from ._criteria import criterion_names
from ._linear import fit_linear_leaves
from ._tree import Tree


class CARTClassifier(ClassifierMixin, BaseCART):
    """Greedy CART decision-tree classifier, tree for tree scikit-learn's ``DecisionTreeClassifier``.

    Splits are searched exactly (sorted scan with prefix sums, vectorised over the nodes of a
    level and the features; see :mod:`greedy._splitter`). Without ``max_leaf_nodes`` nodes grow
    depth-first; with it, best-first on the weighted impurity decrease.

    Parameters
    ----------
    criterion : {"gini", "entropy", "misclassification"} or a registered name, default="gini"
        Node impurity; ``entropy`` is in bits like scikit-learn's. See :mod:`greedy._criteria`.
    max_depth : int or None, default=None
        Maximum depth (root at depth 0); None grows until the other rules stop.
    min_samples_split : int or float, default=2
        Minimum number of samples to split a node (a fraction of ``n_samples`` if float).
    min_samples_leaf : int or float, default=1
        Minimum number of samples in each child (a fraction of ``n_samples`` if float).
    min_weight_fraction_leaf : float, default=0.0
        Minimum fraction of the total sample weight in each child.
    max_features : int, float, {"sqrt", "log2"} or None, default=None
        Number of features searched at each node, drawn at random (None: all).
    random_state : int, RandomState or None, default=None
        Seeds the per-node feature draws when ``max_features`` is set.
    max_leaf_nodes : int or None, default=None
        Grow best-first until this many leaves.
    min_impurity_decrease : float, default=0.0
        A node splits only if ``N_t / N * (imp - N_R / N_t * imp_R - N_L / N_t * imp_L)``
        (weighted sums) is at least this value.
    splitter : {"best", "hist"}, default="best"
        ``"best"``: exact sorted scan. ``"hist"``: histogram search (:mod:`greedy._hist`) —
        features binned once at quantiles into ``max_bins`` bins, a level of nodes grown with
        one ``bincount`` per feature; much faster on large data, and the same splits as
        ``"best"`` when every feature has at most ``max_bins`` distinct values (up to exact
        ties and float32 values closer than 1e-7). Every additive criterion (``gini``,
        ``entropy``, ``squared_error``, ``correlation``, registered ones) but
        ``misclassification``; no missing values or categorical features. The growth loop,
        stopping rules and node numbering are the exact search's (:mod:`greedy._builder`).
    max_bins : int, default=255
        Bins per feature for ``splitter="hist"``, in ``[2, 65535]``.
    ccp_alpha : float, default=0.0
        Complexity parameter of minimal cost-complexity pruning (:mod:`greedy._prune`): the
        grown tree is pruned to the subtree scikit-learn's ``ccp_alpha`` gives; 0 disables it.
    categorical_features : "from_dtype", array of int, boolean mask or None, default="from_dtype"
        Categorical features (indices or mask; ``"from_dtype"``: the pandas categorical
        columns). Their values are integer codes in ``[0, 1024)`` (pandas categories are
        coded in ``fit``), NaN for missing. A categorical split sends a subset of the
        categories left; categories are ordered per node by the proportion of the node's
        majority class (classification; optimal for two classes) or by their prediction
        (regression; optimal for squared error) and the best prefix is taken. Categories
        absent from a node and codes unseen in ``fit`` go to the child with more training
        weight (``Tree.default_left``). See :mod:`greedy._splitter`.

    Missing values: NaN in ``X`` is a missing value (C4.5): the split search ignores it and
    scales each feature's gain by its known weight fraction; a sample with a missing split
    value goes to both children with weights ``w_L / (w_L + w_R)`` and ``w_R / (w_L + w_R)``
    (known training weights, stored as ``Tree.missing_left`` when ``X`` had missing values), at
    fit and at prediction, where it receives the weighted average of the leaves it reaches. A
    tree fitted on complete data stores no missing-value routing (exports show none) and sends
    a NaN met at prediction time down both children in proportion to their training weights.
    Infinity is an error.

    Attributes
    ----------
    tree_ : greedy.Tree
        The fitted tree (node ids in depth-first preorder, or creation order when best-first).
    classes_ : ndarray of shape (n_classes,)
    n_classes_ : int
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when ``X`` has string column names.
    max_features_ : int
    feature_importances_ : ndarray of shape (n_features,)
    is_categorical_ : ndarray of bool, shape (n_features,)
    n_categories_ : ndarray of int, shape (n_features,)
        Categories (largest code + 1) of each categorical feature, 0 for numeric features.

    Notes
    -----
    Tie-break among candidate splits of exactly equal gain: the lowest feature index, then the
    lowest threshold. scikit-learn draws the feature order at random, so on exact ties (common
    on small nodes and discrete data) the two libraries may choose different, equally good splits.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from greedy import CARTClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = CARTClassifier(max_depth=2, random_state=0).fit(X, y)
    >>> clf.get_depth(), clf.get_n_leaves(), round(clf.score(X, y), 2)
    (2, 3, 0.96)
    """

    _task = "classification"

    _parameter_constraints: dict = {
        **BaseCART._parameter_constraints,
        "criterion": [StrOptions(criterion_names("classification"))],
    }

    def __init__(
        self,
        *,
        criterion="gini",
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
        super().__init__(
            criterion=criterion,
            max_depth=max_depth,
            min_samples_split=min_samples_split,
            min_samples_leaf=min_samples_leaf,
            min_weight_fraction_leaf=min_weight_fraction_leaf,
            max_features=max_features,
            random_state=random_state,
            max_leaf_nodes=max_leaf_nodes,
            min_impurity_decrease=min_impurity_decrease,
            splitter=splitter,
            max_bins=max_bins,
            ccp_alpha=ccp_alpha,
            categorical_features=categorical_features,
        )

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities: the weighted class fractions of the leaf (averaged over split routes)."""
        X = self._validate_X_predict(X)
        return self._routing_tree(X).predict(X)

    def predict_log_proba(self, X) -> np.ndarray:
        """Natural logarithm of :meth:`predict_proba` (``-inf`` for probability 0)."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X) -> np.ndarray:
        """Most probable class (the first one on ties, in ``classes_`` order)."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]


class CARTRegressor(RegressorMixin, BaseCART):
    """Greedy CART decision-tree regressor, tree for tree scikit-learn's ``DecisionTreeRegressor``.

    Parameters
    ----------
    criterion : {"squared_error", "absolute_error", "linear_squared_error", "correlation"}, a registered \
name, or None, default=None
        ``squared_error``: leaves predict the weighted mean; ``absolute_error``: the weighted
        median. See :mod:`greedy._criteria`. For linear leaves (:mod:`greedy._linear`):
        ``linear_squared_error``, the squared error of each node's own least-squares linear
        model, and ``correlation``, ``1 - |mean_j corr(x_j, y)|``. None: ``squared_error``
        with ``leaf_model="constant"``, ``linear_squared_error`` with ``leaf_model="linear"``
        (splits chosen for the leaf model).
    max_depth, min_samples_split, min_samples_leaf, min_weight_fraction_leaf, max_features, \
random_state, max_leaf_nodes, min_impurity_decrease, splitter, max_bins, ccp_alpha, \
categorical_features
        As in :class:`CARTClassifier` (also for missing values).
    leaf_model : {"constant", "linear"}, default="constant"
        ``"linear"``: after growing (and pruning), every node gets a weighted least-squares
        linear model of its training samples and leaves predict with it (a *model tree*,
        :mod:`greedy._linear`). A node with fewer than ``n_features + 1`` distinct training
        points keeps the constant model (its mean); ``min_samples_leaf >= n_features + 1``
        avoids that on data without duplicate rows.
        By default the splits minimise the linear models' squared error
        (``criterion="linear_squared_error"``); ``ccp_alpha`` and the pruning path use the
        criterion's impurities. Linear leaves (and the two linear criteria) need ``X``
        without missing values, in fit and predict.

    Attributes
    ----------
    tree_ : greedy.Tree
    n_features_in_ : int
    feature_names_in_ : ndarray of str
    max_features_ : int
    feature_importances_ : ndarray of shape (n_features,)
    is_categorical_ : ndarray of bool, shape (n_features,)
    n_categories_ : ndarray of int, shape (n_features,)

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from greedy import CARTRegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> constant = CARTRegressor(max_depth=3, min_samples_leaf=30).fit(X, y)
    >>> linear = CARTRegressor(max_depth=3, min_samples_leaf=30, leaf_model="linear").fit(X, y)
    >>> round(constant.score(X, y), 2), round(linear.score(X, y), 2)
    (0.49, 0.66)
    """

    _task = "regression"

    _parameter_constraints: dict = {
        **BaseCART._parameter_constraints,
        "criterion": [StrOptions(criterion_names("regression")), None],
        "leaf_model": [StrOptions({"constant", "linear"})],
    }

    def __init__(
        self,
        *,
        criterion=None,
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
        leaf_model="constant",
        categorical_features="from_dtype",
    ):
        super().__init__(
            criterion=criterion,
            max_depth=max_depth,
            min_samples_split=min_samples_split,
            min_samples_leaf=min_samples_leaf,
            min_weight_fraction_leaf=min_weight_fraction_leaf,
            max_features=max_features,
            random_state=random_state,
            max_leaf_nodes=max_leaf_nodes,
            min_impurity_decrease=min_impurity_decrease,
            splitter=splitter,
            max_bins=max_bins,
            ccp_alpha=ccp_alpha,
            categorical_features=categorical_features,
        )
        self.leaf_model = leaf_model

    def _finish_tree(self, tree: Tree, data: FitData) -> Tree:
        """Prune at ``ccp_alpha``, then fit the linear leaf models if ``leaf_model="linear"``."""
        tree = super()._finish_tree(tree, data)
        if self.leaf_model == "linear":
            tree = fit_linear_leaves(tree, data.X.astype(np.float64), data.y, data.sample_weight)
        return tree

    def predict(self, X) -> np.ndarray:
        """Predicted target (weighted average over split routes for missing values)."""
        X = self._validate_X_predict(X)
        return self._routing_tree(X).predict(X)

    def _supports_missing(self) -> bool:
        return (super()._supports_missing() and self.leaf_model != "linear"
                and self._criterion_name() not in ("correlation", "linear_squared_error"))

    def _criterion_name(self) -> str:
        if self.criterion is not None:
            return self.criterion
        return "linear_squared_error" if self.leaf_model == "linear" else "squared_error"
