"""Config validation and run ids of the experiment harness."""

import subprocess
import sys
import textwrap

import pytest

from experiments import cli, config, methods

BASE = """
name = "t"
depths = [1, 2]
seeds = [0, 1]

[[datasets]]
name = "xor"
params = { n = 40, noise = 0.1 }

[[datasets]]
name = "iris"

[[methods]]
name = "sklearn-cart"

[[methods]]
name = "flow"
params = { time_limit = 5, node_limit = 10 }
grid = { start = ["cold", "cart"] }
"""

REORDERED = """
seeds = [1, 0]
depths = [2, 1]
name = "other name"

[[methods]]
name = "flow"
label = "FlowOCT"
grid = { start = ["cart", "cold"] }
params = { node_limit = 10, time_limit = 5.0, alpha = 0.0, threads = 1 }

[[methods]]
name = "sklearn-cart"
params = { criterion = "gini" }

[[datasets]]
name = "iris"

[[datasets]]
params = { noise = 0.10, n = 40 }
name = "xor"
label = "noisy xor"
"""


def write(tmp_path, text, name="c.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_reordering_lists_keys_and_number_formats_keeps_run_ids(tmp_path):
    a = config.load(write(tmp_path, BASE, "a.toml"))
    b = config.load(write(tmp_path, REORDERED, "b.toml"))
    assert len(a.runs) == 2 * 3 * 2 * 2
    assert sorted(r.run_id for r in a.runs) == sorted(r.run_id for r in b.runs)
    assert len({r.run_id for r in a.runs}) == len(a.runs)


def test_run_id_depends_on_the_run_only(tmp_path):
    runs = config.load(write(tmp_path, BASE)).runs
    extra = BASE + '\n[[datasets]]\nname = "wine"\n'
    more = config.load(write(tmp_path, extra, "more.toml")).runs
    assert {r.run_id for r in runs} < {r.run_id for r in more}
    changed = config.load(write(tmp_path, BASE.replace("noise = 0.1", "noise = 0.2"), "changed.toml")).runs
    xor_ids = {r.run_id for r in runs if r.dataset["name"] == "xor"}
    assert xor_ids.isdisjoint(r.run_id for r in changed)


def test_canonical_numbers():
    assert config.run_id({"a": 2.0, "b": [1.0, 0.5]}) == config.run_id({"b": [1, 0.5], "a": 2})
    assert config.run_id({"a": 0.1}) != config.run_id({"a": 0.10000000000000002})


def test_defaults_are_filled_in(tmp_path):
    run = config.load(write(tmp_path, BASE)).runs[-1]
    assert run.method["name"] == "flow"
    assert run.method["params"]["alpha"] == 0.0 and run.method["params"]["time_limit"] == 5.0
    assert isinstance(run.method["params"]["time_limit"], float)
    assert "max_thresholds" not in run.method["params"]  # unset (None) defaults are omitted


def test_order_of_tuning_candidates_does_not_matter(tmp_path):
    tuned = BASE + '\n[split]\nvalidation_size = 0.25\n'
    a = config.load(write(tmp_path, tuned.replace("grid = {", "tune = { alpha = [0.1, 0.0] }\ngrid = {"), "a.toml"))
    b = config.load(write(tmp_path, tuned.replace("grid = {", "tune = { alpha = [0, 0.1] }\ngrid = {"), "b.toml"))
    assert [r.run_id for r in a.runs] == [r.run_id for r in b.runs]
    assert a.runs[-1].method["tune"] == {"alpha": [0.0, 0.1]}


def test_method_entries_restricted_to_datasets(tmp_path):
    """A method entry with `datasets` runs only there; it may reuse a label on other datasets."""
    text = BASE.replace('params = { time_limit = 5, node_limit = 10 }', 'params = { time_limit = 5 }\ndatasets = ["iris"]')
    text += '\n[[methods]]\nname = "flow"\nparams = { time_limit = 60 }\ngrid = { start = ["cold", "cart"] }\n'
    text += 'datasets = ["xor"]\n'
    runs = config.load(write(tmp_path, text)).runs
    limits = {(r.dataset_label, r.method_label, r.method["params"]["time_limit"]) for r in runs if r.method["name"] == "flow"}
    assert limits == {(d, f"flow[start={s}]", t) for d, t in (("iris", 5.0), ("xor", 60.0)) for s in ("cold", "cart")}
    assert len(runs) == 2 * 3 * 2 * 2


def test_grid_labels(tmp_path):
    labels = {r.method_label for r in config.load(write(tmp_path, BASE)).runs}
    assert labels == {"sklearn-cart", "flow[start=cold]", "flow[start=cart]"}


MALFORMED = [
    (BASE.replace('name = "iris"', 'name = "irsi"'), "datasets[1].name", "unknown dataset 'irsi'"),
    (BASE.replace('name = "flow"', 'name = "octt"'), "methods[1].name", "unknown method 'octt'"),
    (BASE + "\nfoo = 1\n", "foo", "unknown key"),
    (BASE.replace("time_limit = 5", "time_limt = 5"), "methods[1].params.time_limt", "did you mean 'time_limit'"),
    (BASE.replace("time_limit = 5", 'time_limit = "fast"'), "methods[1].params.time_limit", "expected a number"),
    (BASE.replace('"cold", "cart"', '"cold", "warm"'), "methods[1].grid.start[1]", "'warm' is not one of"),
    (BASE.replace("depths = [1, 2]", 'depths = [1, "2"]'), "depths[1]", "expected int"),
    (BASE.replace("depths = [1, 2]", "depths = [0]"), "depths[0]", "must be >= 1"),
    (BASE.replace("n = 40,", "n_samples = 40,"), "datasets[0].params", "does not take ['n_samples']"),
    (BASE.replace("depths = [1, 2]", "depths = [1, 2"), "c.toml", "invalid TOML"),
    (BASE + '\n[[methods]]\nname = "sklearn-cart"\n', "methods[2]", "same method and parameters as methods[0]"),
    (BASE + "\n[split]\ntest_size = 1.5\n", "split.test_size", "expected a number in [0, 1)"),
    (BASE + '\n[[datasets]]\nname = "diabetes"\n', "datasets[2]", "is a regression dataset, but no method"),
    (BASE + '\n[[methods]]\nname = "oct"\ndatasets = ["xr"]\n', "methods[2].datasets[0]", "no dataset labelled 'xr'"),
    (BASE + '\n[[methods]]\nname = "oct"\nlabel = "sklearn-cart"\n', "methods[2]", "method label 'sklearn-cart'"),
    (BASE.replace("grid = {", "tune = { alpha = [0.0, 0.1] }\ngrid = {"), "methods[1].tune", "validation set"),
]


@pytest.mark.parametrize("text, where, what", MALFORMED)
def test_malformed_config_is_rejected_before_any_run(tmp_path, capsys, text, where, what):
    path = write(tmp_path, text)
    out = tmp_path / "out"
    assert cli.main(["run", str(path), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("config error: ") and f"{where}: " in err and what in err, err
    assert not out.exists()


def test_cli_exit_code_and_message_in_a_subprocess(tmp_path):
    path = write(tmp_path, BASE.replace('name = "flow"', 'name = "octt"'))
    proc = subprocess.run(
        [sys.executable, "-m", "experiments", "run", str(path), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    known = ", ".join(sorted(methods.METHODS))
    assert proc.stderr.strip() == f"config error: methods[1].name: unknown method 'octt' (known: {known}); did you mean 'oct'?"
    assert not (tmp_path / "out").exists()


def test_param_schema_matches_the_estimators():
    """Every harness parameter of a built-in method is a real parameter of the estimator it builds."""
    for name, method in methods.METHODS.items():
        params = {k: p.default for k, p in method.params.items() if p.default is not None}
        estimator = method.make(params, depth=2, seed=0)
        accepted = estimator.get_params()
        mapped = {"start": "init"}
        for key in method.params:
            assert mapped.get(key, key) in accepted, (name, key)


def test_shipped_configs_are_valid():
    for name in ("quick", "uci", "warmstart", "bench_greedy", "bench_oblique_regression"):
        experiment = config.load(cli.QUICK_CONFIG.parent / f"{name}.toml")
        assert experiment.runs and len({r.run_id for r in experiment.runs}) == len(experiment.runs)
