"""verbose=1: one progress line in the user's units; verbose=2: the solver's own log."""

import io

import numpy as np

import optitree.pipeline._progress as progress
from optitree import OptimalTreeClassifier
from optitree.pipeline._progress import ProgressLine


def test_progress_line_in_training_errors(monkeypatch, capsys):
    monkeypatch.setattr(progress, "QUIET_SECONDS", 0.0)
    rng = np.random.RandomState(0)
    X = rng.rand(40, 3)
    y = (X[:, 0] > 0.5) ^ (X[:, 1] > 0.5)
    OptimalTreeClassifier(max_depth=2, acceleration="none", verbose=1, time_limit=None).fit(X, y)
    err = capsys.readouterr().err
    assert "incumbent 0 errors" in err and "gap 0.00%" in err  # XOR: 0 training errors, proven
    assert "Running HiGHS" not in capsys.readouterr().out


def test_progress_line_is_quiet_for_short_fits_and_rewrites_on_a_terminal():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    quiet = io.StringIO()
    ProgressLine("errors", 0.5, stream=quiet)({"incumbent": 1.0, "bound": 0.5, "gap": 0.5, "nodes": 3})
    assert quiet.getvalue() == ""
    term = Terminal()
    line = ProgressLine("errors", 0.5, stream=term)
    line.start -= 10  # a long fit
    line({"incumbent": 1.0, "bound": 0.5, "gap": 0.5, "nodes": 3, "event": "progress"})
    line({"incumbent": 1.0, "bound": 1.0, "gap": 0.0, "nodes": 9, "event": "final"})
    out = term.getvalue()
    assert out.startswith("\r") and out.count("\r") == 2 and out.endswith("\n")
    assert "incumbent 2 errors  bound 1  gap 50.00%  nodes 3" in out
