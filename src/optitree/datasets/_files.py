"""Data sets read from files: scikit-learn's bundled copies, user CSVs, OpenML (with a local cache)."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np

from ._info import UCI_CREDIT, make_info

# ---------------------------------------------------------------- scikit-learn bundled

_SKLEARN = {
    "iris": (
        "load_iris",
        "iris species from sepal/petal measurements (150 rows; 3 classes)",
        "Fisher, R. A. (1936). The use of multiple measurements in taxonomic problems. Annals of Eugenics 7. "
        + UCI_CREDIT,
    ),
    "wine": (
        "load_wine",
        "wine cultivar from chemical analysis (178 rows; 3 classes)",
        "Forina, M. et al. (1988), PARVUS; UCI Wine data set, donor Stefan Aeberhard. " + UCI_CREDIT,
    ),
    "breast_cancer": (
        "load_breast_cancer",
        "breast mass malignant/benign from cell-nucleus features (569 rows; 2 classes)",
        "Street, W. N., Wolberg, W. H. & Mangasarian, O. L. (1993). Nuclear feature extraction for breast "
        "tumor diagnosis; UCI Breast Cancer Wisconsin (Diagnostic). " + UCI_CREDIT,
    ),
    "digits": (
        "load_digits",
        "handwritten digits as 8x8 pixel counts (1797 rows; 10 classes)",
        "Alpaydin, E. & Kaynak, C. (1998); UCI Optical Recognition of Handwritten Digits (test part). "
        + UCI_CREDIT,
    ),
    "diabetes": (
        "load_diabetes",
        "diabetes progression after one year (442 rows; regression)",
        "Efron, B., Hastie, T., Johnstone, I. & Tibshirani, R. (2004). Least angle regression. "
        "Annals of Statistics 32.",
    ),
}


def sklearn_bundled(name: str, **kwargs):
    """Load one of scikit-learn's bundled data sets; labels are its integer codes."""
    import sklearn.datasets

    loader, description, citation = _SKLEARN[name]
    bunch = getattr(sklearn.datasets, loader)(**kwargs)
    regression = name == "diabetes"
    return np.asarray(bunch.data, dtype=np.float64), np.asarray(bunch.target), make_info(
        name,
        description=description,
        source=f"scikit-learn bundled copy (sklearn.datasets.{loader})",
        citation=citation,
        feature_names=[str(f) for f in bunch.feature_names],
        y=bunch.target,
        task="regression" if regression else "classification",
        class_names=None if regression else [str(c) for c in bunch.target_names],
        license=None if regression else "CC BY 4.0",
        params=dict(kwargs),
        notes="Labels are scikit-learn's integer codes; class_names[k] names code k.",
    )


def iris():
    """Fisher's iris (scikit-learn's bundled copy)."""
    return sklearn_bundled("iris")


def wine():
    """UCI wine recognition (scikit-learn's bundled copy)."""
    return sklearn_bundled("wine")


def breast_cancer():
    """Breast Cancer Wisconsin (Diagnostic) (scikit-learn's bundled copy)."""
    return sklearn_bundled("breast_cancer")


def digits():
    """Optical handwritten digits, 8x8 (scikit-learn's bundled copy)."""
    return sklearn_bundled("digits")


def diabetes(scaled: bool = True):
    """Diabetes regression (scikit-learn's bundled copy); ``scaled=False`` gives the original units."""
    return sklearn_bundled("diabetes", scaled=scaled)


# ---------------------------------------------------------------- bundled CSV copies (regression)

_DATA_DIR = Path(__file__).resolve().parent / "data"


def _bundled(filename: str) -> tuple[list[str], np.ndarray]:
    """Header and float64 rows of a CSV shipped in ``optitree/datasets/data``."""
    path = _DATA_DIR / filename
    with open(path, encoding="ascii") as handle:
        header = handle.readline().strip().split(",")
    return header, np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.float64, ndmin=2)


def concrete():
    """Concrete compressive strength (Yeh 1998): 1 030 mixtures, 8 ingredients/age -> strength in MPa.

    Bundled as ``data/concrete.csv``: every value of the UCI file ``Concrete_Data.xls``
    (UCI id 165) at full double precision, UCI row order (it holds 25 duplicated rows, kept).
    """
    header, table = _bundled("concrete.csv")
    return table[:, :-1].copy(), table[:, -1].copy(), make_info(
        "concrete",
        description="concrete compressive strength (MPa) from 7 mix components (kg/m^3) and age (days); "
        "1030 rows, regression",
        source="UCI Machine Learning Repository, Concrete Compressive Strength (https://archive.ics.uci.edu/"
        "dataset/165); bundled CSV of Concrete_Data.xls",
        citation="Yeh, I-C. (1998). Modeling of strength of high-performance concrete using artificial neural "
        "networks. Cement and Concrete Research 28(12), 1797-1808. Donor: I-Cheng Yeh. " + UCI_CREDIT,
        license="CC BY 4.0",
        feature_names=header[:-1],
        y=table[:, -1],
        task="regression",
        units={"features": "kg per m^3 of mixture (age: days)", "target": "MPa"},
        notes="Bundled: optitree/datasets/data/concrete.csv, all 1030 rows of the UCI spreadsheet "
        "(Concrete_Data.xls) in its order, values at full double precision; column names shortened.",
    )


def airfoil():
    """NASA airfoil self-noise (Brooks, Pope & Marcolini 1989): 1 503 wind-tunnel runs -> sound pressure (dB).

    Bundled as ``data/airfoil_self_noise.csv``: the UCI file ``airfoil_self_noise.dat``
    (UCI id 291) with a header row and commas for tabs, rows in UCI order.
    """
    header, table = _bundled("airfoil_self_noise.csv")
    return table[:, :-1].copy(), table[:, -1].copy(), make_info(
        "airfoil",
        description="scaled sound pressure level (dB) of NACA 0012 airfoil sections from frequency (Hz), angle "
        "of attack (deg), chord (m), velocity (m/s) and displacement thickness (m); 1503 rows, regression",
        source="UCI Machine Learning Repository, Airfoil Self-Noise (https://archive.ics.uci.edu/dataset/291); "
        "bundled CSV of airfoil_self_noise.dat",
        citation="Brooks, T. F., Pope, D. S. & Marcolini, M. A. (1989). Airfoil self-noise and prediction. "
        "NASA Reference Publication 1218. Donor: Roberto Lopez. " + UCI_CREDIT,
        license="CC BY 4.0",
        feature_names=header[:-1],
        y=table[:, -1],
        task="regression",
        units={"features": "Hz, degrees, m, m/s, m", "target": "dB"},
        notes="Bundled: optitree/datasets/data/airfoil_self_noise.csv, the 1503 rows of the UCI file in its "
        "order, values as published; column names added.",
    )


# ---------------------------------------------------------------- columns of strings -> numbers

NA_VALUES = ("", "NA", "N/A", "NaN", "nan", "NULL", "null", "?")


def _as_float(values: np.ndarray, missing: np.ndarray) -> np.ndarray | None:
    """Float column (NaN where ``missing``), or None when a present value is not a number."""
    out = np.full(values.shape[0], np.nan)
    try:
        out[~missing] = values[~missing].astype(np.float64)
    except ValueError:
        return None
    return out


def _encode(values: np.ndarray, missing: np.ndarray) -> tuple[np.ndarray, list]:
    """0-based codes (NaN where missing) and the category of each code.

    Categories are sorted numerically when every value is a number, else as strings.
    """
    present = values[~missing]
    numeric = _as_float(present, np.zeros(present.shape[0], bool))
    if numeric is not None:
        categories, inverse = np.unique(numeric, return_inverse=True)
        categories = [int(c) if float(c).is_integer() else float(c) for c in categories]
    else:
        categories, inverse = np.unique(present.astype(str), return_inverse=True)
        categories = categories.tolist()
    codes = np.full(values.shape[0], np.nan)
    codes[~missing] = inverse
    return codes, categories


def table_to_xy(name: str, columns: list[str], values: np.ndarray, missing: np.ndarray, *, target, categorical,
                task, source: str, citation: str, notes: str, **extra):
    """Turn a table of strings into ``(X, y, info)``.

    ``values`` is an object array (n_rows, n_columns) of strings, ``missing`` a
    boolean mask of missing entries. ``task=None`` infers it like scikit-learn's
    ``type_of_target``: integral numbers or strings -> classification, other
    numbers -> regression.
    """
    if len(set(columns)) != len(columns):
        dupes = sorted({c for c in columns if columns.count(c) > 1})
        raise ValueError(f"duplicate column names: {dupes}")
    if target not in columns:
        raise ValueError(f"target column {target!r} not found; columns are {columns}")
    categorical = [] if categorical is None else list(categorical)
    unknown = [c for c in categorical if c not in columns or c == target]
    if unknown:
        raise ValueError(f"categorical columns {unknown} are not feature columns; features are "
                         f"{[c for c in columns if c != target]}")
    if task not in (None, "classification", "regression"):
        raise ValueError(f"task must be None, 'classification' or 'regression', got {task!r}")

    t = columns.index(target)
    if missing[:, t].any():
        rows = np.flatnonzero(missing[:, t])
        raise ValueError(
            f"target column {target!r} has {rows.size} missing values (first at data row {rows[0] + 1})"
        )
    y_num = _as_float(values[:, t], missing[:, t])
    if task is None:
        task = "regression" if y_num is not None and not np.all(y_num == np.round(y_num)) else "classification"
    if task == "regression":
        if y_num is None:
            raise ValueError(f"target column {target!r} is not numeric, so it cannot be a regression target")
        y = y_num
    else:
        y = y_num.astype(np.int64) if y_num is not None and np.all(y_num == np.round(y_num)) else values[:, t].astype(str)

    feature_names = [c for c in columns if c != target]
    X = np.empty((values.shape[0], len(feature_names)))
    cat_idx, categories = [], {}
    for j, col in enumerate(feature_names):
        k = columns.index(col)
        if col in categorical:
            X[:, j], categories[j] = _encode(values[:, k], missing[:, k])
            cat_idx.append(j)
            continue
        column = _as_float(values[:, k], missing[:, k])
        if column is None:
            bad = next(v for v, m in zip(values[:, k], missing[:, k]) if not m and not _is_number(v))
            raise ValueError(
                f"feature column {col!r} is not numeric (e.g. {bad!r}); list it in categorical= to encode "
                "it as integer codes"
            )
        X[:, j] = column
    n_missing = np.isnan(X).sum(axis=0)
    return X, y, make_info(
        name,
        description=f"{source} (target {target!r})",
        source=source,
        citation=citation,
        feature_names=feature_names,
        y=y,
        task=task,
        categorical=cat_idx,
        categories=categories,
        target=target,
        n_missing=int(n_missing.sum()),
        missing_by_feature={feature_names[j]: int(n_missing[j]) for j in np.flatnonzero(n_missing)},
        notes=notes,
        **extra,
    )


def _is_number(v) -> bool:
    try:
        float(v)
    except (TypeError, ValueError):
        return False
    return True


# ---------------------------------------------------------------- CSV


def _read_csv_pandas(path: Path, delimiter: str, na_values) -> tuple[list[str], np.ndarray, np.ndarray]:
    import pandas as pd

    with open(path, newline="") as fh:
        header = next(csv.reader(fh, delimiter=delimiter, skipinitialspace=True), None)
    if header is None:
        raise ValueError(f"{path} is empty; a header row naming the columns is required")
    try:
        frame = pd.read_csv(path, sep=delimiter, header=None, skiprows=1, names=range(len(header)), dtype=str,
                            na_values=list(na_values), keep_default_na=False, skipinitialspace=True)
    except pd.errors.ParserError as exc:
        raise ValueError(f"cannot parse {path}: {exc}") from None
    values = frame.to_numpy(dtype=object)
    return header, values, frame.isna().to_numpy()


def _read_csv_plain(path: Path, delimiter: str, na_values) -> tuple[list[str], np.ndarray, np.ndarray]:
    with open(path, newline="") as fh:
        rows = [r for r in csv.reader(fh, delimiter=delimiter, skipinitialspace=True) if r]
    if not rows:
        raise ValueError(f"{path} is empty; a header row naming the columns is required")
    header, body = rows[0], rows[1:]
    lengths = np.array([len(r) for r in body], dtype=np.int64)
    bad = np.flatnonzero(lengths != len(header))
    if bad.size:
        raise ValueError(f"cannot parse {path}: data row {bad[0] + 1} has {lengths[bad[0]]} fields, "
                         f"the header has {len(header)}")
    values = np.array(body, dtype=object).reshape(len(body), len(header))
    return header, values, np.isin(values, list(na_values))


def load_csv(path, target, categorical=None, *, task=None, delimiter=",", na_values=NA_VALUES):
    """Load a CSV file with a header row as ``(X, y, info)``.

    Parameters
    ----------
    path : str or Path
    target : str
        Name of the label column.
    categorical : list of str, optional
        Feature columns to encode as 0-based integer codes (categories sorted
        numerically if all numeric, else as strings; ``info["categories"][j]``
        lists them). Any other non-numeric feature column is an error.
    task : {None, "classification", "regression"}
        ``None`` infers it: string or integral labels -> classification.
    delimiter : str
    na_values : sequence of str
        Entries read as missing. Missing features become NaN (the greedy trees
        route them) and are counted in ``info["n_missing"]`` and
        ``info["missing_by_feature"]``; a missing label is an error.

    pandas reads the file when installed, else the standard ``csv`` module;
    both give the same result.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such CSV file: {path}")
    try:
        import pandas  # noqa: F401

        reader = _read_csv_pandas
    except ImportError:
        reader = _read_csv_plain
    header, values, missing = reader(path, delimiter, na_values)
    return table_to_xy(path.stem, [h.strip() for h in header], values, missing, target=target,
                       categorical=categorical, task=task, source=str(path), citation="user data",
                       notes="read from CSV")


# ---------------------------------------------------------------- OpenML

DEFAULT_CACHE = os.path.join("~", ".cache", "optitree", "openml")


def load_openml(name_or_id, *, version="active", target=None, categorical=None, cache_dir=DEFAULT_CACHE):
    """Fetch a data set from OpenML (needs internet once; cached in ``cache_dir``).

    Parameters
    ----------
    name_or_id : str or int
        OpenML data set name or numeric id.
    version : int or "active"
        Version when fetching by name.
    target : str, optional
        Label column; default: the data set's default target.
    categorical : list of str, optional
        Extra feature columns to encode as codes; OpenML nominal columns are
        always encoded.
    cache_dir : str
        Local download cache (``data_home`` of ``sklearn.datasets.fetch_openml``).
    """
    try:
        import pandas  # noqa: F401
    except ImportError:
        raise ImportError("load_openml needs pandas: pip install 'optitree[pandas]'") from None
    import sklearn.datasets

    by_id = isinstance(name_or_id, (int, np.integer)) and not isinstance(name_or_id, bool)
    query = {"data_id": int(name_or_id)} if by_id else {"name": str(name_or_id), "version": version}
    bunch = sklearn.datasets.fetch_openml(
        **query, data_home=os.path.expanduser(cache_dir), as_frame=True, parser="auto",
        target_column=target if target is not None else "default-target",
    )
    frame = bunch.frame if bunch.frame is not None else bunch.data.join(bunch.target)
    target_name = bunch.target.name if target is None else target
    nominal = [c for c in bunch.data.columns if str(bunch.data[c].dtype) in ("category", "object", "string")]
    columns = [str(c) for c in frame.columns]
    missing = frame.isna().to_numpy()
    values = frame.astype(object).where(~frame.isna(), "").astype(str).to_numpy(dtype=object)
    details = getattr(bunch, "details", None) or {}
    data_id = details.get("id", name_or_id)
    return table_to_xy(
        str(details.get("name", name_or_id)), columns, values, missing, target=str(target_name),
        categorical=list(dict.fromkeys([str(c) for c in nominal] + list(categorical or []))), task=None,
        source=f"OpenML data set {data_id} (https://www.openml.org/d/{data_id})",
        citation=str(details.get("citation") or details.get("creator") or "see the OpenML page"),
        notes="fetched with sklearn.datasets.fetch_openml", license=details.get("licence"),
        openml_version=details.get("version"),
    )
