"""optitree.split_space: the expanded threshold matrix for categorical subsets and NaN routing.

Round trips (decoded trees route the training rows like the trees over Z), optima over Z against a
brute force written here over the raw data, CART and scikit-learn never better, issue 23's
example, and edge cases.
"""

import json

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier

from greedy import CARTClassifier, Tree, midpoint_threshold
from optitree.exact import solve
from optitree.split_space import NOT_MISSING_THRESHOLD, SplitSpace
from support.split_bruteforce import brute_force


# ---------------------------------------------------------------------- helpers
def _mixed(rng, n, n_levels=4, nan_cat=True, nan_num=True):
    """Columns: categorical (n_levels codes, NaN if nan_cat), numeric (NaN if nan_num), numeric without NaN."""
    codes = rng.randint(0, n_levels, n).astype(float)
    x = np.round(rng.randn(n), 1)
    if nan_cat:
        codes[rng.rand(n) < 0.2] = np.nan
    if nan_num:
        x[rng.rand(n) < 0.2] = np.nan
    return np.column_stack([codes, x, rng.randint(0, 4, n).astype(float)])


def _random_tree(rng, Z, depth):
    """A random tree over Z: random columns, thresholds between Z's distinct values (sometimes outside)."""
    cl, cr, feat, thr = [], [], [], []

    def grow(d):
        i = len(cl)
        cl.append(-1), cr.append(-1), feat.append(-2), thr.append(np.nan)
        if d == depth or (d > 0 and rng.rand() < 0.2):
            return i
        j = rng.randint(Z.shape[1])
        values = np.unique(Z[:, j])
        if values.size > 1 and rng.rand() < 0.9:
            k = rng.randint(values.size - 1)
            t = float(midpoint_threshold(values[k], values[k + 1]))
        else:  # every training row on one side
            t = float(values[0] - 1.0 if rng.rand() < 0.5 else values[-1] + 1.0)
        feat[i], thr[i] = j, t
        cl[i] = grow(d + 1)
        cr[i] = grow(d + 1)
        return i

    grow(0)
    m = len(cl)
    return Tree(cl, cr, feat, thr, np.zeros((m, 2)), n_features=Z.shape[1])


def _hardened(tree):
    """``tree`` with every NaN routing fraction rounded to its heavier side (a split of the space)."""
    d = tree.to_dict()
    frac = np.asarray(d.get("missing_left") or tree.with_weight_routing().missing_left, float)
    d["missing_left"] = (frac >= 0.5).astype(float)
    return Tree.from_dict(d)


def _error(tree, X, y, w, classes):
    pred = classes[tree.value[tree.apply(X)].argmax(axis=1)]
    return float(w[pred != y].sum())


# ---------------------------------------------------------------------- round trip
@pytest.mark.parametrize("seed", range(12))
def test_decoded_random_trees_route_every_training_row_like_the_tree_over_z(seed):
    rng = np.random.RandomState(seed)
    n = 60
    X = _mixed(rng, n, n_levels=rng.randint(2, 6), nan_cat=seed % 2 == 0, nan_num=seed % 3 != 0)
    many = rng.randint(0, 7, n).astype(float)  # above max_category_subsets=4: the reduced rule
    many[rng.rand(n) < 0.1] = np.nan
    const = np.where(rng.rand(n) < 0.3, np.nan, 2.5)
    X = np.column_stack([X, many, const, np.full(n, np.nan), np.zeros(n)])
    cart = CARTClassifier(max_depth=3, categorical_features=[0, 3]).fit(X[:, :4], rng.randint(0, 2, n)).tree_
    cart = Tree.from_dict({**cart.to_dict(), "n_features": X.shape[1]})
    space = SplitSpace(X, {0: 5, 3: 7, 6: 1}, max_category_subsets=4, cart_tree=cart)
    Z = space.transform(X)
    assert Z.shape == (n, space.n_columns) and np.isfinite(Z).all()
    for _ in range(25):
        tz = _random_tree(rng, Z, rng.randint(1, 4))
        tx = space.decode(tz, X)
        assert tx.n_features == X.shape[1]
        np.testing.assert_array_equal(tx.apply(X), tz.apply(Z))
        assert Tree.from_json(tx.to_json()) == tx
        internal = ~tx.is_leaf
        assert set(np.unique(tx.missing_left[internal])) <= {0.0, 1.0}
        # a NaN nowhere seen in training follows scikit-learn's rule: the child with more training rows
        leaf_z = tz.apply(Z)
        for i in np.flatnonzero(internal & ~space.has_missing[np.maximum(tx.feature, 0)]):
            n_left = np.isin(leaf_z, _subtree_leaves(tx, tx.children_left[i])).sum()
            n_right = np.isin(leaf_z, _subtree_leaves(tx, tx.children_right[i])).sum()
            assert tx.missing_left[i] == float(n_left > n_right)


def _subtree_leaves(tree, node):
    out, stack = [], [node]
    while stack:
        i = stack.pop()
        if tree.children_left[i] == -1:
            out.append(i)
        else:
            stack += [tree.children_left[i], tree.children_right[i]]
    return out


def test_identity_space_for_complete_numeric_data():
    rng = np.random.RandomState(0)
    X = rng.rand(40, 3)
    space = SplitSpace(X)
    assert space.identity and space.n_columns == 3
    assert space.transform(X) is X  # callers may skip it
    assert space.describe()["features"][1] == {"feature": 1, "kind": "numeric", "thresholds": "all midpoints",
                                               "missing": "none in training", "n_columns": 1}
    y = (X[:, 0] > 0.3).astype(int)
    res = solve(space.transform(X), y, max_depth=2)
    tree = space.decode(res.tree, X)
    np.testing.assert_array_equal(tree.threshold[~tree.is_leaf], res.tree.threshold[~res.tree.is_leaf])
    # prediction with NaN: the child with more training rows (ties right)
    root_left = (X[:, tree.feature[0]] <= tree.threshold[0]).sum()
    assert tree.missing_left[0] == float(root_left > 40 - root_left)
    Xn = X[:3].copy()
    Xn[:, tree.feature[0]] = np.nan
    tree.predict(Xn)  # no error: every split has a missing-value side


def test_numeric_columns_without_nan_are_passed_through_once():
    rng = np.random.RandomState(1)
    X = np.column_stack([rng.rand(30), rng.rand(30)])
    X[3, 1] = np.nan
    space = SplitSpace(X)
    assert not space.identity
    assert space.column_feature.tolist() == [0, 1, 1]
    Z = space.transform(X)
    np.testing.assert_array_equal(Z[:, 0], X[:, 0])
    finite = ~np.isnan(X[:, 1])
    lo, hi = X[finite, 1].min(), X[finite, 1].max()
    assert Z[3, 1] < lo and Z[3, 2] > hi
    # sentinels keep min-max scaled gaps reasonable: no farther than one range away
    assert lo - Z[3, 1] <= (hi - lo) * (1 + 1e-12) and Z[3, 2] - hi <= (hi - lo) * (1 + 1e-12)


# ---------------------------------------------------------------------- optimum = brute force
@pytest.mark.parametrize("seed", range(16))
def test_optimum_over_z_equals_brute_force_over_raw_data_and_beats_cart(seed):
    rng = np.random.RandomState(100 + seed)
    n = rng.randint(12, 31)
    n_levels = rng.randint(2, 6)
    nan_cat, nan_num = bool(seed & 1), bool(seed & 2)
    codes = rng.randint(0, n_levels, n).astype(float)
    if nan_cat:
        codes[rng.rand(n) < 0.25] = np.nan
    x = np.round(rng.rand(n), 1)
    if nan_num:
        x[rng.rand(n) < 0.25] = np.nan
    X = np.column_stack([codes, x])
    k = 2 if seed % 4 < 2 else 3
    y = rng.randint(0, k, n)
    w = rng.uniform(0.5, 2.0, n)
    space = SplitSpace(X, {0: n_levels})
    Z = space.transform(X)
    for depth in (1, 2):
        res = solve(Z, y, sample_weight=w, max_depth=depth)
        expected = brute_force(X, y, w, {0}, depth)
        assert res.objective == pytest.approx(expected, abs=1e-9)
        tree = space.decode(res.tree, X, sample_weight=w)
        assert _error(tree, X, y, w, res.classes) == pytest.approx(expected, abs=1e-9)
        cart = CARTClassifier(max_depth=depth, categorical_features=[0]).fit(X, y, sample_weight=w)
        if not np.isnan(X).any():
            assert res.objective <= w[cart.predict(X) != y].sum() + 1e-9
        else:  # CART's own splits with each NaN side hardened (C4.5 splits a NaN row across both children)
            hard = _hardened(cart.tree_)
            assert res.objective <= _error(hard, X, y, w, cart.classes_) + 1e-9
        sk = DecisionTreeClassifier(max_depth=depth, random_state=0).fit(X, y, sample_weight=w)
        assert res.objective <= w[sk.predict(X) != y].sum() + 1e-9


def test_brute_force_sees_what_a_prefix_only_space_misses():
    """The brute force is not vacuous: codes split by thresholds alone are worse on an XOR of levels."""
    codes = np.array([0, 1, 2, 3] * 5, float)
    y = np.isin(codes, [0, 2]).astype(int)
    X = codes[:, None]
    w = np.ones(codes.size)
    assert brute_force(X, y, w, {0}, 1) == 0.0
    assert solve(X, y, max_depth=1).objective > 0  # thresholds on the codes: prefixes only
    space = SplitSpace(X, {0: 4})
    assert solve(space.transform(X), y, max_depth=1).objective == 0.0


# ---------------------------------------------------------------------- issue 23's example
def test_issue_23_colour_xor_depth_2_is_as_good_as_cart():
    rng = np.random.RandomState(23)
    n = 300
    colour = rng.randint(0, 3, n).astype(float)  # blue, green, red
    x = rng.rand(n)
    y = ((colour != 1) ^ (x > 0.5)).astype(int)
    X = np.column_stack([colour, x])
    cart = CARTClassifier(max_depth=2, categorical_features=[0]).fit(X, y)
    cart_acc = (cart.predict(X) == y).mean()
    prefixes = solve(X, y, max_depth=2)  # the code order only, as the optimal estimators did
    assert 1 - prefixes.objective / n < cart_acc
    space = SplitSpace(X, {0: 3}, cart_tree=cart.tree_)
    res = solve(space.transform(X), y, max_depth=2)
    tree = space.decode(res.tree, X)
    acc = (res.classes[tree.value[tree.apply(X)].argmax(1)] == y).mean()
    assert acc >= cart_acc and acc == 1.0
    root = tree.category_left[0, :3] if tree.categorical_nodes[0] else None
    if root is not None:  # the root separates green from blue and red
        assert root[1] != root[0] and root[0] == root[2]


# ---------------------------------------------------------------------- edge cases
def test_constant_numeric_column_with_nan_is_one_missing_vs_not_column():
    x = np.array([3.0, np.nan, 3.0, np.nan, 3.0])
    y = np.array([0, 1, 0, 1, 0])
    X = x[:, None]
    space = SplitSpace(X)
    Z = space.transform(X)
    assert space.n_columns == 1 and np.isfinite(Z).all() and np.unique(Z).size == 2
    res = solve(Z, y, max_depth=1)
    assert res.objective == 0.0
    tree = space.decode(res.tree, X)
    # scikit-learn's form of "missing vs not": every finite value left, NaN right
    assert tree.threshold[0] == NOT_MISSING_THRESHOLD and tree.missing_left[0] == 0.0
    np.testing.assert_array_equal(tree.apply(X), res.tree.apply(Z))
    assert tree.value[tree.apply([[-1e300], [1e300], [np.nan]])].argmax(1).tolist() == [0, 0, 1]


def test_nan_left_missing_vs_not_is_decoded_with_swapped_children():
    x = np.array([1.0, 2.0, np.nan, 4.0, np.nan])
    X = x[:, None]
    space = SplitSpace(X)
    Z = space.transform(X)
    low = Z[2, 0]
    assert low < 1.0
    tz = Tree([1, -1, -1], [2, -1, -1], [0, -2, -2], [(low + 1.0) / 2, np.nan, np.nan],
              [[0, 2], [0, 2], [3, 0]], n_features=space.n_columns)
    tx = space.decode(tz, X)
    assert tx.threshold[0] == NOT_MISSING_THRESHOLD and tx.missing_left[0] == 0.0
    assert (tx.children_left[0], tx.children_right[0]) == (2, 1)
    np.testing.assert_array_equal(tx.apply(X), [2, 2, 1, 2, 1])


def test_all_nan_column_and_one_level_categorical_offer_no_split():
    rng = np.random.RandomState(3)
    n = 20
    X = np.column_stack([np.full(n, np.nan), np.full(n, 2.0), rng.rand(n)])
    space = SplitSpace(X, {1: 4})
    Z = space.transform(X)
    assert space.column_feature.tolist() == [0, 1, 2]
    assert np.ptp(Z[:, 0]) == 0 and np.ptp(Z[:, 1]) == 0
    desc = space.describe()
    assert desc["features"][1]["levels"] == 1 and desc["features"][1]["n_subsets"] == 0
    json.dumps(desc)
    y = (X[:, 2] > 0.5).astype(int)
    res = solve(Z, y, max_depth=2)
    assert set(res.tree.feature[~res.tree.is_leaf]) == {2}
    # a split on such a column (every row one way) still decodes and routes exactly
    for t in (-0.5, 0.5):
        for j in (0, 1):
            tz = Tree([1, -1, -1], [2, -1, -1], [j, -2, -2], [t, np.nan, np.nan], np.zeros((3, 2)), n_features=3)
            tx = space.decode(tz, X)
            np.testing.assert_array_equal(tx.apply(X), tz.apply(Z))


def test_categorical_with_one_level_and_nan_splits_missing_vs_not():
    X = np.array([[0.0], [np.nan], [0.0], [np.nan]])
    y = np.array([0, 1, 0, 1])
    space = SplitSpace(X, {0: 2})
    assert space.n_columns == 1
    res = solve(space.transform(X), y, max_depth=1)
    tree = space.decode(res.tree, X)
    assert res.objective == 0.0
    assert tree.categorical_nodes[0]
    np.testing.assert_array_equal(tree.apply(X), res.tree.apply(space.transform(X)))
    # code 1 was never seen: it follows default_left, the heavier child (a tie here: left)
    assert tree.category_left[0, 1] == tree.default_left[0]


@pytest.mark.parametrize("seed", range(4))
def test_levels_above_max_category_subsets_hold_every_cart_subset(seed):
    rng = np.random.RandomState(seed)
    n, n_levels = 200, 12
    codes = rng.randint(0, n_levels, n).astype(float)
    if seed % 2:
        codes[rng.rand(n) < 0.15] = np.nan
    X = np.column_stack([codes, rng.rand(n)])
    y = (rng.rand(n_levels)[np.nan_to_num(codes, nan=0).astype(int)] + 0.3 * rng.rand(n) > 0.6).astype(int)
    cart = CARTClassifier(max_depth=3, categorical_features=[0]).fit(X, y).tree_
    space = SplitSpace(X, {0: n_levels}, cart_tree=cart)
    bare = SplitSpace(X, {0: n_levels})
    assert bare.narrower_than_cart and not space.narrower_than_cart
    n_levels_seen = np.unique(codes[~np.isnan(codes)]).size + int(seed % 2)
    assert space.n_columns < 2 ** (n_levels_seen - 1)  # the reduced rule is in force
    Z = space.transform(X)
    cols = Z[:, space.column_feature == 0].T.astype(bool)
    known = ~np.isnan(codes)
    cart_nodes = np.flatnonzero(cart.categorical_nodes & (cart.feature == 0))
    assert cart_nodes.size  # the test is not vacuous
    for i in cart_nodes:
        left = cart.category_left[i, np.where(known, codes, 0).astype(int)]
        for nan_left in (False, True):
            side = np.where(known, left, nan_left)
            if side.all() or not side.any():
                continue
            # the partition is a column of Z (0 = left side, as either side)
            assert any(np.array_equal(c, ~side) or np.array_equal(c, side) for c in cols)
    rule = space.describe()["features"][0]
    assert rule["subsets"].startswith("one-vs-rest + prefixes + CART's (")
    # one-vs-rest and prefixes are there too
    for level in np.unique(codes[known]):
        side = codes == level
        assert any(np.array_equal(c, side) or np.array_equal(c, ~side) for c in cols)
    # the optimum over the space built with CART's depth-2 tree is never worse than that tree
    cart2 = CARTClassifier(max_depth=2, categorical_features=[0]).fit(X, y)
    space2 = SplitSpace(X, {0: n_levels}, cart_tree=cart2.tree_)
    res2 = solve(space2.transform(X), y, max_depth=2)
    assert res2.objective <= _error(_hardened(cart2.tree_), X, y, np.ones(n), cart2.classes_)


def test_all_subsets_up_to_max_category_subsets():
    codes = np.tile(np.arange(5.0), 4)
    codes[::7] = np.nan  # 5 codes + missing = 6 levels
    X = codes[:, None]
    assert SplitSpace(X, {0: 5}, max_category_subsets=6).n_columns == 2 ** 5 - 1
    small = SplitSpace(X, {0: 5}, max_category_subsets=5)
    assert small.n_columns < 2 ** 5 - 1 and small.narrower_than_cart


def test_prediction_routes_unseen_codes_and_new_nan_by_training_weight():
    # codes 0, 1, 2 seen; 3 unseen; weight makes the right child heavier
    X = np.array([[0.0, 1.0], [1.0, 2.0], [2.0, 3.0], [2.0, 4.0]])
    y = np.array([0, 0, 1, 1])
    w = np.array([1.0, 1.0, 5.0, 5.0])
    space = SplitSpace(X, {0: 4})
    Z = space.transform(X)
    res = solve(Z, y, sample_weight=w, max_depth=1)
    tree = space.decode(res.tree, X, sample_weight=w)
    assert tree.feature[0] == 0 and tree.categorical_nodes[0]
    heavy = tree.children_left[0] if tree.category_left[0, 2] else tree.children_right[0]
    assert tree.apply([[3.0, 0.0]])[0] == heavy  # unseen code: the heavier child
    assert tree.category_left[0, 3] == tree.default_left[0] == bool(tree.category_left[0, 2])
    assert tree.missing_left[0] == 0.0  # 2 rows each side: a tie goes right, as scikit-learn


def test_invalid_inputs():
    X = np.array([[0.0, 1.0], [1.0, 2.0]])
    with pytest.raises(ValueError, match="codes"):
        SplitSpace(X, {1: 2})  # code 2 >= k
    with pytest.raises(ValueError, match="infinity"):
        SplitSpace(np.array([[np.inf]]))
    with pytest.raises(ValueError, match="max_category_subsets"):
        SplitSpace(X, max_category_subsets=0)
    space = SplitSpace(X, {0: 3})
    with pytest.raises(ValueError, match="unseen"):
        space.transform(np.array([[2.0, 1.0]]))
    with pytest.raises(ValueError, match="NaN"):
        space.transform(np.array([[0.0, np.nan]]))
    Xn = np.array([[-np.finfo(float).max], [np.nan], [0.0]])
    with pytest.raises(ValueError, match="largest float"):
        SplitSpace(Xn)


def test_sentinels_never_overflow():
    big = np.finfo(float).max / 2
    X = np.array([[-big], [big], [np.nan]])
    space = SplitSpace(X)
    Z = space.transform(X)
    assert np.isfinite(Z).all()
    assert Z[2, 0] < -big and Z[2, 1] > big


def test_split_space_imports_numpy_greedy_and_the_stdlib_only():
    import ast
    import pathlib
    import sys

    root = pathlib.Path(__file__).resolve().parents[2] / "src" / "optitree" / "split_space"
    allowed = {"numpy", "greedy"} | set(sys.stdlib_module_names)
    for path in root.glob("*.py"):
        tree = ast.parse(path.read_text())
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level > 1], path
        top = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        top |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0}
        assert top <= allowed, (path.name, top - allowed)


def test_regression_trees_decode_too():
    rng = np.random.RandomState(7)
    X = _mixed(rng, 80, n_levels=5)
    y = np.where(np.isnan(X[:, 1]), 3.0, np.nan_to_num(X[:, 0], nan=-1.0)) + 0.1 * rng.randn(80)
    space = SplitSpace(X, {0: 5})
    Z = space.transform(X)
    res = solve(Z, y, max_depth=2, loss="squared")
    tree = space.decode(res.tree, X)
    assert tree.task == "regression"
    np.testing.assert_allclose(tree.predict(X), res.tree.predict(Z))


def test_expand_allowed_maps_feature_masks_to_columns():
    X = np.array([[0.0, 1.0, 5.0], [1.0, np.nan, 6.0], [2.0, 3.0, 7.0]])
    space = SplitSpace(X, {0: 3})
    assert space.column_feature.tolist() == [0, 0, 0, 1, 1, 2]
    per_level = np.array([[True, False, True], [False, True, False]])
    np.testing.assert_array_equal(space.expand_allowed(per_level),
                                  [[1, 1, 1, 0, 0, 1], [0, 0, 0, 1, 1, 0]])
    with pytest.raises(ValueError, match="3 entries"):
        space.expand_allowed([True, False])
