"""The root-slab bound of a stopped deep search: each root feature bounded by slabs of its order.

Without a split cost and a minimum leaf size, optima are superadditive: for disjoint row sets
``A`` and ``B``, ``OPT0_d(A ∪ B) >= OPT0_d(A) + OPT0_d(B)`` -- an optimal tree of ``A ∪ B``
restricted to ``A`` is a tree of ``A`` of the same depth (per-row losses are non-negative; a
split sending all of ``A`` one way is lifted away, which costs nothing without ``alpha``).

A tree of depth ``D`` on rows ``S`` is a leaf, or splits its root on a feature ``f``: the left
child gets a prefix ``L`` of ``S`` in ``f``'s order, the right one the rest ``R``, each a tree
of depth ``<= D - 1`` (shallower trees included), so it costs at least
``alpha + OPT0_{D-1}(L) + OPT0_{D-1}(R)`` (``alpha`` for the root's split; the children's own
splits and leaf sizes only add or restrict). Cut ``S`` in ``f``'s order into consecutive pieces
``P_1 .. P_m`` with lower bounds ``b_j <= OPT0_{D-1}(P_j)``: ``L`` is ``P_1 .. P_{i-1}`` whole and
a prefix of ``P_i``, so by superadditivity

    OPT0_{D-1}(L) + OPT0_{D-1}(R) >= sum_{j != i} b_j + keep_i,
    B_f = min_i [sum_{j != i} b_j + keep_i] = sum_j b_j - max_j (b_j - keep_i),

where ``keep_i`` bounds ``OPT0(L ∩ P_i) + OPT0(R ∩ P_i)`` for every cut of ``P_i``: 0 for a
piece solved as is; for a piece merged of adjacent ``a`` then ``b`` (a cut inside ``a`` leaves
``b`` whole on the right, one inside ``b`` leaves ``a`` on the left)
``keep = min(b_b + keep_a, b_a + keep_b)``, and its bound ``max(OPT0 bound, b_a + b_b)``, so a
merge never lowers ``B_f``. Hence

    OPT_D(S) >= min(leaf(S), alpha + min_f B_f)

over the root's features that split ``S``. ``B_f`` is valid at any point (an unsolved piece
counts 0, which only lowers it), so the bound rises piece by piece: the pieces of the feature of
least ``B_f`` are solved first, then adjacent pairs of it merged (of the smallest unions, the pair of
largest ``b_a + b_b``, where one depth-``D - 1`` tree over both fits worst). The pieces are solved at depth ``D - 1``
without ``alpha`` and ``min_leaf``, so the bound needs the same features at every node.
"""

from __future__ import annotations

import numpy as np

from ._data import ExactData

#: Rows per piece. Measured (20 000 rows, 10 features, depth 4, one thread): per feature, pieces of
#: 125 rows give B_f 563-793 in 3.2-3.9 s, of 250 rows 1 010-1 168 in 6.3-9.7 s, of 500 rows
#: 1 296-1 310 in 20-24 s.
SLAB_ROWS = 250
#: Fewest rows (and depth) of a problem the bound is computed for: at least 16 pieces per feature.
SLAB_MIN_ROWS = 16 * SLAB_ROWS
SLAB_MIN_DEPTH = 4
#: Largest merged piece, in rows: a piece of 1 000 rows took about 3 s at depth 3 (the 250-row ones 0.1 s).
MAX_MERGED_ROWS = 4 * SLAB_ROWS
#: Share of ``time_limit`` and ``work_limit`` a search the bound applies to keeps for the stopped-search
#: bounds (instead of ``BOUND_RESERVE``). Measured (20 000 rows, 10 features, depth 4, 120 s, one
#: thread): the pieces of all ten features take 78 s of one core; the search has its best tree (2 053
#: errors) within 10 s; with 0.8 the bound reached 1 098.
SLAB_RESERVE = 0.8
#: A search stopped at ``1 - SLAB_RESERVE`` of its limits whose own bound is at least this share of its
#: tree's cost searches on instead, from its cache, to ``1 - BOUND_RESERVE`` (its bound rises as it goes,
#: so its proof may be near). Measured at that point: 20 000 x 10, depth 4, 24 s: 0.03 (the slab bound
#: then reaches 0.53 of the tree); wilt-like 4 839 x 5, depth 4, 40 s: 0.90 (proven at 145 s with a 200 s
#: limit; with the reserve spent on slabs, bound 44 for 48); 4 000 x 5 with six values, depth 4, at 40 %
#: of its proof's work: 0.38.
SLAB_SKIP_SHARE = 0.25


def slab_bound_applies(n_rows: int, depth: int) -> bool:
    """Whether :func:`root_slab_bound` is computed for a stopped search of ``n_rows`` rows at ``depth``."""
    return depth >= SLAB_MIN_DEPTH and n_rows >= SLAB_MIN_ROWS


class _FeaturePieces:
    """One root feature's pieces (consecutive runs of its order): their bounds ``b`` and ``keep``."""

    def __init__(self, order: np.ndarray, n_pieces: int):
        self.order = order
        self.ends = [order.size * (j + 1) // n_pieces for j in range(n_pieces)]
        self.bound = [0.0] * n_pieces
        self.keep = [0.0] * n_pieces
        self.solved = 0  # pieces solved, in order

    def value(self) -> float:
        """``B_f``: ``sum_j b_j - max_j (b_j - keep_j)``."""
        return sum(self.bound) - max(b - k for b, k in zip(self.bound, self.keep))

    def rows(self, j: int, count: int = 1) -> np.ndarray:
        """Rows of pieces ``j .. j + count - 1``."""
        return self.order[(self.ends[j - 1] if j else 0):self.ends[j + count - 1]]

    def merge_candidate(self) -> int | None:
        """First piece of the next pair to merge: the fewest rows, then the largest ``b_a + b_b``, at most
        :data:`MAX_MERGED_ROWS` rows. Merging a merged piece again grows the largest ``b - keep`` by its
        gain, so pairs are merged level by level."""
        best, best_key = None, None
        for j in range(len(self.ends) - 1):
            size = self.rows(j, 2).size
            key = (-size, self.bound[j] + self.bound[j + 1])
            if size <= MAX_MERGED_ROWS and (best_key is None or key > best_key):
                best, best_key = j, key
        return best

    def merge(self, j: int, solved_bound: float) -> None:
        """Replace pieces ``j`` and ``j + 1`` by their union, ``solved_bound`` a bound on its optimum."""
        (ba, bb), (ka, kb) = self.bound[j:j + 2], self.keep[j:j + 2]
        self.bound[j:j + 2] = [max(solved_bound, ba + bb)]
        self.keep[j:j + 2] = [min(bb + ka, ba + kb)]
        del self.ends[j]
        self.solved -= 1


def root_slab_bound(data: ExactData, view, allowed, alpha: float, leaf: float, solve_piece, stop_at: float,
                    report=None) -> float:
    """The root-slab bound on ``OPT_D(view)``, raised until ``solve_piece`` says the budget is spent.

    ``allowed``: the root's features; ``leaf``: the view as one leaf; ``alpha``: the cost of a split.
    ``solve_piece(rows) -> (bound, go_on)`` bounds ``OPT0_{D-1}(rows)`` (no ``alpha``, no minimum
    leaf size) and says whether there is budget left. The bound stops rising at ``stop_at`` (the
    incumbent's cost). ``report(bound)`` gets each rise.
    """
    n = view.shape[1]
    pieces = [_FeaturePieces(view[f], max(2, n // SLAB_ROWS)) for f in np.flatnonzero(allowed)
              if data.rank[f, view[f][0]] != data.rank[f, view[f][-1]]]  # features that split the view
    if not pieces:
        return leaf
    best, go_on = 0.0, True
    while True:
        least = min(pieces, key=_FeaturePieces.value)
        bound = min(leaf, alpha + least.value())
        if bound > best:
            best = bound
            if report is not None:
                report(best)
        if best >= stop_at or not go_on:
            return best
        if least.solved < len(least.ends):
            j = least.solved
            least.bound[j], go_on = solve_piece(least.rows(j))
            least.solved += 1
        else:
            j = least.merge_candidate()
            if j is None:  # the least feature's bound is final
                return best
            merged, go_on = solve_piece(least.rows(j, 2))
            least.merge(j, merged)
