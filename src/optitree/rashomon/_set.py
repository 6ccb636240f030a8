"""``RashomonSet``: every tree of depth <= max_depth within (1 + epsilon) of the optimal objective."""

from __future__ import annotations

import bisect
import itertools
import numbers
import random
import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from greedy import Tree

from .. import exact
from ..estimators._inputs import encode_categories, normalise_weights
from ..problem import check_allowed, get_loss
from ..split_space import SplitSpace, category_subsets
from ..exact._tree import to_tree
from ._build import MEMORY_LIMIT, Builder, _digest, counts_without, loss_of_rows, tree_at

__all__ = ["RashomonSet", "RashomonTree", "MAX_DEPTH"]

#: Deepest set accepted: at depth 5 a sub-problem's options hold depth-4 sets whose number grows as
#: (candidates)**15; the memory limit (:data:`~optitree.rashomon._build.MEMORY_LIMIT`) stops smaller ones.
MAX_DEPTH = 4
#: Relative tolerance of the objective comparison (ties counted whatever the order of the sums).
TOLERANCE = 1e-9


def _merge_ties(values, counts):
    """Runs of float values within 1e-12 (relative) of the run's first as one value, counts summed."""
    merged, sums = [], []
    for v, c in zip(values.tolist(), counts):
        if merged and v - merged[-1] <= 1e-12 * abs(merged[-1]):
            sums[-1] += c
        else:
            merged.append(v)
            sums.append(c)
    return np.array(merged), sums


def _rows_per_node(tree, X):
    """Per node of ``tree``, the sorted rows of ``X`` reaching it (int32); None when a row reaches two leaves."""
    rows, leaves, share = tree.route(X)
    rows, leaves = rows[share > 0], leaves[share > 0]
    if np.bincount(rows, minlength=X.shape[0]).max(initial=0) > 1:
        return None
    members = [None] * tree.node_count
    order = np.argsort(leaves, kind="stable")
    rows, leaves = rows[order], leaves[order]
    for i in range(tree.node_count):
        if tree.is_leaf[i]:
            members[i] = np.sort(rows[leaves == i]).astype(np.int32)
    for i in _postorder(tree):
        if not tree.is_leaf[i]:
            members[i] = np.sort(np.concatenate([members[tree.children_left[i]],
                                                 members[tree.children_right[i]]]))
    return members


def _postorder(tree):
    out, stack = [], [0]
    while stack:
        i = stack.pop()
        out.append(i)
        if not tree.is_leaf[i]:
            stack += [tree.children_left[i], tree.children_right[i]]
    return out[::-1]


class RashomonTree:
    """One tree of a :class:`RashomonSet`, fitted: ``predict`` (labels or values), ``predict_proba``.

    Attributes
    ----------
    tree_ : greedy.Tree
        Over the user's features (categorical splits by level subsets, NaN routing learned).
    objective_ : float
        Its objective on the training data (loss / normaliser + alpha x leaves).
    index_ : int
        Its position in the set (objective order).
    classes_ : ndarray
        Class labels (classification).
    """

    def __init__(self, tree, objective, index, classes, categories, regression):
        self.tree_, self.objective_, self.index_ = tree, objective, index
        self.classes_, self.categories_, self._regression = classes, categories, regression

    def _X(self, X):
        X, _ = encode_categories(X, self.categories_)
        X = np.asarray(X, dtype=np.float64)
        tree = self.tree_
        if tree.missing_left is None and np.isnan(X).any():
            tree = tree.with_larger_child_routing()
        return X, tree

    def predict_proba(self, X):
        X, tree = self._X(X)
        return tree.predict(X)

    def predict(self, X):
        X, tree = self._X(X)
        out = tree.predict(X)
        return out if self._regression else self.classes_[out.argmax(axis=1)]

    def __repr__(self):
        return (f"RashomonTree(index={self.index_}, objective={self.objective_:.6g}, "
                f"leaves={self.tree_.n_leaves}, depth={self.tree_.max_depth})")


class RashomonSet(BaseEstimator):
    """Every decision tree of depth <= ``max_depth`` whose objective is within ``(1 + epsilon)`` of the optimum.

    Objective of a tree on the training data: the loss of its leaves (each predicting its best
    value) divided by a normaliser -- the total weight (classification: weighted error rate),
    SST (squared: SSE / SST) or SAT (absolute: SAE / sum of absolute deviations from the weighted
    median) -- plus ``alpha`` per leaf. The set holds every tree with objective <= ``(1 + epsilon)
    * optimum + 1e-9 * optimum``. Trees are identified by their structure, the original feature of
    each split and the partition of the (positive-weight) training rows each split makes at its
    node (thresholds between the same two distinct values are one tree; a categorical split is its
    subset of levels, mirrored subsets at a node being one partition; NaN rows go to one side); no
    leaf is empty. Splits range over the estimators' split space (:mod:`optitree.split_space`).
    See docs/rashomon.md.

    Parameters
    ----------
    max_depth : int in [1, 4], default=3
    epsilon : float >= 0, default=0.05
    alpha : float > 0, default=0.01
        Cost per leaf in objective units.
    loss : {"misclassification", "squared", "absolute"}, default="misclassification"
    min_samples_leaf : int >= 1, default=1
    allowed_features : bool array (p,) or (max_depth, p), optional
        Features a split may use, everywhere or per level (row 0: the root).
    max_category_subsets : int in [1, 16] or "auto", default="auto"
        As the optimal estimators: categorical features with more levels split on one-vs-rest,
        prefixes and CART's subsets only.
    time_limit : float > 0, optional
        Seconds; a build stopped by it warns, sets ``complete_ = False`` and its counts are lower bounds.
    random_state : int, RandomState or None
        Default seed of :meth:`sample` and :attr:`model_reliance_`.
    verbose : int

    Attributes
    ----------
    optimum_ : float
        The least objective (an incomplete build: the least found, or the engine's best tree's).
    threshold_ : float
        ``(1 + epsilon + 1e-9) * optimum_``: the set's bound. An incomplete build (``complete_``
        False) uses the engine's proven lower bound on the optimum instead, so every tree it lists
        is in the true set and the counts are lower bounds.
    objectives_ : ndarray
        The distinct objective values in the set, increasing (``objective_counts_`` trees each). Values
        within 1e-12 (relative) of the first of a run are one value (the same sum taken in another
        order may differ in its last bits); ``rs[i].objective_`` is each tree's own.
    objective_counts_ : list of int
    complete_ : bool
    n_subproblems_, n_options_ : int
        Memoised sub-problems and stored split options (the set's size in memory).
    fit_time_ : float
    """

    _parameter_constraints: dict = {
        "max_depth": [Interval(numbers.Integral, 1, None, closed="left")],
        "epsilon": [numbers.Real],
        "alpha": [numbers.Real],
        "loss": [StrOptions({"misclassification", "squared", "absolute"})],
        "min_samples_leaf": [Interval(numbers.Integral, 1, None, closed="left")],
        "allowed_features": ["array-like", None],
        "max_category_subsets": [Interval(numbers.Integral, 1, 16, closed="both"), StrOptions({"auto"})],
        "time_limit": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(self, max_depth=3, epsilon=0.05, alpha=0.01, loss="misclassification", min_samples_leaf=1,
                 allowed_features=None, max_category_subsets="auto", time_limit=None, random_state=None, verbose=0):
        self.max_depth = max_depth
        self.epsilon = epsilon
        self.alpha = alpha
        self.loss = loss
        self.min_samples_leaf = min_samples_leaf
        self.allowed_features = allowed_features
        self.max_category_subsets = max_category_subsets
        self.time_limit = time_limit
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_is_fitted__(self):
        return hasattr(self, "_root")

    # ------------------------------------------------------------------ fit
    def _check_params(self):
        self._validate_params()
        if not np.isfinite(self.alpha) or self.alpha <= 0:
            raise ValueError(f"alpha must be > 0 (a cost per leaf; e.g. the default 0.01), got {self.alpha!r}: "
                             f"with alpha <= 0 the set may hold every refinement of a tree")
        if not np.isfinite(self.epsilon) or self.epsilon < 0:
            raise ValueError(f"epsilon must be a finite number >= 0, got {self.epsilon!r}")
        if self.max_depth > MAX_DEPTH:
            raise ValueError(f"max_depth must be <= {MAX_DEPTH} (the deepest set that can be held in memory), "
                             f"got {self.max_depth}")

    def _inputs(self, X, y, sample_weight):
        X, self.categories_ = encode_categories(X)
        regression = self.loss != "misclassification"
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_all_finite="allow-nan", y_numeric=regression)
        if regression:  # validate_data refused NaN and infinite targets
            y = y.astype(np.float64)
            self.classes_ = np.zeros(0)
        else:
            if not (y.ndim == 1 and y.dtype.kind in "biuU"):
                check_classification_targets(y)
            self.classes_, y = np.unique(y, return_inverse=True)
        w = _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True)
        w, _ = normalise_weights(w)
        if not (w > 0).any():
            raise ValueError("sample_weight has no positive entry")
        return X, y, w

    def fit(self, X, y, sample_weight=None):
        """Build the set for ``X`` (numpy or pandas; categoricals, NaN), ``y`` and ``sample_weight``."""
        started = time.perf_counter()
        self._check_params()
        X, y, w = self._inputs(X, y, sample_weight)
        depth = int(self.max_depth)
        if self.categories_ or np.isnan(X).any():
            space = SplitSpace(X, {j: len(v) for j, v in self.categories_.items()},
                               max_category_subsets=category_subsets(self.max_category_subsets, depth))
            space = None if space.identity else space
        else:
            space = None
        Z = X if space is None else space.transform(X)
        column_feature = np.arange(X.shape[1]) if space is None else space.column_feature
        allowed = self._allowed(X.shape[1], depth)[:, column_feature]
        data = exact.prepare(Z, y, w, loss=self.loss, report="problem")
        self._space, self._data, self._X, self._w, self._y = space, data, X, w, y
        self._column_feature = column_feature
        rows = np.sort(data.view[0])
        norm = self._normaliser(data, rows)
        self.normaliser_ = norm * data.units.cost_unit  # in the data's units
        alpha = float(self.alpha)
        deadline = np.inf if self.time_limit is None else started + float(self.time_limit)
        remaining = None if self.time_limit is None else max(1e-3, deadline - time.perf_counter())
        res = exact.solve(data, max_depth=depth, alpha=alpha * norm, min_samples_leaf=int(self.min_samples_leaf),
                          allowed_features=allowed, time_limit=remaining)
        estimate = res.objective / norm + alpha
        eps = float(self.epsilon)
        budget = estimate * (1 + eps + TOLERANCE) * (1 + 1e-7)
        builder = None
        lower = res.bound / norm + alpha  # the engine's proven bound on the optimum
        for _ in range(3):
            builder = Builder(data, column_feature, alpha, norm, allowed, self.min_samples_leaf, deadline)
            try:
                root = builder.build(rows, depth, budget)
            except MemoryError:
                raise ValueError(
                    f"the Rashomon set at max_depth={depth}, epsilon={eps} (alpha={alpha}) needs more memory than its "
                    f"limit of {MEMORY_LIMIT / 2**30:.0f} GiB (optitree.rashomon._build.MEMORY_LIMIT; about "
                    f"{builder.n_options} split options stored when it stopped): lower max_depth or epsilon, or "
                    f"raise alpha") from None
            if builder.stopped or not root.values.size:
                break
            threshold = root.values[0] * (1 + eps + TOLERANCE)
            if threshold <= budget:
                break
            budget = threshold * (1 + 1e-7)  # the engine's optimum was above ours: widen once more
        self.complete_ = not builder.stopped and res.status == "optimal"
        # an incomplete build may have found no tree of the set yet: the engine's tree is then the best known
        self.optimum_ = float(root.values[0]) if root.values.size else float(estimate)
        if self.complete_:
            self.threshold_ = self.optimum_ * (1 + eps + TOLERANCE)
        else:  # trees within (1 + epsilon) of a proven lower bound are in the true set: the counts are lower bounds
            self.threshold_ = min(budget, max(lower, 0.0) * (1 + eps + TOLERANCE))
        self._truncate(root, self.threshold_)
        self._root, self._builder = root, builder
        raw = [int(c) for c in root.counts]
        self._cumulative = list(itertools.accumulate(raw))  # per float value, as the walk needs them
        self.objectives_, self.objective_counts_ = _merge_ties(root.values, raw)
        self.n_subproblems_, self.n_options_ = len(builder.memo), builder.n_options
        self.n_features_in_ = X.shape[1]
        self.fit_time_ = time.perf_counter() - started
        if not self.complete_:
            warnings.warn(f"RashomonSet: time_limit={self.time_limit} stopped the build; the set is incomplete "
                          f"(complete_ False): len() and the counts are lower bounds", UserWarning, stacklevel=2)
        if self.verbose:
            print(f"RashomonSet: {len(self)} trees within {eps:g} of optimum {self.optimum_:.6g} "
                  f"({self.n_subproblems_} sub-problems, {self.n_options_} options, {self.fit_time_:.2f} s)")
        for name in ("_usage", "_reliance"):
            self.__dict__.pop(name, None)
        return self

    def _allowed(self, p, depth):
        """``allowed_features`` per level ``(depth, p)`` (:func:`optitree.problem.check_allowed`'s masks but per node)."""
        try:
            per_node = check_allowed(self.allowed_features, depth, p)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"allowed_features: {exc}") from None
        first = 2 ** np.arange(depth) - 1  # the first node of each level, heap order
        level = np.floor(np.log2(np.arange(1, per_node.shape[0] + 1))).astype(int)
        if not (per_node == per_node[first[level]]).all():
            raise ValueError(f"allowed_features: a Rashomon set takes one mask ({p},) or one per level ({depth}, {p}), "
                             f"not one per node")
        return per_node[first]

    @staticmethod
    def _normaliser(data, rows):
        """Total weight (classification), SST or SAT in internal units (1 when the targets are constant)."""
        if not data.is_regression:
            return float(data.weight.sum())
        total = loss_of_rows(data, rows)
        return total if total > 0 else 1.0

    @staticmethod
    def _truncate(root, threshold):
        keep = root.values <= threshold
        root.values, root.counts = root.values[keep], root.counts[keep]
        for option in root.options:
            k = option.values <= threshold
            option.values, option.counts = option.values[k], option.counts[k]
        root.budget = threshold

    # ------------------------------------------------------------------ the set
    def __len__(self):
        check_is_fitted(self)
        return self._cumulative[-1] if self._cumulative else 0

    def __getitem__(self, i):
        check_is_fitted(self)
        n = len(self)
        if not isinstance(i, numbers.Integral):
            raise TypeError(f"RashomonSet indices must be integers, got {type(i).__name__}")
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"index {i} out of range for a Rashomon set of {n} trees")
        k = bisect.bisect_right(self._cumulative, i)
        j = i - (self._cumulative[k - 1] if k else 0)
        v = float(self._root.values[k])
        nodes = tree_at(self._root, v, j)
        return RashomonTree(self._to_tree(nodes), v, int(i), self.classes_, self.categories_,
                            self._data.is_regression)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def _to_tree(self, nodes) -> Tree:
        data = self._data
        tree = to_tree(data, nodes, np.sort(data.view[0]))
        if self._space is not None:
            tree = self._space.decode(tree, self._X, self._w)
        return tree

    def sample(self, k, random_state=None):
        """``k`` trees drawn uniformly at random from the set, with replacement (a list of :class:`RashomonTree`)."""
        check_is_fitted(self)
        seed = check_random_state(self.random_state if random_state is None else random_state).randint(2**31 - 1)
        rng = random.Random(int(seed))  # Python integers: uniform over sets of any size
        n = len(self)
        return [self[rng.randrange(n)] for _ in range(int(k))]

    # ------------------------------------------------------------------ membership
    def contains(self, estimator) -> bool:
        """Whether a fitted tree (a greedy.Tree, or an estimator with ``tree_``) is in the set.

        Its splits are mapped to the partitions of the training rows they make; a tree that routes a
        row to two leaves (fractional NaN routing), has an empty leaf, is deeper than ``max_depth``,
        splits outside the split space or costs more than ``threshold_`` is not in the set. After a build
        stopped by ``time_limit`` (``complete_`` False) the answer is among the trees found.
        """
        check_is_fitted(self)
        tree = getattr(estimator, "tree_", estimator)
        if not isinstance(tree, Tree):
            raise TypeError(f"contains expects a greedy.Tree or a fitted tree estimator, got {type(estimator).__name__}")
        if tree.n_features != self.n_features_in_:
            raise ValueError(f"the tree has {tree.n_features} features, the set {self.n_features_in_}")
        if tree.max_depth > self.max_depth or tree.leaf_coef is not None or (tree.feature[~tree.is_leaf] < 0).any():
            return False
        X = self._X[self._data.kept]
        if tree.missing_left is None and np.isnan(X).any():
            tree = tree.with_larger_child_routing()
        members = _rows_per_node(tree, X)
        if members is None:
            return False  # a row in two leaves

        def at(i):
            return members[i]

        def walk(node, i, budget):
            if tree.is_leaf[i]:
                ok = node.leaf_ok and node.leaf <= min(budget, node.budget)
                return node.leaf if ok else None
            rows, lrows, rrows = at(i), at(tree.children_left[i]), at(tree.children_right[i])
            if not lrows.size or not rrows.size:
                return None
            canon = lrows if lrows[0] == rows[0] else rrows
            k = node.by_key.get((int(tree.feature[i]), _digest(canon)))
            if k is None:
                return None
            option = node.options[k]
            mine = (tree.children_left[i], tree.children_right[i])
            if not np.array_equal(option.left.rows, lrows):
                mine = mine[::-1]
            a = walk(option.left, mine[0], option.lbud)
            b = None if a is None else walk(option.right, mine[1], option.rbud)
            if b is None or a + b > min(budget, option.budget):
                return None
            return a + b

        if not np.array_equal(at(0), self._root.rows):
            return False
        return walk(self._root, 0, self.threshold_) is not None

    # ------------------------------------------------------------------ features
    @property
    def feature_usage_(self) -> np.ndarray:
        """Share of the set's trees that split on each feature (exact counts over the whole set)."""
        check_is_fitted(self)
        if "_usage" not in self.__dict__:
            total = len(self)
            used = np.zeros(self.n_features_in_)
            features = {o.feature for node in self._builder.memo.values() for o in node.options}
            below = {}
            for f in sorted(features):
                v, c = counts_without(self._root, f, {}, below)
                used[f] = (total - sum(int(x) for x in c)) / total
            self._usage = used
        return self._usage

    def model_reliance(self, n_trees=200, random_state=None):
        """Per feature, the least and largest model reliance over the set (or a uniform sample of it).

        A tree's reliance on feature ``j``: its loss on the training data with column ``j``
        permuted (one fixed permutation of the rows per call, from ``random_state``), minus its loss
        on the data, both divided by the normaliser (so a difference of objectives; leaf values
        fixed). All trees when the set has at most ``n_trees``, else ``n_trees`` drawn uniformly
        (with replacement). Returns an array ``(n_features, 2)``: min and max.
        """
        check_is_fitted(self)
        rng = check_random_state(self.random_state if random_state is None else random_state)
        perm = rng.permutation(self._data.kept.size)
        trees = list(self) if len(self) <= n_trees else self.sample(n_trees, rng.randint(2**31 - 1))
        X = self._X[self._data.kept]
        w = self._w[self._data.kept]
        y = self._y[self._data.kept]
        out = np.empty((self.n_features_in_, len(trees)))
        for t, rt in enumerate(trees):
            base = self._loss(rt.tree_, X, y, w)
            for j in range(self.n_features_in_):
                Xp = X.copy()
                Xp[:, j] = X[perm, j]
                out[j, t] = self._loss(rt.tree_, Xp, y, w) - base
        return np.c_[out.min(axis=1), out.max(axis=1)]

    @property
    def model_reliance_(self) -> np.ndarray:
        """:meth:`model_reliance` with its defaults (computed once): ``(n_features, 2)`` min and max."""
        if "_reliance" not in self.__dict__:
            self._reliance = self.model_reliance()
        return self._reliance

    def _loss(self, tree, X, y, w):
        if tree.missing_left is None and np.isnan(X).any():
            tree = tree.with_larger_child_routing()
        pred = tree.predict(X)
        if not self._data.is_regression:
            return float(w @ (pred.argmax(axis=1) != y)) / float(w.sum())
        r = pred - y
        loss = get_loss(self.loss).node_loss(r, w)
        return loss / self.normaliser_

    def summary(self) -> dict:
        """Size, optimum, threshold and build figures as a dict."""
        check_is_fitted(self)
        return {"n_trees": len(self), "optimum": self.optimum_, "threshold": self.threshold_,
                "n_objectives": int(self.objectives_.size), "complete": self.complete_,
                "n_subproblems": self.n_subproblems_, "n_options": self.n_options_, "fit_time": self.fit_time_}

