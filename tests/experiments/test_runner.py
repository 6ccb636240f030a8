"""Running grids: records, resume after SIGKILL, failed runs, splits and tuning against scikit-learn."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from sklearn.datasets import load_iris
from sklearn.model_selection import train_test_split
from sklearn.tree import DecisionTreeClassifier

from experiments import cli, config, records, runner

# A plugin registering a method that sleeps `delay` s in fit and fails while the file `fail_if` exists.
PLUGIN = '''
import os
import time

from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from experiments.methods import GREEDY_PARAMS, METHODS, Method, Param, _sklearn_tree, register


class SlowTree(DecisionTreeClassifier):
    def __init__(self, max_depth=None, random_state=None, delay=0.0, fail_if=""):
        super().__init__(max_depth=max_depth, random_state=random_state)
        self.delay = delay
        self.fail_if = fail_if

    def fit(self, X, y):
        time.sleep(self.delay)
        if self.fail_if and os.path.exists(self.fail_if):
            raise RuntimeError("planned failure")
        return super().fit(X, y)


if "tree-regressor" not in METHODS:
    register(Method(
        "tree-regressor", "greedy", "regression", "test method",
        {"min_samples_leaf": Param(int, 1)},
        lambda p, depth, seed: DecisionTreeRegressor(max_depth=depth, random_state=seed, **p),
        tree_of=_sklearn_tree,
    ))


if "slow-tree" not in METHODS:
    register(Method(
        "slow-tree", "greedy", "classification", "test method",
        {"delay": Param(float, 0.0), "fail_if": Param(str, "")},
        lambda p, depth, seed: SlowTree(max_depth=depth, random_state=seed, **p),
        tree_of=_sklearn_tree,
    ))
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    (tmp_path / "slow_tree_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def write_config(path, *, delay=0.0, fail_if="", seeds=(0, 1, 2, 3, 4), extra=""):
    path.write_text(
        textwrap.dedent(
            f"""
            plugins = ["slow_tree_plugin"]
            depths = [1, 2]
            seeds = {list(seeds)}
            [[datasets]]
            name = "iris"
            [[methods]]
            name = "slow-tree"
            params = {{ delay = {delay}, fail_if = "{fail_if}" }}
            """
        )
        + extra
    )
    return path


def record_files(out):
    """Finished records (not the ``.tmp-*`` file of a write in progress)."""
    return records.iter_record_files(out)


def test_sigkill_then_resume_runs_each_run_exactly_once(plugin, tmp_path):
    cfg = write_config(tmp_path / "grid.toml", delay=0.4)
    expected = {r.run_id for r in config.load(cfg, allow_plugins=True).runs}
    assert len(expected) == 10
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "experiments", "run", str(cfg), "--out", str(out), "--quiet", "--no-summary", "--allow-plugins"],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not (out / "runs").is_dir() or not record_files(out):
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    survivors = record_files(out)
    assert 1 <= len(survivors) < len(expected)
    first = {p.name: p.stat().st_mtime_ns for p in survivors}

    rc = cli.main(["run", str(cfg), "--out", str(out), "--quiet", "--no-summary", "--allow-plugins"])
    assert rc == 2, (rc, [p.name for p in record_files(out)])  # refuses without --resume
    outcome = runner.run_grid(config.load(cfg, allow_plugins=True), out, resume=True, progress=False)
    assert (outcome.skipped, outcome.done, outcome.failed) == (len(survivors), len(expected) - len(survivors), 0)

    files = record_files(out)
    assert [p.stem for p in files] == sorted(expected)
    loaded = records.load_records(out)
    assert sorted(r["run_id"] for r in loaded) == sorted(expected)
    assert all(r["status"] == "done" for r in loaded)
    assert {p.name: p.stat().st_mtime_ns for p in files if p.name in first} == first  # finished runs untouched
    assert not list((out / "runs").glob(".tmp-*"))


def test_failed_runs_are_recorded_and_retried_on_resume(plugin, tmp_path, capsys):
    flag = tmp_path / "fail.flag"
    flag.touch()
    cfg = write_config(tmp_path / "grid.toml", fail_if=flag, seeds=(0,))
    out = tmp_path / "out"
    assert cli.main(["run", str(cfg), "--out", str(out), "--quiet", "--allow-plugins"]) == 1
    failed = records.load_records(out)
    assert len(failed) == 2 and all(r["status"] == "failed" for r in failed)
    err = failed[0]["error"]
    assert err["type"] == "RuntimeError" and err["message"] == "planned failure"
    assert "Traceback" in err["traceback"] and "planned failure" in err["traceback"]
    assert "Failed runs" in capsys.readouterr().out

    # still failing: retried (not skipped) and still not counted as done
    outcome = runner.run_grid(config.load(cfg, allow_plugins=True), out, resume=True, progress=False)
    assert (outcome.skipped, outcome.done, outcome.failed) == (0, 0, 2)

    flag.unlink()
    outcome = runner.run_grid(config.load(cfg, allow_plugins=True), out, resume=True, progress=False)
    assert (outcome.skipped, outcome.done, outcome.failed) == (0, 2, 0)
    assert sorted(r["status"] for r in records.load_records(out)) == ["done", "done"]
    assert len(record_files(out)) == 2


def iris_grid(tmp_path, body):
    path = tmp_path / "g.toml"
    path.write_text(textwrap.dedent(body))
    return path


def test_record_metrics_match_scikit_learn(tmp_path):
    cfg = iris_grid(
        tmp_path,
        """
        depths = [2]
        seeds = [3]
        [split]
        test_size = 0.3
        [[datasets]]
        name = "iris"
        [[methods]]
        name = "sklearn-cart"
        """,
    )
    out = tmp_path / "out"
    assert cli.main(["run", str(cfg), "--out", str(out), "--quiet", "--no-summary"]) == 0
    (rec,) = records.load_records(out)
    X, y = load_iris(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=3, stratify=y)
    ref = DecisionTreeClassifier(max_depth=2, random_state=3).fit(Xtr, ytr)
    assert rec["metrics"]["train_accuracy"] == ref.score(Xtr, ytr)
    assert rec["metrics"]["test_accuracy"] == ref.score(Xte, yte)
    assert rec["metrics"]["n_leaves"] == ref.get_n_leaves() and rec["metrics"]["depth"] == ref.get_depth()
    assert rec["data"] == {"n_train": 105, "n_validation": None, "n_test": 45, "n_features": 4, "n_classes": 3,
                           "stratified": True, "feature_names": list(load_iris().feature_names),
                           "categorical": [], "categories": {}, "missing": "native", "n_missing": 0,
                           "n_dropped": 0, "input": "numpy", "imputation": None}
    from greedy import Tree

    tree = Tree.from_dict(rec["tree"])
    np.testing.assert_array_equal(np.asarray(rec["classes"])[tree.predict(Xte).argmax(1)], ref.predict(Xte))
    env = rec["environment"]
    assert env["versions"]["numpy"] == np.__version__ and env["host"]["cpu_count"] == os.cpu_count()
    assert rec["started"] <= rec["finished"] and rec["solver"] is None


def test_validation_tuning_follows_the_protocol(tmp_path):
    """50/25/25 split, ccp_alpha picked on validation, final fit on train+validation (Bertsimas & Dunn)."""
    cfg = iris_grid(
        tmp_path,
        """
        depths = [3]
        seeds = [1]
        [split]
        test_size = 0.25
        validation_size = 0.25
        [[datasets]]
        name = "iris"
        [[methods]]
        name = "sklearn-cart"
        tune = { ccp_alpha = [0.3, 0.0, 0.05] }
        """,
    )
    out = tmp_path / "out"
    assert cli.main(["run", str(cfg), "--out", str(out), "--quiet", "--no-summary"]) == 0
    (rec,) = records.load_records(out)
    X, y = load_iris(return_X_y=True)
    Xrest, Xte, yrest, yte = train_test_split(X, y, test_size=0.25, random_state=1, stratify=y)
    Xtr, Xva, ytr, yva = train_test_split(Xrest, yrest, test_size=0.25 / 0.75, random_state=1, stratify=yrest)
    assert (rec["data"]["n_train"], rec["data"]["n_validation"], rec["data"]["n_test"]) == (len(ytr), len(yva), len(yte))
    val = {}
    for a in (0.3, 0.0, 0.05):
        m = DecisionTreeClassifier(max_depth=3, random_state=1, ccp_alpha=a).fit(Xtr, ytr)
        val[a] = (m.score(Xva, yva), m.get_n_leaves())
    trials = {t["params"]["ccp_alpha"]: t["validation"]["accuracy"] for t in rec["tuning"]["trials"]}
    assert trials == {a: v[0] for a, v in val.items()}
    best = min(val, key=lambda a: (-val[a][0], val[a][1], -a))  # ties: fewer leaves, then the larger penalty
    assert rec["tuning"]["chosen"] == {"ccp_alpha": best}
    final = DecisionTreeClassifier(max_depth=3, random_state=1, ccp_alpha=best).fit(np.vstack([Xtr, Xva]), np.r_[ytr, yva])
    assert rec["metrics"]["test_accuracy"] == final.score(Xte, yte)
    assert rec["metrics"]["n_fit"] == len(ytr) + len(yva)


def test_atomic_write_keeps_the_old_file_on_failure(tmp_path):
    path = tmp_path / "r.json"
    records.atomic_write_json(path, {"a": 1, "b": float("nan")})
    assert json.loads(path.read_text()) == {"a": 1, "b": None}
    with pytest.raises(TypeError, match="cannot store a object"):
        records.atomic_write_json(path, {"a": object()})
    assert json.loads(path.read_text()) == {"a": 1, "b": None}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_git_revision_outside_a_checkout_is_none(tmp_path):
    assert records.git_revision(tmp_path) is None


def test_dask_backend_without_scheduler_is_a_usage_error(tmp_path, capsys):
    cfg = iris_grid(tmp_path, 'depths = [1]\nseeds = [0]\n[[datasets]]\nname = "iris"\n[[methods]]\nname = "sklearn-cart"\n')
    assert cli.main(["run", str(cfg), "--out", str(tmp_path / "o"), "--backend", "dask", "--quiet"]) == 2
    assert "--scheduler" in capsys.readouterr().err


def test_loky_workers_import_plugins_and_force_one_solver_thread(plugin, tmp_path):
    cfg = write_config(tmp_path / "grid.toml", seeds=(0, 1))
    out = tmp_path / "out"
    assert cli.main(["run", str(cfg), "--out", str(out), "--n-jobs", "2", "--quiet", "--no-summary", "--allow-plugins"]) == 0
    recs = records.load_records(out)
    assert len(recs) == 4 and all(r["status"] == "done" for r in recs)
    assert all(r["execution"]["backend"] == "loky" and r["execution"]["force_single_thread"] for r in recs)
    assert {r["worker"]["pid"] for r in recs}.isdisjoint({os.getpid()})


def test_regression_runs_report_r2_and_mse(plugin, tmp_path):
    from sklearn.datasets import load_diabetes
    from sklearn.metrics import mean_squared_error, r2_score
    from sklearn.tree import DecisionTreeRegressor

    cfg = iris_grid(
        tmp_path,
        """
        plugins = ["slow_tree_plugin"]
        depths = [3]
        seeds = [2]
        [[datasets]]
        name = "diabetes"
        [[methods]]
        name = "tree-regressor"
        params = { min_samples_leaf = 5 }
        """,
    )
    out = tmp_path / "out"
    assert cli.main(["run", str(cfg), "--out", str(out), "--quiet", "--allow-plugins"]) == 0
    (rec,) = records.load_records(out)
    X, y = load_diabetes(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=2)  # never stratified
    ref = DecisionTreeRegressor(max_depth=3, random_state=2, min_samples_leaf=5).fit(Xtr, ytr)
    m = rec["metrics"]
    assert m["train_r2"] == pytest.approx(r2_score(ytr, ref.predict(Xtr)))
    assert m["test_mse"] == pytest.approx(mean_squared_error(yte, ref.predict(Xte)))
    assert "train_accuracy" not in m and rec["task"] == "regression" and rec["data"]["stratified"] is False


def test_progress_without_tqdm_is_a_counter(plugin, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm -> ImportError
    cfg = write_config(tmp_path / "grid.toml", seeds=(0,))
    assert cli.main(["run", str(cfg), "--out", str(tmp_path / "out"), "--no-summary", "--allow-plugins"]) == 0
    err = capsys.readouterr().err
    assert "[1/2] iris d=1 slow-tree s=0: done" in err and "[2/2]" in err
