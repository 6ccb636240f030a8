"""``benchmarks.certified --task regression``: its rows and checks, with stand-in estimators (fast).

The stand-ins make the outcome known without solving anything: a tree claimed proven that
is worse than STreeD's optimum must be flagged, a fit below a proven optimum must be
flagged, a failing fit gives a row that says so. The losses in the row are checked against
an independent brute force (depth 1: every midpoint of every feature).
"""

from __future__ import annotations

import numpy as np
import pytest

import optitree
from benchmarks import certified as bc

pytest.importorskip("pystreed")


def _best_stump_sse(X, y, min_leaf=1):
    best = float(((y - y.mean()) ** 2).sum())
    for j in range(X.shape[1]):
        v = np.unique(X[:, j])
        for t in (v[:-1] + v[1:]) / 2:
            left = X[:, j] <= t
            a, b = y[left], y[~left]
            if min(a.size, b.size) < min_leaf:
                continue
            best = min(best, float(((a - a.mean()) ** 2).sum() + ((b - b.mean()) ** 2).sum()))
    return best


class _Result:
    def __init__(self, proven):
        self.proven_optimal, self.gap, self.objective, self.bound = proven, 0.0 if proven else None, 0.0, 0.0
        self.acceleration = {"certificate": "engine"} if proven else {}


class _ConstantClaimsProof:
    """Predicts the mean and claims a proof: a false proof whenever a split helps."""

    seen = []  # the keyword arguments of every construction

    def __init__(self, max_depth, loss, time_limit, **kwargs):
        self.loss = loss
        self.seen.append(kwargs)

    def fit(self, X, y):
        self.value_ = float(np.mean(y)) if self.loss == "squared" else float(np.median(y))
        self.result_ = _Result(True)
        return self

    def predict(self, X):
        return np.full(len(X), self.value_)


class _Memorises(_ConstantClaimsProof):
    """Returns the training targets themselves: below any depth-1 optimum on noisy data."""

    def fit(self, X, y):
        self.y_, self.result_ = np.asarray(y, float), _Result(False)
        return self

    def predict(self, X):
        return self.y_


class _Fails(_ConstantClaimsProof):
    def fit(self, X, y):
        raise RuntimeError("no feasible tree")


@pytest.fixture
def tiny(monkeypatch):
    monkeypatch.setitem(bc.REGRESSION_SETS, "tiny", ("friedman3", {"n": 60, "seed": 0}, None, None))
    X, y = bc.load_regression("tiny")
    return X, y


def test_load_regression_subsamples_and_rounds(monkeypatch):
    monkeypatch.setitem(bc.REGRESSION_SETS, "sub", ("concrete", {}, 300, None))
    monkeypatch.setitem(bc.REGRESSION_SETS, "rounded", ("xor_regression", {"n": 250}, None, 2))
    X, y = bc.load_regression("sub")
    assert X.shape == (300, 8) and np.array_equal(X, bc.load_regression("sub")[0])
    full_X, full_y = bc.load_regression("concrete")
    rows = {tuple(r) + (v,) for r, v in zip(full_X, full_y)}
    assert all(tuple(r) + (v,) in rows for r, v in zip(X, y))  # a subsample of the real rows
    Xr, _ = bc.load_regression("rounded")
    assert np.array_equal(Xr, np.round(Xr, 2)) and Xr.shape == (250, 6)
    assert len(bc.REGRESSION_SETS) >= 10
    for name in bc.REGRESSION_SETS:  # the benchmark's sizes: 200-5 000 rows
        dataset, params, rows_, _ = bc.REGRESSION_SETS[name]
        from optitree import datasets

        n = rows_ or datasets.load(dataset, **params)[0].shape[0]
        assert 200 <= n <= 5000, name


def test_false_proof_is_flagged_and_losses_are_right(tiny, monkeypatch):
    X, y = tiny
    monkeypatch.setattr(optitree, "OptimalTreeRegressor", _ConstantClaimsProof)
    row = bc.run_regression("tiny", 1, 1.0, "squared", reference_limit=30)
    sst = float(((y - y.mean()) ** 2).sum())
    optimum = _best_stump_sse(X, y) / sst
    assert row["STreeD"] == f"{optimum:.4f}"  # STreeD on every midpoint = brute force
    assert row["CART"] == f"{optimum:.4f}"  # at depth 1 greedy CART is optimal too
    assert row["SSE/SST"] == "1.0000" and row["proven"] == "yes" and row["by"] == "engine"
    assert row["check"] == "FALSE PROOF" and row["_bug"]


def test_below_peer_and_failure_rows(tiny, monkeypatch):
    monkeypatch.setattr(optitree, "OptimalTreeRegressor", _Memorises)
    row = bc.run_regression("tiny", 1, 1.0, "squared", reference_limit=30)
    assert row["check"] == "BELOW PEER" and row["proven"] == "no" and row["SSE/SST"] == "0.0000"
    monkeypatch.setattr(optitree, "OptimalTreeRegressor", _Fails)
    row = bc.run_regression("tiny", 1, 1.0, "squared", reference_limit=30)
    assert row["proven"] == "no" and "no feasible tree" in row["by"] and row["SSE/SST"] == "-"


def test_absolute_loss_has_no_streed_column(tiny, monkeypatch):
    X, y = tiny
    monkeypatch.setattr(optitree, "OptimalTreeRegressor", _ConstantClaimsProof)
    row = bc.run_regression("tiny", 1, 1.0, "absolute", reference_limit=30)
    assert row["STreeD"] == "-" and row["ratio"] == "-" and row["check"] == ""
    assert row["SAE/SAD"] == "1.0000"  # the median predictor is the constant model for absolute error


def test_main_regression_summary(tiny, monkeypatch, capsys):
    monkeypatch.setattr(optitree, "OptimalTreeRegressor", _ConstantClaimsProof)
    bc.main(["--task", "regression", "--sets", "tiny", "--depths", "1", "--time-limit", "1",
             "--reference-limit", "30"])
    out = capsys.readouterr().out
    assert "| tiny | 60×4 | 1 | yes | engine |" in out
    assert "depth 1 (squared): 1/1 proven" in out and "1 CHECK FAILURES" in out
    with pytest.raises(SystemExit):
        bc.main(["--task", "regression", "--constraint", "class_quota"])
    with pytest.raises(SystemExit, match="unknown regression sets"):
        bc.main(["--task", "regression", "--sets", "iris"])


def test_streed_unfinished_or_not_run(tiny, monkeypatch):
    """STreeD's tree after its time limit is an upper bound: a proof above it is false; too large: no run."""
    import benchmarks._peers as peers

    X, y = tiny
    sst = float(((y - y.mean()) ** 2).sum())
    monkeypatch.setattr(optitree, "OptimalTreeRegressor", _ConstantClaimsProof)
    monkeypatch.setattr(peers, "run_streed", lambda X, y, depth, time_limit, **kw: {
        "status": "time limit", "sse": 0.5 * sst, "seconds": 7.0, "n_binary": 9})
    row = bc.run_regression("tiny", 2, 1.0, "squared", reference_limit=7)
    assert row["STreeD"].startswith("<=0.5000 (STreeD stopped") and row["ratio"].startswith("<=")
    assert row["check"] == "FALSE PROOF" and row["_ratio"] is None and row["_peer_unfinished"]
    monkeypatch.setattr(optitree, "OptimalTreeRegressor", _Memorises)  # unproven, below STreeD's best: fine
    assert bc.run_regression("tiny", 2, 1.0, "squared", reference_limit=7)["check"] == "-0.5000 vs STreeD's best"
    monkeypatch.setattr(peers, "run_streed", lambda X, y, depth, time_limit, **kw: {
        "status": "too many binary features", "sse": None, "seconds": None, "n_binary": 123456})
    row = bc.run_regression("tiny", 2, 1.0, "squared", reference_limit=7)
    assert "not run: 123456 binary features" in row["STreeD"] and row["ratio"] == "-" and row["check"] == ""


def test_run_streed_refuses_an_encoding_over_the_limits():
    from benchmarks._peers import run_streed

    X = np.random.RandomState(0).rand(50, 3)
    out = run_streed(X, X[:, 0], 2, max_binary_features=100)
    assert out == {"status": "too many binary features", "sse": None, "seconds": None, "n_binary": 147}
    assert run_streed(X, X[:, 0], 2, max_cells=50 * 146)["status"] == "too many binary features"


def test_constraints_reach_the_fit_and_the_peer(tiny, monkeypatch):
    X, y = tiny
    sst = float(((y - y.mean()) ** 2).sum())
    monkeypatch.setattr(optitree, "OptimalTreeRegressor", _ConstantClaimsProof)
    _ConstantClaimsProof.seen.clear()
    row = bc.run_regression("tiny", 1, 1.0, "squared", reference_limit=30, constraint="min_leaf")
    assert _ConstantClaimsProof.seen[-1] == {"min_samples_leaf": 5}
    assert row["STreeD"] == f"{_best_stump_sse(X, y, min_leaf=5) / sst:.4f}"  # STreeD's min_leaf_node_size
    from greedy import CARTRegressor

    root = int(CARTRegressor(max_depth=1, criterion="squared_error").fit(X, y).tree_.feature[0])
    row = bc.run_regression("tiny", 1, 1.0, "squared", reference_limit=30, constraint="forbid")
    allowed = _ConstantClaimsProof.seen[-1]["allowed_features"]
    assert allowed.tolist() == [j != root for j in range(X.shape[1])] and row["dataset"] == f"tiny (no x{root})"
    assert row["STreeD"] == f"{_best_stump_sse(np.delete(X, root, axis=1), y) / sst:.4f}"
    bc.run_regression("tiny", 2, 1.0, "squared", reference_limit=30, constraint="forbid_pyomo")
    constraint = _ConstantClaimsProof.seen[-1]["constraints"]
    import pyomo.environ as pyo

    m = pyo.ConcreteModel()
    m.a = pyo.Var(range(3), range(X.shape[1]), domain=pyo.Binary)
    constraint(m)
    body = str(m.forbidden.body)
    assert all(f"a[{n},{root}]" in body for n in range(3)) and m.forbidden.upper == 0
