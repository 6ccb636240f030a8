"""Shared skeleton of the depth-bounded tree formulations.

Every formulation models a tree on the *complete* binary tree of depth ``D`` in heap
indexing: branch nodes ``1 .. 2**D - 1``, leaves ``2**D .. 2**(D+1) - 1``, node ``n``
has children ``2n`` (left, ``x[f] <= threshold``) and ``2n + 1`` (right). A branch node
that does not split sends every sample to its right child (``greedy.PASS_THROUGH``).

:class:`TreeFormulation` holds what every formulation needs and nothing specific to one
of them: validated and merged training data, the objective's units, the heap geometry,
start trees made canonical on the training data, decoding back to a :class:`greedy.Tree`
in original feature units, and the numpy recomputation of the objective.

Objective units (all classification formulations)
-------------------------------------------------
.. math::

    \\text{objective}(T) = \\frac{E(T)}{\\hat L} + \\alpha\\, S(T)

with :math:`E(T)` the weighted training misclassifications of tree :math:`T`,
:math:`S(T)` its number of splits and :math:`\\hat L` the weighted error of the
majority-class baseline (Bertsimas & Dunn's normalisation: ``alpha`` is the fraction of
the baseline error a split must remove to pay for itself, independent of the sample
size). When :math:`\\hat L = 0` (all weight on one class) every tree has zero error and
the scale is taken as 1.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod

import numpy as np

from greedy import LEAF_FEATURE, OBLIQUE, TREE_LEAF, Tree, midpoint_threshold

__all__ = ["TreeFormulation", "InfeasibleStartError", "leaf_ancestors", "power_of_two_scale"]


def power_of_two_scale(magnitude: float) -> float:
    """``2**-e`` with ``magnitude * 2**-e`` in ``[0.5, 1)``; 1 for a zero magnitude.

    Multiplying by a power of two is exact in floating point (barring underflow), so
    scaled data give the solver numbers of order one and scale back without rounding.
    """
    if magnitude == 0 or not np.isfinite(magnitude):
        return 1.0
    return float(np.ldexp(1.0, -int(np.frexp(magnitude)[1])))


class InfeasibleStartError(ValueError):
    """A start tree cannot be given to the model (e.g. a leaf below ``min_samples_leaf``)."""


def leaf_ancestors(depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Ancestors of every leaf of the complete tree of ``depth``.

    Returns
    -------
    ancestors : ndarray of int, shape (2**depth, depth)
        ``ancestors[k, s]`` is the heap id of the ancestor ``s + 1`` levels above leaf
        ``2**depth + k`` (column 0 is the parent, the last column the root).
    goes_left : ndarray of bool, shape (2**depth, depth)
        Whether the path to the leaf takes the left branch at that ancestor.
    """
    leaves = np.arange(2**depth, 2 ** (depth + 1))
    shifts = np.arange(1, depth + 1)
    ancestors = leaves[:, None] >> shifts[None, :]
    goes_left = ((leaves[:, None] >> (shifts[None, :] - 1)) & 1) == 0
    return ancestors, goes_left


class TreeFormulation(ABC):
    """Base class of the depth-``D`` classification tree formulations.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Finite training features.
    y : array-like of shape (n_samples,)
        Class codes ``0 .. n_classes - 1``.
    depth : int
        Maximum depth ``D >= 1``.
    n_classes : int, optional
        Number of classes ``K``; default ``max(y) + 1``.
    alpha : float, default=0.0
        Complexity penalty per split, in the objective's units (module docstring).
    min_samples_leaf : int, default=1
        Minimum number of training samples in every leaf that receives samples.
    sample_weight : array-like of shape (n_samples,), optional
        Non-negative weights. Samples of weight 0 are left out of the model (they
        change neither the objective nor, by this convention, the leaf sizes).
    merge_duplicates : bool, default=True
        Merge samples with identical features and label into one weighted row (exact;
        leaf sizes count the merged samples).

    Attributes
    ----------
    X, y, weight, count : ndarray
        The modelled (merged) rows, their class codes, summed weights and multiplicities.
    weight_scale : float
        Power of two putting the largest merged weight in ``[0.5, 1)``: the model sees
        ``model_weight = weight * weight_scale`` (exact), numbers of order one whatever
        the user's weight units.
    model_weight : ndarray
        ``weight * weight_scale``.
    total_weight : float
        Sum of ``model_weight`` (model units).
    baseline_error : float
        :math:`\\hat L`, the weighted error of predicting the majority class (user units).
    model_error_scale : float
        ``1 / (baseline_error * weight_scale)``, the objective's factor on model-unit
        errors (1 when the baseline error is 0).
    error_scale : float
        ``1 / baseline_error``, the same factor on user-unit errors.
    spec : ModelSpec or None
        The model after :meth:`build`.
    vars : dict[str, ndarray]
        Column indices of each variable block after :meth:`build`.
    """

    name = "base"
    #: Peak memory of a solve, ``(base bytes, bytes per non-zero)`` (``optitree._memory.estimate_peak_bytes``);
    #: calibrated per formulation with ``python -m experiments.bench_memory``.
    solve_memory = (150 * 2**20, 550)
    #: A valid lower bound on the model's objective: every term (weighted errors or
    #: losses, penalties) is non-negative. The estimators report
    #: ``max(solver bound, objective_lower_bound)`` as ``result_.bound``.
    objective_lower_bound = 0.0
    #: Whether the model's objective is the true objective of its tree (False: it
    #: underestimates it, e.g. a piecewise-linear approximation).
    objective_is_exact = True

    def __init__(
        self,
        X,
        y,
        *,
        depth: int,
        n_classes: int | None = None,
        alpha: float = 0.0,
        min_samples_leaf: int = 1,
        sample_weight=None,
        merge_duplicates: bool = True,
    ):
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] == 0 or X.shape[1] == 0:
            raise ValueError(f"X must be a non-empty 2-D array, got shape {X.shape}")
        if not np.isfinite(X).all():
            raise ValueError("X contains NaN or infinite values; the formulations need finite features")
        y = np.asarray(y)
        if y.shape != (X.shape[0],):
            raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
        if not np.issubdtype(y.dtype, np.integer):
            if not (np.issubdtype(y.dtype, np.floating) and np.all(y == np.round(y))):
                raise ValueError("y must hold integer class codes 0 .. n_classes - 1")
        y = y.astype(np.intp)
        if n_classes is None:
            n_classes = int(y.max()) + 1
        if y.min() < 0 or y.max() >= n_classes:
            raise ValueError(f"class codes must lie in [0, {n_classes}), got [{y.min()}, {y.max()}]")
        if not isinstance(depth, numbers.Integral) or isinstance(depth, bool) or depth < 1:
            raise ValueError(f"depth must be an integer >= 1, got {depth!r}")
        if not isinstance(alpha, numbers.Real) or not np.isfinite(alpha) or alpha < 0:
            raise ValueError(f"alpha must be a finite number >= 0, got {alpha!r}")
        if not isinstance(min_samples_leaf, numbers.Integral) or min_samples_leaf < 1:
            raise ValueError(f"min_samples_leaf must be an integer >= 1, got {min_samples_leaf!r}")
        sw = np.ones(X.shape[0]) if sample_weight is None else np.asarray(sample_weight, np.float64)
        if sw.shape != (X.shape[0],):
            raise ValueError(f"sample_weight must have shape ({X.shape[0]},), got {sw.shape}")
        if not np.isfinite(sw).all() or (sw < 0).any():
            raise ValueError("sample_weight must be finite and non-negative")
        if not (sw > 0).any():
            raise ValueError("sample_weight is zero for every sample")

        self.depth = int(depth)
        self.n_classes = int(n_classes)
        self.alpha = float(alpha)
        self.min_samples_leaf = int(min_samples_leaf)
        self.n_features = X.shape[1]
        self.X_train, self.y_train, self.weight_train = X, y, sw
        keep = sw > 0
        Xk, yk, wk = X[keep], y[keep], sw[keep]
        if merge_duplicates:
            rows, inverse = np.unique(np.column_stack([Xk, yk]), axis=0, return_inverse=True)
            inverse = inverse.ravel()
            self.X = np.ascontiguousarray(rows[:, :-1])
            self.y = rows[:, -1].astype(np.intp)
            self.weight = np.bincount(inverse, weights=wk, minlength=rows.shape[0])
            self.count = np.bincount(inverse, minlength=rows.shape[0]).astype(np.float64)
        else:
            self.X, self.y, self.weight, self.count = Xk, yk, wk, np.ones(yk.shape[0])
        self.weight_scale = power_of_two_scale(float(self.weight.max()))
        self.model_weight = self.weight * self.weight_scale
        class_weight = np.bincount(self.y, weights=self.model_weight, minlength=self.n_classes)
        self.total_weight = float(class_weight.sum())
        model_baseline = float(self.total_weight - class_weight.max())
        self.model_error_scale = 1.0 / model_baseline if model_baseline > 0 else 1.0
        self.baseline_error = model_baseline / self.weight_scale
        self.error_scale = self.model_error_scale * self.weight_scale
        self.spec = None
        self.vars: dict[str, np.ndarray] = {}

    # ------------------------------------------------------------------ geometry
    @property
    def n_samples(self) -> int:
        """Number of modelled (merged, positive-weight) rows."""
        return self.X.shape[0]

    @property
    def n_branch(self) -> int:
        return 2**self.depth - 1

    @property
    def n_leaves(self) -> int:
        return 2**self.depth

    # ------------------------------------------------------------------ model
    @abstractmethod
    def estimate_size(self) -> tuple[int, int, int]:
        """``(n_rows, n_cols, nnz)`` of the model :meth:`build` will create, computed without building it."""

    @abstractmethod
    def build(self):
        """Build and return the :class:`~optitree._model.ModelSpec`; also sets ``spec`` and ``vars``."""

    @abstractmethod
    def _heap_from_solution(self, x: np.ndarray):
        """The solution's tree as a :class:`greedy.HeapTree` with thresholds in original units."""

    @abstractmethod
    def _start_columns(self, tree: Tree) -> np.ndarray:
        """Complete solution vector (every column) encoding a canonical tree of depth <= D."""

    def discrete_start(self, x: np.ndarray) -> dict[int, float]:
        """Sparse MIP start from a complete vector: ``{column: value}`` of the integer columns.

        HiGHS completes the continuous columns by solving an LP (DESIGN.md §3).
        """
        self._require_spec()
        cols = np.concatenate(
            [blk.indices.ravel() for blk in self.spec.var_blocks.values() if blk.integer] or [np.zeros(0, np.intp)]
        )
        return dict(zip(cols.tolist(), np.round(x[cols]).tolist()))

    def _require_spec(self):
        if self.spec is None:
            raise RuntimeError(f"call build() before using the {self.name!r} model")

    # ------------------------------------------------------------------ trees
    def objective_of_tree(self, tree: Tree) -> float:
        """The objective of ``tree`` on the training data, recomputed with numpy.

        Uses the tree's own leaf predictions (``argmax`` of the node class
        distribution), the full training set and weights, and the same units as the
        model's objective: ``E(T) / baseline_error + alpha * n_splits``.
        """
        if tree.task != "classification":
            raise ValueError("objective_of_tree expects a classification tree")
        pred = tree.predict(self.X_train).argmax(axis=1)
        errors = float((self.weight_train[pred != self.y_train] * self.weight_scale).sum())
        return errors * self.model_error_scale + self.alpha * tree.n_splits

    def canonical_tree(self, tree: Tree) -> tuple[Tree, int]:
        """The tree that partitions the training data like ``tree``, in canonical form.

        Splits that send every modelled sample reaching them to one side are replaced
        by that side's subtree; every remaining threshold is moved to the midpoint
        between the largest value going left and the smallest going right among the
        samples reaching the node (scikit-learn's convention); node statistics and leaf
        labels are recomputed from the training data. Returns the tree and the number
        of splits removed.
        """
        self._check_tree(tree)
        X = self.X
        cl, cr, feat, thr = [], [], [], []
        coef = [] if tree.split_coef is not None else None

        def new_node():
            cl.append(TREE_LEAF), cr.append(TREE_LEAF), feat.append(LEAF_FEATURE), thr.append(np.nan)
            if coef is not None:
                coef.append(np.zeros(self.n_features))
            return len(cl) - 1

        removed = 0
        stack = [(0, new_node(), np.arange(self.n_samples))]
        while stack:
            old, new, idx = stack.pop()
            while not tree.is_leaf[old]:
                f = tree.feature[old]
                v = X[idx] @ tree.split_coef[old] if f == OBLIQUE else X[idx, f]
                left = v <= tree.threshold[old]
                if left.all() or not left.any():
                    old = tree.children_left[old] if left.all() else tree.children_right[old]
                    removed += 1
                    continue
                break
            if tree.is_leaf[old]:
                continue
            feat[new] = f
            thr[new] = float(midpoint_threshold(v[left].max(), v[~left].min()))
            if coef is not None and f == OBLIQUE:
                coef[new] = tree.split_coef[old]
            lnew, rnew = new_node(), new_node()
            cl[new], cr[new] = lnew, rnew
            stack.append((tree.children_right[old], rnew, idx[~left]))
            stack.append((tree.children_left[old], lnew, idx[left]))
        n = len(cl)
        out = Tree(
            cl, cr, feat, thr, np.zeros((n, self.n_classes)), n_features=self.n_features,
            split_coef=None if coef is None else np.array(coef),
        )
        return self._with_statistics(out), removed

    def pruned_tree(self, tree: Tree) -> tuple[Tree, int]:
        """Best subtree of a canonical ``tree`` for the objective (bottom-up pruning).

        A split is kept only when ``alpha`` plus the best cost of its two subtrees is
        strictly smaller than the error of the node as a leaf (ties prune). Returns the
        pruned tree and the number of splits removed.
        """
        leaf_cost = self._leaf_costs(tree)
        best = leaf_cost.copy()
        keep = np.zeros(tree.node_count, bool)
        for node in np.flatnonzero(~tree.is_leaf)[::-1]:  # children before parents
            split_cost = self.alpha + best[tree.children_left[node]] + best[tree.children_right[node]]
            keep[node] = split_cost < leaf_cost[node] - 1e-12 * max(1.0, leaf_cost[node])
            best[node] = split_cost if keep[node] else leaf_cost[node]
        removed = 0
        cl, cr = tree.children_left.copy(), tree.children_right.copy()
        feat, thr = tree.feature.copy(), tree.threshold.copy()
        reachable = np.zeros(tree.node_count, bool)
        reachable[0] = True
        for node in np.flatnonzero(~tree.is_leaf):  # parents before children
            if not reachable[node]:
                continue
            if keep[node]:
                reachable[cl[node]] = reachable[cr[node]] = True
            else:
                cl[node] = cr[node] = TREE_LEAF
                feat[node], thr[node] = LEAF_FEATURE, np.nan
                removed += 1
        if not removed:
            return tree, 0
        ids = np.flatnonzero(reachable)
        renum = np.full(tree.node_count, TREE_LEAF)
        renum[ids] = np.arange(ids.size)
        cl, cr = cl[ids], cr[ids]
        cl[cl >= 0], cr[cr >= 0] = renum[cl[cl >= 0]], renum[cr[cr >= 0]]
        out = Tree(
            cl, cr, feat[ids], thr[ids], tree.value[ids], n_features=self.n_features, task=tree.task,
            split_coef=None if tree.split_coef is None else tree.split_coef[ids],
        )
        return self._with_statistics(out), removed

    def _leaf_costs(self, tree: Tree) -> np.ndarray:
        """Objective term of every node of ``tree`` if it were a leaf (weighted errors, scaled)."""
        v = tree.value * self.weight_scale  # weighted class counts from the training data, in model units
        return (v.sum(axis=1) - v.max(axis=1)) * self.model_error_scale

    def prepare_start(self, tree: Tree) -> tuple[Tree, str]:
        """The start the model receives for ``tree``, and a note on what changed ("" if nothing).

        The tree is made canonical on the training data (:meth:`canonical_tree`), its
        thresholds are moved into the formulation's threshold set where needed
        (:meth:`_representable`), and it is pruned for the objective (:meth:`pruned_tree`):
        the start's objective is never worse than the objective of ``tree`` unless a
        threshold had to move.
        """
        canon, removed = self.canonical_tree(tree)
        snapped, moved = self._representable(canon)
        if moved:
            snapped, more = self.canonical_tree(snapped)
            removed += more
        pruned, cut = self.pruned_tree(snapped)
        notes = []
        if moved:
            notes.append(f"{moved} threshold(s) moved to the nearest modelled threshold (start changed)")
        if removed:
            notes.append(f"{removed} split(s) separating no training samples removed")
        if cut:
            notes.append(f"{cut} split(s) not paying for alpha pruned")
        return pruned, "; ".join(notes)

    def _representable(self, tree: Tree) -> tuple[Tree, int]:
        """Tree whose splits the model can express, and the number of thresholds moved.

        Default: every threshold partition is expressible (identity).
        """
        return tree, 0

    def start_vector(self, tree: Tree) -> np.ndarray:
        """Complete solution vector (all columns of :attr:`spec`) encoding ``tree``.

        ``tree`` must be canonical (:meth:`prepare_start`) and of depth <= ``depth``.
        Raises :class:`InfeasibleStartError` when a leaf holds fewer than
        ``min_samples_leaf`` modelled samples.
        """
        self._require_spec()
        self._check_tree(tree)
        if tree.max_depth > self.depth:
            raise ValueError(f"start tree has depth {tree.max_depth} > the model's depth {self.depth}")
        leaf_of = tree.apply(self.X)
        sizes = np.bincount(leaf_of, weights=self.count, minlength=tree.node_count)[tree.is_leaf]
        if (sizes < self.min_samples_leaf).any():
            raise InfeasibleStartError(
                f"start tree has a leaf with {int(sizes.min())} samples < min_samples_leaf={self.min_samples_leaf}"
            )
        return self._start_columns(tree)

    def start_from_tree(self, tree: Tree) -> dict[int, float]:
        """Sparse MIP start for ``tree`` (after :meth:`prepare_start`): values of the discrete columns."""
        return self.discrete_start(self.start_vector(self.prepare_start(tree)[0]))

    def decode(self, spec, x) -> Tree:
        """Tree of a solution ``x`` of ``spec``, in original units, canonical on the training data.

        The training partition equals the model's; thresholds sit at node-local
        midpoints; statistics come from :meth:`greedy.Tree.fill_statistics`.
        """
        if spec is not self.spec:
            raise ValueError("decode expects the ModelSpec built by this formulation")
        x = np.asarray(x, dtype=np.float64)
        if x.shape != (spec.n_cols,):
            raise ValueError(f"x must have shape ({spec.n_cols},), got {x.shape}")
        heap = self._heap_from_solution(x)
        tree = Tree.from_heap(heap, self.n_features, "classification")
        return self.canonical_tree(tree)[0]

    # ------------------------------------------------------------------ helpers
    def _check_tree(self, tree: Tree) -> None:
        if not isinstance(tree, Tree):
            raise TypeError(f"expected a greedy.Tree, got {type(tree).__name__}")
        if tree.task != "classification":
            raise ValueError("a classification formulation needs a classification tree")
        if tree.n_features != self.n_features:
            raise ValueError(f"tree has {tree.n_features} features, the data has {self.n_features}")
        if tree.category_left is not None and tree.categorical_nodes.any():
            raise ValueError("categorical splits are not supported by threshold formulations")

    def _with_statistics(self, tree: Tree) -> Tree:
        return tree.fill_statistics(self.X_train, self.y_train, self.weight_train, n_classes=self.n_classes)

    def _heap_ids(self, tree: Tree) -> np.ndarray:
        """Heap id (root = 1) of every node of a compact tree."""
        heap = np.zeros(tree.node_count, np.int64)
        heap[0] = 1
        for node in np.flatnonzero(~tree.is_leaf):  # parents before children
            heap[tree.children_left[node]] = 2 * heap[node]
            heap[tree.children_right[node]] = 2 * heap[node] + 1
        return heap

    def _node_samples(self, tree: Tree) -> list[np.ndarray]:
        """Indices of the modelled rows reaching every node of ``tree``."""
        out = [np.zeros(0, np.intp)] * tree.node_count
        out[0] = np.arange(self.n_samples)
        for node in np.flatnonzero(~tree.is_leaf):  # parents before children
            idx = out[node]
            f = tree.feature[node]
            v = self.X[idx] @ tree.split_coef[node] if f == OBLIQUE else self.X[idx, f]
            left = v <= tree.threshold[node]
            out[tree.children_left[node]], out[tree.children_right[node]] = idx[left], idx[~left]
        return out
