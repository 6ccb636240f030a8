"""One-off compilation of the engine's numba kernels, kept out of any time limit."""

from __future__ import annotations

import time

import numpy as np

from ._api import solve
from ._bounds import split_bounds
from ._data import prepare

_warm = False


def warm_up() -> float:
    """Compile (or load from numba's cache) the engine's kernels; returns the seconds spent.

    The first call of a process costs about 0.25 s with numba's on-disk cache and about 25 s of
    CPU without it (first use after installing: the three losses, and the misclassification
    kernels compiled apart); later calls return 0 at once. The estimators
    call it before starting their clock, so the compilation counts as build time, not
    against ``time_limit``.
    """
    global _warm
    if _warm:
        return 0.0
    t0 = time.perf_counter()
    rng = np.random.RandomState(0)
    data = prepare(rng.rand(40, 4), rng.randint(0, 3, 40), np.ones(40))  # noise: no early optimum
    solve(data, max_depth=3)
    solve(data, max_depth=3, node_limit=2)  # a stopped search: open_bound's kernel
    split_bounds(data, depth=2)  # depth-1 children: depth1_pair
    solve((data.X > 0.5).astype(float), data.y, max_depth=2)  # few thresholds: _binary.depth2_pairs
    for loss in ("squared", "absolute"):
        regression = prepare(data.X, rng.rand(40), np.ones(40), loss=loss)
        solve(regression, max_depth=3)
        split_bounds(regression, depth=2)
    _warm = True
    return time.perf_counter() - t0
