"""The depth-2 kernel for misclassification on few thresholds, from pair counts (MurTree's frequency counting).

Every split ``x_f <= t_r`` is a binary column ``c = (f, r)``, one where ``rank[f] > r``; with
few columns in all (binary or categorical data) a depth-2 tree is fixed by its root column
``i`` and its children's columns ``j``, and the class weights of its four leaves follow from
the weights of the rows with ``x_i = 1``, with ``x_j = 1`` and with both (``one[i]``,
``one[j]``, ``pair[i, j]``): for the root's left child (``x_i = 0``)

    (x_j = 0): total - one[i] - one[j] + pair[i, j]        (x_j = 1): one[j] - pair[i, j]

and for its right child ``one[i] - pair[i, j]`` and ``pair[i, j]``; row counts likewise (the
minimum leaf size). One pass over the rows fills the counts, at a cost of ``s**2`` per row for
``s`` ones in it, instead of a sweep of every feature per root candidate; then every tree is
evaluated in ``O(K)``. The kernel is ``depth2_pairs`` of the compiled core (``cpp/pairs.hpp``); the search calls it on the
columns :func:`pair_columns` gives.
"""

import numpy as np

#: Most columns (thresholds over all features) for which :func:`depth2_pairs` is used (its pair table
#: is ``columns**2 * K``).
MAX_COLUMNS = 128
#: Most thresholds per feature, on average, for which :func:`depth2_pairs` is used: a row has about
#: half of a feature's columns set, and the sweep kernel prices a feature's thresholds in one pass.
#: Measured at depth 4 (pair / sweep time): 2-3 thresholds per feature 0.19-0.27, 7 0.49-0.60,
#: 15 0.98-1.26, iris (30) 3.8.
MAX_MEAN_THRESHOLDS = 10


def pair_columns(data):
    """The binary columns ``(col_feature, col_rank)`` for which the search uses :func:`depth2_pairs`, or None.

    None unless the loss is misclassification and the thresholds of all features number at
    most :data:`MAX_COLUMNS`, at most :data:`MAX_MEAN_THRESHOLDS` per feature on average.
    """
    counts = [len(t) for t in data.thresholds]
    if data.is_regression or sum(counts) > min(MAX_COLUMNS, MAX_MEAN_THRESHOLDS * len(counts)):
        return None
    col_feature = np.repeat(np.arange(len(counts)), counts).astype(np.int64)
    col_rank = np.concatenate([np.arange(c) for c in counts] + [np.zeros(0, int)]).astype(np.int64)
    return col_feature.tolist(), col_rank.tolist()
