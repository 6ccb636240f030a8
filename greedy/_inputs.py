"""Text columns in ``X``: refused by name, with the fix, before numpy or scikit-learn meet them.

A split is a threshold on numbers (or, for greedy trees, a subset of a categorical column's
codes), so a column of strings has no meaning until the user says which: categories
(``X["col"] = X["col"].astype("category")``) or numbers. Shared by the greedy and the optimal
estimators (``fit`` and ``predict``).
"""

from __future__ import annotations

import sys

import numpy as np

__all__ = ["check_text_columns", "nan_seen"]


def _is_text(values) -> bool:
    """Whether ``values`` hold strings that are not numbers (other objects are left to scikit-learn's checks)."""
    try:
        np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        return any(isinstance(v, (str, bytes)) for v in np.ravel(np.asarray(values, dtype=object)))
    return False


def check_text_columns(X) -> None:
    """Raise ValueError naming the columns of ``X`` that hold text (object or string values not numbers).

    pandas columns of dtype ``object`` or ``string`` and numpy arrays of dtype ``object`` or
    ``str`` are checked; columns whose values all convert to float (numbers stored as objects)
    pass, as scikit-learn's validation would take them.
    """
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(X, pd.DataFrame):
        bad = [name for name, dtype in X.dtypes.items()
               if (dtype == object or isinstance(dtype, pd.StringDtype)) and _is_text(X[name].to_numpy(object))]
        if bad:
            listed = ", ".join(repr(b) for b in bad)
            raise ValueError(
                f"column(s) {listed} of X hold text (dtype object or string); a tree splits numbers or categories: "
                f"convert them, e.g. X[{bad[0]!r}] = X[{bad[0]!r}].astype('category') (categorical splits), or map "
                f"them to numbers")
        return
    if isinstance(X, np.ndarray) and X.dtype.kind in "OUS" and X.ndim == 2:
        bad = [j for j in range(X.shape[1]) if _is_text(X[:, j])]
        if bad:
            raise ValueError(
                f"column(s) {bad} of X hold text; a tree splits numbers or categories: pass a pandas DataFrame with "
                f"those columns as dtype 'category' (e.g. df[col] = df[col].astype('category')), or map them to "
                f"numbers")


def nan_seen(tree, X, sample_weight) -> np.ndarray | None:
    """Per node of ``tree``: whether a training row of positive weight reached it with NaN in its split feature.

    None when the tree has no missing-value routing (``missing_left``). The exports print a
    node's NaN routing only where it is True: elsewhere the routing is the children's
    training weights, an inference no NaN of the training data made.
    """
    if tree.missing_left is None:
        return None
    rows = np.flatnonzero(np.asarray(sample_weight) > 0)
    reach = tree.node_weights(X[rows]).tocsc()  # rows x nodes, NaN rows reaching both children
    seen = np.zeros(tree.node_count, bool)
    for node in np.flatnonzero(~tree.is_leaf):
        f = int(tree.feature[node])
        if f < 0:  # an oblique split: any NaN among the rows that reach it
            at = reach.indices[reach.indptr[node]:reach.indptr[node + 1]]
            seen[node] = bool(np.isnan(X[rows[at]]).any())
            continue
        at = reach.indices[reach.indptr[node]:reach.indptr[node + 1]]
        seen[node] = bool(np.isnan(X[rows[at], f]).any())
    return seen
