"""Inputs of the optimal estimators: pandas categorical columns as codes, sample weights made safe.

A categorical column enters as its category codes (``0 .. n_categories - 1`` in the order of
``Series.cat.categories``: the declared order of an ordered categorical, the sorted labels
otherwise), a missing value as NaN; the fit's split space (:mod:`optitree.split_space`) then
splits it on subsets of its categories, and routes NaN to a learned side.
:func:`optitree.export_text` and :func:`optitree.plot_tree` print such a split as
``color in {red, green}`` from the estimator's ``categories_``. A category unseen in ``fit``
gets a code past the known ones, which the tree sends to its ``default_left`` side. At prediction a
numeric array (no DataFrame) holds these codes itself, as greedy CART takes them. Text columns
(object or string dtype) are refused, named, with the fix (``astype("category")``).
"""

from __future__ import annotations

import sys

import numpy as np

from greedy._inputs import check_text_columns, encode_category_columns

__all__ = ["encode_categories", "normalise_weights"]


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
        ``X`` itself when it is no DataFrame or has nothing to encode, else a copy with float
        code columns (NaN for a missing value, ``len(labels)`` for a category unseen in ``fit``).
    categories : dict
        ``{column index: ndarray of category labels}`` (empty when ``X`` has none).
    """
    check_text_columns(X)
    pd = sys.modules.get("pandas")  # a DataFrame implies pandas is imported
    if pd is None or not isinstance(X, pd.DataFrame):
        return X, {} if categories is None else categories
    if categories is None:
        categories = {i: np.asarray(dtype.categories)
                      for i, dtype in enumerate(X.dtypes) if isinstance(dtype, pd.CategoricalDtype)}
    if not categories:
        return X, categories
    return encode_category_columns(X, categories), categories


#: Weights below the largest one times this are raised to it (:func:`normalise_weights`).
NEGLIGIBLE_WEIGHT = 2.0 ** -1000
#: The largest weight must lie within these (refused otherwise: the model's scalings would overflow).
WEIGHT_RANGE = (2.0 ** -1000, 2.0 ** 1000)


def normalise_weights(sample_weight):
    """Validated non-negative weights made safe for the model and the engine; (weights, notes).

    The engine's and the formulation's weight units (powers of two near the smallest and the
    largest weight) overflow when the ratio of the two exceeds about 1.8e308, and would certify
    wrong trees. A positive weight below ``NEGLIGIBLE_WEIGHT`` times the largest is therefore
    raised to that floor, with a note: its row still counts for ``min_samples_leaf``, and a
    weight that small changes no comparison of objectives in float64 (it is below the
    resolution of any objective the large weights reach). A largest weight outside
    ``WEIGHT_RANGE``, or one whose floor is not a normal float64, is refused: the fix is to
    rescale all weights by one constant, which changes no optimal tree.
    """
    top = float(sample_weight.max(initial=0.0))
    floor = top * NEGLIGIBLE_WEIGHT
    if top > 0 and not WEIGHT_RANGE[0] <= top <= WEIGHT_RANGE[1]:
        raise ValueError(
            f"sample_weight: the largest weight is {top:.3g}, outside [2**-1000, 2**1000] ({WEIGHT_RANGE[0]:.3g} .. "
            f"{WEIGHT_RANGE[1]:.3g}), where the model's scalings overflow; multiply every weight by one constant "
            f"(e.g. sample_weight / sample_weight.max()): the optimal tree does not change")
    negligible = (sample_weight > 0) & (sample_weight < floor)
    if not negligible.any():
        return sample_weight, []
    if floor < np.finfo(np.float64).tiny:
        raise ValueError(
            f"sample_weight: {int(negligible.sum())} weight(s) below 2**-1000 times the largest ({top:.3g}), which "
            f"is itself below float64's normal range; multiply every weight by one constant (e.g. sample_weight / "
            f"sample_weight.max()): the optimal tree does not change")
    sample_weight = np.where(negligible, floor, sample_weight)
    return sample_weight, [
        f"sample_weight: {int(negligible.sum())} weight(s) below 2**-1000 times the largest ({top:.3g}) raised to "
        f"{floor:.3g}: their rows still count for min_samples_leaf, and a weight that small changes no comparison "
        f"of objectives in float64"]
