"""User constraints written in Pyomo and compiled into a ModelSpec."""

import itertools

import numpy as np
import pytest

from optitree.model import ModelSpec
from optitree.model._user_constraints import apply_user_constraints, pyomo_mirror
from optitree.solvers import SolveOptions, solve_highs, solve_pyomo

VALUE = np.array([6.0, 5.0, 4.0, 3.0, 2.0])
WEIGHT = np.array([3.0, 4.0, 2.0, 3.0, 1.0])


def knapsack():
    spec = ModelSpec("knap")
    x = spec.add_vars("x", 5, ub=1, integer=True, obj=-VALUE)
    y = spec.add_vars("y", (2, 2), ub=4.0, obj=-0.5)  # continuous, bounded only by its bounds
    spec.add_rows("weight", 1, np.zeros(5, int), x, WEIGHT, -np.inf, 9)
    return spec, x, y


def brute_force(extra=lambda xs: True):
    """Best objective over x in {0,1}^5 (y at its upper bound 4 contributes -8)."""
    return min(
        -VALUE @ xs - 8.0
        for xs in map(np.array, itertools.product([0, 1], repeat=5))
        if WEIGHT @ xs <= 9 and extra(xs)
    )


def solve(spec):
    result, x = solve_highs(spec.to_highs(), SolveOptions())
    assert result.status == "optimal"
    return result.objective, x


def test_mirror_has_the_blocks_variables_in_column_order():
    import pyomo.environ as pyo

    spec, x, y = knapsack()
    m = pyomo_mirror(spec)
    assert m._optitree_columns[int(x[3])] is m.x[3]
    assert m._optitree_columns[int(y[1, 0])] is m.y[1, 0]
    assert m.x[0].domain is pyo.Binary and m.y[0, 1].ub == 4.0
    assert not list(m.component_objects(pyo.Constraint))


def test_equality_ranged_and_one_sided_constraints_change_the_optimum():
    import pyomo.environ as pyo

    spec, x, _ = knapsack()
    base, _ = solve(spec)
    assert base == pytest.approx(brute_force())

    def constraints(m):
        m.ranged = pyo.Constraint(expr=pyo.inequality(1, m.x[0] + m.x[1] + m.x[2], 2))
        m.at_least = pyo.Constraint(expr=m.x[3] + m.x[4] >= 1)
        m.tie = pyo.Constraint(expr=m.x[0] == m.x[4])
        m.cap_y = pyo.Constraint(expr=m.y[0, 0] + 2 * m.y[1, 1] <= 3 + m.x[1])

    assert apply_user_constraints(spec, constraints) == 4
    block = spec.row_blocks["user_constraints"]
    np.testing.assert_array_equal(block.lb, [1, 1, 0, -np.inf])
    np.testing.assert_array_equal(block.ub, [2, np.inf, 0, 3])
    objective, sol = solve(spec)
    # y[0,0] + 2 y[1,1] <= 3 + x1 with y in [0, 4]: best y00 + y11 is 3 + x1 (y00 first)
    expected = min(
        -VALUE @ xs - 0.5 * (4 + 4 + (3 + xs[1]))
        for xs in map(np.array, itertools.product([0, 1], repeat=5))
        if WEIGHT @ xs <= 9 and 1 <= xs[:3].sum() <= 2 and xs[3] + xs[4] >= 1 and xs[0] == xs[4]
    )
    assert objective == pytest.approx(expected) and objective > base
    # the Pyomo emission of the extended spec agrees
    r, _ = solve_pyomo(spec, "appsi_highs", SolveOptions())
    assert r.objective == pytest.approx(expected)


def test_fixing_and_bound_changes_become_rows():
    spec, x, _ = knapsack()

    def constraints(m):
        m.x[0].fix(0)
        m.x[2].setlb(1)

    assert apply_user_constraints(spec, constraints) == 2
    objective, sol = solve(spec)
    assert objective == pytest.approx(brute_force(lambda xs: xs[0] == 0 and xs[2] == 1))
    assert sol[x[0]] == 0 and sol[x[2]] == 1
    np.testing.assert_array_equal(spec.var_blocks["x"].lb, 0)  # spec bounds untouched


def test_second_call_adds_a_second_block_and_constant_constraints_add_no_row():
    import pyomo.environ as pyo

    spec, _, _ = knapsack()
    apply_user_constraints(spec, lambda m: setattr(m, "c", pyo.Constraint(expr=m.x[0] <= 0)))
    assert apply_user_constraints(spec, lambda m: setattr(m, "c", pyo.Constraint(expr=m.x[1] <= 0))) == 1
    assert list(spec.row_blocks) == ["weight", "user_constraints", "user_constraints_2"]
    assert apply_user_constraints(spec, lambda m: None) == 0
    objective, _ = solve(spec)
    assert objective == pytest.approx(brute_force(lambda xs: xs[0] == 0 and xs[1] == 0))


def test_indexed_constraints_on_a_sub_block():
    import pyomo.environ as pyo

    spec, _, _ = knapsack()

    def constraints(m):
        m.extra = pyo.Block()
        m.extra.pairs = pyo.Constraint(range(4), rule=lambda b, i: m.x[i] + m.x[i + 1] <= 1)

    assert apply_user_constraints(spec, constraints) == 4
    objective, _ = solve(spec)
    assert objective == pytest.approx(brute_force(lambda xs: all(xs[i] + xs[i + 1] <= 1 for i in range(4))))


@pytest.mark.parametrize(
    "constraints, match",
    [
        (lambda m, pyo: setattr(m, "c", pyo.Constraint(expr=m.x[0] * m.x[1] <= 0)), "linear"),
        (lambda m, pyo: setattr(m, "c", pyo.Constraint(expr=pyo.exp(m.y[0, 0]) <= 2)), "linear"),
        (lambda m, pyo: (setattr(m, "z", pyo.Var()), setattr(m, "c", pyo.Constraint(expr=m.z + m.x[0] <= 1))),
         "not in the model"),
        (lambda m, pyo: setattr(m, "o", pyo.Objective(expr=m.x[0])), "objective"),
        (lambda m, pyo: m.y[0, 0].setub(None), "loosen"),
        (lambda m, pyo: setattr(m.x[0], "domain", pyo.Reals), "domain"),
    ],
)
def test_bad_user_constraints_raise_value_error(constraints, match):
    import pyomo.environ as pyo

    spec, _, _ = knapsack()
    n_rows = spec.n_rows
    with pytest.raises(ValueError, match=match):
        apply_user_constraints(spec, lambda m: constraints(m, pyo))
    assert spec.n_rows == n_rows


def test_not_callable_raises_type_error():
    spec, _, _ = knapsack()
    with pytest.raises(TypeError, match="callable"):
        apply_user_constraints(spec, "x[0] <= 1")
