"""Agreement with an independent exact solver (pycontree's ConTree, dynamic programming).

ConTree returns a tree with the fewest training errors at the given depth. So for every
MIP run: the MIP's tree never has fewer errors, its dual bound never exceeds ConTree's
optimum, and when the MIP proves optimality the error counts are equal.
"""

import functools

import numpy as np
import pytest
from sklearn.datasets import load_iris, load_wine

from optitree import OptimalTreeClassifier as _OptimalTreeClassifier

# These tests are about the MIP itself: the exact engine's proofs and starts are switched off
# (tests/optitree/test_acceleration.py tests the accelerated default against brute force).
OptimalTreeClassifier = functools.partial(_OptimalTreeClassifier, acceleration="none")

pycontree = pytest.importorskip("pycontree")


def contree_errors(X, y, depth):
    est = pycontree.ConTree(max_depth=depth, time_limit=600)
    est.fit(X, y)
    return int((est.predict(X) != y).sum())


def compare(X, y, formulation, depth=2, node_limit=2000, **kwargs):
    """Returns whether the MIP proved optimality (asserting agreement with ConTree)."""
    exact = contree_errors(X, y, depth)
    clf = OptimalTreeClassifier(max_depth=depth, formulation=formulation, node_limit=node_limit, **kwargs)
    clf.fit(X, y)
    baseline = len(y) - np.bincount(y).max()  # objective units: errors / baseline errors
    mip_errors = int((clf.predict(X) != y).sum())
    assert mip_errors == pytest.approx(clf.result_.normalized_objective * baseline, abs=1e-6)
    assert mip_errors >= exact
    assert clf.result_.normalized_bound * baseline <= exact + 1e-6
    if clf.result_.proven_optimal:
        assert mip_errors == exact
    return clf.result_.proven_optimal


def random_set(seed, max_samples=24):
    rng = np.random.RandomState(seed)
    n, f, k = rng.randint(12, max_samples + 1), rng.randint(2, 4), rng.randint(2, 4)
    X = rng.rand(n, f)
    y = rng.randint(0, k, n)
    y[:k] = np.arange(k)
    return X, y


# OCT's big-M relaxation is weak on label noise: smaller sets keep its proofs cheap
@pytest.mark.parametrize("formulation, max_samples", [("flow", 20), ("oct", 14)])
def test_random_sets_agree_with_contree(formulation, max_samples):
    proven = [compare(*random_set(seed, max_samples), formulation) for seed in range(3)]
    assert sum(proven) >= 2  # the comparison must not be vacuous


@pytest.mark.slow
@pytest.mark.parametrize("formulation", ["flow", "oct"])
@pytest.mark.parametrize("loader", [load_iris, load_wine], ids=["iris", "wine"])
def test_uci_sets_agree_with_contree(formulation, loader):
    X, y = loader(return_X_y=True)
    compare(X, y, formulation, node_limit=20000, time_limit=600)


@pytest.mark.slow
@pytest.mark.parametrize("formulation", ["flow", "oct"])
def test_more_random_sets_agree_with_contree(formulation):
    proven = [compare(*random_set(seed), formulation, node_limit=20000) for seed in range(3, 23)]
    assert sum(proven) >= 10
