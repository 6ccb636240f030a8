"""ORT / ORT-L (OptimalTreeRegressor) against brute force, hand-made truth and the solver's own numbers."""

import numpy as np
import pytest
from sklearn.tree import DecisionTreeRegressor
from sklearn.utils.estimator_checks import parametrize_with_checks

from greedy import CARTRegressor, Tree
from optitree.estimators import OptimalTreeRegressor
from optitree.solvers import SolveOptions, solve_highs
from optitree.formulations.ort import ORTFormulation, squared_tangents
from support.bruteforce import best_regression_loss, leaf_cost

OPTS = SolveOptions(time_limit=None, node_limit=200)


# ---------------------------------------------------------------------- independent truth
def recomputed_objective(tree, X, y, loss, alpha=0.0):
    """Objective of a regression tree from its predictions: loss / baseline + alpha * splits."""
    r = y - tree.predict(X)
    base = leaf_cost(y, loss)
    loss_value = np.abs(r).sum() if loss == "absolute" else (r**2).sum()
    return loss_value / base + alpha * int((tree.children_left >= 0).sum())


def random_set(seed, n=12):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 6, (n, 2)).astype(float)  # ties on purpose
    y = np.round(rng.normal(size=n), 2)
    return X, y


def solve_formulation(form, start_tree=None):
    spec = form.build()
    start = None if start_tree is None else form.start_from_tree(start_tree)
    result, x = solve_highs(spec.to_highs(), OPTS, start=start)
    return result, form.decode(spec, x)


# ---------------------------------------------------------------------- brute force
@pytest.mark.parametrize("depth, n", [(1, 12), (2, 9), pytest.param(2, 12, marks=pytest.mark.slow)])
def test_absolute_error_matches_brute_force(depth, n):
    for seed in range(30):
        X, y = random_set(seed, n)
        reg = OptimalTreeRegressor(max_depth=depth, loss="absolute", acceleration="none", time_limit=None,
                                    node_limit=20_000).fit(X, y)
        assert reg.result_.proven_optimal, (seed, reg.result_.summary())
        truth = best_regression_loss(X, y, np.arange(y.size), depth, "absolute")
        loss = np.abs(y - reg.predict(X)).sum()
        assert loss == pytest.approx(truth, abs=1e-6), seed
        assert reg.result_.normalized_objective == pytest.approx(truth / leaf_cost(y, "absolute"), abs=1e-6)


def test_squared_error_within_the_documented_approximation():
    """The exact optimum lies between the reported bound and the returned tree's exact objective,
    and the returned tree is within the tangent approximation's relative error of it."""
    rel = ((1.2 - 1) / (1.2 + 1)) ** 2
    for seed in range(4):
        X, y = random_set(100 + seed, n=8)
        reg = OptimalTreeRegressor(max_depth=2, loss="squared", acceleration="none", time_limit=None,
                                    node_limit=20_000).fit(X, y)
        truth = best_regression_loss(X, y, np.arange(y.size), 2, "squared") / leaf_cost(y, "squared")
        res = reg.result_
        assert res.normalized_bound <= truth + 1e-9
        assert truth - 1e-9 <= res.normalized_objective <= truth / (1 - rel) + 1e-6
        assert res.normalized_objective == pytest.approx(recomputed_objective(reg.tree_, X, y, "squared"), abs=1e-12)
        # constant leaves are refitted to the mean of their samples
        leaves = reg.apply(X)
        for leaf in np.unique(leaves):
            assert reg.tree_.value[leaf, 0] == pytest.approx(y[leaves == leaf].mean())


def test_tangents_underestimate_by_at_most_the_documented_error():
    e = squared_tangents(3.0)
    r = np.linspace(3e-3, 3.0, 5001)
    approx = (2 * e[None, :] * r[:, None] - e[None, :] ** 2).max(axis=1)
    assert np.all(approx <= r**2 + 1e-12)
    assert np.max(1 - approx / r**2) <= ((1.2 - 1) / (1.2 + 1)) ** 2 + 1e-12


def test_highs_has_no_miqp():
    """Why loss="squared" is approximated: HiGHS 1.15 refuses a MIP with a quadratic objective.
    If this starts failing, HiGHS gained MIQP and the approximation can go."""
    highspy = pytest.importorskip("highspy")
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.addVar(0, 1)
    h.addVar(0, 5)
    h.changeColIntegrality(1, highspy.HighsVarType.kInteger)
    hessian = highspy.HighsHessian()
    hessian.dim_, hessian.start_, hessian.index_, hessian.value_ = 2, [0, 1, 2], [0, 1], [2.0, 2.0]
    hessian.format_ = highspy.HessianFormat.kTriangular
    h.passHessian(hessian)
    assert h.run() == highspy.HighsStatus.kError


# ---------------------------------------------------------------------- ORT-L
def test_linear_leaves_recover_a_piecewise_linear_function():
    x = np.linspace(0, 1, 30)
    y = np.where(x <= 0.4, 1 + 2 * x, 3 - x)
    reg = OptimalTreeRegressor(max_depth=1, leaf_model="linear").fit(x[:, None], y)
    tree = reg.tree_
    assert reg.result_.proven_optimal
    assert tree.feature[0] == 0
    below, above = x[x <= 0.4].max(), x[x > 0.4].min()
    assert below <= tree.threshold[0] < above
    left, right = tree.children_left[0], tree.children_right[0]
    np.testing.assert_allclose(tree.leaf_coef[[left, right], 0], [2.0, -1.0], atol=1e-6)
    np.testing.assert_allclose(tree.leaf_intercept[[left, right]], [1.0, 3.0], atol=1e-6)
    np.testing.assert_allclose(reg.predict(x[:, None]), y, atol=1e-6)


def test_coef_budget_limits_the_leaf_slopes():
    """With a budget below the true slope the fit must flatten: Σ|coef|·range(x) <= budget·range(y)."""
    x = np.linspace(0, 1, 20)
    y = 5 * x
    reg = OptimalTreeRegressor(max_depth=1, leaf_model="linear", coef_budget=0.5).fit(x[:, None], y)
    leaves = reg.tree_.is_leaf
    assert np.all(np.abs(reg.tree_.leaf_coef[leaves, 0]) * 1.0 <= 0.5 * 5.0 + 1e-7)
    assert np.abs(y - reg.predict(x[:, None])).sum() > 0.1


@pytest.mark.parametrize(
    "params", [dict(), dict(alpha=0.05), dict(leaf_model="linear"), dict(leaf_model="linear", leaf_alpha=0.02)]
)
def test_objective_recomputed_from_tree_equals_solver(params):
    rng = np.random.default_rng(7)
    X = rng.uniform(0, 10, (12, 2))
    y = np.where(X[:, 0] > 5, X[:, 1], -X[:, 1]) + rng.normal(0, 0.3, 12)
    form = ORTFormulation.of(X, y, depth=2, **params)
    start = Tree.from_sklearn(DecisionTreeRegressor(max_depth=2).fit(X, y))
    result, tree = solve_formulation(form, start)
    assert result.has_solution
    expected = recomputed_objective(tree, X, y, "absolute", params.get("alpha", 0.0))
    if "leaf_alpha" in params:
        span_x, span_y = np.ptp(X, axis=0), np.ptp(y)
        expected += params["leaf_alpha"] * (np.abs(tree.leaf_coef[tree.is_leaf]) @ span_x).sum() / span_y
    assert result.objective == pytest.approx(expected, abs=1e-6)
    assert form.objective_of_tree(tree) == pytest.approx(expected, abs=1e-9)


# ---------------------------------------------------------------------- estimator conventions
def test_min_samples_leaf_and_sample_weight():
    X, y = random_set(3, n=12)
    reg = OptimalTreeRegressor(max_depth=2, min_samples_leaf=3).fit(X, y)
    assert np.bincount(reg.apply(X))[reg.tree_.is_leaf].min() >= 3
    # integer weights are duplicated rows
    w = np.random.default_rng(0).integers(1, 4, y.size)
    weighted = OptimalTreeRegressor(max_depth=1).fit(X, y, sample_weight=w)
    repeated = OptimalTreeRegressor(max_depth=1).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    assert weighted.result_.objective == pytest.approx(repeated.result_.objective, abs=1e-9)


def test_init_tree_and_attributes():
    pd = pytest.importorskip("pandas")
    X, y = random_set(5, n=12)
    frame = pd.DataFrame(X, columns=["u", "v"])
    shallow = OptimalTreeRegressor(max_depth=1).fit(frame, y)
    deep = OptimalTreeRegressor(max_depth=2, init=shallow, acceleration="none").fit(frame, y)  # the given start
    assert deep.result_.start_source == "previous-depth"
    assert deep.result_.objective <= shallow.result_.objective + 1e-9
    assert list(deep.feature_names_in_) == ["u", "v"] and deep.n_features_in_ == 2
    assert deep.init_tree_.task == "regression"
    assert deep.predict(frame).shape == (12,)
    assert deep.get_depth() <= 2 and deep.get_n_leaves() == deep.tree_.n_leaves


@pytest.mark.parametrize(
    "params, message",
    [
        (dict(loss="huber"), "loss"),
        (dict(leaf_model="tree"), "leaf_model"),
        (dict(coef_budget=0.0), "coef_budget"),
        (dict(formulation="oct"), "formulation"),
        (dict(init="greedy"), "init"),
    ],
)
def test_bad_parameters(params, message):
    X, y = random_set(0)
    with pytest.raises(ValueError, match=message):
        OptimalTreeRegressor(**params).fit(X, y)


def test_classification_init_and_bad_targets_are_refused():
    from sklearn.tree import DecisionTreeClassifier

    X, y = random_set(0)
    clf = DecisionTreeClassifier(max_depth=1).fit(X, y > 0)
    with pytest.raises(ValueError, match="regression tree"):
        OptimalTreeRegressor(init=clf).fit(X, y)
    with pytest.raises(ValueError, match="NaN|infinity"):
        OptimalTreeRegressor().fit(X, np.r_[y[:-1], np.nan])


@pytest.mark.parametrize(
    "params",
    [dict(), dict(min_samples_leaf=2), dict(leaf_model="linear"), dict(loss="squared", leaf_model="linear")],
)
def test_estimated_size_equals_built_size(params):
    X, y = random_set(11, n=12)
    X = np.column_stack([X, np.zeros(12), np.linspace(-1, 1, 12)])  # a constant and a centred feature
    form = ORTFormulation.of(X, y, depth=2, **params)
    spec = form.build()
    assert form.estimate_size() == (spec.n_rows, spec.n_cols, spec.nnz)


def test_user_constraints_reach_the_model():
    """Forbid feature 0 at the root through a Pyomo constraint: the root must split on feature 1."""
    x = np.linspace(0, 1, 16)
    X = np.column_stack([x, x[::-1] ** 2])
    y = np.where(x <= 0.5, 0.0, 1.0)

    def no_feature_0_at_root(m):
        from pyomo.environ import Constraint

        m.forbid = Constraint(expr=m.a[0, 0] == 0)

    free = OptimalTreeRegressor(max_depth=1).fit(X, y)
    tied = OptimalTreeRegressor(max_depth=1, constraints=no_feature_0_at_root).fit(X, y)
    assert tied.tree_.feature[0] == 1
    assert free.result_.objective <= tied.result_.objective + 1e-9


@pytest.mark.parametrize("params", [dict(), dict(alpha=0.1), dict(leaf_model="linear"), dict(loss="squared")])
def test_cart_start_vectors_satisfy_every_row_and_price_like_the_tree(params):
    from optitree.model import solution_violation

    for seed in range(5):
        X, y = random_set(200 + seed, n=12)
        form = ORTFormulation.of(X, y, depth=2, **params)
        spec = form.build()
        start, _ = form.prepare_start(Tree.from_sklearn(DecisionTreeRegressor(max_depth=2).fit(X, y)))
        x = form.start_vector(start)
        assert solution_violation(spec, x) is None, seed
        priced = spec.column_arrays()[0] @ x + spec.objective_offset
        exact = form.objective_of_tree(start)
        if params.get("loss") == "squared":
            # the tangents underestimate by at most 0.83 %, and by (5e-4 range(y))^2 per residual below 1e-3 range(y)
            floor = y.size * (5e-4 * np.ptp(y)) ** 2 / leaf_cost(y, "squared")
            assert exact * (1 - ((1.2 - 1) / (1.2 + 1)) ** 2) - floor <= priced <= exact + 1e-9
        else:
            assert priced == pytest.approx(exact, abs=1e-9)


@pytest.mark.parametrize("feature_scaling", ["minmax", "rank"])
def test_feature_scaling_keeps_the_brute_force_optimum(feature_scaling):
    """Depth-1 ORT (absolute loss) against enumerating every split with weighted-median leaves."""
    rng = np.random.RandomState(3)
    X = rng.rand(24, 2).round(2)
    y = np.sin(3 * X[:, 0]) + X[:, 1]

    def loss(t):
        return np.abs(t - np.median(t)).sum()

    best = loss(y)
    for j in range(2):
        for v in np.unique(X[:, j])[:-1]:
            left = X[:, j] <= v
            best = min(best, loss(y[left]) + loss(y[~left]))
    reg = OptimalTreeRegressor(max_depth=1, loss="absolute", feature_scaling=feature_scaling, acceleration="none",
                               time_limit=None).fit(X, y)
    assert reg.result_.proven_optimal
    assert reg.result_.normalized_objective == pytest.approx(best / loss(y), rel=1e-7)


def test_linear_leaves_refuse_coefficients_beyond_float64():
    """Found by the long property profile: features spanning 2e-300 under targets of 1e15
    decoded to infinite slopes and NaN predictions; now refused, naming the feature."""
    X = np.array([[0.0], [0.0], [1e-300], [2e-300]])
    y = np.array([0.0, 0.0, 1e15, 0.0])
    with pytest.raises(ValueError, match=r"features \[0\].*rescale"):
        OptimalTreeRegressor(max_depth=1, leaf_model="linear", time_limit=20).fit(X, y)
    reg = OptimalTreeRegressor(max_depth=1, leaf_model="linear", time_limit=20).fit(X * 1e300, y)
    assert np.isfinite(reg.predict(X * 1e300)).all()
    assert np.isfinite(OptimalTreeRegressor(max_depth=1, time_limit=20).fit(X, y).predict(X)).all()


# scikit-learn's estimator checks, as for the classifier (tests/optitree/test_classifier.py): node_limit=0
# keeps them fast and deterministic, the CART start carries the fit
@parametrize_with_checks([OptimalTreeRegressor(max_depth=2, node_limit=0, time_limit=30)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_user_rows_on_leaf_values_keep_the_models_values():
    # beta[0] >= beta[3] on increasing data binds; the least-squares means of the MIP's leaves
    # would break it, so the returned tree predicts the model's leaf values, which meet it
    pyo = pytest.importorskip("pyomo.environ")
    from optitree.formulations import to_heap

    rng = np.random.RandomState(0)
    X = rng.rand(16, 2)
    y = X[:, 0] * 3 + rng.randn(16) * 0.1

    def monotone(m):
        m.monotone = pyo.Constraint(expr=m.beta[0] >= m.beta[3])
        m.used = pyo.Constraint([0, 3], rule=lambda m, t: m.l[t] == 1)

    reg = OptimalTreeRegressor(max_depth=2, min_samples_leaf=3, time_limit=30, constraints=monotone).fit(X, y)
    assert "the returned tree violates the model" not in reg.result_.message
    heap = to_heap(reg.tree_, 2).value[:, 0]
    assert heap[0] >= heap[3] - 1e-9
    unconstrained = OptimalTreeRegressor(max_depth=2, min_samples_leaf=3).fit(X, y)
    sse = ((reg.predict(X) - y) ** 2).sum()
    assert sse >= ((unconstrained.predict(X) - y) ** 2).sum() - 1e-9


def test_start_gives_an_empty_heap_leaf_the_value_of_the_leaf_covering_it():
    from optitree.formulations import ORTFormulation

    X = np.linspace(0, 1, 12)[:, None]
    y = np.where(X[:, 0] <= 0.5, 1.0, 5.0)
    form = ORTFormulation.of(X, y, depth=2, loss="absolute")
    form.build()
    stump = OptimalTreeRegressor(max_depth=1).fit(X, y).tree_
    beta = form.start_vector(stump)[form.vars["beta"]]
    # two heap leaves below each of the stump's leaves, one of them empty: both take its value
    np.testing.assert_allclose(form.units.targets(np.array([1.0, 1.0, 5.0, 5.0])), beta)


def test_a_linear_leaf_start_keeps_its_leaf_models_and_its_objective():
    from optitree.formulations import ORTFormulation
    from optitree.model import solution_violation

    rng = np.random.RandomState(3)
    X = rng.rand(60, 2)
    y = np.where(X[:, 0] <= 0.5, 2 * X[:, 1], 3 - X[:, 1]) + 0.05 * rng.randn(60)
    stump = OptimalTreeRegressor(max_depth=1).fit(X, y).tree_
    d = stump.to_dict()
    d["leaf_coef"] = np.where(stump.is_leaf[:, None], [[0.0, 0.5]], 0.0)  # small: within coef_budget
    d["leaf_intercept"] = np.where(stump.is_leaf, stump.value[:, 0] - 0.25, 0.0)
    tree = type(stump).from_dict(d)
    form = ORTFormulation.of(X, y, depth=2, leaf_model="linear", loss="absolute")
    spec = form.build()
    prepared, _ = form.prepare_start(tree)
    np.testing.assert_allclose(prepared.predict(X), tree.predict(X))
    x0 = form.start_vector(prepared)
    assert solution_violation(spec, x0) is None
    cost, *_ = spec.column_arrays()
    assert cost @ x0 + spec.objective_offset == pytest.approx(form.objective_of_tree(prepared), rel=1e-9)


@pytest.mark.slow  # 10 s; tests/optitree/test_heuristics.py covers the heuristic's start in the default suite
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # a limit stops the fit on purpose
def test_linear_leaves_start_from_the_heuristic_and_beat_the_constant_optimum():
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    X, y = X[:200], y[:200]
    reg = OptimalTreeRegressor(max_depth=2, leaf_model="linear", min_samples_leaf=20, time_limit=10).fit(X, y)
    assert reg.result_.start_source == "heuristic"
    constant = OptimalTreeRegressor(max_depth=2, min_samples_leaf=20).fit(X, y)
    assert ((reg.predict(X) - y) ** 2).sum() < ((constant.predict(X) - y) ** 2).sum()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # a limit stops the fit on purpose
@pytest.mark.filterwarnings("ignore:OCT. features")
def test_linear_leaves_never_worse_than_their_start_nor_greedy_linear_cart_within_the_budget():
    rng = np.random.default_rng(2)
    X = rng.uniform(0, 1, (160, 3))
    y = np.where(X[:, 0] < 0.4, 3 * X[:, 1] - 2, -4 * X[:, 2] + 1) + 0.1 * rng.normal(size=160)
    from greedy import CARTRegressor

    greedy_tree = CARTRegressor(max_depth=2, min_samples_leaf=10, leaf_model="linear",
                                criterion="linear_squared_error").fit(X, y).tree_
    l1 = (np.abs(greedy_tree.leaf_coef[greedy_tree.is_leaf]) @ np.ptp(X, axis=0)).max() / np.ptp(y)
    reg = OptimalTreeRegressor(max_depth=2, leaf_model="linear", min_samples_leaf=10, coef_budget=1.01 * l1,
                               time_limit=5).fit(X, y)
    r = reg.result_
    assert r.objective <= r.start_objective + 1e-9
    sse = float(((reg.predict(X) - y) ** 2).sum())
    assert sse <= float(((greedy_tree.predict(X) - y) ** 2).sum()) * (1 + 1e-9)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # a limit stops the fit on purpose
def test_auto_coef_budget_holds_greedy_linear_leaves_on_a_sawtooth():
    # y = frac(4 x0): four leaves of slope 4 target ranges, twice the old fixed budget of 2
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (160, 2))
    y = np.mod(4 * X[:, 0], 1.0) + 0.02 * rng.normal(size=160)

    def sse(model):
        return float(((model.predict(X) - y) ** 2).sum())

    greedy_sse = min(sse(CARTRegressor(max_depth=2, min_samples_leaf=10, leaf_model="linear", criterion=c).fit(X, y))
                     for c in ("squared_error", "linear_squared_error"))
    fits = {b: OptimalTreeRegressor(max_depth=2, leaf_model="linear", min_samples_leaf=10, coef_budget=b,
                                    time_limit=3).fit(X, y) for b in ("auto", 2.0)}
    assert fits["auto"].coef_budget_ >= 3.5 and fits[2.0].coef_budget_ == 2.0
    assert sse(fits["auto"]) <= greedy_sse
    assert sse(fits["auto"]) < 0.5 * sse(fits[2.0])  # slopes of 4 are outside the budget of 2
