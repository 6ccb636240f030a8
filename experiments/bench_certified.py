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

    python -m experiments.bench_certified                      # all sets, depths 2 3, 60 s
    python -m experiments.bench_certified --depths 2 3 4 --time-limit 600
    python -m experiments.bench_certified --constraint forbid --depths 2 3 --time-limit 60
    python -m experiments.bench_certified --constraint max_features --depths 2 3 --time-limit 60
    python -m experiments.bench_certified --quick
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from .bench_exact import QUICK, SETS, load, run_contree, warm_up
from .report import markdown_table

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

    columns = np.flatnonzero(FlowOCTFormulation(X, y, depth=depth).threshold_feature == feature)

    def constraint(m):
        m.forbidden = pyo.Constraint(expr=sum(m.b[n, int(f)] for n in range(2**depth - 1) for f in columns) == 0)

    return constraint


def _split_indicators(X, y, depth):
    """``{feature: (first binarized column, ...)}``: FlowOCT's ``b_cum[n, first]`` is 1 iff node ``n`` splits on it."""
    from optitree.formulations import FlowOCTFormulation

    feature = FlowOCTFormulation(X, y, depth=depth).threshold_feature
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--depths", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--constraint", default="none",
                        choices=("none", "forbid", "min_leaf", "forbid_pyomo", "max_features", "max_features_pyomo",
                                 "class_quota"))
    parser.add_argument("--acceleration", default="all", help="the estimator's acceleration (default: all)")
    parser.add_argument("--sets", nargs="+", help="data sets to run (default: all, or the quick ones)")
    parser.add_argument("--reference-limit", type=float, default=REFERENCE_LIMIT,
                        help="seconds for the reference optimum (ConTree; the engine under a constraint)")
    args = parser.parse_args(argv)
    names = args.sets or (list(QUICK) if args.quick else [*SETS, *GENERATED])
    warm_up()
    rows = []
    for depth in args.depths:
        for name in names:
            row = run(name, depth, args.time_limit, args.constraint, args.acceleration, args.reference_limit)
            if row is not None:
                rows.append(row)
                print({k: v for k, v in row.items() if not k.startswith("_")}, flush=True)
    shown = [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]
    if shown:
        print(markdown_table(list(shown[0]), [list(r.values()) for r in shown]))
    for depth in args.depths:
        sel = [r for r in rows if r["depth"] == depth]
        if sel:
            proven = sum(r["_proven"] for r in sel)
            print(f"depth {depth}: {proven}/{len(sel)} proven, median fit {np.median([r['_fit'] for r in sel]):.2f} s, "
                  f"median ratio to ConTree {np.median([r['_ratio'] for r in sel]):.1f}x, "
                  f"max fit {max(r['_fit'] for r in sel):.1f} s")


if __name__ == "__main__":
    main()
