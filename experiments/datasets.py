"""Dataset access for the harness: names, loading, and a cached probe for config validation.

Adding a dataset: add it to :mod:`optitree.datasets` (it is then listed here), or
load a file with ``name = "csv"`` and ``params = { path = ..., target = ... }``.
"""

from __future__ import annotations

import functools
import json

import numpy as np

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


def probe(name: str, params: dict) -> tuple[str, int]:
    """``(task, n_features)`` of a dataset variant, loaded once per process and parameter set."""
    return _probe(name, json.dumps(params, sort_keys=True))


@functools.lru_cache(maxsize=256)
def _probe(name: str, params_json: str) -> tuple[str, int]:
    X, _, info = load_dataset(name, json.loads(params_json))
    return info["task"], X.shape[1]
