"""class_weight on OptimalTreeClassifier: scikit-learn's semantics, combined with sample_weight."""

import numpy as np
import pytest
from sklearn.utils.class_weight import compute_sample_weight

from optitree import OptimalTreeClassifier


def imbalanced(n=80, seed=0):
    """20 % positives; a depth-1 tree can only trade majority errors for minority errors."""
    rng = np.random.RandomState(seed)
    X = rng.rand(n, 2)
    y = np.where((X[:, 0] > 0.6) & (rng.rand(n) < 0.55) | (rng.rand(n) < 0.05), "pos", "neg")
    return X, y


@pytest.mark.parametrize("class_weight", ["balanced", {"pos": 3.0}, {"neg": 0.5, "pos": 2.0}])
@pytest.mark.parametrize("solver", ["dp", "highs"])
def test_class_weight_equals_the_sample_weights_it_stands_for(class_weight, solver):
    X, y = imbalanced()
    sw = np.random.RandomState(1).uniform(0.5, 2.0, len(y))
    kwargs = {"max_depth": 1, "solver": solver} | ({"acceleration": "none"} if solver == "highs" else {})
    weighted = OptimalTreeClassifier(class_weight=class_weight, **kwargs).fit(X, y, sample_weight=sw)
    manual = OptimalTreeClassifier(**kwargs).fit(X, y, sample_weight=sw * compute_sample_weight(class_weight, y))
    assert weighted.result_.objective == pytest.approx(manual.result_.objective, abs=1e-9)
    np.testing.assert_array_equal(weighted.predict(X), manual.predict(X))


def test_balanced_weights_favour_the_minority_class():
    X, y = imbalanced()
    plain = OptimalTreeClassifier(max_depth=1, solver="dp").fit(X, y)
    balanced = OptimalTreeClassifier(max_depth=1, solver="dp", class_weight="balanced").fit(X, y)
    assert (balanced.predict(X) == "pos").sum() > (plain.predict(X) == "pos").sum()


def test_bad_class_weight_raises():
    X, y = imbalanced()
    with pytest.raises(ValueError, match="class_weight"):
        OptimalTreeClassifier(class_weight="uniform").fit(X, y)
