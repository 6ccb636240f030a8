"""The thread protocol of ``benchmarks.exact``: the counts in turn, and the one-thread runs at once."""

import threading

from benchmarks.exact import at_once, thread_times


def test_the_one_thread_runs_meet_at_once():
    barrier = threading.Barrier(2, timeout=10)  # broken (an error) unless both runs are in it together
    calls = []

    def run(threads):
        calls.append(threads)
        barrier.wait()

    at_once(run, 2)
    assert calls == [1, 1]


def test_every_round_runs_each_count_then_the_runs_at_once():
    calls = []

    def run(threads):
        calls.append(threads)
        return f"result of {threads}"

    times, ceiling, first = thread_times(run, [1, 2], rounds=3)
    assert calls == [1, 2, 1, 1] * 3
    assert set(times) == {1, 2} and all(t >= 0 for t in times.values()) and ceiling > 0
    assert first == "result of 1"
