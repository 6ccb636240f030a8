"""The harness's Rashomon methods: the record's set, the report's section and the size-against-epsilon plot."""

import json
import textwrap

import numpy as np
import pytest

from experiments import cli, methods, records, report

pd = pytest.importorskip("pandas")

GRID = """
name = "rashomon"
depths = [1, 2]
seeds = [0, 1]

[[datasets]]
name = "lenses"

[[methods]]
name = "cart"

[[methods]]
name = "rashomon"
params = { epsilon = 0.2, curve_points = 5 }
"""


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("rashomon") / "out"
    cfg = out.parent / "rashomon.toml"
    cfg.write_text(textwrap.dedent(GRID))
    assert cli.main(["run", str(cfg), "--out", str(out), "--quiet", "--no-summary"]) == 0
    return out


def test_records_hold_the_set(results):
    recs = [r for r in records.load_records(results) if r["config"]["method"]["name"] == "rashomon"]
    assert len(recs) == 4 and all(r["status"] == "done" for r in recs)
    for r in recs:
        s = r["solver"]["rashomon"]
        curve = s["size_vs_epsilon"]
        assert [e for e, _ in curve] == pytest.approx(np.linspace(0, 0.2, 5).tolist())
        sizes = [n for _, n in curve]
        assert sizes == sorted(sizes) and sizes[0] >= 1 and sizes[-1] == s["size"]
        assert s["optimum"] <= s["threshold"] and s["complete"] and isinstance(s["cart_in_set"], bool)
        assert set(s["feature_usage"]) == set(r["data"]["feature_names"])
        assert r["solver"]["certificate"] == "engine"


def test_report_and_plot(results, capsys):
    assert cli.main(["summarize", str(results)]) == 0
    text = (results / "report.md").read_text()
    assert "## Rashomon sets" in text
    section = report.section(text, "## Rashomon sets")
    rows = [line for line in section.splitlines() if line.startswith("| lenses")]
    assert len(rows) == 2 and all("| rashomon | 0.2 | 2 |" in row for row in rows)
    runs = pd.read_csv(results / "runs.csv")
    assert runs.loc[runs["method"] == "cart", "rashomon_size"].isna().all()
    assert cli.main(["plot", str(results)]) == 0
    assert (results / "plots" / "rashomon_size_vs_epsilon.png").stat().st_size > 0


def test_estimator_agrees_with_the_set():
    from greedy import CARTClassifier
    from optitree import RashomonSet, datasets

    X, y, _ = datasets.load("monks2", subset="train")
    est = methods.get("rashomon").make({**methods.get("rashomon").defaults(), "epsilon": 0.1}, 2, 0).fit(X, y)
    rs = RashomonSet(max_depth=2, epsilon=0.1, alpha=0.01).fit(X, y)
    got = est.result_.to_dict()["rashomon"]
    assert got["size"] == len(rs) and got["optimum"] == rs.optimum_
    assert got["cart_in_set"] == rs.contains(CARTClassifier(max_depth=2, random_state=0).fit(X, y))
    assert list(got["feature_usage"].values()) == pytest.approx(rs.feature_usage_.tolist())
    assert (est.predict(X) == rs[0].predict(X)).all()
    json.dumps(got)  # a record field


def test_varying_features_ranks_by_disagreement():
    usages = [{"a": 1.0, "b": 0.5, "c": 0.1, "d": 0.0}, {"a": 1.0, "b": 0.4, "c": 0.2, "d": 0.0}]
    assert [name for name, _ in report.varying_features(usages)] == ["b", "c"]


def test_parameters_are_checked():
    with pytest.raises(ValueError, match="alpha"):
        methods.get("rashomon").check({**methods.get("rashomon").defaults(), "alpha": 0.0})
