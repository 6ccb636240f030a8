"""Benchmark of the OCT and FlowOCT formulations: build cost, memory, and solving vs an exact DP solver.

Three parts, printed as tables:

1. **build** — time to build each formulation's ModelSpec and hand it to HiGHS
   (``to_highs``) at several N, depth 3, 10 continuous features, 3 classes. FlowOCT with
   every midpoint has ~10·N thresholds; when its estimated size exceeds ``--flow-budget``
   only the estimate is reported and the model is built with ``--max-thresholds``.
2. **memory** — peak resident memory of building + handing the depth-3 OCT model at the
   largest N, measured in a fresh subprocess (``ru_maxrss`` growth over the imports, and
   the tracemalloc peak of Python/numpy allocations).
3. **solve** — OptimalTreeClassifier at depths 2 and 3 on XOR, iris, wine and generated
   sets, cold vs CART start, with a time limit: status, training errors, gap, time, nodes;
   pycontree's ConTree (exact) on the same instance, its errors, time, and the ratio of
   the MIP's time to proven optimality over ConTree's.

Usage::

    python -m benchmarks.mip            # full run (long: ~1 h with 60 s limits)
    python -m benchmarks.mip --quick    # small sizes, 10 s limits, XOR and iris at depth 2
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import warnings

import numpy as np

from optitree import OptimalTreeClassifier
from optitree.model._memory import estimate_bytes
from optitree.formulations import FlowOCTFormulation, OCTFormulation


def build_data(n, n_features=10, n_classes=3, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.rand(n, n_features)
    y = ((X[:, 0] + X[:, 1] ** 2 + 0.3 * rng.randn(n)) * n_classes / 2).astype(int).clip(0, n_classes - 1)
    return X, y


def time_build(form):
    t0 = time.perf_counter()
    spec = form.build()
    t1 = time.perf_counter()
    spec.to_highs()
    t2 = time.perf_counter()
    return spec, t1 - t0, t2 - t1


def bench_build(sizes, depth, max_thresholds, flow_budget):
    rows = []
    for n in sizes:
        X, y = build_data(n)
        for label, make in [
            ("oct", lambda: OCTFormulation.of(X, y, depth=depth)),
            ("flow (all midpoints)", lambda: FlowOCTFormulation.of(X, y, depth=depth)),
            (f"flow (max_thresholds={max_thresholds})",
             lambda: FlowOCTFormulation.of(X, y, depth=depth, max_thresholds=max_thresholds)),
        ]:
            t0 = time.perf_counter()
            with warnings.catch_warnings():  # OCT's near-tie warning: expected on 20 000 random values
                warnings.simplefilter("ignore")
                form = make()
            prep = time.perf_counter() - t0
            r, c, nz = form.estimate_size()
            need = estimate_bytes(r, c, nz)
            row = dict(n=n, model=label, rows=r, cols=c, nnz=int(nz), est_gb=need / 2**30, prep_s=prep,
                       build_s=None, to_highs_s=None)
            if need <= flow_budget:
                _, tb, th = time_build(form)
                row.update(build_s=tb, to_highs_s=th)
            rows.append(row)
            print(_fmt_build(row), flush=True)
    return rows


def _fmt_build(r):
    def s(v):
        return "   (not built)" if v is None else f"{v:14.3f}"

    return (f"{r['n']:>7} {r['model']:<28} {r['rows']:>11,} {r['cols']:>11,} {r['nnz']:>12,} "
            f"{r['est_gb']:>7.2f} {r['prep_s']:>7.3f} {s(r['build_s'])} {s(r['to_highs_s'])}")


_MEMORY_CHILD = r"""
import sys, time, tracemalloc, json, warnings
import numpy as np
from optitree.formulations import OCTFormulation
from benchmarks.mip import build_data


def status_mb(key):  # VmRSS / VmHWM of this process image (ru_maxrss survives exec on Linux)
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith(key + ":")) / 1024


n, depth = int(sys.argv[1]), int(sys.argv[2])
X, y = build_data(n)
with open("/proc/self/clear_refs", "w") as fh:  # reset the peak (VmHWM) to the current RSS
    fh.write("5")
base = status_mb("VmRSS")
tracemalloc.start()
t0 = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    form = OCTFormulation.of(X, y, depth=depth)
spec = form.build()
h = spec.to_highs()
elapsed = time.perf_counter() - t0
_, peak = tracemalloc.get_traced_memory()
tracemalloc.stop()
hwm = status_mb("VmHWM")
print(json.dumps(dict(n=n, depth=depth, rss_peak_mb=hwm, rss_growth_mb=hwm - base,
                      tracemalloc_peak_mb=peak / 2**20, seconds=elapsed, rows=spec.n_rows, nnz=spec.nnz)))
"""


def bench_memory(n, depth):
    out = subprocess.run([sys.executable, "-c", _MEMORY_CHILD, str(n), str(depth)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def solve_instances(quick):
    from sklearn.datasets import load_iris, load_wine, make_classification

    rng = np.random.RandomState(0)
    X = rng.rand(200, 2)
    inst = [("xor", X, ((X[:, 0] > 0.5) ^ (X[:, 1] > 0.5)).astype(int))]
    inst.append(("iris",) + load_iris(return_X_y=True))
    if quick:
        return inst
    inst.append(("wine",) + load_wine(return_X_y=True))
    Xg, yg = make_classification(n_samples=150, n_features=4, n_informative=3, n_redundant=0,
                                 n_classes=3, n_clusters_per_class=1, flip_y=0.05, random_state=1)
    inst.append(("gen-150x4", Xg, yg))
    Xg, yg = make_classification(n_samples=300, n_features=5, n_informative=3, n_redundant=1,
                                 n_classes=2, flip_y=0.1, random_state=2)
    inst.append(("gen-300x5", Xg, yg))
    rng = np.random.RandomState(3)
    Xp = rng.randint(0, 2, (64, 4)).astype(float)
    inst.append(("parity3-64x4", Xp, (Xp[:, :3].sum(1) % 2).astype(int)))
    return inst


def contree(X, y, depth, time_limit):
    import pycontree

    t0 = time.perf_counter()
    est = pycontree.ConTree(max_depth=depth, time_limit=time_limit).fit(X, y)
    return int((est.predict(X) != y).sum()), time.perf_counter() - t0


def bench_solve(depths, formulations, time_limit, quick):
    rows = []
    for name, X, y in solve_instances(quick):
        _, y = np.unique(y, return_inverse=True)
        for depth in depths:
            try:
                exact, t_exact = contree(X, y, depth, 600)
            except ImportError:
                exact, t_exact = None, None
            for formulation in formulations:
                for init in ("cart", None):
                    clf = OptimalTreeClassifier(max_depth=depth, formulation=formulation, init=init,
                                                time_limit=time_limit, random_state=0)
                    clf.fit(X, y)
                    r = clf.result_
                    errors = int((clf.predict(X) != y).sum())
                    start_errors = None
                    if clf.init_tree_ is not None:
                        start_errors = int((clf.init_tree_.predict(X).argmax(1) != y).sum())
                    ratio = (r.solve_time / t_exact) if (r.proven_optimal and t_exact) else None
                    row = dict(instance=name, n=len(y), f=X.shape[1], k=int(y.max() + 1), depth=depth,
                               formulation=formulation, start="cart" if init else "cold", status=r.status,
                               proven=r.proven_optimal, errors=errors, start_errors=start_errors,
                               gap=r.gap, build_s=r.build_time, solve_s=r.solve_time, nodes=r.nodes,
                               contree_errors=exact, contree_s=t_exact, ratio=ratio)
                    rows.append(row)
                    print(_fmt_solve(row), flush=True)
    return rows


def _fmt_solve(r):
    def f(v, spec):
        return "-" if v is None else format(v, spec)

    return (f"{r['instance']:<13} {r['n']:>4} {r['f']:>3} {r['k']:>2} {r['depth']:>2} {r['formulation']:<5} "
            f"{r['start']:<5} {r['status']:<22} {f(r['start_errors'], 'd'):>6} {r['errors']:>6} "
            f"{f(r['contree_errors'], 'd'):>7} {f(r['gap'], '.1%'):>7} {r['build_s']:>7.2f} {r['solve_s']:>8.2f} "
            f"{r['nodes']:>7} {f(r['contree_s'], '.3f'):>9} {f(r['ratio'], '.0f'):>8}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes, 10 s limits, XOR and iris at depth 2")
    p.add_argument("--sizes", type=int, nargs="+", help="N for the build benchmark (default 1000 5000 20000)")
    p.add_argument("--time-limit", type=float, help="solver time limit per run in s (default 60)")
    p.add_argument("--max-thresholds", type=int, default=32, help="FlowOCT thresholds per feature when capped")
    p.add_argument("--flow-budget-gb", type=float, default=3.0, help="build only models estimated below this")
    p.add_argument("--skip", nargs="*", default=[], choices=["build", "memory", "solve"])
    p.add_argument("--out", help="also write all rows as JSON here")
    a = p.parse_args(argv)
    sizes = a.sizes or ([1000, 5000] if a.quick else [1000, 5000, 20000])
    time_limit = a.time_limit or (10.0 if a.quick else 60.0)
    depths = [2] if a.quick else [2, 3]
    out = {}
    if "build" not in a.skip:
        print("\n## build (depth 3, 10 features, 3 classes)")
        print(f"{'N':>7} {'model':<28} {'rows':>11} {'cols':>11} {'nnz':>12} {'est GB':>7} {'prep s':>7} "
              f"{'build s':>14} {'to_highs s':>14}")
        out["build"] = bench_build(sizes, 3, a.max_thresholds, a.flow_budget_gb * 2**30)
    if "memory" not in a.skip:
        print(f"\n## memory (OCT depth 3, N={max(sizes)}, fresh subprocess)")
        m = bench_memory(max(sizes), 3)
        print(f"peak RSS {m['rss_peak_mb']:.0f} MB (growth over imports and data {m['rss_growth_mb']:.0f} MB), "
              f"tracemalloc peak {m['tracemalloc_peak_mb']:.0f} MB, build+to_highs {m['seconds']:.2f} s, "
              f"{m['rows']:,} rows, {m['nnz']:,} nnz")
        out["memory"] = m
    if "solve" not in a.skip:
        print(f"\n## solve (time limit {time_limit:g} s, 1 thread; errors = training misclassifications; "
              "ratio = MIP solve time to proven optimality / ConTree time)")
        print(f"{'instance':<13} {'N':>4} {'F':>3} {'K':>2} {'D':>2} {'form':<5} {'start':<5} {'status':<22} "
              f"{'start':>6} {'errors':>6} {'contree':>7} {'gap':>7} {'build s':>7} {'solve s':>8} {'nodes':>7} "
              f"{'contree s':>9} {'ratio':>8}")
        out["solve"] = bench_solve(depths, ["flow", "oct"], time_limit, a.quick)
    if a.out:
        with open(a.out, "w") as fh:
            json.dump(out, fh, indent=1, default=float)
    print(f"\nmax RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
