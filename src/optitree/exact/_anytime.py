"""Lower bounds for a search stopped by a limit, that need no finished sub-problem of the root.

A stopped search reports the least bound over its open sub-problems (``Search::branch`` in
``cpp/search.hpp``). On a deep problem over many rows no root candidate's children may be solved before the limit,
and that bound is 0. Two bounds hold without them (and the root-slab bound of
:mod:`optitree.exact._slab_bound` on deep problems over many rows):

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

#: Share of ``time_limit`` and ``work_limit`` a search that may stop keeps for the subset bound (unless
#: the root-slab bound applies: ``SLAB_RESERVE``).
BOUND_RESERVE = 0.1
#: Rows of the first subset at depth ``D``: ``2**(D + SUBSET_FIRST_EXTRA)``.
SUBSET_FIRST_EXTRA = 3


def class_count_bound(data: ExactData, view, depth: int, allowed, alpha: float, min_leaf: int) -> float:
    """The class-count bound on ``OPT_depth`` of the rows of ``view`` (0 for regression or too few classes).

    ``allowed``: the features the root may split on; candidates leaving fewer than
    ``min_leaf`` rows on a side are skipped (they are not trees).
    """
    if data.is_regression or depth < 1 or data.n_classes <= 2 ** (depth - 1):
        return 0.0
    leaf, lightest = _root_candidates(data, view, depth, allowed, min_leaf)[:2]
    return min(leaf, alpha + float(lightest.min(initial=np.inf)))


def two_level_class_count_bound(data: ExactData, view, depth: int, allowed, alpha: float, min_leaf: int,
                                out_of_budget) -> float:
    """The class-count bound taken one level down: each root child's own class-count bound.

    A root child is a leaf or splits into two sub-trees of depth ``D - 2``, so

        OPT_D(S) >= min(leaf(S), alpha + min_c [B(L_c) + B(R_c)]),  B(A) = class_count_bound(A, D - 1),

    and ``B(A) >= m_{D-1}(A)`` (a leaf keeps one class right; two sub-trees of depth ``D - 2``
    keep at most ``2**(D-2)`` classes each, ``2**(D-1)`` in all): root candidates are taken by
    increasing one-level value, and the search stops once that value reaches the best two-level
    sum, or when ``out_of_budget(rows)`` (called before each candidate with its row count) is
    True -- the one-level value of the next candidate then bounds the rest. On digits at depth 4: 175
    where the one-level bound gives 18 (444 of 826 candidates, 4.5 s). ``allowed`` is the
    per-node mask (rows 0-2: the root and its children).
    """
    if data.is_regression or depth < 2 or data.n_classes <= 2 ** (depth - 2):  # the children's bounds would be 0
        return class_count_bound(data, view, depth, allowed[0], alpha, min_leaf)
    leaf, lightest, feature, rank_threshold, n_left = _root_candidates(data, view, depth, allowed[0], min_leaf)
    best = np.inf
    for k in np.argsort(lightest, kind="stable"):
        if lightest[k] >= best or out_of_budget(view.shape[1]):
            best = min(best, lightest[k])
            break
        sides = K.partition(view, data.rank[feature[k]], int(rank_threshold[k]), int(n_left[k]))
        best = min(best, sum(class_count_bound(data, side, depth - 1, allowed[1 + s], alpha, min_leaf)
                             for s, side in enumerate(sides)))
    return min(leaf, alpha + float(best))


def _root_candidates(data: ExactData, view, depth: int, allowed, min_leaf: int):
    """The root's split candidates with their one-level class-count value ``m_{D-1}(L_c) + m_{D-1}(R_c)``.

    Returns ``(leaf, lightest, feature, rank_threshold, n_left)`` (arrays over candidates; the
    root as a leaf), for classification at depth >= 1. ``lightest`` is 0 where a child can have
    a leaf per class.
    """
    n_classes = data.n_classes
    drop = max(n_classes - 2 ** (depth - 1), 0)
    rows = view[0]
    total = np.bincount(data.y[rows], weights=data.weight[rows], minlength=n_classes)
    parts = []
    for f in np.flatnonzero(allowed):
        rank_threshold, n_left, _ = K.candidates(view, data.rank, data.weight, data.stats, data.loss_code, f,
                                                 min_leaf)
        left = data.class_prefix(view[f])[n_left - 1]
        right = np.maximum(total - left, 0.0)
        lightest = np.sort(left, axis=1)[:, :drop].sum(axis=1) + np.sort(right, axis=1)[:, :drop].sum(axis=1)
        parts.append((lightest, np.full(n_left.size, f), rank_threshold, n_left))
    lightest, feature, rank_threshold, n_left = (np.concatenate([p[i] for p in parts] + [np.zeros(0, kind)])
                                                 for i, kind in enumerate((float, int, int, int)))
    return float(total.sum() - total.max()), lightest, feature, rank_threshold, n_left


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
