"""Compiled kernels of the exact engine (numba, ``cache=True``).

Conventions shared by every kernel:

* ``rank[f, i]`` is the dense rank of sample ``i`` on feature ``f`` (0 = smallest value);
  a split ``(f, r)`` sends sample ``i`` left when ``rank[f, i] <= r``;
* a sample set is a *view* ``srt`` of shape ``(p, m)``: row ``f`` lists the set's sample
  indices sorted by ``rank[f]`` (ties in one fixed global order, so the view of a set is
  unique whatever path produced it);
* costs are weighted misclassifications plus ``alpha`` per split; ``min_leaf`` counts rows.
"""

import numpy as np
from numba import njit

EPS = 1e-9


@njit(cache=True)
def class_weights(srt, y, w, n_classes):
    """Weighted class counts of a view's samples."""
    out = np.zeros(n_classes)
    for t in range(srt.shape[1]):
        i = srt[0, t]
        out[y[i]] += w[i]
    return out


@njit(cache=True)
def misclassified(counts):
    total = 0.0
    top = 0.0
    for k in range(counts.shape[0]):
        total += counts[k]
        if counts[k] > top:
            top = counts[k]
    return total - top


@njit(cache=True)
def depth1_pair(srt, rank, y, w, n_classes, split_feature, split_rank, allowed, alpha, min_leaf, upper):
    """Optimal trees of depth <= 1 for both sides of a split, in one pass per feature.

    Side 0 holds the samples with ``rank[split_feature, i] <= split_rank``, side 1 the rest
    (``split_feature < 0``: every sample is on side 0); ``allowed[s]`` masks side ``s``'s
    features. For each allowed feature the view is
    swept once in rank order, every sample feeding its own side's prefix counts; a side's
    candidate threshold is evaluated at each change of rank, and only trees of cost below
    ``min(incumbent, upper)`` are sought. A side stops early: similarity skip (a threshold
    whose cost exceeds the bar by ``d`` cannot be beaten before more than ``d`` weight has
    moved), a pure remainder (moving more samples left cannot lower the cost), or too few
    rows left for a leaf.

    Returns ``cost[2], lower[2], feature[2], rank_threshold[2]``: the best tree found per
    side (feature ``-1``: a leaf) and ``lower = min(cost, upper)``, a bound on the side's
    optimum, equal to it when ``cost < upper``.
    """
    p, m = srt.shape
    total = np.zeros((2, n_classes))
    n_side = np.zeros(2, np.int64)
    for t in range(m):
        i = srt[0, t]
        s = 0 if split_feature < 0 or rank[split_feature, i] <= split_rank else 1
        total[s, y[i]] += w[i]
        n_side[s] += 1
    weight = np.zeros(2)
    best = np.zeros(2)
    bar = np.zeros(2)  # a split must cost less than this to matter
    best_f = np.full(2, -1, np.int64)
    best_r = np.full(2, -1, np.int64)
    for s in range(2):
        weight[s] = total[s].sum()
        best[s] = misclassified(total[s])
        bar[s] = min(best[s], upper)
    prefix = np.zeros((2, n_classes))
    pw = np.zeros(2)
    pn = np.zeros(2, np.int64)
    prev = np.zeros(2, np.int64)
    skip = np.zeros(2)
    done = np.zeros(2, np.bool_)
    for g in range(p):
        open_sides = 0
        for s in range(2):
            done[s] = not allowed[s, g] or n_side[s] < 2 * min_leaf or bar[s] <= alpha + EPS
            open_sides += 0 if done[s] else 1
        if open_sides == 0:
            continue
        prefix[:] = 0.0
        pw[:] = 0.0
        pn[:] = 0
        prev[:] = -1
        skip[:] = 0.0
        for t in range(m):
            i = srt[g, t]
            s = 0 if split_feature < 0 or rank[split_feature, i] <= split_rank else 1
            if done[s]:
                continue
            r = rank[g, i]
            if pn[s] >= min_leaf and r != prev[s] and skip[s] < EPS:
                left_top = 0.0
                right_top = 0.0
                for k in range(n_classes):
                    if prefix[s, k] > left_top:
                        left_top = prefix[s, k]
                    rk = total[s, k] - prefix[s, k]
                    if rk > right_top:
                        right_top = rk
                right_errors = weight[s] - pw[s] - right_top
                cost = alpha + (pw[s] - left_top) + right_errors
                if cost < bar[s] - EPS:
                    best[s] = bar[s] = cost
                    best_f[s] = g
                    best_r[s] = prev[s]
                    skip[s] = 0.0
                else:
                    skip[s] = cost - bar[s]
                if (right_errors <= EPS or skip[s] >= weight[s] - pw[s] - EPS
                        or bar[s] <= alpha + EPS):
                    done[s] = True
            prefix[s, y[i]] += w[i]
            pw[s] += w[i]
            pn[s] += 1
            prev[s] = r
            skip[s] -= w[i]
            if n_side[s] - pn[s] < min_leaf:
                done[s] = True
            if done[s]:
                open_sides -= 1
                if open_sides == 0:
                    break
    lower = np.minimum(best, upper)
    return best, lower, best_f, best_r


@njit(cache=True)
def stump_order(srt, rank, y, w, n_classes, allowed):
    """Allowed features sorted by the cost of their best single split (best first).

    Searching the most promising features first gives strong incumbents early, which
    prunes the thresholds of the others.
    """
    p, m = srt.shape
    total = class_weights(srt, y, w, n_classes)
    weight = total.sum()
    score = np.full(p, np.inf)
    prefix = np.zeros(n_classes)
    for g in range(p):
        if not allowed[g]:
            continue
        score[g] = weight + 1.0  # no split: after every feature that has one
        prefix[:] = 0.0
        for t in range(m):
            i = srt[g, t]
            if t > 0 and rank[g, i] != rank[g, srt[g, t - 1]]:
                left_top = 0.0
                right_top = 0.0
                for k in range(n_classes):
                    left_top = max(left_top, prefix[k])
                    right_top = max(right_top, total[k] - prefix[k])
                score[g] = min(score[g], weight - left_top - right_top)
            prefix[y[i]] += w[i]
    order = np.argsort(score, kind="mergesort")
    count = 0
    for g in range(p):
        count += 1 if allowed[g] else 0
    return order[:count]


@njit(cache=True)
def candidates(srt, rank, w, feature, min_leaf):
    """Thresholds of ``feature`` within a view that leave ``>= min_leaf`` rows on each side.

    Returns ``(rank_threshold, n_left, weight_left)`` per candidate, in increasing order.
    """
    m = srt.shape[1]
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
        cum += w[i]
    return out_r[:count], out_n[:count], out_w[:count]


@njit(cache=True)
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


@njit(cache=True)
def point_bounds(j, a, b, weight_left, ev_left, ev_right, monotone):
    """Lower bounds on the two children's optima at candidate ``j`` from solved neighbours.

    ``a < j < b`` are candidates with known child lower bounds (``-1`` / ``T``: none);
    ``weight_left`` is increasing. Moving weight ``k`` into (out of) a set changes its
    optimum by at most ``k`` (similarity bound); without a minimum leaf size the optimum of
    a superset is never below the subset's (monotone), which gives the second terms.
    """
    T = weight_left.shape[0]
    lo_left = 0.0
    lo_right = 0.0
    if a >= 0:
        lo_right = max(lo_right, ev_right[a] - (weight_left[j] - weight_left[a]))
        if monotone:
            lo_left = max(lo_left, ev_left[a])
    if b < T:
        lo_left = max(lo_left, ev_left[b] - (weight_left[b] - weight_left[j]))
        if monotone:
            lo_right = max(lo_right, ev_right[b])
    return lo_left, lo_right


@njit(cache=True)
def shrink(lo, hi, a, b, weight_left, ev_left, ev_right, monotone, limit, out_left, out_right):
    """Drop candidates at both ends of ``[lo, hi]`` whose bound reaches ``limit``.

    A candidate's bound is the larger of its neighbours' (:func:`point_bounds`) and the one
    already in ``out_left/out_right`` (zero, or a bound known beforehand, e.g. from a relaxation).
    Bounds of dropped candidates are recorded (elementwise max) in ``out_left/out_right``.
    Returns the remaining ``(lo, hi)`` (empty when ``lo > hi``).
    """
    while lo <= hi:
        bl, br = point_bounds(lo, a, b, weight_left, ev_left, ev_right, monotone)
        bl, br = max(bl, out_left[lo]), max(br, out_right[lo])
        if bl + br < limit - EPS:
            break
        out_left[lo] = max(out_left[lo], bl)
        out_right[lo] = max(out_right[lo], br)
        lo += 1
    while hi >= lo:
        bl, br = point_bounds(hi, a, b, weight_left, ev_left, ev_right, monotone)
        bl, br = max(bl, out_left[hi]), max(br, out_right[hi])
        if bl + br < limit - EPS:
            break
        out_left[hi] = max(out_left[hi], bl)
        out_right[hi] = max(out_right[hi], br)
        hi -= 1
    return lo, hi


@njit(cache=True)
def fill_bounds(lo, hi, a, b, weight_left, ev_left, ev_right, monotone, out_left, out_right):
    """Record neighbour bounds (elementwise max) for every candidate of ``[lo, hi]``; return their min sum."""
    lowest = np.inf
    for j in range(lo, hi + 1):
        bl, br = point_bounds(j, a, b, weight_left, ev_left, ev_right, monotone)
        out_left[j] = max(out_left[j], bl)
        out_right[j] = max(out_right[j], br)
        lowest = min(lowest, out_left[j] + out_right[j])
    return lowest


@njit(cache=True)
def depth2(srt, rank, y, w, n_classes, allowed_root, allowed_child, alpha, min_leaf, upper_bound):
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
    best = misclassified(class_weights(srt, y, w, n_classes))
    monotone = min_leaf <= 1
    for f in stump_order(srt, rank, y, w, n_classes, allowed_root):
        if min(best, upper_bound) <= alpha + EPS:
            break
        cand_r, cand_n, cand_w = candidates(srt, rank, w, f, min_leaf)
        T = cand_r.shape[0]
        if T == 0:
            continue
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
            cost, lower, feat, thr = depth1_pair(srt, rank, y, w, n_classes, f, cand_r[mid], allowed_child,
                                                 alpha, min_leaf, limit)
            ev_left[mid] = lower[0]
            ev_right[mid] = lower[1]
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
