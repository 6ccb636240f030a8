"""The scikit-learn estimators: :class:`OptimalTreeClassifier` and :class:`OptimalTreeRegressor`.

They validate input and parameters, run one :class:`~optitree.pipeline.FitPipeline` and store
its outcome; prediction goes through the fitted :class:`greedy.Tree`.
"""

from ._classifier import OptimalTreeClassifier
from ._regressor import OptimalTreeRegressor

__all__ = ["OptimalTreeClassifier", "OptimalTreeRegressor"]
