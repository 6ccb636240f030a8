"""Paired statistics of greedy vs optimal trees (``stats.csv`` and the report's "Greedy vs optimal").

Task-agnostic: a *score* is accuracy (classification) or R² (regression), higher is better;
"optimal" is any method of kind ``"mip"`` (OptimalTreeClassifier / OptimalTreeRegressor,
the exact engine), "greedy" any method of kind ``"greedy"``.

Two levels, each for the training and the test score separately:

* **per dataset** (× depth, × greedy method × optimal method): the runs of the two methods
  are paired by (seed, fold) — the same data, the same folds. The differences
  ``d = optimal − greedy`` give the mean paired difference, its confidence interval and
  p-value from the **corrected resampled t-test** of Nadeau & Bengio (2003):
  ``t = mean(d) / sqrt((1/n + n_test/n_train) · var(d))`` with ``n − 1`` degrees of freedom,
  where ``n`` is the number of pairs (folds × repetitions) and ``n_test/n_train`` the ratio
  of test to training rows (the correction for the overlap of training sets between folds;
  the plain paired t-test, without it, is far too liberal for cross-validation). The same
  correction is applied to training scores (their training sets overlap as much). Effect
  size: ``d_z = mean(d) / sd(d)``.
* **across datasets** (× depth, × method pair): one mean difference per dataset; the
  **Wilcoxon signed-rank test** (zero differences split between the signs, as Demšar 2006
  recommends), win / tie / loss counts of the mean differences, and the matched-pairs
  rank-biserial correlation as effect size.

p-values are Holm-corrected within each family of reported comparisons: (level, score).
A pair of runs whose optimal fit was not proven optimal is counted in ``unproven`` and the
row flagged; it is never left out silently.
"""

from __future__ import annotations

import math

import numpy as np

TIE = 1e-12  # |mean difference| at or below this is a tie (scores are fractions of rows)
ALPHA = 0.05  # significance level of the report's marks
PAIR_KEY = ["seed", "fold"]
SCORES = ("test", "train")


# ---------------------------------------------------------------------------- primitives
def corrected_t_test(diffs, n_train, n_test, confidence: float = 0.95) -> dict:
    """Nadeau & Bengio's corrected resampled t-test of paired differences ``diffs``.

    ``n_train``/``n_test``: rows used for fitting and for scoring in each resample
    (scalars or one value per difference; their mean ratio is used). With one
    difference, or no variance, the interval is the point and the p-value is 1 for a
    zero mean and 0 otherwise (every resample agrees).
    """
    from scipy import stats

    d = np.asarray(diffs, dtype=float)
    n = len(d)
    if n == 0:
        raise ValueError("no paired differences")
    mean = float(d.mean())
    ratio = float(np.mean(np.asarray(n_test, dtype=float) / np.asarray(n_train, dtype=float)))
    var = float(d.var(ddof=1)) if n > 1 else 0.0
    se = math.sqrt((1.0 / n + ratio) * var)
    out = {"n": n, "mean": mean, "sd": math.sqrt(var), "se": se, "df": n - 1, "ratio": ratio}
    if n < 2 or se <= 0.0:
        zero = abs(mean) <= TIE
        out.update(t=0.0 if zero else math.copysign(math.inf, mean), p=1.0 if zero else 0.0,
                   ci_low=mean, ci_high=mean)
        return out
    t = mean / se
    q = float(stats.t.ppf(0.5 + confidence / 2, n - 1))
    out.update(t=t, p=float(2 * stats.t.sf(abs(t), n - 1)), ci_low=mean - q * se, ci_high=mean + q * se)
    return out


def effect_size_dz(diffs) -> float:
    """Cohen's ``d_z`` of paired differences: mean / sd (0 for no difference, ±inf for a constant one)."""
    d = np.asarray(diffs, dtype=float)
    mean = float(d.mean())
    sd = float(d.std(ddof=1)) if len(d) > 1 else 0.0
    if sd <= 0.0:
        return 0.0 if abs(mean) <= TIE else math.copysign(math.inf, mean)
    return mean / sd


def wilcoxon_signed_rank(diffs) -> dict:
    """Wilcoxon signed-rank test over datasets (``zero_method="zsplit"``: zero differences
    split their ranks between the signs), with win / tie / loss counts and the
    matched-pairs rank-biserial correlation ``r = (R+ − R−) / (R+ + R−)``."""
    from scipy import stats

    d = np.asarray(diffs, dtype=float)
    d = np.where(np.abs(d) <= TIE, 0.0, d)
    wins, losses = int((d > 0).sum()), int((d < 0).sum())
    out = {"n": len(d), "wins": wins, "ties": len(d) - wins - losses, "losses": losses}
    if len(d) == 0 or not (wins or losses):
        out.update(statistic=0.0, p=1.0, rank_biserial=0.0)
        return out
    ranks = stats.rankdata(np.abs(d))
    r_plus = float(ranks[d > 0].sum() + ranks[d == 0].sum() / 2)
    r_minus = float(ranks[d < 0].sum() + ranks[d == 0].sum() / 2)
    res = stats.wilcoxon(d, zero_method="zsplit", alternative="two-sided")
    out.update(statistic=float(res.statistic), p=float(res.pvalue),
               rank_biserial=(r_plus - r_minus) / (r_plus + r_minus))
    return out


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjusted p-values (NaN stays NaN and is not counted)."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full_like(p, np.nan)
    idx = np.flatnonzero(~np.isnan(p))
    m = len(idx)
    if not m:
        return out
    order = idx[np.argsort(p[idx], kind="stable")]
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


# ---------------------------------------------------------------------------- tables
def pairs(df) -> list[tuple[str, str]]:
    """(greedy label, optimal label) for every greedy and optimal method of the same task."""
    done = df[df["status"] == "done"]
    kinds = done.drop_duplicates("method")[["method", "kind", "task"]]
    greedy = [(m, t) for m, k, t in kinds.itertuples(index=False) if k == "greedy"]
    optimal = [(m, t) for m, k, t in kinds.itertuples(index=False) if k == "mip"]
    return [(g, o) for g, tg in greedy for o, to in optimal if tg == to]


def paired_frame(df, greedy: str, optimal: str):
    """The done runs of ``greedy`` and ``optimal`` joined on dataset, depth, seed and fold."""
    pd = _pandas()
    done = df[df["status"] == "done"].copy()
    if "fold" not in done:
        done["fold"] = -1
    done["fold"] = done["fold"].fillna(-1)
    cols = ["dataset", "depth", *PAIR_KEY, "train_score", "test_score", "n_fit", "n_test", "proven_optimal",
            "certificate", "task"]
    for c in cols:
        if c not in done:
            done[c] = None
    g = done[done["method"] == greedy][cols]
    o = done[done["method"] == optimal][cols]
    merged = g.merge(o, on=["dataset", "depth", *PAIR_KEY], suffixes=("_greedy", "_optimal"))
    for c in ("train_score", "test_score", "n_fit", "n_test"):
        for side in ("_greedy", "_optimal"):
            merged[c + side] = pd.to_numeric(merged[c + side], errors="coerce")
    return merged


def per_dataset(df) -> list[dict]:
    """One row per dataset × depth × method pair × score (see the module docstring)."""
    rows = []
    for greedy, optimal in pairs(df):
        merged = paired_frame(df, greedy, optimal)
        for (dataset, depth), sub in merged.groupby(["dataset", "depth"], sort=False):
            proven = sub["proven_optimal_optimal"].map(lambda v: v is True or v == 1.0 or v == "True")
            certs = sub["certificate_optimal"].fillna("none").value_counts()
            settled = ", ".join(f"{k} {v}" for k, v in certs.items())
            for which in SCORES:
                a, b = sub[f"{which}_score_greedy"].to_numpy(float), sub[f"{which}_score_optimal"].to_numpy(float)
                keep = ~(np.isnan(a) | np.isnan(b))
                if not keep.any():
                    continue
                d = b[keep] - a[keep]
                # the same correction for training scores: their resamples overlap just as much
                n_train = sub["n_fit_optimal"].to_numpy(float)[keep]
                n_test = sub["n_test_optimal"].to_numpy(float)[keep]
                if np.isnan(n_test).any() or np.isnan(n_train).any():  # no test rows recorded: uncorrected
                    n_train, n_test = np.ones(len(d)), np.zeros(len(d))
                test = corrected_t_test(d, n_train, n_test)
                rows.append({
                    "level": "dataset", "score": which, "task": sub["task_optimal"].iloc[0],
                    "dataset": dataset, "depth": depth, "greedy": greedy, "optimal": optimal,
                    "n_pairs": test["n"], "greedy_mean": float(a[keep].mean()), "optimal_mean": float(b[keep].mean()),
                    "diff": test["mean"], "ci_low": test["ci_low"], "ci_high": test["ci_high"],
                    "t": test["t"], "df": test["df"], "p": test["p"], "effect_size": effect_size_dz(d),
                    "effect": "d_z", "correction": test["ratio"],
                    "proven": int(proven.sum()), "optimal_fits": int(len(sub)), "unproven": int((~proven).sum()),
                    "settled_by": settled,
                })
    return rows


def across_datasets(rows: list[dict]) -> list[dict]:
    """Wilcoxon signed-rank over the per-dataset mean differences, per depth × pair × score."""
    out = []
    keys = dict.fromkeys((r["depth"], r["greedy"], r["optimal"], r["score"], r["task"]) for r in rows)
    for depth, greedy, optimal, which, task in keys:
        sub = [r for r in rows if (r["depth"], r["greedy"], r["optimal"], r["score"], r["task"])
               == (depth, greedy, optimal, which, task)]
        d = [r["diff"] for r in sub]
        w = wilcoxon_signed_rank(d)
        out.append({
            "level": "across", "score": which, "task": task, "dataset": f"all ({len(sub)})", "depth": depth,
            "greedy": greedy, "optimal": optimal, "n_pairs": len(sub),
            "greedy_mean": float(np.mean([r["greedy_mean"] for r in sub])),
            "optimal_mean": float(np.mean([r["optimal_mean"] for r in sub])),
            "diff": float(np.mean(d)), "ci_low": math.nan, "ci_high": math.nan, "t": math.nan, "df": math.nan,
            "p": w["p"], "effect_size": w["rank_biserial"], "effect": "rank-biserial", "correction": math.nan,
            "wins": w["wins"], "ties": w["ties"], "losses": w["losses"],
            "proven": sum(r["proven"] for r in sub), "optimal_fits": sum(r["optimal_fits"] for r in sub),
            "unproven": sum(r["unproven"] for r in sub), "settled_by": _merge_settled(r["settled_by"] for r in sub),
        })
    return out


def _merge_settled(parts) -> str:
    counts: dict[str, int] = {}
    for part in parts:
        for item in filter(None, part.split(", ")):
            name, _, k = item.rpartition(" ")
            counts[name] = counts.get(name, 0) + int(k)
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))


def stats_table(df):
    """The per-dataset and across-dataset rows with Holm-adjusted p-values (``p_holm``) and the
    ``significant`` mark (``p_holm < ALPHA``); empty when no greedy/optimal pair ran."""
    pd = _pandas()
    rows = per_dataset(df)
    rows += across_datasets(rows)
    table = pd.DataFrame(rows, columns=COLUMNS)
    if not len(table):
        return table
    table["p_holm"] = np.nan
    for _, idx in table.groupby(["level", "score"]).groups.items():
        table.loc[idx, "p_holm"] = holm(table.loc[idx, "p"].to_numpy(float))
    table["significant"] = table["p_holm"] < ALPHA
    return table


COLUMNS = ["level", "score", "task", "dataset", "depth", "greedy", "optimal", "n_pairs", "greedy_mean",
           "optimal_mean", "diff", "ci_low", "ci_high", "t", "df", "p", "p_holm", "significant", "effect_size",
           "effect", "correction", "wins", "ties", "losses", "proven", "optimal_fits", "unproven", "settled_by"]


def _pandas():
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("statistics need pandas: pip install 'optitree[experiments]'") from None
    return pd
