"""Exact peers as independent truth for regression: STreeD (``pystreed``) on every midpoint threshold.

STreeD optimises over binary features only. :func:`binarize_midpoints` turns each raw
feature into one binary feature per midpoint between consecutive distinct values
(``1[x_j <= t]``), which is exactly the split space of a tree on the raw features: any
threshold between two consecutive distinct values sends the same rows left. On that
encoding STreeD's ``"regression"`` task (squared error, constant mean leaves, a depth limit
and no complexity cost) returns the optimal depth-``D`` regression tree over all midpoints,
the same optimum :class:`optitree.OptimalTreeRegressor` (``loss="squared"``) certifies.
``tests/benchmarks/test_pystreed_peer.py`` checks that claim against brute force on tiny data.

This module lives in the harness so that ``optitree`` never depends on ``pystreed``
(an optional test/benchmark dependency).
"""

from __future__ import annotations

import time

import numpy as np

#: Most binary columns handed to STreeD: its data is a dense (rows × columns) int32 matrix.
MAX_BINARY_FEATURES = 20_000
#: Most cells (rows × binary columns) of that matrix (4 bytes each: 2e8 cells = 800 MB).
MAX_BINARY_CELLS = 50_000_000


def midpoint_thresholds(X) -> list[np.ndarray]:
    """Per feature, the midpoints between consecutive distinct values (NaN-free ``X``).

    A midpoint that rounds up to the larger value (adjacent doubles) is replaced by the
    smaller value, so ``x <= t`` still separates the two.
    """
    X = np.asarray(X, dtype=np.float64)
    out = []
    for j in range(X.shape[1]):
        v = np.unique(X[:, j])
        mid = v[:-1] + (v[1:] - v[:-1]) / 2
        out.append(np.where(mid < v[1:], mid, v[:-1]))
    return out


def n_midpoints(X) -> int:
    """How many binary columns :func:`binarize_midpoints` would make (without making them)."""
    X = np.asarray(X, dtype=np.float64)
    return int(sum(np.unique(X[:, j]).size - 1 for j in range(X.shape[1])))


def binarize_midpoints(X, thresholds=None) -> tuple[np.ndarray, list[tuple[int, float]]]:
    """``(B, columns)``: ``B[i, k] = 1[X[i, f_k] <= t_k]`` (int32) for every ``(f_k, t_k)`` in ``columns``.

    ``thresholds`` defaults to :func:`midpoint_thresholds` of ``X`` (pass the training
    set's to encode other rows the same way).
    """
    X = np.asarray(X, dtype=np.float64)
    thresholds = midpoint_thresholds(X) if thresholds is None else thresholds
    columns = [(j, float(t)) for j, ts in enumerate(thresholds) for t in ts]
    B = np.empty((X.shape[0], len(columns)), dtype=np.int32)
    k = 0
    for j, ts in enumerate(thresholds):
        if len(ts):
            B[:, k:k + len(ts)] = X[:, j, None] <= np.asarray(ts)[None, :]
            k += len(ts)
    return B, columns


def sse(y, prediction) -> float:
    """Sum of squared errors, in ``y``'s units squared."""
    r = np.asarray(y, dtype=np.float64) - np.asarray(prediction, dtype=np.float64)
    return float(r @ r)


def sae(y, prediction) -> float:
    """Sum of absolute errors, in ``y``'s units."""
    return float(np.abs(np.asarray(y, dtype=np.float64) - np.asarray(prediction, dtype=np.float64)).sum())


def run_streed(X, y, depth: int, time_limit: float = 600.0, *, min_samples_leaf: int = 1,
               max_binary_features: int = MAX_BINARY_FEATURES, max_cells: int = MAX_BINARY_CELLS) -> dict:
    """STreeD's optimal depth-``depth`` squared-error tree on every midpoint of ``X``.

    ``min_samples_leaf`` is STreeD's ``min_leaf_node_size`` (every leaf holds at least that
    many rows). To forbid a feature, pass ``X`` without its column.

    Returns a dict: ``status`` (``"optimal"``, ``"time limit"`` when STreeD stopped without
    its proof, ``"too many binary features"`` when the encoding exceeds the limits, or
    ``"no tree"``), ``sse`` (from STreeD's own predictions on the training rows; None if
    no tree), ``seconds`` (STreeD's fit alone, not the encoding), ``n_binary`` (columns).
    """
    from pystreed import STreeDRegressor

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n_binary = n_midpoints(X)
    out = {"status": None, "sse": None, "seconds": None, "n_binary": n_binary}
    if n_binary > max_binary_features or n_binary * X.shape[0] > max_cells:
        out["status"] = "too many binary features"
        return out
    B, _ = binarize_midpoints(X)
    # feature_ordering="in-order": with pystreed 1.4.0's default "mse" ordering, STreeD returned a
    # depth-3 tree on airfoil (all 1 503 rows, 158 midpoint columns) with SSE 33 507.16 marked optimal,
    # where a tree of SSE 33 503.87 exists (OptimalTreeRegressor's; "in-order" finds it too), also
    # with its terminal solver and every bound switched off. "in-order" was as fast or faster on the
    # sets compared (concrete_300 depth 3: 18.6 s against 31.1 s).
    model = STreeDRegressor(optimization_task="regression", max_depth=depth, time_limit=float(time_limit),
                            min_leaf_node_size=int(min_samples_leaf), cost_complexity=0.0, random_seed=0,
                            feature_ordering="in-order")
    t0 = time.perf_counter()
    model.fit(B, y)
    out["seconds"] = time.perf_counter() - t0
    if not model.is_fitted():
        out["status"] = "no tree"
        return out
    out["sse"] = sse(y, model.predict(B))
    out["status"] = "optimal" if model.fit_result.is_optimal() else "time limit"
    return out


def run_streed_linear(X, y, depth: int, time_limit: float = 120.0, *, min_samples_leaf: int = 1,
                      n_thresholds: int = 20) -> dict:
    """STreeD's optimal depth-``depth`` tree with linear (least-squares) leaves.

    STreeD's piecewise-linear regressor splits each continuous feature at ``n_thresholds``
    quantile thresholds (not every midpoint; ORT-L's space holds every midpoint), without
    lasso or ridge penalty, each leaf at least ``min_samples_leaf`` rows. Returns
    ``status`` (``"optimal"`` or ``"time limit"``), ``sse`` (its own predictions on the
    training rows) and ``seconds``.
    """
    from pystreed import STreeDPiecewiseLinearRegressor

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    model = STreeDPiecewiseLinearRegressor(max_depth=depth, min_leaf_node_size=int(min_samples_leaf),
                                           time_limit=float(time_limit), cost_complexity=0.0, lasso_penalty=0.0,
                                           ridge_penalty=0.0, n_thresholds=int(n_thresholds), random_seed=0)
    t0 = time.perf_counter()
    model.fit(X, y, continuous_columns=list(range(X.shape[1])))
    seconds = time.perf_counter() - t0
    return {"status": "optimal" if model.fit_result.is_optimal() else "time limit",
            "sse": sse(y, model.predict(X)), "seconds": seconds}
