"""The root-slab bound of a stopped deep search (optitree.exact._slab_bound): never above the optimum,
with a split cost and a minimum leaf size too, deterministic under a work limit, not taken under
per-node features. Its constants are shrunk so that tiny problems take it."""

import numpy as np
import pytest

from optitree.exact import _api as api
from optitree.exact import _slab_bound as slab
from optitree.exact import prepare, solve
from optitree.exact._search import Search
from support.exact_bruteforce import brute_force, random_instance


@pytest.fixture
def small_slabs(monkeypatch):
    """Pieces of 16 rows, merged up to 64, from 32 rows at depth 3 (pieces solved at depth 2), for every stopped search."""
    monkeypatch.setattr(slab, "SLAB_ROWS", 16)
    monkeypatch.setattr(slab, "SLAB_MIN_ROWS", 32)
    monkeypatch.setattr(slab, "SLAB_MIN_DEPTH", 3)
    monkeypatch.setattr(slab, "MAX_MERGED_ROWS", 64)
    monkeypatch.setattr(api, "SLAB_SKIP_SHARE", np.inf)  # the slab bound however near its proof the search is


def recorded_slab_bounds(monkeypatch):
    bounds = []
    original = api._slab_bound

    def recorded(*args):
        bounds.append(original(*args))
        return bounds[-1]

    monkeypatch.setattr(api, "_slab_bound", recorded)
    return bounds


def test_slab_bound_never_exceeds_brute_force(monkeypatch):
    """Pieces of 3 rows bounded by their depth-(D-1) brute-force optimum (no alpha, no leaf size), merged
    until the least feature is one piece: the bound stays below the brute-force optimum of the whole
    problem under its alpha and minimum leaf size (depths 2 and 3, weights, ties); most are positive."""
    monkeypatch.setattr(slab, "SLAB_ROWS", 3)
    positive = 0
    for seed in range(150):
        X, y, w, opts = random_instance(seed, max_rows=14, depth=2 + seed % 2)
        allowed = opts["allowed_features"]
        mask = np.ones(X.shape[1], bool) if allowed is None else np.atleast_2d(allowed)[0]
        depth = opts["max_depth"]
        data = prepare(X, y, w)
        alpha = opts["alpha"] / data.scale  # engine units, as data.weight

        def solve_piece(rows):
            return brute_force(data.X[rows], data.y[rows], data.weight[rows], depth - 1, 0.0, 1, mask), True

        leaf = Search(data, np.tile(mask, (2**depth - 1, 1)), alpha, 1, np.inf, None).leaf_cost(data.view)
        bound = slab.root_slab_bound(data, data.view, mask, alpha, leaf, solve_piece, np.inf)
        optimum = brute_force(data.X, data.y, data.weight, depth, alpha, opts["min_samples_leaf"], mask)
        assert bound <= optimum + 1e-9, seed
        positive += bound > 0
    assert positive >= 50


def noisy_instance(seed, n):
    """Two noisy classes over 3 features with ties; random weights, alpha and minimum leaf size."""
    rng = np.random.RandomState(seed)
    X = rng.randint(0, 15, size=(n, 3)).astype(float)
    y = ((X[:, 0] + X[:, 1] + rng.randn(n) * 10) > 14).astype(int)
    w = None if seed % 2 else rng.choice([1.0, 2.0, 3.0], n)
    return X, y, w, dict(alpha=float(rng.choice([0.0, 1.5, 4.0])), min_samples_leaf=int(rng.choice([1, 4, 8])))


@pytest.mark.parametrize("seed", range(10))
def test_stopped_search_with_slab_bound_stays_below_the_optimum(monkeypatch, small_slabs, seed):
    """Depth 3 on 100-200 rows stopped by a work limit: every slab bound taken, and the bound reported, stay
    below the optimum the unlimited search proves (alpha and minimum leaf sizes included); some are positive."""
    bounds = recorded_slab_bounds(monkeypatch)
    X, y, w, opts = noisy_instance(seed, 100 + 20 * seed)
    optimum = solve(X, y, w, max_depth=3, **opts).objective
    for work_limit in (1_000, 5_000, 20_000):
        res = solve(X, y, w, max_depth=3, work_limit=work_limit, **opts)
        assert res.bound <= optimum + 1e-9
        assert res.objective >= optimum - 1e-9
    scale = prepare(X, y, w).scale
    assert bounds and all(b * scale <= optimum + 1e-9 for b in bounds)
    assert any(b > 0 for b in bounds)


def test_work_limit_gives_the_same_slab_bound_and_a_rising_trace(monkeypatch, small_slabs):
    """Two runs under one work limit (the slab bound cut part way) give the same tree and bound; the trace's
    bounds never fall and the slab bound rises in it before the final point."""
    bounds = recorded_slab_bounds(monkeypatch)
    X, y, w, _ = noisy_instance(11, 300)
    runs = [solve(X, y, w, max_depth=3, work_limit=20_000) for _ in range(2)]
    assert runs[0].status == "work_limit"
    assert runs[0].bound == runs[1].bound and runs[0].objective == runs[1].objective
    assert bounds[0] == bounds[1] > 0
    trace_bounds = [b for _, _, b in runs[0].trace]
    assert trace_bounds == sorted(trace_bounds)
    assert len({b for b in trace_bounds[:-1] if b > 0}) >= 2  # several rises before the end


def test_no_slab_bound_under_per_node_features(monkeypatch, small_slabs):
    """Pieces are solved with one feature mask, so per-node features take no slab bound."""
    def refuse(*args):
        raise AssertionError("slab bound under per-node features")

    monkeypatch.setattr(api, "_slab_bound", refuse)
    X, y, w, _ = noisy_instance(11, 300)
    allowed = np.ones((7, 3), bool)
    allowed[1, 0] = False
    res = solve(X, y, w, max_depth=3, allowed_features=allowed, work_limit=5_000)
    assert res.status == "work_limit" and res.bound <= res.objective


def test_no_slab_bound_on_a_finished_search(monkeypatch, small_slabs):
    def refuse(*args):
        raise AssertionError("slab bound after a finished search")

    monkeypatch.setattr(api, "_slab_bound", refuse)
    X, y, w, _ = noisy_instance(4, 60)
    assert solve(X, y, w, max_depth=3, time_limit=60).status == "optimal"


def test_pieces_take_no_split_cost(monkeypatch, small_slabs):
    """A noisy XOR of two features with a split cost: a piece of any feature's order needs splits of its
    own, so pieces solved with alpha would sum to many alphas, more than the optimum's few splits."""
    bounds = recorded_slab_bounds(monkeypatch)
    rng = np.random.RandomState(0)
    X = rng.rand(300, 3)
    y = ((X[:, 0] > 0.5) ^ (X[:, 1] > 0.5) ^ (rng.rand(300) < 0.03)).astype(int)
    optimum = solve(X, y, max_depth=3, alpha=2.0).objective
    for work_limit in (500, 2_000, 5_000):
        assert solve(X, y, max_depth=3, alpha=2.0, work_limit=work_limit).bound <= optimum
    assert len(bounds) == 3 and max(bounds) <= optimum


def test_a_search_near_its_proof_goes_on_instead_of_the_slab_bound(monkeypatch):
    """4 000 rows at depth 4 under twice the work of a full search: at 20 % of it the search's own bound is
    above SLAB_SKIP_SHARE of its tree, so it searches on (from its cache) instead of spending the 80 % on
    slabs, and proves the full search's optimum; the same result every run."""
    def refuse(*args):
        raise AssertionError("slab bound for a search near its proof")

    monkeypatch.setattr(api, "_slab_bound", refuse)
    rng = np.random.RandomState(0)
    X = rng.randint(0, 6, size=(4000, 5)).astype(float)
    y = (((X[:, 0] > 2) ^ (X[:, 1] > 3)) | (rng.rand(4000) < 0.1)).astype(int)
    full = solve(X, y, max_depth=4)
    assert full.status == "optimal" and slab.slab_bound_applies(len(y), 4)
    runs = [solve(X, y, max_depth=4, work_limit=2 * full.work) for _ in range(2)]
    for r in runs:
        assert r.status == "optimal" and r.objective == full.objective == r.bound
    assert runs[0].work == runs[1].work
    assert [b for _, _, b in runs[0].trace] == sorted(b for _, _, b in runs[0].trace)
