"""Shared skeleton of the depth-bounded tree formulations, for every task.

Every formulation models a tree on the *complete* binary tree of depth ``D`` in heap
indexing (:mod:`optitree.formulations._heap`): branch nodes ``1 .. 2**D - 1``, leaves
``2**D .. 2**(D+1) - 1``, node ``n`` has children ``2n`` (left, ``x[f] <= threshold``)
and ``2n + 1`` (right). A branch node that does not split sends every sample to its
right child (``PASS_THROUGH``).

:class:`TreeFormulation` holds what every formulation needs and nothing specific to one
of them or to one task: validated and merged training data, the objective's units, the
heap geometry, start trees made canonical on the training data and pruned for the
objective, decoding back to a :class:`greedy.Tree` in original feature units, the numpy
recomputation of the objective, a per-instance lower bound on it and the
:meth:`~TreeFormulation.rows_after_solve` hook. What depends on the targets (their
encoding and units, the baseline, leaf values, the loss) is its task policy
(:mod:`optitree.formulations._task`).

Objective units
---------------
.. math::

    \\text{objective}(T) = \\frac{E(T)}{\\hat L} + \\text{penalty}(T),
    \\qquad \\text{penalty}(T) = \\alpha\\, S(T) \\text{ by default}

with :math:`E(T)` the weighted training loss of tree :math:`T` (misclassifications for
classification), :math:`S(T)` its number of splits and :math:`\\hat L` the loss of the
best tree without splits (the majority class; the best constant): Bertsimas & Dunn's
normalisation, ``alpha`` is the fraction of the baseline loss a split must remove to pay
for itself, independent of the sample size. When :math:`\\hat L = 0` every tree has zero
loss and the scale is taken as 1.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from greedy import LEAF_FEATURE, OBLIQUE, TREE_LEAF, Tree, midpoint_threshold

from ..model import solution_violation
from ._heap import CompleteTreeShape, HeapTree, from_heap
from ..problem import Problem, power_of_two_scale
from ._task import ClassificationTask, Task

__all__ = ["TreeFormulation", "InfeasibleStartError"]


class InfeasibleStartError(ValueError):
    """A start tree cannot be given to the model (e.g. a leaf below ``min_samples_leaf``)."""


class TreeFormulation(CompleteTreeShape, ABC):
    """Base class of the depth-``D`` tree formulations.

    Parameters
    ----------
    problem : optitree.problem.Problem
        The problem (:meth:`of` makes it from arrays): rows, loss, depth ``D``, ``alpha`` per
        split in the objective's units (module docstring), ``min_samples_leaf`` (training
        samples in every leaf that receives samples). Samples of weight 0 are left out of the
        model (they change neither the objective nor, by this convention, the leaf sizes); its
        feature restrictions are the pipeline's to apply (:meth:`forbid_features`).
    task : Task, optional
        The task policy, an instance of :attr:`task_type` for the problem's loss; default
        ``ClassificationTask(problem.n_classes)``. A regression formulation makes its own.
    merge_duplicates : bool, default=True
        Merge samples with identical features and target into one weighted row (exact;
        leaf sizes count the merged samples).

    Attributes
    ----------
    task : Task
        The task policy, bound to the data.
    n_classes : int
        Number of classes (0 for regression).
    X, y, weight, count : ndarray
        The modelled (merged) rows, their encoded targets, summed weights and multiplicities.
    X_train, y_train, weight_train : ndarray
        The training data as given (``y_train`` encoded).
    units : optitree.problem.Units
        The problem's one unit system, shared with the exact engine: the model sees weights
        ``weight / units.weight_unit`` and, for regression, targets ``units.targets(y)``;
        its losses times ``units.cost_unit`` are the user's, exactly.
    model_weight : ndarray
        ``units.weights(weight)``.
    total_weight : float
        Sum of ``model_weight`` (model units).
    baseline_error : float
        :math:`\\hat L`, the loss of the best tree without splits (user units).
    model_error_scale : float
        The objective's factor on model-unit losses: ``1 / L̂`` in model units (1 when
        the baseline is 0).
    error_scale : float
        The same factor on user-unit losses.
    objective_lower_bound : float
        A valid lower bound on the objective of every tree this formulation can return
        (default 0: every term is non-negative). A subclass or an acceleration stage may
        raise it for this instance; the estimators report
        ``max(solver bound, objective_lower_bound)`` as ``result_.bound``.
    spec : ModelSpec or None
        The model after :meth:`build`.
    vars : dict[str, ndarray]
        Column indices of each variable block after :meth:`build`.
    """

    name = "base"
    #: The task policy class this formulation models (the registry's task).
    task_type: ClassVar[type[Task]] = ClassificationTask
    #: Peak memory of a solve, ``(base bytes, bytes per non-zero)`` (``optitree.model._memory.estimate_peak_bytes``);
    #: calibrated per formulation with ``python -m benchmarks.memory``.
    solve_memory = (150 * 2**20, 550)
    #: Whether the model's objective is the true objective of its tree (False: it
    #: underestimates it, e.g. a piecewise-linear approximation).
    objective_is_exact = True
    #: Whether the model can be solved by fixing its root choice (:meth:`node_choices`), one sub-model each.
    decomposes_at_root: ClassVar[bool] = False
    #: Whether the model maps each feature to ``[0, 1]`` by its range, so that a feature spanning more
    #: than float64 holds (or less than 2**-1000) cannot be modelled.
    scales_features: ClassVar[bool] = False

    def __init__(self, problem: Problem, *, task: Task | None = None, merge_duplicates: bool = True):
        if not isinstance(problem, Problem):
            raise TypeError(f"{type(self).__name__} takes an optitree.problem.Problem (or use "
                            f"{type(self).__name__}.of(X, y, depth=...)), got {type(problem).__name__}")
        task = ClassificationTask(problem.n_classes) if task is None else task
        if not isinstance(task, self.task_type) or task.policy is not problem.loss:
            raise ValueError(f"{type(self).__name__} models a {self.task_type.name} loss, not the problem's "
                             f"{problem.loss.name!r}")
        task.units = problem.units
        self.problem, self.task = problem, task
        self.depth, self.alpha, self.min_samples_leaf = problem.depth, problem.alpha, problem.min_samples_leaf
        self.n_classes, self.n_features, self.units = task.n_classes, problem.n_features, problem.units
        self.X_train, self.y_train, self.weight_train = problem.X, problem.y, problem.weight
        self.merge_duplicates = bool(merge_duplicates)
        self.model_error_scale = problem.objective_scale
        self.baseline_error = problem.baseline * self.units.cost_unit
        with np.errstate(divide="ignore"):  # inf: user-unit losses below float64's range (targets near 1e-300)
            self.error_scale = float(np.float64(self.model_error_scale) / self.units.cost_unit)
        self.objective_lower_bound = 0.0
        self.spec = None
        self.vars: dict[str, np.ndarray] = {}

    @functools.cached_property
    def _modelled_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(X, y, weight, count)`` of the modelled rows: positive weight, merged when ``merge_duplicates``
        (made on first use: a fit the engine settles never reads them)."""
        keep = self.weight_train > 0
        Xk, yk, wk = self.X_train[keep], self.y_train[keep], self.weight_train[keep]
        if not self.merge_duplicates:
            return Xk, yk, wk, np.ones(yk.shape[0])
        rows, inverse = np.unique(np.column_stack([Xk, yk]), axis=0, return_inverse=True)
        inverse = inverse.ravel()
        return (np.ascontiguousarray(rows[:, :-1]), rows[:, -1].astype(yk.dtype),
                np.bincount(inverse, weights=wk, minlength=rows.shape[0]),
                np.bincount(inverse, minlength=rows.shape[0]).astype(np.float64))

    @property
    def X(self) -> np.ndarray:
        return self._modelled_rows[0]

    @property
    def y(self) -> np.ndarray:
        return self._modelled_rows[1]

    @property
    def weight(self) -> np.ndarray:
        return self._modelled_rows[2]

    @property
    def count(self) -> np.ndarray:
        return self._modelled_rows[3]

    @functools.cached_property
    def model_weight(self) -> np.ndarray:
        """``units.weights(weight)``."""
        return self.units.weights(self.weight)

    @functools.cached_property
    def total_weight(self) -> float:
        """Sum of ``model_weight`` (model units)."""
        return float(self.model_weight.sum())

    @classmethod
    def of(cls, X, y, *, depth, n_classes=None, loss=None, alpha=0.0, min_samples_leaf=1, sample_weight=None,
           **options):
        """The formulation of the problem on arrays: :meth:`Problem.of <optitree.problem.Problem.of>` of ``X, y``
        (class codes, or real targets with a regression ``loss``: default the task's), then ``options``."""
        problem = Problem.of(X, y, sample_weight, loss=cls.task_type.default_loss if loss is None else loss,
                             depth=depth, alpha=alpha, min_samples_leaf=min_samples_leaf, n_classes=n_classes)
        return cls(problem, **options)

    @property
    def row_weight_scale(self) -> float:
        """The power of two that puts the largest model weight in ``[0.5, 1)``, for rows that hold weights.

        Scaling a row's weights (and its variables' costs inversely) conditions the MIP's matrix
        without changing its objective: weights in the problem's units grow with the spread of
        the user's (up to 2**1000), beyond what a solver accepts as a coefficient.
        """
        return power_of_two_scale(float(self.model_weight.max()))

    # ------------------------------------------------------------------ geometry
    @property
    def n_samples(self) -> int:
        """Number of modelled (merged, positive-weight) rows."""
        return self.X.shape[0]

    # ------------------------------------------------------------------ model
    @abstractmethod
    def estimate_size(self) -> tuple[int, int, int]:
        """``(n_rows, n_cols, nnz)`` of the model :meth:`build` will create, computed without building it."""

    @abstractmethod
    def build(self):
        """Build and return the :class:`~optitree.model.ModelSpec`; also sets ``spec`` and ``vars``."""

    @abstractmethod
    def _heap_from_solution(self, x: np.ndarray) -> HeapTree:
        """The solution's splits as a :class:`HeapTree` (:meth:`_heap`) with thresholds in original units."""

    @abstractmethod
    def _start_columns(self, tree: Tree) -> np.ndarray:
        """Complete solution vector (every column) encoding a canonical tree of depth <= D."""

    def solver_start(self, x: np.ndarray) -> dict[int, float]:
        """MIP start from a complete vector: ``{column: value}`` of every column, integer ones rounded.

        Complete, so HiGHS need not solve the LP that completes a partial start, which it
        runs before starting its clock (measured, FlowOCT on breast_cancer: its first trace
        point at 0.55 s at depth 2 and 1.22 s at depth 3 with the integer columns alone,
        0.19 s and 0.36 s with every column).
        """
        self._require_spec()
        _, _, _, integer = self.spec.column_arrays()
        x = np.asarray(x, dtype=np.float64)
        return dict(enumerate(np.where(integer == 1, np.round(x), x).tolist()))

    def _require_spec(self):
        if self.spec is None:
            raise RuntimeError(f"call build() before using the {self.name!r} model")

    def rows_after_solve(self, x: np.ndarray, result) -> list[tuple] | None:
        """Rows to add to the model after a solve, or None to keep the solution (default).

        The fit pipeline (:func:`optitree.solvers.resolve.solve_adding_rows`) calls this after
        every solve that returned a solution ``x`` (every column of :attr:`spec`;
        ``result`` is its :class:`~optitree.solvers.SolveResult`). Each row block is a
        tuple of :meth:`ModelSpec.add_rows <optitree.model.ModelSpec.add_rows>`
        arguments ``(name, n_rows, rows, cols, vals, lb, ub)`` with a new block name;
        the pipeline adds them to the loaded solver and solves again, warm from ``x``,
        within the remaining time limit, until this returns None (or no rows) or the
        time is up. Use it for cuts and outer loops (rows found violated by ``x``).
        Rows must not cut off the start tree: the pipeline returns the start when the
        solver finds nothing better.
        """
        return None

    # ------------------------------------------------------------------ trees
    def objective_of_tree(self, tree: Tree, X=None) -> float:
        """The objective of ``tree`` on the training data, recomputed with numpy.

        Uses the tree's own predictions (leaf majority classes, leaf values or leaf
        models), the full training set and weights, and the same units as the model's
        objective: ``E(T) / baseline_error + penalty(T)``. ``X``: the training rows as
        ``tree`` reads them, when not the model's matrix (e.g. the user's features, NaN
        included, for a tree outside the split space: :mod:`optitree.split_space`).
        """
        if tree.task != self.task.name:
            raise ValueError(f"objective_of_tree expects a {self.task.name} tree")
        X = self.X_train if X is None else X
        loss = self.task.model_loss(tree, X, self.y_train, self.units.weights(self.weight_train))
        return loss * self.model_error_scale + self.penalty(tree)

    def penalty(self, tree: Tree) -> float:
        """The objective's complexity terms for ``tree``: ``alpha`` per split (default)."""
        return self.alpha * tree.n_splits

    def canonical_tree(self, tree: Tree) -> tuple[Tree, int]:
        """The tree that partitions the training data like ``tree``, in canonical form.

        Splits that send every modelled sample reaching them to one side are replaced
        by that side's subtree; every remaining threshold is moved to the midpoint
        between the largest value going left and the smallest going right among the
        samples reaching the node (scikit-learn's convention); node statistics are
        recomputed from the training data. Leaves keep ``tree``'s
        :attr:`~greedy.Tree.leaf_class` when it has one, else predict their majority class.
        Returns the tree and the number of splits removed.
        """
        self._check_tree(tree)
        X = self.X
        cl, cr, feat, thr, label = [], [], [], [], []
        coef = [] if tree.split_coef is not None else None

        def new_node():
            cl.append(TREE_LEAF), cr.append(TREE_LEAF), feat.append(LEAF_FEATURE), thr.append(np.nan), label.append(0)
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
                if tree.leaf_class is not None:
                    label[new] = tree.leaf_class[old]
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
        out = self._with_statistics(Tree(
            cl, cr, feat, thr, np.zeros((n, self.task.n_values)), n_features=self.n_features, task=self.task.name,
            split_coef=None if coef is None else np.array(coef),
        ))
        if tree.leaf_class is None:
            return out, removed
        return Tree.from_dict({**out.to_dict(), "leaf_class": np.where(out.is_leaf, label, out.node_class)}), removed

    def pruned_tree(self, tree: Tree) -> tuple[Tree, int]:
        """Best subtree of a canonical ``tree`` for the objective (bottom-up pruning).

        A split is kept only when ``alpha`` plus the best cost of its two subtrees is
        strictly smaller than the loss of the node as a leaf (ties prune). Returns the
        pruned tree and the number of splits removed; a tree whose task does not price
        its nodes as leaves (:attr:`Task.prunable`), or whose leaves have given labels
        (:attr:`greedy.Tree.leaf_class`, which pruning to majority leaves would drop), is
        returned as it is.
        """
        if not self.task.prunable or tree.leaf_class is not None:
            return tree, 0
        leaf_cost = self.task.leaf_losses(self, tree) * self.model_error_scale
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

    def prepare_start(self, tree: Tree, prune: bool = True) -> tuple[Tree, str]:
        """The start the model receives for ``tree``, and a note on what changed ("" if nothing).

        The tree is made canonical on the training data (:meth:`canonical_tree`), its
        thresholds are moved into the formulation's threshold set where needed
        (:meth:`_representable`), and, with ``prune``, it is pruned for the objective
        (:meth:`pruned_tree`): the start's objective is never worse than the objective of
        ``tree`` unless a threshold had to move. Without ``prune`` a split that does not
        lower the objective stays (its leaves may still matter to user rows).
        """
        canon, removed = self.canonical_tree(tree)
        snapped, moved = self._representable(canon)
        if moved:
            snapped, more = self.canonical_tree(snapped)
            removed += more
        pruned, cut = self.pruned_tree(snapped) if prune else (snapped, 0)
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

    def improve_start(self, tree: Tree, X, y, sample_weight, *, time_limit, seed) -> Tree | None:
        """A better start than ``tree`` found by a heuristic of this formulation, or None (none here).

        For models beyond the exact engine (hyperplanes, linear leaves): the pipeline offers the
        result as a start (:func:`~optitree.pipeline._start.better_start` keeps the better feasible
        one). ``X, y, sample_weight`` are the fit's data (``y`` encoded), ``time_limit`` seconds.
        """
        return None

    def threshold_rule(self) -> str:
        """The thresholds the model splits a numeric feature on, for the certificate's split space."""
        return "all midpoints"

    def objective_granularity(self) -> float:
        """``g`` with every objective value a multiple of it (model units), or 0 if unknown.

        Classification without a split penalty (``alpha == 0``) and with integral merged
        weights: the objective is the misclassified weight times :attr:`error_scale`.
        """
        if self.n_classes == 0 or self.alpha != 0 or not np.all(self.weight == np.round(self.weight)):
            return 0.0
        return float(self.error_scale)

    def root_split_columns(self):
        """The columns choosing the root's split, for the exact engine's root bound row, or None.

        Returns ``(columns, feature, threshold)``: exactly one of ``columns`` is 1 when the
        root splits and none when it is a leaf; ``feature[c]`` is the split feature of
        column ``c`` and ``threshold[c]`` its threshold, or ``threshold`` is None when a
        column stands for every threshold of its feature
        (:func:`optitree.pipeline._engine.root_bound_row`). Default: None (no root rows).
        """
        return None

    def node_choices(self, node: int) -> tuple[np.ndarray, int]:
        """The exclusive choices of branch ``node`` (heap id, root 1) in the built model.

        Returns ``(split_columns, leaf_column)``: one split column per candidate threshold
        (``threshold_feature``/``threshold_value`` order), and the column that makes the node
        a leaf; exactly one of them is 1 when the node is reached. Formulations that
        :attr:`decomposes_at_root` implement it.
        """
        raise ValueError(f"formulation {self.name!r} has no split column per threshold")

    def forbid_features(self, spec, allowed) -> int:
        """Fix to 0 in ``spec`` every split column of a feature not allowed at its node; returns how many.

        ``allowed``: a bool mask ``(2**depth - 1, n_features)`` over branch nodes in heap order
        (row ``n - 1`` for node ``n``). Formulations with per-node split columns implement it.
        """
        raise ValueError(f"allowed_features applies to formulation 'flow' or 'oct', got {self.name!r}")

    def leaf_value_columns(self) -> np.ndarray | None:
        """The columns of the leaf values (heap order) when the whole model's choice of leaf values
        can be searched apart from its splits (depth 2, constant leaves, squared error:
        :mod:`optitree.pipeline._leaf_rows`), else None (default)."""
        return None

    def split_groups(self):
        """Per branch node, the columns of which at most one is 1, for the exact engine's implied restrictions.

        Returns ``(columns, feature)`` or None: ``columns`` (B, m) in heap order, ``feature[j]``
        the split feature of member ``j`` (-1 for a member that is no split, e.g. FlowOCT's
        ``p[n]``). Default: None.
        """
        return None

    def split_columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Columns that say which feature each branch node splits on, for :meth:`limit_distinct_features`.

        Returns ``(columns, nodes, features)``, aligned: ``Σ x[columns]`` over the entries
        of node ``n`` (heap row ``n - 1``) and feature ``f`` is 1 when ``n`` splits on
        ``f`` and 0 otherwise. Formulations with axis-aligned split columns override it.
        """
        raise ValueError(f"formulation {self.name!r} has no axis-aligned split columns")

    def limit_distinct_features(self, k: int) -> None:
        """Add to the built model: the tree splits on at most ``k`` distinct features.

        With the :meth:`split_columns` ``s[n, f]`` and a continuous ``u_f ∈ [0, 1]`` per
        feature (block ``feature_used``)

        .. math:: \\sum_{j \\in s[n, f]} x_j \\le u_f \\quad \\forall n, f, \\qquad \\sum_f u_f \\le k.

        ``u_f`` need not be integer: it is bounded below by 0/1 indicators, so the rows
        admit exactly the trees with at most ``k`` features (:meth:`start_vector` sets
        ``u_f`` to the start's features).
        """
        self._require_spec()
        spec = self.spec
        cols, nodes, feats = self.split_columns()
        u = spec.add_vars("feature_used", self.n_features, ub=1.0)
        self.vars["feature_used"] = u
        pair, row = np.unique(nodes * self.n_features + feats, return_inverse=True)
        n_pairs = pair.size
        spec.add_rows("feature_used_link", n_pairs, np.r_[row, np.arange(n_pairs)],
                      np.r_[cols, u[pair % self.n_features]], np.r_[np.ones(cols.size), -np.ones(n_pairs)],
                      -np.inf, 0.0)
        spec.add_rows("max_distinct_features", 1, np.zeros(u.size, np.intp), u, np.ones(u.size), -np.inf, float(k))

    def start_vector(self, tree: Tree) -> np.ndarray:
        """Complete solution vector (all columns of :attr:`spec`) encoding ``tree``.

        ``tree`` must be canonical (:meth:`prepare_start`), or a tree :meth:`decode`
        returned, and of depth <= ``depth``. Raises :class:`InfeasibleStartError` when a
        leaf that receives samples holds fewer than ``min_samples_leaf`` of them.
        """
        self._require_spec()
        self._check_tree(tree)
        if tree.max_depth > self.depth:
            raise ValueError(f"start tree has depth {tree.max_depth} > the model's depth {self.depth}")
        leaf_of = tree.apply(self.X)
        sizes = np.bincount(leaf_of, weights=self.count, minlength=tree.node_count)[tree.is_leaf]
        sizes = sizes[sizes > 0]
        if (sizes < self.min_samples_leaf).any():
            raise InfeasibleStartError(
                f"start tree has a leaf with {int(sizes.min())} samples < min_samples_leaf={self.min_samples_leaf}"
            )
        x = self._start_columns(tree)
        if "feature_used" in self.vars:
            used = np.unique(tree.feature[~tree.is_leaf]).astype(np.intp)
            x[self.vars["feature_used"][used]] = 1.0
        return x

    def start_from_tree(self, tree: Tree) -> dict[int, float]:
        """MIP start for ``tree`` (after :meth:`prepare_start`): :meth:`solver_start` of its vector."""
        return self.solver_start(self.start_vector(self.prepare_start(tree)[0]))

    def decode(self, spec, x) -> Tree:
        """Tree of a solution ``x`` of ``spec``, in original units, canonical on the training data.

        The training partition equals the model's; thresholds sit at node-local
        midpoints; statistics come from :meth:`greedy.Tree.fill_statistics`. Every leaf
        predicts its majority class (the canonical labels: never a worse objective) unless
        that tree is not a solution of ``spec`` (user rows on the labels, e.g. a quota of
        leaves per class, can forbid it); then the leaves keep the model's labels
        (:attr:`greedy.Tree.leaf_class`). If that is still no solution (such rows can count
        a leaf that a split sends no training sample to, which the canonical form drops),
        the model's tree is returned as it is, with its thresholds and every split.
        """
        if spec is not self.spec:
            raise ValueError("decode expects the ModelSpec built by this formulation")
        x = np.asarray(x, dtype=np.float64)
        if x.shape != (spec.n_cols,):
            raise ValueError(f"x must have shape ({spec.n_cols},), got {x.shape}")
        model_tree = from_heap(self._heap_from_solution(x), self.n_features, self.task.name)
        tree, removed = self.canonical_tree(model_tree)
        if tree.leaf_class is None:
            return tree
        majority = Tree.from_dict({k: v for k, v in tree.to_dict().items() if k != "leaf_class"})
        if (not removed and np.array_equal(tree.node_class, majority.node_class)) or self._is_solution(majority):
            return majority  # the first test: the model's own tree, up to thresholds within the same gaps
        if self._is_solution(tree):
            return tree
        model_tree = self._with_statistics(model_tree)
        return model_tree if self._is_solution(model_tree) else tree

    # ------------------------------------------------------------------ helpers
    def _is_solution(self, tree: Tree) -> bool:
        """Whether the solution vector of a canonical ``tree`` satisfies every row of :attr:`spec`."""
        try:
            return solution_violation(self.spec, self.start_vector(tree)) is None
        except InfeasibleStartError:
            return False

    def _check_tree(self, tree: Tree) -> None:
        if not isinstance(tree, Tree):
            raise TypeError(f"expected a greedy.Tree, got {type(tree).__name__}")
        if tree.task != self.task.name:
            raise ValueError(f"a {self.task.name} formulation needs a {self.task.name} tree")
        if tree.n_features != self.n_features:
            raise ValueError(f"tree has {tree.n_features} features, the data has {self.n_features}")
        if tree.category_left is not None and tree.categorical_nodes.any():
            raise ValueError("categorical splits are not supported by threshold formulations")

    def _with_statistics(self, tree: Tree) -> Tree:
        return self.task.statistics(tree, self.X_train, self.y_train, self.weight_train)

    def _heap(self, feature: np.ndarray, threshold: np.ndarray, split_coef: np.ndarray | None = None,
              leaf_class: np.ndarray | None = None) -> HeapTree:
        """A :class:`HeapTree` of this depth with the given splits and the model's leaf labels
        (leaf values are recomputed on decoding)."""
        return HeapTree(self.depth, feature, threshold, np.zeros((self.n_leaves, self.task.n_values)), split_coef,
                        leaf_class)

    def heap_ids(self, tree: Tree) -> np.ndarray:
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
