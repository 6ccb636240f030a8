"""Command line: ``python -m experiments {run,summarize,plot,list,quick}``.

Exit codes: 0 success; 1 the grid finished but some runs failed (their records
hold the error; ``--resume`` retries them); 2 a config or usage error, including a
results directory made by another config (nothing ran) and a malformed or damaged
record under ``summarize --strict`` (nothing written); 3 the execution backend
failed mid-grid (finished runs are saved); 4 a record could not be written (full
disk, read-only directory: finished records are intact); 130 / 143 stopped by
SIGINT (Ctrl-C) / SIGTERM: workers ended, finished records kept, runs in flight
not recorded (``--resume`` runs them).

A config's ``plugins`` (modules that register methods) are code: they are
imported only by ``run``/``quick`` with ``--allow-plugins``, never by ``list``.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from . import config as _config
from . import datasets as _datasets
from . import methods as _methods
from . import protocols as _protocols
from . import runner as _runner

QUICK_CONFIG = Path(__file__).resolve().parent / "configs" / "quick.toml"
QUICK_OUT = Path("results") / "quick"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m experiments", description="Greedy vs optimal decision trees: reproducible experiment grids."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s (optitree {_version()})")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a config's grid, one record per run in DIR/runs")
    run.add_argument("config", type=Path, help="TOML config (see src/experiments/configs/)")
    run.add_argument("--out", type=Path, required=True, help="results directory")
    _add_execution_args(run, default_jobs=None)
    run.add_argument("--resume", action="store_true", help="continue in an existing DIR: skip done runs, retry failed")
    run.add_argument("--allow-plugins", action="store_true",
                     help="import the modules the config lists under `plugins` (they run as code)")

    quick = sub.add_parser("quick", help=f"run {QUICK_CONFIG.name} into {QUICK_OUT} (resuming) and print the summary")
    quick.add_argument("--out", type=Path, default=QUICK_OUT, help=f"results directory (default {QUICK_OUT})")
    _add_execution_args(quick, default_jobs=2)

    summarize = sub.add_parser("summarize", help="runs table (CSV/Parquet) and markdown report of DIR")
    summarize.add_argument("dir", type=Path)
    summarize.add_argument("--strict", action="store_true",
                           help="stop (exit 2) on a malformed or damaged record instead of leaving it out with a warning")

    plot = sub.add_parser("plot", help="PNG figures of DIR (into DIR/plots)")
    plot.add_argument("dir", type=Path)
    plot.add_argument("--plots-dir", type=Path, default=None, help="where to write the PNGs (default DIR/plots)")

    sub.add_parser("list", help="available datasets (with their parameters), protocols and methods")
    return parser


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("optitree")
    except Exception:  # not installed: the source tree's own
        import optitree

        return getattr(optitree, "__version__", "unknown")


def _add_execution_args(p: argparse.ArgumentParser, default_jobs: int | None) -> None:
    p.add_argument(
        "--n-jobs",
        type=int,
        default=default_jobs,
        help=f"parallel runs, joblib convention (default: {default_jobs or '1; with --backend dask every worker'})",
    )
    p.add_argument("--backend", choices=_runner.BACKENDS, default="loky", help="loky: local worker processes (default); dask: a Dask cluster")
    p.add_argument("--scheduler", default=None, help="Dask scheduler address, with --backend dask")
    p.add_argument("--quiet", action="store_true", help="no progress output")
    p.add_argument("--no-summary", action="store_true", help="do not print the summary at the end")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "run":
            return _run(args.config, args.out, args, resume=args.resume, allow_plugins=args.allow_plugins)
        if args.command == "quick":
            return _run(QUICK_CONFIG, args.out, args, resume=True, section="## Greedy vs optimal")
        if args.command == "summarize":
            return _summarize(args.dir, strict=args.strict)
        if args.command == "plot":
            return _plot(args.dir, args.plots_dir)
        return _list()
    except (_config.ConfigError, _runner.HarnessError) as exc:
        print(str(exc) if isinstance(exc, _config.ConfigError) else f"error: {exc}", file=sys.stderr)
        return 2
    except _runner.GridAborted as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    except _runner.ResultsWriteError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 4
    except _runner.GridInterrupted as exc:
        print(
            f"stopped by {signal.Signals(exc.signum).name}: workers ended, {exc.finished} run(s) finished and recorded "
            f"in this session; runs in flight were not recorded. Re-run with --resume to continue.",
            file=sys.stderr,
        )
        return 128 + exc.signum


def _run(config_path: Path, out_dir: Path, args, *, resume: bool, allow_plugins: bool = False,
         section: str | None = None) -> int:
    experiment = _config.load(config_path, allow_plugins=allow_plugins)
    outcome = _runner.run_grid(
        experiment,
        out_dir,
        n_jobs=args.n_jobs,
        backend=args.backend,
        scheduler=args.scheduler,
        resume=resume,
        progress=not args.quiet,
    )
    if not args.quiet:
        print(
            f"{outcome.done} done, {outcome.failed} failed, {outcome.skipped} skipped (already done) "
            f"of {outcome.total} runs",
            file=sys.stderr,
        )
    if not args.no_summary:
        _summarize(out_dir, section)
    if outcome.failed:
        print(f"{outcome.failed} run(s) failed; their errors are in the records. Re-run with --resume to retry.",
              file=sys.stderr)
        return 1
    return 0


def _summarize(out_dir: Path, section: str | None = None, strict: bool = False) -> int:
    """Write the tables and report of ``out_dir``; print the report, or only its ``section`` (a heading)
    when it has one (the main job prints the paired statistics; report.md holds everything). ``strict``:
    a malformed or damaged record is an error (nothing written) instead of a warning."""
    from . import records, report

    if not out_dir.is_dir():
        raise _runner.HarnessError(f"no results directory {out_dir}")
    try:
        text, written = report.summarize(out_dir, strict=strict)
    except ImportError as exc:  # pandas is an optional extra
        raise _runner.HarnessError(str(exc)) from None
    except records.MalformedRecord as exc:  # --strict
        raise _runner.HarnessError(f"{exc}\n(--strict: nothing written; without it these records are left out)") from None
    except OSError as exc:  # full disk, read-only directory: the records themselves are intact
        raise _runner.ResultsWriteError(
            f"cannot write the summary into {out_dir}: {exc.strerror or exc}"
            f"{f' ({exc.filename})' if exc.filename else ''}. The run records are intact; free disk space or fix "
            f"the directory's permissions, then run `python -m experiments summarize {out_dir}`.") from None
    part = report.section(text, section) if section else None
    if part:
        head = text.split("\n## ", 1)[0]
        print(f"{head}\n{part}\nThe full report (every method, depth and run): {out_dir / 'report.md'}")
    else:
        print(text, end="")
    print("wrote " + ", ".join(str(p) for p in written), file=sys.stderr)
    return 0


def _plot(out_dir: Path, plots_dir: Path | None) -> int:
    from . import plots

    if not out_dir.is_dir():
        raise _runner.HarnessError(f"no results directory {out_dir}")
    try:
        written = plots.plot_all(out_dir, plots_dir)
    except ImportError as exc:  # matplotlib is an optional extra
        raise _runner.HarnessError(str(exc)) from None
    except ValueError as exc:  # nothing to plot
        raise _runner.HarnessError(str(exc)) from None
    for p in written:
        print(p)
    return 0


def _format_parameters(name: str) -> str:
    import inspect

    parts = []
    for key, default in _datasets.dataset_parameters(name).items():
        parts.append(key if default is inspect.Parameter.empty else f"{key}={default!r}")
    return ", ".join(parts) if parts else "no parameters"


def _list() -> int:
    print("datasets (name: samples x features, task, description; then `params` it takes, with defaults):")
    for name in _datasets.dataset_names():
        params = _format_parameters(name)
        if name == _datasets.CSV_DATASET:
            print(f"  {name:14s} {'your own file':13s} {'either':14s} a CSV file with a header row; a relative path "
                  f"is read from the config file's directory")
            print(f"  {'':14s} params: {params}")
            continue
        try:
            X, _, info = _datasets.load_dataset(name, {})
        except (TypeError, ValueError, OSError):  # needs parameters
            print(f"  {name}")
            print(f"  {'':14s} params: {params}")
            continue
        n_categorical = len(info.get("categorical") or [])
        categorical = f" [{n_categorical} categorical]" if n_categorical else ""
        print(f"  {name:14s} {X.shape[0]:5d} x {X.shape[1]:<3d}   {info['task']:14s} {info['description']}{categorical}")
        print(f"  {'':14s} params: {params}")
    print("\nprotocols (config key `protocol`):")
    for name, protocol in sorted(_protocols.PROTOCOLS.items()):
        print(f"  {name:14s} {protocol.description}{'  (default)' if name == _protocols.DEFAULT else ''}")
    print("\nmethods (name, kind, task; parameters with type and default):")
    for name in sorted(_methods.METHODS):
        m = _methods.METHODS[name]
        print(f"  {name:14s} {m.kind:6s} {m.task:14s} {m.description}")
        for pname, p in m.params.items():
            extra = f" one of {', '.join(map(str, p.choices))}" if p.choices else ""
            default = "unset" if p.default is None else repr(p.default)
            print(f"      {pname:18s} {p.type.__name__:5s} default {default}{extra}{'  - ' + p.doc if p.doc else ''}")
    return 0
