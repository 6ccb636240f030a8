"""The method registry: every tree learner the harness can run, with its typed parameters.

A :class:`Method` knows its parameters (type, default, allowed values) so that a
config is validated before any run starts, and so that run ids are computed from
*complete* parameter sets (a parameter left at its default and the same value
written out give the same run id).

Adding a method::

    register(Method(
        name="oct-h", kind="mip", task="classification",
        description="OCT with hyperplane splits",
        params={**MIP_PARAMS, "mu": Param(float, 0.005, minimum=0.0)},
        factory=lambda p, depth, seed: OptimalTreeClassifier(formulation="oct-h", **_mip_kwargs(p, depth, seed)),
    ))

A config may also list ``plugins = ["my_module"]``: modules imported (in the main
process and in every worker) before the config is validated, so they can
``register`` methods without editing this file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

KINDS = ("greedy", "mip")
INPUTS = ("pandas", "numpy")  # what a method's fit/predict receive (see Method.input)
TASKS = ("classification", "regression")
START_CHOICES = ("cold", "cart")


@dataclass(frozen=True)
class Param:
    """One method parameter as it may appear in a config.

    ``type`` is ``int``, ``float``, ``bool`` or ``str``; an int is accepted where a
    float is expected (and stored as a float). ``default=None`` means "not set"
    (TOML has no null, so such a parameter is simply omitted from the config).
    """

    type: type
    default: Any
    choices: tuple | None = None
    minimum: float | None = None
    doc: str = ""
    minimum_inclusive: bool = True

    def coerce(self, value: Any) -> Any:
        """Return ``value`` converted to this parameter's type; raise ValueError/TypeError naming the problem."""
        if self.type is bool:
            if not isinstance(value, bool):
                raise TypeError(f"expected a boolean, got {type(value).__name__} {value!r}")
        elif self.type is int:
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"expected an integer, got {type(value).__name__} {value!r}")
        elif self.type is float:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"expected a number, got {type(value).__name__} {value!r}")
            value = float(value)
            if value != value or value in (float("inf"), float("-inf")):
                raise ValueError(f"expected a finite number, got {value!r}")
        elif self.type is str:
            if not isinstance(value, str):
                raise TypeError(f"expected a string, got {type(value).__name__} {value!r}")
        if self.choices is not None and value not in self.choices:
            raise ValueError(f"{value!r} is not one of {', '.join(map(repr, self.choices))}")
        if self.minimum is not None and (value < self.minimum or value == self.minimum and not self.minimum_inclusive):
            raise ValueError(f"must be {'>=' if self.minimum_inclusive else '>'} {self.minimum}, got {value!r}")
        return value


@dataclass(frozen=True)
class Method:
    """A registered learner.

    Parameters
    ----------
    name : str
        Registry key used in configs.
    kind : {"greedy", "mip"}
        MIP methods report a solver result (``estimator.result_``).
    task : {"classification", "regression"}
    description : str
    params : mapping of str to Param
        Everything a config may set for this method.
    factory : callable ``(params, depth, seed) -> estimator``
        Builds an unfitted scikit-learn style estimator; ``params`` is complete
        (defaults filled in) and already type-checked.
    tree_of : callable ``estimator -> greedy.Tree``, optional
        Extracts the fitted tree; default ``estimator.tree_``.
    input : {"pandas", "numpy"}, default "pandas"
        What ``fit`` and ``predict`` receive: a pandas DataFrame named by the dataset's
        features, categorical features as pandas categoricals, NaN where missing
        (``"pandas"``: greedy's and optitree's estimators); or a float64 array with the
        categories as 0-based codes and NaN kept (``"numpy"``: estimators without
        categorical input, e.g. scikit-learn's tree).
    """

    name: str
    kind: str
    task: str
    description: str
    params: Mapping[str, Param]
    factory: Callable[[dict, int, int], Any]
    tree_of: Callable[[Any], Any] = field(default=lambda est: est.tree_)
    input: str = "pandas"

    def __post_init__(self):
        if self.input not in INPUTS:
            raise ValueError(f"method {self.name!r}: input must be one of {INPUTS}, got {self.input!r}")
        if self.kind not in KINDS:
            raise ValueError(f"method {self.name!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if self.task not in TASKS:
            raise ValueError(f"method {self.name!r}: task must be one of {TASKS}, got {self.task!r}")

    def defaults(self) -> dict:
        """Default values of the parameters that have one (None defaults are left out)."""
        return {k: p.default for k, p in self.params.items() if p.default is not None}

    def make(self, params: Mapping, depth: int, seed: int):
        """An unfitted estimator for complete, validated ``params``."""
        return self.factory(dict(params), depth, seed)

    def check(self, params: Mapping) -> None:
        """Check complete ``params`` against the estimator's own ``_parameter_constraints``.

        Raises the estimator's ValueError/TypeError, so a config that validates
        does not fail every run on a parameter the estimator rejects.
        """
        estimator = self.make(params, 1, 0)
        validate = getattr(estimator, "_validate_params", None)
        if validate is not None:
            validate()


METHODS: dict[str, Method] = {}


def register(method: Method, *, replace: bool = False) -> Method:
    """Add ``method`` to the registry (``replace=True`` to redefine an existing name)."""
    if method.name in METHODS and not replace:
        raise ValueError(f"a method named {method.name!r} is already registered")
    METHODS[method.name] = method
    return method


def get(name: str) -> Method:
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r} (known: {', '.join(sorted(METHODS))})") from None


# ---------------------------------------------------------------------------- built-in methods
GREEDY_PARAMS = {
    "criterion": Param(str, "gini", choices=("gini", "entropy", "misclassification"), doc="impurity criterion"),
    "min_samples_leaf": Param(int, 1, minimum=1),
    "min_samples_split": Param(int, 2, minimum=2),
    "ccp_alpha": Param(float, 0.0, minimum=0.0, doc="cost-complexity pruning"),
}

# Parameters shared by every MIP estimator; each formulation adds its own below (the estimators
# refuse e.g. max_thresholds for OCT and feature_scaling for FlowOCT at fit time).
MIP_PARAMS = {
    "start": Param(str, "cart", choices=START_CHOICES, doc="'cold' (no MIP start) or 'cart' (greedy CART start)"),
    "alpha": Param(float, 0.0, minimum=0.0, doc="complexity penalty per split"),
    "min_samples_leaf": Param(int, 1, minimum=1),
    "time_limit": Param(float, 60.0, minimum=0.0, minimum_inclusive=False, doc="solver time limit, seconds"),
    "node_limit": Param(int, None, minimum=0, doc="branch-and-bound node limit"),
    "rel_gap": Param(float, 0.0, minimum=0.0, doc="relative MIP gap at which to stop"),
    "threads": Param(int, 1, minimum=1, doc="solver threads (forced to 1 under a parallel backend)"),
    "solver": Param(str, "highs", doc="'highs' or 'pyomo:<solver>'"),
}


MAX_THRESHOLDS = {
    "max_thresholds": Param(int, None, minimum=1, doc="candidate thresholds per feature (default: all)")
}
ACCELERATION = {
    "acceleration": Param(str, None, choices=("none", "start", "start+rows", "start+rows+screening", "start+proof",
                                              "start+proof+rows+screening", "all"),
                          doc="exact-engine stages in the fit (default: all)"),
}
DISTINCT_FEATURES = {
    "max_distinct_features": Param(int, None, minimum=1,
                                   doc="at most this many distinct split features (default: no limit)")
}
MAX_BINS = {
    "max_bins": Param(int, None, minimum=2,
                      doc="thresholds at the edges of this many quantile bins per feature; the proof holds over them "
                          "(default: every midpoint)")
}
FEATURE_SCALING = {
    "feature_scaling": Param(str, None, choices=("minmax", "rank"), doc="'rank' for skewed features (default: minmax)")
}


def _cart_classifier(params: dict, depth: int, seed: int):
    from greedy import CARTClassifier

    return CARTClassifier(max_depth=depth, random_state=seed, **params)


def _cart_regressor(params: dict, depth: int, seed: int):
    from greedy import CARTRegressor

    return CARTRegressor(max_depth=depth, random_state=seed, **params)


def _sklearn_classifier(params: dict, depth: int, seed: int):
    from sklearn.tree import DecisionTreeClassifier

    return DecisionTreeClassifier(max_depth=depth, random_state=seed, **params)


def _sklearn_tree(estimator):
    from greedy import Tree

    return Tree.from_sklearn(estimator)


def _mip_kwargs(params: dict, depth: int, seed: int) -> dict:
    """OptimalTreeClassifier keyword arguments from harness parameters (``start`` -> ``init``)."""
    kwargs = dict(params)
    start = kwargs.pop("start")
    return {**kwargs, "max_depth": depth, "random_state": seed, "init": None if start == "cold" else start}


def _optimal_classifier(formulation: str) -> Callable[[dict, int, int], Any]:
    def factory(params: dict, depth: int, seed: int):
        from optitree import OptimalTreeClassifier

        return OptimalTreeClassifier(formulation=formulation, **_mip_kwargs(params, depth, seed))

    return factory


register(
    Method(
        "cart", "greedy", "classification", "greedy CART (greedy.CARTClassifier)",
        {**GREEDY_PARAMS, "splitter": Param(str, None, choices=("best", "hist"),
                                            doc="'hist': binned split search (default: best)")},
        _cart_classifier,
    )
)
register(
    Method(
        "cart-regressor", "greedy", "regression", "greedy CART regression tree (greedy.CARTRegressor)",
        {
            **GREEDY_PARAMS,
            "criterion": Param(str, "squared_error",
                               choices=("absolute_error", "correlation", "linear_squared_error", "squared_error")),
            "leaf_model": Param(str, "constant", choices=("constant", "linear"), doc="leaf model"),
        },
        _cart_regressor,
    )
)
register(
    Method(
        "sklearn-cart",
        "greedy",
        "classification",
        "scikit-learn DecisionTreeClassifier",
        {**GREEDY_PARAMS, "criterion": Param(str, "gini", choices=("gini", "entropy", "log_loss"))},
        _sklearn_classifier,
        tree_of=_sklearn_tree,
        input="numpy",  # scikit-learn's tree takes no categoricals: their codes (NaN kept, sklearn >= 1.3)
    )
)
register(
    Method(
        "oct", "mip", "classification", "OCT big-M MIP (Bertsimas & Dunn 2017)",
        {**MIP_PARAMS, **FEATURE_SCALING, **ACCELERATION, **DISTINCT_FEATURES},
        _optimal_classifier("oct"),
    )
)
register(
    Method(
        "flow", "mip", "classification", "FlowOCT MIP (Aghaei et al. 2025)",
        {**MIP_PARAMS, **MAX_THRESHOLDS, **ACCELERATION, **DISTINCT_FEATURES},
        _optimal_classifier("flow"),
    )
)



def _exact_classifier(params: dict, depth: int, seed: int):
    from optitree import OptimalTreeClassifier

    return OptimalTreeClassifier(solver="dp", max_depth=depth, random_state=seed, init=None, **params)


register(
    Method(
        "dp", "mip", "classification", "exact engine: dynamic programming + branch-and-bound (optitree.exact)",
        {**{k: MIP_PARAMS[k] for k in ("alpha", "min_samples_leaf", "time_limit")}, **DISTINCT_FEATURES, **MAX_BINS},
        _exact_classifier,
    )
)

# ---------------------------------------------------------------------------- OCT-H and optimal regression trees
_REGRESSION_PARAMS = {
    **MIP_PARAMS,
    **FEATURE_SCALING,
    "alpha": Param(float, 0.0, minimum=0.0, doc="complexity penalty per split (fraction of the baseline loss)"),
    "loss": Param(str, "squared", choices=("absolute", "squared"),
                  doc="the exact engine settles both; a MIP takes 'squared' as a tangent outer approximation"),
}
_LINEAR_LEAF_PARAMS = {
    **_REGRESSION_PARAMS,
    "coef_budget": Param(float, None, minimum=0.0, minimum_inclusive=False,
                         doc="L1 budget per leaf, target ranges (default: the estimator's 'auto', which holds "
                             "greedy linear-leaf CART's leaves)"),
    "leaf_alpha": Param(float, 0.0, minimum=0.0, doc="L1 penalty on the leaf coefficients"),
}


def _optimal_regressor(leaf_model: str) -> Callable[[dict, int, int], Any]:
    def factory(params: dict, depth: int, seed: int):
        from optitree import OptimalTreeRegressor

        return OptimalTreeRegressor(leaf_model=leaf_model, **_mip_kwargs(params, depth, seed))

    return factory


register(
    Method(
        "oct-h", "mip", "classification", "OCT-H: hyperplane splits (Bertsimas & Dunn 2017); alpha per feature used",
        MIP_PARAMS, _optimal_classifier("oct-h"),
    )
)
register(Method("ort", "mip", "regression", "ORT: optimal regression tree, constant leaves", _REGRESSION_PARAMS,
                _optimal_regressor("constant")))
register(Method("ort-l", "mip", "regression", "ORT-L: optimal regression tree, linear leaves (L1 budget)",
                _LINEAR_LEAF_PARAMS, _optimal_regressor("linear")))

# ---------------------------------------------------------------------------- Rashomon sets
class RashomonEstimator:
    """The harness's view of a :class:`optitree.RashomonSet`: the set's best tree as the fitted tree,
    the set itself in ``result_`` (written to the record's ``solver.rashomon``).

    ``result_.to_dict()["rashomon"]`` holds the set size at ``epsilon`` (an exact integer), the optimum
    and the set's bound, whether greedy CART's tree of the same depth (its default criterion, fitted on
    the same data) is in the set, each feature's usage share, and the set size at ``curve_points``
    values of epsilon from 0 to ``epsilon`` (counted in the one set: a set at a smaller epsilon is a
    prefix of it in objective order).
    """

    #: None of its own: :meth:`_validate_params` checks the parameters with the RashomonSet's constraints
    _parameter_constraints: dict = {}

    def __init__(self, task: str, max_depth: int, epsilon: float, alpha: float, min_samples_leaf: int,
                 time_limit: float, curve_points: int, random_state: int, loss: str = "misclassification"):
        self.task, self.max_depth, self.epsilon, self.alpha = task, max_depth, epsilon, alpha
        self.min_samples_leaf, self.time_limit, self.curve_points = min_samples_leaf, time_limit, curve_points
        self.random_state, self.loss = random_state, loss

    def get_params(self, deep: bool = True) -> dict:
        names = ("task", "max_depth", "epsilon", "alpha", "min_samples_leaf", "time_limit", "curve_points",
                 "random_state", "loss")
        return {name: getattr(self, name) for name in names}

    def _set(self):
        from optitree import RashomonSet

        return RashomonSet(max_depth=self.max_depth, epsilon=self.epsilon, alpha=self.alpha, loss=self.loss,
                           min_samples_leaf=self.min_samples_leaf, time_limit=self.time_limit,
                           random_state=self.random_state)

    def _validate_params(self):
        self._set()._check_params()

    def fit(self, X, y):
        import numpy as np

        from greedy import CARTClassifier, CARTRegressor

        rs = self._set().fit(X, y)
        self.set_ = rs
        self.best_ = rs[0]
        self.tree_ = self.best_.tree_
        if self.task == "classification":
            self.classes_ = rs.classes_
        cart = (CARTClassifier if self.task == "classification" else CARTRegressor)(
            max_depth=self.max_depth, random_state=self.random_state).fit(X, y)
        names = getattr(rs, "feature_names_in_", None)
        names = [str(n) for n in names] if names is not None else [f"x{j}" for j in range(rs.n_features_in_)]
        counts = np.asarray(rs.objective_counts_, dtype=object)
        curve = []
        for eps in np.linspace(0.0, float(self.epsilon), int(self.curve_points)):
            bound = rs.optimum_ * (1 + eps + 1e-9)
            curve.append([float(eps), int(counts[rs.objectives_ <= bound].sum())])
        self.result_ = _RashomonResult({
            "epsilon": float(self.epsilon), "alpha": float(self.alpha), "size": len(rs), "optimum": rs.optimum_,
            "threshold": rs.threshold_, "complete": bool(rs.complete_), "cart_in_set": bool(rs.contains(cart)),
            "feature_usage": dict(zip(names, rs.feature_usage_.tolist())), "size_vs_epsilon": curve,
            "n_objectives": int(rs.objectives_.size), "n_subproblems": rs.n_subproblems_,
            "n_options": rs.n_options_, "fit_time": rs.fit_time_})
        return self

    def predict(self, X):
        return self.best_.predict(X)


class _RashomonResult:
    """What the protocols read of a fit's ``result_``: ``to_dict``, ``acceleration`` and ``proven_optimal``."""

    def __init__(self, rashomon: dict):
        self.rashomon = rashomon
        self.proven_optimal = rashomon["complete"]
        # the optimum (the set's first tree) is the exact engine's: settled by it when the build finished
        self.acceleration = {"certificate": "engine" if self.proven_optimal else "unproven"}

    def to_dict(self) -> dict:
        return {"status": "optimal" if self.proven_optimal else "time_limit", "proven_optimal": self.proven_optimal,
                "objective": self.rashomon["optimum"], "bound": None, "gap": None,
                "acceleration": self.acceleration, "rashomon": self.rashomon}


RASHOMON_PARAMS = {
    "epsilon": Param(float, 0.05, minimum=0.0, doc="the set: objective <= (1 + epsilon) x optimum"),
    "alpha": Param(float, 0.01, minimum=0.0, minimum_inclusive=False, doc="objective cost per leaf"),
    "min_samples_leaf": Param(int, 1, minimum=1),
    "time_limit": Param(float, 60.0, minimum=0.0, minimum_inclusive=False,
                        doc="seconds; a stopped build counts a lower bound"),
    "curve_points": Param(int, 6, minimum=2, doc="epsilons from 0 to epsilon at which the set size is counted"),
}


def _rashomon(task: str) -> Callable[[dict, int, int], Any]:
    def factory(params: dict, depth: int, seed: int):
        return RashomonEstimator(task, depth, random_state=seed, **params)

    return factory


register(Method("rashomon", "mip", "classification",
                "Rashomon set (optitree.RashomonSet): every tree within (1 + epsilon) of the optimum; "
                "its best tree is the fitted one", RASHOMON_PARAMS, _rashomon("classification")))
register(Method("rashomon-regressor", "mip", "regression",
                "Rashomon set of regression trees (optitree.RashomonSet, SSE / SST or SAE / SAT)",
                {**RASHOMON_PARAMS, "loss": Param(str, "squared", choices=("absolute", "squared"))},
                _rashomon("regression")))
