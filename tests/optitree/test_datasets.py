"""optitree.datasets: regenerated sets against their published definitions and UCI facts."""

import collections
import itertools
import sys

import numpy as np
import pytest
from sklearn.utils import Bunch

from optitree import datasets

TTT_CODE = {"x": 0, "o": 1, "b": 2}


def counts(y):
    return dict(collections.Counter(np.asarray(y).tolist()))


def check_common(X, y, info):
    assert X.dtype == np.float64 and X.ndim == 2 and X.shape[0] == y.shape[0] == info["n_samples"]
    assert len(info["feature_names"]) == X.shape[1] == info["n_features"]
    if info["task"] == "classification":
        assert len(info["class_names"]) == np.unique(y).size
    for j in info["categorical"]:
        codes = X[:, j][~np.isnan(X[:, j])]
        assert np.all(codes == np.round(codes)) and codes.min() >= 0
        assert codes.max() < len(info["categories"][j])
    assert info["source"] and info["citation"]


def test_list_and_load_every_builtin():
    names = datasets.list()
    assert datasets.list_datasets() == names
    assert {"xor", "parity", "multiplexer6", "balance_scale", "tic_tac_toe", "monks1", "monks2", "monks3", "car",
            "lenses", "iris", "wine", "breast_cancer", "digits", "diabetes", "xor_regression", "friedman1",
            "friedman2", "friedman3", "concrete", "airfoil"} <= set(names)
    assert all(isinstance(d, str) and d and "\n" not in d for d in names.values())
    for name in names:
        X, y, info = datasets.load(name)
        check_common(X, y, info)
        assert info["name"] == name and isinstance(info["params"], dict)
        if name in ("balance_scale", "tic_tac_toe", "monks1", "monks2", "monks3", "car", "lenses", "iris"):
            assert info["license"] == "CC BY 4.0" and "UCI Machine Learning Repository" in info["citation"]
    assert datasets.load("xor", n=10, seed=5)[2]["params"] == dict(n=10, d=2, noise=0.0, n_irrelevant=0, seed=5)


def test_load_errors_name_the_problem():
    with pytest.raises(ValueError, match="unknown data set 'nope'.*monks1"):
        datasets.load("nope")
    with pytest.raises(TypeError, match=r"does not take \['depth'\].*subset"):
        datasets.load("monks1", depth=3)
    with pytest.raises(ValueError, match="subset"):
        datasets.load("monks2", subset="validation")
    with pytest.raises(ValueError, match="noise"):
        datasets.load("xor", noise=1.5)
    with pytest.raises(ValueError, match="n_irrelevant"):
        datasets.load("parity", n_irrelevant=-1)
    assert datasets.load("Tic-Tac-Toe")[0].shape == (958, 9)  # names are forgiving about case and dashes


# ---------------------------------------------------------------- synthetic


def test_xor_definition_noise_and_seed():
    X, y, info = datasets.load("xor", n=500, d=3, n_irrelevant=2, seed=7)
    assert X.shape == (500, 5) and np.all((X >= 0) & (X < 1))
    expected = [int(sum(v > 0.5 for v in row[:3]) % 2) for row in X]
    assert y.tolist() == expected and info["relevant_features"] == [0, 1, 2]
    # byte-stable stream: RandomState(0).uniform() is 0.5488135039273248 on every numpy
    assert datasets.load("xor", seed=0)[0][0, 0] == 0.5488135039273248
    Xn, yn, infon = datasets.load("xor", n=4000, noise=0.2, seed=3)
    Xc, yc, _ = datasets.load("xor", n=4000, noise=0.0, seed=3)
    np.testing.assert_array_equal(Xn, Xc)
    assert (yn != yc).sum() == infon["n_flipped"]
    assert 0.17 < infon["n_flipped"] / 4000 < 0.23
    np.testing.assert_array_equal(datasets.load("xor", seed=3)[0], datasets.load("xor", seed=3)[0])
    assert not np.array_equal(datasets.load("xor", seed=3)[0], datasets.load("xor", seed=4)[0])


def test_parity_enumeration_and_sampling():
    X, y, info = datasets.load("parity", k=3, n_irrelevant=2)
    assert X.shape == (32, 5)
    assert [tuple(r) for r in X.astype(int)] == list(itertools.product((0, 1), repeat=5))  # first bit slowest
    assert y.tolist() == [int(r[:3].sum()) % 2 for r in X]
    assert counts(y) == {0: 16, 1: 16}
    Xs, ys, _ = datasets.load("parity", k=2, n_irrelevant=3, n=100, seed=1)
    assert Xs.shape == (100, 5) and set(np.unique(Xs)) <= {0.0, 1.0}
    assert ys.tolist() == [int(r[:2].sum()) % 2 for r in Xs]
    _, yn, infon = datasets.load("parity", k=2, n_irrelevant=3, n=100, seed=1, noise=0.3)
    assert (yn != ys).sum() == infon["n_flipped"] > 0


def test_multiplexer6():
    X, y, info = datasets.load("multiplexer6")
    assert X.shape == (64, 6) and info["feature_names"] == ["a1", "a0", "d0", "d1", "d2", "d3"]
    for (a1, a0, *d), label in zip(X.astype(int), y):
        assert label == d[2 * a1 + a0]
    assert [tuple(r) for r in X.astype(int)] == list(itertools.product((0, 1), repeat=6))


# ---------------------------------------------------------------- UCI reconstructions


def test_balance_scale():
    X, y, info = datasets.load("balance_scale")
    assert counts(y) == {"L": 288, "B": 49, "R": 288}
    rows = list(itertools.product(range(1, 6), repeat=4))  # right-distance fastest
    assert [tuple(r) for r in X.astype(int)] == rows
    assert y.tolist() == ["L" if a * b > c * d else "R" if a * b < c * d else "B" for a, b, c, d in rows]
    assert y[0] == "B" and y[1] == "R"  # UCI file starts "B,1,1,1,1" then "R,1,1,1,2"


def _final_boards_by_play():
    """Every final board of tic-tac-toe with x first, by exhaustive play (independent of the loader)."""
    lines = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]
    finals, seen, frontier = {}, set(), [("b" * 9, "x")]
    while frontier:
        board, player = frontier.pop()
        if (board, player) in seen:
            continue
        seen.add((board, player))
        winner = next((board[a] for a, b, c in lines if board[a] != "b" and board[a] == board[b] == board[c]), None)
        if winner or "b" not in board:
            finals[board] = winner
            continue
        for i in (i for i, s in enumerate(board) if s == "b"):
            frontier.append((board[:i] + player + board[i + 1:], "o" if player == "x" else "x"))
    return finals


def test_tic_tac_toe_against_exhaustive_play_and_uci_order():
    X, y, info = datasets.load("tic_tac_toe")
    assert X.shape == (958, 9) and counts(y) == {"positive": 626, "negative": 332}
    decode = {v: k for k, v in TTT_CODE.items()}
    boards = ["".join(decode[int(v)] for v in row) for row in X]
    finals = _final_boards_by_play()
    assert set(boards) == set(finals) and len(boards) == 958
    assert all((finals[b] == "x") == (label == "positive") for b, label in zip(boards, y))
    outcome = [finals[b] or "draw" for b in boards]
    assert outcome == ["x"] * 626 + ["o"] * 316 + ["draw"] * 16
    # first rows of the UCI file tic-tac-toe.data
    uci_head = ["xxxxooxoo", "xxxxoooxo", "xxxxoooox", "xxxxooobb", "xxxxoobob", "xxxxoobbo", "xxxxoboob",
                "xxxxobobo", "xxxxobboo", "xxxxbooob", "xxxxboobo"]
    assert boards[:11] == uci_head
    for block in (slice(0, 626), slice(626, 942), slice(942, 958)):
        keys = [tuple(TTT_CODE[s] for s in b) for b in boards[block]]
        assert keys == sorted(keys)
    assert info["categories"][0] == ["x", "o", "b"] and info["categorical"] == list(range(9))


MONK_TRAIN_COUNTS = {1: (62, 62), 2: (105, 64), 3: (62, 60)}
MONK_TEST_COUNTS = {1: (216, 216), 2: (290, 142), 3: (204, 228)}


def _monk_rule(p, a):
    a1, a2, a3, a4, a5, a6 = a
    if p == 1:
        return int(a1 == a2 or a5 == 1)
    if p == 2:
        return int(sum(v == 1 for v in a) == 2)
    return int((a5 == 3 and a4 == 1) or (a5 != 4 and a2 != 3))


@pytest.mark.parametrize("problem", [1, 2, 3])
def test_monks(problem):
    name = f"monks{problem}"
    Xtr, ytr, info = datasets.load(name)  # default subset: train
    Xte, yte, _ = datasets.load(name, subset="test")
    Xall, yall, _ = datasets.load(name, subset="all")
    assert tuple(np.bincount(ytr)) == MONK_TRAIN_COUNTS[problem]
    assert tuple(np.bincount(yte)) == MONK_TEST_COUNTS[problem]
    assert Xtr.shape == (sum(MONK_TRAIN_COUNTS[problem]), 6) and Xte.shape == (432, 6)
    np.testing.assert_array_equal(Xall, np.vstack([Xtr, Xte]))
    np.testing.assert_array_equal(yall, np.concatenate([ytr, yte]))
    enumeration = list(itertools.product(range(1, 4), range(1, 4), (1, 2), range(1, 4), range(1, 5), (1, 2)))
    assert [tuple(r) for r in (Xte + 1).astype(int)] == enumeration  # codes are value - 1
    assert yte.tolist() == [_monk_rule(problem, a) for a in enumeration]
    ids = info["row_ids"]
    assert [tuple(r) for r in (Xtr + 1).astype(int)] == [enumeration[i - 1] for i in ids]
    noisy = {5, 61, 203, 213, 214, 391} if problem == 3 else set()
    assert ytr.tolist() == [_monk_rule(problem, enumeration[i - 1]) ^ (i in noisy) for i in ids]
    assert info["categories"][4] == [1, 2, 3, 4]


def test_monks1_first_training_row_matches_uci_file():
    # monks-1.train starts " 1 1 1 1 1 3 1 data_5": class 1, a1..a6 = 1 1 1 1 3 1
    X, y, info = datasets.load("monks1")
    assert info["row_ids"][0] == 5 and (X[0] + 1).tolist() == [1, 1, 1, 1, 3, 1] and y[0] == 1


def test_car():
    X, y, info = datasets.load("car")
    assert X.shape == (1728, 6) and counts(y) == {"unacc": 1210, "acc": 384, "good": 69, "vgood": 65}
    assert "RECONSTRUCTION" in info["notes"]
    levels = [info["categories"][j] for j in range(6)]
    rows = [tuple(levels[j][int(v)] for j, v in enumerate(r)) for r in X]
    assert rows == list(itertools.product(*levels))  # buying slowest
    # first and last rows of the UCI file car.data
    assert rows[0] == ("vhigh", "vhigh", "2", "2", "small", "low") and y[0] == "unacc"
    assert rows[-3:] == [("low", "low", "5more", "more", "big", s) for s in ("low", "med", "high")]
    assert y[-3:].tolist() == ["unacc", "good", "vgood"]
    assert not np.any((X[:, 3] == 0) & (y != "unacc"))  # 2 persons is never acceptable
    assert not np.any((X[:, 5] == 0) & (y != "unacc"))  # nor low safety


def test_lenses_matches_cendrowska_table():
    X, y, info = datasets.load("lenses")
    assert counts(y) == {"none": 15, "soft": 5, "hard": 4}
    # lenses.data (1-based codes, class 1 hard 2 soft 3 none), rows 1-8
    uci = [(1, 1, 1, 1, 3), (1, 1, 1, 2, 2), (1, 1, 2, 1, 3), (1, 1, 2, 2, 1),
           (1, 2, 1, 1, 3), (1, 2, 1, 2, 2), (1, 2, 2, 1, 3), (1, 2, 2, 2, 1)]
    name = {1: "hard", 2: "soft", 3: "none"}
    for row, (*codes, label) in zip(range(8), uci):
        assert (X[row] + 1).tolist() == codes and y[row] == name[label]
    assert set(y[X[:, 3] == 0]) == {"none"}


def test_sklearn_bundled():
    X, y, info = datasets.load("iris")
    assert X.shape == (150, 4) and info["class_names"] == ["setosa", "versicolor", "virginica"]
    assert info["feature_names"][0] == "sepal length (cm)"
    X, y, info = datasets.load("diabetes", scaled=False)
    assert info["task"] == "regression" and info["class_names"] is None and X[0, 1] in (1.0, 2.0)


# ---------------------------------------------------------------- regression


REGRESSION = ("diabetes", "xor_regression", "friedman1", "friedman2", "friedman3", "concrete", "airfoil")


@pytest.mark.parametrize("name", REGRESSION)
def test_regression_sets_are_float_regression(name):
    X, y, info = datasets.load(name)
    check_common(X, y, info)
    assert info["task"] == "regression" and info["class_names"] is None
    assert y.dtype.kind == "f" and np.all(np.isfinite(y)) and np.all(np.isfinite(X))
    assert 200 <= X.shape[0] <= 5000 and np.unique(y).size > 50  # a continuous target, not class codes


def test_xor_regression_definition_noise_and_seed():
    X, y, info = datasets.load("xor_regression", n=3000, d=2, noise=0.3, n_irrelevant=3, seed=11)
    assert X.shape == (3000, 5) and np.all((X >= 0) & (X < 1)) and info["relevant_features"] == [0, 1]
    step = np.array([float((a > 0.5) != (b > 0.5)) for a, b in X[:, :2]])
    residual = y - step
    # the noise is N(0, 0.3^2), independent of X: its sample sd and mean within sampling error
    assert abs(residual.std() - 0.3) < 0.02 and abs(residual.mean()) < 0.02
    assert abs(np.corrcoef(residual, X[:, 0])[0, 1]) < 0.06
    Xc, yc, _ = datasets.load("xor_regression", n=3000, d=2, noise=0.0, n_irrelevant=3, seed=11)
    np.testing.assert_array_equal(Xc, X)  # noise drawn after X from the same stream
    np.testing.assert_array_equal(yc, step)
    # same draw order as the classification xor: the X of one seed are the same numbers
    np.testing.assert_array_equal(Xc, datasets.load("xor", n=3000, d=2, n_irrelevant=3, seed=11)[0])
    # no single split helps in expectation: each half of a relevant feature has mean ~ 1/2
    for j in (0, 1):
        assert abs(yc[X[:, j] <= 0.5].mean() - 0.5) < 0.05 and abs(yc[X[:, j] > 0.5].mean() - 0.5) < 0.05
    a, b, _ = datasets.load("xor_regression", seed=3)
    np.testing.assert_array_equal(a, datasets.load("xor_regression", seed=3)[0])
    np.testing.assert_array_equal(b, datasets.load("xor_regression", seed=3)[1])
    assert not np.array_equal(b, datasets.load("xor_regression", seed=4)[1])
    assert datasets.load("xor_regression")[0].shape == (600, 6)
    with pytest.raises(ValueError, match="noise"):
        datasets.load("xor_regression", noise=-1)


def _friedman_formula(problem, X):
    """Friedman (1991) / Breiman (1996) test functions, written out independently of scikit-learn."""
    if problem == 1:
        return (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2 + 10 * X[:, 3]
                + 5 * X[:, 4])
    inner = X[:, 1] * X[:, 2] - 1 / (X[:, 1] * X[:, 3])
    return np.sqrt(X[:, 0] ** 2 + inner**2) if problem == 2 else np.arctan(inner / X[:, 0])


@pytest.mark.parametrize("problem, n_features, noise", [(1, 10, 1.0), (2, 4, 125.0), (3, 4, 0.1)])
def test_friedman_definitions(problem, n_features, noise):
    name = f"friedman{problem}"
    X, y, info = datasets.load(name, n=4000, noise=0.0, seed=2)
    assert X.shape == (4000, n_features) and info["params"] == dict(n=4000, noise=0.0, seed=2)
    np.testing.assert_allclose(y, _friedman_formula(problem, X), rtol=1e-12, atol=1e-12)
    if problem == 1:
        assert np.all((X >= 0) & (X <= 1))
    else:  # the published ranges
        lo, hi = [0, 40 * np.pi, 0, 1], [100, 560 * np.pi, 1, 11]
        assert np.all(X >= lo) and np.all(X <= hi)
    Xn, yn, info = datasets.load(name, n=4000, seed=2)  # default noise: the published level
    assert info["params"]["noise"] == noise
    np.testing.assert_array_equal(Xn, X)
    assert abs((yn - y).std() / noise - 1) < 0.05
    if problem > 1:  # Breiman's 3:1 signal-to-noise ratio (ratio of standard deviations)
        assert 2.5 < y.std() / noise < 3.6
    assert not np.array_equal(yn, datasets.load(name, n=4000, seed=3)[1])
    np.testing.assert_array_equal(yn, datasets.load(name, n=4000, seed=2)[1])


def test_concrete_matches_uci_and_yeh():
    X, y, info = datasets.load("concrete")
    assert X.shape == (1030, 8) and info["license"] == "CC BY 4.0" and "Yeh" in info["citation"]
    assert info["feature_names"][0] == "cement" and info["feature_names"][-1] == "age"
    # first row of Concrete_Data.xls: 540 0 0 162 2.5 1040 676 28 -> 79.99 MPa
    assert X[0].tolist() == [540, 0, 0, 162, 2.5, 1040, 676, 28] and round(y[0], 2) == 79.99
    # UCI attribute description: age 1..365 days; Yeh's summary statistics (MPa): mean 35.8, sd 16.7,
    # range 2.3..82.6; cement 102..540 kg/m^3
    assert X[:, 7].min() == 1 and X[:, 7].max() == 365 and np.all(X[:, 7] == np.round(X[:, 7]))
    assert round(y.mean(), 1) == 35.8 and round(y.std(ddof=1), 1) == 16.7
    assert round(y.min(), 1) == 2.3 and round(y.max(), 1) == 82.6
    assert X[:, 0].min() == 102 and X[:, 0].max() == 540
    assert len({tuple(r) for r in np.column_stack([X, y])}) == 1030 - 25  # the 25 duplicated rows are kept


def test_airfoil_matches_nasa_design():
    X, y, info = datasets.load("airfoil")
    assert X.shape == (1503, 5) and info["license"] == "CC BY 4.0" and "NASA" in info["citation"]
    # the NASA tests: six chords 2.54..30.48 cm, four tunnel speeds, 1/3-octave frequencies 200 Hz..20 kHz
    np.testing.assert_allclose(np.unique(X[:, 2]), [0.0254, 0.0508, 0.1016, 0.1524, 0.2286, 0.3048])
    np.testing.assert_allclose(np.unique(X[:, 3]), [31.7, 39.6, 55.5, 71.3])
    assert X[:, 0].min() == 200 and X[:, 0].max() == 20000 and np.unique(X[:, 0]).size == 21
    assert X[:, 1].min() == 0 and X[:, 1].max() == 22.2
    assert y.min() == 103.38 and y.max() == 140.987  # UCI: scaled sound pressure level, dB
    assert X[0].tolist() == [800, 0, 0.3048, 71.3, 0.00266337] and y[0] == 126.201  # first UCI row


# ---------------------------------------------------------------- CSV


@pytest.fixture(params=["pandas", "csv-module"])
def reader(request, monkeypatch):
    if request.param == "csv-module":
        monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` now raises ImportError
    return request.param


def write(tmp_path, text):
    path = tmp_path / "data.csv"
    path.write_text(text)
    return path


def test_load_csv_numeric_categorical_missing(tmp_path, reader):
    path = write(tmp_path, "size,color,weight,label\n1.5,red,10,yes\n2.0,blue,,no\n"
                           "NA,red,12,yes\n3.25,green,?,no\n")
    X, y, info = datasets.load_csv(path, target="label", categorical=["color"])
    assert info["feature_names"] == ["size", "color", "weight"]
    np.testing.assert_array_equal(X[:, 0], [1.5, 2.0, np.nan, 3.25])
    np.testing.assert_array_equal(X[:, 1], [2, 0, 2, 1])  # blue, green, red sorted
    assert info["categories"] == {1: ["blue", "green", "red"]} and info["categorical"] == [1]
    np.testing.assert_array_equal(X[:, 2], [10, np.nan, 12, np.nan])
    assert y.tolist() == ["yes", "no", "yes", "no"] and info["class_names"] == ["no", "yes"]
    assert info["n_missing"] == 3 and info["missing_by_feature"] == {"size": 1, "weight": 2}
    assert info["task"] == "classification"


def test_load_csv_task_inference(tmp_path, reader):
    path = write(tmp_path, "a,b,t\n1,2,0.5\n3,4,1.25\n")
    X, y, info = datasets.load_csv(path, target="t")
    assert info["task"] == "regression" and y.dtype == np.float64
    path = write(tmp_path, "a,b,t\n1,2,1\n3,4,0\n")
    X, y, info = datasets.load_csv(path, target="t")
    assert info["task"] == "classification" and y.tolist() == [1, 0]
    assert datasets.load_csv(path, target="t", task="regression")[2]["task"] == "regression"


def test_load_csv_errors(tmp_path, reader):
    path = write(tmp_path, "a,b,label\n1,x,0\n2,y,1\n")
    with pytest.raises(ValueError, match=r"target column 'target' not found.*\['a', 'b', 'label'\]"):
        datasets.load_csv(path, target="target")
    with pytest.raises(ValueError, match=r"column 'b' is not numeric \(e.g. 'x'\).*categorical="):
        datasets.load_csv(path, target="label")
    with pytest.raises(ValueError, match=r"categorical columns \['c'\]"):
        datasets.load_csv(path, target="label", categorical=["b", "c"])
    with pytest.raises(ValueError, match="missing values"):
        datasets.load_csv(write(tmp_path, "a,label\n1,0\n2,\n"), target="label")
    with pytest.raises(ValueError, match="not numeric, so it cannot be a regression target"):
        datasets.load_csv(write(tmp_path, "a,label\n1,u\n2,v\n"), target="label", task="regression")
    with pytest.raises(ValueError, match="duplicate column names"):
        datasets.load_csv(write(tmp_path, "a,a,label\n1,2,0\n"), target="label")
    with pytest.raises(FileNotFoundError):
        datasets.load_csv(tmp_path / "missing.csv", target="label")


# ---------------------------------------------------------------- OpenML (mocked: tests never download)


def test_load_openml_is_mocked(monkeypatch, tmp_path):
    pd = pytest.importorskip("pandas")
    calls = []
    frame = pd.DataFrame({
        "colour": pd.Categorical(["red", "blue", None, "red"]),
        "size": [1.0, 2.5, 3.0, np.nan],
        "class": pd.Categorical(["a", "b", "a", "b"]),
    })

    def fake_fetch_openml(**kwargs):
        calls.append(kwargs)
        return Bunch(frame=frame, data=frame[["colour", "size"]], target=frame["class"],
                     details={"id": "42", "name": "toy", "version": "1", "licence": "Public",
                              "citation": "Someone (2020)"})

    import sklearn.datasets

    monkeypatch.setattr(sklearn.datasets, "fetch_openml", fake_fetch_openml)
    X, y, info = datasets.load_openml("toy", cache_dir=str(tmp_path))
    assert calls[0]["name"] == "toy" and calls[0]["data_home"] == str(tmp_path)
    np.testing.assert_array_equal(X[:, 0], [1, 0, np.nan, 1])
    np.testing.assert_array_equal(X[:, 1], [1.0, 2.5, 3.0, np.nan])
    assert y.tolist() == ["a", "b", "a", "b"] and info["categorical"] == [0]
    assert info["categories"] == {0: ["blue", "red"]} and info["n_missing"] == 2
    assert "openml.org/d/42" in info["source"] and info["citation"] == "Someone (2020)"
    datasets.load_openml(61, cache_dir=str(tmp_path))
    assert calls[1]["data_id"] == 61 and "name" not in calls[1]
