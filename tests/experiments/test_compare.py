"""Declared method pairs (``[[compare]]``): which pairs the paired statistics use, the config
errors, and that a grid without them keeps the greedy-vs-optimal table it always had.

The statistics are checked on synthetic fold scores whose differences are known (rows shuffled,
so a pairing by position fails); the harness end to end on a tiny cross-validated grid of fast
methods (greedy CART twice and the exact engine)."""

import itertools
import json
import textwrap

import numpy as np
import pytest

from experiments import cli, config, records, report, stats

pd = pytest.importorskip("pandas")


# ---------------------------------------------------------------------------- statistics
def runs(seeds=(0, 1), folds=5, n=100, unproven=(), seed=0):
    """Fold scores of four methods on datasets "a" and "b": greedy "cart" and "cart2" (cart − 0.02),
    optimal "opt" (cart + 0.05) and "octh" (opt + 0.01·k, k the pair's index); training scores
    cart + 0.01 for the optimal ones. ``unproven``: (method, dataset, seed, fold) not proven."""
    rng = np.random.RandomState(seed)
    rows = []
    for dataset in ("a", "b"):
        for k, (s, f) in enumerate(itertools.product(seeds, range(folds))):
            base, train = rng.uniform(0.5, 0.8), rng.uniform(0.8, 0.9)
            common = {"dataset": dataset, "depth": 2, "seed": s, "fold": f, "status": "done",
                      "task": "classification", "n_fit": n - n // folds, "n_test": n // folds}
            for method, kind, test, tr in (("cart", "greedy", base, train), ("cart2", "greedy", base - 0.02, train),
                                           ("opt", "mip", base + 0.05, train + 0.01),
                                           ("octh", "mip", base + 0.05 + 0.01 * k, train + 0.01)):
                proven = None if kind == "greedy" else (method, dataset, s, f) not in unproven
                certificate = None if kind == "greedy" else ("unproven" if not proven else
                                                               "engine" if method == "opt" else "mip")
                rows.append({**common, "method": method, "kind": kind, "test_score": test, "train_score": tr,
                             "proven_optimal": proven, "certificate": certificate})
    return pd.DataFrame(rows).sample(frac=1.0, random_state=seed).reset_index(drop=True)


def dataset_rows(table, score="test"):
    return table[(table["level"] == "dataset") & (table["score"] == score)]


def test_declared_pairs_are_the_pairs_compared_in_their_order():
    compare = [("opt", "octh"), ("cart", "octh"), ("cart", "cart2")]
    table = stats.stats_table(runs(), compare)
    assert list(table.columns) == stats.COMPARE_COLUMNS
    assert list(dict.fromkeys(zip(table["baseline"], table["candidate"]))) == compare
    per = dataset_rows(table).set_index(["baseline", "candidate", "dataset"])
    shift = np.mean([0.01 * k for k in range(10)])
    assert per.loc[("opt", "octh", "a"), "diff"] == pytest.approx(shift)
    assert per.loc[("cart", "octh", "b"), "diff"] == pytest.approx(0.05 + shift)
    assert per.loc[("cart", "cart2", "a"), "diff"] == pytest.approx(-0.02)
    assert per.loc[("opt", "octh", "a"), "n_pairs"] == 10
    # the t-test of the declared pair is the one of its differences, corrected by n_test / n_train
    expected = stats.corrected_t_test([0.01 * k for k in range(10)], 80, 20)
    assert per.loc[("opt", "octh", "a"), "p"] == pytest.approx(expected["p"])
    # across datasets: Wilcoxon over the two datasets, win/tie/loss of candidate − baseline
    across = table[(table["level"] == "across") & (table["score"] == "test")].set_index(["baseline", "candidate"])
    assert tuple(across.loc[("cart", "cart2"), ["wins", "ties", "losses"]]) == (0, 0, 2)
    assert tuple(across.loc[("opt", "octh"), ["wins", "ties", "losses"]]) == (2, 0, 0)
    # Holm within (level, score) over every declared pair: three pairs × two datasets
    assert np.allclose(dataset_rows(table)["p_holm"], stats.holm(dataset_rows(table)["p"].to_numpy()))


def test_unproven_counts_either_optimal_side():
    df = runs(unproven={("opt", "a", 0, 1), ("octh", "a", 1, 2), ("octh", "a", 1, 3)})
    table = stats.stats_table(df, [("opt", "octh"), ("cart", "octh"), ("cart", "cart2")])
    per = dataset_rows(table).set_index(["baseline", "candidate", "dataset"])
    both = per.loc[("opt", "octh", "a")]
    assert (both["proven"], both["mip_fits"], both["unproven"]) == (17, 20, 3)
    assert both["settled_by"] == "octh: mip 8, unproven 2; opt: engine 9, unproven 1"
    one = per.loc[("cart", "octh", "a")]
    assert (one["proven"], one["mip_fits"], one["unproven"]) == (8, 10, 2)
    assert one["settled_by"] == "mip 8, unproven 2"
    greedy = per.loc[("cart", "cart2", "a")]
    assert (greedy["proven"], greedy["mip_fits"], greedy["unproven"], greedy["settled_by"]) == (0, 0, 0, "")
    across = table[(table["level"] == "across") & (table["score"] == "test")].set_index(["baseline", "candidate"])
    assert (across.loc[("opt", "octh"), "unproven"], across.loc[("opt", "octh"), "mip_fits"]) == (3, 40)
    assert across.loc[("opt", "octh"), "settled_by"] == "octh: mip 18, unproven 2; opt: engine 19, unproven 1"
    # the report flags both rows with unproven fits, and shows no proof for a greedy pair
    text = report.stats_markdown(table, compare=[("opt", "octh"), ("cart", "octh"), ("cart", "cart2")])
    assert "| 17/20 † |" in text and "| 8/10 † |" in text and "| 20/20 |" in text
    assert "| — |" in text


def test_the_default_is_greedy_vs_optimal_with_its_columns():
    df = runs()
    table = stats.stats_table(df)
    assert list(table.columns) == stats.COLUMNS
    assert "greedy" in table.columns and "baseline" not in table.columns
    assert set(zip(table["greedy"], table["optimal"])) == set(itertools.product(("cart", "cart2"), ("opt", "octh")))
    # a declared greedy-vs-optimal pair gives the same numbers, under the generic column names
    declared = stats.stats_table(df, [("cart", "opt")])
    default = table[(table["greedy"] == "cart") & (table["optimal"] == "opt")]
    renamed = stats.generic(default)[0].reset_index(drop=True)
    for column in ("diff", "p", "ci_low", "ci_high", "baseline_mean", "candidate_mean", "proven", "mip_fits"):
        assert np.allclose(declared[column].to_numpy(float), renamed[column].to_numpy(float), equal_nan=True)
    # and the default section keeps its heading and wording
    text = report.stats_markdown(table)
    assert text.startswith("## Greedy vs optimal\n") and "### opt vs cart" in text
    assert "Paired comparisons" not in text


def test_a_declared_pair_without_runs_is_said_not_dropped():
    table = stats.stats_table(runs(), [("cart", "opt"), ("cart", "gone")])
    assert set(zip(table["baseline"], table["candidate"])) == {("cart", "opt")}
    text = report.stats_markdown(table, compare=[("cart", "opt"), ("cart", "gone")])
    assert text.startswith("## Paired comparisons\n")
    assert "### gone vs cart\n\nNo paired runs" in text


# ---------------------------------------------------------------------------- config
GRID = {
    "protocol": "cv", "depths": [1], "seeds": [0], "cv": {"folds": 2},
    "datasets": [{"name": "xor", "params": {"n": 16}}, {"name": "lenses"}],
    "methods": [{"name": "cart"}, {"name": "cart", "label": "cart-entropy", "params": {"criterion": "entropy"}},
                {"name": "dp", "label": "optimal"}],
}


def grid(compare, **extra):
    return {**GRID, **extra, "compare": compare}


def test_a_valid_declaration_is_kept_and_changes_no_run_id():
    plain = config.from_dict(GRID)
    declared = config.from_dict(grid([{"baseline": "cart", "candidate": "cart-entropy"},
                                      {"baseline": "optimal", "candidate": "cart"}]))
    assert plain.compare is None
    assert declared.compare == [("cart", "cart-entropy"), ("optimal", "cart")]
    assert [r.run_id for r in declared.runs] == [r.run_id for r in plain.runs]
    assert declared.fingerprint == plain.fingerprint


@pytest.mark.parametrize("compare, extra, where, message", [
    ([{"baseline": "cart", "candidate": "cart-entopy"}], {}, "compare[0].candidate",
     "no method labelled 'cart-entopy' (method labels: cart, cart-entropy, optimal); did you mean 'cart-entropy'?"),
    ([{"baseline": "sklearn", "candidate": "cart"}], {}, "compare[0].baseline", "no method labelled 'sklearn'"),
    ([{"baseline": "cart", "candidate": "cart"}], {}, "compare[0]", "baseline and candidate are both 'cart'"),
    ([{"baseline": "cart", "candidate": "optimal"}, {"baseline": "optimal", "candidate": "cart"}], {}, "compare[1]",
     "'optimal' and 'cart' are already compared by compare[0]"),
    ([{"baseline": "cart", "candidate": "tree"}],
     {"datasets": [{"name": "xor", "params": {"n": 16}}, {"name": "xor_regression", "params": {"n": 40}}],
      "methods": [{"name": "cart"}, {"name": "cart-regressor", "label": "tree"}]},
     "compare[0]", "'cart' is a classification method and 'tree' a regression method: they never run on the same data"),
    ([{"baseline": "cart", "candidate": "optimal"}],
     {"methods": [{"name": "cart", "datasets": ["xor"]}, {"name": "dp", "label": "optimal", "datasets": ["lenses"]}]},
     "compare[0]", "run on no common dataset"),
    ([{"baseline": "cart", "candiate": "optimal"}], {}, "compare[0].candiate", "did you mean 'candidate'?"),
    ([{"baseline": "cart"}], {}, "compare[0].candidate", "missing"),
    ([{"baseline": "cart", "candidate": 3}], {}, "compare[0].candidate", "expected str"),
    ([], {}, "compare", "non-empty array of tables ([[compare]])"),
    ({"baseline": "cart", "candidate": "optimal"}, {}, "compare", "non-empty array of tables ([[compare]])"),
])
def test_config_errors_name_the_place(compare, extra, where, message):
    with pytest.raises(config.ConfigError) as exc:
        config.from_dict(grid(compare, **extra))
    assert exc.value.where == where
    assert message in exc.value.message


# ---------------------------------------------------------------------------- end to end
TOML = """
name = "compare"
protocol = "cv"
depths = [1, 2]
seeds = [0]

[cv]
folds = 3

[[datasets]]
name = "xor"
params = { n = 30, noise = 0.1 }

[[datasets]]
name = "lenses"

[[methods]]
name = "cart"

[[methods]]
name = "cart"
label = "cart-entropy"
params = { criterion = "entropy" }

[[methods]]
name = "dp"
label = "optimal"
"""

COMPARE = """
[[compare]]
baseline = "cart"
candidate = "cart-entropy"

[[compare]]
baseline = "cart-entropy"
candidate = "optimal"
"""


def test_a_grid_reports_its_declared_pairs_and_resume_switches_them(tmp_path, capsys):
    cfg, out = tmp_path / "compare.toml", tmp_path / "out"
    cfg.write_text(textwrap.dedent(TOML))
    assert cli.main(["run", str(cfg), "--out", str(out), "--quiet", "--no-summary"]) == 0
    assert cli.main(["summarize", str(out)]) == 0
    text = capsys.readouterr().out
    assert "## Greedy vs optimal" in text and "## Paired comparisons" not in text
    default = pd.read_csv(out / "stats.csv")
    assert list(default.columns) == stats.COLUMNS
    assert set(zip(default["greedy"], default["optimal"])) == {("cart", "optimal"), ("cart-entropy", "optimal")}
    before = {p.name: p.read_bytes() for p in records.iter_record_files(out)}

    # the pairs enter no run id: the edited config resumes the same directory and runs nothing again
    cfg.write_text(textwrap.dedent(TOML) + textwrap.dedent(COMPARE))
    assert cli.main(["run", str(cfg), "--out", str(out), "--resume", "--quiet"]) == 0
    text = capsys.readouterr().out
    assert {p.name: p.read_bytes() for p in records.iter_record_files(out)} == before
    assert "## Paired comparisons" in text and "## Greedy vs optimal" not in text
    assert "### cart-entropy vs cart" in text and "### optimal vs cart-entropy" in text
    assert "### optimal vs cart\n" not in text
    declared = pd.read_csv(out / "stats.csv")
    assert list(declared.columns) == stats.COMPARE_COLUMNS
    assert list(dict.fromkeys(zip(declared["baseline"], declared["candidate"]))) == [
        ("cart", "cart-entropy"), ("cart-entropy", "optimal")]
    # every declared pair: 2 datasets × 2 depths × 2 scores per dataset, 2 depths × 2 scores across
    assert declared.groupby(["baseline", "candidate"]).size().to_dict() == {
        ("cart", "cart-entropy"): 12, ("cart-entropy", "optimal"): 12}
    assert (declared[declared["baseline"] == "cart"]["mip_fits"] == 0).all()
    optimal = declared[(declared["candidate"] == "optimal") & (declared["level"] == "dataset")]
    assert (optimal["mip_fits"] == 3).all() and (optimal["proven"] == 3).all()  # the engine proves every fit
    # the per-dataset differences are those of the records, fold by fold
    recs = records.load_records(out)
    score = {(r["config"]["dataset_label"], r["config"]["depth"], r["config"]["fold"], r["config"]["method_label"]):
             r["metrics"]["test_accuracy"] for r in recs}
    row = declared[(declared["level"] == "dataset") & (declared["score"] == "test") & (declared["dataset"] == "xor")
                   & (declared["depth"] == 2) & (declared["candidate"] == "optimal")].iloc[0]
    diffs = [score[("xor", 2, f, "optimal")] - score[("xor", 2, f, "cart-entropy")] for f in range(3)]
    assert row["diff"] == pytest.approx(np.mean(diffs))
    assert json.loads((out / "grid.json").read_text())["config"].endswith(textwrap.dedent(COMPARE))

    assert cli.main(["plot", str(out)]) == 0
    assert "forest.png" in capsys.readouterr().out


def test_the_shipped_comparison_configs_declare_their_pairs():
    oblique = config.load(cli.QUICK_CONFIG.parent / "oblique.toml")
    assert oblique.compare == [("optimal", "oct-h"), ("cart", "oct-h"), ("cart", "optimal")]
    assert {r.dataset_label for r in oblique.runs} == {"iris", "wine", "breast_cancer", "xor-rotated"}
    linear = config.load(cli.QUICK_CONFIG.parent / "linear_leaves.toml")
    assert linear.compare == [("ort", "ort-l"), ("cart-linear", "ort-l")]
    for experiment in (oblique, linear):
        assert {r.depth for r in experiment.runs} == {2}
        assert all(r.protocol == "cv" and r.identity["cv"]["folds"] == 5 for r in experiment.runs)
    greedy = next(r for r in linear.runs if r.method_label == "cart-linear").method["params"]
    assert (greedy["leaf_model"], greedy["criterion"], greedy["min_samples_leaf"]) == (
        "linear", "linear_squared_error", 40)
