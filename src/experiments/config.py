"""Experiment configs (TOML): validation and expansion into runs with stable ids.

The file format (every key, its default and what it means) is documented in ``docs/experiments.md``
("A complete config"); this module checks a file against it and expands it.

A **run** is one (dataset variant, method variant, depth, seed[, fold]) of the same task
(classification methods run on classification datasets). Its id is a hash
of its canonical identity: dataset name and params, method name and *complete*
params (defaults filled in), tuning grid, depth, seed and split settings, as JSON
with sorted keys and canonical numbers (``2.0`` and ``2`` are the same; floats
otherwise by their shortest repr). Labels, descriptions and the order of entries
in the file do not enter the id, so reordering datasets or methods, or adding
entries, keeps the ids of existing runs.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import itertools
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from . import datasets as _datasets
from . import methods as _methods
from . import protocols as _protocols

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TOP_KEYS = ("name", "description", "depths", "seeds", "plugins", "protocol", "split", "cv", "datasets", "methods",
            "compare")
SPLIT_KEYS = ("test_size", "validation_size", "stratify")
CV_KEYS = ("folds", "inner_folds", "stratify")
DATASET_KEYS = ("name", "label", "params", "grid", "test_params", "missing")
METHOD_KEYS = ("name", "label", "params", "grid", "tune", "datasets")
COMPARE_KEYS = ("baseline", "candidate")
ID_LENGTH = 16


class ConfigError(ValueError):
    """A malformed config; ``str()`` reads ``config error: <where>: <what>``."""

    def __init__(self, where: str, message: str):
        self.where = where
        self.message = message
        super().__init__(f"config error: {where}: {message}" if where else f"config error: {message}")


@dataclass(frozen=True)
class RunSpec:
    """One run of a grid.

    ``identity`` is exactly what the run id hashes; ``dataset_label`` and
    ``method_label`` are for display; ``plugins`` must be imported by whoever
    executes the run (a fresh worker process knows only the built-in methods);
    ``root`` is the config file's directory, against which a relative CSV path is read
    (not part of the id: a moved results directory keeps its ids).
    """

    run_id: str
    identity: dict
    dataset_label: str
    method_label: str
    plugins: tuple[str, ...] = ()
    root: str | None = None

    @property
    def dataset(self) -> dict:
        return self.identity["dataset"]

    @property
    def method(self) -> dict:
        return self.identity["method"]

    @property
    def depth(self) -> int:
        return self.identity["depth"]

    @property
    def seed(self) -> int:
        return self.identity["seed"]

    @property
    def split(self) -> dict:
        return self.identity.get("split", {"test_size": 0.0, "validation_size": 0.0, "stratify": True})

    @property
    def missing(self) -> str:
        """The dataset entry's ``missing`` option (``"native"`` when the identity has none)."""
        return _datasets.check_missing(self.dataset.get("missing", _datasets.MISSING[0]), self.dataset_label)

    @property
    def fold(self) -> int | None:
        return self.identity.get("fold")

    @property
    def protocol(self) -> str:
        return self.identity.get("protocol", _protocols.DEFAULT)


@dataclass
class Experiment:
    """A validated config: its runs, in file order (datasets, methods, depths, seeds)."""

    name: str
    description: str
    runs: list[RunSpec]
    source: str = ""
    compare: list[tuple[str, str]] | None = None  # declared (baseline, candidate) pairs; None: greedy vs optimal

    @property
    def fingerprint(self) -> str:
        """Hash of the sorted run ids: equal for configs that define the same runs (comments, order aside)."""
        return run_id({"runs": sorted(r.run_id for r in self.runs)})


# ---------------------------------------------------------------------------- canonical ids
def canonical(obj: Any) -> Any:
    """JSON-ready canonical form: integral floats become ints, dict keys sorted on dump."""
    if isinstance(obj, Mapping):
        return {str(k): canonical(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [canonical(v) for v in obj]
    if isinstance(obj, float):
        if not math.isfinite(obj):
            raise ValueError(f"non-finite number {obj!r} in a run config")
        return int(obj) if obj.is_integer() else obj
    return obj


def run_id(identity: Mapping) -> str:
    """Hash of the canonical JSON of a run's identity (sorted keys, canonical numbers)."""
    text = json.dumps(canonical(identity), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:ID_LENGTH]


# ---------------------------------------------------------------------------- loading
def load(path: str | Path, *, allow_plugins: bool = False) -> Experiment:
    """Read and validate a TOML config; raise :class:`ConfigError` on any problem.

    The modules listed under ``plugins`` are imported only with ``allow_plugins=True``.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError("", f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(path), f"invalid TOML: {exc}") from None
    return from_dict(data, default_name=path.stem, source=text, allow_plugins=allow_plugins,
                     root=str(path.resolve().parent))


def from_dict(
    data: Mapping, *, default_name: str = "experiment", source: str = "", allow_plugins: bool = False,
    root: str | None = None,
) -> Experiment:
    """Validate a parsed config and expand it into runs (``plugins`` imported only if ``allow_plugins``).

    ``root``: the directory relative CSV paths are read from (the config file's; default: the
    working directory).
    """
    _check_keys(data, TOP_KEYS, "")
    name = _typed(data, "name", str, "", default_name)
    description = _typed(data, "description", str, "", "")
    plugins = tuple(_list_of(data, "plugins", str, "", default=[]))
    if plugins and not allow_plugins:
        raise ConfigError(
            "plugins",
            f"this config imports code ({', '.join(plugins)}); run it with --allow-plugins if you trust it",
        )
    for i, module in enumerate(plugins):
        import_plugin(module, where=f"plugins[{i}]")
    protocol = _typed(data, "protocol", str, "", _protocols.DEFAULT)
    if protocol not in _protocols.PROTOCOLS:
        known = sorted(_protocols.PROTOCOLS)
        raise ConfigError("protocol", f"unknown protocol {protocol!r} (known: {', '.join(known)}){_suggest(protocol, known)}")
    proto = _protocols.get(protocol)
    depths = _list_of(data, "depths", int, "", minimum=1)
    seeds = _list_of(data, "seeds", int, "", minimum=0)
    for key in ("split", "cv"):
        if key in data and key != proto.settings:
            hint = "; set protocol = \"cv\" or \"nested-cv\" to cross-validate" if key == "cv" else ""
            raise ConfigError(key, f"protocol {protocol!r} reads [{proto.settings}], not [{key}]{hint}")
    split = _parse_split(data.get("split", {}))
    cv = _parse_cv(data.get("cv", {})) if proto.settings == "cv" else None

    dataset_entries = _entries(data, "datasets")
    method_entries = _entries(data, "methods")
    datasets = [v for i, e in enumerate(dataset_entries) for v in _dataset_variants(e, f"datasets[{i}]", root)]
    if cv is not None:
        for d in datasets:
            if "test_params" in d["identity"]:
                raise ConfigError(f"{d['where']}.test_params", f"protocol {protocol!r} makes its own test folds: "
                                  "load the rows to cross-validate with `params` instead")
    methods = [v for i, e in enumerate(method_entries) for v in _method_variants(e, f"methods[{i}]", split, proto)]
    _check_unique(datasets)
    labels = {d["base_label"] for d in datasets}
    for m in methods:
        for j, label in enumerate(m["only"] or ()):
            if label not in labels:
                raise ConfigError(
                    f"{m['entry']}.datasets[{j}]", f"no dataset labelled {label!r} (labels: {', '.join(sorted(labels))})"
                )

    # a method runs on the datasets of its task (and of its `datasets` list); each needs a partner
    pairs = [(d, m) for d in datasets for m in methods if _applies(m, d)]
    for m in methods:
        if not any(pm is m for _, pm in pairs):
            raise ConfigError(m["where"], f"method {m['identity']['name']!r} ({m['task']}) applies to no dataset")
    for d in datasets:
        if not any(pd is d for pd, _ in pairs):
            raise ConfigError(d["where"], f"dataset {d['label']!r} is a {d['task']} dataset, but no method applies to it")
    for m in methods:
        _check_tuned_depths(m, depths)
    seen: dict[tuple, str] = {}
    for d, m in pairs:
        key_id, key_label = ("id", d["label"], run_id(m["identity"])), ("label", d["label"], m["label"])
        for key, what in ((key_id, "same method and parameters"), (key_label, f"method label {m['label']!r}")):
            if key in seen:
                raise ConfigError(
                    m["where"], f"{what} as {seen[key]} on dataset {d['label']!r}: give a distinct `label` or params"
                )
            seen[key] = m["where"]

    units = proto.units(cv if cv is not None else split) if proto.units else [{}]
    runs = []
    for (d, m), depth, seed, unit in itertools.product(pairs, depths, seeds, units):
        identity = {"dataset": d["identity"], "method": m["identity"], "depth": depth, "seed": seed}
        if cv is None:
            identity["split"] = split
        else:
            identity["cv"] = cv
        if protocol != _protocols.DEFAULT:  # the default stays out of the id: old run ids are kept
            identity["protocol"] = protocol
        identity.update(unit)
        runs.append(RunSpec(run_id(identity), identity, d["label"], m["label"], plugins, root))
    compare = _check_compare(parse_compare(data), pairs) if "compare" in data else None
    return Experiment(name, description, runs, source, compare)


# ---------------------------------------------------------------------------- [[compare]]
def parse_compare(data: Mapping) -> list[tuple[str, str, str]] | None:
    """The ``[[compare]]`` entries of a parsed config as ``(baseline, candidate, where)``, checked for
    shape only (tables of two strings, no pair twice in either order); None when the config has none.

    Reading a results directory's ``grid.json`` needs no more than this (the report and the plots
    use it); :func:`from_dict` checks the labels against the grid's methods as well.
    """
    if "compare" not in data:
        return None
    entries = _entries(data, "compare")
    out, seen = [], {}
    for i, entry in enumerate(entries):
        where = f"compare[{i}]"
        _check_keys(entry, COMPARE_KEYS, where)
        baseline = _typed(entry, "baseline", str, where, None)
        candidate = _typed(entry, "candidate", str, where, None)
        if baseline == candidate:
            raise ConfigError(where, f"baseline and candidate are both {baseline!r}: a method is not compared "
                              "with itself; name two different method labels")
        key = frozenset((baseline, candidate))
        if key in seen:
            raise ConfigError(where, f"{baseline!r} and {candidate!r} are already compared by {seen[key]} "
                              "(one pair, one test: the reversed pair only flips the sign)")
        seen[key] = where
        out.append((baseline, candidate, where))
    return out


def declared_entries(data: Mapping, key: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """The ``[[datasets]]`` or ``[[methods]]`` (``key``) entries of a parsed config as ``(name, label,
    grid keys)``: enough to know a run's labels from its identity (:func:`variant_label`) without
    loading data or importing plugins. A malformed entry raises :class:`ConfigError`."""
    out = []
    for i, entry in enumerate(_entries(data, key)):
        where = f"{key}[{i}]"
        name = _typed(entry, "name", str, where, None)
        out.append((name, _typed(entry, "label", str, where, name), tuple(_grid(entry, "grid", where))))
    return out


def variant_label(label: str, grid_keys, params: Mapping) -> str:
    """The label of the variant of an entry (``label``, its ``grid`` keys) with ``params``: ``flow[start=cold]``."""
    return label + _suffix({k: params.get(k) for k in grid_keys})


def _check_compare(entries: list[tuple[str, str, str]], pairs: list[tuple[dict, dict]]) -> list[tuple[str, str]]:
    """The declared pairs, each label a method label of the grid, both of one task and run on a common dataset."""
    tasks: dict[str, set] = {}
    datasets: dict[str, set] = {}
    for d, m in pairs:
        tasks.setdefault(m["label"], set()).add(m["task"])
        datasets.setdefault(m["label"], set()).add(d["label"])
    labels = list(tasks)
    out = []
    for baseline, candidate, where in entries:
        for side, label in (("baseline", baseline), ("candidate", candidate)):
            if label not in tasks:
                raise ConfigError(f"{where}.{side}", f"no method labelled {label!r} (method labels: "
                                  f"{', '.join(labels)}){_suggest(label, labels)}")
        if not tasks[baseline] & tasks[candidate]:
            raise ConfigError(where, f"{baseline!r} is a {'/'.join(sorted(tasks[baseline]))} method and {candidate!r} "
                              f"a {'/'.join(sorted(tasks[candidate]))} method: they never run on the same data")
        if not datasets[baseline] & datasets[candidate]:
            raise ConfigError(where, f"{baseline!r} and {candidate!r} run on no common dataset (their `datasets` "
                              "lists do not overlap): there is nothing to pair")
        out.append((baseline, candidate))
    return out


def _applies(method: dict, dataset: dict) -> bool:
    return method["task"] == dataset["task"] and (method["only"] is None or dataset["base_label"] in method["only"])


def import_plugin(module: str, where: str = "plugins") -> None:
    """Import a plugin module (which registers methods); a clear ConfigError when it fails."""
    try:
        importlib.import_module(module)
    except Exception as exc:  # any failure inside the plugin is a config problem for the user
        raise ConfigError(where, f"cannot import plugin {module!r}: {type(exc).__name__}: {exc}") from None


# ---------------------------------------------------------------------------- sections
def _parse_split(split: Any) -> dict:
    if not isinstance(split, Mapping):
        raise ConfigError("split", f"expected a table, got {type(split).__name__}")
    _check_keys(split, SPLIT_KEYS, "split")
    test_size = _fraction(split, "test_size", "split", 0.25)
    validation_size = _fraction(split, "validation_size", "split", 0.0)
    if test_size + validation_size >= 1.0:
        raise ConfigError("split", f"test_size + validation_size must be < 1, got {test_size + validation_size:g}")
    stratify = _typed(split, "stratify", bool, "split", True)
    return {"test_size": test_size, "validation_size": validation_size, "stratify": stratify}


def _parse_cv(cv: Any) -> dict:
    if not isinstance(cv, Mapping):
        raise ConfigError("cv", f"expected a table, got {type(cv).__name__}")
    _check_keys(cv, CV_KEYS, "cv")
    out = {}
    for key in ("folds", "inner_folds"):
        value = cv.get(key, _protocols.CV_DEFAULTS[key])
        if isinstance(value, bool) or not isinstance(value, int) or value < 2:
            raise ConfigError(f"cv.{key}", f"expected an integer >= 2, got {value!r}")
        out[key] = value
    out["stratify"] = _typed(cv, "stratify", bool, "cv", True)
    return out


def _dataset_variants(entry: Mapping, where: str, root: str | None = None) -> list[dict]:
    """The entry's variants; the data is loaded once per entry (its first variant) to learn task and width."""
    _check_keys(entry, DATASET_KEYS, where)
    name = _typed(entry, "name", str, where, None)
    known = _datasets.dataset_names()
    if name not in known:
        raise ConfigError(f"{where}.name", f"unknown dataset {name!r} (known: {', '.join(known)}){_suggest(name, known)}")
    label = _typed(entry, "label", str, where, name)
    params = _table(entry, "params", where)
    grid = _grid(entry, "grid", where)
    test_params = _table(entry, "test_params", where) if "test_params" in entry else None
    missing = entry.get("missing", _datasets.MISSING[0])
    try:
        _datasets.check_missing(missing, label)
    except ValueError as exc:
        raise ConfigError(f"{where}.missing", str(exc)) from None
    _check_disjoint(params, grid, f"{where}.grid")
    variants = []
    for i, combo in enumerate(_product(grid)):
        full = {**params, **combo}
        vwhere = where + _suffix(combo)
        if i == 0:
            task, n_features = _probe_dataset(name, full, vwhere, root)
        if i == 0 and test_params is not None:
            _, test_features = _probe_dataset(name, {**full, **test_params}, f"{vwhere}.test_params", root)
            if test_features != n_features:
                raise ConfigError(
                    f"{where}.test_params", f"test set has {test_features} features, training set {n_features}"
                )
        identity = {"name": name, "params": full}
        if test_params is not None:
            identity["test_params"] = test_params
        if missing != _datasets.MISSING[0]:  # the default stays out of the id: existing run ids are kept
            identity["missing"] = missing
        variants.append(
            {"identity": identity, "label": label + _suffix(combo), "base_label": label, "task": task, "where": vwhere}
        )
    return variants


def _probe_dataset(name: str, params: dict, where: str, root: str | None = None) -> tuple[str, int]:
    """Load the dataset (once per process) to check its parameters; returns (task, n_features)."""
    try:
        return _datasets.probe(name, params, root)
    except (TypeError, ValueError, KeyError, OSError) as exc:
        raise ConfigError(f"{where}.params", f"dataset {name!r} rejects {params}: {exc}") from None


def _method_variants(entry: Mapping, where: str, split: dict, protocol=None) -> list[dict]:
    _check_keys(entry, METHOD_KEYS, where)
    name = _typed(entry, "name", str, where, None)
    if name not in _methods.METHODS:
        known = sorted(_methods.METHODS)
        raise ConfigError(f"{where}.name", f"unknown method {name!r} (known: {', '.join(known)}){_suggest(name, known)}")
    method = _methods.METHODS[name]
    label = _typed(entry, "label", str, where, name)
    params = _method_params(method, _table(entry, "params", where), f"{where}.params")
    grid = {
        k: [_method_param(method, k, v, f"{where}.grid.{k}[{j}]") for j, v in enumerate(values)]
        for k, values in _grid(entry, "grid", where).items()
    }
    tune = {  # sorted: the order candidates are listed in changes neither the run id nor the choice
        k: sorted(_tune_value(method, k, v, f"{where}.tune.{k}[{j}]") for j, v in enumerate(values))
        for k, values in _grid(entry, "tune", where).items()
    }
    _check_disjoint(params, grid, f"{where}.grid")
    _check_disjoint(params, tune, f"{where}.tune")
    _check_disjoint(grid, tune, f"{where}.tune")
    tunes = "validation" if protocol is None else protocol.tunes
    if tune and tunes is None:
        raise ConfigError(f"{where}.tune", f"protocol {protocol.name!r} does not tune: use protocol = \"nested-cv\" "
                          "(inner folds) or \"holdout\" with a validation set")
    if tune and tunes == "validation" and split["validation_size"] <= 0:
        raise ConfigError(f"{where}.tune", "tuning needs a validation set: set split.validation_size > 0")
    only = _list_of(entry, "datasets", str, where) if "datasets" in entry else None
    variants = []
    for combo in _product(grid):
        full = {**method.defaults(), **params, **combo}
        for candidate in _product(tune) if tune else [{}]:
            candidate = {k: v for k, v in candidate.items() if k != _protocols.TUNE_DEPTH}
            try:
                method.check({**full, **candidate})
            except (TypeError, ValueError) as exc:
                raise ConfigError(where + _suffix(combo), f"method {name!r} rejects its parameters: {exc}") from None
        identity = {"name": name, "params": full}
        if tune:
            identity["tune"] = tune
        variants.append(
            {
                "identity": identity,
                "label": label + _suffix(combo),
                "task": method.task,
                "where": where + _suffix(combo),
                "entry": where,
                "only": only,
            }
        )
    return variants


def _check_tuned_depths(method: dict, depths: list[int]) -> None:
    """Refuse a ``tune`` grid whose ``depth`` candidates all exceed one of the grid's depths: its runs at
    that depth would have no candidate left (candidates above the run's depth are left out)."""
    tuned = method["identity"].get("tune", {}).get(_protocols.TUNE_DEPTH)
    shallow = [d for d in depths if tuned and d < min(tuned)]
    if shallow:
        raise ConfigError(
            f"{method['entry']}.tune.{_protocols.TUNE_DEPTH}",
            f"every tuned depth {tuned} exceeds the run's depth {shallow[0]} (depths = {depths}): those runs "
            f"would have no depth candidate; add a depth <= {shallow[0]} to the tune grid or remove "
            f"{', '.join(map(str, shallow))} from depths")


def _tune_value(method: _methods.Method, key: str, value: Any, where: str) -> Any:
    """A tune candidate: a method parameter, or ``depth`` (an integer >= 1, handled by the protocol)."""
    if key == _protocols.TUNE_DEPTH and key not in method.params:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(where, f"a tuned depth must be an integer >= 1, got {value!r}")
        return value
    return _method_param(method, key, value, where)


def _method_params(method: _methods.Method, params: Mapping, where: str) -> dict:
    return {k: _method_param(method, k, v, f"{where}.{k}") for k, v in params.items()}


def _method_param(method: _methods.Method, key: str, value: Any, where: str) -> Any:
    if key not in method.params:
        known = sorted(method.params)
        raise ConfigError(
            where, f"unknown parameter {key!r} for method {method.name!r} (known: {', '.join(known)}){_suggest(key, known)}"
        )
    try:
        return method.params[key].coerce(value)
    except (TypeError, ValueError) as exc:
        raise ConfigError(where, str(exc)) from None


# ---------------------------------------------------------------------------- helpers
def _entries(data: Mapping, key: str) -> list[Mapping]:
    entries = data.get(key)
    if entries is None:
        raise ConfigError(key, f"missing: add at least one [[{key}]] table")
    if not isinstance(entries, list) or not entries:
        raise ConfigError(key, f"expected a non-empty array of tables ([[{key}]]), got {entries!r}")
    for i, e in enumerate(entries):
        if not isinstance(e, Mapping):
            raise ConfigError(f"{key}[{i}]", f"expected a table, got {type(e).__name__} {e!r}")
    return entries


def _check_keys(table: Mapping, allowed: tuple[str, ...], where: str) -> None:
    for key in table:
        if key not in allowed:
            path = f"{where}.{key}" if where else key
            raise ConfigError(path, f"unknown key (allowed: {', '.join(allowed)}){_suggest(key, allowed)}")


def _suggest(word: str, options) -> str:
    close = difflib.get_close_matches(str(word), list(options), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _typed(table: Mapping, key: str, typ: type, where: str, default: Any) -> Any:
    path = f"{where}.{key}" if where else key
    if key not in table:
        if default is None:
            raise ConfigError(path, "missing")
        return default
    value = table[key]
    if not isinstance(value, typ) or (typ is int and isinstance(value, bool)):
        raise ConfigError(path, f"expected {typ.__name__}, got {type(value).__name__} {value!r}")
    return value


def _fraction(table: Mapping, key: str, where: str, default: float) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
        raise ConfigError(f"{where}.{key}", f"expected a number in [0, 1), got {value!r}")
    return float(value)


def _list_of(table: Mapping, key: str, typ: type, where: str, *, minimum=None, default=None) -> list:
    path = f"{where}.{key}" if where else key
    if key not in table:
        if default is None:
            raise ConfigError(path, "missing")
        return default
    values = table[key]
    if not isinstance(values, list) or not values and default is None:
        raise ConfigError(path, f"expected a non-empty list, got {values!r}")
    for j, v in enumerate(values):
        if not isinstance(v, typ) or (typ is int and isinstance(v, bool)):
            raise ConfigError(f"{path}[{j}]", f"expected {typ.__name__}, got {type(v).__name__} {v!r}")
        if minimum is not None and v < minimum:
            raise ConfigError(f"{path}[{j}]", f"must be >= {minimum}, got {v!r}")
    if len(set(values)) != len(values):
        raise ConfigError(path, f"duplicate values in {values!r}")
    return list(values)


def _table(entry: Mapping, key: str, where: str) -> dict:
    value = entry.get(key, {})
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}.{key}", f"expected a table, got {type(value).__name__} {value!r}")
    for k, v in value.items():
        _check_plain(v, f"{where}.{key}.{k}")
    return dict(value)


def _check_plain(value: Any, where: str) -> None:
    """Only TOML strings, numbers, booleans and arrays/tables of them (no dates)."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            _check_plain(v, f"{where}.{k}")
    elif isinstance(value, list):
        for j, v in enumerate(value):
            _check_plain(v, f"{where}[{j}]")
    elif isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(where, f"expected a finite number, got {value!r}")
    elif not isinstance(value, (str, int, float, bool)):
        raise ConfigError(where, f"unsupported value {value!r} ({type(value).__name__})")


def _grid(entry: Mapping, key: str, where: str) -> dict:
    grid = _table(entry, key, where)
    for k, values in grid.items():
        if not isinstance(values, list) or not values:
            raise ConfigError(f"{where}.{key}.{k}", f"expected a non-empty list of values, got {values!r}")
        if len({json.dumps(canonical(v), sort_keys=True) for v in values}) != len(values):
            raise ConfigError(f"{where}.{key}.{k}", f"duplicate values in {values!r}")
    return grid


def _check_disjoint(a: Mapping, b: Mapping, where: str) -> None:
    both = sorted(set(a) & set(b))
    if both:
        raise ConfigError(where, f"{', '.join(both)} set in more than one of params/grid/tune")


def _product(grid: Mapping) -> list[dict]:
    keys = list(grid)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(grid[k] for k in keys))]


def _suffix(combo: Mapping) -> str:
    return "[" + ",".join(f"{k}={v}" for k, v in combo.items()) + "]" if combo else ""


def _check_unique(datasets: list[dict]) -> None:
    """Dataset variants must differ in identity and in label."""
    seen_ids: dict[str, str] = {}
    seen_labels: dict[str, str] = {}
    for v in datasets:
        key = run_id(v["identity"])
        if key in seen_ids:
            raise ConfigError(v["where"], f"same dataset and parameters as {seen_ids[key]}")
        if v["label"] in seen_labels:
            raise ConfigError(
                v["where"], f"label {v['label']!r} already used by {seen_labels[v['label']]}: give a distinct `label`"
            )
        seen_ids[key] = v["where"]
        seen_labels[v["label"]] = v["where"]
