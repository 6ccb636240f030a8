// Python bindings of the engine's compiled core: optitree.exact._core.
//
// Every kernel runs with the GIL released. Arrays come in as C-contiguous numpy arrays (a
// non-contiguous or other-typed input is converted); arrays the search updates in place
// (shrink, fill_bounds) are never converted. Layout, Scratch and TargetOrder are opaque: the
// search only hands them back to depth1_pair.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/tuple.h>

#include <stdexcept>
#include <string>

#include "pairs.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using namespace optitree;

namespace {

template <class T>
using In1 = nb::ndarray<const T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
template <class T>
using In2 = nb::ndarray<const T, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using Out1 = nb::ndarray<double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
template <class T>
using NumpyArray = nb::ndarray<nb::numpy, T>;

template <class T>
View as_mat(const In2<T> &a) {
    return {a.data(), static_cast<int64_t>(a.shape(0)), static_cast<int64_t>(a.shape(1))};
}

Allowed as_allowed(const In2<bool> &a) {
    return {a.data(), static_cast<int64_t>(a.shape(0)), static_cast<int64_t>(a.shape(1))};
}

void check_loss(int loss) {
    if (loss < MISCLASSIFICATION || loss > ABSOLUTE)
        throw nb::value_error(("unknown loss code " + std::to_string(loss)).c_str());
}

Targets targets(const In1<int32_t> &y, const In1<double> &w, const In2<double> &stats, int loss, int64_t width) {
    check_loss(loss);
    return Targets{y.data(), w.data(), stats.data(), loss, width};
}

// Run f with the loss a compile-time constant.
template <class F>
decltype(auto) with_loss(int loss, F &&f) {
    switch (loss) {
        case MISCLASSIFICATION: return f(std::integral_constant<int, MISCLASSIFICATION>{});
        case SQUARED: return f(std::integral_constant<int, SQUARED>{});
        default: return f(std::integral_constant<int, ABSOLUTE>{});
    }
}

// A numpy array owning a moved vector.
template <class T>
NumpyArray<T> to_numpy(std::vector<T> &&values, std::initializer_list<size_t> shape) {
    auto *owned = new std::vector<T>(std::move(values));
    nb::capsule owner(owned, [](void *p) noexcept { delete static_cast<std::vector<T> *>(p); });
    return NumpyArray<T>(owned->data(), shape, owner);
}

nb::tuple nodes_tuple(const int64_t *nodes) {
    return nb::make_tuple(nodes[0], nodes[1], nodes[2], nodes[3], nodes[4], nodes[5]);
}

}  // namespace

NB_MODULE(_core, m) {
    m.doc() = "The exact engine's compiled kernels (C++): depth-1/2 solvers, sweeps, bounds, partitions.";
    m.attr("EPS") = EPS;
    m.attr("MISCLASSIFICATION") = int(MISCLASSIFICATION);
    m.attr("SQUARED") = int(SQUARED);
    m.attr("ABSOLUTE") = int(ABSOLUTE);

    nb::class_<Layout>(m, "Layout", "A view's ranks, classes and weights copied in its order (opaque).");
    nb::class_<Scratch>(m, "Scratch", "Buffers of the depth-1 sweeps (opaque).");
    nb::class_<TargetOrder>(m, "TargetOrder", "Target ranks of a view's rows for absolute error (opaque).");

    m.def("leaf_cost",
          [](In1<int32_t> rows, In1<int32_t> y, In1<double> w, In2<double> stats, int loss, int64_t width) {
              Targets d = targets(y, w, stats, loss, width);
              nb::gil_scoped_release release;
              return leaf_cost(rows.data(), static_cast<int64_t>(rows.shape(0)), d);
          },
          "rows"_a, "y"_a, "w"_a, "stats"_a, "loss"_a, "width"_a, "Cost of one leaf holding ``rows``.");

    m.def("target_order",
          [](In1<int32_t> rows, In2<double> stats, int loss, int64_t n_total) {
              check_loss(loss);
              Targets d{nullptr, nullptr, stats.data(), loss, 0};
              nb::gil_scoped_release release;
              return target_order(rows.data(), static_cast<int64_t>(rows.shape(0)), d, n_total);
          },
          "rows"_a, "stats"_a, "loss"_a, "n_total"_a,
          "The target ranks of a view's rows (absolute error; empty otherwise), once per view.");

    m.def("layout",
          [](In2<int32_t> srt, In2<int32_t> rank, In1<int32_t> y, In1<double> w) {
              Targets d{y.data(), w.data(), nullptr, MISCLASSIFICATION, 0};
              nb::gil_scoped_release release;
              return make_layout(as_mat(srt), as_mat(rank), d);
          },
          "srt"_a, "rank"_a, "y"_a, "w"_a, "The view's ranks, classes and weights in its order.");

    m.def("scratch", [](int64_t rows) { return Scratch(rows); }, "rows"_a,
          "Buffers of the depth-1 sweeps for views of up to ``rows`` rows.");

    m.def("positions",
          [](In2<int32_t> srt, int64_t feature, int64_t n_total) {
              Buffer<int32_t> key;
              {
                  nb::gil_scoped_release release;
                  key = positions(as_mat(srt), feature, n_total);
              }
              return to_numpy(std::move(key.store), {size_t(key.rows), size_t(key.cols)});
          },
          "srt"_a, "feature"_a, "n_total"_a,
          "``key[g, t]``: the position of row ``srt[g, t]`` in ``srt[feature]``.");

    m.def("candidates",
          [](In2<int32_t> srt, In2<int32_t> rank, In1<double> w, In2<double> stats, int loss, int64_t feature,
             int64_t min_leaf) {
              check_loss(loss);
              Targets d{nullptr, w.data(), stats.data(), loss, 0};
              Candidates c;
              {
                  nb::gil_scoped_release release;
                  c = candidates(as_mat(srt), as_mat(rank), d, feature, min_leaf);
              }
              size_t T = c.n_left.size();
              return std::make_tuple(to_numpy(std::move(c.rank_threshold), {T}), to_numpy(std::move(c.n_left), {T}),
                                     to_numpy(std::move(c.dist_left), {T}));
          },
          "srt"_a, "rank"_a, "w"_a, "stats"_a, "loss"_a, "feature"_a, "min_leaf"_a,
          "Thresholds of ``feature`` leaving ``>= min_leaf`` rows each side: ``(rank_threshold, n_left, "
          "dist_left)``.");

    m.def("partition",
          [](In2<int32_t> srt, In1<int32_t> rank_row, int64_t split_rank, int64_t n_left) {
              const int64_t p = srt.shape(0), rows = srt.shape(1);
              if (n_left < 0 || n_left > rows) throw nb::value_error("n_left outside the view");
              std::vector<int32_t> left(size_t(p * n_left)), right(size_t(p * (rows - n_left)));
              {
                  nb::gil_scoped_release release;
                  partition(as_mat(srt), rank_row.data(), split_rank, left.data(), right.data(), n_left);
              }
              return std::make_tuple(to_numpy(std::move(left), {size_t(p), size_t(n_left)}),
                                     to_numpy(std::move(right), {size_t(p), size_t(rows - n_left)}));
          },
          "srt"_a, "rank_row"_a, "split_rank"_a, "n_left"_a,
          "Views of the two sides of the split ``rank_row[i] <= split_rank`` (order kept).");

    auto neighbours = [](const In1<double> &dist_left, const In1<double> &ev_left, const In1<double> &ev_right,
                         bool monotone) {
        return Neighbours{dist_left.data(), ev_left.data(), ev_right.data(), int64_t(dist_left.shape(0)), monotone};
    };

    m.def("point_bounds",
          [neighbours](int64_t j, int64_t a, int64_t b, In1<double> dist_left, In1<double> ev_left,
                       In1<double> ev_right, bool monotone) {
              return neighbours(dist_left, ev_left, ev_right, monotone).point_bounds(j, a, b);
          },
          "j"_a, "a"_a, "b"_a, "dist_left"_a, "ev_left"_a, "ev_right"_a, "monotone"_a,
          "Lower bounds on the two children's optima at candidate ``j`` from solved neighbours ``a < j < b``.");

    m.def("shrink",
          [neighbours](int64_t lo, int64_t hi, int64_t a, int64_t b, In1<double> dist_left, In1<double> ev_left,
                       In1<double> ev_right, bool monotone, double limit, Out1 out_left, Out1 out_right) {
              return neighbours(dist_left, ev_left, ev_right, monotone)
                  .shrink(lo, hi, a, b, limit, out_left.data(), out_right.data());
          },
          "lo"_a, "hi"_a, "a"_a, "b"_a, "dist_left"_a, "ev_left"_a, "ev_right"_a, "monotone"_a, "limit"_a,
          "out_left"_a.noconvert(), "out_right"_a.noconvert(),
          "Drop candidates at both ends of ``[lo, hi]`` whose bound reaches ``limit``; the remaining ``(lo, hi)``.");

    m.def("fill_bounds",
          [neighbours](int64_t lo, int64_t hi, int64_t a, int64_t b, In1<double> dist_left, In1<double> ev_left,
                       In1<double> ev_right, bool monotone, Out1 out_left, Out1 out_right) {
              return neighbours(dist_left, ev_left, ev_right, monotone)
                  .fill_bounds(lo, hi, a, b, out_left.data(), out_right.data());
          },
          "lo"_a, "hi"_a, "a"_a, "b"_a, "dist_left"_a, "ev_left"_a, "ev_right"_a, "monotone"_a,
          "out_left"_a.noconvert(), "out_right"_a.noconvert(),
          "Record neighbour bounds for every candidate of ``[lo, hi]``; return their least sum.");

    m.def("stump_order",
          [](In2<int32_t> srt, In2<int32_t> rank, In1<int32_t> y, In1<double> w, In2<double> stats, int loss,
             int64_t width, In1<bool> allowed) {
              Targets d = targets(y, w, stats, loss, width);
              std::vector<int64_t> order;
              {
                  nb::gil_scoped_release release;
                  order = with_loss(loss, [&](auto L) {
                      return stump_order<decltype(L)::value>(as_mat(srt), as_mat(rank), d, allowed.data());
                  });
              }
              size_t count = order.size();
              return to_numpy(std::move(order), {count});
          },
          "srt"_a, "rank"_a, "y"_a, "w"_a, "stats"_a, "loss"_a, "width"_a, "allowed"_a,
          "Allowed features sorted by the cost of their best single split (best first).");

    m.def("depth2",
          [](In2<int32_t> srt, In2<int32_t> rank, In1<int32_t> y, In1<double> w, In2<double> stats, int loss,
             int64_t width, In1<bool> allowed_root, In2<bool> allowed_child, double alpha, int64_t min_leaf,
             double upper_bound) {
              Targets d = targets(y, w, stats, loss, width);
              Depth2Result r;
              {
                  nb::gil_scoped_release release;
                  r = with_loss(loss, [&](auto L) {
                      return depth2<decltype(L)::value>(as_mat(srt), as_mat(rank), d, allowed_root.data(),
                                                        as_allowed(allowed_child), alpha, min_leaf, upper_bound);
                  });
              }
              return nb::make_tuple(r.cost, r.lower_bound, nodes_tuple(r.nodes));
          },
          "srt"_a, "rank"_a, "y"_a, "w"_a, "stats"_a, "loss"_a, "width"_a, "allowed_root"_a, "allowed_child"_a,
          "alpha"_a, "min_leaf"_a, "upper_bound"_a,
          "Optimal tree of depth <= 2 for a view below ``upper_bound``: ``(cost, lower_bound, nodes)``, nodes\n"
          "``(f, r, f_left, r_left, f_right, r_right)`` (``f = -1``: leaf).");

    m.def("depth2_pairs",
          [](In1<int64_t> col_feature, In1<int64_t> col_rank, In2<int32_t> srt, In2<int32_t> rank, In1<int32_t> y,
             In1<double> w, In2<double> stats, int loss, int64_t width, In1<bool> allowed_root,
             In2<bool> allowed_child, double alpha, int64_t min_leaf, double upper_bound) {
              if (loss != MISCLASSIFICATION) throw nb::value_error("depth2_pairs is for misclassification only");
              if (col_rank.shape(0) != col_feature.shape(0)) throw nb::value_error("col_feature and col_rank differ");
              Targets d = targets(y, w, stats, loss, width);
              Depth2Result r;
              {
                  nb::gil_scoped_release release;
                  r = depth2_pairs(col_feature.data(), col_rank.data(), int64_t(col_feature.shape(0)), as_mat(srt),
                                   as_mat(rank), d, allowed_root.data(), as_allowed(allowed_child), alpha, min_leaf,
                                   upper_bound);
              }
              return nb::make_tuple(r.cost, r.lower_bound, nodes_tuple(r.nodes));
          },
          "col_feature"_a, "col_rank"_a, "srt"_a, "rank"_a, "y"_a, "w"_a, "stats"_a, "loss"_a, "width"_a,
          "allowed_root"_a, "allowed_child"_a, "alpha"_a, "min_leaf"_a, "upper_bound"_a,
          "depth2 over the binary columns ``(col_feature[c], col_rank[c])``, from pair counts (misclassification).");

    m.def("depth1_pair",
          [](In2<int32_t> srt, const Layout &lay, In2<int32_t> key, int64_t n_left, Scratch &buf, In1<int32_t> y,
             In1<double> w, In2<double> stats, int loss, int64_t width, const TargetOrder &order,
             In2<bool> allowed, double alpha, int64_t min_leaf, double upper) {
              Targets d = targets(y, w, stats, loss, width);
              if (n_left < int64_t(srt.shape(1)) && buf.br.cols < int64_t(srt.shape(1)))
                  throw nb::value_error("the scratch buffers are smaller than the view");
              PairResult r;
              {
                  nb::gil_scoped_release release;
                  r = with_loss(loss, [&](auto L) {
                      return depth1_sides<decltype(L)::value>(as_mat(srt), lay, key.data(), int64_t(key.shape(1)),
                                                              n_left, buf, d, order, as_allowed(allowed), alpha,
                                                              min_leaf, upper, 0.0, 0.0);
                  });
              }
              return nb::make_tuple(nb::make_tuple(r.cost[0], r.cost[1]), nb::make_tuple(r.lower[0], r.lower[1]),
                                    nb::make_tuple(r.feature[0], r.feature[1]),
                                    nb::make_tuple(r.threshold[0], r.threshold[1]));
          },
          "srt"_a, "lay"_a, "key"_a, "n_left"_a, "buf"_a, "y"_a, "w"_a, "stats"_a, "loss"_a, "width"_a, "order"_a,
          "allowed"_a, "alpha"_a, "min_leaf"_a, "upper"_a,
          "Optimal trees of depth <= 1 of both sides of a split (rows with ``key < n_left`` left):\n"
          "``(cost, lower, feature, rank_threshold)``, each a pair (feature -1: a leaf).");
}
