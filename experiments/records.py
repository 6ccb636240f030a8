"""Run records: one JSON file per run, written atomically, keyed by the run id.

A results directory looks like::

    DIR/grid.json          the last grid submitted to DIR (config text, run ids)
    DIR/runs/<run_id>.json one record per run, status "done" or "failed"

A record is written with a temporary file in ``DIR/runs`` (fsync'd) that is then
renamed over the final name with :func:`os.replace`, so a reader (or a resumed
run after ``SIGKILL``) sees either the complete previous content or the complete
new one, never a torn file. Temporary files left by a killed writer start with
``.tmp-`` and are ignored (and removed by the next writer).
"""

from __future__ import annotations

import dataclasses
import functools
import json
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

RECORD_FORMAT = "optitree.experiments.record/1"
RUNS_SUBDIR = "runs"
TMP_PREFIX = ".tmp-"
_VERSIONED_PACKAGES = ("numpy", "scipy", "scikit-learn", "pyomo", "highspy", "joblib", "optitree")


def utc_now() -> str:
    """Current UTC time, ISO 8601 with microseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def atomic_write_json(path: Path, obj: Any) -> None:
    """Write ``obj`` as JSON to ``path`` atomically (temp file in the same dir, fsync, os.replace)."""
    path = Path(path)
    text = json.dumps(json_safe(obj), indent=1, sort_keys=True, allow_nan=False)
    fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, suffix=".json", dir=path.parent)
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


def load_run_records(out_dir: Path, *, warn=None) -> list[RunRecord]:
    """Every well-formed record in ``DIR/runs`` (sorted by file name).

    A malformed file (unreadable, bad JSON, no ``run_id``, a ``run_id`` other than
    its file name) is reported through ``warn(message)`` (default: a line on
    stderr) and skipped.
    """
    warn = warn or (lambda message: print(message, file=sys.stderr))
    return list(_read_records(out_dir, warn))


def _read_records(out_dir: Path, warn) -> Iterator[RunRecord]:
    for p in iter_record_files(out_dir):
        try:
            rec = RunRecord.from_dict(json.loads(p.read_text(encoding="utf-8")))
            if rec.run_id != p.stem:
                raise MalformedRecord(f"run_id {rec.run_id!r} does not match the file name")
        except (OSError, ValueError) as exc:  # MalformedRecord and json's errors are ValueErrors
            warn(f"warning: skipping malformed record {p}: {exc}")
            continue
        yield rec


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
