"""Task policies: what differs between classification and regression formulations.

A :class:`~optitree.formulations.TreeFormulation` merges data, makes starts canonical,
prunes, decodes and recomputes objectives in the same way for every task; it asks its
policy (``form.task``) for the parts that depend on the targets:

==================  ========================================  ==========================================
                    :class:`ClassificationTask`               :class:`RegressionTask`
==================  ========================================  ==========================================
targets             class codes ``0 .. K - 1``                finite reals
model units         weights scaled by ``weight_scale``        also targets: ``(y - centre) * scale``
baseline ``L̂``      error of the majority class               loss of the best constant (median / mean)
leaf values         weighted class counts                     weighted median (absolute) or mean
loss of a tree      weighted misclassifications               weighted absolute or squared error
pruning             always                                    constant leaves only
==================  ========================================  ==========================================

A policy is created by its formulation and bound to its data by :meth:`Task.prepare`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np

from greedy import Tree

__all__ = [
    "Task", "ClassificationTask", "RegressionTask", "LEAF_MODELS", "LOSSES", "weighted_median", "power_of_two_scale",
]

LEAF_MODELS = ("constant", "linear")
LOSSES = ("absolute", "squared")


def power_of_two_scale(magnitude: float) -> float:
    """``2**-e`` with ``magnitude * 2**-e`` in ``[0.5, 1)``; 1 for a zero magnitude.

    Multiplying by a power of two is exact in floating point (barring underflow), so
    scaled data give the solver numbers of order one and scale back without rounding.
    """
    if magnitude == 0 or not np.isfinite(magnitude):
        return 1.0
    return float(np.ldexp(1.0, -int(np.frexp(magnitude)[1])))


def weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    """A minimiser of ``Σ w_i |v_i - m|``: the middle of the weighted median interval."""
    order = np.argsort(values, kind="stable")
    v, cum = values[order], np.cumsum(weights[order])
    half = 0.5 * cum[-1]
    lo = int(np.searchsorted(cum, half * (1 - 1e-12)))
    hi = int(np.searchsorted(cum, half * (1 + 1e-12), side="right"))
    return 0.5 * (v[lo] + v[min(hi, v.size - 1)])


class Task(ABC):
    """The task half of a formulation (see the module docstring).

    Attributes
    ----------
    name : {"classification", "regression"}
        The :attr:`greedy.Tree.task` of the trees the formulation takes and returns.
    n_classes : int
        Number of classes; 0 for regression (as :attr:`greedy.Tree.n_classes`).
    target_unit : float
        Model loss per user loss at unit weight (a power of two; 1 for classification).
    """

    name: ClassVar[str]
    n_classes: int
    target_unit: float = 1.0

    @property
    def n_values(self) -> int:
        """Width of :attr:`greedy.Tree.value` for this task."""
        return max(self.n_classes, 1)

    @property
    def prunable(self) -> bool:
        """Whether :meth:`leaf_losses` prices every node of a tree as a leaf."""
        return True

    @abstractmethod
    def encode(self, y) -> np.ndarray:
        """The validated training targets in the model's encoding (ValueError if invalid)."""

    @abstractmethod
    def prepare(self, y_train: np.ndarray, y: np.ndarray, model_weight: np.ndarray) -> float:
        """Fix the model's units from the targets; return the baseline loss ``L̂`` in model units.

        ``y_train``: every encoded training target; ``y``, ``model_weight``: the modelled
        (merged, positive-weight) rows and their weights in model units.
        """

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
        Number of classes ``K``; default ``max(y) + 1`` (set by :meth:`encode`).
    """

    name = "classification"

    def __init__(self, n_classes: int | None = None):
        self.n_classes = n_classes

    def encode(self, y) -> np.ndarray:
        y = np.asarray(y)
        if not np.issubdtype(y.dtype, np.integer):
            if not (np.issubdtype(y.dtype, np.floating) and np.all(y == np.round(y))):
                raise ValueError("y must hold integer class codes 0 .. n_classes - 1")
        y = y.astype(np.intp)
        if self.n_classes is None:
            self.n_classes = int(y.max()) + 1
        self.n_classes = int(self.n_classes)
        if y.min() < 0 or y.max() >= self.n_classes:
            raise ValueError(f"class codes must lie in [0, {self.n_classes}), got [{y.min()}, {y.max()}]")
        return y

    def prepare(self, y_train, y, model_weight) -> float:
        class_weight = np.bincount(y, weights=model_weight, minlength=self.n_classes)
        return float(class_weight.sum() - class_weight.max())

    def statistics(self, tree, X, y, weight) -> Tree:
        return tree.fill_statistics(X, y, weight, n_classes=self.n_classes)

    def model_loss(self, tree, X, y, model_weight) -> float:
        """Weighted misclassifications of the leaves' majority classes."""
        pred = tree.predict(X).argmax(axis=1)
        return float(model_weight[pred != y].sum())

    def leaf_losses(self, form, tree) -> np.ndarray:
        v = tree.value * form.weight_scale  # weighted class counts from the training data, in model units
        return v.sum(axis=1) - v.max(axis=1)


class RegressionTask(Task):
    """Real targets scaled to ``[-1, 1]`` by a power of two, absolute or squared loss.

    Parameters
    ----------
    loss : {"absolute", "squared"}, default="absolute"
    leaf_model : {"constant", "linear"}, default="constant"
        Linear leaves are not pruned: their cost as a leaf needs an LP per node.

    Attributes
    ----------
    target_centre, target_scale : float
        The model sees targets ``(y - target_centre) * target_scale`` (after :meth:`prepare`).
    """

    name = "regression"
    n_classes = 0

    def __init__(self, loss: str = "absolute", leaf_model: str = "constant"):
        if leaf_model not in LEAF_MODELS:
            raise ValueError(f"leaf_model must be one of {LEAF_MODELS}, got {leaf_model!r}")
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
        self.loss, self.leaf_model = loss, leaf_model

    @property
    def prunable(self) -> bool:
        return self.leaf_model == "constant"

    def encode(self, y) -> np.ndarray:
        y = np.asarray(y)
        if y.ndim != 1 or not np.issubdtype(y.dtype, np.number) or np.issubdtype(y.dtype, np.complexfloating):
            raise ValueError(f"y must be a 1-D array of real targets, got shape {y.shape} and dtype {y.dtype}")
        y = y.astype(np.float64)
        if not np.isfinite(y).all():
            raise ValueError("y contains NaN or infinite values")
        return y

    def prepare(self, y_train, y, model_weight) -> float:
        lo, hi = float(y_train.min()), float(y_train.max())
        self.target_centre = 0.5 * lo + 0.5 * hi
        self.target_scale = power_of_two_scale(0.5 * hi - 0.5 * lo)
        if not np.isfinite(self.target_scale * (hi - self.target_centre)):
            raise ValueError(f"the range of y ({lo:g} .. {hi:g}) must be a finite float64; "
                             f"targets must lie within +-{np.finfo(np.float64).max / 2:.3g}")
        with np.errstate(over="ignore"):  # inf: user-unit losses below float64's range (targets near 1e-300)
            self.target_unit = float(np.float64(self.target_scale) ** (1 if self.loss == "absolute" else 2))
        t = self.to_model_units(y)
        if self.loss == "absolute":
            return float(model_weight @ np.abs(t - weighted_median(t, model_weight)))
        return float(model_weight @ (t - np.average(t, weights=model_weight)) ** 2)

    def to_model_units(self, values: np.ndarray) -> np.ndarray:
        """Targets or predictions in the model's units: ``(v - target_centre) * target_scale``."""
        return (values - self.target_centre) * self.target_scale

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
        r = residual * self.target_scale
        return float(model_weight @ (np.abs(r) if self.loss == "absolute" else r**2))
