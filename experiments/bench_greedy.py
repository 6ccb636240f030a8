"""Benchmark of greedy CART against scikit-learn's DecisionTreeClassifier, measured in one run.

    python -m experiments.bench_greedy                  # n = 10^4 and 10^5
    python -m experiments.bench_greedy --sizes 1e4 1e5 1e6
    python -m experiments.bench_greedy --repeat 3       # best of 3 fits per mode and size

Data: ``n`` samples x 20 uniform features, binary labels from a noisy non-linear rule on
four of them (learnable signal, no exact ties); depth-8 trees, Gini. For every mode the
script prints the fit time, its ratio to scikit-learn's fit time measured in the same run,
the held-out accuracy, and the fraction of held-out predictions equal to scikit-learn's.

A *mode* is a name and a function ``fit(X, y) -> fitted estimator``; add one to ``MODES``
to benchmark another split search (e.g. histogram mode).
"""

import argparse
import time

import numpy as np
from sklearn.tree import DecisionTreeClassifier

from greedy import CARTClassifier

N_FEATURES, DEPTH = 20, 8


def make_data(n: int, seed: int = 0):
    rng = np.random.RandomState(seed)
    X = rng.rand(n, N_FEATURES)
    signal = X[:, 0] + X[:, 1] * X[:, 2] + np.sin(6 * X[:, 3]) / 3
    y = (signal + 0.3 * rng.randn(n) > np.median(signal)).astype(int)
    return X, y


MODES = {
    "scikit-learn": lambda X, y: DecisionTreeClassifier(max_depth=DEPTH, random_state=0).fit(X, y),
    "greedy exact": lambda X, y: CARTClassifier(max_depth=DEPTH).fit(X, y),
    # histogram search: binning at 255 quantiles included in the fit time
    "greedy hist": lambda X, y: CARTClassifier(max_depth=DEPTH, splitter="hist").fit(X, y),
    # best-first growth (max_leaf_nodes = 64) with either split search; ratio and agreement are
    # still against the depth-8 scikit-learn tree
    "greedy exact bf": lambda X, y: CARTClassifier(max_leaf_nodes=2**DEPTH // 4).fit(X, y),
    "greedy hist bf": lambda X, y: CARTClassifier(max_leaf_nodes=2**DEPTH // 4, splitter="hist").fit(X, y),
}
REFERENCE = "scikit-learn"


def best_fit_time(fit, X, y, repeat: int):
    best, est = np.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        est = fit(X, y)
        best = min(best, time.perf_counter() - start)
    return best, est


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e4, 1e5])
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args(argv)
    print(f"{'n':>9} {'mode':<16} {'fit s':>8} {'ratio':>6} {'accuracy':>9} {'agree':>7}")
    for n in (int(s) for s in args.sizes):
        X, y = make_data(n, seed=0)
        X_test, y_test = make_data(20_000, seed=1)
        results = {name: best_fit_time(fit, X, y, args.repeat) for name, fit in MODES.items()}
        ref_time, ref_est = results[REFERENCE]
        ref_pred = ref_est.predict(X_test)
        for name, (seconds, est) in results.items():
            pred = est.predict(X_test)
            print(f"{n:>9} {name:<16} {seconds:>8.3f} {seconds / ref_time:>6.2f} {np.mean(pred == y_test):>9.4f} "
                  f"{np.mean(pred == ref_pred):>7.4f}")


if __name__ == "__main__":
    main()
