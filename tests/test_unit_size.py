"""Every unit of the package stays a size a reader can hold in their head: no function or method over 60 lines
and no class over 300 anywhere in spectui/, the engine included (measured with ast: from the ``def``/``class``
line to its last line, decorators excluded, docstrings and comments included). Modules have no line cap: a
module is one concern, split where its concerns part, not where a count runs out (a 500-line cap once left
four modules at exactly 500 lines, trimmed to fit). (This is the engine's size check, extended to the whole
package.)"""

from __future__ import annotations

import ast
from pathlib import Path

import spectui

PACKAGE = Path(spectui.__file__).parent
MAX_CLASS_LINES = 300
MAX_FUNCTION_LINES = 60


def sizes(path: Path) -> list[tuple[str, str, int, int]]:
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
    src.write_text("class A:\n    @property\n    def f(self):\n        return 1\n\n\ndef g():\n    pass\n")
    assert sizes(src) == [("class", "A", 1, 4), ("function", "A.f", 3, 2), ("function", "g", 7, 2)]


def test_no_function_over_60_lines_and_no_class_over_300_in_the_package():
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 100  # the package is where we think it is
    too_long = []
    for path in files:
        rel = path.relative_to(PACKAGE).as_posix()
        for kind, name, line, n in sizes(path):
            limit = MAX_CLASS_LINES if kind == "class" else MAX_FUNCTION_LINES
            if n > limit:
                too_long.append(f"spectui/{rel}:{line} {kind} {name}: {n} lines (at most {limit})")
    assert not too_long, "\n".join(too_long)

