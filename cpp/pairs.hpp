// The depth-2 kernel for misclassification on few thresholds, from pair counts (MurTree's
// frequency counting).
//
// Every split x_f <= t_r is a binary column c = (f, r), one where rank(f) > r. With few columns in
// all, a depth-2 tree is fixed by its root column i and its children's columns j, and the class
// weights of its four leaves follow from the weights of the rows with x_i = 1, with x_j = 1 and
// with both (one[i], one[j], pair[i, j]): for the root's left child (x_i = 0)
//     (x_j = 0): total - one[i] - one[j] + pair[i, j]        (x_j = 1): one[j] - pair[i, j]
// and for its right child one[i] - pair[i, j] and pair[i, j]; row counts likewise (the minimum leaf
// size). One pass over the rows fills the counts, s² per row for s ones in it; then every tree is
// evaluated in O(K).
#pragma once

#include <bitset>

#include "kernels.hpp"

namespace optitree {

// Misclassified weight of a leaf whose class weights are total + sa·a + sb·b + sc·c (signs 0/±1).
inline double pair_leaf(const double *total, const double *a, double sa, const double *b, double sb,
                        const double *c, double sc, int64_t width) {
    double weight = 0.0, top = 0.0;
    for (int64_t k = 0; k < width; ++k) {
        double v = total[k] + sa * a[k] + sb * b[k] + sc * c[k];
        weight += v;
        if (v > top) top = v;
    }
    return weight - top;
}

// Whether every weight of rows[0..m) is 1.
inline bool unit_weights(const int32_t *rows, int64_t m, const Targets &d) {
    for (int64_t t = 0; t < m; ++t)
        if (d.w[rows[t]] != 1.0) return false;
    return true;
}

// The counts of depth2_pairs row by row: total (class weights), one(c, k) and n_one[c] (weight of
// class k and rows with x_c = 1), pair(a p + b, k) and n_pair[a p + b] (with x_a = x_b = 1, a < b).
inline void pair_counts_by_rows(const int64_t *col_feature, const int64_t *col_rank, int64_t p, const int32_t *rows,
                                int64_t m, Ranks rank, const Targets &d, std::vector<double> &total,
                                Buffer<double> &one, Buffer<double> &pair, std::vector<int64_t> &n_one,
                                std::vector<int64_t> &n_pair) {
    std::vector<int64_t> ones(p, 0);
    for (int64_t t = 0; t < m; ++t) {
        int64_t i = rows[t];
        int64_t c = d.y[i];
        double wi = d.w[i];
        total[c] += wi;
        int64_t s = 0;
        for (int64_t f = 0; f < p; ++f)
            if (rank(col_feature[f], i) > col_rank[f]) ones[s++] = f;
        for (int64_t a = 0; a < s; ++a) {
            int64_t fa = ones[a];
            one(fa, c) += wi;
            n_one[fa] += 1;
            for (int64_t b = a + 1; b < s; ++b) {
                pair(fa * p + ones[b], c) += wi;
                n_pair[fa * p + ones[b]] += 1;
            }
        }
    }
}

// The same counts of unit-weight rows from bitsets over the rows: one per column (x_c = 1) and one
// per class, each count the population of an AND of two or three of them. p² K m / 128 word
// operations instead of a scattered addition per pair of ones of each row; the same integers.
inline void pair_counts_by_bits(const int64_t *col_feature, const int64_t *col_rank, int64_t p, const int32_t *rows,
                                int64_t m, Ranks rank, const Targets &d, std::vector<double> &total,
                                Buffer<double> &one, Buffer<double> &pair, std::vector<int64_t> &n_one,
                                std::vector<int64_t> &n_pair) {
    const int64_t K = d.width, words = (m + 63) / 64;
    Buffer<uint64_t> bits(p + K, words, 0);  // rows p + k: class k
    for (int64_t t = 0; t < m; ++t) bits(p + d.y[rows[t]], t >> 6) |= uint64_t(1) << (t & 63);
    for (int64_t c = 0; c < p; ++c) {  // without branches: a column's bits are ones and zeros at random
        const int32_t *rk = rank.row(col_feature[c]);
        const int64_t r = col_rank[c];
        for (int64_t w = 0; w < words; ++w) {
            uint64_t x = 0;
            for (int64_t t = 64 * w, end = std::min(m, t + 64); t < end; ++t) x |= uint64_t(rk[rows[t]] > r) << (t & 63);
            bits(c, w) = x;
        }
    }
    auto count = [&](const uint64_t *x, const uint64_t *y, const uint64_t *z) {
        int64_t n = 0;
        for (int64_t w = 0; w < words; ++w) n += int64_t(std::bitset<64>(x[w] & y[w] & (z ? z[w] : ~uint64_t(0))).count());
        return n;
    };
    for (int64_t k = 0; k < K; ++k) total[k] = double(count(bits.row(p + k), bits.row(p + k), nullptr));
    for (int64_t a = 0; a < p; ++a) {
        for (int64_t k = 0; k < K; ++k) {
            const int64_t n = count(bits.row(a), bits.row(p + k), nullptr);
            one(a, k) = double(n);
            n_one[a] += n;
        }
        for (int64_t b = a + 1; b < p; ++b) {
            for (int64_t k = 0; k < K; ++k) {
                const int64_t n = count(bits.row(a), bits.row(b), bits.row(p + k));
                pair(a * p + b, k) = double(n);
                n_pair[a * p + b] += n;
            }
        }
    }
}

// Optimal tree of depth <= 2 over the columns (col_feature[c], col_rank[c]), c < n_columns; the
// other arguments and the result as depth2(). Exact, but for an early stop once upper_bound or the
// incumbent is at most alpha (no split can beat it; the bound is then min(cost, alpha)).
inline Depth2Result depth2_pairs(const int64_t *col_feature, const int64_t *col_rank, int64_t n_columns, View srt,
                                 Ranks rank, const Targets &d, const bool *allowed_root, Allowed allowed_child,
                                 double alpha, int64_t min_leaf, double upper_bound) {
    const int64_t m = srt.cols, p = n_columns, K = d.width;
    const int32_t *rows = srt.row(0);
    std::vector<double> zero(K, 0.0), total(K, 0.0);
    Buffer<double> one(p, K), pair(p * p, K);
    std::vector<int64_t> n_one(p, 0), n_pair(p * p, 0);
    if (unit_weights(rows, m, d)) pair_counts_by_bits(col_feature, col_rank, p, rows, m, rank, d, total, one, pair, n_one, n_pair);
    else pair_counts_by_rows(col_feature, col_rank, p, rows, m, rank, d, total, one, pair, n_one, n_pair);
    const int64_t least = std::max<int64_t>(min_leaf, 1);  // rows per leaf
    const double *z = zero.data(), *tot = total.data();
    Depth2Result out;
    std::fill(out.nodes, out.nodes + 6, int64_t{-1});
    double best = pair_leaf(tot, z, 0.0, z, 0.0, z, 0.0, K);
    double bound_of_rest = INF;  // a stop before every root feature was tried: the others cost >= alpha
    for (int64_t i = 0; i < p; ++i) {
        if (std::min(best, upper_bound) <= alpha + EPS) {
            bound_of_rest = alpha;
            break;
        }
        const int64_t n_right = n_one[i], n_left = m - n_right;
        if (!allowed_root[col_feature[i]] || n_left < least || n_right < least) continue;
        const double *oi = one.row(i);
        double left_cost = pair_leaf(tot, oi, -1.0, z, 0.0, z, 0.0, K);
        double right_cost = pair_leaf(z, oi, 1.0, z, 0.0, z, 0.0, K);
        int64_t left_feature = -1, right_feature = -1;
        for (int64_t j = 0; j < p; ++j) {
            if (j == i) continue;
            const int64_t at = i < j ? i * p + j : j * p + i;
            const double *q = pair.row(at), *oj = one.row(j);
            const int64_t n_q = n_pair[at];
            if (allowed_child(0, col_feature[j])) {
                const int64_t n_lr = n_one[j] - n_q;
                if (n_lr >= least && n_left - n_lr >= least) {
                    double cost = alpha + pair_leaf(tot, oi, -1.0, oj, -1.0, q, 1.0, K) +
                                  pair_leaf(z, oj, 1.0, q, -1.0, z, 0.0, K);
                    if (cost < left_cost - EPS) {
                        left_cost = cost;
                        left_feature = j;
                    }
                }
            }
            if (allowed_child(1, col_feature[j])) {
                if (n_q >= least && n_right - n_q >= least) {
                    double cost = alpha + pair_leaf(z, oi, 1.0, q, -1.0, z, 0.0, K) + pair_leaf(z, q, 1.0, z, 0.0, z, 0.0, K);
                    if (cost < right_cost - EPS) {
                        right_cost = cost;
                        right_feature = j;
                    }
                }
            }
        }
        double cost = alpha + left_cost + right_cost;
        if (cost < best - EPS) {
            best = cost;
            out.nodes[0] = col_feature[i];
            out.nodes[1] = col_rank[i];
            out.nodes[2] = left_feature >= 0 ? col_feature[left_feature] : -1;
            out.nodes[3] = left_feature >= 0 ? col_rank[left_feature] : -1;
            out.nodes[4] = right_feature >= 0 ? col_feature[right_feature] : -1;
            out.nodes[5] = right_feature >= 0 ? col_rank[right_feature] : -1;
        }
    }
    out.cost = best;
    out.lower_bound = std::min(best, bound_of_rest);
    return out;
}

}  // namespace optitree
