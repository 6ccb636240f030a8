"""src/benchmarks/scaling.py on a tiny configuration, and the harness's make_classification dataset."""

import importlib.util
import json

from benchmarks import scaling as bench_scaling
from experiments import config
from experiments.datasets import load_dataset
from experiments.runner import execute_run


def test_tiny_study_table_and_json(tmp_path, capsys):
    solvers = ["engine", "engine-binned", "cart"] + (["pycontree"] if importlib.util.find_spec("pycontree") else [])
    out = tmp_path / "out" / "scaling.json"
    results = bench_scaling.main(["--rows", "500", "--depths", "2", "--time-limit", "5", "--solvers", *solvers,
                                  "--json", str(out)])
    table = capsys.readouterr().out
    by = {r["solver"]: r for r in results}
    assert sorted(by) == sorted(solvers)
    engine, cart = by["engine"], by["cart"]
    assert engine["status"] == "optimal" and engine["proven"]
    assert engine["bound"] <= engine["errors"] <= cart["errors"]
    assert engine["peak_mib"] >= engine["data_mib"] > 0 and engine["seconds"] >= 0
    if "pycontree" in by:  # two exact solvers on the same rows: the same optimum
        assert by["pycontree"]["proven"] and by["pycontree"]["errors"] == engine["errors"]
    # 500 distinct values per feature, 255 bins: proven over the bins, never better than every midpoint's optimum,
    # and its bound (over every midpoint) never above it
    binned = by["engine-binned"]
    assert binned["proven"] and "over the bins" in binned["status"]
    assert binned["bound"] <= engine["errors"] <= binned["errors"]
    line = next(row for row in table.splitlines() if "| engine |" in row)
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[:4] == ["500", "2", "engine", str(engine["errors"])] and "optimal" in cells
    saved = json.loads(out.read_text())
    assert saved["results"] == results and saved["versions"]["numpy"] and "--rows" in saved["command"]
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".bench_scaling.")]  # no temporary left


def test_notes_flag_false_optima_and_trees_below_the_proof():
    base = dict(rows=10, depth=2, bound=None, gap=None, seconds=1.0, peak_mib=1.0, data_mib=1.0, status="")
    results = [dict(base, solver="engine", errors=5, proven=True), dict(base, solver="cart", errors=6, proven=None),
               dict(base, solver="pytrees", errors=7, proven=True),
               dict(base, solver="pycontree", errors=4, proven=False)]
    notes = bench_scaling.notes(results)
    assert notes[0] == "" and notes[1] == ""
    assert "FALSE OPTIMUM" in notes[2] and "worse than CART" in notes[2]
    assert "BELOW THE ENGINE'S PROVEN OPTIMUM" in notes[3]


def test_config_names_a_generated_set(tmp_path):
    X, y, info = load_dataset("make_classification", {"n_samples": 300, "n_features": 10, "random_state": 1})
    assert X.shape == (300, 10) and info["params"]["random_state"] == 1
    path = tmp_path / "c.toml"
    path.write_text('depths = [2]\nseeds = [0]\n[[datasets]]\nname = "make_classification"\n'
                    'params = { n_features = 10, random_state = 1 }\ngrid = { n_samples = [200, 400] }\n'
                    '[[methods]]\nname = "dp"\nparams = { time_limit = 5.0 }\n')
    runs = config.load(path).runs
    assert len(runs) == 2
    for run in runs:
        record = execute_run(run)
        assert record.status == "done", record.error


def test_shipped_scaling_config_is_valid():
    from experiments import cli

    experiment = config.load(cli.QUICK_CONFIG.parent / "scaling.toml")
    assert len(experiment.runs) == 5 * 2 * 3  # sizes x depths x methods
