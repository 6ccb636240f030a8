"""Views of a fitted tree: text and Graphviz export, tree, decision-region and progress plots.

matplotlib is imported only when a plot function is called.
"""

from ._export import export_graphviz, export_text
from ._plot import plot_decision_regions, plot_progress, plot_tree

__all__ = ["export_text", "export_graphviz", "plot_tree", "plot_progress", "plot_decision_regions"]
