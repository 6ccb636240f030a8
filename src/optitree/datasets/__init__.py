"""Benchmark data sets that need no download, plus CSV and OpenML loaders.

>>> from optitree import datasets
>>> X, y, info = datasets.load("monks1", subset="train")
>>> sorted(datasets.list())[:3]
['airfoil', 'balance_scale', 'breast_cancer']

Every loader returns ``(X, y, info)``: ``X`` float64 of shape (n, F); ``y`` the
labels as published (strings such as ``"positive"`` or ``"unacc"`` where the
source names its classes, integers 0/1 for MONK's and the synthetic Boolean
sets, scikit-learn's integer codes for its bundled sets, floats for
regression); ``info`` a dict with ``name``, ``description``, ``task``,
``feature_names``, ``class_names`` (``class_names[k]`` names the k-th label of
``numpy.unique(y)``, i.e. of an estimator's ``classes_``), ``categorical`` (indices of
categorical features), ``categories`` (``categories[j][c]`` is the published
value of code ``c``), ``source``, ``citation`` and ``notes``.

Categorical attributes are 0-based integer codes.

Credits
-------
The regenerated sets reproduce data from the UCI Machine Learning Repository
(Kelly, Longjohn & Nottingham, https://archive.ics.uci.edu), licensed CC BY 4.0:
Balance Scale (Siegler 1976; donor Tim Hume), Tic-Tac-Toe Endgame (donor David W.
Aha; Matheus & Rendell 1989), MONK's Problems (Thrun et al. 1991; donor Sebastian
Thrun), Car Evaluation (Bohanec & Rajkovic 1988; donors Marko Bohanec and Blaz
Zupan; the rule tables here are a reconstruction), Lenses (Cendrowska 1987; donor
Benoit Julien). iris, wine, breast_cancer and digits are scikit-learn's copies of
UCI sets; diabetes is from Efron et al. (2004).

Two real regression sets are bundled as CSV files in ``optitree/datasets/data`` (about
50 KB each), copied from the UCI Machine Learning Repository, licensed CC BY 4.0:
Concrete Compressive Strength (``concrete.csv``; Yeh, I-C. (1998), Modeling of strength of
high-performance concrete using artificial neural networks, Cement and Concrete Research
28(12); donor I-Cheng Yeh; every value of UCI's Concrete_Data.xls at full precision) and
Airfoil Self-Noise (``airfoil_self_noise.csv``; Brooks, T. F., Pope, D. S. & Marcolini,
M. A. (1989), Airfoil self-noise and prediction, NASA Reference Publication 1218; donor
Roberto Lopez; UCI's airfoil_self_noise.dat with a header). friedman1-3 come from
scikit-learn's generators (Friedman 1991; Breiman 1996).
"""

from __future__ import annotations

import builtins
import functools
import inspect

from . import _files, _generated
from ._files import load_csv, load_openml

_REGISTRY = {
    "xor": (_generated.xor, "continuous XOR on [0,1]^d with optional label noise and irrelevant features"),
    "parity": (_generated.parity, "k-parity on {0,1}^(k+m), all rows or a seeded sample"),
    "multiplexer6": (_generated.multiplexer6, "6-multiplexer, all 64 rows"),
    "balance_scale": (_generated.balance_scale, "UCI balance scale, 625 rows, 3 classes"),
    "tic_tac_toe": (_generated.tic_tac_toe, "UCI tic-tac-toe endgame, 958 boards, binary"),
    "monks1": (functools.partial(_generated.monks, 1), "UCI MONK's problem 1 (subset train/test/all)"),
    "monks2": (functools.partial(_generated.monks, 2), "UCI MONK's problem 2 (subset train/test/all)"),
    "monks3": (functools.partial(_generated.monks, 3),
               "UCI MONK's problem 3, 5 % training noise (subset train/test/all)"),
    "car": (_generated.car, "UCI car evaluation, 1728 rows, 4 classes (reconstructed rule tables)"),
    "lenses": (_generated.lenses, "UCI lenses, 24 rows, 3 classes"),
    "iris": (_files.iris, "iris (scikit-learn bundled), 150 rows, 3 classes"),
    "wine": (_files.wine, "wine (scikit-learn bundled), 178 rows, 3 classes"),
    "breast_cancer": (_files.breast_cancer, "breast cancer Wisconsin (scikit-learn bundled), 569 rows, 2 classes"),
    "digits": (_files.digits, "8x8 digits (scikit-learn bundled), 1797 rows, 10 classes"),
    "diabetes": (_files.diabetes, "diabetes (scikit-learn bundled), 442 rows, regression"),
    "xor_regression": (_generated.xor_regression,
                       "XOR step of 2 features on [0,1]^6 plus Gaussian noise, 600 rows, regression"),
    "friedman1": (_generated.friedman1, "Friedman #1, 10 features (5 relevant), 1000 rows, regression"),
    "friedman2": (_generated.friedman2, "Friedman #2, 4 features, 1000 rows, regression"),
    "friedman3": (_generated.friedman3, "Friedman #3, 4 features, 1000 rows, regression"),
    "concrete": (_files.concrete, "UCI concrete compressive strength (bundled CSV), 1030 rows, regression"),
    "airfoil": (_files.airfoil, "UCI/NASA airfoil self-noise (bundled CSV), 1503 rows, regression"),
}


def list_datasets() -> dict[str, str]:
    """Names of the built-in data sets, each with a one-line description."""
    return {name: description for name, (_, description) in _REGISTRY.items()}


def _normalise(name: str) -> str:
    if not isinstance(name, str):
        raise TypeError(f"data set name must be a string, got {type(name).__name__}")
    return name.strip().lower().replace("-", "_").replace("'", "")


def load(name: str, **params):
    """Load a built-in data set by name as ``(X, y, info)``.

    Names (case and ``-``/``_`` insensitive) are listed by :func:`list_datasets`.
    Parameters, with defaults; every random draw uses ``numpy.random.RandomState(seed)``:

    * ``xor``: ``n=200, d=2, noise=0.0, n_irrelevant=0, seed=0`` -- ``X ~ U[0,1]^(d+n_irrelevant)``,
      ``y = XOR_j 1[x_j > 0.5]`` over the first ``d`` columns, each label flipped with
      probability ``noise``;
    * ``parity``: ``k=3, n_irrelevant=0, noise=0.0, n=None, seed=0`` -- ``n=None`` gives all
      ``2**(k+n_irrelevant)`` rows, else ``n`` sampled rows;
    * ``monks1``/``monks2``/``monks3``: ``subset="train"`` (official training rows), ``"test"``
      (all 432) or ``"all"`` (train followed by test);
    * ``diabetes``: ``scaled=True`` (scikit-learn's scaling; ``False`` for original units);
    * ``xor_regression``: ``n=600, d=2, noise=0.25, n_irrelevant=4, seed=0`` -- ``X ~ U[0,1]^(d+n_irrelevant)``,
      ``y = XOR_j 1[x_j > 0.5] + noise * N(0, 1)`` over the first ``d`` columns;
    * ``friedman1``/``friedman2``/``friedman3``: ``n=1000, seed=0`` and ``noise`` 1.0 / 125.0 / 0.1
      (the noise's standard deviation; scikit-learn's ``make_friedman1/2/3``).

    ``concrete`` and ``airfoil`` are real regression sets bundled as small CSV files.

    The others take no parameters. The chosen values are echoed in ``info["params"]``.
    """
    key = _normalise(name)
    if key not in _REGISTRY:
        raise ValueError(f"unknown data set {name!r}; available: {', '.join(_REGISTRY)}")
    loader = _REGISTRY[key][0]
    accepted = builtins.list(inspect.signature(loader).parameters)
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise TypeError(f"data set {key!r} does not take {unknown}; it accepts {accepted or 'no parameters'}")
    return loader(**params)


list = list_datasets  # ``optitree.datasets.list()``; shadows the builtin inside this module only

__all__ = ["load", "list", "list_datasets", "load_csv", "load_openml"]
