"""optitree.exact with max_bins: the proof holds over the bins' edges, a lower bound holds over every midpoint."""

import numpy as np
import pytest

from greedy import FeatureBinner
from optitree.exact import prepare, solve
from support.exact_bruteforce import brute_force, relabel


@pytest.mark.parametrize("bad", [0, 1, 2.5, True, "8", 70000])
def test_a_max_bins_that_is_not_an_integer_of_at_least_2_is_a_value_error(bad):
    X, y = np.arange(10.0)[:, None], np.arange(10) % 2
    with pytest.raises(ValueError, match="max_bins"):
        solve(X, y, max_depth=1, max_bins=bad)


def test_features_with_fewer_distinct_values_than_bins_keep_every_midpoint():
    rng = np.random.RandomState(0)
    X = np.c_[rng.rand(300), rng.randint(0, 6, 300), rng.rand(300)]
    data, full = prepare(X, rng.randint(0, 2, 300), max_bins=8), prepare(X, rng.randint(0, 2, 300))
    assert data.binned.tolist() == [True, False, True]
    assert np.array_equal(data.thresholds[1], full.thresholds[1])
    assert len(data.thresholds[0]) <= 7 and set(data.thresholds[0]) <= set(full.thresholds[0])
    assert solve(X, rng.randint(0, 2, 300), max_depth=1).split_space == "every midpoint"


def instance(seed):
    rng = np.random.RandomState(seed)
    n, p = rng.randint(10, 19), rng.randint(1, 3)
    X = np.round(rng.rand(n, p) * 20, 0)
    y = relabel(rng.randint(0, rng.randint(2, 4), n))
    w = None if rng.rand() < 0.5 else rng.choice([0.5, 1.0, 2.0], n)
    opts = dict(max_depth=int(rng.randint(1, 4)), alpha=float(rng.choice([0.0, 0.5])), min_samples_leaf=1,
                allowed_features=None)
    return X, y, w, opts, int(rng.choice([2, 3, 4]))


def test_the_binned_optimum_is_the_brute_force_one_over_the_bins_and_bounds_every_midpoint():
    """Over the bins: the brute-forced optimum of the bin codes (the same partitions). Over every midpoint: the
    brute-forced optimum lies between all_midpoints_bound and the binned objective."""
    derived = 0
    for seed in range(150):
        X, y, w, opts, bins = instance(seed)
        res = solve(X, y, w, max_bins=bins, **opts)
        codes = FeatureBinner(bins).fit(X).transform(X).T.astype(float)
        assert res.status == "optimal"
        assert res.objective == pytest.approx(brute_force(codes, y, w, **opts), abs=1e-9), seed
        everywhere = brute_force(X, y, w, **opts)
        assert everywhere <= res.objective + 1e-9
        assert res.all_midpoints_bound is not None and res.all_midpoints_bound <= everywhere + 1e-9, seed
        derived += res.all_midpoints_bound > 0 and res.split_space != "every midpoint"
    assert derived > 20


def test_regression_bins_bound_every_midpoint():
    for seed in range(60):
        rng = np.random.RandomState(seed)
        X, _, w, opts, bins = instance(seed)
        y = np.round(rng.normal(size=X.shape[0]), 1)
        res = solve(X, y, w, loss="squared", max_bins=bins, **opts)

        def sse(rows):
            ww = np.ones(len(y))[rows] if w is None else w[rows]
            return float((ww * (y[rows] - np.average(y[rows], weights=ww)) ** 2).sum())

        everywhere = brute_force(X, y, w, leaf=lambda rows: sse(np.array(sorted(rows))), **opts)
        assert res.all_midpoints_bound <= everywhere + 1e-9 <= res.objective + 2e-9, seed


def test_no_all_midpoints_bound_with_a_leaf_size_minimum():
    X, y, w, opts, bins = instance(3)
    res = solve(X, y, w, max_bins=2, **{**opts, "min_samples_leaf": 2})
    assert res.all_midpoints_bound is None and res.split_space.startswith("max_bins=2")


def test_a_start_is_read_in_the_bins_or_not_at_all():
    """A start's split lands on the rank of its partition of the rows: at a bin edge, the bin below it; inside a
    bin, no split of the binned space sends the same rows left, so the start is not read (None)."""
    from greedy import Tree
    from optitree.exact._tree import from_tree

    X = np.arange(40.0)[:, None]
    data = prepare(X, np.arange(40) % 2, max_bins=4)
    edges = data.thresholds[0]

    def stump(t):
        return Tree([1, -1, -1], [2, -1, -1], [0, -2, -2], [t, np.nan, np.nan], [[1, 1], [1, 0], [0, 1]], n_features=1)

    for r, edge in enumerate(edges):
        f, rank, _, _ = from_tree(data, stump(edge))
        assert (f, rank) == (0, r)
        assert np.array_equal(data.rank[0] <= rank, X[:, 0] <= edge)
    assert from_tree(data, stump(edges[0] + 1.0)) is None
    assert from_tree(prepare(X, np.arange(40) % 2), stump(edges[0] + 1.0)) is not None
