"""optitree.exact with threads > 1: native threads in this process, the same optima and valid bounds."""

import os
import time

import numpy as np
import pytest

from optitree.exact import _search, solve
from support.contree import contree_errors
from support.exact_bruteforce import brute_force, check_tree, one_hot, random_instance, relabel, tree_cost
from support.instances import noisy_xor
from support.processes import live_children, native_threads


@pytest.fixture
def at_once(monkeypatch):
    monkeypatch.setattr(_search, "ALONE_SECONDS", 0.0)  # the workers start at once, even on small problems


@pytest.fixture
def no_fork(monkeypatch):
    """``os.fork`` raises: the engine must not need it."""
    def refuse(*args, **kwargs):
        raise OSError("fork is not available here")

    monkeypatch.setattr(os, "fork", refuse)


def test_two_threads_find_the_brute_force_optimum(at_once, no_fork):
    """The root's features dealt to two threads sharing one incumbent and one cache, a thread done first
    taking over some of the other's: the brute-forced optimum; a node limit runs on one thread (the same
    result as threads=1) with a bound below the optimum."""
    for seed in range(3000, 3040):
        X, y, w, opts = random_instance(seed, depth=3)
        y = relabel(y)
        expected = brute_force(X, y, w, **opts)
        res = solve(X, y, w, threads=2, **opts)
        assert res.status == "optimal" and res.objective == pytest.approx(expected, abs=1e-9), seed
        assert tree_cost(res.tree, X, y, w, opts["alpha"]) == pytest.approx(res.objective, abs=1e-9), seed
        check_tree(res.tree, X, y, w, opts)
        for limit in (3, 5, 20):
            stopped = solve(X, y, w, threads=2, node_limit=limit, **opts)
            assert stopped.bound <= expected + 1e-9 <= stopped.objective + 1e-9, (seed, limit)
            one = solve(X, y, w, threads=1, node_limit=limit, **opts)
            assert (stopped.objective, stopped.bound, stopped.work) == (one.objective, one.bound, one.work)


def test_a_thread_without_features_searches_part_of_the_others_scan(at_once, no_fork):
    """Two features, one with a single threshold: its thread soon has no feature left to search or
    take over, and searches every other open interval of the other thread's scan, whose thread keeps
    the rest. The optimum is the brute force's, with and without a minimum leaf size and split cost."""
    for seed in range(8):
        rng = np.random.RandomState(seed)
        n = 36
        X = np.column_stack([rng.randint(0, 2, n), rng.permutation(n)]).astype(float)
        y = ((np.sin(X[:, 1] / rng.uniform(2, 5)) > 0) ^ (rng.rand(n) < 0.2)).astype(int)
        opts = dict(max_depth=3, alpha=[0.0, 0.5][seed % 2], min_samples_leaf=[1, 3][seed // 2 % 2],
                    allowed_features=None)
        expected = brute_force(X, y, None, **opts)
        res = solve(X, y, threads=2, **opts)
        assert res.status == "optimal" and res.objective == pytest.approx(expected, abs=1e-9), seed
        assert tree_cost(res.tree, X, y, None, opts["alpha"]) == pytest.approx(res.objective, abs=1e-9), seed


def test_two_threads_find_contrees_optimum_at_depth_4_with_their_work_counted(at_once, no_fork):
    X, y = noisy_xor(400, 1)
    one = solve(X, y, max_depth=4, time_limit=600)
    two = solve(X, y, max_depth=4, time_limit=600, threads=2)
    assert two.status == "optimal" and two.objective == two.bound == contree_errors(X, y, 4)
    assert (two.tree.predict(X).argmax(1) != y).sum() == two.objective
    assert two.work > one.work / 2 and two.n_evaluated > one.n_evaluated / 2  # the workers' work counted


def test_two_threads_at_depth_5_on_one_hot_data_find_contrees_optimum(at_once, no_fork):
    from optitree import datasets

    X, y, _ = datasets.load("monks2")
    X = one_hot(X)
    y = np.unique(y, return_inverse=True)[1]
    res = solve(X, y, max_depth=5, threads=2)
    assert res.status == "optimal" and res.objective == contree_errors(X, y, 5)


def test_the_threads_stop_once_a_tree_no_split_can_beat_is_found(no_fork):
    """breast_cancer has a perfect depth-4 tree (ConTree's optimum is 0 errors): once one thread finds
    it, the other leaves its sub-problem at once, and the run is still a proof, not a stopped search."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    res = solve(X, y, max_depth=4, time_limit=600, threads=2)
    assert (res.status, res.stopped_by, res.objective, res.bound) == ("optimal", None, 0.0, 0.0)
    assert (res.tree.predict(X).argmax(1) != y).sum() == 0


def test_threads_report_their_improvements_to_the_trace(at_once):
    """Each new incumbent of any thread reaches the trace: its incumbents fall to the optimum."""
    X, y = noisy_xor(400, 2)
    res = solve(X, y, max_depth=4, time_limit=600, threads=2)
    incumbents = [point[1] for point in res.trace]
    assert incumbents == sorted(incumbents, reverse=True) and incumbents[-1] == res.objective
    start = solve(X, y, max_depth=2).objective
    assert res.objective < start and len(set(incumbents)) >= 2


def test_a_callback_stops_every_thread_with_a_valid_bound(at_once):
    X, y = noisy_xor(1500, 0)
    full = solve(X, y, max_depth=3)
    points = []

    def stop_at_the_second(point):
        points.append(point)
        return len(points) >= 2

    stopped = solve(X, y, max_depth=4, callback=stop_at_the_second, threads=2)
    assert stopped.status == "interrupted" and stopped.stopped_by == "callback" and len(points) == 2
    assert stopped.bound <= full.objective + 1e-9  # the depth-3 optimum bounds depth 4 from above
    assert (stopped.tree.predict(X).argmax(1) != y).sum() == stopped.objective


def test_an_exception_in_the_callback_ends_every_thread_before_it_is_raised(at_once, no_fork):
    """Ctrl-C (or any exception) while the threads run: raised at once, no native thread runs on, no process."""
    X, y = noisy_xor(1500, 0)
    calls, running = [], []

    def interrupt(point):
        calls.append(point)
        running.append(native_threads())
        if len(calls) == 2:
            raise KeyboardInterrupt

    before, children = native_threads(), live_children()  # children: of earlier tests (e.g. joblib's workers)
    started = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        solve(X, y, max_depth=4, callback=interrupt, threads=2)
    assert time.perf_counter() - started < 10
    assert max(running) >= before + 2  # the search's two threads ran (the waiting thread is this one)
    assert native_threads() == before and set(live_children()) <= set(children)


def test_a_work_limit_gives_the_same_tree_on_every_run_with_threads():
    """A work limit searches on one thread: every run, and threads=1, stop at the same tree and bound."""
    X, y = noisy_xor(1500, 0)
    runs = [solve(X, y, max_depth=4, work_limit=300_000, threads=threads) for threads in (2, 2, 1)]
    for res in runs:
        assert res.status == "work_limit" and res.stopped_by == "work_limit"
        assert res.work <= 300_000 + X.shape[0]
        assert (res.objective, res.bound, res.work) == (runs[0].objective, runs[0].bound, runs[0].work)
        for field in ("feature", "threshold", "children_left", "children_right"):
            assert np.array_equal(getattr(res.tree, field), getattr(runs[0].tree, field), equal_nan=True)

