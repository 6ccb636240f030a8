"""optitree.exact.solve(start=tree): a given tree (greedy CART's) is the search's first incumbent when it is a tree
of the problem; a stopped search never returns or reports worse; a start that is not a tree of the problem is ignored."""

import numpy as np
import pytest

from sklearn.datasets import make_classification

from greedy import CARTClassifier
from optitree.exact import solve
from support.exact_bruteforce import brute_force, check_tree, random_instance, relabel, tree_cost


def cart(X, y, w, depth, min_leaf=1):
    return CARTClassifier(max_depth=depth, min_samples_leaf=min_leaf).fit(X, y, sample_weight=w).tree_


def best_leaf_cost(tree, X, y, w, alpha):
    """The objective of ``tree``'s structure with every leaf predicting its heaviest class."""
    w = np.ones(len(y)) if w is None else w
    leaves = tree.apply(X)
    errors = sum(w[leaves == leaf].sum() - np.bincount(y[leaves == leaf], weights=w[leaves == leaf]).max()
                 for leaf in np.unique(leaves))
    return float(errors) + alpha * tree.n_splits


def test_a_cart_start_leaves_the_optimum_the_brute_force_one():
    for seed in range(200):
        X, y, w, opts = random_instance(seed)
        y = relabel(y)
        start = cart(X, y, w, opts["max_depth"], opts["min_samples_leaf"])
        res = solve(X, y, w, start=start, **opts)
        assert res.status == "optimal", seed
        assert res.objective == pytest.approx(brute_force(X, y, w, **opts), abs=1e-9), seed
        assert tree_cost(res.tree, X, y, w, opts["alpha"]) == pytest.approx(res.objective, abs=1e-9), seed
        check_tree(res.tree, X, y, w, opts)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_stopped_search_is_never_worse_than_its_cart_start(threads):
    """Depth 4 on 1 000 rows, stopped after a few units of work or by the callback at once: the tree returned and
    every incumbent reported are at most CART's errors (its leaves at their best class)."""
    X, y = make_classification(n_samples=1000, n_features=10, random_state=0)
    start = cart(X, y, None, 4)
    ceiling = best_leaf_cost(start, X, y, None, 0.0)
    assert ceiling < solve(X, y, max_depth=2).objective  # the start beats the engine's own depth-2 start
    incumbents = []
    runs = [solve(X, y, max_depth=4, start=start, node_limit=2),
            solve(X, y, max_depth=4, start=start, threads=threads,
                  callback=lambda point: incumbents.append(point["incumbent"]) or True)]
    for res in runs:
        assert res.status in ("node_limit", "interrupted")
        assert res.objective <= ceiling
        assert (res.tree.predict(X).argmax(1) != y).sum() == res.objective
    assert incumbents and max(incumbents) <= ceiling
    for res in runs:  # the first point is the start, not the root's leaf
        assert all(incumbent <= ceiling for _, incumbent, _ in res.trace)


def test_a_start_that_is_no_tree_of_the_problem_is_ignored():
    """Deeper than max_depth, a feature not allowed at its node, a leaf below min_samples_leaf: the search runs
    from its own start and proves the brute-force optimum of the problem as given."""
    rng = np.random.RandomState(0)
    X = rng.randint(0, 6, (40, 3)).astype(float)
    y = (X[:, 0] + X[:, 1] > 5).astype(int) ^ (rng.rand(40) < 0.1)
    deep = cart(X, y, None, 4)
    allowed = np.array([False, True, True])
    for start, opts in ((deep, dict(max_depth=2, alpha=0.0, min_samples_leaf=1, allowed_features=None)),
                        (cart(X, y, None, 2), dict(max_depth=2, alpha=0.0, min_samples_leaf=1,
                                                   allowed_features=allowed)),
                        (cart(X, y, None, 3), dict(max_depth=3, alpha=0.0, min_samples_leaf=8, allowed_features=None))):
        res = solve(X, y, start=start, **opts)
        assert res.status == "optimal"
        assert res.objective == brute_force(X, y, None, **opts)
        check_tree(res.tree, X, y, None, opts)
