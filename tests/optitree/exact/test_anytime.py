"""optitree.exact stopped early: the bound it reports, the work limit, which limit stopped it."""

import functools

import numpy as np
import pytest

from optitree.exact import _anytime as anytime
from optitree.exact import _api as api
from optitree.exact import prepare, solve
from optitree.problem import check_allowed
from optitree.exact._anytime import class_count_bound, two_level_class_count_bound
from optitree.exact._api import _subset_bound as subset_bound
from support.exact_bruteforce import brute_force, random_instance

LOSSES = ("misclassification", "squared", "absolute")
LIMITS = (1, 2, 3, 5, 8, 13, 21, 40, 80)


def small_instance(seed, loss):
    """30-60 rows, 2-4 continuous-ish features (ties), labels or targets; random alpha and leaf size."""
    rng = np.random.RandomState(seed)
    n, p = rng.randint(30, 61), rng.randint(2, 5)
    X = np.round(rng.rand(n, p) * rng.choice([8, 40]), 0)
    if loss == "misclassification":
        y = (X[:, 0] + rng.rand(n) * 20 > 14).astype(int) + (rng.rand(n) < 0.2)
        unit = 1.0
    else:
        y = np.sin(X[:, 0] / 3) + 0.3 * rng.randn(n)
        unit = 0.05
    w = None if rng.rand() < 0.5 else rng.choice([1.0, 2.0, 3.0], n)
    alpha = float(rng.choice([0.0, 0.5, 2.0])) * unit
    min_leaf = int(rng.choice([1, 1, 3]))
    return X, y, w, dict(alpha=alpha, min_samples_leaf=min_leaf)


def tol(objective):
    return 1e-7 * max(1.0, abs(objective))


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("depth", [2, 3, 4])
def test_stopped_bound_never_exceeds_the_optimum(loss, depth):
    for seed in range(4 if depth < 4 else 2):
        X, y, w, opts = small_instance(100 * depth + seed, loss)
        data = prepare(X, y, w, loss=loss)
        optimum = solve(data, max_depth=depth, **opts).objective
        for limit in LIMITS:
            for kind in ("node_limit", "work_limit"):
                value = limit if kind == "node_limit" else limit * X.shape[0]
                res = solve(data, max_depth=depth, **opts, **{kind: value})
                assert res.bound <= optimum + tol(optimum), (seed, kind, value)
                assert res.objective >= optimum - tol(optimum)
                assert res.bound <= res.objective + tol(optimum)
                if res.status == "optimal":
                    assert res.stopped_by is None
                    assert res.objective == pytest.approx(optimum, rel=1e-9, abs=1e-9)
                else:
                    assert res.status == kind and res.stopped_by == kind
                    assert res.gap == pytest.approx((res.objective - res.bound) / res.objective)


@pytest.mark.parametrize("seed", range(20))
def test_stopped_bound_never_exceeds_brute_force(seed):
    X, y, w, opts = random_instance(seed, max_rows=10)
    opts = {**opts, "max_depth": min(opts["max_depth"], 3)}
    optimum = brute_force(X, y, w, **opts)
    for limit in (1, 2, 3, 4, 6, 10):
        res = solve(X, y, w, node_limit=limit, **opts)
        assert res.bound <= optimum + 1e-9
        assert res.objective >= optimum - 1e-9


def noisy_labels(n=300, p=3, seed=0):
    """Random labels on continuous features: every tree of depth <= 3 errs on about a third of the rows."""
    rng = np.random.RandomState(seed)
    return rng.rand(n, p), rng.randint(0, 2, n)


def test_stopped_bound_is_positive_once_every_feature_was_tried():
    """After one candidate per root feature (depth-2 children solved) the least bound over the
    root's candidates is positive: any half of random labels costs a depth-2 tree dozens of errors."""
    X, y = noisy_labels()
    optimum = solve(X, y, max_depth=3).objective
    positive = 0
    for work_limit in (3_000, 10_000, 30_000):
        res = solve(X, y, max_depth=3, work_limit=work_limit)
        assert res.status == "work_limit" and res.stopped_by == "work_limit"
        assert 0 < res.bound <= optimum
        assert res.gap < 1
        positive += 1
    assert positive == 3
    # the same under a node limit, and for regression (noise targets)
    assert 0 < solve(X, y, max_depth=3, node_limit=20).bound <= optimum
    t = np.random.RandomState(1).randn(X.shape[0])
    reg_optimum = solve(X, t, max_depth=3, loss="squared").objective
    reg = solve(X, t, max_depth=3, loss="squared", node_limit=20)
    assert reg.status == "node_limit" and 0 < reg.bound <= reg_optimum + 1e-9


def test_bound_is_positive_at_depth_four_with_a_deep_stop():
    """Depth 4: the depth-3 children stopped mid-search report their own least open bound."""
    X, y = noisy_labels(n=400, p=4, seed=2)
    res = solve(X, y, max_depth=4, work_limit=200_000)
    assert res.status == "work_limit"
    assert 0 < res.bound < res.objective


@pytest.mark.parametrize("loss", LOSSES)
def test_work_limit_is_deterministic(loss):
    X, y, w, opts = small_instance(7, loss)
    X, y = np.r_[X, X[::-1] + 0.5], np.r_[y, y[::-1]]
    w = None if w is None else np.r_[w, w]
    for work_limit in (500, 2_000, 8_000):
        runs = [solve(X, y, w, max_depth=4, work_limit=work_limit, **opts) for _ in range(2)]
        a, b = runs
        assert (a.objective, a.bound, a.status, a.stopped_by, a.work, a.n_evaluated) == \
               (b.objective, b.bound, b.status, b.stopped_by, b.work, b.n_evaluated)
        assert a.tree == b.tree


@pytest.mark.parametrize("loss", LOSSES)
def test_more_work_never_gives_a_worse_tree(loss):
    """The search order does not depend on the limit: a larger work limit runs the smaller one's
    search and more, so its incumbent is never worse."""
    X, y, w, opts = small_instance(11, loss)
    data = prepare(X, y, w, loss=loss)
    optimum = solve(data, max_depth=4, **opts)
    previous = np.inf
    for work_limit in np.unique(np.geomspace(50, 4 * optimum.work + 100, 25).astype(int)):
        res = solve(data, max_depth=4, work_limit=int(work_limit), **opts)
        assert res.objective <= previous + tol(previous if np.isfinite(previous) else 1.0)
        assert res.bound <= optimum.objective + tol(optimum.objective)
        previous = res.objective
    assert previous == pytest.approx(optimum.objective, rel=1e-9, abs=1e-9)


def test_stopped_by_names_the_limit():
    X, y = noisy_labels()
    assert solve(X, y, max_depth=3).stopped_by is None
    assert solve(X, y, max_depth=3, node_limit=5).stopped_by == "node_limit"
    assert solve(X, y, max_depth=3, work_limit=1_000).stopped_by == "work_limit"
    res = solve(X, y, max_depth=3, time_limit=0.0)
    assert res.status == "time_limit" and res.stopped_by == "time_limit"
    X4, y4 = noisy_labels(n=400, p=4, seed=2)  # runs longer than the callback's first call (0.2 s)
    res = solve(X4, y4, max_depth=4, callback=lambda point: True, work_limit=10**12)
    assert res.status == "interrupted" and res.stopped_by == "callback"
    # the smaller of two limits stops it
    assert solve(X, y, max_depth=3, node_limit=5, work_limit=10**9).stopped_by == "node_limit"
    assert solve(X, y, max_depth=3, node_limit=10**9, work_limit=1_000).stopped_by == "work_limit"


def test_work_limit_with_distinct_features_is_one_budget():
    X, y = noisy_labels(n=120, p=4)
    full = solve(X, y, max_depth=3, max_distinct_features=2)
    res = solve(X, y, max_depth=3, max_distinct_features=2, work_limit=2_000)
    assert res.status == "work_limit" and res.stopped_by == "work_limit"
    assert res.work <= 2_000 + 200
    assert res.bound <= full.objective <= res.objective


def many_classes(seed, max_rows=12):
    """Tiny set with 3-8 classes (more than a shallow tree has leaves), ties, weights, random options."""
    rng = np.random.RandomState(seed)
    n, p, k = rng.randint(6, max_rows + 1), rng.randint(1, 4), rng.randint(3, 9)
    X = rng.randint(0, rng.randint(2, 8), size=(n, p)).astype(float)
    y = rng.randint(0, k, n)
    w = None if rng.rand() < 0.5 else rng.choice([0.5, 1.0, 2.0], size=n)
    depth = int(rng.randint(1, 4))
    opts = dict(max_depth=depth, alpha=float(rng.choice([0.0, 0.5])), min_samples_leaf=int(rng.choice([1, 1, 2])),
                allowed_features=None if rng.rand() < 0.6 else rng.rand(2**depth - 1, p) < 0.7)
    return X, y, w, opts


@pytest.mark.parametrize("block", range(4))
def test_class_count_bounds_never_exceed_brute_force(block):
    """At most 2**d classes are right in a depth-d tree: the bound is below every optimum, positive on some.
    Taken one level down (the children's own class-count bounds): still below, never below the one-level
    bound, a bound too with a budget spent at once, and higher than the one-level bound on some instances."""
    positive = higher = 0
    for seed in range(25 * block, 25 * block + 25):
        X, y, w, opts = many_classes(seed)
        optimum = brute_force(X, y, w, **opts)
        data = prepare(X, y, w)
        allowed = check_allowed(opts["allowed_features"], opts["max_depth"], X.shape[1])
        args = (data, data.view, opts["max_depth"], allowed, opts["alpha"] / data.scale, opts["min_samples_leaf"])
        one = class_count_bound(*args[:3], allowed[0], *args[4:]) * data.scale
        two = two_level_class_count_bound(*args, lambda rows: False) * data.scale
        stopped = two_level_class_count_bound(*args, lambda rows: True) * data.scale
        assert one <= optimum + 1e-9, seed
        assert one - 1e-9 <= two <= optimum + 1e-9, seed
        assert stopped <= two + 1e-9 and stopped <= optimum + 1e-9, seed
        positive += one > 0
        higher += two > one + 1e-9
    assert positive >= 5 and higher >= 3


def test_two_level_bound_raises_a_many_class_stop():
    """Ten classes at depth 3 stopped by the work limit: the reserve's two-level class-count bound is above the
    one-level one (children of depth 2 keep 4 classes each, grandchildren 2) and below pycontree's optimum."""
    pycontree = pytest.importorskip("pycontree")
    rng = np.random.RandomState(5)
    X, y = rng.randint(0, 20, size=(600, 4)).astype(float), rng.randint(0, 10, 600)
    data = prepare(X, y)
    one = class_count_bound(data, data.view, 3, np.ones(4, bool), 0.0, 1)
    res = solve(X, y, max_depth=3, work_limit=20_000)
    assert res.status == "work_limit"
    optimum = (pycontree.ConTree(max_depth=3).fit(X, y).predict(X) != y).sum()
    assert one < res.bound <= optimum


def test_subset_bound_never_exceeds_the_optimum(monkeypatch):
    """Subsets from 2**depth rows (not 2**(depth + 3)) so that small sets have some: every subset
    bound a stopped search computes, and the bound it reports, stay below the optimum pycontree
    proves without a minimum leaf size (itself below the optimum with one)."""
    pycontree = pytest.importorskip("pycontree")
    monkeypatch.setattr(anytime, "SUBSET_FIRST_EXTRA", 0)
    subset_bounds = []

    def recorded(*args):
        subset_bounds.append(subset_bound(*args))
        return subset_bounds[-1]

    monkeypatch.setattr(api, "_subset_bound", recorded)
    positive = 0
    for seed in range(12):
        rng = np.random.RandomState(seed)
        n = rng.randint(60, 121)
        X, y = rng.randint(0, 12, size=(n, rng.randint(2, 4))).astype(float), rng.randint(0, rng.randint(2, 4), n)
        optimum = (pycontree.ConTree(max_depth=3).fit(X, y).predict(X) != y).sum()
        for min_leaf in (1, 3):
            for work_limit in (300, 1_000, 3_000):
                del subset_bounds[:]
                res = solve(X, y, max_depth=3, min_samples_leaf=min_leaf, work_limit=work_limit)
                assert res.bound <= optimum + 1e-9, (seed, min_leaf, work_limit)
                assert all(b <= optimum + 1e-9 for b in subset_bounds), (seed, min_leaf, work_limit)
                positive += any(b > 0 for b in subset_bounds)
    assert positive >= 10


@pytest.mark.slow  # 12 s: the default suite keeps the other anytime-bound tests
def test_subset_bound_makes_a_deep_stop_positive():
    """Depth 4 on 3 000 noisy rows stopped long before any root child is solved: the class-count
    bound is 0 (two classes), the search's own bound 0; the subset bound, proven on a few hundred
    rows, is positive and below the optimum pycontree proves at depth 3 (deeper optima are lower)."""
    pycontree = pytest.importorskip("pycontree")
    X, y = noisy_labels(n=3000, p=3, seed=4)
    res = solve(X, y, max_depth=4, work_limit=3_000_000)
    assert res.status == "work_limit"
    assert 0 < res.bound <= res.objective
    Xr = np.column_stack([np.unique(X[:, j], return_inverse=True)[1] for j in range(X.shape[1])]).astype(float)
    depth3 = pycontree.ConTree(max_depth=3).fit(Xr, y)
    assert res.bound <= (depth3.predict(Xr) != y).sum()


def test_class_count_bound_makes_a_many_class_stop_positive():
    """Ten classes at depth 3: stopped at once, the bound still counts the six lightest classes of each
    child (depth-2 sub-trees have four leaves), and stays below the optimum pycontree proves."""
    pycontree = pytest.importorskip("pycontree")
    rng = np.random.RandomState(5)
    X, y = rng.randint(0, 20, size=(600, 4)).astype(float), rng.randint(0, 10, 600)
    res = solve(X, y, max_depth=3, node_limit=3)
    assert res.status == "node_limit"
    optimum = (pycontree.ConTree(max_depth=3).fit(X, y).predict(X) != y).sum()
    assert 0 < res.bound <= optimum


def test_no_subset_bound_under_per_node_features(monkeypatch):
    """A lifted node changes place, so with per-node features no subset bound is taken (or kept in reserve)."""
    def refuse(*args):
        raise AssertionError("subset bound under per-node features")

    monkeypatch.setattr(api, "_subset_bound", refuse)
    X, y = noisy_labels(n=400, p=3, seed=3)
    allowed = np.ones((7, 3), bool)
    allowed[1, 0] = False
    res = solve(X, y, max_depth=3, allowed_features=allowed, work_limit=20_000)
    assert res.status == "work_limit" and res.bound <= res.objective


@functools.cache
def _noisy_xor_600_with_its_depth4_optimum():
    from support.contree import contree_errors
    from support.instances import noisy_xor

    X, y = noisy_xor(600, 1)
    return X, y, contree_errors(X, y, 4)


@pytest.mark.parametrize("threads", [1, 2])
def test_progress_reports_a_rising_bound_that_never_exceeds_the_optimum(threads):
    """While the search runs, each progress point carries the root's bound so far (the least over its open
    candidates): positive before the proof lands, never above ConTree's optimum, never falling. The set
    takes about 1.7 s on one thread, so even two threads meet several progress points before the proof."""
    X, y, optimum = _noisy_xor_600_with_its_depth4_optimum()
    bounds = []
    res = solve(X, y, max_depth=4, threads=threads, callback=lambda point: bounds.append(point["bound"]) and False)
    assert res.status == "optimal" and res.objective == optimum
    assert bounds and all(0 <= b <= optimum for b in bounds) and max(bounds) > 0
    assert bounds == sorted(bounds)
    assert [b for _, _, b in res.trace] == sorted(b for _, _, b in res.trace)
