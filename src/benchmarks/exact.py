"""Benchmark of the exact engine (``optitree.exact.solve``) against pycontree's ConTree, side by side.

Per data set and depth: ConTree's training errors and time, the engine's objective, status
and time, and the time ratio engine / ConTree; then the median ratio per depth and the peak
resident memory of the engine on breast_cancer at depth 3 (fresh subprocess).

Both solvers get the same rank-transformed features (dense ranks per column): ConTree casts
features to float32, which would merge close values; ranks keep every distinct value and do
not change any optimum. The engine's core is compiled at install time: no warm-up. Each time
is the minimum over ``--repeats`` runs; deeper than 2, runs stop once :data:`SHORT_RUN` seconds
are spent, so only sets that take milliseconds are repeated (their times are the noisiest).

``--baseline-python PATH`` also times the engine of another interpreter (e.g. a venv with the
last numba commit installed) on every instance, right after this checkout's engine, the same
way (:mod:`benchmarks._baseline`; the baseline warms up first when its engine has
``warm_up``), at the first ``--threads`` count: columns baseline time and engine / baseline,
then the median and largest ratio; a differing objective is flagged.

``--threads 1 2`` times the engine at each thread count (speed-up column: one thread's time
over the last count's), the counts in turn for ``--repeats`` rounds whatever the time spent
(:func:`thread_times`), so that a change of the machine's speed meets every count alike; each
round also runs that many one-thread solves at once (column "runs at once": their throughput
over one alone, the speed-up the machine allows at that moment, :func:`at_once`).
``--sets`` picks sets, including the continuous stand-ins and the generated large sets of
:data:`EXTRA_SETS` (not in the default list); on a set where a solver stops at ``--time-limit``
the row shows both trees' errors and the engine's bound and gap.
``--anytime`` runs the stopped-search protocol instead (:func:`anytime_check`).

Usage::

    python -m benchmarks.exact              # all sets, depths 2 and 3
    python -m benchmarks.exact --quick      # iris, wine, monks1, xor; depth 2 and 3
    python -m benchmarks.exact --depths 4 --sets breast_cancer wilt_like raisin_like banknote_like \
        --threads 1 2                             # continuous depth 4, one and two threads
    python -m benchmarks.exact --depths 4 --sets generated_20000 generated_19020_imbalanced \
        --time-limit 300                          # large sets, both solvers stopped at 300 s
    python -m benchmarks.exact --baseline-python ../venv-ref/bin/python  # against an earlier engine
    python -m benchmarks.exact --anytime    # digits depth 4: bound and gap at 120 s, work_limit twice
    python -m benchmarks.exact --depths 5 --one-hot --sets monks1 monks2 monks3 tic_tac_toe car \
        balance_scale parity                      # depth 5 on binary (one-hot) data
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from optitree import datasets
from optitree.exact import solve

from ._baseline import Baseline, best_time, same_objective
from experiments.report import markdown_table

# name -> (loader name, parameters): the regenerated sets at sizes where depth 3 is not trivial
SETS = {
    "iris": ("iris", {}),
    "wine": ("wine", {}),
    "breast_cancer": ("breast_cancer", {}),
    "digits": ("digits", {}),
    "monks1": ("monks1", {}),
    "monks2": ("monks2", {}),
    "monks3": ("monks3", {}),
    "balance_scale": ("balance_scale", {}),
    "tic_tac_toe": ("tic_tac_toe", {}),
    "car": ("car", {}),
    "xor": ("xor", {}),
    "xor_noisy": ("xor", {"n": 1000, "noise": 0.1, "n_irrelevant": 3}),
    "parity": ("parity", {"k": 3, "n_irrelevant": 5}),
}
QUICK = ("iris", "wine", "monks1", "xor")
#: Seconds of runs of one solver after which a set deeper than 2 is not run again (min over the runs).
SHORT_RUN = 1.0


def generated(n, imbalanced=False):
    """A seeded ``make_classification`` set of ``n`` rows and 10 features (6 informative, 5 % flipped labels)."""
    from sklearn.datasets import make_classification

    return make_classification(n_samples=n, n_features=10, n_informative=6, flip_y=0.05,
                               weights=[0.65] if imbalanced else None, random_state=0)


def stand_in(name):
    from .engine_scale import make  # the seeded continuous stand-ins for wilt, raisin, banknote

    return make(name)


# name -> () -> (X, y): sets beyond the default list (continuous stand-ins, generated large sets)
EXTRA_SETS = {
    "wilt_like": lambda: stand_in("wilt_like"),
    "raisin_like": lambda: stand_in("raisin_like"),
    "banknote_like": lambda: stand_in("banknote_like"),
    "raisin_like_250": lambda: stand_in("raisin_like:250"),
    "wilt_like_1500": lambda: stand_in("wilt_like:1500"),
    **{f"generated_{n}": (lambda n=n: generated(n)) for n in (5_000, 10_000, 20_000)},
    "generated_19020_imbalanced": lambda: generated(19_020, imbalanced=True),
}


def one_hot(X):
    """Every column with more than two distinct values as indicator columns ``x == v`` (binary data)."""
    columns = []
    for j in range(X.shape[1]):
        values = np.unique(X[:, j])
        columns += [X[:, j]] if values.size <= 2 else [(X[:, j] == v).astype(float) for v in values]
    return np.column_stack(columns)


def load(name):
    if name in EXTRA_SETS:
        X, y = EXTRA_SETS[name]()
    else:
        loader, params = SETS[name]
        X, y, _ = datasets.load(loader, **params)
    return rank_transform(X), np.unique(y, return_inverse=True)[1]


def rank_transform(X):
    return np.column_stack([np.unique(X[:, j], return_inverse=True)[1] for j in range(X.shape[1])]).astype(float)


def thread_times(run, thread_counts, rounds):
    """``({threads: least time of run(threads)}, ceiling, last output of run(thread_counts[0]))``, one run
    of each count in turn per round, ``rounds`` rounds.

    With 1 among the counts each round then runs ``k`` (the last count) one-thread runs at once
    (:func:`at_once`): ``ceiling`` is ``k`` times one run's least time over their least time, the
    speed-up the machine allows (NaN without a one-thread count).
    """
    times, first, together = {threads: np.inf for threads in thread_counts}, None, np.inf
    for _ in range(rounds):
        for threads in thread_counts:
            t0 = time.perf_counter()
            out = run(threads)
            times[threads] = min(times[threads], time.perf_counter() - t0)
            if threads == thread_counts[0]:
                first = out
        if 1 in times:
            together = min(together, at_once(run, thread_counts[-1]))
    ceiling = thread_counts[-1] * times[1] / together if 1 in times else np.nan
    return times, ceiling, first


def at_once(run, k):
    """Wall time of ``k`` calls ``run(1)`` at once, each on its own Python thread (the core releases the GIL)."""
    with ThreadPoolExecutor(k) as pool:
        t0 = time.perf_counter()
        for future in [pool.submit(run, 1) for _ in range(k)]:
            future.result()
        return time.perf_counter() - t0


def run_contree(X, y, depth, time_limit):
    import pycontree

    est = pycontree.ConTree(max_depth=depth, time_limit=time_limit).fit(X, y)
    return int((est.predict(X) != y).sum())



def peak_rss_breast_cancer_depth3():
    """Peak RSS (MiB) of a fresh process before and after solving breast_cancer at depth 3 (after imports, loading)."""
    code = (
        "import resource, json, numpy as np\n"
        "from benchmarks.exact import load\n"
        "from optitree.exact import solve\n"
        "X, y = load('breast_cancer')\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "solve(X, y, max_depth=3)\n"
        "after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print(json.dumps([before / 1024, after / 1024]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def anytime_check(name="digits", depth=4, time_limit=120.0, work_limit=1_000_000):
    """A stopped search: its bound, gap and overrun of ``time_limit``; then two runs with one ``work_limit``.

    Prints the engine's tree errors, bound, gap and time against the limit (the promise: the fit
    ends within the limit + 5 %), ConTree's errors at the same limit, the same for the default
    ``OptimalTreeClassifier``, and whether two runs with the same ``work_limit`` (no time limit)
    return the same tree, objective and bound.
    """
    X, y = load(name)
    res = solve(X, y, max_depth=depth, time_limit=time_limit)
    over = res.time / time_limit - 1
    print(f"{name} depth {depth}, time_limit {time_limit:g} s: status {res.status}, objective {res.objective:g}, "
          f"bound {res.bound:g}, gap {res.gap:.3f}, time {res.time:.1f} s ({over:+.1%} of the limit)", flush=True)
    t0 = time.perf_counter()
    errors = run_contree(X, y, depth, time_limit)
    print(f"ConTree at the same limit: {errors} errors in {time.perf_counter() - t0:.1f} s", flush=True)
    from optitree import OptimalTreeClassifier

    t0 = time.perf_counter()
    clf = OptimalTreeClassifier(max_depth=depth, time_limit=time_limit).fit(X, y)
    fit = time.perf_counter() - t0
    print(f"OptimalTreeClassifier: fit {fit:.1f} s ({fit / time_limit - 1:+.1%} of the limit), errors "
          f"{(clf.predict(X) != y).sum()}, bound {clf.result_.bound:g}, gap {clf.result_.gap:.3f}, "
          f"proven {clf.result_.proven_optimal}", flush=True)
    a, b = (solve(X, y, max_depth=depth, work_limit=work_limit) for _ in range(2))
    same = a.tree == b.tree and (a.objective, a.bound) == (b.objective, b.bound)
    print(f"work_limit {work_limit}: objective {a.objective:g} / {b.objective:g}, bound {a.bound:g} / {b.bound:g}, "
          f"times {a.time:.1f} / {b.time:.1f} s, stopped_by {a.stopped_by}; same tree: {same}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sets", nargs="+", choices=tuple(SETS) + tuple(EXTRA_SETS), help="sets to run")
    parser.add_argument("--depths", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--threads", type=int, nargs="+", default=[1], help="engine thread counts")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--time-limit", type=float, default=600.0)
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--anytime", action="store_true", help="the stopped-search protocol (anytime_check)")
    parser.add_argument("--one-hot", action="store_true", help="indicator columns for every non-binary feature")
    parser.add_argument("--baseline-python", metavar="PATH",
                        help="also time the engine of this interpreter's optitree (benchmarks._baseline)")
    args = parser.parse_args(argv)
    if args.anytime:
        return anytime_check(time_limit=min(args.time_limit, 120.0))
    names = args.sets or (QUICK if args.quick else tuple(SETS))
    rows, ratios, speedups, ceilings, vs_base = [], {d: [] for d in args.depths}, [], [], {}
    base = Baseline(args.baseline_python) if args.baseline_python else None
    if base:
        print(f"baseline: {args.baseline_python}, optitree from {base.origin}", file=sys.stderr, flush=True)
    for name in names:
        X, y = load(name)
        if args.one_hot:
            X = one_hot(X)
        for depth in args.depths:
            budget = np.inf if depth == 2 else SHORT_RUN  # deeper, only short runs are repeated
            t_ct, errors = best_time(lambda: run_contree(X, y, depth, args.time_limit), args.repeats, budget)

            def run(threads):
                return solve(X, y, max_depth=depth, time_limit=args.time_limit, threads=threads)

            if len(args.threads) > 1:
                times, ceiling, res = thread_times(run, args.threads, args.repeats)
            else:
                t, res = best_time(lambda: run(args.threads[0]), args.repeats, budget)
                times = {args.threads[0]: t}
            t_ex = times[args.threads[0]]
            ratio = t_ex / max(t_ct, 1e-9)
            ratios[depth].append(ratio)
            proven = res.status == "optimal"
            same = ("yes" if res.objective == errors else "NO") if proven else \
                ("not worse" if res.objective <= errors else "WORSE")
            row = [name, f"{X.shape[0]}×{X.shape[1]}", len(np.unique(y)), depth, errors, f"{t_ct:.3f}",
                   f"{res.objective:g}", res.status, f"{res.bound:g}", f"{res.gap:.3f}", f"{t_ex:.3f}",
                   f"{ratio:.2f}", same]
            if len(args.threads) > 1:
                last = args.threads[-1]
                row += [f"{times[last]:.3f}", f"{t_ex / times[last]:.2f}", f"{ceiling:.2f}"]
                if t_ex > 1.0:
                    speedups.append(t_ex / times[last])
                    ceilings.append(ceiling)
            if base:
                b = base.solve(X, y, args.repeats, budget, max_depth=depth, time_limit=args.time_limit,
                               threads=args.threads[0])
                vs_base[f"{name} d{depth}"] = t_ex / b["time"]
                if res.status != "optimal" or b["status"] != "optimal":
                    agree = "stopped"  # a stopped search's objective depends on the time it had
                else:
                    agree = "yes" if same_objective(res.objective, b["objective"]) else "NO"
                if agree == "NO":
                    print(f"!! OBJECTIVE MISMATCH {name} depth {depth}: engine {res.objective!r}, "
                          f"baseline {b['objective']!r}", flush=True)
                row += [f"{b['time']:.3f}", f"{t_ex / b['time']:.2f}", agree]
            rows.append(row)
            print(f"{name} depth {depth}: ConTree {errors} in {t_ct:.3f} s, engine {res.objective:g} "
                  f"({res.status}, bound {res.bound:g}) in {t_ex:.3f} s"
                  + (f", baseline {b['objective']:g} in {b['time']:.3f} s" if base else ""),
                  file=sys.stderr, flush=True)
    if base:
        base.close()
    print(f"Features rank-transformed for all solvers; min over {args.repeats} runs at depth 2, deeper over the "
          f"runs that fit in {SHORT_RUN:g} s (at least one). "
          f"Engine threads: {args.threads[0]} (ratio column)."
          + (f" Engine at {', '.join(map(str, args.threads))} threads: min over {args.repeats} rounds, the counts "
             "in turn." if len(args.threads) > 1 else "")
          + (f" Baseline: the engine of {args.baseline_python} ({base.origin}), timed the same way in a worker "
             "process after its warm_up (if any), right after this engine on each instance." if base else "")
          + "\n")
    head = ["dataset", "n×p", "K", "depth", "ConTree errors", "ConTree s", "engine objective", "engine status",
            "bound", "gap", "engine s", "ratio", "equal"]
    if len(args.threads) > 1:
        head += [f"engine s, {args.threads[-1]} threads", "speed-up", f"{args.threads[-1]} one-thread runs at once"]
    if base:
        head += ["baseline s", "engine / baseline", "same objective"]
    print(markdown_table(head, rows))
    print()
    for depth, r in ratios.items():
        print(f"median time ratio engine / ConTree at depth {depth}: {np.median(r):.2f} (over {len(r)} sets)")
    if vs_base:
        worst = max(vs_base, key=vs_base.get)
        print(f"time ratio engine / baseline: median {np.median(list(vs_base.values())):.2f}, "
              f"max {vs_base[worst]:.2f} ({worst}), over {len(vs_base)} instances")
    if speedups:
        print(f"median speed-up at {args.threads[-1]} threads over the runs above 1 s: {np.median(speedups):.2f} "
              f"(over {len(speedups)}); the machine's ceiling, the throughput of {args.threads[-1]} one-thread "
              f"runs at once over one alone: median {np.nanmedian(ceilings):.2f}")
    if not args.no_memory and not args.quick and not args.sets:
        before, after = peak_rss_breast_cancer_depth3()
        print(f"peak RSS, breast_cancer depth 3 (fresh process): {after:.0f} MiB "
              f"(after imports and loading: {before:.0f} MiB, growth {after - before:.0f} MiB)")


if __name__ == "__main__":
    main()
