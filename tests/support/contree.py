"""pycontree's ConTree as an independent exact peer: fewest training errors at a depth.

Importing this module skips the importing test module when pycontree is not installed.
"""

import numpy as np
import pytest

pycontree = pytest.importorskip("pycontree")


def rank_transform(X):
    """Dense ranks per feature: pycontree casts to float32, which would merge close values."""
    return np.column_stack([np.unique(X[:, j], return_inverse=True)[1] for j in range(X.shape[1])]).astype(float)


def contree_errors(X, y, depth):
    Xr = rank_transform(X)
    est = pycontree.ConTree(max_depth=depth, time_limit=600).fit(Xr, y)
    return int((est.predict(Xr) != y).sum())
