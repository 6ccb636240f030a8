"""Helpers shared by the improvement heuristics: input checks, the heap geometry, the clock."""

from __future__ import annotations

import time

import numpy as np

from greedy import OBLIQUE, Tree

__all__ = ["check_inputs", "heap_of_tree", "Clock"]


class Clock:
    """Wall-clock budget: ``left()`` seconds remain, ``out()`` when none do."""

    def __init__(self, time_limit: float | None):
        if time_limit is not None and not (np.isfinite(time_limit) and time_limit >= 0):
            raise ValueError(f"time_limit must be a finite number >= 0 or None, got {time_limit!r}")
        self.start = time.perf_counter()
        self.limit = np.inf if time_limit is None else float(time_limit)

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def left(self) -> float:
        return self.limit - self.elapsed()

    def out(self) -> bool:
        return self.elapsed() >= self.limit


def check_inputs(tree, X, y, sample_weight, min_samples_leaf, task):
    """Validated ``X, y, w`` (float64, 1-D) for a ``task`` tree."""
    if not isinstance(tree, Tree):
        raise TypeError(f"expected a greedy.Tree, got {type(tree).__name__}")
    if tree.task != task:
        raise ValueError(f"expected a {task} tree, got a {tree.task} tree")
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] == 0 or not np.isfinite(X).all():
        raise ValueError("X must be a non-empty finite 2-D array")
    if tree.n_features != X.shape[1]:
        raise ValueError(f"tree has {tree.n_features} features, X has {X.shape[1]}")
    if tree.category_left is not None and tree.categorical_nodes.any():
        raise ValueError("categorical splits are not supported")
    y = np.asarray(y)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},)")
    w = np.ones(X.shape[0]) if sample_weight is None else np.asarray(sample_weight, np.float64)
    if w.shape != (X.shape[0],) or not np.isfinite(w).all() or (w < 0).any() or not (w > 0).any():
        raise ValueError("sample_weight must be finite, non-negative, with a positive entry, one per row")
    if int(min_samples_leaf) != min_samples_leaf or min_samples_leaf < 1:
        raise ValueError(f"min_samples_leaf must be an integer >= 1, got {min_samples_leaf!r}")
    return X, y, w


def heap_of_tree(tree: Tree, depth: int):
    """``(heap id of every node, node id of every heap id or -1)`` of a tree of depth <= ``depth``."""
    if tree.max_depth > depth:
        raise ValueError(f"tree has depth {tree.max_depth} > max_depth={depth}")
    heap = np.zeros(tree.node_count, np.int64)
    heap[0] = 1
    node_of = np.full(2 ** (depth + 1), -1, np.intp)
    node_of[1] = 0
    for node in np.flatnonzero(~tree.is_leaf):  # parents before children
        for child, h in ((tree.children_left[node], 2 * heap[node]), (tree.children_right[node], 2 * heap[node] + 1)):
            heap[child] = h
            node_of[h] = child
    return heap, node_of


def split_vector(tree: Tree, node: int) -> np.ndarray:
    """Coefficients ``c`` of node ``node``'s split ``c·x <= threshold`` (a unit vector for a univariate split)."""
    if tree.feature[node] == OBLIQUE:
        return np.asarray(tree.split_coef[node], np.float64)
    c = np.zeros(tree.n_features)
    c[tree.feature[node]] = 1.0
    return c
