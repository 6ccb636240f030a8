"""Task policies: what differs between classification and regression formulations.

A :class:`~optitree.formulations.TreeFormulation` merges data, makes starts canonical,
prunes, decodes and recomputes objectives in the same way for every task; it asks its
policy (``form.task``) for the parts that depend on the targets:

==================  ========================================  ==========================================
                    :class:`ClassificationTask`               :class:`RegressionTask`
==================  ========================================  ==========================================
targets             class codes ``0 .. K - 1``                finite reals
model units         weights in the problem's units            also targets (:class:`optitree.problem.Units`)
baseline ``L̂``      error of the majority class               loss of the best constant (median / mean)
leaf values         weighted class counts                     weighted median (absolute) or mean
loss of a tree      weighted misclassifications               weighted absolute or squared error
pruning             always                                    constant leaves only
==================  ========================================  ==========================================

A policy is created by its formulation and bound to its problem's units; the targets' encoding,
the baseline and the loss itself (leaf value, exponent, engine code) are the problem layer's
(:class:`optitree.problem.Problem`, :class:`optitree.problem.Loss`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from greedy import Tree

from ..problem import LOSSES as PROBLEM_LOSSES
from ..problem import Loss, Units, get_loss, weighted_median

__all__ = ["Task", "ClassificationTask", "RegressionTask", "LEAF_MODELS", "LOSSES"]

LEAF_MODELS = ("constant", "linear")
#: The regression losses a formulation models.
LOSSES = tuple(sorted(name for name, loss in PROBLEM_LOSSES.items() if loss.regression))


class Task(ABC):
    """The task half of a formulation (see the module docstring).

    Attributes
    ----------
    name : {"classification", "regression"}
        The :attr:`greedy.Tree.task` of the trees the formulation takes and returns.
    n_classes : int
        Number of classes; 0 for regression (as :attr:`greedy.Tree.n_classes`).
    policy : optitree.problem.Loss
        The loss.
    units : optitree.problem.Units
        The problem's units (set by the formulation).
    """

    name: ClassVar[str]
    #: The loss of :meth:`TreeFormulation.of <optitree.formulations.TreeFormulation.of>` when none is given.
    default_loss: ClassVar[str]
    n_classes: int
    policy: Loss
    units: Units

    @property
    def n_values(self) -> int:
        """Width of :attr:`greedy.Tree.value` for this task."""
        return max(self.n_classes, 1)

    @property
    def prunable(self) -> bool:
        """Whether :meth:`leaf_losses` prices every node of a tree as a leaf."""
        return True

    @abstractmethod
    def statistics(self, tree: Tree, X, y, weight) -> Tree:
        """``tree`` with node statistics and leaf values recomputed from training data."""

    @abstractmethod
    def model_loss(self, tree: Tree, X, y, model_weight) -> float:
        """Weighted training loss of ``tree``'s predictions, in model units."""

    @abstractmethod
    def leaf_losses(self, form, tree: Tree) -> np.ndarray:
        """Loss (model units) of every node of a canonical ``tree`` of ``form`` if it were a leaf."""


class ClassificationTask(Task):
    """Class codes, misclassification loss, majority-class baseline.

    Parameters
    ----------
    n_classes : int, optional
        Number of classes ``K`` (the problem's).
    """

    name = "classification"
    default_loss = "misclassification"
    policy = PROBLEM_LOSSES["misclassification"]

    def __init__(self, n_classes: int):
        self.n_classes = int(n_classes)

    def statistics(self, tree, X, y, weight) -> Tree:
        return tree.fill_statistics(X, y, weight, n_classes=self.n_classes)

    def model_loss(self, tree, X, y, model_weight) -> float:
        """Weighted misclassifications of the leaves' majority classes."""
        pred = tree.predict(X).argmax(axis=1)
        return float(model_weight[pred != y].sum())

    def leaf_losses(self, form, tree) -> np.ndarray:
        v = form.units.weights(tree.value)  # weighted class counts from the training data, in model units
        return v.sum(axis=1) - v.max(axis=1)


class RegressionTask(Task):
    """Real targets (in model units: scaled to ``[-1, 1]`` by a power of two), absolute or squared loss.

    Parameters
    ----------
    loss : {"absolute", "squared"}, default="absolute"
    leaf_model : {"constant", "linear"}, default="constant"
        Linear leaves are not pruned: their cost as a leaf needs an LP per node.
    """

    name = "regression"
    default_loss = "absolute"
    n_classes = 0

    def __init__(self, loss: str = "absolute", leaf_model: str = "constant"):
        if leaf_model not in LEAF_MODELS:
            raise ValueError(f"leaf_model must be one of {LEAF_MODELS}, got {leaf_model!r}")
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
        self.loss, self.leaf_model, self.policy = loss, leaf_model, get_loss(loss)

    @property
    def prunable(self) -> bool:
        return self.leaf_model == "constant"

    def statistics(self, tree, X, y, weight) -> Tree:
        """Regression statistics; node values are the loss's best constant (weighted median / mean)."""
        out = tree.fill_statistics(X, y, weight)
        if self.loss == "absolute":
            path = out.decision_path(X).tocsc()
            for node in range(out.node_count):
                rows = path.indices[path.indptr[node] : path.indptr[node + 1]]
                if rows.size:
                    out.value[node, 0] = weighted_median(y[rows], weight[rows])
        return out

    def model_loss(self, tree, X, y, model_weight) -> float:
        """Weighted absolute or squared error of the predictions (no overflow for huge targets)."""
        return self._loss(y - tree.predict(X), model_weight)

    def leaf_losses(self, form, tree) -> np.ndarray:
        samples = form._node_samples(tree)
        return np.array([self._loss(form.y[idx] - tree.value[node, 0], form.model_weight[idx])
                         for node, idx in enumerate(samples)])

    def _loss(self, residual: np.ndarray, model_weight: np.ndarray) -> float:
        return self.policy.node_loss(residual * self.units.target_scale, model_weight)
