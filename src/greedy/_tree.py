"""The one tree representation shared by every method in optitree.

A :class:`Tree` stores a binary decision tree as parallel arrays in scikit-learn's
convention (node 0 is the root, ``children_left[i] == -1`` marks a leaf, the left
branch is taken when ``x[feature] <= threshold``). Greedy CART, the MIP
formulations and imported scikit-learn trees all produce this type, so
prediction, export, plotting and metrics are written once, here.

Beyond axis-aligned splits a node may hold

* a **categorical** split: ``category_left[i]`` is a boolean mask over category
  codes; code ``c`` goes left when ``category_left[i, c]``. Codes outside the mask
  (unseen at fit time) follow ``default_left[i]``;
* an **oblique** (hyperplane) split: ``feature[i] == OBLIQUE`` and the sample goes
  left when ``split_coef[i] @ x <= threshold[i]``;
* **missing-value routing**: a sample whose split value is NaN goes down both
  branches, with weight ``missing_left[i]`` to the left and ``1 - missing_left[i]``
  to the right; its prediction is the weighted average of the leaves it reaches.
  Without ``missing_left`` a NaN in a used feature is an error;
* a **linear leaf model**: the prediction at leaf ``i`` is
  ``leaf_intercept[i] + leaf_coef[i] @ x`` instead of ``value[i, 0]``;
* a **leaf label**: a classification leaf ``i`` predicts class ``leaf_class[i]``
  instead of the most frequent class of ``value[i]`` (e.g. the label an optimal tree's
  MIP chose under a user constraint on the labels). ``value`` keeps the training class
  counts; a leaf whose label is not its most probable class gets the probabilities of
  its label alone (:attr:`Tree.node_proba`), so the predicted class is always the most
  probable one.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from scipy import sparse

from ._statistics import node_statistics

TREE_LEAF = -1
LEAF_FEATURE = -2
OBLIQUE = -3

_TASKS = ("classification", "regression")
_OPTIONAL = (
    "category_left", "default_left", "split_coef", "missing_left", "leaf_coef", "leaf_intercept", "leaf_class",
)


def midpoint_threshold(lo, hi):
    """Split threshold between consecutive distinct values ``lo < hi`` (elementwise).

    ``lo/2 + hi/2`` (no overflow), or ``lo`` where rounding reaches ``hi`` or the result is
    not finite: always ``lo <= t < hi``, so ``x <= t`` separates the two values. This is
    scikit-learn's rule; every method in optitree places thresholds with it.
    """
    lo, hi = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    mid = lo / 2.0 + hi / 2.0
    return np.where((mid == hi) | ~np.isfinite(mid), lo, mid)


class Tree:
    """Binary decision tree as parallel node arrays.

    Parameters
    ----------
    children_left, children_right : array of int, shape (n_nodes,)
        Child ids, ``-1`` at leaves. Every child id is larger than its parent's.
    feature : array of int
        Split feature, ``-2`` at leaves, ``OBLIQUE`` (-3) for hyperplane splits.
    threshold : array of float
        Left branch is ``x[feature] <= threshold`` (``split_coef @ x <= threshold``
        for oblique nodes). Ignored at leaves and categorical nodes.
    value : array of float, shape (n_nodes, n_values)
        Classification: weighted class counts of the training samples reaching the
        node (``n_values = n_classes``). Regression: the node's prediction
        (``n_values = 1``).
    n_features : int
        Number of input features the tree was built on.
    task : {"classification", "regression"}
    n_node_samples, weighted_n_node_samples, impurity : array, optional
        Training statistics; default zeros.
    category_left, default_left, split_coef, missing_left, leaf_coef, leaf_intercept
        Optional per-node arrays described in the module docstring.
    leaf_class : array of int, shape (n_nodes,), optional
        Classification: the class code each leaf predicts, in ``[0, n_classes)``
        (module docstring); entries at internal nodes do not affect predictions. Default:
        every leaf predicts the most frequent class of its ``value``.

    Examples
    --------
    A stump on one feature, its routing and a JSON round trip:

    >>> import numpy as np
    >>> from greedy import Tree
    >>> stump = Tree(children_left=[1, -1, -1], children_right=[2, -1, -1], feature=[0, -2, -2],
    ...              threshold=[0.5, np.nan, np.nan], value=[[3, 3], [3, 0], [0, 3]], n_features=1)
    >>> stump.apply([[0.2], [0.9]])
    array([1, 2])
    >>> stump.predict([[0.2]])
    array([[1., 0.]])
    >>> Tree.from_json(stump.to_json()) == stump
    True
    """

    def __init__(
        self,
        children_left,
        children_right,
        feature,
        threshold,
        value,
        n_features: int,
        task: str = "classification",
        n_node_samples=None,
        weighted_n_node_samples=None,
        impurity=None,
        *,
        category_left=None,
        default_left=None,
        split_coef=None,
        missing_left=None,
        leaf_coef=None,
        leaf_intercept=None,
        leaf_class=None,
    ):
        self.children_left = np.asarray(children_left, dtype=np.intp).ravel()
        n = self.children_left.shape[0]
        self.children_right = np.asarray(children_right, dtype=np.intp).ravel()
        self.feature = np.asarray(feature, dtype=np.intp).ravel()
        self.threshold = np.asarray(threshold, dtype=np.float64).ravel()
        value = np.asarray(value, dtype=np.float64)
        self.value = value.reshape(n, -1) if value.ndim != 2 else value
        self.n_features = int(n_features)
        self.task = task
        self.n_node_samples = np.zeros(n, np.intp) if n_node_samples is None else np.asarray(n_node_samples, np.intp)
        self.weighted_n_node_samples = (
            np.zeros(n) if weighted_n_node_samples is None else np.asarray(weighted_n_node_samples, np.float64)
        )
        self.impurity = np.zeros(n) if impurity is None else np.asarray(impurity, np.float64)
        self.category_left = None if category_left is None else np.asarray(category_left, bool)
        self.default_left = None if default_left is None else np.asarray(default_left, bool)
        self.split_coef = None if split_coef is None else np.asarray(split_coef, np.float64)
        self.missing_left = None if missing_left is None else np.asarray(missing_left, np.float64)
        self.leaf_coef = None if leaf_coef is None else np.asarray(leaf_coef, np.float64)
        self.leaf_intercept = None if leaf_intercept is None else np.asarray(leaf_intercept, np.float64)
        self.leaf_class = None if leaf_class is None else np.asarray(leaf_class, np.intp)
        self.validate()

    @classmethod
    def from_splits(cls, children_left, children_right, feature, threshold, X, y, sample_weight=None, *,
                    n_features: int, task: str = "classification", n_classes: int | None = None) -> "Tree":
        """The axis-aligned tree of these arrays with :meth:`fill_statistics`'s statistics from
        ``X, y, sample_weight`` (``n_classes`` classes for classification), validated once."""
        if task == "classification" and (n_classes is None or n_classes < 1):
            raise ValueError(f"a classification tree needs n_classes >= 1, got {n_classes!r}")
        width = 1 if task == "regression" else n_classes
        tree = cls(children_left, children_right, feature, threshold, np.zeros((len(children_left), width)),
                   n_features=n_features, task=task)
        X = tree._check_X(X)
        rows, nodes = tree._path_pairs(X)
        tree.value, tree.n_node_samples, tree.weighted_n_node_samples, tree.impurity = node_statistics(
            rows, nodes, np.asarray(y), np.ones(X.shape[0]) if sample_weight is None else
            np.asarray(sample_weight, np.float64), tree.node_count, None if task == "regression" else n_classes)
        return tree

    # ------------------------------------------------------------------ invariants
    def validate(self) -> None:
        """Check the structural invariants; raise ``ValueError`` naming the first broken one."""
        n = self.node_count
        if n < 1:
            raise ValueError("a Tree needs at least one node")
        if self.task not in _TASKS:
            raise ValueError(f"task must be one of {_TASKS}, got {self.task!r}")
        for name in ("children_right", "feature", "threshold", "n_node_samples", "weighted_n_node_samples", "impurity"):
            if getattr(self, name).shape != (n,):
                raise ValueError(f"{name} has shape {getattr(self, name).shape}, expected ({n},)")
        if self.value.shape[0] != n or self.value.ndim != 2:
            raise ValueError(f"value has shape {self.value.shape}, expected ({n}, n_values)")
        if self.task == "regression" and self.value.shape[1] != 1:
            raise ValueError("a regression tree has one value per node")
        left, right = self.children_left, self.children_right
        leaf = left == TREE_LEAF
        if (leaf != (right == TREE_LEAF)).any():
            raise ValueError("a node has exactly one child: both children must be -1 or both valid")
        internal = ~leaf
        ids = np.flatnonzero(internal)
        left_i, right_i = left[ids], right[ids]
        if ((left_i <= ids) | (right_i <= ids)).any():
            raise ValueError("every child id must be larger than its parent's id")
        if ((left_i >= n) | (right_i >= n)).any():
            raise ValueError("a child id is out of range")
        children = np.concatenate([left_i, right_i])
        # every child id lies in (its parent's id, n) here: at least 1, so bincount counts its parents
        if children.size and np.bincount(children, minlength=n).max() > 1:
            raise ValueError("every non-root node must have exactly one parent, and the root none")
        if children.size != n - 1:
            raise ValueError("some nodes are unreachable from the root")
        feature = self.feature
        if (feature[leaf] != LEAF_FEATURE).any():
            raise ValueError("leaves must have feature == -2")
        f = feature[ids]
        oblique = f == OBLIQUE
        if (~oblique & ((f < 0) | (f >= self.n_features))).any():
            raise ValueError(f"split features must lie in [0, {self.n_features}) (or be OBLIQUE)")
        if oblique.any() and (self.split_coef is None or self.split_coef.shape != (n, self.n_features)):
            raise ValueError("oblique splits need split_coef of shape (n_nodes, n_features)")
        numeric = internal if self.category_left is None else internal & ~self.categorical_nodes
        if not np.isfinite(self.threshold[numeric]).all():
            raise ValueError("thresholds of numeric splits must be finite")
        if self.category_left is not None:
            if self.category_left.ndim != 2 or self.category_left.shape[0] != n:
                raise ValueError("category_left must have shape (n_nodes, n_categories)")
            if self.default_left is None or self.default_left.shape != (n,):
                raise ValueError("categorical splits need default_left of shape (n_nodes,)")
        if self.missing_left is not None:
            if self.missing_left.shape != (n,):
                raise ValueError("missing_left must have shape (n_nodes,)")
            m = self.missing_left[internal]
            if np.any(~np.isfinite(m) | (m < 0) | (m > 1)):
                raise ValueError("missing_left must lie in [0, 1] at internal nodes")
        if (self.leaf_coef is None) != (self.leaf_intercept is None):
            raise ValueError("leaf_coef and leaf_intercept go together")
        if self.leaf_coef is not None:
            if self.task != "regression":
                raise ValueError("linear leaf models are for regression trees")
            if self.leaf_coef.shape != (n, self.n_features) or self.leaf_intercept.shape != (n,):
                raise ValueError("leaf_coef must be (n_nodes, n_features) and leaf_intercept (n_nodes,)")
        if self.leaf_class is not None:
            if self.task != "classification":
                raise ValueError("leaf_class is for classification trees")
            if self.leaf_class.shape != (n,):
                raise ValueError("leaf_class must have shape (n_nodes,)")
            if np.any((self.leaf_class < 0) | (self.leaf_class >= self.value.shape[1])):
                raise ValueError(f"leaf_class must hold class codes in [0, {self.value.shape[1]})")

    # ------------------------------------------------------------------ properties
    @property
    def node_count(self) -> int:
        return int(self.children_left.shape[0])

    @property
    def is_leaf(self) -> np.ndarray:
        return self.children_left == TREE_LEAF

    @property
    def n_leaves(self) -> int:
        return int(self.is_leaf.sum())

    @property
    def n_classes(self) -> int:
        """Number of classes (0 for a regression tree)."""
        return self.value.shape[1] if self.task == "classification" else 0

    @property
    def categorical_nodes(self) -> np.ndarray:
        """Boolean mask of internal nodes whose split is a category subset."""
        if self.category_left is None:
            return np.zeros(self.node_count, bool)
        # a category split sends at least one category left, so an all-False row is numeric
        return (~self.is_leaf) & self.category_left.any(axis=1)

    @property
    def node_depth(self) -> np.ndarray:
        """Depth of every node (root = 0)."""
        depth = np.zeros(self.node_count, np.intp)
        internal = np.flatnonzero(~self.is_leaf)  # parents come before children
        for i in internal:
            depth[self.children_left[i]] = depth[self.children_right[i]] = depth[i] + 1
        return depth

    @property
    def max_depth(self) -> int:
        return int(self.node_depth.max())

    @property
    def parent(self) -> np.ndarray:
        """Parent id of every node (-1 for the root)."""
        parent = np.full(self.node_count, -1, np.intp)
        internal = ~self.is_leaf
        ids = np.flatnonzero(internal)
        parent[self.children_left[internal]] = ids
        parent[self.children_right[internal]] = ids
        return parent

    @property
    def n_splits(self) -> int:
        return self.node_count - self.n_leaves

    # ------------------------------------------------------------------ routing
    def _check_X(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got shape {X.shape}")
        if X.shape[1] != self.n_features:
            raise ValueError(f"X has {X.shape[1]} features, the tree expects {self.n_features}")
        return X

    def _split_values(self, X: np.ndarray, rows: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """Value each (row, node) pair is compared at: ``x[f]`` or ``coef @ x``."""
        f = self.feature[nodes]
        oblique = f == OBLIQUE
        if not oblique.any():
            return X[rows, f]
        out = np.empty(rows.shape[0])
        uni = ~oblique
        out[uni] = X[rows[uni], f[uni]]
        out[oblique] = np.einsum("ij,ij->i", X[rows[oblique]], self.split_coef[nodes[oblique]])
        return out

    def _goes_left(self, v: np.ndarray, nodes: np.ndarray, categorical: np.ndarray) -> np.ndarray:
        """Direction for non-missing split values ``v`` at ``nodes`` (``categorical``: :attr:`categorical_nodes`)."""
        left = v <= self.threshold[nodes]
        if self.category_left is not None:
            cat = categorical[nodes]
            if cat.any():
                codes = v[cat]
                ncat = self.category_left.shape[1]
                valid = (codes >= 0) & (codes < ncat) & (codes == np.floor(codes))
                res = self.default_left[nodes[cat]].copy()
                ci = np.flatnonzero(valid)
                res[ci] = self.category_left[nodes[cat][ci], codes[ci].astype(np.intp)]
                left[cat] = res
        return left

    def route(self, X) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Route samples to the leaves they reach, with weights.

        Returns ``(rows, leaves, weights)``: sample ``rows[k]`` reaches leaf
        ``leaves[k]`` with weight ``weights[k]``; the weights of a sample sum to 1.
        A sample reaches exactly one leaf unless it has a missing split value at a
        node with missing-value routing.
        """
        X = self._check_X(X)
        if not np.isnan(X).any():  # one path per sample: its last node, in sample order
            rows, nodes = self._path_pairs(X)
            at_leaf = self.is_leaf[nodes]
            leaves = np.empty(X.shape[0], np.intp)
            leaves[rows[at_leaf]] = nodes[at_leaf]
            return np.arange(X.shape[0]), leaves, np.ones(X.shape[0])
        rows = np.arange(X.shape[0])
        nodes = np.zeros(X.shape[0], np.intp)
        weights = np.ones(X.shape[0])
        is_leaf, categorical = self.is_leaf, self.categorical_nodes
        reached: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        while rows.size:
            leaf = is_leaf[nodes]
            reached.append((rows[leaf], nodes[leaf], weights[leaf]))
            rows, nodes, weights = rows[~leaf], nodes[~leaf], weights[~leaf]
            if not rows.size:
                break
            v = self._split_values(X, rows, nodes)
            missing = np.isnan(v)
            left = np.zeros(rows.shape[0], bool)
            left[~missing] = self._goes_left(v[~missing], nodes[~missing], categorical)
            nxt = np.where(left, self.children_left[nodes], self.children_right[nodes])
            if missing.any():
                if self.missing_left is None:
                    raise ValueError(
                        "X contains NaN in a feature used by the tree, and the tree was built without "
                        "missing-value support"
                    )
                m = np.flatnonzero(missing)
                p = self.missing_left[nodes[m]]
                nxt[m] = self.children_left[nodes[m]]
                rows = np.concatenate([rows, rows[m]])
                nodes_r = self.children_right[nodes[m]]
                weights = np.concatenate([weights, weights[m] * (1 - p)])
                weights[m] *= p
                nxt = np.concatenate([nxt, nodes_r])
            nodes = nxt
        done_rows, done_leaves, done_weights = zip(*reached)
        return np.concatenate(done_rows), np.concatenate(done_leaves), np.concatenate(done_weights)

    def apply(self, X) -> np.ndarray:
        """Leaf id of every sample (for split routing: the leaf with the largest weight)."""
        rows, leaves, w = self.route(X)
        n = np.asarray(X).shape[0]
        if rows.size == n:
            out = np.empty(n, np.intp)
            out[rows] = leaves
            return out
        order = np.lexsort((-w, rows))  # per row, heaviest first
        first = np.r_[True, rows[order][1:] != rows[order][:-1]]
        out = np.empty(n, np.intp)
        out[rows[order][first]] = leaves[order][first]
        return out

    def node_weights(self, X) -> sparse.csr_matrix:
        """CSR (n_samples, n_nodes): the weight with which each sample reaches each node.

        1 on a sample's root-to-leaf path; below a missing-value split, the routing
        weights of :meth:`route` (the ancestors shared by several routes sum them back).
        """
        rows, leaves, w = self.route(X)
        parent = self.parent
        steps = [(rows, leaves, w)]
        while steps[-1][1].size:
            r, c, v = steps[-1]
            p = parent[c]
            keep = p >= 0
            steps.append((r[keep], p[keep], v[keep]))
        r, c, v = (np.concatenate(parts) for parts in zip(*steps))
        return sparse.csr_matrix((v, (r, c)), shape=(np.asarray(X).shape[0], self.node_count))

    def decision_path(self, X) -> sparse.csr_matrix:
        """CSR indicator (n_samples, n_nodes) of the nodes each sample passes through."""
        weights = self.node_weights(X)
        return sparse.csr_matrix((np.ones(weights.nnz, np.int8), weights.indices, weights.indptr), shape=weights.shape)

    @property
    def node_proba(self) -> np.ndarray:
        """Class distribution at every node; a node with no training weight takes its nearest ancestor's.

        A leaf whose :attr:`leaf_class` is not the most probable class of that distribution
        gets probability 1 for its label (and 0 for the others): the class a leaf predicts is
        always its most probable one, as scikit-learn's ``predict == argmax(predict_proba)``
        expects. ``value`` keeps the training counts.
        """
        if self.task != "classification":
            raise ValueError("node_proba is defined for classification trees")
        total = self.value.sum(axis=1)
        proba = np.zeros_like(self.value)
        pos = total > 0
        proba[pos] = self.value[pos] / total[pos, None]
        empty = np.flatnonzero(~pos)
        parent = self.parent if empty.size else None
        for i in empty:  # parents come before children
            proba[i] = proba[parent[i]] if i > 0 else 1.0 / self.value.shape[1]
        if self.leaf_class is not None:
            relabelled = np.flatnonzero(self.is_leaf & (self.leaf_class != proba.argmax(axis=1)))
            proba[relabelled] = 0.0
            proba[relabelled, self.leaf_class[relabelled]] = 1.0
        return proba

    @property
    def node_class(self) -> np.ndarray:
        """Class code of every node: its :attr:`leaf_class` at a leaf when given, else the most
        frequent class of its ``value``."""
        if self.task != "classification":
            raise ValueError("node_class is defined for classification trees")
        majority = self.value.argmax(axis=1)
        if self.leaf_class is None:
            return majority
        return np.where(self.is_leaf, self.leaf_class, majority)

    def predict(self, X) -> np.ndarray:
        """Class probabilities (n_samples, n_classes) or regression values (n_samples,)."""
        X = self._check_X(X)
        rows, leaves, w = self.route(X)
        n = X.shape[0]
        if self.task == "classification":
            contrib = self.node_proba[leaves] * w[:, None]
            out = np.zeros((n, self.value.shape[1]))
            if rows.size == n:  # one leaf per sample: rows is a permutation
                out[rows] = contrib
            else:
                np.add.at(out, rows, contrib)
            return out
        leaf_pred = self.value[leaves, 0]
        if self.leaf_coef is not None:
            if np.isnan(X).any():
                raise ValueError("a tree with linear leaf models cannot predict samples with missing (NaN) values")
            leaf_pred = self.leaf_intercept[leaves] + np.einsum("ij,ij->i", X[rows], self.leaf_coef[leaves])
        return np.bincount(rows, weights=leaf_pred * w, minlength=n)

    def with_weight_routing(self) -> "Tree":
        """Copy that routes a missing split value down both children in proportion to their
        training weights ``weighted_n_node_samples`` (C4.5's fractions; what greedy CART
        learns from training data without missing values). Even split where both are zero."""
        internal = ~self.is_leaf
        w_left = np.where(internal, self.weighted_n_node_samples[self.children_left], 0.0)
        w_right = np.where(internal, self.weighted_n_node_samples[self.children_right], 0.0)
        total = w_left + w_right
        d = self.to_dict()
        d["missing_left"] = np.divide(w_left, total, out=np.full(self.node_count, 0.5), where=total > 0)
        return Tree.from_dict(d)

    def with_larger_child_routing(self) -> "Tree":
        """Copy that sends a missing split value to the child with more training samples
        (``n_node_samples``, ties right): scikit-learn's rule for a NaN its tree never saw in training."""
        internal = ~self.is_leaf
        n_left = np.where(internal, self.n_node_samples[self.children_left], 0)
        n_right = np.where(internal, self.n_node_samples[self.children_right], 0)
        return self._replace(missing_left=(n_left > n_right).astype(np.float64))

    # ------------------------------------------------------------------ statistics
    def fill_statistics(self, X, y, sample_weight=None, n_classes: int | None = None) -> "Tree":
        """Return a copy whose node statistics are recomputed from training data.

        ``y`` holds class codes ``0..K-1`` (classification) or targets (regression;
        node values become weighted means). Structure and splits are unchanged.
        ``impurity`` becomes the Gini index (classification) or the variance (regression),
        whatever criterion grew the tree.
        """
        X = self._check_X(X)
        y = np.asarray(y)
        sw = np.ones(X.shape[0]) if sample_weight is None else np.asarray(sample_weight, np.float64)
        rows, nodes = self._path_pairs(X)
        value, counts, wsum, impurity = node_statistics(
            rows, nodes, y, sw, self.node_count,
            None if self.task != "classification" else n_classes if n_classes is not None else self.value.shape[1])
        return self._replace(value=value, n_node_samples=counts, weighted_n_node_samples=wsum, impurity=impurity)

    def _path_pairs(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, nodes)``: every (sample, node on its path) pair, each node's samples in increasing order.

        The pattern of :meth:`decision_path` (its COO entries in another order, the same per
        node), without sparse matrices when every sample follows one path (no missing value routed
        down both children): the samples are routed level by level, each level's pairs in sample order.
        """
        has_nan = bool(np.isnan(X).any())
        if self.missing_left is not None and has_nan:
            path = self.decision_path(X).tocoo()
            return path.row, path.col
        rows = np.arange(X.shape[0])
        nodes = np.zeros(X.shape[0], np.intp)
        parts_rows, parts_nodes = [rows], [nodes]
        is_split = self.children_left != TREE_LEAF
        categorical = None if self.category_left is None else self.categorical_nodes
        while rows.size:
            split = is_split[nodes]
            rows, nodes = rows[split], nodes[split]
            if not rows.size:
                break
            v = self._split_values(X, rows, nodes)
            if has_nan and np.isnan(v).any():  # without a NaN in X no level needs the check
                raise ValueError("X contains NaN in a feature used by the tree, and the tree was built without "
                                 "missing-value support")
            nodes = np.where(self._goes_left(v, nodes, categorical), self.children_left[nodes],
                             self.children_right[nodes])
            parts_rows.append(rows), parts_nodes.append(nodes)
        return np.concatenate(parts_rows), np.concatenate(parts_nodes)

    def _replace(self, **arrays) -> "Tree":
        """A validated copy with the given per-node arrays replaced: ``Tree.from_dict({**self.to_dict(), **arrays})``
        without the round trip through Python lists (every array copied, non-finite thresholds as NaN)."""
        fields = {name: getattr(self, name) for name in ("value", "n_node_samples", "weighted_n_node_samples",
                                                          "impurity", *_OPTIONAL)}
        fields.update(arrays)
        copies = {name: None if arr is None else np.array(arr) for name, arr in fields.items()}
        threshold = np.where(np.isfinite(self.threshold), self.threshold, np.nan)
        return Tree(self.children_left.copy(), self.children_right.copy(), self.feature.copy(), threshold,
                    n_features=self.n_features, task=self.task, **copies)

    def compute_feature_importances(self, normalize: bool = True) -> np.ndarray:
        """Mean decrease in weighted impurity, by feature (oblique splits count for no feature)."""
        internal = np.flatnonzero(~self.is_leaf & (self.feature >= 0))
        w, imp = self.weighted_n_node_samples, self.impurity
        l, r = self.children_left[internal], self.children_right[internal]
        gain = w[internal] * imp[internal] - w[l] * imp[l] - w[r] * imp[r]
        out = np.bincount(self.feature[internal], weights=gain, minlength=self.n_features).astype(float)
        if w[0] > 0:
            out /= w[0]
        if normalize and out.sum() > 0:
            out /= out.sum()
        return out

    # ------------------------------------------------------------------ serialisation
    def to_dict(self) -> dict[str, Any]:
        """Plain-Python dict (lists, ints, floats, strings): JSON-serialisable."""
        d: dict[str, Any] = {
            "n_features": self.n_features,
            "task": self.task,
            "children_left": self.children_left.tolist(),
            "children_right": self.children_right.tolist(),
            "feature": self.feature.tolist(),
            "threshold": [float(t) if np.isfinite(t) else None for t in self.threshold],
            "value": self.value.tolist(),
            "n_node_samples": self.n_node_samples.tolist(),
            "weighted_n_node_samples": self.weighted_n_node_samples.tolist(),
            "impurity": self.impurity.tolist(),
        }
        for name in _OPTIONAL:
            arr = getattr(self, name)
            if arr is not None:
                d[name] = arr.tolist()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Tree":
        d = dict(d)
        d["threshold"] = [np.nan if t is None else t for t in np.asarray(d["threshold"], dtype=object)]
        return cls(**d)

    def to_json(self, **kwargs) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_json(cls, s: str) -> "Tree":
        return cls.from_dict(json.loads(s))

    def __eq__(self, other) -> bool:
        if not isinstance(other, Tree):
            return NotImplemented
        a, b = self.to_dict(), other.to_dict()
        return a.keys() == b.keys() and all(
            np.array_equal(np.asarray(a[k], dtype=object), np.asarray(b[k], dtype=object)) for k in a
        )

    __hash__ = None  # mutable arrays

    def __repr__(self) -> str:
        return (
            f"Tree(task={self.task!r}, node_count={self.node_count}, n_leaves={self.n_leaves}, "
            f"max_depth={self.max_depth}, n_features={self.n_features})"
        )

    # ------------------------------------------------------------------ conversions
    @classmethod
    def from_sklearn(cls, estimator) -> "Tree":
        """Convert a fitted ``DecisionTreeClassifier``/``DecisionTreeRegressor``.

        Classifier values become weighted class counts (scikit-learn >= 1.4 stores
        fractions). Single-output trees only.
        """
        t = getattr(estimator, "tree_", None)
        if t is None:
            raise ValueError("from_sklearn expects a fitted scikit-learn decision tree")
        if t.n_outputs != 1:
            raise ValueError("only single-output scikit-learn trees can be converted")
        value = t.value[:, 0, :].astype(np.float64)
        is_clf = hasattr(estimator, "classes_")
        if is_clf:
            sums = value.sum(axis=1, keepdims=True)
            if np.allclose(sums, 1.0):  # fractions (scikit-learn >= 1.4)
                value = value * t.weighted_n_node_samples[:, None]
        leaf = t.children_left == TREE_LEAF
        threshold = np.where(leaf, np.nan, t.threshold)
        missing_left = None
        mgl = getattr(t, "missing_go_to_left", None)
        if mgl is not None and hasattr(estimator, "_support_missing_values") and np.any(mgl[~leaf]):
            missing_left = np.asarray(mgl, dtype=np.float64)
        return cls(
            t.children_left,
            t.children_right,
            np.where(leaf, LEAF_FEATURE, t.feature),
            threshold,
            value,
            n_features=t.n_features,
            task="classification" if is_clf else "regression",
            n_node_samples=t.n_node_samples,
            weighted_n_node_samples=t.weighted_n_node_samples,
            impurity=t.impurity,
            missing_left=missing_left,
        )
