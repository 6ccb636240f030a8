"""optitree.exact stopped early: the bound it reports, the work limit, which limit stopped it."""

import numpy as np
import pytest

from optitree.exact import prepare, solve
from test_exact_bruteforce import brute_force, random_instance

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


def same_tree(a, b):
    da, db = a.to_dict(), b.to_dict()
    if da.keys() != db.keys():
        return False
    for key, value in da.items():
        va, vb = np.asarray(value), np.asarray(db[key])
        equal = (np.array_equal(va, vb, equal_nan=True) if va.dtype.kind == "f" and vb.dtype.kind == "f"
                 else repr(value) == repr(db[key]))
        if not equal:
            return False
    return True


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
        assert same_tree(a.tree, b.tree)


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
