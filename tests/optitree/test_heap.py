"""The heap-indexed tree view of the formulations (optitree.formulations._heap) against compact trees."""

import numpy as np
import pytest

from greedy import OBLIQUE, Tree
from optitree.formulations import PASS_THROUGH, from_heap, to_heap
from support.trees import stump


@pytest.mark.parametrize("depth", [None, 3, 5])
def test_heap_round_trip_preserves_predictions(iris_tree, depth):
    X, _, _, tree = iris_tree
    heap = to_heap(tree, depth)
    D = tree.max_depth if depth is None else depth
    assert heap.feature.shape == (2**D - 1,) and heap.value.shape == (2**D, 3)
    back = from_heap(heap, n_features=4)
    np.testing.assert_allclose(back.predict(X), tree.predict(X))
    assert back.node_count == tree.node_count  # pass-through padding collapses again


def test_heap_pads_shallow_leaves_with_pass_through():
    heap = to_heap(stump(), 2)
    # root splits; both depth-1 nodes are leaves, so heap nodes 2 and 3 pass through
    np.testing.assert_array_equal(heap.feature, [0, PASS_THROUGH, PASS_THROUGH])
    np.testing.assert_array_equal(heap.value, [[3, 1], [3, 1], [0, 4], [0, 4]])


def test_heap_too_shallow_raises(iris_tree):
    with pytest.raises(ValueError, match="does not fit"):
        to_heap(iris_tree[3], 1)


def test_from_heap_numbers_nodes_in_preorder_and_statistics_refill(iris_tree):
    X, y, est, tree = iris_tree
    bare = from_heap(to_heap(tree), n_features=4)
    filled = bare.fill_statistics(X, y)
    np.testing.assert_allclose(filled.value, tree.value)
    np.testing.assert_array_equal(filled.n_node_samples, est.tree_.n_node_samples)
    np.testing.assert_allclose(filled.impurity, est.tree_.impurity)


def test_oblique_split_round_trip():
    coef = np.zeros((3, 2))
    coef[0] = [1.0, 1.0]
    tree = Tree([1, -1, -1], [2, -1, -1], [OBLIQUE, -2, -2], [1.0, np.nan, np.nan],
                [[1, 1], [1, 0], [0, 1]], n_features=2, split_coef=coef)
    back = from_heap(to_heap(tree, 2), n_features=2)
    np.testing.assert_array_equal(back.apply([[0.2, 0.7], [0.6, 0.7]]), [1, 2])


def test_regression_heap_keeps_leaf_values():
    tree = Tree([1, -1, -1], [2, -1, -1], [0, -2, -2], [0.5, np.nan, np.nan], [[0.0], [1.5], [-2.0]],
                n_features=1, task="regression")
    back = from_heap(to_heap(tree, 2), n_features=1, task="regression")
    np.testing.assert_allclose(back.predict([[0.2], [0.9]]), [1.5, -2.0])
    assert back.task == "regression" and back.value[0, 0] == 0.0  # internal values are not summed
