"""The hard time limit: a solve in a forked child, killed after its limit (optitree._forked).

No test measures wall time (the overshoot is measured by src/benchmarks/time_limit.py): a
child that would never end must end by the deadline, and what it reported before must be kept.
"""

import os
import signal
import time

import numpy as np
import pytest
from sklearn.datasets import load_iris

from optitree import OptimalTreeClassifier
from optitree.solvers import SolveOptions, solve_highs
from optitree.solvers import highs as highs_backend
from optitree._forked import FORK_AVAILABLE, run_forked
from support.models import multi_knapsack, objective_of

pytestmark = pytest.mark.skipif(not FORK_AVAILABLE, reason="the hard time limit needs fork (Linux)")


def _gone(pid, wait=10.0):
    """True once process ``pid`` no longer exists (the parent reaps it in a thread)."""
    end = time.monotonic() + wait
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.01)
    return False


def test_finished_work_relays_its_messages_in_order():
    received = []

    def work(send, stop_requested):
        for i in range(5):
            send(("n", i, np.arange(i)))

    outcome = run_forked(work, received.append, time.perf_counter() + 60)
    assert outcome.state == "finished"
    assert [m[1] for m in received] == list(range(5))
    assert np.array_equal(received[4][2], np.arange(4))


def test_large_messages_pass_the_pipe_whole():
    big = np.random.default_rng(0).random(300_000)  # 2.4 MB: many pipe buffers
    received = []
    outcome = run_forked(lambda send, stop: send(big), received.append, time.perf_counter() + 60)
    assert outcome.state == "finished" and np.array_equal(received[0], big)


def test_a_child_that_never_ends_is_killed_and_its_reports_kept():
    received = []

    def work(send, stop_requested):
        send(os.getpid())
        send("reported before the stall")
        time.sleep(3600)  # a stage that checks no clock
        send("never sent")

    outcome = run_forked(work, received.append, time.perf_counter() + 0.5)
    assert outcome.state == "killed"
    assert received[1:] == ["reported before the stall"]
    assert _gone(received[0])


def test_a_true_return_asks_the_child_to_stop():
    received = []

    def work(send, stop_requested):
        send("ask me to stop")
        while not stop_requested():
            time.sleep(0.001)
        send("stopped")

    outcome = run_forked(work, lambda m: received.append(m) or m == "ask me to stop", time.perf_counter() + 600)
    assert outcome.state == "finished" and received == ["ask me to stop", "stopped"]


def test_an_exception_in_the_child_is_reported_with_its_traceback():
    def work(send, stop_requested):
        raise ValueError("bad model")

    outcome = run_forked(work, lambda m: None, time.perf_counter() + 60)
    assert outcome.state == "died"
    assert "exited with status 1" in outcome.detail and "ValueError: bad model" in outcome.detail


def test_a_child_killed_from_outside_is_reported_not_suffered():
    # as the kernel's out-of-memory killer would
    outcome = run_forked(lambda send, stop: os.kill(os.getpid(), signal.SIGKILL), lambda m: None,
                         time.perf_counter() + 60)
    assert outcome.state == "died" and "SIGKILL" in outcome.detail


def test_an_exception_in_the_parent_kills_the_child():
    pids = []

    def work(send, stop_requested):
        send(os.getpid())
        time.sleep(3600)

    def on_message(pid):
        pids.append(pid)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_forked(work, on_message, time.perf_counter() + 600)
    assert _gone(pids[0])


# ---------------------------------------------------------------------- HiGHS
@pytest.fixture
def always_isolate(monkeypatch):
    """Every HiGHS run with a time limit runs in a forked child, whatever its size."""
    monkeypatch.setattr(highs_backend, "ISOLATE_SHARE", 0.0)
    monkeypatch.setattr(highs_backend, "FORK_SECONDS", 0.0)


def test_which_runs_are_isolated():
    big = (100_000, 200_000, 800_000)  # rows, columns, non-zeros: presolve predicted at ~30 s
    assert highs_backend.isolates(SolveOptions(time_limit=60.0), *big) == highs_backend.FORK_AVAILABLE
    assert not highs_backend.isolates(SolveOptions(), *big)  # no limit
    assert not highs_backend.isolates(SolveOptions(time_limit=60.0, hard_time_limit=False), *big)
    assert highs_backend.isolates(SolveOptions(time_limit=60.0, threads=2), *big) == highs_backend.FORK_AVAILABLE
    assert not highs_backend.isolates(SolveOptions(time_limit=60.0), 10, 20, 50)  # cheaper than a fork
    assert not highs_backend.isolates(SolveOptions(time_limit=1e6), *big)  # small against the limit


def test_an_isolated_solve_answers_as_one_in_this_process(always_isolate):
    spec, greedy = multi_knapsack()
    start = dict(enumerate(greedy))
    here, x_here = solve_highs(spec.to_highs(), SolveOptions(time_limit=600.0, hard_time_limit=False), start=start)
    events = []
    forked, x = solve_highs(spec.to_highs(), SolveOptions(time_limit=600.0), start=start, on_event=events.append)
    assert forked.options["highs_isolated"] and not here.options["highs_isolated"]
    assert forked.proven_optimal and forked.objective == pytest.approx(here.objective)
    assert objective_of(spec, x) == pytest.approx(forked.objective)
    assert forked.start_accepted is True and forked.trace[0]["event"] == "start"
    assert forked.nodes > 0
    relayed = [e["event"] for e in events if e["event"] != "heartbeat"]  # heartbeats are not trace points
    assert relayed == [p["event"] for p in forked.trace]  # relayed as they came


@pytest.mark.parametrize("threads", [2, 1])
def test_a_forked_solve_after_multithreaded_solves_in_this_process(always_isolate, threads):
    # The parent's HiGHS scheduler has worker threads that the fork does not copy: the child
    # must start its own (with the parent's, it waited until it was killed at the deadline).
    spec, _ = multi_knapsack()
    here, _ = solve_highs(spec.to_highs(), SolveOptions(time_limit=60.0, threads=2, hard_time_limit=False))
    forked, x = solve_highs(spec.to_highs(), SolveOptions(time_limit=60.0, threads=threads))
    assert forked.options["highs_isolated"] and forked.proven_optimal
    assert forked.objective == pytest.approx(here.objective) and objective_of(spec, x) == pytest.approx(here.objective)


def test_a_stalled_solve_keeps_its_last_incumbent_and_bound(always_isolate, monkeypatch):
    # After its first improving solution, HiGHS "stalls" in the child (the callback sleeps, as
    # HiGHS does in a stage that checks no clock): the run is killed after its limit, and returns
    # the solution and bound it reported, not a proof.
    spec, greedy = multi_knapsack()
    optimum = solve_highs(spec.to_highs(), SolveOptions())[0].objective
    improving = highs_backend._Recorder.on_improving

    def stall(self, e):
        improving(self, e)
        time.sleep(3600)

    monkeypatch.setattr(highs_backend._Recorder, "on_improving", stall)
    result, x = solve_highs(spec.to_highs(), SolveOptions(time_limit=0.5), start=dict(enumerate(greedy)))
    assert result.termination == "time_limit" and not result.proven_optimal
    assert "was stopped" in result.message
    assert x is not None and objective_of(spec, x) == pytest.approx(result.objective)
    assert result.objective == pytest.approx(objective_of(spec, greedy))  # the start, the only one reported
    assert result.bound is None or result.bound <= optimum + 1e-9


def test_a_stall_before_any_report_returns_no_solution(always_isolate, monkeypatch):
    spec, _ = multi_knapsack()
    monkeypatch.setattr(highs_backend._Recorder, "on_log", lambda self, e: time.sleep(3600))
    result, x = solve_highs(spec.to_highs(), SolveOptions(time_limit=0.2))
    assert (result.status, x, result.bound) == ("time_limit_no_solution", None, None)


def test_a_failed_fork_solves_in_this_process(always_isolate, monkeypatch):
    def no_memory():
        raise OSError(12, "Cannot allocate memory")

    spec, _ = multi_knapsack()
    monkeypatch.setattr(os, "fork", no_memory)
    result, x = solve_highs(spec.to_highs(), SolveOptions(time_limit=600.0))
    assert result.proven_optimal and not result.options["highs_isolated"]
    assert "fork failed" in result.message and objective_of(spec, x) == pytest.approx(result.objective)


def test_an_isolated_fit_proves_the_same_optimum(always_isolate):
    X, y = load_iris(return_X_y=True)
    X, y = X[::3], y[::3]
    kwargs = dict(max_depth=2, acceleration="none", random_state=0)
    forked = OptimalTreeClassifier(**kwargs, time_limit=600).fit(X, y)
    here = OptimalTreeClassifier(**kwargs, time_limit=None).fit(X, y)  # no limit: never isolated
    assert forked.result_.options["highs_isolated"] and not here.result_.options["highs_isolated"]
    assert forked.result_.proven_optimal and here.result_.proven_optimal
    assert forked.result_.objective == pytest.approx(here.result_.objective)
