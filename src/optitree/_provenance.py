"""Provenance shared by every stored result: one JSON sanitiser and one version collector."""

from __future__ import annotations

import functools
import math
import platform
from importlib import metadata
from typing import Any

import numpy as np

__all__ = ["json_safe", "package_versions"]


def json_safe(obj: Any) -> Any:
    """``obj`` as plain JSON values.

    Dict keys become ``str``; tuples and numpy arrays become lists; numpy scalars
    become Python scalars; NaN and infinities become None.

    Raises
    ------
    TypeError
        For any other object (a silently stringified object would not read back).
    """
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return json_safe(obj.tolist())
    if isinstance(obj, np.generic):
        return json_safe(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if obj is None or isinstance(obj, (str, bool, int, float)):
        return obj
    raise TypeError(f"cannot store a {type(obj).__name__} as JSON: {obj!r:.80}")


def package_versions(packages) -> dict[str, str | None]:
    """``{"python": ..., <package>: <installed version or None>, ...}``, a new dict on every call.

    Parameters
    ----------
    packages : iterable of str
        Distribution names, e.g. ``("numpy", "highspy", "optitree")``.
    """
    return {"python": platform.python_version(), **{name: _version(name) for name in packages}}


@functools.lru_cache(maxsize=None)
def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
