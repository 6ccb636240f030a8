"""Inputs shared by the greedy and the optimal estimators: text columns refused, categorical columns coded.

Text columns in ``X`` are refused by name, with the fix, before numpy or scikit-learn meet them. A
split is a threshold on numbers (or a subset of a categorical column's codes), so a column of strings
has no meaning until the user says which: categories (``X["col"] = X["col"].astype("category")``) or
numbers. A pandas categorical column becomes its category codes (:func:`encode_category_columns`);
at prediction an array may hold those codes itself (:func:`check_category_codes`).
"""

from __future__ import annotations

import sys

import numpy as np

__all__ = ["check_text_columns", "encode_category_columns", "check_category_codes", "nan_seen"]


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


def encode_category_columns(X, categories: dict, unseen: float | None = None):
    """A copy of the DataFrame ``X`` with its categorical columns replaced by float category codes.

    Parameters
    ----------
    X : pandas.DataFrame
    categories : dict
        ``{column index: category labels seen in fit}``; a label's code is its position.
    unseen : float or None
        The code of a label not among them; None: the first code past them, ``len(labels)``.

    Returns
    -------
    pandas.DataFrame
        NaN for a missing value. Columns past ``X``'s last are skipped (``validate_data``
        then reports the wrong number of features).
    """
    pd = sys.modules["pandas"]  # a DataFrame implies pandas is imported
    X, dtypes = X.copy(), X.dtypes
    for i, labels in categories.items():
        if i >= X.shape[1]:
            break
        column, dtype = X.iloc[:, i], dtypes.iloc[i]
        if isinstance(dtype, pd.CategoricalDtype) and dtype.categories.equals(pd.Index(labels)):
            codes = column.array.codes  # positions among the labels of fit already; -1 for a missing value
            X.isetitem(i, np.where(codes < 0, np.nan, codes.astype(np.float64)))
            continue
        missing = column.isna().to_numpy()
        codes = pd.Index(labels).get_indexer(column.astype(object)).astype(np.float64)
        codes[(codes < 0) & ~missing] = len(labels) if unseen is None else unseen
        codes[missing] = np.nan
        X.isetitem(i, codes)
    return X


def check_category_codes(X: np.ndarray, features, limit: float = np.inf) -> None:
    """Raise ValueError unless the categorical ``features`` of ``X`` hold integer codes in ``[0, limit)`` or NaN.

    The codes of an array given where the estimator was fitted on a DataFrame's categorical
    columns (:func:`encode_category_columns`'s): the position of a category in ``fit``'s.
    """
    for f in features:
        known = X[:, f][~np.isnan(X[:, f])]
        bad = (known < 0) | (known >= limit) | (known != np.floor(known))
        if bad.any():
            below = "" if limit == np.inf else f" in [0, {limit})"
            raise ValueError(f"categorical feature {f} must hold integer codes{below} (the category's position "
                             f"among those seen in fit) or NaN; got {known[bad][0]!r}")


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
