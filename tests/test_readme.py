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


# ------------------------------------------------------------------ the main job's excerpt (benchmarks.regenerate_docs)
from benchmarks import regenerate_docs as regen  # noqa: E402

_ROW = re.compile(r"\| (?P<dataset>[\w-]+) \| (?P<depth>\d+) \| \d+ \| \d\.\d{3} \| \d\.\d{3}( †)? \| "
                  r"(?P<diff>[+−]\d\.\d{3}) \[[+−]\d\.\d{3}, [+−]\d\.\d{3}\] \| (<0\.001|\d\.\d{3})( \*)? \| "
                  r"[+−]\d\.\d{3} \| (<0\.001|\d\.\d{3})( \*)? \|")


def test_readme_main_job_excerpt_is_between_markers_and_well_formed():
    block = regen.region(README, regen.MAIN_JOB)
    assert block == regen.main_job_block(block), "the excerpt stands on lines of its own between the markers"
    intro, table, across = block.strip().split("\n\n")
    assert intro.startswith("What it printed (excerpt;") and intro.endswith(":")
    lines = table.splitlines()
    assert lines[:2] == ["| dataset | depth | pairs | cart | optimal | Δ test [95 % CI] | p (Holm) | Δ train | p (Holm) |",
                         "|---|---|---|---|---|---|---|---|---|"]
    rows = [_ROW.fullmatch(line) for line in lines[2:]]
    assert all(rows), [line for line, m in zip(lines[2:], rows) if not m]
    assert sorted((m["dataset"], int(m["depth"])) for m in rows) == sorted(regen.EXCERPT_ROWS)
    diffs = [float(m["diff"].replace("−", "-")) for m in rows]
    assert diffs == sorted(diffs, reverse=True)
    assert re.fullmatch(r"Across the \d+ sets .*train Δ .*test Δ .*\.", across, flags=re.S)
    assert "-" not in re.sub(r"[\w)]-[\w(]", "", across), "negative numbers use the minus sign −"
    timing = regen.region(README, regen.MAIN_JOB_TIME)
    assert re.match(r"\d+ s on \d+ cores at commit", timing)


def test_readme_describes_the_main_jobs_config():
    config = tomllib.loads((ROOT / "src" / "experiments" / "configs" / "quick.toml").read_text())
    described = (f"{config['cv']['folds']}-fold\ncross-validation repeated {len(config['seeds'])} times, "
                 f"depths {min(config['depths'])}–{max(config['depths'])}")
    assert described in README
    assert f"Across the {len(config['datasets'])} sets" in README


def _fake_run(out_dir: Path):
    """A stats.csv in the shape `summarize` writes, for the excerpt's rows."""
    import pandas as pd

    rows = []
    for i, (dataset, depth) in enumerate(regen.EXCERPT_ROWS + [("other", 3)]):
        for score, diff in (("test", 0.1 - 0.05 * i), ("train", 0.02 * i)):
            rows.append(dict(level="dataset", score=score, dataset=dataset, depth=depth, greedy="cart",
                             optimal="optimal", n_pairs=15, greedy_mean=0.8, optimal_mean=0.8 + diff, diff=diff,
                             ci_low=diff - 0.1, ci_high=diff + 0.1, p_holm=0.0004 if i == 0 else 0.5,
                             significant=i == 0, wins=None, ties=None, losses=None, proven=15, optimal_fits=15,
                             unproven=0, settled_by="engine 15"))
    for depth in (2, 3, 4):
        for score, diff, p in (("test", -0.01, 1.0), ("train", 0.04, 0.01)):
            rows.append(dict(level="across", score=score, dataset=None, depth=depth, greedy="cart",
                             optimal="optimal", n_pairs=8, greedy_mean=0.8, optimal_mean=0.8 + diff, diff=diff,
                             ci_low=None, ci_high=None, p_holm=p, significant=p < 0.05, wins=5, ties=1, losses=2,
                             proven=120, optimal_fits=120, unproven=0, settled_by="engine 120"))
    out_dir.mkdir()
    pd.DataFrame(rows).to_csv(out_dir / "stats.csv", index=False)


def test_regenerate_docs_rewrites_only_the_markers_and_is_idempotent(tmp_path, capsys):
    _fake_run(tmp_path / "run")
    readme = tmp_path / "README.md"
    readme.write_text("# title\n\ntable (<!-- main-job-time:begin -->1 s<!-- main-job-time:end -->; kept)\n\n"
                      "<!-- main-job:begin -->\n\nOLD EXCERPT\n\n<!-- main-job:end -->\n\nkept\n")
    argv = ["--from", str(tmp_path / "run"), "--readme", str(readme)]
    assert regen.main(argv + ["--check"]) == 1 and "-OLD EXCERPT" in capsys.readouterr().out
    assert regen.main(argv) == 0
    first, mtime = readme.read_text(), readme.stat().st_mtime_ns
    assert first.startswith("# title\n\ntable (<!-- main-job-time:begin -->1 s<!-- main-job-time:end -->; kept)")
    assert first.endswith("<!-- main-job:end -->\n\nkept\n") and "OLD EXCERPT" not in first
    block = " ".join(regen.region(first, regen.MAIN_JOB).split())  # prose is wrapped
    assert "every one of the 120 optimal fits proven, all by the exact engine without a MIP" in block
    assert "**fit** better at every depth" in block and "they **generalise** no better" in block
    assert "| xor-noisy | 2 | 15 | 0.800 | 0.900 | +0.100 [+0.000, +0.200] | <0.001 * | +0.000 | <0.001 * |" in block
    assert block.index("| xor-noisy |") < block.index("| lenses |")  # sorted by test Δ
    assert regen.main(argv) == 0 and readme.read_text() == first and readme.stat().st_mtime_ns == mtime
    assert regen.main(argv + ["--check"]) == 0
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left


def test_regenerate_docs_refuses_a_readme_without_markers(tmp_path, capsys):
    _fake_run(tmp_path / "run")
    readme = tmp_path / "README.md"
    readme.write_text("no markers\n")
    assert regen.main(["--from", str(tmp_path / "run"), "--readme", str(readme)]) == 2
    assert "<!-- main-job:begin -->" in capsys.readouterr().err and readme.read_text() == "no markers\n"


@pytest.mark.slow
def test_readme_excerpt_is_what_the_main_job_prints_now(tmp_path):
    """Runs the main job (`python -m experiments quick`, about 1-2 minutes on 2 cores) into a new
    directory and compares the README's excerpt with the one generated from its output."""
    regen.run_main_job(tmp_path / "quick")
    expected = regen.main_job_block(regen.excerpt(regen.read_stats(tmp_path / "quick")))
    assert regen.region(README, regen.MAIN_JOB) == expected, (
        "README.md's main-job excerpt differs from the main job's output: run "
        "`python -m benchmarks.regenerate_docs` (or `--from DIR` with a fresh run) to rewrite it")
