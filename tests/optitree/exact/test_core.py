"""The compiled core's bindings: leaf costs against numpy, and clear errors at the boundary."""

import numpy as np
import pytest

from optitree.exact import _core, prepare
from optitree.exact._search import Search


@pytest.mark.parametrize("loss", ["misclassification", "squared", "absolute"])
def test_leaf_cost_equals_numpy(loss):
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(1, 30))
        w = rng.choice([0.5, 1.0, 2.0, 3.0], n)
        y = rng.integers(0, 3, n) if loss == "misclassification" else np.round(rng.normal(size=n), 2)
        data = prepare(rng.normal(size=(n, 2)), y, w, loss=loss)
        rows = np.sort(rng.choice(n, int(rng.integers(1, n + 1)), replace=False))
        search = Search(data, np.ones((1, 2), bool), 0.0, 1, np.inf, None)
        got = search.leaf_cost(data.subset_view(rows)) * data.scale
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


def test_rank_columns_equals_numpys_stable_sort_and_unique():
    rng = np.random.default_rng(1)
    sets = [rng.integers(-2, 3, size=(int(rng.integers(1, 40)), 3)).astype(float) for _ in range(20)]
    sets += [np.array([[0.0, 1.5], [-0.0, 1.5], [0.0, -1e300]]), rng.normal(size=(200, 4))]
    for X in sets:
        view, rank, values, distinct = _core.rank_columns(np.ascontiguousarray(X))
        for f in range(X.shape[1]):
            unique, inverse = np.unique(X[:, f], return_inverse=True)
            np.testing.assert_array_equal(view[f], np.argsort(X[:, f], kind="stable"))
            np.testing.assert_array_equal(rank[f], inverse)
            assert distinct[f] == unique.size
        np.testing.assert_array_equal(values, np.concatenate([np.unique(X[:, f]) for f in range(X.shape[1])]))
    assert view.dtype == rank.dtype == np.int32


def test_the_problems_arrays_are_never_converted():
    """The search reads the problem's arrays while it runs: a converted copy would not outlive the call."""
    data = prepare(np.arange(6.0)[:, None], [0, 0, 1, 1, 0, 1])
    y, w, stats, loss, width = data.kernel_args()
    with pytest.raises(TypeError):
        _core.Problem(data.rank, y, w.astype(np.float32), stats, loss, width, [], [])
    with pytest.raises(TypeError):
        _core.Problem(np.asfortranarray(np.vstack([data.rank, data.rank])), y, w, stats, loss, width, [], [])
    _core.Problem(data.rank, y, w, stats, loss, width, [], [])


def test_bad_arguments_are_value_errors():
    data = prepare(np.arange(6.0)[:, None], [0, 0, 1, 1, 0, 1])
    y, w, stats, _, width = data.kernel_args()
    with pytest.raises(ValueError, match="loss code"):
        _core.Problem(data.rank, y, w, stats, 7, width, [], [])
    with pytest.raises(ValueError, match="shapes"):
        _core.Problem(data.rank, y[:3], w, stats, 0, width, [], [])
    with pytest.raises(ValueError, match="outside the problem"):
        _core.Problem(data.rank, y, w, stats, 0, width, [1], [0])
    with pytest.raises(ValueError, match="n_left"):
        _core.partition(data.view, data.rank[0], 2, 7)
    search = Search(data, np.ones((1, 1), bool), 0.0, 1, np.inf, None)
    with pytest.raises(ValueError, match="outside the problem"):
        search.leaf_cost(data.view + 6)
