"""ModelSpec: storage, HiGHS/Pyomo/file compilers, size guard."""

import itertools

import numpy as np
import pytest

from optitree.model._memory import ModelTooLargeError, check_size, estimate_bytes
from optitree.model import ModelSpec


def random_spec(seed=0, n_rows=(7, 5), with_duplicates=True):
    """Spec with a 2-d binary block, a 1-d integer block, a scalar continuous and
    random row blocks; returns (spec, dense A, triplets) with A built independently."""
    rng = np.random.default_rng(seed)
    spec = ModelSpec("random")
    spec.add_vars("a", (3, 4), ub=1, integer=True, obj=rng.normal(size=(3, 4)))
    spec.add_vars("k", 5, lb=-2, ub=rng.integers(3, 6, 5), integer=True, obj=rng.normal(size=5))
    spec.add_vars("s", (), lb=-np.inf, ub=10.0, obj=0.5)
    dense = np.zeros((sum(n_rows), spec.n_cols))
    offset = 0
    for b, m in enumerate(n_rows):
        nnz = 4 * m
        rows = rng.integers(0, m, nnz)
        cols = rng.integers(0, spec.n_cols, nnz)
        vals = rng.integers(-3, 4, nnz).astype(float)
        if with_duplicates:
            rows = np.concatenate([rows, rows[:5]])
            cols = np.concatenate([cols, cols[:5]])
            vals = np.concatenate([vals, rng.normal(size=5)])
        lb = np.where(rng.random(m) < 0.3, -np.inf, -rng.random(m) * 3)
        ub = np.where(rng.random(m) < 0.3, np.inf, rng.random(m) * 3)
        ub[(lb == -np.inf) & (ub == np.inf)] = 1.0
        spec.add_rows(f"r{b}", m, rows, cols, vals, lb, ub)
        np.add.at(dense, (offset + rows, cols), vals)
        offset += m
    return spec, dense


def highs_dense(h):
    lp = h.getLp()
    start = np.asarray(lp.a_matrix_.start_)
    index = np.asarray(lp.a_matrix_.index_)
    value = np.asarray(lp.a_matrix_.value_)
    dense = np.zeros((h.getNumRow(), h.getNumCol()))
    cols = np.repeat(np.arange(h.getNumCol()), np.diff(start))
    dense[index, cols] = value
    return dense


def pyomo_size(model):
    """(rows, columns, non-zeros) of a Pyomo model through Pyomo's standard-form compiler
    (mixed form: a ranged constraint comes out as two consecutive rows, counted once)."""
    from pyomo.repn.plugins.standard_form import LinearStandardFormCompiler

    info = LinearStandardFormCompiler().write(model, mixed_form=True)
    first = np.ones(len(info.rows), bool)
    first[1:] = [a.constraint is not b.constraint for a, b in zip(info.rows[1:], info.rows[:-1])]
    return int(first.sum()), len(info.columns), int(info.A.tocsr()[first].nnz)


def brute_force_knapsack():
    """max 6a+5b+4c+3d+2e + 3y  s.t. 3a+4b+2c+3d+e + 2y <= 9, a+b+c <= 2, y in {0..3}
    (as a minimisation with offset 10); returns spec and the brute-force optimum."""
    value = np.array([6, 5, 4, 3, 2])
    weight = np.array([3, 4, 2, 3, 1])
    spec = ModelSpec("knap")
    x = spec.add_vars("x", 5, ub=1, integer=True, obj=-value)
    y = spec.add_vars("y", (), ub=3, integer=True, obj=-3.0)
    spec.add_rows("weight", 1, np.zeros(6, int), np.r_[x, y.ravel()], np.r_[weight, 2], -np.inf, 9)
    spec.add_rows("first3", 1, np.zeros(3, int), x[:3], np.ones(3), -np.inf, 2)
    spec.objective_offset = 10.0
    best = min(
        10 - value @ xs - 3 * ys
        for xs in itertools.product([0, 1], repeat=5)
        for ys in range(4)
        if weight @ xs + 2 * ys <= 9 and sum(xs[:3]) <= 2
    )
    return spec, best


def test_add_vars_returns_global_indices_and_block_values():
    spec = ModelSpec()
    a = spec.add_vars("a", (2, 3))
    b = spec.add_vars("b", 4, integer=True)
    c = spec.add_vars("c", ())
    np.testing.assert_array_equal(a, [[0, 1, 2], [3, 4, 5]])
    np.testing.assert_array_equal(b, [6, 7, 8, 9])
    assert c.shape == () and int(c) == 10
    assert (spec.n_cols, spec.n_integer) == (11, 4)
    x = np.arange(11.0) * 10
    np.testing.assert_array_equal(spec.block_values(x, "a"), [[0, 10, 20], [30, 40, 50]])
    assert spec.block_values(x, "c") == 100
    np.testing.assert_array_equal(spec.var_blocks["b"].indices, b)


def test_matrix_duplicates_summed_and_zeros_dropped():
    spec = ModelSpec()
    x = spec.add_vars("x", 3)
    # (0, x0) appears twice (1 + 2 = 3); (1, x1) cancels out (4 - 4 = 0) and is dropped.
    spec.add_rows("r", 2, rows=[0, 0, 1, 1, 1], cols=[x[0], x[0], x[1], x[1], x[2]],
                  vals=[1.0, 2.0, 4.0, -4.0, 5.0], lb=0, ub=1)
    assert spec.nnz == 2
    h = spec.to_highs()
    assert h.getNumNz() == 2
    np.testing.assert_array_equal(highs_dense(h), [[3, 0, 0], [0, 0, 5]])


@pytest.mark.parametrize("seed", [0, 1])
def test_to_highs_matches_independent_dense_matrix_and_bounds(seed):
    spec, dense = random_spec(seed)
    h = spec.to_highs()
    assert (h.getNumRow(), h.getNumCol(), h.getNumNz()) == (spec.n_rows, spec.n_cols, spec.nnz)
    np.testing.assert_allclose(highs_dense(h), dense)
    assert spec.nnz == np.count_nonzero(dense)
    lp = h.getLp()
    cost, lb, ub, integrality = spec.column_arrays()
    np.testing.assert_array_equal(lp.col_cost_, cost)
    np.testing.assert_array_equal(lp.col_lower_, lb)
    np.testing.assert_array_equal(lp.col_upper_, ub)
    assert [int(t) for t in lp.integrality_] == [1] * 17 + [0]
    row_lb, row_ub = spec.row_bounds()
    np.testing.assert_array_equal(lp.row_lower_, row_lb)
    np.testing.assert_array_equal(lp.row_upper_, row_ub)


def test_to_pyomo_names_indices_bounds_and_rows():
    import pyomo.environ as pyo

    spec, dense = random_spec(2)
    m = spec.to_pyomo()
    assert m.a[2, 3].domain is pyo.Binary and m.k[0].domain is pyo.Integers
    assert m.s.domain is pyo.Reals and m.s.lb is None and m.s.ub == 10.0
    cost, lb, ub, _ = spec.column_arrays()
    # the variable at block index (i, j) is the column add_vars returned for (i, j)
    x = np.random.default_rng(0).normal(size=spec.n_cols)
    names = [("a", idx) for idx in itertools.product(range(3), range(4))]
    names += [("k", i) for i in range(5)] + [("s", None)]
    for j, (block, idx) in enumerate(names):
        var = getattr(m, block) if idx is None else getattr(m, block)[idx]
        var.set_value(x[j], skip_validation=True)
        assert (var.lb, var.ub) == (None if lb[j] == -np.inf else lb[j], None if ub[j] == np.inf else ub[j])
    bodies = [pyo.value(c.body) for name in ("r0", "r1") for c in getattr(m, name).values()]
    np.testing.assert_allclose(bodies, dense @ x)
    np.testing.assert_allclose(pyo.value(m.objective), cost @ x)

    # same size through Pyomo's standard-form compiler (rows without coefficients are
    # Constraint.Feasible in Pyomo; columns in no row and without cost are left out)
    rows, cols, nnz = pyomo_size(m)
    assert (rows, nnz) == (np.count_nonzero(dense.any(axis=1)), spec.nnz)
    assert cols == np.count_nonzero(dense.any(axis=0) | (cost != 0))
    assert len(list(m.component_data_objects(pyo.Var))) == spec.n_cols


def test_highs_and_pyomo_emissions_have_the_same_size():
    spec, _ = brute_force_knapsack()
    h = spec.to_highs()
    assert (h.getNumRow(), h.getNumCol(), h.getNumNz()) == (2, 6, 9)
    assert pyomo_size(spec.to_pyomo()) == (h.getNumRow(), h.getNumCol(), h.getNumNz())


def test_knapsack_optimum_matches_brute_force_via_highs():
    spec, best = brute_force_knapsack()
    h = spec.to_highs()
    h.setOptionValue("mip_rel_gap", 0.0)
    h.run()
    assert h.getInfo().objective_function_value == pytest.approx(best)


@pytest.mark.parametrize("suffix", [".lp", ".mps"])
def test_write_reads_back_with_same_size_and_optimum(tmp_path, suffix):
    import highspy

    spec, best = brute_force_knapsack()
    spec.add_vars("free", 2, lb=-1, ub=1)  # continuous, in no row (HiGHS's MPS writer bug)
    path = tmp_path / f"model{suffix}"
    spec.write(path)
    h = highspy.Highs()
    h.silent()
    assert h.readModel(str(path)) == highspy.HighsStatus.kOk
    assert (h.getNumRow(), h.getNumCol(), h.getNumNz()) == (spec.n_rows, spec.n_cols, spec.nnz)
    integer = {n for n, t in zip(h.allVariableNames(), h.getLp().integrality_) if int(t) == 1}
    assert integer == {f"x({i})" for i in range(5)} | {"y"}
    h.setOptionValue("mip_rel_gap", 0.0)
    h.run()
    assert h.getInfo().objective_function_value == pytest.approx(best)


def test_write_mps_round_trip_is_exact(tmp_path):
    import highspy

    spec, dense = random_spec(3)  # ranged, one-sided and equality rows; free and scalar columns
    spec.objective_offset = -1.25
    spec.write(tmp_path / "model.mps")
    h = highspy.Highs()
    h.silent()
    assert h.readModel(str(tmp_path / "model.mps")) == highspy.HighsStatus.kOk
    assert h.allVariableNames() == spec.column_names()
    lp = h.getLp()
    cost, lb, ub, integrality = spec.column_arrays()
    row_lb, row_ub = spec.row_bounds()
    np.testing.assert_array_equal(lp.col_cost_, cost)
    np.testing.assert_array_equal(lp.col_lower_, lb)
    np.testing.assert_array_equal(lp.col_upper_, ub)
    np.testing.assert_array_equal([int(t) for t in lp.integrality_], integrality)
    np.testing.assert_array_equal(lp.row_lower_, row_lb)
    np.testing.assert_allclose(lp.row_upper_, row_ub, rtol=1e-15)  # rhs + range, rounded
    np.testing.assert_array_equal(highs_dense(h), dense)
    assert lp.offset_ == -1.25


def test_write_rejects_unknown_suffix(tmp_path):
    spec, _ = brute_force_knapsack()
    with pytest.raises(ValueError, match=".lp and .mps"):
        spec.write(tmp_path / "model.txt")


def test_check_size_refuses_over_budget_with_actionable_message():
    need = estimate_bytes(480_000, 170_000, 6_000_000)
    check_size(480_000, 170_000, 6_000_000, budget_bytes=need)  # exactly at budget: fine
    with pytest.raises(ModelTooLargeError) as err:
        check_size(480_000, 170_000, 6_000_000, budget_bytes=need - 1,
                   hint="use max_thresholds, fewer samples or a lower depth")
    msg = str(err.value)
    for part in ("480,000 rows", "170,000 columns", "6,000,000 non-zeros", "budget",
                 "use max_thresholds, fewer samples or a lower depth"):
        assert part in msg
    assert isinstance(err.value, ValueError)
    assert estimate_bytes(10, 10, 2_000_000) > estimate_bytes(10, 10, 1_000_000) > 12 * 1_000_000


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda s: s.add_vars("x", 2), ValueError, "already used"),
        (lambda s: s.add_vars("bad name", 2), ValueError, "identifier"),
        (lambda s: s.add_vars("y", (2, -1)), ValueError, "non-negative"),
        (lambda s: s.add_vars("y", 3, lb=[0, 2, 0], ub=1), ValueError, "lb > ub"),
        (lambda s: s.add_vars("y", 3, lb=[0, 0]), ValueError, "broadcastable"),
        (lambda s: s.add_vars("y", 2, obj=np.inf), ValueError, "finite"),
        (lambda s: s.add_rows("r", 1, [0], [5], [1.0], 0, 1), ValueError, "column indices"),
        (lambda s: s.add_rows("r", 1, [1], [0], [1.0], 0, 1), ValueError, "local row"),
        (lambda s: s.add_rows("r", 1, [0, 0], [0], [1.0], 0, 1), ValueError, "same length"),
        (lambda s: s.add_rows("r", 1, [0], [0.5], [1.0], 0, 1), TypeError, "integers"),
        (lambda s: s.add_rows("r", 1, [0], [0], [np.nan], 0, 1), ValueError, "finite"),
        (lambda s: s.add_rows("r", 1, [0], [0], [1.0], 2, 1), ValueError, "lb > ub"),
        (lambda s: s.add_rows("r", 1, [0], [0], [1.0], -np.inf, np.inf), ValueError, "free row"),
        (lambda s: s.block_values(np.zeros(3), "x"), ValueError, "shape"),
        (lambda s: s.block_values(np.zeros(2), "z"), KeyError, "unknown"),
    ],
)
def test_bad_input_raises_clear_errors(call, error, match):
    spec = ModelSpec()
    spec.add_vars("x", 2)
    with pytest.raises(error, match=match):
        call(spec)


def test_peak_estimate_covers_the_solve_and_says_so():
    """Issue 14 item 4: the guard's estimate includes the solve (a measured per-formulation profile)."""
    from optitree.model._memory import estimate_peak_bytes
    from optitree.formulations import FlowOCTFormulation, OCTFormulation

    for form in (FlowOCTFormulation, OCTFormulation):
        base, per_nonzero = form.solve_memory
        assert estimate_peak_bytes(10, 10, 10**6, form.solve_memory) >= base + per_nonzero * 10**6
        assert estimate_peak_bytes(10, 10, 10**6, form.solve_memory) >= estimate_bytes(10, 10, 10**6)
    need = estimate_peak_bytes(1000, 1000, 10**6, FlowOCTFormulation.solve_memory)
    with pytest.raises(ModelTooLargeError, match="to build and solve.*max_thresholds"):
        check_size(1000, 1000, 10**6, budget_bytes=need - 1, hint="use max_thresholds",
                   solve_memory=FlowOCTFormulation.solve_memory)


def test_set_column_bounds_reaches_each_columns_own_block():
    spec = ModelSpec()
    a = spec.add_vars("a", (2, 2), ub=1.0, integer=True)
    b = spec.add_vars("b", 3, lb=-1.0, ub=5.0)
    spec.set_column_bounds([a[1, 0], b[2]], ub=0.0)
    spec.set_column_bounds(b[0], lb=2.0)
    _, lb, ub, _ = spec.column_arrays()
    np.testing.assert_array_equal(ub, [1, 1, 0, 1, 5, 5, 0])
    np.testing.assert_array_equal(lb, [0, 0, 0, 0, 2, -1, -1])
    with pytest.raises(IndexError, match="columns must lie"):
        spec.set_column_bounds([7], ub=0.0)
