"""Execute runs and grids: one run through its protocol into a record; a grid serially, in
local worker processes, or on a Dask cluster.

Workers only *compute* records; the main process writes them (atomically, as
each run finishes), so the grid also runs on a Dask cluster whose workers share
no file system with the client.

A results directory is bound to one config: ``grid.json`` holds its fingerprint
(a hash of its run ids) and a resume with another config is refused.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from . import config as _config
from . import methods as _methods
from . import pool as _pool
from . import progress as _progress
from . import protocols as _protocols
from . import records as _records

BACKENDS = ("loky", "dask")  # "loky": local worker processes (see experiments.pool), the name kept for old scripts


class HarnessError(RuntimeError):
    """A problem with how the harness was invoked (reported without a traceback, exit code 2)."""


class GridAborted(RuntimeError):
    """The execution backend failed mid-grid (e.g. the Dask scheduler vanished); finished runs are saved."""


class ResultsWriteError(RuntimeError):
    """A record could not be written (full disk, read-only directory); finished records are intact."""


class GridInterrupted(BaseException):
    """SIGINT or SIGTERM stopped the grid; ``signum`` says which. Finished records are kept."""

    def __init__(self, signum: int, finished: int = 0):
        self.signum = signum
        self.finished = finished
        super().__init__(signal.Signals(signum).name)


# ---------------------------------------------------------------------------- one run
def _new_record(spec: _config.RunSpec) -> _records.RunRecord:
    return _records.RunRecord(
        run_id=spec.run_id,
        config={**spec.identity, "dataset_label": spec.dataset_label, "method_label": spec.method_label},
        started=_records.utc_now(),
    )


def execute_run(spec: _config.RunSpec, force_single_thread: bool = False) -> _records.RunRecord:
    """Run one grid point through its protocol; errors become a ``"failed"`` record, never an exception."""
    t0 = time.perf_counter()
    record = _new_record(spec)
    try:
        for module in spec.plugins:
            _config.import_plugin(module)
        method = _methods.get(spec.method["name"])
        record.kind, record.task = method.kind, method.task
        fields = _protocols.get(spec.protocol).evaluate(spec, method, force_single_thread)
        for key, value in fields.items():
            setattr(record, key, value)
        record.status = "done"
    except Exception as exc:  # the record is the error report
        for key, value in getattr(exc, "record_fields", {}).items():  # what the run knew: its data notes
            setattr(record, key, value)
        record.error = {"type": type(exc).__name__, "message": str(exc), "traceback": traceback.format_exc()}
    record.finished = _records.utc_now()
    record.duration = time.perf_counter() - t0
    record.environment = _records.environment_info()
    record.worker = {"pid": os.getpid()}
    return _records.RunRecord.from_dict(record.to_dict())  # plain JSON values from here on


def _parallel_run(spec: _config.RunSpec) -> _records.RunRecord:
    return execute_run(spec, True)


def died_record(spec: _config.RunSpec, reason: str) -> _records.RunRecord:
    """The record of a run whose worker process died (e.g. killed by the OS for memory)."""
    record = _new_record(spec)
    record.error = {"type": "WorkerDied", "message": reason, "traceback": None}
    record.finished = _records.utc_now()
    return record


# ---------------------------------------------------------------------------- the grid
@dataclass
class GridOutcome:
    total: int
    skipped: int
    done: int
    failed: int


def prepare_out_dir(out_dir: Path, experiment: _config.Experiment, resume: bool) -> dict[str, str]:
    """Create ``DIR/runs``; refuse a directory holding records unless resuming, or made by another config.

    Returns the statuses of the existing records.
    """
    out_dir = Path(out_dir)
    statuses = _records.record_statuses(out_dir)
    if statuses and not resume:
        raise HarnessError(
            f"{out_dir} already holds {len(statuses)} run record(s). Pass --resume to continue "
            f"(finished runs are skipped, failed runs retried), or choose another --out."
        )
    _check_same_config(out_dir, experiment, statuses)
    try:
        _records.runs_dir(out_dir).mkdir(parents=True, exist_ok=True)
        _records.remove_stale_temporaries(out_dir)
        _records.atomic_write_json(
            out_dir / "grid.json",
            {
                "name": experiment.name,
                "description": experiment.description,
                "config": experiment.source,
                "fingerprint": experiment.fingerprint,
                "run_ids": [r.run_id for r in experiment.runs],
                "written": _records.utc_now(),
            },
        )
    except OSError as exc:
        raise ResultsWriteError(f"cannot write to {out_dir}: {exc.strerror or exc}") from None
    return statuses


def _check_same_config(out_dir: Path, experiment: _config.Experiment, statuses: dict) -> None:
    """Refuse to mix the records of two configs in one directory."""
    try:
        grid = _records.read_json(out_dir / "grid.json")
    except FileNotFoundError:
        grid = {}
    except (OSError, ValueError) as exc:
        raise HarnessError(f"{out_dir / 'grid.json'} is unreadable ({exc}); use a new --out directory") from None
    stored = grid.get("fingerprint") if isinstance(grid, dict) else None
    foreign = sorted(set(statuses) - {r.run_id for r in experiment.runs})
    if (stored is not None and stored != experiment.fingerprint) or (stored is None and foreign):
        name = (grid.get("name") if isinstance(grid, dict) else None) or "unnamed"
        raise HarnessError(
            f"{out_dir} holds the results of another config ({name!r}, fingerprint "
            f"{stored or 'not recorded'}; this config's is {experiment.fingerprint}): results of two configs "
            f"would be mixed. Start a new results directory with --out NEW_DIR (a changed config is a new experiment)."
        )


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

    ``n_jobs`` (joblib convention) defaults to 1 for the local backend, which runs
    in this process, and to -1 (every worker) for Dask. Any parallel execution
    forces solver threads to 1 (recorded per run). SIGINT and SIGTERM raise
    :class:`GridInterrupted` after the workers are ended; a record that cannot be
    written raises :class:`ResultsWriteError`. Either way finished records stay.
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
    if progress:
        print(f"{experiment.name}: {len(experiment.runs)} runs, {skipped} already done, {len(todo)} to run -> {out_dir}",
              file=sys.stderr, flush=True)
    done = failed = 0
    results = contextlib.closing(_execute_all(todo, n_jobs, backend, scheduler))  # closing ends the workers
    with _stop_on_signals() as interrupted, _progress.progress(len(todo), progress) as tick, results as finished:
        try:
            for record in finished:
                if interrupted:  # a run a signal stopped (its fit returned early): never recorded as done
                    raise GridInterrupted(interrupted[0], done + failed)
                record.execution = {**(record.execution or {}), "backend": backend, "n_jobs": n_jobs,
                                    "scheduler": scheduler}
                _write(out_dir, record, done + failed)
                if record.status == "done":
                    done += 1
                else:
                    failed += 1
                tick(record)
        except GridInterrupted as exc:
            raise GridInterrupted(exc.signum, done + failed) from None
        except KeyboardInterrupt:  # a fit stopped before it had any tree (no start) says so this way
            if interrupted:
                raise GridInterrupted(interrupted[0], done + failed) from None
            raise
        except (HarnessError, ResultsWriteError):
            raise
        except Exception as exc:  # a run's own errors are records; this is the backend itself failing
            if interrupted:  # a worker or the Dask client noticed the signal first
                raise GridInterrupted(interrupted[0], done + failed) from None
            raise GridAborted(
                f"the {backend} backend failed after {done + failed} of {len(todo)} runs: {type(exc).__name__}: "
                f"{exc}. Finished runs are saved; re-run with --resume."
            ) from exc
    return GridOutcome(len(experiment.runs), skipped, done, failed)


def _write(out_dir: Path, record: _records.RunRecord, n_written: int) -> None:
    try:
        _records.write_record(out_dir, record)
    except OSError as exc:
        raise ResultsWriteError(
            f"cannot write the record of run {record.run_id} into {_records.runs_dir(out_dir)}: "
            f"{exc.strerror or exc}. The {n_written} record(s) written in this session and all earlier ones are "
            f"intact; free disk space or fix the directory's permissions, then re-run with --resume."
        ) from None


@contextlib.contextmanager
def _stop_on_signals():
    """Turn SIGINT/SIGTERM into :class:`GridInterrupted` in the main thread (handlers restored on exit).

    A fit running in this process (a serial grid) is asked to stop first, with every later fit
    of its run (:func:`optitree.pipeline.request_stop`): raising inside a solver's callback or a
    compiled kernel would be lost (HiGHS returned the start as an ``"error"`` and the run was
    recorded as done). The grid then stops before writing that run's record (``run_grid``).
    A second signal raises at once.
    """
    from optitree.pipeline import clear_stop, request_stop

    caught: list[int] = []

    def handler(signum, frame):
        first = not caught
        caught.append(signum)
        if first and request_stop(all_fits=True):
            return  # the fit returns early; run_grid raises before recording its run
        raise GridInterrupted(signum)

    if threading.current_thread() is threading.main_thread():
        previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    else:
        previous = {}
    try:
        yield caught
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        clear_stop()


def _execute_all(todo: list, n_jobs: int, backend: str, scheduler: str | None) -> Iterator[_records.RunRecord]:
    if not todo:
        return
    if backend == "loky":
        if n_jobs == 1:
            for spec in todo:
                yield execute_run(spec)
            return
        workers = n_jobs if n_jobs > 0 else max(1, (os.cpu_count() or 1) + 1 + n_jobs)
        pool = _pool.WorkerPool(workers, _parallel_run)
        try:
            yield from pool.map(todo, died_record)
        finally:
            pool.close()
        return
    from joblib import Parallel, delayed, parallel_config

    with contextlib.ExitStack() as stack:
        stack.enter_context(_dask_client(scheduler))  # joblib's dask backend uses the default client
        stack.enter_context(parallel_config(backend="dask", wait_for_workers_timeout=60))
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
