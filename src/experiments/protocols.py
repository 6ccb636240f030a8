"""Experiment protocols: how one run turns a dataset and a method into measurements.

A run is (dataset, method, protocol). A :class:`Protocol` gets the run's spec, its
:class:`~experiments.methods.Method` and whether solver threads are forced to 1,
and returns the protocol's part of the run record (``data``, ``metrics``, ``tree``,
``solver``, ...; see :class:`~experiments.records.RunRecord`).

Registered:

* ``"holdout"`` (default): the split/score/tune protocol configured by the ``[split]`` table;
* ``"cv"``: k-fold cross-validation (``[cv]`` table; stratified for classification). Every
  fold is its own run and record (resume works fold by fold); each seed in ``seeds`` is one
  repetition with its own shuffle, so several seeds make repeated k-fold;
* ``"nested-cv"``: as ``"cv"``, and a method entry's ``tune`` grid (its parameters and
  ``depth``) is chosen by an inner k-fold on the outer training part, then refit on it.

A protocol with ``units`` expands a grid point into several runs: ``units(settings)``
returns the identity entries of each (``[{"fold": 0}, ...]``). Adding a protocol::

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
    """A registered protocol: ``evaluate(spec, method, force_single_thread) -> dict`` of record fields.

    ``settings`` names the config table the protocol reads (``"split"`` or ``"cv"``);
    ``units(settings) -> list[dict]`` (optional) the runs one grid point becomes, each
    dict merged into the run's identity (e.g. ``{"fold": 3}``); ``tunes`` how a method's
    ``tune`` grid is chosen (``"validation"`` set, ``"inner-cv"``, or None: no tuning).
    """

    name: str
    description: str
    evaluate: Callable[[Any, Any, bool], dict]
    settings: str = "split"
    units: Callable[[dict], list] | None = None
    tunes: str | None = "validation"


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


# ---------------------------------------------------------------------------- the data a run sees
def load_data(spec, params: dict | None = None):
    """The run's rows as the methods receive them: ``(X, y, n_dropped)``, ``X`` a pandas DataFrame
    (:func:`experiments.datasets.load_frame`: feature names, categoricals, NaN), after the dataset's
    ``missing`` option ``"drop"`` (rows with NaN removed; ``n_dropped`` of them). ``params``: the
    loader parameters (default: the dataset's)."""
    d = spec.dataset
    missing = spec.missing  # validated: a ValueError naming the dataset and the allowed values
    X, y, _ = _datasets.load_frame(d["name"], d["params"] if params is None else params, root=spec.root)
    n_dropped = 0
    if missing == "drop":
        X, y, n_dropped = _datasets.drop_missing(X, y)
    return X, y, n_dropped


def data_notes(spec, method, X, n_dropped: int, n_missing: int) -> dict:
    """The record's description of the data: feature names, categorical columns and their
    categories, the ``missing`` option, NaN cells and dropped rows, the input form."""
    categorical = _datasets.categorical_columns(X)
    return {
        "feature_names": [str(c) for c in X.columns],
        "categorical": categorical,
        "categories": {c: np.asarray(X[c].cat.categories, dtype=object).tolist() for c in categorical},
        "missing": spec.missing,
        "n_missing": int(n_missing),
        "n_dropped": int(n_dropped),
        "input": method.input,
    }


def prepare(method, missing: str, X_fit, *X_eval):
    """The data of one fit: ``(X_fit, [X_eval...], imputation)``.

    With ``missing="impute"`` the NaN of every part are filled from ``X_fit``'s statistics
    alone (median / most frequent category: :func:`experiments.datasets.imputation_values`),
    so nothing of an evaluation part leaks into the fit; ``imputation`` then says what was
    filled (else None). Then each part is put in the method's input form (a DataFrame, or
    float64 codes for ``input="numpy"`` methods).
    """
    imputation = None
    if missing == "impute":
        fill = _datasets.imputation_values(X_fit)
        nan_fit = X_fit.isna()
        nan_eval = [None if X is None else X.isna() for X in X_eval]
        touched = nan_fit.any(axis=0)
        for nan in nan_eval:
            if nan is not None:
                touched |= nan.any(axis=0)
        imputation = {
            "values": {str(c): fill[c] for c in X_fit.columns[touched.to_numpy()]},
            "n_fit": int(nan_fit.to_numpy().sum()),
            "n_eval": int(sum(nan.to_numpy().sum() for nan in nan_eval if nan is not None)),
        }
        X_fit = _datasets.impute(X_fit, fill)
        X_eval = tuple(None if X is None else _datasets.impute(X, fill) for X in X_eval)
    if method.input == "numpy":
        X_fit = _datasets.to_array(X_fit)
        X_eval = tuple(None if X is None else _datasets.to_array(X) for X in X_eval)
    return X_fit, list(X_eval), imputation


def _attach(exc: BaseException, **fields) -> None:
    """Keep what a run knew before it failed (its data notes) on the exception, for its failed record."""
    try:
        exc.record_fields = {**fields, **getattr(exc, "record_fields", {})}
    except AttributeError:  # pragma: no cover - an exception type without attributes
        pass


# ---------------------------------------------------------------------------- holdout: data
@dataclass
class Split:
    """The run's data parts (pandas DataFrames); validation and test parts are None when the config has none.

    ``n_dropped``: rows dropped for NaN (``missing = "drop"``); ``n_missing``: NaN cells left in all parts.
    """

    X_train: Any
    y_train: np.ndarray
    X_val: Any | None
    y_val: np.ndarray | None
    X_test: Any | None
    y_test: np.ndarray | None
    stratified: bool
    n_dropped: int = 0
    n_missing: int = 0


def split_data(spec, task: str) -> Split:
    """Load the run's data and split it with the run's seed.

    The test set is either ``test_size`` of the data (stratified for classification
    when every class has at least two members) or, with ``test_params``, a separate
    load. The validation set is ``validation_size`` of the *whole* data, taken
    from what remains after the test split. ``missing = "drop"`` drops rows with NaN
    before splitting (:func:`load_data`).
    """
    from sklearn.model_selection import train_test_split

    d, s = spec.dataset, spec.split
    X, y, n_dropped = load_data(spec)
    n_missing = int(X.isna().to_numpy().sum())
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
        X_test, y_test, test_dropped = load_data(spec, {**d["params"], **d["test_params"]})
        n_dropped += test_dropped
        n_missing += int(X_test.isna().to_numpy().sum())
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
    return Split(X_train, y_train, X_val, y_val, X_test, y_test, stratified, n_dropped, n_missing)


def score(task: str, y_true, y_pred) -> dict:
    """Accuracy (classification) or R² and MSE (regression)."""
    from sklearn.metrics import accuracy_score, mean_squared_error, r2_score

    if task == "classification":
        return {"accuracy": float(accuracy_score(y_true, y_pred))}
    return {"r2": float(r2_score(y_true, y_pred)), "mse": float(mean_squared_error(y_true, y_pred))}


def _main_score(task: str, scores: dict) -> float:
    return scores["accuracy"] if task == "classification" else scores["r2"]


# ---------------------------------------------------------------------------- shared by the protocols
TUNE_DEPTH = "depth"  # a `tune` key handled by the harness: the tree's maximum depth (<= the run's depth)


def _run_params(spec, method, force_single_thread: bool) -> tuple[dict, dict]:
    """The method's parameters for this run and the execution notes (threads forced to 1 or not)."""
    params = dict(spec.method["params"])
    threads_forced = force_single_thread and params.get("threads", 1) != 1
    if force_single_thread and "threads" in method.params:
        params["threads"] = 1
    execution = {"force_single_thread": force_single_thread, "threads_forced": threads_forced}
    return params, execution


def make_estimator(method, params: dict, candidate: dict, depth: int, seed: int):
    """An unfitted estimator of ``params`` updated by a tuning ``candidate`` (whose ``depth`` replaces the run's)."""
    candidate = dict(candidate)
    depth = int(candidate.pop(TUNE_DEPTH, depth))
    return method.make({**params, **candidate}, depth, seed)


def certificate_of(estimator) -> str | None:
    """What settled an optimal fit: ``"engine"`` (the exact engine, no MIP), ``"mip"`` (a MIP solve
    proved it), ``"bounds"``/``"engine bound"``/``"decomposition"`` (the engine's certificate
    types), ``"unproven"`` (stopped by a limit), or None for a greedy fit."""
    result = getattr(estimator, "result_", None)
    if result is None:
        return None
    certificate = (result.acceleration or {}).get("certificate")
    if certificate:
        return str(certificate)
    return "mip" if result.proven_optimal else "unproven"


def fit_and_score(method, estimator, X_fit, y_fit, X_test, y_test, missing: str = "native") -> dict:
    """Fit, score on the fitting data and (if any) the test data; the record fields of the final fit.

    ``X_fit``/``X_test`` are DataFrames (:func:`load_data`), put in the method's form by
    :func:`prepare` (imputed from ``X_fit`` alone with ``missing="impute"``; the returned
    ``"imputation"`` entry says what was filled, None otherwise).
    """
    X_fit, (X_test,), imputation = prepare(method, missing, X_fit, X_test)
    t = time.perf_counter()
    estimator.fit(X_fit, y_fit)
    fit_time = time.perf_counter() - t
    tree = method.tree_of(estimator)
    metrics = {f"train_{k}": v for k, v in score(method.task, y_fit, estimator.predict(X_fit)).items()}
    if y_test is not None:
        metrics.update({f"test_{k}": v for k, v in score(method.task, y_test, estimator.predict(X_test)).items()})
    metrics.update(n_fit=len(y_fit), n_leaves=int(tree.n_leaves), depth=int(tree.max_depth), fit_time=fit_time)
    out = {"metrics": metrics, "tree": tree.to_dict(), "imputation": imputation}
    if method.task == "classification":
        out["classes"] = np.asarray(estimator.classes_).tolist()
    result = getattr(estimator, "result_", None)
    solver = result.to_dict() if result is not None else None
    if solver is not None:
        solver["certificate"] = certificate_of(estimator)
    out["solver"] = solver
    init_tree = getattr(estimator, "init_tree_", None)
    out["init_tree"] = init_tree.to_dict() if init_tree is not None else None
    return out


def _candidates(grid: dict, depth: int) -> list[dict]:
    """Every combination of a tune grid; ``depth`` values above the run's depth are left out.

    Raises
    ------
    ValueError
        When every ``depth`` candidate exceeds the run's depth (the config refuses such a grid).
    """
    keys = list(grid)
    values = [[v for v in grid[k] if k != TUNE_DEPTH or v <= depth] for k in keys]
    if TUNE_DEPTH in grid and not values[keys.index(TUNE_DEPTH)]:
        raise ValueError(f"tune grid {TUNE_DEPTH!r}: every candidate {grid[TUNE_DEPTH]} exceeds the run's depth {depth}")
    return [dict(zip(keys, combo)) for combo in itertools.product(*values)]


def _best(task: str, trials: list) -> dict:
    """The best trial: highest mean validation score; ties to fewer leaves, then to the candidate
    that comes last in sorted order (the larger penalty: the simpler model)."""
    def key(item):
        order, trial = item
        return (-_main_score(task, trial["validation"]), trial["n_leaves"], -order)

    return min(enumerate(trials), key=key)[1]["params"]


# ---------------------------------------------------------------------------- holdout: evaluation
def holdout(spec, method, force_single_thread: bool) -> dict:
    """Split, tune on validation (if the method entry has ``tune``), refit on train+validation, score."""
    import pandas as pd

    params, execution = _run_params(spec, method, force_single_thread)
    data = split_data(spec, method.task)
    out: dict = {
        "execution": execution,
        "data": {
            "n_train": len(data.y_train),
            "n_validation": None if data.y_val is None else len(data.y_val),
            "n_test": None if data.y_test is None else len(data.y_test),
            "n_features": data.X_train.shape[1],
            "n_classes": int(len(np.unique(data.y_train))) if method.task == "classification" else None,
            "stratified": data.stratified,
            **data_notes(spec, method, data.X_train, data.n_dropped, data.n_missing),
        },
    }
    try:
        chosen: dict = {}
        if "tune" in spec.method:
            chosen, trials = _tune(method, params, spec, data)
            out["tuning"] = {"chosen": chosen, "trials": trials}
        X_fit, y_fit = data.X_train, data.y_train
        if data.y_val is not None:  # the final fit (after tuning, if any) uses train + validation
            X_fit, y_fit = pd.concat([data.X_train, data.X_val]), np.concatenate([data.y_train, data.y_val])
        execution["params"] = {**params, **{k: v for k, v in chosen.items() if k != TUNE_DEPTH}}
        estimator = make_estimator(method, params, chosen, spec.depth, spec.seed)
        fields = fit_and_score(method, estimator, X_fit, y_fit, data.X_test, data.y_test, spec.missing)
    except Exception as exc:
        _attach(exc, execution=execution, data=out["data"])
        raise
    out["data"]["imputation"] = fields.pop("imputation")
    out.update(fields)
    return out


def _tune(method, params: dict, spec, data: Split) -> tuple[dict, list]:
    """Fit every candidate on train, score on validation; :func:`_best` picks the winner."""
    trials = []
    for candidate in _candidates(spec.method["tune"], spec.depth):
        estimator = make_estimator(method, params, candidate, spec.depth, spec.seed)
        X_train, (X_val,), _ = prepare(method, spec.missing, data.X_train, data.X_val)
        t = time.perf_counter()
        estimator.fit(X_train, data.y_train)
        fit_time = time.perf_counter() - t
        val = score(method.task, data.y_val, estimator.predict(X_val))
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
    return _best(method.task, trials), trials


register(Protocol(DEFAULT, "train/test split (optional validation set for tuning), scored on both", holdout))


# ---------------------------------------------------------------------------- cross-validation
CV_DEFAULTS = {"folds": 5, "inner_folds": 3, "stratify": True}


def cv_units(settings: dict) -> list[dict]:
    """One run per outer fold."""
    return [{"fold": f} for f in range(settings["folds"])]


def fold_indices(y, task: str, folds: int, seed: int, stratify: bool) -> tuple[list, bool]:
    """The ``folds`` (train, test) index pairs of a shuffled k-fold with ``random_state=seed``.

    Stratified for classification when ``stratify`` and every class has at least ``folds``
    members (else plain k-fold; the second value says which). The partition depends only on
    the data, ``folds``, ``seed`` and ``stratify``: every method of a grid point sees the same
    folds, so their scores pair up fold by fold.
    """
    from sklearn.model_selection import KFold, StratifiedKFold

    if folds > len(y):
        raise ValueError(f"{folds}-fold cross-validation needs at least {folds} rows, got {len(y)}")
    stratified = False
    if task == "classification" and stratify:
        _, counts = np.unique(y, return_counts=True)
        stratified = bool(counts.min() >= folds)
    splitter = (StratifiedKFold if stratified else KFold)(n_splits=folds, shuffle=True, random_state=seed)
    return list(splitter.split(np.zeros((len(y), 1)), y if stratified else None)), stratified


def fold_data(spec, task: str):
    """A CV run's rows: ``(X, y, (train, test), stratified, n_dropped)``; ``X`` a DataFrame after
    ``missing = "drop"`` (:func:`load_data`), the fold's index pair over its rows."""
    cv = spec.identity["cv"]
    X, y, n_dropped = load_data(spec)
    pairs, stratified = fold_indices(y, task, cv["folds"], spec.seed, cv["stratify"])
    return X, y, pairs[spec.identity["fold"]], stratified, n_dropped


def _fold_record(spec, method, force_single_thread: bool, nested: bool) -> dict:
    params, execution = _run_params(spec, method, force_single_thread)
    cv = spec.identity["cv"]
    fold = spec.identity["fold"]
    X, y, (train, test), stratified, n_dropped = fold_data(spec, method.task)
    X_train, y_train, X_test, y_test = X.iloc[train], y[train], X.iloc[test], y[test]
    out: dict = {
        "execution": execution,
        "data": {
            "n_train": len(train),
            "n_validation": None,
            "n_test": len(test),
            "n_features": X.shape[1],
            "n_classes": int(len(np.unique(y))) if method.task == "classification" else None,
            "stratified": stratified,
            "fold": fold,
            "folds": cv["folds"],
            "repeat": spec.seed,
            **data_notes(spec, method, X, n_dropped, int(X.isna().to_numpy().sum())),
        },
    }
    try:
        chosen: dict = {}
        if nested and "tune" in spec.method:
            chosen, trials, inner_stratified = _tune_inner(method, params, spec, X_train, y_train)
            out["tuning"] = {"chosen": chosen, "trials": trials, "inner_folds": cv["inner_folds"],
                             "inner_stratified": inner_stratified}
        execution["params"] = {**params, **{k: v for k, v in chosen.items() if k != TUNE_DEPTH}}
        estimator = make_estimator(method, params, chosen, spec.depth, spec.seed)
        fields = fit_and_score(method, estimator, X_train, y_train, X_test, y_test, spec.missing)
    except Exception as exc:
        _attach(exc, execution=execution, data=out["data"])
        raise
    out["data"]["imputation"] = fields.pop("imputation")
    out.update(fields)
    return out


def _tune_inner(method, params: dict, spec, X, y) -> tuple[dict, list, bool]:
    """Every candidate fitted on each inner training part and scored on its validation fold;
    the best mean validation score wins (:func:`_best`)."""
    cv = spec.identity["cv"]
    pairs, stratified = fold_indices(y, method.task, cv["inner_folds"], spec.seed, cv["stratify"])
    trials = []
    for candidate in _candidates(spec.method["tune"], spec.depth):
        scores, leaves, times, unproven = [], [], [], 0
        for inner_train, inner_val in pairs:
            estimator = make_estimator(method, params, candidate, spec.depth, spec.seed)
            X_fit, (X_val,), _ = prepare(method, spec.missing, X.iloc[inner_train], X.iloc[inner_val])
            t = time.perf_counter()
            estimator.fit(X_fit, y[inner_train])
            times.append(time.perf_counter() - t)
            scores.append(score(method.task, y[inner_val], estimator.predict(X_val)))
            leaves.append(int(method.tree_of(estimator).n_leaves))
            result = getattr(estimator, "result_", None)
            unproven += int(result is not None and not result.proven_optimal)
        validation = {k: float(np.mean([s[k] for s in scores])) for k in scores[0]}
        trials.append({"params": candidate, "validation": validation, "n_leaves": float(np.mean(leaves)),
                       "fit_time": float(np.sum(times)), "unproven_fits": unproven})
    return _best(method.task, trials), trials, stratified


def cross_validation(spec, method, force_single_thread: bool) -> dict:
    """One outer fold: fit on the other folds, score on this one (no tuning)."""
    return _fold_record(spec, method, force_single_thread, nested=False)


def nested_cross_validation(spec, method, force_single_thread: bool) -> dict:
    """One outer fold: tune on inner folds of its training part, refit on all of it, score on this fold."""
    return _fold_record(spec, method, force_single_thread, nested=True)


register(Protocol("cv", "k-fold cross-validation ([cv] folds), stratified for classification; one run per fold; "
                  "each seed one repetition (several seeds: repeated k-fold)", cross_validation,
                  settings="cv", units=cv_units, tunes=None))
register(Protocol("nested-cv", "as cv, with each method's `tune` grid (params and depth) chosen by an inner "
                  "k-fold ([cv] inner_folds) on the outer training part", nested_cross_validation,
                  settings="cv", units=cv_units, tunes="inner-cv"))
