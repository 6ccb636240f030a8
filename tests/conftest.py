"""Hypothesis profiles for the property suite (``tests/optitree/test_properties.py``) and shared fixtures.

``ci`` (default): a short deterministic run. ``long``: many random cases, for a release or
after a change to input handling::

    OPTITREE_HYPOTHESIS_PROFILE=long python -m pytest tests/optitree/test_properties.py -p no:cacheprovider
"""

import os

import pytest
from hypothesis import HealthCheck, settings
from sklearn.datasets import load_iris
from sklearn.tree import DecisionTreeClassifier

from greedy import Tree

_COMMON = dict(deadline=None, database=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.filter_too_much])
settings.register_profile("ci", max_examples=30, derandomize=True, **_COMMON)
settings.register_profile("long", max_examples=1500, **_COMMON)
settings.load_profile(os.environ.get("OPTITREE_HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="module")
def iris_tree():
    """Iris, scikit-learn's depth-3 tree on it, and that tree as a :class:`greedy.Tree`."""
    X, y = load_iris(return_X_y=True)
    est = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
    return X, y, est, Tree.from_sklearn(est)
