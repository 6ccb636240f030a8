// A search of a whole problem from its root, run on native threads while the caller waits.
//
// The caller (Python) starts a job, then waits in short slices (wait, the GIL released): between
// two it reports progress, runs its callbacks and may ask the job to stop (interrupt). Worker
// threads never touch Python.
//
// With threads > 1 the root's features, best single split first, are dealt round-robin to the
// workers; each runs Search::branch over its share against the least cost any of them has found
// (SharedIncumbent); a worker whose features are done takes over another's unfinished one
// (FeatureClaims) or, with none left to take, half the open intervals of another's scan
// (ScanSharing). All of them share one cache of solved sub-problems. The root search first runs
// alone for alone_seconds: most small problems end there, and the workers start from its cache and
// its incumbent.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <thread>

#include "search.hpp"

namespace optitree {

// The candidates of one root feature after a scan (split_bounds).
struct FeatureBounds {
    int64_t feature;
    std::vector<int64_t> rank_threshold, n_left;
    std::vector<double> bound_left, bound_right;
    std::vector<bool> exact;
};

class SearchRun {
  public:
    SearchRun(const Problem &problem, Settings settings)
        : problem_(problem), settings_(std::move(settings)), relaxed_settings_(settings_) {
        relaxed_settings_.min_leaf = 1;
        relaxed_settings_.relaxed = nullptr;
        settings_.relaxed = settings_.monotone() ? nullptr : &relaxed_settings_;
        search_ = std::make_unique<Search>(problem_, settings_, cache_, relaxed_cache_, control_, Limits{});
    }
    ~SearchRun() {
        interrupt();
        join();
    }

    Search &search() { return *search_; }
    Control &control() { return control_; }

    // The limits of the next job: seconds from now (inf: none), node and work budgets (inf: none). The
    // job starts unstopped: a search run again (from its cache) goes on under its new limits.
    void set_limits(double seconds, double node_limit, double work_limit) {
        search_->exhausted = search_->interrupted = false;
        search_->stopped_by = StopReason::NONE;
        Limits l;
        l.node_limit = node_limit;
        l.work_limit = work_limit;
        if (std::isfinite(seconds))
            l.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                            std::chrono::duration<double>(std::max(seconds, 0.0)));
        search_->limits = l;
        search_->set_base_deadline(l.deadline);
    }

    // Solve the problem of view from its root: a depth-2 start, then branch and bound (threads at the root).
    // start_tree (null: none) is a first incumbent, used when it is a tree of the problem. The job first
    // runs on the calling thread for inline_seconds (see start), which count towards its alone_seconds.
    void start_root(RowSet view, int64_t depth, double upper_bound, int64_t threads, double alone_seconds,
                    NodePtr start_tree, double inline_seconds) {
        start(
            [this, view = std::move(view), depth, upper_bound, threads, alone_seconds, inline_seconds, start_tree,
             resumed = false]() mutable {  // resumed: run again on the thread after the slice cut it
                const double alone = resumed ? std::max(0.0, alone_seconds - inline_seconds) : alone_seconds;
                resumed = true;
                root_result_ = root(view, depth, upper_bound, threads, alone, start_tree);
            },
            inline_seconds);
    }

    // The cost of tree on view with the best leaf values, or none when it is not a tree of the problem
    // (deeper than depth, a feature not allowed at its node, a leaf below min_leaf rows).
    std::optional<double> tree_cost(const RowSet &view, const NodePtr &tree, int64_t depth, int64_t node = 1) const {
        const Search &s = *search_;
        if (!tree) {
            if (view.size() < settings_.min_leaf) return std::nullopt;
            return s.leaf_cost(view);
        }
        if (depth == 0 || tree->feature < 0 || tree->feature >= problem_.features() ||
            !settings_.at(node)[tree->feature])
            return std::nullopt;
        const int32_t *rows = view.srt.row(0), *rank_f = problem_.rank.row(tree->feature);
        int64_t n_left = 0;
        for (int64_t t = 0; t < view.size(); ++t) n_left += rank_f[rows[t]] <= tree->threshold ? 1 : 0;
        auto [left, right] = s.partition(view, tree->feature, tree->threshold, n_left);
        auto left_cost = tree_cost(left, tree->left, depth - 1, 2 * node);
        auto right_cost = left_cost ? tree_cost(right, tree->right, depth - 1, 2 * node + 1) : std::nullopt;
        if (!right_cost) return std::nullopt;
        return settings_.alpha + *left_cost + *right_cost;
    }

    // Scan every allowed feature at the root of a depth-depth tree against limit (tighten: and the
    // best tree found so far), recording each candidate's children bounds.
    void start_split_bounds(RowSet view, int64_t depth, double limit, bool tighten) {
        start([this, view = std::move(view), depth, limit, tighten] { split_bounds(view, depth, limit, tighten); });
    }

    // Wait up to seconds for the job; whether it has ended.
    bool wait(double seconds) {
        std::unique_lock<std::mutex> lock(mutex_);
        done_cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return done_; });
        return done_;
    }

    void interrupt() { control_.stop.store(true); }

    // The ended job's outcome; rethrows what a worker threw.
    void finish() {
        join();
        if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    }

    const Subtree &root_result() const { return root_result_; }
    const std::vector<FeatureBounds> &feature_bounds() const { return feature_bounds_; }
    double best_cost() const { return best_; }
    const NodePtr &best_nodes() const { return best_nodes_; }
    int64_t nodes_progress() const { return control_.nodes.load(std::memory_order_relaxed); }
    double live_bound() { return control_.live_bound.value(); }

  private:
    const Problem &problem_;
    Settings settings_, relaxed_settings_;
    Cache cache_, relaxed_cache_;
    Control control_;
    std::unique_ptr<Search> search_;
    std::thread thread_;
    std::mutex mutex_;
    std::condition_variable done_cv_;
    bool done_ = true;
    std::exception_ptr error_;
    Subtree root_result_;
    std::vector<FeatureBounds> feature_bounds_;
    double best_ = INF;
    NodePtr best_nodes_;

    void join() {
        if (thread_.joinable()) thread_.join();
    }

    // Run job on a native thread, after up to inline_seconds of it on the calling thread: a small problem
    // ends there without a thread's start and hand-off (which under load can take milliseconds). A job
    // the slice cuts runs again on the thread, from the cache and trace the calling thread left.
    void start(std::function<void()> job, double inline_seconds = 0.0) {
        join();
        control_.stop.store(false);
        control_.trace.restart();
        done_ = false;
        if (inline_seconds > 0.0 && run_inline(job, inline_seconds)) return;
        thread_ = std::thread([this, job = std::move(job)] {
            try {
                job();
            } catch (...) {
                error_ = std::current_exception();
            }
            std::lock_guard<std::mutex> lock(mutex_);
            done_ = true;
            done_cv_.notify_all();
        });
    }

    // The job on the calling thread with its deadline at most seconds away; whether it has ended (solved,
    // stopped by its own limits or an interrupt, or raised). When its own deadline is further away than
    // the slice, the slice searches in the plain order, which proves small problems with less work: the
    // anytime first pass serves a stop, and none can come before the job leaves this thread.
    bool run_inline(const std::function<void()> &job, double seconds) {
        const bool anytime = settings_.anytime;
        if (search_->limits.deadline - Clock::now() > std::chrono::duration<double>(seconds))
            settings_.anytime = relaxed_settings_.anytime = false;
        bool cut = false;
        try {
            cut = search_->cut_by(std::nullopt, seconds, job);
        } catch (...) {
            error_ = std::current_exception();
        }
        settings_.anytime = relaxed_settings_.anytime = anytime;
        if (cut) return false;  // only the slice stopped it
        done_ = true;
        return true;
    }

    Subtree root(const RowSet &view, int64_t depth, double upper_bound, int64_t threads, double alone_seconds,
                 const NodePtr &start_tree) {
        Search &s = *search_;
        control_.live_bound.reset(1, 0.0);
        double best = s.leaf_cost(view);
        NodePtr nodes;
        // the first incumbent on the trace: the given start when it beats the leaf, so that no point is worse
        if (std::optional<double> given = start_tree ? tree_cost(view, start_tree, depth) : std::nullopt) {
            if (*given < best - EPS) {
                best = *given;
                nodes = start_tree;
            }
        }
        control_.trace.add(best);
        auto improve = [&](double cost, const NodePtr &tree) {
            if (cost >= best - EPS) return;
            best = cost;
            nodes = tree;
            control_.trace.add(best);
        };
        if (depth <= 2) return merge(s.solve(view, depth, 1, upper_bound), {best, 0.0, nodes});
        // On a small root the dive first: from DIVE_DEPTH it often reaches a tree no split can beat (cost
        // <= alpha) in a few kernel calls on subsets, while the depth-2 start on all rows is the run's
        // costliest call; skipped then. Its tree is an incumbent in any case.
        if (depth >= DIVE_DEPTH && !problem_.regression() && view.size() < BOUND_FIRST_ROWS) {
            std::optional<Step> dive;
            s.cut_by(DIVE_FIRST_UNITS, std::nullopt, [&] {
                try {
                    dive = s.dive(view, depth, 1, std::min(best, upper_bound) - settings_.alpha, true);
                } catch (const BudgetExhausted &) {  // the search's own limits stop the depth-2 start too
                }
            });
            if (dive) improve(dive->cost, dive->split);
        }
        if (std::min(best, upper_bound) > settings_.alpha + EPS) {  // else no split can beat the incumbent
            Subtree start = s.solve(view, 2, 1, upper_bound);  // a depth-2 optimum: a strong first incumbent
            improve(start.cost, start.nodes);
        }
        const bool first_pass = settings_.anytime || depth == 3;  // at depth 3 an early incumbent
        if (threads > 1) return parallel(view, depth, upper_bound, best, nodes, threads, alone_seconds, first_pass);
        return s.branch(view, depth, 1, upper_bound, best, nodes, true, nullptr, {}, first_pass);
    }

    Subtree parallel(const RowSet &view, int64_t depth, double upper_bound, double best, NodePtr best_nodes,
                     int64_t threads, double alone_seconds, bool first_pass) {
        Search &s = *search_;
        const std::vector<int64_t> features = s.feature_order(view, 1);
        Subtree alone;
        const bool cut = s.cut_by(std::nullopt, alone_seconds, [&] {  // most small problems end here
            alone = s.branch(view, depth, 1, upper_bound, best, best_nodes, true, &features, {}, first_pass);
        });
        if (!cut) return alone;  // solved, or stopped by the search's own limits
        if (alone.cost < best - EPS) {
            best = alone.cost;
            best_nodes = alone.nodes;
        }
        const int64_t workers = std::max<int64_t>(1, std::min<int64_t>(threads, int64_t(features.size())));
        // settled at the alone search's bound, or at alpha: a tree of cost <= alpha is optimal (any split
        // costs alpha, and the leaf no less than best)
        SharedIncumbent shared(std::min(best, upper_bound), std::max(settings_.alpha, alone.lower_bound));
        // of a node or work limit, what each worker may spend: the total stays within it
        auto share = [workers](double limit, int64_t used) {
            return std::isfinite(limit) ? std::max(0.0, std::floor((limit - double(used)) / double(workers))) : INF;
        };
        Limits limits = s.limits;
        limits.node_limit = share(s.limits.node_limit, s.nodes_used);
        limits.work_limit = share(s.limits.work_limit, s.work_used);
        std::vector<std::vector<int64_t>> dealt(static_cast<size_t>(workers));
        std::vector<int64_t> owners(size_t(problem_.features()), -1);
        for (size_t j = 0; j < features.size(); ++j) {
            dealt[j % size_t(workers)].push_back(features[j]);
            owners[size_t(features[j])] = int64_t(j % size_t(workers));
        }
        FeatureClaims claims(owners);
        control_.live_bound.reset(size_t(workers), alone.lower_bound);  // the alone search's bound holds for all
        std::vector<std::unique_ptr<Search>> subs;
        std::vector<Search *> searches;
        for (int64_t k = 0; k < workers; ++k) {
            subs.push_back(std::make_unique<Search>(problem_, settings_, cache_, relaxed_cache_, control_, limits));
            subs.back()->settled = &shared.settled();
            searches.push_back(subs.back().get());
        }
        ScanSharing sharing(std::move(searches), control_);
        std::vector<Subtree> results(static_cast<size_t>(workers));
        std::vector<std::exception_ptr> errors(static_cast<size_t>(workers));
        auto work = [&](int64_t k) {
            try {
                results[k] = subs[k]->branch(view, depth, 1, upper_bound, best, best_nodes, true, &dealt[k],
                                             RootShare{&shared, &claims, k, &sharing}, first_pass);
            } catch (...) {
                errors[k] = std::current_exception();
                control_.stop.store(true);  // the others stop too; the error is raised once all have ended
            }
            sharing.retire();
        };
        std::vector<std::thread> pool;
        for (int64_t k = 1; k < workers; ++k) pool.emplace_back(work, k);
        work(0);
        for (auto &t : pool) t.join();
        for (auto &e : errors)
            if (e) std::rethrow_exception(e);
        size_t winner = 0;
        double bound = INF;
        for (size_t k = 0; k < results.size(); ++k) {
            Search &sub = *subs[k];
            s.nodes_used += sub.nodes_used;
            s.work_used += sub.work_used;
            if (sub.stopped_by != StopReason::SETTLED) {  // else its bound is the optimum (branch: the cutoff)
                if (s.stopped_by == StopReason::NONE) s.stopped_by = sub.stopped_by;
                s.exhausted = s.exhausted || sub.exhausted;
                s.interrupted = s.interrupted || sub.interrupted;
            }
            if (results[k].cost < results[winner].cost) winner = k;
            bound = std::min(bound, results[k].lower_bound);
        }
        return {results[winner].cost, std::min(results[winner].cost, bound), results[winner].nodes};
    }

    void split_bounds(const RowSet &view, int64_t depth, double limit, bool tighten) {
        Search &s = *search_;
        feature_bounds_.clear();
        best_ = s.leaf_cost(view);
        best_nodes_ = nullptr;
        control_.trace.add(best_);
        auto target = [&] { return tighten ? std::min(limit, best_) : limit; };
        for (int64_t f = 0; f < problem_.features(); ++f) {
            if (!settings_.at(1)[f]) continue;
            std::unique_ptr<FeatureScan> scan = s.scan(view, f, depth, 1, target());
            try {
                while (auto step = scan->step(target)) {
                    if (step->split && step->cost < best_ - EPS) {
                        best_ = step->cost;
                        best_nodes_ = step->split;
                        control_.trace.add(best_);
                    }
                }
            } catch (const BudgetExhausted &) {
                scan->open_bound();  // records neighbour bounds of the candidates left open
            }
            feature_bounds_.push_back(
                {f, scan->rank_threshold, scan->n_left, scan->bound_left, scan->bound_right, scan->exact});
        }
    }
};

}  // namespace optitree
