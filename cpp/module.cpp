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

#include <nanobind/stl/optional.h>
#include <nanobind/stl/vector.h>

#include "root.hpp"

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

// The arrays of a problem, kept alive while a search reads them (never converted: a copy would not outlive the call).
struct ProblemArrays {
    In2<int32_t> rank;
    In1<int32_t> y;
    In1<double> w;
    In2<double> stats;
    Problem problem;
};

nb::object nodes_object(const NodePtr &node) {
    if (!node) return nb::none();
    return nb::make_tuple(node->feature, node->threshold, nodes_object(node->left), nodes_object(node->right));
}

nb::tuple subtree_tuple(const Subtree &s) { return nb::make_tuple(s.cost, s.lower_bound, nodes_object(s.nodes)); }

RowSet row_set(const In2<int32_t> &view, int64_t n_total) {
    Buffer<int32_t> b(int64_t(view.shape(0)), int64_t(view.shape(1)));
    std::copy(view.data(), view.data() + b.store.size(), b.store.data());
    for (int32_t i : b.store)
        if (i < 0 || i >= n_total) throw nb::value_error("a view lists a row outside the problem");
    return RowSet(std::move(b));
}

template <class T>
NumpyArray<T> copy_numpy(const std::vector<T> &values) {
    return to_numpy(std::vector<T>(values), {values.size()});
}

const char *stop_name(StopReason r) {
    switch (r) {
        case StopReason::CALLBACK: return "callback";
        case StopReason::NODE_LIMIT: return "node_limit";
        case StopReason::WORK_LIMIT: return "work_limit";
        case StopReason::TIME_LIMIT: return "time_limit";
        default: return nullptr;
    }
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
    nb::class_<ProblemArrays>(m, "Problem", "A data set as the search reads it (the arrays are kept, never copied).")
        .def(
            "__init__",
            [](ProblemArrays *self, In2<int32_t> rank, In1<int32_t> y, In1<double> w, In2<double> stats, int loss,
               int64_t width, std::vector<int64_t> n_thresholds, std::vector<int64_t> col_feature,
               std::vector<int64_t> col_rank) {
                check_loss(loss);
                const int64_t p = rank.shape(0), n = rank.shape(1);
                if (int64_t(y.shape(0)) != n || int64_t(w.shape(0)) != n || int64_t(n_thresholds.size()) != p ||
                    stats.shape(1) != 4 || col_feature.size() != col_rank.size())
                    throw nb::value_error("the problem's arrays disagree in their shapes");
                new (self) ProblemArrays{rank, y, w, stats,
                                         Problem{as_mat(rank), Targets{y.data(), w.data(), stats.data(), loss, width},
                                                 std::move(n_thresholds), std::move(col_feature),
                                                 std::move(col_rank)}};
            },
            "rank"_a.noconvert(), "y"_a.noconvert(), "w"_a.noconvert(), "stats"_a.noconvert(), "loss"_a, "width"_a,
            "n_thresholds"_a, "col_feature"_a, "col_rank"_a);

    nb::class_<SearchRun>(m, "Search",
                          "The exact search of one problem on native threads (cpp/search.hpp, cpp/root.hpp).")
        .def(
            "__init__",
            [](SearchRun *self, const ProblemArrays &pa, In2<bool> allowed, double alpha, int64_t min_leaf,
               bool anytime, double relaxed_work, bool best_first, bool binary_steps) {
                const int64_t rows = allowed.shape(0), p = allowed.shape(1);
                if (p != pa.problem.features() || rows < 1) throw nb::value_error("allowed has the wrong shape");
                Settings st;
                st.allowed = FlagTable(allowed.data(), rows, p);
                st.alpha = alpha;
                st.min_leaf = min_leaf;
                st.anytime = anytime;
                st.relaxed_work = relaxed_work;
                st.best_first = best_first;
                st.binary_steps = binary_steps;
                for (int64_t r = 1; r < rows && !st.per_node; ++r)
                    st.per_node = !std::equal(st.allowed.row(r), st.allowed.row(r) + p, st.allowed.row(0));
                new (self) SearchRun(pa.problem, std::move(st));
            },
            "problem"_a, "allowed"_a, "alpha"_a, "min_leaf"_a, "anytime"_a, "relaxed_work"_a, "best_first"_a,
            "binary_steps"_a, nb::keep_alive<1, 2>())
        .def("set_limits", &SearchRun::set_limits, "seconds"_a, "node_limit"_a, "work_limit"_a,
             "Limits of the next job: seconds from now, node and work budgets (inf: none).")
        .def(
            "leaf_cost",
            [](SearchRun &r, In2<int32_t> view) {
                RowSet v = row_set(view, r.search().P.n_total());
                return r.search().leaf_cost(v);
            },
            "view"_a)
        .def(
            "start_root",
            [](SearchRun &r, In2<int32_t> view, int64_t depth, double upper_bound, int64_t threads,
               double alone_seconds) {
                r.start_root(row_set(view, r.search().P.n_total()), depth, upper_bound, threads, alone_seconds);
            },
            "view"_a, "depth"_a, "upper_bound"_a, "threads"_a, "alone_seconds"_a,
            "Start solving the problem of ``view`` from its root on native threads.")
        .def(
            "start_split_bounds",
            [](SearchRun &r, In2<int32_t> view, int64_t depth, double limit, bool tighten) {
                r.start_split_bounds(row_set(view, r.search().P.n_total()), depth, limit, tighten);
            },
            "view"_a, "depth"_a, "limit"_a, "tighten"_a, "Start scanning every allowed root feature.")
        .def("wait", &SearchRun::wait, "seconds"_a, nb::call_guard<nb::gil_scoped_release>(),
             "Wait up to ``seconds`` for the job (the GIL released); whether it has ended.")
        .def("interrupt", &SearchRun::interrupt, "Ask the job to stop at its next unit of work.")
        .def("finish", &SearchRun::finish, nb::call_guard<nb::gil_scoped_release>(),
             "Wait for the job to end; raise what it raised.")
        .def("root_result", [](const SearchRun &r) { return subtree_tuple(r.root_result()); },
             "``(cost, lower_bound, nodes)`` of the ended root job; nodes nested ``(f, r, left, right)`` or None.")
        .def("best", [](const SearchRun &r) { return nb::make_tuple(r.best_cost(), nodes_object(r.best_nodes())); },
             "The best tree of the ended split-bounds job: ``(cost, nodes)``.")
        .def("feature_bounds",
             [](const SearchRun &r) {
                 nb::list out;
                 for (const FeatureBounds &fb : r.feature_bounds()) {
                     std::vector<uint8_t> exact(fb.exact.begin(), fb.exact.end());
                     out.append(nb::make_tuple(fb.feature, copy_numpy(fb.rank_threshold), copy_numpy(fb.n_left),
                                               copy_numpy(fb.bound_left), copy_numpy(fb.bound_right),
                                               copy_numpy(exact)));
                 }
                 return out;
             },
             "Per scanned feature: ``(feature, rank_threshold, n_left, bound_left, bound_right, exact)``.")
        .def("improvements", [](SearchRun &r) { return r.control().trace.take(); },
             "The incumbent's improvements since the last call: ``(seconds since the job's start, cost)``.")
        .def(
            "relaxed_bounds",
            [](SearchRun &r, In2<int32_t> view, int64_t depth, int64_t node, int64_t feature, double cutoff)
                -> nb::object {
                RowSet v = row_set(view, r.search().P.n_total());
                std::optional<Search::Known> known;
                {
                    nb::gil_scoped_release release;
                    known = r.search().relaxed_bounds(v, depth, node, feature, cutoff);
                }
                if (!known) return nb::none();
                return nb::make_tuple(copy_numpy(known->rank_threshold), copy_numpy(known->left),
                                      copy_numpy(known->right));
            },
            "view"_a, "depth"_a, "node"_a, "feature"_a, "cutoff"_a,
            "Children bounds of ``feature``'s candidates from the search without ``min_leaf``, or None.")
        .def_prop_rw(
            "nodes_used", [](SearchRun &r) { return r.search().nodes_used; },
            [](SearchRun &r, int64_t v) { r.search().nodes_used = v; })
        .def_prop_rw(
            "work_used", [](SearchRun &r) { return r.search().work_used; },
            [](SearchRun &r, int64_t v) { r.search().work_used = v; })
        .def_prop_ro("nodes_progress", &SearchRun::nodes_progress, "Units of work so far (read while a job runs).")
        .def_prop_ro("exhausted", [](SearchRun &r) { return r.search().exhausted; })
        .def_prop_ro("interrupted", [](SearchRun &r) { return r.search().interrupted; })
        .def_prop_ro("stopped_by", [](SearchRun &r) -> nb::object {
            const char *name = stop_name(r.search().stopped_by);
            if (!name) return nb::none();
            return nb::str(name);
        });
}
