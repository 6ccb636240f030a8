"""optitree.heuristics: oblique (OCT-H) and linear-leaf (ORT-L) improvement heuristics.

Each result is checked against objectives recomputed here from the tree's own routing, against
brute force on tiny data, and against the formulation that will take it as a MIP start.
"""

import itertools

import numpy as np
import pytest

from greedy import OBLIQUE, CARTClassifier, CARTRegressor, Tree
from optitree import exact
from optitree.formulations.octh import OCTHFormulation
from optitree.formulations.ort import ORTFormulation
from optitree.heuristics import improve_linear_leaves, improve_oblique, linear_leaf_objective, oblique_objective
from optitree.model import solution_violation

from benchmarks.oblique import rotated_xor


def routed_leaves(tree: Tree, X):
    """Leaf of every row, following ``split_coef @ x <= threshold`` / ``x[f] <= threshold`` by hand."""
    out = np.empty(X.shape[0], np.intp)
    for i, x in enumerate(X):
        node = 0
        while tree.children_left[node] != -1:
            f = tree.feature[node]
            v = tree.split_coef[node] @ x if f == OBLIQUE else x[f]
            node = tree.children_left[node] if v <= tree.threshold[node] else tree.children_right[node]
        out[i] = node
    return out


def errors_by_hand(tree, X, y, w):
    """Weighted misclassifications with every leaf labelled by its weighted majority."""
    leaf = routed_leaves(tree, X)
    err = 0.0
    for t in np.unique(leaf):
        counts = np.bincount(y[leaf == t], weights=w[leaf == t], minlength=y.max() + 1)
        err += counts.sum() - counts.max()
    return err


def n_features_used(tree):
    inner = np.flatnonzero(tree.children_left != -1)
    return sum(np.count_nonzero(tree.split_coef[n]) if tree.feature[n] == OBLIQUE else 1 for n in inner)


def check_octh_start(tree, X, y, depth, **kw):
    """The tree goes into OCT-H unchanged (no threshold moved) and its start vector satisfies the model."""
    form = OCTHFormulation.of(X, y, depth=depth, **kw)
    form.build()
    start, note = form.prepare_start(tree, prune=False)
    assert "moved" not in note
    x = form.start_vector(start)  # no InfeasibleStartError
    assert solution_violation(form.spec, x) is None
    assert same_partition(start.apply(form.X), tree.apply(form.X))
    return form


def same_partition(a, b):
    pairs = np.unique(np.column_stack([a, b]), axis=0)
    return np.unique(pairs[:, 0]).size == pairs.shape[0] == np.unique(pairs[:, 1]).size


# ---------------------------------------------------------------------------- oblique
def test_rotated_xor_depth2_beats_the_axis_aligned_optimum():
    X, y = rotated_xor()
    axis = exact.solve(X, y, max_depth=2)
    assert axis.objective >= 40  # no axis-aligned depth-2 tree comes close
    tree = improve_oblique(axis.tree, X, y, max_depth=2, time_limit=20, random_state=0)
    assert errors_by_hand(tree, X, y, np.ones(y.size)) == 0
    assert (tree.feature[tree.children_left != -1] == OBLIQUE).any()
    form = check_octh_start(tree, X, y, 2)
    assert form.objective_of_tree(tree) == 0.0


def test_oblique_objective_matches_a_recomputation_and_the_formulation():
    rng = np.random.RandomState(3)
    X = rng.rand(60, 3)
    y = (X[:, 0] + 0.7 * X[:, 1] - 0.4 * X[:, 2] > 0.6).astype(int) ^ (rng.rand(60) < 0.1)
    w = rng.choice([0.0, 1.0, 2.5], size=60, p=[0.1, 0.6, 0.3])
    start = CARTClassifier(max_depth=2, min_samples_leaf=4).fit(X, y, sample_weight=w).tree_
    alpha = 0.01
    tree = improve_oblique(start, X, y, w, alpha=alpha, min_samples_leaf=4, max_depth=2, time_limit=20)
    assert tree is not start
    pos = w > 0
    base = min(w[y == 0].sum(), w[y == 1].sum())
    by_hand = errors_by_hand(tree, X[pos], y[pos], w[pos]) / base + alpha * n_features_used(tree)
    assert oblique_objective(tree, X, y, w, alpha=alpha) == pytest.approx(by_hand, abs=1e-12)
    assert by_hand < oblique_objective(start, X, y, w, alpha=alpha)
    sizes = np.bincount(routed_leaves(tree, X[pos]))
    assert sizes[sizes > 0].min() >= 4
    form = check_octh_start(tree, X, y, 2, alpha=alpha, min_samples_leaf=4, sample_weight=w)
    assert form.objective_of_tree(tree) == pytest.approx(by_hand, abs=1e-9)


def test_depth1_reaches_the_brute_force_hyperplane_optimum_on_tiny_data():
    """Every 2-D hyperplane split is one through two points, shifted: none beats the heuristic's."""
    rng = np.random.RandomState(7)
    X = rng.rand(14, 2)
    y = rng.randint(0, 2, 14)
    best = np.inf
    for i, j in itertools.combinations(range(14), 2):
        d = X[j] - X[i]
        normal = np.array([-d[1], d[0]])
        proj = X @ normal
        for shift in (-1e-9, 1e-9):  # the pair on either side
            left = proj <= proj[i] + shift * np.abs(normal).sum()
            err = sum(min(np.sum(y[s] == 0), np.sum(y[s] == 1)) for s in (left, ~left))
            best = min(best, err)
    best = min(best, min(np.sum(y == 0), np.sum(y == 1)))
    start = CARTClassifier(max_depth=1).fit(X, y).tree_
    tree = improve_oblique(start, X, y, max_depth=1, time_limit=20, random_state=0)
    got = errors_by_hand(tree, X, y, np.ones(14))
    assert got >= best  # never below the true optimum: the objective is not miscounted
    assert got == best
    check_octh_start(tree, X, y, 1)


def test_oblique_never_worse_and_returns_the_input_when_it_cannot_improve():
    X, y = rotated_xor(n=120, noise=0.1, seed=1)
    for seed in range(3):
        start = CARTClassifier(max_depth=2, max_features=1, random_state=seed).fit(X, y).tree_
        tree = improve_oblique(start, X, y, max_depth=2, time_limit=3, random_state=seed, max_rounds=5)
        assert oblique_objective(tree, X, y) <= oblique_objective(start, X, y)
    separable = (X[:, 0] > 0.5).astype(int)
    stump = CARTClassifier(max_depth=1).fit(X, separable).tree_
    assert improve_oblique(stump, X, separable, max_depth=2, time_limit=3) is stump


def test_oblique_input_checks():
    X, y = rotated_xor(n=30)
    reg = CARTRegressor(max_depth=1).fit(X, y.astype(float)).tree_
    with pytest.raises(ValueError, match="classification"):
        improve_oblique(reg, X, y)
    deep = CARTClassifier(max_depth=3).fit(X, y).tree_
    with pytest.raises(ValueError, match="depth"):
        improve_oblique(deep, X, y, max_depth=1)
    with pytest.raises(ValueError, match="squared"):
        improve_linear_leaves(reg, X, y.astype(float), loss="absolute")


# ---------------------------------------------------------------------------- linear leaves
def linear_data(n=160, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.rand(n, 3)
    y = np.where(X[:, 0] < 0.4, 3 * X[:, 1] - 2, -4 * X[:, 2] + 1) + 0.1 * rng.randn(n)
    return X, y


def sse_objective_by_hand(tree, X, y, w, alpha=0.0, leaf_alpha=0.0):
    leaf = routed_leaves(tree, X)
    pred = tree.leaf_intercept[leaf] + np.einsum("ij,ij->i", X, tree.leaf_coef[leaf])
    pos = w > 0
    sst = w[pos] @ (y[pos] - np.average(y[pos], weights=w[pos])) ** 2
    l1 = (np.abs(tree.leaf_coef[np.unique(leaf[pos])]) @ np.ptp(X[pos], axis=0)).sum() / np.ptp(y[pos])
    return (w @ (y - pred) ** 2) / sst + alpha * int((tree.children_left != -1).sum()) + leaf_alpha * l1


@pytest.mark.filterwarnings("ignore:OCT. features")
def test_linear_leaves_improve_the_constant_optimum_and_encode_in_ort():
    X, y = linear_data()
    w = np.r_[np.ones(150), np.zeros(10)]
    const = exact.solve(X, y, w, max_depth=2, loss="squared", min_samples_leaf=10).tree
    kw = dict(min_samples_leaf=10, coef_budget=2.0, leaf_alpha=0.001)
    tree = improve_linear_leaves(const, X, y, w, time_limit=20, max_depth=2, **kw)
    assert tree.leaf_coef is not None
    got = linear_leaf_objective(tree, X, y, w, leaf_alpha=0.001)
    assert got == pytest.approx(sse_objective_by_hand(tree, X, y, w, leaf_alpha=0.001), rel=1e-9)
    assert got < 0.2 * linear_leaf_objective(const, X, y, w)  # the data are piecewise linear
    pos = w > 0
    span_x, span_y = np.ptp(X[pos], axis=0), np.ptp(y[pos])
    assert ((np.abs(tree.leaf_coef[tree.is_leaf]) @ span_x) <= 2.0 * span_y).all()  # ORT-L's L1 budget
    form = ORTFormulation.of(X, y, depth=2, leaf_model="linear", loss="squared", sample_weight=w, **kw)
    form.build()
    start, _ = form.prepare_start(tree)
    assert solution_violation(form.spec, form.start_vector(start)) is None
    assert form.objective_of_tree(tree) == pytest.approx(got, rel=1e-9)


def test_linear_leaves_respect_a_binding_budget_and_never_worsen_a_valid_start():
    X, y = linear_data(seed=1)
    tight = improve_linear_leaves(CARTRegressor(max_depth=2).fit(X, y).tree_, X, y, min_samples_leaf=5,
                                  coef_budget=0.3, time_limit=4, max_depth=2, max_rounds=2)
    l1 = np.abs(tight.leaf_coef[tight.is_leaf]) @ np.ptp(X, axis=0) / np.ptp(y)
    assert l1.max() <= 0.3 and l1.max() > 0.29  # binding
    again = improve_linear_leaves(tight, X, y, min_samples_leaf=5, coef_budget=0.3, time_limit=4, max_depth=2,
                                  max_rounds=2)
    assert linear_leaf_objective(again, X, y) <= linear_leaf_objective(tight, X, y)
    greedy_tree = CARTRegressor(max_depth=2, min_samples_leaf=5, leaf_model="linear").fit(X, y).tree_
    out = improve_linear_leaves(greedy_tree, X, y, min_samples_leaf=5, coef_budget=100.0, time_limit=4, max_rounds=2)
    assert linear_leaf_objective(out, X, y) <= linear_leaf_objective(greedy_tree, X, y)


def test_linear_leaves_depth1_equals_exhaustive_split_enumeration():
    rng = np.random.RandomState(5)
    X = rng.rand(30, 2)
    y = np.abs(X[:, 0] - 0.3) * 4 + X[:, 1] + 0.05 * rng.randn(30)
    sst = ((y - y.mean()) ** 2).sum()

    def ls(rows):
        A = np.column_stack([np.ones(rows.sum()), X[rows]])
        r = y[rows] - A @ np.linalg.lstsq(A, y[rows], rcond=None)[0]
        return r @ r

    best = ls(np.ones(30, bool))
    for f in range(2):
        for t in np.unique(X[:, f])[:-1]:
            left = X[:, f] <= t
            if min(left.sum(), (~left).sum()) >= 4:
                best = min(best, ls(left) + ls(~left))
    start = Tree([-1], [-1], [-2], [np.nan], [[y.mean()]], n_features=2, task="regression")
    tree = improve_linear_leaves(start, X, y, min_samples_leaf=4, coef_budget=1e6, time_limit=20, max_depth=1)
    assert linear_leaf_objective(tree, X, y) == pytest.approx(best / sst, rel=1e-9)


def test_linear_leaves_depth2_equals_exhaustive_enumeration_on_tiny_data():
    """Every depth-2 tree (each node: any threshold of any feature, or a leaf) with least-squares leaves."""
    rng = np.random.RandomState(11)
    X = rng.rand(13, 2)
    y = np.where(X[:, 0] < 0.5, X[:, 1], 2 - 3 * X[:, 1]) + np.where(X[:, 1] < 0.3, 1.0, 0.0) + 0.05 * rng.randn(13)
    min_leaf = 3

    def ls(rows):
        if rows.sum() == 0:
            return 0.0
        A = np.column_stack([np.ones(rows.sum()), X[rows]])
        r = y[rows] - A @ np.linalg.lstsq(A, y[rows], rcond=None)[0]
        return r @ r

    def splits(rows):
        yield None
        for f in range(2):
            for t in np.unique(X[rows, f])[:-1]:
                left = rows & (X[:, f] <= t)
                if min(left.sum(), (rows & ~left).sum()) >= min_leaf:
                    yield left, rows & ~left

    def best_depth1(rows):
        return min(ls(rows) if s is None else ls(s[0]) + ls(s[1]) for s in splits(rows))

    every = np.ones(13, bool)
    best = min(best_depth1(every) if s is None else best_depth1(s[0]) + best_depth1(s[1]) for s in splits(every))
    start = CARTRegressor(max_depth=2, min_samples_leaf=min_leaf).fit(X, y).tree_
    tree = improve_linear_leaves(start, X, y, min_samples_leaf=min_leaf, coef_budget=1e6, time_limit=20)
    sst = ((y - y.mean()) ** 2).sum()
    got = linear_leaf_objective(tree, X, y)
    assert got >= best / sst - 1e-9  # never below the true optimum
    assert got == pytest.approx(best / sst, rel=1e-7)


def test_linear_leaves_never_worse_than_a_start_the_clock_leaves_no_time_to_search():
    """Every start's own objective counts: with the search cut short, greedy linear-leaf CART (in the budget) still
    bounds the result."""
    X, y = linear_data(seed=2)
    greedy_tree = CARTRegressor(max_depth=2, min_samples_leaf=10, leaf_model="linear",
                                criterion="linear_squared_error").fit(X, y).tree_
    l1 = (np.abs(greedy_tree.leaf_coef[greedy_tree.is_leaf]) @ np.ptp(X, axis=0)).max() / np.ptp(y)
    const = exact.solve(X, y, max_depth=2, loss="squared", min_samples_leaf=10).tree
    out = improve_linear_leaves(const, X, y, min_samples_leaf=10, coef_budget=1.01 * l1, time_limit=1e-3,
                                max_depth=2, starts=[greedy_tree])
    assert linear_leaf_objective(out, X, y) <= linear_leaf_objective(greedy_tree, X, y) * (1 + 1e-9)


def test_heuristics_import_numpy_scipy_sklearn_and_greedy_only():
    import ast
    import pathlib

    allowed = {"numpy", "scipy", "sklearn", "greedy", "__future__", "time", "warnings", "itertools", "math"}
    for path in (pathlib.Path(__file__).resolve().parents[2] / "src" / "optitree" / "heuristics").glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert node.level <= 1, path  # nothing from optitree outside heuristics/
                if node.level == 0:
                    assert node.module.split(".")[0] in allowed, (path, node.module)
            elif isinstance(node, ast.Import):
                assert {a.name.split(".")[0] for a in node.names} <= allowed, path
