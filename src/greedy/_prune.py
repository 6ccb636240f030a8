"""Post-pruning of a grown :class:`~greedy.Tree`.

Two methods, both returning a new tree re-indexed compactly in depth-first
(pre-)order, the order scikit-learn's builders use:

* **minimal cost-complexity pruning** (Breiman et al., 1984, ch. 3). With
  ``R(t) = w_t / w_root * impurity_t`` the weighted impurity of node ``t`` and
  ``R(T_t)`` the sum of ``R`` over the leaves of the branch below ``t``, the
  branch's *effective alpha* is ``(R(t) - R(T_t)) / (|leaves(T_t)| - 1)``.
  The weakest link (smallest effective alpha; the lowest node id on ties) is
  collapsed into a leaf, one node at a time, until the root is a leaf. The
  sequence of effective alphas and of total leaf impurities is the pruning path;
  pruning at ``ccp_alpha`` keeps collapsing while the weakest link's alpha is
  ``<= ccp_alpha``. The arithmetic follows scikit-learn's ``_cost_complexity_prune``
  step by step, so paths and pruned trees agree with it exactly.
* **reduced-error pruning** against held-out data (Quinlan, 1987): bottom-up, a
  branch is replaced by a leaf when the validation error of the leaf is not larger
  than the validation error of the (already pruned) branch.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils import Bunch

from ._tree import _OPTIONAL, LEAF_FEATURE, TREE_LEAF, Tree


def depth_first_order(children_left: np.ndarray, children_right: np.ndarray, keep_leaf=None) -> np.ndarray:
    """Node ids in depth-first pre-order (left subtree first), from the root.

    Nodes where ``keep_leaf`` is true are treated as leaves: their descendants
    are not visited.
    """
    order = []
    stack = [0]
    while stack:
        node = stack.pop()
        order.append(node)
        if children_left[node] != TREE_LEAF and not (keep_leaf is not None and keep_leaf[node]):
            stack.append(children_right[node])
            stack.append(children_left[node])
    return np.asarray(order, dtype=np.intp)


def collapse(tree: Tree, make_leaf=None) -> Tree:
    """Tree with the nodes in ``make_leaf`` turned into leaves, re-indexed depth-first.

    Descendants of a collapsed node are dropped; every kept node keeps its
    statistics (value, counts, impurity, leaf model). Without ``make_leaf`` the
    tree is only re-indexed.
    """
    make_leaf = np.zeros(tree.node_count, bool) if make_leaf is None else np.asarray(make_leaf, bool)
    order = depth_first_order(tree.children_left, tree.children_right, make_leaf)
    new_id = np.full(tree.node_count, TREE_LEAF, np.intp)
    new_id[order] = np.arange(order.size)
    leaf = tree.is_leaf[order] | make_leaf[order]
    left = np.where(leaf, TREE_LEAF, new_id[tree.children_left[order]])
    right = np.where(leaf, TREE_LEAF, new_id[tree.children_right[order]])
    fields = {
        name: getattr(tree, name)[order]
        for name in ("value", "n_node_samples", "weighted_n_node_samples", "impurity") + _OPTIONAL
        if getattr(tree, name) is not None
    }
    if "category_left" in fields:
        fields["category_left"] = fields["category_left"] & ~leaf[:, None]
    return Tree(
        left,
        right,
        np.where(leaf, LEAF_FEATURE, tree.feature[order]),
        np.where(leaf, np.nan, tree.threshold[order]),
        n_features=tree.n_features,
        task=tree.task,
        **fields,
    )


def _subtree_leaf_sums(tree: Tree, r_node: np.ndarray):
    """``R(T_t)`` and leaf counts of every branch, summed leaf by leaf in id order (as scikit-learn)."""
    n = tree.node_count
    parent = tree.parent
    r_branch = np.zeros(n)
    n_leaves = np.zeros(n, np.intp)
    leaves = np.flatnonzero(tree.is_leaf)
    r_branch[leaves] = r_node[leaves]
    # (ancestor, leaf) pairs ordered by leaf id: np.add.at applies them in that order
    anc, src = [], []
    cur, cur_leaf = parent[leaves], leaves
    while cur.size:
        keep = cur >= 0
        cur, cur_leaf = cur[keep], cur_leaf[keep]
        anc.append(cur), src.append(cur_leaf)
        cur = parent[cur]
    anc, src = np.concatenate(anc), np.concatenate(src)
    by_leaf = np.argsort(src, kind="stable")
    np.add.at(r_branch, anc[by_leaf], r_node[src[by_leaf]])
    np.add.at(n_leaves, anc, 1)
    return r_branch, n_leaves


def _cost_complexity_prune(tree: Tree, ccp_alpha: float | None):
    """Run weakest-link pruning; return (alphas, impurities, collapsed-node mask).

    With ``ccp_alpha=None`` the whole path down to the root is computed.
    """
    n = tree.node_count
    w = tree.weighted_n_node_samples
    if not w[0] > 0:
        raise ValueError("cost-complexity pruning needs the tree's training statistics (weighted_n_node_samples)")
    r_node = w * tree.impurity / w[0]
    r_branch, n_leaves = _subtree_leaf_sums(tree, r_node)
    parent = tree.parent
    candidate = ~tree.is_leaf
    collapsed = np.zeros(n, bool)
    alphas, impurities = [0.0], [r_branch[0]]
    left, right = tree.children_left, tree.children_right
    while candidate[0]:
        ids = np.flatnonzero(candidate)
        branch_alpha = (r_node[ids] - r_branch[ids]) / (n_leaves[ids] - 1)
        k = int(np.argmin(branch_alpha))  # first minimum = lowest id, as scikit-learn's strict '<' scan
        alpha, node = float(branch_alpha[k]), int(ids[k])
        if ccp_alpha is not None and ccp_alpha < alpha:
            break
        # drop the branch below `node`
        stack = [node]
        while stack:
            i = stack.pop()
            candidate[i] = False
            if left[i] != TREE_LEAF and not collapsed[i]:
                stack.extend((left[i], right[i]))
        collapsed[node] = True
        n_pruned = n_leaves[node] - 1
        n_leaves[node] = 0
        r_diff = r_node[node] - r_branch[node]
        r_branch[node] = r_node[node]
        i = parent[node]
        while i != -1:
            n_leaves[i] -= n_pruned
            r_branch[i] += r_diff
            i = parent[i]
        alphas.append(alpha)
        impurities.append(r_branch[0])
    return np.asarray(alphas), np.asarray(impurities), collapsed


def cost_complexity_path(tree: Tree) -> Bunch:
    """Minimal cost-complexity pruning path of a grown tree.

    Returns
    -------
    Bunch with ``ccp_alphas`` (effective alpha of each pruning step, starting at
    0 for the full tree, non-decreasing) and ``impurities`` (total leaf impurity
    ``sum_leaves w_t / w_root * impurity_t`` of the subtree after each step).
    """
    alphas, impurities, _ = _cost_complexity_prune(tree, None)
    return Bunch(ccp_alphas=alphas, impurities=impurities)


def prune_cost_complexity(tree: Tree, ccp_alpha: float) -> Tree:
    """Smallest minimising subtree for complexity parameter ``ccp_alpha >= 0``.

    ``ccp_alpha == 0`` returns the tree unchanged (as scikit-learn, which does
    not collapse zero-gain branches at alpha 0).
    """
    ccp_alpha = check_ccp_alpha(ccp_alpha)
    if ccp_alpha == 0.0:
        return tree
    _, _, collapsed = _cost_complexity_prune(tree, ccp_alpha)
    return collapse(tree, collapsed)


def check_ccp_alpha(ccp_alpha) -> float:
    """Validate ``ccp_alpha`` (a finite real number ``>= 0``)."""
    if isinstance(ccp_alpha, bool) or not isinstance(ccp_alpha, (int, float, np.integer, np.floating)):
        raise TypeError(f"ccp_alpha must be a real number, got {type(ccp_alpha).__name__}")
    if not (np.isfinite(ccp_alpha) and ccp_alpha >= 0):
        raise ValueError(f"ccp_alpha must be a finite number >= 0, got {ccp_alpha}")
    return float(ccp_alpha)


def prune_reduced_error(tree: Tree, X_val, y_val, sample_weight=None) -> Tree:
    """Reduced-error pruning on held-out data.

    Nodes are visited bottom-up (children before parents). For an internal node
    ``t`` let ``E_leaf(t)`` be the validation error of predicting every validation
    sample reaching ``t`` with ``t``'s own prediction, and ``E_branch(t)`` the
    error of the already pruned branch below it. ``t`` becomes a leaf when
    ``E_leaf(t) <= E_branch(t)``: **ties prune**, so the smaller tree wins when the
    validation data cannot tell the two apart — in particular a branch that no
    validation sample reaches is always collapsed. Squared errors are compared up to
    rounding: ``E_leaf <= E_branch (1 + 1e-9) + 1e-12 sum_i w_i y_i^2``.

    Errors are weighted sums over validation samples: misclassifications (class
    of largest weighted count; ties to the lowest class code) for classification,
    squared errors for regression (a node's linear model if the tree has linear
    leaves and the node has one, else its value). A sample routed down both
    branches at a missing value counts at each node with its routing weight.

    Parameters
    ----------
    tree : Tree
    X_val : array of shape (n_val, n_features)
    y_val : array of shape (n_val,)
        Class codes ``0..n_classes-1`` (classification) or targets.
    sample_weight : array of shape (n_val,), optional

    Returns
    -------
    Tree
        The pruned tree, re-indexed depth-first.
    """
    X = np.asarray(X_val, dtype=np.float64)
    if X.ndim != 2 or X.shape[1] != tree.n_features:
        raise ValueError(f"X_val must have shape (n_samples, {tree.n_features}), got {X.shape}")
    y = np.asarray(y_val)
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"y_val must have shape ({X.shape[0]},), got {y.shape}")
    sw = np.ones(X.shape[0]) if sample_weight is None else np.asarray(sample_weight, np.float64)
    if sw.shape != (X.shape[0],):
        raise ValueError(f"sample_weight must have shape ({X.shape[0]},), got {sw.shape}")
    reach = tree.node_weights(X).tocoo()
    rows, nodes, w = reach.row, reach.col, reach.data * sw[reach.row]
    if tree.task == "classification":
        if not np.all((y >= 0) & (y < tree.n_classes) & (y == np.floor(y))):
            raise ValueError(f"y_val must hold class codes in [0, {tree.n_classes})")
        predicted = np.argmax(tree.node_proba, axis=1)
        loss = (predicted[nodes] != y[rows]).astype(np.float64)
    else:
        y = y.astype(np.float64)
        pred = tree.value[nodes, 0]
        if tree.leaf_coef is not None:
            pred = tree.leaf_intercept[nodes] + np.einsum("ij,ij->i", np.nan_to_num(X[rows]), tree.leaf_coef[nodes])
        loss = (pred - y[rows]) ** 2
    leaf_error = np.bincount(nodes, weights=w * loss, minlength=tree.node_count)
    # squared errors carry rounding noise: compare up to 1e-9 relative / 1e-12 of the targets' scale
    atol = 0.0 if tree.task == "classification" else 1e-12 * float(np.sum(sw * y * y))
    branch_error = leaf_error.copy()
    collapsed = np.zeros(tree.node_count, bool)
    left, right = tree.children_left, tree.children_right
    for node in np.flatnonzero(~tree.is_leaf)[::-1]:  # children have larger ids than parents
        below = branch_error[left[node]] + branch_error[right[node]]
        if leaf_error[node] <= below * (1 + 1e-9) + atol:
            collapsed[node] = True
        else:
            branch_error[node] = below
    return collapse(tree, collapsed)
