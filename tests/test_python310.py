"""The package declares Python >= 3.10: no module imports what only 3.11 has without a fallback."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(p for d in ("src", "tests", "docs") for p in (ROOT / d).rglob("*.py"))


def _unguarded_imports(tree, names):
    """``import x`` / ``from x import ...`` of ``names`` outside an ``if``/``try`` (a version guard)."""
    guarded = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.Try)):
            guarded.update(id(n) for n in ast.walk(node))
    for node in ast.walk(tree):
        if id(node) in guarded:
            continue
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.split(".")[0] in names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] in names:
            yield node.module


def test_no_unguarded_import_of_3_11_modules():
    offenders = [str(p.relative_to(ROOT)) for p in SOURCES
                 if list(_unguarded_imports(ast.parse(p.read_text(), str(p)), {"tomllib"}))]
    assert offenders == []
