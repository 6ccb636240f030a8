// The depth-2 kernel and the pieces of the threshold search the Python search calls.
//
// Conventions shared by every kernel:
//   * rank(f, i) is the dense rank of row i on feature f (0 = smallest value); a split (f, r) sends
//     row i left when rank(f, i) <= r;
//   * a sample set is a view srt of shape (p, m): row f lists the set's rows sorted by rank(f)
//     (ties in one fixed global order, so the view of a set is unique whatever path produced it);
//   * costs are the loss of the leaves plus alpha per split; min_leaf counts rows.
#pragma once

#include "sweep.hpp"

namespace optitree {

// Allowed features sorted by the cost of their best single split (best first): searching the most
// promising features first gives strong incumbents early, which prunes the others' thresholds.
template <int LOSS>
std::vector<int64_t> stump_order(View srt, Ranks rank, const Targets &d, const bool *allowed) {
    const int64_t p = srt.rows, m = srt.cols;
    constexpr bool absolute = LOSS == ABSOLUTE;
    SideStats st(d.width, m, absolute);
    double *total = st.total.row(0), *prefix = st.prefix.row(0);
    double weight = 0.0;
    const int32_t *rows0 = srt.row(0);
    for (int64_t t = 0; t < m; ++t) {
        add_row<LOSS>(total, rows0[t], d);
        weight += d.w[rows0[t]];
    }
    TargetOrder order;
    if constexpr (absolute) {
        order = local_target_ranks(rows0, m, d, rank.cols);
        for (int64_t t = 0; t < m; ++t) {
            int64_t i = rows0[t];
            fenwick_add(st.tw.row(0), st.ty.row(0), st.n, order.rank_of[i], d.w[i], d.stat(i)[1]);
        }
    }
    const double *values = order.values.data();
    std::vector<double> score(static_cast<size_t>(p), INF);
    const double no_split = st.template split_costs<LOSS>(0, values).second + 1.0;
    for (int64_t g = 0; g < p; ++g) {
        if (!allowed[g]) continue;
        score[g] = no_split;  // no split: after every feature that has one
        st.reset_prefix(0, absolute);
        const int32_t *rows = srt.row(g), *rk = rank.row(g);
        for (int64_t t = 0; t < m; ++t) {
            int64_t i = rows[t];
            if (t > 0 && rk[i] != rk[rows[t - 1]]) {
                if constexpr (LOSS == MISCLASSIFICATION) {
                    double left_top = 0.0, right_top = 0.0;
                    for (int64_t k = 0; k < d.width; ++k) {
                        left_top = std::max(left_top, prefix[k]);
                        right_top = std::max(right_top, total[k] - prefix[k]);
                    }
                    score[g] = std::min(score[g], weight - left_top - right_top);
                } else {
                    auto [left_cost, right_cost] = st.template split_costs<LOSS>(0, values);
                    score[g] = std::min(score[g], left_cost + right_cost);
                }
            }
            add_row<LOSS>(prefix, i, d);
            if constexpr (absolute) fenwick_add(st.fw.row(0), st.fy.row(0), st.n, order.rank_of[i], d.w[i], d.stat(i)[1]);
            st.pw[0] += d.w[i];
        }
    }
    std::vector<int64_t> sorted = stable_order(score.data(), p);
    int64_t count = 0;
    for (int64_t g = 0; g < p; ++g) count += allowed[g] ? 1 : 0;
    sorted.resize(static_cast<size_t>(count));
    return sorted;
}

// Thresholds of feature within a view that leave >= min_leaf rows on each side, in increasing
// order: the rank threshold, the rows sent left and dist_left, the sum of row_dist over them (the
// view's target range): the distance of the similarity bound.
struct Candidates {
    std::vector<int64_t> rank_threshold, n_left;
    std::vector<double> dist_left;
};

inline Candidates candidates(View srt, Ranks rank, const Targets &d, int64_t feature, int64_t min_leaf) {
    const int64_t m = srt.cols;
    auto [lo, hi] = target_range(srt.row(0), m, d);
    Candidates out;
    const int32_t *rows = srt.row(feature), *rk = rank.row(feature);
    double cum = 0.0;
    for (int64_t t = 0; t < m; ++t) {
        int64_t i = rows[t];
        if (t > 0) {
            int64_t r_prev = rk[rows[t - 1]];
            if (rk[i] != r_prev && t >= min_leaf && m - t >= min_leaf) {
                out.rank_threshold.push_back(r_prev);
                out.n_left.push_back(t);
                out.dist_left.push_back(cum);
            }
        }
        cum += row_dist(d.loss, i, d, lo, hi);
    }
    return out;
}

// The views of the two sides of the split rank_row[i] <= split_rank (order kept), into left
// (p, n_left) and right (p, m - n_left).
inline void partition(View srt, const int32_t *rank_row, int64_t split_rank, int32_t *left, int32_t *right,
                      int64_t n_left) {
    const int64_t m = srt.cols;
    for (int64_t g = 0; g < srt.rows; ++g) {
        const int32_t *rows = srt.row(g);
        int32_t *a = left + g * n_left, *b = right + g * (m - n_left);
        for (int64_t t = 0; t < m; ++t) {
            int32_t i = rows[t];
            if (rank_row[i] <= split_rank) *a++ = i;
            else *b++ = i;
        }
    }
}

// A partition of a view's rows, in one feature's order, into slabs of consecutive positions
// [end[j - 1], end[j]) (end[-1] = 0), with a lower bound (term) on each slab's optimum without
// alpha: the sum over the slabs inside a set bounds the set's optimum from below where optima are
// superadditive, OPT(A ∪ B) >= OPT_alpha(A) + OPT_0(B) for disjoint A, B (a tree's best leaves on
// A ∪ B cost at least its best leaves on A and on B; without a minimum leaf size).
struct Slabs {
    std::vector<int64_t> end;    // increasing; the last is the view's size
    std::vector<double> prefix;  // prefix[j]: the sum of the first j terms

    // The sum of the terms of the slabs within positions [lo, hi).
    double inside(int64_t lo, int64_t hi) const {
        const size_t first = lo <= 0 ? 0 : size_t(std::lower_bound(end.begin(), end.end(), lo) - end.begin()) + 1;
        const size_t stop = size_t(std::upper_bound(end.begin(), end.end(), hi) - end.begin());
        return stop > first ? prefix[stop] - prefix[first] : 0.0;
    }

    // A bound for every cut: the terms of all slabs but the largest (the one a cut may fall in).
    double any_cut() const {
        double largest = 0.0;
        for (size_t j = 0; j + 1 < prefix.size(); ++j) largest = std::max(largest, prefix[j + 1] - prefix[j]);
        return prefix.back() - largest;
    }
};

// What the threshold search knows per candidate: dist_left (increasing) and the children bounds
// of solved candidates (ev_left, ev_right); optionally the slabs of the feature's order (n_left: the
// rows each candidate sends left, rows: the view's).
struct Neighbours {
    const double *dist_left, *ev_left, *ev_right;
    int64_t count;
    bool monotone;
    const Slabs *slabs = nullptr;
    const int64_t *n_left = nullptr;
    int64_t rows = 0;

    // Lower bounds on the two children's optima at candidate j from the solved neighbours a < j < b
    // (-1 / count: none). Moving rows of total distance k into (out of) a set changes its optimum
    // by at most k (similarity bound); where monotone, a superset's optimum is never below the
    // subset's. With slabs, L_j is L_a and the rows between a's cut and j's, so OPT(L_j) >= OPT(L_a)
    // + the terms of the slabs between (and >= the terms of every slab inside L_j); likewise R_j.
    std::pair<double, double> point_bounds(int64_t j, int64_t a, int64_t b) const {
        double lo_left = 0.0, lo_right = 0.0;
        if (slabs) {
            const int64_t cut = n_left[j], from = a >= 0 ? n_left[a] : 0, to = b < count ? n_left[b] : rows;
            lo_left = std::max((a >= 0 ? ev_left[a] : 0.0) + slabs->inside(from, cut), slabs->inside(0, cut));
            lo_right = std::max((b < count ? ev_right[b] : 0.0) + slabs->inside(cut, to), slabs->inside(cut, rows));
        }
        if (a >= 0) {
            lo_right = std::max(lo_right, ev_right[a] - (dist_left[j] - dist_left[a]));
            if (monotone) lo_left = std::max(lo_left, ev_left[a]);
        }
        if (b < count) {
            lo_left = std::max(lo_left, ev_left[b] - (dist_left[b] - dist_left[j]));
            if (monotone) lo_right = std::max(lo_right, ev_right[b]);
        }
        return {lo_left, lo_right};
    }

    // The bounds on candidate j's children: the neighbours', raised to known_left/known_right[j].
    std::pair<double, double> bounds_at(int64_t j, int64_t a, int64_t b, const double *known_left,
                                        const double *known_right) const {
        auto [bl, br] = point_bounds(j, a, b);
        return {std::max(bl, known_left[j]), std::max(br, known_right[j])};
    }

    // Drop candidates at both ends of [lo, hi] whose bound (the neighbours', or the one already
    // in out_left/out_right) reaches limit, recording their bounds there (elementwise max).
    // Returns the remaining (lo, hi), empty when lo > hi.
    std::pair<int64_t, int64_t> shrink(int64_t lo, int64_t hi, int64_t a, int64_t b, double limit,
                                       double *out_left, double *out_right) const {
        auto drops = [&](int64_t j) {
            auto [bl, br] = bounds_at(j, a, b, out_left, out_right);
            if (bl + br < limit - EPS) return false;
            out_left[j] = bl;
            out_right[j] = br;
            return true;
        };
        while (lo <= hi && drops(lo)) ++lo;
        while (hi >= lo && drops(hi)) --hi;
        return {lo, hi};
    }

    // The least children bound over the candidates of [lo, hi], from the neighbours and the known
    // bounds; with record, each candidate's bounds are stored into out_left/out_right.
    double lowest(int64_t lo, int64_t hi, int64_t a, int64_t b, double *out_left, double *out_right,
                  bool record) const {
        double least = INF;
        for (int64_t j = lo; j <= hi; ++j) {
            auto [bl, br] = bounds_at(j, a, b, out_left, out_right);
            if (record) {
                out_left[j] = bl;
                out_right[j] = br;
            }
            least = std::min(least, bl + br);
        }
        return least;
    }
};

// Rows per slab of the depth-2 kernel's slab bounds (depth1_slabs); views of fewer than twice as many take none.
constexpr int64_t KERNEL_SLAB_ROWS = 300;

// Two classes: a view cut into slabs of about KERNEL_SLAB_ROWS consecutive rows in the order of a
// root feature (key: positions() of it), each slab's term its optimum at depth 1 without alpha,
// over the features allowed in either child (the least misclassified weight of a leaf or of one
// split; without a minimum leaf size); one pass per feature. As in binary_groups, a slab's best
// split needs only the least and largest D over its cuts; here every rank change within the slab
// counts, the one before its first row too (D = 0: its leaf cost, never below it), so a slab's
// state is its D, the rank of its last row and the two extremes.
template <class V>
Slabs depth1_slabs(const Layout &lay, const V *signed_weight, const int32_t *key, int64_t m, int64_t p,
                   Allowed allowed_child) {
    const int64_t k = std::max<int64_t>(2, m / KERNEL_SLAB_ROWS);
    Slabs out;
    std::vector<int32_t> slab_at(static_cast<size_t>(m));
    for (int64_t j = 0, start = 0; j < k; ++j) {
        const int64_t end = (j + 1) * m / k;
        std::fill(slab_at.begin() + start, slab_at.begin() + end, int32_t(j));
        out.end.push_back(end);
        start = end;
    }
    std::vector<V> t0(static_cast<size_t>(k), V(0)), t1(static_cast<size_t>(k), V(0));
    for (int64_t t = 0; t < m; ++t) {
        const int32_t j = slab_at[size_t(key[t])];
        const V v = signed_weight[t];
        if (v > 0) t0[j] += v;
        else t1[j] -= v;
    }
    std::vector<double> term(static_cast<size_t>(k));
    for (int64_t j = 0; j < k; ++j) term[j] = double(std::min(t0[j], t1[j]));
    struct State {
        V d, lo, hi;
        int32_t prev;
    };
    std::vector<State> state(static_cast<size_t>(k));
    for (int64_t g = 0; g < p; ++g) {
        if (!allowed_child(0, g) && !allowed_child(1, g)) continue;
        std::fill(state.begin(), state.end(), State{V(0), std::numeric_limits<V>::max(), std::numeric_limits<V>::lowest(), -1});
        const int32_t *kg = key + g * m, *lr = lay.lr.row(g);
        const V *v = signed_weight + g * m;
        for (int64_t t = 0; t < m; ++t) {
            State &x = state[size_t(slab_at[size_t(kg[t])])];
            if (lr[t] != x.prev) {
                x.lo = std::min(x.lo, x.d);
                x.hi = std::max(x.hi, x.d);
            }
            x.d += v[t];
            x.prev = lr[t];
        }
        for (int64_t j = 0; j < k; ++j) {
            const State &x = state[size_t(j)];
            term[j] = std::min({term[j], double(t1[j] + x.lo), double(t0[j] - x.hi)});
        }
    }
    out.prefix.assign(1, 0.0);
    for (double v : term) out.prefix.push_back(out.prefix.back() + v);
    return out;
}

// Least and largest prefix sums of two sequences of leaves at once (a split's two sides): leaf k
// of side s is a weight w_k followed by a set of values (their least and largest in base; none:
// +inf, -inf), and the tree answers min and max over k and a value b of w_0 + ... + w_k + b. A
// segment tree of (sum, least prefix, largest prefix) per side; a leaf's two weights set in
// O(log leaves).
struct PrefixTree {
    struct Node {
        double sum[2], lo[2], hi[2];
    };
    int64_t size = 1;
    std::vector<Node> node, base;  // base[k]: leaf k's values (sum unused)

    // leaves leaves, weights 0, no values (the caller fills base, then sets every leaf and builds).
    void reset(int64_t leaves) {
        size = 1;
        while (size < leaves) size *= 2;
        const Node empty{{0.0, 0.0}, {INF, INF}, {-INF, -INF}};
        node.assign(size_t(2 * size), empty);
        base.assign(size_t(size), empty);
    }
    void leaf(int64_t k, double w0, double w1) {
        Node &n = node[size_t(size + k)];
        const Node &b = base[size_t(k)];
        n.sum[0] = w0, n.sum[1] = w1;
        for (int s = 0; s < 2; ++s) n.lo[s] = n.sum[s] + b.lo[s], n.hi[s] = n.sum[s] + b.hi[s];
    }
    void pull(size_t i) {
        Node &n = node[i];
        const Node &l = node[2 * i], &r = node[2 * i + 1];
        for (int s = 0; s < 2; ++s) {
            n.sum[s] = l.sum[s] + r.sum[s];
            n.lo[s] = std::min(l.lo[s], l.sum[s] + r.lo[s]);
            n.hi[s] = std::max(l.hi[s], l.sum[s] + r.hi[s]);
        }
    }
    void build() {
        for (size_t i = size_t(size) - 1; i >= 1; --i) pull(i);
    }
    void set(int64_t k, double w0, double w1) {
        leaf(k, w0, w1);
        for (size_t i = size_t(size + k) / 2; i >= 1; i /= 2) pull(i);
    }
    const Node &root() const { return node[1]; }
};

// Two classes, without a minimum leaf size: the depth-1 optima of both sides of every candidate
// of an interval at once. Candidate j (0 <= j < c) of root feature f sends the rows of positions
// < cut[j] in f's order left (cut increasing; key: positions() of f); the rows of positions
// [cut[0], cut[c - 1]) move, right at candidate 0, left from the candidate whose cut passes them.
//
// Per child feature g, one pass over g's order: each side's D (binary_groups) over its rows that
// never move, at every cut of g (a rank change of the view; a cut that leaves a side empty gives
// its leaf cost, never below it), the cuts grouped into segments k = 0..M by the number of moved
// rows before them. At a cut of segment k a side's D is that base plus w_1 + ... + w_k, w_i the
// weight of the i-th moved row in g's order when the side holds it, else 0: the side's least and
// largest D are the least and largest prefix of a PrefixTree (leaf k: w_k, segment k's base
// values), and a moved row changing sides is one leaf on each side's tree. The pass is O(m), each
// candidate O(rows moved × log M) instead of a pass of its own.
//
// bound (2, p): lower bounds on c_g (depth1_sides) of each side at every candidate; a feature is
// not swept when on each side it is not allowed or its bound reaches min(limit, the side's largest
// leaf cost): a split on it then either costs no less than the leaf or leaves no tree of cost
// below limit. out_left[j], out_right[j] receive min(leaf, alpha + the least error of a split on
// a swept feature allowed on that side) for candidate j: the side's optimum wherever the two sum
// to less than limit (a side whose optimum splits on a feature not swept costs limit or more).
template <class V>
void interval_sides(const Layout &lay, const V *signed_weight, const int32_t *key, int64_t m, int64_t p, int64_t f,
                    const int64_t *cut, int64_t c, Allowed allowed, const double *bound, double limit, double alpha,
                    double *out_left, double *out_right) {
    const int64_t c0 = cut[0], c1 = cut[c - 1], M = c1 - c0;
    // class weights of each side at each candidate
    std::vector<double> t0(static_cast<size_t>(2 * c), 0.0), t1(static_cast<size_t>(2 * c), 0.0);
    double base0[2] = {0.0, 0.0}, base1[2] = {0.0, 0.0};
    const V *vf = signed_weight + f * m;
    for (int64_t q = 0; q < m; ++q) {
        if (q >= c0 && q < c1) continue;
        const int s = q < c0 ? 0 : 1;
        (vf[q] > 0 ? base0[s] : base1[s]) += double(vf[q] > 0 ? vf[q] : -vf[q]);
    }
    double moved0 = 0.0, moved1 = 0.0, all0 = 0.0, all1 = 0.0;
    for (int64_t q = c0; q < c1; ++q) (vf[q] > 0 ? all0 : all1) += double(vf[q] > 0 ? vf[q] : -vf[q]);
    for (int64_t j = 0, q = c0; j < c; ++j) {
        for (; q < cut[j]; ++q) (vf[q] > 0 ? moved0 : moved1) += double(vf[q] > 0 ? vf[q] : -vf[q]);
        t0[size_t(j)] = base0[0] + moved0;
        t1[size_t(j)] = base1[0] + moved1;
        t0[size_t(c + j)] = base0[1] + all0 - moved0;
        t1[size_t(c + j)] = base1[1] + all1 - moved1;
    }
    double largest[2] = {0.0, 0.0};  // each side's largest leaf cost
    for (int64_t j = 0; j < c; ++j) {
        out_left[j] = std::min(t0[size_t(j)], t1[size_t(j)]);
        out_right[j] = std::min(t0[size_t(c + j)], t1[size_t(c + j)]);
        largest[0] = std::max(largest[0], out_left[j]);
        largest[1] = std::max(largest[1], out_right[j]);
    }
    PrefixTree tree;
    std::vector<double> weight(static_cast<size_t>(M));   // the moved rows' weights, in g's order
    std::vector<int64_t> slot(static_cast<size_t>(M));    // a moved row's place in g's order, by its position in f's
    for (int64_t g = 0; g < p; ++g) {
        bool use[2];
        for (int s = 0; s < 2; ++s)
            use[s] = allowed(s, g) && bound[s * p + g] < std::min(limit, largest[s]) - EPS;
        if (!(use[0] || use[1])) continue;
        tree.reset(M + 1);
        const int32_t *lr = lay.lr.row(g), *kg = key + g * m;
        const V *v = signed_weight + g * m;
        V d0 = 0, d1 = 0;                                       // each side's base D
        double lo0 = INF, hi0 = -INF, lo1 = INF, hi1 = -INF;  // over the current segment's cuts
        int64_t k = 0;
        for (int64_t t = 0; t < m; ++t) {
            if (t > 0 && lr[t] != lr[t - 1]) {
                lo0 = std::min(lo0, double(d0)), hi0 = std::max(hi0, double(d0));
                lo1 = std::min(lo1, double(d1)), hi1 = std::max(hi1, double(d1));
            }
            const int64_t q = kg[t];
            const bool left = q < c0, right = q >= c1;  // without branches: the sides alternate at random
            d0 += left ? v[t] : V(0);
            d1 += right ? v[t] : V(0);
            if (!(left || right)) {
                tree.base[size_t(k)] = {{0.0, 0.0}, {lo0, lo1}, {hi0, hi1}};
                lo0 = lo1 = INF, hi0 = hi1 = -INF;
                weight[size_t(k)] = double(v[t]);
                slot[size_t(q - c0)] = k;
                ++k;
            }
        }
        tree.base[size_t(M)] = {{0.0, 0.0}, {lo0, lo1}, {hi0, hi1}};
        tree.leaf(0, 0.0, 0.0);
        for (int64_t i = 1; i <= M; ++i) tree.leaf(i, 0.0, weight[size_t(i - 1)]);
        tree.build();
        for (int64_t j = 0; j < c; ++j) {
            if (j > 0) {
                for (int64_t q = cut[j - 1]; q < cut[j]; ++q) {
                    const int64_t i = slot[size_t(q - c0)];
                    tree.set(i + 1, weight[size_t(i)], 0.0);
                }
            }
            double *out[2] = {out_left, out_right};
            const PrefixTree::Node &r = tree.root();
            for (int s = 0; s < 2; ++s) {
                if (!use[s]) continue;
                const double err = std::min(t1[size_t(s * c + j)] + r.lo[s], t0[size_t(s * c + j)] - r.hi[s]);
                out[s][j] = std::min(out[s][j], alpha + err);
            }
        }
    }
}

// depth2 sweeps an interval whole (interval_sides) when its candidates move at most 1 / SWEEP_SHARE
// of the view's rows (measured: 20 000 rows at depth 3, a share of 4 to 8 costs least).
constexpr int64_t SWEEP_SHARE = 8;

// An optimal tree of depth <= 2: its cost, a lower bound on the optimum, and its nodes
// [f, r, f_left, r_left, f_right, r_right] (f = -1: leaf).
struct Depth2Result {
    double cost, lower_bound;
    int64_t nodes[6];
};

// Optimal tree of depth <= 2 for a view, searching for cost < upper_bound.
//
// allowed_root masks the root's features, allowed_child(0/1) its left/right child's. Root features
// are tried best stump first; the thresholds of each are searched by bisection over intervals (as
// ConTree): each evaluated root threshold gets both children by depth1_sides (exact below the bound
// that still matters); the interval between solved thresholds is shrunk or dropped by the
// neighbours' bounds. Two classes without a minimum leaf size: an interval whose candidates move at
// most 1 / SWEEP_SHARE of the rows is instead swept whole (interval_sides), its best candidate's
// tree then taken from depth1_sides. lower_bound = min(cost, upper_bound), equal to the optimum when
// cost < upper_bound. start (cost INF: none) is a tree of the problem, the first incumbent.
template <int LOSS>
Depth2Result depth2(View srt, Ranks rank, const Targets &d, const bool *allowed_root, Allowed allowed_child,
                    double alpha, int64_t min_leaf, double upper_bound, const Depth2Result &start = {INF, 0.0, {}}) {
    const int64_t m = srt.cols, n_total = rank.cols;
    Depth2Result out;
    std::fill(out.nodes, out.nodes + 6, int64_t{-1});
    double best = leaf_cost(srt.row(0), m, d);
    if (start.cost < best) {
        best = start.cost;
        std::copy(start.nodes, start.nodes + 6, out.nodes);
    }
    TargetOrder order = target_order(srt.row(0), m, d, n_total);
    const bool monotone = min_leaf <= 1;
    Layout lay = make_layout(srt, rank, d);
    Scratch buf(m, lay);
    const int64_t p = srt.rows;
    // per settled candidate j: lower bounds on each side's best split on each child feature, (2, p) at
    // 2 p j (written when j is settled, read only for settled neighbours)
    std::unique_ptr<double[]> split_bound(new double[size_t(2 * p * std::max<int64_t>(m, 1))]);
    std::vector<double> given(static_cast<size_t>(2 * p)), interval_bound(static_cast<size_t>(2 * p));
    std::vector<double> side_left(static_cast<size_t>(m)), side_right(static_cast<size_t>(m));  // interval_sides' results
    // two classes, where monotone: an interval whose candidates move few rows is swept whole
    const bool sweeps = LOSS == MISCLASSIFICATION && monotone && lay.binary();
    std::vector<int64_t> queue;  // intervals (lo, hi, a, b), first in first out
    std::vector<int64_t> roots = stump_order<LOSS>(srt, rank, d, allowed_root);
    // Two classes, where monotone: each root feature's slabs; the features are then taken least bound
    // first (any_cut: a bound on every candidate's children), and one whose bound reaches the limit
    // is not searched.
    std::vector<Slabs> slabs(static_cast<size_t>(p));
    std::vector<double> floor(static_cast<size_t>(p), 0.0);
    if constexpr (LOSS == MISCLASSIFICATION) {
        if (monotone && lay.binary() && m >= 2 * KERNEL_SLAB_ROWS) {
            for (int64_t f : roots) {
                Buffer<int32_t> key = positions(srt, f, n_total);
                slabs[f] = lay.kind == Layout::BINARY_INT
                               ? depth1_slabs(lay, lay.lvi.row(0), key.row(0), m, p, allowed_child)
                               : depth1_slabs(lay, lay.lvd.row(0), key.row(0), m, p, allowed_child);
                floor[f] = slabs[f].any_cut();
            }
            std::stable_sort(roots.begin(), roots.end(), [&](int64_t a, int64_t b) { return floor[a] < floor[b]; });
        }
    }
    for (int64_t f : roots) {
        if (std::min(best, upper_bound) <= alpha + EPS) break;
        if (floor[f] >= std::min(best, upper_bound) - alpha - EPS) continue;
        Candidates cand = candidates(srt, rank, d, f, min_leaf);
        const int64_t T = static_cast<int64_t>(cand.rank_threshold.size());
        if (T == 0) continue;
        Buffer<int32_t> key = positions(srt, f, n_total);
        std::vector<double> ev_left(T, 0.0), ev_right(T, 0.0), dropped_left(T, 0.0), dropped_right(T, 0.0);
        Neighbours nb{cand.dist_left.data(), ev_left.data(), ev_right.data(), T, monotone};
        if (!slabs[f].end.empty()) {
            nb.slabs = &slabs[f];
            nb.n_left = cand.n_left.data();
            nb.rows = m;
        }
        // The neighbours' bounds on candidate j's per-feature c_g (depth1_sides) into given, as
        // point_bounds does for the sides' optima: c_g of a subset is no more (where monotone), and of
        // a set with rows of distance k more at most k more.
        auto neighbour_splits = [&](int64_t j, int64_t a, int64_t b) {
            const double *da = a >= 0 ? split_bound.get() + 2 * p * a : nullptr;
            const double *db = b < T ? split_bound.get() + 2 * p * b : nullptr;
            for (int64_t g = 0; g < p; ++g) {
                double left = 0.0, right = 0.0;
                if (da) {
                    right = std::max(right, da[p + g] - (cand.dist_left[j] - cand.dist_left[a]));
                    if (monotone) left = std::max(left, da[g]);
                }
                if (db) {
                    left = std::max(left, db[g] - (cand.dist_left[b] - cand.dist_left[j]));
                    if (monotone) right = std::max(right, db[p + g]);
                }
                given[g] = left;
                given[p + g] = right;
            }
        };
        queue.assign({0, T - 1, -1, T});
        for (size_t head = 0; head < queue.size(); head += 4) {
            int64_t lo = queue[head], hi = queue[head + 1], a = queue[head + 2], b = queue[head + 3];
            double limit = std::min(best, upper_bound) - alpha;
            std::tie(lo, hi) = nb.shrink(lo, hi, a, b, limit, dropped_left.data(), dropped_right.data());
            if (lo > hi) continue;
            if (sweeps && hi > lo && (cand.n_left[hi] - cand.n_left[lo]) * SWEEP_SHARE <= m) {
                // every candidate of [lo, hi] at once; c_g's bounds: the left's least at lo, the right's at hi
                neighbour_splits(lo, a, b);
                std::copy(given.begin(), given.begin() + p, interval_bound.begin());
                neighbour_splits(hi, a, b);
                std::copy(given.begin() + p, given.end(), interval_bound.begin() + p);
                const int64_t c = hi - lo + 1;
                if (lay.kind == Layout::BINARY_INT)
                    interval_sides(lay, lay.lvi.row(0), key.row(0), m, p, f, cand.n_left.data() + lo, c, allowed_child,
                                   interval_bound.data(), limit, alpha, side_left.data(), side_right.data());
                else
                    interval_sides(lay, lay.lvd.row(0), key.row(0), m, p, f, cand.n_left.data() + lo, c, allowed_child,
                                   interval_bound.data(), limit, alpha, side_left.data(), side_right.data());
                int64_t j = 0;
                for (int64_t i = 1; i < c; ++i)
                    if (side_left[i] + side_right[i] < side_left[j] + side_right[j]) j = i;
                if (side_left[j] + side_right[j] < limit - EPS) {  // the tree, by the sweeps of that candidate
                    PairResult pair = depth1_sides<LOSS>(srt, lay, key.row(0), key.cols, cand.n_left[lo + j], buf, d,
                                                         order, allowed_child, alpha, min_leaf, limit, 0.0, 0.0);
                    const double total = alpha + pair.cost[0] + pair.cost[1];
                    if (total < best - EPS) {
                        best = total;
                        int64_t nodes[6] = {f, cand.rank_threshold[lo + j], pair.feature[0], pair.threshold[0],
                                            pair.feature[1], pair.threshold[1]};
                        std::copy(nodes, nodes + 6, out.nodes);
                    }
                }
                continue;
            }
            int64_t mid = (lo + hi) / 2;
            auto [known_left, known_right] = nb.point_bounds(mid, a, b);
            double total = INF;
            PairResult pair{};
            neighbour_splits(mid, a, b);
            double *settled = split_bound.get() + 2 * p * mid;
            if (known_left + known_right >= limit - EPS) {  // its neighbours' bounds drop it
                ev_left[mid] = known_left;
                ev_right[mid] = known_right;
                std::copy(given.begin(), given.end(), settled);
            } else {
                // absolute error: each side is searched only below the limit less the other side's known
                // bound; for the other losses the bounds only drop the middle (faster, measured)
                double side_left = LOSS == ABSOLUTE ? known_left : 0.0;
                double side_right = LOSS == ABSOLUTE ? known_right : 0.0;
                pair = depth1_sides<LOSS>(srt, lay, key.row(0), key.cols, cand.n_left[mid], buf, d, order,
                                          allowed_child, alpha, min_leaf, limit, side_left, side_right,
                                          given.data(), settled);
                ev_left[mid] = std::max(pair.lower[0], known_left);
                ev_right[mid] = std::max(pair.lower[1], known_right);
                total = alpha + pair.cost[0] + pair.cost[1];
            }
            if (total < best - EPS) {
                best = total;
                int64_t nodes[6] = {f, cand.rank_threshold[mid], pair.feature[0], pair.threshold[0],
                                    pair.feature[1], pair.threshold[1]};
                std::copy(nodes, nodes + 6, out.nodes);
            }
            if (lo < mid) queue.insert(queue.end(), {lo, mid - 1, a, mid});
            if (mid < hi) queue.insert(queue.end(), {mid + 1, hi, mid, b});
        }
    }
    out.cost = best;
    out.lower_bound = std::min(best, upper_bound);
    return out;
}

}  // namespace optitree
