"""The ``info`` dict every loader returns."""

from __future__ import annotations

import numpy as np

UCI_CREDIT = (
    "UCI Machine Learning Repository (Kelly, Longjohn & Nottingham, https://archive.ics.uci.edu), "
    "licensed CC BY 4.0."
)


def make_info(
    name: str,
    *,
    description: str,
    source: str,
    citation: str,
    feature_names,
    y,
    task: str,
    categorical=(),
    categories=None,
    class_names=None,
    params=None,
    license: str | None = None,
    notes: str = "",
    **extra,
) -> dict:
    """Assemble the ``info`` dict.

    ``class_names[k]`` names the k-th entry of ``numpy.unique(y)`` (the order of an
    estimator's ``classes_``); by default it is that label itself, as a string.
    ``categories[j][c]`` is the published value of code ``c`` of categorical feature ``j``;
    ``params`` echoes the generator's arguments.
    """
    y = np.asarray(y)
    if task == "classification" and class_names is None:
        class_names = [str(c) for c in np.unique(y)]
    info = {
        "name": name,
        "description": description,
        "task": task,
        "n_samples": int(y.shape[0]),
        "n_features": len(feature_names),
        "feature_names": list(feature_names),
        "class_names": None if task == "regression" else list(class_names),
        "categorical": list(categorical),
        "categories": {int(j): list(v) for j, v in (categories or {}).items()},
        "params": dict(params or {}),
        "source": source,
        "license": license,
        "citation": citation,
        "notes": notes,
    }
    info.update(extra)
    return info
