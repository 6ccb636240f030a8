"""Small MIP models (:class:`optitree.model.ModelSpec`) with known optima or feasible starts."""

import itertools

import numpy as np

from optitree.model import ModelSpec


def assignment_spec():
    """3x3 assignment with a side constraint and an objective offset; brute-force optimum."""
    cost = np.array([[4.0, 1.0, 3.0], [2.0, 0.0, 5.0], [3.0, 2.0, 2.0]])
    spec = ModelSpec("assign")
    x = spec.add_vars("x", (3, 3), ub=1, integer=True, obj=cost)
    spec.add_rows("agent", 3, np.repeat(np.arange(3), 3), x.ravel(), np.ones(9), 1, 1)
    spec.add_rows("task", 3, np.tile(np.arange(3), 3), x.ravel(), np.ones(9), 1, 1)
    spec.add_rows("side", 1, [0, 0], [x[0, 1], x[1, 1]], [1.0, 1.0], 0, 0)  # task 1 not to agents 0, 1
    spec.objective_offset = 7.0
    best = min(
        7.0 + sum(cost[i, p[i]] for i in range(3))
        for p in itertools.permutations(range(3))
        if p[0] != 1 and p[1] != 1
    )
    return spec, best


def multi_knapsack(seed=0, n=60, m=5):
    """Random 0-1 multi-knapsack that needs ~70 branch-and-bound nodes (HiGHS 1.15, seed 0)."""
    rng = np.random.default_rng(seed)
    w = rng.integers(5, 40, (m, n)).astype(float)
    v = rng.integers(5, 60, n).astype(float)
    cap = w.sum(axis=1) * 0.3
    spec = ModelSpec("mknap")
    x = spec.add_vars("x", n, ub=1, integer=True, obj=-v)
    spec.add_rows("cap", m, np.repeat(np.arange(m), n), np.tile(x, m), w.ravel(), -np.inf, cap)
    spec.objective_offset = 10.0
    # greedy feasible start (by value per total weight)
    greedy, load = np.zeros(n), np.zeros(m)
    for j in np.argsort(-v / w.sum(axis=0)):
        if (load + w[:, j] <= cap).all():
            greedy[j], load = 1.0, load + w[:, j]
    return spec, greedy


def objective_of(spec, x):
    return float(spec.column_arrays()[0] @ x + spec.objective_offset)
