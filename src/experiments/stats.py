"""Paired statistics of two tree learners (``stats.csv`` and the report's comparison section).

Task-agnostic: a *score* is accuracy (classification) or R² (regression), higher is better.
Which methods are compared: the pairs a grid declares in ``[[compare]]`` (``baseline`` and
``candidate`` method labels: oblique vs axis-aligned optimum, linear-leaf vs constant-leaf
trees, ...); without it, the default **greedy vs optimal**: every method of kind ``"greedy"``
(the baseline) against every method of kind ``"mip"`` (OptimalTreeClassifier /
OptimalTreeRegressor, the exact engine) of the same task. The default table keeps its column
names (``greedy``, ``optimal``, ``greedy_mean``, ``optimal_mean``, ``optimal_fits``); a declared
one says ``baseline``, ``candidate``, ``baseline_mean``, ``candidate_mean``, ``mip_fits``.

Two levels, each for the training and the test score separately:

* **per dataset** (× depth, × method pair): the runs of the two methods
  are paired by (seed, fold) — the same data, the same folds. The differences
  ``d = candidate − baseline`` (optimal − greedy by default) give the mean paired difference,
  its confidence interval and p-value from the **corrected resampled t-test** of Nadeau & Bengio (2003):
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

p-values are Holm-corrected within each family of reported comparisons: (level, score), over
every pair of the table. Every fit of a side of kind ``"mip"`` is counted (both sides when both
are optimal methods): ``proven`` of ``optimal_fits`` / ``mip_fits``, and a fit not proven
optimal in ``unproven``, the row flagged; it is never left out silently.
"""

from __future__ import annotations

import math

import numpy as np

TIE = 1e-12  # |mean difference| at or below this is a tie (scores are fractions of rows)
ALPHA = 0.05  # significance level of the report's marks
PAIR_KEY = ["seed", "fold"]
SCORES = ("test", "train")


# ---------------------------------------------------------------------------- primitives
def _differences(diffs, what: str = "paired differences") -> np.ndarray:
    """``diffs`` as a non-empty 1-d float array of finite values; a ValueError saying what is wrong."""
    d = np.asarray(diffs, dtype=float)
    if d.ndim != 1:
        raise ValueError(f"{what}: expected a 1-d list of numbers, got shape {d.shape}")
    if not len(d):
        raise ValueError(f"{what}: none given (at least one pair is needed)")
    if not np.isfinite(d).all():
        raise ValueError(f"{what}: every value must be finite, got {d[~np.isfinite(d)].tolist()}")
    return d


def _row_counts(values, n: int, what: str, positive: bool) -> np.ndarray:
    """Row counts (a scalar or one per difference): finite and > 0 (``positive``) or >= 0."""
    v = np.asarray(values, dtype=float)
    if v.ndim > 1 or (v.ndim == 1 and len(v) != n):
        raise ValueError(f"{what}: expected one number or one per difference ({n}), got shape {v.shape}")
    ok = np.isfinite(v) & ((v > 0) if positive else (v >= 0))
    if not ok.all():
        raise ValueError(f"{what} must be finite and {'> 0' if positive else '>= 0'}, got {v[~ok].tolist() if v.ndim else v.item()}")
    return v


def corrected_t_test(diffs, n_train, n_test, confidence: float = 0.95) -> dict:
    """Nadeau & Bengio's corrected resampled t-test of paired differences ``diffs``.

    ``n_train``/``n_test``: rows used for fitting and for scoring in each resample
    (scalars or one value per difference; their mean ratio is used). With one
    difference, or no variance, the interval is the point and the p-value is 1 for a
    zero mean and 0 otherwise (every resample agrees).

    Raises
    ------
    ValueError
        No difference, a non-finite one, ``n_train`` not > 0, ``n_test`` not >= 0, sizes of
        another length than ``diffs``, or ``confidence`` outside (0, 1).
    """
    from scipy import stats

    d = _differences(diffs)
    n = len(d)
    n_train = _row_counts(n_train, n, "n_train", positive=True)
    n_test = _row_counts(n_test, n, "n_test", positive=False)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    mean = float(d.mean())
    ratio = float(np.mean(n_test / n_train))
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
    """Cohen's ``d_z`` of paired differences: mean / sd (0 for no difference, ±inf for a constant one).

    Raises
    ------
    ValueError
        No difference, or a non-finite one.
    """
    d = _differences(diffs)
    mean = float(d.mean())
    sd = float(d.std(ddof=1)) if len(d) > 1 else 0.0
    if sd <= 0.0:
        return 0.0 if abs(mean) <= TIE else math.copysign(math.inf, mean)
    return mean / sd


def wilcoxon_signed_rank(diffs) -> dict:
    """Wilcoxon signed-rank test over datasets (``zero_method="zsplit"``: zero differences
    split their ranks between the signs), with win / tie / loss counts and the
    matched-pairs rank-biserial correlation ``r = (R+ − R−) / (R+ + R−)``.

    Raises
    ------
    ValueError
        No pair, or a non-finite difference.
    """
    from scipy import stats

    d = _differences(diffs, "Wilcoxon signed-rank test: differences")
    d = np.where(np.abs(d) <= TIE, 0.0, d)
    wins, losses = int((d > 0).sum()), int((d < 0).sum())
    out = {"n": len(d), "wins": wins, "ties": len(d) - wins - losses, "losses": losses}
    if not (wins or losses):
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
    """Holm's step-down adjusted p-values (NaN stays NaN and is not counted).

    Raises
    ------
    ValueError
        A p-value outside [0, 1] (NaN aside), or not a 1-d list.
    """
    p = np.asarray(pvalues, dtype=float)
    if p.ndim != 1:
        raise ValueError(f"Holm: expected a 1-d list of p-values, got shape {p.shape}")
    bad = ~np.isnan(p) & ~((p >= 0.0) & (p <= 1.0))
    if bad.any():
        raise ValueError(f"Holm: p-values must be in [0, 1], got {p[bad].tolist()}")
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
def pairs(df, compare=None) -> list[tuple[str, str]]:
    """The (baseline, candidate) method labels to compare.

    ``compare``: the pairs a grid declares (``[[compare]]``), returned as given. Without it, the
    default: (greedy label, optimal label) for every greedy and optimal method of the same task.
    """
    if compare is not None:
        return [(str(b), str(c)) for b, c in compare]
    done = df[df["status"] == "done"]
    kinds = done.drop_duplicates("method")[["method", "kind", "task"]]
    greedy = [(m, t) for m, k, t in kinds.itertuples(index=False) if k == "greedy"]
    optimal = [(m, t) for m, k, t in kinds.itertuples(index=False) if k == "mip"]
    return [(g, o) for g, tg in greedy for o, to in optimal if tg == to]


SIDES = ("_baseline", "_candidate")


def paired_frame(df, baseline: str, candidate: str):
    """The done runs of ``baseline`` and ``candidate`` joined on dataset, depth, seed and fold
    (columns suffixed ``_baseline`` and ``_candidate``)."""
    pd = _pandas()
    done = df[df["status"] == "done"].copy()
    if "fold" not in done:
        done["fold"] = -1
    done["fold"] = done["fold"].fillna(-1)
    cols = ["dataset", "depth", *PAIR_KEY, "train_score", "test_score", "n_fit", "n_test", "proven_optimal",
            "certificate", "task", "kind"]
    for c in cols:
        if c not in done:
            done[c] = None
    b = done[done["method"] == baseline][cols]
    c = done[done["method"] == candidate][cols]
    merged = b.merge(c, on=["dataset", "depth", *PAIR_KEY], suffixes=SIDES)
    for col in ("train_score", "test_score", "n_fit", "n_test"):
        for side in SIDES:
            merged[col + side] = pd.to_numeric(merged[col + side], errors="coerce")
    return merged


def _is_proven(v) -> bool:
    return v is True or v == 1.0 or v == "True"


def per_dataset(df, compare=None) -> list[dict]:
    """One row per dataset × depth × method pair × score (see the module docstring), in the generic
    columns (``baseline``, ``candidate``, ``baseline_mean``, ``candidate_mean``, ``mip_fits``)."""
    rows = []
    for baseline, candidate in pairs(df, compare):
        merged = paired_frame(df, baseline, candidate)
        for (dataset, depth), sub in merged.groupby(["dataset", "depth"], sort=False):
            # every fit of a side of kind "mip" counts: proven optimal or not (a greedy side has no proof)
            proven = mip_fits = 0
            settled = {}
            for label, side in ((candidate, "_candidate"), (baseline, "_baseline")):
                mip = sub[sub["kind" + side] == "mip"]
                if not len(mip):
                    continue
                proven += int(mip["proven_optimal" + side].map(_is_proven).sum())
                mip_fits += len(mip)
                certs = mip["certificate" + side].fillna("none").value_counts()
                settled[label] = ", ".join(f"{k} {v}" for k, v in certs.items())
            for which in SCORES:
                a = sub[f"{which}_score_baseline"].to_numpy(float)
                b = sub[f"{which}_score_candidate"].to_numpy(float)
                keep = ~(np.isnan(a) | np.isnan(b))
                if not keep.any():
                    continue
                d = b[keep] - a[keep]
                # the same correction for training scores: their resamples overlap just as much
                n_train = sub["n_fit_candidate"].to_numpy(float)[keep]
                n_test = sub["n_test_candidate"].to_numpy(float)[keep]
                if np.isnan(n_test).any() or np.isnan(n_train).any():  # no test rows recorded: uncorrected
                    n_train, n_test = np.ones(len(d)), np.zeros(len(d))
                test = corrected_t_test(d, n_train, n_test)
                rows.append({
                    "level": "dataset", "score": which, "task": sub["task_candidate"].iloc[0],
                    "dataset": dataset, "depth": depth, "baseline": baseline, "candidate": candidate,
                    "n_pairs": test["n"], "baseline_mean": float(a[keep].mean()),
                    "candidate_mean": float(b[keep].mean()),
                    "diff": test["mean"], "ci_low": test["ci_low"], "ci_high": test["ci_high"],
                    "t": test["t"], "df": test["df"], "p": test["p"], "effect_size": effect_size_dz(d),
                    "effect": "d_z", "correction": test["ratio"],
                    "proven": proven, "mip_fits": mip_fits, "unproven": mip_fits - proven, "_settled": settled,
                })
    return rows


def across_datasets(rows: list[dict]) -> list[dict]:
    """Wilcoxon signed-rank over the per-dataset mean differences, per depth × pair × score."""
    out = []
    key = ("depth", "baseline", "candidate", "score", "task")
    for depth, baseline, candidate, which, task in dict.fromkeys(tuple(r[k] for k in key) for r in rows):
        sub = [r for r in rows if tuple(r[k] for k in key) == (depth, baseline, candidate, which, task)]
        d = [r["diff"] for r in sub]
        w = wilcoxon_signed_rank(d)
        labels = dict.fromkeys(label for r in sub for label in r["_settled"])
        out.append({
            "level": "across", "score": which, "task": task, "dataset": f"all ({len(sub)})", "depth": depth,
            "baseline": baseline, "candidate": candidate, "n_pairs": len(sub),
            "baseline_mean": float(np.mean([r["baseline_mean"] for r in sub])),
            "candidate_mean": float(np.mean([r["candidate_mean"] for r in sub])),
            "diff": float(np.mean(d)), "ci_low": math.nan, "ci_high": math.nan, "t": math.nan, "df": math.nan,
            "p": w["p"], "effect_size": w["rank_biserial"], "effect": "rank-biserial", "correction": math.nan,
            "wins": w["wins"], "ties": w["ties"], "losses": w["losses"],
            "proven": sum(r["proven"] for r in sub), "mip_fits": sum(r["mip_fits"] for r in sub),
            "unproven": sum(r["unproven"] for r in sub),
            "_settled": {label: _merge_settled(r["_settled"].get(label, "") for r in sub) for label in labels},
        })
    return out


def _merge_settled(parts) -> str:
    counts: dict[str, int] = {}
    for part in parts:
        for item in filter(None, part.split(", ")):
            name, _, k = item.rpartition(" ")
            counts[name] = counts.get(name, 0) + int(k)
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))


def _settled_text(settled: dict) -> str:
    """``"engine 5, mip 1"`` for one optimal side; ``"oct-h: mip 3, unproven 7; optimal: engine 10"`` for two."""
    if len(settled) == 1:
        return next(iter(settled.values()))
    return "; ".join(f"{label}: {text}" for label, text in settled.items())


def stats_table(df, compare=None):
    """The per-dataset and across-dataset rows with Holm-adjusted p-values (``p_holm``) and the
    ``significant`` mark (``p_holm < ALPHA``); empty when no pair ran.

    ``compare``: the grid's declared (baseline, candidate) pairs, or None for the default (every
    greedy method against every optimal one). The default table keeps its columns (``greedy``,
    ``optimal``, ``greedy_mean``, ``optimal_mean``, ``optimal_fits``: :data:`COLUMNS`); a declared
    one names the sides ``baseline`` and ``candidate`` (:data:`COMPARE_COLUMNS`).
    """
    pd = _pandas()
    rows = per_dataset(df, compare)
    rows += across_datasets(rows)
    for r in rows:
        r["settled_by"] = _settled_text(r.pop("_settled"))
    table = pd.DataFrame(rows, columns=COMPARE_COLUMNS)
    if len(table):
        table["p_holm"] = np.nan
        for _, idx in table.groupby(["level", "score"]).groups.items():
            table.loc[idx, "p_holm"] = holm(table.loc[idx, "p"].to_numpy(float))
        table["significant"] = table["p_holm"] < ALPHA
    if compare is None:
        table = table.rename(columns=LEGACY)
    return table


def generic(table):
    """A stats table in the generic columns (the default table's ``greedy``/``optimal`` renamed
    ``baseline``/``candidate``), and whether it was the default greedy-vs-optimal table."""
    default = "greedy" in table.columns
    return (table.rename(columns={v: k for k, v in LEGACY.items()}) if default else table), default


COMPARE_COLUMNS = ["level", "score", "task", "dataset", "depth", "baseline", "candidate", "n_pairs", "baseline_mean",
                   "candidate_mean", "diff", "ci_low", "ci_high", "t", "df", "p", "p_holm", "significant",
                   "effect_size", "effect", "correction", "wins", "ties", "losses", "proven", "mip_fits", "unproven",
                   "settled_by"]
LEGACY = {"baseline": "greedy", "candidate": "optimal", "baseline_mean": "greedy_mean",
          "candidate_mean": "optimal_mean", "mip_fits": "optimal_fits"}
COLUMNS = [LEGACY.get(c, c) for c in COMPARE_COLUMNS]


def _pandas():
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("statistics need pandas: pip install 'optitree[experiments]'") from None
    return pd
