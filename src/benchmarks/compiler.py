"""Benchmark of the model compiler: build + hand-off time and peak memory.

    python -m benchmarks.compiler            # N = 20 000 (HiGHS) and N = 1 000 (HiGHS vs Pyomo)
    python -m benchmarks.compiler --calibrate  # peak memory vs estimate_bytes at several N
    python -m benchmarks.compiler --trace-overhead  # solve_highs (callbacks) vs bare run

The model is a random sparse spec with the shape of the depth-3 OCT model on N samples
and F = 10 features (DESIGN.md §4): B = 7 branch nodes, L = 8 leaves, N·L point-leaf
binaries, N·L·D routing rows with F + 2 non-zeros each (a_{·m}, b_m, z_{it}) and N
assignment rows with L non-zeros.  Each measurement runs in a fresh subprocess so that
``ru_maxrss`` (peak resident memory, which also sees HiGHS's C++ allocations) is clean;
``tracemalloc`` (``--calibrate`` only: it slows object creation) reports the
Python/numpy part.
"""

import argparse
import json
import resource
import subprocess
import sys
import time
import tracemalloc

import numpy as np

DEPTH, N_FEATURES, N_CLASSES = 3, 10, 2


def oct_shaped_spec(n_samples, seed=0):
    """Random spec with the sizes of the depth-3 OCT model (coefficients are random)."""
    from optitree.model import ModelSpec

    rng = np.random.default_rng(seed)
    n_branch, n_leaves = 2**DEPTH - 1, 2**DEPTH
    spec = ModelSpec("oct_shaped")
    a = spec.add_vars("a", (N_FEATURES, n_branch), ub=1, integer=True)
    b = spec.add_vars("b", n_branch, ub=1)
    spec.add_vars("d", n_branch, ub=1, integer=True, obj=0.01)
    z = spec.add_vars("z", (n_samples, n_leaves), ub=1, integer=True)
    spec.add_vars("c", (N_CLASSES, n_leaves), ub=1, integer=True)
    spec.add_vars("loss", n_leaves, obj=1.0)

    # routing: one row per (sample, leaf, ancestor): sum_j x_ij a_jm  - b_m + M z_it <= M
    n_route = n_samples * n_leaves * DEPTH
    sample = np.repeat(np.arange(n_samples), n_leaves * DEPTH)
    leaf = np.tile(np.repeat(np.arange(n_leaves), DEPTH), n_samples)
    node = rng.integers(0, n_branch, n_route)
    row = np.arange(n_route)
    rows = np.concatenate([np.repeat(row, N_FEATURES), row, row])
    cols = np.concatenate([
        a[np.tile(np.arange(N_FEATURES), n_route), np.repeat(node, N_FEATURES)],
        b[node],
        z[sample, leaf],
    ])
    vals = np.concatenate([rng.random(n_route * N_FEATURES), -np.ones(n_route), np.full(n_route, 2.0)])
    spec.add_rows("routing", n_route, rows, cols, vals, -np.inf, 2.0)
    # assignment: sum_t z_it = 1
    spec.add_rows("assign", n_samples, np.repeat(np.arange(n_samples), n_leaves), z.ravel(),
                  np.ones(z.size), 1.0, 1.0)
    return spec


def measure(n_samples, target, trace_python):
    """Run in a fresh process: time and memory of build + hand-off to `target`.

    ``trace_python`` turns tracemalloc on (numpy/Python peak); it slows Python object
    creation several-fold, so timings are only meaningful without it.
    """
    import optitree.model  # noqa: F401  (imports outside the measurement)

    if target != "highs":
        import pyomo.environ  # noqa: F401
        from pyomo.common.gc_manager import PauseGC
        from pyomo.contrib.appsi.solvers import Highs as AppsiHighs
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if trace_python:
        tracemalloc.start()
    t0 = time.perf_counter()
    spec = oct_shaped_spec(n_samples)
    t_build = time.perf_counter() - t0
    t1 = time.perf_counter()
    if target == "highs":
        h = spec.to_highs()
        size = (h.getNumRow(), h.getNumCol(), h.getNumNz())
    else:  # Pyomo emission handed to HiGHS through APPSI (model transfer, no solve), as solve_pyomo
        model = spec.to_pyomo()
        solver = AppsiHighs()
        with PauseGC():
            solver.set_instance(model)
        h = solver._solver_model
        size = (h.getNumRow(), h.getNumCol(), h.getNumNz())
    t_handoff = time.perf_counter() - t1
    py_peak = tracemalloc.get_traced_memory()[1] if trace_python else float("nan")
    tracemalloc.stop()
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    from optitree.model._memory import estimate_bytes

    return {
        "N": n_samples, "target": target, "rows": spec.n_rows, "cols": spec.n_cols, "nnz": spec.nnz,
        "solver_size": size, "build_s": t_build, "handoff_s": t_handoff,
        "python_peak_MiB": py_peak / 2**20, "rss_peak_delta_MiB": (peak_rss - base_rss) / 2**20,
        "estimate_MiB": estimate_bytes(spec.n_rows, spec.n_cols, spec.nnz) / 2**20,
    }


def run_isolated(n_samples, target, trace_python=False):
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.compiler", "--one", str(n_samples), target,
         str(int(trace_python))],
        check=True, capture_output=True, text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def show(r):
    print(
        f"N={r['N']:>6} {r['target']:<6} rows={r['rows']:>8,} cols={r['cols']:>7,} nnz={r['nnz']:>10,}"
        f"  build {r['build_s']:6.2f} s  hand-off {r['handoff_s']:6.2f} s"
        f"  peak RSS +{r['rss_peak_delta_MiB']:5.0f} MiB"
        + ("" if r["python_peak_MiB"] != r["python_peak_MiB"] else f" (numpy/Python {r['python_peak_MiB']:4.0f} MiB)")
        + f"  estimate_bytes {r['estimate_MiB']:4.0f} MiB"
    )


def multi_knapsack(n_items=100, n_constraints=8, seed=0):
    """Random 0-1 multi-knapsack (~170 nodes with HiGHS 1.15.1, seed 0, 1 thread)."""
    from optitree.model import ModelSpec

    rng = np.random.default_rng(seed)
    w = rng.integers(5, 40, (n_constraints, n_items)).astype(float)
    spec = ModelSpec("mknap")
    x = spec.add_vars("x", n_items, ub=1, integer=True, obj=-rng.integers(5, 60, n_items).astype(float))
    spec.add_rows("cap", n_constraints, np.repeat(np.arange(n_constraints), n_items),
                  np.tile(x, n_constraints), w.ravel(), -np.inf, w.sum(axis=1) * 0.3)
    return spec


def trace_overhead(repeats=3):
    """CPU time (1 thread, so process time; robust on a shared machine) of a bare
    ``Highs.run`` vs ``solve_highs`` with its callbacks and log capture, interleaved."""
    from optitree.solvers import SolveOptions, solve_highs

    spec = multi_knapsack()
    bare, ours, nodes = [], [], set()
    for _ in range(repeats):
        h = spec.to_highs()
        for key, value in (("mip_rel_gap", 0.0), ("threads", 1), ("random_seed", 0)):
            h.setOptionValue(key, value)
        t = time.process_time()
        h.run()
        bare.append(time.process_time() - t)
        nodes.add(h.getInfo().mip_node_count)
        t = time.process_time()
        result, _ = solve_highs(spec.to_highs(), SolveOptions())
        ours.append(time.process_time() - t)
        nodes.add(result.nodes)
    b, o = float(np.median(bare)), float(np.median(ours))
    print(f"multi-knapsack 100x8: bare run {b:.3f} s CPU, solve_highs {o:.3f} s CPU "
          f"(median of {repeats}; nodes {sorted(nodes)}): overhead {100 * (o / b - 1):+.1f} %")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calibrate", action="store_true", help="peak memory at several N")
    parser.add_argument("--trace-overhead", action="store_true", help="cost of solve_highs's callbacks")
    parser.add_argument("--one", nargs=3, metavar=("N", "TARGET", "TRACE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(measure(int(args.one[0]), args.one[1], bool(int(args.one[2])))))
        return
    if args.trace_overhead:
        trace_overhead()
        return
    if args.calibrate:
        for n in (2_000, 5_000, 10_000, 20_000):
            show(run_isolated(n, "highs", trace_python=True))
        return
    show(run_isolated(20_000, "highs"))
    fast, slow = run_isolated(1_000, "highs"), run_isolated(1_000, "pyomo")
    show(fast)
    show(slow)
    (rows, cols, nnz), (p_rows, p_cols, p_nnz) = fast["solver_size"], slow["solver_size"]
    assert (rows, nnz) == (p_rows, p_nnz), (fast["solver_size"], slow["solver_size"])
    ratio = (slow["build_s"] + slow["handoff_s"]) / (fast["build_s"] + fast["handoff_s"])
    print(f"N=1000: Pyomo emission + APPSI hand-off takes {ratio:.0f}x the time of to_highs; "
          f"HiGHS receives {rows} rows and {nnz} non-zeros both ways; {cols} vs {p_cols} "
          "columns (APPSI leaves out variables that appear in no row and not in the objective)")


if __name__ == "__main__":
    main()
