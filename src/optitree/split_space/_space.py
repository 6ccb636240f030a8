"""``SplitSpace``: the expanded matrix ``Z``, its columns, decoding and the description."""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from greedy import Tree

from ._decode import NOT_MISSING_THRESHOLD, decode
from ._partitions import all_partitions, reduced_partitions

#: ``max_category_subsets="auto"``: levels up to which a categorical feature gets every subset, by
#: depth. Measured (exact engine, one thread, 1 000 rows, one categorical and two numeric features):
#: 10 levels (511 subsets) take 2-6 s at depth 2 and are not proven in 300 s at depth 3, where 7
#: levels take 8.5 s and 8 levels 29 s. Above it: one-vs-rest, prefixes and CART's own subsets.
AUTO_CATEGORY_SUBSETS = {1: 10, 2: 10, 3: 7, 4: 6}


def category_subsets(max_category_subsets, max_depth: int) -> int:
    """``max_category_subsets`` as a number of levels, ``"auto"`` resolved by depth (:data:`AUTO_CATEGORY_SUBSETS`)."""
    if max_category_subsets != "auto":
        return int(max_category_subsets)
    return AUTO_CATEGORY_SUBSETS[min(int(max_depth), max(AUTO_CATEGORY_SUBSETS))]

#: Largest accepted ``max_category_subsets``: ``2**15 - 1`` columns for one feature.
MAX_CATEGORY_SUBSETS_LIMIT = 16

@dataclass(frozen=True, eq=False)
class Column:
    """One column of ``Z``.

    Attributes
    ----------
    feature : int
        The original feature.
    kind : {"value", "nan_low", "nan_high", "subset", "constant"}
        ``value``: the feature's values (no NaN in training). ``nan_low`` / ``nan_high``: the
        values with NaN replaced by ``sentinel`` (below the finite minimum / above the maximum).
        ``subset``: 0 for the levels in ``left_levels``, 1 for the others. ``constant``: 0 (the
        feature has no split).
    sentinel : float
        Z value of NaN (``nan_low``, ``nan_high``); NaN otherwise.
    lo, hi : float
        Finite minimum and maximum of the feature in training (numeric kinds with NaN).
    left_levels : ndarray of bool or None
        ``subset``: mask over the feature's levels (:attr:`SplitSpace.levels`) of the side
        ``z <= 0.5`` sends left.
    """

    feature: int
    kind: str
    sentinel: float = np.nan
    lo: float = np.nan
    hi: float = np.nan
    left_levels: np.ndarray | None = None


def _sentinels(lo: float, hi: float) -> tuple[float, float]:
    """Values just outside ``[lo, hi]`` for NaN: a range away (or 1 for a constant column).

    Keeps min-max scaled gaps reasonable; falls back to the next float when that overflows.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        span = hi - lo if hi > lo else 1.0
        low, high = lo - span, hi + span
    if not (np.isfinite(low) and low < lo):
        low = float(np.nextafter(lo, -np.inf))
    if not (np.isfinite(high) and high > hi):
        high = float(np.nextafter(hi, np.inf))
    return float(low), float(high)


class SplitSpace:
    """Expanded threshold matrix for categorical subset splits and NaN routing (module docstring).

    Parameters
    ----------
    X : array (n, p)
        Training features, float; NaN is a missing value; infinity is an error.
    categorical : dict {column index: number of categories k}, optional
        Columns holding category codes ``0..k-1`` (NaN: missing).
    max_category_subsets : int, default=10
        A categorical feature with at most this many levels (codes seen in training, plus one
        for missing values) gets every two-way partition of its levels (``2**(L-1) - 1``
        columns: 511 for 10 levels); above it one-vs-rest, code-order prefixes and CART's.
    cart_tree : greedy.Tree, optional
        A tree over the ``p`` original features; every subset it uses on a categorical
        feature is in the space (with the missing level on either side).

    Attributes
    ----------
    identity : bool
        No column needs expansion: ``Z`` is ``X`` (callers may skip :meth:`transform`).
    columns : list of Column
    column_feature : ndarray of int (n_columns,)
        Original feature of every column of ``Z``.
    n_features : int
        ``p``.
    has_missing : ndarray of bool (p,)
        Features with NaN in training.
    n_categories : dict {feature: k}
        The categorical features (``categorical``, sorted).
    levels : dict {feature: ndarray of float}
        Categorical features: the codes seen in training, sorted (the missing level, when
        ``has_missing``, is level ``len(levels[f])``).
    narrower_than_cart : bool
        True when CART's own splits might be outside the space: a categorical feature has more
        than ``max_category_subsets`` levels and no ``cart_tree`` was given.
    """

    def __init__(self, X, categorical=None, *, max_category_subsets: int = 10, cart_tree: Tree | None = None):
        X = self._check_matrix(X)
        n, p = X.shape
        self.n_features = p
        if (not isinstance(max_category_subsets, numbers.Integral) or isinstance(max_category_subsets, bool)
                or not 1 <= max_category_subsets <= MAX_CATEGORY_SUBSETS_LIMIT):
            raise ValueError(f"max_category_subsets must be an integer in [1, {MAX_CATEGORY_SUBSETS_LIMIT}], "
                             f"got {max_category_subsets!r}")
        self.max_category_subsets = int(max_category_subsets)
        self.n_categories = self._check_categorical(categorical, X)
        if cart_tree is not None and (not isinstance(cart_tree, Tree) or cart_tree.n_features != p):
            raise ValueError(f"cart_tree must be a greedy.Tree over the {p} features of X")
        self.has_missing = np.isnan(X).any(axis=0) if n else np.zeros(p, bool)
        self.identity = not self.n_categories and not self.has_missing.any()
        self.levels = {f: np.unique(X[~np.isnan(X[:, f]), f]) for f in self.n_categories}
        cart_sides = self._cart_sides(cart_tree)
        self.columns: list[Column] = []
        self._rules: dict[int, dict] = {}
        for f in range(p):
            if f in self.n_categories:
                self._add_categorical(f, cart_sides.get(f, []), cart_tree is not None)
            else:
                self._add_numeric(f, X[:, f])
        self.column_feature = np.array([c.feature for c in self.columns], dtype=np.intp)
        self.narrower_than_cart = any(rule.get("reduced") and cart_tree is None for rule in self._rules.values())

    # ------------------------------------------------------------------ construction
    @staticmethod
    def _check_matrix(X) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got shape {X.shape}")
        if np.isinf(X).any():
            raise ValueError("X contains infinity; only NaN (a missing value) is allowed besides finite values")
        return X

    @staticmethod
    def _check_categorical(categorical, X) -> dict[int, int]:
        if categorical is None:
            return {}
        p = X.shape[1]
        out = {}
        for f, k in dict(categorical).items():
            if not isinstance(f, numbers.Integral) or not 0 <= f < p:
                raise ValueError(f"categorical column index {f!r} is not in [0, {p})")
            if not isinstance(k, numbers.Integral) or k < 1:
                raise ValueError(f"categorical column {f}: the number of categories must be an integer >= 1, "
                                 f"got {k!r}")
            values = X[:, f][~np.isnan(X[:, f])]
            bad = (values < 0) | (values >= k) | (values != np.floor(values))
            if bad.any():
                raise ValueError(f"categorical column {f} must hold codes 0..{k - 1} (or NaN); found "
                                 f"{values[bad][0]!r}")
            out[int(f)] = int(k)
        return dict(sorted(out.items()))

    def _cart_sides(self, tree: Tree | None) -> dict[int, list[np.ndarray]]:
        """Per categorical feature, the masks over its training codes that ``tree``'s nodes send left."""
        sides: dict[int, list[np.ndarray]] = {}
        if tree is None:
            return sides
        categorical = tree.categorical_nodes
        for i in np.flatnonzero(~tree.is_leaf):
            f = int(tree.feature[i])
            if f not in self.n_categories:
                continue
            codes = self.levels[f]
            if categorical[i]:
                width = tree.category_left.shape[1]
                idx = codes.astype(np.intp)
                inside = idx < width
                left = np.full(codes.size, bool(tree.default_left[i]))
                left[inside] = tree.category_left[i, idx[inside]]
            else:  # a threshold on the codes: a prefix of the code order
                left = codes <= tree.threshold[i]
            sides.setdefault(f, []).append(left)
        return sides

    def _add_numeric(self, f: int, x: np.ndarray) -> None:
        missing = np.isnan(x)
        if not missing.any():
            self.columns.append(Column(f, "value"))
            self._rules[f] = {"kind": "numeric", "thresholds": "all midpoints", "missing": "none in training"}
            return
        finite = x[~missing]
        if finite.size == 0:
            self.columns.append(Column(f, "constant"))
            self._rules[f] = {"kind": "numeric", "thresholds": "none (all values missing in training)",
                              "missing": "none to split (all missing)"}
            return
        lo, hi = float(finite.min()), float(finite.max())
        if lo == -NOT_MISSING_THRESHOLD or hi == NOT_MISSING_THRESHOLD:
            raise ValueError(f"column {f} has missing values and a value of magnitude {NOT_MISSING_THRESHOLD:.3g} "
                             "(the largest float): no value is left beyond it to stand for the missing ones; "
                             "rescale the column")
        low, high = _sentinels(lo, hi)
        self.columns.append(Column(f, "nan_low", sentinel=low, lo=lo, hi=hi))
        if hi > lo:  # a constant column's only split, missing vs not, is already in nan_low
            self.columns.append(Column(f, "nan_high", sentinel=high, lo=lo, hi=hi))
        self._rules[f] = {"kind": "numeric", "thresholds": "all midpoints", "missing": "both sides",
                          "missing_vs_not": True}

    def _add_categorical(self, f: int, cart_sides: list[np.ndarray], with_cart: bool) -> None:
        n_codes, has_missing = self.levels[f].size, bool(self.has_missing[f])
        n_levels = n_codes + has_missing
        rule = {"kind": "categorical", "n_categories": self.n_categories[f], "levels": n_levels,
                "codes": self.levels[f].astype(int).tolist(), "missing_level": has_missing}
        if n_levels <= self.max_category_subsets:
            masks = all_partitions(n_levels)
            rule.update(subsets="all 2**(L-1)-1 subsets", reduced=False)
        else:
            masks, n_cart = reduced_partitions(n_codes, has_missing, cart_sides)
            how = f"one-vs-rest + prefixes + CART's ({n_cart})" if with_cart else "one-vs-rest + prefixes"
            rule.update(subsets=how, reduced=True, cart_subsets=n_cart)
        rule["n_subsets"] = len(masks)
        rule["missing"] = "both sides (a level)" if has_missing else "none in training"
        self._rules[f] = rule
        if not masks:
            self.columns.append(Column(f, "constant"))
        for mask in masks:
            self.columns.append(Column(f, "subset", left_levels=mask))

    # ------------------------------------------------------------------ properties
    @property
    def n_columns(self) -> int:
        """Number of columns of ``Z``."""
        return len(self.columns)

    def expand_allowed(self, allowed) -> np.ndarray:
        """Map a boolean feature mask ``(..., p)`` (e.g. ``allowed_features``) to the columns of ``Z``."""
        allowed = np.asarray(allowed, bool)
        if allowed.shape[-1] != self.n_features:
            raise ValueError(f"the last axis must have {self.n_features} entries, got shape {allowed.shape}")
        return allowed[..., self.column_feature]

    # ------------------------------------------------------------------ transform
    def _level_index(self, f: int, x: np.ndarray) -> np.ndarray:
        codes = self.levels[f]
        missing = np.isnan(x)
        if codes.size:
            idx = np.minimum(np.searchsorted(codes, np.where(missing, codes[0], x)), codes.size - 1)
            unseen = ~missing & (codes[idx] != x)
        else:
            idx, unseen = np.zeros(x.size, np.intp), ~missing
        if unseen.any():
            raise ValueError(f"categorical column {f} holds a code unseen in the space's training data: "
                             f"{x[unseen][0]!r}")
        if missing.any() and not self.has_missing[f]:
            raise ValueError(f"categorical column {f} has NaN, and the space's training data had none")
        return np.where(missing, codes.size, idx)

    def transform(self, X) -> np.ndarray:
        """``Z`` for a matrix of the training kind (same columns; codes and NaN as in training).

        The identity space returns ``X`` itself (as a float64 array). A categorical code or a
        NaN the training data did not have is a ValueError.
        """
        X = self._check_matrix(X)
        if X.shape[1] != self.n_features:
            raise ValueError(f"X has {X.shape[1]} features, the split space has {self.n_features}")
        if self.identity:
            return X
        Z = np.empty((X.shape[0], self.n_columns))
        level_index: dict[int, np.ndarray] = {}
        for j, col in enumerate(self.columns):
            x = X[:, col.feature]
            if col.kind == "value":
                if np.isnan(x).any():
                    raise ValueError(f"column {col.feature} has NaN, and the space's training data had none")
                Z[:, j] = x
            elif col.kind in ("nan_low", "nan_high"):
                Z[:, j] = np.where(np.isnan(x), col.sentinel, x)
            elif col.kind == "constant":
                if col.feature in self.n_categories:
                    self._level_index(col.feature, x)  # validation only
                Z[:, j] = 0.0
            else:
                if col.feature not in level_index:
                    level_index[col.feature] = self._level_index(col.feature, x)
                Z[:, j] = ~col.left_levels[level_index[col.feature]]
        return Z

    # ------------------------------------------------------------------ decode
    def decode(self, tree: Tree, X_train, sample_weight=None) -> Tree:
        """The :class:`greedy.Tree` over the original features that routes like ``tree`` over ``Z``.

        ``tree`` splits the columns of ``Z`` (axis-aligned, constant leaves). Every training row
        of ``X_train`` reaches the leaf ``tree`` sends its ``transform`` to (same node ids). Node
        statistics (``value``, ``n_node_samples``, ``impurity``, ``leaf_class``, ...) are copied
        from ``tree``; ``X_train`` and ``sample_weight`` choose ``default_left`` (more training
        weight) and the prediction-time ``missing_left`` of nodes no training NaN reached (more
        training samples). A "missing vs not" node and a node sending every training row one way
        may have its children swapped (the child ids stay, so ``apply`` agrees).
        """
        return decode(self, tree, X_train, sample_weight)

    # ------------------------------------------------------------------ description
    def describe(self) -> dict:
        """The space as a JSON-safe dict, for a certificate: what the proof holds over.

        ``features``: one entry per original feature with its ``kind``, ``thresholds`` (numeric:
        ``"all midpoints"``), ``missing`` (``"both sides"`` for a feature with NaN in training),
        and for a categorical feature its number of ``levels`` and ``subsets`` rule
        (``"all 2**(L-1)-1 subsets"`` or ``"one-vs-rest + prefixes + CART's (n)"``).
        """
        features = []
        for f in range(self.n_features):
            rule = {"feature": f, **self._rules[f]}
            rule["n_columns"] = int((self.column_feature == f).sum())
            features.append(rule)
        return {
            "identity": bool(self.identity),
            "n_features": int(self.n_features),
            "n_columns": int(self.n_columns),
            "max_category_subsets": int(self.max_category_subsets),
            "narrower_than_cart": bool(self.narrower_than_cart),
            "missing_routing": "learned side where training NaN reached the node; else the child with more "
                               "training samples",
            "unseen_categories": "the child with more training weight",
            "features": features,
        }

    def __repr__(self) -> str:
        return (f"SplitSpace(n_features={self.n_features}, n_columns={self.n_columns}, identity={self.identity}, "
                f"categorical={sorted(self.n_categories)}, missing={np.flatnonzero(self.has_missing).tolist()})")

