"""Cross-validation protocols end to end: fold runs, records, resume by fold, nested tuning,
the paired statistics on real fits, CSV paths relative to the config, ``list`` and ``--version``."""

import json
import textwrap

import numpy as np
import pytest

from experiments import cli, config, protocols, records

pd = pytest.importorskip("pandas")

CV_GRID = """
name = "cv-small"
protocol = "cv"
depths = [2]
seeds = [0, 1]

[cv]
folds = 5

[[datasets]]
name = "xor"
params = { n = 120 }

[[datasets]]
name = "xor"
label = "threshold"
params = { n = 60, d = 1, n_irrelevant = 1 }   # y = 1[x0 > 0.5]: greedy is already optimal

[[methods]]
name = "cart"

[[methods]]
name = "flow"
label = "optimal"
params = { time_limit = 30.0 }
"""


def write(tmp_path, text, name="grid.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


@pytest.fixture(scope="module")
def cv_results(tmp_path_factory):
    base = tmp_path_factory.mktemp("cv")
    cfg = write(base, CV_GRID)
    out = base / "out"
    assert cli.main(["run", str(cfg), "--out", str(out), "--quiet", "--no-summary"]) == 0
    assert cli.main(["summarize", str(out)]) == 0
    return cfg, out


# ---------------------------------------------------------------------------- config
def test_cv_expands_every_fold_into_a_run(tmp_path):
    exp = config.load(write(tmp_path, CV_GRID))
    assert len(exp.runs) == 2 * 2 * 1 * 2 * 5  # datasets x methods x depths x seeds x folds
    assert len({r.run_id for r in exp.runs}) == len(exp.runs)
    folds = sorted({(r.seed, r.fold) for r in exp.runs})
    assert folds == [(s, f) for s in (0, 1) for f in range(5)]
    assert all(r.identity["cv"] == {"folds": 5, "inner_folds": 3, "stratify": True} for r in exp.runs)


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace("[cv]", "[split]\ntest_size = 0.2\n\n[cv]"), "reads [cv]"),
    (lambda t: t.replace('protocol = "cv"', 'protocol = "holdout"'), "reads [split]"),
    (lambda t: t.replace("folds = 5", "folds = 1"), "cv.folds"),
    (lambda t: t.replace('name = "cart"', 'name = "cart"\ntune = { ccp_alpha = [0.0, 0.01] }'), "nested-cv"),
    (lambda t: t.replace('params = { n = 120 }', 'params = { n = 120 }\ntest_params = { seed = 1 }'),
     "own test folds"),
])
def test_cv_config_errors(tmp_path, edit, message):
    with pytest.raises(config.ConfigError, match=message.replace("[", r"\[")):
        config.load(write(tmp_path, edit(CV_GRID)))


def test_folds_partition_the_rows_and_stratify():
    y = np.array([0] * 30 + [1] * 20)
    pairs, stratified = protocols.fold_indices(y, "classification", 5, seed=3, stratify=True)
    assert stratified
    tests = np.concatenate([t for _, t in pairs])
    assert sorted(tests) == list(range(50))  # every row tested exactly once
    for train, test in pairs:
        assert not set(train) & set(test)
        assert np.bincount(y[test]).tolist() == [6, 4]
    again, _ = protocols.fold_indices(y, "classification", 5, seed=3, stratify=True)
    assert all((a[1] == b[1]).all() for a, b in zip(pairs, again))  # the same folds for every method
    _, stratified = protocols.fold_indices(np.array([0] * 47 + [1] * 3), "classification", 5, 0, True)
    assert not stratified  # a class with fewer rows than folds: plain k-fold


# ---------------------------------------------------------------------------- records and statistics
def test_every_fold_is_a_record_with_its_certificate(cv_results):
    _, out = cv_results
    recs = records.load_run_records(out)
    assert len(recs) == 40 and all(r.status == "done" for r in recs)
    for r in recs:
        assert r.data["fold"] == r.config["fold"] and r.data["n_train"] + r.data["n_test"] in (120, 60)
        assert not {"warm_up_time", "warm_up_wall"} & set(r.execution)  # no compile phase to record
        if r.kind == "mip":
            assert r.solver["certificate"] in ("engine", "mip", "unproven", "bounds", "engine bound")
            assert r.solver["proven_optimal"] == (r.solver["certificate"] != "unproven")
    # the same rows are tested by both methods in a fold: their test sizes agree pairwise
    sizes = {}
    for r in recs:
        sizes.setdefault((r.config["dataset_label"], r.config["seed"], r.config["fold"]), set()).add(r.data["n_test"])
    assert all(len(s) == 1 for s in sizes.values())


def test_xor_optimal_wins_significantly_threshold_claims_nothing(cv_results):
    _, out = cv_results
    table = pd.read_csv(out / "stats.csv")
    test = table[(table["level"] == "dataset") & (table["score"] == "test")].set_index("dataset")
    assert test.loc["xor", "diff"] > 0 and test.loc["xor", "significant"]
    assert test.loc["xor", "proven"] == test.loc["xor", "optimal_fits"] == 10
    assert test.loc["threshold", "diff"] == 0 and test.loc["threshold", "p"] == 1.0
    assert not test.loc["threshold", "significant"]
    report = (out / "report.md").read_text()
    assert "## Greedy vs optimal" in report and "### optimal vs cart" in report


def test_the_table_agrees_with_the_records(cv_results):
    """Recompute the xor row from the records: pair by (seed, fold), corrected t by hand."""
    from scipy import stats as sps

    _, out = cv_results
    by = {}
    for r in records.load_run_records(out):
        if r.config["dataset_label"] == "xor":
            by.setdefault((r.config["seed"], r.config["fold"]), {})[r.config["method_label"]] = r
    d = np.array([p["optimal"].metrics["test_accuracy"] - p["cart"].metrics["test_accuracy"] for p in by.values()])
    ratio = np.mean([p["optimal"].data["n_test"] / p["optimal"].data["n_train"] for p in by.values()])
    se = np.sqrt((1 / len(d) + ratio) * d.var(ddof=1))
    p_value = 2 * sps.t.sf(abs(d.mean() / se), len(d) - 1)
    row = pd.read_csv(out / "stats.csv").query("level == 'dataset' and score == 'test' and dataset == 'xor'").iloc[0]
    assert row["diff"] == pytest.approx(d.mean()) and row["p"] == pytest.approx(p_value)


def test_resume_reruns_only_the_missing_fold(cv_results, tmp_path):
    import shutil

    cfg, out = cv_results
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    victim = records.iter_record_files(copy)[7]
    before = {p.name: p.read_bytes() for p in records.iter_record_files(copy) if p != victim}
    victim.unlink()
    assert cli.main(["run", str(cfg), "--out", str(copy), "--resume", "--quiet", "--no-summary"]) == 0
    after = {p.name: p.read_bytes() for p in records.iter_record_files(copy)}
    assert victim.name in after and len(after) == 40
    assert all(after[name] == content for name, content in before.items())  # the other folds untouched


# ---------------------------------------------------------------------------- nested cv
NESTED = """
protocol = "nested-cv"
depths = [3]
seeds = [0]

[cv]
folds = 3
inner_folds = 2

[[datasets]]
name = "xor"
params = { n = 60, noise = 0.1 }

[[methods]]
name = "cart"
tune = { depth = [1, 2, 3, 4], min_samples_leaf = [1, 5] }

[[methods]]
name = "flow"
params = { time_limit = 30.0 }
tune = { depth = [1, 2, 3, 4], min_samples_leaf = [1, 5] }
"""


def test_nested_cv_tunes_on_inner_folds(tmp_path):
    cfg = write(tmp_path, NESTED)
    out = tmp_path / "out"
    assert cli.main(["run", str(cfg), "--out", str(out), "--quiet", "--no-summary"]) == 0
    recs = records.load_run_records(out)
    assert len(recs) == 2 * 3
    for r in recs:
        trials = r.tuning["trials"]
        assert r.tuning["inner_folds"] == 2
        assert {t["params"]["depth"] for t in trials} == {1, 2, 3}  # depth 4 > the run's depth: left out
        assert len(trials) == 3 * 2
        best = max(t["validation"]["accuracy"] for t in trials)
        chosen = r.tuning["chosen"]
        winner = [t for t in trials if t["params"] == chosen][0]
        assert winner["validation"]["accuracy"] == best
        assert r.metrics["depth"] <= chosen["depth"]  # the refit honours the tuned depth
        assert r.execution["params"]["min_samples_leaf"] == chosen["min_samples_leaf"]
        assert r.data["n_train"] + r.data["n_test"] == 60


def test_tuned_depth_needs_a_tuning_protocol(tmp_path):
    text = NESTED.replace('protocol = "nested-cv"', 'protocol = "cv"')
    with pytest.raises(config.ConfigError, match="does not tune"):
        config.load(write(tmp_path, text))


# ---------------------------------------------------------------------------- csv, list, version
def test_csv_path_is_relative_to_the_config_file(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    rng = np.random.RandomState(0)
    X = rng.rand(30, 2)
    lines = ["a,b,label"] + [f"{a:.4f},{b:.4f},{int(a > 0.5)}" for a, b in X]
    (data / "mine.csv").write_text("\n".join(lines) + "\n")
    cfg = write(data, """
        protocol = "cv"
        depths = [1]
        seeds = [0]
        [cv]
        folds = 3
        [[datasets]]
        name = "csv"
        label = "mine"
        params = { path = "mine.csv", target = "label" }
        [[methods]]
        name = "cart"
    """)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    exp = config.load(cfg)
    assert exp.runs[0].dataset["params"]["path"] == "mine.csv"  # the id keeps the path as written
    assert cli.main(["run", str(cfg), "--out", "out", "--quiet", "--no-summary"]) == 0
    recs = records.load_run_records(elsewhere / "out")
    assert len(recs) == 3 and all(r.status == "done" for r in recs)
    assert sum(r.data["n_test"] for r in recs) == 30


def test_list_shows_dataset_parameters_and_protocols(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.strip()]
    lines = {line.split()[0]: line for line in rows}
    params = {line.split()[0]: nxt for line, nxt in zip(rows, rows[1:]) if nxt.split()[0] == "params:"}
    assert "path" in params["csv"] and "target" in params["csv"] and "config file" in lines["csv"]
    assert "subset='train'" in params["monks1"] and "noise=0.0" in params["xor"]
    assert params["iris"].split() == ["params:", "no", "parameters"]
    for protocol in ("holdout", "cv", "nested-cv"):
        assert protocol in lines


def test_version(capsys):
    import optitree

    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert optitree.__version__ in capsys.readouterr().out


def test_shipped_cv_configs_validate():
    for name in ("quick", "study"):
        exp = config.load(cli.QUICK_CONFIG.parent / f"{name}.toml")
        ids = [r.identity for r in exp.runs]
        assert all(i.get("protocol") in ("cv", "nested-cv") for i in ids)
        assert len({json.dumps(i, sort_keys=True) for i in ids}) == len(ids)


# ---------------------------------------------------------------------------- honest labels
TWO_FORMULATIONS = """
protocol = "cv"
depths = [2]
seeds = [0]

[cv]
folds = 2

[[datasets]]
name = "xor"
params = { n = 40 }

[[methods]]
name = "cart"

[[methods]]
name = "oct"
params = { time_limit = 30.0 }

[[methods]]
name = "flow"
params = { time_limit = 30.0 }
"""


def test_report_says_when_the_engine_settled_both_formulations(tmp_path, capsys):
    from experiments import progress

    cfg = write(tmp_path, TWO_FORMULATIONS)
    out = tmp_path / "out"
    assert cli.main(["run", str(cfg), "--out", str(out), "--quiet", "--no-summary"]) == 0
    recs = records.load_run_records(out)
    mip = [r for r in recs if r.kind == "mip"]
    assert len(mip) == 4
    engine = all(r.solver["certificate"] == "engine" for r in mip)
    assert cli.main(["summarize", str(out)]) == 0
    report = capsys.readouterr().out
    # the note appears exactly when the records say the engine settled every fit of both
    assert ("Identical by construction" in report) == engine
    if engine:
        assert "xor d=2 (oct, flow)" in report
        assert all(r.solver["n_rows"] == 0 or r.solver["nodes"] == 0 for r in mip)
    stats_rows = pd.read_csv(out / "stats.csv")
    assert set(zip(stats_rows["greedy"], stats_rows["optimal"])) == {("cart", "oct"), ("cart", "flow")}
    line = progress.run_line(mip[0])
    assert f"fold={mip[0].config['fold']}" in line and f"({mip[0].solver['certificate']})" in line


# ---------------------------------------------------------------------------- regression, same protocol
REGRESSION = """
protocol = "cv"
depths = [1]
seeds = [0]

[cv]
folds = 3

[[datasets]]
name = "friedman1"
params = { n = 45 }

[[methods]]
name = "cart-regressor"

[[methods]]
name = "ort"
params = { time_limit = 20.0, loss = "squared" }
"""


def test_regression_pairs_r2_fold_by_fold(tmp_path):
    cfg = write(tmp_path, REGRESSION)
    out = tmp_path / "out"
    assert cli.main(["run", str(cfg), "--out", str(out), "--quiet", "--no-summary"]) == 0
    assert cli.main(["summarize", str(out)]) == 0
    recs = records.load_run_records(out)
    assert len(recs) == 6 and not any(r.data["stratified"] for r in recs)  # plain k-fold for regression
    by = {}
    for r in recs:
        by.setdefault(r.config["fold"], {})[r.kind] = r.metrics["test_r2"]
    d = [p["mip"] - p["greedy"] for p in by.values()]
    row = pd.read_csv(out / "stats.csv").query("level == 'dataset' and score == 'test'").iloc[0]
    assert row["task"] == "regression" and row["n_pairs"] == 3
    assert row["diff"] == pytest.approx(np.mean(d), abs=1e-12)


def test_plots_of_a_cv_grid(cv_results, tmp_path, capsys):
    import matplotlib.image

    _, out = cv_results
    assert cli.main(["plot", str(out), "--plots-dir", str(tmp_path / "plots")]) == 0
    names = {p.rsplit("/", 1)[-1] for p in capsys.readouterr().out.split()}
    assert {"forest.png", "accuracy_vs_depth.png", "optimality.png", "regions_xor.png"} <= names
    assert matplotlib.image.imread(tmp_path / "plots" / "forest.png").ndim == 3


def test_forest_panels_show_each_dataset_interval(cv_results):
    from experiments import plots, report

    _, out = cv_results
    plt = plots._pyplot()
    df = report.runs_table(records.load_run_records(out))
    fig = plots._forest(df, plt)
    table = pd.read_csv(out / "stats.csv").query("level == 'dataset'")
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) == 2  # (test, train) x one depth
    for ax in axes:
        assert [t.get_text() for t in ax.get_yticklabels()] == ["xor", "threshold"]
        which = ax.get_title().split()[0]
        for y, dataset in enumerate(["xor", "threshold"]):
            row = table[(table["score"] == which) & (table["dataset"] == dataset)].iloc[0]
            segments = [line.get_xdata() for line in ax.get_lines() if list(line.get_ydata()) == [y, y]]
            assert any(np.allclose(seg, [row["ci_low"], row["ci_high"]]) for seg in segments)
    plt.close(fig)
