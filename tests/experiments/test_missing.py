"""The harness passes data as the estimators expect it: categoricals as pandas categoricals, NaN as
NaN, and a dataset's ``missing`` option ("native", "drop", "impute") applied without leakage.

A spy method (greedy CART that keeps every X it is given) shows what a method receives."""

import textwrap

import numpy as np
import pandas as pd
import pytest

from experiments import config, datasets, methods, records, report, runner
from greedy import CARTClassifier

SEEN: list = []  # (call, X) in call order: "fit" or "predict", the X the spy received


class SpyCART(CARTClassifier):
    def fit(self, X, y, sample_weight=None):
        SEEN.append(("fit", X.copy()))
        return super().fit(X, y, sample_weight)

    def predict(self, X):
        SEEN.append(("predict", X.copy()))
        return super().predict(X)


class RefusesNaN(CARTClassifier):
    """Refuses NaN as the optimal estimators do today (without native NaN support)."""

    def fit(self, X, y, sample_weight=None):
        if np.asarray(pd.isna(X)).any():
            raise ValueError("Input X contains NaN. RefusesNaN does not accept missing values encoded as NaN")
        return super().fit(X, y, sample_weight)


def _method(name, cls, input="pandas"):
    return methods.Method(name, "greedy", "classification", "test spy", methods.GREEDY_PARAMS,
                          lambda p, depth, seed: cls(max_depth=depth, random_state=seed, **p), input=input)


SPIES = [_method("spy", SpyCART), _method("spy-numpy", SpyCART, input="numpy"), _method("refuses-nan", RefusesNaN)]


@pytest.fixture(autouse=True)
def _spies():
    """The spy methods, registered for each test only (other tests list the registry); runs are serial."""
    SEEN.clear()
    for method in SPIES:
        methods.register(method, replace=True)
    yield
    for method in SPIES:
        methods.METHODS.pop(method.name, None)


def raw_table(n=40, seed=0):
    """colour (categorical, some missing), x (numeric, some missing), z (complete); label by a rule."""
    rng = np.random.RandomState(seed)
    colour = rng.choice(["blue", "green", "red"], n).astype(object)
    x = rng.rand(n)
    z = rng.rand(n) * 100
    y = ((colour == "green") ^ (x > 0.5)).astype(int)
    x[[1, 5, 9, 17, 30]] = np.nan
    colour[[2, 5, 22]] = None
    return pd.DataFrame({"colour": colour, "x": x, "z": z, "label": y})


def write_config(tmp_path, dataset_extra="", methods_block='[[methods]]\nname = "spy"\n', head=None):
    raw_table().to_csv(tmp_path / "data.csv", index=False)
    head = head or 'depths = [2]\nseeds = [0]\n[split]\ntest_size = 0.25\n'
    text = head + textwrap.dedent(f"""
        [[datasets]]
        name = "csv"
        label = "mixed"
        params = {{ path = "data.csv", target = "label", categorical = ["colour"] }}
        {dataset_extra}
        """) + methods_block
    path = tmp_path / "grid.toml"
    path.write_text(text)
    return path


def run(path, out, resume=False):
    experiment = config.load(path)
    runner.run_grid(experiment, out, resume=resume, progress=False)
    return {r["config"]["method_label"]: r for r in records.load_records(out)}, experiment


def fits():
    return [X for call, X in SEEN if call == "fit"]


# ---------------------------------------------------------------------- native: categoricals and NaN pass through
def test_native_passes_categoricals_and_nan_and_records_names(tmp_path):
    recs, _ = run(write_config(tmp_path), tmp_path / "out")
    rec = recs["spy"]
    assert rec["status"] == "done", rec["error"]
    (X,) = fits()
    assert list(X.columns) == ["colour", "x", "z"]
    assert isinstance(X["colour"].dtype, pd.CategoricalDtype)
    assert list(X["colour"].cat.categories) == ["blue", "green", "red"]
    assert X["colour"].isna().any() and X["x"].isna().any()  # NaN reaches the method as NaN
    data = rec["data"]
    assert data["feature_names"] == ["colour", "x", "z"]
    assert data["categorical"] == ["colour"] and data["categories"] == {"colour": ["blue", "green", "red"]}
    assert data["missing"] == "native" and data["n_missing"] == 8 and data["n_dropped"] == 0
    assert data["imputation"] is None and data["input"] == "pandas"
    # the training part is a subset of the file's rows, values unchanged
    raw = raw_table()
    np.testing.assert_array_equal(X["z"].to_numpy(), raw["z"].to_numpy()[X.index])
    report.summarize(tmp_path / "out")
    row = pd.read_csv(tmp_path / "out" / "runs.csv").iloc[0]
    assert (row["missing"], row["n_missing"], row["n_dropped"], row["categorical"]) == ("native", 8, 0, "colour")


def test_a_numpy_method_gets_codes_with_nan(tmp_path):
    recs, _ = run(write_config(tmp_path, methods_block='[[methods]]\nname = "spy-numpy"\n'), tmp_path / "out")
    assert recs["spy-numpy"]["status"] == "done", recs["spy-numpy"]["error"]
    (X,) = fits()
    assert isinstance(X, np.ndarray) and X.dtype == np.float64
    assert set(np.unique(X[:, 0][~np.isnan(X[:, 0])])) <= {0.0, 1.0, 2.0} and np.isnan(X).any()
    assert recs["spy-numpy"]["data"]["input"] == "numpy"


def test_a_method_refusing_nan_is_a_failed_record_with_its_message_and_the_grid_goes_on(tmp_path):
    block = '[[methods]]\nname = "refuses-nan"\n[[methods]]\nname = "spy"\n'
    out = tmp_path / "out"
    recs, experiment = run(write_config(tmp_path, methods_block=block), out)
    bad, good = recs["refuses-nan"], recs["spy"]
    assert good["status"] == "done"
    assert bad["status"] == "failed" and bad["error"]["type"] == "ValueError"
    assert "does not accept missing values" in bad["error"]["message"]
    assert bad["data"]["feature_names"] == ["colour", "x", "z"] and bad["data"]["n_missing"] == 8
    # --resume retries the failed run (again failed, notes kept) and keeps the done one as it was
    before = good["finished"]
    recs, _ = run(write_config(tmp_path, methods_block=block), out, resume=True)
    assert recs["spy"]["finished"] == before and recs["spy"]["data"]["categorical"] == ["colour"]
    assert recs["refuses-nan"]["status"] == "failed" and recs["refuses-nan"]["data"]["categorical"] == ["colour"]


def test_optimal_estimator_fits_categoricals_with_nan_natively(tmp_path):
    """NaN and categoricals reach the optimal estimator as they are (missing="native"): a done record."""
    block = '[[methods]]\nname = "flow"\nparams = { time_limit = 5.0 }\n[[methods]]\nname = "cart"\n'
    recs, _ = run(write_config(tmp_path, methods_block=block), tmp_path / "out")
    assert recs["cart"]["status"] == "done", recs["cart"]["error"]
    flow = recs["flow"]
    assert flow["status"] == "done", flow["error"]
    assert flow["data"]["categorical"] == ["colour"] and flow["data"]["n_missing"] == 8


def test_optimal_estimator_receives_categoricals_after_drop(tmp_path):
    block = '[[methods]]\nname = "flow"\nparams = { time_limit = 5.0 }\n'
    recs, _ = run(write_config(tmp_path, 'missing = "drop"', methods_block=block), tmp_path / "out")
    flow = recs["flow"]
    assert flow["status"] == "done", flow["error"]
    assert flow["data"]["categorical"] == ["colour"]


# ---------------------------------------------------------------------- drop
def test_drop_removes_the_rows_with_nan(tmp_path):
    recs, _ = run(write_config(tmp_path, 'missing = "drop"'), tmp_path / "out")
    rec = recs["spy"]
    assert rec["status"] == "done", rec["error"]
    raw = raw_table()
    complete = raw.drop(columns="label").notna().all(axis=1)
    assert rec["data"]["n_dropped"] == int((~complete).sum()) == 7
    assert rec["data"]["n_train"] + rec["data"]["n_test"] == int(complete.sum())
    assert rec["data"]["n_missing"] == 0
    for call, X in SEEN:
        assert not X.isna().to_numpy().any()
        assert complete.to_numpy()[X.index].all()
        assert isinstance(X["colour"].dtype, pd.CategoricalDtype)


# ---------------------------------------------------------------------- impute: training statistics only
def _check_fill_from_fit_only(raw):
    """Every fit sees its NaN filled from its own rows; every predict after it with that fit's values."""
    assert SEEN and SEEN[0][0] == "fit"
    fill = None
    for call, X in SEEN:
        assert not X.isna().to_numpy().any(), call
        rows = raw.iloc[X.index]
        if call == "fit":
            x_known = rows["x"].dropna()
            colour_counts = rows["colour"].value_counts()
            fill = {"x": x_known.median(),
                    "colour": sorted(colour_counts[colour_counts == colour_counts.max()].index)[0]}
        nan_x, nan_colour = rows["x"].isna().to_numpy(), rows["colour"].isna().to_numpy()
        np.testing.assert_allclose(X["x"].to_numpy()[nan_x], fill["x"])
        assert (X["colour"].astype(object).to_numpy()[nan_colour] == fill["colour"]).all()
        np.testing.assert_array_equal(X["x"].to_numpy()[~nan_x], rows["x"].to_numpy()[~nan_x])
    return fill


def test_impute_uses_the_training_fold_only(tmp_path):
    head = 'depths = [2]\nseeds = [0]\nprotocol = "cv"\n[cv]\nfolds = 4\n'
    out = tmp_path / "out"
    experiment = config.load(write_config(tmp_path, 'missing = "impute"', head=head))
    assert len(experiment.runs) == 4
    raw = raw_table()
    for spec in experiment.runs:
        SEEN.clear()
        rec = runner.execute_run(spec)
        assert rec.status == "done", rec.error
        fill = _check_fill_from_fit_only(raw)
        (fit_X,) = fits()
        test_rows = np.setdiff1d(np.arange(len(raw)), fit_X.index)
        # the test fold's own median differs: its NaN got the training fold's value
        assert raw["x"].iloc[test_rows].dropna().median() != pytest.approx(fill["x"])
        imputation = rec.data["imputation"]
        assert imputation["values"]["x"] == pytest.approx(fill["x"]) and imputation["values"]["colour"] == fill["colour"]
        assert "z" not in imputation["values"]  # nothing to fill there
        assert imputation["n_fit"] == int(raw.drop(columns="label").iloc[fit_X.index].isna().to_numpy().sum())
        assert imputation["n_fit"] + imputation["n_eval"] == 8
        assert rec.data["n_missing"] == 8 and rec.data["missing"] == "impute"
    runner.run_grid(experiment, out, progress=False)
    assert all(r["status"] == "done" for r in records.load_records(out))


def test_impute_inside_nested_cv_uses_each_inner_training_part(tmp_path):
    head = 'depths = [2]\nseeds = [0]\nprotocol = "nested-cv"\n[cv]\nfolds = 3\ninner_folds = 2\n'
    block = '[[methods]]\nname = "spy"\ntune = { depth = [1, 2] }\n'
    experiment = config.load(write_config(tmp_path, 'missing = "impute"', methods_block=block, head=head))
    rec = runner.execute_run(experiment.runs[0])
    assert rec.status == "done", rec.error
    assert len(fits()) == 2 * 2 + 1  # two candidates x two inner folds, then the refit
    _check_fill_from_fit_only(raw_table())


def test_impute_on_holdout_with_validation(tmp_path):
    head = 'depths = [2]\nseeds = [1]\n[split]\ntest_size = 0.25\nvalidation_size = 0.25\n'
    block = '[[methods]]\nname = "spy"\ntune = { depth = [1, 2] }\n'
    experiment = config.load(write_config(tmp_path, 'missing = "impute"', methods_block=block, head=head))
    rec = runner.execute_run(experiment.runs[0])
    assert rec.status == "done", rec.error
    assert len(fits()) == 3
    _check_fill_from_fit_only(raw_table())


# ---------------------------------------------------------------------- the option itself
def test_missing_option_is_validated_and_enters_the_run_id_unless_native(tmp_path):
    with pytest.raises(ValueError, match=r"datasets\[0\]\.missing: dataset 'mixed': missing must be one of "
                                         r"'native', 'drop', 'impute'.*got 'fill'"):
        config.load(write_config(tmp_path, 'missing = "fill"'))
    with pytest.raises(config.ConfigError, match="got 1"):
        config.load(write_config(tmp_path, "missing = 1"))
    ids = {m: config.load(write_config(tmp_path, f'missing = "{m}"')).runs[0].run_id for m in datasets.MISSING}
    assert config.load(write_config(tmp_path)).runs[0].run_id == ids["native"]  # old ids are kept
    assert len(set(ids.values())) == 3
    with pytest.raises(ValueError, match="dataset 'x': missing must be one of"):
        datasets.check_missing("none", "x")


# ---------------------------------------------------------------------- registry datasets keep their categories
def test_registry_categorical_dataset_reaches_the_method_as_categoricals(tmp_path):
    path = tmp_path / "g.toml"
    path.write_text('depths = [2]\nseeds = [0]\n[[datasets]]\nname = "lenses"\n[[methods]]\nname = "spy"\n'
                    '[[methods]]\nname = "cart"\n')
    recs, _ = run(path, tmp_path / "out")
    _, _, info = datasets.load_dataset("lenses", {})
    X = fits()[0]
    assert list(X.columns) == info["feature_names"]
    for j, name in enumerate(info["feature_names"]):
        assert isinstance(X[name].dtype, pd.CategoricalDtype)
        assert list(X[name].cat.categories) == list(info["categories"][j])
    for rec in recs.values():
        assert rec["status"] == "done", rec["error"]
        assert rec["data"]["categorical"] == info["feature_names"]
        assert rec["data"]["categories"]["age"] == ["young", "pre-presbyopic", "presbyopic"]
    # the frame and the float matrix agree: codes in the published order
    frame, _, _ = datasets.load_frame("lenses", {})
    np.testing.assert_array_equal(datasets.to_array(frame), datasets.load_dataset("lenses", {})[0])


def test_list_says_which_datasets_have_categorical_features(capsys):
    from experiments import cli

    assert cli.main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.split()[:1] == ["car"] and line.endswith("[6 categorical]") for line in lines)
    assert not any(line.split()[:1] == ["iris"] and "categorical]" in line for line in lines)
