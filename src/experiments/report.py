"""Tables and the markdown report of a results directory (``python -m experiments summarize DIR``).

Writes into DIR:

* ``runs.csv`` (and ``runs.parquet`` when pyarrow is installed): one row per record;
* ``summary.csv``: mean and standard deviation over seeds (and folds) per dataset × depth × method;
* ``stats.csv``: paired statistics (:mod:`experiments.stats`): greedy vs optimal, or the method
  pairs the config declares in ``[[compare]]`` (read back from ``grid.json``);
* ``report.md``: "Greedy vs optimal" or "Paired comparisons" (the paired statistics), then the summary as markdown,
  a pivot of mean scores, the Rashomon sets (runs of the ``rashomon`` methods: set size at the chosen epsilon,
  whether CART's tree is in the set, the features whose usage varies most) and failed runs.

Scores are accuracy for classification and R² for regression (MSE is in the runs table).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from . import config as _config
from . import records as _records
from . import stats as _stats

GROUP = ["dataset", "depth", "method"]


def _pandas():
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("summaries need pandas: pip install 'optitree[experiments]'") from None
    return pd


def runs_table(records: list[_records.RunRecord]):
    """One row per record (flat columns), ordered by dataset, depth, method, seed."""
    pd = _pandas()
    columns = list(_row(_records.RunRecord(run_id="", config={})))
    return pd.DataFrame([_row(r) for r in records], columns=columns)


def _row(rec: _records.RunRecord) -> dict:
    cfg = rec.config
    dataset, method = cfg.get("dataset") or {}, cfg.get("method") or {}
    m = rec.metrics or {}
    s = rec.solver or {}
    err = rec.error or {}
    env = rec.environment or {}
    task = rec.task
    score_key = "r2" if task == "regression" else "accuracy"
    git = env.get("git") or {}
    return {
        "run_id": rec.run_id,
        "status": rec.status,
        "dataset": cfg.get("dataset_label"),
        "method": cfg.get("method_label"),
        "depth": cfg.get("depth"),
        "seed": cfg.get("seed"),
        "fold": cfg.get("fold"),
        "kind": rec.kind,
        "task": task,
        "start": (method.get("params") or {}).get("start"),
        "train_score": m.get(f"train_{score_key}"),
        "test_score": m.get(f"test_{score_key}"),
        "train_accuracy": m.get("train_accuracy"),
        "test_accuracy": m.get("test_accuracy"),
        "train_r2": m.get("train_r2"),
        "test_r2": m.get("test_r2"),
        "train_mse": m.get("train_mse"),
        "test_mse": m.get("test_mse"),
        "n_fit": m.get("n_fit"),
        "n_test": (rec.data or {}).get("n_test"),
        "missing": (rec.data or {}).get("missing"),
        "n_missing": (rec.data or {}).get("n_missing"),
        "n_dropped": (rec.data or {}).get("n_dropped"),
        "categorical": _join((rec.data or {}).get("categorical")),
        "n_leaves": m.get("n_leaves"),
        "tree_depth": m.get("depth"),
        "fit_time": m.get("fit_time"),
        "duration": rec.duration,
        "solver_status": s.get("status"),
        "proven_optimal": s.get("proven_optimal"),
        "certificate": s.get("certificate", _certificate(s)),
        "objective": s.get("objective"),
        "bound": s.get("bound"),
        "gap": s.get("gap"),
        "nodes": s.get("nodes"),
        "solve_time": s.get("solve_time"),
        "start_accepted": s.get("start_accepted"),
        "start_objective": s.get("start_objective"),
        **_rashomon_columns(s.get("rashomon")),
        "tuned": json.dumps(rec.tuning.get("chosen"), sort_keys=True) if rec.tuning else None,
        "dataset_name": dataset.get("name"),
        "dataset_params": json.dumps(dataset.get("params"), sort_keys=True) if dataset else None,
        "method_name": method.get("name"),
        "method_params": json.dumps(method.get("params"), sort_keys=True) if method else None,
        "error_type": err.get("type"),
        "error_message": err.get("message"),
        "started": rec.started,
        "finished": rec.finished,
        "hostname": (env.get("host") or {}).get("hostname"),
        "git_commit": git.get("commit"),
    }


def _rashomon_columns(rashomon: dict | None) -> dict:
    """The runs table's columns of a Rashomon set (``solver.rashomon`` of a ``rashomon`` run; None otherwise)."""
    r = rashomon or {}
    usage = r.get("feature_usage")
    return {
        "rashomon_epsilon": r.get("epsilon"),
        "rashomon_size": r.get("size"),
        "rashomon_complete": r.get("complete"),
        "cart_in_rashomon": r.get("cart_in_set"),
        "rashomon_usage": json.dumps(usage, sort_keys=True) if usage is not None else None,
        "rashomon_curve": json.dumps(r.get("size_vs_epsilon")) if r.get("size_vs_epsilon") is not None else None,
    }


def varying_features(usages: list[dict], top: int = 3) -> list[tuple[str, float]]:
    """The ``top`` features whose usage varies most over a Rashomon set, with their mean usage share.

    A feature used by a share ``u`` of the set's trees varies by ``u (1 - u)`` (the variance of "the
    tree splits on it" over the set): largest at one half, zero for a feature every tree or no tree
    uses. ``usages`` are the runs' ``{feature: share}`` (seeds, folds), averaged first.
    """
    names = list(dict.fromkeys(name for usage in usages for name in usage))
    mean = {name: float(np.mean([usage.get(name, 0.0) for usage in usages])) for name in names}
    ranked = sorted(names, key=lambda name: (-mean[name] * (1 - mean[name]), name))
    return [(name, mean[name]) for name in ranked[:top] if 0 < mean[name] < 1]


def rashomon_markdown(df) -> str | None:
    """The report's "Rashomon sets" section, or None without a finished Rashomon run."""
    if "rashomon_size" not in df:
        return None
    done = df[(df["status"] == "done") & df["rashomon_size"].notna()]
    if not len(done):
        return None
    rows = []
    for (dataset, depth, method), g in done.groupby(["dataset", "depth", "method"], sort=False):
        sizes = [int(v) for v in g["rashomon_size"]]
        middle = sorted(sizes)[len(sizes) // 2]  # Python integers: sizes beyond int64 stay exact
        size = str(middle) if min(sizes) == max(sizes) else f"{middle} ({min(sizes)}–{max(sizes)})"
        if not g["rashomon_complete"].astype(bool).all():
            size += " (≥, stopped)"
        cart = int(g["cart_in_rashomon"].astype(bool).sum())
        usages = [json.loads(u) for u in g["rashomon_usage"] if isinstance(u, str)]
        varying = ", ".join(f"{name} ({share:.0%})" for name, share in varying_features(usages)) or "—"
        eps = sorted(set(g["rashomon_epsilon"]))
        rows.append([dataset, depth, method, ", ".join(f"{e:g}" for e in eps), len(g), size, f"{cart}/{len(g)}",
                     varying])
    table = markdown_table(["dataset", "depth", "method", "ε", "runs", "trees in the set", "CART's tree in it",
                            "features whose usage varies most (share of trees using them)"], rows)
    return "\n".join([
        "## Rashomon sets", "",
        "Every tree of the depth whose training objective (loss / normaliser + alpha per leaf) is within "
        "(1 + ε) of the optimum (docs/rashomon.md). Trees in the set: median over runs (the upper one for an even number; range); CART's tree in "
        "it: runs where greedy CART's tree of the same depth is in the set; varying features: largest u (1 − u) "
        "with u the mean share of the set's trees splitting on the feature. Set size against ε: "
        "plots/rashomon_size_vs_epsilon.png.", "", table])


def _certificate(solver: dict) -> str | None:
    """What settled an optimal fit, for records written before the protocols stored it."""
    if not solver:
        return None
    certificate = (solver.get("acceleration") or {}).get("certificate")
    if certificate:
        return certificate
    return "mip" if solver.get("proven_optimal") else "unproven"


def _grid_order(out_dir: Path, df):
    """Sort rows by the order of the last submitted grid (file order), then by label."""
    try:
        run_ids = json.loads((Path(out_dir) / "grid.json").read_text())["run_ids"]
    except (OSError, ValueError, KeyError):
        run_ids = []
    position = {rid: i for i, rid in enumerate(run_ids)}
    df = df.assign(_pos=df["run_id"].map(position).fillna(len(position)))
    first = df.groupby("dataset", sort=False)["_pos"].transform("min")
    mfirst = df.groupby("method", sort=False)["_pos"].transform("min")
    df = df.assign(_d=first, _m=mfirst).sort_values(["_d", "dataset", "depth", "_m", "method", "seed", "fold"],
                                                    kind="stable")
    return df.drop(columns=["_pos", "_d", "_m"]).reset_index(drop=True)


def aggregate(df):
    """Mean/sd over seeds of the done runs per dataset × depth × method (file order kept)."""
    pd = _pandas()
    done = df[df["status"] == "done"].copy()
    done["proven_optimal"] = done["proven_optimal"].astype("float")
    numeric = ["train_score", "test_score", "fit_time", "gap", "n_leaves", "nodes"]
    for col in numeric:
        done[col] = pd.to_numeric(done[col], errors="coerce")
    grouped = done.groupby(GROUP, sort=False)
    out = grouped.agg(
        kind=("kind", "first"),
        task=("task", "first"),
        runs=("run_id", "size"),
        **{f"{c}_mean": (c, "mean") for c in numeric},
        **{f"{c}_sd": (c, "std") for c in numeric},
        proven=("proven_optimal", "sum"),
        mip_runs=("proven_optimal", "count"),
        settled_by=("certificate", _settled),
    )
    return out.reset_index()


def _settled_total(parts) -> str:
    """Sum of ``"engine 5, mip 1"`` strings: ``"settled by engine 10, mip 1"`` (empty when none)."""
    counts: dict = {}
    for part in parts:
        for item in filter(None, str(part or "").split(", ")):
            name, _, k = item.rpartition(" ")
            if k.isdigit():
                counts[name] = counts.get(name, 0) + int(k)
    return ("settled by " + ", ".join(f"{k} {v}" for k, v in counts.items())) if counts else ""


def _settled(certificates) -> str:
    """``"engine 5"``, ``"engine 3, unproven 2"``: what settled a group's optimal fits (empty for greedy)."""
    counts = certificates.dropna().value_counts()
    return ", ".join(f"{k} {v}" for k, v in counts.items())


def _pm(mean, sd, digits: int) -> str:
    if mean is None or not np.isfinite(mean):
        return "—"
    if sd is None or not np.isfinite(sd):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {sd:.{digits}f}"


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _num(value, digits: int = 3, signed: bool = False) -> str:
    if value is None or not np.isfinite(value):
        return "—" if value is None or np.isnan(value) else ("+∞" if value > 0 else "−∞")
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _p(value) -> str:
    if value is None or not np.isfinite(value):
        return "—"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


DEFAULT_HEADING = "## Greedy vs optimal"
COMPARE_HEADING = "## Paired comparisons"


def stats_markdown(table, agg=None, compare=None) -> str:
    """The comparison section: per dataset, then across datasets, test and train scores, per method pair.

    The default table (no ``[[compare]]``) is "Greedy vs optimal"; a table of declared pairs
    (``compare``: the grid's (baseline, candidate) labels) is "Paired comparisons", with a line for
    each declared pair that has no paired runs.
    """
    if table is None or (not len(table) and not compare):
        return ""
    table, default = _stats.generic(table)
    if compare is not None:
        default = False
    if default:
        parts = [DEFAULT_HEADING, "",
                 f"Paired by seed and fold: Δ = optimal − greedy score (accuracy or R²), mean over the pairs with "
                 f"a 95 % interval and p from the corrected resampled t-test (Nadeau & Bengio); across datasets the "
                 f"Wilcoxon signed-rank test over the per-dataset means, win/tie/loss by mean Δ. p is Holm-corrected "
                 f"within each table; * marks p < {_stats.ALPHA}. Effect size: d_z = mean Δ / sd Δ per dataset, "
                 f"rank-biserial r across datasets. proven = optimal fits proven optimal; † a row with unproven "
                 f"optimal fits (their trees are the best found within the time limit, not certified). "
                 f"settled by: `engine` = the exact engine proved the tree (no MIP solved), `mip` = a MIP solve "
                 f"proved it, `unproven` = stopped by a limit.", ""]
    else:
        parts = [COMPARE_HEADING, "",
                 f"The method pairs the config declares (`[[compare]]`), paired by seed and fold: Δ = candidate − "
                 f"baseline score (accuracy or R²), mean over the pairs with a 95 % interval and p from the corrected "
                 f"resampled t-test (Nadeau & Bengio); across datasets the Wilcoxon signed-rank test over the "
                 f"per-dataset means, win/tie/loss by mean Δ (a win: the candidate scores higher). p is "
                 f"Holm-corrected within each family (per dataset or across datasets, test or training score) over "
                 f"every declared pair; * marks p < {_stats.ALPHA}. Effect size: "
                 f"d_z = mean Δ / sd Δ per dataset, rank-biserial r across datasets. proven = fits of the optimal "
                 f"(MIP or exact-engine) sides proven optimal, both sides counted when both are optimal methods "
                 f"(— when neither is); † a row with unproven fits (their trees are the best found within the time "
                 f"limit, not certified). settled by (per optimal side): `engine` = the exact engine proved the "
                 f"tree (no MIP solved), `mip` = a MIP solve proved it, `unproven` = stopped by a limit.", ""]
    order = list(dict.fromkeys(zip(table["baseline"], table["candidate"])))
    for pair in compare or ():
        if tuple(pair) not in order:
            order.append(tuple(pair))
    for baseline, candidate in order:
        pair = table[(table["baseline"] == baseline) & (table["candidate"] == candidate)]
        parts += [f"### {candidate} vs {baseline}", ""]
        if not len(pair):
            parts += [f"No paired runs: no dataset, depth, seed and fold where both {baseline!r} and "
                      f"{candidate!r} finished.", ""]
            continue
        for which, title in (("test", "test score (generalises better?)"), ("train", "training score (fits better?)")):
            rows = []
            sub = pair[(pair["level"] == "dataset") & (pair["score"] == which)]
            for r in sub.itertuples(index=False):
                rows.append([
                    r.dataset, r.depth, r.n_pairs, _num(r.baseline_mean), _num(r.candidate_mean),
                    f"{_num(r.diff, signed=True)} [{_num(r.ci_low, signed=True)}, {_num(r.ci_high, signed=True)}]",
                    _p(r.p_holm) + (" *" if r.significant else ""), _num(r.effect_size, 2),
                    _proven(r), r.settled_by if default else (r.settled_by or "—"),
                ])
            if rows:
                parts += [f"Per dataset, {title}:", "", markdown_table(
                    ["dataset", "depth", "pairs", baseline, candidate, "Δ [95 % CI]", "p (Holm)", "d_z", "proven",
                     "settled by"], rows), ""]
        rows = []
        across = pair[pair["level"] == "across"]
        for r in across.itertuples(index=False):
            rows.append([
                r.depth, r.score, r.n_pairs, _num(r.diff, signed=True),
                f"{int(r.wins)}/{int(r.ties)}/{int(r.losses)}", _p(r.p_holm) + (" *" if r.significant else ""),
                _num(r.effect_size, 2), _proven(r),
            ])
        if rows:
            parts += ["Across datasets:", "", markdown_table(
                ["depth", "score", "datasets", "mean Δ", "win/tie/loss", "Wilcoxon p (Holm)", "r", "proven"],
                rows), ""]
    note = identical_note(agg) if agg is not None else ""
    if note:
        parts += [note, ""]
    return "\n".join(parts)


def _proven(r) -> str:
    """``"8/10 †"``: fits of the optimal sides proven of those run (``—`` when neither side is optimal)."""
    if not r.mip_fits:
        return "—"
    return f"{r.proven}/{r.mip_fits}" + (" †" if r.unproven else "")


def declared_pairs(out_dir: Path) -> list[tuple[str, str]] | None:
    """The (baseline, candidate) pairs the grid of ``out_dir`` declares in ``[[compare]]`` (read from the
    config text kept in ``grid.json``), or None: the default greedy-vs-optimal pairs."""
    try:
        grid = json.loads((Path(out_dir) / "grid.json").read_text())
        data = _config.tomllib.loads(grid["config"])
        entries = _config.parse_compare(data)
    except (OSError, ValueError, KeyError, TypeError):  # no grid.json, or a config the harness refused
        return None
    return None if entries is None else [(b, c) for b, c, _ in entries]


def identical_note(agg) -> str:
    """Say where two optimal formulations are identical because the exact engine settled both."""
    if agg is None or not len(agg) or "settled_by" not in agg:
        return ""
    mip = agg[agg["kind"] == "mip"]
    cells = []
    for (dataset, depth), sub in mip.groupby(["dataset", "depth"], sort=False):
        engine_only = [m for m, s, n in zip(sub["method"], sub["settled_by"], sub["runs"]) if s == f"engine {n}"]
        if len(engine_only) > 1:
            cells.append(f"{dataset} d={depth} ({', '.join(engine_only)})")
    if not cells:
        return ""
    return ("Identical by construction: the exact engine settled every fit of these optimal methods, so no MIP "
            "formulation was solved and both return the engine's proven optimum: " + "; ".join(cells) + ".")


def section(text: str, heading: str) -> str | None:
    """The part of a markdown ``text`` under ``heading`` (a ``## `` line), up to the next ``## `` heading."""
    lines = text.splitlines()
    try:
        start = lines.index(heading)
    except ValueError:
        return None
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return "\n".join(lines[start:end]).rstrip() + "\n"


def markdown_report(df, agg, title: str, stats=None, missing: int = 0, compare=None) -> str:
    n_done = int((df["status"] == "done").sum())
    n_failed = int((df["status"] != "done").sum())
    n_folds = df["fold"].nunique() if "fold" in df and df["fold"].notna().any() else 0
    over = "seeds × folds" if n_folds else "seeds"
    not_run = f" {missing} run(s) of the grid not run yet (`run ... --resume` continues)." if missing else ""
    parts = [f"# {title}", "", f"{len(df)} runs: {n_done} done, {n_failed} failed.{not_run} "
             f"Scores: accuracy (classification) or R² (regression); mean ± sd over {over}; "
             "optimal = runs proven optimal by the solver; settled by = what proved them; time = final fit, "
             "seconds.", ""]
    section = stats_markdown(stats, agg, compare)
    if section:
        parts += [section, "## All runs", ""]
    rows = []
    for r in agg.itertuples(index=False):
        optimal = f"{int(r.proven)}/{int(r.mip_runs)}" if r.mip_runs else "—"
        rows.append(
            [
                r.dataset,
                r.depth,
                r.method,
                r.runs,
                _pm(r.train_score_mean, r.train_score_sd, 3),
                _pm(r.test_score_mean, r.test_score_sd, 3),
                optimal,
                _pm(r.fit_time_mean, r.fit_time_sd, 2),
                _pm(r.gap_mean, r.gap_sd, 3) if r.mip_runs else "—",
                _pm(r.n_leaves_mean, None, 1),
                r.settled_by or "—",
            ]
        )
    parts.append(
        markdown_table(["dataset", "depth", "method", "runs", "train", "test", "optimal", "time (s)", "gap", "leaves",
                        "settled by"], rows)
    )
    if len(agg):
        parts += ["", "## Mean train / test score by method", ""]
        methods = list(dict.fromkeys(agg["method"]))
        kinds = dict(zip(agg["method"], agg["kind"]))
        settled = {m: _settled_total(agg[agg["method"] == m]["settled_by"]) for m in methods}
        header = ["dataset", "depth"] + [f"{m} ({settled[m] or 'optimal'})" if kinds[m] == "mip"
                                         else f"{m} ({kinds[m]})" if kinds[m] else m for m in methods]
        cells = {(r.dataset, r.depth, r.method): r for r in agg.itertuples(index=False)}
        pivot_rows = []
        for dataset, depth in dict.fromkeys(zip(agg["dataset"], agg["depth"])):
            row = [dataset, depth]
            for m in methods:
                r = cells.get((dataset, depth, m))
                row.append("" if r is None else f"{_pm(r.train_score_mean, None, 3)} / {_pm(r.test_score_mean, None, 3)}")
            pivot_rows.append(row)
        parts.append(markdown_table(header, pivot_rows))
    rashomon = rashomon_markdown(df)
    if rashomon:
        parts += ["", rashomon]
    failed = df[df["status"] != "done"]
    if len(failed):
        parts += ["", "## Failed runs (retried by --resume)", ""]
        parts.append(
            markdown_table(
                ["dataset", "depth", "method", "seed", "error"],
                [
                    [f.dataset, f.depth, f.method, f.seed, f"{f.error_type}: {str(f.error_message).splitlines()[0][:120]}"]
                    for f in failed.itertuples(index=False)
                ],
            )
        )
    return "\n".join(parts) + "\n"


def _join(names) -> str | None:
    """A list of column names as one runs.csv cell (``a;b``), None for an old record without it."""
    return None if names is None else ";".join(map(str, names))


def summarize(out_dir: Path, strict: bool = False) -> tuple[str, list[Path]]:
    """Write the runs table, the aggregate and the markdown report of ``out_dir``; return (markdown, files).

    A malformed or damaged record is named in a warning and left out
    (:func:`experiments.records.load_run_records`); with ``strict`` it raises
    :class:`~experiments.records.MalformedRecord` before anything is written.
    """
    out_dir = Path(out_dir)
    records = _records.load_run_records(out_dir, strict=strict)
    df = _grid_order(out_dir, runs_table(records))
    agg = aggregate(df)
    try:
        grid = json.loads((out_dir / "grid.json").read_text())
        title = grid["name"]
    except (OSError, ValueError, KeyError, TypeError):
        grid, title = {}, out_dir.name
    missing = len(set(grid.get("run_ids") or []) - set(df["run_id"])) if isinstance(grid, dict) else 0
    compare = declared_pairs(out_dir)
    stats = _stats.stats_table(df, compare)
    text = markdown_report(df, agg, f"Results: {title}", stats, missing=missing, compare=compare)
    written = [out_dir / "runs.csv", out_dir / "summary.csv", out_dir / "stats.csv", out_dir / "report.md"]
    df.to_csv(written[0], index=False)
    agg.to_csv(written[1], index=False)
    stats.to_csv(written[2], index=False)
    written[3].write_text(text, encoding="utf-8")
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        pass
    else:
        df.to_parquet(out_dir / "runs.parquet", index=False)
        written.append(out_dir / "runs.parquet")
    return text, written
