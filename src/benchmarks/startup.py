"""Time to a first fit in a fresh process: optitree against pycontree, side by side.

Each run starts a new interpreter that imports the package, reads the README's XOR example
(``datasets.load("xor", n=60, seed=0)``, saved once by this script as ``.npz``: neither process
imports the other's package) and fits a depth-2 tree: optitree's
``OptimalTreeClassifier(max_depth=2, time_limit=60)`` (import, validation, exact engine,
certificate) and pycontree's ``ConTree(max_depth=2)`` on the same rows. The two commands
alternate, ``--repeats`` times each; the table gives each one's median and least wall time
and the ratio of the medians. Nothing is compiled at first use: both engines are built at
install time.

Usage::

    python -m benchmarks.startup --repeats 7
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from optitree import datasets

from experiments.report import markdown_table

LOAD = "import numpy as np\ndata = np.load({path!r})\nX, y = data['X'], data['y']\n"
COMMANDS = {
    "optitree": ("from optitree import OptimalTreeClassifier\n" + LOAD +
                 "est = OptimalTreeClassifier(max_depth=2, time_limit=60).fit(X, y)\n"
                 "assert est.result_.proven_optimal\n"),
    "pycontree": "import pycontree\n" + LOAD + "pycontree.ConTree(max_depth=2).fit(X, y)\n",
    "python + numpy": LOAD,
}


def wall_time(code: str) -> float:
    """Seconds a fresh interpreter takes to run ``code`` (start-up and exit included)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - start


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="fresh processes per command")
    args = parser.parse_args(argv)
    X, y, _ = datasets.load("xor", n=60, seed=0)
    times = {name: [] for name in COMMANDS}
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "xor.npz")
        np.savez(path, X=X, y=y)
        for _ in range(args.repeats):
            for name, code in COMMANDS.items():
                times[name].append(wall_time(code.format(path=path)))
    medians = {name: statistics.median(t) for name, t in times.items()}
    rows = [[name, f"{medians[name]:.2f}", f"{min(t):.2f}", f"{medians[name] / medians['pycontree']:.2f}"]
            for name, t in times.items()]
    print(markdown_table(["fresh process", "median s", "least s", "/ pycontree"], rows))
    print(f"\n{args.repeats} runs each, alternating; the README XOR example (60 rows, depth 2).")


if __name__ == "__main__":
    main()
