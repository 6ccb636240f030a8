"""The heap-indexed view of a tree that the formulations model.

Every formulation works on the *complete* binary tree of depth ``D``: heap node ``n``
(1-based) has children ``2n`` (left) and ``2n + 1`` (right); branch nodes are
``1 .. 2**D - 1`` and leaves ``2**D .. 2**(D+1) - 1``. :func:`to_heap` lays a compact
:class:`greedy.Tree` out on it, :func:`from_heap` collapses it back, and
:func:`leaf_ancestors` gives every leaf's path.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from greedy import LEAF_FEATURE, OBLIQUE, TREE_LEAF, Tree

__all__ = ["CompleteTreeShape", "HeapTree", "PASS_THROUGH", "to_heap", "from_heap", "leaf_ancestors"]

#: ``HeapTree.feature`` of a branch node that does not split.
PASS_THROUGH = -1


class CompleteTreeShape:
    """Node counts of the complete binary tree of ``self.depth``: heap ids ``1 .. 2**(depth+1) - 1``."""

    depth: int

    @property
    def n_branch(self) -> int:
        return 2**self.depth - 1

    @property
    def n_leaves(self) -> int:
        return 2**self.depth


@dataclass(frozen=True)
class HeapTree(CompleteTreeShape):
    """A tree laid out on the complete binary tree of depth ``depth``.

    Arrays are 0-based: branch node ``n`` is row ``n - 1`` of ``feature``/``threshold``,
    leaf ``2**depth + k`` is row ``k`` of ``value`` and ``leaf_class``.

    ``leaf_class`` (optional, classification) is the class code each leaf predicts (a
    model's labels); :func:`from_heap` gives it to the compact tree's leaves.

    A branch node with ``feature == PASS_THROUGH`` does not split: every sample goes to
    its **right** child (the OCT convention ``a = 0, b = 0``), and the value of the
    shallower leaf it replaces is copied to every leaf below it, so predictions do not
    depend on the direction.

    Examples
    --------
    A stump laid out on the complete tree of depth 2 (``-1``: pass-through nodes pad
    the shallow leaves):

    >>> import numpy as np
    >>> from greedy import Tree
    >>> from optitree.formulations import to_heap
    >>> stump = Tree(children_left=[1, -1, -1], children_right=[2, -1, -1], feature=[0, -2, -2],
    ...              threshold=[0.5, np.nan, np.nan], value=[[3, 3], [3, 0], [0, 3]], n_features=1)
    >>> to_heap(stump, 2).feature
    array([ 0, -1, -1])
    """

    depth: int
    feature: np.ndarray  # (2**D - 1,) int
    threshold: np.ndarray  # (2**D - 1,) float
    value: np.ndarray  # (2**D, n_values) float
    split_coef: np.ndarray | None = None  # (2**D - 1, n_features) for oblique nodes
    leaf_class: np.ndarray | None = None  # (2**D,) int


def to_heap(tree: Tree, depth: int | None = None) -> HeapTree:
    """Lay ``tree`` out on the complete tree of ``depth`` (default: its own depth).

    Leaves shallower than ``depth`` become chains of ``PASS_THROUGH`` branch nodes whose
    leaves all carry the leaf's value. Categorical splits and linear leaves have no heap
    form; missing-value routing is dropped.
    """
    if tree.category_left is not None and tree.categorical_nodes.any():
        raise ValueError("categorical splits have no heap (threshold) form")
    D = tree.max_depth if depth is None else int(depth)
    if tree.max_depth > D:
        raise ValueError(f"tree of depth {tree.max_depth} does not fit in a heap of depth {D}")
    nb = 2**D - 1
    feature = np.full(nb, PASS_THROUGH, np.intp)
    threshold = np.zeros(nb)
    value = np.zeros((2**D, tree.value.shape[1]))
    coef = np.zeros((nb, tree.n_features)) if tree.split_coef is not None else None
    stack = [(0, 1)]
    while stack:
        node, h = stack.pop()
        if tree.is_leaf[node]:
            lvl = int(np.floor(np.log2(h)))
            span = 2 ** (D - lvl)
            first = h * span  # leftmost heap leaf below h
            value[first - 2**D : first - 2**D + span] = tree.value[node]
            continue
        feature[h - 1] = tree.feature[node]
        threshold[h - 1] = tree.threshold[node]
        if coef is not None and tree.feature[node] == OBLIQUE:
            coef[h - 1] = tree.split_coef[node]
        stack.append((tree.children_left[node], 2 * h))
        stack.append((tree.children_right[node], 2 * h + 1))
    return HeapTree(D, feature, threshold, value, coef)


def from_heap(heap: HeapTree, n_features: int, task: str = "classification") -> Tree:
    """Compact tree from a heap layout: pass-through nodes are replaced by their right subtree.

    Nodes are numbered in depth-first preorder (scikit-learn's order). Node statistics
    other than leaf ``value`` are zero (internal values are the sums of their leaves for
    classification); :meth:`greedy.Tree.fill_statistics` recomputes them from data. A
    heap's ``leaf_class`` becomes the tree's :attr:`~greedy.Tree.leaf_class` (internal
    nodes: the most frequent class of their value).
    """
    D = heap.depth
    left, right, feat, thr, vals, coefs, heap_leaf = [], [], [], [], [], [], []
    parents = []  # split nodes, in creation (preorder) order
    stack = [(-1, False, 1)]  # (parent id, is left child, heap index)
    while stack:
        parent, is_left, h = stack.pop()
        node = len(left)
        left.append(TREE_LEAF), right.append(TREE_LEAF), feat.append(LEAF_FEATURE)
        thr.append(np.nan), vals.append(None), coefs.append(None), heap_leaf.append(-1)
        if parent >= 0:
            (left if is_left else right)[parent] = node
        while h <= heap.n_branch and heap.feature[h - 1] == PASS_THROUGH:
            h = 2 * h + 1
        if h > heap.n_branch:
            vals[node], heap_leaf[node] = heap.value[h - 2**D], h - 2**D
            continue
        feat[node], thr[node] = int(heap.feature[h - 1]), float(heap.threshold[h - 1])
        if heap.feature[h - 1] == OBLIQUE:
            coefs[node] = heap.split_coef[h - 1]
        parents.append(node)
        stack.append((node, False, 2 * h + 1))
        stack.append((node, True, 2 * h))
    value = np.zeros((len(left), heap.value.shape[1]))
    for i, v in enumerate(vals):
        if v is not None:
            value[i] = v
    if task == "classification":
        for node in reversed(parents):  # children after parents in `parents`
            value[node] = value[left[node]] + value[right[node]]
    split_coef = None
    if any(c is not None for c in coefs):
        split_coef = np.zeros((len(left), n_features))
        for i, c in enumerate(coefs):
            if c is not None:
                split_coef[i] = c
    leaf_class = None
    if heap.leaf_class is not None:
        heap_leaf = np.asarray(heap_leaf)
        leaf_class = np.where(heap_leaf >= 0, np.asarray(heap.leaf_class)[heap_leaf], value.argmax(axis=1))
    return Tree(left, right, feat, thr, value, n_features=n_features, task=task, split_coef=split_coef,
                leaf_class=leaf_class)


def leaf_ancestors(depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Ancestors of every leaf of the complete tree of ``depth``.

    Returns
    -------
    ancestors : ndarray of int, shape (2**depth, depth)
        ``ancestors[k, s]`` is the heap id of the ancestor ``s + 1`` levels above leaf
        ``2**depth + k`` (column 0 is the parent, the last column the root).
    goes_left : ndarray of bool, shape (2**depth, depth)
        Whether the path to the leaf takes the left branch at that ancestor.
    """
    leaves = np.arange(2**depth, 2 ** (depth + 1))
    shifts = np.arange(1, depth + 1)
    ancestors = leaves[:, None] >> shifts[None, :]
    goes_left = ((leaves[:, None] >> (shifts[None, :] - 1)) & 1) == 0
    return ancestors, goes_left
