"""Lower bounds on the children of every split candidate of a node: the bound rows of a MIP.

For a node holding sample set ``S`` with remaining depth ``D`` and a candidate split
``c = (f, t)`` sending ``L_c = {i in S: x_if <= t}`` left and ``R_c = S \\ L_c`` right,
:func:`split_bounds` returns ``left_bound[c] <= OPT_{D-1}(L_c)`` and
``right_bound[c] <= OPT_{D-1}(R_c)``, where ``OPT_d(A)`` is the least loss (weighted
misclassification, squared or absolute error) plus ``alpha`` per split of a tree of depth
``<= d`` on ``A`` (with the given minimum leaf size and allowed features). Hence for any tree
rooted at ``c``

    cost(tree) >= alpha + left_bound[c] + right_bound[c],

which is valid under any further constraint a MIP adds (constraints only raise optima).
Exact bounds come from solving the children; candidates whose bound provably reaches the
``cutoff`` (e.g. the MIP's incumbent) are not solved exactly but get a neighbour bound: a set
that differs from a solved one by rows of total distance ``k`` (their weight for
misclassification; :func:`optitree.exact._kernels.row_dist`) has an optimum within ``k`` of it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from greedy import Tree

from ._api import resolve
from ._search import Search
from ._tree import to_tree
from ._subsets import feature_subsets, split_bounds_over_subsets


@dataclass(frozen=True, eq=False)
class SplitBounds:
    """Children bounds of every split candidate of a node, as aligned arrays.

    Candidates are listed by feature, then increasing threshold; splits that would leave
    fewer than ``min_samples_leaf`` rows on a side (infeasible) and features not allowed at
    the node are not listed.

    Attributes
    ----------
    feature : int array (C,)
    threshold : float array (C,)
        Split value (``greedy.midpoint_threshold`` of consecutive distinct values); left is
        ``x[feature] <= threshold``.
    n_left : int array (C,)
        Rows sent left.
    left_bound, right_bound : float array (C,)
        Lower bounds on the optimal cost (weighted misclassifications + ``alpha`` per split)
        of the left/right child's sub-tree of depth ``depth - 1``.
    exact : bool array (C,)
        Both bounds are the children's optima.
    leaf_cost : float
        Cost of making the node a leaf.
    incumbent : float
        Cost of the best tree found for the node (a leaf or a solved candidate with its
        children's optima); the optimum of the node when ``cutoff`` is None.
    incumbent_tree : greedy.Tree
        That tree (node values: weighted class counts of the node's rows).
    complete : bool
        False when the time or node budget ran out (bounds stay valid, fewer are exact).
    time : float
        Seconds.
    """

    feature: np.ndarray
    threshold: np.ndarray
    n_left: np.ndarray
    left_bound: np.ndarray
    right_bound: np.ndarray
    exact: np.ndarray
    leaf_cost: float
    incumbent: float
    incumbent_tree: Tree
    complete: bool
    time: float

    @property
    def children_bound(self) -> np.ndarray:
        """``left_bound + right_bound``: add ``alpha`` for the bound on a tree rooted at the candidate."""
        return self.left_bound + self.right_bound


def split_bounds(X, y=None, sample_weight=None, *, depth=None, loss=None, samples=None, alpha=None,
                 min_samples_leaf=None, allowed_features=None, max_distinct_features=None, cutoff=None, tighten=False,
                 time_limit=None, node_limit=None, callback=None, problem=None) -> SplitBounds:
    """Lower bounds on the children's optima for all split candidates of one node at once.

    Parameters
    ----------
    X, y, sample_weight
        As in :func:`solve`; pass an :class:`ExactData` from :func:`prepare` when calling
        repeatedly (the encoding is then reused). A :class:`optitree.problem.Problem` (``X``,
        or ``problem`` with its ``ExactData``) states ``depth`` to ``max_distinct_features``.
    depth : int >= 1
        Remaining depth at the node (the node itself splits; children get ``depth - 1``);
        required without a Problem.
    loss : {"misclassification", "squared", "absolute"}, optional
        As in :func:`solve`.
    samples : int array or bool mask over the rows of ``ExactData.X``, optional
        The node's sample set (default: all rows).
    alpha, min_samples_leaf
        As in :func:`solve`.
    allowed_features : bool array (p,), (depth, p) or (2**depth - 1, p), optional
        As in :func:`solve`, relative to the node: row 0 applies to the node's own split.
    max_distinct_features : int >= 1, optional
        The node's sub-tree splits on at most this many distinct features: each candidate's
        bound is the least over the feature subsets containing its feature
        (:func:`~optitree.exact._subsets.split_bounds_over_subsets`).
    cutoff : float, optional
        Lazy mode: a candidate is solved exactly only while ``alpha + left + right`` could
        stay below ``cutoff``; others get a valid bound with ``alpha + left + right >=
        cutoff`` (enough to drop them against an incumbent of cost ``cutoff``).
    tighten : bool
        Lower the cutoff to the cost of each better tree found (``incumbent``): far fewer
        exact solves, and every inexact candidate still has ``alpha + left + right >=
        incumbent``. Use it only when ``incumbent_tree`` is feasible for the caller (no side
        constraint beyond those given here); otherwise screen against the caller's own
        incumbent through ``cutoff``.
    time_limit, node_limit
        Budget; when spent, the remaining candidates get neighbour bounds.
    callback : callable, optional
        As in :func:`solve` (``incumbent`` is the node's best tree so far, ``bound`` 0);
        returning True stops the scan as a spent budget does.
    """
    start = time.perf_counter()
    data, depth, alpha, min_samples_leaf, allowed, max_distinct_features = resolve(
        X, y, sample_weight, problem, loss=loss, max_bins=None, depth_name="depth", depth=depth, alpha=alpha,
        min_samples_leaf=min_samples_leaf, allowed_features=allowed_features,
        max_distinct_features=max_distinct_features)
    if max_distinct_features is not None:
        masks = feature_subsets(data, allowed, int(depth), max_distinct_features)
        if masks is not None:
            return split_bounds_over_subsets(
                split_bounds, masks, time_limit=time_limit, X=data, depth=depth, samples=samples, alpha=alpha,
                min_samples_leaf=min_samples_leaf, cutoff=cutoff, tighten=tighten, node_limit=node_limit,
                callback=callback)
    view = data.view if samples is None else data.subset_view(samples)
    scale = data.scale  # the search works in units of `scale` (exact powers of two)
    limit = np.inf if cutoff is None else float(cutoff) / scale
    deadline = np.inf if time_limit is None else start + float(time_limit)
    best = np.inf
    poll = None
    if callback is not None:
        def poll():
            return callback({"time": time.perf_counter() - start, "incumbent": best * scale, "bound": 0.0,
                             "nodes": search.nodes_progress, "event": "progress"})

    def improved(_, cost):
        nonlocal best
        best = cost

    search = Search(data, allowed, alpha / scale, min_samples_leaf, deadline, node_limit, poll)
    leaf_cost = search.leaf_cost(view)
    best, best_nodes, scans = search.split_bounds(view, int(depth), limit, bool(tighten), on_improve=improved)
    parts = [(np.full(r.shape[0], f), data.thresholds[f][r], n_left, left, right, exact)
             for f, r, n_left, left, right, exact in scans]
    cols = [np.concatenate([p[k] for p in parts]) if parts else np.zeros(0) for k in range(6)]
    return SplitBounds(cols[0].astype(np.intp), cols[1].astype(np.float64), cols[2].astype(np.intp),
                       cols[3].astype(np.float64) * scale, cols[4].astype(np.float64) * scale, cols[5].astype(bool),
                       leaf_cost * scale, best * scale, to_tree(data, best_nodes, np.sort(view[0])),
                       not search.exhausted, time.perf_counter() - start)
