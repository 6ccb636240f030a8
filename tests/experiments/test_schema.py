"""One parameter schema: what the harness advertises for a method, its estimator accepts."""

import io

import pytest
from sklearn.utils._param_validation import StrOptions

from experiments import config, methods, progress, records


def _str_options(estimator, key):
    constraints = type(estimator)._parameter_constraints.get(key, [])
    return {o for c in constraints if isinstance(c, StrOptions) for o in c.options}


@pytest.mark.parametrize("name", sorted(methods.METHODS))
def test_every_advertised_value_is_accepted_by_the_estimator(name):
    method = methods.METHODS[name]
    base = method.defaults()
    for key, param in method.params.items():
        values = list(param.choices or [])
        if param.choices is None and param.default is None:
            values = [int(param.minimum or 1) if param.type is int else float(param.minimum or 1.0)]
        for value in values:
            method.check({**base, key: value})  # raises if the estimator's constraints reject it
        estimator = method.make(base, 2, 0)
        options = _str_options(estimator, {"start": "init"}.get(key, key))
        if options and param.choices:  # string choices agree both ways
            assert set(param.choices) == options, (name, key)


def test_oct_takes_rank_scaling_and_not_max_thresholds(tmp_path):
    assert "max_thresholds" not in methods.METHODS["oct"].params
    assert "feature_scaling" not in methods.METHODS["flow"].params
    base = 'depths = [1]\nseeds = [0]\n[[datasets]]\nname = "xor"\nparams = { n = 16 }\n[[methods]]\nname = "%s"\n'
    path = tmp_path / "c.toml"
    path.write_text(base % "oct" + "params = { max_thresholds = 8 }\n")
    with pytest.raises(config.ConfigError, match="unknown parameter 'max_thresholds' for method 'oct'"):
        config.load(path)
    path.write_text(base % "oct" + 'params = { feature_scaling = "rank", time_limit = 5 }\n')
    (run,) = config.load(path).runs
    from experiments.runner import execute_run

    record = execute_run(run)
    assert record.status == "done", record.error
    assert record.execution["params"]["feature_scaling"] == "rank"


def test_mip_configs_that_validate_run(tmp_path):
    """Each MIP method with every optional parameter set: validates, and then fits."""
    from experiments.runner import execute_run

    blocks = []
    for name, method in sorted(methods.METHODS.items()):
        if method.kind != "mip" or method.task != "classification":
            continue
        optional = {k: p for k, p in method.params.items() if p.default is None}
        values = {k: (p.choices[-1] if p.choices else (4 if p.type is int else 1.0)) for k, p in optional.items()}
        values["time_limit"] = 5.0
        body = ", ".join(f"{k} = {v!r}".replace("'", '"') for k, v in values.items())
        blocks.append(f"[[methods]]\nname = \"{name}\"\nparams = {{ {body} }}\n")
    path = tmp_path / "c.toml"
    path.write_text('depths = [1]\nseeds = [0]\n[[datasets]]\nname = "xor"\nparams = { n = 16 }\n' + "".join(blocks))
    for run in config.load(path).runs:
        record = execute_run(run)
        assert record.status == "done", (run.method, record.error)


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def _record(status, proven, gap):
    return records.RunRecord(
        run_id="r", config={"dataset_label": "iris", "depth": 2, "method_label": "flow", "seed": 0}, status=status,
        duration=1.25, solver={"status": "optimal" if proven else "time_limit", "proven_optimal": proven, "gap": gap},
        error=None if status == "done" else {"type": "WorkerDied", "message": "killed"},
    )


def test_progress_line_and_terminal_bar():
    pytest.importorskip("tqdm")
    assert progress.run_line(_record("done", True, 0.0)) == "iris d=2 flow s=0: done, optimal, gap 0.00%, 1.2 s"
    stream = _Terminal()
    with progress.progress(3, True, stream) as tick:
        for rec in (_record("done", True, 0.0), _record("done", False, 0.25), _record("failed", False, None)):
            tick(rec)
    text = stream.getvalue()
    assert "done 2 · failed 1 · proven 1" in text and "3/3" in text and "gap 25.00%" in text
    assert "WorkerDied: killed" in text


def test_progress_is_plain_lines_when_not_a_terminal():
    stream = io.StringIO()
    with progress.progress(2, True, stream) as tick:
        tick(_record("done", True, 0.0))
    assert stream.getvalue() == "[1/2] iris d=2 flow s=0: done, optimal, gap 0.00%, 1.2 s\n"
