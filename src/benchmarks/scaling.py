"""How the exact engine scales with the number of rows, side by side with CART, ConTree and pytrees-rs.

Data: ``sklearn.datasets.make_classification(n_samples=n, n_features=10, random_state=seed)``
at ``--rows`` (default 10^4, 3·10^4, 10^5, 3·10^5, 10^6), rank-transformed per column (ConTree
casts features to float32, which would merge close values; ranks keep every distinct value and
change no optimum). Every solver gets the same rows and, per run, the same ``--time-limit``, on
one thread, at each of ``--depths`` (default 3 and 4):

- ``engine``: ``optitree.exact.solve(X, y, max_depth=d, time_limit=T, threads=1)``: its
  objective (training errors), its lower bound, gap and status;
- ``engine-binned``: the same with ``max_bins=MAX_BINS`` (255): its proof holds over quantile bin
  edges, and ``bound`` is its lower bound on the all-midpoints optimum
  (``ExactResult.all_midpoints_bound``), so its gap is to every midpoint, as the others';
- ``cart``: greedy ``greedy.CARTClassifier(max_depth=d)``, its training errors: the baseline every
  optimal tree must match or beat;
- ``pycontree``: ``pycontree.ConTree(max_depth=d, time_limit=T)``; proven when it ends without
  its "Fitting exceeds time limit." warning (it reports no bound);
- ``pytrees``: pytrees-rs's ``ConTreeClassifier(max_depth=d, max_time=T, use_lds=True)`` (its
  anytime limited-discrepancy search), when the package is installed. A speed peer only: its
  errors are recounted from its predictions, its "optimal" is its own claim (it has reported
  false optima) and is checked against the engine's proven optimum, never used as truth.

Every run is a fresh subprocess (``python -c``, one thread), so the peak resident memory is that
run's own (``ru_maxrss`` of the child, including the interpreter, the imports and the data);
a run that crashes or outlives ``2 T + 60`` seconds is recorded as such and the study goes on.
``seconds`` is the fit alone (data generation excluded). The table's ``note`` flags a stopped
exact solver worse than CART, a tree below the engine's proven optimum and a false optimum.

Usage::

    python -m benchmarks.scaling --quick                     # 10^4 rows, depth 3, 20 s: a smoke run
    python -m benchmarks.scaling                             # every size, depths 3 and 4, 120 s per run
    python -m benchmarks.scaling --rows 100000 --seed 1 --depths 3 4 \\
        --plot results/scaling.png --json results/scaling.json     # the issue's 100 000-row set
    python -m benchmarks.scaling --solvers engine cart --rows 10000 30000 --time-limit 60
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

from optitree._provenance import package_versions

from experiments.records import atomic_write_json
from experiments.report import markdown_table

ROWS = (10_000, 30_000, 100_000, 300_000, 1_000_000)
DEPTHS = (3, 4)
TIME_LIMIT = 120.0
SOLVERS = ("engine", "engine-binned", "cart", "pycontree", "pytrees")
#: ``max_bins`` of the ``engine-binned`` solver (scikit-learn's histogram default).
MAX_BINS = 255
#: The distributions whose versions the JSON output records.
PACKAGES = ("numpy", "scikit-learn", "optitree", "pycontree", "pytrees-rs")
#: Prefix of the line a worker process prints its result on.
MARKER = "BENCH_SCALING_RESULT "
ROOT = Path(__file__).resolve().parents[2]


def make_data(rows, seed):
    """``make_classification(n_samples=rows, n_features=10, random_state=seed)``, features rank-transformed.

    Parameters
    ----------
    rows : int
        Number of samples.
    seed : int
        ``random_state`` of the generator.

    Returns
    -------
    X : ndarray of shape (rows, 10)
        Dense per-column ranks, float64.
    y : ndarray of shape (rows,)
        Labels 0 and 1.
    """
    from sklearn.datasets import make_classification

    from .exact import rank_transform

    X, y = make_classification(n_samples=rows, n_features=10, random_state=seed)
    return rank_transform(X), y


def fit(solver, X, y, depth, time_limit):
    """Fit one solver and describe its tree.

    Parameters
    ----------
    solver : {"engine", "engine-binned", "cart", "pycontree", "pytrees"}
    X, y : ndarray
        The rows of :func:`make_data`.
    depth : int
        Maximum depth.
    time_limit : float
        Seconds the solver is given (CART has no limit).

    Returns
    -------
    dict
        ``errors`` (training errors of the returned tree), ``bound`` (a proven lower bound, or
        None), ``gap`` (relative, or None), ``status`` (the solver's word), ``proven`` (True or
        False for exact solvers, None for CART; pytrees's is its unverified claim; the binned
        engine's over its bins) and ``seconds`` (the fit alone).
    """
    t0 = time.perf_counter()
    if solver == "engine":
        from optitree.exact import solve

        res = solve(X, y, max_depth=depth, time_limit=time_limit, threads=1)
        seconds = time.perf_counter() - t0
        return {"errors": int(round(res.objective)), "bound": float(res.bound), "gap": float(res.gap),
                "status": res.status, "proven": res.status == "optimal", "seconds": seconds}
    if solver == "engine-binned":
        from optitree.exact import solve

        res = solve(X, y, max_depth=depth, time_limit=time_limit, threads=1, max_bins=MAX_BINS)
        seconds = time.perf_counter() - t0
        bound = float(res.all_midpoints_bound)
        return {"errors": int(round(res.objective)), "bound": bound,
                "gap": (res.objective - bound) / max(res.objective, 1e-12), "status": f"{res.status} over the bins",
                "proven": res.status == "optimal", "seconds": seconds}
    if solver == "cart":
        from greedy import CARTClassifier

        est = CARTClassifier(max_depth=depth).fit(X, y)
        seconds = time.perf_counter() - t0
        return {"errors": int((est.predict(X) != y).sum()), "bound": None, "gap": None, "status": "greedy",
                "proven": None, "seconds": seconds}
    if solver == "pycontree":
        from .exact import run_contree

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            errors = run_contree(X, y, depth, time_limit)
        seconds = time.perf_counter() - t0
        proven = not any("exceeds time limit" in str(w.message) for w in caught)
        return {"errors": errors, "bound": errors if proven else None, "gap": 0.0 if proven else None,
                "status": "optimal" if proven else "time limit", "proven": proven, "seconds": seconds}
    if solver == "pytrees":
        from pytrees import ConTreeClassifier

        est = ConTreeClassifier(max_depth=depth, max_time=time_limit, use_lds=True).fit(X, y)
        seconds = time.perf_counter() - t0
        return {"errors": int((est.predict(X) != y).sum()), "bound": None, "gap": None,
                "status": est.status_, "proven": est.status_ == "optimal",
                "seconds": seconds, "reported_errors": int(est.train_error_)}
    raise ValueError(f"unknown solver {solver!r}; expected one of {SOLVERS}")


def worker(spec_json):
    """Entry point of a run's subprocess: make the data, fit, print the result after :data:`MARKER`.

    Parameters
    ----------
    spec_json : str
        JSON object with ``solver``, ``rows``, ``depth``, ``seed`` and ``time_limit``.
    """
    import resource

    spec = json.loads(spec_json)
    X, y = make_data(spec["rows"], spec["seed"])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = fit(spec["solver"], X, y, spec["depth"], spec["time_limit"])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    out.update(peak_mib=peak / 1024, data_mib=before / 1024)
    print(MARKER + json.dumps(out), flush=True)


def run_isolated(solver, rows, depth, seed, time_limit):
    """One run in a fresh Python process (one thread), killed after ``2 * time_limit + 60`` seconds.

    Parameters
    ----------
    solver : str
        One of :data:`SOLVERS`.
    rows, depth, seed : int
    time_limit : float

    Returns
    -------
    dict
        The run's parameters and :func:`fit`'s result with ``peak_mib`` (the child's peak
        resident memory) and ``data_mib`` (its peak before the fit); after a crash or a kill,
        ``status`` says which and the measurements are None.
    """
    spec = {"solver": solver, "rows": rows, "depth": depth, "seed": seed, "time_limit": time_limit}
    record = dict(spec, errors=None, bound=None, gap=None, proven=None, seconds=None, peak_mib=None, data_mib=None)
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               RAYON_NUM_THREADS="1", PYTHONPATH=path)
    code = f"from benchmarks.scaling import worker; worker({json.dumps(spec)!r})"
    timeout = 2 * time_limit + 60
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return dict(record, status=f"killed after {timeout:g} s")
    lines = [line for line in proc.stdout.splitlines() if line.startswith(MARKER)]
    if proc.returncode != 0 or not lines:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return dict(record, status=f"crashed (exit {proc.returncode}): {last[:120]}")
    return dict(record, **json.loads(lines[-1][len(MARKER):]))


def available(solver):
    """Whether ``solver``'s package imports here (the engine and CART always do).

    Parameters
    ----------
    solver : str

    Returns
    -------
    bool
    """
    import importlib.util

    module = {"pycontree": "pycontree", "pytrees": "pytrees"}.get(solver)
    return module is None or importlib.util.find_spec(module) is not None


def notes(results):
    """A note per result: a stopped exact solver worse than CART, a tree below the engine's proven
    optimum (an engine bug), a claimed optimum above it (a false optimum), a crash or a kill.

    Parameters
    ----------
    results : list of dict
        Records of :func:`run_isolated`.

    Returns
    -------
    list of str
    """
    def find(r, solver):
        return next((o for o in results if (o["rows"], o["depth"], o["solver"]) == (r["rows"], r["depth"], solver)
                     and o["errors"] is not None), None)

    out = []
    for r in results:
        note = []
        cart, engine = find(r, "cart"), find(r, "engine")
        optimum = engine["errors"] if engine and engine["proven"] else None
        if r["errors"] is None:
            note.append(r["status"])
        else:
            if r["solver"] != "cart" and cart and r["errors"] > cart["errors"]:
                note.append("worse than CART")
            if optimum is not None and r["errors"] < optimum:
                note.append(f"BELOW THE ENGINE'S PROVEN OPTIMUM {optimum}")
            if optimum is not None and r["solver"] not in ("engine", "engine-binned") and r["proven"] and \
                    r["errors"] > optimum:
                note.append(f"FALSE OPTIMUM (engine proved {optimum})")
            if r.get("reported_errors", r["errors"]) != r["errors"]:
                note.append(f"reports {r['reported_errors']} errors")
        out.append("; ".join(note))
    return out


def table(results):
    """The results as a markdown table, one line per run.

    Columns: rows, depth, solver, errors, bound, gap, status, proven ("claimed" for pytrees's
    unverified "optimal"), seconds, peak MiB, MiB before fit (the same process's peak after
    the imports and the data, before the fit) and note (:func:`notes`).

    Parameters
    ----------
    results : list of dict
        Records of :func:`run_isolated`.

    Returns
    -------
    str
    """
    def num(value, fmt):
        return "-" if value is None else format(value, fmt)

    def proven(r):
        if r["proven"] is None:
            return "-"
        return ("claimed" if r["solver"] == "pytrees" else "yes") if r["proven"] else "no"

    rows = [[f"{r['rows']:,}", r["depth"], r["solver"], num(r["errors"], "d"), num(r["bound"], "g"),
             num(r["gap"], ".4f"), r["status"], proven(r), num(r["seconds"], ".2f"), num(r["peak_mib"], ".0f"),
             num(r["data_mib"], ".0f"), note]
            for r, note in zip(results, notes(results))]
    return markdown_table(["rows", "depth", "solver", "errors", "bound", "gap", "status", "proven", "seconds",
                           "peak MiB", "MiB before fit", "note"], rows)


def plot(results, path, time_limit):
    """Log-log plot of rows against seconds, one line per solver and depth; hollow markers: stopped runs.

    Parameters
    ----------
    results : list of dict
        Records of :func:`run_isolated` (runs without a time are left out).
    path : str
        Image file to write.
    time_limit : float
        Drawn as a dashed horizontal line.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    solvers = sorted({r["solver"] for r in results})
    depths = sorted({r["depth"] for r in results})
    for solver in solvers:
        for depth in depths:
            runs = sorted((r for r in results if (r["solver"], r["depth"]) == (solver, depth)
                           and r["seconds"] is not None), key=lambda r: r["rows"])
            if not runs:
                continue
            color = f"C{solvers.index(solver)}"
            ax.plot([r["rows"] for r in runs], [r["seconds"] for r in runs], color=color,
                    linestyle=("-", "--", ":", "-.")[depths.index(depth) % 4], label=f"{solver}, depth {depth}")
            for r in runs:  # hollow: stopped without a proof (CART's proven is None: filled)
                ax.plot(r["rows"], r["seconds"], "o", color=color,
                        markerfacecolor="none" if r["proven"] is False else color)
    ax.axhline(time_limit, color="grey", linestyle="--", linewidth=0.8, label=f"time limit {time_limit:g} s")
    ax.set(xscale="log", yscale="log", xlabel="rows", ylabel="seconds (fit)",
           title="make_classification, 10 features, one thread (hollow: stopped without proof)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    """Run the study, print the table; optionally plot and write JSON.

    Parameters
    ----------
    argv : list of str, optional
        Command-line arguments (default ``sys.argv[1:]``).

    Returns
    -------
    list of dict
        One record per run (:func:`run_isolated`), in the table's order.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=list(ROWS))
    parser.add_argument("--depths", type=int, nargs="+", default=list(DEPTHS))
    parser.add_argument("--time-limit", type=float, default=TIME_LIMIT, help="seconds per run (default 120)")
    parser.add_argument("--seed", type=int, default=0, help="make_classification's random_state")
    parser.add_argument("--solvers", nargs="+", choices=SOLVERS, default=list(SOLVERS))
    parser.add_argument("--quick", action="store_true", help="10^4 rows, depth 3, 20 s: a smoke run")
    parser.add_argument("--plot", metavar="PATH", help="log-log plot of rows against seconds")
    parser.add_argument("--json", metavar="PATH", help="raw results, versions and command line")
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.depths, args.time_limit = [10_000], [3], 20.0
    solvers = [s for s in args.solvers if available(s)]
    for s in sorted(set(args.solvers) - set(solvers)):
        print(f"note: {s} is not installed here: skipped", file=sys.stderr)
    results = []
    for rows in args.rows:
        for depth in args.depths:
            for solver in solvers:
                r = run_isolated(solver, rows, depth, args.seed, args.time_limit)
                results.append(r)
                print(f"{rows} rows, depth {depth}, {solver}: {r['errors']} errors, {r['status']}, "
                      f"{r['seconds'] if r['seconds'] is None else round(r['seconds'], 2)} s", file=sys.stderr,
                      flush=True)
    print(f"make_classification(n_features=10, random_state={args.seed}), features rank-transformed; "
          f"time limit {args.time_limit:g} s per run, one thread, each run a fresh process "
          "(peak MiB: its whole peak resident memory).\n")
    print(table(results))
    if args.plot:
        plot(results, args.plot, args.time_limit)
    if args.json:
        command = [sys.executable, "-m", "benchmarks.scaling",
                   *(sys.argv[1:] if argv is None else argv)]
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        atomic_write_json(args.json, {"command": command, "versions": package_versions(PACKAGES),
                               "config": {"rows": args.rows, "depths": args.depths, "time_limit": args.time_limit,
                                          "seed": args.seed, "solvers": solvers},
                               "results": results})
    return results


if __name__ == "__main__":
    main()
