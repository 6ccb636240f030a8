"""Every code block of the README runs.

Python blocks are executed in order in one namespace (they build on each other), inside a
temporary directory. Shell blocks are checked command by command: every
``python -m experiments ...`` line must parse with the CLI's own parser and name existing
config files; ``pip install`` lines must name extras that pyproject.toml defines.
"""

import re
import shlex
from pathlib import Path

import matplotlib
import pytest

from experiments.cli import build_parser
from experiments.config import tomllib  # tomli on Python 3.10

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```(\w*)\n(.*?)```", README, flags=re.S)


def test_readme_has_the_two_setup_commands():
    shell = [code for lang, code in BLOCKS if lang == "bash"]
    assert 'pip install -e ".[experiments]" && python -m experiments quick\n' in shell
    assert 'pip install -e ".[test]" && python -m pytest -q\n' in shell


def test_readme_python_blocks_run(tmp_path, monkeypatch, capsys):
    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    python_blocks = [code for lang, code in BLOCKS if lang == "python"]
    assert len(python_blocks) >= 4
    for i, code in enumerate(python_blocks):
        exec(compile(code, f"README.md python block {i}", "exec"), namespace)
    assert (tmp_path / "xor.png").stat().st_size > 0
    assert (tmp_path / "progress.png").stat().st_size > 0
    printed = capsys.readouterr().out
    assert "np.int64" not in printed and "np.float64" not in printed  # plain numbers, not numpy reprs


def _shell_commands():
    for lang, code in BLOCKS:
        if lang != "bash":
            continue
        for line in code.splitlines():
            for command in line.rstrip(" &").split(" && "):
                if command.strip():
                    yield command.strip()


@pytest.mark.parametrize("command", sorted(set(_shell_commands())))
def test_readme_shell_commands_are_valid(command):
    words = shlex.split(command)
    if words[:3] == ["python", "-m", "experiments"]:
        args = build_parser().parse_args(words[3:])
        config = getattr(args, "config", None)
        if config is not None:
            assert (ROOT / config).is_file(), f"{config} does not exist"
    elif words[:2] == ["pip", "install"]:
        extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
        for spec in words[2:]:
            for extra in re.findall(r"\[(.*?)\]", spec):
                assert set(extra.split(",")) <= extras
    elif words[:2] == ["python", "-m"] and words[2] == "pytest":
        pass
    elif words[0] == "dask":
        pytest.importorskip("distributed")
        assert words[1] in {"scheduler", "worker"}
    else:
        pytest.fail(f"README shell command not covered by this test: {command}")
