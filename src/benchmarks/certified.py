"""How often the default OptimalTreeClassifier *proves* its tree, and how fast, against pycontree.

Per data set × depth, one thread: whether the fit is proven optimal and by what (the exact
engine, the root bounds, or the MIP), its time, gap, training errors against the exact optimum
(pycontree's ConTree on rank-transformed features) and against greedy CART, and the time ratio
fit / ConTree. ``--constraint`` adds a side constraint to every fit, the exact optimum then
being the engine's under the same constraint (checked against brute force in the tests):

* ``forbid``: no split on the most used feature of the unconstrained optimum, as
  ``allowed_features`` (the engine honours it: its proofs and bounds hold);
* ``min_leaf``: ``min_samples_leaf=5`` (honoured by the engine);
* ``forbid_pyomo``: the same forbidden feature as a Pyomo constraint the engine cannot see,
  so only the MIP (with the engine's unconstrained bounds as rows) can prove the answer;
* ``max_features``: at most 2 distinct features in the tree, as ``max_distinct_features=2``
  (the engine honours it by feature subsets: its proofs and bounds hold);
* ``max_features_pyomo``: the same limit as Pyomo rows the engine cannot see
  (:func:`max_features`);
* ``class_quota``: every class predicted by at least one and at most ``max(1, 2**depth // K)``
  leaves (Pyomo, :func:`class_quota`; no lower quota when ``K > 2**depth``).

The engine cannot express the class quota, and no exact optimum is known for it: the table
shows "-" in "optimum" (the proven answers are checked against brute force in the tests).
``--acceleration`` compares stage sets (e.g. ``all`` against ``start+proof+rows+screening``,
the pipeline without the root-split decomposition).

Usage::

    python -m benchmarks.certified                      # all sets, depths 2 3, 60 s
    python -m benchmarks.certified --depths 2 3 4 --time-limit 600
    python -m benchmarks.certified --constraint forbid --depths 2 3 --time-limit 60
    python -m benchmarks.certified --constraint max_features --depths 2 3 --time-limit 60
    python -m benchmarks.certified --quick

Regression (``--task regression``): the default ``OptimalTreeRegressor`` (``--loss squared``,
or ``absolute``) on :data:`REGRESSION_SETS` (diabetes, xor_regression, Friedman 1-3, concrete,
airfoil and variants; 300-5 000 rows). Per data set × depth: proven or not and by what
(``result_.acceleration["certificate"]`` when present, else "MIP" when the MIP proved it),
the fit time, the training loss as a fraction of the constant model's (SSE/SST for squared
error, SAE/SAD around the median for absolute error) of the fit, of greedy CART at the same
depth, and of STreeD (``pystreed``) on every midpoint threshold as a binary feature (the same
split space; :mod:`benchmarks._peers`; squared error only, "-" for absolute), STreeD's time
and the ratio fit / STreeD. Losses are computed here from each model's predictions, never
from a solver's objective. "check" flags a proof above any tree STreeD found, optimal or
not ("FALSE PROOF"), and a fit below STreeD's proven optimum ("BELOW PEER"); both would be
bugs. Rows say where STreeD stopped at ``--reference-limit`` (its SSE is then an upper bound
on the optimum and the ratio an upper bound, "<=") or was not run because the encoding was
too large (:data:`benchmarks._peers.MAX_BINARY_FEATURES`, ``MAX_BINARY_CELLS``). The summary
per depth counts proofs, fits better than CART and at STreeD's optimum, and gives the median
ratio over the rows where STreeD proved its optimum, with the count of the others::

    python -m benchmarks.certified --task regression                   # depths 2 3, 60 s
    python -m benchmarks.certified --task regression --quick --time-limit 5
    python -m benchmarks.certified --task regression --loss absolute --depths 2 3
    python -m benchmarks.certified --task regression --constraint forbid_pyomo --depths 2

``--constraint`` for regression: ``min_leaf`` (``min_samples_leaf=5``), ``forbid`` (no split on
greedy CART's root feature, as ``allowed_features``) or ``forbid_pyomo`` (the same as a Pyomo row
the engine cannot see, :func:`forbid_feature_ort`); STreeD gets the same constraint exactly
(``min_leaf_node_size``; the feature's columns left out), CART only the minimum leaf size.
Two more Pyomo rows the engine cannot see: ``min_leaf_pyomo`` (every used leaf holds at least
:data:`PYOMO_MIN_LEAF` = 20 training rows, :func:`min_leaf_ort`; STreeD and CART get the same
minimum leaf size) and ``monotone`` (leaf 0's prediction at most leaf 3's, ``beta[0] <= beta[3]``
on ORT's leaf values, :func:`monotone_leaves_ort`). STreeD cannot express the monotone row: its
unconstrained optimum is then only a lower bound ("STreeD" shows it with ``>=``; "check" flags a
fit below it, and the FALSE PROOF test is not available).

    python -m benchmarks.certified --task regression --constraint monotone --depths 2 --quick
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from .exact import QUICK, SETS, load, run_contree
from experiments.report import markdown_table

#: Default seconds ConTree (and the engine under a constraint) get for the reference optimum.
REFERENCE_LIMIT = 600

# generated continuous sets (1 000-5 000 rows): a hidden depth-2 rule on 10 uniform features, 10 % label noise
GENERATED = {"continuous_1000": 1000, "continuous_5000": 5000}


def load_any(name):
    if name in GENERATED:
        rng = np.random.RandomState(0)
        X = rng.rand(GENERATED[name], 10)
        y = ((X[:, 0] > 0.4) & (X[:, 1] < 0.7) | (X[:, 2] > 0.8)).astype(int)
        flip = rng.rand(y.size) < 0.1
        y[flip] = 1 - y[flip]
        return np.round(X, 3), y
    return load(name)


def forbid_feature(X, y, depth, feature):
    """A Pyomo constraint: FlowOCT never splits on ``feature``."""
    import pyomo.environ as pyo

    from optitree.formulations import FlowOCTFormulation

    columns = np.flatnonzero(FlowOCTFormulation.of(X, y, depth=depth).threshold_feature == feature)

    def constraint(m):
        m.forbidden = pyo.Constraint(expr=sum(m.b[n, int(f)] for n in range(2**depth - 1) for f in columns) == 0)

    return constraint


def _split_indicators(X, y, depth):
    """``{feature: (first binarized column, ...)}``: FlowOCT's ``b_cum[n, first]`` is 1 iff node ``n`` splits on it."""
    from optitree.formulations import FlowOCTFormulation

    feature = FlowOCTFormulation.of(X, y, depth=depth).threshold_feature
    used, first = np.unique(feature, return_index=True)
    return dict(zip(used.tolist(), first.tolist()))


#: Most rows the max_features constraint may add (it has one row per feature triple and node triple).
MAX_FEATURE_ROWS = 100_000


def max_features(X, y, depth, k=2):
    """A Pyomo constraint: the tree splits on at most ``k`` distinct features; None if too large.

    FlowOCT has no "feature used" variable, so the constraint is written on the split
    indicators ``s[n, f] = b_cum[n, first_f]`` (node ``n`` splits on feature ``f``): for every
    ``k + 1`` features and every assignment of them to distinct branch nodes,
    ``Σ_j s[n_j, f_j] ≤ k`` — exactly "no ``k + 1`` distinct features are used" (two features
    at one node are already excluded by the model). None when the rows would exceed
    :data:`MAX_FEATURE_ROWS`, or when there are at most ``k`` features (nothing to constrain).
    """
    from itertools import combinations, permutations
    from math import comb, perm

    import pyomo.environ as pyo

    first = _split_indicators(X, y, depth)
    n_branch = 2**depth - 1
    if len(first) <= k or n_branch <= k or comb(len(first), k + 1) * perm(n_branch, k + 1) > MAX_FEATURE_ROWS:
        return None
    rows = [tuple(zip(nodes, (first[f] for f in feats)))
            for feats in combinations(sorted(first), k + 1) for nodes in permutations(range(n_branch), k + 1)]

    def constraint(m):
        m.max_features = pyo.Constraint(range(len(rows)),
                                        rule=lambda m, r: sum(m.b_cum[n, q] for n, q in rows[r]) <= k)

    return constraint


def class_quota(X, y, depth):
    """A Pyomo constraint: each class predicted by ``lo`` to ``hi`` leaves (``w[n, k]``, any node that predicts).

    ``hi = max(1, 2**depth // K)``, ``lo = 1`` when ``K <= 2**depth`` (every class gets a
    leaf), else 0.
    """
    import pyomo.environ as pyo

    n_classes, n_nodes = int(y.max()) + 1, 2 ** (depth + 1) - 1
    hi = max(1, 2**depth // n_classes)
    lo = 1 if n_classes <= 2**depth else 0

    def constraint(m):
        m.class_quota = pyo.Constraint(
            range(n_classes), rule=lambda m, k: (lo, sum(m.w[n, k] for n in range(n_nodes)), hi))

    return constraint


def engine_reference(X, y, depth, limit, **constraints):
    """The engine's optimum under ``constraints`` (errors), or ``"<=N (engine unproven)"`` after ``limit`` seconds."""
    from optitree.exact import solve

    result = solve(X, y, max_depth=depth, time_limit=limit, **constraints)
    errors = int(round(result.objective))
    return errors if result.status == "optimal" else f"<={errors} (engine unproven)"


def run(name, depth, time_limit, constraint, acceleration="all", reference_limit=REFERENCE_LIMIT):
    from greedy import CARTClassifier
    from optitree import OptimalTreeClassifier
    from optitree.exact import solve

    X, y = load_any(name)
    t0 = time.perf_counter()
    exact_errors = run_contree(X, y, depth, reference_limit)
    contree_time = time.perf_counter() - t0
    if contree_time >= reference_limit:  # ConTree's best within its limit, not a proven optimum
        exact_errors = f"<={exact_errors} (ConTree unproven)"
    kwargs = {}
    if constraint in ("forbid", "forbid_pyomo"):
        free = solve(X, y, max_depth=depth)
        used = free.tree.feature[~free.tree.is_leaf]
        if used.size == 0:
            return None
        feature = int(np.bincount(used).argmax())
        allowed = np.arange(X.shape[1]) != feature
        if constraint == "forbid":
            kwargs["allowed_features"] = allowed
        else:
            kwargs["constraints"] = forbid_feature(X, y, depth, feature)
        exact_errors = engine_reference(X, y, depth, reference_limit, allowed_features=allowed)
    elif constraint == "min_leaf":
        kwargs["min_samples_leaf"] = 5
        exact_errors = engine_reference(X, y, depth, reference_limit, min_samples_leaf=5)
    elif constraint == "max_features":
        kwargs["max_distinct_features"] = 2
        exact_errors = engine_reference(X, y, depth, reference_limit, max_distinct_features=2)
    elif constraint in ("max_features_pyomo", "class_quota"):
        kwargs["constraints"] = (max_features if constraint == "max_features_pyomo" else class_quota)(X, y, depth)
        if kwargs["constraints"] is None:
            print(f"{name} depth {depth}: {constraint} skipped (nothing to constrain or too many rows)", flush=True)
            return None
        exact_errors = "-" if constraint == "class_quota" else engine_reference(
            X, y, depth, reference_limit, max_distinct_features=2)
    # CART under the same minimum leaf size (the other constraints it cannot honour)
    cart = CARTClassifier(max_depth=depth, min_samples_leaf=kwargs.get("min_samples_leaf", 1), random_state=0).fit(X, y)
    t0 = time.perf_counter()
    try:
        clf = OptimalTreeClassifier(max_depth=depth, time_limit=time_limit, acceleration=acceleration,
                                    **kwargs).fit(X, y)
    except RuntimeError as exc:  # no feasible tree found within the limit
        print(f"{name} depth {depth}: {exc}", flush=True)
        return {"dataset": name, "n×p": f"{X.shape[0]}×{X.shape[1]}", "depth": depth, "proven": "no",
                "by": "no tree", "fit s": f"{time.perf_counter() - t0:.2f}", "gap": "-", "errors": "-",
                "optimum": exact_errors, "CART errors": "-", "ConTree s": f"{contree_time:.3f}", "ratio": "-",
                "_ratio": np.inf, "_proven": False, "_fit": time.perf_counter() - t0}
    fit_time = time.perf_counter() - t0
    r = clf.result_
    acc = r.acceleration or {}
    by = acc.get("certificate") or ("MIP" if r.proven_optimal else "-")
    errors = int((clf.predict(X) != y).sum())
    return {
        "dataset": name, "n×p": f"{X.shape[0]}×{X.shape[1]}", "depth": depth,
        "proven": "yes" if r.proven_optimal else "no", "by": by, "fit s": f"{fit_time:.2f}",
        "gap": "-" if r.gap is None else f"{r.gap:.1%}", "errors": errors, "optimum": exact_errors,
        "CART errors": int((cart.predict(X) != y).sum()), "ConTree s": f"{contree_time:.3f}",
        "ratio": f"{fit_time / max(contree_time, 1e-3):.1f}", "_ratio": fit_time / max(contree_time, 1e-3),
        "_proven": r.proven_optimal, "_fit": fit_time,
    }


# ---------------------------------------------------------------- regression

#: name -> (optitree.datasets name, loader params, rows to subsample or None, decimals to round X to or None)
REGRESSION_SETS = {
    "diabetes": ("diabetes", {}, None, None),
    "xor_regression": ("xor_regression", {}, None, None),
    "xor_regression_5000": ("xor_regression", {"n": 5000, "noise": 0.5, "seed": 1}, None, 2),
    "friedman1": ("friedman1", {}, None, None),
    "friedman1_300": ("friedman1", {"n": 300, "seed": 1}, None, None),
    "friedman2": ("friedman2", {}, None, None),
    "friedman3": ("friedman3", {}, None, None),
    "concrete": ("concrete", {}, None, None),
    "concrete_300": ("concrete", {}, 300, None),
    "airfoil": ("airfoil", {}, None, None),
    "airfoil_500": ("airfoil", {}, 500, None),
}
QUICK_REGRESSION = ("diabetes", "xor_regression", "concrete_300", "airfoil_500")


def load_regression(name):
    """``(X, y)`` of a :data:`REGRESSION_SETS` entry; subsamples draw rows with ``RandomState(0)``."""
    from optitree import datasets

    dataset, params, rows, decimals = REGRESSION_SETS[name]
    X, y, _ = datasets.load(dataset, **params)
    if rows is not None and rows < X.shape[0]:
        keep = np.sort(np.random.RandomState(0).choice(X.shape[0], rows, replace=False))
        X, y = X[keep], y[keep]
    if decimals is not None:
        X = np.round(X, decimals)
    return np.ascontiguousarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)


def _loss_fraction(loss, y, prediction):
    """Training loss of ``prediction`` over the constant model's: SSE/SST or SAE/SAD (around the median)."""
    from ._peers import sae, sse

    if loss == "squared":
        return sse(y, prediction) / max(sse(y, np.full_like(y, y.mean())), 1e-300)
    return sae(y, prediction) / max(sae(y, np.full_like(y, np.median(y))), 1e-300)


#: Regression constraints: the peer (STreeD) takes each exactly (a minimum leaf size; the forbidden
#: feature's columns left out), so its optimum is the constrained optimum.
REGRESSION_CONSTRAINTS = ("none", "min_leaf", "forbid", "forbid_pyomo", "min_leaf_pyomo", "monotone")
#: Rows every used leaf must hold under ``--constraint min_leaf_pyomo``.
PYOMO_MIN_LEAF = 20


def forbid_feature_ort(depth, feature):
    """A Pyomo constraint on the regressor's ORT model: no branch node splits on ``feature`` (``a[n, f]``)."""
    import pyomo.environ as pyo

    def constraint(m):
        m.forbidden = pyo.Constraint(expr=sum(m.a[n, int(feature)] for n in range(2**depth - 1)) == 0)

    return constraint


def min_leaf_ort(X, y, depth, n_min=PYOMO_MIN_LEAF):
    """A Pyomo constraint on the ORT model: every used leaf holds at least ``n_min`` training rows.

    ORT's ``z[i, t]`` assigns *merged* row ``i`` (identical features and target) to leaf ``t``;
    each counts its multiplicity ``n_i`` (:attr:`~optitree.formulations.TreeFormulation.count`),
    so the rows are ``Σ_i n_i z[i, t] >= n_min · l[t]`` — ``min_samples_leaf`` written in Pyomo.
    """
    import pyomo.environ as pyo

    from optitree.formulations import ORTFormulation

    count = ORTFormulation.of(X, y, depth=depth).count

    def constraint(m):
        m.leaf_size = pyo.Constraint(range(2**depth), rule=lambda m, t: sum(
            float(n) * m.z[i, t] for i, n in enumerate(count)) >= n_min * m.l[t])

    return constraint


def monotone_leaves_ort(first=0, last=None, depth=2):
    """A Pyomo constraint on the ORT model: leaf ``first`` predicts at most what leaf ``last`` does.

    ``beta[t]`` is leaf ``t``'s value (model units, an increasing affine map of the user's);
    ``last`` defaults to the rightmost leaf ``2**depth - 1``. A leaf no row reaches keeps a free
    ``beta`` within the target range, so the row binds only when both leaves hold rows.
    """
    import pyomo.environ as pyo

    last = 2**depth - 1 if last is None else last

    def constraint(m):
        m.monotone = pyo.Constraint(expr=m.beta[first] <= m.beta[last])

    return constraint


def run_regression(name, depth, time_limit, loss="squared", reference_limit=REFERENCE_LIMIT, acceleration=None,
                   constraint="none"):
    """One row of the regression table (see the module docstring).

    ``constraint``: ``"min_leaf"`` (``min_samples_leaf=5`` for the fit, CART and STreeD),
    ``"forbid"`` (no split on greedy CART's root feature, as ``allowed_features``) or
    ``"forbid_pyomo"`` (the same as a Pyomo row on the ORT model, :func:`forbid_feature_ort`),
    ``"min_leaf_pyomo"`` (:func:`min_leaf_ort`, :data:`PYOMO_MIN_LEAF` rows) or ``"monotone"``
    (:func:`monotone_leaves_ort`; STreeD's unconstrained optimum is then a lower bound only).
    """
    from greedy import CARTRegressor
    from optitree import OptimalTreeRegressor

    from ._peers import run_streed

    X, y = load_regression(name)
    row = {"dataset": name, "n×p": f"{X.shape[0]}×{X.shape[1]}", "depth": depth}
    criterion = "squared_error" if loss == "squared" else "absolute_error"
    min_leaf = {"min_leaf": 5, "min_leaf_pyomo": PYOMO_MIN_LEAF}.get(constraint, 1)
    peer_is_bound = constraint == "monotone"  # STreeD cannot express the row: its optimum bounds ours
    kwargs = {} if acceleration is None else {"acceleration": acceleration}
    peer_X = X
    if constraint == "min_leaf":
        kwargs["min_samples_leaf"] = min_leaf
    elif constraint in ("forbid", "forbid_pyomo"):
        root = CARTRegressor(max_depth=1, criterion=criterion, random_state=0).fit(X, y).tree_
        if root.is_leaf[0]:
            return None
        feature = int(root.feature[0])
        row["dataset"] = f"{name} (no x{feature})"
        peer_X = np.delete(X, feature, axis=1)
        if constraint == "forbid":
            kwargs["allowed_features"] = np.arange(X.shape[1]) != feature
        else:
            kwargs["constraints"] = forbid_feature_ort(depth, feature)
    elif constraint == "min_leaf_pyomo":
        kwargs["constraints"] = min_leaf_ort(X, y, depth)
    elif constraint == "monotone":
        kwargs["constraints"] = monotone_leaves_ort(depth=depth)
    # the exact peer first (squared error only: STreeD has no absolute-error regression task)
    peer, peer_time, peer_optimal = None, None, False
    if loss == "squared":
        ref = run_streed(peer_X, y, depth, time_limit=reference_limit, min_samples_leaf=min_leaf)
        peer_time = ref["seconds"]
        if ref["sse"] is not None:
            peer = ref["sse"] / max(float(((y - y.mean()) ** 2).sum()), 1e-300)
        peer_optimal = ref["status"] == "optimal"
        if ref["status"] == "optimal":
            peer_text = f">={peer:.4f} (unconstrained)" if peer_is_bound else f"{peer:.4f}"
        elif ref["status"] == "time limit":
            peer_text = f"<={peer:.4f} (STreeD stopped at {reference_limit:g} s)"
        elif ref["status"] == "too many binary features":
            peer_text = f"not run: {ref['n_binary']} binary features × {X.shape[0]} rows too large"
        else:
            peer_text = "STreeD: no tree"
    else:
        peer_text = "-"
    # CART under the same minimum leaf size (a forbidden feature it cannot honour: unconstrained)
    cart = CARTRegressor(max_depth=depth, criterion=criterion, min_samples_leaf=min_leaf, random_state=0).fit(X, y)
    cart_loss = _loss_fraction(loss, y, cart.predict(X))
    t0 = time.perf_counter()
    try:
        reg = OptimalTreeRegressor(max_depth=depth, loss=loss, time_limit=time_limit, **kwargs).fit(X, y)
        error = None
    except Exception as exc:  # noqa: BLE001 - a benchmark row says what went wrong and goes on
        reg, error = None, f"{type(exc).__name__}: {exc}"
    fit_time = time.perf_counter() - t0
    if reg is None:
        print(f"{name} depth {depth}: {error}", flush=True)
        proven, by, gap, ours = False, f"error ({error[:60]})", "-", None
    else:
        r = reg.result_
        acc = getattr(r, "acceleration", None) or {}
        proven = bool(r.proven_optimal)
        by = acc.get("certificate") or ("MIP" if proven else "-")
        gap = "-" if r.gap is None else f"{r.gap:.1%}"
        ours = _loss_fraction(loss, y, reg.predict(X))
    check = ""
    if ours is not None and peer is not None:
        tol = 1e-7 * max(peer, 1e-12) + 1e-12
        if peer_is_bound:  # the unconstrained optimum: only a fit below it would be wrong
            check = "BELOW PEER" if peer_optimal and ours < peer - tol else f"{ours - peer:+.4f} vs unconstrained"
        elif proven and ours > peer + tol:  # STreeD holds a better tree (proven optimal or not)
            check = "FALSE PROOF"
        elif not peer_optimal:  # STreeD's tree is only an upper bound on the optimum
            check = "= STreeD's best" if abs(ours - peer) <= tol else f"{ours - peer:+.4f} vs STreeD's best"
        elif ours < peer - tol:
            check = "BELOW PEER"
        else:
            check = "= optimum" if abs(ours - peer) <= tol else f"+{ours - peer:.4f}"
    ratio = None
    if peer_time is not None and peer_time > 0:
        ratio = fit_time / max(peer_time, 1e-3)
    row.update({
        "proven": "yes" if proven else "no", "by": by, "fit s": f"{fit_time:.2f}", "gap": gap,
        ("SSE/SST" if loss == "squared" else "SAE/SAD"): "-" if ours is None else f"{ours:.4f}",
        "CART": f"{cart_loss:.4f}", "STreeD": peer_text,
        "STreeD s": "-" if peer_time is None else f"{peer_time:.3f}",
        "ratio": "-" if ratio is None else (f"{ratio:.3g}" if peer_optimal else f"<={ratio:.3g}"),
        "check": check,
        "_proven": proven, "_fit": fit_time, "_ratio": ratio if peer_optimal else None,
        "_peer_unfinished": loss == "squared" and not peer_optimal, "_better_than_cart":
            ours is not None and ours < cart_loss - 1e-12, "_at_optimum": check == "= optimum",
        "_bug": check in ("BELOW PEER", "FALSE PROOF"),
    })
    return row


def run_grid(depths, names, run_one) -> list:
    """``run_one(name, depth)`` over the grid (None: no row), each row printed as it comes, then the table.

    Keys starting with ``_`` are kept for the summary lines and not shown.
    """
    rows = []
    for depth in depths:
        for name in names:
            row = run_one(name, depth)
            if row is not None:
                rows.append(row)
                print(_shown(row), flush=True)
    if rows:
        print(markdown_table(list(_shown(rows[0])), [list(_shown(r).values()) for r in rows]))
    return rows


def _shown(row: dict) -> dict:
    return {k: v for k, v in row.items() if not k.startswith("_")}


def main_regression(args):
    names = args.sets or list(QUICK_REGRESSION if args.quick else REGRESSION_SETS)
    unknown = sorted(set(names) - set(REGRESSION_SETS))
    if unknown:
        raise SystemExit(f"unknown regression sets {unknown}; choose from {', '.join(REGRESSION_SETS)}")
    acceleration = None if args.acceleration == "all" else args.acceleration

    def run_one(name, depth):
        row = run_regression(name, depth, args.time_limit, args.loss, args.reference_limit, acceleration,
                             args.constraint)
        if row is None:
            print(f"{name} depth {depth}: {args.constraint} skipped (CART makes no split)", flush=True)
        return row

    rows = run_grid(args.depths, names, run_one)
    for depth in args.depths:
        sel = [r for r in rows if r["depth"] == depth]
        if not sel:
            continue
        ratios = [r["_ratio"] for r in sel if r["_ratio"] is not None]
        constraint = "" if args.constraint == "none" else f", {args.constraint}"
        line = (f"depth {depth} ({args.loss}{constraint}): {sum(r['_proven'] for r in sel)}/{len(sel)} proven, "
                f"median fit {np.median([r['_fit'] for r in sel]):.3g} s, max fit {max(r['_fit'] for r in sel):.3g} s, "
                f"better than CART on {sum(r['_better_than_cart'] for r in sel)}")
        if args.loss == "squared":
            unfinished = [r for r in sel if r["_peer_unfinished"]]
            at_optimum = ("" if args.constraint == "monotone" else  # STreeD's optimum is unconstrained there
                          f", at the STreeD optimum on {sum(r['_at_optimum'] for r in sel)}/{len(sel) - len(unfinished)}")
            line += (at_optimum + ", median ratio to STreeD "
                     + (f"{np.median(ratios):.2f}x over {len(ratios)}" if ratios else "- (no STreeD proof)")
                     + f", STreeD unfinished or not run on {len(unfinished)}"
                     + (f" (ours proven on {sum(r['_proven'] for r in unfinished)})" if unfinished else ""))
        bugs = sum(r["_bug"] for r in sel)
        if bugs:
            line += f", {bugs} CHECK FAILURES (see 'check')"
        print(line)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--depths", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--constraint", default="none",
                        choices=("none", "forbid", "min_leaf", "forbid_pyomo", "max_features", "max_features_pyomo",
                                 "class_quota", "min_leaf_pyomo", "monotone"))
    parser.add_argument("--acceleration", default="all", help="the estimator's acceleration (default: all)")
    parser.add_argument("--sets", nargs="+", help="data sets to run (default: all, or the quick ones)")
    parser.add_argument("--reference-limit", type=float, default=REFERENCE_LIMIT,
                        help="seconds for the reference optimum (ConTree; the engine under a constraint; "
                        "STreeD for regression)")
    parser.add_argument("--task", default="classification", choices=("classification", "regression"))
    parser.add_argument("--loss", default="squared", choices=("squared", "absolute"),
                        help="regression loss (--task regression only; STreeD is compared for squared only)")
    args = parser.parse_args(argv)
    if args.task == "regression":
        if args.constraint not in REGRESSION_CONSTRAINTS:
            parser.error(f"--task regression takes --constraint {', '.join(REGRESSION_CONSTRAINTS)}")
        return main_regression(args)
    names = args.sets or (list(QUICK) if args.quick else [*SETS, *GENERATED])
    rows = run_grid(args.depths, names, lambda name, depth: run(name, depth, args.time_limit, args.constraint,
                                                                 args.acceleration, args.reference_limit))
    for depth in args.depths:
        sel = [r for r in rows if r["depth"] == depth]
        if sel:
            proven = sum(r["_proven"] for r in sel)
            print(f"depth {depth}: {proven}/{len(sel)} proven, median fit {np.median([r['_fit'] for r in sel]):.2f} s, "
                  f"median ratio to ConTree {np.median([r['_ratio'] for r in sel]):.1f}x, "
                  f"max fit {max(r['_fit'] for r in sel):.1f} s")


if __name__ == "__main__":
    main()
