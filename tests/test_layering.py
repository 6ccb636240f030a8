"""Layering: imports point down only (greedy <- optitree <- experiments <- benchmarks), and the modules of
``experiments`` import each other without cycles (e.g. config and runner)."""

import ast
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
SRC = ROOT / "src"

FORBIDDEN = {
    "greedy": {"optitree", "experiments", "pyomo", "highspy"},
    "optitree": {"experiments", "benchmarks"},
    "experiments": {"benchmarks"},
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
        str(p.relative_to(SRC)): sorted(imported_top_modules(p) & FORBIDDEN[package])
        for p in (SRC / package).rglob("*.py")
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_pyomo_is_imported_lazily():
    """`import optitree` must not import pyomo (slow); only the Pyomo bridge does, on demand."""
    code = "import sys, optitree; print('pyomo' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_fits_import_neither_numba_nor_llvmlite():
    """The exact engine's kernels are compiled C++ (``optitree.exact._core``): a classifier's fit and a
    regression solve in a fresh process load no JIT compiler."""
    code = ("import sys\n"
            "from sklearn.datasets import load_iris\n"
            "import optitree, optitree.exact\n"
            "X, y = load_iris(return_X_y=True)\n"
            "clf = optitree.OptimalTreeClassifier(max_depth=3).fit(X, y)\n"
            "res = optitree.exact.solve(X[:, :3], X[:, 3], max_depth=2, loss='squared')\n"
            "assert clf.result_.proven_optimal and res.status == 'optimal'\n"
            "print('JIT', 'numba' in sys.modules, 'llvmlite' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "JIT False False", out.stdout


def experiments_imports(path: pathlib.Path) -> set[str]:
    """Sibling modules of ``experiments`` that ``path`` imports (relative or absolute), at any depth in the file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:
                names.add(node.module.split(".")[0])
            elif node.level == 1:
                names.update(alias.name for alias in node.names)
            elif node.level == 0 and node.module and node.module.startswith("experiments."):
                names.add(node.module.split(".")[1])
            elif node.level == 0 and node.module == "experiments":
                names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name.split(".")[1] for a in node.names if a.name.startswith("experiments."))
    return names


def test_experiments_modules_have_no_import_cycle():
    modules = {p.stem: p for p in (SRC / "experiments").glob("*.py")}
    graph = {name: experiments_imports(path) & set(modules) - {name} for name, path in modules.items()}
    assert "runner" not in graph["config"]  # the former config <-> runner cycle

    def cycle_from(node, stack):
        if node in stack:
            return stack[stack.index(node):] + [node]
        for nxt in sorted(graph[node]):
            found = cycle_from(nxt, stack + [node])
            if found:
                return found
        return None

    cycles = [c for name in sorted(graph) if (c := cycle_from(name, []))]
    assert cycles == []


def test_exact_engine_depends_on_numpy_greedy_and_its_core_only():
    """optitree.exact is a component of its own: numpy, greedy, its compiled core ``_core`` (the C++
    extension built at install) and the standard library; no solver, no Pyomo, no other optitree module
    but the problem layer below it (``optitree.problem``: units and losses) and the fork utility
    ``optitree._forked`` (its worker processes), which needs the standard library only."""
    stdlib = {"__future__", "collections", "copy", "dataclasses", "itertools", "math", "mmap",
              "multiprocessing", "numbers", "pickle", "threading", "time", "typing"}
    allowed = {"numpy", "greedy"} | stdlib
    engine = SRC / "optitree" / "exact"
    own = {p.stem for p in engine.glob("*.py")} | {"_core"}
    for path in engine.rglob("*.py"):
        tree = ast.parse(path.read_text(), filename=str(path))
        siblings = set()
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom) and n.level == 1:
                siblings.update([n.module.split(".")[0]] if n.module else [a.name for a in n.names])
        assert siblings <= own, (path, siblings - own)  # within exact/: its modules and the compiled core
        relative_up = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level > 1 and
                       not (n.level == 2 and n.module is None and [a.name for a in n.names] == ["_forked"]) and
                       not (n.level == 2 and n.module == "problem")]
        assert not relative_up, path  # nothing from optitree outside exact/ but the problem layer and _forked
        assert imported_top_modules(path) <= allowed, (path, imported_top_modules(path) - allowed)
    forked = ast.parse((SRC / "optitree" / "_forked.py").read_text())
    assert not [n for n in ast.walk(forked) if isinstance(n, ast.ImportFrom) and n.level > 0]
    assert imported_top_modules(SRC / "optitree" / "_forked.py") <= set(sys.stdlib_module_names)


def package_import_graph(package: str) -> dict[str, set[str]]:
    """Modules of ``package`` → the modules of ``package`` they import (relative or absolute, lazy included).

    ``from . import sub`` counts the submodule, not the package's ``__init__``; an import of a
    package itself counts its ``__init__``.
    """
    modules = {}
    for path in (SRC / package).rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for name, path in modules.items():
        base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.ImportFrom):
                module = ".".join(base[:len(base) - node.level + 1] + ([node.module] if node.module else [])) \
                    if node.level else (node.module or "")
                subs = {f"{module}.{a.name}" for a in node.names} & set(modules)
                targets |= subs if len(subs) == len(node.names) else {module} | subs
            elif isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
        graph[name] = (targets & set(modules)) - {name}
    return graph


@pytest.mark.parametrize("package", ["greedy", "optitree", "experiments", "benchmarks"])
def test_no_import_cycles(package):
    graph = package_import_graph(package)
    done, on_path, cycles = set(), [], []

    def visit(node):
        if node in on_path:
            cycles.append(on_path[on_path.index(node):] + [node])
            return
        if node in done:
            return
        on_path.append(node)
        for nxt in sorted(graph[node]):
            visit(nxt)
        on_path.pop()
        done.add(node)

    for name in sorted(graph):
        visit(name)
    assert cycles == []


def test_import_graph_sees_lazy_and_relative_imports():
    # the cycle detector's own check: a known edge of each kind is found
    graph = package_import_graph("optitree")
    assert "optitree.pipeline._fit" in graph["optitree.pipeline"]  # relative, from a package __init__
    assert "optitree.model._highs" in graph["optitree.model._spec"]  # lazy, inside a method


@pytest.mark.parametrize("package", ["greedy", "optitree", "experiments", "benchmarks"])
def test_no_module_above_650_lines(package):
    sizes = {str(p.relative_to(SRC)): len(p.read_text().splitlines()) for p in (SRC / package).rglob("*.py")}
    assert {path: n for path, n in sizes.items() if n > 650} == {}


def test_a_folder_named_optitree_in_the_working_directory_does_not_shadow_the_package(tmp_path):
    """A clone's folder (named ``optitree``, no ``__init__.py`` at its top) in the working directory: the
    installed package is imported all the same, by ``python -c`` and by ``python -m experiments``."""
    clone = tmp_path / "optitree"
    clone.mkdir()
    (clone / "README.md").write_text("a clone of the repository\n")
    for command in (["-c", "from optitree import OptimalTreeClassifier"], ["-m", "experiments", "--help"]):
        done = subprocess.run([sys.executable, *command], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
