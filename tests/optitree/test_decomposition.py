"""Root-split decomposition (optitree.pipeline._decomposition) under constraints the exact engine cannot see.

Against an independent brute force over every depth-2 FlowOCT tree (each node a prediction or
a split on any modelled threshold, each prediction any class) on tiny random sets, with a
per-class quota on the predicting nodes or at most k distinct split features written in
Pyomo: a proven answer equals the constrained optimum and no bound, in the result or its
trace, ever exceeds it.
"""

import itertools
import warnings

import numpy as np
import pytest

pyo = pytest.importorskip("pyomo.environ")

from optitree import OptimalTreeClassifier  # noqa: E402
from optitree.pipeline._certificate import CertificateWarning  # noqa: E402
from optitree.pipeline._decomposition import decompose, infeasible_fixings  # noqa: E402
from optitree.model import ModelSpec  # noqa: E402
from optitree.solvers import SolveOptions  # noqa: E402
from support.bruteforce import random_dataset  # noqa: E402

from benchmarks.certified import max_features  # noqa: E402


def brute_force(X, y, *, quota=None, k_features=None, empty_leaves=True):
    """Fewest errors of a depth-<=2 tree as FlowOCT models it, under the constraints (inf if none fits).

    ``quota = (lo, hi)``: every class predicted by lo..hi nodes; ``k_features``: at most that
    many distinct split features; ``empty_leaves=False``: no split leaves a side without
    samples (OCT's leaves predict only when used). Per root split, each side keeps the least
    errors for every (class usage, features used) it can reach; the sides are then combined.
    """
    n_classes = int(y.max()) + 1
    splits = [(j, t) for j in range(X.shape[1])
              for t in (lambda v: (v[:-1] + v[1:]) / 2)(np.unique(X[:, j]))]

    def labelled(groups):  # (errors, class usage) of every labelling of the predicting nodes
        for labels in itertools.product(range(n_classes), repeat=len(groups)):
            errors = sum(len(g) - int(np.sum(y[g] == c)) for g, c in zip(groups, labels))
            yield errors, tuple(np.bincount(labels, minlength=n_classes))

    def key(usage, feats):
        return (usage if quota else None, feats if k_features is not None else None)

    def side(idx):
        best = {}
        options = [(frozenset(), [idx])] + [
            (frozenset([j]), [idx[X[idx, j] <= t], idx[X[idx, j] > t]]) for j, t in splits]
        for feats, groups in options:
            if not empty_leaves and min(map(len, groups)) == 0:
                continue
            for errors, usage in labelled(groups):
                kk = key(usage, feats)
                best[kk] = min(best.get(kk, np.inf), errors)
        return best

    def feasible(usage, feats):
        if quota and any(not quota[0] <= u <= quota[1] for u in usage):
            return False
        return k_features is None or len(feats) <= k_features

    everyone = np.arange(len(y))
    best = min((e for e, u in labelled([everyone]) if feasible(u, frozenset())), default=np.inf)
    for j, t in splits:
        left, right = side(everyone[X[:, j] <= t]), side(everyone[X[:, j] > t])
        for (ul, fl), el in left.items():
            for (ur, fr), er in right.items():
                usage = None if quota is None else tuple(a + b for a, b in zip(ul, ur))
                feats = None if k_features is None else fl | fr | {j}
                if feasible(usage, feats):
                    best = min(best, el + er)
    return best


def class_quota(y, lo, hi, depth=2, formulation="flow"):
    """Every class predicted by lo..hi nodes: FlowOCT's labels ``w`` (every node) or OCT's ``c`` (leaves)."""
    n_classes = int(y.max()) + 1
    name, n_nodes = ("w", 2 ** (depth + 1) - 1) if formulation == "flow" else ("c", 2**depth)

    def constraint(m):
        label = getattr(m, name)
        m.quota = pyo.Constraint(range(n_classes), rule=lambda m, k: (lo, sum(label[n, k] for n in range(n_nodes)), hi))

    return constraint


def leaf_usage(clf, n_classes):
    """How many leaves of the fitted tree predict each class (the most probable one)."""
    tree = clf.tree_
    return np.bincount(tree.node_proba[tree.is_leaf].argmax(axis=1), minlength=n_classes)


def errors(clf, X, y):
    return int((clf.predict(X) != y).sum())


def quota_instances(n_seeds=10):
    """Tiny sets where some depth-2 tree gives every class exactly one predicting node: (X, y, its least errors)."""
    for seed in range(n_seeds):
        X, y = random_dataset(seed, max_samples=9)
        expected = brute_force(X, y, quota=(1, 1))
        if np.isfinite(expected):
            yield X, y, expected


def check_fit(X, y, constraint, expected, acceleration, alpha=0.0):
    """``alpha`` below a third of one error's weight: the optimum still has the fewest errors."""
    clf = OptimalTreeClassifier(max_depth=2, time_limit=None, constraints=constraint, alpha=alpha,
                                acceleration=acceleration).fit(X, y)
    r = clf.result_
    baseline = len(y) - np.bincount(y).max()
    assert r.normalized_bound * baseline <= expected + 3 * alpha * baseline + 1e-6
    assert all(p["bound"] is None or p["bound"] <= expected + 3 * alpha * baseline + 1e-6  # errors
               for p in r.trace)
    assert errors(clf, X, y) >= expected
    if r.proven_optimal:
        assert errors(clf, X, y) == expected
    return clf


@pytest.mark.parametrize("acceleration, alpha", [("all", 0.0), ("all", 0.01), ("decompose", 0.0),
                                                 ("start+decompose", 0.0), ("start+rows+screening+decompose", 0.0)])
def test_class_quota_equals_brute_force(acceleration, alpha):
    proven = decomposed = 0
    for X, y, expected in quota_instances():  # every class exactly one predicting node: usually binding
        r = check_fit(X, y, class_quota(y, 1, 1), expected, acceleration, alpha).result_
        proven += r.proven_optimal
        decomposed += r.acceleration["decomposition"] is not None
    assert proven >= (8 if alpha == 0 else 6) and decomposed >= 5


@pytest.mark.parametrize("acceleration", ["none", "all"])
@pytest.mark.parametrize("alpha", [0.0, 0.01])
def test_the_returned_tree_meets_the_class_quota(acceleration, alpha):
    """FlowOCT may meet the quota with labels its leaves' majorities do not have, or with a leaf no
    training sample reaches: the returned tree keeps both, meets the quota and is the optimum."""
    proven = 0
    for X, y, expected in quota_instances():
        clf = check_fit(X, y, class_quota(y, 1, 1), expected, acceleration, alpha)
        n_classes = int(y.max()) + 1
        np.testing.assert_array_equal(leaf_usage(clf, n_classes), np.ones(n_classes))
        proven += clf.result_.proven_optimal
    assert proven >= 9


def test_a_start_that_breaks_the_quota_is_repaired_within_its_splits():
    """repair_start: the result is a solution of the model, uses a subset of the start's splits and
    costs at least the constrained optimum; the fit starts from it."""
    from greedy import CARTClassifier
    from optitree.model import solution_violation
    from optitree.pipeline._start import repair_start
    from optitree.formulations import FlowOCTFormulation
    from optitree.model._user_constraints import apply_user_constraints

    repaired_fits = 0
    for X, y, expected in quota_instances():
        form = FlowOCTFormulation.of(X, y, depth=2)
        spec = form.build()
        apply_user_constraints(spec, class_quota(y, 1, 1))
        cart = CARTClassifier(max_depth=2, random_state=0).fit(X, y).tree_
        if solution_violation(spec, form.start_vector(form.prepare_start(cart)[0])) is None:
            continue  # CART already meets the quota: nothing to repair
        repaired = repair_start(form, spec, cart, solver="highs", options=SolveOptions(time_limit=30))
        if repaired is None:
            continue  # no sub-tree of CART meets it
        assert solution_violation(spec, form.start_vector(repaired)) is None
        splits = {(int(f), float(t)) for f, t in zip(cart.feature[~cart.is_leaf], cart.threshold[~cart.is_leaf])}
        kept = {int(f) for f in repaired.feature[~repaired.is_leaf]}
        assert kept <= {f for f, _ in splits}
        assert int((repaired.node_class[repaired.apply(X)] != y).sum()) >= expected
        clf = OptimalTreeClassifier(max_depth=2, time_limit=None, constraints=class_quota(y, 1, 1)).fit(X, y)
        assert clf.result_.start_source.startswith("repaired")
        repaired_fits += 1
    assert repaired_fits >= 3


@pytest.mark.parametrize("acceleration", ["all", "start+decompose"])
def test_max_features_equals_brute_force(acceleration):
    proven = 0
    for seed in range(10):
        X, y = random_dataset(seed, max_samples=9)
        if X.shape[1] < 2:
            continue
        expected = brute_force(X, y, k_features=1)
        r = check_fit(X, y, max_features(X, y, 2, k=1), expected, acceleration).result_
        proven += r.proven_optimal
    assert proven >= 8


def test_brute_force_without_constraints_is_the_plain_optimum():
    from support.bruteforce import brute_force_errors

    for seed in range(5):
        X, y = random_dataset(seed, max_samples=9)
        assert brute_force(X, y, quota=(0, 4)) == brute_force_errors(X, y, 2)
        assert brute_force(X, y, k_features=3) == brute_force_errors(X, y, 2)


def test_infeasible_fixings_never_flags_a_feasible_fixing():
    """Random user rows over 6 binary columns in two exclusive groups, against enumeration."""
    rng = np.random.RandomState(0)
    flagged_total = 0
    for _ in range(60):
        spec = ModelSpec()
        x = spec.add_vars("x", 6, ub=1.0, integer=True)
        groups = np.array([[0, 1, 2], [3, 4, 5]])
        spec.add_rows("group", 2, [0, 0, 0, 1, 1, 1], x, np.ones(6), 1.0, 1.0)
        n_rows = rng.randint(1, 3)
        rows, cols = np.nonzero(rng.rand(n_rows, 6) < 0.6)
        vals = rng.randint(-2, 3, rows.size).astype(float)
        lb = rng.choice([-np.inf, 0.0, 1.0], n_rows)
        ub = np.where(lb == -np.inf, rng.choice([0.0, 1.0], n_rows), np.inf)
        spec.add_rows("user_constraints", n_rows, rows, cols, vals, lb, ub)
        flagged = infeasible_fixings(spec, groups)
        A = spec.to_csr().toarray()
        rlb, rub = spec.row_bounds()
        points = [np.array(p, float) for p in itertools.product([0, 1], repeat=6)]
        feasible = [p for p in points if np.all(A @ p >= rlb - 1e-9) and np.all(A @ p <= rub + 1e-9)]
        for g, s in zip(*np.nonzero(flagged)):
            assert not any(p[groups[g, s]] == 1 for p in feasible)
        flagged_total += int(flagged.sum())
    assert flagged_total > 0


def test_decompose_bound_and_trace_on_a_small_model():
    """Two candidates, the better one cut off by a user row: the decomposition finds the other and proves it."""
    spec = ModelSpec()
    x = spec.add_vars("x", 3, ub=1.0, integer=True, obj=[1.0, 3.0, 5.0])
    spec.add_rows("choose", 1, [0, 0, 0], x, np.ones(3), 1.0, 1.0)
    spec.add_rows("user_constraints", 1, [0], [0], [1.0], -np.inf, 0.0)  # x0 = 0
    columns, bounds = np.array([0, 1, 2]), np.array([1.0, 2.0, 5.0])
    result, sol, info = decompose(spec, columns, bounds, solver="highs", options=SolveOptions(),
                                  granularity=1.0)
    assert result.proven_optimal and result.objective == 3.0 and sol[1] == 1.0
    assert info["infeasible"] == 1 and info["solved"] == 1 and info["pruned"] == 1
    times = [p["time"] for p in result.trace]
    assert times == sorted(times) and all(p["bound"] <= 3.0 for p in result.trace)
    assert spec.n_rows == 2  # the model itself is left unchanged


def test_presolve_option_reaches_highs():
    from optitree.solvers import make_backend

    spec = ModelSpec()
    x = spec.add_vars("x", 3, ub=1.0, integer=True, obj=[-1.0, -2.0, -3.0])
    spec.add_rows("pick", 1, [0, 0, 0], x, [1.0, 1.0, 1.0], -np.inf, 2.0)
    backend = make_backend("highs", spec)
    for presolve in (True, False):
        result, _ = backend.solve(SolveOptions(presolve=presolve))
        assert result.proven_optimal and result.objective == -5.0
        assert backend.highs.getOptionValue("presolve")[1] == ("choose" if presolve else "off")


@pytest.mark.parametrize("alpha", [0.0, 0.5])
def test_child_bound_row_never_exceeds_a_subtree_cost(alpha):
    """Depth 2, every root split: the bound of each child column is at most the cost of that child's best
    subtree with it (a stump on that threshold, or a leaf), thresholds that do not split the child included."""
    from optitree import exact
    from optitree.pipeline._root_bounds import child_bound_row
    from optitree.formulations import FlowOCTFormulation

    for seed in range(8):
        X, y = random_dataset(seed, max_samples=10)
        form = FlowOCTFormulation.of(X, y, depth=2, alpha=alpha)
        form.build()
        data = exact.prepare(form.problem, report="problem")
        units = form.error_scale
        b = np.asarray(form.vars["b"])
        for f, t in zip(form.threshold_feature, form.threshold_value):
            sides, constant = child_bound_row(form, data, None, int(f), float(t))
            assert constant == alpha
            if sides is None:
                continue
            for h, (cols, beta) in zip((2, 3), sides):
                rows = (X[:, f] <= t) if h == 2 else (X[:, f] > t)
                yh = y[rows]
                leaf = len(yh) - np.bincount(yh).max()
                assert cols[-1] == form.vars["p"][h - 1] and beta[-1] == pytest.approx(leaf * units)
                for q, (g, s) in enumerate(zip(form.threshold_feature, form.threshold_value)):
                    assert cols[q] == b[h - 1, q]
                    left = X[rows][:, g] <= s
                    stump = sum(len(part) - np.bincount(part).max() for part in (yh[left], yh[~left]) if len(part))
                    assert beta[q] <= alpha + stump * units + 1e-9  # alpha is in model units


@pytest.mark.parametrize("formulation", ["flow", "oct"])
@pytest.mark.parametrize("acceleration", ["none", "all"])
@pytest.mark.parametrize("y", [[0, 1, 0, 0], [0, 0, 1, 0, 0, 0]], ids=["tie", "minority"])
def test_a_class_quota_keeps_the_models_leaf_labels(y, acceleration, formulation):
    """One leaf per class at depth 1: the left leaf must predict 1 although 0 is (tied or strictly) its
    majority. The returned tree keeps the MIP's labels, meets the quota, and its proof is honest."""
    y = np.array(y)
    X = (np.arange(y.size) >= y.size // 2).astype(float)[:, None]  # left {x = 0}, right {x = 1}
    expected = int(np.sum(y[: y.size // 2] != 1))  # the left half predicts 1, the right half (all 0) 0
    clf = OptimalTreeClassifier(max_depth=1, time_limit=None, formulation=formulation, acceleration=acceleration,
                                constraints=class_quota(y, 1, 1, depth=1, formulation=formulation)).fit(X, y)
    np.testing.assert_array_equal(leaf_usage(clf, 2), [1, 1])
    np.testing.assert_array_equal(clf.predict(X), (X[:, 0] == 0).astype(int))
    assert errors(clf, X, y) == expected
    assert clf.result_.proven_optimal
    assert clf.result_.normalized_objective == pytest.approx(expected / (y.size - np.bincount(y).max()))
    np.testing.assert_array_equal(clf.predict_proba(X).argmax(axis=1), clf.predict(X))


@pytest.mark.parametrize("acceleration", ["none", "all"])
def test_oct_class_quota_equals_brute_force(acceleration):
    """OCT labels only the leaves it uses, so its quota optimum is FlowOCT's without empty leaves."""
    proven = relabelled = 0
    for seed in range(10):
        X, y = random_dataset(seed, max_samples=9)
        expected = brute_force(X, y, quota=(1, 1), empty_leaves=False)
        n_classes = int(y.max()) + 1
        clf = OptimalTreeClassifier(max_depth=2, time_limit=None, formulation="oct", acceleration=acceleration,
                                    constraints=class_quota(y, 1, 1, formulation="oct"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CertificateWarning)  # big-M tolerances can withdraw a proof
            clf.fit(X, y)
        np.testing.assert_array_equal(leaf_usage(clf, n_classes), np.ones(n_classes))
        assert errors(clf, X, y) >= expected
        if clf.result_.proven_optimal:
            assert errors(clf, X, y) == expected
        proven += clf.result_.proven_optimal
        relabelled += clf.tree_.leaf_class is not None
    assert proven >= 8 and relabelled >= 1


@pytest.mark.parametrize("formulation", ["flow", "oct"])
def test_unconstrained_and_slack_quota_fits_predict_majority_classes(formulation):
    """Without binding user rows the returned tree keeps the canonical majority labels."""
    for seed in range(4):
        X, y = random_dataset(seed, max_samples=9)
        for constraints in (None, class_quota(y, 0, 4, formulation=formulation)):
            clf = OptimalTreeClassifier(max_depth=2, time_limit=None, formulation=formulation,
                                        constraints=constraints).fit(X, y)
            assert clf.tree_.leaf_class is None


@pytest.mark.parametrize("acceleration", ["none", "all"])
def test_a_returned_tree_outside_the_model_is_never_certified(acceleration, monkeypatch):
    """The safety net of every fit under user rows (not only accelerated ones): a decoded tree
    that is no solution of the model keeps no proof. Decoding is forced back to the majority
    relabelling, which breaks a one-leaf-per-class quota here."""
    from optitree.pipeline._certificate import CertificateWarning
    from optitree.formulations import FlowOCTFormulation

    y = np.array([0, 1, 0, 0])
    X = (np.arange(y.size) >= 2).astype(float)[:, None]
    majority = FlowOCTFormulation.decode

    def decode_majority(self, spec, x):
        tree = majority(self, spec, x)
        return tree.__class__.from_dict({**tree.to_dict(), "leaf_class": None})

    monkeypatch.setattr(FlowOCTFormulation, "decode", decode_majority)
    with pytest.warns(CertificateWarning, match="violates the model"):
        clf = OptimalTreeClassifier(max_depth=1, time_limit=None, acceleration=acceleration,
                                    constraints=class_quota(y, 1, 1, depth=1)).fit(X, y)
    assert not clf.result_.proven_optimal and clf.result_.status != "optimal"
    assert "violates the model" in clf.result_.message
