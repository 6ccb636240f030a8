"""The depth-2 kernels' paths for more than two classes and for unit weights, against brute force and pycontree.

The class sweeps (``sweep_classes`` in cpp/sweep.hpp: rows as 16-byte cells, each side compacted
without branches) serve every misclassification problem of three classes or more on the sweep
kernel; the pair-count kernel counts unit-weight rows by bitsets (``pair_counts_by_bits`` in
cpp/pairs.hpp), over several 64-row words from 65 rows on.
"""

import numpy as np
import pytest

from optitree.exact import prepare, solve
from optitree.exact import _search as search_module
from optitree.exact._binary import pair_columns
from support.exact_bruteforce import brute_force, check_tree, relabel, tree_cost


@pytest.mark.parametrize("pairs", [True, False])
def test_few_valued_features_over_several_words_equal_brute_force(pairs, monkeypatch):
    """65-200 rows of 3-5 classes on features of 2-4 values (the last bitset word partly filled), unit
    weights (bitsets) or not (row counts); ``pairs=False``: the same sets on the class sweeps."""
    if not pairs:
        monkeypatch.setattr(search_module, "pair_columns", lambda data: None)
    for seed in range(24):
        rng = np.random.RandomState(seed)
        n, p, k = rng.randint(65, 201), rng.randint(2, 4), rng.randint(3, 6)
        X = rng.randint(0, rng.randint(2, 5), size=(n, p)).astype(float)
        y = relabel(np.where(rng.rand(n) < 0.6, (X.sum(axis=1) % k).astype(int), rng.randint(0, k, n)))
        w = None if seed % 3 else rng.choice([1.0, 2.0, 3.0], size=n)
        opts = dict(max_depth=int(rng.randint(2, 4)), alpha=float(rng.choice([0.0, 0.0, 1.5])),
                    min_samples_leaf=int(rng.choice([1, 1, 4])), allowed_features=None)
        if pairs:
            assert pair_columns(prepare(X, y, w)) is not None
        expected = brute_force(X, y, w, **opts)
        res = solve(X, y, w, **opts)
        assert res.status == "optimal", seed
        assert res.objective == pytest.approx(expected, abs=1e-9), seed
        assert tree_cost(res.tree, X, y, w, opts["alpha"]) == pytest.approx(res.objective, abs=1e-9), seed
        check_tree(res.tree, X, y, w, opts)


def test_class_sweeps_equal_brute_force_with_real_weights():
    """3-5 classes on features of many values (the sweep kernel), real weights and a minimum leaf size."""
    for seed in range(30):
        rng = np.random.RandomState(1000 + seed)
        n, p, k = rng.randint(8, 30), rng.randint(1, 4), rng.randint(3, 6)
        X = rng.normal(size=(n, p)).round(1)
        y = relabel(rng.randint(0, k, n))
        w = rng.uniform(0.2, 3.0, n) if seed % 2 else None
        opts = dict(max_depth=int(rng.randint(1, 4)), alpha=float(rng.choice([0.0, 0.7])),
                    min_samples_leaf=int(rng.choice([1, 1, 2, 3])), allowed_features=None)
        expected = brute_force(X, y, w, **opts)
        res = solve(X, y, w, **opts)
        assert res.objective == pytest.approx(expected, rel=1e-12, abs=1e-9), seed
        check_tree(res.tree, X, y, w, opts)


@pytest.mark.parametrize("k", [3, 4, 5])
def test_class_sweeps_equal_pycontree(k):
    """150-250 rows of k classes on real features, depths 2 and 3: pycontree's optimum."""
    pycontree = pytest.importorskip("pycontree")
    from support.contree import contree_errors
    del pycontree
    for seed in range(3):
        rng = np.random.RandomState(100 * k + seed)
        n = rng.randint(150, 251)
        X = rng.normal(size=(n, 5)).round(2)
        y = relabel(np.where(rng.rand(n) < 0.5, (X[:, 0] > 0) + (X[:, 1] > 0.5) * 2, rng.randint(0, k, n)) % k)
        for depth in (2, 3):
            assert solve(X, y, max_depth=depth).objective == contree_errors(X, y, depth), (seed, depth)
