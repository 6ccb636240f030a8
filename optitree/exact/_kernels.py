"""Compiled kernels of the exact engine (numba, ``cache=True``).

Conventions shared by every kernel:

* ``rank[f, i]`` is the dense rank of sample ``i`` on feature ``f`` (0 = smallest value);
  a split ``(f, r)`` sends sample ``i`` left when ``rank[f, i] <= r``;
* a sample set is a *view* ``srt`` of shape ``(p, m)``: row ``f`` lists the set's sample
  indices sorted by ``rank[f]`` (ties in one fixed global order, so the view of a set is
  unique whatever path produced it);
* costs are the loss of the leaves plus ``alpha`` per split; ``min_leaf`` counts rows.

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

from ._fenwick import fenwick_add, local_target_ranks, median_cost, target_order  # noqa: F401 (K.target_order)

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


@njit(cache=True, nogil=True, inline="always")
def depth1_pair(srt, rank, y, w, stats, loss, width, order, split_feature, split_rank, allowed, alpha, min_leaf,
                upper):
    """:func:`depth1_sides` with the same ``upper`` for both sides (no bound known on either)."""
    return depth1_sides(srt, rank, y, w, stats, loss, width, order, split_feature, split_rank, allowed, alpha,
                        min_leaf, upper, 0.0, 0.0)


@njit(cache=True, nogil=True, inline="always")
def depth1_sides(srt, rank, y, w, stats, loss, width, order, split_feature, split_rank, allowed, alpha, min_leaf,
                 upper, known_left, known_right):
    """Optimal trees of depth <= 1 for both sides of a split, in one pass per feature.

    Side 0 holds the samples with ``rank[split_feature, i] <= split_rank``, side 1 the rest
    (``split_feature < 0``: every sample is on side 0); ``allowed[s]`` masks side ``s``'s
    features. For each allowed feature the view is swept once in rank order, every sample
    feeding its own side's prefix statistics; a side's candidate threshold is evaluated at
    each change of rank, and only trees of cost below ``min(incumbent, upper)`` are sought.
    A side stops early: similarity skip (a threshold whose cost exceeds the bar by ``d``
    cannot be beaten before rows of total :func:`row_dist` above ``d`` have moved), a
    zero-cost remainder (moving more samples left cannot lower the cost: monotone), or too
    few rows left for a leaf.

    Returns ``cost[2], lower[2], feature[2], rank_threshold[2]``: the best tree found per
    side (feature ``-1``: a leaf) and ``lower = min(cost, upper)``, a bound on the side's
    optimum, equal to it when ``cost < upper``. ``order`` is :func:`target_order` of ``srt``.

    ``known_left/known_right`` are lower bounds on the two sides' optima (e.g. from neighbouring
    thresholds): only the pair's sum must stay below ``upper``, so side 0 is searched below
    ``upper - known_right`` and side 1 below ``upper - known_left``; ``lower`` is then the
    least of ``cost`` and that side's own bar (no tree below it exists).
    """
    p, m = srt.shape
    total = np.zeros((2, width))
    n_side = np.zeros(2, np.int64)
    lo = np.full(2, np.inf)
    hi = np.full(2, -np.inf)
    weight = np.zeros(2)
    for t in range(m):
        i = srt[0, t]
        s = 0 if split_feature < 0 or rank[split_feature, i] <= split_rank else 1
        weight[s] += w[i]
        n_side[s] += 1
        if loss == MISCLASSIFICATION:
            total[s, y[i]] += w[i]
        else:
            add_row(total, s, i, y, w, stats, loss)
            lo[s] = min(lo[s], stats[i, 3])
            hi[s] = max(hi[s], stats[i, 3])
    dist_total = weight.copy()
    if loss != MISCLASSIFICATION:
        dist_total[:] = 0.0
        for t in range(m):
            i = srt[0, t]
            s = 0 if split_feature < 0 or rank[split_feature, i] <= split_rank else 1
            dist_total[s] += row_dist(i, w, stats, loss, lo[s], hi[s])
    fenwick = np.zeros((4, 2, m + 1 if loss == ABSOLUTE else 1))  # ABSOLUTE: side totals, prefixes
    tw, ty, fw, fy = fenwick[0], fenwick[1], fenwick[2], fenwick[3]
    rank_of, values = order
    if loss == ABSOLUTE:
        for t in range(m):
            i = srt[0, t]
            s = 0 if split_feature < 0 or rank[split_feature, i] <= split_rank else 1
            fenwick_add(tw[s], ty[s], rank_of[i], w[i], stats[i, 1])
    best = np.zeros(2)
    bar = np.zeros(2)  # a split must cost less than this to matter
    best_f = np.full(2, -1, np.int64)
    best_r = np.full(2, -1, np.int64)
    prefix = np.zeros((2, width))
    pw = np.zeros(2)
    for s in range(2):
        best[s] = split_costs(loss, s, prefix, total, pw, fw, fy, tw, ty, values)[1]
        bar[s] = min(best[s], upper - (known_right if s == 0 else known_left))
    pd = np.zeros(2)
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
        pd[:] = 0.0
        pn[:] = 0
        prev[:] = -1
        skip[:] = 0.0
        if loss == ABSOLUTE:
            fw[:] = 0.0
            fy[:] = 0.0
        for t in range(m):
            i = srt[g, t]
            s = 0 if split_feature < 0 or rank[split_feature, i] <= split_rank else 1
            if done[s]:
                continue
            r = rank[g, i]
            if pn[s] >= min_leaf and r != prev[s] and skip[s] < EPS:
                if loss == MISCLASSIFICATION:
                    left_top = 0.0
                    right_top = 0.0
                    for k in range(width):
                        if prefix[s, k] > left_top:
                            left_top = prefix[s, k]
                        rk = total[s, k] - prefix[s, k]
                        if rk > right_top:
                            right_top = rk
                    left_cost = pw[s] - left_top
                    right_cost = weight[s] - pw[s] - right_top
                else:
                    left_cost, right_cost = split_costs(loss, s, prefix, total, pw, fw, fy, tw, ty, values)
                cost = alpha + left_cost + right_cost
                if cost < bar[s] - EPS:
                    best[s] = bar[s] = cost
                    best_f[s] = g
                    best_r[s] = prev[s]
                    skip[s] = 0.0
                else:
                    skip[s] = cost - bar[s]
                if (right_cost <= EPS or skip[s] >= dist_total[s] - pd[s] - EPS
                        or bar[s] <= alpha + EPS):
                    done[s] = True
            if loss == MISCLASSIFICATION:
                prefix[s, y[i]] += w[i]
                d = w[i]
            else:
                add_row(prefix, s, i, y, w, stats, loss)
                if loss == ABSOLUTE:
                    fenwick_add(fw[s], fy[s], rank_of[i], w[i], stats[i, 1])
                d = row_dist(i, w, stats, loss, lo[s], hi[s])
            pw[s] += w[i]
            pd[s] += d
            pn[s] += 1
            prev[s] = r
            skip[s] -= d
            if n_side[s] - pn[s] < min_leaf:
                done[s] = True
            if done[s]:
                open_sides -= 1
                if open_sides == 0:
                    break
    lower = np.empty(2)
    lower[0] = min(best[0], upper - known_right)
    lower[1] = min(best[1], upper - known_left)
    return best, lower, best_f, best_r


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
    for f in stump_order(srt, rank, y, w, stats, loss, width, allowed_root):
        if min(best, upper_bound) <= alpha + EPS:
            break
        cand_r, cand_n, cand_w = candidates(srt, rank, w, stats, loss, f, min_leaf)
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
                cost, lower, feat, thr = depth1_sides(srt, rank, y, w, stats, loss, width, order, f, cand_r[mid],
                                                      allowed_child, alpha, min_leaf, limit, side_left, side_right)
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
def depth1_pair_misclassification(srt, rank, y, w, stats, loss, width, order, split_feature, split_rank, allowed,
                                  alpha, min_leaf, upper):
    """:func:`depth1_pair` for misclassification, compiled with the loss a constant (``loss`` is ignored)."""
    return depth1_pair(srt, rank, y, w, stats, MISCLASSIFICATION, width, order, split_feature, split_rank, allowed,
                       alpha, min_leaf, upper)


def kernels_for(loss: int):
    """``(depth2, depth1_pair)`` for a loss code: the misclassification builds, or the generic ones."""
    if loss == MISCLASSIFICATION:
        return depth2_misclassification, depth1_pair_misclassification
    return depth2, depth1_pair
