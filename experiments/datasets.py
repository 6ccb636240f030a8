"""Dataset access for the harness: names, loading, and a cached probe for config validation.

Adding a dataset: add it to :mod:`optitree.datasets` (it is then listed here); or, for
a dataset only experiments need, :func:`register` a loader ``(**params) -> (X, y, info)``
here (``info`` needs ``task`` and ``description``); or load a file with
``name = "csv"`` and ``params = { path = ..., target = ... }`` (a relative ``path`` is read
relative to the config file's directory: ``root``).
"""

from __future__ import annotations

import functools
import inspect
import json
from typing import Callable

import numpy as np

CSV_DATASET = "csv"
LOADERS: dict[str, Callable] = {}  # harness-only datasets: name -> loader(**params) -> (X, y, info)


def register(name: str, loader: Callable) -> Callable:
    """Make ``loader`` available to configs as ``name`` (it must not shadow an optitree dataset)."""
    if name in dataset_names():
        raise ValueError(f"a dataset named {name!r} already exists")
    LOADERS[name] = loader
    return loader


def dataset_names() -> list[str]:
    """Built-in and registered dataset names, plus ``"csv"`` (params ``path``, ``target``, ...)."""
    from optitree import datasets

    return sorted([*datasets.list(), *LOADERS]) + [CSV_DATASET]


def resolve_path(path, root) -> str:
    """``path`` as given when absolute or without ``root``, else relative to ``root`` (the config's directory)."""
    from pathlib import Path

    p = Path(path).expanduser()
    return str(p if p.is_absolute() or not root else Path(root) / p)


def load_dataset(name: str, params: dict, root: str | None = None):
    """``optitree.datasets.load(name, **params)`` (or a registered loader, or ``load_csv``) -> ``(X, y, info)``.

    ``root``: the directory a relative CSV ``path`` is relative to (the config file's).
    """
    from optitree import datasets

    if name == CSV_DATASET:
        params = dict(params)
        if "path" in params:
            params["path"] = resolve_path(params["path"], root)
        X, y, info = datasets.load_csv(**params)
    elif name in LOADERS:
        accepted = list(inspect.signature(LOADERS[name]).parameters)
        unknown = sorted(set(params) - set(accepted))
        if unknown:
            raise TypeError(f"data set {name!r} does not take {unknown}; it accepts {accepted or 'no parameters'}")
        X, y, info = LOADERS[name](**params)
    else:
        X, y, info = datasets.load(name, **params)
    return np.asarray(X, dtype=np.float64), np.asarray(y), info


def probe(name: str, params: dict, root: str | None = None) -> tuple[str, int]:
    """``(task, n_features)`` of a dataset variant, loaded once per process and parameter set."""
    return _probe(name, json.dumps(params, sort_keys=True), root)


@functools.lru_cache(maxsize=256)
def _probe(name: str, params_json: str, root: str | None = None) -> tuple[str, int]:
    X, _, info = load_dataset(name, json.loads(params_json), root=root)
    return info["task"], X.shape[1]


def dataset_parameters(name: str) -> dict:
    """``{parameter: default}`` a dataset accepts (``inspect.Parameter.empty``: required), for ``list``."""
    from optitree import datasets

    if name == CSV_DATASET:
        loader = datasets.load_csv
    elif name in LOADERS:
        loader = LOADERS[name]
    else:
        registry = getattr(datasets, "_REGISTRY", {})
        if name not in registry:
            return {}
        loader = registry[name][0]
    try:
        signature = inspect.signature(loader)
    except (TypeError, ValueError):
        return {}
    return {k: p.default for k, p in signature.parameters.items()
            if p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)}


# ---------------------------------------------------------------------------- harness-only datasets
def nonlinear(n: int = 10_000, n_features: int = 20, seed: int = 0):
    """``n`` x ``n_features`` uniform features; binary labels from a noisy non-linear rule on four of them.

    ``y = 1[x0 + x1 x2 + sin(6 x3)/3 + 0.3 e > median]`` with ``e ~ N(0, 1)``: learnable
    signal without exact ties (the greedy benchmark's data).
    """
    if n_features < 4:
        raise ValueError(f"nonlinear needs n_features >= 4, got {n_features}")
    rng = np.random.RandomState(seed)
    X = rng.rand(n, n_features)
    signal = X[:, 0] + X[:, 1] * X[:, 2] + np.sin(6 * X[:, 3]) / 3
    y = (signal + 0.3 * rng.randn(n) > np.median(signal)).astype(int)
    info = {"name": "nonlinear", "task": "classification", "params": {"n": n, "n_features": n_features, "seed": seed},
            "description": "uniform features, noisy non-linear binary rule on four (greedy benchmark)"}
    return X, y, info


register("nonlinear", nonlinear)
