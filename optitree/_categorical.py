"""pandas categorical columns for the optimal estimators: ordinal codes in the categories' order.

A MIP split is a threshold, so a categorical column enters the model as its category codes
(``0 .. n_categories - 1`` in the order of ``Series.cat.categories``: the declared order of an
ordered categorical, the sorted labels otherwise). A split ``code <= 1.5`` sends the first two
categories left; :func:`optitree.export_text` and :func:`optitree.plot_tree` print it as
``color in {red, green}`` from the estimator's ``categories_``. Missing values and categories
unseen in ``fit`` raise ValueError (the model has no routing for them); so do text columns
(object or string dtype), named, with the fix (``astype("category")``).
"""

from __future__ import annotations

import sys

import numpy as np

from greedy._inputs import check_text_columns

__all__ = ["encode_categories"]


def encode_categories(X, categories=None):
    """Replace the pandas categorical columns of ``X`` by their codes.

    Parameters
    ----------
    X : array-like or pandas.DataFrame
    categories : dict or None
        ``{column index: category labels}`` seen in ``fit`` (prediction), or None (fit:
        taken from ``X``'s categorical dtypes).

    Returns
    -------
    X : array-like or pandas.DataFrame
        ``X`` itself when it has nothing to encode, else a copy with float code columns.
    categories : dict
        ``{column index: ndarray of category labels}`` (empty when ``X`` has none).
    """
    check_text_columns(X)
    pd = sys.modules.get("pandas")  # a DataFrame implies pandas is imported
    if pd is None or not isinstance(X, pd.DataFrame):
        if categories:
            raise ValueError(f"X must be a pandas DataFrame: columns {sorted(categories)} were categorical in fit")
        return X, {} if categories is None else categories
    if categories is None:
        categories = {i: np.asarray(X.iloc[:, i].cat.categories)
                      for i, dtype in enumerate(X.dtypes) if isinstance(dtype, pd.CategoricalDtype)}
    if not categories:
        return X, categories
    X = X.copy()
    for i, labels in categories.items():
        if i >= X.shape[1]:
            break  # validate_data reports the wrong number of features
        column = X.iloc[:, i]
        if column.isna().any():
            raise ValueError(f"categorical column {X.columns[i]!r} has missing values; the optimal trees need "
                             "complete data (fill them or add a category for them)")
        codes = pd.Index(labels).get_indexer(column.astype(object))
        if (codes < 0).any():
            unseen = sorted(map(str, set(column.astype(object)[codes < 0])))
            raise ValueError(f"categorical column {X.columns[i]!r} has categories unseen in fit: {unseen}")
        X.isetitem(i, codes.astype(np.float64))
    return X, categories
