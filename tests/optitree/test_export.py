"""export_text / export_graphviz: golden strings written by hand from hand-built trees,
and agreement with scikit-learn's export_text on imported trees."""

import io
import sys
import types

import numpy as np
import pytest
from sklearn.datasets import load_diabetes, load_iris
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
from sklearn.tree import export_text as sklearn_export_text

import optitree
from greedy import Tree
from support.trees import linear_leaf_tree, special_tree, xor_tree

NAN = np.nan


# ---------------------------------------------------------------- export_text golden strings


def test_export_text_golden_xor():
    expected = (
        "|--- a <= 0.50\n"
        "|   |--- b <= 0.25\n"
        "|   |   |--- class: no\n"
        "|   |--- b >  0.25\n"
        "|   |   |--- class: yes\n"
        "|--- a >  0.50\n"
        "|   |--- b <= 0.75\n"
        "|   |   |--- class: yes\n"
        "|   |--- b >  0.75\n"
        "|   |   |--- class: no\n"
    )
    assert optitree.export_text(xor_tree(), feature_names=["a", "b"], class_names=["no", "yes"]) == expected


def test_export_text_defaults_weights_and_truncation():
    text = optitree.export_text(xor_tree(), show_weights=True, decimals=1)
    assert text.splitlines()[:3] == [
        "|--- x0 <= 0.5",
        "|   |--- x1 <= 0.2",  # 0.25 at one decimal
        "|   |   |--- weights: [2.0, 0.0] class: 0",
    ]
    assert optitree.export_text(xor_tree(), max_depth=0) == (
        "|--- x0 <= 0.50\n"
        "|   |--- truncated branch of depth 2\n"
        "|--- x0 >  0.50\n"
        "|   |--- truncated branch of depth 2\n"
    )


def test_export_text_golden_categorical_oblique_missing():
    expected = (
        "|--- color in {0, 2}\n"
        "|   |--- 0.50·a − 1.00·b <= 0.30\n"
        "|   |   |--- class: no\n"
        "|   |--- 0.50·a − 1.00·b >  0.30  (NaN → right)\n"
        "|   |   |--- class: yes\n"
        "|--- color not in {0, 2}  (NaN → right)\n"
        "|   |--- a <= 0.50  (NaN → left 60%)\n"
        "|   |   |--- class: no\n"
        "|   |--- a >  0.50  (NaN → right 40%)\n"
        "|   |   |--- class: yes\n"
    )
    text = optitree.export_text(special_tree(), feature_names=["a", "b", "color"], class_names=["no", "yes"])
    assert text == expected
    hidden = optitree.export_text(special_tree(), feature_names=["a", "b", "color"], show_missing=False)
    assert "NaN" not in hidden and "|   |--- a <= 0.50\n" in hidden


def test_export_text_categorical_default_side_and_labels():
    # unseen codes go left, so the left branch is the complement of the right set
    text = optitree.export_text(special_tree(default_left=True), feature_names=["a", "b", "color"],
                                category_names={"color": ["red", "green", "blue", "black"]}, show_missing=False)
    lines = text.splitlines()
    assert lines[0] == "|--- color not in {green, black}"
    assert lines[5] == "|--- color in {green, black}"
    assert optitree.export_text(special_tree(), category_names={2: list("RGBK")}).startswith("|--- x2 in {R, B}")


def test_export_text_golden_regression_and_linear_leaves():
    assert optitree.export_text(linear_leaf_tree()) == (
        "|--- x0 <= 1.00\n"
        "|   |--- y = 1.20 + 0.50·x0\n"
        "|--- x0 >  1.00\n"
        "|   |--- y = −2.00 − 1.50·x1\n"
    )
    plain = Tree([1, -1, -1], [2, -1, -1], [1, -2, -2], [3.0, NAN, NAN], [[2.0], [1.25], [3.5]], n_features=2,
                 task="regression")
    assert optitree.export_text(plain, decimals=1) == (
        "|--- x1 <= 3.0\n"
        "|   |--- value: [1.2]\n"  # 1.25 rounds half to even
        "|--- x1 >  3.0\n"
        "|   |--- value: [3.5]\n"
    )


# ---------------------------------------------------------------- agreement with scikit-learn


@pytest.mark.parametrize("max_depth,show_weights", [(10, False), (10, True), (1, False)])
def test_export_text_matches_sklearn_classifier(max_depth, show_weights):
    X, y = load_iris(return_X_y=True)
    clf = DecisionTreeClassifier(max_depth=4, random_state=0).fit(X, y)
    names = [f"feature_{j}" for j in range(4)]  # scikit-learn's default names (ours: x0, x1, ...)
    ours = optitree.export_text(clf, feature_names=names, show_weights=show_weights, max_depth=max_depth,
                                show_missing=False)
    theirs = sklearn_export_text(clf, show_weights=show_weights, max_depth=max_depth)
    assert ours == theirs
    # the same tree through greedy.Tree, with its NaN routing (sklearn >= 1.4 routes NaN at every split) shown
    annotated = optitree.export_text(Tree.from_sklearn(clf), feature_names=names, class_names=clf.classes_,
                                     show_weights=show_weights, max_depth=max_depth)
    stripped = [line.split("  (NaN")[0] for line in annotated.splitlines()]
    assert stripped == theirs.splitlines()


def test_export_text_matches_sklearn_regressor():
    X, y = load_diabetes(return_X_y=True)
    reg = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y)
    names = [f"feature_{j}" for j in range(10)]
    assert optitree.export_text(reg, feature_names=names, decimals=3, show_missing=False) == sklearn_export_text(
        reg, decimals=3)


def test_feature_and_class_names_flow_from_estimators():
    pytest.importorskip("pandas")
    X, y = load_iris(return_X_y=True, as_frame=True)
    labels = np.array(["setosa", "versicolor", "virginica"])[y]
    clf = DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, labels)
    text = optitree.export_text(clf, show_missing=False)
    assert text == sklearn_export_text(clf, feature_names=list(X.columns))  # we default to feature_names_in_
    assert "petal" in text and "class: setosa" in text
    dot = optitree.export_graphviz(clf)
    assert "petal width (cm) <= 0.8" in dot and "class = setosa" in dot

    class FittedByUs:  # an optitree-style estimator whose tree_ is a greedy.Tree
        tree_ = xor_tree()
        feature_names_in_ = np.array(["left", "right"])
        classes_ = np.array(["no", "yes"])

    expected_head = "|--- left <= 0.50\n|   |--- right <= 0.25\n|   |   |--- class: no\n"
    assert optitree.export_text(FittedByUs()).startswith(expected_head)


def test_bad_inputs():
    with pytest.raises(ValueError, match="feature_names has 3 entries, the tree has 2 features"):
        optitree.export_text(xor_tree(), feature_names=["a", "b", "c"])
    with pytest.raises(ValueError, match="class_names has 3 entries, the tree has 2 classes"):
        optitree.export_graphviz(xor_tree(), class_names=["a", "b", "c"])
    with pytest.raises(TypeError, match="greedy.Tree or a fitted tree estimator"):
        optitree.export_text(np.zeros(3))
    with pytest.raises(ValueError, match="category_names key 'shade'"):
        optitree.export_text(special_tree(), category_names={"shade": ["x"]})


# ---------------------------------------------------------------- export_graphviz


XOR_DOT = """digraph Tree {
node [shape=box, fontname="helvetica"] ;
edge [fontname="helvetica"] ;
0 [label="a <= 0.5\\nimpurity = 0.5\\nsamples = 8\\nvalue = [4, 4]\\nclass = no"] ;
1 [label="b <= 0.25\\nimpurity = 0.5\\nsamples = 4\\nvalue = [2, 2]\\nclass = no"] ;
0 -> 1 [labeldistance=2.5, labelangle=45, headlabel="True"] ;
3 [label="impurity = 0.0\\nsamples = 2\\nvalue = [2, 0]\\nclass = no"] ;
1 -> 3 ;
4 [label="impurity = 0.0\\nsamples = 2\\nvalue = [0, 2]\\nclass = yes"] ;
1 -> 4 ;
2 [label="b <= 0.75\\nimpurity = 0.5\\nsamples = 4\\nvalue = [2, 2]\\nclass = no"] ;
0 -> 2 [labeldistance=2.5, labelangle=-45, headlabel="False"] ;
5 [label="impurity = 0.0\\nsamples = 2\\nvalue = [0, 2]\\nclass = yes"] ;
2 -> 5 ;
6 [label="impurity = 0.0\\nsamples = 2\\nvalue = [2, 0]\\nclass = no"] ;
2 -> 6 ;
}
"""


def test_export_graphviz_golden_xor():
    assert optitree.export_graphviz(xor_tree(), feature_names=["a", "b"], class_names=["no", "yes"]) == XOR_DOT


def test_export_graphviz_golden_special_nodes():
    dot = optitree.export_graphviz(special_tree(), feature_names=["a", "b", "color"], class_names=["no", "yes"],
                                   impurity=False)
    assert dot.splitlines()[3:6] == [
        '0 [label="color in {0, 2}\\nNaN → right\\nsamples = 60\\nvalue = [30, 30]\\nclass = no"] ;',
        '1 [label="0.5·a − 1.0·b <= 0.3\\nNaN → right\\nsamples = 25\\nvalue = [20, 5]\\nclass = no"] ;',
        '0 -> 1 [labeldistance=2.5, labelangle=45, headlabel="True"] ;',
    ]
    assert '2 [label="a <= 0.5\\nNaN → left 60%\\nsamples = 35\\nvalue = [10, 25]\\nclass = yes"] ;' in dot
    leaves = optitree.export_graphviz(linear_leaf_tree(), impurity=False, node_ids=True)
    assert '1 [label="node #1\\nsamples = 4\\ny = 1.2 + 0.5·x0"] ;' in leaves
    assert '2 [label="node #2\\nsamples = 6\\ny = −2.0 − 1.5·x1"] ;' in leaves


def test_export_graphviz_filled_proportion_and_quoting():
    dot = optitree.export_graphviz(xor_tree(), filled=True, rounded=True, proportion=True, impurity=False)
    assert 'node [shape=box, style="filled, rounded", color="black", fontname="helvetica"] ;' in dot
    # class 0's colour is HSV(25°, 0.75, 0.9) = (230, 129, 57); a 50/50 node fades to white
    assert '3 [label="samples = 25.0%\\nvalue = [1, 0]\\nclass = 0", fillcolor="#e68139"] ;' in dot
    assert '0 [label="x0 <= 0.5\\nsamples = 100.0%\\nvalue = [0.5, 0.5]\\nclass = 0", fillcolor="#ffffff"] ;' in dot
    quoted = optitree.export_graphviz(xor_tree(), feature_names=['say "hi"', "b"])
    assert '0 [label="say \\"hi\\" <= 0.5' in quoted


def test_exports_show_a_leaf_label_that_overrides_the_majority():
    tree = Tree.from_dict({**xor_tree().to_dict(), "leaf_class": [0, 0, 0, 1, 1, 1, 0]})  # leaf 3: [2, 0], class 1
    assert optitree.export_text(tree).splitlines()[2] == "|   |   |--- class: 1"
    assert '3 [label="impurity = 0.0\\nsamples = 2\\nvalue = [2, 0]\\nclass = 1"] ;' in optitree.export_graphviz(tree)


def test_export_graphviz_out_file(tmp_path, monkeypatch):
    tree = xor_tree()
    dot = optitree.export_graphviz(tree, out_file=tmp_path / "t.dot")
    assert (tmp_path / "t.dot").read_text(encoding="utf-8") == dot
    buffer = io.StringIO()
    optitree.export_graphviz(tree, out_file=buffer)
    assert buffer.getvalue() == dot

    monkeypatch.setitem(sys.modules, "graphviz", None)  # not installed
    with pytest.warns(UserWarning, match="graphviz Python package is not installed.*t2.dot"):
        optitree.export_graphviz(tree, out_file=tmp_path / "t2.png")
    assert (tmp_path / "t2.dot").read_text(encoding="utf-8") == dot and not (tmp_path / "t2.png").exists()

    rendered = []

    class Source:
        def __init__(self, source):
            self.source = source

        def render(self, outfile, format, cleanup):
            rendered.append((self.source, outfile, format))

    monkeypatch.setitem(sys.modules, "graphviz", types.SimpleNamespace(Source=Source))
    optitree.export_graphviz(tree, out_file=str(tmp_path / "t3.svg"))
    assert rendered == [(dot, str(tmp_path / "t3.svg"), "svg")]


def test_nan_notes_only_where_the_training_data_brought_nan():
    # issue 25: a greedy tree grown with NaN in one feature annotated every split with a NaN routing
    from sklearn.datasets import load_iris

    from greedy import CARTClassifier

    X, y = load_iris(return_X_y=True)
    X[[60, 70], 3] = np.nan  # petal width missing for two versicolor rows (they reach the petal-width split)
    clf = CARTClassifier(max_depth=2).fit(X, y)
    text = optitree.export_text(clf)
    lines = [line for line in text.splitlines() if "<=" in line or ">" in line]
    assert lines[0].startswith("|--- x2") and "NaN" not in lines[0]  # petal length: no NaN in training
    assert any("x3" in line and "NaN" in line for line in lines)  # petal width: NaN seen
    assert "NaN" not in optitree.export_text(clf, show_missing=False)
    # without the training record (a bare Tree), every split keeps its routing
    assert optitree.export_text(clf.tree_).count("NaN") == 2 * clf.tree_.n_splits
    dot = optitree.export_graphviz(clf)
    assert dot.count("NaN") == sum("NaN" in line for line in lines) // 2


def test_a_missing_vs_not_split_reads_as_nan_or_not():
    # NaN alone separates the classes: the split sends every number left and NaN right (threshold: the largest float)
    X = np.r_[np.arange(6.0), [np.nan] * 4][:, None]
    y = np.r_[[0] * 6, [1] * 4]
    clf = optitree.OptimalTreeClassifier(max_depth=1).fit(X, y)
    assert clf.score(X, y) == 1.0
    assert optitree.export_text(clf, feature_names=["x"]) == (
        "|--- x is not NaN\n"
        "|   |--- class: 0\n"
        "|--- x is NaN  (NaN → right)\n"
        "|   |--- class: 1\n")
