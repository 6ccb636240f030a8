"""Execute runs: load, split, (tune,) fit, evaluate, record; serially or through joblib/Dask.

Workers only *compute* records; the main process writes them (atomically, as
each run finishes), so the grid also runs on a Dask cluster whose workers share
no file system with the client.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from . import config as _config
from . import methods as _methods
from . import records as _records

BACKENDS = ("loky", "dask")


class HarnessError(RuntimeError):
    """A problem with how the harness was invoked (reported without a traceback, exit code 2)."""


class GridAborted(RuntimeError):
    """The execution backend failed mid-grid (e.g. a worker process died); finished runs are saved."""


# ---------------------------------------------------------------------------- data
CSV_DATASET = "csv"


def dataset_names() -> list[str]:
    """Built-in dataset names, plus ``"csv"`` (params ``path``, ``target``, ...: ``optitree.datasets.load_csv``)."""
    from optitree import datasets

    return sorted(datasets.list()) + [CSV_DATASET]


def load_dataset(name: str, params: dict):
    """``optitree.datasets.load(name, **params)`` (or ``load_csv(**params)``) -> ``(X, y, info)``, X float."""
    from optitree import datasets

    if name == CSV_DATASET:
        X, y, info = datasets.load_csv(**params)
    else:
        X, y, info = datasets.load(name, **params)
    return np.asarray(X, dtype=np.float64), np.asarray(y), info


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


def split_data(spec: _config.RunSpec, task: str) -> Split:
    """Load the run's data and split it with the run's seed.

    The test set is either ``test_size`` of the data (stratified for classification
    when every class has at least two members) or, with ``test_params``, a separate
    load. The validation set is ``validation_size`` of the *whole* data, taken
    from what remains after the test split.
    """
    from sklearn.model_selection import train_test_split

    d, s = spec.dataset, spec.split
    X, y, _ = load_dataset(d["name"], d["params"])
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
        X_test, y_test, _ = load_dataset(d["name"], {**d["params"], **d["test_params"]})
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


# ---------------------------------------------------------------------------- one run
def execute_run(spec: _config.RunSpec, force_single_thread: bool = False) -> dict:
    """Run one grid point and return its record; errors become a ``"failed"`` record, never an exception."""
    started, t0 = _records.utc_now(), time.perf_counter()
    record = {
        "format": _records.RECORD_FORMAT,
        "run_id": spec.run_id,
        "config": {**spec.identity, "dataset_label": spec.dataset_label, "method_label": spec.method_label},
        "status": "failed",
        "error": None,
        "started": started,
    }
    try:
        for module in spec.plugins:
            _config.import_plugin(module)
        method = _methods.get(spec.method["name"])
        record.update(kind=method.kind, task=method.task)
        record.update(_fit_and_evaluate(spec, method, force_single_thread))
        record["status"] = "done"
    except Exception as exc:  # the record is the error report
        record["error"] = {
            "type": type(exc).__name__,
            "message": str(exc),
            "traceback": traceback.format_exc(),
        }
    record["finished"] = _records.utc_now()
    record["duration"] = time.perf_counter() - t0
    record["environment"] = _records.environment_info()
    record["worker"] = {"pid": os.getpid()}
    return _records.to_jsonable(record)


def _fit_and_evaluate(spec: _config.RunSpec, method: _methods.Method, force_single_thread: bool) -> dict:
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


def _tune(method: _methods.Method, params: dict, spec: _config.RunSpec, data: Split) -> tuple[dict, list]:
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


# ---------------------------------------------------------------------------- the grid
@dataclass
class GridOutcome:
    total: int
    skipped: int
    done: int
    failed: int


def prepare_out_dir(out_dir: Path, experiment: _config.Experiment, resume: bool) -> dict[str, str]:
    """Create ``DIR/runs``; refuse a directory holding records unless resuming. Returns existing statuses."""
    out_dir = Path(out_dir)
    statuses = _records.record_statuses(out_dir)
    if statuses and not resume:
        raise HarnessError(
            f"{out_dir} already holds {len(statuses)} run record(s). Pass --resume to continue "
            f"(finished runs are skipped, failed runs retried), or choose another --out."
        )
    _records.runs_dir(out_dir).mkdir(parents=True, exist_ok=True)
    _records.remove_stale_temporaries(out_dir)
    _records.atomic_write_json(
        out_dir / "grid.json",
        {
            "name": experiment.name,
            "description": experiment.description,
            "config": experiment.source,
            "run_ids": [r.run_id for r in experiment.runs],
            "written": _records.utc_now(),
        },
    )
    return statuses


def run_grid(
    experiment: _config.Experiment,
    out_dir: Path,
    *,
    n_jobs: int | None = None,
    backend: str = "loky",
    scheduler: str | None = None,
    resume: bool = False,
    progress: bool = True,
) -> GridOutcome:
    """Run every not-yet-done run of ``experiment``, writing one record per run into ``out_dir``.

    ``n_jobs`` (joblib convention) defaults to 1 for loky, which runs in this
    process, and to -1 (every worker) for Dask. Any parallel execution forces
    solver threads to 1 (recorded per run).
    """
    if n_jobs is None:
        n_jobs = -1 if backend == "dask" else 1
    if backend not in BACKENDS:
        raise HarnessError(f"unknown backend {backend!r} (known: {', '.join(BACKENDS)})")
    if backend == "dask" and not scheduler:
        raise HarnessError("--backend dask needs --scheduler ADDRESS of a running Dask scheduler (tcp://host:8786)")
    if n_jobs == 0:
        raise HarnessError("--n-jobs must be a positive number or negative (joblib convention), not 0")
    out_dir = Path(out_dir)
    statuses = prepare_out_dir(out_dir, experiment, resume)
    todo = [r for r in experiment.runs if statuses.get(r.run_id) != "done"]
    skipped = len(experiment.runs) - len(todo)
    _say(
        f"{experiment.name}: {len(experiment.runs)} runs, {skipped} already done, {len(todo)} to run -> {out_dir}",
        progress,
    )
    done = failed = 0
    with _progress(len(todo), progress) as tick:
        try:
            for record in _execute_all(todo, n_jobs, backend, scheduler):
                record.setdefault("execution", {}).update(backend=backend, n_jobs=n_jobs, scheduler=scheduler)
                _records.write_record(out_dir, record)
                if record["status"] == "done":
                    done += 1
                else:
                    failed += 1
                tick(record)
        except (HarnessError, KeyboardInterrupt):
            raise
        except Exception as exc:  # a run's own errors are records; this is the backend itself failing
            raise GridAborted(
                f"the {backend} backend failed after {done + failed} of {len(todo)} runs: {type(exc).__name__}: "
                f"{exc}. Finished runs are saved; re-run with --resume."
            ) from exc
    return GridOutcome(len(experiment.runs), skipped, done, failed)


def _execute_all(todo: list, n_jobs: int, backend: str, scheduler: str | None) -> Iterator[dict]:
    if not todo:
        return
    if backend == "loky" and n_jobs == 1:
        for spec in todo:
            yield execute_run(spec)
        return
    from joblib import Parallel, delayed, parallel_config

    with contextlib.ExitStack() as stack:
        if backend == "dask":
            stack.enter_context(_dask_client(scheduler))  # joblib's dask backend uses the default client
            stack.enter_context(parallel_config(backend="dask", wait_for_workers_timeout=60))
        else:
            stack.enter_context(parallel_config(backend="loky"))
        parallel = Parallel(n_jobs=n_jobs, return_as="generator_unordered", batch_size=1, pre_dispatch="all")
        yield from parallel(delayed(execute_run)(spec, True) for spec in todo)


@contextlib.contextmanager
def _dask_client(address: str):
    try:
        from distributed import Client
    except ImportError:
        raise HarnessError(
            "the dask backend needs dask.distributed, which is not installed: pip install 'optitree[dask]'"
        ) from None
    try:
        client = Client(address, timeout="30s", set_as_default=True)
    except (OSError, TimeoutError) as exc:
        raise HarnessError(f"cannot connect to the Dask scheduler at {address}: {exc}") from None
    try:
        yield client
    finally:
        client.close()


def _say(message: str, enabled: bool) -> None:
    if enabled:
        print(message, file=sys.stderr, flush=True)


@contextlib.contextmanager
def _progress(total: int, enabled: bool):
    """A tick(record) callable: tqdm bar when installed, else one stderr line per finished run."""
    if not enabled or total == 0:
        yield lambda record: None
        return
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    if tqdm is not None:
        bar = tqdm(total=total, unit="run", file=sys.stderr, dynamic_ncols=True)

        def tick(record):
            bar.set_postfix_str(_short(record), refresh=False)
            bar.update(1)

        try:
            yield tick
        finally:
            bar.close()
        return
    count = itertools.count(1)

    def tick(record):
        print(f"[{next(count)}/{total}] {_short(record)}", file=sys.stderr, flush=True)

    yield tick


def _short(record: dict) -> str:
    c = record["config"]
    return f"{c['dataset_label']} d={c['depth']} {c['method_label']} s={c['seed']}: {record['status']}"
