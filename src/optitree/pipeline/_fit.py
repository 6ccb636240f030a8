"""One fit of an optimal tree: the stages from a built formulation to a certified result.

An estimator validates its input, builds the formulation and the start it was given, and
hands them with a :class:`FitRequest` (its parameters, nothing else) to
:class:`FitPipeline`, whose :meth:`~FitPipeline.run` returns a :class:`FitOutcome` (tree,
start, result, model). The stages, each a method that takes and returns values (the best tree
before the solve travels as an :class:`~optitree.pipeline._start.Incumbent`); a stage that settles
the fit returns its :class:`FitOutcome`, and the run returns it:

1. :meth:`~FitPipeline.engine` — the exact engine (:mod:`optitree.exact`). Without user
   rows its proof (or, stopped, its best tree and bound) ends the fit and no MIP is built;
   with them it runs after the build, under the feature restrictions the rows imply.
2. :meth:`~FitPipeline.build` — size check, the MIP (:class:`~optitree.model.ModelSpec`),
   ``allowed_features``/``max_distinct_features`` and the user's Pyomo constraints.
3. :meth:`~FitPipeline.start` — the given start, the engine's tree if better, a repaired one
   if neither meets the user rows.
4. :meth:`~FitPipeline.bounds` — the engine's bounds on the root's split candidates: a bound
   row and screening (:mod:`optitree.pipeline._root_bounds`); they may prove the start.
5. :meth:`~FitPipeline.backend_solve` — the backend the ``solver`` string names (rows after
   solve added and solved again), or the root-split decomposition (FlowOCT: sub-MIPs;
   depth-2 squared-error ORT under rows on its leaf values: the children enumerated exactly,
   :mod:`optitree.pipeline._leaf_rows`).
6. :meth:`~FitPipeline.decode` — the solution as a :class:`greedy.Tree`, the start when the
   solver found nothing better, its objective recomputed with numpy.
7. :meth:`~FitPipeline.certificate` — the bound raised to what is known, the solver's
   optimality claim verified against the returned tree
   (:func:`~optitree.pipeline._certificate.verify_certificate`).
8. :meth:`~FitPipeline.best_known` — without user rows, a tree found outside the solve that
   the model could not take as a start, returned uncertified when it is better.

The whole run is watched (:class:`~optitree.pipeline._progress.FitWatch`): a progress line at
``verbose=1`` and Ctrl-C (the first stops the running stage and returns the best tree so far
with status ``"interrupted"``, the second raises KeyboardInterrupt).
"""

from __future__ import annotations

import re
import time
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

from greedy import Tree

from .. import exact
from ..model import ModelSpec, apply_user_constraints, check_size, solve_profile
from ..solvers import SolveOptions, SolveResult, make_backend, relative_gap
from ..solvers.resolve import solve_adding_rows
from ._certificate import OBJECTIVE_TOL, verify_certificate, verify_tree_in_model
from ._engine import ExactStage, apply_engine_bounds, implied_restrictions, make_stage
from ._progress import FitWatch
from ._results import bounds_result, engine_result, stopped_result
from ._leaf_rows import leaf_value_rows
from ._root_bounds import root_bounds, solve_by_decomposition, solve_by_leaf_rows
from ._start import Incumbent, better_start, encode_start, repaired_start, tree_violation

__all__ = ["FitRequest", "FitOutcome", "FitPipeline"]

#: Share of ``time_limit`` the engine gets when its answer is final (``solver="dp"``, or no user
#: rows with the proof stage): the rest covers leaf statistics, decoding and the certificate.
ENGINE_SHARE_FINAL = 0.97
#: From this many training rows the engine searches from the given start (greedy CART's by default,
#: fitted then if deferred): on large sets the engine's own depth-2 start can be far worse, and a
#: stopped search never reports or returns worse than its start. Below, CART would be a large
#: share of a fit the engine proves in milliseconds.
ENGINE_START_ROWS = 2000
#: The formulation's improvement heuristic (OCT-H, ORT-L) gets this share of ``time_limit``, at most
#: :data:`HEURISTIC_SHARE_LEFT` of the time left (the MIP needs the rest) and :data:`HEURISTIC_MAX_SECONDS`;
#: :data:`HEURISTIC_NO_LIMIT_SECONDS` without a limit.
HEURISTIC_SHARE = 0.1
HEURISTIC_SHARE_LEFT = 0.5
HEURISTIC_MAX_SECONDS = 60.0
HEURISTIC_NO_LIMIT_SECONDS = 10.0


@dataclass(frozen=True)
class FitRequest:
    """What an estimator asks of one fit beyond its problem (the formulation's): how to solve it.

    ``stages`` are the enabled stages of ``acceleration``; ``engine_start_only`` says the engine's trees do
    not cover the model (hyperplanes, linear leaves): its tree is a start, its bounds no
    bounds. ``units`` names the objective and gives model units per user unit (the progress
    line and ``summary()``); ``solve_notes`` are appended to the message after a MIP solve;
    ``input_notes`` to every result.
    """

    solver: str
    time_limit: float | None = None
    rel_gap: float = 0.0
    threads: int = 1
    seed: int = 0
    node_limit: int | None = None
    work_limit: int | None = None
    memory_budget: int | None = None
    verbose: int = 0
    constraints: Callable | None = None
    stages: frozenset = frozenset()
    engine_start_only: bool = False
    units: tuple = ("objective", 1.0)
    solve_notes: tuple = ()
    input_notes: tuple = ()
    size_hint: str = "use fewer samples or features, or a lower max_depth"
    feature_names: np.ndarray | None = None

    def solve_options(self) -> SolveOptions:
        return SolveOptions(time_limit=self.time_limit, rel_gap=self.rel_gap, threads=self.threads,
                            random_seed=self.seed, node_limit=self.node_limit, verbose=self.verbose >= 2)


@dataclass
class FitOutcome:
    """What a fit returns: the tree, the start given to the solver (None without), the result, the MIP (None
    when none was built)."""

    tree: Tree | None
    init_tree: Tree | None
    result: SolveResult
    model: ModelSpec | None
    #: Why the fit has no tree (``tree`` is None): the estimator stores the result, then raises it.
    error: Exception | None = None


class FitPipeline:
    """The stages of one fit (module docstring) for a built formulation and its data.

    Parameters
    ----------
    request : FitRequest
    form : TreeFormulation
        Not built yet; its :class:`~optitree.problem.Problem` is the fit's, and its rows (``X``, ``y``
        encoded, normalised weights) the fit's data.
    given : (greedy.Tree or None, str or None), or a callable returning it
        The start as given (``init``) and its source; a callable (e.g. greedy CART's fit) is
        called once, when a stage first needs the start (:attr:`given`): a fit the engine
        proves never does.
    model_warnings : list of warnings.WarningMessage
        Warnings the formulation raised while it was made: about its MIP, so re-issued only
        when the MIP is built.
    """

    def __init__(self, request: FitRequest, form, given=(None, None), model_warnings=()):
        self.request, self.form, self.problem = request, form, form.problem
        self.X, self.y, self.sample_weight = self.problem.X, self.problem.y, self.problem.weight
        self._given = given
        self.model_warnings = list(model_warnings)
        self.options = request.solve_options()
        self.watch: FitWatch | None = None
        self.stage: ExactStage | None = None
        self.data = None
        self.spec: ModelSpec | None = None
        self.known_trees: list = []  # (tree, whose): answers found outside the solve (best_known)
        self.fit_start = 0.0  # fit_time and the time limit count from here

    @property
    def side_rows(self) -> bool:
        """Whether the model has rows beyond the formulation's (user constraints, parameter limits)."""
        return self.request.constraints is not None or self.problem.max_distinct_features is not None

    @property
    def given(self):
        """The start as given and its source, ``(tree or None, source or None)``, made on first use."""
        if callable(self._given):
            self._given = self._given()
        return self._given

    def run(self) -> FitOutcome:
        """Run the fit, watched (progress line, Ctrl-C)."""
        self.watch = FitWatch(self.request.verbose)
        with self.watch:
            return self._run()

    # ------------------------------------------------------------------ the stages in order
    def _run(self) -> FitOutcome:
        request, form, watch, problem = self.request, self.form, self.watch, self.problem
        self.fit_start = time.perf_counter()
        watch.set_units(*request.units, lower=form.objective_lower_bound)
        self.stage = make_stage(request, problem)
        settled = self._stopped_before_start()
        if settled is not None:
            return settled
        n_positive = int(np.count_nonzero(self.sample_weight))
        if problem.min_samples_leaf > n_positive:
            if self.stage is not None and self.stage.is_solver:
                raise ValueError(f"no tree satisfies min_samples_leaf={problem.min_samples_leaf}: it exceeds the "
                                 f"{n_positive} positive-weight training samples")
            self.stage = None  # the model reports it infeasible
        if problem.max_bins is not None and not (self.stage is not None and self._engine_final()):
            raise ValueError(f"max_bins={problem.max_bins} restricts the exact engine's thresholds, so it applies "
                             "only where the engine settles the fit: without constraints, with the 'proof' stage of "
                             "acceleration, constant leaves and axis-aligned splits (the MIP's split space has "
                             "every midpoint); set max_bins=None")
        if self.stage is not None:
            self.data = exact.prepare(problem, report="problem")
        engine = None
        if self.stage is not None and self.stage.sees_all:
            engine = self.engine()
            settled = self._settled_by_engine(engine)
            if settled is not None:
                return settled
        build_time = self.build()
        if self.stage is not None and engine is None:
            implied_restrictions(form, self.spec, self.stage)
            engine = self.engine()
        best, notes = self.start(engine, build_time)
        watch.known(incumbent=best.objective)
        root_lower, settled = self.bounds(best, notes, build_time)
        if settled is None:
            settled = self._stopped_before_solve(best, notes, build_time)
        if settled is not None:
            return settled
        result, x = self.backend_solve(best, root_lower, build_time)
        notes.extend(request.solve_notes)
        tree, solver_objective = self.decode(result, x, best, notes)
        if tree is None:
            outcome = self._outcome(None, None, result, notes)
            outcome.error = self._no_tree_error(result)
            return outcome
        self.certificate(result, tree, solver_objective, notes)
        tree = self.best_known(tree, result, notes)
        return self._outcome(tree, best.tree, result, notes)

    def _stopped_before_start(self) -> FitOutcome | None:
        """A stop asked before the fit (``request_stop(all_fits=True)``) ends it at once with its start."""
        if self.stage is None or not self.watch.check():
            return None
        tree, source = self.given
        if tree is None:
            raise KeyboardInterrupt("the fit was interrupted before any tree was found (no start: init=None)")
        notes = []
        result = stopped_result(self.form, self.stage, None, self.form.objective_of_tree(tree), source,
                                self.options, 0.0, notes, solver=self.request.solver)
        return self._outcome(tree, tree, result, notes)

    def engine(self):
        """Stage 1: the engine's solve, with most of the time limit when its answer is the answer."""
        request, stage = self.request, self.stage
        # without user constraints the engine's answer is the answer: with the proof stage no MIP
        # follows (a stopped engine's best is returned), so it gets the limit but for the decode;
        # with them it runs after the build, honouring the feature restrictions the user rows imply
        fraction = ENGINE_SHARE_FINAL if self._engine_final() else 0.9 if stage.sees_all else 0.5
        share = None if self.options.time_limit is None else fraction * self.options.time_limit
        start = self.given[0] if self.X.shape[0] >= ENGINE_START_ROWS else None
        # over max_bins's thresholds the start (between bin edges) stays the answer until the engine
        # beats it (engine_result's fallback): the progress line never shows worse
        held = self.form.objective_of_tree(start) if (
            start is not None and self.problem.max_bins is not None and stage.admits(start)) else None
        with self.watch.stage("engine"):
            result = stage.solve(self.data, self.problem, time_limit=share,
                                 callback=self.watch.engine_callback("engine", self.form.model_error_scale, held=held),
                                 threads=request.threads, work_limit=request.work_limit, start=start)
        self.watch.known(bound=stage.engine["bound"] if stage.lower_bounds else None)
        return result

    def _engine_final(self) -> bool:
        """Whether no MIP follows the engine: ``solver="dp"``, or its proof stage on a model it sees whole."""
        return self.stage.is_solver or self.stage.sees_all and "proof" in self.stage.stages

    def _settled_by_engine(self, engine) -> FitOutcome | None:
        """The fit's outcome when the engine's answer settles it (proof, 'dp', Ctrl-C, its time limit), else None."""
        request, stage = self.request, self.stage
        binned = self.problem.max_bins is not None
        if stage.is_solver or binned or engine.status in ("interrupted", "work_limit") or (
                "proof" in stage.stages and (
            engine.status == "optimal" or engine.status == "time_limit" and self.options.time_limit is not None
        )):
            # without user constraints a MIP after an engine stopped by the clock (90 % of the limit
            # spent) would overrun time_limit for nothing: the engine's best (or the start) is returned
            tree, result, notes = engine_result(self.form, stage, engine, self._engine_tree(engine), self.options,
                                                rel_gap=request.rel_gap, solver=request.solver,
                                                fallback=self.given if engine.status != "optimal" or binned
                                                else (None, None), binned=binned)
            return self._outcome(tree, None, result, notes)
        return None

    def _engine_tree(self, engine):
        """The engine's tree with the task's node statistics on the training data.

        The engine's own statistics are these when it saw every row (no zero weight), with the
        same class codes and weights (classification: its weight unit is a power of two, so its
        weights times its weight unit are the given ones exactly); else they are recomputed.
        """
        data, form = self.data, self.form
        if (form.task.name == "classification" and data is not None and data.kept.size == self.y.shape[0]
                and data.n_classes == form.task.n_classes and np.array_equal(data.y, self.y)
                and np.array_equal(data.weight * data.weight_unit, self.sample_weight) and np.array_equal(data.X, self.X)):
            return engine.tree
        return form.task.statistics(engine.tree, self.X, self.y, self.sample_weight)

    def build(self) -> float:
        """Stage 2: the MIP, its restrictions and the user's rows (``self.spec``); returns the build time."""
        request, form = self.request, self.form
        self._check_mip_features()
        self._reissue_model_warnings()
        n_rows, n_cols, nnz = form.estimate_size()
        check_size(n_rows, n_cols, nnz, request.memory_budget, hint=request.size_hint,
                   solve_memory=solve_profile(form))
        t0 = time.perf_counter()
        spec = form.build()
        if self.problem.allowed is not None:
            form.forbid_features(spec, self.problem.allowed)
        if self.problem.max_distinct_features is not None:
            form.limit_distinct_features(self.problem.max_distinct_features)
        if request.constraints is not None:
            apply_user_constraints(spec, request.constraints)
        self.spec = spec
        return time.perf_counter() - t0

    def start(self, engine, build_time) -> tuple[Incumbent, list[str]]:
        """Stage 3: the best start and notes — the given start, the engine's tree if better and feasible, or a
        repaired one; then the formulation's improvement heuristic
        (:meth:`~optitree.formulations.TreeFormulation.improve_start`: hyperplanes, linear leaves), within
        its share of the time limit and of the time left (:data:`HEURISTIC_SHARE`)."""
        form, spec, stage = self.form, self.spec, self.stage
        best, notes = encode_start(form, spec, self.given)
        engine_tree = None if engine is None else self._engine_tree(engine)
        self.known_trees.append((engine_tree, "exact engine's"))
        if engine is not None and "start" in stage.stages:
            best = better_start(form, spec, best, engine_tree, notes)
        if best.vector is None and stage is not None and "start" in stage.stages and self.side_rows:
            best = repaired_start(form, spec, [(engine_tree, "exact"), self.given], best, self.options, notes,
                                  solver=self.request.solver)
        if best.tree is not None:
            limit = self.options.time_limit
            budget = HEURISTIC_NO_LIMIT_SECONDS if limit is None else min(
                HEURISTIC_SHARE * limit, HEURISTIC_SHARE_LEFT * max(self._time_left(build_time), 0.0),
                HEURISTIC_MAX_SECONDS)
            with self.watch.stage("heuristic"):
                improved = form.improve_start(best.tree, self.X, self.y, self.sample_weight, seed=self.request.seed,
                                              time_limit=budget)
            if improved is not None and improved is not best.tree:
                self.known_trees.append((improved, "heuristic's"))
                best = better_start(form, spec, best, improved, notes, source="heuristic")
        return best, notes

    def bounds(self, best: Incumbent, notes, build_time):
        """Stage 4: the root bound row and screening; ``(root bounds, outcome)``, the outcome when they prove the start.

        The root columns' bounds are for the decomposition (None when the stage is off). With
        the ``proof`` stage, a start that already meets the engine's bound (valid under the user
        rows: the engine honours the restrictions they imply) is proven here too, before any MIP.
        """
        stage, form = self.stage, self.form
        if stage is None or not {"rows", "screening", "decompose"} & stage.stages or (
                form.root_split_columns() is None):
            return None, None
        share = None
        if self.options.time_limit is not None:
            left = self.options.time_limit - (time.perf_counter() - self.fit_start)
            share = max(0.25 * left, 0.01 * self.options.time_limit)
        info, root_lower = root_bounds(form, self.spec, stage, self.data, best.tree, best.objective,
                                       time_limit=share, watch=self.watch)
        stage.bounds = info
        self.watch.known(bound=info["bound"] if stage.lower_bounds else None)
        engine_bound = (stage.engine or {}).get("bound") if "proof" in stage.stages and stage.lower_bounds else None
        by_engine = best.tree is not None and engine_bound is not None and (
            best.objective - engine_bound <= 1e-9 * max(1.0, abs(best.objective)))
        if info["proves_incumbent"] or by_engine:
            result = bounds_result(stage, best.objective, best.source, self.options, self.spec, notes, build_time,
                                   solver=self.request.solver,
                                   certificate="bounds" if info["proves_incumbent"] else "engine bound")
            return root_lower, self._outcome(best.tree, best.tree, result, notes)
        return root_lower, None

    def _stopped_before_solve(self, best: Incumbent, notes, build_time) -> FitOutcome | None:
        """Charge the time since the fit began (but the build) to the limit; the outcome with the start when
        Ctrl-C came before the solve, else None."""
        options = self.options
        if options.time_limit is not None:
            options.time_limit = max(self._time_left(build_time), 0.05 * options.time_limit)
        if self.watch.check() and best.tree is not None:
            result = stopped_result(self.form, self.stage, self.spec, best.objective, best.source, options,
                                    build_time, notes, solver=self.request.solver)
            return self._outcome(best.tree, best.tree, result, notes)
        return None

    def backend_solve(self, best: Incumbent, root_lower, build_time):
        """Stage 5: ``(result, x)`` from the backend (rows after solve included) or the decomposition."""
        stage, form, request = self.stage, self.form, self.request
        decomposes = stage is not None and "decompose" in stage.stages and not stage.sees_all and root_lower is not None
        leaf_rows = leaf_value_rows(form, self.spec) if decomposes else None
        result, found = None, None
        if leaf_rows is not None:
            with self.watch.stage("decomposition"):
                result, x, bound, objective = solve_by_leaf_rows(form, self.spec, stage, leaf_rows, root_lower[2],
                                                                 best, self.options, solver=request.solver,
                                                                 stop=self.watch.check)
            if result is None:  # finished without a proof: the MIP gets the rest of the time
                found = (x, bound, objective)
                self.options.time_limit = None if self.options.time_limit is None else max(
                    self.options.time_limit - stage.times["decompose"], 0.05 * self.options.time_limit)
        if result is None and decomposes and form.decomposes_at_root:
            with self.watch.stage("decomposition"):
                result, x = solve_by_decomposition(form, self.spec, stage, self.data, root_lower, best, self.options,
                                                   solver=request.solver, watch=self.watch)
        elif result is None:
            backend = make_backend(request.solver, self.spec)
            backend.set_start(best.vector, source=best.source, objective=best.objective)
            with self.watch.stage("MIP"):
                result, x = solve_adding_rows(backend, self.options, self.watch.solver_callback("MIP"),
                                              form.rows_after_solve)
        if found is not None:
            x = self._keep_better(result, x, *found, has_start=best.vector is not None)
        result.build_time += build_time
        if best.vector is None and best.source is not None:
            result.start_source, result.start_objective = best.source, best.objective
        return result, x

    def _keep_better(self, result, x, found, bound, objective, has_start):
        """After a leaf-row search without a proof: the MIP's solution ``x`` or the search's tree ``found``
        (a start vector, objective ``objective``), whichever is better in exact squared error among those
        whose tree meets the model (None: the start, when there is one, is the answer). The search's
        ``bound`` holds for every solution of the model: it joins the root bounds, which raise the
        result's bound after the solver's claim is checked (:func:`apply_engine_bounds`)."""
        self.stage.bounds["bound"] = max(self.stage.bounds["bound"], bound)
        tree = None if x is None else self.form.decode(self.spec, x)
        if tree is not None and tree_violation(self.form, self.spec, tree) is None and (
                found is None or self.form.objective_of_tree(tree) <= objective):
            return x
        if found is not None:
            result.objective, result.has_solution = objective, True
            return found
        return None if has_start else x

    def decode(self, result, x, best: Incumbent, notes):
        """Stage 6: the solution's tree, or the start when the solver found nothing better.

        Returns ``(tree, solver_objective)``, the tree None when there is none (the run then
        says why); ``result.objective`` becomes the tree's objective recomputed with numpy.
        """
        form = self.form
        tree = None if x is None else form.decode(self.spec, x)
        objective = None if tree is None else form.objective_of_tree(tree)
        if best.vector is not None and (
            tree is None or objective > best.objective + OBJECTIVE_TOL * max(1.0, abs(best.objective))
        ):
            found = "no solution better" if tree is None else f"nothing better (objective {objective:.10g})"
            notes.append(f"the solver found {found} than the start ({best.objective:.10g}); returning the start tree")
            tree, objective = best.tree, best.objective
            result.has_solution = True
        if tree is None:
            return None, None
        solver_objective = result.objective
        if solver_objective is not None and abs(objective - solver_objective) > OBJECTIVE_TOL * max(1.0, abs(objective)):
            notes.append(f"objective {solver_objective:.10g} reported by the solver; {objective:.10g} recomputed "
                         f"for tree_")
        result.objective = objective
        return tree, solver_objective

    def _no_tree_error(self, result) -> Exception:
        """The error that explains why the solve returned no tree (and no start was given)."""
        if result.termination == "interrupted":
            return KeyboardInterrupt("the fit was interrupted before any tree was found (no start: init=None)")
        if result.termination == "node_limit" and self.request.node_limit == 0:
            return ValueError("node_limit=0 explores no branch-and-bound node and the solver found no tree "
                             "before it: give a start (init='cart' or a tree) or a node_limit >= 1")
        if result.status == "infeasible":
            n_modelled = int(self.form.count.sum())
            min_leaf = self.problem.min_samples_leaf
            reason = (f"min_samples_leaf={min_leaf} exceeds the {n_modelled} positive-weight training samples"
                      if min_leaf > n_modelled else "the user constraints cannot be met")
            return ValueError(f"no tree satisfies the model (result_.status == 'infeasible'): {reason}")
        return RuntimeError(f"the solver returned no tree (status {result.status!r}); raise time_limit/node_limit "
                           f"or give a start (init). {result.message}")

    def certificate(self, result, tree, solver_objective, notes) -> None:
        """Stage 7: the bound raised to what is known, the optimality claim checked against ``tree``."""
        form, stage = self.form, self.stage
        solver_bound = result.bound
        if result.apply_lower_bound(form.objective_lower_bound):
            shown = "none" if solver_bound is None else f"{solver_bound:.10g}"
            notes.append(f"bound raised to the objective's lower bound {form.objective_lower_bound:g} "
                         f"(solver bound {shown})")
        note = verify_certificate(result, solver_objective, rel_gap=self.request.rel_gap,
                                  exact=form.objective_is_exact, granularity=form.objective_granularity())
        notes.extend(filter(None, [note]))
        violation = verify_tree_in_model(result, form, self.spec, tree) if self.side_rows else None
        if violation is not None:
            notes.append(f"not certified: the returned tree violates the model ({violation})")
        if stage is not None:
            apply_engine_bounds(result, stage, notes, in_model=violation is None)
            result.acceleration = stage.to_dict()
        objective = result.objective
        if self.request.engine_start_only and not result.proven_optimal and objective and (
                result.bound is None or result.bound <= form.objective_lower_bound + 1e-9 * max(1.0, abs(objective))):
            # hyperplanes, linear leaves: the engine's bounds do not hold, and these big-M models relax to 0
            notes.append(f"no bound beyond the LP relaxation: the bound is the trivial {form.objective_lower_bound:g} "
                         "(the model's LP relaxation gives no more), so the gap does not measure how far tree_ is "
                         "from optimal")

    def best_known(self, tree, result, notes):
        """Stage 8: a tree found outside the solve (the engine's, a heuristic's) when it beats ``tree``.

        Such a tree is a start the model could not take (e.g. OCT-H's margin between scaled
        values, which one outlier shrinks below the gap between every other pair of values of
        its feature). Without user rows it is still an answer to the fit's problem, so it is
        returned when its objective is lower; the model's bound covers only the trees the model
        encodes, so the claim is withdrawn and the bound falls to the objective's a-priori one.
        With user rows it cannot be checked against them and is never returned.
        """
        form, objective = self.form, result.objective
        known = [(form.objective_of_tree(t), whose, t) for t, whose in self.known_trees if t is not None]
        if self.side_rows or not known:
            return tree
        best_objective, whose, best = min(known, key=lambda k: k[0])
        if best_objective >= objective - OBJECTIVE_TOL * max(1.0, abs(objective)):
            return tree
        notes.append(f"returning the {whose} tree (objective {best_objective:.10g}, the solve's best "
                     f"{objective:.10g}): the model could not take it as a start; not certified, since the "
                     f"model's bound covers only the trees it encodes")
        result.objective, result.proven_optimal = best_objective, False
        result.bound = form.objective_lower_bound
        result.gap = relative_gap(best_objective, result.bound)
        if result.termination == "optimal":
            result.termination = "error"
        return best

    # ------------------------------------------------------------------ helpers
    def _time_left(self, build_time) -> float:
        """Seconds of ``time_limit`` left (negative once past it): everything since the fit began but the build."""
        return self.options.time_limit - (time.perf_counter() - self.fit_start - build_time)

    def _outcome(self, tree, init_tree, result, notes) -> FitOutcome:
        """The outcome with the result's last touches: notes, times, units, the interrupt's status."""
        notes = [*self.request.input_notes, *notes]
        name, scale = self.request.units
        if result.proven_optimal and not all(v is not None and np.isfinite(v) for v in (result.objective, result.bound)):
            # a proof is only as good as numbers that did not overflow (model units: of order one)
            result.proven_optimal = False
            if result.termination == "optimal":
                result.termination = "error"
            notes.append(f"not certified: objective {result.objective} or bound {result.bound} is not finite")
        watch = self.watch
        if watch.stop_requested and not result.proven_optimal:
            result.termination = "interrupted"
            where = ", ".join(watch.stopped_in) or "before the search"
            notes.append(f"interrupted (Ctrl-C) in: {where}; the tree is the best found so far and the bound the "
                         f"last proven one")
            if tree is not None:
                bound = "-" if result.bound is None else format(result.bound / scale, ".6g")
                watch.warn(f"returning the best tree found so far (status 'interrupted', {name} "
                           f"{result.objective / scale:.6g}, bound {bound}); result_.message says where it stopped")
        result.message = "; ".join(filter(None, [result.message, *notes]))
        result.fit_time = time.perf_counter() - self.fit_start
        return FitOutcome(tree, init_tree, result, self.spec)

    def _check_mip_features(self) -> None:
        """Refuse, before the build, features the MIP's min-max scaling cannot represent (OCT, OCT-H, ORT).

        Those formulations map each feature to ``(x - min) / (max - min)``: a span above the
        largest float64 (features near +-1.8e308) overflows, one below 2**-1000 (subnormal
        values) overflows its reciprocal. FlowOCT (thresholds as binary columns) and the exact
        engine (ranks) take any finite feature.
        """
        X, name = self.X, self.form.name
        if not self.form.scales_features or X.shape[0] == 0:
            return
        with np.errstate(over="ignore", invalid="ignore"):
            span = X.max(axis=0) - X.min(axis=0)
        bad = np.flatnonzero(~np.isfinite(span) | ((span > 0) & (span < 2.0 ** -1000)))
        if bad.size:
            j = int(bad[0])
            raise ValueError(
                f"feature(s) {bad.tolist()} span {span[j]:.3g} (feature {j}: {X[:, j].min():.4g} .. "
                f"{X[:, j].max():.4g}), which formulation={name!r} cannot scale to [0, 1] in float64: rescale X "
                f"(multiply those features by one constant, e.g. 1e-10 or 1e10; the tree's splits are the same), "
                f"or use formulation='flow'" + (" / the exact engine" if name != "oct-h" else ""))

    def _reissue_model_warnings(self) -> None:
        """Re-issue the formulation's warnings now that its MIP is built, features named as the user's columns."""
        names = self.request.feature_names

        def named(match):
            listed = [int(i) for i in match.group(1).split(",") if i.strip()]
            return "features " + ", ".join(repr(str(names[i])) if names is not None and i < len(names) else f"x{i}"
                                           for i in listed)

        for w in self.model_warnings:
            text = re.sub(r"features \[([\d, ]*)\]", named, str(w.message))
            warnings.warn(text, w.category, stacklevel=8)  # the caller of the estimator's fit
