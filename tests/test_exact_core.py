"""The compiled core's bindings: leaf costs against numpy, and clear errors at the boundary."""

import numpy as np
import pytest

from optitree.exact import _core, prepare


@pytest.mark.parametrize("loss", ["misclassification", "squared", "absolute"])
def test_leaf_cost_equals_numpy(loss):
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(1, 30))
        w = rng.choice([0.5, 1.0, 2.0, 3.0], n)
        y = rng.integers(0, 3, n) if loss == "misclassification" else np.round(rng.normal(size=n), 2)
        data = prepare(rng.normal(size=(n, 2)), y, w, loss=loss)
        rows = np.sort(rng.choice(n, int(rng.integers(1, n + 1)), replace=False)).astype(np.int32)
        got = _core.leaf_cost(rows, *data.kernel_args()) * data.scale
        ww, t = w[data.kept][rows], data.targets(rows)
        if loss == "misclassification":
            expected = ww.sum() - np.bincount(t, weights=ww).max()
        elif loss == "squared":
            expected = (ww * (t - np.average(t, weights=ww)) ** 2).sum()
        else:  # about the lower weighted median
            order = np.argsort(t, kind="stable")
            median = t[order][np.searchsorted(np.cumsum(ww[order]), 0.5 * ww.sum())]
            expected = (ww * np.abs(t - median)).sum()
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_arrays_updated_in_place_are_never_converted():
    """shrink writes its bounds into out_left/out_right: a float32 array would be a silently lost update."""
    known = np.zeros(3)
    with pytest.raises(TypeError):
        _core.shrink(0, 2, -1, 3, known, known, known, True, 1.0, np.zeros(3, np.float32), np.zeros(3))
    out_left, out_right = np.zeros(3), np.zeros(3)
    lo, hi = _core.shrink(0, 2, -1, 3, np.arange(3.0), np.zeros(3), np.zeros(3), True, 0.0, out_left, out_right)
    assert (lo, hi) == (3, 2)  # a limit of 0: every candidate's bound reaches it


def test_bad_arguments_are_value_errors():
    data = prepare(np.arange(6.0)[:, None], [0, 0, 1, 1, 0, 1])
    y, w, stats, _, width = data.kernel_args()
    with pytest.raises(ValueError, match="loss code"):
        _core.leaf_cost(data.view[0], y, w, stats, 7, width)
    with pytest.raises(ValueError, match="n_left"):
        _core.partition(data.view, data.rank[0], 2, 7)
    with pytest.raises(ValueError, match="misclassification"):
        _core.depth2_pairs(np.zeros(1, np.int64), np.zeros(1, np.int64), data.view, data.rank, y, w, stats, 1, 3,
                           np.ones(1, bool), np.ones((2, 1), bool), 0.0, 1, np.inf)
