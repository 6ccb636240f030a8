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
evaluated in ``O(K)``.
"""

import numpy as np
from numba import njit

from ._loss import EPS

#: Most columns (thresholds over all features) for which :func:`depth2_pairs` is used (its pair table
#: is ``columns**2 * K``).
MAX_COLUMNS = 128
#: Most thresholds per feature, on average, for which :func:`depth2_pairs` is used: a row has about
#: half of a feature's columns set, and the sweep kernel prices a feature's thresholds in one pass.
#: Measured at depth 4 (pair / sweep time): 2-3 thresholds per feature 0.19-0.27, 7 0.49-0.60,
#: 15 0.98-1.26, iris (30) 3.8.
MAX_MEAN_THRESHOLDS = 10


@njit(cache=True, nogil=True)
def _leaf(total, a, sa, b, sb, c, sc, width):
    """Misclassified weight of a leaf whose class weights are ``total*1 + sa*a + sb*b + sc*c`` (signs 0/±1)."""
    weight = 0.0
    top = 0.0
    for k in range(width):
        v = total[k] + sa * a[k] + sb * b[k] + sc * c[k]
        weight += v
        if v > top:
            top = v
    return weight - top


@njit(cache=True, nogil=True)
def depth2_pairs(col_feature, col_rank, srt, rank, y, w, stats, loss, width, allowed_root, allowed_child, alpha,
                 min_leaf, upper_bound):
    """Optimal tree of depth <= 2 over the columns ``(col_feature[c], col_rank[c])``.

    The other arguments and the returns are those of :func:`_kernels.depth2`.

    Exact, but for an early stop once ``upper_bound`` or the incumbent is at most ``alpha`` (no
    split can beat it; the bound is then ``min(cost, alpha)``). ``stats``, ``loss`` are unused
    (misclassification).
    """
    m = srt.shape[1]
    p = col_feature.shape[0]
    rows = srt[0]
    zero = np.zeros(width)
    total = np.zeros(width)
    one = np.zeros((p, width))
    n_one = np.zeros(p, np.int64)
    pair = np.zeros((p, p, width))
    n_pair = np.zeros((p, p), np.int64)
    ones = np.empty(p, np.int64)
    for t in range(m):
        i = rows[t]
        c = y[i]
        wi = w[i]
        total[c] += wi
        s = 0
        for f in range(p):
            if rank[col_feature[f], i] > col_rank[f]:
                ones[s] = f
                s += 1
        for a in range(s):
            fa = ones[a]
            one[fa, c] += wi
            n_one[fa] += 1
            for b in range(a + 1, s):
                pair[fa, ones[b], c] += wi
                n_pair[fa, ones[b]] += 1
    least = max(min_leaf, 1)  # rows per leaf
    nodes = np.full(6, -1, np.int64)
    best = _leaf(total, zero, 0.0, zero, 0.0, zero, 0.0, width)
    bound_of_rest = np.inf  # a stop before every root feature was tried: the others cost >= alpha
    for i in range(p):
        if min(best, upper_bound) <= alpha + EPS:
            bound_of_rest = alpha
            break
        n_right = n_one[i]
        n_left = m - n_right
        if not allowed_root[col_feature[i]] or n_left < least or n_right < least:
            continue
        left_cost = _leaf(total, one[i], -1.0, zero, 0.0, zero, 0.0, width)
        right_cost = _leaf(zero, one[i], 1.0, zero, 0.0, zero, 0.0, width)
        left_feature = -1
        right_feature = -1
        for j in range(p):
            if j == i:
                continue
            q = pair[i, j] if i < j else pair[j, i]
            n_q = n_pair[i, j] if i < j else n_pair[j, i]
            if allowed_child[0, col_feature[j]]:
                n_lr = n_one[j] - n_q
                if n_lr >= least and n_left - n_lr >= least:
                    cost = alpha + _leaf(total, one[i], -1.0, one[j], -1.0, q, 1.0, width) + \
                        _leaf(zero, one[j], 1.0, q, -1.0, zero, 0.0, width)
                    if cost < left_cost - EPS:
                        left_cost, left_feature = cost, j
            if allowed_child[1, col_feature[j]]:
                if n_q >= least and n_right - n_q >= least:
                    cost = alpha + _leaf(zero, one[i], 1.0, q, -1.0, zero, 0.0, width) + \
                        _leaf(zero, q, 1.0, zero, 0.0, zero, 0.0, width)
                    if cost < right_cost - EPS:
                        right_cost, right_feature = cost, j
        cost = alpha + left_cost + right_cost
        if cost < best - EPS:
            best = cost
            nodes[0], nodes[1] = col_feature[i], col_rank[i]
            if left_feature >= 0:
                nodes[2], nodes[3] = col_feature[left_feature], col_rank[left_feature]
            else:
                nodes[2], nodes[3] = -1, -1
            if right_feature >= 0:
                nodes[4], nodes[5] = col_feature[right_feature], col_rank[right_feature]
            else:
                nodes[4], nodes[5] = -1, -1
    return best, min(best, bound_of_rest), nodes


def pair_kernel(data):
    """:func:`depth2_pairs` bound to ``data``'s columns (the signature of :func:`_kernels.depth2`), or None.

    None unless the loss is misclassification and the thresholds of all features number at
    most :data:`MAX_COLUMNS`, at most :data:`MAX_MEAN_THRESHOLDS` per feature on average.
    """
    counts = [len(t) for t in data.thresholds]
    if data.is_regression or sum(counts) > min(MAX_COLUMNS, MAX_MEAN_THRESHOLDS * len(counts)):
        return None
    col_feature = np.repeat(np.arange(len(counts)), counts).astype(np.int64)
    col_rank = np.concatenate([np.arange(c) for c in counts] + [np.zeros(0, int)]).astype(np.int64)

    def depth2(*args):
        return depth2_pairs(col_feature, col_rank, *args)

    return depth2
