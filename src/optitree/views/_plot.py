"""Matplotlib views of trees, solver runs and decision regions.

matplotlib is an optional dependency (``pip install 'optitree[plot]'``); it is
imported only when one of these functions is called.
"""

from __future__ import annotations

import numpy as np

from greedy import Tree

from ._export import (_category_labels, class_colors, missing_shown, node_fill_colors, node_label_lines,
                      resolve_tree)

__all__ = ["plot_tree", "plot_progress", "plot_decision_regions"]


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("optitree's plots need matplotlib: pip install 'optitree[plot]'") from None
    return plt


def _axes(ax):
    return _pyplot().gca() if ax is None else ax


# ---------------------------------------------------------------- plot_tree


def _layout(tree: Tree, max_depth: int | None):
    """Visible nodes and their (x, depth): leaves (and truncated nodes) take consecutive x slots
    left to right; an internal node sits midway between its children."""
    depth = tree.node_depth
    limit = tree.max_depth if max_depth is None else int(max_depth)
    x = np.full(tree.node_count, np.nan)
    truncated = (~tree.is_leaf) & (depth == limit) if limit < tree.max_depth else np.zeros(tree.node_count, bool)
    slot = 0
    order = []  # pre-order, left to right

    def visit(node):
        nonlocal slot
        order.append(node)
        if tree.is_leaf[node] or truncated[node]:
            x[node] = slot
            slot += 1
            return
        left, right = tree.children_left[node], tree.children_right[node]
        visit(left)
        visit(right)
        x[node] = (x[left] + x[right]) / 2

    visit(0)
    return np.array(order), x, depth, truncated, slot


def plot_tree(tree_or_estimator, ax=None, feature_names=None, class_names=None, max_depth=None, filled=False,
              impurity=True, node_ids=False, proportion=False, rounded=False, precision=3, fontsize=None,
              category_names=None, show_missing=True):
    """Draw a tree with matplotlib: one text box per node, one line per edge.

    Parameters
    ----------
    tree_or_estimator : greedy.Tree or fitted estimator with ``tree_``
        Greedy, MIP and imported scikit-learn trees draw the same way.
    ax : matplotlib Axes, optional
        Default: the current axes.
    feature_names, class_names, filled, impurity, node_ids, proportion, rounded, precision, category_names,
    show_missing
        As in :func:`optitree.export_graphviz` (the box text is the same).
    max_depth : int, optional
        Deeper subtrees are drawn as a ``(...)`` box.
    fontsize : float, optional
        Default: the largest size (at most 12) at which no two boxes overlap.

    Returns
    -------
    matplotlib Axes
        One text per node box, plus "True"/"False" labels on the root's two
        edges, in ``ax.texts``; one line per edge in ``ax.lines``.
    """
    ax = _axes(ax)
    tree, names, classes, criterion = resolve_tree(tree_or_estimator, feature_names, class_names)
    show_missing = missing_shown(tree_or_estimator, tree, show_missing)
    categories = _category_labels(category_names, names, tree_or_estimator)
    order, x, depth, truncated, n_slots = _layout(tree, max_depth)
    colors = node_fill_colors(tree) if filled else np.ones((tree.node_count, 3))
    pad = 0.4
    boxstyle = f"round,pad={pad}" if rounded else f"square,pad={pad}"
    size = 12.0 if fontsize is None else float(fontsize)
    texts, edge_labels = [], []
    for node in order:
        if truncated[node]:
            label = "(...)"
        else:
            label = "\n".join(node_label_lines(tree, node, names, classes, criterion, precision=precision,
                                               impurity=impurity, node_ids=node_ids, proportion=proportion,
                                               categories=categories, show_missing=show_missing))
        texts.append(ax.text(x[node], -depth[node], label, ha="center", va="center", fontsize=size, zorder=3,
                             bbox=dict(boxstyle=boxstyle, fc=colors[node], ec="black", lw=0.8)))
        if not tree.is_leaf[node] and not truncated[node]:
            for child in (tree.children_left[node], tree.children_right[node]):
                ax.plot([x[node], x[child]], [-depth[node], -depth[child]], color="0.3", lw=1.0, zorder=1)
    root_edges = []
    if not tree.is_leaf[0] and not truncated[0]:
        for child, word in ((tree.children_left[0], "True"), (tree.children_right[0], "False")):
            root_edges.append(child)
            edge_labels.append(ax.text((x[0] + x[child]) / 2, -0.5, word, ha="center", va="center",
                                       fontsize=size * 0.9, zorder=4, color="0.2",
                                       bbox=dict(boxstyle="square,pad=0.15", fc="white", ec="none")))
    visible_depth = int(depth[order].max())
    ax.set_xlim(-0.5, n_slots - 0.5)
    ax.set_ylim(-visible_depth - 0.5, 0.5)
    ax.set_axis_off()
    position = {node: k for k, node in enumerate(order)}
    labelled_edges = [(position[0], position[child]) for child in root_edges]
    if fontsize is None:
        _fit_fontsize(ax, texts, edge_labels, size, pad, labelled_edges)
    if edge_labels:
        boxes = dict(zip(order, texts))
        _place_edge_labels(ax, boxes[0], [boxes[c] for c in root_edges], edge_labels)
    return ax


def _place_edge_labels(ax, parent_text, child_texts, labels) -> None:
    """Put each label on its edge, halfway through the gap between the parent's and the child's box.

    The edge runs between box centres; the label sits where the edge is halfway between the
    parent box's bottom and the child box's top (box extents measured after font fitting), so
    it never hides under a tall box.
    """
    renderer = ax.figure.canvas.get_renderer()
    to_data = ax.transData.inverted()

    def vertical_extent(text):
        bbox = text.get_bbox_patch().get_window_extent(renderer) if text.get_bbox_patch() else \
            text.get_window_extent(renderer)
        (_, y0), (_, y1) = to_data.transform([(bbox.x0, bbox.y0), (bbox.x1, bbox.y1)])
        return y0, y1

    px, py = parent_text.get_position()
    parent_bottom, _ = vertical_extent(parent_text)
    for child, label in zip(child_texts, labels):
        cx, cy = child.get_position()
        _, child_top = vertical_extent(child)
        y = (parent_bottom + child_top) / 2 if child_top < parent_bottom else (py + cy) / 2
        share = (py - y) / (py - cy)  # where the edge crosses height y
        label.set_position((px + share * (cx - px), y))


def _fit_fontsize(ax, node_texts, edge_labels, size: float, pad: float, labelled_edges=()) -> None:
    """Shrink all texts so that no two node boxes overlap and every box stays inside the axes.

    Box centres are fixed and a box's half-extent grows linearly with the font size
    (text extent plus ``pad`` font sizes), so boxes ``i, j`` are disjoint at scale ``k``
    iff ``k <= max(dx_ij / (w_i + w_j), dy_ij / (h_i + h_j))`` (half-widths ``w``,
    half-heights ``h``). A pair ``(i, j)`` of ``labelled_edges`` (indices into
    ``node_texts``) must also leave the height of its edge label ``l`` between the boxes:
    ``k <= dy_ij / (h_i + h_j + l)``. The largest feasible ``k`` is applied; a re-measure
    catches rounding in the text layout.
    """
    figure = ax.figure
    renderer = figure.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    texts = node_texts + edge_labels
    ratios = [t.get_fontsize() / size for t in texts]
    for _ in range(4):
        ext = np.array([t.get_window_extent(renderer).extents for t in node_texts])
        pad_px = (pad * size + 1.0) * figure.dpi / 72.0  # box padding plus the edge line
        cx, cy = (ext[:, 0] + ext[:, 2]) / 2, (ext[:, 1] + ext[:, 3]) / 2
        hw, hh = (ext[:, 2] - ext[:, 0]) / 2 + pad_px, (ext[:, 3] - ext[:, 1]) / 2 + pad_px
        with np.errstate(divide="ignore", invalid="ignore"):
            pair = np.maximum(np.abs(cx[:, None] - cx) / (hw[:, None] + hw),
                              np.abs(cy[:, None] - cy) / (hh[:, None] + hh))
        np.fill_diagonal(pair, np.inf)
        if labelled_edges:
            label_h = 1.2 * max(t.get_window_extent(renderer).height for t in edge_labels)
            for i, j in labelled_edges:
                pair[i, j] = pair[j, i] = abs(cy[i] - cy[j]) / (hh[i] + hh[j] + label_h)
        inside = np.minimum.reduce([(cx - frame.x0) / hw, (frame.x1 - cx) / hw,
                                    (cy - frame.y0) / hh, (frame.y1 - cy) / hh])
        scale = min(pair.min(), inside.min())
        if scale >= 1.0 or size <= 1.0:
            return
        size = max(size * scale * 0.97, 1.0)
        for t, r in zip(texts, ratios):
            t.set_fontsize(size * r)


# ---------------------------------------------------------------- plot_progress


def plot_progress(result, ax=None, log_time=False):
    """Incumbent and best bound over the solve time, from ``result.trace``.

    Parameters
    ----------
    result : SolveResult or dict
        A :class:`optitree.SolveResult` or its ``to_dict()``. ``trace`` entries
        have ``time``, ``incumbent``, ``bound`` and ``event``; points without an
        incumbent (or bound) are left out of that line. The y axis is in the units of
        ``objective_units`` (an estimator's fit: the user's, e.g. weighted training errors),
        else the objective.
    ax : matplotlib Axes, optional
    log_time : bool
        Logarithmic time axis; times <= 0 are drawn at half the smallest positive time.

    Returns
    -------
    matplotlib Axes
        Lines labelled ``"incumbent"`` and ``"bound"`` (step plots through the
        trace points) and ``"start"`` (the warm start: the trace's ``"start"`` event,
        else ``start_objective`` at the first trace time, hollow if the solver
        rejected it).
    """
    d = result.to_dict() if hasattr(result, "to_dict") else result
    if not isinstance(d, dict) or "trace" not in d:
        raise TypeError("plot_progress expects a SolveResult or its to_dict() dict with a 'trace'")
    trace = d["trace"] or []
    if not trace:
        raise ValueError("result.trace is empty: the solve recorded no progress to plot")
    units = d.get("objective_units") or {"name": "objective"}
    name = units["name"] if units["name"] == "objective" else f"training {units['name']}"

    def displayed(value):  # solver noise near 0 shown as 0
        return round(float(value), 9)

    ax = _axes(ax)
    time = np.array([float(p["time"]) for p in trace])
    if log_time:
        positive = time[time > 0]
        time = np.where(time > 0, time, positive.min() / 2 if positive.size else 1e-3)
        ax.set_xscale("log")
    for key, color in (("incumbent", "tab:orange"), ("bound", "tab:blue")):
        keep = np.array([p.get(key) is not None for p in trace])
        values = np.array([displayed(p[key]) for p in trace if p.get(key) is not None])
        ax.step(time[keep], values, where="post", color=color, marker="o", markersize=3, lw=1.6, label=key)
    starts = [k for k, p in enumerate(trace) if p.get("event") == "start" and p.get("incumbent") is not None]
    start_value = trace[starts[0]]["incumbent"] if starts else d.get("start_objective")
    if start_value is not None:
        rejected = d.get("start_accepted") is False
        notes = [n for n in (d.get("start_source"), "rejected" if rejected else None) if n]
        ax.plot([time[starts[0] if starts else 0]], [displayed(start_value)], linestyle="none", marker="*",
                markersize=13, color="white" if rejected else "tab:green", markeredgecolor="black", zorder=5,
                label="start" + (f" ({', '.join(notes)})" if notes else ""))
    status = d.get("status", "?")
    gap = d.get("gap")
    objective = d.get("objective")
    title = f"{d.get('solver', 'solver')}: {status}"
    title += f", {name} {displayed(objective):g}" if objective is not None else ""
    title += f", gap {gap:.2%}" if gap is not None else ""
    nodes = d.get("nodes")
    ax.set_title(title + (f", {nodes} nodes" if nodes is not None else ""))
    ax.set_xlabel("time (s)" + (", log scale" if log_time else ""))
    ax.set_ylabel(name)
    shown = [displayed(p[key]) for p in trace for key in ("incumbent", "bound") if p.get(key) is not None]
    _readable_ticks(ax, log_time, integer=name == "training errors" and all(v.is_integer() for v in shown))
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best")
    return ax


def _readable_ticks(ax, log_time, integer):
    """Ticks that never overlap: on a log time axis labelled decades only (``0.01``, ``1``, ``100``),
    none on the minor ticks; whole numbers on an axis of error counts."""
    from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

    if log_time:
        ax.xaxis.set_major_locator(LogLocator(base=10, numticks=8))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    else:
        ax.xaxis.set_major_locator(MaxNLocator(nbins=6))
    ax.yaxis.set_major_locator(MaxNLocator(nbins=6, integer=integer))


# ---------------------------------------------------------------- plot_decision_regions


def _class_index(classes: np.ndarray, labels: np.ndarray, what: str) -> np.ndarray:
    """Position of every label in ``classes``; ValueError naming labels that are not classes."""
    order = np.argsort(classes, kind="stable")
    pos = np.clip(np.searchsorted(classes[order], labels), 0, classes.size - 1)
    index = order[pos]
    bad = classes[index] != labels
    if np.any(bad):
        raise ValueError(f"{what} hold labels {np.unique(labels[bad]).tolist()} that are not classes of the "
                         f"estimator {classes.tolist()}")
    return index


def plot_decision_regions(estimator, X, y, ax=None, resolution=200, feature_names=None, class_names=None):
    """Predicted regions of a 2-feature model over a grid, with the samples on top.

    Parameters
    ----------
    estimator : fitted estimator with ``predict`` (and ``classes_`` for classifiers), or a greedy.Tree
        A classification Tree predicts class indices ``0..K-1``.
    X : array-like of shape (n, 2)
    y : array-like of shape (n,)
        Labels (classes of the estimator) or regression targets.
    ax : matplotlib Axes, optional
    resolution : int
        Grid points per axis.
    feature_names, class_names : sequence of str, optional
        Axis labels and legend entries; default from the estimator / ``X`` columns.

    Returns
    -------
    matplotlib Axes
    """
    _pyplot()  # clear ImportError without matplotlib
    from matplotlib.colors import ListedColormap

    columns = getattr(X, "columns", None)
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if X.ndim != 2 or X.shape[1] != 2:
        raise ValueError(f"plot_decision_regions needs X with exactly 2 features, got shape {X.shape}")
    if y.shape != (X.shape[0],):
        raise ValueError(f"y has shape {y.shape}, expected ({X.shape[0]},)")
    resolution = int(resolution)
    if resolution < 2:
        raise ValueError(f"resolution must be at least 2, got {resolution}")
    ax = _axes(ax)
    if feature_names is None:
        feature_names = getattr(estimator, "feature_names_in_", None)
        feature_names = columns if feature_names is None else feature_names
    feature_names = ["x0", "x1"] if feature_names is None else [str(f) for f in feature_names]

    lo, hi = np.nanmin(X, axis=0), np.nanmax(X, axis=0)
    pad = 0.05 * np.where(hi > lo, hi - lo, 1.0)
    gx, gy = (np.linspace(lo[j] - pad[j], hi[j] + pad[j], resolution) for j in range(2))
    grid = np.column_stack([a.ravel() for a in np.meshgrid(gx, gy)])
    extent = (gx[0], gx[-1], gy[0], gy[-1])

    if isinstance(estimator, Tree):
        if estimator.task == "classification":
            classes = np.arange(estimator.n_classes)
            predicted = np.argmax(estimator.predict(grid), axis=1)
        else:
            classes, predicted = None, estimator.predict(grid)
    else:
        names = getattr(estimator, "feature_names_in_", None)
        if names is not None:
            import pandas as pd  # an estimator fitted on a DataFrame means pandas is installed

            grid_input = pd.DataFrame(grid, columns=names)
        else:
            grid_input = grid
        classes = getattr(estimator, "classes_", None)
        predicted = np.asarray(estimator.predict(grid_input))

    if classes is None:  # regression
        image = ax.imshow(predicted.reshape(resolution, resolution).astype(float), origin="lower", extent=extent,
                          aspect="auto", cmap="viridis", alpha=0.6, interpolation="nearest")
        ax.scatter(X[:, 0], X[:, 1], c=y.astype(float), cmap="viridis", norm=image.norm, edgecolors="black",
                   linewidths=0.5, s=18)
        ax.figure.colorbar(image, ax=ax, label="prediction")
    else:
        classes = np.asarray(classes)
        region = _class_index(classes, predicted, "the predictions").reshape(resolution, resolution)
        codes = _class_index(classes, y, "y")
        colors = class_colors(classes.size)
        names = [str(c) for c in (classes if class_names is None else class_names)]
        ax.imshow(region, origin="lower", extent=extent, aspect="auto", cmap=ListedColormap(colors), vmin=-0.5,
                  vmax=classes.size - 0.5, alpha=0.35, interpolation="nearest")
        for k in range(classes.size):
            pick = codes == k
            ax.scatter(X[pick, 0], X[pick, 1], color=colors[k], edgecolors="black", linewidths=0.5, s=18,
                       label=names[k])
        ax.legend(loc="best", title="class", framealpha=0.85)
    ax.set_xlim(extent[:2])
    ax.set_ylim(extent[2:])
    ax.set_xlabel(feature_names[0])
    ax.set_ylabel(feature_names[1])
    return ax
