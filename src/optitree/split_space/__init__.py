"""The split space: what an optimal tree may split on, as threshold splits on an expanded matrix.

The exact engine (:func:`optitree.exact.solve`) and the MIP formulations split numeric columns
on thresholds ``z <= t`` at every midpoint between consecutive distinct values. A
:class:`SplitSpace` makes them optimal over categorical subset splits and scikit-learn's
missing-value routing as well: it maps the raw training matrix ``X`` (NaN allowed, categorical
columns as codes ``0..k-1``) to an expanded matrix ``Z`` (finite, no NaN) whose threshold splits
are exactly the splits of the space, and maps a tree over ``Z`` back to a :class:`greedy.Tree`
over the original features (:meth:`SplitSpace.decode`), which predicts on the raw ``X``.

Columns of ``Z`` (:attr:`SplitSpace.columns`; :attr:`SplitSpace.column_feature` maps each to
its original feature):

* a numeric feature **without NaN** in training: the column itself (no doubled candidates);
* a numeric feature **with NaN**: two columns, NaN replaced by a sentinel below the finite
  minimum (NaN goes left with the small values) and above the maximum (NaN goes right). A
  threshold between a sentinel and the finite values is the split "missing vs not", decoded as
  threshold :data:`NOT_MISSING_THRESHOLD` (every finite value left) with NaN right — the exact,
  finite form of scikit-learn's ``threshold = inf``, missing right (``greedy.Tree`` wants finite
  thresholds). A constant feature with NaN gets one column (its only split is "missing vs not");
* a **categorical** feature with ``L`` levels (the codes seen in training, plus a "missing" level
  if it had NaN): one 0/1 column per two-way partition of the levels (``0`` on the side that
  goes left), each partition once (not again as its complement). All ``2**(L-1) - 1``
  partitions when ``L <= max_category_subsets``; above that one-vs-rest, the code-order
  prefixes (missing on either side) and the subsets ``cart_tree`` uses on the feature (missing on
  either side), so CART's own splits stay in the space;
* a feature with no split at all (all NaN; a categorical with one level and no NaN): one
  constant column, so every feature owns at least one column.

When no column needs expansion (no categorical feature, no NaN) the space is the identity
(:attr:`SplitSpace.identity`): :meth:`~SplitSpace.transform` returns ``X`` itself and callers may
skip it; :meth:`~SplitSpace.decode` then only adds the prediction-time missing-value routing.

Decoded trees: numeric nodes keep their thresholds; categorical nodes get ``category_left``
(codes going left) and ``default_left`` for codes unseen in training (the child with more
training weight, ties left, as greedy CART); every split node gets ``missing_left`` in
``{0.0, 1.0}``: the learned side where training rows with NaN in the node's feature reached the
node, else scikit-learn's rule (the child with more training samples, ties right).

Use (an optimal fit)::

    space = SplitSpace(X, {j: n_categories_j, ...}, cart_tree=cart.tree_)  # CART's subsets stay in the space
    Z = space.transform(X)                       # X itself when space.identity
    res = solve(Z, y, sample_weight=w, max_depth=d,
                allowed_features=space.expand_allowed(allowed))  # feature masks -> column masks
    tree = space.decode(res.tree, X, sample_weight=w)            # predicts on the raw X
    certificate["split_space"] = space.describe()                 # what the proof holds over

(``max_distinct_features`` of the engine counts columns of ``Z``, not features.)

Cost (one categorical feature and two numeric ones, 1000 rows, two classes, one thread):
``L`` levels give ``2**(L-1) - 1`` columns; the engine proved depth 2 in 0.03 s (6 levels),
0.2 s (8), 2-6 s (10) and depth 3 in 2 s (6), 8.5 s (7), 29 s (8), 200 s (9), and not within
300 s at 10 levels (511 columns). The reduced rule (one-vs-rest, prefixes, CART's) keeps a
10-level feature at about 30 columns (depth 3 in 0.4 s), but it can be far from the optimum over
all subsets: choose ``max_category_subsets`` by depth.

>>> import numpy as np
>>> from optitree.split_space import SplitSpace
>>> X = np.array([[0.0, 1.0], [1.0, np.nan], [2.0, 3.0], [1.0, 2.0]])
>>> space = SplitSpace(X, categorical={0: 3})
>>> space.identity, space.n_columns, space.column_feature.tolist()
(False, 5, [0, 0, 0, 1, 1])
>>> space.describe()["features"][0]["subsets"]
'all 2**(L-1)-1 subsets'
"""

from ._space import AUTO_CATEGORY_SUBSETS, NOT_MISSING_THRESHOLD, Column, SplitSpace, category_subsets

__all__ = ["SplitSpace", "Column", "NOT_MISSING_THRESHOLD", "AUTO_CATEGORY_SUBSETS", "category_subsets"]
