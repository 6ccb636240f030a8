"""Row blocks and start values shared by the routing formulations (OCT, OCT-H, ORT).

Bertsimas & Dunn's skeleton — split hierarchy, sample-to-leaf assignment, leaf use and
leaf size — and the classification leaves (labels, misclassified weight) are the same
in OCT and OCT-H; ORT reuses the skeleton with regression leaves. Each ``add_*``
function appends its variable / row blocks to a :class:`~optitree.model.ModelSpec`
for a formulation ``form`` (a :class:`~optitree.formulations.TreeFormulation`); the
``_*_rows`` / ``_*_nnz`` functions give their sizes for ``estimate_size``; the
``set_*_start`` functions write a tree's values of those blocks into a solution vector.
"""

from __future__ import annotations

import numpy as np

from greedy import Tree

from ._heap import leaf_ancestors

__all__ = [
    "routing_pairs", "add_skeleton_rows", "heap_leaf_of_samples", "set_skeleton_start", "add_class_leaf_rows",
    "set_class_leaf_start",
]


def routing_pairs(form):
    """(leaf index k, ancestor heap id m) of the left and of the right routing rows."""
    anc, goes_left = leaf_ancestors(form.depth)
    k, s = np.nonzero(goes_left)
    left = (k, anc[k, s])
    k, s = np.nonzero(~goes_left)
    return left, (k, anc[k, s])


def _skeleton_rows(form) -> int:
    N, B, L, D = form.n_samples, form.n_branch, form.n_leaves, form.depth
    return (B - 1) + N + N * L + L + L * D // 2


def _skeleton_nnz(form) -> int:
    N, B, L, D = form.n_samples, form.n_branch, form.n_leaves, form.depth
    return 2 * (B - 1) + N * L + 2 * N * L + L * (int((form.count > 0).sum()) + 1) + 2 * (L * D // 2)


def add_skeleton_rows(form, spec, d, z, l) -> None:
    """The tree skeleton every routing formulation shares (Bertsimas & Dunn).

    ``d_m <= d_p(m)``; ``Σ_t z_it = 1``; ``z_it <= l_t``; ``Σ_i n_i z_it >= N_min l_t``;
    ``l_t <= d_m`` for ``m ∈ A_L(t)`` (a non-splitting node sends everything right).
    """
    N, B, L = form.n_samples, form.n_branch, form.n_leaves
    child = np.arange(2, B + 1)
    spec.add_rows("split_parent", B - 1, np.repeat(np.arange(B - 1), 2),
                  np.column_stack([d[child - 1], d[child // 2 - 1]]).ravel(), np.tile([1.0, -1.0], B - 1),
                  -np.inf, 0.0)
    spec.add_rows("assign", N, np.repeat(np.arange(N), L), z.ravel(), np.ones(N * L), 1.0, 1.0)
    r = np.arange(N * L)
    spec.add_rows("leaf_used", N * L, np.repeat(r, 2), np.column_stack([z.ravel(), np.tile(l, N)]).ravel(),
                  np.tile([1.0, -1.0], N * L), -np.inf, 0.0)
    spec.add_rows("leaf_min_size", L, np.r_[np.tile(np.arange(L), N), np.arange(L)], np.r_[z.ravel(), l],
                  np.r_[np.repeat(form.count, L), np.full(L, -float(form.min_samples_leaf))], 0.0, np.inf)
    (kl, ml), _ = routing_pairs(form)
    P = kl.size
    spec.add_rows("leaf_needs_split", P, np.repeat(np.arange(P), 2), np.column_stack([l[kl], d[ml - 1]]).ravel(),
                  np.tile([1.0, -1.0], P), -np.inf, 0.0)


def heap_leaf_of_samples(form, tree: Tree) -> np.ndarray:
    """Heap leaf index ``k`` (0-based) of every modelled sample for a compact tree of depth <= D.

    A compact leaf above depth ``D`` maps to the rightmost heap leaf below it (the
    pass-through convention).
    """
    hid = form.heap_ids(tree)[tree.apply(form.X)]
    below = form.depth - np.floor(np.log2(hid)).astype(np.int64)
    return ((hid + 1) << below) - 1 - form.n_leaves


def set_skeleton_start(form, tree: Tree, x: np.ndarray) -> np.ndarray:
    """Write ``z`` and ``l`` of ``tree`` into the solution vector ``x``; return the samples' heap leaves."""
    leaf_k = heap_leaf_of_samples(form, tree)
    x[form.vars["z"][np.arange(form.n_samples), leaf_k]] = 1.0
    x[form.vars["l"][np.bincount(leaf_k, minlength=form.n_leaves) > 0]] = 1.0
    return leaf_k


# ---------------------------------------------------------------------- classification leaves
def _class_leaf_rows(form) -> int:
    L, K = form.n_leaves, form.n_classes
    return L + L * K + L + L * K


def _class_leaf_nnz(form) -> int:
    L, K = form.n_leaves, form.n_classes
    nz_w = int((form.weight > 0).sum())
    return L * (K + 1) + L * K + L * nz_w + L + L * nz_w + 4 * L * K


def add_class_leaf_rows(form, spec, z, l) -> None:
    """Leaf labels and misclassified weight, as in OCT.

    ``Σ_k c_tk = l_t``; ``N_tk = Σ_{i: y_i = k} w_i z_it``; ``N_t = Σ_i w_i z_it``;
    ``L_t >= N_t - N_tk - W (1 - c_tk)``, ``L_t >= 0`` (objective ``L_t / L̂``). The weights in
    these rows are the model's times :attr:`~TreeFormulation.row_weight_scale` (the largest of
    order one, as the solver's tolerances expect), ``L_t``'s cost divided by it.
    """
    N, K, L = form.n_samples, form.n_classes, form.n_leaves
    s = form.row_weight_scale
    w, W = form.model_weight * s, form.total_weight * s
    c = spec.add_vars("c", (L, K), ub=1.0, integer=True)
    Nkt = spec.add_vars("Nkt", (L, K))
    Nt = spec.add_vars("Nt", L)
    Lt = spec.add_vars("Lt", L, obj=form.model_error_scale / s)
    spec.add_rows("leaf_label", L, np.repeat(np.arange(L), K + 1), np.column_stack([c, l[:, None]]).ravel(),
                  np.tile(np.r_[np.ones(K), -1.0], L), 0.0, 0.0)
    rows_i = (np.arange(L)[None, :] * K + form.y[:, None]).ravel()  # (N, L) order of z
    spec.add_rows("class_weight", L * K, np.r_[np.arange(L * K), rows_i], np.r_[Nkt.ravel(), z.ravel()],
                  np.r_[np.ones(L * K), -np.repeat(w, L)], 0.0, 0.0)
    spec.add_rows("leaf_weight", L, np.r_[np.arange(L), np.tile(np.arange(L), N)], np.r_[Nt, z.ravel()],
                  np.r_[np.ones(L), -np.repeat(w, L)], 0.0, 0.0)
    tk = np.arange(L * K)
    t_of = tk // K
    spec.add_rows("misclassified", L * K, np.repeat(tk, 4),
                  np.column_stack([Lt[t_of], Nt[t_of], Nkt.ravel(), c.ravel()]).ravel(),
                  np.tile([1.0, -1.0, 1.0, -W], L * K), -W, np.inf)


def set_class_leaf_start(form, tree: Tree, x: np.ndarray) -> None:
    """Write ``z, l, c, Nkt, Nt, Lt`` of ``tree`` (its labels :attr:`greedy.Tree.node_class`) into ``x``."""
    v, L, K = form.vars, form.n_leaves, form.n_classes
    leaf_k = set_skeleton_start(form, tree, x)
    Nkt = np.zeros((L, K))
    np.add.at(Nkt, (leaf_k, form.y), form.model_weight * form.row_weight_scale)
    label = np.zeros(L, np.intp)
    label[leaf_k] = tree.node_class[tree.apply(form.X)]
    used = np.flatnonzero(np.bincount(leaf_k, minlength=L) > 0)
    x[v["c"][used, label[used]]] = 1.0
    x[v["Nkt"]] = Nkt
    x[v["Nt"]] = Nkt.sum(axis=1)
    x[v["Lt"][used]] = Nkt[used].sum(axis=1) - Nkt[used, label[used]]
