// Python bindings of the engine's compiled core: optitree.exact._core.
//
// The search (Search: one problem's SearchRun) runs on native threads and never holds the GIL; the
// caller waits for it in slices. The problem's arrays are taken as they are, never converted (the
// search reads them after the call returns); the two kernels Python calls directly (candidates,
// partition) convert their inputs and release the GIL.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <stdexcept>
#include <string>

#include "encode.hpp"
#include "root.hpp"

namespace nb = nanobind;
using namespace nb::literals;
using namespace optitree;

namespace {

template <class T>
using In1 = nb::ndarray<const T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
template <class T>
using In2 = nb::ndarray<const T, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
template <class T>
using NumpyArray = nb::ndarray<nb::numpy, T>;

template <class T>
Mat<const T> as_mat(const In2<T> &a) {
    return {a.data(), static_cast<int64_t>(a.shape(0)), static_cast<int64_t>(a.shape(1))};
}

void check_loss(int loss) {
    if (loss < MISCLASSIFICATION || loss > ABSOLUTE)
        throw nb::value_error(("unknown loss code " + std::to_string(loss)).c_str());
}

// A numpy array owning a moved vector.
template <class T>
NumpyArray<T> to_numpy(std::vector<T> &&values, std::initializer_list<size_t> shape) {
    auto *owned = new std::vector<T>(std::move(values));
    nb::capsule owner(owned, [](void *p) noexcept { delete static_cast<std::vector<T> *>(p); });
    return NumpyArray<T>(owned->data(), shape, owner);
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

// A nested (feature, rank_threshold, left, right) tuple (None: a leaf) as the search's nodes.
NodePtr nodes_from(const nb::handle &obj) {
    if (obj.is_none()) return nullptr;
    nb::tuple t = nb::cast<nb::tuple>(obj);
    if (t.size() != 4) throw nb::value_error("a split is (feature, rank_threshold, left, right)");
    return make_node(nb::cast<int64_t>(t[0]), nb::cast<int64_t>(t[1]), nodes_from(t[2]), nodes_from(t[3]));
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
    m.doc() = "The exact engine's compiled core (C++): the search on native threads, its kernels.";
    m.attr("EPS") = EPS;
    m.attr("MISCLASSIFICATION") = int(MISCLASSIFICATION);
    m.attr("SQUARED") = int(SQUARED);
    m.attr("ABSOLUTE") = int(ABSOLUTE);

    m.def("rank_columns",
          [](In2<double> X) {
              const size_t n = X.shape(0), p = X.shape(1);
              if (n > size_t(INT32_MAX)) throw nb::value_error("more rows than int32 indexes");
              RankedColumns r;
              {
                  nb::gil_scoped_release release;
                  r = rank_columns(as_mat(X));
              }
              const size_t n_values = r.values.size();
              return std::make_tuple(to_numpy(std::move(r.view.store), {p, n}), to_numpy(std::move(r.rank.store), {p, n}),
                                     to_numpy(std::move(r.values), {n_values}), to_numpy(std::move(r.distinct), {p}));
          },
          "X"_a,
          "Each column of ``X`` (finite) sorted: ``(view, rank, values, distinct)``, ``view[f]`` the rows in value "
          "order (ties in row order), ``rank[f]`` their dense ranks, ``values`` every column's distinct values in "
          "turn, ``distinct`` how many each column has.");

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

    nb::class_<ProblemArrays>(m, "Problem", "A data set as the search reads it (the arrays are kept, never copied).")
        .def(
            "__init__",
            [](ProblemArrays *self, In2<int32_t> rank, In1<int32_t> y, In1<double> w, In2<double> stats, int loss,
               int64_t width, std::vector<int64_t> col_feature, std::vector<int64_t> col_rank) {
                check_loss(loss);
                const int64_t p = rank.shape(0), n = rank.shape(1);
                if (int64_t(y.shape(0)) != n || int64_t(w.shape(0)) != n || stats.shape(1) != 4 ||
                    col_feature.size() != col_rank.size())
                    throw nb::value_error("the problem's arrays disagree in their shapes");
                for (int64_t f : col_feature)
                    if (f < 0 || f >= p) throw nb::value_error("a pair column names a feature outside the problem");
                const bool two_classes = loss == MISCLASSIFICATION && width == 2;
                new (self) ProblemArrays{rank, y, w, stats,
                                         Problem{as_mat(rank), Targets{y.data(), w.data(), stats.data(), loss, width},
                                                 std::move(col_feature), std::move(col_rank),
                                                 two_classes ? make_bins(as_mat(rank)) : Bins{}}};
            },
            "rank"_a.noconvert(), "y"_a.noconvert(), "w"_a.noconvert(), "stats"_a.noconvert(), "loss"_a, "width"_a,
            "col_feature"_a, "col_rank"_a);

    m.def(
        "depth2_histograms",
        [](const ProblemArrays &pa, In1<int32_t> rows, In1<bool> allowed_root, In2<bool> allowed_child, double alpha) {
            const Problem &P = pa.problem;
            const int64_t p = P.features(), m = int64_t(rows.shape(0));
            if (P.bins.empty()) throw nb::value_error("the problem takes no histograms (two classes, <= 256 ranks)");
            if (int64_t(allowed_root.shape(0)) != p || allowed_child.shape(0) != 2 ||
                int64_t(allowed_child.shape(1)) != p)
                throw nb::value_error("allowed_root is (p,), allowed_child (2, p)");
            for (int64_t t = 0; t < m; ++t)
                if (rows.data()[t] < 0 || rows.data()[t] >= P.n_total())
                    throw nb::value_error("a row outside the problem");
            Depth2Result r;
            {
                nb::gil_scoped_release release;
                r = depth2_by_histograms(rows.data(), m, P.bins, P.d, allowed_root.data(),
                                         {allowed_child.data(), 2, p}, alpha);
            }
            return nb::make_tuple(r.cost, std::vector<int64_t>(r.nodes, r.nodes + 6));
        },
        "problem"_a, "rows"_a, "allowed_root"_a, "allowed_child"_a, "alpha"_a,
        "Optimal tree of depth <= 2 of two classes over ``rows`` from histograms (cpp/histogram.hpp):\n"
        "``(cost, [f, r, f_left, r_left, f_right, r_right])``, ``f = -1`` a leaf.");

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
               double alone_seconds, nb::object start, double inline_seconds) {
                RowSet rows = row_set(view, r.search().P.n_total());
                NodePtr start_tree = nodes_from(start);
                nb::gil_scoped_release release;
                r.start_root(std::move(rows), depth, upper_bound, threads, alone_seconds, start_tree,
                             inline_seconds);
            },
            "view"_a, "depth"_a, "upper_bound"_a, "threads"_a, "alone_seconds"_a, "start"_a = nb::none(),
            "inline_seconds"_a = 0.0,
            "Start solving the problem of ``view`` from its root on native threads; ``start`` (nested splits)\n"
            "is a first incumbent when it is a tree of the problem. The job first runs up to ``inline_seconds``\n"
            "on the calling thread (the GIL released): a job ended there has no thread.")
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
        .def_prop_ro("live_bound", &SearchRun::live_bound,
                     "The root's lower bound so far (read while a root job runs; 0 before the first report).")
        .def_prop_ro("exhausted", [](SearchRun &r) { return r.search().exhausted; })
        .def_prop_ro("interrupted", [](SearchRun &r) { return r.search().interrupted; })
        .def_prop_ro("stopped_by", [](SearchRun &r) -> nb::object {
            const char *name = stop_name(r.search().stopped_by);
            if (!name) return nb::none();
            return nb::str(name);
        });
}
