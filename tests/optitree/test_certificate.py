"""Optimality certificates hold at any scale of targets and weights, and a false one is withdrawn.

Truth is a brute force over every tree of depth <= 2 with midpoint thresholds (numpy
only); the estimators' claims are checked against it after scaling targets and weights
by factors a solver's absolute tolerances cannot absorb.
"""

import warnings
from types import SimpleNamespace

import numpy as np
import pytest

from optitree import OptimalTreeClassifier, OptimalTreeRegressor
from optitree.pipeline._certificate import CertificateWarning, verify_certificate
from support.bruteforce import best_regression_loss, brute_force_errors, random_dataset


@pytest.mark.parametrize("scale", [pytest.param(1.0, marks=pytest.mark.slow), 1e6, 1e9, 1e15, 1e300])
def test_regressor_certificate_matches_brute_force_at_any_target_scale(scale):
    for seed in range(5):
        rng = np.random.default_rng(seed)
        X = rng.integers(0, 6, (16, 2)).astype(float)
        y = rng.normal(size=16) * scale
        with warnings.catch_warnings():
            warnings.simplefilter("error", CertificateWarning)
            reg = OptimalTreeRegressor(max_depth=2, loss="absolute", time_limit=None).fit(X, y)
        r = reg.result_
        baseline = np.abs(y - np.median(y)).sum()
        truth = best_regression_loss(X, y, np.arange(16), 2) / baseline
        assert r.proven_optimal and r.status == "optimal", (seed, r.summary())
        assert np.abs(y - reg.predict(X)).sum() / baseline == pytest.approx(truth, abs=1e-6), seed
        assert r.normalized_bound <= truth + 1e-6 and r.normalized_objective == pytest.approx(truth, abs=1e-6), seed


@pytest.mark.parametrize("formulation", ["oct", "flow"])
@pytest.mark.parametrize("weight", [1e-9, 1e9, 1e15])
def test_classifier_certificate_holds_for_tiny_and_huge_weights(formulation, weight):
    """Uniform weights of any size give the unit-weight optimum."""
    for seed in range(8):
        X, y = random_dataset(seed, max_samples=10)
        with warnings.catch_warnings():
            warnings.simplefilter("error", CertificateWarning)
            clf = OptimalTreeClassifier(max_depth=2, formulation=formulation, time_limit=None).fit(
                X, y, sample_weight=np.full(y.size, weight))
        assert clf.result_.proven_optimal, (seed, clf.result_.summary())
        assert int((clf.predict(X) != y).sum()) == brute_force_errors(X, y, 2), seed


def test_classifier_with_mixed_weight_magnitudes_is_right_or_says_so():
    """One sample weighs 1e12 times the others: the model's error rows then carry terms near
    the solver's tolerances. The tree must still be optimal, and a claim must be true."""
    X = np.array([[0.0], [1.0], [2.0], [3.0], [4.0], [5.0]])
    y = np.array([0, 1, 0, 1, 0, 1])
    w = np.array([1.0, 1.0, 1e12, 1.0, 1.0, 1.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf = OptimalTreeClassifier(max_depth=1, time_limit=None).fit(X, y, sample_weight=w)
    wrong = clf.predict(X) != y
    assert not wrong[2] and wrong.sum() == 2  # the best stump with sample 2 right (x <= 2.5 -> 0) errs twice
    truth = 2.0 / 3.0  # two unit errors over the baseline's three (class 1's weight)
    if clf.result_.proven_optimal:
        assert clf.result_.normalized_objective == pytest.approx(truth, abs=1e-9)
    else:
        assert any(issubclass(c.category, CertificateWarning) for c in caught)
        assert clf.result_.status != "optimal"


# ---------------------------------------------------------------------- the check itself
class _Claim(SimpleNamespace):
    """A stand-in result with a solution: its ``status`` is its ``termination``."""

    @property
    def status(self):
        return self.termination

    def apply_lower_bound(self, lower_bound):
        self.bound = max(self.bound, lower_bound)


def claim(objective=1.0, bound=1.0, status="optimal", proven=True):
    return _Claim(objective=objective, bound=bound, termination=status, proven_optimal=proven)


@pytest.mark.parametrize(
    "solver_objective, bound, exact, reason",
    [
        (0.5, 0.5, True, "differs from the returned tree"),  # solver thought it was better
        (1.0, 4.1, True, "bound 4.1 exceeds"),  # the false certificate
        (1.2, 1.0, False, "must underestimate"),  # an approximation above the exact value
    ],
)
def test_a_false_proof_is_withdrawn_with_a_warning(solver_objective, bound, exact, reason):
    result = claim(objective=1.0, bound=bound)
    with pytest.warns(CertificateWarning, match=reason):
        note = verify_certificate(result, solver_objective, rel_gap=0.0, exact=exact)
    assert "withdrawn" in note
    assert not result.proven_optimal and result.status == "error"


def test_a_true_proof_is_kept_and_an_open_gap_is_not_a_proof():
    kept = claim(objective=0.7, bound=0.7 - 1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert verify_certificate(kept, 0.7, rel_gap=0.0, exact=True) is None
        assert kept.proven_optimal and kept.status == "optimal"
        # squared error: the tangent model underestimates; its optimum leaves a gap to the exact loss
        approx = claim(objective=0.7, bound=0.69)
        note = verify_certificate(approx, 0.695, rel_gap=0.0, exact=False)
        assert "not proven optimal" in note and not approx.proven_optimal and approx.status == "error"
        assert verify_certificate(claim(objective=0.7, bound=0.69), 0.695, rel_gap=0.02, exact=False) is None
    unproven = claim(status="time_limit", proven=False, bound=0.2)
    assert verify_certificate(unproven, 1.0, rel_gap=0.0, exact=True) is None
    assert unproven.status == "time_limit"


def test_a_bound_on_the_objective_grid_proves_a_tree_the_solver_priced_within_its_tolerance():
    """Objectives are multiples of g = 0.25: a bound of 0.749999 (solver objective 0.749999, the
    tree's 0.75) is a bound of 0.75, which proves the tree; without the grid the claim is withdrawn."""
    result = claim(objective=0.75, bound=0.749999)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert verify_certificate(result, 0.749999, rel_gap=0.0, exact=True, granularity=0.25) is None
    assert result.proven_optimal and result.bound == 0.75
    far = claim(objective=0.75, bound=0.3)  # rounds up to 0.5 only: the gap stays open
    assert "not proven optimal" in verify_certificate(far, 0.75, rel_gap=0.0, exact=True, granularity=0.25)
    assert far.bound == 0.5 and not far.proven_optimal
    with pytest.warns(CertificateWarning, match="differs from the returned tree"):
        verify_certificate(claim(objective=0.75, bound=0.749999), 0.749999, rel_gap=0.0, exact=True)
    with pytest.warns(CertificateWarning, match="differs from the returned tree"):  # a solver objective far off
        verify_certificate(claim(objective=0.75, bound=0.5), 0.5, rel_gap=0.0, exact=True, granularity=0.25)


def test_a_lying_solver_is_caught_end_to_end(monkeypatch):
    from optitree.solvers import HighsBackend

    real = HighsBackend._solve

    def lying(self, options, on_event):
        result, x = real(self, options, on_event)
        result.bound = result.objective + 1.0  # "optimal", with a bound above its own solution
        return result, x

    monkeypatch.setattr(HighsBackend, "_solve", lying)
    X, y = random_dataset(0, max_samples=10)
    with pytest.warns(CertificateWarning, match="exceeds"):
        clf = OptimalTreeClassifier(max_depth=1, time_limit=None, acceleration="none").fit(X, y)
    assert not clf.result_.proven_optimal and clf.result_.status == "error"
    assert "withdrawn" in clf.result_.message
