"""Compiled kernels of the exact engine (numba, ``cache=True``).

Conventions shared by every kernel:

* ``rank[f, i]`` is the dense rank of sample ``i`` on feature ``f`` (0 = smallest value);
  a split ``(f, r)`` sends sample ``i`` left when ``rank[f, i] <= r``;
* a sample set is a *view* ``srt`` of shape ``(p, m)``: row ``f`` lists the set's sample
  indices sorted by ``rank[f]`` (ties in one fixed global order, so the view of a set is
  unique whatever path produced it);
* costs are the loss of the leaves plus ``alpha`` per split; ``min_leaf`` counts rows.

What a leaf costs under each loss, and the monotone and similarity bounds every kernel relies
on, are in :mod:`optitree.exact._loss`; the depth-1 sweeps in :mod:`optitree.exact._sweep`.
"""

import numpy as np
from numba import njit

from ._fenwick import fenwick_add, local_target_ranks, target_order  # noqa: F401 (K.target_order)
from ._loss import (ABSOLUTE, EPS, MISCLASSIFICATION, SQUARED, add_row, leaf_cost,  # noqa: F401 (K.*)
                    row_dist, split_costs, target_range)
from ._sweep import depth1_pair, depth1_sides, layout, positions, scratch  # noqa: F401 (K.layout, ...)

#: sha256 (first 16 hex digits) of ``_fenwick.py``, ``_loss.py`` and ``_sweep.py``, in that order.
#: The kernels cached here compile those modules' code into their own, but numba keys a cached
#: function on the text of its own file only: a change there must change this file too, or the
#: caches would keep the old code (``tests/test_exact_order.py`` checks the digest).
INLINED_SOURCES = "fadcc4efbecb934d"


@njit(cache=True, nogil=True)
def stump_order(srt, rank, y, w, stats, loss, width, allowed):
    """Allowed features sorted by the cost of their best single split (best first).

    Searching the most promising features first gives strong incumbents early, which
    prunes the thresholds of the others.
    """
    p, m = srt.shape
    total = np.zeros((1, width))
    weight = 0.0
    for t in range(m):
        add_row(total, 0, srt[0, t], y, w, stats, loss)
        weight += w[srt[0, t]]
    fenwick = np.zeros((4, 1, m + 1 if loss == ABSOLUTE else 1))  # ABSOLUTE: the set's total, prefixes
    tw, ty, fw, fy = fenwick[0], fenwick[1], fenwick[2], fenwick[3]
    rank_of, values = rank[0, :1], w[:1]  # unused unless ABSOLUTE
    if loss == ABSOLUTE:
        rank_of, values = local_target_ranks(srt[0], stats, rank.shape[1])
        for t in range(m):
            i = srt[0, t]
            fenwick_add(tw[0], ty[0], rank_of[i], w[i], stats[i, 1])
    score = np.full(p, np.inf)
    prefix = np.zeros((1, width))
    pw = np.zeros(1)
    no_split = split_costs(loss, 0, prefix, total, pw, fw, fy, tw, ty, values)[1] + 1.0
    for g in range(p):
        if not allowed[g]:
            continue
        score[g] = no_split  # no split: after every feature that has one
        prefix[:] = 0.0
        pw[:] = 0.0
        if loss == ABSOLUTE:
            fw[:] = 0.0
            fy[:] = 0.0
        for t in range(m):
            i = srt[g, t]
            if t > 0 and rank[g, i] != rank[g, srt[g, t - 1]]:
                if loss == MISCLASSIFICATION:
                    left_top = 0.0
                    right_top = 0.0
                    for k in range(width):
                        left_top = max(left_top, prefix[0, k])
                        right_top = max(right_top, total[0, k] - prefix[0, k])
                    score[g] = min(score[g], weight - left_top - right_top)
                else:
                    left_cost, right_cost = split_costs(loss, 0, prefix, total, pw, fw, fy, tw, ty, values)
                    score[g] = min(score[g], left_cost + right_cost)
            if loss == MISCLASSIFICATION:
                prefix[0, y[i]] += w[i]
            else:
                add_row(prefix, 0, i, y, w, stats, loss)
                if loss == ABSOLUTE:
                    fenwick_add(fw[0], fy[0], rank_of[i], w[i], stats[i, 1])
            pw[0] += w[i]
    order = np.argsort(score, kind="mergesort")
    count = 0
    for g in range(p):
        count += 1 if allowed[g] else 0
    return order[:count]


@njit(cache=True, nogil=True)
def candidates(srt, rank, w, stats, loss, feature, min_leaf):
    """Thresholds of ``feature`` within a view that leave ``>= min_leaf`` rows on each side.

    Returns ``(rank_threshold, n_left, dist_left)`` per candidate, in increasing order;
    ``dist_left`` sums :func:`row_dist` over the rows sent left (the view's target range):
    the distance of the similarity bound.
    """
    m = srt.shape[1]
    lo, hi = target_range(srt[0], stats, loss)
    out_r = np.empty(m, np.int64)
    out_n = np.empty(m, np.int64)
    out_w = np.empty(m)
    count = 0
    cum = 0.0
    for t in range(m):
        i = srt[feature, t]
        if t > 0:
            r_prev = rank[feature, srt[feature, t - 1]]
            if rank[feature, i] != r_prev and t >= min_leaf and m - t >= min_leaf:
                out_r[count] = r_prev
                out_n[count] = t
                out_w[count] = cum
                count += 1
        cum += w[i] if loss == MISCLASSIFICATION else row_dist(i, w, stats, loss, lo, hi)
    return out_r[:count], out_n[:count], out_w[:count]


@njit(cache=True, nogil=True)
def partition(srt, rank_row, split_rank, n_left):
    """Views of the two sides of the split ``rank_row[i] <= split_rank`` (order kept)."""
    p, m = srt.shape
    left = np.empty((p, n_left), srt.dtype)
    right = np.empty((p, m - n_left), srt.dtype)
    for g in range(p):
        a = 0
        b = 0
        for t in range(m):
            i = srt[g, t]
            if rank_row[i] <= split_rank:
                left[g, a] = i
                a += 1
            else:
                right[g, b] = i
                b += 1
    return left, right


@njit(cache=True, nogil=True)
def point_bounds(j, a, b, dist_left, ev_left, ev_right, monotone):
    """Lower bounds on the two children's optima at candidate ``j`` from solved neighbours.

    ``a < j < b`` are candidates with known child lower bounds (``-1`` / ``T``: none);
    ``dist_left`` (cumulative :func:`row_dist` of the rows sent left) is increasing. Moving
    rows of total distance ``k`` into (out of) a set changes its optimum by at most ``k``
    (similarity bound); where ``monotone``, the optimum of a superset is never below the
    subset's, which gives the second terms.
    """
    T = dist_left.shape[0]
    lo_left = 0.0
    lo_right = 0.0
    if a >= 0:
        lo_right = max(lo_right, ev_right[a] - (dist_left[j] - dist_left[a]))
        if monotone:
            lo_left = max(lo_left, ev_left[a])
    if b < T:
        lo_left = max(lo_left, ev_left[b] - (dist_left[b] - dist_left[j]))
        if monotone:
            lo_right = max(lo_right, ev_right[b])
    return lo_left, lo_right


@njit(cache=True, nogil=True)
def shrink(lo, hi, a, b, dist_left, ev_left, ev_right, monotone, limit, out_left, out_right):
    """Drop candidates at both ends of ``[lo, hi]`` whose bound reaches ``limit``.

    A candidate's bound is the larger of its neighbours' (:func:`point_bounds`) and the one
    already in ``out_left/out_right`` (zero, or a bound known beforehand, e.g. from a relaxation).
    Bounds of dropped candidates are recorded (elementwise max) in ``out_left/out_right``.
    Returns the remaining ``(lo, hi)`` (empty when ``lo > hi``).
    """
    while lo <= hi:
        bl, br = point_bounds(lo, a, b, dist_left, ev_left, ev_right, monotone)
        bl, br = max(bl, out_left[lo]), max(br, out_right[lo])
        if bl + br < limit - EPS:
            break
        out_left[lo] = max(out_left[lo], bl)
        out_right[lo] = max(out_right[lo], br)
        lo += 1
    while hi >= lo:
        bl, br = point_bounds(hi, a, b, dist_left, ev_left, ev_right, monotone)
        bl, br = max(bl, out_left[hi]), max(br, out_right[hi])
        if bl + br < limit - EPS:
            break
        out_left[hi] = max(out_left[hi], bl)
        out_right[hi] = max(out_right[hi], br)
        hi -= 1
    return lo, hi


@njit(cache=True, nogil=True)
def fill_bounds(lo, hi, a, b, dist_left, ev_left, ev_right, monotone, out_left, out_right):
    """Record neighbour bounds (elementwise max) for every candidate of ``[lo, hi]``; return their min sum."""
    lowest = np.inf
    for j in range(lo, hi + 1):
        bl, br = point_bounds(j, a, b, dist_left, ev_left, ev_right, monotone)
        out_left[j] = max(out_left[j], bl)
        out_right[j] = max(out_right[j], br)
        lowest = min(lowest, out_left[j] + out_right[j])
    return lowest


@njit(cache=True, nogil=True, inline="always")
def depth2(srt, rank, y, w, stats, loss, width, allowed_root, allowed_child, alpha, min_leaf, upper_bound):
    """Optimal tree of depth <= 2 for a view, searching for cost < ``upper_bound``.

    ``allowed_root`` masks the root's features, ``allowed_child[0/1]`` its left/right child's.

    Root features are tried best stump first; the thresholds of each are searched by
    bisection over intervals (as ConTree): each evaluated root threshold gets both children
    by :func:`depth1_pair` (exact below the bound that still matters); the interval between
    solved thresholds is shrunk or dropped by :func:`point_bounds`.

    Returns ``(cost, lower_bound, nodes)``; ``lower_bound = min(cost, upper_bound)`` is a
    valid bound on the optimum, equal to it when ``cost < upper_bound``. ``nodes`` is
    ``[f, r, f_left, r_left, f_right, r_right]`` (``f = -1``: leaf).
    """
    p, m = srt.shape
    nodes = np.full(6, -1, np.int64)
    best = leaf_cost(srt[0], y, w, stats, loss, width)
    order = target_order(srt[0], stats, loss, rank.shape[1])
    monotone = min_leaf <= 1
    lay = layout(srt, rank, y, w)
    buf = scratch(m)
    for f in stump_order(srt, rank, y, w, stats, loss, width, allowed_root):
        if min(best, upper_bound) <= alpha + EPS:
            break
        cand_r, cand_n, cand_w = candidates(srt, rank, w, stats, loss, f, min_leaf)
        T = cand_r.shape[0]
        if T == 0:
            continue
        key = positions(srt, f, rank.shape[1])
        ev_left = np.zeros(T)
        ev_right = np.zeros(T)
        dropped_left = np.zeros(T)  # bounds of dropped candidates: unused here
        dropped_right = np.zeros(T)
        queue = np.empty((2 * T + 2, 4), np.int64)
        queue[0, 0], queue[0, 1], queue[0, 2], queue[0, 3] = 0, T - 1, -1, T
        head, tail = 0, 1
        while head < tail:
            lo, hi, a, b = queue[head, 0], queue[head, 1], queue[head, 2], queue[head, 3]
            head += 1
            limit = min(best, upper_bound) - alpha
            lo, hi = shrink(lo, hi, a, b, cand_w, ev_left, ev_right, monotone, limit,
                            dropped_left, dropped_right)
            if lo > hi:
                continue
            mid = (lo + hi) // 2
            known_left, known_right = point_bounds(mid, a, b, cand_w, ev_left, ev_right, monotone)
            if known_left + known_right >= limit - EPS:  # its neighbours' bounds drop it
                ev_left[mid] = known_left
                ev_right[mid] = known_right
                total = np.inf
            else:
                # absolute error: each side is searched only below the limit less the other side's known bound;
                # measured (depth-2 kernel on halves of 5 sets): 0.52x-0.90x; squared error 0.74x-1.05x and
                # misclassification 0.88x-1.04x (wilt-like slower), so for them the bounds only drop the middle
                side_left, side_right = (known_left, known_right) if loss == ABSOLUTE else (0.0, 0.0)
                cost, lower, feat, thr = depth1_sides(srt, lay, key, cand_n[mid], buf, y, w, stats, loss, width,
                                                      order, allowed_child, alpha, min_leaf, limit, side_left,
                                                      side_right)
                ev_left[mid] = max(lower[0], known_left)
                ev_right[mid] = max(lower[1], known_right)
                total = alpha + cost[0] + cost[1]
            if total < best - EPS:
                best = total
                nodes[0], nodes[1] = f, cand_r[mid]
                nodes[2], nodes[3], nodes[4], nodes[5] = feat[0], thr[0], feat[1], thr[1]
            if lo < mid:
                queue[tail, 0], queue[tail, 1], queue[tail, 2], queue[tail, 3] = lo, mid - 1, a, mid
                tail += 1
            if mid < hi:
                queue[tail, 0], queue[tail, 1], queue[tail, 2], queue[tail, 3] = mid + 1, hi, mid, b
                tail += 1
    return best, min(best, upper_bound), nodes


# ---------------------------------------------------------------- the classification kernels, compiled apart
@njit(cache=True, nogil=True)
def depth2_misclassification(srt, rank, y, w, stats, loss, width, allowed_root, allowed_child, alpha, min_leaf,
                             upper_bound):
    """:func:`depth2` for misclassification, compiled with the loss a constant (``loss`` is ignored).

    The other losses' code is then absent from the hot loops, which keeps the classification
    kernels as fast as they were before the engine learned regression.
    """
    return depth2(srt, rank, y, w, stats, MISCLASSIFICATION, width, allowed_root, allowed_child, alpha, min_leaf,
                  upper_bound)


@njit(cache=True, nogil=True)
def depth1_pair_misclassification(srt, lay, key, n_left, buf, y, w, stats, loss, width, order, allowed, alpha,
                                  min_leaf, upper):
    """:func:`depth1_pair` for misclassification, compiled with the loss a constant (``loss`` is ignored)."""
    return depth1_pair(srt, lay, key, n_left, buf, y, w, stats, MISCLASSIFICATION, width, order, allowed, alpha,
                       min_leaf, upper)


@njit(cache=True, nogil=True)
def depth1_pair_any_loss(srt, lay, key, n_left, buf, y, w, stats, loss, width, order, allowed, alpha, min_leaf,
                         upper):
    """:func:`depth1_pair` for any loss, cached with this module (see :data:`INLINED_SOURCES`)."""
    return depth1_pair(srt, lay, key, n_left, buf, y, w, stats, loss, width, order, allowed, alpha, min_leaf, upper)


def kernels_for(loss: int):
    """``(depth2, depth1_pair)`` for a loss code: the misclassification builds, or the generic ones."""
    if loss == MISCLASSIFICATION:
        return depth2_misclassification, depth1_pair_misclassification
    return depth2, depth1_pair_any_loss
