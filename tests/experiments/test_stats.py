"""Paired greedy-vs-optimal statistics, checked against answers computed by hand here.

The primitives are checked against closed forms (Student's t with 4 degrees of freedom,
exact Wilcoxon null distributions, Holm by hand); the tables against synthetic fold scores
whose paired differences are known, in shuffled row order, so a pairing by position
instead of by (seed, fold) fails.
"""

import itertools
import math

import numpy as np
import pytest

from experiments import stats

pd = pytest.importorskip("pandas")


def t4_two_sided(t):
    """Two-sided p of Student's t with 4 degrees of freedom (closed form)."""
    x = abs(t) / math.sqrt(t * t + 4)
    return 1 - x * (3 - x * x) / 2


# ---------------------------------------------------------------------------- primitives
def test_corrected_t_test_by_hand():
    d = [0.1, 0.2, 0.3, 0.4, 0.5]  # mean 0.3, sample variance 0.025
    out = stats.corrected_t_test(d, n_train=80, n_test=20)  # ratio 1/4
    se = math.sqrt((1 / 5 + 1 / 4) * 0.025)
    assert out["mean"] == pytest.approx(0.3)
    assert out["se"] == pytest.approx(se)
    assert out["t"] == pytest.approx(0.3 / se)  # = 2 sqrt(2)
    assert out["df"] == 4
    assert out["p"] == pytest.approx(t4_two_sided(0.3 / se))
    q = 2.7764451051977987  # t_{0.975, 4}
    assert (out["ci_low"], out["ci_high"]) == pytest.approx((0.3 - q * se, 0.3 + q * se))


def test_correction_inflates_the_variance_of_the_plain_paired_test():
    from scipy import stats as sps

    rng = np.random.RandomState(0)
    greedy = rng.rand(10)
    optimal = greedy + rng.normal(0.02, 0.03, 10)
    plain = stats.corrected_t_test(optimal - greedy, n_train=1, n_test=0)  # no correction
    assert plain["t"] == pytest.approx(sps.ttest_rel(optimal, greedy).statistic)
    assert plain["p"] == pytest.approx(sps.ttest_rel(optimal, greedy).pvalue)
    corrected = stats.corrected_t_test(optimal - greedy, n_train=90, n_test=10)
    # t shrinks by sqrt((1/n) / (1/n + n_test/n_train)) = sqrt(0.1 / 0.2111...)
    assert corrected["t"] == pytest.approx(plain["t"] * math.sqrt(0.1 / (0.1 + 10 / 90)))
    assert corrected["p"] > plain["p"]


def test_identical_sides_give_zero_and_no_significance():
    out = stats.corrected_t_test([0.0] * 5, n_train=80, n_test=20)
    assert out["mean"] == 0 and out["p"] == 1.0 and out["ci_low"] == out["ci_high"] == 0
    assert stats.effect_size_dz([0.0] * 5) == 0.0
    w = stats.wilcoxon_signed_rank([0.0] * 7)
    assert (w["wins"], w["ties"], w["losses"], w["p"], w["rank_biserial"]) == (0, 7, 0, 1.0, 0.0)


def test_a_constant_nonzero_difference_is_certain():
    out = stats.corrected_t_test([0.25] * 5, n_train=80, n_test=20)
    assert out["mean"] == 0.25 and out["p"] == 0.0 and out["t"] == math.inf
    assert stats.effect_size_dz([0.25] * 5) == math.inf


def test_holm_by_hand():
    p = [0.01, 0.04, 0.03, 0.005, np.nan]
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> monotone 0.06
    assert np.allclose(stats.holm(p)[:4], [0.03, 0.06, 0.06, 0.02])
    assert np.isnan(stats.holm(p)[4])
    assert np.allclose(stats.holm([0.5, 0.9]), [1.0, 1.0])  # capped at 1


def test_wilcoxon_exact_null_and_rank_biserial_by_hand():
    w = stats.wilcoxon_signed_rank([0.01, 0.02, 0.03, 0.04, 0.05, 0.06])
    assert w["p"] == pytest.approx(2 / 2**6)  # every sign positive: 1 of 64 sign patterns, two-sided
    assert (w["wins"], w["ties"], w["losses"], w["rank_biserial"]) == (6, 0, 0, 1.0)
    # ranks of |d|: 0 -> 1, 0.05 -> 2, 0.1 -> 3, 0.2 -> 4, 0.3 -> 5; the zero's rank split between the signs
    w = stats.wilcoxon_signed_rank([0.1, 0.2, 0.0, -0.05, 0.3])
    assert (w["wins"], w["ties"], w["losses"]) == (3, 1, 1)
    assert w["statistic"] == pytest.approx(2.5)
    assert w["rank_biserial"] == pytest.approx((12.5 - 2.5) / 15)
    assert stats.wilcoxon_signed_rank([1, 2, -3])["rank_biserial"] == pytest.approx(0.0)


# ---------------------------------------------------------------------------- tables
def synthetic_runs(shifts: dict, seeds=(0, 1), folds=5, n=100, unproven=(), seed=0):
    """Runs of "cart" and "opt" per dataset; opt's test score = cart's + shifts[dataset][k] for pair k,
    its training score = cart's + 0.01; rows shuffled."""
    rng = np.random.RandomState(seed)
    rows = []
    for dataset, shift in shifts.items():
        for k, (s, f) in enumerate(itertools.product(seeds, range(folds))):
            base = rng.uniform(0.5, 0.8)
            train = rng.uniform(0.8, 0.9)
            common = {"dataset": dataset, "depth": 2, "seed": s, "fold": f, "status": "done",
                      "task": "classification", "n_fit": n - n // folds, "n_test": n // folds}
            rows.append({**common, "method": "cart", "kind": "greedy", "test_score": base, "train_score": train,
                         "proven_optimal": None, "certificate": None})
            proven = (dataset, s, f) not in unproven
            rows.append({**common, "method": "opt", "kind": "mip", "test_score": base + shift[k],
                         "train_score": train + 0.01, "proven_optimal": proven,
                         "certificate": "engine" if proven else "unproven"})
    df = pd.DataFrame(rows)
    return df.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def test_per_dataset_rows_pair_by_seed_and_fold():
    shift = [0.01 * k for k in range(10)]  # mean 0.045, pairs (seed, fold) in product order
    table = stats.stats_table(synthetic_runs({"a": shift}))
    row = table[(table["level"] == "dataset") & (table["score"] == "test")].iloc[0]
    assert (row["greedy"], row["optimal"], row["n_pairs"]) == ("cart", "opt", 10)
    expected = stats.corrected_t_test(shift, 80, 20)
    assert row["diff"] == pytest.approx(0.045)
    assert row["p"] == pytest.approx(expected["p"])
    assert row["correction"] == pytest.approx(0.25)
    assert row["effect_size"] == pytest.approx(0.045 / np.std(shift, ddof=1))
    train = table[(table["level"] == "dataset") & (table["score"] == "train")].iloc[0]
    assert train["diff"] == pytest.approx(0.01) and train["p"] == 0.0  # a constant difference


def test_a_missing_fold_drops_only_its_pair():
    df = synthetic_runs({"a": [0.1] * 10})
    drop = df.index[(df["method"] == "cart") & (df["seed"] == 1) & (df["fold"] == 3)]
    table = stats.stats_table(df.drop(drop))
    row = table[(table["level"] == "dataset") & (table["score"] == "test")].iloc[0]
    assert row["n_pairs"] == 9 and row["optimal_fits"] == 9


def test_identical_dataset_has_zero_difference_and_no_significance():
    table = stats.stats_table(synthetic_runs({"same": [0.0] * 10, "better": [0.2, 0.3] * 5}))
    rows = table[(table["level"] == "dataset") & (table["score"] == "test")].set_index("dataset")
    assert rows.loc["same", "diff"] == 0 and rows.loc["same", "p"] == 1.0 and not rows.loc["same", "significant"]
    assert rows.loc["better", "significant"]


def test_across_datasets_and_holm_families():
    shifts = {f"d{i}": [m + 0.02 * (k % 2) for k in range(10)] for i, m in enumerate([0.1, 0.2, -0.05, 0.0, 0.3])}
    table = stats.stats_table(synthetic_runs(shifts))
    per = table[(table["level"] == "dataset") & (table["score"] == "test")].set_index("dataset")
    means = {d: np.mean(s) for d, s in shifts.items()}
    assert per["diff"].to_dict() == pytest.approx(means)
    across = table[(table["level"] == "across") & (table["score"] == "test")].iloc[0]
    assert across["diff"] == pytest.approx(np.mean(list(means.values())))
    assert (across["wins"], across["ties"], across["losses"]) == (4, 0, 1)
    # ranks of the means |0.11, 0.21, -0.04, 0.01, 0.31|: 3, 4, 2, 1, 5 -> R+ = 13, R- = 2
    assert across["effect_size"] == pytest.approx((13 - 2) / 15)
    # Holm within (level, score): the per-dataset test p-values are one family of five
    assert np.allclose(per["p_holm"], stats.holm(per["p"].to_numpy()))
    assert per["p_holm"].min() == pytest.approx(min(1.0, 5 * per["p"].min()))
    # the single across-datasets test row is its own family
    assert across["p_holm"] == pytest.approx(across["p"])


def test_unproven_optimal_fits_are_counted_and_flagged():
    df = synthetic_runs({"a": [0.1] * 10}, unproven={("a", 0, 2), ("a", 1, 4)})
    table = stats.stats_table(df)
    row = table[(table["level"] == "dataset") & (table["score"] == "test")].iloc[0]
    assert (row["proven"], row["unproven"], row["optimal_fits"]) == (8, 2, 10)
    assert "unproven 2" in row["settled_by"] and "engine 8" in row["settled_by"]


def test_regression_scores_pair_the_same_way():
    df = synthetic_runs({"r": [0.05] * 4 + [0.07] * 6})
    df["task"] = "regression"
    row = stats.stats_table(df).query("level == 'dataset' and score == 'test'").iloc[0]
    assert row["task"] == "regression" and row["diff"] == pytest.approx(0.062)


def test_no_optimal_method_gives_an_empty_table():
    df = synthetic_runs({"a": [0.0] * 10})
    assert len(stats.stats_table(df[df["method"] == "cart"])) == 0
