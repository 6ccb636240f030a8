"""The OCT and FlowOCT formulations: sizes, starts, decoding, objective units, emissions."""

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier

from greedy import Tree
from optitree.solvers import SolveOptions, solve_highs
from optitree.model import solution_violation
from optitree.formulations import FlowOCTFormulation, InfeasibleStartError, OCTFormulation, leaf_ancestors

FORMS = {"oct": OCTFormulation, "flow": FlowOCTFormulation}


def make_data(seed=0, n=40, f=3, k=3, ties=True):
    rng = np.random.RandomState(seed)
    X = rng.rand(n, f)
    if ties:
        X[:, 0] = np.round(X[:, 0] * 4)  # few distinct values
        X[: n // 4] = X[n // 4: n // 2]  # duplicate rows
    y = rng.randint(0, k, n)
    return X, y


def cart(X, y, depth, min_samples_leaf=1, sample_weight=None):
    est = DecisionTreeClassifier(max_depth=depth, min_samples_leaf=min_samples_leaf, random_state=0)
    return Tree.from_sklearn(est.fit(X, y, sample_weight=sample_weight))


def errors(tree, X, y, w=None):
    w = np.ones(len(y)) if w is None else w
    return float(w[tree.predict(X).argmax(1) != y].sum())


def test_leaf_ancestors_by_hand():
    anc, left = leaf_ancestors(2)  # leaves 4..7
    np.testing.assert_array_equal(anc, [[2, 1], [2, 1], [3, 1], [3, 1]])
    np.testing.assert_array_equal(left, [[True, True], [False, True], [True, False], [False, False]])


CASES = [
    dict(),
    dict(min_samples_leaf=3),
    dict(alpha=0.05),
    dict(sample_weight="random"),
    dict(merge_duplicates=False),
]


@pytest.mark.parametrize("name", ["oct", "flow"])
@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_size_estimate_start_and_objective(name, depth, case):
    """estimate_size is exact; a CART start is a feasible solution whose model objective
    equals the numpy objective; decoding it gives back the start's partition."""
    X, y = make_data(seed=case)
    kw = dict(CASES[case])
    w = np.random.RandomState(1).rand(len(y)) * 2 if kw.pop("sample_weight", None) else None
    form = FORMS[name].of(X, y, depth=depth, sample_weight=w, **kw)
    est = form.estimate_size()
    spec = form.build()
    assert est == (spec.n_rows, spec.n_cols, spec.nnz)
    start, _ = form.prepare_start(cart(X, y, depth, form.min_samples_leaf, w))
    x0 = form.start_vector(start)
    assert solution_violation(spec, x0) is None
    cost = spec.column_arrays()[0]
    model_objective = cost @ x0 + spec.objective_offset
    # numpy truth: weighted errors / majority baseline error + alpha * splits
    wt = np.ones(len(y)) if w is None else w
    baseline = wt.sum() - np.bincount(y, weights=wt).max()
    truth = errors(start, X, y, wt) / baseline + form.alpha * start.n_splits
    assert model_objective == pytest.approx(truth, rel=1e-9, abs=1e-12)
    assert form.objective_of_tree(start) == pytest.approx(truth, rel=1e-9, abs=1e-12)
    decoded = form.decode(spec, x0)
    np.testing.assert_array_equal(decoded.apply(X), start.apply(X))
    assert form.objective_of_tree(decoded) == pytest.approx(truth, rel=1e-9, abs=1e-12)


def test_oct_per_feature_epsilon_and_big_m():
    X = np.array([[0.0, 0.0], [1.0, 10.0], [3.0, 10.5], [4.0, 20.0]])
    y = np.array([0, 1, 0, 1])
    form = OCTFormulation.of(X, y, depth=1)
    np.testing.assert_allclose(form.epsilon, [0.25, 0.5 / 20])
    np.testing.assert_allclose(form.X_scaled[:, 1], [0, 0.5, 0.525, 1])
    # M^L_i = max_j (x_ij + eps_j), M^R_i = 1 - min_j x_ij
    np.testing.assert_allclose(form._m_left, [0.25, 0.525, 1.0, 1.25])
    np.testing.assert_allclose(form._m_right, [1.0, 0.75, 0.475, 0.0])


def test_oct_constant_feature_cannot_split_and_rank_scaling():
    rng = np.random.RandomState(0)
    X = np.column_stack([rng.rand(30), np.full(30, 7.0), rng.rand(30)])
    X[1, 2] = X[0, 2] + 1e-8  # a near-tie: min-max gap below the solver's tolerance
    y = (X[:, 0] > 0.5).astype(int)
    with pytest.warns(UserWarning, match="feature_scaling='rank'"):
        OCTFormulation.of(X, y, depth=1)
    form = OCTFormulation.of(X, y, depth=1, feature_scaling="rank")
    np.testing.assert_array_equal(form.usable, [True, False, True])
    np.testing.assert_allclose(form.epsilon[[0, 2]], 1 / 29)
    spec = form.build()
    assert spec.var_blocks["a"].ub.reshape(1, 3)[0, 1] == 0
    res, x = solve_highs(spec.to_highs(), SolveOptions(time_limit=30))
    tree = form.decode(spec, x)
    assert res.proven_optimal and errors(tree, X, y) == 0
    assert res.objective == pytest.approx(form.objective_of_tree(tree), abs=1e-9)


def test_flow_thresholds_all_midpoints_and_quantiles():
    X = np.array([[1.0, 5.0], [2.0, 5.0], [2.0, 5.0], [4.0, 5.0], [8.0, 5.0]])
    y = np.array([0, 1, 0, 1, 0])
    form = FlowOCTFormulation.of(X, y, depth=1)
    np.testing.assert_array_equal(form.threshold_feature, [0, 0, 0])
    np.testing.assert_allclose(form.threshold_value, [1.5, 3.0, 6.0])
    assert form.exact_thresholds
    rng = np.random.RandomState(0)
    X = rng.rand(200, 2)
    form = FlowOCTFormulation.of(X, (X[:, 0] > 0.3).astype(int), depth=1, max_thresholds=5)
    assert not form.exact_thresholds
    assert np.bincount(form.threshold_feature).max() <= 5
    q = np.sort(form.threshold_value[form.threshold_feature == 0])
    np.testing.assert_allclose(q, np.quantile(X[:, 0], np.arange(1, 6) / 6), atol=0.05)


def test_flow_start_outside_quantile_thresholds_is_moved_and_noted():
    rng = np.random.RandomState(0)
    X = rng.rand(100, 1)
    y = (X[:, 0] > 0.37).astype(int)
    form = FlowOCTFormulation.of(X, y, depth=1, max_thresholds=3)
    form.build()
    tree, note = form.prepare_start(cart(X, y, 1))
    assert "start changed" in note
    assert tree.threshold[0] != pytest.approx(cart(X, y, 1).threshold[0])
    x0 = form.start_vector(tree)
    assert solution_violation(form.spec, x0) is None
    # all midpoints: the same partition is always available, nothing moves
    form = FlowOCTFormulation.of(X, y, depth=1)
    form.build()
    tree, note = form.prepare_start(cart(X, y, 1))
    assert note == ""
    np.testing.assert_array_equal(tree.apply(X), cart(X, y, 1).apply(X))


def test_start_below_min_samples_leaf_is_refused():
    X, y = make_data(seed=3, ties=False)
    form = OCTFormulation.of(X, y, depth=2, min_samples_leaf=8)
    form.build()
    tree, _ = form.prepare_start(cart(X, y, 2))  # unconstrained CART has small leaves
    with pytest.raises(InfeasibleStartError, match="min_samples_leaf=8"):
        form.start_vector(tree)


def test_canonical_tree_removes_empty_splits_and_recentres_thresholds():
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    y = np.array([0, 0, 1, 1])
    # root x <= 1.9 (recentred to 1.5); left child x <= 10 sends everything left: removed
    tree = Tree([1, 3, -1, -1, -1], [2, 4, -1, -1, -1], [0, 0, -2, -2, -2], [1.9, 10, np.nan, np.nan, np.nan],
                np.zeros((5, 2)), n_features=1)
    form = OCTFormulation.of(X, y, depth=2)
    canon, removed = form.canonical_tree(tree)
    assert removed == 1 and canon.node_count == 3
    assert canon.threshold[0] == 1.5
    np.testing.assert_array_equal(canon.value[1:], [[2, 0], [0, 2]])


def test_pruning_for_alpha_by_hand():
    # a split fixing 1 of 10 baseline errors is worth 0.1: kept for alpha 0.05, pruned for 0.2
    X = np.arange(20.0)[:, None]
    y = np.r_[np.zeros(10, int), np.ones(10, int)]
    y[[0, 19]] = [1, 0]
    base = Tree([1, -1, -1], [2, -1, -1], [0, -2, -2], [0.5, np.nan, np.nan], np.zeros((3, 2)), n_features=1)
    for alpha, splits in [(0.05, 1), (0.2, 0)]:
        form = OCTFormulation.of(X, y, depth=1, alpha=alpha)
        tree, _ = form.prepare_start(base)
        assert tree.n_splits == splits


@pytest.mark.parametrize("name", ["oct", "flow"])
def test_merging_duplicates_is_exact(name):
    X, y = make_data(seed=5, n=16, f=2, k=2)
    objs = []
    for merge in (True, False):
        form = FORMS[name].of(X, y, depth=2, merge_duplicates=merge)
        spec = form.build()
        res, x = solve_highs(spec.to_highs(), SolveOptions(time_limit=60))
        assert res.proven_optimal
        objs.append(form.objective_of_tree(form.decode(spec, x)))
        assert objs[-1] == pytest.approx(res.objective, abs=1e-7)
    assert FORMS[name].of(X, y, depth=2).n_samples < len(y)
    assert objs[0] == pytest.approx(objs[1], abs=1e-9)


@pytest.mark.parametrize("name", ["oct", "flow"])
def test_highs_and_pyomo_emissions_agree(name):
    pytest.importorskip("pyomo")
    from pyomo.core.expr.visitor import identify_variables
    from pyomo.environ import Constraint, Var

    X, y = make_data(seed=2, n=12, f=2, k=2)
    form = FORMS[name].of(X, y, depth=2, min_samples_leaf=2)
    spec = form.build()
    h = spec.to_highs()
    m = spec.to_pyomo()
    n_vars = sum(1 for _ in m.component_data_objects(Var))
    cons = list(m.component_data_objects(Constraint, active=True))
    nnz = sum(len(list(identify_variables(c.body, include_fixed=True))) for c in cons)
    assert (h.getNumCol(), h.getNumRow(), h.getNumNz()) == (n_vars, len(cons), nnz) == (
        spec.n_cols, spec.n_rows, spec.nnz)


@pytest.mark.parametrize("name", ["oct", "flow"])
def test_bad_arguments(name):
    X, y = make_data()
    with pytest.raises(ValueError, match="depth"):
        FORMS[name].of(X, y, depth=0)
    with pytest.raises(ValueError, match="NaN or infinite"):
        FORMS[name].of(np.where(X > 0.9, np.nan, X), y, depth=1)
    with pytest.raises(ValueError, match="min_samples_leaf"):
        FORMS[name].of(X, y, depth=1, min_samples_leaf=0)
    with pytest.raises(ValueError, match="sample_weight"):
        FORMS[name].of(X, y, depth=1, sample_weight=-np.ones(len(y)))
    form = FORMS[name].of(X, y, depth=1)
    with pytest.raises(RuntimeError, match="build"):
        form.start_vector(cart(X, y, 1))
