"""Data sets regenerated exactly from their published definitions (no download).

Every generator returns ``(X, y, info)``. Definitions, class counts and the
MONK's training row ids follow ``DATASETS.md`` (checked there against copies of
the original UCI files). Categorical attributes are 0-based integer codes;
``info["categories"][j][c]`` is the published value of code ``c`` of feature ``j``.
"""

from __future__ import annotations

import itertools

import numpy as np

from ._info import UCI_CREDIT, make_info

# ---------------------------------------------------------------- synthetic


def _check_fraction(name: str, value) -> float:
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must lie in [0, 1], got {value}")
    return value


def _check_count(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _flip(y: np.ndarray, noise: float, rng: np.random.RandomState) -> tuple[np.ndarray, np.ndarray]:
    """Flip 0/1 labels independently with probability ``noise`` (one uniform draw per row)."""
    flipped = rng.uniform(size=y.shape[0]) < noise
    return np.where(flipped, 1 - y, y), flipped


def _bit_names(n_relevant: int, n_irrelevant: int) -> list[str]:
    return [f"x{j}" for j in range(n_relevant)] + [f"irrelevant{j}" for j in range(n_irrelevant)]


def _xor_step(n, d, n_irrelevant, seed):
    """``X ~ U[0,1]^(d + n_irrelevant)`` (``RandomState(seed)``), the 0/1 XOR of ``x_j > 0.5`` over the first
    ``d`` columns, and the random stream for what comes next (noise) -- shared by ``xor`` and ``xor_regression``."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(size=(n, d + n_irrelevant))
    return X, ((X[:, :d] > 0.5).sum(axis=1) % 2).astype(np.float64), rng


def xor(n: int = 200, d: int = 2, noise: float = 0.0, n_irrelevant: int = 0, seed: int = 0):
    """Continuous XOR: ``X ~ U[0, 1]^(d + n_irrelevant)``, ``y = XOR_j 1[x_j > 0.5]`` over the first ``d``.

    Draw order with ``numpy.random.RandomState(seed)`` (byte-stable across numpy
    versions): ``X = rng.uniform(size=(n, d + n_irrelevant))``, then one
    ``rng.uniform(size=n)`` whose entries below ``noise`` flip the label.
    """
    n = _check_count("n", n, 1)
    d = _check_count("d", d, 1)
    n_irrelevant = _check_count("n_irrelevant", n_irrelevant, 0)
    noise = _check_fraction("noise", noise)
    X, step, rng = _xor_step(n, d, n_irrelevant, seed)
    y, flipped = _flip(step.astype(np.int64), noise, rng)
    return X, y, make_info(
        "xor",
        description=f"continuous XOR of {d} features on [0, 1] (+{n_irrelevant} irrelevant), label noise {noise}",
        source="synthetic",
        citation="Synthetic benchmark: y = XOR over j < d of 1[x_j > 0.5].",
        feature_names=_bit_names(d, n_irrelevant),
        y=y,
        task="classification",
        params=dict(n=n, d=d, noise=noise, n_irrelevant=n_irrelevant, seed=seed),
        relevant_features=list(range(d)),
        n_flipped=int(flipped.sum()),
        notes="X ~ U[0,1]^(d+n_irrelevant) drawn with numpy.random.RandomState(seed); then one uniform "
        "draw per row flips the label when below `noise`.",
    )


def parity(k: int = 3, n_irrelevant: int = 0, noise: float = 0.0, n: int | None = None, seed: int = 0):
    """k-parity on ``{0,1}^(k+m)``: ``y = (x_0 + ... + x_{k-1}) mod 2`` with ``m = n_irrelevant`` irrelevant bits.

    ``n=None`` gives all ``2**(k+m)`` rows in binary counting order (first bit
    slowest); otherwise ``n`` rows are drawn as ``rng.randint(0, 2, size=(n, k+m))``
    with ``rng = numpy.random.RandomState(seed)``. Label noise then flips each
    label when a further ``rng.uniform`` draw is below ``noise``.
    """
    k = _check_count("k", k, 1)
    m = _check_count("n_irrelevant", n_irrelevant, 0)
    noise = _check_fraction("noise", noise)
    rng = np.random.RandomState(seed)
    if n is None:
        if k + m > 24:
            raise ValueError(f"k + n_irrelevant = {k + m} is too large to enumerate all rows; pass n to sample")
        X = np.array(list(itertools.product((0, 1), repeat=k + m)), dtype=np.int64).reshape(-1, k + m)
    else:
        n = _check_count("n", n, 1)
        X = rng.randint(0, 2, size=(n, k + m))
    clean = (X[:, :k].sum(axis=1) % 2).astype(np.int64)
    y, flipped = _flip(clean, noise, rng)
    return X.astype(np.float64), y, make_info(
        "parity",
        description=f"{k}-parity on {{0,1}}^{k + m} ({m} irrelevant bits), label noise {noise}",
        source="synthetic",
        citation="Synthetic benchmark: y = (x_0 + ... + x_{k-1}) mod 2.",
        feature_names=_bit_names(k, m),
        y=y,
        task="classification",
        params=dict(k=k, n_irrelevant=m, noise=noise, n=n, seed=seed),
        relevant_features=list(range(k)),
        n_flipped=int(flipped.sum()),
        notes="n=None enumerates all rows (first bit slowest); otherwise rows are sampled with "
        "numpy.random.RandomState(seed).randint, then label noise is drawn from the same stream.",
    )


def multiplexer6():
    """6-multiplexer: ``x = (a1, a0, d0, d1, d2, d3)``, ``y = d[2·a1 + a0]``; all 64 rows, a1 slowest."""
    X = np.array(list(itertools.product((0, 1), repeat=6)), dtype=np.int64)
    y = X[np.arange(64), 2 + 2 * X[:, 0] + X[:, 1]]
    return X.astype(np.float64), y, make_info(
        "multiplexer6",
        description="6-multiplexer: two address bits select one of four data bits (64 rows)",
        source="synthetic",
        citation="Boolean multiplexer benchmark (e.g. Wilson 1995, 'Classifier fitness based on accuracy').",
        feature_names=["a1", "a0", "d0", "d1", "d2", "d3"],
        y=y,
        task="classification",
        notes="Rows enumerate {0,1}^6 in binary counting order with a1 slowest.",
    )


# ---------------------------------------------------------------- UCI reconstructions


def balance_scale():
    """Balance scale (625 rows): class L / B / R by ``LW·LD`` versus ``RW·RD``; right-distance fastest."""
    X = np.array(list(itertools.product(range(1, 6), repeat=4)), dtype=np.float64)
    torque = X[:, 0] * X[:, 1] - X[:, 2] * X[:, 3]
    y = np.where(torque > 0, "L", np.where(torque < 0, "R", "B"))
    return X, y, make_info(
        "balance_scale",
        description="balance scale tip direction from weights and distances (625 rows; L/B/R 288/49/288)",
        source="UCI Machine Learning Repository, Balance Scale (https://archive.ics.uci.edu/dataset/12)",
        citation="Siegler, R. S. (1976). Three aspects of cognitive development. Cognitive Psychology 8. "
        "Donor: Tim Hume. " + UCI_CREDIT,
        license="CC BY 4.0",
        feature_names=["left_weight", "left_distance", "right_weight", "right_distance"],
        y=y,
        task="classification",
        notes="Regenerated: all 5^4 attribute combinations in UCI order (right_distance fastest); "
        "attributes are the numbers 1..5 (not categorical codes); labels are the UCI symbols.",
    )


_TTT_LINES = np.array([[0, 1, 2], [3, 4, 5], [6, 7, 8], [0, 3, 6], [1, 4, 7], [2, 5, 8], [0, 4, 8], [2, 4, 6]])
_TTT_SQUARES = [f"{r}_{c}_square" for r in ("top", "middle", "bottom") for c in ("left", "middle", "right")]


def tic_tac_toe():
    """Tic-tac-toe endgame (958 boards): every final board when x moves first; positive = x won.

    A board (codes x=0, o=1, b=2) is final and reachable iff x has a line, o has
    none and ``#x = #o + 1``; or o has a line, x has none and ``#x = #o``; or it
    is full (5 x, 4 o) with no line. (Five marks hold at most two lines, and two
    lines then share the square played last, so no further check is needed.)
    """
    boards = np.array(list(itertools.product((0, 1, 2), repeat=9)), dtype=np.int64)
    n_x, n_o = (boards == 0).sum(axis=1), (boards == 1).sum(axis=1)
    line_marks = boards[:, _TTT_LINES]  # (n, 8, 3)
    x_wins = (line_marks == 0).all(axis=2).any(axis=1)
    o_wins = (line_marks == 1).all(axis=2).any(axis=1)
    x_final = x_wins & ~o_wins & (n_x == n_o + 1)
    o_final = o_wins & ~x_wins & (n_x == n_o)
    draw = ~x_wins & ~o_wins & (n_x == 5) & (n_o == 4)
    # itertools.product already yields lexicographic order (x < o < b); keep it within each block
    X = np.concatenate([boards[x_final], boards[o_final], boards[draw]]).astype(np.float64)
    y = np.array(["positive"] * int(x_final.sum()) + ["negative"] * int(o_final.sum() + draw.sum()))
    return X, y, make_info(
        "tic_tac_toe",
        description="tic-tac-toe endgame: does x have three in a row? (958 boards; 626 positive)",
        source="UCI Machine Learning Repository, Tic-Tac-Toe Endgame (https://archive.ics.uci.edu/dataset/101)",
        citation="Aha, D. W. (1991), donor; Matheus, C. J. & Rendell, L. A. (1989). Constructive induction "
        "on decision trees. IJCAI. " + UCI_CREDIT,
        license="CC BY 4.0",
        feature_names=_TTT_SQUARES,
        y=y,
        task="classification",
        categorical=list(range(9)),
        categories={j: ["x", "o", "b"] for j in range(9)},
        notes="Regenerated by enumerating boards; UCI row order (x wins, o wins, draws; each block "
        "lexicographic with x < o < b). Square codes: x=0, o=1, b(lank)=2.",
    )


_MONK_LEVELS = (3, 3, 2, 3, 4, 2)
_MONK_TRAIN_IDS = {
    1: """5 6 19 22 27 28 37 39 42 50 51 53 56 57 61 62 64 67 72 76 86 87 88 92 93 94 99 103 107 111 114
    116 117 119 120 124 130 132 134 135 136 137 139 143 144 149 150 153 154 156 157 159 160 167 172 173
    176 181 184 188 191 195 196 197 206 209 210 212 214 216 217 222 223 224 227 239 241 249 253 258 261
    264 270 273 274 275 286 289 290 297 300 308 313 316 324 326 332 337 344 346 352 361 362 366 377 379
    383 385 387 392 398 400 402 403 404 408 409 414 415 416 426 428 430 432""",
    2: """4 7 9 10 11 13 15 19 23 25 26 37 39 40 42 44 50 58 60 61 62 63 65 66 68 69 70 71 72 75 79 85 87
    89 90 93 94 95 96 98 100 101 102 107 108 110 111 116 117 120 125 126 127 130 134 136 139 145 148 149
    156 162 164 166 167 169 172 175 179 184 185 186 188 190 192 197 200 201 205 213 214 215 217 220 222
    223 224 225 228 229 233 235 236 240 241 242 246 249 253 254 256 258 259 263 266 267 269 272 273 275
    278 285 286 288 295 298 300 302 303 304 305 306 308 310 313 316 317 318 319 320 323 330 331 332 336
    338 340 341 342 346 347 353 355 357 358 361 364 365 366 369 371 372 374 377 382 384 385 387 389 390
    398 409 417 419 421 422 425 427 432""",
    3: """2 3 4 5 7 9 12 16 28 32 36 39 40 41 42 45 46 53 59 60 61 65 66 67 68 70 71 77 80 81 83 84 89 91
    92 99 103 110 111 113 117 121 122 123 128 134 136 143 145 146 151 152 153 154 164 166 167 172 183 186
    198 200 202 203 209 212 213 214 216 220 226 229 230 239 245 249 251 252 254 261 266 268 271 277 280
    281 283 288 289 291 293 304 306 312 315 326 328 329 340 343 349 354 364 366 370 377 382 383 390 391
    400 401 403 404 407 409 410 420 422 425 430 432""",
}
_MONK3_NOISY_IDS = (5, 61, 203, 213, 214, 391)
_MONK_RULES = {
    1: "a1 = a2 or a5 = 1",
    2: "exactly two of a1..a6 equal 1",
    3: "(a5 = 3 and a4 = 1) or (a5 != 4 and a2 != 3)",
}


def _monk_label(problem: int, A: np.ndarray) -> np.ndarray:
    """Noise-free MONK's concept on published attribute values ``A`` (1-based)."""
    a1, a2, a3, a4, a5, a6 = A.T
    if problem == 1:
        out = (a1 == a2) | (a5 == 1)
    elif problem == 2:
        out = (A == 1).sum(axis=1) == 2
    else:
        out = ((a5 == 3) & (a4 == 1)) | ((a5 != 4) & (a2 != 3))
    return out.astype(np.int64)


def monks(problem: int, subset: str = "train"):
    """MONK's problem ``problem`` (1, 2 or 3); ``subset`` is "train", "test" (all 432 rows) or "all" (train then test)."""
    if subset not in ("train", "test", "all"):
        raise ValueError(f"subset must be 'train', 'test' or 'all', got {subset!r}")
    values = np.array(list(itertools.product(*(range(1, k + 1) for k in _MONK_LEVELS))), dtype=np.int64)
    test_y = _monk_label(problem, values)
    train_ids = np.array(_MONK_TRAIN_IDS[problem].split(), dtype=np.int64)
    train_y = test_y[train_ids - 1].copy()
    if problem == 3:
        train_y[np.isin(train_ids, _MONK3_NOISY_IDS)] ^= 1
    test_ids = np.arange(1, 433)
    ids, y = {
        "train": (train_ids, train_y),
        "test": (test_ids, test_y),
        "all": (np.concatenate([train_ids, test_ids]), np.concatenate([train_y, test_y])),
    }[subset]
    X = (values[ids - 1] - 1).astype(np.float64)
    noise = " (training labels carry the published 5 % noise)" if problem == 3 else ""
    return X, y, make_info(
        f"monks{problem}",
        description=f"MONK's problem {problem}: {_MONK_RULES[problem]} ({subset} subset){noise}",
        source="UCI Machine Learning Repository, MONK's Problems (https://archive.ics.uci.edu/dataset/70)",
        citation="Thrun, S. B. et al. (1991). The MONK's problems: a performance comparison of different "
        "learning algorithms. CMU-CS-91-197. Donor: Sebastian Thrun. " + UCI_CREDIT,
        license="CC BY 4.0",
        feature_names=["a1", "a2", "a3", "a4", "a5", "a6"],
        y=y,
        task="classification",
        categorical=list(range(6)),
        categories={j: list(range(1, k + 1)) for j, k in enumerate(_MONK_LEVELS)},
        params=dict(subset=subset),
        row_ids=ids.tolist(),
        notes="Regenerated: the 432 attribute combinations (a1 slowest, a6 fastest; UCI id data_k = k-th "
        "row); the official training row ids; MONK-3 training rows 5 61 203 213 214 391 have flipped "
        "labels. Attribute codes are 0-based: code c means published value c + 1.",
    )


_CAR_LEVELS = {
    "buying": ["vhigh", "high", "med", "low"],
    "maint": ["vhigh", "high", "med", "low"],
    "doors": ["2", "3", "4", "5more"],
    "persons": ["2", "4", "more"],
    "lug_boot": ["small", "med", "big"],
    "safety": ["low", "med", "high"],
}
_CAR_PRICE = np.array([[0, 0, 1, 1], [0, 1, 1, 1], [1, 1, 2, 3], [1, 2, 3, 3]])
_CAR_TECH = np.array([[0, 0, 0], [0, 1, 2], [0, 2, 3]])
_CAR_CLASS = np.array(
    [
        ["unacc", "unacc", "unacc", "unacc"],
        ["unacc", "unacc", "acc", "acc"],
        ["unacc", "acc", "acc", "vgood"],
        ["unacc", "acc", "good", "vgood"],
    ]
)


def _car_comfort(doors: np.ndarray, persons: np.ndarray, lug: np.ndarray) -> np.ndarray:
    """Reconstructed COMFORT table of DATASETS.md (0 = worst)."""
    med_lug = np.where(persons == 1, np.where(doors <= 1, 1, 2), np.where(doors == 0, 1, 2))
    comfort = np.select([lug == 2, lug == 0], [2, 1], default=med_lug)
    unacceptable = (persons == 0) | ((persons == 2) & (doors == 0) & (lug == 0))
    return np.where(unacceptable, 0, comfort)


def car():
    """Car evaluation (1 728 rows) from the reconstructed concept hierarchy of DATASETS.md."""
    codes = np.array(list(itertools.product(*(range(len(v)) for v in _CAR_LEVELS.values()))), dtype=np.int64)
    buying, maint, doors, persons, lug, safety = codes.T
    price = _CAR_PRICE[buying, maint]
    tech = _CAR_TECH[_car_comfort(doors, persons, lug), safety]
    y = _CAR_CLASS[price, tech]
    return codes.astype(np.float64), y, make_info(
        "car",
        description="car acceptability from price and technical attributes (1728 rows; 4 classes)",
        source="UCI Machine Learning Repository, Car Evaluation (https://archive.ics.uci.edu/dataset/19)",
        citation="Bohanec, M. & Rajkovic, V. (1988). Knowledge acquisition and explanation for multi-attribute "
        "decision making. Donors: Marko Bohanec, Blaz Zupan. " + UCI_CREDIT,
        license="CC BY 4.0",
        feature_names=list(_CAR_LEVELS),
        y=y,
        task="classification",
        categorical=list(range(6)),
        categories=dict(enumerate(_CAR_LEVELS.values())),
        notes="RECONSTRUCTION: the original DEX expert tables are not published in full; the PRICE, "
        "COMFORT, TECH and CAR tables used here reproduce all 1728 UCI labels and the UCI row order "
        "(buying slowest). Codes follow the UCI level order (buying/maint: vhigh=0 .. low=3; others "
        "smallest/worst = 0), so they are ordinal.",
    )


_LENSES_LEVELS = {
    "age": ["young", "pre-presbyopic", "presbyopic"],
    "spectacle_prescription": ["myope", "hypermetrope"],
    "astigmatic": ["no", "yes"],
    "tear_production_rate": ["reduced", "normal"],
}


def lenses():
    """Lenses (24 rows): fitting contact lenses (Cendrowska's complete decision table)."""
    levels = [range(len(v)) for v in _LENSES_LEVELS.values()]
    codes = np.array(list(itertools.product(*levels)), dtype=np.int64)
    age, hypermetrope, astigmatic, normal_tears = codes.T
    soft = np.where((age == 2) & (hypermetrope == 0), "none", "soft")
    hard = np.where((hypermetrope == 0) | (age == 0), "hard", "none")
    y = np.where(normal_tears == 0, "none", np.where(astigmatic == 0, soft, hard))
    return codes.astype(np.float64), y, make_info(
        "lenses",
        description="contact lens prescription (24 rows; none/soft/hard 15/5/4)",
        source="UCI Machine Learning Repository, Lenses (https://archive.ics.uci.edu/dataset/58)",
        citation="Cendrowska, J. (1987). PRISM: an algorithm for inducing modular rules. International "
        "Journal of Man-Machine Studies 27. Donor: Benoit Julien. " + UCI_CREDIT,
        license="CC BY 4.0",
        feature_names=list(_LENSES_LEVELS),
        y=y,
        task="classification",
        categorical=list(range(4)),
        categories=dict(enumerate(_LENSES_LEVELS.values())),
        notes="Regenerated: the full 3x2x2x2 table in UCI order (age slowest). Attribute codes are 0-based "
        "(UCI's file uses 1-based codes); labels are the class names (UCI codes 1 = hard, 2 = soft, 3 = none).",
    )


# ---------------------------------------------------------------- synthetic regression


def _check_nonnegative(name: str, value) -> float:
    value = float(value)
    if not value >= 0.0 or not np.isfinite(value):
        raise ValueError(f"{name} must be a finite number >= 0, got {value}")
    return value


def xor_regression(n: int = 600, d: int = 2, noise: float = 0.25, n_irrelevant: int = 4, seed: int = 0):
    """XOR interaction regression: ``y = XOR_j 1[x_j > 0.5] + noise · N(0, 1)`` over the first ``d`` features.

    Draw order with ``numpy.random.RandomState(seed)`` (legacy streams, byte-stable across
    numpy versions): ``X = rng.uniform(size=(n, d + n_irrelevant))``, then
    ``eps = rng.standard_normal(n)``; ``y = step + noise * eps`` where ``step`` is 0 or 1.
    No single split on a relevant feature reduces the expected squared error (each half
    still has mean 1/2), so greedy CART is lost at the root while a depth-``d`` tree on the
    relevant features explains all but the noise: its SSE/SST tends to
    ``noise² / (1/4 + noise²)`` (0.2 at the defaults).
    """
    n = _check_count("n", n, 1)
    d = _check_count("d", d, 1)
    n_irrelevant = _check_count("n_irrelevant", n_irrelevant, 0)
    noise = _check_nonnegative("noise", noise)
    X, step, rng = _xor_step(n, d, n_irrelevant, seed)
    y = step + noise * rng.standard_normal(n)
    return X, y, make_info(
        "xor_regression",
        description=f"XOR step of {d} features on [0, 1] (+{n_irrelevant} irrelevant) plus Gaussian noise sd {noise}",
        source="synthetic",
        citation="Synthetic benchmark: y = XOR over j < d of 1[x_j > 0.5] + noise * N(0, 1).",
        feature_names=_bit_names(d, n_irrelevant),
        y=y,
        task="regression",
        params=dict(n=n, d=d, noise=noise, n_irrelevant=n_irrelevant, seed=seed),
        relevant_features=list(range(d)),
        notes="X = RandomState(seed).uniform(size=(n, d + n_irrelevant)); then standard_normal(n) from the "
        "same stream, scaled by `noise`, is added to the 0/1 step.",
    )


_FRIEDMAN = {
    1: ("10 sin(pi x0 x1) + 20 (x2 - 1/2)^2 + 10 x3 + 5 x4 on U[0,1]^10 (x5..x9 irrelevant)",
        "make_friedman1", 1.0),
    2: ("sqrt(x0^2 + (x1 x2 - 1/(x1 x3))^2), x0 in [0,100], x1 in [40 pi, 560 pi], x2 in [0,1], x3 in [1,11]",
        "make_friedman2", 125.0),
    3: ("arctan((x1 x2 - 1/(x1 x3)) / x0) on the ranges of Friedman 2", "make_friedman3", 0.1),
}
_FRIEDMAN_CITATION = (
    "Friedman, J. H. (1991). Multivariate adaptive regression splines. Annals of Statistics 19(1), 1-67; "
    "Breiman, L. (1996). Bagging predictors. Machine Learning 24, 123-140 (noise levels for a 3:1 "
    "signal-to-noise ratio in Friedman 2 and 3). Generated by scikit-learn's sklearn.datasets.{loader}."
)


def _friedman(problem: int, n, noise, seed):
    from sklearn import datasets as skd

    n = _check_count("n", n, 1)
    noise = _check_nonnegative("noise", noise)
    formula, loader, _ = _FRIEDMAN[problem]
    X, y = getattr(skd, loader)(n_samples=n, noise=noise, random_state=np.random.RandomState(seed))
    return np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64), make_info(
        f"friedman{problem}",
        description=f"Friedman #{problem}: y = {formula} + noise * N(0, 1), noise {noise}",
        source=f"synthetic (sklearn.datasets.{loader})",
        citation=_FRIEDMAN_CITATION.format(loader=loader),
        feature_names=[f"x{j}" for j in range(X.shape[1])],
        y=y,
        task="regression",
        params=dict(n=n, noise=noise, seed=seed),
        notes=f"sklearn.datasets.{loader}(n_samples=n, noise=noise, random_state=RandomState(seed)); "
        "scikit-learn draws X first, then the noise, from that stream.",
    )


def friedman1(n: int = 1000, noise: float = 1.0, seed: int = 0):
    """Friedman #1 (10 features, 5 relevant); default noise sd 1 as in Friedman (1991) and Breiman (1996)."""
    return _friedman(1, n, noise, seed)


def friedman2(n: int = 1000, noise: float = 125.0, seed: int = 0):
    """Friedman #2 (4 features); default noise sd 125 gives Breiman's (1996) 3:1 signal-to-noise ratio."""
    return _friedman(2, n, noise, seed)


def friedman3(n: int = 1000, noise: float = 0.1, seed: int = 0):
    """Friedman #3 (4 features); default noise sd 0.1 gives Breiman's (1996) 3:1 signal-to-noise ratio."""
    return _friedman(3, n, noise, seed)
