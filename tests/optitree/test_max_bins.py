"""``max_bins`` on the estimators: the engine's proof over quantile bin edges, stated on the certificate,
with a bound over every midpoint, and never a tree worse than CART's."""

import io

import numpy as np
import pytest
from sklearn.datasets import make_classification

import optitree.pipeline._progress as progress

from greedy import CARTClassifier, CARTRegressor, FeatureBinner
from optitree import OptimalTreeClassifier, OptimalTreeRegressor
from support.exact_bruteforce import brute_force
from support.regression_bruteforce import brute_force as regression_brute_force


def bin_codes(X, max_bins):
    """Each feature's quantile-bin code: splitting codes between two values is splitting X at a bin edge."""
    binner = FeatureBinner(max_bins).fit(X)
    return np.column_stack([np.searchsorted(edges, X[:, f], side="left") for f, edges in enumerate(binner.bin_edges_)])


def noisy_set(seed, n=40):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = ((X[:, 0] > 0.3) ^ (X[:, 1] < -0.2)).astype(int)
    y[rng.random(n) < 0.15] ^= 1
    return X, y


@pytest.mark.parametrize("seed", range(4))
def test_the_classifier_proves_the_binned_optimum_and_bounds_every_midpoint(seed):
    X, y = noisy_set(seed)
    clf = OptimalTreeClassifier(max_depth=2, max_bins=4).fit(X, y)
    r = clf.result_
    binned = brute_force(bin_codes(X, 4), y, np.ones(len(y)), 2, 0.0, 1, None)
    every = brute_force(X, y, np.ones(len(y)), 2, 0.0, 1, None)
    cart = int((CARTClassifier(max_depth=2, random_state=clf._seed()).fit(X, y).predict(X) != y).sum())
    errors = int((clf.predict(X) != y).sum())
    assert "max_bins=4" in r.split_space["thresholds"]
    assert r.split_space["all_midpoints_bound"] <= every + 1e-9
    assert errors <= cart and every <= errors
    if r.proven_optimal:  # the binned optimum, as brute force over the bin edges finds it
        assert errors == binned and r.objective == pytest.approx(binned) and r.status == "optimal"
    else:  # CART, between bin edges, beats the binned optimum: returned uncertified
        assert cart < binned and errors == cart and r.status == "error" and r.bound <= every + 1e-9


def test_the_regressor_never_returns_worse_than_cart_and_states_the_space():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(30, 2))
    y = np.sin(3 * X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=30)
    reg = OptimalTreeRegressor(max_depth=2, loss="squared", max_bins=3).fit(X, y)
    r = reg.result_
    sse = float(((reg.predict(X) - y) ** 2).sum())
    cart = CARTRegressor(max_depth=2, random_state=reg._seed()).fit(X, y)
    every = regression_brute_force(X, y, None, 2, 0.0, 1, None, "squared")
    assert sse <= float(((cart.predict(X) - y) ** 2).sum()) * (1 + 1e-9)
    assert r.objective == pytest.approx(sse, rel=1e-9) and r.bound <= every * (1 + 1e-9)
    assert "max_bins=3" in r.split_space["thresholds"] and r.split_space["all_midpoints_bound"] <= every * (1 + 1e-9)


def test_no_point_of_the_trace_or_the_progress_line_is_worse_than_cart(monkeypatch):
    """From 2 000 rows CART's tree is the fit's from the start, and over bins it stays the answer until the
    engine beats it (its thresholds lie between bin edges, so the engine's search cannot start from it)."""
    X, y = make_classification(n_samples=3000, n_features=5, random_state=0)
    clf = OptimalTreeClassifier(max_depth=2, max_bins=8).fit(X, y)
    cart = int((CARTClassifier(max_depth=2, random_state=clf._seed()).fit(X, y).predict(X) != y).sum())
    incumbents = [point["incumbent"] for point in clf.result_.trace]
    assert incumbents[0] <= cart and max(incumbents) <= cart and all(
        point["bound"] <= point["incumbent"] for point in clf.result_.trace)
    monkeypatch.setattr(progress, "QUIET_SECONDS", 0.0)
    stream = io.StringIO()
    watch = progress.FitWatch(verbose=1, label="errors", stream=stream)
    watch.engine_callback("engine", 1.0, held=224.0)({"incumbent": 1500.0, "bound": 300.0, "nodes": 1})
    assert "incumbent 224 errors  bound 224" in stream.getvalue()


@pytest.mark.parametrize("kwargs", [dict(max_bins=1), dict(max_bins=2.5), dict(max_bins="16"),
                                    dict(max_bins=8, acceleration="none"),
                                    dict(max_bins=8, constraints=lambda model, form: None),
                                    dict(max_bins=8, formulation="oct-h")])
def test_max_bins_where_it_cannot_hold_is_a_value_error(kwargs):
    X, y = noisy_set(0)
    with pytest.raises(ValueError, match="max_bins"):
        OptimalTreeClassifier(max_depth=2, **kwargs).fit(X, y)
