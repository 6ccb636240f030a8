"""What a set of rows costs as a leaf under each loss, and the bounds every kernel relies on.

The loss policy (``loss``, one code per loss) decides only what a set of rows costs as a leaf:

=====================  =================================  ===========================================
``loss``               row statistics accumulated         cost of a leaf holding a set ``A``
=====================  =================================  ===========================================
``MISCLASSIFICATION``  ``w_i`` into class ``y_i``         ``W(A) - max_k W_k(A)``
``SQUARED``            ``(w_i, w_i t_i, w_i t_i^2)``      ``Σ w t² - (Σ w t)² / Σ w`` (mean leaf)
``ABSOLUTE``           Fenwick trees over target ranks    ``Σ w_i |t_i - median_w(A)|`` (median leaf)
=====================  =================================  ===========================================

``t`` is the scaled target (``stats[:, 3]``; ``stats`` holds ``w, w t, w t^2, t`` per row for
regression). Every bound of the search rests on two facts that hold for all three losses:

* **monotone**: ``OPT_d(A) <= OPT_d(B)`` for ``A ⊆ B`` (without a minimum leaf size): the best
  tree for ``B`` restricted to ``A`` has leaves that are subsets of ``B``'s, and a leaf's
  loss never grows when rows leave it (its best constant for the subset is at least as
  good as the old one);
* **similarity**: ``OPT_d(A ∪ {i}) <= OPT_d(A) + dist_i``: keep ``A``'s optimal tree and its
  leaf predictions, the new row costs at most ``dist_i``. For misclassification
  ``dist_i = w_i``; for regression any leaf prediction lies in the target range ``[lo, hi]``
  of the rows, so ``dist_i = w_i max(t_i - lo, hi - t_i)^q`` (``q = 2`` squared, ``1``
  absolute) with ``lo, hi`` the range of the view being searched (:func:`row_dist`).
"""

import numpy as np
from numba import njit

from ._fenwick import median_cost

EPS = 1e-9
MISCLASSIFICATION = 0
SQUARED = 1
ABSOLUTE = 2


@njit(cache=True, nogil=True, inline="always")
def misclassified(counts):
    total = 0.0
    top = 0.0
    for k in range(counts.shape[0]):
        total += counts[k]
        if counts[k] > top:
            top = counts[k]
    return total - top


@njit(cache=True, nogil=True, inline="always")
def squared_cost(wsum, s1, s2):
    """Weighted squared error about the mean of a set with sums ``Σw, Σwt, Σwt²``."""
    if wsum <= 0.0:
        return 0.0
    c = s2 - s1 * s1 / wsum
    return c if c > 0.0 else 0.0


@njit(cache=True, nogil=True)
def target_range(rows, stats, loss):
    """``(lo, hi)`` of the targets of ``rows`` (``(0, 0)`` for classification)."""
    if loss == MISCLASSIFICATION:
        return 0.0, 0.0
    lo = np.inf
    hi = -np.inf
    for t in range(rows.shape[0]):
        v = stats[rows[t], 3]
        lo = min(lo, v)
        hi = max(hi, v)
    return lo, hi


@njit(cache=True, nogil=True, inline="always")
def row_dist(i, w, stats, loss, lo, hi):
    """Most a row can add to the optimum of a set whose targets lie in ``[lo, hi]`` (similarity bound)."""
    if loss == MISCLASSIFICATION:
        return w[i]
    v = stats[i, 3]
    d = max(v - lo, hi - v)
    return w[i] * (d * d if loss == SQUARED else d)


@njit(cache=True, nogil=True)
def leaf_cost(rows, y, w, stats, loss, width):
    """Cost of one leaf holding ``rows`` (any order)."""
    m = rows.shape[0]
    if loss == MISCLASSIFICATION:
        counts = np.zeros(width)
        for t in range(m):
            counts[y[rows[t]]] += w[rows[t]]
        return misclassified(counts)
    if loss == SQUARED:
        a = 0.0
        b = 0.0
        c = 0.0
        for t in range(m):
            i = rows[t]
            a += stats[i, 0]
            b += stats[i, 1]
            c += stats[i, 2]
        return squared_cost(a, b, c)
    values = np.empty(m)
    for t in range(m):
        values[t] = stats[rows[t], 3]
    order = np.argsort(values, kind="mergesort")
    half = 0.0
    for t in range(m):
        half += w[rows[t]]
    half *= 0.5
    cum = 0.0
    med = values[order[m - 1]]
    for t in range(m):
        cum += w[rows[order[t]]]
        if cum >= half:
            med = values[order[t]]
            break
    cost = 0.0
    for t in range(m):
        cost += w[rows[t]] * abs(values[t] - med)
    return cost


@njit(cache=True, nogil=True)
def split_costs(loss, s, prefix, total, pw, fw, fy, tw, ty, values):
    """Leaf costs ``(left, right)`` of side ``s`` split after its current prefix.

    ``prefix[s]``/``total[s]`` hold the prefix's and the side's statistics, ``pw[s]`` the
    prefix's weight; ``fw, fy`` (prefix) and ``tw, ty`` (side) the Fenwick trees of ``ABSOLUTE``.
    """
    if loss == MISCLASSIFICATION:
        left_top = 0.0
        right_top = 0.0
        weight = 0.0
        for k in range(prefix.shape[1]):
            if prefix[s, k] > left_top:
                left_top = prefix[s, k]
            rk = total[s, k] - prefix[s, k]
            weight += total[s, k]
            if rk > right_top:
                right_top = rk
        return pw[s] - left_top, weight - pw[s] - right_top
    if loss == SQUARED:
        return (squared_cost(prefix[s, 0], prefix[s, 1], prefix[s, 2]),
                squared_cost(total[s, 0] - prefix[s, 0], total[s, 1] - prefix[s, 1], total[s, 2] - prefix[s, 2]))
    return (median_cost(fw[s], fy[s], fw[s], fy[s], 0.0, values, prefix[s, 0], prefix[s, 1]),
            median_cost(tw[s], ty[s], fw[s], fy[s], -1.0, values, total[s, 0] - prefix[s, 0],
                        total[s, 1] - prefix[s, 1]))


@njit(cache=True, nogil=True, inline="always")
def add_row(acc, s, i, y, w, stats, loss):
    """Add row ``i``'s statistics to ``acc[s]``."""
    if loss == MISCLASSIFICATION:
        acc[s, y[i]] += w[i]
    else:
        acc[s, 0] += stats[i, 0]
        acc[s, 1] += stats[i, 1]
        acc[s, 2] += stats[i, 2]
