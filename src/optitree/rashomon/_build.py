"""The Rashomon set's dynamic programme: sub-problems with sorted objective values, counts and shared children.

A sub-problem is the set of kept rows reaching a node and the depth left there (memoised by
both). It holds, up to its budget ``B`` (an objective in the set's units: loss / normaliser +
``alpha`` per leaf), every tree of the sub-problem with cost <= ``B``: the leaf, and per split
option (one per original feature and unordered partition of the rows into two non-empty
children) the pairs of a tree of each child whose costs sum to <= ``B``. Only the sorted
distinct costs and their counts are stored per sub-problem and per option, with references to
the children's sub-problems: never a list of trees.

Pruning: the exact engine's :func:`optitree.exact.split_bounds` gives, for every split candidate
of the node, lower bounds (the optima) of both children's sub-trees; a candidate with
``lower(L) + lower(R) > B`` holds no tree of the budget. Children are built with budgets
``B - lower(R)`` and ``B - min(L)``. Leaf costs are computed here in two passes from the rows
(the engine's numbers only prune, with a slack), so every stored cost is the sum of its leaves'.
"""

from __future__ import annotations

import hashlib
import time

import numpy as np

from .. import exact
from ..problem import get_loss

#: Relative slack on the engine's bounds when pruning and when passing budgets down (its regression
#: optima hold to about 1e-9 of the targets' range; classification ones are exact sums).
SLACK = 1e-7
#: Bytes a build may hold in sub-problems and options (an estimate: row arrays, value and count arrays,
#: about 400 bytes of Python objects each) before it refuses (ValueError): regression sets, whose trees
#: rarely share an objective, reach millions of options at depth 3.
MEMORY_LIMIT = 1 << 30
#: Most pairs of child costs one convolution may sum (its temporaries grow with them): beyond, the set
#: is refused as too large (ValueError), e.g. regression sets whose trees nearly all differ in cost.
MAX_PAIRS = 20_000_000
#: Sums formed at once within a convolution (bounds its temporary arrays to some 10 MB).
CHUNK = 1_000_000
#: Counts up to this fit in int64 products and sums; beyond, Python integers (object arrays).
_INT_SAFE = 2**62


class Option:
    """One split of a sub-problem: its column, rank threshold, children and the costs of its trees."""

    __slots__ = ("feature", "column", "rank", "left", "right", "lbud", "rbud", "budget", "values", "counts")

    def __init__(self, feature, column, rank, left, right, lbud, rbud, budget, values, counts):
        self.feature, self.column, self.rank = feature, column, rank
        self.left, self.right, self.lbud, self.rbud, self.budget = left, right, lbud, rbud, budget
        self.values, self.counts = values, counts


class Node:
    """A sub-problem (rows, depth left): its leaf cost, split options and sorted distinct costs with counts."""

    __slots__ = ("rows", "depth", "budget", "leaf", "leaf_ok", "options", "values", "counts", "by_key", "charge")

    def __init__(self, rows, depth, leaf, leaf_ok):
        self.rows, self.depth, self.leaf, self.leaf_ok = rows, depth, leaf, leaf_ok
        self.budget = -np.inf
        self.options: list[Option] = []
        self.values = np.zeros(0)
        self.counts = np.zeros(0, np.int64)
        self.by_key: dict = {}
        self.charge = 0  # bytes of its options in the builder's estimate

    def count_at(self, v: float) -> int:
        """Number of the node's trees of cost exactly ``v``."""
        i = int(np.searchsorted(self.values, v))
        return int(self.counts[i]) if i < self.values.size and self.values[i] == v else 0


def _counts_dtype(*arrays):
    return object if any(a.dtype == object for a in arrays) else np.int64


def sum_by_value(values: list, counts: list):
    """Distinct sorted values of the concatenation and the summed counts (exact integers)."""
    if not values:
        return np.zeros(0), np.zeros(0, np.int64)
    if len(values) == 1 and (values[0].size < 2 or (values[0][1:] > values[0][:-1]).all()):
        return values[0], counts[0]  # already sorted and distinct
    v = np.concatenate(values)
    dtype = _counts_dtype(*counts)
    c = np.concatenate([np.asarray(x, dtype=dtype) for x in counts])
    if dtype != object and c.size and int(c.max()) > _INT_SAFE // max(1, c.size):
        c, dtype = c.astype(object), object
    uniq, inv = np.unique(v, return_inverse=True)
    out = np.zeros(uniq.size, dtype=dtype)
    if dtype == object:
        out[:] = 0
    np.add.at(out, inv, c)
    return uniq, out


def _times(c, counts):
    """``c * counts`` exactly (Python integers when int64 could overflow)."""
    if counts.dtype != object and int(c) * int(counts.max()) <= _INT_SAFE:
        return counts * int(c)
    return counts.astype(object) * int(c)


def convolve(av, ac, bv, bc, budget):
    """Sorted distinct sums ``a + b <= budget`` over the pairs of two value lists, with count products."""
    av_keep = av[av + (bv[0] if bv.size else np.inf) <= budget]
    if not av_keep.size:
        return np.zeros(0), np.zeros(0, np.int64)
    bv_keep = bv[av_keep[0] + bv <= budget]
    if av_keep.size == 1 or bv_keep.size == 1:  # one row of sums: no outer product
        if av_keep.size == 1:
            s, prods = av_keep[0] + bv_keep, _times(ac[0], bc[:bv_keep.size])
        else:
            s, prods = av_keep + bv_keep[0], _times(bc[0], ac[:av_keep.size])
        return sum_by_value([s], [prods])
    pairs = int(np.searchsorted(bv_keep, budget - av_keep, side="right").sum())
    if pairs > MAX_PAIRS:
        raise MemoryError
    step = max(1, CHUNK // bv_keep.size)
    values, counts = [], []
    b_c = bc[:bv_keep.size]
    for start in range(0, av_keep.size, step):
        a = av_keep[start:start + step]
        s = a[:, None] + bv_keep[None, :]
        mask = s <= budget
        a_c = ac[start:start + a.size]
        dtype = _counts_dtype(a_c, b_c)
        if dtype != object and int(a_c.max()) * int(b_c.max()) > _INT_SAFE // max(1, s.size):
            dtype = object
        prods = np.multiply.outer(a_c.astype(dtype), b_c.astype(dtype))
        v, n = sum_by_value([s[mask]], [prods[mask]])
        values.append(v)
        counts.append(n)
    return sum_by_value(values, counts) if len(values) > 1 else (values[0], counts[0])


class Builder:
    """Builds the sub-problems of one Rashomon set over an :class:`~optitree.exact.ExactData` (problem units).

    Parameters
    ----------
    data : ExactData
        Prepared with ``report="problem"`` (engine costs in the internal units).
    column_feature : int array (n_columns,)
        Original feature of each column of ``data`` (the split space's).
    alpha : float
        Cost per leaf in the set's units.
    norm : float
        Loss normaliser (internal units): total weight, SST or SAT.
    allowed : bool array (max_depth, n_columns)
        Columns allowed per level (row 0: the root).
    min_leaf : int
    deadline : float
        ``time.perf_counter()`` time at which the build stops (inf: none).
    """

    def __init__(self, data, column_feature, alpha, norm, allowed, min_leaf, deadline):
        self.data, self.column_feature = data, np.asarray(column_feature)
        self.alpha, self.norm, self.allowed, self.min_leaf = float(alpha), float(norm), allowed, int(min_leaf)
        self.max_depth = allowed.shape[0]
        self.deadline = deadline
        self.memo: dict = {}
        self.leaf_memo: dict = {}
        self.n_options = 0
        self.n_bound_calls = 0
        self.bytes = 0  # the estimate checked against MEMORY_LIMIT
        #: The time limit ran out: sub-problems filled since hold only the trees found (counts are lower bounds).
        self.stopped = False

    def _charge(self, n_bytes: int) -> None:
        self.bytes += n_bytes
        if self.bytes > MEMORY_LIMIT:
            raise MemoryError

    # ------------------------------------------------------------------ costs
    def leaf_cost(self, rows: np.ndarray) -> float:
        """Loss of one leaf on ``rows`` (its best value) / ``norm`` + ``alpha``; two passes, memoised."""
        key = _digest(rows)
        cost = self.leaf_memo.get(key)
        if cost is None:
            cost = loss_of_rows(self.data, rows) / self.norm + self.alpha
            self.leaf_memo[key] = cost
        return cost

    # ------------------------------------------------------------------ the programme
    def build(self, rows: np.ndarray, depth: int, budget: float) -> Node:
        """The sub-problem ``(rows, depth)`` holding every tree of cost <= ``budget`` (memoised; widened on demand)."""
        key = (_digest(rows), depth)
        node = self.memo.get(key)
        if node is not None and node.budget >= budget:
            return node
        if node is None:
            node = Node(rows, depth, self.leaf_cost(rows), rows.size >= self.min_leaf)
            self.memo[key] = node
            self._charge(rows.nbytes + 600)
        self._fill(node, budget)
        return node

    def _fill(self, node: Node, budget: float) -> None:
        if not self.stopped and time.perf_counter() > self.deadline:
            self.stopped = True
        self.n_options -= len(node.options)
        self.bytes -= node.charge
        node.options, node.by_key, node.charge = [], {}, 0
        rows, depth = node.rows, node.depth
        values, counts = [], []
        if node.leaf_ok and node.leaf <= budget:
            values.append(np.array([node.leaf]))
            counts.append(np.array([1], np.int64))
        if depth >= 1 and rows.size >= 2 * self.min_leaf and 2 * self.alpha <= budget and not self.stopped:
            for option in self._options(node, budget):
                values.append(option.values)
                counts.append(option.counts)
        node.values, node.counts = sum_by_value(values, counts)
        node.budget = budget

    def _engine_bounds(self, rows, depth, allowed, budget, slack):
        """Columns, rank thresholds and the engine's lower bounds of both children of every candidate (or None)."""
        data = self.data
        # engine cost of a tree rooted at a split = (cost here - alpha) * norm (alpha_e per split); a candidate
        # not solved exactly gets a bound at or above the cutoff: above budget + slack, so that it is pruned
        cutoff = (budget + 2 * slack - self.alpha) * self.norm
        remaining = self.deadline - time.perf_counter()
        if remaining <= 0:
            self.stopped = True
            return None
        self.n_bound_calls += 1
        sb = exact.split_bounds(data, depth=depth, samples=rows, alpha=self.alpha * self.norm,
                                min_samples_leaf=self.min_leaf, allowed_features=allowed, cutoff=cutoff,
                                time_limit=None if not np.isfinite(remaining) else remaining)
        if not sb.complete:  # a spent time limit: its bounds hold, but stop here
            self.stopped = True
            return None
        low_l, low_r = sb.left_bound / self.norm + self.alpha, sb.right_bound / self.norm + self.alpha
        ranks = np.full(sb.feature.size, -1, np.intp)  # only the candidates that may be kept need theirs
        near = np.flatnonzero(low_l + low_r <= budget + slack)
        for f in np.unique(sb.feature[near]).tolist():
            at = near[sb.feature[near] == f]
            ranks[at] = np.searchsorted(data.thresholds[f], sb.threshold[at])
        return sb.feature, ranks, low_l, low_r

    def _stumps(self, rows, allowed):
        """Every split of a depth-1 node at once with numpy: columns, rank thresholds, both leaves' costs
        (prefix sums: for pruning only, with the rounding allowance returned last)."""
        data = self.data
        cols = np.flatnonzero(allowed)
        mask = np.zeros(data.n_samples, bool)
        mask[rows] = True
        view = data.view[cols]
        ordered = view[mask[view]].reshape(cols.size, rows.size)
        rank = data.rank[cols[:, None], ordered]
        n_left = np.arange(1, rows.size)
        ok = rank[:, 1:] != rank[:, :-1]
        if self.min_leaf > 1:
            ok &= (n_left >= self.min_leaf) & (rows.size - n_left >= self.min_leaf)
        fi, pos = np.nonzero(ok)
        w = data.weight[ordered]
        cw = np.cumsum(w, axis=1)
        lw = cw[fi, pos]
        tw = float(cw[0, -1])
        if data.is_regression:
            t = data.stats[ordered, 3]
            t = t - float(w[0] @ t[0]) / tw  # about the node's mean: less cancellation
            c1, c2 = np.cumsum(w * t, axis=1), np.cumsum(w * t * t, axis=1)
            l1, l2 = c1[fi, pos], c2[fi, pos]
            t1, t2 = float(c1[0, -1]), float(c2[0, -1])
            loss_l = np.maximum(l2 - l1 * l1 / lw, 0.0)
            rw, r1 = tw - lw, t1 - l1
            loss_r = np.maximum((t2 - l2) - r1 * r1 / rw, 0.0)
            extra = 1e-12 * t2 / self.norm
        else:
            y = data.y[ordered]
            best_l = np.zeros(fi.size)
            best_r = np.zeros(fi.size)
            for k in range(data.n_classes):
                ck = np.cumsum(np.where(y == k, w, 0.0), axis=1)
                lk = ck[fi, pos]
                np.maximum(best_l, lk, out=best_l)
                np.maximum(best_r, float(ck[0, -1]) - lk, out=best_r)
            loss_l, loss_r = lw - best_l, (tw - lw) - best_r
            extra = 1e-12 * tw / self.norm
        low_l = loss_l / self.norm + self.alpha
        low_r = loss_r / self.norm + self.alpha
        return cols[fi], rank[fi, pos], low_l, low_r, extra

    def _options(self, node: Node, budget: float):
        data, rows, depth = self.data, node.rows, node.depth
        level = self.max_depth - depth
        allowed = self.allowed[level:level + depth]
        if not allowed[0].any():
            return
        slack = SLACK * max(budget, self.alpha)
        if depth == 1 and data.loss != "absolute":
            cols, r_all, low_l, low_r, extra = self._stumps(rows, allowed[0])
            slack += extra
            keep = np.flatnonzero(low_l + low_r <= budget + slack)
        else:
            found = self._engine_bounds(rows, depth, allowed, budget, slack)
            if found is None:
                return
            cols, r_all, low_l, low_r = found
            keep = np.flatnonzero(low_l + low_r <= budget + slack)
        if not keep.size:
            return
        ranks = data.rank[:, rows]
        first = int(rows[0])
        for c in keep.tolist():
            if self.stopped or time.perf_counter() > self.deadline:
                self.stopped = True
                return
            col, r = int(cols[c]), int(r_all[c])
            goes_left = ranks[col] <= r
            lrows, rrows = rows[goes_left], rows[~goes_left]
            if not lrows.size or not rrows.size:
                continue
            feature = int(self.column_feature[col])
            canon = lrows if lrows[0] == first else rrows  # the child holding the node's first row
            key = (feature, _digest(canon))
            if key in node.by_key:
                continue
            lbud = budget - low_r[c] + slack
            left = self.build(lrows, depth - 1, lbud)
            if not left.values.size:
                continue
            rbud = budget - left.values[0] + slack
            right = self.build(rrows, depth - 1, rbud)
            if not right.values.size:
                continue
            v, n = convolve(left.values[left.values <= lbud], left.counts, right.values[right.values <= rbud],
                            right.counts, budget)
            if not v.size:
                continue
            option = Option(feature, col, r, left, right, lbud, rbud, budget, v, n)
            node.by_key[key] = len(node.options)
            node.options.append(option)
            self.n_options += 1
            size = 400 + v.nbytes + n.nbytes * (5 if n.dtype == object else 1)  # a Python int: about 40 bytes
            node.charge += size
            self._charge(size)
            yield option


def _digest(rows: np.ndarray) -> bytes:
    """A 16-byte key of a row set (BLAKE2b: collisions are out of reach, and the key is short)."""
    return hashlib.blake2b(rows.tobytes(), digest_size=16).digest()


def loss_of_rows(data, rows: np.ndarray) -> float:
    """Loss of the best constant leaf on ``rows`` in the problem's internal units (two passes)."""
    t = data.stats[rows, 3] if data.is_regression else data.y[rows]
    return get_loss(data.loss).leaf_loss(t, data.weight[rows])


# ---------------------------------------------------------------------- walking the counts
def tree_at(node: Node, v: float, j: int):
    """The ``j``-th tree (0-based) of cost exactly ``v`` of ``node``: None (leaf) or ``(column, rank, left, right)``.

    Order within a cost: the leaf, then the options in the order they were found; within an option
    by the left child's cost, then the left tree, then the right tree.
    """
    if node.leaf_ok and node.leaf == v and node.leaf <= node.budget:
        if j == 0:
            return None
        j -= 1
    for option in node.options:
        n = _option_count_at(option, v)
        if j < n:
            return _pair_at(option, v, j)
        j -= n
    raise IndexError("no such tree (internal: counts disagree)")


def _option_count_at(option: Option, v: float) -> int:
    i = int(np.searchsorted(option.values, v))
    return int(option.counts[i]) if i < option.values.size and option.values[i] == v else 0


def _pair_at(option: Option, v: float, j: int):
    left, right = option.left, option.right
    lv = left.values[left.values <= option.lbud]
    rv = right.values[right.values <= option.rbud]
    for ia, a in enumerate(lv.tolist()):
        hits = np.flatnonzero(a + rv == v)
        for ib in hits.tolist():
            ca, cb = int(left.counts[ia]), int(right.counts[ib])
            if j < ca * cb:
                jl, jr = divmod(j, cb)
                return (option.column, option.rank, tree_at(left, a, jl), tree_at(right, float(rv[ib]), jr))
            j -= ca * cb
    raise IndexError("no such tree (internal: counts disagree)")


def features_below(node: Node, memo: dict) -> int:
    """Bit mask of the features some option of ``node``'s sub-problems splits on."""
    key = id(node)
    hit = memo.get(key)
    if hit is None:
        hit = 0
        for option in node.options:
            hit |= (1 << option.feature) | features_below(option.left, memo) | features_below(option.right, memo)
        memo[key] = hit
    return hit


def counts_without(node: Node, feature: int, memo: dict, below: dict):
    """Sorted costs (<= the node's budget) and counts of ``node``'s trees that never split on ``feature``."""
    if not features_below(node, below) >> feature & 1:
        return node.values, node.counts
    hit = memo.get(id(node))
    if hit is not None:
        return hit
    values, counts = [], []
    if node.leaf_ok and node.leaf <= node.budget:
        values.append(np.array([node.leaf]))
        counts.append(np.array([1], np.int64))
    for option in node.options:
        if option.feature == feature:
            continue
        lv, lc = counts_without(option.left, feature, memo, below)
        rv, rc = counts_without(option.right, feature, memo, below)
        lk, rk = int(np.searchsorted(lv, option.lbud, "right")), int(np.searchsorted(rv, option.rbud, "right"))
        if lk and rk:
            v, n = convolve(lv[:lk], lc[:lk], rv[:rk], rc[:rk], option.budget)
            values.append(v)
            counts.append(n)
    out = sum_by_value(values, counts)
    memo[id(node)] = out
    return out
