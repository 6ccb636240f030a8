"""Figures of a results directory (``python -m experiments plot DIR``), written as PNGs.

* ``forest.png`` — per-dataset paired differences optimal − greedy (or candidate − baseline for the pairs a
  config declares in ``[[compare]]``), test and training score, with their 95 % intervals from the corrected
  resampled t-test, one panel per depth (:mod:`experiments.stats`);
* ``accuracy_vs_depth.png`` — train (dashed) and test (solid) score vs depth per dataset, one line per method,
  mean ± sd over seeds and folds with every fold's score as a faint dot;
* ``optimality.png`` — proven-optimal fraction and fit time vs depth (MIP methods; time for all methods);
* ``progress_<dataset>.png`` — incumbent and bound over time (``optitree`` ``plot_progress``), one panel per
  MIP method variant (cold / CART start side by side) and depth, first seed;
* ``gap_over_time.png`` — relative gap over time from the traces, cold vs CART start overlaid;
* ``regions_<dataset>.png`` — for 2-feature datasets (XOR): decision regions of every method side by side,
  rebuilt from the stored trees (``greedy.Tree.from_dict``) over the run's training data;
* ``rashomon_size_vs_epsilon.png`` — runs of the ``rashomon`` methods: the number of trees in the Rashomon set
  against epsilon (log scale), one panel per dataset, one line per depth and method (median over runs).
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import numpy as np

from . import config as _config
from . import datasets as _datasets
from . import protocols as _protocols
from . import records as _records
from . import report as _report
from . import stats as _stats


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("plots need matplotlib: pip install 'optitree[experiments]'") from None
    return plt


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")


def plot_all(out_dir: Path, plots_dir: Path | None = None) -> list[Path]:
    """Write every figure that the records of ``out_dir`` support; return the paths written."""
    out_dir = Path(out_dir)
    plots_dir = Path(plots_dir) if plots_dir is not None else out_dir / "plots"
    plots_dir.mkdir(parents=True, exist_ok=True)
    recs = [r for r in _records.load_run_records(out_dir) if r.status == "done"]
    if not recs:
        raise ValueError(f"{out_dir} holds no finished runs to plot")
    df = _report._grid_order(out_dir, _report.runs_table(recs))
    by_id = {r.run_id: r for r in recs}
    plt = _pyplot()
    written = []
    compare = _report.declared_pairs(out_dir)
    for name, draw in (("forest.png", lambda df, plt: _forest(df, plt, compare)), ("accuracy_vs_depth.png", _accuracy_vs_depth),
                       ("optimality.png", _optimality), ("rashomon_size_vs_epsilon.png", _rashomon_sizes),
                       ("gap_over_time.png", lambda df, plt: _gap_over_time(df, by_id, plt))):
        fig = draw(df, plt)
        if fig is not None:
            written.append(_save(fig, plots_dir / name, plt))
    for dataset in dict.fromkeys(df["dataset"]):
        sub = df[df["dataset"] == dataset]
        fig = _progress(sub, by_id, plt)
        if fig is not None:
            written.append(_save(fig, plots_dir / f"progress_{_slug(dataset)}.png", plt))
        fig = _regions(sub, by_id, plt)
        if fig is not None:
            written.append(_save(fig, plots_dir / f"regions_{_slug(dataset)}.png", plt))
    return written


def _save(fig, path: Path, plt) -> Path:
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _grid(plt, n: int, width: float = 4.2, height: float = 3.2):
    """A figure with ``n`` panels, at most 4 per row."""
    ncols = min(n, 4)
    nrows = int(np.ceil(n / ncols))
    return plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False, layout="constrained")


def _method_colors(methods: list[str]) -> dict:
    import matplotlib

    cmap = matplotlib.colormaps["tab10"]
    return {m: cmap(i % 10) for i, m in enumerate(methods)}


def _forest(df, plt, compare=None):
    """Per-dataset mean paired difference with its 95 % interval; rows datasets, panels (pair × score, depth).

    ``compare``: the config's declared (baseline, candidate) pairs; None for greedy vs optimal."""
    from matplotlib.lines import Line2D

    table = _stats.stats_table(df, compare)
    if not len(table):
        return None
    table, default = _stats.generic(table)
    per = table[table["level"] == "dataset"]
    pairs = list(dict.fromkeys(zip(per["baseline"], per["candidate"])))
    depths = sorted(per["depth"].unique())
    scores = [s for s in _stats.SCORES if (per["score"] == s).any()]
    datasets = list(dict.fromkeys(per["dataset"]))
    n_rows = len(pairs) * len(scores)
    width = max(3.4 * len(depths) + 1.2, 7.5)  # the title and legend fit at a single depth
    fig, axes = plt.subplots(n_rows, len(depths), figsize=(width, 0.32 * len(datasets) * n_rows + 1.6),
                             squeeze=False, sharey=True, layout="constrained")
    colors = {True: "tab:blue", False: "tab:gray"}
    for i, ((baseline, candidate), which) in enumerate(itertools.product(pairs, scores)):
        for j, depth in enumerate(depths):
            ax = axes[i, j]
            sub = per[(per["baseline"] == baseline) & (per["candidate"] == candidate) & (per["score"] == which)
                      & (per["depth"] == depth)].set_index("dataset")
            for y, dataset in enumerate(datasets):
                if dataset not in sub.index:
                    continue
                r = sub.loc[dataset]
                low, high = r["ci_low"], r["ci_high"]
                color = colors[bool(r["significant"])]
                ax.plot([low, high], [y, y], color=color, lw=1.5)
                ax.plot([r["diff"]], [y], marker="o", ms=5, color=color,
                        markerfacecolor=color if r["significant"] else "white")
                if r["unproven"]:
                    ax.plot([high], [y], marker="$†$", ms=8, color="tab:red", linestyle="none")
            ax.axvline(0.0, color="black", lw=0.8)
            ax.set_yticks(range(len(datasets)))
            ax.set_yticklabels(datasets, fontsize=8)
            ax.set_ylim(len(datasets) - 0.5, -0.5)
            ax.set_title(f"{which} score, depth {depth}", fontsize=9)
            ax.set_xlabel(f"{candidate} − {baseline}", fontsize=8)
            ax.tick_params(axis="x", labelsize=8)
            ax.xaxis.set_major_locator(_max_ticks(4))
            ax.grid(True, axis="x", alpha=0.3)
    handles = [Line2D([], [], color="tab:blue", marker="o", label="significant (Holm p < 0.05)"),
               Line2D([], [], color="tab:gray", marker="o", markerfacecolor="white", label="not significant"),
               Line2D([], [], color="tab:red", marker="$†$", linestyle="none",
                      label="unproven optimal fits" if default else "unproven fits (either side)")]
    fig.legend(handles=handles, loc="outside lower center", ncol=3, fontsize=8)
    fig.suptitle(("Optimal − greedy" if default else "Candidate − baseline") +
                 ", paired by fold: mean and 95 % interval (corrected resampled t)")
    return fig


def _max_ticks(n: int):
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(nbins=n)


def _accuracy_vs_depth(df, plt):
    datasets = list(dict.fromkeys(df["dataset"]))
    methods = list(dict.fromkeys(df["method"]))
    colors = _method_colors(methods)
    fig, axes = _grid(plt, len(datasets))
    for ax, dataset in zip(axes.flat, datasets):
        sub = df[df["dataset"] == dataset]
        for i, method in enumerate(methods):
            g = sub[sub["method"] == method].groupby("depth")
            if not len(g):
                continue
            dodge = (i - (len(methods) - 1) / 2) * 0.08  # methods with equal scores stay visible side by side
            runs = sub[sub["method"] == method]
            ax.plot(runs["depth"] + dodge, runs["test_score"], linestyle="none", marker=".", ms=3, alpha=0.25,
                    color=colors[method])  # every fold (and seed): the spread behind the mean
            for col, style in (("test_score", "-"), ("train_score", "--")):
                stats = g[col].agg(["mean", "std"]).dropna(subset=["mean"])
                if len(stats):
                    ax.errorbar(stats.index + dodge, stats["mean"], yerr=stats["std"].fillna(0), color=colors[method],
                                linestyle=style, marker="o", ms=3, capsize=2,
                                label=method if col == "test_score" else None)
        metric = "R²" if (sub["task"] == "regression").all() else "accuracy"
        ax.set(title=dataset, xlabel="depth", ylabel=f"{metric}: test solid, train dashed")
        ax.set_xticks(sorted(sub["depth"].unique()))
        ax.grid(True, alpha=0.3)
    for ax in list(axes.flat)[len(datasets):]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize=7, loc="best")
    spread = "seeds and folds" if "fold" in df and df["fold"].notna().any() else "seeds"
    fig.suptitle(f"Greedy vs optimal trees: score vs depth (mean ± sd over {spread}; dots: test score of each)")
    return fig


def _optimality(df, plt):
    """Per dataset: proven-optimal fraction (top) and mean fit time (bottom) vs depth; at most 4 datasets a row."""
    datasets = list(dict.fromkeys(df["dataset"]))
    methods = list(dict.fromkeys(df["method"]))
    colors = _method_colors(methods)
    ncols = min(len(datasets), 4)
    nrows = int(np.ceil(len(datasets) / ncols))
    fig, axes = plt.subplots(2 * nrows, ncols, figsize=(3.6 * ncols, 3.0 * 2 * nrows), squeeze=False,
                             layout="constrained")
    for k, dataset in enumerate(datasets):
        top, bottom = axes[2 * (k // ncols), k % ncols], axes[2 * (k // ncols) + 1, k % ncols]
        sub = df[df["dataset"] == dataset]
        for method in methods:
            m = sub[sub["method"] == method]
            if not len(m):
                continue
            proven = m["proven_optimal"].dropna()
            if len(proven):
                frac = m.dropna(subset=["proven_optimal"]).groupby("depth")["proven_optimal"].mean()
                top.plot(frac.index, frac.values, marker="o", color=colors[method], label=method)
            t = m.groupby("depth")["fit_time"].mean()
            bottom.plot(t.index, t.values, marker="o", color=colors[method], label=method)
        top.set(title=dataset, ylim=(-0.05, 1.05), ylabel="proven-optimal fraction", xlabel="depth")
        bottom.set(yscale="log", ylabel="fit time (s)", xlabel="depth")
        for ax in (top, bottom):
            ax.set_xticks(sorted(sub["depth"].unique()))
            ax.grid(True, alpha=0.3)
    for k in range(len(datasets), nrows * ncols):
        axes[2 * (k // ncols), k % ncols].set_visible(False)
        axes[2 * (k // ncols) + 1, k % ncols].set_visible(False)
    handles, labels = axes[1, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 6), fontsize=8)
    fig.suptitle("Proven optimality and fit time (mean over seeds and folds)")
    return fig


def _first_seed_traces(df, by_id):
    """MIP runs of the first seed per dataset × depth × method whose record holds a solver trace."""
    mip = df[(df["kind"] == "mip") & df["solver_status"].notna()]
    mip = mip[mip["seed"] == mip.groupby(["dataset", "depth", "method"])["seed"].transform("min")]
    return mip[[bool((by_id[i].solver or {}).get("trace")) for i in mip["run_id"]]]


def _progress(sub, by_id, plt):
    from optitree.views._plot import plot_progress

    mip = _first_seed_traces(sub, by_id)
    if not len(mip):
        return None
    depths = sorted(mip["depth"].unique())
    methods = list(dict.fromkeys(mip["method"]))
    fig, axes = plt.subplots(len(depths), len(methods), figsize=(4.6 * len(methods), 3.4 * len(depths)),
                             squeeze=False, layout="constrained")
    for i, depth in enumerate(depths):
        for j, method in enumerate(methods):
            ax = axes[i, j]
            row = mip[(mip["depth"] == depth) & (mip["method"] == method)]
            if not len(row):
                ax.set_visible(False)
                continue
            plot_progress(by_id[row["run_id"].iloc[0]].solver, ax=ax)
            ax.set_title(f"{method}, depth {depth}\n{ax.get_title()}", fontsize=8)
            ax.legend(fontsize=6, loc="best")
    fig.suptitle(f"{sub['dataset'].iloc[0]}: incumbent and bound over time (seed {int(mip['seed'].min())})")
    return fig


def _gap_over_time(df, by_id, plt):
    from matplotlib.ticker import NullFormatter

    mip = _first_seed_traces(df, by_id)
    if not len(mip):
        return None
    panels = list(dict.fromkeys(zip(mip["dataset"], mip["depth"])))
    methods = list(dict.fromkeys(mip["method"]))
    colors = _method_colors(methods)
    fig, axes = _grid(plt, len(panels))
    for ax, (dataset, depth) in zip(axes.flat, panels):
        rows = mip[(mip["dataset"] == dataset) & (mip["depth"] == depth)]
        for rid, method, start in zip(rows["run_id"], rows["method"], rows["start"]):
            trace = [p for p in by_id[rid].solver["trace"] if p.get("gap") is not None]
            if not trace:
                continue
            t = np.array([p["time"] for p in trace], dtype=float)
            g = np.array([p["gap"] for p in trace], dtype=float)
            ax.step(np.maximum(t, 1e-3), g, where="post", color=colors[method],
                    linestyle="-" if start == "cart" else ":", label=method)
        ax.set(title=f"{dataset}, depth {depth}", xscale="log", xlabel="time (s)", ylabel="relative gap")
        ax.ticklabel_format(axis="y", useOffset=False)
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=6, loc="best")
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    starts = set(mip["start"])
    fig.suptitle("Gap over time: CART start (solid) vs cold (dotted)" if {"cart", "cold"} <= starts
                 else "Gap over time" + (" (cold starts)" if starts == {"cold"} else ""))
    return fig


def _regions(sub, by_id, plt):
    """Decision regions side by side for a 2-feature dataset, at depth 2 if run (else the largest depth)."""
    from greedy import Tree
    from optitree.views._plot import plot_decision_regions

    rows = sub[sub["run_id"].map(lambda i: (by_id[i].data or {}).get("n_features") == 2)]
    rows = rows[rows["task"] == "classification"]
    if not len(rows):
        return None
    depth = 2 if (rows["depth"] == 2).any() else rows["depth"].max()
    rows = rows[(rows["depth"] == depth) & (rows["seed"] == rows["seed"].min())]
    if rows["fold"].notna().any():  # cross-validation: the first fold's runs
        rows = rows[rows["fold"] == rows["fold"].min()]
    fig, axes = plt.subplots(1, len(rows), figsize=(4.2 * len(rows), 4.0), squeeze=False, layout="constrained")
    for ax, rid in zip(axes.flat, rows["run_id"]):
        rec = by_id[rid]
        X_train, y_train = _training_data(rec)
        cfg = rec.config
        classes = np.asarray(rec.classes)
        codes = np.searchsorted(classes, y_train)
        plot_decision_regions(Tree.from_dict(rec.tree), X_train, codes, ax=ax,
                              class_names=[str(c) for c in classes])
        m = rec.metrics
        ax.set_title(f"{cfg['method_label']}\ntrain acc {m['train_accuracy']:.3f}", fontsize=9)
    fold = "" if rows["fold"].isna().all() else f", fold {int(rows['fold'].iloc[0])}"
    fig.suptitle(f"{sub['dataset'].iloc[0]}: decision regions at depth {depth} (training data, seed "
                 f"{int(rows['seed'].iloc[0])}{fold})")
    return fig


def _training_data(rec):
    """The rows a record's tree was fitted on, rebuilt from its config (holdout split or CV fold)."""
    cfg = dict(rec.config)
    identity = {k: v for k, v in cfg.items() if k not in ("dataset_label", "method_label")}
    spec = _config.RunSpec(rec.run_id, identity, cfg["dataset_label"], cfg["method_label"])
    if spec.fold is None:
        data = _protocols.split_data(spec, "classification")
        return _datasets.to_array(data.X_train), data.y_train
    X, y, (train, _), _, _ = _protocols.fold_data(spec, "classification")
    return _datasets.to_array(X.iloc[train]), y[train]


def _rashomon_sizes(df, plt):
    """Set size against epsilon per dataset (panels), one line per depth × method: the median over runs."""
    if "rashomon_curve" not in df or not df["rashomon_curve"].notna().any():
        return None
    import json

    runs = df[df["rashomon_curve"].notna()]
    datasets = list(dict.fromkeys(runs["dataset"]))
    fig, axes = _grid(plt, len(datasets))
    for ax, dataset in zip(axes.flat, datasets):
        sub = runs[runs["dataset"] == dataset]
        for (depth, method), g in sub.groupby(["depth", "method"], sort=True):
            curves = [json.loads(c) for c in g["rashomon_curve"]]
            eps = sorted({e for curve in curves for e, _ in curve})
            median = [float(np.median([dict(curve).get(e, np.nan) for curve in curves])) for e in eps]
            label = f"depth {depth}" if sub["method"].nunique() == 1 else f"{method}, depth {depth}"
            ax.plot(eps, median, marker="o", ms=3, label=label, drawstyle="steps-post")  # a size is a step function
        ax.set_yscale("log")
        ax.set(title=dataset, xlabel="ε", ylabel="trees in the set")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    for ax in list(axes.flat)[len(datasets):]:
        ax.set_visible(False)
    fig.suptitle("Rashomon set size against ε (median over runs)")
    return fig
