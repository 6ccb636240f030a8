"""plot_tree / plot_progress / plot_decision_regions under the Agg backend."""

import sys

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import to_rgb  # noqa: E402
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor  # noqa: E402

import optitree  # noqa: E402
from greedy import Tree  # noqa: E402
from support.trees import linear_leaf_tree, special_tree, xor_tree  # noqa: E402

NAN = np.nan


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def node_boxes(ax):
    return [t for t in ax.texts if t.get_text() not in ("True", "False")]


def test_plot_tree_counts_boxes_and_edges():
    fig, ax = plt.subplots()
    assert optitree.plot_tree(xor_tree(), ax=ax, feature_names=["a", "b"], class_names=["no", "yes"]) is ax
    boxes = node_boxes(ax)
    assert len(boxes) == 7 and len(ax.lines) == 6
    assert sorted(t.get_text() for t in ax.texts if t not in boxes) == ["False", "True"]
    assert all(t.get_bbox_patch() is not None for t in boxes)
    assert boxes[0].get_text() == "a <= 0.5\nimpurity = 0.5\nsamples = 8\nvalue = [4, 4]\nclass = no"
    # edges join each parent box centre to its children's
    root = boxes[0].get_position()
    starts = {tuple(np.round(np.c_[line.get_xdata(), line.get_ydata()][0], 6)) for line in ax.lines}
    assert tuple(np.round(root, 6)) in starts and len(starts) == 3


def test_plot_tree_special_nodes_are_shown():
    fig, ax = plt.subplots()
    optitree.plot_tree(special_tree(), ax=ax, feature_names=["a", "b", "color"])
    text = "\n".join(t.get_text() for t in ax.texts)
    for piece in ("color in {0, 2}", "NaN → left 60%", "0.5·a − 1.0·b <= 0.3"):
        assert piece in text
    fig, ax = plt.subplots()
    optitree.plot_tree(linear_leaf_tree(), ax=ax)
    assert len(node_boxes(ax)) == 3 and len(ax.lines) == 2
    assert "y = 1.2 + 0.5·x0" in "\n".join(t.get_text() for t in ax.texts)


def test_plot_tree_max_depth_and_filled():
    fig, ax = plt.subplots()
    optitree.plot_tree(xor_tree(), ax=ax, max_depth=1, filled=True)
    boxes = node_boxes(ax)
    assert len(boxes) == 3 and len(ax.lines) == 2
    assert [t.get_text() for t in boxes][1:] == ["(...)", "(...)"]
    np.testing.assert_allclose(boxes[0].get_bbox_patch().get_facecolor()[:3], 1.0)  # 50/50: white
    fig, ax = plt.subplots()
    optitree.plot_tree(xor_tree(), ax=ax, filled=True)
    pure_class0 = next(t for t in node_boxes(ax) if t.get_text().endswith("value = [2, 0]\nclass = 0"))
    np.testing.assert_allclose(pure_class0.get_bbox_patch().get_facecolor()[:3], to_rgb("#e68139"), atol=0.003)


def test_plot_tree_fits_fonts_so_boxes_do_not_overlap():
    rng = np.random.RandomState(0)
    X = rng.uniform(size=(400, 4))
    y = (X[:, 0] + X[:, 1] ** 2 > rng.uniform(0.5, 1.2, 400)).astype(int)
    clf = DecisionTreeClassifier(max_depth=4, random_state=0).fit(X, y)
    fig, ax = plt.subplots(figsize=(8, 4))
    optitree.plot_tree(clf, ax=ax)
    assert len(node_boxes(ax)) == clf.tree_.node_count and len(ax.lines) == clf.tree_.node_count - 1
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_bbox_patch().get_window_extent(renderer) for t in node_boxes(ax)]
    for i in range(len(boxes)):
        for j in range(i):
            assert not boxes[i].overlaps(boxes[j])
    assert node_boxes(ax)[0].get_fontsize() < 12  # it had to shrink


def test_plot_tree_uses_estimator_names():
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame({"height": [1.0, 2.0, 3.0, 4.0], "width": [0.0, 1.0, 0.0, 1.0]})
    clf = DecisionTreeClassifier(max_depth=1).fit(X, ["low", "low", "high", "high"])
    fig, ax = plt.subplots()
    optitree.plot_tree(clf, ax=ax)
    assert node_boxes(ax)[0].get_text().startswith("height <= 2.5")
    assert any(t.get_text().endswith("class = high") for t in node_boxes(ax))


# ---------------------------------------------------------------- plot_progress


TRACE = [
    {"time": 0.0, "incumbent": None, "bound": 0.0, "gap": None, "nodes": 0, "event": "progress"},
    {"time": 0.1, "incumbent": 70.0, "bound": 0.0, "gap": 1.0, "nodes": 0, "event": "start"},
    {"time": 1.0, "incumbent": 48.0, "bound": 20.0, "gap": 0.58, "nodes": 30, "event": "improving"},
    {"time": 2.5, "incumbent": 48.0, "bound": 40.0, "gap": 0.17, "nodes": 200, "event": "progress"},
    {"time": 4.0, "incumbent": 40.0, "bound": 40.0, "gap": 0.0, "nodes": 321, "event": "final"},
]


def result_dict(**changes):
    d = dict(status="optimal", objective=40.0, bound=40.0, gap=0.0, proven_optimal=True, nodes=321,
             build_time=0.2, solve_time=4.0, n_rows=10, n_cols=5, n_nonzeros=30, n_integer=3, solver="highs",
             versions={}, options={}, start_source="cart", start_objective=70.0, start_accepted=True,
             trace=TRACE, message="")
    d.update(changes)
    return d


def lines_by_label(ax):
    return {line.get_label(): line for line in ax.lines}


def test_plot_progress_draws_the_trace():
    fig, ax = plt.subplots()
    optitree.plot_progress(result_dict(), ax=ax)
    lines = lines_by_label(ax)
    np.testing.assert_array_equal(lines["incumbent"].get_xdata(), [0.1, 1.0, 2.5, 4.0])
    np.testing.assert_array_equal(lines["incumbent"].get_ydata(), [70, 48, 48, 40])
    np.testing.assert_array_equal(lines["bound"].get_xdata(), [0.0, 0.1, 1.0, 2.5, 4.0])
    np.testing.assert_array_equal(lines["bound"].get_ydata(), [0, 0, 20, 40, 40])
    assert lines["incumbent"].get_drawstyle() == "steps-post"
    start = lines["start (cart)"]
    assert start.get_xdata().tolist() == [0.1] and start.get_ydata().tolist() == [70.0]
    assert "optimal" in ax.get_title() and "gap 0.00%" in ax.get_title()


def test_plot_progress_accepts_solve_result_and_log_time():
    solve = pytest.importorskip("optitree.solvers")
    result = solve.SolveResult.from_dict(result_dict(status="time_limit", gap=0.25))
    fig, ax = plt.subplots()
    optitree.plot_progress(result, ax=ax, log_time=True)
    assert ax.get_xscale() == "log"
    bound_x = lines_by_label(ax)["bound"].get_xdata()
    assert bound_x[0] == 0.05 and bound_x[1] == 0.1  # time 0 drawn at half the first positive time
    assert "time_limit" in ax.get_title() and "gap 25.00%" in ax.get_title()


def test_plot_progress_start_without_start_event():
    trace = [dict(p, event="progress") for p in TRACE]
    fig, ax = plt.subplots()
    optitree.plot_progress(result_dict(trace=trace, start_accepted=False, start_objective=75.0), ax=ax)
    start = next(line for line in ax.lines if line.get_label().startswith("start"))
    assert start.get_label() == "start (cart, rejected)"
    assert start.get_xdata().tolist() == [0.0] and start.get_ydata().tolist() == [75.0]
    fig, ax = plt.subplots()
    optitree.plot_progress(result_dict(start_objective=None, start_source=None, trace=trace), ax=ax)
    assert sorted(lines_by_label(ax)) == ["bound", "incumbent"]


def test_plot_progress_y_axis_in_training_errors():
    # a classifier's result is in its data's units: the plot shows the training errors
    X, y = optitree.datasets.load("monks1")[:2]
    X, y = X[:60], y[:60]  # a MIP proven in a second still records its progress
    clf = optitree.OptimalTreeClassifier(max_depth=2, acceleration="none", time_limit=30).fit(X, y)
    fig, ax = plt.subplots()
    optitree.plot_progress(clf.result_, ax=ax)
    assert ax.get_ylabel() == "training errors"
    errors = int((clf.predict(X) != y).sum())
    assert lines_by_label(ax)["incumbent"].get_ydata()[-1] == errors
    assert f"training errors {errors}," in ax.get_title()
    units = result_dict(objective_units={"name": "errors", "normalization": 0.5})
    fig, ax = plt.subplots()
    optitree.plot_progress(units, ax=ax)
    np.testing.assert_array_equal(lines_by_label(ax)["incumbent"].get_ydata(), [70, 48, 48, 40])
    assert ax.get_ylabel() == "training errors"


def test_plot_progress_ticks_are_readable():
    # error counts: whole-number ticks, even over a range of 3 errors; a log time axis labels decades only
    trace = [{"time": t, "incumbent": inc, "bound": b, "event": "progress"}
             for t, inc, b in [(0.001, 3.0, 0.0), (0.02, 2.0, 1.0), (3.0, 2.0, 2.0)]]
    d = result_dict(trace=trace, objective_units={"name": "errors", "normalization": 1.0}, start_objective=None)
    fig, ax = plt.subplots(figsize=(4, 3))
    optitree.plot_progress(d, ax=ax, log_time=True)
    fig.canvas.draw()
    lo, hi = ax.get_ylim()
    ticks = [t for t in ax.get_yticks() if lo <= t <= hi]
    assert ticks and all(float(t).is_integer() for t in ticks)
    labels = [t.get_text() for t in ax.get_xticklabels(minor=True) if t.get_text()]
    assert labels == []  # no minor labels to collide
    shown = [t for t in ax.get_xticklabels() if t.get_text()]
    boxes = [t.get_window_extent() for t in shown]
    assert all(not a.overlaps(b) for a, b in zip(boxes, boxes[1:]))


def test_plot_progress_errors():
    with pytest.raises(ValueError, match="trace is empty"):
        optitree.plot_progress(result_dict(trace=[]))
    with pytest.raises(TypeError, match="SolveResult"):
        optitree.plot_progress([1, 2, 3])


# ---------------------------------------------------------------- plot_decision_regions


def test_decision_regions_of_xor_tree():
    X, y, info = optitree.datasets.load("xor", n=100, seed=1)
    tree = xor_tree()
    fig, ax = plt.subplots()
    optitree.plot_decision_regions(tree, X, y, ax=ax, resolution=50)
    region = ax.images[0].get_array()
    assert region.shape == (50, 50)
    lo, hi = X.min(axis=0), X.max(axis=0)
    pad = 0.05 * (hi - lo)
    gx = np.linspace(lo[0] - pad[0], hi[0] + pad[0], 50)
    gy = np.linspace(lo[1] - pad[1], hi[1] + pad[1], 50)
    # row = x1 grid index, column = x0 grid index; independent evaluation of the hand-built rule
    expected = np.where(gx[None, :] <= 0.5, (gy[:, None] > 0.25), (gy[:, None] <= 0.75)).astype(int)
    np.testing.assert_array_equal(region, expected)
    assert len(ax.collections) == 2  # one scatter per class
    assert ax.get_xlabel() == "x0" and ax.get_ylabel() == "x1"


def test_decision_regions_with_estimators():
    pd = pytest.importorskip("pandas")
    X, y, info = optitree.datasets.load("xor", n=200, seed=2)
    labels = np.array(["even", "odd"])[y]
    frame = pd.DataFrame(X, columns=["u", "v"])
    clf = DecisionTreeClassifier(max_depth=2, random_state=0).fit(frame, labels)
    fig, ax = plt.subplots()
    optitree.plot_decision_regions(clf, frame, labels, ax=ax, resolution=30)
    assert ax.get_xlabel() == "u" and [t.get_text() for t in ax.get_legend().get_texts()] == ["even", "odd"]
    reg = DecisionTreeRegressor(max_depth=2).fit(X, X[:, 0] + X[:, 1])
    fig, ax = plt.subplots()
    optitree.plot_decision_regions(reg, X, X[:, 0] + X[:, 1], ax=ax, resolution=20)
    assert len(fig.axes) == 2  # the plot and its colour bar
    with pytest.raises(ValueError, match="exactly 2 features"):
        optitree.plot_decision_regions(reg, np.c_[X, X], y)
    with pytest.raises(ValueError, match=r"labels \['maybe'\] that are not classes"):
        optitree.plot_decision_regions(clf, frame, np.where(y == 1, "odd", "maybe"))


def test_clear_error_without_matplotlib(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"optitree\[plot\]"):
        optitree.plot_progress(result_dict())
    with pytest.raises(ImportError, match=r"optitree\[plot\]"):
        optitree.plot_decision_regions(xor_tree(), np.zeros((2, 2)), np.zeros(2, int))
    # the text exports need no matplotlib
    assert optitree.export_text(Tree([-1], [-1], [-2], [NAN], [[1.0, 0.0]], n_features=1)) == "|--- class: 0\n"


@pytest.mark.parametrize("depth, figsize", [(1, (6, 3)), (2, (6, 3)), (3, (10, 6)), (3, (3, 6))])
def test_plot_tree_root_edge_labels_are_not_hidden_by_boxes(depth, figsize):
    """The True/False labels sit on the root's edges, clear of every node box (issue 12 item 8)."""
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    fig, ax = plt.subplots(figsize=figsize)
    optitree.plot_tree(DecisionTreeClassifier(max_depth=depth, random_state=0).fit(X, y), ax=ax, filled=True)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    labels = [t for t in ax.texts if t.get_text() in ("True", "False")]
    boxes = [t.get_bbox_patch().get_window_extent(renderer) for t in node_boxes(ax)]
    assert len(labels) == 2
    for label in labels:
        extent = label.get_window_extent(renderer)
        assert not any(extent.overlaps(box) for box in boxes), label.get_text()
