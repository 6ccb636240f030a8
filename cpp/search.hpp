// The exact search above the depth-2 kernel: branch and bound over sample sets with a cache of
// solved sets, and the threshold search of one feature at one node (ConTree's interval bisection).
//
// A Search runs on one thread and never touches Python. Several Searches of one problem (the
// workers of root.hpp) share a Cache, a Control (stop flag, trace of the root's incumbent) and,
// at the root, a SharedIncumbent, FeatureClaims and ScanSharing.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "histogram.hpp"
#include "pairs.hpp"

namespace optitree {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// ------------------------------------------------------------------ results

// A split with its children's trees (null: a leaf); immutable and shared between results.
struct Node;
using NodePtr = std::shared_ptr<const Node>;
struct Node {
    int64_t feature, threshold;  // rank threshold: rows with rank(feature) <= threshold go left
    NodePtr left, right;
};

inline NodePtr make_node(int64_t feature, int64_t threshold, NodePtr left = nullptr, NodePtr right = nullptr) {
    return std::make_shared<const Node>(Node{feature, threshold, std::move(left), std::move(right)});
}

// Trees of neighbouring row sets (null: none), tried as a depth-2 kernel's first incumbent.
using Starts = std::array<NodePtr, 2>;

// Outcome of one sub-problem: lower_bound <= optimum <= cost; exact when they meet.
struct Subtree {
    double cost = INF, lower_bound = 0.0;
    NodePtr nodes;
    bool exact() const { return lower_bound >= cost - EPS; }
};

// Two results of one sub-problem: the larger bound and the cheaper tree.
inline Subtree merge(const Subtree &a, const Subtree &b) {
    const Subtree &cheaper = a.cost <= b.cost ? a : b;
    return {cheaper.cost, std::min(std::max(a.lower_bound, b.lower_bound), cheaper.cost), cheaper.nodes};
}

// A sample set owned: row f lists its rows sorted by rank(f) (a View of the kernels).
struct RowSet {
    Buffer<int32_t> srt;
    RowSet() = default;
    explicit RowSet(Buffer<int32_t> &&b) : srt(std::move(b)) {}
    View view() const { return {srt.store.data(), srt.rows, srt.cols}; }
    int64_t size() const { return srt.cols; }
};

// ------------------------------------------------------------------ the problem

// The data a search reads, fixed for a data set (arrays owned by the caller).
struct Problem {
    Ranks rank;  // (p, n_total)
    Targets d;
    std::vector<int64_t> col_feature, col_rank;  // the pair kernel's columns; empty: the sweep kernel
    Bins bins;  // two classes on features of few ranks: the histogram kernel's codes; else empty
    int64_t features() const { return rank.rows; }
    int64_t n_total() const { return rank.cols; }
    bool regression() const { return d.loss != MISCLASSIFICATION; }
};

// A read-only table of flags (rows x cols), shared by the copies of the settings.
struct FlagTable {
    std::shared_ptr<bool[]> store;
    int64_t rows = 0, cols = 0;
    FlagTable() = default;
    FlagTable(const bool *values, int64_t r, int64_t c) : store(new bool[size_t(r * c)]), rows(r), cols(c) {
        std::copy(values, values + r * c, store.get());
    }
    const bool *row(int64_t r) const { return store.get() + r * cols; }
};

// What a search solves and how: the problem's restrictions and the search's tuning.
struct Settings {
    FlagTable allowed;  // (2^depth - 1, p): row h - 1 for node h
    double alpha = 0.0;
    int64_t min_leaf = 1;
    bool anytime = false;           // a first pass over every feature before any scan runs to its end
    double relaxed_work = 0.25;     // work per candidate of a relaxed scan (Search::relaxed_bounds)
    bool best_first = false;        // scans interleaved, the interval next to the cheapest tree first
    bool binary_steps = false;      // depth 3 on one-threshold features: no scans
    bool per_node = false;          // nodes differ in their allowed features
    const Settings *relaxed = nullptr;  // the same without min_leaf (Search::relaxed_bounds); null when monotone
    bool monotone() const { return min_leaf <= 1; }
    const bool *at(int64_t node) const { return allowed.row(node - 1); }
    Allowed children(int64_t node) const { return {allowed.row(2 * node - 1), 2, allowed.cols}; }
};

// ------------------------------------------------------------------ shared between threads

// Solved sub-problems by (rows, depth, node): sharded maps under their own locks.
class Cache {
  public:
    struct Key {
        std::vector<int32_t> rows;
        int64_t depth, node;
        size_t hash;
        bool operator==(const Key &o) const { return depth == o.depth && node == o.node && rows == o.rows; }
    };
    static Key key(const int32_t *rows, int64_t m, int64_t depth, int64_t node) {
        uint64_t h = 1469598103934665603ull ^ (uint64_t(depth) * 31 + uint64_t(node));
        for (int64_t t = 0; t < m; ++t) h = (h ^ uint32_t(rows[t])) * 1099511628211ull;
        return {std::vector<int32_t>(rows, rows + m), depth, node, size_t(h)};
    }
    std::optional<Subtree> get(const Key &k) {
        Shard &s = shard(k);
        std::lock_guard<std::mutex> lock(s.mutex);
        auto it = s.map.find(k);
        if (it == s.map.end()) return std::nullopt;
        return it->second;
    }
    // Store result, merged with what another thread may have stored meanwhile.
    void put(Key &&k, const Subtree &result) {
        Shard &s = shard(k);
        std::lock_guard<std::mutex> lock(s.mutex);
        auto it = s.map.find(k);
        if (it == s.map.end()) s.map.emplace(std::move(k), result);
        else it->second = merge(it->second, result);
    }

  private:
    struct Hash {
        size_t operator()(const Key &k) const { return k.hash; }
    };
    struct alignas(64) Shard {  // a cache line of its own: two threads lock neighbouring shards
        std::mutex mutex;
        std::unordered_map<Key, Subtree, Hash> map;
    };
    static constexpr size_t SHARDS = 64;
    Shard shards_[SHARDS];
    Shard &shard(const Key &k) { return shards_[(k.hash >> 7) % SHARDS]; }
};

// Improvements of the root's incumbent: (seconds since the run's start, cost), read by the caller. A
// cost not below the least so far is no improvement and is left out (a job run again after a cap
// meets its first incumbents again).
class Trace {
  public:
    void add(double cost) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (cost >= least_) return;
        least_ = cost;
        points_.emplace_back(seconds_since(start_), cost);
    }
    void restart() {
        std::lock_guard<std::mutex> lock(mutex_);
        start_ = Clock::now();
        least_ = INF;
        points_.clear();
    }
    std::vector<std::pair<double, double>> take() {
        std::lock_guard<std::mutex> lock(mutex_);
        return std::exchange(points_, {});
    }

  private:
    Clock::time_point start_ = Clock::now();
    double least_ = INF;
    std::mutex mutex_;
    std::vector<std::pair<double, double>> points_;
};

// The root's lower bound while the search runs, for progress reports: each root worker publishes
// one for the features it holds (its latest stands: a feature taken over stays covered by its former
// worker's last bound until the new one publishes); the bound is the least of them, and never less
// than a floor that holds for every feature (the search alone, before the workers).
class LiveBound {
  public:
    void reset(size_t workers, double floor) {
        std::lock_guard<std::mutex> lock(mutex_);
        floor_ = floor;
        slots_.assign(workers, floor);
    }
    void publish(size_t worker, double bound) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (worker < slots_.size()) slots_[worker] = bound;
    }
    // Lower worker's bound to at most bound (a part of another's features handed to it).
    void lower(size_t worker, double bound) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (worker < slots_.size()) slots_[worker] = std::min(slots_[worker], bound);
    }
    double value() {
        std::lock_guard<std::mutex> lock(mutex_);
        double least = INF;
        for (double b : slots_) least = std::min(least, b);
        return slots_.empty() ? floor_ : std::max(floor_, least);
    }

  private:
    std::mutex mutex_;
    double floor_ = 0.0;
    std::vector<double> slots_;
};

// What every search of one run shares: the stop asked by the caller, the work done and the root's
// bound (for progress reports), the root's trace.
struct Control {
    std::atomic<bool> stop{false};                // read at every unit of work
    alignas(64) std::atomic<int64_t> nodes{0};    // written in batches (Search::spend): its own cache line
    LiveBound live_bound;
    Trace trace;
};

// The least cost found by any of the root's workers. It is settled once it meets floor, a lower bound
// on the root's optimum: the workers' searches then stop at their next unit (Search::settled),
// instead of finishing sub-problems begun against an older incumbent.
class SharedIncumbent {
  public:
    SharedIncumbent(double value, double floor) : value_(value), floor_(floor), settled_(value <= floor + EPS) {}
    double value() const { return value_.load(std::memory_order_relaxed); }
    const std::atomic<bool> &settled() const { return settled_; }
    // Record cost if it is the least so far; whether it was.
    bool offer(double cost) {
        double current = value();
        while (cost < current - EPS)
            if (value_.compare_exchange_weak(current, cost)) {
                if (cost <= floor_ + EPS) settled_.store(true, std::memory_order_relaxed);
                return true;
            }
        return false;
    }

  private:
    std::atomic<double> value_;
    const double floor_;
    std::atomic<bool> settled_;
};

// Which worker searches each root feature; a worker whose features are done takes over the
// unfinished feature of another worker with the least work spent on it (the work lost by starting
// it again), from a worker that holds at least one more unfinished feature; a feature is taken
// over at most once. The former worker sees it at its next step (holds) and leaves it.
class FeatureClaims {
  public:
    explicit FeatureClaims(const std::vector<int64_t> &owners)
        : owner_(owners.size()), work_(owners.size()), state_(owners.size()) {
        for (size_t f = 0; f < owners.size(); ++f) {
            owner_[f] = owners[f];
            work_[f] = 0;
            state_[f] = OPEN;
        }
    }
    bool holds(int64_t feature, int64_t me) const { return owner_[feature].load() == me; }
    void record(int64_t feature, int64_t work, bool finished) {
        work_[feature] += work;
        if (finished) state_[feature] = FINISHED;
    }
    // The feature taken over by worker me, or -1: none left.
    int64_t take_over(int64_t me) {
        std::lock_guard<std::mutex> lock(mutex_);
        const size_t p = owner_.size();
        std::map<int64_t, int64_t> open_per_worker;
        for (size_t f = 0; f < p; ++f)
            if (state_[f] != FINISHED && owner_[f] >= 0 && owner_[f] != me) ++open_per_worker[owner_[f]];
        int64_t chosen = -1;
        for (size_t f = 0; f < p; ++f) {
            int64_t o = owner_[f];
            if (state_[f] != OPEN || o < 0 || o == me || open_per_worker[o] < 2) continue;
            if (chosen < 0 || work_[f] < work_[chosen]) chosen = int64_t(f);
        }
        if (chosen >= 0) {
            owner_[chosen] = me;
            state_[chosen] = TAKEN;
        }
        return chosen;
    }

  private:
    enum : int { OPEN = 0, TAKEN = 1, FINISHED = 2 };
    std::vector<std::atomic<int64_t>> owner_, work_;
    std::vector<std::atomic<int>> state_;
    std::mutex mutex_;
};

class ScanSharing;

// A root worker's share of the root: the common incumbent, the claims on the root's features and
// the intervals handed between workers.
struct RootShare {
    SharedIncumbent *incumbent = nullptr;
    FeatureClaims *claims = nullptr;
    int64_t me = 0;
    ScanSharing *sharing = nullptr;
};

// ------------------------------------------------------------------ the search

struct BudgetExhausted {};

// SETTLED: a root worker's search, once the shared incumbent is proven optimal (not a stop of the run).
enum class StopReason : int { NONE = 0, CALLBACK, NODE_LIMIT, WORK_LIMIT, TIME_LIMIT, SETTLED };

// Limits of one search; node and work limits are deterministic budgets.
struct Limits {
    double node_limit = INF, work_limit = INF;
    Clock::time_point deadline = Clock::time_point::max();
};

class FeatureScan;

// One step of a feature's search: a candidate solved, its proven bound and a tree rooted at it.
struct Step {
    double bound, cost;
    NodePtr split;
};

class Search {
  public:
    Search(const Problem &problem, const Settings &settings, Cache &cache, Cache &relaxed_cache, Control &control,
           Limits limits)
        : P(problem), S(settings), limits(limits), cache_(cache), relaxed_cache_(relaxed_cache), control_(control),
          base_deadline_(limits.deadline) {}

    const Problem &P;
    const Settings &S;
    Limits limits;
    int64_t nodes_used = 0, work_used = 0;
    bool exhausted = false, interrupted = false;
    StopReason stopped_by = StopReason::NONE;
    const std::atomic<bool> *settled = nullptr;  // a root worker's: the run's optimum is found (SharedIncumbent)

    void set_base_deadline(Clock::time_point deadline) { base_deadline_ = deadline; }

    // Run f with the loss a compile-time constant.
    template <class F>
    auto with_loss(F &&f) const {
        switch (P.d.loss) {
            case MISCLASSIFICATION: return f(std::integral_constant<int, MISCLASSIFICATION>{});
            case SQUARED: return f(std::integral_constant<int, SQUARED>{});
            default: return f(std::integral_constant<int, ABSOLUTE>{});
        }
    }

    // Whether OPT(A) <= OPT(B) for row sets A ⊆ B under sub-trees of depth (the monotone bound):
    // always at depth 1 without a minimum leaf size, deeper when every node allows the same features.
    bool monotone_at(int64_t depth) const { return S.monotone() && (depth <= 1 || !S.per_node); }

    // Count one unit of work on rows rows; throw BudgetExhausted when the budget is spent. The check
    // comes before the work, so the work done is a deterministic function of the limits.
    void spend(int64_t rows) {
        if (exhausted) throw BudgetExhausted{};
        if (++unpublished_ == PROGRESS_BATCH) {
            control_.nodes.fetch_add(PROGRESS_BATCH, std::memory_order_relaxed);
            unpublished_ = 0;
        }
        nodes_used += 1;
        work_used += rows;
        if (over_budget()) {
            exhausted = true;
            throw BudgetExhausted{};
        }
    }

    bool over_budget() {
        if (control_.stop.load(std::memory_order_relaxed)) interrupted = true;
        StopReason reason;
        if (interrupted) reason = StopReason::CALLBACK;
        else if (settled && settled->load(std::memory_order_relaxed)) reason = StopReason::SETTLED;
        else if (double(nodes_used) > limits.node_limit) reason = StopReason::NODE_LIMIT;
        else if (double(work_used) > limits.work_limit) reason = StopReason::WORK_LIMIT;
        else if (Clock::now() > limits.deadline) reason = StopReason::TIME_LIMIT;
        else return false;
        if (stopped_by == StopReason::NONE) stopped_by = reason;
        return true;
    }

    // The node budget lowered to cap more units and the deadline to seconds from now, for a scope;
    // on its end the search's own limits hold again, and a stop they caused is undone.
    class Capped {
      public:
        Capped(Search &s, std::optional<int64_t> cap, std::optional<double> seconds) : s_(s), saved_(s.limits) {
            if (cap) s.limits.node_limit = std::min(s.limits.node_limit, double(s.nodes_used) + double(*cap));
            if (seconds) {
                auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                std::chrono::duration<double>(*seconds));
                s.limits.deadline = std::min(s.limits.deadline, until);
            }
        }
        ~Capped() {
            s_.limits = saved_;
            if (s_.exhausted && !s_.interrupted) {  // re-checked against the search's own limits
                s_.exhausted = false;
                s_.stopped_by = StopReason::NONE;
                s_.exhausted = s_.over_budget();
            }
        }

      private:
        Search &s_;
        Limits saved_;
    };

    // Run f() under Capped(cap, seconds); whether the cap alone stopped it (not the search's own limits).
    template <class F>
    bool cut_by(std::optional<int64_t> cap, std::optional<double> seconds, F &&f) {
        bool stopped;
        {
            Capped capped(*this, cap, seconds);
            f();
            stopped = exhausted;
        }
        return stopped && !exhausted;
    }

    double leaf_cost(const RowSet &v) const { return optitree::leaf_cost(v.srt.row(0), v.size(), P.d); }

    // What is known of a sub-problem without solving it: a leaf, or the cached result when better.
    Subtree known(const RowSet &v, int64_t depth, int64_t node) {
        double leaf = leaf_cost(v);
        if (depth == 0 || v.size() < 2 * S.min_leaf) return {leaf, leaf, nullptr};
        auto hit = cache_.get(Cache::key(v.srt.row(0), v.size(), depth, S.per_node ? node : 0));
        Subtree as_leaf{leaf, 0.0, nullptr};
        return hit ? merge(*hit, as_leaf) : as_leaf;
    }

    // Best tree of depth <= depth for v, searching for cost < upper_bound. Never throws on a spent
    // budget: it then returns the best tree and the bound proven so far, merged with the cached ones.
    // At depth 2 the kernel starts from the cheaper of starts on v, or reads v's histograms from
    // given (null: none).
    Subtree solve(const RowSet &v, int64_t depth, int64_t node, double upper_bound, const Starts &starts = {},
                  const Histograms *given = nullptr);

    // Search the splits of v feature by feature from the incumbent (best, best_nodes) below
    // upper_bound; returns the best tree and min(cutoff, alpha + the least bound of an open candidate).
    //   * features (default: the allowed ones, best single split first) are those searched here;
    //     with share, the others' incumbent prunes as this one's does, and a feature another worker
    //     took over is left to it (neither searched nor counted in the bound);
    //   * first_pass: every feature first takes one step (at depth >= 4 a probe with capped
    //     children), so that a stop leaves a bound over every candidate and an early incumbent;
    //   * best_first: the scans interleaved, one solved candidate at a time from the scan whose next
    //     interval lies next to the cheapest tree found; otherwise each feature's scan to its end;
    //   * at depth 3 on one-threshold features, each feature's one candidate solved without a scan;
    //   * from DIVE_DEPTH (classification, not a root worker sharing features), CART's split
    //     (gini_split) first, its children searched as this node's are: an early good tree;
    //   * report (the root of a run): new incumbents go to the trace, and about every 50 ms the
    //     bound over the held features to the live bound (slot share.me).
    Subtree branch(const RowSet &v, int64_t depth, int64_t node, double upper_bound, double best, NodePtr best_nodes,
                   bool report, const std::vector<int64_t> *features, RootShare share, bool first_pass);

    // A split of v into children of at least min_leaf rows.
    struct Split {
        int64_t feature, rank_threshold, n_left;
    };

    // CART's split of v at node (classification): the allowed split of least weighted Gini
    // impurity, the first in feature and threshold order on ties; none when no split is allowed.
    std::optional<Split> gini_split(const RowSet &v, int64_t node) const {
        const int64_t m = v.size(), K = P.d.width;
        const bool *allowed = S.at(node);
        std::vector<double> total(size_t(K), 0.0), left(size_t(K), 0.0);
        double weight = 0.0, total_sq = 0.0;
        for (int64_t t = 0; t < m; ++t) {
            const int32_t i = v.srt.row(0)[t];
            total[size_t(P.d.y[i])] += P.d.w[i];
            weight += P.d.w[i];
        }
        for (double c : total) total_sq += c * c;
        std::optional<Split> best;
        double best_score = -INF;  // sum over both sides of the squared class weights over the side's weight
        for (int64_t f = 0; f < P.features(); ++f) {
            if (!allowed[f]) continue;
            const int32_t *rows = v.srt.row(f), *rk = P.rank.row(f);
            std::fill(left.begin(), left.end(), 0.0);
            double left_weight = 0.0, left_sq = 0.0, right_sq = total_sq;
            for (int64_t t = 0; t + 1 < m; ++t) {
                const int32_t i = rows[t];
                const size_t k = size_t(P.d.y[i]);
                const double w = P.d.w[i], right_k = total[k] - left[k];
                left_sq += w * (2.0 * left[k] + w);
                right_sq += w * (w - 2.0 * right_k);
                left[k] += w;
                left_weight += w;
                const int64_t n_left = t + 1;
                if (rk[rows[t + 1]] == rk[i] || n_left < S.min_leaf || m - n_left < S.min_leaf) continue;
                double score = left_sq / left_weight + right_sq / (weight - left_weight);
                if (score > best_score) {
                    best_score = score;
                    best = Split{f, rk[i], n_left};
                }
            }
        }
        return best;
    }

    // CART's split of v at node (gini_split) with its children searched below limit, in full or (probe)
    // as a first pass's probes, children capped (depth >= 4); none when no split is allowed or limit <= 0.
    std::optional<Step> dive(const RowSet &v, int64_t depth, int64_t node, double limit, bool probe) {
        std::optional<Split> g = limit > EPS ? gini_split(v, node) : std::nullopt;
        if (!g) return std::nullopt;
        spend(v.size());
        auto [left, right] = partition(v, g->feature, g->rank_threshold, g->n_left);
        auto sides = probe ? probe_children(left, right, depth - 1, node, limit)
                           : solve_children(left, right, depth - 1, node, limit, 0.0);
        return Step{0.0, S.alpha + sides.first.cost + sides.second.cost,
                    make_node(g->feature, g->rank_threshold, sides.first.nodes, sides.second.nodes)};
    }

    // The allowed features at node, the best single split's cost first.
    std::vector<int64_t> feature_order(const RowSet &v, int64_t node) const {
        return with_loss([&](auto L) { return stump_order<decltype(L)::value>(v.view(), P.rank, P.d, S.at(node)); });
    }

    // The two children (left, right) of a candidate at node against limit: the larger one first,
    // the smaller one against what its bound leaves plus slack, or only looked up when nothing is.
    // starts: the left's and the right's (solve).
    std::pair<Subtree, Subtree> solve_children(const RowSet &left, const RowSet &right, int64_t depth, int64_t node,
                                               double limit, double slack, const std::array<Starts, 2> &starts = {},
                                               const Histograms *parent = nullptr) {
        const bool left_first = left.size() >= right.size();
        const RowSet &first = left_first ? left : right, &second = left_first ? right : left;
        const int64_t first_node = 2 * node + (left_first ? 0 : 1), second_node = 2 * node + (left_first ? 1 : 0);
        // with the parent's histograms: the smaller child's filled, the larger's the difference
        std::optional<Histograms> small, large;
        if (parent && depth == 2 && histograms(first) && histograms(second)) {
            small = fill_histograms(second.srt.row(0), second.size(), P.bins, P.d);
            large = difference(*parent, *small);
        }
        Subtree a = solve(first, depth, first_node, limit, starts[left_first ? 0 : 1], large ? &*large : nullptr);
        double remaining = limit - a.lower_bound;
        Subtree b = (remaining + slack > EPS || std::abs(remaining) <= EPS)
                        ? solve(second, depth, second_node, remaining + slack, starts[left_first ? 1 : 0],
                                small ? &*small : nullptr)
                        : known(second, depth, second_node);
        return left_first ? std::make_pair(a, b) : std::make_pair(b, a);
    }

    // Both children of a split at node, each solved with the work of its first pass (a probe).
    std::pair<Subtree, Subtree> probe_children(const RowSet &left, const RowSet &right, int64_t depth, int64_t node,
                                               double limit) {
        Subtree sides[2];
        for (int side = 0; side < 2; ++side) {
            const int64_t child = 2 * node + side;
            Capped capped(*this, first_pass_work(depth, child), std::nullopt);
            sides[side] = solve(side == 0 ? left : right, depth, child, limit);
        }
        return {sides[0], sides[1]};
    }

    // The histograms of the run's root set v (node 1) whose depth-2 children take histograms, with
    // integer weights (Histograms): filled once, kept for its candidates' children; null otherwise.
    const Histograms *root_histograms(const RowSet &v, int64_t depth, int64_t node) {
        if (node != 1 || depth != 3 || !histograms(v)) return nullptr;
        const int32_t *rows = v.srt.row(0);
        if (std::equal(rows, rows + v.size(), root_histograms_of_.begin(), root_histograms_of_.end()))
            return root_histograms_.get();
        root_histograms_of_.assign(rows, rows + v.size());
        root_histograms_.reset();
        if (!P.d.int32_weights(rows, v.size())) return nullptr;
        root_histograms_ = std::make_unique<Histograms>(fill_histograms(rows, v.size(), P.bins, P.d));
        return root_histograms_.get();
    }

    // Units the first pass of a depth-depth search at node needs (one more per feature for relaxed scans).
    int64_t first_pass_work(int64_t depth, int64_t node) {
        if (depth <= 2) return 1;
        auto it = first_pass_work_.find({depth, node});
        if (it != first_pass_work_.end()) return it->second;
        int64_t p = 0;
        for (int64_t f = 0; f < P.features(); ++f) p += S.at(node)[f] ? 1 : 0;
        const int64_t cap = int64_t(1) << 60;
        double work = double(p) * (2.0 + double(first_pass_work(depth - 1, 2 * node)) +
                                   double(first_pass_work(depth - 1, 2 * node + 1)));
        int64_t known = work >= double(cap) ? cap : int64_t(work);
        first_pass_work_[{depth, node}] = known;
        return known;
    }

    // The children bounds of feature's candidates at node from the search without min_leaf (a
    // superset of this one's trees): (rank_threshold, left_bound, right_bound), or none.
    struct Known {
        std::vector<int64_t> rank_threshold;
        std::vector<double> left, right;
    };
    std::optional<Known> relaxed_bounds(const RowSet &v, int64_t depth, int64_t node, int64_t feature, double cutoff);

    std::unique_ptr<FeatureScan> scan(const RowSet &v, int64_t feature, int64_t depth, int64_t node, double cutoff);

    // tree as a depth-2 start on v (misclassification): its cost with the best leaves, or none (cost
    // INF) for a leaf, a leaf of fewer than max(1, min_leaf) rows, or another loss.
    Depth2Result depth2_start(const RowSet &v, const NodePtr &tree) const {
        Depth2Result out{INF, 0.0, {-1, -1, -1, -1, -1, -1}};
        if (!tree || P.regression()) return out;
        const int64_t K = P.d.width;
        const Node *kids[2] = {tree->left.get(), tree->right.get()};
        std::vector<double> weight(size_t(4 * K), 0.0);  // leaf 2 * side + grandchild side
        int64_t count[4] = {0, 0, 0, 0};
        const int32_t *rows = v.srt.row(0);
        for (int64_t t = 0; t < v.size(); ++t) {
            const int32_t i = rows[t];
            const int side = P.rank.row(tree->feature)[i] <= tree->threshold ? 0 : 1;
            const Node *kid = kids[side];
            const int leaf = 2 * side + (kid && P.rank.row(kid->feature)[i] > kid->threshold ? 1 : 0);
            weight[size_t(leaf * K + P.d.y[i])] += P.d.w[i];
            count[leaf] += 1;
        }
        double cost = S.alpha;
        for (int leaf = 0; leaf < 4; ++leaf) {
            const Node *kid = kids[leaf / 2];
            if (leaf % 2 == 1 && !kid) continue;
            if (count[leaf] < std::max<int64_t>(1, S.min_leaf)) return out;
            const double *w = weight.data() + leaf * K;
            cost += std::accumulate(w, w + K, 0.0) - *std::max_element(w, w + K);  // its misclassified weight
            if (leaf % 2 == 0 && kid) cost += S.alpha;
        }
        const int64_t nodes[6] = {tree->feature, tree->threshold, kids[0] ? kids[0]->feature : -1,
                                  kids[0] ? kids[0]->threshold : -1, kids[1] ? kids[1]->feature : -1,
                                  kids[1] ? kids[1]->threshold : -1};
        out.cost = cost;
        std::copy(nodes, nodes + 6, out.nodes);
        return out;
    }

    // Whether the depth-2 problem of v takes the histogram kernel (exact; it needs no start): two
    // classes on features of few ranks, no minimum leaf size, HISTOGRAM_ROWS rows or more.
    bool histograms(const RowSet &v) const { return histograms(v.size()); }
    bool histograms(int64_t rows) const {
        return P.col_feature.empty() && !P.bins.empty() && S.monotone() && rows >= HISTOGRAM_ROWS;
    }

    Depth2Result depth2(const RowSet &v, int64_t node, double upper_bound, const Depth2Result &start) const {
        if (!P.col_feature.empty())
            return depth2_pairs(P.col_feature.data(), P.col_rank.data(), int64_t(P.col_feature.size()), v.view(),
                                P.rank, P.d, S.at(node), S.children(node), S.alpha, S.min_leaf, upper_bound);
        return with_loss([&](auto L) {
            return optitree::depth2<decltype(L)::value>(v.view(), P.rank, P.d, S.at(node), S.children(node), S.alpha,
                                                        S.min_leaf, upper_bound, start);
        });
    }

    PairResult depth1_pair(View srt, const Layout &lay, const int32_t *key, int64_t key_cols, int64_t n_left,
                           Scratch &buf, const TargetOrder &order, Allowed allowed, double upper) const {
        return with_loss([&](auto L) {
            return depth1_sides<decltype(L)::value>(srt, lay, key, key_cols, n_left, buf, P.d, order, allowed, S.alpha,
                                                    S.min_leaf, upper, 0.0, 0.0);
        });
    }

    // The views of the two sides of feature's split at rank_threshold (n_left rows left). Sides of
    // depth depth (0: not given) that both take the pair kernel or the histogram kernel get their first
    // row only: the kernel, the cache and a leaf read no other.
    std::pair<RowSet, RowSet> partition(const RowSet &v, int64_t feature, int64_t rank_threshold, int64_t n_left,
                                        int64_t depth = 0) const {
        const int64_t m = v.size();
        const bool first_row = !P.col_feature.empty() || (histograms(n_left) && histograms(m - n_left));
        const int64_t p = depth == 2 && first_row ? 1 : v.srt.rows;
        Buffer<int32_t> left(p, n_left), right(p, m - n_left);
        optitree::partition({v.srt.store.data(), p, m}, P.rank.row(feature), rank_threshold, left.store.data(),
                            right.store.data(), n_left);
        return {RowSet(std::move(left)), RowSet(std::move(right))};
    }

  private:
    Cache &cache_, &relaxed_cache_;
    Control &control_;
    Clock::time_point base_deadline_;
    // Units not yet added to the progress count (control_.nodes): a counter shared by the workers and
    // written at every unit would move its cache line between the cores at each one.
    static constexpr int64_t PROGRESS_BATCH = 256;
    int64_t unpublished_ = 0;
    std::unique_ptr<Search> relaxed_;
    std::map<std::pair<int64_t, int64_t>, int64_t> first_pass_work_;
    std::vector<int32_t> root_histograms_of_;  // the rows of the set root_histograms_ belongs to
    std::unique_ptr<Histograms> root_histograms_;
};

// Depth from which a branch node of a classification search first solves CART's split (Search::branch):
// a dive to a good tree before the scans. Shallower, the first pass's depth-2 solves find as good a
// tree and the dive's two kernel calls only add work. At least 4: in an anytime search the dive's
// children are capped as the first pass's probes, which start at depth 4.
constexpr int64_t DIVE_DEPTH = 4;
static_assert(DIVE_DEPTH >= 4, "the dive's children are capped as a depth-4 probe's");
// Units a run's root of fewer than BOUND_FIRST_ROWS rows gives the dive before its depth-2 start
// (SearchRun::root). The dives that end a search took 7 (wine, depth 4) to 18 (breast_cancer, depth
// 5); one that does not leaves its cache entries to the search, which did 0-8 % more work on the
// measured depth-4 and depth-5 classification sets (xor: 600 instead of 200 rows of work).
constexpr int64_t DIVE_FIRST_UNITS = 24;

// ------------------------------------------------------------------ one feature's threshold search

// Rows at the run's root from which its scans take their intervals least bound first (FeatureScan).
// Smaller roots keep the order next to the cheapest tree: the incumbent that the bound's order finds
// late costs them more work than the bound saves. Smaller regression roots of depth >= 4, whose
// children are searches of their own, alternate the two orders: the bound rises while the search
// runs and the good trees still come early (classification's took up to 30 % more work and lost
// a third of two threads' speed-up, measured on wilt-like 1 500 rows at depth 4).
constexpr int64_t BOUND_FIRST_ROWS = 2000;
// Rows per slab of a root scan's slab bounds (FeatureScan::make_slabs), and the most slabs per
// feature on data that takes the histogram kernel, whose fixed p² B² per slab would otherwise
// dominate: beyond it the slabs grow (10^6 rows: 64 slabs of 15 625 rows, about 10 s in all,
// instead of 1 000 of 1 000 rows, more than 60 s).
constexpr int64_t SLAB_ROWS = 1000;
constexpr int64_t MAX_SLABS = 64;

// Bisection over the thresholds of one feature at one node (ConTree's interval search).
//
// Candidate j puts n_left[j] rows of total distance dist_left[j] (row_dist) on the left. Solved
// candidates give lower bounds on their neighbours (Neighbours::point_bounds); an interval's ends
// are dropped while their bound reaches the target, then its middle is solved: the larger child
// first with the target as upper bound, then the smaller one with what remains plus the distance
// to the interval's ends (so its bound can also prune the neighbours). bound_left/bound_right hold
// valid children bounds for every candidate dropped or solved. Open intervals wait in a queue:
// first in, first out, or (best_first) the one next to the cheapest tree found first.
//
// At the run's root (node 1), from BOUND_FIRST_ROWS rows or in regression at depth >= 4, best_first
// takes the interval of least bound first instead (bound first, as Quant-BnB; below BOUND_FIRST_ROWS
// rows every other step, alternating with the interval next to the cheapest tree): for t in [lo, hi]
// between solved a and b, L_a ⊆ L_t and R_b ⊆ R_t, so cost(t) >= alpha + OPT(L_a) + OPT(R_b) where monotone (Neighbours
// also has the similarity bounds). Every interval bisected then has a bound below the optimum, and
// the least bound of the open intervals, the run's progress bound, rises with each step instead of
// all at once at the end. There, at depth 3 where monotone, the rows in the feature's order are also
// cut into slabs of about SLAB_ROWS rows, each solved at depth 2 before any candidate (Slabs): every
// candidate's children then have bounds, those of a whole feature can exceed the incumbent before
// its first candidate is solved, and the progress bound is above 0 before the first pass ends.
class FeatureScan {
  public:
    FeatureScan(Search &search, const RowSet &v, int64_t feature, int64_t depth, int64_t node,
                const std::optional<Search::Known> &known)
        : s(search), view(v), feature(feature), depth(depth), node(node), monotone(search.monotone_at(depth - 1)),
          best_first(search.S.best_first),
          bound_first(best_first && node == 1 &&
                      (v.size() >= BOUND_FIRST_ROWS || (depth >= 4 && search.P.regression()))),
          alternating(bound_first && v.size() < BOUND_FIRST_ROWS) {
        const Problem &P = s.P;
        if (depth == 2) {  // the depth-1 sweeps' inputs, once per scan
            order = target_order(v.srt.row(0), v.size(), P.d, P.n_total());
            layout = make_layout(v.view(), P.rank, P.d);
            key = positions(v.view(), feature, P.n_total());
            buf = std::make_unique<Scratch>(v.size(), layout);
        }
        Candidates c = candidates(v.view(), P.rank, P.d, feature, s.S.min_leaf);
        rank_threshold = std::move(c.rank_threshold);
        n_left = std::move(c.n_left);
        dist_left = std::move(c.dist_left);
        const size_t T = rank_threshold.size();
        solved_left.assign(T, 0.0);
        solved_right.assign(T, 0.0);
        bound_left.assign(T, 0.0);
        bound_right.assign(T, 0.0);
        if (known) {
            for (size_t j = 0; j < T; ++j) {
                auto at = std::lower_bound(known->rank_threshold.begin(), known->rank_threshold.end(),
                                           rank_threshold[j]) - known->rank_threshold.begin();
                bound_left[j] = known->left[at];
                bound_right[j] = known->right[at];
            }
        }
        exact.assign(T, false);
        tree_cost.assign(T, INF);
        children.resize(T);
        if (T && with_slabs(s, v.size(), depth, node)) make_slabs();
        if (T) push(0, int64_t(T) - 1, -1, int64_t(T));
    }

    // Whether the scans of a node of rows rows at depth depth take slab bounds.
    static bool with_slabs(const Search &s, int64_t rows, int64_t depth, int64_t node) {
        return s.S.best_first && node == 1 && rows >= BOUND_FIRST_ROWS && depth == 3 && s.monotone_at(2);
    }

    Search &s;
    const RowSet &view;
    const int64_t feature, depth, node;
    const bool monotone, best_first, bound_first, alternating;
    std::vector<int64_t> rank_threshold, n_left;
    std::vector<double> dist_left, solved_left, solved_right, bound_left, bound_right, tree_cost;
    std::vector<bool> exact;
    std::vector<std::pair<NodePtr, NodePtr>> children;  // of each solved candidate, the trees found
    double unresolved = INF;  // lowest children bound of a solved candidate that is not exact

    // The next solved candidate against target() (the cutoff), or none when the queue is empty.
    // Throws BudgetExhausted on a spent budget.
    template <class Target>
    std::optional<Step> step(Target &&target) {
        const int64_t m = view.size();
        while (!queue.empty()) {
            auto [k, lo, hi, a, b, limit] = next_shrunk(target);
            if (lo > hi) {
                pop(k);
                continue;
            }
            const int64_t mid = (lo + hi) / 2;
            if (bound_left[mid] + bound_right[mid] >= limit - EPS) {  // a known bound drops it
                pop(k);
                solved_left[mid] = bound_left[mid];
                solved_right[mid] = bound_right[mid];
                split_interval(lo, mid, hi, a, b);
                continue;
            }
            s.spend(m);
            std::pair<Subtree, Subtree> sides;
            if (depth == 2) {  // both depth-1 children in one sweep, no partition
                PairResult r = s.depth1_pair(view.view(), layout, key.store.data(), key.cols, n_left[mid], *buf,
                                             order, s.S.children(node), limit);
                auto side = [&](int k) {
                    return Subtree{r.cost[k], r.lower[k],
                                   r.feature[k] < 0 ? nullptr : make_node(r.feature[k], r.threshold[k])};
                };
                sides = {side(0), side(1)};
            } else {
                auto [left, right] = s.partition(view, feature, rank_threshold[mid], n_left[mid], depth - 1);
                double slack = std::max(dist_left[mid] - dist_left[lo], dist_left[hi] - dist_left[mid]);
                sides = s.solve_children(left, right, depth - 1, node, limit, slack, starts_at(a, b),
                                         s.root_histograms(view, depth, node));
            }
            double cost = settle(k, lo, mid, hi, a, b, sides);
            NodePtr split = split_at(mid, sides);
            if (sides.first.exact() && sides.second.exact()) {
                exact[mid] = true;
                return Step{cost, cost, split};
            }
            double bound = solved_left[mid] + solved_right[mid];
            if (bound < limit - EPS) unresolved = std::min(unresolved, bound);
            return Step{s.S.alpha + bound, cost, split};
        }
        return std::nullopt;
    }

    // Solve the first middle candidate's children, each with the work of its first pass (anytime
    // first pass), and queue the middle again first, for a full solve; then the same for the best
    // single split (probe_stump). The trees found.
    template <class Target>
    std::vector<Step> probe(Target &&target) {
        if (queue.empty() || s.exhausted) return {};
        auto [k, lo, hi, a, b, limit] = next_shrunk(target);
        if (lo > hi) return {};
        const int64_t mid = (lo + hi) / 2;
        if (bound_left[mid] + bound_right[mid] >= limit - EPS) return {};
        auto sides = capped_children(mid, limit);
        if (!sides) return {};
        double cost = settle(k, lo, mid, hi, a, b, *sides);
        queue.push_back({-INF, pushed++, mid, mid, a, b, 0.0});  // first, before any other
        std::vector<Step> found{{s.S.alpha + solved_left[mid] + solved_right[mid], cost, split_at(mid, *sides)}};
        if (auto stump = probe_stump(target)) found.push_back(*stump);
        return found;
    }

    // The priority of the next interval; inf when none is left.
    double priority() const { return queue.empty() ? INF : priority_of(queue[next()]); }

    // Every other open interval, in the order this scan would take them (priorities as of now), moved
    // to a new scan of the same candidates that searches for other (a root worker waiting for work,
    // ScanSharing); null when fewer than two intervals are open. The intervals' ends are solved
    // candidates, whose values the new scan copies: each interval's search needs nothing else.
    std::unique_ptr<FeatureScan> split_off(Search &other) {
        if (queue.size() < 2 || depth == 2) return nullptr;  // depth 2: the sweeps' inputs are not copied
        std::vector<size_t> order(queue.size());
        for (size_t j = 0; j < order.size(); ++j) order[j] = j;
        std::sort(order.begin(), order.end(), [&](size_t i, size_t j) { return precedes(queue[i], queue[j]); });
        std::unique_ptr<FeatureScan> part(new FeatureScan(*this, other));
        std::vector<Entry> kept;
        for (size_t r = 0; r < order.size(); ++r) (r % 2 ? part->queue : kept).push_back(queue[order[r]]);
        queue = std::move(kept);
        return part;
    }
    // A part of another worker's scan (split_off): searched by its own worker, whoever holds the feature.
    const bool given = false;

    // bound_first: whether the next step takes the interval of least bound (else the one next to the
    // cheapest tree, as elsewhere). The root alternates the two (Search::branch).
    void take_least_bound(bool yes) { least_bound = yes; }

    // Lowest children bound over candidates not yet resolved. After a stop (record) the neighbour
    // bounds are stored as known bounds; a progress report records nothing: it must not change the
    // search, and where the queue holds each interval's bound (bound_first) it reads those (bounds
    // only rise) instead of every candidate's, which on a large root cost a pass per report.
    double open_bound(bool record = true) {
        double lowest = unresolved;
        Neighbours nb = neighbours();
        for (const Entry &e : queue)
            lowest = std::min(lowest, !record && bound_first && e.first != -INF
                                          ? e.bound
                                          : nb.lowest(e.lo, e.hi, e.a, e.b, bound_left.data(), bound_right.data(), record));
        return lowest;
    }

  private:
    // A copy of from's candidates and their state, for other, with no interval queued (split_off).
    FeatureScan(const FeatureScan &from, Search &other)
        : s(other), view(from.view), feature(from.feature), depth(from.depth), node(from.node),
          monotone(from.monotone), best_first(from.best_first), bound_first(from.bound_first),
          alternating(from.alternating), rank_threshold(from.rank_threshold), n_left(from.n_left),
          dist_left(from.dist_left), solved_left(from.solved_left), solved_right(from.solved_right),
          bound_left(from.bound_left), bound_right(from.bound_right), tree_cost(from.tree_cost), exact(from.exact),
          children(from.children), given(true), pushed(from.pushed), least_bound(from.least_bound),
          slabs(from.slabs) {}

    struct Entry {
        double first;  // -inf: a probed middle, before any other; else 0
        int64_t seq, lo, hi, a, b;
        double bound;  // bound_first: the least children bound over [lo, hi] when queued (it only rises)
    };
    std::vector<Entry> queue;
    int64_t pushed = 0;
    bool least_bound = true;
    TargetOrder order;
    Layout layout;
    Buffer<int32_t> key;
    std::unique_ptr<Scratch> buf;

    std::shared_ptr<const Slabs> slabs;  // read only once made: shared with the scan's parts (split_off)

    Neighbours neighbours() const {
        Neighbours nb{dist_left.data(), solved_left.data(), solved_right.data(), int64_t(dist_left.size()), monotone};
        if (slabs) {
            nb.slabs = slabs.get();
            nb.n_left = n_left.data();
            nb.rows = view.size();
        }
        return nb;
    }

    // The slabs of the view in the feature's order, each solved at depth 2; a term is the slab's
    // bound less alpha per split of a depth-2 tree (a bound on its optimum without alpha). Slabs
    // that take the histogram kernel get the first row of their view only (Search::partition).
    void make_slabs() {
        const int64_t m = view.size(), n_slabs = std::max<int64_t>(2, m / SLAB_ROWS);
        const int64_t k = s.histograms(HISTOGRAM_ROWS) ? std::min(n_slabs, MAX_SLABS) : n_slabs;
        const int64_t p = depth == 3 && s.histograms(m / k) ? 1 : view.srt.rows;
        auto out = std::make_unique<Slabs>();
        std::vector<int32_t> slab_of(size_t(s.P.n_total()));
        const int32_t *order = view.srt.row(feature);
        std::vector<Buffer<int32_t>> parts;
        for (int64_t j = 0, start = 0; j < k; ++j) {
            const int64_t end = (j + 1) * m / k;
            for (int64_t t = start; t < end; ++t) slab_of[size_t(order[t])] = int32_t(j);
            out->end.push_back(end);
            parts.emplace_back(p, end - start);
            start = end;
        }
        std::vector<int64_t> filled(static_cast<size_t>(k), 0);
        for (int64_t g = 0; g < p; ++g) {
            std::fill(filled.begin(), filled.end(), 0);
            const int32_t *rows = view.srt.row(g);
            for (int64_t t = 0; t < m; ++t) {
                const int32_t j = slab_of[size_t(rows[t])];
                parts[size_t(j)](g, filled[size_t(j)]++) = rows[t];
            }
        }
        out->prefix.push_back(0.0);
        for (Buffer<int32_t> &part : parts) {
            Subtree r = s.solve(RowSet(std::move(part)), depth - 1, 2 * node, INF);
            out->prefix.push_back(out->prefix.back() + std::max(0.0, r.lower_bound - 3.0 * s.S.alpha));
        }
        slabs = std::move(out);
    }

    struct Shrunk {
        size_t k;
        int64_t lo, hi, a, b;
        double limit;
    };
    // The next queued interval shrunk by the known bounds (updated in the queue unless emptied).
    template <class Target>
    Shrunk next_shrunk(Target &&target) {
        size_t k = next();
        Entry &e = queue[k];
        double limit = target() - s.S.alpha;
        auto [lo, hi] = neighbours().shrink(e.lo, e.hi, e.a, e.b, limit, bound_left.data(), bound_right.data());
        if (lo <= hi) {
            e.lo = lo;
            e.hi = hi;
        }
        return {k, lo, hi, e.a, e.b, limit};
    }

    void pop(size_t k) { queue.erase(queue.begin() + int64_t(k)); }

    // Whether interval e comes before f: the least (priority, sequence), priorities as of now.
    bool precedes(const Entry &e, const Entry &f) const {
        double pe = priority_of(e), pf = priority_of(f);
        return pe < pf || (pe == pf && e.seq < f.seq);
    }

    // Index of the interval to take next.
    size_t next() const {
        size_t best = 0;
        for (size_t j = 1; j < queue.size(); ++j)
            if (precedes(queue[j], queue[best])) best = j;
        return best;
    }

    // Without best_first: first in, first out (a probed middle first). With it, the least cost of
    // the trees at the interval's ends (-inf with neither solved: each feature's first middle
    // comes before any neighbourhood); at the run's root (bound_first) the interval's bound instead.
    double priority_of(const Entry &e) const {
        if (e.first == -INF || !best_first) return e.first;
        if (bound_first && least_bound) return e.bound;
        const int64_t T = int64_t(tree_cost.size());
        if (e.a < 0 && e.b >= T) return -INF;
        return std::min(e.a >= 0 ? tree_cost[e.a] : INF, e.b < T ? tree_cost[e.b] : INF);
    }

    void push(int64_t lo, int64_t hi, int64_t a, int64_t b) {
        double bound =
            bound_first ? neighbours().lowest(lo, hi, a, b, bound_left.data(), bound_right.data(), false) : 0.0;
        queue.push_back({0.0, pushed++, lo, hi, a, b, bound});
    }

    // Record the solved children of mid (queue entry k, interval [lo, hi] between a and b): their
    // bounds, raised to the neighbours' (a child stopped by the budget may know less), and the
    // tree's cost; the interval's two sides are queued. Returns the tree's cost.
    double settle(size_t k, int64_t lo, int64_t mid, int64_t hi, int64_t a, int64_t b,
                  const std::pair<Subtree, Subtree> &sides) {
        pop(k);
        auto [near_left, near_right] = neighbours().point_bounds(mid, a, b);
        solved_left[mid] = bound_left[mid] = std::max({bound_left[mid], sides.first.lower_bound, near_left});
        solved_right[mid] = bound_right[mid] = std::max({bound_right[mid], sides.second.lower_bound, near_right});
        double cost = s.S.alpha + sides.first.cost + sides.second.cost;
        tree_cost[mid] = std::min(tree_cost[mid], cost);
        children[mid] = {sides.first.nodes, sides.second.nodes};
        split_interval(lo, mid, hi, a, b);
        return cost;
    }

    // The starts of the children of a candidate between solved a and b (-1 / T: none): the trees
    // found for a's and b's, whose row sets differ by the rows between (Search::solve).
    std::array<Starts, 2> starts_at(int64_t a, int64_t b) const {
        const int64_t T = int64_t(children.size());
        std::array<Starts, 2> out;
        if (a >= 0) out[0][0] = children[a].first, out[1][0] = children[a].second;
        if (b < T) out[0][1] = children[b].first, out[1][1] = children[b].second;
        return out;
    }

    // Queue the two sides of [lo, hi] (ends a, b) around its solved mid.
    void split_interval(int64_t lo, int64_t mid, int64_t hi, int64_t a, int64_t b) {
        if (mid < hi) push(mid + 1, hi, mid, b);
        if (lo < mid) push(lo, mid - 1, a, mid);
    }

    NodePtr split_at(int64_t j, const std::pair<Subtree, Subtree> &sides) const {
        return make_node(feature, rank_threshold[j], sides.first.nodes, sides.second.nodes);
    }

    // Both children of candidate j, each solved with the work of its first pass; none on a spent budget.
    std::optional<std::pair<Subtree, Subtree>> capped_children(int64_t j, double limit) {
        try {
            s.spend(view.size());
        } catch (const BudgetExhausted &) {
            return std::nullopt;
        }
        auto [left, right] = s.partition(view, feature, rank_threshold[j], n_left[j]);
        return s.probe_children(left, right, depth - 1, node, limit);
    }

    // Probe the feature's best single split too (classification): its children capped as the
    // middle's. Its tree may be the incumbent; its children's bounds are recorded as known bounds.
    template <class Target>
    std::optional<Step> probe_stump(Target &&target) {
        const Problem &P = s.P;
        const int64_t T = int64_t(rank_threshold.size()), K = P.d.width;
        if (P.regression() || T < 3) return std::nullopt;
        const int32_t *rows = view.srt.row(feature);
        const int64_t m = view.size();
        // class weights of all rows, then of the left side at each candidate, summed in the feature's order
        std::vector<double> total(size_t(K), 0.0), left(size_t(K), 0.0);
        for (int64_t t = 0; t < m; ++t) total[P.d.y[rows[t]]] += P.d.w[rows[t]];
        int64_t j = 0, c = 0;
        double best_score = -INF;
        for (int64_t t = 0; t < m && c < T; ++t) {
            left[P.d.y[rows[t]]] += P.d.w[rows[t]];
            if (n_left[c] - 1 != t) continue;
            double left_top = -INF, right_top = -INF;
            for (int64_t k = 0; k < K; ++k) {
                left_top = std::max(left_top, left[k]);
                right_top = std::max(right_top, total[k] - left[k]);
            }
            if (left_top + right_top > best_score) {  // fewest misclassified as a stump
                best_score = left_top + right_top;
                j = c;
            }
            ++c;
        }
        double limit = target() - s.S.alpha;
        if (exact[j] || bound_left[j] + bound_right[j] >= limit - EPS) return std::nullopt;
        auto sides = capped_children(j, limit);
        if (!sides) return std::nullopt;
        bound_left[j] = std::max(bound_left[j], sides->first.lower_bound);
        bound_right[j] = std::max(bound_right[j], sides->second.lower_bound);
        double cost = s.S.alpha + sides->first.cost + sides->second.cost;
        return Step{s.S.alpha + bound_left[j] + bound_right[j], cost, split_at(j, *sides)};
    }
};

// Open intervals handed between the root's workers. A worker with no feature left to search or take
// over (FeatureClaims) waits here; another, between two steps, gives it every other open interval of
// one of its scans (FeatureScan::split_off). The waiting ones end when every worker waits or has
// ended (retire), or the run is stopped. The giver publishes the part's bound in the waiting
// worker's live-bound slot as it gives it, so that the part is covered before the giver's next
// bound leaves it out.
class ScanSharing {
  public:
    ScanSharing(std::vector<Search *> searches, Control &control)
        : searches_(std::move(searches)), given_(searches_.size()), control_(control) {}

    // Whether a worker waits: a hint, read between steps without the lock.
    bool wanted() const { return waiting_count_.load(std::memory_order_relaxed) > 0; }

    // Give the first waiting worker part of scan (split_off) when it has one to give; cutoff is the
    // giver's (the part's bound is published no higher).
    void give(FeatureScan &scan, double cutoff) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (waiting_.empty()) return;
        const int64_t to = waiting_.front();
        std::unique_ptr<FeatureScan> part = scan.split_off(*searches_[size_t(to)]);
        if (!part) return;
        control_.live_bound.lower(size_t(to), std::min(cutoff, part->s.S.alpha + part->open_bound(false)));
        waiting_.erase(waiting_.begin());
        waiting_count_.store(int64_t(waiting_.size()), std::memory_order_relaxed);
        given_[size_t(to)] = std::move(part);
        changed_.notify_all();
    }

    // Wait for a part as worker me; null when the root's search has ended or was stopped.
    std::unique_ptr<FeatureScan> wait(int64_t me) {
        std::unique_lock<std::mutex> lock(mutex_);
        waiting_.push_back(me);
        waiting_count_.store(int64_t(waiting_.size()), std::memory_order_relaxed);
        changed_.notify_all();
        for (;;) {
            if (given_[size_t(me)]) return std::move(given_[size_t(me)]);
            if (int64_t(waiting_.size()) + retired_ == int64_t(searches_.size())) ended_ = true;
            if (ended_ || control_.stop.load()) {
                waiting_.erase(std::find(waiting_.begin(), waiting_.end(), me));
                waiting_count_.store(int64_t(waiting_.size()), std::memory_order_relaxed);
                changed_.notify_all();
                return nullptr;
            }
            changed_.wait_for(lock, std::chrono::milliseconds(10));  // the stop is an atomic, not notified
        }
    }

    // Worker me has ended its search: it neither waits nor gives any more.
    void retire() {
        std::lock_guard<std::mutex> lock(mutex_);
        ++retired_;
        changed_.notify_all();
    }

  private:
    std::vector<Search *> searches_;  // by worker
    std::vector<std::unique_ptr<FeatureScan>> given_;
    Control &control_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::vector<int64_t> waiting_;
    std::atomic<int64_t> waiting_count_{0};
    int64_t retired_ = 0;
    bool ended_ = false;
};

// ------------------------------------------------------------------ Search, defined

inline Subtree Search::solve(const RowSet &v, int64_t depth, int64_t node, double upper_bound, const Starts &starts,
                            const Histograms *given) {
    const int64_t m = v.size();
    if (depth == 0 || m < 2 * S.min_leaf) {
        double cost = leaf_cost(v);
        return {cost, cost, nullptr};
    }
    Cache::Key key = Cache::key(v.srt.row(0), m, depth, S.per_node ? node : 0);
    std::optional<Subtree> hit = cache_.get(key);
    if (hit && (hit->exact() || hit->lower_bound >= upper_bound - EPS)) return *hit;
    Subtree result;
    try {
        if (depth == 1) {
            spend(m);
            TargetOrder order = target_order(v.srt.row(0), m, P.d, P.n_total());
            Layout lay = make_layout(v.view(), P.rank, P.d);
            Scratch buf(0, lay);
            const bool *mask = S.at(node);
            std::unique_ptr<bool[]> both(new bool[size_t(2 * P.features())]);
            std::copy(mask, mask + P.features(), both.get());
            std::copy(mask, mask + P.features(), both.get() + P.features());
            PairResult r = depth1_pair(v.view(), lay, v.srt.row(0), m, m, buf, order, {both.get(), 2, P.features()},
                                       upper_bound);
            result = {r.cost[0], r.lower[0], r.feature[0] < 0 ? nullptr : make_node(r.feature[0], r.threshold[0])};
        } else if (depth == 2) {
            spend(m);
            Depth2Result r;
            if (histograms(v)) {
                r = depth2_by_histograms(v.srt.row(0), m, P.bins, P.d, S.at(node), S.children(node), S.alpha, given);
            } else {
                Depth2Result a = depth2_start(v, starts[0]), b = depth2_start(v, starts[1]);
                r = depth2(v, node, upper_bound, a.cost <= b.cost ? a : b);
            }
            NodePtr nodes;
            if (r.nodes[0] >= 0) {
                NodePtr left = r.nodes[2] < 0 ? nullptr : make_node(r.nodes[2], r.nodes[3]);
                NodePtr right = r.nodes[4] < 0 ? nullptr : make_node(r.nodes[4], r.nodes[5]);
                nodes = make_node(r.nodes[0], r.nodes[1], left, right);
            }
            result = {r.cost, r.lower_bound, nodes};
        } else {
            double best = leaf_cost(v);
            NodePtr best_nodes;
            if (hit && hit->cost < best - EPS) {  // a tree found by an earlier, stopped visit
                best = hit->cost;
                best_nodes = hit->nodes;
            }
            result = branch(v, depth, node, upper_bound, best, best_nodes, false, nullptr, {},
                            S.anytime || depth == 3);
        }
    } catch (const BudgetExhausted &) {
        result = {leaf_cost(v), 0.0, nullptr};
    }
    if (hit) result = merge(*hit, result);  // never a worse tree nor a lower bound than an earlier visit's
    if (result.exact() || !hit || result.lower_bound > hit->lower_bound || result.cost < hit->cost - EPS)
        cache_.put(std::move(key), result);
    return result;
}

inline std::optional<Search::Known> Search::relaxed_bounds(const RowSet &v, int64_t depth, int64_t node,
                                                           int64_t feature, double cutoff) {
    if (S.monotone() || depth < 3 || !std::isfinite(cutoff)) return std::nullopt;
    if (!relaxed_) {
        Limits own;
        own.deadline = base_deadline_;
        relaxed_ = std::make_unique<Search>(P, *S.relaxed, relaxed_cache_, relaxed_cache_, control_, own);
    }
    Search &relaxed = *relaxed_;
    FeatureScan scan(relaxed, v, feature, depth, node, std::nullopt);
    // one budget for both, and at most relaxed_work units per candidate for this scan
    relaxed.nodes_used = nodes_used;
    relaxed.work_used = work_used;
    relaxed.exhausted = exhausted;
    relaxed.limits.work_limit = limits.work_limit;
    relaxed.stopped_by = StopReason::NONE;
    double per_candidate = std::max<double>(1.0, std::floor(S.relaxed_work * double(scan.n_left.size())));
    relaxed.limits.node_limit = std::min(limits.node_limit, double(nodes_used) + per_candidate);
    try {
        while (scan.step([cutoff] { return cutoff; })) {
        }
    } catch (const BudgetExhausted &) {
        scan.open_bound();  // neighbour bounds for the candidates left open
    }
    nodes_used = relaxed.nodes_used;
    work_used = relaxed.work_used;
    interrupted = interrupted || relaxed.interrupted;
    // the relaxed scan may have stopped on its own limit only; the spent work counts (at most one unit over)
    exhausted = exhausted || over_budget();
    return Known{scan.rank_threshold, scan.bound_left, scan.bound_right};
}

inline std::unique_ptr<FeatureScan> Search::scan(const RowSet &v, int64_t feature, int64_t depth, int64_t node,
                                                 double cutoff) {
    auto known = relaxed_bounds(v, depth, node, feature, cutoff);
    return std::make_unique<FeatureScan>(*this, v, feature, depth, node, known);
}

inline Subtree Search::branch(const RowSet &v, int64_t depth, int64_t node, double upper_bound, double best,
                              NodePtr best_nodes, bool report, const std::vector<int64_t> *features_given,
                              RootShare share, bool first_pass) {
    SharedIncumbent *shared = share.incumbent;
    FeatureClaims *claims = share.claims;
    auto cutoff = [&] { return std::min({best, upper_bound, shared ? shared->value() : INF}); };
    const double alpha = S.alpha;
    const bool binary = S.binary_steps && depth == 3;
    if (cutoff() <= alpha + EPS && (S.monotone() || !S.best_first || binary)) return {best, cutoff(), best_nodes};
    std::vector<int64_t> ordered;
    if (!features_given) ordered = feature_order(v, node);
    const std::vector<int64_t> &features = features_given ? *features_given : ordered;
    std::vector<std::unique_ptr<FeatureScan>> started;  // the features in order, then those taken over
    double unresolved = INF;  // lowest children bound (without alpha) of a non-exact candidate of the binary steps

    auto held = [&](int64_t f) { return !claims || claims->holds(f, share.me); };
    auto holds = [&](const FeatureScan &sc) { return sc.given || held(sc.feature); };
    // The least children bound of an open candidate of the held features (0 for one not started).
    auto least_open = [&](bool record) {
        double open = INF;
        for (auto &sc : started)
            if (holds(*sc)) open = std::min(open, sc->open_bound(record));
        for (size_t j = started.size(); j < features.size(); ++j)
            if (held(features[j])) open = 0.0;
        return open;
    };
    Clock::time_point next_publish = Clock::now();
    auto publish = [&] {
        next_publish = Clock::now() + std::chrono::milliseconds(50);
        control_.live_bound.publish(size_t(share.me), std::min(cutoff(), alpha + std::min(least_open(false), unresolved)));
    };
    auto take = [&](const Step &step) {
        if (step.split && step.cost < best - EPS) {
            best = step.cost;
            best_nodes = step.split;
            if ((!shared || shared->offer(best)) && report) control_.trace.add(best);
        }
        if (report && Clock::now() >= next_publish) publish();
    };
    auto start = [&](int64_t f) { started.push_back(scan(v, f, depth, node, cutoff())); };
    // The next step of started[k] while its feature is held, its work published to the claims.
    auto step_of = [&](size_t k) -> std::optional<Step> {
        FeatureScan &sc = *started[k];
        if (!holds(sc)) return std::nullopt;
        if (share.sharing && share.sharing->wanted()) share.sharing->give(sc, cutoff());
        int64_t used = work_used;
        std::optional<Step> step = sc.step(cutoff);
        if (claims && !sc.given) claims->record(sc.feature, work_used - used, !step);
        return step;
    };
    // The next feature not started, one taken over from another worker, or a part of another's scan
    // (after a wait); false: none.
    auto start_next = [&] {
        if (started.size() < features.size()) {
            start(features[started.size()]);
            return true;
        }
        int64_t taken = claims ? claims->take_over(share.me) : -1;
        if (taken >= 0) {
            start(taken);
            return true;
        }
        if (!share.sharing) return false;
        std::unique_ptr<FeatureScan> part = share.sharing->wait(share.me);
        if (!part) return false;
        started.push_back(std::move(part));
        if (report) publish();
        return true;
    };

    try {
        // classification: CART's split first, its children searched as this node is (a dive to a
        // cheap tree whose cost prunes the scans and, when no split can beat it, ends the node)
        if (!claims && !P.regression() && depth >= DIVE_DEPTH)
            if (std::optional<Step> step = dive(v, depth, node, cutoff() - alpha, first_pass)) take(*step);
        if (binary) {  // one candidate per feature: each solved directly, no scans
            const int64_t m = v.size();
            const int32_t *rows = v.srt.row(0);
            for (int64_t f : features) {
                double limit = cutoff() - alpha;
                if (limit <= EPS) break;  // no split can beat the cutoff
                const int32_t *rank_f = P.rank.row(f);
                int64_t left_rows = 0;
                for (int64_t t = 0; t < m; ++t) left_rows += rank_f[rows[t]] == 0 ? 1 : 0;
                if (left_rows < S.min_leaf || m - left_rows < S.min_leaf) continue;
                spend(m);
                auto [left, right] = partition(v, f, 0, left_rows, 2);
                auto sides = solve_children(left, right, 2, node, limit, 0.0);
                double cost = alpha + sides.first.cost + sides.second.cost;
                bool both_exact = sides.first.exact() && sides.second.exact();
                double bound = both_exact ? cost : alpha + sides.first.lower_bound + sides.second.lower_bound;
                take({bound, cost, make_node(f, 0, sides.first.nodes, sides.second.nodes)});
                if (bound < cost - EPS) unresolved = std::min(unresolved, bound - alpha);
            }
        } else {
            const bool slabs = FeatureScan::with_slabs(*this, v.size(), depth, node);
            if (slabs) {  // every feature's bound before any step, which replaces the first pass's
                for (int64_t f : features) {
                    start(f);
                    if (report) publish();
                }
            }
            if (first_pass && !slabs) {
                for (size_t j = 0; j < features.size(); ++j) {
                    if (cutoff() <= alpha + EPS) break;
                    if (j == started.size()) start(features[j]);
                    if (depth >= 4) {  // children are searches themselves: a capped probe, the full solve later
                        for (const Step &step : started[j]->probe(cutoff)) take(step);
                    } else if (auto step = started[j]->step(cutoff)) {
                        take(*step);
                    }
                }
            }
            if (S.best_first) {  // across features: the interval next to the cheapest tree found first
                for (size_t j = started.size(); j < features.size(); ++j) start(features[j]);
                std::vector<size_t> active;
                for (size_t j = 0; j < started.size(); ++j) active.push_back(j);
                const bool alternate = !started.empty() && started[0]->alternating;
                bool least_bound_turn = false;
                while (cutoff() > alpha + EPS) {
                    if (claims) {  // a feature taken over by another worker is its own
                        std::vector<size_t> kept;
                        for (size_t j : active)
                            if (holds(*started[j])) kept.push_back(j);
                        active.swap(kept);
                    }
                    if (active.empty()) {
                        if (!start_next()) break;
                        active.push_back(started.size() - 1);
                    }
                    if (alternate) {  // alternately the least bound and the cheapest tree's neighbourhood
                        least_bound_turn = !least_bound_turn;
                        for (size_t j : active) started[j]->take_least_bound(least_bound_turn);
                    }
                    size_t k = active[0];
                    double k_priority = started[k]->priority();
                    for (size_t j : active) {
                        double pj = started[j]->priority();
                        if (pj < k_priority || (pj == k_priority && j < k)) {
                            k = j;
                            k_priority = pj;
                        }
                    }
                    if (auto step = step_of(k)) take(*step);
                    else active.erase(std::find(active.begin(), active.end(), k));
                }
            }
            size_t k = 0;
            while (cutoff() > alpha + EPS) {  // else no split can beat the cutoff: open scans do not matter
                if (k == started.size() && !start_next()) break;
                while (auto step = step_of(k)) take(*step);
                ++k;
            }
        }
    } catch (const BudgetExhausted &) {
        return {best, std::min(cutoff(), alpha + least_open(true)), best_nodes};
    }
    double open = started.empty() ? unresolved : INF;
    for (auto &sc : started)
        if (holds(*sc)) open = std::min(open, sc->unresolved);
    return {best, std::min(cutoff(), alpha + open), best_nodes};
}

}  // namespace optitree
