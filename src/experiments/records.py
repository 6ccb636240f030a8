"""Run records: one JSON file per run, written atomically, keyed by the run id.

A results directory looks like::

    DIR/grid.json          the last grid submitted to DIR (config text, run ids)
    DIR/runs/<run_id>.json one record per run, status "done" or "failed"

A record is written with a temporary file in ``DIR/runs`` (fsync'd) that is then
renamed over the final name with :func:`os.replace`, so a reader (or a resumed
run after ``SIGKILL``) sees either the complete previous content or the complete
new one, never a torn file. Temporary files left by a killed writer start with
``.tmp-`` and are ignored (and removed by the next writer).

Records are checked where they are read (:func:`load_run_records`): a malformed file, or a
done record whose content could not have been written by a run of its grid
(:func:`check_record`: a score out of range, NaN or a string, no fold, an unknown method or
label, a copy under another run id, ...), is named in a warning and left out of every table;
``strict=True`` (``summarize --strict``) makes it an error instead.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import platform
import socket
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from optitree._provenance import json_safe, package_versions

from . import config as _config
from . import methods as _methods

RECORD_FORMAT = "optitree.experiments.record/1"
RUNS_SUBDIR = "runs"
TMP_PREFIX = ".tmp-"
_VERSIONED_PACKAGES = ("numpy", "scipy", "scikit-learn", "pyomo", "highspy", "joblib", "optitree")


def utc_now() -> str:
    """Current UTC time, ISO 8601 with microseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def atomic_write_json(path: Path, obj: Any) -> None:
    """Write ``obj`` as JSON to ``path`` atomically (:func:`atomic_write_text`)."""
    atomic_write_text(path, json.dumps(json_safe(obj), indent=1, sort_keys=True, allow_nan=False))


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (temp file in the same dir, fsync, os.replace)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, suffix=path.suffix or ".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp's 0600: the mode of a file opened for writing, as the others
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def read_json(path: Path) -> Any:
    """The JSON value stored at ``path``."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def _fsync_dir(directory: Path) -> None:
    """Make the rename durable (POSIX); a no-op where directories cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def runs_dir(out_dir: Path) -> Path:
    return Path(out_dir) / RUNS_SUBDIR


def record_path(out_dir: Path, run_id: str) -> Path:
    return runs_dir(out_dir) / f"{run_id}.json"


def write_record(out_dir: Path, record: "RunRecord") -> Path:
    """Store one run record under ``DIR/runs/<run_id>.json`` (atomic)."""
    path = record_path(out_dir, record.run_id)
    atomic_write_json(path, record.to_dict())
    return path


def remove_stale_temporaries(out_dir: Path) -> int:
    """Delete ``.tmp-*`` files a killed writer left behind; returns how many."""
    stale = list(runs_dir(out_dir).glob(f"{TMP_PREFIX}*"))
    for p in stale:
        p.unlink(missing_ok=True)
    return len(stale)


def iter_record_files(out_dir: Path) -> list[Path]:
    d = runs_dir(out_dir)
    if not d.is_dir():
        return []
    return sorted(p for p in d.glob("*.json") if not p.name.startswith(TMP_PREFIX))


class MalformedRecord(ValueError):
    """A record file that cannot be read as a run record (bad JSON, no ``run_id``, ...)."""


@dataclasses.dataclass
class RunRecord:
    """One run's record, as the runner writes it and the reports read it.

    ``config`` is the run's identity plus ``dataset_label``/``method_label``;
    ``status`` is ``"done"`` or ``"failed"`` (then ``error`` holds ``type``,
    ``message`` and ``traceback``). The protocol's fields (``data``, ``metrics``,
    ``tree``, ``solver``, ...) are None on a failed run, except ``data`` and ``execution``
    when the run failed after loading its data (e.g. a method refusing NaN). Records
    written by older versions read back with their missing fields as None.

    ``data`` describes what the run saw: sizes (``n_train``, ``n_validation``, ``n_test``,
    ``n_features``, ``n_classes``, ``stratified``; under CV ``fold``, ``folds``, ``repeat``),
    ``feature_names``, ``categorical`` (names of the categorical columns), ``categories``
    (``{column: categories in code order}``), ``missing`` (the dataset's option: native, drop,
    impute), ``n_missing`` (NaN cells after drop), ``n_dropped`` (rows), ``input`` (``pandas``
    or ``numpy``: what the method received) and ``imputation`` (``{"values", "n_fit",
    "n_eval"}`` with ``missing = "impute"``, else None).
    """

    run_id: str
    config: dict
    status: str = "failed"
    error: dict | None = None
    started: str | None = None
    finished: str | None = None
    duration: float | None = None
    kind: str | None = None
    task: str | None = None
    execution: dict | None = None
    data: dict | None = None
    metrics: dict | None = None
    tree: dict | None = None
    classes: list | None = None
    solver: dict | None = None
    init_tree: dict | None = None
    tuning: dict | None = None
    environment: dict | None = None
    worker: dict | None = None
    format: str = RECORD_FORMAT

    @classmethod
    def from_dict(cls, data: Any) -> "RunRecord":
        """Read a stored record; :class:`MalformedRecord` names what is wrong (unknown keys are ignored)."""
        if not isinstance(data, dict):
            raise MalformedRecord(f"expected a JSON object, got {type(data).__name__}")
        if data.get("format") != RECORD_FORMAT:
            raise MalformedRecord(f"not a run record (format {data.get('format')!r}, expected {RECORD_FORMAT!r})")
        if not isinstance(data.get("run_id"), str) or not data["run_id"]:
            raise MalformedRecord("no run_id")
        if not isinstance(data.get("config"), dict):
            raise MalformedRecord("no config table")
        status = data.get("status", "failed")
        if status not in ("done", "failed"):
            raise MalformedRecord(f"unknown status {status!r}")
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def to_dict(self) -> dict:
        return json_safe(dataclasses.asdict(self))


def load_run_records(out_dir: Path, *, warn=None, strict: bool = False) -> list[RunRecord]:
    """Every sound record in ``DIR/runs`` (sorted by file name).

    A record is left out when its file is malformed (unreadable, bad JSON, no ``run_id``, a
    ``run_id`` other than its file name) or, for a done record, when its content is damaged
    (:func:`check_record`); each one is named (file, run id, why) through ``warn(message)``
    (default: a line on stderr).

    Raises
    ------
    MalformedRecord
        With ``strict=True``, naming every such record instead of leaving them out.
    """
    problems: list[str] = []
    kept = list(_read_records(out_dir, problems.append))
    if problems and strict:
        raise MalformedRecord(f"{len(problems)} record(s) of {runs_dir(out_dir)} cannot be used:\n  "
                              + "\n  ".join(problems))
    warn = warn or (lambda message: print(message, file=sys.stderr))
    for message in problems:
        warn(f"warning: skipping {message}")
    return kept


def _read_records(out_dir: Path, problem) -> Iterator[RunRecord]:
    loaded = []
    for p in iter_record_files(out_dir):
        try:
            rec = RunRecord.from_dict(json.loads(p.read_text(encoding="utf-8")))
            if rec.run_id != p.stem:
                raise MalformedRecord(f"run_id {rec.run_id!r} does not match the file name")
        except (OSError, ValueError) as exc:  # MalformedRecord and json's errors are ValueErrors
            problem(f"malformed record {p}: {exc}")
            continue
        loaded.append((p, rec))
    grid = GridFacts.read(out_dir)
    present = {rec.run_id for _, rec in loaded}
    for p, rec in loaded:
        reason = check_record(rec, grid, present)
        if reason:
            problem(f"damaged record {p} (run {rec.run_id}): {reason}")
            continue
        yield rec


# ---------------------------------------------------------------------------- what a done record may hold
@dataclasses.dataclass(frozen=True)
class GridFacts:
    """What ``DIR/grid.json`` says the records of its grid are: their run ids and the config's
    ``[[datasets]]`` and ``[[methods]]`` entries as ``(name, label, grid keys)``; None where unknown."""

    run_ids: frozenset | None = None
    datasets: tuple | None = None
    methods: tuple | None = None

    @classmethod
    def read(cls, out_dir: Path) -> "GridFacts":
        """The facts of ``out_dir``'s ``grid.json`` (empty without one, or with an unreadable one)."""
        try:
            grid = read_json(Path(out_dir) / "grid.json")
        except (OSError, ValueError):
            return cls()
        if not isinstance(grid, dict):
            return cls()
        ids = grid.get("run_ids")
        run_ids = frozenset(ids) if isinstance(ids, list) and all(isinstance(i, str) for i in ids) else None
        try:
            data = _config.tomllib.loads(grid["config"])
            entries = (tuple(_config.declared_entries(data, "datasets")),
                       tuple(_config.declared_entries(data, "methods")))
        except (KeyError, TypeError, ValueError):  # no config text, or one that no longer parses
            entries = (None, None)
        return cls(run_ids, *entries)


# metric -> (low, high): the values a finished run can measure (None: not measured)
METRIC_RANGES = {
    "train_accuracy": (0.0, 1.0), "test_accuracy": (0.0, 1.0),
    "train_r2": (-math.inf, 1.0), "test_r2": (-math.inf, 1.0),
    "train_mse": (0.0, math.inf), "test_mse": (0.0, math.inf),
    "fit_time": (0.0, math.inf),
}
# count -> smallest value
METRIC_COUNTS = {"n_fit": 1, "n_leaves": 1, "depth": 0}
DATA_COUNTS = {"n_train": 1, "n_test": 0}


def check_record(rec: RunRecord, grid: GridFacts | None = None, present=()) -> str | None:
    """Why the done record ``rec`` cannot enter the tables and statistics, or None when it can.

    Checked: the run's method (registered, or one of the grid's), labels, depth, seed and, under
    cross-validation, fold; the kind and task of a registered method; every metric a finite number
    in its range (accuracies in [0, 1], R² <= 1, MSE and times >= 0, counts integers, ``proven_optimal``
    a boolean); its run id the hash of its config, which a record copied under another run id, or
    edited, fails; with the ``grid`` facts, a run of that grid under the grid's labels.

    Parameters
    ----------
    rec : RunRecord
        A well-formed record; a failed one is not judged (it enters no statistic).
    grid : GridFacts, optional
        What the directory's ``grid.json`` says; without it the grid checks are skipped.
    present : collection of str
        The run ids read from the directory: a copy is named as the copy of one of them.

    Returns
    -------
    str or None
        The first problem found, naming the field and its value.
    """
    if rec.status != "done":
        return None
    grid = grid or GridFacts()
    cfg = rec.config
    method = cfg.get("method")
    if not isinstance(method, dict) or not isinstance(method.get("name"), str):
        return "config.method has no name"
    name = method["name"]
    known = {n for n, _, _ in grid.methods} if grid.methods is not None else set(_methods.METHODS)
    if name not in known:
        return f"unknown method {name!r} (known: {', '.join(sorted(known))})"
    for key in ("dataset_label", "method_label"):
        if not isinstance(cfg.get(key), str) or not cfg[key]:
            return f"config.{key} is {cfg.get(key)!r}, not a label"
    for key, low in (("depth", 1), ("seed", 0)):
        if not _is_int(cfg.get(key)) or cfg[key] < low:
            return f"config.{key} is {cfg.get(key)!r}, not an integer >= {low}"
    if isinstance(cfg.get("cv"), dict):
        folds = cfg["cv"].get("folds")
        if "fold" not in cfg:
            return f"config has no fold, but its protocol makes one record per fold ({folds} folds)"
        if not _is_int(cfg["fold"]) or not _is_int(folds) or not 0 <= cfg["fold"] < folds:
            return f"config.fold is {cfg['fold']!r}, not a fold of 0..{folds}-1"
    labels = (("dataset", grid.datasets, cfg.get("dataset")), ("method", grid.methods, method))
    for what, entries, identity in labels:
        if entries is None or not isinstance(identity, dict):
            continue
        params = identity.get("params") if isinstance(identity.get("params"), dict) else {}
        expected = {_config.variant_label(label, keys, params) for n, label, keys in entries
                    if n == identity.get("name")}
        if not expected:
            return f"{what} {identity.get('name')!r} is not in the grid's config"
        if cfg[f"{what}_label"] not in expected:
            return (f"{what} label {cfg[f'{what}_label']!r} is not the grid's "
                    f"(for {identity.get('name')!r} with these parameters: {', '.join(sorted(map(repr, expected)))})")
    registered = _methods.METHODS.get(name)
    if rec.kind not in _methods.KINDS or rec.task not in _methods.TASKS:
        return f"kind {rec.kind!r} / task {rec.task!r} (known: {'/'.join(_methods.KINDS)}, {'/'.join(_methods.TASKS)})"
    if registered is not None and (rec.kind, rec.task) != (registered.kind, registered.task):
        return f"kind {rec.kind!r} / task {rec.task!r}, but method {name!r} is {registered.kind} / {registered.task}"
    reason = _check_numbers(rec)
    if reason:
        return reason
    identity = {k: v for k, v in cfg.items() if k not in ("dataset_label", "method_label")}
    try:
        expected_id = _config.run_id(identity)
    except (TypeError, ValueError) as exc:
        return f"config cannot be hashed: {exc}"
    if expected_id != rec.run_id:
        if expected_id in present:
            return f"a copy of run {expected_id} under another run id (its config is that run's)"
        return f"its config is run {expected_id}'s, not run {rec.run_id}'s (the record was edited)"
    if grid.run_ids is not None and rec.run_id not in grid.run_ids:
        return "not a run of the grid in grid.json"
    return None


def _check_numbers(rec: RunRecord) -> str | None:
    """Why the metrics and data sizes of a done record are not numbers in their ranges, or None."""
    metrics = rec.metrics
    if not isinstance(metrics, dict):
        return "a done record without metrics"
    score = "train_r2" if rec.task == "regression" else "train_accuracy"
    if metrics.get(score) is None:
        return f"no metrics.{score}"
    for key, (low, high) in METRIC_RANGES.items():
        value = metrics.get(key)
        if value is None:
            continue
        if not _is_number(value) or not math.isfinite(value) or not low <= value <= high:
            return f"metrics.{key} is {value!r}, not a finite number in [{low:g}, {high:g}]"
    for table in ("data", "solver"):
        if not isinstance(getattr(rec, table) or {}, dict):
            return f"{table} is {type(getattr(rec, table)).__name__}, not a table"
    for table, counts in (("metrics", METRIC_COUNTS), ("data", DATA_COUNTS)):
        values = getattr(rec, table) or {}
        for key, low in counts.items():
            value = values.get(key)
            if value is not None and (not _is_int(value) or value < low):
                return f"{table}.{key} is {value!r}, not an integer >= {low}"
    proven = (rec.solver or {}).get("proven_optimal")
    if proven is not None and not isinstance(proven, bool):
        return f"solver.proven_optimal is {proven!r}, not a boolean"
    return None


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def load_records(out_dir: Path) -> list[dict]:
    """The well-formed records of ``DIR/runs`` as plain dicts (see :func:`load_run_records`)."""
    return [rec.to_dict() for rec in load_run_records(out_dir)]


def record_statuses(out_dir: Path) -> dict[str, str]:
    """Map run id -> status of every well-formed record in ``DIR/runs``."""
    return {rec.run_id: rec.status for rec in load_run_records(out_dir)}


@functools.lru_cache(maxsize=1)
def environment_info() -> dict:
    """Versions, host and code revision of this process (computed once per process)."""
    return {
        "versions": package_versions(_VERSIONED_PACKAGES),
        "host": {
            "hostname": socket.gethostname(),
            "platform": platform.platform(),
            "machine": platform.machine(),
            "processor": platform.processor() or None,
            "cpu_count": os.cpu_count(),
            "python_implementation": platform.python_implementation(),
        },
        "git": git_revision(Path(__file__).resolve().parent),
    }


def git_revision(directory: Path) -> dict | None:
    """``{"commit", "dirty"}`` of the git checkout holding ``directory``; None outside one (never raises)."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=directory, capture_output=True, text=True, timeout=10
        )
        if commit.returncode != 0:
            return None
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=10,
        )
        dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
        return {"commit": commit.stdout.strip(), "dirty": dirty}
    except (OSError, subprocess.SubprocessError):
        return None
