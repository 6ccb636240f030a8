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
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

RECORD_FORMAT = "optitree.experiments.record/1"
RUNS_SUBDIR = "runs"
TMP_PREFIX = ".tmp-"
_VERSIONED_PACKAGES = ("numpy", "scipy", "scikit-learn", "pyomo", "highspy", "joblib", "optitree")


def utc_now() -> str:
    """Current UTC time, ISO 8601 with microseconds."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def to_jsonable(obj: Any) -> Any:
    """Convert numpy scalars/arrays and tuples to plain JSON values; NaN and inf become None."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return to_jsonable(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if obj is None or isinstance(obj, (str, bool, int, float)):
        return obj
    raise TypeError(f"cannot store a {type(obj).__name__} in a run record: {obj!r}")


def atomic_write_json(path: Path, obj: Any) -> None:
    """Write ``obj`` as JSON to ``path`` atomically (temp file in the same dir, fsync, os.replace)."""
    path = Path(path)
    text = json.dumps(to_jsonable(obj), indent=1, sort_keys=True, allow_nan=False)
    fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


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


def write_record(out_dir: Path, record: dict) -> Path:
    """Store one run record under ``DIR/runs/<run_id>.json`` (atomic)."""
    path = record_path(out_dir, record["run_id"])
    atomic_write_json(path, record)
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


def load_records(out_dir: Path) -> list[dict]:
    """All readable records in ``DIR/runs`` (sorted by file name); unreadable files are skipped with a warning."""
    records = []
    for p in iter_record_files(out_dir):
        try:
            rec = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            print(f"warning: skipping unreadable record {p}: {exc}", file=sys.stderr)
            continue
        if isinstance(rec, dict) and rec.get("format") == RECORD_FORMAT:
            records.append(rec)
    return records


def record_statuses(out_dir: Path) -> dict[str, str]:
    """Map run id -> status of every readable record in ``DIR/runs``."""
    return {rec["run_id"]: rec.get("status", "failed") for rec in load_records(out_dir)}


@functools.lru_cache(maxsize=1)
def environment_info() -> dict:
    """Versions, host and code revision of this process (computed once per process)."""
    versions = {"python": platform.python_version()}
    for name in _VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {
        "versions": versions,
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
