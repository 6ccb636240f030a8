"""Regenerate what README.md quotes from a run of the main job, so the quotes cannot go stale.

    python -m benchmarks.regenerate_docs                      # run the main job afresh, rewrite README.md
    python -m benchmarks.regenerate_docs --out results/docs   # the same, keeping the run's directory
    python -m benchmarks.regenerate_docs --from results/quick # read a finished run (the timing is kept)
    python -m benchmarks.regenerate_docs --check --from DIR   # exit 1 and print a diff when README.md differs
    python -m benchmarks.regenerate_docs --figures            # also docs/xor.png and docs/progress.png

Without ``--from`` the main job (``python -m experiments quick --out DIR``, 2 jobs) runs into a
directory that must be new or empty: ``quick`` resumes, so a directory holding older records would
quote them instead of a run of the current code. The wall time of that command is measured.

Generated regions of README.md, each between a pair of marker comments (everything outside them
is left as it is; the markers stay, so the rewrite can be repeated):

- ``<!-- main-job:begin -->`` ... ``<!-- main-job:end -->``: the excerpt of the main job's output,
  from the run's ``stats.csv``: the sentence before the table (the number of Holm-corrected rows,
  the optimal fits proven and what settled them), the table of the rows in ``EXCERPT_ROWS``
  (sorted by test Δ, largest first) and the across-set sentence (Wilcoxon, train and test, every
  depth). ``tests/test_readme.py`` checks it against a fresh run of the main job (a slow test).
- ``<!-- main-job-time:begin -->`` ... ``<!-- main-job-time:end -->``: the main job's wall time,
  the machine's cores, its load average at the start and the commit the records name (with
  "uncommitted changes" when the records say the working tree was dirty). Rewritten only when
  this script ran the job (``--from`` keeps the old text: a directory does not say how long its
  run took).
- ``--figures``: ``docs/xor.png`` and ``docs/progress.png`` (``docs/make_readme_figures.py``, which
  runs the README's Python blocks). ``progress.png`` plots a MIP's incumbent and bound over
  time, so its pixels change from run to run; everything else here is idempotent: a second run
  on the same results changes nothing (a file is written, atomically, only when its text
  changes).

Not regenerated: the benchmarks' figures. They take minutes to hours and print their results
instead of saving them (``benchmarks.mip --out FILE`` saves JSON, but the README's figures are read
from its printed build table), so each is rerun by hand and pasted:

- ``python -m experiments run src/experiments/configs/study.toml --out results/study --n-jobs 2
  --resume`` (about an hour on 2 cores): the README's study sentence (runs, minutes, fits
  proven; the across-level ``train`` and ``test`` rows of ``results/study/stats.csv``: Holm p
  and mean Δ per depth), and the runtime comment in ``study.toml``.
- ``python -m benchmarks.startup``: the fresh-process XOR fit against pycontree (README,
  "Greedy vs optimal on XOR").
- ``python -m benchmarks.certified`` and ``--task regression`` (and its ``--constraint``
  runs): proven counts and times (README, "Certified" sections).
- ``python -m benchmarks.oblique --part estimator`` and ``--part linear-estimator``: the
  two tables of "Oblique and linear-leaf trees".
- ``python -m benchmarks.time_limit``: the overshoot figures.
- ``python -m benchmarks.categorical``: categorical fits' times and car's errors.
- ``python -m benchmarks.exact --depths 3 4 --sets breast_cancer banknote_like xor_noisy
  raisin_like_250 wilt_like_1500 --threads 1 2``: the ``threads=2`` speed-up; ``benchmarks.exact
  --anytime``: digits' bound at 120 s.
- ``python -m benchmarks.mip``: the model sizes under "Formulations".
- the ``verbose=1`` and harness progress lines are examples of the output's form, not results.

docs/*.md quote no results of a run (docs/build.md's fresh-process claim is ``benchmarks.startup``'s;
docs/experiments.md documents ``benchmarks.scaling``'s columns and ``--json`` output, not its numbers).
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from pathlib import Path

from experiments.records import atomic_write_text

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
FIGURE_SCRIPT = ROOT / "docs" / "make_readme_figures.py"

MAIN_JOB = "main-job"
MAIN_JOB_TIME = "main-job-time"

# The (dataset, depth) rows the excerpt quotes: a large greedy failure (noisy XOR), the largest real
# gain (MONK's 1), a continuous and a categorical set, and the sets where the optimal tree is behind.
EXCERPT_ROWS = [("xor-noisy", 2), ("monks1", 4), ("wine", 2), ("car", 4), ("iris", 4), ("tic_tac_toe", 4),
                ("lenses", 4)]
WIDTH = 99  # the README's prose line length


class DocsError(Exception):
    """The run or the README cannot give the excerpt (missing markers, rows or files)."""


# ---------------------------------------------------------------------------------------------- markers
def _markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}:begin -->", f"<!-- {name}:end -->"


def region(text: str, name: str) -> str:
    """The text between ``name``'s begin and end markers (each exactly once, begin first)."""
    begin, end = _markers(name)
    if text.count(begin) != 1 or text.count(end) != 1:
        raise DocsError(f"README.md needs exactly one {begin} and one {end} "
                        f"(found {text.count(begin)} and {text.count(end)})")
    start, stop = text.index(begin) + len(begin), text.index(end)
    if stop < start:
        raise DocsError(f"{end} comes before {begin} in README.md")
    return text[start:stop]


def replace_region(text: str, name: str, content: str) -> str:
    """``text`` with the region ``name`` holding ``content`` (markers kept)."""
    region(text, name)  # checks the markers
    begin, end = _markers(name)
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}{content}{end}{tail}"


def main_job_block(excerpt: str) -> str:
    """The main-job region as it stands in README.md: the excerpt on lines of its own."""
    return f"\n\n{excerpt.strip()}\n\n"


# ------------------------------------------------------------------------------------------ formatting
def _minus(s: str) -> str:
    return s.replace("-", "−")


def _signed(x: float) -> str:
    return _minus(f"{x:+.3f}")


def _p(p: float, significant: bool) -> str:
    text = "<0.001" if p < 0.001 else f"{p:.3f}"
    return text + (" *" if significant else "")


def _wrap(paragraph: str) -> str:
    """``paragraph`` on lines of at most ``WIDTH`` characters, never breaking "p = 0.003" or "95 %"."""
    glued = re.sub(r" (?=[=<%] )| (?<= [=<] )| (?=%)", "\0", paragraph)
    return textwrap.fill(glued, width=WIDTH, break_long_words=False, break_on_hyphens=False).replace("\0", " ")


def _settled(values) -> Counter:
    total: Counter = Counter()
    for value in values:
        for part in str(value or "").split(";"):
            m = re.fullmatch(r"\s*(.*?)\s+(\d+)\s*", part)
            if m:
                total[m.group(1)] += int(m.group(2))
    return total


def _verdict(rows, verb: str) -> str:
    """'**fit** better at every depth' / 'significantly ... at depth 2' / 'no better', from the across rows."""
    better = [int(r.depth) for r in rows.itertuples() if bool(r.significant) and r.diff > 0]
    worse = [int(r.depth) for r in rows.itertuples() if bool(r.significant) and r.diff < 0]
    if better and len(better) == len(rows):
        return f"**{verb}** better at every depth"
    if not better and not worse:
        return f"**{verb}** no better"
    parts = []
    if better:
        parts.append(f"better at depth {', '.join(map(str, better))}")
    if worse:
        parts.append(f"worse at depth {', '.join(map(str, worse))}")
    return f"**{verb}** significantly " + " and ".join(parts)


def _p_equals(p: float) -> str:
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def _across_list(rows) -> str:
    return ", ".join(f"{_signed(r.diff)} (depth {int(r.depth)}, {int(r.wins)}/{int(r.ties)}/{int(r.losses)}, "
                     f"{_p_equals(r.p_holm)})" for r in rows.itertuples())


def excerpt(stats) -> str:
    """The README's excerpt of the main job (markdown) from its ``stats.csv`` (a DataFrame)."""
    pair = stats[(stats["greedy"] == "cart") & (stats["optimal"] == "optimal")]
    per = pair[pair["level"] == "dataset"]
    test, train = per[per["score"] == "test"], per[per["score"] == "train"]
    if not len(test):
        raise DocsError("stats.csv has no dataset-level rows of optimal vs cart")
    fits, proven = int(test["optimal_fits"].sum()), int(test["proven"].sum())
    settled = _settled(test["settled_by"])
    if proven == fits:
        proof = f"every one of the {fits} optimal fits proven"
    else:
        proof = f"{proven} of the {fits} optimal fits proven († marks rows with unproven fits)"
    if settled and set(settled) == {"engine"}:
        proof += ", all by the exact engine without a MIP"
    elif settled:
        proof += " (settled by " + ", ".join(f"{k} {v}" for k, v in sorted(settled.items())) + ")"
    intro = (f"What it printed (excerpt; Δ = optimal − CART accuracy, paired by repetition and fold, mean and 95 % "
             f"interval of the corrected resampled t-test, p Holm-corrected over the {len(test)} dataset × depth "
             f"rows; {proof}):")

    rows = []
    for dataset, depth in EXCERPT_ROWS:
        t = test[(test["dataset"] == dataset) & (test["depth"] == depth)]
        r = train[(train["dataset"] == dataset) & (train["depth"] == depth)]
        if len(t) != 1 or len(r) != 1:
            raise DocsError(f"stats.csv has no single test and train row for {dataset} at depth {depth}")
        rows.append((t.iloc[0], r.iloc[0]))
    rows.sort(key=lambda tr: -tr[0]["diff"])
    lines = ["| dataset | depth | pairs | cart | optimal | Δ test [95 % CI] | p (Holm) | Δ train | p (Holm) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for t, r in rows:
        dagger = " †" if int(t["unproven"]) else ""
        lines.append(
            f"| {t['dataset']} | {int(t['depth'])} | {int(t['n_pairs'])} | {t['greedy_mean']:.3f} | "
            f"{t['optimal_mean']:.3f}{dagger} | {_signed(t['diff'])} [{_signed(t['ci_low'])}, {_signed(t['ci_high'])}] | "
            f"{_p(t['p_holm'], bool(t['significant']))} | {_signed(r['diff'])} | {_p(r['p_holm'], bool(r['significant']))} |")

    across = pair[pair["level"] == "across"].sort_values("depth")
    a_test, a_train = across[across["score"] == "test"], across[across["score"] == "train"]
    if not len(a_test) or not len(a_train):
        raise DocsError("stats.csv has no across-dataset rows of optimal vs cart")
    n_sets = int(a_test["n_pairs"].max())
    fit, generalise = _verdict(a_train, "fit"), _verdict(a_test, "generalise")
    joint = "and" if fit.endswith("no better") == generalise.endswith("no better") else "but"
    across_text = (f"Across the {n_sets} sets (Wilcoxon signed-rank over the per-set mean differences, "
                   f"Holm-corrected; wins/ties/losses of the optimal tree): optimal trees {fit}: train Δ "
                   f"{_across_list(a_train)}; {joint} they {generalise} in this run: test Δ {_across_list(a_test)}.")
    return f"{_wrap(intro)}\n\n" + "\n".join(lines) + f"\n\n{_wrap(across_text)}\n"


def read_stats(out_dir: Path):
    import pandas as pd

    path = Path(out_dir) / "stats.csv"
    if not path.is_file():
        raise DocsError(f"{path} does not exist: run the main job (python -m experiments quick --out {out_dir})")
    return pd.read_csv(path)


def provenance(out_dir: Path) -> str:
    """'at commit abc1234' (or several, or 'with uncommitted changes') from the run's done records."""
    commits, dirty = Counter(), False
    for path in sorted((Path(out_dir) / "runs").glob("*.json")):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        git = (record.get("environment") or {}).get("git") or {}
        if record.get("status") == "done" and git.get("commit"):
            commits[git["commit"][:7]] += 1
            dirty = dirty or bool(git.get("dirty"))
    if not commits:
        return "at an unknown commit"
    names = ", ".join(c for c, _ in commits.most_common())
    return f"at commit{'s' if len(commits) > 1 else ''} {names}" + (" with uncommitted changes" if dirty else "")


def timing(seconds: float, out_dir: Path, load: float) -> str:
    return (f"{seconds:.0f} s on {os.cpu_count()} cores {provenance(out_dir)}, load average {load:.1f} at the "
            f"start")


# ---------------------------------------------------------------------------------------------- actions
def render(readme: str, out_dir: Path, seconds: float | None = None, load: float | None = None) -> str:
    """``readme`` with its generated regions rewritten from the run in ``out_dir``."""
    text = replace_region(readme, MAIN_JOB, main_job_block(excerpt(read_stats(out_dir))))
    if seconds is not None:
        text = replace_region(text, MAIN_JOB_TIME, timing(seconds, out_dir, load or 0.0))
    else:
        region(text, MAIN_JOB_TIME)  # the markers must be there all the same
    return text


def write_atomically(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` atomically (:func:`experiments.records.atomic_write_text`); False
    (untouched) when unchanged."""
    if path.is_file() and path.read_text() == text:
        return False
    atomic_write_text(path, text)
    return True


def run_main_job(out_dir: Path, n_jobs: int = 2) -> float:
    """Run ``python -m experiments quick --out out_dir`` in a fresh process; its wall time in seconds."""
    if out_dir.exists() and any(out_dir.iterdir()):
        raise DocsError(f"{out_dir} is not empty: the main job resumes, so its old records would be quoted; "
                        f"give a new --out, or --from {out_dir} to quote it as it is")
    command = [sys.executable, "-m", "experiments", "quick", "--out", str(out_dir), "--n-jobs", str(n_jobs)]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise DocsError(f"the main job failed (exit code {done.returncode}): {' '.join(command)}")
    return seconds


def make_figures() -> None:
    import runpy

    cwd = os.getcwd()
    try:
        runpy.run_path(str(FIGURE_SCRIPT), run_name="__main__")
    finally:
        os.chdir(cwd)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.regenerate_docs",
                                     description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--from", dest="from_dir", type=Path, help="a finished main-job directory to quote")
    source.add_argument("--out", type=Path, help="run the main job into this new directory and keep it "
                                                 "(default: a temporary directory, removed afterwards)")
    parser.add_argument("--n-jobs", type=int, default=2, help="the main job's parallel runs (default 2, as quick)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 with a diff when README.md differs")
    parser.add_argument("--figures", action="store_true", help="also redraw docs/xor.png and docs/progress.png")
    parser.add_argument("--readme", type=Path, default=README, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    old = args.readme.read_text()
    try:
        region(old, MAIN_JOB), region(old, MAIN_JOB_TIME)  # fail before an expensive run
        if args.from_dir is not None:
            new = render(old, args.from_dir)
        else:
            with tempfile.TemporaryDirectory(prefix="main-job-") as tmp:
                out_dir = args.out if args.out is not None else Path(tmp) / "quick"
                load = os.getloadavg()[0]
                seconds = run_main_job(out_dir.resolve(), args.n_jobs)
                print(f"main job: {seconds:.1f} s ({out_dir})", file=sys.stderr)
                # --check compares what a run determines: the timing is never the same twice
                new = render(old, out_dir, None if args.check else seconds, load)
    except DocsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.check:
        if new == old:
            print("README.md is up to date", file=sys.stderr)
            return 0
        sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True), "README.md",
                                                   "README.md (regenerated)"))
        return 1
    changed = write_atomically(args.readme, new)
    print(f"{args.readme}: {'rewritten' if changed else 'unchanged'}", file=sys.stderr)
    if args.figures:
        make_figures()
    return 0


if __name__ == "__main__":
    sys.exit(main())
