// Depth-1 trees for both sides of a split in one pass per feature: the inner loop of the depth-2 kernel.
//
// A view's ranks, classes and weights are first copied in its order (Layout); per feature, the rows
// of the two sides are compacted into two contiguous runs (depth1_sides) and each run is swept on
// its own (sweep_classes, sweep_side), its state in registers and free to stop early; two classes
// take one pass over both sides (binary_groups).
#pragma once

#include <memory>

#include "loss.hpp"

namespace optitree {

// A row of a feature's order for the sweeps of regression and of more than two classes: its rank on
// the feature, its row (regression) or class, and its weight, read and moved as one 16-byte unit.
struct Cell {
    int32_t rank, id;
    double w;
};

// Two classes: lr(g, t) = rank(g, srt(g, t)), and each row's signed weight alike, +w for class 0 and
// -w for class 1: as integers (lvi) when every weight of the view is an integer and their sum fits in
// 31 bits, else as doubles (lvd). Regression (GENERAL) and more classes (CLASSES): rank, row or class,
// and weight as Cells. The sweeps read each feature's rows in sequence instead of gathering them from
// the global arrays.
struct Layout {
    Buffer<int32_t> lr;
    enum : int { GENERAL, BINARY_INT, BINARY_DOUBLE, CLASSES } kind = GENERAL;
    Buffer<int32_t> lvi;
    Buffer<double> lvd;
    Buffer<Cell> cells;
    bool binary() const { return kind == BINARY_INT || kind == BINARY_DOUBLE; }
};

inline Layout make_layout(View srt, Ranks rank, const Targets &d) {
    Layout lay;
    if (d.loss != MISCLASSIFICATION || d.width > 2) {
        const bool regression = d.loss != MISCLASSIFICATION;
        lay.kind = regression ? Layout::GENERAL : Layout::CLASSES;
        lay.cells = Buffer<Cell>(srt.rows, srt.cols);
        for (int64_t g = 0; g < srt.rows; ++g) {
            const int32_t *rows = srt.row(g), *rk = rank.row(g);
            Cell *c = lay.cells.row(g);
            for (int64_t t = 0; t < srt.cols; ++t)
                c[t] = Cell{rk[rows[t]], regression ? rows[t] : d.y[rows[t]], d.w[rows[t]]};
        }
        return lay;
    }
    lay.lr = Buffer<int32_t>(srt.rows, srt.cols);
    for (int64_t g = 0; g < srt.rows; ++g) {
        const int32_t *rows = srt.row(g), *rk = rank.row(g);
        int32_t *lr = lay.lr.row(g);
        for (int64_t t = 0; t < srt.cols; ++t) lr[t] = rk[rows[t]];
    }
    const bool integral = d.int32_weights(srt.row(0), srt.cols);
    lay.kind = integral ? Layout::BINARY_INT : Layout::BINARY_DOUBLE;
    if (integral) lay.lvi = Buffer<int32_t>(srt.rows, srt.cols);
    else lay.lvd = Buffer<double>(srt.rows, srt.cols);
    for (int64_t g = 0; g < srt.rows; ++g) {
        const int32_t *rows = srt.row(g);
        for (int64_t t = 0; t < srt.cols; ++t) {
            const int32_t i = rows[t];
            double v = d.y[i] == 0 ? d.w[i] : -d.w[i];
            if (integral) lay.lvi(g, t) = static_cast<int32_t>(v);
            else lay.lvd(g, t) = v;
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

// Buffers of depth1_sides for views of up to m rows of layout lay: each side's cells (none for two
// classes, whose binary_groups needs none).
struct Scratch {
    Buffer<Cell> bc;
    Scratch(int64_t m, const Layout &lay) {
        if (!lay.binary()) bc = Buffer<Cell>(2, m);
    }
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

// Best threshold of one feature for side s below bar, squared or absolute error: (cost,
// rank_threshold), the threshold -1 when none is below bar.
//
// Stops early: similarity skip (a threshold whose cost exceeds the bar by k cannot be beaten before
// rows of total row_dist above k have moved left), a zero-cost right side (monotone), a bar at
// alpha, or too few rows left for a leaf.
template <int LOSS>
inline std::pair<double, int64_t> sweep_side(int s, const Cell *run, int64_t n, double bar, double alpha, int64_t min_leaf,
                                             const Targets &d, SideStats &st, double dist_total, double lo, double hi,
                                             const TargetOrder &order) {
    static_assert(LOSS != MISCLASSIFICATION, "misclassification sweeps: sweep_classes, binary_groups");
    constexpr bool absolute = LOSS == ABSOLUTE;
    st.reset_prefix(s, absolute);
    double prefix[3] = {0.0, 0.0, 0.0};  // of the rows sent left so far, held here rather than in st
    int64_t found = -1, pn = 0, prev = -1;
    double pd = 0.0, skip = 0.0;
    for (int64_t t = 0; t < n; ++t) {
        const Cell c = run[t];
        const int64_t rt = c.rank;
        if (pn >= min_leaf && rt != prev && skip < EPS) {
            auto [left_cost, right_cost] = st.template split_costs<LOSS>(s, order.values.data(), prefix);
            double cost = alpha + left_cost + right_cost;
            if (cost < bar - EPS) {
                bar = cost;
                found = prev;
            }
            // no threshold beats the bar before rows of total distance above `skip` have moved
            skip = std::max(cost - bar, 0.0);
            if (right_cost <= EPS || skip >= dist_total - pd - EPS || bar <= alpha + EPS) break;
        }
        const int64_t i = c.id;
        add_row<LOSS>(prefix, i, d);
        if constexpr (absolute) {
            fenwick_add(st.fw.row(s), st.fy.row(s), st.n, order.rank_of[i], c.w, d.stat(i)[1]);
        }
        const double dist = row_dist<LOSS>(i, d, lo, hi);
        pd += dist;
        pn += 1;
        prev = rt;
        skip -= dist;
        if (n - pn < min_leaf) break;
    }
    return {bar, found};
}

// Best threshold of one feature for one side below bar, misclassification over a run of n cells
// (more than two classes): (cost, rank_threshold), the threshold -1 when none is below bar; its
// state in registers. total: the side's class weights, prefix: width zeros to accumulate in,
// weight: the side's weight. Stops early as sweep_side does, its skip the class skip:
//
// With class weights L_k left and R_k right of the threshold, T_k = L_k + R_k and W = Σ T_k, a
// threshold further on moves weights d_k >= 0 (total D) from right to left, and its cost is
// alpha + W - max_k (L_k + d_k) - max_j (R_j - d_j). The two maxima are taken at one class
// (sum <= max T) or at two (<= L_k + R_j + D, k != j), so
//     cost' >= alpha + W - max(max_k T_k, C + D),   C = max_{k != j} (L_k + R_j).
// alpha + W - max T is the leaf's cost plus alpha, never below the bar, so a threshold beats the
// bar only once D > alpha + W - C - bar: the skip. C comes from the two largest L_k and R_j.
inline std::pair<double, int64_t> sweep_classes(const Cell *run, int64_t n, double bar, double alpha, int64_t min_leaf,
                                                const double *total, double *prefix, int64_t width, double weight) {
    int64_t found = -1, pn = 0;
    int32_t prev = -1;
    double pw = 0.0, skip = 0.0;
    for (int64_t t = 0; t < n; ++t) {
        const Cell c = run[t];
        if (pn >= min_leaf && c.rank != prev && skip < EPS) {
            TopTwo left, right;  // the two largest L_k and R_j
            for (int64_t k = 0; k < width; ++k) {
                left.add(prefix[k], k);
                right.add(total[k] - prefix[k], k);
            }
            const double left_cost = pw - left.top, right_cost = weight - pw - right.top;
            const double cross = left.arg != right.arg ? left.top + right.top
                                                       : std::max(left.top + right.next, left.next + right.top);
            const double cost = alpha + left_cost + right_cost;
            if (cost < bar - EPS) {
                bar = cost;
                found = prev;
            }
            skip = alpha + weight - cross - bar;  // the class skip
            if (right_cost <= EPS || skip >= weight - pw - EPS || bar <= alpha + EPS) break;
        }
        prefix[c.id] += c.w;
        pw += c.w;
        pn += 1;
        prev = c.rank;
        skip -= c.w;
        if (n - pn < min_leaf) break;
    }
    return {bar, found};
}

// Two classes: the best split on one feature of each of k groups of rows (the two sides of a split)
// in one pass over the feature's rows (no compaction, no early stop). With class weights
// T0, T1 of a group and D(s) = Σ w [y = 0] - w [y = 1] over its rows of rank <= s, the misclassified
// weight of its split at s is min(T0, T1, T1 + D(s), T0 - D(s)) (each child predicts its majority:
// four combinations), so the group's best split needs only the least and the largest D over its
// thresholds (a rank change within the group, >= least rows each side). group_of(t): the group of
// the feature's t-th row. best[j] = (misclassified weight, rank threshold), threshold -1 when no
// split fits.
template <class V>
struct Groups {
    std::vector<int64_t> n;  // rows per group
    std::vector<V> t0, t1;   // class weights per group
    std::vector<V> acc, lo, hi;
    std::vector<int32_t> prev, lo_at, hi_at;
    std::vector<int64_t> count;
    explicit Groups(size_t k) : n(k, 0), t0(k, 0), t1(k, 0), acc(k), lo(k), hi(k), prev(k), lo_at(k), hi_at(k), count(k) {}
};

template <class V, class GroupOf>
inline void binary_groups(const int32_t *lr, const V *lv, int64_t m, GroupOf group_of, int64_t least, Groups<V> &gr,
                          std::pair<double, int64_t> *best) {
    const size_t k = gr.n.size();
    std::fill(gr.acc.begin(), gr.acc.end(), V(0));
    std::fill(gr.prev.begin(), gr.prev.end(), -1);
    std::fill(gr.lo_at.begin(), gr.lo_at.end(), -1);
    std::fill(gr.hi_at.begin(), gr.hi_at.end(), -1);
    std::fill(gr.count.begin(), gr.count.end(), 0);
    V *acc = gr.acc.data(), *lo = gr.lo.data(), *hi = gr.hi.data();
    int32_t *prev = gr.prev.data(), *lo_at = gr.lo_at.data(), *hi_at = gr.hi_at.data();
    int64_t *count = gr.count.data();
    const int64_t *n = gr.n.data();
    for (int64_t t = 0; t < m; ++t) {
        const size_t s = size_t(group_of(t));
        const int32_t r = lr[t];
        const V x = acc[s];
        if (r != prev[s] && count[s] >= least && n[s] - count[s] >= least) {
            if (lo_at[s] < 0 || x < lo[s]) lo[s] = x, lo_at[s] = prev[s];
            if (hi_at[s] < 0 || x > hi[s]) hi[s] = x, hi_at[s] = prev[s];
        }
        acc[s] = x + lv[t];
        prev[s] = r;
        count[s] += 1;
    }
    for (size_t s = 0; s < k; ++s) {
        if (lo_at[s] < 0) {
            best[s] = {INF, -1};
            continue;
        }
        const V by_lo = gr.t1[s] + lo[s], by_hi = gr.t0[s] - hi[s];
        const V err = std::min({gr.t0[s], gr.t1[s], by_lo, by_hi});
        best[s] = {double(err), by_lo <= by_hi ? lo_at[s] : hi_at[s]};
    }
}

// The cells of side 0 (key < n_left) into side0 and of side 1 into side1, in order, for the open
// sides: without branches (the sides alternate at random), each cell stored at both sides' next
// place and only its own side's place advanced.
inline void compact_sides(const Cell *cells, const int32_t *key, int64_t m, int64_t n_left, const bool open[2],
                          Cell *side0, Cell *side1) {
    int64_t a0 = 0, a1 = 0;
    if (open[0] && open[1]) {
        for (int64_t t = 0; t < m; ++t) {
            const Cell c = cells[t];
            const int64_t s = key[t] >= n_left;
            side0[a0] = c;
            side1[a1] = c;
            a0 += 1 - s;
            a1 += s;
        }
        return;
    }
    Cell *out = open[0] ? side0 : side1;
    const int32_t want = open[0] ? 0 : 1;
    for (int64_t t = 0; t < m; ++t) {
        out[a0] = cells[t];
        a0 += (key[t] >= n_left) == want;
    }
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
//
// Per feature: split_bound (null: none) holds lower bounds (2, p) on c_g(side s) = min(cost of the
// side's best split on feature g, alpha + the side's leaf cost); a side whose bound reaches its bar is
// not swept (c_g >= bar > leaf: no split on g beats the bar), and features are taken in increasing
// order of their bounds (the promising ones lower the bars first). split_out (null: not kept)
// receives such bounds for this split: from the sweep's final bar (a sweep that stops has proven
// that no threshold of g beats it, one that found a threshold ends at its cost), else the given
// bound, alpha where the bar is already at alpha. c_g, unlike the best split alone, is monotone in
// the set (a split of a superset restricted to the set is a split of it or, one side empty, its leaf
// plus alpha) and moves by at most the distance of rows added (similarity), as a side's optimum does.
template <int LOSS>
PairResult depth1_sides(View srt, const Layout &lay, const int32_t *key, int64_t key_cols, int64_t n_left,
                        Scratch &buf, const Targets &d, const TargetOrder &order, Allowed allowed, double alpha,
                        int64_t min_leaf, double upper, double known_left, double known_right,
                        const double *split_bound = nullptr, double *split_out = nullptr) {
    const int64_t p = srt.rows, m = srt.cols;
    const bool split = n_left < m;
    constexpr bool absolute = LOSS == ABSOLUTE;
    SideStats st(d.width, m, absolute);
    int64_t n_side[2] = {0, 0};
    double lo[2] = {INF, INF}, hi[2] = {-INF, -INF}, weight[2] = {0.0, 0.0};
    const int32_t *rows0 = srt.row(0);
    auto side_of = [&](int64_t g, int64_t t) { return split && key[g * key_cols + t] >= n_left ? 1 : 0; };
    for (int64_t t = 0; t < m; ++t) {
        int64_t i = rows0[t];
        int s = side_of(0, t);
        weight[s] += d.w[i];
        n_side[s] += 1;
        if constexpr (LOSS == MISCLASSIFICATION) {
            st.total(s, d.y[i]) += d.w[i];
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
    const double cap[2] = {alpha + out.cost[0], alpha + out.cost[1]};  // alpha + each side's leaf
    std::unique_ptr<Groups<int32_t>> gi;  // two classes: the two sides as groups
    std::unique_ptr<Groups<double>> gd;
    if constexpr (LOSS == MISCLASSIFICATION) {
        auto fill = [&](auto &gr) {
            for (int s = 0; s < 2; ++s) {
                gr.n[s] = n_side[s];
                gr.t0[s] = st.total(s, 0);
                gr.t1[s] = st.total(s, 1);
            }
        };
        if (lay.kind == Layout::BINARY_INT) fill(*(gi = std::make_unique<Groups<int32_t>>(2)));
        if (lay.kind == Layout::BINARY_DOUBLE) fill(*(gd = std::make_unique<Groups<double>>(2)));
    }
    std::vector<int64_t> features(static_cast<size_t>(p));
    std::iota(features.begin(), features.end(), int64_t{0});
    if (split_bound)
        std::stable_sort(features.begin(), features.end(), [&](int64_t a, int64_t b) {
            return split_bound[a] + split_bound[p + a] < split_bound[b] + split_bound[p + b];
        });
    for (int64_t g : features) {
        bool open[2];
        for (int s = 0; s < 2; ++s) {
            const bool fits = n_side[s] >= 2 * min_leaf;
            open[s] = allowed(s, g) && fits && bar[s] > alpha + EPS;
            const double given = split_bound ? split_bound[s * p + g] : 0.0;
            if (open[s] && given >= bar[s] - EPS) open[s] = false;
            if (split_out)
                split_out[s * p + g] = std::min(cap[s], !fits ? INF : bar[s] <= alpha + EPS ? std::max(alpha, given) : given);
        }
        if (!(open[0] || open[1])) continue;
        if constexpr (LOSS == MISCLASSIFICATION) {
            if (lay.binary()) {  // two classes: one pass, both sides exact
                std::pair<double, int64_t> found[2];
                const int32_t *kg = key + g * key_cols;
                auto side_of = [&](int64_t t) { return split && kg[t] >= n_left ? 1 : 0; };
                const int64_t least = std::max<int64_t>(min_leaf, 1);
                if (lay.kind == Layout::BINARY_INT) binary_groups(lay.lr.row(g), lay.lvi.row(g), m, side_of, least, *gi, found);
                else binary_groups(lay.lr.row(g), lay.lvd.row(g), m, side_of, least, *gd, found);
                for (int s = 0; s < 2; ++s) {
                    const double cost = alpha + found[s].first;
                    if (open[s] && found[s].second >= 0 && cost < bar[s] - EPS) {
                        out.cost[s] = bar[s] = cost;
                        out.feature[s] = g;
                        out.threshold[s] = found[s].second;
                    }
                    if (split_out) split_out[s * p + g] = std::min(cap[s], std::max(split_out[s * p + g], cost));
                }
                continue;
            }
        }
        // each open side's rows of feature g, a contiguous run in rank order, swept on its own
        std::pair<double, int64_t> swept[2];
        const Cell *cells = lay.cells.row(g);
        const Cell *runs[2] = {cells, cells};
        if (split) {
            compact_sides(cells, key + g * key_cols, m, n_left, open, buf.bc.row(0), buf.bc.row(1));
            runs[0] = buf.bc.row(0), runs[1] = buf.bc.row(1);
        }
        for (int s = 0; s < 2; ++s) {
            if (!open[s]) continue;
            if constexpr (LOSS == MISCLASSIFICATION) {  // more than two classes
                std::fill(st.prefix.row(s), st.prefix.row(s) + d.width, 0.0);
                swept[s] = sweep_classes(runs[s], n_side[s], bar[s], alpha, min_leaf, st.total.row(s), st.prefix.row(s),
                                         d.width, weight[s]);
            } else {
                swept[s] = sweep_side<LOSS>(s, runs[s], n_side[s], bar[s], alpha, min_leaf, d, st, dist_total[s], lo[s],
                                            hi[s], order);
            }
        }
        for (int s = 0; s < 2; ++s) {
            if (!open[s]) continue;
            auto [cost, thr] = swept[s];
            if (thr >= 0) {
                out.cost[s] = bar[s] = cost;
                out.feature[s] = g;
                out.threshold[s] = thr;
            }
            if (split_out) split_out[s * p + g] = std::min(cap[s], std::max(split_out[s * p + g], cost));
        }
    }
    out.lower[0] = std::min(out.cost[0], upper - known_right);
    out.lower[1] = std::min(out.cost[1], upper - known_left);
    return out;
}

}  // namespace optitree
