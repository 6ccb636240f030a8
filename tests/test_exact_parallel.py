"""optitree.exact with threads > 1: forked worker processes (Linux) or threads, the same optima and valid bounds."""

import threading
import time

import numpy as np
import pytest

from optitree import _forked
from optitree.exact import _parallel, _shared, solve
from optitree.exact._scan import Subtree
from optitree.exact import prepare
from optitree.exact._search import Search, check_allowed
from optitree.exact._shared import ResultLog, SharedCache
from test_exact_bruteforce import brute_force, check_tree, one_hot, random_instance, relabel, tree_cost
from test_exact_engine import contree_errors
from _processes import live_children

BACKENDS = [pytest.param(True, id="processes",
                         marks=pytest.mark.skipif(not _forked.FORK_AVAILABLE, reason="forks on Linux only")),
            pytest.param(False, id="threads")]


@pytest.fixture(params=BACKENDS)
def backend(request, monkeypatch):
    monkeypatch.setattr(_parallel, "USE_PROCESSES", request.param)
    monkeypatch.setattr(_parallel, "ALONE_SECONDS", 0.0)  # the workers start at once, even on small problems
    return request.param


def noisy_xor(n, seed):
    rng = np.random.RandomState(seed)
    X = np.round(rng.rand(n, 6), 3)
    y = ((X[:, 0] > 0.5) ^ (X[:, 1] > 0.3) | (rng.rand(n) < 0.2)).astype(int)
    return X, y


def test_two_workers_find_the_brute_force_optimum(backend, monkeypatch):
    """The root's features dealt to two workers sharing one incumbent, a worker done first taking over some of
    the other's: same optimum, valid stopped bounds."""
    taken = []
    take_over = _shared.FeatureClaims.take_over

    def counted(self):
        feature = take_over(self)
        taken.append(feature)
        return feature

    monkeypatch.setattr(_shared.FeatureClaims, "take_over", counted)
    for seed in range(3000, 3030):
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
            assert stopped.work > 0
    if not backend:  # threads: the take-overs were counted in this process
        assert any(feature is not None for feature in taken)


def test_two_workers_find_contrees_optimum_at_depth_4_with_their_work_counted(backend):
    X, y = noisy_xor(400, 1)
    one = solve(X, y, max_depth=4, time_limit=600)
    two = solve(X, y, max_depth=4, time_limit=600, threads=2)
    assert two.status == "optimal" and two.objective == two.bound == contree_errors(X, y, 4)
    assert (two.tree.predict(X).argmax(1) != y).sum() == two.objective
    assert two.work > one.work / 2 and two.n_evaluated > one.n_evaluated / 2  # the workers' work counted


def test_workers_report_their_improvements_to_the_trace(backend):
    """The parent relays the workers' incumbents: the trace's incumbents fall to the optimum."""
    X, y = noisy_xor(400, 2)
    res = solve(X, y, max_depth=4, time_limit=600, threads=2)
    incumbents = [point[1] for point in res.trace]
    assert incumbents == sorted(incumbents, reverse=True) and incumbents[-1] == res.objective
    start = solve(X, y, max_depth=2).objective
    assert res.objective < start and len(set(incumbents)) >= 2


def test_a_callback_stops_every_worker_with_a_valid_bound(backend):
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


def test_a_failing_worker_is_reported(backend, monkeypatch):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("broken branch")

    monkeypatch.setattr(Search, "branch", broken)
    X, y = noisy_xor(200, 3)
    with pytest.raises((RuntimeError, ZeroDivisionError), match="broken branch"):
        solve(X, y, max_depth=3, threads=2)


@pytest.mark.skipif(not _forked.FORK_AVAILABLE, reason="forks on Linux only")
def test_a_worker_that_cannot_fork_runs_as_a_thread(monkeypatch):
    monkeypatch.setattr(_parallel, "ALONE_SECONDS", 0.0)
    forked = []

    def no_fork(work, on_message, deadline, stop=None):
        forked.append(deadline)
        raise _forked.ForkFailed("fork failed: out of memory")

    monkeypatch.setattr(_forked, "run_forked", no_fork)
    X, y = noisy_xor(300, 4)
    res = solve(X, y, max_depth=3, threads=2)
    assert len(forked) == 2 and res.status == "optimal" and res.objective == contree_errors(X, y, 3)


def test_an_exception_in_the_callback_stops_every_worker(backend):
    """Ctrl-C (or any exception) while the workers run: raised at once, and no worker thread or process goes on."""
    X, y = noisy_xor(1500, 0)
    calls = []

    def interrupt(point):
        calls.append(point)
        if len(calls) == 2:
            raise KeyboardInterrupt

    before = threading.active_count()
    started = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        solve(X, y, max_depth=4, callback=interrupt, threads=2)
    assert time.perf_counter() - started < 10
    # raised once every worker has ended (a worker process stopped, or killed): none runs on after solve
    assert [t.name for t in threading.enumerate() if t.name.startswith("exact-worker")] == []
    deadline = time.perf_counter() + 5
    while (threading.active_count() > before or live_children()) and time.perf_counter() < deadline:
        time.sleep(0.05)  # a worker process's exit and its reaping thread (tens of ms)
    assert threading.active_count() <= before and live_children() == []


@pytest.mark.skipif(not _forked.FORK_AVAILABLE, reason="forks on Linux only")
def test_a_problem_solved_within_alone_seconds_forks_no_worker(monkeypatch):
    forks = []

    def no_fork(*args, **kwargs):
        forks.append(args)
        raise _forked.ForkFailed("counted")  # the worker then runs as a thread

    monkeypatch.setattr(_forked, "run_forked", no_fork)
    X, y = noisy_xor(60, 5)
    for alone, forked in ((600.0, 0), (0.0, 2)):
        monkeypatch.setattr(_parallel, "ALONE_SECONDS", alone)
        forks.clear()
        res = solve(X, y, max_depth=3, threads=2)
        assert len(forks) == forked and res.status == "optimal" and res.objective == contree_errors(X, y, 3)


@pytest.mark.skipif(not _forked.FORK_AVAILABLE, reason="forks on Linux only")
def test_killed_workers_leave_the_start_tree_and_a_valid_bound(monkeypatch):
    """Workers killed before they report (here 0.5 s into a 30 s limit): the incumbent of the search before
    them, a bound that never exceeds the optimum, status time_limit."""
    monkeypatch.setattr(_parallel, "ALONE_SECONDS", 0.0)
    monkeypatch.setattr(_parallel, "KILL_GRACE", -0.9 * 30 + 0.5)  # the search's deadline is 0.9 x 30 s
    X, y = noisy_xor(1500, 0)
    started = time.perf_counter()
    res = solve(X, y, max_depth=4, time_limit=30, threads=2)
    assert time.perf_counter() - started < 10
    assert res.status == "time_limit" and res.stopped_by == "time_limit"
    assert res.bound <= contree_errors(X, y, 3)  # the depth-3 optimum is above the depth-4 one
    assert res.objective == solve(X, y, max_depth=2).objective  # the start tree (ALONE_SECONDS is 0)
    assert (res.tree.predict(X).argmax(1) != y).sum() == res.objective


def test_workers_share_the_work_limit(backend):
    """Two workers stop within one work limit (each gets half of what is left; a refused unit is counted)."""
    X, y = noisy_xor(1500, 0)
    for work_limit in (200_000, 2_000_000):
        res = solve(X, y, max_depth=4, work_limit=work_limit, threads=2)
        assert res.status == "work_limit" and res.stopped_by == "work_limit"
        assert work_limit / 2 <= res.work <= work_limit + 3 * X.shape[0], work_limit
        assert (res.tree.predict(X).argmax(1) != y).sum() == res.objective


def exact(cost):
    return Subtree(float(cost), float(cost), (0, 1, None, None))


@pytest.mark.skipif(not _forked.FORK_AVAILABLE, reason="forks on Linux only")
def test_result_log_passes_records_across_a_fork_and_drops_what_does_not_fit(monkeypatch):
    records = [((bytes([k]) * 40, 3, 0), exact(k)) for k in range(3)]

    def child(send, stop):
        for key, result in records:
            log.publish(1, key, result)
        log.publish(1, (b"x" * (2 << 20), 3, 0), exact(9))  # larger than the part: dropped

    monkeypatch.setattr(_shared, "LOG_BYTES", 1 << 20)
    log = ResultLog(2)
    assert _forked.run_forked(child, lambda m: None, time.perf_counter() + 60).state == "finished"
    assert list(log.new(0)) == records
    assert list(log.new(0)) == []  # read once
    log.publish(0, (b"y", 3, 0), exact(5))
    assert list(log.new(0)) == []  # a worker does not read its own part


@pytest.mark.skipif(not _forked.FORK_AVAILABLE, reason="forks on Linux only")
def test_shared_cache_publishes_exact_results_and_takes_only_what_it_lacks():
    log = ResultLog(2)
    mine = SharedCache({}, log, 0, range(3, 4))
    theirs = SharedCache({}, log, 1, range(3, 4))
    theirs[(b"a", 3, 0)] = exact(4)
    theirs[(b"b", 3, 0)] = exact(7)
    theirs[(b"c", 3, 0)] = Subtree(9.0, 2.0, None)  # not exact: not published
    theirs[(b"d", 2, 0)] = exact(1)  # not a shared depth
    mine[(b"b", 3, 0)] = Subtree(8.0, 3.0, None)  # mine, not exact: replaced
    mine[(b"a", 3, 0)] = exact(4.0)  # mine, exact: kept
    assert mine.get((b"z", 3, 0)) is None  # a lookup at a shared depth takes the new results
    assert mine[(b"b", 3, 0)] == exact(7) and mine[(b"a", 3, 0)] == exact(4)
    assert (b"c", 3, 0) not in mine and (b"d", 2, 0) not in mine
    assert [key for key, _ in log.new(1)] == [(b"a", 3, 0)]  # what worker 0 published: its exact result


def test_two_workers_sharing_results_at_depth_5_find_contrees_optimum(backend):
    from optitree import datasets

    X, y, _ = datasets.load("monks2")
    X = one_hot(X)
    y = np.unique(y, return_inverse=True)[1]
    res = solve(X, y, max_depth=5, threads=2)
    assert res.status == "optimal" and res.objective == contree_errors(X, y, 5)
    assert (res.tree.predict(X).argmax(1) != y).sum() == res.objective


def test_feature_claims_move_the_least_worked_feature_of_a_busy_worker_once():
    """Features 0-3 dealt to worker 0, 4 to worker 1, 5 to none: worker 1 takes worker 0's open feature with the
    least work, never a worker's last one, never one taken over before, finished or not searched."""
    claims = _shared.FeatureClaims([0, 0, 0, 0, 1, -1])
    zero, one = claims.worker(0), claims.worker(1)
    zero.record(0, 500, finished=False)
    zero.record(1, 40, finished=True)  # the least work, but finished
    zero.record(2, 90, finished=False)
    zero.record(3, 70, finished=False)
    assert one.take_over() == 3 and one.holds(3) and not zero.holds(3)
    assert one.take_over() == 2  # worker 0 still holds feature 0 besides it
    assert one.take_over() is None  # feature 0 is worker 0's last unfinished one
    assert zero.take_over() == 4  # worker 1 holds 2 and 3 besides it, which were taken over already
    assert one.take_over() == 0  # open, and worker 0 now holds feature 4 besides it
    assert zero.take_over() is None and one.take_over() is None  # no feature moves twice
    assert zero.holds(4) and one.holds(0) and not zero.holds(5) and not one.holds(5)


@pytest.mark.skipif(not _forked.FORK_AVAILABLE, reason="forks on Linux only")
def test_feature_claims_are_seen_across_a_fork():
    claims = _shared.FeatureClaims([0, 0, 1])

    def child(send, stop):
        send(claims.worker(1).take_over())

    taken = []
    assert _forked.run_forked(child, taken.append, time.perf_counter() + 60).state == "finished"
    assert taken == [0] and claims.worker(1).holds(0) and not claims.worker(0).holds(0)


def test_worker_searches_cover_every_feature_after_take_overs():
    """Two workers' searches run one after the other: worker 1, dealt the root's last feature, takes over all of
    worker 0's but one; worker 0 then searches only the one it holds. The least of their costs is the
    brute-forced optimum, and with a node limit the least of their bounds stays below it."""
    moved = 0
    for seed in range(60):
        rng = np.random.RandomState(seed)
        n, p = rng.randint(8, 15), rng.randint(3, 6)
        X = rng.randint(0, 4, size=(n, p)).astype(float)
        y = rng.randint(0, 2, n)
        alpha = float(rng.choice([0.0, 0.5]))
        expected = brute_force(X, y, None, max_depth=3, alpha=alpha, min_samples_leaf=1, allowed_features=None)
        data = prepare(X, y)
        for node_limit in (None, 4, 12):
            search = Search(data, check_allowed(None, 3, p), alpha / data.scale, 1, np.inf, node_limit)
            features = search.feature_order(data.view, 1)
            owners = np.zeros(p, int)
            owners[features[-1]] = 1
            claims, shared = _shared.FeatureClaims(owners), _shared.SharedIncumbent(np.inf, 2)
            start = search.leaf_cost(data.view)
            results = [None, None]
            for k, dealt in ((1, features[-1:]), (0, features[:-1])):
                worker = search.sibling(None, node_limit, None)
                results[k] = worker.branch(data.view, 3, 1, np.inf, start, None, None, dealt, shared.worker(k),
                                           False, claims.worker(k))
            moved += sum(claims.worker(1).holds(f) for f in features[:-1])
            cost = min(r.cost for r in results) * data.scale
            bound = min(r.lower_bound for r in results) * data.scale
            assert bound <= expected + 1e-9 <= cost + 1e-9, (seed, node_limit)
            if node_limit is None:
                assert cost == pytest.approx(expected, abs=1e-9) and bound == pytest.approx(expected, abs=1e-9), seed
    assert moved > 0
