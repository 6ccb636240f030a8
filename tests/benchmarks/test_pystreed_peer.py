"""STreeD (pystreed) on every midpoint as binary features is the exact regression peer: check it.

The benchmark ``benchmarks.certified --task regression`` and the engine's slow tests use
STreeD on :func:`benchmarks._peers.binarize_midpoints` as independent truth for the optimal
squared-error tree. Here that peer is checked against brute force over all trees of depth
<= 3 on all midpoints of tiny data sets.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from benchmarks._peers import binarize_midpoints, midpoint_thresholds, n_midpoints, run_streed, sse


def _leaf_sse(y):
    return float(((y - y.mean()) ** 2).sum()) if y.size else 0.0


def _splits(X):
    """Every (feature, threshold) over the midpoints of X, computed here from sorted distinct values."""
    for j in range(X.shape[1]):
        values = sorted(set(X[:, j].tolist()))
        for a, b in zip(values, values[1:]):
            yield j, (a + b) / 2


def brute_force_sse(X, y, depth, min_leaf=1):
    """Least SSE of any tree of depth <= ``depth`` (mean leaves, each of at least ``min_leaf`` rows).

    Every split at every node is enumerated; inf when no such tree exists.
    """
    best = _leaf_sse(y) if y.size >= min_leaf else np.inf
    if depth == 0 or y.size < 2:
        return best
    for j, t in _splits(X):
        left = X[:, j] <= t
        best = min(best, brute_force_sse(X[left], y[left], depth - 1, min_leaf)
                   + brute_force_sse(X[~left], y[~left], depth - 1, min_leaf))
    return best


def test_binarize_midpoints_is_the_raw_split_space():
    rng = np.random.RandomState(0)
    X = np.column_stack([rng.randint(0, 4, 15), rng.rand(15), np.full(15, 2.0)])
    B, columns = binarize_midpoints(X)
    assert B.shape == (15, n_midpoints(X)) == (15, 3 + 14 + 0)
    assert [len(t) for t in midpoint_thresholds(X)] == [3, 14, 0]  # a constant column has no threshold
    # every column is a distinct non-trivial left set, and every raw split's left set is a column
    left_sets = {tuple(col) for col in B.T}
    assert len(left_sets) == B.shape[1] and all(0 < sum(s) < 15 for s in left_sets)
    assert {tuple((X[:, j] <= t).astype(int)) for j, t in _splits(X)} == left_sets
    for k, (j, t) in enumerate(columns):
        np.testing.assert_array_equal(B[:, k], X[:, j] <= t)
    # adjacent doubles: the midpoint rounds to the larger value, the threshold stays separating
    a = 1.0
    b = np.nextafter(a, 2.0)
    Xa = np.array([[a], [b], [a]])
    np.testing.assert_array_equal(binarize_midpoints(Xa)[0][:, 0], [1, 0, 1])
    assert sse([1.0, 2.0], [0.0, 0.0]) == 5.0


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("depth", [1, 2, 3])
def test_streed_on_all_midpoints_equals_brute_force(seed, depth):
    pytest.importorskip("pystreed")
    rng = np.random.RandomState(seed)
    n = 12
    # ties in one feature, continuous values in the other; a target with an interaction and noise
    X = np.column_stack([rng.randint(0, 5, n).astype(float), np.round(rng.rand(n), 3)])
    y = 3.0 * ((X[:, 0] > 2) ^ (X[:, 1] > 0.5)) + rng.normal(size=n) * [0.3, 1.0][seed % 2] + 100.0 * (seed == 5)
    expected = brute_force_sse(X, y, depth)
    result = run_streed(X, y, depth, time_limit=60)
    assert result["status"] == "optimal" and result["n_binary"] == n_midpoints(X)
    assert result["sse"] == pytest.approx(expected, rel=1e-9, abs=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("depth", [1, 2])
def test_streed_min_leaf_node_size_equals_brute_force(seed, depth):
    """The minimum leaf size the benchmark's min_leaf mode hands STreeD means what brute force means."""
    pytest.importorskip("pystreed")
    rng = np.random.RandomState(100 + seed)
    X = np.column_stack([rng.randint(0, 4, 14).astype(float), np.round(rng.rand(14), 2)])
    y = 2.0 * (X[:, 1] > 0.8) + X[:, 0] + rng.normal(size=14) * 0.5
    expected = brute_force_sse(X, y, depth, min_leaf=3)
    assert expected > brute_force_sse(X, y, depth) - 1e-12
    result = run_streed(X, y, depth, time_limit=60, min_samples_leaf=3)
    assert result["status"] == "optimal" and result["sse"] == pytest.approx(expected, rel=1e-9, abs=1e-9)


@pytest.mark.slow
def test_streed_finds_the_xor_that_one_split_cannot():
    """An XOR target: depth 1 gains nothing, depth 2 is exact, and STreeD agrees with brute force."""
    pytest.importorskip("pystreed")
    X = np.array(list(itertools.product([0.0, 1.0, 2.0, 3.0], repeat=2)))
    y = ((X[:, 0] > 1.5) ^ (X[:, 1] > 1.5)).astype(float)
    assert run_streed(X, y, 2)["sse"] == pytest.approx(0.0, abs=1e-12)
    assert run_streed(X, y, 1)["sse"] == pytest.approx(brute_force_sse(X, y, 1)) == pytest.approx(_leaf_sse(y))
