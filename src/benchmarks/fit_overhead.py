"""In-process time of trivial fits: what a proven tiny tree costs beyond its search.

``OptimalTreeClassifier(max_depth=4).fit`` on iris, wine and monks1 (each proven optimal in a few
milliseconds: validation, split space, engine, certificate), beside pycontree's
``ConTree(max_depth=4).fit`` and scikit-learn's ``DecisionTreeClassifier(max_depth=4).fit`` on the
same rows, after one warm-up fit each. The fits alternate (one of each in turn, ``--repeats``
rounds), so a change of the machine's load meets all of them; the table gives each one's least and
median time and optitree's ratios to the others' medians.

``--baseline-python PATH`` also times the fit of another interpreter's optitree (e.g. a venv with an
editable install of an earlier commit) in a worker process (:mod:`benchmarks._baseline`), the same
number of times after a warm-up, once the in-process rounds of the set are done.

Usage::

    python -m benchmarks.fit_overhead --repeats 50
    python -m benchmarks.fit_overhead --baseline-python ../venv-before/bin/python
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from sklearn.datasets import load_iris, load_wine
from sklearn.tree import DecisionTreeClassifier

from optitree import OptimalTreeClassifier, datasets

from experiments.report import markdown_table

from ._baseline import Baseline

DEPTH = 4


def trivial_sets() -> dict:
    """The sets whose depth-4 optimum is proven in milliseconds: name -> (X, y)."""
    X, y, _ = datasets.load("monks1")
    return {"iris": load_iris(return_X_y=True), "wine": load_wine(return_X_y=True), "monks1": (X, y)}


def fitters() -> dict:
    """name -> fit(X, y), for the fits timed in this process."""
    import pycontree

    return {
        "optitree": lambda X, y: OptimalTreeClassifier(max_depth=DEPTH).fit(X, y),
        "pycontree": lambda X, y: pycontree.ConTree(max_depth=DEPTH).fit(X, y),
        "scikit-learn CART": lambda X, y: DecisionTreeClassifier(max_depth=DEPTH, random_state=0).fit(X, y),
    }


def alternate(fits: dict, X, y, repeats: int) -> dict:
    """name -> list of ``repeats`` times of ``fits[name](X, y)``, one of each fit per round, after a warm-up."""
    times = {name: [] for name in fits}
    for fit in fits.values():
        fit(X, y)
    for _ in range(repeats):
        for name, fit in fits.items():
            started = time.perf_counter()
            fit(X, y)
            times[name].append(time.perf_counter() - started)
    return times


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=30, help="rounds of fits per set (default 30)")
    parser.add_argument("--baseline-python", metavar="PATH",
                        help="also time the fit of this interpreter's optitree (benchmarks._baseline)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    base = Baseline(args.baseline_python) if args.baseline_python else None
    if base:
        print(f"baseline: {args.baseline_python}, optitree from {base.origin}", file=sys.stderr, flush=True)
    fits = fitters()
    head = ["set", "n×p"] + [f"{name} ms (least / median)" for name in fits]
    head += ["optitree / pycontree", "optitree / CART"]
    if base:
        head += ["baseline ms (least / median)", "optitree / baseline"]
    rows = []
    try:
        for name, (X, y) in trivial_sets().items():
            times = alternate(fits, X, y, args.repeats)
            median = {fit: float(np.median(t)) for fit, t in times.items()}
            row = [name, f"{X.shape[0]}×{X.shape[1]}"]
            row += [f"{min(t) * 1e3:.2f} / {median[fit] * 1e3:.2f}" for fit, t in times.items()]
            row += [f"{median['optitree'] / median['pycontree']:.2f}",
                    f"{median['optitree'] / median['scikit-learn CART']:.2f}"]
            if base:
                b = base.fit(X, y, args.repeats, max_depth=DEPTH)
                row += [f"{b['time'] * 1e3:.2f} / {b['median'] * 1e3:.2f}", f"{median['optitree'] / b['median']:.2f}"]
            rows.append(row)
            print(f"{name}: done", file=sys.stderr, flush=True)
    finally:
        if base:
            base.close()
    print(f"Depth-{DEPTH} fits in this process, {args.repeats} rounds (one fit of each per round, after a warm-up); "
          "ratios of medians.")
    print(markdown_table(head, rows))


if __name__ == "__main__":
    main()
