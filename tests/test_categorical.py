"""pandas categorical columns in the optimal estimators: ordinal codes, labels in the exports."""

import numpy as np
import pandas as pd
import pytest

from optitree import OptimalTreeClassifier, OptimalTreeRegressor, export_text


def frame(n=60, seed=0):
    rng = np.random.RandomState(seed)
    color = pd.Categorical(rng.choice(["red", "green", "blue"], n), categories=["red", "green", "blue"])
    return pd.DataFrame({"color": color, "num": rng.rand(n)})


def test_classifier_fits_and_prints_category_labels():
    X = frame()
    y = np.where(X["color"].isin(["red", "green"]), "yes", "no")
    clf = OptimalTreeClassifier(max_depth=1).fit(X, y)
    assert clf.score(X, y) == 1.0
    assert list(clf.categories_) == [0] and list(clf.categories_[0]) == ["red", "green", "blue"]
    text = export_text(clf)
    assert "color in {red, green}" in text and "color not in {red, green}" in text


def test_regressor_fits_on_categorical_columns():
    X = frame()
    y = (X["color"] == "blue").to_numpy(float) * 3 + X["num"].to_numpy()
    reg = OptimalTreeRegressor(max_depth=1).fit(X, y)
    assert "color in {red, green}" in export_text(reg)
    assert np.abs(reg.predict(X) - y).mean() < 1.0


def test_prediction_uses_the_codes_of_fit_whatever_the_frame_order_of_categories():
    X = frame()
    y = (X["color"] == "blue").to_numpy()
    clf = OptimalTreeClassifier(max_depth=1).fit(X, y)
    X2 = X.copy()
    X2["color"] = X2["color"].cat.reorder_categories(["blue", "green", "red"])
    np.testing.assert_array_equal(clf.predict(X2), y)


def test_unseen_category_and_missing_values_raise_clear_errors():
    X = frame()
    y = (X["color"] == "blue").to_numpy()
    clf = OptimalTreeClassifier(max_depth=1).fit(X, y)
    X2 = X.copy()
    X2["color"] = pd.Categorical(["purple"] * len(X))
    with pytest.raises(ValueError, match="unseen in fit: \\['purple'\\]"):
        clf.predict(X2)
    X3 = X.copy()
    X3.loc[0, "color"] = np.nan
    with pytest.raises(ValueError, match="missing values"):
        OptimalTreeClassifier(max_depth=1).fit(X3, y)
    with pytest.raises(ValueError, match="must be a pandas DataFrame"):
        clf.predict(X.assign(color=X["color"].cat.codes).to_numpy())
