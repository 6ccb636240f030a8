"""Two-way partitions of a categorical feature's levels, each once, as the side holding level 0.

Levels are numbered ``0..L-1``: the codes seen in training in increasing order, then the
"missing" level (NaN) when the feature had NaN. A partition ``{A, B}`` is stored as the boolean
mask of the side containing level 0 (the lowest code), so a partition and its complement have one
key; the mask never holds every level.
"""

from __future__ import annotations

import numpy as np


def all_partitions(n_levels: int) -> list[np.ndarray]:
    """Every non-trivial partition of ``n_levels`` levels: ``2**(n_levels-1) - 1`` masks."""
    if n_levels < 2:
        return []
    others = n_levels - 1
    bits = np.arange(2**others - 1, dtype=np.int64)  # the all-ones pattern would hold every level
    masks = np.ones((bits.size, n_levels), bool)
    masks[:, 1:] = (bits[:, None] >> np.arange(others)) & 1
    return list(masks)


def canonical(side: np.ndarray) -> np.ndarray | None:
    """The mask of the side of ``side | ~side`` holding level 0, or None when trivial."""
    side = np.asarray(side, bool)
    if side.all() or not side.any():
        return None
    return side.copy() if side[0] else ~side


def reduced_partitions(n_codes: int, has_missing: bool, extra_sides=()) -> tuple[list[np.ndarray], int]:
    """One-vs-rest, code-order prefixes (missing on either side) and ``extra_sides``, deduplicated.

    ``extra_sides``: masks over the ``n_codes`` observed codes (e.g. CART's subsets); each is added
    with the missing level on either side. Returns the masks over ``n_codes + has_missing`` levels
    and the number of distinct partitions ``extra_sides`` stand for.
    """
    n_levels = n_codes + int(has_missing)
    seen: dict[bytes, np.ndarray] = {}

    def add(side):
        mask = canonical(side)
        if mask is not None:
            seen.setdefault(mask.tobytes(), mask)

    def with_missing(codes_side):
        """``codes_side`` with the missing level left and right (once without a missing level)."""
        for missing_left in ((False, True) if has_missing else (False,)):
            side = np.zeros(n_levels, bool)
            side[:n_codes] = codes_side
            if has_missing:
                side[n_codes] = missing_left
            yield side

    for level in range(n_levels):  # one-vs-rest
        add(np.arange(n_levels) == level)
    for cut in range(1, n_codes):  # prefixes of the code order
        for side in with_missing(np.arange(n_codes) < cut):
            add(side)
    extra = set()
    for codes_side in extra_sides:
        for side in with_missing(np.asarray(codes_side, bool)):
            mask = canonical(side)
            if mask is not None:
                extra.add(mask.tobytes())
                add(mask)
    return list(seen.values()), len(extra)
