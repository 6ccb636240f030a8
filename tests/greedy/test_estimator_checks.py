"""scikit-learn's estimator API checks for the greedy CART estimators (no expected failures)."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from greedy import CARTClassifier, CARTRegressor


@parametrize_with_checks(
    [CARTClassifier(), CARTRegressor(), CARTClassifier(criterion="entropy", max_leaf_nodes=8),
     CARTRegressor(criterion="absolute_error", max_depth=4)]
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
