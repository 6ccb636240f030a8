"""Tables and the markdown report of a results directory (``python -m experiments summarize DIR``).

Writes into DIR:

* ``runs.csv`` (and ``runs.parquet`` when pyarrow is installed): one row per record;
* ``summary.csv``: mean and standard deviation over seeds per dataset × depth × method;
* ``report.md``: the same as markdown, plus greedy-vs-optimal pivots and failed runs.

Scores are accuracy for classification and R² for regression (MSE is in the runs table).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from . import records as _records

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
        "n_leaves": m.get("n_leaves"),
        "tree_depth": m.get("depth"),
        "fit_time": m.get("fit_time"),
        "duration": rec.duration,
        "solver_status": s.get("status"),
        "proven_optimal": s.get("proven_optimal"),
        "objective": s.get("objective"),
        "bound": s.get("bound"),
        "gap": s.get("gap"),
        "nodes": s.get("nodes"),
        "solve_time": s.get("solve_time"),
        "start_accepted": s.get("start_accepted"),
        "start_objective": s.get("start_objective"),
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
    df = df.assign(_d=first, _m=mfirst).sort_values(["_d", "dataset", "depth", "_m", "method", "seed"], kind="stable")
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
    )
    return out.reset_index()


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


def markdown_report(df, agg, title: str) -> str:
    n_done = int((df["status"] == "done").sum())
    n_failed = int((df["status"] != "done").sum())
    parts = [f"# {title}", "", f"{len(df)} runs: {n_done} done, {n_failed} failed. "
             "Scores: accuracy (classification) or R² (regression); mean ± sd over seeds; "
             "optimal = runs proven optimal by the solver; time = final fit, seconds.", ""]
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
            ]
        )
    parts.append(
        markdown_table(["dataset", "depth", "method", "runs", "train", "test", "optimal", "time (s)", "gap", "leaves"], rows)
    )
    if len(agg):
        parts += ["", "## Greedy vs optimal: mean train / test score", ""]
        methods = list(dict.fromkeys(agg["method"]))
        kinds = dict(zip(agg["method"], agg["kind"]))
        header = ["dataset", "depth"] + [f"{m} ({kinds[m]})" if kinds[m] else m for m in methods]
        cells = {(r.dataset, r.depth, r.method): r for r in agg.itertuples(index=False)}
        pivot_rows = []
        for dataset, depth in dict.fromkeys(zip(agg["dataset"], agg["depth"])):
            row = [dataset, depth]
            for m in methods:
                r = cells.get((dataset, depth, m))
                row.append("" if r is None else f"{_pm(r.train_score_mean, None, 3)} / {_pm(r.test_score_mean, None, 3)}")
            pivot_rows.append(row)
        parts.append(markdown_table(header, pivot_rows))
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


def summarize(out_dir: Path) -> tuple[str, list[Path]]:
    """Write the runs table, the aggregate and the markdown report of ``out_dir``; return (markdown, files)."""
    out_dir = Path(out_dir)
    records = _records.load_run_records(out_dir)
    df = _grid_order(out_dir, runs_table(records))
    agg = aggregate(df)
    try:
        title = json.loads((out_dir / "grid.json").read_text())["name"]
    except (OSError, ValueError, KeyError):
        title = out_dir.name
    text = markdown_report(df, agg, f"Results: {title}")
    written = [out_dir / "runs.csv", out_dir / "summary.csv", out_dir / "report.md"]
    df.to_csv(written[0], index=False)
    agg.to_csv(written[1], index=False)
    written[2].write_text(text, encoding="utf-8")
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        pass
    else:
        df.to_parquet(out_dir / "runs.parquet", index=False)
        written.append(out_dir / "runs.parquet")
    return text, written
