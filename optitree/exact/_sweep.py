"""Depth-1 trees for both sides of a split in one pass per feature: the inner loop of the depth-2 kernel.

Compiled with numba (``cache=True``) like :mod:`optitree.exact._kernels`, whose conventions
(views, ranks, loss codes) hold here. Memory layout: a view's ranks, classes and weights are
first copied in its order (:func:`layout`); per feature, the rows of the two sides are then
compacted into two contiguous runs (:func:`depth1_sides`) and each run is swept on its own
(:func:`sweep_side`), its state in registers and free to stop early, instead of one pass that
dispatches every row to its side.
"""

import numpy as np
from numba import njit

from ._fenwick import fenwick_add
from ._loss import ABSOLUTE, EPS, MISCLASSIFICATION, add_row, row_dist, split_costs


@njit(cache=True, nogil=True)
def layout(srt, rank, y, w):
    """The view's ranks, classes and weights copied in its order: ``lr, ly, lw`` of shape ``(p, m)``.

    ``lr[g, t] = rank[g, srt[g, t]]`` (and ``y``, ``w`` alike): the sweeps read each feature's
    rows in sequence instead of gathering them from the global arrays.
    """
    p, m = srt.shape
    lr = np.empty((p, m), np.int32)
    ly = np.empty((p, m), np.int32)
    lw = np.empty((p, m))
    for g in range(p):
        for t in range(m):
            i = srt[g, t]
            lr[g, t] = rank[g, i]
            ly[g, t] = y[i]
            lw[g, t] = w[i]
    return lr, ly, lw


@njit(cache=True, nogil=True)
def positions(srt, feature, n_total):
    """``key[g, t]``: the position of sample ``srt[g, t]`` in ``srt[feature]``.

    A split of ``feature`` that sends its first ``k`` rows left sends exactly the samples with
    ``key < k`` left, in every row of the view.
    """
    p, m = srt.shape
    pos = np.empty(n_total, np.int32)
    for t in range(m):
        pos[srt[feature, t]] = t
    key = np.empty((p, m), np.int32)
    for g in range(p):
        for t in range(m):
            key[g, t] = pos[srt[g, t]]
    return key


@njit(cache=True, nogil=True)
def scratch(m):
    """Buffers of :func:`depth1_sides` for views of up to ``m`` rows: each side's ranks, classes, weights, rows."""
    return np.empty((2, m), np.int32), np.empty((2, m), np.int32), np.empty((2, m)), np.empty((2, m), np.int32)


@njit(cache=True, nogil=True, inline="always")
def sweep_side(s, r, yy, ww, rows, n, bar, alpha, min_leaf, loss, y, w, stats, prefix, pw, total, weight,
               dist_total, lo, hi, fenwick, order):
    """Best threshold of one feature for side ``s``, its ``n`` rows in rank order (``r, yy, ww, rows``).

    ``prefix[s]``, ``pw[s]`` (reset here) accumulate the prefix's statistics and weight,
    ``total[s]`` holds the side's. Only thresholds of cost below ``bar`` are sought. Returns
    ``(cost, rank_threshold)``, the threshold ``-1`` when none is below ``bar``. Stops early:
    similarity skip (a threshold whose cost exceeds the bar by ``d`` cannot be beaten before
    rows of total :func:`row_dist` above ``d`` have moved left), a zero-cost right side (moving
    more rows left cannot lower the cost: monotone), a bar at ``alpha``, or too few rows left
    for a leaf (or, for the skip, left to move).

    **Class skip** (misclassification). With class weights ``L_k`` left and ``R_k`` right of the
    threshold, ``T_k = L_k + R_k`` and ``W = Σ T_k``, a threshold further on moves weights
    ``d_k >= 0`` (total ``D``) from right to left, and its cost is
    ``alpha + W - max_k (L_k + d_k) - max_j (R_j - d_j)``. The two maxima are taken at one class
    (their sum is then ``T_k <= max T``) or at two (``<= L_k + R_j + D`` with ``k != j``), so::

        cost' >= alpha + W - max(max_k T_k, C + D),   C = max_{k != j} (L_k + R_j).

    ``alpha + W - max T`` is the leaf's cost plus ``alpha``, never below the bar, so a threshold
    beats the bar only once ``D > alpha + W - C - bar``: the skip. ``C`` comes from the two
    largest ``L_k`` and ``R_j``; it is ``max L + max R`` when the two sides' majority classes
    differ (the skip is then ``cost - bar``, the similarity skip) and larger when they agree:
    on imbalanced sets the cost stays at the minority's weight over long runs of rows, where
    the similarity skip is 0 and the class skip the rows until a majority could change.
    """
    tw, ty, fw, fy = fenwick[0], fenwick[1], fenwick[2], fenwick[3]
    rank_of, values = order
    prefix[s, :] = 0.0
    pw[s] = 0.0
    if loss == ABSOLUTE:
        fw[s, :] = 0.0
        fy[s, :] = 0.0
    found = -1
    pd = 0.0
    pn = 0
    prev = -1
    skip = 0.0
    for t in range(n):
        rt = r[t]
        if pn >= min_leaf and rt != prev and skip < EPS:
            cross = 0.0  # misclassification: max_{k != j} (L_k + R_j), the class skip's C
            if loss == MISCLASSIFICATION:
                left_top = left_next = right_top = right_next = 0.0
                left_arg = right_arg = -1
                for k in range(prefix.shape[1]):
                    lk = prefix[s, k]
                    if lk > left_top:
                        left_next, left_top, left_arg = left_top, lk, k
                    elif lk > left_next:
                        left_next = lk
                    rk = total[s, k] - prefix[s, k]
                    if rk > right_top:
                        right_next, right_top, right_arg = right_top, rk, k
                    elif rk > right_next:
                        right_next = rk
                left_cost = pw[s] - left_top
                right_cost = weight - pw[s] - right_top
                cross = left_top + right_top if left_arg != right_arg else max(left_top + right_next,
                                                                               left_next + right_top)
            else:
                left_cost, right_cost = split_costs(loss, s, prefix, total, pw, fw, fy, tw, ty, values)
            cost = alpha + left_cost + right_cost
            if cost < bar - EPS:
                bar = cost
                found = prev
            # no threshold beats the bar before rows of total distance above `skip` have moved
            skip = alpha + weight - cross - bar if loss == MISCLASSIFICATION else max(cost - bar, 0.0)
            if right_cost <= EPS or skip >= dist_total - pd - EPS or bar <= alpha + EPS:
                break
        wt = ww[t]
        if loss == MISCLASSIFICATION:
            prefix[s, yy[t]] += wt
            d = wt
        else:
            i = rows[t]
            add_row(prefix, s, i, y, w, stats, loss)
            if loss == ABSOLUTE:
                fenwick_add(fw[s], fy[s], rank_of[i], wt, stats[i, 1])
            d = row_dist(i, w, stats, loss, lo, hi)
        pw[s] += wt
        pd += d
        pn += 1
        prev = rt
        skip -= d
        if n - pn < min_leaf:
            break
    return bar, found


@njit(cache=True, nogil=True, inline="always")
def depth1_pair(srt, lay, key, n_left, buf, y, w, stats, loss, width, order, allowed, alpha, min_leaf, upper):
    """:func:`depth1_sides` with the same ``upper`` for both sides (no bound known on either)."""
    return depth1_sides(srt, lay, key, n_left, buf, y, w, stats, loss, width, order, allowed, alpha, min_leaf, upper,
                        0.0, 0.0)


@njit(cache=True, nogil=True, inline="always")
def depth1_sides(srt, lay, key, n_left, buf, y, w, stats, loss, width, order, allowed, alpha, min_leaf, upper,
                 known_left, known_right):
    """Optimal trees of depth <= 1 for both sides of a split, in one pass per feature.

    Side 0 holds the samples with ``key < n_left`` (``key`` from :func:`positions` of the split
    feature, whose first ``n_left`` rows go left), side 1 the rest; ``n_left >= m``: one set,
    every sample on side 0 (``key`` is not read). ``lay`` is the view's :func:`layout`, ``buf``
    a :func:`scratch` of at least ``m`` rows; ``allowed[s]`` masks side ``s``'s features. For
    each allowed feature the rows of each side are compacted in rank order and swept by
    :func:`sweep_side`, seeking only trees of cost below ``min(incumbent, upper)``.

    Returns ``cost[2], lower[2], feature[2], rank_threshold[2]``: the best tree found per
    side (feature ``-1``: a leaf) and ``lower = min(cost, upper)``, a bound on the side's
    optimum, equal to it when ``cost < upper``. ``order`` is :func:`target_order` of ``srt``.

    ``known_left/known_right`` are lower bounds on the two sides' optima (e.g. from neighbouring
    thresholds): only the pair's sum must stay below ``upper``, so side 0 is searched below
    ``upper - known_right`` and side 1 below ``upper - known_left``; ``lower`` is then the
    least of ``cost`` and that side's own bar (no tree below it exists).
    """
    lr, ly, lw = lay
    br, by, bw, brow = buf
    p, m = srt.shape
    split = n_left < m
    total = np.zeros((2, width))
    n_side = np.zeros(2, np.int64)
    lo = np.full(2, np.inf)
    hi = np.full(2, -np.inf)
    weight = np.zeros(2)
    for t in range(m):
        i = srt[0, t]
        s = 1 if split and key[0, t] >= n_left else 0
        weight[s] += lw[0, t]
        n_side[s] += 1
        if loss == MISCLASSIFICATION:
            total[s, ly[0, t]] += lw[0, t]
        else:
            add_row(total, s, i, y, w, stats, loss)
            lo[s] = min(lo[s], stats[i, 3])
            hi[s] = max(hi[s], stats[i, 3])
    dist_total = weight.copy()
    if loss != MISCLASSIFICATION:
        dist_total[:] = 0.0
        for t in range(m):
            i = srt[0, t]
            s = 1 if split and key[0, t] >= n_left else 0
            dist_total[s] += row_dist(i, w, stats, loss, lo[s], hi[s])
    fenwick = np.zeros((4, 2, m + 1 if loss == ABSOLUTE else 1))  # ABSOLUTE: side totals, prefixes
    rank_of, values = order
    if loss == ABSOLUTE:
        for t in range(m):
            i = srt[0, t]
            s = 1 if split and key[0, t] >= n_left else 0
            fenwick_add(fenwick[0, s], fenwick[1, s], rank_of[i], w[i], stats[i, 1])
    best = np.zeros(2)
    bar = np.zeros(2)  # a split must cost less than this to matter
    best_f = np.full(2, -1, np.int64)
    best_r = np.full(2, -1, np.int64)
    prefix = np.zeros((2, width))
    pw = np.zeros(2)
    for s in range(2):
        best[s] = split_costs(loss, s, prefix, total, pw, fenwick[2], fenwick[3], fenwick[0], fenwick[1], values)[1]
        bar[s] = min(best[s], upper - (known_right if s == 0 else known_left))
    for g in range(p):
        open0 = allowed[0, g] and n_side[0] >= 2 * min_leaf and bar[0] > alpha + EPS
        open1 = allowed[1, g] and n_side[1] >= 2 * min_leaf and bar[1] > alpha + EPS
        if not (open0 or open1):
            continue
        if split:  # the two sides' rows of feature g, each a contiguous run in rank order
            a = 0
            b = 0
            for t in range(m):
                s = 1 if key[g, t] >= n_left else 0
                at = b if s else a
                br[s, at] = lr[g, t]
                by[s, at] = ly[g, t]
                bw[s, at] = lw[g, t]
                if loss != MISCLASSIFICATION:
                    brow[s, at] = srt[g, t]
                a += 1 - s
                b += s
        for s in range(2):
            if not (open1 if s else open0):
                continue
            if split:
                r, yy, ww, rows = br[s], by[s], bw[s], brow[s]
            else:
                r, yy, ww, rows = lr[g], ly[g], lw[g], srt[g]
            cost, thr = sweep_side(s, r, yy, ww, rows, n_side[s], bar[s], alpha, min_leaf, loss, y, w, stats, prefix,
                                   pw, total, weight[s], dist_total[s], lo[s], hi[s], fenwick, order)
            if thr >= 0:
                best[s] = bar[s] = cost
                best_f[s] = g
                best_r[s] = thr
    lower = np.empty(2)
    lower[0] = min(best[0], upper - known_right)
    lower[1] = min(best[1], upper - known_left)
    return best, lower, best_f, best_r
