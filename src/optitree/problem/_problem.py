"""The problem a fit solves, stated once (:class:`Problem`): rows, loss, units, depth, penalty, restrictions."""

from __future__ import annotations

import functools
import math
import numbers
from dataclasses import dataclass, replace

import numpy as np

from greedy._hist import check_max_bins

from ._losses import Loss, get_loss
from ._rows import check_rows
from ._units import Units


def check_statement(depth, alpha, min_samples_leaf, depth_name="max_depth") -> tuple[int, float, int]:
    """``(depth, alpha, min_samples_leaf)`` checked: an integer >= 1, a finite number >= 0, an integer >= 1."""
    if not isinstance(depth, numbers.Integral) or isinstance(depth, bool) or depth < 1:
        raise ValueError(f"{depth_name} must be an integer >= 1, got {depth!r}")
    if not isinstance(alpha, numbers.Real) or isinstance(alpha, bool) or not math.isfinite(alpha) or alpha < 0:
        raise ValueError(f"alpha must be a finite number >= 0, got {alpha!r}")
    if not isinstance(min_samples_leaf, numbers.Integral) or isinstance(min_samples_leaf, bool) or \
            min_samples_leaf < 1:
        raise ValueError(f"min_samples_leaf must be an integer >= 1, got {min_samples_leaf!r}")
    return int(depth), float(alpha), int(min_samples_leaf)


def checked_max_bins(max_bins) -> int | None:
    """``max_bins`` checked: None or an integer >= 2 (a ``ValueError`` otherwise, whatever its kind)."""
    if max_bins is None:
        return None
    try:
        return check_max_bins(max_bins)
    except TypeError as error:  # a value of the wrong kind is a bad value, as one out of range
        raise ValueError(str(error)) from None


def check_allowed(allowed_features, max_depth: int, n_features: int) -> np.ndarray:
    """Allowed-feature mask per node of the complete tree, shape ``(2**max_depth - 1, n_features)``.

    Accepts ``None`` (all allowed), a mask ``(p,)`` for every node, ``(max_depth, p)`` per
    level (row 0: the root) or ``(2**max_depth - 1, p)`` per node in heap order (row
    ``h - 1`` for node ``h``; the root is node 1, the children of ``h`` are ``2h``, ``2h + 1``).
    """
    n_nodes = 2**max_depth - 1
    if allowed_features is None:
        return np.ones((n_nodes, n_features), bool)
    mask = np.asarray(allowed_features)
    if mask.dtype != bool:
        raise TypeError(f"allowed_features must be a boolean mask, got dtype {mask.dtype}")
    if mask.shape == (n_features,):
        return np.tile(mask, (n_nodes, 1))
    if mask.shape == (n_nodes, n_features):
        return mask.copy()
    if mask.shape == (max_depth, n_features):
        level = np.floor(np.log2(np.arange(1, n_nodes + 1))).astype(int)
        return mask[level]
    raise ValueError(f"allowed_features must have shape ({n_features},), ({max_depth}, {n_features}) or "
                     f"({n_nodes}, {n_features}), got {mask.shape}")


def per_node_features(allowed) -> bool:
    """Whether the nodes of ``allowed`` (:func:`check_allowed`'s mask) differ in the features they allow."""
    return not (allowed == allowed[0]).all()


def encode_targets(y, loss: Loss, n_classes: int | None = None) -> tuple[np.ndarray, int]:
    """``(targets, n_classes)``: class codes ``0 .. K - 1`` (``K`` default ``max + 1``) or finite reals (0 classes)."""
    y = np.asarray(y)
    if loss.regression:
        if y.ndim != 1 or not np.issubdtype(y.dtype, np.number) or np.issubdtype(y.dtype, np.complexfloating):
            raise ValueError(f"y must be a 1-D array of real targets, got shape {y.shape} and dtype {y.dtype}")
        y = y.astype(np.float64)
        if not np.isfinite(y).all():
            raise ValueError("y contains NaN or infinite values; regression targets must be finite")
        return y, 0
    if not np.issubdtype(y.dtype, np.integer) and not (
            np.issubdtype(y.dtype, np.floating) and np.all(y == np.round(y))):
        raise ValueError("y must hold integer class codes 0 .. n_classes - 1")
    y = y.astype(np.intp)
    n_classes = int(y.max()) + 1 if n_classes is None else int(n_classes)
    if y.min() < 0 or y.max() >= n_classes:
        raise ValueError(f"class codes must lie in [0, {n_classes}), got [{y.min()}, {y.max()}]")
    return y, n_classes


@dataclass(frozen=True, eq=False)
class Problem:
    """One optimal-tree problem, the value every solver takes (the exact engine, each formulation).

    .. math::

        \\min_{T:\\ \\text{depth} \\le D} \\; \\frac{E(T)}{\\hat L} + \\alpha\\, S(T)

    over axis-aligned trees of depth at most ``depth`` whose split at each node uses a feature
    ``allowed`` there, on at most ``max_distinct_features`` features, with at least
    ``min_samples_leaf`` positive-weight rows in every leaf and, with ``max_bins``, thresholds
    at quantile bin edges; :math:`E` the weighted ``loss``, :math:`\\hat L` (``baseline``) the
    loss of the best tree without splits (1 when it is 0), :math:`S` the number of splits.
    Build it with :meth:`of`, which checks everything once.

    Attributes
    ----------
    X : ndarray (n, p) float64
        Finite features.
    y : ndarray (n,)
        Class codes ``0 .. n_classes - 1`` (intp) or finite real targets.
    weight : ndarray (n,)
        Non-negative weights, some positive (a zero-weight row is not in the problem).
    loss : optitree.problem.Loss
    units : optitree.problem.Units
        The internal numbers of every solver of this problem (fixed by its positive-weight rows).
    depth : int
    alpha : float
        Cost of a split as a fraction of :math:`\\hat L` (Bertsimas & Dunn).
    min_samples_leaf : int
    n_classes : int
        0 for regression.
    allowed : ndarray (2**depth - 1, p) bool or None
        Features allowed at each branch node, heap order (:func:`check_allowed`); None: all.
    max_distinct_features : int or None
    max_bins : int or None
    """

    X: np.ndarray
    y: np.ndarray
    weight: np.ndarray
    loss: Loss
    units: Units
    depth: int
    alpha: float = 0.0
    min_samples_leaf: int = 1
    n_classes: int = 0
    allowed: np.ndarray | None = None
    max_distinct_features: int | None = None
    max_bins: int | None = None

    @classmethod
    def of(cls, X, y, sample_weight=None, *, loss="misclassification", depth, alpha=0.0, min_samples_leaf=1,
           n_classes=None, allowed_features=None, max_distinct_features=None, max_bins=None) -> "Problem":
        """The problem on ``X, y, sample_weight``, checked (``ValueError`` naming what is wrong).

        ``loss``: a name of :data:`~optitree.problem.LOSSES`; ``y`` holds class codes for
        misclassification (``n_classes`` default ``max(y) + 1``), finite reals otherwise;
        ``allowed_features``: any mask :func:`check_allowed` accepts.
        """
        policy = loss if isinstance(loss, Loss) else get_loss(loss)
        depth, alpha, min_samples_leaf = check_statement(depth, alpha, min_samples_leaf)
        X, y, weight = check_rows(X, y, sample_weight, solver="an optimal tree's solvers")
        y, n_classes = encode_targets(y, policy, n_classes)
        allowed = None
        if allowed_features is not None:
            try:
                allowed = check_allowed(allowed_features, depth, X.shape[1])
            except TypeError as error:
                raise ValueError(str(error)) from None
        if max_distinct_features is not None and (
                not isinstance(max_distinct_features, numbers.Integral) or isinstance(max_distinct_features, bool)
                or max_distinct_features < 1):
            raise ValueError(f"max_distinct_features must be None or an integer >= 1, got {max_distinct_features!r}")
        kept = weight > 0
        units = Units.of(weight[kept], policy, y[kept] if policy.regression else None)
        return cls(X, y, weight, policy, units, depth, alpha, min_samples_leaf, n_classes, allowed,
                   None if max_distinct_features is None else int(max_distinct_features), checked_max_bins(max_bins))

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @functools.cached_property
    def baseline(self) -> float:
        """:math:`\\hat L` in the problem's internal units (``units``): the loss of one leaf holding every row."""
        kept = self.weight > 0
        targets = self.units.targets(self.y[kept]) if self.loss.regression else self.y[kept]
        return self.loss.leaf_loss(targets, self.units.weights(self.weight[kept]))

    @property
    def objective_scale(self) -> float:
        """The objective's factor on internal losses, ``1 / L̂`` (1 when ``L̂ = 0``)."""
        return 1.0 / self.baseline if self.baseline > 0 else 1.0

    @property
    def split_cost(self) -> float:
        """The cost of one split in internal loss units, ``alpha / objective_scale``."""
        return self.alpha / self.objective_scale

    def allowed_mask(self) -> np.ndarray:
        """``allowed`` with None as every feature at every node."""
        return check_allowed(self.allowed, self.depth, self.n_features)

    def restricted(self, allowed=None, max_distinct_features=None, depth=None) -> "Problem":
        """This problem with the restrictions ``allowed`` (a per-node mask for ``depth``, or None: every
        feature) and ``max_distinct_features`` (None: no limit), at ``depth`` (default its own)."""
        out = replace(self, depth=self.depth if depth is None else int(depth), allowed=allowed,
                      max_distinct_features=max_distinct_features)
        if "baseline" in self.__dict__:  # the same rows, loss and units: the same baseline, not computed again
            out.__dict__["baseline"] = self.baseline
        return out

    def relaxed(self, depth: int) -> "Problem":
        """The problem at ``depth`` without feature restrictions (a relaxation of this one's sub-trees)."""
        return self.restricted(depth=depth)
