// The depth-2 kernel for two classes on features of few ranks (max_bins), from class-weight
// histograms instead of passes over rows per root threshold.
//
// With at most 256 ranks per feature a node's rows collapse, per pair of features (g, h), to the
// table V(a, b) = Σ w [y = 0] - w [y = 1] over its rows of rank a on g and b on h. Let P(s, c) be its
// 2-D prefix sum (ranks <= s on g, <= c on h) and Q_g, Q_h the 1-D prefix sums of the two
// marginals. Under the root split g <= s, the rows of the left child with rank <= c on h have
// signed weight D = P(s, c), those of the right child Q_h(c) - P(s, c); read by columns, the same
// prefix serves h as the root: its left child at c splits on g with D = P(s, c), its right with
// Q_g(s) - P(s, c). A child of class weights T0, T1 has the best split on a feature of
// misclassified weight min(T1 + min D, T0 - max D) over its cuts (binary_groups' rule; a cut leaving
// a side empty costs a leaf, so every c may be taken), so one pass over each pair's prefix gives
// every root threshold's children on both orders of the pair; the root's own feature in its
// children needs only Q_g (prefix and suffix extrema). Work: m p² / 2 to fill the tables, p² B² to
// sweep them (B ranks per feature), whatever the thresholds, against the sweep kernel's pass over
// the rows per root threshold and child feature: from HISTOGRAM_ROWS rows on, the histograms win.
#pragma once

#include "kernels.hpp"

namespace optitree {

// Rows from which the depth-2 kernel of two classes reads histograms (Search::histograms): about
// where its fixed p² B² sweep costs what the sweep kernel's passes over the rows do (10 features of
// 255 bins: the histograms slower at 500 rows, faster from 1 000; depth 3 on 20 000 and 50 000 rows
// about 15 % faster than with 4 000).
constexpr int64_t HISTOGRAM_ROWS = 1000;
// Ranks per feature up to which a problem takes histograms (its ranks fit in a byte).
constexpr int64_t HISTOGRAM_RANKS = 256;

// Every row's ranks as bytes (p, n_total): a feature's codes of a node's rows are gathered from a
// few hundred kilobytes. Empty when a feature has more than HISTOGRAM_RANKS ranks.
struct Bins {
    Buffer<uint8_t> code;
    std::vector<int64_t> count;  // ranks per feature: max rank + 1
    bool empty() const { return code.rows == 0; }
};

inline Bins make_bins(Ranks rank) {
    Bins out;
    const int64_t p = rank.rows, n = rank.cols;
    std::vector<int64_t> count(size_t(p), 1);
    for (int64_t f = 0; f < p; ++f) {
        const int32_t *r = rank.row(f);
        for (int64_t i = 0; i < n; ++i) count[size_t(f)] = std::max<int64_t>(count[size_t(f)], int64_t(r[i]) + 1);
        if (count[size_t(f)] > HISTOGRAM_RANKS) return out;
    }
    out.code = Buffer<uint8_t>(p, n);
    for (int64_t f = 0; f < p; ++f) {
        const int32_t *r = rank.row(f);
        uint8_t *c = out.code.row(f);
        for (int64_t i = 0; i < n; ++i) c[i] = uint8_t(r[i]);
    }
    out.count = std::move(count);
    return out;
}

// The histograms of a row set of integer weights, kept: per feature of two ranks or more its rows
// and class weights per rank, per pair g < h its table V (at g p + h). A side of a split has its
// parent's histograms less the other side's (exact in integers): a root candidate fills only its
// smaller child's (Search::solve_children).
struct Histograms {
    std::vector<std::vector<int64_t>> n_at;
    std::vector<std::vector<int32_t>> w0, w1, table;
};

inline Histograms fill_histograms(const int32_t *rows, int64_t m, const Bins &bins, const Targets &d) {
    const int64_t p = int64_t(bins.count.size());
    Histograms out;
    out.n_at.resize(size_t(p));
    out.w0.resize(size_t(p));
    out.w1.resize(size_t(p));
    out.table.resize(size_t(p * p));
    std::vector<int32_t> v(static_cast<size_t>(m));
    for (int64_t t = 0; t < m; ++t) v[t] = d.y[rows[t]] == 0 ? int32_t(d.w[rows[t]]) : -int32_t(d.w[rows[t]]);
    std::vector<std::vector<uint8_t>> code(static_cast<size_t>(p));
    for (int64_t g = 0; g < p; ++g) {
        const int64_t B = bins.count[g];
        if (B < 2) continue;
        code[g].resize(size_t(m));
        uint8_t *c = code[g].data();
        const uint8_t *all = bins.code.row(g);
        for (int64_t t = 0; t < m; ++t) c[t] = all[rows[t]];
        out.n_at[g].assign(size_t(B), 0);
        out.w0[g].assign(size_t(B), 0);
        out.w1[g].assign(size_t(B), 0);
        for (int64_t t = 0; t < m; ++t) {
            out.n_at[g][c[t]] += 1;
            if (v[t] > 0) out.w0[g][c[t]] += v[t];
            else out.w1[g][c[t]] -= v[t];
        }
    }
    for (int64_t g = 0; g < p; ++g) {
        for (int64_t h = g + 1; h < p; ++h) {
            if (code[g].empty() || code[h].empty()) continue;
            const int64_t Bh = bins.count[h];
            std::vector<int32_t> &table = out.table[size_t(g * p + h)];
            table.assign(size_t(bins.count[g] * Bh), 0);
            const uint8_t *cg = code[g].data(), *ch = code[h].data();
            for (int64_t t = 0; t < m; ++t) table[size_t(cg[t]) * Bh + ch[t]] += v[t];
        }
    }
    return out;
}

// a - b, elementwise (b's rows a subset of a's).
inline Histograms difference(const Histograms &a, const Histograms &b) {
    Histograms out = a;
    auto less = [](auto &x, const auto &y) {
        for (size_t k = 0; k < x.size(); ++k)
            for (size_t j = 0; j < x[k].size(); ++j) x[k][j] -= y[k][j];
    };
    less(out.n_at, b.n_at);
    less(out.w0, b.w0);
    less(out.w1, b.w1);
    less(out.table, b.table);
    return out;
}

// Optimal tree of depth <= 2 of two classes over the rows rows[0..m) (exact: lower_bound = cost),
// without a minimum leaf size; V holds signed weights (int32_t when every weight is an integer and
// their sum fits, else double). allowed_root and allowed_child as depth2's. given (V = int32_t
// only; null: none) holds the rows' histograms, read instead of filled.
template <class V>
Depth2Result depth2_histograms(const int32_t *rows, int64_t m, const Bins &bins, const Targets &d,
                               const bool *allowed_root, Allowed allowed_child, double alpha,
                               const Histograms *given = nullptr) {
    const int64_t p = int64_t(bins.count.size());
    std::vector<int64_t> features;  // those some node of the tree may split
    for (int64_t g = 0; g < p; ++g)
        if (bins.count[g] >= 2 && (allowed_root[g] || allowed_child(0, g) || allowed_child(1, g)))
            features.push_back(g);
    // each used feature's ranks in the rows' order, each row's signed weight, and the marginals per
    // rank: rows, class weights and their signed sum's prefix Q
    std::vector<std::vector<uint8_t>> code(static_cast<size_t>(p));
    std::vector<V> v(static_cast<size_t>(m));
    std::vector<std::vector<int64_t>> n_at(static_cast<size_t>(p));
    std::vector<std::vector<V>> w0(static_cast<size_t>(p)), w1(static_cast<size_t>(p)), q(static_cast<size_t>(p));
    V t0 = 0, t1 = 0;
    for (int64_t t = 0; t < m; ++t) {
        const int32_t i = rows[t];
        v[t] = d.y[i] == 0 ? V(d.w[i]) : V(-d.w[i]);
        (d.y[i] == 0 ? t0 : t1) += V(d.w[i]);
    }
    auto gather = [&](int64_t g) {  // g's ranks of the rows, once
        if (!code[g].empty()) return;
        code[g].resize(size_t(m));
        uint8_t *c = code[g].data();
        const uint8_t *all = bins.code.row(g);
        for (int64_t t = 0; t < m; ++t) c[t] = all[rows[t]];
    };
    for (int64_t g : features) {
        const int64_t B = bins.count[g];
        if (given) {
            n_at[g] = given->n_at[g];
            w0[g].assign(given->w0[g].begin(), given->w0[g].end());
            w1[g].assign(given->w1[g].begin(), given->w1[g].end());
        } else {
            gather(g);
            const uint8_t *c = code[g].data();
            n_at[g].assign(size_t(B), 0);
            w0[g].assign(size_t(B), V(0));
            w1[g].assign(size_t(B), V(0));
            for (int64_t t = 0; t < m; ++t) {
                n_at[g][c[t]] += 1;
                if (v[t] > 0) w0[g][c[t]] += v[t];
                else w1[g][c[t]] -= v[t];
            }
        }
        q[g].resize(size_t(B));
        V acc = 0;
        for (int64_t b = 0; b < B; ++b) q[g][b] = acc += w0[g][b] - w1[g][b];
    }
    // per root feature g and threshold s (ranks <= s left): the least misclassified weight of a split
    // of each child and its feature (-1: none)
    std::vector<std::vector<V>> err[2];
    std::vector<std::vector<int64_t>> err_at[2];
    // the left child's class weights
    std::vector<std::vector<V>> left0(static_cast<size_t>(p)), left1(static_cast<size_t>(p));
    for (int side = 0; side < 2; ++side) {
        err[side].resize(size_t(p));
        err_at[side].resize(size_t(p));
    }
    for (int64_t g : features) {
        const int64_t B = bins.count[g];
        for (int side = 0; side < 2; ++side) {
            err[side][g].assign(size_t(B), std::numeric_limits<V>::max());
            err_at[side][g].assign(size_t(B), -1);
        }
        left0[g].resize(size_t(B));
        left1[g].resize(size_t(B));
        V a = 0, b = 0;
        for (int64_t s = 0; s < B; ++s) left0[g][s] = a += w0[g][s], left1[g][s] = b += w1[g][s];
    }
    // the children of root g at s split on h, D over h's cuts in [lo_l, hi_l] left, [lo_r, hi_r] right
    auto fold = [&](int64_t g, int64_t s, int64_t h, V lo_l, V hi_l, V lo_r, V hi_r) {
        const V l0 = left0[g][s], l1 = left1[g][s], r0 = t0 - l0, r1 = t1 - l1;
        const V by_side[2] = {std::min(l1 + lo_l, l0 - hi_l), std::min(r1 + lo_r, r0 - hi_r)};
        for (int side = 0; side < 2; ++side) {
            if (allowed_child(side, h) && by_side[side] < err[side][g][s]) {
                err[side][g][s] = by_side[side];
                err_at[side][g][s] = h;
            }
        }
    };
    // the root's feature in its children: cuts c <= s left (prefix extrema of Q), c > s right (suffix)
    for (int64_t g : features) {
        if (!allowed_root[g]) continue;
        const int64_t B = bins.count[g];
        const std::vector<V> &qg = q[g];
        std::vector<V> suffix_lo(static_cast<size_t>(B)), suffix_hi(static_cast<size_t>(B));
        for (int64_t c = B - 1; c >= 0; --c) {
            suffix_lo[c] = c + 1 < B ? std::min(qg[c], suffix_lo[c + 1]) : qg[c];
            suffix_hi[c] = c + 1 < B ? std::max(qg[c], suffix_hi[c + 1]) : qg[c];
        }
        V lo = qg[0], hi = qg[0];
        for (int64_t s = 0; s + 1 < B; ++s) {
            lo = std::min(lo, qg[s]);
            hi = std::max(hi, qg[s]);
            fold(g, s, g, lo, hi, suffix_lo[s + 1] - qg[s], suffix_hi[s + 1] - qg[s]);
        }
    }
    // every pair g < h: fill V, then one pass over its prefix P row by row (root g) and column by
    // column (root h), which leaves the table zero for the next pair
    std::vector<V> table(size_t(HISTOGRAM_RANKS * HISTOGRAM_RANKS), V(0));
    std::vector<V> prefix, col_lo_l, col_hi_l, col_lo_r, col_hi_r;
    for (size_t x = 0; x < features.size(); ++x) {
        for (size_t z = x + 1; z < features.size(); ++z) {
            const int64_t g = features[x], h = features[z], Bg = bins.count[g], Bh = bins.count[h];
            const bool root_g = allowed_root[g] && (allowed_child(0, h) || allowed_child(1, h));
            const bool root_h = allowed_root[h] && (allowed_child(0, g) || allowed_child(1, g));
            if (!root_g && !root_h) continue;
            if (given) {
                const std::vector<int32_t> &kept = given->table[size_t(g * p + h)];
                std::copy(kept.begin(), kept.end(), table.begin());
            } else {
                const uint8_t *cg = code[g].data(), *ch = code[h].data();
                for (int64_t t = 0; t < m; ++t) table[size_t(cg[t]) * Bh + ch[t]] += v[t];
            }
            prefix.assign(size_t(Bh), V(0));
            col_lo_l.assign(size_t(Bh), std::numeric_limits<V>::max());
            col_hi_l.assign(size_t(Bh), std::numeric_limits<V>::lowest());
            col_lo_r = col_lo_l;
            col_hi_r = col_hi_l;
            const V *__restrict qg = q[g].data(), *__restrict qh = q[h].data();
            V *__restrict pr = prefix.data(), *__restrict cll = col_lo_l.data(), *__restrict chl = col_hi_l.data(),
                          *__restrict clr = col_lo_r.data(), *__restrict chr = col_hi_r.data();
            for (int64_t s = 0; s < Bg; ++s) {
                V *row = table.data() + s * Bh;
                V run = 0;
                for (int64_t c = 0; c < Bh; ++c) {
                    pr[c] += run += row[c];  // P(s, c)
                    row[c] = 0;
                }
                // branch-free loops the compiler vectorises: the row's extrema, then the columns'
                V lo_l = pr[0], hi_l = pr[0], lo_r = qh[0] - pr[0], hi_r = lo_r;
                for (int64_t c = 0; c < Bh; ++c) {
                    const V x_l = pr[c], x_r = qh[c] - x_l;
                    lo_l = x_l < lo_l ? x_l : lo_l;
                    hi_l = x_l > hi_l ? x_l : hi_l;
                    lo_r = x_r < lo_r ? x_r : lo_r;
                    hi_r = x_r > hi_r ? x_r : hi_r;
                }
                const V qs = qg[s];
                for (int64_t c = 0; c < Bh; ++c) {
                    const V x_l = pr[c], y_r = qs - x_l;
                    cll[c] = x_l < cll[c] ? x_l : cll[c];
                    chl[c] = x_l > chl[c] ? x_l : chl[c];
                    clr[c] = y_r < clr[c] ? y_r : clr[c];
                    chr[c] = y_r > chr[c] ? y_r : chr[c];
                }
                if (root_g && s + 1 < Bg) fold(g, s, h, lo_l, hi_l, lo_r, hi_r);
            }
            if (root_h)
                for (int64_t c = 0; c + 1 < Bh; ++c) fold(h, c, g, cll[c], chl[c], clr[c], chr[c]);
        }
    }
    // the best tree: a leaf, or a root split whose children are leaves or split (a child's split
    // counts only below its leaf, so a cut leaving a side empty is never taken)
    Depth2Result out;
    std::fill(out.nodes, out.nodes + 6, int64_t{-1});
    out.cost = double(std::min(t0, t1));
    int64_t best_g = -1, best_s = -1, child[2] = {-1, -1};
    for (int64_t g : features) {
        if (!allowed_root[g]) continue;
        for (int64_t s = 0; s + 1 < bins.count[g]; ++s) {
            const V l0 = left0[g][s], l1 = left1[g][s];
            const V side[2][2] = {{l0, l1}, {t0 - l0, t1 - l1}};
            if (side[0][0] + side[0][1] <= 0 || side[1][0] + side[1][1] <= 0) continue;  // a side empty
            double cost = alpha;
            int64_t split[2];
            for (int k = 0; k < 2; ++k) {
                const double leaf = double(std::min(side[k][0], side[k][1]));
                const double by_split = err_at[k][g][s] < 0 ? INF : alpha + double(err[k][g][s]);
                split[k] = by_split < leaf - EPS ? err_at[k][g][s] : -1;
                cost += split[k] < 0 ? leaf : by_split;
            }
            if (cost < out.cost - EPS) {
                out.cost = cost;
                best_g = g;
                best_s = s;
                child[0] = split[0];
                child[1] = split[1];
            }
        }
    }
    out.lower_bound = out.cost;
    if (best_g < 0) return out;
    // the tree's thresholds: the root's at its largest rank present up to best_s, each child's cut
    // found again over its own rows (the least misclassified weight over cuts between present ranks)
    const std::vector<int64_t> &n_g = n_at[best_g];
    while (n_g[best_s] == 0) --best_s;
    out.nodes[0] = best_g;
    out.nodes[1] = best_s;
    gather(best_g);
    for (int k = 0; k < 2; ++k) {
        const int64_t h = child[k];
        if (h < 0) continue;
        gather(h);
        const int64_t B = bins.count[h];
        std::vector<V> by_rank(static_cast<size_t>(B), V(0));
        std::vector<int64_t> n_rank(static_cast<size_t>(B), 0);
        V c0 = 0, c1 = 0;
        for (int64_t t = 0; t < m; ++t) {
            if ((code[best_g][t] > best_s) != (k == 1)) continue;
            by_rank[code[h][t]] += v[t];
            n_rank[code[h][t]] += 1;
            if (v[t] > 0) c0 += v[t];
            else c1 -= v[t];
        }
        V acc = 0, best = std::numeric_limits<V>::max();
        int64_t last = -1, rows_left = 0, rows_all = std::accumulate(n_rank.begin(), n_rank.end(), int64_t{0});
        for (int64_t c = 0; c < B; ++c) {
            if (n_rank[c] == 0) continue;
            acc += by_rank[c];
            rows_left += n_rank[c];
            if (rows_left == rows_all) break;
            const V e = std::min(c1 + acc, c0 - acc);
            if (e < best) best = e, last = c;
        }
        out.nodes[2 + 2 * k] = h;
        out.nodes[3 + 2 * k] = last;
    }
    return out;
}

// depth2_histograms on rows[0..m) with integer tables when every weight is an integer and their sum
// fits in 31 bits, else with doubles.
// given: as depth2_histograms' (kept only for integer weights).
inline Depth2Result depth2_by_histograms(const int32_t *rows, int64_t m, const Bins &bins, const Targets &d,
                                         const bool *allowed_root, Allowed allowed_child, double alpha,
                                         const Histograms *given = nullptr) {
    if (d.int32_weights(rows, m))
        return depth2_histograms<int32_t>(rows, m, bins, d, allowed_root, allowed_child, alpha, given);
    return depth2_histograms<double>(rows, m, bins, d, allowed_root, allowed_child, alpha);
}

}  // namespace optitree
