"""Text and Graphviz exports of any :class:`greedy.Tree` (greedy, MIP or imported scikit-learn trees).

Conditions are written from the tree's own fields:

* threshold split: ``x0 <= 0.50`` / ``x0 >  0.50`` (left branch is ``<=``);
* categorical subset split: ``color in {0, 2}`` / ``color not in {0, 2}``. The
  branch that also receives unseen codes (``default_left``) is the one phrased
  ``not in``, so each phrase is exactly the routing rule;
* threshold on ordinal category codes (pandas categorical columns of the optimal
  estimators, or ``category_names``): ``color in {red, green}`` / ``color not in {red, green}``;
* oblique split: ``0.50·x0 − 1.00·x1 <= 0.30``;
* "missing vs not" (the split space's threshold at the largest float, NaN right):
  ``x0 is not NaN`` / ``x0 is NaN``;
* missing-value routing: ``NaN → left 60%`` (the share of a NaN sample's weight
  sent left, ``missing_left``);
* linear leaf: ``y = 1.20 + 0.50·x0``.
"""

from __future__ import annotations

import colorsys
import io
import os
import warnings
from pathlib import Path

import numpy as np

from greedy import OBLIQUE, Tree

from ..split_space import NOT_MISSING_THRESHOLD

__all__ = ["export_text", "export_graphviz"]

MINUS = "\u2212"  # typographic minus between terms of a linear expression
TIMES = "\u00b7"
ARROW = "\u2192"


# ---------------------------------------------------------------- inputs


def resolve_tree(tree_or_estimator, feature_names=None, class_names=None):
    """Return ``(tree, feature_names, class_names, criterion)`` for a Tree or a fitted estimator.

    An estimator's ``tree_`` may be a :class:`greedy.Tree` or a scikit-learn tree
    (converted with :meth:`Tree.from_sklearn`). Names default to the estimator's
    ``feature_names_in_`` / ``classes_``, else ``x0, x1, ...`` and class indices.
    ``class_names`` is ignored for regression trees.
    """
    estimator = None
    if isinstance(tree_or_estimator, Tree):
        tree = tree_or_estimator
    elif hasattr(tree_or_estimator, "tree_"):
        estimator = tree_or_estimator
        tree = estimator.tree_ if isinstance(estimator.tree_, Tree) else Tree.from_sklearn(estimator)
    else:
        raise TypeError(
            f"expected a greedy.Tree or a fitted tree estimator with a tree_ attribute, "
            f"got {type(tree_or_estimator).__name__}"
        )
    if feature_names is None and estimator is not None and hasattr(estimator, "feature_names_in_"):
        feature_names = estimator.feature_names_in_
    if feature_names is None:
        feature_names = [f"x{j}" for j in range(tree.n_features)]
    feature_names = [str(f) for f in feature_names]
    if len(feature_names) != tree.n_features:
        raise ValueError(f"feature_names has {len(feature_names)} entries, the tree has {tree.n_features} features")
    if tree.task == "classification":
        if class_names is None and estimator is not None and hasattr(estimator, "classes_"):
            class_names = estimator.classes_
        if class_names is None:
            class_names = range(tree.n_classes)
        class_names = [str(c) for c in class_names]
        if len(class_names) != tree.n_classes:
            raise ValueError(f"class_names has {len(class_names)} entries, the tree has {tree.n_classes} classes")
    else:
        class_names = None
    criterion = getattr(estimator, "criterion", None)
    return tree, feature_names, class_names, criterion if isinstance(criterion, str) else "impurity"


def _category_labels(category_names, feature_names, tree_or_estimator=None):
    """Normalise ``category_names`` ({feature index or name: labels}) to {feature index: labels}.

    An estimator's own categories come first (``categories_`` of the optimal estimators, the
    pandas categories of a greedy CART fit); ``category_names`` overrides them per feature.
    """
    known = getattr(tree_or_estimator, "categories_", None) or getattr(tree_or_estimator, "_pandas_categories", {})
    out = {int(j): [str(v) for v in labels] for j, labels in known.items()}
    for key, labels in (category_names or {}).items():
        j = feature_names.index(key) if isinstance(key, str) and key in feature_names else key
        if not isinstance(j, (int, np.integer)) or not 0 <= j < len(feature_names):
            raise ValueError(f"category_names key {key!r} is neither a feature index nor a feature name")
        out[int(j)] = [str(v) for v in labels]
    return out


# ---------------------------------------------------------------- conditions


def _fixed(decimals: int):
    return lambda v: f"{v:.{decimals}f}"


def _rounded(precision: int):
    """scikit-learn's graphviz style: ``str(round(v, precision))``."""
    return lambda v: str(round(float(v), precision))


def linear_expression(coef, names, fmt, intercept=None) -> str:
    """``1.20 + 0.50·x0 − 1.00·x1`` (zero terms dropped; ``−`` for negatives)."""
    terms = [] if intercept is None else [(float(intercept), "")]
    terms += [(float(c), f"{TIMES}{n}") for c, n in zip(coef, names) if c != 0]
    if not terms:
        return fmt(0.0)
    parts = []
    for k, (c, name) in enumerate(terms):
        sign = MINUS if c < 0 else "+"
        body = f"{fmt(abs(c))}{name}"
        parts.append((MINUS + body if c < 0 else body) if k == 0 else f" {sign} {body}")
    return "".join(parts)


def split_conditions(tree: Tree, node: int, feature_names, fmt, categories=None) -> tuple[str, str]:
    """Left and right branch conditions of internal ``node``; ``fmt`` formats numbers."""
    f = tree.feature[node]
    if tree.categorical_nodes[node]:
        name = feature_names[f]
        mask = tree.category_left[node]
        labels = (categories or {}).get(int(f))

        def show(codes):
            return "{" + ", ".join(labels[c] if labels and c < len(labels) else str(c) for c in codes) + "}"

        left, right = show(np.flatnonzero(mask)), show(np.flatnonzero(~mask))
        if tree.default_left[node]:  # unseen codes go left: left is "not in <right set>"
            return f"{name} not in {right}", f"{name} in {right}"
        return f"{name} in {left}", f"{name} not in {left}"
    labels = (categories or {}).get(int(f))
    if labels:  # a threshold on ordinal category codes (optitree.estimators._inputs): codes <= t go left
        left = "{" + ", ".join(labels[:max(int(np.floor(tree.threshold[node])) + 1, 0)]) + "}"
        return f"{feature_names[f]} in {left}", f"{feature_names[f]} not in {left}"
    lhs = linear_expression(tree.split_coef[node], feature_names, fmt) if f == OBLIQUE else feature_names[f]
    if f != OBLIQUE and tree.threshold[node] == NOT_MISSING_THRESHOLD:  # every number left (optitree.split_space)
        if tree.missing_left is not None and tree.missing_left[node] == 0:
            return f"{lhs} is not NaN", f"{lhs} is NaN"
        return f"{lhs} <= {NOT_MISSING_THRESHOLD:.4g}", f"{lhs} >  {NOT_MISSING_THRESHOLD:.4g}"
    t = fmt(tree.threshold[node])
    return f"{lhs} <= {t}", f"{lhs} >  {t}"


def missing_shown(tree_or_estimator, tree: Tree, show_missing) -> np.ndarray:
    """Per node: print its NaN routing. ``show_missing`` False: nowhere. True: where the training
    data reached the split with NaN (a greedy estimator's record), or at every split of a tree
    without that record (a bare Tree, a scikit-learn tree)."""
    if isinstance(show_missing, np.ndarray):
        return show_missing
    if not show_missing or tree.missing_left is None:
        return np.zeros(tree.node_count, bool)
    seen = getattr(tree_or_estimator, "_nan_seen", None)
    if seen is None or getattr(tree_or_estimator, "tree_", None) is not tree or len(seen) != tree.node_count:
        return np.ones(tree.node_count, bool)
    return np.asarray(seen, bool)


def missing_routing(tree: Tree, node: int) -> tuple[str, str] | None:
    """``("NaN → left 60%", "NaN → right 40%")``; a side with no NaN weight gets ``""``. None without routing."""
    if tree.missing_left is None:
        return None
    p = float(tree.missing_left[node])

    def side(share, name):
        if share <= 0:
            return ""
        return f"NaN {ARROW} {name}" + ("" if share >= 1 else f" {share:.0%}")

    return side(p, "left"), side(1 - p, "right")


def leaf_model(tree: Tree, node: int, feature_names, fmt) -> str | None:
    """``y = 1.20 + 0.50·x0`` for a linear leaf, else None."""
    if tree.leaf_coef is None:
        return None
    return "y = " + linear_expression(tree.leaf_coef[node], feature_names, fmt, tree.leaf_intercept[node])


# ---------------------------------------------------------------- export_text


def export_text(tree_or_estimator, feature_names=None, class_names=None, decimals=2, show_weights=False,
                max_depth=10, category_names=None, show_missing=True) -> str:
    """Text rendering of a tree in the style of ``sklearn.tree.export_text``.

    Parameters
    ----------
    tree_or_estimator : greedy.Tree or fitted estimator with ``tree_``
    feature_names, class_names : sequence of str, optional
        Default: the estimator's ``feature_names_in_`` / ``classes_``, else
        ``x0, x1, ...`` and class indices.
    decimals : int
        Digits after the point for thresholds, weights, values and coefficients.
    show_weights : bool
        Print the weighted class counts at classification leaves.
    max_depth : int
        Subtrees deeper than this are summarised as ``truncated branch of depth d``.
    category_names : dict, optional
        ``{feature index or name: labels}`` to print categorical codes as labels
        (e.g. ``info["categories"]`` of :mod:`optitree.datasets`); a threshold on such
        codes is printed as the set of labels below it (``color in {red, green}``).
        Default: the estimator's pandas categories (``categories_`` of the optimal
        estimators); given names override them per feature.
    show_missing : bool
        Annotate the branches with the tree's missing-value routing. Trees imported
        from scikit-learn >= 1.4 route NaN at every split (to the larger child when
        training saw none), so they carry it everywhere; ``False`` hides it.

    Notes
    -----
    On a plain axis-aligned tree the output equals scikit-learn's except that the
    default feature names are ``x0, x1, ...`` (scikit-learn: ``feature_0``).
    Categorical, oblique, missing-value and linear-leaf nodes are written as in
    the module docstring; missing-value routing is appended to the branch lines
    in parentheses.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from greedy import CARTClassifier
    >>> from optitree import export_text
    >>> iris = load_iris()
    >>> clf = CARTClassifier(max_depth=2, random_state=0).fit(iris.data, iris.target)
    >>> print(export_text(clf, feature_names=iris.feature_names, show_missing=False))
    |--- petal length (cm) <= 2.45
    |   |--- class: 0
    |--- petal length (cm) >  2.45
    |   |--- petal width (cm) <= 1.75
    |   |   |--- class: 1
    |   |--- petal width (cm) >  1.75
    |   |   |--- class: 2
    <BLANKLINE>
    """
    tree, names, classes, _ = resolve_tree(tree_or_estimator, feature_names, class_names)
    categories = _category_labels(category_names, names, tree_or_estimator)
    fmt = _fixed(decimals)
    depth_below = _subtree_depths(tree)
    shown = missing_shown(tree_or_estimator, tree, show_missing)
    lines = []

    def leaf_line(node, indent):
        model = leaf_model(tree, node, names, fmt)
        if model is not None:
            return f"{indent} {model}"
        value = tree.value[node]
        if tree.task == "regression":
            return f"{indent} value: [{fmt(value[0])}]"
        label = f" class: {classes[int(tree.node_class[node])]}"
        if show_weights:
            return f"{indent} weights: [{', '.join(fmt(v) for v in value)}]{label}"
        return f"{indent}{label}"

    def recurse(node, depth):
        indent = ("|" + " " * 3) * depth
        indent = indent[:-3] + "-" * 3
        if depth > max_depth + 1:
            if depth_below[node] == 0:
                lines.append(leaf_line(node, indent))
            else:
                lines.append(f"{indent} truncated branch of depth {depth_below[node] + 1}")
            return
        if tree.is_leaf[node]:
            lines.append(leaf_line(node, indent))
            return
        conditions = split_conditions(tree, node, names, fmt, categories)
        nan = (missing_routing(tree, node) if shown[node] else None) or ("", "")
        for condition, note, child in zip(conditions, nan, (tree.children_left[node], tree.children_right[node])):
            lines.append(f"{indent} {condition}" + (f"  ({note})" if note else ""))
            recurse(child, depth + 1)

    recurse(0, 1)
    return "\n".join(lines) + "\n"


def _subtree_depths(tree: Tree) -> np.ndarray:
    """Height of the subtree below every node (0 at leaves)."""
    height = np.zeros(tree.node_count, np.intp)
    for node in np.flatnonzero(~tree.is_leaf)[::-1]:  # children have larger ids than parents
        height[node] = 1 + max(height[tree.children_left[node]], height[tree.children_right[node]])
    return height


# ---------------------------------------------------------------- node labels and colours (shared with plots)


def class_colors(n: int) -> np.ndarray:
    """``n`` RGB colours (rows in [0, 1]) with equally spaced hues, starting at orange."""
    hues = (25 + 360.0 * np.arange(n) / max(n, 1)) / 360.0 % 1.0
    return np.array([colorsys.hsv_to_rgb(h, 0.75, 0.9) for h in hues]).reshape(n, 3)


def node_fill_colors(tree: Tree) -> np.ndarray:
    """RGB fill per node: the majority class's colour (value's extreme for regression), faded
    toward white by purity ``alpha = (p1 - p2) / (1 - p2)`` (p1, p2 the two largest class shares)."""
    if tree.task == "classification":
        proba = tree.node_proba
        top = np.sort(proba, axis=1)[:, ::-1]
        second = top[:, 1] if proba.shape[1] > 1 else np.zeros(tree.node_count)
        alpha = np.divide(top[:, 0] - second, 1 - second, out=np.ones(tree.node_count), where=second < 1)
        base = class_colors(proba.shape[1])[np.argmax(proba, axis=1)]
    else:
        v = tree.value[:, 0]
        span = v.max() - v.min()
        alpha = (v - v.min()) / span if span > 0 else np.ones(tree.node_count)
        base = np.tile(class_colors(1), (tree.node_count, 1))
    alpha = np.clip(alpha, 0, 1)[:, None]
    return alpha * base + (1 - alpha) * 1.0


def _hex(rgb) -> str:
    return "#" + "".join(f"{int(round(255 * c)):02x}" for c in rgb)


def node_label_lines(tree: Tree, node: int, feature_names, class_names, criterion="impurity", *, precision=3,
                     impurity=True, node_ids=False, proportion=False, categories=None,
                     show_missing=True) -> list[str]:
    """Lines of one node's box: id, split, NaN routing, impurity, samples, value, class / model."""
    fmt = _rounded(precision)
    lines = [f"node #{node}"] if node_ids else []
    if not tree.is_leaf[node]:
        lines.append(split_conditions(tree, node, feature_names, fmt, categories)[0])
        show = show_missing[node] if isinstance(show_missing, np.ndarray) else show_missing
        routing = missing_routing(tree, node) if show else None
        if routing is not None:
            share = float(tree.missing_left[node])
            lines.append(f"NaN {ARROW} left {share:.0%}" if 0 < share < 1 else (routing[0] or routing[1]))
    if impurity:
        lines.append(f"{criterion} = {fmt(tree.impurity[node])}")
    if proportion:
        total = tree.weighted_n_node_samples[0] or 1.0
        lines.append(f"samples = {100 * tree.weighted_n_node_samples[node] / total:.1f}%")
    else:
        lines.append(f"samples = {int(tree.n_node_samples[node])}")
    value = tree.value[node]
    model = leaf_model(tree, node, feature_names, fmt) if tree.is_leaf[node] else None
    if model is not None:
        lines.append(model)
    elif tree.task == "regression":
        lines.append(f"value = {fmt(value[0])}")
    else:
        shown = value / value.sum() if proportion and value.sum() > 0 else value
        if np.all(shown == np.round(shown)):
            text = ", ".join(str(int(v)) for v in shown)
        else:
            text = ", ".join(fmt(v) for v in shown)
        lines.append(f"value = [{text}]")
        lines.append(f"class = {class_names[int(tree.node_class[node])]}")
    return lines


# ---------------------------------------------------------------- export_graphviz


def _dot_quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def export_graphviz(tree_or_estimator, out_file=None, feature_names=None, class_names=None, filled=False,
                    impurity=True, node_ids=False, proportion=False, rounded=False, precision=3,
                    category_names=None, show_missing=True) -> str:
    """DOT source of a tree, in the style of ``sklearn.tree.export_graphviz``.

    Parameters
    ----------
    tree_or_estimator : greedy.Tree or fitted estimator with ``tree_``
    out_file : str, Path or file-like, optional
        ``.png``/``.pdf``/``.svg``: rendered with the ``graphviz`` Python package
        (and its ``dot`` program) when available, otherwise the DOT text is written
        beside it as ``<name>.dot`` with a warning. Any other path, or a file-like
        object, receives the DOT text.
    feature_names, class_names : sequence of str, optional
        As in :func:`export_text`.
    filled : bool
        Colour nodes by majority class (regression: by value), faded by purity.
    impurity, node_ids, proportion, rounded, precision
        As in scikit-learn: show impurity, node ids, sample shares instead of
        counts, rounded boxes; significant rounding of numbers.
    category_names, show_missing
        As in :func:`export_text`.

    Returns
    -------
    str
        The DOT source (always, whatever ``out_file`` is).
    """
    tree, names, classes, criterion = resolve_tree(tree_or_estimator, feature_names, class_names)
    show_missing = missing_shown(tree_or_estimator, tree, show_missing)
    categories = _category_labels(category_names, names, tree_or_estimator)
    colors = node_fill_colors(tree) if filled else None
    style = [s for s, on in (("filled", filled), ("rounded", rounded)) if on]
    node_attrs = "shape=box" + (f', style="{", ".join(style)}", color="black"' if style else "")
    out = io.StringIO()
    out.write("digraph Tree {\n")
    out.write(f'node [{node_attrs}, fontname="helvetica"] ;\n')
    out.write('edge [fontname="helvetica"] ;\n')

    def write(node, parent):
        lines = node_label_lines(tree, node, names, classes, criterion, precision=precision, impurity=impurity,
                                 node_ids=node_ids, proportion=proportion, categories=categories,
                                 show_missing=show_missing)
        label = "\\n".join(_dot_quote(s) for s in lines)
        fill = f', fillcolor="{_hex(colors[node])}"' if filled else ""
        out.write(f'{node} [label="{label}"{fill}] ;\n')
        if parent is not None:
            if parent == 0:
                is_left = node == tree.children_left[0]
                angle, head = (45, "True") if is_left else (-45, "False")
                out.write(f'0 -> {node} [labeldistance=2.5, labelangle={angle}, headlabel="{head}"] ;\n')
            else:
                out.write(f"{parent} -> {node} ;\n")
        if not tree.is_leaf[node]:
            write(int(tree.children_left[node]), node)
            write(int(tree.children_right[node]), node)

    write(0, None)
    out.write("}\n")
    dot = out.getvalue()
    if out_file is not None:
        _write_dot(dot, out_file)
    return dot


def _write_dot(dot: str, out_file) -> None:
    if hasattr(out_file, "write"):
        out_file.write(dot)
        return
    path = Path(os.fspath(out_file))
    fmt = path.suffix.lower().lstrip(".")
    if fmt in ("png", "pdf", "svg"):
        try:
            import graphviz

            graphviz.Source(dot).render(outfile=str(path), format=fmt, cleanup=True)
            return
        except ImportError:
            reason = "the graphviz Python package is not installed (pip install graphviz)"
        except Exception as exc:  # graphviz.ExecutableNotFound and rendering errors
            reason = f"graphviz could not render it ({type(exc).__name__}: {exc})"
        dot_path = path.with_suffix(".dot")
        warnings.warn(f"cannot write {path}: {reason}; wrote the DOT source to {dot_path}", stacklevel=3)
        path = dot_path
    path.write_text(dot, encoding="utf-8")
