"""The depth-2 kernel of two classes from histograms (cpp/histogram.hpp): features of at most 256 ranks
(max_bins), no minimum leaf size, from 1 000 rows in the search (HISTOGRAM_ROWS); the kernel itself on any rows.

Truths: brute force over every tree on tiny sets (the kernel called directly), ConTree on a few thousand
binned rows (fed the bin codes, so both solve the same space), and the sweep kernel on the same problem
(a never-allowed feature of many ranks turns the histograms off).
"""

import numpy as np
import pytest

from optitree.exact import prepare, solve
from optitree.exact._core import Problem as CoreProblem
from optitree.exact._core import depth2_histograms
from support.exact_bruteforce import brute_force


def core_problem(data):
    return CoreProblem(data.rank, data.y, data.weight, data.stats, data.loss_code, data.width, [], [])


def tree_cost(codes, y, w, nodes, alpha):
    """Misclassified weight of the depth-2 tree ``nodes`` ([f, r, f_left, r_left, f_right, r_right]) plus alpha
    per split."""
    f, r, *kids = nodes
    if f < 0:
        return min(w[y == 0].sum(), w[y == 1].sum())
    cost = alpha
    for side, mask in enumerate((codes[:, f] <= r, codes[:, f] > r)):
        assert mask.any()  # a split never leaves a side empty
        g, s = kids[2 * side], kids[2 * side + 1]
        leaves = [mask] if g < 0 else [mask & (codes[:, g] <= s), mask & (codes[:, g] > s)]
        cost += alpha * (g >= 0) + sum(min(w[leaf & (y == 0)].sum(), w[leaf & (y == 1)].sum()) for leaf in leaves)
        assert all(leaf.any() for leaf in leaves)
    return cost


@pytest.mark.parametrize("seed", range(40))
def test_the_kernel_equals_brute_force_on_tiny_sets(seed):
    """Up to 5 ranks a feature, unit, integer or fractional weights, alpha, allowed features per node, a
    subset of the rows: the optimum and a tree that costs it."""
    rng = np.random.default_rng(seed)
    n, p = int(rng.integers(4, 15)), int(rng.integers(1, 4))
    X = rng.integers(0, rng.integers(2, 6), size=(n, p)).astype(float)
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]
    w = [np.ones(n), rng.integers(1, 4, n).astype(float), rng.choice([0.25, 0.5, 1.5, 3.0], n)][seed % 3]
    alpha = [0.0, 0.5, 1.0, 2.5][seed % 4]
    allowed = rng.random((3, p)) < 0.75 if seed % 5 == 4 else np.ones((3, p), bool)
    rows = np.sort(rng.choice(n, size=max(2, n - seed % 3), replace=False)).astype(np.int32)
    data = prepare(X, y, w)  # the kernel's costs and alpha in the engine's units: data.scale each
    cost, nodes = depth2_histograms(core_problem(data), rows, allowed[0], allowed[1:], alpha / data.scale)
    truth = brute_force(X[rows], y[rows], w[rows], 2, alpha, 1, allowed)
    assert cost * data.scale == pytest.approx(truth, abs=1e-9)
    assert tree_cost(data.rank.T[rows], y[rows], w[rows], nodes, alpha) == pytest.approx(truth, abs=1e-9)
    if nodes[0] >= 0:
        assert allowed[0, nodes[0]] and all(allowed[1 + k, nodes[2 + 2 * k]] for k in (0, 1) if nodes[2 + 2 * k] >= 0)


@pytest.mark.parametrize("depth", [2, 3])
def test_the_search_with_histograms_equals_contree_on_binned_rows(depth):
    """4 500 rows binned at 32: every depth-2 problem of 1 000 rows or more takes the histograms."""
    from support.contree import contree_errors  # skips without pycontree
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=4500, n_features=3, n_informative=2, n_redundant=0, random_state=3)
    codes = prepare(X, y, max_bins=32).rank.T.astype(float)
    r = solve(X, y, max_depth=depth, max_bins=32)
    assert r.status == "optimal" and r.objective == contree_errors(codes, y, depth)


@pytest.mark.parametrize("weights", ["integer", "fractional"])
def test_the_search_with_histograms_equals_the_sweep_kernel(weights):
    """Weights and alpha at depths 2 and 3 on 8 400 rows of at most 12 ranks: root candidates with
    both children of 1 000 rows or more fill the smaller child's histograms and take the larger's as
    their parent's less them. The reference adds a feature of 8 400 ranks allowed nowhere (the same
    problem), which leaves the histograms out."""
    rng = np.random.default_rng(1)
    n = 8400
    X = rng.integers(0, 12, size=(n, 3)).astype(float)
    y = ((X[:, 0] - X[:, 1] + 0.5 * X[:, 2] + rng.normal(scale=3.0, size=n)) > 0).astype(int)
    w = rng.integers(1, 4, n).astype(float) if weights == "integer" else rng.uniform(0.5, 2.0, n).round(3)
    padded = np.column_stack([X, rng.permutation(n).astype(float)])
    allowed = np.array([True, True, True, False])
    for depth, alpha in ((2, 0.0), (2, 7.5), (3, 0.0), (3, 7.5)):
        fast = solve(X, y, w, max_depth=depth, alpha=alpha)
        plain = solve(padded, y, w, max_depth=depth, alpha=alpha, allowed_features=allowed)
        assert fast.status == plain.status == "optimal"
        assert fast.objective == pytest.approx(plain.objective, abs=1e-9)
