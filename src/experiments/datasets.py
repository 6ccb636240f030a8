"""Dataset access for the harness: names, loading, and a cached probe for config validation.

Adding a dataset: add it to :mod:`optitree.datasets` (it is then listed here); or, for
a dataset only experiments need, :func:`register` a loader ``(**params) -> (X, y, info)``
here (``info`` needs ``task`` and ``description``); or load a file with
``name = "csv"`` and ``params = { path = ..., target = ... }`` (a relative ``path`` is read
relative to the config file's directory: ``root``).

What a method receives (:func:`load_frame`): a pandas DataFrame whose columns carry the
dataset's feature names, with its categorical features as pandas categoricals (the
registry's 0-based codes turned back into the published categories) and missing values as
NaN. A dataset entry's ``missing`` option (:data:`MISSING`) says what happens to NaN:
``"native"`` (default) passes it to the method, ``"drop"`` drops the incomplete rows before
any split, ``"impute"`` fills it inside each training part from that part's statistics
(:func:`imputation_values`, :func:`impute`). Methods registered with ``input="numpy"``
(scikit-learn's tree) get :func:`to_array` of the frame: float64, category codes, NaN kept.
"""

from __future__ import annotations

import functools
import inspect
import json
from typing import Callable

import numpy as np

CSV_DATASET = "csv"
MISSING = ("native", "drop", "impute")  # a dataset entry's `missing` option; the first is the default
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

    ``X`` is float64 (categorical features as their codes, NaN where missing): for listing
    and probing. Runs load :func:`load_frame`. ``root``: the directory a relative CSV
    ``path`` is relative to (the config file's).
    """
    X, y, info = _load_raw(name, params, root)
    return to_array(X) if _is_frame(X) else np.asarray(X, dtype=np.float64), np.asarray(y), info


def load_frame(name: str, params: dict, root: str | None = None):
    """The dataset as the methods receive it: ``(X, y, info)`` with ``X`` a pandas DataFrame.

    Columns are named by ``info["feature_names"]`` (``x0, x1, ...`` when the loader gives
    none); the features listed in ``info["categorical"]`` become pandas categoricals whose
    categories are ``info["categories"][j]`` in their published order (code ``c`` is
    category ``c``; the sorted codes when the loader names none); missing values stay NaN.
    A registered loader may return a DataFrame itself (its dtypes are kept).
    """
    X, y, info = _load_raw(name, params, root)
    if not _is_frame(X):
        X = to_frame(np.asarray(X, dtype=np.float64), info)
    return X, np.asarray(y), info


def _load_raw(name: str, params: dict, root: str | None):
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
    return X, y, info


def _is_frame(X) -> bool:
    import sys

    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(X, pd.DataFrame)


def feature_names(info: dict, n_features: int) -> list[str]:
    """``info["feature_names"]`` as unique strings (``x<j>`` where missing; a repeated name gets ``_<j>``)."""
    given = list(info.get("feature_names") or [])
    names, seen = [], set()
    for j in range(n_features):
        name = str(given[j]) if j < len(given) and given[j] is not None else f"x{j}"
        if name in seen:
            name = f"{name}_{j}"
        seen.add(name)
        names.append(name)
    return names


def to_frame(X: np.ndarray, info: dict):
    """A float matrix of the registry's form (categorical features as 0-based codes) as a DataFrame."""
    import pandas as pd

    if X.ndim != 2:
        raise ValueError(f"X must be 2-dimensional, got shape {X.shape}")
    names = feature_names(info, X.shape[1])
    categorical = sorted({int(j) for j in info.get("categorical") or []})
    categories = {int(k): v for k, v in (info.get("categories") or {}).items()}
    columns = {}
    for j, name in enumerate(names):
        column = X[:, j]
        if j not in categorical:
            columns[name] = column
            continue
        present = ~np.isnan(column)
        if not np.all(column[present] == np.round(column[present])) or (column[present] < 0).any():
            raise ValueError(f"categorical feature {name!r} (column {j}) must hold 0-based integer codes or NaN")
        codes = np.where(present, column, -1).astype(np.int64)
        labels = categories.get(j)
        if labels is None:
            labels = list(range(int(codes.max()) + 1 if present.any() else 0))
        if present.any() and codes.max() >= len(labels):
            raise ValueError(f"categorical feature {name!r} has code {codes.max()} but only {len(labels)} categories")
        columns[name] = pd.Categorical.from_codes(codes, categories=list(labels))
    return pd.DataFrame(columns)


def to_array(X) -> np.ndarray:
    """A DataFrame as float64: categorical columns as their codes, NaN where missing."""
    import pandas as pd

    out = np.empty(X.shape, dtype=np.float64)
    for j, dtype in enumerate(X.dtypes):
        column = X.iloc[:, j]
        if isinstance(dtype, pd.CategoricalDtype):
            codes = column.cat.codes.to_numpy()
            out[:, j] = np.where(codes < 0, np.nan, codes)
        else:
            out[:, j] = column.to_numpy(dtype=np.float64, na_value=np.nan)
    return out


def categorical_columns(X) -> list[str]:
    """Names of the pandas categorical columns of ``X``."""
    import pandas as pd

    return [str(c) for c, dtype in X.dtypes.items() if isinstance(dtype, pd.CategoricalDtype)]


def check_missing(value, dataset: str) -> str:
    """``value`` if it is one of :data:`MISSING`, else a ValueError naming ``dataset`` and the allowed values."""
    if not isinstance(value, str) or value not in MISSING:
        allowed = ", ".join(repr(m) for m in MISSING)
        raise ValueError(f"dataset {dataset!r}: missing must be one of {allowed} (default 'native'), got {value!r}")
    return value


def drop_missing(X, y):
    """The rows of ``(X, y)`` with no NaN in ``X``, and how many were dropped."""
    keep = ~X.isna().any(axis=1).to_numpy()
    return X.loc[keep], np.asarray(y)[keep], int((~keep).sum())


def imputation_values(X) -> dict:
    """Per column of ``X``, the value :func:`impute` fills in: the median of a numeric column, the
    most frequent category of a categorical one (ties: the first in category order), from ``X``
    alone (a training part). A column with no value at all gets 0.0 or its first category."""
    import pandas as pd

    fill = {}
    for name, dtype in X.dtypes.items():
        column = X[name]
        if isinstance(dtype, pd.CategoricalDtype):
            codes = column.cat.codes.to_numpy()
            categories = list(column.cat.categories)
            counts = np.bincount(codes[codes >= 0], minlength=len(categories))
            fill[name] = categories[int(np.argmax(counts))] if len(categories) else None
        else:
            values = column.to_numpy(dtype=np.float64, na_value=np.nan)
            present = values[~np.isnan(values)]
            fill[name] = float(np.median(present)) if present.size else 0.0
    return fill


def impute(X, fill: dict):
    """``X`` with its NaN replaced by ``fill[column]`` (a copy; ``X`` itself when it has none)."""
    if not X.isna().to_numpy().any():
        return X
    X = X.copy()
    for name in X.columns[X.isna().any(axis=0).to_numpy()]:
        if fill.get(name) is not None:
            X[name] = X[name].fillna(fill[name])
    return X


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


def make_classification(n_samples: int = 100, n_features: int = 20, n_informative: int = 2, n_redundant: int = 2,
                        n_repeated: int = 0, n_classes: int = 2, n_clusters_per_class: int = 2, weights=None,
                        flip_y: float = 0.01, class_sep: float = 1.0, random_state: int = 0):
    """``sklearn.datasets.make_classification`` with these parameters: generated sets of any size.

    scikit-learn's defaults, except ``random_state`` (0, not None: a config's runs are
    reproducible). The scale study's sets: ``n_samples = 100000, n_features = 10, random_state = 1``.
    """
    from sklearn.datasets import make_classification as generate

    params = {"n_samples": n_samples, "n_features": n_features, "n_informative": n_informative,
              "n_redundant": n_redundant, "n_repeated": n_repeated, "n_classes": n_classes,
              "n_clusters_per_class": n_clusters_per_class, "weights": weights, "flip_y": flip_y,
              "class_sep": class_sep, "random_state": random_state}
    X, y = generate(**params)
    info = {"name": "make_classification", "task": "classification", "params": params,
            "description": "sklearn.datasets.make_classification (Gaussian clusters on a hypercube's vertices)"}
    return X, y, info


register("make_classification", make_classification)
