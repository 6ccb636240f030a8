"""Property-based suite: every estimator and the exact engine fit or refuse clearly, on any input.

Hypothesis draws tiny data sets with random shapes, constant and duplicate columns and rows,
a single class, NaN and inf, feature magnitudes from 1e-300 to 1e300, zero and huge sample
weights and extreme targets. Each case must either

- fit, with finite predictions in the training labels' range, never worse on its training
  data than CART of the same depth, and — where it claims a proof — with the training
  objective of an independent brute force over every tree; or
- refuse with a ``ValueError``/``TypeError`` raised by our code or scikit-learn's validation,
  never an exception from inside numpy, HiGHS or Pyomo.

Profiles (``tests/conftest.py``): ``ci`` is short and deterministic; the long run is
``OPTITREE_HYPOTHESIS_PROFILE=long python -m pytest tests/optitree/test_properties.py -p no:cacheprovider``.
"""

from __future__ import annotations

import functools
import os
import traceback
import warnings

import numpy as np
import pytest
from hypothesis import event, given, note
from hypothesis import strategies as st

from greedy import CARTClassifier, CARTRegressor
from optitree import OptimalTreeClassifier, OptimalTreeRegressor
from optitree.exact import solve as exact_solve

#: Packages whose own exceptions must never reach the user.
INTERNAL = tuple(f"{os.sep}{name}{os.sep}" for name in ("numpy", "scipy", "highspy", "pyomo"))
DEPTH = 2
EXPONENTS = [-300, -150, -20, 0, 0, 0, 20, 150, 300]


# ---------------------------------------------------------------------- data
@st.composite
def features(draw):
    """Small integer grids (many ties) scaled by 10**e, with constant/duplicate columns and rows."""
    n = draw(st.integers(1, 10))
    p = draw(st.integers(1, 3))
    X = np.array(draw(st.lists(st.integers(-3, 3), min_size=n * p, max_size=n * p)), float).reshape(n, p)
    if draw(st.booleans()):
        X[:, draw(st.integers(0, p - 1))] = X[0, 0]  # a constant column
    if p > 1 and draw(st.booleans()):
        X[:, -1] = X[:, 0]  # a duplicate column
    if n > 2 and draw(st.booleans()):
        X[-1] = X[0]  # a duplicate row
    X *= 10.0 ** draw(st.sampled_from(EXPONENTS))
    bad = draw(st.sampled_from([None] * 6 + [np.nan, np.inf, -np.inf]))
    if bad is not None:
        X[draw(st.integers(0, n - 1)), draw(st.integers(0, p - 1))] = bad
    return X


EXTREME_WEIGHTS = ["one 1e-308", "one 1e-309", "1e-300 and 1e300", "all 5e-324"]


@st.composite
def weights(draw, n, extreme=False):
    """Sample weights; ``extreme``: also ratios beyond float64's range (once false proofs) and subnormal ones."""
    kind = draw(st.sampled_from(["none", "none", "ones", "some zero", "huge", "tiny", "mixed",
                                 "all zero", "negative", "nan"] + (EXTREME_WEIGHTS * 2 if extreme else [])))
    if kind == "none":
        return None
    w = np.array(draw(st.lists(st.integers(1, 4), min_size=n, max_size=n)), float)
    if kind == "some zero":
        w[: n // 2] = 0.0
    elif kind == "huge":
        w *= 1e250
    elif kind == "tiny":
        w *= 1e-250
    elif kind == "mixed":
        w[0] *= 1e12
    elif kind == "all zero":
        w[:] = 0.0
    elif kind == "negative":
        w[0] = -1.0
    elif kind == "nan":
        w[0] = np.nan
    elif kind.startswith("one 1e-"):
        w[draw(st.integers(0, n - 1))] = float(kind.split()[1])
    elif kind == "1e-300 and 1e300":
        w *= np.where(np.arange(n) % 2 == 0, 1e-300, 1e300)
    elif kind == "all 5e-324":
        w[:] = 5e-324
    return w


@st.composite
def classification_sets(draw, extreme=False):
    X = draw(features())
    n = X.shape[0]
    k = draw(st.integers(1, 3))  # k = 1: a single class
    y = np.array(draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)))
    if draw(st.booleans()):
        y = np.array(["ab"[0] * (c + 1) for c in y], dtype=object)  # string labels
    return X, y, draw(weights(n, extreme))


@st.composite
def regression_sets(draw, extreme=False):
    X = draw(features())
    n = X.shape[0]
    y = np.array(draw(st.lists(st.integers(-5, 5), min_size=n, max_size=n)), float)
    y = y * 10.0 ** draw(st.sampled_from([-300, -100, 0, 0, 0, 15, 16, 100, 300])) + draw(
        st.sampled_from([0.0, 0.0, 1e9]))
    bad = draw(st.sampled_from([None] * 8 + [np.nan, np.inf]))
    if bad is not None:
        y[draw(st.integers(0, n - 1))] = bad
    return X, y, draw(weights(n, extreme))


# ---------------------------------------------------------------------- truth
def rank_partitions(X):
    """Every (feature, rank threshold) split of the data's distinct values, as boolean masks."""
    masks = []
    for f in range(X.shape[1]):
        ranks = np.unique(X[:, f], return_inverse=True)[1].ravel()
        masks += [ranks <= r for r in range(ranks.max())]
    return masks


def brute_force(X, leaf_cost, depth):
    """Least total leaf cost over every tree of depth <= ``depth`` (splits at distinct values)."""
    masks = rank_partitions(X)

    @functools.lru_cache(maxsize=None)
    def best(rows: frozenset, d: int) -> float:
        idx = np.fromiter(sorted(rows), int, len(rows))
        cost = leaf_cost(idx)
        if d == 0 or idx.size < 2:
            return cost
        for m in masks:
            left = frozenset(idx[m[idx]].tolist())
            if left and len(left) < len(rows):
                cost = min(cost, best(left, d - 1) + best(rows - left, d - 1))
        return cost

    return best(frozenset(range(X.shape[0])), depth)


def classification_optimum(X, codes, w):
    def errors(idx):
        counts = np.bincount(codes[idx], weights=w[idx])
        return counts.sum() - counts.max() if idx.size else 0.0

    return brute_force(X, errors, DEPTH)


def absolute_loss_optimum(X, y, w):
    def loss(idx):  # a weighted median is one of the rows' targets
        return min(float((w[idx] * np.abs(y[idx] - c)).sum()) for c in y[idx]) if idx.size else 0.0

    return brute_force(X, loss, DEPTH)


# ---------------------------------------------------------------------- outcomes
def fit_or_refuse(estimator, X, y, w):
    """The fitted estimator, or None after checking that a refusal is clear."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # warnings are allowed; they are not answers
            return estimator.fit(X, y, sample_weight=w)
    except (ValueError, TypeError) as exc:
        assert_clear(exc)
        return None


def assert_clear(exc: BaseException) -> None:
    frames = traceback.extract_tb(exc.__traceback__)
    where = frames[-1].filename if frames else ""
    note(f"refused: {type(exc).__name__}: {exc} (raised in {where})")
    event(f"refused: {type(exc).__name__}")
    assert str(exc).strip(), "a refusal must say why"
    assert not any(part in where for part in INTERNAL), f"internal exception leaked: {exc!r} from {where}"


def positive_rows(y, w):
    return np.ones(len(y), bool) if w is None else w > 0


def power_of_two(values):
    """2**-e putting max |values| in [0.5, 1): an exact rescaling."""
    top = float(np.max(np.abs(values))) if np.size(values) else 0.0
    return 1.0 if top == 0 else float(np.ldexp(1.0, -int(np.frexp(top)[1])))


CLASSIFIERS = {
    "cart": lambda: CARTClassifier(max_depth=DEPTH, random_state=0),
    "cart-hist": lambda: CARTClassifier(max_depth=DEPTH, splitter="hist", random_state=0),
    "flow": lambda: OptimalTreeClassifier(max_depth=DEPTH, time_limit=20),
    "flow-mip": lambda: OptimalTreeClassifier(max_depth=DEPTH, time_limit=20, acceleration="none"),
    "oct-mip": lambda: OptimalTreeClassifier(max_depth=DEPTH, formulation="oct", time_limit=20,
                                             acceleration="none"),
    "oct-h": lambda: OptimalTreeClassifier(max_depth=1, formulation="oct-h", time_limit=20),
    "dp": lambda: OptimalTreeClassifier(max_depth=DEPTH, solver="dp"),
}

REGRESSORS = {
    "cart": lambda: CARTRegressor(max_depth=DEPTH, random_state=0),
    "cart-absolute": lambda: CARTRegressor(max_depth=DEPTH, criterion="absolute_error", random_state=0),
    "cart-linear": lambda: CARTRegressor(max_depth=DEPTH, leaf_model="linear", random_state=0),
    "ort": lambda: OptimalTreeRegressor(max_depth=DEPTH, loss="absolute", time_limit=20),
    "ort-squared": lambda: OptimalTreeRegressor(max_depth=DEPTH, time_limit=20),
    "ort-l": lambda: OptimalTreeRegressor(max_depth=1, leaf_model="linear", time_limit=20),
}


@pytest.mark.parametrize("name", list(CLASSIFIERS))
@given(data=classification_sets(extreme=True))
def test_classifiers_fit_or_refuse_clearly(name, data):
    X, y, w = data
    clf = fit_or_refuse(CLASSIFIERS[name](), X, y, w)
    if clf is None:
        return
    keep = positive_rows(y, w)
    pred = clf.predict(X)
    assert set(pred.tolist()) <= set(y[keep].tolist())
    proba = clf.predict_proba(X)
    assert np.isfinite(proba).all() and np.allclose(proba.sum(axis=1), 1.0)
    if name.startswith("cart") or name == "oct-h":
        return
    codes = np.unique(y, return_inverse=True)[1].ravel()
    wk = np.ones(len(y)) if w is None else w * power_of_two(w)  # exact rescaling: no overflow
    errors = float(wk[pred != y].sum())
    cart = fit_or_refuse(CARTClassifier(max_depth=DEPTH, random_state=0), X, y, w)
    if cart is not None:  # never worse than greedy on the training data
        assert errors <= float(wk[cart.predict(X) != y].sum()) * (1 + 1e-12) + 1e-12
    if clf.result_.proven_optimal:
        event("proven: checked against brute force")
        truth = classification_optimum(X, codes, wk)
        assert errors == pytest.approx(truth, rel=1e-9, abs=1e-12 * wk.sum())


@pytest.mark.parametrize("name", list(REGRESSORS))
@given(data=regression_sets(extreme=True))
def test_regressors_fit_or_refuse_clearly(name, data):
    X, y, w = data
    reg = fit_or_refuse(REGRESSORS[name](), X, y, w)
    if reg is None:
        return
    keep = positive_rows(y, w)
    pred = reg.predict(X)
    assert np.isfinite(pred).all()
    if "linear" not in name and name != "ort-l":  # constant leaves predict inside the targets' range
        lo, hi = y[keep].min(), y[keep].max()
        slack = 1e-9 * max(abs(lo), abs(hi))
        assert ((pred >= lo - slack) & (pred <= hi + slack)).all()
    if name == "ort" and reg.result_.proven_optimal:
        event("proven: checked against brute force")
        s = power_of_two(y)
        ws = np.ones(len(y)) if w is None else w * power_of_two(w)
        loss = float((ws * np.abs(y * s - pred * s)).sum())
        truth = absolute_loss_optimum(X, y * s, ws)
        baseline = absolute_loss_optimum(X[:, :0], y * s, ws)  # no split possible: best constant
        assert loss == pytest.approx(truth, rel=1e-6, abs=1e-6 * baseline)


@pytest.mark.parametrize("name", list(CLASSIFIERS) + [f"regressor {r}" for r in REGRESSORS])
@given(data=classification_sets(), column=st.sampled_from(["object", "string", "numbers as objects"]),
       where=st.integers(0, 3))
def test_text_columns_fit_or_refuse_clearly(name, data, column, where):
    """A DataFrame with a text column (or numbers stored as objects) at any position."""
    import pandas as pd

    X, y, w = data
    df = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    n = len(df)
    values = [f"v{v}" for v in range(n)] if column != "numbers as objects" else list(range(n))
    df.insert(min(where, df.shape[1]), "label text", pd.Series(values, dtype=object if column != "string" else "string"))
    if name.startswith("regressor"):
        est, y = REGRESSORS[name.split()[1]](), np.arange(n, dtype=float)
    else:
        est = CLASSIFIERS[name]()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(df, y, sample_weight=w)
    except (ValueError, TypeError) as exc:
        assert_clear(exc)
        if column != "numbers as objects":  # named, with the fix
            assert "'label text'" in str(exc) and "astype('category')" in str(exc)
        return
    assert column == "numbers as objects"  # text never fits silently
    assert len(est.predict(df)) == n


@given(data=classification_sets())
def test_exact_engine_solves_or_refuses_clearly(data):
    X, y, w = data
    try:
        res = exact_solve(X, y, w, max_depth=DEPTH)
    except (ValueError, TypeError) as exc:
        assert_clear(exc)
        return
    assert res.status == "optimal"
    event("proven: checked against brute force")
    codes = np.unique(y, return_inverse=True)[1].ravel()
    wk = np.ones(len(y)) if w is None else w * power_of_two(w)
    truth = classification_optimum(X, codes, wk)
    scale = 1.0 if w is None else power_of_two(w)
    assert res.objective * scale == pytest.approx(truth, rel=1e-9, abs=1e-12 * wk.sum())


# ---------------------------------------------------------------------- the truth itself
@pytest.mark.parametrize("seed", range(6))
def test_this_brute_force_agrees_with_the_other_two(seed):
    """The rank-split brute force above equals the suite's vectorised one (classification)
    and the recursive median one (absolute loss), written independently."""
    from support.bruteforce import brute_force_errors, random_dataset
    from support.bruteforce import best_regression_loss

    X, y = random_dataset(seed)
    assert classification_optimum(X, y, np.ones(len(y))) == brute_force_errors(X, y, DEPTH)
    targets = np.random.default_rng(seed).normal(size=len(y))
    assert absolute_loss_optimum(X, targets, np.ones(len(y))) == pytest.approx(
        best_regression_loss(X, targets, np.arange(len(y)), DEPTH))
