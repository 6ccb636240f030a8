// Plain views of the engine's arrays: row-major, no ownership, no Python.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

namespace optitree {

constexpr double EPS = 1e-9;

// Loss codes shared with Python (optitree.exact._kernels).
enum Loss : int { MISCLASSIFICATION = 0, SQUARED = 1, ABSOLUTE = 2 };

// A row-major (rows x cols) matrix view.
template <class T>
struct Mat {
    T *data = nullptr;
    int64_t rows = 0, cols = 0;
    T *row(int64_t r) const { return data + r * cols; }
    T &operator()(int64_t r, int64_t c) const { return data[r * cols + c]; }
};

// A row-major (rows x cols) matrix that owns its storage.
template <class T>
struct Buffer {
    std::vector<T> store;
    int64_t rows = 0, cols = 0;
    Buffer() = default;
    Buffer(int64_t r, int64_t c, T fill = T()) : store(static_cast<size_t>(r * c), fill), rows(r), cols(c) {}
    T *row(int64_t r) { return store.data() + r * cols; }
    const T *row(int64_t r) const { return store.data() + r * cols; }
    T &operator()(int64_t r, int64_t c) { return store[static_cast<size_t>(r * cols + c)]; }
    T operator()(int64_t r, int64_t c) const { return store[static_cast<size_t>(r * cols + c)]; }
    Mat<T> mat() { return {store.data(), rows, cols}; }
    Mat<const T> view() const { return {store.data(), rows, cols}; }
};

// The target half of every kernel call: classes or regression statistics of all rows.
//   y[i]      class code (classification)
//   w[i]      positive weight
//   stats[i]  (w, w t, w t^2, t) for regression, t the scaled target
struct Targets {
    const int32_t *y;
    const double *w;
    const double *stats;  // (n_total, 4) for regression, unused otherwise
    int loss;
    int64_t width;  // classes, or 3 (Σw, Σwt, Σwt²)
    const double *stat(int64_t i) const { return stats + 4 * i; }
    double target(int64_t i) const { return stats[4 * i + 3]; }
    // Whether every weight of rows[0..m) is an integer and their sum fits in 31 bits: class-weight
    // sums over them are then exact in int32_t.
    bool int32_weights(const int32_t *rows, int64_t m) const {
        double total = 0.0;
        for (int64_t t = 0; t < m; ++t) {
            if (w[rows[t]] != std::floor(w[rows[t]])) return false;
            total += w[rows[t]];
        }
        return total < 2147483647.0;
    }
};

// A sample set: row f lists the set's rows sorted by rank[f] (the kernels' "view").
using View = Mat<const int32_t>;
// rank(f, i): dense rank of row i on feature f.
using Ranks = Mat<const int32_t>;
// allowed(s, f): feature f may split side s (or row s of a per-node mask).
using Allowed = Mat<const bool>;

}  // namespace optitree
