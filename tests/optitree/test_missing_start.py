"""NaN in X: the fit is never worse on the training data than its greedy CART start.

Greedy CART splits a NaN row between both children (``missing_left`` fractions); the split
space (:mod:`optitree.split_space`) sends it to one side, and a proof holds over that space
only. When CART, as it predicts, beats the space's optimum the fit returns CART, uncertified,
and ``result_.split_space`` says which space the tree and the proof hold over. Training losses
are recomputed here with numpy from ``predict`` on the training data, with the fit's weights.
"""

import numpy as np
import pytest

from greedy import CARTClassifier, CARTRegressor
from optitree import OptimalTreeClassifier, OptimalTreeRegressor

OUTSIDE = "outside the split space"


def nan_data(seed):
    """40-200 rows, 2-4 features with 10-30 % NaN, a noisy interaction target; weights 1-3 on odd seeds."""
    rng = np.random.default_rng(seed)
    n, p, depth = int(rng.integers(40, 201)), int(rng.integers(2, 5)), int(rng.integers(2, 4))
    X = rng.normal(size=(n, p))
    target = X[:, 0] + 0.5 * X[:, 1] * X[:, -1] + rng.normal(scale=0.7, size=n)
    X[rng.random((n, p)) < rng.uniform(0.1, 0.3)] = np.nan
    w = rng.integers(1, 4, size=n).astype(float) if seed % 2 else np.ones(n)
    return X, target, w, depth


def check_space_report(result):
    """A proof names the split space; a tree outside it carries no proof, and the space's result is kept."""
    space = result.split_space
    if result.proven_optimal:
        assert space["tree"] == "in the split space"
        assert "the proof holds over the split space" in result.message
    if OUTSIDE in space["tree"]:
        assert not result.proven_optimal and result.bound <= result.objective
        assert space["space_optimum"]["objective"] > result.objective
        assert "split space:" in result.summary() and OUTSIDE in result.summary()


@pytest.mark.parametrize("min_samples_leaf", [1, 5])
def test_classifier_never_worse_than_its_cart_start(min_samples_leaf):
    for seed in range(20):
        X, target, w, depth = nan_data(seed)
        y = (target > 0).astype(int)
        est = OptimalTreeClassifier(max_depth=depth, min_samples_leaf=min_samples_leaf, time_limit=20)
        est.fit(X, y, sample_weight=w)
        cart = CARTClassifier(max_depth=depth, min_samples_leaf=min_samples_leaf, random_state=est._seed())
        cart.fit(X, y, sample_weight=w)
        fitted, start = w @ (est.predict(X) != y), w @ (cart.predict(X) != y)
        assert fitted <= start + 1e-9, seed
        assert est.result_.objective == pytest.approx(fitted, abs=1e-9)  # weighted errors, the data's units
        check_space_report(est.result_)


def test_regressor_never_worse_than_its_cart_start():
    for seed in [*range(14), 56, 91]:  # CART beats the proven space optimum at 56 and 91
        X, y, w, depth = nan_data(seed)
        est = OptimalTreeRegressor(max_depth=depth, loss="squared", time_limit=20).fit(X, y, sample_weight=w)
        cart = CARTRegressor(criterion="squared_error", max_depth=depth, random_state=est._seed())
        cart.fit(X, y, sample_weight=w)
        fitted, start = w @ (est.predict(X) - y) ** 2, w @ (cart.predict(X) - y) ** 2
        assert fitted <= start * (1 + 1e-9), seed
        check_space_report(est.result_)


def test_cart_better_than_the_proven_space_optimum_is_returned_uncertified():
    X, target, _, depth = nan_data(20)  # 183 rows, 2 features with 22 % and 14 % NaN, depth 2
    y = (target > 0).astype(int)
    cart = CARTClassifier(max_depth=depth, random_state=0).fit(X, y)
    assert (cart.predict(X) != y).sum() == 31
    est = OptimalTreeClassifier(max_depth=depth, solver="dp").fit(X, y)
    optimum = est.result_.split_space["space_optimum"]  # objectives in the data's units: errors
    assert optimum["proven_optimal"] and optimum["objective"] == pytest.approx(36)
    assert (est.predict(X) != y).sum() == 31
    np.testing.assert_allclose(est.predict_proba(X), cart.predict_proba(X))
    assert est.result_.status == "error" and not est.result_.proven_optimal
    start = est.result_.split_space["start"]
    assert start["source"] == "cart" and start["objective"] == pytest.approx(31)
    assert start["objective_in_space"] == pytest.approx(38)  # each NaN to CART's larger side
    check_space_report(est.result_)
    plain = OptimalTreeClassifier(max_depth=depth, solver="dp", init=None).fit(X, y)
    assert plain.result_.proven_optimal and (plain.predict(X) != y).sum() == 36
    check_space_report(plain.result_)
