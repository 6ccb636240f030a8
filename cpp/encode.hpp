// The engine's encoding of a feature matrix: each column's rows in value order and dense ranks.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include "arrays.hpp"

namespace optitree {

// The columns of X (n rows x p features, finite values) sorted one by one:
//   view[f]   the rows in increasing order of X[:, f], equal values in row order (a stable sort)
//   rank[f]   each row's dense rank in X[:, f]: 0 for the least value, +1 at each larger one
//   values    every column's distinct values, increasing, column after column
//   distinct  the number of distinct values of each column
struct RankedColumns {
    Buffer<int32_t> view, rank;
    std::vector<double> values;
    std::vector<int64_t> distinct;
};

inline RankedColumns rank_columns(Mat<const double> X) {
    const int64_t n = X.rows, p = X.cols;
    RankedColumns out{Buffer<int32_t>(p, n), Buffer<int32_t>(p, n), {}, std::vector<int64_t>(size_t(p), 0)};
    std::vector<double> column(static_cast<size_t>(n));
    for (int64_t f = 0; f < p; ++f) {
        for (int64_t i = 0; i < n; ++i) column[size_t(i)] = X(i, f);
        int32_t *order = out.view.row(f), *rank = out.rank.row(f);
        std::iota(order, order + n, 0);
        std::stable_sort(order, order + n, [&](int32_t a, int32_t b) { return column[size_t(a)] < column[size_t(b)]; });
        int32_t r = -1;
        for (int64_t t = 0; t < n; ++t) {
            const double v = column[size_t(order[t])];
            if (t == 0 || v != out.values.back()) {
                out.values.push_back(v);
                ++r;
            }
            rank[order[t]] = r;
        }
        out.distinct[size_t(f)] = int64_t(r) + 1;
    }
    return out;
}

}  // namespace optitree
