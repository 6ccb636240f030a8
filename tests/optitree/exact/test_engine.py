"""optitree.exact: budgets, cutoffs, weights, input errors, and agreement with pycontree."""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_iris, load_wine

from optitree import datasets
from optitree.exact import prepare, solve, split_bounds
from support.contree import contree_errors
from support.exact_bruteforce import brute_force, random_instance, relabel, tree_cost
from support.instances import noisy_xor


def errors(res, X, y):
    return int((res.classes[res.tree.predict(X).argmax(1)] != y).sum())


def test_budget_gives_a_valid_tree_and_bound():
    stopped = 0
    for seed in range(2000, 2050):
        X, y, w, opts = random_instance(seed, max_rows=20, depth=3)
        y = relabel(y)
        optimum = brute_force(X, y, w, **opts)
        for node_limit in (1, 2, 4, 8, 16):
            res = solve(X, y, w, node_limit=node_limit, **opts)
            assert tree_cost(res.tree, X, y, w, opts["alpha"]) == pytest.approx(res.objective, abs=1e-9)
            assert res.bound <= optimum + 1e-9 <= res.objective + 2e-9, (seed, node_limit)
            assert res.status in ("optimal", "node_limit")
            if res.status == "optimal":
                assert res.objective == pytest.approx(optimum, abs=1e-9)
            else:
                stopped += 1
                assert res.n_evaluated <= node_limit + 1
    assert stopped > 50


def test_time_limit_zero_returns_the_best_leaf_and_a_valid_bound():
    X, y = load_iris(return_X_y=True)
    res = solve(X, y, max_depth=3, time_limit=0.0)
    assert res.status == "time_limit"
    assert res.tree.node_count >= 1 and errors(res, X, y) == res.objective
    assert 0.0 <= res.bound <= 1.0  # ConTree's depth-3 optimum on iris is 1 error
    t, incumbent, bound = res.trace[-1]
    assert incumbent == res.objective and bound == res.bound


def test_trace_is_monotone_and_ends_at_the_optimum():
    X, y = load_wine(return_X_y=True)
    res = solve(X, y, max_depth=3)
    times, incumbents, _ = zip(*res.trace)
    assert list(times) == sorted(times)
    assert list(incumbents) == sorted(incumbents, reverse=True)
    assert incumbents[0] == len(y) - np.bincount(y).max()
    assert res.trace[-1][1:] == (res.objective, res.bound)


def test_upper_bound_cutoff():
    X, y = load_iris(return_X_y=True)
    opt = solve(X, y, max_depth=2).objective
    at = solve(X, y, max_depth=2, upper_bound=opt)
    assert at.status == "cutoff" and at.bound == opt and at.objective >= opt
    above = solve(X, y, max_depth=2, upper_bound=opt + 0.5)
    assert above.status == "optimal" and above.objective == opt
    deeper = solve(X, y, max_depth=3, upper_bound=0.5)  # iris needs one error at depth 3
    assert deeper.status == "cutoff" and deeper.bound == 0.5


def test_duplicate_rows_equal_merged_weights():
    rng = np.random.RandomState(0)
    X = rng.randint(0, 5, size=(30, 3)).astype(float)
    y = rng.randint(0, 3, 30)
    reps = rng.randint(1, 4, 30)
    dup = solve(np.repeat(X, reps, axis=0), np.repeat(y, reps), max_depth=3)
    merged = solve(X, y, reps.astype(float), max_depth=3)
    assert dup.objective == merged.objective


def test_zero_weight_rows_are_ignored():
    rng = np.random.RandomState(1)
    X, y = rng.rand(40, 2), rng.randint(0, 2, 40)
    w = np.where(np.arange(40) < 30, 1.0, 0.0)
    assert solve(X, y, w, max_depth=2).objective == solve(X[:30], y[:30], max_depth=2).objective


def test_labels_and_classes():
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    y = np.array(["b", "a", "b", "c"])
    res = solve(X, y, max_depth=2)
    assert res.classes.tolist() == ["a", "b", "c"]
    assert res.objective == 0.0 and errors(res, X, y) == 0
    assert res.tree.threshold[0] in (0.5, 1.5, 2.5)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(max_depth=0), "max_depth"),
        (dict(max_depth=2.5), "max_depth"),
        (dict(max_depth=2, alpha=-1.0), "alpha"),
        (dict(max_depth=2, min_samples_leaf=0), "min_samples_leaf"),
        (dict(max_depth=2, allowed_features=np.ones(3, bool)), "allowed_features"),
    ],
)
def test_bad_parameters(kwargs, message):
    X, y = np.random.rand(10, 2), np.arange(10) % 2
    with pytest.raises(ValueError, match=message):
        solve(X, y, **kwargs)


def test_bad_data():
    X, y = np.random.rand(10, 2), np.arange(10) % 2
    with pytest.raises(ValueError, match="NaN"):
        solve(np.where(X > 0.5, np.nan, X), y, max_depth=2)
    with pytest.raises(ValueError, match="y must be"):
        solve(X, y[:-1], max_depth=2)
    with pytest.raises(ValueError, match="2-D"):
        solve(X[:, 0], y, max_depth=2)
    with pytest.raises(ValueError, match="non-negative"):
        solve(X, y, -np.ones(10), max_depth=2)
    with pytest.raises(ValueError, match="sample_weight must have shape"):
        solve(X, y, np.ones(9), max_depth=2)
    with pytest.raises(ValueError, match="no positive"):
        solve(X, y, np.zeros(10), max_depth=2)
    with pytest.raises(TypeError, match="boolean"):
        solve(X, y, max_depth=2, allowed_features=np.ones(2))
    with pytest.raises(ValueError, match="empty"):
        split_bounds(prepare(X, y), depth=2, samples=np.zeros(10, bool))


# ---------------------------------------------------------------- pycontree agreement
pycontree = pytest.importorskip("pycontree")


def load(name):
    if name == "iris":
        return load_iris(return_X_y=True)
    if name == "wine":
        return load_wine(return_X_y=True)
    if name == "breast_cancer":
        return load_breast_cancer(return_X_y=True)
    X, y, _ = datasets.load(name)
    return X, np.unique(y, return_inverse=True)[1]


@pytest.mark.parametrize(
    "name, depth",
    [("iris", 2), ("iris", 3), ("wine", 2), ("wine", 3), ("monks1", 2), ("monks1", 3), ("monks3", 3),
     ("monks2", 3), ("balance_scale", 2), ("balance_scale", 3), ("tic_tac_toe", 2), ("car", 2), ("xor", 3),
     ("parity", 3), ("breast_cancer", 2),
     pytest.param("digits", 2, marks=pytest.mark.slow),
     pytest.param("breast_cancer", 3, marks=pytest.mark.slow),
     pytest.param("tic_tac_toe", 3, marks=pytest.mark.slow),
     pytest.param("car", 3, marks=pytest.mark.slow)],
)
def test_agrees_with_pycontree(name, depth):
    X, y = load(name)
    res = solve(X, y, max_depth=depth)
    assert res.status == "optimal"
    assert res.objective == errors(res, X, y) == contree_errors(X, y, depth)


def test_split_bounds_agree_with_pycontree_children():
    """Exact children bounds of the root of iris at depth 3: their best sum is ConTree's optimum."""
    X, y = load_iris(return_X_y=True)
    sb = split_bounds(X, y, depth=3)
    assert sb.exact.all() and sb.complete
    assert float(sb.children_bound.min()) == contree_errors(X, y, 3)
    lazy = split_bounds(X, y, depth=3, cutoff=contree_errors(X, y, 3) + 1)
    assert np.all(lazy.children_bound[~lazy.exact] >= contree_errors(X, y, 3) + 1 - 1e-9)
    assert np.all(lazy.children_bound <= sb.children_bound + 1e-9)
    assert lazy.exact.sum() < sb.exact.sum()


def test_callback_sees_progress_and_stops_the_search_with_a_valid_bound():
    """A callback that returns True ends the search as 'interrupted' with its best tree and a valid bound."""
    X, y = noisy_xor(4000, 0)
    full = solve(X, y, max_depth=3)  # about 1.7 s: the engine polls every 0.2 s
    points = []

    def stop_after_two(point):
        points.append(point)
        return len(points) >= 2

    stopped = solve(X, y, max_depth=3, callback=stop_after_two)
    assert stopped.status == "interrupted" and len(points) == 2
    assert points[0]["time"] < points[1]["time"] and points[1]["nodes"] >= points[0]["nodes"]
    assert points[1]["incumbent"] >= full.objective
    assert stopped.bound <= full.objective + 1e-9 <= stopped.objective + 1e-9
    assert (stopped.tree.predict(X).argmax(1) != y).sum() == stopped.objective


def test_weights_spanning_more_than_2_pow_1000_are_refused():
    """Weights in units of the smallest one would overflow (a false proof before): a clear error instead."""
    X = np.arange(8.0)[:, None]
    y = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    w = np.ones(8)
    w[0] = 1e-308
    with pytest.raises(ValueError, match="2\\*\\*1000"):
        solve(X, y, w, max_depth=2)
    w[0] = 1e-290  # within range: solved, and the tiny row changes the optimum by at most its weight
    assert solve(X, y, w, max_depth=2).objective == pytest.approx(solve(X[1:], y[1:], max_depth=2).objective)
