"""Benchmark: how far past ``time_limit`` does a fit run?

Every case fits an optimal estimator with a time limit and measures the wall time of
``fit`` around the call. The *overshoot* is ``fit time - time_limit - build_time``
(``result_.build_time``: building the model and handing it to the solver is counted
apart, as the estimators promise: total fit time <= time_limit + build time + 5 %).
Cases span datasets, depths, formulations (FlowOCT with and without the exact engine,
OCT, OCT-H, ORT) and limits; most hit the limit.

Prints one line per case (``solver``: ``result_.solve_time``, the solver's or the engine's
own run), ``presolve`` (HiGHS's presolve setting chosen by the backend's rule,
``result_.options["highs_presolve"]``; "-" without a HiGHS run) and ``forked`` (whether the
solve ran in a child process killed after the limit, ``result_.options["highs_isolated"]``),
then the distribution of the
overshoot in seconds and as a fraction of the limit (min, median, 90th percentile, max) and how
many cases exceed 5 %.

``--presolve`` measures what the rule is calibrated on (:mod:`optitree.solvers.highs`): for
FlowOCT, OCT and OCT-H models of several sizes, the seconds from HiGHS's ``run()`` to its first
MIP callback (presolve and MIP setup) with presolve and without, no time limit, against
:func:`~optitree.solvers.highs.predicted_presolve_time`, and the least-squares fit of log time
on log ``work`` (columns times the mean row length).

Usage::

    python -m benchmarks.time_limit            # limits 5 s and 10 s (~8 min on 2 cores)
    python -m benchmarks.time_limit --quick    # limits 2 s only
    python -m benchmarks.time_limit --presolve # presolve times (~3 min on 2 cores)
"""

from __future__ import annotations

import argparse
import time
import warnings
from functools import partial

import numpy as np
from sklearn.datasets import (
    load_breast_cancer,
    load_digits,
    load_wine,
    make_classification,
)

from optitree import OptimalTreeClassifier, OptimalTreeRegressor
from optitree.solvers.highs import compile_highs, predicted_presolve_time

#: The promised slack beyond time_limit + build time, as a fraction of the limit.
TOLERANCE = 0.05


def datasets():
    """name -> (X, y) classification data sets of increasing size."""
    digits = load_digits()
    return {
        "wine": load_wine(return_X_y=True),
        "breast_cancer": load_breast_cancer(return_X_y=True),
        "digits[:600]": (digits.data[:600], digits.target[:600]),
    }


def cases(limits):
    """(label, limit, data set name, estimator factory) for every measured fit."""
    out = []
    for limit in limits:
        for depth in (2, 3):
            for label, kwargs in [
                ("flow", {}),
                ("flow accel=none", {"acceleration": "none"}),
                ("oct accel=none", {"formulation": "oct", "acceleration": "none", "feature_scaling": "rank"}),
                ("oct-h", {"formulation": "oct-h"}),
            ]:
                for name in ("wine", "breast_cancer", "digits[:600]"):
                    if label == "oct-h" and name == "digits[:600]":
                        continue  # left out to keep the run short
                    make = partial(OptimalTreeClassifier, max_depth=depth, time_limit=limit, **kwargs)
                    out.append((f"{label} d={depth}", limit, name, make))
            out.append((f"ort d={depth}", limit, "breast_cancer",
                        partial(OptimalTreeRegressor, max_depth=depth, time_limit=limit)))
    return out


def run(limits):
    data = datasets()
    rows = []
    header = ("case", "data", "limit", "fit", "build", "solver", "over", "over%", "presolve", "forked")
    print("{:24} {:14} {:>5} {:>7} {:>6} {:>6} {:>6} {:>6} {:>8} {:>6}  status".format(*header))
    for label, limit, name, make in cases(limits):
        X, y = data[name]
        if label.startswith("ort"):  # regression: the last feature from the others
            X, y = X[:, :10], X[:, 10]
        est = make()
        t0 = time.perf_counter()
        est.fit(X, y)
        fit_time = time.perf_counter() - t0
        build = est.result_.build_time
        over = fit_time - limit - build
        rows.append((over / limit, est.result_.termination == "time_limit"))
        presolve = est.result_.options.get("highs_presolve", "-")
        forked = {True: "yes", False: "no"}.get(est.result_.options.get("highs_isolated"), "-")
        print(f"{label:24} {name:14} {limit:5.0f} {fit_time:7.2f} {build:6.2f} {est.result_.solve_time:6.2f} "
              f"{over:6.2f} {over / limit:6.1%} {presolve:>8} {forked:>6}  {est.result_.status}", flush=True)
    frac = np.array([f for f, _ in rows])
    stopped = np.array([f for f, hit in rows if hit])
    print()
    for label, values in (("all fits", frac), ("fits stopped by the limit", stopped)):
        if values.size:
            print(f"overshoot / limit, {label} ({values.size}): min {values.min():.1%}, median "
                  f"{np.median(values):.1%}, p90 {np.quantile(values, 0.9):.1%}, max {values.max():.1%}; "
                  f"{int((values > TOLERANCE).sum())} above {TOLERANCE:.0%}")


def presolve_cases():
    """(label, data set name, depth, estimator keyword arguments) of the presolve measurements."""
    flow = [("wine", 2), ("digits[:300]", 2), ("digits[:600]", 2), ("breast_cancer", 2), ("generated n=1000", 2),
            ("generated n=2000", 2), ("wine", 3), ("digits[:600]", 3), ("breast_cancer", 3)]
    oct_ = [("breast_cancer", 2), ("digits[:600]", 2), ("breast_cancer", 3), ("digits[:600]", 3)]
    return ([("FlowOCT", name, depth, {}) for name, depth in flow]
            + [("OCT", name, depth, {"formulation": "oct", "feature_scaling": "rank"}) for name, depth in oct_]
            + [("OCT-H", "digits[:600]", 2, {"formulation": "oct-h"})])


def presolve_seconds(spec, presolve):
    """Seconds from HiGHS's ``run()`` to its first MIP callback (presolve and setup), no time limit."""
    h = compile_highs(spec)
    h.setOptionValue("presolve", "choose" if presolve else "off")
    h.setOptionValue("threads", 1)
    first = []

    def stop(e):
        if not first:
            first.append(time.perf_counter() - t0)
        e.data_in.user_interrupt = True

    h.cbMipInterrupt.subscribe(stop)
    t0 = time.perf_counter()
    h.run()
    return first[0] if first else time.perf_counter() - t0


def run_presolve():
    """Print each presolve case's size, predicted and measured seconds, and the fit over all cases."""
    data = datasets()
    digits = load_digits()
    data["digits[:300]"] = (digits.data[:300], digits.target[:300])
    for n in (1000, 2000):
        data[f"generated n={n}"] = make_classification(n_samples=n, n_features=20, n_informative=6, random_state=0)
    header = ("model", "data", "d", "rows", "columns", "non-zeros", "predicted", "presolve", "off", "ratio")
    print("{:8} {:17} {:>1} {:>8} {:>8} {:>10} {:>9} {:>8} {:>6} {:>6}".format(*header))
    work, seconds = [], []
    for label, name, depth, kwargs in presolve_cases():
        X, y = data[name]
        # a tiny limit: the model is built (est.model_), presolve switched off by the rule, the solve stops at once
        est = OptimalTreeClassifier(max_depth=depth, acceleration="none", time_limit=1e-3, **kwargs).fit(X, y)
        spec = est.model_
        size = (spec.n_rows, spec.n_cols, int(spec.to_csc().nnz))
        full, off = presolve_seconds(spec, True), presolve_seconds(spec, False)
        predicted = predicted_presolve_time(*size)
        work.append(size[1] * size[2] / size[0])
        seconds.append(full)
        print(f"{label:8} {name:17} {depth} {size[0]:8} {size[1]:8} {size[2]:10} {predicted:9.2f} {full:8.2f} "
              f"{off:6.2f} {full / predicted:6.2f}", flush=True)
    slope, intercept = np.polyfit(np.log(work), np.log(seconds), 1)
    residuals = np.log(seconds) - (intercept + slope * np.log(work))
    print(f"\nfit: {np.exp(intercept + slope * np.log(1e5)):.3g} s * (work / 1e5) ** {slope:.3g}; "
          f"measured / fitted {np.exp(residuals.min()):.2f}-{np.exp(residuals.max()):.2f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="limit 2 s only (default: 5 s and 10 s)")
    parser.add_argument("--presolve", action="store_true", help="measure presolve times instead (the rule's calibration)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # OCT scaling warnings and the like: not what is measured
    if args.presolve:
        run_presolve()
    else:
        run((2.0,) if args.quick else (5.0, 10.0))


if __name__ == "__main__":
    main()
