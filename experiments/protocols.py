"""Experiment protocols: how one run turns a dataset and a method into measurements.

A run is (dataset, method, protocol). A :class:`Protocol` gets the run's spec, its
:class:`~experiments.methods.Method` and whether solver threads are forced to 1,
and returns the protocol's part of the run record (``data``, ``metrics``, ``tree``,
``solver``, ...; see :class:`~experiments.records.RunRecord`).

The default protocol, ``"holdout"``, is the split/score/tune protocol configured by
the ``[split]`` table. Adding a protocol::

    register(Protocol("cv5", "5-fold cross-validation", evaluate=my_evaluate))

and ``protocol = "cv5"`` in a config. The default protocol does not enter run ids,
so configs written before protocols existed keep theirs.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from . import datasets as _datasets

DEFAULT = "holdout"


@dataclass(frozen=True)
class Protocol:
    """A registered protocol: ``evaluate(spec, method, force_single_thread) -> dict`` of record fields."""

    name: str
    description: str
    evaluate: Callable[[Any, Any, bool], dict]


PROTOCOLS: dict[str, Protocol] = {}


def register(protocol: Protocol, *, replace: bool = False) -> Protocol:
    """Add ``protocol`` to the registry (``replace=True`` to redefine an existing name)."""
    if protocol.name in PROTOCOLS and not replace:
        raise ValueError(f"a protocol named {protocol.name!r} is already registered")
    PROTOCOLS[protocol.name] = protocol
    return protocol


def get(name: str) -> Protocol:
    try:
        return PROTOCOLS[name]
    except KeyError:
        raise ValueError(f"unknown protocol {name!r} (known: {', '.join(sorted(PROTOCOLS))})") from None


# ---------------------------------------------------------------------------- holdout: data
@dataclass
class Split:
    """The run's data parts; validation and test parts are None when the config has none."""

    X_train: np.ndarray
    y_train: np.ndarray
    X_val: np.ndarray | None
    y_val: np.ndarray | None
    X_test: np.ndarray | None
    y_test: np.ndarray | None
    stratified: bool


def split_data(spec, task: str) -> Split:
    """Load the run's data and split it with the run's seed.

    The test set is either ``test_size`` of the data (stratified for classification
    when every class has at least two members) or, with ``test_params``, a separate
    load. The validation set is ``validation_size`` of the *whole* data, taken
    from what remains after the test split.
    """
    from sklearn.model_selection import train_test_split

    d, s = spec.dataset, spec.split
    X, y, _ = _datasets.load_dataset(d["name"], d["params"])
    seed = spec.seed
    stratified = True

    def cut(X, y, size):
        nonlocal stratified
        strat = None
        if task == "classification" and s["stratify"]:
            _, counts = np.unique(y, return_counts=True)
            n_out = int(np.ceil(size * len(y)))
            if counts.min() >= 2 and len(counts) <= n_out <= len(y) - len(counts):
                strat = y
        stratified &= strat is not None
        return train_test_split(X, y, test_size=size, random_state=seed, stratify=strat)

    if "test_params" in d:
        X_test, y_test, _ = _datasets.load_dataset(d["name"], {**d["params"], **d["test_params"]})
        rest_X, rest_y = X, y
        val_fraction = s["validation_size"]
    elif s["test_size"] > 0:
        rest_X, X_test, rest_y, y_test = cut(X, y, s["test_size"])
        val_fraction = s["validation_size"] / (1.0 - s["test_size"])
    else:
        rest_X, rest_y, X_test, y_test = X, y, None, None
        val_fraction = s["validation_size"]
    if val_fraction > 0:
        X_train, X_val, y_train, y_val = cut(rest_X, rest_y, val_fraction)
    else:
        X_train, y_train, X_val, y_val = rest_X, rest_y, None, None
    return Split(X_train, y_train, X_val, y_val, X_test, y_test, stratified)


def score(task: str, y_true, y_pred) -> dict:
    """Accuracy (classification) or R² and MSE (regression)."""
    from sklearn.metrics import accuracy_score, mean_squared_error, r2_score

    if task == "classification":
        return {"accuracy": float(accuracy_score(y_true, y_pred))}
    return {"r2": float(r2_score(y_true, y_pred)), "mse": float(mean_squared_error(y_true, y_pred))}


def _main_score(task: str, scores: dict) -> float:
    return scores["accuracy"] if task == "classification" else scores["r2"]


# ---------------------------------------------------------------------------- holdout: evaluation
def holdout(spec, method, force_single_thread: bool) -> dict:
    """Split, tune on validation (if the method entry has ``tune``), refit on train+validation, score."""
    params = dict(spec.method["params"])
    threads_forced = force_single_thread and params.get("threads", 1) != 1
    if force_single_thread and "threads" in method.params:
        params["threads"] = 1
    data = split_data(spec, method.task)
    out: dict = {
        "execution": {"force_single_thread": force_single_thread, "threads_forced": threads_forced},
        "data": {
            "n_train": len(data.y_train),
            "n_validation": None if data.y_val is None else len(data.y_val),
            "n_test": None if data.y_test is None else len(data.y_test),
            "n_features": data.X_train.shape[1],
            "n_classes": int(len(np.unique(data.y_train))) if method.task == "classification" else None,
            "stratified": data.stratified,
        },
    }
    if "tune" in spec.method:
        chosen, trials = _tune(method, params, spec, data)
        params.update(chosen)
        out["tuning"] = {"chosen": chosen, "trials": trials}
    X_fit, y_fit = data.X_train, data.y_train
    if data.y_val is not None:  # the final fit (after tuning, if any) uses train + validation
        X_fit, y_fit = np.vstack([data.X_train, data.X_val]), np.concatenate([data.y_train, data.y_val])
    out["execution"]["params"] = params

    estimator = method.make(params, spec.depth, spec.seed)
    t = time.perf_counter()
    estimator.fit(X_fit, y_fit)
    fit_time = time.perf_counter() - t
    tree = method.tree_of(estimator)
    metrics = {f"train_{k}": v for k, v in score(method.task, y_fit, estimator.predict(X_fit)).items()}
    if data.y_test is not None:
        metrics.update({f"test_{k}": v for k, v in score(method.task, data.y_test, estimator.predict(data.X_test)).items()})
    metrics.update(n_fit=len(y_fit), n_leaves=int(tree.n_leaves), depth=int(tree.max_depth), fit_time=fit_time)
    out.update(metrics=metrics, tree=tree.to_dict())
    if method.task == "classification":
        out["classes"] = np.asarray(estimator.classes_).tolist()
    result = getattr(estimator, "result_", None)
    out["solver"] = result.to_dict() if result is not None else None
    init_tree = getattr(estimator, "init_tree_", None)
    out["init_tree"] = init_tree.to_dict() if init_tree is not None else None
    return out


def _tune(method, params: dict, spec, data: Split) -> tuple[dict, list]:
    """Fit every candidate on train, score on validation.

    The best validation score wins; ties go to fewer leaves, then to the candidate
    that comes last in sorted order (the larger penalty: the simpler model).
    """
    grid = spec.method["tune"]
    keys = list(grid)
    trials, best, best_key = [], None, None
    for order, combo in enumerate(itertools.product(*(grid[k] for k in keys))):
        candidate = dict(zip(keys, combo))
        estimator = method.make({**params, **candidate}, spec.depth, spec.seed)
        t = time.perf_counter()
        estimator.fit(data.X_train, data.y_train)
        fit_time = time.perf_counter() - t
        val = score(method.task, data.y_val, estimator.predict(data.X_val))
        n_leaves = int(method.tree_of(estimator).n_leaves)
        result = getattr(estimator, "result_", None)
        trials.append(
            {
                "params": candidate,
                "validation": val,
                "n_leaves": n_leaves,
                "fit_time": fit_time,
                "solver_status": None if result is None else result.status,
            }
        )
        key = (-_main_score(method.task, val), n_leaves, -order)
        if best_key is None or key < best_key:
            best, best_key = candidate, key
    return best, trials


register(Protocol(DEFAULT, "train/test split (optional validation set for tuning), scored on both", holdout))
