"""The layering rules of DESIGN.md §1: imports point down only."""

import ast
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

FORBIDDEN = {
    "greedy": {"optitree", "experiments", "pyomo", "highspy"},
    "optitree": {"experiments"},
}


def imported_top_modules(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_imports_point_down(package):
    offenders = {
        str(p.relative_to(ROOT)): sorted(imported_top_modules(p) & FORBIDDEN[package])
        for p in (ROOT / package).rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_pyomo_is_imported_lazily():
    """`import optitree` must not import pyomo (slow); only the Pyomo bridge does, on demand."""
    code = "import sys, optitree; print('pyomo' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
