"""Lower bounds for a search stopped by a limit, that need no finished sub-problem of the root.

A stopped search reports the least bound over its open sub-problems (:meth:`Search.branch`).
On a deep problem over many rows no root candidate's children may be solved before the limit,
and that bound is 0. Two bounds hold without them:

* **class counts** (classification): a tree of depth ``d`` has at most ``2**d`` leaves, each
  predicting one class, so on a row set ``A`` it misclassifies at least ``m_d(A)``, the weight
  of the ``K - 2**d`` lightest classes of ``A``. Over the root's split candidates ``c``
  (children ``L_c``, ``R_c``),

      OPT_D(S) >= min(leaf(S), alpha + min_c [m_{D-1}(L_c) + m_{D-1}(R_c)]),

  one cumulative sweep per feature (:func:`class_count_bound`). Positive when ``K > 2**(D-1)``
  (e.g. 10 digits at depth 4).
* **subsets** (any loss): for rows ``S' ⊆ S``, ``OPT_D(S') <= OPT_D(S)`` -- restricted to
  ``S'``, an optimal tree of ``S`` loses no more (per-row losses are non-negative), and a split
  sending all of ``S'`` one way is dropped by lifting its other child. The lifted tree may
  break a minimum leaf size, and its nodes change positions, so ``S'`` is solved without the
  minimum leaf size and only when every node allows the same features. Optimal trees of
  small subsets are quick to prove, and a proven (or stopped) subset bound is a bound of the
  whole problem: :func:`subset_rows` gives nested subsets of doubling size, half rows the
  incumbent gets wrong (they carry the loss) and half it gets right (they keep a tree from
  isolating the wrong ones).
"""

from __future__ import annotations

import numpy as np

from . import _kernels as K
from ._data import ExactData

#: Share of ``time_limit`` and ``work_limit`` a search that may stop keeps for the subset bound.
BOUND_RESERVE = 0.1
#: Rows of the first subset at depth ``D``: ``2**(D + SUBSET_FIRST_EXTRA)``.
SUBSET_FIRST_EXTRA = 3


def class_count_bound(data: ExactData, view, depth: int, allowed, alpha: float, min_leaf: int) -> float:
    """The class-count bound on ``OPT_depth`` of the rows of ``view`` (0 for regression or too few classes).

    ``allowed``: the features the root may split on; candidates leaving fewer than
    ``min_leaf`` rows on a side are skipped (they are not trees).
    """
    n_classes = data.n_classes
    drop = n_classes - 2 ** (depth - 1)
    if data.is_regression or depth < 1 or drop <= 0:
        return 0.0
    rows = view[0]
    total = np.bincount(data.y[rows], weights=data.weight[rows], minlength=n_classes)
    best = float(total.sum() - total.max())  # the root as a leaf
    for f in np.flatnonzero(allowed):
        _, n_left, _ = K.candidates(view, data.rank, data.weight, data.stats, data.loss_code, f, min_leaf)
        if n_left.size == 0:
            continue
        left = data.class_prefix(view[f])[n_left - 1]
        right = np.maximum(total - left, 0.0)
        lightest = np.sort(left, axis=1)[:, :drop].sum(axis=1) + np.sort(right, axis=1)[:, :drop].sum(axis=1)
        best = min(best, alpha + float(lightest.min()))
    return best


def subset_rows(data: ExactData, tree, rows, depth: int):
    """Nested subsets of ``rows`` of doubling size, from ``2**(depth + 3)`` rows to below ``len(rows)``.

    Each takes up to half its rows from those ``tree`` (the incumbent) gets wrong -- misclassified,
    or for regression with a residual above the median -- and the rest from the others, both
    in a fixed pseudo-random order (seed 0): the subsets are a function of the inputs.
    """
    if data.is_regression:
        residual = np.abs(data.targets(rows) - tree.value[tree.apply(data.X[rows]), 0])
        wrong = residual > np.median(residual)
    else:
        predicted = tree.value[tree.apply(data.X[rows])].argmax(axis=1)
        wrong = predicted != data.y[rows]
    rng = np.random.RandomState(0)
    bad, good = rng.permutation(rows[wrong]), rng.permutation(rows[~wrong])
    size = 2 ** (depth + SUBSET_FIRST_EXTRA)
    while size < rows.size:
        k = min(bad.size, size // 2)
        yield np.sort(np.concatenate([bad[:k], good[:size - k]]))
        size *= 2
