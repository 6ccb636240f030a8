"""Linear-leaf model trees.

:func:`fit_linear_leaves` gives every node of a grown regression tree a linear model
``y ≈ b + c @ x`` fitted by weighted least squares to the training samples that
reach the node; :class:`~greedy.Tree` then predicts with the model of the leaf a
sample reaches (``Tree.leaf_coef`` / ``Tree.leaf_intercept``). Internal nodes keep
their models too, so pruning can turn any node into a linear leaf without refitting.

The fit centres features and target at their weighted means ``x̄, ȳ`` and solves

.. math::

    \\min_c \\; \\sum_i w_i \\big((y_i - ȳ) - c^\\top (x_i - x̄)\\big)^2, \\qquad b = ȳ - c^\\top x̄,

with ``numpy.linalg.lstsq`` (SVD, default cut-off ``rcond``): rank-deficient nodes
(collinear or constant features) get the minimum-norm solution, no ridge term.

Fallback: a node with fewer than ``n_features + 1`` distinct training points
(positively weighted samples, duplicates counted once: an under-determined fit) keeps
a **constant model**: ``c = 0`` and ``b`` = the node's weighted mean, i.e. the ordinary
regression-tree prediction. Counting distinct points makes integer weights and
repeated samples give the same model. Use ``min_samples_leaf >= n_features + 1`` to
give every leaf of data without duplicates a linear model. Extreme magnitudes are fitted on
power-of-two scaled features, targets and weights (:mod:`greedy._scaling`); a node whose
slopes overflow float64 (e.g. targets of 1e12 on features of 1e-300) keeps the constant model.

Two split criteria choose splits for linear leaves. ``linear_squared_error``
(:class:`LinearSquaredError`, the default with ``leaf_model="linear"``) scores a node by the
squared error of its own least-squares linear model, the exact error of the leaf it would
become. The ``correlation`` split criterion scores a node by

.. math::

    \\mathrm{imp} = 1 - \\Big|\\frac{1}{F}\\sum_{j=1}^{F} \\rho_j\\Big|,
    \\qquad \\rho_j = \\frac{\\operatorname{cov}_w(x_j, y)}
    {\\sqrt{\\operatorname{var}_w(x_j)\\operatorname{var}_w(y)}}

(``ρ_j = 0`` where a variance vanishes), so a split is rewarded for isolating regions
where the target moves linearly with the features rather than regions where it is
constant. All weighted moments come from the additive sums ``Σw, Σwy, Σwy², Σwx_j,
Σwx_j², Σwx_j y`` of a node, so many candidate splits are scored at once from prefix
sums.
"""

from __future__ import annotations

import numpy as np

from ._criteria import EPSILON, AdditiveCriterion, register_criterion
from ._scaling import check_target_range, extreme_scale, power_of_two, target_scale
from ._tree import Tree


def fit_linear_leaves(tree: Tree, X, y, sample_weight=None) -> Tree:
    """Return a copy of a regression ``tree`` with a linear model at every node.

    Parameters
    ----------
    tree : Tree
        A regression tree (its splits are kept).
    X : array of shape (n_samples, n_features)
        Training features, without missing values.
    y : array of shape (n_samples,)
    sample_weight : array of shape (n_samples,), optional
        Non-negative weights.

    Returns
    -------
    Tree
        With ``leaf_coef`` (n_nodes, n_features) and ``leaf_intercept`` (n_nodes,).
        Nodes with fewer than ``n_features + 1`` distinct points (or no positive weight)
        get the constant fallback described in the module docstring.
    """
    if tree.task != "regression":
        raise ValueError("linear leaf models are for regression trees")
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != tree.n_features:
        raise ValueError(f"X must have shape (n_samples, {tree.n_features}), got {X.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError("linear leaf models need X without missing (NaN) or infinite values")
    y = np.asarray(y, dtype=np.float64)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
    w = np.ones(X.shape[0]) if sample_weight is None else np.asarray(sample_weight, np.float64)
    if w.shape != (X.shape[0],) or not np.all(np.isfinite(w) & (w >= 0)):
        raise ValueError("sample_weight must be finite, non-negative, of shape (n_samples,)")
    n_features = X.shape[1]
    coef = np.zeros((tree.node_count, n_features))
    intercept = np.zeros(tree.node_count)
    members = tree.decision_path(X).tocsc()
    for node in range(tree.node_count):
        rows = members.indices[members.indptr[node] : members.indptr[node + 1]]
        rows = rows[w[rows] > 0]
        if rows.size == 0:
            intercept[node] = tree.value[node, 0]
            continue
        # extreme magnitudes: work on power-of-two scaled weights, features and targets (exact)
        wn = w[rows] / extreme_scale(w[rows])
        x_unit, y_unit = extreme_scale(X[rows]), extreme_scale(y[rows])  # 1 unless extreme
        xn, yn = X[rows] / x_unit, y[rows] / y_unit
        x_mean = np.average(xn, axis=0, weights=wn)
        y_mean = float(np.average(yn, weights=wn))
        intercept[node] = y_mean * y_unit
        if rows.size < n_features + 1 or np.unique(X[rows], axis=0).shape[0] < n_features + 1:
            continue  # under-determined: constant model
        root_w = np.sqrt(wn)
        c, *_ = np.linalg.lstsq((xn - x_mean) * root_w[:, None], (yn - y_mean) * root_w, rcond=None)
        with np.errstate(over="ignore", invalid="ignore"):
            b = (y_mean - c @ x_mean) * y_unit
            c = c * (y_unit / x_unit)
        if np.all(np.isfinite(c)) and np.isfinite(b):  # else the slopes overflow float64: constant model
            coef[node], intercept[node] = c, b
    d = tree.to_dict()
    d.update(leaf_coef=coef, leaf_intercept=intercept)
    return Tree.from_dict(d)


def correlation_impurity(sums: np.ndarray, n_features: int) -> np.ndarray:
    """Correlation impurity ``1 - |mean_j rho_j|`` of groups from their additive sums.

    ``sums`` has shape (..., 3 + 3 F) with columns ``[Σw, Σwy, Σwy², Σwx_j (F),
    Σwx_j² (F), Σwx_j y (F)]``. A correlation with a vanishing variance counts as 0.
    """
    F = n_features
    rho = _correlation_sum(sums[..., 0:1], sums[..., 1:2], sums[..., 2:3], sums[..., 3 : 3 + F],
                           sums[..., 3 + F : 3 + 2 * F], sums[..., 3 + 2 * F : 3 + 3 * F])
    return 1.0 - np.abs(rho.mean(-1))


def correlation_entry_stats(X: np.ndarray, y: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Per-sample additive statistics for :func:`correlation_impurity`, shape (n, 3 + 3F)."""
    wx = weight[:, None] * X
    wy = weight * y
    return np.column_stack([weight, wy, wy * y, wx, wx * X, wx * y[:, None]])


def _correlation_sum(w, sy, syy, sx, sxx, sxy):
    """Pearson correlation of one feature with the target from weighted sums (0 where undefined)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        safe_w = np.where(w > 0, w, 1.0)
        my, mx = sy / safe_w, sx / safe_w
        var_y = syy / safe_w - my * my
        var_x = sxx / safe_w - mx * mx
        cov = sxy / safe_w - mx * my
        ok = (var_y > 1e-12 * (syy / safe_w)) & (var_x > 1e-12 * (sxx / safe_w))
        rho = np.where(ok, cov / np.sqrt(np.where(ok, var_x * var_y, 1.0)), 0.0)
    return np.clip(rho, -1.0, 1.0)


def _finite_features(X, who: str) -> np.ndarray:
    """``X`` as float64 for a criterion that fits on the features; ValueError without X or with NaN."""
    if X is None:
        raise ValueError(f"{who} needs the training features X")
    X = np.asarray(X, dtype=np.float64)
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{who} needs X without missing (NaN) values")
    return X


@register_criterion
class Correlation(AdditiveCriterion):
    """Regression criterion ``1 - |mean_j rho_j|`` (see the module docstring); leaves predict the mean.

    Features and target are centred at their overall weighted means (fewer cancellations,
    same correlations). Candidate gains are computed feature by feature of the correlation
    sum, so memory stays at a few arrays of the scan's shape whatever the number of features.
    """

    name = "correlation"
    task = "regression"

    def __init__(self, y, sample_weight, n_classes=None, X=None):
        super().__init__(np.asarray(y, dtype=np.float64), sample_weight, n_classes, X)
        X = _finite_features(X, "the correlation criterion")
        self.scale = target_scale(self.y)  # exact power of two: sums of y'² cannot overflow
        scaled = self.y / self.scale
        self.offset = float(np.average(scaled, weights=self.sample_weight))
        self.yc = scaled - self.offset
        self.Xc = X - np.average(X, axis=0, weights=self.sample_weight)
        self.n_features = X.shape[1]

    def columns(self, sample, weight):
        yc = self.yc[sample]
        wy = yc if weight is None else weight * yc
        x = self.Xc[sample]
        wx = x if weight is None else weight[..., None] * x
        F = self.n_features
        return ([weight, wy, wy * yc] + [wx[..., j] for j in range(F)] + [wx[..., j] * x[..., j] for j in range(F)]
                + [wx[..., j] * yc for j in range(F)])

    def impurity_from_sums(self, sums):
        return correlation_impurity(np.stack([np.asarray(s, np.float64) for s in sums], -1), self.n_features)

    def value_from_sums(self, sums):
        return ((sums[1] / sums[0] + self.offset) * self.scale)[:, None]

    def candidate_gain(self, scan) -> np.ndarray:
        samples, weight = scan.samples, scan.weights
        yc = self.yc[samples]
        wy = yc if weight is None else weight * yc
        sides = {}  # side -> [w, sy, syy]; right = known - left
        for name, col in (("w", None), ("sy", wy), ("syy", wy * yc)):
            left, known = scan.left_and_known(col)
            sides[name] = (np.broadcast_to(left, samples.shape), known)
        w_l, w_k = sides["w"]
        w_r = scan.expand(w_k) - w_l
        rho = {"l": 0.0, "r": 0.0, "k": 0.0}
        for j in range(self.n_features):
            x = self.Xc[samples, j]
            wx = x if weight is None else weight * x
            sx, sxx, sxy = (scan.left_and_known(c) for c in (wx, wx * x, wx * yc))
            sums = (sides["sy"], sides["syy"], sx, sxx, sxy)  # (left, known) pairs
            rho["l"] = rho["l"] + _correlation_sum(w_l, *(left for left, _ in sums))
            rho["r"] = rho["r"] + _correlation_sum(w_r, *(scan.expand(known) - left for left, known in sums))
            rho["k"] = rho["k"] + _correlation_sum(w_k, *(known for _, known in sums))
        F = self.n_features
        score_l = -w_l * (1.0 - np.abs(rho["l"] / F))
        score_r = -w_r * (1.0 - np.abs(rho["r"] / F))
        score_k = -w_k * (1.0 - np.abs(rho["k"] / F))
        return score_l + score_r - scan.expand(score_k)


@register_criterion
class LinearSquaredError(AdditiveCriterion):
    """Regression criterion: the squared error of the node's own linear leaf model.

    The impurity of a node is ``SSE / w``, the weighted mean squared residual of the weighted
    least-squares fit ``y ≈ b + c @ x`` on the node's samples — the model a linear leaf
    (:func:`fit_linear_leaves`) gives it, so splits are chosen for the leaf model. From the
    additive sums ``w, Σw z, Σw z zᵀ`` of ``z = (x, y)`` (centred, each column divided by a
    power of two) the centred cross-products ``C = Σw z zᵀ - (Σw z)(Σw z)ᵀ / w`` give

    .. math:: \\mathrm{SSE} = C_{yy} - C_{xy}^\\top C_{xx}^{-1} C_{xy}

    (solved with a tiny relative ridge on ``C_xx``, so collinear or constant features give the
    least-squares residual). A node of weight below ``n_features + 1`` (unit weights: fewer
    samples) is scored with the constant model, ``SSE = C_yy``, like the fallback of
    :func:`fit_linear_leaves` (which counts distinct points: the two rules agree on data
    without duplicate rows, and both treat integer weights as repeated rows). Leaves predict the
    weighted mean (linear leaves replace it). Costs ``O(F²)`` statistics per sample and an
    ``F x F`` solve per candidate split (``F`` features): for a few features. A total weight below
    ``F + 1`` (e.g. 20 rows of 1 000 features) scores every node with the constant model: the
    statistics are then those of ``y`` alone, ``O(1)`` per sample.
    """

    name = "linear_squared_error"
    task = "regression"

    def __init__(self, y, sample_weight, n_classes=None, X=None):
        super().__init__(np.asarray(y, dtype=np.float64), sample_weight, n_classes, X)
        X = _finite_features(X, "the linear_squared_error criterion (the default with leaf_model='linear')")
        check_target_range(self.y, sample_weight, self.name, 2)
        self.scale = target_scale(self.y)
        self.n_features = X.shape[1]
        # the builder's weights are divided by extreme_scale: a node is linear from weight F + 1 on in those
        linear = self.sample_weight.sum() / extreme_scale(self.sample_weight) >= self.n_features + 1
        Z = np.column_stack([X if linear else X[:, :0], self.y / self.scale])
        Z = Z - np.average(Z, axis=0, weights=self.sample_weight)
        unit = power_of_two(np.abs(Z).max(axis=0, initial=0.0))
        self.Z = Z / unit  # columns of order one (the y column is scaled once more)
        self.y_unit = float(unit[-1])
        self.offset = float(np.average(self.y / self.scale, weights=self.sample_weight))
        self.pure_impurity = EPSILON * min(1.0, self.scale) ** 2
        self.n_model = Z.shape[1] - 1  # the features the statistics carry: F, or 0 when no node is linear
        self.pairs = np.triu_indices(self.n_model + 1)

    def columns(self, sample, weight):
        z = self.Z[sample]
        wz = z if weight is None else weight[..., None] * z
        i, j = self.pairs
        return ([weight] + [wz[..., k] for k in range(z.shape[-1])]
                + [wz[..., a] * z[..., b] for a, b in zip(i.tolist(), j.tolist())])

    def _variance_and_explained(self, sums):
        """``(w, C_yy, C_xyᵀ C_xx⁻¹ C_xy)`` of groups with these sums, in the scaled units of ``Z``.

        The explained part is 0 for groups scored with the constant model, and at most ``C_yy``.
        """
        F = self.n_model
        sums = np.broadcast_arrays(*(np.asarray(c, np.float64) for c in sums))  # the weight may be (m,)
        w = sums[0]
        first = np.stack(sums[1 : F + 2], axis=-1)
        cross = np.zeros(w.shape + (F + 1, F + 1))
        i, j = self.pairs
        cross[..., i, j] = np.stack(sums[F + 2 :], axis=-1)
        cross[..., j, i] = cross[..., i, j]
        with np.errstate(divide="ignore", invalid="ignore"):
            cross -= first[..., :, None] * first[..., None, :] / np.where(w > 0, w, 1.0)[..., None, None]
        variance = np.maximum(cross[..., F, F], 0.0)
        explained = np.zeros(w.shape)
        linear = w >= F + 1 if F else np.zeros(w.shape, bool)
        if linear.any():
            cxx, cxy = cross[linear][:, :F, :F], cross[linear][:, :F, F]
            ridge = 1e-12 * np.trace(cxx, axis1=1, axis2=2) + 1e-300
            cxx[:, np.arange(F), np.arange(F)] += ridge[:, None]
            fitted = np.einsum("ij,ij->i", cxy, np.linalg.solve(cxx, cxy[..., None])[..., 0])
            explained[linear] = np.clip(fitted, 0.0, variance[linear])
        return w, variance, explained

    def impurity_from_sums(self, sums):
        w, variance, explained = self._variance_and_explained(sums)
        with np.errstate(divide="ignore", invalid="ignore"):
            return (variance - explained) / w * (self.y_unit * self.scale) ** 2

    def score(self, sums):
        """``-SSE`` up to the linear term ``-Σ w y²``: ``s_y² / w + explained`` (as squared error's score)."""
        w, _, explained = self._variance_and_explained(sums)
        s_y = sums[1 + self.n_model]
        with np.errstate(divide="ignore", invalid="ignore"):
            return s_y * s_y / w + explained

    def value_from_sums(self, sums):
        # the y column of Z is centred: its weighted mean is the node's mean minus the root's
        return ((sums[1 + self.n_model] / sums[0] * self.y_unit + self.offset) * self.scale)[:, None]
