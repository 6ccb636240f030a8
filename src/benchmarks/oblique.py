"""Benchmark of the improvement heuristics (``optitree.heuristics``) against CART and the exact engine.

**Oblique (OCT-H starts)**, per data set and depth 2–3: CART's training errors, the axis-aligned
optimum (``optitree.exact.solve``) and its time, then ``improve_oblique`` started from that
optimum (it also starts from CART): its training errors, the number of oblique splits, its time,
and whether OCT-H takes the tree as it is (``prepare_start`` moves no threshold and the start
vector satisfies every row of the model).

**Linear leaves (ORT-L starts)**, depth 2, minimum leaf 40, squared error (SSE/SST on the
training data): greedy linear-leaf CART (``CARTRegressor(leaf_model="linear")``) and the largest
L1 norm of its leaves in ORT-L's units (``Σ_j |coef_j| range(x_j) / range(y)``; ORT-L's budget
``coef_budget`` defaults to 2), the constant-leaf optimum of the engine, that tree's leaves refitted
by least squares (unbounded, as ``greedy.fit_linear_leaves``) and within the budget 2, then
``improve_linear_leaves`` from the constant-leaf optimum with ``coef_budget=2`` and with an
unbounded budget (``1e6``), and their times.

**Fits end to end** (``--part estimator``, ``--part linear-estimator``): ``OptimalTreeClassifier(
formulation="oct-h")`` at depths 2–3 against the axis-aligned optimum (training errors, proof, bound), and
``OptimalTreeRegressor(leaf_model="linear")`` at depth 2, minimum leaf 40, against greedy linear-leaf CART
grown with ``criterion="linear_squared_error"`` and the constant-leaf optimum refitted with least-squares
leaves (SSE/SST, proof, bound, gap), each fit under ``--mip-time-limit`` (default 120 s), and STreeD's
linear-leaf optimum over 20 quantile thresholds per feature (``_peers.run_streed_linear``) under the same limit. ORT-L's
``coef_budget`` is the estimator's default ``"auto"`` (greedy linear-leaf CART's largest leaf L1 norm
rounded up to a tenth, at least 2, so that greedy's tree is in ORT-L's model) or ``--coef-budget C``.

One thread (BLAS limited to one); each heuristic gets ``--time-limit`` seconds (default 10,
a twelfth of the issue's 120 s MIP budget).

Usage::

    python -m benchmarks.oblique                 # everything
    python -m benchmarks.oblique --quick         # depth 2 only, no digits, 3 s per heuristic
    python -m benchmarks.oblique --part linear   # the linear-leaf table only
    python -m benchmarks.oblique --part estimator --mip-time-limit 120   # OCT-H fits end to end
    python -m benchmarks.oblique --part linear-estimator [--coef-budget 2]   # ORT-L fits end to end
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from greedy import OBLIQUE, CARTClassifier, CARTRegressor, fit_linear_leaves
from optitree import datasets
from optitree.exact import solve
from optitree.heuristics import greedy_coef_budget, improve_linear_leaves, improve_oblique, linear_leaf_objective

from ._peers import run_streed_linear

CLASSIFICATION = ("iris", "wine", "breast_cancer", "digits600", "generated1000x4", "xor30", "xor30_noise10")
REGRESSION = ("diabetes", "friedman1", "concrete", "airfoil", "friedman2", "friedman3")


def rotated_xor(n=400, angle=30.0, noise=0.0, seed=0):
    """``n`` × 2 uniform points; XOR of the two axes rotated by ``angle`` degrees about the centre."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(0, 1, (n, 2))
    t = np.deg2rad(angle)
    U = (X - 0.5) @ np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]]).T
    y = ((U[:, 0] > 0) ^ (U[:, 1] > 0)).astype(int)
    return X, np.where(rng.rand(n) < noise, 1 - y, y)


def load_classification(name):
    if name == "digits600":
        X, y, _ = datasets.load("digits")
        X, y = X[:600], y[:600]
    elif name == "generated1000x4":
        from sklearn.datasets import make_classification

        X, y = make_classification(n_samples=1000, n_features=4, n_informative=4, n_redundant=0, n_classes=2,
                                   random_state=0)
    elif name.startswith("xor30"):
        X, y = rotated_xor(noise=0.1 if name.endswith("noise10") else 0.0)
    else:
        X, y, _ = datasets.load(name)
    return np.asarray(X, np.float64), np.unique(y, return_inverse=True)[1]


def octh_takes(tree, X, y, depth) -> str:
    """"yes" when OCT-H encodes ``tree`` unchanged as a feasible start, else why not."""
    from optitree.formulations import InfeasibleStartError
    from optitree.formulations.octh import OCTHFormulation
    from optitree.model import solution_violation

    form = OCTHFormulation.of(X, y, depth=depth)
    form.build()
    start, note = form.prepare_start(tree, prune=False)
    if "moved" in note:
        return "moved"
    try:
        why = solution_violation(form.spec, form.start_vector(start))
    except InfeasibleStartError:
        return "infeasible"
    return "yes" if why is None else "violates"


def oblique_rows(names, depths, time_limit):
    rows = []
    for name in names:
        X, y = load_classification(name)
        for depth in depths:
            cart = CARTClassifier(max_depth=depth, random_state=0).fit(X, y)
            cart_err = int((cart.predict(X) != y).sum())
            t0 = time.perf_counter()
            axis = solve(X, y, max_depth=depth)
            t_axis = time.perf_counter() - t0
            t0 = time.perf_counter()
            tree = improve_oblique(axis.tree, X, y, max_depth=depth, time_limit=time_limit, random_state=0)
            t_heur = time.perf_counter() - t0
            err = int((tree.predict(X).argmax(axis=1) != y).sum())
            inner = tree.children_left != -1
            rows.append([f"{name} ({X.shape[0]}×{X.shape[1]})", depth, cart_err, f"{axis.objective:.0f}",
                         f"{t_axis:.2f}", err, int((tree.feature[inner] == OBLIQUE).sum()), f"{t_heur:.1f}",
                         octh_takes(tree, X, y, depth)])
            print("  " + " | ".join(str(c) for c in rows[-1]), flush=True)
    return rows


def linear_rows(names, time_limit, depth=2, min_leaf=40, budget=2.0):
    rows = []
    for name in names:
        X, y, _ = datasets.load(name)
        X, y = np.asarray(X, np.float64), np.asarray(y, np.float64)
        obj = lambda tree: linear_leaf_objective(tree, X, y)  # noqa: E731
        greedy_tree = CARTRegressor(max_depth=depth, min_samples_leaf=min_leaf, leaf_model="linear").fit(X, y).tree_
        l1 = (np.abs(greedy_tree.leaf_coef[greedy_tree.is_leaf]) @ np.ptp(X, axis=0)).max() / np.ptp(y)
        const = solve(X, y, max_depth=depth, loss="squared", min_samples_leaf=min_leaf).tree
        ls_refit = fit_linear_leaves(const, X, y)
        # time_limit=0: the start's own splits, leaves fitted within the budget, no search
        budget_refit = improve_linear_leaves(const, X, y, min_samples_leaf=min_leaf, coef_budget=budget,
                                             time_limit=0, max_depth=depth)
        out = []
        for b in (budget, 1e6):
            t0 = time.perf_counter()
            tree = improve_linear_leaves(const, X, y, min_samples_leaf=min_leaf, coef_budget=b,
                                         time_limit=time_limit, max_depth=depth)
            out += [f"{obj(tree):.4f}", f"{time.perf_counter() - t0:.1f}"]
        rows.append([f"{name} ({X.shape[0]}×{X.shape[1]})", f"{obj(greedy_tree):.4f}", f"{l1:.1f}",
                     f"{obj(const):.4f}", f"{obj(ls_refit):.4f}", f"{obj(budget_refit):.4f}", *out])
        print("  " + " | ".join(str(c) for c in rows[-1]), flush=True)
    return rows


def estimator_rows(names, depths, time_limit):
    """OCT-H through the estimator (engine start, heuristic, MIP) against the axis-aligned optimum."""
    from optitree import OptimalTreeClassifier

    rows = []
    for name in names:
        X, y = load_classification(name)
        for depth in depths:
            axis = solve(X, y, max_depth=depth)
            t0 = time.perf_counter()
            clf = OptimalTreeClassifier(max_depth=depth, formulation="oct-h", time_limit=time_limit).fit(X, y)
            elapsed = time.perf_counter() - t0
            r = clf.result_
            rows.append([f"{name} ({X.shape[0]}×{X.shape[1]})", depth, f"{axis.objective:.0f}",
                         int((clf.predict(X) != y).sum()), str(r.proven_optimal), r.start_source,
                         "-" if r.bound is None else f"{r.bound:.1f}", f"{elapsed:.1f}"])
            print("  " + " | ".join(str(c) for c in rows[-1]), flush=True)
    return rows


def linear_estimator_rows(names, time_limit, budget="auto", depth=2, min_leaf=40):
    """ORT-L through the estimator (engine start, heuristic, MIP) against greedy linear-leaf CART and the
    constant-leaf optimum refitted with least-squares leaves (unbounded, and within ORT-L's budget).

    ``budget`` is ORT-L's ``coef_budget``: a number, or ``"auto"`` (the estimator's default,
    :func:`optitree.heuristics.greedy_coef_budget`: greedy linear-leaf CART's largest leaf L1 norm in
    ORT-L's units, rounded up to a tenth, at least 2, so that greedy's tree is in the model).
    """
    from optitree import OptimalTreeRegressor

    rows = []
    for name in names:
        X, y, _ = datasets.load(name)
        X, y = np.asarray(X, np.float64), np.asarray(y, np.float64)
        obj = lambda tree: linear_leaf_objective(tree, X, y)  # noqa: E731
        greedy_tree = CARTRegressor(max_depth=depth, min_samples_leaf=min_leaf, leaf_model="linear",
                                    criterion="linear_squared_error").fit(X, y).tree_
        l1 = (np.abs(greedy_tree.leaf_coef[greedy_tree.is_leaf]) @ np.ptp(X, axis=0)).max() / np.ptp(y)
        C = (greedy_coef_budget(X, y, depth=depth, min_samples_leaf=min_leaf) if budget == "auto"
             else float(budget))
        const = solve(X, y, max_depth=depth, loss="squared", min_samples_leaf=min_leaf).tree
        budget_refit = improve_linear_leaves(const, X, y, min_samples_leaf=min_leaf, coef_budget=C,
                                             time_limit=0, max_depth=depth)
        peer = run_streed_linear(X, y, depth, time_limit, min_samples_leaf=min_leaf)
        peer_text = f"{peer['sse'] / float(((y - y.mean()) ** 2).sum()):.5f}" + (
            "" if peer["status"] == "optimal" else " (stopped)") + f", {peer['seconds']:.1f} s"
        t0 = time.perf_counter()
        reg = OptimalTreeRegressor(leaf_model="linear", max_depth=depth, min_samples_leaf=min_leaf,
                                   coef_budget=C, time_limit=time_limit).fit(X, y)
        elapsed = time.perf_counter() - t0
        r = reg.result_
        bound = "-" if r.bound is None else f"{r.bound:.4f}"
        gap = "-" if r.gap is None else f"{r.gap:.1%}"
        rows.append([f"{name} ({X.shape[0]}×{X.shape[1]})", f"{obj(greedy_tree):.5f}", f"{l1:.1f}",
                     f"{obj(const):.4f}", f"{obj(fit_linear_leaves(const, X, y)):.4f}", f"{C:g}",
                     f"{obj(budget_refit):.4f}", f"{obj(reg.tree_):.5f}", r.start_source, str(r.proven_optimal), bound, gap, f"{elapsed:.1f}",
                     peer_text])
        print("  " + " | ".join(str(c) for c in rows[-1]), flush=True)
    return rows


def table(header, rows) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="depth 2 only, no digits, 3 s per heuristic")
    parser.add_argument("--part", choices=("oblique", "linear", "both", "estimator", "linear-estimator"), default="both",
                        help="estimator: OCT-H fits (engine start, heuristic, MIP) with --mip-time-limit; "
                             "linear-estimator: ORT-L fits the same way")
    parser.add_argument("--mip-time-limit", type=float, default=120.0, help="seconds per OCT-H or ORT-L fit (default 120)")
    parser.add_argument("--coef-budget", default="auto",
                        help="linear-estimator: ORT-L's coef_budget, or 'auto' (the default: greedy linear-leaf "
                             "CART's largest leaf L1 norm, rounded up, at least 2)")
    parser.add_argument("--time-limit", type=float, default=None, help="seconds per heuristic run (default 10)")
    args = parser.parse_args(argv)
    time_limit = args.time_limit if args.time_limit is not None else (3.0 if args.quick else 10.0)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        if args.part in ("oblique", "both"):
            names = [n for n in CLASSIFICATION if not (args.quick and n == "digits600")]
            rows = oblique_rows(names, (2,) if args.quick else (2, 3), time_limit)
            print("\nOblique: training errors (heuristic from the axis-aligned optimum, "
                  f"{time_limit:g} s limit)\n")
            print(table(["data", "depth", "CART", "axis-aligned optimum", "engine s", "heuristic", "oblique splits",
                         "heuristic s", "OCT-H takes it"], rows))
        if args.part == "estimator":
            names = [n for n in CLASSIFICATION if not (args.quick and n == "digits600")]
            rows = estimator_rows(names, (2,) if args.quick else (2, 3), args.mip_time_limit)
            print(f"\nOCT-H fits ({args.mip_time_limit:g} s limit, one thread): training errors\n")
            print(table(["data", "depth", "axis-aligned optimum", "OCT-H", "proven", "start", "bound (errors)", "s"],
                        rows))
        if args.part == "linear-estimator":
            rows = linear_estimator_rows(REGRESSION[:3] if args.quick else REGRESSION, args.mip_time_limit,
                                         args.coef_budget)
            print(f"\nORT-L fits, depth 2, min leaf 40, coef_budget {args.coef_budget} ({args.mip_time_limit:g} s "
                  "limit, one thread): SSE/SST on the training data\n")
            print(table(["data", "greedy linear CART", "its max L1", "constant optimum", "+ LS leaves", "C",
                         "+ leaves within C", "ORT-L", "start", "proven", "bound", "gap", "s",
                         "STreeD linear leaves (20 thresholds)"], rows))
        if args.part in ("linear", "both"):
            rows = linear_rows(REGRESSION[:3] if args.quick else REGRESSION, time_limit)
            print(f"\nLinear leaves, depth 2, min leaf 40: SSE/SST on the training data ({time_limit:g} s limit)\n")
            print(table(["data", "greedy linear CART", "its max L1", "constant optimum", "+ LS leaves",
                         "+ leaves within C=2", "heuristic C=2", "s", "heuristic C=1e6", "s"], rows))


if __name__ == "__main__":
    main()
