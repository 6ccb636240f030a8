"""The trivial-fit benchmark: its table, and the baseline worker's fit request."""

import sys

import pytest

from optitree import OptimalTreeClassifier

from benchmarks import fit_overhead
from benchmarks._baseline import Baseline


def test_the_table_has_a_row_per_set_with_every_fit(capsys):
    fit_overhead.main(["--repeats", "1"])
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ")][1:]  # the header first
    assert [row.split("|")[1].strip() for row in rows] == ["iris", "wine", "monks1"]
    assert all(len(row.split("|")) == 9 for row in rows)  # set, n×p, three fits, two ratios


@pytest.mark.slow  # a second interpreter's import
def test_the_baseline_worker_fits_the_same_proven_tree():
    X, y = fit_overhead.trivial_sets()["iris"]
    base = Baseline(sys.executable)
    try:
        answer = base.fit(X, y, 2, max_depth=3)
    finally:
        base.close()
    here = OptimalTreeClassifier(max_depth=3).fit(X, y).result_
    assert answer["status"] == "optimal" and answer["objective"] == here.objective
    assert 0 < answer["time"] <= answer["median"]
