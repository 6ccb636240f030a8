"""The HiGHS backend's presolve rule: presolve off when its predicted time would overrun the limit.

No test measures time: the rule is a function of the model size and the limit.
"""

import itertools

import pytest
from sklearn.datasets import load_wine
from support.models import multi_knapsack

from optitree import OptimalTreeClassifier
from optitree.solvers import SolveOptions, solve_highs
from optitree.solvers import _presolve as presolve_rule
from optitree.solvers.highs import (
    PRESOLVE_SHARE,
    predicted_presolve_time,
    presolve_setting,
)

# (rows, columns, non-zeros) of measured models: FlowOCT depth 2 on breast_cancer, whose presolve
# took 13.4 s, and on wine, 0.7 s
BREAST_CANCER_FLOW2 = (57_324, 99_847, 359_266)
WINE_FLOW2 = (7_363, 10_098, 42_952)


def test_predicted_presolve_time_grows_with_the_model():
    times = [predicted_presolve_time(1_000, n_cols, 10 * n_cols) for n_cols in (1_000, 10_000, 100_000)]
    assert all(0 < a < b for a, b in itertools.pairwise(times))
    # denser rows, same columns and non-zeros: more work per column
    assert predicted_presolve_time(1_000, 10_000, 100_000) > predicted_presolve_time(10_000, 10_000, 100_000)
    assert predicted_presolve_time(0, 0, 0) == 0.0


@pytest.mark.parametrize("size", [(10, 10, 100), BREAST_CANCER_FLOW2, (500_000, 1_000_000, 5_000_000)])
def test_no_time_limit_keeps_highs_default(size):
    assert presolve_setting(True, *size, None) == "choose"


@pytest.mark.parametrize("time_limit", [None, 0.01, 1000.0])
def test_presolve_not_requested_stays_off(time_limit):
    # the decomposition's contract: presolve=False is never switched on
    assert presolve_setting(False, 10, 10, 100, time_limit) == "off"


def test_rule_switches_at_the_share_of_the_limit():
    predicted = predicted_presolve_time(*BREAST_CANCER_FLOW2)
    assert presolve_setting(True, *BREAST_CANCER_FLOW2, predicted / PRESOLVE_SHARE * 1.01) == "choose"
    assert presolve_setting(True, *BREAST_CANCER_FLOW2, predicted / PRESOLVE_SHARE * 0.99) == "off"


def test_measured_cases():
    # presolve took 13.4 s: off at a 10 s limit, on at 120 s; 0.7 s: on at 10 s
    assert presolve_setting(True, *BREAST_CANCER_FLOW2, 10.0) == "off"
    assert presolve_setting(True, *BREAST_CANCER_FLOW2, 120.0) == "choose"
    assert presolve_setting(True, *WINE_FLOW2, 10.0) == "choose"


def test_small_model_keeps_presolve():
    spec, _ = multi_knapsack()
    h = spec.to_highs()
    result, _ = solve_highs(h, SolveOptions(time_limit=10.0))
    assert result.options["highs_presolve"] == "choose"
    assert h.getOptionValue("presolve")[1] == "choose"
    assert "presolve off" not in result.message
    assert result.proven_optimal


def test_presolve_off_by_request_is_recorded_without_a_note():
    spec, _ = multi_knapsack()
    result, _ = solve_highs(spec.to_highs(), SolveOptions(time_limit=10.0, presolve=False))
    assert result.options["highs_presolve"] == "off"
    assert result.options["presolve"] is False
    assert "presolve off" not in result.message


def test_large_model_for_its_limit_runs_without_presolve():
    # FlowOCT on wine, depth 2: a limit below twice its predicted presolve time switches
    # presolve off, recorded in the options and in a note
    X, y = load_wine(return_X_y=True)
    limit = 0.9 * predicted_presolve_time(*WINE_FLOW2) / PRESOLVE_SHARE
    clf = OptimalTreeClassifier(max_depth=2, acceleration="none", time_limit=limit).fit(X, y)
    r = clf.result_
    assert (r.n_rows, r.n_cols, r.n_nonzeros) == WINE_FLOW2
    assert r.options["presolve"] is True and r.options["highs_presolve"] == "off"
    assert "presolve off: predicted at" in r.message


def test_rule_reaches_highs(monkeypatch):
    # the option HiGHS runs with is the rule's choice
    spec, _ = multi_knapsack()
    h = spec.to_highs()
    monkeypatch.setattr(presolve_rule, "PRESOLVE_SHARE", 0.0)
    result, _ = solve_highs(h, SolveOptions(time_limit=10.0))
    assert h.getOptionValue("presolve")[1] == "off"
    assert result.options["highs_presolve"] == "off"
    assert result.proven_optimal
