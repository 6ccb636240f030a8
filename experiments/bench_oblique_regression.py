"""Benchmark: OCT-H vs OCT vs CART (classification) and ORT / ORT-L vs CART (regression).

Classification on iris, wine and breast_cancer; regression on diabetes (all 331 training
rows, and a 100-row training subsample); depths 1 and 2; one 75/25 train/test split
(seed 0; stratified for classification); every MIP warm-started from greedy CART,
1 solver thread, the same time limit. Prints one table per task (time, status, gap,
train/test scores) and optionally writes the rows as JSON lines.

    python -m experiments.bench_oblique_regression                 # 60 s per solve (<= 25 min)
    python -m experiments.bench_oblique_regression --time-limit 10 --depths 1
"""

from __future__ import annotations

import argparse
import json
import time

from sklearn.metrics import mean_absolute_error, r2_score
from sklearn.model_selection import train_test_split

from greedy import CARTClassifier, CARTRegressor
from optitree import OptimalTreeClassifier, OptimalTreeRegressor, datasets

from .report import markdown_table

# (label, data set, training rows: None = 75 % of the data)
CLASSIFICATION = (("iris", "iris", None), ("wine", "wine", None), ("breast_cancer", "breast_cancer", None))
# ORT's big-M LP bound is weak: on all 331 training rows of diabetes not even depth 1 is proven
# within a minute, so a 100-row training subsample (the rest is the test set) is run as well
REGRESSION = (("diabetes", "diabetes", None), ("diabetes-100", "diabetes", 100))


def classifiers(depth: int, time_limit: float):
    mip = dict(max_depth=depth, time_limit=time_limit, threads=1, random_state=0)
    return {
        "cart": CARTClassifier(max_depth=depth, random_state=0),
        "oct": OptimalTreeClassifier(formulation="oct", **mip),
        "oct-h": OptimalTreeClassifier(formulation="oct-h", **mip),
    }


def regressors(depth: int, time_limit: float):
    mip = dict(max_depth=depth, time_limit=time_limit, threads=1, random_state=0)
    return {
        "cart (squared)": CARTRegressor(max_depth=depth, random_state=0),
        "cart (absolute)": CARTRegressor(criterion="absolute_error", max_depth=depth, random_state=0),
        "ort": OptimalTreeRegressor(**mip),
        "ort (squared)": OptimalTreeRegressor(loss="squared", **mip),
        "ort-l": OptimalTreeRegressor(leaf_model="linear", **mip),
    }


def run(name, estimator, split, task):
    X_tr, X_te, y_tr, y_te = split
    t0 = time.perf_counter()
    estimator.fit(X_tr, y_tr)
    seconds = time.perf_counter() - t0
    result = getattr(estimator, "result_", None)
    row = {
        "method": name, "time_s": seconds, "status": "greedy" if result is None else result.status,
        "gap": None if result is None else result.gap, "leaves": estimator.tree_.n_leaves,
    }
    if task == "classification":
        row.update(train_acc=estimator.score(X_tr, y_tr), test_acc=estimator.score(X_te, y_te))
    else:
        pred_tr, pred_te = estimator.predict(X_tr), estimator.predict(X_te)
        row.update(
            train_mae=mean_absolute_error(y_tr, pred_tr), test_mae=mean_absolute_error(y_te, pred_te),
            train_r2=r2_score(y_tr, pred_tr), test_r2=r2_score(y_te, pred_te),
        )
    return row


def table(rows, task) -> str:
    scores = ("train_acc", "test_acc") if task == "classification" else ("train_mae", "test_mae", "train_r2", "test_r2")
    cells = []
    for r in rows:
        cells.append([r["dataset"], r["depth"], r["method"], f"{r['time_s']:.1f}", r["status"],
                      "-" if r["gap"] is None else f"{r['gap']:.1%}", r["leaves"]])
        cells[-1] += [f"{r[s]:.3f}" if "acc" in s or "r2" in s else f"{r[s]:.1f}" for s in scores]
    return markdown_table(["dataset", "depth", "method", "time_s", "status", "gap", "leaves", *scores], cells)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=60.0, help="solver time limit per fit (s)")
    parser.add_argument("--depths", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--out", help="also write the rows as JSON lines to this file")
    args = parser.parse_args(argv)
    out = open(args.out, "w") if args.out else None
    for task, names, make in (("classification", CLASSIFICATION, classifiers), ("regression", REGRESSION, regressors)):
        rows = []
        for label, data, n_train in names:
            X, y, _ = datasets.load(data)
            split = train_test_split(
                X, y, train_size=n_train, test_size=None if n_train else 0.25, random_state=0,
                stratify=y if task == "classification" else None,
            )
            for depth in args.depths:
                for name, est in make(depth, args.time_limit).items():
                    row = {"dataset": label, "depth": depth, "n_train": len(split[2]), **run(name, est, split, task)}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    if out:
                        out.write(json.dumps(row) + "\n")
                        out.flush()
        print(f"\n{task} (time limit {args.time_limit:g} s, 1 thread, CART warm start)\n{table(rows, task)}\n", flush=True)
    if out:
        out.close()


if __name__ == "__main__":
    main()
