"""OCT-H (hyperplane splits) against brute-force univariate optima, hand-made geometry and its own solver numbers."""

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier

from greedy import OBLIQUE, Tree
from optitree import OptimalTreeClassifier
from optitree.solvers import SolveOptions, solve_highs
from optitree.formulations.octh import OCTHFormulation


def univariate_depth1_errors(X, y):
    """Fewest training errors of any depth-1 axis-aligned tree (every feature, every midpoint)."""
    def errors(labels):
        return labels.size - np.bincount(labels).max() if labels.size else 0

    best = errors(y)
    for f in range(X.shape[1]):
        v = np.unique(X[:, f])
        for t in (v[:-1] + v[1:]) / 2:
            left = X[:, f] <= t
            best = min(best, errors(y[left]) + errors(y[~left]))
    return best


def line_data(n=60, seed=0, margin=0.05):
    """y = [x0 + x1 > 1] with every point at least ``margin`` from the line."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (4 * n, 2))
    X = X[np.abs(X.sum(axis=1) - 1) / np.sqrt(2) >= margin][:n]
    return X, (X.sum(axis=1) > 1).astype(int)


def rotated_xor(n=40, seed=4):
    """XOR rotated by 45 degrees: the class boundaries are the two diagonals."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, 2))
    u, v = X[:, 0] + X[:, 1], X[:, 0] - X[:, 1]
    return X, ((u > 0) ^ (v > 0)).astype(int)


def test_one_oblique_line_separates_what_no_axis_split_can():
    X, y = line_data()
    assert univariate_depth1_errors(X, y) > 0
    clf = OptimalTreeClassifier(max_depth=1, formulation="oct-h", time_limit=None, node_limit=5000).fit(X, y)
    assert clf.score(X, y) == 1.0
    assert clf.tree_.feature[0] == OBLIQUE
    coef = clf.tree_.split_coef[0]
    assert coef[0] == pytest.approx(coef[1], rel=0.5)  # close to the true normal (1, 1)


def test_original_units_survive_scaling():
    """Features on very different scales and offsets: the decoded hyperplane is in original units."""
    X, y = line_data(seed=1)
    Xt = np.column_stack([50 + 0.01 * X[:, 0], -1000 * X[:, 1]])
    clf = OptimalTreeClassifier(max_depth=1, formulation="oct-h", time_limit=None, node_limit=5000).fit(Xt, y)
    assert clf.score(Xt, y) == 1.0
    # fresh points from the same law, transformed the same way, away from the line
    Xn, yn = line_data(n=200, seed=2)
    assert clf.score(np.column_stack([50 + 0.01 * Xn[:, 0], -1000 * Xn[:, 1]]), yn) >= 0.9


def test_rotated_xor_depth1_beats_the_univariate_optimum():
    X, y = rotated_xor()
    clf = OptimalTreeClassifier(max_depth=1, formulation="oct-h", time_limit=None, node_limit=3000).fit(X, y)
    oblique_errors = int((clf.predict(X) != y).sum())
    assert oblique_errors < univariate_depth1_errors(X, y)
    assert clf.result_.start_source == "heuristic" and clf.result_.start_accepted  # improved from the engine's start


@pytest.mark.parametrize("alpha", [0.0, 0.02])
def test_objective_recomputed_from_tree_equals_solver(alpha):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 3))
    y = (X[:, 0] - 0.5 * X[:, 1] > 0.2).astype(int) ^ (rng.uniform(size=30) < 0.1)
    form = OCTHFormulation.of(X, y, depth=2, alpha=alpha)
    spec = form.build()
    assert form.estimate_size() == (spec.n_rows, spec.n_cols, spec.nnz)
    cart = Tree.from_sklearn(DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, y))
    result, x = solve_highs(spec.to_highs(), SolveOptions(node_limit=100), start=form.start_from_tree(cart))
    assert result.start_accepted and result.has_solution
    tree = form.decode(spec, x)
    errors = int((tree.predict(X).argmax(axis=1) != y).sum())
    internal = ~tree.is_leaf
    n_coef = sum(
        int(np.count_nonzero(tree.split_coef[i])) if tree.feature[i] == OBLIQUE else 1 for i in np.flatnonzero(internal)
    )
    baseline = y.size - np.bincount(y).max()
    assert result.objective == pytest.approx(errors / baseline + alpha * n_coef, abs=1e-6)


def test_single_feature_hyperplanes_come_back_univariate():
    """Data split by x1 alone: with a feature penalty the best hyperplane uses one coefficient,
    returned as an ordinary split whose threshold sits between the neighbouring training values."""
    rng = np.random.default_rng(5)
    X = rng.uniform(0, 10, (30, 3))
    y = (X[:, 1] > 4).astype(int)
    clf = OptimalTreeClassifier(max_depth=1, formulation="oct-h", alpha=0.01, time_limit=None, node_limit=3000)
    clf.fit(X, y)
    assert clf.score(X, y) == 1.0
    tree = clf.tree_
    assert tree.feature[0] == 1
    assert X[y == 0, 1].max() <= tree.threshold[0] < X[y == 1, 1].min()


def test_margin_is_validated():
    X, y = line_data(n=10)
    for margin in (0.0, 1e-7, 0.6, "big"):
        with pytest.raises(ValueError, match="margin"):
            OCTHFormulation.of(X, y, depth=1, margin=margin)


def test_start_split_closer_than_the_margin_is_moved_and_accepted():
    """CART splits between two values 1e-6 apart (scaled): not representable with margin 1e-4.
    The start is moved to the nearest gap >= margin and then satisfies every row of the model."""
    from optitree.model import solution_violation

    x0 = np.r_[np.linspace(0, 0.5, 20), 0.5 + 1e-6, np.linspace(0.6, 1, 19)]
    X = np.column_stack([x0, np.random.default_rng(0).uniform(size=40)])
    y = (x0 > 0.5).astype(int)
    form = OCTHFormulation.of(X, y, depth=1)
    spec = form.build()
    cart = Tree.from_sklearn(DecisionTreeClassifier(max_depth=1).fit(X, y))
    assert 0.5 < cart.threshold[0] < 0.5 + 1e-6
    start, note = form.prepare_start(cart)
    assert "moved" in note
    assert start.feature[0] == 0 and x0[18] <= start.threshold[0] < x0[19]  # the nearest wide gap: one sample moves
    assert solution_violation(spec, form.start_vector(start)) is None


@pytest.mark.parametrize("alpha, margin", [(0.0, 1e-4), (0.05, 1e-4), (0.0, 0.05)])
def test_cart_start_vectors_satisfy_every_row_and_price_like_the_tree(alpha, margin):
    """The complete start vector of a depth-2 CART tree is feasible and its objective c·x is the tree's
    (a wide margin forces threshold moves and tests that b is set from the samples reaching each node)."""
    from optitree.model import solution_violation

    for seed in range(8):
        rng = np.random.default_rng(seed)
        X = np.round(rng.normal(size=(40, 3)), 2)
        y = rng.integers(0, 3, 40)
        form = OCTHFormulation.of(X, y, depth=2, alpha=alpha, margin=margin)
        spec = form.build()
        start, _ = form.prepare_start(Tree.from_sklearn(DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, y)))
        x = form.start_vector(start)
        assert solution_violation(spec, x) is None, seed
        cost = spec.column_arrays()[0]
        assert cost @ x + spec.objective_offset == pytest.approx(form.objective_of_tree(start), abs=1e-9)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # a limit stops the fit on purpose
def test_octh_starts_from_the_axis_aligned_optimum_and_keeps_its_own_bound():
    """Never worse than the engine's axis-aligned optimum; that optimum is no bound for hyperplanes."""
    from optitree.exact import solve as exact_solve

    rng = np.random.RandomState(1)
    X = rng.rand(60, 2)
    y = (X[:, 0] + X[:, 1] > 1.0).astype(int)  # one diagonal hyperplane separates it
    axis = exact_solve(X, y, max_depth=1)
    assert axis.objective > 0  # no single axis-aligned split does
    clf = OptimalTreeClassifier(max_depth=1, formulation="oct-h", time_limit=60).fit(X, y)
    errors = int((clf.predict(X) != y).sum())
    assert errors <= axis.objective
    assert clf.result_.acceleration["stages"] == ["start"]
    assert clf.result_.bound <= clf.result_.objective + 1e-9
    if clf.result_.proven_optimal:
        assert errors == 0
    # a harder set under a short limit: still at least as good as the axis-aligned optimum
    X2 = rng.rand(300, 4)
    y2 = ((X2[:, 0] > 0.5) ^ (X2[:, 1] > 0.5) | (rng.rand(300) < 0.1)).astype(int)
    axis2 = exact_solve(X2, y2, max_depth=2)
    clf2 = OptimalTreeClassifier(max_depth=2, formulation="oct-h", time_limit=5).fit(X2, y2)
    assert int((clf2.predict(X2) != y2).sum()) <= axis2.objective
    assert clf2.result_.bound <= clf2.result_.objective + 1e-9


def test_the_oblique_heuristic_start_beats_the_axis_aligned_optimum_on_rotated_xor():
    # rotated noise-free XOR: no axis-aligned depth-2 tree separates it; hyperplanes do
    rng = np.random.RandomState(0)
    Z = rng.uniform(-1, 1, (400, 2))
    y = ((Z[:, 0] > 0) ^ (Z[:, 1] > 0)).astype(int)
    c, s = np.cos(np.pi / 6), np.sin(np.pi / 6)
    X = Z @ np.array([[c, -s], [s, c]])
    axis = OptimalTreeClassifier(max_depth=2).fit(X, y)
    oblique = OptimalTreeClassifier(max_depth=2, formulation="oct-h", time_limit=60).fit(X, y)
    assert (oblique.predict(X) != y).sum() < (axis.predict(X) != y).sum()
    assert oblique.result_.objective <= oblique.result_.start_objective


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # a limit stops the fit on purpose
def test_a_fit_with_no_bound_beyond_the_lp_says_so():
    """OCT-H's big-M model relaxes to 0: stopped with that bound, result_ says the gap measures nothing."""
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=300, n_features=4, n_informative=4, n_redundant=0, random_state=0)
    clf = OptimalTreeClassifier(max_depth=2, formulation="oct-h", time_limit=4).fit(X, y)
    r = clf.result_
    assert not r.proven_optimal and r.objective > 0
    trivial = r.bound <= 1e-9
    assert ("no bound beyond the LP relaxation" in r.message) == trivial
    assert trivial  # 4 s on 300 rows: no bound above the LP's 0 (120 s do not raise it on 1 000 such rows)
    proven = OptimalTreeClassifier(max_depth=1, formulation="oct-h", time_limit=None).fit(*line_data(n=20))
    assert proven.result_.proven_optimal and "no bound beyond" not in proven.result_.message


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # a limit stops the fit on purpose
def test_an_outlier_feature_does_not_make_octh_worse_than_the_axis_aligned_optimum():
    from optitree.exact import solve as exact_solve

    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (200, 2))
    X[0, 0] = 1e5  # every other gap of x0 shrinks below the margin 1e-4 once scaled to [0, 1]
    y = (X[:, 0] > 0.5).astype(int) ^ (rng.uniform(size=200) < 0.05)
    axis = exact_solve(X, y, max_depth=1)
    # one outlier shrinks x0's scaled gaps below OCT-H's margin: the model cannot split on x0
    clf = OptimalTreeClassifier(max_depth=1, formulation="oct-h", time_limit=3).fit(X, y)
    errors = int((clf.predict(X) != y).sum())
    assert errors <= axis.objective
    assert errors < 40  # the best split on x1 alone leaves about half the rows wrong
    r = clf.result_
    assert not r.proven_optimal and "could not take it as a start" in r.message
    assert r.bound <= r.objective
