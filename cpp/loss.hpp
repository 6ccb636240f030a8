// What a set of rows costs as a leaf under each loss, and the distance of the similarity bound.
//
//   loss               statistics accumulated           cost of a leaf holding a set A
//   MISCLASSIFICATION  w_i into class y_i               W(A) - max_k W_k(A)
//   SQUARED            (w_i, w_i t_i, w_i t_i^2)        Σ w t² - (Σ w t)² / Σ w        (mean leaf)
//   ABSOLUTE           Fenwick trees over target ranks  Σ w_i |t_i - median_w(A)|      (median leaf)
//
// Every bound of the search rests on two facts that hold for all three losses:
//   monotone:   OPT_d(A) <= OPT_d(B) for A ⊆ B (without a minimum leaf size);
//   similarity: OPT_d(A ∪ {i}) <= OPT_d(A) + dist_i, with dist_i = w_i for misclassification and
//               w_i max(t_i - lo, hi - t_i)^q (q = 2 squared, 1 absolute) for targets in [lo, hi].
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include "arrays.hpp"

namespace optitree {

constexpr double INF = std::numeric_limits<double>::infinity();

// Misclassified weight of a leaf with class weights counts[0..width).
inline double misclassified(const double *counts, int64_t width) {
    double total = 0.0, top = 0.0;
    for (int64_t k = 0; k < width; ++k) {
        total += counts[k];
        if (counts[k] > top) top = counts[k];
    }
    return total - top;
}

// Weighted squared error about the mean of a set with sums Σw, Σwt, Σwt².
inline double squared_cost(double wsum, double s1, double s2) {
    if (wsum <= 0.0) return 0.0;
    double c = s2 - s1 * (s1 / wsum);  // s1 / wsum is the mean, |t| <= 1: no overflow for weights up to 2**1000
    return c > 0.0 ? c : 0.0;
}

// (lo, hi) of the targets of rows (0, 0 for classification).
inline std::pair<double, double> target_range(const int32_t *rows, int64_t m, const Targets &d) {
    if (d.loss == MISCLASSIFICATION) return {0.0, 0.0};
    double lo = INF, hi = -INF;
    for (int64_t t = 0; t < m; ++t) {
        double v = d.target(rows[t]);
        lo = std::min(lo, v);
        hi = std::max(hi, v);
    }
    return {lo, hi};
}

// Most a row can add to the optimum of a set whose targets lie in [lo, hi] (similarity bound).
template <int LOSS>
inline double row_dist(int64_t i, const Targets &d, double lo, double hi) {
    if constexpr (LOSS == MISCLASSIFICATION) {
        return d.w[i];
    } else {  // the weight and target from the row's statistics (w_i, ..., t_i): one cache line
        const double *s = d.stat(i);
        double r = std::max(s[3] - lo, hi - s[3]);
        return s[0] * (LOSS == SQUARED ? r * r : r);
    }
}

inline double row_dist(int loss, int64_t i, const Targets &d, double lo, double hi) {
    switch (loss) {
        case MISCLASSIFICATION: return row_dist<MISCLASSIFICATION>(i, d, lo, hi);
        case SQUARED: return row_dist<SQUARED>(i, d, lo, hi);
        default: return row_dist<ABSOLUTE>(i, d, lo, hi);
    }
}

// Add row i's statistics to acc[0..width).
template <int LOSS>
inline void add_row(double *acc, int64_t i, const Targets &d) {
    if constexpr (LOSS == MISCLASSIFICATION) {
        acc[d.y[i]] += d.w[i];
    } else {
        const double *s = d.stat(i);
        acc[0] += s[0];
        acc[1] += s[1];
        acc[2] += s[2];
    }
}

// Indices 0..m-1 sorted by values, ties in index order (a stable sort).
inline std::vector<int64_t> stable_order(const double *values, int64_t m) {
    std::vector<int64_t> order(static_cast<size_t>(m));
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(), [values](int64_t a, int64_t b) { return values[a] < values[b]; });
    return order;
}

// Cost of one leaf holding rows[0..m) (any order).
inline double leaf_cost(const int32_t *rows, int64_t m, const Targets &d) {
    if (d.loss == MISCLASSIFICATION) {
        std::vector<double> counts(static_cast<size_t>(d.width), 0.0);
        for (int64_t t = 0; t < m; ++t) counts[d.y[rows[t]]] += d.w[rows[t]];
        return misclassified(counts.data(), d.width);
    }
    if (d.loss == SQUARED) {
        double a = 0.0, b = 0.0, c = 0.0;
        for (int64_t t = 0; t < m; ++t) {
            const double *s = d.stat(rows[t]);
            a += s[0];
            b += s[1];
            c += s[2];
        }
        return squared_cost(a, b, c);
    }
    std::vector<double> values(static_cast<size_t>(m));
    for (int64_t t = 0; t < m; ++t) values[t] = d.target(rows[t]);
    std::vector<int64_t> order = stable_order(values.data(), m);
    double half = 0.0;
    for (int64_t t = 0; t < m; ++t) half += d.w[rows[t]];
    half *= 0.5;
    double cum = 0.0;
    double med = m > 0 ? values[order[m - 1]] : 0.0;
    for (int64_t t = 0; t < m; ++t) {
        cum += d.w[rows[order[t]]];
        if (cum >= half) {
            med = values[order[t]];
            break;
        }
    }
    double cost = 0.0;
    for (int64_t t = 0; t < m; ++t) cost += d.w[rows[t]] * std::abs(values[t] - med);
    return cost;
}

// ------------------------------------------------------------------ absolute error: Fenwick trees
// Weighted medians in O(log m): a pair of Fenwick trees (weights, weighted targets) over the target
// ranks of a view's rows.

// Rank of each row's target within rows (ties by position) and the sorted targets: the Fenwick
// trees' positions. rank_of has n_total entries, set only at rows.
struct TargetOrder {
    std::vector<int32_t> rank_of;
    std::vector<double> values;
};

inline TargetOrder local_target_ranks(const int32_t *rows, int64_t m, const Targets &d, int64_t n_total) {
    TargetOrder out;
    std::vector<double> values(static_cast<size_t>(m));
    for (int64_t t = 0; t < m; ++t) values[t] = d.target(rows[t]);
    std::vector<int64_t> order = stable_order(values.data(), m);
    out.rank_of.assign(static_cast<size_t>(n_total), 0);
    out.values.resize(static_cast<size_t>(m));
    for (int64_t r = 0; r < m; ++r) {
        out.rank_of[rows[order[r]]] = static_cast<int32_t>(r);
        out.values[r] = values[order[r]];
    }
    return out;
}

// local_target_ranks for ABSOLUTE (once per view); empty otherwise.
inline TargetOrder target_order(const int32_t *rows, int64_t m, const Targets &d, int64_t n_total) {
    if (d.loss == ABSOLUTE) return local_target_ranks(rows, m, d, n_total);
    return {};
}

// Add weight wi and wi t (yi) at 0-based position pos of a Fenwick pair of size n + 1.
inline void fenwick_add(double *tw, double *ty, int64_t n, int64_t pos, double wi, double yi) {
    for (int64_t k = pos + 1; k <= n; k += k & (-k)) {
        tw[k] += wi;
        ty[k] += yi;
    }
}

// Absolute error about the weighted median of the set held by the Fenwick pair a + c·b.
// c is 0 (the set is a) or -1 (a minus b: a suffix as all rows minus a prefix); wsum, ysum are the
// set's Σw, Σwt. One descent of the tree: O(log n).
inline double median_cost(const double *aw, const double *ay, const double *bw, const double *by, double c,
                          const double *values, int64_t n, double wsum, double ysum) {
    if (wsum <= 0.0) return 0.0;
    double half = 0.5 * wsum;
    int64_t step = 1;
    while (step * 2 <= n) step *= 2;
    int64_t pos = 0;
    double cw = 0.0, cy = 0.0;
    for (; step > 0; step /= 2) {
        int64_t nxt = pos + step;
        if (nxt <= n) {
            double nw = aw[nxt] + c * bw[nxt];
            if (cw + nw < half) {
                pos = nxt;
                cw += nw;
                cy += ay[nxt] + c * by[nxt];
            }
        }
    }
    double med = values[std::min(pos, n - 1)];
    double cost = med * cw - cy + (ysum - cy) - med * (wsum - cw);
    return cost > 0.0 ? cost : 0.0;
}

// Per-side statistics of a split in progress: side s's prefix (rows sent left so far) and total,
// with the Fenwick trees of ABSOLUTE (size n + 1 each: the side's total, the prefix's).
struct SideStats {
    int64_t width, n;
    Buffer<double> prefix, total;  // (2, width)
    double pw[2] = {0.0, 0.0};     // prefix weight
    Buffer<double> tw, ty, fw, fy;  // (2, n + 1), ABSOLUTE only
    SideStats(int64_t width_, int64_t n_, bool absolute)
        : width(width_), n(absolute ? n_ : 0), prefix(2, width_), total(2, width_),
          tw(2, absolute ? n_ + 1 : 1), ty(2, absolute ? n_ + 1 : 1), fw(2, absolute ? n_ + 1 : 1),
          fy(2, absolute ? n_ + 1 : 1) {}

    // Leaf costs (left, right) of side s split after its current prefix (or, for regression, after a
    // prefix whose sums the caller holds in p, its Fenwick trees still fw, fy).
    template <int LOSS>
    std::pair<double, double> split_costs(int s, const double *values, const double *p = nullptr) const {
        if (!p) p = prefix.row(s);
        const double *q = total.row(s);
        if constexpr (LOSS == MISCLASSIFICATION) {
            double left_top = 0.0, right_top = 0.0, weight = 0.0;
            for (int64_t k = 0; k < width; ++k) {
                if (p[k] > left_top) left_top = p[k];
                double rk = q[k] - p[k];
                weight += q[k];
                if (rk > right_top) right_top = rk;
            }
            return {pw[s] - left_top, weight - pw[s] - right_top};
        } else if constexpr (LOSS == SQUARED) {
            return {squared_cost(p[0], p[1], p[2]), squared_cost(q[0] - p[0], q[1] - p[1], q[2] - p[2])};
        } else {
            return {median_cost(fw.row(s), fy.row(s), fw.row(s), fy.row(s), 0.0, values, n, p[0], p[1]),
                    median_cost(tw.row(s), ty.row(s), fw.row(s), fy.row(s), -1.0, values, n, q[0] - p[0],
                                q[1] - p[1])};
        }
    }

    // Empty side s's prefix.
    void reset_prefix(int s, bool absolute) {
        std::fill(prefix.row(s), prefix.row(s) + width, 0.0);
        pw[s] = 0.0;
        if (absolute) {
            std::fill(fw.row(s), fw.row(s) + fw.cols, 0.0);
            std::fill(fy.row(s), fy.row(s) + fy.cols, 0.0);
        }
    }
};

}  // namespace optitree
