"""Damaged records cannot bend the answer: each is named in a warning and left out of every table
(or stops ``summarize --strict``); the statistics refuse invalid input; a tune grid whose depths
all exceed a run's depth is refused.

The records are synthetic (no fits): the runs of a small cross-validation grid, written with the
harness's own functions, with scores drawn at random. The expected tables of each corruption are
those of a second directory that holds the clean records without the damaged one.
"""

import json
import math
import shutil
import textwrap

import numpy as np
import pytest

from experiments import cli, config, methods, protocols, records, runner, stats

pytest.importorskip("pandas")

GRID = """
name = "damaged"
protocol = "cv"
depths = [2]
seeds = [0, 1]

[cv]
folds = 3

[[datasets]]
name = "xor"
params = { n = 30 }

[[datasets]]
name = "xor"
label = "wide"
params = { n = 30, n_irrelevant = 1 }

[[methods]]
name = "cart"

[[methods]]
name = "flow"
label = "optimal"
grid = { start = ["cart"] }
"""
OUTPUTS = ("runs.csv", "summary.csv", "stats.csv", "report.md")


def clean_record(spec, rng) -> records.RunRecord:
    """A finished run of ``spec`` with random scores (what the runner would write, without the fit)."""
    method = methods.METHODS[spec.method["name"]]
    mip = method.kind == "mip"
    return records.RunRecord(
        run_id=spec.run_id,
        config={**spec.identity, "dataset_label": spec.dataset_label, "method_label": spec.method_label},
        status="done", kind=method.kind, task=method.task,
        data={"n_train": 20, "n_validation": None, "n_test": 10, "fold": spec.fold, "folds": 3, "repeat": spec.seed},
        metrics={"train_accuracy": float(rng.randint(14, 21)) / 20, "test_accuracy": float(rng.randint(4, 11)) / 10,
                 "n_fit": 20, "n_leaves": 4, "depth": 2, "fit_time": 0.01},
        solver={"status": "optimal", "proven_optimal": True, "certificate": "engine"} if mip else None,
    )


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """A results directory of clean records (grid.json written by the runner), and the records."""
    base = tmp_path_factory.mktemp("damaged")
    cfg = base / "grid.toml"
    cfg.write_text(textwrap.dedent(GRID))
    experiment = config.load(cfg)
    out = base / "clean"
    runner.prepare_out_dir(out, experiment, resume=False)
    rng = np.random.RandomState(0)
    recs = [clean_record(spec, rng) for spec in experiment.runs]
    for rec in recs:
        records.write_record(out, rec)
    return out, recs


def summarize(out, capsys, *extra):
    code = cli.main(["summarize", str(out), *extra])
    return code, capsys.readouterr().err


def outputs(out) -> dict:
    return {name: (out / name).read_text() for name in OUTPUTS}


def without(clean, tmp_path, run_ids, capsys) -> dict:
    """The tables of the clean records minus ``run_ids``, in a directory of their own."""
    out, recs = clean
    other = tmp_path / "expected"
    other.mkdir()
    shutil.copy(out / "grid.json", other / "grid.json")
    records.runs_dir(other).mkdir()
    for rec in recs:
        if rec.run_id not in run_ids:
            records.write_record(other, rec)
    code, err = summarize(other, capsys)
    assert code == 0 and "warning" not in err
    return outputs(other)


def _victim(recs, fold=1):
    """The record of the optimal method on dataset xor, seed 0, ``fold``."""
    return next(r for r in recs if r.config["method_label"] == "optimal[start=cart]"
                and r.config["dataset_label"] == "xor" and r.config["seed"] == 0 and r.config["fold"] == fold)


DELETE = object()


def _set(*keys):
    """An edit of a record's JSON: the value last in ``keys`` put at the path before it (DELETE: removed)."""
    *where, last, value = keys

    def edit(data):
        for k in where:
            data = data[k]
        if value is DELETE:
            del data[last]
        else:
            data[last] = value

    return edit


# corruption -> (edit of the victim's JSON, words of its warning)
EDITS = {
    "accuracy above 1": (_set("metrics", "test_accuracy", 1.7), "metrics.test_accuracy is 1.7"),
    "NaN accuracy": (_set("metrics", "test_accuracy", math.nan), "metrics.test_accuracy is nan"),
    "string accuracy": (_set("metrics", "test_accuracy", "0.9"), "metrics.test_accuracy is '0.9'"),
    "negative training accuracy": (_set("metrics", "train_accuracy", -0.5), "metrics.train_accuracy is -0.5"),
    "zero training rows": (_set("data", "n_train", 0), "data.n_train is 0"),
    "missing fold": (_set("config", "fold", DELETE), "config has no fold"),
    "fold out of range": (_set("config", "fold", 7), "config.fold is 7"),
    "unknown method": (_set("config", "method", "name", "bogus"), "unknown method 'bogus'"),
    "unknown method label": (_set("config", "method_label", "bogus"), "method label 'bogus'"),
    "kind of another method": (_set("kind", "greedy"), "kind 'greedy'"),
    "proven flag a string": (_set("solver", "proven_optimal", "True"), "solver.proven_optimal is 'True'"),
    "edited seed": (_set("config", "seed", 5), "the record was edited"),
}


@pytest.mark.parametrize("case", sorted(EDITS))
def test_a_damaged_record_is_named_and_left_out(clean, tmp_path, capsys, case):
    out, recs = clean
    edit, words = EDITS[case]
    victim = _victim(recs)
    damaged = tmp_path / "damaged"
    shutil.copytree(out, damaged)
    path = records.record_path(damaged, victim.run_id)
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))  # NaN written as the JSON extension NaN, as a careless editor would

    code, err = summarize(damaged, capsys, "--strict")
    assert code == 2 and str(path) in err and victim.run_id in err and words in err, err
    assert not any((damaged / name).exists() for name in OUTPUTS)  # --strict: nothing written

    code, err = summarize(damaged, capsys)
    assert code == 0
    (line,) = [line for line in err.splitlines() if line.startswith("warning")]
    assert str(path) in line and f"run {victim.run_id}" in line and words in line, line
    assert outputs(damaged) == without(clean, tmp_path, {victim.run_id}, capsys)


def test_unchecked_the_record_would_bend_the_answer(clean, tmp_path):
    """What the check prevents: read without it, one test accuracy of 1.7 moves the optimal mean on xor."""
    from experiments import report

    out, recs = clean
    damaged = tmp_path / "damaged"
    shutil.copytree(out, damaged)
    victim = _victim(recs)
    data = victim.to_dict()
    data["metrics"]["test_accuracy"] = 1.7
    records.atomic_write_json(records.record_path(damaged, victim.run_id), data)
    raw = [records.RunRecord.from_dict(json.loads(p.read_text())) for p in records.iter_record_files(damaged)]

    def optimal_mean(recs):
        table = stats.stats_table(report.runs_table(recs))
        return table.query("level == 'dataset' and score == 'test' and dataset == 'xor'")["optimal_mean"].item()

    kept = [r for r in recs if r.run_id != victim.run_id]
    assert optimal_mean(records.load_run_records(damaged, warn=lambda message: None)) == optimal_mean(kept)
    assert optimal_mean(raw) == pytest.approx((5 * optimal_mean(kept) + 1.7) / 6)  # 6 pairs, one of them 1.7


@pytest.mark.parametrize("over_another_run", [False, True])
def test_a_done_record_copied_under_another_run_id(clean, tmp_path, capsys, over_another_run):
    """The copy is named (as a copy of the original); the original stays, a run it overwrote is gone."""
    out, recs = clean
    original = _victim(recs)
    target = _victim(recs, fold=2).run_id if over_another_run else "feedfacefeedface"
    damaged = tmp_path / "damaged"
    shutil.copytree(out, damaged)
    data = json.loads(records.record_path(damaged, original.run_id).read_text())
    data["run_id"] = target
    records.atomic_write_json(records.record_path(damaged, target), data)

    code, err = summarize(damaged, capsys, "--strict")
    assert code == 2 and f"(run {target}): a copy of run {original.run_id}" in err, err
    code, err = summarize(damaged, capsys)
    (line,) = [line for line in err.splitlines() if line.startswith("warning")]
    assert str(records.record_path(damaged, target)) in line and f"a copy of run {original.run_id}" in line
    lost = {target} if over_another_run else set()
    assert outputs(damaged) == without(clean, tmp_path, lost, capsys)


def test_clean_records_pass_and_a_record_outside_the_grid_is_named(clean, tmp_path, capsys):
    out, recs = clean
    assert records.load_run_records(out, strict=True) == sorted(recs, key=lambda r: r.run_id)
    assert all(records.check_record(r, records.GridFacts.read(out), {r.run_id}) is None for r in recs)
    grid = json.loads((out / "grid.json").read_text())
    victim = _victim(recs)
    facts = records.GridFacts(frozenset(grid["run_ids"]) - {victim.run_id})
    assert records.check_record(victim, facts) == "not a run of the grid in grid.json"


def test_failed_records_are_not_judged_by_their_scores(clean, tmp_path):
    out, recs = clean
    failed = records.RunRecord(run_id="x", config={}, status="failed", metrics={"test_accuracy": 1.7})
    assert records.check_record(failed, records.GridFacts.read(out)) is None


# ---------------------------------------------------------------------------- statistics refuse invalid input
@pytest.mark.parametrize("call, message", [
    (lambda: stats.corrected_t_test([0.1, 0.2], n_train=0, n_test=5), "n_train must be finite and > 0"),
    (lambda: stats.corrected_t_test([0.1, 0.2], n_train=[10, -1], n_test=5), "n_train must be finite and > 0"),
    (lambda: stats.corrected_t_test([0.1, 0.2], n_train=10, n_test=-5), "n_test must be finite and >= 0"),
    (lambda: stats.corrected_t_test([0.1, 0.2], n_train=[10, 10, 10], n_test=5), "one per difference"),
    (lambda: stats.corrected_t_test([0.1, math.nan], n_train=10, n_test=5), "must be finite"),
    (lambda: stats.corrected_t_test([], n_train=10, n_test=5), "at least one pair"),
    (lambda: stats.corrected_t_test([0.1, 0.2], 10, 5, confidence=1.5), "confidence must be in"),
    (lambda: stats.effect_size_dz([]), "at least one pair"),
    (lambda: stats.effect_size_dz([0.1, math.inf]), "must be finite"),
    (lambda: stats.wilcoxon_signed_rank([]), "Wilcoxon.*at least one pair"),
    (lambda: stats.wilcoxon_signed_rank([0.1, math.nan]), "Wilcoxon.*must be finite"),
    (lambda: stats.holm([0.01, 1.2]), r"p-values must be in \[0, 1\], got \[1.2\]"),
    (lambda: stats.holm([-0.01, 0.5]), r"p-values must be in \[0, 1\], got \[-0.01\]"),
    (lambda: stats.holm([[0.1]]), "1-d"),
])
def test_statistics_refuse_invalid_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_holm_still_keeps_nan():
    assert np.isnan(stats.holm([0.2, np.nan])[1])


# ---------------------------------------------------------------------------- tuned depths
TUNED = """
protocol = "nested-cv"
depths = [2, 3]
seeds = [0]
[cv]
folds = 2
[[datasets]]
name = "xor"
params = { n = 20 }
[[methods]]
name = "cart"
tune = { depth = [3, 4] }
"""


def test_a_tune_grid_whose_depths_all_exceed_a_run_depth_is_refused(tmp_path):
    path = tmp_path / "t.toml"
    path.write_text(TUNED)
    with pytest.raises(ValueError, match=r"methods\[0\]\.tune\.depth: every tuned depth \[3, 4\] exceeds the "
                                         r"run's depth 2"):
        config.load(path)
    path.write_text(TUNED.replace("depth = [3, 4]", "depth = [2, 4]"))
    assert len(config.load(path).runs) == 4  # one candidate at depth 2 is enough
    with pytest.raises(ValueError, match="'depth': every candidate \\[3, 4\\] exceeds the run's depth 2"):
        protocols._candidates({"depth": [3, 4], "min_samples_leaf": [1]}, 2)
    assert protocols._candidates({"depth": [1, 3]}, 2) == [{"depth": 1}]
