"""The exact engine inside the MIP pipeline (optitree.pipeline) against independent brute force.

Every "proven" answer of the accelerated classifier — certified by the engine, by the root
bounds, or by the MIP with bound rows and screening — must equal the brute-force optimum,
with and without user constraints; every reported bound must stay at or below it.
"""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

pyo = pytest.importorskip("pyomo.environ")

from greedy import CARTClassifier  # noqa: E402
from optitree import OptimalTreeClassifier  # noqa: E402
from optitree.pipeline import STAGES, parse_acceleration  # noqa: E402
from optitree.formulations import FlowOCTFormulation  # noqa: E402
from support.bruteforce import brute_force_errors, random_dataset  # noqa: E402


def baseline(y):
    return len(y) - np.bincount(y).max()


def forbid_feature_0(X, y, depth):
    """Pyomo constraint: no FlowOCT split on feature 0 anywhere (the engine cannot see it)."""
    columns = np.flatnonzero(FlowOCTFormulation.of(X, y, depth=depth).threshold_feature == 0)
    n_branch = 2**depth - 1

    def constraint(m):
        m.no_feature_0 = pyo.Constraint(expr=sum(m.b[n, int(f)] for n in range(n_branch) for f in columns) == 0)

    return constraint


def errors(clf, X, y):
    return int((clf.predict(X) != y).sum())


@pytest.mark.parametrize("acceleration", ["all", "start+rows", "start+screening", "rows+screening"])
@pytest.mark.parametrize("depth", [1, 2])
def test_constrained_optimum_equals_brute_force(depth, acceleration):
    """Rows and screening come from unconstrained bounds: they must never cut off the constrained optimum."""
    proven = 0
    for seed in range(12):
        X, y = random_dataset(seed, max_samples=10)
        if np.unique(X[:, 1:], axis=0).shape[0] < 2 and depth == 1:
            continue
        clf = OptimalTreeClassifier(max_depth=depth, time_limit=None, acceleration=acceleration,
                                    constraints=forbid_feature_0(X, y, depth)).fit(X, y)
        expected = brute_force_errors(X[:, 1:], y, depth)
        assert 0 not in clf.tree_.feature[~clf.tree_.is_leaf]
        assert errors(clf, X, y) >= expected
        assert clf.result_.normalized_bound * baseline(y) <= expected + 1e-6, seed
        if clf.result_.proven_optimal:
            proven += 1
            assert errors(clf, X, y) == expected, seed
    assert proven >= 10


def forbid_feature_0_oct(m):
    """Pyomo constraint: no OCT split on feature 0 (``a[n, 0] = 0`` at every branch node)."""
    m.no_feature_0 = pyo.Constraint(expr=sum(m.a[n, 0] for n in range(3)) == 0)


@pytest.mark.parametrize("acceleration", ["all", "start+rows", "rows+screening"])
def test_oct_root_bound_row_keeps_the_constrained_optimum(acceleration):
    """OCT's root row (one column per feature, bounded over its thresholds and the split that
    sends every row one way) and its screening, from unconstrained bounds, under a user row."""
    proven = 0
    for seed in range(12):
        X, y = random_dataset(seed, max_samples=10)
        clf = OptimalTreeClassifier(max_depth=2, formulation="oct", time_limit=None, acceleration=acceleration,
                                    constraints=forbid_feature_0_oct).fit(X, y)
        expected = brute_force_errors(X[:, 1:], y, 2)
        assert clf.result_.acceleration["bounds"]["candidates"] == X.shape[1]
        assert 0 not in clf.tree_.feature[~clf.tree_.is_leaf]
        assert clf.result_.normalized_bound * baseline(y) <= expected + 1e-6, seed
        assert errors(clf, X, y) >= expected
        if clf.result_.proven_optimal:
            proven += 1
            assert errors(clf, X, y) == expected, seed
    assert proven >= 10


@pytest.mark.parametrize("min_leaf", [1, 3])
@pytest.mark.parametrize("formulation", ["flow", "oct"])
def test_root_bound_row_never_cuts_off_a_tree(formulation, min_leaf):
    """Every random depth-2 tree encodable in the model (random features, thresholds and
    shapes, leaves of at least ``min_leaf`` rows) still satisfies the model once the root row
    is added, screening off. With a minimum leaf size, OCT's root that sends every row to one
    stump can cost less than any split on its feature the engine lists: the per-feature bound
    must include it."""
    from greedy import Tree

    from optitree.pipeline import ExactStage
    from optitree.pipeline._root_bounds import candidate_bounds, root_bound_row
    from optitree.model import solution_violation
    from optitree.exact import prepare
    from optitree.formulations import FORMULATIONS

    rng = np.random.RandomState(0)
    checked = 0
    for seed in range(8):
        X, y = random_dataset(seed, max_samples=10)
        form = FORMULATIONS[formulation].of(X, y, depth=2, min_samples_leaf=min_leaf)
        spec = form.build()
        data = prepare(form.problem, report="problem")
        stage = ExactStage(frozenset({"rows"}))
        bounds = stage.root_bounds(data, form.problem, cutoff=None, time_limit=None)
        trivial = stage.trivial_split_bound(data, form.problem, bounds, time_limit=None)
        root_bound_row(form, spec, bounds, candidate_bounds(form, bounds, trivial), screening=False)
        for _ in range(30 if min_leaf == 1 else 150):
            feature = rng.randint(X.shape[1], size=3)
            threshold = np.array([rng.choice(np.unique(X[:, f])) + 0.25 for f in feature])
            # a stump, a split left child, both children split, or (OCT) a root sending every row
            # right to a stump: a solution of OCT's model that canonical trees never show
            shape = rng.randint(3 if formulation == "flow" else 4)
            values = np.unique(X[:, feature[1]])
            if shape == 3 and values.size > 1:
                inside = (values[0] + values[1]) / 2  # separates rows: OCT's scaled threshold lies in (0, 1]
                d = dict(children_left=[1, -1, 3, -1, -1], children_right=[2, -1, 4, -1, -1],
                         feature=[feature[0], -2, feature[1], -2, -2],
                         threshold=[X[:, feature[0]].min() - 1.0, np.nan, inside, np.nan, np.nan])
            elif shape in (0, 3):
                d = dict(children_left=[1, -1, -1], children_right=[2, -1, -1], feature=[feature[0], -2, -2],
                         threshold=[threshold[0], np.nan, np.nan])
            elif shape == 1:
                d = dict(children_left=[1, 2, -1, -1, -1], children_right=[4, 3, -1, -1, -1],
                         feature=[feature[0], feature[1], -2, -2, -2],
                         threshold=[threshold[0], threshold[1], np.nan, np.nan, np.nan])
            else:
                d = dict(children_left=[1, 2, -1, -1, 5, -1, -1], children_right=[4, 3, -1, -1, 6, -1, -1],
                         feature=[feature[0], feature[1], -2, -2, feature[2], -2, -2],
                         threshold=[threshold[0], threshold[1], np.nan, np.nan, threshold[2], np.nan, np.nan])
            n_nodes = len(d["feature"])
            tree = Tree(**d, value=np.zeros((n_nodes, int(y.max()) + 1)), n_features=X.shape[1]).fill_statistics(
                X, y, None, n_classes=int(y.max()) + 1)
            if np.bincount(tree.apply(X), minlength=tree.node_count)[tree.is_leaf].clip(1).min() < min_leaf:
                continue  # not a solution of the model (an empty leaf is one that no row reaches)
            trivial_root = len(d["feature"]) == 5 and d["children_left"][1] == -1
            x0 = form._start_columns(tree) if trivial_root else form.start_vector(form.prepare_start(tree, prune=False)[0])
            assert solution_violation(spec, x0) is None, (seed, d)
            checked += 1
    assert checked >= (240 if min_leaf == 1 else 40)


def test_oct_root_row_counts_the_split_that_sends_every_row_one_way():
    """y = [x1 > 0.5] and every value of x0 holds both classes: with a split penalty and leaves of
    at least 3 rows, any split on x0 that the engine lists needs three splits for no error, but
    OCT can split the root on x0 sending every row right, to a stump on x1: two splits. That
    solution must satisfy the root row (x0's bound includes it)."""
    from greedy import Tree

    from optitree.pipeline import ExactStage
    from optitree.pipeline._root_bounds import candidate_bounds, root_bound_row
    from optitree.model import solution_violation
    from optitree.exact import prepare
    from optitree.formulations import FORMULATIONS

    x0 = np.repeat(np.arange(10.0), 2)
    x1 = np.tile([0.2, 0.8], 10) + np.arange(20) * 1e-3
    X, y = np.c_[x0, x1], (np.tile([0.2, 0.8], 10) > 0.5).astype(int)
    form = FORMULATIONS["oct"].of(X, y, depth=2, alpha=0.01, min_samples_leaf=3)
    spec = form.build()
    data = prepare(form.problem, report="problem")
    stage = ExactStage(frozenset({"rows"}))
    bounds = stage.root_bounds(data, form.problem, cutoff=None, time_limit=None)
    trivial = stage.trivial_split_bound(data, form.problem, bounds, time_limit=None)
    lower = candidate_bounds(form, bounds, trivial)[0]
    assert lower[0] == pytest.approx(trivial) and lower[0] < candidate_bounds(form, bounds)[0][0]
    root_bound_row(form, spec, bounds, candidate_bounds(form, bounds, trivial), screening=False)
    tree = Tree(children_left=[1, -1, 3, -1, -1], children_right=[2, -1, 4, -1, -1], feature=[0, -2, 1, -2, -2],
                threshold=[-1.0, np.nan, 0.5, np.nan, np.nan], value=np.zeros((5, 2)), n_features=2)
    x = form._start_columns(tree.fill_statistics(X, y, None, n_classes=2))
    assert solution_violation(spec, x) is None
    # the same row with x0 bounded by its listed thresholds alone would cut this solution off
    form.build()
    root_bound_row(form, form.spec, bounds, candidate_bounds(form, bounds), screening=False)
    assert "root_bound" in solution_violation(form.spec, x)


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_default_pipeline_equals_brute_force(depth):
    for seed in range(20 if depth < 3 else 8):
        X, y = random_dataset(seed, max_samples=10)
        clf = OptimalTreeClassifier(max_depth=depth, time_limit=None).fit(X, y)
        assert clf.result_.proven_optimal and clf.result_.status == "optimal"
        if depth < 3:
            assert errors(clf, X, y) == brute_force_errors(X, y, depth), seed
        assert clf.result_.normalized_objective == pytest.approx(errors(clf, X, y) / baseline(y))
        assert clf.result_.acceleration["certificate"] == "engine"


def test_dp_solver_equals_brute_force_and_refuses_what_it_cannot_do():
    for seed in range(20):
        X, y = random_dataset(seed, max_samples=10)
        clf = OptimalTreeClassifier(max_depth=2, solver="dp").fit(X, y)
        assert clf.result_.proven_optimal and clf.result_.solver == "exact"
        assert errors(clf, X, y) == brute_force_errors(X, y, 2)
    with pytest.raises(ValueError, match="constraints"):
        OptimalTreeClassifier(solver="dp", constraints=forbid_feature_0(X, y, 2)).fit(X, y)
    with pytest.raises(ValueError, match="axis-aligned"):
        OptimalTreeClassifier(solver="dp", formulation="oct-h").fit(X, y)


def test_bound_stays_below_optimum_when_the_mip_stops_early():
    """node_limit=0 without the proof stage: the bound reported is the engine's, never above the optimum."""
    fitted = 0
    for seed in range(10):
        X, y = random_dataset(seed, max_samples=12)
        constraint = forbid_feature_0(X, y, 2)
        clf = OptimalTreeClassifier(max_depth=2, node_limit=0, time_limit=None, acceleration="start+rows",
                                    constraints=constraint)
        try:
            clf.fit(X, y)
        except RuntimeError as exc:  # no feasible start and no node to find one
            assert "returned no tree" in str(exc)
            continue
        fitted += 1
        expected = brute_force_errors(X[:, 1:], y, 2)
        assert clf.result_.normalized_bound * baseline(y) <= expected + 1e-6
        assert errors(clf, X, y) >= expected
    assert fitted >= 3


def test_never_worse_than_cart_on_training_data():
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    cart = CARTClassifier(max_depth=3, random_state=0).fit(X, y)
    for kwargs in ({"max_thresholds": 16, "time_limit": 5}, {"formulation": "oct", "time_limit": 5}):
        clf = OptimalTreeClassifier(max_depth=3, **kwargs).fit(X, y)
        assert clf.score(X, y) >= cart.score(X, y)


def test_acceleration_parameter():
    assert parse_acceleration("all") == set(STAGES)
    assert parse_acceleration("none") == set()
    assert parse_acceleration("start+rows") == {"start", "rows"}
    X, y = random_dataset(0)
    with pytest.raises(ValueError, match="acceleration"):
        OptimalTreeClassifier(acceleration="fast").fit(X, y)
    clf = OptimalTreeClassifier(max_depth=2, acceleration="none", time_limit=None).fit(X, y)
    assert clf.result_.acceleration is None and clf.result_.solver == "highs"


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # a limit stops the fit on purpose
def test_deeper_never_trains_worse_than_shallower_from_its_optimum():
    """init=<depth-2 optimum> at depth 3 (issue 12: monks1 once ended below the depth-2 tree)."""
    from optitree import datasets

    X, y, _ = datasets.load("monks1")
    shallow = OptimalTreeClassifier(max_depth=2, time_limit=30).fit(X, y)
    for acceleration in ("all", "none"):
        deep = OptimalTreeClassifier(max_depth=3, init=shallow, time_limit=3, acceleration=acceleration).fit(X, y)
        assert deep.score(X, y) >= shallow.score(X, y)


@pytest.mark.parametrize("kwargs", [{}, {"acceleration": "none"}, {"solver": "dp"}, {"formulation": "oct"},
                                    {"acceleration": "start+rows+screening"}])
def test_allowed_features_equal_brute_force_without_the_feature(kwargs):
    """The engine honours allowed_features, so its proofs and bounds hold under it; the MIP enforces it."""
    for seed in range(8):
        X, y = random_dataset(seed, max_samples=10)
        allowed = np.ones(X.shape[1], bool)
        allowed[0] = False
        clf = OptimalTreeClassifier(max_depth=2, time_limit=None, allowed_features=allowed, **kwargs).fit(X, y)
        assert 0 not in clf.tree_.feature[~clf.tree_.is_leaf]
        assert clf.result_.proven_optimal
        assert errors(clf, X, y) == brute_force_errors(X[:, 1:], y, 2), (seed, kwargs)


def test_allowed_features_per_level_and_bad_masks():
    X, y = random_dataset(3, max_samples=10)
    per_level = np.array([[True, False, False], [False, True, True]])[:, : X.shape[1]]
    clf = OptimalTreeClassifier(max_depth=2, time_limit=None, allowed_features=per_level).fit(X, y)
    tree = clf.tree_
    if not tree.is_leaf[0]:
        assert tree.feature[0] == 0
        children = [c for c in (tree.children_left[0], tree.children_right[0]) if not tree.is_leaf[c]]
        assert all(tree.feature[c] != 0 for c in children)
    with pytest.raises(ValueError, match="allowed_features"):
        OptimalTreeClassifier(allowed_features=np.ones(7, bool)).fit(X, y)
    with pytest.raises(ValueError, match="allowed_features"):
        OptimalTreeClassifier(formulation="oct-h", allowed_features=np.ones(X.shape[1], bool)).fit(X, y)


def test_refusals_name_the_parameter():
    """Issue 14: an absurd depth and predict before fit are refused with sklearn's errors."""
    from sklearn.exceptions import NotFittedError

    from optitree import OptimalTreeRegressor

    X, y = random_dataset(1)
    for kwargs in ({"formulation": "oct", "acceleration": "none"}, {}, {"solver": "dp"}):
        with pytest.raises(ValueError, match="max_depth"):
            OptimalTreeClassifier(max_depth=62, **kwargs).fit(X, y)
    with pytest.raises(NotFittedError):
        OptimalTreeRegressor().predict(X)
    with pytest.raises(NotFittedError):
        OptimalTreeClassifier().predict(X)


@pytest.mark.parametrize("acceleration", ["none", "all"])
def test_flow_on_all_constant_columns_fits_a_leaf(acceleration):
    X, y = np.ones((10, 3)), np.r_[np.zeros(5), np.ones(5)]
    clf = OptimalTreeClassifier(formulation="flow", acceleration=acceleration, time_limit=None).fit(X, y)
    assert clf.tree_.node_count == 1 and clf.result_.proven_optimal


def test_sklearn_tree_attributes_on_the_optimal_classifier():
    """Issue 12 item 9: feature_importances_, n_classes_, predict_log_proba as on scikit-learn's trees."""
    from sklearn.datasets import load_iris
    from sklearn.tree import DecisionTreeClassifier

    X, y = load_iris(return_X_y=True)
    clf = OptimalTreeClassifier(max_depth=1).fit(X, y)
    stump = DecisionTreeClassifier(max_depth=1, random_state=0).fit(X, y)
    assert clf.n_classes_ == 3
    used = clf.tree_.feature[0]
    expected = np.zeros(4)
    expected[used] = 1.0
    assert clf.feature_importances_ == pytest.approx(expected)
    if used == stump.tree_.feature[0]:
        assert clf.feature_importances_ == pytest.approx(stump.feature_importances_)
    with np.errstate(divide="ignore"):
        assert np.array_equal(clf.predict_log_proba(X), np.log(clf.predict_proba(X)))


def test_engine_stopped_by_the_clock_returns_its_best_or_the_start_without_a_mip():
    """No user constraints and the engine out of time: no MIP is built (it would overrun time_limit);
    the tree is the better of the engine's incumbent and CART, and nothing claims optimality."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    cart = CARTClassifier(max_depth=3, random_state=0).fit(X, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = OptimalTreeClassifier(max_depth=3, time_limit=0.2).fit(X, y)
    r = clf.result_
    stopped = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    if r.proven_optimal:  # a very fast machine: then it is the certified optimum
        assert errors(clf, X, y) == 9 and not stopped
    else:
        assert r.status == "time_limit" and r.solver == "exact" and r.n_rows == 0
        assert len(stopped) == 1 and "status 'time_limit'" in str(stopped[0].message)
        assert r.bound <= r.objective
    assert clf.score(X, y) >= cart.score(X, y)
