"""The two-class depth-2 kernel (one pass per child feature, per-feature split bounds, depth-1 slabs
from 600 rows) and the slab bounds of a depth-3 root from 2 000 rows (cpp/kernels.hpp, cpp/search.hpp).

Slab bounds rest on superadditivity: without a minimum leaf size, OPT(A ∪ B) >= OPT_alpha(A) +
OPT_0(B) for disjoint A and B, so the optima of slabs of a feature's order bound every root threshold
of that feature before any is solved.
"""

import numpy as np
import pytest
from sklearn.datasets import make_classification

from optitree.exact import solve


def depth1_errors(x, y, w, least):
    """Fewest misclassified weight of a leaf or one split of x (two classes, >= least rows a side)."""
    order = np.argsort(x, kind="stable")
    xs, ys, ws = x[order], y[order], w[order]
    t0, t1 = ws[ys == 0].sum(), ws[ys == 1].sum()
    best = min(t0, t1)
    c0, c1 = np.cumsum(ws * (ys == 0)), np.cumsum(ws * (ys == 1))
    rows = np.arange(1, len(x) + 1)
    cut = (xs[:-1] != xs[1:]) & (rows[:-1] >= least) & (len(x) - rows[:-1] >= least)
    if cut.any():
        left = np.minimum(c0[:-1], c1[:-1])[cut]
        right = np.minimum(t0 - c0[:-1], t1 - c1[:-1])[cut]
        best = min(best, (left + right).min())
    return best


def depth2_brute_force(X, y, w, least=1):
    """Fewest misclassified weight of a tree of depth <= 2 (every midpoint of every feature)."""
    best = min(w[y == 0].sum(), w[y == 1].sum())
    for f in range(X.shape[1]):
        values = np.unique(X[:, f])
        for t in values[:-1]:
            left = X[:, f] <= t
            if left.sum() < least or (~left).sum() < least:
                continue
            sides = []
            for mask in (left, ~left):
                sides.append(min(depth1_errors(X[mask, g], y[mask], w[mask], least) for g in range(X.shape[1])))
            best = min(best, sides[0] + sides[1])
    return best


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("weights", ["unit", "integer", "fractional"])
def test_depth2_kernel_on_600_to_900_rows_equals_brute_force(seed, weights):
    """Two classes from 600 rows (the kernel's slabs), ties (rounded features), integer weights (the
    integer sweep) and fractional ones (the floating-point sweep)."""
    rng = np.random.default_rng(seed)
    n = 600 + 150 * seed
    X = rng.normal(size=(n, 3)).round(1)
    y = ((X[:, 0] + X[:, 1] ** 2 + 0.7 * rng.normal(size=n)) > 0.8).astype(int)
    w = {"unit": np.ones(n), "integer": rng.integers(1, 4, n).astype(float),
         "fractional": rng.uniform(0.5, 2.0, n).round(3)}[weights]
    r = solve(X, y, w, max_depth=2)
    assert r.status == "optimal"
    assert r.objective == pytest.approx(depth2_brute_force(X, y, w), abs=1e-9)


def test_depth2_kernel_with_minimum_leaf_equals_brute_force():
    """min_samples_leaf > 1: no slabs (not monotone), the one-pass sweep with its row counts."""
    rng = np.random.default_rng(7)
    n = 700
    X = rng.normal(size=(n, 3)).round(1)
    y = ((X[:, 0] - X[:, 2] + 0.8 * rng.normal(size=n)) > 0).astype(int)
    w = np.ones(n)
    r = solve(X, y, max_depth=2, min_samples_leaf=40)
    assert r.status == "optimal"
    assert r.objective == depth2_brute_force(X, y, w, least=40)


def depth2_brute_force_alpha(X, y, w, alpha, allowed):
    """Least misclassified weight + alpha per split of a tree of depth <= 2; allowed (3, p): the
    root's, left child's and right child's features (every midpoint)."""
    def split_errors(mask, g):  # best single split of the rows in mask on feature g: inf if none
        x, yy, ww = X[mask, g], y[mask], w[mask]
        order = np.argsort(x, kind="stable")
        xs, c0, c1 = x[order], np.cumsum(ww[order] * (yy[order] == 0)), np.cumsum(ww[order] * (yy[order] == 1))
        cut = xs[:-1] != xs[1:]
        if not cut.any():
            return np.inf
        return (np.minimum(c0[:-1], c1[:-1]) + np.minimum(c0[-1] - c0[:-1], c1[-1] - c1[:-1]))[cut].min()

    def side(mask, node):
        leaf = min(w[mask & (y == 0)].sum(), w[mask & (y == 1)].sum())
        splits = [split_errors(mask, g) for g in range(X.shape[1]) if allowed[node, g]]
        return min([leaf] + [alpha + e for e in splits])

    best = min(w[y == 0].sum(), w[y == 1].sum())
    for f in np.flatnonzero(allowed[0]):
        for t in np.unique(X[:, f])[:-1]:
            left = X[:, f] <= t
            best = min(best, alpha + side(left, 1) + side(~left, 2))
    return best


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("case", ["unit", "fractional", "alpha, per-node features"])
def test_depth2_kernel_interval_sweeps_equal_brute_force(case, seed):
    """Root features of several hundred thresholds, whose narrow intervals the kernel sweeps whole
    (interval_sides: every candidate's children at once), children features with many ties; unit
    weights (the integer sweep), fractional ones (floating point), alpha with per-node features.
    (Seeds whose optimum lies in a swept interval: a sweep that let one side keep a moved row
    fails them.)"""
    rng = np.random.default_rng(seed)
    n = 800
    X = np.column_stack([rng.normal(size=n).round(2), rng.normal(size=n).round(2),
                         rng.integers(0, 8, n), rng.normal(size=n).round(0)]).astype(float)
    y = ((X[:, 0] * X[:, 1] + 0.3 * X[:, 2] - X[:, 3] + 0.8 * rng.normal(size=n)) > 0.5).astype(int)
    w = rng.uniform(0.5, 2.0, n).round(3) if case == "fractional" else np.ones(n)
    alpha = 2.5 if case.startswith("alpha") else 0.0
    allowed = np.ones((3, 4), dtype=bool)
    if case.startswith("alpha"):
        allowed[1, 2] = allowed[2, 0] = False
    r = solve(X, y, w, max_depth=2, alpha=alpha, allowed_features=allowed)
    assert r.status == "optimal"
    assert r.objective == pytest.approx(depth2_brute_force_alpha(X, y, w, alpha, allowed), abs=1e-9)


def test_depth3_root_with_slabs_equals_contree():
    """2 000 rows: the root's slab bounds (and the kernel's) keep ConTree's optimum."""
    from support.contree import contree_errors  # skips without pycontree
    X, y = make_classification(n_samples=2000, n_features=3, n_informative=2, n_redundant=0, random_state=5)
    r = solve(X, y, max_depth=3)
    assert r.status == "optimal" and r.objective == contree_errors(X, y, 3)


def test_a_depth3_search_stopped_after_its_slabs_has_a_bound_below_the_optimum():
    """Stopped once the root's slabs are solved (the depth-2 start and one unit of rows per feature),
    before any root candidate: the bound is above 0 and at most the optimum, the same every run; the
    progress bound never decreases and never exceeds the optimum."""
    X, y = make_classification(n_samples=2500, n_features=4, random_state=5)
    full = solve(X, y, max_depth=3)
    assert full.status == "optimal"
    limit = X.shape[0] * (X.shape[1] + 2)
    runs = [solve(X, y, max_depth=3, work_limit=limit) for _ in range(2)]
    for r in runs:
        assert r.status == "work_limit"
        assert 0 < r.bound <= full.objective <= r.objective
    assert runs[0].bound == runs[1].bound and runs[0].objective == runs[1].objective
    bounds = [b for _, _, b in full.trace]
    assert all(b <= full.objective + 1e-9 for b in bounds)
    assert all(b1 <= b2 + 1e-9 for b1, b2 in zip(bounds, bounds[1:]))


def test_slab_bounds_hold_with_alpha():
    """alpha > 0: a slab's term is its bound less alpha per split of a depth-2 tree. The reference
    adds a constant feature (no thresholds: the same problem) allowed at the root only, which makes
    the nodes differ and turns the root's slabs off."""
    X, y = make_classification(n_samples=2200, n_features=3, n_informative=2, n_redundant=0, random_state=11)
    X = X.round(1)
    padded = np.column_stack([X, np.zeros(len(y))])
    allowed = np.ones((7, 4), dtype=bool)
    allowed[1:, 3] = False
    for alpha in (0.0, 3.0, 40.0):
        with_slabs = solve(X, y, max_depth=3, alpha=alpha)
        plain = solve(padded, y, max_depth=3, alpha=alpha, allowed_features=allowed)
        assert with_slabs.status == plain.status == "optimal"
        assert with_slabs.objective == pytest.approx(plain.objective, abs=1e-9)
