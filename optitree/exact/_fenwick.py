"""Absolute error in the kernels: Fenwick trees over the target ranks of a view (weighted medians in O(log m)).

Compiled with numba (``cache=True``) like :mod:`optitree.exact._kernels`, which uses them.
"""

import numpy as np
from numba import njit

ABSOLUTE = 2  # the loss code of optitree.exact._kernels


@njit(cache=True, nogil=True)
def local_target_ranks(rows, stats, n_total):
    """Rank of each row's target within ``rows`` (ties broken by position) and the sorted targets.

    Returns ``(rank_of, sorted_values)``; ``rank_of`` has ``n_total`` entries, set only at ``rows``.
    """
    m = rows.shape[0]
    values = np.empty(m)
    for t in range(m):
        values[t] = stats[rows[t], 3]
    order = np.argsort(values, kind="mergesort")
    rank_of = np.empty(n_total, np.int32)
    sorted_values = np.empty(m)
    for r in range(m):
        rank_of[rows[order[r]]] = r
        sorted_values[r] = values[order[r]]
    return rank_of, sorted_values


@njit(cache=True, nogil=True)
def target_order(rows, stats, loss, n_total):
    """:func:`local_target_ranks` of a view's rows for ``ABSOLUTE`` (once per view); dummies otherwise."""
    if loss == ABSOLUTE:
        return local_target_ranks(rows, stats, n_total)
    return np.zeros(1, np.int32), np.zeros(1)


@njit(cache=True, nogil=True)
def fenwick_add(tw, ty, pos, wi, yi):
    """Add weight ``wi`` and ``wi * t`` (``yi``) at 0-based position ``pos`` of a Fenwick pair."""
    k = pos + 1
    n = tw.shape[0] - 1
    while k <= n:
        tw[k] += wi
        ty[k] += yi
        k += k & (-k)


@njit(cache=True, nogil=True)
def median_cost(aw, ay, bw, by, c, values, wsum, ysum):
    """Absolute error about the weighted median of the set held by the Fenwick pair ``a + c·b``.

    ``c`` is 0 (the set is ``a``) or -1 (``a`` minus ``b``: a suffix as all rows minus a prefix);
    ``wsum, ysum`` are the set's ``Σw, Σwt``. The median is found by one descent of the tree:
    ``O(log m)``.
    """
    if wsum <= 0.0:
        return 0.0
    n = aw.shape[0] - 1
    half = 0.5 * wsum
    step = 1
    while step * 2 <= n:
        step *= 2
    pos = 0
    cw = 0.0
    cy = 0.0
    while step > 0:
        nxt = pos + step
        if nxt <= n:
            nw = aw[nxt] + c * bw[nxt]
            if cw + nw < half:
                pos = nxt
                cw += nw
                cy += ay[nxt] + c * by[nxt]
        step //= 2
    med = values[min(pos, n - 1)]
    cost = med * cw - cy + (ysum - cy) - med * (wsum - cw)
    return cost if cost > 0.0 else 0.0
