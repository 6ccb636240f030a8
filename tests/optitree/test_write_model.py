"""A fitted estimator exposes its MIP: model_ and write_model (LP / MPS)."""

import highspy
import numpy as np
import pytest
from sklearn.datasets import load_iris

from optitree import OptimalTreeClassifier, OptimalTreeRegressor


@pytest.fixture
def iris():
    X, y = load_iris(return_X_y=True)
    return X[::5], y[::5]


@pytest.mark.parametrize("suffix", [".lp", ".mps"])
def test_written_model_reads_back_with_the_fit_objective(iris, tmp_path, suffix):
    X, y = iris
    clf = OptimalTreeClassifier(max_depth=2, acceleration="none", time_limit=30).fit(X, y)
    assert clf.model_.n_cols > 0
    path = tmp_path / f"tree{suffix}"
    clf.write_model(path)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.readModel(str(path))
    assert h.getNumCol() == clf.model_.n_cols
    h.run()
    assert clf.result_.proven_optimal
    assert h.getInfo().objective_function_value == pytest.approx(clf.result_.normalized_objective, abs=1e-6)


def test_user_constraints_are_in_the_model(iris):
    X, y = iris
    clf = OptimalTreeClassifier(max_depth=1, formulation="oct", acceleration="none",
                                constraints=lambda m: None).fit(X, y)
    assert clf.model_ is not None


def test_regressor_writes_its_model(tmp_path):
    X = np.linspace(0, 1, 12)[:, None]
    reg = OptimalTreeRegressor(max_depth=1, acceleration="start").fit(X, (X[:, 0] > 0.5).astype(float))
    reg.write_model(tmp_path / "ort.lp")
    assert (tmp_path / "ort.lp").read_text().strip()


@pytest.mark.parametrize("kwargs, reason", [
    ({"solver": "dp"}, "solver='dp'"),
    ({}, "the exact engine ended the fit"),
])
def test_no_mip_built_is_a_clear_error(iris, tmp_path, kwargs, reason):
    X, y = iris
    clf = OptimalTreeClassifier(max_depth=2, **kwargs).fit(X, y)
    assert clf.model_ is None
    with pytest.raises(ValueError, match=reason):
        clf.write_model(tmp_path / "tree.lp")
