// Depth-1 trees for both sides of a split in one pass per feature: the inner loop of the depth-2 kernel.
//
// A view's ranks, classes and weights are first copied in its order (Layout); per feature, the rows
// of the two sides are compacted into two contiguous runs (depth1_sides) and each run is swept on
// its own (sweep_side), its state in registers and free to stop early.
#pragma once

#include "loss.hpp"

namespace optitree {

// lr(g, t) = rank(g, srt(g, t)), and classes and weights alike: the sweeps read each feature's rows
// in sequence instead of gathering them from the global arrays.
struct Layout {
    Buffer<int32_t> lr, ly;
    Buffer<double> lw;
};

inline Layout make_layout(View srt, Ranks rank, const Targets &d) {
    Layout lay{Buffer<int32_t>(srt.rows, srt.cols), Buffer<int32_t>(srt.rows, srt.cols),
               Buffer<double>(srt.rows, srt.cols)};
    for (int64_t g = 0; g < srt.rows; ++g) {
        const int32_t *rows = srt.row(g), *rk = rank.row(g);
        int32_t *lr = lay.lr.row(g), *ly = lay.ly.row(g);
        double *lw = lay.lw.row(g);
        for (int64_t t = 0; t < srt.cols; ++t) {
            int32_t i = rows[t];
            lr[t] = rk[i];
            ly[t] = d.y[i];
            lw[t] = d.w[i];
        }
    }
    return lay;
}

// key(g, t): the position of row srt(g, t) in srt(feature). A split of feature that sends its first
// k rows left sends exactly the rows with key < k left, in every row of the view.
inline Buffer<int32_t> positions(View srt, int64_t feature, int64_t n_total) {
    std::vector<int32_t> pos(static_cast<size_t>(n_total));
    const int32_t *order = srt.row(feature);
    for (int64_t t = 0; t < srt.cols; ++t) pos[order[t]] = static_cast<int32_t>(t);
    Buffer<int32_t> key(srt.rows, srt.cols);
    for (int64_t g = 0; g < srt.rows; ++g) {
        const int32_t *rows = srt.row(g);
        int32_t *k = key.row(g);
        for (int64_t t = 0; t < srt.cols; ++t) k[t] = pos[rows[t]];
    }
    return key;
}

// Buffers of depth1_sides for views of up to m rows: each side's ranks, classes, weights, rows.
struct Scratch {
    Buffer<int32_t> br, by, brow;
    Buffer<double> bw;
    explicit Scratch(int64_t m) : br(2, m), by(2, m), brow(2, m), bw(2, m) {}
};

// One side's rows of one feature, in rank order.
struct Run {
    const int32_t *r, *yy, *rows;
    const double *ww;
    int64_t n;
};

// The two largest of a sequence of non-negative values, and where the largest stands (-1: none above 0).
struct TopTwo {
    double top = 0.0, next = 0.0;
    int64_t arg = -1;
    void add(double v, int64_t k) {
        if (v > top) {
            next = top;
            top = v;
            arg = k;
        } else if (v > next) {
            next = v;
        }
    }
};

// Best threshold of one feature for side s below bar: (cost, rank_threshold), the threshold -1 when
// none is below bar.
//
// Stops early: similarity skip (a threshold whose cost exceeds the bar by k cannot be beaten before
// rows of total row_dist above k have moved left), a zero-cost right side (monotone), a bar at
// alpha, or too few rows left for a leaf.
//
// Class skip (misclassification). With class weights L_k left and R_k right of the threshold,
// T_k = L_k + R_k and W = Σ T_k, a threshold further on moves weights d_k >= 0 (total D) from right
// to left, and its cost is alpha + W - max_k (L_k + d_k) - max_j (R_j - d_j). The two maxima are
// taken at one class (sum <= max T) or at two (<= L_k + R_j + D, k != j), so
//     cost' >= alpha + W - max(max_k T_k, C + D),   C = max_{k != j} (L_k + R_j).
// alpha + W - max T is the leaf's cost plus alpha, never below the bar, so a threshold beats the
// bar only once D > alpha + W - C - bar: the skip. C comes from the two largest L_k and R_j.
template <int LOSS>
inline std::pair<double, int64_t> sweep_side(int s, const Run &run, double bar, double alpha, int64_t min_leaf,
                                             const Targets &d, SideStats &st, double weight, double dist_total,
                                             double lo, double hi, const TargetOrder &order) {
    constexpr bool absolute = LOSS == ABSOLUTE;
    st.reset_prefix(s, absolute);
    double *prefix = st.prefix.row(s);
    const double *total = st.total.row(s);
    const int64_t width = st.width;
    int64_t found = -1, pn = 0, prev = -1;
    double pd = 0.0, skip = 0.0;
    for (int64_t t = 0; t < run.n; ++t) {
        int64_t rt = run.r[t];
        if (pn >= min_leaf && rt != prev && skip < EPS) {
            double cross = 0.0, left_cost, right_cost;
            if constexpr (LOSS == MISCLASSIFICATION) {
                TopTwo left, right;  // the two largest L_k and R_j
                for (int64_t k = 0; k < width; ++k) {
                    left.add(prefix[k], k);
                    right.add(total[k] - prefix[k], k);
                }
                left_cost = st.pw[s] - left.top;
                right_cost = weight - st.pw[s] - right.top;
                cross = left.arg != right.arg ? left.top + right.top
                                              : std::max(left.top + right.next, left.next + right.top);
            } else {
                auto costs = st.template split_costs<LOSS>(s, order.values.data());
                left_cost = costs.first;
                right_cost = costs.second;
            }
            double cost = alpha + left_cost + right_cost;
            if (cost < bar - EPS) {
                bar = cost;
                found = prev;
            }
            // no threshold beats the bar before rows of total distance above `skip` have moved
            skip = LOSS == MISCLASSIFICATION ? alpha + weight - cross - bar : std::max(cost - bar, 0.0);
            if (right_cost <= EPS || skip >= dist_total - pd - EPS || bar <= alpha + EPS) break;
        }
        double wt = run.ww[t], dist;
        if constexpr (LOSS == MISCLASSIFICATION) {
            prefix[run.yy[t]] += wt;
            dist = wt;
        } else {
            int64_t i = run.rows[t];
            add_row<LOSS>(prefix, i, d);
            if constexpr (absolute) {
                fenwick_add(st.fw.row(s), st.fy.row(s), st.n, order.rank_of[i], wt, d.stat(i)[1]);
            }
            dist = row_dist<LOSS>(i, d, lo, hi);
        }
        st.pw[s] += wt;
        pd += dist;
        pn += 1;
        prev = rt;
        skip -= dist;
        if (run.n - pn < min_leaf) break;
    }
    return {bar, found};
}

// The best trees of depth <= 1 of both sides of a split, and their bounds.
struct PairResult {
    double cost[2], lower[2];
    int64_t feature[2], threshold[2];  // feature -1: a leaf
};

// Optimal trees of depth <= 1 for both sides of a split, in one pass per feature.
//
// Side 0 holds the rows with key < n_left (key from positions() of the split feature, whose first
// n_left rows go left), side 1 the rest; n_left >= m: one set, every row on side 0 (key is not
// read). allowed(s, f) masks side s's features. Only trees of cost below min(incumbent, upper) are
// sought; known_left/known_right are lower bounds on the two sides' optima: side 0 is searched
// below upper - known_right, side 1 below upper - known_left. lower = min(cost, that side's bar) is
// a bound on the side's optimum, equal to it when cost < upper.
template <int LOSS>
PairResult depth1_sides(View srt, const Layout &lay, const int32_t *key, int64_t key_cols, int64_t n_left,
                        Scratch &buf, const Targets &d, const TargetOrder &order, Allowed allowed, double alpha,
                        int64_t min_leaf, double upper, double known_left, double known_right) {
    const int64_t p = srt.rows, m = srt.cols;
    const bool split = n_left < m;
    constexpr bool absolute = LOSS == ABSOLUTE;
    SideStats st(d.width, m, absolute);
    int64_t n_side[2] = {0, 0};
    double lo[2] = {INF, INF}, hi[2] = {-INF, -INF}, weight[2] = {0.0, 0.0};
    const int32_t *rows0 = srt.row(0), *ly0 = lay.ly.row(0);
    const double *lw0 = lay.lw.row(0);
    auto side_of = [&](int64_t g, int64_t t) { return split && key[g * key_cols + t] >= n_left ? 1 : 0; };
    for (int64_t t = 0; t < m; ++t) {
        int64_t i = rows0[t];
        int s = side_of(0, t);
        weight[s] += lw0[t];
        n_side[s] += 1;
        if constexpr (LOSS == MISCLASSIFICATION) {
            st.total(s, ly0[t]) += lw0[t];
        } else {
            add_row<LOSS>(st.total.row(s), i, d);
            lo[s] = std::min(lo[s], d.target(i));
            hi[s] = std::max(hi[s], d.target(i));
        }
    }
    double dist_total[2] = {weight[0], weight[1]};
    if constexpr (LOSS != MISCLASSIFICATION) {
        dist_total[0] = dist_total[1] = 0.0;
        for (int64_t t = 0; t < m; ++t) {
            int s = side_of(0, t);
            dist_total[s] += row_dist<LOSS>(rows0[t], d, lo[s], hi[s]);
        }
    }
    if constexpr (absolute) {
        for (int64_t t = 0; t < m; ++t) {
            int64_t i = rows0[t];
            int s = side_of(0, t);
            fenwick_add(st.tw.row(s), st.ty.row(s), st.n, order.rank_of[i], d.w[i], d.stat(i)[1]);
        }
    }
    PairResult out;
    double bar[2];
    for (int s = 0; s < 2; ++s) {
        out.cost[s] = st.template split_costs<LOSS>(s, order.values.data()).second;
        bar[s] = std::min(out.cost[s], upper - (s == 0 ? known_right : known_left));
        out.feature[s] = out.threshold[s] = -1;
    }
    for (int64_t g = 0; g < p; ++g) {
        bool open[2];
        for (int s = 0; s < 2; ++s) open[s] = allowed(s, g) && n_side[s] >= 2 * min_leaf && bar[s] > alpha + EPS;
        if (!(open[0] || open[1])) continue;
        const int32_t *lr = lay.lr.row(g), *ly = lay.ly.row(g), *rows = srt.row(g);
        const double *lw = lay.lw.row(g);
        if (split) {  // the two sides' rows of feature g, each a contiguous run in rank order
            int64_t at[2] = {0, 0};
            const int32_t *kg = key + g * key_cols;
            for (int64_t t = 0; t < m; ++t) {
                int s = kg[t] >= n_left ? 1 : 0;
                int64_t a = at[s]++;
                buf.br(s, a) = lr[t];
                buf.by(s, a) = ly[t];
                buf.bw(s, a) = lw[t];
                if constexpr (LOSS != MISCLASSIFICATION) buf.brow(s, a) = rows[t];
            }
        }
        for (int s = 0; s < 2; ++s) {
            if (!open[s]) continue;
            Run run = split ? Run{buf.br.row(s), buf.by.row(s), buf.brow.row(s), buf.bw.row(s), n_side[s]}
                            : Run{lr, ly, rows, lw, n_side[s]};
            auto [cost, thr] = sweep_side<LOSS>(s, run, bar[s], alpha, min_leaf, d, st, weight[s], dist_total[s],
                                                lo[s], hi[s], order);
            if (thr >= 0) {
                out.cost[s] = bar[s] = cost;
                out.feature[s] = g;
                out.threshold[s] = thr;
            }
        }
    }
    out.lower[0] = std::min(out.cost[0], upper - known_right);
    out.lower[1] = std::min(out.cost[1], upper - known_left);
    return out;
}

}  // namespace optitree
