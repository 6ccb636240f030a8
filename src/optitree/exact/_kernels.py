"""The exact engine's kernels: the compiled core (C++, ``cpp/``) as the search calls it.

Conventions shared by every kernel:

* ``rank[f, i]`` is the dense rank of sample ``i`` on feature ``f`` (0 = smallest value);
  a split ``(f, r)`` sends sample ``i`` left when ``rank[f, i] <= r``;
* a sample set is a *view* ``srt`` of shape ``(p, m)``: row ``f`` lists the set's sample
  indices sorted by ``rank[f]`` (ties in one fixed global order, so the view of a set is
  unique whatever path produced it);
* costs are the loss of the leaves plus ``alpha`` per split; ``min_leaf`` counts rows.

The loss policy (``loss``, one code per loss) decides only what a set of rows costs as a leaf:

=====================  =================================  ===========================================
``loss``               row statistics accumulated         cost of a leaf holding a set ``A``
=====================  =================================  ===========================================
``MISCLASSIFICATION``  ``w_i`` into class ``y_i``         ``W(A) - max_k W_k(A)``
``SQUARED``            ``(w_i, w_i t_i, w_i t_i^2)``      ``Σ w t² - (Σ w t)² / Σ w`` (mean leaf)
``ABSOLUTE``           Fenwick trees over target ranks    ``Σ w_i |t_i - median_w(A)|`` (median leaf)
=====================  =================================  ===========================================

``t`` is the scaled target (``stats[:, 3]``; ``stats`` holds ``w, w t, w t^2, t`` per row for
regression). Every bound of the search rests on two facts that hold for all three losses:

* **monotone**: ``OPT_d(A) <= OPT_d(B)`` for ``A ⊆ B`` (without a minimum leaf size);
* **similarity**: ``OPT_d(A ∪ {i}) <= OPT_d(A) + dist_i``: keep ``A``'s optimal tree and its
  leaf predictions, the new row costs at most ``dist_i`` (``w_i`` for misclassification,
  ``w_i max(t_i - lo, hi - t_i)^q`` for regression targets in ``[lo, hi]``, ``q = 2`` squared,
  ``1`` absolute).

The kernels run inside the compiled search (``cpp/search.hpp``); Python calls only the loss codes,
the split candidates and the partition (the anytime bounds of :mod:`optitree.exact._anytime`).
Every binding releases the GIL.
"""

from ._core import ABSOLUTE, EPS, MISCLASSIFICATION, SQUARED, candidates, partition  # noqa: F401 (K.*)
