"""A root search starts on the calling thread and goes on on a native thread when its inline slice ends.

Tiny problems end inline (every other test of the engine runs that way); here the slice is made so
short that every search is cut by it and starts again on the thread, from the cache and incumbents
the slice left: the optimum must still be brute force's, and the reported incumbents never rise.
"""

import numpy as np
import pytest

from optitree.exact import _search, solve
from support.contree import contree_errors
from support.exact_bruteforce import brute_force, random_instance, relabel, tree_cost
from support.instances import noisy_xor
from support.processes import native_threads


@pytest.fixture
def cut_at_once(monkeypatch):
    monkeypatch.setattr(_search, "INLINE_SECONDS", 1e-9)


def test_a_search_cut_inline_goes_on_to_the_brute_force_optimum(cut_at_once):
    for seed in range(4000, 4040):
        X, y, w, opts = random_instance(seed, depth=3)
        y = relabel(y)
        expected = brute_force(X, y, w, **opts)
        res = solve(X, y, w, **opts)
        assert res.status == "optimal" and res.objective == pytest.approx(expected, abs=1e-9), seed
        assert tree_cost(res.tree, X, y, w, opts["alpha"]) == pytest.approx(res.objective, abs=1e-9), seed
        incumbents = [point[1] for point in res.trace]
        assert all(b <= a + 1e-9 for a, b in zip(incumbents, incumbents[1:])), seed


def test_a_search_cut_inline_runs_on_a_native_thread_and_proves(cut_at_once):
    """Past the slice the job is on its own thread (seen from the callback, about every 0.2 s of a search
    of about a second) and proves pycontree's optimum: the slice's own (cut) result is not the answer."""
    X, y = noisy_xor(2500, 0)
    seen = []

    def watch(point):
        seen.append(native_threads())
        return False

    before = native_threads()
    res = solve(X, y, max_depth=3, callback=watch)
    assert res.status == "optimal" and res.objective == contree_errors(X, y, 3)
    assert seen and max(seen) >= before + 1
    assert native_threads() == before


def test_the_slice_searches_in_the_plain_order_unless_a_deadline_can_stop_it(monkeypatch):
    """A search runs the anytime order (a first pass over every feature: an early incumbent, and the bound
    of a search stopped early), but nothing can stop it before its inline slice ends unless its deadline
    comes first: there the plain order runs, with or without a callback or a later deadline. A deadline
    within the slice can stop the slice itself: the anytime order stays, with more work on monks1 at
    depth 4. All find the same optimum."""
    from optitree import datasets
    from optitree.exact import prepare

    monkeypatch.setattr(_search, "INLINE_SECONDS", 30.0)  # every search below ends inline
    X, y, _ = datasets.load("monks1")
    data = prepare(X, y)
    plain = solve(data, max_depth=4)
    watched = solve(data, max_depth=4, callback=lambda point: False)
    later = solve(data, max_depth=4, time_limit=60.0)
    within = solve(data, max_depth=4, time_limit=10.0)
    assert plain.status == watched.status == later.status == within.status == "optimal"
    assert plain.objective == watched.objective == later.objective == within.objective
    assert watched.work == plain.work == later.work
    assert within.work > plain.work


def test_a_search_without_limits_takes_the_first_pass_as_a_limited_one_does(monkeypatch):
    """Off the inline slice, a search without any limit runs the anytime order too: on breast_cancer at
    depth 4 its first pass reaches a perfect tree early, with the work of the same search under a time
    limit (the plain order needs about four times that work)."""
    from sklearn.datasets import load_breast_cancer

    monkeypatch.setattr(_search, "INLINE_SECONDS", 0.0)  # the whole search on its thread, in one order
    X, y = load_breast_cancer(return_X_y=True)
    unlimited = solve(X, y, max_depth=4)
    limited = solve(X, y, max_depth=4, time_limit=600.0)
    assert unlimited.status == limited.status == "optimal"
    assert unlimited.objective == limited.objective == 0
    assert unlimited.work == limited.work
