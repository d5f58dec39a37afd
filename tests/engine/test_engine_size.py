"""The engine and the layers next to it stay a size a reader can hold in their head: no class over 300 lines and
no function or method over 60 lines in spectui/engine/, spectui/recording/, spectui/attach/ and spectui/views/
(measured with ast: from the ``def``/``class`` line to its last line, decorators excluded, docstrings and
comments included)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import spectui

PACKAGE = Path(spectui.__file__).parent
FOLDERS = ("engine", "recording", "attach", "views")
MAX_CLASS_LINES = 300
MAX_FUNCTION_LINES = 60


def sizes(path: Path):
    """(kind, qualified name, first line, lines) of every class and function in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out = []

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                kind = "class" if isinstance(child, ast.ClassDef) else "function"
                name = f"{prefix}{child.name}"
                out.append((kind, name, child.lineno, child.end_lineno - child.lineno + 1))
                walk(child, name + ".")
            else:
                walk(child, prefix)

    walk(tree, "")
    return out


def test_the_measure_counts_what_it_should(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("class A:\n    def f(self):\n        x = 1\n        return x\n\n\ndef g():\n    pass\n")
    assert sizes(src) == [("class", "A", 1, 4), ("function", "A.f", 2, 3), ("function", "g", 7, 2)]


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_class_over_300_lines_and_no_function_over_60(folder):
    files = sorted((PACKAGE / folder).rglob("*.py"))
    assert len(files) > 3  # the package is where we think it is
    too_long = []
    for path in files:
        for kind, name, line, n in sizes(path):
            limit = MAX_CLASS_LINES if kind == "class" else MAX_FUNCTION_LINES
            if n > limit:
                too_long.append(f"{folder}/{path.name}:{line} {kind} {name}: {n} lines (at most {limit})")
    assert not too_long, "\n".join(too_long)
